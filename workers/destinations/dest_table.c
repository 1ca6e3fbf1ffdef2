/*
 * dest_table.c — what the table destinations share (dest_table.h).
 *
 * It must never: talk to a database, or print a dsn.
 */
#include "workers/destinations/dest_table.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

int zx_dt_keyed(zx_sync_mode m)
{
    return m == ZX_MODE_UPSERT || m == ZX_MODE_MIRROR;
}

const char *zx_dt_mode_name(zx_sync_mode m)
{
    switch (m) {
    case ZX_MODE_REPLACE: return "replace";
    case ZX_MODE_APPEND: return "append";
    case ZX_MODE_UPSERT: return "upsert";
    default: return "mirror";
    }
}

int64_t zx_dt_deadline_ms(const zx_dest_args *a)
{
    return a->deadline_ms > 0 ? a->deadline_ms : ZX_DT_DEADLINE_MS;
}

int zx_dt_open_check(const char *kind, const zx_dest_args *a, int need_dsn, char *err,
                     size_t errlen)
{
    const zx_conf_connection *cn = a ? a->conn : NULL;
    if (!cn || !cn->name || !a->table)
        return zx_seterr(err, errlen, "%s destination: no connection or table given", kind);
    if (cn->read_only)
        return zx_seterr(err, errlen, "%s connection %s is read_only: zx never writes to it",
                         kind, cn->name);
    if (need_dsn && !cn->dsn)
        return zx_seterr(err, errlen, "%s connection %s has no dsn (its secret was not "
                         "loaded)", kind, cn->name);
    return 0;
}

int zx_dt_split_name(const char *name, const char *dflt, char **schema, char **table)
{
    const char *dot = strchr(name, '.');
    *schema = dot ? strndup(name, (size_t)(dot - name)) : strdup(dflt ? dflt : "");
    *table = strdup(dot ? dot + 1 : name);
    return *schema && *table ? 0 : -1;
}

char *zx_dt_label(const char *kind, const char *conn, const char *schema, const char *table)
{
    zx_buf b = { 0 };
    if (zx_buf_printf(&b, "%s %s table %s%s%s", kind, conn, schema ? schema : "",
                      schema ? "." : "", table) < 0)
        return NULL;
    return b.p;
}

int zx_dt_fail(const char *label, char *err, size_t errlen, const char *fmt, ...)
{
    char what[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (err && errlen)
        snprintf(err, errlen, "%s%s%s", label ? label : "", label ? ": " : "", what);
    return -1;
}

char *zx_dt_quote_ident(const char *name)
{
    size_t n = strlen(name), q = 0;
    for (size_t i = 0; i < n; i++)
        q += name[i] == '"';
    char *s = malloc(n + q + 3), *p = s;
    if (!s)
        return NULL;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '"')
            *p++ = '"';
        *p++ = name[i];
    }
    *p++ = '"';
    *p = '\0';
    return s;
}

int zx_dt_check_run(const char *label, const zx_dest_run *run, size_t *key, char *err,
                    size_t errlen)
{
    if (!run->cols || run->ncols == 0)
        return zx_dt_fail(label, err, errlen, "the run has no columns");
    for (size_t i = 0; i < run->ncols; i++)
        if (!run->cols[i].name || !run->cols[i].name[0])
            return zx_dt_fail(label, err, errlen, "a column of the result has no name");
    if (zx_dt_keyed(run->mode) && run->nkey_cols == 0)
        return zx_dt_fail(label, err, errlen, "%s needs key columns", zx_dt_mode_name(run->mode));
    for (size_t k = 0; k < run->nkey_cols; k++) {
        const char *kc = run->key_cols[k];
        size_t i = 0;
        while (i < run->ncols && (!kc || strcmp(run->cols[i].name, kc) != 0))
            i++;
        if (i == run->ncols)
            return zx_dt_fail(label, err, errlen, "key column \"%.80s\" is not a column of "
                              "the result", kc ? kc : "");
        if (zx_dt_is_key(key, k, i))
            return zx_dt_fail(label, err, errlen, "key column \"%.80s\" is named twice", kc);
        key[k] = i;
    }
    return 0;
}

int zx_dt_is_key(const size_t *key, size_t nkeys, size_t i)
{
    for (size_t k = 0; k < nkeys; k++)
        if (key[k] == i)
            return 1;
    return 0;
}

