/*
 * test_pgoutput.c — PostgreSQL's logical replication messages (workers/
 * sources/pgoutput.c): every pgoutput message type under protocol
 * versions 1 and 2, written byte by byte as the PostgreSQL 15
 * documentation lays them out; NULL, unchanged TOASTed, text and binary
 * values; the relation cache (a schema change replacing a relation, its
 * limits); the CopyData framing (XLogData, keepalive) and the standby
 * status update; LSN text.  Then every way a message can be broken: each
 * prefix of each valid message, counts and lengths beyond the bytes, a
 * tuple unlike its relation, unknown types and kinds, stream blocks out of
 * order.  Each input is decoded from a heap copy of exactly its length,
 * so an ASan build catches any read past it.  No server.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/sources/postgres/pgoutput.h"

#include "tests/unit/check.h"

/* ---- writing messages ------------------------------------------------ */

typedef struct wbuf {
    uint8_t b[8192];
    size_t n;
} wbuf;

static void w8(wbuf *w, unsigned v)
{
    w->b[w->n++] = (uint8_t)v;
}

static void w16(wbuf *w, unsigned v)
{
    w8(w, v >> 8);
    w8(w, v);
}

static void w32(wbuf *w, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        w8(w, (v >> (8 * i)) & 0xff);
}

static void w64(wbuf *w, uint64_t v)
{
    w32(w, (uint32_t)(v >> 32));
    w32(w, (uint32_t)v);
}

static void wstr(wbuf *w, const char *s)
{
    size_t n = strlen(s) + 1;
    memcpy(w->b + w->n, s, n);
    w->n += n;
}

