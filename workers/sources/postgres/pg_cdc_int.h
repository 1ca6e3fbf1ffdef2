/*
 * pg_cdc_int.h — the parts of the Postgres CDC source (`source: postgres`),
 * shared by its files and nothing else:
 *   pg_cdc.c         the source: setup, initial copy, streaming, acks,
 *                    status (the zx_source of registry.c)
 *   pg_cdc_setup.c   what it asks of the source database on a normal
 *                    connection: the publication, each table's key and
 *                    row estimate, declared types, the slot's retained WAL
 *   pg_cdc_change.c  one decoded pgoutput change -> one row of a changes
 *                    frame (proto/frame.h, "Changes frames")
 *
 * Positions it stores through the writer (zx_src_position*): part "lsn",
 * 8 bytes big-endian, the end LSN of the last source transaction whose
 * changes are all committed in the workspace (where the stream resumes);
 * part "copy:<schema.table>", value "1", once that table's initial copy is
 * committed (a table without it is copied again, mirror emptied first).
 *
 * Why restarting anywhere is right: every change carries whole rows (but
 * unchanged TOAST values, which are kept), is applied as an upsert or a
 * delete by key, and the stream resumes at or before where the workspace
 * is.  Applying again changes that a copy or an earlier run already holds
 * converges to the source's rows.  A copy taken after the stream's resume
 * point (a table added by a reload, a copy cut by a crash) is applied
 * before any change of its table, then the stream replays from the resume
 * point: the same argument.
 */
#ifndef ZX_SOURCES_PG_CDC_INT_H
#define ZX_SOURCES_PG_CDC_INT_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"
#include "conf/config.h"
#include "proto/frame.h"
#include "workers/sources/postgres/pg_slot.h"   /* ZX_PG_PUB_COMMENT */
#include "workers/sources/postgres/pgoutput.h"
#include "workers/sources/postgres/postgres_opts.h"

/* The position parts (above). */
#define PGCDC_PART_LSN "lsn"
#define PGCDC_PART_COPY "copy:"


/* One source table of the pipeline. */
typedef struct pgcdc_table {
    const char *qname;        /* "schema.table" as configured (the pipeline's) */
    char *schema, *name;      /* its two parts (owned) */
    const char *mirror;       /* workspace table (the pipeline's) */
    uint32_t relid;           /* pg_class oid (0: not known yet) */
    char **keys;              /* the mirror's key: primary key, or the
                                 replica identity index (owned) */
    uint32_t nkeys;
    int64_t estimate;         /* pg_class.reltuples (-1: never analysed) */
    int need_copy;            /* copy it before streaming */
    /* the relation as last described (a Relation message, or the copy) */
    zx_frame_coltype *st;     /* declared types (owned, strings too) */
    uint32_t nst;
    /* the changes gathered for the next frame */
    zx_rowset rs;
    int64_t ch_op, ch_lsn, ch_ct, ch_xid;  /* rs columns (-1: not made yet) */
    int gap_said;          /* slot_lost: resync: its "gap" change is published */
} pgcdc_table;

/* ---- pg_cdc_setup.c ------------------------------------------------------ */

/* A normal connection to dsn with the CDC session settings, as
 * application_name app.  NULL with err naming shown. */
PGconn *pgcdc_connect(const char *dsn, const char *shown, const char *app, char *err,
                      size_t errlen);

/* Make sure the publication p->publication publishes every table of t
 * (inserts, updates, deletes, truncates): created when missing (with
 * ZX_PG_PUB_COMMENT + the pipeline's name); one zx made gets the tables
 * it lacks and loses those no longer configured; one the user made must
 * cover them already (else the message says which and how).  0, or -1
 * (err set). */
int pgcdc_publication(PGconn *c, const char *shown, const zx_conf_pipeline *p,
                      const pgcdc_table *t, size_t n, char *err, size_t errlen);

/* Fill relid, keys and estimate of each table.  A table that does not
 * exist, or has no key (no primary key, no replica identity index) fails
 * with what to do.  0, or -1 (err set). */
int pgcdc_tables(PGconn *c, const char *shown, pgcdc_table *t, size_t n, char *err,
                 size_t errlen);

/* The declared types (format_type) of rel's columns into t->st (replacing
 * what it held).  0, or -1 (err set). */
