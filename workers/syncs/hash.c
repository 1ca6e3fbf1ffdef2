/*
 * hash.c — key and row hashes of reverse syncs, and keys as JSON (hash.h).
 */
#include "workers/syncs/hash.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* The most bytes the canonical encoding of v takes (enc_to). */
static size_t enc_size(const zx_value *v)
{
    switch (v->type) {
    case ZX_T_INT: case ZX_T_TIMESTAMP: case ZX_T_REAL:
        return 9;
    case ZX_T_BOOL:
        return 2;
    case ZX_T_TEXT: case ZX_T_JSON:
        return 5 + (size_t)v->len;
    default:
        return 1;
    }
}

static unsigned char *put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        p[i] = (unsigned char)v;
    return p + 8;
}

/* The canonical encoding of one value (see hash.h) at p, which has room
 * for enc_size(v) bytes; returns its end. */
static unsigned char *enc_to(unsigned char *p, const zx_value *v)
{
    *p++ = v->type;
    switch (v->type) {
    case ZX_T_INT: case ZX_T_TIMESTAMP:
        return put_u64(p, (uint64_t)v->u.i);
    case ZX_T_REAL: {
        uint64_t bits;
        double d = v->u.d;
        if (d == 0)
            d = 0;          /* -0 and 0 are one value */
        memcpy(&bits, &d, 8);
        if (isnan(d))
            bits = 0x7ff8000000000000ull;
        return put_u64(p, bits);
    }
    case ZX_T_BOOL:
        *p++ = v->u.b ? 1 : 0;
        return p;
    case ZX_T_TEXT: case ZX_T_JSON: {
        uint32_t n = v->len;
        p[0] = (unsigned char)n;
        p[1] = (unsigned char)(n >> 8);
        p[2] = (unsigned char)(n >> 16);
        p[3] = (unsigned char)(n >> 24);
        if (n)
            memcpy(p + 4, v->s, n);
        return p + 4 + n;
    }
    default:
        return p;           /* NULL: the type byte alone */
    }
}

/* The encodings of vals[idx[0..n-1]] (idx NULL: vals[0..n-1]) into
 * scratch, after its len bytes (len moves past them).  0 or -1. */
static int encode_all(zx_buf *b, const zx_value *vals, const size_t *idx, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const zx_value *v = &vals[idx ? idx[i] : i];
        size_t need = enc_size(v);
        if ((!b->p || b->cap - b->len <= need) && zx_buf_reserve(b, need < 256 ? 256 : need) < 0)
            return -1;
        b->len = (size_t)((char *)enc_to((unsigned char *)b->p + b->len, v) - b->p);
    }
    return 0;
}

uint64_t zx_sync_columns_seed(const zx_dcol *cols, size_t ncols)
{
    XXH3_state_t *st = XXH3_createState();
    uint64_t h = 0x7a78u;
    if (!st)
        return h;
    XXH3_64bits_reset(st);
    for (size_t i = 0; i < ncols; i++) {
        int meta[3] = {(int)cols[i].type, cols[i].precision, cols[i].scale};
        XXH3_64bits_update(st, cols[i].name, strlen(cols[i].name) + 1);
        XXH3_64bits_update(st, meta, sizeof(meta));
    }
    h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}

uint64_t zx_sync_row_hash_reseed(uint64_t rh, uint64_t seed)
{
    return XXH3_64bits_withSeed(&rh, sizeof(rh), seed);
}

static void key_digest(const void *p, size_t len, unsigned char out[ZX_SYNC_KEYHASH_LEN])
{
    XXH128_hash_t h = XXH3_128bits(p, len);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out, c.digest, ZX_SYNC_KEYHASH_LEN);
}

int zx_sync_key_hash(const zx_value *vals, const size_t *idx, size_t n, zx_buf *scratch,
                     unsigned char out[ZX_SYNC_KEYHASH_LEN])
{
    scratch->len = 0;
    if (encode_all(scratch, vals, idx, n) < 0)
        return -1;
    key_digest(scratch->p ? scratch->p : "", scratch->len, out);
    return 0;
}

int zx_sync_row_hash(const zx_value *vals, size_t ncols, uint64_t seed, zx_buf *scratch,
                     uint64_t *out)
{
    scratch->len = 0;
    if (encode_all(scratch, vals, NULL, ncols) < 0)
        return -1;
    *out = XXH3_64bits_withSeed(scratch->p ? scratch->p : "", scratch->len, seed);
    return 0;
}

