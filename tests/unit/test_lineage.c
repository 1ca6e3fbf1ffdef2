/*
 * test_lineage.c — the lineage graph of a configuration (conf/lineage.h):
 * the objects each plug-in names (kafka topics, a postgres slot and its
 * tables, the push endpoint, a forward's topic, an index, a file path, a
 * table destination shown by the fallback), the workspace tables with
 * __changes and __rejects, which syncs read which tables (their query),
 * one node per object shared by two pipelines, the parts around a node,
 * and the four renderers, escaping included.
 */
#include "config_testlib.h"
#include "conf/config.h"
#include "conf/lineage.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *yaml =
    "server:\n  data_dir: ./var\n  control_socket: zxd.sock\n"
    "connections:\n"
    "  k: {kind: kafka, brokers: [\"127.0.0.1:9094\"]}\n"
    "  src: {kind: postgres, dsn: \"postgresql://zx@127.0.0.1:5432/shop\"}\n"
    "  search: {kind: opensearch, url: \"http://127.0.0.1:9200\"}\n"
    "  lite: {kind: sqlite, path: dest.db}\n"
    "pipelines:\n"
    "  clicks:\n    direction: stream\n    source: kafka\n    connection: k\n"
    "    topics: [clicks, views]\n"
    "  shop:\n    direction: stream\n    source: postgres\n    connection: src\n"
    "    tables: [orders, public.customers]\n    table_prefix: shop_\n    history: true\n"
    "  events:\n    direction: stream\n    source: http\n    key: abc\n    table: Events\n"
    "    forward: {kafka: {connection: k, topic: events_out}}\n"
    "  latest:\n    direction: stream\n    source: http\n    key: abc\n"
    "    mode: latest\n    key_columns: [id]\n    history: true\n"
    "  again:\n    direction: stream\n    source: kafka\n    connection: k\n"
    "    topic: events_out\n"
    "  clicks_files:\n    direction: out\n    author: analyst\n"
    "    query: SELECT * FROM clicks -- not shop_orders\n"
    "    destination: {files: {path: var/exports/clicks.csv, format: csv}}\n"
    "    mode: replace\n"
    "  history_search:\n    direction: out\n    author: analyst\n"
    "    query: SELECT * FROM shop_orders__changes JOIN events USING (id)\n"
    "    destination: {opensearch: {connection: search, index: order-history}}\n"
    "    mode: append\n"
    "  to_lite:\n    direction: out\n    author: analyst\n"
    "    query: SELECT * FROM \"shop_customers\", other_t\n"
    "    destination: {connection: lite, table: customers_copy}\n"
    "    mode: replace\n"
    "authors:\n"
    "  analyst:\n    tables: [clicks, shop_orders__changes, shop_customers, events, other_t]\n";

/* Index of the node with id, or -1. */
static long node(const zx_lineage *g, const char *id)
{
    for (size_t i = 0; i < g->nnodes; i++)
        if (!strcmp(g->nodes[i].id, id))
            return (long)i;
    return -1;
}

/* 1 when g has the edge from → to (by id). */
static int edge(const zx_lineage *g, const char *from, const char *to)
{
    long f = node(g, from), t = node(g, to);
    for (size_t i = 0; f >= 0 && t >= 0 && i < g->nedges; i++)
        if (g->edges[i].from == (size_t)f && g->edges[i].to == (size_t)t)
            return 1;
    return 0;
}

