/*
 * rowset.c — columns, sparse rows and an arena for their strings.
 * See rowset.h for the contract.  Must never parse input or know about SQL.
 */
#include "common/rowset.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_MIN (64 * 1024)

typedef struct zx_arena_chunk {
    struct zx_arena_chunk *next;
    size_t size, used;
    /* data follows, 16-aligned */
    max_align_t data[];
} zx_arena_chunk;

static const char *const type_names[ZX_T__COUNT] = {
    [ZX_T_NULL] = "null",           [ZX_T_INT] = "integer",
    [ZX_T_REAL] = "real",           [ZX_T_BOOL] = "boolean",
    [ZX_T_TEXT] = "text",           [ZX_T_TIMESTAMP] = "timestamp",
    [ZX_T_JSON] = "json",
};

const char *zx_type_name(zx_type t)
{
    return (unsigned)t < ZX_T__COUNT ? type_names[t] : "unknown";
}

int zx_value_is_number_text(const zx_value *v)
{
    return v->type == ZX_T_JSON && v->s && v->len > 0 &&
           (v->s[0] == '-' || (v->s[0] >= '0' && v->s[0] <= '9'));
}

const char *zx_value_type_name(const zx_value *v)
{
    if (!zx_value_is_number_text(v))
        return zx_type_name((zx_type)v->type);
    for (uint32_t i = 0; i < v->len; i++)
        if (v->s[i] == '.' || v->s[i] == 'e' || v->s[i] == 'E')
            return "real";
    return "integer";
}

zx_type zx_value_column_type(const zx_value *v)
{
    if (v->type == ZX_T_JSON && zx_value_is_number_text(v))
        return ZX_T_REAL;
    return (zx_type)v->type;
}

size_t zx_value_str_bytes(const zx_value *v)
{
    switch ((zx_type)v->type) {
    case ZX_T_TEXT:
    case ZX_T_JSON:
    case ZX_T_TIMESTAMP:
        return v->len;
    default:
        return 0;
    }
}

zx_type zx_type_merge(zx_type have, zx_type seen)
{
    if (have == ZX_T_NULL)
        return seen;
    if (seen == ZX_T_NULL || seen == have)
        return have;
    if ((have == ZX_T_INT && seen == ZX_T_REAL) ||
        (have == ZX_T_REAL && seen == ZX_T_INT))
        return ZX_T_REAL;
    return have;
}

void zx_rowset_init(zx_rowset *rs)
{
    memset(rs, 0, sizeof(*rs));
}

