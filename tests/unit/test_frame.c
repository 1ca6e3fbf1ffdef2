/*
 * test_frame.c — unit tests of the frame codec (proto/frame.h), format
 * version 2: round trips of every value type, of the metadata, of the
 * positions ("po") and of the rejects (element 8); encoder EINVAL cases;
 * rejection of malformed and hostile frames (truncation, wrong types, huge
 * claimed counts, garbage, bit flips); decoded data outliving the input
 * buffer; and a rows/s measurement (printed, no threshold).
 * Hostile frames are built by hand with a tiny byte writer, not msgpack.
 */
#include "proto/frame.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msgpack.h>

static int failures, checks;

#define CHECK(c)                                                         \
    do {                                                                 \
        checks++;                                                        \
        if (!(c)) {                                                      \
            failures++;                                                  \
            printf("%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
        }                                                                \
    } while (0)

/* ---------------------------------------------------------------- */
/* helpers                                                           */

static char *S(zx_rowset *rs, const char *s, size_t n)
{
    return zx_rowset_strdup(rs, s, n);
}

static void add(zx_rowset *rs, const char *col, zx_value v)
{
    int64_t c = zx_rowset_column(rs, col, strlen(col), ZX_T_NULL);
    if (c < 0 || zx_rowset_add(rs, (uint32_t)c, &v) < 0) {
        printf("out of memory\n");
        exit(2);
    }
}

static zx_value vint(int64_t i) { zx_value v = {.type = ZX_T_INT}; v.u.i = i; return v; }
static zx_value vreal(double d) { zx_value v = {.type = ZX_T_REAL}; v.u.d = d; return v; }
static zx_value vbool(int b) { zx_value v = {.type = ZX_T_BOOL}; v.u.b = b; return v; }

static zx_value vstr(zx_rowset *rs, int type, const char *s, size_t n)
{
    zx_value v = {.type = (uint8_t)type, .len = (uint32_t)n};
    v.s = S(rs, s, n);
    return v;
}

static zx_value vts(zx_rowset *rs, int64_t us, const char *text)
{
    zx_value v = vstr(rs, ZX_T_TIMESTAMP, text, strlen(text));
    v.u.i = us;
    return v;
}

static int value_eq(const zx_value *a, const zx_value *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case ZX_T_NULL: return 1;
    case ZX_T_INT: return a->u.i == b->u.i;
    case ZX_T_BOOL: return !!a->u.b == !!b->u.b;
    case ZX_T_REAL:
        if (isnan(a->u.d))
            return isnan(b->u.d);
        return a->u.d == b->u.d && signbit(a->u.d) == signbit(b->u.d);
    case ZX_T_TIMESTAMP:
        if (a->u.i != b->u.i)
            return 0;
        /* fall through */
    default:
        return a->len == b->len && b->s && b->s[b->len] == '\0' &&
               (a->len == 0 || memcmp(a->s, b->s, a->len) == 0);
    }
}

/* Same columns (names, types, order) and same dense rows. */
static int rowset_eq(const zx_rowset *a, const zx_rowset *b)
{
    if (a->ncols != b->ncols || a->nrows != b->nrows)
        return 0;
    for (uint32_t c = 0; c < a->ncols; c++)
        if (a->cols[c].type != b->cols[c].type ||
            a->cols[c].name_len != b->cols[c].name_len ||
            strcmp(a->cols[c].name, b->cols[c].name) != 0)
            return 0;
    int ok = 1;
    zx_value *ra = calloc(a->ncols + 1, sizeof(*ra));
    zx_value *rb = calloc(a->ncols + 1, sizeof(*rb));
    for (uint32_t r = 0; ok && r < a->nrows; r++) {
        zx_rowset_row(a, r, ra);
        zx_rowset_row(b, r, rb);
        for (uint32_t c = 0; ok && c < a->ncols; c++)
            if (!value_eq(&ra[c], &rb[c])) {
                printf("  row %u column %s differs\n", r, a->cols[c].name);
                ok = 0;
            }
    }
    free(ra);
    free(rb);
    return ok;
}

static zx_frame_meta basic_meta(void)
{
    zx_frame_meta m = {.kind = ZX_FRAME_ROWS, .pipeline = "web", .table = "events"};
    return m;
}

/* Encode a, decode into b, compare. */
static void roundtrip(const zx_frame_meta *m, const zx_rowset *a, zx_rowset *b,
                      zx_frame_meta *mout)
{
    zx_buf fb;
    char err[256];
    zx_buf_init(&fb);
    CHECK(zx_frame_encode(m, a, &fb) == 0);
    CHECK(fb.len <= zx_frame_estimate(a) + zx_frame_meta_estimate(m));
    int rc = zx_frame_decode(fb.p, fb.len, mout, b, err, sizeof(err));
    if (rc != 0)
        printf("  decode: %s\n", err);
    CHECK(rc == 0);
    CHECK(rowset_eq(a, b));
    zx_buf_free(&fb);
}

/* A tiny msgpack byte writer for hand-made frames. */
typedef struct wb { uint8_t d[4096]; size_t n; } wb;
static void w1(wb *w, uint8_t b) { w->d[w->n++] = b; }
static void wbe(wb *w, uint64_t v, int bytes)
{
    for (int k = bytes - 1; k >= 0; k--)
        w1(w, (uint8_t)(v >> (8 * k)));
}
static void wraw(wb *w, const void *p, size_t n) { memcpy(w->d + w->n, p, n); w->n += n; }
static void warr(wb *w, uint32_t n) { if (n < 16) w1(w, (uint8_t)(0x90 | n)); else { w1(w, 0xdd); wbe(w, n, 4); } }
static void wmap(wb *w, uint32_t n) { if (n < 16) w1(w, (uint8_t)(0x80 | n)); else { w1(w, 0xdf); wbe(w, n, 4); } }
static void wstrn(wb *w, const char *s, size_t n) { w1(w, 0xd9); w1(w, (uint8_t)n); wraw(w, s, n); }
static void wstr(wb *w, const char *s) { wstrn(w, s, strlen(s)); }
static void wuint(wb *w, uint64_t u) { w1(w, 0xcf); wbe(w, u, 8); }
static void wbin(wb *w, const void *p, size_t n)
{
    if (n < 256) { w1(w, 0xc4); w1(w, (uint8_t)n); }
    else { w1(w, 0xc5); wbe(w, n, 2); }
    wraw(w, p, n);
}

/* a v2 frame's elements 0-4: array of 9, magic, version, kind 1, "p", "t";
 * the metadata map comes next */
static void wpre(wb *w, uint64_t version)
{
    warr(w, 9);
    wstr(w, "ZXF");
    wuint(w, version);
    w1(w, 1);
    wstr(w, "p");
    wstr(w, "t");
}

/* header of a frame up to and including the (empty) metadata map */
static void whead(wb *w, const char *magic, uint64_t version, uint64_t kind)
{
    warr(w, 9);
    wstr(w, magic);
    wuint(w, version);
    wuint(w, kind);
    wstr(w, "p");
    wstr(w, "t");
    wmap(w, 0);
}

/* one column "c" of type INT */
static void wcols1(wb *w)
{
    warr(w, 1);
    warr(w, 2);
    wstr(w, "c");
    w1(w, ZX_T_INT);
}

