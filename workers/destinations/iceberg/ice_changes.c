/*
 * ice_changes.c — what an upsert or mirror run does to the files of an
 * Iceberg table it finds: position deletes (merge-on-read), one delete
 * file per partition, or copy-on-write rewrites (ice_dest.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/destinations/iceberg/ice_dest.h"
#include "workers/destinations/lake/lake_side.h"

static int write_deletes(ice_state *st, const ice_view *v, char *err, size_t errlen);

/* ---- copy-on-write ------------------------------------------------------- */

/* 1 when URI u is among the files the run removes. */
int ice_removing(const ice_state *st, const char *u)
{
    size_t i;
    json_t *x;
    json_array_foreach(st->removed, i, x)
        if (!strcmp(json_string_value(x), u))
            return 1;
    return 0;
}

/* The run's changes over the live files: position deletes (st->mor) or
 * copy-on-write, once; the check of other writers' files every try. */
int ice_changes(ice_state *st, const ice_view *v, char *err, size_t errlen)
{
    /* a run that found the table empty kept no keys: a data file another
     * writer committed since may hold one of them */
    for (size_t i = 0; st->cow && st->fresh && i < v->nlive; i++)
        if (!ice_zx_file(st, v->live[i].e->file_path))
            return zx_seterr(err, errlen, "%s: another writer committed data file %s while "
                             "this run filled the empty table; nothing of this run was "
                             "committed: the next run sees it", st->where,
                             v->live[i].e->file_path);
    if (!st->cow || !zx_lw_changed(st->lw))
        return 0;
    /* every try: a file another writer committed meanwhile too */
    for (size_t i = 0; i < v->nlive; i++) {
        const zx_ice_entry *e = v->live[i].e;
        if (!ice_zx_file(st, e->file_path) && ice_may_hold(st, e))
            return zx_seterr(err, errlen, "%s: data file %s was written by another "
                             "writer and may hold keys this run changes or deletes (its "
                             "%s bounds cover one, or it has none); zx rewrites only the "
                             "files it wrote: run the sync once with mode replace to take "
                             "the table over", st->where, e->file_path, st->key0);
    }
    if (st->mor)                /* merge-on-read: position deletes, no rewrite */
        return write_deletes(st, v, err, errlen);
    if (st->rewritten)
        return 0;
    for (size_t i = 0; i < v->nlive; i++) {
        const zx_ice_entry *e = v->live[i].e;
        if (!ice_zx_file(st, e->file_path))
            continue;
        const char *rel = ice_rel_of(st, e->file_path);
        int hit = 0;
        int g = zx_lw_touches(st->lw, rel, &hit, err, errlen);
        if (g == ZX_LAKE_NOT_FOUND)
            return zx_seterr(err, errlen, "%s: the copy of data file %s zx keeps is missing: "
                             "run the sync once with mode replace", st->where, e->file_path);
        if (g < 0)
            return -1;
        if (!hit)
            continue;
        json_array_append_new(st->removed, json_string(e->file_path));
        g = zx_lw_rewrite(st->lw, rel, err, errlen);
        if (g == ZX_LAKE_NOT_FOUND)     /* its keys are there (above), its rows not */
            return zx_seterr(err, errlen, "%s: data file %s holds rows this run changes, and "
                             "zx kept only its keys (it was written while the table took "
                             "position deletes), so it cannot rewrite it as the table's "
                             "write.merge.mode = copy-on-write asks: set write.merge.mode "
                             "back to merge-on-read, or run the sync once with mode replace",
                             st->where, e->file_path);
        if (g < 0)
            return -1;
    }
    st->rewritten = 1;
    return zx_lw_flush(st->lw, err, errlen);
}

/* ---- merge-on-read: position deletes -------------------------------------- */

#define POS_PATH_ID 2147483546    /* the spec's reserved field ids */
#define POS_POS_ID 2147483545

typedef struct pos_pair {
    const char *path;            /* a live entry's file_path (the view's) */
    int64_t pos;
    size_t group;                /* its partition's (index into the groups) */
} pos_pair;

