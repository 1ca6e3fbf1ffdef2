/*
 * json_fast.h — the fast path for push bodies: JSON / NDJSON to rows in one
 * pass, without jansson and without any allocation outside the rowset.
 *
 * Why it exists: tests/bench/json_libs.c measured jansson (the only
 * packaged library that is exact on int64, checks UTF-8 and is NUL-safe) at
 * ~120,000 events/s per core, below what one stream worker must ingest.
 * This parser is the fast path only.  zx_json_rows_parse (json_rows.h, with
 * jansson) stays the reference: it is the oracle this parser is fuzzed
 * against (tests/unit/test_json_fast.c, tests/fuzz/fuzz_json_fast.c) and the
 * one that explains errors.
 *
 * Contract: for every input it accepts, zx_json_fast_parse appends EXACTLY
 * the rows, columns (names, order, merged types) and cells (types, values,
 * string bytes) that zx_json_rows_parse would append to the same rowset.
 * Everything else — invalid input, and the rare valid input it does not
 * handle — makes it return -1 without saying why; the caller then resets the
 * rowset and asks zx_json_rows_parse for the authoritative result or error.
 *
 * Valid input it declines (returns -1 for; jansson handles it):
 *   - a key written twice verbatim in one object (top level or nested);
 *   - an integer beyond int64, or a number beyond double range (jansson's
 *     path keeps them as their literal: a number kept as text, rowset.h);
 *   - a number written with more than 120 characters;
 *   - an event object with more than 1000 keys, or whose keys written
 *     with backslash escapes take more than 4 KiB once decoded;
 *   - a nested object/array whose compact text exceeds 32 KiB, or more than
 *     256 keys in the nested objects open at one time.
 * It also returns -1 where zx_json_rows_parse fails: empty/blank body,
 * nesting deeper than ZX_JSON_MAX_DEPTH, more than ZX_JSON_MAX_COLUMNS
 * columns, "\u0000", invalid UTF-8, lone surrogates, a body or line that is
 * not an object (or, for ZX_BODY_JSON, an array of objects), out of memory.
 *
 * It must never: read outside [body, body + len), recurse more than
 * ZX_JSON_MAX_DEPTH levels, allocate (other than through the rowset), or
 * produce a rowset that differs from zx_json_rows_parse's.
 */
#ifndef ZX_COMMON_JSON_FAST_H
#define ZX_COMMON_JSON_FAST_H

#include <stddef.h>

#include "common/json_rows.h"
#include "common/rowset.h"

/* Parse `len` bytes at `body` (need not be NUL-terminated) in format `fmt`
 * and append one row per event to `rs` (which may already hold rows and
 * columns).  Returns the number of rows appended (>= 0), or -1 when the
 * body is invalid or outside what the fast path handles (see above).
 * On -1, `rs` may hold some of the rows, columns and arena strings of this
 * body (an open row is dropped): the caller must zx_rowset_reset it before
 * calling zx_json_rows_parse.  Uses about 64 KiB of stack.  Thread-safe on
 * distinct rowsets. */
int zx_json_fast_parse(const char *body, size_t len, zx_body_format fmt,
                       zx_rowset *rs);

/* The rows of one message (a Kafka message, a Kinesis record): this fast
 * parser for the common case, and zx_json_rows_parse (jansson) for what it
 * declines, which also says what is wrong.  rs is taken back to mk (saved
 * by the caller before this message) before the second try and on
 * failure, so a bad message leaves none of its rows.  Returns the rows
 * appended (>= 0), or -1 with *err filled (err->code: ZX_JSON_E_NOMEM,
 * ZX_JSON_E_COLUMNS, ...; an empty message is ZX_JSON_E_EMPTY). */
int zx_json_message_rows(const char *p, size_t len, zx_body_format fmt, zx_rowset *rs,
                         const zx_rowset_mark *mk, zx_json_err *err);

/* The reason of a reject for a message zx_json_message_rows refused with
 * error e ("not JSON: at byte 3 ...", "the message is a string; ...",
 * "empty message": e's code picks the words; json_rows.h's messages speak
 * of a "body"), into out (size n, NUL-ended). */
void zx_json_message_reason(const zx_json_err *e, char *out, size_t n);

#endif
