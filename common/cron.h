/*
 * cron.h — 5-field cron schedules ("*\/15 * * * *"), evaluated in UTC.
 *
 * Reverse syncs run on a schedule written as operators know it from Vixie
 * cron / cronie:
 *
 *     minute  hour  day-of-month  month  day-of-week
 *     0-59    0-23  1-31          1-12   0-7 (0 and 7 = Sunday)
 *                                 JAN-DEC  SUN-SAT
 *
 * Fields are separated by spaces or tabs (leading and trailing blanks are
 * allowed); there must be exactly five.  Each field is a comma list of
 *     *      every value            N      one value
 *     N-M    N to M (N <= M)        *\/S   every S-th value from the first
 *     N-M/S  every S-th of N to M   N/S    every S-th from N to the last
 * Names (3 letters, any case) stand for numbers in the month and
 * day-of-week fields only.  A step S is 1 to the field's largest value
 * (1-59, 1-23, 1-31, 1-12, 1-7).  In day of week a range may end on SUN
 * (FRI-SUN = 5-7), and N/S runs to 7 as in cronie (1/2 = MON,WED,FRI,SUN).
 * Macros (whole expression, any case): @yearly and @annually = "0 0 1 1 *",
 * @monthly = "0 0 1 * *", @weekly = "0 0 * * 0", @daily and @midnight =
 * "0 0 * * *", @hourly = "0 * * * *".  @reboot and anything else are
 * rejected.  (In the comments of this module "*\/" stands for "*" "/".)
 *
 * Days (Vixie's rule): when both day fields are restricted (neither starts
 * with '*'), a day matches when EITHER its day of month or its day of week
 * matches; when one of them starts with '*', a day must match both, so
 * that with a plain '*' only the other one counts.  As in cron, "*\/2"
 * starts with '*': "0 0 *\/2 * MON" is odd-numbered days that are Mondays.
 *
 * Time: microseconds since 1970-01-01T00:00:00Z, UTC, proleptic Gregorian;
 * fire times fall on whole minutes.  Only fire times from 1970-01-01T00:00Z
 * to 9999-12-31T23:59Z exist for this module, so every fire time it returns
 * is >= 0 and -1 always means "none".
 *
 * It must never: allocate, depend on the locale, the TZ variable or
 * timegm/localtime, or loop minute by minute.  All functions are
 * thread-safe (no state besides their arguments).
 */
#ifndef ZX_COMMON_CRON_H
#define ZX_COMMON_CRON_H

#include <stddef.h>
#include <stdint.h>

/* zx_cron.flags: the day-of-month / day-of-week field started with '*'. */
#define ZX_CRON_MDAY_STAR 1u
#define ZX_CRON_WDAY_STAR 2u

/* A parsed schedule: one bit per allowed value.  A plain value; copy it
 * freely.  Fill it only with zx_cron_parse. */
typedef struct zx_cron {
    uint64_t minutes; /* bit m: minute m, 0-59 */
    uint32_t hours;   /* bit h: hour h, 0-23 */
    uint32_t mdays;   /* bit d: day of month d, 1-31 */
    uint16_t months;  /* bit m: month m, 1-12 */
    uint8_t wdays;    /* bit w: day of week w, 0 (Sunday)-6; 7 is folded to 0 */
    uint8_t flags;    /* ZX_CRON_MDAY_STAR | ZX_CRON_WDAY_STAR */
} zx_cron;

/* Parses expr (NUL-terminated) into *out.  Returns 0, or -1 with *out
 * unchanged and, when err is not NULL and errlen > 0, a NUL-terminated
 * message in err (truncated to errlen), such as
 *     "expected 5 fields, found 6"
 *     "field 2 (hour): 24 is out of range 0-23"
 *     "field 3 (day of month): step 0 is out of range 1-31"
 *     "field 5 (day of week): unknown name \"FUN\" (use SUN-SAT)"
 * Bytes of expr that are not printable ASCII are shown as '?'.  expr NULL
 * is rejected like "".  A schedule that can never fire ("0 0 30 2 *") is
 * accepted: zx_cron_never tells it. */
int zx_cron_parse(const char *expr, zx_cron *out, char *err, size_t errlen);

/* The first fire time strictly after after_us (any value), or -1 when
 * there is none before the end of 9999.  The search goes month by month
 * and stops after 400 years (the Gregorian calendar repeats, weekdays
 * included, every 400 years), so -1 for a time before 9600 means the
 * schedule never fires.  At most 4801 steps of a few operations each. */
int64_t zx_cron_next(const zx_cron *c, int64_t after_us);

/* The last fire time strictly before before_us (any value), or -1 when
 * there is none since 1970-01-01T00:00Z.  Same search as zx_cron_next,
 * backwards. */
int64_t zx_cron_prev(const zx_cron *c, int64_t before_us);

/* The latest fire time in (since_us, now_us], or -1 when none (also when
 * since_us >= now_us).  For "a run missed while zxd was down runs once":
 * since_us is the last run, now_us the current time. */
int64_t zx_cron_last_due(const zx_cron *c, int64_t since_us, int64_t now_us);

/* 1 when the schedule can never fire (its days do not occur in its
 * months, as in "0 0 30 2 *", "0 0 31 4,6 *" or "0 0 30 2 *\/2"),
 * else 0.  Costs one zx_cron_next. */
int zx_cron_never(const zx_cron *c);

#endif
