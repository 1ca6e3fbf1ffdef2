/*
 * kinesis_json.h — the Kinesis Data Streams API's JSON responses (protocol
 * awsJson1_1), parsed: GetRecords, GetShardIterator, ListShards,
 * DescribeStreamSummary, and error bodies.  Pure (no I/O; jansson);
 * fuzzed by tests/fuzz/fuzz_kinesis_json.c.
 *
 * Every parse function takes the response body (body[0..len), need not be
 * NUL-terminated) and answers 0 with *out filled, or -1 with a phrase in
 * err saying what is wrong (not JSON, a member of the wrong type, a
 * sequence number that is not one, out of memory); on -1 *out holds
 * nothing to free (freeing it is harmless).  The results are owned by the
 * caller and released by their free function; every string in them is
 * NUL-terminated and lives as long as the result (nothing is borrowed from
 * the body).  A member the API says may be absent is NULL (strings) or -1
 * (numbers) when absent or null; unknown members are ignored.
 *
 * Sequence numbers are decimal strings of up to ZX_KIN_SEQ_MAX digits (the
 * API's pattern: 0|([1-9]\d{0,128}); Kinesis's own are 56 digits, more
 * than 128 bits): they are kept as checked text, ordered by zx_kin_seq_cmp.
 * Shard ids are 1 to 128 of [A-Za-z0-9_.-]; hash keys are decimal strings
 * of up to 39 digits (2^128-1).
 */
#ifndef ZX_KINESIS_JSON_H
#define ZX_KINESIS_JSON_H

#include <stddef.h>
#include <stdint.h>

#define ZX_KIN_SEQ_MAX 129       /* digits of a sequence number */
#define ZX_KIN_SHARD_ID_MAX 128
#define ZX_KIN_HASH_KEY_MAX 39
#define ZX_KIN_ITERATOR_MAX 8192 /* the API says 512; emulators' are longer */
#define ZX_KIN_TOKEN_MAX 1048576 /* NextToken */

/* 1 when s[0..n) is a sequence number (0|[1-9][0-9]{0,128}), else 0. */
int zx_kin_seq_valid(const char *s, size_t n);

/* The numeric order of two sequence numbers (digit strings, NUL-terminated;
 * leading zeros ignored): <0, 0 or >0. */
int zx_kin_seq_cmp(const char *a, const char *b);

/* 1 when s[0..n) is a shard id, else 0. */
int zx_kin_shard_id_valid(const char *s, size_t n);

/* One record of GetRecords. */
typedef struct zx_kin_record {
    uint8_t *data;               /* Data, base64-decoded; len bytes (+ a NUL not counted) */
    size_t len;
    char *partition_key;         /* PartitionKey, NUL-ended; pk_len bytes (a \u0000 in it
                                    is kept: the only string here that may hold one) */
    size_t pk_len;
    char *seq;                   /* SequenceNumber, checked */
    int64_t arrival_us;          /* ApproximateArrivalTimestamp, microseconds since
                                    1970 (rounded), -1 when absent */
} zx_kin_record;

/* A shard a closed shard was split or merged into (GetRecords'
 * ChildShards).  Hash keys NULL when absent. */
typedef struct zx_kin_child {
    char *shard_id;
    char **parents;              /* ParentShards: nparents ids */
    size_t nparents;
    char *start_hash, *end_hash; /* HashKeyRange */
} zx_kin_child;

typedef struct zx_kin_get_records {
    zx_kin_record *records;
    size_t nrecords;
    char *next_iterator;         /* NextShardIterator; NULL: the shard is closed and read
                                    to its end (see children) */
    int64_t millis_behind;       /* MillisBehindLatest, -1 when absent */
    zx_kin_child *children;      /* ChildShards */
    size_t nchildren;
    void *arena;                 /* internal: the strings and data */
} zx_kin_get_records;

int zx_kin_parse_get_records(const char *body, size_t len, zx_kin_get_records *out,
                             char *err, size_t errlen);
void zx_kin_get_records_free(zx_kin_get_records *r);

/* GetShardIterator: *iterator malloc'd (caller frees), never NULL on 0. */
int zx_kin_parse_shard_iterator(const char *body, size_t len, char **iterator,
                                char *err, size_t errlen);

/* One shard of ListShards. */
typedef struct zx_kin_shard {
    char *shard_id;
    char *parent;                /* ParentShardId, NULL: none */
    char *adjacent_parent;       /* AdjacentParentShardId (a merge), NULL: none */
    char *start_seq;             /* SequenceNumberRange.StartingSequenceNumber */
    char *end_seq;               /* .EndingSequenceNumber, NULL: the shard is open */
    char *start_hash, *end_hash; /* HashKeyRange, NULL when absent */
} zx_kin_shard;

typedef struct zx_kin_shard_list {
    zx_kin_shard *shards;
    size_t nshards;
    char *next_token;            /* NextToken, NULL: the last page */
    void *arena;                 /* internal */
} zx_kin_shard_list;

int zx_kin_parse_list_shards(const char *body, size_t len, zx_kin_shard_list *out,
                             char *err, size_t errlen);
void zx_kin_shard_list_free(zx_kin_shard_list *l);

/* DescribeStreamSummary's StreamDescriptionSummary. */
typedef struct zx_kin_stream_summary {
    char status[16];             /* CREATING, DELETING, ACTIVE, UPDATING (as sent, checked
                                    to be 1 to 15 capital letters) */
    long open_shards;            /* OpenShardCount, -1 when absent */
    long retention_hours;        /* RetentionPeriodHours, -1 when absent */
    char *stream_arn;            /* StreamARN, malloc'd; NULL when absent */
    char *stream_name;           /* StreamName, malloc'd; NULL when absent */
} zx_kin_stream_summary;

int zx_kin_parse_stream_summary(const char *body, size_t len, zx_kin_stream_summary *out,
                                char *err, size_t errlen);
void zx_kin_stream_summary_free(zx_kin_stream_summary *s);

/* An error body: {"__type": "...#ExpiredIteratorException", "message": "..."}. */
typedef struct zx_kin_error {
    char type[128];              /* the short type name ("" when none), truncated */
    char message[512];           /* "message" or "Message" ("" when none), truncated, control
                                    characters replaced by spaces */
} zx_kin_error;

/* Fills *e from an error body: 0 when the body is a JSON object with a
 * __type or a message, else -1 (e holds "" then). */
int zx_kin_parse_error(const char *body, size_t len, zx_kin_error *e);

/* The short name of an error type s[0..n) as __type or the
 * x-amzn-ErrorType header give it: what follows the last '#' and precedes
 * the first ':' after it ("com.amazonaws.kinesis.v20131202#Expired
 * IteratorException" -> "ExpiredIteratorException",
 * "ResourceNotFoundException:http://internal..." -> "Resource
 * NotFoundException"), written to out (size outlen, truncated, NUL-ended,
 * only [A-Za-z0-9_.] kept). */
void zx_kin_error_short_type(const char *s, size_t n, char *out, size_t outlen);

#endif /* ZX_KINESIS_JSON_H */