static int decode_rejects(const void *buf, size_t len, const char *expect)
{
    zx_rowset rs;
    zx_frame_meta m;
    char err[256];
    zx_rowset_init(&rs);
    memset(err, 'x', sizeof(err));
    int rc = zx_frame_decode(buf, len, &m, &rs, err, sizeof(err));
    int ok = rc == -1 && err[0] && strlen(err) < sizeof(err) &&
             rs.nrows == 0 && rs.ncols == 0 && m.pipeline == NULL;
    if (ok && expect && !strstr(err, expect)) {
        printf("  message \"%s\" lacks \"%s\"\n", err, expect);
        ok = 0;
    }
    if (!ok)
        printf("  rc=%d err=\"%.200s\"\n", rc, rc ? err : "");
    zx_rowset_free(&rs);
    return ok;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* ---------------------------------------------------------------- */
/* round trips                                                       */

static void test_types(void)
{
    zx_rowset a, b;
    zx_frame_meta m = basic_meta(), mo;
    zx_rowset_init(&a);
    zx_rowset_init(&b);

    static const char nul[] = "a\0b\0";
    const char *uni = "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80";
    char *big = malloc(70000);
    for (int i = 0; i < 70000; i++)
        big[i] = (char)('a' + i % 26);

    int64_t ints[] = {0, 1, -1, 127, 128, 255, 256, -32, -33, -128, -129, 65535,
                      65536, -32768, -32769, INT32_MAX, (int64_t)INT32_MAX + 1,
                      INT32_MIN, (int64_t)INT32_MIN - 1, INT64_MAX, INT64_MIN};
    double reals[] = {0.0, -0.0, 1.5, -1e300, 5e-324, NAN, INFINITY, -INFINITY};
    size_t nrows = sizeof(ints) / sizeof(ints[0]);
    for (size_t r = 0; r < nrows; r++) {
        zx_rowset_begin_row(&a);
        add(&a, "i", vint(ints[r]));
        if (r % 3 != 1)   /* missing cells */
            add(&a, "r", vreal(reals[r % 8]));
        add(&a, "b", vbool((int)(r & 1)));
        switch (r % 6) {
        case 0: add(&a, "t", vstr(&a, ZX_T_TEXT, "", 0)); break;
        case 1: add(&a, "t", vstr(&a, ZX_T_TEXT, nul, 4)); break;
        case 2: add(&a, "t", vstr(&a, ZX_T_TEXT, uni, strlen(uni))); break;
        case 3: add(&a, "t", vstr(&a, ZX_T_TEXT, big, 300)); break;
        case 4: add(&a, "t", vstr(&a, ZX_T_TEXT, big, 70000)); break;
        default: break;
        }
        switch (r % 4) {
        case 0: add(&a, "ts", vts(&a, 1700000000123456, "2023-11-14T22:13:20.123456Z")); break;
        case 1: add(&a, "ts", vts(&a, -1, "")); break;                /* fixext 8 */
        case 2: add(&a, "ts", vts(&a, INT64_MIN, "12345678")); break; /* fixext 16 */
        default: break;
        }
        switch (r % 5) {
        case 0: add(&a, "j", vstr(&a, ZX_T_JSON, "{\"a\":[1,2]}", 11)); break;
        case 1: add(&a, "j", vstr(&a, ZX_T_JSON, "1", 1)); break;      /* fixext 1 */
        case 2: add(&a, "j", vstr(&a, ZX_T_JSON, "[]", 2)); break;     /* fixext 2 */
        case 3: add(&a, "j", vstr(&a, ZX_T_JSON, big, 256)); break;    /* ext 16 */
        default: break;
        }
        if (r == 5) {   /* explicit NULL cell: encoded as nil, decoded absent */
            zx_value nv = {.type = ZX_T_NULL};
            add(&a, "n", nv);
        }
        zx_rowset_end_row(&a);
    }
    /* a misfit: TEXT in the INT column keeps the column INT */
    zx_rowset_begin_row(&a);
    add(&a, "i", vstr(&a, ZX_T_TEXT, "oops", 4));
    zx_rowset_end_row(&a);
    /* an INT in the REAL column */
    zx_rowset_begin_row(&a);
    add(&a, "r", vint(7));
    zx_rowset_end_row(&a);
    /* a column added but never given a value: exists with its type */
    zx_rowset_column(&a, "never", 5, ZX_T_TEXT);
    CHECK(a.cols[0].type == ZX_T_INT);

    /* row 5 has an explicit NULL cell; b will have none: compare dense rows */
    roundtrip(&m, &a, &b, &mo);
    CHECK(b.ncols == 8);
    CHECK(strcmp(b.cols[7].name, "never") == 0 && b.cols[7].type == ZX_T_TEXT);
    CHECK(strcmp(b.cols[6].name, "n") == 0 && b.cols[6].type == ZX_T_NULL);
    CHECK(b.cols[0].type == ZX_T_INT && b.cols[1].type == ZX_T_REAL);
    CHECK(mo.version == ZX_FRAME_VERSION && mo.kind == ZX_FRAME_ROWS);
    CHECK(strcmp(mo.pipeline, "web") == 0 && strcmp(mo.table, "events") == 0);
    CHECK(mo.batch_id == NULL && mo.dedup_key == NULL && mo.positions == NULL &&
          mo.npositions == 0 && mo.rejects == NULL && mo.nrejects == 0 &&
          mo.ingested_at_us == 0 && mo.dedup_hash == 0 && mo.accepted == 0 &&
          mo.metadata == 0);
    /* cells: explicit checks of a few */
    zx_value row[8];
    zx_rowset_row(&b, 1, row);
    CHECK(row[3].type == ZX_T_TEXT && row[3].len == 4 && memcmp(row[3].s, nul, 4) == 0);
    CHECK(row[1].type == ZX_T_NULL);
    zx_rowset_row(&b, 20, row);
    CHECK(row[0].type == ZX_T_INT && row[0].u.i == INT64_MIN);
    zx_rowset_row(&b, 19, row);
    CHECK(row[0].type == ZX_T_INT && row[0].u.i == INT64_MAX);
    zx_rowset_row(&b, 5, row);
    CHECK(row[1].type == ZX_T_REAL && isnan(row[1].u.d));
    CHECK(row[6].type == ZX_T_NULL);

    /* decode into a used rowset: it is reset first */
    roundtrip(&m, &a, &b, &mo);
    free(big);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

static void test_shapes(void)
{
    zx_rowset a, b;
    zx_frame_meta m = basic_meta(), mo;
    zx_rowset_init(&a);
    zx_rowset_init(&b);

    /* 0 rows, 0 columns */
    roundtrip(&m, &a, &b, &mo);
    CHECK(b.ncols == 0 && b.nrows == 0);

    /* columns, 0 rows */
    zx_rowset_column(&a, "x", 1, ZX_T_REAL);
    zx_rowset_column(&a, "y", 1, ZX_T_NULL);
    roundtrip(&m, &a, &b, &mo);
    CHECK(b.ncols == 2 && b.nrows == 0 && b.cols[0].type == ZX_T_REAL);

    /* rows of 0 columns */
    zx_rowset_reset(&a);
    for (int i = 0; i < 3; i++) {
        zx_rowset_begin_row(&a);
        zx_rowset_end_row(&a);
    }
    roundtrip(&m, &a, &b, &mo);
    CHECK(b.nrows == 3 && b.ncols == 0);

    /* many columns, sparse rows (array16/array32 headers) */
    zx_rowset_reset(&a);
    char name[32];
    for (int r = 0; r < 50; r++) {
        zx_rowset_begin_row(&a);
        for (int c = r; c < 3000; c += 37) {
            snprintf(name, sizeof(name), "col_%d", c);
            add(&a, name, vint(r * 10000 + c));
        }
        zx_rowset_end_row(&a);
    }
    /* an open row is not encoded */
    zx_rowset_begin_row(&a);
    add(&a, "col_0", vint(1));
    zx_rowset_end_row(&a);
    zx_rowset_begin_row(&a);
    add(&a, "open", vint(1));
    roundtrip(&m, &a, &b, &mo);
    CHECK(b.nrows == 51 && b.ncols == a.ncols);

    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

static void test_meta(void)
{
    zx_rowset a, b;
    zx_frame_meta mo;
    zx_buf fb;
    char err[256];
    zx_rowset_init(&a);
    zx_rowset_init(&b);
    zx_buf_init(&fb);
    zx_rowset_begin_row(&a);
    add(&a, "v", vint(1));
    zx_rowset_end_row(&a);

    const unsigned char pos[] = {0, 1, 2, 0xff, 0};
    zx_frame_pos po = {.part = "clicks:3", .value = pos, .value_len = sizeof(pos)};
    zx_frame_meta m = {.kind = ZX_FRAME_ROWS, .pipeline = "p\xc3\xa9", .table = "",
                       .ingested_at_us = -5, .batch_id = "req-1",
                       .dedup_key = "", .dedup_hash = UINT64_MAX, .metadata = 3,
                       .accepted = 12345678901ull, .positions = &po, .npositions = 1};
    roundtrip(&m, &a, &b, &mo);
    CHECK(strcmp(mo.pipeline, "p\xc3\xa9") == 0 && strcmp(mo.table, "") == 0);
    CHECK(mo.ingested_at_us == -5);
    CHECK(mo.batch_id && strcmp(mo.batch_id, "req-1") == 0);
    CHECK(mo.dedup_key && strcmp(mo.dedup_key, "") == 0);
    CHECK(mo.dedup_hash == UINT64_MAX && mo.accepted == 12345678901ull);
    CHECK(mo.metadata == 3);
    CHECK(mo.npositions == 1 && mo.positions && strcmp(mo.positions[0].part, "clicks:3") == 0 &&
          mo.positions[0].value_len == sizeof(pos) &&
          memcmp(mo.positions[0].value, pos, sizeof(pos)) == 0);
    CHECK(mo.nrejects == 0 && mo.rejects == NULL);

    /* NULL pipeline/table encode as ""; no positions: NULL, 0 */
    zx_frame_meta m2 = {.kind = ZX_FRAME_ROWS};
    roundtrip(&m2, &a, &b, &mo);
    CHECK(mo.positions == NULL && mo.npositions == 0);
    CHECK(mo.pipeline && mo.pipeline[0] == 0 && mo.table && mo.table[0] == 0);

    /* strings survive releasing the buffer: encode two frames back to back */
    zx_frame_meta m3 = basic_meta();
    m3.batch_id = "second";
    CHECK(zx_frame_encode(&m, &a, &fb) == 0);
    size_t first = fb.len;
    CHECK(zx_frame_encode(&m3, &a, &fb) == 0);
    char *copy = malloc(fb.len - first);
    memcpy(copy, fb.p + first, fb.len - first);
    CHECK(zx_frame_decode(copy, fb.len - first, &mo, &b, err, sizeof(err)) == 0);
    memset(copy, 0, fb.len - first);
    free(copy);
    CHECK(strcmp(mo.batch_id, "second") == 0 && strcmp(mo.table, "events") == 0);
    CHECK(rowset_eq(&a, &b));
    /* the whole buffer (two frames) is rejected: trailing bytes */
    CHECK(decode_rejects(fb.p, fb.len, "trailing"));

    /* encode EINVAL on a bad column type leaves the buffer as it was */
    size_t before = fb.len;
    a.cols[0].type = 99;
    errno = 0;
    CHECK(zx_frame_encode(&m, &a, &fb) == -1 && errno == EINVAL && fb.len == before);
    a.cols[0].type = ZX_T_INT;
    zx_frame_meta bad = basic_meta();
    bad.kind = 9;
    errno = 0;
    CHECK(zx_frame_encode(&bad, &a, &fb) == -1 && errno == EINVAL && fb.len == before);
    bad.kind = 0;   /* 0 = ROWS */
    CHECK(zx_frame_encode(&bad, &a, &fb) == 0 && fb.len > before);
    fb.len = before;
    char nulname[] = "a\0b";
    a.cols[0].name = nulname;
    a.cols[0].name_len = 3;
    errno = 0;
    CHECK(zx_frame_encode(&m, &a, &fb) == -1 && errno == EINVAL && fb.len == before);
    a.cols[0].name = "v";
    a.cols[0].name_len = 1;

    /* unknown metadata keys (with nested values) are skipped, v1 keys among
     * them; nil = absent; a key given twice: the last one wins */
    wb w = {.n = 0};
    wpre(&w, 2);
    wmap(&w, 11);
    wstr(&w, "zz");
    warr(&w, 2); wmap(&w, 1); wstr(&w, "k"); warr(&w, 0); w1(&w, 0xc0);
    wstr(&w, "rq"); wstr(&w, "v1-request");
    wstr(&w, "ik"); wstr(&w, "v1-key");
    wstr(&w, "po"); w1(&w, 0xc0);
    wstr(&w, "bi"); wstr(&w, "first");
    wstr(&w, "bi"); wstr(&w, "second");
    wstr(&w, "dk"); w1(&w, 0xc0);
    wstr(&w, "dh"); w1(&w, 7);
    wstr(&w, "dh"); w1(&w, 9);
    wstr(&w, "ia"); w1(&w, 0xd3); wbe(&w, (uint64_t)INT64_MIN, 8);
    wstr(&w, "longer-key"); w1(&w, 0xcb); wbe(&w, 0, 8);
    wcols1(&w);
    warr(&w, 1); warr(&w, 1); w1(&w, 0xd0); w1(&w, 0x05);  /* int8 5 */
    warr(&w, 0);
    CHECK(zx_frame_decode(w.d, w.n, &mo, &b, err, sizeof(err)) == 0);
    CHECK(mo.batch_id && strcmp(mo.batch_id, "second") == 0);
    CHECK(mo.dedup_key == NULL && mo.dedup_hash == 9 && mo.ingested_at_us == INT64_MIN);
    CHECK(mo.positions == NULL && mo.npositions == 0);
    CHECK(b.nrows == 1 && b.ncells == 1 && b.cells[0].v.u.i == 5);

    /* "po" given twice: the last array wins; an empty array = no positions */
    w.n = 0;
    wpre(&w, 2);
    wmap(&w, 2);
    wstr(&w, "po"); warr(&w, 1); warr(&w, 2); wstr(&w, "a"); wbin(&w, "1", 1);
    wstr(&w, "po"); warr(&w, 2);
    warr(&w, 2); wstr(&w, "b"); wbin(&w, "2", 1);
    warr(&w, 2); wstr(&w, "c"); wbin(&w, "", 0);
    warr(&w, 0); warr(&w, 0); warr(&w, 0);
    CHECK(zx_frame_decode(w.d, w.n, &mo, &b, err, sizeof(err)) == 0);
    CHECK(mo.npositions == 2 && strcmp(mo.positions[0].part, "b") == 0 &&
          mo.positions[0].value_len == 1 && memcmp(mo.positions[0].value, "2", 1) == 0 &&
          strcmp(mo.positions[1].part, "c") == 0 && mo.positions[1].value_len == 0);
    w.n = 0;
    wpre(&w, 2);
    wmap(&w, 1);
    wstr(&w, "po"); warr(&w, 0);
    warr(&w, 0); warr(&w, 0); warr(&w, 0);
    CHECK(zx_frame_decode(w.d, w.n, &mo, &b, err, sizeof(err)) == 0);
    CHECK(mo.positions == NULL && mo.npositions == 0);

    zx_buf_free(&fb);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

/* ---------------------------------------------------------------- */
/* positions and rejects                                             */

static int pos_eq(const zx_frame_pos *x, const zx_frame_pos *y)
{
    return x->part && y->part && strcmp(x->part, y->part) == 0 &&
           x->value_len == y->value_len && !x->fenced == !y->fenced &&
           (!x->fenced || (x->from == y->from && x->first == y->first)) &&
           (x->value_len == 0 || (y->value && memcmp(x->value, y->value, x->value_len) == 0));
}

/* y decoded from x: the same, with NULL position read back as "", NULL key
 * as NULL (key_len 0) and an empty key as a non-NULL empty key */
static int reject_eq(const zx_frame_reject *x, const zx_frame_reject *y)
{
    const char *xr = x->reason ? x->reason : "", *xp = x->position ? x->position : "";
    if (!y->reason || strcmp(xr, y->reason) != 0 || !y->position ||
        strcmp(xp, y->position) != 0 || x->raw_len != y->raw_len ||
        (x->raw_len && (!y->raw || memcmp(x->raw, y->raw, x->raw_len) != 0)))
        return 0;
    if (!x->key)
        return y->key == NULL && y->key_len == 0;
    return y->key != NULL && y->key_len == x->key_len &&
           (x->key_len == 0 || memcmp(x->key, y->key, x->key_len) == 0);
}

/* A changes frame: kind 2, key columns, source types, history, and the
 * reserved columns travel as they are. */
static void test_changes(void)
{
    zx_rowset a, b;
    zx_frame_meta mo;
    zx_rowset_init(&a);
    zx_rowset_init(&b);
    zx_rowset_begin_row(&a);
    add(&a, ZX_CH_OP, vstr(&a, ZX_T_TEXT, "update", 6));
    add(&a, ZX_CH_LSN, vstr(&a, ZX_T_TEXT, "16/B374D848", 11));
    add(&a, ZX_CH_XID, vint(733));
    add(&a, "id", vint(7));
    add(&a, ZX_CH_OLD_PREFIX "id", vint(6));
    add(&a, ZX_CH_UNCHANGED, vstr(&a, ZX_T_JSON, "[\"body\"]", 8));
    zx_rowset_end_row(&a);
    zx_rowset_begin_row(&a);
    add(&a, ZX_CH_OP, vstr(&a, ZX_T_TEXT, "truncate", 8));
    zx_rowset_end_row(&a);
    const char *kc[] = { "id", "region" };
    const zx_frame_coltype ct[] = { { "id", "bigint" }, { "price", "numeric(10,2)" },
                                    { "at", "timestamp with time zone" } };
    zx_frame_meta m = basic_meta();
    m.kind = ZX_FRAME_CHANGES;
    m.key_cols = kc;
    m.nkey_cols = 2;
    m.col_types = ct;
    m.ncol_types = 3;
    m.history = 1;
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.kind == ZX_FRAME_CHANGES && mo.history == 1 && mo.copy == 0);
    /* a copy's start and end marks */
    m.copy = ZX_FRAME_COPY_START;
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.copy == ZX_FRAME_COPY_START);
    m.copy = ZX_FRAME_COPY_END;
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.copy == ZX_FRAME_COPY_END);
    CHECK(mo.nkey_cols == 2 && strcmp(mo.key_cols[0], "id") == 0 &&
          strcmp(mo.key_cols[1], "region") == 0);
    CHECK(mo.ncol_types == 3 && strcmp(mo.col_types[1].column, "price") == 0 &&
          strcmp(mo.col_types[1].type, "numeric(10,2)") == 0 &&
          strcmp(mo.col_types[2].type, "timestamp with time zone") == 0);
    CHECK(b.nrows == 2 && b.ncols == 6);
    /* a rows frame carries the key columns (a mirror's copy), not the rest */
    m.kind = ZX_FRAME_ROWS;
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.kind == ZX_FRAME_ROWS && mo.ncol_types == 0 && !mo.history && !mo.copy);
    CHECK(mo.nkey_cols == 2 && strcmp(mo.key_cols[1], "region") == 0);
    m.nkey_cols = 0;
    m.copy = 0;
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.kind == ZX_FRAME_ROWS && mo.nkey_cols == 0);
    m.nkey_cols = 2;
    /* the encoder refuses a NULL key column name or too many */
    zx_buf out;
    zx_buf_init(&out);
    const char *bad[] = { "id", NULL };
    m.kind = ZX_FRAME_CHANGES;
    m.key_cols = bad;
    CHECK(zx_frame_encode(&m, &a, &out) == -1 && errno == EINVAL);
    m.key_cols = kc;
    m.nkey_cols = ZX_FRAME_MAX_KEY_COLUMNS + 1;
    CHECK(zx_frame_encode(&m, &a, &out) == -1 && errno == EINVAL);
    zx_buf_free(&out);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

