/*
 * kafka.c — the `kafka` source: a Kafka consumer (librdkafka) whose
 * messages become frames, and whose offsets are committed only once the
 * writer has committed the frames that carried them (source.h,
 * docs/architecture.md §9.2).
 *
 * Two ways to own partitions:
 *   - with a consumer group (`group:`): subscribe (cooperative-sticky);
 *     the rebalance callback assigns each partition from the largest of the
 *     group's committed offset and the position the writer stored in LMDB
 *     (the rows up to it are in the table even when the worker died before
 *     committing to the group), else from the beginning; acknowledged
 *     offsets are committed to the group.
 *   - without a group: the worker reads every partition of the topics
 *     itself (librdkafka's simple consumer API, which needs no group),
 *     each from its position in LMDB, else from the beginning; a thread
 *     refreshes the metadata every few seconds so that new partitions and
 *     (for a regex) new topics are read too, from their beginning.
 * `start: new` changes "from the beginning" into "from the end" on the
 * pipeline's very first start only (no position ever stored): those end
 * offsets are published at once in a frame of positions only, so that
 * messages that arrive while zxd is down later are never skipped.
 *
 * Batching: messages go into one frame (kafka_batch.c) until it reaches a
 * quarter of what the ring takes (at most 8 MiB), 20,000 messages, or
 * 20 ms since its first message.  The frame carries, per partition, the
 * next offset to read ("topic:partition" -> 8 bytes little-endian, then
 * the fingerprint of the message before it: kafka_int.h); each
 * partition keeps (frame seq, next offset) until acked(seq) covers it.
 * While the runtime keeps a frame (no room), nothing more is read; after
 * 200 ms the partitions are paused so that librdkafka stops fetching.
 *
 * Memory: the frames keep to the first RING_WORKING_SET bytes of the ring
 * while they fit (zx_src_ring_working_set), what librdkafka fetches ahead
 * is bounded by half of that and a quarter of the ring (zx_kafka_bound_prefetch:
 * queued.max.messages.kbytes, fetch.max.bytes, max.partition.fetch.bytes,
 * queued.min.messages; the connection's `properties:` win), and the
 * messages taken out of it but not yet batched (held) by half a frame's
 * target bytes as well as HELD_MAX (held_room).  So the worker holds about
 * the working set, half of it ahead, and two frames (one gathered,
 * one encoded); a message too large for the working set still goes
 * through the whole ring.  A small prefetch
 * would stall librdkafka < 2.2 (it fetches again only when its broker
 * thread wakes, up to 1 s later): kafka_nudge.c wakes it.
 *
 * A revoke (rebalance) first publishes the frame being gathered (it may
 * hold rows of the revoked partitions: publishing is cheaper than picking
 * them out, and they are then committed like the rest), then waits up to
 * 10 s for the writer to commit every frame in flight, commits the
 * acknowledged offsets synchronously and lets the revoke complete.  Past
 * the deadline nothing more is committed for them: the new owner reads
 * those messages again (at least once).  Messages of revoked partitions
 * not yet in a frame are dropped.
 * The frames in flight are not forgotten: the writer commits them
 * anyway, so a partition coming back (to this process) never starts
 * below what it put into frames (kpart.handed), and their acks are
 * committed to the group when ahead of it.
 * While the group rebalances (after a cooperative revoke, or a commit it
 * refused for a stale generation: kafka_group.c, kg_doubt) the worker
 * publishes what it gathered, pauses fetching and batches nothing until
 * the next rebalance callback settles it (DOUBT_MAX_MS at most): another
 * member then reads again only the frames in flight.
 *
 * A start from a stored position reads the message before it first (the
 * witness: its fingerprint is stored with the position): another message,
 * or none, means the topic was re-created or truncated meanwhile
 * (on_topic_reset: read it again from its start, or fail).
 *
 * It must never: commit an offset (to the group or anywhere) before
 * acked() covers the frame that carried it, read more input while a frame
 * is kept, allocate or make a system call per message, block in poll for
 * more than ~20 ms outside a rebalance or the first start's end-offset
 * query, or print a secret (see kafka_conf.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/avro_connect.h"
#include "common/log.h"
#include "common/schema_registry.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/sources/kafka/kafka_int.h"
#include "workers/sources/source.h"

#define HELD_MAX 4096                /* messages taken from librdkafka at once */
#define HELD_AVG0 1024               /* a message's bytes before any is seen */
#define FRAME_MAX_MSGS 20000
#define FRAME_MAX_US 20000           /* a frame waits at most 20 ms for more */
#define FRAME_MAX_BYTES (8u << 20)
/* The part of the ring the frames keep to while they fit
 * (zx_src_ring_working_set): Kafka holds the rest upstream, so at full
 * speed four frames in flight keep the writer as busy as a whole ring
 * (tests/bench/kafka_bench.sh: the same rows/s with a 16 MiB ring as with
 * 64 MiB), and the worker and the writer then hold 16 MiB of ring pages,
 * not its whole size.  Frames, read-ahead and held messages are sized by
 * it; a message too large for it still goes through the whole ring. */
#define RING_WORKING_SET (UINT64_C(16) << 20)
#define PAUSE_AFTER_MS 200           /* back-pressure this long: pause fetching */
/* The most a doubt about the partitions' ownership (kg_doubt) holds the
 * reading back when no rebalance callback settles it (the session
 * timeout: a member that has heard nothing by then is still in the
 * group) */
#define DOUBT_MAX_MS 10000
#define DOUBT_POLL_MS 10             /* a poll in doubt waits this long */
#define STATUS_EVERY_MS 1000
#define IDLE_LOG_MS 10000      /* kafka_partition_idle: nothing for this long */
/* One schema registry request at most (a schema is fetched once per id;
 * poll is held that long only while it is fetched). */
#define REGISTRY_TIMEOUT_MS 5000

const uint64_t ks_efd_one = 1;

/* ---- errors and status ------------------------------------------------ */

int ks_topic_level(ke_kind k)
{
    return k == KE_UNKNOWN_TOPIC || k == KE_TOPIC_DENIED;
}

void ks_set_error(kstate *s, ke_kind k, const char *msg, const char *topic)
{
    snprintf(s->error, sizeof(s->error), "%s", msg);
    s->error_kind = k;
    snprintf(s->error_topic, sizeof(s->error_topic), "%s", topic ? topic : "");
    zx_src_set_error(s->rt, msg);
}

/* Forget the current error if messages of `topic` (NULL: any proof that
 * the cluster answers) show it is gone. */
void ks_clear_error(kstate *s, const char *topic)
{
    if (!s->error[0])
        return;
    if (ks_topic_level(s->error_kind) && (!topic || strcmp(topic, s->error_topic) != 0))
        return;
    s->error[0] = '\0';
    s->error_topic[0] = '\0';
    zx_src_set_error(s->rt, NULL);
}

