/*
 * dtype.h — the logical column types of a result that leaves zx (a reverse
 * sync's query result): what destinations and file formats (formats/) map
 * to their own types.  Values travel as zx_value cells of a zx_rowset
 * (common/rowset.h); which cell types each logical type takes is said in
 * workers/destinations/dest.h ("The rows").
 */
#ifndef ZX_COMMON_DTYPE_H
#define ZX_COMMON_DTYPE_H

/* Logical column types of a run's result.  Numbers are not part of any
 * on-disk format. */
typedef enum zx_dtype {
    ZX_DT_TEXT = 0,       /* UTF-8 text */
    ZX_DT_INT64,          /* 64-bit signed integer */
    ZX_DT_DOUBLE,         /* IEEE double */
    ZX_DT_BOOL,
    ZX_DT_TIMESTAMP,      /* µs since the epoch, UTC */
    ZX_DT_DATE,           /* calendar date (values "YYYY-MM-DD") */
    ZX_DT_DECIMAL,        /* exact decimal, precision 1..38, scale
                             0..precision (values: literal text) */
    ZX_DT_JSON,           /* JSON document (values: JSON text) */
    ZX_DT_BYTES,          /* raw bytes (values: TEXT cells of any bytes) */
    ZX_DT__COUNT
} zx_dtype;

/* Lower-case name ("text", "int64", "double", "bool", "timestamp", "date",
 * "decimal", "json", "bytes"); static, never NULL. */
const char *zx_dtype_name(zx_dtype t);

typedef struct zx_dcol {
    const char *name;     /* result column name, NUL-terminated, unique in
                             the run (compared byte for byte) */
    zx_dtype type;
    int precision, scale; /* ZX_DT_DECIMAL only (else 0) */
} zx_dcol;

#endif
