/*
 * test_kafka_parts.c — the partitions a Kafka stream reads and the frames
 * in flight per partition (workers/sources/kafka/kafka_parts.c): which offset a
 * partition may commit once the writer acknowledged frames up to a seq.
 * No broker, no timing.
 */
#include <stdio.h>
#include <string.h>

#include "workers/sources/kafka/kafka_int.h"

#include "tests/unit/check.h"

static void test_table(void)
{
    kparts t = {0};
    CHECK(kparts_find(&t, "a", 0) == -1);
    int64_t a0 = kparts_add(&t, "a", 0);
    int64_t b0 = kparts_add(&t, "b", 0);
    int64_t a1 = kparts_add(&t, "a", 1);
    CHECK(a0 == 0 && b0 == 1 && a1 == 2);
    CHECK(kparts_add(&t, "a", 1) == a1);
    CHECK(kparts_find(&t, "b", 0) == b0 && kparts_find(&t, "b", 1) == -1);
    CHECK(strcmp(t.v[a1].name, "a:1") == 0 && strcmp(t.v[a1].topic, "a") == 0);
    CHECK(t.v[a1].next == -1 && t.v[a1].acked == -1 && t.v[a1].committed == -1 &&
          !t.v[a1].assigned);
    /* many partitions: indices stay valid as the array grows */
    char name[16];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "t%d", i);
        CHECK(kparts_add(&t, name, i) == 3 + i);
    }
    CHECK(kparts_find(&t, "t299", 299) == 302 && strcmp(t.v[a1].name, "a:1") == 0);
    kparts_free(&t);
    CHECK(t.n == 0 && t.v == NULL);
}

static void test_flights(void)
{
    kparts t = {0};
    int64_t i = kparts_add(&t, "t", 0);
    kpart *p = &t.v[i];
    int64_t next = -1;
    CHECK(kpart_last_seq(p) == 0);
    CHECK(kpart_ack(p, 100, &next) == 0 && next == -1);
    CHECK(kpart_push(p, 3, 10) == 0);
    CHECK(kpart_push(p, 5, 20) == 0);
    CHECK(kpart_push(p, 9, 30) == 0);
    CHECK(kpart_last_seq(p) == 9);
    /* an ack below every frame commits nothing */
    CHECK(kpart_ack(p, 2, &next) == 0);
    /* frames 3 and 5 committed: the newest position they carried */
    CHECK(kpart_ack(p, 8, &next) == 1 && next == 20);
    CHECK(kpart_ack(p, 8, &next) == 0);
    CHECK(kpart_last_seq(p) == 9);
    CHECK(kpart_ack(p, 9, &next) == 1 && next == 30);
    CHECK(kpart_last_seq(p) == 0 && p->qlen == 0);
    /* the ring wraps and grows, keeping order */
    for (uint64_t s = 10; s < 50; s++)
        CHECK(kpart_push(p, s, (int64_t)s * 2) == 0);
    CHECK(kpart_ack(p, 12, &next) == 1 && next == 24);
    for (uint64_t s = 50; s < 200; s++)
        CHECK(kpart_push(p, s, (int64_t)s * 2) == 0);
    CHECK(kpart_last_seq(p) == 199);
    CHECK(kpart_ack(p, 150, &next) == 1 && next == 300);
    CHECK(p->qlen == 49);
    /* a revoke forgets what is in flight */
    kpart_forget(p);
    CHECK(kpart_last_seq(p) == 0 && kpart_ack(p, 1000, &next) == 0);
    CHECK(kpart_push(p, 300, 7) == 0 && kpart_ack(p, 300, &next) == 1 && next == 7);
    kparts_free(&t);
}

/* A gap is the topic's own only when a seek to exactly the expected
 * offset answered it with no rebalance or resume in between: seen in CI,
 * librdkafka 2.0 skipping again after a pause that came between a seek
 * and its first message, and the once-per-position rule then taking the
 * skip as real. */
static void test_gap_verdict(void)
{
    kparts t = {0};
    int64_t i = kparts_add(&t, "a", 0);
    CHECK(i == 0);
    kpart *p = &t.v[i];
    CHECK(kpart_gap_verdict(p, 0, 500) == KP_GAP_NONE);      /* nothing expected */
    p->next = 100;
    CHECK(kpart_gap_verdict(p, 0, 100) == KP_GAP_NONE);
    CHECK(kpart_gap_verdict(p, 0, 40) == KP_GAP_NONE);       /* below: not a gap */
    CHECK(kpart_gap_verdict(p, 0, 101) == KP_GAP_SEEK);      /* never seeked */
    /* a seek to 100 made at epoch 7, the last rebalance at 6 */
    p->seek_at = 100;
    p->seek_ep = 7;
    CHECK(kpart_gap_verdict(p, 6, 101) == KP_GAP_CONFIRMED);
    /* a resume (epoch 8) came after the seek: it proves nothing */
    CHECK(kpart_gap_verdict(p, 8, 101) == KP_GAP_SEEK);
    /* a seek elsewhere does not confirm a gap at 100 */
    p->seek_at = 90;
    CHECK(kpart_gap_verdict(p, 6, 101) == KP_GAP_SEEK);
    kparts_free(&t);
}

int main(void)
{
    test_table();
    test_flights();
    test_gap_verdict();
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures != 0;
}
