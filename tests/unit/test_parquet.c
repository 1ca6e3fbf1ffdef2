/*
 * test_parquet.c — unit tests of formats/: the Thrift compact encoder
 * (exact bytes), value conversions (common/dcell.h), and the Parquet
 * writer's files read back with a small compact-protocol decoder written
 * here (footer, page headers, definition levels, PLAIN and dictionary
 * values, statistics, field ids), and its file-level statistics
 * (zx_pq_col_stats) against the footer.  Readers' view of the files
 * (pyarrow, DuckDB) is tests/integration/test_parquet_files.py.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/rowset.h"
#include "formats/parquet.h"
#include "formats/thrift_compact.h"
#include "common/dcell.h"

/* ---- a minimal compact protocol decoder (test only) ------------------ */

typedef struct node {
    int type;                 /* ZX_TC_* (BOOL_TRUE for both bools) */
    int16_t id;               /* field id (0 for list elements) */
    int64_t i;                /* ints, bool */
    const uint8_t *s;
    size_t n;                 /* binary bytes; list/struct: children */
    struct node *kids;
} node;

static uint64_t rd_uvarint(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;
    int sh = 0;
    while (*p < end && sh < 64) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80))
            return v;
        sh += 7;
    }
    return v;
}

static int64_t unzig(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static int rd_value(node *nd, int type, const uint8_t **p, const uint8_t *end);

static int rd_struct(node *nd, const uint8_t **p, const uint8_t *end)
{
    nd->type = ZX_TC_STRUCT;
    nd->kids = NULL;
    nd->n = 0;
    int16_t last = 0;
    for (;;) {
        if (*p >= end)
            return -1;
        uint8_t h = *(*p)++;
        if (h == 0)
            return 0;
        int t = h & 15, d = h >> 4;
        int16_t id = d ? (int16_t)(last + d) : (int16_t)unzig(rd_uvarint(p, end));
        last = id;
        nd->kids = realloc(nd->kids, (nd->n + 1) * sizeof(node));
        node *k = &nd->kids[nd->n++];
        memset(k, 0, sizeof(*k));
        k->id = id;
        if (t == ZX_TC_BOOL_TRUE || t == ZX_TC_BOOL_FALSE) {
            k->type = ZX_TC_BOOL_TRUE;
            k->i = t == ZX_TC_BOOL_TRUE;
            continue;
        }
        if (rd_value(k, t, p, end) < 0)
            return -1;
    }
}

static int rd_value(node *nd, int type, const uint8_t **p, const uint8_t *end)
{
    nd->type = type;
    switch (type) {
    case ZX_TC_BYTE:
        nd->i = (int8_t) * (*p)++;
        return 0;
    case ZX_TC_I16:
    case ZX_TC_I32:
    case ZX_TC_I64:
        nd->i = unzig(rd_uvarint(p, end));
        return 0;
    case ZX_TC_BINARY:
        nd->n = rd_uvarint(p, end);
        nd->s = *p;
        if (nd->n > (size_t)(end - *p))
            return -1;
        *p += nd->n;
        return 0;
    case ZX_TC_STRUCT:
        return rd_struct(nd, p, end);
    case ZX_TC_LIST: {
        uint8_t h = *(*p)++;
        size_t n = h >> 4;
        int et = h & 15;
        if (n == 15)
            n = rd_uvarint(p, end);
        nd->n = n;
        nd->kids = calloc(n ? n : 1, sizeof(node));
        for (size_t i = 0; i < n; i++)
            if (rd_value(&nd->kids[i], et, p, end) < 0)
                return -1;
        return 0;
    }
    default:
        return -1;
    }
}

static void nd_free(node *nd)
{
    if (nd->type == ZX_TC_STRUCT || nd->type == ZX_TC_LIST) {
        for (size_t i = 0; i < nd->n; i++)
            nd_free(&nd->kids[i]);
        free(nd->kids);
    }
}

static const node *fld(const node *nd, int16_t id)
{
    if (!nd || nd->type != ZX_TC_STRUCT)
        return NULL;
    for (size_t i = 0; i < nd->n; i++)
        if (nd->kids[i].id == id)
            return &nd->kids[i];
    return NULL;
}

static int64_t fi(const node *nd, int16_t id)
{
    const node *k = fld(nd, id);
    return k ? k->i : -999;
}

/* ---- Thrift encoder bytes ------------------------------------------------ */

static void test_thrift(void)
{
    zx_tc t;
    zx_tc_init(&t);
    zx_tc_struct_begin(&t);
    zx_tc_field_i32(&t, 1, 1);           /* 0x15 0x02 */
    zx_tc_field_i64(&t, 2, -1);          /* 0x16 0x01 */
    zx_tc_field_bool(&t, 3, 1);          /* 0x11 */
    zx_tc_field_bool(&t, 4, 0);          /* 0x12 */
    zx_tc_field_string(&t, 5, "ab");     /* 0x18 0x02 a b */
    zx_tc_field_i32(&t, 30, 300);        /* 0x05 zigzag(30)=60 0x3c; 600 = 0xd8 0x04 */
    zx_tc_field_list_begin(&t, 31, ZX_TC_I32, 2); /* 0x19 0x25 */
    zx_tc_i32(&t, 0);
    zx_tc_i32(&t, -2);
    zx_tc_field_struct_begin(&t, 32);    /* 0x1c */
    zx_tc_struct_end(&t);                /* 0x00 */
    zx_tc_struct_end(&t);                /* 0x00 */
    static const uint8_t want[] = {0x15, 0x02, 0x16, 0x01, 0x11, 0x12, 0x18, 0x02, 'a', 'b',
                                   0x05, 0x3c, 0xd8, 0x04, 0x19, 0x25, 0x00, 0x03, 0x1c, 0x00,
                                   0x00};
    CHECK(!t.failed);
    CHECK(t.len == sizeof(want) && !memcmp(t.buf, want, sizeof(want)));

    /* a long list header, and a decreasing field id is a misuse */
    zx_tc_reset(&t);
    zx_tc_struct_begin(&t);
    zx_tc_field_list_begin(&t, 1, ZX_TC_BINARY, 20);
    CHECK(t.len == 3 && t.buf[0] == 0x19 && t.buf[1] == 0xf8 && t.buf[2] == 20);
    zx_tc_reset(&t);
    zx_tc_struct_begin(&t);
    zx_tc_field_i32(&t, 5, 1);
    zx_tc_field_i32(&t, 4, 1);
    CHECK(t.failed);
    zx_tc_free(&t);
    zx_tc_free(NULL);
}

/* ---- values ---------------------------------------------------------------- */

static int dec(const char *s, int p, int sc, const char *want)
{
    zx_i128 v;
    if (!zx_dc_decimal_fits(s, strlen(s), p, sc, 0, &v))
        return want == NULL;
    char out[ZX_DC_TEXTSZ];
    zx_dc_decimal_text(v, sc, out);
    if (!want || strcmp(out, want)) {
        printf("decimal %s (%d,%d) -> %s, want %s\n", s, p, sc, out, want ? want : "misfit");
        return 0;
    }
    return 1;
}

/* zx_dc_convert for a file column c: FV_OK (a value), FV_NULL, FV_MISFIT,
 * or -1 (out of memory). */
enum { FV_NULL = 0, FV_OK = 1, FV_MISFIT = 2 };
static int fconv(const zx_dcol *c, const zx_value *v, zx_dc_out *o, zx_buf *sc)
{
    zx_dc_target t = zx_dc_target_file(c);
    int r = zx_dc_convert(&t, v, sc, o);
    return r < 0 ? -1 : r == 0 ? FV_MISFIT : o->null ? FV_NULL : FV_OK;
}

static zx_value txt(const char *s)
{
    zx_value v = {.type = ZX_T_TEXT, .len = (uint32_t)strlen(s), .s = s};
    return v;
}

static void test_values(void)
{
    zx_buf sc = {0};
    CHECK(dec("-123.45", 10, 2, "-123.45"));
    CHECK(dec("-123.4500", 10, 2, "-123.45"));
    CHECK(dec("1.005", 10, 2, "1.01"));            /* half away from zero */
    CHECK(dec("-1.005", 10, 2, "-1.01"));
    CHECK(dec("1.004", 10, 2, "1.00"));
    CHECK(dec("7", 5, 3, "7.000"));
    CHECK(dec(".5", 3, 0, "1"));
    CHECK(dec("0.0001", 5, 2, "0.00"));
    CHECK(dec("-0.001", 5, 2, "0.00"));
    CHECK(dec("99999999.99", 10, 2, "99999999.99"));
    CHECK(dec("99999999.995", 10, 2, NULL));        /* rounds past the precision */
    CHECK(dec("123456789.1", 10, 2, NULL));
    CHECK(dec("1e3", 6, 2, "1000.00"));
    CHECK(dec("1.5E-1", 6, 2, "0.15"));
    CHECK(dec("00000000000000000000000000000000000000000000042", 3, 0, "42"));
    CHECK(dec("99999999999999999999999999999999999999", 38, 0,
              "99999999999999999999999999999999999999"));
    CHECK(dec("-9999999999999999999999999999.9999999999", 38, 10,
              "-9999999999999999999999999999.9999999999"));
    CHECK(dec("100000000000000000000000000000000000000", 38, 0, NULL));
    CHECK(dec("", 5, 0, NULL));
    CHECK(dec("-", 5, 0, NULL));
    CHECK(dec("1.2.3", 5, 0, NULL));
    CHECK(dec(" 1", 5, 0, NULL));
    CHECK(dec("1e", 5, 0, NULL));
    CHECK(dec("abc", 5, 0, NULL));

    char b[ZX_DC_TEXTSZ];
    double ds[] = {0.1, 1.0 / 3, 1e300, -2.5e-310, 123456789012345678.0, 0.0, -0.0};
    for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++) {
        zx_dc_double_text(ds[i], b);
        CHECK(strtod(b, NULL) == ds[i]);
    }
    zx_dc_double_text(0.1, b);
    CHECK(!strcmp(b, "0.1"));
    zx_dc_double_text(NAN, b);
    CHECK(!strcmp(b, "NaN"));
    zx_dc_double_text(-INFINITY, b);
    CHECK(!strcmp(b, "-Infinity"));

    zx_dcol cd = {"d", ZX_DT_DATE, 0, 0};
    zx_dc_out fv;
    zx_value v = txt("0001-01-01");
    CHECK(fconv(&cd, &v, &fv, &sc) == FV_OK && fv.i == -719162);
    zx_dc_date_text(fv.i, b);
    CHECK(!strcmp(b, "0001-01-01"));
    v = txt("9999-12-31");
    CHECK(fconv(&cd, &v, &fv, &sc) == FV_OK && fv.i == 2932896);
    zx_dc_date_text(fv.i, b);
    CHECK(!strcmp(b, "9999-12-31"));
    v = txt("2024-02-29");
    CHECK(fconv(&cd, &v, &fv, &sc) == FV_OK);
    zx_dc_date_text(fv.i, b);
    CHECK(!strcmp(b, "2024-02-29"));
    v = txt("1969-12-31");
    CHECK(fconv(&cd, &v, &fv, &sc) == FV_OK && fv.i == -1);
    const char *bad_dates[] = {"2023-02-29", "0000-01-01", "2024-13-01", "2024-1-01",
                               "2024-01-01T00:00:00Z", "1900-02-29"};
    for (size_t i = 0; i < sizeof(bad_dates) / sizeof(bad_dates[0]); i++) {
        v = txt(bad_dates[i]);
        CHECK(fconv(&cd, &v, &fv, &sc) == FV_MISFIT);
    }

    zx_dcol ci = {"i", ZX_DT_INT64, 0, 0}, cdb = {"x", ZX_DT_DOUBLE, 0, 0};
    v = txt("42");
    CHECK(fconv(&ci, &v, &fv, &sc) == FV_OK && fv.i == 42);
    v = txt("-9223372036854775808");
    CHECK(fconv(&ci, &v, &fv, &sc) == FV_OK && fv.i == INT64_MIN);
    v = txt("9223372036854775808");
    CHECK(fconv(&ci, &v, &fv, &sc) == FV_MISFIT);
    v = txt("4.2");
    CHECK(fconv(&ci, &v, &fv, &sc) == FV_MISFIT);
    v = (zx_value){.type = ZX_T_REAL, .u.d = 3.0};
    CHECK(fconv(&ci, &v, &fv, &sc) == FV_OK && fv.i == 3);
    v = (zx_value){.type = ZX_T_INT, .u.i = 7};
    CHECK(fconv(&cdb, &v, &fv, &sc) == FV_OK && fv.d == 7.0);
    v = txt(" 1.5");
    CHECK(fconv(&cdb, &v, &fv, &sc) == FV_MISFIT);
    v = txt("1e999");
    CHECK(fconv(&cdb, &v, &fv, &sc) == FV_MISFIT);
    v = txt("NaN");
    CHECK(fconv(&cdb, &v, &fv, &sc) == FV_OK && isnan(fv.d));
    CHECK(fconv(&cdb, NULL, &fv, &sc) == FV_NULL);

    zx_dcol cj = {"j", ZX_DT_JSON, 0, 0};
    v = (zx_value){.type = ZX_T_JSON, .s = "{\"a\": [1, 2.5e3, true, null, \"\\u00e9\"]}"};
    v.len = (uint32_t)strlen(v.s);
    CHECK(fconv(&cj, &v, &fv, &sc) == FV_OK && fv.s == v.s);
    v.s = "{\"a\":";
    v.len = 5;
    CHECK(fconv(&cj, &v, &fv, &sc) == FV_MISFIT);
    v = txt("say \"hi\"\n\x01");                  /* text: a JSON string */
    CHECK(fconv(&cj, &v, &fv, &sc) == FV_OK && fv.len == 20 &&
          !memcmp(fv.s, "\"say \\\"hi\\\"\\n\\u0001\"", 20));
    v = txt("bad \xff");
    CHECK(fconv(&cj, &v, &fv, &sc) == FV_MISFIT);
    v = (zx_value){.type = ZX_T_TIMESTAMP, .u.i = 0};
    CHECK(fconv(&cj, &v, &fv, &sc) == FV_OK &&
          !strcmp(fv.s, "\"1970-01-01T00:00:00.000000Z\""));
    v = (zx_value){.type = ZX_T_REAL, .u.d = INFINITY};
    CHECK(fconv(&cj, &v, &fv, &sc) == FV_MISFIT);
    CHECK(zx_dc_json_valid("\"\\ud83d\\ude00\"", 14, 1, 0));
    CHECK(!zx_dc_json_valid("\"\\ud83d\"", 8, 1, 0) && !zx_dc_json_valid("\"\\ude00x\"", 9, 1, 0));
    const char *bad_json[] = {"{", "[1,]", "{\"a\"}", "01", "\"\x01\"", "tru", "1 2", "",
                              "{\"a\":1,}", "\"\\x\"", "\xff"};
    for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++)
        CHECK(!zx_dc_json_valid(bad_json[i], strlen(bad_json[i]), 1, 0));
    CHECK(zx_dc_json_valid(" [ ] ", 5, 1, 0) && zx_dc_json_valid("-0.5e+2", 7, 1, 0));
    CHECK(zx_dc_utf8_valid("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15));
    CHECK(!zx_dc_utf8_valid("\xc0\xaf", 2) && !zx_dc_utf8_valid("\xed\xa0\x80", 3) &&
          !zx_dc_utf8_valid("\xf4\x90\x80\x80", 4) && !zx_dc_utf8_valid("ab\xe2\x82", 4));

    zx_dcol cdec = {"m", ZX_DT_DECIMAL, 5, 2};
    v = (zx_value){.type = ZX_T_REAL, .u.d = 0.1};
    CHECK(fconv(&cdec, &v, &fv, &sc) == FV_OK && fv.dec == 10);
    v = (zx_value){.type = ZX_T_INT, .u.i = 1000};
    CHECK(fconv(&cdec, &v, &fv, &sc) == FV_MISFIT);
    zx_dcol cb = {"b", ZX_DT_BOOL, 0, 0};
    v = (zx_value){.type = ZX_T_INT, .u.i = 1};
    CHECK(fconv(&cb, &v, &fv, &sc) == FV_OK && fv.i == 1);
    v = (zx_value){.type = ZX_T_INT, .u.i = 2};
    CHECK(fconv(&cb, &v, &fv, &sc) == FV_MISFIT);
    zx_dcol ct = {"t", ZX_DT_TIMESTAMP, 0, 0};
    v = txt("1969-12-31T23:59:59.5Z");
    CHECK(fconv(&ct, &v, &fv, &sc) == FV_OK && fv.i == -500000);
    zx_dcol cs = {"s", ZX_DT_TEXT, 0, 0}, cy = {"y", ZX_DT_BYTES, 0, 0};
    v = (zx_value){.type = ZX_T_INT, .u.i = -5};
    CHECK(fconv(&cs, &v, &fv, &sc) == FV_OK && fv.len == 2 && !memcmp(fv.s, "-5", 2));
    v = txt("caf\xe9");                        /* Latin-1: not text, fine as bytes */
    CHECK(fconv(&cs, &v, &fv, &sc) == FV_MISFIT);
    CHECK(fconv(&cy, &v, &fv, &sc) == FV_OK && fv.len == 4);
    v = txt("+3");
    CHECK(fconv(&ci, &v, &fv, &sc) == FV_OK && fv.i == 3);
    v = txt("Yes");
    CHECK(fconv(&cb, &v, &fv, &sc) == FV_OK && fv.i == 1);
    v = txt("OFF");
    CHECK(fconv(&cb, &v, &fv, &sc) == FV_OK && fv.i == 0);
    v = (zx_value){.type = ZX_T_BOOL, .u.b = 1};
    CHECK(fconv(&cdb, &v, &fv, &sc) == FV_OK && fv.d == 1.0);
    v = txt("2020-01-02");                      /* a date: midnight UTC */
    CHECK(fconv(&ct, &v, &fv, &sc) == FV_OK && fv.i == 1577923200000000LL);
    v = (zx_value){.type = ZX_T_TIMESTAMP, .u.i = 1577923200000000LL};
    CHECK(fconv(&cd, &v, &fv, &sc) == FV_OK && fv.i == 18263);
    v.u.i += 1;
    CHECK(fconv(&cd, &v, &fv, &sc) == FV_MISFIT);
    v = (zx_value){.type = ZX_T_TIMESTAMP, .u.i = INT64_MIN};
    CHECK(fconv(&ct, &v, &fv, &sc) == FV_MISFIT);
    zx_buf_free(&sc);
}

/* ---- files ----------------------------------------------------------------- */

typedef struct file {
    uint8_t *p;
    size_t n;
    node meta;
} file;

static int load(FILE *f, file *out)
{
    memset(out, 0, sizeof(*out));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    if (n < 12)
        return -1;
    out->p = malloc((size_t)n);
    out->n = (size_t)n;
    rewind(f);
    if (fread(out->p, 1, out->n, f) != out->n)
        return -1;
    if (memcmp(out->p, "PAR1", 4) || memcmp(out->p + n - 4, "PAR1", 4))
        return -1;
    uint32_t flen;
    memcpy(&flen, out->p + n - 8, 4);
    if (flen > out->n - 12)
        return -1;
    const uint8_t *q = out->p + n - 8 - flen;
    if (rd_struct(&out->meta, &q, out->p + n - 8) < 0 || q != out->p + n - 8)
        return -1;
    return 0;
}

static void unload(file *f)
{
    nd_free(&f->meta);
    free(f->p);
}

static FILE *write_file(const zx_dcol *cols, size_t ncols, const zx_pq_opts *o,
                        const zx_rowset *rs, int times, uint64_t *nulled)
{
    FILE *f = tmpfile();
    zx_pq_writer *w;
    char err[256];
    if (zx_pq_open(fileno(f), cols, ncols, o, &w, err, sizeof(err)) < 0) {
        printf("open: %s\n", err);
        return NULL;
    }
    for (int i = 0; i < times; i++)
        if (zx_pq_write(w, rs, err, sizeof(err)) < 0) {
            printf("write: %s\n", err);
            return NULL;
        }
    uint64_t bytes;
    if (zx_pq_finish(w, &bytes, err, sizeof(err)) < 0) {
        printf("finish: %s\n", err);
        return NULL;
    }
    if (nulled)
        *nulled = zx_pq_nulled(w);
    zx_pq_free(w);
    fflush(f);
    return f;
}

static void add(zx_rowset *rs, uint32_t col, zx_value v)
{
    if (v.s)
        v.s = zx_rowset_strdup(rs, v.s, v.len);
    zx_rowset_add(rs, col, &v);
}

/* Decode definition levels (4-byte length + hybrid, width 1) of n rows. */
static const uint8_t *defs(const uint8_t *p, uint32_t n, uint8_t *out)
{
    uint32_t len;
    memcpy(&len, p, 4);
    const uint8_t *q = p + 4, *end = p + 4 + len;
    uint32_t k = 0;
    while (q < end && k < n) {
        uint64_t h = rd_uvarint(&q, end);
        if (h & 1) {
            uint64_t cnt = (h >> 1) * 8;
            for (uint64_t i = 0; i < cnt; i++, k += k < n)
                if (k < n)
                    out[k] = (q[i / 8] >> (i % 8)) & 1;
            q += h >> 1;
        } else {
            uint8_t v = *q++;
            for (uint64_t i = 0; i < (h >> 1) && k < n; i++)
                out[k++] = v;
        }
    }
    return end;
}

static void test_file_basic(void)
{
    zx_dcol cols[] = {{"id", ZX_DT_INT64, 0, 0}, {"name", ZX_DT_TEXT, 0, 0},
                      {"m", ZX_DT_DECIMAL, 20, 3}};
    zx_rowset rs;
    zx_rowset_init(&rs);
    for (int c = 0; c < 3; c++)
        zx_rowset_column(&rs, cols[c].name, strlen(cols[c].name), ZX_T_NULL);
    const char *names[] = {"b", "a", "c"};
    for (int r = 0; r < 10; r++) {
        zx_rowset_begin_row(&rs);
        if (r != 3)
            add(&rs, 0, (zx_value){.type = ZX_T_INT, .u.i = r * 10 - 20});
        if (r % 4 != 1)
            add(&rs, 1, txt(names[r % 3]));
        if (r == 5)
            add(&rs, 2, txt("not a number"));
        else if (r == 6)
            add(&rs, 2, txt("-1.5"));
        else if (r == 7)
            add(&rs, 2, txt("12345678901234567.891"));
        zx_rowset_end_row(&rs);
    }
    zx_pq_opts o = {.codec = ZX_PQ_NONE};
    uint64_t nulled = 0;
    FILE *f = write_file(cols, 3, &o, &rs, 1, &nulled);
    CHECK(f && nulled == 1);
    file pf;
    CHECK(f && load(f, &pf) == 0);
    if (!f)
        return;
    CHECK(fi(&pf.meta, 3) == 10);
    const node *schema = fld(&pf.meta, 2), *rgs = fld(&pf.meta, 4);
    CHECK(schema && schema->n == 4);
    CHECK(rgs && rgs->n == 1);
    if (schema && schema->n == 4) {
        const node *leaf = &schema->kids[2];
        CHECK(fi(leaf, 1) == 6 && fi(leaf, 3) == 1 && fi(leaf, 6) == 0);
        const node *lt = fld(leaf, 10);
        CHECK(lt && fld(lt, 1));                       /* STRING */
        const node *dl = &schema->kids[3];
        CHECK(fi(dl, 1) == 7 && fi(dl, 2) == 9 && fi(dl, 7) == 3 && fi(dl, 8) == 20);
    }
    if (rgs && rgs->n == 1) {
        const node *chunks = fld(&rgs->kids[0], 1);
        CHECK(chunks && chunks->n == 3);
        /* id: PLAIN int64, one NULL, min -20, max 70 */
        const node *md = fld(&chunks->kids[0], 3);
        const node *st = fld(md, 12);
        CHECK(fi(st, 3) == 1);
        const node *mn = fld(st, 6), *mx = fld(st, 5);
        int64_t a = 0, b = 0;
        if (mn && mx && mn->n == 8 && mx->n == 8) {
            memcpy(&a, mn->s, 8);
            memcpy(&b, mx->s, 8);
        }
        CHECK(a == -20 && b == 70);
        /* the data page: header, defs, values */
        const uint8_t *q = pf.p + fi(md, 9);
        node ph;
        CHECK(rd_struct(&ph, &q, pf.p + pf.n) == 0);
        CHECK(fi(&ph, 1) == 0 && fi(fld(&ph, 5), 1) == 10 && fi(fld(&ph, 5), 2) == 0);
        uint8_t d[10];
        const uint8_t *vals = defs(q, 10, d);
        int64_t v[9];
        memcpy(v, vals, sizeof(v));
        CHECK(d[3] == 0 && d[0] == 1 && d[9] == 1);
        CHECK(v[0] == -20 && v[3] == 20 && v[8] == 70);
        nd_free(&ph);

        /* name: a dictionary page (PLAIN "b","c","a": first seen first)
         * then RLE_DICTIONARY */
        md = fld(&chunks->kids[1], 3);
        CHECK(fi(md, 11) > 0);
        q = pf.p + fi(md, 11);
        CHECK(rd_struct(&ph, &q, pf.p + pf.n) == 0);
        CHECK(fi(&ph, 1) == 2 && fi(fld(&ph, 7), 1) == 3);
        CHECK(!memcmp(q, "\1\0\0\0b\1\0\0\0c\1\0\0\0a", 15));
        nd_free(&ph);
        q = pf.p + fi(md, 9);
        CHECK(rd_struct(&ph, &q, pf.p + pf.n) == 0);
        CHECK(fi(fld(&ph, 5), 2) == 8);
        nd_free(&ph);
        st = fld(md, 12);
        mn = fld(st, 6);
        mx = fld(st, 5);
        CHECK(fi(st, 3) == 3 && mn && mx && mn->n == 1 && mn->s[0] == 'a' && mx->s[0] == 'c');
        CHECK(!fld(st, 1));                            /* no legacy max for strings */

        /* decimal(20,3): FLBA(9) big-endian; min -1.500, max 12345678901234567.891 */
        md = fld(&chunks->kids[2], 3);
        st = fld(md, 12);
        mn = fld(st, 6);
        CHECK(fi(st, 3) == 8 && mn && mn->n == 9);
        if (mn && mn->n == 9) {
            static const uint8_t m1500[9] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfa, 0x24};
            CHECK(!memcmp(mn->s, m1500, 9));
        }
    }
    unload(&pf);
    fclose(f);
    zx_rowset_free(&rs);
}

