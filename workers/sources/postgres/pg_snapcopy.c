/*
 * pg_snapcopy.c — the initial copy from an exported snapshot
 * (pg_snapcopy.h).  COPY in binary form when every column's type has one
 * zx reads (pg_binary.h; bytea aside: the stream sends it as "\x..." text)
 * and the server's encoding is UTF8: the same values as the text form,
 * without the server formatting nor zx parsing timestamps and floats.
 * Else COPY's text format: one line per row, columns separated by tabs,
 * \N for NULL, backslash escapes (\b \f \n \r \t \v \\, \NNN octal,
 * \xHH hex) for the rest.
 */
#include "workers/sources/postgres/pg_snapcopy.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "common/pgconn.h"
#include "common/util.h"
#include "workers/sources/postgres/pg_binary.h"
#include "workers/sources/postgres/pg_repl.h"
#include "workers/sources/postgres/pg_values.h"

#define MAX_COLS 1600u

struct zx_pgc {
    PGconn *conn;
    char *shown;
    uint32_t ncols;
    char **names, **decls;
    uint32_t *oids;
    int64_t *rscol;         /* column i -> rowset column (per read) */
    int copying;
    char *line;             /* PQgetCopyData's buffer */
    char *val;              /* unescaped value scratch */
    size_t val_cap;
    int binary;             /* this COPY is in binary form */
    zx_pgbin_copy bin;      /* binary: the reader */
};

static int fail(zx_pgc *c, PGresult *res, const char *what, char *err, size_t errlen)
{
    return zx_pg_fail(c->conn, res, c->shown, what, err, errlen);
}

static void free_cols(zx_pgc *c)
{
    for (uint32_t i = 0; i < c->ncols; i++) {
        free(c->names[i]);
        free(c->decls[i]);
    }
    free(c->names);
    free(c->decls);
    free(c->oids);
    free(c->rscol);
    zx_pgbin_copy_free(&c->bin);
    c->names = c->decls = NULL;
    c->oids = NULL;
    c->rscol = NULL;
    c->ncols = 0;
}

zx_pgc *zx_pgc_open(const char *dsn, const char *dsn_shown, const char *snapshot, char *err,
                    size_t errlen)
{
    zx_pgc *c = calloc(1, sizeof(*c));
    if (!c || !(c->shown = strdup(dsn_shown ? dsn_shown : "(dsn)"))) {
        free(c);
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    zx_pg_connopts o = { .dsn = dsn, .shown = c->shown, .app = "zxd initial copy",
                         .options = ZX_PG_SESSION_OPTIONS, .connect_timeout_s = 10 };
    if (!(c->conn = zx_pg_connect(&o, err, errlen))) {
        zx_pgc_close(c);
        return NULL;
    }
    PGresult *r = PQexec(c->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        fail(c, r, "BEGIN", err, errlen);
        zx_pgc_close(c);
        return NULL;
    }
    PQclear(r);
    if (snapshot && *snapshot) {
        const char *pv[1] = { snapshot };
        /* SET TRANSACTION SNAPSHOT takes no parameter: the name is a
         * literal, checked to be what Postgres makes (hex digits and -) */
        for (const char *p = snapshot; *p; p++)
            if (!strchr("0123456789ABCDEFabcdef-", *p)) {
                zx_seterr(err, errlen, "not a snapshot name: %.60s", snapshot);
                zx_pgc_close(c);
                return NULL;
            }
        char q[160];
        snprintf(q, sizeof(q), "SET TRANSACTION SNAPSHOT '%s'", pv[0]);
        r = PQexec(c->conn, q);
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
            fail(c, r, "SET TRANSACTION SNAPSHOT", err, errlen);
            zx_pgc_close(c);
            return NULL;
        }
        PQclear(r);
    }
    return c;
}

