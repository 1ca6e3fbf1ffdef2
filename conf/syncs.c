/*
 * syncs.c — the checks of reverse syncs (`direction: out`), authors and
 * API tokens that span entries, once the whole file is walked: a sync's
 * author, its destination's connection (and so its destination plug-in),
 * its files against the folders zx may write and the other syncs'
 * outputs; an API token's syncs.  A sync's own options (destination,
 * mode and key, schedule) are its plug-in's check
 * (workers/syncs/sync_check.c); a destination's own, its plug-in's.
 *
 * It must never: set an option from YAML (fields.c does), run a query, or
 * open a destination.
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"
#include "conf/plugin.h"
#include "workers/destinations/files/files_formats.h"
#include "workers/destinations/files/files_s3.h"
#include "workers/syncs/sync_opts.h"
#include "workers/aws_conn.h"
#include "common/fileroots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

size_t zx_conf_file_roots(const zx_conf *c, char *exports, size_t exlen, const char **roots,
                          size_t max)
{
    size_t n = 0;
    if (max == 0)
        return 0;
    snprintf(exports, exlen, "%s/exports",
             c && c->data_dir && strcmp(c->data_dir, "/") ? c->data_dir : "");
    roots[n++] = exports;
    for (size_t i = 0; c && i < c->nfile_roots && n < max; i++)
        roots[n++] = c->file_roots[i];
    return n;
}

/* The extension a files path of format fmt ends with when it names a
 * file (dest_files.c's rule, the formats of files_formats.h), else NULL
 * (a folder). */
static const char *file_ext(const char *path, const char *fmt)
{
    return fmt ? zx_file_ext_of(path, NULL) : NULL;   /* no format: a table's folder */
}

/* 1 when path a equals b or lies under it (whole components). */
static int under(const char *a, const char *b)
{
    size_t bl = strlen(b);
    return !strncmp(a, b, bl) && (a[bl] == 0 || a[bl] == '/' || (bl && b[bl - 1] == '/'));
}

/* 1 when s is exactly one of the files extensions (".csv"). */
static int is_ext(const char *s)
{
    for (size_t i = 0; zx_file_formats[i].name; i++)
        for (size_t e = 0; zx_file_formats[i].exts[e]; e++)
            if (!strcmp(s, zx_file_formats[i].exts[e]))
                return 1;
    return 0;
}

/* 1 when rest is "<digits><ext>": the tail of a per-run file's name after
 * "<stem>-" or "<sync>-". */
static int run_tail(const char *rest)
{
    size_t d = 0;
    while (rest[d] >= '0' && rest[d] <= '9')
        d++;
    return d > 0 && is_ext(rest + d);
}

/* 1 when name (a file name in a folder) is one of the outputs of a sync
 * called sync in that folder: "<sync><ext>" or "<sync>-<run id><ext>". */
static int named_for(const char *name, const char *sync)
{
    size_t l = strlen(sync);
    if (strncmp(name, sync, l))
        return 0;
    return is_ext(name + l) || (name[l] == '-' && run_tail(name + l + 1));
}

/* 1 when q is one of the per-run files beside the file p of extension
 * ext: "<stem of p>-<run id><ext>". */
static int per_run_of(const char *p, const char *ext, const char *q)
{
    size_t sl = strlen(p) - strlen(ext);
    return !strncmp(q, p, sl) && q[sl] == '-' && run_tail(q + sl + 1);
}

/* 1 when what sync a (path pa) writes can land on what sync b (path pb)
 * writes: the same file, one's per-run files, or one's file in the
 * other's folder. */
static int outputs_meet(const char *a, const char *pa, const char *fa, const char *b,
                        const char *pb, const char *fb)
{
    const char *ea = file_ext(pa, fa), *eb = file_ext(pb, fb);
    if (!strcmp(pa, pb))
        return ea != NULL;        /* one file; a folder they share is fine */
    if (ea && eb)                 /* two files: one is a per-run file of the other */
        return per_run_of(pa, ea, pb) || per_run_of(pb, eb, pa);
    if (!ea && !eb)
        return 0;                 /* one folder: files named after each sync */
    /* one file, one folder: the file in the folder named after the folder's sync */
    const char *file = ea ? pa : pb, *dir = ea ? pb : pa, *dsync = ea ? b : a;
    const char *slash = strrchr(file, '/');
    size_t dl = strlen(dir);
    return slash && (size_t)(slash - file) == dl && !strncmp(file, dir, dl) &&
           named_for(slash + 1, dsync);
}

static int outputs_clash(const zx_conf *c, const char *self, const char *path,
                         const char *fmt, char *err, size_t errlen);

