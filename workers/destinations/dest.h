/*
 * dest.h — what a reverse-sync destination is (docs/architecture.md §7).
 *
 * A destination is a plug-in (conf/plugin.h): a folder with its
 * `const zx_dest` (name, capabilities, callbacks) and its
 * `<name>_plugin.c`, one line in workers/plugins.c.  A sync run
 * (one forked worker, workers/syncs/run.c) reads the workspace, decides what
 * to send, and drives its destination:
 *
 *     open → begin → (write | delete_keys)* → [prepare] → delete_keys* → commit → close
 *                  ↘ abort (any error, a stop) → close
 *
 * One run is one begin/commit.  Nothing a run sends may be visible as
 * committed before commit returns 0 where the destination allows it
 * (ZX_DEST_TXN: one database transaction; ZX_DEST_ATOMIC_REPLACE: files
 * written under a temporary name and renamed into place at commit).  After
 * abort the destination holds what it held before begin (tables: the
 * transaction rolled back; files: the temporary file removed).
 *
 * The rows.  Every batch handed to write is a zx_rowset (common/rowset.h)
 * whose columns are exactly the run's columns (zx_dest_run.cols), in the
 * same order (rs->cols[i] is cols[i]; rs->ncols == ncols), one row per
 * record.  A cell's zx_value type is one of:
 *     ZX_T_NULL (or no cell)  NULL
 *     ZX_T_INT                int64          (INT64 columns; also BOOL 0/1)
 *     ZX_T_REAL               double         (DOUBLE columns; NaN/inf allowed)
 *     ZX_T_BOOL               0/1            (BOOL columns)
 *     ZX_T_TEXT               bytes          (TEXT; DATE as "YYYY-MM-DD";
 *                                             DECIMAL as its literal,
 *                                             "-123.4500"; BYTES as the
 *                                             raw bytes)
 *     ZX_T_TIMESTAMP          u.i = µs since the epoch, UTC; s = text
 *     ZX_T_JSON               compact JSON text (JSON columns), or a number
 *                             kept as text (rowset.h)
 * A value whose type does not fit its column's (text in an INT64 column) is
 * converted by the destination where that is lossless ("42" → 42) and
 * otherwise written as NULL, counted in zx_dest_stats.nulled and the first
 * one noted with zx_dest_misfit; write still returns 0.  The run (run.c)
 * then fails: a value the destination cannot hold is never "delivered".
 *
 * Keys.  delete_keys gets a rowset whose columns are the run's key columns
 * (zx_dest_run.key_cols, in that order), one row per key to delete; the
 * values have the types above (the key as the last run that sent it saw it).
 * The run refuses a result with a NULL key, or one key twice, before begin
 * (workers/syncs/run.c): a destination never gets either.  A key value
 * that cannot fit its key column (text longer than a MySQL key column
 * holds) cannot be written as NULL: it fails the run, naming the column.
 *
 * Errors.  Every callback returns 0, or -1 with one line in err (at most
 * errlen bytes, NUL-terminated) a person can act on, naming the
 * destination ("postgres crm_db table public.customers: permission
 * denied for table customers"), never a password.  After 0, err holds
 * nothing of meaning (a destination may leave there the text of an error
 * it handled, a conflict it retried): the caller clears it.  After -1 from
 * begin, write, delete_keys or commit the run calls abort then close.
 *
 * Process: a destination runs in the sync run's worker process only; it
 * may block (the run has nothing else to do) but must honour
 * zx_dest_args.deadline_ms on every network wait it makes (connect
 * timeout, statement timeout), so a stopped server cannot hang a run.
 */
#ifndef ZX_SYNCS_DEST_H
#define ZX_SYNCS_DEST_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "common/rowset.h"
#include "conf/config.h"

/* What a destination can do (zx_dest.caps). */
#define ZX_DEST_TXN            0x1u  /* begin..commit is one transaction */
#define ZX_DEST_ATOMIC_REPLACE 0x2u  /* replace swaps the whole content at
                                        commit (readers see old or new) */
#define ZX_DEST_DELETES        0x4u  /* delete_keys works (mirror mode) */
#define ZX_DEST_UPSERT         0x8u  /* write in upsert/mirror mode replaces
                                        a row with the same key */
#define ZX_DEST_PARTITIONS     0x10u /* takes zx_dest_run.partition_by */