void ks_describe(kstate *s, rd_kafka_resp_err_t err, const char *reason, const char *topic,
                     char *out, size_t n, ke_kind *kind)
{
    ke_ctx ctx;
    kc_err_ctx(s->c, s->o->group, &s->tls, &ctx);
    *kind = ke_describe(&ctx, err, reason, topic, out, n);
}

/* An error of librdkafka, from the error callback or a message. */
void ks_on_error(kstate *s, rd_kafka_resp_err_t err, const char *reason, const char *topic)
{
    char msg[ZX_SEG_SOURCE_ERROR_MAX], q[600];
    ke_kind k;
    ks_describe(s, err, reason, topic, msg, sizeof(msg), &k);
    if (k == KE_TRANSIENT) {
        if (err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET)
            zx_warn("event=kafka_offset_reset pipeline=%s detail=%s", s->name,
                    zx_log_quote(msg, q, sizeof(q)));
        else if (err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            zx_info("event=kafka_notice pipeline=%s detail=%s", s->name,
                    zx_log_quote(msg, q, sizeof(q)));
        return;
    }
    /* "all brokers are down" follows the precise reason: keep that one */
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN && s->error[0] &&
        (s->error_kind == KE_AUTH || s->error_kind == KE_TLS || s->error_kind == KE_PROTOCOL ||
         s->error_kind == KE_UNREACHABLE))
        return;
    ks_set_error(s, k, msg, topic);
    ke_ctx ctx;
    kc_err_ctx(s->c, s->o->group, &s->tls, &ctx);
    if (s->fatal != KS_FAILED && ke_permanent(&ctx, err, reason)) {
        /* the brokers answered: these settings cannot work until someone
         * changes them; a restart would get the same answer */
        zx_error("event=kafka_refused pipeline=%s error=%s", s->name,
                 zx_log_quote(msg, q, sizeof(q)));
        s->fatal = KS_FAILED;
    }
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    kstate *s = opaque;
    ks_on_error(s, (rd_kafka_resp_err_t)err, reason, NULL);
    if (rd_kafka_fatal_error(rk, NULL, 0) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        zx_error("event=kafka_fatal pipeline=%s", s->name);
        if (!s->fatal)
            s->fatal = 1;
    }
}

/* A backlog being caught up is shown as long work (catchup.h): done is
 * how far the assigned partitions' written positions moved since it
 * began, what is left their high watermarks less those positions (the
 * known ones). */
static void catchup_update(kstate *s, uint64_t written, int64_t left, const char *topic,
                           int many_topics)
{
    zx_catchup_view v;
    if (s->epoch != s->catchup_epoch) {
        /* other partitions: their positions summed are no count of ours */
        zx_catchup_rebase(&s->catchup, written);
        s->catchup_epoch = s->epoch;
    }
    if (!zx_catchup_update(&s->catchup, zx_now_us(), written, left, -1, &v)) {
        if (s->catchup_shown) {
            zx_src_set_progress(s->rt, NULL, 0, 0, 0, 0);
            s->catchup_shown = 0;
        }
        return;
    }
    char label[300], what[ZX_SEG_PROGRESS_WHAT_MAX];
    if (many_topics)
        snprintf(label, sizeof(label), "its topics");
    else
        snprintf(label, sizeof(label), "%s", topic ? topic : "its topic");
    zx_catchup_what(what, sizeof(what), label, -1);
    zx_src_set_progress(s->rt, what, v.done, v.expected, 0, v.started_us);
    s->catchup_shown = 1;
}

/* The status JSON (source.h): state and, per partition we read, the next
 * offset, the committed one, the high watermark and the lag. */
static void status_update(kstate *s)
{
    static char buf[ZX_SEG_SOURCE_STATUS_MAX];
    /* room kept for the end, and the topic reset note (at most ~420 bytes
     * once encoded) */
    size_t cap = sizeof(buf) - (s->resets ? 700 : 200), n = 0, shown = 0, total = 0;
    size_t assigned = 0;
    int64_t left = -1;          /* messages left to write on the assigned partitions */
    uint64_t written = 0;       /* their written positions, summed */
    const char *one_topic = NULL;
    int many_topics = 0;
    for (size_t i = 0; i < s->parts.n; i++)
        assigned += s->parts.v[i].assigned != 0;
    /* the last status was long ago: this process was stopped or blocked
     * (a SIGSTOP, a rebalance callback), not its partitions idle */
    int frozen = s->status_ms && s->now_ms - s->status_ms > 3 * STATUS_EVERY_MS;
    s->status_ms = s->now_ms;
    const char *state = s->error[0] ? "error" : assigned ? "consuming" : "connecting";
    n += (size_t)snprintf(buf + n, sizeof(buf) - n,
                          "{\"state\":\"%s\",\"paused\":%s,\"messages\":%" PRIu64
                          ",\"rows\":%" PRIu64 ",\"rejects\":%" PRIu64 ",\"frames\":%" PRIu64
                          ",\"partitions\":[",
                          state, s->paused ? "true" : "false", s->msgs, s->rows, s->rejects,
                          s->frames);
    for (size_t i = 0; i < s->parts.n; i++) {
        kpart *p = &s->parts.v[i];
        if (!p->assigned)
            continue;
        total++;
        int64_t lo = -1, hi = -1;
        if (rd_kafka_get_watermark_offsets(s->rk, p->topic, p->partition, &lo, &hi) == 0 &&
            hi >= 0)
            p->high = hi;
        int64_t committed = s->group ? p->committed : p->acked;
        int64_t at = p->next >= 0 ? p->next : committed;
        /* a partition behind its high watermark that gave nothing for
         * IDLE_LOG_MS while this worker reads: read again from the offset
         * expected, once per position (a fetcher restarted past messages
         * would wait here for ever at the end of a topic: librdkafka 2.0
         * after a pause; transaction markers at the end look alike, and
         * cost one seek) */
        if (!p->last_ms || p->paused || s->paused || s->kept || s->doubt_ms || frozen)
            p->last_ms = s->now_ms;
        else if (p->next >= 0 && p->high > p->next && p->idle_at != p->next &&
                 s->now_ms - p->last_ms >= IDLE_LOG_MS) {
            p->idle_at = p->next;
            int64_t seek = p->witness >= 0 ? p->witness : p->next;
            zx_warn("event=kafka_partition_idle pipeline=%s partition=%s next=%" PRId64
                    " high=%" PRId64 " idle_ms=%" PRId64 " held=%zu batch=%zu fence=%d "
                    "seek=%" PRId64 " detail=\"behind its high watermark and nothing came "
                    "for a while: read again from the offset expected\"",
                    s->name, p->name, p->next, p->high, s->now_ms - p->last_ms,
                    s->nheld - s->held_off, s->b.nmsgs, s->fence_pending, seek);
            ks_seek_part(s, (int64_t)i, seek);
        }
        char nx[24] = "null", cm[24] = "null", hw[24] = "null", lag[24] = "null";
        if (p->next >= 0)
            snprintf(nx, sizeof(nx), "%" PRId64, p->next);
        if (committed >= 0)
            snprintf(cm, sizeof(cm), "%" PRId64, committed);
        if (p->high >= 0)
            snprintf(hw, sizeof(hw), "%" PRId64, p->high);
        if (p->high >= 0 && at >= 0)
            snprintf(lag, sizeof(lag), "%" PRId64, p->high > at ? p->high - at : 0);
        /* catching up: what is left to write (messages held by the worker
         * or in its ring are not done yet) */
        int64_t wrote = committed >= 0 ? committed : p->next;
        /* (offsets past 2^48 are no real topic's: left out, no overflow) */
        if (p->high >= 0 && wrote >= 0 && p->high < ((int64_t)1 << 48) &&
            wrote < ((int64_t)1 << 48)) {
            left = (left < 0 ? 0 : left) + (p->high > wrote ? p->high - wrote : 0);
            written += (uint64_t)wrote;
        }
        if (!one_topic)
            one_topic = p->topic;
        else if (strcmp(one_topic, p->topic) != 0)
            many_topics = 1;
        char one[512];
        int k = snprintf(one, sizeof(one),
                         "%s{\"topic\":\"%s\",\"partition\":%d,\"offset\":%s,\"committed\":%s,"
                         "\"high\":%s,\"lag\":%s}",
                         shown ? "," : "", p->topic, (int)p->partition, nx, cm, hw, lag);
        if (k < 0 || (size_t)k >= sizeof(one) || n + (size_t)k >= cap)
            continue;
        memcpy(buf + n, one, (size_t)k);
        n += (size_t)k;
        shown++;
    }
    n += (size_t)snprintf(buf + n, sizeof(buf) - n, "],\"partitions_total\":%zu%s", total,
                          shown < total ? ",\"partitions_cut\":true" : "");
    if (s->resets && n < sizeof(buf)) {
        /* what the user must know of (on_topic_reset: restart) */
        json_t *note = json_string(s->reset_note);
        char *q = note ? json_dumps(note, JSON_ENCODE_ANY) : NULL;
        if (q && n + strlen(q) + 64 < sizeof(buf))
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, ",\"topic_resets\":%" PRIu64
                                  ",\"topic_reset\":%s", s->resets, q);
        free(q);
        json_decref(note);
    }
    if (n < sizeof(buf))
        snprintf(buf + n, sizeof(buf) - n, "}");
    zx_src_set_status(s->rt, buf);
    catchup_update(s, written, left, one_topic, many_topics);
}

