/*
 * test_coltype.c — a result column's type from all of its values
 * (workers/syncs/coltype.h): the cases of issue 18 (coalesce(x, 0) with a
 * first 0, a CASE whose first value is NULL, integers then text, a column
 * of NULLs), declared types that values widen, and that the order of the
 * values does not change the end type.
 */
#include "workers/syncs/coltype.h"

#include <string.h>

#include "check.h"

static zx_value vi(int64_t i) { zx_value v = {.type = ZX_T_INT}; v.u.i = i; return v; }
static zx_value vr(double d) { zx_value v = {.type = ZX_T_REAL}; v.u.d = d; return v; }
static zx_value vb(int b) { zx_value v = {.type = ZX_T_BOOL}; v.u.b = b; return v; }
static zx_value vt(const char *s)
{
    zx_value v = {.type = ZX_T_TEXT};
    v.s = s;
    v.len = (uint32_t)strlen(s);
    return v;
}
static zx_value vnull(void) { zx_value v = {.type = ZX_T_NULL}; return v; }

/* The end type of a column (declared type t, or undecided when und) for
 * the n values vs, seen in order. */
static zx_dtype end_type(zx_dtype t, int und, const zx_value *vs, size_t n)
{
    zx_dcol c = {.name = "c", .type = t};
    zx_buf b = {0};
    for (size_t i = 0; i < n; i++)
        CHECK(zx_coltype_see(&c, &und, &vs[i], &b) >= 0);
    zx_buf_free(&b);
    return und ? ZX_DT__COUNT : c.type;   /* still undecided: no value */
}

/* The same end type for vs in order and reversed. */
static zx_dtype both_orders(zx_dtype t, int und, const zx_value *vs, size_t n)
{
    zx_value rev[16];
    for (size_t i = 0; i < n && i < 16; i++)
        rev[i] = vs[n - 1 - i];
    zx_dtype a = end_type(t, und, vs, n), b = end_type(t, und, rev, n);
    CHECK(a == b);
    return a;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

int main(void)
{
    /* coalesce(discount, 0): 0 first, then reals */
    zx_value coalesce[] = {vi(0), vr(0.1), vr(0.15), vr(0.2)};
    CHECK(both_orders(ZX_DT_TEXT, 1, coalesce, N(coalesce)) == ZX_DT_DOUBLE);
    /* CASE with NULL first, then reals: numbers, not text */
    zx_value casenull[] = {vnull(), vr(20.5), vr(30.5)};
    CHECK(both_orders(ZX_DT_TEXT, 1, casenull, N(casenull)) == ZX_DT_DOUBLE);
    /* integers, then text */
    zx_value mixed[] = {vi(1), vi(2), vt("x3")};
    CHECK(both_orders(ZX_DT_TEXT, 1, mixed, N(mixed)) == ZX_DT_TEXT);
    /* integers, then reals, then text */
    zx_value three[] = {vi(1), vr(2.5), vt("x")};
    CHECK(both_orders(ZX_DT_TEXT, 1, three, N(three)) == ZX_DT_TEXT);
    /* integers only */
    zx_value ints[] = {vi(1), vnull(), vi(-7)};
    CHECK(both_orders(ZX_DT_TEXT, 1, ints, N(ints)) == ZX_DT_INT64);
    /* no value at all: still undecided (the caller makes it TEXT) */
    zx_value nulls[] = {vnull(), vnull()};
    CHECK(end_type(ZX_DT_TEXT, 1, nulls, N(nulls)) == ZX_DT__COUNT);
    /* bytes that are not UTF-8 */
    zx_value raw[] = {vt("ok"), vt("\xff\xfe")};
    CHECK(both_orders(ZX_DT_TEXT, 1, raw, N(raw)) == ZX_DT_BYTES);

    /* declared types: kept while the values fit */
    zx_value dints[] = {vi(1), vi(2)};
    CHECK(end_type(ZX_DT_INT64, 0, dints, N(dints)) == ZX_DT_INT64);
    /* a real in an INTEGER column (SQLite keeps 0.5 as a real there) */
    zx_value dreal[] = {vi(1), vr(0.5)};
    CHECK(both_orders(ZX_DT_INT64, 0, dreal, N(dreal)) == ZX_DT_DOUBLE);
    /* text in a REAL column */
    zx_value dtext[] = {vr(1.5), vt("n/a")};
    CHECK(both_orders(ZX_DT_DOUBLE, 0, dtext, N(dtext)) == ZX_DT_TEXT);
    /* a BOOLEAN column holding 2 */
    zx_value dbool[] = {vb(1), vb(0), vi(2)};
    CHECK(both_orders(ZX_DT_BOOL, 0, dbool, N(dbool)) == ZX_DT_INT64);
    zx_value dbool01[] = {vb(1), vi(0), vi(1)};
    CHECK(both_orders(ZX_DT_BOOL, 0, dbool01, N(dbool01)) == ZX_DT_BOOL);
    /* a TIMESTAMP column with a text that is no time; a DATE with 'infinity' */
    zx_value dts[] = {vt("2026-01-01T00:00:00Z"), vt("soon")};
    CHECK(both_orders(ZX_DT_TIMESTAMP, 0, dts, N(dts)) == ZX_DT_TEXT);
    zx_value ddate[] = {vt("2024-02-29"), vt("infinity")};
    CHECK(both_orders(ZX_DT_DATE, 0, ddate, N(ddate)) == ZX_DT_TEXT);
    zx_value ddate_ok[] = {vt("2024-02-29"), vt("0001-01-01")};
    CHECK(end_type(ZX_DT_DATE, 0, ddate_ok, N(ddate_ok)) == ZX_DT_DATE);
    /* DECIMAL(5,2): 123.45 fits, 1234.5 and NaN do not */
    zx_dcol d = {.name = "d", .type = ZX_DT_DECIMAL, .precision = 5, .scale = 2};
    int und = 0;
    zx_buf b = {0};
    zx_value v = vt("123.45");
    CHECK(zx_coltype_see(&d, &und, &v, &b) == 0 && d.type == ZX_DT_DECIMAL && d.precision == 5);
    v = vt("1234.5");
    CHECK(zx_coltype_see(&d, &und, &v, &b) == 1 && d.type == ZX_DT_TEXT && d.precision == 0);
    zx_buf_free(&b);
    /* a JSON column with a document that does not parse */
    zx_value j1 = vt("{\"a\": 1}");
    j1.type = ZX_T_JSON;
    zx_value j2 = vt("{oops");
    j2.type = ZX_T_JSON;
    zx_value djson[] = {j1, j2};
    CHECK(both_orders(ZX_DT_JSON, 0, djson, N(djson)) == ZX_DT_TEXT);
    if (failures)
        printf("test_coltype: %d check(s) failed\n", failures);
    return failures != 0;
}