int zx_sync_row_key_hash(const zx_value *vals, size_t ncols, uint64_t seed, const size_t *idx,
                         size_t n, zx_buf *scratch, uint64_t *rh,
                         unsigned char kh[ZX_SYNC_KEYHASH_LEN])
{
    scratch->len = 0;
    if (encode_all(scratch, vals, NULL, ncols) < 0)
        return -1;
    size_t rowlen = scratch->len;
    if (n == 1) {
        /* one key column: its encoding is already there, in the row's */
        size_t off = 0;
        for (size_t i = 0; i < idx[0]; i++)
            off += enc_size(&vals[i]);
        key_digest(scratch->p + off, enc_size(&vals[idx[0]]), kh);
    } else {
        if (encode_all(scratch, vals, idx, n) < 0)
            return -1;
        key_digest(scratch->p + rowlen, scratch->len - rowlen, kh);
    }
    *rh = XXH3_64bits_withSeed(scratch->p ? scratch->p : "", rowlen, seed);
    return 0;
}

/* Append s (n bytes) as a JSON string. */
static int json_str(zx_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (zx_buf_put(b, "\"", 1) < 0)
        return -1;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (zx_buf_put(b, s + run, i - run) < 0)
            return -1;
        char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        if (c == '"' || c == '\\') {
            e[1] = (char)c;
            if (zx_buf_put(b, e, 2) < 0)
                return -1;
        } else if (zx_buf_put(b, e, 6) < 0) {
            return -1;
        }
        run = i + 1;
    }
    if (zx_buf_put(b, s + run, n - run) < 0)
        return -1;
    return zx_buf_put(b, "\"", 1);
}

int zx_sync_key_json(const zx_value *vals, const size_t *idx, size_t n, zx_buf *out)
{
    char num[40];
    if (zx_buf_put(out, "[", 1) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const zx_value *v = &vals[idx[i]];
        int r = 0;
        if (i && zx_buf_put(out, ",", 1) < 0)
            return -1;
        switch (v->type) {
        case ZX_T_INT: {
            /* the digits backwards, without printf: a key per row */
            uint64_t u = v->u.i < 0 ? 0 - (uint64_t)v->u.i : (uint64_t)v->u.i;
            char *e = num + sizeof(num), *d = e;
            do
                *--d = (char)('0' + u % 10);
            while ((u /= 10) != 0);
            if (v->u.i < 0)
                *--d = '-';
            r = zx_buf_put(out, d, (size_t)(e - d));
            break;
        }
        case ZX_T_REAL:
            if (!isfinite(v->u.d))
                r = zx_buf_put(out, "null", 4);
            else
                r = zx_buf_put(out, num, (size_t)snprintf(num, sizeof(num), "%.17g", v->u.d));
            if (r == 0 && isfinite(v->u.d) && !strpbrk(num, ".eEn"))
                r = zx_buf_put(out, ".0", 2);   /* stays a REAL when read back */
            break;
        case ZX_T_BOOL:
            r = v->u.b ? zx_buf_put(out, "true", 4) : zx_buf_put(out, "false", 5);
            break;
        case ZX_T_TEXT: case ZX_T_TIMESTAMP: case ZX_T_JSON:
            r = json_str(out, v->s ? v->s : "", v->len);
            break;
        default:
            r = zx_buf_put(out, "null", 4);
        }
        if (r < 0)
            return -1;
    }
    return zx_buf_put(out, "]", 1);
}

int zx_sync_key_from_json(const char *json, size_t len, const char *const *names, size_t n,
                          zx_rowset *rs, char *err, size_t errlen)
{
    json_error_t je;
    json_t *a = json_loadb(json, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!a || !json_is_array(a) || json_array_size(a) != n) {
        snprintf(err, errlen, "a stored key is not a JSON array of %zu values%s%s", n,
                 a ? "" : ": ", a ? "" : je.text);
        json_decref(a);
        return -1;
    }
    if (zx_rowset_begin_row(rs) < 0)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(a, i);
        int64_t col = zx_rowset_column(rs, names[i], strlen(names[i]), ZX_T_NULL);
        zx_value v = {0};
        if (col < 0)
            goto oom;
        if (json_is_integer(e)) {
            v.type = ZX_T_INT;
            v.u.i = json_integer_value(e);
        } else if (json_is_real(e)) {
            v.type = ZX_T_REAL;
            v.u.d = json_real_value(e);
        } else if (json_is_boolean(e)) {
            v.type = ZX_T_BOOL;
            v.u.b = json_is_true(e);
        } else if (json_is_string(e)) {
            v.type = ZX_T_TEXT;
            v.len = (uint32_t)json_string_length(e);
            if (!(v.s = zx_rowset_strdup(rs, json_string_value(e), v.len)))
                goto oom;
        } else if (json_is_null(e)) {
            continue;
        } else {
            snprintf(err, errlen, "a stored key holds a nested value");
            zx_rowset_abort_row(rs);
            json_decref(a);
            return -1;
        }
        if (zx_rowset_add(rs, (uint32_t)col, &v) < 0)
            goto oom;
    }
    zx_rowset_end_row(rs);
    json_decref(a);
    return 0;
oom:
    zx_rowset_abort_row(rs);
    json_decref(a);
    snprintf(err, errlen, "out of memory");
    return -1;
}
