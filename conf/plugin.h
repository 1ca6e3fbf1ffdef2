/*
 * plugin.h — what a plug-in is: one source, one destination, or the runner
 * of reverse syncs (role ZX_PLUGIN_SYNC), in a folder of its own,
 * described by one `const zx_plugin` (its `<name>_plugin.c`) and
 * registered by one line in workers/plugins.def (the one list, like
 * nginx's ngx_modules.c).
 *
 * Its zx_plugin carries everything zx needs to know about it: its name
 * and the connection kinds it takes, the metadata columns it fills, its
 * paragraph in conf/OPTIONS.md, its option rows (a Fluent Bit plug-in's
 * config_map: parsed, defaulted, compared on reload, freed and documented
 * by the loader from the rows), the check of a pipeline's configuration,
 * its `zxctl test`, its retire hook, its own control command (admin) and
 * its worker.  Every list of
 * sources, destinations, connection kinds and formats in conf/,
 * supervisor/ and zxctl is derived from zx_plugins.
 *
 * Own options.  A plug-in with opts_size > 0 has a struct of its own
 * options; its rows flagged ZX_CF_OWN have their offsets into it.  The
 * loader allocates it zeroed for every pipeline of that plug-in
 * (zx_conf_pipeline.own), sets its defaults and the values written,
 * compares it in zx_conf_pipeline_same, and frees it (and the strings and
 * lists its rows describe) with the configuration.  A plug-in reads it as
 * `const zx_kafka_opts *o = p->own;`.  A destination's own rows (its
 * sub-section destination.<name>) go the same way into p->dest_own.
 * Rows without ZX_CF_OWN are the core's (conf/options.c), shared by the
 * plug-ins whose caps take them, with offsets into zx_conf_pipeline.
 *
 * A plug-in's rows without `sources` apply to its own pipelines only (a
 * source's rows: `source: <name>`; the sync's rows: `direction: out`).
 *
 * Every zx_plugin and everything it points to is constant, static data.
 */
#ifndef ZX_CONF_PLUGIN_H
#define ZX_CONF_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "conf/check.h"
#include "conf/config.h"
#include "conf/option.h"

struct zx_source;     /* workers/sources/source.h */
struct zx_dest_ops;   /* workers/destinations/dest.h (typedef zx_dest) */
struct zx_plugin_admin; /* below */
struct zx_dest_where;   /* below */
struct zx_lineage_out;  /* conf/lineage.h */
struct json_t;        /* jansson's */

/* What a plug-in is.  ZX_PLUGIN_SOURCE: a value of `source:`, the plug-in of
 * `direction: stream` pipelines (http, kafka...).  ZX_PLUGIN_DESTINATION:
 * where a reverse sync sends its result (a connection's kind, or files).
 * ZX_PLUGIN_SYNC: the runner of `direction: out` pipelines: its option rows
 * apply to them, its worker runs one sync run; there is exactly one (the
 * plug-in "sync", workers/syncs/), and it is the plug-in of every reverse
 * sync (zx_plugin_of_pipeline).  It is not a source: no list of sources
 * (zx_cf_stream_sources..., zxctl test, verify, retire) holds it. */
typedef enum {
    ZX_PLUGIN_SOURCE = 1,
    ZX_PLUGIN_DESTINATION = 2,
    ZX_PLUGIN_SYNC = 3,
} zx_plugin_role;

