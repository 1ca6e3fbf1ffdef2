/*
 * verify_row.c — rows of text values and table shapes for `zxctl verify`
 * (verify_int.h).  Pure: no database, unit-tested.
 */
#include "workers/verify/verify_int.h"
#include "workers/verify/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vf_table_free(vf_table *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->ncols; i++) {
        free(t->cols ? t->cols[i] : NULL);
        free(t->decls ? t->decls[i] : NULL);
    }
    for (uint32_t i = 0; i < t->ncols; i++) {
        free(t->stypes ? t->stypes[i] : NULL);
        free(t->mtypes ? t->mtypes[i] : NULL);
    }
    free(t->stypes);
    free(t->mtypes);
    free(t->cols);
    free(t->decls);
    free(t->oids);
    free(t->in_mirror);
    free(t->keys);
    free(t->schema);
    free(t->name);
    free(t->mirror);
    memset(t, 0, sizeof(*t));
}

int vf_row_init(vf_row *r, uint32_t n)
{
    memset(r, 0, sizeof(*r));
    r->v = calloc(n ? n : 1, sizeof(*r->v));
    r->len = calloc(n ? n : 1, sizeof(*r->len));
    if (!r->v || !r->len) {
        vf_row_free(r);
        return -1;
    }
    r->n = n;
    return 0;
}

int vf_row_set(vf_row *r, uint32_t i, const char *s, size_t len)
{
    if (i >= r->n)
        return -1;
    free(r->v[i]);
    r->v[i] = NULL;
    r->len[i] = 0;
    if (!s)
        return 0;
    char *p = malloc(len + 1);
    if (!p)
        return -1;
    memcpy(p, s, len);
    p[len] = '\0';
    r->v[i] = p;
    r->len[i] = len;
    return 0;
}

int vf_row_key(const vf_table *t, const vf_row *r, vf_row *key)
{
    if (vf_row_init(key, t->nkeys) < 0)
        return -1;
    for (uint32_t k = 0; k < t->nkeys; k++) {
        uint32_t i = t->keys[k];
        if (i >= r->n || vf_row_set(key, k, r->v[i], r->len[i]) < 0) {
            vf_row_free(key);
            return -1;
        }
    }
    return 0;
}

void vf_row_free(vf_row *r)
{
    if (!r)
        return;
    for (uint32_t i = 0; r->v && i < r->n; i++)
        free(r->v[i]);
    free(r->v);
    free(r->len);
    memset(r, 0, sizeof(*r));
}

int vf_value_eq(const vf_row *a, const vf_row *b, uint32_t i)
{
    if (i >= a->n || i >= b->n)
        return 0;
    if (!a->v[i] || !b->v[i])
        return !a->v[i] && !b->v[i];
    return a->len[i] == b->len[i] && memcmp(a->v[i], b->v[i], a->len[i]) == 0;
}

int vf_put_ident(zx_buf *b, const char *s)
{
    if (zx_buf_put(b, "\"", 1) < 0)
        return -1;
    for (const char *q; (q = strchr(s, '"')); s = q + 1)
        if (zx_buf_put(b, s, (size_t)(q - s) + 1) < 0 || zx_buf_put(b, "\"", 1) < 0)
            return -1;
    return zx_buf_put(b, s, strlen(s)) < 0 || zx_buf_put(b, "\"", 1) < 0 ? -1 : 0;
}

int vf_put_array(zx_buf *b, const vf_row *rows, size_t n, uint32_t k)
{
    if (vf_put(b, "{") < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *v = k < rows[i].n ? rows[i].v[k] : NULL;
        if (i && vf_put(b, ",") < 0)
            return -1;
        if (!v) {
            if (vf_put(b, "NULL") < 0)
                return -1;
            continue;
        }
        if (vf_put(b, "\"") < 0)
            return -1;
        for (size_t j = 0; j < rows[i].len[k]; j++) {
            if ((v[j] == '"' || v[j] == '\\') && zx_buf_put(b, "\\", 1) < 0)
                return -1;
            if (zx_buf_put(b, v + j, 1) < 0)
                return -1;
        }
        if (vf_put(b, "\"") < 0)
            return -1;
    }
    return vf_put(b, "}");
}

int vf_put(zx_buf *b, const char *s)
{
    return zx_buf_put(b, s, strlen(s));
}

const char *vf_how_name(vf_how h)
{
    switch (h) {
    case VF_EQUAL: return "equal";
    case VF_MISSING: return "missing";
    case VF_EXTRA: return "extra";
    case VF_DIFFER: return "differ";
    }
    return "?";
}

int zx_verify_repair_path(const char *data_dir, const char *pipeline, char *out,
                          size_t outlen)
{
    int n = snprintf(out, outlen, "%s/verify/%s.repair", data_dir, pipeline);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}
