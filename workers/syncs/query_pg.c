/*
 * query_pg.c — a sync's query on the PostgreSQL workspace (query.h).
 *
 * The author's rights are a login role of that author alone,
 * zx_author_<name>_<20 hex digits> (author_role.h: the digits an HMAC of
 * the whole exact name under this zxd's key, so two authors never share a
 * role, nor two zxd on one server), marked with COMMENT ON ROLE 'zx
 * author: <name>' (a role of that name marked otherwise is refused), that
 * the workspace's own role makes and keeps in step at each run, in one
 * transaction under a lock of that role: LOGIN, nothing else (no
 * superuser, no CREATEROLE, NOINHERIT, a member of no role), USAGE on the
 * workspace schema, SELECT on exactly the author's tables that exist
 * (grants to tables dropped from the list are revoked; any other table it
 * could still read, in any schema of the database but the system's
 * pg_catalog, information_schema and pg_*, fails the run).  Keeping it in step
 * names only the attributes out of step: ALTER ROLE ... NOSUPERUSER (or
 * NOREPLICATION, NOBYPASSRLS) needs a superuser, even when the role has
 * none of them, and the workspace's role needs only CREATEROLE (and, on
 * PostgreSQL 16 and later, ADMIN OPTION on the role, which it has on the
 * roles it made).  Its password is derived
 * from a secret key kept in the data folder (author.key, made once, mode
 * 0600) with HMAC-SHA-256, so every run sets the same one and two runs at
 * once never fight.  The query then runs on a connection whose session
 * user IS that role: nothing in the statement (SET ROLE, set_config) can
 * reach rights the author does not have.  The connection needs a
 * pg_hba.conf line letting the role in with a password, like zx's own.
 *
 * The statement: BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY, then
 * `DECLARE zx_sync NO SCROLL CURSOR FOR <query>` through the extended
 * protocol (which refuses a second statement, and DECLARE anything but
 * one SELECT), its columns described, then the same query, in the same
 * snapshot, as `COPY (<query>) TO STDOUT`, read row by row: in binary
 * form when every column's type has one zx reads and the server's encoding
 * is UTF8 (pg_binary.h: the same values as the text form, cheaper on
 * both sides), else as text.
 * Between the two, `EXPLAIN (FORMAT JSON) <query>` (under a savepoint, so
 * that its failure costs nothing) gives the planner's estimate of the rows
 * (the run's progress, when no earlier run says how many to expect).
 *
 * Every wait on that connection goes through wait_sock (query.h "Limits"):
 * nothing blocks in libpq, so a stop or the deadline is seen within 200 ms
 * (at once for a signal) and ends the statement on the server (PQcancel,
 * else pg_terminate_backend) before the worker goes on.
 */
#include "workers/syncs/query.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hex.h"
#include "common/log.h"
#include "common/pgconn.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/sources/postgres/pg_binary.h"
#include "workers/sources/postgres/pg_values.h"
#include "workers/syncs/author_role.h"
#include "workers/syncs/query_pg_int.h"

#define WAIT_SLICE_MS 200          /* the longest a wait goes without looking
                                      at the stop and the deadline */
#define CANCEL_WAIT_MS 3000        /* after PQcancel, before terminating */
#define CHECK_INTERVAL "2s"        /* client_connection_check_interval */

typedef struct pq {
    PGconn *conn;
    const char *sync;
    const zx_conf_author *author;
    const zx_conf *conf;
    zx_query_limits lim;
    int64_t deadline_ms;          /* zx_mono_ms clock */
    zx_query_cut cut;             /* why the query was cut short, if it was */
    int in_copy;                  /* the COPY's rows are coming */
    char role[ZX_AUTHOR_ROLE_MAX], pw[65]; /* to terminate the backend, if need be */
    zx_dcol *cols;
    uint32_t *oids;
    size_t ncols;
    int done;
    char *field;                  /* a field with its escapes undone */
    size_t fcap;
    int binary;                   /* COPY (FORMAT binary): every column's
                                     type has a binary form here
                                     (pg_binary.h) and the server's
                                     encoding is UTF8 */
    zx_pgbin_copy bin;            /* binary: the reader */
    int64_t estimate;             /* the planner's rows, -1 unknown */
} pq;

/* ---- types --------------------------------------------------------------- */

