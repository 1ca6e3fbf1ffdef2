/*
 * fuzz_cron.c — fuzz target for the cron schedule parser and search
 * (common/cron.h), which read the `schedule:` of a reverse sync from the
 * configuration file.
 *
 * Input: any bytes, taken as an expression (up to the first NUL).  The
 * parser must answer 0, or -1 with a printable message, leaving the
 * output as it was; on 0 every set is non-empty and within its field.  When it parses, from a few times (1970, the input's own bits,
 * around 2026, near 9999, negative and the int64 ends):
 *   - next is -1 or on a whole minute, strictly after the time, >= 0;
 *   - next from (next - 1 µs) gives next again, prev from next + 1 µs
 *     gives next back, and no fire time lies between the time and next;
 *   - prev is -1 or on a whole minute, strictly before the time, with no
 *     fire time between it and the time;
 *   - last_due(since, now) agrees with next and prev;
 *   - never <=> next from before 1970 is -1.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds: corpus/cron/.
 * Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cron.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MIN_US INT64_C(60000000)

static void check_at(const zx_cron *c, int64_t at)
{
    int64_t n = zx_cron_next(c, at);
    fuzz_check(n == -1 || (n >= 0 && n % MIN_US == 0), "next: not -1 nor a whole minute");
    if (n >= 0) {
        fuzz_check(n > at, "next: not strictly after");
        fuzz_check(zx_cron_next(c, n - 1) == n, "next from next - 1us is not next");
        fuzz_check(zx_cron_prev(c, n + 1) == n, "prev from next + 1us is not next");
        int64_t p = zx_cron_prev(c, n);
        fuzz_check(p == -1 || (p >= 0 && p < n && p % MIN_US == 0), "prev from next");
        fuzz_check(p == -1 || zx_cron_next(c, p) == n, "next of prev of next is not next");
        fuzz_check(p == -1 || p <= at, "a fire time between at and next");
        fuzz_check(zx_cron_last_due(c, at, n) == n, "last_due(at, next) is not next");
        fuzz_check(zx_cron_last_due(c, at, n - 1) == -1, "last_due before next");
    }
    int64_t p = zx_cron_prev(c, at);
    fuzz_check(p == -1 || (p >= 0 && p < at && p % MIN_US == 0), "prev: not before or not -1");
    if (p >= 0) {
        int64_t q = zx_cron_next(c, p);
        fuzz_check(q == -1 || q >= at, "a fire time between prev and at");
        int64_t due = at % MIN_US == 0 && zx_cron_prev(c, at + 1) == at ? at : p;
        fuzz_check(zx_cron_last_due(c, p - 1, at) == due, "last_due does not agree with prev");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    zx_cron c, before;
    memset(&c, 0x5a, sizeof(c));
    before = c;
    char err[128];
    err[0] = '\0';
    int r = zx_cron_parse(s, &c, err, sizeof(err));
    fuzz_check(r == 0 || r == -1, "parse: neither 0 nor -1");
    if (r == -1) {
        fuzz_check(err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL,
                   "parse: -1 without a message");
        for (const char *e = err; *e; e++)
            fuzz_check(*e >= 0x20 && *e < 0x7f, "parse: a message byte not printable");
        fuzz_check(memcmp(&c, &before, sizeof(c)) == 0, "parse: -1 changed the output");
        free(s);
        return 0;
    }
    fuzz_check(c.minutes && !(c.minutes >> 60) && c.hours && !(c.hours >> 24) &&
               c.mdays && !(c.mdays & 1) && c.months && !(c.months & 0xe001) &&
               c.wdays && !(c.wdays & 0x80), "parse: a set out of its field's range");
    int64_t bits = 0;
    memcpy(&bits, data, size < sizeof(bits) ? size : sizeof(bits));
    const int64_t times[] = {
        INT64_MIN, -1, 0, 1, MIN_US - 1, MIN_US,
        INT64_C(1767225600000000) + 59999999,      /* 2026-01-01T00:00:59.999999Z */
        INT64_C(1772323200000000) - 1,             /* 2026-03-01 minus 1 us */
        INT64_C(4107542400000000),                 /* 2100-03-01 */
        INT64_C(253402300740000000) - 1,           /* 9999-12-31T23:59Z minus 1 us */
        INT64_C(253402300740000000),
        INT64_MAX,
        bits,
        (int64_t)((uint64_t)bits % UINT64_C(4102444800000000)), /* 1970-2100 */
    };
    for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
        check_at(&c, times[i]);
    fuzz_check(zx_cron_never(&c) == (zx_cron_next(&c, -1) == -1), "never disagrees with next");
    free(s);
    return 0;
}