static void wbytes(wbuf *w, const void *p, size_t n)
{
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

/* A text value. */
static void wtext(wbuf *w, const char *s)
{
    w8(w, 't');
    w32(w, (uint32_t)strlen(s));
    wbytes(w, s, strlen(s));
}

/* Starts message `type` (with xid when xid != 0: a streamed one). */
static wbuf *start(wbuf *w, int type, uint32_t xid)
{
    w->n = 0;
    w8(w, (unsigned)type);
    if (xid)
        w32(w, xid);
    return w;
}

/* Relation 16384 public.users (id int4 key, name text, bio text) +
 * `extra` more text columns. */
static wbuf *users_rel(wbuf *w, uint32_t xid, int extra)
{
    start(w, 'R', xid);
    w32(w, 16384);
    wstr(w, "public");
    wstr(w, "users");
    w8(w, 'd');
    w16(w, 3 + (unsigned)extra);
    w8(w, 1), wstr(w, "id"), w32(w, 23), w32(w, 0xffffffff);
    w8(w, 0), wstr(w, "name"), w32(w, 1043), w32(w, 68);
    w8(w, 0), wstr(w, "bio"), w32(w, 25), w32(w, 0xffffffff);
    for (int i = 0; i < extra; i++) {
        char name[16];
        snprintf(name, sizeof(name), "extra%d", i);
        w8(w, 0), wstr(w, name), w32(w, 25), w32(w, 0xffffffff);
    }
    return w;
}

/* ---- decoding exact-size copies ---------------------------------------- */

static uint8_t *last_copy;

/* Decodes a heap copy of exactly w's bytes (kept until the next call). */
static int dec(pgo_decoder *d, const void *p, size_t n, pgo_msg *m)
{
    free(last_copy);
    last_copy = malloc(n ? n : 1);
    if (n)
        memcpy(last_copy, p, n);
    return pgo_decode(d, n ? last_copy : NULL, n, m);
}

static int decw(pgo_decoder *d, const wbuf *w, pgo_msg *m)
{
    return dec(d, w->b, w->n, m);
}

static int frame(pgo_decoder *d, const void *p, size_t n, pgo_frame *f)
{
    free(last_copy);
    last_copy = malloc(n ? n : 1);
    if (n)
        memcpy(last_copy, p, n);
    return pgo_frame_decode(d, n ? last_copy : NULL, n, f);
}

static int has(const char *hay, const char *needle)
{
    int ok = strstr(hay, needle) != NULL;
    if (!ok)
        printf("  error text \"%s\" lacks \"%s\"\n", hay, needle);
    return ok;
}

static int val_is(const pgo_value *v, char kind, const char *s)
{
    if (v->kind != kind)
        return 0;
    if (kind == 'n' || kind == 'u')
        return v->data == NULL && v->len == 0;
    return v->len == strlen(s) && memcmp(v->data, s, v->len) == 0;
}

/* Every proper prefix of w, and w with one byte more, must fail with an
 * error text and leave d's state (stream block, cache) alone; then w
 * itself must decode (state changes allowed).  Returns the decode of w. */
static int prefixes_fail(pgo_decoder *d, const wbuf *w, pgo_msg *m)
{
    int in_stream = d->in_stream;
    uint32_t sx = d->stream_xid;
    uint32_t nrel = d->cache ? pgo_cache_count(d->cache) : 0;
    size_t nbytes = d->cache ? pgo_cache_bytes(d->cache) : 0;
    int bad = 0;
    for (size_t k = 0; k < w->n; k++) {
        d->err[0] = '\0';
        if (dec(d, w->b, k, m) != -1 || d->err[0] == '\0' || d->in_stream != in_stream ||
            d->stream_xid != sx)
            bad++;
        if (d->cache && (pgo_cache_count(d->cache) != nrel || pgo_cache_bytes(d->cache) != nbytes))
            bad++;
        if (bad) {
            printf("  prefix of %zu of the %zu bytes of '%c': accepted or state changed\n", k,
                   w->n, w->b[0]);
            break;
        }
    }
    CHECK(bad == 0);
    wbuf more = *w;
    w8(&more, 0);
    CHECK(decw(d, &more, m) == -1 && has(d->err, "left over"));
    CHECK(d->in_stream == in_stream);
    return decw(d, w, m);
}

/* ---- tests ------------------------------------------------------------ */

static void test_lsn(void)
{
    char s[PGO_LSN_LEN];
    pgo_lsn l = 0;
    CHECK(pgo_lsn_format(0x16B374D848ull, s, sizeof(s)) == 11 && strcmp(s, "16/B374D848") == 0);
    CHECK(pgo_lsn_format(0, s, sizeof(s)) == 3 && strcmp(s, "0/0") == 0);
    CHECK(pgo_lsn_format(UINT64_MAX, s, sizeof(s)) == 17 &&
          strcmp(s, "FFFFFFFF/FFFFFFFF") == 0);
    CHECK(pgo_lsn_format(0x100000001ull, s, sizeof(s)) == 3 && strcmp(s, "1/1") == 0);
    CHECK(pgo_lsn_format(0x16B374D848ull, s, 11) == -1 && s[0] == '\0');
    CHECK(pgo_lsn_format(0x16B374D848ull, s, 12) == 11);

    CHECK(pgo_lsn_parse("16/B374D848", &l) == 0 && l == 0x16B374D848ull);
    CHECK(pgo_lsn_parse("16/b374d848", &l) == 0 && l == 0x16B374D848ull);
    CHECK(pgo_lsn_parse("0/0", &l) == 0 && l == 0);
    CHECK(pgo_lsn_parse("FFFFFFFF/FFFFFFFF", &l) == 0 && l == UINT64_MAX);
    CHECK(pgo_lsn_parse("00000016/0374D848", &l) == 0 && l == 0x160374D848ull);
    l = 42;
    const char *bad[] = {"", "/", "1/", "/1", "123456789/0", "0/123456789", "1/2 ", " 1/2",
                        "+1/2", "1/-2", "g/1", "1//2", "1/2/3", "0x1/2", "1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(pgo_lsn_parse(bad[i], &l) == -1 && l == 42);
    CHECK(pgo_lsn_parse(NULL, &l) == -1);
    for (uint64_t v = 1; v; v <<= 3) {
        pgo_lsn back;
        CHECK(pgo_lsn_format(v * 7, s, sizeof(s)) > 0 && pgo_lsn_parse(s, &back) == 0 &&
              back == v * 7);
    }
}

static void test_time(void)
{
    int64_t t;
    CHECK(pgo_time_to_unix_us(0, &t) == 0 && t == PGO_EPOCH_DIFF_US);
    CHECK(pgo_time_from_unix_us(PGO_EPOCH_DIFF_US, &t) == 0 && t == 0);
    CHECK(pgo_time_from_unix_us(0, &t) == 0 && t == -PGO_EPOCH_DIFF_US);
    CHECK(pgo_time_to_unix_us(INT64_MAX, &t) == -1);
    CHECK(pgo_time_to_unix_us(INT64_MAX - PGO_EPOCH_DIFF_US, &t) == 0 && t == INT64_MAX);
    CHECK(pgo_time_from_unix_us(INT64_MIN, &t) == -1);
    CHECK(pgo_time_to_unix_us(INT64_MIN, &t) == 0 && t == INT64_MIN + PGO_EPOCH_DIFF_US);
}

/* A whole protocol-1 transaction, every non-streaming message type. */
static void test_v1(pgo_decoder *d)
{
    pgo_cache *c = pgo_cache_create(0, 0);
    wbuf w;
    pgo_msg m;
    CHECK(pgo_decoder_init(d, 1, c) == 0);

    start(&w, 'B', 0);
    w64(&w, 0x16B374D848ull), w64(&w, 700000000000000ull), w32(&w, 777);
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_BEGIN && m.u.begin.final_lsn == 0x16B374D848ull &&
          m.u.begin.commit_time == 700000000000000 && m.u.begin.xid == 777 && !m.streamed);

    start(&w, 'O', 0);
    w64(&w, 0x1234), wstr(&w, "pg_16390");
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_ORIGIN && m.u.origin.lsn == 0x1234 &&
          strcmp(m.u.origin.name, "pg_16390") == 0);

    start(&w, 'Y', 0);
    w32(&w, 90001), wstr(&w, "public"), wstr(&w, "mood");
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_TYPE && m.u.type.oid == 90001 &&
          strcmp(m.u.type.nspname, "public") == 0 && strcmp(m.u.type.name, "mood") == 0);
    start(&w, 'Y', 0);
    w32(&w, 25), wstr(&w, ""), wstr(&w, "text");
    CHECK(decw(d, &w, &m) == 0 && strcmp(m.u.type.nspname, "pg_catalog") == 0);

    users_rel(&w, 0, 0);
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_RELATION && m.u.relation.relid == 16384 && m.u.relation.ncols == 3 &&
          m.u.relation.replident == 'd' && strcmp(m.u.relation.nspname, "public") == 0 &&
          strcmp(m.u.relation.relname, "users") == 0);
    CHECK(m.u.relation.cols[0].flags == PGO_COL_KEY && m.u.relation.cols[1].flags == 0 &&
          strcmp(m.u.relation.cols[1].name, "name") == 0 &&
          m.u.relation.cols[1].type_oid == 1043 && m.u.relation.cols[1].typmod == 68 &&
          m.u.relation.cols[0].typmod == -1);
    /* the cache's copy owns its names: it survives the input */
    CHECK(m.rel && m.rel == pgo_cache_get(c, 16384) && pgo_cache_count(c) == 1);
    CHECK(m.rel->cols != m.u.relation.cols && m.rel->relname != m.u.relation.relname);
    memset(last_copy, 'x', w.n);
    CHECK(strcmp(m.rel->relname, "users") == 0 && strcmp(m.rel->cols[2].name, "bio") == 0 &&
          m.rel->cols[2].type_oid == 25 && m.rel->cols[0].flags == PGO_COL_KEY);

    /* Insert: text, NULL, empty text */
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3);
    wtext(&w, "1"), w8(&w, 'n'), wtext(&w, "");
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_INSERT && m.u.change.relid == 16384 && m.rel == pgo_cache_get(c, 16384) &&
          m.u.change.old_kind == 0 && m.u.change.new_tuple.ncols == 3);
    CHECK(val_is(&m.u.change.new_tuple.vals[0], 't', "1"));
    CHECK(val_is(&m.u.change.new_tuple.vals[1], 'n', NULL));
    CHECK(val_is(&m.u.change.new_tuple.vals[2], 't', ""));
    CHECK(m.u.change.new_tuple.vals[0].data == last_copy + 13);

    /* Insert with a binary value */
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3);
    w8(&w, 'b'), w32(&w, 4), w32(&w, 7), wtext(&w, "ann"), w8(&w, 'n');
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.u.change.new_tuple.vals[0].kind == PGO_BINARY &&
          m.u.change.new_tuple.vals[0].len == 4 &&
          memcmp(m.u.change.new_tuple.vals[0].data, "\0\0\0\7", 4) == 0);

    /* Update without an old tuple; bio unchanged TOAST: not NULL, not "" */
    start(&w, 'U', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3);
    wtext(&w, "1"), wtext(&w, "bob"), w8(&w, 'u');
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_UPDATE && m.u.change.old_kind == 0 &&
          val_is(&m.u.change.new_tuple.vals[2], 'u', NULL) &&
          m.u.change.new_tuple.vals[2].kind != PGO_NULL &&
          val_is(&m.u.change.new_tuple.vals[1], 't', "bob"));

    /* Update that changed the key: old key ('K', non-key columns null) */
    start(&w, 'U', 0);
    w32(&w, 16384), w8(&w, 'K'), w16(&w, 3);
    wtext(&w, "1"), w8(&w, 'n'), w8(&w, 'n');
    w8(&w, 'N'), w16(&w, 3), wtext(&w, "2"), wtext(&w, "bob"), w8(&w, 'u');
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.u.change.old_kind == 'K' && m.u.change.old_tuple.ncols == 3 &&
          val_is(&m.u.change.old_tuple.vals[0], 't', "1") &&
          val_is(&m.u.change.old_tuple.vals[1], 'n', NULL) &&
          val_is(&m.u.change.new_tuple.vals[0], 't', "2") &&
          val_is(&m.u.change.new_tuple.vals[2], 'u', NULL));
    CHECK(m.u.change.old_tuple.vals != m.u.change.new_tuple.vals);

    /* Update with the whole old row (REPLICA IDENTITY FULL) */
    start(&w, 'U', 0);
    w32(&w, 16384), w8(&w, 'O'), w16(&w, 3);
    wtext(&w, "2"), wtext(&w, "bob"), wtext(&w, "old bio");
    w8(&w, 'N'), w16(&w, 3), wtext(&w, "2"), wtext(&w, "rob"), wtext(&w, "new bio");
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.u.change.old_kind == 'O' && val_is(&m.u.change.old_tuple.vals[2], 't', "old bio") &&
          val_is(&m.u.change.new_tuple.vals[2], 't', "new bio"));

    /* Delete by key, then by old row */
    start(&w, 'D', 0);
    w32(&w, 16384), w8(&w, 'K'), w16(&w, 3), wtext(&w, "2"), w8(&w, 'n'), w8(&w, 'n');
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_DELETE && m.u.change.old_kind == 'K' &&
          m.u.change.new_tuple.ncols == 0 && val_is(&m.u.change.old_tuple.vals[0], 't', "2"));
    start(&w, 'D', 0);
    w32(&w, 16384), w8(&w, 'O'), w16(&w, 3), wtext(&w, "2"), wtext(&w, "rob"), w8(&w, 'u');
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.u.change.old_kind == 'O' && val_is(&m.u.change.old_tuple.vals[2], 'u', NULL));

    /* Truncate of three relations, CASCADE and RESTART IDENTITY */
    start(&w, 'T', 0);
    w32(&w, 3), w8(&w, 3), w32(&w, 16384), w32(&w, 16390), w32(&w, 0x80000001u);
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_TRUNCATE && m.u.truncate.nrels == 3 &&
          m.u.truncate.options == (PGO_TRUNCATE_CASCADE | PGO_TRUNCATE_RESTART_IDENTITY) &&
          pgo_truncate_relid(&m, 0) == 16384 && pgo_truncate_relid(&m, 1) == 16390 &&
          pgo_truncate_relid(&m, 2) == 0x80000001u);
    start(&w, 'T', 0);
    w32(&w, 1), w8(&w, 0), w32(&w, 16384);
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.u.truncate.nrels == 1 && m.u.truncate.options == 0);

    /* Message, transactional, with content (a NUL inside is fine) */
    start(&w, 'M', 0);
    w8(&w, 1), w64(&w, 0x16B374D000ull), wstr(&w, "zx"), w32(&w, 5), wbytes(&w, "a\0b\0c", 5);
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_MESSAGE && m.u.message.flags == PGO_MESSAGE_TRANSACTIONAL &&
          m.u.message.lsn == 0x16B374D000ull && strcmp(m.u.message.prefix, "zx") == 0 &&
          m.u.message.len == 5 && memcmp(m.u.message.content, "a\0b\0c", 5) == 0);
    start(&w, 'M', 0);
    w8(&w, 0), w64(&w, 1), wstr(&w, ""), w32(&w, 0);
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.u.message.len == 0 && m.u.message.flags == 0);

    start(&w, 'C', 0);
    w8(&w, 0), w64(&w, 0x16B374D848ull), w64(&w, 0x16B374D878ull), w64(&w, 700000000000001ull);
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_COMMIT && m.u.commit.commit_lsn == 0x16B374D848ull &&
          m.u.commit.end_lsn == 0x16B374D878ull && m.u.commit.commit_time == 700000000000001);

    /* a negative commit time (before 2000) survives */
    start(&w, 'C', 0);
    w8(&w, 0), w64(&w, 1), w64(&w, 2), w64(&w, (uint64_t)-5);
    CHECK(decw(d, &w, &m) == 0 && m.u.commit.commit_time == -5);

    /* protocol 1 knows no streaming */
    start(&w, 'S', 0);
    w32(&w, 900), w8(&w, 1);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "protocol version 2") && !d->in_stream);
    start(&w, 'E', 0);
    CHECK(decw(d, &w, &m) == -1);
    start(&w, 'c', 0);
    w32(&w, 900), w8(&w, 0), w64(&w, 1), w64(&w, 2), w64(&w, 3);
    CHECK(decw(d, &w, &m) == -1);
    start(&w, 'A', 0);
    w32(&w, 900), w32(&w, 900);
    CHECK(decw(d, &w, &m) == -1);

    pgo_cache_destroy(c);
}

