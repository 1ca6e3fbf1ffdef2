/*
 * test_ws_lease.c — the leases of a shared Postgres workspace
 * (workers/writer/workspace_lease.h) against a real server (ZX_PG_DSN;
 * exit 77 without it): two handles of two instances in a schema of their
 * own (dropped afterwards).  A lease is taken once, renewed without a new
 * holding, refused to the other while it runs, checked inside a
 * transaction (where its row lock keeps a takeover out until the commit,
 * even past the expiry), taken over once expired, given up at once by
 * release; a handle without an instance has none.
 */
#include "workers/writer/workspace_lease.h"

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