/* Several row groups, each starting its dictionary anew; a dictionary
 * that overflows falls back to PLAIN; all codecs; NaN statistics. */
static void test_file_groups(void)
{
    zx_dcol cols[] = {{"s", ZX_DT_TEXT, 0, 0}, {"x", ZX_DT_DOUBLE, 0, 0},
                      {"b", ZX_DT_BOOL, 0, 0}};
    zx_rowset rs;
    zx_rowset_init(&rs);
    for (int c = 0; c < 3; c++)
        zx_rowset_column(&rs, cols[c].name, strlen(cols[c].name), ZX_T_NULL);
    char buf[128];
    for (int r = 0; r < 5000; r++) {
        zx_rowset_begin_row(&rs);
        int l = snprintf(buf, sizeof(buf), "value-%d-%064d", r, r);   /* all distinct */
        add(&rs, 0, (zx_value){.type = ZX_T_TEXT, .len = (uint32_t)l, .s = buf});
        add(&rs, 1, (zx_value){.type = ZX_T_REAL, .u.d = r == 77 ? NAN : r * 0.25});
        if (r % 5)
            add(&rs, 2, (zx_value){.type = ZX_T_BOOL, .u.b = r % 2});
        zx_rowset_end_row(&rs);
    }
    zx_pq_codec codecs[] = {ZX_PQ_NONE, ZX_PQ_SNAPPY, ZX_PQ_ZSTD};
    for (int k = 0; k < 3; k++) {
        zx_pq_opts o = {.codec = codecs[k], .row_group_bytes = 200000, .page_bytes = 4096};
        FILE *f = write_file(cols, 3, &o, &rs, 4, NULL);
        file pf;
        CHECK(f && load(f, &pf) == 0);
        if (!f)
            continue;
        CHECK(fi(&pf.meta, 3) == 20000);
        const node *rgs = fld(&pf.meta, 4);
        CHECK(rgs && rgs->n > 3);
        int64_t total = 0;
        for (size_t g = 0; rgs && g < rgs->n; g++) {
            total += fi(&rgs->kids[g], 3);
            const node *chunks = fld(&rgs->kids[g], 1);
            const node *md = fld(&chunks->kids[1], 3);
            CHECK(fi(md, 4) == (codecs[k] == ZX_PQ_NONE ? 0 : codecs[k] == ZX_PQ_SNAPPY ? 1 : 6));
            const node *st = fld(md, 12);
            CHECK(fld(st, 9) != NULL);                 /* nan_count written */
            if (fi(st, 9) > 0)
                CHECK(!fld(st, 5) && !fld(st, 6));     /* no min/max with a NaN */
            else
                CHECK(fld(st, 5) && fld(st, 6));
            /* text longer than 64 bytes: no min/max */
            const node *sst = fld(fld(&chunks->kids[0], 3), 12);
            CHECK(!fld(sst, 5) && fi(sst, 3) == 0);
            /* bool: legacy and new min/max of one byte */
            const node *bst = fld(fld(&chunks->kids[2], 3), 12);
            CHECK(fld(bst, 1) && fld(bst, 6) && fld(bst, 6)->n == 1);
        }
        CHECK(total == 20000);
        unload(&pf);
        fclose(f);
    }
    zx_rowset_free(&rs);
}

