/*
 * fuzz_kafka_batch.c — fuzz target for workers/sources/kafka/kafka_batch.c: Kafka
 * messages from outside (key, payload, topic, partition, offset, timestamp)
 * into one frame's rows, rejects and positions (kb_add, kb_meta), then the
 * frame encoded and decoded again (proto/frame.h), as kafka.c does it: a
 * message that answers KB_FULL makes the batch be published and reset, then
 * is added again to the empty batch.
 *
 * Input:
 *   byte 0   bits 0-3: metadata columns (_key, _partition, _offset,
 *            _timestamp); bits 4-5: frame limit (0: 1 GiB, 1: 256 + 16 *
 *            byte 1, 2: 2048 + 256 * byte 1, 3: 4 * KB_RAW_MAX); bit 6:
 *            several messages (each with a payload length) or one (the
 *            payload is the rest of the input)
 *   byte 1   limit parameter
 *   then messages, each: a header of 5 bytes (7 with several messages)
 *     h0  bit 0: has a key; bit 1: tombstone (no payload); bit 2: huge key
 *         (the key bytes repeated past KB_RAW_MAX); bits 4-5: payload kind
 *         (0 the bytes, 1 the bytes repeated past KB_RAW_MAX, 2 an object of
 *         8 * h4 columns, 3 the bytes inside h4 nested arrays); bits 6-7:
 *         topic ("clicks", "t", a 249-byte name, "clicks")
 *     h1  bits 0-2: partition (0, 1, 2, (int8)h4, -1, INT32_MAX, INT32_MIN,
 *         3); bits 3-5: offset (previous of that partition + 1, 0, h4,
 *         INT64_MAX, -1, -1001, INT64_MAX - 1, INT64_MIN)
 *     h2  bits 0-2: timestamp (none, 0, 2025-11-30, INT64_MAX, INT64_MIN,
 *         year 10000, INT64_MAX / 1000, INT64_MAX / 1000 + 1)
 *     h3  key length
 *     h4  parameter
 *     h5, h6 (several messages only) payload length, little-endian
 *   followed by the key and the payload bytes (cut at the input's end).
 *
 * Checks: kb_add answers KB_ADDED, or KB_FULL only for a non-empty batch
 * which it leaves unchanged; a non-tombstone message gives rows or exactly
 * one reject (or nothing when it is an empty JSON array), a tombstone
 * neither (unless alone it is over the limit: then one "message too large"
 * reject); a reject's raw bytes and key are the message's, cut at
 * KB_RAW_MAX, and its position names topic, partition and offset; every
 * row of a message carries the metadata asked for (the whole key, the
 * partition, the offset, the timestamp); the frame decodes to the same
 * rows, rejects and metadata, fits kb_estimate, and has one position per
 * partition whose next offset is the last offset + 1 (none when that is
 * negative).  Leaks are found by ASan (libFuzzer build).
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds: corpus/
 * kafka_batch/ (tests/fuzz/make_corpus.py).  Must never be linked into zx.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rowset.h"
#include "common/timefmt.h"
#include "conf/config.h"
#include "proto/frame.h"
#include "tests/fuzz/fuzz_check.h"
#include "workers/sources/kafka/kafka_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MSGS 64
#define MAX_PARTS 64

static const char long_topic[] =
    "a.very-long_topic.name.0123456789.abcdefghijklmnopqrstuvwxyz.ABCDEFGHIJKLMNOPQRSTUVWXYZ."
    "0123456789.abcdefghijklmnopqrstuvwxyz.ABCDEFGHIJKLMNOPQRSTUVWXYZ.0123456789.abcdefghij"
    "klmnopqrstuvwxyz.ABCDEFGHIJKLMNOPQRSTUVWXYZ.0123456789-x";
static const char *const topics[4] = {"clicks", "t", long_topic, "clicks"};

/* One message given to the batch, and what it became. */
typedef struct rec {
    kb_msg m;
    uint32_t part;
    uint32_t row0, row1;       /* its rows in the batch */
    long rej;                  /* its reject's index, -1 none */
} rec;

typedef struct part_ent {
    int topic;
    int32_t partition;
    int64_t last_off;          /* last offset given (INT64_MIN: none yet) */
} part_ent;

