/*
 * kafka_batch.c — Kafka messages into one frame: rows (one per JSON object
 * of each message, plus the metadata columns asked for), rejects (the
 * messages that are not JSON objects) and the position reached in each
 * partition.  See kafka_int.h.
 *
 * Many messages go into one rowset.  A message found bad half-way through
 * (JSON parsing stops at its second element...) is taken back with
 * zx_rowset_truncate, so the rows of the messages before it stay and none
 * of its own do.
 *
 * It must never: hold a pointer into a message after kb_add returns (all
 * it keeps is copied into the rowset's arena), allocate per message outside
 * the arena and its growing arrays, or know about librdkafka handles.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_fast.h"
#include "common/json_rows.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/sources/kafka/kafka_int.h"

/* Bytes a position and a reject take in a frame beside their strings
 * (counted apart: a reject's in rej_bytes). */
#define POS_OVERHEAD 48
#define REJ_OVERHEAD 32

void kb_init(kbatch *b, uint32_t metadata)
{
    memset(b, 0, sizeof(*b));
    zx_rowset_init(&b->rs);
    b->metadata = metadata & (ZX_META_KEY | ZX_META_PARTITION | ZX_META_OFFSET |
                              ZX_META_TIMESTAMP);
}

void kb_set_changes(kbatch *b, const zx_dbz_conf *c, int history, const char *rej_table)
{
    b->dbz = c;
    b->history = history;
    b->rej_table = rej_table;
    b->metadata = 0;
    zx_dbz_frame_init(&b->df, &b->rs);
}

void kb_reset(kbatch *b)
{
    zx_rowset_reset(&b->rs);
    zx_dbz_frame_reset(&b->df);
    b->notes = 0;
    b->nrej = 0;
    b->rej_bytes = 0;
    b->npos = 0;
    b->last_pos = 0;
    b->nmsgs = 0;
    b->first_us = 0;
    b->ts_text = NULL;
}

void kb_free(kbatch *b)
{
    if (!b)
        return;
    zx_rowset_free(&b->rs);
    zx_dbz_frame_free(&b->df);
    free(b->rej);
    free(b->pos);
    free(b->fpos);
    memset(b, 0, sizeof(*b));
}

int kb_empty(const kbatch *b)
{
    return b->nmsgs == 0 && b->npos == 0;
}

int kb_part_name(char *out, size_t n, const char *topic, int32_t partition)
{
    int k = snprintf(out, n, "%s:%d", topic, (int)partition);
    return k < 0 || (size_t)k >= n ? -1 : k;
}

void kb_pos_encode(int64_t next, unsigned char out[8])
{
    uint64_t v = (uint64_t)next;
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

int kb_pos_decode(const void *v, size_t len, int64_t *next)
{
    if (!v || (len != 8 && len != 16))
        return -1;
    const unsigned char *p = v;
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x |= (uint64_t)p[i] << (8 * i);
    if ((int64_t)x < 0)
        return -1;
    *next = (int64_t)x;
    return 0;
}

uint64_t kb_pos_fp(const void *v, size_t len)
{
    if (!v || len != 16)
        return 0;
    const unsigned char *p = (const unsigned char *)v + 8;
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x |= (uint64_t)p[i] << (8 * i);
    return x;
}

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Copy the first and last (at most) `edge` bytes of data (all of it
 * when n <= 2 * edge) into out (2 * edge bytes); *null when data is
 * NULL. */
static void edges_copy(unsigned char *out, unsigned char *null, const void *data, size_t n,
                       size_t edge)
{
    *null = data == NULL;
    if (!data)
        return;
    if (n <= 2 * edge) {
        memcpy(out, data, n);
        return;
    }
    memcpy(out, data, edge);
    memcpy(out + edge, (const char *)data + n - edge, edge);
}

/* The hash of fnv_edges over copied edges: the length, then the bytes
 * (or "\0" for NULL data). */
static uint64_t fnv_copied(uint64_t h, const unsigned char *b, int null, uint64_t n,
                           size_t edge)
{
    h = fnv(h, &n, sizeof(n));
    if (null)
        return fnv(h, "\0", 1);
    return fnv(h, b, n <= 2 * edge ? n : 2 * edge);
}

static void fp_capture(const kb_msg *m, kb_fpsrc *src)
{
    src->ts = m->ts_ms;
    src->key_len = m->key_len;
    src->len = m->len;
    edges_copy(src->key, &src->key_null, m->key, m->key_len, 8);
    edges_copy(src->payload, &src->payload_null, m->payload, m->len, 32);
}

static uint64_t fp_hash(const kb_fpsrc *src)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    int64_t ts = src->ts;
    h = fnv(h, &ts, sizeof(ts));
    h = fnv_copied(h, src->key, src->key_null, src->key_len, 8);
    h = fnv_copied(h, src->payload, src->payload_null, src->len, 32);
    return h ? h : 1;
}

