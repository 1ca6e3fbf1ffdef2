/*
 * dest_delta.c — the "delta" destination (dest.h): a sync's result into a
 * Delta Lake table in a folder or an S3 prefix (lake_store.h), one commit
 * per run.
 *
 * begin reads the table (delta_log.h: every commit from version 0) and
 * merges the result's columns into its schema (a new column is added; a
 * changed type fails the run).  write streams rows into Parquet data files
 * (formats/parquet.h; `file_rows` rows each, named
 * "zx-<run id>-<n>.parquet"), each with the rows' copy and key hashes zx
 * keeps beside it (lake_side.h) unless the mode is append.  commit:
 *
 *   replace        remove every live file, add the run's;
 *   append         add the run's;
 *   upsert/mirror  copy-on-write: the data files zx wrote that hold a key
 *                  the run wrote or deleted (their key hashes, lake_keys.h)
 *                  are removed and their other rows written again into new
 *                  files, from zx's copy (no Parquet is read back);
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
 * abort removes the data files and sidecars the run wrote (no commit
 * names them).  Files a killed run left are not referenced by any commit:
 * readers never see them.
 *
 * Stats: rows_written (result rows), rows_deleted (keys given), bytes
 * (data files added), files / files_removed, made ("delta version N").
 */
#include "workers/destinations/dest.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/dcell.h"
#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "formats/parquet.h"
#include "workers/destinations/delta/delta_log.h"
#include "workers/destinations/delta/delta_opts.h"
#include "workers/destinations/lake/lake_keys.h"
#include "workers/destinations/lake/lake_side.h"
#include "workers/destinations/lake/lake_store.h"

#define COMMIT_TRIES 20

/* Tests only: ZX_TEST_LAKE_STOP_AT=<step> stops the run worker (SIGSTOP)
 * at that step, for a test to kill it there: "files" (every data file
 * written, before the commit), "committed" (the commit written, before
 * the run reports it). */
static void test_stop_at(const char *step)
{
    const char *e = getenv("ZX_TEST_LAKE_STOP_AT");
    if (e && !strcmp(e, step)) {
        zx_info("event=test_stop_at step=%s", step);
        raise(SIGSTOP);
    }
}

typedef struct delta_state {
    char *path, *sync, *app;
    char where[1100];            /* "delta <path>" */
    zx_lake *lake;
    zx_pq_codec codec;
    uint32_t file_rows;

    /* the run */
    int running;
    zx_dest_stats *stats;
    zx_sync_mode mode;
    uint64_t run_id;
    zx_delta_table t;
    const zx_dcol *cols;         /* the run's */
    zx_dcol *pqcols;             /* the data files' (JSON as TEXT) */
    size_t ncols;
    zx_dcol *keycols;            /* the key columns (types) */
    size_t *keyidx, *keypos;     /* their places in a row; 0..n-1 */
    size_t nkeys;
    int side, cow, create, already;
    char *schema;                /* a new schemaString; NULL: unchanged */

    /* the data file being written */
    zx_lake_out *out;
    zx_pq_writer *pq;
    zx_side *sd;
    char cur[96];
    uint32_t seq;
    uint64_t nulled_done;        /* values nulled in files finished */
    json_t *adds;                /* add actions (objects) */
    json_t *written;             /* names of data files written (abort) */
    json_t *removes;             /* the files it removes: {path, size, zx, add} */
    zx_keyset changed;
    zx_buf ks[2];
    unsigned char *khs;
    size_t khcap;
    zx_value *row;
    zx_rowset rw, part;          /* a rewritten file's rows; a cut batch */
    /* the first key column's values the run wrote or deleted (INT64 or
     * TEXT keys), to tell whether a file zx did not write may hold one */
    int64_t *kvi;
    char **kvs;
    size_t nkv, capkv;
    int rewriting;
} delta_state;

static int note_key(delta_state *st, const zx_value *vals, size_t idx);

