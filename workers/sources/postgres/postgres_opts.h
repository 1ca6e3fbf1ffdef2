/*
 * postgres_opts.h — the postgres source's own options (conf/plugin.h):
 * the rows flagged ZX_CF_OWN of postgres_plugin.c set them, per pipeline,
 * into the struct zx_conf_pipeline.own points at (owned by the zx_conf).
 * Its other options (tables, slot, publication...) are still shared fields
 * of zx_conf_pipeline: the loader's cross-pipeline checks and the
 * supervisor's slot clean-up read them.
 */
#ifndef ZX_SOURCES_POSTGRES_OPTS_H
#define ZX_SOURCES_POSTGRES_OPTS_H

#include "conf/config.h"

typedef struct zx_postgres_opts {
    int initial_copy;        /* `initial_copy`: 1 (default): copy the rows
                                already there before streaming changes;
                                0: changes only */
    int slot_lost;           /* `slot_lost`: ZX_SLOT_LOST_FAIL (default) or
                                ZX_SLOT_LOST_RESYNC (conf/config.h): when
                                the slot it streamed from is gone */
} zx_postgres_opts;

/* The own options of postgres pipeline p (p->own); the defaults for a
 * pipeline that has none (not loaded as a postgres pipeline).  Never
 * NULL; valid while p's configuration is. */
static inline const zx_postgres_opts *zx_postgres_opts_of(const zx_conf_pipeline *p)
{
    static const zx_postgres_opts defaults = {1, ZX_SLOT_LOST_FAIL};

    return p && p->own ? (const zx_postgres_opts *)p->own : &defaults;
}

#endif
