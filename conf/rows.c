/*
 * rows.c — every option row zx knows, as one indexed list: the core rows
 * of conf/options.c (zx_cf_options) first, then each plug-in's rows
 * (conf/plugin.h) in the order of zx_plugins.  The loader records where
 * each option was written by this index (zx_cf_where), and walks, sets,
 * compares, frees and documents the rows through it; and where the field
 * of a row lives: in the struct its section targets, or (ZX_CF_OWN) in
 * the plug-in's own options struct of the pipeline.  And the lists the
 * rows name that are the registry's: the values of `source:` and of a
 * connection's `kind:`, the sources that read through a connection, the
 * kinds a table destination writes to, and those of a capability
 * (zx_plugin.caps): the stream sources, those that keep mirrors with
 * history or park changes, the kinds reached by a dsn; and every section:
 * the core's, then each destination plug-in's own sub-section (its
 * section_doc).
 *
 * It must never: hold rows itself, or read YAML.
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"
#include "conf/plugin.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t zx_cf_nrows(void)
{
    size_t n = zx_cf_noptions;

    zx_cf_derive();
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
    const zx_plugin *pg;

    if (!(o->flags & ZX_CF_OWN))
        return base;
    /* an own row lives in the own struct of its plug-in's pipelines only:
     * a source's in own, a destination's in dest_own */
    if (zx_cf_target(o->section) != ZX_CF_PIPELINE || !(pg = zx_cf_row_owner(o)))
        return NULL;
    if (pg->role == ZX_PLUGIN_DESTINATION)
        return p->dest_plugin == pg ? p->dest_own : NULL;
    return p->plugin == pg ? p->own : NULL;
}

#define DEST_SECTION "pipelines.<name>.destination."

const zx_plugin *zx_cf_section_dest(const char *path)
{
    const zx_plugin *pg;

    if (!path || strncmp(path, DEST_SECTION, sizeof(DEST_SECTION) - 1))
        return NULL;
    pg = zx_plugin_find(ZX_PLUGIN_DESTINATION, path + sizeof(DEST_SECTION) - 1);
    return pg && pg->section_doc ? pg : NULL;
}

/* ---- sections: the core's, then the destinations' own ----------------- */

static zx_cf_section dest_secs[ZX_CF_MAX_SECTIONS];
static char dest_paths[ZX_CF_MAX_SECTIONS][96];
static size_t ndest_secs;

/* derive(): a section for each destination plug-in with a sub-section of
 * its own (as many as zx_cf_where.sec has room for: test_plugins checks
 * that every one got its section) */
static void derive_sections(void)
{
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin *p = zx_plugins[i];
        size_t n = ndest_secs;
        if (p->role != ZX_PLUGIN_DESTINATION || !p->section_doc ||
            zx_cf_nsections + n >= ZX_CF_MAX_SECTIONS)
            continue;
        snprintf(dest_paths[n], sizeof(dest_paths[n]), DEST_SECTION "%s", p->name);
        dest_secs[n] = (zx_cf_section){dest_paths[n], ZX_CF_PIPELINE, 0, NULL, p->section_doc};
        ndest_secs++;
    }
}

size_t zx_cf_nsecs(void)
{
    zx_cf_derive();
    return zx_cf_nsections + ndest_secs;
}

const zx_cf_section *zx_cf_sec(size_t i)
{
    zx_cf_derive();
    if (i < zx_cf_nsections)
        return &zx_cf_sections[i];
    i -= zx_cf_nsections;
    return i < ndest_secs ? &dest_secs[i] : NULL;
}

zx_cf_where *zx_cf_where_new(void)
{
    zx_cf_where *w = calloc(1, sizeof(*w));

    if (!w)
        return NULL;
    w->n = zx_cf_nrows();
    w->opt = calloc(w->n + 1, sizeof(*w->opt));
    w->bad = calloc(w->n + 1, sizeof(*w->bad));
    if (!w->opt || !w->bad) {
        zx_cf_where_free(w);
        return NULL;
    }
    return w;
}

void zx_cf_where_free(zx_cf_where *w)
{
    if (!w)
        return;
    free(w->opt);
    free(w->bad);
    free(w);
}

/* ---- lists derived from the registry ---------------------------------- */

#define MAX_NAMES 64   /* plug-ins, and connection kinds, at most */
const char *zx_cf_source_names[MAX_NAMES + 1];
const char *zx_cf_conn_kinds[MAX_NAMES + 1];
const char *zx_cf_conn_sources[MAX_NAMES + 1];
const char *zx_cf_table_kinds[MAX_NAMES + 1];
const char *zx_cf_stream_sources[MAX_NAMES + 1];
const char *zx_cf_mirror_sources[MAX_NAMES + 1];
const char *zx_cf_park_sources[MAX_NAMES + 1];
const char *zx_cf_dsn_kinds[MAX_NAMES + 1];

static void add_name(const char **list, const char *name)
{
    size_t i;

    for (i = 0; i < MAX_NAMES && list[i]; i++)
        if (!strcmp(list[i], name))
            return;
    if (i < MAX_NAMES)
        list[i] = name;
}

static void derive(void)
{
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin *p = zx_plugins[i];
        /* `source: sync` stays a value the loader knows, to answer it
         * with "write direction: out"; no other list of sources holds
         * the sync */
        if (p->role == ZX_PLUGIN_SYNC)
            add_name(zx_cf_source_names, p->name);
        if (p->role == ZX_PLUGIN_SOURCE) {
            add_name(zx_cf_source_names, p->name);
            if (p->conn_kinds && p->conn_kinds[0])
                add_name(zx_cf_conn_sources, p->name);
            if (p->caps & ZX_PLUGIN_STREAM)
                add_name(zx_cf_stream_sources, p->name);
            if (p->caps & ZX_PLUGIN_MIRROR)
                add_name(zx_cf_mirror_sources, p->name);
            if (p->caps & ZX_PLUGIN_PARK)
                add_name(zx_cf_park_sources, p->name);
        }
        for (size_t k = 0; p->conn_kinds && p->conn_kinds[k]; k++) {
            add_name(zx_cf_conn_kinds, p->conn_kinds[k]);
            if (p->role == ZX_PLUGIN_DESTINATION && !p->dest_where)
                add_name(zx_cf_table_kinds, p->conn_kinds[k]);
            if (p->caps & ZX_PLUGIN_DSN)
                add_name(zx_cf_dsn_kinds, p->conn_kinds[k]);
        }
    }
    derive_sections();
}

void zx_cf_derive(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, derive);
}
