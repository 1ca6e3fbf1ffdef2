/*
 * kafka_witness.c — the first message of a partition after a start from
 * a stored position (the witness: the message before the position, with
 * its fingerprint; another one, or none, means the topic was re-created
 * or truncated: on_topic_reset) and after a rebalance or a resume (a gap
 * librdkafka left: read again from the offset expected).  See kafka.c's
 * opening comment and kafka_int.h.
 *
 * It must never: take a message past a gap it has not checked once, or
 * read a reset topic again when on_topic_reset is fail.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/sources/kafka/kafka_int.h"
#include "workers/sources/source.h"

void ks_watch_gaps(kstate *s)
{
    s->boundary_ep = ++s->epoch;
    for (size_t i = 0; i < s->parts.n; i++)
        if (s->parts.v[i].assigned)
            s->parts.v[i].check_epoch = s->epoch;
}

void ks_drop_held(kstate *s, int64_t idx, size_t from)
{
    for (size_t i = from; i < s->nheld; i++) {
        rd_kafka_message_t *m = s->held[i];
        if (!m || m->err || !m->rkt)
            continue;
        int64_t at = ks_part_of(s, m->rkt, m->partition);
        if (idx >= 0 ? at == idx : at < 0 || !s->parts.v[at].assigned) {
            rd_kafka_message_destroy(m);
            s->held[i] = NULL;
        }
    }
}

void ks_seek_part(kstate *s, int64_t idx, int64_t at)
{
    kpart *p = &s->parts.v[idx];
    rd_kafka_resp_err_t e;
    if (p->rkt) {
        e = rd_kafka_seek(p->rkt, p->partition, at, KS_OFFSETS_TIMEOUT_MS);
    } else {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = at;
        rd_kafka_error_t *err = rd_kafka_seek_partitions(s->rk, l, KS_OFFSETS_TIMEOUT_MS);
        e = err ? rd_kafka_error_code(err) : l->elems[0].err;
        if (err)
            rd_kafka_error_destroy(err);
        rd_kafka_topic_partition_list_destroy(l);
    }
    if (e) {
        /* the messages are gone for this incarnation: a restart reads
         * them again from the committed positions */
        zx_error("event=kafka_seek_failed pipeline=%s partition=%s offset=%" PRId64
                 " error=\"%s\"", s->name, p->name, at, rd_kafka_err2str(e));
        if (!s->fatal)
            s->fatal = 1;
        return;
    }
    ks_drop_held(s, idx, s->held_off + 1);
    /* its first message from now on answers this seek: checked */
    p->seek_at = at;
    p->last_ms = s->now_ms;     /* its messages are due from now */
    p->seek_ep = ++s->epoch;
    p->check_epoch = p->seek_ep;
}

int64_t ks_witness(kstate *s, kpart *p, int64_t start)
{
    const void *v;
    size_t len;
    int64_t stored;
    uint64_t fp;
    p->witness = -1;
    if (start <= 0 || zx_src_position_find(s->rt, p->name, &v, &len) != 0 ||
        kb_pos_decode(v, len, &stored) != 0 || stored != start || !(fp = kb_pos_fp(v, len)))
        return start;
    p->witness = start - 1;
    p->witness_fp = fp;
    return start - 1;
}

/* The partition's stored position is not in its topic any more (the
 * message before it is another one, or is gone): on_topic_reset. */
