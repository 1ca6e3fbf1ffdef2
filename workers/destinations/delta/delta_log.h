/*
 * delta_log.h — a Delta Lake table's state, read from its transaction log
 * (`_delta_log/<version, 20 digits>.json`, one action per line, Delta
 * Lake's PROTOCOL.md), and the commits zx adds to it.
 *
 * Reading replays the commits in order: protocol and metaData (the last
 * of each), the live data files (each `add` not removed by a later
 * `remove`), and each application's last `txn` version.  It starts from
 * the latest checkpoint zx wrote, through the copy of that state zx keeps
 * beside it (`_zx/delta-state-<version>.json`: the same action lines),
 * else from version 0; a table whose early commits were cleaned up after
 * a checkpoint zx did not write is refused: zx does not read checkpoint
 * Parquet files.
 *
 * Writing: a commit is the lines of its actions, put at the next version
 * with put-if-absent (lake_store.h): two writers never both get a
 * version; the loser reads the commits it lost to and decides
 * (dest_delta.c).
 *
 * Errors: -1 with one line in err naming the table and the version.
 */
#ifndef ZX_DEST_DELTA_LOG_H
#define ZX_DEST_DELTA_LOG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "workers/destinations/lake/lake_store.h"

#define ZX_DELTA_LOG_DIR "_delta_log"

/* A live data file. */
typedef struct zx_delta_file {
    char *path;              /* relative to the table's root, as the add
                                action has it (decoded: no %xx) */
    int64_t size;
    int64_t records;         /* stats.numRecords; -1 unknown */
    int zx;                  /* 1: written by zx with its sidecars (tags
                                zx.rows = "1": keys and rows, "keys": keys) */
    char *add_json;          /* the add action's object as a JSON text */
    char *dv_id;             /* its deletion vector's uniqueId
                                ("<storageType><pathOrInlineDv>[@<offset>]");
                                NULL: none */
    char *dv_file;           /* a 'u' deletion vector's file, relative to
                                the root; NULL: none, or inline */
} zx_delta_file;

/* One column of the table's schema (top-level fields; nested types are
 * kept as their JSON text in type). */
typedef struct zx_delta_col {
    char *name;
    char *type;              /* "string", "long", "decimal(10,2)", or the
                                JSON text of a struct / array / map */
    int nullable;
} zx_delta_col;

typedef struct zx_delta_table {
    int64_t version;         /* -1: no table (no commit yet) */
    int reader_version, writer_version;
    json_t *protocol;        /* the last protocol action (owned); NULL: none */
    json_t *metadata;        /* the last metaData action (owned) */
    zx_delta_col *cols;      /* metadata's schema, in order */
    size_t ncols;
    zx_delta_file *files;    /* live data files, in the order added */
    size_t nfiles, cap;
    json_t *txns;            /* appId -> version (owned object) */
    int64_t first;           /* the first version replayed (a state copy's
                                version, or 0) */
    int64_t *commit_ms;      /* commitInfo.timestamp of versions
                                first..version (0: none) */
    size_t ncommit_ms;
    json_t *tombstones;      /* zx's data files removed, and its deletion
                                vector files no longer current: path -> the
                                remove's deletionTimestamp (ms) */
} zx_delta_table;

/* The folder of the deletion vector files zx writes: the random prefix of
 * their pathOrInlineDv ("zx" and the 20-character Z85 UUID), so that
 * "zx/deletion_vector_<uuid>.bin" is known as zx's. */
#define ZX_DELTA_DV_PREFIX "zx"

/* Whether t's protocol supports deletion vectors (reader 3 and writer 7
 * with the feature deletionVectors) and its configuration turns them on
 * (delta.enableDeletionVectors = true): 1 or 0. */
int zx_delta_dv_on(const zx_delta_table *t);

/* The copy of a checkpoint's state zx keeps ("_zx/delta-state-%020lld.json"). */
void zx_delta_state_name(int64_t v, char out[80]);
/* The state of t as action lines (protocol, metaData, txn, add), for
 * zx_delta_state_name: malloc'd text, NULL when out of memory. */
char *zx_delta_state_text(const zx_delta_table *t, size_t *len);

/* Read the table at root (lake) into *t (zeroed first; free with
 * zx_delta_table_free even after -1).  No log: t->version -1, 0.  0 or -1
 * (a commit missing or malformed, a checkpoint zx cannot read, a protocol
 * whose reader or writer version or features zx does not support: it
 * reads and writes reader versions 1 and 3, writer versions 1, 2 and 7,
 * with the features deletionVectors and appendOnly). */
int zx_delta_read(zx_lake *lake, zx_delta_table *t, char *err, size_t errlen);
void zx_delta_table_free(zx_delta_table *t);

/* Replay commit `version` (its text, n bytes) onto t (t->version becomes
 * version).  Used by zx_delta_read and after a lost race.  0 or -1. */
int zx_delta_apply(zx_delta_table *t, int64_t version, const char *text, size_t n,
                   const char *where, char *err, size_t errlen);

/* The last txn version of application app, or -1. */
int64_t zx_delta_txn(const zx_delta_table *t, const char *app);

/* "_delta_log/%020lld.json" of version v into out (64 bytes). */
void zx_delta_commit_name(int64_t v, char out[64]);

/* The Delta type of a result column ("string", "long", "double",
 * "boolean", "timestamp", "date", "decimal(p,s)", "binary"; JSON as
 * "string").  Static or in buf (32 bytes). */
const char *zx_delta_type_of(const zx_dcol *c, char buf[32]);

/* The schemaString of columns cols: a struct of the table's columns
 * (t->cols, kept first and as they are) and the columns of cols it lacks
 * (nullable), appended in cols' order.  Malloc'd text (caller frees), or
 * NULL with err: a column of cols whose type differs from the table's
 * (what changed and what to do), out of memory.  *added gets how many
 * columns were appended. */
char *zx_delta_schema_merge(const zx_delta_table *t, const zx_dcol *cols, size_t ncols,
                            size_t *added, const char *where, char *err, size_t errlen);

#endif