/* Protocol 2: a streamed transaction (xids inside the block), then a
 * normal one. */
static void test_v2(pgo_decoder *d)
{
    pgo_cache *c = pgo_cache_create(0, 0);
    wbuf w;
    pgo_msg m;
    CHECK(pgo_decoder_init(d, 2, c) == 0);

    start(&w, 'E', 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "Stream Stop ('E') at byte 0") &&
          has(d->err, "no stream block"));

    start(&w, 'S', 0);
    w32(&w, 900), w8(&w, 1);
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_STREAM_START && m.u.stream_start.xid == 900 &&
          m.u.stream_start.first_segment == 1 && d->in_stream && d->stream_xid == 900);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "inside the stream block of xid 900"));

    /* an Origin inside a block carries no xid */
    start(&w, 'O', 0);
    w64(&w, 0), wstr(&w, "");
    CHECK(prefixes_fail(d, &w, &m) == 0 && !m.streamed && m.u.origin.name[0] == '\0');

    users_rel(&w, 900, 0);
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.streamed && m.xid == 900 && m.u.relation.relid == 16384 && m.rel &&
          m.rel->ncols == 3);

    start(&w, 'Y', 900);
    w32(&w, 90001), wstr(&w, "public"), wstr(&w, "mood");
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.streamed && m.xid == 900 && m.u.type.oid == 90001);

    /* a subtransaction's change carries the subxid */
    start(&w, 'I', 901);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3), wtext(&w, "7"), w8(&w, 'n'), w8(&w, 'u');
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.streamed && m.xid == 901 && val_is(&m.u.change.new_tuple.vals[0], 't', "7") &&
          val_is(&m.u.change.new_tuple.vals[2], 'u', NULL));

    start(&w, 'U', 900);
    w32(&w, 16384), w8(&w, 'K'), w16(&w, 3), wtext(&w, "7"), w8(&w, 'n'), w8(&w, 'n');
    w8(&w, 'N'), w16(&w, 3), wtext(&w, "8"), wtext(&w, "x"), w8(&w, 'u');
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.xid == 900 && m.u.change.old_kind == 'K');

    start(&w, 'D', 900);
    w32(&w, 16384), w8(&w, 'K'), w16(&w, 3), wtext(&w, "8"), w8(&w, 'n'), w8(&w, 'n');
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.xid == 900 && m.type == PGO_DELETE);

    start(&w, 'T', 900);
    w32(&w, 2), w8(&w, 1), w32(&w, 16384), w32(&w, 16390);
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.xid == 900 && m.u.truncate.nrels == 2 &&
          pgo_truncate_relid(&m, 1) == 16390);

    start(&w, 'M', 900);
    w8(&w, 1), w64(&w, 5), wstr(&w, "p"), w32(&w, 2), wbytes(&w, "hi", 2);
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.xid == 900 && m.u.message.len == 2);

    /* the same change without its xid is misread: the tag lands on the
     * relid's last byte... and fails */
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3), wtext(&w, "7"), w8(&w, 'n'), w8(&w, 'u');
    CHECK(decw(d, &w, &m) == -1);

    /* transaction messages cannot come inside a block */
    start(&w, 'B', 0);
    w64(&w, 1), w64(&w, 2), w32(&w, 3);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "Begin ('B') at byte 0"));
    start(&w, 'C', 0);
    w8(&w, 0), w64(&w, 1), w64(&w, 2), w64(&w, 3);
    CHECK(decw(d, &w, &m) == -1);
    start(&w, 'c', 0);
    w32(&w, 900), w8(&w, 0), w64(&w, 1), w64(&w, 2), w64(&w, 3);
    CHECK(decw(d, &w, &m) == -1 && d->in_stream);
    start(&w, 'A', 0);
    w32(&w, 900), w32(&w, 900);
    CHECK(decw(d, &w, &m) == -1 && d->in_stream);

    start(&w, 'E', 0);
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.type == PGO_STREAM_STOP && !d->in_stream);

    /* a later block, not the first segment; then abort a subtransaction */
    start(&w, 'S', 0);
    w32(&w, 900), w8(&w, 0);
    CHECK(decw(d, &w, &m) == 0 && m.u.stream_start.first_segment == 0);
    start(&w, 'E', 0);
    CHECK(decw(d, &w, &m) == 0);
    start(&w, 'A', 0);
    w32(&w, 900), w32(&w, 901);
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.type == PGO_STREAM_ABORT &&
          m.u.stream_abort.xid == 900 && m.u.stream_abort.subxid == 901);

    start(&w, 'c', 0);
    w32(&w, 900), w8(&w, 0), w64(&w, 0x20), w64(&w, 0x48), w64(&w, 123);
    CHECK(prefixes_fail(d, &w, &m) == 0);
    CHECK(m.type == PGO_STREAM_COMMIT && m.u.stream_commit.xid == 900 &&
          m.u.stream_commit.commit_lsn == 0x20 && m.u.stream_commit.end_lsn == 0x48 &&
          m.u.stream_commit.commit_time == 123);

    /* outside a block, protocol 2 is laid out as protocol 1 */
    start(&w, 'B', 0);
    w64(&w, 0x50), w64(&w, 1), w32(&w, 902);
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.u.begin.xid == 902);
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3), wtext(&w, "9"), w8(&w, 'n'), w8(&w, 'n');
    CHECK(prefixes_fail(d, &w, &m) == 0 && !m.streamed && m.xid == 0);
    start(&w, 'M', 0);
    w8(&w, 0), w64(&w, 5), wstr(&w, "p"), w32(&w, 0);
    CHECK(prefixes_fail(d, &w, &m) == 0 && !m.streamed);
    start(&w, 'C', 0);
    w8(&w, 0), w64(&w, 0x50), w64(&w, 0x78), w64(&w, 2);
    CHECK(prefixes_fail(d, &w, &m) == 0);

    pgo_cache_destroy(c);
}

