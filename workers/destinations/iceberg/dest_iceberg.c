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
 */
#include "workers/destinations/dest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "formats/parquet.h"
#include "workers/aws_conn.h"
#include "workers/destinations/iceberg/ice_catalog.h"
#include "workers/destinations/iceberg/ice_manifest.h"
#include "workers/destinations/iceberg/ice_meta.h"
#include "workers/destinations/iceberg/iceberg_opts.h"
#include "workers/destinations/lake/lake_part.h"
#include "workers/destinations/lake/lake_side.h"
#include "workers/destinations/lake/lake_store.h"
#include "workers/destinations/lake/lake_writer.h"

#define COMMIT_TRIES 10
#define META_MAX ((size_t)256 << 20)

/* A data file the run added: its manifest entry's fields (owned). */
typedef struct ice_file {
    char *path;                  /* full URI */
    int64_t size, rows;
    zx_ice_count *counts;        /* sizes, values, nulls, nans: ncols each */
    size_t nsizes, nvalues, nnulls, nnans;
    zx_ice_bound *bounds;        /* lower then upper: ncols each */
    size_t nlower, nupper;
    uint8_t *bytes;              /* the bounds' bytes */
    zx_ice_pvalue pv[ZX_PART_MAX];  /* its partition (strings in pvmem) */
    char *pvmem;
} ice_file;

/* A live data file of the current snapshot, as its manifest has it. */
typedef struct ice_live {
    const zx_ice_entry *e;
    size_t manifest;             /* index into the manifest list */
    int removed;                 /* the run removes it */
} ice_live;

typedef struct ice_state {
    char *sync, *ns, *name;
    char where[600];             /* "iceberg <catalog> <ns>.<table>" */
    const zx_conf *conf;
    const zx_conf_connection *aws, *catconn;
    char **roots;                /* the file roots (copied: args' are open's only) */
    size_t nroots;
    int64_t deadline_ms;
    zx_pq_codec codec;
    uint32_t file_rows, keep;
    zx_icecat *cat;

    /* the run */
    int running, already, side, cow, create;
    zx_dest_stats *stats;
    zx_sync_mode mode;
    uint64_t run_id;
    const zx_dcol *cols;
    size_t ncols;
    const char *key0;
    int32_t *field_ids, key0_id;
    zx_part parts[ZX_PART_MAX];  /* the table's default spec, as transforms */
    size_t nparts;
    zx_ice_pfield pfields[ZX_PART_MAX];
    char pnames[ZX_PART_MAX][96];
    int32_t spec_id;
    char *spec_json;             /* its fields array as JSON text */
    zx_icecat_table tbl;         /* the table as last read */
    json_t *base_manifests;      /* the manifest paths of the snapshot the run
                                    started from (replace: what it replaces) */
    char *location;              /* the table's location ("s3://b/p", "file:/x") */
    zx_lake *lake;               /* its files */
    json_t *schema;              /* the schema the run writes with */
    int schema_changed;
    int32_t last_column_id;
    zx_lake_writer *lw;
    ice_file *files;
    size_t nfiles, capfiles;
    json_t *removed;             /* paths (URIs) of the files the run removes */
    int rewritten;               /* copy-on-write done */
    int mor;                     /* upsert / mirror by position deletes
                                    (merge-on-read) instead of rewrites */
    json_t *touched;             /* the data files its deletes point at */
    char *del_manifest_path;     /* the delete manifest, once written */
    zx_ice_mfile del_manifest;
    void *del_manifest_mem;
    int64_t del_rows;            /* position deletes the run adds */
    int64_t del_files;           /* in that many delete files (one a partition) */
    int tried;                   /* commits tried */
    char *manifest_path;         /* the run's manifest, once written */
    zx_ice_mfile manifest;       /* its manifest_file */
    void *manifest_mem;          /* its partition summaries */
    json_t *written_meta;        /* metadata files the run wrote (abort) */
} ice_state;

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
static const char *rel_of(const ice_state *st, const char *u)
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
static char *uri_of(const ice_state *st, const char *name)
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
    st->mor = 0;
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
static int load(ice_state *st, char *err, size_t errlen)
{
    zx_icecat_table_free(&st->tbl);
    return zx_icecat_load(st->cat, st->ns, st->name, &st->tbl, err, errlen);
}

/* Read file URI u of the table into b.  0 or -1. */
static int get_uri(ice_state *st, const char *u, zx_buf *b, char *err, size_t errlen)
{
    const char *rel = rel_of(st, u);
    if (!rel)
        return zx_seterr(err, errlen, "%s: %s is outside the table's location %s: zx reads "
                         "the table's own files only", st->where, u, st->location);
    int rc = zx_lake_get(st->lake, rel, META_MAX, b, err, errlen);
    if (rc == ZX_LAKE_NOT_FOUND)
        return zx_seterr(err, errlen, "%s: %s is missing", st->where, u);
    return rc;
}

/* ---- the live files of the current snapshot -------------------------------- */

