/*
 * fuzz_check.h — the checks shared by the fuzz targets of this folder: an
 * assertion that aborts with a message (so that libFuzzer saves the input),
 * and a comparison of two rowsets row by row as the frame codec sees them.
 * Header-only; it must never be included by zx itself.
 */
#ifndef ZX_FUZZ_CHECK_H
#define ZX_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rowset.h"

/* Aborts with "invariant broken: what" unless ok. */
static inline void fuzz_check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "invariant broken: %s\n", what);
        abort();
    }
}

/* 1 if two values are the same (a NULL-typed value equals an absent one). */
static inline int fuzz_same_value(const zx_value *x, const zx_value *y)
{
    if (x->type != y->type)
        return 0;
    switch (x->type) {
    case ZX_T_NULL:
        return 1;
    case ZX_T_INT:
        return x->u.i == y->u.i;
    case ZX_T_REAL:
        return memcmp(&x->u.d, &y->u.d, sizeof(double)) == 0;
    case ZX_T_BOOL:
        return x->u.b == y->u.b;
    case ZX_T_TIMESTAMP:
        if (x->u.i != y->u.i)
            return 0;
        /* fall through */
    case ZX_T_TEXT:
    case ZX_T_JSON:
        return x->len == y->len && memcmp(x->s, y->s, x->len) == 0;
    default:
        return 0;
    }
}

/* Aborts unless a and b have the same columns (name, type, order) and the
 * same rows as zx_rowset_row sees them (the last of duplicate cells wins, a
 * cell of type NULL counts as absent): what a frame carries of a rowset. */
static inline void fuzz_same_rows(const zx_rowset *a, const zx_rowset *b)
{
    fuzz_check(a->ncols == b->ncols, "column count");
    fuzz_check(a->nrows == b->nrows, "row count");
    for (uint32_t c = 0; c < a->ncols; c++) {
        fuzz_check(a->cols[c].name_len == b->cols[c].name_len &&
                   memcmp(a->cols[c].name, b->cols[c].name, a->cols[c].name_len) == 0,
                   "column name");
        fuzz_check(a->cols[c].type == b->cols[c].type, "column type");
    }
    if (a->ncols == 0)
        return;
    zx_value *ra = calloc(a->ncols, sizeof(*ra));
    zx_value *rb = calloc(a->ncols, sizeof(*rb));
    fuzz_check(ra && rb, "out of memory");
    for (uint32_t r = 0; r < a->nrows; r++) {
        zx_rowset_row(a, r, ra);
        zx_rowset_row(b, r, rb);
        for (uint32_t c = 0; c < a->ncols; c++)
            fuzz_check(fuzz_same_value(&ra[c], &rb[c]), "cell value");
    }
    free(ra);
    free(rb);
}

#endif
