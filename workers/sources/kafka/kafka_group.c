/*
 * kafka_group.c — the `kafka` source with a consumer group: the rebalance
 * callback (cooperative-sticky, or eager when properties ask for it) and
 * the result of asynchronous offset commits.  See kafka.c for the whole
 * design and kafka_int.h for what the files share.
 *
 * An assigned partition starts from the largest of the group's committed
 * offset, the position the writer stored in LMDB (the writer has the
 * rows up to it even when the worker died before committing to the
 * group), the position the writer acknowledged since, and the position
 * after the last message this process put into a frame (kpart.handed:
 * frames in flight are committed by the writer whatever happens to the
 * assignment, so a partition that comes back while they are in flight,
 * say after a lost assignment whose commits the group refused, is not
 * read twice into the workspace; not in a shared workspace, where frames
 * in flight may be fenced: kafka_fence.c); else from the beginning, or, on the
 * pipeline's very first start with `start: new`, from its end (published
 * at once in a frame of positions, and committed to the group after the
 * writer's ack).  A start from the stored position reads the message
 * before it first, to check it is the same topic (ks_witness).
 *
 * A revoke publishes the frame being gathered, waits up to REVOKE_WAIT_MS
 * for the writer to commit every frame in flight, commits the
 * acknowledged offsets synchronously, and then lets the revoke complete;
 * past the deadline the new owner reads those messages again (at least
 * once).
 *
 * A cooperative revoke (the group rebalances again at once) and a commit
 * the group refuses for a stale generation put the ownership of the
 * partitions in doubt (kg_doubt): kafka.c then batches nothing more until
 * the next rebalance callback settles it, so that another member reads
 * again at most the frames in flight, not everything read while the group
 * refused the commits.
 *
 * It must never: commit an offset the writer has not acknowledged, or
 * keep reading a revoked partition's messages.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/sources/kafka/kafka_int.h"

#define REVOKE_WAIT_MS 10000

/* Put the ownership in doubt (why: for the log). */
static void doubt(kstate *s, const char *why)
{
    if (s->doubt_ms)
        return;
    s->doubt_ms = zx_mono_ms();
    if (!s->doubt_ms)
        s->doubt_ms = 1;
    zx_info("event=kafka_ownership_in_doubt pipeline=%s reason=\"%s\" detail=\"the group is "
            "rebalancing: nothing more is read until it settles\"", s->name, why);
}

int kg_doubt(kstate *s, rd_kafka_resp_err_t err)
{
    if (ke_stale_generation(err)) {
        char why[200];
        snprintf(why, sizeof(why), "the group refused a commit: %s", rd_kafka_err2str(err));
        doubt(s, why);
    }
    return s->doubt_ms != 0;
}

void kg_settle(kstate *s, const char *why)
{
    if (!s->doubt_ms)
        return;
    zx_info("event=kafka_ownership_settled pipeline=%s by=%s after_ms=%" PRId64, s->name, why,
            zx_mono_ms() - s->doubt_ms);
    s->doubt_ms = 0;
}

void kg_offset_commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    (void)rk;
    kstate *s = opaque;
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET)
        return;
    if (err) {
        char msg[ZX_SEG_SOURCE_ERROR_MAX];
        ke_kind k;
        ks_describe(s, err, NULL, NULL, msg, sizeof(msg), &k);
        zx_warn("event=kafka_commit_failed pipeline=%s error=\"%s\"", s->name, msg);
        if (k == KE_GROUP_DENIED)
            ks_set_error(s, k, msg, NULL);
        kg_doubt(s, err);
        return;
    }
    for (int i = 0; offsets && i < offsets->cnt; i++) {
        kg_doubt(s, offsets->elems[i].err);
        int64_t k = kparts_find(&s->parts, offsets->elems[i].topic, offsets->elems[i].partition);
        if (k >= 0 && !offsets->elems[i].err && offsets->elems[i].offset > s->parts.v[k].committed)
            s->parts.v[k].committed = offsets->elems[i].offset;
    }
}