typedef struct zx_plugin {
    const char *name;              /* source: the `source:` value ("kafka");
                                      destination: its `kind` ("postgres", "files");
                                      sync: "sync", a reverse sync's internal
                                      zx_conf_pipeline.source */
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
     * same dsn but for its passwords) still uses it: nothing is retired.
     * No two pipelines of one plug-in on one database hold the same
     * subject: conf/ refuses it (zx_cf_check_slots). */
    const char *retire_what;
    const char *(*retire_subject)(const zx_conf_pipeline *p);
    const struct zx_source *source;    /* ZX_PLUGIN_SOURCE and ZX_PLUGIN_SYNC: the
                                          worker (workers/sources/source.h) */
    const struct zx_dest_ops *dest;    /* ZX_PLUGIN_DESTINATION (workers/destinations/dest.h) */
    /* What it shares with other plug-ins: ZX_PLUGIN_* capability bits
     * below (0: none).  The core rows and checks that several plug-ins
     * take name no plug-in: the lists of those that take them are derived
     * from these bits (conf/rows.c: zx_cf_stream_sources...). */
    unsigned caps;
    /* The largest body one message of pipeline p may be, as its own
     * options set it (http: its `max_body_size`); 0: the server's
     * http.max_body_size.  NULL: always the server's.  conf/config.c
     * makes zx_conf_pipeline.body_limit from it. */
    uint64_t (*body_limit)(const zx_conf_pipeline *p);
    /* appended: a control command of its own (`zxctl drop-slot`), or NULL:
     * zx_plugin_admin below */
    const struct zx_plugin_admin *admin;
    /* A destination written as a sub-section of its own, `destination:
     * {<its name>: {...}}` (files): that sub-section's paragraph in
     * conf/OPTIONS.md.  Set, the loader knows the section
     * "pipelines.<name>.destination.<its name>" (its rows' section) from
     * it, and sets its ZX_CF_OWN rows into the sync's p->dest_own.  NULL:
     * a table destination, named by a connection's kind. */
    const char *section_doc;
    /* A destination that writes under a path (files, delta): where, from
     * its own options, into *w: the path (absolute, or "s3://..."), the
     * file format that path may end with (NULL: a folder only), the name
     * of the `kind: aws` connection an s3:// path goes through, and the
     * option section for messages ("destination.files").  conf/syncs.c
     * checks the path against the file roots and the other syncs'
     * outputs, and resolves the connection into p->dest_conn.  NULL:
     * none (a table destination). */
    void (*dest_where)(const zx_conf_pipeline *p, struct zx_dest_where *w);
    /* Lineage (conf/lineage.h): the objects outside zx this plug-in reads
     * for stream p (a source: topics, a slot and its tables, an
     * endpoint), or writes for p (a destination: p a reverse sync, or a
     * stream whose `forward:` names it; its options in p->dest_own), each
     * told through zx_lineage_ext(out, ...).  c is p's configuration.
     * Reads only c and p.  NULL: conf/lineage.c shows it by dest_where,
     * or by its name. */
    void (*lineage)(const zx_conf *c, const zx_conf_pipeline *p, struct zx_lineage_out *out);
} zx_plugin;

/* What dest_where gives; every string is the pipeline's (valid while it is). */
typedef struct zx_dest_where {
    const char *path;
    const char *format;
    const char *connection;
    const char *option;
    char target[320];            /* what it writes when that is not a path
                                    (Iceberg: "<catalog> <ns>.<table>"): two
                                    syncs with the same target are refused;
                                    "" none */
    const char *catalog;         /* a catalog connection's name (Iceberg): one
                                    of the plug-in's conn_kinds; set into
                                    p->dest_catalog; its own `connection:`
                                    (glue, s3tables) becomes p->dest_conn
                                    unless connection names one */
    const char *catalog_what;    /* what that connection is, in messages
                                    ("an API connection"); NULL: "a
                                    catalog" */
    const char *const *conn_kinds; /* the kinds `connection` may be, NULL-ended
                                    (Kafka: "kafka"); NULL: aws (an s3://
                                    path's) */
} zx_dest_where;

/* zx_plugin.caps */
#define ZX_PLUGIN_STREAM 0x1u  /* a source that appends events to a table of its
                                  own and takes the stream rows (table, format,
                                  mode, key_columns, metadata, max_columns...) */
#define ZX_PLUGIN_MIRROR 0x2u  /* a source that may keep mirrors with history */
#define ZX_PLUGIN_PARK   0x4u  /* a source whose mirror tables may park their
                                  changes (max_parked_bytes) */
#define ZX_PLUGIN_DSN    0x8u  /* its connection kinds are reached by a `dsn` */
#define ZX_PLUGIN_VERIFY 0x10u /* `zxctl verify` compares its pipelines' mirrors
                                  with their source tables (workers/verify:
                                  postgres); without it, verify refuses them */

/* retire's answers (-1: failed). */
enum { ZX_RETIRE_FAILED = -1, ZX_RETIRE_DONE = 0, ZX_RETIRE_KEPT = 1 };
#define ZX_RETIRE_TIMEOUT_S 90

/* A plug-in's own control command (zx_plugin.admin): `zxctl COMMAND NAME
 * [--OPTION VALUE]...`, sent as the control request {"cmd": COMMAND,
 * "name": NAME, "<option>": VALUE...} (proto/control.h).  zxd's command
 * table has a row for it (supervisor/commands.c) and zxctl's help lists
 * it, both from zx_plugins: nothing of it is written in supervisor/ or
 * zxctl/.  zxd runs it as it runs a retire: check at once, then run in
 * a short-lived process of its own (supervisor/retire.c), at most 4 at
 * once; the outcome is logged and sent to the feed as <what>_dropped or
 * <what>_drop_failed (field <what> = NAME, no pipeline), and answered:
 * {"ok", "name": NAME, "result" or "error", and the fields run adds}.
 * zxctl prints "result" one line a line; "error" and the lines of
 * "errors" go to stderr (exit 1). */