static void topic_reset(kstate *s, int64_t idx, const rd_kafka_message_t *m, int64_t w)
{
    kpart *p = &s->parts.v[idx];
    char what[400], msg[ZX_SEG_SOURCE_ERROR_MAX];
    snprintf(what, sizeof(what), "partition %s: the message before the stored position %" PRId64
             " is %s: the topic was deleted and created again (or truncated) while zx was not "
             "reading it", p->name, w + 1,
             m->offset == w ? "another one" : "gone (the partition starts lower now)");
    if (s->o->topic_reset_fail) {
        zx_error("event=kafka_topic_reset pipeline=%s partition=%s stored=%" PRId64
                 " got=%" PRId64 " action=fail", s->name, p->name, w + 1, m->offset);
        snprintf(msg, sizeof(msg), "%.300s; on_topic_reset: fail, so the pipeline stops "
                 "(set on_topic_reset: restart to read the topic again from its start)", what);
        zx_src_feed(s->rt, "kafka_topic_reset", msg);
        ks_set_error(s, KE_OTHER, msg, NULL);
        s->fatal = KS_FAILED;
        return;
    }
    zx_warn("event=kafka_topic_reset pipeline=%s partition=%s stored=%" PRId64 " got=%" PRId64
            " action=restart detail=\"%s; reading it again from its start\"", s->name, p->name,
            w + 1, m->offset, what);
    snprintf(s->reset_note, sizeof(s->reset_note), "%.330s; read again from its start "
             "(on_topic_reset: restart)", what);
    zx_src_feed(s->rt, "kafka_topic_reset", s->reset_note);
    s->resets++;
    s->next_status_ms = 0;
    p->next = p->acked = p->committed = p->handed = -1;
    p->check_epoch = 0;
    ks_seek_part(s, idx, RD_KAFKA_OFFSET_BEGINNING);
}

/* Partition idx's first message after a start from a stored position
 * with a witness (ks_witness): 1 when m must be dropped (it is the
 * witness, or the topic was reset and a seek was made), else 0 (the
 * witness is gone, compacted or past the retention: m comes next). */
int ks_check_witness(kstate *s, int64_t idx, const rd_kafka_message_t *m)
{
    kpart *p = &s->parts.v[idx];
    int64_t w = p->witness;
    p->witness = -1;
    if (m->offset > w)
        return 0;
    rd_kafka_timestamp_type_t tt;
    kb_msg km = {.key = m->key, .key_len = m->key_len, .payload = m->payload, .len = m->len,
                 .ts_ms = rd_kafka_message_timestamp(m, &tt)};
    if (m->offset == w && kb_fingerprint(&km) == p->witness_fp) {
        /* the same topic: the group may now catch up with the position */
        if (p->acked < w + 1)
            p->acked = w + 1;
        return 1;
    }
    topic_reset(s, idx, m, w);
    return 1;
}

/* The first message of partition idx after a rebalance, a resume or a
 * seek: when its offset is past the one expected, read again from the
 * expected one.  The gap is the topic's own (compaction, transaction
 * markers) only when m is the first answer to a seek to exactly that
 * offset and no rebalance or resume came between them: a seek made once
 * for this position earlier proves nothing (librdkafka 2.0, paused and
 * resumed before the seek's first message came, restarts past it
 * again).  1 when m must be dropped (a seek was made), else 0. */
int ks_check_gap(kstate *s, int64_t idx, const rd_kafka_message_t *m)
{
    kpart *p = &s->parts.v[idx];
    if (!p->check_epoch || s->held_ep[s->held_off] < p->check_epoch)
        return 0;
    p->check_epoch = 0;
    int v = kpart_gap_verdict(p, s->boundary_ep, m->offset);
    if (v == KP_GAP_NONE)
        return 0;
    if (v == KP_GAP_CONFIRMED) {
        zx_info("event=kafka_gap_confirmed pipeline=%s partition=%s expected=%" PRId64
                " got=%" PRId64 " detail=\"read again from the expected offset, the topic "
                "has no message there (compaction or a transaction marker): taken as it "
                "is\"", s->name, p->name, p->next, m->offset);
        return 0;
    }
    zx_warn("event=kafka_offset_gap pipeline=%s partition=%s expected=%" PRId64 " got=%" PRId64
            " detail=\"librdkafka skipped messages after a rebalance, a resume or a seek: "
            "reading again from the expected offset\"", s->name, p->name, p->next, m->offset);
    ks_seek_part(s, idx, p->next);
    return 1;
}
