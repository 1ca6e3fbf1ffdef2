/*
 * ring.c — SPSC shared-memory ring of variable-length records (see ring.h).
 *
 * Positions (head, tail, cursor pos) are monotonic 64-bit byte counts; the
 * offset in the data area is pos % capacity.  Only offsets live in shared
 * memory, so the ring works at any mapping address.
 *
 * It must never: dereference anything read from shared memory without a
 * bounds check, write the data area from the consumer side, write the
 * consumer's fields from the producer side (or the reverse), lock, sleep or
 * allocate.
 */
#include "common/ring.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define RING_MAGIC    UINT64_C(0x7a78726e67686472)  /* "zxrnghdr" */
#define RING_LINE     64u
#define REC_HDR       16u                            /* sizeof(struct ring_rec) */
#define REC_TAG       UINT32_C(0x5a585243)           /* "ZXRC": a record */
#define REC_TAG_WRAP  UINT32_C(0x5a585257)           /* "ZXRW": skip to offset 0 */
#define REC_MAX_LEN   UINT64_C(0xfffffff0)           /* rr_len is 32 bits */

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2,
               "64-bit atomics must be lock-free to work across processes");

/*
 * The shared header.  Line 0 is written once by zx_ring_format before any
 * process attaches and is read-only afterwards.  Line 1 is written only by the
 * producer, line 2 only by the consumer; each is on its own cache line so the
 * two sides do not false-share.
 */
struct zx_ring_hdr {
    /* --- line 0: constant after zx_ring_format (plain fields) --- */
    uint64_t rh_magic;        /* RING_MAGIC; written last by format */
    uint32_t rh_version;      /* ZX_RING_VERSION */
    uint32_t rh_hdr_size;     /* sizeof(struct zx_ring_hdr): data starts here */
    uint64_t rh_capacity;     /* data bytes, multiple of 64 */
    uint8_t rh_pad0[RING_LINE - 24];

    /* --- line 1: producer-written --- */
    /* Byte position after the last published record.  Producer: release
     * store after the record bytes and header are written.  Consumer: acquire
     * load before reading records. */
    _Alignas(RING_LINE) _Atomic uint64_t rh_tail;
    /* Seq of the last published record.  Producer: release store right after
     * rh_tail (so it may lag by one if the producer dies in between; a new
     * producer repairs it from the records).  Readers: acquire load; used for
     * status only, the consumer takes seqs from the record headers. */
    _Atomic uint64_t rh_pub_seq;
    /* The last wrap marker: its position and the bytes it skips.  Producer:
     * relaxed stores before the tail's release store.  Readers: for
     * zx_ring_used_bytes only (a snapshot, never trusted for a bound). */
    _Atomic uint64_t rh_wrap_pos;
    _Atomic uint64_t rh_wrap_skip;
    uint8_t rh_pad1[RING_LINE - 32];

    /* --- line 2: consumer-written --- */
    /* Byte position of the first unreleased record.  Consumer: release store
     * after it has finished reading everything before it (and after storing
     * rh_acked_seq).  Producer: acquire load before overwriting space. */
    _Alignas(RING_LINE) _Atomic uint64_t rh_head;
    /* Seq of the last released record.  Consumer: release store before
     * rh_head, never decreasing.  Producer: acquire load (after rh_head). */
    _Atomic uint64_t rh_acked_seq;
    /* Where a release that gives pages back (zx_ring_give_back) is taking
     * the head: stored after rh_acked_seq and before the pages go, then
     * rh_head follows.  The records in [rh_head, rh_freeing) may be zeroes:
     * whoever walks from the head (a new producer's recovery, a new
     * consumer) starts at rh_freeing when it is ahead.  The producer writes
     * only below rh_head + capacity, so never into the pages going. */
    _Atomic uint64_t rh_freeing;
    uint8_t rh_pad2[RING_LINE - 24];
};

_Static_assert(sizeof(struct zx_ring_hdr) == 3 * RING_LINE, "ring header size");