/* A schema change: a new Relation for the same id replaces the old one. */
static void test_relation_replaced(pgo_decoder *d)
{
    pgo_cache *c = pgo_cache_create(0, 0);
    wbuf w;
    pgo_msg m;
    CHECK(pgo_decoder_init(d, 1, c) == 0);
    CHECK(decw(d, users_rel(&w, 0, 0), &m) == 0);
    size_t before = pgo_cache_bytes(c);

    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 4);
    wtext(&w, "1"), wtext(&w, "a"), wtext(&w, "b"), wtext(&w, "c");
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "Insert ('I') at byte 6") &&
          has(d->err, "4 columns, its relation 3"));

    CHECK(decw(d, users_rel(&w, 0, 1), &m) == 0);
    CHECK(pgo_cache_count(c) == 1 && pgo_cache_bytes(c) > before);
    const pgo_rel *r = pgo_cache_get(c, 16384);
    CHECK(r == m.rel && r->ncols == 4 && strcmp(r->cols[3].name, "extra0") == 0);

    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 4);
    wtext(&w, "1"), wtext(&w, "a"), wtext(&w, "b"), wtext(&w, "c");
    CHECK(decw(d, &w, &m) == 0 && m.u.change.new_tuple.ncols == 4 && m.rel == r);
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3), wtext(&w, "1"), wtext(&w, "a"), wtext(&w, "b");
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "3 columns, its relation 4"));

    /* a replica identity change and a column dropped */
    users_rel(&w, 0, 0);
    w.b[1 + 4 + 7 + 6] = 'f';
    CHECK(decw(d, &w, &m) == 0 && m.rel->replident == 'f' && m.rel->ncols == 3 &&
          pgo_cache_bytes(c) == before);

    /* a second relation, with no columns at all */
    start(&w, 'R', 0);
    w32(&w, 20000), wstr(&w, ""), wstr(&w, "empty"), w8(&w, 'n'), w16(&w, 0);
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.rel->ncols == 0 &&
          strcmp(m.rel->nspname, "pg_catalog") == 0 && pgo_cache_count(c) == 2);
    start(&w, 'I', 0);
    w32(&w, 20000), w8(&w, 'N'), w16(&w, 0);
    CHECK(prefixes_fail(d, &w, &m) == 0 && m.u.change.new_tuple.ncols == 0);

    /* without a cache, tuples are not compared with anything */
    pgo_decoder_init(d, 1, NULL);
    start(&w, 'I', 0);
    w32(&w, 55), w8(&w, 'N'), w16(&w, 2), wtext(&w, "1"), w8(&w, 'n');
    CHECK(decw(d, &w, &m) == 0 && m.rel == NULL && m.u.change.new_tuple.ncols == 2);
    CHECK(decw(d, users_rel(&w, 0, 0), &m) == 0 && m.rel == NULL && m.u.relation.ncols == 3);
    pgo_cache_destroy(c);
}

