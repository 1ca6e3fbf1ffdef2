/*
 * store_hashes_bench.c — what recording a reverse sync's row hashes costs
 * the writer's store (store/store.h, "hashes"): N new keys, in key-hash
 * order as a run hands them over, put in transactions of BATCH records
 * (the writer's cycles; ZX_STORE_NOMETASYNC, the writer's setting), two
 * ways:
 *   put     zx_store_hash_put per record (a search from the root each)
 *   cursor  zx_store_hashes_write per transaction (one cursor)
 * and two neighbourhoods: the sync's keys alone at the end of the store,
 * and between two other syncs' keys (200,000 each, not timed), as when
 * other syncs sort after it.  Prints µs per record.
 *
 * Usage: store_hashes_bench [N [BATCH [DIR]]]   (defaults 5000000 80000 /tmp)
 * Built by default; run by hand.  Not a test: it times things.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int cmp_rec(const void *a, const void *b)
{
    return memcmp(((const zx_store_hash_rec *)a)->kh, ((const zx_store_hash_rec *)b)->kh,
                  ZX_KEYHASH_LEN);
}

/* n records with random key hashes, sorted; their kv in *kvs. */
static zx_store_hash_rec *make_recs(size_t n, char **kvs)
{
    zx_store_hash_rec *r = calloc(n, sizeof(*r));
    char *kv = malloc(n * 16);
    if (!r || !kv) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t a = next_rand(), b = next_rand();
        memcpy(r[i].kh, &a, 8);
        memcpy(r[i].kh + 8, &b, 8);
        r[i].row_hash = next_rand();
        r[i].kv = kv + i * 16;
        r[i].kvlen = (size_t)snprintf(kv + i * 16, 16, "[%zu]", i);
    }
    qsort(r, n, sizeof(*r), cmp_rec);
    *kvs = kv;
    return r;
}

static void check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "%s: %s\n", what, zx_store_strerror(rc));
        exit(1);
    }
}

static void write_all(zx_store *s, const char *sync, const zx_store_hash_rec *r, size_t n,
                      size_t batch, int cursor)
{
    for (size_t i = 0; i < n; i += batch) {
        size_t m = n - i < batch ? n - i : batch;
        zx_store_txn *t;
        check(zx_store_begin(s, 0, &t), "begin");
        if (cursor) {
            check(zx_store_hashes_write(t, sync, r + i, m), "write");
        } else {
            for (size_t j = i; j < i + m; j++)
                check(zx_store_hash_put(t, sync, r[j].kh, r[j].row_hash, r[j].kv, r[j].kvlen),
                      "put");
        }
        check(zx_store_commit(t), "commit");
    }
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 5000000;
    size_t batch = argc > 2 ? strtoull(argv[2], NULL, 10) : 80000;
    const char *dir = argc > 3 ? argv[3] : "/tmp";
    if (!n || !batch) {
        fprintf(stderr, "usage: store_hashes_bench [N [BATCH [DIR]]]\n");
        return 2;
    }
    char *kv, *okv;
    zx_store_hash_rec *r = make_recs(n, &kv);
    zx_store_hash_rec *other = make_recs(200000, &okv);
    for (int between = 0; between < 2; between++) {
        for (int cursor = 0; cursor < 2; cursor++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/store_hashes_bench.XXXXXX", dir);
            if (!mkdtemp(path)) {
                perror("mkdtemp");
                return 1;
            }
            zx_store *s;
            char err[256];
            check(zx_store_open(path, ZX_STORE_NOMETASYNC, (size_t)4 << 30, &s, err, sizeof(err)), err);
            if (between) {
                write_all(s, "a_sync", other, 200000, batch, 1);
                write_all(s, "z_sync", other, 200000, batch, 1);
            }
            double t0 = now_s();
            write_all(s, "m_sync", r, n, batch, cursor);
            double dt = now_s() - t0;
            zx_store_txn *t;
            check(zx_store_begin(s, 1, &t), "begin");
            uint64_t got = zx_store_hashes_count(t, "m_sync");
            zx_store_abort(t);
            printf("%-7s %-8s %zu records in %.2f s: %.3f us a record (%llu stored)\n",
                   between ? "between" : "alone", cursor ? "cursor" : "put", n, dt,
                   dt * 1e6 / (double)n, (unsigned long long)got);
            zx_store_close(s);
            char cmd[4200];
            snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
            if (system(cmd) != 0)
                fprintf(stderr, "cannot remove %s\n", path);
        }
    }
    free(r);
    free(kv);
    free(other);
    free(okv);
    return 0;
}
