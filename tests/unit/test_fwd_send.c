/*
 * test_fwd_send.c — journal frames as destination runs
 * (workers/forward/fwd_send.h), through a fake destination that writes
 * down every call: consecutive frames of one table and key make one run
 * with the union of their columns; appended rows are writes (op c);
 * mirror changes keep their order, updates answer row_seen 1, deletes go
 * to delete_keys, a key move is a delete of the old key then a new row,
 * truncates are skipped; reserved columns are never published; a
 * destination error leaves *done at the last committed run; a frame that
 * does not decode is passed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define CHECK_STR(got, want)                                                   \
    do {                                                                       \
        CHECK(strcmp((got), (want)) == 0);                                     \
        if (strcmp((got), (want)))                                             \
            printf("got:\n%s\nwant:\n%s\n", (got), (want));                    \
    } while (0)
#include "common/buf.h"
#include "proto/frame.h"
#include "workers/forward/fwd_send.h"

static char calls[4096];
static const zx_dest_run *cur;
static int fail_commit_at = -1, commits;

static void say(const char *fmt, const char *a)
{
    size_t l = strlen(calls);
    snprintf(calls + l, sizeof(calls) - l, fmt, a);
}

static void cell(const zx_value *v)
{
    char b[64];
    if (v->type == ZX_T_INT)
        snprintf(b, sizeof(b), "%lld", (long long)v->u.i);
    else if (v->type == ZX_T_TEXT)
        snprintf(b, sizeof(b), "%.*s", (int)v->len, v->s);
    else
        snprintf(b, sizeof(b), "-");
    say("%s", b);
}

static int f_begin(void *st, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                   size_t errlen)
{
    (void)st; (void)stats; (void)err; (void)errlen;
    cur = run;
    char b[64];
    snprintf(b, sizeof(b), "begin %s [", run->mode == ZX_MODE_MIRROR ? "mirror" : "append");
    say("%s", b);
    for (size_t i = 0; i < run->ncols; i++)
        say(i ? ",%s" : "%s", run->cols[i].name);
    say("%s", "] key [");
    for (size_t i = 0; i < run->nkey_cols; i++)
        say(i ? ",%s" : "%s", run->key_cols[i]);
    say("%s", "]\n");
    return 0;
}

static void rows(const zx_rowset *rs, int seen)
{
    zx_value v[16];
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, v);
        say("%s", " (");
        for (uint32_t c = 0; c < rs->ncols; c++) {
            if (c)
                say("%s", ",");
            cell(&v[c]);
        }
        say("%s", seen && cur->row_seen(cur->failed_ctx, r) ? ")u" : ")");
    }
    say("%s", "\n");
}

static int f_write(void *st, const zx_rowset *rs, char *err, size_t errlen)
{
    (void)st; (void)err; (void)errlen;
    say("%s", "write");
    rows(rs, 1);
    return 0;
}

static int f_delete(void *st, const zx_rowset *keys, char *err, size_t errlen)
{
    (void)st; (void)err; (void)errlen;
    say("%s", "delete");
    rows(keys, 0);
    return 0;
}

static int f_commit(void *st, char *err, size_t errlen)
{
    (void)st;
    if (commits++ == fail_commit_at) {
        snprintf(err, errlen, "brokers away");
        return -1;
    }
    say("%s", "commit\n");
    return 0;
}

static void f_abort(void *st) { (void)st; say("%s", "abort\n"); }
static void f_close(void *st) { (void)st; }

static const zx_dest fake = {.name = "fake", .caps = ZX_DEST_DELETES, .begin = f_begin,
                             .write = f_write, .delete_keys = f_delete, .commit = f_commit,
                             .abort = f_abort, .close = f_close};

static zx_value num(long long i) { return (zx_value){.type = ZX_T_INT, .u.i = i}; }

/* A frame: kind, table, cols (names, "" ends), rows of values. */
static zx_fwdj_entry frame(uint64_t n, uint32_t kind, const char *table, const char **cols,
                           size_t ncols, const zx_value *vals, size_t nrows, int with_key)
{
    zx_rowset rs;
    zx_rowset_init(&rs);
    for (size_t c = 0; c < ncols; c++)
        CHECK(zx_rowset_column(&rs, cols[c], strlen(cols[c]), ZX_T_NULL) >= 0);
    for (size_t r = 0; r < nrows; r++) {
        CHECK(zx_rowset_begin_row(&rs) == 0);
        for (size_t c = 0; c < ncols; c++) {
            zx_value v = vals[r * ncols + c];
            if (v.type == ZX_T_TEXT)
                v.s = zx_rowset_strdup(&rs, v.s, v.len);
            if (v.type != ZX_T_NULL)
                CHECK(zx_rowset_add(&rs, (uint32_t)c, &v) == 0);
        }
        zx_rowset_end_row(&rs);
    }
    const char *key[] = {"id"};
    zx_frame_meta m = {.kind = kind, .pipeline = "p", .table = table, .forward = 1,
                       .key_cols = with_key ? key : NULL, .nkey_cols = with_key ? 1 : 0};
    zx_buf b;
    zx_buf_init(&b);
    CHECK(zx_frame_encode(&m, &rs, &b) == 0);
    zx_rowset_free(&rs);
    return (zx_fwdj_entry){n, (unsigned char *)b.p, b.len};
}

