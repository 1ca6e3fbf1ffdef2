/*
 * fuzz_kinesis_kpl.c — fuzz target for the KPL de-aggregator
 * (workers/sources/kinesis/kinesis_kpl.h): a Kinesis record's data from
 * outside, aggregated or not.
 *
 * Input: byte 0 bit 0: the rest is a protobuf body, wrapped here in the
 * magic bytes and its right MD5 (so that the fuzzer reaches the protobuf
 * reader, which a random MD5 hides); bit 1: the same with the MD5 wrong
 * (must then be a plain record).  Bit 0 and 1 clear: the rest is the
 * record's data as is.
 *
 * Checks: zx_kpl_open answers 1, 0 or -1 (-1 with a reason that starts
 * "malformed KPL aggregated record: " or names libcrypto, and nothing to
 * iterate); plain gives exactly the input, once, with its own partition
 * key; aggregated gives exactly nrecords user records, numbered 0, 1, ...,
 * every pointer inside the input; a bad MD5 is plain; the user records,
 * aggregated again here (one table entry per record), de-aggregate to the
 * same records.  Leaks by ASan (libFuzzer build).
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/kinesis_kpl/ (tests/fuzz/make_kinesis_seeds.py).  Must never be
 * linked into zx.
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/sources/kinesis/kinesis_kpl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RECS 4096

static const char outer_pk[] = "outer-key";

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static void w_bytes(wbuf *b, const void *p, size_t n)
{
    if (b->cap - b->n < n) {
        size_t cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, cap);
        fuzz_check(b->p != NULL, "out of memory");
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void w_varint(wbuf *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (uint8_t)v;
    w_bytes(b, t, n);
}

static void w_len(wbuf *b, uint32_t num, const void *p, size_t n)
{
    w_varint(b, (uint64_t)num << 3 | 2);
    w_varint(b, n);
    w_bytes(b, p, n);
}

/* magic + pb + MD5 (flipped when bad). */
static void wrap(wbuf *out, const uint8_t *pb, size_t n, int bad)
{
    static const uint8_t magic[4] = {0xF3, 0x89, 0x9A, 0xC2};
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    fuzz_check(EVP_Digest(pb, n, md, &ml, EVP_md5(), NULL) == 1 && ml == 16, "MD5");
    if (bad)
        md[0] ^= 0x80;
    w_bytes(out, magic, 4);
    w_bytes(out, pb, n);
    w_bytes(out, md, 16);
}

/* Opens in[0..n) and checks it; the user records into recs (up to
 * MAX_RECS).  Returns what zx_kpl_open answered; *count the records. */
static int check_one(const uint8_t *in, size_t n, zx_kpl_rec *recs, size_t *count)
{
    zx_kpl k;
    zx_kpl_rec r;
    char err[300];
    int rc = zx_kpl_open(&k, in, n, outer_pk, sizeof(outer_pk) - 1, err, sizeof(err));
    fuzz_check(rc == 1 || rc == 0 || rc == -1, "open: not 1, 0 or -1");
    size_t got = 0;
    if (rc == -1) {
        fuzz_check(strncmp(err, "malformed KPL aggregated record: ", 33) == 0 ||
                   strstr(err, "libcrypto") || strstr(err, "out of memory"),
                   "-1 without a reason");
        fuzz_check(zx_kpl_next(&k, &r) == 0, "records after -1");
    } else if (rc == 0) {
        fuzz_check(zx_kpl_next(&k, &r) == 1, "a plain record gives nothing");
        fuzz_check(r.data == in && r.len == n && r.sub_seq == 0 &&
                   r.partition_key == outer_pk && r.pk_len == sizeof(outer_pk) - 1 &&
                   r.explicit_hash_key == NULL, "a plain record is not the input");
        recs[got++] = r;
        fuzz_check(zx_kpl_next(&k, &r) == 0, "a plain record gives two");
    } else {
        fuzz_check(zx_kpl_has_magic(in, n) && n > 20, "aggregated without the magic");
        while (zx_kpl_next(&k, &r) == 1) {
            fuzz_check(r.sub_seq == got, "sub-sequence numbers out of order");
            fuzz_check(r.len == 0 || (r.data >= in + 4 && r.data + r.len <= in + n - 16),
                       "data outside the protobuf");
            fuzz_check(r.pk_len == 0 || ((const uint8_t *)r.partition_key >= in + 4 &&
                                         (const uint8_t *)r.partition_key + r.pk_len <=
                                             in + n - 16), "partition key outside");
            fuzz_check(r.explicit_hash_key == NULL || r.ehk_len == 0 ||
                       ((const uint8_t *)r.explicit_hash_key >= in + 4 &&
                        (const uint8_t *)r.explicit_hash_key + r.ehk_len <= in + n - 16),
                       "explicit hash key outside");
            if (got < MAX_RECS)
                recs[got] = r;
            got++;
        }
        fuzz_check(got == k.nrecords, "nrecords is not the count given");
    }
    zx_kpl_free(&k);
    *count = got;
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static zx_kpl_rec recs[MAX_RECS], again[MAX_RECS];
    if (size < 1)
        return 0;
    uint8_t f = data[0];
    const uint8_t *body = data + 1;
    size_t blen = size - 1;
    wbuf in = {0};
    if (f & 3)
        wrap(&in, body, blen, !(f & 1));
    else
        w_bytes(&in, body, blen);
    size_t n = 0;
    int rc = check_one(in.p ? in.p : (const uint8_t *)"", in.n, recs, &n);
    if ((f & 3) == 2 || ((f & 3) == 1 && blen == 0))
        fuzz_check(rc == 0, "a wrong MD5 or an empty protobuf is not plain");

    if (rc == 1 && n <= MAX_RECS) {
        /* aggregate the user records again and compare */
        wbuf pb = {0}, out = {0};
        for (size_t i = 0; i < n; i++)
            w_len(&pb, 1, recs[i].partition_key, recs[i].pk_len);
        for (size_t i = 0; i < n; i++) {
            wbuf r = {0};
            w_varint(&r, 1 << 3);
            w_varint(&r, i);
            w_len(&r, 3, recs[i].data, recs[i].len);
            w_len(&pb, 3, r.p, r.n);
            free(r.p);
        }
        wrap(&out, pb.p ? pb.p : (const uint8_t *)"", pb.n, 0);
        size_t m = 0;
        int rc2 = check_one(out.p, out.n, again, &m);
        if (pb.n == 0) {
            fuzz_check(rc2 == 0 && n == 0, "an empty aggregate again");
        } else {
            fuzz_check(rc2 == 1 && m == n, "aggregated again: another count");
            for (size_t i = 0; i < n; i++)
                fuzz_check(again[i].len == recs[i].len && again[i].pk_len == recs[i].pk_len &&
                           (recs[i].len == 0 ||
                            memcmp(again[i].data, recs[i].data, recs[i].len) == 0) &&
                           (recs[i].pk_len == 0 || memcmp(again[i].partition_key,
                                                          recs[i].partition_key,
                                                          recs[i].pk_len) == 0),
                           "aggregated again: another record");
        }
        free(pb.p);
        free(out.p);
    }
    free(in.p);
    return 0;
}
