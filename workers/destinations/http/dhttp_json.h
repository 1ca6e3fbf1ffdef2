/*
 * dhttp_json.h — the HTTP API destination's request bodies: rows and keys
 * of a zx_rowset as JSON items, and a batch of items in the body's shape
 * (array, NDJSON, or an array wrapped in an object).
 *
 * A value becomes (dest.h's cell types, the column's zx_dtype):
 *   NULL → null; INT → a number (a BOOL column: true/false); REAL → a
 *   number ("%.17g"; NaN and infinities are misfits: null); BOOL → true or
 *   false; TIMESTAMP → "YYYY-MM-DDTHH:MM:SS.ffffffZ"; TEXT → a string,
 *   except in a BYTES column (base64 text), an INT64 or DOUBLE column
 *   (the number when the text is one, else a misfit: null); JSON → the
 *   JSON as it is, a number kept as text as that number.  Text that is
 *   not valid UTF-8 has its bad bytes replaced by U+FFFD.
 * A misfit is counted in st->nulled and noted (zx_dest_misfit): the run
 * then fails (dest.h).
 *
 * It must never: write anything but valid JSON.
 */
#ifndef ZX_DEST_DHTTP_JSON_H
#define ZX_DEST_DHTTP_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dtype.h"
#include "common/rowset.h"
#include "workers/destinations/dest.h"

typedef enum { ZX_DHTTP_ARRAY, ZX_DHTTP_NDJSON, ZX_DHTTP_WRAP } zx_dhttp_shape;

/* Append s[0..n) to b as a JSON string (quoted, escaped).  0 or -1 (out
 * of memory). */
int zx_dhttp_json_str(zx_buf *b, const char *s, size_t n);

/* Append row r of rs as a JSON object to b: the members are the columns
 * cols[0..ncols) (rs's, in that order), preceded by "<op_field>":"upsert"
 * when op_field is not NULL.  vals: room for rs->ncols values (scratch).
 * Misfits noted in st.  0 or -1 (out of memory). */
int zx_dhttp_row(zx_buf *b, const zx_rowset *rs, uint32_t r, const zx_dcol *cols,
                 size_t ncols, const char *op_field, zx_value *vals, zx_dest_stats *st);

/* Append key r of keys (columns: the key columns, whose types are those of
 * the result's columns of the same names in cols) to b: the object
 * {"k1": v1, ...}, or, when op is not NULL, {"<op>":"delete","key":{...}}.
 * 0 or -1 (out of memory). */
int zx_dhttp_key(zx_buf *b, const zx_rowset *keys, uint32_t r, const zx_dcol *cols,
                 size_t ncols, const char *op, zx_value *vals, zx_dest_stats *st);

/* The body's start, the separator between two items, and its end, for
 * shape (wrap: the member name, used by ZX_DHTTP_WRAP).  0 or -1. */
int zx_dhttp_open(zx_buf *b, zx_dhttp_shape shape, const char *wrap);
int zx_dhttp_sep(zx_buf *b, zx_dhttp_shape shape);
int zx_dhttp_close(zx_buf *b, zx_dhttp_shape shape);

/* The Content-Type of shape (static text). */
const char *zx_dhttp_content_type(zx_dhttp_shape shape);

#endif