/* A row-hashes frame's "hp" and "hc" (unconfirmed hashes of a run, and
 * the run confirmed) round-trip; other kinds neither write nor read them. */
static void test_hashes_marks(void)
{
    zx_rowset a, b;
    zx_frame_meta mo;
    zx_rowset_init(&a);
    zx_rowset_init(&b);
    zx_rowset_begin_row(&a);
    add(&a, ZX_HASH_KH, vstr(&a, ZX_T_TEXT, "0123456789abcdef", 16));
    add(&a, ZX_HASH_RH, vint(-5));
    add(&a, ZX_HASH_KV, vstr(&a, ZX_T_TEXT, "[1]", 3));
    zx_rowset_end_row(&a);
    const char *kc[] = { "id" };
    zx_frame_meta m = basic_meta();
    m.kind = ZX_FRAME_HASHES;
    m.key_cols = kc;
    m.nkey_cols = 1;
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.hashes_pending == 0 && mo.hashes_confirm == 0);
    m.hashes_pending = UINT64_MAX;
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.kind == ZX_FRAME_HASHES && mo.hashes_pending == UINT64_MAX &&
          mo.hashes_confirm == 0 && b.nrows == 1);
    m.hashes_pending = 0;
    m.hashes_confirm = 42;
    zx_rowset_reset(&a);
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.hashes_pending == 0 && mo.hashes_confirm == 42 && b.nrows == 0);
    /* a rows frame carries neither */
    m.kind = ZX_FRAME_ROWS;
    m.hashes_pending = 7;
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.hashes_pending == 0 && mo.hashes_confirm == 0);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

