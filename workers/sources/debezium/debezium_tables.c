/*
 * debezium_tables.c — the tables a table template (`table:` with
 * placeholders) made, kept sorted, and the names it may not make: new
 * ones past max_tables or not matching table_pattern.  See debezium.h
 * (zx_dbz_tables) and debezium_int.h.
 *
 * It must never: forget a table it made (the bound counts them all).
 */
#include "workers/sources/debezium/debezium_int.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "conf/config.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int tables_has(const zx_dbz_tables *t, const char *name)
{
    return t->n && bsearch(&name, t->v, t->n, sizeof(*t->v), cmp_str) != NULL;
}

int zx_dbz_tables_add(zx_dbz_tables *t, const char *name)
{
    if (tables_has(t, name))
        return 0;
    if (zx_grow_to(&t->v, t->n + 1, &t->cap, sizeof(*t->v), 16) < 0)
        return -1;
    char *s = strdup(name);
    if (!s)
        return -1;
    size_t i = t->n;
    while (i > 0 && strcmp(t->v[i - 1], s) > 0) {
        t->v[i] = t->v[i - 1];
        i--;
    }
    t->v[i] = s;
    t->n++;
    return 0;
}

int zx_dbz_tables_init(zx_dbz_tables *t, const zx_conf_pipeline *p, zx_dbz_conf *c,
                       char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    if (!p->table || !strchr(p->table, '{'))
        return 0;
    t->max = p->max_tables;
    if (p->table_pattern) {
        regex_t *re = malloc(sizeof(*re));
        if (!re)
            return zx_seterr(err, errlen, "out of memory");
        if (regcomp(re, p->table_pattern, REG_EXTENDED | REG_NOSUB) != 0) {
            free(re);
            return zx_seterr(err, errlen, "pipeline %s: table_pattern does not compile",
                             p->name);
        }
        t->re = re;
        t->pattern = p->table_pattern;
    }
    c->made = t;
    return 0;
}

void zx_dbz_tables_free(zx_dbz_tables *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
    if (t->re) {
        regfree(t->re);
        free(t->re);
    }
    memset(t, 0, sizeof(*t));
}

int zx_dbz_table_part(const zx_dbz_conf *c, const char *table, char *buf, size_t len)
{
    if (!c->made || !table || !table[0])
        return -1;
    int n = snprintf(buf, len, "%s%s", ZX_DBZ_TABLE_PART, table);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* A name the template may not make (new, and over max_tables or not
 * matching table_pattern): 1 with why. */
int zx_dbz_tables_refuse(const zx_dbz_conf *c, const char *t, const char *tpl, char *why,
                         size_t whylen)
{
    const zx_dbz_tables *m = c->made;
    if (!m || tables_has(m, t))
        return 0;
    if (m->re && regexec(m->re, t, 0, NULL, 0) != 0) {
        snprintf(why, whylen, "the table name \"%s\" made from \"%s\" does not match "
                 "table_pattern \"%s\"", t, tpl, m->pattern);
        return 1;
    }
    if (m->max && m->n >= m->max) {
        snprintf(why, whylen, "the table name \"%s\" made from \"%s\" would be a new "
                 "table beyond max_tables (%zu tables made already); raise max_tables or "
                 "narrow the events", t, tpl, m->max);
        return 1;
    }
    return 0;
}
