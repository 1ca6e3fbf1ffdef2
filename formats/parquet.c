/*
 * parquet.c — the Parquet writer's front: open, rows into the column
 * buffers of the current row group, finish (parquet.h).
 *
 * A row's cells are converted (common/dcell.h) and appended to each
 * column's buffers; when the buffered bytes reach the row group size,
 * parquet_encode.c writes the row group.  This file must never write to fd
 * itself or know how pages are laid out.
 */
#include "formats/parquet.h"

#include "common/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/parquet_int.h"

int zx_pq_codec_parse(const char *name, zx_pq_codec *out)
{
    if (!name || !strcmp(name, "zstd"))
        *out = ZX_PQ_ZSTD;
    else if (!strcmp(name, "snappy"))
        *out = ZX_PQ_SNAPPY;
    else if (!strcmp(name, "none") || !strcmp(name, "uncompressed"))
        *out = ZX_PQ_NONE;
    else
        return -1;
    return 0;
}

/* Fewest bytes whose two's complement holds +-(10^p - 1). */
static int flba_len_for(int p)
{
    unsigned __int128 v = 1;
    for (int i = 0; i < p; i++)
        v *= 10;
    v -= 1;
    for (int l = 1; l < 16; l++)
        if (v < ((unsigned __int128)1 << (8 * l - 1)))
            return l;
    return 16;
}

static int col_setup(pq_col *c, const zx_dcol *d, char *err, size_t errlen)
{
    if (!d->name || !d->name[0]) {
        snprintf(err, errlen, "parquet: column without a name");
        return -1;
    }
    c->dc = *d;
    c->t = zx_dc_target_file(d);
    c->dc.name = strdup(d->name);
    if (!c->dc.name) {
        snprintf(err, errlen, "parquet: out of memory");
        return -1;
    }
    switch (d->type) {
    case ZX_DT_TEXT:
    case ZX_DT_JSON:
    case ZX_DT_BYTES:
        c->phys = PQ_BYTE_ARRAY;
        c->dict_ok = 1;
        break;
    case ZX_DT_INT64:
    case ZX_DT_TIMESTAMP:
        c->phys = PQ_INT64;
        break;
    case ZX_DT_DOUBLE:
        c->phys = PQ_DOUBLE;
        break;
    case ZX_DT_BOOL:
        c->phys = PQ_BOOLEAN;
        break;
    case ZX_DT_DATE:
        c->phys = PQ_INT32;
        break;
    case ZX_DT_DECIMAL:
        if (d->precision < 1 || d->precision > 38 || d->scale < 0 || d->scale > d->precision) {
            snprintf(err, errlen, "parquet: column %s: decimal(%d,%d) is not supported "
                     "(precision 1..38, scale 0..precision)", d->name, d->precision, d->scale);
            return -1;
        }
        if (d->precision <= 18) {
            c->phys = PQ_INT64;
        } else {
            c->phys = PQ_FLBA;
            c->flba_len = flba_len_for(d->precision);
        }
        break;
    default:
        snprintf(err, errlen, "parquet: column %s: unknown type %d", d->name, (int)d->type);
        return -1;
    }
    c->dict_on = c->dict_ok;
    c->own = pq_own_type(d->type);
    return 0;
}

