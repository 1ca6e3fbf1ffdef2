/*
 * check.c — the context a plug-in's check reports through (conf/check.h):
 * option names resolved to where the pipeline's entry wrote them (its
 * zx_cf_where), errors added to the loader's list with their line.
 *
 * It must never: keep a pointer past the check's call, or read another
 * pipeline.
 */
#define ZX_CONF_INTERNAL
#include "conf/check.h"
#include "conf/config.h"
#include "conf/check_int.h"
#include "conf/plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The section and option of `name` (dotted into sub-sections) in the
 * entry: 0, or -1 when it does not fit. */
static int check_split(const zx_cf_check *ck, const char *name, char *section, size_t len,
                       const char **opt)
{
    const char *dot = strrchr(name, '.');

    *opt = dot ? dot + 1 : name;
    if (!dot)
        return (size_t)snprintf(section, len, "%s", ck->entry) < len ? 0 : -1;
    return (size_t)snprintf(section, len, "%s.%.*s", ck->entry, (int)(dot - name), name) < len
        ? 0 : -1;
}

/* Where option `name` (dotted into sub-sections) of the entry was
 * written; else where the sub-section `name` was; else NULL. */
static const yaml_node_t *check_node(const zx_cf_check *ck, const char *name)
{
    char section[160];
    const char *opt;
    const yaml_node_t *n;

    if (!name || check_split(ck, name, section, sizeof(section), &opt) < 0)
        return NULL;
    if ((n = zx_cf_where_opt(ck->w, section, opt)))
        return n;
    if ((size_t)snprintf(section, sizeof(section), "%s.%s", ck->entry, name) >= sizeof(section))
        return NULL;
    return zx_cf_where_sec(ck->w, section);
}

const char *zx_check_text(const zx_cf_check *ck, const char *name)
{
    return zx_cf_scalar(check_node(ck, name));
}

int zx_check_refused(const zx_cf_check *ck, const char *name)
{
    char section[160];
    const char *opt;
    size_t i;

    if (!name || check_split(ck, name, section, sizeof(section), &opt) < 0)
        return 0;
    i = zx_cf_opt_index(section, opt);
    return i < ck->w->n && ck->w->opt[i] && ck->w->bad[i];
}

int zx_check_written(const zx_cf_check *ck, const char *name)
{
    return check_node(ck, name) != NULL;
}

static void check_verror(zx_cf_check *ck, const yaml_node_t *n, const char *fmt, va_list ap)
{
    if (!n)
        n = ck->kn;
    ck->errors++;
    zx_cf_verror(ck->x, zx_cf_line(n), zx_cf_col(n), fmt, ap);
}

void zx_check_error(zx_cf_check *ck, const char *name, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    check_verror(ck, check_node(ck, name), fmt, ap);
    va_end(ap);
}

void zx_check_error_item(zx_cf_check *ck, const char *name, size_t i, const char *fmt, ...)
{
    const yaml_node_t *n = check_node(ck, name);
    va_list ap;

    if (n && n->type == YAML_SEQUENCE_NODE &&
        i < (size_t)(n->data.sequence.items.top - n->data.sequence.items.start))
        n = zx_cf_node(ck->x, n->data.sequence.items.start[i]);
    va_start(ap, fmt);
    check_verror(ck, n, fmt, ap);
    va_end(ap);
}

unsigned zx_check_flags(const zx_cf_check *ck)
{
    return ck->x->flags;
}

int zx_check_abspath(zx_cf_check *ck, const char *name, char **path)
{
    char *abs;

    if (!*path)
        return 0;
    if (!(abs = zx_cf_abspath(ck->x->base_dir, *path))) {
        zx_check_error(ck, name, "out of memory");
        return -1;
    }
    free(*path);
    *path = abs;
    return 0;
}

int zx_cf_run_check(zx_cf_ctx *x, const yaml_node_t *kn, zx_conf_pipeline *pl,
                    const zx_cf_where *w, int (*check)(zx_cf_check *, zx_conf_pipeline *))
{
    zx_cf_check ck = {.x = x, .kn = kn, .w = w, .entry = "pipelines.<name>", .errors = 0};

    if (!check)
        return 0;
    if (check(&ck, pl) < 0 && !ck.errors)
        zx_cf_error_at(x, kn, "pipeline %s: invalid settings", pl->name);
    return ck.errors ? -1 : 0;
}

int zx_cf_run_conn_checks(zx_cf_ctx *x, const yaml_node_t *kn, zx_conf_connection *cn,
                          const zx_cf_where *w)
{
    zx_cf_check ck = {.x = x, .kn = kn, .w = w, .entry = "connections.<name>", .errors = 0};

    for (size_t i = 0; cn->kind && i < zx_nplugins; i++) {
        const zx_plugin *pg = zx_plugins[i];
        for (size_t k = 0; pg->check_connection && pg->conn_kinds && pg->conn_kinds[k]; k++)
            if (!strcmp(pg->conn_kinds[k], cn->kind)) {
                unsigned before = ck.errors;
                if (pg->check_connection(&ck, cn) < 0 && ck.errors == before)
                    zx_cf_error_at(x, kn, "connection %s: invalid settings", cn->name);
                break;
            }
    }
    return ck.errors ? -1 : 0;
}