int zx_dt_check_write(const char *label, int in_run, const zx_rowset *rs, size_t ncols,
                      char *err, size_t errlen)
{
    if (!in_run)
        return zx_dt_fail(label, err, errlen, "write outside a run (before begin or after "
                          "commit)");
    if (rs->ncols != ncols)
        return zx_dt_fail(label, err, errlen, "a batch of %u columns in a run of %zu",
                          rs->ncols, ncols);
    return 0;
}

int zx_dt_check_delete(const char *label, int in_run, const zx_rowset *keys, size_t nkeys,
                       char *err, size_t errlen)
{
    if (!in_run)
        return zx_dt_fail(label, err, errlen, "delete_keys outside a run (before begin or "
                          "after commit)");
    if (!nkeys)
        return zx_dt_fail(label, err, errlen, "delete_keys needs the run's key columns");
    if (keys->ncols != nkeys)
        return zx_dt_fail(label, err, errlen, "a key batch of %u columns for %zu key columns",
                          keys->ncols, nkeys);
    return 0;
}

int zx_dt_check_commit(const char *label, int in_run, char *err, size_t errlen)
{
    return in_run ? 0 : zx_dt_fail(label, err, errlen, "commit outside a run");
}

void zx_dt_nulls_add(zx_dt_nulls *n, int iskey, int isnull, int misfit)
{
    n->misfits += (uint64_t)(misfit != 0);
    if (iskey && isnull) {
        n->knull = 1;
        n->kmisfit |= misfit != 0;
    }
}

uint64_t zx_dt_nulls_count(const zx_dt_nulls *n)
{
    return n->misfits + (uint64_t)(n->knull && !n->kmisfit);
}

/* ---- SQL ------------------------------------------------------------- */

int zx_dt_sql_list(zx_buf *b, char *const *names, const size_t *idx, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (zx_buf_printf(b, "%s%s", i ? ", " : "", names[idx ? idx[i] : i]) < 0)
            return -1;
    return 0;
}

int zx_dt_sql_create(zx_buf *b, const char *qtable, const zx_dcol *cols, char *const *qcols,
                     size_t ncols, const size_t *key, size_t nkeys, int key_not_null,
                     const char *(*type_of)(const zx_dcol *c, char *buf, size_t n))
{
    char tb[48];
    if (zx_buf_printf(b, "CREATE TABLE IF NOT EXISTS %s (", qtable) < 0)
        return -1;
    for (size_t i = 0; i < ncols; i++)
        if (zx_buf_printf(b, "%s%s %s%s", i ? ", " : "", qcols[i],
                          type_of(&cols[i], tb, sizeof(tb)),
                          key_not_null && zx_dt_is_key(key, nkeys, i) ? " NOT NULL" : "") < 0)
            return -1;
    if (nkeys && (zx_buf_printf(b, ", PRIMARY KEY (") < 0 ||
                  zx_dt_sql_list(b, qcols, key, nkeys) < 0 || zx_buf_printf(b, ")") < 0))
        return -1;
    return zx_buf_printf(b, ")");
}

int zx_dt_sql_upsert_set(zx_buf *b, char *const *qcols, size_t ncols, const size_t *key,
                         size_t nkeys)
{
    int nset = 0;
    for (size_t i = 0; i < ncols; i++)
        if (!zx_dt_is_key(key, nkeys, i) &&
            zx_buf_printf(b, "%s%s = EXCLUDED.%s", nset++ ? ", " : "DO UPDATE SET ",
                          qcols[i], qcols[i]) < 0)
            return -1;
    return nset ? 0 : zx_buf_printf(b, "DO NOTHING");
}

int zx_dt_fail_no_key_index(const char *label, zx_sync_mode mode, char *const *qcols,
                            const size_t *key, size_t nkeys, const char *fix_head,
                            const char *qtable, const char *fix_tail, char *err,
                            size_t errlen)
{
    zx_buf kl = { 0 };
    if (zx_dt_sql_list(&kl, qcols, key, nkeys) < 0)
        kl.len = 0;
    const char *k = kl.p && kl.len ? kl.p : "";
    zx_dt_fail(label, err, errlen, "%s needs a primary key or unique index on exactly the key "
               "columns (%s) for ON CONFLICT, and the table has none: create one, e.g. %s %s%s "
               "(%s)", zx_dt_mode_name(mode), k, fix_head, qtable, fix_tail, k);
    zx_buf_free(&kl);
    return -1;
}
