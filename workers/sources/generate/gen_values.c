/*
 * gen_values.c — the value generators, the rows they make, and the rate
 * pacing of `source: generate` (see gen_core.h).
 */
#include "workers/sources/generate/gen_core.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"
#include "common/util.h"

/* ---- random numbers (xoshiro256**, seeded with splitmix64) ---------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void zx_gen_rng_seed(zx_gen_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t zx_gen_rng_next(zx_gen_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

int64_t zx_gen_rng_range(zx_gen_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo;   /* hi - lo, modulo 2^64 */
    if (span == UINT64_MAX)
        return (int64_t)((uint64_t)lo + zx_gen_rng_next(r));
    uint64_t n = span + 1;
    uint64_t floor = (0 - n) % n;   /* 2^64 mod n: values below it are biased */
    uint64_t x;
    do
        x = zx_gen_rng_next(r);
    while (x < floor);
    return (int64_t)((uint64_t)lo + x % n);
}

/* Uniform in [0, 1). */
static double unit(zx_gen_rng *r) { return (double)(zx_gen_rng_next(r) >> 11) * 0x1.0p-53; }

/* ---- rows ------------------------------------------------------------ */

static void uuid_v4(zx_gen_rng *r, char out[37])
{
    uint8_t b[16];
    uint64_t a = zx_gen_rng_next(r), c = zx_gen_rng_next(r);
    memcpy(b, &a, 8);
    memcpy(b + 8, &c, 8);
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);   /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);   /* variant 10 */
    static const char hx[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hx[b[i] >> 4];
        out[o++] = hx[b[i] & 15];
    }
    out[o] = '\0';
}

/* The value of field f; text values copied into rs's arena.  0, -1. */
static int make_value(const zx_gen_field *f, zx_rowset *rs, uint64_t seq, int64_t now_us,
                      const char *ts, size_t tslen, zx_gen_rng *rng, zx_value *v)
{
    const char *s = NULL;
    size_t len = 0;
    char uuid[37];
    memset(v, 0, sizeof(*v));
    switch (f->kind) {
    case ZX_GEN_SEQUENCE:
        v->type = ZX_T_INT;
        v->u.i = (int64_t)seq;
        return 0;
    case ZX_GEN_INT:
        v->type = ZX_T_INT;
        v->u.i = zx_gen_rng_range(rng, f->lo, f->hi);
        return 0;
    case ZX_GEN_FLOAT: {
        double u = unit(rng);
        v->type = ZX_T_REAL;
        /* never overflows, even for -1e308..1e308; stays in [lo, hi] */
        v->u.d = f->dlo * (1.0 - u) + f->dhi * u;
        if (v->u.d > f->dhi)
            v->u.d = f->dhi;
        return 0;
    }
    case ZX_GEN_BOOL:
        v->type = ZX_T_BOOL;
        v->u.b = (int)(zx_gen_rng_next(rng) >> 63);
        return 0;
    case ZX_GEN_CHOICE:
        v->type = ZX_T_TEXT;
        s = f->choices[zx_gen_rng_range(rng, 0, (int64_t)f->nchoices - 1)];
        len = strlen(s);
        break;
    case ZX_GEN_TIMESTAMP:
        v->type = ZX_T_TIMESTAMP;
        v->u.i = now_us;
        s = ts;
        len = tslen;
        break;
    case ZX_GEN_UUID:
        v->type = ZX_T_TEXT;
        uuid_v4(rng, uuid);
        s = uuid;
        len = 36;
        break;
    case ZX_GEN_JSON:
        v->type = ZX_T_JSON;
        s = f->json;
        len = f->json_len;
        break;
    }
    v->s = zx_rowset_strdup(rs, s, len);
    v->len = (uint32_t)len;
    return v->s ? 0 : -1;
}