static int cmp_pair(const void *a, const void *b)
{
    const pos_pair *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    int c = strcmp(x->path, y->path);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* 1 when partition tuples a and b (n values) are the same. */
static int same_tuple(const zx_ice_pvalue *a, const zx_ice_pvalue *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i].is_null != b[i].is_null)
            return 0;
        if (a[i].is_null)
            continue;
        if (a[i].i != b[i].i || memcmp(&a[i].d, &b[i].d, sizeof(double)) ||
            a[i].len != b[i].len || (a[i].len && memcmp(a[i].s, b[i].s, a[i].len)))
            return 0;
    }
    return 1;
}

/* The 16-byte hash of (path, pos): what "already deleted" is kept by. */
static void pair_hash(const char *path, int64_t pos, zx_buf *tmp, unsigned char out[16])
{
    zx_buf_reset(tmp);
    zx_buf_put(tmp, path, strlen(path) + 1);
    zx_buf_put(tmp, &pos, 8);
    zx_lake_hash128(tmp->p, tmp->len, out);
}

/* Append pair (path, pos) to *pairs.  0 or -1 (out of memory). */
static int pair_put(pos_pair **pairs, size_t *np, size_t *cap, pos_pair p)
{
    if (*np == *cap) {
        size_t c = *cap ? *cap * 2 : 256;
        pos_pair *nn = realloc(*pairs, c * sizeof(*nn));
        if (!nn)
            return -1;
        *pairs = nn;
        *cap = c;
    }
    (*pairs)[(*np)++] = p;
    return 0;
}

/* The group (partition) of live entry en among groups[0..*ngroups),
 * added when new.  0 with *grp, or -1 with err (a file of another spec). */
static int group_of(ice_state *st, const ice_view *v, size_t live, const zx_ice_pvalue **groups,
                    size_t *ngroups, size_t *grp, char *err, size_t errlen)
{
    const zx_ice_entry *en = v->live[live].e;
    *grp = 0;
    if (!st->nparts)
        return 0;
    /* a delete file holds one partition's deletes, of the table's current
     * spec (the one zx writes) */
    if (v->mfiles[v->live[live].manifest].partition_spec_id != st->spec_id || !en->partition)
        return zx_seterr(err, errlen, "%s: data file %s holds rows this run changes and was "
                         "written under partition spec %d, not the table's current %d; zx "
                         "writes position deletes for the current spec only: run the sync "
                         "once with mode replace", st->where, en->file_path,
                         v->mfiles[v->live[live].manifest].partition_spec_id, st->spec_id);
    size_t g;
    for (g = 0; g < *ngroups && !same_tuple(groups[g], en->partition, st->nparts); g++)
        ;
    if (g == *ngroups)
        groups[(*ngroups)++] = en->partition;
    *grp = g;
    return 0;
}

/* The old pairs a compaction carries: the position deletes of zx's delete
 * files (read by load_gone from their .pos copies) whose data files are
 * still live, each with its data file's group. */
typedef struct old_pairs {
    pos_pair *pairs;
    size_t np, cap;
    const zx_ice_pvalue **groups;
    size_t *ngroups;
    char last[1100];             /* the path looked up last (pairs come by path) */
    size_t last_i;               /* its live index, or v->nlive: not live */
} old_pairs;

/* Keep pair (path, pos) of an old delete file when path is a live data
 * file of the view.  0 or -1. */
static int old_keep(ice_state *st, const ice_view *v, old_pairs *o, const char *path,
                    int64_t pos, char *err, size_t errlen)
{
    if (strcmp(o->last, path)) {
        snprintf(o->last, sizeof(o->last), "%s", path);
        for (o->last_i = 0; o->last_i < v->nlive &&
                            strcmp(v->live[o->last_i].e->file_path, path); o->last_i++)
            ;
    }
    if (o->last_i == v->nlive)
        return 0;                 /* its data file is gone: so is the need */
    size_t grp;
    if (group_of(st, v, o->last_i, o->groups, o->ngroups, &grp, err, errlen) < 0)
        return -1;
    if (pair_put(&o->pairs, &o->np, &o->cap,
                 (pos_pair){v->live[o->last_i].e->file_path, pos, grp}) < 0)
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    return 0;
}