/* Distinct text past the 1 MiB dictionary in one row group: the column
 * falls back to PLAIN, and its pages are cut by reading each value's
 * length behind the definition bits (a full byte of them is 8 values,
 * never more). */
static void test_file_plain_fallback(void)
{
    zx_dcol cols[] = {{"u", ZX_DT_TEXT, 0, 0}};
    zx_rowset rs;
    zx_rowset_init(&rs);
    zx_rowset_column(&rs, "u", 1, ZX_T_NULL);
    char buf[160];
    for (int r = 0; r < 20000; r++) {
        zx_rowset_begin_row(&rs);
        int l = snprintf(buf, sizeof(buf), "unique-%08d-%0100d", r, r);
        add(&rs, 0, (zx_value){.type = ZX_T_TEXT, .len = (uint32_t)l, .s = buf});
        zx_rowset_end_row(&rs);
    }
    zx_pq_opts o = {.codec = ZX_PQ_NONE, .row_group_bytes = 64u << 20, .page_bytes = 8192};
    FILE *f = write_file(cols, 1, &o, &rs, 1, NULL);
    file pf;
    CHECK(f && load(f, &pf) == 0);
    if (f) {
        CHECK(fi(&pf.meta, 3) == 20000);
        const node *rgs = fld(&pf.meta, 4);
        CHECK(rgs && rgs->n == 1);
        const node *md = rgs ? fld(&fld(&rgs->kids[0], 1)->kids[0], 3) : NULL;
        CHECK(md && fi(md, 5) == 20000 && !fld(md, 11));   /* no dictionary page */
        /* the pages hold each value once (4-byte length + 116 bytes), plus
         * their headers and definition bits: well under 2% more */
        int64_t values = 20000 * 120, bytes = md ? fi(md, 6) : 0;
        CHECK(bytes > values && bytes < values + values / 50);
        unload(&pf);
        fclose(f);
    }
    zx_rowset_free(&rs);
}

