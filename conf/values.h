/*
 * values.h — private to conf/: the parsers and printers of option values
 * (sizes, durations, integers) shared by options.c, reference.c and
 * values.c, and the unit constants the options table is written in.
 *
 * It must never be included outside conf/, nor without ZX_CONF_INTERNAL
 * (it uses the internal option table types of config.h).
 */
#ifndef ZX_CONF_VALUES_H
#define ZX_CONF_VALUES_H

#ifndef ZX_CONF_INTERNAL
#error "conf/values.h is private to conf/ (define ZX_CONF_INTERNAL)"
#endif

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

#define KiB ((uint64_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define SEC ((uint64_t)1000)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

/* Returned by the parsers below for a well-formed value that does not fit
 * in 64 bits (more digits than fit, or a unit whose multiplication
 * overflows): never wrapped nor clamped.  A caller reports it as out of the
 * option's range, naming the value as written. */
#define ZX_CF_TOO_BIG (-3)

/* Unsigned decimal at *s; advances *s past all the digits (also on
 * ZX_CF_TOO_BIG).  0 with *out, -1 when there is no digit (*s unmoved),
 * ZX_CF_TOO_BIG when the digits exceed 18446744073709551615 (*out
 * untouched). */
int zx_cf_parse_u64(const char **s, uint64_t *out);

/* A size: digits, optional spaces, an optional unit (b, KiB..TiB, KB..TB,
 * case-insensitive).  0 with *out in bytes, -1 malformed (no digits, an
 * unknown unit), ZX_CF_TOO_BIG when the bytes exceed 2^64 - 1. */
int zx_cf_parse_size(const char *s, uint64_t *out);

/* A duration: digits, optional spaces, a unit (ms, s, m, h); a bare "0" is
 * accepted.  0 with *ms, -1 malformed, -2 a bare non-zero number (no unit;
 * also when it has more digits than fit), ZX_CF_TOO_BIG when the
 * milliseconds exceed 2^64 - 1. */
int zx_cf_parse_duration(const char *s, uint64_t *ms);

/* Formats v as o's type shows it (sizes with the largest exact binary unit,
 * durations with the largest exact unit, else plain) into buf (len bytes,
 * truncated, always NUL-terminated if len > 0). */
void zx_cf_fmt_value(const zx_cf_option *o, char *buf, size_t len, uint64_t v);

#endif
