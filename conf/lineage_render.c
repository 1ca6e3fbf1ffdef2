/*
 * lineage_render.c — a lineage graph (lineage.h) as text for a person,
 * JSON, Graphviz DOT or a Mermaid flowchart.
 *
 * DOT and Mermaid name nodes n0, n1... (their index) and carry the rest
 * in quoted labels, escaped so that no configured name (a path, a regex,
 * a URL) can end a label or start a statement.
 *
 * It must never: print (it returns strings), or read anything but g.
 */
#include "conf/lineage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

int zx_lineage_format_ok(const char *f)
{
    return f && (!strcmp(f, "text") || !strcmp(f, "json") || !strcmp(f, "dot") ||
                 !strcmp(f, "mermaid"));
}

/* "stream orders (kafka)", "table orders", "kafka.topic orders (connection k)". */
static void rn_label(FILE *f, const zx_lineage_node *n)
{
    switch (n->role) {
    case ZX_LN_STREAM:
        fprintf(f, "stream %s (%s)", n->name, n->kind);
        break;
    case ZX_LN_SYNC:
        fprintf(f, "sync %s", n->name);
        break;
    case ZX_LN_TABLE:
        fprintf(f, "table %s", n->name);
        break;
    default:
        fprintf(f, "%s %s", n->kind, n->name);
        if (n->connection)
            fprintf(f, " (connection %s)", n->connection);
        break;
    }
}

/* A sync's last run in a few words: "succeeded at 2026-12-03T10:00:00Z,
 * 1000 rows sent" into buf; "" when it has none. */
static const char *rn_run(const zx_lineage_node *n, char *buf, size_t cap)
{
    buf[0] = '\0';
    json_error_t je;
    json_t *r = n->last_run ? json_loads(n->last_run, 0, &je) : NULL;
    const char *state = json_string_value(json_object_get(r, "state"));
    const char *ended = json_string_value(json_object_get(r, "ended_at"));
    json_t *sent = json_object_get(r, "rows_sent");
    if (state && ended) {
        int k = snprintf(buf, cap, "%s at %s", state, ended);
        if (k > 0 && (size_t)k < cap && json_is_integer(sent))
            snprintf(buf + k, cap - (size_t)k, ", %lld rows sent",
                     (long long)json_integer_value(sent));
    }
    json_decref(r);
    return buf;
}

static int rn_outside(const zx_lineage_node *n)
{
    return n->role == ZX_LN_UPSTREAM || n->role == ZX_LN_DOWNSTREAM;
}

/* The block of node i: its name, then "from X" and "to Y" lines. */
static void rn_text_block(FILE *f, const zx_lineage *g, size_t i)
{
    char run[200];
    rn_label(f, &g->nodes[i]);
    fputc('\n', f);
    if (*rn_run(&g->nodes[i], run, sizeof(run)))
        fprintf(f, "  last run %s\n", run);
    for (size_t e = 0; e < g->nedges; e++)
        if (g->edges[e].to == i) {
            fputs("  from ", f);
            rn_label(f, &g->nodes[g->edges[e].from]);
            fputc('\n', f);
        }
    for (size_t e = 0; e < g->nedges; e++)
        if (g->edges[e].from == i) {
            fputs("  to   ", f);
            rn_label(f, &g->nodes[g->edges[e].to]);
            fputc('\n', f);
        }
}

/* One block per pipeline; then one per object outside zx fed by another
 * (a slot fed by its tables). */
static void rn_text(FILE *f, const zx_lineage *g)
{
    int any = 0;
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].role == ZX_LN_STREAM || g->nodes[i].role == ZX_LN_SYNC) {
            rn_text_block(f, g, i);
            any = 1;
        }
    for (size_t i = 0; i < g->nnodes; i++) {
        int fed = 0;
        for (size_t e = 0; e < g->nedges && !fed; e++)
            fed = g->edges[e].to == i && rn_outside(&g->nodes[i]) &&
                  rn_outside(&g->nodes[g->edges[e].from]);
        if (fed) {
            rn_text_block(f, g, i);
            any = 1;
        }
    }
    if (!any)
        fputs("no pipelines\n", f);
}

