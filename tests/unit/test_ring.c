/*
 * test_ring.c — single-process tests of common/ring: format/attach checks,
 * reserve/commit/next/release, wrap-around with varying sizes, back-pressure,
 * TOO_BIG, seq continuity across simulated producer and consumer restarts,
 * position independence, corruption detection.
 *
 * Some checks simulate a process killed between two stores by poking the
 * shared header at its documented offsets (line 1 = producer: tail at 64,
 * pub_seq at 72; line 2 = consumer: head at 128, acked_seq at 136,
 * freeing at 144).
 *
 * It must never: depend on timing.
 */
#include "common/ring.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

static int failures;
static int checks;

#define CHECK(cond) do { checks++; if (!(cond)) { failures++; \
    fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

#define OFF_TAIL 64
#define OFF_PUB 72
#define OFF_HEAD 128
#define OFF_ACKED 136
#define OFF_FREEING 144

static uint64_t *hfield(void *mem, size_t off) { return (uint64_t *)(void *)((uint8_t *)mem + off); }

static void *seg_new(uint64_t cap, size_t *size)
{
    *size = zx_ring_footprint(cap);
    void *m = aligned_alloc(64, *size);
    if (m == NULL) {
        perror("aligned_alloc");
        exit(2);
    }
    memset(m, 0xa5, *size);
    if (zx_ring_format(m, cap) != 0) {
        fprintf(stderr, "format failed\n");
        exit(2);
    }
    return m;
}

/* Payload byte i of the record with sequence number seq. */
static uint8_t pat(uint64_t seq, size_t i) { return (uint8_t)(seq * 131u + i * 7u + (i >> 8)); }

/* Produce one record of len bytes filled with pat(seq); returns seq or 0. */
static uint64_t put(zx_ring *r, size_t len)
{
    void *buf;
    if (zx_ring_reserve(r, len, &buf) != ZX_RING_OK)
        return 0;
    uint64_t seq = zx_ring_next_seq(r);
    for (size_t i = 0; i < len; i++)
        ((uint8_t *)buf)[i] = pat(seq, i);
    return zx_ring_commit(r, len, 0);
}

static int payload_ok(const void *data, size_t len, uint64_t seq)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++)
        if (p[i] != pat(seq, i))
            return 0;
    return 1;
}

static void test_format_attach(void)
{
    size_t size;
    zx_ring r;

    CHECK(zx_ring_footprint(10) == 0);
    CHECK(zx_ring_footprint(ZX_RING_MIN_CAPACITY) % 64 == 0);
    CHECK(zx_ring_footprint(1000) == 192 + 1024);
    CHECK(zx_ring_footprint(ZX_RING_MAX_CAPACITY + 1) == 0);
    CHECK(zx_ring_format(NULL, 4096) == -1);

    void *m = seg_new(1000, &size);
    CHECK(zx_ring_format((uint8_t *)m + 1, 1000) == -1);
    CHECK(zx_ring_format((uint8_t *)m + 8, 256) == -1);  /* not 64-aligned */
    CHECK(zx_ring_format(m, 8) == -1);
    CHECK(zx_ring_attach(&r, m, size) == ZX_RING_OK);
    CHECK(zx_ring_capacity(&r) == 1024);
    CHECK(zx_ring_max_record(&r) == 512 - 16);
    CHECK(r.peer_fd == -1);
    CHECK(zx_ring_published_seq(&r) == 0 && zx_ring_acked_seq(&r) == 0);
    CHECK(zx_ring_used_bytes(&r) == 0);
    CHECK(zx_ring_attach(&r, m, size - 1) == ZX_RING_BAD_SEGMENT);
    CHECK(zx_ring_attach(&r, m, 100) == ZX_RING_BAD_SEGMENT);
    CHECK(zx_ring_attach(&r, NULL, size) == ZX_RING_BAD_SEGMENT);
    CHECK(zx_ring_attach(&r, (uint8_t *)m + 4, size - 4) == ZX_RING_BAD_SEGMENT);
    CHECK(zx_ring_attach(&r, (uint8_t *)m + 8, size - 8) == ZX_RING_BAD_SEGMENT);

    ((uint8_t *)m)[0] ^= 0xff;  /* bad magic */
    CHECK(zx_ring_attach(&r, m, size) == ZX_RING_BAD_SEGMENT);
    ((uint8_t *)m)[0] ^= 0xff;
    CHECK(zx_ring_attach(&r, m, size) == ZX_RING_OK);
    ((uint8_t *)m)[8] ^= 0x40;  /* bad version */
    CHECK(zx_ring_attach(&r, m, size) == ZX_RING_BAD_SEGMENT);
    ((uint8_t *)m)[8] ^= 0x40;
    *hfield(m, 16) = 1000;      /* capacity not a multiple of 64 */
    CHECK(zx_ring_attach(&r, m, size) == ZX_RING_BAD_SEGMENT);
    *hfield(m, 16) = 1024;
    CHECK(zx_ring_attach(&r, m, size) == ZX_RING_OK);

    void *z = calloc(1, size);  /* never formatted */
    CHECK(z != NULL && zx_ring_attach(&r, z, size) == ZX_RING_BAD_SEGMENT);
    free(z);
    free(m);
}

