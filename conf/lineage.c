/*
 * lineage.c — the lineage graph of a configuration (lineage.h): nodes and
 * edges, the plug-ins' callbacks, finding a node and the part of the
 * graph around it.  The renderers are lineage_render.c.
 *
 * It must never: open anything, print, or name a plug-in (what a plug-in
 * reads or writes comes from its zx_plugin).
 */
#include "conf/lineage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/plugin.h"
#include "workers/syncs/sync_opts.h"
#include "workers/syncs/sync_watch.h"

#define LN_NONE ((size_t)-1)
#define LN_MAX_EXT 4096          /* objects one call of a plug-in may name */

/* One call of a plug-in's lineage: the pipeline's node, which side, and
 * the objects named so far (their nodes) with the links among them. */
struct zx_lineage_out {
    zx_lineage *g;
    size_t pipe;             /* the pipeline's node */
    int down;                /* 0: a source (objects flow into pipe); 1: a
                                destination (pipe flows into them) */
    size_t *ext;             /* handle → node */
    size_t next;
    unsigned char *linked;   /* handle: 1 when it flows into (up) or is fed
                                by (down) another object of the call */
    int failed;              /* out of memory */
};

static char *ln_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

void zx_lineage_free(zx_lineage *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nnodes; i++) {
        free(g->nodes[i].id);
        free(g->nodes[i].kind);
        free(g->nodes[i].name);
        free(g->nodes[i].connection);
        free(g->nodes[i].last_run);
    }
    free(g->nodes);
    free(g->edges);
    free(g);
}

const char *zx_lineage_role_name(zx_lineage_role r)
{
    switch (r) {
    case ZX_LN_UPSTREAM: return "upstream";
    case ZX_LN_STREAM: return "stream";
    case ZX_LN_TABLE: return "table";
    case ZX_LN_SYNC: return "sync";
    case ZX_LN_DOWNSTREAM: return "downstream";
    }
    return "?";
}

/* The node whose id is id (tables: without case); LN_NONE: none. */
static size_t ln_by_id(const zx_lineage *g, const char *id)
{
    int table = !strncmp(id, "table:", 6);
    for (size_t i = 0; i < g->nnodes; i++)
        if (table ? !strcasecmp(g->nodes[i].id, id) : !strcmp(g->nodes[i].id, id))
            return i;
    return LN_NONE;
}

/* The node of that id, added when new (role, kind, name, connection
 * copied).  LN_NONE: out of memory. */
static size_t ln_node(zx_lineage *g, const char *id, zx_lineage_role role, const char *kind,
                      const char *name, const char *conn)
{
    size_t i = ln_by_id(g, id);
    if (i != LN_NONE)
        return i;
    zx_lineage_node *n = realloc(g->nodes, (g->nnodes + 1) * sizeof(*n));
    if (!n)
        return LN_NONE;
    g->nodes = n;
    n = &g->nodes[g->nnodes];
    *n = (zx_lineage_node){.id = strdup(id), .role = role, .kind = strdup(kind),
                           .name = strdup(name), .connection = ln_strdup(conn)};
    if (!n->id || !n->kind || !n->name || (conn && !n->connection)) {
        free(n->id);
        free(n->kind);
        free(n->name);
        free(n->connection);
        return LN_NONE;
    }
    return g->nnodes++;
}

/* A node whose id is "<prefix>:<name>".  LN_NONE: out of memory. */
static size_t ln_named(zx_lineage *g, const char *prefix, zx_lineage_role role,
                       const char *kind, const char *name, const char *conn)
{
    size_t len = strlen(prefix) + strlen(name) + 2;
    char *id = malloc(len);
    if (!id)
        return LN_NONE;
    snprintf(id, len, "%s:%s", prefix, name);
    size_t i = ln_node(g, id, role, kind, name, conn);
    free(id);
    return i;
}

/* Edge from → to, unless there is one.  0, or -1: out of memory. */
static int ln_edge(zx_lineage *g, size_t from, size_t to)
{
    if (from == LN_NONE || to == LN_NONE)
        return -1;
    for (size_t i = 0; i < g->nedges; i++)
        if (g->edges[i].from == from && g->edges[i].to == to)
            return 0;
    zx_lineage_edge *e = realloc(g->edges, (g->nedges + 1) * sizeof(*e));
    if (!e)
        return -1;
    g->edges = e;
    g->edges[g->nedges++] = (zx_lineage_edge){from, to};
    return 0;
}

int zx_lineage_ext(zx_lineage_out *o, const char *kind, const char *conn, const char *name)
{
    if (!o || !kind || !name || o->failed || o->next >= LN_MAX_EXT)
        return -1;
    size_t len = strlen(kind) + (conn ? strlen(conn) + 1 : 0) + strlen(name) + 2;
    char *id = malloc(len);
    if (!id) {
        o->failed = 1;
        return -1;
    }
    snprintf(id, len, "%s:%s%s%s", kind, conn ? conn : "", conn ? "/" : "", name);
    size_t n = ln_node(o->g, id, o->down ? ZX_LN_DOWNSTREAM : ZX_LN_UPSTREAM, kind, name,
                       conn);
    free(id);
    if (n == LN_NONE) {
        o->failed = 1;
        return -1;
    }
    o->ext[o->next] = n;
    o->linked[o->next] = 0;
    return (int)o->next++;
}