int zx_pgc_table(zx_pgc *c, const char *schema, const char *table, char *err, size_t errlen)
{
    free_cols(c);
    if (c->copying)
        return zx_seterr(err, errlen, "a copy is still running");
    char *qs = PQescapeIdentifier(c->conn, schema, strlen(schema));
    char *qt = PQescapeIdentifier(c->conn, table, strlen(table));
    if (!qs || !qt) {
        PQfreemem(qs);
        PQfreemem(qt);
        return fail(c, NULL, "quoting the table name", err, errlen);
    }
    char *qual = malloc(strlen(qs) + strlen(qt) + 2);
    if (!qual) {
        PQfreemem(qs);
        PQfreemem(qt);
        return zx_seterr(err, errlen, "out of memory");
    }
    sprintf(qual, "%s.%s", qs, qt);
    PQfreemem(qs);
    PQfreemem(qt);
    const char *pv[1] = { qual };
    PGresult *r = PQexecParams(c->conn,
        "SELECT a.attname, a.atttypid, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
        " WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped"
        " ORDER BY a.attnum", 1, NULL, pv, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        free(qual);
        return fail(c, r, "reading the table's columns", err, errlen);
    }
    uint32_t n = (uint32_t)PQntuples(r);
    if (n == 0 || n > MAX_COLS) {
        PQclear(r);
        free(qual);
        return zx_seterr(err, errlen, "table %s.%s has %u columns", schema, table, n);
    }
    c->names = calloc(n, sizeof(*c->names));
    c->decls = calloc(n, sizeof(*c->decls));
    c->oids = calloc(n, sizeof(*c->oids));
    c->rscol = calloc(n, sizeof(*c->rscol));
    int bad = !c->names || !c->decls || !c->oids || !c->rscol;
    for (uint32_t i = 0; i < n && !bad; i++) {
        c->names[i] = strdup(PQgetvalue(r, (int)i, 0));
        c->decls[i] = strdup(PQgetvalue(r, (int)i, 2));
        c->oids[i] = (uint32_t)strtoul(PQgetvalue(r, (int)i, 1), NULL, 10);
        c->ncols = i + 1;
        bad = !c->names[i] || !c->decls[i];
    }
    PQclear(r);
    if (bad) {
        free(qual);
        return zx_seterr(err, errlen, "out of memory");
    }
    char *q = malloc(strlen(qual) + 48);
    if (!q) {
        free(qual);
        return zx_seterr(err, errlen, "out of memory");
    }
    const char *enc = PQparameterStatus(c->conn, "server_encoding");
    c->binary = enc && !strcmp(enc, "UTF8");
    for (uint32_t i = 0; i < c->ncols && c->binary; i++)
        c->binary = zx_pgbin_known(c->oids[i]) && c->oids[i] != ZX_PGOID_BYTEA;
    if (c->binary && zx_pgbin_copy_init(&c->bin, c->oids, c->ncols) < 0) {
        free(qual);
        free(q);
        return zx_seterr(err, errlen, "out of memory");
    }
    sprintf(q, "COPY %s TO STDOUT%s", qual, c->binary ? " (FORMAT binary)" : "");
    free(qual);
    r = PQexec(c->conn, q);
    free(q);
    if (!r || PQresultStatus(r) != PGRES_COPY_OUT)
        return fail(c, r, "COPY TO STDOUT", err, errlen);
    PQclear(r);
    c->copying = 1;
    return 0;
}

uint32_t zx_pgc_ncols(const zx_pgc *c) { return c->ncols; }
const char *zx_pgc_colname(const zx_pgc *c, uint32_t i) { return i < c->ncols ? c->names[i] : NULL; }
uint32_t zx_pgc_coltype(const zx_pgc *c, uint32_t i) { return i < c->ncols ? c->oids[i] : 0; }
const char *zx_pgc_coldecl(const zx_pgc *c, uint32_t i) { return i < c->ncols ? c->decls[i] : NULL; }
int zx_pgc_binary(const zx_pgc *c) { return c->binary; }

