/*
 * kafka_nudge.c — wake librdkafka's fetcher when the worker has nearly
 * emptied librdkafka's queue (kafka_int.h, kn_*).
 *
 * Why: librdkafka before 2.2 stops fetching a partition while the queue
 * holds queued.min.messages (or queued.max.messages.kbytes), and looks
 * again only when its broker thread wakes: a fetch response, an
 * operation for that broker, or its 1 s serve timeout.  With every
 * partition stopped nothing is in flight, so a consumer that empties
 * the queue in less than a second then waits for the rest of it (2.2
 * added fetch.queue.backoff.ms for this).  Measured here: 100,000
 * queued messages of 200 bytes gave 150-190k messages/s with the CPU
 * idle half the time, 32,768 gave 68k/s.  A request to the broker of an
 * assigned partition (its watermarks, ListOffsets: read-only, no effect
 * on the group or its offsets) wakes that broker thread, which then
 * fetches again at once.  So the prefetch can be small (bounded by the
 * ring: zx_kafka_bound_prefetch) without the stall.
 *
 * The request waits for its answer, so it runs on a thread of its own:
 * the poll loop only hands it a partition (kn_ask, at most every
 * NUDGE_EVERY_MS, while the queue holds less than half of
 * queued.min.messages), round robin over the assigned partitions, so
 * that with several brokers each is woken in turn.
 *
 * It must never: block the poll loop (a nudge still in flight makes
 * kn_ask a no-op), read s->parts from its thread (the main thread copies
 * the partition into the slot), or commit, seek, pause or resume
 * anything.
 */
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "workers/sources/kafka/kafka_int.h"

#define NUDGE_EVERY_MS 10
#define NUDGE_TIMEOUT_MS 500

static void *nudge_main(void *arg)
{
    kstate *s = arg;
    char topic[sizeof(s->nudge_topic)];
    pthread_mutex_lock(&s->nudge_mu);
    for (;;) {
        while (!s->nudge_pending && !s->nudge_stop)
            pthread_cond_wait(&s->nudge_cv, &s->nudge_mu);
        if (s->nudge_stop)
            break;
        memcpy(topic, s->nudge_topic, sizeof(topic));
        int32_t part = s->nudge_part;
        pthread_mutex_unlock(&s->nudge_mu);
        int64_t lo, hi;
        (void)rd_kafka_query_watermark_offsets(s->rk, topic, part, &lo, &hi, NUDGE_TIMEOUT_MS);
        pthread_mutex_lock(&s->nudge_mu);
        s->nudge_pending = 0;
    }
    pthread_mutex_unlock(&s->nudge_mu);
    return NULL;
}

int kn_start(kstate *s)
{
    if (pthread_mutex_init(&s->nudge_mu, NULL) != 0)
        return -1;
    if (pthread_cond_init(&s->nudge_cv, NULL) != 0) {
        pthread_mutex_destroy(&s->nudge_mu);
        return -1;
    }
    if (pthread_create(&s->nudge_th, NULL, nudge_main, s) != 0) {
        pthread_cond_destroy(&s->nudge_cv);
        pthread_mutex_destroy(&s->nudge_mu);
        return -1;
    }
    s->nudge_running = 1;
    return 0;
}

void kn_ask(kstate *s)
{
    if (!s->nudge_running || !s->parts.n)
        return;
    int64_t now = zx_mono_ms();
    if (now - s->nudge_last_ms < NUDGE_EVERY_MS ||
        rd_kafka_queue_length(s->q) * 2 >= (size_t)s->prefetch.queued_min_messages)
        return;
    s->nudge_last_ms = now;
    for (size_t k = 0; k < s->parts.n; k++) {
        const kpart *p = &s->parts.v[(s->nudge_rr + k) % s->parts.n];
        if (!p->assigned || p->paused)
            continue;
        s->nudge_rr = (s->nudge_rr + k + 1) % s->parts.n;
        pthread_mutex_lock(&s->nudge_mu);
        if (!s->nudge_pending) {
            snprintf(s->nudge_topic, sizeof(s->nudge_topic), "%s", p->topic);
            s->nudge_part = p->partition;
            s->nudge_pending = 1;
            s->nudges++;
            pthread_cond_signal(&s->nudge_cv);
        }
        pthread_mutex_unlock(&s->nudge_mu);
        return;
    }
}

void kn_stop(kstate *s)
{
    if (!s->nudge_running)
        return;
    pthread_mutex_lock(&s->nudge_mu);
    s->nudge_stop = 1;
    pthread_cond_signal(&s->nudge_cv);
    pthread_mutex_unlock(&s->nudge_mu);
    pthread_join(s->nudge_th, NULL);
    pthread_cond_destroy(&s->nudge_cv);
    pthread_mutex_destroy(&s->nudge_mu);
    s->nudge_running = 0;
}
