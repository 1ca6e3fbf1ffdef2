/*
 * z85.h — Z85, ZeroMQ's base-85 (RFC 32, rfc.zeromq.org/spec/32): each
 * 4 bytes, read as a big-endian number, become 5 characters of an
 * alphabet safe in JSON.  Delta Lake writes deletion vectors' inline
 * bitmaps and file UUIDs in it (workers/destinations/delta/delta_dv.h).
 *
 * Only whole groups: no padding scheme (RFC 32 has none).  Tested against
 * the RFC's example ("HelloWorld") and Delta's protocol examples
 * (tests/unit/test_delta_dv.c); fuzzed (tests/fuzz/fuzz_delta_dv.c).
 */
#ifndef ZX_COMMON_Z85_H
#define ZX_COMMON_Z85_H

#include <stddef.h>

#include "common/buf.h"

/* Characters zx_z85_encode writes for n bytes (without the NUL). */
#define ZX_Z85_LEN(n) ((n) / 4 * 5)

/* Writes the Z85 text of p[0..n) and a NUL to out (outlen bytes, at
 * least ZX_Z85_LEN(n) + 1).  0, or -1 when n is not a multiple of 4 or
 * out is too small (out untouched). */
int zx_z85_encode(const void *p, size_t n, char *out, size_t outlen);

/* Appends the bytes of the Z85 text s[0..slen) to out (slen / 5 * 4 of
 * them).  0, or -1 when slen is not a multiple of 5, a character is not
 * in the alphabet, a group is above 2^32 - 1, or out of memory; out is
 * then as it was. */
int zx_z85_decode(const char *s, size_t slen, zx_buf *out);

#endif /* ZX_COMMON_Z85_H */
