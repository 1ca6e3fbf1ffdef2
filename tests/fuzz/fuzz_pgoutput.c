/*
 * fuzz_pgoutput.c — fuzz target for workers/sources/postgres/pgoutput.c: a
 * replication connection's CopyData payloads from outside, through the
 * framing (pgo_frame_decode) and the pgoutput decoder (pgo_decode) with or
 * without a relation cache, as the pg-cdc source will feed them.
 *
 * Input:
 *   byte 0   bit 0: protocol version (0: 1, 1: 2); bit 1: with a relation
 *            cache; bit 2: the payloads are pgoutput messages themselves
 *            (no CopyData header: reaches the decoder more often); bits
 *            3-4: the cache's limits (0: defaults, 1: 40 relations (its table
 *            grows past 32), 2: 256 bytes, 3: 1 relation)
 *   then payloads, each a 2-byte big-endian length and that many bytes
 *   (the last one cut at the input's end).
 * Each payload is copied to a heap block of exactly its length, so that
 * ASan sees any read past it.
 *
 * Checks, for every payload: a failure leaves an error text and the
 * decoder's state (stream block, cache) unchanged; a success points only
 * into the payload (or to the static "pg_catalog", the decoder's arrays,
 * the cache), XLogData's message is the payload after 25 bytes and a
 * keepalive is 18 bytes; the decoded message written back (by a small
 * encoder here, from the documentation's layouts) gives the payload's
 * bytes exactly; with a cache, a change's tuples have exactly its
 * relation's column count and a Relation is stored as decoded; Stream
 * Start and Stop open and close the block; LSNs survive pgo_lsn_format and
 * pgo_lsn_parse.  Leaks are found by ASan (libFuzzer build).
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/pgoutput/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/sources/postgres/pgoutput.h"

static pgo_decoder dec;

/* ---- writing a message back ------------------------------------------ */

typedef struct wr {
    uint8_t *b;
    size_t n, cap;
    int over;                  /* more than cap was written */
} wr;

static void w8(wr *w, unsigned v)
{
    if (w->n >= w->cap) {
        w->over = 1;
        return;
    }
    w->b[w->n++] = (uint8_t)v;
}

static void w16(wr *w, unsigned v)
{
    w8(w, (v >> 8) & 0xff);
    w8(w, v & 0xff);
}

static void w32(wr *w, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        w8(w, (v >> (8 * i)) & 0xff);
}

static void w64(wr *w, uint64_t v)
{
    w32(w, (uint32_t)(v >> 32));
    w32(w, (uint32_t)v);
}

static void wbytes(wr *w, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n && !w->over; i++)
        w8(w, p[i]);
}

static int inside(const void *p, size_t n, const uint8_t *buf, size_t len)
{
    const uint8_t *q = p;
    return q >= buf && n <= len && (size_t)(q - buf) <= len - n;
}

/* A string of the message: inside the payload with its NUL. */
static void check_str(const char *s, const uint8_t *buf, size_t len)
{
    fuzz_check(s != NULL, "string NULL");
    fuzz_check(inside(s, 1, buf, len), "string outside the payload");
    size_t max = len - (size_t)((const uint8_t *)s - buf);
    fuzz_check(memchr(s, 0, max) != NULL, "string without NUL inside the payload");
}

static void wstr(wr *w, const char *s, const uint8_t *buf, size_t len)
{
    check_str(s, buf, len);
    wbytes(w, (const uint8_t *)s, strlen(s) + 1);
}

/* A namespace: the static "pg_catalog" stands for "". */
static void wnsp(wr *w, const char *s, const uint8_t *buf, size_t len)
{
    if (!inside(s, 1, buf, len)) {
        fuzz_check(strcmp(s, "pg_catalog") == 0, "namespace outside the payload");
        w8(w, 0);
        return;
    }
    fuzz_check(s[0] != '\0', "empty namespace not mapped");
    wstr(w, s, buf, len);
}

