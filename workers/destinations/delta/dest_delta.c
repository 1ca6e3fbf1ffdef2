/*
 * dest_delta.c — the "delta" destination (dest.h): a sync's result into a
 * Delta Lake table in a folder or an S3 prefix (lake_store.h), one commit
 * per run.
 *
 * begin reads the table (delta_log.h: from the last checkpoint zx wrote,
 * else from version 0) and
 * merges the result's columns into its schema (a new column is added; a
 * changed type fails the run).  write streams rows into Parquet data files
 * (formats/parquet.h; `file_rows` rows each, named
 * "zx-<run id>-<n>.parquet"), each with the rows' copy and key hashes zx
 * keeps beside it (lake_side.h) unless the mode is append.  commit:
 *
 *   replace        remove every live file, add the run's;
 *   append         add the run's;
 *   upsert/mirror  on a table with deletion vectors (zx creates keyed
 *                  tables so, unless deletion_vectors: false): the rows of
 *                  the data files zx wrote that hold a key the run wrote
 *                  or deleted (their key hashes, lake_keys.h) are added to
 *                  each file's deletion vector (delta_dv.h; one vector file
 *                  per run, "zx/deletion_vector_<uuid>.bin"), the file's
 *                  add written again with it and the old one removed; a
 *                  file whose rows are all deleted is removed.  Else
 *                  copy-on-write: those files are removed and their other
 *                  rows written again into new files, from zx's copy (no
 *                  Parquet is read back);
 *
 * then one commit: commitInfo, protocol and metaData (a new table, or a
 * grown schema), a txn action (appId "zx-<sync>", version the run id),
 * the removes and the adds (with stats: numRecords, minValues, maxValues,
 * nullCount).  It is written put-if-absent at the next version; a writer
 * that won that version first is read: when it removed a file this run
 * removes, or changed the schema, the run fails naming it (the next run
 * starts from the new state); else the commit goes to the version after.
 * A put whose answer was lost is settled by reading the version back (our
 * txn there: committed).  A run whose txn the table holds already
 * (version >= run id) commits nothing again.
 *
 * abort removes the data files, sidecars and deletion vector file the run
 * wrote (no commit names them).  Files a killed run left are not referenced by any commit:
 * readers never see them.
 *
 * Stats: rows_written (result rows), rows_deleted (keys given), bytes
 * (data files added), files / files_removed, made ("delta version N").
 */
#include "workers/destinations/dest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "formats/parquet.h"
#include "workers/destinations/delta/delta_checkpoint.h"
#include "common/z85.h"
#include "workers/destinations/delta/delta_dv.h"
#include "workers/destinations/delta/delta_log.h"
#include "workers/destinations/delta/delta_opts.h"
#include "workers/destinations/lake/lake_part.h"
#include "workers/destinations/lake/lake_side.h"
#include "workers/destinations/lake/lake_store.h"
#include "workers/destinations/lake/lake_writer.h"

#define COMMIT_TRIES 20
#define CHECKPOINT_EVERY 10           /* versions, as Delta's writers do */
#define DAY_MS (24 * 3600 * 1000LL)
#define LOG_RETENTION_MS (30 * DAY_MS)      /* delta.logRetentionDuration */
#define FILE_RETENTION_MS (7 * DAY_MS)      /* delta.deletedFileRetentionDuration */
#define DV_FILE_MAX ((size_t)256 << 20)     /* a deletion vector file read back */
#define DV_ROWS_MAX 100000000LL             /* file_rows' maximum (delta_plugin.c) */

typedef struct delta_state {
    char *path, *sync, *app;
    char where[1100];            /* "delta <path>" */
    zx_lake *lake;
    zx_pq_codec codec;
    uint32_t file_rows;
    int dv_create;               /* a new keyed table gets deletion vectors */

    /* the run */
    int running;
    zx_dest_stats *stats;
    zx_sync_mode mode;
    uint64_t run_id;
    zx_delta_table t;
    const zx_dcol *cols;         /* the run's */
    size_t ncols;
    int side, cow, create, already;
    int dv;                      /* deletion vectors mark the rows replaced */
    int fresh;                   /* upsert / mirror into a table without data
                                    files: no key is tracked (lake_writer.h) */
    const char *key0;            /* the first key column (the run's) */
    zx_part parts[ZX_PART_MAX];  /* the table's partition columns (identity) */
    size_t part_src[ZX_PART_MAX], nparts;
    char *schema;                /* a new schemaString; NULL: unchanged */
    zx_lake_writer *lw;          /* the run's data files */
    json_t *adds;                /* add actions (objects) */
    json_t *removes;             /* the files it removes: {path, size, zx, add} */
    json_t *redv;                /* files whose deletion vector it replaces:
                                    {path, remove, add} (the actions) */
    char *dv_written;            /* the deletion vector file it wrote */
    zx_buf dv_cache;             /* a deletion vector file read back */
    char *dv_cache_name;
} delta_state;

