/*
 * test_kinesis_shards.c — the Kinesis shard tracker
 * (workers/sources/kinesis/kinesis_shards.h): position texts, parents
 * before children through a split and a merge, where a first start and a
 * restart begin, expired parents, expired iterators, pacing and backoff.
 */
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>

#include "workers/sources/kinesis/kinesis_shards.h"

static char err[256];

#define SEQ1 "49590338271490256608559692538361571095921575989136588898"
#define SEQ2 "49590338271490256608559692538361571095921575989136588999"

static zx_kin_shard shard(const char *id, const char *parent, const char *adjacent)
{
    zx_kin_shard s;
    memset(&s, 0, sizeof(s));
    s.shard_id = (char *)id;
    s.parent = (char *)parent;
    s.adjacent_parent = (char *)adjacent;
    return s;
}

static int pos_round_trip(const char *text)
{
    ks_pos p;
    char out[KS_POS_MAX];
    if (ks_pos_parse(text, strlen(text), &p) < 0)
        return 0;
    size_t n = ks_pos_format(&p, out);
    return n == strlen(text) && !strcmp(out, text);
}

static int pos_refused(const char *text)
{
    ks_pos p;
    return ks_pos_parse(text, strlen(text), &p) < 0;
}

static void test_positions(void)
{
    CHECK(pos_round_trip("after " SEQ1));
    CHECK(pos_round_trip("within " SEQ1 " 41"));
    CHECK(pos_round_trip("at 1764633600000"));
    CHECK(pos_round_trip("end"));
    CHECK(pos_round_trip("after 0"));
    CHECK(pos_refused(""));
    CHECK(pos_refused("after"));
    CHECK(pos_refused("after "));
    CHECK(pos_refused("after 01"));            /* not a sequence number */
    CHECK(pos_refused("after 12a"));
    CHECK(pos_refused("within " SEQ1));        /* no sub */
    CHECK(pos_refused("within " SEQ1 " "));
    CHECK(pos_refused("within " SEQ1 " 4294967295")); /* UINT32_MAX is "none" */
    CHECK(pos_refused("within " SEQ1 " 99999999999"));
    CHECK(pos_refused("at -5"));
    CHECK(pos_refused("at 12345678901234"));   /* 14 digits */
    CHECK(pos_refused("ends"));
    CHECK(pos_refused("end "));
    char big[400];
    memset(big, '9', sizeof(big));
    memcpy(big, "after ", 6);
    big[sizeof(big) - 1] = '\0';
    CHECK(pos_refused(big));
    ks_pos none = {0};
    char out[KS_POS_MAX];
    CHECK(ks_pos_format(&none, out) == 0 && out[0] == '\0');
}

/* A split of 0 into 1 and 2, then a merge of 1 and 2 into 3: each is read
 * only once its parents are finished. */
