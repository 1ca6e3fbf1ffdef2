/*
 * test_progress.c — the arithmetic of work in progress (common/progress.h):
 * the rate over the window, a clock that goes backwards, a count that
 * goes down, no division by zero, the time left and the share done when
 * the expected total is unknown, reached or passed, and the line.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "common/progress.h"

#define S 1000000LL   /* µs in a second */

int main(void)
{
    zx_rate r;
    zx_rate_reset(&r);
    CHECK(zx_rate_get(&r) == 0);                  /* no sample */
    zx_rate_add(&r, 10 * S, 100);
    CHECK(zx_rate_get(&r) == 0);                  /* one sample */
    zx_rate_add(&r, 10 * S, 200);                 /* same time: replaced */
    CHECK(r.n == 1 && zx_rate_get(&r) == 0);
    zx_rate_add(&r, 11 * S, 1200);
    CHECK(fabs(zx_rate_get(&r) - 1000.0) < 1e-9);

    /* steady 1000 rows/s for 20 s, then 5000 rows/s: the rate follows
     * within the window (~5 s), not the average since the start */
    zx_rate_reset(&r);
    uint64_t done = 0;
    int64_t t = 0;
    for (int i = 0; i < 200; i++) {
        t += S / 10;
        done += 100;
        zx_rate_add(&r, t, done);
    }
    CHECK(fabs(zx_rate_get(&r) - 1000.0) < 1e-6);
    CHECK(r.t_us[(r.head + r.n - 1) % ZX_RATE_SAMPLES] - r.t_us[r.head] <= ZX_RATE_WINDOW_US + S);
    for (int i = 0; i < 60; i++) {
        t += S / 10;
        done += 500;
        zx_rate_add(&r, t, done);
    }
    CHECK(fabs(zx_rate_get(&r) - 5000.0) < 1e-6);
    CHECK(r.n <= ZX_RATE_SAMPLES);

    /* the clock goes backwards: start again from that sample, never a
     * negative or huge rate */
    zx_rate_add(&r, t - 3 * S, done + 10);
    CHECK(r.n == 1 && zx_rate_get(&r) == 0);
    zx_rate_add(&r, t - 2 * S, done + 510);
    CHECK(fabs(zx_rate_get(&r) - 500.0) < 1e-6);
    /* the count goes down (new work): start again */
    zx_rate_add(&r, t, 5);
    CHECK(r.n == 1 && zx_rate_get(&r) == 0);
    /* no progress: 0 rows/s, not NaN */
    zx_rate_reset(&r);
    zx_rate_add(&r, S, 7);
    zx_rate_add(&r, 2 * S, 7);
    CHECK(zx_rate_get(&r) == 0);
    /* sparse samples (a worker that updates every 8 s): two are kept */
    zx_rate_reset(&r);
    zx_rate_add(&r, 0, 0);
    zx_rate_add(&r, 8 * S, 800);
    zx_rate_add(&r, 16 * S, 2400);
    CHECK(r.n == 2 && fabs(zx_rate_get(&r) - 200.0) < 1e-6);
    /* a damaged struct is reset, not read out of bounds */
    r.head = 1000;
    CHECK(zx_rate_get(&r) == 0);
    zx_rate_add(&r, S, 1);
    CHECK(r.n == 1 && r.head == 0);

    /* time left */
    double eta = -5;
    CHECK(zx_progress_eta(100, 0, 10, &eta) == -1);          /* expected unknown */
    CHECK(zx_progress_eta(100, 1000, 0, &eta) == -1);        /* no rate */
    CHECK(zx_progress_eta(100, 1000, -3, &eta) == -1);
    CHECK(zx_progress_eta(100, 1000, NAN, &eta) == -1);
    CHECK(zx_progress_eta(100, 1000, INFINITY, &eta) == -1);
    CHECK(zx_progress_eta(2000, 1000, 10, &eta) == -1);      /* expected < done */
    CHECK(zx_progress_eta(1000, 1000, 0, &eta) == 0 && eta == 0);
    CHECK(zx_progress_eta(100, 1000, 10, &eta) == 0 && fabs(eta - 90) < 1e-9);
    CHECK(zx_progress_eta(0, UINT64_MAX, 1e-300, &eta) == -1);   /* not finite */

    /* share done */
    CHECK(zx_progress_percent(5, 0) == -1);
    CHECK(zx_progress_percent(0, 10) == 0);
    CHECK(zx_progress_percent(1200000, 5000000) == 24);
    CHECK(zx_progress_percent(10, 10) == 100);
    CHECK(zx_progress_percent(11, 10) == 99);
    CHECK(zx_progress_percent(UINT64_MAX - 1, UINT64_MAX) <= 100);
    CHECK(zx_progress_percent(UINT64_MAX, 1) == 99);

    char b[160];
    CHECK(!strcmp(zx_progress_count(0, b, sizeof(b)), "0"));
    CHECK(!strcmp(zx_progress_count(999, b, sizeof(b)), "999"));
    CHECK(!strcmp(zx_progress_count(1000, b, sizeof(b)), "1,000"));
    CHECK(!strcmp(zx_progress_count(1200000, b, sizeof(b)), "1,200,000"));
    CHECK(!strcmp(zx_progress_count(UINT64_MAX, b, sizeof(b)), "18,446,744,073,709,551,615"));

    zx_progress_line(b, sizeof(b), "copying public.orders", 1200000, 5000000, 0, 121000, 30.2);
    CHECK(!strcmp(b, "copying public.orders 1,200,000 of ~5,000,000 rows (24%), "
                     "121,000 rows/s, ~31 s left"));
    zx_progress_line(b, sizeof(b), "sending", 10, 40, 1, 0, -1);
    CHECK(!strcmp(b, "sending 10 of 40 rows (25%)"));
    zx_progress_line(b, sizeof(b), "reading", 10, 0, 0, 2.4, -1);
    CHECK(!strcmp(b, "reading 10 rows, 2 rows/s"));
    zx_progress_line(b, sizeof(b), NULL, 0, 0, 0, NAN, NAN);
    CHECK(!strcmp(b, "working 0 rows"));
    /* cut to fit, always terminated */
    char small[12];
    size_t n = zx_progress_line(small, sizeof(small), "copying public.orders", 1, 2, 0, 3, 4);
    CHECK(n == strlen(small) && n < sizeof(small));
    CHECK(zx_progress_line(small, 0, "x", 1, 2, 0, 3, 4) == 0);
    return failures != 0;
}