/* The stats of a finished data file as Delta's JSON text (malloc'd). */
static char *file_stats(const delta_state *st, const zx_pq_writer *pq, uint64_t rows)
{
    json_t *o = json_object(), *mn = json_object(), *mx = json_object(), *nc = json_object();
    json_object_set_new(o, "numRecords", json_integer((json_int_t)rows));
    size_t nfc;
    const zx_dcol *fc = zx_lw_file_cols(st->lw, &nfc);
    for (size_t i = 0; i < nfc; i++) {
        zx_pq_colstats cs;
        if (zx_pq_col_stats(pq, i, &cs) < 0)
            continue;
        const char *name = fc[i].name;
        const zx_dcol *col = &st->cols[zx_lw_file_col_src(st->lw, i)];
        json_object_set_new(nc, name, json_integer((json_int_t)cs.nulls));
        if (!cs.has_minmax)
            continue;
        json_t *a = NULL, *b = NULL;
        char t1[ZX_TS_BUFSZ], t2[ZX_TS_BUFSZ];
        switch (col->type) {
        case ZX_DT_INT64:
            a = json_integer(cs.imin);
            b = json_integer(cs.imax);
            break;
        case ZX_DT_DOUBLE:
            a = json_real(cs.dmin);
            b = json_real(cs.dmax);
            break;
        case ZX_DT_TIMESTAMP:
            zx_ts_format(cs.imin, t1);
            zx_ts_format(cs.imax, t2);
            a = json_string(t1);
            b = json_string(t2);
            break;
        case ZX_DT_DATE: {
            int64_t y;
            unsigned m, d;
            zx_civil_from_days(cs.imin, &y, &m, &d);
            snprintf(t1, sizeof(t1), "%04lld-%02u-%02u", (long long)y, m, d);
            zx_civil_from_days(cs.imax, &y, &m, &d);
            snprintf(t2, sizeof(t2), "%04lld-%02u-%02u", (long long)y, m, d);
            a = json_string(t1);
            b = json_string(t2);
            break;
        }
        case ZX_DT_TEXT:
        case ZX_DT_JSON:
            if (cs.bmin && cs.bmax) {
                a = json_stringn((const char *)cs.bmin, cs.bmin_len);
                b = json_stringn((const char *)cs.bmax, cs.bmax_len);
            }
            break;
        default:
            break;
        }
        if (a && b) {
            json_object_set_new(mn, name, a);
            json_object_set_new(mx, name, b);
        } else {
            json_decref(a);
            json_decref(b);
        }
    }
    json_object_set_new(o, "minValues", mn);
    json_object_set_new(o, "maxValues", mx);
    json_object_set_new(o, "nullCount", nc);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* A data file is complete (lake_writer.h): its add action. */
static int on_file(void *ctx, const char *name, uint64_t size, uint64_t rows,
                   const zx_pq_writer *pq, const zx_pval *pv, char *err, size_t errlen)
{
    delta_state *st = ctx;
    char *stats = file_stats(st, pq, rows);
    json_t *pvs = json_object();
    zx_buf t = {0};
    for (size_t k = 0; pvs && k < st->nparts; k++) {
        const zx_dcol *c = &st->cols[st->part_src[k]];
        int r = zx_part_text(zx_part_result(&st->parts[k], c), &pv[k], &t);
        if (r < 0 || (r == 0 && zx_buf_put(&t, "", 1) < 0)) {
            json_decref(pvs);
            pvs = NULL;
            break;
        }
        json_object_set_new(pvs, st->parts[k].col, r == 1 ? json_null() : json_string(t.p));
    }
    zx_buf_free(&t);
    char uri[1200];
    size_t u = 0;
    for (const char *c = name; *c && u + 4 < sizeof(uri); c++) {
        if (*c == '%') {
            memcpy(uri + u, "%25", 3);
            u += 3;
        } else {
            uri[u++] = *c;
        }
    }
    uri[u] = 0;
    json_t *add = stats && pvs ? json_pack("{s:s, s:o, s:I, s:I, s:b, s:s, s:{s:s, s:s}}",
                                           "path", uri, "partitionValues", pvs, "size",
                                           (json_int_t)size,
                                    "modificationTime", (json_int_t)(zx_now_us() / 1000),
                                    "dataChange", 1, "stats", stats, "tags", "zx.rows",
                                    !st->side ? "0" : st->dv ? "keys" : "1", "zx.sync",
                                    st->sync) : NULL;
    free(stats);
    if (!add) {
        json_decref(pvs);
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    }
    json_array_append_new(st->adds, add);
    st->stats->bytes += size;
    st->stats->files++;
    return 0;
}

/* 1 when file f (not zx's) may hold a key the run wrote or deleted: its
 * stats' range of the first key column says so, or it has none. */
static int may_hold(delta_state *st, const zx_delta_file *f)
{
    json_t *a = json_loads(f->add_json, 0, NULL);
    const char *stx = a ? json_string_value(json_object_get(a, "stats")) : NULL;
    json_t *sj = stx ? json_loads(stx, 0, NULL) : NULL;
    int hit = 1;
    zx_dtype kt = zx_lw_key_type(st->lw);
    const char *key = st->key0;
    json_t *mn = json_object_get(json_object_get(sj, "minValues"), key);
    json_t *mx = json_object_get(json_object_get(sj, "maxValues"), key);
    if (kt == ZX_DT_INT64 && json_is_integer(mn) && json_is_integer(mx))
        hit = zx_lw_range_hits_int(st->lw, json_integer_value(mn), json_integer_value(mx));
    else if (kt == ZX_DT_TEXT && json_is_string(mn) && json_is_string(mx))
        hit = zx_lw_range_hits_text(st->lw, json_string_value(mn), json_string_value(mx));
    json_decref(sj);
    json_decref(a);
    return hit;
}

/* ---- open, begin, write, delete ----------------------------------------- */

static void run_reset(delta_state *st)
{
    zx_lw_free(st->lw);
    st->lw = NULL;
    zx_delta_table_free(&st->t);
    free(st->schema);
    st->schema = NULL;
    json_decref(st->adds);
    json_decref(st->removes);
    json_decref(st->redv);
    st->adds = st->removes = st->redv = NULL;
    free(st->dv_written);
    st->dv_written = NULL;
    free(st->dv_cache_name);
    st->dv_cache_name = NULL;
    zx_buf_free(&st->dv_cache);
    st->running = st->already = st->create = st->dv = st->fresh = 0;
}

static void delta_close(void *state)
{
    delta_state *st = state;
    if (!st)
        return;
    run_reset(st);
    zx_lake_free(st->lake);
    free(st->path);
    free(st->sync);
    free(st->app);
    free(st);
}

static int delta_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    *state = NULL;
    const zx_delta_opts *o = a->opts;
    if (!o || !o->path)
        return zx_seterr(err, errlen, "delta: no path given");
    if (!a->sync || !a->sync[0])
        return zx_seterr(err, errlen, "delta %s: bad sync name", o->path);
    delta_state *st = calloc(1, sizeof(*st));
    if (!st)
        return zx_seterr(err, errlen, "delta %s: out of memory", o->path);
    st->t.version = -1;
    snprintf(st->where, sizeof(st->where), "delta %s", o->path);
    st->path = strdup(o->path);
    st->sync = strdup(a->sync);
    size_t al = strlen(a->sync) + 4;
    st->app = malloc(al);
    if (!st->path || !st->sync || !st->app) {
        delta_close(st);
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    }
    snprintf(st->app, al, "zx-%s", a->sync);
    if (zx_pq_codec_parse(o->compression ? o->compression : "zstd", &st->codec) < 0)
        st->codec = ZX_PQ_ZSTD;
    st->file_rows = o->file_rows ? o->file_rows : 262144;
    st->dv_create = o->deletion_vectors;
    zx_lake_args la = {.root = o->path, .roots = a->roots, .nroots = a->nroots,
                       .conn = a->conn, .what = "delta", .deadline_ms = a->deadline_ms};
    if (!(st->lake = zx_lake_open(&la, err, errlen))) {
        delta_close(st);
        return -1;
    }
    *state = st;
    return 0;
}

/* The table's partition columns: its metaData's when it exists (the
 * sync's partition_by, if written, must be the same), else the sync's.
 * Every one a result column.  0 or -1. */
