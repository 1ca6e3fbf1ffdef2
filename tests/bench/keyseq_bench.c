/*
 * keyseq_bench.c — what the writer's per-key positions
 * (workers/writer/keyseq.h) cost a change, as the writer pays it: per
 * cycle, one workspace transaction that applies a changes frame to a
 * mirror, and one LMDB store transaction with the source's position
 * (ZX_STORE_NOMETASYNC, the writer's setting).  Two runs over the same keys and changes:
 *   plain  changes without _zx_seq: the mirror's upserts alone
 *   seq    changes with _zx_seq, in order as a source sends them: the
 *          table's mark (zx_ws_max_seq, once), the frame filtered
 *          (zx_keyseq_filter), the upserts (writing each row's _zx_seq),
 *          the tombstones stored; a change past the mark is not looked up
 *   replay the same, every change looked up in the rows (zx_ws_key_seqs),
 *          as the changes of a replay (older than the mark) are
 * The difference is the positions' cost.  Two key orders:
 *   ids    a growing integer id (inserts of new rows, then updates of
 *          recent ones)
 *   uuids  random UUID v4 text keys (updates spread over every key)
 * Each change carries two data columns besides its key; one change in
 * DELETE_EVERY is a delete (a tombstone each).  First KEYS rows are
 * loaded (not timed), then CYCLES cycles of CYCLE changes are timed.
 * The workspace is SQLite (a file under DIR, the writer's settings), or
 * Postgres when ZX_PG_DSN is set (a schema of its own, dropped at the end).
 *
 * Usage: keyseq_bench [KEYS [CYCLE [CYCLES [DIR]]]]
 *        (defaults 1000000 2000 100 /tmp)
 * Built by default; run by hand.  Not a test: it times things.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "common/rowset.h"
#include "proto/frame.h"
#include "store/store.h"
#include "workers/writer/keyseq.h"
#include "workers/writer/workspace.h"

#define DELETE_EVERY 50

static const char *const KEYS[] = {"id"};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng;
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
    zx_ws *ws;
    zx_store *st;
    zx_keyseq *ks;
    zx_rowset rs;
    uint8_t *skip;
    zx_keyseq_have *have;
    char *havebuf;
    size_t havelen, havecap;
    int with_seq;
    int lookup_all;          /* every change looked up, as a replay would be */
    double t, t_look, t_filter, t_apply;
} bench;

static void have_one(void *ctx, int64_t i, const char *s, size_t len)
{
    bench *b = ctx;
    if (b->havelen + len > b->havecap) {
        size_t c = (b->havelen + len) * 2;
        char *n = realloc(b->havebuf, c);
        if (!n)
            return;
        b->havebuf = n;
        b->havecap = c;
    }
    memcpy(b->havebuf + b->havelen, s, len);
    b->have[i].s = (const char *)(uintptr_t)(b->havelen + 1);
    b->have[i].len = len;
    b->havelen += len;
}

/* One cycle over keys ids[0..n) at position seq (dels: every
 * DELETE_EVERY-th change deletes). */
