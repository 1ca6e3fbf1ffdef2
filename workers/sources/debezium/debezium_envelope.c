/*
 * debezium_envelope.c — JsonConverter's envelope {"schema": S, "payload":
 * P} split without parsing S again when it is a schema seen before
 * (debezium.h: zx_dbz_split).  A Debezium event with schemas.enable
 * repeats its table's schema in every message, several times the size of
 * the payload: parsing it once per table instead of once per event is most
 * of the decoder's time.
 *
 * The scan only finds where the top-level object's two values are; P is
 * then parsed (and so validated) by jansson, and S either was parsed when
 * it entered the cache (a hit is a byte-for-byte equal text) or is parsed
 * now.  Anything the scan does not expect (another key, an escaped key,
 * text after the object, nesting beyond ZX_DBZ_SCAN_DEPTH) answers 0 and
 * the caller parses the whole message as before.
 */
#include "workers/sources/debezium/debezium_int.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZX_DBZ_SCAN_DEPTH 512

static const char *ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* The end of the string starting at p ('"'), or NULL. */
static const char *str_end(const char *p, const char *e)
{
    for (p++; p < e;) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        if (!q)
            return NULL;
        /* escaped when an odd number of backslashes precede it */
        size_t bs = 0;
        while (q - bs > p && q[-1 - (ptrdiff_t)bs] == '\\')
            bs++;
        if (bs % 2 == 0)
            return q + 1;
        p = q + 1;
    }
    return NULL;
}

/* The bytes a container scan stops at. */
static const unsigned char special[256] = {
    ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1,
};

/* The end of the JSON value starting at p, or NULL (not validated: the
 * parser sees it after). */
static const char *value_end(const char *p, const char *e)
{
    if (p >= e)
        return NULL;
    if (*p == '"')
        return str_end(p, e);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < e) {
            while (p < e && !special[(unsigned char)*p])
                p++;
            if (p >= e)
                break;
            if (*p == '"') {
                if (!(p = str_end(p, e)))
                    return NULL;
                continue;
            }
            if (*p == '{' || *p == '[') {
                if (++depth > ZX_DBZ_SCAN_DEPTH)
                    return NULL;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0)
                    return p + 1;
            }
            p++;
        }
        return NULL;
    }
    while (p < e && !strchr(",}] \t\r\n", *p))
        p++;
    return p;
}

int zx_dbz_split(zx_dbz_cache *c, const char *v, size_t n, const json_t **schema,
                 json_t **payload, char *why, size_t whylen)
{
    const char *p = v, *e = v + n, *span[2][2] = { { NULL, NULL }, { NULL, NULL } };
    p = ws(p, e);
    if (p >= e || *p++ != '{')
        return 0;
    for (int k = 0; k < 2; k++) {
        p = ws(p, e);
        const char *ke = p < e && *p == '"' ? str_end(p, e) : NULL;
        if (!ke || memchr(p, '\\', (size_t)(ke - p)))
            return 0;
        int which = ke - p == 8 && !memcmp(p, "\"schema\"", 8)    ? 0
                    : ke - p == 9 && !memcmp(p, "\"payload\"", 9) ? 1
                                                                  : -1;
        if (which < 0 || span[which][0])
            return 0;
        p = ws(ke, e);
        if (p >= e || *p++ != ':')
            return 0;
        p = ws(p, e);
        const char *ve = value_end(p, e);
        if (!ve)
            return 0;
        span[which][0] = p;
        span[which][1] = ve;
        p = ws(ve, e);
        if (p >= e || *p++ != (k == 0 ? ',' : '}'))
            return 0;
    }
    if (ws(p, e) != e)
        return 0;
    size_t sl = (size_t)(span[0][1] - span[0][0]);
    if (sl == 4 && !memcmp(span[0][0], "null", 4))
        return 0;   /* no schema: the whole message is simple enough */
    /* the payload: parsed (and checked) in any case */
    json_error_t jerr;
    *payload = json_loadb(span[1][0], (size_t)(span[1][1] - span[1][0]), JSON_DECODE_ANY, &jerr);
    if (!*payload) {
        snprintf(why, whylen, "not JSON: at byte %d of the payload: %s", jerr.position, jerr.text);
        return -1;
    }
    for (int i = 0; i < ZX_DBZ_CACHE; i++) {
        zx_dbz_cached *x = &c->v[i];
        if (x->schema && x->len == sl && !memcmp(x->text, span[0][0], sl)) {
            *schema = x->schema;
            return 1;
        }
    }
    json_t *s = json_loadb(span[0][0], sl, 0, &jerr);
    char *text = s && json_is_object(s) ? malloc(sl) : NULL;
    if (!text) {
        json_decref(s);
        json_decref(*payload);
        *payload = NULL;
        if (!s || !json_is_object(s)) {
            snprintf(why, whylen, "not JSON: the schema is %s", s ? "not an object" : jerr.text);
            return -1;
        }
        return 0;   /* out of memory: the slow way */
    }
    memcpy(text, span[0][0], sl);
    zx_dbz_cached *x = &c->v[c->next];
    c->next = (c->next + 1) % ZX_DBZ_CACHE;
    free(x->text);
    json_decref(x->schema);
    zx_dbz_fast_schema_free(x->fast);
    *x = (zx_dbz_cached){ .text = text, .len = sl, .schema = s };
    *schema = s;
    return 1;
}

const json_t *zx_dbz_cache_get(zx_dbz_cache *c, const char *s, size_t n)
{
    for (int i = 0; i < ZX_DBZ_CACHE; i++) {
        zx_dbz_cached *x = &c->v[i];
        if (x->schema && x->len == n && !memcmp(x->text, s, n))
            return x->schema;
    }
    json_t *j = json_loadb(s, n, 0, NULL);
    char *text = j && json_is_object(j) ? malloc(n ? n : 1) : NULL;
    if (!text) {
        json_decref(j);
        return NULL;
    }
    memcpy(text, s, n);
    zx_dbz_cached *x = &c->v[c->next];
    c->next = (c->next + 1) % ZX_DBZ_CACHE;
    free(x->text);
    json_decref(x->schema);
    zx_dbz_fast_schema_free(x->fast);
    *x = (zx_dbz_cached){ .text = text, .len = n, .schema = j };
    return j;
}

void zx_dbz_cache_free(zx_dbz_cache *c)
{
    for (int i = 0; i < ZX_DBZ_CACHE; i++) {
        free(c->v[i].text);
        json_decref(c->v[i].schema);
        zx_dbz_fast_schema_free(c->v[i].fast);
    }
    memset(c, 0, sizeof(*c));
}
