/*
 * test_parquet_batch.c — zx_pq_write's column-at-a-time path
 * (formats/parquet_batch.c) gives the very file the row path gives: the
 * same rowsets written with zx_pq_write and, row by row, with
 * zx_pq_write_row (zx_rowset_row's values) must give equal bytes, equal
 * misfit counts and first misfit, row groups and file statistics.  Rows
 * hold NULLs, missing cells, a column given twice (the last cell wins),
 * empty and long strings, text that is not UTF-8, int64's min and max,
 * NaN, infinities, -0.0, timestamps in and out of range, and cells of
 * another type (converted, or misfits); row groups cut small and large,
 * dictionaries that fall back to PLAIN, one whose fallback makes the
 * buffered bytes jump past the row group's size.  Readers' view of such files:
 * tests/integration/test_parquet_files.py (test_batch_paths_read_back).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/rowset.h"
#include "formats/parquet.h"

static const zx_dcol cols[] = {
    {"id", ZX_DT_INT64, 0, 0},     {"name", ZX_DT_TEXT, 0, 0}, {"amount", ZX_DT_DOUBLE, 0, 0},
    {"ts", ZX_DT_TIMESTAMP, 0, 0}, {"flag", ZX_DT_BOOL, 0, 0}, {"doc", ZX_DT_JSON, 0, 0},
    {"day", ZX_DT_DATE, 0, 0},     {"big", ZX_DT_TEXT, 0, 0},
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

static uint64_t rnd_state = 88172645463325252ull;
static int jumpy;   /* the big column: mostly repeated long values */
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static void add_text(zx_rowset *rs, uint32_t col, const char *s, size_t n)
{
    zx_value v = {.type = ZX_T_TEXT, .len = (uint32_t)n};
    v.s = zx_rowset_strdup(rs, s, n);
    zx_rowset_add(rs, col, &v);
}

/* One row r.  mixed: also cells of other types than the column's. */
static void make_row(zx_rowset *rs, uint64_t r, int mixed)
{
    char b[600];
    zx_rowset_begin_row(rs);
    uint64_t x = rnd();
    /* id: NULL now and then, int64's ends */
    if (x % 17 != 0) {
        int64_t i = x % 29 == 0 ? INT64_MIN : x % 31 == 0 ? INT64_MAX : (int64_t)r;
        zx_value v = {.type = ZX_T_INT, .u.i = i};
        zx_rowset_add(rs, 0, &v);
    }
    /* name: few distinct, empty, NULL; given twice now and then */
    if (x % 13 != 0) {
        int n = x % 11 == 0 ? 0 : snprintf(b, sizeof(b), "user-%u", (unsigned)(r % 50));
        add_text(rs, 1, b, (size_t)n);
        if (x % 19 == 0)
            add_text(rs, 1, "again", 5);
    }
    /* amount: NaN, infinities, -0.0 */
    {
        double d = (double)r * 0.25;
        if (x % 23 == 0)
            d = NAN;
        else if (x % 37 == 0)
            d = -INFINITY;
        else if (x % 41 == 0)
            d = -0.0;
        zx_value v = {.type = ZX_T_REAL, .u.d = d};
        if (x % 7 != 0)
            zx_rowset_add(rs, 2, &v);
    }
    /* ts: in range, and (mixed) out of range or as text */
    {
        zx_value v = {.type = ZX_T_TIMESTAMP, .u.i = 1577836800000000LL + (int64_t)r * 1000};
        if (mixed && x % 43 == 0)
            v.u.i = 253402300800000000LL;              /* year 10000: a misfit */
        if (mixed && x % 47 == 0)
            add_text(rs, 3, "2021-02-03T04:05:06Z", 20);
        else
            zx_rowset_add(rs, 3, &v);
    }
    /* flag */
    if (x % 5 != 0) {
        zx_value v = {.type = ZX_T_BOOL, .u.b = (int)(r % 3 == 0)};
        zx_rowset_add(rs, 4, &v);
    }
    /* doc (JSON) and day (DATE) only in mixed rows: not of the fast types */
    if (mixed && x % 3 == 0) {
        int n = snprintf(b, sizeof(b), "{\"r\": %u}", (unsigned)r);
        zx_value v = {.type = ZX_T_JSON, .len = (uint32_t)n};
        v.s = zx_rowset_strdup(rs, b, (size_t)n);
        zx_rowset_add(rs, 5, &v);
        add_text(rs, 6, "2020-02-29", 10);
    }
    /* big: distinct long strings (the dictionary fills and falls back),
     * text that is not UTF-8, (mixed) an integer into TEXT */
    if (jumpy && r % 4) {
        /* one of 50 long values: its dictionary holds them once, the
         * PLAIN values of a fallback hold every copy */
        int n = snprintf(b, sizeof(b), "%03u-", (unsigned)(r % 50));
        memset(b + n, 'j', 300);
        add_text(rs, 7, b, (size_t)n + 300);
    } else if (x % 9 != 0) {
        size_t n = (size_t)snprintf(b, sizeof(b), "long-%08u-", (unsigned)r);
        size_t extra = (size_t)(x >> 20) % 300;
        memset(b + n, 'q', extra);
        n += extra;
        if (x % 53 == 0)
            b[2] = (char)0xff;                         /* not UTF-8: a misfit */
        if (mixed && x % 59 == 0) {
            zx_value v = {.type = ZX_T_INT, .u.i = (int64_t)r};
            zx_rowset_add(rs, 7, &v);
        } else {
            add_text(rs, 7, b, n);
        }
    }
    zx_rowset_end_row(rs);
}

