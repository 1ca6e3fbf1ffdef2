/*
 * workspace_pg.c — the PostgreSQL workspace backend (see workspace.h):
 * the connection, the one-writer lock, reconnecting, transactions,
 * checkpoints and positions.  Tables are in workspace_pg_schema.c, rows
 * (COPY) in workspace_pg_copy.c.
 *
 * One writer per workspace: a session advisory lock on (WSP_LOCK_CLASS,
 * hashtext(schema)) held for the connection's life; the holder writes who
 * it is into _zx_writer, so that a second zxd is told.  When the
 * connection is lost (server restart, network cut, pg_terminate_backend)
 * the transaction is lost with it, nothing is acknowledged, and the next
 * zx_ws_begin reconnects (the writer backs off between cycles; the frames
 * wait in their rings) and takes the lock again; a lock still held by
 * our own dead session, or by the session of this zxd's previous writer
 * process (killed while a statement ran), is freed with
 * pg_terminate_backend.
 *
 * It must never: show the DSN's password (dsn_shown is for messages), put
 * a value into SQL text (parameters only), or report a lost connection as
 * a refusal of the data (that would hold a pipeline back instead of
 * retrying).
 */
#include "workers/writer/workspace_pg_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/pgconn.h"
#include "common/numfmt.h"
#include "common/util.h"

static const ws_ops pg_ops;

/* ---- errors --------------------------------------------------------------- */

static void set_msg(wsp *w, const char *m)
{
    snprintf(w->msg, sizeof(w->msg), "%s", m && *m ? m : "unknown error");
    size_t n = strlen(w->msg);
    while (n && (w->msg[n - 1] == '\n' || w->msg[n - 1] == ' '))
        w->msg[--n] = '\0';
    for (char *p = w->msg; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
}

void zx_wsp_fail(wsp *w, const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    /* the server's own sentence (and its hint), without the statement it
     * quotes */
    const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *hint = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
    if (!m || !*m)
        m = w->conn ? PQerrorMessage(w->conn) : "not connected";
    char full[1024];
    snprintf(full, sizeof(full), "%s%s%s", m, hint ? "; hint: " : "", hint ? hint : "");
    set_msg(w, full);
    snprintf(w->sqlstate, sizeof(w->sqlstate), "%s", state ? state : "");
    int lost = !w->conn || PQstatus(w->conn) == CONNECTION_BAD || !state ||
               strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0;
    if (lost) {
        w->broken = 1;
        zx_wsp_set_down(w);
    }
    w->permanent = !lost && zx_wsp_refusal(w);
}

int zx_wsp_refusal(const wsp *w)
{
    /* what passes by itself: the connection, an aborted transaction's
     * follow-up errors, deadlocks and serialization, resources (disk,
     * memory, connections), an operator or a crash, I/O, internal */
    static const char *const transient[] = { "08", "25", "40", "53", "57", "58", "XX", "F0" };
    if (w->broken || strlen(w->sqlstate) != 5)
        return 0;
    for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
        if (strncmp(w->sqlstate, transient[i], 2) == 0)
            return 0;
    return 1; /* the table, its data or its triggers refuse: it will again */
}

PGresult *zx_wsp_exec(wsp *w, const char *sql, int n, const char *const *params)
{
    if (!w->conn || w->broken) {
        w->broken = 1;
        w->permanent = 0;
        set_msg(w, "not connected to Postgres");
        w->sqlstate[0] = '\0';
        return NULL;
    }
    PGresult *r = n ? PQexecParams(w->conn, sql, n, NULL, params, NULL, NULL, 0)
                    : PQexec(w->conn, sql);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return r;
    zx_wsp_fail(w, r);
    PQclear(r);
    return NULL;
}

int zx_wsp_run(wsp *w, const char *sql)
{
    PGresult *r = zx_wsp_exec(w, sql, 0, NULL);
    PQclear(r);
    return r ? 0 : -1;
}

void zx_wsp_set_down(wsp *w)
{
    if (!w->down_since_us)
        w->down_since_us = zx_now_us();
    char since[ZX_TS_BUFSZ];
    zx_ts_format(w->down_since_us, since);
    snprintf(w->status, sizeof(w->status), "workspace unavailable since %s: %s", since, w->msg);
}

/* ---- connecting and the lock ------------------------------------------------- */

/* How long a new writer waits for the session of its dead predecessor
 * to let go of the lock (a terminated backend exits within milliseconds;
 * one whose client vanished waits for its statement to end). */
#define WSP_LOCK_WAIT_MS 10000

/* Who holds the writer lock, into out ("" when nobody visible). */
static void lock_holder(wsp *w, char *out, size_t outlen)
{
    char k1[16], k2[16];
    snprintf(k1, sizeof(k1), "%d", WSP_LOCK_CLASS);
    snprintf(k2, sizeof(k2), "%d", (int)w->lock_key);
    const char *pv[2] = { k1, k2 };
    out[0] = '\0';
    PGresult *r = zx_wsp_exec(w,
        "SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), 'local'),"
        " coalesce(to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '')"
        WSP_LOCK_SESSIONS, 2, pv);
    if (r && PQntuples(r) > 0)
        snprintf(out, outlen, "Postgres session pid %s, application %s, from %s since %s",
                 PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2),
                 PQgetvalue(r, 0, 3));
    PQclear(r);
    char q[512];
    snprintf(q, sizeof(q), "SELECT owner FROM %s.\"_zx_writer\" WHERE id = 1", w->qschema);
    r = zx_wsp_exec(w, q, 0, NULL);
    if (r && PQntuples(r) > 0) {
        size_t n = strlen(out);
        snprintf(out + n, outlen - n, "%s%s", n ? "; " : "", PQgetvalue(r, 0, 0));
    }
    PQclear(r);
    /* zxd sharing the schema (workspace.postgres.shared) */
    snprintf(q, sizeof(q), "SELECT string_agg(owner, '; ') FROM (SELECT owner FROM"
             " %s.\"_zx_hosts\" ORDER BY seen_at DESC LIMIT 3) h", w->qschema);
    r = zx_wsp_exec(w, q, 0, NULL);
    if (r && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) {
        size_t n = strlen(out);
        snprintf(out + n, outlen - n, "%sshared by zxd %s", n ? "; " : "", PQgetvalue(r, 0, 0));
    }
    PQclear(r);
    w->broken = 0; /* a failed look-up says nothing of the connection */
}