static void wtuple(wr *w, const pgo_tuple *t, const pgo_value *arr, const uint8_t *buf,
                   size_t len)
{
    fuzz_check(t->vals == arr, "tuple values not in the decoder");
    fuzz_check(t->ncols <= PGO_MAX_COLS, "tuple too wide");
    w16(w, t->ncols);
    for (uint32_t i = 0; i < t->ncols; i++) {
        const pgo_value *v = &t->vals[i];
        w8(w, (unsigned char)v->kind);
        if (v->kind == PGO_NULL || v->kind == PGO_UNCHANGED) {
            fuzz_check(v->data == NULL && v->len == 0, "null or unchanged with data");
            continue;
        }
        fuzz_check(v->kind == PGO_TEXT || v->kind == PGO_BINARY, "unknown kind returned");
        fuzz_check(v->len <= INT32_MAX && inside(v->data, v->len, buf, len),
                   "value outside the payload");
        w32(w, v->len);
        wbytes(w, v->data, v->len);
    }
}

static void check_lsn(pgo_lsn l)
{
    char s[PGO_LSN_LEN];
    pgo_lsn back = 0;
    fuzz_check(pgo_lsn_format(l, s, sizeof(s)) > 0, "LSN format");
    fuzz_check(pgo_lsn_parse(s, &back) == 0 && back == l, "LSN round trip");
}

static void same_rel(const pgo_rel *a, const pgo_rel *b)
{
    fuzz_check(a->relid == b->relid && a->replident == b->replident && a->ncols == b->ncols,
               "cached relation differs");
    fuzz_check(strcmp(a->nspname, b->nspname) == 0 && strcmp(a->relname, b->relname) == 0,
               "cached relation names differ");
    for (uint32_t i = 0; i < a->ncols; i++)
        fuzz_check(strcmp(a->cols[i].name, b->cols[i].name) == 0 &&
                   a->cols[i].type_oid == b->cols[i].type_oid &&
                   a->cols[i].typmod == b->cols[i].typmod && a->cols[i].flags == b->cols[i].flags,
                   "cached column differs");
}