static void test_positions(void)
{
    zx_rowset a, b;
    zx_frame_meta mo;
    zx_rowset_init(&a);
    zx_rowset_init(&b);
    zx_rowset_begin_row(&a);
    add(&a, "v", vint(1));
    zx_rowset_end_row(&a);

    static const unsigned char off[8] = {0, 0, 0, 0, 0, 0, 0x01, 0x2c};
    static const unsigned char zeros[] = {0, 'a', 0, 0, 0xff, 0};
    unsigned char *big = malloc(70000);
    for (int i = 0; i < 70000; i++)
        big[i] = (unsigned char)(i % 7 ? i : 0);
    char longpart[300];
    memset(longpart, 'p', sizeof(longpart) - 1);
    longpart[sizeof(longpart) - 1] = '\0';
    const zx_frame_pos ps[] = {
        {"clicks:0", off, sizeof(off), 0, -1, -1},
        {"clicks:1", NULL, 0, 0, -1, -1},                           /* empty value, NULL */
        {"clicks:2", "", 0, 0, -1, -1},                             /* empty value */
        {"bin", zeros, sizeof(zeros), 0, -1, -1},                   /* 0 bytes inside */
        {"r\xc3\xa9gion:\xe2\x9c\x93:\xf0\x9f\x98\x80", "x", 1, 0, -1, -1},   /* UTF-8 part */
        {longpart, big, 300, 0, -1, -1},                            /* str16, bin16 */
        {"big", big, 70000, 0, -1, -1},                             /* bin32 */
        {"z", off, 1, 0, -1, -1},                                   /* fixstr of 1 */
    };
    const size_t n = sizeof(ps) / sizeof(ps[0]);
    zx_frame_meta m = basic_meta();
    m.positions = ps;
    m.npositions = n;
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.npositions == n && mo.positions != NULL);
    int same = mo.npositions == n;
    for (size_t i = 0; same && i < n; i++)
        if (!pos_eq(&ps[i], &mo.positions[i])) {
            printf("  position %zu differs\n", i);
            same = 0;
        }
    CHECK(same);
    CHECK(mo.nrejects == 0 && mo.rejects == NULL);

    /* positions alone, no columns and no rows */
    zx_rowset e;
    zx_rowset_init(&e);
    roundtrip(&m, &e, &b, &mo);
    CHECK(mo.npositions == n && b.ncols == 0 && b.nrows == 0);

    /* many positions (array16 header) up to the limit; one more: EINVAL */
    size_t many = ZX_FRAME_MAX_POSITIONS + 1;
    zx_frame_pos *mp = calloc(many, sizeof(*mp));
    char *parts = malloc(many * 16);
    uint32_t *vals = malloc(many * sizeof(uint32_t));
    for (size_t i = 0; i < many; i++) {
        snprintf(parts + i * 16, 16, "p:%zu", i);
        vals[i] = (uint32_t)i * 2654435761u;
        mp[i].part = parts + i * 16;
        mp[i].value = &vals[i];
        mp[i].value_len = i % 5;
    }
    size_t counts[] = {300, ZX_FRAME_MAX_POSITIONS};
    for (int k = 0; k < 2; k++) {
        zx_frame_meta mm = basic_meta();
        mm.positions = mp;
        mm.npositions = counts[k];
        roundtrip(&mm, &a, &b, &mo);
        same = mo.npositions == counts[k];
        for (size_t i = 0; same && i < counts[k]; i++)
            same = pos_eq(&mp[i], &mo.positions[i]);
        CHECK(same);
    }
    zx_buf fb;
    zx_buf_init(&fb);
    zx_frame_meta mm = basic_meta();
    mm.positions = mp;
    mm.npositions = many;
    errno = 0;
    CHECK(zx_frame_encode(&mm, &a, &fb) == -1 && errno == EINVAL && fb.len == 0);
    zx_buf_free(&fb);
    free(vals);
    free(parts);
    free(mp);
    free(big);
    zx_rowset_free(&e);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

/* Fenced positions ([part, value, from, first]) beside plain ones; a
 * plain one decodes with from and first -1; from or first below -1 is
 * EINVAL; a 3-element entry is refused by the decoder. */
