/*
 * lake_writer.c — a lake run's data files, their copies, and the
 * copy-on-write of upsert and mirror (lake_writer.h).
 */
#include "workers/destinations/lake/lake_writer.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/dcell.h"
#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/destinations/lake/lake_keys.h"
#include "workers/destinations/lake/lake_side.h"

struct zx_lake_writer {
    zx_lw_args a;
    char *where, *dir, *prefix;
    zx_dcol *pqcols;
    int32_t *field_ids;
    zx_dcol *keycols;
    size_t *keyidx, *keypos;

    zx_lake_out *out;
    zx_pq_writer *pq;
    zx_side *sd;
    char cur[600];
    uint32_t seq;
    uint64_t nulled_done;
    char **written;               /* data files written (abort) */
    size_t nwritten, capwritten;

    zx_keyset changed;
    int64_t *kvi;
    char **kvs;
    size_t nkv, capkv;
    int sorted;

    zx_buf ks[2];
    unsigned char *khs;
    size_t khcap;
    zx_value *row, *src;
    size_t srccap;
    zx_rowset rw, part;
    int rewriting;
};

void zx_lake_test_stop_at(const char *step)
{
    const char *e = getenv("ZX_TEST_LAKE_STOP_AT");
    if (e && !strcmp(e, step)) {
        zx_info("event=test_stop_at step=%s", step);
        raise(SIGSTOP);
    }
}

void zx_lake_uuid4(char out[37])
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

static int oom(zx_lake_writer *w, char *err, size_t errlen)
{
    return zx_seterr(err, errlen, "%s: out of memory", w->where);
}

void zx_lw_free(zx_lake_writer *w)
{
    if (!w)
        return;
    zx_pq_free(w->pq);
    zx_lake_out_abort(w->out);
    zx_side_abort(w->sd);
    for (size_t i = 0; i < w->nwritten; i++)
        free(w->written[i]);
    free(w->written);
    zx_keyset_free(&w->changed);
    for (size_t i = 0; w->kvs && i < w->nkv; i++)
        free(w->kvs[i]);
    free(w->kvs);
    free(w->kvi);
    zx_buf_free(&w->ks[0]);
    zx_buf_free(&w->ks[1]);
    free(w->khs);
    free(w->row);
    free(w->src);
    zx_rowset_free(&w->rw);
    zx_rowset_free(&w->part);
    free(w->pqcols);
    free(w->field_ids);
    free(w->keycols);
    free(w->keyidx);
    free(w->keypos);
    free(w->where);
    free(w->dir);
    free(w->prefix);
    free(w);
}

zx_lake_writer *zx_lw_new(const zx_lw_args *a, char *err, size_t errlen)
{
    zx_lake_writer *w = calloc(1, sizeof(*w));
    if (!w) {
        zx_seterr(err, errlen, "%s: out of memory", a->where);
        return NULL;
    }
    w->a = *a;
    zx_rowset_init(&w->rw);
    zx_rowset_init(&w->part);
    size_t n = a->ncols ? a->ncols : 1, nk = a->nkeys ? a->nkeys : 1;
    w->where = strdup(a->where ? a->where : "lake");
    w->dir = strdup(a->dir ? a->dir : "");
    w->prefix = strdup(a->prefix ? a->prefix : "zx");
    w->pqcols = calloc(n, sizeof(*w->pqcols));
    w->row = calloc(n, sizeof(*w->row));
    w->keycols = calloc(nk, sizeof(*w->keycols));
    w->keyidx = calloc(nk, sizeof(size_t));
    w->keypos = calloc(nk, sizeof(size_t));
    if (a->field_ids && (w->field_ids = calloc(n, sizeof(int32_t))))
        memcpy(w->field_ids, a->field_ids, a->ncols * sizeof(int32_t));
    if (!w->where || !w->dir || !w->prefix || !w->pqcols || !w->row || !w->keycols ||
        !w->keyidx || !w->keypos || (a->field_ids && !w->field_ids)) {
        zx_seterr(err, errlen, "%s: out of memory", a->where);
        zx_lw_free(w);
        return NULL;
    }
    w->a.field_ids = w->field_ids;
    if (!w->a.file_rows)
        w->a.file_rows = 262144;
    for (size_t i = 0; i < a->ncols; i++) {
        w->pqcols[i] = a->cols[i];
        if (w->pqcols[i].type == ZX_DT_JSON)
            w->pqcols[i].type = ZX_DT_TEXT;    /* no JSON type in the lake formats */
    }
    for (size_t k = 0; k < a->nkeys; k++) {
        size_t i;
        for (i = 0; i < a->ncols && strcmp(a->cols[i].name, a->key_cols[k]); i++)
            ;
        if (i == a->ncols) {
            zx_seterr(err, errlen, "%s: key column %s is not in the result", w->where,
                      a->key_cols[k]);
            zx_lw_free(w);
            return NULL;
        }
        w->keycols[k] = a->cols[i];
        w->keyidx[k] = i;
        w->keypos[k] = k;
    }
    return w;
}

