/*
 * lake_writer.c — a lake run's data files, their copies, and the
 * copy-on-write of upsert and mirror (lake_writer.h).
 */
#include "workers/destinations/lake/lake_writer.h"

#include <ctype.h>
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

#define SLOTS_MAX 32            /* partitions with a file open at once */

/* One partition's open data file. */
typedef struct lw_slot {
    zx_buf key;                 /* its partition values, encoded */
    zx_pval pv[ZX_PART_MAX];    /* their values (strings into key) */
    zx_lake_out *out;
    zx_pq_writer *pq;
    zx_side *sd;
    char cur[600];
    uint64_t used;              /* when it last took rows (LRU) */
} lw_slot;

struct zx_lake_writer {
    zx_lw_args a;
    char *where, *dir, *prefix;
    zx_dcol *pqcols;            /* the data files' columns */
    size_t *pqsrc, npq;         /* data file column i = run column pqsrc[i] */
    int32_t *field_ids;         /* the run's (ncols) */
    int32_t *pqids;             /* the data files' (npq) */
    zx_dcol *keycols;
    size_t *keyidx, *keypos;
    zx_part parts[ZX_PART_MAX];
    size_t part_src[ZX_PART_MAX];

    lw_slot slots[SLOTS_MAX];
    size_t nslots;
    uint64_t tick;
    uint32_t seq;
    uint64_t nulled_done;
    char **written;               /* data files written (abort) */
    size_t nwritten, capwritten;

    zx_keyset changed;
    int64_t *kvi;
    char **kvs;
    size_t nkv, capkv;
    int sorted;

    zx_buf ks[2], pscratch, pkey;
    unsigned char *khs;
    size_t khcap;
    uint32_t *rowslot;
    size_t rowslotcap;
    uint32_t *pick;
    zx_value *row, *src;
    size_t srccap;
    zx_rowset rw, part, cutrs, proj;
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

static void slot_drop(lw_slot *sl)
{
    zx_pq_free(sl->pq);
    sl->pq = NULL;
    zx_lake_out_abort(sl->out);
    sl->out = NULL;
    zx_side_abort(sl->sd);
    sl->sd = NULL;
}

void zx_lw_free(zx_lake_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->nslots; i++) {
        slot_drop(&w->slots[i]);
        zx_buf_free(&w->slots[i].key);
    }
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
    zx_buf_free(&w->pscratch);
    zx_buf_free(&w->pkey);
    free(w->khs);
    free(w->rowslot);
    free(w->pick);
    free(w->row);
    free(w->src);
    zx_rowset_free(&w->rw);
    zx_rowset_free(&w->part);
    zx_rowset_free(&w->cutrs);
    zx_rowset_free(&w->proj);
    free(w->pqcols);
    free(w->pqsrc);
    free(w->field_ids);
    free(w->pqids);
    free(w->keycols);
    free(w->keyidx);
    free(w->keypos);
    free(w->where);
    free(w->dir);
    free(w->prefix);
    free(w);
}

