/*
 * kafka_fence.c — the `kafka` source when several zxd share one Postgres
 * workspace (workspace.postgres.shared) and read one topic in one consumer
 * group: the worker's half of the compare-and-set of positions whose
 * writer half is workers/writer/writer_fence.c (the argument is there).
 *
 * Each frame carries, for its partition, `from` (where this worker
 * believes the workspace's position is: the offset it was assigned or
 * seeked at, then each published frame's next offset) and the offset of
 * its first message.  A frame holds one partition only (kf_take: a
 * message of another partition starts the next frame), so that the
 * writer fences a frame as a whole: picking one partition's rows out of a
 * mixed frame would cost more than the smaller frames (librdkafka hands
 * messages over in runs of one partition anyway).
 *
 * When the writer fences a frame (another host wrote that range: the
 * partition moved while this one had frames in flight, or this one
 * started from a stale offset), it copies the workspace's position into
 * this zxd's store and bumps the segment's frames_fenced.  kf_poll sees
 * the counter move, publishes what is gathered and batches nothing more
 * until the writer has acknowledged every frame in flight (each is then
 * applied or fenced: a frame built on a fenced one is fenced too, its
 * `from` being the fenced one's end).  It then reads the store again:
 * a partition whose stored position is not its `from` is read again
 * from the stored one: seeked there (rd_kafka_seek_partitions), every
 * message of it held dropped, `from` set to it.  Messages librdkafka
 * fetched before the seek are dropped by kf_take (below the next offset)
 * and by librdkafka (a seek discards what was fetched before it); one
 * past the stored position is caught by the gap check after the resume
 * (ks_watch_gaps), and the writer refuses a frame that begins below the
 * stored position and counts one that begins past `from`.
 *
 * The group's offsets and a partition's start never exceed the
 * workspace's position: a start too low reads messages that exist, whose
 * frame is fenced and puts the worker right; a start too high would wait
 * for new messages to be put right, and at the end of a topic wait for
 * ever.  So while a fenced frame is unexamined the acks give no position
 * to commit (ks_commit_acked asks kf_fenced; kf_poll gives the applied
 * ones afterwards), and a start never comes from kpart.handed (frames in
 * flight may be fenced).
 *
 * It must never: batch a message while a fence is being dealt with, let
 * a frame start anywhere but at its `from` (a gap the writer would
 * accept), or commit to the group a position a fenced frame carried.  A worker fenced again and again just keeps seeking: nothing
 * here exits.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "workers/sources/kafka/kafka_int.h"
#include "workers/sources/source.h"


/* Every frame in flight is decided: read again from the stored position
 * each partition that a frame carried since the last look and whose
 * stored position is not its from. */
static void realign(kstate *s)
{
    char err[300];
    if (zx_src_positions_reload(s->rt, err, sizeof(err)) < 0) {
        /* the old positions stay: the next fence looks again */
        zx_warn("event=kafka_fence_reload_failed pipeline=%s error=\"%s\"", s->name, err);
        return;
    }
    int seeks = 0;
    for (size_t i = 0; i < s->parts.n && !s->fatal; i++) {
        kpart *p = &s->parts.v[i];
        int watched = p->fence_watch;
        p->fence_watch = 0;
        if (!p->assigned || !watched)
            continue;
        int64_t stored = ks_stored_position(s, p->name);
        /* none stored: the fenced frame held none of this partition's
         * rows (positions only: a frame of rows has one partition) */
        if (stored < 0)
            continue;
        if (stored == p->from) {
            /* its frames were applied: the acks ks_commit_acked did not
             * take while a fence was unexamined */
            if (stored > p->acked)
                p->acked = stored;
            continue;
        }
        zx_info("event=kafka_fenced pipeline=%s partition=%s from=%" PRId64 " next=%" PRId64
                " stored=%" PRId64 " detail=\"another host wrote this range: reading on from "
                "the workspace's position\"", s->name, p->name, p->from, p->next, stored);
        ks_drop_held(s, (int64_t)i, s->held_off);
        /* librdkafka 2.0 restarts a resumed partition's fetcher at the
         * position of the last message it gave: a seek made while paused
         * is lost (seen: a partition left 583 messages short at the end
         * of its topic), so it waits for the resume */
        if (s->paused)
            p->fence_seek = stored;
        else
            ks_seek_part(s, (int64_t)i, stored);
        p->from = stored;
        p->next = stored;
        p->handed = stored;
        p->acked = stored;      /* the workspace has everything below it */
        p->witness = -1;
        kpart_forget(p);        /* every frame in flight was acknowledged */
        s->fence_seeks++;
        seeks++;
    }
    s->c_idx = -1;
    /* the first message of each partition is checked against next once
     * reading resumes (ks_pause_all) */
    zx_info("event=kafka_fence_done pipeline=%s seeks=%d fences=%" PRIu64 " seeks_total=%"
            PRIu64, s->name, seeks, s->fences, s->fence_seeks);
}

int kf_fenced(kstate *s)
{
    zx_seg_hdr *h = zx_src_args(s->rt)->seg->hdr;
    uint64_t f = atomic_load_explicit(&h->frames_fenced, memory_order_acquire);
    if (f != s->fence_seen) {
        if (!s->fence_pending)
            zx_info("event=kafka_fence_seen pipeline=%s frames_fenced=%" PRIu64, s->name, f);
        s->fences += f - s->fence_seen;
        s->fence_seen = f;
        s->fence_pending = 1;
    }
    return s->fence_pending;
}

int kf_poll(kstate *s)
{
    zx_seg_hdr *h = zx_src_args(s->rt)->seg->hdr;
    if (!kf_fenced(s))
        return 0;
    /* what is gathered goes out first (in_doubt publishes it), then every
     * frame in flight must be decided */
    if (!kb_empty(&s->b) || s->kept ||
        zx_src_acked_seq(s->rt) < zx_src_published_seq(s->rt))
        return 1;
    /* fences seen meanwhile are covered by this look */
    s->fence_seen = atomic_load_explicit(&h->frames_fenced, memory_order_acquire);
    s->fence_pending = 0;
    realign(s);
    return 0;
}

void kf_resumed(kstate *s)
{
    for (size_t i = 0; i < s->parts.n && !s->fatal; i++) {
        kpart *p = &s->parts.v[i];
        int64_t at = p->fence_seek;
        p->fence_seek = -1;
        if (at < 0 || !p->assigned)
            continue;
        ks_drop_held(s, (int64_t)i, s->held_off);
        ks_seek_part(s, (int64_t)i, at);
    }
}

int kf_take(kstate *s, int64_t idx, const rd_kafka_message_t *m)
{
    kpart *p = &s->parts.v[idx];
    if (p->next >= 0 && m->offset < p->next) {
        s->fence_stale++;
        return 1;   /* fetched before a seek: this range is decided */
    }
    if (kb_other_part(&s->b, (uint32_t)idx))
        return KB_FULL;
    /* past the next offset (compaction, transaction markers, or a
     * fetcher that skipped): such a message starts a frame, whose first
     * offset then shows the gap to the writer (counted, logged) */
    if (p->next >= 0 && m->offset > p->next && !kb_empty(&s->b))
        return KB_FULL;
    return 0;
}

void kf_assign(kstate *s)
{
    char err[300];
    if (zx_src_positions_reload(s->rt, err, sizeof(err)) < 0)
        zx_warn("event=kafka_fence_reload_failed pipeline=%s error=\"%s\"", s->name, err);
}