/* Unescape field [s, e) into c->val; its length into *n.  0 or -1 ENOMEM. */
static int unescape(zx_pgc *c, const char *s, const char *e, size_t *n)
{
    size_t need = (size_t)(e - s) + 1;
    if (need > c->val_cap) {
        char *v = realloc(c->val, need);
        if (!v)
            return -1;
        c->val = v;
        c->val_cap = need;
    }
    size_t k = 0;
    while (s < e) {
        if (*s != '\\' || s + 1 >= e) {
            c->val[k++] = *s++;
            continue;
        }
        s++;
        char x = *s++;
        switch (x) {
        case 'b': c->val[k++] = '\b'; break;
        case 'f': c->val[k++] = '\f'; break;
        case 'n': c->val[k++] = '\n'; break;
        case 'r': c->val[k++] = '\r'; break;
        case 't': c->val[k++] = '\t'; break;
        case 'v': c->val[k++] = '\v'; break;
        case 'x': {
            int v = 0, d, m = 0;
            while (m < 2 && s < e && (d = zx_hexval(*s)) >= 0)
                v = v * 16 + d, s++, m++;
            c->val[k++] = (char)v;
            break;
        }
        default:
            if (x >= '0' && x <= '7') {
                int v = x - '0', m = 1;
                while (m < 3 && s < e && *s >= '0' && *s <= '7')
                    v = v * 8 + (*s++ - '0'), m++;
                c->val[k++] = (char)v;
            } else {
                c->val[k++] = x; /* \\ and any other: the character */
            }
        }
    }
    *n = k;
    return 0;
}

int64_t zx_pgc_read(zx_pgc *c, zx_rowset *rs, uint32_t max_rows, char *err, size_t errlen)
{
    if (!c->copying)
        return 0;
    for (uint32_t i = 0; i < c->ncols; i++) {
        zx_type t = zx_pgv_type(c->oids[i]);
        c->rscol[i] = zx_rowset_column(rs, c->names[i], strlen(c->names[i]), t);
        if (c->rscol[i] < 0)
            return zx_seterr(err, errlen, "out of memory");
    }
    int64_t rows = 0;
    while ((uint32_t)rows < max_rows) {
        if (c->line) {
            PQfreemem(c->line);
            c->line = NULL;
        }
        int n = PQgetCopyData(c->conn, &c->line, 0);
        if (n == -1) {
            PGresult *r = PQgetResult(c->conn);
            c->copying = 0;
            if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
                return fail(c, r, "COPY TO STDOUT", err, errlen);
            PQclear(r);
            break;
        }
        if (n < 0)
            return fail(c, NULL, "COPY TO STDOUT", err, errlen);
        if (c->binary) {
            char why[200];
            int rc = zx_pgbin_copy_row(&c->bin, (const unsigned char *)c->line, (size_t)n,
                                       c->rscol, rs, why, sizeof(why));
            if (rc == -2)
                return zx_seterr(err, errlen, "out of memory");
            if (rc < 0)
                return zx_seterr(err, errlen, "COPY TO STDOUT: %s", why);
            rows += rc;
            continue;
        }
        const char *p = c->line, *end = c->line + n;
        if (end > p && end[-1] == '\n')
            end--;
        if (zx_rowset_begin_row(rs) < 0)
            return zx_seterr(err, errlen, "out of memory");
        for (uint32_t i = 0; i < c->ncols; i++) {
            const char *f = p;
            while (p < end && *p != '\t')
                p++;
            if (!(p - f == 2 && f[0] == '\\' && f[1] == 'N')) {
                size_t len;
                zx_value v;
                if (unescape(c, f, p, &len) < 0 ||
                    zx_pgv_from_text(c->oids[i], c->val, len, rs, &v) < 0 ||
                    zx_rowset_add(rs, (uint32_t)c->rscol[i], &v) < 0)
                    return zx_seterr(err, errlen, "out of memory");
            }
            if (p < end)
                p++; /* the tab */
        }
        zx_rowset_end_row(rs);
        rows++;
    }
    return rows;
}

void zx_pgc_close(zx_pgc *c)
{
    if (!c)
        return;
    if (c->line)
        PQfreemem(c->line);
    if (c->conn)
        PQfinish(c->conn); /* ends the read-only transaction */
    free_cols(c);
    free(c->val);
    free(c->shown);
    free(c);
}
