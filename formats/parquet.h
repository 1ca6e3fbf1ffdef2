/*
 * parquet.h — a streaming Parquet file writer (flat schema, every column
 * OPTIONAL), written from the Apache Parquet format specification.
 *
 * Layout: "PAR1", row groups, the footer (FileMetaData, Thrift compact),
 * its 4-byte little-endian length, "PAR1".  Each column chunk holds data
 * pages v1 (definition levels as RLE / bit-packed hybrid, bit width 1) and,
 * for TEXT, JSON and BYTES columns, a dictionary page with RLE_DICTIONARY
 * data pages; a chunk whose dictionary grows past 1 MiB or 65,536 entries
 * is written PLAIN instead (the next row group tries the dictionary again).
 * Column chunk statistics: null_count; min_value / max_value in the type's
 * order (strings unsigned byte-wise, omitted when min or max is longer
 * than 64 bytes; doubles: omitted when a NaN is present, nan_count set;
 * -0.0 as min and +0.0 as max for zeros); the deprecated min / max too for
 * BOOLEAN, INT32, INT64 and DOUBLE columns, where their signed order is
 * right.
 * Field ids (opts.field_ids): SchemaElement.field_id of each column, as
 * Iceberg requires.  File-level statistics of each column, aggregated
 * over its row groups, are read back with zx_pq_col_stats.
 *
 * Types (zx_dtype -> physical + logical type, legacy ConvertedType):
 *   TEXT       BYTE_ARRAY   STRING                       UTF8
 *   INT64      INT64        -
 *   DOUBLE     DOUBLE       -
 *   BOOL       BOOLEAN      -
 *   TIMESTAMP  INT64        TIMESTAMP(UTC, MICROS)       TIMESTAMP_MICROS
 *   DATE       INT32        DATE                         DATE
 *   DECIMAL    INT64 (p <= 18) or FIXED_LEN_BYTE_ARRAY (p > 18, the fewest
 *              bytes that hold 10^p - 1, two's complement big-endian)
 *                           DECIMAL(p, s)                DECIMAL
 *   JSON       BYTE_ARRAY   JSON                         JSON
 *   BYTES      BYTE_ARRAY   -
 * Cells are converted as common/dcell.h says for files (TEXT and JSON
 * values are valid UTF-8, as Parquet readers require); a misfit is written
 * as NULL and counted (zx_pq_nulled).
 *
 * Memory: one row group is buffered (values PLAIN-encoded, or 4-byte
 * dictionary indices plus the dictionary; definition levels as bits); it
 * is encoded, compressed and written when those buffers reach
 * row_group_bytes, so a writer holds about row_group_bytes + one page +
 * one dictionary (1 MiB per column at most).
 *
 * A writer is used by one thread.  It writes to fd (or its opts' sink)
 * sequentially (never seeks) through its own buffer; the file's offsets count from the first
 * byte it writes, so fd must be at the start of an empty file or a pipe.
 * It never closes or syncs fd.
 */
#ifndef ZX_FORMATS_PARQUET_H
#define ZX_FORMATS_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "common/rowset.h"

typedef enum zx_pq_codec {
    ZX_PQ_ZSTD = 0,
    ZX_PQ_SNAPPY,
    ZX_PQ_NONE
} zx_pq_codec;

typedef struct zx_pq_opts {
    zx_pq_codec codec;        /* default (zeroed opts) ZSTD */
    int zstd_level;           /* 0: 1 (fast; with a 6-byte minimum match,
                               * zstd's own level-1 choice for pages up to
                               * 256 KiB, on every page) */
    uint64_t row_group_bytes; /* 0: 128 MiB; at least 4 KiB is used */
    uint64_t page_bytes;      /* 0: 1 MiB; at least 1 KiB is used */
    /* Where the bytes go instead of fd (an S3 upload): sink(ctx, p, n,
     * err, errlen) takes all n bytes (copying what it keeps) and returns
     * 0, or -1 with err set (the writer then fails as on a write error).
     * NULL: write(2) to fd. */
    int (*sink)(void *ctx, const void *p, size_t n, char *err, size_t errlen);
    void *sink_ctx;
    /* Field ids of the columns, written as each leaf's SchemaElement
     * field_id (what Iceberg maps columns by): NULL for none, else ncols
     * ids, each >= 1 (zx_pq_open fails otherwise; it does not check that
     * they are distinct).  Copied by zx_pq_open. */
    const int32_t *field_ids;
} zx_pq_opts;

typedef struct zx_pq_writer zx_pq_writer;

/* Parse "zstd", "snappy", "none" (also "uncompressed"); -1 if unknown. */
int zx_pq_codec_parse(const char *name, zx_pq_codec *out);

