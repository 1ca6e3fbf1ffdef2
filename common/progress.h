/*
 * progress.h — the arithmetic of long work in progress (a sync run, the
 * CDC initial copy, a backfill): the rate over the last few seconds, the
 * time left, the share done, and the one line that says all of it
 * ("copying public.orders 1,200,000 of ~5,000,000 rows (24%), 121,000
 * rows/s, ~31 s left").  The numbers come from the segment's progress
 * slot (common/segment.h, zx_seg_progress); the supervisor keeps a
 * zx_rate per pipeline, and zxctl prints the line.
 *
 * Pure: no clock is read here (callers pass the time), no allocation, no
 * I/O.  It must never divide by zero or trust its inputs: a clock that
 * goes backwards, a count that goes down (new work), an expected total
 * the work already passed are all handled (tests/unit/test_progress.c).
 */
#ifndef ZX_COMMON_PROGRESS_H
#define ZX_COMMON_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#define ZX_RATE_SAMPLES 64            /* samples kept (the tick is 100 ms) */
#define ZX_RATE_WINDOW_US 5000000     /* the rate is over about this long */

/* Samples (time, rows done) of one piece of work, oldest first in a ring.
 * Zeroed (zx_rate_reset) means none. */
typedef struct zx_rate {
    int64_t t_us[ZX_RATE_SAMPLES];
    uint64_t done[ZX_RATE_SAMPLES];
    unsigned head, n;                 /* oldest sample, how many */
} zx_rate;

/* Forget every sample. */
void zx_rate_reset(zx_rate *r);

/* Add a sample: `done` rows at t_us (any clock, µs).  A time before the
 * last sample's (the clock went backwards) or a count below its (new
 * work) starts the samples again from this one; the same time replaces
 * the last sample's count.  Samples older than the window are dropped,
 * but for the newest of them (the window's start). */
void zx_rate_add(zx_rate *r, int64_t t_us, uint64_t done);

/* Rows per second between the window's first and last samples; 0 with
 * fewer than two samples or no time between them.  Never negative. */
double zx_rate_get(const zx_rate *r);

/* Seconds left to reach `expected` at `rate` rows/s: 0 and *eta_s set,
 * or -1 when unknown (expected 0 = unknown, rate not above 0 or not
 * finite, done already past expected: the estimate was wrong).  done ==
 * expected: 0 s. */
int zx_progress_eta(uint64_t done, uint64_t expected, double rate, double *eta_s);

/* Share done in percent, 0..100 (done past expected: 99, the estimate
 * was low and the work is not over), or -1 when expected is 0
 * (unknown).  No overflow for any inputs. */
int zx_progress_percent(uint64_t done, uint64_t expected);

/* n with thousands separators ("1,200,000") into buf (cap bytes; 27 hold
 * any uint64_t).  Returns buf. */
char *zx_progress_count(uint64_t n, char *buf, size_t cap);

/* The progress line into buf (cap bytes, always NUL-terminated, cut to
 * fit): "<what> <done> of [~]<expected> rows (<pct>%), <rate> rows/s,
 * ~<eta> s left"; without expected "<what> <done> rows, <rate> rows/s";
 * the rate only when above 0, the time left only when eta_s >= 0.
 * exact: expected is exact (no '~').  what NULL: "working".  Returns
 * strlen(buf). */
size_t zx_progress_line(char *buf, size_t cap, const char *what, uint64_t done,
                        uint64_t expected, int exact, double rate, double eta_s);

#endif
