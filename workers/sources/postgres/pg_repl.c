/*
 * pg_repl.c — the logical replication connection (pg_repl.h).
 */
#include "workers/sources/postgres/pg_repl.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pgconn.h"
#include "common/timefmt.h"
#include "common/util.h"

struct zx_pgr {
    PGconn *conn;
    char *shown;            /* dsn_shown, for messages */
    char *buf;              /* the last payload (PQfreemem) */
};

static int fail(zx_pgr *r, PGresult *res, const char *what, char *err, size_t errlen)
{
    return zx_pg_fail(r->conn, res, r->shown, what, err, errlen);
}

zx_pgr *zx_pgr_connect(const char *dsn, const char *dsn_shown, const char *app, char *err,
                       size_t errlen)
{
    zx_pgr *r = calloc(1, sizeof(*r));
    if (!r || !(r->shown = strdup(dsn_shown ? dsn_shown : "(dsn)"))) {
        free(r);
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    zx_pg_connopts o = { .dsn = dsn, .shown = r->shown, .app = app ? app : "zxd",
                         .options = ZX_PG_SESSION_OPTIONS, .replication = "database",
                         .purpose = "for replication", .connect_timeout_s = 10,
                         .keepalives_idle_s = 10 };
    if (!(r->conn = zx_pg_connect(&o, err, errlen))) {
        zx_pgr_close(r);
        return NULL;
    }
    return r;
}

int zx_pgr_identify(zx_pgr *r, pgo_lsn *xlogpos, char *sysid, size_t sysidlen, char *err,
                    size_t errlen)
{
    PGresult *res = PQexec(r->conn, "IDENTIFY_SYSTEM");
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
        PQnfields(res) < 3)
        return fail(r, res, "IDENTIFY_SYSTEM", err, errlen);
    if (sysid)
        snprintf(sysid, sysidlen, "%s", PQgetvalue(res, 0, 0));
    int ok = pgo_lsn_parse(PQgetvalue(res, 0, 2), xlogpos) == 0;
    PQclear(res);
    return ok ? 0 : zx_seterr(err, errlen, "Postgres %s: IDENTIFY_SYSTEM gave no LSN", r->shown);
}

/* slot as a quoted identifier into out (it is checked by the
 * configuration: [a-z0-9_], at most 63 bytes; quoted all the same). */
static int quote_ident(const char *s, char *out, size_t outlen)
{
    size_t k = 0;
    if (outlen < 3)
        return -1;
    out[k++] = '"';
    for (; *s; s++) {
        if (k + 3 >= outlen)
            return -1;
        if (*s == '"')
            out[k++] = '"';
        out[k++] = *s;
    }
    out[k++] = '"';
    out[k] = '\0';
    return 0;
}

/* The one result of the command sent on r, waiting as create_slot's
 * comment says; NULL with err set when the connection failed or wait gave
 * up (the command is then cancelled and its results read). */
static PGresult *await_result(zx_pgr *r, const char *what, zx_pgr_wait_fn wait, void *arg,
                              int *failed, char *err, size_t errlen)
{
    *failed = 1;
    int64_t t0 = zx_mono_ms();
    while (PQisBusy(r->conn)) {
        struct pollfd pfd = { .fd = PQsocket(r->conn), .events = POLLIN };
        int n = poll(&pfd, 1, 1000);
        if (n < 0 && errno != EINTR) {
            zx_seterr(err, errlen, "Postgres %s: %s: poll: %s", r->shown, what, strerror(errno));
            return NULL;
        }
        if (n > 0 && !PQconsumeInput(r->conn)) {
            fail(r, NULL, what, err, errlen);
            return NULL;
        }
        if (PQisBusy(r->conn) && wait && wait(arg, zx_mono_ms() - t0)) {
            char e[256];
            PGcancel *cn = PQgetCancel(r->conn);
            if (cn) {
                PQcancel(cn, e, sizeof(e));
                PQfreeCancel(cn);
            }
            PGresult *x;
            while ((x = PQgetResult(r->conn)))
                PQclear(x);
            zx_seterr(err, errlen, "Postgres %s: %s: cancelled while it waited", r->shown, what);
            return NULL;
        }
    }
    PGresult *res = PQgetResult(r->conn), *x;
    while ((x = PQgetResult(r->conn)))   /* the command's end */
        PQclear(x);
    *failed = 0;
    return res;
}

