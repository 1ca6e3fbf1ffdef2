/*
 * dest_iceberg.c — the "iceberg" destination (dest.h): a sync's result into
 * an Apache Iceberg table (format version 2) through its catalog
 * (ice_catalog.h: REST, Glue, S3 Tables), one snapshot per run.
 *
 * begin: the namespace made when missing; the table loaded, or created
 * with the result's columns (ice_meta.h: field ids kept forever, new
 * columns with new ids, the key as identifier fields); a run whose snapshot
 * is there already (its summary names the sync and the run) commits
 * nothing.  write: rows into Parquet data files under
 * "<location>/data/zx-<run>-<n>.parquet" with field ids, each with zx's
 * copy of its keys (and rows, for copy-on-write; lake_writer.h) unless
 * the mode is append.  commit:
 *
 *   the live data files of the current snapshot are read from its
 *   manifest list and manifests (ice_manifest.h: any writer's);
 *   upsert / mirror: the rows of the files zx wrote that hold a changed
 *   or deleted key are deleted by position (merge-on-read: one position
 *   delete file per partition, in one delete manifest; zx keeps only the
 *   keys of its files then), or, when the table's write.merge.mode is
 *   copy-on-write, those files are removed and their other rows written
 *   again (from zx's copy of their rows); a file another writer made
 *   whose key bounds may hold one fails the run;
 *   one manifest of the run's new files; the manifests holding removed
 *   files rewritten without them (their other entries EXISTING); the
 *   others carried over (replace: none, but those added by writers that
 *   committed while the run retried); a manifest list; the snapshot
 *   (operation append or overwrite, summary with the counts and zx.sync /
 *   zx.run), committed with assert-table-uuid and assert-ref-snapshot-id
 *   (REST) or the table's version token (Glue, S3 Tables).
 *
 * A conflict reloads the table and tries again from the new current
 * snapshot (the data files and the run's manifest are written once); a
 * commit whose outcome is unknown reloads and looks for the run's
 * snapshot.  Snapshots beyond keep_snapshots expire in the same commit;
 * once committed, the files zx wrote that no kept snapshot uses are
 * deleted (never another writer's).  abort deletes the run's files.
 *
 * This file is the run; the view of the table, the changes, the snapshot
 * and the expiry are its parts (ice_dest.h).
 */
#include "workers/destinations/dest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/aws_conn.h"
#include "workers/destinations/iceberg/ice_dest.h"
#include "workers/destinations/iceberg/ice_meta.h"
#include "workers/destinations/iceberg/iceberg_opts.h"

/* ---- locations ------------------------------------------------------------- */

/* The store's root for location loc: a folder for "file:..." URIs, the
 * URI itself for "s3://".  Malloc'd; NULL for another scheme. */
static char *root_of(const char *loc)
{
    if (!strncmp(loc, "s3://", 5) || !strncmp(loc, "s3a://", 6)) {
        if (!strncmp(loc, "s3a://", 6)) {
            char *r = malloc(strlen(loc));
            if (r)
                snprintf(r, strlen(loc), "s3://%s", loc + 6);
            return r;
        }
        return strdup(loc);
    }
    if (!strncmp(loc, "file:", 5)) {
        const char *p = loc + 5;
        while (p[0] == '/' && p[1] == '/')
            p++;
        return strdup(p);
    }
    if (loc[0] == '/')
        return strdup(loc);
    return NULL;
}

/* The name of URI u relative to the table's location, or NULL when it is
 * not below it (valid while u is). */
const char *ice_rel_of(const ice_state *st, const char *u)
{
    size_t l = strlen(st->location);
    if (!strncmp(u, st->location, l) && u[l] == '/')
        return u + l + 1;
    /* file:/x and file:///x name the same file */
    char *a = root_of(u), *b = root_of(st->location);
    const char *r = NULL;
    if (a && b) {
        size_t bl = strlen(b);
        if (!strncmp(a, b, bl) && a[bl] == '/')
            r = u + strlen(u) - strlen(a + bl + 1);
    }
    free(a);
    free(b);
    return r;
}

/* The full URI of name (relative to the location) into a malloc'd string. */
char *ice_uri_of(const ice_state *st, const char *name)
{
    size_t n = strlen(st->location) + strlen(name) + 2;
    char *u = malloc(n);
    if (u)
        snprintf(u, n, "%s/%s", st->location, name);
    return u;
}