int zx_pq_open(int fd, const zx_dcol *cols, size_t ncols, const zx_pq_opts *o,
               zx_pq_writer **out, char *err, size_t errlen)
{
    *out = NULL;
    if (ncols < 1 || ncols > 32767) {
        snprintf(err, errlen, "parquet: %zu columns (1..32767 are supported)", ncols);
        return -1;
    }
    zx_pq_writer *w = calloc(1, sizeof(*w));
    if (!w)
        goto oom;
    w->fd = fd;
    if (o)
        w->o = *o;
    if (!w->o.zstd_level)
        w->o.zstd_level = 1;
    if (!w->o.row_group_bytes)
        w->o.row_group_bytes = 128u << 20;
    if (w->o.row_group_bytes < 4096)
        w->o.row_group_bytes = 4096;
    if (!w->o.page_bytes)
        w->o.page_bytes = 1u << 20;
    if (w->o.page_bytes < 1024)
        w->o.page_bytes = 1024;
    if (w->o.page_bytes > (256u << 20))
        w->o.page_bytes = 256u << 20;
    zx_tc_init(&w->tc);
    w->cols = calloc(ncols, sizeof(*w->cols));
    w->rowptrs = calloc(ncols, sizeof(*w->rowptrs));
    if (!w->cols || !w->rowptrs)
        goto oom;
    w->ncols = ncols;
    for (size_t i = 0; i < ncols; i++) {
        if (col_setup(&w->cols[i], &cols[i], err, errlen) < 0)
            goto fail;
        if (w->o.field_ids) {
            if (w->o.field_ids[i] < 1) {
                snprintf(err, errlen, "parquet: column %s: field id %d (ids are >= 1)",
                         cols[i].name, (int)w->o.field_ids[i]);
                goto fail;
            }
            w->cols[i].field_id = w->o.field_ids[i];
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(cols[j].name, cols[i].name)) {
                snprintf(err, errlen, "parquet: column %s appears twice", cols[i].name);
                goto fail;
            }
    }
    w->o.field_ids = NULL;        /* copied into the columns: keep no pointer */
    if (w->o.codec == ZX_PQ_ZSTD) {
        if (!(w->zc = ZSTD_createCCtx()))
            goto oom;
        /* level 1 with a minimum match of 6 bytes, the parameters zstd
         * itself picks for level 1 up to 256 KiB: on pages of 1 MiB it
         * picks 7, which misses the 6-byte repeats of sorted 8-byte
         * values (timestamps, ids) and wrote them nearly twice as large,
         * for no gain in speed */
        size_t r = ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, w->o.zstd_level);
        if (!ZSTD_isError(r) && w->o.zstd_level == 1)
            r = ZSTD_CCtx_setParameter(w->zc, ZSTD_c_minMatch, 6);
        if (ZSTD_isError(r)) {
            snprintf(err, errlen, "parquet: zstd level %d: %s", w->o.zstd_level,
                     ZSTD_getErrorName(r));
            goto fail;
        }
    }
    if (pq_emit(w, "PAR1", 4, err, errlen) < 0 || pq_out_flush(w, err, errlen) < 0)
        goto fail;
    *out = w;
    return 0;
oom:
    snprintf(err, errlen, "parquet: out of memory");
fail:
    zx_pq_free(w);
    return -1;
}

/* ---- one value into a column ----------------------------------------- */

/* The timestamps a file column takes (common/dcell.h: years 0001..9999);
 * a value outside goes through zx_dc_convert, which decides. */
#define PQ_TS_MIN (-62135596800000000LL)   /* 0001-01-01T00:00:00Z */
#define PQ_TS_MAX 253402300799999999LL     /* 9999-12-31T23:59:59.999999Z */

/* Append n bytes to b: one compare on the common path (b keeps room for
 * its NUL as zx_buf_reserve does). */
