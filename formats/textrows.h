/*
 * textrows.h — rows as CSV or NDJSON text, appended to a growable buffer
 * (the files destination writes the buffer out in large blocks).
 *
 * Values are converted per column as common/dcell.h says for files
 * (zx_dc_target_file); a misfit is
 * written as NULL and counted in *nulled, and when misfit is not NULL and
 * *misfit is SIZE_MAX, *misfit gets the column (0-based) of the first.
 *
 * CSV (RFC 4180): a header line of the column names, then one line per
 * row; lines end with "\r\n"; fields separated by ','; a field is quoted
 * ("...") when it contains ',', '"', CR or LF, or is an empty string,
 * and a quote inside is doubled; NULL is an empty unquoted field (so ""
 * is the empty string and nothing is NULL).  BOOL true / false;
 * TIMESTAMP "YYYY-MM-DDTHH:MM:SS.ffffffZ" (UTC); DATE "YYYY-MM-DD";
 * DOUBLE the shortest text that reads back exactly, "NaN", "Infinity",
 * "-Infinity"; DECIMAL with exactly scale fraction digits; JSON its text;
 * BYTES base64 (RFC 4648, with padding); TEXT its bytes.
 *
 * NDJSON: one object per row, keys in column order, "\n" after each.
 * NULL is null; INT64 a number (exact); DOUBLE a number (shortest
 * round-trip text), NaN and ±Infinity as null (counted in *nulled: JSON has
 * none); BOOL true / false; TIMESTAMP, DATE and DECIMAL strings (a decimal
 * stays exact as a string); JSON embedded as JSON (line breaks between
 * its tokens become spaces); BYTES a base64 string; TEXT a string.
 * Strings are escaped as zx_dc_json_quote does; TEXT values are valid
 * UTF-8 (dcell.h), and bytes of a column name that are not UTF-8 are
 * replaced by U+FFFD.
 *
 * Row functions take a scratch buffer for the conversions (kept between
 * calls to save allocations; free it with zx_buf_free).  Functions return
 * 0, or -1 when out of memory (the buffer then holds a partial line:
 * discard it).
 */
#ifndef ZX_FORMATS_TEXTROWS_H
#define ZX_FORMATS_TEXTROWS_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "common/rowset.h"
#include "common/dcell.h"

/* The CSV header line: column names as fields. */
int zx_csv_header(zx_buf *b, const zx_dcol *cols, size_t ncols);

/* One CSV line of vals[0..ncols) (the row's values, in column order). */
int zx_csv_row(zx_buf *b, const zx_dcol *cols, size_t ncols, const zx_value *vals,
               zx_buf *scratch, uint64_t *nulled, size_t *misfit);

/* One NDJSON line of vals[0..ncols). */
int zx_ndjson_row(zx_buf *b, const zx_dcol *cols, size_t ncols, const zx_value *vals,
                  zx_buf *scratch, uint64_t *nulled, size_t *misfit);

/* Append base64 of s[0..n) (no quotes). */
int zx_base64(zx_buf *b, const unsigned char *s, size_t n);

#endif