static void test_basic(void)
{
    size_t size;
    zx_ring p, c;
    zx_ring_cursor cur;
    const void *data;
    size_t len;
    uint64_t seq;
    void *buf;
    void *m = seg_new(4096, &size);

    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_attach(&c, m, size) == ZX_RING_OK);
    zx_ring_cursor_init(&c, &cur);
    CHECK(cur.seq == 0);
    CHECK(zx_ring_next(&c, &cur, &data, &len, &seq) == ZX_RING_WOULD_BLOCK);

    CHECK(zx_ring_next_seq(&p) == 1);
    CHECK(put(&p, 5) == 1);
    CHECK(put(&p, 0) == 2);
    CHECK(put(&p, 100) == 3);
    CHECK(zx_ring_published_seq(&p) == 3);
    CHECK(zx_ring_used_bytes(&p) == 16 + 8 + 16 + 16 + 104);

    /* reserve, then cancel: nothing visible, seq not consumed */
    CHECK(zx_ring_reserve(&p, 50, &buf) == ZX_RING_OK);
    memset(buf, 0x11, 50);
    zx_ring_cancel(&p);
    CHECK(zx_ring_commit(&p, 10, 0) == 0);
    /* commit with more than reserved: refused */
    CHECK(zx_ring_reserve(&p, 10, &buf) == ZX_RING_OK);
    CHECK(zx_ring_commit(&p, 11, 0) == 0);
    /* commit fewer bytes than reserved */
    CHECK(zx_ring_reserve(&p, 300, &buf) == ZX_RING_OK);
    CHECK(((uintptr_t)buf & 7u) == 0);
    for (size_t i = 0; i < 20; i++)
        ((uint8_t *)buf)[i] = pat(4, i);
    CHECK(zx_ring_commit(&p, 20, 0) == 4);

    uint64_t want_len[] = { 5, 0, 100, 20 };
    for (uint64_t s = 1; s <= 4; s++) {
        CHECK(zx_ring_next(&c, &cur, &data, &len, &seq) == ZX_RING_OK);
        CHECK(seq == s && len == want_len[s - 1] && payload_ok(data, len, s));
        CHECK(((uintptr_t)data & 7u) == 0);
    }
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_WOULD_BLOCK);
    CHECK(zx_ring_acked_seq(&p) == 0);
    zx_ring_release(&c, &cur, 0);
    CHECK(zx_ring_acked_seq(&p) == 4);
    CHECK(zx_ring_used_bytes(&p) == 0);

    /* a stale cursor (before the head) is ignored by release */
    zx_ring_cursor old = { 0, 0 };
    zx_ring_release(&c, &old, 0);
    CHECK(zx_ring_acked_seq(&p) == 4 && zx_ring_used_bytes(&p) == 0);
    free(m);
}

