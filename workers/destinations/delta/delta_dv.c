/*
 * delta_dv.c — see delta_dv.h: the roaring codec of Delta's deletion
 * vectors, their file format and the names of their files.
 *
 * The decoder walks a cursor over the bytes; every count it reads is
 * compared with the bytes left before it is multiplied or used, and every
 * position it produces is compared with the data file's last row before
 * it is stored, so that memory stays bounded by the data file's row count
 * whatever the input claims.
 *
 * It must never: read outside [p, p + len); store a position it has not
 * checked.
 */
#include "workers/destinations/delta/delta_dv.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/z85.h"

#define COOKIE_RUN    12347u /* SERIAL_COOKIE: low 16 bits; high: containers - 1 */
#define COOKIE_NO_RUN 12346u /* SERIAL_COOKIE_NO_RUNCONTAINER */
#define ARRAY_MAX     4096u  /* an array container holds at most this many */
#define BITMAP_BYTES  8192u  /* a bitmap container: 2^16 bits */

static uint32_t le16(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
    return le16(p) | le16(p + 2) << 16;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint8_t *put16(uint8_t *d, uint32_t v)
{
    d[0] = (uint8_t)v;
    d[1] = (uint8_t)(v >> 8);
    return d + 2;
}

static uint8_t *put32(uint8_t *d, uint32_t v)
{
    return put16(put16(d, v & 0xFFFF), v >> 16);
}

static void put32be(uint8_t *d, uint32_t v)
{
    d[0] = (uint8_t)(v >> 24);
    d[1] = (uint8_t)(v >> 16);
    d[2] = (uint8_t)(v >> 8);
    d[3] = (uint8_t)v;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- encoding ---------------------------------------------------------- */

/* Containers and data bytes of the 32-bit bitmap of v[0..n) (one bucket). */
static size_t enc32_size(const uint64_t *v, size_t n, size_t *ncont)
{
    size_t bytes = 8, nc = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && (v[j] >> 16) == (v[i] >> 16))
            j++;
        bytes += 8 + (j - i <= ARRAY_MAX ? 2 * (j - i) : BITMAP_BYTES);
        nc++;
        i = j;
    }
    *ncont = nc;
    return bytes;
}

/* Writes the 32-bit bitmap of v[0..n) (their low 32 bits) at d, which
 * has room for enc32_size bytes; returns the end. */
static uint8_t *enc32(const uint64_t *v, size_t n, uint8_t *d)
{
    size_t nc;
    enc32_size(v, n, &nc);
    uint8_t *start = d;
    d = put32(put32(d, COOKIE_NO_RUN), (uint32_t)nc);
    uint8_t *desc = d, *offs = d + 4 * nc;
    d = offs + 4 * nc;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && (v[j] >> 16) == (v[i] >> 16))
            j++;
        size_t card = j - i;
        desc = put16(put16(desc, (uint32_t)(v[i] >> 16) & 0xFFFF), (uint32_t)(card - 1));
        offs = put32(offs, (uint32_t)(d - start));
        if (card <= ARRAY_MAX) {
            for (size_t k = i; k < j; k++)
                d = put16(d, (uint32_t)v[k] & 0xFFFF);
        } else {
            memset(d, 0, BITMAP_BYTES);
            for (size_t k = i; k < j; k++) {
                uint32_t low = (uint32_t)v[k] & 0xFFFF;
                d[low >> 3] |= (uint8_t)(1u << (low & 7));
            }
            d += BITMAP_BYTES;
        }
        i = j;
    }
    return d;
}

int zx_dv_encode(const uint64_t *pos, size_t n, zx_buf *out)
{
    size_t total = 12, nb = 0;
    for (size_t i = 0; i < n; i++)
        if (pos[i] >> 63 || (i && pos[i] <= pos[i - 1]))
            return -1;
    for (size_t i = 0; i < n;) {
        size_t j = i, nc;
        while (j < n && (pos[j] >> 32) == (pos[i] >> 32))
            j++;
        total += 4 + enc32_size(pos + i, j - i, &nc);
        nb++;
        i = j;
    }
    if (zx_buf_reserve(out, total) < 0)
        return -1;
    uint8_t *d = (uint8_t *)out->p + out->len;
    d = put32(d, ZX_DV_MAGIC_PORTABLE);
    d = put32(put32(d, (uint32_t)nb), (uint32_t)((uint64_t)nb >> 32));
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && (pos[j] >> 32) == (pos[i] >> 32))
            j++;
        d = enc32(pos + i, j - i, put32(d, (uint32_t)(pos[i] >> 32)));
        i = j;
    }
    out->len += total;
    out->p[out->len] = '\0';
    return 0;
}

