/*
 * parquet_batch.c — zx_pq_write: a rowset into the column buffers, a
 * column at a time where that gives the very file the row path gives
 * (parquet.h, parquet_int.h).
 *
 * The rowset is taken in slices of rows.  Each slice's cells are laid in
 * a grid (row x column, NULL where a row has no cell; the last cell of a
 * column wins, as zx_rowset_row has it).  A slice goes a column at a time
 * when every cell in it is of its column's own type (integer into INT64,
 * timestamp within years 0001..9999 into TIMESTAMP, real into DOUBLE,
 * bool into BOOL, text into TEXT: the values zx_dc_convert would pass as
 * they are) and the row group cannot reach its size inside the slice:
 * its buffered bytes plus the most the slice can add (fixed widths; for
 * text 8 bytes + the length of each value, and for a column whose
 * dictionary could fill inside the slice the PLAIN size of its values so
 * far and the slice's, which the fallback brings in) stay below
 * row_group_bytes, so the row path would not have cut the row group there
 * either (at every row of the slice they are at most that sum; a
 * fallback may move them down as well as up).  Any other slice goes row by row (pq_write_row).
 * Either way the buffers, statistics, misfit counts and the first
 * misfit end up as the row path leaves them.
 *
 * It must never write to fd or know how pages are laid out.
 */
#include "formats/parquet.h"

#include <stdio.h>
#include <string.h>

#include "formats/parquet_int.h"

#define PQ_TS_MIN (-62135596800000000LL)   /* 0001-01-01T00:00:00Z (dcell.h) */
#define PQ_TS_MAX 253402300799999999LL     /* 9999-12-31T23:59:59.999999Z */
#define GRID_CELLS 8192u  /* pointers in a slice's grid: its cells stay in cache */

/* The zx type a column takes as it is, or ZX_T__COUNT for none. */
int pq_own_type(zx_dtype t)
{
    switch (t) {
    case ZX_DT_INT64: return ZX_T_INT;
    case ZX_DT_TIMESTAMP: return ZX_T_TIMESTAMP;
    case ZX_DT_DOUBLE: return ZX_T_REAL;
    case ZX_DT_BOOL: return ZX_T_BOOL;
    case ZX_DT_TEXT: return ZX_T_TEXT;
    default: return ZX_T__COUNT;
    }
}

/* Lay rows [r0, r0 + k) of rs in w->grid.  Returns 1 when the slice may
 * go a column at a time (every cell of its column's own type, the row
 * group's size out of reach), else 0. */
static int lay_slice(zx_pq_writer *w, const zx_rowset *rs, uint32_t r0, uint32_t k)
{
    size_t nc = w->ncols;
    const zx_value **g = w->grid;
    memset(g, 0, (size_t)k * nc * sizeof(*g));
    int ok = 1;
    uint64_t most = 0;                 /* bytes the slice may add */
    for (uint32_t j = 0; j < k; j++) {
        const zx_value **row = g + (size_t)j * nc;
        for (uint64_t i = rs->row_start[r0 + j]; i < rs->row_start[r0 + j + 1]; i++) {
            const zx_cell *cell = &rs->cells[i];
            const zx_value *v = &cell->v;
            row[cell->col] = v;
            if (v->type == ZX_T_NULL || !ok)
                continue;
            const pq_col *c = &w->cols[cell->col];
            if (v->type != c->own ||
                (v->type == ZX_T_TIMESTAMP && (v->u.i < PQ_TS_MIN || v->u.i > PQ_TS_MAX))) {
                ok = 0;
            } else if (v->type == ZX_T_TEXT) {
                /* an index and a new entry (8 + length), or the value
                 * (4 + length) */
                most += 8 + (uint64_t)v->len;
                w->cols[cell->col].slice_bytes += 4 + (uint64_t)v->len;
                w->cols[cell->col].slice_cells++;
            } else {
                most += 8;
            }
        }
    }
    for (size_t i = 0; i < nc; i++) {
        pq_col *c = &w->cols[i];
        if (c->dc.type != ZX_DT_TEXT)
            continue;
        /* a dictionary that may fill inside the slice: its fallback
         * brings in the PLAIN values so far and the slice's */
        if (ok && c->dict_on &&
            (c->dict.len + c->slice_bytes > PQ_DICT_MAX_BYTES ||
             (uint64_t)c->ndent + c->slice_cells >= PQ_DICT_MAX_ENTRIES))
            most += c->plain + c->slice_bytes;
        c->slice_bytes = 0;
        c->slice_cells = 0;
    }
    if (!ok)
        return 0;
    uint64_t rows = (uint64_t)w->rg_rows + k;
    return rows < PQ_RG_MAX_ROWS &&
           w->rg_bytes + most + rows * nc / 8 < w->o.row_group_bytes;
}

