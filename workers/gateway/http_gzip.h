/* http_gzip.h - streaming gzip inflation of HTTP request bodies, with a cap.
 *
 * Used only by http_body.c for "Content-Encoding: gzip" bodies.  It inflates into
 * a caller's growable buffer (zx_http_gz_out) as compressed bytes arrive,
 * asking the caller for room (so the caller can count and refuse it), and
 * stops as soon as the inflated size passes the cap, so a small "gzip bomb"
 * never makes it ask for more than the cap plus one byte.  It never looks at
 * the inflated bytes.
 */
#ifndef ZX_HTTP_GZIP_H
#define ZX_HTTP_GZIP_H

#include <stddef.h>
#include <stdint.h>

typedef struct zx_http_gz zx_http_gz;

typedef enum zx_http_gz_result {
    ZX_HTTP_GZ_OK = 0,
    ZX_HTTP_GZ_TOO_BIG,   /* inflated size above the cap */
    ZX_HTTP_GZ_CORRUPT,   /* not gzip, bad checksum, truncated, garbage after */
    ZX_HTTP_GZ_NOMEM,
    ZX_HTTP_GZ_REFUSED,   /* out->grow refused room (the caller's own bound) */
} zx_http_gz_result;

/* A growable output buffer owned by the caller: bytes p[0..len), room up to
 * cap.  grow must make cap - len >= want (it may move p) and return
 * ZX_HTTP_GZ_OK, or ZX_HTTP_GZ_NOMEM / ZX_HTTP_GZ_REFUSED leaving the buffer
 * as it was.  arg is the caller's. */
typedef struct zx_http_gz_out {
    unsigned char *p;
    size_t len, cap;
    zx_http_gz_result (*grow)(struct zx_http_gz_out *o, size_t want);
    void *arg;
} zx_http_gz_out;

/* Returns a new inflater (gzip members only, several members concatenated are
 * accepted), or NULL if out of memory.  Free with zx_http_gz_free. */
zx_http_gz *zx_http_gz_new(uint64_t max_out);

/* Inflates len bytes from in, appending to out (growing it through
 * out->grow, never asking for more than the cap plus one byte in total).
 * Returns ZX_HTTP_GZ_OK, or an error after which the inflater must only be
 * freed (what was appended so far stays in out). */
zx_http_gz_result zx_http_gz_feed(zx_http_gz *g, const void *in, size_t len,
                                  zx_http_gz_out *out);

/* At the end of the body: ZX_HTTP_GZ_OK if the last member ended cleanly or
 * if there was no input at all (empty body), else ZX_HTTP_GZ_CORRUPT. */
zx_http_gz_result zx_http_gz_finish(zx_http_gz *g);

/* NULL is a no-op. */
void zx_http_gz_free(zx_http_gz *g);

#endif