/* args.put of the file catalogs: the metadata file at url, whole. */
static int put_url(void *ctx, const char *url, const void *p, size_t n, char *err,
                   size_t errlen)
{
    ice_state *st = ctx;
    const char *slash = strrchr(url, '/');
    if (!slash)
        return zx_seterr(err, errlen, "%s: bad metadata location %s", st->where, url);
    char dir[2048];
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - url), url);
    char *root = root_of(dir);
    if (!root)
        return zx_seterr(err, errlen, "%s: metadata location %s: zx writes s3:// and file: "
                         "locations only", st->where, url);
    zx_lake_args la = {.root = root, .roots = (const char *const *)st->roots, .nroots = st->nroots,
                       .conn = st->aws, .what = "iceberg", .deadline_ms = st->deadline_ms};
    zx_lake *l = zx_lake_open(&la, err, errlen);
    free(root);
    if (!l)
        return -1;
    int rc = zx_lake_put(l, slash + 1, p, n, 1, err, errlen);
    zx_lake_free(l);
    if (rc == ZX_LAKE_EXISTS)
        return zx_seterr(err, errlen, "%s: metadata file %s exists already", st->where, url);
    return rc;
}

/* ---- the table -------------------------------------------------------------- */

static void files_free(ice_state *st)
{
    for (size_t i = 0; i < st->nfiles; i++) {
        free(st->files[i].path);
        free(st->files[i].counts);
        free(st->files[i].bounds);
        free(st->files[i].bytes);
        free(st->files[i].pvmem);
    }
    free(st->files);
    st->files = NULL;
    st->nfiles = st->capfiles = 0;
}

static void run_reset(ice_state *st)
{
    zx_lw_free(st->lw);
    st->lw = NULL;
    files_free(st);
    zx_icecat_table_free(&st->tbl);
    zx_lake_free(st->lake);
    st->lake = NULL;
    free(st->location);
    st->location = NULL;
    json_decref(st->schema);
    json_decref(st->removed);
    json_decref(st->base_manifests);
    json_decref(st->written_meta);
    st->schema = st->removed = st->base_manifests = st->written_meta = NULL;
    free(st->field_ids);
    st->field_ids = NULL;
    free(st->spec_json);
    st->spec_json = NULL;
    st->nparts = 0;
    free(st->manifest_path);
    st->manifest_path = NULL;
    free(st->manifest_mem);
    st->manifest_mem = NULL;
    free(st->del_manifest_path);
    free(st->del_manifest_mem);
    st->del_manifest_path = NULL;
    st->del_manifest_mem = NULL;
    memset(&st->del_manifest, 0, sizeof(st->del_manifest));
    json_decref(st->touched);
    st->touched = NULL;
    st->del_rows = st->del_files = 0;
    st->compacted = 0;
    st->mor = st->fresh = 0;
    memset(&st->manifest, 0, sizeof(st->manifest));
    st->running = st->already = st->create = st->rewritten = st->schema_changed = 0;
    st->tried = 0;
}

/* Set st->tbl's location and open its store.  0 or -1. */
static int open_location(ice_state *st, char *err, size_t errlen)
{
    const char *loc = json_string_value(json_object_get(st->tbl.metadata, "location"));
    if (!loc || !loc[0])
        return zx_seterr(err, errlen, "%s: the table's metadata has no location", st->where);
    free(st->location);
    st->location = strdup(loc);
    size_t l = st->location ? strlen(st->location) : 0;
    while (l > 1 && st->location[l - 1] == '/')
        st->location[--l] = 0;
    char *root = st->location ? root_of(st->location) : NULL;
    if (!root)
        return zx_seterr(err, errlen, "%s: location %s: zx writes tables in s3:// and file: "
                         "locations only", st->where, loc);
    zx_lake_free(st->lake);
    zx_lake_args la = {.root = root, .roots = (const char *const *)st->roots, .nroots = st->nroots, .conn = st->aws,
                       .what = "iceberg", .deadline_ms = st->deadline_ms};
    st->lake = zx_lake_open(&la, err, errlen);
    free(root);
    return st->lake ? 0 : -1;
}

