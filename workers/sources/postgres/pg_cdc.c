/*
 * pg_cdc.c — `source: postgres`: mirror tables from PostgreSQL logical
 * replication (pgoutput), with an initial copy from the slot's exported
 * snapshot (pg_cdc_int.h for the parts and why restarts are right).
 *
 * open:  the checks of pg_cdc_check.h (a failure fails the pipeline with
 *        that message); the publication; each table's key; then the slot:
 *        made now (with its exported snapshot: every table is copied as of
 *        it, and the stream starts at its consistent point), or there
 *        already (tables without a committed copy are copied with a fresh
 *        snapshot, and the stream resumes at the committed LSN).
 * copy:  (pg_cdc_copy.c; the state both files share is in pg_cdc_state.h)
 *        per table, a changes frame that empties the mirror (and makes it,
 *        with the source's types and key), rows frames of the rows (the
 *        writer's bulk path), then an empty changes frame carrying the
 *        position "copy:<table>".
 * stream: START_REPLICATION (pgoutput protocol 1: the server spills a big
 *        transaction to disk and sends it whole after its commit); changes
 *        gathered per table and published as changes frames when the
 *        socket has nothing more and the writer has acknowledged every
 *        frame before, a batch reaches a quarter of the ring or is 100 ms
 *        old; the last frame of a flush carries the end LSN of
 *        the last transaction wholly in it.  A transaction larger than a
 *        batch goes in several frames (applied idempotently: see
 *        pg_cdc_int.h).
 * acks:  the writer's acknowledgement of a frame makes its LSN the
 *        confirmed one, sent in a standby status update (at most every
 *        50 ms, at once when the server asks, at least every 10 s).  While
 *        nothing is in flight or gathered, a keepalive's or commit's LSN is
 *        confirmed at once, and the server is asked for a keepalive about
 *        every second, so that an idle slot does not keep WAL.
 *
 * It must never: confirm an LSN whose changes are not committed in the
 * workspace, read the stream before the copies are published, or print
 * the DSN's password.
 */
#include "workers/sources/postgres/pg_cdc_state.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/sources/postgres/pg_cdc_check.h"
#include "workers/sources/postgres/pg_repl.h"
#include "workers/sources/postgres/pg_retire.h"
#include "workers/sources/postgres/pg_snapcopy.h"
#include "workers/sources/postgres/pg_values.h"
#include "workers/sources/source.h"

/* ---- positions and acknowledgements ------------------------------------- */

static void be64(uint8_t *o, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        o[i] = (uint8_t)v;
}

/* Nothing gathered, being published or unacknowledged: what the stream
 * has reached may be confirmed at once. */
static int quiet(const cdc *c)
{
    return !c->flushing && !zx_src_kept(c->rt) && c->qn == 0 && !c->pending_since_ms;
}

static int remember(cdc *c, uint64_t seq, pgo_lsn lsn, int64_t commit_us)
{
    if (zx_grow(&c->q, c->qn, &c->qcap, sizeof(*c->q)) < 0)
        return -1;
    c->q[c->qn++] = (inflight){ seq, lsn, commit_us };
    if (!c->oldest_unacked_us || (commit_us && commit_us < c->oldest_unacked_us))
        c->oldest_unacked_us = commit_us;
    return 0;
}

static void cdc_acked(zx_src *rt, void *state, uint64_t seq)
{
    cdc *c = state;
    (void)rt;
    size_t k = 0;
    while (k < c->qn && c->q[k].seq <= seq) {
        if (c->q[k].lsn > c->confirmed)
            c->confirmed = c->q[k].lsn;
        k++;
    }
    if (k) {
        memmove(c->q, c->q + k, (c->qn - k) * sizeof(*c->q));
        c->qn -= k;
        c->oldest_unacked_us = c->qn ? c->q[0].commit_us : 0;
    }
}

static int send_status(cdc *c, int force)
{
    if (!c->streaming || !c->repl)
        return 0;
    int64_t now = zx_mono_ms();
    /* while nothing is in flight, ask the server where it is about once a
     * second (its answer, a keepalive, is then confirmed): otherwise an
     * idle server says so only every wal_sender_timeout / 2 */
    int ask = !c->in_txn && quiet(c) && now - c->last_ask_ms >= ASK_EVERY_MS;
    int due = c->reply_now || force || ask || now - c->last_status_ms >= STATUS_MAX_MS ||
              (c->confirmed > c->sent && now - c->last_status_ms >= STATUS_MIN_MS);
    if (!due)
        return 0;
    if (ask)
        c->last_ask_ms = now;
    char err[600];
    if (zx_pgr_status(c->repl, c->confirmed, c->confirmed, c->confirmed, ask, err,
                      sizeof(err)) < 0) {
        snprintf(c->err, sizeof(c->err), "pipeline %s: %s", c->p->name, err);
        return -1;
    }
    c->sent = c->confirmed;
    c->reply_now = 0;
    c->last_status_ms = now;
    return 0;
}

