/*
 * test_forget.c — the writer's drop of a removed pipeline's state
 * (workers/writer/forget.h) on a real LMDB store and SQLite workspace: a
 * request waits while the pipeline's segment is still detaching, drops the
 * positions of that pipeline only (workspace and store) once it is gone,
 * is refused when a pipeline of that name is attached again, and a bad
 * message is never queued.
 */
#include "workers/writer/forget.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void put_state(zx_store *st, zx_ws *w, const char *name)
{
    char err[256];
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_position_set(w, name, "t:0", "42", 2, 1) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    zx_store_txn *t;
    CHECK(zx_store_begin(st, 0, &t) == 0);
    zx_position p = {7, 1000, NULL, 0};
    CHECK(zx_store_position_put(t, name, &p) == 0);
    CHECK(zx_store_position_part_put(t, name, "t:0", "42", 2, 1000) == 0);
    CHECK(zx_store_counter_add(t, name, "rows", 3) == 0);
    CHECK(zx_store_commit(t) == 0);
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
    zx_ws *w = zx_ws_open_sqlite(path, "normal", "test", NULL, err, sizeof(err));
    CHECK(w != NULL);
    if (!st || !w)
        return 1;
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

    zx_ws_close(w);
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