static void test_full_and_too_big(void)
{
    size_t size;
    zx_ring p, c;
    zx_ring_cursor cur;
    void *buf;
    void *m = seg_new(1024, &size);

    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_attach(&c, m, size) == ZX_RING_OK);
    uint64_t max = zx_ring_max_record(&p);
    CHECK(zx_ring_reserve(&p, max + 1, &buf) == ZX_RING_TOO_BIG);
    CHECK(zx_ring_reserve(&p, (size_t)-1, &buf) == ZX_RING_TOO_BIG);

    /* fill with 96-byte records (112 bytes each): 9 fit in 1024 */
    int n = 0;
    while (put(&p, 96) != 0)
        n++;
    CHECK(n == 9);
    CHECK(zx_ring_used_bytes(&p) == 1008);
    CHECK(zx_ring_reserve(&p, 96, &buf) == ZX_RING_WOULD_BLOCK);
    CHECK(zx_ring_reserve(&p, 8, &buf) == ZX_RING_WOULD_BLOCK);
    CHECK(zx_ring_reserve(&p, 0, &buf) == ZX_RING_OK);  /* 16 bytes left */
    zx_ring_cancel(&p);

    /* free one record: space again */
    zx_ring_cursor_init(&c, &cur);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);
    zx_ring_release(&c, &cur, 0);
    CHECK(zx_ring_reserve(&p, 96, &buf) == ZX_RING_OK);
    zx_ring_cancel(&p);

    /* drain; then a max-size record fits at every tail position */
    while (zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK)
        ;
    zx_ring_release(&c, &cur, 0);
    for (int k = 0; k < 200; k++) {
        size_t l = (size_t)(k % 5) * 8;
        CHECK(put(&p, l) != 0);  /* move the tail by 16..48 bytes */
        CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);
        zx_ring_release(&c, &cur, 0);
        uint64_t s = put(&p, (size_t)max);
        CHECK(s != 0);
        const void *d;
        size_t len;
        uint64_t seq;
        CHECK(zx_ring_next(&c, &cur, &d, &len, &seq) == ZX_RING_OK);
        CHECK(seq == s && len == max && payload_ok(d, len, seq));
        zx_ring_release(&c, &cur, 0);
    }
    free(m);
}

/* Random sizes, producer pushes until full, consumer takes a random number:
 * exercises every wrap case (wrap marker, < 16 bytes left, exact fit). */
static void test_wrap_random(void)
{
    size_t size;
    zx_ring p, c;
    zx_ring_cursor cur;
    void *m = seg_new(1024, &size);
    uint64_t rnd = 88172645463325252ull;
    uint64_t produced = 0, consumed = 0, bad = 0;

    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_attach(&c, m, size) == ZX_RING_OK);
    zx_ring_cursor_init(&c, &cur);
    while (consumed < 200000) {
        for (;;) {
            rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17;
            size_t len = (size_t)(rnd % 200);
            if (rnd % 97 == 0)
                len = (size_t)zx_ring_max_record(&p);
            if (put(&p, len) == 0)
                break;
            produced++;
        }
        CHECK(zx_ring_used_bytes(&p) <= 1024);
        int take = (int)(rnd % 7) + 1;
        for (int i = 0; i < take; i++) {
            const void *d;
            size_t len;
            uint64_t seq;
            zx_ring_result rc = zx_ring_next(&c, &cur, &d, &len, &seq);
            if (rc == ZX_RING_WOULD_BLOCK)
                break;
            if (rc != ZX_RING_OK || seq != consumed + 1 || !payload_ok(d, len, seq))
                bad++;
            consumed++;
        }
        zx_ring_release(&c, &cur, (int)(rnd & 1));
        if (bad)
            break;
    }
    CHECK(bad == 0);
    CHECK(produced >= consumed);
    free(m);
}

/* A soft cap: records that fit under it stay under it (the data area past
 * it is never written: its pages are never touched), the ring's fill
 * counts no skipped bytes, records larger than the cap still go through
 * the whole ring, in order; a new producer without the cap and a new
 * consumer take over mid-stream. */
#define REC_HDR_T 16   /* a record's header (ring.c) */