static inline void set_def(pq_col *c, uint32_t r)
{
    ((uint8_t *)c->defs.p)[r / 8] |= (uint8_t)(1u << (r % 8));
}

/* Column c's values g[j * stride] for j < k (rows r0 + j). */
static int put_fixed64(zx_pq_writer *w, pq_col *c, const zx_value **g, size_t stride,
                       uint32_t k, uint32_t r0)
{
    if (zx_buf_reserve(&c->vals, (size_t)k * 8) < 0)
        return -1;
    char *out = c->vals.p + c->vals.len;
    uint32_t n = 0;
    int dbl = c->dc.type == ZX_DT_DOUBLE;
    for (uint32_t j = 0; j < k; j++) {
        const zx_value *v = g[(size_t)j * stride];
        if (!v || v->type == ZX_T_NULL) {
            c->nulls++;
            continue;
        }
        memcpy(out + (size_t)n * 8, &v->u, 8);
        n++;
        set_def(c, r0 + j);
        if (dbl) {
            pq_stat_f64(c, v->u.d);
        } else {
            pq_stat_i64(c, v->u.i);
        }
    }
    c->vals.len += (size_t)n * 8;
    c->nvals += n;
    c->bytes += (uint64_t)n * 8;
    w->rg_bytes += (uint64_t)n * 8;
    return 0;
}

static int put_bools(zx_pq_writer *w, pq_col *c, const zx_value **g, size_t stride, uint32_t k,
                     uint32_t r0)
{
    if (zx_buf_reserve(&c->vals, (size_t)k / 8 + 1) < 0)
        return -1;
    for (uint32_t j = 0; j < k; j++) {
        const zx_value *v = g[(size_t)j * stride];
        if (!v || v->type == ZX_T_NULL) {
            c->nulls++;
            continue;
        }
        if (c->nvals % 8 == 0) {
            c->vals.p[c->vals.len++] = 0;
            c->bytes++;
            w->rg_bytes++;
        }
        int b = v->u.b != 0;
        if (b)
            ((uint8_t *)c->vals.p)[c->nvals / 8] |= (uint8_t)(1u << (c->nvals % 8));
        pq_stat_i64(c, b);
        c->nvals++;
        set_def(c, r0 + j);
    }
    return 0;
}

#define PF_AHEAD 8      /* values whose dictionary slot is fetched ahead */

/* Text values; a misfit (not UTF-8, too long) is NULL and counted, the
 * first one's row j kept in *mis (if none earlier).  While the dictionary
 * is on, each value's hash is taken PF_AHEAD values early and its slot
 * fetched into the cache meanwhile (the lookups' cost is their misses).
 * 0 or -1. */
