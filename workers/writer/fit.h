/*
 * fit.h — does a value fit a workspace column, and what is stored?
 *
 * The fit rules, shared by every workspace backend (and quoted in the
 * README).  A column has a kind, from its declared SQL type:
 *
 *   column     accepts                                    stored as
 *   INTEGER    integer within int64; real only if its       int64
 *              double is exactly integral and within
 *              int64 (3.0 -> 3)
 *   REAL       integer (also beyond int64), real; not a    double (rounded)
 *              number beyond double range
 *   BOOLEAN    boolean                                     0 / 1
 *   TIMESTAMP  timestamp                                   text, UTC, 6 fraction
 *                                                          digits (zx_ts_format)
 *   TEXT       everything: text as is, numbers and        text
 *              booleans as their JSON text (a number
 *              kept as text: its literal), a timestamp
 *              as its original text, JSON as its text
 *   JSON       everything but a number beyond double       text
 *              range, as JSON text: strings quoted and
 *              escaped, numbers, true/false, a
 *              timestamp as a quoted string of its
 *              original text, JSON as is
 *   (other)    a user-made table's unknown declared type:  native: int64, double,
 *              everything but a number beyond double       0/1, text, formatted
 *              range                                       timestamp, JSON text
 *
 * Numbers kept as text (rowset.h: an integer beyond int64, a number beyond
 * double range, carried as their literal) are numbers here: an integer
 * beyond int64 fits REAL (rounded to the nearest double, as an int64
 * above 2^53 is) but never INTEGER, in both directions; a number beyond
 * double range fits only TEXT (a JSON or user-typed SQLite column would
 * turn its literal into Infinity).  A real is its nearest double: INTEGER
 * takes -9223372036854775808.0 but not 9223372036854775808.0.
 *
 * SQLite note: the declared types BOOLEAN, TIMESTAMP and JSON have NUMERIC
 * affinity there, so a bare JSON number stored in a JSON column reads back
 * as an SQLite number (42, 1.0e+20), and a user-made column keeps its own
 * affinity (VARCHAR stores 1 as '1').
 *
 * A null is stored as NULL and is never a misfit.  Any other value that is
 * not accepted is a misfit: the backend stores NULL instead and records the
 * value in `<table>__rejects`.
 *
 * It must never: know about SQL statements or a database library, or
 * allocate except through the zx_buf it is handed.
 */
#ifndef ZX_WRITER_FIT_H
#define ZX_WRITER_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/rowset.h"

typedef enum zx_fit_kind {
    ZX_FIT_INTEGER = 0,
    ZX_FIT_REAL,
    ZX_FIT_BOOLEAN,
    ZX_FIT_TEXT,
    ZX_FIT_TIMESTAMP,
    ZX_FIT_JSON,
    ZX_FIT_ANY,        /* unknown declared type: accept anything */
    ZX_FIT__COUNT
} zx_fit_kind;

/* Kind of a declared SQL type: exactly INTEGER, REAL, BOOLEAN, TEXT,
 * TIMESTAMP or JSON (ASCII case-insensitive, surrounding blanks ignored);
 * anything else (or NULL/empty) is ZX_FIT_ANY. */
zx_fit_kind zx_fit_kind_from_decl(const char *decl);

/* Declared SQL type used when zx creates a column for a batch type:
 * "INTEGER", "REAL", "BOOLEAN", "TEXT", "TIMESTAMP", "JSON"; NULL for
 * ZX_T_NULL or an unknown type (no column is created).  Static storage. */
const char *zx_fit_decl_for_type(zx_type t);

/* Lower-case name of a kind ("integer", ... "json", "any"); static. */
const char *zx_fit_kind_name(zx_fit_kind k);


/* What to store. */
typedef enum zx_fit_store { ZX_FIT_S_NULL, ZX_FIT_S_INT, ZX_FIT_S_REAL, ZX_FIT_S_TEXT } zx_fit_store;

typedef struct zx_fit_out {
    zx_fit_store st;
    int64_t i;          /* ZX_FIT_S_INT */
    double d;           /* ZX_FIT_S_REAL */
    const char *s;      /* ZX_FIT_S_TEXT: points into v or into the buf;
                           a timestamp's text has its microseconds since
                           the epoch in i too */
    size_t len;
} zx_fit_out;

/* Decide how value v is stored in a column of kind k.
 * Returns 1 and fills *out when it fits (a null fits as ZX_FIT_S_NULL),
 * 0 for a misfit (out->st = ZX_FIT_S_NULL), -1 when out of memory.
 * out->s may point into v's strings or into buf: valid until the next use
 * of buf or the end of v's lifetime. */
int zx_fit_value(zx_fit_kind k, const zx_value *v, zx_buf *buf, zx_fit_out *out);

/* Append the JSON text of v to b (null, numbers, true/false, strings
 * quoted and escaped, a timestamp as its quoted original text, JSON as is;
 * a non-finite real as null).  Returns 0 or -1 (out of memory). */
int zx_fit_json_text(const zx_value *v, zx_buf *b);

/* Append s (n bytes) as a quoted, escaped JSON string.  0 or -1. */
int zx_fit_json_quote(zx_buf *b, const char *s, size_t n);

/* Reject reason into out (truncated, NUL-terminated; the value's JSON
 * text shortened to about 80 bytes).  raw is the value's JSON text (a
 * number kept as text: its literal; raw[rawlen] must be NUL, as fit
 * buffers are).  Reasons:
 *   value "abc" (text) does not fit column amount (integer)
 *   integer -9223372036854775809 is below the smallest INTEGER
 *     (-9223372036854775808)            (and "above the largest INTEGER")
 *   number 1e999999 is out of the range of REAL (-1.7976931348623157e+308
 *     to 1.7976931348623157e+308) */
void zx_fit_reason(char *out, size_t outlen, const char *raw, size_t rawlen,
                   zx_type vt, const char *column, zx_fit_kind k);

#endif