static void arena_free(zx_arena_chunk *c)
{
    while (c) {
        zx_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
}

void zx_rowset_reset(zx_rowset *rs)
{
    rs->ncols = 0;
    rs->ncells = 0;
    rs->nrows = 0;
    rs->row_open = 0;
    if (rs->col_index)
        memset(rs->col_index, 0, sizeof(uint32_t) * rs->col_index_cap);
    /* keep the first (largest-recent) chunk, free the rest */
    if (rs->arena) {
        arena_free(rs->arena->next);
        rs->arena->next = NULL;
        rs->arena->used = 0;
    }
    rs->arena_bytes = 0;
    rs->str_bytes = 0;
    rs->name_bytes = 0;
}

void zx_rowset_free(zx_rowset *rs)
{
    if (!rs)
        return;
    free(rs->cols);
    free(rs->cells);
    free(rs->row_start);
    free(rs->col_index);
    arena_free(rs->arena);
    zx_rowset_init(rs);
}

void *zx_rowset_alloc(zx_rowset *rs, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    zx_arena_chunk *c = rs->arena;
    if (!c || c->size - c->used < n) {
        size_t sz = n > ARENA_MIN ? n : ARENA_MIN;
        if (c && c->size * 2 > sz && c->size < 64 * 1024 * 1024 && n <= c->size * 2)
            sz = c->size * 2;
        zx_arena_chunk *nc = malloc(sizeof(*nc) + sz);
        if (!nc)
            return NULL;
        nc->size = sz;
        nc->used = 0;
        nc->next = c;
        rs->arena = nc;
        c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    rs->arena_bytes += n;
    return p;
}

char *zx_rowset_strdup(zx_rowset *rs, const char *s, size_t n)
{
    char *p = zx_rowset_alloc(rs, n + 1);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static uint32_t name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static int index_grow(zx_rowset *rs)
{
    uint32_t cap = rs->col_index_cap ? rs->col_index_cap * 2 : 64;
    uint32_t *ix = calloc(cap, sizeof(uint32_t));
    if (!ix)
        return -1;
    for (uint32_t c = 0; c < rs->ncols; c++) {
        uint32_t h = name_hash(rs->cols[c].name, rs->cols[c].name_len) & (cap - 1);
        while (ix[h])
            h = (h + 1) & (cap - 1);
        ix[h] = c + 1;
    }
    free(rs->col_index);
    rs->col_index = ix;
    rs->col_index_cap = cap;
    return 0;
}

int64_t zx_rowset_find_column(const zx_rowset *rs, const char *name, size_t len)
{
    if (!rs->col_index_cap)
        return -1;
    uint32_t mask = rs->col_index_cap - 1;
    uint32_t h = name_hash(name, len) & mask;
    while (rs->col_index[h]) {
        const zx_column *c = &rs->cols[rs->col_index[h] - 1];
        if (c->name_len == len && memcmp(c->name, name, len) == 0)
            return rs->col_index[h] - 1;
        h = (h + 1) & mask;
    }
    return -1;
}

int64_t zx_rowset_column(zx_rowset *rs, const char *name, size_t len, zx_type t)
{
    int64_t i = zx_rowset_find_column(rs, name, len);
    if (i >= 0) {
        rs->cols[i].type = zx_type_merge(rs->cols[i].type, t);
        return i;
    }
    if ((rs->ncols + 1) * 2 > rs->col_index_cap && index_grow(rs) < 0)
        return -1;
    if (rs->ncols == rs->cols_cap) {
        uint32_t cap = rs->cols_cap ? rs->cols_cap * 2 : 16;
        zx_column *nc = realloc(rs->cols, cap * sizeof(*nc));
        if (!nc)
            return -1;
        rs->cols = nc;
        rs->cols_cap = cap;
    }
    char *copy = zx_rowset_strdup(rs, name, len);
    if (!copy)
        return -1;
    zx_column *c = &rs->cols[rs->ncols];
    c->name = copy;
    c->name_len = (uint32_t)len;
    c->type = t;
    rs->name_bytes += len;
    uint32_t mask = rs->col_index_cap - 1;
    uint32_t h = name_hash(name, len) & mask;
    while (rs->col_index[h])
        h = (h + 1) & mask;
    rs->col_index[h] = rs->ncols + 1;
    return rs->ncols++;
}

int zx_rowset_begin_row(zx_rowset *rs)
{
    if (rs->row_open)
        zx_rowset_end_row(rs);
    if (rs->nrows + 2 > rs->rows_cap) {
        uint32_t cap = rs->rows_cap ? rs->rows_cap * 2 : 256;
        uint64_t *n = realloc(rs->row_start, cap * sizeof(*n));
        if (!n)
            return -1;
        rs->row_start = n;
        rs->rows_cap = cap;
    }
    rs->row_start[rs->nrows] = rs->ncells;
    rs->row_open = 1;
    return 0;
}

int zx_rowset_add(zx_rowset *rs, uint32_t col, const zx_value *v)
{
    if (rs->ncells == rs->cells_cap) {
        uint64_t cap = rs->cells_cap ? rs->cells_cap * 2 : 1024;
        zx_cell *n = realloc(rs->cells, cap * sizeof(*n));
        if (!n)
            return -1;
        rs->cells = n;
        rs->cells_cap = cap;
    }
    zx_cell *c = &rs->cells[rs->ncells++];
    c->col = col;
    c->v = *v;
    rs->str_bytes += zx_value_str_bytes(v);
    rs->cols[col].type = zx_type_merge(rs->cols[col].type, zx_value_column_type(v));
    return 0;
}

void zx_rowset_end_row(zx_rowset *rs)
{
    if (!rs->row_open)
        return;
    rs->nrows++;
    rs->row_start[rs->nrows] = rs->ncells;
    rs->row_open = 0;
}

void zx_rowset_abort_row(zx_rowset *rs)
{
    if (!rs->row_open)
        return;
    for (uint64_t i = rs->row_start[rs->nrows]; i < rs->ncells; i++)
        rs->str_bytes -= zx_value_str_bytes(&rs->cells[i].v);
    rs->ncells = rs->row_start[rs->nrows];
    rs->row_open = 0;
}

void zx_rowset_row(const zx_rowset *rs, uint32_t r, zx_value *out)
{
    memset(out, 0, sizeof(*out) * rs->ncols);
    for (uint64_t i = rs->row_start[r]; i < rs->row_start[r + 1]; i++)
        out[rs->cells[i].col] = rs->cells[i].v;
}

void zx_rowset_save(const zx_rowset *rs, zx_rowset_mark *m)
{
    m->nrows = rs->nrows;
    m->ncols = rs->ncols;
    m->ncells = rs->row_open ? rs->row_start[rs->nrows] : rs->ncells;
}

/* A column type meaning "fold again" during zx_rowset_truncate. */
#define TYPE_REFOLD 0xffu

void zx_rowset_truncate(zx_rowset *rs, const zx_rowset_mark *m)
{
    rs->row_open = 0;
    if (m->nrows >= rs->nrows && m->ncols >= rs->ncols && m->ncells >= rs->ncells)
        return;
    uint64_t old_ncells = rs->ncells;
    rs->nrows = m->nrows;
    rs->ncells = m->ncells;
    if (rs->row_start)
        rs->row_start[rs->nrows] = rs->ncells;
    for (uint64_t i = rs->ncells; i < old_ncells; i++)
        rs->str_bytes -= zx_value_str_bytes(&rs->cells[i].v);
    for (uint32_t c = m->ncols; c < rs->ncols; c++)
        rs->name_bytes -= rs->cols[c].name_len;
    if (m->ncols < rs->ncols) {
        rs->ncols = m->ncols;
        /* rebuild the index over the kept columns (open addressing has no
         * cheap delete) */
        if (rs->col_index) {
            memset(rs->col_index, 0, sizeof(uint32_t) * rs->col_index_cap);
            uint32_t mask = rs->col_index_cap - 1;
            for (uint32_t c = 0; c < rs->ncols; c++) {
                uint32_t h = name_hash(rs->cols[c].name, rs->cols[c].name_len) & mask;
                while (rs->col_index[h])
                    h = (h + 1) & mask;
                rs->col_index[h] = c + 1;
            }
        }
    }
    /* A dropped cell may have widened a kept column: such a column gets
     * the fold of its kept cells, in order.  Folding a column's cells again
     * into the type they gave changes nothing, so the other columns can be
     * folded along. */
    for (uint64_t i = rs->ncells; i < old_ncells; i++)
        if (rs->cells[i].col < rs->ncols)
            rs->cols[rs->cells[i].col].type = TYPE_REFOLD;
    for (uint64_t i = 0; i < rs->ncells; i++) {
        zx_column *col = &rs->cols[rs->cells[i].col];
        zx_type t = zx_value_column_type(&rs->cells[i].v);
        col->type = col->type == TYPE_REFOLD ? t : zx_type_merge((zx_type)col->type, t);
    }
    for (uint32_t c = 0; c < rs->ncols; c++)
        if (rs->cols[c].type == TYPE_REFOLD)
            rs->cols[c].type = ZX_T_NULL;
}

int zx_rowset_add_to_rows(zx_rowset *rs, uint32_t first, const uint32_t *cols,
                          const zx_value *vals, size_t n)
{
    if (rs->row_open || first >= rs->nrows || n == 0)
        return 0;
    uint64_t rows = rs->nrows - first;
    uint64_t need = rs->ncells + rows * n;
    if (need > rs->cells_cap) {
        uint64_t cap = rs->cells_cap ? rs->cells_cap : 1024;
        while (cap < need)
            cap *= 2;
        zx_cell *nc = realloc(rs->cells, cap * sizeof(*nc));
        if (!nc)
            return -1;
        rs->cells = nc;
        rs->cells_cap = cap;
    }
    /* from the last row back: move its cells up by the room the rows
     * before it (from `first`) take, then write the new cells after them */
    uint64_t e = rs->ncells; /* end of row r before the move */
    for (uint32_t r = rs->nrows; r-- > first;) {
        uint64_t shift = (uint64_t)(r - first) * n;
        uint64_t b = rs->row_start[r];
        if (shift)
            memmove(&rs->cells[b + shift], &rs->cells[b], (e - b) * sizeof(zx_cell));
        for (size_t i = 0; i < n; i++) {
            zx_cell *c = &rs->cells[e + shift + i];
            c->col = cols[i];
            c->v = vals[i];
        }
        rs->row_start[r + 1] = e + shift + n;
        if (r > first)
            rs->row_start[r] = b + shift;
        e = b;
    }
    rs->ncells = need;
    for (size_t i = 0; i < n; i++)
        rs->str_bytes += (size_t)rows * zx_value_str_bytes(&vals[i]);
    for (size_t i = 0; i < n; i++)
        rs->cols[cols[i]].type =
            zx_type_merge((zx_type)rs->cols[cols[i]].type, zx_value_column_type(&vals[i]));
    return 0;
}
