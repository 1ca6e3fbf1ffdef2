/*
 * avro_decode.c — one Avro binary datum, read with a schema compiled by
 * avro_connect.c, into JsonConverter's {"schema", "payload"} JSON.  The
 * encodings and limits are in avro_connect.h.
 *
 * It must never: read past the datum, allocate from a length or count it
 * has not checked against the bytes left, recurse deeper than the schema
 * (ZX_AVRO_MAX_DEPTH), or make more values than its budget.
 */
#include "common/avro_connect.h"
#include "common/avro_node.h"
#include "common/base64.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Decoding state of one datum. */
typedef struct dctx {
    const uint8_t *p;
    size_t len, pos;
    size_t budget;          /* values that may still be made */
    size_t budget0;         /* the datum's whole budget, for messages */
    char *err;
    size_t errlen;
    int failed;
} dctx;

/* Writes "avro: <message>" into c->err (the first failure only).  NULL. */
static void *dfail(dctx *c, const char *fmt, ...)
{
    if (c->failed)
        return NULL;
    c->failed = 1;
    if (!c->err || c->errlen == 0)
        return NULL;
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "avro: %s", msg);
    return NULL;
}

static void *doom(dctx *c)
{
    return dfail(c, "out of memory");
}

static size_t left(const dctx *c)
{
    return c->len - c->pos;
}

/* A zigzag varint of at most maxb bytes.  0, or -1 after dfail. */
static int rd_varint(dctx *c, int64_t *out, unsigned maxb, const char *what)
{
    size_t start = c->pos;
    uint64_t v = 0;
    for (unsigned i = 0;; i++) {
        if (c->pos >= c->len) {
            dfail(c, "the datum ends inside the %s that starts at byte %zu (%zu bytes)", what,
                  start, c->len);
            return -1;
        }
        uint8_t b = c->p[c->pos++];
        if (i + 1 == maxb && (b & 0x80)) {
            dfail(c, "the %s at byte %zu is longer than %u bytes", what, start, maxb);
            return -1;
        }
        if (i == 9 && b > 1) {
            dfail(c, "the %s at byte %zu is beyond 64 bits", what, start);
            return -1;
        }
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80))
            break;
    }
    *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    return 0;
}

