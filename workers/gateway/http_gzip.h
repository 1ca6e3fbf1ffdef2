/* http_gzip.h - streaming gzip inflation of HTTP request bodies, with a cap.
 *
 * Used only by http_body.c for "Content-Encoding: gzip" bodies.  It inflates into
 * an evbuffer as compressed bytes arrive, and stops as soon as the inflated
 * size passes the cap, so a small "gzip bomb" never allocates more than the
 * cap (plus one 64 KiB block).  It never looks at the inflated bytes.
 */
#ifndef ZX_HTTP_GZIP_H
#define ZX_HTTP_GZIP_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;

typedef struct zx_http_gz zx_http_gz;

typedef enum zx_http_gz_result {
    ZX_HTTP_GZ_OK = 0,
    ZX_HTTP_GZ_TOO_BIG,   /* inflated size above the cap */
    ZX_HTTP_GZ_CORRUPT,   /* not gzip, bad checksum, truncated, garbage after */
    ZX_HTTP_GZ_NOMEM,
} zx_http_gz_result;

/* Returns a new inflater (gzip members only, several members concatenated are
 * accepted), or NULL if out of memory.  Free with zx_http_gz_free. */
zx_http_gz *zx_http_gz_new(uint64_t max_out);

/* Inflates len bytes from in, appending to out.  Returns ZX_HTTP_GZ_OK, or
 * an error after which the inflater must only be freed. */
zx_http_gz_result zx_http_gz_feed(zx_http_gz *g, const void *in, size_t len,
                                  struct evbuffer *out);

/* At the end of the body: ZX_HTTP_GZ_OK if the last member ended cleanly or
 * if there was no input at all (empty body), else ZX_HTTP_GZ_CORRUPT. */
zx_http_gz_result zx_http_gz_finish(zx_http_gz *g);

/* Inflated bytes so far. */
uint64_t zx_http_gz_total_out(const zx_http_gz *g);

/* NULL is a no-op. */
void zx_http_gz_free(zx_http_gz *g);

#endif
