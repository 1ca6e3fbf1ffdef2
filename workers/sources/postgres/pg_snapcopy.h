/*
 * pg_snapcopy.h — the initial copy of a Postgres CDC pipeline: read a
 * table's rows as of a replication slot's exported snapshot (so that the
 * stream from the slot's consistent point continues exactly where the
 * copy ends: no row missed, none applied twice), with COPY ... TO STDOUT
 * in text format, into rowsets of zx values (pg_values.h).
 *
 * One connection, one REPEATABLE READ READ ONLY transaction that imports
 * the snapshot; tables one after the other.  The session runs with the
 * same DateStyle, TimeZone and float digits as the replication session.
 *
 * It must never: read outside the snapshot, or show the DSN's password.
 */
#ifndef ZX_SOURCES_PG_SNAPCOPY_H
#define ZX_SOURCES_PG_SNAPCOPY_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"

typedef struct zx_pgc zx_pgc;

/* Connect to dsn and open the transaction on snapshot (an exported
 * snapshot's name; NULL or "": the transaction's own).  The handle, or
 * NULL with a message in err naming dsn_shown. */
zx_pgc *zx_pgc_open(const char *dsn, const char *dsn_shown, const char *snapshot, char *err,
                    size_t errlen);

/* Start copying schema.table: its columns (names, type OIDs and declared
 * types, in order) are read first.  0, or -1 (err set: e.g. no such
 * table, no SELECT). */
int zx_pgc_table(zx_pgc *c, const char *schema, const char *table, char *err, size_t errlen);

/* The columns of the table being copied (i < zx_pgc_ncols): name, type
 * OID, declared type (format_type).  Owned by c, valid until the next
 * zx_pgc_table or zx_pgc_close. */
uint32_t zx_pgc_ncols(const zx_pgc *c);
const char *zx_pgc_colname(const zx_pgc *c, uint32_t i);
uint32_t zx_pgc_coltype(const zx_pgc *c, uint32_t i);
const char *zx_pgc_coldecl(const zx_pgc *c, uint32_t i);
/* 1 when the current table's COPY is in binary form (every column's type
 * has one zx reads: pg_binary.h), 0 text. */
int zx_pgc_binary(const zx_pgc *c);

/* Append up to max_rows rows of the table to rs (its columns are the
 * table's, by name; a NULL is no cell).  Returns the rows added (> 0), 0
 * when the table is done, -1 on a failure (err set). */
int64_t zx_pgc_read(zx_pgc *c, zx_rowset *rs, uint32_t max_rows, char *err, size_t errlen);

/* End the transaction and close; NULL is a no-op. */
void zx_pgc_close(zx_pgc *c);

#endif
