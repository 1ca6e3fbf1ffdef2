/*
 * kafka_parts.c — the partitions a Kafka stream reads, and for each the
 * frames in flight that carry its position (frame seq, next offset), so
 * that when the writer acknowledges frames up to seq the source knows
 * which offset each partition may commit.  See kafka_int.h.
 *
 * It must never: commit anything itself (kafka.c does, after the ack), or
 * know about librdkafka handles beyond holding the opaque rkt pointer.
 */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "workers/sources/kafka/kafka_int.h"

int64_t kparts_find(const kparts *t, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].partition == partition && strcmp(t->v[i].topic, topic) == 0)
            return (int64_t)i;
    return -1;
}

int64_t kparts_add(kparts *t, const char *topic, int32_t partition)
{
    int64_t i = kparts_find(t, topic, partition);
    if (i >= 0)
        return i;
    if (zx_grow(&t->v, t->n, &t->cap, sizeof(*t->v)) < 0)
        return -1;
    kpart *p = &t->v[t->n];
    memset(p, 0, sizeof(*p));
    char name[320];
    if (kb_part_name(name, sizeof(name), topic, partition) < 0 || !(p->topic = strdup(topic)) ||
        !(p->name = strdup(name))) {
        free(p->topic);
        return -1;
    }
    p->partition = partition;
    p->next = p->acked = p->committed = p->high = p->seek_at = p->handed = p->witness = -1;
    p->from = p->fence_seek = -1;
    return (int64_t)t->n++;
}

void kparts_free(kparts *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].topic);
        free(t->v[i].name);
        free(t->v[i].q);
    }
    free(t->v);
    memset(t, 0, sizeof(*t));
}

int kpart_push(kpart *p, uint64_t seq, int64_t next)
{
    if (p->qlen == p->qcap) {
        size_t cap = p->qcap ? 2 * p->qcap : 16;
        kp_flight *n = malloc(cap * sizeof(*n));
        if (!n)
            return -1;
        for (size_t i = 0; i < p->qlen; i++)
            n[i] = p->q[(p->qhead + i) % p->qcap];
        free(p->q);
        p->q = n;
        p->qhead = 0;
        p->qcap = cap;
    }
    p->q[(p->qhead + p->qlen) % p->qcap] = (kp_flight){seq, next};
    p->qlen++;
    return 0;
}

int kpart_ack(kpart *p, uint64_t seq, int64_t *next)
{
    int got = 0;
    while (p->qlen && p->q[p->qhead].seq <= seq) {
        *next = p->q[p->qhead].next;
        got = 1;
        p->qhead = (p->qhead + 1) % p->qcap;
        p->qlen--;
    }
    return got;
}

uint64_t kpart_last_seq(const kpart *p)
{
    return p->qlen ? p->q[(p->qhead + p->qlen - 1) % p->qcap].seq : 0;
}

void kpart_forget(kpart *p)
{
    p->qhead = 0;
    p->qlen = 0;
}

int kpart_gap_verdict(const kpart *p, uint64_t boundary_ep, int64_t offset)
{
    if (p->next < 0 || offset <= p->next)
        return KP_GAP_NONE;
    if (p->seek_at == p->next && p->seek_ep > boundary_ep)
        return KP_GAP_CONFIRMED;
    return KP_GAP_SEEK;
}
