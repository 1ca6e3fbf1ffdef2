/*
 * kinesis_api.h — the Kinesis Data Streams calls the source makes
 * (ListShards, GetShardIterator, GetRecords, DescribeStreamSummary) on a
 * signed AWS client (common/aws_call.h), each answer parsed
 * (kinesis_json.h) and each failure sorted into what the caller does
 * about it.
 *
 * Each call blocks for its HTTP request (the client's deadline).  Messages
 * name the call and the stream, never a secret.
 */
#ifndef ZX_KINESIS_API_H
#define ZX_KINESIS_API_H

#include <stddef.h>
#include <stdint.h>

#include "common/aws_call.h"
#include "workers/sources/kinesis/kinesis_json.h"

/* What went wrong, by what the caller does next. */
typedef enum {
    KA_OK = 0,
    KA_RETRY,        /* throttled (ProvisionedThroughputExceeded,
                        LimitExceeded, 429), a 5xx, or no answer: back off
                        and try again */
    KA_EXPIRED,      /* ExpiredIteratorException: a new iterator from the
                        position */
    KA_NOT_FOUND,    /* ResourceNotFoundException: no such stream (or
                        shard) */
    KA_DENIED,       /* AccessDenied..., UnrecognizedClient,
                        InvalidSignature, ExpiredToken, no credentials,
                        a clock skew: someone must act */
    KA_BAD,          /* anything else: an answer that is not understood,
                        InvalidArgument, KMS errors */
} ka_status;

/* The stream a pipeline reads: its name or ARN (one of them). */
typedef struct ka_stream {
    const char *name;    /* NULL when arn is set */
    const char *arn;     /* NULL when name is set */
} ka_stream;

/* Every shard of a stream, from all ListShards pages: v[0..n) (their
 * strings live in the pages, freed with them by ka_shards_free). */
typedef struct ka_shards {
    zx_kin_shard *v;
    size_t n;
    zx_kin_shard_list *pages;
    size_t npages;
} ka_shards;

/* Every shard of the stream into *out (ka_shards_free).  KA_OK or the
 * failure with err ("ListShards of stream orders: ResourceNotFound
 * Exception: Stream orders under account 1 not found."). */
ka_status ka_list_shards(zx_aws_client *c, const ka_stream *st, ka_shards *out, char *err,
                         size_t errlen);
void ka_shards_free(ka_shards *s);

/* An iterator for shard: type ("TRIM_HORIZON", "AFTER_SEQUENCE_NUMBER",
 * "AT_SEQUENCE_NUMBER", "AT_TIMESTAMP"), seq (the two sequence types) or
 * at_ms (AT_TIMESTAMP).  KA_OK with *iterator malloc'd, or the failure. */
ka_status ka_shard_iterator(zx_aws_client *c, const ka_stream *st, const char *shard,
                            const char *type, const char *seq, int64_t at_ms,
                            char **iterator, char *err, size_t errlen);

/* Up to limit (1..10000) records from iterator.  KA_OK with *out (caller
 * frees with zx_kin_get_records_free), or the failure. */
ka_status ka_get_records(zx_aws_client *c, const ka_stream *st, const char *iterator,
                         unsigned limit, zx_kin_get_records *out, char *err, size_t errlen);

/* The stream's summary.  KA_OK with *out (zx_kin_stream_summary_free), or
 * the failure. */
ka_status ka_describe(zx_aws_client *c, const ka_stream *st, zx_kin_stream_summary *out,
                      char *err, size_t errlen);

#endif