static void map_type(uint32_t oid, int typmod, zx_dcol *col)
{
    col->precision = col->scale = 0;
    switch (oid) {
    case 20: case 21: case 23: case 26: col->type = ZX_DT_INT64; break;
    case 700: case 701: col->type = ZX_DT_DOUBLE; break;
    case 16: col->type = ZX_DT_BOOL; break;
    case 1114: case 1184: col->type = ZX_DT_TIMESTAMP; break;
    case 1082: col->type = ZX_DT_DATE; break;
    case 114: case 3802: col->type = ZX_DT_JSON; break;
    case 17: col->type = ZX_DT_BYTES; break;
    case 1700:
        if (typmod >= 4) {
            int p = ((typmod - 4) >> 16) & 0xffff, s = (typmod - 4) & 0xffff;
            if (p >= 1 && p <= 38 && s <= p) {
                col->type = ZX_DT_DECIMAL;
                col->precision = p;
                col->scale = s;
                break;
            }
        }
        col->type = ZX_DT_TEXT;   /* numeric without precision: exact text */
        break;
    default: col->type = ZX_DT_TEXT;
    }
}

/* ---- the query ---------------------------------------------------------- */

/* After err, when the server refused for want of a privilege (SQLSTATE
 * 42501, in any language the server speaks): the tables the author may
 * read. */
static void policy_hint(const pq *q, const PGresult *r, char *err, size_t errlen)
{
    const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (!st || strcmp(st, "42501") != 0)
        return;
    size_t l = strlen(err), off;
    off = (size_t)snprintf(err + l, errlen - l, " (author %s may read: ", q->author->name);
    for (size_t i = 0; i < q->author->ntables && l + off < errlen; i++)
        off += (size_t)snprintf(err + l + off, errlen - l - off, "%s%s", i ? ", " : "",
                                q->author->tables[i]);
    if (l + off < errlen)
        snprintf(err + l + off, errlen - l - off, ")");
}

/* ---- waiting, cancelling ---------------------------------------------- */

/* Make sure the statement on q->conn is over on the server: PQcancel, up
 * to CANCEL_WAIT_MS for it to end (its rows and results discarded), else
 * pg_terminate_backend of its backend from a second connection as the same
 * role (a role may end its own backends).  Then q->conn is closed either
 * way.  *how = what happened, for the message. */
static void end_on_server(pq *q, const char **how)
{
    *how = "cancelled on the server";
    if (!q->conn)
        return;
    int pid = PQbackendPID(q->conn);
    char eb[256];
    PGcancel *c = PQgetCancel(q->conn);
    int sent = c && PQcancel(c, eb, sizeof(eb));
    PQfreeCancel(c);
    int ended = 0;
    int64_t until = zx_mono_ms() + CANCEL_WAIT_MS;
    while (sent && !ended) {
        if (!PQconsumeInput(q->conn))
            break;
        int progressed = 0;
        if (q->in_copy) {
            char *b = NULL;
            int n = PQgetCopyData(q->conn, &b, 1);
            if (n > 0) {
                PQfreemem(b);
                progressed = 1;
            } else if (n == -1) {
                q->in_copy = 0;
                progressed = 1;
            } else if (n == -2) {
                break;
            }
        } else if (!PQisBusy(q->conn)) {
            PGresult *r = PQgetResult(q->conn);
            if (!r)
                ended = 1;
            else if (PQresultStatus(r) == PGRES_COPY_OUT)
                q->in_copy = 1;
            PQclear(r);
            progressed = 1;
        }
        if (progressed)
            continue;
        int64_t left = until - zx_mono_ms();
        if (left <= 0)
            break;
        struct pollfd p = {PQsocket(q->conn), POLLIN, 0};
        if (p.fd < 0 || (poll(&p, 1, (int)(left < 100 ? left : 100)) < 0 && errno != EINTR))
            break;
    }
    if (!ended && pid > 0) {
        *how = "terminated on the server (pg_terminate_backend)";
        char pids[16];
        snprintf(pids, sizeof(pids), "%d", pid);
        const char *k[] = {"dbname", "user", "password", "application_name", "connect_timeout",
                           NULL};
        const char *v[] = {q->conf->pg_dsn, q->role, q->pw, "zx-sync-cancel", "2", NULL};
        PGconn *t = PQconnectdbParams(k, v, 1);
        const char *pv[] = {pids};
        PGresult *r = PQstatus(t) == CONNECTION_OK
            ? PQexecParams(t, "SELECT pg_terminate_backend($1::int)", 1, NULL, pv, NULL, NULL, 0)
            : NULL;
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            *how = "abandoned: neither PQcancel nor pg_terminate_backend reached the server "
                   "(its statement_timeout ends it)";
            char m[300];
            snprintf(m, sizeof(m), "%s", PQerrorMessage(t));
            m[strcspn(m, "\r\n")] = '\0';
            zx_warn("event=sync_cancel_failed sync=%s backend_pid=%d error=\"%s\"", q->sync,
                    pid, m);
        }
        PQclear(r);
        PQfinish(t);
    }
    PQfinish(q->conn);
    q->conn = NULL;
    q->in_copy = 0;
}