/* ---- status ------------------------------------------------------------- */

void pgcdc_status(cdc *c, int force)
{
    int64_t now = zx_mono_ms();
    if (!force && now - c->last_json_ms < 1000)
        return;
    c->last_json_ms = now;
    /* names from the configuration (a publication may hold any printable
     * character) go through jansson, never through printf */
    json_t *o;
    if (!c->streaming) {
        double secs = (double)(now - c->copy_t0_ms) / 1000.0;
        double rate = secs > 0 ? (double)c->copied / secs : 0;
        double left = c->copy_est > c->copied && rate > 0 ? (double)(c->copy_est - c->copied) / rate
                                                          : 0;
        /* the generic progress too (source.h): status, feed, one line */
        char what[ZX_SEG_PROGRESS_WHAT_MAX];
        snprintf(what, sizeof(what), "copying %s", c->ci < c->nt ? c->t[c->ci].qname : "");
        zx_src_set_progress(c->rt, what, c->copied, c->copy_est, 0,
                            c->copy_t0_us);
        o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:f}", "state", "copying",
                      "slot", c->o->slot, "table", c->ci < c->nt ? c->t[c->ci].qname : "",
                      "tables_done", (json_int_t)c->ci, "tables", (json_int_t)c->copy_tables,
                      "rows_copied", (json_int_t)c->copied, "rows_estimate",
                      (json_int_t)c->copy_est, "rows_per_second", (double)(int64_t)rate,
                      "seconds_left", (double)(int64_t)left);
    } else {
        zx_src_set_progress(c->rt, NULL, 0, 0, 0, 0);   /* the copy is over */
        if (c->meta && now - c->last_retained_ms >= RETAINED_EVERY_MS) {
            c->last_retained_ms = now;
            c->retained = pgcdc_retained(c->meta, c->o->slot);
        }
        char a[PGO_LSN_LEN], b[PGO_LSN_LEN];
        pgo_lsn_format(c->confirmed, a, sizeof(a));
        pgo_lsn_format(c->server_end, b, sizeof(b));
        int64_t oldest = c->oldest_unacked_us ? c->oldest_unacked_us : c->pending_commit_us;
        double lag_s = oldest ? (double)(zx_now_us() - oldest) / 1e6 : 0;
        if (lag_s < 0)
            lag_s = 0;
        o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:f, s:I, s:I}", "state", "streaming",
                      "slot", c->o->slot, "publication", c->o->publication, "confirmed_lsn", a,
                      "server_lsn", b, "lag_bytes",
                      (json_int_t)(c->server_end > c->confirmed ? c->server_end - c->confirmed : 0),
                      "lag_seconds", (double)(int64_t)(lag_s * 1000) / 1000.0,
                      "retained_wal_bytes", (json_int_t)c->retained,
                      "changes", (json_int_t)c->changes);
    }
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (js)
        zx_src_set_status(c->rt, js);
    free(js);
}

/* ---- publishing ---------------------------------------------------------- */

/* Publish one frame; the rowset is free again afterwards (a frame that
 * must wait is kept by the runtime).  lsn: the position it carries (0:
 * none).  1 published or kept, -1 fatal (c->err set). */
int pgcdc_publish(cdc *c, const zx_frame_meta *m0, const zx_rowset *rs, pgo_lsn lsn,
                  int64_t commit_us, const char *copy_part)
{
    zx_frame_meta m = *m0;
    zx_frame_pos pos[2];
    uint8_t v[8];
    size_t np = 0;
    if (lsn) {
        be64(v, lsn);
        pos[np++] = (zx_frame_pos){ .part = PGCDC_PART_LSN, .value = v, .value_len = 8 };
    }
    if (copy_part)
        pos[np++] = (zx_frame_pos){ .part = copy_part, .value = "1", .value_len = 1 };
    m.positions = np ? pos : NULL;
    m.npositions = np;
    uint64_t seq = 0;
    zx_pub_result r = zx_src_publish(c->rt, &m, rs, &seq);
    if (r == ZX_PUB_OK) {
        if (lsn && remember(c, seq, lsn, commit_us) < 0)
            goto nomem;
        if (lsn)
            c->published = lsn;
        return 1;
    }
    if (r == ZX_PUB_WAIT) {
        c->kept_lsn = lsn;
        c->kept_commit_us = commit_us;
        if (lsn)
            c->published = lsn;
        return 1;
    }
    if (r == ZX_PUB_TOO_BIG) {
        snprintf(c->err, sizeof(c->err), "pipeline %s: a batch of changes of %s is larger than "
                 "its ring can hold (%" PRIu64 " bytes at most): raise server.ring_size",
                 c->p->name, m.table ? m.table : "", zx_src_max_frame(c->rt));
        return -1;
    }
nomem:
    snprintf(c->err, sizeof(c->err), "pipeline %s: out of memory publishing changes",
             c->p->name);
    return -1;
}

