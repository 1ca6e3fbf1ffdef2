/*
 * dest_pg_state.h — the Postgres destination's connection and run state
 * (pgd), shared by its two parts; private to them:
 *
 *   dest_postgres.c  open, close, begin (the table made or checked, the
 *                    statements built), commit, abort, and the messages
 *   dest_pg_write.c  a batch: encoded (dest_pg_copy.c), COPYed into the
 *                    table or a staging table, merged; delete_keys
 *
 * Messages: a failure's text is in d->msg (one line), its SQLSTATE in
 * d->sqlstate.
 */
#ifndef ZX_DEST_PG_STATE_H
#define ZX_DEST_PG_STATE_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "common/dcell.h"
#include "common/rowset.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/postgres/dest_pg_int.h"

#define MAX_NAME 63                     /* NAMEDATALEN - 1 */
#define SEEN_MAX 4000000u               /* keys a run tracks for the direct path */
#define SEND_CHUNK (1u << 20)

typedef struct pgd {
    PGconn *c;
    char *cname;                /* connection name */
    char *dsn_shown;
    char *schema, *table;       /* unquoted */
    char *qtable;               /* "schema"."table" */
    char *label;                /* "postgres NAME table schema.table" */
    int64_t deadline_ms;
    char msg[1024];             /* the last failure, one line */
    char sqlstate[6];

    /* the run (begin .. commit/abort) */
    zx_sync_mode mode;
    zx_dest_stats *st;
    size_t ncols, nkeys;
    zx_pg_col *cols;
    char **qcols;               /* quoted column names */
    size_t *key;                /* key column indexes into cols */
    int binary, kbinary;        /* COPY formats of rows / keys */
    int direct;                 /* upsert into a table empty at begin */
    int held;                   /* a COPY of sql_copy is open across
                                   batches (append, replace, the direct
                                   path): the server stores one batch while
                                   the next is read and encoded; ended
                                   (zx_pgd_held_end) before any other
                                   statement, and once it has been open a
                                   quarter of the deadline */
    int64_t held_since_ms;
    int unsure;                 /* key_later, and the run's keys outgrew
                                   seen: a key may come again; the key's
                                   build keeps each key's last row */
    int key_later;              /* the run made the table: its primary key
                                   was dropped at once and is built before
                                   the first statement that needs it (a
                                   merge, a delete) or at commit, after the
                                   rows are in (zx_pgd_key_build) */
    int building;               /* that build was sent (zx_pgd_key_start,
                                   at prepare) and its outcome not yet
                                   read: zx_pgd_held_end reads it before
                                   any other statement */
    int stage_made, stage_used, kstage_made, kstage_used;
    zx_pg_hset seen;
    char *sql_copy, *sql_copy_stage, *sql_merge, *sql_copy_keys, *sql_delete;

    /* a batch */
    zx_buf data, keys, scratch;
    size_t *roff, *rend, *koff, *klen;
    uint64_t *khash;
    uint8_t *skip;
    size_t rows_cap;
    size_t *foff;               /* the current row's field j: its bytes at
                                   [foff[2j], foff[2j + 1]) in data */
    size_t *idx;                /* 0, 1, .. ncols - 1 */
    zx_value *vals;
} pgd;

/* ---- dest_postgres.c --------------------------------------------------- */

/* Copy the first line of s into d->msg (white space runs become one
 * space, "ERROR:  " prefixes go). */
void zx_pgd_set_msg(pgd *d, const char *s);

/* d->msg and d->sqlstate from a failed result r (NULL: the connection's
 * message). */
void zx_pgd_set_msg_res(pgd *d, const PGresult *r);

/* Run sql (params text, may be NULL); the result when it succeeded (the
 * caller clears it), else NULL with d->msg set. */
PGresult *zx_pgd_q(pgd *d, const char *sql, int n, const char *const *params);

/* Run sql, a command without result rows.  0, or -1 (d->msg). */
int zx_pgd_sql_run(pgd *d, const char *sql);

/* The keys a run tracks for the direct path (SEEN_MAX; a test may lower
 * it). */
extern size_t zx_pgd_seen_max;

/* The primary key of a table this run made (d->key_later), built now;
 * when d->unsure and a key came twice, each key's last row is kept (the
 * table was made in this transaction and only appended to: its rows are
 * in the order they came, ctid order) and the others deleted first.  0
 * (also when there is nothing to build), or -1 (d->msg). */
int zx_pgd_key_build(pgd *d);

/* The same build sent without waiting for it (not when d->unsure: that
 * one may need a second statement): d->building; its outcome is read by
 * zx_pgd_held_end.  0, or -1 (d->msg). */
int zx_pgd_key_start(pgd *d);

/* ---- dest_pg_write.c ----------------------------------------------------- */

/* End the COPY held open across batches (d->held), if any: its binary
 * trailer, then its outcome; or read the outcome of a key build sent
 * without waiting (d->building).  0 (also when there was none), or -1
 * with d->msg (a row of an earlier batch refused, the key not built: the
 * run fails). */
int zx_pgd_held_end(pgd *d);

/* zx_dest.write and zx_dest.delete_keys (dest.h). */
int zx_pgd_write(void *state, const zx_rowset *rs, char *err, size_t errlen);
int zx_pgd_delete_keys(void *state, const zx_rowset *keys, char *err, size_t errlen);

#endif
