/*
 * ring_multiproc.c — several forked producers, each with its own ring in one
 * memfd segment, one consumer (this process) draining them all; producers are
 * killed with SIGKILL at random moments (often in the middle of writing a
 * record) and replaced by a new process that re-attaches to the same ring.
 *
 * Checks: the consumer never sees a partial record (every payload carries a
 * checksum of its bytes), per-producer counters go 1, 2, 3, ... with no gap
 * and no duplicate across restarts (a replacement derives its counter from
 * the ring's last published record, zx_ring_next_seq), and the counter equals
 * the ring's own sequence number, while the consumer gives the pages it
 * releases back to the kernel (zx_ring_give_back: a page given back too
 * early would show as zeroes, failing the checksum).  Stops after
 * 1,000,000 records and prints
 * the figures.  Wake-ups through eventfds and poll(); the poll timeout is
 * only a safety net.
 *
 * It must never: leave a child behind (every child is reaped, and all are
 * killed on failure; children also die with the parent via PDEATHSIG), or
 * depend on timing for its verdict (the only time limit is a 60 s no-progress
 * guard against a hang).
 */
#include "common/ring.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NPROD        4
#define RING_CAP     (64u * 1024u)
#define TOTAL        1000000u
#define KILL_EVERY   5000u          /* records consumed between two kills */
#define MIN_LEN      24u
#define MAX_LEN      4096u
#define CHUNK        64u            /* producers copy payloads in pieces */
#define BATCH        64             /* records read before a release */
#define REC_MAGIC    0x52494e47u    /* "RING" */

/* Payload header, at the start of every record (bytes 4.. are checksummed). */
struct rec_head {
    uint32_t sum;                   /* FNV-1a of payload bytes [4, len) */
    uint32_t len;                   /* payload length */
    uint32_t prod;                  /* producer (= ring) index */
    uint32_t magic;                 /* REC_MAGIC */
    uint64_t counter;               /* 1, 2, 3, ... per producer */
};

/* Per-producer word after the rings, written by the producer, read by the
 * parent only to report where kills landed. */
enum { ST_IDLE = 0, ST_WRITING = 1 };
struct prod_state {
    _Alignas(64) _Atomic uint32_t st;
};

struct test {
    int memfd;
    size_t ring_size;               /* footprint of one ring */
    size_t seg_size;
    uint8_t *seg;
    int data_efd;                   /* producers -> consumer */
    int space_efd[NPROD];           /* consumer -> producer i */
    pid_t pid[NPROD];
    pid_t parent;
};

static struct test T;

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static struct prod_state *state_of(uint8_t *seg, int i)
{
    return (struct prod_state *)(void *)(seg + NPROD * T.ring_size) + i;
}

/* ------------------------------------------------------------- producer */

static uint32_t fnv1a_more(uint32_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

static void producer_main(int id)
{
    zx_ring r;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != T.parent)
        _exit(3);
    /* Map the segment again, at an address of our own: the ring holds only
     * offsets. */
    uint8_t *seg = mmap(NULL, T.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, T.memfd, 0);
    if (seg == MAP_FAILED)
        _exit(4);
    if (zx_ring_attach(&r, seg + (size_t)id * T.ring_size, T.ring_size) != ZX_RING_OK)
        _exit(5);
    zx_ring_set_peer(&r, T.data_efd);
    struct prod_state *ps = state_of(seg, id);

    uint64_t counter = zx_ring_next_seq(&r);  /* continues after the last published */
    if (counter == 0)
        _exit(6);
    uint64_t rnd = ((uint64_t)getpid() << 32) ^ counter ^ 0x9e3779b97f4a7c15ull;
    for (;;) {
        uint32_t len = MIN_LEN + (uint32_t)(xorshift(&rnd) % (MAX_LEN - MIN_LEN + 1));
        void *buf;
        zx_ring_result rc;
        while ((rc = zx_ring_reserve(&r, len, &buf)) == ZX_RING_WOULD_BLOCK) {
            /* drain, re-check, then sleep: a wake-up in between is kept */
            zx_ring_drain_fd(T.space_efd[id]);
            if ((rc = zx_ring_reserve(&r, len, &buf)) != ZX_RING_WOULD_BLOCK)
                break;
            struct pollfd pf = { .fd = T.space_efd[id], .events = POLLIN, .revents = 0 };
            poll(&pf, 1, 100);
        }
        if (rc != ZX_RING_OK)
            _exit(7);

        /* Write in place, slowly: the body piece by piece (generated and
         * checksummed as it goes), the header with the checksum last.  A kill
         * anywhere in here leaves a partial record in the reserved space. */
        atomic_store_explicit(&ps->st, ST_WRITING, memory_order_relaxed);
        struct rec_head h = { 0, len, (uint32_t)id, REC_MAGIC, counter };
        uint32_t sum = fnv1a_more(2166136261u, (const uint8_t *)&h + 4, sizeof h - 4);
        for (uint32_t off = sizeof h; off < len; off += CHUNK) {
            uint8_t piece[CHUNK];
            uint32_t n = len - off < CHUNK ? len - off : CHUNK;
            for (uint32_t i = 0; i < n; i += 8) {
                uint64_t v = xorshift(&rnd);
                memcpy(piece + i, &v, n - i < 8 ? n - i : 8);
            }
            sum = fnv1a_more(sum, piece, n);
            memcpy((uint8_t *)buf + off, piece, n);
        }
        h.sum = sum;
        memcpy(buf, &h, sizeof h);
        uint64_t seq = zx_ring_commit(&r, len, 1);
        atomic_store_explicit(&ps->st, ST_IDLE, memory_order_relaxed);
        if (seq != counter)
            _exit(8);
        counter++;
    }
}