static zx_type column_type(zx_gen_kind k)
{
    switch (k) {
    case ZX_GEN_SEQUENCE:
    case ZX_GEN_INT: return ZX_T_INT;
    case ZX_GEN_FLOAT: return ZX_T_REAL;
    case ZX_GEN_BOOL: return ZX_T_BOOL;
    case ZX_GEN_TIMESTAMP: return ZX_T_TIMESTAMP;
    case ZX_GEN_JSON: return ZX_T_JSON;
    default: return ZX_T_TEXT;
    }
}

int zx_gen_row(const zx_gen_template *t, zx_rowset *rs, uint64_t seq, int64_t now_us,
               zx_gen_rng *rng)
{
    char ts[ZX_TS_BUFSZ];
    size_t tslen = zx_ts_format(now_us, ts);
    if (zx_rowset_begin_row(rs) < 0)
        return -1;
    for (size_t i = 0; i < t->nfields; i++) {
        const zx_gen_field *f = &t->fields[i];
        int64_t col = zx_rowset_column(rs, f->name, strlen(f->name), column_type(f->kind));
        zx_value v;
        if (col < 0 || make_value(f, rs, seq, now_us, ts, tslen, rng, &v) < 0 ||
            zx_rowset_add(rs, (uint32_t)col, &v) < 0) {
            zx_rowset_abort_row(rs);
            return -1;
        }
    }
    zx_rowset_end_row(rs);
    return 0;
}

/* ---- rate ------------------------------------------------------------ */

int zx_gen_rate_parse(const char *text, uint64_t *per_s, char *err, size_t errlen)
{
    const char *s = text ? text : "";
    if (!strcmp(s, "max")) {
        *per_s = 0;
        return 0;
    }
    const char *p = s;
    uint64_t n = 0;
    int digits = 0;
    while (isdigit((unsigned char)*p)) {
        if (n <= ZX_GEN_MAX_RATE)
            n = n * 10 + (uint64_t)(*p - '0');
        p++;
        digits++;
    }
    while (*p == ' ')
        p++;
    int ok = digits && *p == '/';
    if (ok) {
        p++;
        while (*p == ' ')
            p++;
        ok = !strcmp(p, "s");
    }
    if (!ok || n < 1 || n > ZX_GEN_MAX_RATE)
        return zx_seterr(err, errlen,
                         "`rate` wants `max` or N/s, rows per second with 1 <= N <= %u "
                         "(e.g. rate: 10000/s), not \"%.40s\"", ZX_GEN_MAX_RATE, s);
    *per_s = n;
    return 0;
}

void zx_gen_pace_start(zx_gen_pace *p, uint64_t per_s, int64_t now_us)
{
    p->per_s = per_s;
    p->t0_us = now_us;
    p->made = 0;
}

/* Rows due by now_us since t0 (pacing on). */
static uint64_t due_total(const zx_gen_pace *p, int64_t now_us)
{
    int64_t el = now_us - p->t0_us;
    if (el <= 0)
        return 0;
    return (uint64_t)((unsigned __int128)el * p->per_s / 1000000u);
}

uint64_t zx_gen_pace_due(zx_gen_pace *p, int64_t now_us, uint64_t max)
{
    if (!p->per_s)
        return max;
    uint64_t total = due_total(p, now_us);
    if (total > p->made + p->per_s) {
        /* behind by more than a second: start again, one second owed */
        p->t0_us = now_us - 1000000;
        p->made = 0;
        total = p->per_s;
    }
    uint64_t due = total > p->made ? total - p->made : 0;
    return due < max ? due : max;
}

void zx_gen_pace_made(zx_gen_pace *p, uint64_t n) { p->made += n; }

int64_t zx_gen_pace_wait_us(const zx_gen_pace *p, int64_t now_us, uint64_t rows)
{
    if (!p->per_s)
        return 0;
    unsigned __int128 need = (unsigned __int128)(p->made + rows) * 1000000u;
    int64_t at = p->t0_us + (int64_t)((need + p->per_s - 1) / p->per_s);
    return at > now_us ? at - now_us : 0;
}