/* The stop or the deadline, if either has come: q->cut, the statement
 * ended on the server, err set, -1.  Else 0. */
static int check_cut(pq *q, char *err, size_t errlen)
{
    if (q->lim.stopping && q->lim.stopping(q->lim.ctx))
        q->cut = ZX_QUERY_STOPPED;
    else if (zx_mono_ms() >= q->deadline_ms)
        q->cut = ZX_QUERY_TIMED_OUT;
    else
        return 0;
    const char *how;
    end_on_server(q, &how);
    return zx_query_cut_msg(q->cut, q->sync, q->lim.query_timeout_ms, how, err, errlen);
}

/* Wait until q->conn's socket is readable (writable when out) or the
 * deadline (connecting: until, else the query's) passes; each poll at
 * most WAIT_SLICE_MS, a signal ends it at once, and then the stop is
 * looked at.  0 ready (or a slice passed: the caller tries again); -1
 * with err set (cut: ended on the server; or the socket failed). */
static int wait_sock(pq *q, int out, int64_t until, char *err, size_t errlen)
{
    if (check_cut(q, err, errlen) < 0)
        return -1;
    int64_t left = until - zx_mono_ms();
    if (left <= 0)
        return 0;
    struct pollfd p = {PQsocket(q->conn), out ? POLLOUT : POLLIN, 0};
    if (p.fd < 0) {
        snprintf(err, errlen, "sync %s: the connection to the workspace is lost: %s", q->sync,
                 PQerrorMessage(q->conn));
        return -1;
    }
    if (poll(&p, 1, (int)(left < WAIT_SLICE_MS ? left : WAIT_SLICE_MS)) < 0 &&
        errno != EINTR) {
        snprintf(err, errlen, "sync %s: waiting for the workspace: %s", q->sync,
                 strerror(errno));
        return -1;
    }
    return check_cut(q, err, errlen);
}

/* Consume what the server sent until a result is ready (no blocking). */
static int await_ready(pq *q, char *err, size_t errlen)
{
    while (PQisBusy(q->conn)) {
        if (wait_sock(q, 0, q->deadline_ms, err, errlen) < 0)
            return -1;
        if (!PQconsumeInput(q->conn)) {
            snprintf(err, errlen, "sync %s: the connection to the workspace is lost: %s",
                     q->sync, PQerrorMessage(q->conn));
            return -1;
        }
    }
    return 0;
}

/* After a PQsend*: its result in *out (the caller clears it).  A COPY's
 * first result (PGRES_COPY_OUT) is returned at once, its rows to be read;
 * else every result is read and the first kept.  0, or -1 with err set
 * (cut, or the connection lost: nothing in *out). */
static int await_result(pq *q, PGresult **out, char *err, size_t errlen)
{
    *out = NULL;
    for (;;) {
        if (await_ready(q, err, errlen) < 0) {
            PQclear(*out);
            *out = NULL;
            return -1;
        }
        PGresult *r = PQgetResult(q->conn);
        if (!r)
            return 0;
        if (PQresultStatus(r) == PGRES_COPY_OUT) {
            q->in_copy = 1;
            PQclear(*out);
            *out = r;
            return 0;
        }
        if (*out)
            PQclear(r);
        else
            *out = r;
    }
}

/* err = "sync S: <what>: <the server's message>" for result r (its first
 * line), or the query_timeout message for the server's statement_timeout. */
