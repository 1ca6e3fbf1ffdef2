/*
 * dest_cells.h — what a table destination (dest_postgres.c, dest_sqlite.c)
 * writes for one cell of a run: the checks and conversions of dest.h "The
 * rows", shared so that every table destination turns the same value into
 * the same stored value or the same misfit.
 *
 * A target is what the table's column takes: a logical type (zx_dtype)
 * with the limits of the column's real type (a Postgres integer holds
 * int32 only, a varchar(10) ten characters).  A value is converted only
 * where nothing is lost; anything else is a misfit, written as NULL and
 * counted by the caller (zx_dest_stats.nulled).
 *
 *   target     takes                                      gives
 *   INT64      integer in range; a real that is exactly   i
 *              integral and in range; bool (0/1); text
 *              or a number kept as text that is an
 *              integer literal ("42", "-7", "+3")
 *   DOUBLE     real (NaN and infinities unless the        d
 *              target refuses them: nan_ok, inf_ok);
 *              integer; bool; text or a number kept as
 *              text that is all one number literal
 *              within double range ("1.5", "NaN",
 *              "-Infinity")
 *   BOOL       bool; integer or real 0 / 1; text          i (0/1)
 *              true/false/t/f/yes/no/on/off/1/0 (any
 *              case)
 *   TIMESTAMP  timestamp; text in RFC 3339 or a date      i (µs since the epoch,
 *              "YYYY-MM-DD" (midnight UTC); within years  UTC)
 *              0001..9999
 *   DATE       text "YYYY-MM-DD" (a real date, years      s: "YYYY-MM-DD"
 *              0001..9999); a timestamp at midnight UTC
 *   DECIMAL    text or a number kept as text that is a    s: the literal as
 *              decimal literal ([+-]digits[.digits]       given (an integer
 *              [e[+-]digits]), an integer, a finite       or a real: its
 *              real; with precision p > 0 only when it    text)
 *              fits numeric(p,s) once rounded to s
 *              fraction digits (at most p - s integer
 *              digits)
 *   JSON       JSON (a document that parses, or a number  s: JSON text
 *              kept as text whose literal is a JSON
 *              number); text as a JSON string; integer,
 *              finite real, bool as JSON; a timestamp as
 *              the JSON string of its UTC text.  \u0000
 *              inside a string only when nul_ok
 *   TEXT       everything, as text: text as is, integers  s
 *              in decimal, reals as their shortest exact
 *              text ("NaN", "Infinity"), bools
 *              "true"/"false", a timestamp as its
 *              original text (else its UTC text), JSON as
 *              is; valid UTF-8 only, NUL bytes only when
 *              nul_ok, at most max_chars characters when
 *              max_chars > 0
 *   BYTES      the bytes of what TEXT gives (any bytes)   s
 *   (other)    other = 1 with type TEXT: a column type    s
 *              zx does not know (uuid, an enum): the TEXT
 *              rules; the database decides the rest
 *
 * NULL (or no cell) gives NULL and is never a misfit.  UTC text of a
 * timestamp: "YYYY-MM-DDTHH:MM:SS.ffffffZ" (zx_ts_format).
 *
 * It must never: know about SQL or a database library, allocate except
 * through the zx_dc_buf it is handed, depend on the locale's decimal
 * point (the daemon never calls setlocale; strtod is used as in "C").
 */
#ifndef ZX_SYNCS_DEST_CELLS_H
#define ZX_SYNCS_DEST_CELLS_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "common/rowset.h"

/* What a column takes. */
typedef struct zx_dc_target {
    zx_dtype type;
    int other;              /* TEXT rules for a type zx does not know */
    int64_t imin, imax;     /* INT64: range (INT64_MIN..INT64_MAX for bigint) */
    int float4;             /* DOUBLE: single precision (range checked) */
    int nan_ok, inf_ok;     /* DOUBLE: NaN / ±Infinity storable */
    int precision, scale;   /* DECIMAL: precision 0 = unconstrained */
    int64_t max_chars;      /* TEXT: characters at most; 0 = no limit */
    int nul_ok;             /* TEXT: NUL bytes allowed; JSON: \u0000 allowed */
} zx_dc_target;

/* The target of a column zx makes for logical type t (precision/scale
 * for DECIMAL): int64 range, double with NaN and infinities, no length
 * limit, nul_ok 0.  Callers adjust the fields their database needs. */
zx_dc_target zx_dc_target_of(zx_dtype t, int precision, int scale);

/* A growable scratch buffer; start with {0}, release with zx_dc_buf_free. */
typedef struct zx_dc_buf {
    char *p;
    size_t len, cap;
} zx_dc_buf;

void zx_dc_buf_free(zx_dc_buf *b);

/* Append n bytes at s (kept NUL-terminated).  0 or -1 (out of memory). */
int zx_dc_buf_put(zx_dc_buf *b, const void *s, size_t n);

/* Make room for `more` bytes after b->len (and a NUL), so that the caller
 * may write them at b->p + b->len itself.  0 or -1 (out of memory). */
int zx_dc_buf_reserve(zx_dc_buf *b, size_t more);

/* What is written. */
typedef struct zx_dc_out {
    int null;          /* 1: write NULL (v was null, or a misfit) */
    int64_t i;         /* INT64, BOOL (0/1), TIMESTAMP (µs, UTC) */
    double d;          /* DOUBLE */
    const char *s;     /* DATE, DECIMAL, JSON, TEXT, BYTES, other: the
                          bytes (not always NUL-terminated), pointing
                          into v's strings or into the buffer */
    size_t len;
} zx_dc_out;

/* Convert v for target t (the table above).  Returns 1 with *out filled
 * (out->null set for a null), 0 for a misfit (out->null = 1), -1 when
 * out of memory.  Uses and overwrites buf: out->s stays valid until the
 * next use of buf or the end of v's lifetime, whichever is first. */
int zx_dc_convert(const zx_dc_target *t, const zx_value *v, zx_dc_buf *buf,
                  zx_dc_out *out);

/* 1 when the n bytes at s are well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF; NUL counts as valid), else 0. */
int zx_dc_utf8_valid(const char *s, size_t n);

/* 1 when the n bytes at s are one JSON value (RFC 8259, surrounding
 * white space allowed, nesting at most 512 deep, valid UTF-8, \u escapes
 * paired where surrogates), with no \u0000 unless nul_ok; else 0. */
int zx_dc_json_valid(const char *s, size_t n, int nul_ok);

/* 1 when s (n bytes) is a decimal literal that fits numeric(precision,
 * scale) once rounded to scale fraction digits (precision 0: any
 * literal), else 0.  Exposed for tests. */
int zx_dc_decimal_fits(const char *s, size_t n, int precision, int scale);

/* Shortest text of d that reads back as d ("%.15g", else 16, else 17
 * digits), "NaN", "Infinity" or "-Infinity", into out (32 bytes).
 * Returns the length. */
size_t zx_dc_double_text(double d, char out[32]);

#endif
