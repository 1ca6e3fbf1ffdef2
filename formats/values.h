/*
 * values.h — one cell (a zx_value, common/rowset.h) made into the value a
 * file format stores for a column of a given zx_dtype (common/dtype.h),
 * following the conversions of workers/syncs/dest.h ("The rows"); and the
 * text forms the text formats (CSV, NDJSON) print.
 *
 * Conversions (anything not listed is a misfit: written as NULL and
 * counted by the caller).  They are the rules of the table destinations
 * (workers/syncs/dest_cells.h), so a result gives the same values in a
 * table and in a file:
 *   TEXT         TEXT and JSON cells: their bytes, when valid UTF-8;
 *                TIMESTAMP: its original text (else its UTC text); INT,
 *                REAL, BOOL: their text ("-5", shortest round-trip
 *                "0.1", "NaN", "Infinity", "true").
 *   BYTES        the bytes TEXT gives, without the UTF-8 check.
 *   INT64        INT; BOOL as 0/1; REAL when integral and in range; TEXT
 *                or a number kept as text that is an integer literal
 *                ("-42", "+3"; no blanks, no fraction) within int64.
 *   DOUBLE       REAL; INT (rounded to nearest beyond 2^53); BOOL 0/1;
 *                TEXT or a number kept as text that strtod reads whole
 *                ("1.5", "NaN", "-Infinity"), not out of double range.
 *   BOOL         BOOL; INT or REAL 0 / 1; TEXT true/false/t/f/yes/no/
 *                on/off/1/0 in any case.
 *   TIMESTAMP    TIMESTAMP; TEXT in RFC 3339 (common/timefmt.h) or a
 *                date "YYYY-MM-DD" (midnight UTC); years 0001..9999.
 *   DATE         TEXT "YYYY-MM-DD", year 0001-9999, a real day; a
 *                TIMESTAMP at midnight UTC.
 *   DECIMAL      TEXT, a number kept as text, INT, or a finite REAL (by
 *                its shortest round-trip text): a decimal literal
 *                [+-]digits[.digits][e[+-]digits], rounded half away from
 *                zero to the column's scale; a value needing more than
 *                the column's precision digits is a misfit.
 *   JSON         JSON cells that are one valid JSON value (RFC 8259,
 *                UTF-8; a number kept as text is one); TEXT as a JSON
 *                string (valid UTF-8 only); INT, finite REAL, BOOL as
 *                JSON; TIMESTAMP as the JSON string of its UTC text.
 *
 * Everything here is pure (no allocation, no global state) and safe on
 * any bytes.
 */
#ifndef ZX_FORMATS_VALUES_H
#define ZX_FORMATS_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "common/rowset.h"

__extension__ typedef __int128 zx_i128;

/* A growable byte buffer (output text, or scratch for a conversion). */
typedef struct zx_fbuf {
    char *p;          /* owned; free with zx_fbuf_free */
    size_t len, cap;
} zx_fbuf;

/* Room for n more bytes after len: 0 or -1 (out of memory). */
int zx_fbuf_reserve(zx_fbuf *b, size_t n);
/* Free the bytes; b is empty again.  NULL is a no-op. */
void zx_fbuf_free(zx_fbuf *b);

/* Room for any text form below (a 38-digit decimal with sign and point,
 * a double, an int64), NUL included. */
#define ZX_FV_TEXTSZ 48

/* The stored form of one cell.  Which fields are set depends on the
 * column's type:
 *   TEXT, JSON, BYTES  s, n (s points into the zx_value's bytes, into buf
 *                      or into the scratch buffer: do not copy a zx_fv by
 *                      value while s is used)
 *   INT64, BOOL        i (BOOL 0/1)
 *   TIMESTAMP          i (µs since the epoch, UTC)
 *   DATE               i (days since 1970-01-01)
 *   DOUBLE             d
 *   DECIMAL            dec (the unscaled value: value * 10^scale); i too
 *                      when precision <= 18 */
typedef struct zx_fv {
    int64_t i;
    double d;
    zx_i128 dec;
    const char *s;
    size_t n;
    char buf[ZX_FV_TEXTSZ];
} zx_fv;

enum {
    ZX_FV_NOMEM = -1, /* out of memory (the scratch buffer) */
    ZX_FV_NULL = 0,   /* the cell is NULL (or missing) */
    ZX_FV_OK = 1,     /* *out holds the value */
    ZX_FV_MISFIT = 2  /* no lossless conversion: write NULL, count it */
};

/* Convert v (NULL allowed: a missing cell) for column c.  Returns one of
 * ZX_FV_*.  scratch (reset, then used for a JSON column's quoted text)
 * must stay untouched while *out is used; *out's fields are valid while
 * v's bytes and scratch are (and *out is not moved). */
int zx_fv_convert(const zx_dcol *c, const zx_value *v, zx_fv *out, zx_fbuf *scratch);

/* Append s[0..n) to b as a JSON string, quotes included: '"' and '\'
 * escaped, \n \r \t \b \f, other control characters \u00XX, the rest
 * as is.  Bytes that are not UTF-8: each replaced by U+FFFD when replace,
 * else nothing is appended and 0 returned.  1, 0, or -1 (out of memory). */
int zx_fv_json_quote(zx_fbuf *b, const char *s, size_t n, int replace);

/* Shortest text that strtod reads back as d ("%.15g".."%.17g"); "NaN",
 * "Infinity", "-Infinity" for those.  Returns the length. */
size_t zx_fv_fmt_double(double d, char out[ZX_FV_TEXTSZ]);

/* A decimal's text: the unscaled value with exactly `scale` digits after
 * the point ("-123.45", "0.05", "7" for scale 0).  scale 0..38.  Returns
 * the length. */
size_t zx_fv_fmt_decimal(zx_i128 unscaled, int scale, char out[ZX_FV_TEXTSZ]);

/* "YYYY-MM-DD" of days since 1970-01-01 (years 1..9999 as produced by
 * zx_fv_convert).  Returns 10. */
size_t zx_fv_fmt_date(int64_t days, char out[ZX_FV_TEXTSZ]);

/* Parse the decimal literal s[0..n) (grammar above) for precision 1..38
 * and scale 0..precision into *unscaled.  1, or 0 when it is no literal
 * or does not fit. */
int zx_fv_parse_decimal(const char *s, size_t n, int precision, int scale,
                        zx_i128 *unscaled);

/* 1 when s[0..n) is well-formed UTF-8 (no overlong forms, no surrogates,
 * nothing above U+10FFFF), else 0. */
int zx_fv_utf8_valid(const char *s, size_t n);

/* 1 when s[0..n) is exactly one JSON value (RFC 8259: blanks around it
 * allowed, UTF-8 checked, \u escapes of surrogates paired, nesting at
 * most 512 levels), else 0. */
int zx_fv_json_valid(const char *s, size_t n);

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 when the
 * bytes there are not one (n > 0).  Used to replace bad bytes. */
size_t zx_fv_utf8_seq(const unsigned char *s, size_t n);

#endif