typedef struct state {
    kbatch b;
    size_t limit;
    part_ent parts[MAX_PARTS];
    uint32_t nparts;
    rec recs[MAX_MSGS];        /* the messages of the current batch */
    size_t nrecs;
    void *bufs[2 * MAX_MSGS];  /* keys and payloads, freed at the end */
    size_t nbufs;
} state;

static int64_t next_of(int64_t off)
{
    /* what kb_add stores: the offset + 1, saturated */
    return off == INT64_MAX ? INT64_MAX : off + 1;
}

static int has_ts(int64_t ts_ms)
{
    return ts_ms >= 0 && ts_ms <= INT64_MAX / 1000;
}

static void *keep(state *s, size_t n)
{
    void *p = malloc(n ? n : 1);
    fuzz_check(p != NULL, "out of memory");
    s->bufs[s->nbufs++] = p;
    return p;
}

/* Copy of the n bytes at src, repeated to `to` bytes when to > n. */
static void *bytes(state *s, const uint8_t *src, size_t n, size_t to, const char *filler)
{
    if (to <= n) {
        void *p = keep(s, n);
        if (n)
            memcpy(p, src, n);
        return p;
    }
    if (n == 0) {
        src = (const uint8_t *)filler;
        n = strlen(filler);
    }
    uint8_t *p = keep(s, to);
    for (size_t i = 0; i < to; i++)
        p[i] = src[i % n];
    return p;
}

/* 1 when jansson reads the n bytes at p as an empty JSON array. */
static int empty_array(const void *p, size_t n)
{
    json_error_t e;
    json_t *j = json_loadb(p, n, 0, &e);
    int r = j && json_is_array(j) && json_array_size(j) == 0;
    json_decref(j);
    return r;
}

static int64_t col_of(const zx_rowset *rs, const char *name)
{
    return zx_rowset_find_column(rs, name, strlen(name));
}

/* The rows of r in the decoded rowset carry r's metadata. */
static void check_meta_cells(const state *s, const rec *r, const zx_rowset *back, zx_value *row)
{
    uint32_t md = s->b.metadata;
    int64_t ck = col_of(back, "_key"), cp = col_of(back, "_partition");
    int64_t co = col_of(back, "_offset"), ct = col_of(back, "_timestamp");
    fuzz_check((ck >= 0) == !!(md & ZX_META_KEY) && (cp >= 0) == !!(md & ZX_META_PARTITION) &&
               (co >= 0) == !!(md & ZX_META_OFFSET) && (ct >= 0) == !!(md & ZX_META_TIMESTAMP),
               "metadata columns");
    char ts[ZX_TS_BUFSZ];
    size_t tsl = has_ts(r->m.ts_ms) ? zx_ts_format(r->m.ts_ms * 1000, ts) : 0;
    for (uint32_t i = r->row0; i < r->row1; i++) {
        zx_rowset_row(back, i, row);
        if (ck >= 0) {
            const zx_value *v = &row[ck];
            if (r->m.key)
                fuzz_check(v->type == ZX_T_TEXT && v->len == r->m.key_len &&
                           memcmp(v->s, r->m.key, r->m.key_len) == 0, "_key value");
            else
                fuzz_check(v->type == ZX_T_NULL, "_key of a message without a key");
        }
        if (cp >= 0)
            fuzz_check(row[cp].type == ZX_T_INT && row[cp].u.i == r->m.partition,
                       "_partition value");
        if (co >= 0)
            fuzz_check(row[co].type == ZX_T_INT && row[co].u.i == r->m.offset,
                       "_offset value");
        if (ct >= 0) {
            const zx_value *v = &row[ct];
            if (tsl)
                fuzz_check(v->type == ZX_T_TIMESTAMP && v->u.i == r->m.ts_ms * 1000 &&
                           v->len == tsl && memcmp(v->s, ts, tsl) == 0, "_timestamp value");
            else
                fuzz_check(v->type == ZX_T_NULL, "_timestamp of a message without one");
        }
    }
}

