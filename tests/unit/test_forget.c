/*
 * test_forget.c — the writer's drop of a removed pipeline's state
 * (workers/writer/forget.h) on a real LMDB store and SQLite workspace, and
 * on the Postgres workspace too when ZX_PG_DSN is set (a schema of its own
 * in that database, dropped at the end): a request waits while the
 * pipeline's segment is still detaching, drops the positions, the
 * parked frames and the forward journal of that pipeline only (workspace
 * and store) once it is gone, so that a pipeline added again under its
 * name replays and forwards none of the old one's changes, is refused when a pipeline of that name is
 * attached again, and a bad message is never queued.
 */
#include "workers/writer/forget.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/unit/check.h"

static char dir[256];
static int attached_state;          /* what forget_state answers */
static char events[1024];

static int state_cb(void *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return attached_state;
}

static void emit_cb(void *ctx, void *ev)
{
    (void)ctx;
    json_t *o = ev;
    size_t n = strlen(events);
    snprintf(events + n, sizeof(events) - n, "%s:%s ",
             json_string_value(json_object_get(o, "event")),
             json_string_value(json_object_get(o, "pipeline")));
    json_decref(o);
}

static int count_cb(const char *pipeline, const char *part, const void *val, size_t len,
                    void *ctx)
{
    (void)part;
    (void)val;
    (void)len;
    char *seen = ctx;
    size_t n = strlen(seen);
    snprintf(seen + n, 256 - n, "%s ", pipeline);
    return 0;
}

static int has_position(zx_store *st, const char *name)
{
    zx_store_txn *t;
    if (zx_store_begin(st, 1, &t) != 0)
        return -1;
    zx_position p;
    int rc = zx_store_position_get(t, name, &p);
    zx_store_abort(t);
    return rc == 0;
}

static int parked_cb(const char *pipeline, const char *table, uint64_t count, uint64_t rows,
                     uint64_t bytes, uint64_t last_n, void *ctx)
{
    (void)rows;
    (void)bytes;
    (void)last_n;
    char *seen = ctx;
    size_t n = strlen(seen);
    snprintf(seen + n, 256 - n, "%s.%s:%llu ", pipeline, table, (unsigned long long)count);
    return 0;
}

static void put_state(zx_store *st, zx_ws *w, const char *name)
{
    char err[256];
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_position_set(w, name, "t:0", "42", 2, 1) == 0);
    /* two changes frames its mirror table refused, parked */
    CHECK(zx_ws_park_put(w, name, "bad", 1, 3, "frame-1", 7, "refused", 1) == 0);
    CHECK(zx_ws_park_put(w, name, "bad", 2, 1, "frame-2", 7, "refused", 2) == 0);
    /* a frame it applied, not forwarded yet */
    CHECK(zx_ws_forward_put(w, name, 1780000000000000ull, "frame-0", 7, 2) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    zx_store_txn *t;
    CHECK(zx_store_begin(st, 0, &t) == 0);
    zx_position p = {7, 1000, NULL, 0};
    CHECK(zx_store_position_put(t, name, &p) == 0);
    CHECK(zx_store_position_part_put(t, name, "t:0", "42", 2, 1000) == 0);
    CHECK(zx_store_counter_add(t, name, "rows", 3) == 0);
    CHECK(zx_store_commit(t) == 0);
}