/* Publish the kept frame.  1 done (or none), 0 still waiting. */
int pgcdc_retry_kept(cdc *c)
{
    if (!zx_src_kept(c->rt))
        return 1;
    uint64_t seq;
    if (zx_src_retry(c->rt, &seq) != ZX_PUB_OK)
        return 0;
    if (c->kept_lsn && remember(c, seq, c->kept_lsn, c->kept_commit_us) < 0) {
        /* cannot track it: it will be confirmed by a later frame's ack */
    }
    c->kept_lsn = 0;
    return 1;
}

void pgcdc_changes_meta(const cdc *c, const pgcdc_table *t, zx_frame_meta *m)
{
    memset(m, 0, sizeof(*m));
    m->kind = ZX_FRAME_CHANGES;
    m->table = t->mirror;
    m->key_cols = (const char *const *)t->keys;
    m->nkey_cols = t->nkeys;
    m->col_types = t->st;
    m->ncol_types = t->nst;
    m->history = c->p->history;
    m->ingested_at_us = zx_now_us();
}

static void start_flush(cdc *c)
{
    c->flushing = 1;
    c->fi = 0;
    c->flast = SIZE_MAX;
    for (size_t i = 0; i < c->nt; i++)
        if (c->t[i].rs.nrows)
            c->flast = i;
    c->flush_lsn = c->last_commit > c->published ? c->last_commit : 0;
    c->flush_commit_us = c->pending_commit_us;
    if (c->in_txn)
        c->split_txn = 1;
    c->pending_since_ms = 0;
    c->pending_commit_us = 0;
}

/* Go on publishing the gathered batches.  1 done, 0 blocked, -1 fatal. */
static int continue_flush(cdc *c)
{
    if (!pgcdc_retry_kept(c))
        return 0;
    for (; c->fi < c->nt && c->flast != SIZE_MAX; c->fi++) {
        if (zx_src_kept(c->rt))
            return 0;
        pgcdc_table *t = &c->t[c->fi];
        if (!t->rs.nrows)
            continue;
        zx_frame_meta m;
        pgcdc_changes_meta(c, t, &m);
        int last = c->fi == c->flast;
        if (pgcdc_publish(c, &m, &t->rs, last ? c->flush_lsn : 0, c->flush_commit_us, NULL) < 0)
            return -1;
        zx_rowset_reset(&t->rs);
    }
    if (zx_src_kept(c->rt))
        return 0;
    if (c->flast == SIZE_MAX && c->flush_lsn && c->lsn_owed && c->nt) {
        /* no rows, but a position the store must have: an empty frame
         * carries it (the writer stores it after what came before) */
        zx_frame_meta m;
        pgcdc_changes_meta(c, &c->t[0], &m);
        m.history = 0;
        zx_rowset_reset(&c->crs);
        if (pgcdc_publish(c, &m, &c->crs, c->flush_lsn, c->flush_commit_us, NULL) < 0)
            return -1;
        c->lsn_owed = 0;
        c->flushing = 0;
        return 1;
    }
    c->flushing = 0;
    /* nothing was gathered (only commits): confirm at once when quiet */
    if (c->flast == SIZE_MAX && c->flush_lsn && quiet(c) && c->flush_lsn > c->confirmed)
        c->confirmed = c->flush_lsn;
    return 1;
}

static uint64_t gathered_bytes(const cdc *c)
{
    uint64_t n = 0;
    for (size_t i = 0; i < c->nt; i++)
        if (c->t[i].rs.nrows)
            n += zx_frame_estimate(&c->t[i].rs);
    return n;
}

/* ---- the stream ---------------------------------------------------------- */

