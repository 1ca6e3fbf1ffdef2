/*
 * syncs.c — the checks of reverse syncs (`direction: out`), authors and
 * API tokens that span several options or entries: a sync's destination
 * (a table of a connection, or files), its key against its mode, its
 * schedule (cron), its author; an API token's syncs.
 *
 * It must never: set an option from YAML (fields.c does), run a query, or
 * open a destination.
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"
#include "common/cron.h"

#include <stdlib.h>
#include <string.h>

/* The zx_sync_mode numbers (workers/syncs/dest.h): the order of `modes`
 * in options.c. */
enum { MODE_UPSERT = 2, MODE_MIRROR = 3 };

int zx_conf_is_sync(const zx_conf_pipeline *p)
{
    return p && p->direction && !strcmp(p->direction, "out");
}

const zx_conf_author *zx_conf_find_author(const zx_conf *c, const char *name)
{
    for (size_t i = 0; c && name && i < c->nauthors; i++)
        if (!strcmp(c->authors[i].name, name))
            return &c->authors[i];
    return NULL;
}

const zx_conf_apitoken *zx_conf_find_apitoken(const zx_conf *c, const char *name)
{
    for (size_t i = 0; c && name && i < c->napitokens; i++)
        if (!strcmp(c->apitokens[i].name, name))
            return &c->apitokens[i];
    return NULL;
}

void zx_cf_check_sync(zx_cf_ctx *x, const yaml_node_t *kn, zx_conf_pipeline *pl,
                      const zx_cf_where *w)
{
    const char *e = "pipelines.<name>", *d = "pipelines.<name>.destination";
    const char *f = "pipelines.<name>.destination.files";
    const yaml_node_t *dn = zx_cf_where_sec(w, d), *fn = zx_cf_where_sec(w, f);
    const yaml_node_t *cn = zx_cf_where_opt(w, d, "connection");
    const yaml_node_t *tn = zx_cf_where_opt(w, d, "table");
    const yaml_node_t *mn = zx_cf_where_opt(w, e, "mode");
    const yaml_node_t *sn = zx_cf_where_opt(w, e, "schedule");
    char err[200];

    if (!dn)
        zx_cf_error_at(x, kn, "pipeline %s: missing required field 'destination' "
                       "({connection: C, table: T} or {files: {path: P, format: F}})",
                       pl->name);
    else if (cn && fn)
        zx_cf_error_at(x, fn, "pipelines.%s: destination: write connection (and "
                       "table) or files, not both", pl->name);
    else if (!cn && !fn)
        zx_cf_error_at(x, dn, "pipelines.%s: destination needs connection and "
                       "table, or files", pl->name);
    else if (cn && !tn)
        zx_cf_error_at(x, dn, "pipelines.%s: destination: missing required field "
                       "'table' (the table of connection %s to write)", pl->name,
                       pl->dest_connection ? pl->dest_connection : "?");
    if (tn && !cn)
        zx_cf_error_at(x, tn, "pipelines.%s: destination.table needs "
                       "destination.connection", pl->name);
    if (fn) {
        if (!zx_cf_where_opt(w, f, "path"))
            zx_cf_error_at(x, fn, "pipelines.%s: destination.files: missing "
                           "required field 'path'", pl->name);
        if (!zx_cf_where_opt(w, f, "format"))
            zx_cf_error_at(x, fn, "pipelines.%s: destination.files: missing "
                           "required field 'format' (csv, json or parquet)",
                           pl->name);
        if (pl->dest_path) {
            char *abs = zx_cf_abspath(x->base_dir, pl->dest_path);
            if (!abs) {
                zx_cf_error_at(x, fn, "out of memory");
            } else {
                free(pl->dest_path);
                pl->dest_path = abs;
            }
        }
    } else {
        /* the default compression belongs to files only */
        free(pl->dest_compression);
        pl->dest_compression = NULL;
    }
    if (mn && (pl->mode == MODE_UPSERT || pl->mode == MODE_MIRROR) && !pl->nkey_cols)
        zx_cf_error_at(x, mn, "pipelines.%s: mode %s needs key: the result columns "
                       "that identify a row (key: [id])", pl->name,
                       pl->mode == MODE_UPSERT ? "upsert" : "mirror");
    if (pl->schedule) {
        zx_cron cr;
        if (zx_cron_parse(pl->schedule, &cr, err, sizeof(err)) < 0)
            zx_cf_error_at(x, sn, "pipelines.%s: schedule '%.80s': %s", pl->name,
                           pl->schedule, err);
        else if (zx_cron_never(&cr))
            zx_cf_error_at(x, sn, "pipelines.%s: schedule '%.80s' never fires (no such "
                           "day)", pl->name, pl->schedule);
    }
}