/* ---- decoding ---------------------------------------------------------- */

typedef struct dv_rd {
    uint64_t max;          /* the data file's last row */
    uint64_t *v;           /* positions read so far */
    size_t n, cap;
    char where[64];        /* "bucket 2 of 3", for errors */
    char *err;
    size_t errlen;
} dv_rd;

static int rd_fail(dv_rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rd_fail(dv_rd *r, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    seterr(r->err, r->errlen, "deletion vector: %s%s", r->where, what);
    return -1;
}

/* Stores position x after checking it against the data file and the
 * positions before it. */
static int rd_put(dv_rd *r, uint64_t x)
{
    if (x > r->max)
        return rd_fail(r, ": position %" PRIu64 " beyond the data file's last row %" PRIu64, x,
                       r->max);
    if (r->n && x <= r->v[r->n - 1])
        return rd_fail(r, ": positions not ascending (%" PRIu64 " after %" PRIu64 ")", x,
                       r->v[r->n - 1]);
    if (zx_grow(&r->v, r->n, &r->cap, sizeof(*r->v)) < 0)
        return rd_fail(r, ": out of memory");
    r->v[r->n++] = x;
    return 0;
}

/* One container's values from p[*at..len); base: its high 48 bits. */
static int rd_container(dv_rd *r, const uint8_t *p, size_t len, size_t *at, size_t ci,
                        int run, uint32_t card, uint64_t base)
{
    size_t o = *at;
    if (run) {
        if (len - o < 2)
            return rd_fail(r, " truncated");
        size_t nr = le16(p + o);
        o += 2;
        if ((len - o) / 4 < nr)
            return rd_fail(r, " truncated");
        uint32_t total = 0;
        long prev_end = -1;
        for (size_t k = 0; k < nr; k++, o += 4) {
            uint32_t start = le16(p + o), l = le16(p + o + 2);
            if ((long)start <= prev_end || start + l > 0xFFFF)
                return rd_fail(r, ": container %zu: run %zu out of order or past 65535", ci, k);
            prev_end = (long)(start + l);
            total += l + 1;
            if (total > card)
                return rd_fail(r, ": container %zu: runs hold more than its %" PRIu32
                               " values", ci, card);
            for (uint32_t x = start; x <= start + l; x++)
                if (rd_put(r, base | x) < 0)
                    return -1;
        }
        if (total != card)
            return rd_fail(r, ": container %zu: runs hold %" PRIu32 " values, not %" PRIu32, ci,
                           total, card);
    } else if (card <= ARRAY_MAX) {
        if ((len - o) / 2 < card)
            return rd_fail(r, " truncated");
        for (uint32_t k = 0; k < card; k++, o += 2)
            if (rd_put(r, base | le16(p + o)) < 0)
                return -1;
    } else {
        if (len - o < BITMAP_BYTES)
            return rd_fail(r, " truncated");
        uint32_t bits = 0;
        for (size_t b = 0; b < BITMAP_BYTES; b++)
            bits += (uint32_t)__builtin_popcount(p[o + b]);
        if (bits != card)
            return rd_fail(r, ": container %zu: bitmap holds %" PRIu32 " values, not %" PRIu32,
                           ci, bits, card);
        for (size_t b = 0; b < BITMAP_BYTES; b++)
            for (unsigned bit = 0; bit < 8; bit++)
                if (p[o + b] >> bit & 1)
                    if (rd_put(r, base | (b << 3 | bit)) < 0)
                        return -1;
        o += BITMAP_BYTES;
    }
    *at = o;
    return 0;
}

/* A 32-bit portable roaring bitmap at p[0..len) whose values get hi as
 * their high 32 bits; *used: its length. */
static int rd_bitmap32(dv_rd *r, const uint8_t *p, size_t len, uint64_t hi, size_t *used)
{
    if (len < 4)
        return rd_fail(r, " truncated");
    uint32_t cookie = le32(p);
    size_t o = 4, nc;
    const uint8_t *runs = NULL;
    int has_offsets;
    if ((cookie & 0xFFFF) == COOKIE_RUN) {
        nc = (cookie >> 16) + 1;
        if (len - o < (nc + 7) / 8)
            return rd_fail(r, " truncated");
        runs = p + o;
        o += (nc + 7) / 8;
        has_offsets = nc >= 4;
    } else if (cookie == COOKIE_NO_RUN) {
        if (len - o < 4)
            return rd_fail(r, " truncated");
        nc = le32(p + o);
        o += 4;
        if (nc > 65536)
            return rd_fail(r, ": %zu containers (at most 65536)", nc);
        has_offsets = 1;
    } else {
        return rd_fail(r, ": bad cookie %" PRIu32, cookie);
    }
    if ((len - o) / 4 < nc)
        return rd_fail(r, " truncated");
    const uint8_t *desc = p + o, *offs = NULL;
    o += 4 * nc;
    if (has_offsets) {
        if ((len - o) / 4 < nc)
            return rd_fail(r, " truncated");
        offs = p + o;
        o += 4 * nc;
    }
    long prev_key = -1;
    for (size_t i = 0; i < nc; i++) {
        uint32_t key = le16(desc + 4 * i), card = le16(desc + 4 * i + 2) + 1;
        if ((long)key <= prev_key)
            return rd_fail(r, ": container keys not ascending");
        prev_key = key;
        if (offs && le32(offs + 4 * i) != o)
            return rd_fail(r, ": container %zu at offset %" PRIu32 ", not %zu", i,
                           le32(offs + 4 * i), o);
        int run = runs && (runs[i / 8] >> (i % 8) & 1);
        if (rd_container(r, p, len, &o, i, run, card, hi << 32 | (uint64_t)key << 16) < 0)
            return -1;
    }
    *used = o;
    return 0;
}

/* The portable 64-bit format at p[0..len) (after the magic). */
static int rd_portable(dv_rd *r, const uint8_t *p, size_t len)
{
    if (len < 8)
        return rd_fail(r, "truncated (no bucket count)");
    uint64_t nb = (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
    size_t o = 8;
    if (nb > (len - o) / 12) /* a bucket: a key and at least 8 bytes */
        return rd_fail(r, "%" PRIu64 " buckets in %zu bytes", nb, len - o);
    long long prev = -1;
    for (uint64_t b = 0; b < nb; b++) {
        snprintf(r->where, sizeof(r->where), "bucket %" PRIu64 " of %" PRIu64, b + 1, nb);
        if (len - o < 4)
            return rd_fail(r, " truncated");
        uint32_t key = le32(p + o);
        o += 4;
        if (key >> 31)
            return rd_fail(r, ": key %" PRIu32 " has its top bit set", key);
        if ((long long)key <= prev)
            return rd_fail(r, ": keys not ascending");
        prev = key;
        size_t used;
        if (rd_bitmap32(r, p + o, len - o, key, &used) < 0)
            return -1;
        o += used;
    }
    r->where[0] = '\0';
    if (o != len)
        return rd_fail(r, "%zu trailing bytes", len - o);
    return 0;
}

/* The native layout (PROTOCOL.md's inline example) at p[0..len) (after
 * the magic): counts and sizes read with get (big- or little-endian). */
static int rd_native(dv_rd *r, const uint8_t *p, size_t len, uint32_t (*get)(const uint8_t *))
{
    if (len < 4)
        return rd_fail(r, "truncated (no bitmap count)");
    uint32_t nb = get(p);
    size_t o = 4;
    if (nb > (len - o) / 12 || nb > 0x80000000u) /* a size and at least 8 bytes */
        return rd_fail(r, "%" PRIu32 " bitmaps in %zu bytes", nb, len - o);
    for (uint32_t b = 0; b < nb; b++) {
        snprintf(r->where, sizeof(r->where), "bitmap %" PRIu32 " of %" PRIu32, b + 1, nb);
        if (len - o < 4)
            return rd_fail(r, " truncated");
        uint32_t size = get(p + o);
        o += 4;
        if (size > len - o)
            return rd_fail(r, " truncated");
        size_t used;
        if (rd_bitmap32(r, p + o, size, b, &used) < 0)
            return -1;
        if (used != size)
            return rd_fail(r, ": %zu trailing bytes", size - used);
        o += size;
    }
    r->where[0] = '\0';
    if (o != len)
        return rd_fail(r, "%zu trailing bytes", len - o);
    return 0;
}

int zx_dv_decode(const void *p, size_t len, uint64_t max_pos, uint64_t **pos, size_t *n,
                 char *err, size_t errlen)
{
    dv_rd r = {.max = max_pos, .err = err, .errlen = errlen};
    const uint8_t *b = p;
    int rc;
    *pos = NULL;
    *n = 0;
    if (len < 4)
        rc = rd_fail(&r, "%zu bytes, no magic number", len);
    else if (le32(b) == ZX_DV_MAGIC_PORTABLE)
        rc = rd_portable(&r, b + 4, len - 4);
    else if (le32(b) == ZX_DV_MAGIC_NATIVE)
        rc = rd_native(&r, b + 4, len - 4, le32);
    else if (be32(b) == ZX_DV_MAGIC_NATIVE)
        rc = rd_native(&r, b + 4, len - 4, be32);
    else
        rc = rd_fail(&r, "bad magic number %" PRIu32, le32(b));
    if (rc < 0) {
        free(r.v);
        return -1;
    }
    if (r.n == 0) {
        free(r.v);
        r.v = NULL;
    }
    *pos = r.v;
    *n = r.n;
    return 0;
}

/* ---- DV files ---------------------------------------------------------- */

int zx_dv_file_add(zx_buf *file, const void *bitmap, size_t len, uint64_t *offset)
{
    if (len > INT32_MAX)
        return -1;
    size_t first = file->len == 0;
    if (zx_buf_reserve(file, first + 4 + len + 4) < 0)
        return -1;
    uint8_t *d = (uint8_t *)file->p + file->len;
    if (first)
        *d++ = 1;
    *offset = file->len + first;
    put32be(d, (uint32_t)len);
    if (len)
        memcpy(d + 4, bitmap, len);
    uLong crc = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)bitmap, (uInt)len);
    put32be(d + 4 + len, (uint32_t)crc);
    file->len += first + 4 + len + 4;
    file->p[file->len] = '\0';
    return 0;
}

