/*
 * kinesis_batch.c — Kinesis user records into one frame: their rows (a
 * JSON object, an array of them, or NDJSON lines, plus the metadata
 * columns asked for), the rejects (with the shard, sequence number and
 * reason), and the position the frame reaches in each shard.  See
 * kinesis_int.h.
 *
 * It must never: keep a pointer into a record after kn_add returns
 * (everything is copied into the rowset's arena), or leave half a record's
 * rows in the batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json_fast.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/sources/kinesis/kinesis_int.h"

#define POS_OVERHEAD 48
#define REJ_OVERHEAD 32
#define KN_RAW_MAX (64 * 1024)   /* bytes of a rejected record kept */

void kn_init(kn_batch *b, uint32_t metadata)
{
    memset(b, 0, sizeof(*b));
    zx_rowset_init(&b->rs);
    b->metadata = metadata & (ZX_META_SHARD | ZX_META_SEQUENCE | ZX_META_PARTITION_KEY |
                              ZX_META_ARRIVAL);
}

void kn_reset(kn_batch *b)
{
    zx_rowset_reset(&b->rs);
    b->nrej = 0;
    b->rej_bytes = 0;
    b->npos = 0;
    b->nrecords = 0;
    b->first_us = 0;
}

void kn_free(kn_batch *b)
{
    zx_rowset_free(&b->rs);
    free(b->rej);
    free(b->pos);
    memset(b, 0, sizeof(*b));
}

int kn_empty(const kn_batch *b)
{
    return b->nrecords == 0 && b->npos == 0;
}

size_t kn_estimate(const kn_batch *b)
{
    size_t est = zx_frame_estimate(&b->rs) + b->nrej * REJ_OVERHEAD + b->rej_bytes;
    for (size_t i = 0; i < b->npos; i++)
        est += POS_OVERHEAD + strlen(b->pos[i].part) + b->pos[i].value_len;
    return est;
}

int kn_set_position(kn_batch *b, const char *part, const char *text)
{
    size_t tl = strlen(text);
    char *v = zx_rowset_strdup(&b->rs, text, tl);
    if (!v)
        return -1;
    for (size_t i = 0; i < b->npos; i++)
        if (!strcmp(b->pos[i].part, part)) {
            b->pos[i].value = v;
            b->pos[i].value_len = tl;
            return 0;
        }
    char *p = zx_rowset_strdup(&b->rs, part, strlen(part));
    if (!p || zx_grow(&b->pos, b->npos, &b->pos_cap, sizeof(*b->pos)) < 0)
        return -1;
    b->pos[b->npos++] = (zx_frame_pos){.part = p, .value = v, .value_len = tl};
    return 0;
}

/* The string bytes a reject adds to the frame (beside REJ_OVERHEAD). */
static size_t rej_size(const zx_frame_reject *r)
{
    return strlen(r->reason) + strlen(r->position) + r->raw_len + r->key_len;
}

/* Forget the rejects from the n-th on. */
static void drop_rejects(kn_batch *b, size_t n)
{
    while (b->nrej > n)
        b->rej_bytes -= rej_size(&b->rej[--b->nrej]);
}

static int add_reject(kn_batch *b, const kn_rec *r, const char *reason)
{
    zx_rowset *rs = &b->rs;
    if (zx_grow(&b->rej, b->nrej, &b->rej_cap, sizeof(*b->rej)) < 0)
        return -1;
    char where[400];
    int k;
    /* shard ids are [A-Za-z0-9_.-], sequence numbers digits: nothing to escape */
    if (r->sub != UINT32_MAX)
        k = snprintf(where, sizeof(where), "{\"shard\":\"%s\",\"sequence\":\"%s\","
                     "\"subsequence\":%u}", r->shard, r->seq, r->sub);
    else
        k = snprintf(where, sizeof(where), "{\"shard\":\"%s\",\"sequence\":\"%s\"}",
                     r->shard, r->seq);
    size_t raw = r->len > KN_RAW_MAX ? KN_RAW_MAX : r->len;
    zx_frame_reject j = {0};
    char *copy = zx_rowset_alloc(rs, raw ? raw : 1);
    if (!copy || k < 0 || (size_t)k >= sizeof(where) ||
        !(j.reason = zx_rowset_strdup(rs, reason, strlen(reason))) ||
        !(j.position = zx_rowset_strdup(rs, where, (size_t)k)))
        return -1;
    if (raw)
        memcpy(copy, r->data, raw);
    j.raw = copy;
    j.raw_len = raw;
    if (r->pk) {
        char *key = zx_rowset_strdup(rs, r->pk, r->pk_len);
        if (!key)
            return -1;
        j.key = key;
        j.key_len = r->pk_len;
    }
    b->rej[b->nrej++] = j;
    b->rej_bytes += rej_size(&j);
    return 0;
}