/* Load the table into st->tbl (replacing it).  0, ZX_ICECAT_NOT_FOUND, -1. */
int ice_load(ice_state *st, char *err, size_t errlen)
{
    zx_icecat_table_free(&st->tbl);
    return zx_icecat_load(st->cat, st->ns, st->name, &st->tbl, err, errlen);
}

/* Read file URI u of the table into b.  0 or -1. */
int ice_get_uri(ice_state *st, const char *u, zx_buf *b, char *err, size_t errlen)
{
    const char *rel = ice_rel_of(st, u);
    if (!rel)
        return zx_seterr(err, errlen, "%s: %s is outside the table's location %s: zx reads "
                         "the table's own files only", st->where, u, st->location);
    int rc = zx_lake_get(st->lake, rel, META_MAX, b, err, errlen);
    if (rc == ZX_LAKE_NOT_FOUND)
        return zx_seterr(err, errlen, "%s: %s is missing", st->where, u);
    return rc;
}

/* ---- the run's data files ---------------------------------------------------- */

/* A data file is complete (lake_writer.h): its manifest entry's fields. */
static int on_file(void *ctx, const char *name, uint64_t size, uint64_t rows,
                   const zx_pq_writer *pq, const zx_pval *pv, char *err, size_t errlen)
{
    ice_state *st = ctx;
    if (st->nfiles == st->capfiles) {
        size_t c = st->capfiles ? st->capfiles * 2 : 16;
        ice_file *nf = realloc(st->files, c * sizeof(*nf));
        if (!nf)
            return zx_seterr(err, errlen, "%s: out of memory", st->where);
        st->files = nf;
        st->capfiles = c;
    }
    ice_file *f = &st->files[st->nfiles];
    memset(f, 0, sizeof(*f));
    size_t n = st->ncols ? st->ncols : 1;
    f->path = ice_uri_of(st, name);
    f->counts = calloc(4 * n, sizeof(*f->counts));
    f->bounds = calloc(2 * n, sizeof(*f->bounds));
    f->bytes = calloc(2 * n, 72);
    if (!f->path || !f->counts || !f->bounds || !f->bytes) {
        free(f->path);
        free(f->counts);
        free(f->bounds);
        free(f->bytes);
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    }
    f->size = (int64_t)size;
    f->rows = (int64_t)rows;
    size_t plen = 0;
    for (size_t k = 0; k < st->nparts; k++)
        plen += pv[k].s ? pv[k].len + 1 : 0;
    if (plen && !(f->pvmem = malloc(plen))) {
        free(f->path);
        free(f->counts);
        free(f->bounds);
        free(f->bytes);
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    }
    for (size_t k = 0, off = 0; k < st->nparts; k++) {
        f->pv[k] = (zx_ice_pvalue){.is_null = pv[k].is_null, .i = pv[k].i, .d = pv[k].d};
        if (pv[k].s) {
            memcpy(f->pvmem + off, pv[k].s, pv[k].len);
            f->pvmem[off + pv[k].len] = 0;
            f->pv[k].s = f->pvmem + off;
            f->pv[k].len = pv[k].len;
            off += pv[k].len + 1;
        }
    }
    zx_ice_count *sz = f->counts, *vc = f->counts + n, *nc = f->counts + 2 * n,
                 *nan = f->counts + 3 * n;
    zx_ice_bound *lo = f->bounds, *hi = f->bounds + n;
    for (size_t i = 0; i < st->ncols; i++) {
        zx_pq_colstats cs;
        if (zx_pq_col_stats(pq, i, &cs) < 0)
            continue;
        int32_t id = st->field_ids[i];
        sz[f->nsizes++] = (zx_ice_count){id, (int64_t)cs.compressed_bytes};
        vc[f->nvalues++] = (zx_ice_count){id, (int64_t)cs.values};
        nc[f->nnulls++] = (zx_ice_count){id, (int64_t)cs.nulls};
        if (st->cols[i].type == ZX_DT_DOUBLE)
            nan[f->nnans++] = (zx_ice_count){id, (int64_t)cs.nans};
        if (!cs.has_minmax)
            continue;
        uint8_t *bl = f->bytes + (2 * i) * 72, *bh = f->bytes + (2 * i + 1) * 72;
        size_t ll = 0, hl = 0;
        switch (st->cols[i].type) {
        case ZX_DT_INT64:
        case ZX_DT_TIMESTAMP:
            ll = zx_ice_bound_long(cs.imin, bl);
            hl = zx_ice_bound_long(cs.imax, bh);
            break;
        case ZX_DT_DATE:
            ll = zx_ice_bound_int((int32_t)cs.imin, bl);
            hl = zx_ice_bound_int((int32_t)cs.imax, bh);
            break;
        case ZX_DT_BOOL:
            ll = zx_ice_bound_boolean((int)cs.imin, bl);
            hl = zx_ice_bound_boolean((int)cs.imax, bh);
            break;
        case ZX_DT_DOUBLE:
            ll = zx_ice_bound_double(cs.dmin, bl);
            hl = zx_ice_bound_double(cs.dmax, bh);
            break;
        case ZX_DT_DECIMAL:
            if (st->cols[i].precision <= 18) {
                ll = zx_ice_bound_decimal(cs.imin, bl);
                hl = zx_ice_bound_decimal(cs.imax, bh);
            } else if (cs.bmin && cs.bmax && cs.bmin_len <= 32 && cs.bmax_len <= 32) {
                ll = zx_ice_bound_decimal_be(cs.bmin, cs.bmin_len, bl);
                hl = zx_ice_bound_decimal_be(cs.bmax, cs.bmax_len, bh);
            }
            break;
        default:   /* TEXT, JSON, BYTES: the bytes (at most 64: the writer's rule) */
            if (cs.bmin && cs.bmax && cs.bmin_len <= 72 && cs.bmax_len <= 72) {
                memcpy(bl, cs.bmin, cs.bmin_len);
                memcpy(bh, cs.bmax, cs.bmax_len);
                ll = cs.bmin_len;
                hl = cs.bmax_len;
            }
            break;
        }
        if (ll && hl) {
            lo[f->nlower++] = (zx_ice_bound){id, bl, ll};
            hi[f->nupper++] = (zx_ice_bound){id, bh, hl};
        }
    }
    st->nfiles++;
    st->stats->bytes += size;
    st->stats->files++;
    return 0;
}

