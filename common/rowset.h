/*
 * rowset.h — the in-memory batch of rows that every stage shares.
 *
 * A rowset is what a source makes of its input (JSON body, Kafka batch),
 * what the frame codec (proto/frame.h) encodes and decodes, and what the
 * workspace appends to a table.  It is a list of columns (normalised names,
 * each with the type inferred for this batch) and a list of rows; a row is a
 * sparse list of cells (column index, value) so that a new field in row 900
 * does not force the first 899 rows to grow.
 *
 * Memory: the rowset owns every column name and every string value it holds
 * (copied into its arena by zx_rowset_strdup / the add functions).  Pointers
 * returned by the accessors stay valid until zx_rowset_reset or
 * zx_rowset_free.  A rowset is used by one thread at a time.
 *
 * It must never: parse input, know about SQL, or know about msgpack.
 */
#ifndef ZX_COMMON_ROWSET_H
#define ZX_COMMON_ROWSET_H

#include <stddef.h>
#include <stdint.h>

/* Value types.  The numeric values are part of the frame format (proto/):
 * never renumber, only append. */
typedef enum zx_type {
    ZX_T_NULL = 0,
    ZX_T_INT = 1,       /* int64 */
    ZX_T_REAL = 2,      /* double */
    ZX_T_BOOL = 3,
    ZX_T_TEXT = 4,      /* UTF-8 text */
    ZX_T_TIMESTAMP = 5, /* RFC 3339 string: i = microseconds since the epoch,
                           UTC; s/len = the original text */
    ZX_T_JSON = 6,      /* nested object or array, compact JSON text in s;
                           or a number kept as text (see below) */
    ZX_T__COUNT
} zx_type;

/* A number kept as text: a JSON number that does not fit its zx type (an
 * integer beyond int64, a number beyond double range) travels as ZX_T_JSON
 * whose text s is the number's literal, exactly as written (so the writer
 * can store it where it fits, or reject it with its raw text).  Nested
 * JSON text always starts with '{' or '['; a number kept as text starts
 * with '-' or a digit.  For the column type it counts as ZX_T_REAL. */

/* Lower-case name of a type ("integer", "real", "boolean", "text",
 * "timestamp", "json", "null"); never NULL, static storage. */
const char *zx_type_name(zx_type t);

typedef struct zx_value {
    uint8_t type;      /* zx_type */
    uint32_t len;      /* TEXT, JSON, TIMESTAMP: bytes at s (no NUL counted) */
    union {
        int64_t i;     /* INT; TIMESTAMP (µs since epoch, UTC) */
        double d;      /* REAL */
        int b;         /* BOOL: 0 or 1 */
    } u;
    const char *s;     /* TEXT, JSON, TIMESTAMP; NUL-terminated as well */
} zx_value;

/* 1 when v is a number kept as text (ZX_T_JSON whose text starts with '-'
 * or a digit), else 0.  Does not check the rest of the literal. */
int zx_value_is_number_text(const zx_value *v);

/* Name of v's type for people (rejects' value_type): zx_type_name, except
 * "integer" / "real" for a number kept as text (integer: no '.', 'e' nor
 * 'E' in the literal).  Static storage, never NULL. */
const char *zx_value_type_name(const zx_value *v);

/* Type v gives its column: v->type, or ZX_T_REAL for a number kept as
 * text. */
zx_type zx_value_column_type(const zx_value *v);

typedef struct zx_column {
    const char *name;  /* normalised column name, NUL-terminated */
    uint32_t name_len;
    uint8_t type;      /* zx_type inferred for this batch; ZX_T_NULL when
                          every value seen so far was null */
} zx_column;

typedef struct zx_cell {
    uint32_t col;      /* index into the rowset's columns */
    zx_value v;
} zx_cell;

struct zx_arena_chunk;

typedef struct zx_rowset {
    zx_column *cols;
    uint32_t ncols, cols_cap;

    zx_cell *cells;
    uint64_t ncells, cells_cap;

    uint64_t *row_start;   /* row r has cells [row_start[r], row_start[r+1]) */
    uint32_t nrows, rows_cap;
    int row_open;          /* a row was begun and not yet ended */

    /* open-addressing index: column name -> column index + 1 (0 = empty) */
    uint32_t *col_index;
    uint32_t col_index_cap;

    struct zx_arena_chunk *arena;
    size_t arena_bytes;    /* bytes handed out by the arena, for metrics */

    /* What an encoder writes, kept as cells and columns come and go (a
     * frame's size is bounded by these, not by the arena: one arena string
     * may be the value of many cells, as a Kafka key is of every row of
     * its message). */
    size_t str_bytes;      /* string bytes of the cells (TEXT, JSON,
                              TIMESTAMP text), once per cell */
    size_t name_bytes;     /* bytes of the columns' names */
} zx_rowset;

