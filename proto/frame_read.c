/*
 * frame_read.c — a bounds-checked MessagePack reader over a byte buffer,
 * for zx_frame_decode (see frame_read.h).
 *
 * It reads the msgpack bytes directly (see frame.h for why): every read is
 * bounds-checked against the end of the buffer and no count taken from the
 * input is ever used to size an allocation.  It must never crash, read out
 * of bounds or recurse on hostile input, and never allocate.
 */
#include "proto/frame_read.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *const zx_fr_kind_names[] = {
    "nil", "boolean", "integer", "float", "string", "binary", "extension",
    "array", "map",
};

__attribute__((format(printf, 2, 3)))
int zx_fr_fail(rd *r, const char *fmt, ...)
{
    if (r->err && r->errlen) {
        int n = snprintf(r->err, r->errlen, "frame: byte %zu: ",
                         (size_t)(r->p - r->start));
        if (n >= 0 && (size_t)n < r->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

#define NEED(n)                                                       \
    do {                                                              \
        if ((size_t)(r->end - r->p) < (size_t)(n))                    \
            return zx_fr_fail(r, "truncated frame");                  \
    } while (0)

/* Read the header of the next value; for STR/BIN/EXT also step over the
 * payload (it->s points at it).  Counts of arrays and maps are checked
 * against the bytes left (each element takes at least one byte). */
int zx_fr_next(rd *r, item *it)
{
    NEED(1);
    uint8_t b = *r->p++;
    uint32_t n;
    int w;

    if (b <= 0x7f) {
        it->kind = K_INT; it->neg = 0; it->u = b;
        return 0;
    }
    if (b >= 0xe0) {
        it->kind = K_INT; it->neg = 1; it->i = (int8_t)b;
        return 0;
    }
    if (b >= 0xa0 && b <= 0xbf) {
        n = b & 0x1f;
        it->kind = K_STR;
        goto payload;
    }
    if (b >= 0x90 && b <= 0x9f) {
        n = b & 0x0f;
        it->kind = K_ARRAY;
        goto container;
    }
    if (b >= 0x80 && b <= 0x8f) {
        n = b & 0x0f;
        it->kind = K_MAP;
        goto container;
    }
    switch (b) {
    case 0xc0: it->kind = K_NIL; return 0;
    case 0xc2: case 0xc3: it->kind = K_BOOL; it->u = b & 1; return 0;
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        w = 1 << (b - 0xcc);
        NEED(w);
        it->kind = K_INT; it->neg = 0; it->u = zx_fr_be(r->p, w);
        r->p += w;
        return 0;
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        w = 1 << (b - 0xd0);
        NEED(w);
        uint64_t u = zx_fr_be(r->p, w);
        r->p += w;
        int64_t v = w == 1 ? (int8_t)u : w == 2 ? (int16_t)u
                  : w == 4 ? (int32_t)u : (int64_t)u;
        it->kind = K_INT;
        it->neg = v < 0;
        if (v < 0) it->i = v; else it->u = (uint64_t)v;
        return 0;
    }
    case 0xca: {
        NEED(4);
        uint32_t u = (uint32_t)zx_fr_be(r->p, 4);
        float f;
        memcpy(&f, &u, 4);
        r->p += 4;
        it->kind = K_FLOAT; it->d = f;
        return 0;
    }
    case 0xcb: {
        NEED(8);
        uint64_t u = zx_fr_be(r->p, 8);
        memcpy(&it->d, &u, 8);
        r->p += 8;
        it->kind = K_FLOAT;
        return 0;
    }
    case 0xd9: case 0xda: case 0xdb:
        w = 1 << (b - 0xd9);
        NEED(w);
        n = (uint32_t)zx_fr_be(r->p, w);
        r->p += w;
        it->kind = K_STR;
        goto payload;
    case 0xc4: case 0xc5: case 0xc6:
        w = 1 << (b - 0xc4);
        NEED(w);
        n = (uint32_t)zx_fr_be(r->p, w);
        r->p += w;
        it->kind = K_BIN;
        goto payload;
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        n = 1u << (b - 0xd4);
        NEED(1);
        it->ext = (int8_t)*r->p++;
        it->kind = K_EXT;
        goto payload;
    case 0xc7: case 0xc8: case 0xc9:
        w = 1 << (b - 0xc7);
        NEED(w + 1);
        n = (uint32_t)zx_fr_be(r->p, w);
        it->ext = (int8_t)r->p[w];
        r->p += w + 1;
        it->kind = K_EXT;
        goto payload;
    case 0xdc: case 0xdd:
        w = b == 0xdc ? 2 : 4;
        NEED(w);
        n = (uint32_t)zx_fr_be(r->p, w);
        r->p += w;
        it->kind = K_ARRAY;
        goto container;
    case 0xde: case 0xdf:
        w = b == 0xde ? 2 : 4;
        NEED(w);
        n = (uint32_t)zx_fr_be(r->p, w);
        r->p += w;
        it->kind = K_MAP;
        goto container;
    default:
        r->p--;
        return zx_fr_fail(r, "invalid msgpack byte 0x%02x", b);
    }
payload:
    NEED(n);
    it->s = r->p;
    it->n = n;
    r->p += n;
    return 0;
container:
    if ((uint64_t)n * (it->kind == K_MAP ? 2 : 1) > (uint64_t)(r->end - r->p))
        return zx_fr_fail(r, "truncated frame: %s of %" PRIu32
                          " elements does not fit in the %zu bytes left",
                          zx_fr_kind_names[it->kind], n, (size_t)(r->end - r->p));
    it->n = n;
    return 0;
}

int zx_fr_want(rd *r, item *it, int kind, const char *what)
{
    const uint8_t *at = r->p;
    if (zx_fr_next(r, it) < 0)
        return -1;
    if (it->kind != kind) {
        r->p = at;
        return zx_fr_fail(r, "%s: expected %s, got %s", what, zx_fr_kind_names[kind],
                          zx_fr_kind_names[it->kind]);
    }
    return 0;
}

int zx_fr_want_u64(rd *r, uint64_t *out, const char *what)
{
    item it;
    if (zx_fr_want(r, &it, K_INT, what) < 0)
        return -1;
    if (it.neg)
        return zx_fr_fail(r, "%s: negative", what);
    *out = it.u;
    return 0;
}

/* Step over one whole value of any shape, iteratively. */
int zx_fr_skip(rd *r)
{
    uint64_t pending = 1;
    item it;
    while (pending) {
        if (zx_fr_next(r, &it) < 0)
            return -1;
        pending--;
        if (it.kind == K_ARRAY)
            pending += it.n;
        else if (it.kind == K_MAP)
            pending += 2 * (uint64_t)it.n;
    }
    return 0;
}