/* The positions zx's delete files of the view delete already (their
 * copies, "_zx/<file>.pos": per pair a 2-byte length, the path, and the
 * position as 8 bytes) into gone; with old, also the pairs themselves
 * (those of live data files).  0 or -1. */
static int load_gone(ice_state *st, const ice_view *v, zx_keyset *gone, old_pairs *old,
                     char *err, size_t errlen)
{
    zx_buf b = {0}, tmp = {0};
    int rc = 0;
    for (size_t i = 0; i < v->ndlive && rc == 0; i++) {
        const char *rel = ice_rel_of(st, v->dlive[i].e->file_path);
        char side[1200];
        if (!rel || snprintf(side, sizeof(side), "%s/%s.pos", ZX_LAKE_SIDE_DIR, rel) >=
                        (int)sizeof(side))
            continue;
        int g = zx_lake_get(st->lake, side, 0, &b, err, errlen);
        if (g == ZX_LAKE_NOT_FOUND) {
            rc = zx_seterr(err, errlen, "%s: zx's copy of its delete file %s is missing: run "
                           "the sync once with mode replace", st->where,
                           v->dlive[i].e->file_path);
            break;
        }
        if (g < 0) {
            rc = -1;
            break;
        }
        size_t off = 0;
        while (rc == 0 && off + 2 <= b.len) {
            size_t l = (size_t)(unsigned char)b.p[off] | (size_t)(unsigned char)b.p[off + 1] << 8;
            if (off + 2 + l + 8 > b.len) {
                rc = zx_seterr(err, errlen, "%s: zx's copy %s is damaged", st->where, side);
                break;
            }
            char path[1100];
            int64_t pos;
            snprintf(path, sizeof(path), "%.*s", (int)l, b.p + off + 2);
            memcpy(&pos, b.p + off + 2 + l, 8);
            unsigned char h[16];
            pair_hash(path, pos, &tmp, h);
            if (zx_keyset_add(gone, h) < 0)
                rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
            if (rc == 0 && old)
                rc = old_keep(st, v, old, path, pos, err, errlen);
            off += 2 + l + 8;
        }
    }
    zx_buf_free(&b);
    zx_buf_free(&tmp);
    return rc;
}

/* One position delete file of the run: pairs[0..np) (sorted; one
 * partition's, tuple pv) into "data/zx-<run>-deletes-<uuid>.parquet"
 * (file_path, pos), its copy "_zx/<file>.pos", and its entry in the
 * delete manifest m.  0 or -1. */