int pgcdc_start_stream(cdc *c)
{
    char err[600];
    if (zx_pgr_start(c->repl, c->o->slot, c->start, c->o->publication, 1, err,
                     sizeof(err)) < 0) {
        snprintf(c->err, sizeof(c->err), "pipeline %s: %s", c->p->name, err);
        return -1;
    }
    c->streaming = 1;
    c->confirmed = c->sent = c->start;
    if (c->slot_made && c->gap_to && c->last_commit < c->gap_to) {
        c->last_commit = c->gap_to;
        pgcdc_owe_lsn(c);
    }
    if (c->gap_from) {
        zx_src_set_error(c->rt, NULL);   /* the resync is over */
        zx_info("event=resync_done pipeline=%s slot=%s", c->p->name, c->o->slot);
        c->gap_from = 0;
    }
    c->last_status_ms = zx_mono_ms();
    char l[PGO_LSN_LEN];
    pgo_lsn_format(c->start, l, sizeof(l));
    zx_info("event=stream_start pipeline=%s slot=%s publication=%s from=%s", c->p->name,
                c->o->slot, c->o->publication, c->start ? l : "(the slot's position)");
    pgcdc_status(c, 1);
    return 0;
}

static pgcdc_table *table_of(cdc *c, uint32_t relid)
{
    if (c->last_t < c->nt && c->t[c->last_t].relid == relid)
        return &c->t[c->last_t];
    for (size_t i = 0; i < c->nt; i++)
        if (c->t[i].relid == relid) {
            c->last_t = i;
            return &c->t[i];
        }
    return NULL;
}

static pgcdc_table *table_named(cdc *c, const char *nsp, const char *rel)
{
    for (size_t i = 0; i < c->nt; i++)
        if (strcmp(c->t[i].schema, nsp) == 0 && strcmp(c->t[i].name, rel) == 0)
            return &c->t[i];
    return NULL;
}

/* The store must get the position c->last_commit although no row goes
 * with it: a transaction whose rows went out before its commit, or a slot
 * just made (its consistent point: from then on zx knows it had a slot,
 * pg_cdc.c's slot_lost).  Without it the server would be told a position
 * the store never had. */
void pgcdc_owe_lsn(cdc *c)
{
    c->lsn_owed = 1;
    if (!c->pending_since_ms) {
        c->pending_since_ms = zx_mono_ms();
        c->pending_commit_us = c->txn_commit_us;
    }
}

static void gathered(cdc *c)
{
    if (!c->pending_since_ms) {
        c->pending_since_ms = zx_mono_ms();
        c->pending_commit_us = c->txn_commit_us;
    }
    c->changes++;
}

/* Process one payload.  0 done, 1 flush first (the payload is kept and
 * processed again after), -1 fatal (c->err set). */
static int process(cdc *c, const uint8_t *data, size_t len)
{
    pgo_frame f;
    if (pgo_frame_decode(c->dec, data, len, &f) < 0) {
        snprintf(c->err, sizeof(c->err), "pipeline %s: the replication stream sent what zx "
                 "cannot read: %s", c->p->name, c->dec->err);
        return -1;
    }
    if (f.wal_end > c->server_end)
        c->server_end = f.wal_end;
    if (f.type == PGO_KEEPALIVE) {
        if (f.reply_requested)
            c->reply_now = 1;
        if (!c->in_txn && quiet(c) && f.wal_end > c->confirmed)
            c->confirmed = f.wal_end;
        return 0;
    }
    if (!f.len)
        return 0;
    int type = f.data[0];
    if ((type == PGO_INSERT || type == PGO_UPDATE || type == PGO_DELETE) &&
        c->pending_since_ms && gathered_bytes(c) >= c->batch_max)
        return 1;                 /* a large transaction: publish what is gathered */
    if (type == PGO_RELATION && c->pending_since_ms)
        return 1;                 /* a schema change: the batches go before */
    pgo_msg m;
    if (pgo_decode(c->dec, f.data, f.len, &m) < 0) {
        snprintf(c->err, sizeof(c->err), "pipeline %s: the replication stream sent what zx "
                 "cannot read: %s", c->p->name, c->dec->err);
        return -1;
    }
    char err[600];
    pgcdc_table *t;
    switch (m.type) {
    case PGO_BEGIN:
        c->in_txn = 1;
        c->txn_lsn = m.u.begin.final_lsn;
        c->txn_xid = m.u.begin.xid;
        if (pgo_time_to_unix_us(m.u.begin.commit_time, &c->txn_commit_us) < 0)
            c->txn_commit_us = 0;
        break;
    case PGO_COMMIT:
        c->in_txn = 0;
        if (m.u.commit.end_lsn > c->last_commit)
            c->last_commit = m.u.commit.end_lsn;
        if (c->split_txn) {
            c->split_txn = 0;
            pgcdc_owe_lsn(c);
        }
        if (!c->pending_since_ms && quiet(c) && c->last_commit > c->confirmed)
            c->confirmed = c->last_commit;
        break;
    case PGO_RELATION:
        t = table_named(c, m.rel->nspname, m.rel->relname);
        if (!t)
            break;
        t->relid = m.rel->relid;
        if (pgcdc_types(c->meta, c->shown, m.rel, t, err, sizeof(err)) < 0) {
            snprintf(c->err, sizeof(c->err), "pipeline %s: %s", c->p->name, err);
            return -1;
        }
        break;
    case PGO_INSERT:
    case PGO_UPDATE:
    case PGO_DELETE:
        t = table_of(c, m.u.change.relid);
        if (!t)
            break;              /* a table of a shared publication zx does not mirror */
        if (pgcdc_change_row(t, &m, f.wal_start ? f.wal_start : c->txn_lsn, c->txn_commit_us,
                             c->txn_xid, err, sizeof(err)) < 0) {
            snprintf(c->err, sizeof(c->err), "pipeline %s: %s", c->p->name, err);
            return -1;
        }
        gathered(c);
        break;
    case PGO_TRUNCATE:
        for (uint32_t i = 0; i < m.u.truncate.nrels; i++) {
            t = table_of(c, pgo_truncate_relid(&m, i));
            if (!t)
                continue;
            if (pgcdc_truncate_row(t, f.wal_start ? f.wal_start : c->txn_lsn, c->txn_commit_us,
                                   c->txn_xid) < 0) {
                snprintf(c->err, sizeof(c->err), "pipeline %s: out of memory", c->p->name);
                return -1;
            }
            gathered(c);
        }
        break;
    default:
        break;                  /* Origin, Type, Message: nothing to mirror */
    }
    return 0;
}