/* Sync modes (conf `mode:`). */
typedef enum zx_sync_mode {
    ZX_MODE_REPLACE = 0,  /* the destination holds exactly the result */
    ZX_MODE_APPEND,       /* every row of the result is added */
    ZX_MODE_UPSERT,       /* rows new or changed since the last good run,
                             replacing the row with the same key */
    ZX_MODE_MIRROR        /* upsert + delete_keys of keys that disappeared */
} zx_sync_mode;

/* What a destination gets at open: where to write.  Owned by the caller,
 * valid until close returns. */
typedef struct zx_dest_args {
    const zx_conf *conf;
    const char *sync;             /* the sync's (pipeline's) name */
    const zx_conf_connection *conn; /* table destinations: the connection
                                       (kind postgres, mysql or sqlite);
                                       files: an s3:// path's (kind aws);
                                       kafka: its kind: kafka one;
                                       else NULL */
    const char *table;            /* table destinations: as written in the
                                     configuration: "schema.table" or
                                     "table" (postgres: schema public;
                                     mysql: the dsn's database) */
    const void *opts;             /* the destination's own options (its
                                     plug-in's struct, zx_conf_pipeline.
                                     dest_own: files: zx_files_opts, whose
                                     path is absolute, a folder or a file
                                     ending with the format's extension);
                                     NULL for one without (the table
                                     destinations) */
    const char *const *roots;     /* files: the folders it may write in
                                     (zx_conf_file_roots); path must lie
                                     under one, with no symbolic link
                                     below it */
    size_t nroots;
    int64_t deadline_ms;          /* per network wait (connect, statement);
                                     <= 0: 30 s */
    /* The run's stop (zxd stopping, the run cancelled): 1 once asked.  A
     * destination that waits longer than a network wait (a retry's
     * backoff, a queue of requests) looks at it at least every 200 ms and
     * gives up with an error.  NULL: no stop to look at. */
    int (*stopping)(void *ctx);
    void *stop_ctx;
    /* What sends, in messages: NULL "sync" (a reverse sync's run), or
     * "forward of" (a stream's forwarder: workers/forward/), followed by
     * the name in sync. */
    const char *role;
} zx_dest_args;

/* One run, as begin sees it.  Owned by the caller, valid until commit or
 * abort returns. */
typedef struct zx_dest_run {
    uint64_t run_id;              /* unique, increasing; files name their
                                     per-run output with it */
    zx_sync_mode mode;
    const zx_dcol *cols;          /* the result's columns */
    size_t ncols;
    const char *const *key_cols;  /* names among cols (upsert, mirror: at
                                     least one; else may be 0) */
    size_t nkey_cols;
    uint64_t rows_expected;       /* rows write will get in all (a hint for
                                     progress and preallocation) */
    uint64_t deletes_expected;    /* keys delete_keys will get in all */
    const char *const *partition_by; /* ZX_DEST_PARTITIONS: the sync's
                                     partition_by (workers/destinations/
                                     lake/lake_part.h syntax, checked at
                                     load); NULL, 0: none */
    size_t npartition_by;
    /* Set by the run: where zx_dest_row_failed and zx_dest_key_failed
     * report (a destination never calls it itself). */
    void (*failed)(void *ctx, uint32_t row, int is_delete, const char *why);
    void *failed_ctx;
    /* Set by the run (NULL: not known): whether row `row` of the batch
     * write is handling replaces a row an earlier run of the sync sent
     * (1: its key was recorded, with another row hash), is new (0: never
     * sent, or sent under other key columns), or the run does not know
     * (-1: replace and append runs record nothing).  Called with
     * failed_ctx, during write only (event destinations: Debezium's op
     * "u" or "c"). */
    int (*row_seen)(void *ctx, uint32_t row);
} zx_dest_run;

/* What a destination counts during a run (zeroed by the caller before
 * begin; read after commit). */
