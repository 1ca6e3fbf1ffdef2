/*
 * lake_part.h — the partitions of a lake table (`partition_by:` of a
 * reverse sync): Iceberg's transforms (the table spec's "Partition
 * Transforms") of a result column, and the value each row falls in.
 *
 *   col | identity(col)   the value itself            (Delta: the only one)
 *   year(col)             years since 1970            (timestamp, date)
 *   month(col)            months since 1970-01        (timestamp, date)
 *   day(col)              days since 1970-01-01, a date (timestamp, date)
 *   hour(col)             hours since 1970-01-01 00:00 (timestamp)
 *   bucket[N](col)        (murmur3_x86_32 of the value & INT_MAX) % N
 *                         (int64, text, bytes, date, timestamp, decimal)
 *   truncate[W](col)      int64: v - (v mod W); text: the first W
 *                         characters; decimal: the unscaled value so
 *
 * Pure.  Errors: -1 with one line in err naming the spec.
 */
#ifndef ZX_DEST_LAKE_PART_H
#define ZX_DEST_LAKE_PART_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dtype.h"
#include "common/rowset.h"

#define ZX_PART_MAX 8            /* partition fields of a table at most */

typedef enum zx_ptransform {
    ZX_PT_IDENTITY = 0, ZX_PT_YEAR, ZX_PT_MONTH, ZX_PT_DAY, ZX_PT_HOUR, ZX_PT_BUCKET,
    ZX_PT_TRUNCATE
} zx_ptransform;

typedef struct zx_part {
    zx_ptransform t;
    int32_t n;                   /* bucket's N, truncate's W (1..1000000) */
    char col[64];                /* the source column */
} zx_part;

/* What a row's partition value is: its kind follows the transform's
 * result type (zx_part_result). */
typedef enum zx_pkind {
    ZX_PK_LONG = 0,              /* identity of INT64 / TIMESTAMP (µs), truncate of INT64 */
    ZX_PK_INT,                   /* year, month, hour, bucket */
    ZX_PK_DATE,                  /* day; identity of DATE (days) */
    ZX_PK_STRING,                /* identity and truncate of TEXT */
    ZX_PK_BOOL,
    ZX_PK_DOUBLE,
    ZX_PK_BINARY,                /* identity of BYTES */
    ZX_PK_TIMESTAMP,             /* identity of TIMESTAMP: µs, UTC */
    ZX_PK_DECIMAL                /* identity / truncate of DECIMAL: unscaled (p <= 18) */
} zx_pkind;

typedef struct zx_pval {
    int is_null;
    int64_t i;                   /* LONG, INT, DATE, BOOL, TIMESTAMP, DECIMAL */
    double d;                    /* DOUBLE */
    const char *s;               /* STRING, BINARY: s[0..len) (into the
                                    value or scratch: valid until either
                                    changes) */
    size_t len;
} zx_pval;

/* Parse "col", "identity(col)", "day(col)", "bucket[16](col)",
 * "bucket(16, col)", "truncate[4](col)", "truncate(4, col)" (spaces
 * allowed).  0 or -1 with err. */
int zx_part_parse(const char *spec, zx_part *out, char *err, size_t errlen);

/* Whether transform p applies to a column of type c: 0, or -1 with err
 * ("day(name): text columns have no day; ..."). */
int zx_part_check(const zx_part *p, const zx_dcol *c, char *err, size_t errlen);

/* The result kind of p on column c (after zx_part_check). */
zx_pkind zx_part_result(const zx_part *p, const zx_dcol *c);

/* Iceberg's transform text ("identity", "day", "bucket[16]",
 * "truncate[4]") and the partition field's name ("created_at_day",
 * "id_bucket", "name_trunc", the column for identity), into buf. */
const char *zx_part_transform(const zx_part *p, char buf[32]);
const char *zx_part_field_name(const zx_part *p, char buf[96]);

/* The partition value of v (column c) under p into out.  scratch is used
 * for converted text (truncate).  0, or -1 out of memory.  A value that
 * does not fit its column is NULL. */
int zx_part_value(const zx_part *p, const zx_dcol *c, const zx_value *v, zx_buf *scratch,
                  zx_pval *out);

/* murmur3_x86_32 with seed 0 of p[0..n) (Iceberg's bucket hash). */
uint32_t zx_murmur3_32(const void *p, size_t n);

/* A partition value as Delta's partitionValues text ("2024-05-01", "42",
 * the string itself; timestamps "YYYY-MM-DD HH:MM:SS.ffffff"), into b
 * (reset first); NULL values: return 1 (Delta's null), else 0; -1 out of
 * memory. */
int zx_part_text(zx_pkind k, const zx_pval *v, zx_buf *b);

#endif
