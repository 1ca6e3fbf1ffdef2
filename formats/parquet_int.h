/*
 * parquet_int.h — what the Parquet writer's files share (parquet.c: rows
 * into column buffers; parquet_encode.c: buffers into pages and column
 * chunks; parquet_meta.c: Thrift page headers and the footer).  Private to
 * formats/; nothing outside includes it.
 */
#ifndef ZX_FORMATS_PARQUET_INT_H
#define ZX_FORMATS_PARQUET_INT_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "formats/parquet.h"
#include "formats/thrift_compact.h"
#include "common/dcell.h"

/* Parquet enums (parquet.thrift). */
enum { PQ_BOOLEAN = 0, PQ_INT32 = 1, PQ_INT64 = 2, PQ_DOUBLE = 5, PQ_BYTE_ARRAY = 6,
       PQ_FLBA = 7 };
enum { PQ_ENC_PLAIN = 0, PQ_ENC_RLE = 3, PQ_ENC_RLE_DICTIONARY = 8 };
enum { PQ_PAGE_DATA = 0, PQ_PAGE_DICTIONARY = 2 };
enum { PQ_CODEC_UNCOMPRESSED = 0, PQ_CODEC_SNAPPY = 1, PQ_CODEC_ZSTD = 6 };

#define PQ_DICT_MAX_BYTES (1u << 20)  /* dictionary page, PLAIN-encoded */
#define PQ_DICT_MAX_ENTRIES 65536u
#define PQ_STAT_MAX 64                /* longest string min/max written */
#define PQ_RG_MAX_ROWS (1u << 30)     /* rows per row group, whatever size */

/* Byte buffers are zx_buf (common/buf.h): p is char *, so the bytes are
 * read through (const uint8_t *) where they are unsigned. */

/* One dictionary entry: its bytes are at dict.plain.p + off (after their
 * 4-byte length). */
typedef struct pq_dent {
    uint32_t off, len, hash;
} pq_dent;

/* Statistics of one column chunk, as the footer writes them. */
typedef struct pq_stats {
    int64_t null_count;
    int64_t nan_count;      /* DOUBLE only; -1 otherwise */
    int has_minmax;         /* min/max below are set */
    int legacy;             /* write the deprecated min / max too */
    uint8_t minlen, maxlen;
    uint8_t min[PQ_STAT_MAX], max[PQ_STAT_MAX]; /* encoded per type */
} pq_stats;

/* What the footer needs of one column chunk. */
typedef struct pq_chunk_meta {
    int64_t file_offset;         /* first page */
    int64_t data_page_offset;
    int64_t dict_page_offset;    /* -1: none */
    int64_t num_values;
    int64_t total_uncompressed, total_compressed;
    unsigned encodings;          /* bit per PQ_ENC_* */
    pq_stats st;
} pq_chunk_meta;

typedef struct pq_rowgroup {
    int64_t num_rows, file_offset, total_byte_size, total_compressed;
    pq_chunk_meta *chunks;       /* ncols, owned */
} pq_rowgroup;

/* A column's statistics over the row groups written.  Byte-array min and
 * max are kept cut to PQ_STAT_MAX + 1 bytes: a value that long stands for
 * "longer than PQ_STAT_MAX" (unknown), and comparing cut values orders
 * them as the whole values would wherever the outcome can matter (two
 * values cut alike are both too long). */
typedef struct pq_filestats {
    uint64_t values, nulls, nans, compressed, uncompressed;
    int has;                     /* a min/max candidate was seen */
    int64_t imin, imax;
    double dmin, dmax;
    zx_i128 qmin, qmax;
    uint8_t bminlen, bmaxlen;
    uint8_t bmin[PQ_STAT_MAX + 1], bmax[PQ_STAT_MAX + 1];  /* also DECIMAL p > 18 */
} pq_filestats;

typedef struct pq_col {
    zx_dcol dc;                  /* name: owned copy */
    zx_dc_target t;              /* what the column takes (dcell.h) */
    int phys;                    /* PQ_BOOLEAN .. PQ_FLBA */
    int flba_len;                /* PQ_FLBA: bytes per value */
    int dict_ok;                 /* type may use the dictionary */
    int own;                     /* the zx_type taken as it is (parquet_batch.c),
                                  * ZX_T__COUNT for none */
    int32_t field_id;            /* SchemaElement.field_id; 0: none */

    /* the row group being buffered */
    zx_buf defs;                 /* bit r set: row r has a value */
    uint32_t nvals;              /* values (non-NULL) */
    zx_buf vals;                 /* PLAIN values (BOOLEAN: bits) */
    uint64_t bytes;              /* what this column adds to rg_bytes */
    uint64_t plain;              /* byte arrays: their PLAIN size (4 + length
                                  * each) in this row group, dictionary or not */
    uint64_t slice_bytes;        /* parquet_batch.c's scratch: the slice's */
    uint32_t slice_cells;        /* text (4 + length each) and its cells */
    int dict_on;                 /* values go through the dictionary */
    zx_buf dict;                 /* dictionary entries, PLAIN-encoded */
    pq_dent *dent;
    uint32_t ndent, dent_cap;
    uint32_t *slots;             /* open addressing: hash tag, entry + 1; 0 empty
                                  * (parquet_encode.c) */
    uint32_t nslots;             /* power of two, or 0 */
    uint32_t *idx;               /* dictionary index per value */
    size_t idx_cap;

    /* statistics of the row group so far */
    uint64_t nulls, nans;
    int has;                     /* a min/max candidate was seen */
    int64_t imin, imax;
    double dmin, dmax;
    zx_i128 qmin, qmax;
    zx_buf bmin, bmax;           /* byte arrays in PLAIN mode */

    /* statistics of the row groups written (zx_pq_col_stats), folded in
     * by pq_flush_rowgroup */
    pq_filestats f;
} pq_col;