static int partitions(delta_state *st, const zx_dest_run *run, char *err, size_t errlen)
{
    json_t *have = st->t.metadata ? json_object_get(st->t.metadata, "partitionColumns") : NULL;
    size_t n = have ? json_array_size(have) : run->npartition_by;
    if (n > ZX_PART_MAX)
        return zx_seterr(err, errlen, "%s: the table has %zu partition columns; zx writes "
                         "tables of %d at most", st->where, n, ZX_PART_MAX);
    st->nparts = 0;
    for (size_t k = 0; k < n; k++) {
        const char *spec = have ? json_string_value(json_array_get(have, k))
                                : run->partition_by[k];
        zx_part *pt = &st->parts[k];
        if (!spec || zx_part_parse(spec, pt, err, errlen) < 0 || pt->t != ZX_PT_IDENTITY)
            return zx_seterr(err, errlen, "%s: partition column '%.80s' is not a column name",
                             st->where, spec ? spec : "?");
        size_t i;
        for (i = 0; i < run->ncols && strcmp(run->cols[i].name, pt->col); i++)
            ;
        if (i == run->ncols)
            return zx_seterr(err, errlen, "%s: the table is partitioned by %s, which the "
                             "query does not give: add it to the query", st->where, pt->col);
        st->part_src[k] = i;
        st->nparts++;
    }
    if (have && run->npartition_by) {
        int same = run->npartition_by == n;
        for (size_t k = 0; same && k < n; k++)
            same = !strcmp(json_string_value(json_array_get(have, k)), run->partition_by[k]);
        if (!same) {
            char *h = json_dumps(have, JSON_COMPACT);
            zx_seterr(err, errlen, "%s: the table is partitioned by %s, and the sync's "
                      "partition_by says otherwise: a Delta table keeps its partitioning; "
                      "write partition_by as the table has it, or write to a new table",
                      st->where, h ? h : "?");
            free(h);
            return -1;
        }
    }
    return 0;
}

static int delta_begin(void *state, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                       size_t errlen)
{
    delta_state *st = state;
    run_reset(st);
    st->stats = stats;
    st->mode = run->mode;
    st->run_id = run->run_id;
    st->cols = run->cols;
    st->ncols = run->ncols;
    st->key0 = run->nkey_cols ? run->key_cols[0] : NULL;
    st->side = run->mode != ZX_MODE_APPEND && run->nkey_cols > 0;
    st->cow = (run->mode == ZX_MODE_UPSERT || run->mode == ZX_MODE_MIRROR) && run->nkey_cols > 0;
    st->adds = json_array();
    st->removes = json_array();
    st->redv = json_array();
    if (!st->adds || !st->removes || !st->redv)
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    if (zx_delta_read(st->lake, &st->t, err, errlen) < 0)
        return -1;
    st->create = st->t.version < 0;
    /* deletion vectors: a new table of a keyed sync gets them (unless
     * deletion_vectors: false); a table's own protocol and property say */
    st->dv = st->create ? st->side && st->dv_create : zx_delta_dv_on(&st->t);
    json_t *cf = st->t.metadata ? json_object_get(st->t.metadata, "configuration") : NULL;
    const char *ao = json_string_value(json_object_get(cf, "delta.appendOnly"));
    if (ao && !strcasecmp(ao, "true") && run->mode != ZX_MODE_APPEND)
        return zx_seterr(err, errlen, "%s: the table is append-only (delta.appendOnly = "
                         "true): mode %s would remove files; use mode append, or write to "
                         "another table", st->where, run->mode == ZX_MODE_REPLACE ? "replace"
                         : run->mode == ZX_MODE_UPSERT ? "upsert" : "mirror");
    if (partitions(st, run, err, errlen) < 0)
        return -1;
    char prefix[40];
    snprintf(prefix, sizeof(prefix), "zx-%llu", (unsigned long long)st->run_id);
    st->fresh = st->cow && st->t.nfiles == 0;
    zx_lw_args la = {.lake = st->lake, .where = st->where, .cols = run->cols,
                     .ncols = run->ncols, .key_cols = run->key_cols, .nkeys = run->nkey_cols,
                     .side = st->side, .keys_only = st->dv, .track = st->cow,
                     .fresh = st->fresh, .codec = st->codec,
                     .file_rows = st->file_rows, .dir = "", .prefix = prefix, .stats = stats,
                     .parts = st->parts, .nparts = st->nparts, .drop_part_cols = 1,
                     .part_dirs = 1,
                     .on_file = on_file, .ctx = st};
    if (!(st->lw = zx_lw_new(&la, err, errlen)))
        return -1;
    int64_t done = zx_delta_txn(&st->t, st->app);
    if (done >= 0 && (uint64_t)done >= st->run_id) {
        st->already = 1;
        snprintf(stats->made, sizeof(stats->made), "delta version %lld (this run was "
                 "committed already)", (long long)st->t.version);
        st->running = 1;
        return 0;
    }
    size_t added = 0;
    char *schema = zx_delta_schema_merge(&st->t, run->cols, run->ncols, &added, st->where, err,
                                         errlen);
    if (!schema)
        return -1;
    if (st->create || added)
        st->schema = schema;
    else
        free(schema);
    if (st->cow)
        for (size_t i = 0; i < st->t.nfiles; i++) {
            const zx_delta_file *f = &st->t.files[i];
            json_t *a = json_loads(f->add_json, 0, NULL);
            const char *tag = a ? json_string_value(json_object_get(json_object_get(a, "tags"),
                                                                   "zx.sync")) : NULL;
            int ours = tag && !strcmp(tag, st->sync);
            json_decref(a);
            if (ours && !f->zx)
                return zx_seterr(err, errlen, "%s: data file %s was written by an append run "
                                 "of this sync, without the copy of its rows an %s run "
                                 "rewrites files from: run the sync once with mode replace",
                                 st->where, f->path, run->mode == ZX_MODE_UPSERT ? "upsert"
                                 : "mirror");
        }
    st->running = 1;
    return 0;
}

static int delta_write(void *state, const zx_rowset *rs, char *err, size_t errlen)
{
    delta_state *st = state;
    return zx_lw_run_put(st->lw, st->running, st->already, st->stats, st->where, rs, 0, err,
                         errlen);
}

static int delta_delete(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    delta_state *st = state;
    return zx_lw_run_put(st->lw, st->running, st->already, st->stats, st->where, keys, 1, err,
                         errlen);
}

/* ---- commit ------------------------------------------------------------- */

