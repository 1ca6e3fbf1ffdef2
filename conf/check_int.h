/*
 * check_int.h — the loader's side of conf/check.h (conf/ only): what a
 * zx_cf_check holds, and the call of one plug-in check.
 */
#ifndef ZX_CONF_CHECK_INT_H
#define ZX_CONF_CHECK_INT_H

#include "conf/check.h"
#include "conf/config.h"

struct zx_cf_check {
    zx_cf_ctx *x;                /* the load: errors go to its list */
    const yaml_node_t *kn;       /* the pipeline's name (errors without an option) */
    const zx_cf_where *w;        /* where its entry wrote each option */
    const char *entry;           /* its entry's section: "pipelines.<name>" or
                                    "connections.<name>" */
    unsigned errors;             /* errors reported through it */
};

/* Run check (NULL: nothing) on pipeline pl, whose entry's name is at kn
 * and options at w.  Returns 0, or -1 when it reported an error (a check
 * returning -1 without one gets "invalid settings" at kn). */
int zx_cf_run_check(zx_cf_ctx *x, const yaml_node_t *kn, zx_conf_pipeline *pl,
                    const zx_cf_where *w, int (*check)(zx_cf_check *, zx_conf_pipeline *));
/* The same for connection cn (name at kn, options at w): the
 * check_connection of every plug-in taking its kind.  Returns 0, or -1
 * when one reported an error. */
int zx_cf_run_conn_checks(zx_cf_ctx *x, const yaml_node_t *kn, zx_conf_connection *cn,
                          const zx_cf_where *w);

#endif
