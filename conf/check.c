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

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Where option `name` (dotted into sub-sections) of the pipeline was
 * written, or NULL. */
static const yaml_node_t *check_node(const zx_cf_check *ck, const char *name)
{
    char section[160];
    const char *dot;

    if (!name)
        return NULL;
    dot = strrchr(name, '.');
    if (!dot)
        return zx_cf_where_opt(ck->w, "pipelines.<name>", name);
    if ((size_t)snprintf(section, sizeof(section), "pipelines.<name>.%.*s",
                         (int)(dot - name), name) >= sizeof(section))
        return NULL;
    return zx_cf_where_opt(ck->w, section, dot + 1);
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

int zx_cf_run_check(zx_cf_ctx *x, const yaml_node_t *kn, zx_conf_pipeline *pl,
                    const zx_cf_where *w, int (*check)(zx_cf_check *, zx_conf_pipeline *))
{
    zx_cf_check ck = {.x = x, .kn = kn, .w = w, .errors = 0};

    if (!check)
        return 0;
    if (check(&ck, pl) < 0 && !ck.errors)
        zx_cf_error_at(x, kn, "pipeline %s: invalid settings", pl->name);
    return ck.errors ? -1 : 0;
}