uint64_t kb_fingerprint(const kb_msg *m)
{
    kb_fpsrc src;
    fp_capture(m, &src);
    return fp_hash(&src);
}

/* The batch's entry for partition `part`, added when missing. */
static kb_pos *pos_slot(kbatch *b, uint32_t part, const char *topic, int32_t partition)
{
    if (b->last_pos < b->npos && b->pos[b->last_pos].part == part)
        return &b->pos[b->last_pos];
    for (size_t i = 0; i < b->npos; i++)
        if (b->pos[i].part == part) {
            b->last_pos = i;
            return &b->pos[i];
        }
    if (zx_grow(&b->pos, b->npos, &b->pos_cap, sizeof(*b->pos)) < 0)
        return NULL;
    kb_pos *p = &b->pos[b->npos];
    p->part = part;
    p->topic = topic;
    p->partition = partition;
    p->next = -1;
    p->fp = 0;
    p->has_src = 0;
    p->from = p->first = -1;
    b->last_pos = b->npos++;
    return p;
}

int kb_other_part(const kbatch *b, uint32_t part)
{
    for (size_t i = 0; i < b->npos; i++)
        if (b->pos[i].part != part)
            return 1;
    return 0;
}

void kb_set_from(kbatch *b, uint32_t part, int64_t from)
{
    for (size_t i = 0; i < b->npos; i++)
        if (b->pos[i].part == part)
            b->pos[i].from = from;
}

int kb_note_position(kbatch *b, uint32_t part, const char *topic, int32_t partition,
                     int64_t next)
{
    kb_pos *p = pos_slot(b, part, topic, partition);
    if (!p)
        return -1;
    p->next = next;
    p->fp = 0;
    p->has_src = 0;
    if (!b->first_us)
        b->first_us = zx_mono_us();
    return 0;
}

size_t kb_estimate(const kbatch *b)
{
    size_t est = zx_frame_estimate(&b->rs) + b->nrej * REJ_OVERHEAD + b->rej_bytes;
    if (b->dbz && b->df.changes)
        est += zx_dbz_frame_meta_bound(&b->df);
    for (size_t i = 0; i < b->npos; i++)
        est += POS_OVERHEAD + strlen(b->pos[i].topic);
    return est;
}

/* Copy at most KB_RAW_MAX bytes of p into the arena; *out NULL on ENOMEM. */
static int arena_copy(zx_rowset *rs, const void *p, size_t len, const void **out, size_t *olen)
{
    if (len > KB_RAW_MAX)
        len = KB_RAW_MAX;
    char *c = zx_rowset_alloc(rs, len ? len : 1);
    if (!c)
        return -1;
    if (len)
        memcpy(c, p, len);
    *out = c;
    *olen = len;
    return 0;
}

/* The string bytes a reject adds to the frame (beside REJ_OVERHEAD). */
static size_t rej_size(const zx_frame_reject *r)
{
    return strlen(r->reason) + strlen(r->position) + r->raw_len + r->key_len;
}

/* Forget the rejects from the n-th on. */
static void drop_rejects(kbatch *b, size_t n)
{
    while (b->nrej > n)
        b->rej_bytes -= rej_size(&b->rej[--b->nrej]);
}

/* Append a reject for m.  0 or -1 (ENOMEM). */
static int add_reject(kbatch *b, const kb_msg *m, const char *reason)
{
    zx_rowset *rs = &b->rs;
    if (zx_grow(&b->rej, b->nrej, &b->rej_cap, sizeof(*b->rej)) < 0)
        return -1;
    zx_frame_reject r = {0};
    char posjson[512];
    /* Kafka topic names are [a-zA-Z0-9._-]: nothing to escape */
    int k = snprintf(posjson, sizeof(posjson), "{\"topic\":\"%s\",\"partition\":%d,\"offset\":%lld}",
                     m->topic, (int)m->partition, (long long)m->offset);
    if (k < 0 || (size_t)k >= sizeof(posjson))
        k = snprintf(posjson, sizeof(posjson), "{\"partition\":%d,\"offset\":%lld}",
                     (int)m->partition, (long long)m->offset);
    if (!(r.reason = zx_rowset_strdup(rs, reason, strlen(reason))) ||
        !(r.position = zx_rowset_strdup(rs, posjson, (size_t)k)) ||
        arena_copy(rs, m->payload ? m->payload : "", m->payload ? m->len : 0, &r.raw,
                   &r.raw_len) < 0)
        return -1;
    if (m->key && arena_copy(rs, m->key, m->key_len, &r.key, &r.key_len) < 0)
        return -1;
    b->rej[b->nrej++] = r;
    b->rej_bytes += rej_size(&r);
    return 0;
}

