/*
 * query_pg_int.h — what query_pg.c (the query on the PostgreSQL
 * workspace) and query_pg_role.c (the author's role it runs as) share;
 * private to those two.
 */
#ifndef ZX_SYNCS_QUERY_PG_INT_H
#define ZX_SYNCS_QUERY_PG_INT_H

#include <stddef.h>

#include <libpq-fe.h>

#include "conf/config.h"

/* The secret key of author passwords: <data_dir>/author.key, 32 random
 * bytes, made if missing.  0 or -1 (err set). */
int zx_qpg_author_key(const char *data_dir, unsigned char key[32], char *err, size_t errlen);

/* err = "sync S: what: <the server's message>" (its first line), from r
 * (may be NULL) or else the connection. */
void zx_qpg_message(PGconn *c, const PGresult *r, const char *sync, const char *what,
                    char *err, size_t errlen);

/* name as a quoted identifier into out (len bytes).  0, or -1 out of
 * memory (err not set). */
int zx_qpg_quoted(PGconn *c, const char *name, char *out, size_t len);

/* Make the author's role (name role, password pw) or bring it in step
 * (query_pg.c's opening comment), with the workspace's own connection
 * (connect_timeout from timeout_ms), in one transaction under a lock of
 * that role alone; the unmarked role an older zx made for the author
 * (legacy) is dropped there, best effort.  0, or -1 (err set). */
int zx_qpg_ensure_role(const zx_conf *conf, const char *sync, const zx_conf_author *a,
                       const char *role, const char *legacy, const char *pw, int timeout_ms,
                       char *err, size_t errlen);

#endif