static void test_fenced_positions(void)
{
    zx_rowset a, b;
    zx_frame_meta mo;
    zx_rowset_init(&a);
    zx_rowset_init(&b);
    zx_rowset_begin_row(&a);
    add(&a, "v", vint(1));
    zx_rowset_end_row(&a);
    static const unsigned char v8[8] = {0x2c, 0x01, 0, 0, 0, 0, 0, 0};
    const zx_frame_pos ps[] = {
        {"t:0", v8, 8, 1, 200, 200},
        {"t:1", v8, 8, 1, -1, -1},                        /* knew none, no message */
        {"t:2", v8, 8, 0, 0, 0},                          /* plain */
        {"t:3", v8, 8, 1, INT64_MAX, 4294967296LL},       /* int64 widths */
    };
    zx_frame_meta m = basic_meta();
    m.positions = ps;
    m.npositions = 4;
    roundtrip(&m, &a, &b, &mo);
    int same = mo.npositions == 4;
    for (size_t i = 0; same && i < 4; i++)
        same = pos_eq(&ps[i], &mo.positions[i]);
    CHECK(same);
    CHECK(mo.npositions == 4 && !mo.positions[2].fenced && mo.positions[2].from == -1 &&
          mo.positions[2].first == -1);

    zx_buf fb;
    zx_buf_init(&fb);
    zx_frame_pos bad = {"t:0", v8, 8, 1, -2, 0};
    m.positions = &bad;
    m.npositions = 1;
    errno = 0;
    CHECK(zx_frame_encode(&m, &a, &fb) == -1 && errno == EINVAL && fb.len == 0);
    bad.from = 0;
    bad.first = -5;
    errno = 0;
    CHECK(zx_frame_encode(&m, &a, &fb) == -1 && errno == EINVAL && fb.len == 0);

    /* a 3-element entry: [part, value, from] */
    zx_frame_pos three = {"t:0", v8, 8, 1, 7, 7};
    m.positions = &three;
    CHECK(zx_frame_encode(&m, &a, &fb) == 0);
    /* the entry's array header (fixarray 4: 0x94) just before "t:0" */
    unsigned char *d = (unsigned char *)fb.p;
    size_t at = 0;
    for (size_t i = 0; i + 4 < fb.len; i++)
        if (d[i] == 0x94 && d[i + 1] == 0xa3 && memcmp(d + i + 2, "t:0", 3) == 0)
            at = i;
    CHECK(at != 0);
    d[at] = 0x93;
    /* drop the last element (first = 7: one byte) */
    size_t tail = at + 1 + 4 + 2 + 8 + 1;   /* header, "t:0", bin 8, from */
    memmove(d + tail, d + tail + 1, fb.len - tail - 1);
    fb.len--;
    char err[256] = "";
    CHECK(zx_frame_decode(fb.p, fb.len, &mo, &b, err, sizeof(err)) == -1 &&
          strstr(err, "elements") != NULL);
    zx_buf_free(&fb);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

static void test_reject_entries(void)
{
    zx_rowset a, b;
    zx_frame_meta mo;
    zx_rowset_init(&a);
    zx_rowset_init(&b);
    zx_rowset_begin_row(&a);
    add(&a, "v", vint(1));
    add(&a, "t", vstr(&a, ZX_T_TEXT, "ok", 2));
    zx_rowset_end_row(&a);

    unsigned char *big = malloc(70000);
    for (int i = 0; i < 70000; i++)
        big[i] = (unsigned char)(i * 31);
    char longpos[400];
    memset(longpos, ' ', sizeof(longpos) - 1);
    longpos[0] = '{';
    longpos[sizeof(longpos) - 2] = '}';
    longpos[sizeof(longpos) - 1] = '\0';
    static const char raw0[] = "{\"a\":\0\xff";     /* 7 bytes, a NUL inside */
    const zx_frame_reject js[] = {
        {"not JSON", raw0, 7, NULL, 0, "{\"topic\":\"t\",\"partition\":3,\"offset\":42}"},
        {"not an object", "[1]", 3, "k\0y", 3, "{\"offset\":43}"},       /* key with a NUL */
        {"", NULL, 0, "", 0, NULL},                    /* empty everything, empty key */
        {"r\xc3\xa9sum\xc3\xa9 \xe2\x9c\x93", big, 70000, big + 1, 300, longpos},
        {"no key", "x", 1, NULL, 5, "{}"},             /* NULL key: key_len ignored */
        {NULL, "\0", 1, "\0\0", 2, "{\"offset\":0}"},  /* NULL reason = "" */
    };
    const size_t n = sizeof(js) / sizeof(js[0]);
    zx_frame_pos po = {.part = "t:0", .value = "\x2b", .value_len = 1};
    zx_frame_meta m = basic_meta();
    m.rejects = js;
    m.nrejects = n;
    m.positions = &po;
    m.npositions = 1;
    m.accepted = 1;
    roundtrip(&m, &a, &b, &mo);
    CHECK(mo.nrejects == n && mo.rejects != NULL);
    int same = mo.nrejects == n;
    for (size_t i = 0; same && i < n; i++)
        if (!reject_eq(&js[i], &mo.rejects[i])) {
            printf("  reject %zu differs\n", i);
            same = 0;
        }
    CHECK(same);
    if (same) {   /* the three key cases, spelled out */
        CHECK(mo.rejects[0].key == NULL && mo.rejects[0].key_len == 0);
        CHECK(mo.rejects[1].key != NULL && mo.rejects[1].key_len == 3 &&
              memcmp(mo.rejects[1].key, "k\0y", 3) == 0);
        CHECK(mo.rejects[2].key != NULL && mo.rejects[2].key_len == 0);
        CHECK(mo.rejects[4].key == NULL && mo.rejects[4].key_len == 0);
        CHECK(strcmp(mo.rejects[2].position, "") == 0 && strcmp(mo.rejects[5].reason, "") == 0);
        CHECK(mo.rejects[0].raw_len == 7 && memcmp(mo.rejects[0].raw, raw0, 7) == 0);
    }
    CHECK(mo.npositions == 1 && pos_eq(&po, &mo.positions[0]) && mo.accepted == 1);

    /* a batch of nothing but rejects: no columns, no rows */
    zx_rowset e;
    zx_rowset_init(&e);
    m.accepted = 0;
    roundtrip(&m, &e, &b, &mo);
    CHECK(mo.nrejects == n && b.ncols == 0 && b.nrows == 0);

    /* many rejects (array16 header) */
    enum { MANY = 20000 };
    zx_frame_reject *many = calloc(MANY, sizeof(*many));
    for (size_t i = 0; i < MANY; i++) {
        many[i].reason = i % 2 ? "not JSON" : "too deep";
        many[i].raw = big + i;
        many[i].raw_len = i % 17;
        many[i].key = i % 3 ? big + 2 * i : NULL;
        many[i].key_len = i % 3 ? i % 4 : 0;
        many[i].position = i % 5 ? "{\"offset\":1}" : NULL;
    }
    m.rejects = many;
    m.nrejects = MANY;
    roundtrip(&m, &a, &b, &mo);
    same = mo.nrejects == MANY;
    for (size_t i = 0; same && i < MANY; i++)
        same = reject_eq(&many[i], &mo.rejects[i]);
    CHECK(same);
    free(many);
    free(big);
    zx_rowset_free(&e);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

/* The encoder refuses metadata that a caller got wrong: EINVAL, and the
 * output buffer keeps what it had. */
static void test_encode_einval(void)
{
    zx_rowset a;
    zx_buf fb;
    zx_rowset_init(&a);
    zx_buf_init(&fb);
    zx_rowset_begin_row(&a);
    add(&a, "v", vint(1));
    zx_rowset_end_row(&a);
    CHECK(zx_frame_encode(&(zx_frame_meta){.kind = 0}, &a, &fb) == 0);
    size_t before = fb.len;
    CHECK(before > 0);

    const zx_frame_pos good = {"ok:1", "v", 1, 0, -1, -1};
    const zx_frame_pos bads[][2] = {
        {good, {NULL, "v", 1, 0, -1, -1}},          /* NULL part */
        {good, {"", "v", 1, 0, -1, -1}},            /* empty part */
        {{NULL, NULL, 0, 0, -1, -1}, good},         /* NULL part, empty value */
        {good, {"ok:2", NULL, 4, 0, -1, -1}},       /* value_len > 0, value NULL */
    };
    for (size_t k = 0; k < sizeof(bads) / sizeof(bads[0]); k++) {
        zx_frame_meta m = basic_meta();
        m.positions = bads[k];
        m.npositions = 2;
        errno = 0;
        int rc = zx_frame_encode(&m, &a, &fb);
        if (!(rc == -1 && errno == EINVAL && fb.len == before))
            printf("  bad position case %zu: rc=%d errno=%d\n", k, rc, errno);
        CHECK(rc == -1 && errno == EINVAL && fb.len == before);
    }
    zx_frame_meta m = basic_meta();
    m.positions = NULL;           /* npositions > 0 with positions NULL */
    m.npositions = 1;
    errno = 0;
    CHECK(zx_frame_encode(&m, &a, &fb) == -1 && errno == EINVAL && fb.len == before);
    m.npositions = 0;             /* positions NULL and 0: fine */
    CHECK(zx_frame_encode(&m, &a, &fb) == 0 && fb.len > before);
    fb.len = before;

    m.rejects = NULL;             /* nrejects > 0 with rejects NULL */
    m.nrejects = 3;
    errno = 0;
    CHECK(zx_frame_encode(&m, &a, &fb) == -1 && errno == EINVAL && fb.len == before);
    /* more rejects than a decoder takes */
    size_t over = (size_t)ZX_FRAME_MAX_REJECTS + 1;
    zx_frame_reject *js = calloc(over, sizeof(*js));   /* all valid: "", no bytes */
    m.rejects = js;
    m.nrejects = over;
    errno = 0;
    CHECK(zx_frame_encode(&m, &a, &fb) == -1 && errno == EINVAL && fb.len == before);
    free(js);

    zx_buf_free(&fb);
    zx_rowset_free(&a);
}

/* Everything decode returns is a copy in the rowset's arena: the input
 * buffer may be overwritten and freed right after (under ASan any pointer
 * left into it is a use after free). */
static void test_decoded_copies(void)
{
    zx_rowset a, b;
    zx_frame_meta mo;
    zx_buf fb;
    char err[256];
    zx_rowset_init(&a);
    zx_rowset_init(&b);
    zx_buf_init(&fb);
    for (int r = 0; r < 3; r++) {
        zx_rowset_begin_row(&a);
        add(&a, "text", vstr(&a, ZX_T_TEXT, "some text\0!", 11));
        add(&a, "json", vstr(&a, ZX_T_JSON, "{\"k\":[1]}", 9));
        add(&a, "ts", vts(&a, 1700000000000000, "2023-11-14T22:13:20Z"));
        add(&a, "n", vint(r));
        zx_rowset_end_row(&a);
    }
    const zx_frame_pos ps[] = {{"clicks:0", "\0\0\0\x2a", 4, 0, -1, -1}, {"clicks:1", "", 0, 0, -1, -1}};
    const zx_frame_reject js[] = {
        {"not JSON", "{\0x", 3, "key\0", 4, "{\"offset\":42}"},
        {"not an object", "7", 1, NULL, 0, "{\"offset\":43}"},
        {"empty key", "[]", 2, "", 0, ""},
    };
    zx_frame_meta m = {.kind = ZX_FRAME_ROWS, .pipeline = "pipe", .table = "tab",
                       .ingested_at_us = 17, .batch_id = "batch-1", .dedup_key = "dk-1",
                       .dedup_hash = 99, .metadata = 1, .accepted = 3,
                       .positions = ps, .npositions = 2, .rejects = js, .nrejects = 3};
    CHECK(zx_frame_encode(&m, &a, &fb) == 0);
    size_t len = fb.len;
    unsigned char *copy = malloc(len);
    memcpy(copy, fb.p, len);
    CHECK(zx_frame_decode(copy, len, &mo, &b, err, sizeof(err)) == 0);

    /* no pointer of the result points into the input */
    uintptr_t lo = (uintptr_t)copy, hi = lo + len;
#define OUTSIDE(p) ((uintptr_t)(const void *)(p) < lo || (uintptr_t)(const void *)(p) >= hi)
    int outside = OUTSIDE(mo.pipeline) && OUTSIDE(mo.table) && OUTSIDE(mo.batch_id) &&
                  OUTSIDE(mo.dedup_key) && OUTSIDE(mo.positions) && OUTSIDE(mo.rejects);
    for (size_t i = 0; outside && i < mo.npositions; i++)
        outside = OUTSIDE(mo.positions[i].part) && OUTSIDE(mo.positions[i].value);
    for (size_t i = 0; outside && i < mo.nrejects; i++)
        outside = OUTSIDE(mo.rejects[i].reason) && OUTSIDE(mo.rejects[i].raw) &&
                  (!mo.rejects[i].key || OUTSIDE(mo.rejects[i].key)) &&
                  OUTSIDE(mo.rejects[i].position);
    for (uint32_t c = 0; outside && c < b.ncols; c++)
        outside = OUTSIDE(b.cols[c].name);
    for (uint64_t i = 0; outside && i < b.ncells; i++)
        outside = !b.cells[i].v.s || OUTSIDE(b.cells[i].v.s);
#undef OUTSIDE
    CHECK(outside);

    memset(copy, 0x5a, len);
    free(copy);
    zx_buf_free(&fb);

    CHECK(strcmp(mo.pipeline, "pipe") == 0 && strcmp(mo.table, "tab") == 0);
    CHECK(strcmp(mo.batch_id, "batch-1") == 0 && strcmp(mo.dedup_key, "dk-1") == 0);
    CHECK(mo.ingested_at_us == 17 && mo.dedup_hash == 99 && mo.metadata == 1 &&
          mo.accepted == 3);
    CHECK(mo.npositions == 2 && pos_eq(&ps[0], &mo.positions[0]) &&
          pos_eq(&ps[1], &mo.positions[1]));
    CHECK(mo.nrejects == 3 && reject_eq(&js[0], &mo.rejects[0]) &&
          reject_eq(&js[1], &mo.rejects[1]) && reject_eq(&js[2], &mo.rejects[2]));
    CHECK(rowset_eq(&a, &b));

    /* and they are still valid after a re-encode from them alone */
    zx_buf fb2;
    zx_buf_init(&fb2);
    CHECK(zx_frame_encode(&mo, &b, &fb2) == 0);
    zx_frame_meta m2;
    zx_rowset c;
    zx_rowset_init(&c);
    CHECK(zx_frame_decode(fb2.p, fb2.len, &m2, &c, err, sizeof(err)) == 0);
    CHECK(m2.nrejects == 3 && m2.npositions == 2 && rowset_eq(&a, &c));
    zx_buf_free(&fb2);
    zx_rowset_free(&c);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

/* ---------------------------------------------------------------- */
/* rejection                                                         */

static void small_frame(zx_buf *fb)
{
    zx_rowset a;
    zx_rowset_init(&a);
    zx_frame_meta m = basic_meta();
    const zx_frame_pos ps[] = {{"c:0", "\x01\x02", 2, 0, -1, -1}, {"c:1", "", 0, 0, -1, -1}};
    const zx_frame_reject js[] = {{"bad", "{\0", 2, "k", 1, "{\"o\":1}"},
                                  {"worse", "", 0, NULL, 0, ""}};
    m.batch_id = "r";
    m.dedup_key = "k";
    m.positions = ps;
    m.npositions = 2;
    m.rejects = js;
    m.nrejects = 2;
    for (int r = 0; r < 3; r++) {
        zx_rowset_begin_row(&a);
        add(&a, "i", vint(r * 1000));
        add(&a, "t", vstr(&a, ZX_T_TEXT, "txt", 3));
        add(&a, "ts", vts(&a, 42, "x"));
        if (r)
            add(&a, "r", vreal(0.25));
        add(&a, "j", vstr(&a, ZX_T_JSON, "{}", 2));
        zx_rowset_end_row(&a);
    }
    zx_buf_init(fb);
    if (zx_frame_encode(&m, &a, fb) != 0)
        exit(2);
    zx_rowset_free(&a);
}

static void test_truncation_and_mutation(void)
{
    zx_buf fb;
    small_frame(&fb);
    int bad = 0;
    for (size_t n = 0; n < fb.len; n++) {
        /* an exact-size heap copy so that ASan catches any over-read */
        char *c = malloc(n ? n : 1);
        memcpy(c, fb.p, n);
        if (!decode_rejects(c, n, NULL))
            bad++;
        free(c);
    }
    CHECK(bad == 0);
    CHECK(decode_rejects(NULL, 0, NULL));

    /* every single bit flip: no crash; a failure always has a message */
    zx_rowset rs;
    zx_frame_meta m;
    char err[256];
    zx_rowset_init(&rs);
    char *c = malloc(fb.len);
    int accepted = 0, nomsg = 0;
    for (size_t bit = 0; bit < fb.len * 8; bit++) {
        memcpy(c, fb.p, fb.len);
        c[bit / 8] ^= (char)(1 << (bit % 8));
        err[0] = 0;
        int rc = zx_frame_decode(c, fb.len, &m, &rs, err, sizeof(err));
        if (rc == 0)
            accepted++;
        else if (!err[0])
            nomsg++;
    }
    CHECK(nomsg == 0);
    /* random multi-byte mutations and random truncations */
    for (int k = 0; k < 20000; k++) {
        memcpy(c, fb.p, fb.len);
        int nm = 1 + (int)(rnd() % 4);
        for (int j = 0; j < nm; j++)
            c[rnd() % fb.len] = (char)rnd();
        size_t n = fb.len - rnd() % 4;
        err[0] = 0;
        if (zx_frame_decode(c, n, &m, &rs, err, sizeof(err)) != 0 && !err[0])
            nomsg++;
    }
    CHECK(nomsg == 0);
    printf("bit flips: %zu tried, %d still decode (e.g. a changed value)\n",
           fb.len * 8, accepted);
    free(c);
    zx_rowset_free(&rs);
    zx_buf_free(&fb);
}

static void test_garbage(void)
{
    zx_rowset rs;
    zx_frame_meta m;
    char err[128];
    zx_rowset_init(&rs);
    int ok = 0, nomsg = 0;
    for (int k = 0; k < 5000; k++) {
        size_t n = rnd() % 256;
        uint8_t *g = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++)
            g[i] = (uint8_t)rnd();
        if (k % 2 && n > 5) {   /* half of them start like a frame */
            g[0] = 0x99;
            g[1] = 0xa3; g[2] = 'Z'; g[3] = 'X'; g[4] = 'F';
            g[5] = ZX_FRAME_VERSION;
        }
        err[0] = 0;
        if (zx_frame_decode(g, n, &m, &rs, err, sizeof(err)) == 0)
            ok++;
        else if (!err[0])
            nomsg++;
        free(g);
    }
    CHECK(ok == 0);
    CHECK(nomsg == 0);
    /* a tiny error buffer is filled, truncated, NUL-terminated */
    char tiny[8];
    memset(tiny, 'x', sizeof(tiny));
    CHECK(zx_frame_decode("\xc1", 1, &m, &rs, tiny, sizeof(tiny)) == -1);
    CHECK(tiny[7] == 0 && strlen(tiny) == 7);
    CHECK(zx_frame_decode("\xc1", 1, &m, &rs, NULL, 0) == -1);
    zx_rowset_free(&rs);
}

#define FRAME(...) do { w.n = 0; __VA_ARGS__; } while (0)

static void test_malformed(void)
{
    wb w;

    /* the valid reference, built the same way */
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 3);
          warr(&w, 0));
    {
        zx_rowset rs;
        zx_frame_meta m;
        char err[256];
        zx_rowset_init(&rs);
        int rc = zx_frame_decode(w.d, w.n, &m, &rs, err, sizeof(err));
        CHECK(rc == 0 && rs.nrows == 1 && rs.ncells == 1 && m.version == 2);
        zx_rowset_free(&rs);
    }
    FRAME(whead(&w, "ZXG", 2, 1); wcols1(&w); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "magic"));
    FRAME(whead(&w, "ZX", 2, 1); wcols1(&w); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "magic"));
    /* versions: 1 (the previous format) and every other one are refused,
     * with a message that names the version */
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "version 1 not supported"));
    FRAME(whead(&w, "ZXF", 0, 1); wcols1(&w); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "version 0"));
    FRAME(whead(&w, "ZXF", 3, 1); wcols1(&w); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "version 3"));
    FRAME(whead(&w, "ZXF", UINT64_MAX, 1); wcols1(&w); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "version 18446744073709551615"));
    /* a whole version 1 frame (8 elements, "rq" and a bin "po"): refused
     * (today on its element count, before the version is read) */
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 1); w1(&w, 1); wstr(&w, "p"); wstr(&w, "t");
          wmap(&w, 2); wstr(&w, "rq"); wstr(&w, "r"); wstr(&w, "po"); wbin(&w, "\1", 1);
          wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 3));
    CHECK(decode_rejects(w.d, w.n, NULL));
    FRAME(whead(&w, "ZXF", 2, 7); wcols1(&w); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "kind 7"));
    /* wrong element types */
    FRAME(warr(&w, 9); for (int i = 0; i < 9; i++) w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "magic: expected string"));
    FRAME(warr(&w, 9); wstr(&w, "ZXF"); wstr(&w, "2"); for (int i = 0; i < 7; i++) w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "version: expected integer"));
    FRAME(warr(&w, 9); wstr(&w, "ZXF"); w1(&w, 2); w1(&w, 1); w1(&w, 0xc0);
          for (int i = 0; i < 5; i++) w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "pipeline: expected string"));
    FRAME(wpre(&w, 2); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata: expected map"));
    /* element counts: 9 and nothing else */
    FRAME(warr(&w, 7); wstr(&w, "ZXF"); for (int i = 0; i < 6; i++) w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "9 elements, got 7"));
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 2); w1(&w, 1); wstr(&w, "p"); wstr(&w, "t");
          wmap(&w, 0); wcols1(&w); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "9 elements, got 8"));
    FRAME(warr(&w, 10); wstr(&w, "ZXF"); w1(&w, 2); w1(&w, 1); wstr(&w, "p"); wstr(&w, "t");
          wmap(&w, 0); wcols1(&w); warr(&w, 0); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "9 elements, got 10"));
    /* 9 announced, the rejects array missing */
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "truncated"));
    FRAME(wmap(&w, 1); w1(&w, 1); w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "frame: expected array"));
    FRAME(whead(&w, "ZXF", 2, 1); wmap(&w, 0); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "columns: expected array"));
    FRAME(whead(&w, "ZXF", 2, 1); warr(&w, 1); warr(&w, 3); wstr(&w, "c"); w1(&w, 1);
          w1(&w, 1); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "[name, type]"));
    FRAME(whead(&w, "ZXF", 2, 1); warr(&w, 1); warr(&w, 2); w1(&w, 1); w1(&w, 1);
          warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "column name"));
    FRAME(whead(&w, "ZXF", 2, 1); warr(&w, 1); warr(&w, 2); wstr(&w, "c"); w1(&w, 7);
          warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "unknown type 7"));
    FRAME(whead(&w, "ZXF", 2, 1); warr(&w, 1); warr(&w, 2); wstr(&w, "c"); w1(&w, 0xff);
          warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "negative"));
    FRAME(whead(&w, "ZXF", 2, 1); warr(&w, 2); warr(&w, 2); wstr(&w, "c"); w1(&w, 1);
          warr(&w, 2); wstr(&w, "c"); w1(&w, 2); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "duplicate"));
    FRAME(whead(&w, "ZXF", 2, 1); warr(&w, 1); warr(&w, 2); wstrn(&w, "a\0b", 3);
          w1(&w, 1); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "NUL"));
    FRAME(warr(&w, 9); wstr(&w, "ZXF"); w1(&w, 2); w1(&w, 1); wstrn(&w, "p\0", 2));
    CHECK(decode_rejects(w.d, w.n, "NUL"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); wmap(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "rows: expected array"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); w1(&w, 1); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "row: expected array"));
    /* row width mismatch (column index out of range / missing) */
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); warr(&w, 2); w1(&w, 1);
          w1(&w, 2); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "row 0 has 2 values, expected 1"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 2); warr(&w, 1); w1(&w, 1);
          warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "row 1 has 0 values"));
    /* rows claimed but not there */
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 3); warr(&w, 1); w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, NULL));
    /* value types */
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 0xc4);
          w1(&w, 1); w1(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "binary is not a value type"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); warr(&w, 0);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "array is not a value type"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); wmap(&w, 0);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "map is not a value type"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 0xd4);
          w1(&w, 3); w1(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "unknown extension type 3"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 0xd6);
          w1(&w, 1); wbe(&w, 0, 4); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "fewer than 8"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); warr(&w, 1);
          wuint(&w, UINT64_MAX); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "int64 range"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 0xc1);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "0xc1"));
    /* metadata of the wrong type */
    FRAME(wpre(&w, 2); wmap(&w, 1); wstr(&w, "ac"); w1(&w, 0xff); wcols1(&w); warr(&w, 0);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata ac: negative"));
    FRAME(wpre(&w, 2); wmap(&w, 1); w1(&w, 1); w1(&w, 1); wcols1(&w); warr(&w, 0);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata key"));
    FRAME(wpre(&w, 2); wmap(&w, 1); wstr(&w, "bi"); w1(&w, 1); wcols1(&w); warr(&w, 0);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata bi: expected string"));
    FRAME(wpre(&w, 2); wmap(&w, 1); wstr(&w, "bi"); wstrn(&w, "r\0", 2); wcols1(&w);
          warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata bi contains a NUL byte"));
    FRAME(wpre(&w, 2); wmap(&w, 1); wstr(&w, "dk"); wbin(&w, "k", 1); wcols1(&w);
          warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata dk: expected string"));
    FRAME(wpre(&w, 2); wmap(&w, 1); wstr(&w, "dk"); wstrn(&w, "\0", 1); wcols1(&w);
          warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata dk contains a NUL byte"));
    FRAME(wpre(&w, 2); wmap(&w, 1); wstr(&w, "dh"); w1(&w, 0xff); wcols1(&w); warr(&w, 0);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata dh: negative"));
}

static void test_malformed_positions(void)
{
    wb w;

#define PO(...) FRAME(wpre(&w, 2); wmap(&w, 1); wstr(&w, "po"); __VA_ARGS__; wcols1(&w); \
                      warr(&w, 0); warr(&w, 0))
    PO(wbin(&w, "\1\2", 2));                 /* the version 1 encoding: one bin */
    CHECK(decode_rejects(w.d, w.n, "metadata po: expected array, got binary"));
    PO(wstr(&w, "x"));
    CHECK(decode_rejects(w.d, w.n, "metadata po: expected array, got string"));
    PO(wmap(&w, 1); wstr(&w, "a"); wbin(&w, "1", 1));
    CHECK(decode_rejects(w.d, w.n, "metadata po: expected array, got map"));
    PO(warr(&w, 1); wstr(&w, "a"));
    CHECK(decode_rejects(w.d, w.n, "position: expected array, got string"));
    PO(warr(&w, 1); warr(&w, 3); wstr(&w, "a"); wbin(&w, "1", 1); wbin(&w, "2", 1));
    CHECK(decode_rejects(w.d, w.n, "position 0: expected [part, value] or [part, value, from, first], got 3 elements"));
    PO(warr(&w, 2); warr(&w, 2); wstr(&w, "a"); wbin(&w, "1", 1); warr(&w, 1);
       wstr(&w, "b"));
    CHECK(decode_rejects(w.d, w.n, "position 1: expected [part, value] or [part, value, from, first], got 1 elements"));
    PO(warr(&w, 1); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "got 0 elements"));
    PO(warr(&w, 1); warr(&w, 2); wstr(&w, ""); wbin(&w, "1", 1));
    CHECK(decode_rejects(w.d, w.n, "position 0: empty part"));
    PO(warr(&w, 1); warr(&w, 2); wstrn(&w, "a\0b", 3); wbin(&w, "1", 1));
    CHECK(decode_rejects(w.d, w.n, "position part contains a NUL byte"));
    PO(warr(&w, 1); warr(&w, 2); wstrn(&w, "\0", 1); wbin(&w, "1", 1));
    CHECK(decode_rejects(w.d, w.n, "NUL byte"));
    PO(warr(&w, 1); warr(&w, 2); wbin(&w, "a", 1); wbin(&w, "1", 1));
    CHECK(decode_rejects(w.d, w.n, "position part: expected string, got binary"));
    PO(warr(&w, 1); warr(&w, 2); w1(&w, 3); wbin(&w, "1", 1));
    CHECK(decode_rejects(w.d, w.n, "position part: expected string, got integer"));
    PO(warr(&w, 1); warr(&w, 2); wstr(&w, "a"); wstr(&w, "1"));
    CHECK(decode_rejects(w.d, w.n, "position value: expected binary, got string"));
    PO(warr(&w, 1); warr(&w, 2); wstr(&w, "a"); w1(&w, 0xc0));
    CHECK(decode_rejects(w.d, w.n, "position value: expected binary, got nil"));
    PO(warr(&w, 1); warr(&w, 2); wstr(&w, "a"); w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "position value: expected binary, got integer"));
    /* counts beyond the buffer: refused at the header, before any allocation */
    PO(w1(&w, 0xdd); wbe(&w, 0xffffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, "array of 4294967295 elements does not fit"));
    PO(w1(&w, 0xdd); wbe(&w, ZX_FRAME_MAX_POSITIONS, 4); warr(&w, 2); wstr(&w, "a");
       wbin(&w, "1", 1));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    PO(w1(&w, 0xdc); wbe(&w, 40, 2); warr(&w, 2); wstr(&w, "a"); wbin(&w, "1", 1));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    /* a count that fits the buffer, with fewer pairs than claimed: the
     * columns are read as position 1 */
    FRAME(wpre(&w, 2); wmap(&w, 1); wstr(&w, "po"); warr(&w, 3); warr(&w, 2); wstr(&w, "a");
          wbin(&w, "1", 1); wcols1(&w); warr(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "position 1: expected [part, value] or [part, value, from, first], got 1 elements"));
    /* a bin value claiming more bytes than there are */
    FRAME(wpre(&w, 2); wmap(&w, 1); wstr(&w, "po"); warr(&w, 1); warr(&w, 2); wstr(&w, "a");
          w1(&w, 0xc6); wbe(&w, 0xfffffff0u, 4); w1(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "truncated"));
#undef PO
}

static void test_malformed_rejects(void)
{
    wb w;

#define RJ(...) FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 0); __VA_ARGS__)
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 0xc0);
       wstr(&w, "{}"));
    {   /* the valid reference */
        zx_rowset rs;
        zx_frame_meta m;
        char err[256];
        zx_rowset_init(&rs);
        CHECK(zx_frame_decode(w.d, w.n, &m, &rs, err, sizeof(err)) == 0 && m.nrejects == 1 &&
              m.rejects[0].key == NULL && strcmp(m.rejects[0].position, "{}") == 0);
        zx_rowset_free(&rs);
    }
    RJ(wmap(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "rejects: expected array, got map"));
    RJ(w1(&w, 0xc0));
    CHECK(decode_rejects(w.d, w.n, "rejects: expected array, got nil"));
    RJ(warr(&w, 1); wstr(&w, "r"));
    CHECK(decode_rejects(w.d, w.n, "reject: expected array, got string"));
    RJ(warr(&w, 1); warr(&w, 3); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 0xc0));
    CHECK(decode_rejects(w.d, w.n, "reject 0: expected [reason, raw, key, position], got 3"));
    RJ(warr(&w, 2); warr(&w, 4); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 0xc0);
       wstr(&w, ""); warr(&w, 5); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 0xc0);
       wstr(&w, ""); wstr(&w, ""));
    CHECK(decode_rejects(w.d, w.n, "reject 1: expected [reason, raw, key, position], got 5"));
    RJ(warr(&w, 1); warr(&w, 4); wstrn(&w, "bad\0reason", 10); wbin(&w, "x", 1);
       w1(&w, 0xc0); wstr(&w, ""));
    CHECK(decode_rejects(w.d, w.n, "reject reason contains a NUL byte"));
    RJ(warr(&w, 1); warr(&w, 4); wbin(&w, "r", 1); wbin(&w, "x", 1); w1(&w, 0xc0);
       wstr(&w, ""));
    CHECK(decode_rejects(w.d, w.n, "reject reason: expected string, got binary"));
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); wstr(&w, "x"); w1(&w, 0xc0); wstr(&w, ""));
    CHECK(decode_rejects(w.d, w.n, "reject raw: expected binary, got string"));
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); w1(&w, 0xc0); w1(&w, 0xc0); wstr(&w, ""));
    CHECK(decode_rejects(w.d, w.n, "reject raw: expected binary, got nil"));
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); wbin(&w, "x", 1); wstr(&w, "key");
       wstr(&w, ""));
    CHECK(decode_rejects(w.d, w.n, "reject key: expected binary, got string"));
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 7); wstr(&w, ""));
    CHECK(decode_rejects(w.d, w.n, "reject key: expected binary, got integer"));
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 0xc2);
       wstr(&w, ""));
    CHECK(decode_rejects(w.d, w.n, "reject key: expected binary, got boolean"));
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 0xc0);
       wbin(&w, "{}", 2));
    CHECK(decode_rejects(w.d, w.n, "reject position: expected string, got binary"));
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 0xc0);
       w1(&w, 0xc0));
    CHECK(decode_rejects(w.d, w.n, "reject position: expected string, got nil"));
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 0xc0);
       wstrn(&w, "{}\0", 3));
    CHECK(decode_rejects(w.d, w.n, "reject position contains a NUL byte"));
    /* key nil as the very last byte of a truncated frame */
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 0xc0));
    CHECK(decode_rejects(w.d, w.n, "truncated"));
    /* a reject, then trailing bytes */
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); wbin(&w, "x", 1); w1(&w, 0xc0);
       wstr(&w, ""); w1(&w, 0xc0));
    CHECK(decode_rejects(w.d, w.n, "1 trailing bytes"));
    /* counts beyond the buffer */
    RJ(w1(&w, 0xdd); wbe(&w, 0xffffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, "array of 4294967295 elements does not fit"));
    RJ(w1(&w, 0xdd); wbe(&w, ZX_FRAME_MAX_REJECTS, 4); warr(&w, 4); wstr(&w, "r");
       wbin(&w, "x", 1); w1(&w, 0xc0); wstr(&w, ""));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    RJ(warr(&w, 1); warr(&w, 4); wstr(&w, "r"); w1(&w, 0xc6); wbe(&w, 0xffffff00u, 4));
    CHECK(decode_rejects(w.d, w.n, "truncated"));
