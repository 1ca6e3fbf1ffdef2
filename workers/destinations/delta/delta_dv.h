/*
 * delta_dv.h — Delta Lake deletion vectors (PROTOCOL.md "Deletion
 * Vectors", "Deletion Vector Format", "Deletion Vector File Storage
 * Format"): the set of a data file's row positions (0-based) that are
 * deleted, as a 64-bit roaring bitmap; the DV files that hold them; the
 * names of those files.
 *
 * Bitmap data (a descriptor's sizeInBytes bytes, inline or in a file):
 *   magic 1681511377 (int32 LE), then RoaringBitmap's portable 64-bit
 *   format (RoaringFormatSpec, "Extension for 64-bit implementations"):
 *   numBuckets (uint64 LE), then per bucket, keys ascending, its key (the
 *   values' high 32 bits, uint32 LE, top bit 0) and a portable 32-bit
 *   roaring bitmap of the values' low 32 bits.
 * zx writes array containers (up to 4096 values) and bitmap containers,
 * cookie 12346 (no run containers) with its offset header.  It reads any
 * writer's: array, bitmap and run containers (cookie 12347, offset header
 * only from 4 containers on); and also the "native" layout of PROTOCOL.md's
 * inline example (magic 1681511376, a count of 32-bit bitmaps, bitmap i
 * holding the values whose high 32 bits are i, each after its size; the
 * count, the sizes and that magic big-endian as in the example, or
 * little-endian).
 *
 * DV file: a version byte 1, then per DV its size (int32 BE), its bitmap
 * data and the CRC-32 of that data (uint32 BE).  A descriptor's offset is
 * the offset of the size field; its sizeInBytes the bitmap data's length.
 *
 * Errors: -1 with one line in err ("deletion vector: bucket 2 of 3
 * truncated") where the function takes err; err may be NULL.
 *
 * It must never: trust a count or a length it reads before checking it
 * against the bytes left; hand back more positions than the data file
 * has rows.
 */
#ifndef ZX_DEST_DELTA_DV_H
#define ZX_DEST_DELTA_DV_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* The magic numbers of a DV's bitmap data (read little-endian). */
#define ZX_DV_MAGIC_PORTABLE 1681511377u
#define ZX_DV_MAGIC_NATIVE   1681511376u

/* Appends to out the bitmap data (magic included) of the positions
 * pos[0..n), which the caller gives ascending, unique and below 2^63.
 * n == 0 gives the empty bitmap (12 bytes).  0, or -1 when out of memory
 * or pos is not ascending, unique and below 2^63; out is then as it
 * was. */
int zx_dv_encode(const uint64_t *pos, size_t n, zx_buf *out);

/* Reads the bitmap data p[0..len) of a data file whose last row is
 * max_pos (its row count - 1).  On 0: *pos (malloc'd, the caller frees;
 * NULL when *n is 0) holds the *n positions, ascending and unique, each
 * <= max_pos.  -1 (*pos NULL, *n 0) with one line in err: a bad magic
 * number, data truncated or trailing, keys or values not ascending, a
 * position above max_pos, a container whose cardinality disagrees with
 * its content, a bad offset header, out of memory. */
int zx_dv_decode(const void *p, size_t len, uint64_t max_pos, uint64_t **pos, size_t *n,
                 char *err, size_t errlen);

/* Appends one DV of bitmap data bitmap[0..len) to the DV file being
 * built in file (an empty file gets the version byte first); *offset gets
 * the descriptor's offset (that of the DV's size field).  0, or -1 when
 * out of memory or len is above 2^31 - 1; file is then as it was. */
int zx_dv_file_add(zx_buf *file, const void *bitmap, size_t len, uint64_t *offset);

/* The bitmap data of the DV at offset in file[0..flen), of size bytes (a
 * descriptor's offset and sizeInBytes): *bitmap points into file (valid
 * as long as file is).  -1 with err when the version byte is not 1, the
 * DV is out of the file, its size field is not size, or its CRC-32 does
 * not match. */
int zx_dv_file_get(const void *file, size_t flen, uint64_t offset, uint64_t size,
                   const void **bitmap, char *err, size_t errlen);

/* The path, relative to the table's root, of the DV file of a
 * descriptor with storageType 'u' and this pathOrInlineDv: its random
 * prefix (all but the last 20 characters: letters and digits only, as
 * Delta writes it) and the UUID those 20 characters encode in Z85:
 * "<prefix>/deletion_vector_<uuid>.bin", or "deletion_vector_<uuid>.bin"
 * without a prefix.  0, or -1 when the text is shorter than 20, its
 * prefix has another character (a '/', a '.'), its UUID is not Z85, or
 * out (outlen bytes, NUL included) is too small. */
int zx_dv_uuid_name(const char *path_or_inline, char *out, size_t outlen);

/* The 20 Z85 characters of uuid (and a NUL) in out.  0 (it cannot fail:
 * -1 is kept for the signature's sake). */
int zx_dv_uuid_encode(const unsigned char uuid[16], char out[21]);

#endif /* ZX_DEST_DELTA_DV_H */