static void on_assign(kstate *s, rd_kafka_topic_partition_list_t *parts, int coop)
{
    rd_kafka_topic_partition_list_t *c = rd_kafka_topic_partition_list_copy(parts);
    rd_kafka_topic_partition_list_t *ends = rd_kafka_topic_partition_list_new(parts->cnt + 1);
    rd_kafka_topic_partition_list_t *catchup = rd_kafka_topic_partition_list_new(parts->cnt + 1);
    char msg[ZX_SEG_SOURCE_ERROR_MAX];
    ke_kind k;
    if (s->shared)
        kf_assign(s);   /* the store may have the workspace's positions */
    rd_kafka_resp_err_t e = rd_kafka_committed(s->rk, c, KS_OFFSETS_TIMEOUT_MS);
    for (int i = 0; e == RD_KAFKA_RESP_ERR_NO_ERROR && i < c->cnt; i++)
        if (c->elems[i].err)
            e = c->elems[i].err;
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        /* without the committed offsets no start is right: give up, the
         * supervisor restarts the worker (the group rebalances) */
        ks_describe(s, e, NULL, NULL, msg, sizeof(msg), &k);
        char full[ZX_SEG_SOURCE_ERROR_MAX];
        snprintf(full, sizeof(full), "cannot read the group's committed offsets (%.420s)", msg);
        ks_set_error(s, k == KE_TRANSIENT ? KE_OTHER : k, full, NULL);
        s->fatal = 1;
        goto out;
    }
    for (int i = 0; i < parts->cnt; i++) {
        rd_kafka_topic_partition_t *t = &parts->elems[i];
        int64_t idx = kparts_add(&s->parts, t->topic, t->partition);
        if (idx < 0) {
            s->fatal = 1;
            goto out;
        }
        kpart *p = &s->parts.v[idx];
        /* frames of an earlier ownership still in flight stay: their acks
         * are committed only when ahead of the group (ks_commit_pending) */
        p->witness = -1;
        int64_t committed = c->elems[i].offset >= 0 ? c->elems[i].offset : -1;
        int64_t snap = ks_stored_position(s, p->name);
        int64_t stored = p->acked > snap ? p->acked : snap;
        p->committed = committed;
        /* not in a shared workspace: frames in flight may be fenced, and
         * a start above the workspace's position waits for new messages
         * to be put right (kafka_fence.c) */
        if (!s->shared && p->handed > committed && p->handed > stored) {
            /* frames with its messages up to `handed` are in the ring or
             * being gathered: the writer commits them */
            t->offset = p->handed;
            if (stored > committed)
                p->acked = stored;
            zx_info("event=kafka_resume_in_flight pipeline=%s partition=%s offset=%" PRId64
                    " group_offset=%" PRId64 " stored=%" PRId64, s->name, p->name, p->handed,
                    committed, stored);
        } else if (stored >= 0 && stored > committed) {
            /* the writer has the rows up to `stored`: the group commit
             * after them was lost (the worker died in between, or the
             * group refused it during a rebalance) */
            t->offset = ks_witness(s, p, stored);
            if (p->witness < 0) {
                /* the group catches up once the witness is checked */
                p->acked = stored; /* retried by ks_commit_pending if refused */
                rd_kafka_topic_partition_list_add(catchup, t->topic, t->partition)->offset =
                    stored;
            }
            zx_info("event=kafka_resume_stored pipeline=%s partition=%s offset=%" PRId64
                    " group_offset=%" PRId64, s->name, p->name, stored, committed);
        } else if (committed >= 0) {
            t->offset = ks_witness(s, p, committed);
        } else if (s->first_start) {
            rd_kafka_topic_partition_list_add(ends, t->topic, t->partition);
            t->offset = RD_KAFKA_OFFSET_END;
        } else {
            t->offset = RD_KAFKA_OFFSET_BEGINNING;
        }
        p->fence_watch = 0;
        p->fence_seek = -1;
        p->last_ms = 0;         /* idle from now on, not since an old ownership */
    }
    /* "the beginning" made an offset (one request for all): the first
     * message is then checked against it like any start, so that a
     * fetcher that skips at once is caught (ks_check_gap) */
    ks_begin_offsets(s, parts);
    for (int i = 0; i < parts->cnt; i++) {
        rd_kafka_topic_partition_t *t = &parts->elems[i];
        kpart *p = &s->parts.v[kparts_find(&s->parts, t->topic, t->partition)];
        /* a shared workspace: what its frames start from (kafka_fence.c);
         * -1 (not known) makes the writer fence the first frame unless
         * the workspace has no position for it either */
        p->from = p->witness >= 0 ? p->witness + 1 : t->offset >= 0 ? t->offset : -1;
        /* one line per partition and assignment (rebalances are rare):
         * where each start came from, for whoever reads a loss or a
         * repeat afterwards (-2: the partition's beginning, -1: its end) */
        zx_info("event=kafka_start pipeline=%s partition=%s offset=%" PRId64 " from=%" PRId64
                " group_offset=%" PRId64 " stored=%" PRId64, s->name, p->name,
                (int64_t)t->offset, p->from, p->committed, ks_stored_position(s, p->name));
    }
    if (ends->cnt) {
        if (ks_end_offsets(s, ends) < 0) {
            s->fatal = 1;
            goto out;
        }
        for (int i = 0; i < ends->cnt; i++) {
            rd_kafka_topic_partition_t *t =
                rd_kafka_topic_partition_list_find(parts, ends->elems[i].topic,
                                                   ends->elems[i].partition);
            int64_t idx = kparts_find(&s->parts, ends->elems[i].topic, ends->elems[i].partition);
            t->offset = ends->elems[i].offset;
            if (ks_note_position(s, (uint32_t)idx, t->offset) < 0) {
                s->fatal = 1;
                goto out;
            }
            zx_info("event=kafka_start_new pipeline=%s partition=%s offset=%" PRId64, s->name,
                    s->parts.v[idx].name, t->offset);
        }
    }
    rd_kafka_error_t *err = NULL;
    if (coop)
        err = rd_kafka_incremental_assign(s->rk, parts);
    else
        e = rd_kafka_assign(s->rk, parts);
    if (err || e) {
        zx_error("event=kafka_assign_failed pipeline=%s error=\"%s\"", s->name,
                 err ? rd_kafka_error_string(err) : rd_kafka_err2str(e));
        if (err)
            rd_kafka_error_destroy(err);
        s->fatal = 1;
        goto out;
    }
    for (int i = 0; i < parts->cnt; i++) {
        int64_t idx = kparts_find(&s->parts, parts->elems[i].topic, parts->elems[i].partition);
        s->parts.v[idx].assigned = 1;
        kpart *p = &s->parts.v[idx];
        p->next = p->witness >= 0 ? p->witness + 1
                : parts->elems[i].offset >= 0 ? parts->elems[i].offset : -1;
    }
    if (parts->cnt)
        s->first_start = 0; /* later partitions are "added later" */
    s->c_idx = -1;
    s->next_status_ms = 0;
    zx_info("event=kafka_assigned pipeline=%s partitions=%d", s->name, parts->cnt);
    /* an assignment proves the cluster, the credentials and the group */
    if (s->error[0] && !ks_topic_level(s->error_kind))
        ks_clear_error(s, NULL);