/* pg_try_advisory_lock (_shared in a shared workspace) on
 * (WSP_LOCK_CLASS, lock_key): 1 taken, 0 held by another session (in the
 * other mode), -1 failure. */
static int try_lock(wsp *w)
{
    char k1[16], k2[16];
    snprintf(k1, sizeof(k1), "%d", WSP_LOCK_CLASS);
    snprintf(k2, sizeof(k2), "%d", (int)w->lock_key);
    const char *pv[2] = { k1, k2 };
    /* shared: compatible with other shared holders, not with a zxd that
     * has the schema alone (and the other way round) */
    PGresult *r = zx_wsp_exec(w, w->instance ? "SELECT pg_try_advisory_lock_shared($1::int, $2::int)"
                                             : "SELECT pg_try_advisory_lock($1::int, $2::int)",
                              2, pv);
    if (!r)
        return -1;
    int got = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return got;
}

/* A lock held by a session of ours that died with a lost connection (a
 * network cut: the server has not noticed yet): the session whose
 * application_name is exactly ours (it carries this handle's random
 * token, so no other writer, here or elsewhere, has it).  Terminate it.
 * 1 when one was. */
static int free_own_stale_lock(wsp *w, const char *appname)
{
    char k1[16], k2[16];
    snprintf(k1, sizeof(k1), "%d", WSP_LOCK_CLASS);
    snprintf(k2, sizeof(k2), "%d", (int)w->lock_key);
    const char *pv[3] = { k1, k2, appname };
    PGresult *r = zx_wsp_exec(w,
        "SELECT pg_terminate_backend(l.pid, 5000)" WSP_LOCK_SESSIONS
        " AND a.pid <> pg_backend_pid() AND a.application_name = $3", 3, pv);
    int n = r ? PQntuples(r) : 0;
    PQclear(r);
    return n > 0;
}

/* This host's name into host ("?" when unknown). */
static void host_name(char *host, size_t len)
{
    if (gethostname(host, len - 1) < 0)
        snprintf(host, len, "?");
    host[len - 1] = '\0';
}

/* A lock held by the session of this zxd's previous writer, killed (a
 * SIGKILL, a crash) while its session was busy with a statement: the
 * server frees the lock only once that statement ends and it reads the
 * closed socket.  The writer named in _zx_writer is ours when the rest
 * of its line is exactly what this writer would write (the same host,
 * zxd pid and data_dir: w->owner) and its pid is gone from this host;
 * then the sessions holding the lock are terminated.  1 when the writer
 * was ours and dead (its session may still be leaving), 0 otherwise. */
static int free_dead_writer_lock(wsp *w)
{
    if (!w->owner)
        return 0;
    char q[512], host[256], want[1400];
    host_name(host, sizeof(host));
    snprintf(want, sizeof(want), " on host %s, %s", host, w->owner);
    snprintf(q, sizeof(q), "SELECT owner FROM %s.\"_zx_writer\" WHERE id = 1", w->qschema);
    PGresult *r = zx_wsp_exec(w, q, 0, NULL);
    long pid = 0;
    int n = 0, ours = 0;
    if (r && PQntuples(r) == 1) {
        const char *o = PQgetvalue(r, 0, 0);
        ours = sscanf(o, "pid %ld%n", &pid, &n) == 1 && n > 0 && strcmp(o + n, want) == 0 &&
               pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
    }
    PQclear(r);
    w->broken = 0;
    if (!ours)
        return 0;
    char k1[16], k2[16];
    snprintf(k1, sizeof(k1), "%d", WSP_LOCK_CLASS);
    snprintf(k2, sizeof(k2), "%d", (int)w->lock_key);
    const char *pv[2] = { k1, k2 };
    r = zx_wsp_exec(w, "SELECT pg_terminate_backend(l.pid, 5000)" WSP_LOCK_SESSIONS
                       " AND a.pid <> pg_backend_pid()", 2, pv);
    PQclear(r);
    w->broken = 0;
    return 1; /* terminated now, or already on its way out */
}

/* The number of other sessions the server shows holding the lock (-1 when
 * it cannot say). */
static int lock_sessions(wsp *w)
{
    char k1[16], k2[16];
    snprintf(k1, sizeof(k1), "%d", WSP_LOCK_CLASS);
    snprintf(k2, sizeof(k2), "%d", (int)w->lock_key);
    const char *pv[2] = { k1, k2 };
    PGresult *r = zx_wsp_exec(w, "SELECT l.pid" WSP_LOCK_SESSIONS
                                 " AND a.pid <> pg_backend_pid()", 2, pv);
    int n = r ? PQntuples(r) : -1;
    PQclear(r);
    w->broken = 0;
    return n;
}

/* Take the writer lock: 1 taken, 0 held by a live writer, -1 failure.
 * A lock held by this handle's stale session or by this zxd's dead
 * writer is freed; and a session on its way out (killed, or its client
 * gone) leaves pg_locks before the try sees the lock free.  Both wait
 * and try again, for WSP_LOCK_WAIT_MS at most; a live writer of any
 * other zxd is answered 0 at once. */
