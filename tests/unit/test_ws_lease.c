/*
 * test_ws_lease.c — the leases of a shared Postgres workspace
 * (workers/writer/workspace_lease.h) against a real server (ZX_PG_DSN;
 * exit 77 without it): two handles of two instances in a schema of their
 * own (dropped afterwards).  A lease is taken once, renewed without a new
 * holding, refused to the other while it runs, checked inside a
 * transaction (where its row lock keeps a takeover out until the commit,
 * even past the expiry), taken over once expired, given up at once by
 * release; a handle without an instance has none.
 * And the notices between them (zx_ws_notice_*): tables told in a
 * transaction are heard by the other once it commits (never after a
 * rollback, never by the teller), and a reconnect says "any table".
 */
#include "workers/writer/workspace_lease.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/unit/check.h"

static zx_ws *open_as(const char *dsn, const char *schema, const char *instance, int quiet)
{
    char err[600];
    zx_ws *w = zx_ws_open_postgres(dsn, "test-dsn", schema, "zx-test-lease", "test", instance,
                                   NULL, err, sizeof(err));
    if (!w && !quiet)
        printf("test_ws_lease: %s\n", err);
    return w;
}

static void suite(const char *dsn, const char *schema)
{
    zx_ws *a = open_as(dsn, schema, "aaaaaaaaaaaaaaaa", 0);
    zx_ws *b = open_as(dsn, schema, "bbbbbbbbbbbbbbbb", 0);
    zx_ws *lone = open_as(dsn, schema, NULL, 1); /* refused: the others share it */
    CHECK(a && b && !lone);
    if (!a || !b)
        goto out;
    zx_ws_lease o;
    char err[300];
    /* taken, then renewed: one holding */
    CHECK(zx_ws_lease_take(a, "pipeline:p", "host h, zxd pid 1, data_dir /a", 2, 200, &o) == 1);
    CHECK(o.held && o.fresh && o.valid_ms > 0 && o.valid_ms <= 2000);
    CHECK(!strcmp(o.holder, "aaaaaaaaaaaaaaaa"));
    char since[40];
    snprintf(since, sizeof(since), "%s", o.taken_at);
    CHECK(zx_ws_lease_take(a, "pipeline:p", "host h, zxd pid 1, data_dir /a", 2, 200, &o) == 1);
    CHECK(o.held && !o.fresh && !strcmp(o.taken_at, since));
    /* not to the other while it runs: it says who holds it */
    CHECK(zx_ws_lease_take(b, "pipeline:p", "host h, zxd pid 2, data_dir /b", 2, 200, &o) == 0);
    CHECK(!o.held && !strcmp(o.holder, "aaaaaaaaaaaaaaaa"));
    CHECK(!strcmp(o.holder_desc, "host h, zxd pid 1, data_dir /a") && !strcmp(o.taken_at, since));
    CHECK(zx_ws_lease_read(b, "pipeline:p", &o) == 1 && !o.held);
    CHECK(zx_ws_lease_read(a, "pipeline:p", &o) == 1 && o.held);
    CHECK(zx_ws_lease_read(a, "sync:none", &o) == 0);

    /* checked in a commit's transaction: the row stays locked, so even
     * once expired nobody takes it over before the commit */
    CHECK(zx_ws_begin(a, err, sizeof(err)) == 0);
    CHECK(zx_ws_lease_check(a, "pipeline:p", &o) == 1);
    sleep(3); /* past the expiry, by any clock */
    CHECK(zx_ws_lease_take(b, "pipeline:p", "host h, zxd pid 2, data_dir /b", 2, 300, &o) == 0);
    CHECK(zx_ws_commit(a, err, sizeof(err)) == 0);
    /* expired: the holder's check says no; the other takes it over */
    CHECK(zx_ws_begin(a, err, sizeof(err)) == 0);
    CHECK(zx_ws_lease_check(a, "pipeline:p", &o) == 0);
    zx_ws_rollback(a);
    CHECK(zx_ws_lease_take(b, "pipeline:p", "host h, zxd pid 2, data_dir /b", 2, 200, &o) == 1);
    CHECK(o.held && o.fresh);
    /* the old holder, awake: refused at its commit and at its take */
    CHECK(zx_ws_begin(a, err, sizeof(err)) == 0);
    CHECK(zx_ws_lease_check(a, "pipeline:p", &o) == 0);
    CHECK(!strcmp(o.holder, "bbbbbbbbbbbbbbbb") && !o.held);
    zx_ws_rollback(a);
    CHECK(zx_ws_lease_take(a, "pipeline:p", "host h, zxd pid 1, data_dir /a", 2, 200, &o) == 0);
    CHECK(!strcmp(o.holder_desc, "host h, zxd pid 2, data_dir /b"));
    /* release: only the holder's counts; then the other takes it at once */
    CHECK(zx_ws_lease_release(a, "pipeline:p") == 0);
    CHECK(zx_ws_lease_read(a, "pipeline:p", &o) == 1 && !strcmp(o.holder, "bbbbbbbbbbbbbbbb"));
    CHECK(zx_ws_lease_release(b, "pipeline:p") == 0);
    CHECK(zx_ws_lease_read(a, "pipeline:p", &o) == 0);
    CHECK(zx_ws_lease_take(a, "pipeline:p", "host h, zxd pid 1, data_dir /a", 2, 200, &o) == 1);
    CHECK(o.fresh);
    /* leases of different names are independent */
    CHECK(zx_ws_lease_take(b, "sync:s", "host h, zxd pid 2, data_dir /b", 2, 200, &o) == 1);
out:
    zx_ws_close(a);
    zx_ws_close(b);
    zx_ws_close(lone);
}