static void check_reject(const zx_frame_reject *j, const rec *r)
{
    const kb_msg *m = &r->m;
    size_t raw = m->payload ? m->len : 0;
    if (raw > KB_RAW_MAX)
        raw = KB_RAW_MAX;
    fuzz_check(j->reason && j->reason[0], "reject without a reason");
    fuzz_check(j->raw_len == raw && (raw == 0 || memcmp(j->raw, m->payload, raw) == 0),
               "reject's raw bytes are not the payload");
    if (m->key) {
        size_t k = m->key_len > KB_RAW_MAX ? KB_RAW_MAX : m->key_len;
        fuzz_check(j->key && j->key_len == k && (k == 0 || memcmp(j->key, m->key, k) == 0),
                   "reject's key is not the message's");
    } else {
        fuzz_check(j->key == NULL, "reject with a key the message has not");
    }
    char pos[512];
    snprintf(pos, sizeof(pos), "{\"topic\":\"%s\",\"partition\":%d,\"offset\":%" PRId64 "}",
             m->topic, (int)m->partition, m->offset);
    fuzz_check(j->position && strcmp(j->position, pos) == 0, "reject's position");
    if (!m->payload)
        fuzz_check(strncmp(j->reason, "message too large", 17) == 0,
                   "a tombstone rejected for another reason than its size");
}

/* What kafka.c does with a full batch: kb_meta, encode, publish; here
 * decoded again and checked against the messages it holds.  Then reset. */
static void publish(state *s)
{
    kbatch *b = &s->b;
    zx_frame_meta m, m2;
    zx_buf fb;
    zx_rowset back;
    char err[200];
    if (kb_empty(b))
        goto reset;
    fuzz_check(kb_meta(b, &m) == 0, "kb_meta failed");
    m.pipeline = "fuzz";
    m.table = "events";
    m.ingested_at_us = 1764500000000000;
    fuzz_check(m.nrejects == b->nrej && m.accepted == b->rs.nrows, "kb_meta counts");

    /* rows and rejects account for every message */
    size_t rejs = 0;
    uint32_t rows = 0;
    for (size_t i = 0; i < s->nrecs; i++) {
        const rec *r = &s->recs[i];
        fuzz_check(r->row0 == rows, "rows of the messages out of order");
        rows = r->row1;
        if (r->rej >= 0) {
            fuzz_check((size_t)r->rej == rejs++, "rejects out of order");
            fuzz_check(r->row0 == r->row1, "a message gave rows and a reject");
            check_reject(&b->rej[r->rej], r);
        } else if (r->row0 == r->row1 && r->m.payload) {
            fuzz_check(empty_array(r->m.payload, r->m.len),
                       "a message gave neither rows nor a reject");
        }
    }
    fuzz_check(rows == b->rs.nrows && rejs == b->nrej, "rows or rejects of no message");

    /* the positions: one per partition with a next offset >= 0, in order */
    size_t k = 0;
    uint32_t seen[MAX_PARTS];
    size_t nseen = 0;
    for (size_t i = 0; i < s->nrecs; i++) {
        uint32_t p = s->recs[i].part;
        size_t j = 0;
        while (j < nseen && seen[j] != p)
            j++;
        if (j < nseen)
            continue;
        seen[nseen++] = p;
        int64_t last = INT64_MIN;
        for (size_t q = 0; q < s->nrecs; q++)
            if (s->recs[q].part == p)
                last = s->recs[q].m.offset;
        int64_t next = next_of(last);
        if (next < 0)
            continue;
        fuzz_check(k < m.npositions, "a position is missing");
        char name[300];
        kb_part_name(name, sizeof(name), topics[s->parts[p].topic], s->parts[p].partition);
        int64_t got;
        fuzz_check(strcmp(m.positions[k].part, name) == 0, "position's part name");
        fuzz_check(kb_pos_decode(m.positions[k].value, m.positions[k].value_len, &got) == 0 &&
                       got == next, "position is not the last offset + 1");
        k++;
    }
    fuzz_check(k == m.npositions, "positions of no message");

    /* encode, decode */
    zx_buf_init(&fb);
    zx_rowset_init(&back);
    fuzz_check(zx_frame_encode(&m, &b->rs, &fb) == 0, "cannot encode the batch");
    fuzz_check(fb.len <= kb_estimate(b), "frame larger than kb_estimate");
    int too_large = 0;
    for (size_t i = 0; i < b->nrej; i++)
        too_large |= strncmp(b->rej[i].reason, "message too large", 17) == 0;
    fuzz_check(too_large || fb.len <= s->limit, "frame over the limit");
    if (zx_frame_decode(fb.p, fb.len, &m2, &back, err, sizeof(err)) != 0) {
        fprintf(stderr, "decode: %s\n", err);
        fuzz_check(0, "the writer cannot decode the batch's frame");
    }
    fuzz_same_rows(&b->rs, &back);
    fuzz_check(m2.accepted == m.accepted && m2.metadata == m.metadata &&
               m2.npositions == m.npositions && m2.nrejects == m.nrejects, "frame metadata");
    for (size_t i = 0; i < m.npositions; i++)
        fuzz_check(strcmp(m2.positions[i].part, m.positions[i].part) == 0 &&
                   m2.positions[i].value_len == m.positions[i].value_len &&
                   (m.positions[i].value_len == 8 || m.positions[i].value_len == 16) &&
                   memcmp(m2.positions[i].value, m.positions[i].value,
                          m.positions[i].value_len) == 0,
                   "decoded position");
    zx_value *row = calloc(back.ncols + 1, sizeof(*row)); /* a row may have no column */
    fuzz_check(row != NULL, "out of memory");
    for (size_t i = 0; i < s->nrecs; i++) {
        const rec *r = &s->recs[i];
        if (r->row1 > r->row0)
            check_meta_cells(s, r, &back, row);
        if (r->rej >= 0)
            check_reject(&m2.rejects[r->rej], r);
    }
    free(row);
    zx_rowset_free(&back);
    zx_buf_free(&fb);
reset:
    kb_reset(b);
    fuzz_check(kb_empty(b) && b->rs.nrows == 0 && b->nrej == 0, "kb_reset");
    s->nrecs = 0;
}