static int write_delete_file(ice_state *st, const pos_pair *pairs, size_t np,
                             const zx_ice_pvalue *pv, zx_ice_manifest *m, char *err,
                             size_t errlen)
{
    zx_buf side = {0};
    zx_lake_out *out = NULL;
    zx_pq_writer *pq = NULL;
    zx_rowset rs;
    zx_rowset_init(&rs);
    char e[512], uuid[37], rel[200];
    int rc = 0;
    zx_lake_uuid4(uuid);
    snprintf(rel, sizeof(rel), "data/zx-%llu-deletes-%.8s.parquet",
             (unsigned long long)st->run_id, uuid);
    zx_dcol cols[2] = {{"file_path", ZX_DT_TEXT, 0, 0}, {"pos", ZX_DT_INT64, 0, 0}};
    int32_t ids[2] = {POS_PATH_ID, POS_POS_ID};
    if (!(out = zx_lake_create(st->lake, rel, err, errlen)))
        return -1;
    json_array_append_new(st->written_meta, json_string(rel));
    zx_pq_opts po = {.codec = st->codec, .sink = zx_lake_sink, .sink_ctx = out,
                     .field_ids = ids};
    if (zx_pq_open(-1, cols, 2, &po, &pq, e, sizeof(e)) < 0) {
        rc = zx_seterr(err, errlen, "%s: %s: %s", st->where, rel, e);
        goto out;
    }
    for (size_t a = 0; rc == 0 && a < np; a += 10000) {
        zx_rowset_reset(&rs);
        zx_rowset_column(&rs, "file_path", 9, ZX_T_TEXT);
        zx_rowset_column(&rs, "pos", 3, ZX_T_INT);
        for (size_t k = a; k < np && k < a + 10000; k++) {
            size_t l = strlen(pairs[k].path);
            zx_value pvv = {.type = ZX_T_TEXT, .s = pairs[k].path, .len = (uint32_t)l};
            zx_value iv = {.type = ZX_T_INT, .u.i = pairs[k].pos};
            if (zx_rowset_begin_row(&rs) < 0 || zx_rowset_add(&rs, 0, &pvv) < 0 ||
                zx_rowset_add(&rs, 1, &iv) < 0) {
                rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
                break;
            }
            zx_rowset_end_row(&rs);
            unsigned char l2[2] = {(unsigned char)l, (unsigned char)(l >> 8)};
            if (zx_buf_put(&side, l2, 2) < 0 || zx_buf_put(&side, pairs[k].path, l) < 0 ||
                zx_buf_put(&side, &pairs[k].pos, 8) < 0)
                rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
        }
        if (rc == 0 && zx_pq_write(pq, &rs, e, sizeof(e)) < 0)
            rc = zx_seterr(err, errlen, "%s: %s: %s", st->where, rel, e);
    }
    uint64_t size = 0;
    if (rc == 0 && zx_pq_finish(pq, NULL, e, sizeof(e)) < 0)
        rc = zx_seterr(err, errlen, "%s: %s: %s", st->where, rel, e);
    if (rc == 0) {
        rc = zx_lake_out_commit(out, &size, err, errlen);
        out = NULL;
    }
    char sidename[300];
    snprintf(sidename, sizeof(sidename), "%s/%s.pos", ZX_LAKE_SIDE_DIR, rel);
    if (rc == 0 && zx_lake_put(st->lake, sidename, side.p, side.len, 0, err, errlen) < 0)
        rc = -1;
    if (rc == 0)
        json_array_append_new(st->written_meta, json_string(sidename));
    char *uri = rc == 0 ? ice_uri_of(st, rel) : NULL;
    if (rc == 0 && !uri)
        rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
    if (rc == 0) {
        zx_ice_entry en = {.status = 1, .content = 1, .file_path = uri,
                           .partition = st->nparts ? pv : NULL,
                           .record_count = (int64_t)np, .file_size_in_bytes = (int64_t)size};
        if (zx_ice_manifest_add(m, &en, e, sizeof(e)) < 0)
            rc = zx_seterr(err, errlen, "%s: the delete manifest: %s", st->where, e);
    }
    free(uri);
    if (rc == 0) {
        st->del_rows += (int64_t)np;
        st->del_files++;
    }
out:
    zx_pq_free(pq);
    zx_lake_out_abort(out);
    zx_rowset_free(&rs);
    zx_buf_free(&side);
    return rc;
}

/* The run's position deletes (once): the rows of zx's live data files
 * whose keys it wrote or deleted and that no delete file of zx deletes
 * yet, written as one delete file per partition (Parquet: file_path, pos,
 * sorted; a delete file applies to the data files of its partition), their
 * copies, and one delete manifest.  When zx's live delete files number
 * ICE_DELETE_FILES_MAX or more, the run compacts them: its delete files
 * carry their positions too (those of data files still live), and the
 * snapshot drops their manifests (st->compacted), so readers never apply
 * more than that many.  0 or -1. */
