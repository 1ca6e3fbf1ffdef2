/*
 * test_numfmt.c — common/numfmt.h against printf and strtod: integers of
 * every width and padding as "%lld" / "%0*llu" print them, and doubles in
 * C99's hexadecimal form as glibc's "%a" prints them, each read back by
 * strtod to the same bits (zeros, subnormals, the largest finite, powers
 * of two, a million random bit patterns); NaN and infinities refused.
 */
#include "common/numfmt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void check_i64(int64_t v)
{
    char a[32], b[32];
    size_t n = zx_fmt_i64(a, v);
    int m = snprintf(b, sizeof(b), "%lld", (long long)v);
    CHECK(n == (size_t)m && memcmp(a, b, n) == 0);
}

static void check_pad(uint64_t v, unsigned w)
{
    char a[32], b[32];
    size_t n = zx_fmt_u64_pad(a, v, w);
    int m = snprintf(b, sizeof(b), "%0*llu", (int)w, (unsigned long long)v);
    CHECK(n == (size_t)m && memcmp(a, b, n) == 0);
}

static void check_double(double d)
{
    char a[ZX_FMT_HEXDOUBLE_MAX + 1], b[64];
    size_t n = zx_fmt_hexdouble(a, d);
    CHECK(n > 0 && n <= ZX_FMT_HEXDOUBLE_MAX);
    a[n] = 0;
    snprintf(b, sizeof(b), "%a", d);
    if (strcmp(a, b) != 0) {
        printf("hexdouble: %s, printf %%a: %s\n", a, b);
        CHECK(0);
    }
    double r = strtod(a, NULL);
    CHECK(memcmp(&r, &d, sizeof(d)) == 0);
}

int main(void)
{
    const int64_t ints[] = { 0, 1, -1, 9, 10, -10, 99, 100, 12345, -98765, INT32_MAX,
                             INT32_MIN, (int64_t)INT32_MAX + 1, INT64_MAX, INT64_MIN,
                             INT64_MIN + 1, 1000000000000000000LL, -999999999999999999LL };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        check_i64(ints[i]);
    for (int i = 0; i < 200000; i++) {
        uint64_t u = next();
        check_i64((int64_t)(u >> (u & 63)));
        check_i64((int64_t)u);
    }
    for (unsigned w = 0; w <= 20; w++) {
        check_pad(0, w);
        check_pad(7, w);
        check_pad(12345, w);
        check_pad(UINT64_MAX, w);
    }
    const double ds[] = { 0.0, -0.0, 1.0, -1.0, 0.5, 3.14, 1e-300, 1e300, 5e-324, -5e-324,
                          2.2250738585072014e-308, 2.2250738585072009e-308, 1.7976931348623157e308,
                          0.1, 1.0 / 3.0, 123456789.125, 1e23 };
    for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
        check_double(ds[i]);
    for (int e = -1074; e <= 1023; e++)
        check_double(ldexp(1.0, e));
    for (int i = 0; i < 1000000; i++) {
        uint64_t u = next();
        double d;
        memcpy(&d, &u, sizeof(d));
        if (isfinite(d))
            check_double(d);
    }
    char out[ZX_FMT_HEXDOUBLE_MAX];
    CHECK(zx_fmt_hexdouble(out, NAN) == 0);
    CHECK(zx_fmt_hexdouble(out, INFINITY) == 0);
    CHECK(zx_fmt_hexdouble(out, -INFINITY) == 0);
    if (failures) {
        printf("test_numfmt: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_numfmt: all checks passed\n");
    return 0;
}
