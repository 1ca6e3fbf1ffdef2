/*
 * kafka_msg.h — the bytes of the Kafka destination's messages (pure: no
 * librdkafka, no I/O; unit-tested in tests/unit/test_kafka_msg.c).
 *
 * Key: the JSON object of the message key columns, in the order of the
 * destination's `key` (default: the sync's; none at all: no key, nothing
 * appended, for append runs without key), compact (no space), each
 * value as an NDJSON row of the files destination writes it
 * (formats/textrows.h: integers exact, decimals and timestamps as strings,
 * bytes as base64): {"id":42}, {"region":"eu","id":7}.  The same row gives
 * the same bytes in every run, and a deleted key (mirror) the same bytes
 * as its rows had, so murmur2 puts them in the same partition.
 *
 * Value, format json: the row as such an object, every column of the
 * result in its order.  A deleted key: no value (a tombstone).
 *
 * Value, format debezium: Debezium's envelope as its JsonConverter writes
 * it with schemas.enable=false:
 *   {"before":B,"after":A,"source":{"version":"zx","connector":"zx",
 *    "name":<sync>,"ts_ms":T,"snapshot":"false","db":"zx","table":<topic>,
 *    "run":<run id>,"seq":"<seq>"},"op":"c"|"u"|"d","ts_ms":T,
 *    "transaction":null}
 * c (a row new to the destination) and u (a changed row): B null (zx
 * keeps no old row, as Debezium's Postgres connector without REPLICA
 * IDENTITY FULL), A the row; d: B the sync's key columns of the deleted
 * row, A null.  T: ms since the epoch when the message was made.  seq:
 * the run id (20 digits) then the message's place in the run (12 digits),
 * zero-padded decimal, so that its text order is send order across runs
 * (run ids only grow): later messages of a key have larger seq.
 *
 * Values that JSON cannot hold (NaN, ±Infinity) are written as null and
 * counted (nulled, misfit: the first one's column).
 *
 * Every function returns 0, or -1 when out of memory (the buffer then
 * holds a partial text: reset it).  Buffers are the caller's.
 */
#ifndef ZX_DEST_KAFKA_MSG_H
#define ZX_DEST_KAFKA_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dtype.h"
#include "common/rowset.h"

typedef struct zx_kmsg {
    const zx_dcol *cols;          /* the run's columns (borrowed) */
    size_t ncols;
    zx_dcol *mcols;               /* the message key's columns (copies of
                                     cols entries: names borrowed) */
    size_t *midx;                 /* their places in cols */
    size_t nkey;
    zx_dcol *kcols;               /* the sync's key columns (delete_keys'
                                     rowsets' columns), copies */
    size_t nkcols;
    size_t *mdel;                 /* message key column i: its place among
                                     kcols (SIZE_MAX: not there) */
    zx_value *kv;                 /* scratch: nkey values */
    zx_buf scratch;
    uint64_t nulled;              /* values written as null */
    const char *misfit;           /* the first one's column (borrowed), or NULL */
} zx_kmsg;

/* Where a Debezium message comes from (source block). */
typedef struct zx_kmsg_src {
    const char *sync;
    const char *topic;
    uint64_t run_id;
    uint64_t pos;                 /* the message's place in the run */
    int64_t ts_ms;
} zx_kmsg_src;

/* Set m up for a run of columns cols: key (nkey names; 0: the sync key)
 * the message key columns, sync_key the sync's key columns (both may be
 * empty: no message key).  Returns 0, or -1 with err set ("key column X
 * is not a column of the result"; no key, or a message key column not in
 * the sync key, when deletes is 1; out of memory).  Free with
 * zx_kmsg_free. */
int zx_kmsg_init(zx_kmsg *m, const zx_dcol *cols, size_t ncols, const char *const *key,
                 size_t nkey, const char *const *sync_key, size_t nsync_key, int deletes,
                 char *err, size_t errlen);
/* Free what init allocated; m zeroed.  Zeroed m: no-op. */
void zx_kmsg_free(zx_kmsg *m);

/* Append the message key of the row vals (ncols values) to out. */
int zx_kmsg_key(zx_kmsg *m, const zx_value *vals, zx_buf *out);
/* Append the message key of the deleted key kvals (nkcols values) to
 * out. */
int zx_kmsg_key_del(zx_kmsg *m, const zx_value *kvals, zx_buf *out);
/* The message key's values (nkey, over mcols) of the row vals, or of the
 * deleted key kvals: m->kv, valid until the next call. */
const zx_value *zx_kmsg_key_vals(zx_kmsg *m, const zx_value *vals);
const zx_value *zx_kmsg_key_del_vals(zx_kmsg *m, const zx_value *kvals);
/* Append the row vals as a JSON object to out (format json). */
int zx_kmsg_row(zx_kmsg *m, const zx_value *vals, zx_buf *out);
/* Append the Debezium envelope to out: op 'c' or 'u' with the row vals,
 * or 'd' with the deleted key kvals (vals NULL). */
int zx_kmsg_debezium(zx_kmsg *m, const zx_kmsg_src *s, char op, const zx_value *vals,
                     const zx_value *kvals, zx_buf *out);

/* The text of s->seq into out (33 bytes). */
void zx_kmsg_seq(const zx_kmsg_src *s, char out[33]);

#endif