/* ---- the run's data files ---------------------------------------------- */

static void file_drop(delta_state *st)
{
    zx_pq_free(st->pq);
    st->pq = NULL;
    zx_lake_out_abort(st->out);
    st->out = NULL;
    zx_side_abort(st->sd);
    st->sd = NULL;
}

static int file_start(delta_state *st, char *err, size_t errlen)
{
    snprintf(st->cur, sizeof(st->cur), "zx-%llu-%05u.parquet", (unsigned long long)st->run_id,
             st->seq++);
    if (!(st->out = zx_lake_create(st->lake, st->cur, err, errlen)))
        return -1;
    json_array_append_new(st->written, json_string(st->cur));
    if (st->side && !(st->sd = zx_side_open(st->lake, st->cur, err, errlen)))
        return -1;
    zx_pq_opts po = {.codec = st->codec, .sink = zx_lake_sink, .sink_ctx = st->out};
    char e[512];
    if (zx_pq_open(-1, st->pqcols, st->ncols, &po, &st->pq, e, sizeof(e)) < 0)
        return zx_seterr(err, errlen, "%s: %s: %s", st->where, st->cur, e);
    return 0;
}

/* The stats of the finished file as Delta's JSON text (malloc'd). */
static char *file_stats(delta_state *st)
{
    json_t *o = json_object(), *mn = json_object(), *mx = json_object(), *nc = json_object();
    json_object_set_new(o, "numRecords", json_integer((json_int_t)zx_pq_rows(st->pq)));
    for (size_t i = 0; i < st->ncols; i++) {
        zx_pq_colstats cs;
        if (zx_pq_col_stats(st->pq, i, &cs) < 0)
            continue;
        const char *name = st->cols[i].name;
        json_object_set_new(nc, name, json_integer((json_int_t)cs.nulls));
        if (!cs.has_minmax)
            continue;
        json_t *a = NULL, *b = NULL;
        char t1[ZX_TS_BUFSZ], t2[ZX_TS_BUFSZ];
        switch (st->cols[i].type) {
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
                a = json_stringn(cs.bmin ? (const char *)cs.bmin : "", cs.bmin_len);
                b = json_stringn(cs.bmax ? (const char *)cs.bmax : "", cs.bmax_len);
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

/* Finish the open data file (if any) and note its add action. */
static int file_finish(delta_state *st, char *err, size_t errlen)
{
    if (!st->pq)
        return 0;
    char e[512];
    uint64_t size = 0;
    if (zx_pq_finish(st->pq, NULL, e, sizeof(e)) < 0) {
        zx_seterr(err, errlen, "%s: %s: %s", st->where, st->cur, e);
        file_drop(st);
        return -1;
    }
    st->nulled_done += zx_pq_nulled(st->pq);
    char *stats = file_stats(st);
    uint64_t rows = zx_pq_rows(st->pq);
    zx_pq_free(st->pq);
    st->pq = NULL;
    int rc = zx_lake_out_commit(st->out, &size, err, errlen);
    st->out = NULL;
    if (rc == 0 && st->sd) {
        rc = zx_side_commit(st->sd, err, errlen);
        st->sd = NULL;
    }
    if (rc < 0 || !stats) {
        free(stats);
        file_drop(st);
        return rc < 0 ? -1 : zx_seterr(err, errlen, "%s: out of memory", st->where);
    }
    json_t *add = json_pack("{s:s, s:{}, s:I, s:I, s:b, s:s, s:{s:s, s:s}}", "path", st->cur,
                            "partitionValues", "size", (json_int_t)size, "modificationTime",
                            (json_int_t)(zx_now_us() / 1000), "dataChange", 1, "stats", stats,
                            "tags", "zx.rows", st->side ? "1" : "0", "zx.sync", st->sync);
    free(stats);
    if (!add)
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    json_array_append_new(st->adds, add);
    st->stats->bytes += size;
    st->stats->files++;
    (void)rows;
    return 0;
}

/* Note the values the writer nulled (misfits), the first one by name. */
static void pq_note(delta_state *st, const zx_rowset *rs, uint64_t first)
{
    st->stats->nulled = st->nulled_done + zx_pq_nulled(st->pq);
    size_t col;
    uint64_t row;
    if (st->stats->misfit_col[0] || !zx_pq_first_misfit(st->pq, &col, &row) || row < first ||
        col >= st->ncols || row - first >= rs->nrows)
        return;
    zx_rowset_row(rs, (uint32_t)(row - first), st->row);
    zx_dest_misfit(st->stats, st->cols[col].name, &st->row[col]);
}

static int put_part(delta_state *st, const zx_rowset *rs, char *err, size_t errlen);

/* Rows rs (the run's columns, in order) into data files of file_rows
 * rows at most: a batch that crosses a file's end is cut there. */
static int put_rows(delta_state *st, const zx_rowset *rs, char *err, size_t errlen)
{
    uint32_t a = 0;
    while (a < rs->nrows) {
        uint64_t room = st->file_rows - (st->pq ? zx_pq_rows(st->pq) : 0);
        uint32_t n = rs->nrows - a;
        if (n > room)
            n = (uint32_t)room;
        if (a == 0 && n == rs->nrows) {
            if (put_part(st, rs, err, errlen) < 0)
                return -1;
        } else {
            zx_rowset_reset(&st->part);
            for (size_t i = 0; i < st->ncols; i++)
                if (zx_rowset_column(&st->part, st->cols[i].name, strlen(st->cols[i].name),
                                     ZX_T_NULL) < 0)
                    return zx_seterr(err, errlen, "%s: out of memory", st->where);
            for (uint32_t r = a; r < a + n; r++) {
                zx_rowset_row(rs, r, st->row);
                if (zx_rowset_begin_row(&st->part) < 0)
                    return zx_seterr(err, errlen, "%s: out of memory", st->where);
                for (size_t i = 0; i < st->ncols; i++) {
                    zx_value v = st->row[i];
                    if (v.type == ZX_T_NULL)
                        continue;
                    if ((v.s && !(v.s = zx_rowset_strdup(&st->part, v.s, v.len))) ||
                        zx_rowset_add(&st->part, (uint32_t)i, &v) < 0)
                        return zx_seterr(err, errlen, "%s: out of memory", st->where);
                }
                zx_rowset_end_row(&st->part);
            }
            if (put_part(st, &st->part, err, errlen) < 0)
                return -1;
        }
        a += n;
    }
    return 0;
}

/* One part of a batch that fits in the open (or a new) data file. */
static int put_part(delta_state *st, const zx_rowset *rs, char *err, size_t errlen)
{
    if (!rs->nrows)
        return 0;
    if (!st->pq && file_start(st, err, errlen) < 0)
        return -1;
    if (st->side) {
        if (st->khcap < rs->nrows) {
            unsigned char *k = realloc(st->khs, (size_t)rs->nrows * ZX_LAKE_KEY_LEN);
            if (!k)
                return zx_seterr(err, errlen, "%s: out of memory", st->where);
            st->khs = k;
            st->khcap = rs->nrows;
        }
        for (uint32_t i = 0; i < rs->nrows; i++) {
            unsigned char *kh = st->khs + (size_t)i * ZX_LAKE_KEY_LEN;
            zx_rowset_row(rs, i, st->row);
            if (zx_lake_key_hash(st->keycols, st->keyidx, st->nkeys, st->row, st->ks, kh) < 0)
                return zx_seterr(err, errlen, "%s: out of memory", st->where);
            if (st->cow && !st->rewriting && (zx_keyset_add(&st->changed, kh) < 0 ||
                                              note_key(st, st->row, st->keyidx[0]) < 0))
                return zx_seterr(err, errlen, "%s: out of memory", st->where);
        }
        if (zx_side_add(st->sd, rs, st->khs, err, errlen) < 0)
            return -1;
    }
    uint64_t first = zx_pq_rows(st->pq);
    char e[512];
    if (zx_pq_write(st->pq, rs, e, sizeof(e)) < 0)
        return zx_seterr(err, errlen, "%s: %s: %s", st->where, st->cur, e);
    pq_note(st, rs, first);
    if (zx_pq_rows(st->pq) >= st->file_rows)
        return file_finish(st, err, errlen);
    return 0;
}

/* Note the first key column's value of a row (vals, at index idx) the run
 * writes or deletes.  0 or -1 (out of memory). */
static int note_key(delta_state *st, const zx_value *vals, size_t idx)
{
    zx_dtype t = st->keycols[0].type;
    if (t != ZX_DT_INT64 && t != ZX_DT_TEXT)
        return 0;
    zx_dc_target tg = zx_dc_target_file(&st->keycols[0]);
    zx_dc_out o;
    if (zx_dc_convert(&tg, &vals[idx], &st->ks[1], &o) != 1 || o.null)
        return 0;
    if (st->nkv == st->capkv) {
        size_t c = st->capkv ? st->capkv * 2 : 1024;
        if (t == ZX_DT_INT64) {
            int64_t *n = realloc(st->kvi, c * sizeof(*n));
            if (!n)
                return -1;
            st->kvi = n;
        } else {
            char **n = realloc(st->kvs, c * sizeof(*n));
            if (!n)
                return -1;
            st->kvs = n;
        }
        st->capkv = c;
    }
    if (t == ZX_DT_INT64)
        st->kvi[st->nkv++] = o.i;
    else if (!(st->kvs[st->nkv++] = strndup(o.s, o.len)))
        return -1;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when file f (not zx's) may hold a key the run wrote or deleted: its
 * stats' range of the first key column holds a noted value, or it has no
 * such range (multi-column and other key types: the first column only). */
static int may_hold(delta_state *st, const zx_delta_file *f)
{
    json_t *a = json_loads(f->add_json, 0, NULL);
    const char *stx = a ? json_string_value(json_object_get(a, "stats")) : NULL;
    json_t *sj = stx ? json_loads(stx, 0, NULL) : NULL;
    const char *kn = st->keycols[0].name;
    json_t *mn = json_object_get(json_object_get(sj, "minValues"), kn);
    json_t *mx = json_object_get(json_object_get(sj, "maxValues"), kn);
    int hit = 1;
    if (st->keycols[0].type == ZX_DT_INT64 && json_is_integer(mn) && json_is_integer(mx)) {
        int64_t lo = json_integer_value(mn), hi = json_integer_value(mx);
        size_t l = 0, h = st->nkv;           /* first value >= lo */
        while (l < h) {
            size_t m = l + (h - l) / 2;
            if (st->kvi[m] < lo)
                l = m + 1;
            else
                h = m;
        }
        hit = l < st->nkv && st->kvi[l] <= hi;
    } else if (st->keycols[0].type == ZX_DT_TEXT && json_is_string(mn) && json_is_string(mx)) {
        const char *lo = json_string_value(mn), *hi = json_string_value(mx);
        size_t l = 0, h = st->nkv, hl = strlen(hi);
        while (l < h) {
            size_t m = l + (h - l) / 2;
            if (strcmp(st->kvs[m], lo) < 0)
                l = m + 1;
            else
                h = m;
        }
        /* a max may be a cut prefix: a value starting with it counts */
        hit = l < st->nkv && (strcmp(st->kvs[l], hi) <= 0 || !strncmp(st->kvs[l], hi, hl));
    }
    json_decref(sj);
    json_decref(a);
    return hit;
}

/* ---- open, begin, write, delete ----------------------------------------- */

static void run_reset(delta_state *st)
{
    file_drop(st);
    zx_delta_table_free(&st->t);
    free(st->pqcols);
    free(st->keycols);
    free(st->keyidx);
    free(st->keypos);
    free(st->schema);
    free(st->row);
    st->pqcols = st->keycols = NULL;
    st->keyidx = st->keypos = NULL;
    st->schema = NULL;
    st->row = NULL;
    json_decref(st->adds);
    json_decref(st->written);
    json_decref(st->removes);
    st->adds = st->written = st->removes = NULL;
    zx_keyset_free(&st->changed);
    for (size_t i = 0; st->kvs && i < st->nkv; i++)
        free(st->kvs[i]);
    free(st->kvs);
    free(st->kvi);
    st->kvs = NULL;
    st->kvi = NULL;
    st->nkv = st->capkv = 0;
    zx_rowset_reset(&st->rw);
    st->running = st->already = st->create = st->rewriting = 0;
    st->seq = 0;
    st->nulled_done = 0;
}

static void delta_close(void *state)
{
    delta_state *st = state;
    if (!st)
        return;
    run_reset(st);
    zx_rowset_free(&st->rw);
    zx_rowset_free(&st->part);
    zx_lake_free(st->lake);
    zx_buf_free(&st->ks[0]);
    zx_buf_free(&st->ks[1]);
    free(st->khs);
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
    zx_rowset_init(&st->rw);
    zx_rowset_init(&st->part);
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
    zx_lake_args la = {.root = o->path, .roots = a->roots, .nroots = a->nroots,
                       .conn = a->conn, .what = "delta", .deadline_ms = a->deadline_ms};
    if (!(st->lake = zx_lake_open(&la, err, errlen))) {
        delta_close(st);
        return -1;
    }
    *state = st;
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
    st->side = run->mode != ZX_MODE_APPEND && run->nkey_cols > 0;
    st->cow = (run->mode == ZX_MODE_UPSERT || run->mode == ZX_MODE_MIRROR) && run->nkey_cols > 0;
    st->adds = json_array();
    st->written = json_array();
    st->removes = json_array();
    st->pqcols = calloc(run->ncols ? run->ncols : 1, sizeof(*st->pqcols));
    st->row = calloc(run->ncols ? run->ncols : 1, sizeof(*st->row));
    size_t nk = run->nkey_cols;
    st->keycols = calloc(nk ? nk : 1, sizeof(*st->keycols));
    st->keyidx = calloc(nk ? nk : 1, sizeof(size_t));
    st->keypos = calloc(nk ? nk : 1, sizeof(size_t));
    if (!st->adds || !st->written || !st->removes || !st->pqcols || !st->row ||
        !st->keycols || !st->keyidx || !st->keypos)
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    for (size_t i = 0; i < run->ncols; i++) {
        st->pqcols[i] = run->cols[i];
        if (st->pqcols[i].type == ZX_DT_JSON)
            st->pqcols[i].type = ZX_DT_TEXT;   /* Delta has no JSON type: a string */
    }
    for (size_t k = 0; k < nk; k++) {
        size_t i;
        for (i = 0; i < run->ncols && strcmp(run->cols[i].name, run->key_cols[k]); i++)
            ;
        if (i == run->ncols)
            return zx_seterr(err, errlen, "%s: key column %s is not in the result", st->where,
                             run->key_cols[k]);
        st->keycols[k] = run->cols[i];
        st->keyidx[k] = i;
        st->keypos[k] = k;
    }
    st->nkeys = nk;
    if (zx_delta_read(st->lake, &st->t, err, errlen) < 0)
        return -1;
    st->create = st->t.version < 0;
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
            const char *tag = NULL;
            json_t *a = json_loads(f->add_json, 0, NULL);
            tag = a ? json_string_value(json_object_get(json_object_get(a, "tags"), "zx.sync"))
                    : NULL;
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
    if (!st->running)
        return zx_seterr(err, errlen, "%s: write outside a run", st->where);
    if (st->already)
        return 0;
    if (rs->ncols != st->ncols)
        return zx_seterr(err, errlen, "%s: a batch of %zu columns for a run of %zu",
                         st->where, (size_t)rs->ncols, st->ncols);
    if (put_rows(st, rs, err, errlen) < 0)
        return -1;
    st->stats->rows_written += rs->nrows;
    return 0;
}

static int delta_delete(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    delta_state *st = state;
    if (!st->running)
        return zx_seterr(err, errlen, "%s: delete outside a run", st->where);
    if (st->already)
        return 0;
    if (!st->cow || keys->ncols != st->nkeys)
        return zx_seterr(err, errlen, "%s: deletes need the key columns", st->where);
    zx_value kv[64];
    if (st->nkeys > 64)
        return zx_seterr(err, errlen, "%s: too many key columns", st->where);
    for (uint32_t i = 0; i < keys->nrows; i++) {
        unsigned char kh[ZX_LAKE_KEY_LEN];
        zx_rowset_row(keys, i, kv);
        if (zx_lake_key_hash(st->keycols, st->keypos, st->nkeys, kv, st->ks, kh) < 0 ||
            zx_keyset_add(&st->changed, kh) < 0 || note_key(st, kv, 0) < 0)
            return zx_seterr(err, errlen, "%s: out of memory", st->where);
    }
    st->stats->rows_deleted += keys->nrows;
    return 0;
}

/* ---- commit ------------------------------------------------------------- */

/* One batch of a rewritten file's rows (zx's copy): those whose key the
 * run did not write nor delete go into the new files, mapped by column
 * name onto the run's columns (a column the copy lacks: NULL). */
static int keep_rows(void *ctx, const zx_rowset *rs)
{
    delta_state *st = ctx;
    int64_t map[4096];
    if (st->ncols > 4096)
        return -1;
    for (size_t i = 0; i < st->ncols; i++)
        map[i] = zx_rowset_find_column(rs, st->cols[i].name, strlen(st->cols[i].name));
    zx_rowset_reset(&st->rw);
    for (size_t i = 0; i < st->ncols; i++)
        if (zx_rowset_column(&st->rw, st->cols[i].name, strlen(st->cols[i].name),
                             ZX_T_NULL) < 0)
            return -1;
    zx_value *src = malloc((rs->ncols ? rs->ncols : 1) * sizeof(*src));
    if (!src)
        return -1;
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, src);
        for (size_t i = 0; i < st->ncols; i++) {
            if (map[i] >= 0)
                st->row[i] = src[map[i]];
            else
                memset(&st->row[i], 0, sizeof(st->row[i]));
        }
        unsigned char kh[ZX_LAKE_KEY_LEN];
        if (zx_lake_key_hash(st->keycols, st->keyidx, st->nkeys, st->row, st->ks, kh) < 0) {
            free(src);
            return -1;
        }
        if (zx_keyset_has(&st->changed, kh))
            continue;
        if (zx_rowset_begin_row(&st->rw) < 0) {
            free(src);
            return -1;
        }
        for (size_t i = 0; i < st->ncols; i++) {
            zx_value v = st->row[i];
            if (v.type == ZX_T_NULL)
                continue;
            if (v.s && !(v.s = zx_rowset_strdup(&st->rw, v.s, v.len))) {
                free(src);
                return -1;
            }
            if (zx_rowset_add(&st->rw, (uint32_t)i, &v) < 0) {
                free(src);
                return -1;
            }
        }
        zx_rowset_end_row(&st->rw);
    }
    free(src);
    char e[1024];
    if (put_rows(st, &st->rw, e, sizeof(e)) < 0) {
        zx_error("event=delta_rewrite_failed sync=%s error=\"%s\"", st->sync, e);
        return -1;
    }
    return 0;
}

/* Note that the run removes live file f.  0 or -1 (out of memory). */
static int note_remove(delta_state *st, const zx_delta_file *f)
{
    json_t *a = json_loads(f->add_json, 0, NULL);
    json_t *o = a ? json_pack("{s:s, s:I, s:b, s:O}", "path", f->path, "size",
                              (json_int_t)f->size, "zx", f->zx, "add", a) : NULL;
    json_decref(a);
    return o ? json_array_append_new(st->removes, o) : -1;
}

/* upsert / mirror: the files holding a changed or deleted key, removed and
 * their other rows written again. */
static int rewrite(delta_state *st, char *err, size_t errlen)
{
    if (!st->changed.n)
        return 0;
    zx_buf keys = {0};
    st->rewriting = 1;
    int rc = 0;
    if (st->kvi)
        qsort(st->kvi, st->nkv, sizeof(*st->kvi), cmp_i64);
    if (st->kvs)
        qsort(st->kvs, st->nkv, sizeof(*st->kvs), cmp_str);
    for (size_t i = 0; i < st->t.nfiles && rc == 0; i++) {
        const zx_delta_file *f = &st->t.files[i];
        if (!f->zx && may_hold(st, f)) {
            rc = zx_seterr(err, errlen, "%s: data file %s was written by another writer and "
                           "may hold keys this run changes or deletes (its %s range covers "
                           "one, or it has no statistics); zx rewrites only the files it "
                           "wrote: run the sync once with mode replace to take the table "
                           "over", st->where, f->path, st->keycols[0].name);
            break;
        }
        if (!f->zx || strchr(f->path, '/'))
            continue;
        int g = zx_side_keys(st->lake, f->path, &keys, err, errlen);
        if (g == ZX_LAKE_NOT_FOUND) {
            rc = zx_seterr(err, errlen, "%s: the copy of data file %s zx keeps (%s/%s.keys) "
                           "is missing: run the sync once with mode replace", st->where,
                           f->path, ZX_LAKE_SIDE_DIR, f->path);
            break;
        }
        if (g < 0) {
            rc = -1;
            break;
        }
        int hit = 0;
        for (size_t k = 0; k + ZX_LAKE_KEY_LEN <= keys.len && !hit; k += ZX_LAKE_KEY_LEN)
            hit = zx_keyset_has(&st->changed, (const unsigned char *)keys.p + k);
        if (!hit)
            continue;
        if (note_remove(st, f) < 0) {
            rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
            break;
        }
        char e[1024] = "";
        g = zx_side_rows(st->lake, f->path, keep_rows, st, e, sizeof(e));
        if (g != 0)
            rc = zx_seterr(err, errlen, "%s: cannot rewrite data file %s: %s", st->where,
                           f->path, e[0] ? e : g == ZX_LAKE_NOT_FOUND ? "its copy is missing"
                                                                     : "see the log");
    }
    st->rewriting = 0;
    zx_buf_free(&keys);
    return rc;
}

static void uuid4(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        uint64_t t = (uint64_t)zx_now_us() ^ ((uint64_t)getpid() << 32);
        for (int i = 0; i < 16; i++)
            b[i] = (unsigned char)(t >> (8 * (i % 8))) ^ (unsigned char)(i * 37);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
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
        rc = line(b, json_pack("{s:{s:i, s:i}}", "protocol", "minReaderVersion", 1,
                               "minWriterVersion", 2));
    if (rc == 0 && st->schema) {
        json_t *md;
        if (st->t.metadata) {
            md = json_deep_copy(st->t.metadata);
            json_object_set_new(md, "schemaString", json_string(st->schema));
        } else {
            char id[37];
            uuid4(id);
            md = json_pack("{s:s, s:{s:s, s:{}}, s:s, s:[], s:{}, s:I}", "id", id, "format",
                           "provider", "parquet", "options", "schemaString", st->schema,
                           "partitionColumns", "configuration", "createdTime",
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
        if (rc == 0)
            rc = line(b, json_pack("{s:{s:O, s:I, s:b, s:b, s:O, s:I}}", "remove", "path",
                                   json_object_get(a, "path"), "deletionTimestamp",
                                   (json_int_t)now, "dataChange", 1, "extendedFileMetadata",
                                   1, "partitionValues",
                                   json_object_get(a, "partitionValues")
                                   ? json_object_get(a, "partitionValues") : json_object(),
                                   "size", json_integer_value(json_object_get(v, "size"))));
    }
    json_array_foreach(st->adds, i, v)
        if (rc == 0)
            rc = line(b, json_pack("{s:O}", "add", v));
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
    return 0;
}

/* A writer won version v: read it (and any after it) into a copy of the
 * table's view and decide.  1: our own commit is there (a put whose answer
 * was lost); 0: no conflict, *next is the next free version; -1 with err:
 * a conflict (the winner named). */
static int lost_race(delta_state *st, int64_t v, int64_t *next, char *err, size_t errlen)
{
    zx_buf b = {0};
    zx_delta_table seen = {0};
    seen.version = -1;
    /* the files this run removes, as paths: must all still be live after */
    char *schema_before = st->t.metadata
        ? json_dumps(json_object_get(st->t.metadata, "schemaString"), JSON_ENCODE_ANY) : NULL;
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
    }
    if (rc == 0)
        *next = v;
    free(schema_before);
    zx_delta_table_free(&seen);
    zx_buf_free(&b);
    return rc;
}

/* Delete what the run wrote (data files, sidecars): nothing names them. */
static void drop_written(delta_state *st)
{
    size_t i;
    json_t *v;
    char e[512];
    json_array_foreach(st->written, i, v) {
        const char *n = json_string_value(v);
        zx_lake_delete(st->lake, n, e, sizeof(e));
        zx_side_delete(st->lake, n, e, sizeof(e));
    }
    json_array_clear(st->written);
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
    if (file_finish(st, err, errlen) < 0)
        return -1;
    if (st->cow && rewrite(st, err, errlen) < 0)
        return -1;
    if (file_finish(st, err, errlen) < 0)
        return -1;
    if (st->mode == ZX_MODE_REPLACE)
        for (size_t i = 0; i < st->t.nfiles; i++)
            if (note_remove(st, &st->t.files[i]) < 0)
                return zx_seterr(err, errlen, "%s: out of memory", st->where);
    if (!st->create && !st->schema && !json_array_size(st->adds) &&
        !json_array_size(st->removes)) {
        snprintf(st->stats->made, sizeof(st->stats->made), "delta version %lld (nothing to "
                 "commit)", (long long)st->t.version);
        st->running = 0;
        return 0;
    }
    test_stop_at("files");
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
    zx_buf_free(&b);
    if (rc == 0) {
        test_stop_at("committed");
        snprintf(st->stats->made, sizeof(st->stats->made), "delta version %lld", (long long)v);
        st->stats->files_removed = json_array_size(st->removes);
        /* the copies of removed files are no longer needed (data files
         * stay for readers of older versions) */
        size_t i;
        json_t *x;
        char e[512];
        json_array_foreach(st->removes, i, x) {
            const char *fp = json_string_value(json_object_get(x, "path"));
            if (json_is_true(json_object_get(x, "zx")) && fp && !strchr(fp, '/'))
                zx_side_delete(st->lake, fp, e, sizeof(e));
        }
        zx_info("event=delta_commit sync=%s run=%llu version=%lld files_added=%llu "
                "files_removed=%zu", st->sync, (unsigned long long)st->run_id, (long long)v,
                (unsigned long long)st->stats->files, json_array_size(st->removes));
        json_array_clear(st->written);
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
    file_drop(st);
    if (st->written)
        drop_written(st);
    st->running = 0;
}

const zx_dest zx_dest_delta = {
    .name = "delta",
    .caps = ZX_DEST_DELETES | ZX_DEST_UPSERT | ZX_DEST_ATOMIC_REPLACE,
    .open = delta_open,
    .begin = delta_begin,
    .write = delta_write,
    .delete_keys = delta_delete,
    .commit = delta_commit,
    .abort = delta_abort,
    .close = delta_close,
};