static void test_errors(void)
{
    char err[256] = "";
    zx_pq_writer *w = NULL;
    zx_dcol bad[] = {{"m", ZX_DT_DECIMAL, 39, 0}};
    CHECK(zx_pq_open(1, bad, 1, NULL, &w, err, sizeof(err)) < 0 && !w);
    CHECK(strstr(err, "decimal(39,0)") != NULL);
    zx_dcol dup[] = {{"a", ZX_DT_INT64, 0, 0}, {"a", ZX_DT_TEXT, 0, 0}};
    CHECK(zx_pq_open(1, dup, 2, NULL, &w, err, sizeof(err)) < 0 && strstr(err, "twice"));
    int p[2];
    CHECK(pipe(p) == 0);
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    zx_dcol ok[] = {{"a", ZX_DT_INT64, 0, 0}};
    CHECK(zx_pq_open(p[1], ok, 1, NULL, &w, err, sizeof(err)) < 0 && strstr(err, "write failed"));
    close(p[1]);

    /* empty file: schema, no row groups */
    zx_rowset rs;
    zx_rowset_init(&rs);
    zx_rowset_column(&rs, "a", 1, ZX_T_NULL);
    FILE *f = write_file(ok, 1, NULL, &rs, 1, NULL);
    file pf;
    CHECK(f && load(f, &pf) == 0);
    if (f) {
        CHECK(fi(&pf.meta, 3) == 0 && fld(&pf.meta, 4)->n == 0 && fld(&pf.meta, 2)->n == 2);
        unload(&pf);
        fclose(f);
    }
    zx_rowset_free(&rs);
    zx_pq_free(NULL);
}

