/*
 * os_bulk.c — reading _bulk answers and error answers (os_bulk.h).  It
 * must never read past the body's length, trust an answer whose items do
 * not match what was sent, or hand on the peer's control characters.
 */
#include "workers/destinations/opensearch/os_bulk.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

/* Append s to out (cap bytes, NUL-terminated), control characters made
 * spaces, cut on a whole UTF-8 character. */
static void put_clean(char *out, size_t cap, const char *s)
{
    size_t n = strlen(out);
    for (; s && *s && n + 1 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        out[n++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
    }
    /* do not leave half a UTF-8 character at the end */
    if (s && *s) {
        size_t k = n;
        while (k > 0 && ((unsigned char)out[k - 1] & 0xc0) == 0x80)
            k--;
        if (k > 0 && ((unsigned char)out[k - 1] & 0xc0) == 0xc0)
            n = k - 1;
    }
    out[n] = '\0';
}

/* "<type>: <reason>" of error e (an object, or a string) into out. */
static void error_of(const json_t *e, char *out, size_t cap)
{
    if (json_is_string(e)) {
        put_clean(out, cap, json_string_value(e));
        return;
    }
    const char *type = json_string_value(json_object_get(e, "type"));
    const char *reason = json_string_value(json_object_get(e, "reason"));
    if (type)
        put_clean(out, cap, type);
    if (type && reason)
        put_clean(out, cap, ": ");
    if (reason)
        put_clean(out, cap, reason);
}

int zx_os_bulk_parse(const char *body, size_t len, size_t nitems,
                     int (*each)(void *ctx, size_t i, const zx_os_item *it), void *ctx,
                     char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = body ? json_loadb(body, len, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!root)
        return zx_seterr(err, errlen, "the _bulk answer is not JSON");
    int rc = 0;
    json_t *items = json_object_get(root, "items");
    if (!json_is_array(items)) {
        rc = zx_seterr(err, errlen, "the _bulk answer has no items");
        goto out;
    }
    if (json_array_size(items) != nitems) {
        rc = zx_seterr(err, errlen, "the _bulk answer has %zu items for %zu sent",
                       json_array_size(items), nitems);
        goto out;
    }
    for (size_t i = 0; i < nitems; i++) {
        json_t *it = json_array_get(items, i);
        const char *action = NULL;
        json_t *res = NULL;
        if (!json_is_object(it) || json_object_size(it) != 1) {
            rc = zx_seterr(err, errlen, "item %zu of the _bulk answer is not an object of "
                           "one action", i);
            goto out;
        }
        json_object_foreach(it, action, res) break;
        if (!action)
            action = "";
        json_t *st = json_object_get(res, "status");
        json_int_t s = json_is_integer(st) ? json_integer_value(st) : 0;
        if (!json_is_object(res) || s < 100 || s > 599) {
            rc = zx_seterr(err, errlen, "item %zu of the _bulk answer has no status", i);
            goto out;
        }
        zx_os_item x = {.status = (int)s, .is_delete = !strcmp(action, "delete")};
        if (s < 200 || s > 299) {
            snprintf(x.why, sizeof(x.why), "HTTP %d ", (int)s);
            json_t *e = json_object_get(res, "error");
            if (e)
                error_of(e, x.why, sizeof(x.why));
            else
                put_clean(x.why, sizeof(x.why), json_string_value(json_object_get(res,
                                                                                  "result")));
            size_t n = strlen(x.why);
            if (n && x.why[n - 1] == ' ')
                x.why[n - 1] = '\0';
        }
        if ((rc = each(ctx, i, &x)) != 0)
            goto out;
    }
out:
    json_decref(root);
    return rc;
}

void zx_os_error_text(const char *body, size_t len, char *out, size_t outlen)
{
    if (!out || !outlen)
        return;
    out[0] = '\0';
    json_error_t je;
    json_t *root = body ? json_loadb(body, len, 0, &je) : NULL;
    json_t *e = json_object_get(root, "error");
    if (e) {
        /* the root cause says more than the wrapper when there is one */
        json_t *rc = json_array_get(json_object_get(e, "root_cause"), 0);
        error_of(json_is_object(rc) ? rc : e, out, outlen);
    }
    json_decref(root);
}