/* The whole story on workspace w and store st. */
static void suite(zx_store *st, zx_ws *w)
{
    events[0] = '\0';
    put_state(st, w, "gone");
    put_state(st, w, "stays");

    zx_forget f = {0};
    zx_forget_add(&f, "not json");
    zx_forget_add(&f, "{\"name\": 3}");
    zx_forget_add(&f, "{}");
    CHECK(f.n == 0);

    /* still detaching: waits, drops nothing */
    zx_forget_add(&f, "{\"name\": \"gone\"}");
    CHECK(f.n == 1);
    attached_state = 2;
    CHECK(zx_forget_run(&f, st, w, state_cb, emit_cb, NULL) == 1);
    CHECK(has_position(st, "gone") == 1);
    CHECK(events[0] == '\0');

    /* gone: its state only is dropped, in both places */
    attached_state = 0;
    CHECK(zx_forget_run(&f, st, w, state_cb, emit_cb, NULL) == 0);
    CHECK(strcmp(events, "state_dropped:gone ") == 0);
    CHECK(has_position(st, "gone") == 0);
    CHECK(has_position(st, "stays") == 1);
    char seen[256] = "";
    CHECK(zx_ws_positions_each(w, count_cb, seen) == 0);
    CHECK(strcmp(seen, "stays ") == 0);
    /* its parked frames went in the same drop: a pipeline added again as
     * "gone" finds none to replay; those of "stays" are kept */
    seen[0] = '\0';
    CHECK(zx_ws_parked_each(w, parked_cb, seen) == 0);
    CHECK(strcmp(seen, "stays.bad:2 ") == 0);
    uint64_t pn = 0;
    void *frame = NULL;
    size_t flen = 0;
    CHECK(zx_ws_park_first(w, "gone", "bad", &pn, &frame, &flen) == 0);
    free(frame);
    frame = NULL;
    CHECK(zx_ws_park_first(w, "stays", "bad", &pn, &frame, &flen) == 1 && pn == 1 &&
          flen == 7 && frame && memcmp(frame, "frame-1", 7) == 0);
    free(frame);
    /* so did its forward journal: nothing of the old pipeline is forwarded */
    uint64_t fn = 1;
    CHECK(zx_ws_forward_last(w, "gone", &fn) == 0 && fn == 0);
    CHECK(zx_ws_forward_last(w, "stays", &fn) == 0 && fn == 1780000000000000ull);
    zx_store_txn *t;
    uint64_t rows = 99;
    CHECK(zx_store_begin(st, 1, &t) == 0);
    CHECK(zx_store_counter_get(t, "gone", "rows", &rows) != 0 || rows == 0);
    zx_store_abort(t);

    /* attached again: kept */
    events[0] = '\0';
    zx_forget_add(&f, "{\"name\": \"stays\"}");
    attached_state = 1;
    CHECK(zx_forget_run(&f, st, w, state_cb, emit_cb, NULL) == 0);
    CHECK(strcmp(events, "state_kept:stays ") == 0);
    CHECK(has_position(st, "stays") == 1);

    /* a full queue refuses more */
    for (int i = 0; i < ZX_FORGET_MAX + 3; i++)
        zx_forget_add(&f, "{\"name\": \"x\"}");
    CHECK(f.n == ZX_FORGET_MAX);

    /* what is left for the next suite: nothing of "stays" */
    attached_state = 0;
    f.n = 0;
    zx_forget_add(&f, "{\"name\": \"stays\"}");
    CHECK(zx_forget_run(&f, st, w, state_cb, emit_cb, NULL) == 0);
}

/* The suite on the Postgres workspace of ZX_PG_DSN, in a schema of its
 * own (dropped afterwards); says so when it is not set. */
static void pg_suite(zx_store *st)
{
    const char *dsn = getenv("ZX_PG_DSN");
    if (!dsn || !*dsn) {
        printf("test_forget: postgres: NOT RUN: ZX_PG_DSN is not set\n");
        return;
    }
    char schema[64], err[256], q[160];
    snprintf(schema, sizeof(schema), "zxu_forget_%d", (int)getpid());
    zx_ws *w = zx_ws_open_postgres(dsn, "test-dsn", schema, "zx-test-forget", "test", NULL, NULL, err,
                                   sizeof(err));
    CHECK(w != NULL);
    if (!w) {
        printf("test_forget: postgres: %s\n", err);
        return;
    }
    suite(st, w);
    zx_ws_close(w);
    PGconn *c = PQconnectdb(dsn);
    snprintf(q, sizeof(q), "SET client_min_messages = warning; DROP SCHEMA IF EXISTS \"%s\" "
             "CASCADE", schema);
    PGresult *r = PQstatus(c) == CONNECTION_OK ? PQexec(c, q) : NULL;
    CHECK(r && PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(c);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/zx-test-forget-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char err[256], path[512];
    zx_store *st = NULL;
    CHECK(zx_store_open(dir, 0, 0, &st, err, sizeof(err)) == 0);
    snprintf(path, sizeof(path), "%s/ws.db", dir);
    zx_ws *w = zx_ws_open_sqlite(path, "normal", 0, "test", NULL, err, sizeof(err));
    CHECK(w != NULL);
    if (!st || !w)
        return 1;
    suite(st, w);
    zx_ws_close(w);
    pg_suite(st);
    zx_store_close(st);
    unlink(path);
    snprintf(path, sizeof(path), "%s/store.lmdb", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/store.lmdb-lock", dir);
    unlink(path);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("could not remove %s\n", dir);
    if (failures) {
        printf("test_forget: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_forget: all checks passed\n");
    return 0;
}
