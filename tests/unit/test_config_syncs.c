/*
 * test_config_syncs.c — unit tests of the configuration loader's reverse
 * syncs (direction: out).
 *
 * Covers: a whole valid file (authors, tokens, connections of every
 * destination kind, a sync of each destination), then each mistake an
 * operator makes, with its message; the destination plug-ins' own
 * sub-sections in the reference; where files destinations may write
 * (zx_conf_check_files_path: under <data_dir>/exports or
 * server.file_roots, not onto another sync's output).
 *
 * Temporary files go to a mkdtemp directory (config_testlib.h), removed
 * at the end.
 * It must never: depend on timing, or on files outside its temporary
 * directory and the source tree.
 */
#define ZX_CONF_INTERNAL        /* the section table, for test_syncs() */
#include "config_testlib.h"
#include "conf/config.h"
#include "conf/plugin.h"
#include "workers/destinations/files/files_opts.h" /* a destination's own options */
#include "workers/destinations/kafka/kafka_dest_opts.h"
#include "workers/syncs/sync_opts.h" /* a reverse sync's own options */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where files destinations may write (zx_conf_check_files_path): under
 * <data_dir>/exports or server.file_roots, and not onto another sync's
 * output; names that only look alike are fine. */
static void test_files_roots(void)
{
    zx_conf_errors e = {0};
    char buf[2048];
    static const struct {
        const char *a, *b;    /* two syncs' destination.files.path */
        const char *err;      /* NULL: accepted */
    } cases[] = {
        {"var/exports/orders.csv", "var/exports/orders-eu.csv", NULL},
        {"var/exports/orders.csv", "var/exports/orders.parquet", NULL},
        {"var/exports/orders.csv", "var/exports/orders-12.csv", "output of sync"},
        {"var/exports/orders.csv", "var/exports/orders.csv", "output of sync"},
        {"var/exports/d", "var/exports/d/a.csv", "output of sync"},     /* b in a's folder */
        {"var/exports/d", "var/exports/d/a-7.json", "output of sync"},
        {"var/exports/d", "var/exports/d/other.csv", NULL},
        {"var/exports/d", "var/exports/d", NULL},                     /* a.csv, b.csv */
        {"var/exports/x.csv", "var/exports/../y.csv", "outside the folders"},
        {"var/exports/x.csv", "/etc/y.csv", "server.file_roots"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(buf, sizeof(buf),
                 "authors:\n  alice: {tables: [t]}\npipelines:\n"
                 "  a: {direction: out, author: alice, query: SELECT 1, mode: replace,\n"
                 "      destination: {files: {path: \"%s\", format: csv}}}\n"
                 "  b: {direction: out, author: alice, query: SELECT 1, mode: replace,\n"
                 "      destination: {files: {path: \"%s\", format: csv}}}\n",
                 cases[i].a, cases[i].b);
        zx_conf *c = load(buf, 0, &e);
        if (cases[i].err) {
            CHECK(c == NULL && has_sub(&e, cases[i].err));
            if (c || !has_sub(&e, cases[i].err))
                fprintf(stderr, "  case %zu: %s / %s\n", i, cases[i].a, cases[i].b);
        } else {
            CHECK(c != NULL);
            if (!c) {
                fprintf(stderr, "  case %zu: %s / %s\n", i, cases[i].a, cases[i].b);
                dump(&e);
            }
        }
        zx_conf_free(c);
    }
    /* an added root */
    snprintf(buf, sizeof(buf),
             "server: {file_roots: [/tmp/zx-roots-a, out]}\n"
             "authors:\n  alice: {tables: [t]}\npipelines:\n"
             "  a: {direction: out, author: alice, query: SELECT 1, mode: replace,\n"
             "      destination: {files: {path: out/sub/x.csv, format: csv}}}\n");
    zx_conf *c = load(buf, 0, &e);
    CHECK(c != NULL && c->nfile_roots == 2 && c->file_roots[1][0] == '/');
    if (!c)
        dump(&e);
    zx_conf_free(c);
    zx_conf_errors_free(&e);
}

/* Reverse syncs: a whole valid file (authors, tokens, connections of
 * every destination kind, a sync of each destination), then each mistake
 * an operator makes, with its message. */
static void test_syncs(void)
{
    zx_conf_errors e = {0};
    char buf[4096];
    static const char head[] =
        "authors:\n  alice: {tables: [customers, orders], operators: [root]}\n"
        "connections:\n"
        "  crm: {kind: postgres, dsn: \"postgresql://crm:pw@127.0.0.1:5433/crm\"}\n"
        "  shop: {kind: mysql, dsn: \"mysql://zx:pw@127.0.0.1:3306/shop\"}\n"
        "  lite: {kind: sqlite, path: dest.db}\n"
        "  ro: {kind: sqlite, path: ro.db, read_only: true}\n"
        "api_tokens:\n"
        "  airflow: {token: \"0123456789abcdef0123\", role: orchestrator, syncs: [a]}\n"
        "  bot: {token: \"fedcba9876543210fedc\", role: agent}\n";
    snprintf(buf, sizeof(buf), "%spipelines:\n"
             "  a:\n    direction: out\n    author: alice\n    query: SELECT 1 AS id\n"
             "    destination: {connection: crm, table: public.customers}\n"
             "    mode: upsert\n    key: [id]\n    schedule: \"*/15 * * * *\"\n"
             "  b: {direction: out, author: alice, query: SELECT 1, mode: replace,\n"
             "      destination: {files: {path: var/exports/x, format: parquet}}}\n"
             "  c: {direction: out, author: alice, query: SELECT 1, mode: mirror, key: id,\n"
             "      destination: {connection: shop, table: t}}\n"
             "  web: {direction: stream, source: http, key: k123}\n", head);
    zx_conf *c = load(buf, 0, &e);
    CHECK(c != NULL);
    if (!c)
        dump(&e);
    if (c) {
        const zx_conf_pipeline *a = zx_conf_find(c, "a"), *b = zx_conf_find(c, "b");
        const zx_conf_pipeline *cc = zx_conf_find(c, "c"), *w = zx_conf_find(c, "web");
        const zx_sync_opts *ao = zx_sync_opts_of(a), *co = zx_sync_opts_of(cc);
        CHECK(ao && !strcmp(ao->author, "alice") && !strcmp(ao->query, "SELECT 1 AS id"));
        CHECK(ao && ao->schedule && !strcmp(ao->schedule, "*/15 * * * *"));
        CHECK(ao && ao->dest_connection && ao->dest_table && !zx_sync_opts_of(w));
        CHECK(a && zx_conf_is_sync(a) && !strcmp(a->source, "sync") && ao && ao->mode == 2);
        CHECK(a && a->auth && !strcmp(a->auth->name, "alice") && ao && ao->nkey_cols == 1);
        CHECK(a && a->dest_conn && !strcmp(a->dest_conn->kind, "postgres"));
        CHECK(a && a->dest_plugin == zx_plugin_find(ZX_PLUGIN_DESTINATION, "postgres"));
        CHECK(a && a->dest_own == NULL && ao && ao->batch_rows == 10000);
        const zx_files_opts *bf = zx_files_opts_of(b);
        CHECK(b && b->dest_plugin == zx_plugin_find(ZX_PLUGIN_DESTINATION, "files"));
        CHECK(bf && bf->path && bf->path[0] == '/' && strstr(bf->path, "exports/x"));
        CHECK(bf && !strcmp(bf->format, "parquet") && !strcmp(bf->compression, "zstd"));
        CHECK(co && co->mode == 3 && co->nkey_cols == 1 && !strcmp(co->key_cols[0], "id"));
        CHECK(co && !strcmp(co->dest_connection, "shop") && !strcmp(co->dest_table, "t"));
        CHECK(cc && cc->dest_conn && !strcmp(cc->dest_conn->dsn_shown,
                                             "mysql://zx:***@127.0.0.1:3306/shop"));
        CHECK(w && !zx_conf_is_sync(w) && HO(w)->key && !strcmp(HO(w)->key, "k123"));
        const zx_conf_connection *l = zx_conf_find_connection(c, "lite");
        CHECK(l && l->path && l->path[0] == '/' && !l->read_only);
        CHECK(zx_conf_find_connection(c, "ro")->read_only == 1);
        const zx_conf_apitoken *t = zx_conf_find_apitoken(c, "bot");
        CHECK(t && !strcmp(t->role, "agent") && t->nsyncs == 0);
        /* an agent's queue and approval timeout: their defaults */
        CHECK(t && t->max_waiting == 16 && t->approval_timeout_ms == 24u * 3600 * 1000);
        CHECK(c->http.api_auth_failures == 10 && c->http.api_auth_window_ms == 60000);
        CHECK(zx_conf_find_author(c, "alice")->noperators == 1);
        zx_conf_free(c);
    }
    /* a destination with a sub-section of its own has its section, known
     * to the loader and documented, without a line in conf/ */
    for (size_t i = 0; i < zx_nplugins; i++) {
        const zx_plugin *pg = zx_plugins[i];
        char path[128];
        size_t s;
        if (pg->role != ZX_PLUGIN_DESTINATION || !pg->section_doc)
            continue;
        snprintf(path, sizeof(path), "pipelines.<name>.destination.%s", pg->name);
        for (s = 0; s < zx_cf_nsecs() && strcmp(zx_cf_sec(s)->path, path); s++)
            ;
        CHECK(s < zx_cf_nsecs() && zx_cf_sec(s)->help == pg->section_doc);
        CHECK(zx_cf_section_dest(path) == pg && zx_cf_target(path) == ZX_CF_PIPELINE);
    }
    /* a destination's own options (files: dest_own) are compared on reload */
    {
        static const char *const cmp[] = {"zstd", "zstd", "snappy"};
        zx_conf *cs[3];
        for (size_t i = 0; i < 3; i++) {
            snprintf(buf, sizeof(buf), "%spipelines:\n"
                     "  a: {direction: out, author: alice, query: SELECT 1, mode: replace,\n"
                     "      destination: {files: {path: var/exports/x, format: csv, "
                     "compression: %s}}}\n", head, cmp[i]);
            cs[i] = load(buf, 0, &e);
            CHECK(cs[i] != NULL);
            if (!cs[i])
                dump(&e);
        }
        if (cs[0] && cs[1] && cs[2]) {
            CHECK(zx_conf_pipeline_same(&cs[0]->pipelines[0], &cs[1]->pipelines[0]));
            CHECK(!zx_conf_pipeline_same(&cs[0]->pipelines[0], &cs[2]->pipelines[0]));
            CHECK(!strcmp(zx_files_opts_of(&cs[2]->pipelines[0])->compression, "snappy"));
        }
        for (size_t i = 0; i < 3; i++)
            zx_conf_free(cs[i]);
    }
    static const struct {
        const char *pipe, *err;
    } bad[] = {
        {"direction: out, author: alice, query: SELECT 1, mode: upsert, "
         "destination: {connection: lite, table: t}", "mode upsert needs key"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, "
         "destination: {files: {format: csv}}", "destination.files: missing required field 'path'"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, "
         "destination: {table: t}", "destination.table needs destination.connection"},
        {"direction: out, author: bob, query: SELECT 1, mode: replace, "
         "destination: {connection: lite, table: t}", "unknown author 'bob'"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, "
         "destination: {connection: ro, table: t}", "connection ro is read_only"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, "
         "destination: {connection: nope, table: t}", "unknown connection 'nope'"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, "
         "destination: {connection: lite}", "missing required field 'table'"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, "
         "destination: {connection: lite, table: t, files: {path: x, format: csv}}",
         "not both"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, "
         "destination: {files: {path: x}}", "missing required field 'format'"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, "
         "destination: {files: {path: x, format: xml}}", "format"},
        {"direction: out, author: alice, query: SELECT 1, mode: sometimes, "
         "destination: {connection: lite, table: t}", "mode"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, schedule: \"61 * * * *\", "
         "destination: {connection: lite, table: t}", "61 is out of range 0-59"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, schedule: \"0 0 30 2 *\", "
         "destination: {connection: lite, table: t}", "never fires"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, source: kafka, "
         "destination: {connection: lite, table: t}", "takes no source"},
        {"direction: out, author: alice, mode: replace, "
         "destination: {connection: lite, table: t}", "missing required field 'query'"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace", "destination"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, table: x, "
         "destination: {connection: lite, table: t}", "table applies only to source"},
        {"direction: stream, source: http, key: k, query: SELECT 1",
         "query applies only to a reverse sync"},
        {"direction: out, author: alice, query: SELECT 1, mode: replace, key: [id, id], "
         "destination: {connection: lite, table: t}", "listed twice"},
        {"direction: out, author: alice, query: SELECT 1 AS id, mode: mirror, key: [id], "
         "cursor: updated_at, destination: {connection: lite, table: t}",
         "cursor cannot be used with mode: mirror"},
        {"direction: out, author: alice, query: SELECT 1 AS id, mode: replace, "
         "cursor: updated_at, destination: {connection: lite, table: t}",
         "cursor needs mode: upsert"},
        {"direction: out, author: alice, query: SELECT 1 AS id, mode: append, key: [id], "
         "cursor: updated_at, destination: {connection: lite, table: t}",
         "cursor needs mode: upsert"},
        {"direction: out, author: alice, query: SELECT 1 AS id, mode: upsert, key: [id], "
         "cursor: \"\", destination: {connection: lite, table: t}", "cursor must not be empty"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(buf, sizeof(buf), "%spipelines:\n  s: {%s}\n", head, bad[i].pipe);
        c = load(buf, 0, &e);
        CHECK(c == NULL);
        zx_conf_free(c);
        EXPECT_SUB(bad[i].err);
    }
    /* tokens and connections */
    c = load("api_tokens:\n  t: {token: short, role: agent}\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_SUB("at least 16");
    c = load("api_tokens:\n  t: {token: \"0123456789abcdef0\", role: agent, syncs: [x]}\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_SUB("'x' is not a reverse sync");
    c = load("api_tokens:\n  t: {token: \"0123456789abcdef0\", role: boss}\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_SUB("role");
    c = load("api_tokens:\n  t: {token: \"0123456789abcdef0\", role: agent, "
             "approval_timeout: 90s, max_waiting: 2}\n", 0, &e);
    CHECK(c && c->apitokens[0].approval_timeout_ms == 90000 && c->apitokens[0].max_waiting == 2);
    zx_conf_free(c);
    c = load("api_tokens:\n  t: {token: \"0123456789abcdef0\", role: agent, "
             "approval_timeout: 0s}\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_SUB("approval_timeout");
    c = load("api_tokens:\n  t: {token: \"0123456789abcdef0\", role: agent, "
             "max_waiting: 0}\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_SUB("max_waiting");
    c = load("server:\n  http: {api_auth_failures: 0}\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_SUB("api_auth_failures");
    c = load("connections:\n  m: {kind: mysql, dsn: \"host=db1\"}\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_SUB("kind mysql needs a dsn of the form mysql://");
    c = load("connections:\n  p: {kind: postgres, dsn: \"mysql://a@b/c\"}\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_SUB("not mysql://");
    c = load("connections:\n  k: {kind: kafka, brokers: [\"a:1\"], read_only: true}\n", 0, &e);
    CHECK(c == NULL);
    zx_conf_free(c);
    zx_conf_errors_free(&e);
}

/* destination: {kafka: ...}: its connection is a kind: kafka one */
static void test_kafka_dest(void)
{
    zx_conf_errors e = {0};
    char buf[2048];
    static const char head[] =
        "authors:\n  alice: {tables: [customers]}\n"
        "connections:\n"
        "  bus: {kind: kafka, brokers: [\"k1:9092\"], security: sasl_ssl,\n"
        "        sasl: {mechanism: PLAIN, username: $ConnectionString, password: pw}}\n"
        "  lite: {kind: sqlite, path: dest.db}\n";
    snprintf(buf, sizeof(buf), "%spipelines:\n"
             "  k: {direction: out, author: alice, query: SELECT 1 AS id, mode: mirror, key: [id],\n"
             "      destination: {kafka: {connection: bus, topic: crm.customers, "
             "format: debezium}}}\n", head);
    zx_conf *c = load(buf, 0, &e);
    CHECK(c != NULL);
    if (c) {
        const zx_conf_pipeline *p = zx_conf_find(c, "k");
        const zx_kafka_dest_opts *o = p ? p->dest_own : NULL;
        CHECK(p && p->dest_conn && !strcmp(p->dest_conn->name, "bus"));
        CHECK(p && p->dest_plugin && !strcmp(p->dest_plugin->name, "kafka") &&
              p->dest_plugin->role == ZX_PLUGIN_DESTINATION);
        CHECK(o && o->format == ZX_KDEST_DEBEZIUM && o->ntopic == 1 &&
              !strcmp(o->topic[0], "crm.customers") && o->batch_rows == 1000 &&
              o->linger_ms == 20 && o->idempotence == 1 && o->timeout_ms == 30000);
    }
    zx_conf_free(c);
    static const struct { const char *dest, *mode, *err; } bad[] = {
        {"{kafka: {connection: lite, topic: t}}", "upsert", "connection lite is of kind sqlite; "
         "it needs kind kafka"},
        {"{kafka: {connection: nope, topic: t}}", "upsert", "unknown connection 'nope'"},
        {"{kafka: {connection: bus}}", "upsert", "missing required field 'topic'"},
        {"{kafka: {topic: t}}", "upsert", "missing required field 'connection'"},
        {"{kafka: {connection: bus, topic: t}}", "replace", "cannot be replaced"},
        {"{kafka: {connection: bus, topic: t, key: [region]}}", "mirror", "not in the sync's key"},
        {"{kafka: {connection: bus, topic: t, format: xml}}", "upsert", "format"},
        {"{kafka: {connection: bus, topic: t, format: avro}}", "upsert",
         "format: avro needs schema_registry"},
        {"{kafka: {connection: bus, topic: t, schema_registry: \"http://r:8081\"}}", "upsert",
         "schema_registry goes with format: avro"},
        {"{kafka: {connection: bus, topic: t, format: avro, schema_registry: r:8081}}",
         "upsert", "an http:// or https:// URL"},
        {"{kafka: {connection: bus, topic: t, timeout: 10ms}}", "upsert", "timeout"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(buf, sizeof(buf), "%spipelines:\n  k: {direction: out, author: alice, "
                 "query: SELECT 1 AS id, mode: %s, key: [id], destination: %s}\n", head,
                 bad[i].mode, bad[i].dest);
        c = load(buf, 0, &e);
        CHECK(c == NULL);
        zx_conf_free(c);
        EXPECT_SUB(bad[i].err);
    }
    zx_conf_errors_free(&e);
}

int main(int argc, char **argv)
{
    if (cfg_test_init(argc, argv) != 0)
        return 2;
    test_syncs();
    test_files_roots();
    test_kafka_dest();
    return cfg_test_finish("test_config_syncs");
}
