/*
 * generate.h — `source: generate`: its options (the plug-in's own struct,
 * conf/plugin.h: set by the loader from the rows in generate_plugin.c and
 * read as `const zx_generate_opts *o = p->own`) and the worker.
 *
 * The worker (generate.c) makes rows from the `fields` template
 * (gen_core.h) at `rate`, and publishes them in frames whose position
 * (part ZX_GEN_PART, 8 bytes big-endian) is the next sequence number: a
 * restarted worker continues from the last committed one, so `sequence`
 * values are unique and without gaps across restarts.  After `count` rows
 * it idles (status "done") until the pipeline is stopped or removed.
 */
#ifndef ZX_SOURCES_GENERATE_GENERATE_H
#define ZX_SOURCES_GENERATE_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

/* The position's part name. */
#define ZX_GEN_PART "generate"

typedef struct zx_generate_opts {
    char *rate;            /* `rate`: "max" (default) or "N/s" */
    uint32_t count;        /* `count`: rows to make, then idle; 0 = no end */
    char **field_names;    /* `fields`: column names ... */
    char **field_specs;    /* ... and their generators (gen_core.h) */
    size_t nfields;
} zx_generate_opts;

/* Check a generate pipeline's options: the template and the rate parse.
 * 0, or -1 with err = "pipeline NAME: field F: ..." (or "...: `rate`
 * ..."). */
int zx_generate_check(const zx_conf_pipeline *p, const zx_generate_opts *o, char *err,
                      size_t errlen);

#endif