static void test_soft_cap(void)
{
    size_t size;
    zx_ring p, c;
    zx_ring_cursor cur;
    const uint64_t cap = 4096, soft = 1024;
    void *m = seg_new(cap, &size);
    uint8_t *data = (uint8_t *)m + (size - cap);
    uint64_t rnd = 88172645463325252ull;
    uint64_t consumed = 0, bad = 0, big = 0, over = 0;

    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_attach(&c, m, size) == ZX_RING_OK);
    zx_ring_soft_cap(&p, soft + 5);              /* rounded down to 8 */
    CHECK(p.soft_cap == soft);
    zx_ring_cursor_init(&c, &cur);
    for (int phase = 0; phase < 3; phase++) {
        uint64_t until = consumed + 50000;
        while (consumed < until) {
            for (;;) {
                rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17;
                size_t len = (size_t)(rnd % 200);
                if (phase > 0 && rnd % 53 == 0)
                    len = (size_t)(soft + rnd % (zx_ring_max_record(&p) - soft));
                if (put(&p, len) == 0)
                    break;
                big += len > soft;
            }
            if (phase == 0 && zx_ring_used_bytes(&c) > soft + 16)
                over++;
            int take = (int)(rnd % 5) + 1;
            for (int i = 0; i < take; i++) {
                const void *d;
                size_t len;
                uint64_t seq;
                zx_ring_result rc = zx_ring_next(&c, &cur, &d, &len, &seq);
                if (rc == ZX_RING_WOULD_BLOCK)
                    break;
                if (rc != ZX_RING_OK || seq != consumed + 1 || !payload_ok(d, len, seq))
                    bad++;
                consumed++;
            }
            zx_ring_release(&c, &cur, 0);
            if (bad)
                break;
        }
        if (phase == 0) {
            /* past the cap (and a wrap marker's header at it) nothing
             * was ever written */
            size_t touched = 0;
            for (uint64_t i = soft + 16; i < cap; i++)
                touched += data[i] != 0xa5;
            CHECK(touched == 0);
            CHECK(over == 0);
        }
        if (phase == 1) {
            /* a new producer (no cap) and a new consumer mid-stream */
            CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
            CHECK(p.soft_cap == 0);
            CHECK(zx_ring_attach(&c, m, size) == ZX_RING_OK);
            zx_ring_cursor_init(&c, &cur);
            consumed = cur.seq;
        }
    }
    CHECK(bad == 0);
    CHECK(big > 0);
    /* a record under the cap but longer than what lies before the tail
     * cannot wrap (it would never find room, even in an empty ring): it
     * goes past the cap; records of every size up to the cap keep going */
    zx_ring_soft_cap(&p, soft);
    uint64_t stuck = 0, n = 0;
    for (int round = 0; round < 20000 && !stuck; round++) {
        rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17;
        size_t len = (size_t)(rnd % (soft - REC_HDR_T));
        if (put(&p, len) == 0) {
            const void *d;
            size_t dl;
            uint64_t seq;
            while (zx_ring_next(&c, &cur, &d, &dl, &seq) == ZX_RING_OK) {
                if (seq != consumed + 1 || !payload_ok(d, dl, seq))
                    bad++;
                consumed++;
            }
            zx_ring_release(&c, &cur, 0);
            if (put(&p, len) == 0)
                stuck++;          /* an empty ring refused it */
        }
        n++;
    }
    CHECK(stuck == 0 && bad == 0 && n == 20000);
    /* 0 and a cap at least the capacity: the whole ring */
    zx_ring_soft_cap(&p, 0);
    CHECK(p.soft_cap == 0);
    zx_ring_soft_cap(&p, cap);
    CHECK(p.soft_cap == 0);
    free(m);
}

/* Producer restarts: a new handle continues the seq; a producer killed after
 * reserve leaves nothing visible; killed between its tail and pub_seq stores
 * the next one still continues without a duplicate or a gap. */
