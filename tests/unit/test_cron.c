/*
 * test_cron.c — unit tests of common/cron.c: the grammar (numbers, names,
 * ranges, steps, lists, macros, blanks) and every error message; next,
 * prev and last_due across minute, hour, day, month and year boundaries,
 * leap years, Vixie's day-of-month / day-of-week rule, schedules that
 * never fire and the ends of the supported range (1970-9999).
 *
 * Then a cross-check: a few thousand random valid expressions, generated
 * together with the sets they stand for, are parsed and compared with
 * those sets, and zx_cron_next / zx_cron_prev / zx_cron_last_due are
 * compared with a naive search from random times in 1970-2100.  The naive
 * search walks a broken-down date of its own minute by minute (skipping
 * only days and hours that cannot match) and converts dates to
 * microseconds by summing the days of each year, so that it shares no
 * arithmetic with the module.  Fixed seed.
 *
 * It must never depend on the TZ variable, the locale or the clock.
 */
#include "common/cron.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_US INT64_C(60000000)

/* ---- a naive calendar of its own ------------------------------------- */

static int leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int mdays(int y, int m)
{
    static const int n[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : n[m];
}

/* Days since 1970-01-01 by counting (y >= 1970). */
static int64_t naive_days(int y, int m, int d)
{
    int64_t days = 0;
    for (int i = 1970; i < y; i++)
        days += leap(i) ? 366 : 365;
    for (int i = 1; i < m; i++)
        days += mdays(y, i);
    return days + d - 1;
}

static int64_t ts(int y, int mo, int d, int h, int mi)
{
    return ((naive_days(y, mo, d) * 24 + h) * 60 + mi) * MIN_US;
}

/* ---- helpers ----------------------------------------------------------- */

static zx_cron parse_ok(const char *expr, int line)
{
    zx_cron c;
    char err[256] = "";
    memset(&c, 0, sizeof(c));
    if (zx_cron_parse(expr, &c, err, sizeof(err)) != 0) {
        printf("test_cron.c:%d: \"%s\" rejected: %s\n", line, expr, err);
        failures++;
    }
    return c;
}

#define PARSE(expr) parse_ok((expr), __LINE__)

/* expr must be rejected with exactly msg, leaving *out unchanged. */
#define BAD(expr, msg) do {                                                  \
        zx_cron c_;                                                          \
        memset(&c_, 0xab, sizeof(c_));                                       \
        char e_[256] = "";                                                   \
        int r_ = zx_cron_parse((expr), &c_, e_, sizeof(e_));                 \
        unsigned char *b_ = (unsigned char *)&c_;                            \
        int same_ = 1;                                                       \
        for (size_t i_ = 0; i_ < sizeof(c_); i_++)                           \
            same_ &= b_[i_] == 0xab;                                         \
        if (r_ != -1 || strcmp(e_, (msg)) || !same_) {                       \
            printf("%s:%d: \"%s\": got %d \"%s\", want -1 \"%s\"%s\n",      \
                   __FILE__, __LINE__, (expr) ? (const char *)(expr) : "NULL", \
                   r_, e_, (msg), same_ ? "" : " (out changed)");           \
            failures++;                                                      \
        }                                                                    \
    } while (0)

static void eq_time(int64_t got, int64_t want, const char *what, int line)
{
    if (got != want) {
        printf("test_cron.c:%d: %s: got %lld, want %lld\n", line, what, (long long)got,
               (long long)want);
        failures++;
    }
}

static int64_t next_of(const char *expr, int64_t from, int line)
{
    zx_cron c = parse_ok(expr, line);
    return zx_cron_next(&c, from);
}

static int64_t prev_of(const char *expr, int64_t from, int line)
{
    zx_cron c = parse_ok(expr, line);
    return zx_cron_prev(&c, from);
}

static int never_of(const char *expr, int line)
{
    zx_cron c = parse_ok(expr, line);
    return zx_cron_never(&c);
}

#define NEXT(expr, from, want) \
    eq_time(next_of((expr), (from), __LINE__), (want), "next of " expr, __LINE__)
#define PREV(expr, from, want) \
    eq_time(prev_of((expr), (from), __LINE__), (want), "prev of " expr, __LINE__)
#define NEVER(expr) never_of((expr), __LINE__)

/* ---- exact cases ------------------------------------------------------- */

