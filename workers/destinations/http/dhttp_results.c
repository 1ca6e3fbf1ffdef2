/*
 * dhttp_results.c — per-item results of an API's answer (dhttp_results.h).
 */
#include "workers/destinations/http/dhttp_results.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

char *zx_dhttp_sanitize(const char *s, size_t n, size_t max, char *out, size_t outlen)
{
    size_t o = 0;
    if (!outlen)
        return out;
    for (size_t i = 0; s && i < n && i < max && o + 4 < outlen; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (s && n > max && o + 4 <= outlen) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = 0;
    return out;
}

/* The member at the dotted path of root; NULL when missing. */
static json_t *at_path(json_t *root, const char *path)
{
    json_t *cur = root;
    const char *p = path;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (!json_is_object(cur) || !n || n > 255)
            return NULL;
        char name[256];
        memcpy(name, p, n);
        name[n] = 0;
        cur = json_object_get(cur, name);
        p += n + (dot ? 1 : 0);
    }
    return cur;
}

/* Why item it failed into why, or "" when it did not. */
static void item_why(json_t *it, char *why, size_t len)
{
    why[0] = 0;
    if (!json_is_object(it))
        return;
    json_t *e = json_object_get(it, "error");
    json_t *st = json_object_get(it, "status");
    long long status = 0;
    if (json_is_integer(st))
        status = json_integer_value(st);
    else if (json_is_real(st)) {   /* any double: cut before converting */
        double d = json_real_value(st);
        status = d >= 1e9 ? 1000000000LL : d > 0 ? (long long)d : 0;
    }
    char text[200] = "";
    if (e && !json_is_null(e) && !json_is_false(e)) {
        if (json_is_string(e)) {
            zx_dhttp_sanitize(json_string_value(e), json_string_length(e), 160, text,
                              sizeof(text));
        } else {
            char *d = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY);
            zx_dhttp_sanitize(d, d ? strlen(d) : 0, 160, text, sizeof(text));
            free(d);
        }
        if (status >= 400)
            snprintf(why, len, "status %lld, error: %s", status, text);
        else
            snprintf(why, len, "error: %s", text);
    } else if (status >= 400) {
        snprintf(why, len, "status %lld", status);
    }
}

long zx_dhttp_results(const char *body, size_t len, const char *path, uint32_t nitems,
                      void (*fail)(void *arg, uint32_t i, const char *why), void *arg,
                      char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = body && len ? json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je) : NULL;
    if (!root)
        return zx_seterr(err, errlen, "the answer is not JSON, so its per-item results "
                         "(results_path %s) cannot be read", path);
    json_t *arr = at_path(root, path);
    if (!json_is_array(arr)) {
        json_decref(root);
        return zx_seterr(err, errlen, "the answer holds no array at results_path %s",
                         path);
    }
    size_t n = json_array_size(arr);
    long failed = 0;
    char why[300];
    for (uint32_t i = 0; i < nitems; i++) {
        if (i < n)
            item_why(json_array_get(arr, i), why, sizeof(why));
        else
            snprintf(why, sizeof(why), "no result for this item (the answer has %zu)", n);
        if (why[0]) {
            failed++;
            if (fail)
                fail(arg, i, why);
        }
    }
    json_decref(root);
    return failed;
}
