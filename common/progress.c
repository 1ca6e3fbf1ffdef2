/*
 * progress.c — rate, time left, share done and the progress line of long
 * work (progress.h).  Pure: it must never read a clock, allocate or
 * divide by zero.
 */
#include "common/progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void zx_rate_reset(zx_rate *r)
{
    memset(r, 0, sizeof(*r));
}

static unsigned slot(const zx_rate *r, unsigned i)
{
    return (r->head + i) % ZX_RATE_SAMPLES;
}

void zx_rate_add(zx_rate *r, int64_t t_us, uint64_t done)
{
    if (r->n > ZX_RATE_SAMPLES || r->head >= ZX_RATE_SAMPLES)
        zx_rate_reset(r);   /* damaged: start again */
    if (r->n) {
        unsigned last = slot(r, r->n - 1);
        if (t_us < r->t_us[last] || done < r->done[last]) {
            zx_rate_reset(r);
        } else if (t_us == r->t_us[last]) {
            r->done[last] = done;
            return;
        }
    }
    if (r->n == ZX_RATE_SAMPLES) {
        r->head = (r->head + 1) % ZX_RATE_SAMPLES;
        r->n--;
    }
    unsigned at = slot(r, r->n);
    r->t_us[at] = t_us;
    r->done[at] = done;
    r->n++;
    /* drop what is older than the window, keeping the newest of those as
     * its start */
    while (r->n > 2 && t_us - r->t_us[slot(r, 1)] >= ZX_RATE_WINDOW_US) {
        r->head = (r->head + 1) % ZX_RATE_SAMPLES;
        r->n--;
    }
}

double zx_rate_get(const zx_rate *r)
{
    if (r->n < 2 || r->n > ZX_RATE_SAMPLES || r->head >= ZX_RATE_SAMPLES)
        return 0;
    unsigned a = slot(r, 0), b = slot(r, r->n - 1);
    if (r->t_us[b] <= r->t_us[a] || r->done[b] < r->done[a])
        return 0;
    return (double)(r->done[b] - r->done[a]) * 1e6 / (double)(r->t_us[b] - r->t_us[a]);
}

int zx_progress_eta(uint64_t done, uint64_t expected, double rate, double *eta_s)
{
    if (!expected || done > expected)
        return -1;
    if (done == expected) {
        *eta_s = 0;
        return 0;
    }
    if (!(rate > 0) || !isfinite(rate))
        return -1;
    *eta_s = (double)(expected - done) / rate;
    return isfinite(*eta_s) ? 0 : -1;
}

int zx_progress_percent(uint64_t done, uint64_t expected)
{
    if (!expected)
        return -1;
    if (done >= expected)
        return done == expected ? 100 : 99;
    /* done < expected: done / (expected / 100) may overflow nothing */
    double p = (double)done * 100.0 / (double)expected;
    int pi = (int)p;
    return pi > 100 ? 100 : pi < 0 ? 0 : pi;
}

char *zx_progress_count(uint64_t n, char *buf, size_t cap)
{
    char d[24];
    int nd = snprintf(d, sizeof(d), "%llu", (unsigned long long)n);
    char out[32];
    size_t o = 0;
    for (int i = 0; i < nd; i++) {
        if (i && (nd - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = d[i];
    }
    out[o] = '\0';
    if (cap)
        snprintf(buf, cap, "%s", out);
    return buf;
}

/* Append to buf at *len (cap bytes), cut to fit. */
static void add(char *buf, size_t cap, size_t *len, const char *fmt, const char *a,
                const char *b)
{
    if (*len + 1 >= cap)
        return;
    int n = snprintf(buf + *len, cap - *len, fmt, a, b);
    if (n > 0)
        *len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

size_t zx_progress_line(char *buf, size_t cap, const char *what, uint64_t done,
                        uint64_t expected, int exact, double rate, double eta_s)
{
    if (!cap)
        return 0;
    buf[0] = '\0';
    size_t len = 0;
    char a[32], b[32];
    add(buf, cap, &len, "%s %s", what && *what ? what : "working",
        zx_progress_count(done, a, sizeof(a)));
    if (expected) {
        add(buf, cap, &len, " of %s%s rows", exact ? "" : "~",
            zx_progress_count(expected, b, sizeof(b)));
        snprintf(a, sizeof(a), "%d", zx_progress_percent(done, expected));
        add(buf, cap, &len, " (%s%%)%s", a, "");
    } else {
        add(buf, cap, &len, " rows%s%s", "", "");
    }
    if (rate > 0 && isfinite(rate) && rate < 1e18) {
        add(buf, cap, &len, ", %s rows/s%s", zx_progress_count((uint64_t)(rate + 0.5), a,
                                                              sizeof(a)), "");
    }
    if (eta_s >= 0 && isfinite(eta_s) && eta_s < 1e12) {
        snprintf(a, sizeof(a), "%.0f", ceil(eta_s));
        add(buf, cap, &len, ", ~%s s left%s", a, "");
    }
    return len;
}