static void server_error(pq *q, PGresult *r, const char *what, char *err, size_t errlen)
{
    const char *m = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (code && !strcmp(code, "57014") && m && strstr(m, "statement timeout")) {
        q->cut = ZX_QUERY_TIMED_OUT;
        zx_query_cut_msg(q->cut, q->sync, q->lim.query_timeout_ms,
                         "cancelled by the server (statement_timeout)", err, errlen);
        return;
    }
    zx_qpg_message(q->conn, r, q->sync, what, err, errlen);
}

/* One command on the query's connection, within its limits: its result in
 * *keep (or cleared).  0, or -1 with err = "sync S: what: ...". */
static int qexec(pq *q, const char *sql, const char *what, PGresult **keep, char *err,
                 size_t errlen)
{
    PGresult *r = NULL;
    if (!PQsendQueryParams(q->conn, sql, 0, NULL, NULL, NULL, NULL, 0)) {
        server_error(q, NULL, what, err, errlen);
        return -1;
    }
    if (await_result(q, &r, err, errlen) < 0)
        return -1;
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_COPY_OUT) {
        server_error(q, r, what, err, errlen);
        PQclear(r);
        return -1;
    }
    if (keep)
        *keep = r;
    else
        PQclear(r);
    return 0;
}

/* Connect as the author's role without blocking: the stop and the connect
 * timeout are looked at while the server answers.  The session bounds
 * itself (statement_timeout...) should this worker die. */
static int connect_q(pq *q, const char *app, char *err, size_t errlen)
{
    int ct = q->lim.connect_timeout_ms > 0 ? q->lim.connect_timeout_ms : 30000;
    uint32_t qt = q->lim.query_timeout_ms ? q->lim.query_timeout_ms : 3600u * 1000u;
    char tmo[16], opts[400];
    snprintf(tmo, sizeof(tmo), "%d", ct / 1000 > 1 ? ct / 1000 : 2);
    snprintf(opts, sizeof(opts), "-c DateStyle=ISO -c TimeZone=UTC -c extra_float_digits=3 "
             "-c statement_timeout=%u -c idle_in_transaction_session_timeout=%u "
             "-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 "
             "-c tcp_keepalives_count=3", qt, qt);
    const char *k[] = {"dbname", "user", "password", "application_name", "connect_timeout",
                       "options", "keepalives", "keepalives_idle", NULL};
    const char *v[] = {q->conf->pg_dsn, q->role, q->pw, app, tmo, opts, "1", "30", NULL};
    q->conn = PQconnectStartParams(k, v, 1);
    int64_t until = zx_mono_ms() + ct;
    PostgresPollingStatusType ps = PGRES_POLLING_WRITING;
    while (q->conn && PQstatus(q->conn) != CONNECTION_BAD && ps != PGRES_POLLING_OK &&
           ps != PGRES_POLLING_FAILED) {
        if (zx_mono_ms() >= until) {
            snprintf(err, errlen, "sync %s: cannot connect to the workspace %s as %s within "
                     "%d s", q->sync, q->conf->pg_dsn_shown, q->role, ct / 1000);
            return -1;
        }
        if (wait_sock(q, ps == PGRES_POLLING_WRITING, until, err, errlen) < 0)
            return -1;
        ps = PQconnectPoll(q->conn);
    }
    if (!q->conn || PQstatus(q->conn) != CONNECTION_OK) {
        snprintf(err, errlen, "sync %s: cannot connect to the workspace %s as %s (author %s; "
                 "pg_hba.conf must let it in with a password): %s", q->sync,
                 q->conf->pg_dsn_shown, q->role, q->author->name,
                 q->conn ? PQerrorMessage(q->conn) : "out of memory");
        char *nl = strrchr(err, '\n');
        if (nl && !nl[1])
            *nl = '\0';
        return -1;
    }
    /* PG 14+: a backend whose client vanished (a SIGKILLed worker) finds
     * out within seconds even while it computes; refused elsewhere (not
     * Linux): statement_timeout remains */
    if (PQserverVersion(q->conn) >= 140000) {
        char e2[300];
        if (qexec(q, "SET client_connection_check_interval = '" CHECK_INTERVAL "'",
                  "workspace", NULL, e2, sizeof(e2)) < 0) {
            if (q->cut || !q->conn) {
                snprintf(err, errlen, "%s", e2);
                return -1;
            }
        }
    }
    return 0;
}