/* Note that the run removes live file f.  0 or -1 (out of memory). */
static int note_remove(delta_state *st, const zx_delta_file *f)
{
    json_t *a = json_loads(f->add_json, 0, NULL);
    json_t *o = a ? json_pack("{s:s, s:I, s:b, s:O}", "path", f->path, "size",
                              (json_int_t)f->size, "zx", f->zx, "add", a) : NULL;
    json_decref(a);
    return o ? json_array_append_new(st->removes, o) : -1;
}

/* A data file another writer made that may hold a key the run changed
 * fails it (zx knows the keys of its own files only).  0 or -1. */
static int foreign_check(delta_state *st, char *err, size_t errlen)
{
    for (size_t i = 0; i < st->t.nfiles; i++) {
        const zx_delta_file *f = &st->t.files[i];
        if (!f->zx && may_hold(st, f))
            return zx_seterr(err, errlen, "%s: data file %s was written by another writer "
                             "and may hold keys this run changes or deletes (its %s range "
                             "covers one, or it has no statistics); zx replaces rows only in "
                             "the files it wrote: run the sync once with mode replace to take "
                             "the table over", st->where, f->path, st->key0);
    }
    return 0;
}

/* upsert / mirror by copy-on-write: the files holding a changed or
 * deleted key removed and their other rows written again. */