typedef struct zx_plugin_admin_opt {
    const char *name;        /* "connection": zxctl's --connection VALUE,
                                the request's string field "connection" */
    const char *metavar;     /* "CONN", in zxctl's help */
    const char *noun;        /* "connection name": "--connection needs a
                                connection name" for an empty value */
    const char *help;        /* its line in zxctl's options (after the
                                option and its metavar) */
} zx_plugin_admin_opt;

typedef struct zx_plugin_admin {
    const char *command;     /* "drop-slot": zxctl's command, the request's "cmd" */
    const char *summary;     /* one line (< 90 characters): zxd's command table */
    const char *usage;       /* zxctl's help: "drop-slot NAME [--connection CONN]" */
    const char *help;        /* zxctl's help paragraph: lines, each ended by
                                '\n', not indented (zxctl indents them) */
    const zx_plugin_admin_opt *options; /* value options, ended by a row whose
                                name is NULL; NULL: none */
    const char *what;        /* its events' and field's name ("slot"):
                                <what>_drop_start, _dropped, _drop_failed */
    const char *process;     /* its process's name in logs and messages
                                ("slot-drop") */
    int timeout_s;           /* the process is killed after it; zxctl waits
                                15 s longer */
    /* In zxd, at once, before any process: 0 to go on, or -1 with the
     * refusal (the answer's "error") in err: a bad NAME, no such
     * connection, something a configured pipeline uses...  Reads conf and
     * req (the request, its options strings or absent) only; never blocks.
     * NULL: nothing to check. */
    int (*check)(const zx_conf *conf, const char *name, const struct json_t *req, char *err,
                 size_t errlen);
    /* In its own process (killed after timeout_s): do it, with conf the
     * running configuration.  Writes the answer's "result" (ZX_RETIRE_DONE:
     * one line per thing done, '\n' between) or "error" (ZX_RETIRE_FAILED
     * or ZX_RETIRE_KEPT) into msg, never a secret; may add more fields to
     * the object answer ("errors": more lines of strings; its own). */
    int (*run)(const zx_conf *conf, const char *name, const struct json_t *req, char *msg,
               size_t msglen, struct json_t *answer);
} zx_plugin_admin;

#define ZX_CF_OWN 0x10u   /* option row flag: `offset` (and n_offset, v_offset) are
                             into the plug-in's own struct, not zx_conf_pipeline */

/* The registry: made in workers/plugins.c from workers/plugins.def, the
   one list of plug-ins (one line each, like nginx's ngx_modules.c). */
extern const zx_plugin *const zx_plugins[];
extern const size_t zx_nplugins;
/* The plug-in of that role and name; NULL: none (or name NULL). */
const zx_plugin *zx_plugin_find(zx_plugin_role role, const char *name); /* NULL: none */
/* The plug-in of a pipeline whose zx_conf_pipeline.source is source: the
 * source plug-in of that name (a stream), or the plug-in of role
 * ZX_PLUGIN_SYNC when source is its name ("sync": a reverse sync).  NULL:
 * none (or source NULL).  What conf/, zxd and the workers use where "the
 * pipeline's plug-in" is meant; zx_plugin_find(ZX_PLUGIN_SOURCE...) where
 * only a value of `source:` is. */
const zx_plugin *zx_plugin_of_pipeline(const char *source);
/* The first plug-in of that role whose conn_kinds hold kind; NULL: none
 * (or kind NULL). */
const zx_plugin *zx_plugin_for_kind(zx_plugin_role role, const char *kind);
/* The connection kinds the plug-ins of that role take, each once, as a
 * person reads them ("postgres, mysql or sqlite") into buf (len bytes,
 * cut); returns buf. */
const char *zx_plugin_kinds(zx_plugin_role role, char *buf, size_t len);

/* Helpers zxd and the plug-ins share (conf/plugin_util.c). */
/* The admin command named command of the plug-ins (and, when owner is not
 * NULL, its plug-in into *owner); NULL: none (or command NULL). */
const zx_plugin_admin *zx_plugin_admin_find(const char *command, const zx_plugin **owner);
/* 1 when a and b are both not NULL and equal, else 0. */
int zx_str_same(const char *a, const char *b);
/* 1 when connections a and b (not NULL) reach the same database for sure:
 * the same one, or the same dsn but for its passwords (dsn_shown hides
 * only those, and the configuration refuses a dsn that does not parse),
 * so that a rotated password is no move; else 0. */
int zx_conf_same_place(const zx_conf_connection *a, const zx_conf_connection *b);

#endif