int zx_conf_check_files_path(const zx_conf *c, const char *self, const char *path,
                             const char *fmt, char *err, size_t errlen)
{
    char exports[ZX_CONF_EXPORTS_MAX], list[1024];
    const char *roots[64];
    size_t n = zx_conf_file_roots(c, exports, sizeof(exports), roots, 64);
    zx_fr_list(roots, n, list, sizeof(list));
    if (zx_files_is_s3(path)) {
        /* a bucket: the folders of this host do not apply; outputs still
         * must not meet */
        if (zx_files_s3_check(path, NULL, err, errlen) < 0)
            return -1;
        return outputs_clash(c, self, path, fmt, err, errlen);
    }
    if (!path || !zx_fr_normalised(path)) {
        snprintf(err, errlen, "%s: not an absolute path without '.' or '..' parts",
                 path ? path : "(none)");
        return -1;
    }
    int r = zx_fr_root_of(path, roots, n);
    if (r < 0) {
        snprintf(err, errlen, "%s is outside the folders zx may write files to (%s); "
                 "add a folder to server.file_roots to allow it", path, list);
        return -1;
    }
    if (!strcmp(path, roots[r])  && file_ext(path, fmt)) {
        snprintf(err, errlen, "%s is one of the folders files go to (%s), not a file in it",
                 path, list);
        return -1;
    }
    char why[600];
    if (zx_fr_check_below(roots[r], path, !file_ext(path, fmt), why, sizeof(why)) < 0) {
        snprintf(err, errlen, "%s (files are written only below %s, not through links; "
                 "server.file_roots)", why, list);
        return -1;
    }
    return outputs_clash(c, self, path, fmt, err, errlen);
}

/* -1 with err when what self writes at path (format fmt) meets another
 * sync's output (outputs_meet), else 0. */
static int outputs_clash(const zx_conf *c, const char *self, const char *path,
                         const char *fmt, char *err, size_t errlen)
{
    for (size_t i = 0; c && i < c->npipelines; i++) {
        const zx_conf_pipeline *p = &c->pipelines[i];
        zx_dest_where w = {0};
        if (!zx_conf_is_sync(p) || !p->dest_plugin || !p->dest_plugin->dest_where || !p->name ||
            (self && !strcmp(p->name, self)))
            continue;
        p->dest_plugin->dest_where(p, &w);
        if (!w.path)
            continue;
        /* a table's folder (no format) is its own: nothing else in it */
        int meet = !fmt || !w.format ? under(path, w.path) || under(w.path, path)
                                     : outputs_meet(self ? self : "", path, fmt, p->name,
                                                    w.path, w.format);
        if (meet) {
            snprintf(err, errlen, "%s would write over the output of sync %s (%s path %s): "
                     "give each its own file or folder", path, p->name, w.option, w.path);
            return -1;
        }
    }
    return 0;
}

/* 1 when kind is one of kinds (NULL-ended), else 0. */
static int kind_in(const char *kind, const char *const *kinds)
{
    for (size_t k = 0; kind && kinds[k]; k++)
        if (!strcmp(kinds[k], kind))
            return 1;
    return 0;
}

/* The connection w->connection a destination of p names, checked
 * (exists, of a kind in w->conn_kinds, or aws for an s3:// path; not
 * read_only) and set into p->dest_conn; an error through x otherwise. */
