/*
 * test_pg_repl.c — pg_repl.h and pgoutput.h against a real PostgreSQL
 * (ZX_PG_DSN, a superuser's URI; test.sh starts tests/services/postgres):
 * a slot made with an exported snapshot, the stream of one insert (with a
 * TOASTed value), an update that leaves it unchanged ('u'), an update of
 * the key (old key 'K'), a delete and a truncate, decoded in order; a
 * status update moves the slot's confirmed_flush_lsn.  Without ZX_PG_DSN
 * it says so and exits 77 (meson: skipped); test.sh always sets it.
 */
#include "workers/sources/postgres/pg_repl.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

#include "tests/unit/check.h"

static PGconn *connect_db(const char *dsn)
{
    PGconn *c = PQconnectdb(dsn);
    if (PQstatus(c) != CONNECTION_OK) {
        printf("cannot connect: %s", PQerrorMessage(c));
        failures++;
    }
    return c;
}

static void exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
        printf("%s: %s", sql, PQerrorMessage(c));
        failures++;
    }
    PQclear(r);
}

static char *one(PGconn *c, const char *sql)
{
    static char v[256];
    PGresult *r = PQexec(c, sql);
    snprintf(v, sizeof(v), "%s", PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0
                                     ? PQgetvalue(r, 0, 0) : "<none>");
    PQclear(r);
    return v;
}

