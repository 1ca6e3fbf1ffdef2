/*
 * frame_read.h — private to proto/: the bounds-checked MessagePack reader
 * that zx_frame_decode (frame.c) is built on (frame_read.c).
 *
 * It must never be included outside proto/frame*.c: the frame layout and
 * its reader are internal; the contract is frame.h.
 */
#ifndef ZX_PROTO_FRAME_READ_H
#define ZX_PROTO_FRAME_READ_H

#include <stddef.h>
#include <stdint.h>

/* The read position in a buffer and where errors go. */
typedef struct rd {
    const uint8_t *start, *p, *end;
    char *err;
    size_t errlen;
} rd;

enum { K_NIL, K_BOOL, K_INT, K_FLOAT, K_STR, K_BIN, K_EXT, K_ARRAY, K_MAP };

typedef struct item {
    int kind;
    int neg;            /* K_INT: the value is negative (i), else u */
    int8_t ext;         /* K_EXT: extension type */
    uint32_t n;         /* STR/BIN/EXT: payload bytes; ARRAY/MAP: count */
    uint64_t u;         /* K_INT, !neg */
    int64_t i;          /* K_INT, neg */
    double d;           /* K_FLOAT */
    const uint8_t *s;   /* STR/BIN/EXT payload */
} item;

/* Names of the K_* kinds, for messages ("array"). */
extern const char *const zx_fr_kind_names[];

/* Formats "frame: byte N: <fmt>" into r->err (N = r->p's offset); returns
 * -1 so that callers can `return zx_fr_fail(...)`. */
__attribute__((format(printf, 2, 3)))
int zx_fr_fail(rd *r, const char *fmt, ...);

/* Big-endian unsigned integer of n (1..8) bytes at p. */
static inline uint64_t zx_fr_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int k = 0; k < n; k++)
        v = v << 8 | p[k];
    return v;
}

/* Reads the header of the next value; for STR/BIN/EXT also steps over the
 * payload (it->s points at it, inside the buffer).  Counts of arrays and
 * maps are checked against the bytes left (each element takes at least one
 * byte), so a count never exceeds what the buffer can hold.  0, or -1 (error
 * in r->err). */
int zx_fr_next(rd *r, item *it);

/* zx_fr_next, and fails with "<what>: expected <kind>, got <kind>" (r->p
 * left at the value) unless the value is of that kind.  0 or -1. */
int zx_fr_want(rd *r, item *it, int kind, const char *what);

/* A non-negative integer into *out.  0 or -1. */
int zx_fr_want_u64(rd *r, uint64_t *out, const char *what);

/* Steps over one whole value of any shape (iteratively: no recursion on
 * hostile nesting).  0 or -1. */
int zx_fr_skip(rd *r);

#endif