/* The index of column name in the run's columns, or ncols. */
static size_t col_index(const zx_lw_args *a, const char *name)
{
    size_t i;
    for (i = 0; i < a->ncols && strcmp(a->cols[i].name, name); i++)
        ;
    return i;
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
    zx_rowset_init(&w->cutrs);
    zx_rowset_init(&w->proj);
    size_t n = a->ncols ? a->ncols : 1, nk = a->nkeys ? a->nkeys : 1;
    w->where = strdup(a->where ? a->where : "lake");
    w->dir = strdup(a->dir ? a->dir : "");
    w->prefix = strdup(a->prefix ? a->prefix : "zx");
    w->pqcols = calloc(n, sizeof(*w->pqcols));
    w->pqsrc = calloc(n, sizeof(*w->pqsrc));
    w->row = calloc(n, sizeof(*w->row));
    w->keycols = calloc(nk, sizeof(*w->keycols));
    w->keyidx = calloc(nk, sizeof(size_t));
    w->keypos = calloc(nk, sizeof(size_t));
    if (a->field_ids) {
        w->field_ids = calloc(n, sizeof(int32_t));
        w->pqids = calloc(n, sizeof(int32_t));
        if (w->field_ids)
            memcpy(w->field_ids, a->field_ids, a->ncols * sizeof(int32_t));
    }
    if (!w->where || !w->dir || !w->prefix || !w->pqcols || !w->pqsrc || !w->row ||
        !w->keycols || !w->keyidx || !w->keypos ||
        (a->field_ids && (!w->field_ids || !w->pqids)) || a->nparts > ZX_PART_MAX) {
        zx_seterr(err, errlen, "%s: out of memory", a->where);
        zx_lw_free(w);
        return NULL;
    }
    w->a.field_ids = w->field_ids;
    if (!w->a.file_rows)
        w->a.file_rows = 262144;
    for (size_t k = 0; k < a->nparts; k++) {
        w->parts[k] = a->parts[k];
        w->part_src[k] = col_index(a, a->parts[k].col);
        if (w->part_src[k] == a->ncols) {
            zx_seterr(err, errlen, "%s: partition column %s is not in the result", w->where,
                      a->parts[k].col);
            zx_lw_free(w);
            return NULL;
        }
        char e[300];
        if (zx_part_check(&w->parts[k], &a->cols[w->part_src[k]], e, sizeof(e)) < 0) {
            zx_seterr(err, errlen, "%s: %s", w->where, e);
            zx_lw_free(w);
            return NULL;
        }
    }
    w->a.parts = w->parts;
    for (size_t i = 0; i < a->ncols; i++) {
        int drop = 0;
        for (size_t k = 0; a->drop_part_cols && k < a->nparts; k++)
            drop |= w->parts[k].t == ZX_PT_IDENTITY && w->part_src[k] == i;
        if (drop)
            continue;
        w->pqcols[w->npq] = a->cols[i];
        if (w->pqcols[w->npq].type == ZX_DT_JSON)
            w->pqcols[w->npq].type = ZX_DT_TEXT;  /* no JSON type in the lake formats */
        if (w->pqids)
            w->pqids[w->npq] = w->field_ids[i];
        w->pqsrc[w->npq++] = i;
    }
    for (size_t k = 0; k < a->nkeys; k++) {
        size_t i = col_index(a, a->key_cols[k]);
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

const zx_dcol *zx_lw_file_cols(const zx_lake_writer *w, size_t *n)
{
    *n = w->npq;
    return w->pqcols;
}

size_t zx_lw_file_col_src(const zx_lake_writer *w, size_t i)
{
    return i < w->npq ? w->pqsrc[i] : 0;
}

size_t zx_lw_open_files(const zx_lake_writer *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->nslots; i++)
        n += w->slots[i].pq != NULL;
    return n;
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

/* The Hive-style folders of slot sl's partition ("region=eu/") into b. */
static int part_dirs(zx_lake_writer *w, const lw_slot *sl, zx_buf *b)
{
    zx_buf_reset(b);
    zx_buf t = {0};
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < w->a.nparts; k++) {
        const zx_dcol *c = &w->a.cols[w->part_src[k]];
        int r = zx_part_text(zx_part_result(&w->parts[k], c), &sl->pv[k], &t);
        if (r < 0 || zx_buf_printf(b, "%s=", w->parts[k].col) < 0) {
            rc = -1;
            break;
        }
        if (r == 1) {
            rc = zx_buf_printf(b, "__HIVE_DEFAULT_PARTITION__/") < 0 ? -1 : 0;
            continue;
        }
        for (size_t i = 0; rc == 0 && i < t.len; i++) {
            unsigned char ch = (unsigned char)t.p[i];
            if (isalnum(ch) || ch == '_' || ch == '-' || (ch == '.' && t.len > 2))
                rc = zx_buf_put(b, &t.p[i], 1);
            else
                rc = zx_buf_printf(b, "%%%02X", ch) < 0 ? -1 : 0;
        }
        if (rc == 0)
            rc = zx_buf_put(b, "/", 1);
    }
    zx_buf_free(&t);
    return rc < 0 ? -1 : 0;
}

static int slot_start(zx_lake_writer *w, lw_slot *sl, char *err, size_t errlen)
{
    zx_buf pd = {0};
    if (w->a.part_dirs && w->a.nparts && part_dirs(w, sl, &pd) < 0) {
        zx_buf_free(&pd);
        return oom(w, err, errlen);
    }
    if (snprintf(sl->cur, sizeof(sl->cur), "%s%.*s%s-%05u.parquet", w->dir, (int)pd.len,
                 pd.p ? pd.p : "", w->prefix, w->seq++) >= (int)sizeof(sl->cur)) {
        zx_buf_free(&pd);
        return zx_seterr(err, errlen, "%s: a partition's folder name is too long", w->where);
    }
    zx_buf_free(&pd);
    if (w->nwritten == w->capwritten) {
        size_t c = w->capwritten ? w->capwritten * 2 : 16;
        char **nw = realloc(w->written, c * sizeof(*nw));
        if (!nw)
            return oom(w, err, errlen);
        w->written = nw;
        w->capwritten = c;
    }
    if (!(w->written[w->nwritten] = strdup(sl->cur)))
        return oom(w, err, errlen);
    w->nwritten++;
    if (!(sl->out = zx_lake_create(w->a.lake, sl->cur, err, errlen)))
        return -1;
    if (w->a.side && !(sl->sd = zx_side_open(w->a.lake, sl->cur, !w->a.keys_only,
                                                 err, errlen)))
        return -1;
    /* a partitioned run may have many files open: smaller row groups */
    zx_pq_opts po = {.codec = w->a.codec, .sink = zx_lake_sink, .sink_ctx = sl->out,
                     .field_ids = w->pqids, .row_group_bytes = w->a.nparts ? (16u << 20) : 0};
    char e[512];
    if (zx_pq_open(-1, w->pqcols, w->npq, &po, &sl->pq, e, sizeof(e)) < 0)
        return zx_seterr(err, errlen, "%s: %s: %s", w->where, sl->cur, e);
    return 0;
}

/* Finish slot sl's open file, if any (on_file is called). */
static int slot_finish(zx_lake_writer *w, lw_slot *sl, char *err, size_t errlen)
{
    if (!sl->pq)
        return 0;
    char e[512];
    uint64_t size = 0;
    if (zx_pq_finish(sl->pq, NULL, e, sizeof(e)) < 0) {
        zx_seterr(err, errlen, "%s: %s: %s", w->where, sl->cur, e);
        slot_drop(sl);
        return -1;
    }
    w->nulled_done += zx_pq_nulled(sl->pq);
    int rc = zx_lake_out_commit(sl->out, &size, err, errlen);
    sl->out = NULL;
    if (rc == 0 && sl->sd) {
        rc = zx_side_commit(sl->sd, err, errlen);
        sl->sd = NULL;
    }
    if (rc == 0 && w->a.on_file)
        rc = w->a.on_file(w->a.ctx, sl->cur, size, zx_pq_rows(sl->pq), sl->pq, sl->pv, err,
                          errlen);
    slot_drop(sl);
    return rc;
}

int zx_lw_flush(zx_lake_writer *w, char *err, size_t errlen)
{
    for (size_t i = 0; i < w->nslots; i++)
        if (slot_finish(w, &w->slots[i], err, errlen) < 0)
            return -1;
    return 0;
}

/* Note the values the writer of sl nulled (misfits), the first one by
 * name (rs: the data file's rows just written, from the writer's row
 * first). */
static void pq_note(zx_lake_writer *w, lw_slot *sl, const zx_rowset *rs, uint64_t first)
{
    zx_dest_stats *st = w->a.stats;
    if (!st)
        return;
    uint64_t open = 0;
    for (size_t i = 0; i < w->nslots; i++)
        if (w->slots[i].pq)
            open += zx_pq_nulled(w->slots[i].pq);
    st->nulled = w->nulled_done + open;
    size_t col;
    uint64_t row;
    if (st->misfit_col[0] || !zx_pq_first_misfit(sl->pq, &col, &row) || row < first ||
        col >= w->npq || row - first >= rs->nrows)
        return;
    zx_rowset_row(rs, (uint32_t)(row - first), w->row);
    zx_dest_misfit(st, w->pqcols[col].name, &w->row[col]);
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

/* Rows idx[0..n) of rs (or rows a..a+n when idx is NULL), columns cols
 * (ncols, src[i]: rs's column of out's column i; NULL: the same), copied
 * into out.  0 or -1 (out of memory). */
static int copy_rows(zx_lake_writer *w, const zx_rowset *rs, const uint32_t *idx, uint32_t a,
                     uint32_t n, const zx_dcol *cols, size_t ncols, const size_t *src,
                     zx_rowset *out)
{
    zx_rowset_reset(out);
    for (size_t i = 0; i < ncols; i++)
        if (zx_rowset_column(out, cols[i].name, strlen(cols[i].name), ZX_T_NULL) < 0)
            return -1;
    for (uint32_t k = 0; k < n; k++) {
        zx_rowset_row(rs, idx ? idx[k] : a + k, w->row);
        if (zx_rowset_begin_row(out) < 0)
            return -1;
        for (size_t i = 0; i < ncols; i++) {
            zx_value v = w->row[src ? src[i] : i];
            if (v.type == ZX_T_NULL)
                continue;
            if ((v.s && !(v.s = zx_rowset_strdup(out, v.s, v.len))) ||
                zx_rowset_add(out, (uint32_t)i, &v) < 0)
                return -1;
        }
        zx_rowset_end_row(out);
    }
    return 0;
}

/* Rows rs (the run's columns) that fit in slot sl's open (or a new) file. */
static int put_piece(zx_lake_writer *w, lw_slot *sl, const zx_rowset *rs, char *err,
                     size_t errlen)
{
    if (!rs->nrows)
        return 0;
    if (!sl->pq && slot_start(w, sl, err, errlen) < 0)
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
            if (w->a.track && !w->a.fresh && !w->rewriting &&
                (zx_keyset_add(&w->changed, kh) < 0 ||
                 note_key(w, w->row, w->keyidx[0]) < 0))
                return oom(w, err, errlen);
        }
        if (zx_side_add(sl->sd, rs, w->khs, err, errlen) < 0)
            return -1;
    }
    const zx_rowset *frs = rs;
    if (w->npq != w->a.ncols) {          /* the partition columns left out */
        if (copy_rows(w, rs, NULL, 0, rs->nrows, w->pqcols, w->npq, w->pqsrc, &w->proj) < 0)
            return oom(w, err, errlen);
        frs = &w->proj;
    }
    uint64_t first = zx_pq_rows(sl->pq);
    char e[512];
    if (zx_pq_write(sl->pq, frs, e, sizeof(e)) < 0)
        return zx_seterr(err, errlen, "%s: %s: %s", w->where, sl->cur, e);
    pq_note(w, sl, frs, first);
    if (zx_pq_rows(sl->pq) >= w->a.file_rows)
        return slot_finish(w, sl, err, errlen);
    return 0;
}

