/*
 * prom.h — a bounded writer of the Prometheus text exposition format
 * (version 0.0.4): "# HELP" and "# TYPE" lines, then samples
 * `name{label="value",...} value`, one family's samples together.
 *
 * Pure: no I/O, no clocks, no knowledge of zx.  The text grows in one
 * malloc'd buffer up to a limit fixed at zx_prom_init; a line that would
 * pass it is left out whole (never cut), and the writer is then marked
 * full: every later line is left out too, so the text stays valid.
 *
 * Label values are escaped as the format asks: backslash as `\\`, double
 * quote as `\"`, line feed as `\n`; HELP text escapes backslash and line
 * feed.  Metric and label names are the caller's constants and are not
 * checked here.
 */
#ifndef ZX_COMMON_PROM_H
#define ZX_COMMON_PROM_H

#include <stddef.h>
#include <stdint.h>

typedef struct zx_prom {
    char *buf;      /* the text so far, NUL-terminated; owned (zx_prom_free) */
    size_t len, cap;
    size_t max;     /* the limit of len */
    int full;       /* 1 once a line was left out (limit or out of memory) */
} zx_prom;

/* A label of a sample: name (a constant) and value (any bytes up to NUL). */
typedef struct zx_prom_label {
    const char *name, *value;
} zx_prom_label;

/* An empty writer whose text may grow to max bytes.  Allocates nothing yet. */
void zx_prom_init(zx_prom *p, size_t max);

/* Start family name: its HELP (escaped) and TYPE lines (type: "counter",
 * "gauge", "untyped"). */
void zx_prom_family(zx_prom *p, const char *name, const char *type, const char *help);

/* One sample of family name with nlabels labels (values escaped; a NULL
 * value is written as "").  zx_prom_u writes an unsigned integer,
 * zx_prom_f a double ("%.17g"; NaN and the infinities as the format spells
 * them: NaN, +Inf, -Inf). */
void zx_prom_u(zx_prom *p, const char *name, const zx_prom_label *labels, size_t nlabels,
               uint64_t v);
void zx_prom_f(zx_prom *p, const char *name, const zx_prom_label *labels, size_t nlabels,
               double v);

/* Escape label value v into out (cap bytes, NUL-terminated).  Returns the
 * length the escaped text has (as snprintf: >= cap means it was cut). */
size_t zx_prom_escape(char *out, size_t cap, const char *v);

/* The text (NUL-terminated; "" when nothing was written) and its length:
 * owned by p, valid until the next call on p or zx_prom_free. */
const char *zx_prom_text(const zx_prom *p, size_t *len);

/* Free the text.  NULL-safe; p may be reused after zx_prom_init. */
void zx_prom_free(zx_prom *p);

#endif
