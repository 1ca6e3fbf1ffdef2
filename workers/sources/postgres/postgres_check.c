/*
 * postgres_check.c — the check of a `source: postgres` pipeline
 * (zx_plugin.check, conf/check.h), once the loader has set its options:
 * its mirrors (table_prefix + each source table's name, valid table
 * names, short enough for `__changes` with history), set into the
 * pipeline's core `mirrors` for conf/ and the writer; and its default
 * slot and publication, derived from the pipeline's name.
 *
 * Checks across pipelines (no two writing one table, no two sharing a
 * slot on one database) are conf/'s (conf/tables.c, conf/entries.c).
 *
 * It must never: read another pipeline, or open anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/check.h"
#include "conf/plugin.h"
#include "workers/sources/postgres/postgres_opts.h"

/* "zx_" + the pipeline name with '-' as '_', cut to 63 bytes: a valid
 * slot name when the pipeline name is valid ([a-z][a-z0-9_-]*).  *out
 * NULL (and 0) when the name cannot give one (an invalid name, reported
 * by the loader already).  -1 on out of memory. */
static int derived_name(const char *pipeline, char **out)
{
    char *d = NULL, *t;

    *out = NULL;
    if (!pipeline || !*pipeline)
        return 0;
    if (asprintf(&d, "zx_%.60s", pipeline) < 0)
        return -1;
    for (t = d; *t; t++) {
        if (*t == '-')
            *t = '_';
        if (!((*t >= 'a' && *t <= 'z') || (*t >= '0' && *t <= '9') || *t == '_')) {
            free(d);
            return 0;
        }
    }
    *out = d;
    return 0;
}

/* Set p->mirrors (and mirror_of) from o's tables and table_prefix,
 * reporting each mirror that is no valid table name.  0, or -1 when it
 * reported an error. */
static int set_mirrors(zx_cf_check *ck, zx_conf_pipeline *p, const zx_postgres_opts *o)
{
    const char *why;
    int rc = 0;

    p->mirrors = calloc(o->ntables, sizeof(*p->mirrors));
    p->mirror_of = calloc(o->ntables, sizeof(*p->mirror_of));
    if (!p->mirrors || !p->mirror_of) {
        free(p->mirrors);
        free(p->mirror_of);
        p->mirrors = p->mirror_of = NULL;
        zx_check_error(ck, NULL, "out of memory");
        return -1;
    }
    p->nmirrors = o->ntables;
    for (size_t i = 0; i < o->ntables; i++) {
        /* the list was set whole: item i of `tables` is tables[i] */
        const char *name = strchr(o->tables[i], '.') + 1;
        char *m = NULL;
        if (asprintf(&m, "%s%s", o->table_prefix ? o->table_prefix : "", name) < 0)
            m = NULL;
        p->mirrors[i] = m;
        if (!m || !(p->mirror_of[i] = strdup(o->tables[i]))) {
            zx_check_error_item(ck, "tables", i, "out of memory");
            return -1;
        }
        if (!zx_cf_table_name_ok(m, &why)) {
            zx_check_error_item(ck, "tables", i, "pipelines.%s: %s would be mirrored to "
                                "table '%.80s', which %s%s", p->name, o->tables[i], m, why,
                                o->table_prefix && strlen(m) > 63
                                ? " (shorten table_prefix)" : "");
            rc = -1;
        } else if (p->history && strlen(m) > 54) {
            zx_check_error_item(ck, "tables", i, "pipelines.%s: with history, "
                                "the mirror of %s, '%s', has %zu characters: "
                                "at most 54, so that its table %s__changes "
                                "fits in 63", p->name, o->tables[i], m,
                                strlen(m), m);
            rc = -1;
        }
    }
    return rc;
}

int zx_pg_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    zx_postgres_opts *o = p->own;
    int rc = 0;

    if (!o)
        return 0;   /* not set as a postgres pipeline: reported already */
    /* a table_prefix written but refused (reported) names no mirror */
    if (o->tables && !(zx_check_written(ck, "table_prefix") && !o->table_prefix))
        rc = set_mirrors(ck, p, o);
    if (!o->slot && !zx_check_written(ck, "slot") && derived_name(p->name, &o->slot) < 0) {
        zx_check_error(ck, NULL, "out of memory");
        return -1;
    }
    if (!o->publication && !zx_check_written(ck, "publication") &&
        derived_name(p->name, &o->publication) < 0) {
        zx_check_error(ck, NULL, "out of memory");
        return -1;
    }
    return rc;
}
