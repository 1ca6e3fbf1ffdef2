/*
 * keyseq_bench.c — the cost per change of the writer's per-key positions
 * (workers/writer/keyseq.h) over a real LMDB store, as the writer uses
 * them: per cycle, filter a frame of changes against a read transaction,
 * then store the cycle's entries in a write transaction and commit
 * (ZX_STORE_NOMETASYNC, the writer's setting).
 *
 * Two key orders over the same number of keys:
 *   ids    a growing integer id (inserts of new rows, then updates of
 *          recent ones)
 *   uuids  random UUID v4 text keys (updates spread over every key)
 * First KEYS keys are loaded (not timed), then CYCLES cycles of CYCLE
 * changes are timed.  Prints, per order, µs per change for the filter,
 * for store + commit, and in all.
 *
 * Usage: keyseq_bench [KEYS [CYCLE [CYCLES [DIR]]]]
 *        (defaults 1000000 2000 200 /tmp; the store goes in a new folder
 *        under DIR, removed at the end)
 * Built by default; run by hand.  Not a test: it times things.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/rowset.h"
#include "proto/frame.h"
#include "store/store.h"
#include "workers/writer/keyseq.h"

static const char *const KEYS[] = {"id"};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* key i's UUID text (deterministic from i) */
static void uuid_of(uint64_t i, char out[37])
{
    uint64_t a = (i + 1) * 0x9E3779B97F4A7C15ull, b = a ^ (a >> 29) ^ (i * 0xBF58476D1CE4E5B9ull);
    snprintf(out, 37, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffff,
             (unsigned)a & 0xfff, 0x8000 | ((unsigned)(b >> 48) & 0x3fff),
             (unsigned long long)(b & 0xffffffffffffull));
}

typedef struct bench {
    zx_store *st;
    zx_keyseq *ks;
    zx_rowset rs;
    uint8_t *skip;
    double t_filter, t_store;
} bench;

/* One cycle over keys key(0..n-1) at position seq: filter, store, commit. */
static int cycle(bench *b, int uuids, const uint64_t *ids, size_t n, uint64_t seq)
{
    char seqtxt[24], u[37];
    snprintf(seqtxt, sizeof(seqtxt), "%016llu", (unsigned long long)seq);
    zx_rowset_reset(&b->rs);
    zx_rowset_column(&b->rs, ZX_CH_OP, strlen(ZX_CH_OP), ZX_T_TEXT);
    zx_rowset_column(&b->rs, ZX_CH_SEQ, strlen(ZX_CH_SEQ), ZX_T_TEXT);
    zx_rowset_column(&b->rs, "id", 2, ZX_T_NULL);
    for (size_t i = 0; i < n; i++) {
        zx_rowset_begin_row(&b->rs);
        zx_value op = {.type = ZX_T_TEXT, .len = 6, .s = "update"};
        zx_value sq = {.type = ZX_T_TEXT, .len = (uint32_t)strlen(seqtxt), .s = seqtxt};
        zx_rowset_add(&b->rs, 0, &op);
        zx_rowset_add(&b->rs, 1, &sq);
        zx_value k;
        if (uuids) {
            uuid_of(ids[i], u);
            k = (zx_value){.type = ZX_T_TEXT, .len = 36, .s = zx_rowset_strdup(&b->rs, u, 36)};
        } else {
            k = (zx_value){.type = ZX_T_INT, .u.i = (int64_t)ids[i]};
        }
        zx_rowset_add(&b->rs, 2, &k);
        zx_rowset_end_row(&b->rs);
    }
    double t0 = now();
    zx_store_txn *rt = NULL, *wt = NULL;
    if (zx_store_begin(b->st, 1, &rt) != 0)
        return -1;
    long k = zx_keyseq_filter(b->ks, rt, "bench", "items", &b->rs, KEYS, 1, b->skip);
    zx_store_abort(rt);
    if (k != 0) {
        fprintf(stderr, "keyseq_bench: %ld changes skipped, none expected\n", k);
        return -1;
    }
    double t1 = now();
    for (;;) {   /* as the writer does: a full map is grown, then the commit redone */
        int rc = zx_store_begin(b->st, 0, &wt);
        if (!rc && (rc = zx_keyseq_store(b->ks, wt)) != 0)
            zx_store_abort(wt);
        else if (!rc)
            rc = zx_store_commit(wt);
        if (rc == ZX_STORE_MAP_FULL)
            continue;
        if (rc) {
            fprintf(stderr, "keyseq_bench: %s\n", zx_store_strerror(rc));
            return -1;
        }
        break;
    }
    zx_keyseq_clear(b->ks);
    double t2 = now();
    b->t_filter += t1 - t0;
    b->t_store += t2 - t1;
    return 0;
}