static int take_lock(wsp *w, const char *appname)
{
    int64_t deadline = zx_now_us() + (int64_t)WSP_LOCK_WAIT_MS * 1000;
    for (;;) {
        int got = try_lock(w);
        if (got != 0)
            return got;
        int again = free_own_stale_lock(w, appname);
        again |= free_dead_writer_lock(w);
        if (!again && lock_sessions(w) == 0)
            again = 1; /* the holder let go between the try and the look */
        if (!again || zx_now_us() >= deadline)
            return 0;
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

/* Connect, take the lock, make the bookkeeping tables.  0, or -1 with
 * w->msg set and *locked = 1 when another zxd holds the lock. */
static int connect_pg(wsp *w, int *locked)
{
    /* the token ties a session to this handle, so that its own stale
     * session can be told from any other writer's (63 bytes at most:
     * Postgres truncates longer names) */
    char appname[64];
    snprintf(appname, sizeof(appname), "%.40s #%s", w->app, w->token);
    static const char *const more[] = { "client_encoding", "UTF8", "keepalives", "1",
                                        "keepalives_interval", "5", "keepalives_count", "3",
                                        "tcp_user_timeout", "30000", NULL };
    zx_pg_connopts o = { .dsn = w->dsn, .shown = w->dsn_shown, .app = appname,
                         .connect_timeout_s = 10, .keepalives_idle_s = 10, .more = more };
    if (w->conn)
        PQfinish(w->conn);
    char m[1400];
    w->conn = zx_pg_connect(&o, m, sizeof(m));
    w->broken = 0;
    if (!w->conn) {
        set_msg(w, m);
        w->broken = 1;
        /* what the server refuses for good: a restart cannot help */
        if (locked && (strstr(m, "authentication failed") || strstr(m, "does not exist") ||
                       strstr(m, "no pg_hba.conf entry") || strstr(m, "permission denied")))
            *locked = 1;
        return -1;
    }
    char q[2048];
    /* IF NOT EXISTS and the like say NOTICE on stderr: not wanted */
    if (zx_wsp_run(w, "SET client_min_messages TO warning") < 0)
        goto fail;
    /* a commit zx acknowledges must survive a crash of the server: never
     * with synchronous_commit off (a server default some set for speed) */
    PGresult *sc = zx_wsp_exec(w, "SELECT current_setting('synchronous_commit')", 0, NULL);
    if (!sc)
        goto fail;
    int off = PQntuples(sc) == 1 && strcmp(PQgetvalue(sc, 0, 0), "off") == 0;
    PQclear(sc);
    if (off && zx_wsp_run(w, "SET synchronous_commit TO on") < 0)
        goto fail;
    /* the schema: made when missing and the role may */
    const char *pv[1] = { w->schema };
    PGresult *r = zx_wsp_exec(w, "SELECT 1 FROM pg_namespace WHERE nspname = $1", 1, pv);
    if (!r)
        goto fail;
    int have = PQntuples(r) > 0;
    PQclear(r);
    if (!have) {
        snprintf(q, sizeof(q), "CREATE SCHEMA IF NOT EXISTS %s", w->qschema);
        if (zx_wsp_run(w, q) < 0) {
            char m[2400];
            snprintf(m, sizeof(m), "schema %s does not exist in Postgres %s and cannot be "
                     "created (%s): create it, or set workspace.postgres.schema", w->schema,
                     w->dsn_shown, w->msg);
            set_msg(w, m);
            if (locked && strncmp(w->sqlstate, "42", 2) == 0)
                *locked = 1;
            return -1;
        }
    }
    int got = take_lock(w, appname);
    if (got < 0)
        goto fail;
    if (got == 0) {
        char who[600];
        lock_holder(w, who, sizeof(who));
        char m[2400];
        if (w->instance)
            snprintf(m, sizeof(m), "workspace Postgres %s schema %s is written by a zxd without "
                     "workspace.postgres.shared (%s): set shared: true on that zxd too, or stop "
                     "it", w->dsn_shown, w->schema, who[0] ? who : "holder unknown");
        else
            snprintf(m, sizeof(m), "workspace Postgres %s schema %s is in use by another zxd: "
                     "a workspace has one writer unless every zxd that writes it sets "
                     "workspace.postgres.shared: true; stop that zxd or set another "
                     "workspace.postgres.schema or database (%s)", w->dsn_shown, w->schema,
                     who[0] ? who : "holder unknown");
        set_msg(w, m);
        if (locked)
            *locked = 1;
        return -1;
    }
    snprintf(q, sizeof(q),
             "CREATE TABLE IF NOT EXISTS %s.\"_zx_checkpoints\"(pipeline TEXT PRIMARY KEY,"
             " seq BIGINT, committed_at TIMESTAMPTZ);"
             "CREATE TABLE IF NOT EXISTS %s.\"_zx_positions\"(pipeline TEXT, part TEXT,"
             " value BYTEA, committed_at TIMESTAMPTZ, PRIMARY KEY(pipeline, part));"
             "CREATE TABLE IF NOT EXISTS %s.\"_zx_writer\"(id INT PRIMARY KEY, owner TEXT,"
             " since TIMESTAMPTZ);"
             "CREATE TABLE IF NOT EXISTS %s.\"_zx_parked\"(pipeline TEXT, tbl TEXT, n BIGINT,"
             " nrows BIGINT, frame BYTEA, reason TEXT, parked_at TIMESTAMPTZ,"
             " PRIMARY KEY(pipeline, tbl, n));"
             "CREATE TABLE IF NOT EXISTS %s.\"_zx_forward\"(pipeline TEXT, n BIGINT,"
             " nrows BIGINT, frame BYTEA, at TIMESTAMPTZ, PRIMARY KEY(pipeline, n));"
             "CREATE TABLE IF NOT EXISTS %s.\"_zx_hosts\"(instance TEXT PRIMARY KEY,"
             " owner TEXT, since TIMESTAMPTZ, seen_at TIMESTAMPTZ)",
             w->qschema, w->qschema, w->qschema, w->qschema, w->qschema, w->qschema);
    if (zx_wsp_run(w, q) < 0) {
        char m[2400];
        snprintf(m, sizeof(m), "cannot create zx's tables in schema %s of Postgres %s (%s): "
                 "grant CREATE on the schema to the role", w->schema, w->dsn_shown, w->msg);
        set_msg(w, m);
        if (locked && strncmp(w->sqlstate, "42", 2) == 0)
            *locked = 1;
        return -1;
    }
    /* shared: the leases of what runs on one zxd at a time
     * (workspace_lease.h) */
    snprintf(q, sizeof(q), "CREATE TABLE IF NOT EXISTS %s.\"_zx_leases\"(name TEXT PRIMARY KEY,"
             " holder TEXT, holder_desc TEXT, taken_at TIMESTAMPTZ, renewed_at TIMESTAMPTZ,"
             " expires_at TIMESTAMPTZ)", w->qschema);
    if (w->instance && zx_wsp_run(w, q) < 0 && strcmp(w->sqlstate, "23505") != 0) {
        char m[2400];
        snprintf(m, sizeof(m), "cannot create table _zx_leases in schema %s of Postgres %s "
                 "(%s): grant CREATE on the schema to the role", w->schema, w->dsn_shown,
                 w->msg);
        set_msg(w, m);
        return -1;
    }
    char host[256];
    host_name(host, sizeof(host));
    char who[1200];
    snprintf(who, sizeof(who), "pid %ld on host %s%s%s", (long)getpid(), host,
             w->owner ? ", " : "", w->owner ? w->owner : "");
    const char *wv[2] = { who, w->instance };
    if (w->instance)
        snprintf(q, sizeof(q), "INSERT INTO %s.\"_zx_hosts\"(instance, owner, since, seen_at)"
                 " VALUES ($2, 'instance ' || $2 || ', ' || $1, now(), now()) ON CONFLICT"
                 " (instance) DO UPDATE SET owner = excluded.owner, since = excluded.since,"
                 " seen_at = excluded.seen_at", w->qschema);
    else
        snprintf(q, sizeof(q), "INSERT INTO %s.\"_zx_writer\"(id, owner, since) VALUES (1, $1,"
                 " now()) ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, since ="
                 " excluded.since", w->qschema);
    r = zx_wsp_exec(w, q, w->instance ? 2 : 1, wv);
    PQclear(r); /* only for the message of a second zxd */
    w->broken = 0;
    w->permanent = 0;
    zx_wsp_notice_listen(w); /* shared: the other zxd's commits */
    return 0;
fail:
    {
        char m[2400];
        snprintf(m, sizeof(m), "Postgres %s: %s", w->dsn_shown, w->msg);
        set_msg(w, m);
    }
    return -1;
}

zx_ws *zx_ws_open_postgres(const char *dsn, const char *dsn_shown, const char *schema,
                           const char *application_name, const char *owner,
                           const char *instance, int *locked, char *err, size_t errlen)
{
    if (locked)
        *locked = 0;
    wsp *w = calloc(1, sizeof(*w));
    if (!w) {
        zx_seterr(err, errlen, "workspace: out of memory");
        return NULL;
    }
    ws_init(&w->base, &pg_ops);
    zx_buf qs = { 0 };
    const char *sch = schema && *schema ? schema : "public";
    w->dsn = strdup(dsn ? dsn : "");
    w->dsn_shown = strdup(dsn_shown ? dsn_shown : "(dsn)");
    w->schema = strdup(sch);
    w->app = strdup(application_name && *application_name ? application_name : "zxd");
    w->owner = owner ? strdup(owner) : NULL;
    w->instance = instance ? strdup(instance) : NULL;
    if (!w->dsn || !w->dsn_shown || !w->schema || !w->app || (owner && !w->owner) ||
        (instance && !w->instance) ||
        zx_wsp_ident(&qs, sch) < 0) {
        zx_buf_free(&qs);
        zx_seterr(err, errlen, "workspace: out of memory");
        zx_ws_close(&w->base);
        return NULL;
    }
    w->qschema = qs.p;
    w->lock_key = zx_wsp_lock_key(sch);
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        rnd = (uint64_t)zx_now_us() ^ ((uint64_t)getpid() << 32);
    snprintf(w->token, sizeof(w->token), "%016llx", (unsigned long long)rnd);
    if (connect_pg(w, locked) < 0) {
        zx_seterr(err, errlen, "workspace: %s", w->msg);
        zx_ws_close(&w->base);
        return NULL;
    }
    return &w->base;
}

static void p_close(zx_ws *ws)
{
    wsp *w = WSP(ws);
    if (w->base.in_txn)
        zx_ws_rollback(ws);
    ws_fini(ws);
    if (w->conn)
        PQfinish(w->conn); /* releases the advisory lock */
    zx_wsp_copy_free(w);
    zx_buf_free(&w->sql);
    free(w->dsn);
    free(w->dsn_shown);
    free(w->schema);
    free(w->app);
    free(w->owner);
    free(w->instance);
    free(w->qschema);
    free(w);
}

static const char *p_errmsg(zx_ws *ws)
{
    return WSP(ws)->msg[0] ? WSP(ws)->msg : "no error";
}

static const char *p_status(zx_ws *ws)
{
    return WSP(ws)->status[0] ? WSP(ws)->status : NULL;
}

/* ---- transactions ------------------------------------------------------- */

static int p_begin(zx_ws *ws, char *err, size_t errlen)
{
    wsp *w = WSP(ws);
    if (!w->conn || w->broken) {
        int locked = 0;
        int64_t now = zx_now_us();
        ws_cache_drop(ws);
        if (now < w->next_try_us) /* backing off: say why without trying */
            return zx_seterr(err, errlen, "workspace: %s", w->msg);
        if (connect_pg(w, &locked) < 0) {
            /* 100 ms doubling to 5 s between attempts */
            w->backoff_us = w->backoff_us ? (w->backoff_us * 2 > 5000000 ? 5000000
                                                                         : w->backoff_us * 2)
                                          : 100000;
            w->next_try_us = zx_now_us() + w->backoff_us;
            if (!w->down_since_us)
                w->down_since_us = now;
            zx_wsp_set_down(w);
            return zx_seterr(err, errlen, "workspace: %s", w->msg);
        }
        w->down_since_us = 0;
        w->backoff_us = w->next_try_us = 0;
        w->status[0] = '\0';
    }
    if (zx_wsp_run(w, "BEGIN") < 0)
        return zx_seterr(err, errlen, "workspace: begin: %s", w->msg);
    return 0;
}

static int p_commit(zx_ws *ws, char *err, size_t errlen)
{
    wsp *w = WSP(ws);
    PGresult *r = zx_wsp_exec(w, "COMMIT", 0, NULL);
    if (!r)
        return zx_seterr(err, errlen, "workspace: commit: %s", w->msg);
    /* an aborted transaction answers COMMIT with ROLLBACK: nothing was
     * committed, and nothing may be acknowledged */
    int ok = strcmp(PQcmdStatus(r), "COMMIT") == 0;
    PQclear(r);
    if (!ok) {
        snprintf(w->msg, sizeof(w->msg), "the transaction was aborted by an earlier error "
                 "and rolled back");
        w->permanent = 0;
        return zx_seterr(err, errlen, "workspace: commit: %s", w->msg);
    }
    return 0;
}

static void p_rollback(zx_ws *ws)
{
    wsp *w = WSP(ws);
    zx_wsp_rows_abort(ws);
    if (w->conn && !w->broken && PQtransactionStatus(w->conn) != PQTRANS_IDLE) {
        PGresult *r = PQexec(w->conn, "ROLLBACK");
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
            zx_wsp_fail(w, r);
        PQclear(r);
    }
}

static int p_savepoint(zx_ws *ws)
{
    return zx_wsp_run(WSP(ws), "SAVEPOINT zx_frame");
}

static int p_savepoint_release(zx_ws *ws)
{
    return zx_wsp_run(WSP(ws), "RELEASE SAVEPOINT zx_frame");
}

static int p_savepoint_rollback(zx_ws *ws)
{
    wsp *w = WSP(ws);
    char keep[sizeof(w->msg)], state[sizeof(w->sqlstate)];
    int perm = w->permanent;
    memcpy(keep, w->msg, sizeof(keep));
    memcpy(state, w->sqlstate, sizeof(state));
    zx_wsp_rows_abort(ws);
    int rc = zx_wsp_run(w, "ROLLBACK TO SAVEPOINT zx_frame; RELEASE SAVEPOINT zx_frame");
    if (rc == 0) { /* the error that led here is still the one to tell */
        memcpy(w->msg, keep, sizeof(keep));
        memcpy(w->sqlstate, state, sizeof(state));
        w->permanent = perm;
    }
    return rc;
}

static int p_failure_is_permanent(zx_ws *ws)
{
    wsp *w = WSP(ws);
    return w->permanent && !w->broken;
}

/* ---- checkpoints and positions ------------------------------------------- */

/* The name pipeline's rows go under in zx's tables of one zxd's own
 * bookkeeping (_zx_checkpoints, _zx_parked, _zx_forward): the pipeline's
 * name, or in a shared workspace "<instance>/<pipeline>" (two zxd may
 * each have a pipeline of that name, with rings of their own).  Into
 * buf (WSP_KEY_MAX bytes; a pipeline name is far shorter).  Returns buf
 * or pipeline. */
#define WSP_KEY_MAX 512
static const char *own_key(const wsp *w, const char *pipeline, char *buf)
{
    if (!w->instance)
        return pipeline;
    snprintf(buf, WSP_KEY_MAX, "%s/%s", w->instance, pipeline);
    return buf;
}

static int p_checkpoint_get(zx_ws *ws, const char *pipeline, uint64_t *seq)
{
    wsp *w = WSP(ws);
    char q[256];
    snprintf(q, sizeof(q), "SELECT seq FROM %s.\"_zx_checkpoints\" WHERE pipeline = $1",
             w->qschema);
    char key[WSP_KEY_MAX];
    const char *pv[1] = { own_key(w, pipeline, key) };
    PGresult *r = zx_wsp_exec(w, q, 1, pv);
    if (!r)
        return -1;
    if (PQntuples(r) > 0)
        *seq = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return 0;
}

static int p_checkpoint_set(zx_ws *ws, const char *pipeline, uint64_t seq, int64_t now_us)
{
    wsp *w = WSP(ws);
    char q[384], s[32], ts[ZX_TS_BUFSZ];
    snprintf(q, sizeof(q), "INSERT INTO %s.\"_zx_checkpoints\"(pipeline, seq, committed_at)"
             " VALUES ($1, $2, $3) ON CONFLICT (pipeline) DO UPDATE SET seq = excluded.seq,"
             " committed_at = excluded.committed_at", w->qschema);
    snprintf(s, sizeof(s), "%lld", (long long)seq);
    zx_ts_format(now_us, ts);
    char key[WSP_KEY_MAX];
    const char *pv[3] = { own_key(w, pipeline, key), s, ts };
    PGresult *r = zx_wsp_exec(w, q, 3, pv);
    PQclear(r);
    return r ? 0 : -1;
}

static int p_checkpoint_prune(zx_ws *ws, const char *prefix, const char *keep1,
                              const char *keep2)
{
    wsp *w = WSP(ws);
    char q[320];
    snprintf(q, sizeof(q), "DELETE FROM %s.\"_zx_checkpoints\" WHERE left(pipeline,"
             " length($1)) = $1 AND pipeline NOT IN ($2, $3)", w->qschema);
    char k0[WSP_KEY_MAX], k1[WSP_KEY_MAX], k2[WSP_KEY_MAX];
    const char *pv[3] = { own_key(w, prefix, k0), own_key(w, keep1, k1), own_key(w, keep2, k2) };
    PGresult *r = zx_wsp_exec(w, q, 3, pv);
    PQclear(r);
    return r ? 0 : -1;
}

static int p_position_set(zx_ws *ws, const char *pipeline, const char *part, const void *val,
                          size_t len, int64_t now_us)
{
    wsp *w = WSP(ws);
    char q[384], ts[ZX_TS_BUFSZ];
    snprintf(q, sizeof(q), "INSERT INTO %s.\"_zx_positions\"(pipeline, part, value,"
             " committed_at) VALUES ($1, $2, $3, $4) ON CONFLICT (pipeline, part) DO UPDATE"
             " SET value = excluded.value, committed_at = excluded.committed_at", w->qschema);
    zx_ts_format(now_us, ts);
    const char *pv[4] = { pipeline, part, len ? val : "", ts };
    int lens[4] = { 0, 0, (int)len, 0 };
    int fmts[4] = { 0, 0, 1, 0 };
    if (len > INT32_MAX || !w->conn || w->broken) {
        w->broken = !w->conn || w->broken;
        return -1;
    }
    PGresult *r = PQexecParams(w->conn, q, 4, NULL, pv, lens, fmts, 0);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        zx_wsp_fail(w, r);
        PQclear(r);
        return -1;
    }
    PQclear(r);
    return 0;
}

static int p_positions_each(zx_ws *ws, zx_ws_position_cb cb, void *ctx)
{
    wsp *w = WSP(ws);
    char q[256];
    snprintf(q, sizeof(q), "SELECT pipeline, part, value FROM %s.\"_zx_positions\""
             " ORDER BY pipeline, part", w->qschema);
    if (!w->conn || w->broken)
        return -1;
    PGresult *r = PQexecParams(w->conn, q, 0, NULL, NULL, NULL, NULL, 1);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        zx_wsp_fail(w, r);
        PQclear(r);
        return -1;
    }
    int stop = 0;
    for (int i = 0; i < PQntuples(r) && !stop; i++) {
        const char *p = PQgetvalue(r, i, 0), *part = PQgetvalue(r, i, 1);
        if (*p && *part && !PQgetisnull(r, i, 2))
            stop = cb(p, part, PQgetvalue(r, i, 2), (size_t)PQgetlength(r, i, 2), ctx);
    }
    PQclear(r);
    return stop;
}

