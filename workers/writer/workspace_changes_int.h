/*
 * workspace_changes_int.h — the parts of zx_ws_apply_changes (workspace.h)
 * shared by its two files, and nothing else:
 *   workspace_changes.c        the mirror table, one change at a time,
 *                              history, the order of the whole frame
 *   workspace_changes_batch.c  a run of changes without TRUNCATE reduced
 *                              to each key's last change and applied in
 *                              multi-row statements
 */
#ifndef ZX_WRITER_WORKSPACE_CHANGES_INT_H
#define ZX_WRITER_WORKSPACE_CHANGES_INT_H

#include "workers/writer/workspace_int.h"

/* The most changes, and values, in one batched statement (below SQLite's
 * 32766 and Postgres' 65535 parameters). */
#define WC_BATCH_ROWS 1000u
#define WC_BATCH_PARAMS 30000u

/* Where the reserved columns are in the frame's rowset (-1: absent). */
typedef struct chcols {
    int64_t op, lsn, ct, xid, unchanged;
    int64_t *old;          /* per key column: the rowset column of its old value, -1 */
    int64_t *key;          /* per key column: its rowset column */
    int64_t *tcol;         /* rowset column -> table column (-1: none) */
} chcols;

/* One zx_ws_apply_changes call. */
typedef struct apply {
    zx_ws *w;
    const zx_ws_changes *c;
    const zx_rowset *rs;
    ws_table *t;
    chcols *cc;
    const zx_ws_append *ap;  /* for the rejects of refused changes */
    zx_buf sql;
    zx_fit_out *vals;        /* value slots: a change's, or a batch's */
    zx_buf *bufs;        /* one scratch buffer per slot */
    uint32_t nvals;
    zx_buf *arr;             /* per parameter: an array of a batch's values
                                (backends with ops->array_param), narr */
    uint32_t narr;
    const zx_value **v;      /* a row's cells by rowset column */
    const zx_value **v2;     /* another row's (comparing keys) */
    zx_ws_result *res;
    int quiet;               /* wc_fit_into: a misfit returns 2, no reject */
} apply;

/* The mirror column name of rowset column c (a data column with a table
 * column: cc->tcol[c] >= 0) / of key column k (its rowset column's, else
 * the key's own name).  Owned by a->t. */
const char *wc_col_name(const apply *a, uint32_t c);
const char *wc_key_name(const apply *a, size_t k);
/* The table column of key column k, or -1. */
int64_t wc_key_tcol(const apply *a, size_t k);
/* Row r's cells by rowset column into v (NULL: no value). */
void wc_row_cells(const zx_rowset *rs, uint32_t r, const zx_value **v);
/* 1 when name is in the JSON array of strings arr (_zx_unchanged). */
int wc_listed(const zx_value *arr, const char *name);
/* 1 when col is one of the mirror's key columns. */
int wc_is_key(const zx_ws_changes *c, const char *col);
/* Fit v (NULL: SQL NULL) for table column tc into slot i: 0; a misfit is
 * NULL plus a reject row (a->quiet: no reject row, 2); -1 (err set). */
int wc_fit_into(apply *a, uint32_t i, int64_t tc, const char *cname, const zx_value *v,
                char *err, size_t errlen);
/* Apply change r alone, counting it in a->res (rows, or rejects with its
 * reject row when the table refuses it).  0, or -1 (err set: roll back). */
int wc_apply_row(apply *a, uint32_t r, char *err, size_t errlen);
/* Apply changes [s, e) (none a truncate), in effect in their order.  0, or
 * -1 (err set). */
int wc_apply_run(apply *a, uint32_t s, uint32_t e, char *err, size_t errlen);

#endif