static int rewrite(delta_state *st, char *err, size_t errlen)
{
    if (!zx_lw_changed(st->lw))
        return 0;
    if (foreign_check(st, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < st->t.nfiles; i++) {
        const zx_delta_file *f = &st->t.files[i];
        if (!f->zx)
            continue;
        int hit = 0;
        int g = zx_lw_touches(st->lw, f->path, &hit, err, errlen);
        if (g == ZX_LAKE_NOT_FOUND)
            return zx_seterr(err, errlen, "%s: the copy of data file %s zx keeps (%s/%s.keys) "
                             "is missing: run the sync once with mode replace", st->where,
                             f->path, ZX_LAKE_SIDE_DIR, f->path);
        if (g < 0)
            return -1;
        if (!hit)
            continue;
        if (note_remove(st, f) < 0)
            return zx_seterr(err, errlen, "%s: out of memory", st->where);
        g = zx_lw_rewrite(st->lw, f->path, err, errlen);
        if (g == ZX_LAKE_NOT_FOUND)     /* its keys are there (above), its rows not */
            return zx_seterr(err, errlen, "%s: data file %s holds rows this run changes, and "
                             "zx kept only its keys (it was written while the table took "
                             "deletion vectors), so it cannot rewrite it: set "
                             "delta.enableDeletionVectors back to true, or run the sync once "
                             "with mode replace", st->where, f->path);
        if (g < 0)
            return -1;
    }
    return 0;
}

/* ---- deletion vectors --------------------------------------------------- */

/* The rows live file f's current deletion vector (dvj) deletes, sorted:
 * *pos (malloc'd; NULL when none) and *n.  0 or -1 with err. */
static int dv_current(delta_state *st, const zx_delta_file *f, const json_t *dvj,
                      uint64_t **pos, size_t *n, char *err, size_t errlen)
{
    *pos = NULL;
    *n = 0;
    const char *ty = json_string_value(json_object_get(dvj, "storageType"));
    const char *pd = json_string_value(json_object_get(dvj, "pathOrInlineDv"));
    json_int_t off = json_integer_value(json_object_get(dvj, "offset"));
    json_int_t size = json_integer_value(json_object_get(dvj, "sizeInBytes"));
    json_int_t card = json_integer_value(json_object_get(dvj, "cardinality"));
    if (f->records <= 0)
        return zx_seterr(err, errlen, "%s: data file %s has a deletion vector but no "
                         "numRecords in its stats, which PROTOCOL.md requires", st->where,
                         f->path);
    /* the log is anyone's to write: a numRecords zx's own files cannot
     * have would let a few bytes of run containers ask for gigabytes */
    if (f->records > DV_ROWS_MAX)
        return zx_seterr(err, errlen, "%s: data file %s claims %lld rows; zx writes files of "
                         "%lld rows at most (file_rows): its log was altered, run the sync "
                         "once with mode replace", st->where, f->path,
                         (long long)f->records, (long long)DV_ROWS_MAX);
    zx_buf raw = {0};
    const void *bm = NULL;
    char e[512];
    int rc = 0;
    if (ty && ty[0] == 'i') {
        if (zx_z85_decode(pd, strlen(pd), &raw) < 0 || (json_int_t)raw.len < size)
            rc = zx_seterr(err, errlen, "%s: data file %s: its inline deletion vector is not "
                           "Z85 of %lld bytes", st->where, f->path, (long long)size);
        bm = raw.p;
    } else if (ty && ty[0] == 'u' && f->dv_file) {
        if (!st->dv_cache_name || strcmp(st->dv_cache_name, f->dv_file)) {
            free(st->dv_cache_name);
            st->dv_cache_name = NULL;
            int g = zx_lake_get(st->lake, f->dv_file, DV_FILE_MAX, &st->dv_cache, err,
                                errlen);
            if (g == ZX_LAKE_NOT_FOUND)
                return zx_seterr(err, errlen, "%s: the deletion vector file %s of data file "
                                 "%s is missing", st->where, f->dv_file, f->path);
            if (g < 0)
                return -1;
            if (!(st->dv_cache_name = strdup(f->dv_file)))
                return zx_seterr(err, errlen, "%s: out of memory", st->where);
        }
        if (zx_dv_file_get(st->dv_cache.p, st->dv_cache.len, (uint64_t)off, (uint64_t)size,
                           &bm, e, sizeof(e)) < 0)
            rc = zx_seterr(err, errlen, "%s: %s (of data file %s): %s", st->where,
                           f->dv_file, f->path, e);
    } else {
        rc = zx_seterr(err, errlen, "%s: data file %s has a deletion vector stored by "
                       "absolute path; zx reads those beside the table or inline only: run "
                       "the sync once with mode replace", st->where, f->path);
    }
    if (rc == 0 && zx_dv_decode(bm, (size_t)size, (uint64_t)f->records - 1, pos, n, e,
                                sizeof(e)) < 0)
        rc = zx_seterr(err, errlen, "%s: data file %s: %s", st->where, f->path, e);
    if (rc == 0 && (json_int_t)*n != card)
        rc = zx_seterr(err, errlen, "%s: data file %s: its deletion vector holds %zu rows, "
                       "its cardinality says %lld", st->where, f->path, *n, (long long)card);
    zx_buf_free(&raw);
    if (rc < 0) {
        free(*pos);
        *pos = NULL;
        *n = 0;
    }
    return rc;
}

/* a (sorted) merged with b (sorted) into *out (malloc'd): its size, or
 * (size_t)-1 when out of memory */
static size_t merge_pos(const uint64_t *a, size_t na, const int64_t *b, size_t nb,
                        uint64_t **out)
{
    uint64_t *m = malloc((na + nb + 1) * sizeof(*m));
    if (!(*out = m))
        return (size_t)-1;
    size_t i = 0, j = 0, k = 0;
    while (i < na || j < nb) {
        uint64_t x;
        if (j == nb || (i < na && a[i] <= (uint64_t)b[j]))
            x = a[i++];
        else
            x = (uint64_t)b[j++];
        if (!k || m[k - 1] != x)
            m[k++] = x;
    }
    return k;
}

/* upsert / mirror by deletion vectors: for each file zx wrote that holds
 * a key the run wrote or deleted, a new deletion vector with those rows
 * too (all of a file's rows deleted: the file is removed).  The vectors
 * go into one file, "zx/deletion_vector_<uuid>.bin"; each file's remove
 * (with its old vector) and add (with the new one, its stats' bounds no
 * longer tight) into st->redv.  0 or -1. */
static int dv_deletes(delta_state *st, char *err, size_t errlen)
{
    if (!zx_lw_changed(st->lw))
        return 0;
    if (foreign_check(st, err, errlen) < 0)
        return -1;
    unsigned char uuid[16];
    char uuid_text[37], z[24], pod[40], name[100];
    zx_lake_uuid4(uuid_text);
    for (int i = 0, k = 0; i < 16; i++, k += 2) {
        if (uuid_text[k] == '-')
            k++;
        unsigned hi, lo;
        sscanf(uuid_text + k, "%1x%1x", &hi, &lo);
        uuid[i] = (unsigned char)(hi << 4 | lo);
    }
    zx_dv_uuid_encode(uuid, z);
    snprintf(pod, sizeof(pod), "%s%s", ZX_DELTA_DV_PREFIX, z);
    snprintf(name, sizeof(name), "%s/deletion_vector_%s.bin", ZX_DELTA_DV_PREFIX, uuid_text);
    zx_buf file = {0}, bm = {0};
    int64_t now = zx_now_us() / 1000;
    int rc = 0;
    size_t nfiles = 0;
    for (size_t i = 0; rc == 0 && i < st->t.nfiles; i++) {
        const zx_delta_file *f = &st->t.files[i];
        if (!f->zx)
            continue;
        int64_t *chg = NULL;
        size_t nchg = 0;
        int g = zx_lw_changed_rows(st->lw, f->path, &chg, &nchg, err, errlen);
        if (g == ZX_LAKE_NOT_FOUND) {
            rc = zx_seterr(err, errlen, "%s: the copy of data file %s zx keeps (%s/%s.keys) "
                           "is missing: run the sync once with mode replace", st->where,
                           f->path, ZX_LAKE_SIDE_DIR, f->path);
            break;
        }
        if (g < 0 || !nchg) {
            rc = g < 0 ? -1 : 0;
            free(chg);
            continue;
        }
        json_t *a = json_loads(f->add_json, 0, NULL);
        json_t *old = a ? json_object_get(a, "deletionVector") : NULL;
        uint64_t *cur = NULL, *m = NULL;
        size_t ncur = 0, nm = 0;
        if (!a)
            rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
        else if (old && !json_is_null(old))
            rc = dv_current(st, f, old, &cur, &ncur, err, errlen);
        if (rc == 0 && (nm = merge_pos(cur, ncur, chg, nchg, &m)) == (size_t)-1)
            rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
        free(chg);
        free(cur);
        if (rc == 0 && nm > ncur && f->records > 0 && (int64_t)nm >= f->records) {
            /* every row deleted: the file goes */
            if (note_remove(st, f) < 0)
                rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
        } else if (rc == 0 && nm > ncur) {
            uint64_t off = 0;
            zx_buf_reset(&bm);
            if (zx_dv_encode(m, nm, &bm) < 0 ||
                zx_dv_file_add(&file, bm.p, bm.len, &off) < 0)
                rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
            json_t *ad = rc == 0 ? json_deep_copy(a) : NULL;
            json_t *dv = json_pack("{s:s, s:s, s:I, s:I, s:I}", "storageType", "u",
                                   "pathOrInlineDv", pod, "offset", (json_int_t)off,
                                   "sizeInBytes", (json_int_t)bm.len, "cardinality",
                                   (json_int_t)nm);
            const char *sx = ad ? json_string_value(json_object_get(ad, "stats")) : NULL;
            json_t *sj = sx ? json_loads(sx, 0, NULL) : NULL;
            char *ss = NULL;
            if (sj) {
                json_object_set_new(sj, "tightBounds", json_false());
                ss = json_dumps(sj, JSON_COMPACT);
                json_decref(sj);
            }
            json_t *rm = ad ? json_pack("{s:O, s:I, s:b, s:b, s:O, s:O}", "path",
                                        json_object_get(a, "path"), "deletionTimestamp",
                                        (json_int_t)now, "dataChange", 1,
                                        "extendedFileMetadata", 1, "partitionValues",
                                        json_object_get(a, "partitionValues")
                                        ? json_object_get(a, "partitionValues")
                                        : json_object(), "size", json_object_get(a, "size"))
                                 : NULL;
            if (rm && old && !json_is_null(old))
                json_object_set(rm, "deletionVector", old);
            if (rc == 0 && ad && dv && rm && (!sx || ss)) {
                json_object_set_new(ad, "deletionVector", dv);
                json_object_set_new(ad, "dataChange", json_true());
                json_object_set_new(ad, "modificationTime", json_integer((json_int_t)now));
                if (ss)
                    json_object_set_new(ad, "stats", json_string(ss));
                json_array_append_new(st->redv, json_pack("{s:s, s:o, s:o}", "path", f->path,
                                                          "remove", rm, "add", ad));
                nfiles++;
            } else {
                json_decref(ad);
                json_decref(dv);
                json_decref(rm);
                if (rc == 0)
                    rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
            }
            free(ss);
        }
        free(m);
        json_decref(a);
    }
    if (rc == 0 && file.len) {
        rc = zx_lake_put(st->lake, name, file.p, file.len, 0, err, errlen);
        if (rc == 0 && !(st->dv_written = strdup(name))) {
            char e[256];
            zx_lake_delete(st->lake, name, e, sizeof(e));
            rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
        }
        if (rc == 0)
            st->stats->bytes += file.len;
    }
    zx_buf_free(&file);
    zx_buf_free(&bm);
    if (rc == 0 && nfiles)
        zx_info("event=delta_deletion_vectors sync=%s run=%llu files=%zu file=%s", st->sync,
                (unsigned long long)st->run_id, nfiles, name);
    return rc;
}

/* Append action o (stolen) as one line to b. */
static int line(zx_buf *b, json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s)
        return -1;
    int rc = zx_buf_put(b, s, strlen(s)) < 0 || zx_buf_put(b, "\n", 1) < 0 ? -1 : 0;
    free(s);
    return rc;
}