/* Delete the rows of pipeline in zx's own table `table` (_zx_positions,
 * _zx_parked, _zx_forward): 0, or -1 (logged by zx_wsp_exec). */
static int p_pipeline_rows_drop(wsp *w, const char *table, const char *pipeline)
{
    char q[256];
    snprintf(q, sizeof(q), "DELETE FROM %s.\"%s\" WHERE pipeline = $1", w->qschema, table);
    const char *pv[1] = { pipeline };
    PGresult *r = zx_wsp_exec(w, q, 1, pv);
    PQclear(r);
    return r ? 0 : -1;
}

static int p_positions_drop(zx_ws *ws, const char *pipeline)
{
    /* shared: positions are the upstream's, which another zxd may read
     * under the same pipeline name (a Kafka group): kept */
    if (WSP(ws)->instance)
        return 0;
    return p_pipeline_rows_drop(WSP(ws), "_zx_positions", pipeline);
}

/* ---- parked frames (writer_park.c) --------------------------------------- */

/* Run q with n parameters (pv, lens, fmts: libpq's), results in format
 * rfmt: the result of the expected status, or NULL (failure recorded). */
static PGresult *park_exec(wsp *w, const char *q, int n, const char *const *pv,
                           const int *lens, const int *fmts, int rfmt, ExecStatusType want)
{
    if (!w->conn || w->broken) {
        w->broken = 1;
        return NULL;
    }
    PGresult *r = PQexecParams(w->conn, q, n, NULL, pv, lens, fmts, rfmt);
    if (!r || PQresultStatus(r) != want) {
        zx_wsp_fail(w, r);
        PQclear(r);
        return NULL;
    }
    return r;
}