/* The planner's estimate of the query's rows into q->estimate (-1 when it
 * cannot say): EXPLAIN (FORMAT JSON) in the query's own transaction and
 * snapshot, under a savepoint released or rolled back to.  0, or -1 (err
 * set) only when the connection itself failed or the run was cut. */
static int estimate(pq *q, const char *sql, char *err, size_t errlen)
{
    q->estimate = -1;
    size_t n = strlen(sql) + 48;
    char *ex = malloc(n);
    PGresult *r = NULL;
    if (!ex)
        return 0;
    snprintf(ex, n, "EXPLAIN (FORMAT JSON)\n%s\n", sql);
    if (qexec(q, "SAVEPOINT zx_estimate", "workspace", NULL, err, errlen) < 0) {
        free(ex);
        return -1;
    }
    if (!PQsendQueryParams(q->conn, ex, 0, NULL, NULL, NULL, NULL, 0)) {
        free(ex);
        server_error(q, NULL, "workspace", err, errlen);
        return -1;
    }
    free(ex);
    if (await_result(q, &r, err, errlen) < 0)
        return -1;   /* cut, or the connection lost */
    /* (an error of the server's: no estimate, the savepoint rolled back to) */
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && PQnfields(r) == 1) {
        json_t *plan = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
        json_t *rows = json_object_get(json_object_get(json_array_get(plan, 0), "Plan"),
                                       "Plan Rows");
        if (json_is_number(rows) && json_number_value(rows) >= 0 &&
            json_number_value(rows) < 9e18)
            q->estimate = (int64_t)json_number_value(rows);
        json_decref(plan);
    }
    PQclear(r);
    return qexec(q, q->estimate >= 0 ? "RELEASE SAVEPOINT zx_estimate"
                                      : "ROLLBACK TO SAVEPOINT zx_estimate",
                 "workspace", NULL, err, errlen);
}

int64_t zx_qpg_estimate(const void *qq)
{
    return ((const pq *)qq)->estimate;
}

