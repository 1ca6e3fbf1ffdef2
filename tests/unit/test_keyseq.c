/*
 * test_keyseq.c — the writer's per-key source positions
 * (workers/writer/keyseq.h) over a real LMDB store in a temporary folder,
 * with a model of the mirror's rows (what zx_ws_key_seqs would answer: a
 * key's row holds the position of the last change applied to it, a
 * delete removes it): an older change is skipped, an equal or newer one
 * applied, a row's position and a deleted key's tombstone both count, a
 * truncate hides what came before it, tombstones survive a commit and not
 * an abort, rows write nothing to the store, keys of other tables, types
 * or pipelines never meet, records of earlier versions are still read,
 * and tombstones go after their retention.  Must not depend on timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rowset.h"
#include "proto/frame.h"
#include "workers/writer/keyseq.h"
#include "store/store.h"

#include "tests/unit/check.h"

typedef struct change {
    const char *op, *seq;
    int text_key;            /* 1: the key is the text `key` */
    long long id;
    const char *key;
} change;

/* A changes frame of n changes: _zx_op, _zx_seq, id. */
static void frame(zx_rowset *rs, const change *c, size_t n)
{
    zx_rowset_reset(rs);
    zx_rowset_column(rs, ZX_CH_OP, strlen(ZX_CH_OP), ZX_T_TEXT);
    zx_rowset_column(rs, ZX_CH_SEQ, strlen(ZX_CH_SEQ), ZX_T_TEXT);
    zx_rowset_column(rs, "id", 2, ZX_T_NULL);
    for (size_t i = 0; i < n; i++) {
        zx_rowset_begin_row(rs);
        zx_value op = {.type = ZX_T_TEXT, .len = (uint32_t)strlen(c[i].op), .s = c[i].op};
        zx_value sq = {.type = ZX_T_TEXT, .len = (uint32_t)strlen(c[i].seq), .s = c[i].seq};
        zx_rowset_add(rs, 0, &op);
        zx_rowset_add(rs, 1, &sq);
        if (c[i].text_key) {
            zx_value k = {.type = ZX_T_TEXT, .len = (uint32_t)strlen(c[i].key), .s = c[i].key};
            zx_rowset_add(rs, 2, &k);
        } else if (strcmp(c[i].op, "truncate") != 0) {
            zx_value k = {.type = ZX_T_INT, .u.i = c[i].id};
            zx_rowset_add(rs, 2, &k);
        }
        zx_rowset_end_row(rs);
    }
}

static const char *const KEYS[] = {"id"};

/* The model of the mirrors' rows: (table, key as text) -> position. */
#define MROWS 64
typedef struct mrow {
    char table[8], key[256], seq[16];
    int used;
} mrow;
static mrow rows[MROWS], saved[MROWS];

static void key_text(const change *c, char *out, size_t len)
{
    if (c->text_key)
        snprintf(out, len, "t:%s", c->key);
    else
        snprintf(out, len, "i:%lld", c->id);
}

static mrow *row_of(const char *table, const char *key)
{
    for (int i = 0; i < MROWS; i++)
        if (rows[i].used && !strcmp(rows[i].table, table) && !strcmp(rows[i].key, key))
            return &rows[i];
    return NULL;
}

/* Apply the changes not skipped to the model, as the workspace would. */
static void apply(const char *table, const change *c, size_t n, const uint8_t *skip)
{
    for (size_t i = 0; i < n; i++) {
        if (skip[i])
            continue;
        if (!strcmp(c[i].op, "truncate")) {
            for (int j = 0; j < MROWS; j++)
                if (!strcmp(rows[j].table, table))
                    rows[j].used = 0;
            continue;
        }
        char k[256];
        key_text(&c[i], k, sizeof(k));
        mrow *r = row_of(table, k);
        if (!strcmp(c[i].op, "delete")) {
            if (r)
                r->used = 0;
            continue;
        }
        for (int j = 0; !r && j < MROWS; j++)
            if (!rows[j].used) {
                r = &rows[j];
                r->used = 1;
                snprintf(r->table, sizeof(r->table), "%s", table);
                snprintf(r->key, sizeof(r->key), "%s", k);
            }
        CHECK(r != NULL);
        if (r)
            snprintf(r->seq, sizeof(r->seq), "%s", c[i].seq);
    }
}