/* ---- file-level statistics and field ids ------------------------------- */

static int bytes_is(const uint8_t *p, size_t n, const char *want, size_t wn)
{
    return p && n == wn && (!n || !memcmp(p, want, n));
}

/* The footer's chunks of column col: summed null counts, compressed and
 * uncompressed sizes. */
static void footer_sums(const node *meta, size_t col, int64_t *nulls, int64_t *comp,
                        int64_t *uncomp)
{
    *nulls = *comp = *uncomp = 0;
    const node *rgs = fld(meta, 4);
    for (size_t g = 0; rgs && g < rgs->n; g++) {
        const node *md = fld(&fld(&rgs->kids[g], 1)->kids[col], 3);
        *nulls += fi(fld(md, 12), 3);
        *uncomp += fi(md, 6);
        *comp += fi(md, 7);
    }
}

enum { ST_ROWS = 3000, ST_NCOLS = 13 };

/* Row r's cells; the extremes sit in middle row groups. */
static void stats_row(int r, zx_value *v, char *sbuf, char *lbuf)
{
    memset(v, 0, ST_NCOLS * sizeof(*v));
    /* i: INT64, NULL when r % 10 == 3, a misfit at 5 */
    if (r == 5)
        v[0] = txt("x");
    else if (r % 10 != 3)
        v[0] = (zx_value){.type = ZX_T_INT,
                          .u.i = r == 1500 ? INT64_MIN : r == 1700 ? INT64_MAX : r};
    /* x: DOUBLE, min -1e300 at 1234, a zero at 200 */
    v[1] = (zx_value){.type = ZX_T_REAL, .u.d = r == 1234 ? -1e300 : r * 0.5 - 100};
    /* y: DOUBLE with one NaN */
    v[2] = (zx_value){.type = ZX_T_REAL, .u.d = r == 2500 ? NAN : r};
    /* s: TEXT, "" at 1111 (min), "zzz" at 2222 (max), NULL when r % 7 == 0 */
    if (r % 7) {
        if (r == 1111)
            v[3] = txt("");
        else if (r == 2222)
            v[3] = txt("zzz");
        else {
            snprintf(sbuf, 16, "k%05d", (r * 7) % ST_ROWS);
            v[3] = txt(sbuf);
        }
    }
    /* l: TEXT whose max is 100 bytes long (unknown) */
    memset(lbuf, '~', 100);
    lbuf[100] = 0;
    v[4] = r == 1600 ? txt(lbuf) : txt("b");
    /* l2: TEXT with a 100-byte value ("m~~~...") that is neither min nor
     * max (known) */
    if (r == 1601)
        lbuf[0] = 'm';
    v[5] = r == 1601 ? txt(lbuf) : r == 10 ? txt("a") : r == 2990 ? txt("}") : txt("b");
    /* b: BOOL, always true, NULL for the first 100 rows */
    if (r >= 100)
        v[6] = (zx_value){.type = ZX_T_BOOL, .u.b = 1};
    /* t: TIMESTAMP */
    v[7] = (zx_value){.type = ZX_T_TIMESTAMP, .u.i = 1000000000000000LL + r};
    /* d: DATE, -1 at 1800, 2100-01-01 at 900 */
    v[8] = txt(r == 1800 ? "1969-12-31" : r == 900 ? "2100-01-01" : "2024-01-01");
    /* m: DECIMAL(10,2) */
    v[9] = txt(r == 2100 ? "-123.45" : r == 700 ? "99999999.99" : "1.00");
    /* q: DECIMAL(30,5): FLBA(13) */
    v[10] = txt(r == 1300 ? "-1.5" : r == 2700 ? "123456789012345678901234.5" : "7");
    /* n: INT64, always NULL */
    /* z: BYTES */
    v[12] = r == 1900 ? (zx_value){.type = ZX_T_TEXT, .len = 1, .s = "\0"}
                      : r == 1901 ? txt("\xff\xff") : txt("c");
}

