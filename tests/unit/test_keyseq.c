/*
 * test_keyseq.c — the writer's per-key source positions
 * (workers/writer/keyseq.h) over a real LMDB store in a temporary folder:
 * an older change is skipped, an equal or newer one applied, a truncate
 * hides what came before it, positions survive a commit and not an
 * abort, keys of other tables, types or pipelines never meet, and the
 * record names follow the keys' order.  Must not depend on timing.
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

/* Filter n changes of table for pipeline; the skip flags as a string of
 * 0/1, e.g. "010". */
static const char *run(zx_store *st, zx_keyseq *ks, const char *pipeline, const char *table,
                       const change *c, size_t n)
{
    static char out[64];
    zx_rowset rs;
    zx_rowset_init(&rs);
    frame(&rs, c, n);
    uint8_t skip[64];
    zx_store_txn *rt = NULL;
    CHECK(zx_store_begin(st, 1, &rt) == 0);
    long k = zx_keyseq_filter(ks, rt, pipeline, table, &rs, KEYS, 1, skip);
    zx_store_abort(rt);
    long ones = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = skip[i] ? '1' : '0';
        ones += skip[i];
    }
    out[n] = '\0';
    CHECK(k == ones);
    zx_rowset_free(&rs);
    return out;
}

/* Store the cycle's entries and commit (or abort). */
static void end_cycle(zx_store *st, zx_keyseq *ks, int commit)
{
    zx_store_txn *t = NULL;
    CHECK(zx_store_begin(st, 0, &t) == 0);
    CHECK(zx_keyseq_store(ks, t) == 0);
    if (commit)
        CHECK(zx_store_commit(t) == 0);
    else
        zx_store_abort(t);
    zx_keyseq_clear(ks);
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
    /* a later frame of the same cycle sees the cycle's positions */
    const change b[] = {{"delete", "0006", 0, 1, NULL}, {"delete", "0008", 0, 1, NULL},
                        {"update", "0001", 0, 2, NULL}};
    CHECK(!strcmp(run(st, ks, "p", "t", b, 3), "101"));
    /* aborted: nothing stored */
    end_cycle(st, ks, 0);
    CHECK(!strcmp(run(st, ks, "p", "t", b, 3), "000"));
    end_cycle(st, ks, 1);
    /* committed: a replay after a restart is skipped */
    zx_keyseq_free(ks);
    ks = zx_keyseq_new();
    /* stored: id 1 at 0008, id 2 at 0001 */
    CHECK(!strcmp(run(st, ks, "p", "t", a, 5), "11110"));
    CHECK(!strcmp(run(st, ks, "p", "t", b, 3), "101"));   /* id 2 now at 0003 */
    /* other tables and pipelines do not meet */
    CHECK(!strcmp(run(st, ks, "p", "u", a, 5), "00100"));
    CHECK(!strcmp(run(st, ks, "q", "t", a, 5), "00100"));
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

    /* record names: integers in numeric order (the sign bit flipped),
     * readable by table; a long text key by its hash */
    CHECK(has_state(st, "p", "ks:t:018000000000000001"));
    CHECK(has_state(st, "p", "ks:u:018000000000000001"));
    CHECK(has_state(st, "p", "ks:t:040000000131"));   /* text "1": tag, length 1, '1' */
    const change neg[] = {{"insert", "1000", 0, -2, NULL}};
    CHECK(!strcmp(run(st, ks, "p", "t", neg, 1), "0"));
    char longkey[200];
    memset(longkey, 'x', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    const change lk[] = {{"insert", "1000", 1, 0, longkey}, {"insert", "0999", 1, 0, longkey}};
    CHECK(!strcmp(run(st, ks, "p", "t", lk, 2), "01"));
    end_cycle(st, ks, 1);
    CHECK(has_state(st, "p", "ks:t:017ffffffffffffffe"));
    /* the long key went by its hash ("kh:t:" and 32 hex digits) */
    const change lk2[] = {{"insert", "0998", 1, 0, longkey}};
    CHECK(!strcmp(run(st, ks, "p", "t", lk2, 1), "1"));
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