static void test_graph(const zx_lineage *g)
{
    /* kafka: each topic into the stream, the stream into its tables */
    CHECK(edge(g, "kafka.topic:k/clicks", "stream:clicks"));
    CHECK(edge(g, "kafka.topic:k/views", "stream:clicks"));
    CHECK(edge(g, "stream:clicks", "table:clicks"));
    CHECK(edge(g, "stream:clicks", "table:clicks__rejects"));
    CHECK(g->nodes[node(g, "kafka.topic:k/clicks")].role == ZX_LN_UPSTREAM);
    CHECK_STR(g->nodes[node(g, "kafka.topic:k/clicks")].connection, "k");
    /* postgres: tables into the slot, the slot into the stream; mirrors,
     * history, rejects */
    CHECK(edge(g, "postgres.table:src/public.orders", "postgres.slot:src/zx_shop"));
    CHECK(edge(g, "postgres.table:src/public.customers", "postgres.slot:src/zx_shop"));
    CHECK(edge(g, "postgres.slot:src/zx_shop", "stream:shop"));
    CHECK(!edge(g, "postgres.table:src/public.orders", "stream:shop"));
    CHECK(edge(g, "stream:shop", "table:shop_orders"));
    CHECK(edge(g, "stream:shop", "table:shop_orders__changes"));
    CHECK(edge(g, "stream:shop", "table:shop_customers__rejects"));
    CHECK_STR(g->nodes[node(g, "table:shop_orders__changes")].kind, "changes");
    /* http: the endpoint; the forward's topic is the one `again` reads */
    CHECK(edge(g, "http.push:/api/streams/events/push", "stream:events"));
    CHECK(edge(g, "stream:events", "table:Events"));
    CHECK(!edge(g, "stream:events", "table:Events__changes"));
    CHECK(edge(g, "stream:latest", "table:latest__changes"));   /* a mirror's history */
    CHECK(edge(g, "stream:latest", "table:latest__rejects"));
    CHECK(edge(g, "stream:events", "kafka.topic:k/events_out"));
    CHECK(edge(g, "kafka.topic:k/events_out", "stream:again"));
    CHECK(g->nodes[node(g, "kafka.topic:k/events_out")].role == ZX_LN_DOWNSTREAM);
    /* syncs read the tables their query names (comments do not count;
     * table names compare without case, a quoted name exactly) */
    CHECK(edge(g, "table:clicks", "sync:clicks_files"));
    CHECK(!edge(g, "table:shop_orders", "sync:clicks_files"));
    CHECK(edge(g, "table:shop_orders__changes", "sync:history_search"));
    CHECK(edge(g, "table:Events", "sync:history_search"));
    CHECK(!edge(g, "table:shop_orders", "sync:history_search"));
    CHECK(edge(g, "table:shop_customers", "sync:to_lite"));
    /* an author's table no stream writes is a node too */
    CHECK(edge(g, "table:other_t", "sync:to_lite"));
    /* destinations: a plug-in's own (index), dest_where's path (files),
     * and a table destination by its connection */
    CHECK(edge(g, "sync:history_search", "opensearch.index:search/order-history"));
    char id[512];
    snprintf(id, sizeof(id), "files:%s/var/exports/clicks.csv", tmpdir);
    CHECK(edge(g, "sync:clicks_files", id));
    CHECK(edge(g, "sync:to_lite", "sqlite.table:lite/customers_copy"));
    /* no node twice */
    for (size_t i = 0; i < g->nnodes; i++)
        for (size_t j = i + 1; j < g->nnodes; j++)
            CHECK(strcmp(g->nodes[i].id, g->nodes[j].id) != 0);
}

static void test_around(const zx_lineage *g)
{
    CHECK(zx_lineage_find(g, "events") == (size_t)node(g, "stream:events"));
    CHECK(zx_lineage_find(g, "events__REJECTS") == (size_t)node(g, "table:Events__rejects"));
    CHECK(zx_lineage_find(g, "kafka.topic:k/views") == (size_t)node(g, "kafka.topic:k/views"));
    CHECK(zx_lineage_find(g, "nothing") == (size_t)-1);

    zx_lineage *d = zx_lineage_around(g, zx_lineage_find(g, "events"), ZX_LN_DOWN);
    CHECK(d != NULL);
    if (d) {
        CHECK(node(d, "kafka.topic:k/events_out") >= 0);
        CHECK(edge(d, "kafka.topic:k/events_out", "stream:again"));
        CHECK(edge(d, "table:Events", "sync:history_search"));
        CHECK(node(d, "http.push:/api/streams/events/push") < 0);
        CHECK(node(d, "stream:shop") < 0);   /* upstream of history_search */
        CHECK(node(d, "stream:clicks") < 0);
    }
    zx_lineage_free(d);

    zx_lineage *u = zx_lineage_around(g, zx_lineage_find(g, "history_search"), ZX_LN_UP);
    CHECK(u != NULL);
    if (u) {
        CHECK(edge(u, "postgres.table:src/public.orders", "postgres.slot:src/zx_shop"));
        CHECK(edge(u, "http.push:/api/streams/events/push", "stream:events"));
        CHECK(node(u, "opensearch.index:search/order-history") < 0);
        CHECK(node(u, "table:shop_customers") < 0);   /* shop's other mirror */
    }
    zx_lineage_free(u);

    zx_lineage *a = zx_lineage_around(g, zx_lineage_find(g, "clicks"), ZX_LN_AROUND);
    CHECK(a != NULL);
    if (a) {
        CHECK(a->nnodes == 7);   /* 2 topics, stream, table, rejects, sync, file */
        CHECK(node(a, "stream:events") < 0);
    }
    zx_lineage_free(a);
    CHECK(zx_lineage_around(g, g->nnodes, ZX_LN_AROUND) == NULL);
}

