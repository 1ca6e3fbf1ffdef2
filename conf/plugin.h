/*
 * plugin.h — what a plug-in is: one source or one destination, in a folder
 * of its own, described by one `const zx_plugin` (its `<name>_plugin.c`)
 * and registered by one line in workers/plugins.def (the one list, like
 * nginx's ngx_modules.c).
 *
 * Its zx_plugin carries everything zx needs to know about it: its name
 * and the connection kinds it takes, the metadata columns it fills, its
 * paragraph in conf/OPTIONS.md, its option rows (a Fluent Bit plug-in's
 * config_map: parsed, defaulted, compared on reload, freed and documented
 * by the loader from the rows), the check of a pipeline's configuration,
 * its `zxctl test`, its retire hook and its worker.  Every list of
 * sources, destinations, connection kinds and formats in conf/,
 * supervisor/ and zxctl is derived from zx_plugins.
 *
 * Own options.  A plug-in with opts_size > 0 has a struct of its own
 * options; its rows flagged ZX_CF_OWN have their offsets into it.  The
 * loader allocates it zeroed for every pipeline of that plug-in
 * (zx_conf_pipeline.own), sets its defaults and the values written,
 * compares it in zx_conf_pipeline_same, and frees it (and the strings and
 * lists its rows describe) with the configuration.  A plug-in reads it as
 * `const zx_kafka_opts *o = p->own;`.  Rows without ZX_CF_OWN keep
 * offsets into zx_conf_pipeline's shared fields.
 *
 * A plug-in's rows without `sources` apply to its own pipelines only (a
 * source's rows: `source: <name>`).
 *
 * Every zx_plugin and everything it points to is constant, static data.
 */
#ifndef ZX_CONF_PLUGIN_H
#define ZX_CONF_PLUGIN_H

#include <stddef.h>

#include "conf/check.h"
#include "conf/config.h"
#include "conf/option.h"

struct zx_source;     /* workers/sources/source.h */
struct zx_dest_ops;   /* workers/destinations/dest.h (typedef zx_dest) */

typedef enum { ZX_PLUGIN_SOURCE = 1, ZX_PLUGIN_DESTINATION = 2 } zx_plugin_role;