static void test_cache_limits(pgo_decoder *d)
{
    wbuf w;
    pgo_msg m;
    char err[128];
    pgo_cache *c = pgo_cache_create(2, 0);
    CHECK(pgo_decoder_init(d, 1, c) == 0);
    for (uint32_t id = 1; id <= 2; id++) {
        start(&w, 'R', 0);
        w32(&w, id), wstr(&w, "s"), wstr(&w, "t"), w8(&w, 'd'), w16(&w, 0);
        CHECK(decw(d, &w, &m) == 0);
    }
    start(&w, 'R', 0);
    w32(&w, 3), wstr(&w, "s"), wstr(&w, "t"), w8(&w, 'd'), w16(&w, 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "Relation ('R') at byte 0") &&
          has(d->err, "cache full") && pgo_cache_count(c) == 2 && !pgo_cache_get(c, 3));
    /* replacing one still works when full */
    start(&w, 'R', 0);
    w32(&w, 2), wstr(&w, "s"), wstr(&w, "t2"), w8(&w, 'd'), w16(&w, 0);
    CHECK(decw(d, &w, &m) == 0 && strcmp(pgo_cache_get(c, 2)->relname, "t2") == 0);
    pgo_cache_clear(c);
    CHECK(pgo_cache_count(c) == 0 && pgo_cache_bytes(c) == 0 && !pgo_cache_get(c, 2));
    pgo_cache_destroy(c);
    pgo_cache_destroy(NULL);

    /* a byte budget: room for the small relation, not for a wide one */
    c = pgo_cache_create(0, 600);
    CHECK(pgo_decoder_init(d, 1, c) == 0);
    start(&w, 'R', 0);
    w32(&w, 7), wstr(&w, "s"), wstr(&w, "t"), w8(&w, 'd'), w16(&w, 1);
    w8(&w, 0), wstr(&w, "a"), w32(&w, 23), w32(&w, 0);
    CHECK(decw(d, &w, &m) == 0);
    size_t used = pgo_cache_bytes(c);
    CHECK(decw(d, users_rel(&w, 0, 20), &m) == -1 && has(d->err, "cache full") &&
          pgo_cache_bytes(c) == used && !pgo_cache_get(c, 16384));
    /* replacing relation 7 by a wider one that does not fit keeps the old */
    start(&w, 'R', 0);
    w32(&w, 7), wstr(&w, "s"), wstr(&w, "t"), w8(&w, 'd'), w16(&w, 30);
    for (int i = 0; i < 30; i++)
        w8(&w, 0), wstr(&w, "column"), w32(&w, 23), w32(&w, 0);
    CHECK(decw(d, &w, &m) == -1 && pgo_cache_get(c, 7)->ncols == 1);
    pgo_cache_destroy(c);

    /* pgo_cache_put's own checks */
    c = pgo_cache_create(0, 0);
    pgo_col col = {.name = NULL};
    pgo_rel r = {.relid = 0, .nspname = "s", .relname = "t", .replident = 'd'};
    CHECK(!pgo_cache_put(c, &r, err, sizeof(err)) && has(err, "relation id 0"));
    r.relid = 9;
    r.ncols = 1;
    r.cols = &col;
    CHECK(!pgo_cache_put(c, &r, err, sizeof(err)) && has(err, "column 1"));
    char longname[PGO_MAX_NAME + 2];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    col.name = longname;
    CHECK(!pgo_cache_put(c, &r, NULL, 0));
    longname[PGO_MAX_NAME] = '\0';
    CHECK(pgo_cache_put(c, &r, err, sizeof(err)) != NULL);
    r.relname = NULL;
    CHECK(!pgo_cache_put(c, &r, err, sizeof(err)) && pgo_cache_count(c) == 1);
    /* many relations: the table grows, every one is found again */
    r.relname = "t";
    r.ncols = 0;
    for (uint32_t id = 1; id <= 5000; id++) {
        r.relid = id * 7919u;
        CHECK(pgo_cache_put(c, &r, err, sizeof(err)) != NULL);
    }
    int found = 0;
    for (uint32_t id = 1; id <= 5000; id++)
        found += pgo_cache_get(c, id * 7919u) != NULL;
    CHECK(found == 5000 && pgo_cache_count(c) == 5001 && !pgo_cache_get(c, 1));
    pgo_cache_destroy(c);
}

