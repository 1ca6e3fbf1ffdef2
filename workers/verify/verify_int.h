/*
 * verify_int.h — the parts of `zxctl verify` (verify.h): a table's shape
 * and rows (verify_row.c), the source side (verify_source.c, libpq) and
 * the mirror side (verify_mirror.c, SQLite or Postgres workspace).
 *
 * Rows are columns' text forms: on the source as Postgres prints them
 * (DateStyle ISO, TimeZone UTC, extra_float_digits 3), NULL as a NULL
 * pointer.  Every string here is owned by its struct.
 */
#ifndef ZX_VERIFY_VERIFY_INT_H
#define ZX_VERIFY_VERIFY_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "conf/config.h"
#include "workers/writer/fit.h"

/* Columns of a key at most (Postgres' INDEX_MAX_KEYS). */
#define ZX_VERIFY_MAX_KEYCOLS 32

/* A source table and its mirror. */
typedef struct vf_table {
    char *schema, *name;     /* the source table */
    char *mirror;            /* the workspace table */
    uint32_t ncols;
    char **cols;             /* source column names, in order */
    uint32_t *oids;          /* their type OIDs */
    char **stypes;           /* their types without modifiers, as SQL
                                (format_type(oid, NULL)) */
    char **mtypes;           /* Postgres workspace: the mirror column's
                                type, as SQL (NULL on SQLite, or absent) */
    char **decls;            /* mirror's declared type of each column (SQLite;
                                NULL on Postgres); NULL too when the mirror
                                lacks the column */
    int *in_mirror;          /* 1 when the mirror has the column */
    uint32_t nkeys;
    uint32_t *keys;          /* indexes into cols, in the key's order */
} vf_table;

/* A row: n text values, NULL for SQL NULL. */
typedef struct vf_row {
    uint32_t n;
    char **v;
    size_t *len;
} vf_row;

/* ---- verify_row.c (pure) ------------------------------------------------ */

void vf_table_free(vf_table *t);            /* fields only; NULL-safe */
/* Make r hold n values (all NULL).  0 or -1 (out of memory). */
int vf_row_init(vf_row *r, uint32_t n);
/* Set value i to a copy of s (len bytes; s NULL: NULL).  0 or -1. */
int vf_row_set(vf_row *r, uint32_t i, const char *s, size_t len);
/* Copy of the key columns of full row r into key (initialised here). */
int vf_row_key(const vf_table *t, const vf_row *r, vf_row *key);
void vf_row_free(vf_row *r);                /* fields only; NULL-safe */
/* 1 when values i of a and b are equal (both NULL, or the same bytes). */
int vf_value_eq(const vf_row *a, const vf_row *b, uint32_t i);
/* Append the array literal of value k of rows[0..n) (each quoted, '"'
 * and '\\' escaped; NULL as NULL) to b.  0 or -1. */
int vf_put_array(zx_buf *b, const vf_row *rows, size_t n, uint32_t k);
/* Append s as an SQL identifier (in double quotes, a '"' doubled), or s
 * as it is, to b.  0, or -1 (out of memory). */
int vf_put_ident(zx_buf *b, const char *s);
int vf_put(zx_buf *b, const char *s);

/* What a comparison of one key found. */
typedef enum vf_how { VF_EQUAL = 0, VF_MISSING, VF_EXTRA, VF_DIFFER } vf_how;
const char *vf_how_name(vf_how h);          /* "equal", "missing"...; static */

/* ---- verify_source.c --------------------------------------------------- */

typedef struct vf_src vf_src;
/* Connect (application_name "zxd verify").  NULL with err. */
vf_src *vf_src_open(const char *dsn, const char *shown, char *err, size_t errlen);
void vf_src_close(vf_src *s);               /* NULL-safe */
/* Columns and key of schema.name into t (t->schema, name, cols, oids,
 * keys; the mirror side is left alone).  -1 with err when the table is
 * missing or has no primary key nor replica identity index. */
int vf_src_table(vf_src *s, const char *schema, const char *name, vf_table *t, char *err,
                 size_t errlen);
/* Open a REPEATABLE READ READ ONLY transaction and take its snapshot;
 * *lsn gets pg_current_wal_insert_lsn() as of then (text, 32 bytes).
 * vf_src_end commits it.  0 or -1. */
int vf_src_begin(vf_src *s, char lsn[32], char *err, size_t errlen);
int vf_src_end(vf_src *s, char *err, size_t errlen);
/* Read every row of t in key order, one at a time: start, then next
 * until it returns 0 (done; 1: a row in *r, owned by the caller's r,
 * re-initialised each call; -1 error).  No other query may run on s
 * meanwhile. */
int vf_src_scan(vf_src *s, const vf_table *t, char *err, size_t errlen);
/* vf_src_scan of the rows whose key is above lo and at most hi (each
 * NULL: no bound; key texts as the source prints them). */
int vf_src_scan_range(vf_src *s, const vf_table *t, const vf_row *lo, const vf_row *hi,
                      char *err, size_t errlen);
/* The range of the (at most) limit rows of t above key lo (NULL: from
 * the first), in key order: *count rows, hash their hash (vf_put_rowhash,
 * summed, as decimal text; "0" for none), and *last (initialised here
 * only when *count > 0) the range's last key.  One query.  0 or -1. */
