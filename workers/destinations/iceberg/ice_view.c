/*
 * ice_view.c — the live files of an Iceberg table's current snapshot, and
 * whose they are (ice_dest.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "workers/destinations/iceberg/ice_dest.h"
#include "workers/destinations/iceberg/ice_meta.h"

/* ---- the live files of the current snapshot -------------------------------- */

void ice_view_free(ice_view *v)
{
    for (size_t i = 0; v->manifests && i < v->nmfiles; i++)
        zx_ice_mread_free(v->manifests[i]);
    free(v->manifests);
    free(v->live);
    free(v->dlive);
    zx_ice_mlist_free(v->list);
    memset(v, 0, sizeof(*v));
}

int ice_view_read(ice_state *st, ice_view *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof(*v));
    const char *ml = NULL;
    if (zx_ice_current_snapshot(st->tbl.metadata, &ml) < 0 || !ml)
        return 0;
    zx_buf b = {0};
    char e[512];
    if (ice_get_uri(st, ml, &b, err, errlen) < 0) {
        zx_buf_free(&b);
        return -1;
    }
    if (zx_ice_mlist_read(b.p, b.len, &v->list, e, sizeof(e)) < 0) {
        zx_buf_free(&b);
        return zx_seterr(err, errlen, "%s: manifest list %s: %s", st->where, ml, e);
    }
    v->mfiles = zx_ice_mlist_files(v->list, &v->nmfiles);
    v->manifests = calloc(v->nmfiles ? v->nmfiles : 1, sizeof(*v->manifests));
    size_t cap = 0, dcap = 0;
    int rc = v->manifests ? 0 : zx_seterr(err, errlen, "%s: out of memory", st->where);
    for (size_t i = 0; i < v->nmfiles && rc == 0; i++) {
        const char *mrel = ice_rel_of(st, v->mfiles[i].manifest_path);
        int deletes = v->mfiles[i].content != 0;
        if (deletes && !(mrel && !strncmp(mrel, "metadata/zx-", 12))) {
            rc = zx_seterr(err, errlen, "%s: the table has delete files of another writer "
                           "(manifest %s: row-level deletes); zx reads only its own: compact "
                           "the table (rewrite_data_files) or write to a new table",
                           st->where, v->mfiles[i].manifest_path);
            break;
        }
        if (ice_get_uri(st, v->mfiles[i].manifest_path, &b, err, errlen) < 0) {
            rc = -1;
            break;
        }
        if (zx_ice_manifest_read(b.p, b.len, &v->manifests[i], e, sizeof(e)) < 0) {
            rc = zx_seterr(err, errlen, "%s: manifest %s: %s", st->where,
                           v->mfiles[i].manifest_path, e);
            break;
        }
        size_t ne;
        const zx_ice_entry *es = zx_ice_mread_entries(v->manifests[i], &ne);
        for (size_t k = 0; k < ne; k++) {
            if (es[k].status == 2)
                continue;
            ice_live **arr = deletes ? &v->dlive : &v->live;
            size_t *cnt = deletes ? &v->ndlive : &v->nlive;
            size_t *cp = deletes ? &dcap : &cap;
            if (*cnt == *cp) {
                *cp = *cp ? *cp * 2 : 64;
                ice_live *nl = realloc(*arr, *cp * sizeof(*nl));
                if (!nl) {
                    rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
                    break;
                }
                *arr = nl;
            }
            (*arr)[(*cnt)++] = (ice_live){.e = &es[k], .manifest = i};
        }
    }
    zx_buf_free(&b);
    return rc;
}

/* 1 when URI u names a data file zx wrote in this table. */
int ice_zx_file(const ice_state *st, const char *u)
{
    const char *rel = ice_rel_of(st, u);
    return rel && !strncmp(rel, "data/zx-", 8) && !strchr(rel + 5, '/');
}

/* The key bounds of a live entry another writer made: 1 when a changed
 * key may lie in them (or they are unknown). */
int ice_may_hold(ice_state *st, const zx_ice_entry *e)
{
    const zx_ice_bound *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < e->nlower_bounds; i++)
        if (e->lower_bounds[i].id == st->key0_id)
            lo = &e->lower_bounds[i];
    for (size_t i = 0; i < e->nupper_bounds; i++)
        if (e->upper_bounds[i].id == st->key0_id)
            hi = &e->upper_bounds[i];
    if (!lo || !hi)
        return 1;
    zx_dtype kt = zx_lw_key_type(st->lw);
    if (kt == ZX_DT_INT64 && lo->len == 8 && hi->len == 8) {
        int64_t a = 0, b = 0;
        for (int i = 7; i >= 0; i--) {
            a = (int64_t)(((uint64_t)a << 8) | lo->p[i]);
            b = (int64_t)(((uint64_t)b << 8) | hi->p[i]);
        }
        return zx_lw_range_hits_int(st->lw, a, b);
    }
    if (kt == ZX_DT_TEXT) {
        char *a = strndup((const char *)lo->p, lo->len), *b = strndup((const char *)hi->p,
                                                                       hi->len);
        int h = a && b ? zx_lw_range_hits_text(st->lw, a, b) : 1;
        free(a);
        free(b);
        return h;
    }
    return 1;
}