static void test_restart(void)
{
    size_t size;
    zx_ring p, c;
    zx_ring_cursor cur;
    void *buf;
    const void *d;
    size_t len;
    uint64_t seq;
    void *m = seg_new(2048, &size);

    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_attach(&c, m, size) == ZX_RING_OK);
    zx_ring_cursor_init(&c, &cur);
    for (int i = 0; i < 5; i++)
        CHECK(put(&p, 40) == (uint64_t)i + 1);

    /* "killed" mid-write: reserve, scribble, never commit */
    CHECK(zx_ring_reserve(&p, 60, &buf) == ZX_RING_OK);
    memset(buf, 0xee, 60);
    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);  /* the replacement */
    CHECK(zx_ring_next_seq(&p) == 6);
    CHECK(put(&p, 33) == 6);

    /* "killed" between tail and pub_seq stores, record unreleased */
    *hfield(m, OFF_PUB) = 5;
    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_published_seq(&p) == 5);
    CHECK(put(&p, 10) == 7);
    CHECK(zx_ring_published_seq(&p) == 7);

    for (uint64_t s = 1; s <= 7; s++) {
        CHECK(zx_ring_next(&c, &cur, &d, &len, &seq) == ZX_RING_OK);
        CHECK(seq == s && payload_ok(d, len, seq));
    }
    CHECK(zx_ring_next(&c, &cur, &d, &len, &seq) == ZX_RING_WOULD_BLOCK);
    zx_ring_release(&c, &cur, 0);

    /* same, with every record already released: acked_seq tells the truth */
    *hfield(m, OFF_PUB) = 6;
    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_next_seq(&p) == 8);
    CHECK(put(&p, 10) == 8);
    CHECK(zx_ring_next(&c, &cur, &d, &len, &seq) == ZX_RING_OK && seq == 8);
    zx_ring_release(&c, &cur, 0);
    free(m);
}

/* Consumer restarts: re-reads exactly what was not released, also when the
 * predecessor died between its acked_seq and head stores. */
static void test_consumer_restart(void)
{
    size_t size;
    zx_ring p, c;
    zx_ring_cursor cur;
    const void *d;
    size_t len;
    uint64_t seq;
    void *m = seg_new(2048, &size);

    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_attach(&c, m, size) == ZX_RING_OK);
    for (int i = 0; i < 6; i++)
        CHECK(put(&p, 24) != 0);
    zx_ring_cursor_init(&c, &cur);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);
    zx_ring_release(&c, &cur, 0);               /* 1, 2 released */
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);  /* 3, 4 read */

    CHECK(zx_ring_attach(&c, m, size) == ZX_RING_OK);  /* consumer restarts */
    zx_ring_cursor_init(&c, &cur);
    CHECK(cur.seq == 2);
    CHECK(zx_ring_next(&c, &cur, &d, &len, &seq) == ZX_RING_OK);
    CHECK(seq == 3 && len == 24 && payload_ok(d, len, seq));

    /* died after storing acked_seq = 4 but before moving the head */
    *hfield(m, OFF_ACKED) = 4;
    zx_ring_cursor_init(&c, &cur);
    CHECK(cur.seq == 2);
    for (uint64_t s = 3; s <= 6; s++)
        CHECK(zx_ring_next(&c, &cur, &d, &len, &seq) == ZX_RING_OK && seq == s);
    zx_ring_release(&c, &cur, 0);
    CHECK(zx_ring_acked_seq(&c) == 6 && zx_ring_used_bytes(&c) == 0);

    /* empty ring: cursor starts at acked_seq */
    zx_ring_cursor_init(&c, &cur);
    CHECK(cur.seq == 6);
    CHECK(put(&p, 1) == 7);
    CHECK(zx_ring_next(&c, &cur, &d, &len, &seq) == ZX_RING_OK && seq == 7);
    free(m);
}