/* Filter n changes of table for pipeline (rows: 1 when the mirror's rows
 * are known, as from the workspace), then apply them to the model; the
 * skip flags as a string of 0/1, e.g. "010". */
static const char *run_rows(zx_store *st, zx_keyseq *ks, const char *pipeline,
                            const char *table, const change *c, size_t n, int with_rows)
{
    static char out[64];
    zx_rowset rs;
    zx_rowset_init(&rs);
    frame(&rs, c, n);
    uint8_t skip[64];
    zx_keyseq_have have[64];
    memset(have, 0, sizeof(have));
    for (size_t i = 0; i < n && with_rows; i++) {
        char k[256];
        key_text(&c[i], k, sizeof(k));
        const mrow *r = strcmp(c[i].op, "truncate") ? row_of(table, k) : NULL;
        if (r) {
            have[i].s = r->seq;
            have[i].len = strlen(r->seq);
        }
    }
    zx_store_txn *rt = NULL;
    CHECK(zx_store_begin(st, 1, &rt) == 0);
    long k = zx_keyseq_filter(ks, rt, pipeline, table, &rs, KEYS, 1, have, skip);
    zx_store_abort(rt);
    long ones = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = skip[i] ? '1' : '0';
        ones += skip[i];
    }
    out[n] = '\0';
    CHECK(k == ones);
    if (with_rows)
        apply(table, c, n, skip);
    zx_rowset_free(&rs);
    return out;
}

static const char *run(zx_store *st, zx_keyseq *ks, const char *pipeline, const char *table,
                       const change *c, size_t n)
{
    return run_rows(st, ks, pipeline, table, c, n, 1);
}

/* Store the cycle's entries (written at now_us) and commit, or abort
 * (the model's rows roll back too). */
static void end_cycle_at(zx_store *st, zx_keyseq *ks, int commit, int64_t now_us)
{
    zx_store_txn *t = NULL;
    CHECK(zx_store_begin(st, 0, &t) == 0);
    CHECK(zx_keyseq_store(ks, t, now_us) == 0);
    if (commit) {
        CHECK(zx_store_commit(t) == 0);
        memcpy(saved, rows, sizeof(rows));
    } else {
        zx_store_abort(t);
        memcpy(rows, saved, sizeof(rows));
    }
    zx_keyseq_clear(ks);
}

static void end_cycle(zx_store *st, zx_keyseq *ks, int commit)
{
    end_cycle_at(st, ks, commit, 1000000);
}

/* Sweep pipeline's tombstones older than before_us, max_scan at a time
 * until a whole pass is done; how many went. */
static uint64_t prune(zx_store *st, zx_keyseq *ks, const char *pipeline, int64_t before_us,
                      size_t max_scan, int calls)
{
    uint64_t removed = 0;
    for (int i = 0; i < calls; i++) {
        zx_store_txn *t = NULL;
        CHECK(zx_store_begin(st, 0, &t) == 0);
        CHECK(zx_keyseq_prune(ks, t, pipeline, before_us, max_scan, &removed) == 0);
        CHECK(zx_store_commit(t) == 0);
    }
    return removed;
}

static int has_state(zx_store *st, const char *pipeline, const char *name)
{
    zx_store_txn *t = NULL;
    const void *v;
    size_t len;
    CHECK(zx_store_begin(st, 1, &t) == 0);
    int rc = zx_store_state_get(t, pipeline, name, &v, &len);
    zx_store_abort(t);
    return rc == 0;
}