static int p_park_put(zx_ws *ws, const char *pipeline, const char *table, uint64_t n,
                      uint64_t rows, const void *frame, size_t len, const char *reason, int64_t now_us)
{
    wsp *w = WSP(ws);
    char q[320], ns[32], rs[32], ts[ZX_TS_BUFSZ];
    snprintf(q, sizeof(q), "INSERT INTO %s.\"_zx_parked\"(pipeline, tbl, n, frame, reason,"
             " parked_at, nrows) VALUES ($1, $2, $3, $4, $5, $6, $7)", w->qschema);
    snprintf(ns, sizeof(ns), "%llu", (unsigned long long)n);
    snprintf(rs, sizeof(rs), "%llu", (unsigned long long)rows);
    zx_ts_format(now_us, ts);
    if (len > INT32_MAX)
        return -1;
    char key[WSP_KEY_MAX];
    const char *pv[7] = { own_key(w, pipeline, key), table, ns, len ? frame : "",
                          reason ? reason : "", ts, rs };
    int lens[7] = { 0, 0, 0, (int)len, 0, 0, 0 };
    int fmts[7] = { 0, 0, 0, 1, 0, 0, 0 };
    PGresult *r = park_exec(w, q, 7, pv, lens, fmts, 0, PGRES_COMMAND_OK);
    PQclear(r);
    return r ? 0 : -1;
}