/* The ring holds only offsets: a copy at another address reads the same. */
static void test_position_independent(void)
{
    size_t size;
    zx_ring p, c;
    zx_ring_cursor cur;
    const void *d;
    size_t len;
    uint64_t seq;
    void *m = seg_new(1024, &size);

    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    for (int i = 0; i < 20; i++) {  /* wrap at least once */
        CHECK(put(&p, 30) != 0);
        zx_ring_attach(&c, m, size);
        zx_ring_cursor_init(&c, &cur);
        if (i < 17) {
            zx_ring_next(&c, &cur, NULL, NULL, NULL);
            zx_ring_release(&c, &cur, 0);
        }
    }
    void *m2 = aligned_alloc(64, size);
    CHECK(m2 != NULL);
    memcpy(m2, m, size);
    memset(m, 0, size);
    CHECK(zx_ring_attach(&c, m2, size) == ZX_RING_OK);
    zx_ring_cursor_init(&c, &cur);
    for (uint64_t s = 18; s <= 20; s++)
        CHECK(zx_ring_next(&c, &cur, &d, &len, &seq) == ZX_RING_OK && seq == s &&
              len == 30 && payload_ok(d, len, seq));
    CHECK(zx_ring_next(&c, &cur, &d, &len, &seq) == ZX_RING_WOULD_BLOCK);
    free(m2);
    free(m);
}

static void test_corrupt(void)
{
    size_t size;
    zx_ring p, c;
    zx_ring_cursor cur, saved;
    void *buf;
    void *m = seg_new(1024, &size);
    uint8_t *data = (uint8_t *)m + 192;

    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_attach(&c, m, size) == ZX_RING_OK);
    CHECK(put(&p, 40) == 1);
    CHECK(put(&p, 40) == 2);
    zx_ring_cursor_init(&c, &cur);
    saved = cur;

    /* bad tag */
    data[4] ^= 1;
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_CORRUPT);
    CHECK(cur.pos == saved.pos && cur.seq == saved.seq);
    data[4] ^= 1;
    /* impossible length */
    uint32_t l32;
    memcpy(&l32, data, 4);
    uint32_t huge = 0xffffff00u, big = 200;
    memcpy(data, &huge, 4);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_CORRUPT);
    memcpy(data, &big, 4);  /* plausible but past the tail */
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_CORRUPT);
    memcpy(data, &l32, 4);
    /* wrong seq */
    data[8] ^= 2;
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_CORRUPT);
    data[8] ^= 2;
    /* the whole header scribbled */
    uint8_t keep[16];
    memcpy(keep, data + 56, 16);
    memset(data + 56, 0x5a, 16);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_CORRUPT);
    memcpy(data + 56, keep, 16);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);
    CHECK(cur.seq == 2);

    /* impossible tail (more than the capacity ahead) and misaligned tail */
    uint64_t tail = *hfield(m, OFF_TAIL);
    *hfield(m, OFF_TAIL) = tail + 4096;
    zx_ring_cursor_init(&c, &cur);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_CORRUPT);
    CHECK(zx_ring_reserve(&p, 8, &buf) == ZX_RING_CORRUPT);
    *hfield(m, OFF_TAIL) = tail;
    /* impossible head seen by the producer */
    uint64_t head = *hfield(m, OFF_HEAD);
    *hfield(m, OFF_HEAD) = tail + 8;
    CHECK(zx_ring_reserve(&p, 8, &buf) == ZX_RING_CORRUPT);
    *hfield(m, OFF_HEAD) = head;
    CHECK(zx_ring_reserve(&p, 8, &buf) == ZX_RING_OK);
    zx_ring_cancel(&p);

    /* a new producer over a scribbled ring refuses to continue */
    data[0] = 0xff; data[1] = 0xff;
    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_next_seq(&p) == 0);
    CHECK(zx_ring_reserve(&p, 8, &buf) == ZX_RING_CORRUPT);

    /* fuzz: random bytes in the data area never crash the consumer */
    uint64_t rnd = 1234567;
    for (int round = 0; round < 2000; round++) {
        for (int i = 0; i < 1024; i++) {
            rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17;
            data[i] = (uint8_t)(rnd & 7 ? rnd : 0);
        }
        *hfield(m, OFF_TAIL) = head + (rnd % 130) * 8;
        zx_ring_cursor_init(&c, &cur);
        while (zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK)
            ;
    }
    free(m);
}

