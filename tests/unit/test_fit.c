/*
 * test_fit.c — the writer's fit rules (workers/writer/fit.h) for numbers at
 * the edges of their column types: integers beyond int64 in both
 * directions, numbers beyond double range, the reals next to ±2^63, and the
 * reject reasons people read.  Pure functions: no database, no timing.
 *
 * Build (also registered in tests/unit/meson.build as 'fit' once merged):
 *   cc -I. tests/unit/test_fit.c workers/writer/fit.c common/rowset.c \
 *      common/timefmt.c -lm
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/rowset.h"
#include "workers/writer/fit.h"

#include "tests/unit/check.h"

static zx_buf buf;

/* A number kept as text, as the JSON parsers hand it over. */
static zx_value numtext(const char *lit)
{
    zx_value v = {.type = ZX_T_JSON};
    v.s = lit;
    v.len = (uint32_t)strlen(lit);
    return v;
}

static zx_value vreal(double d)
{
    zx_value v = {.type = ZX_T_REAL};
    v.u.d = d;
    return v;
}

static zx_value vint(int64_t i)
{
    zx_value v = {.type = ZX_T_INT};
    v.u.i = i;
    return v;
}

/* fit result, or 9 on a wrong out->st for a misfit */
static int fit(zx_fit_kind k, zx_value v, zx_fit_out *o)
{
    int r = zx_fit_value(k, &v, &buf, o);
    if (r == 0 && o->st != ZX_FIT_S_NULL)
        return 9;
    return r;
}

/* The reason the writer records for v in a column `c` of kind k. */
static const char *reason(zx_value v, zx_fit_kind k)
{
    static char out[512];
    zx_buf raw = {0};
    zx_fit_json_text(&v, &raw);
    zx_fit_reason(out, sizeof(out), raw.p, raw.len, (zx_type)v.type, "c", k);
    zx_buf_free(&raw);
    return out;
}

static void test_integers_beyond_int64(void)
{
    zx_fit_out o;
    /* INTEGER refuses both directions, whatever the double rounds to */
    CHECK(fit(ZX_FIT_INTEGER, numtext("-9223372036854775809"), &o) == 0);
    CHECK(fit(ZX_FIT_INTEGER, numtext("9223372036854775808"), &o) == 0);
    CHECK(fit(ZX_FIT_INTEGER, numtext("-18446744073709551617"), &o) == 0);
    CHECK(fit(ZX_FIT_INTEGER, numtext("99999999999999999999"), &o) == 0);
    CHECK(strcmp(reason(numtext("-9223372036854775809"), ZX_FIT_INTEGER),
                 "integer -9223372036854775809 is below the smallest INTEGER "
                 "(-9223372036854775808)") == 0);
    CHECK(strcmp(reason(numtext("9223372036854775808"), ZX_FIT_INTEGER),
                 "integer 9223372036854775808 is above the largest INTEGER "
                 "(9223372036854775807)") == 0);
    /* REAL takes them, rounded to the nearest double */
    CHECK(fit(ZX_FIT_REAL, numtext("-9223372036854775809"), &o) == 1 &&
          o.st == ZX_FIT_S_REAL && o.d == -9223372036854775808.0);
    CHECK(fit(ZX_FIT_REAL, numtext("18446744073709551616"), &o) == 1 &&
          o.d == 18446744073709551616.0);
    CHECK(fit(ZX_FIT_ANY, numtext("9223372036854775808"), &o) == 1 &&
          o.st == ZX_FIT_S_REAL && o.d == 9223372036854775808.0);
    /* TEXT and JSON keep the literal exactly */
    CHECK(fit(ZX_FIT_TEXT, numtext("-9223372036854775809"), &o) == 1 &&
          o.st == ZX_FIT_S_TEXT && o.len == 20 && memcmp(o.s, "-9223372036854775809", 20) == 0);
    CHECK(fit(ZX_FIT_JSON, numtext("18446744073709551616"), &o) == 1 &&
          o.st == ZX_FIT_S_TEXT && o.len == 20);
    /* BOOLEAN, TIMESTAMP: a number never fits */
    CHECK(fit(ZX_FIT_BOOLEAN, numtext("18446744073709551616"), &o) == 0);
    CHECK(fit(ZX_FIT_TIMESTAMP, numtext("-9223372036854775809"), &o) == 0);
    CHECK(strcmp(reason(numtext("18446744073709551616"), ZX_FIT_BOOLEAN),
                 "value 18446744073709551616 (integer) does not fit column c (boolean)") == 0);
    /* the edges themselves, as numbers kept as text, fit INTEGER */
    CHECK(fit(ZX_FIT_INTEGER, numtext("-9223372036854775808"), &o) == 1 &&
          o.st == ZX_FIT_S_INT && o.i == INT64_MIN);
    CHECK(fit(ZX_FIT_INTEGER, numtext("9223372036854775807"), &o) == 1 && o.i == INT64_MAX);
    /* and plain int64 values are as before */
    CHECK(fit(ZX_FIT_INTEGER, vint(INT64_MIN), &o) == 1 && o.i == INT64_MIN);
    CHECK(fit(ZX_FIT_REAL, vint(INT64_MAX), &o) == 1 && o.d == 9223372036854775808.0);
}

