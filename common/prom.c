/*
 * prom.c — the Prometheus text exposition format, bounded (prom.h).
 *
 * It must never write a partial line: each line is formatted whole in a
 * scratch buffer, then appended if it fits the limit.
 */
#include "common/prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES 4096

void zx_prom_init(zx_prom *p, size_t max)
{
    memset(p, 0, sizeof(*p));
    p->max = max;
}

/* Append line (n bytes) whole, or mark p full. */
static void put(zx_prom *p, const char *line, size_t n)
{
    if (p->full)
        return;
    if (p->len + n > p->max) {
        p->full = 1;
        return;
    }
    if (p->len + n + 1 > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < p->len + n + 1)
            cap *= 2;
        char *nb = realloc(p->buf, cap);
        if (!nb) {
            p->full = 1;
            return;
        }
        p->buf = nb;
        p->cap = cap;
    }
    memcpy(p->buf + p->len, line, n);
    p->len += n;
    p->buf[p->len] = '\0';
}

/* Escape v into out as a label value (quote 1) or HELP text (quote 0). */
static size_t escape(char *out, size_t cap, const char *v, int quote)
{
    size_t n = 0;
    for (const char *s = v ? v : ""; *s; s++) {
        const char *rep = NULL;
        if (*s == '\\')
            rep = "\\\\";
        else if (*s == '\n')
            rep = "\\n";
        else if (*s == '"' && quote)
            rep = "\\\"";
        size_t k = rep ? 2 : 1;
        if (n + k < cap)
            memcpy(out + n, rep ? rep : s, k);
        n += k;
    }
    if (cap)
        out[n < cap ? n : cap - 1] = '\0';
    return n;
}

size_t zx_prom_escape(char *out, size_t cap, const char *v)
{
    return escape(out, cap, v, 1);
}

void zx_prom_family(zx_prom *p, const char *name, const char *type, const char *help)
{
    char line[LINE_MAX_BYTES], h[LINE_MAX_BYTES / 2];
    escape(h, sizeof(h), help, 0);
    int n = snprintf(line, sizeof(line), "# HELP %s %s\n# TYPE %s %s\n", name, h, name, type);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        p->full = 1;
        return;
    }
    put(p, line, (size_t)n);
}

/* name{labels} value\n, or mark p full when it does not fit a line. */
static void sample(zx_prom *p, const char *name, const zx_prom_label *labels, size_t nlabels,
                   const char *val)
{
    char line[LINE_MAX_BYTES];
    size_t n = (size_t)snprintf(line, sizeof(line), "%s", name);
    for (size_t i = 0; i < nlabels && n < sizeof(line); i++) {
        n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s=\"", i ? "," : "{",
                              labels[i].name);
        if (n < sizeof(line))
            n += escape(line + n, sizeof(line) - n, labels[i].value, 1);
        if (n < sizeof(line))
            n += (size_t)snprintf(line + n, sizeof(line) - n, "\"");
    }
    if (nlabels && n < sizeof(line))
        n += (size_t)snprintf(line + n, sizeof(line) - n, "}");
    if (n < sizeof(line))
        n += (size_t)snprintf(line + n, sizeof(line) - n, " %s\n", val);
    if (n >= sizeof(line)) {
        p->full = 1;
        return;
    }
    put(p, line, n);
}

void zx_prom_u(zx_prom *p, const char *name, const zx_prom_label *labels, size_t nlabels,
               uint64_t v)
{
    char val[24];
    snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
    sample(p, name, labels, nlabels, val);
}

void zx_prom_f(zx_prom *p, const char *name, const zx_prom_label *labels, size_t nlabels,
               double v)
{
    char val[40];
    if (isnan(v))
        snprintf(val, sizeof(val), "NaN");
    else if (isinf(v))
        snprintf(val, sizeof(val), "%s", v > 0 ? "+Inf" : "-Inf");
    else
        snprintf(val, sizeof(val), "%.17g", v);
    sample(p, name, labels, nlabels, val);
}

const char *zx_prom_text(const zx_prom *p, size_t *len)
{
    if (len)
        *len = p->len;
    return p->buf ? p->buf : "";
}

void zx_prom_free(zx_prom *p)
{
    if (!p)
        return;
    free(p->buf);
    p->buf = NULL;
    p->len = p->cap = 0;
}