int zx_qpg_open(const zx_conf *conf, const char *sync, const zx_conf_author *author,
                  const char *sql, const zx_query_limits *lim, void **out, char *err,
                  size_t errlen)
{
    pq *q = calloc(1, sizeof(*q));
    unsigned char key[32];
    char legacy[ZX_AUTHOR_ROLE_MAX], app[96], kerr[600];
    PGresult *r = NULL;
    char *decl = NULL;
    if (!q) {
        snprintf(err, errlen, "sync %s: out of memory", sync);
        return -1;
    }
    q->sync = sync;
    q->author = author;
    q->conf = conf;
    if (lim)
        q->lim = *lim;
    q->deadline_ms = zx_query_deadline(lim);
    int timeout_ms = q->lim.connect_timeout_ms > 0 ? q->lim.connect_timeout_ms : 30000;
    if (zx_qpg_author_key(conf->data_dir, key, kerr, sizeof(kerr)) < 0) {
        snprintf(err, errlen, "sync %s: author %s: %s", sync, author->name, kerr);
        goto fail;
    }
    if (zx_author_role_name(key, author->name, q->role) < 0) {
        snprintf(err, errlen, "sync %s: author %s: libcrypto cannot compute HMAC-SHA-256 for "
                 "the author's role name", sync, author->name);
        goto fail;
    }
    zx_author_role_password(key, q->role, q->pw);
    zx_author_role_legacy_name(key, author->name, legacy);
    if (zx_qpg_ensure_role(conf, sync, author, q->role, legacy, q->pw, timeout_ms, err,
                           errlen) < 0)
        goto fail;
    snprintf(app, sizeof(app), "zx-sync-%.60s", sync);
    if (connect_q(q, app, err, errlen) < 0)
        goto fail;
    char qschema[200], sp[260];
    if (zx_qpg_quoted(q->conn, conf->pg_schema, qschema, sizeof(qschema)) < 0)
        goto oom;
    snprintf(sp, sizeof(sp), "SET LOCAL search_path TO %s", qschema);
    if (qexec(q, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "workspace", NULL, err,
              errlen) < 0 ||
        qexec(q, sp, "workspace", NULL, err, errlen) < 0)
        goto fail;
    size_t dl = strlen(sql) + 64;
    if (!(decl = malloc(dl)))
        goto oom;
    snprintf(decl, dl, "DECLARE zx_sync NO SCROLL CURSOR FOR %s", sql);
    if (!PQsendQueryParams(q->conn, decl, 0, NULL, NULL, NULL, NULL, 0) ||
        await_result(q, &r, err, errlen) < 0) {
        if (!q->cut && q->conn)
            server_error(q, NULL, "workspace", err, errlen);
        goto fail;
    }
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        if (m && strstr(m, "multiple commands"))
            snprintf(err, errlen, "sync %s: the query must be exactly one statement; a second "
                     "one follows the first", sync);
        else if (m && strstr(m, "DECLARE CURSOR can only"))
            snprintf(err, errlen, "sync %s: the query is not a read-only SELECT: %s", sync, m);
        else {
            char what[200];
            snprintf(what, sizeof(what), "the query failed as author %s", author->name);
            server_error(q, r, what, err, errlen);
        }
        char *nl = strchr(err, '\n');
        if (nl)
            *nl = '\0';
        policy_hint(q, r, err, errlen);
        goto fail;
    }
    PQclear(r);
    r = NULL;
    if (!PQsendDescribePortal(q->conn, "zx_sync") || await_result(q, &r, err, errlen) < 0 ||
        PQresultStatus(r) != PGRES_COMMAND_OK) {
        if (!q->cut && q->conn)
            snprintf(err, errlen, "sync %s: cannot describe the query's result: %s", sync,
                     PQerrorMessage(q->conn));
        goto fail;
    }
    int n = PQnfields(r);
    if (n <= 0) {
        snprintf(err, errlen, "sync %s: the query returns no columns", sync);
        goto fail;
    }
    q->ncols = (size_t)n;
    q->cols = calloc(q->ncols, sizeof(*q->cols));
    q->oids = calloc(q->ncols, sizeof(*q->oids));
    if (!q->cols || !q->oids)
        goto oom;
    for (int i = 0; i < n; i++) {
        if (!(q->cols[i].name = strdup(PQfname(r, i))))
            goto oom;
        q->oids[i] = PQftype(r, i);
        map_type(q->oids[i], PQfmod(r, i), &q->cols[i]);
    }
    PQclear(r);
    r = NULL;
    if (zx_query_unique_names(q->cols, q->ncols, sync, err, errlen) < 0)
        goto fail;
    /* The rows: the same statement, in the same snapshot (REPEATABLE READ),
     * through COPY TO STDOUT, far cheaper per row than FETCH.  DECLARE
     * proved it one complete SELECT; the newlines keep a trailing -- comment
     * from eating the parenthesis; COPY to a file or a program is refused to
     * the author's role anyway. */
    if (qexec(q, "CLOSE zx_sync", "workspace", NULL, err, errlen) < 0)
        goto fail;
    if (estimate(q, sql, err, errlen) < 0)
        goto fail;
    /* binary when every column has a binary form here: neither the
     * server nor zx formats and parses timestamps and floats as text */
    const char *enc = PQparameterStatus(q->conn, "server_encoding");
    q->binary = enc && !strcmp(enc, "UTF8");
    for (size_t i = 0; i < q->ncols && q->binary; i++)
        q->binary = zx_pgbin_known(q->oids[i]);
    if (q->binary && zx_pgbin_copy_init(&q->bin, q->oids, q->ncols) < 0)
        goto oom;
    snprintf(decl, dl, "COPY (\n%s\n) TO STDOUT%s", sql, q->binary ? " (FORMAT binary)" : "");
    if (!PQsendQueryParams(q->conn, decl, 0, NULL, NULL, NULL, NULL, 0) ||
        await_result(q, &r, err, errlen) < 0) {
        if (!q->cut && q->conn)
            server_error(q, NULL, "workspace", err, errlen);
        goto fail;
    }
    if (PQresultStatus(r) != PGRES_COPY_OUT) {
        char what[200];
        snprintf(what, sizeof(what), "the query failed as author %s", author->name);
        server_error(q, r, what, err, errlen);
        policy_hint(q, r, err, errlen);
        goto fail;
    }
    PQclear(r);
    r = NULL;
    free(decl);
    *out = q;
    return 0;
