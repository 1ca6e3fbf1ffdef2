/*
 * rows.c — every option row zx knows, as one indexed list: the core rows
 * of conf/options.c (zx_cf_options) first, then each plug-in's rows
 * (conf/plugin.h) in the order of zx_plugins.  The loader records where
 * each option was written by this index (zx_cf_where), and walks, sets,
 * compares, frees and documents the rows through it; and where the field
 * of a row lives: in the struct its section targets, or (ZX_CF_OWN) in
 * the plug-in's own options struct of the pipeline.
 *
 * It must never: hold rows itself, or read YAML.
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"
#include "conf/plugin.h"

#include <string.h>

size_t zx_cf_nrows(void)
{
    size_t n = zx_cf_noptions;

    for (size_t i = 0; i < zx_nplugins; i++)
        n += zx_plugins[i]->noptions;
    return n;
}

const zx_cf_option *zx_cf_row(size_t i)
{
    if (i < zx_cf_noptions)
        return &zx_cf_options[i];
    i -= zx_cf_noptions;
    for (size_t p = 0; p < zx_nplugins; p++) {
        if (i < zx_plugins[p]->noptions)
            return &zx_plugins[p]->options[i];
        i -= zx_plugins[p]->noptions;
    }
    return NULL;
}

const zx_plugin *zx_cf_row_owner(const zx_cf_option *o)
{
    for (size_t p = 0; o && p < zx_nplugins; p++) {
        const zx_plugin *pl = zx_plugins[p];
        if (pl->noptions && o >= pl->options && o < pl->options + pl->noptions)
            return pl;
    }
    return NULL;
}

void *zx_cf_row_base(const zx_cf_option *o, void *base)
{
    const zx_conf_pipeline *p = base;

    if (!(o->flags & ZX_CF_OWN))
        return base;
    /* an own row lives in the own struct of its plug-in's pipelines only */
    if (zx_cf_target(o->section) != ZX_CF_PIPELINE || !p->own ||
        p->plugin != zx_cf_row_owner(o))
        return NULL;
    return p->own;
}