/* ------------------------------------------------------------- parent */

static void kill_all(void)
{
    for (int i = 0; i < NPROD; i++) {
        if (T.pid[i] > 0) {
            kill(T.pid[i], SIGKILL);
            while (waitpid(T.pid[i], NULL, 0) < 0 && errno == EINTR)
                ;
            T.pid[i] = 0;
        }
    }
}

static pid_t spawn(int id)
{
    pid_t p = fork();
    if (p == 0)
        producer_main(id);  /* never returns */
    return p;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define FAIL(...) do { fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); goto failed; } while (0)

int main(void)
{
    zx_ring ring[NPROD];
    zx_ring_cursor cur[NPROD];
    uint64_t expect[NPROD];
    uint64_t total = 0, bytes = 0, kills = 0, kills_mid = 0, wakes = 0;
    uint64_t next_kill = KILL_EVERY;
    int victim = -1, waited = 0;
    uint64_t rnd = 0x2545f4914f6cdd1dull;
    int rc = 1;

    setvbuf(stdout, NULL, _IONBF, 0);
    T.parent = getpid();
    T.ring_size = zx_ring_footprint(RING_CAP);
    T.seg_size = NPROD * T.ring_size + NPROD * sizeof(struct prod_state);
    T.memfd = memfd_create("zx-ring-test", MFD_CLOEXEC);
    T.data_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    for (int i = 0; i < NPROD; i++)
        T.space_efd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (T.memfd < 0 || T.data_efd < 0 || ftruncate(T.memfd, (off_t)T.seg_size) != 0) {
        perror("setup");
        return 1;
    }
    T.seg = mmap(NULL, T.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, T.memfd, 0);
    if (T.seg == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    for (int i = 0; i < NPROD; i++) {
        if (T.space_efd[i] < 0)
            FAIL("eventfd");
        if (zx_ring_format(T.seg + (size_t)i * T.ring_size, RING_CAP) != 0)
            FAIL("format ring %d", i);
        if (zx_ring_attach(&ring[i], T.seg + (size_t)i * T.ring_size, T.ring_size) != ZX_RING_OK)
            FAIL("attach ring %d", i);
        zx_ring_set_peer(&ring[i], T.space_efd[i]);
        zx_ring_give_back(&ring[i], UINT64_MAX);   /* at any rate */
        zx_ring_cursor_init(&ring[i], &cur[i]);
        expect[i] = 1;
    }
    for (int i = 0; i < NPROD; i++)
        if ((T.pid[i] = spawn(i)) < 0)
            FAIL("fork: %s", strerror(errno));

    double t0 = now_s(), last_progress = t0;
    while (total < TOTAL) {
        /* Drain the eventfd first, then look at every ring; sleep only if
         * none had anything (a wake-up sent meanwhile is not lost). */
        zx_ring_drain_fd(T.data_efd);
        uint64_t got = 0;
        for (int i = 0; i < NPROD && total < TOTAL; i++) {
            int n = 0;
            const void *d;
            size_t len;
            uint64_t seq;
            zx_ring_result r = ZX_RING_OK;
            while (n < BATCH && total < TOTAL &&
                   (r = zx_ring_next(&ring[i], &cur[i], &d, &len, &seq)) == ZX_RING_OK) {
                struct rec_head h;
                if (len < sizeof h)
                    FAIL("ring %d seq %llu: short record (%zu bytes)", i,
                         (unsigned long long)seq, len);
                memcpy(&h, d, sizeof h);
                if (h.magic != REC_MAGIC || h.prod != (uint32_t)i || h.len != len)
                    FAIL("ring %d seq %llu: bad record header (magic %x prod %u len %u/%zu)",
                         i, (unsigned long long)seq, h.magic, h.prod, h.len, len);
                if (h.sum != fnv1a((const uint8_t *)d + 4, len - 4))
                    FAIL("ring %d seq %llu counter %llu: checksum mismatch: partial record",
                         i, (unsigned long long)seq, (unsigned long long)h.counter);
                if (h.counter != expect[i])
                    FAIL("ring %d: counter %llu, expected %llu (gap or duplicate)", i,
                         (unsigned long long)h.counter, (unsigned long long)expect[i]);
                if (seq != h.counter)
                    FAIL("ring %d: ring seq %llu != counter %llu", i,
                         (unsigned long long)seq, (unsigned long long)h.counter);
                expect[i]++;
                n++;
                total++;
                bytes += len;
            }
            if (n == 0 && r == ZX_RING_CORRUPT)
                FAIL("ring %d: zx_ring_next: CORRUPT", i);
            if (n > 0)
                zx_ring_release(&ring[i], &cur[i], 1);
            got += (uint64_t)n;
        }

        /* A producer must never exit on its own. */
        int st;
        pid_t dead = waitpid(-1, &st, WNOHANG);
        if (dead > 0) {
            for (int i = 0; i < NPROD; i++)
                if (T.pid[i] == dead)
                    T.pid[i] = 0;
            FAIL("producer %d exited by itself (status %d, exit code %d)", (int)dead, st,
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        }

        /* Kill a random producer every KILL_EVERY records, preferably while
         * it is writing a record (its state word says so; after a number of
         * passes without catching it there, kill it anyway). */
        if (victim < 0 && total >= next_kill && total < TOTAL) {
            victim = (int)(xorshift(&rnd) % NPROD);
            waited = 0;
        }
        if (victim >= 0 &&
            (atomic_load_explicit(&state_of(T.seg, victim)->st, memory_order_relaxed) ==
                 ST_WRITING || ++waited > 1000)) {
            kill(T.pid[victim], SIGKILL);
            while (waitpid(T.pid[victim], NULL, 0) < 0 && errno == EINTR)
                ;
            T.pid[victim] = 0;
            /* still WRITING after its death: it died between reserve and commit */
            if (atomic_load_explicit(&state_of(T.seg, victim)->st, memory_order_relaxed) ==
                ST_WRITING)
                kills_mid++;
            atomic_store_explicit(&state_of(T.seg, victim)->st, ST_IDLE, memory_order_relaxed);
            if ((T.pid[victim] = spawn(victim)) < 0)
                FAIL("fork: %s", strerror(errno));
            kills++;
            next_kill += KILL_EVERY;
            victim = -1;
        }

        double t = now_s();
        if (got > 0) {
            last_progress = t;
            continue;
        }
        if (t - last_progress > 60.0)
            FAIL("no record for 60 s (hang); %llu records so far", (unsigned long long)total);
        struct pollfd pf = { .fd = T.data_efd, .events = POLLIN, .revents = 0 };
        poll(&pf, 1, 100);
        wakes++;
    }
    double secs = now_s() - t0;

    kill_all();
    if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD)
        FAIL("a child was left behind");
    for (int i = 0; i < NPROD; i++) {
        if (expect[i] < 2)
            FAIL("producer %d never got a record through", i);
        if (zx_ring_acked_seq(&ring[i]) != expect[i] - 1)
            FAIL("ring %d: acked_seq %llu, expected %llu", i,
                 (unsigned long long)zx_ring_acked_seq(&ring[i]),
                 (unsigned long long)(expect[i] - 1));
    }
    if (kills == 0)
        FAIL("no producer was killed");
    printf("ring_multiproc: %llu records, %llu bytes, %d producers, %llu kills "
           "(%llu while writing a record), %llu sleeps, %.2f s\n",
           (unsigned long long)total, (unsigned long long)bytes, NPROD,
           (unsigned long long)kills, (unsigned long long)kills_mid,
           (unsigned long long)wakes, secs);
    for (int i = 0; i < NPROD; i++)
        printf("  ring %d: %llu records\n", i, (unsigned long long)(expect[i] - 1));
    rc = 0;
    goto done;

failed:
    kill_all();
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    fprintf(stderr, "ring_multiproc: FAILED after %llu records\n", (unsigned long long)total);
done:
    munmap(T.seg, T.seg_size);
    close(T.memfd);
    close(T.data_efd);
    for (int i = 0; i < NPROD; i++)
        close(T.space_efd[i]);
    return rc;
}