/* Bytes of v an encoder writes as a string (len for TEXT, JSON and
 * TIMESTAMP, else 0). */
size_t zx_value_str_bytes(const zx_value *v);

/* Initialise an empty rowset.  Never fails (allocates lazily). */
void zx_rowset_init(zx_rowset *rs);

/* Forget every row and column but keep the allocations for reuse. */
void zx_rowset_reset(zx_rowset *rs);

/* Free everything; the rowset may be initialised again.  NULL is a no-op. */
void zx_rowset_free(zx_rowset *rs);

/* Copy n bytes into the arena, NUL-terminated.  Returns the copy, valid
 * until reset/free, or NULL when out of memory. */
char *zx_rowset_strdup(zx_rowset *rs, const char *s, size_t n);

/* Allocate n bytes (8-byte aligned) from the arena; NULL when out of memory. */
void *zx_rowset_alloc(zx_rowset *rs, size_t n);

/* Find or add the column with this (already normalised) name.  Returns its
 * index, or -1 when out of memory.  When `t` is not ZX_T_NULL the column's
 * inferred type is merged with it: NULL takes t; INT and REAL widen to REAL;
 * any other disagreement keeps the type seen first (the writer will turn the
 * misfit value into NULL). */
int64_t zx_rowset_column(zx_rowset *rs, const char *name, size_t len, zx_type t);

/* Index of an existing column, or -1. */
int64_t zx_rowset_find_column(const zx_rowset *rs, const char *name, size_t len);

/* Begin a new row.  Returns 0, or -1 when out of memory. */
int zx_rowset_begin_row(zx_rowset *rs);

/* Add a cell to the open row.  `v` is copied as is: string values must
 * already live in the arena (use zx_rowset_strdup).  The column's type is
 * merged with zx_value_column_type(v) as in zx_rowset_column.  Returns 0
 * or -1 (ENOMEM). */
int zx_rowset_add(zx_rowset *rs, uint32_t col, const zx_value *v);

/* Close the open row. */
void zx_rowset_end_row(zx_rowset *rs);

/* Drop the open row (e.g. its input line turned out to be malformed). */
void zx_rowset_abort_row(zx_rowset *rs);

/* Fill out[0 .. ncols-1] with row r's values (NULL where the row has no
 * cell).  `out` must have room for rs->ncols values.  When a row holds the
 * same column twice, the last cell wins. */
void zx_rowset_row(const zx_rowset *rs, uint32_t r, zx_value *out);

/* How far a rowset had got: saved by zx_rowset_save before appending one
 * input (a Kafka message), so that an input found bad half-way can be
 * taken back with zx_rowset_truncate.  Plain values, no ownership. */
typedef struct zx_rowset_mark {
    uint32_t nrows, ncols;
    uint64_t ncells;
} zx_rowset_mark;

/* Save rs's row, column and cell counts in *m.  An open row is not part
 * of the mark (truncating drops it).  Never fails. */
void zx_rowset_save(const zx_rowset *rs, zx_rowset_mark *m);

/* Take rs back to mark m (taken on this rowset since its last reset, and
 * no row closed or column added before it removed since): drop the open
 * row, the rows after m->nrows, their cells and the columns after
 * m->ncols (so the column index no longer finds them), and give each kept
 * column a dropped cell had merged into the type it had at the mark
 * (recomputed from its kept cells, in cell order, with zx_type_merge:
 * exact as long as that column's type came from cells only, as with the
 * JSON parsers, and its cells' order is the order they were added in, or
 * their types agree, as with the cells of zx_rowset_add_to_rows).  Arena strings are not
 * freed (arena_bytes keeps counting them) until the next reset.  O(kept
 * cells + columns): meant for the rare bad input.  Never fails. */
void zx_rowset_truncate(zx_rowset *rs, const zx_rowset_mark *m);

/* Append the same n cells (cols[i], vals[i]) to each closed row from row
 * `first` to the last one (e.g. a message's metadata columns to every row
 * the message gave).  Values are copied as is (strings must live in the
 * arena); each column's type is merged with each value as in
 * zx_rowset_add.  The rows keep their order; cells of the rows after
 * `first` move (O(their cells)); with first = nrows - 1 nothing moves.
 * Must not be called while a row is open.  Returns 0, or -1 when out of
 * memory (rs unchanged). */
int zx_rowset_add_to_rows(zx_rowset *rs, uint32_t first, const uint32_t *cols,
                          const zx_value *vals, size_t n);

/* Merge type rule used by zx_rowset_column, exposed for the writer. */
zx_type zx_type_merge(zx_type have, zx_type seen);

#endif