/* The commit's text into b. */
static int compose(delta_state *st, zx_buf *b)
{
    int64_t now = zx_now_us() / 1000;
    const char *op = st->mode == ZX_MODE_REPLACE ? "Overwrite" : st->cow ? "Merge" : "Append";
    char run[24];
    snprintf(run, sizeof(run), "%llu", (unsigned long long)st->run_id);
    zx_buf_reset(b);
    int rc = line(b, json_pack("{s:{s:I, s:s, s:{s:s}, s:s, s:b, s:s, s:s}}", "commitInfo",
                               "timestamp", (json_int_t)now, "operation",
                               st->mode == ZX_MODE_REPLACE ? "WRITE" : st->cow ? "MERGE"
                                                                              : "WRITE",
                               "operationParameters", "mode", op, "engineInfo", "zx",
                               "isBlindAppend", st->mode == ZX_MODE_APPEND, "zxSync", st->sync,
                               "zxRun", run));
    if (rc == 0 && st->create)
        rc = line(b, st->dv ? json_pack("{s:{s:i, s:i, s:[s], s:[s]}}", "protocol",
                                        "minReaderVersion", 3, "minWriterVersion", 7,
                                        "readerFeatures", "deletionVectors", "writerFeatures",
                                        "deletionVectors")
                            : json_pack("{s:{s:i, s:i}}", "protocol", "minReaderVersion", 1,
                                        "minWriterVersion", 2));
    if (rc == 0 && st->schema) {
        json_t *md;
        if (st->t.metadata) {
            md = json_deep_copy(st->t.metadata);
            json_object_set_new(md, "schemaString", json_string(st->schema));
        } else {
            char id[37];
            zx_lake_uuid4(id);
            json_t *pc = json_array();
            for (size_t k = 0; pc && k < st->nparts; k++)
                json_array_append_new(pc, json_string(st->parts[k].col));
            json_t *cf = st->dv ? json_pack("{s:s}", "delta.enableDeletionVectors", "true")
                                : json_object();
            md = json_pack("{s:s, s:{s:s, s:{}}, s:s, s:o, s:o, s:I}", "id", id, "format",
                           "provider", "parquet", "options", "schemaString", st->schema,
                           "partitionColumns", pc, "configuration", cf, "createdTime",
                           (json_int_t)now);
        }
        rc = line(b, md ? json_pack("{s:o}", "metaData", md) : NULL);
    }
    if (rc == 0)
        rc = line(b, json_pack("{s:{s:s, s:I, s:I}}", "txn", "appId", st->app, "version",
                               (json_int_t)st->run_id, "lastUpdated", (json_int_t)now));
    size_t i;
    json_t *v;
    json_array_foreach(st->removes, i, v) {
        json_t *a = json_object_get(v, "add");
        json_t *rm = json_pack("{s:O, s:I, s:b, s:b, s:O, s:I}", "path",
                               json_object_get(a, "path"), "deletionTimestamp",
                               (json_int_t)now, "dataChange", 1, "extendedFileMetadata", 1,
                               "partitionValues", json_object_get(a, "partitionValues")
                               ? json_object_get(a, "partitionValues") : json_object(),
                               "size", json_integer_value(json_object_get(v, "size")));
        json_t *dv = json_object_get(a, "deletionVector");
        if (rm && dv && !json_is_null(dv))       /* the logical file: path and vector */
            json_object_set(rm, "deletionVector", dv);
        if (rc == 0)
            rc = line(b, rm ? json_pack("{s:o}", "remove", rm) : NULL);
        else
            json_decref(rm);
    }
    json_array_foreach(st->redv, i, v)
        if (rc == 0)
            rc = line(b, json_pack("{s:O}", "remove", json_object_get(v, "remove")));
    json_array_foreach(st->adds, i, v)
        if (rc == 0)
            rc = line(b, json_pack("{s:O}", "add", v));
    json_array_foreach(st->redv, i, v)
        if (rc == 0)
            rc = line(b, json_pack("{s:O}", "add", json_object_get(v, "add")));
    return rc;
}

/* 1 when the run removes the file of path p (as a remove action has it). */
static int removing(const delta_state *st, const char *p)
{
    size_t i;
    json_t *v;
    json_array_foreach(st->removes, i, v) {
        const char *rp = json_string_value(json_object_get(json_object_get(v, "add"), "path"));
        if (rp && !strcmp(rp, p))
            return 1;
    }
    json_array_foreach(st->redv, i, v) {
        const char *rp = json_string_value(json_object_get(json_object_get(v, "add"), "path"));
        if (rp && !strcmp(rp, p))
            return 1;
    }
    return 0;
}

/* A writer won version v: read it (and any after it) into a copy of the
 * table's view and decide.  1: our own commit is there (a put whose answer
 * was lost); 0: no conflict, *next is the next free version; -1 with err:
 * a conflict (the winner named). */