/* A name list item's node: item i of sequence n, or n itself. */
static const yaml_node_t *item_node(zx_cf_ctx *x, const yaml_node_t *n, size_t i)
{
    if (n && n->type == YAML_SEQUENCE_NODE &&
        i < (size_t)(n->data.sequence.items.top - n->data.sequence.items.start))
        return zx_cf_node(x, n->data.sequence.items.start[i]);
    return n;
}

void zx_cf_resolve_syncs(zx_cf_ctx *x, zx_conf *c, const yaml_node_t *const *dest_conn_node,
                         const yaml_node_t *const *syncs_node)
{
    size_t i, j;

    for (i = 0; i < c->npipelines; i++) {
        zx_conf_pipeline *p = &c->pipelines[i];
        if (!zx_conf_is_sync(p))
            continue;
        if (p->author) {
            p->auth = zx_conf_find_author(c, p->author);
            if (!p->auth)
                zx_cf_error(x, p->line, p->column, "pipelines.%s: unknown author "
                            "'%.64s': %s", p->name, p->author,
                            c->nauthors ? "add it under authors: (with the tables "
                            "its syncs may read)" : "the file defines no authors: "
                            "add authors: {NAME: {tables: [...]}}");
        }
        if (p->dest_connection) {
            const zx_conf_connection *cn = zx_conf_find_connection(c, p->dest_connection);
            const yaml_node_t *n = dest_conn_node ? dest_conn_node[i] : NULL;
            int line = n ? zx_cf_line(n) : p->line, col = n ? zx_cf_col(n) : p->column;
            if (!cn)
                zx_cf_error(x, line, col, "pipelines.%s: destination: unknown "
                            "connection '%.64s'", p->name, p->dest_connection);
            else if (!cn->kind || (strcmp(cn->kind, "postgres") &&
                                   strcmp(cn->kind, "mysql") && strcmp(cn->kind, "sqlite")))
                zx_cf_error(x, line, col, "pipelines.%s: destination: connection %s "
                            "is of kind %s; a table destination needs kind postgres, "
                            "mysql or sqlite", p->name, cn->name,
                            cn->kind ? cn->kind : "(none)");
            else if (cn->read_only)
                zx_cf_error(x, line, col, "pipelines.%s: destination: connection %s "
                            "is read_only: zx never writes to it", p->name, cn->name);
            else
                p->dest_conn = cn;
        }
    }
    for (i = 0; i < c->napitokens; i++) {
        const zx_conf_apitoken *t = &c->apitokens[i];
        const yaml_node_t *n = syncs_node ? syncs_node[i] : NULL;
        for (j = 0; j < t->nsyncs; j++) {
            const zx_conf_pipeline *p = zx_conf_find(c, t->syncs[j]);
            const yaml_node_t *in = item_node(x, n, j);
            if (!p || !zx_conf_is_sync(p))
                zx_cf_error(x, in ? zx_cf_line(in) : t->line, in ? zx_cf_col(in) : t->column,
                            "api_tokens.%s: syncs: '%.64s' is not a reverse sync of "
                            "this file", t->name, t->syncs[j]);
        }
    }
}
