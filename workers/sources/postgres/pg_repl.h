/*
 * pg_repl.h — a PostgreSQL logical replication connection (libpq with
 * replication=database): identify the system, create a logical slot with
 * an exported snapshot, start streaming pgoutput from a slot, receive the
 * CopyData payloads, send standby status updates.  What it receives is
 * decoded by pgoutput.h; what to acknowledge is the caller's decision.
 *
 * The session runs with DateStyle ISO, TimeZone UTC, IntervalStyle
 * postgres and extra_float_digits 3, the forms pg_values.h reads.
 *
 * It must never: show the DSN's password (messages use dsn_shown), block
 * longer than the timeout it is given, or acknowledge anything by itself.
 * One thread per connection.
 */
#ifndef ZX_SOURCES_PG_REPL_H
#define ZX_SOURCES_PG_REPL_H

#include <stddef.h>
#include <stdint.h>

#include "workers/sources/postgres/pgoutput.h"

/* The session settings of every CDC connection (libpq's `options`): the
 * text forms pg_values.h reads. */
#define ZX_PG_SESSION_OPTIONS \
    "-c DateStyle=ISO -c TimeZone=UTC -c IntervalStyle=postgres -c extra_float_digits=3"

typedef struct zx_pgr zx_pgr;

/* Connect to dsn (a libpq URI or key=value) for logical replication, as
 * application_name app.  The handle (caller closes it), or NULL with a
 * message in err that names dsn_shown, never dsn. */
zx_pgr *zx_pgr_connect(const char *dsn, const char *dsn_shown, const char *app, char *err,
                       size_t errlen);

/* IDENTIFY_SYSTEM: the current end of WAL into *xlogpos and the system id
 * (decimal text) into sysid.  0, or -1 (err set). */
int zx_pgr_identify(zx_pgr *r, pgo_lsn *xlogpos, char *sysid, size_t sysidlen, char *err,
                    size_t errlen);

/* CREATE_REPLICATION_SLOT slot LOGICAL pgoutput, exporting a snapshot:
 * *consistent = the LSN from which the slot streams, snapshot = the
 * exported snapshot's name (for SET TRANSACTION SNAPSHOT on another
 * connection; valid until the next command on this one).  When the slot
 * exists already, *exists = 1 and nothing else is set (no snapshot: the
 * slot's stream continues where it was confirmed).  0, or -1 (err set). */
/* While CREATE_REPLICATION_SLOT waits (a logical slot starts only once
 * every transaction running when it was asked for has ended, however long
 * that takes), wait is called about once a second with the milliseconds
 * waited so far; it may look at what the slot waits for and say so.  It
 * returns 0 to go on waiting, or 1 to give up: the command is cancelled on
 * the server and create_slot returns -1 ("cancelled").  wait may be NULL
 * (wait without a word).  The snapshot exporting connection is r's. */
typedef int (*zx_pgr_wait_fn)(void *arg, int64_t waited_ms);
int zx_pgr_create_slot(zx_pgr *r, const char *slot, pgo_lsn *consistent, char *snapshot,
                       size_t snaplen, int *exists, zx_pgr_wait_fn wait, void *wait_arg,
                       char *err, size_t errlen);

/* START_REPLICATION SLOT slot LOGICAL start (0: where the slot is), with
 * pgoutput's proto_version and publication_names.  The connection is then
 * streaming.  0, or -1 (err set). */
int zx_pgr_start(zx_pgr *r, const char *slot, pgo_lsn start, const char *publication,
                 int proto_version, char *err, size_t errlen);

/* The next CopyData payload, waiting up to timeout_ms: 1 with *data and *len
 * (valid until the next call on r), 0 when none came in time, -1 when the
 * stream ended or failed (err set). */
int zx_pgr_next(zx_pgr *r, int timeout_ms, const uint8_t **data, size_t *len, char *err,
                size_t errlen);

/* Send a standby status update (see pgo_status_encode) and flush it.
 * 0, or -1 (err set). */
int zx_pgr_status(zx_pgr *r, pgo_lsn written, pgo_lsn flushed, pgo_lsn applied, int reply,
                  char *err, size_t errlen);

/* The connection's socket (for poll), -1 if none. */
int zx_pgr_fd(const zx_pgr *r);

/* Close; NULL is a no-op. */
void zx_pgr_close(zx_pgr *r);

#endif