static int lost_race(delta_state *st, int64_t v, int64_t *next, char *err, size_t errlen)
{
    zx_buf b = {0};
    int rc = 0;
    for (;; v++) {
        char name[64];
        zx_delta_commit_name(v, name);
        int g = zx_lake_get(st->lake, name, 0, &b, err, errlen);
        if (g == ZX_LAKE_NOT_FOUND)
            break;
        if (g < 0) {
            rc = -1;
            break;
        }
        /* whose commit, and what it did */
        json_t *ci = NULL;
        int ours = 0, conflict = 0, meta = 0;
        size_t off = 0;
        while (off < b.len) {
            const char *nl = memchr(b.p + off, '\n', b.len - off);
            size_t len = nl ? (size_t)(nl - (b.p + off)) : b.len - off;
            json_t *o = json_loadb(b.p + off, len, 0, NULL);
            off += len + 1;
            json_t *a;
            if (!o)
                continue;
            if ((a = json_object_get(o, "commitInfo")) && !ci)
                ci = json_incref(a);
            else if ((a = json_object_get(o, "txn"))) {
                const char *app = json_string_value(json_object_get(a, "appId"));
                json_int_t ver = json_integer_value(json_object_get(a, "version"));
                if (app && !strcmp(app, st->app) && (uint64_t)ver >= st->run_id)
                    ours = 1;
            } else if ((a = json_object_get(o, "remove"))) {
                const char *p = json_string_value(json_object_get(a, "path"));
                if (p && removing(st, p))
                    conflict = 1;
            } else if (json_object_get(o, "metaData") || json_object_get(o, "protocol"))
                meta = 1;
            json_decref(o);
        }
        if (ours) {
            json_decref(ci);
            *next = v;
            rc = 1;
            break;
        }
        if (conflict || meta || st->create) {
            const char *who = ci ? json_string_value(json_object_get(ci, "engineInfo")) : NULL;
            const char *what = ci ? json_string_value(json_object_get(ci, "operation")) : NULL;
            rc = zx_seterr(err, errlen, "%s: another writer (%s, %s) committed version %lld "
                           "first and it %s; nothing of this run was committed: the next run "
                           "starts from the new version", st->where, who ? who : "unknown",
                           what ? what : "an unnamed operation", (long long)v,
                           st->create ? "created the table" : conflict
                           ? "removed files this run rewrites" : "changed the table's schema "
                           "or protocol");
            json_decref(ci);
            break;
        }
        json_decref(ci);
        /* no conflict: take its files into our view, so later checks and
         * replace's removes see them (replace keeps what others added
         * meanwhile: their commit is not lost) */
        if (zx_delta_apply(&st->t, v, b.p, b.len, st->where, err, errlen) < 0) {
            rc = -1;
            break;
        }
        /* an insert another writer committed meanwhile may hold a key this
         * run changed: the same check as before the first try (a run that
         * found the table empty kept no keys: any such file fails it) */
        if (st->cow && st->fresh) {
            for (size_t i = 0; i < st->t.nfiles && rc == 0; i++)
                if (!st->t.files[i].zx)
                    rc = zx_seterr(err, errlen, "%s: another writer committed version %lld "
                                   "with data file %s while this run filled the empty table; "
                                   "nothing of this run was committed: the next run sees it",
                                   st->where, (long long)v, st->t.files[i].path);
            if (rc < 0)
                break;
        } else if (st->cow && zx_lw_changed(st->lw)) {
            for (size_t i = 0; i < st->t.nfiles && rc == 0; i++)
                if (!st->t.files[i].zx && may_hold(st, &st->t.files[i]))
                    rc = zx_seterr(err, errlen, "%s: another writer committed version %lld "
                                   "with data file %s, which may hold keys this run changes; "
                                   "nothing of this run was committed: the next run sees it "
                                   "(run the sync once with mode replace to take the table "
                                   "over)", st->where, (long long)v, st->t.files[i].path);
            if (rc < 0)
                break;
        }
    }
    if (rc == 0)
        *next = v;
    zx_buf_free(&b);
    return rc;
}

/* A retention the table's configuration sets ("interval 30 days"; hours,
 * minutes and weeks too), else def (ms). */
static int64_t retention(const zx_delta_table *t, const char *key, int64_t def)
{
    json_t *cf = t->metadata ? json_object_get(t->metadata, "configuration") : NULL;
    const char *v = json_string_value(json_object_get(cf, key));
    long long n;
    char unit[16];
    if (!v || sscanf(v, "interval %lld %15s", &n, unit) != 2 || n < 0 || n > 100000)
        return def;
    int64_t per = !strncmp(unit, "week", 4) ? 7 * DAY_MS : !strncmp(unit, "day", 3) ? DAY_MS
                  : !strncmp(unit, "hour", 4) ? 3600000LL : !strncmp(unit, "minute", 6)
                  ? 60000LL : 0;
    return per ? n * per : def;
}

/* After version v: a checkpoint every CHECKPOINT_EVERY versions (with
 * zx's copy of its state and _last_checkpoint), the log entries older
 * than the log retention and before that checkpoint removed, and zx's data
 * files removed longer ago than the file retention deleted.  Failures are
 * logged: the run's commit stands. */
static void housekeeping(delta_state *st, int64_t v)
{
    char e[1024];
    zx_delta_table *t = &st->t;
    int64_t now = zx_now_us() / 1000;
    if (v > 0 && v % CHECKPOINT_EVERY == 0 && t->version == v) {
        size_t sl = 0;
        char *state = zx_delta_state_text(t, &sl);
        char sn[80], cn[64];
        zx_delta_state_name(v, sn);
        zx_delta_checkpoint_name(v, cn);
        uint64_t rows = 0, bytes = 0;
        zx_lake_out *o = NULL;
        int ok = state && zx_lake_put(st->lake, sn, state, sl, 0, e, sizeof(e)) == 0 &&
                 (o = zx_lake_create(st->lake, cn, e, sizeof(e))) != NULL;
        if (ok && zx_delta_checkpoint(t, zx_lake_sink, o, &rows, e, sizeof(e)) < 0)
            ok = 0;
        if (ok) {
            ok = zx_lake_out_commit(o, &bytes, e, sizeof(e)) == 0;
            o = NULL;
        }
        zx_lake_out_abort(o);
        free(state);
        char *lc = ok ? zx_delta_last_checkpoint_json(v, rows, bytes) : NULL;
        if (ok && (!lc || zx_lake_put(st->lake, ZX_DELTA_LAST_CHECKPOINT, lc, strlen(lc), 0, e,
                                      sizeof(e)) < 0))
            ok = 0;
        free(lc);
        if (!ok) {
            zx_warn("event=delta_checkpoint_failed sync=%s version=%lld error=\"%s\"",
                    st->sync, (long long)v, e);
            return;
        }
        zx_info("event=delta_checkpoint sync=%s version=%lld actions=%llu", st->sync,
                (long long)v, (unsigned long long)rows);
        /* the log before this checkpoint, older than the retention */
        int64_t keep_ms = retention(t, "delta.logRetentionDuration", LOG_RETENTION_MS);
        int removed = 0;
        for (int64_t x = t->first; x < v && x >= 0; x++) {
            size_t i = (size_t)(x - t->first);
            int64_t ts = i < t->ncommit_ms ? t->commit_ms[i] : 0;
            if (!ts || now - ts < keep_ms)
                break;
            char n1[64], n2[64], n3[80];
            zx_delta_commit_name(x, n1);
            zx_delta_checkpoint_name(x, n2);
            zx_delta_state_name(x, n3);
            if (zx_lake_delete(st->lake, n1, e, sizeof(e)) < 0)
                break;
            zx_lake_delete(st->lake, n2, e, sizeof(e));
            zx_lake_delete(st->lake, n3, e, sizeof(e));
            removed++;
        }
        if (removed)
            zx_info("event=delta_log_cleaned sync=%s before=%lld removed=%d", st->sync,
                    (long long)v, removed);
    }
    /* zx's data files removed longer ago than the file retention */
    int64_t file_ms = retention(t, "delta.deletedFileRetentionDuration", FILE_RETENTION_MS);
    const char *p;
    json_t *ts;
    int vacuumed = 0;
    void *tmp;
    json_object_foreach_safe(t->tombstones, tmp, p, ts) {
        int64_t at = json_integer_value(ts);
        int live = 0, dvf = !strncmp(p, ZX_DELTA_DV_PREFIX "/", 3);
        for (size_t i = 0; i < t->nfiles && !live; i++)   /* added again since, or a */
            live = !strcmp(dvf ? (t->files[i].dv_file ? t->files[i].dv_file : "")
                               : t->files[i].path, p);    /* vector still current */
        if (live) {
            json_object_del(t->tombstones, p);
            continue;
        }
        if (!at || now - at < file_ms || zx_lake_delete(st->lake, p, e, sizeof(e)) < 0)
            continue;
        if (!dvf)
            zx_side_delete(st->lake, p, e, sizeof(e));
        json_object_del(t->tombstones, p);
        vacuumed++;
    }
    if (vacuumed)
        zx_info("event=delta_files_vacuumed sync=%s count=%d", st->sync, vacuumed);
}

