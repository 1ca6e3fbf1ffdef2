/*
 * lake_writer.h — the data files one run of a lake destination (Delta
 * Lake, Iceberg) writes, and the copy-on-write both do for upsert and
 * mirror:
 *
 *   rows      zx_lw_write streams the run's rows into Parquet data files
 *             (formats/parquet.h) of file_rows rows at most, one open
 *             file per partition (lake_part.h; at most 32 open at once:
 *             the least recently used is finished), named
 *             "<dir><prefix>-<5 digits>.parquet" relative to the table's
 *             root, each with zx's copy of its rows and key hashes beside
 *             it (lake_side.h) when args.side;
 *   changes   with args.track, the key hash of every row written and key
 *             deleted (zx_lw_delete) is kept (lake_keys.h), with the first
 *             key column's value (INT64 and TEXT keys) to check another
 *             writer's file by its key range (zx_lw_range_hits);
 *   rewrite   zx_lw_touches says whether a data file zx wrote holds a
 *             changed key (from its .keys copy); zx_lw_rewrite writes its
 *             other rows again into the run's new files (from its .rows
 *             copy, columns matched by name: a column the copy lacks is
 *             NULL), so the old file can be removed.
 *
 * When a data file is complete, args.on_file is called with its name,
 * size, rows and the Parquet writer (its zx_pq_col_stats are final), for
 * the destination to note it (Delta's add action, Iceberg's manifest
 * entry).  zx_lw_abort deletes every data file and copy the run wrote.
 *
 * Errors: -1 with one line in err naming the table (args.where) and the
 * file.  A writer is one run's, one thread's.
 */
#ifndef ZX_DEST_LAKE_WRITER_H
#define ZX_DEST_LAKE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "common/rowset.h"
#include "formats/parquet.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/lake/lake_part.h"
#include "workers/destinations/lake/lake_store.h"

typedef struct zx_lake_writer zx_lake_writer;

typedef struct zx_lw_args {
    zx_lake *lake;                /* the table's store (borrowed) */
    const char *where;            /* "delta /srv/t", for messages (copied) */
    const zx_dcol *cols;          /* the run's columns (borrowed: until free);
                                     JSON is written as TEXT */
    size_t ncols;
    const int32_t *field_ids;     /* Iceberg: ncols field ids; NULL: none */
    const char *const *key_cols;  /* names among cols; may be 0 */
    size_t nkeys;
    int side;                     /* keep the copy of each file's rows */
    int keys_only;                /* with side: keep only the key hashes
                                     (a merge-on-read table: deletes by
                                     position, no file is ever rewritten) */
    int track;                    /* keep the changed keys (needs side) */
    int fresh;                    /* with track: the table holds no data
                                     file at the run's start, so no key
                                     written can replace a row: they are
                                     not kept (zx_lw_changed stays 0), and
                                     deletes are no-ops.  A destination
                                     that finds another writer's files at
                                     commit must then fail the run */
    zx_pq_codec codec;
    uint32_t file_rows;           /* rows per file at most (>= 1) */
    const char *dir;              /* "" or "data/" (with its '/') */
    const char *prefix;           /* "zx-<run id>" */
    zx_dest_stats *stats;         /* rows nulled (misfits) counted here */
    const zx_part *parts;         /* the partition fields (copied); each
                                     file holds one partition's rows */
    size_t nparts;                /* 0..ZX_PART_MAX */
    int drop_part_cols;           /* leave the identity partitions' columns
                                     out of the data files (Delta) */
    int part_dirs;                /* each partition's files in Hive-style
                                     folders, "<col>=<value>/" (Delta: what
                                     readers such as Polars expect); values
                                     escaped: bytes other than [A-Za-z0-9_.-]
                                     as %XX, NULL as __HIVE_DEFAULT_PARTITION__ */
    /* a data file is complete: pv its partition values (nparts): 0, or -1
     * with err (the run fails) */
    int (*on_file)(void *ctx, const char *name, uint64_t size, uint64_t rows,
                   const zx_pq_writer *pq, const zx_pval *pv, char *err, size_t errlen);
    void *ctx;
} zx_lw_args;

