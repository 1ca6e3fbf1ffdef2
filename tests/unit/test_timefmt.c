/*
 * test_timefmt.c — RFC 3339 parsing and formatting (common/timefmt.h).
 * Must not depend on timing or on TZ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"

#include "tests/unit/check.h"

static void ok_is(int line, const char *s, int64_t want)
{
    int64_t us = 12345;
    int rc = zx_rfc3339_parse(s, strlen(s), &us);
    if (rc != 1 || us != want) {
        printf("%s:%d: parse(\"%s\") = %d, %lld; want 1, %lld\n", __FILE__, line, s,
               rc, (long long)us, (long long)want);
        failures++;
    }
}

static void bad(int line, const char *s)
{
    int64_t us = 777;
    int rc = zx_rfc3339_parse(s, strlen(s), &us);
    if (rc != 0 || us != 777) {
        printf("%s:%d: parse(\"%s\") accepted (%lld), want rejected\n", __FILE__, line,
               s, (long long)us);
        failures++;
    }
}

static void fmt_is(int line, int64_t us, const char *want)
{
    char out[ZX_TS_BUFSZ];
    size_t n = zx_ts_format(us, out);
    if (n != strlen(want) || strcmp(out, want) != 0) {
        printf("%s:%d: format(%lld) = \"%s\", want \"%s\"\n", __FILE__, line,
               (long long)us, out, want);
        failures++;
    }
}

#define OK(s, want) ok_is(__LINE__, (s), (want))
#define BAD(s) bad(__LINE__, (s))
#define FMT(us, want) fmt_is(__LINE__, (us), (want))

int main(void)
{
    setenv("TZ", "America/New_York", 1);   /* must make no difference */

    OK("1970-01-01T00:00:00Z", 0);
    OK("1970-01-01t00:00:00z", 0);
    OK("1970-01-01 00:00:00Z", 0);
    OK("1970-01-01T00:00:01Z", 1000000);
    OK("1969-12-31T23:59:59Z", -1000000);
    OK("2026-11-29T18:09:25.123456Z", INT64_C(1795975765123456));
    OK("2026-11-29T18:09:25.1Z", INT64_C(1795975765100000));
    OK("2026-11-29T18:09:25.123456789Z", INT64_C(1795975765123456)); /* truncated */
    OK("2026-11-29T18:09:25.999999999Z", INT64_C(1795975765999999));
    OK("2026-11-29T19:09:25.123456+01:00", INT64_C(1795975765123456));
    OK("2026-11-29T13:39:25.123456-04:30", INT64_C(1795975765123456));
    OK("2026-11-30T18:08:25.123456+23:59", INT64_C(1795975765123456));
    OK("2000-02-29T00:00:00Z", INT64_C(951782400000000));
    OK("2024-02-29T12:00:00Z", INT64_C(1709208000000000));
    OK("0001-01-01T00:00:00Z", INT64_C(-62135596800000000));
    OK("9999-12-31T23:59:59.999999Z", INT64_C(253402300799999999));
    OK("1900-03-01T00:00:00Z", INT64_C(-2203891200000000));

    BAD("");
    BAD("2026-11-29");
    BAD("2026-11-29T18:09:25");           /* no offset */
    BAD("2026-11-29T18:09Z");
    BAD("2026-11-29T18:09:25.Z");         /* empty fraction */
    BAD("2026-11-29T18:09:25.1234567890Z"); /* 10 digits */
    BAD("2026-11-29T18:09:25,1Z");
    BAD("2026-11-29X18:09:25Z");
    BAD(" 2026-11-29T18:09:25Z");
    BAD("2026-11-29T18:09:25Z ");
    BAD("2026-11-29T18:09:25+0100");
    BAD("2026-11-29T18:09:25+01");
    BAD("2026-11-29T18:09:25+24:00");
    BAD("2026-11-29T18:09:25+01:60");
    BAD("0000-01-01T00:00:00Z");
    BAD("2026-00-10T00:00:00Z");
    BAD("2026-13-10T00:00:00Z");
    BAD("2026-01-00T00:00:00Z");
    BAD("2026-01-32T00:00:00Z");
    BAD("2026-04-31T00:00:00Z");
    BAD("2023-02-29T00:00:00Z");          /* not a leap year */
    BAD("1900-02-29T00:00:00Z");          /* century, not leap */
    BAD("2026-11-29T24:00:00Z");
    BAD("2026-11-29T23:60:00Z");
    BAD("2016-12-31T23:59:60Z");          /* leap second: rejected */
    BAD("2026-1-29T18:09:25Z");
    BAD("2026-11-29T18:09:25ZZ");
    BAD("+026-11-29T18:09:25Z");
    BAD("2026-11-29T18:09:2aZ");
    BAD("hello world, not a time");
    /* n is honoured: a valid prefix followed by more bytes, and a cut one */
    {
        int64_t us = 5;
        const char *s = "1970-01-01T00:00:00Zjunk";
        CHECK(zx_rfc3339_parse(s, 20, &us) == 1 && us == 0);
        CHECK(zx_rfc3339_parse(s, 19, &us) == 0);
        CHECK(zx_rfc3339_parse(NULL, 0, &us) == 0);
    }

    FMT(0, "1970-01-01T00:00:00.000000Z");
    FMT(1, "1970-01-01T00:00:00.000001Z");
    FMT(-1, "1969-12-31T23:59:59.999999Z");
    FMT(INT64_C(1795975765123456), "2026-11-29T18:09:25.123456Z");
    FMT(INT64_C(951782400000000), "2000-02-29T00:00:00.000000Z");
    FMT(INT64_C(-62135596800000000), "0001-01-01T00:00:00.000000Z");
    FMT(INT64_C(253402300799999999), "9999-12-31T23:59:59.999999Z");
    FMT(INT64_MIN, "0001-01-01T00:00:00.000000Z");      /* clamped */
    FMT(INT64_MAX, "9999-12-31T23:59:59.999999Z");      /* clamped */

    /* round trip over a spread of instants, including before 1970 */
    for (int64_t us = INT64_C(-62135596800000000); us < INT64_C(253402300799999999);
         us += INT64_C(9876543210987)) {
        char buf[ZX_TS_BUFSZ];
        int64_t back = 0;
        size_t n = zx_ts_format(us, buf);
        CHECK(n == 27);
        CHECK(zx_rfc3339_parse(buf, n, &back) == 1);
        if (back != us) {
            printf("%s:%d: round trip %lld -> %s -> %lld\n", __FILE__, __LINE__,
                   (long long)us, buf, (long long)back);
            failures++;
            break;
        }
    }
    /* every day of 1999-2001 against a day counter */
    {
        int64_t day = zx_days_from_civil(1999, 1, 1);
        for (int y = 1999; y <= 2001; y++)
            for (int m = 1; m <= 12; m++)
                for (int d = 1; d <= 31; d++) {
                    char s[32];
                    int64_t us;
                    snprintf(s, sizeof(s), "%04d-%02d-%02dT00:00:00Z", y, m, d);
                    if (zx_rfc3339_parse(s, strlen(s), &us)) {
                        CHECK(us == day * INT64_C(86400000000));
                        day++;
                    }
                }
        CHECK(day == zx_days_from_civil(2002, 1, 1));
        CHECK(zx_days_from_civil(2002, 1, 1) - zx_days_from_civil(1999, 1, 1) ==
              365 * 3 + 1);
    }
    CHECK(zx_days_from_civil(1970, 1, 1) == 0);
    CHECK(zx_now_us() > INT64_C(1700000000000000));

    if (failures)
        printf("test_timefmt: %d failure(s)\n", failures);
    else
        printf("test_timefmt: all checks passed\n");
    return failures ? 1 : 0;
}
