/*
 * kafka_solo.c — the `kafka` source without a consumer group: the worker
 * reads every partition of its topics itself, with librdkafka's simple
 * consumer API (rd_kafka_consume_start_queue: no group needed, so no
 * group ACL or coordinator either), each partition from the position the
 * writer stored in LMDB, else from the beginning, or, on the pipeline's
 * very first start with `start: new`, from its end (published at once in
 * a frame of positions).  See kafka.c for the whole design.
 *
 * A thread asks the cluster for the metadata every META_EVERY_MS (all
 * topics for a regex, else ours) so that new partitions and new matching
 * topics are read too, from their beginning; the main thread applies its
 * results (kso_apply), so that partitions start only there.
 *
 * It must never: block the main thread on the metadata (the thread does
 * that), or share anything with the thread outside meta_mu but the
 * read-only s->rk, s->re and s->p.
 */
#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/sources/kafka/kafka_int.h"

#define META_EVERY_MS 5000           /* metadata refresh period */
#define META_RETRY_MS 1000           /* ... after a failure or a topic error */

static void meta_free(kmeta_topic *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(t[i].topic);
    free(t);
}

static int wanted_topic(kstate *s, const char *topic)
{
    if (s->have_re)
        return regexec(&s->re, topic, 0, NULL, 0) == 0;
    for (size_t i = 0; i < s->o->ntopics; i++)
        if (strcmp(s->o->topics[i], topic) == 0)
            return 1;
    return 0;
}

/* The metadata thread: asks the cluster, every few seconds, for the
 * topics (all of them for a regex, else the locally known ones: ours) and
 * hands the result to the main thread, which it wakes through efd.  It
 * only reads s->rk, s->re, s->p; everything else under meta_mu. */
static void *meta_main(void *arg)
{
    kstate *s = arg;
    pthread_mutex_lock(&s->meta_mu);
    while (!s->meta_stop) {
        pthread_mutex_unlock(&s->meta_mu);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t e = rd_kafka_metadata(s->rk, s->have_re, NULL, &md, 10000);
        kmeta_topic *t = NULL;
        size_t n = 0;
        int ok = e == RD_KAFKA_RESP_ERR_NO_ERROR && md;
        if (ok && md->topic_cnt > 0 && !(t = calloc((size_t)md->topic_cnt, sizeof(*t))))
            ok = 0;
        for (int i = 0; ok && i < md->topic_cnt; i++) {
            const rd_kafka_metadata_topic_t *mt = &md->topics[i];
            if (!wanted_topic(s, mt->topic))
                continue;
            if (!(t[n].topic = strdup(mt->topic))) {
                ok = 0;
                break;
            }
            t[n].npart = mt->partition_cnt;
            t[n].err = mt->err;
            n++;
        }
        if (md)
            rd_kafka_metadata_destroy(md);
        pthread_mutex_lock(&s->meta_mu);
        if (ok) {
            meta_free(s->meta, s->nmeta);
            s->meta = t;
            s->nmeta = n;
        } else {
            meta_free(t, n);
        }
        s->meta_ok = ok;
        s->meta_gen++;
        if (write(s->efd, &ks_efd_one, sizeof(ks_efd_one)) < 0) {
            /* the counter is far from full: nothing to do */
        }
        int again = META_EVERY_MS;
        for (size_t i = 0; ok && i < n; i++)
            if (t[i].err)
                again = META_RETRY_MS;
        if (!ok)
            again = META_RETRY_MS;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += again / 1000;
        ts.tv_nsec += (long)(again % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!s->meta_stop)
            pthread_cond_timedwait(&s->meta_cv, &s->meta_mu, &ts);
    }
    pthread_mutex_unlock(&s->meta_mu);
    return NULL;
}

ktopic *kso_topic(kstate *s, const char *name)
{
    for (size_t i = 0; i < s->ntopics; i++)
        if (strcmp(s->topics[i].name, name) == 0)
            return &s->topics[i];
    if (zx_grow(&s->topics, s->ntopics, &s->topics_cap, sizeof(*s->topics)) < 0)
        return NULL;
    ktopic *t = &s->topics[s->ntopics];
    if (!(t->name = strdup(name)))
        return NULL;
    if (!(t->rkt = rd_kafka_topic_new(s->rk, name, NULL))) {
        free(t->name);
        return NULL;
    }
    s->ntopics++;
    return t;
}

/* Start reading the partitions of l (offset field: where; END asks for
 * the end first).  0, or -1 (nothing started, error set). */