/* A writer for one run.  NULL with err (a key column not in cols, out of
 * memory). */
zx_lake_writer *zx_lw_new(const zx_lw_args *a, char *err, size_t errlen);
/* Deletes nothing; frees.  NULL: no-op. */
void zx_lw_free(zx_lake_writer *w);

/* Rows of the run (rs: exactly the run's columns, in order).  0 or -1. */
int zx_lw_write(zx_lake_writer *w, const zx_rowset *rs, char *err, size_t errlen);
/* The write and delete_keys of a lake destination's run (dest.h), both
 * formats': rows (deletes 0) or keys (deletes 1) to w, counted in stats.
 * running: begin succeeded; already: the run was committed before (then
 * nothing is done).  0 or -1 with err naming where. */
int zx_lw_run_put(zx_lake_writer *w, int running, int already, zx_dest_stats *stats,
                  const char *where, const zx_rowset *rs, int deletes, char *err,
                  size_t errlen);

/* Keys the run deletes (keys: the key columns, in key order).  0 or -1. */
int zx_lw_delete(zx_lake_writer *w, const zx_rowset *keys, char *err, size_t errlen);
/* Finish the open data file, if any (on_file is called).  0 or -1. */
int zx_lw_flush(zx_lake_writer *w, char *err, size_t errlen);

/* Data files open (rows written, not finished yet). */
size_t zx_lw_open_files(const zx_lake_writer *w);

/* Keys written or deleted so far (with track). */
size_t zx_lw_changed(const zx_lake_writer *w);

/* Whether data file name (zx's, relative to the root) holds a changed
 * key: 0 with *hit, ZX_LAKE_NOT_FOUND (its copy is gone), or -1. */
int zx_lw_touches(zx_lake_writer *w, const char *name, int *hit, char *err, size_t errlen);
/* The rows of data file name whose keys the run wrote or deleted, by
 * position (row order): *pos (malloc'd, the caller frees; NULL when
 * none) and *n.  0, ZX_LAKE_NOT_FOUND (its copy is gone), or -1. */
int zx_lw_changed_rows(zx_lake_writer *w, const char *name, int64_t **pos, size_t *n,
                       char *err, size_t errlen);

/* Write the rows of data file name whose keys did not change into the
 * run's files.  0, ZX_LAKE_NOT_FOUND, or -1. */
int zx_lw_rewrite(zx_lake_writer *w, const char *name, char *err, size_t errlen);

/* The data files' columns (the run's, less the partition columns left
 * out) and their count; and the index in the run's columns of data file
 * column i. */
const zx_dcol *zx_lw_file_cols(const zx_lake_writer *w, size_t *n);
size_t zx_lw_file_col_src(const zx_lake_writer *w, size_t i);

/* Whether a key the run changed may lie in [lo, hi] of the first key
 * column: INT64 keys (lo_i, hi_i) or TEXT keys (lo_s, hi_s: a max that is
 * a cut prefix counts values it starts); other types: always 1. */
int zx_lw_range_hits_int(zx_lake_writer *w, int64_t lo, int64_t hi);
int zx_lw_range_hits_text(zx_lake_writer *w, const char *lo, const char *hi);
/* The first key column's type (ranges apply to INT64 and TEXT). */
zx_dtype zx_lw_key_type(const zx_lake_writer *w);

/* Delete every data file and copy the run wrote (none is referenced by a
 * commit then).  The open file is dropped first. */
void zx_lw_abort(zx_lake_writer *w);
/* Forget the files written (they are committed: abort keeps them). */
void zx_lw_keep(zx_lake_writer *w);

/* ---- small things both formats use ---------------------------------- */

/* Tests only: with ZX_TEST_LAKE_STOP_AT=step in the environment, stop the
 * process (SIGSTOP) here, for a test to kill it at that step.  The steps
 * both formats have: "data" (the run's rows in data files, before the
 * copy-on-write), "files" (every file written: data, rewritten data,
 * Iceberg's manifests and manifest list; before the commit), "committed"
 * (the commit made, before the run reports it). */
void zx_lake_test_stop_at(const char *step);

/* A random (version 4) UUID as text. */
void zx_lake_uuid4(char out[37]);

#endif