/* ---- partitions ------------------------------------------------------- */

/* Index of the partition of a message (cached: messages come in runs of
 * one partition), or -1. */
int64_t ks_part_of(kstate *s, const rd_kafka_topic_t *rkt, int32_t partition)
{
    if (rkt == s->c_rkt && partition == s->c_part && s->c_idx >= 0)
        return s->c_idx;
    int64_t i = kparts_find(&s->parts, rd_kafka_topic_name(rkt), partition);
    s->c_rkt = rkt;
    s->c_part = partition;
    s->c_idx = i;
    return i;
}

/* Committed position of part in LMDB, or -1. */
int64_t ks_stored_position(kstate *s, const char *part)
{
    const void *v;
    size_t len;
    int64_t next;
    if (zx_src_position_find(s->rt, part, &v, &len) == 0 && kb_pos_decode(v, len, &next) == 0)
        return next;
    return -1;
}

/* Ask the cluster for the end offset of each partition of l (offset field
 * out), blocking up to KS_OFFSETS_TIMEOUT_MS.  0 or -1 (error set). */
int ks_end_offsets(kstate *s, rd_kafka_topic_partition_list_t *l)
{
    for (int i = 0; i < l->cnt; i++)
        l->elems[i].offset = -1; /* a timestamp of -1 asks for the end */
    rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(s->rk, l, KS_OFFSETS_TIMEOUT_MS);
    for (int i = 0; e == RD_KAFKA_RESP_ERR_NO_ERROR && i < l->cnt; i++)
        if (l->elems[i].err)
            e = l->elems[i].err;
        else if (l->elems[i].offset < 0)
            e = RD_KAFKA_RESP_ERR__NO_OFFSET;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        return 0;
    char msg[ZX_SEG_SOURCE_ERROR_MAX], full[ZX_SEG_SOURCE_ERROR_MAX];
    ke_kind k;
    ks_describe(s, e, NULL, NULL, msg, sizeof(msg), &k);
    snprintf(full, sizeof(full), "cannot get the end offsets for start: new (%.440s)", msg);
    ks_set_error(s, k == KE_TRANSIENT ? KE_OTHER : k, full, NULL);
    return -1;
}

void ks_begin_offsets(kstate *s, rd_kafka_topic_partition_list_t *l)
{
    /* A topic just made (or a leader just moved) answers "not leader"
     * for a moment: asked again for up to KS_BEGIN_RETRY_MS, as a start
     * left unchecked would not see librdkafka skipping its first
     * messages (seen: a partition read from 250). */
    int64_t until = zx_mono_ms() + KS_BEGIN_RETRY_MS;
    for (int attempt = 1;; attempt++) {
        rd_kafka_topic_partition_list_t *q = rd_kafka_topic_partition_list_new(l->cnt + 1);
        for (int i = 0; i < l->cnt; i++)
            if (l->elems[i].offset == RD_KAFKA_OFFSET_BEGINNING)
                /* a timestamp of -2 asks for the log start */
                rd_kafka_topic_partition_list_add(q, l->elems[i].topic, l->elems[i].partition)
                    ->offset = -2;
        if (!q->cnt) {
            rd_kafka_topic_partition_list_destroy(q);
            return;
        }
        rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(s->rk, q, KS_OFFSETS_TIMEOUT_MS);
        int last = zx_mono_ms() >= until;
        int unknown = 0;
        for (int i = 0; i < q->cnt; i++) {
            rd_kafka_topic_partition_t *r = &q->elems[i];
            rd_kafka_resp_err_t pe = e ? e : r->err;
            if (!pe && r->offset >= 0) {
                rd_kafka_topic_partition_list_find(l, r->topic, r->partition)->offset = r->offset;
                continue;
            }
            unknown++;
            if (last)
                zx_warn("event=kafka_begin_unknown pipeline=%s topic=%s partition=%d "
                        "error=\"%s\" attempts=%d detail=\"the partition's first offset is "
                        "not known: read from its beginning unchecked\"", s->name, r->topic,
                        (int)r->partition,
                        rd_kafka_err2str(pe ? pe : RD_KAFKA_RESP_ERR__NO_OFFSET), attempt);
        }
        rd_kafka_topic_partition_list_destroy(q);
        if (!unknown || last)
            return;
        usleep(attempt < 5 ? 100000u * (unsigned)attempt : 500000u);
    }
}

