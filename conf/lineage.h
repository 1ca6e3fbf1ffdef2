/*
 * lineage.h — where the data of one configuration comes from and where it
 * goes, as a graph built from the zx_conf alone:
 *
 *   upstream object → stream → workspace table → reverse sync → destination
 *                           ↘ (forward:) topic
 *
 * Nodes: each stream and sync pipeline; each workspace table a stream
 * writes (its `table`, or its mirrors, with `<t>__changes` when it keeps
 * history, and `<t>__rejects`) or a sync reads (its author's tables that
 * its query names: workers/syncs/sync_watch.h); and the objects outside zx
 * that its plug-ins read or write.  Those last come from the plug-ins
 * themselves (zx_plugin.lineage, conf/plugin.h): a source says what it
 * reads (a topic, a slot and its tables, an endpoint), a destination what
 * it writes for a sync or a stream's `forward:` (a topic, an index, a
 * file path), through zx_lineage_ext below; nothing here names a plug-in.
 * A plug-in without `lineage` is shown by its dest_where (conf/plugin.h:
 * target, path, connection), by its sync's destination.{connection,
 * table}, or, for a source, as "<its name>" reading the pipeline.
 *
 * An object outside zx is one node per (kind, connection, name): a topic a
 * sync writes and a stream reads on the same connection is one node, so
 * the graph runs through it.
 *
 * Pure (but zx_lineage_runs_from_store, which reads the run history):
 * reads the configuration, opens nothing, never prints a secret
 * (connections are shown by name; paths, topics, URLs as configured).
 */
#ifndef ZX_CONF_LINEAGE_H
#define ZX_CONF_LINEAGE_H

#include <stddef.h>

#include "conf/config.h"

typedef enum {
    ZX_LN_UPSTREAM = 1,   /* outside zx, read by a stream */
    ZX_LN_STREAM = 2,     /* a stream pipeline */
    ZX_LN_TABLE = 3,      /* a workspace table */
    ZX_LN_SYNC = 4,       /* a reverse sync (direction: out) */
    ZX_LN_DOWNSTREAM = 5, /* outside zx, written by a sync or a forward */
} zx_lineage_role;

typedef struct zx_lineage_node {
    char *id;                /* unique in the graph: "stream:orders",
                                "sync:x", "table:orders" (tables compare
                                without case, as SQLite names do),
                                "<kind>:<connection>/<name>" or
                                "<kind>:<name>" outside zx */
    zx_lineage_role role;
    char *kind;              /* stream, sync: its plug-in's name ("kafka",
                                "sync"); table: "table", "changes" or
                                "rejects"; outside: what its plug-in says
                                ("kafka.topic", "postgres.slot", "files") */
    char *name;              /* the pipeline's, table's or object's name */
    char *connection;        /* the connection it is reached through; NULL */
    char *last_run;          /* a sync's last ended run, from the run
                                history (zx_lineage_set_run): a compact
                                JSON object {"id", "state", "ended_at",
                                "rows_read", "rows_sent"}; NULL */
} zx_lineage_node;

typedef struct zx_lineage_edge {
    size_t from, to;         /* indexes into nodes: data flows from → to */
} zx_lineage_edge;

typedef struct zx_lineage {
    zx_lineage_node *nodes;  /* in the order met: file order of pipelines */
    size_t nnodes;
    zx_lineage_edge *edges;  /* no edge twice */
    size_t nedges;
} zx_lineage;

/* The graph of configuration c (a loaded one: plug-ins resolved).  Returns
 * a new graph owned by the caller (zx_lineage_free), or NULL when out of
 * memory.  Never fails otherwise. */
zx_lineage *zx_lineage_build(const zx_conf *c);

/* Free g and everything it holds.  NULL ok. */
void zx_lineage_free(zx_lineage *g);

/* The node name designates: a pipeline (its stream or sync node), else a
 * workspace table (without case), else a node whose id or name is name.
 * Returns its index, or (size_t)-1 when none. */
size_t zx_lineage_find(const zx_lineage *g, const char *name);

/* The run history: record (len bytes of a run record as `zxctl runs` and
 * the store hold it: "id", "state", "ended_at", "rows_read",
 * "rows_sent"...) becomes the last run of sync node `sync`, unless that
 * node already holds a run with a larger id.  Returns 0 when kept, 1 when
 * not (no such sync, a record that is not an ended run's: not JSON, no
 * "ended_at", an id that is not digits), -1 when out of memory. */
int zx_lineage_set_run(zx_lineage *g, const char *sync, const char *record, size_t len);

/* The run history kept in the store of data_dir (opened read-only; a
 * missing store is no history): each sync node of g gets its last ended
 * run (zx_lineage_set_run).  Returns the runs read, or -1 when out of
 * memory.  The only function here that opens anything. */
long zx_lineage_runs_from_store(zx_lineage *g, const char *data_dir);

/* Directions for zx_lineage_around. */
enum {
    ZX_LN_AROUND = 0,        /* everything connected to the node, either way */
    ZX_LN_UP = 1,            /* the node and what flows into it, transitively */
    ZX_LN_DOWN = 2,          /* the node and what it flows into, transitively */
};

/* A new graph (owned by the caller) holding only the nodes of g reached
 * from node `at` in direction dir, and the edges of g between them, in
 * g's order.  NULL when out of memory or at is not a node of g. */
zx_lineage *zx_lineage_around(const zx_lineage *g, size_t at, int dir);

/* "upstream", "stream", "table", "sync", "downstream". */
const char *zx_lineage_role_name(zx_lineage_role r);

/* 1 when format is one zx_lineage_render knows: "text", "json", "dot",
 * "mermaid"; else 0. */
int zx_lineage_format_ok(const char *format);

/* g rendered in format (lineage_render.c):
 *   text     one block per pipeline: its inputs and its outputs (a
 *            sync: and its last run);
 *   json     {"nodes": [{"id", "role", "kind", "name", "connection"?,
 *             "last_run"?}],
 *             "edges": [{"from": id, "to": id}]};
 *   dot      a Graphviz digraph (dot -Tsvg draws it);
 *   mermaid  a Mermaid "flowchart LR".
 * Every text form ends with '\n'.  Returns a malloc'ed NUL-terminated
 * string (the caller frees it), or NULL when format is unknown or out of
 * memory. */
char *zx_lineage_render(const zx_lineage *g, const char *format);

/* ---- what a plug-in's `lineage` callback calls (conf/plugin.h) ------- */

/* The builder's side of one call of a plug-in's lineage: opaque. */
typedef struct zx_lineage_out zx_lineage_out;

/* An object outside zx that the plug-in reads (called as a source) or
 * writes (called as a destination) for the pipeline: kind (a dotted name,
 * "<plug-in>.<what>": "kafka.topic"), the connection's name it goes
 * through (NULL: none) and its name (a topic, a path, a URL; not NULL).
 * Returns a handle for zx_lineage_ext_into (>= 0), or -1 when out of
 * memory (the build then fails) or kind or name is NULL.  Unless it flows
 * into another object of the same call (zx_lineage_ext_into), a source's
 * object flows into the pipeline, and the pipeline into a destination's
 * object. */
int zx_lineage_ext(zx_lineage_out *o, const char *kind, const char *connection,
                   const char *name);

/* Object `from` flows into object `to` (both handles of this call): a
 * source's table into its slot, the slot into the pipeline. */
void zx_lineage_ext_into(zx_lineage_out *o, int from, int to);

#endif