static void test_split_and_merge(void)
{
    ks_set s;
    ks_init(&s, KS_START_OLDEST, 0);
    zx_kin_shard l1[] = {shard("shardId-0", NULL, NULL), shard("shardId-1", "shardId-0", NULL),
                         shard("shardId-2", "shardId-0", NULL),
                         shard("shardId-3", "shardId-1", "shardId-2")};
    CHECK(ks_listing(&s, l1, 4, err, sizeof(err)) == 0);
    ks_shard *s0 = ks_find(&s, "shardId-0"), *s1 = ks_find(&s, "shardId-1"),
             *s2 = ks_find(&s, "shardId-2"), *s3 = ks_find(&s, "shardId-3");
    CHECK(s0 && s1 && s2 && s3);
    CHECK(s0->state == KS_NEEDS_ITERATOR);
    CHECK(s1->state == KS_WAITING && s2->state == KS_WAITING && s3->state == KS_WAITING);
    CHECK(s0->pos.kind == KS_NONE && !s0->dirty);     /* oldest: TRIM_HORIZON */
    const char *seq;
    int64_t at;
    CHECK(!strcmp(ks_iterator_type(s0, &seq, &at), "TRIM_HORIZON") && !seq && at == -1);

    int64_t wait = 0;
    CHECK(ks_next(&s, 1000, &wait) == s0);
    ks_got_iterator(s0, strdup("it0"));
    CHECK(s0->state == KS_READING);
    /* records, then the end of shard 0 */
    CHECK(ks_got_records(&s, s0, SEQ1, UINT32_MAX, strdup("it0b"), 5000, 1000) == 0);
    CHECK(s0->pos.kind == KS_AFTER && !strcmp(s0->pos.seq, SEQ1) && s0->dirty);
    CHECK(s0->behind_ms == 5000);
    /* paced: not due again before the gap */
    CHECK(ks_next(&s, 1000 + KS_CALL_GAP_MS - 1, &wait) == NULL && wait == 1);
    CHECK(ks_next(&s, 1000 + KS_CALL_GAP_MS, NULL) == s0);
    CHECK(ks_got_records(&s, s0, NULL, UINT32_MAX, NULL, 0, 1200) == 1);
    CHECK(s0->state == KS_FINISHED && s0->pos.kind == KS_END);
    char out[KS_POS_MAX];
    CHECK(ks_pos_format(&s0->pos, out) == 3 && !strcmp(out, "end"));
    /* both children readable now, the merge child still waits */
    CHECK(s1->state == KS_NEEDS_ITERATOR && s2->state == KS_NEEDS_ITERATOR);
    CHECK(s3->state == KS_WAITING);
    ks_got_iterator(s1, strdup("it1"));
    CHECK(ks_got_records(&s, s1, NULL, UINT32_MAX, NULL, 0, 2000) == 1);
    CHECK(s3->state == KS_WAITING);                      /* shard 2 not done */
    ks_got_iterator(s2, strdup("it2"));
    CHECK(ks_got_records(&s, s2, SEQ2, 3, NULL, 0, 2000) == 1);
    CHECK(s3->state == KS_NEEDS_ITERATOR);
    size_t counts[4];
    ks_counts(&s, counts);
    CHECK(counts[KS_FINISHED] == 3 && counts[KS_NEEDS_ITERATOR] == 1);
    ks_free(&s);
}

/* Stored positions: a restart resumes after them; a finished shard stays
 * finished; a parent gone from the listing (expired) holds nothing back. */
static void test_restart(void)
{
    ks_set s;
    ks_init(&s, KS_START_NEW, 1764633600000);
    ks_pos p;
    CHECK(ks_pos_parse("end", 3, &p) == 0);
    CHECK(ks_seed(&s, "shardId-0", &p) == 0);
    CHECK(ks_pos_parse("within " SEQ1 " 7", strlen("within " SEQ1 " 7"), &p) == 0);
    CHECK(ks_seed(&s, "shardId-1", &p) == 0);
    CHECK(ks_seed(&s, "not a shard", &p) == -2);
    zx_kin_shard l[] = {shard("shardId-1", "shardId-0", NULL),
                        shard("shardId-2", "shardId-0", NULL),
                        shard("shardId-4", "shardId-9", NULL)};  /* 9: expired */
    CHECK(ks_listing(&s, l, 3, err, sizeof(err)) == 0);
    ks_shard *s1 = ks_find(&s, "shardId-1"), *s2 = ks_find(&s, "shardId-2"),
             *s4 = ks_find(&s, "shardId-4");
    const char *seq;
    int64_t at;
    CHECK(s1->state == KS_NEEDS_ITERATOR);
    CHECK(!strcmp(ks_iterator_type(s1, &seq, &at), "AT_SEQUENCE_NUMBER") && seq &&
          !strcmp(seq, SEQ1) && s1->pos.sub == 7);
    /* not a first start: a shard without a position starts at the oldest
     * record, whatever `start` says */
    CHECK(s2->state == KS_NEEDS_ITERATOR && s2->pos.kind == KS_NONE);
    CHECK(!strcmp(ks_iterator_type(s2, &seq, &at), "TRIM_HORIZON"));
    CHECK(s4->state == KS_NEEDS_ITERATOR);
    /* an expired iterator: a new one from the position, never LATEST */
    ks_got_iterator(s1, strdup("x"));
    CHECK(ks_got_records(&s, s1, SEQ2, UINT32_MAX, strdup("y"), 0, 10) == 0);
    ks_iterator_expired(s1, 20);
    CHECK(s1->state == KS_NEEDS_ITERATOR && !s1->iterator);
    CHECK(!strcmp(ks_iterator_type(s1, &seq, &at), "AFTER_SEQUENCE_NUMBER") &&
          !strcmp(seq, SEQ2));
    /* the renewal keeps the call gap: no loop when every iterator expires */
    CHECK(s1->next_call_ms == 20 + KS_CALL_GAP_MS);
    /* expired again before a record: the same position, not a later one */
    ks_got_iterator(s1, strdup("z"));
    CHECK(s1->state == KS_READING);
    ks_iterator_expired(s1, 20 + KS_CALL_GAP_MS);
    CHECK(s1->state == KS_NEEDS_ITERATOR && s1->pos.kind == KS_AFTER &&
          !strcmp(s1->pos.seq, SEQ2));
    /* a shard expired before its first record: renewed where it started */
    ks_got_iterator(s2, strdup("w"));
    ks_iterator_expired(s2, 0);
    CHECK(s2->state == KS_NEEDS_ITERATOR &&
          !strcmp(ks_iterator_type(s2, &seq, &at), "TRIM_HORIZON") && !seq);
    ks_free(&s);
}