static void test_beyond_double(void)
{
    zx_fit_out o;
    static const char *const lits[] = {"1e999999", "-1e999999", "1E+400", "-0.5e400",
                                       "1.7976931348623159e308"};
    char big[402];
    memset(big, '7', 400);
    big[400] = '\0';
    for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
        zx_value v = numtext(lits[i]);
        CHECK(fit(ZX_FIT_INTEGER, v, &o) == 0);
        CHECK(fit(ZX_FIT_REAL, v, &o) == 0);
        CHECK(fit(ZX_FIT_JSON, v, &o) == 0);
        CHECK(fit(ZX_FIT_ANY, v, &o) == 0);
        CHECK(fit(ZX_FIT_BOOLEAN, v, &o) == 0);
        CHECK(fit(ZX_FIT_TEXT, v, &o) == 1 && o.st == ZX_FIT_S_TEXT &&
              o.len == strlen(lits[i]) && memcmp(o.s, lits[i], o.len) == 0);
    }
    CHECK(strcmp(reason(numtext("1e999999"), ZX_FIT_REAL),
                 "number 1e999999 is out of the range of REAL "
                 "(-1.7976931348623157e+308 to 1.7976931348623157e+308)") == 0);
    CHECK(strcmp(reason(numtext("-1e999999"), ZX_FIT_INTEGER),
                 "number -1e999999 is out of the range of REAL "
                 "(-1.7976931348623157e+308 to 1.7976931348623157e+308)") == 0);
    /* an integer beyond double range: INTEGER says INTEGER, REAL says REAL */
    CHECK(fit(ZX_FIT_REAL, numtext(big), &o) == 0);
    CHECK(fit(ZX_FIT_TEXT, numtext(big), &o) == 1 && o.len == 400);
    CHECK(strncmp(reason(numtext(big), ZX_FIT_INTEGER), "integer 7777", 12) == 0 &&
          strstr(reason(numtext(big), ZX_FIT_INTEGER),
                 "... is above the largest INTEGER (9223372036854775807)") != NULL);
    CHECK(strncmp(reason(numtext(big), ZX_FIT_REAL), "number 7777", 11) == 0 &&
          strstr(reason(numtext(big), ZX_FIT_REAL), "... is out of the range of REAL") != NULL);
    /* the largest double is in range */
    CHECK(fit(ZX_FIT_REAL, numtext("1.7976931348623157e308"), &o) == 1 && o.d == 1.7976931348623157e308);
    /* an underflow is a rounding, not a range error */
    CHECK(fit(ZX_FIT_REAL, numtext("1e-999999"), &o) == 1 && o.d == 0.0);
}

static void test_reals_near_int64_edges(void)
{
    zx_fit_out o;
    /* a real is its nearest double: -2^63 is integral and in range */
    CHECK(fit(ZX_FIT_INTEGER, vreal(-9223372036854775808.0), &o) == 1 && o.i == INT64_MIN);
    CHECK(fit(ZX_FIT_INTEGER, vreal(9223372036854775808.0), &o) == 0);
    CHECK(fit(ZX_FIT_INTEGER, vreal(nextafter(-9223372036854775808.0, -INFINITY)), &o) == 0);
    CHECK(fit(ZX_FIT_INTEGER, vreal(9223372036854774784.0), &o) == 1 &&
          o.i == INT64_C(9223372036854774784));
    CHECK(fit(ZX_FIT_INTEGER, vreal(INFINITY), &o) == 0);
    CHECK(fit(ZX_FIT_INTEGER, vreal(-INFINITY), &o) == 0);
    CHECK(fit(ZX_FIT_INTEGER, vreal(NAN), &o) == 0);
    CHECK(fit(ZX_FIT_INTEGER, vreal(2.5), &o) == 0);
}

static void test_not_numbers(void)
{
    zx_fit_out o;
    /* JSON text that merely starts like a number (a hostile frame) is JSON */
    zx_value v = numtext("12abc");
    CHECK(fit(ZX_FIT_INTEGER, v, &o) == 0);
    CHECK(fit(ZX_FIT_REAL, v, &o) == 0);
    CHECK(fit(ZX_FIT_JSON, v, &o) == 1 && o.len == 5);
    CHECK(strcmp(reason(v, ZX_FIT_INTEGER), "value 12abc (json) does not fit column c (integer)") == 0);
    v = numtext("01");
    CHECK(fit(ZX_FIT_INTEGER, v, &o) == 0);
    /* nested JSON is unchanged */
    v = numtext("{\"a\":1e999999}");
    CHECK(!zx_value_is_number_text(&v));
    CHECK(fit(ZX_FIT_JSON, v, &o) == 1);
    CHECK(fit(ZX_FIT_REAL, v, &o) == 0);
    /* type names and column types of numbers kept as text */
    v = numtext("-9223372036854775809");
    CHECK(strcmp(zx_value_type_name(&v), "integer") == 0 && zx_value_column_type(&v) == ZX_T_REAL);
    v = numtext("1e999999");
    CHECK(strcmp(zx_value_type_name(&v), "real") == 0 && zx_value_column_type(&v) == ZX_T_REAL);
    v = numtext("[1]");
    CHECK(strcmp(zx_value_type_name(&v), "json") == 0 && zx_value_column_type(&v) == ZX_T_JSON);
}

int main(void)
{
    test_integers_beyond_int64();
    test_beyond_double();
    test_reals_near_int64_edges();
    test_not_numbers();
    zx_buf_free(&buf);
    if (failures) {
        printf("test_fit: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_fit: all checks passed\n");
    return 0;
}