void zx_lineage_ext_into(zx_lineage_out *o, int from, int to)
{
    if (!o || o->failed || from < 0 || to < 0 || (size_t)from >= o->next ||
        (size_t)to >= o->next)
        return;
    if (ln_edge(o->g, o->ext[from], o->ext[to]) < 0) {
        o->failed = 1;
        return;
    }
    o->linked[o->down ? to : from] = 1;
}

/* What a plug-in without a lineage callback is shown as. */
static void ln_fallback(const zx_plugin *pl, const zx_conf_pipeline *p, zx_lineage_out *o)
{
    char kind[128];
    if (!o->down) {
        zx_lineage_ext(o, pl->name, p->connection, p->name);
        return;
    }
    if (pl->dest_where) {
        zx_dest_where w = {0};
        pl->dest_where(p, &w);
        if (w.target[0]) {
            zx_lineage_ext(o, pl->name, w.connection ? w.connection : w.catalog, w.target);
            return;
        }
        if (w.path) {
            zx_lineage_ext(o, pl->name, w.connection, w.path);
            return;
        }
    }
    const zx_sync_opts *so = zx_sync_opts_of(p);
    snprintf(kind, sizeof(kind), "%s.table", pl->name);
    if (so && so->dest_table) {
        zx_lineage_ext(o, kind, so->dest_connection, so->dest_table);
        return;
    }
    zx_lineage_ext(o, pl->name, NULL, p->name);
}

/* Run plug-in pl's lineage for pipeline node `pipe` of p, on its side,
 * and link what it named to the pipeline.  0, or -1: out of memory. */
static int ln_plugin(const zx_conf *c, zx_lineage *g, size_t pipe, const zx_plugin *pl,
                     const zx_conf_pipeline *p, int down)
{
    zx_lineage_out o = {.g = g, .pipe = pipe, .down = down};
    o.ext = malloc(LN_MAX_EXT * sizeof(*o.ext));
    o.linked = malloc(LN_MAX_EXT);
    int rc = -1;
    if (!o.ext || !o.linked)
        goto done;
    if (pl->lineage)
        pl->lineage(c, p, &o);
    else
        ln_fallback(pl, p, &o);
    if (o.failed)
        goto done;
    for (size_t i = 0; i < o.next; i++)
        if (!o.linked[i] && ln_edge(g, down ? pipe : o.ext[i], down ? o.ext[i] : pipe) < 0)
            goto done;
    rc = 0;
done:
    free(o.ext);
    free(o.linked);
    return rc;
}

/* The table node `name` of kind (table, changes, rejects), written by
 * the pipeline node pipe (LN_NONE: none).  0, or -1. */
static int ln_table(zx_lineage *g, size_t pipe, const char *name, const char *suffix,
                    const char *kind)
{
    char t[256];
    snprintf(t, sizeof(t), "%s%s", name, suffix);
    size_t n = ln_named(g, "table", ZX_LN_TABLE, kind, t, NULL);
    if (n == LN_NONE)
        return -1;
    return pipe == LN_NONE ? 0 : ln_edge(g, pipe, n);
}

/* A stream: its upstream objects, its tables, its forward.  0, or -1. */
static int ln_stream(const zx_conf *c, zx_lineage *g, const zx_conf_pipeline *p)
{
    size_t s = ln_named(g, "stream", ZX_LN_STREAM, p->source, p->name, p->connection);
    if (s == LN_NONE || (p->plugin && ln_plugin(c, g, s, p->plugin, p, 0) < 0))
        return -1;
    /* a `table` keeps history when it is a mirror (format debezium, mode
     * latest: the loader allows history only then) */
    if (p->table && (ln_table(g, s, p->table, "", "table") < 0 ||
                     (p->history && ln_table(g, s, p->table, "__changes", "changes") < 0) ||
                     ln_table(g, s, p->table, "__rejects", "rejects") < 0))
        return -1;
    for (size_t i = 0; i < p->nmirrors; i++)
        if (ln_table(g, s, p->mirrors[i], "", "table") < 0 ||
            (p->history && ln_table(g, s, p->mirrors[i], "__changes", "changes") < 0) ||
            ln_table(g, s, p->mirrors[i], "__rejects", "rejects") < 0)
            return -1;
    if (p->forward && p->dest_plugin && ln_plugin(c, g, s, p->dest_plugin, p, 1) < 0)
        return -1;
    return 0;
}