int main(void)
{
    char dir[] = "/tmp/zx_test_keyseq_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    zx_store *st = NULL;
    char err[256];
    CHECK(zx_store_open(dir, ZX_STORE_NOMETASYNC, 0, &st, err, sizeof(err)) == 0);
    zx_keyseq *ks = zx_keyseq_new();
    CHECK(ks != NULL);
    if (!st || !ks)
        return 1;

    /* within one frame: older skipped, equal applied (one transaction) */
    const change a[] = {{"insert", "0005", 0, 1, NULL}, {"update", "0007", 0, 1, NULL},
                        {"update", "0006", 0, 1, NULL}, {"update", "0007", 0, 1, NULL},
                        {"insert", "0003", 0, 2, NULL}};
    CHECK(!strcmp(run(st, ks, "p", "t", a, 5), "00100"));
    /* rows alone write nothing to the store */
    CHECK(zx_keyseq_count(ks) == 0);
    /* a later frame of the same cycle sees the cycle's positions */
    const change b[] = {{"delete", "0006", 0, 1, NULL}, {"delete", "0008", 0, 1, NULL},
                        {"update", "0001", 0, 2, NULL}};
    CHECK(!strcmp(run(st, ks, "p", "t", b, 3), "101"));
    CHECK(zx_keyseq_count(ks) == 1);   /* id 1's tombstone */
    /* aborted: nothing stored, the rows rolled back */
    end_cycle(st, ks, 0);
    CHECK(!has_state(st, "p", "dks:t:018000000000000001"));
    CHECK(!strcmp(run(st, ks, "p", "t", b, 3), "000"));
    end_cycle(st, ks, 1);
    /* committed: id 1 deleted at 0008 (a tombstone), id 2's row at 0001 */
    CHECK(has_state(st, "p", "dks:t:018000000000000001"));
    CHECK(!has_state(st, "p", "ks:t:018000000000000001"));
    CHECK(!has_state(st, "p", "ks:t:018000000000000002"));
    CHECK(!has_state(st, "p", "dks:t:018000000000000002"));
    /* a replay after a restart is skipped: id 1 by its tombstone */
    zx_keyseq_free(ks);
    ks = zx_keyseq_new();
    CHECK(!strcmp(run(st, ks, "p", "t", a, 5), "11110"));
    CHECK(!strcmp(run(st, ks, "p", "t", b, 3), "101"));   /* id 2 now at 0003 */
    end_cycle(st, ks, 1);
    /* a row's own position counts after a restart: id 2's row at 0003 */
    zx_keyseq_free(ks);
    ks = zx_keyseq_new();
    const change two[] = {{"update", "0002", 0, 2, NULL}, {"update", "0003", 0, 2, NULL}};
    CHECK(!strcmp(run(st, ks, "p", "t", two, 2), "10"));
    /* ... and without the row's answer (another table's rows) nothing
     * stops it: the store holds no position of a key with a row */
    CHECK(!strcmp(run_rows(st, ks, "p", "t2", two, 2, 0), "00"));
    /* other tables and pipelines do not meet a tombstone */
    CHECK(!strcmp(run_rows(st, ks, "p", "u", a, 5, 0), "00100"));
    CHECK(!strcmp(run_rows(st, ks, "q", "t", a, 5, 0), "00100"));
    end_cycle(st, ks, 1);
    /* a text key "1" is not the integer 1 */
    const change tk[] = {{"insert", "0001", 1, 0, "1"}};
    CHECK(!strcmp(run(st, ks, "p", "t", tk, 1), "0"));
    end_cycle(st, ks, 1);
    /* a truncate hides what came before it, in the frame and after */
    const change tr[] = {{"insert", "0100", 0, 5, NULL}, {"truncate", "0200", 0, 0, NULL},
                         {"insert", "0150", 0, 6, NULL}, {"insert", "0200", 0, 6, NULL},
                         {"insert", "0300", 0, 7, NULL}};
    CHECK(!strcmp(run(st, ks, "p", "t", tr, 5), "00100"));
    end_cycle(st, ks, 1);
    const change after[] = {{"insert", "0199", 0, 9, NULL}, {"insert", "0201", 0, 9, NULL}};
    CHECK(!strcmp(run(st, ks, "p", "t", after, 2), "10"));
    end_cycle(st, ks, 1);
    CHECK(has_state(st, "p", "kt:t"));

    /* tombstone names: integers in numeric order (the sign bit flipped),
     * readable by table; a text key by its tag, length and bytes; a long
     * key by its hash */
    const change dels[] = {{"delete", "1000", 0, -2, NULL}, {"delete", "1000", 1, 0, "1"}};
    CHECK(!strcmp(run(st, ks, "p", "t", dels, 2), "00"));
    char longkey[200];
    memset(longkey, 'x', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    const change lk[] = {{"insert", "1000", 1, 0, longkey}, {"insert", "0999", 1, 0, longkey}};
    CHECK(!strcmp(run(st, ks, "p", "t", lk, 2), "01"));
    end_cycle(st, ks, 1);
    CHECK(has_state(st, "p", "dks:t:017ffffffffffffffe"));
    CHECK(has_state(st, "p", "dks:t:040000000131"));   /* text "1": tag, length 1, '1' */
    /* the long key's row: an older change skipped after the cycle */
    const change lk2[] = {{"insert", "0998", 1, 0, longkey}, {"delete", "1001", 1, 0, longkey}};
    CHECK(!strcmp(run(st, ks, "p", "t", lk2, 2), "10"));
    end_cycle(st, ks, 1);
    const change lk3[] = {{"insert", "1000", 1, 0, longkey}};
    CHECK(!strcmp(run(st, ks, "p", "t", lk3, 1), "1"));   /* by its "dkh:" tombstone */
    end_cycle(st, ks, 1);

    /* records of earlier versions (the bare position under the key's
     * name) are still read when neither a row nor a tombstone answers */
    zx_store_txn *wt = NULL;
    CHECK(zx_store_begin(st, 0, &wt) == 0);
    CHECK(zx_store_state_put(wt, "p", "ks:t:01800000000000002a", "0500", 4) == 0);
    CHECK(zx_store_commit(wt) == 0);
    const change old[] = {{"insert", "0400", 0, 42, NULL}, {"insert", "0600", 0, 42, NULL},
                          {"update", "0550", 0, 42, NULL}};
    CHECK(!strcmp(run(st, ks, "p", "t", old, 3), "101"));
    end_cycle(st, ks, 1);

    /* retention: tombstones written at 1 s go when the sweep's limit is
     * past them, not before; a sweep of one record at a time goes on where
     * the last stopped */
    CHECK(prune(st, ks, "p", 1000000, 1000, 1) == 0);     /* written at exactly 1 s */
    CHECK(prune(st, ks, "q", 2000000, 1000, 1) == 0);     /* another pipeline's */
    CHECK(has_state(st, "p", "dks:t:018000000000000001"));
    const change late[] = {{"delete", "2000", 0, 77, NULL}};
    CHECK(!strcmp(run(st, ks, "p", "t", late, 1), "0"));
    end_cycle_at(st, ks, 1, 5000000);                        /* written at 5 s */
    const change back[] = {{"insert", "0500", 0, -2, NULL}};
    CHECK(!strcmp(run(st, ks, "p", "t", back, 1), "1"));     /* id -2 deleted at 1000 */
    zx_keyseq_clear(ks);
    /* four at 1 s: ids 1, -2, text "1", the long key; one at 5 s */
    CHECK(prune(st, ks, "p", 2000000, 1, 8) == 4);
    CHECK(!has_state(st, "p", "dks:t:018000000000000001"));
    CHECK(!has_state(st, "p", "dks:t:040000000131"));
    CHECK(has_state(st, "p", "dks:t:01800000000000004d"));
    CHECK(has_state(st, "p", "kt:t"));                        /* not a tombstone */
    CHECK(has_state(st, "p", "ks:t:01800000000000002a"));    /* nor an old record */
    CHECK(prune(st, ks, "p", 6000000, 1000, 1) == 1);
    CHECK(!has_state(st, "p", "dks:t:01800000000000004d"));
    /* id -2's tombstone (at 1000) gone: a replay of an older change
     * brings the row back (what the retention means) */
    CHECK(!strcmp(run(st, ks, "p", "t", back, 1), "0"));
    zx_keyseq_clear(ks);

    zx_keyseq_free(ks);
    zx_store_close(st);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("test_keyseq: all checks passed\n");
    return failures != 0;
}