/* Rows rs of one partition into slot sl's files, of file_rows rows at
 * most: a batch that crosses a file's end is cut there. */
static int put_slot(zx_lake_writer *w, lw_slot *sl, const zx_rowset *rs, char *err,
                    size_t errlen)
{
    sl->used = ++w->tick;
    uint32_t a = 0;
    while (a < rs->nrows) {
        uint64_t room = w->a.file_rows - (sl->pq ? zx_pq_rows(sl->pq) : 0);
        uint32_t n = rs->nrows - a;
        if (n > room)
            n = (uint32_t)room;
        if (a == 0 && n == rs->nrows) {
            if (put_piece(w, sl, rs, err, errlen) < 0)
                return -1;
        } else if (copy_rows(w, rs, NULL, a, n, w->a.cols, w->a.ncols, NULL, &w->part) < 0) {
            return oom(w, err, errlen);
        } else if (put_piece(w, sl, &w->part, err, errlen) < 0) {
            return -1;
        }
        a += n;
    }
    return 0;
}

/* The partition key of row vals into w->pkey (encoded) and pv.  0 or -1. */
static int part_key(zx_lake_writer *w, const zx_value *vals, zx_pval *pv)
{
    zx_buf_reset(&w->pkey);
    for (size_t k = 0; k < w->a.nparts; k++) {
        const zx_dcol *c = &w->a.cols[w->part_src[k]];
        if (zx_part_value(&w->parts[k], c, &vals[w->part_src[k]], &w->pscratch, &pv[k]) < 0)
            return -1;
        unsigned char tag = pv[k].is_null ? 0 : 1;
        if (zx_buf_put(&w->pkey, &tag, 1) < 0)
            return -1;
        if (pv[k].is_null)
            continue;
        if (pv[k].s || zx_part_result(&w->parts[k], c) == ZX_PK_STRING ||
            zx_part_result(&w->parts[k], c) == ZX_PK_BINARY) {
            uint32_t l = (uint32_t)pv[k].len;
            if (zx_buf_put(&w->pkey, &l, 4) < 0 || zx_buf_put(&w->pkey, pv[k].s ? pv[k].s : "",
                                                               pv[k].len) < 0)
                return -1;
        } else if (zx_buf_put(&w->pkey, &pv[k].i, 8) < 0 ||
                   zx_buf_put(&w->pkey, &pv[k].d, 8) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The slot of the partition whose key is in w->pkey, or -1. */
static int slot_find(const zx_lake_writer *w)
{
    for (size_t i = 0; i < w->nslots; i++)
        if (w->slots[i].key.len == w->pkey.len &&
            !memcmp(w->slots[i].key.p, w->pkey.p, w->pkey.len))
            return (int)i;
    return -1;
}

/* Open a slot for the partition whose key is in w->pkey (values pv): a new
 * one, or the least recently used one's, its file finished first.  Its
 * index, or -1 with err. */
static int slot_open(zx_lake_writer *w, const zx_pval *pv, char *err, size_t errlen)
{
    size_t at = w->nslots;
    if (at == SLOTS_MAX) {
        at = 0;
        for (size_t i = 1; i < w->nslots; i++)
            if (w->slots[i].used < w->slots[at].used)
                at = i;
        if (slot_finish(w, &w->slots[at], err, errlen) < 0)
            return -1;
    } else {
        w->nslots++;
    }
    lw_slot *sl = &w->slots[at];
    zx_buf_reset(&sl->key);
    if (zx_buf_put(&sl->key, w->pkey.p ? w->pkey.p : "", w->pkey.len) < 0)
        return oom(w, err, errlen);
    /* the values, their strings pointing into the slot's own key */
    size_t off = 0;
    for (size_t k = 0; k < w->a.nparts; k++) {
        sl->pv[k] = pv[k];
        off++;
        if (pv[k].is_null)
            continue;
        const zx_dcol *c = &w->a.cols[w->part_src[k]];
        zx_pkind kind = zx_part_result(&w->parts[k], c);
        if (pv[k].s || kind == ZX_PK_STRING || kind == ZX_PK_BINARY) {
            sl->pv[k].s = sl->key.p + off + 4;
            off += 4 + pv[k].len;
        } else {
            off += 16;
        }
    }
    sl->used = ++w->tick;
    return (int)at;
}

/* Rows a..b of rs, whose slots are in w->rowslot, into their slots. */
static int put_segment(zx_lake_writer *w, const zx_rowset *rs, uint32_t a, uint32_t b,
                       char *err, size_t errlen)
{
    if (a == 0 && b == rs->nrows) {
        uint32_t r;
        for (r = 1; r < b && w->rowslot[r] == w->rowslot[0]; r++)
            ;
        if (r == b)                       /* one partition: as it is */
            return put_slot(w, &w->slots[w->rowslot[0]], rs, err, errlen);
    }
    for (size_t s = 0; s < w->nslots; s++) {
        uint32_t n = 0;
        for (uint32_t r = a; r < b; r++)
            if (w->rowslot[r] == s)
                w->pick[n++] = r;
        if (!n)
            continue;
        if (copy_rows(w, rs, w->pick, 0, n, w->a.cols, w->a.ncols, NULL, &w->cutrs) < 0)
            return oom(w, err, errlen);
        if (put_slot(w, &w->slots[s], &w->cutrs, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Rows rs (the run's columns, in order) into the files of their
 * partitions.  When a row's partition needs a slot and every slot holds
 * rows of this batch, the rows so far are written first: a slot is never
 * taken over while rows wait for it. */
static int put_rows(zx_lake_writer *w, const zx_rowset *rs, char *err, size_t errlen)
{
    if (!rs->nrows)
        return 0;
    zx_pval pv[ZX_PART_MAX];
    if (!w->a.nparts) {
        if (!w->nslots) {
            w->nslots = 1;
            memset(&w->slots[0].pv, 0, sizeof(w->slots[0].pv));
        }
        return put_slot(w, &w->slots[0], rs, err, errlen);
    }
    if (w->rowslotcap < rs->nrows) {
        uint32_t *x = realloc(w->rowslot, rs->nrows * sizeof(*x));
        if (x)
            w->rowslot = x;
        uint32_t *y = realloc(w->pick, rs->nrows * sizeof(*y));
        if (y)
            w->pick = y;
        if (!x || !y)
            return oom(w, err, errlen);
        w->rowslotcap = rs->nrows;
    }
    uint32_t start = 0;
    size_t in_segment = 0;       /* slots the rows since start use */
    uint32_t seen[SLOTS_MAX] = {0};
    uint32_t segno = 1;
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, w->row);
        if (part_key(w, w->row, pv) < 0)
            return oom(w, err, errlen);
        int sl = slot_find(w);
        if (sl < 0) {
            if (w->nslots == SLOTS_MAX && in_segment == SLOTS_MAX) {
                if (put_segment(w, rs, start, r, err, errlen) < 0)
                    return -1;
                start = r;
                in_segment = 0;
                segno++;
            }
            /* the rows since start must not lose their slot: take one
             * the segment does not use */
            if (w->nslots == SLOTS_MAX)
                for (size_t i = 0; i < w->nslots; i++)
                    if (seen[i] == segno)
                        w->slots[i].used = w->tick + 1 + i;   /* keep it */
            if ((sl = slot_open(w, pv, err, errlen)) < 0)
                return -1;
        }
        if (seen[sl] != segno) {
            seen[sl] = segno;
            in_segment++;
        }
        w->rowslot[r] = (uint32_t)sl;
    }
    return put_segment(w, rs, start, rs->nrows, err, errlen);
}

int zx_lw_write(zx_lake_writer *w, const zx_rowset *rs, char *err, size_t errlen)
{
    if (rs->ncols != w->a.ncols)
        return zx_seterr(err, errlen, "%s: a batch of %zu columns for a run of %zu", w->where,
                         (size_t)rs->ncols, w->a.ncols);
    return put_rows(w, rs, err, errlen);
}

int zx_lw_run_put(zx_lake_writer *w, int running, int already, zx_dest_stats *stats,
                  const char *where, const zx_rowset *rs, int deletes, char *err,
                  size_t errlen)
{
    if (!running)
        return zx_seterr(err, errlen, "%s: %s outside a run", where, deletes ? "delete" : "write");
    if (already)
        return 0;
    if ((deletes ? zx_lw_delete(w, rs, err, errlen) : zx_lw_write(w, rs, err, errlen)) < 0)
        return -1;
    if (deletes)
        stats->rows_deleted += rs->nrows;
    else
        stats->rows_written += rs->nrows;
    return 0;
}

int zx_lw_delete(zx_lake_writer *w, const zx_rowset *keys, char *err, size_t errlen)
{
    if (!w->a.track || keys->ncols != w->a.nkeys || w->a.nkeys > 64)
        return zx_seterr(err, errlen, "%s: deletes need the key columns", w->where);
    if (w->a.fresh)
        return 0;                    /* an empty table holds none of them */
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

int zx_lw_changed_rows(zx_lake_writer *w, const char *name, int64_t **pos, size_t *n,
                       char *err, size_t errlen)
{
    *pos = NULL;
    *n = 0;
    if (!w->changed.n)
        return 0;
    zx_buf keys = {0};
    int g = zx_side_keys(w->a.lake, name, &keys, err, errlen);
    size_t cap = 0;
    for (size_t k = 0; g == 0 && k + ZX_LAKE_KEY_LEN <= keys.len; k += ZX_LAKE_KEY_LEN) {
        if (!zx_keyset_has(&w->changed, (const unsigned char *)keys.p + k))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            int64_t *np = realloc(*pos, cap * sizeof(*np));
            if (!np) {
                g = oom(w, err, errlen);
                break;
            }
            *pos = np;
        }
        (*pos)[(*n)++] = (int64_t)(k / ZX_LAKE_KEY_LEN);
    }
    zx_buf_free(&keys);
    if (g != 0) {
        free(*pos);
        *pos = NULL;
        *n = 0;
    }
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
    for (size_t i = 0; i < w->nslots; i++)
        slot_drop(&w->slots[i]);
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