static int p_park_first(zx_ws *ws, const char *pipeline, const char *table, uint64_t *n,
                        void **frame, size_t *len)
{
    wsp *w = WSP(ws);
    char q[256];
    snprintf(q, sizeof(q), "SELECT n::text::bytea, frame FROM %s.\"_zx_parked\" WHERE"
             " pipeline = $1 AND tbl = $2 ORDER BY n LIMIT 1", w->qschema);
    char key[WSP_KEY_MAX];
    const char *pv[2] = { own_key(w, pipeline, key), table };
    PGresult *r = park_exec(w, q, 2, pv, NULL, NULL, 1, PGRES_TUPLES_OK);
    if (!r)
        return -1;
    int ret = 0;
    if (PQntuples(r) > 0) {
        char ns[32];
        int nl = PQgetlength(r, 0, 0);
        snprintf(ns, sizeof(ns), "%.*s", nl < 31 ? nl : 31, PQgetvalue(r, 0, 0));
        *n = strtoull(ns, NULL, 10);
        *len = (size_t)PQgetlength(r, 0, 1);
        *frame = malloc(*len ? *len : 1);
        ret = *frame ? 1 : -1;
        if (*frame && *len)
            memcpy(*frame, PQgetvalue(r, 0, 1), *len);
    }
    PQclear(r);
    return ret;
}

