/*
 * os_doc.h — what the OpenSearch destination sends, as text: a row as a
 * JSON document, a key as a document id, the result's columns as an
 * index mapping.  Pure functions over zx_buf (common/buf.h); no I/O.
 * The value rules are common/dcell.h's (a value is converted where
 * nothing is lost, else it is a misfit: written as null).
 */
#ifndef ZX_DEST_OS_DOC_H
#define ZX_DEST_OS_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dtype.h"
#include "common/rowset.h"
#include "workers/destinations/dest.h"

/* OpenSearch's (and Elasticsearch's) bound on a document id. */
#define ZX_OS_ID_MAX 512

/* Append to b the document of one row: a JSON object with one member per
 * column (cols[i], value vals[i]; NULL and missing values as null), on one
 * line (no newline added).  Values: integers and finite reals as JSON
 * numbers; booleans; text, dates ("YYYY-MM-DD"), timestamps (UTC text
 * "YYYY-MM-DDTHH:MM:SS.ffffffZ") and decimals (their literal) as JSON
 * strings; JSON as is; bytes as a base64 string.  A misfit (NaN, text in
 * an integer column that is no integer...) is written as null, counted in
 * st->nulled and the first noted with zx_dest_misfit.  tmp is scratch.
 * Returns 0, or -1 when out of memory (b then holds a partial document:
 * the caller truncates it). */
int zx_os_doc(zx_buf *b, const zx_dcol *cols, size_t ncols, const zx_value *vals,
              zx_buf *tmp, zx_dest_stats *st);

/* Append to id the document id of a key: its values vals[keys[0..nkeys)]
 * as text (integers in decimal, reals as their shortest text, booleans
 * true/false, timestamps as UTC text, text and JSON as they are); with
 * nkeys > 1 joined by '|', each '\' and '|' inside a value escaped with
 * '\'.  Returns 1, 0 with why (a static string) when the key cannot be
 * an id (a NULL part, not UTF-8, a NUL byte, longer than ZX_OS_ID_MAX
 * bytes), or -1 when out of memory.  tmp is scratch. */
int zx_os_doc_id(zx_buf *id, const zx_value *vals, const size_t *keys, size_t nkeys,
                 zx_buf *tmp, const char **why);

/* Append to b the body of a create-index request for the columns:
 * {"mappings":{"properties":{...}}}, a property per column but JSON ones
 * (left to dynamic mapping): key columns (names among key_cols) keyword,
 * TEXT text with a keyword sub-field (ignore_above 256), INT64 long,
 * DOUBLE and DECIMAL double, BOOL boolean, DATE and TIMESTAMP date, BYTES
 * binary.  Returns 0, or -1 when out of memory. */
int zx_os_mapping(zx_buf *b, const zx_dcol *cols, size_t ncols, const char *const *key_cols,
                  size_t nkey_cols);

#endif