/* Between two source transactions, with nothing gathered: take a repair
 * request of `zxctl verify --repair` (pg_cdc_repair.c) and publish its
 * rows.  1 when a flush started, else 0. */
static int repair_step(cdc *c)
{
    int64_t now = zx_mono_ms();
    if (c->in_txn || c->held || c->pending_since_ms ||
        (!c->repair.req && now - c->last_repair_ms < REPAIR_EVERY_MS))
        return 0;
    c->last_repair_ms = now;
    char err[700];
    int n = pgcdc_repair(c->meta, c->shown, zx_src_args(c->rt)->conf->data_dir, c->p, c->t,
                         c->nt, c->last_commit, &c->repair, now + REPAIR_STEP_MS, err,
                         sizeof(err));
    if (n < 0) {
        char m[800];
        snprintf(m, sizeof(m), "pipeline %s: verify --repair: %s", c->p->name, err);
        zx_warn("event=repair_failed pipeline=%s error=\"%s\"", c->p->name, err);
        zx_src_feed(c->rt, "repair_failed", m);
    } else if (n > 0) {
        zx_info("event=repair pipeline=%s rows=%d", c->p->name, n);
    }
    int rows = 0;
    for (size_t i = 0; i < c->nt; i++)
        rows |= c->t[i].rs.nrows > 0;
    if (!rows)
        return 0;
    c->pending_since_ms = now;
    c->pending_commit_us = 0;
    start_flush(c);
    return 1;
}

static int stream_step(cdc *c)
{
    if (c->flushing) {
        int r = continue_flush(c);
        if (r < 0)
            return ZX_SRC_FATAL;
        if (r == 0)
            return ZX_SRC_BLOCKED;
    }
    if (zx_src_stopping(c->rt))
        return ZX_SRC_IDLE;
    if (repair_step(c))
        return ZX_SRC_BUSY;
    int more = 0;
    for (int n = 0; n < READ_MAX_MSGS; n++) {
        const uint8_t *data = c->held;
        size_t len = c->held_len;
        if (!data) {
            char err[600];
            int r = zx_pgr_next(c->repl, 0, &data, &len, err, sizeof(err));
            if (r < 0) {
                snprintf(c->err, sizeof(c->err), "pipeline %s: %s", c->p->name, err);
                return ZX_SRC_FATAL;
            }
            if (r == 0)
                break;
        }
        c->held = NULL;
        int r = process(c, data, len);
        if (r < 0)
            return ZX_SRC_FATAL;
        if (r == 1) {
            c->held = data;     /* valid until the next zx_pgr_next */
            c->held_len = len;
            start_flush(c);
            return ZX_SRC_BUSY;
        }
        if (n == READ_MAX_MSGS - 1)
            more = 1;
    }
    /* publish when the writer has nothing of ours to do (so it never
     * waits for us), or the batch is large or old: while the writer works
     * on a frame, the next one grows (a group commit driven by its pace) */
    if (c->pending_since_ms &&
        ((!more && !c->in_txn && zx_src_acked_seq(c->rt) >= zx_src_published_seq(c->rt)) ||
         zx_mono_ms() - c->pending_since_ms >= BATCH_MAX_MS ||
         gathered_bytes(c) >= c->batch_max)) {
        start_flush(c);
        return ZX_SRC_BUSY;
    }
    if (c->pending_since_ms && !more)
        return ZX_SRC_BLOCKED;  /* an ack, new data or the batch's age: soon */
    if (!c->pending_since_ms && !c->in_txn && c->last_commit > c->published && quiet(c) &&
        c->last_commit > c->confirmed)
        c->confirmed = c->last_commit;
    return more ? ZX_SRC_BUSY : ZX_SRC_IDLE;
}

