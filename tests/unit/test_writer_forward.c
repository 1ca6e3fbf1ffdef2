/*
 * test_writer_forward.c — the writer's side of the forward journal
 * (workers/writer/writer_forward.c, "The forward journal" in writer_int.h)
 * on a real SQLite workspace: a frame that says "fw" is journaled with its
 * bytes and rows inside the open transaction, one that does not, a
 * row-hashes frame or a frame with no row is not; n is at least the time
 * in µs and grows past the journal's largest n when a pipeline is attached
 * again (a restart), past a rolled-back one (never given twice), past
 * that of another segment of the same name, and after the forwarder
 * deleted every row; a frame whose stale changes were left out is
 * journaled as applied (the rows of w->rs2, encoded again with the same
 * metadata).
 */
#include "workers/writer/writer_int.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/timefmt.h"

#include "tests/unit/check.h"

static char dir[256], path[300], err[512];
static sqlite3 *sq;       /* the test's own connection, to read the journal */

/* A frame for pipeline "p", table "t", kind, forward flag, with nrows rows
 * (column id = 1..nrows; a changes frame gets _zx_op and the key "id")
 * into out.  0 or -1. */
static int make_frame(uint32_t kind, int forward, uint32_t nrows, zx_buf *out)
{
    static const char *const keys[1] = { "id" };
    zx_rowset rs;
    zx_rowset_init(&rs);
    int64_t cid = zx_rowset_column(&rs, "id", 2, ZX_T_INT);
    int64_t cop = kind == ZX_FRAME_CHANGES ? zx_rowset_column(&rs, ZX_CH_OP, strlen(ZX_CH_OP),
                                                             ZX_T_TEXT) : 0;
    if (cid < 0 || cop < 0)
        return -1;
    for (uint32_t r = 0; r < nrows; r++) {
        zx_rowset_begin_row(&rs);
        zx_value id = { .type = ZX_T_INT, .u.i = (int64_t)r + 1 };
        zx_rowset_add(&rs, (uint32_t)cid, &id);
        if (kind == ZX_FRAME_CHANGES) {
            zx_value op = { .type = ZX_T_TEXT, .s = "insert", .len = 6 };
            zx_rowset_add(&rs, (uint32_t)cop, &op);
        }
        zx_rowset_end_row(&rs);
    }
    zx_frame_meta m = { .kind = kind, .pipeline = "p", .table = "t", .forward = forward,
                        .batch_id = "b1" };
    if (kind != ZX_FRAME_ROWS) {
        m.key_cols = keys;
        m.nkey_cols = 1;
    }
    zx_buf_reset(out);
    int rc = zx_frame_encode(&m, &rs, out);
    zx_rowset_free(&rs);
    return rc;
}

/* Decode data into w->rs and m, as the writer does before applying. */
static int decode(writer *w, const zx_buf *b, zx_frame_meta *m)
{
    char derr[256];
    int rc = zx_frame_decode(b->p, b->len, m, &w->rs, derr, sizeof(derr));
    if (rc < 0)
        printf("decode: %s\n", derr);
    return rc;
}