typedef struct out {
    FILE *f;
    uint64_t nulled, rows;
    uint32_t groups;
    int misfit;
    size_t mcol;
    uint64_t mrow;
    zx_pq_colstats st[NCOLS];
    char *bytes;
    long n;
} out;

static void columns(zx_rowset *rs)
{
    for (size_t c = 0; c < NCOLS; c++)
        zx_rowset_column(rs, cols[c].name, strlen(cols[c].name), ZX_T_NULL);
}

/* Write nbatches batches of `rows` rows (batch k mixed when mixed_every
 * divides k + 1), through zx_pq_write (by_rows 0) or zx_pq_write_row. */
static int write_all(const zx_pq_opts *o, int by_rows, int nbatches, uint32_t rows,
                     int mixed_every, out *res)
{
    memset(res, 0, sizeof(*res));
    rnd_state = 88172645463325252ull;
    res->f = tmpfile();
    if (!res->f)
        return -1;
    zx_pq_writer *w;
    char err[256];
    if (zx_pq_open(fileno(res->f), cols, NCOLS, o, &w, err, sizeof(err)) < 0) {
        printf("open: %s\n", err);
        return -1;
    }
    zx_rowset rs;
    zx_rowset_init(&rs);
    zx_value vals[NCOLS];
    uint64_t r = 0;
    for (int k = 0; k < nbatches; k++) {
        zx_rowset_reset(&rs);
        columns(&rs);
        int mixed = mixed_every && (k + 1) % mixed_every == 0;
        for (uint32_t j = 0; j < rows; j++)
            make_row(&rs, r++, mixed);
        if (!by_rows) {
            if (zx_pq_write(w, &rs, err, sizeof(err)) < 0) {
                printf("write: %s\n", err);
                return -1;
            }
            continue;
        }
        for (uint32_t j = 0; j < rs.nrows; j++) {
            zx_rowset_row(&rs, j, vals);
            if (zx_pq_write_row(w, vals, err, sizeof(err)) < 0) {
                printf("write_row: %s\n", err);
                return -1;
            }
        }
    }
    if (zx_pq_finish(w, NULL, err, sizeof(err)) < 0) {
        printf("finish: %s\n", err);
        return -1;
    }
    res->nulled = zx_pq_nulled(w);
    res->rows = zx_pq_rows(w);
    res->groups = zx_pq_row_groups(w);
    res->misfit = zx_pq_first_misfit(w, &res->mcol, &res->mrow);
    for (size_t c = 0; c < NCOLS; c++)
        zx_pq_col_stats(w, c, &res->st[c]);
    fflush(res->f);
    fseek(res->f, 0, SEEK_END);
    res->n = ftell(res->f);
    rewind(res->f);
    res->bytes = malloc((size_t)res->n);
    if (!res->bytes || fread(res->bytes, 1, (size_t)res->n, res->f) != (size_t)res->n)
        return -1;
    /* the byte-array min/max point into the writer: compare them before
     * freeing it */
    for (size_t c = 0; c < NCOLS; c++) {
        zx_pq_colstats *s = &res->st[c];
        char *mn = s->bmin ? malloc(s->bmin_len + 1) : NULL;
        char *mx = s->bmax ? malloc(s->bmax_len + 1) : NULL;
        if (mn)
            memcpy(mn, s->bmin, s->bmin_len);
        if (mx)
            memcpy(mx, s->bmax, s->bmax_len);
        s->bmin = (const uint8_t *)mn;
        s->bmax = (const uint8_t *)mx;
    }
    zx_pq_free(w);
    zx_rowset_free(&rs);
    fclose(res->f);
    return 0;
}