#define T(lit) ((zx_value){.type = ZX_T_TEXT, .len = sizeof(lit) - 1, .s = lit})
#define N ((zx_value){.type = ZX_T_NULL})

static void appended_rows_make_one_run(void)
{
    const char *c1[] = {"id", "page"}, *c2[] = {"id", "ms"};
    zx_value v1[] = {num(1), T("/a"), num(2), T("/b")};
    zx_value v2[] = {num(3), num(7)};
    zx_fwdj_entry e[3] = {frame(10, ZX_FRAME_ROWS, "clicks", c1, 2, v1, 2, 0),
                          frame(11, ZX_FRAME_ROWS, "clicks", c2, 2, v2, 1, 0),
                          {12, (unsigned char *)strdup("not a frame"), 11}};
    zx_fwd_out o = {.ops = &fake, .pipeline = "p"};
    uint64_t done = 0;
    char err[200];
    calls[0] = '\0';
    CHECK(zx_fwd_publish(&o, e, 3, &done, err, sizeof(err)) == 0);
    CHECK_STR(calls, "begin append [id,page,ms] key []\n"
                     "write (1,/a,-) (2,/b,-)\n"
                     "write (3,-,7)\n"
                     "commit\n");
    CHECK(done == 12 && o.frames == 2 && o.bad_frames == 1 && o.runs == 1);
    for (int i = 0; i < 3; i++)
        free(e[i].frame);
}

static void changes_keep_their_order(void)
{
    const char *c[] = {"_zx_op", "_zx_lsn", "id", "v", "_zx_old:id"};
    zx_value v[] = {
        T("insert"), T("0/1"), num(1), T("a"), N,
        T("update"), T("0/2"), num(1), T("b"), N,
        T("delete"), T("0/3"), num(2), N, N,
        T("update"), T("0/4"), num(9), T("c"), num(1),   /* 1 moved to 9 */
        T("truncate"), T("0/5"), N, N, N,
        T("insert"), T("0/6"), num(3), T("d"), N,
    };
    zx_fwdj_entry e[2] = {frame(20, ZX_FRAME_CHANGES, "orders", c, 5, v, 6, 1),
                          frame(21, ZX_FRAME_ROWS, "other", c + 2, 2, v + 2, 1, 0)};
    zx_fwd_out o = {.ops = &fake, .pipeline = "p"};
    uint64_t done = 0;
    char err[200];
    calls[0] = '\0';
    commits = 0;
    CHECK(zx_fwd_publish(&o, e, 2, &done, err, sizeof(err)) == 0);
    CHECK_STR(calls, "begin mirror [id,v] key [id]\n"
                     "write (1,a) (1,b)u\n"
                     "delete (2) (1)\n"
                     "write (9,c)\n"
                     "write (3,d)\n"
                     "commit\n"
                     "begin append [id,v] key []\n"
                     "write (1,a)\n"
                     "commit\n");
    CHECK(done == 21 && o.skipped == 1 && o.runs == 2);
    /* the second run's commit fails: done stays at the first's */
    calls[0] = '\0';
    commits = 0;
    fail_commit_at = 1;
    CHECK(zx_fwd_publish(&o, e, 2, &done, err, sizeof(err)) == -1);
    CHECK(done == 20);
    CHECK(strstr(err, "brokers away") != NULL);
    CHECK(strstr(calls, "abort\n") != NULL);
    fail_commit_at = -1;
    for (int i = 0; i < 2; i++)
        free(e[i].frame);
}

int main(void)
{
    appended_rows_make_one_run();
    changes_keep_their_order();
    if (!failures)
        printf("fwd_send: ok\n");
    return failures != 0;
}
