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

static int put_u64(zx_buf *b, uint64_t v)
{
    unsigned char x[8];
    for (int i = 0; i < 8; i++, v >>= 8)
        x[i] = (unsigned char)v;
    return zx_buf_put(b, x, 8);
}

/* The canonical encoding of one value (see hash.h). */
static int encode(zx_buf *b, const zx_value *v)
{
    unsigned char t = v->type;
    if (zx_buf_put(b, &t, 1) < 0)
        return -1;
    switch (v->type) {
    case ZX_T_INT: case ZX_T_TIMESTAMP:
        return put_u64(b, (uint64_t)v->u.i);
    case ZX_T_REAL: {
        uint64_t bits;
        double d = v->u.d;
        if (d == 0)
            d = 0;          /* -0 and 0 are one value */
        memcpy(&bits, &d, 8);
        if (isnan(d))
            bits = 0x7ff8000000000000ull;
        return put_u64(b, bits);
    }
    case ZX_T_BOOL: {
        unsigned char x = v->u.b ? 1 : 0;
        return zx_buf_put(b, &x, 1);
    }
    case ZX_T_TEXT: case ZX_T_JSON: {
        uint32_t n = v->len;
        unsigned char l[4] = {(unsigned char)n, (unsigned char)(n >> 8),
                              (unsigned char)(n >> 16), (unsigned char)(n >> 24)};
        return zx_buf_put(b, l, 4) < 0 ? -1 : zx_buf_put(b, v->s, n);
    }
    default:
        return 0;           /* NULL: the type byte alone */
    }
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

int zx_sync_key_hash(const zx_value *vals, const size_t *idx, size_t n, zx_buf *scratch,
                     unsigned char out[ZX_SYNC_KEYHASH_LEN])
{
    scratch->len = 0;
    for (size_t i = 0; i < n; i++)
        if (encode(scratch, &vals[idx[i]]) < 0)
            return -1;
    XXH128_hash_t h = XXH3_128bits(scratch->p ? scratch->p : "", scratch->len);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out, c.digest, ZX_SYNC_KEYHASH_LEN);
    return 0;
}

int zx_sync_row_hash(const zx_value *vals, size_t ncols, uint64_t seed, zx_buf *scratch,
                     uint64_t *out)
{
    scratch->len = 0;
    for (size_t i = 0; i < ncols; i++)
        if (encode(scratch, &vals[i]) < 0)
            return -1;
    *out = XXH3_64bits_withSeed(scratch->p ? scratch->p : "", scratch->len, seed);
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