static int delta_commit(void *state, char *err, size_t errlen)
{
    delta_state *st = state;
    if (!st->running)
        return zx_seterr(err, errlen, "%s: commit outside a run", st->where);
    if (st->already) {
        st->running = 0;
        return 0;
    }
    zx_lake_test_stop_at("data");
    /* the rewritten rows join the files still open: a partition the run
     * changed gets one file, not two */
    if (st->cow && (st->dv ? dv_deletes(st, err, errlen) : rewrite(st, err, errlen)) < 0)
        return -1;
    if (zx_lw_flush(st->lw, err, errlen) < 0)
        return -1;
    if (st->mode == ZX_MODE_REPLACE)
        for (size_t i = 0; i < st->t.nfiles; i++)
            if (note_remove(st, &st->t.files[i]) < 0)
                return zx_seterr(err, errlen, "%s: out of memory", st->where);
    if (!st->create && !st->schema && !json_array_size(st->adds) &&
        !json_array_size(st->removes) && !json_array_size(st->redv)) {
        snprintf(st->stats->made, sizeof(st->stats->made), "delta version %lld (nothing to "
                 "commit)", (long long)st->t.version);
        st->running = 0;
        return 0;
    }
    zx_lake_test_stop_at("files");
    zx_buf b = {0};
    int64_t v = st->t.version + 1;
    int rc = -1, tries;
    for (tries = 0; tries < COMMIT_TRIES; tries++) {
        if (compose(st, &b) < 0) {
            rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
            break;
        }
        char name[64];
        zx_delta_commit_name(v, name);
        int p = zx_lake_put(st->lake, name, b.p, b.len, 1, err, errlen);
        if (p == 0) {
            rc = 0;
            break;
        }
        int64_t next = v;
        if (p < 0) {
            /* the answer was lost, or the store failed: is our commit there? */
            char e2[512];
            zx_buf back = {0};
            int g = zx_lake_get(st->lake, name, 0, &back, e2, sizeof(e2));
            int mine = g == 0 && back.len == b.len && !memcmp(back.p, b.p, b.len);
            zx_buf_free(&back);
            if (mine) {
                rc = 0;
                break;
            }
            if (g != 0)
                break;     /* err says why the put failed */
        }
        int lr = lost_race(st, v, &next, err, errlen);
        if (lr < 0)
            break;
        if (lr == 1) {
            v = next;
            rc = 0;
            zx_info("event=delta_commit_found sync=%s run=%llu version=%lld", st->sync,
                    (unsigned long long)st->run_id, (long long)v);
            break;
        }
        zx_info("event=delta_commit_retry sync=%s run=%llu lost_version=%lld next=%lld",
                st->sync, (unsigned long long)st->run_id, (long long)v, (long long)next);
        v = next;
    }
    if (rc == 0 && zx_delta_apply(&st->t, v, b.p, b.len, st->where, err, errlen) == 0)
        housekeeping(st, v);
    zx_buf_free(&b);
    if (rc == 0) {
        zx_lake_test_stop_at("committed");
        if (json_array_size(st->redv))
            snprintf(st->stats->made, sizeof(st->stats->made), "delta version %lld (deletion "
                     "vectors of %zu file%s)", (long long)v, json_array_size(st->redv),
                     json_array_size(st->redv) == 1 ? "" : "s");
        else
            snprintf(st->stats->made, sizeof(st->stats->made), "delta version %lld",
                     (long long)v);
        st->stats->files_removed = json_array_size(st->removes);
        /* the copies of removed files are no longer needed (data files
         * stay for readers of older versions) */
        size_t i;
        json_t *x;
        char e[512];
        json_array_foreach(st->removes, i, x) {
            const char *fp = json_string_value(json_object_get(x, "path"));
            if (json_is_true(json_object_get(x, "zx")) && fp)
                zx_side_delete(st->lake, fp, e, sizeof(e));
        }
        zx_info("event=delta_commit sync=%s run=%llu version=%lld files_added=%llu "
                "files_removed=%zu", st->sync, (unsigned long long)st->run_id, (long long)v,
                (unsigned long long)st->stats->files, json_array_size(st->removes));
        zx_lw_keep(st->lw);
        free(st->dv_written);       /* committed: abort keeps it */
        st->dv_written = NULL;
        st->running = 0;
        return 0;
    }
    if (tries == COMMIT_TRIES)
        zx_seterr(err, errlen, "%s: %d other writers committed while this run tried to; "
                  "nothing of it was committed", st->where, COMMIT_TRIES);
    return -1;
}

static void delta_abort(void *state)
{
    delta_state *st = state;
    if (!st)
        return;
    zx_lw_abort(st->lw);
    if (st->dv_written) {
        char e[256];
        zx_lake_delete(st->lake, st->dv_written, e, sizeof(e));
        free(st->dv_written);
        st->dv_written = NULL;
    }
    st->running = 0;
}

const zx_dest zx_dest_delta = {
    .name = "delta",
    .caps = ZX_DEST_DELETES | ZX_DEST_UPSERT | ZX_DEST_ATOMIC_REPLACE | ZX_DEST_PARTITIONS,
    .open = delta_open,
    .begin = delta_begin,
    .write = delta_write,
    .delete_keys = delta_delete,
    .commit = delta_commit,
    .abort = delta_abort,
    .close = delta_close,
};