oom:
    snprintf(err, errlen, "sync %s: out of memory", sync);
fail:
    PQclear(r);
    free(decl);
    zx_qpg_close(q);
    return -1;
}

const zx_dcol *zx_qpg_columns(const void *qq, size_t *n)
{
    const pq *q = (const pq *)qq;
    *n = q->ncols;
    return q->cols;
}

/* One value of column i (its text form s, n bytes). */
static int cell(pq *q, size_t i, const char *s, size_t n, zx_rowset *rs, zx_value *v)
{
    memset(v, 0, sizeof(*v));
    if (q->cols[i].type == ZX_DT_BYTES && n >= 2 && s[0] == '\\' && s[1] == 'x') {
        size_t m = (n - 2) / 2;
        char *b = zx_rowset_alloc(rs, m + 1);
        if (!b)
            return -1;
        for (size_t j = 0; j < m; j++) {
            int hi = zx_hexval(s[2 + 2 * j]), lo = zx_hexval(s[3 + 2 * j]);
            b[j] = (char)((hi < 0 ? 0 : hi) << 4 | (lo < 0 ? 0 : lo));
        }
        b[m] = '\0';
        v->type = ZX_T_TEXT;
        v->s = b;
        v->len = (uint32_t)m;
        return 0;
    }
    if (zx_pgv_from_text(q->oids[i], s, n, rs, v) < 0)
        return -1;
    if (q->cols[i].type == ZX_DT_JSON && v->type == ZX_T_TEXT)
        v->type = ZX_T_JSON;
    return 0;
}

/* One field of a COPY text row (n bytes at f), its backslash escapes
 * undone into q->field when it has any: *out, *outlen. */
static int unescape(pq *q, const char *f, size_t n, const char **out, size_t *outlen)
{
    if (!memchr(f, '\\', n)) {
        *out = f;
        *outlen = n;
        return 0;
    }
    if (q->fcap < n + 1) {
        char *b = realloc(q->field, n + 1);
        if (!b)
            return -1;
        q->field = b;
        q->fcap = n + 1;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = f[i];
        if (c != '\\' || i + 1 == n) {
            q->field[o++] = c;
            continue;
        }
        c = f[++i];
        switch (c) {
        case 'b': q->field[o++] = '\b'; break;
        case 'f': q->field[o++] = '\f'; break;
        case 'n': q->field[o++] = '\n'; break;
        case 'r': q->field[o++] = '\r'; break;
        case 't': q->field[o++] = '\t'; break;
        case 'v': q->field[o++] = '\v'; break;
        case 'x': {
            int v = 0, k = 0;
            while (k < 2 && i + 1 < n && zx_hexval(f[i + 1]) >= 0)
                v = v * 16 + zx_hexval(f[++i]), k++;
            q->field[o++] = k ? (char)v : 'x';
            break;
        }
        default:
            if (c >= '0' && c <= '7') {
                int v = c - '0', k = 1;
                while (k < 3 && i + 1 < n && f[i + 1] >= '0' && f[i + 1] <= '7')
                    v = v * 8 + (f[++i] - '0'), k++;
                q->field[o++] = (char)v;
            } else {
                q->field[o++] = c;   /* \\ and any other: the character */
            }
        }
    }
    *out = q->field;
    *outlen = o;
    return 0;
}

enum { ROW_ADDED, ROW_NONE, ROW_BAD, ROW_OOM };

/* One COPY text row (a CopyData message of n bytes) into rs. */
static int text_row(pq *q, const char *line, size_t n, zx_rowset *rs, char *err, size_t errlen)
{
    if (n && line[n - 1] == '\n')
        n--;
    if (zx_rowset_begin_row(rs) < 0)
        return ROW_OOM;
    size_t col = 0, startf = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && line[i] != '\t')
            continue;
        const char *f = line + startf;
        size_t fl = i - startf;
        startf = i + 1;
        if (col >= q->ncols) {
            col++;
            break;
        }
        if (!(fl == 2 && f[0] == '\\' && f[1] == 'N')) {
            const char *u;
            size_t ul;
            zx_value v;
            if (unescape(q, f, fl, &u, &ul) < 0 || cell(q, col, u, ul, rs, &v) < 0 ||
                (v.type != ZX_T_NULL && zx_rowset_add(rs, (uint32_t)col, &v) < 0)) {
                zx_rowset_abort_row(rs);
                return ROW_OOM;
            }
        }
        col++;
    }
    if (col != q->ncols) {
        zx_rowset_abort_row(rs);
        snprintf(err, errlen, "sync %s: a row of the result has %s%zu fields, not %zu", q->sync,
                 col > q->ncols ? "more than " : "", col > q->ncols ? q->ncols : col, q->ncols);
        return ROW_BAD;
    }
    zx_rowset_end_row(rs);
    return ROW_ADDED;
}