/* Broken messages: each must fail with the right sentence. */
static void test_corrupt(pgo_decoder *d)
{
    pgo_cache *c = pgo_cache_create(0, 0);
    wbuf w;
    pgo_msg m;
    CHECK(pgo_decoder_init(d, 2, c) == 0);
    CHECK(decw(d, users_rel(&w, 0, 0), &m) == 0);

    CHECK(dec(d, NULL, 0, &m) == -1 && has(d->err, "empty"));
    start(&w, 'Z', 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "unknown type 0x5a ('Z')") &&
          has(d->err, "at byte 0"));
    start(&w, 0, 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "unknown type 0x00"));
    start(&w, 'P', 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "two-phase"));
    start(&w, 'w', 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "unknown type"));

    /* tuples */
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 5000);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "5000 columns, more than a table can have"));
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3), w8(&w, 'n');
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "more than the bytes left"));
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3), w8(&w, 't'), w32(&w, 0x7fffffff), w8(&w, 'n'),
        w8(&w, 'n');
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "at byte 9") &&
          has(d->err, "new tuple column 1 length 2147483647 is beyond the 2 bytes left"));
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3), w8(&w, 'b'), w32(&w, 0xffffffff), w8(&w, 'n'),
        w8(&w, 'n');
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "is negative (-1)"));
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3), w8(&w, 'n'), w8(&w, 'x'), w8(&w, 'n');
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "at byte 9") &&
          has(d->err, "column 2: unknown kind 0x78"));
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 4), w8(&w, 'n'), w8(&w, 'n'), w8(&w, 'n'), w8(&w, 'n');
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "4 columns, its relation 3"));
    start(&w, 'I', 0);
    w32(&w, 16385), w8(&w, 'N'), w16(&w, 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "at byte 1") &&
          has(d->err, "relation 16385 is unknown"));
    start(&w, 'I', 0);
    w32(&w, 16384), w8(&w, 'K'), w16(&w, 3), w8(&w, 'n'), w8(&w, 'n'), w8(&w, 'n');
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "expected 'N'"));
    start(&w, 'D', 0);
    w32(&w, 16384), w8(&w, 'N'), w16(&w, 3), w8(&w, 'n'), w8(&w, 'n'), w8(&w, 'n');
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "expected 'K' (old key) or 'O'"));
    start(&w, 'U', 0);
    w32(&w, 16384), w8(&w, 'K'), w16(&w, 3), w8(&w, 'n'), w8(&w, 'n'), w8(&w, 'n');
    w8(&w, 'O'), w16(&w, 3), w8(&w, 'n'), w8(&w, 'n'), w8(&w, 'n');
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "at byte 11") && has(d->err, "expected 'N'"));
    start(&w, 'D', 0);
    w32(&w, 16384), w8(&w, 'K'), w16(&w, 3), w8(&w, 'n'), w8(&w, 'n'), w8(&w, 'n'),
        w8(&w, 'N');
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "1 bytes left over"));

    /* relations */
    users_rel(&w, 0, 0);
    w.b[18] = 'x'; /* replica identity */
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "at byte 18") && has(d->err, "replica identity"));
    users_rel(&w, 0, 0);
    w.b[21] = 2; /* first column's flags */
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "at byte 21") && has(d->err, "flags 0x02"));
    users_rel(&w, 0, 0);
    w.b[19] = 0xff, w.b[20] = 0xff; /* 65535 columns */
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "65535 columns"));
    users_rel(&w, 0, 0);
    w.b[20] = 4; /* 4 columns, 3 there */
    CHECK(decw(d, &w, &m) == -1);
    users_rel(&w, 0, 0);
    w.b[1] = w.b[2] = w.b[3] = w.b[4] = 0;
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "relation id is 0"));
    start(&w, 'R', 0);
    w32(&w, 1), wstr(&w, "s");
    for (int i = 0; i < 256; i++)
        w8(&w, 'n');
    w8(&w, 0), w8(&w, 'd'), w16(&w, 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "relation name is 256 bytes long, more than 255"));
    start(&w, 'R', 0);
    w32(&w, 1), wstr(&w, "s");
    wbytes(&w, "abc", 3);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "relation name has no terminating NUL"));
    CHECK(pgo_cache_count(c) == 1 && pgo_cache_get(c, 16384)->ncols == 3);

    /* fixed fields */
    start(&w, 'B', 0);
    w64(&w, 0), w64(&w, 1), w32(&w, 1);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "final LSN is 0"));
    start(&w, 'C', 0);
    w8(&w, 1), w64(&w, 1), w64(&w, 2), w64(&w, 3);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "Commit ('C') at byte 1: flags 0x01"));
    start(&w, 'T', 0);
    w32(&w, 0), w8(&w, 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "relation count 0"));
    start(&w, 'T', 0);
    w32(&w, 0xffffffff), w8(&w, 0), w32(&w, 1);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "relation count 4294967295 is beyond"));
    start(&w, 'T', 0);
    w32(&w, 2), w8(&w, 0), w32(&w, 1);
    CHECK(decw(d, &w, &m) == -1);
    start(&w, 'T', 0);
    w32(&w, 1), w8(&w, 4), w32(&w, 1);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "options 0x04"));
    start(&w, 'T', 0);
    w32(&w, 2), w8(&w, 0), w32(&w, 1), w32(&w, 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "relation id 2 of 2 is 0"));
    start(&w, 'M', 0);
    w8(&w, 2), w64(&w, 1), wstr(&w, "p"), w32(&w, 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "flags 0x02"));
    start(&w, 'M', 0);
    w8(&w, 0), w64(&w, 1), wstr(&w, "p"), w32(&w, 3), wbytes(&w, "ab", 2);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "content length 3 is beyond the 2 bytes left"));
    start(&w, 'M', 0);
    w8(&w, 0), w64(&w, 1), wstr(&w, "p"), w32(&w, 0x80000000u);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "negative (-2147483648)"));
    start(&w, 'S', 0);
    w32(&w, 0), w8(&w, 1);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "xid is 0") && !d->in_stream);
    start(&w, 'S', 0);
    w32(&w, 5), w8(&w, 2);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "first segment") && !d->in_stream);
    start(&w, 'c', 0);
    w32(&w, 5), w8(&w, 9), w64(&w, 1), w64(&w, 2), w64(&w, 3);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "Stream Commit ('c') at byte 5"));
    start(&w, 'A', 0);
    w32(&w, 5), w32(&w, 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "subtransaction xid is 0"));

    /* a streamed message whose xid is cut */
    start(&w, 'S', 0);
    w32(&w, 5), w8(&w, 1);
    CHECK(decw(d, &w, &m) == 0 && d->in_stream);
    start(&w, 'I', 0);
    w8(&w, 0), w8(&w, 0);
    CHECK(decw(d, &w, &m) == -1 && has(d->err, "truncated: xid needs 4 bytes, 2 left") &&
          d->in_stream);
    start(&w, 'E', 0);
    CHECK(decw(d, &w, &m) == 0 && !d->in_stream);

    CHECK(pgo_decoder_init(d, 3, c) == -1 && has(d->err, "version 3"));
    CHECK(pgo_decoder_init(d, 0, NULL) == -1);
    pgo_cache_destroy(c);
}

