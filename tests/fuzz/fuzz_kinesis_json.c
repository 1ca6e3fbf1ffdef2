/*
 * fuzz_kinesis_json.c — fuzz target for the Kinesis API's JSON responses
 * (workers/sources/kinesis/kinesis_json.h): a body from the network.
 *
 * Input: byte 0 (mod 4) picks the parser (GetRecords, GetShardIterator,
 * ListShards, DescribeStreamSummary); the rest is the body, given to it
 * and to zx_kin_parse_error.
 *
 * Checks: every parser answers 0 or -1 with a reason; on 0 what it gives
 * keeps the header's promises: sequence numbers valid and ordered against
 * themselves, shard ids valid, partition keys NUL-ended at their length,
 * iterators non-empty, counts >= -1, a status of capital letters; the
 * error's type holds only [A-Za-z0-9_.] and fits.  Leaks by ASan
 * (libFuzzer build).
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/kinesis_json/ (tests/fuzz/make_kinesis_seeds.py).  Must never be
 * linked into zx.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/sources/kinesis/kinesis_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_seq(const char *s)
{
    fuzz_check(s && zx_kin_seq_valid(s, strlen(s)), "an invalid sequence number given");
    fuzz_check(zx_kin_seq_cmp(s, s) == 0, "a sequence number unequal to itself");
}

static void check_id(const char *s)
{
    fuzz_check(s && zx_kin_shard_id_valid(s, strlen(s)), "an invalid shard id given");
}

static void check_err(int rc, const char *err)
{
    fuzz_check(rc == 0 || (rc == -1 && err[0]), "not 0, or -1 without a reason");
}

static void get_records(const char *b, size_t n)
{
    zx_kin_get_records r;
    char err[300] = "";
    int rc = zx_kin_parse_get_records(b, n, &r, err, sizeof(err));
    check_err(rc, err);
    if (rc == 0) {
        for (size_t i = 0; i < r.nrecords; i++) {
            const zx_kin_record *x = &r.records[i];
            check_seq(x->seq);
            if (i)
                fuzz_check(zx_kin_seq_cmp(r.records[i - 1].seq, x->seq) ==
                           -zx_kin_seq_cmp(x->seq, r.records[i - 1].seq), "cmp not symmetric");
            fuzz_check(x->partition_key && x->partition_key[x->pk_len] == 0 &&
                       strlen(x->partition_key) <= x->pk_len, "partition key length");
            fuzz_check(x->data && x->data[x->len] == 0, "data not NUL-ended");
            fuzz_check(x->arrival_us >= -1, "arrival");
        }
        fuzz_check(!r.next_iterator || r.next_iterator[0], "an empty iterator");
        fuzz_check(r.millis_behind >= -1, "millis behind");
        for (size_t i = 0; i < r.nchildren; i++) {
            check_id(r.children[i].shard_id);
            fuzz_check(r.children[i].nparents <= 2, "more than 2 parents");
            for (size_t j = 0; j < r.children[i].nparents; j++)
                check_id(r.children[i].parents[j]);
            fuzz_check(!r.children[i].start_hash == !r.children[i].end_hash, "half a range");
        }
    } else {
        fuzz_check(r.records == NULL && r.arena == NULL, "-1 left something to free");
    }
    zx_kin_get_records_free(&r);
}

static void list_shards(const char *b, size_t n)
{
    zx_kin_shard_list l;
    char err[300] = "";
    int rc = zx_kin_parse_list_shards(b, n, &l, err, sizeof(err));
    check_err(rc, err);
    for (size_t i = 0; rc == 0 && i < l.nshards; i++) {
        const zx_kin_shard *s = &l.shards[i];
        check_id(s->shard_id);
        if (s->parent)
            check_id(s->parent);
        if (s->adjacent_parent)
            check_id(s->adjacent_parent);
        check_seq(s->start_seq);
        if (s->end_seq)
            check_seq(s->end_seq);
    }
    fuzz_check(!l.next_token || l.next_token[0], "an empty token");
    zx_kin_shard_list_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *b = (const char *)data + 1;
    size_t n = size - 1;
    char err[300] = "";
    switch (data[0] & 3) {
    case 0:
        get_records(b, n);
        break;
    case 1: {
        char *it = NULL;
        int rc = zx_kin_parse_shard_iterator(b, n, &it, err, sizeof(err));
        check_err(rc, err);
        fuzz_check((rc == 0) == (it != NULL), "iterator and answer disagree");
        fuzz_check(!it || (it[0] && strlen(it) <= ZX_KIN_ITERATOR_MAX), "iterator length");
        free(it);
        break;
    }
    case 2:
        list_shards(b, n);
        break;
    default: {
        zx_kin_stream_summary s;
        int rc = zx_kin_parse_stream_summary(b, n, &s, err, sizeof(err));
        check_err(rc, err);
        if (rc == 0) {
            fuzz_check(s.status[0] != 0, "no status");
            for (const char *p = s.status; *p; p++)
                fuzz_check((*p >= 'A' && *p <= 'Z') || *p == '_', "status characters");
        }
        fuzz_check(s.open_shards >= -1 && s.retention_hours >= -1, "counts");
        zx_kin_stream_summary_free(&s);
        break;
    }
    }
    zx_kin_error e;
    int erc = zx_kin_parse_error(b, n, &e);
    fuzz_check(erc == 0 || (erc == -1 && !e.type[0] && !e.message[0]), "error: -1 with text");
    fuzz_check(strlen(e.type) < sizeof(e.type) && strlen(e.message) < sizeof(e.message),
               "error fields not NUL-ended");
    for (const char *p = e.type; *p; p++)
        fuzz_check((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                   (*p >= '0' && *p <= '9') || *p == '_' || *p == '.', "error type characters");
    for (const char *p = e.message; *p; p++)
        fuzz_check((unsigned char)*p >= 0x20 && *p != 0x7f, "a control character in message");
    return 0;
}
