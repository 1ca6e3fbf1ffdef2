/*
 * test_frame.c — unit tests of the frame codec (proto/frame.h): round trips
 * of every value type and of the metadata, rejection of malformed and
 * hostile frames (truncation, wrong types, huge claimed counts, garbage,
 * bit flips), and a rows/s measurement (printed, no threshold).
 * Hostile frames are built by hand with a tiny byte writer, not msgpack.
 */
#include "proto/frame.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    zx_frame_buf fb;
    char err[256];
    zx_frame_buf_init(&fb);
    CHECK(zx_frame_encode(m, a, &fb) == 0);
    CHECK(fb.len <= zx_frame_estimate(a) + zx_frame_meta_estimate(m));
    int rc = zx_frame_decode(fb.data, fb.len, mout, b, err, sizeof(err));
    if (rc != 0)
        printf("  decode: %s\n", err);
    CHECK(rc == 0);
    CHECK(rowset_eq(a, b));
    zx_frame_buf_free(&fb);
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

/* header of a frame up to and including the metadata map */
static void whead(wb *w, const char *magic, uint64_t version, uint64_t kind)
{
    warr(w, 8);
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
    CHECK(mo.request_id == NULL && mo.idem_key == NULL && mo.position == NULL &&
          mo.position_len == 0 && mo.ingested_at_us == 0 && mo.idem_hash == 0 &&
          mo.accepted == 0);
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
    zx_frame_buf fb;
    char err[256];
    zx_rowset_init(&a);
    zx_rowset_init(&b);
    zx_frame_buf_init(&fb);
    zx_rowset_begin_row(&a);
    add(&a, "v", vint(1));
    zx_rowset_end_row(&a);

    const unsigned char pos[] = {0, 1, 2, 0xff, 0};
    zx_frame_meta m = {.kind = ZX_FRAME_ROWS, .pipeline = "p\xc3\xa9", .table = "",
                       .ingested_at_us = -5, .request_id = "req-1",
                       .idem_key = "", .idem_hash = UINT64_MAX,
                       .accepted = 12345678901ull, .position = pos,
                       .position_len = sizeof(pos)};
    roundtrip(&m, &a, &b, &mo);
    CHECK(strcmp(mo.pipeline, "p\xc3\xa9") == 0 && strcmp(mo.table, "") == 0);
    CHECK(mo.ingested_at_us == -5);
    CHECK(mo.request_id && strcmp(mo.request_id, "req-1") == 0);
    CHECK(mo.idem_key && strcmp(mo.idem_key, "") == 0);
    CHECK(mo.idem_hash == UINT64_MAX && mo.accepted == 12345678901ull);
    CHECK(mo.position_len == sizeof(pos) && mo.position &&
          memcmp(mo.position, pos, sizeof(pos)) == 0);

    /* position non-NULL, empty: kept; NULL pipeline/table encode as "" */
    zx_frame_meta m2 = {.kind = ZX_FRAME_ROWS, .position = "", .position_len = 0};
    roundtrip(&m2, &a, &b, &mo);
    CHECK(mo.position != NULL && mo.position_len == 0);
    CHECK(mo.pipeline && mo.pipeline[0] == 0 && mo.table && mo.table[0] == 0);

    /* strings survive releasing the buffer: encode two frames back to back */
    zx_frame_meta m3 = basic_meta();
    m3.request_id = "second";
    CHECK(zx_frame_encode(&m, &a, &fb) == 0);
    size_t first = fb.len;
    CHECK(zx_frame_encode(&m3, &a, &fb) == 0);
    char *copy = malloc(fb.len - first);
    memcpy(copy, fb.data + first, fb.len - first);
    CHECK(zx_frame_decode(copy, fb.len - first, &mo, &b, err, sizeof(err)) == 0);
    memset(copy, 0, fb.len - first);
    free(copy);
    CHECK(strcmp(mo.request_id, "second") == 0 && strcmp(mo.table, "events") == 0);
    CHECK(rowset_eq(&a, &b));
    /* the whole buffer (two frames) is rejected: trailing bytes */
    CHECK(decode_rejects(fb.data, fb.len, "trailing"));

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

    /* unknown metadata keys (with nested values) are skipped; nil = absent */
    wb w = {.n = 0};
    warr(&w, 8);
    wstr(&w, "ZXF");
    w1(&w, 1);
    w1(&w, 1);
    wstr(&w, "p");
    wstr(&w, "t");
    wmap(&w, 4);
    wstr(&w, "zz");
    warr(&w, 2); wmap(&w, 1); wstr(&w, "k"); warr(&w, 0); w1(&w, 0xc0);
    wstr(&w, "rq"); w1(&w, 0xc0);
    wstr(&w, "ia"); w1(&w, 0xd3); wbe(&w, (uint64_t)INT64_MIN, 8);
    wstr(&w, "longer-key"); w1(&w, 0xcb); wbe(&w, 0, 8);
    wcols1(&w);
    warr(&w, 1); warr(&w, 1); w1(&w, 0xd0); w1(&w, 0x05);  /* int8 5 */
    CHECK(zx_frame_decode(w.d, w.n, &mo, &b, err, sizeof(err)) == 0);
    CHECK(mo.request_id == NULL && mo.ingested_at_us == INT64_MIN);
    CHECK(b.nrows == 1 && b.ncells == 1 && b.cells[0].v.u.i == 5);

    zx_frame_buf_free(&fb);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

/* ---------------------------------------------------------------- */
/* rejection                                                         */

static void small_frame(zx_frame_buf *fb)
{
    zx_rowset a;
    zx_rowset_init(&a);
    zx_frame_meta m = basic_meta();
    m.request_id = "r";
    m.position = "\x01\x02";
    m.position_len = 2;
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
    zx_frame_buf_init(fb);
    if (zx_frame_encode(&m, &a, fb) != 0)
        exit(2);
    zx_rowset_free(&a);
}

static void test_truncation_and_mutation(void)
{
    zx_frame_buf fb;
    small_frame(&fb);
    int bad = 0;
    for (size_t n = 0; n < fb.len; n++) {
        /* an exact-size heap copy so that ASan catches any over-read */
        char *c = malloc(n ? n : 1);
        memcpy(c, fb.data, n);
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
        memcpy(c, fb.data, fb.len);
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
        memcpy(c, fb.data, fb.len);
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
    zx_frame_buf_free(&fb);
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
            g[0] = 0x98;
            g[1] = 0xa3; g[2] = 'Z'; g[3] = 'X'; g[4] = 'F';
            g[5] = 1;
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

static void test_rejects(void)
{
    wb w;

#define FRAME(...) do { w.n = 0; __VA_ARGS__; } while (0)
    /* the valid reference, built the same way */
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 3));
    {
        zx_rowset rs;
        zx_frame_meta m;
        char err[256];
        zx_rowset_init(&rs);
        int rc = zx_frame_decode(w.d, w.n, &m, &rs, err, sizeof(err));
        CHECK(rc == 0 && rs.nrows == 1 && rs.ncells == 1);
        zx_rowset_free(&rs);
    }
    FRAME(whead(&w, "ZXG", 1, 1); wcols1(&w); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "magic"));
    FRAME(whead(&w, "ZX", 1, 1); wcols1(&w); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "magic"));
    FRAME(whead(&w, "ZXF", 2, 1); wcols1(&w); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "version 2"));
    FRAME(whead(&w, "ZXF", UINT64_MAX, 1); wcols1(&w); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "version"));
    FRAME(whead(&w, "ZXF", 1, 7); wcols1(&w); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "kind 7"));
    /* wrong element types */
    FRAME(warr(&w, 8); for (int i = 0; i < 8; i++) w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "magic: expected string"));
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); wstr(&w, "1"));
    CHECK(decode_rejects(w.d, w.n, "version: expected integer"));
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 1); w1(&w, 1); w1(&w, 0xc0));
    CHECK(decode_rejects(w.d, w.n, "pipeline: expected string"));
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 1); w1(&w, 1); wstr(&w, "p");
          wstr(&w, "t"); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata: expected map"));
    FRAME(warr(&w, 7); wstr(&w, "ZXF"); for (int i = 0; i < 6; i++) w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "8 elements"));
    FRAME(wmap(&w, 1); w1(&w, 1); w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "frame: expected array"));
    FRAME(whead(&w, "ZXF", 1, 1); wmap(&w, 0); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "columns: expected array"));
    FRAME(whead(&w, "ZXF", 1, 1); warr(&w, 1); warr(&w, 3); wstr(&w, "c"); w1(&w, 1);
          w1(&w, 1); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "[name, type]"));
    FRAME(whead(&w, "ZXF", 1, 1); warr(&w, 1); warr(&w, 2); w1(&w, 1); w1(&w, 1);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "column name"));
    FRAME(whead(&w, "ZXF", 1, 1); warr(&w, 1); warr(&w, 2); wstr(&w, "c"); w1(&w, 7);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "unknown type 7"));
    FRAME(whead(&w, "ZXF", 1, 1); warr(&w, 1); warr(&w, 2); wstr(&w, "c"); w1(&w, 0xff);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "negative"));
    FRAME(whead(&w, "ZXF", 1, 1); warr(&w, 2); warr(&w, 2); wstr(&w, "c"); w1(&w, 1);
          warr(&w, 2); wstr(&w, "c"); w1(&w, 2); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "duplicate"));
    FRAME(whead(&w, "ZXF", 1, 1); warr(&w, 1); warr(&w, 2); wstrn(&w, "a\0b", 3);
          w1(&w, 1); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "NUL"));
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 1); w1(&w, 1); wstrn(&w, "p\0", 2));
    CHECK(decode_rejects(w.d, w.n, "NUL"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); wmap(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "rows: expected array"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "row: expected array"));
    /* row width mismatch (column index out of range / missing) */
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); warr(&w, 2); w1(&w, 1);
          w1(&w, 2));
    CHECK(decode_rejects(w.d, w.n, "row 0 has 2 values, expected 1"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 2); warr(&w, 1); w1(&w, 1);
          warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "row 1 has 0 values"));
    /* rows claimed but not there */
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 3); warr(&w, 1); w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, NULL));
    /* value types */
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 0xc4);
          w1(&w, 1); w1(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "binary is not a value type"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "array is not a value type"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); wmap(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "map is not a value type"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 0xd4);
          w1(&w, 3); w1(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "unknown extension type 3"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 0xd6);
          w1(&w, 1); wbe(&w, 0, 4));
    CHECK(decode_rejects(w.d, w.n, "fewer than 8"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); wuint(&w, UINT64_MAX));
    CHECK(decode_rejects(w.d, w.n, "int64 range"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 0xc1));
    CHECK(decode_rejects(w.d, w.n, "0xc1"));
    /* metadata of the wrong type */
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 1); w1(&w, 1); wstr(&w, "p"); wstr(&w, "t");
          wmap(&w, 1); wstr(&w, "po"); wstr(&w, "x"); wcols1(&w); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata po: expected binary"));
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 1); w1(&w, 1); wstr(&w, "p"); wstr(&w, "t");
          wmap(&w, 1); wstr(&w, "ac"); w1(&w, 0xff); wcols1(&w); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata ac: negative"));
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 1); w1(&w, 1); wstr(&w, "p"); wstr(&w, "t");
          wmap(&w, 1); w1(&w, 1); w1(&w, 1); wcols1(&w); warr(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "metadata key"));

    /* huge claimed counts in tiny buffers: rejected, nothing allocated */
    FRAME(w1(&w, 0xdd); wbe(&w, 0xffffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, "4294967295 elements"));
    FRAME(w1(&w, 0xdd); wbe(&w, 0xffffffffu, 4); w1(&w, 0); w1(&w, 0));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    FRAME(whead(&w, "ZXF", 1, 1); w1(&w, 0xdd); wbe(&w, 0xffffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); w1(&w, 0xdd); wbe(&w, 0xffffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); w1(&w, 0xdd);
          wbe(&w, 0xffffffffu, 4); w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 1); w1(&w, 1); wstr(&w, "p"); wstr(&w, "t");
          w1(&w, 0xdf); wbe(&w, 0xffffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, "does not fit"));
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 1); w1(&w, 1); w1(&w, 0xdb);
          wbe(&w, 0xffffffffu, 4); w1(&w, 'p'));
    CHECK(decode_rejects(w.d, w.n, "truncated"));
    FRAME(whead(&w, "ZXF", 1, 1); wcols1(&w); warr(&w, 1); warr(&w, 1); w1(&w, 0xc9);
          wbe(&w, 0xfffffff0u, 4); w1(&w, 1));
    CHECK(decode_rejects(w.d, w.n, "truncated"));
    /* nested unknown metadata value claiming a huge map */
    FRAME(warr(&w, 8); wstr(&w, "ZXF"); w1(&w, 1); w1(&w, 1); wstr(&w, "p"); wstr(&w, "t");
          wmap(&w, 1); wstr(&w, "zz"); warr(&w, 15); warr(&w, 15); w1(&w, 0xdf);
          wbe(&w, 0x7fffffffu, 4));
    CHECK(decode_rejects(w.d, w.n, NULL));
    /* deep nesting in an unknown metadata value: iterative skip, no stack */
    {
        static uint8_t deep[200000];
        size_t n = 0;
        wb h = {.n = 0};
        warr(&h, 8); wstr(&h, "ZXF"); w1(&h, 1); w1(&h, 1); wstr(&h, "p"); wstr(&h, "t");
        wmap(&h, 1); wstr(&h, "zz");
        memcpy(deep, h.d, h.n);
        n = h.n;
        while (n < sizeof(deep))
            deep[n++] = 0x91;
        CHECK(decode_rejects(deep, n, "truncated"));
    }
    /* a column count over the limit, in a buffer big enough to hold it */
    {
        size_t big = (size_t)ZX_FRAME_MAX_COLUMNS * 2 + 64;
        uint8_t *p = calloc(1, big);   /* zeros: fixint 0 */
        wb h = {.n = 0};
        whead(&h, "ZXF", 1, 1);
        h.d[h.n++] = 0xdd;
        wbe(&h, (uint64_t)ZX_FRAME_MAX_COLUMNS + 1, 4);
        memcpy(p, h.d, h.n);
        CHECK(decode_rejects(p, big, "limit"));
        free(p);
    }