typedef struct ice_view {
    zx_ice_mlist *list;          /* NULL: no snapshot */
    const zx_ice_mfile *mfiles;
    size_t nmfiles;
    zx_ice_mread **manifests;    /* nmfiles: NULL for delete manifests */
    ice_live *live;              /* data files */
    size_t nlive;
    ice_live *dlive;             /* zx's position delete files */
    size_t ndlive;
} ice_view;

static void view_free(ice_view *v)
{
    for (size_t i = 0; v->manifests && i < v->nmfiles; i++)
        zx_ice_mread_free(v->manifests[i]);
    free(v->manifests);
    free(v->live);
    free(v->dlive);
    zx_ice_mlist_free(v->list);
    memset(v, 0, sizeof(*v));
}

static int view_read(ice_state *st, ice_view *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof(*v));
    const char *ml = NULL;
    if (zx_ice_current_snapshot(st->tbl.metadata, &ml) < 0 || !ml)
        return 0;
    zx_buf b = {0};
    char e[512];
    if (get_uri(st, ml, &b, err, errlen) < 0) {
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
        const char *mrel = rel_of(st, v->mfiles[i].manifest_path);
        int deletes = v->mfiles[i].content != 0;
        if (deletes && !(mrel && !strncmp(mrel, "metadata/zx-", 12))) {
            rc = zx_seterr(err, errlen, "%s: the table has delete files of another writer "
                           "(manifest %s: row-level deletes); zx reads only its own: compact "
                           "the table (rewrite_data_files) or write to a new table",
                           st->where, v->mfiles[i].manifest_path);
            break;
        }
        if (get_uri(st, v->mfiles[i].manifest_path, &b, err, errlen) < 0) {
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
static int zx_file(const ice_state *st, const char *u)
{
    const char *rel = rel_of(st, u);
    return rel && !strncmp(rel, "data/zx-", 8) && !strchr(rel + 5, '/');
}

/* The key bounds of a live entry another writer made: 1 when a changed
 * key may lie in them (or they are unknown). */
static int may_hold(ice_state *st, const zx_ice_entry *e)
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
    f->path = uri_of(st, name);
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
            rc = load(st, err, errlen);
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
    int rc = load(st, err, errlen);
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
    char prefix[40];
    snprintf(prefix, sizeof(prefix), "zx-%llu", (unsigned long long)st->run_id);
    zx_lw_args la = {.lake = st->lake, .where = st->where, .cols = run->cols,
                     .ncols = run->ncols, .field_ids = st->field_ids,
                     .key_cols = run->key_cols, .nkeys = run->nkey_cols, .side = st->side,
                     .keys_only = by_pos,
                     .track = st->cow, .codec = st->codec, .file_rows = st->file_rows,
                     .dir = "data/", .prefix = prefix, .stats = stats, .parts = st->parts,
                     .nparts = st->nparts, .on_file = on_file,
                     .ctx = st};
    if (!(st->lw = zx_lw_new(&la, err, errlen)))
        return -1;
    /* what replace replaces: the manifests of the snapshot it starts from */
    ice_view v;
    if (view_read(st, &v, err, errlen) < 0) {
        view_free(&v);
        return -1;
    }
    for (size_t i = 0; i < v.nmfiles; i++)
        json_array_append_new(st->base_manifests, json_string(v.mfiles[i].manifest_path));
    view_free(&v);
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

/* ---- commit ---------------------------------------------------------------- */

/* 1 when URI u is among the files the run removes. */
static int removing(const ice_state *st, const char *u)
{
    size_t i;
    json_t *x;
    json_array_foreach(st->removed, i, x)
        if (!strcmp(json_string_value(x), u))
            return 1;
    return 0;
}

static int write_deletes(ice_state *st, const ice_view *v, char *err, size_t errlen);

/* Copy-on-write over the live files (once). */
static int rewrite(ice_state *st, const ice_view *v, char *err, size_t errlen)
{
    if (!st->cow || !zx_lw_changed(st->lw))
        return 0;
    /* every try: a file another writer committed meanwhile too */
    for (size_t i = 0; i < v->nlive; i++) {
        const zx_ice_entry *e = v->live[i].e;
        if (!zx_file(st, e->file_path) && may_hold(st, e))
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
        if (!zx_file(st, e->file_path))
            continue;
        const char *rel = rel_of(st, e->file_path);
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

static int put_meta(ice_state *st, const char *name, const zx_buf *b, char **uri, char *err,
                    size_t errlen);
static int keep_summary(zx_ice_mfile *f, void **mem);

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

/* The positions zx's delete files of the view delete already (their
 * copies, "_zx/<file>.pos": per pair a 2-byte length, the path, and the
 * position as 8 bytes) into gone.  0 or -1. */
static int load_gone(ice_state *st, const ice_view *v, zx_keyset *gone, char *err,
                     size_t errlen)
{
    zx_buf b = {0}, tmp = {0};
    int rc = 0;
    for (size_t i = 0; i < v->ndlive && rc == 0; i++) {
        const char *rel = rel_of(st, v->dlive[i].e->file_path);
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
    char *uri = rc == 0 ? uri_of(st, rel) : NULL;
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
 * copies, and one delete manifest.  0 or -1. */
static int write_deletes(ice_state *st, const ice_view *v, char *err, size_t errlen)
{
    if (st->del_manifest_path || !zx_lw_changed(st->lw))
        return 0;
    zx_keyset gone = {0};
    pos_pair *pairs = NULL;
    size_t np = 0, cap = 0, ngroups = 0;
    const zx_ice_pvalue **groups = NULL;   /* each group's partition tuple */
    zx_buf tmp = {0}, mb = {0};
    zx_ice_manifest *m = NULL;
    char e[512];
    int rc = load_gone(st, v, &gone, err, errlen);
    if (rc == 0 && !(groups = calloc(v->nlive + 1, sizeof(*groups))))
        rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
    for (size_t i = 0; rc == 0 && i < v->nlive; i++) {
        const zx_ice_entry *en = v->live[i].e;
        if (!zx_file(st, en->file_path))
            continue;
        int64_t *pos = NULL;
        size_t n = 0;
        int g = zx_lw_changed_rows(st->lw, rel_of(st, en->file_path), &pos, &n, err, errlen);
        if (g == ZX_LAKE_NOT_FOUND)
            rc = zx_seterr(err, errlen, "%s: the copy of data file %s zx keeps is missing: "
                           "run the sync once with mode replace", st->where, en->file_path);
        else if (g < 0)
            rc = -1;
        size_t before = np, grp = 0;
        if (rc == 0 && n && st->nparts) {
            /* a delete file holds one partition's deletes, of the table's
             * current spec (the one zx writes) */
            if (v->mfiles[v->live[i].manifest].partition_spec_id != st->spec_id || !en->partition)
                rc = zx_seterr(err, errlen, "%s: data file %s holds rows this run changes and "
                               "was written under partition spec %d, not the table's current "
                               "%d; zx writes position deletes for the current spec only: "
                               "run the sync once with mode replace", st->where,
                               en->file_path, v->mfiles[v->live[i].manifest].partition_spec_id,
                               st->spec_id);
            for (grp = 0; rc == 0 && grp < ngroups &&
                          !same_tuple(groups[grp], en->partition, st->nparts); grp++)
                ;
            if (rc == 0 && grp == ngroups)
                groups[ngroups++] = en->partition;
        }
        for (size_t k = 0; rc == 0 && k < n; k++) {
            unsigned char h[16];
            pair_hash(en->file_path, pos[k], &tmp, h);
            if (zx_keyset_has(&gone, h))
                continue;
            if (np == cap) {
                cap = cap ? cap * 2 : 256;
                pos_pair *nn = realloc(pairs, cap * sizeof(*nn));
                if (!nn) {
                    rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
                    break;
                }
                pairs = nn;
            }
            pairs[np++] = (pos_pair){en->file_path, pos[k], grp};
        }
        if (np > before)
            json_array_append_new(st->touched, json_string(en->file_path));
        free(pos);
    }
    if (rc < 0 || !np)
        goto out;
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
                    keep_summary(&st->del_manifest, &st->del_manifest_mem) < 0))
        rc = zx_seterr(err, errlen, "%s: the delete manifest: %s", st->where, e);
    if (rc == 0) {
        char uuid[37], name[200];
        zx_lake_uuid4(uuid);
        snprintf(name, sizeof(name), "metadata/zx-%llu-%s-d0.avro",
                 (unsigned long long)st->run_id, uuid);
        rc = put_meta(st, name, &mb, &st->del_manifest_path, err, errlen);
        st->del_manifest.manifest_path = st->del_manifest_path;
        st->del_manifest.manifest_length = (int64_t)mb.len;
    }
out:
    zx_ice_manifest_free(m);
    zx_buf_free(&tmp);
    zx_buf_free(&mb);
    zx_keyset_free(&gone);
    free(groups);
    free(pairs);
    return rc;
}

/* Write metadata file name (relative to the location) with bytes b;
 * *uri gets its URI (malloc'd).  0 or -1. */
static int put_meta(ice_state *st, const char *name, const zx_buf *b, char **uri, char *err,
                    size_t errlen)
{
    if (zx_lake_put(st->lake, name, b->p, b->len, 0, err, errlen) < 0)
        return -1;
    json_array_append_new(st->written_meta, json_string(name));
    if (!(*uri = uri_of(st, name)))
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    return 0;
}

static char *schema_text(const ice_state *st)
{
    return json_dumps(st->schema, JSON_COMPACT);
}

/* Make f's partition summaries (pointing into a manifest writer about
 * to be freed) f's own: one block, *mem (the caller frees it).  0 or -1. */
static int keep_summary(zx_ice_mfile *f, void **mem)
{
    *mem = NULL;
    if (!f->partitions || !f->npartitions)
        return 0;
    size_t n = f->npartitions * sizeof(zx_ice_fsummary);
    for (size_t i = 0; i < f->npartitions; i++)
        n += f->partitions[i].lower_len + f->partitions[i].upper_len;
    char *b = malloc(n);
    if (!b)
        return -1;
    zx_ice_fsummary *fs = (zx_ice_fsummary *)(void *)b;
    char *p = b + f->npartitions * sizeof(zx_ice_fsummary);
    for (size_t i = 0; i < f->npartitions; i++) {
        fs[i] = f->partitions[i];
        if (fs[i].lower) {
            memcpy(p, fs[i].lower, fs[i].lower_len);
            fs[i].lower = (const uint8_t *)p;
            p += fs[i].lower_len;
        }
        if (fs[i].upper) {
            memcpy(p, fs[i].upper, fs[i].upper_len);
            fs[i].upper = (const uint8_t *)p;
            p += fs[i].upper_len;
        }
    }
    f->partitions = fs;
    *mem = b;
    return 0;
}

/* The manifest of the run's new files (once). */
static int write_manifest(ice_state *st, char *err, size_t errlen)
{
    if (st->manifest_path || !st->nfiles)
        return 0;
    char *sj = schema_text(st);
    zx_ice_manifest_args ma = {.schema_json = sj, .schema_id = (int32_t)json_integer_value(
                                   json_object_get(st->schema, "schema-id")),
                               .partition_spec_json = st->spec_json ? st->spec_json : "[]",
                               .partition_spec_id = st->spec_id, .pfields = st->pfields,
                               .npfields = st->nparts, .codec = ZX_AVRO_DEFLATE};
    zx_ice_manifest *m = NULL;
    char e[512];
    int rc = sj ? zx_ice_manifest_open(&ma, &m, e, sizeof(e)) : -1;
    for (size_t i = 0; rc == 0 && i < st->nfiles; i++) {
        const ice_file *f = &st->files[i];
        size_t n = st->ncols;
        zx_ice_entry en = {
            .status = 1, .content = 0, .file_path = f->path, .record_count = f->rows,
            .file_size_in_bytes = f->size, .partition = st->nparts ? f->pv : NULL,
            .column_sizes = f->counts, .ncolumn_sizes = f->nsizes,
            .value_counts = f->counts + n, .nvalue_counts = f->nvalues,
            .null_value_counts = f->counts + 2 * n, .nnull_value_counts = f->nnulls,
            .nan_value_counts = f->counts + 3 * n, .nnan_value_counts = f->nnans,
            .lower_bounds = f->bounds, .nlower_bounds = f->nlower,
            .upper_bounds = f->bounds + n, .nupper_bounds = f->nupper,
        };
        rc = zx_ice_manifest_add(m, &en, e, sizeof(e));
    }
    zx_buf b = {0};
    if (rc == 0)
        rc = zx_ice_manifest_finish(m, &b, e, sizeof(e));
    if (rc == 0)
        rc = zx_ice_manifest_summary(m, &st->manifest);
    if (rc == 0 && keep_summary(&st->manifest, &st->manifest_mem) < 0) {
        rc = -1;
        snprintf(e, sizeof(e), "out of memory");
    }
    zx_ice_manifest_free(m);
    free(sj);
    if (rc < 0) {
        zx_buf_free(&b);
        return zx_seterr(err, errlen, "%s: the run's manifest: %s", st->where, e);
    }
    char uuid[37], name[200];
    zx_lake_uuid4(uuid);
    snprintf(name, sizeof(name), "metadata/zx-%llu-%s-m0.avro", (unsigned long long)st->run_id,
             uuid);
    rc = put_meta(st, name, &b, &st->manifest_path, err, errlen);
    st->manifest.manifest_path = st->manifest_path;
    st->manifest.manifest_length = (int64_t)b.len;
    zx_buf_free(&b);
    return rc;
}

/* Manifest i of v without the removed files (the others EXISTING):
 * written, its manifest_file into *out (path malloc'd into *path).
 * 0 or -1. */
static int rewrite_manifest(ice_state *st, const ice_view *v, size_t i, int64_t snap_id,
                            zx_ice_mfile *out, char **path, void **mem, char *err,
                            size_t errlen)
{
    const zx_ice_mfile *mf = &v->mfiles[i];
    size_t ne;
    const zx_ice_entry *es = zx_ice_mread_entries(v->manifests[i], &ne);
    const char *sj = zx_ice_mread_meta(v->manifests[i], "schema");
    const char *ps = zx_ice_mread_meta(v->manifests[i], "partition-spec");
    const char *sid = zx_ice_mread_meta(v->manifests[i], "schema-id");
    zx_ice_manifest_args ma = {.schema_json = sj ? sj : "{}", .schema_id = sid ? atoi(sid) : 0,
                               .partition_spec_json = ps ? ps : "[]",
                               .partition_spec_id = mf->partition_spec_id,
                               .codec = ZX_AVRO_DEFLATE};
    size_t npf;
    ma.pfields = zx_ice_mread_pfields(v->manifests[i], &npf);
    ma.npfields = npf;
    zx_ice_manifest *m = NULL;
    char e[512];
    int rc = zx_ice_manifest_open(&ma, &m, e, sizeof(e));
    for (size_t k = 0; rc == 0 && k < ne; k++) {
        if (es[k].status == 2)
            continue;
        zx_ice_entry en = es[k];
        /* inherited values made explicit, as an EXISTING entry needs */
        if (!en.has_snapshot_id) {
            en.has_snapshot_id = 1;
            en.snapshot_id = mf->added_snapshot_id;
        }
        if (!en.has_sequence_number) {
            en.has_sequence_number = 1;
            en.sequence_number = mf->sequence_number;
        }
        if (!en.has_file_sequence_number) {
            en.has_file_sequence_number = 1;
            en.file_sequence_number = mf->sequence_number;
        }
        if (removing(st, en.file_path)) {
            en.status = 2;
            en.snapshot_id = snap_id;
        } else {
            en.status = 0;
        }
        rc = zx_ice_manifest_add(m, &en, e, sizeof(e));
    }
    zx_buf b = {0};
    if (rc == 0)
        rc = zx_ice_manifest_finish(m, &b, e, sizeof(e));
    if (rc == 0)
        rc = zx_ice_manifest_summary(m, out);
    if (rc == 0 && keep_summary(out, mem) < 0) {
        rc = -1;
        snprintf(e, sizeof(e), "out of memory");
    }
    zx_ice_manifest_free(m);
    if (rc < 0) {
        zx_buf_free(&b);
        return zx_seterr(err, errlen, "%s: rewriting manifest %s: %s", st->where,
                         mf->manifest_path, e);
    }
    char uuid[37], name[200];
    zx_lake_uuid4(uuid);
    snprintf(name, sizeof(name), "metadata/zx-%llu-%s-m%zu.avro", (unsigned long long)st->run_id,
             uuid, i + 1);
    rc = put_meta(st, name, &b, path, err, errlen);
    out->manifest_path = *path;
    out->manifest_length = (int64_t)b.len;
    out->added_snapshot_id = snap_id;
    zx_buf_free(&b);
    return rc;
}

static int64_t new_snapshot_id(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x))
        x = (uint64_t)zx_now_us() * 2654435761u;
    x &= INT64_MAX;
    return x ? (int64_t)x : 1;
}

static void sum_set(json_t *s, const char *k, int64_t v)
{
    char b[24];
    snprintf(b, sizeof(b), "%lld", (long long)v);
    json_object_set_new(s, k, json_string(b));
}

/* One try: from st->tbl (the current table), the manifest list and the
 * snapshot; then the commit.  0 (committed; *snap its id), 1 (try again:
 * conflict or unknown outcome, st->tbl reloaded), -1. */
static int attempt(ice_state *st, int64_t *snap, char *err, size_t errlen)
{
    ice_view v;
    if (view_read(st, &v, err, errlen) < 0) {
        view_free(&v);
        return -1;
    }
    int rc = 0;
    char **paths = NULL;
    void **mems = NULL;
    zx_ice_mfile *list = NULL;
    size_t nlist = 0;
    json_t *updates = NULL, *reqs = NULL, *newmd = NULL;
    zx_buf b = {0};
    if (rewrite(st, &v, err, errlen) < 0 || zx_lw_flush(st->lw, err, errlen) < 0 ||
        write_manifest(st, err, errlen) < 0) {
        rc = -1;
        goto out;
    }
    /* the files the run removes must still be live */
    size_t nremoved = json_array_size(st->removed), live_removed = 0;
    int64_t del_rows = 0, del_size = 0, tot_files = 0, tot_rows = 0, tot_size = 0;
    for (size_t i = 0; i < v.nlive; i++) {
        int r = removing(st, v.live[i].e->file_path);
        if (st->mode == ZX_MODE_REPLACE) {
            /* replace: what the run started from goes; files of manifests
             * committed since by other writers stay */
            size_t k;
            json_t *x;
            r = 0;
            json_array_foreach(st->base_manifests, k, x)
                r |= !strcmp(json_string_value(x), v.mfiles[v.live[i].manifest].manifest_path);
        }
        v.live[i].removed = r;
        live_removed += r && st->mode != ZX_MODE_REPLACE;
        if (r) {
            del_rows += v.live[i].e->record_count;
            del_size += v.live[i].e->file_size_in_bytes;
        } else {
            tot_files++;
            tot_rows += v.live[i].e->record_count;
            tot_size += v.live[i].e->file_size_in_bytes;
        }
    }
    size_t nt = json_array_size(st->touched), touched_live = 0;
    for (size_t k = 0; k < nt; k++)
        for (size_t i = 0; i < v.nlive; i++)
            if (!strcmp(v.live[i].e->file_path, json_string_value(json_array_get(st->touched,
                                                                                k)))) {
                touched_live++;
                break;
            }
    if (touched_live != nt) {
        rc = zx_seterr(err, errlen, "%s: another writer committed a snapshot that removed "
                       "data files this run deletes rows of; nothing of this run was "
                       "committed: the next run starts from the new snapshot", st->where);
        goto out;
    }
    if (live_removed != nremoved) {
        rc = zx_seterr(err, errlen, "%s: another writer committed a snapshot that removed "
                       "data files this run rewrites; nothing of this run was committed: the "
                       "next run starts from the new snapshot", st->where);
        goto out;
    }
    int64_t parent = zx_ice_current_snapshot(st->tbl.metadata, &(const char *){NULL});
    int64_t seq = json_integer_value(json_object_get(st->tbl.metadata, "last-sequence-number")) + 1;
    int64_t sid = new_snapshot_id();
    *snap = sid;
    /* the manifest list: the others' manifests carried or rewritten, ours */
    list = calloc(v.nmfiles + 2, sizeof(*list));
    paths = calloc(v.nmfiles + 2, sizeof(*paths));
    mems = calloc(v.nmfiles + 2, sizeof(*mems));
    if (!list || !paths || !mems) {
        rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
        goto out;
    }
    int64_t tot_del_files = 0, tot_del_rows = 0;
    for (size_t i = 0; i < v.nmfiles; i++) {
        size_t nr = 0, nl = 0;
        if (v.mfiles[i].content != 0) {  /* zx's delete manifests */
            int base = 0;
            size_t k;
            json_t *x;
            json_array_foreach(st->base_manifests, k, x)
                base |= !strcmp(json_string_value(x), v.mfiles[i].manifest_path);
            if (st->mode == ZX_MODE_REPLACE && base)
                continue;                 /* replace: what it started from goes */
            for (size_t d = 0; d < v.ndlive; d++)
                if (v.dlive[d].manifest == i) {
                    tot_del_files++;
                    tot_del_rows += v.dlive[d].e->record_count;
                }
            list[nlist++] = v.mfiles[i];
            continue;
        }
        for (size_t k = 0; k < v.nlive; k++)
            if (v.live[k].manifest == i) {
                nl++;
                nr += v.live[k].removed;
            }
        if (nr == 0) {
            list[nlist++] = v.mfiles[i];
        } else if (nr < nl && st->mode != ZX_MODE_REPLACE) {
            if (rewrite_manifest(st, &v, i, sid, &list[nlist], &paths[nlist], &mems[nlist], err,
                                 errlen) < 0) {
                rc = -1;
                goto out;
            }
            list[nlist].sequence_number = seq;
            nlist++;
        }
    }
    int64_t add_rows = 0, add_size = 0;
    for (size_t i = 0; i < st->nfiles; i++) {
        add_rows += st->files[i].rows;
        add_size += st->files[i].size;
    }
    if (st->manifest_path) {
        list[nlist] = st->manifest;
        list[nlist].added_snapshot_id = sid;
        list[nlist].sequence_number = seq;
        list[nlist].min_sequence_number = seq;
        nlist++;
    }
    if (st->del_manifest_path) {
        list[nlist] = st->del_manifest;
        list[nlist].added_snapshot_id = sid;
        list[nlist].sequence_number = seq;
        list[nlist].min_sequence_number = seq;
        nlist++;
        tot_del_files += st->del_files;
        tot_del_rows += st->del_rows;
    }
    for (size_t i = 0; i < nlist; i++)
        if (list[i].added_snapshot_id == sid) {
            list[i].sequence_number = seq;
            if (list[i].min_sequence_number <= 0 || list[i].min_sequence_number > seq)
                list[i].min_sequence_number = seq;
        }
    char e[512];
    zx_ice_mlist_args la = {.snapshot_id = sid, .has_parent_snapshot_id = parent >= 0,
                            .parent_snapshot_id = parent, .sequence_number = seq,
                            .codec = ZX_AVRO_DEFLATE};
    if (zx_ice_mlist_write(&la, list, nlist, &b, e, sizeof(e)) < 0) {
        rc = zx_seterr(err, errlen, "%s: the manifest list: %s", st->where, e);
        goto out;
    }
    char uuid[37], name[200], *ml = NULL;
    zx_lake_uuid4(uuid);
    snprintf(name, sizeof(name), "metadata/snap-%lld-zx-%s.avro", (long long)sid, uuid);
    if (put_meta(st, name, &b, &ml, err, errlen) < 0) {
        rc = -1;
        goto out;
    }
    /* the snapshot */
    int overwrite = st->mode == ZX_MODE_REPLACE || nremoved > 0 || st->del_rows > 0;
    json_t *sum = json_pack("{s:s, s:s}", "operation", overwrite ? "overwrite" : "append",
                            "zx.sync", st->sync);
    char rid[24];
    snprintf(rid, sizeof(rid), "%llu", (unsigned long long)st->run_id);
    json_object_set_new(sum, "zx.run", json_string(rid));
    sum_set(sum, "added-data-files", (int64_t)st->nfiles);
    sum_set(sum, "added-records", add_rows);
    sum_set(sum, "added-files-size", add_size);
    int64_t ndel = 0;
    for (size_t i = 0; i < v.nlive; i++)
        ndel += v.live[i].removed;
    sum_set(sum, "deleted-data-files", ndel);
    sum_set(sum, "deleted-records", del_rows);
    sum_set(sum, "removed-files-size", del_size);
    sum_set(sum, "total-data-files", tot_files + (int64_t)st->nfiles);
    sum_set(sum, "total-records", tot_rows + add_rows);
    sum_set(sum, "total-files-size", tot_size + add_size);
    if (st->del_rows) {
        sum_set(sum, "added-delete-files", st->del_files);
        sum_set(sum, "added-position-delete-files", st->del_files);
        sum_set(sum, "added-position-deletes", st->del_rows);
    }
    sum_set(sum, "total-delete-files", tot_del_files);
    sum_set(sum, "total-position-deletes", tot_del_rows);
    sum_set(sum, "total-equality-deletes", 0);
    json_t *snapshot = json_pack("{s:I, s:I, s:I, s:s, s:o, s:I}", "snapshot-id",
                                 (json_int_t)sid, "sequence-number", (json_int_t)seq,
                                 "timestamp-ms", (json_int_t)(zx_now_us() / 1000),
                                 "manifest-list", ml, "summary", sum, "schema-id",
                                 (json_int_t)json_integer_value(json_object_get(st->schema,
                                                                                "schema-id")));
    free(ml);
    if (snapshot && parent >= 0)
        json_object_set_new(snapshot, "parent-snapshot-id", json_integer(parent));
    updates = json_array();
    if (st->schema_changed && !st->create) {
        json_array_append_new(updates, json_pack("{s:s, s:O, s:i}", "action", "add-schema",
                                                 "schema", st->schema, "last-column-id",
                                                 (int)st->last_column_id));
        json_array_append_new(updates, json_pack("{s:s, s:i}", "action", "set-current-schema",
                                                 "schema-id", -1));
    }
    json_array_append_new(updates, json_pack("{s:s, s:o}", "action", "add-snapshot",
                                             "snapshot", snapshot));
    json_array_append_new(updates, json_pack("{s:s, s:s, s:s, s:I}", "action",
                                             "set-snapshot-ref", "ref-name", "main", "type",
                                             "branch", "snapshot-id", (json_int_t)sid));
    /* expire the snapshots beyond keep_snapshots (ours counts) */
    json_t *snaps = json_object_get(st->tbl.metadata, "snapshots"), *expire = json_array();
    size_t ns = json_array_size(snaps);
    if (ns + 1 > st->keep) {
        /* the oldest first: by timestamp */
        size_t drop = ns + 1 - st->keep;
        for (size_t d = 0; d < drop; d++) {
            json_t *oldest = NULL;
            size_t k;
            json_t *x;
            json_array_foreach(snaps, k, x) {
                int taken = 0;
                size_t j;
                json_t *y;
                json_array_foreach(expire, j, y)
                    taken |= json_equal(y, json_object_get(x, "snapshot-id"));
                if (taken || (parent >= 0 && json_integer_value(json_object_get(
                                                 x, "snapshot-id")) == parent))
                    continue;
                if (!oldest || json_integer_value(json_object_get(x, "timestamp-ms")) <
                               json_integer_value(json_object_get(oldest, "timestamp-ms")))
                    oldest = x;
            }
            if (oldest)
                json_array_append(expire, json_object_get(oldest, "snapshot-id"));
        }
    }
    if (json_array_size(expire))
        json_array_append_new(updates, json_pack("{s:s, s:O}", "action", "remove-snapshots",
                                                 "snapshot-ids", expire));
    json_decref(expire);
    reqs = json_pack("[{s:s, s:O}, {s:s, s:s, s:o}]", "type", "assert-table-uuid", "uuid",
                     json_object_get(st->tbl.metadata, "table-uuid"), "type",
                     "assert-ref-snapshot-id", "ref", "main", "snapshot-id",
                     parent >= 0 ? json_integer(parent) : json_null());
    if (!updates || !reqs) {
        rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
        goto out;
    }
    if (strcmp(st->catconn->kind, "iceberg_rest")) {
        char ae[256];
        newmd = zx_ice_apply(st->tbl.metadata, updates, st->tbl.metadata_location,
                             zx_now_us() / 1000, ae, sizeof(ae));
        if (!newmd) {
            rc = zx_seterr(err, errlen, "%s: %s", st->where, ae);
            goto out;
        }
    }
    if (!st->tried++)              /* tests: once, before the first commit */
        zx_lake_test_stop_at("files");
    zx_icecat_table after = {0};
    int c = zx_icecat_commit(st->cat, st->ns, st->name, &st->tbl, reqs, updates, newmd, &after,
                             err, errlen);
    if (c == 0) {
        zx_icecat_table_free(&st->tbl);
        st->tbl = after;
        rc = 0;
    } else if (c == ZX_ICECAT_CONFLICT || c == ZX_ICECAT_UNKNOWN) {
        zx_icecat_table_free(&after);
        zx_info("event=iceberg_commit_retry sync=%s run=%llu why=%s", st->sync,
                (unsigned long long)st->run_id, c == ZX_ICECAT_CONFLICT ? "conflict"
                                                                        : "unknown_outcome");
        char le[512];
        if (load(st, le, sizeof(le)) != 0) {
            rc = zx_seterr(err, errlen, "%s: after a commit %s, the table could not be read "
                           "back: %s", st->where, c == ZX_ICECAT_CONFLICT ? "conflict"
                           : "whose outcome is unknown", le);
            goto out;
        }
        const json_t *mine = zx_ice_find_run(st->tbl.metadata, st->sync, st->run_id);
        if (mine) {
            *snap = json_integer_value(json_object_get(mine, "snapshot-id"));
            rc = 0;
        } else {
            rc = 1;
        }
    } else {
        zx_icecat_table_free(&after);
        rc = -1;
    }
out:
    for (size_t i = 0; paths && i <= v.nmfiles + 1; i++)
        free(paths[i]);
    free(paths);
    for (size_t i = 0; mems && i <= v.nmfiles + 1; i++)
        free(mems[i]);
    free(mems);
    free(list);
    json_decref(updates);
    json_decref(reqs);
    json_decref(newmd);
    zx_buf_free(&b);
    view_free(&v);
    return rc;
}

/* After a commit that expired snapshots: the files zx wrote (data files,
 * their copies, manifests and manifest lists) that no kept snapshot uses
 * are deleted.  Failures are logged. */
static void collect_garbage(ice_state *st)
{
    char e[1024];
    json_t *used = json_object();
    size_t i;
    json_t *s;
    zx_buf b = {0};
    int ok = used != NULL;
    json_array_foreach(json_object_get(st->tbl.metadata, "snapshots"), i, s) {
        const char *ml = json_string_value(json_object_get(s, "manifest-list"));
        if (!ok || !ml)
            continue;
        json_object_set_new(used, ml, json_true());
        zx_ice_mlist *l = NULL;
        if (get_uri(st, ml, &b, e, sizeof(e)) < 0 ||
            zx_ice_mlist_read(b.p, b.len, &l, e, sizeof(e)) < 0) {
            ok = 0;
            break;
        }
        size_t nm;
        const zx_ice_mfile *mf = zx_ice_mlist_files(l, &nm);
        for (size_t k = 0; ok && k < nm; k++) {
            if (json_object_get(used, mf[k].manifest_path))
                continue;
            json_object_set_new(used, mf[k].manifest_path, json_true());
            zx_ice_mread *m = NULL;
            if (get_uri(st, mf[k].manifest_path, &b, e, sizeof(e)) < 0 ||
                zx_ice_manifest_read(b.p, b.len, &m, e, sizeof(e)) < 0) {
                ok = 0;
                break;
            }
            size_t ne;
            const zx_ice_entry *es = zx_ice_mread_entries(m, &ne);
            for (size_t j = 0; j < ne; j++)
                if (es[j].status != 2)
                    json_object_set_new(used, es[j].file_path, json_true());
            zx_ice_mread_free(m);
        }
        zx_ice_mlist_free(l);
    }
    zx_buf_free(&b);
    int deleted = 0;
    static const char *const dirs[] = {"data", "metadata", NULL};
    for (int d = 0; ok && dirs[d]; d++) {
        char **names = NULL;
        size_t n = 0;
        if (zx_lake_list(st->lake, dirs[d], &names, &n, e, sizeof(e)) < 0)
            break;
        for (size_t k = 0; k < n; k++) {
            int ours = !strncmp(names[k], "zx-", 3) ||
                       (!strncmp(names[k], "snap-", 5) && strstr(names[k], "-zx-"));
            if (!ours)
                continue;
            char rel[1200];
            snprintf(rel, sizeof(rel), "%s/%s", dirs[d], names[k]);
            char *u = uri_of(st, rel);
            int in_use = u && json_object_get(used, u);
            free(u);
            /* a run in flight writes files no snapshot names yet: only
             * files of runs before this one are taken */
            unsigned long long run = 0;
            if (!strncmp(names[k], "zx-", 3))
                run = strtoull(names[k] + 3, NULL, 10);
            if (in_use || (run && run >= st->run_id) ||
                (!strncmp(names[k], "snap-", 5)))
                continue;
            if (zx_lake_delete(st->lake, rel, e, sizeof(e)) == 0) {
                deleted++;
                if (d == 0) {
                    zx_side_delete(st->lake, rel, e, sizeof(e));
                    char pos[1300];
                    snprintf(pos, sizeof(pos), "%s/%s.pos", ZX_LAKE_SIDE_DIR, rel);
                    zx_lake_delete(st->lake, pos, e, sizeof(e));
                }
            }
        }
        zx_lake_names_free(names, n);
    }
    /* manifest lists of expired snapshots zx made */
    char **names = NULL;
    size_t n = 0;
    if (ok && zx_lake_list(st->lake, "metadata", &names, &n, e, sizeof(e)) == 0) {
        for (size_t k = 0; k < n; k++) {
            if (strncmp(names[k], "snap-", 5) || !strstr(names[k], "-zx-"))
                continue;
            char rel[1200];
            snprintf(rel, sizeof(rel), "metadata/%s", names[k]);
            char *u = uri_of(st, rel);
            int in_use = u && json_object_get(used, u);
            free(u);
            if (!in_use && zx_lake_delete(st->lake, rel, e, sizeof(e)) == 0)
                deleted++;
        }
        zx_lake_names_free(names, n);
    }
    json_decref(used);
    if (!ok)
        zx_warn("event=iceberg_gc_skipped sync=%s error=\"%s\"", st->sync, e);
    else if (deleted)
        zx_info("event=iceberg_files_expired sync=%s deleted=%d", st->sync, deleted);
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
        rc = attempt(st, &snap, err, errlen);
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
        collect_garbage(st);
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