/* Add the metadata cells of m to the rows from `first`.  0 or -1. */
static int add_metadata(kbatch *b, const kb_msg *m, uint32_t first)
{
    zx_rowset *rs = &b->rs;
    uint32_t cols[4];
    zx_value vals[4];
    size_t n = 0;
    int64_t c;
    if (b->metadata & ZX_META_KEY) {
        if ((c = zx_rowset_column(rs, "_key", 4, ZX_T_TEXT)) < 0)
            return -1;
        if (m->key) {
            char *s = zx_rowset_strdup(rs, m->key, m->key_len);
            if (!s)
                return -1;
            cols[n] = (uint32_t)c;
            vals[n++] = (zx_value){.type = ZX_T_TEXT, .len = (uint32_t)m->key_len, .s = s};
        }
    }
    if (b->metadata & ZX_META_PARTITION) {
        if ((c = zx_rowset_column(rs, "_partition", 10, ZX_T_INT)) < 0)
            return -1;
        cols[n] = (uint32_t)c;
        vals[n++] = (zx_value){.type = ZX_T_INT, .u.i = m->partition};
    }
    if (b->metadata & ZX_META_OFFSET) {
        if ((c = zx_rowset_column(rs, "_offset", 7, ZX_T_INT)) < 0)
            return -1;
        cols[n] = (uint32_t)c;
        vals[n++] = (zx_value){.type = ZX_T_INT, .u.i = m->offset};
    }
    if (b->metadata & ZX_META_TIMESTAMP) {
        if ((c = zx_rowset_column(rs, "_timestamp", 10, ZX_T_TIMESTAMP)) < 0)
            return -1;
        if (m->ts_ms >= 0 && m->ts_ms <= INT64_MAX / 1000) { /* no overflow in * 1000 */
            /* messages of one producer batch share their timestamp */
            if (!b->ts_text || b->ts_ms != m->ts_ms) {
                char t[ZX_TS_BUFSZ];
                size_t tl = zx_ts_format(m->ts_ms * 1000, t);
                const char *s = zx_rowset_strdup(rs, t, tl);
                if (!s)
                    return -1;
                b->ts_text = s;
                b->ts_ms = m->ts_ms;
            }
            cols[n] = (uint32_t)c;
            vals[n++] = (zx_value){.type = ZX_T_TIMESTAMP,
                                   .len = (uint32_t)strlen(b->ts_text),
                                   .u.i = m->ts_ms * 1000,
                                   .s = b->ts_text};
        }
    }
    return zx_rowset_add_to_rows(rs, first, cols, vals, n);
}