size_t zx_lw_changed(const zx_lake_writer *w)
{
    return w->changed.n;
}

zx_dtype zx_lw_key_type(const zx_lake_writer *w)
{
    return w->a.nkeys ? w->keycols[0].type : ZX_DT_BYTES;
}

/* ---- data files ---------------------------------------------------------- */

static void file_drop(zx_lake_writer *w)
{
    zx_pq_free(w->pq);
    w->pq = NULL;
    zx_lake_out_abort(w->out);
    w->out = NULL;
    zx_side_abort(w->sd);
    w->sd = NULL;
}

static int file_start(zx_lake_writer *w, char *err, size_t errlen)
{
    snprintf(w->cur, sizeof(w->cur), "%s%s-%05u.parquet", w->dir, w->prefix, w->seq++);
    if (w->nwritten == w->capwritten) {
        size_t c = w->capwritten ? w->capwritten * 2 : 16;
        char **nw = realloc(w->written, c * sizeof(*nw));
        if (!nw)
            return oom(w, err, errlen);
        w->written = nw;
        w->capwritten = c;
    }
    if (!(w->written[w->nwritten] = strdup(w->cur)))
        return oom(w, err, errlen);
    w->nwritten++;
    if (!(w->out = zx_lake_create(w->a.lake, w->cur, err, errlen)))
        return -1;
    if (w->a.side && !(w->sd = zx_side_open(w->a.lake, w->cur, err, errlen)))
        return -1;
    zx_pq_opts po = {.codec = w->a.codec, .sink = zx_lake_sink, .sink_ctx = w->out,
                     .field_ids = w->field_ids};
    char e[512];
    if (zx_pq_open(-1, w->pqcols, w->a.ncols, &po, &w->pq, e, sizeof(e)) < 0)
        return zx_seterr(err, errlen, "%s: %s: %s", w->where, w->cur, e);
    return 0;
}

int zx_lw_flush(zx_lake_writer *w, char *err, size_t errlen)
{
    if (!w->pq)
        return 0;
    char e[512];
    uint64_t size = 0;
    if (zx_pq_finish(w->pq, NULL, e, sizeof(e)) < 0) {
        zx_seterr(err, errlen, "%s: %s: %s", w->where, w->cur, e);
        file_drop(w);
        return -1;
    }
    w->nulled_done += zx_pq_nulled(w->pq);
    int rc = zx_lake_out_commit(w->out, &size, err, errlen);
    w->out = NULL;
    if (rc == 0 && w->sd) {
        rc = zx_side_commit(w->sd, err, errlen);
        w->sd = NULL;
    }
    if (rc == 0 && w->a.on_file)
        rc = w->a.on_file(w->a.ctx, w->cur, size, zx_pq_rows(w->pq), w->pq, err, errlen);
    file_drop(w);
    return rc;
}

/* Note the values the writer nulled (misfits), the first one by name. */
static void pq_note(zx_lake_writer *w, const zx_rowset *rs, uint64_t first)
{
    zx_dest_stats *st = w->a.stats;
    if (!st)
        return;
    st->nulled = w->nulled_done + zx_pq_nulled(w->pq);
    size_t col;
    uint64_t row;
    if (st->misfit_col[0] || !zx_pq_first_misfit(w->pq, &col, &row) || row < first ||
        col >= w->a.ncols || row - first >= rs->nrows)
        return;
    zx_rowset_row(rs, (uint32_t)(row - first), w->row);
    zx_dest_misfit(st, w->a.cols[col].name, &w->row[col]);
}

