/*
 * cron.c — 5-field cron schedules: the parser and the search for the next
 * and previous fire times (see cron.h for the grammar and the rules).
 *
 * The search walks month by month.  For one month it builds a 32-bit mask
 * of the days that match (days of month, days of week, Vixie's OR/AND
 * rule), then takes the first (or last) hour and minute allowed.  400
 * years of months is the bound: the Gregorian calendar, weekdays included,
 * repeats every 400 years (146097 days, a multiple of 7).
 *
 * It must never allocate, read the locale, the TZ variable or the system
 * calendar functions: the civil-date arithmetic below is its own.
 */
#include "common/cron.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define US_PER_MIN INT64_C(60000000)
#define LAST_YEAR 9999
#define MAX_MONTHS (400 * 12 + 1)

/* ---- calendar (proleptic Gregorian, years 1970-10000) ---------------- */

static int is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned month_days(int64_t y, unsigned m)
{
    static const unsigned char n[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : n[m];
}

/* Days since 1970-01-01 of y-m-d, y >= 1970.  Counts from 1 March of year
 * 0 (so that the leap day ends a year) and subtracts 1970-01-01's count. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    if (m <= 2)
        y--;
    unsigned mp = m > 2 ? m - 3 : m + 9; /* March = 0 */
    int64_t days = 365 * y + y / 4 - y / 100 + y / 400 + (153 * mp + 2) / 5 + d - 1;
    return days - 719468; /* the same count for 1970-01-01 */
}

/* Inverse of days_from_civil for days >= 0. */
static void civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t z = days + 719468;
    int64_t era = z / 146097;           /* 400-year cycles from 0000-03-01 */
    int64_t doe = z - era * 146097;     /* day of the cycle, 0-146096 */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100); /* from 1 March */
    unsigned mp = (unsigned)((5 * doy + 2) / 153);
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yoe + era * 400 + (*m <= 2);
}

/* Day of week of a day count, 0 = Sunday (1970-01-01 was a Thursday). */
static unsigned weekday(int64_t days)
{
    return (unsigned)((days + 4) % 7);
}

/* ---- the days of one month that match -------------------------------- */

/* Bit d set for each day d of month y-m that the schedule allows; wd1 is
 * the weekday of its first day. */
static uint32_t month_mask(const zx_cron *c, int64_t y, unsigned m, unsigned wd1)
{
    unsigned n = month_days(y, m);
    uint32_t valid = (uint32_t)(((UINT64_C(1) << n) - 1) << 1);
    /* bit j (0-6): day 1 + j's weekday is allowed; repeated every 7 days */
    uint64_t week = 0;
    for (unsigned j = 0; j < 7; j++)
        if (c->wdays >> ((wd1 + j) % 7) & 1)
            week |= UINT64_C(1) << j;
    uint64_t wd = week | week << 7 | week << 14 | week << 21 | week << 28;
    uint32_t by_wday = (uint32_t)(wd << 1) & valid;
    uint32_t by_mday = c->mdays & valid;
    if (c->flags & (ZX_CRON_MDAY_STAR | ZX_CRON_WDAY_STAR))
        return by_mday & by_wday;
    return by_mday | by_wday;
}

static int lowest(uint64_t v)
{
    return __builtin_ctzll(v);
}

static int highest(uint64_t v)
{
    return 63 - __builtin_clzll(v);
}

/* Bits from..63 of v / bits 0..to of v (from, to in 0-63). */
static uint64_t from_bit(uint64_t v, unsigned from)
{
    return v & (~UINT64_C(0) << from);
}

static uint64_t to_bit(uint64_t v, unsigned to)
{
    return to >= 63 ? v : v & ((UINT64_C(1) << (to + 1)) - 1);
}

/* The last minute index (minutes since the epoch) that exists here. */
static int64_t last_minute(void)
{
    return days_from_civil(LAST_YEAR + 1, 1, 1) * 1440 - 1;
}