/* One query's first value as an unsigned number (0 when NULL or none). */
static uint64_t q_u64(const char *sql)
{
    sqlite3_stmt *st = NULL;
    uint64_t v = 0;
    if (sqlite3_prepare_v2(sq, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The frame journaled as number n of "p" into out, its nrows into *nrows:
 * 1 found, 0 not. */
static int journaled(uint64_t n, zx_buf *out, uint64_t *nrows)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(sq, "SELECT frame, nrows FROM _zx_forward WHERE pipeline = 'p'"
                           " AND n = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)n);
    if (sqlite3_step(st) == SQLITE_ROW) {
        size_t len = (size_t)sqlite3_column_bytes(st, 0);
        zx_buf_reset(out);
        if (zx_buf_reserve(out, len) == 0) {
            memcpy(out->p, sqlite3_column_blob(st, 0), len);
            out->len = len;
            found = 1;
        }
        *nrows = (uint64_t)sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return found;
}

/* Apply (only the journal part of it) the frame in b on pipe p, in a
 * transaction of its own that is committed (commit 1) or rolled back.
 * wr_forward's return. */
static int forward1(writer *w, wpipe *p, const zx_buf *b, uint64_t stale, int commit)
{
    zx_frame_meta m;
    if (decode(w, b, &m) < 0)
        return -9;
    applied a = { .p = p, .seq = 1, .stale = stale };
    if (stale) {
        /* drop_stale's result: the first row left out */
        zx_rowset_reset(&w->rs2);
        for (uint32_t c = 0; c < w->rs.ncols; c++)
            zx_rowset_column(&w->rs2, w->rs.cols[c].name, w->rs.cols[c].name_len,
                             w->rs.cols[c].type);
        for (uint32_t r = 1; r < w->rs.nrows; r++) {
            zx_rowset_begin_row(&w->rs2);
            for (uint64_t i = w->rs.row_start[r]; i < w->rs.row_start[r + 1]; i++)
                zx_rowset_add(&w->rs2, w->rs.cells[i].col, &w->rs.cells[i].v);
            zx_rowset_end_row(&w->rs2);
        }
    }
    if (zx_ws_begin(w->ws, err, sizeof(err)) < 0)
        return -9;
    int rc = wr_forward(w, p, &a, &m, b->p, b->len, err, sizeof(err));
    if (rc < 0)
        printf("wr_forward: %s\n", err);
    if (commit && rc == 0)
        CHECK(zx_ws_commit(w->ws, err, sizeof(err)) == 0);
    else
        zx_ws_rollback(w->ws);
    return rc;
}

static void attach(wpipe *p, const char *name)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->used = 1;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(dir, sizeof(dir), "/tmp/zx-test-wfw-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/ws.db", dir);
    writer *w = calloc(1, sizeof(*w));
    if (!w)
        return 1;
    zx_rowset_init(&w->rs);
    zx_rowset_init(&w->rs2);
    w->ws = zx_ws_open_sqlite(path, "normal", 0, "test", NULL, err, sizeof(err));
    CHECK(w->ws != NULL);
    if (!w->ws || sqlite3_open(path, &sq) != SQLITE_OK) {
        printf("open: %s\n", err);
        return 1;
    }
    zx_buf f = {0}, got = {0};
    uint64_t nrows = 0;
    wpipe *p = &w->pipes[0];
    attach(p, "p");

    /* not forwarded, a row-hashes frame, no rows: nothing journaled */
    CHECK(make_frame(ZX_FRAME_ROWS, 0, 3, &f) == 0);
    CHECK(forward1(w, p, &f, 0, 1) == 0);
    CHECK(make_frame(ZX_FRAME_HASHES, 1, 0, &f) == 0);
    CHECK(forward1(w, p, &f, 0, 1) == 0);
    CHECK(make_frame(ZX_FRAME_ROWS, 1, 0, &f) == 0);
    CHECK(forward1(w, p, &f, 0, 1) == 0);
    CHECK(q_u64("SELECT count(*) FROM _zx_forward") == 0);
    CHECK(!p->fw_loaded); /* the journal was not even read */

    /* a rows frame: its bytes and rows, n at least now in µs */
    uint64_t t0 = (uint64_t)zx_now_us();
    CHECK(make_frame(ZX_FRAME_ROWS, 1, 3, &f) == 0);
    CHECK(forward1(w, p, &f, 0, 1) == 0);
    uint64_t n1 = q_u64("SELECT max(n) FROM _zx_forward WHERE pipeline = 'p'");
    CHECK(n1 >= t0 && n1 == p->fw_last && p->fw_loaded);
    CHECK(journaled(n1, &got, &nrows) == 1 && nrows == 3 && got.len == f.len &&
          memcmp(got.p, f.p, f.len) == 0);

    /* the next ones: n grows */
    uint64_t prev = n1;
    for (int i = 0; i < 5; i++) {
        CHECK(forward1(w, p, &f, 0, 1) == 0);
        CHECK(p->fw_last > prev);
        prev = p->fw_last;
    }
    CHECK(q_u64("SELECT count(*) FROM _zx_forward") == 6);

    /* a rolled-back cycle: its n is not given again */
    CHECK(forward1(w, p, &f, 0, 0) == 0);
    uint64_t lost = p->fw_last;
    CHECK(lost > prev && q_u64("SELECT max(n) FROM _zx_forward") == prev);
    CHECK(forward1(w, p, &f, 0, 1) == 0);
    CHECK(p->fw_last > lost);
    prev = p->fw_last;

    /* a changes frame whose first change was stale: journaled as applied */
    CHECK(make_frame(ZX_FRAME_CHANGES, 1, 3, &f) == 0);
    CHECK(forward1(w, p, &f, 1, 1) == 0);
    CHECK(p->fw_last > prev);
    prev = p->fw_last;
    CHECK(journaled(prev, &got, &nrows) == 1 && nrows == 2);
    zx_frame_meta m;
    CHECK(decode(w, &got, &m) == 0);
    CHECK(m.kind == ZX_FRAME_CHANGES && m.forward && strcmp(m.table, "t") == 0 &&
          m.nkey_cols == 1 && strcmp(m.key_cols[0], "id") == 0 && m.batch_id &&
          strcmp(m.batch_id, "b1") == 0 && w->rs.nrows == 2);
    zx_value row[2];
    int64_t cid = zx_rowset_find_column(&w->rs, "id", 2);
    CHECK(cid >= 0 && w->rs.ncols == 2);
    if (cid >= 0 && w->rs.nrows == 2) {
        zx_rowset_row(&w->rs, 0, row);
        CHECK(row[cid].type == ZX_T_INT && row[cid].u.i == 2);
    }
    /* ... and unfiltered it is the frame's own bytes */
    CHECK(forward1(w, p, &f, 0, 1) == 0);
    CHECK(journaled(p->fw_last, &got, &nrows) == 1 && nrows == 3 && got.len == f.len &&
          memcmp(got.p, f.p, f.len) == 0);
    prev = p->fw_last;

    /* the forwarder deleted every row, the writer restarted: n still
     * grows (from the clock) past what it gave before */
    CHECK(sqlite3_exec(sq, "DELETE FROM _zx_forward", NULL, NULL, NULL) == SQLITE_OK);
    usleep(2000);
    attach(p, "p");
    CHECK(make_frame(ZX_FRAME_ROWS, 1, 1, &f) == 0);
    CHECK(forward1(w, p, &f, 0, 1) == 0);
    CHECK(p->fw_last > prev && q_u64("SELECT count(*) FROM _zx_forward") == 1);
    prev = p->fw_last;

    /* attached again (a writer restart): past the journal's largest n,
     * even one ahead of the clock */
    uint64_t ahead = prev + 3600ull * 1000000;
    CHECK(zx_ws_begin(w->ws, err, sizeof(err)) == 0);
    CHECK(zx_ws_forward_put(w->ws, "p", ahead, "x", 1, 1) == 0);
    CHECK(zx_ws_commit(w->ws, err, sizeof(err)) == 0);
    attach(p, "p");
    CHECK(forward1(w, p, &f, 0, 1) == 0);
    CHECK(p->fw_last == ahead + 1);

    /* another segment of the same name (the old one still draining) */
    wpipe *q = &w->pipes[1];
    attach(q, "p");
    CHECK(forward1(w, q, &f, 0, 1) == 0);
    CHECK(q->fw_last == ahead + 2);
    CHECK(forward1(w, p, &f, 0, 1) == 0);
    CHECK(p->fw_last == ahead + 3);
    q->used = 0;

    /* another pipeline has its own numbers */
    wpipe *o = &w->pipes[2];
    attach(o, "other");
    CHECK(forward1(w, o, &f, 0, 1) == 0);
    CHECK(q_u64("SELECT count(*) FROM _zx_forward WHERE pipeline = 'other'") == 1);

    zx_buf_free(&f);
    zx_buf_free(&got);
    zx_buf_free(&w->fwbuf);
    sqlite3_close(sq);
    zx_ws_close(w->ws);
    zx_rowset_free(&w->rs);
    zx_rowset_free(&w->rs2);
    free(w);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("could not remove %s\n", dir);
    if (failures) {
        printf("test_writer_forward: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_writer_forward: all checks passed\n");
    return 0;
}