static void test_frames(pgo_decoder *d)
{
    wbuf w;
    pgo_frame f;
    pgo_msg m;
    CHECK(pgo_decoder_init(d, 1, NULL) == 0);

    /* XLogData around a Begin */
    w.n = 0;
    w8(&w, 'w'), w64(&w, 0x16B374D848ull), w64(&w, 0x16B3750000ull), w64(&w, 700000000000000ull);
    w8(&w, 'B'), w64(&w, 0x16B374D900ull), w64(&w, 1), w32(&w, 42);
    CHECK(frame(d, w.b, w.n, &f) == 0 && f.type == PGO_XLOGDATA &&
          f.wal_start == 0x16B374D848ull && f.wal_end == 0x16B3750000ull &&
          f.send_time == 700000000000000 && f.len == 21 && f.data == last_copy + 25);
    CHECK(pgo_decode(d, f.data, f.len, &m) == 0 && m.type == PGO_BEGIN && m.u.begin.xid == 42);
    for (size_t k = 0; k < 25; k++)
        CHECK(frame(d, w.b, k, &f) == -1 && d->err[0]);
    CHECK(frame(d, w.b, 25, &f) == 0 && f.len == 0 && f.data == NULL);
    CHECK(frame(d, w.b, 20, &f) == -1 && has(d->err, "CopyData XLogData ('w') at byte 17") &&
          has(d->err, "send time needs 8 bytes, 3 left"));

    /* keepalive, reply requested */
    w.n = 0;
    w8(&w, 'k'), w64(&w, 0x16B3750000ull), w64(&w, 700000000000001ull), w8(&w, 1);
    CHECK(frame(d, w.b, w.n, &f) == 0 && f.type == PGO_KEEPALIVE &&
          f.wal_end == 0x16B3750000ull && f.send_time == 700000000000001 &&
          f.reply_requested == 1 && f.data == NULL && f.len == 0);
    for (size_t k = 0; k < w.n; k++)
        CHECK(frame(d, w.b, k, &f) == -1 && d->err[0]);
    w.b[17] = 0;
    CHECK(frame(d, w.b, w.n, &f) == 0 && f.reply_requested == 0);
    w.b[17] = 2;
    CHECK(frame(d, w.b, w.n, &f) == -1 && has(d->err, "keepalive ('k') at byte 17"));
    w.b[17] = 1;
    w8(&w, 0);
    CHECK(frame(d, w.b, w.n, &f) == -1 && has(d->err, "1 bytes left over"));

    CHECK(frame(d, "r", 1, &f) == -1 && has(d->err, "unknown type 0x72"));
    CHECK(frame(d, NULL, 0, &f) == -1 && has(d->err, "empty"));
}