/* ---- frames ----------------------------------------------------------- */

/* The frame with seq is in the ring: remember, per partition, the
 * position it carries until the writer acknowledges it. */
static int published(kstate *s, uint64_t seq)
{
    for (size_t i = 0; i < s->b.npos; i++) {
        const kb_pos *bp = &s->b.pos[i];
        if (bp->next >= 0 && kpart_push(&s->parts.v[bp->part], seq, bp->next) < 0) {
            zx_error("event=out_of_memory pipeline=%s what=positions_in_flight", s->name);
            return KS_PUB_FATAL;
        }
        if (s->shared && bp->next >= 0) {
            kpart *p = &s->parts.v[bp->part];
            /* the next frame starts where this one ends (kafka_fence.c),
             * unless an assignment or a fence moved the partition's start
             * since this frame was built (a frame kept while the ring was
             * full through a rebalance): the new start stands, and this
             * frame is fenced or applied on its own */
            if (p->from == bp->from)
                p->from = bp->next;
            p->fence_watch = 1;
        }
    }
    s->frames++;
    s->rows += s->b.rs.nrows;
    s->rejects += s->b.nrej;
    s->kept = 0;
    s->batch_ingested_us = 0;
    kb_reset(&s->b);
    size_t n = s->nnotes;
    s->nnotes = 0;
    for (size_t i = 0; i < n; i++)
        if (ks_note_position(s, s->notes[i].part, s->notes[i].next) < 0)
            return KS_PUB_FATAL;
    return KS_PUB_DONE;
}

int ks_note_position(kstate *s, uint32_t part, int64_t next)
{
    const kpart *p = &s->parts.v[part];
    /* a fencing source keeps a frame of messages to one partition: the
     * note waits for the next frame (published() adds it) */
    if (s->kept || (s->shared && s->b.nmsgs && kb_other_part(&s->b, part))) {
        if (zx_grow(&s->notes, s->nnotes, &s->notes_cap, sizeof(*s->notes)) < 0)
            return -1;
        s->notes[s->nnotes++] = (kb_pos){.part = part, .next = next};
        return 0;
    }
    if (kb_note_position(&s->b, part, p->topic, p->partition, next) < 0)
        return -1;
    if (s->shared)
        kb_set_from(&s->b, part, p->from);
    if (!s->batch_ingested_us)
        s->batch_ingested_us = zx_now_us();
    return 0;
}

int ks_publish(kstate *s)
{
    if (s->kept) {
        uint64_t seq = 0;
        zx_pub_result r = zx_src_retry(s->rt, &seq);
        if (r == ZX_PUB_WAIT)
            return KS_PUB_BLOCKED;
        if (r != ZX_PUB_OK) {
            zx_error("event=publish_failed pipeline=%s result=%d", s->name, (int)r);
            return KS_PUB_FATAL;
        }
        return published(s, seq);
    }
    if (kb_empty(&s->b))
        return KS_PUB_DONE;
    zx_frame_meta m;
    if (kb_meta(&s->b, &m) < 0) {
        zx_error("event=out_of_memory pipeline=%s what=frame_metadata", s->name);
        return KS_PUB_FATAL;
    }
    m.metadata = s->p->metadata | s->b.metadata;
    /* always: the writer measures commit latency from it (the
     * _ingested_at column is made only when metadata asks) */
    m.ingested_at_us = s->batch_ingested_us ? s->batch_ingested_us : zx_now_us();
    uint64_t seq = 0;
    zx_pub_result r = zx_src_publish(s->rt, &m, &s->b.rs, &seq);
    switch (r) {
    case ZX_PUB_OK:
        return published(s, seq);
    case ZX_PUB_WAIT:
        s->kept = 1;
        s->blocked_since_ms = zx_mono_ms();
        return KS_PUB_BLOCKED;
    case ZX_PUB_TOO_BIG:
        /* kb_add keeps every frame under half the ring's largest record */
        zx_error("event=frame_too_big pipeline=%s estimate=%zu max=%" PRIu64, s->name,
                 kb_estimate(&s->b), zx_src_max_frame(s->rt));
        return KS_PUB_FATAL;
    default:
        zx_error("event=out_of_memory pipeline=%s what=frame", s->name);
        return KS_PUB_FATAL;
    }
}