static int put_texts(zx_pq_writer *w, pq_col *c, const zx_value **g, size_t stride,
                     uint32_t k, uint32_t r0, int64_t *mis)
{
    uint32_t hs[PF_AHEAD] = {0};
    int ahead = c->dict_on;
    for (uint32_t j = 0; ahead && j < PF_AHEAD && j < k; j++) {
        const zx_value *v = g[(size_t)j * stride];
        if (v && v->type == ZX_T_TEXT) {
            hs[j] = pq_dict_hash((const uint8_t *)(v->s ? v->s : ""), v->s ? v->len : 0);
            pq_dict_prefetch(c, hs[j]);
        }
    }
    for (uint32_t j = 0; j < k; j++) {
        const zx_value *v = g[(size_t)j * stride];
        uint32_t h = hs[j % PF_AHEAD];
        if (ahead && j + PF_AHEAD < k) {
            const zx_value *u = g[(size_t)(j + PF_AHEAD) * stride];
            if (u && u->type == ZX_T_TEXT) {
                uint32_t hu = pq_dict_hash((const uint8_t *)(u->s ? u->s : ""),
                                           u->s ? u->len : 0);
                hs[(j + PF_AHEAD) % PF_AHEAD] = hu;
                pq_dict_prefetch(c, hu);
            }
        }
        if (!v || v->type == ZX_T_NULL) {
            c->nulls++;
            continue;
        }
        const char *s = v->s ? v->s : "";
        size_t n = v->s ? v->len : 0;
        int r = zx_dc_utf8_valid(s, n) ? pq_put_bytes(w, c, s, n, ahead ? &h : NULL) : 1;
        if (r < 0)
            return -1;
        if (r == 1) {
            w->nulled++;
            c->nulls++;
            if (*mis < 0)
                *mis = j;
            continue;
        }
        c->nvals++;
        set_def(c, r0 + j);
    }
    return 0;
}

/* The slice in w->grid (k rows), a column at a time. */
static int put_columns(zx_pq_writer *w, uint32_t k)
{
    size_t nc = w->ncols;
    uint32_t r0 = w->rg_rows;
    int64_t mis_row = -1;
    size_t mis_col = 0;
    for (size_t i = 0; i < nc; i++) {
        pq_col *c = &w->cols[i];
        size_t need = ((size_t)r0 + k + 7) / 8;
        if (c->defs.len < need) {
            if (zx_buf_reserve(&c->defs, need - c->defs.len) < 0)
                return -1;
            memset(c->defs.p + c->defs.len, 0, need - c->defs.len);
            c->defs.len = need;
        }
        const zx_value **g = w->grid + i;
        int r;
        int64_t mis = -1;
        switch (c->dc.type) {
        case ZX_DT_INT64:
        case ZX_DT_TIMESTAMP:
        case ZX_DT_DOUBLE: r = put_fixed64(w, c, g, nc, k, r0); break;
        case ZX_DT_BOOL: r = put_bools(w, c, g, nc, k, r0); break;
        default: r = put_texts(w, c, g, nc, k, r0, &mis); break;   /* TEXT */
        }
        if (r < 0)
            return -1;
        if (mis >= 0 && (mis_row < 0 || mis < mis_row)) {
            mis_row = mis;
            mis_col = i;
        }
    }
    if (mis_row >= 0 && !w->misfit_set) {
        w->misfit_set = 1;
        w->misfit_col = mis_col;
        w->misfit_row = w->rows + (uint64_t)mis_row;
    }
    w->rg_rows += k;
    w->rows += k;
    return 0;
}

int zx_pq_write(zx_pq_writer *w, const zx_rowset *rs, char *err, size_t errlen)
{
    if (rs->ncols != w->ncols) {
        snprintf(err, errlen, "parquet: a batch of %u columns for a file of %zu",
                 (unsigned)rs->ncols, w->ncols);
        return -1;
    }
    if (w->failed) {
        snprintf(err, errlen, "parquet: the writer failed before");
        return -1;
    }
    size_t nc = w->ncols;
    uint32_t slice = (uint32_t)(GRID_CELLS / nc);
    if (slice < 1)
        slice = 1;
    if (slice > rs->nrows)
        slice = rs->nrows;
    if (slice && zx_grow_to(&w->grid, (size_t)slice * nc, &w->grid_cap, sizeof(*w->grid),
                            (size_t)slice * nc) < 0) {
        w->failed = 1;
        snprintf(err, errlen, "parquet: out of memory buffering a row group");
        return -1;
    }
    for (uint32_t r0 = 0; r0 < rs->nrows; r0 += slice) {
        uint32_t k = rs->nrows - r0 < slice ? rs->nrows - r0 : slice;
        if (lay_slice(w, rs, r0, k)) {
            if (put_columns(w, k) < 0) {
                w->failed = 1;
                snprintf(err, errlen, "parquet: out of memory buffering a row group");
                return -1;
            }
            continue;
        }
        for (uint32_t j = 0; j < k; j++)
            if (pq_write_row(w, w->grid + (size_t)j * nc, err, errlen) < 0)
                return -1;
    }
    return 0;
}
