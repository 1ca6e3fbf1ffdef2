/*
 * dbz_oracle.h — the Debezium fast path (workers/sources/debezium/
 * debezium_fast.c) against its reference, the jansson path: one message
 * through zx_dbz_fast_add (then zx_dbz_add_json when it declines, as
 * zx_dbz_add does) on one side, through zx_dbz_add_json alone on the
 * other, and every difference in what they leave: the answer, the
 * reject's words, the notes, the frame's table, key, changes and declared
 * types, the rowset cell by cell (columns, types, row bounds, each cell's
 * column, type, value and text), the tables a template made.  Used by
 * tests/unit/test_debezium.c and tests/fuzz/fuzz_debezium.c.
 * Header-only; it must never be included by zx itself.
 */
#ifndef ZX_DBZ_ORACLE_H
#define ZX_DBZ_ORACLE_H

#include <string.h>

#include "workers/sources/debezium/debezium_int.h"

/* One side: a frame with its rowset, configuration and what it answered. */
typedef struct dbz_side {
    zx_rowset rs;
    zx_dbz_frame f;
    zx_dbz_tables made;
    zx_dbz_conf c;
    char why[400];
    unsigned notes;
} dbz_side;

/* c: the configuration (its `made` is replaced by the side's own when
 * template is set). */
static inline void dbz_side_init(dbz_side *s, const zx_dbz_conf *c, int template_tables,
                                 size_t max_tables)
{
    memset(s, 0, sizeof(*s));
    zx_rowset_init(&s->rs);
    zx_dbz_frame_init(&s->f, &s->rs);
    s->c = *c;
    s->c.made = NULL;
    if (template_tables) {
        s->made.max = max_tables;
        s->c.made = &s->made;
    }
}

static inline void dbz_side_free(dbz_side *s)
{
    zx_dbz_frame_free(&s->f);
    zx_rowset_free(&s->rs);
    zx_dbz_tables_free(&s->made);
}

static inline int dbz_same_value(const zx_value *x, const zx_value *y)
{
    if (x->type != y->type || x->len != y->len)
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
    default:
        return (!x->s && !y->s) ||
               (x->s && y->s && memcmp(x->s, y->s, x->len) == 0 && !x->s[x->len] &&
                !y->s[y->len]);
    }
}

/* The first difference between the two sides, or NULL. */
static inline const char *dbz_side_diff(const dbz_side *a, const dbz_side *b)
{
    if (strcmp(a->why, b->why))
        return "reason";
    if (a->notes != b->notes)
        return "notes";
    if (a->f.changes != b->f.changes || strcmp(a->f.table, b->f.table) ||
        a->f.nkeys != b->f.nkeys)
        return "frame table, key count or changes";
    for (size_t k = 0; k < a->f.nkeys; k++)
        if (strcmp(a->f.keys[k], b->f.keys[k]))
            return "frame key";
    const zx_rowset *x = &a->rs, *y = &b->rs;
    if (x->ncols != y->ncols || x->nrows != y->nrows || x->ncells != y->ncells ||
        x->row_open != y->row_open)
        return "rowset sizes";
    for (uint32_t c = 0; c < x->ncols; c++) {
        if (x->cols[c].name_len != y->cols[c].name_len ||
            memcmp(x->cols[c].name, y->cols[c].name, x->cols[c].name_len))
            return "column name";
        if (x->cols[c].type != y->cols[c].type)
            return "column type";
        const char *da = c < a->f.decls_cap ? a->f.decls[c] : NULL;
        const char *db = c < b->f.decls_cap ? b->f.decls[c] : NULL;
        if ((!da) != (!db) || (da && strcmp(da, db)))
            return "declared type";
    }
    for (uint32_t r = 0; x->nrows && r <= x->nrows; r++)
        if (x->row_start[r] != y->row_start[r])
            return "row bounds";
    for (uint64_t i = 0; i < x->ncells; i++) {
        if (x->cells[i].col != y->cells[i].col)
            return "cell column";
        if (!dbz_same_value(&x->cells[i].v, &y->cells[i].v))
            return "cell value";
    }
    if (a->made.n != b->made.n)
        return "tables made";
    for (size_t i = 0; i < a->made.n; i++)
        if (strcmp(a->made.v[i], b->made.v[i]))
            return "table made";
    return NULL;
}

static inline void dbz_side_restart(dbz_side *s)
{
    zx_rowset_reset(&s->rs);
    zx_dbz_frame_reset(&s->f);
}

/* Message m on both sides (a: the reference, b: the fast path first); an
 * OTHER restarts both frames and adds m again, as a source does.  *fast
 * is set when the fast path answered.  The first difference, or NULL. */
static inline const char *dbz_oracle_step(dbz_side *a, dbz_side *b, const zx_dbz_msg *m,
                                          int *fast)
{
    for (int round = 0; round < 2; round++) {
        a->why[0] = b->why[0] = '\0';
        int ra = zx_dbz_add_json(&a->c, &a->f, m, a->why, sizeof(a->why), &a->notes);
        int rb = zx_dbz_fast_add(&b->c, &b->f, m, b->why, sizeof(b->why), &b->notes);
        if (rb == ZX_DBZ_DECLINED) {
            rb = zx_dbz_add_json(&b->c, &b->f, m, b->why, sizeof(b->why), &b->notes);
        } else {
            *fast = 1;
            if (rb == ZX_DBZ_ADDED && b->c.made && zx_dbz_tables_add(b->c.made, b->f.table) < 0)
                rb = ZX_DBZ_NOMEM;
        }
        if (ra != rb)
            return "answer";
        const char *d = dbz_side_diff(a, b);
        if (d)
            return d;
        if (ra != ZX_DBZ_OTHER)
            return NULL;
        dbz_side_restart(a);
        dbz_side_restart(b);
    }
    return NULL;
}

#endif