static void test_status(void)
{
    uint8_t out[PGO_STATUS_LEN];
    static const uint8_t want[PGO_STATUS_LEN] = {
        'r',
        0x00, 0x00, 0x00, 0x16, 0xB3, 0x74, 0xD8, 0x48,
        0x00, 0x00, 0x00, 0x16, 0xB3, 0x74, 0xD8, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,
        1,
    };
    CHECK(pgo_status_encode(out, 0x16B374D848ull, 0x16B374D800ull, 0, -2, 7) == PGO_STATUS_LEN);
    CHECK(memcmp(out, want, sizeof(want)) == 0);
    pgo_status_encode(out, 1, 2, 3, 4, 0);
    CHECK(out[0] == 'r' && out[8] == 1 && out[16] == 2 && out[24] == 3 && out[32] == 4 &&
          out[33] == 0);
    CHECK(strcmp(pgo_type_name('c'), "Stream Commit") == 0 &&
          strcmp(pgo_type_name('?'), "unknown") == 0);
}

int main(void)
{
    pgo_decoder *d = malloc(sizeof(*d));
    if (!d)
        return 1;
    test_lsn();
    test_time();
    test_v1(d);
    test_v2(d);
    test_relation_replaced(d);
    test_cache_limits(d);
    test_corrupt(d);
    test_frames(d);
    test_status();
    free(last_copy);
    free(d);
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures != 0;
}