/* Pause every partition we read, or resume those we paused. */
void ks_pause_all(kstate *s, int pause)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)s->parts.n + 1);
    for (size_t i = 0; i < s->parts.n; i++) {
        kpart *p = &s->parts.v[i];
        if (pause ? !p->assigned || p->paused : !p->paused)
            continue;
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
        p->paused = pause;
    }
    if (l->cnt && pause)
        rd_kafka_pause_partitions(s->rk, l);
    else if (l->cnt)
        rd_kafka_resume_partitions(s->rk, l);
    int n = l->cnt, seeks = 0;
    char where[600] = "";
    size_t wl = 0;
    s->paused = pause;
    if (!pause)
        ks_watch_gaps(s);
    /* Each partition resumed reads on from the offset this worker
     * expects, not from where librdkafka would restart it: librdkafka
     * 2.0 restarts at the offset after the last message it handed over,
     * counting messages it then dropped itself (purged by the pause's
     * barrier while a batch was being served), so it may restart past
     * messages zx never saw; at the end of a topic no later message
     * comes to show the gap (seen: three partitions left 667 messages
     * short, silently).  The messages of it held are read again. */
    for (int i = 0; !pause && i < l->cnt && !s->fatal; i++) {
        int64_t idx = kparts_find(&s->parts, l->elems[i].topic, l->elems[i].partition);
        if (idx < 0 || !s->parts.v[idx].assigned || s->parts.v[idx].next < 0)
            continue;
        kpart *p = &s->parts.v[idx];
        ks_drop_held(s, idx, s->held_off);
        /* a start whose witness has not come yet reads the witness */
        int64_t at = p->witness >= 0 ? p->witness : p->next;
        ks_seek_part(s, idx, at);
        p->fence_seek = -1;   /* this seek is the one */
        seeks++;
        if (wl < sizeof(where) - 40) {
            int k = snprintf(where + wl, sizeof(where) - wl, "%s%d@%" PRId64, wl ? "," : "",
                             (int)p->partition, at);
            if (k > 0)
                wl += (size_t)k < sizeof(where) - wl ? (size_t)k : 0;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    if (!pause && s->shared)
        kf_resumed(s);   /* the seeks a fence decided while paused */
    if (pause)
        zx_info("event=kafka_paused pipeline=%s partitions=%d", s->name, n);
    else
        zx_info("event=kafka_resumed pipeline=%s partitions=%d seeked=%d at=\"%s\"", s->name,
                n, seeks, where);
}

/* ---- commits ---------------------------------------------------------- */

/* The writer committed every frame up to seq: for each partition, the
 * newest position those frames carried may now be committed to the group
 * (async, or sync while a revoke or the close waits for it). */
void ks_commit_acked(kstate *s, uint64_t seq, int sync)
{
    /* a shared workspace: a fenced frame's position is not the
     * workspace's; kf_poll gives the applied ones once it has looked */
    int take = !s->shared || !kf_fenced(s);
    for (size_t i = 0; i < s->parts.n; i++) {
        kpart *p = &s->parts.v[i];
        int64_t next;
        if (kpart_ack(p, seq, &next) && take)
            p->acked = next;
    }
    ks_commit_pending(s, sync);
}

/* Commit to the group every assigned partition whose acknowledged
 * position is ahead of what the group holds: the new acks, and any
 * earlier commit the group refused (say, during a rebalance after a
 * crash) or a catch-up to the stored positions that failed.  Called on
 * every ack, once a second, and (sync) at a revoke and at the close. */
void ks_commit_pending(kstate *s, int sync)
{
    rd_kafka_topic_partition_list_t *l = NULL;
    if (!s->group)
        return;
    for (size_t i = 0; i < s->parts.n; i++) {
        kpart *p = &s->parts.v[i];
        if (!p->assigned || p->acked < 0 || p->acked <= p->committed)
            continue;
        if (!l && !(l = rd_kafka_topic_partition_list_new(8)))
            return;
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = p->acked;
    }
    if (!l)
        return;
    rd_kafka_resp_err_t e = rd_kafka_commit(s->rk, l, sync ? 0 : 1);
    if (sync) {
        for (int i = 0; e == RD_KAFKA_RESP_ERR_NO_ERROR && i < l->cnt; i++) {
            int64_t k = kparts_find(&s->parts, l->elems[i].topic, l->elems[i].partition);
            if (k >= 0 && !l->elems[i].err)
                s->parts.v[k].committed = l->elems[i].offset;
        }
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
            zx_warn("event=kafka_commit_failed pipeline=%s error=\"%s\"", s->name,
                    rd_kafka_err2str(e));
        kg_doubt(s, e);
        for (int i = 0; i < l->cnt; i++)
            kg_doubt(s, l->elems[i].err);
    } else if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        zx_warn("event=kafka_commit_failed pipeline=%s error=\"%s\"", s->name, rd_kafka_err2str(e));
    }
    rd_kafka_topic_partition_list_destroy(l);
}

/* ---- messages --------------------------------------------------------- */

/* A message librdkafka gave that is an error, not data. */
static void message_error(kstate *s, const rd_kafka_message_t *m)
{
    char reason[512];
    const char *topic = m->rkt ? rd_kafka_topic_name(m->rkt) : NULL;
    snprintf(reason, sizeof(reason), "%s", rd_kafka_message_errstr(m));
    ks_on_error(s, m->err, reason, topic);
}

/* encoding: avro: the message's value (or key) through the schema
 * registry into Kafka Connect's JSON (*out, a new reference).  0; 1 when
 * the registry cannot answer now (why set: try later); -1 when it can
 * never be read (why: the reject's reason). */
static int avro_json(kstate *s, const rd_kafka_message_t *m, int key, json_t **out, char *why,
                     size_t whylen)
{
    const void *data = key ? m->key : m->payload;
    size_t len = key ? m->key_len : m->len;
    const void *hdr = NULL;
    size_t hlen = 0;
    rd_kafka_headers_t *hs = NULL;
    if (s->o->registry_wire == ZX_WIRE_HEADERS && rd_kafka_message_headers(m, &hs) == 0)
        rd_kafka_header_get_last(hs, key ? "apicurio.key.globalId" : "apicurio.value.globalId",
                                 &hdr, &hlen);
    int64_t id;
    size_t off;
    if (zx_wire_parse(data, len, (zx_wire_mode)s->o->registry_wire, hdr, hlen, &id, &off, why,
                      whylen) < 0)
        return -1;
    const zx_avro_schema *sch;
    int rc = zx_registry_get(s->reg, id, &sch, why, whylen);
    if (rc)
        return rc;
    *out = zx_avro_decode(sch, (const char *)data + off, len - off, why, whylen);
    return *out ? 0 : -1;
}

/* How many messages to take from librdkafka now, held[] having nheld:
 * HELD_MAX at most, and about s->held_bytes at the running mean of a
 * message's size (one at least when none is held). */
static size_t held_room(const kstate *s, size_t nheld)
{
    size_t avg = s->held_avg ? s->held_avg : HELD_AVG0;
    size_t want = s->held_bytes / avg;
    if (want > HELD_MAX)
        want = HELD_MAX;
    if (want < 1)
        want = 1;
    return nheld >= want ? 0 : want - nheld;
}

/* n messages were just taken from librdkafka into held[nheld..]. */
static void held_add(kstate *s, size_t n)
{
    if (!s->nheld || s->held_off == s->nheld)
        s->held_us = zx_now_us();
    size_t bytes = 0;
    for (size_t i = s->nheld; i < s->nheld + n; i++) {
        s->held_ep[i] = s->epoch;
        bytes += s->held[i]->len + s->held[i]->key_len;
    }
    if (n) /* the mean of this take weighs a quarter */
        s->held_avg = (3 * (s->held_avg ? s->held_avg : HELD_AVG0) + bytes / n + 64) / 4;
    s->nheld += n;
}

/* Add one message to the batch: KB_ADDED (or skipped), KB_FULL, KB_NOMEM,
 * KB_WAIT (the schema registry cannot answer: m stays, tried again
 * later). */
