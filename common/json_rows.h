/*
 * json_rows.h — turn an HTTP push body (JSON or NDJSON) into rows.
 *
 * This is where hostile bytes from the network first become data: it must
 * never crash, never read past `len`, never recurse without a bound, and
 * always say what was wrong and where.  It must never know about HTTP,
 * rings, frames or SQL.  The JSON parser is jansson (chosen by measurement,
 * see tests/bench/json_libs.c).
 *
 * Body formats:
 *   ZX_BODY_JSON    one JSON object (one row) or an array of objects (one row
 *                   each; an empty array gives 0 rows).
 *   ZX_BODY_NDJSON  one JSON object per line; lines end with "\n" or "\r\n";
 *                   blank lines (only spaces, tabs, "\r") are skipped.
 *
 * Values (top-level fields of each event):
 *   integer       ZX_T_INT.
 *   real          ZX_T_REAL (the nearest double; an underflow gives 0 or a
 *                 subnormal, as strtod).
 *   out of range  an integer beyond int64, or a number beyond double range
 *                 (1e999999, -1e999999): a number kept as text
 *                 (zx_value_is_number_text, rowset.h): ZX_T_JSON holding
 *                 the literal exactly as written; it types its column as
 *                 REAL.  The writer's fit rules decide what of it is stored
 *                 (workers/writer/fit.h).
 *   true/false    ZX_T_BOOL.
 *   null          a cell of type ZX_T_NULL (the column still exists).
 *   string        ZX_T_TIMESTAMP when zx_rfc3339_parse accepts it (s = the
 *                 original text, u.i = microseconds UTC), else ZX_T_TEXT.
 *   object/array  ZX_T_JSON, compact JSON text (jansson's serialisation:
 *                 no spaces, keys in input order, a key repeated in one
 *                 nested object keeps the last value; a nested number
 *                 beyond int64 / double range is written as its literal).
 * Strings must be valid UTF-8 (else an error).  "\u0000" (NUL) is rejected
 * with an error, so no value or key is ever silently cut at a NUL.
 *
 * Keys: zx_colname_normalise (colname.h); when two keys of one object
 * normalise to the same name the second becomes name_2, the third name_3,
 * and so on in order of appearance (a suffixed name that is itself taken in
 * this object takes the next number).  A key written twice verbatim in one
 * object keeps its last value (JSON parser behaviour).
 *
 * Limits: nesting deeper than ZX_JSON_MAX_DEPTH (the event object is level
 * 1, a value inside it level 2, ...) is an error; a rowset reaching more
 * than ZX_JSON_MAX_COLUMNS columns is an error.
 */
#ifndef ZX_COMMON_JSON_ROWS_H
#define ZX_COMMON_JSON_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"

#define ZX_JSON_MAX_DEPTH 64
#define ZX_JSON_MAX_COLUMNS 1000

typedef enum { ZX_BODY_JSON = 0, ZX_BODY_NDJSON = 1 } zx_body_format;

/* What kind of error a zx_json_err is (branch on this, never on msg). */
typedef enum {
    ZX_JSON_E_NONE = 0,
    ZX_JSON_E_EMPTY,        /* "empty body" */
    ZX_JSON_E_SYNTAX,       /* the parser refused it: "at byte ..." / "line L: ..." */
    ZX_JSON_E_BODY_SHAPE,   /* "the body is <a type>; ..." (the whole body) */
    ZX_JSON_E_SHAPE,        /* an array element or an NDJSON line is no object */
    ZX_JSON_E_COLUMNS,      /* "... more than 1000 columns in one batch" */
    ZX_JSON_E_LIMIT,        /* a value nested too deep or over 4 GiB */
    ZX_JSON_E_NOMEM,        /* "out of memory" */
} zx_json_errcode;

typedef struct zx_json_err {
    zx_json_errcode code; /* ZX_JSON_E_NONE until an error is set */
    char msg[256];     /* one line of English, NUL-terminated */
    uint64_t line;     /* 1-based line of the error (0 when not known) */
    uint64_t column;   /* 1-based column within that line, in characters
                          (a multi-byte UTF-8 character counts once);
                          0 when not known */
    uint64_t offset;   /* 0-based byte offset in the body of the byte where
                          the parser stopped (the last byte it read of the
                          offending token); for errors inside a valid NDJSON
                          line, the line's first byte */
    /* line == 0: no position is known (errors about a whole JSON body or
     * array element, "empty body"); column and offset are 0 then. */
} zx_json_err;

/* Parse `len` bytes at `body` (need not be NUL-terminated) and append one
 * row per event to `rs` (which may already hold rows and columns).
 *
 * Returns the number of rows appended (>= 0), or -1 with *err filled
 * (err->code says which kind, zx_json_errcode).  Error messages (err->msg):
 *   "empty body"                        body empty or only whitespace
 *   JSON:   "at byte B (line L, column C): <parser message>"
 *           "element N of the array is a <type>; each event must be a JSON
 *            object"                    (N is 0-based)
 *           "the body is a <type>; it must be a JSON object or an array of
 *            JSON objects"
 *   NDJSON: "line L: <parser message>"  (err->line = L, err->column set)
 *           "line L is a <type>; each line must be a JSON object"
 *   either: "... nesting deeper than 64 levels"
 *           "... more than 1000 columns in one batch"
 *           "... string contains \u0000 (NUL), which is not accepted"
 *           "out of memory"
 * On -1, `rs` may hold the rows appended before the error (and an aborted
 * open row is dropped): the caller must zx_rowset_reset it, or discard the
 * whole batch, to keep the body all-or-nothing.
 * `err` may be NULL.  Thread-safe on distinct rowsets. */
int zx_json_rows_parse(const char *body, size_t len, zx_body_format fmt,
                       zx_rowset *rs, zx_json_err *err);

/* Body format from a Content-Type header value: "application/x-ndjson",
 * "application/jsonl", "application/ndjson" (case-insensitive, parameters
 * after ';' and surrounding blanks ignored) -> ZX_BODY_NDJSON; anything else,
 * including NULL -> ZX_BODY_JSON. */
zx_body_format zx_body_format_from_content_type(const char *content_type);

#endif