/* ---- the source's callbacks ---------------------------------------------- */

static void free_cdc(cdc *c)
{
    if (!c)
        return;
    json_decref(c->repair.req);
    for (size_t i = 0; i < c->nt; i++) {
        free(c->t[i].schema);
        free(c->t[i].name);
        for (uint32_t k = 0; k < c->t[i].nkeys; k++)
            free(c->t[i].keys[k]);
        free(c->t[i].keys);
        pgcdc_types_free(&c->t[i]);
        zx_rowset_free(&c->t[i].rs);
    }
    free(c->t);
    zx_rowset_free(&c->crs);
    zx_pgc_close(c->copy);
    zx_pgr_close(c->repl);
    if (c->meta)
        PQfinish(c->meta);
    free(c->dec);
    pgo_cache_destroy(c->cache);
    free(c->q);
    free(c);
}

/* ---- the slot ----------------------------------------------------------- */

/* zx had confirmed changes up to stored on the pipeline's slot: is the
 * slot still there to stream from?  When it is gone (or invalidated), the
 * changes made meanwhile are lost to zx: with slot_lost: fail (the
 * default) the pipeline stops here with what to do, before anything is
 * made or copied; with resync the new slot's snapshot is copied again and
 * the gap is recorded (c->gap_from, and c->err is the standing error the
 * status shows until the stream starts).  0 go on, -2 the pipeline must
 * stop for good (slot_lost: fail; err set), -1 the server could not tell
 * (err set; a restart may). */
static int slot_lost(cdc *c, pgo_lsn stored, char *err, size_t errlen)
{
    const zx_conf_pipeline *p = c->p;
    int st = pgcdc_slot_state(c->meta, c->shown, c->o->slot, err, errlen);
    if (st < 0)
        return -1;
    if (st == PGCDC_SLOT_OK)
        return 0;
    char l[PGO_LSN_LEN];
    pgo_lsn_format(stored, l, sizeof(l));
    const char *how = st == PGCDC_SLOT_ABSENT
                          ? "is gone from Postgres (dropped while zx was not streaming from it)"
                          : "was invalidated by Postgres (the WAL it needed was removed: "
                            "max_slot_wal_keep_size)";
    if (zx_postgres_opts_of(p)->slot_lost != ZX_SLOT_LOST_RESYNC) {
        zx_error("event=slot_lost pipeline=%s slot=%s confirmed_lsn=%s action=fail",
                 p->name, c->o->slot, l);
        zx_seterr(err, errlen, "replication slot %s %s; zx had applied the changes up "
                         "to %s, and those made since then cannot be streamed. Nothing was "
                         "made or copied. To copy every table again and go on streaming (each "
                         "__changes table then records the gap), set `slot_lost: resync` on "
                         "pipeline %s and run `zxctl reload`", c->o->slot, how, l, p->name);
        return -2;
    }
    zx_error("event=slot_lost pipeline=%s slot=%s confirmed_lsn=%s action=resync", p->name,
             c->o->slot, l);
    snprintf(c->gap_msg, sizeof(c->gap_msg), "pipeline %s: replication slot %s %s; zx had applied the "
             "changes up to %s. slot_lost: resync: a new slot is made and every table is "
             "copied again; the changes between %s and the new snapshot are missing from "
             "__changes (a row with _op 'gap' marks them)", p->name, c->o->slot, how, l, l);
    zx_src_set_error(c->rt, c->gap_msg);
    if (st == PGCDC_SLOT_LOST && pgcdc_slot_drop(c->meta, c->shown, c->o->slot, err, errlen) < 0)
        return -1;
    c->gap_from = stored;
    return 0;
}

/* CREATE_REPLICATION_SLOT is waiting (zx_pgr_wait_fn): after 2 s, and
 * then every 10 s, say what for (log, status, error). */