int vf_src_range(vf_src *s, const vf_table *t, const vf_row *lo, int64_t limit,
                 int64_t *count, char hash[64], vf_row *last, char *err, size_t errlen);
int vf_src_next(vf_src *s, vf_row *r, char *err, size_t errlen);
/* The row of t whose key is key (texts as the source prints them):
 * 1 found (in *r), 0 none, -1 error. */
int vf_src_get(vf_src *s, const vf_table *t, const vf_row *key, vf_row *r, char *err,
               size_t errlen);
/* Which of the n keys read from the mirror the source lacks: absent[i]
 * 1 for those, with canon[i] (initialised here only for them) their text
 * as the source prints it.  One query.  0 or -1. */
int vf_src_absent(vf_src *s, const vf_table *t, const vf_row *mkeys, size_t n, int *absent,
                  vf_row *canon, char *err, size_t errlen);
/* Wait until the pipeline's worker streams from slot (the slot is in
 * use: the copies are done), at most until deadline_ms.  0, or -1 with
 * err saying what to look at. */
int vf_src_streaming(vf_src *s, const char *slot, int64_t deadline_ms, char *err,
                     size_t errlen);
/* Wait until slot has confirmed lsn (polling), at most until deadline_ms.
 * 1 reached, 0 not in time, -1 error (e.g. no such slot). */
int vf_src_wait(vf_src *s, const char *slot, const char *lsn, int64_t deadline_ms, char *err,
                size_t errlen);

/* ---- verify_mirror.c --------------------------------------------------- */

typedef struct vf_mir vf_mir;
/* Open the workspace of c read-only.  NULL with err. */
vf_mir *vf_mir_open(const zx_conf *c, char *err, size_t errlen);
void vf_mir_close(vf_mir *m);               /* NULL-safe */
/* Find t->mirror and its columns (t->decls, t->in_mirror) and prepare
 * the lookup.  -1 with err when the mirror or a key column is missing. */
int vf_mir_table(vf_mir *m, vf_table *t, char *err, size_t errlen);
/* Compare the source row src (NULL: the source has no row of key) with
 * the mirror's row of key.  *how gets the finding; for VF_DIFFER,
 * diff[i] is set to 1 for each column i that differs (diff has t->ncols
 * entries).  0 or -1. */
int vf_mir_compare(vf_mir *m, const vf_table *t, const vf_row *src, const vf_row *key,
                   vf_how *how, int *diff, char *err, size_t errlen);
/* vf_mir_compare of n rows at once (src[i] and keys[i], none NULL):
 * how[i], and diff[i * t->ncols + j].  One query on Postgres.  0 or -1. */
int vf_mir_compare_many(vf_mir *m, const vf_table *t, const vf_row *src, const vf_row *keys,
                        size_t n, vf_how *how, int *diff, char *err, size_t errlen);
/* Read every key of the mirror: start, then next as vf_src_next (key
 * values as texts: integers in decimal, reals with 17 digits). */
int vf_mir_scan(vf_mir *m, const vf_table *t, char *err, size_t errlen);
int vf_mir_next(vf_mir *m, vf_row *key, char *err, size_t errlen);
/* Postgres workspace: vf_mir_scan of the keys above lo and at most hi
 * (each NULL: no bound), and the count and hash (as vf_src_range) of the
 * mirror rows there (one query).  0 or -1. */
int vf_mir_scan_range(vf_mir *m, const vf_table *t, const vf_row *lo, const vf_row *hi,
                      char *err, size_t errlen);
int vf_mir_range(vf_mir *m, const vf_table *t, const vf_row *lo, const vf_row *hi,
                 int64_t *count, char hash[64], char *err, size_t errlen);
/* 1 when m is a Postgres workspace. */
int vf_mir_is_pg(const vf_mir *m);
/* End a scan early (also done by the next vf_mir_table). */
void vf_mir_scan_end(vf_mir *m);

/* ---- verify_range.c (pure): the SQL of range hashing ------------------ */

/* 1 when t can be compared by ranges on a Postgres workspace: every
 * compared column has the source's type in the mirror (so both print the
 * same text), and every key column a type ordered alike on every server
 * (integers, numeric, uuid, dates and timestamps: no collation). */
int vf_range_ok(const vf_table *t);
/* Append "k1, k2" (desc: "k1 DESC, k2 DESC") to b.  0 or -1. */
int vf_put_keylist(zx_buf *b, const vf_table *t, int desc);
/* Append " WHERE (keys) > ($1::T, ...)" when lo, and "(keys) <= (...)"
 * when hi (its parameters after lo's), types[i] being column i's type as
 * SQL.  0 or -1. */
int vf_put_bounds(zx_buf *b, const vf_table *t, char *const *types, int lo, int hi);
/* Append a row's 64-bit hash as an SQL bigint expression over the
 * columns the mirror has.  0 or -1. */
int vf_put_rowhash(zx_buf *b, const vf_table *t);

/* ---- verify_repair.c ---------------------------------------------------- */

/* Leave req ({"tables":[{"table":"s.t","keys":[["k",...],...]}]}) for the
 * pipeline's worker and wait until it took it (at most until
 * deadline_ms).  0, or -1 with err (an earlier request still waiting, the
 * worker not taking it: the request is withdrawn). */
int vf_repair_request(const char *data_dir, const char *pipeline, const json_t *req,
                      int64_t deadline_ms, char *err, size_t errlen);

#endif
