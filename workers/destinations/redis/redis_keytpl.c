/*
 * redis_keytpl.c — the key template (redis_keytpl.h): parse, bind, format.
 * Pure; it must never read anything but its arguments.
 */
#include "workers/destinations/redis/redis_keytpl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_part(zx_redis_tpl *t, size_t *cap, const char *lit, size_t litlen,
                    const char *name, size_t namelen)
{
    if (zx_grow_to(&t->parts, t->nparts + 1, cap, sizeof(*t->parts), 4) < 0)
        return -1;
    zx_redis_tpl_part *p = &t->parts[t->nparts];
    memset(p, 0, sizeof(*p));
    if (name) {
        if (!(p->name = strndup(name, namelen)))
            return -1;
    } else {
        if (!(p->lit = malloc(litlen + 1)))
            return -1;
        memcpy(p->lit, lit, litlen);
        p->lit[litlen] = '\0';
        p->litlen = litlen;
    }
    t->nparts++;
    return 0;
}

int zx_redis_tpl_parse(const char *s, zx_redis_tpl *t, char *err, size_t errlen)
{
    size_t cap = 0, n = strlen(s), i = 0, nph = 0;
    char *lit = malloc(n + 1);
    size_t litlen = 0;

    memset(t, 0, sizeof(*t));
    if (!lit)
        goto nomem;
    while (i < n) {
        if (s[i] == '{' && s[i + 1] == '{') {
            lit[litlen++] = '{';
            i += 2;
        } else if (s[i] == '}' && s[i + 1] == '}') {
            lit[litlen++] = '}';
            i += 2;
        } else if (s[i] == '}') {
            snprintf(err, errlen, "key template '%.200s': '}' at byte %zu closes nothing "
                     "(write }} for a literal '}')", s, i + 1);
            goto fail;
        } else if (s[i] == '{') {
            const char *end = strchr(s + i + 1, '}');
            if (!end) {
                snprintf(err, errlen, "key template '%.200s': '{' at byte %zu is not closed "
                         "(write {{ for a literal '{')", s, i + 1);
                goto fail;
            }
            size_t nl = (size_t)(end - (s + i + 1));
            if (nl == 0 || nl > ZX_REDIS_TPL_NAME_MAX || memchr(s + i + 1, '{', nl)) {
                snprintf(err, errlen, "key template '%.200s': the placeholder at byte %zu "
                         "must name a result column (1 to %d bytes, no '{')", s, i + 1,
                         ZX_REDIS_TPL_NAME_MAX);
                goto fail;
            }
            if (litlen && add_part(t, &cap, lit, litlen, NULL, 0) < 0)
                goto nomem;
            litlen = 0;
            if (add_part(t, &cap, NULL, 0, s + i + 1, nl) < 0)
                goto nomem;
            nph++;
            i += nl + 2;
        } else {
            lit[litlen++] = s[i++];
        }
    }
    if (litlen && add_part(t, &cap, lit, litlen, NULL, 0) < 0)
        goto nomem;
    if (!nph) {
        snprintf(err, errlen, "key template '%.200s' has no placeholder: write the key "
                 "columns in braces, like cache:order:{id}", s);
        goto fail;
    }
    free(lit);
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
fail:
    free(lit);
    zx_redis_tpl_free(t);
    return -1;
}

int zx_redis_tpl_bind(zx_redis_tpl *t, const char *const *names, size_t n, char *err,
                      size_t errlen)
{
    for (size_t i = 0; i < t->nparts; i++) {
        zx_redis_tpl_part *p = &t->parts[i];
        if (!p->name)
            continue;
        size_t c = 0;
        while (c < n && strcmp(names[c], p->name))
            c++;
        if (c == n) {
            char list[400];
            size_t o = 0;
            list[0] = '\0';
            for (size_t k = 0; k < n && o + 4 < sizeof(list); k++)
                o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", k ? ", " : "",
                                      names[k]);
            if (o >= sizeof(list))
                o = sizeof(list) - 1;
            snprintf(err, errlen, "key template: {%.128s} is not a column of the result "
                     "(columns: %s)", p->name, list);
            return -1;
        }
        p->col = c;
    }
    return 0;
}

int zx_redis_key_escape(zx_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    if (n > SIZE_MAX / 3 || zx_buf_reserve(b, 3 * n) < 0)
        return -1;
    char *o = b->p + b->len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e || strchr("%:{}*?[]\\", c)) {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    b->len = (size_t)(o - b->p);
    b->p[b->len] = '\0';
    return 0;
}

int zx_redis_tpl_format(const zx_redis_tpl *t, zx_redis_text_fn text, void *ctx, zx_buf *b,
                        const char **why, size_t *bad_col)
{
    zx_buf_reset(b);
    for (size_t i = 0; i < t->nparts; i++) {
        const zx_redis_tpl_part *p = &t->parts[i];
        if (!p->name) {
            if (zx_buf_put(b, p->lit, p->litlen) < 0)
                return -1;
        } else {
            const char *s;
            size_t n;
            int r = text(ctx, p->col, &s, &n);
            if (r < 0)
                return -1;
            if (r == 0) {
                *why = "is NULL";
                *bad_col = p->col;
                return 0;
            }
            if (n > ZX_REDIS_KEY_MAX) {
                *why = "makes a key longer than 4096 bytes";
                *bad_col = SIZE_MAX;
                return 0;
            }
            if (zx_redis_key_escape(b, s, n) < 0)
                return -1;
        }
        if (b->len > ZX_REDIS_KEY_MAX) {
            *why = "makes a key longer than 4096 bytes";
            *bad_col = SIZE_MAX;
            return 0;
        }
    }
    return 1;
}

void zx_redis_tpl_free(zx_redis_tpl *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nparts; i++) {
        free(t->parts[i].lit);
        free(t->parts[i].name);
    }
    free(t->parts);
    t->parts = NULL;
    t->nparts = 0;
}