/* One binary COPY message into rs (zx_pgbin_copy_row). */
static int binary_row(pq *q, const unsigned char *b, size_t n, zx_rowset *rs, char *err,
                      size_t errlen)
{
    char why[200];
    int rc = zx_pgbin_copy_row(&q->bin, b, n, NULL, rs, why, sizeof(why));
    if (rc == -1)
        snprintf(err, errlen, "sync %s: the server's rows: %s", q->sync, why);
    return rc == 1 ? ROW_ADDED : rc == 0 ? ROW_NONE : rc == -1 ? ROW_BAD : ROW_OOM;
}

int64_t zx_qpg_next(void *qq, zx_rowset *rs, size_t max, char *err, size_t errlen)
{
    pq *q = (pq *)qq;
    if (zx_query_rs_columns(rs, q->cols, q->ncols) < 0) {
        snprintf(err, errlen, "sync %s: out of memory", q->sync);
        return -1;
    }
    int64_t nr = 0;
    if (!q->done && check_cut(q, err, errlen) < 0)
        return -1;
    while (!q->done && (size_t)nr < max) {
        char *line = NULL;
        int len = PQgetCopyData(q->conn, &line, 1);
        if (len == 0) {   /* nothing buffered: wait for the server */
            if (wait_sock(q, 0, q->deadline_ms, err, errlen) < 0)
                return -1;
            if (!PQconsumeInput(q->conn)) {
                snprintf(err, errlen, "sync %s: reading the query's result: %s", q->sync,
                         PQerrorMessage(q->conn));
                return -1;
            }
            continue;
        }
        if (len == -1) {   /* the end: the COPY's own result follows */
            q->done = 1;
            q->in_copy = 0;
            PGresult *r = NULL;
            if (await_result(q, &r, err, errlen) < 0)
                return -1;
            if (PQresultStatus(r) != PGRES_COMMAND_OK) {
                char what[200];
                snprintf(what, sizeof(what), "the query failed as author %s",
                         q->author->name);
                server_error(q, r, what, err, errlen);
                policy_hint(q, r, err, errlen);
                PQclear(r);
                return -1;
            }
            PQclear(r);
            break;
        }
        if (len < 0) {
            snprintf(err, errlen, "sync %s: reading the query's result: %s", q->sync,
                     PQerrorMessage(q->conn));
            return -1;
        }
        int rc = q->binary ? binary_row(q, (const unsigned char *)line, (size_t)len, rs, err,
                                        errlen)
                           : text_row(q, line, (size_t)len, rs, err, errlen);
        PQfreemem(line);
        if (rc == ROW_OOM)
            goto oom;
        if (rc == ROW_BAD)
            return -1;
        if (rc == ROW_NONE)
            continue;
        nr++;
    }
    return nr;
oom:
    snprintf(err, errlen, "sync %s: out of memory reading the result", q->sync);
    return -1;
}

void zx_qpg_close(void *qq)
{
    pq *q = (pq *)qq;
    if (!q)
        return;
    if (q->conn && !q->done && PQtransactionStatus(q->conn) == PQTRANS_ACTIVE) {
        /* closed before the last row (a failed destination...): the
         * statement must not run on without us */
        const char *how;
        end_on_server(q, &how);
    }
    if (q->conn)
        PQfinish(q->conn);   /* the read-only transaction ends with it */
    explicit_bzero(q->pw, sizeof(q->pw));
    for (size_t i = 0; q->cols && i < q->ncols; i++)
        free((char *)q->cols[i].name);
    free(q->cols);
    free(q->oids);
    free(q->field);
    zx_pgbin_copy_free(&q->bin);
    free(q);
}