out:
    /* the stored positions are the writer's (acknowledged by definition):
     * the group catches up with them at once, or it would stay behind
     * until new messages come */
    if (catchup->cnt && !s->fatal) {
        rd_kafka_resp_err_t ce = rd_kafka_commit(s->rk, catchup, 1);
        if (ce) {
            zx_warn("event=kafka_commit_failed pipeline=%s error=\"%s\"", s->name,
                    rd_kafka_err2str(ce));
            kg_doubt(s, ce);
        }
    }
    rd_kafka_topic_partition_list_destroy(c);
    rd_kafka_topic_partition_list_destroy(ends);
    rd_kafka_topic_partition_list_destroy(catchup);
}

static void on_revoke(kstate *s, rd_kafka_topic_partition_list_t *parts, int coop)
{
    int lost = rd_kafka_assignment_lost(s->rk);
    if (!lost && !s->closing) {
        /* publish what is gathered, then wait until the writer has
         * committed every frame in flight (of a revoked partition: the
         * new owner starts after it; of a kept one: nothing is left to
         * commit while the group rebalances again, when it would refuse
         * the commit and librdkafka then drop the assignment as lost) */
        int64_t deadline = zx_mono_ms() + REVOKE_WAIT_MS;
        if (ks_publish(s) == KS_PUB_FATAL)
            s->fatal = 1;
        for (;;) {
            if (s->kept && ks_publish(s) == KS_PUB_FATAL)
                s->fatal = 1;
            uint64_t need = 0;
            for (size_t i = 0; i < s->parts.n; i++)
                if (kpart_last_seq(&s->parts.v[i]) > need)
                    need = kpart_last_seq(&s->parts.v[i]);
            if ((!s->kept && zx_src_acked_seq(s->rt) >= need) || s->fatal)
                break;
            if (zx_mono_ms() > deadline) {
                zx_warn("event=kafka_revoke_uncommitted pipeline=%s partitions=%d "
                        "detail=\"frames not committed within %d ms: their messages will be "
                        "read again\"", s->name, parts->cnt, REVOKE_WAIT_MS);
                break;
            }
            zx_src_wait(s->rt, 50);
        }
        ks_commit_acked(s, zx_src_acked_seq(s->rt), 1);
    } else if (lost && !s->closing && s->shared && ks_publish(s) == KS_PUB_FATAL) {
        /* the assignment was lost (this member was fenced by the group):
         * what is gathered still goes out as built, so that its
         * partitions' start (reset by the next assignment) never mixes
         * into its frame; the workspace's positions decide whether its
         * rows are applied (kafka_fence.c) */
        s->fatal = 1;
    }
    rd_kafka_topic_partition_list_t *paused = rd_kafka_topic_partition_list_new(parts->cnt + 1);
    int64_t again = 0;   /* messages in this workspace the group has not */
    for (int i = 0; i < parts->cnt; i++) {
        int64_t idx = kparts_find(&s->parts, parts->elems[i].topic, parts->elems[i].partition);
        if (idx < 0)
            continue;
        kpart *p = &s->parts.v[idx];
        if (p->handed > 0 && p->handed > p->committed)
            again += p->handed - (p->committed > 0 ? p->committed : 0);
        if (p->paused) /* librdkafka keeps a pause across assignments */
            rd_kafka_topic_partition_list_add(paused, p->topic, p->partition);
        p->paused = 0;
        p->check_epoch = 0;
        p->assigned = 0;
        p->next = -1;
        p->witness = -1;
    }
    if (paused->cnt)
        rd_kafka_resume_partitions(s->rk, paused);
    rd_kafka_topic_partition_list_destroy(paused);
    ks_drop_held(s, -1, s->held_off); /* no longer ours */
    if (coop) {
        rd_kafka_error_t *err = rd_kafka_incremental_unassign(s->rk, parts);
        if (err) {
            zx_warn("event=kafka_unassign_failed pipeline=%s error=\"%s\"", s->name,
                    rd_kafka_error_string(err));
            rd_kafka_error_destroy(err);
        }
    } else {
        rd_kafka_assign(s->rk, NULL);
    }
    s->next_status_ms = 0;
    zx_info("event=kafka_revoked pipeline=%s partitions=%d lost=%d", s->name, parts->cnt, lost);
    if (again > 0)
        /* this workspace has them (or will: in flight); the group's
         * offsets do not say so */
        zx_warn("event=kafka_revoked_uncommitted pipeline=%s partitions=%d messages=%" PRId64
                " detail=\"the group's offsets are behind what this host took: another "
                "member may read these messages again into its own workspace\"", s->name,
                parts->cnt, again);
}