static char *rn_json(const zx_lineage *g)
{
    json_t *root = json_object(), *nodes = json_array(), *edges = json_array();
    char *out = NULL;
    if (!root || !nodes || !edges) {
        json_decref(nodes);
        json_decref(edges);
        goto done;
    }
    json_object_set_new(root, "nodes", nodes);
    json_object_set_new(root, "edges", edges);
    for (size_t i = 0; i < g->nnodes; i++) {
        const zx_lineage_node *n = &g->nodes[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "id", n->id, "role",
                              zx_lineage_role_name(n->role), "kind", n->kind, "name", n->name);
        if (!o)
            goto done;   /* a name not valid UTF-8 is refused by the loader */
        if (n->connection)
            json_object_set_new(o, "connection", json_string(n->connection));
        json_error_t je;
        json_t *run = n->last_run ? json_loads(n->last_run, 0, &je) : NULL;
        if (json_is_object(run))
            json_object_set_new(o, "last_run", run);
        else
            json_decref(run);
        json_array_append_new(nodes, o);
    }
    for (size_t i = 0; i < g->nedges; i++) {
        json_t *o = json_pack("{s:s, s:s}", "from", g->nodes[g->edges[i].from].id, "to",
                              g->nodes[g->edges[i].to].id);
        if (!o)
            goto done;
        json_array_append_new(edges, o);
    }
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s) {
        size_t len = strlen(s);
        out = malloc(len + 2);
        if (out) {
            memcpy(out, s, len);
            memcpy(out + len, "\n", 2);
        }
        free(s);
    }
done:
    json_decref(root);
    return out;
}

/* s inside a DOT "string": \ and " escaped, control bytes as spaces. */
static void rn_dot_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
    }
}

static void rn_dot(FILE *f, const zx_lineage *g)
{
    fputs("digraph lineage {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=10];\n",
          f);
    for (size_t i = 0; i < g->nnodes; i++) {
        const zx_lineage_node *n = &g->nodes[i];
        const char *shape = n->role == ZX_LN_TABLE ? "cylinder"
                            : rn_outside(n) ? "ellipse" : "box";
        fprintf(f, "  n%zu [shape=%s, label=\"", i, shape);
        rn_dot_str(f, n->role == ZX_LN_TABLE ? "table" : n->role == ZX_LN_STREAM ? "stream"
                      : n->role == ZX_LN_SYNC ? "sync" : n->kind);
        fputs("\\n", f);
        rn_dot_str(f, n->name);
        if (n->connection && rn_outside(n)) {
            fputs("\\n(", f);
            rn_dot_str(f, n->connection);
            fputc(')', f);
        }
        char run[200];
        if (*rn_run(n, run, sizeof(run))) {
            fputs("\\nlast run ", f);
            rn_dot_str(f, run);
        }
        fputs("\"];\n", f);
    }
    for (size_t i = 0; i < g->nedges; i++)
        fprintf(f, "  n%zu -> n%zu;\n", g->edges[i].from, g->edges[i].to);
    fputs("}\n", f);
}

/* s inside a Mermaid "label": " and the bytes that might open markup as
 * entity codes, control bytes as spaces. */
static void rn_mm_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '"': fputs("#quot;", f); break;
        case '<': fputs("#lt;", f); break;
        case '>': fputs("#gt;", f); break;
        case '#': fputs("#35;", f); break;
        default: fputc((unsigned char)*s < 0x20 ? ' ' : *s, f); break;
        }
    }
}

static void rn_mermaid(FILE *f, const zx_lineage *g)
{
    fputs("flowchart LR\n", f);
    for (size_t i = 0; i < g->nnodes; i++) {
        const zx_lineage_node *n = &g->nodes[i];
        const char *open = n->role == ZX_LN_TABLE ? "[(\"" : rn_outside(n) ? "([\"" : "[\"";
        const char *close = n->role == ZX_LN_TABLE ? "\")]" : rn_outside(n) ? "\"])" : "\"]";
        fprintf(f, "  n%zu%s", i, open);
        rn_mm_str(f, n->role == ZX_LN_TABLE ? "table" : n->role == ZX_LN_STREAM ? "stream"
                     : n->role == ZX_LN_SYNC ? "sync" : n->kind);
        fputs(" ", f);
        rn_mm_str(f, n->name);
        if (n->connection && rn_outside(n)) {
            fputs(" (", f);
            rn_mm_str(f, n->connection);
            fputc(')', f);
        }
        char run[200];
        if (*rn_run(n, run, sizeof(run))) {
            fputs(", last run ", f);
            rn_mm_str(f, run);
        }
        fprintf(f, "%s\n", close);
    }
    for (size_t i = 0; i < g->nedges; i++)
        fprintf(f, "  n%zu --> n%zu\n", g->edges[i].from, g->edges[i].to);
}

char *zx_lineage_render(const zx_lineage *g, const char *format)
{
    if (!g || !zx_lineage_format_ok(format))
        return NULL;
    if (!strcmp(format, "json"))
        return rn_json(g);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    if (!strcmp(format, "text"))
        rn_text(f, g);
    else if (!strcmp(format, "dot"))
        rn_dot(f, g);
    else
        rn_mermaid(f, g);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