/* ---- open, begin, write, delete --------------------------------------------- */

static void ice_close(void *state)
{
    ice_state *st = state;
    if (!st)
        return;
    run_reset(st);
    zx_icecat_free(st->cat);
    for (size_t i = 0; st->roots && i < st->nroots; i++)
        free(st->roots[i]);
    free(st->roots);
    free(st->sync);
    free(st->ns);
    free(st->name);
    free(st);
}

static int ice_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    *state = NULL;
    const zx_iceberg_opts *o = a->opts;
    if (!o || !o->catalog || !o->namespace_ || !o->table)
        return zx_seterr(err, errlen, "iceberg: write the table as destination: {iceberg: "
                         "{catalog: CONNECTION, namespace: NS, table: NAME}}");
    const zx_conf_connection *cat = a->conf ? zx_conf_find_connection(a->conf, o->catalog)
                                            : NULL;
    if (!cat)
        return zx_seterr(err, errlen, "iceberg: unknown catalog connection %s", o->catalog);
    ice_state *st = calloc(1, sizeof(*st));
    if (!st)
        return zx_seterr(err, errlen, "iceberg: out of memory");
    snprintf(st->where, sizeof(st->where), "iceberg %s %s.%s", cat->name, o->namespace_,
             o->table);
    st->sync = strdup(a->sync ? a->sync : "");
    st->ns = strdup(o->namespace_);
    st->name = strdup(o->table);
    if (!st->sync || !st->ns || !st->name) {
        ice_close(st);
        return zx_seterr(err, errlen, "iceberg: out of memory");
    }
    st->conf = a->conf;
    st->catconn = cat;
    st->aws = a->conn;        /* conf/syncs.c: the data files' (or the catalog's own) */
    if (!st->aws && cat->aws_connection)
        st->aws = zx_conf_find_connection(a->conf, cat->aws_connection);
    st->roots = calloc(a->nroots ? a->nroots : 1, sizeof(*st->roots));
    for (size_t i = 0; st->roots && i < a->nroots; i++)
        if ((st->roots[i] = strdup(a->roots[i])))
            st->nroots = i + 1;
    if (!st->roots || st->nroots != a->nroots) {
        ice_close(st);
        return zx_seterr(err, errlen, "iceberg: out of memory");
    }
    st->deadline_ms = a->deadline_ms;
    if (zx_pq_codec_parse(o->compression ? o->compression : "zstd", &st->codec) < 0)
        st->codec = ZX_PQ_ZSTD;
    st->file_rows = o->file_rows ? o->file_rows : 262144;
    st->keep = o->keep_snapshots ? o->keep_snapshots : 100;
    zx_icecat_args ca = {
        .name = cat->name, .kind = cat->kind, .uri = cat->uri, .warehouse = cat->warehouse,
        .credential = cat->credential, .token = cat->token, .scope = cat->scope,
        .aws = st->aws, .location = cat->warehouse, .table_bucket_arn = cat->table_bucket_arn,
        .catalog_id = cat->catalog_id, .deadline_ms = a->deadline_ms, .put = put_url,
        .put_ctx = st,
    };
    if (!(st->cat = zx_icecat_open(&ca, err, errlen))) {
        ice_close(st);
        return -1;
    }
    *state = st;
    return 0;
}