int zx_dv_file_get(const void *file, size_t flen, uint64_t offset, uint64_t size,
                   const void **bitmap, char *err, size_t errlen)
{
    const uint8_t *f = file;
    *bitmap = NULL;
    if (flen < 1 || f[0] != 1) {
        seterr(err, errlen, "deletion vector file: version %d, not 1", flen ? f[0] : -1);
        return -1;
    }
    if (offset < 1 || offset > flen || size > INT32_MAX || flen - offset < 8 ||
        size > flen - offset - 8) {
        seterr(err, errlen, "deletion vector file: %" PRIu64 " bytes at %" PRIu64
               " out of its %zu bytes", size, offset, flen);
        return -1;
    }
    const uint8_t *d = f + offset;
    if (be32(d) != size) {
        seterr(err, errlen, "deletion vector file: the DV at %" PRIu64 " has %" PRIu32
               " bytes, not %" PRIu64, offset, be32(d), size);
        return -1;
    }
    uLong crc = crc32(crc32(0L, Z_NULL, 0), d + 4, (uInt)size);
    if (be32(d + 4 + size) != (uint32_t)crc) {
        seterr(err, errlen, "deletion vector file: the DV at %" PRIu64 " fails its CRC-32",
               offset);
        return -1;
    }
    *bitmap = d + 4;
    return 0;
}

/* ---- DV file names ----------------------------------------------------- */

int zx_dv_uuid_name(const char *path_or_inline, char *out, size_t outlen)
{
    size_t len = strlen(path_or_inline);
    if (len < 20)
        return -1;
    size_t plen = len - 20;
    for (size_t i = 0; i < plen; i++) {
        char c = path_or_inline[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return -1;
    }
    zx_buf u = {0};
    if (zx_z85_decode(path_or_inline + plen, 20, &u) < 0) {
        zx_buf_free(&u);
        return -1;
    }
    const uint8_t *b = (const uint8_t *)u.p;
    char id[37];
    snprintf(id, sizeof(id),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
    zx_buf_free(&u);
    int w = snprintf(out, outlen, "%.*s%sdeletion_vector_%s.bin", (int)plen, path_or_inline,
                     plen ? "/" : "", id);
    return w < 0 || (size_t)w >= outlen ? -1 : 0;
}

int zx_dv_uuid_encode(const unsigned char uuid[16], char out[21])
{
    return zx_z85_encode(uuid, 16, out, 21);
}