/* An Avro int: at most 5 bytes, within 32 bits. */
static int rd_int(dctx *c, int32_t *out, const char *what)
{
    size_t start = c->pos;
    int64_t v;
    if (rd_varint(c, &v, 5, what) < 0)
        return -1;
    if (v < INT32_MIN || v > INT32_MAX) {
        dfail(c, "the %s %lld at byte %zu is beyond 32 bits", what, (long long)v, start);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

/* A length (of a string, bytes, ...): >= 0 and within the bytes left. */
static int rd_len(dctx *c, size_t *out, const char *what)
{
    size_t start = c->pos;
    int64_t v;
    if (rd_varint(c, &v, 10, what) < 0)
        return -1;
    if (v < 0) {
        dfail(c, "%s %lld at byte %zu is negative", what, (long long)v, start);
        return -1;
    }
    if ((uint64_t)v > left(c)) {
        dfail(c, "%s %lld at byte %zu is beyond the %zu bytes left", what, (long long)v, start,
              left(c));
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

/* n bytes at the current position (checked by the caller or here). */
static const uint8_t *take(dctx *c, size_t n, const char *what)
{
    if (n > left(c)) {
        dfail(c, "the datum ends inside the %s at byte %zu (%zu bytes, %zu left)", what, c->pos,
              n, left(c));
        return NULL;
    }
    const uint8_t *p = c->p + c->pos;
    c->pos += n;
    return p;
}

/* ---- values -------------------------------------------------------------- */

/* The length of the well-formed UTF-8 sequence at s (n > 0 bytes), or 0
 * with *skip set to the length of its maximal ill-formed part (>= 1). */
static size_t utf8_one(const uint8_t *s, size_t n, size_t *skip)
{
    uint8_t b = s[0], lo = 0x80, hi = 0xBF;
    size_t need;
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        need = 1;
    else if (b == 0xE0)
        need = 2, lo = 0xA0;
    else if (b == 0xED)
        need = 2, hi = 0x9F;
    else if (b >= 0xE1 && b <= 0xEF)
        need = 2;
    else if (b == 0xF0)
        need = 3, lo = 0x90;
    else if (b == 0xF4)
        need = 3, hi = 0x8F;
    else if (b >= 0xF1 && b <= 0xF3)
        need = 3;
    else {
        *skip = 1;
        return 0;
    }
    size_t i = 1;
    for (; i <= need && i < n; i++) {
        uint8_t ch = s[i];
        if (ch < (i == 1 ? lo : 0x80) || ch > (i == 1 ? hi : 0xBF))
            break;
    }
    if (i > need)
        return need + 1;
    *skip = i;
    return 0;
}

/* A JSON string of the n bytes at s, each maximal ill-formed UTF-8 part
 * replaced by U+FFFD.  NULL when out of memory. */
static json_t *utf8_json(const uint8_t *s, size_t n)
{
    size_t i = 0, skip, k;
    while (i < n && (k = utf8_one(s + i, n - i, &skip)) > 0)
        i += k;
    if (i == n)
        return json_stringn_nocheck((const char *)s, n);
    char *b = malloc(3 * n + 1);
    if (!b)
        return NULL;
    memcpy(b, s, i);
    size_t o = i;
    while (i < n) {
        k = utf8_one(s + i, n - i, &skip);
        if (k) {
            memcpy(b + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(b + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += skip;
        }
    }
    json_t *j = json_stringn_nocheck(b, o);
    free(b);
    return j;
}

json_t *av_base64(const uint8_t *p, size_t n, int decimal)
{
    static const uint8_t zero = 0;
    if (decimal) {
        if (n == 0) {
            p = &zero;
            n = 1;
        }
        while (n > 1 && ((p[0] == 0x00 && !(p[1] & 0x80)) || (p[0] == 0xFF && (p[1] & 0x80)))) {
            p++;
            n--;
        }
    }
    char *b = malloc(ZX_BASE64_LEN(n) + 1);
    if (!b)
        return NULL;
    size_t o = zx_base64_encode(p, n, b);
    json_t *j = json_stringn_nocheck(b, o);
    free(b);
    return j;
}

json_t *av_float_json(float f)
{
    if (isnan(f))
        return json_string_nocheck("NaN");
    if (isinf(f))
        return json_string_nocheck(f > 0 ? "Infinity" : "-Infinity");
    /* the fewest digits that read back as f; written and read in the same
     * locale, so its decimal point does not matter */
    char buf[40];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f)
            break;
    }
    return json_real(strtod(buf, NULL));
}

json_t *av_double_json(double d)
{
    if (isnan(d))
        return json_string_nocheck("NaN");
    if (isinf(d))
        return json_string_nocheck(d > 0 ? "Infinity" : "-Infinity");
    return json_real(d);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- the decoder --------------------------------------------------------- */

static json_t *dec(dctx *c, const av_node *n, int optional, json_t **sch);

static json_t *dec_record(dctx *c, const av_node *n, int optional, json_t **sch)
{
    json_t *obj = json_object(), *o = NULL, *fs = NULL;
    if (!obj)
        return doom(c);
    if (sch) {
        o = av_schema_open(n);
        fs = json_array();
        if (json_object_set_new_nocheck(o, "fields", fs))
            goto oom;
    }
    for (size_t i = 0; i < n->n; i++) {
        const av_field *f = &n->fields[i];
        json_t *fsch = NULL;
        json_t *v = dec(c, f->type, 0, o && f->type->dynamic ? &fsch : NULL);
        if (!v)
            goto fail;
        if (json_object_set_new_nocheck(obj, json_string_value(f->name), v)) {
            json_decref(fsch);
            goto oom;
        }
        if (o) {
            if (!fsch)
                fsch = av_connect_schema(f->type, 0);
            if (fsch && json_object_set_nocheck(fsch, "field", f->name)) {
                json_decref(fsch);
                goto oom;
            }
            if (json_array_append_new(fs, fsch))
                goto oom;
        }
    }
    if (o) {
        if (av_schema_close(o, n, optional))
            goto oom;
        *sch = o;
    }
    return obj;
oom:
    doom(c);
fail:
    json_decref(o);
    json_decref(obj);
    return NULL;
}

/* An array or a map: blocks of items until a block of count 0. */
static json_t *dec_blocks(dctx *c, const av_node *n, int optional, json_t **sch)
{
    int is_map = n->kind == AV_MAP;
    const char *what = is_map ? "map block count" : "array block count";
    const av_node *it = n->items;
    json_t *out = is_map ? json_object() : json_array(), *isch = NULL, *key = NULL;
    size_t at = c->pos;
    /* least bytes an item takes: its value, and a map key's length */
    uint64_t m = (uint64_t)it->min_size + (is_map ? 1 : 0);
    if (!out)
        return doom(c);
    for (;;) {
        size_t start = c->pos;
        int64_t count, bsize = -1;
        if (rd_varint(c, &count, 10, what) < 0)
            goto fail;
        if (count == 0)
            break;
        if (count < 0) {
            if (count == INT64_MIN) {
                dfail(c, "%s at byte %zu is out of range", what, start);
                goto fail;
            }
            count = -count;
            size_t bs;
            if (rd_len(c, &bs, is_map ? "map block size" : "array block size") < 0)
                goto fail;
            bsize = (int64_t)bs;
        }
        size_t bstart = c->pos;
        if (m > 0 && (uint64_t)count > left(c) / m) {
            dfail(c, "%s %lld at byte %zu is beyond the %zu bytes left", what, (long long)count,
                  start, left(c));
            goto fail;
        }
        if ((uint64_t)count > c->budget) {
            dfail(c, "%s %lld at byte %zu is beyond the datum's limit of %zu values", what,
                  (long long)count, start, c->budget0);
            goto fail;
        }
        for (int64_t i = 0; i < count; i++) {
            size_t klen = 0;
            const uint8_t *kp = NULL;
            if (is_map) {
                size_t kat = c->pos;
                if (rd_len(c, &klen, "map key length") < 0 || !(kp = take(c, klen, "map key")))
                    goto fail;
                if (memchr(kp, 0, klen)) {
                    dfail(c, "the map key at byte %zu holds a NUL byte", kat);
                    goto fail;
                }
            }
            json_t *es = NULL;
            json_t *v = dec(c, it, 0, sch ? &es : NULL);
            if (!v)
                goto fail;
            if (sch) {
                if (!isch) {
                    isch = es;
                } else {
                    int same = json_equal(isch, es);
                    json_decref(es);
                    if (!same) {
                        json_decref(v);
                        dfail(c, "the %s at byte %zu holds union branches of different "
                                 "Kafka Connect types (Connect has one item type)",
                              is_map ? "map" : "array", at);
                        goto fail;
                    }
                }
            }
            int bad;
            if (is_map) {
                key = utf8_json(kp, klen);
                bad = !key || json_object_setn_new_nocheck(out, json_string_value(key),
                                                           json_string_length(key), v);
                if (!key)
                    json_decref(v);
                json_decref(key);
                key = NULL;
            } else {
                bad = json_array_append_new(out, v);
            }
            if (bad) {
                doom(c);
                goto fail;
            }
        }
        if (bsize >= 0 && c->pos - bstart != (size_t)bsize) {
            dfail(c, "the block at byte %zu says %lld bytes but its items take %zu", start,
                  (long long)bsize, c->pos - bstart);
            goto fail;
        }
    }
    if (sch) {
        json_t *o = av_schema_open(n);
        if (!isch)
            isch = av_connect_schema(it, 0);
        int bad = !o || !isch;
        if (!bad && is_map)
            bad = json_object_set_new_nocheck(o, "keys", av_map_keys());
        if (!bad) {
            bad = json_object_set_new_nocheck(o, is_map ? "values" : "items", isch);
            isch = NULL;
        }
        if (bad || av_schema_close(o, n, optional)) {
            json_decref(o);
            doom(c);
            goto fail;
        }
        *sch = o;
    }
    return out;
fail:
    json_decref(isch);
    json_decref(out);
    return NULL;
}

static json_t *dec_union(dctx *c, const av_node *n, int optional, json_t **sch)
{
    size_t start = c->pos;
    int32_t ix;
    if (rd_int(c, &ix, "union index") < 0)
        return NULL;
    if (ix < 0 || (size_t)ix >= n->n)
        return dfail(c, "union index %d at byte %zu is not one of its %zu branches", ix, start,
                     n->n);
    const av_node *b = n->branches[ix];
    int opt = optional || n->null_branch >= 0;
    if (b->kind != AV_NULL)
        return dec(c, b, opt, sch);
    if (sch && !(*sch = av_connect_schema(n, optional)))
        return doom(c);
    return json_null();
}

/* Decodes one value of n.  Returns it (a new reference), or NULL after
 * dfail.  When sch is not NULL, *sch receives the Connect schema of this
 * value, "optional" as given: n's, or, for a node with a union other than
 * [null, T], the one the datum's branches make. */
static json_t *dec(dctx *c, const av_node *n, int optional, json_t **sch)
{
    if (c->budget == 0)
        return dfail(c, "the datum makes more than %zu values", c->budget0);
    c->budget--;
    if (sch)
        *sch = NULL;
    json_t *v = NULL;
    const uint8_t *p;
    size_t start = c->pos, len;
    switch (n->kind) {
    case AV_RECORD:
        v = dec_record(c, n, optional, n->dynamic ? sch : NULL);
        break;
    case AV_ARRAY:
    case AV_MAP:
        v = dec_blocks(c, n, optional, n->dynamic ? sch : NULL);
        break;
    case AV_UNION:
        return dec_union(c, n, optional, sch);
    case AV_NULL:
        v = json_null();
        break;
    case AV_BOOLEAN:
        if (!(p = take(c, 1, "boolean")))
            return NULL;
        if (*p > 1)
            return dfail(c, "boolean byte 0x%02x at byte %zu is neither 0 nor 1", *p, start);
        v = json_boolean(*p);
        break;
    case AV_INT: {
        int32_t i;
        if (rd_int(c, &i, "int") < 0)
            return NULL;
        json_int_t x = n->conv == AV_CONV_INT8 ? (int8_t)i : n->conv == AV_CONV_INT16 ? (int16_t)i : i;
        v = json_integer(x);
        break;
    }
    case AV_LONG: {
        int64_t x;
        if (rd_varint(c, &x, 10, "long") < 0)
            return NULL;
        v = json_integer(x);
        break;
    }
    case AV_FLOAT: {
        if (!(p = take(c, 4, "float")))
            return NULL;
        uint32_t u = le32(p);
        float f;
        memcpy(&f, &u, sizeof(f));
        v = av_float_json(f);
        break;
    }
    case AV_DOUBLE: {
        if (!(p = take(c, 8, "double")))
            return NULL;
        uint64_t u = (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
        double d;
        memcpy(&d, &u, sizeof(d));
        v = av_double_json(d);
        break;
    }
    case AV_STRING:
        if (rd_len(c, &len, "string length") < 0 || !(p = take(c, len, "string")))
            return NULL;
        v = utf8_json(p, len);
        break;
    case AV_BYTES:
        if (rd_len(c, &len, "bytes length") < 0 || !(p = take(c, len, "bytes")))
            return NULL;
        v = av_base64(p, len, n->conv == AV_CONV_DECIMAL);
        break;
    case AV_FIXED:
        if (!(p = take(c, (size_t)n->size, "fixed")))
            return NULL;
        v = av_base64(p, (size_t)n->size, n->conv == AV_CONV_DECIMAL);
        break;
    case AV_ENUM: {
        int32_t i;
        if (rd_int(c, &i, "enum index") < 0)
            return NULL;
        if (i < 0 || (size_t)i >= n->n)
            return dfail(c, "enum index %d at byte %zu is not one of its %zu symbols", i, start,
                         n->n);
        json_t *sym = json_array_get(n->symbols, (size_t)i);
        v = json_stringn_nocheck(json_string_value(sym), json_string_length(sym));
        break;
    }
    }
    if (!v)
        return c->failed ? NULL : doom(c);
    if (sch && !*sch && !(*sch = av_connect_schema(n, optional))) {
        json_decref(v);
        return doom(c);
    }
    return v;
}

json_t *zx_avro_decode(const zx_avro_schema *s, const void *datum, size_t len, char *err,
                       size_t errlen)
{
    dctx c = {.p = datum, .len = len, .err = err, .errlen = errlen};
    c.budget = c.budget0 = len + 65536;
    if (err && errlen)
        err[0] = '\0';
    if (!datum && len)
        return dfail(&c, "no datum");
    int dyn = s->root->dynamic;
    json_t *sch = NULL, *out = NULL;
    json_t *payload = dec(&c, s->root, 0, dyn ? &sch : NULL);
    if (!payload)
        goto fail;
    if (c.pos != len) {
        dfail(&c, "%zu bytes follow the datum's end at byte %zu", len - c.pos, c.pos);
        goto fail;
    }
    if (!dyn)
        sch = json_incref(s->connect);
    /* json_object_set_new* take the value even when they fail */
    out = json_object();
    int bad = json_object_set_new_nocheck(out, "schema", sch);
    bad |= json_object_set_new_nocheck(out, "payload", payload);
    sch = payload = NULL;
    if (bad) {
        doom(&c);
        goto fail;
    }
    return out;
fail:
    json_decref(sch);
    json_decref(payload);
    json_decref(out);
    return NULL;
}
