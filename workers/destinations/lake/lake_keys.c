/*
 * lake_keys.c — key hashes and sets of them (lake_keys.h).
 */
#include "workers/destinations/lake/lake_keys.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/dcell.h"

static int put_u64(zx_buf *b, uint64_t v)
{
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(v >> (8 * i));
    return zx_buf_put(b, le, 8);
}

int zx_lake_key_hash(const zx_dcol *keycols, const size_t *idx, size_t n,
                     const zx_value *vals, zx_buf scratch[2], unsigned char out[ZX_LAKE_KEY_LEN])
{
    zx_buf *enc = &scratch[0], *conv = &scratch[1];
    zx_buf_reset(enc);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const zx_dcol *c = &keycols[i];
        zx_dc_target t = zx_dc_target_file(c);
        zx_dc_out o;
        const zx_value *v = &vals[idx[i]];
        unsigned char ty = (unsigned char)c->type;
        int cv = zx_dc_convert(&t, v, conv, &o);
        if (cv < 0) {
            rc = -1;
            break;
        }
        if (cv == 0 || o.null) {
            /* a misfit or a null: hashed as the text it came as */
            ty = 0xff;
            o.s = v->s ? v->s : "";
            o.len = v->s ? v->len : 0;
        }
        if (zx_buf_put(enc, &ty, 1) < 0) {
            rc = -1;
            break;
        }
        if (ty != 0xff && (c->type == ZX_DT_INT64 || c->type == ZX_DT_BOOL ||
                           c->type == ZX_DT_TIMESTAMP || c->type == ZX_DT_DATE ||
                           (c->type == ZX_DT_DECIMAL && c->precision <= 18))) {
            rc = put_u64(enc, (uint64_t)(c->type == ZX_DT_DECIMAL ? (int64_t)o.dec : o.i));
        } else if (ty != 0xff && c->type == ZX_DT_DOUBLE) {
            double d = o.d == 0 ? 0.0 : o.d;
            uint64_t u;
            memcpy(&u, &d, 8);
            rc = put_u64(enc, u);
        } else if (ty != 0xff && c->type == ZX_DT_DECIMAL) {
            zx_i128 d = o.dec;
            rc = put_u64(enc, (uint64_t)d) < 0 ? -1 : put_u64(enc, (uint64_t)(d >> 64));
        } else {
            unsigned char l[4] = {(unsigned char)o.len, (unsigned char)(o.len >> 8),
                                  (unsigned char)(o.len >> 16), (unsigned char)(o.len >> 24)};
            rc = zx_buf_put(enc, l, 4) < 0 ? -1 : zx_buf_put(enc, o.s, o.len);
        }
    }
    if (rc == 0) {
        XXH128_hash_t h = XXH3_128bits(enc->p ? enc->p : (char *)"", enc->len);
        XXH128_canonical_t cn;
        XXH128_canonicalFromHash(&cn, h);
        memcpy(out, cn.digest, ZX_LAKE_KEY_LEN);
    }
    return rc;
}

void zx_lake_hash128(const void *p, size_t n, unsigned char out[ZX_LAKE_KEY_LEN])
{
    XXH128_hash_t h = XXH3_128bits(p, n);
    XXH128_canonical_t cn;
    XXH128_canonicalFromHash(&cn, h);
    memcpy(out, cn.digest, ZX_LAKE_KEY_LEN);
}

static size_t slot_of(const unsigned char k[ZX_LAKE_KEY_LEN], size_t cap)
{
    uint64_t h;
    memcpy(&h, k, 8);
    return (size_t)(h & (cap - 1));
}

static int grow(zx_keyset *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1024;
    unsigned char *slots = malloc(cap * ZX_LAKE_KEY_LEN), *used = calloc(cap, 1);
    if (!slots || !used) {
        free(slots);
        free(used);
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->used[i])
            continue;
        size_t j = slot_of(s->slots + i * ZX_LAKE_KEY_LEN, cap);
        while (used[j])
            j = (j + 1) & (cap - 1);
        used[j] = 1;
        memcpy(slots + j * ZX_LAKE_KEY_LEN, s->slots + i * ZX_LAKE_KEY_LEN, ZX_LAKE_KEY_LEN);
    }
    free(s->slots);
    free(s->used);
    s->slots = slots;
    s->used = used;
    s->cap = cap;
    return 0;
}

int zx_keyset_has(const zx_keyset *s, const unsigned char k[ZX_LAKE_KEY_LEN])
{
    if (!s->cap)
        return 0;
    for (size_t j = slot_of(k, s->cap); s->used[j]; j = (j + 1) & (s->cap - 1))
        if (!memcmp(s->slots + j * ZX_LAKE_KEY_LEN, k, ZX_LAKE_KEY_LEN))
            return 1;
    return 0;
}

int zx_keyset_add(zx_keyset *s, const unsigned char k[ZX_LAKE_KEY_LEN])
{
    if (zx_keyset_has(s, k))
        return 0;
    if ((s->n + 1) * 2 > s->cap && grow(s) < 0)
        return -1;
    size_t j = slot_of(k, s->cap);
    while (s->used[j])
        j = (j + 1) & (s->cap - 1);
    s->used[j] = 1;
    memcpy(s->slots + j * ZX_LAKE_KEY_LEN, k, ZX_LAKE_KEY_LEN);
    s->n++;
    return 1;
}

void zx_keyset_free(zx_keyset *s)
{
    free(s->slots);
    free(s->used);
    memset(s, 0, sizeof(*s));
}
