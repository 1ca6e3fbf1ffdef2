/*
 * kinesis_int.h — what the files of `source: kinesis` share: the batch of
 * rows one frame carries (kinesis_batch.c), the worker's state
 * (kinesis.c), the plug-in's start parser and `zxctl test`
 * (kinesis_plugin.c, kinesis_test.c).  Not for use outside this folder.
 */
#ifndef ZX_KINESIS_INT_H
#define ZX_KINESIS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"
#include "conf/config.h"
#include "proto/frame.h"
#include "workers/sources/kinesis/kinesis_opts.h"
#include "workers/sources/kinesis/kinesis_shards.h"

/* ---- kinesis_batch.c: the rows of one frame ------------------------- */

/* One user record (a record, or one of an aggregated record's). */
typedef struct kn_rec {
    const char *shard;          /* shard id */
    const char *seq;            /* the record's sequence number */
    uint32_t sub;               /* its index in an aggregated record;
                                   UINT32_MAX: not aggregated */
    const void *data;           /* len bytes */
    size_t len;
    const char *pk;             /* partition key, pk_len bytes */
    size_t pk_len;
    int64_t arrival_us;         /* -1: unknown */
    const char *reject;         /* not NULL: a reject with this reason, no rows */
} kn_rec;

typedef struct kn_batch {
    zx_rowset rs;
    uint32_t metadata;          /* ZX_META_SHARD | _SEQUENCE | _PARTITION_KEY | _ARRIVAL */
    zx_frame_reject *rej;
    size_t nrej, rej_cap;
    size_t rej_bytes;          /* their strings' bytes, for the estimate */
    zx_frame_pos *pos;          /* one per shard; strings in the arena */
    size_t npos, pos_cap;
    uint64_t nrecords;          /* user records in it */
    int64_t first_us;           /* zx_mono_us() when it stopped being empty */
} kn_batch;

enum { KN_ADDED = 0, KN_FULL = 1, KN_NOMEM = -1 };

void kn_init(kn_batch *b, uint32_t metadata);
void kn_reset(kn_batch *b);
void kn_free(kn_batch *b);
/* 1 when it holds no record and no position. */
int kn_empty(const kn_batch *b);
/* Bytes the frame would take, about. */
size_t kn_estimate(const kn_batch *b);

/* Add r's rows (a JSON object, an array of them, or NDJSON lines), or a
 * reject (its reason: r->reject, or why its data is not that), keeping the
 * frame under limit bytes.  KN_ADDED; KN_FULL (nothing added: publish the
 * batch and add it again; a record too large for an empty batch is a
 * reject instead); KN_NOMEM. */
int kn_add(kn_batch *b, const kn_rec *r, size_t limit);

/* Set the position the frame reaches in part ("<stream>/<shard>") to text
 * (ks_pos_format's).  0, or -1 out of memory. */
int kn_set_position(kn_batch *b, const char *part, const char *text);

/* ---- kinesis_plugin.c, kinesis_test.c ------------------------------- */

/* start (oldest, new or an RFC 3339 time) into *kind (ks_start) and *ms.
 * 0, or -1 when it is none of these. */
int zx_kinesis_parse_start(const char *start, int *kind, int64_t *ms);

/* `zxctl test` of a kinesis pipeline or an aws connection (conf/plugin.h). */
int zx_kinesis_test(const zx_conf *conf, const zx_conf_pipeline *p,
                    const zx_conf_connection *c, int timeout_ms, char *out, size_t outlen);

#endif