/* The last part of a dotted name: `public.orders` → `orders`. */
static const char *ln_last(const char *t)
{
    const char *d = strrchr(t, '.');
    return d ? d + 1 : t;
}

/* A reverse sync: the tables it reads (the streams' tables and its
 * author's, those its query names), its destination.  0, or -1. */
static int ln_sync(const zx_conf *c, zx_lineage *g, const zx_conf_pipeline *p)
{
    size_t s = ln_named(g, "sync", ZX_LN_SYNC, p->source, p->name, NULL);
    if (s == LN_NONE)
        return -1;
    size_t ntab = g->nnodes;
    for (size_t i = 0; i < ntab; i++)
        if (g->nodes[i].role == ZX_LN_TABLE && zx_sync_watches(c, p, g->nodes[i].name) &&
            ln_edge(g, i, s) < 0)
            return -1;
    const zx_sync_opts *so = zx_sync_opts_of(p);
    const zx_conf_author *a = p->auth ? p->auth
                              : so ? zx_conf_find_author(c, so->author) : NULL;
    for (size_t i = 0; a && i < a->ntables; i++) {
        const char *t = ln_last(a->tables[i]);
        if (!zx_sync_watches(c, p, t))
            continue;
        size_t n = ln_named(g, "table", ZX_LN_TABLE, "table", t, NULL);
        if (n == LN_NONE || ln_edge(g, n, s) < 0)
            return -1;
    }
    if (p->dest_plugin && ln_plugin(c, g, s, p->dest_plugin, p, 1) < 0)
        return -1;
    return 0;
}

zx_lineage *zx_lineage_build(const zx_conf *c)
{
    zx_lineage *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    /* streams first, so that every table a stream writes is known when
     * the syncs are matched against them */
    for (size_t i = 0; c && i < c->npipelines; i++) {
        const zx_conf_pipeline *p = &c->pipelines[i];
        if (!zx_conf_is_sync(p) && ln_stream(c, g, p) < 0)
            goto fail;
    }
    for (size_t i = 0; c && i < c->npipelines; i++) {
        const zx_conf_pipeline *p = &c->pipelines[i];
        if (zx_conf_is_sync(p) && ln_sync(c, g, p) < 0)
            goto fail;
    }
    return g;
fail:
    zx_lineage_free(g);
    return NULL;
}

size_t zx_lineage_find(const zx_lineage *g, const char *name)
{
    if (!g || !name)
        return LN_NONE;
    for (size_t i = 0; i < g->nnodes; i++)
        if ((g->nodes[i].role == ZX_LN_STREAM || g->nodes[i].role == ZX_LN_SYNC) &&
            !strcmp(g->nodes[i].name, name))
            return i;
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].role == ZX_LN_TABLE && !strcasecmp(g->nodes[i].name, name))
            return i;
    for (size_t i = 0; i < g->nnodes; i++)
        if (!strcmp(g->nodes[i].id, name) || !strcmp(g->nodes[i].name, name))
            return i;
    return LN_NONE;
}

/* Copy node n of g into h. 0, or -1. */
static int ln_copy_node(zx_lineage *h, const zx_lineage_node *n)
{
    if (ln_node(h, n->id, n->role, n->kind, n->name, n->connection) == LN_NONE)
        return -1;
    if (n->last_run && !(h->nodes[h->nnodes - 1].last_run = strdup(n->last_run)))
        return -1;
    return 0;
}

zx_lineage *zx_lineage_around(const zx_lineage *g, size_t at, int dir)
{
    if (!g || at >= g->nnodes)
        return NULL;
    unsigned char *in = calloc(g->nnodes, 1);
    size_t *map = malloc(g->nnodes * sizeof(*map));
    zx_lineage *h = calloc(1, sizeof(*h));
    if (!in || !map || !h)
        goto fail;
    in[at] = 1;
    /* grow the set until no edge adds a node (graphs are small) */
    for (int grew = 1; grew;) {
        grew = 0;
        for (size_t i = 0; i < g->nedges; i++) {
            size_t f = g->edges[i].from, t = g->edges[i].to;
            if (dir != ZX_LN_UP && in[f] && !in[t]) {
                in[t] = 1;
                grew = 1;
            }
            if (dir != ZX_LN_DOWN && in[t] && !in[f]) {
                in[f] = 1;
                grew = 1;
            }
        }
    }
    for (size_t i = 0; i < g->nnodes; i++) {
        map[i] = LN_NONE;
        if (in[i]) {
            if (ln_copy_node(h, &g->nodes[i]) < 0)
                goto fail;
            map[i] = h->nnodes - 1;
        }
    }
    for (size_t i = 0; i < g->nedges; i++) {
        size_t f = map[g->edges[i].from], t = map[g->edges[i].to];
        if (f != LN_NONE && t != LN_NONE && ln_edge(h, f, t) < 0)
            goto fail;
    }
    free(in);
    free(map);
    return h;
fail:
    free(in);
    free(map);
    zx_lineage_free(h);
    return NULL;
}