int64_t zx_cron_next(const zx_cron *c, int64_t after_us)
{
    if (!c->minutes || !c->hours)
        return -1;
    int64_t t = after_us < 0 ? 0 : after_us / US_PER_MIN + 1;
    if (t > last_minute())
        return -1;
    int64_t day = t / 1440, y;
    unsigned h = (unsigned)(t % 1440 / 60), mi = (unsigned)(t % 60), m, d;
    civil_from_days(day, &y, &m, &d);
    int64_t first = day - (d - 1); /* day count of the 1st of the month */
    for (int k = 0; k < MAX_MONTHS && y <= LAST_YEAR; k++) {
        if (c->months >> m & 1) {
            uint32_t days = (uint32_t)from_bit(month_mask(c, y, m, weekday(first)), d);
            for (; days; days &= days - 1) {
                unsigned dd = (unsigned)lowest(days);
                unsigned fh = dd == d ? h : 0, fm = dd == d ? mi : 0;
                uint64_t hs = from_bit(c->hours, fh);
                if (!hs)
                    continue;
                unsigned hh = (unsigned)lowest(hs);
                uint64_t ms = from_bit(c->minutes, hh == fh ? fm : 0);
                if (!ms) {
                    hs &= hs - 1;
                    if (!hs)
                        continue;
                    hh = (unsigned)lowest(hs);
                    ms = c->minutes;
                }
                int64_t when = (first + dd - 1) * 1440 + hh * 60 + lowest(ms);
                return when * US_PER_MIN;
            }
        }
        first += month_days(y, m);
        d = 1, h = 0, mi = 0;
        if (++m > 12)
            m = 1, y++;
    }
    return -1;
}

int64_t zx_cron_prev(const zx_cron *c, int64_t before_us)
{
    if (!c->minutes || !c->hours || before_us <= 0)
        return -1;
    int64_t t = (before_us - 1) / US_PER_MIN;
    if (t > last_minute())
        t = last_minute();
    int64_t day = t / 1440, y;
    unsigned h = (unsigned)(t % 1440 / 60), mi = (unsigned)(t % 60), m, d;
    civil_from_days(day, &y, &m, &d);
    int64_t first = day - (d - 1);
    for (int k = 0; k < MAX_MONTHS && y >= 1970; k++) {
        if (c->months >> m & 1) {
            uint32_t days = (uint32_t)to_bit(month_mask(c, y, m, weekday(first)), d);
            for (; days; days &= ~(UINT32_C(1) << highest(days))) {
                unsigned dd = (unsigned)highest(days);
                unsigned th = dd == d ? h : 23, tm = dd == d ? mi : 59;
                uint64_t hs = to_bit(c->hours, th);
                if (!hs)
                    continue;
                unsigned hh = (unsigned)highest(hs);
                uint64_t ms = to_bit(c->minutes, hh == th ? tm : 59);
                if (!ms) {
                    hs &= ~(UINT64_C(1) << hh);
                    if (!hs)
                        continue;
                    hh = (unsigned)highest(hs);
                    ms = c->minutes;
                }
                int64_t when = (first + dd - 1) * 1440 + hh * 60 + highest(ms);
                return when * US_PER_MIN;
            }
        }
        if (--m < 1)
            m = 12, y--;
        d = month_days(y, m), h = 23, mi = 59;
        first -= d;
    }
    return -1;
}

int64_t zx_cron_last_due(const zx_cron *c, int64_t since_us, int64_t now_us)
{
    if (since_us >= now_us)
        return -1;
    /* fire times are multiples of a minute, never INT64_MAX */
    int64_t p = zx_cron_prev(c, now_us < INT64_MAX ? now_us + 1 : now_us);
    return p > since_us ? p : -1;
}

int zx_cron_never(const zx_cron *c)
{
    return zx_cron_next(c, -1) < 0;
}

/* ---- parser ----------------------------------------------------------- */