/* Record header at an 8-aligned offset of the data area.  Written by the
 * producer before the tail covering it is published; never written after. */
struct ring_rec {
    uint32_t rr_len;          /* payload bytes (0 for a wrap marker) */
    uint32_t rr_tag;          /* REC_TAG or REC_TAG_WRAP */
    uint64_t rr_seq;          /* record seq (0 for a wrap marker) */
};

_Static_assert(sizeof(struct ring_rec) == REC_HDR, "record header size");

/* A record found by ring_peek. */
struct ring_found {
    uint64_t off;             /* offset of the record header in the data area */
    uint64_t end;             /* byte position just after the record */
    uint64_t len;
    uint64_t seq;
};

static uint64_t align8(uint64_t n) { return (n + 7u) & ~UINT64_C(7); }

static uint64_t round64(uint64_t n) { return (n + 63u) & ~UINT64_C(63); }

static uint64_t ring_max_record(uint64_t cap)
{
    uint64_t m = cap / 2 - REC_HDR;
    return m > REC_MAX_LEN ? REC_MAX_LEN : m;
}

/*
 * Look at the record at byte position pos, given the published tail: skip the
 * end of the data area (implicit when less than a header is left, or a wrap
 * marker), then validate the record header.  The header is read with single
 * relaxed loads into locals so a misbehaving producer cannot change it between
 * check and use.  expect_seq != 0 requires that exact seq.
 */
static zx_ring_result ring_peek(const zx_ring *r, uint64_t pos, uint64_t tail,
                                uint64_t expect_seq, struct ring_found *f)
{
    for (int i = 0; i < 2; i++) {
        if (pos == tail)
            return ZX_RING_WOULD_BLOCK;
        if (tail - pos > r->cap || (pos & 7u) != 0)
            return ZX_RING_CORRUPT;
        uint64_t off = pos % r->cap;
        uint64_t to_end = r->cap - off;
        if (to_end < REC_HDR) {
            if (to_end > tail - pos)
                return ZX_RING_CORRUPT;
            pos += to_end;
            continue;
        }
        struct ring_rec *h = (struct ring_rec *)(void *)(r->data + off);
        uint32_t len = __atomic_load_n(&h->rr_len, __ATOMIC_RELAXED);
        uint32_t tag = __atomic_load_n(&h->rr_tag, __ATOMIC_RELAXED);
        uint64_t seq = __atomic_load_n(&h->rr_seq, __ATOMIC_RELAXED);
        if (tag == REC_TAG_WRAP) {
            if (to_end > tail - pos)
                return ZX_RING_CORRUPT;
            pos += to_end;
            continue;
        }
        if (tag != REC_TAG || len > ring_max_record(r->cap) || seq == 0)
            return ZX_RING_CORRUPT;
        uint64_t need = REC_HDR + align8(len);
        if (need > to_end || need > tail - pos)
            return ZX_RING_CORRUPT;
        if (expect_seq != 0 && seq != expect_seq)
            return ZX_RING_CORRUPT;
        f->off = off;
        f->end = pos + need;
        f->len = len;
        f->seq = seq;
        return ZX_RING_OK;
    }
    return ZX_RING_CORRUPT;  /* two skips in a row: a wrap marker at offset 0 */
}

size_t zx_ring_footprint(uint64_t capacity)
{
    if (capacity < ZX_RING_MIN_CAPACITY || capacity > ZX_RING_MAX_CAPACITY)
        return 0;
    return (size_t)(sizeof(struct zx_ring_hdr) + round64(capacity));
}