static void test_file_stats(void)
{
    zx_dcol cols[ST_NCOLS] = {
        {"i", ZX_DT_INT64, 0, 0},     {"x", ZX_DT_DOUBLE, 0, 0},  {"y", ZX_DT_DOUBLE, 0, 0},
        {"s", ZX_DT_TEXT, 0, 0},      {"l", ZX_DT_TEXT, 0, 0},    {"l2", ZX_DT_TEXT, 0, 0},
        {"b", ZX_DT_BOOL, 0, 0},      {"t", ZX_DT_TIMESTAMP, 0, 0},
        {"d", ZX_DT_DATE, 0, 0},      {"m", ZX_DT_DECIMAL, 10, 2},
        {"q", ZX_DT_DECIMAL, 30, 5},  {"n", ZX_DT_INT64, 0, 0},   {"z", ZX_DT_BYTES, 0, 0}};
    int32_t ids[ST_NCOLS];
    for (int i = 0; i < ST_NCOLS; i++)
        ids[i] = 100 + i * 3;
    zx_pq_opts o = {.codec = ZX_PQ_ZSTD, .row_group_bytes = 4096, .page_bytes = 1024,
                    .field_ids = ids};
    FILE *f = tmpfile();
    zx_pq_writer *w = NULL;
    char err[256];
    CHECK(zx_pq_open(fileno(f), cols, ST_NCOLS, &o, &w, err, sizeof(err)) == 0);
    if (!w)
        return;
    ids[0] = -7;                                /* copied: later changes do not count */
    zx_value v[ST_NCOLS];
    char sbuf[16], lbuf[104];
    zx_pq_colstats cs;
    for (int r = 0; r < ST_ROWS; r++) {
        stats_row(r, v, sbuf, lbuf);
        CHECK(zx_pq_write_row(w, v, err, sizeof(err)) == 0);
        if (r == 999) {
            /* before finish: the row groups written so far */
            CHECK(zx_pq_col_stats(w, 0, &cs) == 0);
            CHECK(zx_pq_row_groups(w) > 0 && cs.values > 0 && cs.values < 1000);
            CHECK(zx_pq_rows(w) == 1000);
        }
    }
    uint64_t bytes = 0;
    CHECK(zx_pq_finish(w, &bytes, err, sizeof(err)) == 0);
    CHECK(zx_pq_row_groups(w) > 5);
    CHECK(zx_pq_nulled(w) == 1);
    fflush(f);
    file pf;
    CHECK(load(f, &pf) == 0);

    /* counts and sizes agree with the footer, for every column */
    for (size_t c = 0; c < ST_NCOLS; c++) {
        int64_t nulls, comp, uncomp;
        footer_sums(&pf.meta, c, &nulls, &comp, &uncomp);
        CHECK(zx_pq_col_stats(w, c, &cs) == 0);
        CHECK(cs.values == ST_ROWS);
        CHECK((int64_t)cs.nulls == nulls);
        CHECK((int64_t)cs.compressed_bytes == comp && comp > 0);
        CHECK((int64_t)cs.uncompressed_bytes == uncomp && uncomp > 0);
        /* field ids: SchemaElement field 9 of each leaf */
        const node *schema = fld(&pf.meta, 2);
        CHECK(schema && fi(&schema->kids[c + 1], 9) == (int64_t)(100 + c * 3));
        CHECK(!fld(&schema->kids[0], 9));       /* not on the root */
    }

    CHECK(zx_pq_col_stats(w, 0, &cs) == 0);     /* i */
    CHECK(cs.nulls == 301 && cs.nans == 0 && cs.has_minmax);
    CHECK(cs.imin == INT64_MIN && cs.imax == INT64_MAX && !cs.bmin && !cs.bmax);

    CHECK(zx_pq_col_stats(w, 1, &cs) == 0);     /* x */
    CHECK(cs.nulls == 0 && cs.nans == 0 && cs.has_minmax);
    CHECK(cs.dmin == -1e300 && cs.dmax == 2999 * 0.5 - 100);

    CHECK(zx_pq_col_stats(w, 2, &cs) == 0);     /* y: a NaN */
    CHECK(cs.nans == 1 && cs.nulls == 0 && !cs.has_minmax);

    CHECK(zx_pq_col_stats(w, 3, &cs) == 0);     /* s */
    CHECK(cs.nulls == (ST_ROWS + 6) / 7 && cs.has_minmax);
    CHECK(bytes_is(cs.bmin, cs.bmin_len, "", 0) && bytes_is(cs.bmax, cs.bmax_len, "zzz", 3));

    CHECK(zx_pq_col_stats(w, 4, &cs) == 0);     /* l: max too long */
    CHECK(!cs.has_minmax && !cs.bmin && !cs.bmax && cs.nulls == 0);

    CHECK(zx_pq_col_stats(w, 5, &cs) == 0);     /* l2: a long value in between */
    CHECK(cs.has_minmax && bytes_is(cs.bmin, cs.bmin_len, "a", 1) &&
          bytes_is(cs.bmax, cs.bmax_len, "}", 1));

    CHECK(zx_pq_col_stats(w, 6, &cs) == 0);     /* b */
    CHECK(cs.nulls == 100 && cs.has_minmax && cs.imin == 1 && cs.imax == 1);

    CHECK(zx_pq_col_stats(w, 7, &cs) == 0);     /* t */
    CHECK(cs.has_minmax && cs.imin == 1000000000000000LL &&
          cs.imax == 1000000000000000LL + ST_ROWS - 1);

    CHECK(zx_pq_col_stats(w, 8, &cs) == 0);     /* d */
    CHECK(cs.has_minmax && cs.imin == -1 && cs.imax == 47482);

    CHECK(zx_pq_col_stats(w, 9, &cs) == 0);     /* m: unscaled */
    CHECK(cs.has_minmax && cs.imin == -12345 && cs.imax == 9999999999LL);

    CHECK(zx_pq_col_stats(w, 10, &cs) == 0);    /* q: FLBA(13) big-endian */
    CHECK(cs.has_minmax && cs.bmin_len == 13 && cs.bmax_len == 13);
    if (cs.has_minmax && cs.bmin_len == 13) {
        zx_i128 want[2] = {-150000, (zx_i128)123456789012345678LL * 100000000000LL + 90123450000LL};
        const uint8_t *got[2] = {cs.bmin, cs.bmax};
        for (int k = 0; k < 2; k++) {
            uint8_t be[13];
            for (int i = 0; i < 13; i++)
                be[12 - i] = (uint8_t)((unsigned __int128)want[k] >> (8 * i));
            CHECK(!memcmp(got[k], be, 13));
        }
        /* the same bytes as the footer's min of the group that holds row 1300 */
        int found = 0;
        const node *rgs = fld(&pf.meta, 4);
        for (size_t g = 0; rgs && g < rgs->n; g++) {
            const node *mn = fld(fld(fld(&fld(&rgs->kids[g], 1)->kids[10], 3), 12), 6);
            found += mn && mn->n == 13 && !memcmp(mn->s, cs.bmin, 13);
        }
        CHECK(found == 1);
    }

    CHECK(zx_pq_col_stats(w, 11, &cs) == 0);    /* n: all NULL */
    CHECK(cs.nulls == ST_ROWS && !cs.has_minmax);

    CHECK(zx_pq_col_stats(w, 12, &cs) == 0);    /* z: bytes, unsigned order */
    CHECK(cs.has_minmax && bytes_is(cs.bmin, cs.bmin_len, "\0", 1) &&
          bytes_is(cs.bmax, cs.bmax_len, "\xff\xff", 2));

    CHECK(zx_pq_col_stats(w, ST_NCOLS, &cs) == -1);
    CHECK(zx_pq_col_stats(NULL, 0, &cs) == -1);
    unload(&pf);
    fclose(f);
    zx_pq_free(w);
}