/* Note the first key column's value of a row (vals, at index idx).  0 or
 * -1 (out of memory). */
static int note_key(zx_lake_writer *w, const zx_value *vals, size_t idx)
{
    zx_dtype t = w->keycols[0].type;
    if (t != ZX_DT_INT64 && t != ZX_DT_TEXT)
        return 0;
    zx_dc_target tg = zx_dc_target_file(&w->keycols[0]);
    zx_dc_out o;
    if (zx_dc_convert(&tg, &vals[idx], &w->ks[1], &o) != 1 || o.null)
        return 0;
    if (w->nkv == w->capkv) {
        size_t c = w->capkv ? w->capkv * 2 : 1024;
        if (t == ZX_DT_INT64) {
            int64_t *n = realloc(w->kvi, c * sizeof(*n));
            if (!n)
                return -1;
            w->kvi = n;
        } else {
            char **n = realloc(w->kvs, c * sizeof(*n));
            if (!n)
                return -1;
            w->kvs = n;
        }
        w->capkv = c;
    }
    if (t == ZX_DT_INT64)
        w->kvi[w->nkv++] = o.i;
    else if (!(w->kvs[w->nkv++] = strndup(o.s, o.len)))
        return -1;
    w->sorted = 0;
    return 0;
}

/* One part of a batch that fits in the open (or a new) data file. */
static int put_part(zx_lake_writer *w, const zx_rowset *rs, char *err, size_t errlen)
{
    if (!rs->nrows)
        return 0;
    if (!w->pq && file_start(w, err, errlen) < 0)
        return -1;
    if (w->a.side) {
        if (w->khcap < rs->nrows) {
            unsigned char *k = realloc(w->khs, (size_t)rs->nrows * ZX_LAKE_KEY_LEN);
            if (!k)
                return oom(w, err, errlen);
            w->khs = k;
            w->khcap = rs->nrows;
        }
        for (uint32_t i = 0; i < rs->nrows; i++) {
            unsigned char *kh = w->khs + (size_t)i * ZX_LAKE_KEY_LEN;
            zx_rowset_row(rs, i, w->row);
            if (zx_lake_key_hash(w->keycols, w->keyidx, w->a.nkeys, w->row, w->ks, kh) < 0)
                return oom(w, err, errlen);
            if (w->a.track && !w->rewriting && (zx_keyset_add(&w->changed, kh) < 0 ||
                                                note_key(w, w->row, w->keyidx[0]) < 0))
                return oom(w, err, errlen);
        }
        if (zx_side_add(w->sd, rs, w->khs, err, errlen) < 0)
            return -1;
    }
    uint64_t first = zx_pq_rows(w->pq);
    char e[512];
    if (zx_pq_write(w->pq, rs, e, sizeof(e)) < 0)
        return zx_seterr(err, errlen, "%s: %s: %s", w->where, w->cur, e);
    pq_note(w, rs, first);
    if (zx_pq_rows(w->pq) >= w->a.file_rows)
        return zx_lw_flush(w, err, errlen);
    return 0;
}

/* Copy rows [a, a+n) of rs into w->part (the run's columns). */
static int cut(zx_lake_writer *w, const zx_rowset *rs, uint32_t a, uint32_t n)
{
    zx_rowset_reset(&w->part);
    for (size_t i = 0; i < w->a.ncols; i++)
        if (zx_rowset_column(&w->part, w->a.cols[i].name, strlen(w->a.cols[i].name),
                             ZX_T_NULL) < 0)
            return -1;
    for (uint32_t r = a; r < a + n; r++) {
        zx_rowset_row(rs, r, w->row);
        if (zx_rowset_begin_row(&w->part) < 0)
            return -1;
        for (size_t i = 0; i < w->a.ncols; i++) {
            zx_value v = w->row[i];
            if (v.type == ZX_T_NULL)
                continue;
            if ((v.s && !(v.s = zx_rowset_strdup(&w->part, v.s, v.len))) ||
                zx_rowset_add(&w->part, (uint32_t)i, &v) < 0)
                return -1;
        }
        zx_rowset_end_row(&w->part);
    }
    return 0;
}