static int write_deletes(ice_state *st, const ice_view *v, char *err, size_t errlen)
{
    if (st->del_manifest_path || !zx_lw_changed(st->lw))
        return 0;
    zx_keyset gone = {0};
    size_t ngroups = 0, nnew = 0;
    const zx_ice_pvalue **groups = calloc(v->nlive + 1, sizeof(*groups));
    old_pairs o = {.groups = groups, .ngroups = &ngroups, .last_i = v->nlive};
    zx_buf tmp = {0}, mb = {0};
    zx_ice_manifest *m = NULL;
    char e[512];
    int compact = v->ndlive >= ICE_DELETE_FILES_MAX;
    int rc = groups ? load_gone(st, v, &gone, compact ? &o : NULL, err, errlen)
                    : zx_seterr(err, errlen, "%s: out of memory", st->where);
    /* the new pairs go after the old ones (o.pairs, empty without compaction) */
    for (size_t i = 0; rc == 0 && i < v->nlive; i++) {
        const zx_ice_entry *en = v->live[i].e;
        if (!ice_zx_file(st, en->file_path))
            continue;
        int64_t *pos = NULL;
        size_t n = 0, grp = 0, before = nnew;
        int g = zx_lw_changed_rows(st->lw, ice_rel_of(st, en->file_path), &pos, &n, err, errlen);
        if (g == ZX_LAKE_NOT_FOUND)
            rc = zx_seterr(err, errlen, "%s: the copy of data file %s zx keeps is missing: "
                           "run the sync once with mode replace", st->where, en->file_path);
        else if (g < 0)
            rc = -1;
        if (rc == 0 && n)
            rc = group_of(st, v, i, groups, &ngroups, &grp, err, errlen);
        for (size_t k = 0; rc == 0 && k < n; k++) {
            unsigned char h[16];
            pair_hash(en->file_path, pos[k], &tmp, h);
            if (zx_keyset_has(&gone, h))
                continue;
            if (pair_put(&o.pairs, &o.np, &o.cap, (pos_pair){en->file_path, pos[k], grp}) < 0)
                rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
            nnew++;
        }
        if (nnew > before)
            json_array_append_new(st->touched, json_string(en->file_path));
        free(pos);
    }
    if (rc < 0 || !nnew)
        goto out;
    /* the old pairs' data files must still be live at every try too */
    for (size_t k = 0; compact && k < o.np - nnew; k++)
        if (!k || strcmp(o.pairs[k].path, o.pairs[k - 1].path))
            json_array_append_new(st->touched, json_string(o.pairs[k].path));
    st->compacted = compact;
    pos_pair *pairs = o.pairs;
    size_t np = o.np;
    qsort(pairs, np, sizeof(*pairs), cmp_pair);
    char *sj = json_dumps(st->schema, JSON_COMPACT);
    zx_ice_manifest_args ma = {.schema_json = sj, .schema_id = (int32_t)json_integer_value(
                                   json_object_get(st->schema, "schema-id")),
                               .partition_spec_json = st->spec_json ? st->spec_json : "[]",
                               .partition_spec_id = st->spec_id, .pfields = st->pfields,
                               .npfields = st->nparts, .content = 1,
                               .codec = ZX_AVRO_DEFLATE};
    if (!sj || zx_ice_manifest_open(&ma, &m, e, sizeof(e)) < 0)
        rc = zx_seterr(err, errlen, "%s: the delete manifest: %s", st->where, sj ? e : "oom");
    free(sj);
    for (size_t a = 0, b; rc == 0 && a < np; a = b) {
        for (b = a + 1; b < np && pairs[b].group == pairs[a].group; b++)
            ;
        rc = write_delete_file(st, pairs + a, b - a, groups[pairs[a].group], m, err, errlen);
    }
    if (rc == 0 && (zx_ice_manifest_finish(m, &mb, e, sizeof(e)) < 0 ||
                    zx_ice_manifest_summary(m, &st->del_manifest) < 0 ||
                    ice_keep_summary(&st->del_manifest, &st->del_manifest_mem) < 0))
        rc = zx_seterr(err, errlen, "%s: the delete manifest: %s", st->where, e);
    if (rc == 0) {
        char uuid[37], name[200];
        zx_lake_uuid4(uuid);
        snprintf(name, sizeof(name), "metadata/zx-%llu-%s-d0.avro",
                 (unsigned long long)st->run_id, uuid);
        rc = ice_put_meta(st, name, &mb, &st->del_manifest_path, err, errlen);
        st->del_manifest.manifest_path = st->del_manifest_path;
        st->del_manifest.manifest_length = (int64_t)mb.len;
    }
    if (rc == 0 && compact)
        zx_info("event=iceberg_deletes_compacted sync=%s run=%llu delete_files=%zu "
                "positions=%zu", st->sync, (unsigned long long)st->run_id, v->ndlive, np);
out:
    zx_ice_manifest_free(m);
    zx_buf_free(&tmp);
    zx_buf_free(&mb);
    zx_keyset_free(&gone);
    free(groups);
    free(o.pairs);
    return rc;
}
