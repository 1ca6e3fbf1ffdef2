/*
 * dcell.h — one cell of a result that leaves zx (a reverse sync's row, see
 * workers/destinations/dest.h "The rows") made into what a column of a logical
 * type (common/dtype.h) stores: the value rules every destination shares,
 * table (workers/destinations/postgres/dest_postgres.c, dest_sqlite.c, dest_mysql.c) or
 * file (formats/parquet.h, formats/textrows.h through dest_files.c), so
 * that a result gives the same values in a table and in a file.
 *
 * A target is what a column takes: a logical type with the limits of the
 * column's real type (a Postgres integer holds int32 only, a varchar(10)
 * ten characters) and the options below.  A value is converted only where
 * nothing is lost; anything else is a misfit, written as NULL and counted
 * by the caller (zx_dest_stats.nulled).
 *
 *   target     takes                                      gives
 *   INT64      integer in range; a real that is exactly   i
 *              integral and in range; bool (0/1); text
 *              or a number kept as text that is an
 *              integer literal ("42", "-7", "+3")
 *   DOUBLE     real (NaN and infinities unless the        d
 *              target refuses them: nan_ok, inf_ok);
 *              integer (rounded to nearest beyond 2^53);
 *              bool; text or a number kept as text that
 *              is all one number literal within double
 *              range, at most 400 bytes ("1.5", "NaN",
 *              "-Infinity"; an underflow to 0 is a misfit,
 *              a subnormal result is kept)
 *   BOOL       bool; integer or real 0 / 1; text          i (0/1)
 *              true/false/t/f/yes/no/on/off/1/0 (any
 *              case)
 *   TIMESTAMP  timestamp; text in RFC 3339 or a date      i (µs since the epoch,
 *              "YYYY-MM-DD" (midnight UTC); within years  UTC)
 *              0001..9999
 *   DATE       text "YYYY-MM-DD" (a real date, years      i (days since
 *              0001..9999); a timestamp at midnight UTC   1970-01-01) and
 *                                                         s: "YYYY-MM-DD"
 *   DECIMAL    text or a number kept as text that is a    s: the literal as
 *              decimal literal ([+-]digits[.digits]       given (an integer
 *              [e[+-]digits], |exponent| at most exp_max  or a real: its
 *              when exp_max > 0), an integer, a finite    text); dec (and i)
 *              real; with precision p > 0 only when it    when p is 1..38 and
 *              fits numeric(p,s) once rounded half away   scale 0..p: the
 *              from zero to s fraction digits (at most    value * 10^scale,
 *              p - s integer digits)                      rounded
 *   JSON       JSON (a document that parses, or a number  s: JSON text
 *              kept as text whose literal is a JSON
 *              number); text as a JSON string; integer,
 *              finite real, bool as JSON; a timestamp as
 *              the JSON string of its UTC text.  \u0000
 *              inside a string only when nul_ok; a
 *              number's |exponent| at most exp_max when
 *              exp_max > 0
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
 * timestamp: "YYYY-MM-DDTHH:MM:SS.ffffffZ" (zx_ts_format).  JSON strings
 * zx writes escape '"', '\', \n \r \t \b \f and other control characters
 * as \u00XX (zx_dc_json_quote).
 *
 * The options where tables and files differ (zx_dc_target_of gives the
 * tables' defaults, zx_dc_target_file the files'): files keep NUL bytes in
 * text and \u0000 in JSON (nul_ok) and take numbers of any exponent
 * (exp_max 0); tables refuse NUL unless their database keeps it, and
 * exponents beyond 1000 (what databases that keep numbers exactly take).
 * A database's own limits (MySQL and SQLite hold no NaN, a Postgres
 * integer is 32 bits) are set by its destination on the target.
 *
 * Thread-safe; it must never: know about SQL, a database library or a file
 * format, allocate except through the zx_buf it is handed, or depend on
 * the locale's decimal point (the daemon never calls setlocale; strtod and
 * snprintf are used as in "C").
 */
#ifndef ZX_COMMON_DCELL_H
#define ZX_COMMON_DCELL_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dtype.h"
#include "common/rowset.h"

__extension__ typedef __int128 zx_i128;

/* Room for any text form below (a 38-digit decimal with sign and point, a
 * double, an int64, a date), NUL included. */
#define ZX_DC_TEXTSZ 48

/* ---- targets and the conversion -------------------------------------- */