static int cycle(bench *b, int uuids, const uint64_t *ids, size_t n, uint64_t seq, int dels)
{
    char seqtxt[24], u[37], name[32];
    snprintf(seqtxt, sizeof(seqtxt), "%016llu", (unsigned long long)seq);
    zx_rowset_reset(&b->rs);
    zx_rowset_column(&b->rs, ZX_CH_OP, strlen(ZX_CH_OP), ZX_T_TEXT);
    zx_rowset_column(&b->rs, ZX_CH_SEQ, strlen(ZX_CH_SEQ), ZX_T_TEXT);
    zx_rowset_column(&b->rs, "id", 2, ZX_T_NULL);
    zx_rowset_column(&b->rs, "qty", 3, ZX_T_INT);
    zx_rowset_column(&b->rs, "name", 4, ZX_T_TEXT);
    for (size_t i = 0; i < n; i++) {
        int del = dels && i % DELETE_EVERY == DELETE_EVERY - 1;
        zx_rowset_begin_row(&b->rs);
        zx_value op = {.type = ZX_T_TEXT, .len = 6, .s = del ? "delete" : "update"};
        zx_rowset_add(&b->rs, 0, &op);
        if (b->with_seq) {
            zx_value sq = {.type = ZX_T_TEXT, .len = (uint32_t)strlen(seqtxt), .s = seqtxt};
            zx_rowset_add(&b->rs, 1, &sq);
        }
        zx_value k;
        if (uuids) {
            uuid_of(ids[i], u);
            k = (zx_value){.type = ZX_T_TEXT, .len = 36, .s = zx_rowset_strdup(&b->rs, u, 36)};
        } else {
            k = (zx_value){.type = ZX_T_INT, .u.i = (int64_t)ids[i]};
        }
        zx_rowset_add(&b->rs, 2, &k);
        if (!del) {
            zx_value q = {.type = ZX_T_INT, .u.i = (int64_t)(seq * 7 + i)};
            int nl = snprintf(name, sizeof(name), "item %llu", (unsigned long long)ids[i]);
            zx_value nm = {.type = ZX_T_TEXT, .len = (uint32_t)nl,
                           .s = zx_rowset_strdup(&b->rs, name, (size_t)nl)};
            zx_rowset_add(&b->rs, 3, &q);
            zx_rowset_add(&b->rs, 4, &nm);
        }
        zx_rowset_end_row(&b->rs);
    }
    char err[512];
    zx_ws_changes ch = {.pipeline = "bench", .table = "items", .key_cols = KEYS, .nkey_cols = 1};
    double t0 = now();
    if (zx_ws_begin(b->ws, err, sizeof(err)) < 0)
        goto fail;
    const zx_rowset *rs = &b->rs;
    if (b->with_seq) {
        /* as the writer does (writer_apply.c, drop_stale) */
        zx_store_txn *rt = NULL;
        if (zx_store_begin(b->st, 1, &rt) != 0)
            return -1;
        double l0 = now();
        if (!zx_keyseq_hwm_known(b->ks, "bench", "items")) {
            char *mx = NULL;
            size_t ml = 0;
            if (zx_ws_max_seq(b->ws, &ch, &mx, &ml, err, sizeof(err)) < 0 ||
                zx_keyseq_hwm_init(b->ks, rt, "bench", "items", mx, ml) < 0)
                goto fail;
            free(mx);
        }
        const zx_keyseq_have *have = NULL;
        if (b->lookup_all || zx_keyseq_needs_rows(b->ks, "bench", "items", rs)) {
            memset(b->have, 0, n * sizeof(*b->have));
            b->havelen = 0;
            if (zx_ws_key_seqs(b->ws, &ch, rs, have_one, b, err, sizeof(err)) < 0)
                goto fail;
            for (size_t i = 0; i < n; i++)
                if (b->have[i].len)
                    b->have[i].s = b->havebuf + ((uintptr_t)b->have[i].s - 1);
            have = b->have;
        }
        b->t_look += now() - l0;
        double f0 = now();
        long k = zx_keyseq_filter(b->ks, rt, "bench", "items", rs, KEYS, 1, have, b->skip);
        zx_store_abort(rt);
        b->t_filter += now() - f0;
        if (k != 0) {
            fprintf(stderr, "keyseq_bench: %ld changes skipped, none expected\n", k);
            return -1;
        }
    }
    zx_ws_result res;
    double a0 = now();
    if (zx_ws_apply_changes(b->ws, &ch, rs, &res, err, sizeof(err)) < 0)
        goto fail;
    zx_ws_result_free(&res);
    if (zx_ws_commit(b->ws, err, sizeof(err)) < 0)
        goto fail;
    b->t_apply += now() - a0;
    /* the store's transaction: the source's position, as every cycle of
     * a Kafka pipeline writes, and the tombstones */
    for (;;) {   /* as the writer does: a full map is grown, the commit redone */
        zx_store_txn *wt = NULL;
        int rc = zx_store_begin(b->st, 0, &wt);
        if (!rc)
            rc = zx_store_position_part_put(wt, "bench", "items/0", seqtxt, strlen(seqtxt), 1);
        if (!rc && b->with_seq)
            rc = zx_keyseq_store(b->ks, wt, 1);
        if (rc)
            zx_store_abort(wt);
        else
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
    b->t += now() - t0;
    return 0;
fail:
    fprintf(stderr, "keyseq_bench: %s\n", err);
    return -1;
}

static int run(const char *dir, int uuids, int with_seq, size_t nkeys, size_t csize,
               size_t ncycles, double *us)
{
    char path[512], db[600], err[512];
    snprintf(path, sizeof(path), "%s/zx_keyseq_bench_XXXXXX", dir);
    if (!mkdtemp(path)) {
        perror("mkdtemp");
        return -1;
    }
    bench b = {.with_seq = with_seq != 0, .lookup_all = with_seq == 2};
    const char *dsn = getenv("ZX_PG_DSN");
    char schema[64];
    snprintf(schema, sizeof(schema), "zx_keyseq_bench_%d", (int)getpid());
    if (dsn && *dsn) {
        b.ws = zx_ws_open_postgres(dsn, "bench", schema, "keyseq_bench", "bench", NULL, NULL,
                                   err, sizeof(err));
    } else {
        snprintf(db, sizeof(db), "%s/ws.db", path);
        b.ws = zx_ws_open_sqlite(db, "normal", 0, "bench", NULL, err, sizeof(err));
    }
    if (!b.ws || zx_store_open(path, ZX_STORE_NOMETASYNC, 0, &b.st, err, sizeof(err)) != 0) {
        fprintf(stderr, "keyseq_bench: %s\n", err);
        return -1;
    }
    b.ks = zx_keyseq_new();
    zx_rowset_init(&b.rs);
    size_t big = csize > 20000 ? csize : 20000;
    b.skip = malloc(big);
    b.have = calloc(big, sizeof(*b.have));
    uint64_t *ids = malloc(big * sizeof(*ids));
    if (!b.ks || !b.skip || !b.have || !ids)
        return -1;
    rng = 88172645463325252ull;   /* the same changes in both runs */
    uint64_t seq = 1;
    /* load: every key once, 20,000 a cycle */
    for (size_t at = 0; at < nkeys;) {
        size_t n = nkeys - at < 20000 ? nkeys - at : 20000;
        for (size_t i = 0; i < n; i++)
            ids[i] = at + i;
        if (cycle(&b, uuids, ids, n, seq++, 0) < 0)
            return -1;
        at += n;
    }
    b.t = b.t_look = b.t_filter = b.t_apply = 0;
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
        /* one key once a cycle: a key deleted and updated in one frame
         * would be applied one by one, which is not what is measured */
        for (size_t i = 0; i < csize; i++)
            for (size_t j = 0; j < i && uuids; j++)
                if (ids[j] == ids[i]) {
                    ids[i] = next() % nkeys;
                    j = (size_t)-1;
                }
        if (cycle(&b, uuids, ids, csize, seq++, 1) < 0)
            return -1;
    }
    double nch = (double)csize * (double)ncycles;
    *us = b.t / nch * 1e6;
    printf("  %-6s %-5s lookup %.2f  filter %.2f  apply+commit %.2f  store+rest %.2f µs\n",
           uuids ? "uuids" : "ids", with_seq == 2 ? "replay" : with_seq ? "seq" : "plain",
           b.t_look / nch * 1e6,
           b.t_filter / nch * 1e6, b.t_apply / nch * 1e6,
           (b.t - b.t_look - b.t_filter - b.t_apply) / nch * 1e6);
    zx_keyseq_free(b.ks);
    zx_rowset_free(&b.rs);
    zx_ws_close(b.ws);
    if (dsn && *dsn) {
        PGconn *c = PQconnectdb(dsn);
        char q[128];
        snprintf(q, sizeof(q), "DROP SCHEMA IF EXISTS %s CASCADE", schema);
        PQclear(PQexec(c, q));
        PQfinish(c);
    }
    zx_store_close(b.st);
    free(b.skip);
    free(b.have);
    free(b.havebuf);
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
    size_t ncycles = argc > 3 ? strtoul(argv[3], NULL, 10) : 100;
    const char *dir = argc > 4 ? argv[4] : "/tmp";
    if (!nkeys || !csize || csize > 100000 || csize > nkeys / 2 || !ncycles) {
        fprintf(stderr, "usage: keyseq_bench [KEYS [CYCLE (1..100000, at most KEYS/2) "
                        "[CYCLES [DIR]]]]\n");
        return 2;
    }
    const char *dsn = getenv("ZX_PG_DSN");
    printf("workspace %s, keys=%zu cycle=%zu cycles=%zu, one change in %d a delete\n",
           dsn && *dsn ? "postgres" : "sqlite", nkeys, csize, ncycles, DELETE_EVERY);
    for (int uuids = 0; uuids <= 1; uuids++) {
        double plain, seq, replay;
        if (run(dir, uuids, 0, nkeys, csize, ncycles, &plain) < 0 ||
            run(dir, uuids, 1, nkeys, csize, ncycles, &seq) < 0 ||
            run(dir, uuids, 2, nkeys, csize, ncycles, &replay) < 0)
            return 1;
        printf("%-6s plain %.2f µs  with positions %.2f µs: they cost %.2f µs a change "
               "in order, %.2f µs looked up (a replay)\n",
               uuids ? "uuids" : "ids", plain, seq, seq - plain, replay - plain);
    }
    return 0;
}