typedef struct heard {
    char t[8][64];
    int n, any;
} heard;

static void on_notice(void *ctx, const char *table)
{
    heard *h = ctx;
    if (!table)
        h->any++;
    else if (h->n < 8)
        snprintf(h->t[h->n++], sizeof(h->t[0]), "%s", table);
}

static int heard_has(const heard *h, const char *table)
{
    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->t[i], table))
            return 1;
    return 0;
}

/* What b hears within 5 s (polling its socket as the writer does). */
static void hear(zx_ws *b, heard *h)
{
    memset(h, 0, sizeof(*h));
    for (int i = 0; i < 50 && !h->n && !h->any; i++) {
        struct pollfd p = { zx_ws_notice_fd(b), POLLIN, 0 };
        int r = p.fd >= 0 ? poll(&p, 1, 100) : 0;
        CHECK(zx_ws_notices(b, r > 0, on_notice, h) >= 0);
    }
}

static void notices(const char *dsn, const char *schema)
{
    char err[300];
    zx_ws *a = zx_ws_open_postgres(dsn, "test-dsn", schema, "zx-test-notice-a", "test",
                                   "aaaaaaaaaaaaaaaa", NULL, err, sizeof(err));
    zx_ws *b = zx_ws_open_postgres(dsn, "test-dsn", schema, "zx-test-notice-b", "test",
                                   "bbbbbbbbbbbbbbbb", NULL, err, sizeof(err));
    CHECK(a && b);
    if (!a || !b)
        goto out;
    CHECK(zx_ws_notice_fd(a) >= 0 && zx_ws_notice_fd(b) >= 0);
    heard h;
    /* told in a rolled back transaction: never heard */
    const char *never[] = { "never" };
    CHECK(zx_ws_begin(a, err, sizeof(err)) == 0);
    CHECK(zx_ws_notice_changes(a, never, 1, err, sizeof(err)) == 0);
    zx_ws_rollback(a);
    /* told, committed: heard once each by the other, not by the teller */
    const char *t[] = { "orders", "web \"quoted\" é", "orders" };
    CHECK(zx_ws_begin(a, err, sizeof(err)) == 0);
    CHECK(zx_ws_notice_changes(a, t, 3, err, sizeof(err)) == 0);
    CHECK(zx_ws_commit(a, err, sizeof(err)) == 0);
    hear(b, &h);
    usleep(200000);
    CHECK(zx_ws_notices(b, 1, on_notice, &h) >= 0);
    CHECK(h.n == 2 && !h.any && heard_has(&h, "orders") && heard_has(&h, "web \"quoted\" é"));
    CHECK(!heard_has(&h, "never"));
    memset(&h, 0, sizeof(h));
    CHECK(zx_ws_notices(a, 1, on_notice, &h) == 0 && !h.n && !h.any);
    /* b's connection is cut: it says so, reconnects at its next begin,
     * and then says that any table may have changed meanwhile */
    PGconn *c = PQconnectdb(dsn);
    PGresult *r = PQexec(c, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE application_name LIKE 'zx-test-notice-b%'");
    CHECK(r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1);
    PQclear(r);
    PQfinish(c);
    int lost = 0;
    for (int i = 0; i < 50 && !lost; i++) {
        struct pollfd p = { zx_ws_notice_fd(b), POLLIN, 0 };
        if (p.fd < 0 || poll(&p, 1, 100) <= 0)
            continue;
        memset(&h, 0, sizeof(h));
        lost = zx_ws_notices(b, 1, on_notice, &h) < 0;
    }
    CHECK(lost && zx_ws_notice_fd(b) < 0);
    CHECK(zx_ws_begin(b, err, sizeof(err)) == 0);
    CHECK(zx_ws_commit(b, err, sizeof(err)) == 0);
    memset(&h, 0, sizeof(h));
    CHECK(zx_ws_notices(b, 0, on_notice, &h) == 1 && h.any == 1 && !h.n);
    /* and hears again */
    const char *again[] = { "again" };
    CHECK(zx_ws_begin(a, err, sizeof(err)) == 0);
    CHECK(zx_ws_notice_changes(a, again, 1, err, sizeof(err)) == 0);
    CHECK(zx_ws_commit(a, err, sizeof(err)) == 0);
    hear(b, &h);
    CHECK(h.n == 1 && heard_has(&h, "again"));
out:
    zx_ws_close(a);
    zx_ws_close(b);
}

int main(void)
{
    const char *dsn = getenv("ZX_PG_DSN");
    if (!dsn || !*dsn) {
        printf("test_ws_lease: ZX_PG_DSN is not set: no server to test against (test.sh sets "
               "it)\n");
        return 77;
    }
    char schema[64], q[200];
    snprintf(schema, sizeof(schema), "zxu_lease_%d", (int)getpid());
    suite(dsn, schema);
    notices(dsn, schema);
    PGconn *c = PQconnectdb(dsn);
    snprintf(q, sizeof(q), "SET client_min_messages = warning; DROP SCHEMA IF EXISTS \"%s\" "
             "CASCADE", schema);
    PGresult *r = PQstatus(c) == CONNECTION_OK ? PQexec(c, q) : NULL;
    CHECK(r && PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(c);
    printf("test_ws_lease: %s\n", failures ? "FAILED" : "all checks passed");
    return failures != 0;
}
