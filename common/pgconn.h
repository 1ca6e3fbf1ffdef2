/*
 * pgconn.h — the one libpq client of zx's processes: connecting with a
 * deadline, the server's error text with its context, quoting names and
 * literals, running a statement and reading one value.  Every Postgres
 * user (the CDC source, its checks and slot drop, the reverse syncs'
 * reader and destination, the writer's Postgres workspace, verify) goes
 * through these instead of its own copy.
 *
 * Messages follow zx's convention (common/util.h): they name the server
 * by its shown dsn (never the dsn itself, which may hold a password) and
 * say what was being done.  Nothing here keeps state between calls.
 */
#ifndef ZX_COMMON_PGCONN_H
#define ZX_COMMON_PGCONN_H

#include <libpq-fe.h>
#include <stddef.h>

/* How to connect.  Only dsn is required; a zero field takes its default. */
typedef struct {
    const char *dsn;          /* conninfo or URI (given to libpq as dbname) */
    const char *shown;        /* the dsn as it may be shown; NULL: "(dsn)" */
    const char *app;          /* application_name; NULL: "zxd" */
    const char *options;      /* libpq `options` (-c settings); NULL: none */
    const char *replication;  /* "database" for a logical replication
                               * connection; NULL: a normal one */
    const char *purpose;      /* said after the server in the connect
                               * error, e.g. "for replication"; NULL: none */
    int connect_timeout_s;    /* libpq connect_timeout; <= 0: 10 (libpq's
                               * least is 2) */
    int keepalives_idle_s;    /* > 0: TCP keepalives after that idle time */
    int statement_timeout_ms; /* > 0: SET statement_timeout once connected
                               * (a statement of its own, so that the dsn's
                               * own `options` stay) */
    const char *const *more;  /* further libpq keywords and values, in
                               * pairs, ended by NULL (at most 8 pairs);
                               * NULL: none */
} zx_pg_connopts;

/* Connect as o says.  Returns the connection (the caller PQfinish-es it),
 * or NULL with "cannot connect to Postgres <shown>[ <purpose>]: <libpq's
 * message on one line>" in err (or "Postgres <shown>: setting
 * statement_timeout: ..." when that statement fails). */
PGconn *zx_pg_connect(const zx_pg_connopts *o, char *err, size_t errlen);

/* m on one line: newlines, tabs and carriage returns become spaces,
 * trailing spaces go; "unknown error" for NULL or "".  Cut to dstlen
 * bytes (NUL-terminated). Returns dst. */
char *zx_pg_one_line(char *dst, size_t dstlen, const char *m);

/* The reason a statement failed, on one line in dst: the server's primary
 * message when r carries one, else libpq's message for c (r may be NULL:
 * out of memory, connection lost).  Returns dst. */
char *zx_pg_reason(PGconn *c, const PGresult *r, char *dst, size_t dstlen);

/* A failure of a statement: sets err to "Postgres <shown>: <what>:
 * <reason>" (without "Postgres <shown>: " when shown is NULL, without
 * "<what>: " when what is NULL), PQclear-s r (may be NULL) and returns
 * -1. */
int zx_pg_fail(PGconn *c, PGresult *r, const char *shown, const char *what, char *err,
               size_t errlen);

/* Run sql with n text parameters (params[0..n), NULL elements are SQL
 * NULL).  Returns the result when it has rows or completed a command (the
 * caller PQclear-s it), or NULL with zx_pg_fail's message in err. */
PGresult *zx_pg_exec(PGconn *c, const char *shown, const char *what, const char *sql, int n,
                     const char *const *params, char *err, size_t errlen);

/* Run sql (as zx_pg_exec) and copy the first column of its first row to
 * out (outlen bytes, NUL-terminated, cut to fit).  Returns 1 with the
 * value, 0 when there is no row or the value is NULL (out is ""), -1 with
 * the error in err. */
int zx_pg_value(PGconn *c, const char *shown, const char *what, const char *sql, int n,
                const char *const *params, char *out, size_t outlen, char *err,
                size_t errlen);

/* name quoted as an identifier ("a""b"), or s as a literal ('it''s', E''
 * where needed), by libpq for c's encoding.  Returns a string the caller
 * free()s, or NULL (out of memory, or bytes invalid in the encoding: the
 * reason in err, as "Postgres: quoting <what>: <libpq's message>"). */
char *zx_pg_ident(PGconn *c, const char *name, char *err, size_t errlen);
char *zx_pg_literal(PGconn *c, const char *s, char *err, size_t errlen);

#endif