int zx_ring_format(void *mem, uint64_t capacity)
{
    if (mem == NULL || ((uintptr_t)mem & 63u) != 0 || zx_ring_footprint(capacity) == 0)
        return -1;
    struct zx_ring_hdr *h = mem;
    memset(h, 0, sizeof *h);
    h->rh_version = ZX_RING_VERSION;
    h->rh_hdr_size = (uint32_t)sizeof *h;
    h->rh_capacity = round64(capacity);
    atomic_store_explicit(&h->rh_tail, 0, memory_order_relaxed);
    atomic_store_explicit(&h->rh_pub_seq, 0, memory_order_relaxed);
    atomic_store_explicit(&h->rh_head, 0, memory_order_relaxed);
    atomic_store_explicit(&h->rh_acked_seq, 0, memory_order_relaxed);
    atomic_store_explicit(&h->rh_freeing, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    __atomic_store_n(&h->rh_magic, RING_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

zx_ring_result zx_ring_attach(zx_ring *r, void *mem, size_t size)
{
    memset(r, 0, sizeof *r);
    r->peer_fd = -1;
    if (mem == NULL || ((uintptr_t)mem & 63u) != 0 || size < sizeof(struct zx_ring_hdr))
        return ZX_RING_BAD_SEGMENT;
    struct zx_ring_hdr *h = mem;
    if (__atomic_load_n(&h->rh_magic, __ATOMIC_ACQUIRE) != RING_MAGIC ||
        h->rh_version != ZX_RING_VERSION || h->rh_hdr_size != sizeof *h)
        return ZX_RING_BAD_SEGMENT;
    uint64_t cap = h->rh_capacity;
    if (cap < ZX_RING_MIN_CAPACITY || cap > ZX_RING_MAX_CAPACITY || cap % 64u != 0 ||
        cap > size - sizeof *h)
        return ZX_RING_BAD_SEGMENT;
    r->hdr = h;
    r->data = (uint8_t *)mem + sizeof *h;
    r->cap = cap;
    return ZX_RING_OK;
}

void zx_ring_set_peer(zx_ring *r, int eventfd) { r->peer_fd = eventfd; }

void zx_ring_wake_fd(int efd)
{
    if (efd < 0)
        return;
    int saved = errno;
    uint64_t one = 1;
    ssize_t n;
    do {
        n = write(efd, &one, sizeof one);
    } while (n < 0 && errno == EINTR);
    errno = saved;
}

void zx_ring_drain_fd(int efd)
{
    if (efd < 0)
        return;
    int saved = errno;
    /* Bounded: a semaphore-mode eventfd gives 1 per read. */
    for (int i = 0; i < 1024; i++) {
        struct pollfd p = { .fd = efd, .events = POLLIN, .revents = 0 };
        int n = poll(&p, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || (p.revents & POLLIN) == 0)
            break;
        uint64_t v;
        ssize_t k = read(efd, &v, sizeof v);
        if (k < 0 && errno == EINTR)
            continue;
        if (k != (ssize_t)sizeof v)
            break;
    }
    errno = saved;
}

/* Where walks from the head start: rh_freeing when a release is giving
 * pages back (or its consumer died doing it) and it is within [head, tail],
 * else rh_head. */
static uint64_t walk_start(const zx_ring *r, uint64_t tail)
{
    struct zx_ring_hdr *h = r->hdr;
    uint64_t head = atomic_load_explicit(&h->rh_head, memory_order_acquire);
    uint64_t fr = atomic_load_explicit(&h->rh_freeing, memory_order_acquire);
    if (fr != head && (fr & 7u) == 0 && fr - head <= tail - head && tail - head <= r->cap)
        return fr;
    return head;
}

/* ---------------------------------------------------------------- producer */

uint64_t zx_ring_max_record(const zx_ring *r) { return ring_max_record(r->cap); }

uint64_t zx_ring_capacity(const zx_ring *r) { return r->cap; }

/*
 * First use by a new producer handle: find the seq of the last published
 * record.  rh_pub_seq may lag by one (predecessor killed between its tail and
 * pub_seq stores); the truth is the seq of the record ending at the tail:
 * either still unreleased (walk from head to tail: only the producer writes
 * the data area, so those bytes cannot change under us), or released, and
 * then the consumer stored it in rh_acked_seq before moving rh_head.
 */
static zx_ring_result ring_prod_recover(zx_ring *r)
{
    struct zx_ring_hdr *h = r->hdr;
    uint64_t tail = atomic_load_explicit(&h->rh_tail, memory_order_acquire);
    uint64_t pub = atomic_load_explicit(&h->rh_pub_seq, memory_order_acquire);
    uint64_t head = atomic_load_explicit(&h->rh_head, memory_order_acquire);
    uint64_t best = 0;

    if (tail - head > r->cap || (tail & 7u) != 0)
        return ZX_RING_CORRUPT;
    /* A release giving pages back may zero records under the walk: it
     * moves rh_freeing first, so a walk that fails while the start moved
     * is made again (each retry means the consumer moved on). */
    for (int tries = 0;; tries++) {
        uint64_t start = walk_start(r, tail);
        uint64_t acked = atomic_load_explicit(&h->rh_acked_seq, memory_order_acquire);
        uint64_t pos = start, expect = 0;
        zx_ring_result rc = ZX_RING_OK;
        best = pub > acked ? pub : acked;
        while (pos != tail) {
            struct ring_found f;
            if ((rc = ring_peek(r, pos, tail, expect, &f)) != ZX_RING_OK)
                break;
            if (f.seq > best)
                best = f.seq;
            expect = f.seq + 1;
            pos = f.end;
        }
        if (rc == ZX_RING_OK)
            break;
        if (tries >= 64 || walk_start(r, tail) == start)
            return ZX_RING_CORRUPT;
    }
    if (best == UINT64_MAX)
        return ZX_RING_CORRUPT;
    if (best != pub)
        atomic_store_explicit(&h->rh_pub_seq, best, memory_order_release);
    r->next_seq = best + 1;
    r->prod_ready = 1;
    return ZX_RING_OK;
}

uint64_t zx_ring_next_seq(zx_ring *r)
{
    if (!r->prod_ready && ring_prod_recover(r) != ZX_RING_OK)
        return 0;
    return r->next_seq;
}

zx_ring_result zx_ring_reserve(zx_ring *r, size_t len, void **buf)
{
    struct zx_ring_hdr *h = r->hdr;
    r->res_active = 0;
    if ((uint64_t)len > ring_max_record(r->cap))
        return ZX_RING_TOO_BIG;
    if (!r->prod_ready && ring_prod_recover(r) != ZX_RING_OK)
        return ZX_RING_CORRUPT;

    /* We are the only writer of rh_tail: relaxed.  Acquire on rh_head pairs
     * with the consumer's release: it has finished reading what it freed. */
    uint64_t tail = atomic_load_explicit(&h->rh_tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&h->rh_head, memory_order_acquire);
    uint64_t used = tail - head;
    if (used > r->cap || (tail & 7u) != 0 || (head & 7u) != 0)
        return ZX_RING_CORRUPT;

    uint64_t off = tail % r->cap;
    uint64_t to_end = r->cap - off;
    uint64_t need = REC_HDR + align8(len);
    uint64_t skip = need > to_end ? to_end : 0;
    /* a record that fits under the soft cap does not cross it: the next
     * lap starts at offset 0, when the record fits before `off` (else the
     * wrap could never find room, even in an empty ring: it goes here, as
     * without a cap; never a marker at 0 either: two skips in a row) */
    if (!skip && r->soft_cap && need <= r->soft_cap && off + need > r->soft_cap &&
        need <= off)
        skip = to_end;
    if (skip + need > r->cap - used)
        return ZX_RING_WOULD_BLOCK;

    r->res_active = 1;
    r->res_tail = tail;
    r->res_skip = skip;
    r->res_len = len;
    *buf = r->data + (off + skip) % r->cap + REC_HDR;
    return ZX_RING_OK;
}

uint64_t zx_ring_commit(zx_ring *r, size_t len, int wake)
{
    struct zx_ring_hdr *h = r->hdr;
    if (!r->res_active || (uint64_t)len > r->res_len)
        return 0;

    uint64_t off = r->res_tail % r->cap;
    if (r->res_skip >= REC_HDR) {
        struct ring_rec *w = (struct ring_rec *)(void *)(r->data + off);
        w->rr_len = 0;
        w->rr_tag = REC_TAG_WRAP;
        w->rr_seq = 0;
    }
    if (r->res_skip) {
        atomic_store_explicit(&h->rh_wrap_skip, r->res_skip, memory_order_relaxed);
        atomic_store_explicit(&h->rh_wrap_pos, r->res_tail, memory_order_relaxed);
    }
    uint64_t seq = r->next_seq;
    struct ring_rec *rec = (struct ring_rec *)(void *)(r->data + (off + r->res_skip) % r->cap);
    rec->rr_len = (uint32_t)len;
    rec->rr_tag = REC_TAG;
    rec->rr_seq = seq;

    uint64_t new_tail = r->res_tail + r->res_skip + REC_HDR + align8(len);
    /* Publish: everything above happens-before the consumer's acquire of tail. */
    atomic_store_explicit(&h->rh_tail, new_tail, memory_order_release);
    atomic_store_explicit(&h->rh_pub_seq, seq, memory_order_release);
    r->next_seq = seq + 1;
    r->res_active = 0;
    if (wake)
        zx_ring_wake_fd(r->peer_fd);
    return seq;
}

void zx_ring_cancel(zx_ring *r) { r->res_active = 0; }

uint64_t zx_ring_published_seq(const zx_ring *r)
{
    return atomic_load_explicit(&r->hdr->rh_pub_seq, memory_order_acquire);
}

uint64_t zx_ring_acked_seq(const zx_ring *r)
{
    return atomic_load_explicit(&r->hdr->rh_acked_seq, memory_order_acquire);
}

uint64_t zx_ring_used_bytes(const zx_ring *r)
{
    uint64_t head = atomic_load_explicit(&r->hdr->rh_head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&r->hdr->rh_tail, memory_order_acquire);
    uint64_t wpos = atomic_load_explicit(&r->hdr->rh_wrap_pos, memory_order_relaxed);
    uint64_t wskip = atomic_load_explicit(&r->hdr->rh_wrap_skip, memory_order_relaxed);
    uint64_t used = tail - head;
    if (used > r->cap)
        return r->cap;
    /* a wrap marker still in flight: the bytes it skips hold no record */
    if (wpos - head < used && wskip <= used - (wpos - head))
        used -= wskip;
    return used;
}

void zx_ring_soft_cap(zx_ring *r, uint64_t bytes)
{
    bytes &= ~UINT64_C(7);
    r->soft_cap = bytes >= r->cap ? 0 : bytes;
}

/* ---------------------------------------------------------------- consumer */

void zx_ring_cursor_init(const zx_ring *r, zx_ring_cursor *c)
{
    struct zx_ring_hdr *h = r->hdr;
    /* head (or where a predecessor was taking it, giving pages back) before
     * acked_seq: the consumer stores them in the other order. */
    uint64_t tail = atomic_load_explicit(&h->rh_tail, memory_order_acquire);
    uint64_t head = walk_start(r, tail);
    uint64_t acked = atomic_load_explicit(&h->rh_acked_seq, memory_order_acquire);
    struct ring_found f;

    c->pos = head;
    c->seq = acked;
    /* If a predecessor died between its acked_seq and head stores, acked_seq
     * is ahead of head: the first unreleased record tells the truth. */
    if (ring_peek(r, head, tail, 0, &f) == ZX_RING_OK)
        c->seq = f.seq - 1;
}

zx_ring_result zx_ring_next(zx_ring *r, zx_ring_cursor *c, const void **data,
                            size_t *len, uint64_t *seq)
{
    uint64_t tail = atomic_load_explicit(&r->hdr->rh_tail, memory_order_acquire);
    struct ring_found f;
    zx_ring_result rc = ring_peek(r, c->pos, tail, c->seq + 1, &f);
    if (rc != ZX_RING_OK)
        return rc;
    if (data)
        *data = r->data + f.off + REC_HDR;
    if (len)
        *len = (size_t)f.len;
    if (seq)
        *seq = f.seq;
    c->pos = f.end;
    c->seq = f.seq;
    return ZX_RING_OK;
}

void zx_ring_give_back(zx_ring *r, uint64_t fast_bps)
{
    long pg = sysconf(_SC_PAGESIZE);
    r->give_back = fast_bps && pg > 0 ? (uint64_t)pg : 0;
    r->gb_fast_bps = fast_bps;
    r->gb_since = r->gb_bytes = 0;
    r->gb_fast = 0;
}

/* Give the whole pages of data bytes [a, b) back (a <= b <= cap). */
static void give_back_span(zx_ring *r, uint64_t a, uint64_t b)
{
    uintptr_t pg = (uintptr_t)r->give_back;
    uintptr_t s = ((uintptr_t)(r->data + a) + pg - 1) & ~(pg - 1);
    uintptr_t e = (uintptr_t)(r->data + b) & ~(pg - 1);
    if (e > s && madvise((void *)s, e - s, MADV_REMOVE) != 0)
        r->give_back = 0;   /* not shared file memory: keep the pages */
}

/* 1 when the bytes released went through faster than r->gb_fast_bps
 * over the last window of 100 ms or more (n: bytes this release frees). */
static int fast(zx_ring *r, uint64_t n)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (!r->gb_since)
        r->gb_since = now;
    r->gb_bytes += n;
    uint64_t dt = now - r->gb_since;
    if (dt >= 100000000u) {
        /* bytes per second; dt is at least 100 ms, so dt / 1e6 >= 100 */
        r->gb_fast = r->gb_bytes / (dt / 1000000u) * 1000u > r->gb_fast_bps;
        r->gb_since = now;
        r->gb_bytes = 0;
    }
    return r->gb_fast;
}

/* Before the head moves from head to pos: give back the whole pages of
 * what this release frees.  Only those: the producer may already be
 * writing over anything before head (its next lap), so pages a release
 * leaves partly unreleased are kept until the next lap. */
static void give_back(zx_ring *r, uint64_t head, uint64_t pos)
{
    uint64_t n = pos - head;
    int saved = errno;
    uint64_t a = head % r->cap;
    if (a + n <= r->cap) {
        give_back_span(r, a, a + n);
    } else {
        give_back_span(r, a, r->cap);
        give_back_span(r, 0, a + n - r->cap);
    }
    errno = saved;
}

void zx_ring_release(zx_ring *r, const zx_ring_cursor *c, int wake)
{
    struct zx_ring_hdr *h = r->hdr;
    /* We are the only writer of head and acked_seq: relaxed loads. */
    uint64_t head = atomic_load_explicit(&h->rh_head, memory_order_relaxed);
    uint64_t acked = atomic_load_explicit(&h->rh_acked_seq, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&h->rh_tail, memory_order_acquire);

    if ((c->pos & 7u) != 0 || c->pos - head > tail - head || tail - head > r->cap)
        return;
    if (c->seq > acked)
        atomic_store_explicit(&h->rh_acked_seq, c->seq, memory_order_release);
    /* not while bytes go through fast: the pages are written again within
     * moments, and giving them back would cost a fault per page (~6% of a
     * Kafka stream's CPU at full speed) for memory the rate needs anyway */
    if (r->give_back && c->pos - head >= r->give_back &&
        (r->gb_fast_bps == UINT64_MAX || !fast(r, c->pos - head))) {
        atomic_store_explicit(&h->rh_freeing, c->pos, memory_order_release);
        give_back(r, head, c->pos);
    }
    atomic_store_explicit(&h->rh_head, c->pos, memory_order_release);
    if (wake)
        zx_ring_wake_fd(r->peer_fd);
}