static int take(kstate *s, rd_kafka_message_t *m)
{
    if (m->err) {
        message_error(s, m);
        return KB_ADDED;
    }
    int64_t idx = ks_part_of(s, m->rkt, m->partition);
    if (idx < 0 || !s->parts.v[idx].assigned)
        return KB_ADDED; /* revoked meanwhile: the next owner reads it */
    if (s->parts.v[idx].witness >= 0 && ks_check_witness(s, idx, m))
        return KB_ADDED; /* the witness, or read again after a reset */
    if (ks_check_gap(s, idx, m))
        return KB_ADDED; /* read again after the seek */
    if (s->shared) {
        int f = kf_take(s, idx, m);
        if (f)
            return f == KB_FULL ? KB_FULL : KB_ADDED; /* KB_ADDED: dropped */
    }
    kpart *p = &s->parts.v[idx];
    rd_kafka_timestamp_type_t tt;
    kb_msg km = {
        .topic = p->topic,
        .partition = m->partition,
        .offset = m->offset,
        .key = m->key,
        .key_len = m->key_len,
        .payload = m->payload,
        .len = m->len,
        .ts_ms = rd_kafka_message_timestamp(m, &tt),
    };
    json_t *vj = NULL, *kj = NULL;
    char why[600];
    if (s->reg) {
        int rc = m->payload && m->len ? avro_json(s, m, 0, &vj, why, sizeof(why)) : 0;
        if (rc < 0)
            km.reject = why;
        if (rc == 0 && m->key && m->key_len) {
            /* a key that is not Avro (a plain string key) is no key */
            char kwhy[600];
            int kr = avro_json(s, m, 1, &kj, kwhy, sizeof(kwhy));
            if (kr == 1)
                snprintf(why, sizeof(why), "%s", kwhy), rc = 1;
        }
        if (rc == 1) {
            json_decref(vj);
            json_decref(kj);
            char msg[ZX_SEG_SOURCE_ERROR_MAX];
            snprintf(msg, sizeof(msg), "%.380s (waiting for the schema registry; nothing is "
                     "lost)", why);
            if (strcmp(msg, s->error) != 0) {
                zx_warn("event=registry_unavailable pipeline=%s error=\"%s\"", s->name, why);
                ks_set_error(s, KE_REGISTRY, msg, NULL);
            }
            s->reg_retry_ms = zx_mono_ms() + 1000;
            return KB_WAIT;
        }
        km.value_json = vj;
        km.key_json = kj;
        if (vj && s->error[0] && s->error_kind == KE_REGISTRY)
            ks_clear_error(s, NULL);
    }
    int r = kb_add(&s->b, &km, (uint32_t)idx, s->limit);
    json_decref(vj);
    json_decref(kj);
    if (r != KB_ADDED)
        return r;
    if (s->shared)
        kb_set_from(&s->b, (uint32_t)idx, p->from);
    if (!s->batch_ingested_us)
        s->batch_ingested_us = s->held_us;
    p->next = m->offset + 1;
    p->handed = p->next;
    p->last_ms = s->now_ms;
    s->msgs++;
    if (s->error[0])
        ks_clear_error(s, p->topic);
    return KB_ADDED;
}

static int batch_due(kstate *s)
{
    return !kb_empty(&s->b) &&
           (s->b.nmsgs >= FRAME_MAX_MSGS || kb_estimate(&s->b) >= s->target ||
            zx_mono_us() - s->b.first_us >= FRAME_MAX_US);
}

/* Publish the batch; the poll answer for what happened. */
static int flush(kstate *s)
{
    int r = ks_publish(s);
    if (r == KS_PUB_FATAL)
        return ZX_SRC_FATAL;
    if (r == KS_PUB_BLOCKED)
        return ZX_SRC_BLOCKED;
    return ZX_SRC_BUSY;
}

/* The ownership of the partitions is in doubt (kg_doubt): publish what
 * is gathered (in flight: the writer commits it), pause fetching, and
 * batch nothing more, but keep serving librdkafka's queue for the
 * rebalance and commit callbacks that settle the doubt (messages that
 * come are held, in order, after those held already).  The poll
 * answer. */
static int in_doubt(kstate *s)
{
    if (!kb_empty(&s->b))
        return flush(s);
    if (!s->paused)
        ks_pause_all(s, 1);
    if (s->held_off) {
        size_t left = s->nheld - s->held_off;
        memmove(s->held, s->held + s->held_off, left * sizeof(*s->held));
        memmove(s->held_ep, s->held_ep + s->held_off, left * sizeof(*s->held_ep));
        s->nheld = left;
        s->held_off = 0;
    }
    size_t room = held_room(s, s->nheld);
    if (room) {
        ssize_t n = rd_kafka_consume_batch_queue(s->q, DOUBT_POLL_MS, s->held + s->nheld, room);
        if (n > 0)
            held_add(s, (size_t)n);
    }
    if (s->fatal)
        return ZX_SRC_FATAL;
    return s->doubt_ms || s->fence_pending ? ZX_SRC_IDLE : ZX_SRC_BUSY;
}

/* ---- the source callbacks ---------------------------------------------- */

static int poll_once(zx_src *rt, void *st)
{
    kstate *s = st;
    uint64_t drain;
    if (read(s->efd, &drain, sizeof(drain)) < 0) {
        /* EAGAIN: nothing was signalled */
    }
    int64_t now = zx_mono_ms();
    s->now_ms = now;
    if (now >= s->next_status_ms) {
        s->next_status_ms = now + STATUS_EVERY_MS;
        status_update(s);
        ks_commit_pending(s, 0); /* retry what the group refused */
    }
    if (!s->group && !zx_src_stopping(rt))
        kso_apply(s);
    if (s->fatal)
        return ZX_SRC_FATAL;

    if (s->kept) {
        int r = ks_publish(s);
        if (r == KS_PUB_FATAL)
            return ZX_SRC_FATAL;
        if (r == KS_PUB_BLOCKED) {
            if (!s->paused && now - s->blocked_since_ms >= PAUSE_AFTER_MS)
                ks_pause_all(s, 1);
            /* keep serving librdkafka's callbacks (rebalances, errors,
             * max.poll.interval) while paused; messages that raced the
             * pause are held, not batched */
            if (s->paused && s->held_off == s->nheld) {
                s->held_off = s->nheld = 0;
                ssize_t n = rd_kafka_consume_batch_queue(s->q, 0, s->held, held_room(s, 0));
                if (n > 0)
                    held_add(s, (size_t)n);
            }
            return s->fatal ? ZX_SRC_FATAL : ZX_SRC_BLOCKED;
        }
    }
    if (s->doubt_ms && now - s->doubt_ms >= DOUBT_MAX_MS)
        kg_settle(s, "timeout");
    /* a shared workspace fenced a frame: as in doubt until every frame
     * in flight is decided, then read on from the workspace's positions */
    int fencing = s->shared && !zx_src_stopping(rt) && kf_poll(s);
    if (s->fatal)
        return ZX_SRC_FATAL;
    if (s->paused && !s->doubt_ms && !fencing)
        ks_pause_all(s, 0);

    if (zx_src_stopping(rt)) {
        /* take nothing new; hand over what is gathered */
        if (!kb_empty(&s->b))
            return flush(s);
        return ZX_SRC_IDLE;
    }
    if (s->doubt_ms || fencing)
        return in_doubt(s);

    for (;;) {
        while (s->held_off < s->nheld) {
            rd_kafka_message_t *m = s->held[s->held_off];
            if (!m) { /* dropped after a seek or a revoke */
                s->held_off++;
                continue;
            }
            if (s->reg_retry_ms && zx_mono_ms() < s->reg_retry_ms)
                return kb_empty(&s->b) ? ZX_SRC_IDLE : flush(s);
            s->reg_retry_ms = 0;
            int r = take(s, m);
            if (r == KB_FULL)
                return flush(s); /* m is added to the next frame */
            if (r == KB_WAIT)    /* the registry is away: m waits in held */
                return kb_empty(&s->b) ? ZX_SRC_IDLE : flush(s);
            if (r == KB_NOMEM) {
                zx_error("event=out_of_memory pipeline=%s what=batch", s->name);
                return ZX_SRC_FATAL;
            }
            rd_kafka_message_destroy(m);
            s->held_off++;
            if (s->fatal)
                return ZX_SRC_FATAL;
            if (batch_due(s))
                return flush(s);
        }
        s->held_off = s->nheld = 0;
        kn_ask(s);
        int timeout = 0;
        if (!kb_empty(&s->b)) {
            int64_t left = s->b.first_us + FRAME_MAX_US - zx_mono_us();
            if (left <= 0)
                return flush(s);
            timeout = (int)((left + 999) / 1000);
        }
        ssize_t n = rd_kafka_consume_batch_queue(s->q, timeout, s->held, held_room(s, 0));
        if (s->fatal)
            return ZX_SRC_FATAL;
        if (n < 0) {
            zx_error("event=kafka_consume_failed pipeline=%s error=\"%s\"", s->name,
                     rd_kafka_err2str(rd_kafka_last_error()));
            return ZX_SRC_FATAL;
        }
        held_add(s, (size_t)n);
        if (s->kept) /* a rebalance published and the ring is full: the
                        messages wait in held */
            return ZX_SRC_BLOCKED;
        if (n == 0) {
            if (batch_due(s))
                return flush(s);
            return kb_empty(&s->b) ? ZX_SRC_IDLE : ZX_SRC_BUSY;
        }
    }
}