static uint32_t part_of(state *s, int topic, int32_t partition)
{
    for (uint32_t i = 0; i < s->nparts; i++)
        if (s->parts[i].partition == partition && !strcmp(topics[s->parts[i].topic], topics[topic]))
            return i;
    fuzz_check(s->nparts < MAX_PARTS, "too many partitions");
    s->parts[s->nparts] = (part_ent){.topic = topic, .partition = partition,
                                     .last_off = INT64_MIN};
    return s->nparts++;
}

static void add(state *s, const kb_msg *m, uint32_t part)
{
    kbatch *b = &s->b;
    for (int attempt = 0;; attempt++) {
        uint32_t rows0 = b->rs.nrows, cols0 = b->rs.ncols;
        size_t rej0 = b->nrej, npos0 = b->npos;
        uint64_t msgs0 = b->nmsgs;
        int was_empty = kb_empty(b);
        int r = kb_add(b, m, part, s->limit);
        fuzz_check(r == KB_ADDED || r == KB_FULL, "kb_add failed");
        if (r == KB_FULL) {
            fuzz_check(attempt == 0 && !was_empty && b->nmsgs > 0,
                       "KB_FULL from an empty batch");
            fuzz_check(b->rs.nrows == rows0 && b->rs.ncols == cols0 && b->nrej == rej0 &&
                       b->npos == npos0 && b->nmsgs == msgs0, "KB_FULL changed the batch");
            publish(s);
            continue;
        }
        fuzz_check(b->nmsgs == msgs0 + 1 && !kb_empty(b), "message count");
        fuzz_check(b->rs.nrows >= rows0 && b->nrej - rej0 <= 1, "one reject at most");
        rec *c = &s->recs[s->nrecs++];
        c->m = *m;
        c->part = part;
        c->row0 = rows0;
        c->row1 = b->rs.nrows;
        c->rej = b->nrej > rej0 ? (long)rej0 : -1;
        if (!m->payload)
            fuzz_check(c->row0 == c->row1, "a tombstone gave rows");
        return;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static state s;
    if (size < 2)
        return 0;
    memset(&s, 0, sizeof(s));
    uint8_t f = data[0];
    uint32_t md = 0;
    if (f & 1)
        md |= ZX_META_KEY;
    if (f & 2)
        md |= ZX_META_PARTITION;
    if (f & 4)
        md |= ZX_META_OFFSET;
    if (f & 8)
        md |= ZX_META_TIMESTAMP;
    switch ((f >> 4) & 3) {
    case 0: s.limit = (size_t)1 << 30; break;
    case 1: s.limit = 256 + 16 * (size_t)data[1]; break;
    case 2: s.limit = 2048 + 256 * (size_t)data[1]; break;
    default: s.limit = 4 * (size_t)KB_RAW_MAX; break;
    }
    int multi = (f >> 6) & 1;
    size_t hl = multi ? 7 : 5;
    kb_init(&s.b, md | ZX_META_INGESTED_AT); /* other bits are not kafka's */
    fuzz_check(s.b.metadata == md, "kb_init metadata bits");

    size_t at = 2;
    for (size_t n = 0; n < MAX_MSGS && size - at >= hl; n++) {
        const uint8_t *h = data + at;
        at += hl;
        uint8_t prm = h[4];
        kb_msg m = {0};
        int topic = h[0] >> 6;
        m.topic = topics[topic];
        static const int32_t parts[8] = {0, 1, 2, 0, -1, INT32_MAX, INT32_MIN, 3};
        m.partition = (h[1] & 7) == 3 ? (int8_t)prm : parts[h[1] & 7];
        uint32_t part = part_of(&s, topic, m.partition);
        part_ent *pe = &s.parts[part];
        switch ((h[1] >> 3) & 7) {
        case 0: m.offset = pe->last_off == INT64_MIN ? 0 : next_of(pe->last_off); break;
        case 1: m.offset = 0; break;
        case 2: m.offset = prm; break;
        case 3: m.offset = INT64_MAX; break;
        case 4: m.offset = -1; break;
        case 5: m.offset = -1001; break;
        case 6: m.offset = INT64_MAX - 1; break;
        default: m.offset = INT64_MIN; break;
        }
        pe->last_off = m.offset;
        static const int64_t tss[8] = {-1, 0, INT64_C(1764500000000), INT64_MAX, INT64_MIN,
                                       INT64_C(253402300800000), INT64_MAX / 1000,
                                       INT64_MAX / 1000 + 1};
        m.ts_ms = tss[h[2] & 7];

        size_t klen = (h[0] & 1) ? h[3] : 0;
        if (klen > size - at)
            klen = size - at;
        const uint8_t *kp = data + at;
        at += klen;
        size_t plen = multi ? (size_t)(h[5] | h[6] << 8) : size - at;
        if (plen > size - at)
            plen = size - at;
        const uint8_t *pp = data + at;
        at += plen;

        if (h[0] & 1) {
            size_t to = (h[0] & 4) ? KB_RAW_MAX + 1 + klen : klen;
            m.key = bytes(&s, kp, klen, to, "k");
            m.key_len = to > klen ? to : klen;
        }
        if (!(h[0] & 2)) {
            switch ((h[0] >> 4) & 3) {
            case 0:
                m.payload = bytes(&s, pp, plen, plen, "");
                m.len = plen;
                break;
            case 1:
                m.len = KB_RAW_MAX + 7 + plen;
                m.payload = bytes(&s, pp, plen, m.len, "{\"a\":");
                break;
            case 2: {
                size_t ncol = 8 * (size_t)prm, cap = 24 * ncol + 3, l = 0;
                char *p = keep(&s, cap);
                p[l++] = '{';
                for (size_t i = 0; i < ncol; i++)
                    l += (size_t)snprintf(p + l, cap - l, "%s\"m%zu_%zu\":%zu",
                                          i ? "," : "", n, i, i);
                p[l++] = '}';
                m.payload = p;
                m.len = l;
                break;
            }
            default: {
                size_t d = prm;
                char *p = keep(&s, 2 * d + plen);
                memset(p, '[', d);
                if (plen)
                    memcpy(p + d, pp, plen);
                memset(p + d + plen, ']', d);
                m.payload = p;
                m.len = 2 * d + plen;
                break;
            }
            }
        }
        add(&s, &m, part);
    }
    publish(&s);
    kb_free(&s.b);
    for (size_t i = 0; i < s.nbufs; i++)
        free(s.bufs[i]);
    return 0;
}