static int slot_wait(void *arg, int64_t waited_ms)
{
    cdc *c = arg;
    if (zx_src_stopping(c->rt))
        return 1;
    int64_t now = zx_mono_ms();
    if (waited_ms < 2000 || (c->wait_said_ms && now - c->wait_said_ms < 10000))
        return 0;
    char who[1400], msg[1800];
    int pid;
    int n = pgcdc_slot_blockers(c->meta, who, sizeof(who), &pid);
    snprintf(msg, sizeof(msg), "pipeline %s: creating replication slot %s has waited %" PRId64
             " s for %s to end: a logical slot starts only once every transaction running "
             "when it was asked for has ended; commit or roll %s back%s", c->p->name,
             c->o->slot, waited_ms / 1000, who, n > 1 ? "them" : "it",
             n ? " (or end it with SELECT pg_terminate_backend(pid))" : "");
    if (!c->wait_said_ms)
        zx_warn("event=slot_wait pipeline=%s slot=%s blocker_pid=%d waited_s=%" PRId64
                " detail=\"%s\"", c->p->name, c->o->slot, pid, waited_ms / 1000, who);
    c->wait_said_ms = now;
    zx_src_set_error(c->rt, msg);
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:s}", "state", "creating_slot", "slot",
                          c->o->slot, "waited_seconds", (json_int_t)(waited_ms / 1000),
                          "blocker_pid", (json_int_t)pid, "waiting_for", who);
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (js)
        zx_src_set_status(c->rt, js);
    free(js);
    return 0;
}

static int cdc_open(zx_src *rt, void **state, char *err, size_t errlen)
{
    const zx_worker_args *a = zx_src_args(rt);
    const zx_conf_pipeline *p = a->pipeline;
    const zx_conf_connection *cn = p->conn;
    if (!cn || !cn->dsn)
        return zx_seterr(err, errlen, "pipeline %s: no connection with a dsn", p->name);
    /* the checks `zxctl test` makes: a failure names what to fix */
    char msg[2048];
    int crc = zx_pg_cdc_check(cn, p, 15000, msg, sizeof(msg));
    if (crc < 0) {
        zx_seterr(err, errlen, "pipeline %s: %s", p->name, msg);
        return crc == ZX_PG_CDC_REFUSED ? ZX_SRC_REFUSED : -1;
    }

    cdc *c = calloc(1, sizeof(*c));
    if (!c)
        return zx_seterr(err, errlen, "out of memory");
    c->rt = rt;
    c->p = p;
    c->o = zx_postgres_opts_of(p);
    c->dsn = cn->dsn;
    c->shown = cn->dsn_shown ? cn->dsn_shown : "(dsn)";
    zx_rowset_init(&c->crs);
    c->batch_max = zx_src_max_frame(rt) / 4;
    if (c->batch_max < 4096)
        c->batch_max = 4096;
    c->dec = malloc(sizeof(*c->dec));
    c->cache = pgo_cache_create(0, 0);
    c->t = calloc(c->o->ntables + 1, sizeof(*c->t));
    c->nt = c->o->ntables;
    if (!c->dec || !c->cache || !c->t)
        goto nomem;
    pgo_decoder_init(c->dec, 1, c->cache);
    for (size_t i = 0; i < c->nt; i++) {
        pgcdc_table *t = &c->t[i];
        const char *q = c->o->tables[i], *dot = strchr(q, '.');
        t->qname = q;
        t->mirror = p->mirrors[i];
        t->schema = dot ? strndup(q, (size_t)(dot - q)) : strdup("public");
        t->name = strdup(dot ? dot + 1 : q);
        zx_rowset_init(&t->rs);
        if (!t->schema || !t->name)
            goto nomem;
    }
    char app[128];
    snprintf(app, sizeof(app), "zxd %s", p->name);
    char e[1024];
    if (!(c->meta = pgcdc_connect(c->dsn, c->shown, app, e, sizeof(e))))
        goto fail_connect;
    if (pgcdc_publication(c->meta, c->shown, p, c->t, c->nt, e, sizeof(e)) < 0 ||
        pgcdc_tables(c->meta, c->shown, c->t, c->nt, e, sizeof(e)) < 0)
        goto fail;
    if (!(c->repl = zx_pgr_connect(c->dsn, c->shown, app, e, sizeof(e))))
        goto fail_connect; /* pg_hba.conf may allow the checks' connection
                              and not replication */
    pgo_lsn consistent = 0, stored = 0;
    int exists = 0;
    const void *v;
    size_t vl;
    if (zx_src_position_find(rt, PGCDC_PART_LSN, &v, &vl) == 0 && vl == 8) {
        const uint8_t *b = v;
        for (int i = 0; i < 8; i++)
            stored = (stored << 8) | b[i];
    }
    int lost = stored ? slot_lost(c, stored, e, sizeof(e)) : 0;
    if (lost == -2) {
        /* slot_lost: fail: nothing a restart could change */
        zx_seterr(err, errlen, "pipeline %s: %s", p->name, e);
        free_cdc(c);
        return ZX_SRC_REFUSED;
    }
    if (lost < 0)
        goto fail;
    if (zx_pgr_create_slot(c->repl, c->o->slot, &consistent, c->snapshot, sizeof(c->snapshot),
                           &exists, slot_wait, c, e, sizeof(e)) < 0)
        goto fail;
    if (c->wait_said_ms) {
        zx_info("event=slot_wait_over pipeline=%s slot=%s", p->name, c->o->slot);
        zx_src_set_error(rt, c->gap_from ? c->gap_msg : NULL);
    }
    c->slot_made = !exists;
    c->gap_to = consistent;
    if (exists)
        c->start = stored;
    for (size_t i = 0; i < c->nt; i++) {
        char part[400];
        snprintf(part, sizeof(part), "%s%s", PGCDC_PART_COPY, c->t[i].qname);
        int done = exists && zx_src_position_find(rt, part, &v, &vl) == 0;
        /* a resync copies every table: the mirror missed the lost changes */
        c->t[i].need_copy = (zx_postgres_opts_of(p)->initial_copy || c->gap_from) && !done;
        if (c->t[i].need_copy) {
            c->copy_tables++;
            c->copy_est += c->t[i].estimate > 0 ? (uint64_t)c->t[i].estimate : 0;
        }
    }
    char l[PGO_LSN_LEN];
    pgo_lsn_format(exists ? c->start : consistent, l, sizeof(l));
    zx_info("event=cdc_open pipeline=%s slot=%s %s publication=%s tables=%zu copy=%" PRIu64
                " at=%s", p->name, c->o->slot, exists ? "exists" : "created", c->o->publication, c->nt,
                c->copy_tables, l);
    c->copy_t0_ms = zx_mono_ms();
    c->copy_t0_us = zx_now_us();
    if (c->copy_tables) {
        /* the slot's exported snapshot, imported before anything else is
         * said on the replication connection; an existing slot: a fresh one */
        if (!(c->copy = zx_pgc_open(c->dsn, c->shown, c->slot_made ? c->snapshot : NULL, e,
                                    sizeof(e))))
            goto fail;
        pgcdc_status(c, 1);
    } else if (pgcdc_start_stream(c) < 0) {
        snprintf(e, sizeof(e), "%s", c->err);
        goto fail;
    }
    *state = c;
    return 0;
fail_connect:
    if (zx_pg_conn_refused(e)) {
        /* the server refuses these settings: a restart gets the same */
        zx_seterr(err, errlen, "pipeline %s: %s", p->name, e);
        free_cdc(c);
        return ZX_SRC_REFUSED;
    }
fail:
    zx_seterr(err, errlen, "pipeline %s: %s", p->name, e);
    free_cdc(c);
    return -1;
nomem:
    free_cdc(c);
    return zx_seterr(err, errlen, "pipeline %s: out of memory", p->name);
}