#undef RJ
}

static void test_huge_counts(void)
{
    wb w;

    /* huge claimed counts in tiny buffers: rejected, nothing allocated */
    FRAME(w1(&w, 0xdd); wbe(&w, 0xffffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, "4294967295 elements"));
    FRAME(w1(&w, 0xdd); wbe(&w, 0xffffffffu, 4); w1(&w, 0); w1(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    FRAME(whead(&w, "ZXF", 2, 1); w1(&w, 0xdd); wbe(&w, 0xffffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); w1(&w, 0xdd); wbe(&w, 0xffffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); w1(&w, 0xdd);
          wbe(&w, 0xffffffffu, 4); w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    FRAME(wpre(&w, 2); w1(&w, 0xdf); wbe(&w, 0xffffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    FRAME(warr(&w, 9); wstr(&w, "ZXF"); w1(&w, 2); w1(&w, 1); w1(&w, 0xdb);
          wbe(&w, 0xffffffffu, 4); w1(&w, 'p'));
    CHECK(decode_rejects(w.d, w.n, "truncated"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 0xc9);
          wbe(&w, 0xfffffff0u, 4); w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "truncated"));
    /* nested unknown metadata value claiming a huge map */
    FRAME(wpre(&w, 2); wmap(&w, 1); wstr(&w, "zz"); warr(&w, 15); warr(&w, 15); w1(&w, 0xdf);
          wbe(&w, 0x7fffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, NULL));
    /* deep nesting in an unknown metadata value: iterative skip, no stack */
    {
        static uint8_t deep[200000];
        size_t n = 0;
        wb h = {.n = 0};
        wpre(&h, 2);
        wmap(&h, 1); wstr(&h, "zz");
        memcpy(deep, h.d, h.n);
        n = h.n;
        while (n < sizeof(deep))
            deep[n++] = 0x91;
        CHECK(decode_rejects(deep, n, "truncated"));
    }
    /* counts over the limits, in a buffer big enough to hold them: columns,
     * positions, rejects */
    {
        size_t big = (size_t)ZX_FRAME_MAX_REJECTS * 2 + 64;
        uint8_t *p = calloc(1, big);   /* zeros: fixint 0 */
        wb h = {.n = 0};
        whead(&h, "ZXF", 2, 1);
        h.d[h.n++] = 0xdd;
        wbe(&h, (uint64_t)ZX_FRAME_MAX_COLUMNS + 1, 4);
        memcpy(p, h.d, h.n);
        CHECK(decode_rejects(p, big, "1048577 columns, more than the limit"));

        memset(p, 0, big);
        h.n = 0;
        wpre(&h, 2);
        wmap(&h, 1);
        wstr(&h, "po");
        h.d[h.n++] = 0xdd;
        wbe(&h, (uint64_t)ZX_FRAME_MAX_POSITIONS + 1, 4);
        memcpy(p, h.d, h.n);
        CHECK(decode_rejects(p, big, "65537 positions, more than the limit 65536"));

        memset(p, 0, big);
        h.n = 0;
        whead(&h, "ZXF", 2, 1);
        wcols1(&h);
        warr(&h, 0);
        h.d[h.n++] = 0xdd;
        wbe(&h, (uint64_t)ZX_FRAME_MAX_REJECTS + 1, 4);
        memcpy(p, h.d, h.n);
        CHECK(decode_rejects(p, big, "1048577 rejects, more than the limit 1048576"));
        free(p);
    }
}
#undef FRAME

/* ---------------------------------------------------------------- */
/* speed                                                             */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_speed(void)
{
    enum { ROWS = 100000 };
    zx_rowset a, b;
    zx_buf fb;
    zx_frame_meta m = basic_meta(), mo;
    char err[256];
    zx_rowset_init(&a);
    zx_rowset_init(&b);
    zx_buf_init(&fb);
    static const char *names[10] = {"id", "user", "path", "status", "ms", "ok",
                                    "at", "agent", "bytes", "extra"};
    int64_t ci[10];
    for (int c = 0; c < 10; c++)
        ci[c] = zx_rowset_column(&a, names[c], strlen(names[c]), ZX_T_NULL);
    char txt[64];
    for (int r = 0; r < ROWS; r++) {
        zx_rowset_begin_row(&a);
        zx_value v;
        v = vint(r); zx_rowset_add(&a, (uint32_t)ci[0], &v);
        int n = snprintf(txt, sizeof(txt), "user-%d", r % 1000);
        v = vstr(&a, ZX_T_TEXT, txt, (size_t)n); zx_rowset_add(&a, (uint32_t)ci[1], &v);
        n = snprintf(txt, sizeof(txt), "/api/items/%d/view", r);
        v = vstr(&a, ZX_T_TEXT, txt, (size_t)n); zx_rowset_add(&a, (uint32_t)ci[2], &v);
        v = vint(200 + r % 5); zx_rowset_add(&a, (uint32_t)ci[3], &v);
        v = vreal(r * 0.37); zx_rowset_add(&a, (uint32_t)ci[4], &v);
        v = vbool(r & 1); zx_rowset_add(&a, (uint32_t)ci[5], &v);
        v = vts(&a, 1700000000000000 + r, "2023-11-14T22:13:20.000000Z");
        zx_rowset_add(&a, (uint32_t)ci[6], &v);
        v = vstr(&a, ZX_T_TEXT, "Mozilla/5.0 (X11; Linux x86_64)", 31);
        zx_rowset_add(&a, (uint32_t)ci[7], &v);
        v = vint((int64_t)r * 1234567); zx_rowset_add(&a, (uint32_t)ci[8], &v);
        if (r % 2 == 0) {
            v = vstr(&a, ZX_T_JSON, "{\"k\":1}", 7);
            zx_rowset_add(&a, (uint32_t)ci[9], &v);
        }
        zx_rowset_end_row(&a);
    }
    const int reps = 3;
    double t0 = now();
    for (int k = 0; k < reps; k++) {
        zx_buf_reset(&fb);
        CHECK(zx_frame_encode(&m, &a, &fb) == 0);
    }
    double t1 = now();
    for (int k = 0; k < reps; k++)
        CHECK(zx_frame_decode(fb.p, fb.len, &mo, &b, err, sizeof(err)) == 0);
    double t2 = now();
    CHECK(rowset_eq(&a, &b));
    CHECK(fb.len <= zx_frame_estimate(&a) + zx_frame_meta_estimate(&m));
    printf("speed: %d rows x 10 fields, frame %zu bytes (estimate %zu): "
           "encode %.0f rows/s, decode %.0f rows/s\n",
           ROWS, fb.len, zx_frame_estimate(&a), reps * ROWS / (t1 - t0),
           reps * ROWS / (t2 - t1));
    zx_buf_free(&fb);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

/* The reference: each cell as msgpack-c packs it (what frame.c did before
 * it wrote the cells itself). */
static void ref_pack_value(msgpack_packer *pk, const zx_value *v)
{
    switch ((zx_type)v->type) {
    case ZX_T_INT: msgpack_pack_int64(pk, v->u.i); break;
    case ZX_T_REAL: msgpack_pack_double(pk, v->u.d); break;
    case ZX_T_BOOL:
        if (v->u.b)
            msgpack_pack_true(pk);
        else
            msgpack_pack_false(pk);
        break;
    case ZX_T_TEXT: msgpack_pack_str_with_body(pk, v->s, v->len); break;
    case ZX_T_TIMESTAMP: {
        unsigned char be[8];
        uint64_t u = (uint64_t)v->u.i;
        for (int k = 7; k >= 0; k--, u >>= 8)
            be[k] = (unsigned char)u;
        msgpack_pack_ext(pk, 8 + (size_t)v->len, 1);
        msgpack_pack_ext_body(pk, be, 8);
        msgpack_pack_ext_body(pk, v->s, v->len);
        break;
    }
    case ZX_T_JSON: msgpack_pack_ext_with_body(pk, v->s, v->len, 2); break;
    default: msgpack_pack_nil(pk); break;
    }
}

/* The rows of a frame are the bytes msgpack-c makes of them: every
 * length class of every type (ints at each boundary, strings, ext). */
static void test_cells_as_msgpack(void)
{
    zx_rowset a;
    zx_rowset_init(&a);
    char *big = malloc(70000);
    for (int i = 0; i < 70000; i++)
        big[i] = (char)('a' + i % 26);
    int64_t ints[] = {0, 1, -1, 31, 32, 127, 128, 255, 256, -32, -33, -127, -128, -129, 65535,
                      65536, -32767, -32768, -32769, INT32_MAX, (int64_t)INT32_MAX + 1,
                      (int64_t)UINT32_MAX, (int64_t)UINT32_MAX + 1, INT32_MIN,
                      (int64_t)INT32_MIN - 1, INT64_MAX, INT64_MIN};
    double reals[] = {0.0, -0.0, 1.5, -1e300, 5e-324, NAN, INFINITY, -INFINITY};
    size_t lens[] = {0, 1, 2, 3, 4, 8, 15, 16, 31, 32, 255, 256, 300, 65535, 65536, 70000};
    size_t nrows = sizeof(ints) / sizeof(ints[0]), nl = sizeof(lens) / sizeof(lens[0]);
    for (size_t r = 0; r < nrows; r++) {
        zx_rowset_begin_row(&a);
        add(&a, "i", vint(ints[r]));
        if (r % 3 != 1)
            add(&a, "r", vreal(reals[r % 8]));
        add(&a, "b", vbool((int)(r & 1)));
        if (r % 5 != 4)
            add(&a, "t", vstr(&a, ZX_T_TEXT, big, lens[r % nl]));
        zx_value ts = vstr(&a, ZX_T_TIMESTAMP, big, lens[(r + 3) % nl]);
        ts.u.i = ints[nrows - 1 - r];
        add(&a, "ts", ts);
        add(&a, "j", vstr(&a, ZX_T_JSON, big, lens[(r + 7) % nl]));
        zx_rowset_end_row(&a);
    }
    zx_frame_meta m = basic_meta();
    zx_buf fb;
    zx_buf_init(&fb);
    CHECK(zx_frame_encode(&m, &a, &fb) == 0);

    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, a.nrows);
    zx_value row[8];
    for (uint32_t r = 0; r < a.nrows; r++) {
        zx_rowset_row(&a, r, row);
        msgpack_pack_array(&pk, a.ncols);
        for (uint32_t c = 0; c < a.ncols; c++)
            ref_pack_value(&pk, &row[c]);
    }
    msgpack_pack_array(&pk, 0);   /* no rejects: the frame's last element */
    CHECK(fb.len > sb.size && !memcmp(fb.p + fb.len - sb.size, sb.data, sb.size));
    msgpack_sbuffer_destroy(&sb);
    zx_buf_free(&fb);
    zx_rowset_free(&a);
    free(big);
}

int main(void)
{
    test_types();
    test_cells_as_msgpack();
    test_shapes();
    test_meta();
    test_positions();
    test_fenced_positions();
    test_changes();
    test_hashes_marks();
    test_reject_entries();
    test_encode_einval();
    test_decoded_copies();
    test_malformed();
    test_malformed_positions();
    test_malformed_rejects();
    test_huge_counts();
    test_truncation_and_mutation();
    test_garbage();
    test_speed();
    printf("test_frame: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
