/*
 * os_bulk.h — reading a `_bulk` answer of OpenSearch (or Elasticsearch):
 * one result per item sent, in the order sent.  The body is the server's
 * (or whatever answered in its place): any bytes, bounded by the caller's
 * response limit; parsed with jansson.  Pure: no I/O.
 */
#ifndef ZX_DEST_OS_BULK_H
#define ZX_DEST_OS_BULK_H

#include <stddef.h>

/* One item's result. */
typedef struct zx_os_item {
    int status;         /* its HTTP status, 100..599 */
    int is_delete;      /* the item's action was "delete" */
    char why[240];      /* non-2xx: "HTTP 400 mapper_parsing_exception:
                           failed to parse field [n]..." (the error's type
                           and reason, control characters replaced by
                           spaces, cut); "" for 2xx.  Always
                           NUL-terminated */
} zx_os_item;

/* Read the answer body (len bytes; need not be NUL-terminated) of a
 * _bulk request of nitems items.  For each item i, in order, calls
 * each(ctx, i, &item); stops when each returns non-zero.  Returns 0 when
 * the answer has an "items" array of exactly nitems objects, each with
 * one action holding an integer "status" in 100..599 (each was called for
 * every item); -1 with a message in err (not JSON, no items, a count
 * that differs, an item without status: nothing of it can be trusted;
 * each may have been called for the items before the bad one), or the
 * non-zero value each returned. */
int zx_os_bulk_parse(const char *body, size_t len, size_t nitems,
                     int (*each)(void *ctx, size_t i, const zx_os_item *it), void *ctx,
                     char *err, size_t errlen);

/* A one-line summary of an error answer of OpenSearch (a non-2xx
 * request, not an item): "<type>: <reason>" of its "error" object (or its
 * "error" string), control characters replaced, cut to outlen - 1 bytes;
 * "" when body holds none.  Never fails. */
void zx_os_error_text(const char *body, size_t len, char *out, size_t outlen);

#endif