static int k_poll(zx_src *rt, void *st)
{
    int r = poll_once(rt, st);
    if (r == ZX_SRC_FATAL && ((kstate *)st)->fatal == KS_FAILED)
        return ZX_SRC_REFUSED;
    return r;
}

static int k_fd(void *st)
{
    return ((kstate *)st)->efd;
}

static void k_acked(zx_src *rt, void *st, uint64_t seq)
{
    (void)rt;
    ks_commit_acked(st, seq, 0);
}

static int k_drained(zx_src *rt, void *st)
{
    (void)rt;
    kstate *s = st;
    return kb_empty(&s->b) && !s->kept;
}

static void k_close(zx_src *rt, void *st)
{
    kstate *s = st;
    if (!s)
        return;
    s->closing = 1;
    for (size_t i = s->held_off; i < s->nheld; i++)
        if (s->held[i])
            rd_kafka_message_destroy(s->held[i]);
    s->nheld = s->held_off = 0;
    kso_stop(s);
    kn_stop(s);
    if (s->rk) {
        ks_commit_acked(s, zx_src_acked_seq(rt), 1);
        if (s->group)
            rd_kafka_consumer_close(s->rk);
        else
            kso_close(s);
        if (s->q)
            rd_kafka_queue_destroy(s->q);
        rd_kafka_destroy(s->rk);
    }
    zx_info("event=kafka_closed pipeline=%s messages=%" PRIu64 " rows=%" PRIu64
            " rejects=%" PRIu64 " frames=%" PRIu64 " nudges=%" PRIu64 " fences=%" PRIu64
            " fence_seeks=%" PRIu64 " fence_stale=%" PRIu64, s->name, s->msgs,
            s->rows, s->rejects, s->frames, s->nudges, s->fences, s->fence_seeks,
            s->fence_stale);
    kso_free(s);
    if (s->efd >= 0)
        close(s->efd);
    kb_free(&s->b);
    zx_dbz_tables_free(&s->tables);
    zx_registry_free(s->reg);
    free(s->notes);
    kparts_free(&s->parts);
    free(s->held);
    free(s->held_ep);
    free(s);
}