/* Writes m back and compares with the payload. */
static void rewrite(const pgo_msg *m, const uint8_t *buf, size_t len)
{
    wr w = {.b = malloc(len + 8), .cap = len + 8};
    fuzz_check(w.b != NULL, "out of memory");
    w8(&w, m->type);
    if (m->streamed)
        w32(&w, m->xid);
    else
        fuzz_check(m->xid == 0, "xid without streaming");
    switch (m->type) {
    case PGO_BEGIN:
        fuzz_check(m->u.begin.final_lsn != 0, "begin LSN 0");
        w64(&w, m->u.begin.final_lsn), w64(&w, (uint64_t)m->u.begin.commit_time);
        w32(&w, m->u.begin.xid);
        check_lsn(m->u.begin.final_lsn);
        break;
    case PGO_COMMIT:
        w8(&w, 0), w64(&w, m->u.commit.commit_lsn), w64(&w, m->u.commit.end_lsn);
        w64(&w, (uint64_t)m->u.commit.commit_time);
        check_lsn(m->u.commit.end_lsn);
        break;
    case PGO_ORIGIN:
        w64(&w, m->u.origin.lsn), wstr(&w, m->u.origin.name, buf, len);
        break;
    case PGO_RELATION: {
        const pgo_rel *r = &m->u.relation;
        fuzz_check(r->relid != 0 && r->ncols <= PGO_MAX_COLS, "relation fields");
        fuzz_check(r->ncols == 0 || r->cols == dec.cols, "relation columns not in the decoder");
        w32(&w, r->relid), wnsp(&w, r->nspname, buf, len), wstr(&w, r->relname, buf, len);
        w8(&w, (unsigned char)r->replident), w16(&w, r->ncols);
        for (uint32_t i = 0; i < r->ncols; i++) {
            w8(&w, r->cols[i].flags), wstr(&w, r->cols[i].name, buf, len);
            w32(&w, r->cols[i].type_oid), w32(&w, (uint32_t)r->cols[i].typmod);
        }
        if (dec.cache) {
            fuzz_check(m->rel && m->rel == pgo_cache_get(dec.cache, r->relid),
                       "relation not cached");
            same_rel(m->rel, r);
        } else {
            fuzz_check(m->rel == NULL, "rel without a cache");
        }
        break;
    }
    case PGO_TYPE:
        w32(&w, m->u.type.oid), wnsp(&w, m->u.type.nspname, buf, len);
        wstr(&w, m->u.type.name, buf, len);
        break;
    case PGO_INSERT:
    case PGO_UPDATE:
    case PGO_DELETE:
        w32(&w, m->u.change.relid);
        if (m->u.change.old_kind) {
            fuzz_check(m->type != PGO_INSERT, "insert with an old tuple");
            w8(&w, (unsigned char)m->u.change.old_kind);
            wtuple(&w, &m->u.change.old_tuple, dec.vals[0], buf, len);
        } else {
            fuzz_check(m->type != PGO_DELETE, "delete without an old tuple");
        }
        if (m->type != PGO_DELETE) {
            w8(&w, 'N');
            wtuple(&w, &m->u.change.new_tuple, dec.vals[1], buf, len);
        }
        if (dec.cache) {
            fuzz_check(m->rel && m->rel == pgo_cache_get(dec.cache, m->u.change.relid),
                       "change without its cached relation");
            if (m->u.change.old_kind)
                fuzz_check(m->u.change.old_tuple.ncols == m->rel->ncols,
                           "old tuple's column count is not its relation's");
            if (m->type != PGO_DELETE)
                fuzz_check(m->u.change.new_tuple.ncols == m->rel->ncols,
                           "new tuple's column count is not its relation's");
        } else {
            fuzz_check(m->rel == NULL, "rel without a cache");
        }
        break;
    case PGO_TRUNCATE:
        fuzz_check(m->u.truncate.nrels > 0 &&
                   inside(m->u.truncate.relids, (size_t)m->u.truncate.nrels * 4, buf, len),
                   "truncate relids outside the payload");
        w32(&w, m->u.truncate.nrels), w8(&w, m->u.truncate.options);
        for (uint32_t i = 0; i < m->u.truncate.nrels; i++)
            w32(&w, pgo_truncate_relid(m, i));
        break;
    case PGO_MESSAGE:
        w8(&w, m->u.message.flags), w64(&w, m->u.message.lsn);
        wstr(&w, m->u.message.prefix, buf, len);
        fuzz_check(inside(m->u.message.content, m->u.message.len, buf, len),
                   "message content outside the payload");
        w32(&w, m->u.message.len), wbytes(&w, m->u.message.content, m->u.message.len);
        break;
    case PGO_STREAM_START:
        w32(&w, m->u.stream_start.xid), w8(&w, (unsigned)m->u.stream_start.first_segment);
        break;
    case PGO_STREAM_STOP:
        break;
    case PGO_STREAM_COMMIT:
        w32(&w, m->u.stream_commit.xid), w8(&w, 0), w64(&w, m->u.stream_commit.commit_lsn);
        w64(&w, m->u.stream_commit.end_lsn), w64(&w, (uint64_t)m->u.stream_commit.commit_time);
        break;
    case PGO_STREAM_ABORT:
        w32(&w, m->u.stream_abort.xid), w32(&w, m->u.stream_abort.subxid);
        break;
    default:
        fuzz_check(0, "unknown type returned");
    }
    fuzz_check(!w.over && w.n == len && memcmp(w.b, buf, len) == 0,
               "message written back differs from the payload");
    free(w.b);
}