/* The table's properties zx sets on a table it makes. */
static json_t *table_props(const ice_state *st)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "write.format.default", "parquet",
                     "write.merge.mode", "merge-on-read", "write.delete.mode", "merge-on-read",
                     "write.parquet.compression-codec",
                     st->codec == ZX_PQ_SNAPPY ? "snappy" : st->codec == ZX_PQ_NONE
                     ? "uncompressed" : "zstd", "zx.sync", st->sync);
}

/* The partition spec fields of a new table from the sync's partition_by
 * (ids: the result's field ids): a JSON array (owned), or NULL with err. */
static json_t *spec_of(ice_state *st, const zx_dest_run *run, const int32_t *ids, char *err,
                       size_t errlen)
{
    json_t *fields = json_array();
    for (size_t k = 0; fields && k < run->npartition_by; k++) {
        zx_part pt;
        if (zx_part_parse(run->partition_by[k], &pt, err, errlen) < 0) {
            json_decref(fields);
            return NULL;
        }
        size_t i;
        for (i = 0; i < run->ncols && strcmp(run->cols[i].name, pt.col); i++)
            ;
        if (i == run->ncols) {
            json_decref(fields);
            zx_seterr(err, errlen, "%s: partition_by %s: no result column %s", st->where,
                      run->partition_by[k], pt.col);
            return NULL;
        }
        if (zx_part_check(&pt, &run->cols[i], err, errlen) < 0) {
            json_decref(fields);
            return NULL;
        }
        char tb[32], nb[96];
        json_array_append_new(fields, json_pack("{s:i, s:i, s:s, s:s}", "source-id",
                                                (int)ids[i], "field-id", 1000 + (int)k, "name",
                                                zx_part_field_name(&pt, nb), "transform",
                                                zx_part_transform(&pt, tb)));
    }
    if (!fields)
        zx_seterr(err, errlen, "%s: out of memory", st->where);
    return fields;
}

/* The table's default spec as the run's partitions (st->parts, pfields,
 * spec_json): every field's transform one zx computes, on a result
 * column; the sync's partition_by, if written, the same.  0 or -1. */