static const char *const month_names[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                          "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const wday_names[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

static const struct field {
    const char *name;
    unsigned min, max;
    const char *const *names; /* names[i] stands for min + i; NULL: none */
    unsigned nnames;
    const char *use;          /* hint in the unknown-name message */
} fields[5] = {
    {"minute", 0, 59, NULL, 0, NULL},
    {"hour", 0, 23, NULL, 0, NULL},
    {"day of month", 1, 31, NULL, 0, NULL},
    {"month", 1, 12, month_names, 12, "JAN-DEC"},
    {"day of week", 0, 7, wday_names, 7, "SUN-SAT"},
};

static const struct macro {
    const char *name, *expr;
} macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* Where a parse is and where its message goes. */
typedef struct {
    char *err;
    size_t errlen;
    const struct field *f;
    int fno;                 /* 1-5 */
    const char *text;        /* the field */
    size_t len;
} parse_ctx;

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

static char upper(char ch)
{
    return ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch;
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static int is_alnum(char ch)
{
    return is_digit(ch) || (upper(ch) >= 'A' && upper(ch) <= 'Z');
}

/* s[0..n) fit to quote in a message: at most 40 bytes, others as "...",
 * bytes that are not printable ASCII as '?'. */
static const char *shown(const char *s, size_t n, char buf[48])
{
    size_t k = 0;
    for (; k < n && k < 40; k++)
        buf[k] = s[k] >= 0x20 && s[k] < 0x7f ? s[k] : '?';
    if (k < n)
        memcpy(buf + k, "...", 3), k += 3;
    buf[k] = '\0';
    return buf;
}

/* Writes "field N (name): " (when in a field) and the message; -1. */
static int fail(const parse_ctx *p, const char *fmt, ...)
{
    if (!p->err || p->errlen == 0)
        return -1;
    int n = 0;
    if (p->f)
        n = snprintf(p->err, p->errlen, "field %d (%s): ", p->fno, p->f->name);
    if (n < 0 || (size_t)n >= p->errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int unexpected(const parse_ctx *p, size_t at)
{
    char c[48], f[48];
    return fail(p, "unexpected '%s' in \"%s\"", shown(p->text + at, 1, c),
                shown(p->text, p->len, f));
}

/* Reads a number or name at *at into *v (checked against the field's
 * range).  what: "" at the start of an item, else what the value is for. */
static int read_value(const parse_ctx *p, size_t *at, unsigned *v, const char *what)
{
    size_t s = *at, e = s;
    int digits = 1, letters = 1;
    while (e < p->len && is_alnum(p->text[e])) {
        digits &= is_digit(p->text[e]);
        letters &= !is_digit(p->text[e]);
        e++;
    }
    char tok[48];
    shown(p->text + s, e - s, tok);
    if (e == s) {
        if (s < p->len && p->text[s] != ',')
            return unexpected(p, s);
        return fail(p, "missing %s", what);
    }
    *at = e;
    if (digits) {
        unsigned n = 0;
        for (size_t i = s; i < e && n <= 1000; i++)
            n = n * 10 + (unsigned)(p->text[i] - '0');
        if (n < p->f->min || n > p->f->max)
            return fail(p, "%s is out of range %u-%u", tok, p->f->min, p->f->max);
        *v = n;
        return 0;
    }
    if (!p->f->names)
        return fail(p, "expected a number, found \"%s\"", tok);
    if (!letters)
        return fail(p, "expected a number or a name, found \"%s\"", tok);
    for (unsigned i = 0; e - s == 3 && i < p->f->nnames; i++) {
        const char *nm = p->f->names[i];
        if (upper(p->text[s]) == nm[0] && upper(p->text[s + 1]) == nm[1] &&
            upper(p->text[s + 2]) == nm[2]) {
            *v = p->f->min + i;
            return 0;
        }
    }
    return fail(p, "unknown name \"%s\" (use %s)", tok, p->f->use);
}

/* Reads the step after a '/' at *at. */
static int read_step(const parse_ctx *p, size_t *at, unsigned *step)
{
    size_t s = *at, e = s;
    while (e < p->len && is_alnum(p->text[e]))
        e++;
    char tok[48];
    shown(p->text + s, e - s, tok);
    if (e == s) {
        if (s < p->len && p->text[s] != ',')
            return unexpected(p, s);
        return fail(p, "missing the step after '/'");
    }
    unsigned n = 0;
    for (size_t i = s; i < e; i++) {
        if (!is_digit(p->text[i]))
            return fail(p, "step must be a number, found \"%s\"", tok);
        if (n <= 1000)
            n = n * 10 + (unsigned)(p->text[i] - '0');
    }
    if (n < 1 || n > p->f->max)
        return fail(p, "step %s is out of range 1-%u", tok, p->f->max);
    *at = e;
    *step = n;
    return 0;
}

/* Parses one field into *bits (bit v for each value v allowed). */
static int parse_field(const parse_ctx *p, uint64_t *bits)
{
    const struct field *f = p->f;
    size_t at = 0;
    *bits = 0;
    for (;;) {
        unsigned lo, hi, step = 1;
        size_t item = at;
        if (at == p->len || p->text[at] == ',')
            return fail(p, "empty list item in \"%s\"", shown(p->text, p->len, (char[48]){0}));
        if (p->text[at] == '*') {
            lo = f->min, hi = f->max;
            at++;
            if (at < p->len && p->text[at] == '/') {
                at++;
                if (read_step(p, &at, &step))
                    return -1;
            }
        } else {
            if (read_value(p, &at, &lo, ""))
                return -1;
            hi = lo;
            if (at < p->len && p->text[at] == '-') {
                size_t s = ++at;
                if (read_value(p, &at, &hi, "the end of the range after '-'"))
                    return -1;
                /* FRI-SUN: a day-of-week range may end on Sunday as 7 */
                if (f->names == wday_names && hi == 0 && lo > 0 && !is_digit(p->text[s]))
                    hi = 7;
                if (lo > hi) {
                    char a[48];
                    return fail(p, "range %s goes backwards", shown(p->text + item, at - item, a));
                }
            } else if (at < p->len && p->text[at] == '/') {
                hi = f->max;
            }
            if (at < p->len && p->text[at] == '/') {
                at++;
                if (read_step(p, &at, &step))
                    return -1;
            }
        }
        if (at < p->len && p->text[at] != ',')
            return unexpected(p, at);
        for (unsigned v = lo; v <= hi; v += step)
            *bits |= UINT64_C(1) << v;
        if (at == p->len)
            return 0;
        at++; /* the ',' */
        if (at == p->len)
            return fail(p, "empty list item in \"%s\"", shown(p->text, p->len, (char[48]){0}));
    }
}

int zx_cron_parse(const char *expr, zx_cron *out, char *err, size_t errlen)
{
    parse_ctx p = {.err = err, .errlen = errlen};
    const char *s = expr ? expr : "";
    while (is_blank(*s))
        s++;
    if (*s == '@') {
        size_t n = 0;
        while (s[n] && !is_blank(s[n]))
            n++;
        const char *rest = s + n;
        while (is_blank(*rest))
            rest++;
        char w[48];
        const char *found = NULL;
        for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]) && !found; i++) {
            size_t k = 0;
            while (k < n && macros[i].name[k] && upper(s[k]) == upper(macros[i].name[k]))
                k++;
            if (k == n && !macros[i].name[k])
                found = macros[i].expr;
        }
        if (!found)
            return fail(&p, "unknown macro \"%s\" (use @yearly, @annually, @monthly, "
                            "@weekly, @daily, @midnight or @hourly)", shown(s, n, w));
        if (*rest) {
            char r[48];
            return fail(&p, "expected nothing after %s, found \"%s\"", shown(s, n, w),
                        shown(rest, strlen(rest), r));
        }
        s = found;
    }
    const char *start[5];
    size_t len[5], count = 0;
    while (*s) {
        size_t n = 0;
        while (s[n] && !is_blank(s[n]))
            n++;
        if (count < 5)
            start[count] = s, len[count] = n;
        count++;
        s += n;
        while (is_blank(*s))
            s++;
    }
    if (count == 0)
        return fail(&p, "empty schedule (expected 5 fields: minute hour day-of-month "
                        "month day-of-week)");
    if (count != 5)
        return fail(&p, "expected 5 fields, found %zu", count);
    uint64_t bits[5];
    for (int i = 0; i < 5; i++) {
        p.f = &fields[i];
        p.fno = i + 1;
        p.text = start[i];
        p.len = len[i];
        if (parse_field(&p, &bits[i]))
            return -1;
    }
    zx_cron c = {
        .minutes = bits[0],
        .hours = (uint32_t)bits[1],
        .mdays = (uint32_t)bits[2],
        .months = (uint16_t)bits[3],
        .wdays = (uint8_t)((bits[4] | bits[4] >> 7) & 0x7f),
        .flags = (uint8_t)((start[2][0] == '*' ? ZX_CRON_MDAY_STAR : 0) |
                           (start[4][0] == '*' ? ZX_CRON_WDAY_STAR : 0)),
    };
    *out = c;
    return 0;
}