/* One pgoutput message through the decoder, with the checks. */
static void one_message(const uint8_t *buf, size_t len)
{
    int in_stream = dec.in_stream;
    uint32_t sx = dec.stream_xid;
    uint32_t nrel = dec.cache ? pgo_cache_count(dec.cache) : 0;
    size_t nbytes = dec.cache ? pgo_cache_bytes(dec.cache) : 0;
    pgo_msg m;
    if (pgo_decode(&dec, buf, len, &m) != 0) {
        fuzz_check(dec.err[0] != '\0', "failure without an error text");
        fuzz_check(dec.in_stream == in_stream && dec.stream_xid == sx,
                   "failure changed the stream state");
        fuzz_check(!dec.cache || (pgo_cache_count(dec.cache) == nrel &&
                                  pgo_cache_bytes(dec.cache) == nbytes),
                   "failure changed the cache");
        return;
    }
    fuzz_check(len > 0 && m.type == buf[0], "type is not the first byte");
    rewrite(&m, buf, len);
    if (m.type == PGO_STREAM_START)
        fuzz_check(!in_stream && dec.in_stream && dec.stream_xid == m.u.stream_start.xid,
                   "stream start");
    else if (m.type == PGO_STREAM_STOP)
        fuzz_check(in_stream && !dec.in_stream, "stream stop");
    else
        fuzz_check(dec.in_stream == in_stream && dec.stream_xid == sx, "stream state changed");
    fuzz_check(dec.version == 2 || !m.streamed, "streamed under protocol 1");
    fuzz_check(m.streamed == (in_stream && m.type != PGO_ORIGIN && m.type != PGO_STREAM_STOP),
               "xid presence");
    if (m.type != PGO_RELATION && dec.cache)
        fuzz_check(pgo_cache_count(dec.cache) == nrel, "cache changed by another message");
}

static void one_payload(const uint8_t *buf, size_t len, int raw)
{
    if (raw) {
        one_message(buf, len);
        return;
    }
    pgo_frame f;
    int in_stream = dec.in_stream;
    if (pgo_frame_decode(&dec, buf, len, &f) != 0) {
        fuzz_check(dec.err[0] != '\0', "frame failure without an error text");
        fuzz_check(dec.in_stream == in_stream, "frame failure changed the stream state");
        return;
    }
    fuzz_check(dec.in_stream == in_stream, "frame changed the stream state");
    if (f.type == PGO_KEEPALIVE) {
        fuzz_check(len == 18 && buf[0] == 'k' && f.reply_requested == buf[17] &&
                   f.data == NULL && f.len == 0, "keepalive");
        check_lsn(f.wal_end);
        uint8_t st[PGO_STATUS_LEN];
        fuzz_check(pgo_status_encode(st, f.wal_end, f.wal_end, f.wal_end, f.send_time,
                                     f.reply_requested) == PGO_STATUS_LEN &&
                   st[0] == 'r' && memcmp(st + 1, buf + 1, 8) == 0 &&
                   memcmp(st + 25, buf + 9, 8) == 0 && st[33] == buf[17],
                   "status update");
        return;
    }
    fuzz_check(f.type == PGO_XLOGDATA && buf[0] == 'w' && len >= 25 && f.len == len - 25 &&
               (f.len == 0 ? f.data == NULL : f.data == buf + 25), "xlogdata");
    check_lsn(f.wal_start);
    /* the message in a block of its own, so that over-reads show */
    uint8_t *copy = malloc(f.len ? f.len : 1);
    fuzz_check(copy != NULL, "out of memory");
    if (f.len)
        memcpy(copy, f.data, f.len);
    one_message(f.len ? copy : NULL, f.len);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned flags = data[0];
    pgo_cache *cache = NULL;
    if (flags & 2) {
        static const uint32_t rels[4] = {0, 40, 0, 1};
        static const size_t bytes[4] = {0, 0, 256, 0};
        cache = pgo_cache_create(rels[(flags >> 3) & 3], bytes[(flags >> 3) & 3]);
        fuzz_check(cache != NULL, "out of memory");
    }
    fuzz_check(pgo_decoder_init(&dec, (flags & 1) ? 2 : 1, cache) == 0, "decoder init");
    size_t off = 1;
    while (off < size) {
        size_t n = size - off < 2 ? 0 : (size_t)data[off] << 8 | data[off + 1];
        off += size - off < 2 ? size - off : 2;
        if (n > size - off)
            n = size - off;
        uint8_t *p = malloc(n ? n : 1);
        fuzz_check(p != NULL, "out of memory");
        if (n)
            memcpy(p, data + off, n);
        one_payload(n ? p : NULL, n, (flags & 4) != 0);
        free(p);
        off += n;
    }
    pgo_cache_destroy(cache);
    return 0;
}