static void test_grammar(void)
{
    zx_cron c = PARSE("* * * * *");
    CHECK(c.minutes == (UINT64_C(1) << 60) - 1);
    CHECK(c.hours == (1u << 24) - 1);
    CHECK(c.mdays == 0xfffffffeu);
    CHECK(c.months == 0x1ffe);
    CHECK(c.wdays == 0x7f);
    CHECK(c.flags == (ZX_CRON_MDAY_STAR | ZX_CRON_WDAY_STAR));

    c = PARSE("1-10/3 */6 1/10 */5 1/2");
    CHECK(c.minutes == (1u << 1 | 1u << 4 | 1u << 7 | 1u << 10));
    CHECK(c.hours == (1u | 1u << 6 | 1u << 12 | 1u << 18));
    CHECK(c.mdays == (1u << 1 | 1u << 11 | 1u << 21 | 1u << 31));
    CHECK(c.months == (1u << 1 | 1u << 6 | 1u << 11));
    CHECK(c.wdays == (1u << 1 | 1u << 3 | 1u << 5 | 1u)); /* 7 = Sunday */
    CHECK(c.flags == 0);

    c = PARSE("5/20 0,12,23 31 2-3,11-12 */7");
    CHECK(c.minutes == (UINT64_C(1) << 5 | UINT64_C(1) << 25 | UINT64_C(1) << 45));
    CHECK(c.hours == (1u | 1u << 12 | 1u << 23));
    CHECK(c.mdays == 1u << 31);
    CHECK(c.months == (1u << 2 | 1u << 3 | 1u << 11 | 1u << 12));
    CHECK(c.wdays == 1u);
    CHECK(c.flags == ZX_CRON_WDAY_STAR);

    /* names, any case; 0 and 7 are Sunday; FRI-SUN wraps to 7 */
    c = PARSE("0 0 * jan,Jul,DEC mon-fri");
    CHECK(c.months == (1u << 1 | 1u << 7 | 1u << 12));
    CHECK(c.wdays == 0x3e);
    CHECK(c.flags == ZX_CRON_MDAY_STAR);
    CHECK(PARSE("0 0 * * 7").wdays == 1);
    CHECK(PARSE("0 0 * * 0,7").wdays == 1);
    CHECK(PARSE("0 0 * * sun").wdays == 1);
    CHECK(PARSE("0 0 * * SUN-SUN").wdays == 1);
    CHECK(PARSE("0 0 * * 5-7").wdays == (1u << 5 | 1u << 6 | 1u));
    CHECK(PARSE("0 0 * * FRI-SUN").wdays == (1u << 5 | 1u << 6 | 1u));
    CHECK(PARSE("0 0 * * sat,Sun").wdays == (1u << 6 | 1u));
    CHECK(PARSE("0 0 * * 0-7").wdays == 0x7f);
    CHECK(PARSE("0 0 * * MON-SAT/2").wdays == (1u << 1 | 1u << 3 | 1u << 5));
    CHECK(PARSE("0 0 * FEB/3 *").months == (1u << 2 | 1u << 5 | 1u << 8 | 1u << 11));
    CHECK(PARSE("00 09 01 01 *").hours == 1u << 9);
    CHECK(PARSE("0 0 * * */2").wdays == (1u | 1u << 2 | 1u << 4 | 1u << 6));
    CHECK(PARSE("*/59 * * * *").minutes == (1u | UINT64_C(1) << 59));
    CHECK(PARSE("0-59/30,7 * * * *").minutes == (1u | UINT64_C(1) << 30 | 1u << 7));
    CHECK(PARSE("* * * * *,1").flags == (ZX_CRON_MDAY_STAR | ZX_CRON_WDAY_STAR));
    CHECK(PARSE("* * 1,* * 1").flags == 0);
    CHECK(PARSE("* * */2 * 1").flags == ZX_CRON_MDAY_STAR);

    /* blanks: spaces and tabs, several, leading and trailing */
    zx_cron a = PARSE("\t 1  2\t3 4 5 \t"), b = PARSE("1 2 3 4 5");
    CHECK(memcmp(&a, &b, sizeof(a)) == 0);

    /* macros */
    static const char *const mac[][2] = {
        {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
        {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
        {"@hourly", "0 * * * *"}, {"  @Daily\t", "0 0 * * *"}, {"@HOURLY", "0 * * * *"},
    };
    for (size_t i = 0; i < sizeof(mac) / sizeof(mac[0]); i++) {
        a = PARSE(mac[i][0]);
        b = PARSE(mac[i][1]);
        CHECK(memcmp(&a, &b, sizeof(a)) == 0);
    }
}

static void test_errors(void)
{
    BAD("", "empty schedule (expected 5 fields: minute hour day-of-month month day-of-week)");
    BAD(" \t ", "empty schedule (expected 5 fields: minute hour day-of-month month "
                "day-of-week)");
    BAD(NULL, "empty schedule (expected 5 fields: minute hour day-of-month month "
              "day-of-week)");
    BAD("* * * *", "expected 5 fields, found 4");
    BAD("* * * * * *", "expected 5 fields, found 6");
    BAD("0 0 * * * /bin/true", "expected 5 fields, found 6");
    BAD("60 * * * *", "field 1 (minute): 60 is out of range 0-59");
    BAD("0 24 * * *", "field 2 (hour): 24 is out of range 0-23");
    BAD("0 0 0 * *", "field 3 (day of month): 0 is out of range 1-31");
    BAD("0 0 32 * *", "field 3 (day of month): 32 is out of range 1-31");
    BAD("0 0 * 0 *", "field 4 (month): 0 is out of range 1-12");
    BAD("0 0 * 13 *", "field 4 (month): 13 is out of range 1-12");
    BAD("0 0 * * 8", "field 5 (day of week): 8 is out of range 0-7");
    BAD("99999999999999999999 * * * *",
        "field 1 (minute): 99999999999999999999 is out of range 0-59");
    BAD("1-60 * * * *", "field 1 (minute): 60 is out of range 0-59");
    BAD("0 0 */0 * *", "field 3 (day of month): step 0 is out of range 1-31");
    BAD("*/60 * * * *", "field 1 (minute): step 60 is out of range 1-59");
    BAD("0 */24 * * *", "field 2 (hour): step 24 is out of range 1-23");
    BAD("0 0 * 1-12/13 *", "field 4 (month): step 13 is out of range 1-12");
    BAD("0 0 * * 1/8", "field 5 (day of week): step 8 is out of range 1-7");
    BAD("0 0 * * */99999999999", "field 5 (day of week): step 99999999999 is out of range 1-7");
    BAD("*/x * * * *", "field 1 (minute): step must be a number, found \"x\"");
    BAD("0 0 * * */MON", "field 5 (day of week): step must be a number, found \"MON\"");
    BAD("*/ * * * *", "field 1 (minute): missing the step after '/'");
    BAD("*/,5 * * * *", "field 1 (minute): missing the step after '/'");
    BAD("*/-5 * * * *", "field 1 (minute): unexpected '-' in \"*/-5\"");
    BAD("1- * * * *", "field 1 (minute): missing the end of the range after '-'");
    BAD("1-,2 * * * *", "field 1 (minute): missing the end of the range after '-'");
    BAD("10-5 * * * *", "field 1 (minute): range 10-5 goes backwards");
    BAD("1,10-5/2 * * * *", "field 1 (minute): range 10-5 goes backwards");
    BAD("0 0 * DEC-JAN *", "field 4 (month): range DEC-JAN goes backwards");
    BAD("0 0 * * SAT-MON", "field 5 (day of week): range SAT-MON goes backwards");
    BAD("0 0 * * 5-0", "field 5 (day of week): range 5-0 goes backwards");
    BAD("0 0 * FOO *", "field 4 (month): unknown name \"FOO\" (use JAN-DEC)");
    BAD("0 0 * * MONDAY", "field 5 (day of week): unknown name \"MONDAY\" (use SUN-SAT)");
    BAD("0 0 * JAN-mon *", "field 4 (month): unknown name \"mon\" (use JAN-DEC)");
    BAD("0 0 MON * *", "field 3 (day of month): expected a number, found \"MON\"");
    BAD("a * * * *", "field 1 (minute): expected a number, found \"a\"");
    BAD("0 0 * 1a *", "field 4 (month): expected a number or a name, found \"1a\"");
    BAD("1,,2 * * * *", "field 1 (minute): empty list item in \"1,,2\"");
    BAD("1, * * * *", "field 1 (minute): empty list item in \"1,\"");
    BAD(",1 * * * *", "field 1 (minute): empty list item in \",1\"");
    BAD("1:30 * * * *", "field 1 (minute): unexpected ':' in \"1:30\"");
    BAD("*-5 * * * *", "field 1 (minute): unexpected '-' in \"*-5\"");
    BAD("*5 * * * *", "field 1 (minute): unexpected '5' in \"*5\"");
    BAD("** * * * *", "field 1 (minute): unexpected '*' in \"**\"");
    BAD("1-2-3 * * * *", "field 1 (minute): unexpected '-' in \"1-2-3\"");
    BAD("1/2/3 * * * *", "field 1 (minute): unexpected '/' in \"1/2/3\"");
    BAD("-5 * * * *", "field 1 (minute): unexpected '-' in \"-5\"");
    BAD("0 0 ? * *", "field 3 (day of month): unexpected '?' in \"?\"");
    BAD("0 0 L * *", "field 3 (day of month): expected a number, found \"L\"");
    BAD("0\n0 * * *", "expected 5 fields, found 4");
    BAD("0 0\n * * *", "field 2 (hour): unexpected '?' in \"0?\"");
    BAD("0 0 * * 1#2", "field 5 (day of week): unexpected '#' in \"1#2\"");
    BAD("0 @daily * * *", "field 2 (hour): unexpected '@' in \"@daily\"");
    BAD("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,x * * * *",
        "field 1 (minute): expected a number, found \"x\"");
    BAD("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20:21 * * * *",
        "field 1 (minute): unexpected ':' in \"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,1...\"");
    BAD("@reboot", "unknown macro \"@reboot\" (use @yearly, @annually, @monthly, @weekly, "
                   "@daily, @midnight or @hourly)");
    BAD("@", "unknown macro \"@\" (use @yearly, @annually, @monthly, @weekly, "
             "@daily, @midnight or @hourly)");
    BAD("@dailyx", "unknown macro \"@dailyx\" (use @yearly, @annually, @monthly, @weekly, "
                   "@daily, @midnight or @hourly)");
    BAD("@dail", "unknown macro \"@dail\" (use @yearly, @annually, @monthly, @weekly, "
                 "@daily, @midnight or @hourly)");
    BAD("@daily 0", "expected nothing after @daily, found \"0\"");
    BAD("@hourly @daily", "expected nothing after @hourly, found \"@daily\"");

    /* err NULL, errlen 0 and short buffers are fine; truncated, terminated */
    zx_cron c;
    CHECK(zx_cron_parse("61 * * * *", &c, NULL, 0) == -1);
    char e[12];
    memset(e, 'x', sizeof(e));
    CHECK(zx_cron_parse("61 * * * *", &c, e, 0) == -1 && e[0] == 'x');
    CHECK(zx_cron_parse("61 * * * *", &c, e, sizeof(e)) == -1 && strcmp(e, "field 1 (mi") == 0);
    CHECK(zx_cron_parse("61 * * * *", &c, e, 1) == -1 && e[0] == '\0');
    CHECK(zx_cron_parse("* * * *", &c, e, 5) == -1 && strcmp(e, "expe") == 0);
}

static void test_next(void)
{
    /* strictly after, on whole minutes */
    NEXT("*/15 * * * *", ts(2026, 3, 1, 10, 7) + 30000000, ts(2026, 3, 1, 10, 15));
    NEXT("*/15 * * * *", ts(2026, 3, 1, 10, 15), ts(2026, 3, 1, 10, 30));
    NEXT("*/15 * * * *", ts(2026, 3, 1, 10, 15) - 1, ts(2026, 3, 1, 10, 15));
    NEXT("*/15 * * * *", ts(2026, 3, 1, 10, 15) + 1, ts(2026, 3, 1, 10, 30));
    NEXT("*/15 * * * *", ts(2026, 3, 1, 23, 50), ts(2026, 3, 2, 0, 0));
    NEXT("* * * * *", ts(2026, 3, 1, 23, 59), ts(2026, 3, 2, 0, 0));
    NEXT("30 * * * *", ts(2026, 3, 1, 10, 31), ts(2026, 3, 1, 11, 30));
    NEXT("5 4 * * *", ts(2026, 3, 1, 4, 6), ts(2026, 3, 2, 4, 5));
    NEXT("5 4,5 * * *", ts(2026, 3, 1, 4, 6), ts(2026, 3, 1, 5, 5));
    NEXT("5-6 4,5 * * *", ts(2026, 3, 1, 5, 6), ts(2026, 3, 2, 4, 5));

    /* month and year boundaries */
    NEXT("0 0 1 * *", ts(2026, 12, 31, 23, 59), ts(2027, 1, 1, 0, 0));
    NEXT("0 0 31 * *", ts(2026, 4, 1, 0, 0), ts(2026, 5, 31, 0, 0));
    NEXT("0 0 31 * *", ts(2026, 5, 31, 0, 0), ts(2026, 7, 31, 0, 0));
    NEXT("59 23 31 12 *", ts(2026, 12, 31, 23, 59), ts(2027, 12, 31, 23, 59));
    NEXT("@yearly", ts(2026, 6, 15, 12, 0), ts(2027, 1, 1, 0, 0));
    NEXT("@monthly", ts(2026, 1, 31, 12, 0), ts(2026, 2, 1, 0, 0));
    NEXT("0 12 * JUL *", ts(2026, 7, 31, 12, 0), ts(2027, 7, 1, 12, 0));

    /* leap years */
    NEXT("0 0 29 2 *", ts(2026, 1, 1, 0, 0), ts(2028, 2, 29, 0, 0));
    NEXT("0 0 29 2 *", ts(2028, 2, 29, 0, 0), ts(2032, 2, 29, 0, 0));
    NEXT("0 0 29 2 *", ts(2096, 3, 1, 0, 0), ts(2104, 2, 29, 0, 0)); /* 2100 is not */
    NEXT("0 0 29 2 *", ts(1996, 3, 1, 0, 0), ts(2000, 2, 29, 0, 0)); /* 2000 is */
    NEXT("0 0 * 2 *", ts(2028, 2, 28, 12, 0), ts(2028, 2, 29, 0, 0));
    NEXT("0 0 * 2 *", ts(2027, 2, 28, 12, 0), ts(2028, 2, 1, 0, 0));
    NEXT("0 0 28-31 2 *", ts(2027, 2, 28, 12, 0), ts(2028, 2, 28, 0, 0));
    NEXT("0 0 1 3 *", ts(2028, 2, 28, 12, 0), ts(2028, 3, 1, 0, 0));
    /* Feb 29 that is a Sunday (AND rule, *\/7 starts with '*'): 2004, 2032 */
    NEXT("0 0 29 2 */7", ts(2004, 3, 1, 0, 0), ts(2032, 2, 29, 0, 0));

    /* day of month / day of week: OR when both restricted (2026-02-01 is a
     * Sunday; Fridays 6, 13, 20, 27) */
    NEXT("0 12 13 * FRI", ts(2026, 2, 1, 0, 0), ts(2026, 2, 6, 12, 0));
    NEXT("0 12 13 * FRI", ts(2026, 2, 6, 12, 0), ts(2026, 2, 13, 12, 0));
    NEXT("0 12 13 * FRI", ts(2026, 2, 13, 12, 0), ts(2026, 2, 20, 12, 0));
    NEXT("0 12 14 * 5", ts(2026, 2, 13, 12, 0), ts(2026, 2, 14, 12, 0));
    NEXT("0 0 13 * *", ts(2026, 2, 1, 0, 0), ts(2026, 2, 13, 0, 0));
    NEXT("0 0 * * MON", ts(2026, 2, 1, 0, 0), ts(2026, 2, 2, 0, 0));
    NEXT("0 0 * * 0", ts(2026, 2, 1, 0, 0), ts(2026, 2, 8, 0, 0));
    NEXT("0 0 * * 7", ts(2026, 2, 1, 0, 0), ts(2026, 2, 8, 0, 0));
    NEXT("@weekly", ts(2026, 2, 1, 0, 0), ts(2026, 2, 8, 0, 0));
    NEXT("0 0 1-7 * MON", ts(2026, 2, 1, 0, 0), ts(2026, 2, 2, 0, 0));
    NEXT("0 0 1-7 * MON", ts(2026, 2, 7, 0, 0), ts(2026, 2, 9, 0, 0));
    /* AND when one starts with '*': odd days that are Mondays: 9, 23 */
    NEXT("0 0 */2 * MON", ts(2026, 2, 1, 0, 0), ts(2026, 2, 9, 0, 0));
    NEXT("0 0 */2 * MON", ts(2026, 2, 9, 0, 0), ts(2026, 2, 23, 0, 0));
    NEXT("0 0 13 * */7", ts(2026, 1, 1, 0, 0), ts(2026, 9, 13, 0, 0));

    /* never, fast */
    zx_cron c = PARSE("0 0 30 2 *");
    clock_t t0 = clock();
    for (int i = 0; i < 1000; i++)
        CHECK(zx_cron_next(&c, ts(2026, 1, 1, 0, 0) + i) == -1);
    double ms = (double)(clock() - t0) * 1000.0 / CLOCKS_PER_SEC;
    printf("1000 x next(\"0 0 30 2 *\") = -1: %.1f ms\n", ms);
    CHECK(ms < 2000);
    CHECK(zx_cron_never(&c));
    CHECK(zx_cron_prev(&c, ts(2026, 1, 1, 0, 0)) == -1);
    CHECK(NEVER("0 0 31 4,6,9,11 *"));
    CHECK(NEVER("0 0 30-31 2 */2"));
    CHECK(!NEVER("0 0 30-31 2 MON")); /* OR: Mondays */
    CHECK(!NEVER("0 0 29 2 SUN"));
    CHECK(!NEVER("0 0 31 1-12/2 *"));
    CHECK(!NEVER("0 0 29 2 */7"));

    /* the ends: 1970-01-01T00:00Z to 9999-12-31T23:59Z */
    NEXT("* * * * *", -1, 0);
    NEXT("* * * * *", INT64_MIN, 0);
    NEXT("1 * * * *", -1, MIN_US);
    NEXT("* * * * *", 0, MIN_US);
    NEXT("* * * * *", INT64_MAX, -1);
    NEXT("* * * * *", ts(9999, 12, 31, 23, 58), ts(9999, 12, 31, 23, 59));
    NEXT("* * * * *", ts(9999, 12, 31, 23, 59), -1);
    NEXT("0 0 29 2 *", ts(9996, 2, 29, 0, 0), -1);
    PREV("* * * * *", 0, -1);
    PREV("* * * * *", 1, 0);
    PREV("* * * * *", INT64_MIN, -1);
    PREV("* * * * *", INT64_MAX, ts(9999, 12, 31, 23, 59));
    PREV("0 0 29 2 *", INT64_MAX, ts(9996, 2, 29, 0, 0));
    PREV("0 0 1 1 *", ts(1970, 1, 1, 0, 0) + 1, 0);
    PREV("1 0 1 1 *", ts(1970, 1, 1, 0, 1), -1);
}

static void test_prev_last_due(void)
{
    PREV("*/15 * * * *", ts(2026, 3, 1, 10, 15), ts(2026, 3, 1, 10, 0));
    PREV("*/15 * * * *", ts(2026, 3, 1, 10, 15) + 1, ts(2026, 3, 1, 10, 15));
    PREV("*/15 * * * *", ts(2026, 3, 1, 0, 0), ts(2026, 2, 28, 23, 45));
    PREV("0 0 1 * *", ts(2027, 1, 1, 0, 0), ts(2026, 12, 1, 0, 0));
    PREV("0 0 31 * *", ts(2026, 7, 1, 0, 0), ts(2026, 5, 31, 0, 0));
    PREV("0 0 29 2 *", ts(2104, 1, 1, 0, 0), ts(2096, 2, 29, 0, 0));
    PREV("0 0 29 2 *", ts(2028, 2, 29, 0, 0), ts(2024, 2, 29, 0, 0));
    PREV("0 12 13 * FRI", ts(2026, 2, 20, 12, 0), ts(2026, 2, 13, 12, 0));
    PREV("0 12 13 * FRI", ts(2026, 2, 13, 12, 0), ts(2026, 2, 6, 12, 0));
    PREV("0 0 */2 * MON", ts(2026, 2, 23, 0, 0), ts(2026, 2, 9, 0, 0));
    PREV("5-6 4,5 * * *", ts(2026, 3, 2, 4, 5), ts(2026, 3, 1, 5, 6));
    PREV("5-6 4,5 * * *", ts(2026, 3, 1, 5, 5), ts(2026, 3, 1, 4, 6));

    zx_cron c = PARSE("0 3 * * *");
    /* zxd was down from the 1st to the 4th: the run of the 4th, once */
    CHECK(zx_cron_last_due(&c, ts(2026, 3, 1, 3, 0), ts(2026, 3, 4, 10, 0)) ==
          ts(2026, 3, 4, 3, 0));
    CHECK(zx_cron_last_due(&c, ts(2026, 3, 4, 3, 0), ts(2026, 3, 4, 10, 0)) == -1);
    CHECK(zx_cron_last_due(&c, ts(2026, 3, 3, 3, 0), ts(2026, 3, 4, 3, 0)) ==
          ts(2026, 3, 4, 3, 0));
    CHECK(zx_cron_last_due(&c, ts(2026, 3, 3, 3, 0), ts(2026, 3, 4, 3, 0) - 1) == -1);
    CHECK(zx_cron_last_due(&c, ts(2026, 3, 3, 3, 0) - 1, ts(2026, 3, 4, 3, 0) - 1) ==
          ts(2026, 3, 3, 3, 0));
    CHECK(zx_cron_last_due(&c, ts(2026, 3, 4, 10, 0), ts(2026, 3, 4, 10, 0)) == -1);
    CHECK(zx_cron_last_due(&c, ts(2026, 3, 5, 10, 0), ts(2026, 3, 4, 10, 0)) == -1);
    CHECK(zx_cron_last_due(&c, INT64_MIN, INT64_MAX) == ts(9999, 12, 31, 3, 0));
    CHECK(zx_cron_last_due(&c, INT64_MIN, 0) == -1);
    c = PARSE("0 0 29 2 *");
    CHECK(zx_cron_last_due(&c, ts(2090, 1, 1, 0, 0), ts(2103, 1, 1, 0, 0)) ==
          ts(2096, 2, 29, 0, 0));
    CHECK(zx_cron_last_due(&c, ts(2097, 1, 1, 0, 0), ts(2103, 1, 1, 0, 0)) == -1);
    c = PARSE("0 0 30 2 *");
    CHECK(zx_cron_last_due(&c, 0, ts(2026, 1, 1, 0, 0)) == -1);
}

/* ---- random cross-check ------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t rnd(uint32_t n) /* 0..n-1 */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static const char *const mon_nm[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                     "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const dow_nm[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

/* Appends v to s, as a name (random case) when the field has names and
 * the dice say so. */
static void put_value(char *s, int field, unsigned v, int name)
{
    char w[8];
    if (name && (field == 3 || field == 4)) {
        const char *n = field == 3 ? mon_nm[v - 1] : dow_nm[v % 7];
        for (int i = 0; i < 3; i++)
            w[i] = rnd(2) ? (char)(n[i] - 'a' + 'A') : n[i];
        w[3] = '\0';
    } else {
        snprintf(w, sizeof(w), rnd(8) ? "%u" : "0%u", v);
    }
    strcat(s, w);
}

/* Writes a random valid field into s and returns its set of values. */
static uint64_t gen_field(char *s, int field, unsigned lo, unsigned hi)
{
    uint64_t set = 0;
    s[0] = '\0';
    int items = 1 + (int)rnd(rnd(3) ? 1 : 4);
    for (int it = 0; it < items; it++) {
        if (it)
            strcat(s, ",");
        unsigned a, b, step = 1, k = rnd(field == 4 ? 8 : 7);
        int name = rnd(2);
        char w[16];
        if (k == 0 || k == 1) { /* '*' or '*' + step */
            a = lo, b = hi;
            strcat(s, "*");
            if (k == 1) {
                step = 1 + rnd(hi);
                snprintf(w, sizeof(w), "/%u", step);
                strcat(s, w);
            }
        } else if (k == 2 || k == 3) { /* N */
            a = b = lo + rnd(hi - lo + 1);
            put_value(s, field, a, name);
        } else if (k == 7) { /* day of week ending on SUN as a name */
            a = 1 + rnd(6), b = 7;
            put_value(s, field, a, 1);
            strcat(s, "-");
            put_value(s, field, 0, 1);
        } else { /* N-M, N-M/S or N/S */
            a = lo + rnd(hi - lo + 1);
            b = a + rnd(hi - a + 1);
            put_value(s, field, a, name && a != 7); /* SUN is 0 */
            if (k == 6) {
                b = hi;
            } else {
                strcat(s, "-");
                if (field == 4 && b == 7 && name)
                    put_value(s, field, 7, 0); /* "7": the name SUN is 0 */
                else
                    put_value(s, field, b, name && !(field == 4 && b == 0 && a == 0));
            }
            if (k != 4) {
                step = 1 + rnd(hi);
                snprintf(w, sizeof(w), "/%u", step);
                strcat(s, w);
            }
        }
        for (unsigned v = a; v <= b; v += step)
            set |= UINT64_C(1) << v;
    }
    return set;
}

typedef struct {
    uint64_t f[5]; /* minutes, hours, mdays, months, wdays (0-6) */
    int star_m, star_w;
} model;

typedef struct {
    int y, mo, d, h, mi, wd;
} bdt;

static int day_ok(const model *m, const bdt *t)
{
    if (!(m->f[3] >> t->mo & 1))
        return 0;
    int md = (int)(m->f[2] >> t->d & 1), wd = (int)(m->f[4] >> t->wd & 1);
    return m->star_m || m->star_w ? md && wd : md || wd;
}

static void day_fwd(bdt *t)
{
    t->h = 0, t->mi = 0, t->wd = (t->wd + 1) % 7;
    if (++t->d > mdays(t->y, t->mo)) {
        t->d = 1;
        if (++t->mo > 12)
            t->mo = 1, t->y++;
    }
}

static void day_back(bdt *t)
{
    t->h = 23, t->mi = 59, t->wd = (t->wd + 6) % 7;
    if (--t->d < 1) {
        if (--t->mo < 1)
            t->mo = 12, t->y--;
        t->d = mdays(t->y, t->mo);
    }
}

static int64_t bdt_us(const bdt *t)
{
    return ts(t->y, t->mo, t->d, t->h, t->mi);
}

/* The first matching minute at or after t, walking minute by minute
 * (whole days and hours skipped when they cannot match), -1 after 9999. */
static int64_t naive_next(const model *m, bdt t)
{
    int64_t steps = 0;
    while (t.y <= 9999 && steps++ < 146097 + 2) {
        if (day_ok(m, &t)) {
            for (; t.h < 24; t.h++, t.mi = 0) {
                if (!(m->f[1] >> t.h & 1))
                    continue;
                for (; t.mi < 60; t.mi++)
                    if (m->f[0] >> t.mi & 1)
                        return bdt_us(&t);
            }
        }
        day_fwd(&t);
    }
    return -1;
}

/* The last matching minute at or before t, -1 before 1970. */
static int64_t naive_prev(const model *m, bdt t)
{
    int64_t steps = 0;
    while (t.y >= 1970 && steps++ < 146097 + 2) {
        if (day_ok(m, &t)) {
            for (; t.h >= 0; t.h--, t.mi = 59) {
                if (!(m->f[1] >> t.h & 1))
                    continue;
                for (; t.mi >= 0; t.mi--)
                    if (m->f[0] >> t.mi & 1)
                        return bdt_us(&t);
            }
        }
        day_back(&t);
    }
    return -1;
}

static void test_random(void)
{
    static const unsigned lo[5] = {0, 0, 1, 1, 0}, hi[5] = {59, 23, 31, 12, 7};
    const int n = 4000;
    int fired = 0, checked = 0;
    for (int i = 0; i < n; i++) {
        char f[5][200], expr[1100] = "";
        model m;
        for (int k = 0; k < 5; k++) {
            /* days sparse now and then: rarely firing schedules too */
            m.f[k] = gen_field(f[k], k, lo[k], hi[k]);
            if (k)
                strcat(expr, rnd(4) ? " " : " \t ");
            strcat(expr, f[k]);
        }
        m.f[4] = (m.f[4] | m.f[4] >> 7) & 0x7f;
        m.star_m = f[2][0] == '*', m.star_w = f[4][0] == '*';
        zx_cron c;
        char err[256];
        if (zx_cron_parse(expr, &c, err, sizeof(err)) != 0) {
            printf("random: \"%s\" rejected: %s\n", expr, err);
            failures++;
            continue;
        }
        if (c.minutes != m.f[0] || c.hours != m.f[1] || c.mdays != m.f[2] ||
            c.months != m.f[3] || c.wdays != m.f[4] ||
            c.flags != ((m.star_m ? ZX_CRON_MDAY_STAR : 0) | (m.star_w ? ZX_CRON_WDAY_STAR : 0))) {
            printf("random: \"%s\" parsed to other sets\n", expr);
            failures++;
            continue;
        }
        for (int j = 0; j < 3; j++) {
            bdt t;
            t.y = 1970 + (int)rnd(131);
            t.mo = 1 + (int)rnd(12);
            t.d = 1 + (int)rnd((uint32_t)mdays(t.y, t.mo));
            t.h = (int)rnd(24);
            t.mi = (int)rnd(60);
            t.wd = (int)((naive_days(t.y, t.mo, t.d) + 4) % 7);
            int64_t at = bdt_us(&t), off = rnd(4) ? (int64_t)rnd(60000000) : 0;
            /* next strictly after at + off: from the following minute */
            bdt u = t;
            if (++u.mi == 60) {
                u.mi = 0;
                if (++u.h == 24)
                    day_fwd(&u);
            }
            int64_t want = naive_next(&m, u), got = zx_cron_next(&c, at + off);
            checked++;
            fired += want >= 0;
            if (got != want) {
                printf("random: next(\"%s\", %lld) = %lld, want %lld\n", expr,
                       (long long)(at + off), (long long)got, (long long)want);
                failures++;
            }
            /* prev strictly before at + off: at itself when off > 0 */
            u = t;
            if (off == 0 && --u.mi < 0) {
                u.mi = 59;
                if (--u.h < 0)
                    day_back(&u);
            }
            int64_t pwant = naive_prev(&m, u);
            int64_t pgot = zx_cron_prev(&c, at + off);
            if (pgot != pwant) {
                printf("random: prev(\"%s\", %lld) = %lld, want %lld\n", expr,
                       (long long)(at + off), (long long)pgot, (long long)pwant);
                failures++;
            }
            /* last_due over a random gap ending at at + off */
            int64_t since = at + off - (int64_t)rnd(4000000) * MIN_US / (1 + rnd(1000));
            int64_t last = naive_prev(&m, t); /* at or before at + off */
            int64_t lwant = last > since ? last : -1;
            int64_t lgot = zx_cron_last_due(&c, since, at + off);
            if (lgot != lwant) {
                printf("random: last_due(\"%s\", %lld, %lld) = %lld, want %lld\n", expr,
                       (long long)since, (long long)(at + off), (long long)lgot,
                       (long long)lwant);
                failures++;
            }
        }
    }
    printf("random: %d expressions, %d next/prev/last_due checks, %d fired\n", n, checked,
           fired);
}

int main(void)
{
    test_grammar();
    test_errors();
    test_next();
    test_prev_last_due();
    test_random();
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