static int k_open(zx_src *rt, void **state, char *err, size_t errlen)
{
    const zx_worker_args *a = zx_src_args(rt);
    const zx_conf_pipeline *p = a->pipeline;
    const zx_kafka_opts *own = p->own;
    if (!p->conn || !own || !own->ntopics)
        return zx_seterr(err, errlen, "pipeline %s: no Kafka connection or topic", p->name);
    kstate *s = calloc(1, sizeof(*s));
    if (!s)
        return zx_seterr(err, errlen, "out of memory");
    s->rt = rt;
    s->p = p;
    s->o = own;
    s->c = p->conn;
    s->name = p->name;
    s->efd = -1;
    s->c_idx = -1;
    s->group = own->group != NULL;
    s->first_start = own->start_new && zx_src_positions_count(rt) == 0;
    /* several zxd write one workspace: fence every frame (kafka_fence.c);
     * fences of an earlier incarnation are in the positions loaded */
    s->shared = a->conf->ws_kind == ZX_WS_KIND_POSTGRES && a->conf->pg_shared;
    s->fence_seen = atomic_load_explicit(&a->seg->hdr->frames_fenced, memory_order_acquire);
    uint64_t maxf = zx_src_max_frame(rt);
    uint64_t workf = zx_src_ring_working_set(rt, RING_WORKING_SET);
    s->limit = (size_t)(maxf / 2);
    s->target = (size_t)(workf / 4 < FRAME_MAX_BYTES ? workf / 4 : FRAME_MAX_BYTES);
    s->held_bytes = s->target / 2;
    kb_init(&s->b, p->metadata);
    s->b.fence = s->shared;
    if (p->format == ZX_FORMAT_DEBEZIUM || p->stream_mode == ZX_STREAM_LATEST) {
        zx_dbz_init_conf(zx_src_args(rt)->conf, p, &s->dbz, s->rej_table);
        kb_set_changes(&s->b, &s->dbz, p->history, s->rej_table);
    }
    rd_kafka_conf_t *conf = NULL;
    if ((p->format == ZX_FORMAT_DEBEZIUM || p->stream_mode == ZX_STREAM_LATEST) &&
        zx_dbz_tables_init(&s->tables, p, &s->dbz, err, errlen) < 0)
        goto fail;
    if (zx_dbz_tables_seed(&s->tables, rt) < 0) {
        zx_seterr(err, errlen, "out of memory");
        goto fail;
    }
    if (own->encoding == ZX_ENC_AVRO &&
        !(s->reg = zx_registry_new(own->registry_url, own->registry_username,
                                   own->registry_password, REGISTRY_TIMEOUT_MS))) {
        zx_seterr(err, errlen, "schema_registry.url: not an http(s) URL, or out of memory");
        goto fail;
    }
    char e[512];

    if (!(s->held = malloc(HELD_MAX * sizeof(*s->held))) ||
        !(s->held_ep = malloc(HELD_MAX * sizeof(*s->held_ep))) || (s->efd = zx_eventfd()) < 0) {
        zx_seterr(err, errlen, "out of memory or descriptors");
        goto fail;
    }
    if (own->topics_regex && !s->group) {
        if (regcomp(&s->re, own->topics[0], REG_EXTENDED | REG_NOSUB) != 0) {
            zx_seterr(err, errlen, "topics: the regular expression does not compile");
            goto fail;
        }
        s->have_re = 1;
    }
#ifdef M_ARENA_MAX
    /* One malloc arena for the worker's threads.  Every message is
     * allocated by librdkafka's broker thread and freed by this one: with
     * an arena per thread each free locks the broker thread's arena while
     * it allocates.  perf sched on this thread (5M messages,
     * kafka_bench.sh's data): its sleeps in free() were ~46% of its
     * switches out, ~8% with one arena (the rest: preempted).  Rows/s on
     * a shared 2-core machine: within noise (454k -> 541k over 4
     * alternated pairs with the glibc tunable, equal in later runs); RSS
     * ~1 MiB lower.  Made before librdkafka starts its threads. */
    mallopt(M_ARENA_MAX, 1);
#endif
    if (!(conf = kc_build(s->c, &s->tls, err, errlen)))
        goto fail;
    /* librdkafka's prefetch is bounded by half the ring's working set
     * and by a quarter of the ring (a whole queue with a group; per
     * partition without one, where librdkafka's queues are the
     * partitions'; a quarter of the working set cost Debezium's large
     * events 15% of their rate: tests/bench/debezium_bench.sh); new
     * partitions and topics are noticed within 5 s */
    uint64_t ahead = workf + 16 < (maxf + 16) / 2 ? workf + 16 : (maxf + 16) / 2;
    if (kc_bound_prefetch(conf, s->c, ahead, &s->prefetch, err, errlen) < 0 ||
        kc_set(conf, s->c, 1, "topic.metadata.refresh.interval.ms", "5000", err, errlen) < 0 ||
        kc_set(conf, s->c, 0, "auto.offset.reset", "earliest", err, errlen) < 0)
        goto fail;
    if (s->group &&
        (kc_set(conf, s->c, 0, "group.id", own->group, err, errlen) < 0 ||
         kc_set(conf, s->c, 0, "enable.auto.commit", "false", err, errlen) < 0 ||
         kc_set(conf, s->c, 0, "enable.auto.offset.store", "false", err, errlen) < 0 ||
         kc_set(conf, s->c, 1, "partition.assignment.strategy", "cooperative-sticky", err,
                errlen) < 0 ||
         /* a worker that died holds its partitions this long: the
          * restarted one waits for them (librdkafka's default is 45 s) */
         kc_set(conf, s->c, 1, "session.timeout.ms", "10000", err, errlen) < 0 ||
         /* a rebalance is heard of within 1 s: reading stops while the
          * group rebalances (kg_doubt), for a shorter while */
         kc_set(conf, s->c, 1, "heartbeat.interval.ms", "1000", err, errlen) < 0))
        goto fail;
    rd_kafka_conf_set_error_cb(conf, error_cb);
    if (s->group) {
        rd_kafka_conf_set_rebalance_cb(conf, kg_rebalance_cb);
        rd_kafka_conf_set_offset_commit_cb(conf, kg_offset_commit_cb);
    }
    rd_kafka_conf_set_opaque(conf, s);
    if (!(s->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof(e)))) {
        zx_seterr(err, errlen, "cannot create the Kafka client: %s", e);
        goto fail;
    }
    conf = NULL; /* the client owns it now */
    rd_kafka_set_log_queue(s->rk, NULL); /* served with the messages */
    if (s->group) {
        rd_kafka_poll_set_consumer(s->rk);
        s->q = rd_kafka_queue_get_consumer(s->rk);
    } else {
        /* the simple consumer: partitions are started on s->q, and the
         * main queue (errors) is forwarded to it */
        s->q = rd_kafka_queue_new(s->rk);
        rd_kafka_queue_t *mq = rd_kafka_queue_get_main(s->rk);
        rd_kafka_queue_forward(mq, s->q);
        rd_kafka_queue_destroy(mq);
    }
    rd_kafka_queue_io_event_enable(s->q, s->efd, &ks_efd_one, sizeof(ks_efd_one));
    if (kn_start(s) < 0) {
        zx_seterr(err, errlen, "cannot start the fetcher's wake-up thread");
        goto fail;
    }

    if (s->group) {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)own->ntopics);
        for (size_t i = 0; i < own->ntopics; i++)
            rd_kafka_topic_partition_list_add(l, own->topics[i], RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t se = rd_kafka_subscribe(s->rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (se) {
            zx_seterr(err, errlen, "cannot subscribe: %s", rd_kafka_err2str(se));
            goto fail;
        }
    } else {
        /* the locally known topics are the ones metadata refreshes ask for */
        for (size_t i = 0; !s->have_re && i < own->ntopics; i++)
            if (!kso_topic(s, own->topics[i])) {
                zx_seterr(err, errlen, "out of memory");
                goto fail;
            }
        if (kso_start(s) < 0) {
            zx_seterr(err, errlen, "cannot start the metadata thread");
            goto fail;
        }
    }
    char sec[128], q1[600];
    kc_describe(s->c, sec, sizeof(sec));
    zx_info("event=kafka_open pipeline=%s brokers=%s security=%s group=%s topics=%zu%s "
            "start=%s first_start=%d librdkafka=%s queued_max_kbytes=%ld queued_min_messages=%ld "
            "fetch_max_bytes=%ld partition_fetch_bytes=%ld held_bytes=%zu", s->name,
            zx_log_quote(s->c->brokers_csv, q1, sizeof(q1)), zx_log_quote(sec, e, sizeof(e)),
            own->group ? own->group : "-", own->ntopics, own->topics_regex ? "(regex)" : "",
            own->start_new ? "new" : "oldest", s->first_start, rd_kafka_version_str(),
            s->prefetch.queued_kbytes, s->prefetch.queued_min_messages,
            s->prefetch.fetch_max_bytes, s->prefetch.partition_fetch_bytes, s->held_bytes);
    status_update(s);
    s->next_status_ms = zx_mono_ms() + STATUS_EVERY_MS;
    *state = s;
    return 0;
fail:
    if (conf)
        rd_kafka_conf_destroy(conf);
    k_close(rt, s);
    return -1;
}

const zx_source zx_source_kafka = {
    .name = "kafka",
    .flags = ZX_SOURCE_POSITIONS,
    .help = "messages consumed from Kafka topics (librdkafka), offsets committed after the write",
    .open = k_open,
    .poll = k_poll,
    .fd = k_fd,
    .acked = k_acked,
    .drained = k_drained,
    .close = k_close,
};