static int table_partitions(ice_state *st, const zx_dest_run *run, char *err, size_t errlen)
{
    const json_t *fields = zx_ice_default_spec(st->tbl.metadata, &st->spec_id);
    size_t n = fields ? json_array_size(fields) : 0;
    if (n > ZX_PART_MAX)
        return zx_seterr(err, errlen, "%s: the table has %zu partition fields; zx writes "
                         "tables of %d at most", st->where, n, ZX_PART_MAX);
    free(st->spec_json);
    st->spec_json = json_dumps(fields ? fields : json_array(), JSON_COMPACT);
    st->nparts = 0;
    char mine[512] = "", theirs[512] = "";
    for (size_t k = 0; k < n; k++) {
        const json_t *f = json_array_get(fields, k);
        int32_t src = (int32_t)json_integer_value(json_object_get(f, "source-id"));
        const char *tr = json_string_value(json_object_get(f, "transform"));
        size_t i;
        for (i = 0; i < run->ncols && st->field_ids[i] != src; i++)
            ;
        if (i == run->ncols || !tr)
            return zx_seterr(err, errlen, "%s: the table is partitioned on field %d, which "
                             "the query does not give: add that column to the query",
                             st->where, (int)src);
        char spec[160];
        /* "day" -> day(col), "bucket[16]" -> bucket[16](col) */
        snprintf(spec, sizeof(spec), "%s(%s)", tr, run->cols[i].name);
        zx_part *pt = &st->parts[k];
        if (zx_part_parse(spec, pt, err, errlen) < 0 ||
            zx_part_check(pt, &run->cols[i], err, errlen) < 0)
            return zx_seterr(err, errlen, "%s: the table's partition field %s (%s) is not one "
                             "zx writes", st->where,
                             json_string_value(json_object_get(f, "name")) ?: "?", tr);
        zx_pkind kd = zx_part_result(pt, &run->cols[i]);
        static const zx_ice_ptype map[] = {
            [ZX_PK_LONG] = ZX_ICE_P_LONG, [ZX_PK_INT] = ZX_ICE_P_INT,
            [ZX_PK_DATE] = ZX_ICE_P_DATE, [ZX_PK_STRING] = ZX_ICE_P_STRING,
            [ZX_PK_BOOL] = ZX_ICE_P_BOOLEAN, [ZX_PK_DOUBLE] = ZX_ICE_P_DOUBLE,
            [ZX_PK_BINARY] = ZX_ICE_P_BINARY, [ZX_PK_TIMESTAMP] = ZX_ICE_P_TIMESTAMPTZ,
            [ZX_PK_DECIMAL] = ZX_ICE_P_LONG};
        snprintf(st->pnames[k], sizeof(st->pnames[k]), "%s",
                 json_string_value(json_object_get(f, "name")) ?: "p");
        st->pfields[k] = (zx_ice_pfield){
            .field_id = (int32_t)json_integer_value(json_object_get(f, "field-id")),
            .name = st->pnames[k], .type = map[kd]};
        char tb[32];
        snprintf(theirs + strlen(theirs), sizeof(theirs) - strlen(theirs), "%s%s(%s)",
                 k ? ", " : "", zx_part_transform(pt, tb), pt->col);
        st->nparts++;
    }
    if (!run->npartition_by)
        return 0;
    for (size_t k = 0; k < run->npartition_by; k++) {
        zx_part pt;
        char tb[32];
        if (zx_part_parse(run->partition_by[k], &pt, err, errlen) < 0)
            return -1;
        snprintf(mine + strlen(mine), sizeof(mine) - strlen(mine), "%s%s(%s)", k ? ", " : "",
                 zx_part_transform(&pt, tb), pt.col);
    }
    if (strcmp(mine, theirs))
        return zx_seterr(err, errlen, "%s: the table is partitioned by [%s] and the sync's "
                         "partition_by says [%s]: zx does not change a table's partitioning; "
                         "write partition_by as the table has it, or write to a new table",
                         st->where, theirs, mine);
    return 0;
}

/* Create the table (its namespace first).  0 or -1; st->tbl loaded. */
static int create(ice_state *st, const zx_dest_run *run, char *err, size_t errlen)
{
    int32_t last;
    int changed;
    int32_t *ids = calloc(run->ncols ? run->ncols : 1, sizeof(*ids));
    if (!ids)
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    json_t *schema = zx_ice_schema_for(NULL, run->cols, run->ncols, run->key_cols,
                                       run->nkey_cols, ids, &changed, &last, st->where, err,
                                       errlen);
    json_t *spec = schema ? spec_of(st, run, ids, err, errlen) : NULL;
    free(ids);
    if (!spec) {
        json_decref(schema);
        return -1;
    }
    json_t *props = table_props(st),
           *req = zx_ice_create_request(st->name, schema, spec, props);
    json_t *md = NULL;
    const char *kind = st->catconn->kind;
    if (strcmp(kind, "iceberg_rest")) {
        /* the file catalogs take the whole document; S3 Tables fills in
         * its location */
        char loc[2048] = "";
        if (!strcmp(kind, "glue")) {
            const char *wh = st->catconn->warehouse ? st->catconn->warehouse : "";
            size_t wl = strlen(wh);
            while (wl && wh[wl - 1] == '/')
                wl--;
            snprintf(loc, sizeof(loc), "%.*s/%s.db/%s", (int)wl, wh, st->ns, st->name);
        }
        md = zx_ice_new_metadata(schema, last, spec, loc, props);
    }
    json_decref(schema);
    json_decref(spec);
    json_decref(props);
    int rc = -1;
    if (!req || (strcmp(kind, "iceberg_rest") && !md)) {
        zx_seterr(err, errlen, "%s: out of memory", st->where);
    } else {
        zx_icecat_table_free(&st->tbl);
        rc = zx_icecat_create(st->cat, st->ns, st->name, req, md, &st->tbl, err, errlen);
        if (rc == ZX_ICECAT_EXISTS) { /* another writer made it meanwhile */
            if (errlen)
                err[0] = 0;
            rc = ice_load(st, err, errlen);
        }
        if (rc == 0)
            zx_info("event=iceberg_table_created sync=%s table=%s.%s", st->sync, st->ns,
                    st->name);
    }
    json_decref(req);
    json_decref(md);
    return rc == 0 ? 0 : -1;
}