void kg_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    kstate *s = opaque;
    int coop = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    /* every partition kept or added: its next message is checked */
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        /* the assignment is what this callback says (a commit it makes
         * that the group refuses puts it in doubt again), except for the
         * partitions added with a cooperative revoke: the group moves on
         * to another generation right after it */
        if (!s->coop_revoked || parts->cnt)
            kg_settle(s, "rebalance");
        s->coop_revoked = 0;
        on_assign(s, parts, coop);
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        kg_settle(s, "rebalance");
        s->coop_revoked = 0;
        on_revoke(s, parts, coop);
        if (coop && !s->closing && !rd_kafka_assignment_lost(rk)) {
            /* librdkafka rejoins the group at once to hand the revoked
             * partitions over: until that rebalance ends the group
             * refuses this member's commits (and the first commit it
             * answers with an old generation makes librdkafka drop the
             * whole assignment as lost), so whatever it read meanwhile
             * would be read again by another member */
            s->coop_revoked = 1;
            doubt(s, "partitions revoked: the group rebalances again");
        }
    } else {
        kg_settle(s, "rebalance");
        zx_error("event=kafka_rebalance_error pipeline=%s error=\"%s\"", s->name,
                 rd_kafka_err2str(err));
        on_revoke(s, parts, coop);
    }
    ks_watch_gaps(s);
}