typedef struct zx_dest_stats {
    uint64_t rows_written;        /* rows write accepted */
    uint64_t rows_deleted;        /* keys delete_keys removed (or sent) */
    uint64_t nulled;              /* values written as NULL (misfits) */
    uint64_t bytes;               /* bytes written (files: file size) */
    char misfit_col[128];         /* the column of the first value written
                                     as NULL because it did not fit ("":
                                     none yet); zx_dest_misfit sets it */
    char misfit_val[72];          /* that value, as text, cut short */
    uint64_t files;               /* lake tables: data files the run added */
    uint64_t files_removed;       /* lake tables: data files it removed
                                     (replaced, or rewritten) */
    char made[96];                /* lake tables: what the commit made, for
                                     status and the run history ("delta
                                     version 7"); "" none */
    /* Destinations that send requests (APIs, bulk endpoints, brokers):
     * what `zxctl runs` shows of them.  Others leave them 0. */
    uint64_t batches;             /* requests (batches) sent and accepted */
    uint64_t batches_retried;     /* sends repeated after a retryable error
                                     (a timeout, 5xx, 429), each counted */
    uint64_t batches_failed;      /* batches given up on (the run fails) */
    uint64_t rows_failed;         /* rows and keys refused one by one
                                     (counted by the run: zx_dest_row_failed) */
    char first_error[256];        /* the first error a batch or a row met,
                                     retried or not ("HTTP 503 from
                                     /contacts/batch"); "" none.  The
                                     destination sets the batch errors
                                     (zx_dest_note_error); never a secret */
} zx_dest_stats;

/* Note why (one line) in st->first_error unless an error is noted
 * already.  Never fails. */
void zx_dest_note_error(zx_dest_stats *st, const char *why);

/* Row `row` of the batch write is handling was refused on its own while
 * the rest of the batch went through (an API's per-item result, a bulk
 * item error); why: one line a person can act on, no secret ("HTTP 422:
 * email is invalid").  The run keeps that key's old hash, so the next run
 * sends the row again (a new row stays unsent; append and replace runs
 * only count it), counts it in rows_failed and notes the first why.
 * Call it before write returns.  Never fails. */
void zx_dest_row_failed(const zx_dest_run *run, uint32_t row, const char *why);

/* The same for key `row` of the batch delete_keys is handling: the key
 * stays recorded, so the next mirror run deletes it again. */
void zx_dest_key_failed(const zx_dest_run *run, uint32_t row, const char *why);

/* Note a misfit of column `col` (NUL-terminated), value v, in st unless
 * one is noted already: only the first is kept.  Never fails. */
void zx_dest_misfit(zx_dest_stats *st, const char *col, const zx_value *v);

typedef struct zx_dest_ops {   /* struct tag named in conf/plugin.h */
    const char *name;             /* "postgres", "mysql", "sqlite", "files", "delta",
                                     "iceberg", "kafka" */
    unsigned caps;                /* ZX_DEST_* */

    /* Connect / check the target; no change made.  A connection with
     * read_only: true is refused here ("connection X is read_only: zx
     * never writes to it").  *state is freed by close.  0 or -1. */
    int (*open)(const zx_dest_args *a, void **state, char *err, size_t errlen);

    /* Start the run: make the table (or file) when missing, with a column
     * per cols entry (types mapped by the destination) and a primary key on
     * key_cols when there are any; a table that exists gets the columns it
     * lacks.  replace: empty it inside the transaction (or write a new
     * file).  stats is where the run's counts go.  0 or -1. */
    int (*begin)(void *state, const zx_dest_run *run, zx_dest_stats *stats,
                 char *err, size_t errlen);

    /* Send one batch (see "The rows").  upsert/mirror: a row whose key
     * exists replaces it.  0 or -1. */
    int (*write)(void *state, const zx_rowset *rs, char *err, size_t errlen);

    /* mirror: delete these keys (see "Keys").  NULL when the destination
     * lacks ZX_DEST_DELETES.  0 or -1. */
    int (*delete_keys)(void *state, const zx_rowset *keys, char *err, size_t errlen);

    /* Optional (NULL: nothing to do).  The run has handed over its last
     * row (deletes may still follow) and has work of its own left before
     * commit (sorting its keys, waiting for the writer): a destination may
     * start what commit would do first (building an index) without
     * waiting for it; its outcome is then met by the next call.  0 or -1
     * (then abort follows). */
    int (*prepare)(void *state, char *err, size_t errlen);

    /* Make the run's writes durable and visible.  0 or -1 (then nothing of
     * the run is visible, where the destination allows it). */
    int (*commit)(void *state, char *err, size_t errlen);

    /* Undo what the run wrote (roll back, remove the temporary file).
     * Never fails; safe after a failed begin. */
    void (*abort)(void *state);

    /* Disconnect and free the state.  NULL state is a no-op. */
    void (*close)(void *state);
} zx_dest;

/* ---- the registry (dest_registry.c) -------------------------------- */

/* The destination called name ("postgres", "mysql", "sqlite", "files"):
 * that of the destination plug-in of that name; NULL when this build has
 * none.  A run takes its sync's p->dest_plugin->dest instead. */
const zx_dest *zx_dest_find(const char *name);

#endif
