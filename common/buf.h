/*
 * buf.h — growth of memory, one way for all of zx: a growable byte buffer
 * (zx_buf) and room in a growable array (zx_grow, zx_grow_to).  Header
 * only, so that modules that link nothing else of common/ (formats/, the
 * fuzz targets) use it too.
 *
 * Ownership: a zx_buf owns p (malloc'd; NULL while cap is 0).  Start with
 * {0} (or zx_buf_init); release with zx_buf_free, after which the buffer is
 * empty and usable again.  p may move on every call that adds: never keep a
 * pointer into it across one.
 *
 * Failure: every function that allocates returns 0, or -1 when out of
 * memory (or when the size would overflow), leaving the buffer or the
 * array exactly as it was.  Nothing here logs or aborts.
 *
 * It must never: be used across threads without the caller's lock.
 */
#ifndef ZX_COMMON_BUF_H
#define ZX_COMMON_BUF_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable arrays ------------------------------------------------- */

/* Make room for need elements of size bytes in the array *arr (arr is the
 * address of the array pointer, e.g. &w->items) of capacity *cap: when
 * need > *cap, the capacity doubles (from first, when it was 0) until it
 * holds need.  0, or -1 (out of memory or overflow; nothing changed). */
static inline int zx_grow_to(void *arr, size_t need, size_t *cap, size_t size, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : (first ? first : 1);
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return -1;
        ncap *= 2;
    }
    if (size && ncap > SIZE_MAX / size)
        return -1;
    void **pp = (void **)arr;
    void *p = realloc(*pp, ncap * size);
    if (!p)
        return -1;
    *pp = p;
    *cap = ncap;
    return 0;
}

/* Room for one more element when *n == *cap (first capacity: 64). */
static inline int zx_grow(void *arr, size_t n, size_t *cap, size_t size)
{
    return zx_grow_to(arr, n + 1, cap, size, 64);
}

/* ---- a growable byte buffer ------------------------------------------ */

/* Bytes p[0..len) of cap allocated; p[len] is '\0' once anything was
 * added (text can be used as a C string, bytes need not care). */
typedef struct zx_buf {
    char *p;
    size_t len, cap;
} zx_buf;

static inline void zx_buf_init(zx_buf *b)
{
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Free the bytes; b is empty again.  NULL is a no-op. */
static inline void zx_buf_free(zx_buf *b)
{
    if (!b)
        return;
    free(b->p);
    zx_buf_init(b);
}

/* len = 0, the storage kept for reuse. */
static inline void zx_buf_reset(zx_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

/* Room for `more` bytes after len and a NUL, for the caller to write at
 * p + len itself (then add to len).  0 or -1. */
static inline int zx_buf_reserve(zx_buf *b, size_t more)
{
    if (more > SIZE_MAX / 2 - b->len - 1)
        return -1;
    size_t cap = b->cap;
    if (zx_grow_to(&b->p, b->len + more + 1, &cap, 1, 256) < 0)
        return -1;
    b->cap = cap;
    return 0;
}

/* Append n bytes at s (kept NUL-terminated).  0 or -1. */
static inline int zx_buf_put(zx_buf *b, const void *s, size_t n)
{
    if (zx_buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* Append printf output (kept NUL-terminated).  0 or -1. */
static inline int zx_buf_printf(zx_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline int zx_buf_printf(zx_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || zx_buf_reserve(b, (size_t)n) < 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

#endif