static int cdc_poll(zx_src *rt, void *state)
{
    cdc *c = state;
    int r;
    if (!c->streaming)
        r = zx_src_stopping(rt) ? (pgcdc_retry_kept(c) ? ZX_SRC_IDLE : ZX_SRC_BLOCKED)
                                : pgcdc_copy_step(c);
    else
        r = stream_step(c);
    if (r != ZX_SRC_FATAL && send_status(c, 0) < 0)
        r = ZX_SRC_FATAL;
    if (r == ZX_SRC_FATAL) {
        zx_error("event=cdc_failed pipeline=%s error=\"%s\"", c->p->name, c->err);
        zx_src_set_error(rt, c->err);
        return r;
    }
    pgcdc_status(c, 0);
    return r;
}

static int cdc_fd(void *state)
{
    cdc *c = state;
    return c->streaming && !c->held ? zx_pgr_fd(c->repl) : -1;
}

static int cdc_drained(zx_src *rt, void *state)
{
    cdc *c = state;
    return !c->flushing && !zx_src_kept(rt);
}

static void cdc_close(zx_src *rt, void *state)
{
    cdc *c = state;
    (void)rt;
    if (c->streaming)
        send_status(c, 1);   /* what was acknowledged while draining */
    free_cdc(c);
}

const zx_source zx_source_postgres = {
    .name = "postgres",
    .flags = ZX_SOURCE_POSITIONS | ZX_SOURCE_ONE_READER,
    .help = "PostgreSQL change data capture (logical replication, pgoutput)",
    .open = cdc_open,
    .poll = cdc_poll,
    .fd = cdc_fd,
    .acked = cdc_acked,
    .drained = cdc_drained,
    .close = cdc_close,
};
