/*
 * z85.c — see z85.h.  It must never accept a text that does not decode
 * back to itself: every character is checked against the alphabet and
 * every group against 2^32 - 1.
 */
#include "common/z85.h"

#include <stdint.h>

static const char z85_alpha[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                ".-:+=^!/*?&<>()[]{}@%$#";

/* The value of character c, or -1 when it is not in the alphabet. */
static int z85_val(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 36;
    for (int i = 62; i < 85; i++)
        if (z85_alpha[i] == (char)c)
            return i;
    return -1;
}

int zx_z85_encode(const void *p, size_t n, char *out, size_t outlen)
{
    if (n % 4 != 0 || outlen == 0 || ZX_Z85_LEN(n) > outlen - 1)
        return -1;
    const uint8_t *b = p;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = (uint32_t)b[i] << 24 | (uint32_t)b[i + 1] << 16 | (uint32_t)b[i + 2] << 8 |
                     b[i + 3];
        for (int k = 4; k >= 0; k--) {
            out[o + (size_t)k] = z85_alpha[v % 85];
            v /= 85;
        }
        o += 5;
    }
    out[o] = '\0';
    return 0;
}

int zx_z85_decode(const char *s, size_t slen, zx_buf *out)
{
    if (slen % 5 != 0 || zx_buf_reserve(out, slen / 5 * 4) < 0)
        return -1;
    uint8_t *d = (uint8_t *)out->p + out->len;
    for (size_t i = 0; i < slen; i += 5) {
        uint64_t v = 0;
        for (size_t k = 0; k < 5; k++) {
            int c = z85_val((unsigned char)s[i + k]);
            if (c < 0)
                goto bad;
            v = v * 85 + (uint64_t)c;
        }
        if (v > UINT32_MAX)
            goto bad;
        d[0] = (uint8_t)(v >> 24);
        d[1] = (uint8_t)(v >> 16);
        d[2] = (uint8_t)(v >> 8);
        d[3] = (uint8_t)v;
        d += 4;
    }
    out->len += slen / 5 * 4;
    out->p[out->len] = '\0';
    return 0;
bad:
    out->p[out->len] = '\0';   /* the bytes past len are not the buffer's */
    return -1;
}
