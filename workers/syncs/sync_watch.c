/*
 * sync_watch.c — the tables an `on: change` sync watches (sync_watch.h).
 */
#include "workers/syncs/sync_watch.h"

#include <string.h>
#include <strings.h>

#include "workers/syncs/sync_opts.h"

/* The last part of a dotted name (`public.orders` → `orders`); quotes of
 * a part are left for the caller to strip. */
static const char *last_part(const char *t)
{
    const char *d = strrchr(t, '.');
    return d ? d + 1 : t;
}

/* Does identifier id[0..n) (quoted: exact; bare: without case) equal t? */
static int same(const char *id, size_t n, int quoted, const char *t)
{
    size_t tl = strlen(t);
    if (tl >= 2 && (t[0] == '"' || t[0] == '`') && t[tl - 1] == t[0]) {
        t++;      /* a table written quoted in the configuration */
        tl -= 2;
        quoted = 1;
    }
    if (n != tl)
        return 0;
    return quoted ? memcmp(id, t, n) == 0 : strncasecmp(id, t, n) == 0;
}

static int ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (unsigned char)c >= 0x80;
}

static int ident_char(char c)
{
    return ident_start(c) || (c >= '0' && c <= '9') || c == '$';
}

int zx_sync_query_names(const char *q, const char *table)
{
    if (!q || !table || !*table)
        return 0;
    const char *t = last_part(table);
    size_t i = 0, n = strlen(q);
    while (i < n) {
        char c = q[i];
        if (c == '\'') {                       /* a string: skipped */
            for (i++; i < n; i++)
                if (q[i] == '\'' && !(i + 1 < n && q[i + 1] == '\'' && ++i))
                    break;
            i++;
        } else if (c == '-' && i + 1 < n && q[i + 1] == '-') {
            while (i < n && q[i] != '\n')
                i++;
        } else if (c == '/' && i + 1 < n && q[i + 1] == '*') {
            const char *e = strstr(q + i + 2, "*/");
            i = e ? (size_t)(e - q) + 2 : n;
        } else if (c == '"' || c == '`' || c == '[') {
            char close = c == '[' ? ']' : c;
            size_t s = ++i;
            while (i < n && q[i] != close)
                i++;
            if (same(q + s, i - s, 1, t))
                return 1;
            i++;
        } else if (ident_start(c)) {
            size_t s = i;
            while (i < n && ident_char(q[i]))
                i++;
            if (same(q + s, i - s, 0, t))
                return 1;
        } else if (c >= '0' && c <= '9') {
            while (i < n && (ident_char(q[i]) || q[i] == '.'))
                i++;
        } else {
            i++;
        }
    }
    return 0;
}

int zx_sync_watches(const zx_conf *c, const zx_conf_pipeline *p, const char *table)
{
    const zx_sync_opts *o = zx_sync_opts_of(p);
    if (!o || !o->query || !table)
        return 0;
    const zx_conf_author *a = p->auth ? p->auth : zx_conf_find_author(c, o->author);
    if (!a)
        return 0;
    const char *t = last_part(table);
    for (size_t i = 0; i < a->ntables; i++) {
        const char *at = last_part(a->tables[i]);
        if (same(t, strlen(t), 0, at) && zx_sync_query_names(o->query, at))
            return 1;
    }
    return 0;
}