/* Start a file on fd (ignored, -1, when o->sink is set) for columns cols[0..ncols) (1..32767 columns; names
 * are copied; DECIMAL precision 1..38, scale 0..precision) with options o
 * (NULL: defaults).  Writes the leading "PAR1".  Returns 0 and *out (free
 * with zx_pq_free), or -1 with a message in err: bad column, out of
 * memory, or write failure (errno's text). */
int zx_pq_open(int fd, const zx_dcol *cols, size_t ncols, const zx_pq_opts *o,
               zx_pq_writer **out, char *err, size_t errlen);

/* Append every row of rs, whose columns are cols in order (rs->ncols ==
 * ncols; a row's missing cell is NULL).  May write a row group.  Returns 0,
 * or -1 with err (a write failure, out of memory, more than 2^31 - 1 rows
 * in a row group); after -1 the writer only accepts zx_pq_free. */
int zx_pq_write(zx_pq_writer *w, const zx_rowset *rs, char *err, size_t errlen);

/* Append one row: vals[0..ncols) (a NULL vals[i].type or ZX_T_NULL is
 * NULL).  Values are copied before it returns.  0 or -1 as zx_pq_write. */
int zx_pq_write_row(zx_pq_writer *w, const zx_value *vals, char *err, size_t errlen);

/* Write the last row group and the footer.  *file_bytes (may be NULL)
 * gets the file's size.  0, or -1 with err; either way the writer only
 * accepts zx_pq_free afterwards. */
int zx_pq_finish(zx_pq_writer *w, uint64_t *file_bytes, char *err, size_t errlen);

/* Free the writer (does not close fd).  NULL is a no-op. */
void zx_pq_free(zx_pq_writer *w);

/* Values written as NULL so far because they did not fit their column. */
uint64_t zx_pq_nulled(const zx_pq_writer *w);

/* The first such value: 1 with *col its column (0-based) and *row its row
 * (0-based, counted over every row written), or 0 when there was none. */
int zx_pq_first_misfit(const zx_pq_writer *w, size_t *col, uint64_t *row);

/* Rows accepted so far; row groups written so far. */
uint64_t zx_pq_rows(const zx_pq_writer *w);
uint32_t zx_pq_row_groups(const zx_pq_writer *w);

/* File-level statistics of one column: what Delta Lake's `stats` and
 * Iceberg's manifest (value, null and NaN counts, lower and upper bounds,
 * column sizes) say of the file.  They cover the row groups written so
 * far, so after zx_pq_finish returned 0 the whole file; rows still
 * buffered in the current row group are not in them.  Min and max are
 * over every non-NULL value of the file, in the order and within the
 * limits of the footer's column chunk statistics. */
typedef struct zx_pq_colstats {
    uint64_t values;      /* rows (NULLs included) */
    uint64_t nulls;       /* NULL cells, misfits included */
    uint64_t nans;        /* DOUBLE: NaN values (not NULLs); 0 for other types */
    uint64_t compressed_bytes;   /* the column's chunks on disk: pages and their
                                  * headers, compressed (total_compressed_size,
                                  * summed; Iceberg's column_sizes) */
    uint64_t uncompressed_bytes; /* the same, uncompressed */
    /* 1: min and max below are set; 0: unknown (no non-NULL value; a
     * DOUBLE column with a NaN; a byte-array min or max longer than 64
     * bytes).  Which pair is set depends on the column's type:
     *   INT64, TIMESTAMP (µs since 1970 UTC), DATE (days since 1970),
     *   BOOL (0 / 1), DECIMAL p <= 18 (the unscaled value): imin, imax;
     *   DOUBLE: dmin, dmax (zeros: -0.0 as min, +0.0 as max);
     *   TEXT, JSON, BYTES (unsigned byte-wise order; as written, so TEXT
     *   and JSON are UTF-8): bmin / bmin_len, bmax / bmax_len;
     *   DECIMAL p > 18: bmin, bmax, the unscaled value as the column's
     *   fixed-length big-endian two's complement (lengths equal).
     * bmin and bmax point into the writer: valid until zx_pq_free, their
     * bytes rewritten when a later row group is written; not
     * NUL-terminated; NULL when the type has no byte min/max or it is
     * unknown. */
    int has_minmax;
    int64_t imin, imax;
    double dmin, dmax;
    const uint8_t *bmin, *bmax;
    size_t bmin_len, bmax_len;
} zx_pq_colstats;

/* Fill *out with the statistics of column col (0-based).  Returns 0, or
 * -1 (out untouched) when w is NULL or col >= the number of columns. */
int zx_pq_col_stats(const zx_pq_writer *w, size_t col, zx_pq_colstats *out);

#endif