static int ice_begin(void *state, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                     size_t errlen)
{
    ice_state *st = state;
    run_reset(st);
    st->stats = stats;
    st->mode = run->mode;
    st->run_id = run->run_id;
    st->cols = run->cols;
    st->ncols = run->ncols;
    st->key0 = run->nkey_cols ? run->key_cols[0] : NULL;
    st->side = run->mode != ZX_MODE_APPEND && run->nkey_cols > 0;
    st->cow = (run->mode == ZX_MODE_UPSERT || run->mode == ZX_MODE_MIRROR) && run->nkey_cols > 0;
    st->removed = json_array();
    st->written_meta = json_array();
    st->base_manifests = json_array();
    st->field_ids = calloc(run->ncols ? run->ncols : 1, sizeof(*st->field_ids));
    if (!st->removed || !st->written_meta || !st->base_manifests || !st->field_ids)
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    if (zx_icecat_ensure_namespace(st->cat, st->ns, err, errlen) < 0)
        return -1;
    int rc = ice_load(st, err, errlen);
    if (rc == ZX_ICECAT_NOT_FOUND) {
        if (errlen)
            err[0] = 0;           /* handled: the run must not show it */
        if (create(st, run, err, errlen) < 0)
            return -1;
        st->create = 1;
    } else if (rc != 0) {
        return -1;
    }
    if (json_integer_value(json_object_get(st->tbl.metadata, "format-version")) > 2)
        return zx_seterr(err, errlen, "%s: the table is of format version %lld; zx writes "
                         "version 2 tables", st->where, (long long)json_integer_value(
                             json_object_get(st->tbl.metadata, "format-version")));
    if (open_location(st, err, errlen) < 0)
        return -1;
    const json_t *done = zx_ice_find_run(st->tbl.metadata, st->sync, st->run_id);
    if (done) {
        st->already = 1;
        snprintf(stats->made, sizeof(stats->made), "iceberg snapshot %lld (this run was "
                 "committed already)", (long long)json_integer_value(json_object_get(done,
                                                                     "snapshot-id")));
        st->running = 1;
        return 0;
    }
    if (!(st->schema = zx_ice_schema_for(st->tbl.metadata, run->cols, run->ncols,
                                         run->key_cols, run->nkey_cols, st->field_ids,
                                         &st->schema_changed, &st->last_column_id, st->where,
                                         err, errlen)))
        return -1;
    for (size_t i = 0; i < run->ncols; i++)
        if (st->key0 && !strcmp(run->cols[i].name, st->key0))
            st->key0_id = st->field_ids[i];
    if (table_partitions(st, run, err, errlen) < 0)
        return -1;
    /* upsert and mirror: position deletes (merge-on-read), unless the
     * table asks for copy-on-write */
    json_t *props = json_object_get(st->tbl.metadata, "properties");
    const char *wm = json_string_value(json_object_get(props, "write.merge.mode"));
    int by_pos = !(wm && !strcmp(wm, "copy-on-write"));
    st->mor = st->cow && by_pos;
    if (!(st->touched = json_array()))
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    /* what replace replaces: the manifests of the snapshot it starts from;
     * and whether it has data files (none: the run tracks no keys) */
    ice_view v;
    if (ice_view_read(st, &v, err, errlen) < 0) {
        ice_view_free(&v);
        return -1;
    }
    for (size_t i = 0; i < v.nmfiles; i++)
        json_array_append_new(st->base_manifests, json_string(v.mfiles[i].manifest_path));
    st->fresh = st->cow && v.nlive == 0;
    char prefix[40];
    snprintf(prefix, sizeof(prefix), "zx-%llu", (unsigned long long)st->run_id);
    zx_lw_args la = {.lake = st->lake, .where = st->where, .cols = run->cols,
                     .ncols = run->ncols, .field_ids = st->field_ids,
                     .key_cols = run->key_cols, .nkeys = run->nkey_cols, .side = st->side,
                     .keys_only = by_pos, .track = st->cow, .fresh = st->fresh,
                     .codec = st->codec, .file_rows = st->file_rows,
                     .dir = "data/", .prefix = prefix, .stats = stats, .parts = st->parts,
                     .nparts = st->nparts, .on_file = on_file,
                     .ctx = st};
    if (!(st->lw = zx_lw_new(&la, err, errlen))) {
        ice_view_free(&v);
        return -1;
    }
    ice_view_free(&v);
    st->running = 1;
    return 0;
}