int main(void)
{
    const char *dsn = getenv("ZX_PG_DSN");
    if (!dsn || !*dsn) {
        printf("test_pg_repl: ZX_PG_DSN is not set: no server to test against (test.sh sets it)\n");
        return 77;
    }
    char db[64], url[512], err[600];
    snprintf(db, sizeof(db), "zxr_%ld", (long)getpid());
    const char *slash = strrchr(dsn, '/');
    snprintf(url, sizeof(url), "%.*s/%s", (int)(slash - dsn), dsn, db);
    PGconn *admin = connect_db(dsn);
    char q[512];
    snprintf(q, sizeof(q), "CREATE DATABASE %s", db);
    exec(admin, q);
    PGconn *c = connect_db(url);
    exec(c, "CREATE TABLE t (id int PRIMARY KEY, name text, big text)");
    /* stored out of line, uncompressed: a TOASTed value the updates keep */
    exec(c, "ALTER TABLE t ALTER big SET STORAGE EXTERNAL");
    exec(c, "CREATE PUBLICATION zxp FOR TABLE t");

    zx_pgr *r = zx_pgr_connect(url, "the test server", "zx-test", err, sizeof(err));
    CHECK(r != NULL);
    if (!r) {
        printf("%s\n", err);
        return 1;
    }
    pgo_lsn pos = 0, consistent = 0;
    char sysid[64], snap[128] = "";
    int exists = -1;
    CHECK(zx_pgr_identify(r, &pos, sysid, sizeof(sysid), err, sizeof(err)) == 0 && pos > 0 &&
          sysid[0]);
    CHECK(zx_pgr_create_slot(r, "zxs", &consistent, snap, sizeof(snap), &exists, NULL, NULL,
                             err, sizeof(err)) == 0);
    CHECK(exists == 0 && consistent >= pos && snap[0]);
    CHECK(zx_pgr_create_slot(r, "zxs", &consistent, snap, sizeof(snap), &exists, NULL, NULL,
                             err, sizeof(err)) == 0 && exists == 1);
    CHECK(zx_pgr_start(r, "zxs", 0, "zxp", 1, err, sizeof(err)) == 0);

    exec(c, "INSERT INTO t VALUES (1, 'a', repeat('x', 20000) || md5('1'))");
    exec(c, "UPDATE t SET name = 'b' WHERE id = 1");
    exec(c, "UPDATE t SET id = 2 WHERE id = 1");
    exec(c, "DELETE FROM t WHERE id = 2");
    exec(c, "TRUNCATE t");

    pgo_cache *cache = pgo_cache_create(0, 0);
    pgo_decoder *d = malloc(sizeof(*d));
    CHECK(cache && d && pgo_decoder_init(d, 1, cache) == 0);
    char seq[64] = "";
    size_t ns = 0;
    int commits = 0, toast_unchanged = 0, old_key = 0, big_len = 0;
    pgo_lsn last_end = 0;
    int64_t until = zx_mono_ms() + 30000;
    while (commits < 5 && zx_mono_ms() < until) {
        const uint8_t *p;
        size_t len;
        int got = zx_pgr_next(r, 1000, &p, &len, err, sizeof(err));
        if (got < 0) {
            printf("%s\n", err);
            failures++;
            break;
        }
        if (!got)
            continue;
        pgo_frame f;
        if (pgo_frame_decode(d, p, len, &f) < 0) {
            printf("frame: %s\n", d->err);
            failures++;
            break;
        }
        if (f.type == PGO_KEEPALIVE) {
            if (f.reply_requested)
                zx_pgr_status(r, last_end, last_end, last_end, 0, err, sizeof(err));
            continue;
        }
        pgo_msg m;
        if (pgo_decode(d, f.data, f.len, &m) < 0) {
            printf("decode: %s\n", d->err);
            failures++;
            break;
        }
        if (ns + 1 < sizeof(seq))
            seq[ns++] = (char)m.type;
        if (m.type == PGO_COMMIT) {
            commits++;
            last_end = m.u.commit.end_lsn;
        }
        if (m.type == PGO_INSERT && m.u.change.new_tuple.ncols == 3)
            big_len = (int)m.u.change.new_tuple.vals[2].len;
        if (m.type == PGO_UPDATE && m.u.change.new_tuple.ncols == 3 &&
            m.u.change.new_tuple.vals[2].kind == PGO_UNCHANGED)
            toast_unchanged++;
        if (m.type == PGO_UPDATE && m.u.change.old_kind == 'K')
            old_key++;
    }
    seq[ns] = '\0';
    /* Each statement its transaction, and a Relation before the first
     * change.  pgoutput sends a Relation again whenever the server drops
     * its cache entry (after an autovacuum or analyze of the table, say):
     * any number of them may come later, so they are left out of the
     * comparison. */
    char norel[64];
    size_t nn = 0;
    for (size_t i = 0; i < ns; i++)
        if (seq[i] != 'R')
            norel[nn++] = seq[i];
    norel[nn] = '\0';
    if (strcmp(norel, "BICBUCBUCBDCBTC") != 0 || strncmp(seq, "BRI", 3) != 0)
        printf("message sequence: %s\n", seq);
    CHECK(strcmp(norel, "BICBUCBUCBDCBTC") == 0);
    CHECK(strncmp(seq, "BRI", 3) == 0);
    CHECK(big_len == 20032);
    CHECK(toast_unchanged == 2); /* the name update and the key update */
    CHECK(old_key == 1);

    /* acknowledging moves the slot */
    CHECK(zx_pgr_status(r, last_end, last_end, last_end, 1, err, sizeof(err)) == 0);
    char want[PGO_LSN_LEN + 2];
    pgo_lsn_format(last_end, want, sizeof(want));
    int moved = 0;
    for (int i = 0; i < 100 && !moved; i++) {
        const uint8_t *p;
        size_t len;
        zx_pgr_next(r, 50, &p, &len, err, sizeof(err));
        snprintf(q, sizeof(q), "SELECT confirmed_flush_lsn >= '%s' FROM pg_replication_slots"
                 " WHERE slot_name = 'zxs'", want);
        moved = strcmp(one(c, q), "t") == 0;
    }
    CHECK(moved);

    /* a bad publication name fails with the server's words */
    zx_pgr_close(r);
    /* the walsender of the closed connection may take a moment to go: the
     * slot stays active until it has (pg_drop_replication_slot refuses it) */
    for (int i = 0; i < 200; i++) {
        if (strcmp(one(c, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'zxs' "
                          "AND active"), "0") == 0)
            break;
        usleep(50 * 1000);
    }
    exec(c, "SELECT pg_drop_replication_slot('zxs')");
    PQfinish(c);
    snprintf(q, sizeof(q), "DROP DATABASE %s WITH (FORCE)", db);
    exec(admin, q);
    PQfinish(admin);
    pgo_cache_destroy(cache);
    free(d);
    printf("test_pg_repl: %s\n", failures ? "FAILED" : "all checks passed");
    return failures != 0;
}