static void test_wake(void)
{
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    CHECK(efd >= 0);
    zx_ring_wake_fd(-1);
    zx_ring_drain_fd(-1);
    zx_ring_wake_fd(efd);
    zx_ring_wake_fd(efd);
    struct pollfd pf = { .fd = efd, .events = POLLIN, .revents = 0 };
    CHECK(poll(&pf, 1, 0) == 1);
    zx_ring_drain_fd(efd);
    CHECK(poll(&pf, 1, 0) == 0);
    close(efd);

    /* a blocking semaphore eventfd is drained without blocking */
    efd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
    CHECK(efd >= 0);
    for (int i = 0; i < 3; i++)
        zx_ring_wake_fd(efd);
    zx_ring_drain_fd(efd);
    CHECK(poll(&pf, 1, 0) == 0);

    /* commit and release wake their peer */
    size_t size;
    zx_ring p, c;
    zx_ring_cursor cur;
    void *m = seg_new(1024, &size);
    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK);
    CHECK(zx_ring_attach(&c, m, size) == ZX_RING_OK);
    int to_cons = eventfd(0, EFD_NONBLOCK), to_prod = eventfd(0, EFD_NONBLOCK);
    zx_ring_set_peer(&p, to_cons);
    zx_ring_set_peer(&c, to_prod);
    void *buf;
    CHECK(zx_ring_reserve(&p, 8, &buf) == ZX_RING_OK);
    memset(buf, 1, 8);
    CHECK(zx_ring_commit(&p, 8, 1) == 1);
    struct pollfd q = { .fd = to_cons, .events = POLLIN, .revents = 0 };
    CHECK(poll(&q, 1, 0) == 1);
    zx_ring_cursor_init(&c, &cur);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);
    zx_ring_release(&c, &cur, 1);
    q.fd = to_prod;
    CHECK(poll(&q, 1, 0) == 1);
    close(to_cons);
    close(to_prod);
    close(efd);
    free(m);
}

/* A consumer giving pages back killed between its rh_freeing store (the
 * pages gone: zeroes) and its head store: a new producer recovers the next
 * seq and a new consumer starts at the first record it had not released,
 * both without reading the zeroes. */
static void test_killed_giving_back(void)
{
    size_t size;
    void *m = seg_new(64 * 1024, &size);
    zx_ring p, c;
    zx_ring_cursor cur;
    CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK && zx_ring_attach(&c, m, size) == ZX_RING_OK);
    for (int i = 0; i < 3; i++)
        CHECK(put(&p, 8000) == (uint64_t)i + 1);
    zx_ring_cursor_init(&c, &cur);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);
    CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK && cur.seq == 2);
    /* what zx_ring_release did before dying: acked_seq, rh_freeing, pages */
    *hfield(m, OFF_ACKED) = 2;
    *hfield(m, OFF_FREEING) = cur.pos;
    memset((uint8_t *)m + 192, 0, cur.pos);
    CHECK(*hfield(m, OFF_HEAD) == 0);

    zx_ring p2, c2;
    zx_ring_cursor cur2;
    const void *d;
    size_t len;
    uint64_t seq;
    CHECK(zx_ring_attach(&p2, m, size) == ZX_RING_OK && zx_ring_attach(&c2, m, size) == ZX_RING_OK);
    CHECK(zx_ring_next_seq(&p2) == 4);
    zx_ring_cursor_init(&c2, &cur2);
    CHECK(cur2.seq == 2);
    CHECK(zx_ring_next(&c2, &cur2, &d, &len, &seq) == ZX_RING_OK && seq == 3 && len == 8000 &&
          payload_ok(d, len, 3));
    zx_ring_release(&c2, &cur2, 0);
    CHECK(zx_ring_acked_seq(&p2) == 3 && zx_ring_used_bytes(&p2) == 0);
    /* a stale rh_freeing (below the head) is ignored */
    CHECK(put(&p2, 100) == 4);
    zx_ring c3;
    zx_ring_cursor cur3;
    CHECK(zx_ring_attach(&c3, m, size) == ZX_RING_OK);
    zx_ring_cursor_init(&c3, &cur3);
    CHECK(zx_ring_next(&c3, &cur3, &d, &len, &seq) == ZX_RING_OK && seq == 4 && payload_ok(d, len, 4));
    free(m);
}