void zx_cf_dest_connection(zx_cf_ctx *x, const zx_conf *c, zx_conf_pipeline *p,
                           const zx_dest_where *wp)
{
    zx_dest_where w = *wp;
    const zx_conf_connection *cn = zx_conf_find_connection(c, w.connection);
    if (!cn)
        zx_cf_error(x, p->line, p->column, "pipelines.%s: %s: unknown connection "
                    "'%.64s'", p->name, w.option, w.connection);
    else if (w.conn_kinds && !kind_in(cn->kind, w.conn_kinds)) {
        char kinds[100];
        zx_cf_join(kinds, sizeof(kinds), w.conn_kinds, " or ");
        zx_cf_error(x, p->line, p->column, "pipelines.%s: %s: connection %s is of "
                    "kind %s; it needs kind %s", p->name, w.option, cn->name,
                    cn->kind ? cn->kind : "(none)", kinds);
    } else if (!w.conn_kinds && (!cn->kind || strcmp(cn->kind, ZX_AWS_CONN_KIND)))
        zx_cf_error(x, p->line, p->column, "pipelines.%s: %s: connection %s is of "
                    "kind %s; an s3:// path needs kind %s", p->name, w.option,
                    cn->name, cn->kind ? cn->kind : "(none)", ZX_AWS_CONN_KIND);
    else if (w.conn_kinds && cn->read_only)
        /* a destination reached through a connection of its own kind */
        zx_cf_error(x, p->line, p->column, "pipelines.%s: %s: connection %s is "
                    "read_only: zx never writes to it", p->name, w.option, cn->name);
    else
        p->dest_conn = cn;      /* the bucket's or broker's: its worker keeps
                                   its secrets */
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
        const zx_sync_opts *so = zx_sync_opts_of(p);
        if (so && so->author) {
            p->auth = zx_conf_find_author(c, so->author);
            if (!p->auth)
                zx_cf_error(x, p->line, p->column, "pipelines.%s: unknown author "
                            "'%.64s': %s", p->name, so->author,
                            c->nauthors ? "add it under authors: (with the tables "
                            "its syncs may read)" : "the file defines no authors: "
                            "add authors: {NAME: {tables: [...]}}");
        }
        zx_dest_where w = {0};
        if (p->dest_plugin && p->dest_plugin->dest_where)
            p->dest_plugin->dest_where(p, &w);
        for (size_t j = 0; w.target[0] && j < i; j++) {
            const zx_conf_pipeline *q = &c->pipelines[j];
            zx_dest_where wq = {0};
            if (!zx_conf_is_sync(q) || q->dest_plugin != p->dest_plugin ||
                !q->dest_plugin->dest_where)
                continue;
            q->dest_plugin->dest_where(q, &wq);
            if (!strcmp(wq.target, w.target))
                zx_cf_error(x, p->line, p->column, "pipelines.%s: %s: sync %s writes %s "
                            "already: give each sync a table of its own", p->name, w.option,
                            q->name, w.target);
        }
        if (w.path) {
            char err[1500];
            if (zx_conf_check_files_path(c, p->name, w.path, w.format, err, sizeof(err)) < 0)
                zx_cf_error(x, p->line, p->column, "pipelines.%s: %s.path: %s", p->name,
                            w.option, err);
        }
        if (w.catalog) {
            const zx_conf_connection *cn = zx_conf_find_connection(c, w.catalog);
            char kinds[100];
            const char *const *ks = p->dest_plugin->conn_kinds;
            int ok = 0;
            for (size_t k = 0; cn && cn->kind && ks && ks[k]; k++)
                ok |= !strcmp(ks[k], cn->kind);
            const char *what = w.catalog_what ? w.catalog_what : "a catalog";
            zx_cf_join(kinds, sizeof(kinds), ks, " or ");
            if (!cn)
                zx_cf_error(x, p->line, p->column, "pipelines.%s: %s: unknown connection "
                            "'%.64s' (%s, of kind %s)", p->name, w.option, w.catalog, what,
                            kinds);
            else if (!ok)
                zx_cf_error(x, p->line, p->column, "pipelines.%s: %s: connection %s is of "
                            "kind %s; %s is of kind %s", p->name, w.option, cn->name,
                            cn->kind ? cn->kind : "(none)", what, kinds);
            else {
                p->dest_catalog = cn;
                if (!w.connection && cn->aws_connection)
                    w.connection = cn->aws_connection;
            }
        }
        if (w.connection)
            zx_cf_dest_connection(x, c, p, &w);
        if (so && so->dest_connection) {
            const zx_conf_connection *cn = zx_conf_find_connection(c, so->dest_connection);
            const yaml_node_t *n = dest_conn_node ? dest_conn_node[i] : NULL;
            int line = n ? zx_cf_line(n) : p->line, col = n ? zx_cf_col(n) : p->column;
            char kinds[100];
            if (!cn)
                zx_cf_error(x, line, col, "pipelines.%s: destination: unknown "
                            "connection '%.64s'", p->name, so->dest_connection);
            else if (!zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, cn->kind))
                zx_cf_error(x, line, col, "pipelines.%s: destination: connection %s "
                            "is of kind %s; a table destination needs kind %s", p->name,
                            cn->name, cn->kind ? cn->kind : "(none)",
                            zx_plugin_kinds(ZX_PLUGIN_DESTINATION, kinds, sizeof(kinds)));
            else if (cn->read_only)
                zx_cf_error(x, line, col, "pipelines.%s: destination: connection %s "
                            "is read_only: zx never writes to it", p->name, cn->name);
            else {
                p->dest_conn = cn;
                /* the table destination of the connection's kind (a
                 * sub-section's too, written besides: reported already) */
                if (!p->dest_plugin)
                    p->dest_plugin = zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, cn->kind);
            }
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