static int ice_write(void *state, const zx_rowset *rs, char *err, size_t errlen)
{
    ice_state *st = state;
    return zx_lw_run_put(st->lw, st->running, st->already, st->stats, st->where, rs, 0, err,
                         errlen);
}

static int ice_delete(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    ice_state *st = state;
    return zx_lw_run_put(st->lw, st->running, st->already, st->stats, st->where, keys, 1, err,
                         errlen);
}

static int ice_commit(void *state, char *err, size_t errlen)
{
    ice_state *st = state;
    if (!st->running)
        return zx_seterr(err, errlen, "%s: commit outside a run", st->where);
    if (st->already) {
        st->running = 0;
        return 0;
    }
    zx_lake_test_stop_at("data");
    size_t before = json_array_size(json_object_get(st->tbl.metadata, "snapshots"));
    if (!st->create && !st->nfiles && !zx_lw_open_files(st->lw) && !st->schema_changed &&
        st->mode != ZX_MODE_REPLACE && !zx_lw_changed(st->lw)) {
        snprintf(st->stats->made, sizeof(st->stats->made), "iceberg: nothing to commit");
        st->running = 0;
        return 0;
    }
    int64_t snap = -1;
    int rc = 1, tries;
    for (tries = 0; tries < COMMIT_TRIES && rc == 1; tries++)
        rc = ice_attempt(st, &snap, err, errlen);
    if (rc == 1)
        return zx_seterr(err, errlen, "%s: %d other writers committed while this run tried "
                         "to; nothing of it was committed", st->where, COMMIT_TRIES);
    if (rc < 0)
        return -1;
    zx_lake_test_stop_at("committed");
    snprintf(st->stats->made, sizeof(st->stats->made), "iceberg snapshot %lld", (long long)snap);
    st->stats->files_removed = json_array_size(st->removed);
    zx_info("event=iceberg_commit sync=%s run=%llu snapshot=%lld files_added=%zu "
            "files_removed=%zu", st->sync, (unsigned long long)st->run_id, (long long)snap,
            st->nfiles, json_array_size(st->removed));
    zx_lw_keep(st->lw);
    json_array_clear(st->written_meta);
    size_t after = json_array_size(json_object_get(st->tbl.metadata, "snapshots"));
    if (after <= before)          /* snapshots expired */
        ice_collect_garbage(st);
    st->running = 0;
    return 0;
}

static void ice_abort(void *state)
{
    ice_state *st = state;
    if (!st)
        return;
    zx_lw_abort(st->lw);
    size_t i;
    json_t *x;
    char e[256];
    json_array_foreach(st->written_meta, i, x)
        if (st->lake)
            zx_lake_delete(st->lake, json_string_value(x), e, sizeof(e));
    json_array_clear(st->written_meta);
    st->running = 0;
}

const zx_dest zx_dest_iceberg = {
    .name = "iceberg",
    .caps = ZX_DEST_DELETES | ZX_DEST_UPSERT | ZX_DEST_ATOMIC_REPLACE | ZX_DEST_PARTITIONS,
    .open = ice_open,
    .begin = ice_begin,
    .write = ice_write,
    .delete_keys = ice_delete,
    .commit = ice_commit,
    .abort = ice_abort,
    .close = ice_close,
};