/* Resident pages of [p, p + n) (mincore). */
static size_t resident(const void *p, size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1);
    size_t len = (uintptr_t)p + n - a, np = (len + (size_t)pg - 1) / (size_t)pg, k = 0;
    unsigned char *v = malloc(np);
    if (!v || mincore((void *)a, len, v) != 0) {
        free(v);
        return (size_t)-1;
    }
    for (size_t i = 0; i < np; i++)
        k += v[i] & 1;
    free(v);
    return k;
}

/* A consumer that gives released pages back (a memfd ring, as zx_segment
 * makes): after 3 laps of a 4 MiB ring in records of ~60 KB, each released
 * at once, with everything released, only the pages records shared stay
 * resident (one in 15) and every record reads intact; without give-back all
 * of them are resident.  Memory that is not shared file memory turns it
 * off. */
static void test_give_back(void)
{
    const uint64_t cap = 4u << 20;
    size_t size = zx_ring_footprint(cap);
    long pg = sysconf(_SC_PAGESIZE);
    size_t msize = (size + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
    for (int on = 0; on <= 1; on++) {
        int fd = memfd_create("zx-test-ring", MFD_CLOEXEC);
        CHECK(fd >= 0 && ftruncate(fd, (off_t)msize) == 0);
        void *m = mmap(NULL, msize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(m != MAP_FAILED);
        if (fd < 0 || m == MAP_FAILED)
            return;
        CHECK(zx_ring_format(m, cap) == 0);
        zx_ring p, c;
        zx_ring_cursor cur;
        CHECK(zx_ring_attach(&p, m, size) == ZX_RING_OK && zx_ring_attach(&c, m, size) == ZX_RING_OK);
        zx_ring_give_back(&c, on ? UINT64_MAX : 0);
        zx_ring_cursor_init(&c, &cur);
        int ok = 1;
        for (uint64_t sent = 0; sent < 3 * cap;) {
            size_t len = 60000 + (size_t)(sent % 7) * 1000;
            if (!put(&p, len)) {
                ok = 0;
                break;
            }
            sent += len;
            const void *d;
            size_t l;
            uint64_t seq;
            if (zx_ring_next(&c, &cur, &d, &l, &seq) != ZX_RING_OK || !payload_ok(d, l, seq))
                ok = 0;
            zx_ring_release(&c, &cur, 0);
        }
        CHECK(ok);
        size_t res = resident((uint8_t *)m + 192, cap), all = cap / (size_t)pg;
        if (on)
            CHECK(res != (size_t)-1 && res * 8 < all);
        else
            CHECK(res * 8 > all * 7);
        munmap(m, msize);
        close(fd);
    }
    /* private memory: the kernel refuses, the ring turns it off and works */
    size_t sz;
    void *m = seg_new(1u << 20, &sz);
    zx_ring p, c;
    zx_ring_cursor cur;
    CHECK(zx_ring_attach(&p, m, sz) == ZX_RING_OK && zx_ring_attach(&c, m, sz) == ZX_RING_OK);
    zx_ring_give_back(&c, UINT64_MAX);
    zx_ring_cursor_init(&c, &cur);
    for (int i = 0; i < 64; i++) {
        CHECK(put(&p, 100000) != 0);
        CHECK(zx_ring_next(&c, &cur, NULL, NULL, NULL) == ZX_RING_OK);
        zx_ring_release(&c, &cur, 0);
    }
    CHECK(c.give_back == 0 && zx_ring_acked_seq(&p) == 64);
    free(m);
}

int main(void)
{
    test_format_attach();
    test_basic();
    test_full_and_too_big();
    test_wrap_random();
    test_soft_cap();
    test_restart();
    test_consumer_restart();
    test_position_independent();
    test_corrupt();
    test_wake();
    test_give_back();
    test_killed_giving_back();
    printf("ring: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
