/*
 * pg_cdc_state.h — the running state of `source: postgres` (cdc), shared
 * by pg_cdc.c (positions, acknowledgements, status, publishing, the
 * stream, open and close) and pg_cdc_copy.c (the initial copy); private
 * to those two.  pg_cdc_int.h has the parts that need no such state.
 */
#ifndef ZX_SOURCES_PG_CDC_STATE_H
#define ZX_SOURCES_PG_CDC_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "workers/sources/postgres/pg_cdc_int.h"
#include "workers/sources/postgres/pg_repl.h"
#include "workers/sources/postgres/pg_snapcopy.h"
#include "workers/sources/source.h"

#define STATUS_MIN_MS 50
#define STATUS_MAX_MS 10000
#define BATCH_MAX_MS 100
#define READ_MAX_MSGS 5000
#define RETAINED_EVERY_MS 10000
#define ASK_EVERY_MS 1000
#define REPAIR_EVERY_MS 500    /* look for a `zxctl verify --repair` request */
#define REPAIR_STEP_MS 50      /* read repair rows for this long, then poll */

/* A published frame carrying an LSN, not yet acknowledged. */
typedef struct inflight {
    uint64_t seq;
    pgo_lsn lsn;
    int64_t commit_us;     /* commit time of its oldest transaction */
} inflight;

typedef struct cdc {
    zx_src *rt;
    const zx_conf_pipeline *p;
    const zx_postgres_opts *o;  /* p's own options (postgres_opts.h) */
    const char *dsn, *shown;
    PGconn *meta;
    zx_pgr *repl;
    pgo_decoder *dec;
    pgo_cache *cache;
    pgcdc_table *t;
    size_t nt;
    size_t last_t;             /* the table of the last change (a guess) */
    uint64_t batch_max;        /* bytes of one table's batch at most */
    int slot_made;             /* the slot was created by this run */
    pgo_lsn gap_from;          /* slot_lost: resync: the LSN zx had confirmed
                                  on the lost slot (0: no gap) */
    pgo_lsn gap_to;            /* the new slot's consistent point */
    int64_t wait_said_ms;      /* slot creation: when the wait was last told */
    char gap_msg[1024];        /* the resync's standing error (status) */
    int streaming;
    char err[1024];

    /* the copy */
    zx_pgc *copy;
    size_t ci;                 /* the table being copied */
    int cstage;                /* 0 start it, 1 rows, 2 its end */
    zx_rowset crs;
    uint64_t copied, copy_est, copy_tables;
    int64_t copy_t0_ms;
    int64_t copy_t0_us;        /* the same, wall clock (its progress) */
    char snapshot[256];

    /* the stream */
    pgo_lsn start;             /* where the stream resumes (0: the slot's) */
    pgo_lsn last_commit;       /* end of the last transaction decoded */
    pgo_lsn published;         /* the LSN the last published frame carried */
    pgo_lsn confirmed;         /* acknowledged: may be confirmed to the server */
    pgo_lsn sent;              /* confirmed in the last status update */
    pgo_lsn server_end;        /* the server's WAL end, last seen */
    int in_txn;
    int split_txn;             /* this transaction's changes went out in a
                                  frame before its commit (it was large or
                                  old): that frame carried no position */
    int lsn_owed;              /* the store lacks a position the server will
                                  be told: the next flush publishes one even
                                  with no rows (see owe_lsn) */
    pgo_lsn txn_lsn;
    int64_t txn_commit_us;
    uint32_t txn_xid;
    int64_t pending_since_ms;  /* 0: no change gathered */
    int64_t pending_commit_us; /* commit time of the oldest gathered change */
    const uint8_t *held;       /* a payload read, to process after a flush */
    size_t held_len;
    int flushing;
    size_t fi, flast;          /* next table to publish, the last with rows */
    pgo_lsn flush_lsn;
    int64_t flush_commit_us;
    pgo_lsn kept_lsn;          /* the LSN the kept frame carries (0 none) */
    int64_t kept_commit_us;
    inflight *q;
    size_t qn, qcap;
    int64_t oldest_unacked_us; /* commit time of the oldest unconfirmed change */
    int reply_now;
    int64_t last_status_ms, last_retained_ms, last_json_ms, last_ask_ms;
    int64_t retained;
    uint64_t changes;          /* changes read since start */
    int64_t last_repair_ms;    /* when a repair request was last looked for */
    pgcdc_repair_state repair; /* the one being worked through */
} cdc;

/* ---- pg_cdc.c ------------------------------------------------------------ */

/* The source's status JSON for the supervisor (zx_src_set_status), at
 * most every second unless force. */
void pgcdc_status(cdc *c, int force);

/* Publish one frame; the rowset is free again afterwards (a frame that
 * must wait is kept by the runtime).  lsn: the position it carries (0:
 * none); copy_part: a "copy:<table>" position it carries too, or NULL.
 * 1 published or kept, -1 fatal (c->err set). */
int pgcdc_publish(cdc *c, const zx_frame_meta *m0, const zx_rowset *rs, pgo_lsn lsn,
                  int64_t commit_us, const char *copy_part);

/* Publish the kept frame.  1 done (or none), 0 still waiting. */
int pgcdc_retry_kept(cdc *c);

/* The frame metadata of a changes frame of table t. */
void pgcdc_changes_meta(const cdc *c, const pgcdc_table *t, zx_frame_meta *m);

/* The store must get the position c->last_commit although no row goes
 * with it (a transaction whose rows went out before its commit, or a slot
 * just made): the next flush publishes one even with no rows. */
void pgcdc_owe_lsn(cdc *c);

/* START_REPLICATION at c->start.  0, or -1 (c->err set). */
int pgcdc_start_stream(cdc *c);

/* ---- pg_cdc_copy.c ------------------------------------------------------- */

/* One step of the initial copy (the stream starts when the last table is
 * copied).  ZX_SRC_BUSY, _BLOCKED or _FATAL (c->err set). */
int pgcdc_copy_step(cdc *c);

#endif
