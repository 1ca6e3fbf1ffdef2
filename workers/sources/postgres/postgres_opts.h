/*
 * postgres_opts.h — the postgres source's own options (conf/plugin.h):
 * the rows flagged ZX_CF_OWN of postgres_plugin.c set them, per pipeline,
 * into the struct zx_conf_pipeline.own points at (owned by the zx_conf,
 * valid while it is).  Its check (postgres_check.c) derives the default
 * slot and publication, and the pipeline's core `mirrors` (the workspace
 * tables it writes, which conf/ and the writer read) from tables and
 * table_prefix.
 */
#ifndef ZX_SOURCES_POSTGRES_OPTS_H
#define ZX_SOURCES_POSTGRES_OPTS_H

#include <string.h>

#include "conf/plugin.h"

/* The plug-in's name: the `source:` value of its pipelines. */
#define ZX_POSTGRES_NAME "postgres"

typedef struct zx_postgres_opts {
    char **tables;           /* `tables`: the source tables, each
                                "schema.table": as written, with "public."
                                added to a bare `table`; each part
                                [A-Za-z_][A-Za-z0-9_]{0,62}, an exact name
                                (quoted in SQL: `Orders` is not `orders`).
                                1 to ZX_MAX_PG_TABLES, no table twice.
                                tables[i] is mirrored into p->mirrors[i]
                                (ntables == p->nmirrors once checked) */
    size_t ntables;
    char *table_prefix;      /* `table_prefix`: as written, or NULL (none) */
    int initial_copy;        /* `initial_copy`: 1 (default): copy the rows
                                already there before streaming changes;
                                0: changes only */
    int slot_lost;           /* `slot_lost`: ZX_SLOT_LOST_FAIL (default) or
                                ZX_SLOT_LOST_RESYNC (conf/config.h): when
                                the slot it streamed from is gone */
    char *slot;              /* `slot`: the replication slot, as written, or
                                "zx_" + the pipeline name with '-' as '_'
                                (cut to 63 bytes); [a-z0-9_]{1,63}.  No two
                                pipelines on the same database (the same
                                connection, or the same dsn) share one */
    char *publication;       /* `publication`: as written (1 to 63 bytes, no
                                control characters, an exact name; it may
                                exist already), or derived as slot is */
} zx_postgres_opts;

struct zx_cf_check;   /* conf/check.h */
/* zx_plugin_postgres.check (postgres_check.c): set p->mirrors,
 * p->mirror_of and p->nmirrors (owned by the configuration) from the
 * tables and table_prefix of p->own, and its default slot and
 * publication ("zx_" + the pipeline name, '-' as '_').  Returns 0, or -1
 * after reporting an error through ck (a mirror that is no valid table
 * name, at its item of `tables`; out of memory). */
int zx_pg_check(struct zx_cf_check *ck, zx_conf_pipeline *p);

/* 1 when p was loaded as a postgres pipeline (its plug-in is this one,
 * its own options set), else 0 (p NULL too). */
static inline int zx_postgres_is(const zx_conf_pipeline *p)
{
    return p && p->own && p->plugin && p->plugin->opts_size == sizeof(zx_postgres_opts) &&
           p->plugin->name && !strcmp(p->plugin->name, ZX_POSTGRES_NAME);
}

/* The own options of postgres pipeline p (p->own); for a pipeline that
 * has none (not loaded as a postgres pipeline, or NULL): the defaults,
 * with no tables, slot nor publication.  Never NULL; valid while p's
 * configuration is. */
static inline const zx_postgres_opts *zx_postgres_opts_of(const zx_conf_pipeline *p)
{
    static const zx_postgres_opts defaults = {.initial_copy = 1,
                                              .slot_lost = ZX_SLOT_LOST_FAIL};

    return zx_postgres_is(p) ? (const zx_postgres_opts *)p->own : &defaults;
}

#endif
