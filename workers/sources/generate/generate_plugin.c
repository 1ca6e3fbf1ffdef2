/*
 * generate_plugin.c — `source: generate` as a plug-in (conf/plugin.h):
 * its option rows (in its own struct, zx_generate_opts of generate.h), its
 * check, its `zxctl test` and its worker.  Registered in workers/plugins.c
 * (its declaration and its entry).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "conf/lineage.h"
#include "conf/plugin.h"
#include "workers/sources/generate/generate.h"
#include "workers/sources/source.h"

extern const zx_source zx_source_generate;   /* generate.c */

/* the rows' `sources`: named, so that `fields` is required of generate
 * pipelines only */
static const char *const gen_only[] = {"generate", NULL};

#define OWN(f) offsetof(zx_generate_opts, f)

static const zx_cf_option gen_options[] = {
    /* `table` is a shared field (zx_conf_pipeline.table) the core row
     * gives only the sources of its stream_sources: this row takes it for
     * generate, required (the core's default, the pipeline's name, is
     * given only to the sources of the core row) */
    {.section = "pipelines.<name>", .name = "table", .type = ZX_CF_IDENT,
     .offset = offsetof(zx_conf_pipeline, table), .flags = ZX_CF_REQUIRED,
     .sources = gen_only,
     .help = "generate: workspace table the rows go to: `[A-Za-z_][A-Za-z0-9_]`, at most "
             "63 characters, not starting with `_zx` nor ending with `__rejects`, nor "
             "starting with `sqlite_`."},
    {.section = "pipelines.<name>", .name = "fields", .type = ZX_CF_PROPS,
     .offset = OWN(field_names), .v_offset = OWN(field_specs), .n_offset = OWN(nfields),
     .flags = ZX_CF_OWN | ZX_CF_REQUIRED, .sources = gen_only,
     .help = "generate: the row template, a mapping of column name to generator: "
             "`sequence` (0, 1, 2, ... unique and without gaps across restarts), "
             "`int LO..HI`, `float LO..HI`, `choice A,B,C`, `bool`, `timestamp` "
             "(now), `uuid` (version 4), `json VALUE` (a fixed JSON object or array). "
             "Column names are lower-case letters, digits and `_`; 1 to 256 fields."},
    {.section = "pipelines.<name>", .name = "rate", .type = ZX_CF_STRING, .def = "max",
     .offset = OWN(rate), .flags = ZX_CF_OWN, .sources = gen_only,
     .help = "generate: rows per second, `N/s` (1 to 100000000), or `max`: as fast as "
             "the writer takes them."},
    {.section = "pipelines.<name>", .name = "count", .type = ZX_CF_UINT, .def = "0",
     .offset = OWN(count), .flags = ZX_CF_OWN, .min = 0, .max = UINT32_MAX, .sources = gen_only,
     .help = "generate: rows to make in all (counted across restarts), then the pipeline "
             "idles and its status says `done`; 0: no end."},
};

static int gen_check_text(const zx_conf_pipeline *p, char *err, size_t errlen)
{
    if (p->table && strchr(p->table, '{'))
        return zx_seterr(err, errlen, "pipeline %s: table: placeholders are for format: "
                         "debezium, not source: generate", p->name);
    return zx_generate_check(p, p->own, err, errlen);
}

/* The plug-in's check (conf/plugin.h): the same, at the pipeline. */
static int gen_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    char err[512] = "";

    if (gen_check_text(p, err, sizeof(err)) == 0)
        return 0;
    zx_check_error(ck, NULL, "%s", err);
    return -1;
}

/* `zxctl test`: nothing to connect to; the template and the rate parse. */
static int gen_test(const zx_conf *conf, const zx_conf_pipeline *p,
                    const zx_conf_connection *c, int timeout_ms, char *out, size_t outlen)
{
    (void)conf;
    (void)c;
    (void)timeout_ms;
    const zx_generate_opts *o = p ? p->own : NULL;
    if (!o) {
        snprintf(out, outlen, "source generate makes its rows itself: nothing to connect to");
        return 0;
    }
    if (gen_check_text(p, out, outlen) < 0)
        return -1;
    char count[48] = "no end";
    if (o->count)
        snprintf(count, sizeof(count), "%lu rows in all", (unsigned long)o->count);
    snprintf(out, outlen,
             "pipeline %s makes its rows itself (nothing to connect to): %zu fields into "
             "table %s, rate %s, %s", p->name, o->nfields, p->table ? p->table : "?",
             o->rate ? o->rate : "max", count);
    return 0;
}

/* Lineage: its template, named after the pipeline. */
static void gen_lineage(const zx_conf *c, const zx_conf_pipeline *p, zx_lineage_out *out)
{
    (void)c;
    zx_lineage_ext(out, "generate", NULL, p->name);
}

const zx_plugin zx_plugin_generate = {
    .name = "generate",
    .role = ZX_PLUGIN_SOURCE,
    .lineage = gen_lineage,
    .caps = 0,  /* its `table` is a row of its own; no stream rows, no mirrors */
    .doc = "rows made from a template of `fields` (sequence numbers, random numbers "
           "in a range, choices, timestamps, UUIDs, a fixed JSON value), at `rate` or "
           "as fast as they are taken, optionally `count` rows in all: a datagen for "
           "demos and load tests.",
    .options = gen_options,
    .noptions = sizeof(gen_options) / sizeof(gen_options[0]),
    .opts_size = sizeof(zx_generate_opts),
    .check = gen_check,
    .test = gen_test,
    .source = &zx_source_generate,
};