/* Fold one value into the column's statistics (min/max; NaN counted, never
 * a bound).  Both the row path (parquet.c) and the column path
 * (parquet_batch.c) use these, so their statistics agree. */
static inline void pq_stat_i64(pq_col *c, int64_t v)
{
    if (!c->has) {
        c->imin = c->imax = v;
        c->has = 1;
    } else if (v < c->imin) {
        c->imin = v;
    } else if (v > c->imax) {
        c->imax = v;
    }
}

static inline void pq_stat_f64(pq_col *c, double d)
{
    if (d != d) {
        c->nans++;
    } else if (!c->has) {
        c->dmin = c->dmax = d;
        c->has = 1;
    } else if (d < c->dmin) {
        c->dmin = d;
    } else if (d > c->dmax) {
        c->dmax = d;
    }
}

struct zx_pq_writer {
    int fd;
    zx_pq_opts o;
    pq_col *cols;
    size_t ncols;

    uint64_t pos;                /* bytes of the file produced so far */
    zx_buf out;                  /* write buffer */

    uint32_t rg_rows;            /* rows buffered in this row group */
    uint64_t rg_bytes;           /* their buffered bytes (all columns) */
    uint64_t rows, nulled;
    int misfit_set;             /* the first misfit: column and row */
    size_t misfit_col;
    uint64_t misfit_row;

    pq_rowgroup *rgs;
    uint32_t nrgs, rgs_cap;

    zx_buf page, cpage;          /* scratch: a page, compressed page */
    zx_tc tc;                    /* scratch: a page header */
    zx_buf scratch;           /* scratch: value conversions */
    ZSTD_CCtx *zc;
    const zx_value **rowptrs;    /* scratch: one row's values (ncols; NULL: none) */
    const zx_value **grid;       /* scratch: rows x ncols values (parquet_batch.c) */
    size_t grid_cap;
    int failed;
};

/* parquet.c */

/* Append one row: vp[i] is column i's value (NULL: none).  May write the
 * row group.  0 or -1 with err as zx_pq_write_row. */
int pq_write_row(zx_pq_writer *w, const zx_value *const *vp, char *err, size_t errlen);

/* Append the byte array s[0..n) (its column's form already) to c, through
 * the dictionary when on (hash: its pq_dict_hash, or NULL).  0 (a value),
 * 1 (too long: a misfit, not counted), -1 (out of memory). */
int pq_put_bytes(zx_pq_writer *w, pq_col *c, const char *s, size_t n, const uint32_t *hash);

/* parquet_batch.c: the zx_type a column of type t takes as it is
 * (ZX_T_INT for INT64 ...), ZX_T__COUNT for none. */
int pq_own_type(zx_dtype t);

/* parquet_encode.c */

/* The dictionary's hash of s[0..n). */
uint32_t pq_dict_hash(const uint8_t *s, uint32_t n);

/* Ask the CPU to bring in the slot where a value of hash h is looked up
 * first (a hint: no effect on what is stored). */
void pq_dict_prefetch(const pq_col *c, uint32_t h);

/* Add s[0..n) to c's dictionary (*hash: its pq_dict_hash, or NULL to
 * compute it); *index gets its entry.  Returns 0, 1 when the dictionary
 * is full (the caller falls back to PLAIN), -1 when out of memory. */
int pq_dict_add(pq_col *c, const uint8_t *s, uint32_t n, const uint32_t *hash,
                uint32_t *index);

/* Turn c's dictionary-encoded values into PLAIN values and stop using the
 * dictionary for this row group (statistics are taken from the entries).
 * 0 or -1 (out of memory). */
int pq_dict_fallback(pq_col *c);

/* Fold a byte-array value into c's min/max.  0 or -1 (out of memory). */
int pq_stats_bytes(pq_col *c, const uint8_t *s, size_t n);

/* Encode, compress and write the buffered row group, append its metadata
 * and reset the column buffers.  0 or -1 with err. */
int pq_flush_rowgroup(zx_pq_writer *w, char *err, size_t errlen);

/* Append n bytes to the file (through w->out).  0 or -1 with err. */
int pq_emit(zx_pq_writer *w, const void *p, size_t n, char *err, size_t errlen);
/* Write w->out to fd.  0 or -1 with err. */
int pq_out_flush(zx_pq_writer *w, char *err, size_t errlen);

/* parquet_meta.c */

/* A data or dictionary page header into t (reset first). */
void pq_meta_page_header(zx_tc *t, int page_type, int32_t uncompressed, int32_t compressed,
                         int32_t num_values, int encoding);

/* The footer's FileMetaData into t (reset first). */
void pq_meta_footer(zx_tc *t, const zx_pq_writer *w);

/* Codec number (PQ_CODEC_*) of w's option. */
int pq_meta_codec(const zx_pq_writer *w);

#endif