/* The metadata cells of r on the rows from `first`.  0 or -1. */
static int add_metadata(kn_batch *b, const kn_rec *r, uint32_t first)
{
    zx_rowset *rs = &b->rs;
    uint32_t cols[4];
    zx_value vals[4];
    size_t n = 0;
    int64_t c;
    if (b->metadata & ZX_META_SHARD) {
        size_t l = strlen(r->shard);
        char *s = zx_rowset_strdup(rs, r->shard, l);
        if (!s || (c = zx_rowset_column(rs, "_shard", 6, ZX_T_TEXT)) < 0)
            return -1;
        cols[n] = (uint32_t)c;
        vals[n++] = (zx_value){.type = ZX_T_TEXT, .len = (uint32_t)l, .s = s};
    }
    if (b->metadata & ZX_META_SEQUENCE) {
        char seq[ZX_KIN_SEQ_MAX + 16];
        int l = r->sub == UINT32_MAX ? snprintf(seq, sizeof(seq), "%s", r->seq)
                                     : snprintf(seq, sizeof(seq), "%s.%u", r->seq, r->sub);
        char *s = l > 0 ? zx_rowset_strdup(rs, seq, (size_t)l) : NULL;
        if (!s || (c = zx_rowset_column(rs, "_sequence", 9, ZX_T_TEXT)) < 0)
            return -1;
        cols[n] = (uint32_t)c;
        vals[n++] = (zx_value){.type = ZX_T_TEXT, .len = (uint32_t)l, .s = s};
    }
    if (b->metadata & ZX_META_PARTITION_KEY) {
        if ((c = zx_rowset_column(rs, "_partition_key", 14, ZX_T_TEXT)) < 0)
            return -1;
        if (r->pk) {
            char *s = zx_rowset_strdup(rs, r->pk, r->pk_len);
            if (!s)
                return -1;
            cols[n] = (uint32_t)c;
            vals[n++] = (zx_value){.type = ZX_T_TEXT, .len = (uint32_t)r->pk_len, .s = s};
        }
    }
    if (b->metadata & ZX_META_ARRIVAL) {
        if ((c = zx_rowset_column(rs, "_arrival", 8, ZX_T_TIMESTAMP)) < 0)
            return -1;
        if (r->arrival_us >= 0) {
            char t[ZX_TS_BUFSZ];
            size_t tl = zx_ts_format(r->arrival_us, t);
            char *s = zx_rowset_strdup(rs, t, tl);
            if (!s)
                return -1;
            cols[n] = (uint32_t)c;
            vals[n++] = (zx_value){.type = ZX_T_TIMESTAMP, .len = (uint32_t)tl,
                                   .u.i = r->arrival_us, .s = s};
        }
    }
    return zx_rowset_add_to_rows(rs, first, cols, vals, n);
}

/* The rows of r's data: JSON (an object or an array of them), else NDJSON
 * when it has several lines.  Rows added, or -1 with *e. */
static int parse_data(kn_batch *b, const kn_rec *r, const zx_rowset_mark *mk, zx_json_err *e)
{
    int n = zx_json_message_rows(r->data, r->len, ZX_BODY_JSON, &b->rs, mk, e);
    if (n >= 0 || e->code != ZX_JSON_E_SYNTAX || !memchr(r->data, '\n', r->len))
        return n;
    zx_json_err e2;
    int n2 = zx_json_message_rows(r->data, r->len, ZX_BODY_NDJSON, &b->rs, mk, &e2);
    if (n2 >= 0 || e2.code == ZX_JSON_E_NOMEM || e2.code == ZX_JSON_E_COLUMNS)
        *e = e2;
    return n2;
}

int kn_add(kn_batch *b, const kn_rec *r, size_t limit)
{
    zx_rowset *rs = &b->rs;
    zx_rowset_mark mk;
    zx_rowset_save(rs, &mk);
    size_t nrej0 = b->nrej;
    int alone = b->nrecords == 0;

    if (r->reject) {
        if (add_reject(b, r, r->reject) < 0)
            goto nomem;
    } else {
        zx_json_err e;
        int n = parse_data(b, r, &mk, &e);
        if (n < 0) {
            if (e.code == ZX_JSON_E_NOMEM)
                goto nomem;
            if (!alone && e.code == ZX_JSON_E_COLUMNS)
                return KN_FULL;
            char reason[300];
            zx_json_message_reason(&e, reason, sizeof(reason));
            if (add_reject(b, r, reason) < 0)
                goto nomem;
        } else if (n > 0 && b->metadata && add_metadata(b, r, mk.nrows) < 0) {
            goto nomem;
        }
    }
    if (kn_estimate(b) + POS_OVERHEAD + 2 * ZX_KIN_SEQ_MAX > limit) {
        zx_rowset_truncate(rs, &mk);
        drop_rejects(b, nrej0);
        if (!alone)
            return KN_FULL;
        char reason[200];
        snprintf(reason, sizeof(reason), "record too large: its rows would take more than "
                 "the %zu bytes a frame of this stream may take (server.ring_size)", limit);
        if (add_reject(b, r, reason) < 0)
            goto nomem;
    }
    b->nrecords++;
    if (!b->first_us)
        b->first_us = zx_mono_us();
    return KN_ADDED;

nomem:
    zx_rowset_truncate(rs, &mk);
    drop_rejects(b, nrej0);
    return KN_NOMEM;
}