static int stats_equal(const zx_pq_colstats *a, const zx_pq_colstats *b)
{
    if (a->values != b->values || a->nulls != b->nulls || a->nans != b->nans ||
        a->compressed_bytes != b->compressed_bytes || a->has_minmax != b->has_minmax ||
        a->imin != b->imin || a->imax != b->imax || a->bmin_len != b->bmin_len ||
        a->bmax_len != b->bmax_len)
        return 0;
    if (memcmp(&a->dmin, &b->dmin, 8) || memcmp(&a->dmax, &b->dmax, 8))
        return 0;
    if ((a->bmin == NULL) != (b->bmin == NULL) || (a->bmax == NULL) != (b->bmax == NULL))
        return 0;
    if (a->bmin && memcmp(a->bmin, b->bmin, a->bmin_len))
        return 0;
    if (a->bmax && memcmp(a->bmax, b->bmax, a->bmax_len))
        return 0;
    return 1;
}

static void free_out(out *o)
{
    free(o->bytes);
    for (size_t c = 0; c < NCOLS; c++) {
        free((void *)o->st[c].bmin);
        free((void *)o->st[c].bmax);
    }
}

static void same_file(const char *what, const zx_pq_opts *o, int nbatches, uint32_t rows,
                      int mixed_every)
{
    out a, b;
    int ra = write_all(o, 0, nbatches, rows, mixed_every, &a);
    int rb = write_all(o, 1, nbatches, rows, mixed_every, &b);
    CHECK(ra == 0 && rb == 0);
    if (ra == 0 && rb == 0) {
        int same = a.n == b.n && !memcmp(a.bytes, b.bytes, (size_t)a.n);
        if (!same)
            printf("%s: files differ (%ld and %ld bytes)\n", what, a.n, b.n);
        CHECK(same);
        CHECK(a.rows == (uint64_t)nbatches * rows && a.rows == b.rows);
        CHECK(a.groups == b.groups && a.nulled == b.nulled);
        CHECK(a.misfit == b.misfit && a.mcol == b.mcol && a.mrow == b.mrow);
        for (size_t c = 0; c < NCOLS; c++)
            CHECK(stats_equal(&a.st[c], &b.st[c]));
        if (mixed_every)
            CHECK(a.nulled > 0 && a.misfit);
    }
    free_out(&a);
    free_out(&b);
}

int main(void)
{
    zx_pq_opts o = {.codec = ZX_PQ_NONE};
    /* one row group: every all-own-type batch goes a column at a time */
    same_file("one group", &o, 6, 3000, 0);
    same_file("one group, mixed batches", &o, 6, 3000, 2);
    /* row groups cut small: slices near a cut go row by row */
    o.row_group_bytes = 4096;
    o.page_bytes = 1024;
    same_file("4 KiB groups", &o, 4, 2000, 3);
    o.row_group_bytes = 60000;
    same_file("60 KB groups", &o, 5, 5000, 0);
    o.row_group_bytes = 1u << 20;
    o.page_bytes = 0;
    same_file("1 MiB groups (dictionary fallback inside)", &o, 8, 20000, 4);
    /* single-row and odd-sized batches, zstd */
    o.codec = ZX_PQ_ZSTD;
    o.row_group_bytes = 0;
    same_file("1-row batches", &o, 300, 1, 7);
    same_file("odd batches", &o, 9, 1237, 5);
    /* the big column's dictionary fills well inside a row group and its
     * fallback to PLAIN makes the buffered bytes jump past the row
     * group's size: the cut must fall where the row path makes it */
    jumpy = 1;
    o.codec = ZX_PQ_NONE;
    o.row_group_bytes = 4u << 20;
    same_file("a fallback's jump past the row group size", &o, 10, 6000, 0);
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("test_parquet_batch: all checks passed\n");
    return failures != 0;
}
