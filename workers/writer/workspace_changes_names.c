/*
 * workspace_changes_names.c — which mirror column each source column of a
 * changes frame goes to (workspace_changes_int.h: wc_stored_names).
 *
 * Postgres tells "UPPER" from "upper"; SQLite does not (its identifiers
 * ignore ASCII case), so a source table with both would need two columns
 * that SQLite sees as one.  The rule, deterministic and stable across
 * restarts because it only reads the mirror's columns and the frame:
 *   1. a source column whose name is a mirror column's name exactly
 *      (ops->name_exact) goes to that column;
 *   2. the others, in the frame's column order, keep their own name when
 *      the database sees no column of that name yet (ops->name_cmp: none
 *      in the mirror, none given to an earlier column of the frame);
 *   3. else they get <name>_2, <name>_3, ...: the first that is no other
 *      source column's name and either is an unclaimed mirror column's
 *      name exactly (made so before) or is free.
 * So the column seen first keeps its name and a later one differing only
 * in case is <name>_2.  On Postgres step 1 catches every column: it never
 * renames.  What the rule cannot tell: a source that later adds a column
 * named like a suffixed one (upper_2 after upper became upper_2); that
 * column then shares the mirror column.
 */
#include "workers/writer/workspace_changes_int.h"

#include "common/rowset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int exact(const zx_ws *w, const char *a, const char *b)
{
    return (w->ops->name_exact ? w->ops->name_exact(a, b) : w->ops->name_cmp(a, b)) == 0;
}

/* 1 when cand is the database's same name as a source column other than c. */
static int other_source(const zx_ws *w, const char *const *src, uint32_t n, uint32_t c,
                        const char *cand)
{
    for (uint32_t j = 0; j < n; j++)
        if (j != c && src[j] && w->ops->name_cmp(src[j], cand) == 0)
            return 1;
    return 0;
}

/* The mirror column exactly named cand and not claimed, or -1. */
static int64_t unclaimed(const zx_ws *w, const ws_table *t, const uint8_t *claimed,
                         const char *cand)
{
    for (uint32_t i = 0; i < t->ncols; i++)
        if (!claimed[i] && exact(w, t->cols[i].name, cand))
            return i;
    return -1;
}

/* 1 when the database already sees a column named cand (the mirror's, or
 * one given to a frame column). */
static int taken(const zx_ws *w, const ws_table *t, char *const *out, uint32_t n,
                 const char *cand)
{
    for (uint32_t i = 0; i < t->ncols; i++)
        if (w->ops->name_cmp(t->cols[i].name, cand) == 0)
            return 1;
    for (uint32_t j = 0; j < n; j++)
        if (out[j] && w->ops->name_cmp(out[j], cand) == 0)
            return 1;
    return 0;
}

static uint32_t fold_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        h = (h ^ (c >= 'A' && c <= 'Z' ? c + 32 : c)) * 16777619u;
    }
    return h;
}

int wc_names_clash(const zx_ws *w, const ws_table *t, const zx_rowset *rs, const int32_t *map)
{
    if (!w->ops->name_exact)
        return 0;   /* name_cmp is exact: nothing to tell apart */
    uint32_t cap = 16;
    while (cap < 2 * (t->ncols + rs->ncols) + 16)
        cap <<= 1;
    const char **set = calloc(cap, sizeof(*set));
    if (!set)
        return -1;
    int clash = 0;
    for (uint32_t i = 0; i < t->ncols + rs->ncols && !clash; i++) {
        uint32_t c = i - t->ncols;
        if (i >= t->ncols && map && map[c] != -3)
            continue;
        const char *n = i < t->ncols ? t->cols[i].name : rs->cols[c].name;
        for (uint32_t h = fold_hash(n) & (cap - 1);; h = (h + 1) & (cap - 1)) {
            if (!set[h]) {
                set[h] = n;
                break;
            }
            if (w->ops->name_cmp(set[h], n) == 0) {
                clash = strcmp(set[h], n) != 0;
                break;
            }
        }
    }
    free(set);
    return clash;
}

int wc_stored_names(const zx_ws *w, const ws_table *t, const char *const *src, uint32_t n,
                    char **out)
{
    uint8_t *claimed = calloc(t->ncols + 1, 1);
    if (!claimed)
        return -1;
    for (uint32_t c = 0; c < n; c++)
        out[c] = NULL;
    for (uint32_t c = 0; c < n; c++) {
        if (!src[c])
            continue;
        int64_t i = unclaimed(w, t, claimed, src[c]);
        if (i >= 0) {
            claimed[i] = 1;
            if (!(out[c] = strdup(t->cols[i].name)))
                goto nomem;
        }
    }
    for (uint32_t c = 0; c < n; c++) {
        if (!src[c] || out[c])
            continue;
        if (!taken(w, t, out, n, src[c])) {
            if (!(out[c] = strdup(src[c])))
                goto nomem;
            continue;
        }
        size_t len = strlen(src[c]) + 16;
        char *cand = malloc(len);
        if (!cand)
            goto nomem;
        /* some k <= n + ncols + 1 is free: each name rules out one k */
        for (uint32_t k = 2;; k++) {
            snprintf(cand, len, "%s_%u", src[c], k);
            if (other_source(w, src, n, c, cand))
                continue;
            int64_t i = unclaimed(w, t, claimed, cand);
            if (i >= 0) {
                claimed[i] = 1;
                snprintf(cand, len, "%s", t->cols[i].name);
                break;
            }
            if (!taken(w, t, out, n, cand))
                break;
        }
        out[c] = cand;
    }
    free(claimed);
    return 0;
nomem:
    for (uint32_t c = 0; c < n; c++) {
        free(out[c]);
        out[c] = NULL;
    }
    free(claimed);
    return -1;
}

const char *wc_col_name(const apply *a, uint32_t c)
{
    return a->t->cols[a->cc->tcol[c]].name;
}

int64_t wc_find_exact(const zx_ws *w, const ws_table *t, const char *name)
{
    for (uint32_t i = 0; i < t->ncols; i++)
        if (exact(w, t->cols[i].name, name))
            return i;
    return -1;
}

int64_t wc_key_tcol(const apply *a, size_t k)
{
    int64_t rc = a->cc->key[k];
    return rc >= 0 ? a->cc->tcol[rc] : wc_find_exact(a->w, a->t, a->c->key_cols[k]);
}

const char *wc_key_name(const apply *a, size_t k)
{
    int64_t tc = wc_key_tcol(a, k);
    return tc >= 0 ? a->t->cols[tc].name : a->c->key_cols[k];
}