static int p_park_del(zx_ws *ws, const char *pipeline, const char *table, uint64_t n)
{
    wsp *w = WSP(ws);
    char q[256], ns[32];
    snprintf(q, sizeof(q), "DELETE FROM %s.\"_zx_parked\" WHERE pipeline = $1 AND tbl = $2"
             " AND n = $3", w->qschema);
    snprintf(ns, sizeof(ns), "%llu", (unsigned long long)n);
    char key[WSP_KEY_MAX];
    const char *pv[3] = { own_key(w, pipeline, key), table, ns };
    PGresult *r = zx_wsp_exec(w, q, 3, pv);
    PQclear(r);
    return r ? 0 : -1;
}

static int p_parked_drop(zx_ws *ws, const char *pipeline)
{
    char key[WSP_KEY_MAX];
    return p_pipeline_rows_drop(WSP(ws), "_zx_parked", own_key(WSP(ws), pipeline, key));
}

static int p_parked_each(zx_ws *ws, zx_ws_parked_cb cb, void *ctx)
{
    wsp *w = WSP(ws);
    char q[256];
    /* shared: this zxd's own, under their pipelines' names */
    char pre[WSP_KEY_MAX];
    own_key(w, "", pre);
    snprintf(q, sizeof(q), "SELECT substr(pipeline, length($1) + 1), tbl, count(*), sum(nrows),"
             " sum(octet_length(frame)), max(n) FROM %s.\"_zx_parked\" WHERE"
             " left(pipeline, length($1)) = $1 GROUP BY pipeline, tbl", w->qschema);
    const char *pv[1] = { w->instance ? pre : "" };
    PGresult *r = park_exec(w, q, 1, pv, NULL, NULL, 0, PGRES_TUPLES_OK);
    if (!r)
        return -1;
    int stop = 0;
    for (int i = 0; i < PQntuples(r) && !stop; i++)
        stop = cb(PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
                  strtoull(PQgetvalue(r, i, 2), NULL, 10),
                  strtoull(PQgetvalue(r, i, 3), NULL, 10),
                  strtoull(PQgetvalue(r, i, 4), NULL, 10),
                  strtoull(PQgetvalue(r, i, 5), NULL, 10), ctx);
    PQclear(r);
    return stop;
}

/* ---- the forward journal (writer_apply.c) -------------------------------- */

static int p_forward_put(zx_ws *ws, const char *pipeline, uint64_t n, const void *frame,
                         size_t len, uint64_t nrows, int64_t now_us)
{
    wsp *w = WSP(ws);
    char q[320], ns[32], rs[32], ts[ZX_TS_BUFSZ];
    snprintf(q, sizeof(q), "INSERT INTO %s.\"_zx_forward\"(pipeline, n, nrows, frame, at)"
             " VALUES ($1, $2, $3, $4, $5)", w->qschema);
    snprintf(ns, sizeof(ns), "%llu", (unsigned long long)n);
    snprintf(rs, sizeof(rs), "%llu", (unsigned long long)nrows);
    zx_ts_format(now_us, ts);
    if (len > INT32_MAX)
        return -1;
    const char *pv[5] = { pipeline, ns, rs, len ? frame : "", ts };
    int lens[5] = { 0, 0, 0, (int)len, 0 };
    int fmts[5] = { 0, 0, 0, 1, 0 };
    PGresult *r = park_exec(w, q, 5, pv, lens, fmts, 0, PGRES_COMMAND_OK);
    PQclear(r);
    return r ? 0 : -1;
}

static int p_forward_last(zx_ws *ws, const char *pipeline, uint64_t *n)
{
    wsp *w = WSP(ws);
    char q[256];
    snprintf(q, sizeof(q), "SELECT coalesce(max(n), 0) FROM %s.\"_zx_forward\" WHERE"
             " pipeline = $1", w->qschema);
    const char *pv[1] = { pipeline };
    PGresult *r = park_exec(w, q, 1, pv, NULL, NULL, 0, PGRES_TUPLES_OK);
    if (!r)
        return -1;
    int ret = PQntuples(r) == 1 ? 0 : -1;
    if (ret == 0)
        *n = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return ret;
}

static int p_forward_drop(zx_ws *ws, const char *pipeline)
{
    return p_pipeline_rows_drop(WSP(ws), "_zx_forward", pipeline);
}

/* Fitted values as text parameters: pv[i] (NULL: SQL NULL) points into
 * num or own, malloc'ed here and freed with params_free. */
typedef struct pgparams {
    char (*num)[40];
    const char **pv;
    char *own;
} pgparams;

static void params_free(pgparams *pp)
{
    free(pp->num), free(pp->pv), free(pp->own);
}