int pgcdc_types(PGconn *c, const char *shown, const pgo_rel *rel, pgcdc_table *t, char *err,
                size_t errlen);

/* The WAL the slot keeps on the server (bytes from its restart_lsn to the
 * current WAL end), -1 when unknown. */
int64_t pgcdc_retained(PGconn *c, const char *slot);

/* Free the strings of t->st. */
void pgcdc_types_free(pgcdc_table *t);

/* ---- pg_cdc_slot.c -------------------------------------------------------- */

/* pgcdc_slot_state's answers. */
enum { PGCDC_SLOT_ABSENT = 0, PGCDC_SLOT_OK = 1, PGCDC_SLOT_LOST = 2 };

/* Whether slot exists on c's server: PGCDC_SLOT_ABSENT, _OK, or _LOST (it
 * exists, but its WAL is gone: `wal_status` lost, PostgreSQL 13+); -1 when
 * the server could not tell (err set, naming shown). */
int pgcdc_slot_state(PGconn *c, const char *shown, const char *slot, char *err, size_t errlen);

/* Drop slot if it exists and is not in use (an invalidated slot before a
 * resync makes it anew).  0, or -1 (err set). */
int pgcdc_slot_drop(PGconn *c, const char *shown, const char *slot, char *err, size_t errlen);

/* What a CREATE_REPLICATION_SLOT waits for, in one sentence into out: the
 * (at most four) oldest transactions of the server holding an xid, each
 * with its pid, database, application, client, state and start.  Returns
 * how many were found (0: out says only what it waits for in general);
 * *pid = the oldest one's pid (0 none). */
int pgcdc_slot_blockers(PGconn *c, char *out, size_t outlen, int *pid);

/* ---- pg_cdc_change.c ----------------------------------------------------- */

/* Append the change m (Insert, Update or Delete of t's relation m->rel)
 * as one row to t->rs: the reserved columns (op, LSN text, commit time,
 * xid), then the new row (insert, update), the key (delete), the old key
 * of an update that moved it, and the columns the source did not send.
 * commit_us: the transaction's commit time (µs since the epoch; 0 none).
 * 0, or -1 (out of memory, err set; t->rs unchanged). */
int pgcdc_change_row(pgcdc_table *t, const pgo_msg *m, pgo_lsn lsn, int64_t commit_us,
                     uint32_t xid, char *err, size_t errlen);

/* Append a truncate of t to t->rs.  0, or -1 (out of memory). */
int pgcdc_truncate_row(pgcdc_table *t, pgo_lsn lsn, int64_t commit_us, uint32_t xid);

/* Append the repair of one key of t (`zxctl verify --repair`) to t->rs:
 * r is the answer of `SELECT * FROM t WHERE <key> = key`; with its row,
 * an "update" carrying the whole row (NULLs as NULL); without, a
 * "delete" of key (its texts, in t->keys' order).  lsn: the LSN its
 * history row says.  0, or -1 (out of memory, err set; t->rs unchanged). */
int pgcdc_repair_row(pgcdc_table *t, const PGresult *r, const char *const *key, pgo_lsn lsn,
                     char *err, size_t errlen);

/* ---- pg_cdc_repair.c ----------------------------------------------------- */

/* A repair request being worked through (req NULL: none). */
typedef struct pgcdc_repair_state {
    json_t *req;              /* the request (owned) */
    size_t ti, ki;            /* next table of it, next key of that table */
} pgcdc_repair_state;

/* Go on with the repair request of `zxctl verify --repair` in st, or take
 * this pipeline's new one if there is one (written by the verify process
 * at zx_verify_repair_path; the file is removed as it is taken): append a
 * repair row for each of its keys to its table's batch, reading each row
 * on meta (the CDC session settings), until the request is done or
 * until_ms has passed (at least one key per call; the rest at the next
 * call, st keeping the place).  Returns the rows appended (0: no request),
 * or -1 (err set: the request is dropped; the pipeline goes on). */
int pgcdc_repair(PGconn *meta, const char *shown, const char *data_dir,
                 const zx_conf_pipeline *p, pgcdc_table *t, size_t nt, pgo_lsn lsn,
                 pgcdc_repair_state *st, int64_t until_ms, char *err, size_t errlen);

#endif