/* A double column of zeros only: -0.0 and +0.0; no ids: no field_id. */
static void test_file_stats_zeros(void)
{
    zx_dcol cols[] = {{"x", ZX_DT_DOUBLE, 0, 0}};
    FILE *f = tmpfile();
    zx_pq_writer *w = NULL;
    char err[256];
    CHECK(zx_pq_open(fileno(f), cols, 1, NULL, &w, err, sizeof(err)) == 0);
    if (!w)
        return;
    zx_value v = {.type = ZX_T_REAL, .u.d = 0.0};
    CHECK(zx_pq_write_row(w, &v, err, sizeof(err)) == 0);
    zx_pq_colstats cs;
    CHECK(zx_pq_col_stats(w, 0, &cs) == 0 && cs.values == 0 && !cs.has_minmax);
    CHECK(zx_pq_finish(w, NULL, err, sizeof(err)) == 0);
    CHECK(zx_pq_col_stats(w, 0, &cs) == 0 && cs.values == 1 && cs.has_minmax);
    CHECK(cs.dmin == 0 && signbit(cs.dmin) && cs.dmax == 0 && !signbit(cs.dmax));
    fflush(f);
    file pf;
    CHECK(load(f, &pf) == 0);
    CHECK(!fld(&fld(&pf.meta, 2)->kids[1], 9));
    unload(&pf);
    fclose(f);
    zx_pq_free(w);

    /* bad field ids */
    int32_t bad[] = {1, 0};
    zx_dcol two[] = {{"a", ZX_DT_INT64, 0, 0}, {"b", ZX_DT_TEXT, 0, 0}};
    zx_pq_opts o = {.field_ids = bad};
    w = NULL;
    CHECK(zx_pq_open(1, two, 2, &o, &w, err, sizeof(err)) < 0 && !w);
    CHECK(strstr(err, "column b: field id 0") != NULL);
    bad[1] = -3;
    CHECK(zx_pq_open(1, two, 2, &o, &w, err, sizeof(err)) < 0 && strstr(err, "field id -3"));
}

int main(void)
{
    test_thrift();
    test_values();
    test_file_basic();
    test_file_groups();
    test_file_plain_fallback();
    test_errors();
    test_file_stats();
    test_file_stats_zeros();
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("test_parquet: all checks passed\n");
    return failures != 0;
}
