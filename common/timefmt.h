/*
 * timefmt.h — RFC 3339 timestamps <-> microseconds since the Unix epoch, UTC.
 *
 * Used to recognise timestamp strings in incoming data and to print every
 * timestamp zx writes.  It must never depend on the locale, the TZ variable
 * or timegm/mktime: the civil-date arithmetic is done here.  All functions
 * are thread-safe and never allocate.
 */
#ifndef ZX_COMMON_TIMEFMT_H
#define ZX_COMMON_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/* Room for "YYYY-MM-DDTHH:MM:SS.ffffffZ" plus NUL (28), rounded up. */
#define ZX_TS_BUFSZ 32

/* Parse exactly the n bytes at s as an RFC 3339 date-time:
 *     YYYY-MM-DD{T|t| }HH:MM:SS[.F+]{Z|z|+HH:MM|-HH:MM}
 * - year 0001-9999, month 01-12, day within the month (leap years by the
 *   Gregorian rule), hour 00-23, minute 00-59, second 00-59;
 * - a leap second (second 60) is REJECTED (returns 0): zx stores instants,
 *   and accepting 60 would silently move the event;
 * - the fraction has 1 to 9 digits; digits beyond the sixth are truncated
 *   (not rounded) to microseconds;
 * - the offset is -23:59..+23:59 (hours 00-23, minutes 00-59);
 * - no leading/trailing blanks, nothing before or after.
 * On success stores the instant in *us_utc (microseconds since
 * 1970-01-01T00:00:00Z, negative before) and returns 1; otherwise returns 0
 * and leaves *us_utc unchanged.  s may be NULL when n == 0. */
int zx_rfc3339_parse(const char *s, size_t n, int64_t *us_utc);

/* Format `us` (microseconds since the epoch, UTC) as
 * "YYYY-MM-DDTHH:MM:SS.ffffffZ" (always 6 fraction digits, always 'Z') into
 * out, NUL-terminated.  Returns the length (27).  Instants before
 * 0001-01-01T00:00:00Z or after 9999-12-31T23:59:59.999999Z are clamped to
 * those bounds. */
size_t zx_ts_format(int64_t us, char out[ZX_TS_BUFSZ]);

/* Current time from CLOCK_REALTIME in microseconds since the epoch. */
int64_t zx_now_us(void);

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d (m 1-12,
 * d 1-31; no range check).  Exposed for tests and other modules. */
int64_t zx_days_from_civil(int64_t y, unsigned m, unsigned d);

/* The proleptic Gregorian date (*y, *m 1-12, *d 1-31) of day z since
 * 1970-01-01 (the inverse of zx_days_from_civil; no range check). */
void zx_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

#endif
