/*
 * values.c — parsing and printing of configuration values: sizes with
 * units, durations with units, unsigned integers, and "host:port" listen
 * addresses (zx_cf_split_listen).
 *
 * Pure string functions: it must never read the YAML tree, report an error
 * itself, or see an option's resolved secret value in a message (callers
 * format messages, options.c decides what may be shown).
 */
#define ZX_CONF_INTERNAL
#include "conf/values.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Unsigned decimal at *s; advances *s past every digit.  -1 when no
 * digit, ZX_CF_TOO_BIG beyond 2^64 - 1 (checked before each step). */
int zx_cf_parse_u64(const char **s, uint64_t *out)
{
    uint64_t v = 0;
    int big = 0;
    const char *p = *s;

    if (!isdigit((unsigned char)*p))
        return -1;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (big || v > (UINT64_MAX - d) / 10)
            big = 1;
        else
            v = v * 10 + d;
    }
    *s = p;
    if (big)
        return ZX_CF_TOO_BIG;
    *out = v;
    return 0;
}

typedef struct unit { const char *u; uint64_t m; } unit;

/* v times the multiplier of the unit spelt s (compared without case when
 * nocase); `big`: the digits already overflowed (v is meaningless).  0,
 * -1 for an unknown unit, ZX_CF_TOO_BIG when the product (or the digits)
 * exceed 2^64 - 1. */
static int scale(uint64_t v, int big, const char *s, const unit *units, size_t n,
                 int nocase, uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        if (nocase ? !strcasecmp(s, units[i].u) : !strcmp(s, units[i].u)) {
            if (big || v > UINT64_MAX / units[i].m)
                return ZX_CF_TOO_BIG;
            *out = v * units[i].m;
            return 0;
        }
    }
    return -1;
}

int zx_cf_parse_size(const char *s, uint64_t *out)
{
    static const unit units[] = {
        {"", 1}, {"b", 1}, {"kib", KiB}, {"mib", MiB}, {"gib", GiB},
        {"tib", 1024 * GiB}, {"kb", 1000ull}, {"mb", 1000000ull},
        {"gb", 1000000000ull}, {"tb", 1000000000000ull},
    };
    uint64_t v = 0;
    int r = zx_cf_parse_u64(&s, &v);

    if (r == -1)
        return -1;
    while (*s == ' ')
        s++;
    return scale(v, r == ZX_CF_TOO_BIG, s, units, sizeof(units) / sizeof(units[0]), 1,
                 out);
}

/* Returns 0 ok, -1 malformed, -2 a bare non-zero number (no unit). */
int zx_cf_parse_duration(const char *s, uint64_t *ms)
{
    static const unit units[] = {
        {"ms", 1}, {"s", SEC}, {"m", MIN}, {"h", HOUR},
    };
    uint64_t v = 0;
    int r = zx_cf_parse_u64(&s, &v);

    if (r == -1)
        return -1;
    while (*s == ' ')
        s++;
    if (!*s) {
        *ms = 0;
        return r == 0 && v == 0 ? 0 : -2;
    }
    return scale(v, r == ZX_CF_TOO_BIG, s, units, sizeof(units) / sizeof(units[0]), 0,
                 ms);
}

static void fmt_size(char *buf, size_t len, uint64_t v)
{
    if (v >= GiB && v % GiB == 0)
        snprintf(buf, len, "%" PRIu64 "GiB", v / GiB);
    else if (v >= MiB && v % MiB == 0)
        snprintf(buf, len, "%" PRIu64 "MiB", v / MiB);
    else if (v >= KiB && v % KiB == 0)
        snprintf(buf, len, "%" PRIu64 "KiB", v / KiB);
    else
        snprintf(buf, len, "%" PRIu64, v);
}

static void fmt_duration(char *buf, size_t len, uint64_t ms)
{
    if (ms >= HOUR && ms % HOUR == 0)
        snprintf(buf, len, "%" PRIu64 "h", ms / HOUR);
    else if (ms >= MIN && ms % MIN == 0)
        snprintf(buf, len, "%" PRIu64 "m", ms / MIN);
    else if (ms >= SEC && ms % SEC == 0)
        snprintf(buf, len, "%" PRIu64 "s", ms / SEC);
    else
        snprintf(buf, len, "%" PRIu64 "ms", ms);
}

void zx_cf_fmt_value(const zx_cf_option *o, char *buf, size_t len, uint64_t v)
{
    if (o->type == ZX_CF_SIZE)
        fmt_size(buf, len, v);
    else if (o->type == ZX_CF_DURATION)
        fmt_duration(buf, len, v);
    else
        snprintf(buf, len, "%" PRIu64, v);
}

int zx_cf_split_listen(const char *s, char **host, uint16_t *port,
                       const char **why)
{
    const char *colon, *hend, *hstart = s, *p;
    uint64_t v;

    *host = NULL;
    if (s[0] == '[') {
        hend = strchr(s, ']');
        if (!hend || hend[1] != ':') {
            *why = "expected [ipv6]:port";
            return -1;
        }
        hstart = s + 1;
        colon = hend + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon) {
            *why = "expected host:port, like 127.0.0.1:8780";
            return -1;
        }
        if (memchr(s, ':', (size_t)(colon - s))) {
            *why = "write an IPv6 address in brackets: [::1]:8780";
            return -1;
        }
        hend = colon;
    }
    if (hend == hstart) {
        *why = "the host is missing (0.0.0.0:PORT listens on every interface)";
        return -1;
    }
    for (p = hstart; p < hend; p++) {
        if (!isalnum((unsigned char)*p) && !strchr(".-_:%", *p)) {
            *why = "the host may only hold letters, digits and . - _ : %";
            return -1;
        }
    }
    p = colon + 1;
    if (zx_cf_parse_u64(&p, &v) < 0 || *p || v > 65535) {
        *why = "the port must be a number from 0 to 65535";
        return -1;
    }
    *host = strndup(hstart, (size_t)(hend - hstart));
    if (!*host) {
        *why = "out of memory";
        return -1;
    }
    *port = (uint16_t)v;
    return 0;
}