typedef struct zx_plugin {
    const char *name;              /* source: the `source:` value ("kafka");
                                      destination: its `kind` ("postgres", "files") */
    zx_plugin_role role;
    const char *const *conn_kinds; /* connection kinds it takes, NULL-ended; NULL: none */
    const char *const *metadata;   /* sources: metadata columns it can fill, NULL-ended */
    const char *doc;               /* its paragraph in conf/OPTIONS.md */
    const zx_cf_option *options;   /* its own option rows (section "pipelines.<name>") */
    size_t noptions;
    size_t opts_size;              /* bytes of its own options struct (0: none): the
                                      loader allocates it zeroed per pipeline, sets the
                                      rows flagged ZX_CF_OWN into it, and frees it */
    /* Check a pipeline of this plug-in, and set what its options derive
     * (its own struct's values that depend on other options, e.g.
     * postgres's slot from the pipeline name).  Called once per pipeline,
     * right after its entry is walked: its options are set and defaulted,
     * its required options reported.  Its connection is NOT resolved yet
     * (p->conn is NULL) and other pipelines must not be read: checks across
     * pipelines (tables, slots) are conf/'s.  Errors go through ck
     * (conf/check.h), at the line of the option they are about.  Returns 0,
     * or -1 when it reported an error.  NULL: nothing to check.  Its own
     * rows are its to check; shared core rows (format, mode, history...)
     * are checked by conf/. */
    int (*check)(zx_cf_check *ck, zx_conf_pipeline *p);
    /* Check a connection of a kind in conn_kinds (its options are set, the
     * options of other kinds refused already), and set what its options
     * derive (a path made absolute, a dsn shown without its password).
     * Called once per connection for each plug-in taking its kind that has
     * one (today one per kind).  Errors through ck, with names relative to
     * connections.<name> ("tls.cert").  Returns 0, or -1 when it reported
     * an error.  NULL: nothing to check. */
    int (*check_connection)(zx_cf_check *ck, zx_conf_connection *c);
    /* `zxctl test` (today's zx_source.test, moved here) */
    int (*test)(const zx_conf *conf, const zx_conf_pipeline *p,
                const zx_conf_connection *c, int timeout_ms, char *out, size_t outlen);
    /* Retire: run once, in a short-lived process of its own
     * (supervisor/retire.c), after a reload removed a pipeline of this
     * plug-in, or changed it so that what it made upstream is abandoned,
     * and its old worker has exited.  conf is the running configuration;
     * p is the pipeline as the OLD configuration had it (kept alive for
     * the call).  Writes one paragraph into msg (never a secret) and
     * returns ZX_RETIRE_DONE, ZX_RETIRE_KEPT (left alone on purpose: still
     * used, not zx's) or ZX_RETIRE_FAILED (msg says why and how to finish
     * by hand; tried again with backoff).  Must finish within
     * ZX_RETIRE_TIMEOUT_S (the process is killed then).  NULL: nothing to
     * retire (postgres: drops its slot and the publication zx made). */
    int (*retire)(const zx_conf *conf, const zx_conf_pipeline *p, char *msg, size_t msglen);
    /* What retire drops, for its events in the log and the feed:
     * <retire_what>_drop_start, _dropped, _kept, _drop_failed, with the
     * field <retire_what> set to retire_subject(p) (e.g. "slot" and the
     * replication slot's name).  retire_subject returns NULL when p has
     * nothing to retire (no process is started).  A pipeline of the new
     * configuration with the same source, subject and connection (the
     * same dsn but for its passwords) still uses it: nothing is retired. */
    const char *retire_what;
    const char *(*retire_subject)(const zx_conf_pipeline *p);
    const struct zx_source *source;    /* ZX_PLUGIN_SOURCE: the worker (workers/sources/source.h) */
    const struct zx_dest_ops *dest;    /* ZX_PLUGIN_DESTINATION (workers/destinations/dest.h) */
    /* A destination written as a sub-section of its own, `destination:
     * {<its name>: {...}}` (files): that sub-section's paragraph in
     * conf/OPTIONS.md.  Set, the loader knows the section
     * "pipelines.<name>.destination.<its name>" (its rows' section) from
     * it, and sets its ZX_CF_OWN rows into the sync's p->dest_own.  NULL:
     * a table destination, named by a connection's kind. */
    const char *section_doc;
} zx_plugin;

/* retire's answers (-1: failed). */
enum { ZX_RETIRE_FAILED = -1, ZX_RETIRE_DONE = 0, ZX_RETIRE_KEPT = 1 };
#define ZX_RETIRE_TIMEOUT_S 90

#define ZX_CF_OWN 0x10u   /* option row flag: `offset` (and n_offset, v_offset) are
                             into the plug-in's own struct, not zx_conf_pipeline */

/* The registry: made in workers/plugins.c from workers/plugins.def, the
   one list of plug-ins (one line each, like nginx's ngx_modules.c). */
extern const zx_plugin *const zx_plugins[];
extern const size_t zx_nplugins;
/* The plug-in of that role and name; NULL: none (or name NULL). */
const zx_plugin *zx_plugin_find(zx_plugin_role role, const char *name); /* NULL: none */
/* The first plug-in of that role whose conn_kinds hold kind; NULL: none
 * (or kind NULL). */
const zx_plugin *zx_plugin_for_kind(zx_plugin_role role, const char *kind);
/* The connection kinds the plug-ins of that role take, each once, as a
 * person reads them ("postgres, mysql or sqlite") into buf (len bytes,
 * cut); returns buf. */
const char *zx_plugin_kinds(zx_plugin_role role, char *buf, size_t len);

#endif