/* Rows rs into data files of file_rows rows at most: a batch that crosses
 * a file's end is cut there. */
static int put_rows(zx_lake_writer *w, const zx_rowset *rs, char *err, size_t errlen)
{
    uint32_t a = 0;
    while (a < rs->nrows) {
        uint64_t room = w->a.file_rows - (w->pq ? zx_pq_rows(w->pq) : 0);
        uint32_t n = rs->nrows - a;
        if (n > room)
            n = (uint32_t)room;
        if (a == 0 && n == rs->nrows) {
            if (put_part(w, rs, err, errlen) < 0)
                return -1;
        } else if (cut(w, rs, a, n) < 0) {
            return oom(w, err, errlen);
        } else if (put_part(w, &w->part, err, errlen) < 0) {
            return -1;
        }
        a += n;
    }
    return 0;
}

int zx_lw_write(zx_lake_writer *w, const zx_rowset *rs, char *err, size_t errlen)
{
    if (rs->ncols != w->a.ncols)
        return zx_seterr(err, errlen, "%s: a batch of %zu columns for a run of %zu", w->where,
                         (size_t)rs->ncols, w->a.ncols);
    return put_rows(w, rs, err, errlen);
}

int zx_lw_delete(zx_lake_writer *w, const zx_rowset *keys, char *err, size_t errlen)
{
    if (!w->a.track || keys->ncols != w->a.nkeys || w->a.nkeys > 64)
        return zx_seterr(err, errlen, "%s: deletes need the key columns", w->where);
    zx_value kv[64];
    for (uint32_t i = 0; i < keys->nrows; i++) {
        unsigned char kh[ZX_LAKE_KEY_LEN];
        zx_rowset_row(keys, i, kv);
        if (zx_lake_key_hash(w->keycols, w->keypos, w->a.nkeys, kv, w->ks, kh) < 0 ||
            zx_keyset_add(&w->changed, kh) < 0 || note_key(w, kv, 0) < 0)
            return oom(w, err, errlen);
    }
    return 0;
}

/* ---- copy-on-write ------------------------------------------------------- */

int zx_lw_touches(zx_lake_writer *w, const char *name, int *hit, char *err, size_t errlen)
{
    *hit = 0;
    if (!w->changed.n)
        return 0;
    zx_buf keys = {0};
    int g = zx_side_keys(w->a.lake, name, &keys, err, errlen);
    for (size_t k = 0; g == 0 && k + ZX_LAKE_KEY_LEN <= keys.len && !*hit; k += ZX_LAKE_KEY_LEN)
        *hit = zx_keyset_has(&w->changed, (const unsigned char *)keys.p + k);
    zx_buf_free(&keys);
    return g;
}

/* One batch of a rewritten file's rows (zx's copy): those whose key the
 * run did not write nor delete go into the run's files, mapped by column
 * name onto the run's columns (a column the copy lacks: NULL). */