static int start_partitions(kstate *s, rd_kafka_topic_partition_list_t *l)
{
    rd_kafka_topic_partition_list_t *ends = rd_kafka_topic_partition_list_new(l->cnt + 1);
    for (int i = 0; i < l->cnt; i++)
        if (l->elems[i].offset == RD_KAFKA_OFFSET_END)
            rd_kafka_topic_partition_list_add(ends, l->elems[i].topic, l->elems[i].partition);
    if (ends->cnt && ks_end_offsets(s, ends) < 0) {
        rd_kafka_topic_partition_list_destroy(ends);
        return -1;
    }
    for (int i = 0; i < l->cnt; i++) {
        rd_kafka_topic_partition_t *t = &l->elems[i];
        int64_t idx = kparts_add(&s->parts, t->topic, t->partition);
        ktopic *kt = kso_topic(s, t->topic);
        if (idx < 0 || !kt) {
            s->fatal = 1;
            break;
        }
        kpart *p = &s->parts.v[idx];
        if (p->acked < 0)
            p->acked = ks_stored_position(s, p->name);
        if (t->offset == RD_KAFKA_OFFSET_END) {
            t->offset = rd_kafka_topic_partition_list_find(ends, t->topic, t->partition)->offset;
            if (ks_note_position(s, (uint32_t)idx, t->offset) < 0) {
                s->fatal = 1;
                break;
            }
            zx_info("event=kafka_start_new pipeline=%s partition=%s offset=%" PRId64, s->name,
                    p->name, t->offset);
        }
        p->witness = -1;
        if (t->offset >= 0)
            t->offset = ks_witness(s, p, t->offset); /* the same topic? */
        if (rd_kafka_consume_start_queue(kt->rkt, t->partition, t->offset, s->q) < 0) {
            zx_error("event=kafka_start_failed pipeline=%s partition=%s error=\"%s\"", s->name,
                     p->name, rd_kafka_err2str(rd_kafka_last_error()));
            continue;
        }
        p->rkt = kt->rkt;
        p->assigned = 1;
        p->next = p->witness >= 0 ? p->witness + 1 : t->offset >= 0 ? t->offset : -1;
        /* its first message is checked against next (ks_check_gap) */
        if (!s->epoch)
            s->epoch = 1;
        p->check_epoch = s->epoch;
        if (s->paused)
            ks_pause_all(s, 1);
    }
    s->c_idx = -1;
    s->next_status_ms = 0;
    zx_info("event=kafka_started pipeline=%s partitions=%d", s->name, l->cnt);
    rd_kafka_topic_partition_list_destroy(ends);
    return 0;
}

/* Apply the newest metadata result: errors per topic, new partitions. */
void kso_apply(kstate *s)
{
    pthread_mutex_lock(&s->meta_mu);
    if (s->meta_gen == s->meta_seen) {
        pthread_mutex_unlock(&s->meta_mu);
        return;
    }
    s->meta_seen = s->meta_gen;
    int ok = s->meta_ok;
    kmeta_topic *t = s->meta;
    size_t n = s->nmeta;
    s->meta = NULL;
    s->nmeta = 0;
    pthread_mutex_unlock(&s->meta_mu);
    if (!ok || !t) {
        meta_free(t, n);
        return; /* the error callback says why */
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    int topic_errors = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].err) {
            ks_on_error(s, t[i].err, NULL, t[i].topic);
            topic_errors++;
            continue;
        }
        if (ks_topic_level(s->error_kind) && strcmp(s->error_topic, t[i].topic) == 0)
            ks_clear_error(s, t[i].topic);
        for (int k = 0; k < t[i].npart; k++) {
            int64_t idx = kparts_find(&s->parts, t[i].topic, k);
            if (idx >= 0 && s->parts.v[idx].assigned)
                continue;
            char name[320];
            kb_part_name(name, sizeof(name), t[i].topic, k);
            int64_t at = ks_stored_position(s, name);
            if (at < 0)
                at = s->first_start ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING;
            rd_kafka_topic_partition_list_add(l, t[i].topic, k)->offset = at;
        }
    }
    /* for a fixed list, the topics the cluster did not even mention */
    for (size_t k = 0; !s->have_re && k < s->o->ntopics; k++) {
        size_t i = 0;
        while (i < n && strcmp(t[i].topic, s->o->topics[k]) != 0)
            i++;
        if (i == n) {
            ks_on_error(s, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, NULL, s->o->topics[k]);
            topic_errors++;
        }
    }
    if (!topic_errors && s->error[0] && !ks_topic_level(s->error_kind))
        ks_clear_error(s, NULL);
    /* "the beginning" made an offset: the first message is then checked
     * against it (ks_check_gap) */
    ks_begin_offsets(s, l);
    if (l->cnt == 0 || start_partitions(s, l) == 0)
        s->first_start = 0;
    rd_kafka_topic_partition_list_destroy(l);
    meta_free(t, n);
}


int kso_start(kstate *s)
{
    pthread_mutex_init(&s->meta_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->meta_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&s->meta_th, NULL, meta_main, s) != 0) {
        pthread_mutex_destroy(&s->meta_mu);
        pthread_cond_destroy(&s->meta_cv);
        return -1;
    }
    s->meta_running = 1;
    return 0;
}

void kso_stop(kstate *s)
{
    if (!s->meta_running)
        return;
    pthread_mutex_lock(&s->meta_mu);
    s->meta_stop = 1;
    pthread_cond_signal(&s->meta_cv);
    pthread_mutex_unlock(&s->meta_mu);
    pthread_join(s->meta_th, NULL);
}

void kso_close(kstate *s)
{
    for (size_t i = 0; i < s->parts.n; i++)
        if (s->parts.v[i].assigned && s->parts.v[i].rkt)
            rd_kafka_consume_stop(s->parts.v[i].rkt, s->parts.v[i].partition);
    for (size_t i = 0; i < s->ntopics; i++)
        rd_kafka_topic_destroy(s->topics[i].rkt);
}

void kso_free(kstate *s)
{
    for (size_t i = 0; i < s->ntopics; i++)
        free(s->topics[i].name);
    free(s->topics);
    meta_free(s->meta, s->nmeta);
    if (s->meta_running) {
        pthread_mutex_destroy(&s->meta_mu);
        pthread_cond_destroy(&s->meta_cv);
    }
    if (s->have_re)
        regfree(&s->re);
}