int zx_pgr_create_slot(zx_pgr *r, const char *slot, pgo_lsn *consistent, char *snapshot,
                       size_t snaplen, int *exists, zx_pgr_wait_fn wait, void *wait_arg,
                       char *err, size_t errlen)
{
    char q[300], id[140];
    *exists = 0;
    if (quote_ident(slot, id, sizeof(id)) < 0)
        return zx_seterr(err, errlen, "slot name too long: %.80s", slot);
    snprintf(q, sizeof(q), "CREATE_REPLICATION_SLOT %s LOGICAL pgoutput (SNAPSHOT 'export')", id);
    if (!PQsendQuery(r->conn, q))
        return fail(r, NULL, "CREATE_REPLICATION_SLOT", err, errlen);
    int failed;
    PGresult *res = await_result(r, "CREATE_REPLICATION_SLOT", wait, wait_arg, &failed, err,
                                 errlen);
    if (failed)
        return -1;
    if (res && PQresultStatus(res) == PGRES_FATAL_ERROR) {
        const char *st = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (st && strcmp(st, "42710") == 0) { /* duplicate_object */
            PQclear(res);
            *exists = 1;
            return 0;
        }
    }
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
        PQnfields(res) < 3)
        return fail(r, res, "CREATE_REPLICATION_SLOT", err, errlen);
    int ok = pgo_lsn_parse(PQgetvalue(res, 0, 1), consistent) == 0;
    if (snapshot)
        snprintf(snapshot, snaplen, "%s", PQgetisnull(res, 0, 2) ? "" : PQgetvalue(res, 0, 2));
    PQclear(res);
    return ok ? 0 : zx_seterr(err, errlen, "Postgres %s: the new slot has no LSN", r->shown);
}

int zx_pgr_start(zx_pgr *r, const char *slot, pgo_lsn start, const char *publication,
                 int proto_version, char *err, size_t errlen)
{
    char id[140], lsn[PGO_LSN_LEN + 2], q[1024];
    if (quote_ident(slot, id, sizeof(id)) < 0)
        return zx_seterr(err, errlen, "slot name too long: %.80s", slot);
    pgo_lsn_format(start, lsn, sizeof(lsn));
    /* the publication name is a string literal here: quotes doubled */
    char pub[300];
    size_t k = 0;
    for (const char *p = publication; *p && k + 3 < sizeof(pub); p++) {
        if (*p == '\'')
            pub[k++] = '\'';
        pub[k++] = *p;
    }
    pub[k] = '\0';
    snprintf(q, sizeof(q), "START_REPLICATION SLOT %s LOGICAL %s (proto_version '%d', "
             "publication_names '%s')", id, lsn, proto_version, pub);
    PGresult *res = PQexec(r->conn, q);
    if (!res || PQresultStatus(res) != PGRES_COPY_BOTH)
        return fail(r, res, "START_REPLICATION", err, errlen);
    PQclear(res);
    return 0;
}

int zx_pgr_next(zx_pgr *r, int timeout_ms, const uint8_t **data, size_t *len, char *err,
                size_t errlen)
{
    if (r->buf) {
        PQfreemem(r->buf);
        r->buf = NULL;
    }
    int64_t deadline = zx_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int consumed = 0;
    for (;;) {
        int n = PQgetCopyData(r->conn, &r->buf, 1);
        if (n > 0) {
            *data = (const uint8_t *)r->buf;
            *len = (size_t)n;
            return 1;
        }
        if (n == -1) {
            PGresult *res = PQgetResult(r->conn);
            return fail(r, res, "the replication stream ended", err, errlen);
        }
        if (n == -2)
            return fail(r, NULL, "receiving", err, errlen);
        if (!consumed) {
            /* what the socket holds already, before any wait (so that a
             * timeout of 0 still reads what has arrived) */
            consumed = 1;
            if (!PQconsumeInput(r->conn))
                return fail(r, NULL, "receiving", err, errlen);
            continue;
        }
        int64_t left = deadline - zx_mono_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = { PQsocket(r->conn), POLLIN, 0 };
        if (poll(&p, 1, (int)left) < 0)
            continue; /* EINTR: the deadline still holds */
        if (!PQconsumeInput(r->conn))
            return fail(r, NULL, "receiving", err, errlen);
    }
}

int zx_pgr_status(zx_pgr *r, pgo_lsn written, pgo_lsn flushed, pgo_lsn applied, int reply,
                  char *err, size_t errlen)
{
    uint8_t msg[PGO_STATUS_LEN];
    int64_t now = 0;
    if (pgo_time_from_unix_us(zx_now_us(), &now) < 0)
        now = 0;
    size_t n = pgo_status_encode(msg, written, flushed, applied, now, reply);
    if (PQputCopyData(r->conn, (const char *)msg, (int)n) != 1 || PQflush(r->conn) != 0)
        return fail(r, NULL, "sending the status update", err, errlen);
    return 0;
}

int zx_pgr_fd(const zx_pgr *r)
{
    return r && r->conn ? PQsocket(r->conn) : -1;
}

void zx_pgr_close(zx_pgr *r)
{
    if (!r)
        return;
    if (r->buf)
        PQfreemem(r->buf);
    if (r->conn)
        PQfinish(r->conn);
    free(r->shown);
    free(r);
}