static int keep_rows(void *ctx, const zx_rowset *rs)
{
    zx_lake_writer *w = ctx;
    size_t nc = w->a.ncols;
    if (w->srccap < (size_t)rs->ncols + nc) {
        size_t c = (size_t)rs->ncols + nc + 8;
        zx_value *s = realloc(w->src, c * sizeof(*s));
        if (!s)
            return -1;
        w->src = s;
        w->srccap = c;
    }
    int64_t *map = (int64_t *)malloc((nc ? nc : 1) * sizeof(int64_t));
    if (!map)
        return -1;
    for (size_t i = 0; i < nc; i++)
        map[i] = zx_rowset_find_column(rs, w->a.cols[i].name, strlen(w->a.cols[i].name));
    zx_rowset_reset(&w->rw);
    int rc = 0;
    for (size_t i = 0; i < nc && rc == 0; i++)
        if (zx_rowset_column(&w->rw, w->a.cols[i].name, strlen(w->a.cols[i].name),
                             ZX_T_NULL) < 0)
            rc = -1;
    for (uint32_t r = 0; r < rs->nrows && rc == 0; r++) {
        zx_rowset_row(rs, r, w->src);
        for (size_t i = 0; i < nc; i++) {
            if (map[i] >= 0)
                w->row[i] = w->src[map[i]];
            else
                memset(&w->row[i], 0, sizeof(w->row[i]));
        }
        unsigned char kh[ZX_LAKE_KEY_LEN];
        if (zx_lake_key_hash(w->keycols, w->keyidx, w->a.nkeys, w->row, w->ks, kh) < 0) {
            rc = -1;
            break;
        }
        if (zx_keyset_has(&w->changed, kh))
            continue;
        if (zx_rowset_begin_row(&w->rw) < 0) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < nc && rc == 0; i++) {
            zx_value v = w->row[i];
            if (v.type == ZX_T_NULL)
                continue;
            if ((v.s && !(v.s = zx_rowset_strdup(&w->rw, v.s, v.len))) ||
                zx_rowset_add(&w->rw, (uint32_t)i, &v) < 0)
                rc = -1;
        }
        zx_rowset_end_row(&w->rw);
    }
    free(map);
    if (rc < 0)
        return -1;
    char e[1024];
    if (put_rows(w, &w->rw, e, sizeof(e)) < 0) {
        zx_error("event=lake_rewrite_failed where=\"%s\" error=\"%s\"", w->where, e);
        return -1;
    }
    return 0;
}

int zx_lw_rewrite(zx_lake_writer *w, const char *name, char *err, size_t errlen)
{
    char e[1024] = "";
    w->rewriting = 1;
    int g = zx_side_rows(w->a.lake, name, keep_rows, w, e, sizeof(e));
    w->rewriting = 0;
    if (g < 0)
        return zx_seterr(err, errlen, "%s: cannot rewrite data file %s: %s", w->where, name,
                         e[0] ? e : "see the log");
    return g;
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

static void sort_keys(zx_lake_writer *w)
{
    if (w->sorted)
        return;
    if (w->kvi)
        qsort(w->kvi, w->nkv, sizeof(*w->kvi), cmp_i64);
    if (w->kvs)
        qsort(w->kvs, w->nkv, sizeof(*w->kvs), cmp_str);
    w->sorted = 1;
}

int zx_lw_range_hits_int(zx_lake_writer *w, int64_t lo, int64_t hi)
{
    if (zx_lw_key_type(w) != ZX_DT_INT64)
        return 1;
    sort_keys(w);
    size_t l = 0, h = w->nkv;             /* the first value >= lo */
    while (l < h) {
        size_t m = l + (h - l) / 2;
        if (w->kvi[m] < lo)
            l = m + 1;
        else
            h = m;
    }
    return l < w->nkv && w->kvi[l] <= hi;
}

int zx_lw_range_hits_text(zx_lake_writer *w, const char *lo, const char *hi)
{
    if (zx_lw_key_type(w) != ZX_DT_TEXT)
        return 1;
    sort_keys(w);
    size_t l = 0, h = w->nkv, hl = strlen(hi);
    while (l < h) {
        size_t m = l + (h - l) / 2;
        if (strcmp(w->kvs[m], lo) < 0)
            l = m + 1;
        else
            h = m;
    }
    return l < w->nkv && (strcmp(w->kvs[l], hi) <= 0 || !strncmp(w->kvs[l], hi, hl));
}

void zx_lw_abort(zx_lake_writer *w)
{
    if (!w)
        return;
    file_drop(w);
    char e[512];
    for (size_t i = 0; i < w->nwritten; i++) {
        zx_lake_delete(w->a.lake, w->written[i], e, sizeof(e));
        zx_side_delete(w->a.lake, w->written[i], e, sizeof(e));
        free(w->written[i]);
    }
    w->nwritten = 0;
}

void zx_lw_keep(zx_lake_writer *w)
{
    for (size_t i = 0; w && i < w->nwritten; i++)
        free(w->written[i]);
    if (w)
        w->nwritten = 0;
}