static inline int buf_add(zx_buf *b, const void *p, size_t n)
{
    if (b->cap - b->len <= n && zx_buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

static inline int put_fixed(zx_pq_writer *w, pq_col *c, const void *p, size_t n)
{
    if (buf_add(&c->vals, p, n) < 0)
        return -1;
    c->bytes += n;
    w->rg_bytes += n;
    return 0;
}

static inline int put_i64(zx_pq_writer *w, pq_col *c, int64_t v)
{
    pq_stat_i64(c, v);
    return put_fixed(w, c, &v, 8);
}

static inline int put_f64(zx_pq_writer *w, pq_col *c, double d)
{
    pq_stat_f64(c, d);
    return put_fixed(w, c, &d, 8);
}

static inline int put_bool(zx_pq_writer *w, pq_col *c, int b)
{
    if (c->nvals % 8 == 0) {
        if (zx_buf_reserve(&c->vals, 1) < 0)
            return -1;
        c->vals.p[c->vals.len++] = 0;
        c->bytes++;
        w->rg_bytes++;
    }
    if (b)
        c->vals.p[c->nvals / 8] |= (uint8_t)(1u << (c->nvals % 8));
    pq_stat_i64(c, b);
    return 0;
}

int pq_put_bytes(zx_pq_writer *w, pq_col *c, const char *s, size_t n, const uint32_t *hash)
{
    if (n > UINT32_MAX - 8)
        return 1;                                /* too long: a misfit */
    c->plain += 4 + (uint64_t)n;
    if (c->dict_on) {
        uint32_t ix;
        uint32_t before = (uint32_t)c->dict.len;
        int r = pq_dict_add(c, (const uint8_t *)s, (uint32_t)n, hash, &ix);
        if (r < 0)
            return -1;
        if (r == 0) {
            if (c->nvals >= c->idx_cap &&
                zx_grow_to(&c->idx, (size_t)c->nvals + 1, &c->idx_cap, sizeof(*c->idx), 1024) < 0)
                return -1;
            c->idx[c->nvals] = ix;
            uint64_t add = 4 + (c->dict.len - before);
            c->bytes += add;
            w->rg_bytes += add;
            return 0;
        }
        uint64_t old = c->bytes;
        if (pq_dict_fallback(c) < 0)
            return -1;
        w->rg_bytes = w->rg_bytes - old + c->bytes;
    }
    if (zx_buf_reserve(&c->vals, 4 + n) < 0 || pq_stats_bytes(c, (const uint8_t *)s, n) < 0)
        return -1;
    uint32_t l = (uint32_t)n;
    memcpy(c->vals.p + c->vals.len, &l, 4);
    if (n)
        memcpy(c->vals.p + c->vals.len + 4, s, n);
    c->vals.len += 4 + n;
    c->bytes += 4 + n;
    w->rg_bytes += 4 + n;
    return 0;
}

/* A value whose type is the column's own, taken without zx_dc_convert
 * where that would give the value as it is: 0 or 1 as put_value, -1 out
 * of memory, 2 when not taken here (the caller converts). */
static inline int put_direct(zx_pq_writer *w, pq_col *c, const zx_value *v)
{
    switch (c->dc.type) {
    case ZX_DT_INT64:
        if (v->type == ZX_T_INT)
            return put_i64(w, c, v->u.i);
        break;
    case ZX_DT_TIMESTAMP:
        if (v->type == ZX_T_TIMESTAMP && v->u.i >= PQ_TS_MIN && v->u.i <= PQ_TS_MAX)
            return put_i64(w, c, v->u.i);
        break;
    case ZX_DT_DOUBLE:
        if (v->type == ZX_T_REAL)
            return put_f64(w, c, v->u.d);
        break;
    case ZX_DT_BOOL:
        if (v->type == ZX_T_BOOL)
            return put_bool(w, c, v->u.b != 0);
        break;
    case ZX_DT_TEXT:
        if (v->type == ZX_T_TEXT && v->s && zx_dc_utf8_valid(v->s, v->len)) {
            int r = pq_put_bytes(w, c, v->s, v->len, NULL);
            if (r == 1)
                w->nulled++;
            return r;
        }
        break;
    default:
        break;
    }
    return 2;
}

/* Append v (NULL: no cell) to column c: 0 (a value), 1 (NULL), -1 (out
 * of memory). */
static int put_value(zx_pq_writer *w, pq_col *c, const zx_value *v)
{
    if (!v || v->type == ZX_T_NULL)
        return 1;
    int r = put_direct(w, c, v);
    if (r != 2)
        return r;
    zx_dc_out fv;
    r = zx_dc_convert(&c->t, v, &w->scratch, &fv);
    if (r < 0)
        return -1;
    if (r == 0) {
        w->nulled++;
        return 1;
    }
    if (fv.null)
        return 1;
    switch (c->dc.type) {
    case ZX_DT_TEXT:
    case ZX_DT_JSON:
    case ZX_DT_BYTES:
        r = pq_put_bytes(w, c, fv.s, fv.len, NULL);
        if (r == 1)
            w->nulled++;
        return r;
    case ZX_DT_INT64:
    case ZX_DT_TIMESTAMP:
        return put_i64(w, c, fv.i);
    case ZX_DT_DATE: {
        int32_t d = (int32_t)fv.i;
        pq_stat_i64(c, d);
        return put_fixed(w, c, &d, 4);
    }
    case ZX_DT_DOUBLE:
        return put_f64(w, c, fv.d);
    case ZX_DT_BOOL:
        return put_bool(w, c, fv.i != 0);
    case ZX_DT_DECIMAL:
        if (c->phys == PQ_INT64) {
            return put_i64(w, c, fv.i);
        } else {
            uint8_t be[16];
            unsigned __int128 u = (unsigned __int128)fv.dec;
            for (int i = 0; i < c->flba_len; i++)
                be[c->flba_len - 1 - i] = (uint8_t)(u >> (8 * i));
            if (!c->has) {
                c->qmin = c->qmax = fv.dec;
                c->has = 1;
            } else if (fv.dec < c->qmin) {
                c->qmin = fv.dec;
            } else if (fv.dec > c->qmax) {
                c->qmax = fv.dec;
            }
            return put_fixed(w, c, be, (size_t)c->flba_len);
        }
    default:
        w->nulled++;
        return 1;
    }
}

int pq_write_row(zx_pq_writer *w, const zx_value *const *vp, char *err, size_t errlen)
{
    if (w->failed) {
        snprintf(err, errlen, "parquet: the writer failed before");
        return -1;
    }
    uint32_t r = w->rg_rows;
    for (size_t i = 0; i < w->ncols; i++) {
        pq_col *c = &w->cols[i];
        if (r % 8 == 0) {
            if (zx_buf_reserve(&c->defs, 1) < 0)
                goto oom;
            c->defs.p[c->defs.len++] = 0;
        }
        uint64_t nulled = w->nulled;
        int k = put_value(w, c, vp[i]);
        if (k < 0)
            goto oom;
        if (k == 0) {
            c->defs.p[r / 8] |= (uint8_t)(1u << (r % 8));
            c->nvals++;
        } else {
            c->nulls++;
            if (w->nulled != nulled && !w->misfit_set) {
                w->misfit_set = 1;
                w->misfit_col = i;
                w->misfit_row = w->rows;
            }
        }
    }
    w->rg_rows++;
    w->rows++;
    if (w->rg_bytes + (uint64_t)w->rg_rows * w->ncols / 8 >= w->o.row_group_bytes ||
        w->rg_rows >= PQ_RG_MAX_ROWS) {
        if (pq_flush_rowgroup(w, err, errlen) < 0) {
            w->failed = 1;
            return -1;
        }
    }
    return 0;
oom:
    w->failed = 1;
    snprintf(err, errlen, "parquet: out of memory buffering a row group");
    return -1;
}

int zx_pq_write_row(zx_pq_writer *w, const zx_value *vals, char *err, size_t errlen)
{
    for (size_t i = 0; i < w->ncols; i++)
        w->rowptrs[i] = &vals[i];
    return pq_write_row(w, w->rowptrs, err, errlen);
}

int zx_pq_finish(zx_pq_writer *w, uint64_t *file_bytes, char *err, size_t errlen)
{
    if (w->failed) {
        snprintf(err, errlen, "parquet: the writer failed before");
        return -1;
    }
    w->failed = 1;                 /* whatever happens, nothing after this */
    if (w->rg_rows && pq_flush_rowgroup(w, err, errlen) < 0)
        return -1;
    pq_meta_footer(&w->tc, w);
    if (w->tc.failed || w->tc.len > UINT32_MAX) {
        snprintf(err, errlen, "parquet: out of memory writing the footer");
        return -1;
    }
    uint32_t flen = (uint32_t)w->tc.len;
    uint8_t tail[8];
    memcpy(tail, &flen, 4);
    memcpy(tail + 4, "PAR1", 4);
    if (pq_emit(w, w->tc.buf, w->tc.len, err, errlen) < 0 ||
        pq_emit(w, tail, 8, err, errlen) < 0 || pq_out_flush(w, err, errlen) < 0)
        return -1;
    if (file_bytes)
        *file_bytes = w->pos;
    return 0;
}

static void col_free(pq_col *c)
{
    free((char *)c->dc.name);
    zx_buf_free(&c->defs);
    zx_buf_free(&c->vals);
    zx_buf_free(&c->dict);
    zx_buf_free(&c->bmin);
    zx_buf_free(&c->bmax);
    free(c->dent);
    free(c->slots);
    free(c->idx);
}

void zx_pq_free(zx_pq_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; w->cols && i < w->ncols; i++)
        col_free(&w->cols[i]);
    for (uint32_t i = 0; i < w->nrgs; i++)
        free(w->rgs[i].chunks);
    free(w->rgs);
    free(w->cols);
    free(w->rowptrs);
    free(w->grid);
    zx_buf_free(&w->out);
    zx_buf_free(&w->page);
    zx_buf_free(&w->cpage);
    zx_buf_free(&w->scratch);
    zx_tc_free(&w->tc);
    ZSTD_freeCCtx(w->zc);
    free(w);
}

uint64_t zx_pq_nulled(const zx_pq_writer *w)
{
    return w ? w->nulled : 0;
}

int zx_pq_first_misfit(const zx_pq_writer *w, size_t *col, uint64_t *row)
{
    if (!w || !w->misfit_set)
        return 0;
    *col = w->misfit_col;
    *row = w->misfit_row;
    return 1;
}

uint64_t zx_pq_rows(const zx_pq_writer *w)
{
    return w ? w->rows : 0;
}

uint32_t zx_pq_row_groups(const zx_pq_writer *w)
{
    return w ? w->nrgs : 0;
}

int zx_pq_col_stats(const zx_pq_writer *w, size_t col, zx_pq_colstats *out)
{
    if (!w || col >= w->ncols)
        return -1;
    const pq_col *c = &w->cols[col];
    const pq_filestats *f = &c->f;
    memset(out, 0, sizeof(*out));
    out->values = f->values;
    out->nulls = f->nulls;
    out->nans = f->nans;
    out->compressed_bytes = f->compressed;
    out->uncompressed_bytes = f->uncompressed;
    if (!f->has)
        return 0;
    switch (c->phys) {
    case PQ_DOUBLE:
        if (f->nans)
            return 0;
        out->dmin = f->dmin == 0 ? -0.0 : f->dmin;
        out->dmax = f->dmax == 0 ? 0.0 : f->dmax;
        break;
    case PQ_FLBA:
        out->bmin = f->bmin;
        out->bmax = f->bmax;
        out->bmin_len = out->bmax_len = (size_t)c->flba_len;
        break;
    case PQ_BYTE_ARRAY:
        if (f->bminlen > PQ_STAT_MAX || f->bmaxlen > PQ_STAT_MAX)
            return 0;
        out->bmin = f->bmin;
        out->bmax = f->bmax;
        out->bmin_len = f->bminlen;
        out->bmax_len = f->bmaxlen;
        break;
    default:                            /* BOOLEAN, INT32, INT64 */
        out->imin = f->imin;
        out->imax = f->imax;
        break;
    }
    out->has_minmax = 1;
    return 0;
}