/* What a column takes (the table above). */
typedef struct zx_dc_target {
    zx_dtype type;
    int other;              /* TEXT rules for a type zx does not know */
    int64_t imin, imax;     /* INT64: range (INT64_MIN..INT64_MAX for bigint) */
    int float4;             /* DOUBLE: single precision (range checked) */
    int nan_ok, inf_ok;     /* DOUBLE: NaN / ±Infinity storable */
    int precision, scale;   /* DECIMAL: precision 0 = unconstrained */
    int64_t max_chars;      /* TEXT: characters at most; 0 = no limit */
    int nul_ok;             /* TEXT: NUL bytes allowed; JSON: \u0000 allowed */
    int exp_max;            /* JSON numbers, DECIMAL literals: |exponent| at
                               most this; 0 = any */
} zx_dc_target;

/* The target of a table column zx makes for logical type t (precision and
 * scale for DECIMAL): int64 range, double with NaN and infinities, no
 * length limit, nul_ok 0, exp_max 1000.  Callers adjust the fields their
 * database needs. */
zx_dc_target zx_dc_target_of(zx_dtype t, int precision, int scale);

/* The target of a file column c (a column as dtype.h has it: DECIMAL
 * precision 1..38, scale 0..precision): zx_dc_target_of's, with nul_ok 1
 * and exp_max 0. */
zx_dc_target zx_dc_target_file(const zx_dcol *c);

/* What is written. */
typedef struct zx_dc_out {
    int null;          /* 1: write NULL (v was null, or a misfit) */
    int64_t i;         /* INT64, BOOL (0/1), TIMESTAMP (µs, UTC), DATE (days
                          since 1970-01-01); DECIMAL with dec: (int64_t)dec,
                          exact when precision <= 18 */
    double d;          /* DOUBLE */
    zx_i128 dec;       /* DECIMAL, precision 1..38: the unscaled value */
    const char *s;     /* DATE, DECIMAL, JSON, TEXT, BYTES, other: the
                          bytes (not always NUL-terminated), pointing
                          into v's strings or into the buffer */
    size_t len;
} zx_dc_out;

/* Convert v (NULL allowed: no cell) for target t (the table above).
 * Returns 1 with *out filled (out->null set for a null), 0 for a misfit
 * (out->null = 1), -1 when out of memory.  Uses and overwrites buf:
 * out->s stays valid until the next use of buf or the end of v's
 * lifetime, whichever is first. */
int zx_dc_convert(const zx_dc_target *t, const zx_value *v, zx_buf *buf,
                  zx_dc_out *out);

/* ---- the checks and text forms the conversion uses ------------------- */

/* 1 when the n bytes at s are well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF; NUL counts as valid), else 0. */
int zx_dc_utf8_valid(const char *s, size_t n);

/* 1 when the n bytes at s are one JSON value (RFC 8259, surrounding
 * white space allowed, nesting at most 512 deep, valid UTF-8, \u escapes
 * paired where surrogates), with no \u0000 unless nul_ok and no number
 * whose |exponent| exceeds exp_max when exp_max > 0; else 0. */
int zx_dc_json_valid(const char *s, size_t n, int nul_ok, int exp_max);

/* Append s[0..n) to b as a JSON string, quotes included (escapes as said
 * above).  Bytes that are not UTF-8: each replaced by U+FFFD when
 * replace, else nothing is appended and 0 returned; a NUL byte when
 * !nul_ok: nothing appended, 0.  1, 0, or -1 (out of memory). */
int zx_dc_json_quote(zx_buf *b, const char *s, size_t n, int replace, int nul_ok);

/* 1 when s (n bytes) is a decimal literal (grammar above, |exponent| at
 * most exp_max when exp_max > 0) that fits numeric(precision, scale) once
 * rounded half away from zero to scale fraction digits (precision 0: any
 * literal), else 0.  With unscaled (then precision must be 1..38 and scale
 * 0..precision, else 0), *unscaled gets the rounded value * 10^scale. */
int zx_dc_decimal_fits(const char *s, size_t n, int precision, int scale, int exp_max,
                       zx_i128 *unscaled);

/* Shortest text of d that reads back as d ("%.15g", else 16, else 17
 * digits), "NaN", "Infinity" or "-Infinity", into out (NUL-terminated).
 * Returns the length. */
size_t zx_dc_double_text(double d, char out[32]);

/* A decimal's text: the unscaled value with exactly `scale` digits after
 * the point ("-123.45", "0.05", "7" for scale 0); scale 0..38.  Returns
 * the length. */
size_t zx_dc_decimal_text(zx_i128 unscaled, int scale, char out[ZX_DC_TEXTSZ]);

/* "YYYY-MM-DD" of days since 1970-01-01 (clamped to years 0001..9999).
 * Returns 10. */
size_t zx_dc_date_text(int64_t days, char out[ZX_DC_TEXTSZ]);

#endif