static int run(const char *dir, int uuids, size_t nkeys, size_t csize, size_t ncycles)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/zx_keyseq_bench_XXXXXX", dir);
    if (!mkdtemp(path)) {
        perror("mkdtemp");
        return -1;
    }
    bench b = {0};
    char err[256];
    if (zx_store_open(path, ZX_STORE_NOMETASYNC, 0, &b.st, err, sizeof(err)) != 0) {
        fprintf(stderr, "keyseq_bench: %s\n", err);
        return -1;
    }
    b.ks = zx_keyseq_new();
    zx_rowset_init(&b.rs);
    size_t big = csize > 20000 ? csize : 20000;
    b.skip = malloc(big);
    uint64_t *ids = malloc(big * sizeof(*ids));
    if (!b.ks || !b.skip || !ids)
        return -1;
    uint64_t seq = 1;
    /* load: every key once, 20,000 a cycle */
    for (size_t at = 0; at < nkeys;) {
        size_t n = nkeys - at < 20000 ? nkeys - at : 20000;
        for (size_t i = 0; i < n; i++)
            ids[i] = at + i;
        if (cycle(&b, uuids, ids, n, seq++) < 0)
            return -1;
        at += n;
    }
    b.t_filter = b.t_store = 0;
    uint64_t top = nkeys;
    for (size_t c = 0; c < ncycles; c++) {
        for (size_t i = 0; i < csize; i++) {
            if (uuids)
                ids[i] = next() % nkeys;     /* any key */
            else if (i % 2)
                ids[i] = top++;              /* a new row */
            else
                ids[i] = top - 1 - next() % 1000;   /* a recent one */
        }
        if (cycle(&b, uuids, ids, csize, seq++) < 0)
            return -1;
    }
    double n = (double)csize * (double)ncycles;
    printf("%-6s keys=%zu cycle=%zu cycles=%zu  filter %.2f µs  store+commit %.2f µs  "
           "total %.2f µs a change\n",
           uuids ? "uuids" : "ids", nkeys, csize, ncycles, b.t_filter / n * 1e6,
           b.t_store / n * 1e6, (b.t_filter + b.t_store) / n * 1e6);
    zx_keyseq_free(b.ks);
    zx_rowset_free(&b.rs);
    zx_store_close(b.st);
    free(b.skip);
    free(ids);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "keyseq_bench: could not remove %s\n", path);
    return 0;
}

int main(int argc, char **argv)
{
    size_t nkeys = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    size_t csize = argc > 2 ? strtoul(argv[2], NULL, 10) : 2000;
    size_t ncycles = argc > 3 ? strtoul(argv[3], NULL, 10) : 200;
    const char *dir = argc > 4 ? argv[4] : "/tmp";
    if (!nkeys || !csize || csize > 1000000 || !ncycles) {
        fprintf(stderr, "usage: keyseq_bench [KEYS [CYCLE (1..1000000) [CYCLES [DIR]]]]\n");
        return 2;
    }
    if (run(dir, 0, nkeys, csize, ncycles) < 0 || run(dir, 1, nkeys, csize, ncycles) < 0)
        return 1;
    return 0;
}
