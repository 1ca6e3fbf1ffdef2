/*
 * workspace_pg_keyidx.c — a mirror's key index during its initial copy
 * (ws_ops.key_index), as pg_restore does it: load the rows without the
 * index, then build it once.  Postgres keeping a primary key's btree up to
 * date row by row cost about a quarter of its COPY time (1,000,000 rows of
 * the CDC benchmark: 2.9 s of server CPU with the key, 2.1 s without),
 * where building it afterwards takes ~0.2-0.3 s.
 *
 * Start (build 0), in the transaction of the copy's first frame, after its
 * truncate: the table's primary key is dropped when it is exactly the
 * mirror's key columns, no foreign key refers to the table, and the table
 * is empty.  Anything else keeps the index (the copy is then only slower).
 * End (build 1), in the transaction that records the copy's position: the
 * key becomes the primary key again unless a unique index on exactly those
 * columns exists (a user's own, or the one kept).  The source's key is its
 * primary key or replica identity index, unique and not null in the
 * snapshot, so building it cannot fail for the copied rows; if it does (a
 * mirror of other types or collations than the source's), the frame fails
 * with Postgres' words and the pipeline is held back: nothing is lost,
 * and the copy is done again once the mirror is fixed or dropped.
 *
 * A copy cut short (a restart) starts again with its first frame: the
 * table is emptied and the index is left out again; the stream starts only
 * after every copy has ended, so no upsert runs without the index.
 *
 * It must never: drop an index someone else depends on, or leave a mirror
 * without a unique index on its key once its copy has ended.
 */
#include "workers/writer/workspace_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

/* "{"k1","k2"}": the key columns as Postgres names them. */
static int key_array(zx_buf *b, const char *const *keys, size_t nkeys)
{
    b->len = 0;
    for (size_t k = 0; k < nkeys; k++) {
        char id[WSP_IDENT_MAX + 1];
        zx_wsp_ident_name(keys[k], id);
        zx_fit_out o = { .st = ZX_FIT_S_TEXT, .s = id, .len = strlen(id) };
        if (zx_wsp_array_add(b, &o) < 0)
            return -1;
    }
    return zx_wsp_array_add(b, NULL) < 0 || zx_buf_put(b, "", 1) < 0 ? -1 : 0;
}

/* The same set of columns (sorted on both sides). */
#define SAME_COLUMNS(relid, attnums)                                                  \
    "ARRAY(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = " relid      \
    " AND a.attnum = ANY(" attnums ") ORDER BY 1) = "                                 \
    "ARRAY(SELECT unnest($2::text[]) ORDER BY 1)"

static int leave_out(wsp *w, const char *qname, const char *keys, char *err, size_t errlen)
{
    zx_buf *q = &w->sql;
    q->len = 0;
    if (ws_sql_str(q, "SELECT c.conname FROM pg_constraint c WHERE c.conrelid = $1::regclass"
                      " AND c.contype = 'p' AND NOT EXISTS (SELECT 1 FROM pg_constraint f"
                      " WHERE f.confrelid = c.conrelid) AND "
                      SAME_COLUMNS("c.conrelid", "c.conkey")
                      " AND NOT EXISTS (SELECT 1 FROM ") < 0 ||
        ws_sql_str(q, qname) < 0 || ws_sql_str(q, ")") < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    const char *pv[2] = { qname, keys };
    PGresult *r = zx_wsp_exec(w, q->p, 2, pv);
    if (!r)
        return zx_seterr(err, errlen, "workspace: reading the key of %s: %s", qname, w->msg);
    char con[WSP_IDENT_MAX + 1] = "";
    if (PQntuples(r) == 1)
        snprintf(con, sizeof(con), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (!con[0])
        return 0;
    q->len = 0;
    if (ws_sql_str(q, "ALTER TABLE ") < 0 || ws_sql_str(q, qname) < 0 ||
        ws_sql_str(q, " DROP CONSTRAINT ") < 0 || zx_wsp_ident(q, con) < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    int rc = zx_wsp_ddl_lock(w, qname) < 0 ? -1 : zx_wsp_guarded(w, q->p, 0, NULL);
    if (rc < 0)
        return zx_seterr(err, errlen, "workspace: %s: %s", qname, w->msg);
    if (rc == 1) {
        zx_warn("event=key_index_kept table=%s reason=\"%s\"", qname, w->msg);
        return 0;
    }
    zx_info("event=key_index_deferred table=%s constraint=%s", qname, con);
    return 0;
}

static int build(wsp *w, const char *qname, const char *const *keys, size_t nkeys,
                 const char *karr, char *err, size_t errlen)
{
    const char *pv[2] = { qname, karr };
    PGresult *r = zx_wsp_exec(w,
        "SELECT 1 FROM pg_index i WHERE i.indrelid = $1::regclass AND i.indisunique"
        " AND i.indpred IS NULL AND i.indexprs IS NULL AND "
        SAME_COLUMNS("i.indrelid", "i.indkey::int2[]"), 2, pv);
    if (!r)
        return zx_seterr(err, errlen, "workspace: reading the indexes of %s: %s", qname,
                         w->msg);
    int has = PQntuples(r) > 0;
    PQclear(r);
    if (has)
        return 0;
    zx_buf *q = &w->sql;
    q->len = 0;
    int bad = ws_sql_str(q, "ALTER TABLE ") < 0 || ws_sql_str(q, qname) < 0 ||
              ws_sql_str(q, " ADD PRIMARY KEY (") < 0;
    for (size_t k = 0; k < nkeys && !bad; k++)
        bad = (k && ws_sql_str(q, ", ") < 0) || zx_wsp_ident(q, keys[k]) < 0;
    if (bad || ws_sql_str(q, ")") < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    int64_t t0 = zx_mono_ms();
    if (zx_wsp_ddl_lock(w, qname) < 0 || zx_wsp_run(w, q->p) < 0)
        return zx_seterr(err, errlen, "workspace: cannot build the key index of %s after its "
                         "initial copy: %s", qname, w->msg);
    zx_info("event=key_index_built table=%s ms=%lld", qname, (long long)(zx_mono_ms() - t0));
    return 0;
}

int zx_wsp_key_index(zx_ws *ws, ws_table *t, const char *const *keys, size_t nkeys, int b,
                     char *err, size_t errlen)
{
    wsp *w = WSP(ws);
    wsp_table *tb = t->be;
    if (!tb || !tb->qname || nkeys == 0 || t->ncols == 0)
        return 0;
    zx_buf karr = { 0 };
    int rc = key_array(&karr, keys, nkeys) < 0
                 ? zx_seterr(err, errlen, "workspace: out of memory")
             : b ? build(w, tb->qname, keys, nkeys, karr.p, err, errlen)
                 : leave_out(w, tb->qname, karr.p, err, errlen);
    zx_buf_free(&karr);
    return rc;
}