/* A first start with `start: new` (or at:): each shard found gets a time
 * position at once, to be stored; shards found later start at the oldest. */
static void test_first_start(void)
{
    ks_set s;
    ks_init(&s, KS_START_NEW, 1764633600000);
    zx_kin_shard l1[] = {shard("shardId-0", NULL, NULL), shard("shardId-1", NULL, NULL)};
    CHECK(ks_listing(&s, l1, 2, err, sizeof(err)) == 0);
    ks_shard *s0 = ks_find(&s, "shardId-0");
    const char *seq;
    int64_t at;
    CHECK(s0->pos.kind == KS_AT && s0->dirty);
    CHECK(!strcmp(ks_iterator_type(s0, &seq, &at), "AT_TIMESTAMP") && at == 1764633600000);
    zx_kin_shard l2[] = {shard("shardId-0", NULL, NULL), shard("shardId-1", NULL, NULL),
                         shard("shardId-2", "shardId-1", NULL)};
    CHECK(ks_listing(&s, l2, 3, err, sizeof(err)) == 0);
    ks_shard *s2 = ks_find(&s, "shardId-2");
    CHECK(s2->pos.kind == KS_NONE && !s2->dirty && s2->state == KS_WAITING);
    ks_free(&s);
}

static void test_backoff_and_round_robin(void)
{
    ks_set s;
    ks_init(&s, KS_START_OLDEST, 0);
    zx_kin_shard l[] = {shard("a", NULL, NULL), shard("b", NULL, NULL), shard("c", NULL, NULL)};
    CHECK(ks_listing(&s, l, 3, err, sizeof(err)) == 0);
    /* every due shard in turn */
    ks_shard *x = ks_next(&s, 0, NULL), *y = ks_next(&s, 0, NULL), *z = ks_next(&s, 0, NULL);
    CHECK(x && y && z && x != y && y != z && x != z);
    ks_shard *a = ks_find(&s, "a");
    uint32_t prev = 0;
    for (int i = 0; i < 10; i++) {
        ks_backoff(a, 1000, 0xffffffffu);
        CHECK(a->backoff_ms >= prev && a->backoff_ms <= KS_BACKOFF_MAX_MS);
        CHECK(a->next_call_ms >= 1000 + a->backoff_ms / 2 &&
              a->next_call_ms <= 1000 + a->backoff_ms);
        prev = a->backoff_ms;
    }
    CHECK(a->backoff_ms == KS_BACKOFF_MAX_MS);
    ks_got_iterator(a, strdup("i"));
    CHECK(ks_got_records(&s, a, NULL, UINT32_MAX, strdup("j"), 0, 5000) == 0);
    CHECK(a->backoff_ms == 0 && a->next_call_ms == 5000 + KS_CALL_GAP_MS);
    ks_free(&s);
}

static void test_too_many_shards(void)
{
    ks_set s;
    ks_init(&s, KS_START_OLDEST, 0);
    size_t n = KS_MAX_SHARDS + 1;
    zx_kin_shard *l = calloc(n, sizeof(*l));
    char (*ids)[24] = calloc(n, sizeof(*ids));
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof(ids[i]), "shardId-%zu", i);
        l[i].shard_id = ids[i];
    }
    CHECK(ks_listing(&s, l, n, err, sizeof(err)) == -1);
    CHECK(strstr(err, "more than 10000 shards") != NULL);
    free(l);
    free(ids);
    ks_free(&s);
}

int main(void)
{
    test_positions();
    test_split_and_merge();
    test_restart();
    test_first_start();
    test_backoff_and_round_robin();
    test_too_many_shards();
    if (!failures)
        printf("test_kinesis_shards: all checks passed\n");
    return failures != 0;
}