static void test_render(const zx_lineage *g)
{
    CHECK(zx_lineage_render(g, "svg") == NULL);
    CHECK(!zx_lineage_format_ok(NULL) && zx_lineage_format_ok("mermaid"));

    char *t = zx_lineage_render(g, "text");
    CHECK(t && strstr(t, "stream clicks (kafka)\n  from kafka.topic clicks (connection k)\n"));
    CHECK(t && strstr(t, "sync to_lite\n"));
    free(t);

    char *j = zx_lineage_render(g, "json");
    json_error_t je;
    json_t *r = j ? json_loads(j, 0, &je) : NULL;
    CHECK(r != NULL);
    CHECK(json_array_size(json_object_get(r, "nodes")) == g->nnodes);
    CHECK(json_array_size(json_object_get(r, "edges")) == g->nedges);
    json_t *n0 = json_array_get(json_object_get(r, "nodes"), 0);
    CHECK_STR(json_string_value(json_object_get(n0, "id")), g->nodes[0].id);
    CHECK_STR(json_string_value(json_object_get(n0, "role")), "stream");
    json_decref(r);
    free(j);

    char *d = zx_lineage_render(g, "dot");
    CHECK(d && !strncmp(d, "digraph lineage {\n", 18));
    CHECK(d && strstr(d, "  n0 -> n"));
    free(d);

    char *m = zx_lineage_render(g, "mermaid");
    CHECK(m && !strncmp(m, "flowchart LR\n", 13));
    CHECK(m && strstr(m, " --> "));
    free(m);

    /* hostile names stay inside their labels */
    zx_lineage_node nodes[2] = {
        {.id = "x:1", .role = ZX_LN_UPSTREAM, .kind = "k", .name = "a\"b\\c<d>#e\nf",
         .connection = "c\""},
        {.id = "stream:s", .role = ZX_LN_STREAM, .kind = "http", .name = "s"},
    };
    zx_lineage_edge edges[1] = {{0, 1}};
    zx_lineage h = {.nodes = nodes, .nnodes = 2, .edges = edges, .nedges = 1};
    d = zx_lineage_render(&h, "dot");
    CHECK(d && strstr(d, "label=\"k\\na\\\"b\\\\c<d>#e f\\n(c\\\")\"]"));
    free(d);
    m = zx_lineage_render(&h, "mermaid");
    CHECK(m && strstr(m, "n0([\"k a#quot;b\\c#lt;d#gt;#35;e f (c#quot;)\"])\n"));
    free(m);
    j = zx_lineage_render(&h, "json");
    r = j ? json_loads(j, 0, &je) : NULL;
    CHECK_STR(json_string_value(json_object_get(
                  json_array_get(json_object_get(r, "nodes"), 0), "name")), "a\"b\\c<d>#e\nf");
    json_decref(r);
    free(j);
}

/* A sync's last run from the history: hostile records are refused, an
 * older run never replaces a newer one, renderers show it. */
static void test_runs(zx_lineage *g)
{
    static const char *const bad[] = {
        "not json", "[1]", "{\"id\":\"12\",\"state\":\"succeeded\"}",
        "{\"id\":\"x1\",\"state\":\"failed\",\"ended_at\":\"t\"}",
        "{\"id\":\"123456789012345678901\",\"state\":\"failed\",\"ended_at\":\"t\"}",
        "{\"id\":12,\"state\":\"failed\",\"ended_at\":\"t\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(zx_lineage_set_run(g, "clicks_files", bad[i], strlen(bad[i])) == 1);
    const char *r5 = "{\"id\":\"5\",\"state\":\"succeeded\",\"ended_at\":"
                     "\"2026-12-03T10:00:00Z\",\"rows_read\":7,\"rows_sent\":7,\"bytes\":9}";
    const char *r4 = "{\"id\":\"4\",\"state\":\"failed\",\"ended_at\":\"t\"}";
    CHECK(zx_lineage_set_run(g, "nosuch", r5, strlen(r5)) == 1);
    CHECK(zx_lineage_set_run(g, "clicks_files", r5, strlen(r5)) == 0);
    CHECK(zx_lineage_set_run(g, "clicks_files", r4, strlen(r4)) == 1);
    size_t at = zx_lineage_find(g, "clicks_files");
    CHECK(at != (size_t)-1);
    if (at == (size_t)-1)
        return;
    CHECK_STR(g->nodes[at].last_run, "{\"id\":\"5\",\"state\":\"succeeded\",\"ended_at\":"
                                     "\"2026-12-03T10:00:00Z\",\"rows_read\":7,\"rows_sent\":7}");
    char *t = zx_lineage_render(g, "text");
    CHECK(t && strstr(t, "sync clicks_files\n  last run succeeded at 2026-12-03T10:00:00Z, "
                         "7 rows sent\n"));
    free(t);
    zx_lineage *part = zx_lineage_around(g, at, ZX_LN_UP);
    char *d = part ? zx_lineage_render(part, "dot") : NULL;
    CHECK(d && strstr(d, "\\nlast run succeeded at 2026-12-03T10:00:00Z, 7 rows sent\"]"));
    free(d);
    zx_lineage_free(part);
}

int main(int argc, char **argv)
{
    if (cfg_test_init(argc, argv) != 0)
        return 2;
    zx_conf_errors e = {0};
    zx_conf *c = load(yaml, ZX_CONF_SKIP_SECRETS, &e);
    CHECK(c != NULL);
    if (!c)
        dump(&e);
    zx_lineage *g = c ? zx_lineage_build(c) : NULL;
    CHECK(g != NULL);
    if (g) {
        test_graph(g);
        test_around(g);
        test_render(g);
        test_runs(g);
    }
    zx_lineage *empty = zx_lineage_build(NULL);
    CHECK(empty && empty->nnodes == 0);
    char *t = empty ? zx_lineage_render(empty, "text") : NULL;
    CHECK_STR(t, "no pipelines\n");
    free(t);
    zx_lineage_free(empty);
    zx_lineage_free(g);
    zx_conf_free(c);
    zx_conf_errors_free(&e);
    return cfg_test_finish("test_lineage");
}