#undef FRAME
}

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
    zx_frame_buf fb;
    zx_frame_meta m = basic_meta(), mo;
    char err[256];
    zx_rowset_init(&a);
    zx_rowset_init(&b);
    zx_frame_buf_init(&fb);
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
        zx_frame_buf_reset(&fb);
        CHECK(zx_frame_encode(&m, &a, &fb) == 0);
    }
    double t1 = now();
    for (int k = 0; k < reps; k++)
        CHECK(zx_frame_decode(fb.data, fb.len, &mo, &b, err, sizeof(err)) == 0);
    double t2 = now();
    CHECK(rowset_eq(&a, &b));
    CHECK(fb.len <= zx_frame_estimate(&a) + zx_frame_meta_estimate(&m));
    printf("speed: %d rows x 10 fields, frame %zu bytes (estimate %zu): "
           "encode %.0f rows/s, decode %.0f rows/s\n",
           ROWS, fb.len, zx_frame_estimate(&a), reps * ROWS / (t1 - t0),
           reps * ROWS / (t2 - t1));
    zx_frame_buf_free(&fb);
    zx_rowset_free(&a);
    zx_rowset_free(&b);
}

int main(void)
{
    test_types();
    test_shapes();
    test_meta();
    test_rejects();
    test_truncation_and_mutation();
    test_garbage();
    test_speed();
    printf("test_frame: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
