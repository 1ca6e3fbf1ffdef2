/*
 * test_kinesis_batch.c — Kinesis records into one frame (workers/sources/
 * kinesis/kinesis_batch.c): kn_estimate bounds the encoded frame when the
 * metadata strings of one record (shard, sequence, partition key, arrival)
 * are the values of every row its JSON array gives, and with rejects; a
 * record that does not fit (KN_FULL) leaves the batch and its estimate as
 * they were; a record alone over the limit becomes one "record too large"
 * reject.  The frame is encoded with proto/frame.h.  No AWS, no timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rowset.h"
#include "conf/config.h"
#include "proto/frame.h"
#include "workers/sources/kinesis/kinesis_int.h"

#include "tests/unit/batch_testlib.h"
#include "tests/unit/check.h"

#define BIG ((size_t)1 << 30)
#define ALL_META (ZX_META_SHARD | ZX_META_SEQUENCE | ZX_META_PARTITION_KEY | ZX_META_ARRIVAL)

static kn_rec rec(const char *seq, const char *pk, const char *data)
{
    kn_rec r = {.shard = "shardId-000000000001", .seq = seq, .sub = UINT32_MAX,
                .data = data, .len = strlen(data), .pk = pk, .pk_len = pk ? strlen(pk) : 0,
                .arrival_us = 1764518400123456LL};
    return r;
}

static size_t encoded(kn_batch *b)
{
    zx_frame_meta m = {0};
    m.kind = ZX_FRAME_ROWS;
    m.pipeline = "p";
    m.table = "t";
    m.positions = b->pos;
    m.npositions = b->npos;
    m.rejects = b->rej;
    m.nrejects = b->nrej;
    m.accepted = b->nrecords;
    m.metadata = ALL_META;
    m.ingested_at_us = 1;
    zx_buf fb;
    zx_buf_init(&fb);
    CHECK(zx_frame_encode(&m, &b->rs, &fb) == 0);
    size_t n = fb.len;
    zx_buf_free(&fb);
    return n;
}

static void test_estimate(void)
{
    enum { PK = 8192, ROWS = 200 };
    char *pk = malloc(PK + 1), *arr = json_rows_array(ROWS);
    memset(pk, 'p', PK);
    pk[PK] = 0;

    kn_batch b;
    kn_init(&b, ALL_META);
    kn_rec r = rec("49590338271490256608559692538361571095921575989136588898", pk, arr);
    CHECK(kn_add(&b, &r, BIG) == KN_ADDED);
    CHECK(b.rs.nrows == ROWS);
    CHECK(kn_set_position(&b, "s/shardId-000000000001", r.seq) == 0);
    kn_rec bad = rec("49590338271490256608559692538361571095921575989136588899", pk, "{nope");
    CHECK(kn_add(&b, &bad, BIG) == KN_ADDED);
    CHECK(b.nrej == 1);
    size_t len = encoded(&b);
    CHECK(len > (size_t)ROWS * PK);
    CHECK(len <= kn_estimate(&b));

    /* the same record again does not fit: nothing changes */
    size_t est = kn_estimate(&b), cells = b.rs.ncells, nrej = b.nrej;
    kn_rec again = rec("49590338271490256608559692538361571095921575989136588900", pk, arr);
    CHECK(kn_add(&b, &again, est + 4096) == KN_FULL);
    CHECK(kn_estimate(&b) == est && b.rs.ncells == cells && b.nrej == nrej);
    size_t str, names;
    rowset_recount(&b.rs, &str, &names);
    CHECK(b.rs.str_bytes == str && b.rs.name_bytes == names);
    CHECK(str >= (size_t)ROWS * PK);

    /* alone and over the limit: one reject, no rows */
    kn_reset(&b);
    CHECK(kn_add(&b, &again, (size_t)ROWS * PK / 2) == KN_ADDED);
    CHECK(b.rs.nrows == 0 && b.nrej == 1 && strstr(b.rej[0].reason, "record too large"));
    CHECK(encoded(&b) <= kn_estimate(&b));
    kn_free(&b);
    free(pk);
    free(arr);
}

int main(void)
{
    test_estimate();
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures != 0;
}
