/*
 * timefmt.c — RFC 3339 parsing and formatting without libc time zones.
 * See timefmt.h.  Must never call timegm/mktime/localtime or read TZ.
 */
#include "common/timefmt.h"

#include <time.h>

#define US_PER_SEC INT64_C(1000000)
#define US_PER_DAY (INT64_C(86400) * US_PER_SEC)

/* Howard Hinnant's days_from_civil algorithm (public domain description,
 * written out here). */
int64_t zx_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);                        /* [0, 399] */
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;   /* [0, 365] */
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;            /* [0, 146096] */
    return era * 146097 + (int64_t)doe - 719468;
}

void zx_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int is_leap(unsigned y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(unsigned y, unsigned m)
{
    static const unsigned char dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : dim[m - 1];
}

/* Read exactly k digits at s; -1 if any is not a digit. */
static int digits(const char *s, int k)
{
    int v = 0;
    for (int i = 0; i < k; i++) {
        unsigned c = (unsigned char)s[i] - '0';
        if (c > 9)
            return -1;
        v = v * 10 + (int)c;
    }
    return v;
}

int zx_rfc3339_parse(const char *s, size_t n, int64_t *us_utc)
{
    /* shortest: "YYYY-MM-DDTHH:MM:SSZ" = 20 bytes */
    if (n < 20 || n > 64)
        return 0;
    if (s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':')
        return 0;
    if (s[10] != 'T' && s[10] != 't' && s[10] != ' ')
        return 0;
    int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int h = digits(s + 11, 2), mi = digits(s + 14, 2), se = digits(s + 17, 2);
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 ||
        mi > 59 || se < 0 || se > 59)
        return 0;
    if ((unsigned)d > days_in_month((unsigned)y, (unsigned)mo))
        return 0;

    size_t i = 19;
    int64_t frac_us = 0;
    if (s[i] == '.') {
        i++;
        size_t start = i;
        int64_t scale = 100000;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (i - start >= 9)
                return 0;                   /* more than 9 digits */
            frac_us += (s[i] - '0') * scale;
            scale /= 10;                    /* reaches 0 after the 6th digit */
            i++;
        }
        if (i == start)
            return 0;
    }
    if (i >= n)
        return 0;

    int64_t off_min = 0;
    if (s[i] == 'Z' || s[i] == 'z') {
        i++;
    } else if (s[i] == '+' || s[i] == '-') {
        if (n - i != 6 || s[i + 3] != ':')
            return 0;
        int oh = digits(s + i + 1, 2), om = digits(s + i + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return 0;
        off_min = oh * 60 + om;
        if (s[i] == '-')
            off_min = -off_min;
        i += 6;
    } else {
        return 0;
    }
    if (i != n)
        return 0;

    int64_t days = zx_days_from_civil(y, (unsigned)mo, (unsigned)d);
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + se - off_min * 60;
    *us_utc = secs * US_PER_SEC + frac_us;
    return 1;
}

size_t zx_ts_format(int64_t us, char out[ZX_TS_BUFSZ])
{
    /* 0001-01-01 = -719162 days; 9999-12-31 = 2932896 days */
    const int64_t min_us = INT64_C(-719162) * US_PER_DAY;
    const int64_t max_us = INT64_C(2932897) * US_PER_DAY - 1;
    if (us < min_us)
        us = min_us;
    if (us > max_us)
        us = max_us;

    int64_t days = us / US_PER_DAY, rem = us % US_PER_DAY;
    if (rem < 0) {
        rem += US_PER_DAY;
        days--;
    }
    int64_t y;
    unsigned m, d;
    zx_civil_from_days(days, &y, &m, &d);
    unsigned secs = (unsigned)(rem / US_PER_SEC);
    unsigned frac = (unsigned)(rem % US_PER_SEC);
    unsigned vals[] = {(unsigned)y, m, d, secs / 3600, secs / 60 % 60, secs % 60, frac};
    static const unsigned char widths[] = {4, 2, 2, 2, 2, 2, 6};
    static const char seps[] = "--T::.Z";
    char *p = out;
    for (int f = 0; f < 7; f++) {
        for (int k = widths[f] - 1; k >= 0; k--) {
            p[k] = (char)('0' + vals[f] % 10);
            vals[f] /= 10;
        }
        p += widths[f];
        *p++ = seps[f];
    }
    *p = '\0';
    return (size_t)(p - out);
}

int64_t zx_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * US_PER_SEC + ts.tv_nsec / 1000;
}