int kb_add(kbatch *b, const kb_msg *m, uint32_t part, size_t limit)
{
    zx_rowset *rs = &b->rs;
    zx_rowset_mark mk;
    zx_rowset_save(rs, &mk);
    size_t nrej0 = b->nrej;
    int alone = b->nmsgs == 0;
    const char *ts_text0 = b->ts_text;
    int64_t ts_ms0 = b->ts_ms;

    uint64_t changes0 = b->df.changes;
    if (b->dbz) {
        char why[400], pos[320];
        int k = snprintf(pos, sizeof(pos), "%s:%d:%lld", m->topic, (int)m->partition,
                         (long long)m->offset);
        zx_dbz_msg dm = { .topic = m->topic, .key = m->key, .key_len = m->key_len,
                          .value = m->payload, .len = m->len,
                          .value_json = m->value_json, .key_json = m->key_json,
                          .position = k > 0 && (size_t)k < sizeof(pos) ? pos : NULL };
        unsigned notes = 0;
        int r;
        if (m->reject) {
            snprintf(why, sizeof(why), "%s", m->reject);
            r = ZX_DBZ_REJECT;
        } else {
            r = zx_dbz_add(b->dbz, &b->df, &dm, why, sizeof(why), &notes);
        }
        if (r == ZX_DBZ_NOMEM)
            return KB_NOMEM;
        if (r == ZX_DBZ_OTHER)
            return KB_FULL;   /* another table or key: never when alone */
        if (r == ZX_DBZ_REJECT && add_reject(b, m, why) < 0)
            goto nomem;
        if (r == ZX_DBZ_ADDED)
            b->notes |= notes;
    } else if (m->payload) {
        zx_json_err jerr;
        int n = zx_json_message_rows(m->payload, m->len, ZX_BODY_JSON, rs, &mk, &jerr);
        if (n < 0) {
            if (jerr.code == ZX_JSON_E_NOMEM)
                return KB_NOMEM;
            /* the columns of the messages before it count against the
             * limit: it may well fit in a batch of its own */
            if (!alone && jerr.code == ZX_JSON_E_COLUMNS)
                return KB_FULL;
            char reason[300];
            zx_json_message_reason(&jerr, reason, sizeof(reason));
            if (add_reject(b, m, reason) < 0)
                goto nomem;
        } else if (n > 0 && b->metadata && add_metadata(b, m, mk.nrows) < 0) {
            goto nomem;
        }
    }

    if (kb_estimate(b) + POS_OVERHEAD + strlen(m->topic) > limit) {
        zx_rowset_truncate(rs, &mk);
        if (b->dbz && (b->df.changes = changes0) == 0)
            zx_dbz_frame_reset(&b->df);
        drop_rejects(b, nrej0);
        b->ts_text = ts_text0;
        b->ts_ms = ts_ms0;
        if (!alone)
            return KB_FULL;
        char reason[200];
        snprintf(reason, sizeof(reason),
                 "message too large: its rows would take more than the %zu bytes a frame of "
                 "this stream may take (server.ring_size)", limit);
        if (add_reject(b, m, reason) < 0)
            goto nomem;
    }

    kb_pos *p = pos_slot(b, part, m->topic, m->partition);
    if (!p)
        goto nomem;
    if (p->first < 0)
        p->first = m->offset;
    p->next = m->offset < INT64_MAX ? m->offset + 1 : INT64_MAX; /* no overflow */
    fp_capture(m, &p->src);
    p->has_src = 1;
    b->nmsgs++;
    if (!b->first_us)
        b->first_us = zx_mono_us();
    return KB_ADDED;

nomem:
    zx_rowset_truncate(rs, &mk);
    if (b->dbz && (b->df.changes = changes0) == 0)
        zx_dbz_frame_reset(&b->df);
    drop_rejects(b, nrej0);
    b->ts_text = ts_text0;
    b->ts_ms = ts_ms0;
    return KB_NOMEM;
}

int kb_meta(kbatch *b, zx_frame_meta *m)
{
    memset(m, 0, sizeof(*m));
    if (b->npos + 1 > b->fpos_cap) {   /* + a template's table */
        zx_frame_pos *n = realloc(b->fpos, (b->npos + 1) * sizeof(*n));
        if (!n)
            return -1;
        b->fpos = n;
        b->fpos_cap = b->npos + 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < b->npos; i++) {
        kb_pos *p = &b->pos[i];
        if (p->next < 0)
            continue;
        if (p->has_src)
            p->fp = fp_hash(&p->src);
        char name[300];
        int len = kb_part_name(name, sizeof(name), p->topic, p->partition);
        unsigned char v[16];
        size_t vlen = p->fp ? 16 : 8;
        kb_pos_encode(p->next, v);
        if (p->fp)
            kb_pos_encode((int64_t)p->fp, v + 8);
        char *part = len < 0 ? NULL : zx_rowset_strdup(&b->rs, name, (size_t)len);
        void *val = zx_rowset_alloc(&b->rs, vlen);
        if (!part || !val)
            return -1;
        memcpy(val, v, vlen);
        b->fpos[k++] = (zx_frame_pos){.part = part, .value = val, .value_len = vlen,
                                      .fenced = b->fence, .from = b->fence ? p->from : -1,
                                      .first = b->fence ? p->first : -1};
    }
    m->kind = ZX_FRAME_ROWS;
    if (b->dbz && b->df.changes) {
        m->kind = ZX_FRAME_CHANGES;
        m->table = b->df.table;
        m->key_cols = b->df.keys;
        m->nkey_cols = b->df.nkeys;
        m->history = b->history;
        m->inferred = (b->notes & ZX_DBZ_NOTE_NO_SCHEMA) != 0;
        if (zx_dbz_frame_types(&b->df, &m->col_types, &m->ncol_types) < 0)
            return -1;
        /* a template's table is kept with the positions: a restart counts
         * it again (max_tables) */
        char tp[ZX_COLNAME_MAX + 16];
        if (zx_dbz_table_part(b->dbz, b->df.table, tp, sizeof(tp)) == 0) {
            char *part = zx_rowset_strdup(&b->rs, tp, strlen(tp));
            if (!part)
                return -1;
            b->fpos[k++] = (zx_frame_pos){.part = part, .value = "1", .value_len = 1};
        }
    } else if (b->dbz) {
        m->table = b->rej_table;
    }
    m->positions = k ? b->fpos : NULL;
    m->npositions = k;
    m->rejects = b->nrej ? b->rej : NULL;
    m->nrejects = b->nrej;
    m->accepted = b->rs.nrows;
    m->metadata = b->metadata;
    return 0;
}