/* 0, or -1 out of memory (nothing to free). */
static int params_of(const zx_fit_out *vals, uint32_t n, pgparams *pp)
{
    memset(pp, 0, sizeof(*pp));
    pp->num = n ? malloc(n * sizeof(*pp->num)) : NULL;
    pp->pv = n ? malloc(n * sizeof(*pp->pv)) : NULL;
    size_t ownlen = 0; /* text that needs a NUL: copied */
    for (uint32_t i = 0; i < n; i++)
        if (vals[i].st == ZX_FIT_S_TEXT)
            ownlen += vals[i].len + 1;
    pp->own = ownlen ? malloc(ownlen) : NULL;
    if ((n && (!pp->num || !pp->pv)) || (ownlen && !pp->own)) {
        params_free(pp);
        return -1;
    }
    char *at = pp->own;
    for (uint32_t i = 0; i < n; i++) {
        const zx_fit_out *o = &vals[i];
        switch (o->st) {
        case ZX_FIT_S_INT:
            pp->num[i][zx_fmt_i64(pp->num[i], o->i)] = '\0';
            pp->pv[i] = pp->num[i];
            break;
        case ZX_FIT_S_REAL:
            snprintf(pp->num[i], sizeof(pp->num[i]), "%.17g", o->d);
            pp->pv[i] = pp->num[i];
            break;
        case ZX_FIT_S_TEXT:
            memcpy(at, o->s, o->len);
            at[o->len] = '\0';
            pp->pv[i] = at;
            at += o->len + 1;
            break;
        default: pp->pv[i] = NULL; break;
        }
    }
    return 0;
}

/* One statement with fitted values as text parameters (mirrors). */
static int p_exec_row(zx_ws *ws, const char *sql, const zx_fit_out *vals, uint32_t n,
                      uint64_t *changed, char *why, size_t whylen, char *err, size_t errlen)
{
    wsp *w = WSP(ws);
    *changed = 0;
    pgparams pp;
    if (params_of(vals, n, &pp) < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    int rc = zx_wsp_guarded(w, sql, (int)n, pp.pv);
    params_free(&pp);
    if (rc == 0) {
        *changed = w->last_changed;
        return 0;
    }
    if (rc == 1) {
        snprintf(why, whylen, "%s", w->msg);
        return 1;
    }
    return zx_seterr(err, errlen, "workspace: %s", w->msg);
}

/* A query whose rows are (integer, text): ws_ops.query_pairs. */
static int p_query_pairs(zx_ws *ws, const char *sql, const zx_fit_out *vals, uint32_t n,
                         zx_ws_pair_cb cb, void *ctx, char *err, size_t errlen)
{
    wsp *w = WSP(ws);
    pgparams pp;
    if (params_of(vals, n, &pp) < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    PGresult *r = zx_wsp_exec(w, sql, (int)n, pp.pv);
    params_free(&pp);
    if (!r)
        return zx_seterr(err, errlen, "workspace: %s", w->msg);
    int ret = 0;
    if (PQnfields(r) != 2) {
        ret = zx_seterr(err, errlen, "workspace: a lookup returned %d columns", PQnfields(r));
    } else {
        for (int i = 0; i < PQntuples(r); i++)
            if (!PQgetisnull(r, i, 0) && !PQgetisnull(r, i, 1))
                cb(ctx, strtoll(PQgetvalue(r, i, 0), NULL, 10), PQgetvalue(r, i, 1),
                   (size_t)PQgetlength(r, i, 1));
    }
    PQclear(r);
    return ret;
}

static const ws_ops pg_ops = {
    .name = "postgres",
    .close = p_close,
    .begin = p_begin,
    .commit = p_commit,
    .rollback = p_rollback,
    .savepoint = p_savepoint,
    .savepoint_release = p_savepoint_release,
    .savepoint_rollback = p_savepoint_rollback,
    .failure_is_permanent = p_failure_is_permanent,
    .checkpoint_get = p_checkpoint_get,
    .checkpoint_set = p_checkpoint_set,
    .checkpoint_prune = p_checkpoint_prune,
    .position_set = p_position_set,
    .positions_each = p_positions_each,
    .positions_drop = p_positions_drop,
    .position_lock = zx_wsp_position_lock,
    .park_put = p_park_put,
    .park_first = p_park_first,
    .park_del = p_park_del,
    .parked_drop = p_parked_drop,
    .parked_each = p_parked_each,
    .forward_put = p_forward_put,
    .forward_last = p_forward_last,
    .forward_drop = p_forward_drop,
    .errmsg = p_errmsg,
    .status = p_status,
    .name_cmp = zx_wsp_name_cmp,
    .decl_for_type = zx_wsp_decl_for_type,
    .kind_from_decl = zx_wsp_kind_from_decl,
    .load_table = zx_wsp_load_table,
    .create_table = zx_wsp_create_table,
    .add_column = zx_wsp_add_column,
    .retype_column = zx_wsp_retype_column,
    .table_free = zx_wsp_table_free,
    .rows_begin = zx_wsp_rows_begin,
    .put = zx_wsp_put,
    .row_end = zx_wsp_row_end,
    .rows_end = zx_wsp_rows_end,
    .rows_abort = zx_wsp_rows_abort,
    .refuses = zx_wsp_refuses,
    .reject_row = zx_wsp_reject_row,
    .notice_changes = zx_wsp_notice_changes,
    .notice_fd = zx_wsp_notice_fd,
    .notices = zx_wsp_notices,
    .decl_for_source = zx_wsp_decl_for_source,
    .param = zx_wsp_param,
    .array_param = zx_wsp_array_param,
    .array_add = zx_wsp_array_add,
    .exec_row = p_exec_row,
    .query_pairs = p_query_pairs,
    .bytes_collation = " COLLATE \"C\"",
    .key_index = zx_wsp_key_index,
    .table_sql = zx_wsp_table_sql,
    .ident = zx_wsp_ident,
};
