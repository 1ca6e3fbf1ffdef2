/*
 * test_config_pg.c — unit tests of the configuration loader's postgres
 * sections: `workspace.postgres` and `source: postgres`.
 *
 * Covers: `workspace.postgres` (the fields, defaults, its rules, the dsn's
 * password in no message nor in pg_dsn_shown); connections of kind
 * postgres and `source: postgres` (defaults, derived slot and
 * publication, mirror names, every refusal with its message, the duplicate
 * mirror error, one slot per database); zx_conf_pipeline_same and
 * zx_conf_connection_same on postgres pipelines and connections.
 *
 * Temporary files go to a mkdtemp directory (config_testlib.h), removed
 * at the end.
 * It must never: depend on timing, or on files outside its temporary
 * directory and the source tree.
 */
#include "config_testlib.h"
#include "conf/config.h"
#include "common/segment.h"     /* ZX_SEG_MAX_BYTES, for the ring sizes */
#include "workers/sources/postgres/postgres_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* workspace.postgres: the fields, defaults, its rules, and the dsn's
 * password in no message nor in pg_dsn_shown. */
static void test_postgres(void)
{
    zx_conf_errors e = {0};
    zx_conf *c;
    size_t i;

    c = load("workspace:\n  postgres:\n"
             "    dsn: \"postgresql://zx:SECRETVALUE@db1:5432/analytics\"\n", 0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        CHECK(c->ws_kind == ZX_WS_KIND_POSTGRES);
        CHECK_STR(c->pg_dsn, "postgresql://zx:SECRETVALUE@db1:5432/analytics");
        CHECK_STR(c->pg_dsn_shown, "postgresql://zx:***@db1:5432/analytics");
        CHECK_STR(c->pg_schema, "public");
        CHECK_STR(c->pg_application_name, "zxd");
        CHECK(c->commit_interval_ms == 20);
        CHECK(c->pg_lease_ms == 15000);   /* workspace.postgres.lease */
    }
    zx_conf_free(c);

    /* the lease of a shared workspace: 2 s to 10 min */
    c = load("workspace:\n  postgres:\n    dsn: host=db1\n    shared: true\n"
             "    lease: 4s\n", 0, &e);
    CHECK(c != NULL);
    dump(&e);
    CHECK(c && c->pg_shared && c->pg_lease_ms == 4000);
    zx_conf_free(c);
    c = load("workspace:\n  postgres:\n    dsn: host=db1\n    lease: 1s\n", 0, &e);
    CHECK(c == NULL && e.n == 1 && has_sub(&e, "lease must be between 2s and 10m"));
    zx_conf_free(c);
    c = load("workspace:\n  postgres:\n    dsn: host=db1\n    lease: 900s\n", 0, &e);
    CHECK(c == NULL && e.n == 1 && has_sub(&e, "got '900s'"));
    zx_conf_free(c);

    /* every option; key=value; references inside the dsn (two of them, a
     * file and an env) */
    setenv("ZX_T_PGUSER", "zx_writer", 1);
    setenv("ZX_T_PGPASS", "SECRETVALUE", 1);
    write_file("pg.pass", "SECRET VALUE\n");
    c = load("workspace:\n  commit_interval: 50ms\n  postgres:\n"
             "    dsn: \"host=db1 user=${env:ZX_T_PGUSER} password='${file:pg.pass}'\"\n"
             "    schema: Analytics_2024\n"
             "    application_name: zxd-eu1\n", 0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        CHECK(c->ws_kind == ZX_WS_KIND_POSTGRES);
        CHECK_STR(c->pg_dsn, "host=db1 user=zx_writer password='SECRET VALUE'");
        CHECK_STR(c->pg_dsn_shown, "host=db1 user=zx_writer password=***");
        CHECK(c->pg_dsn_shown && !strstr(c->pg_dsn_shown, "SECRET"));
        CHECK(c->pg_dsn_shown && !strstr(c->pg_dsn_shown, "VALUE"));
        CHECK_STR(c->pg_schema, "Analytics_2024");
        CHECK_STR(c->pg_application_name, "zxd-eu1");
        CHECK(c->commit_interval_ms == 50);
    }
    zx_conf_free(c);
    c = load("workspace:\n  postgres:\n"
             "    dsn: postgresql://${env:ZX_T_PGUSER}:${env:ZX_T_PGPASS}@db1/a?sslmode=require\n",
             0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        CHECK_STR(c->pg_dsn, "postgresql://zx_writer:SECRETVALUE@db1/a?sslmode=require");
        CHECK_STR(c->pg_dsn_shown, "postgresql://zx_writer:***@db1/a?sslmode=require");
    }
    zx_conf_free(c);

    /* zxctl: the dsn's references are not resolved (an unset variable is no
     * error); pg_dsn NULL, pg_dsn_shown the dsn as written, password
     * hidden. */
    unsetenv("ZX_T_UNSET");
    c = load("workspace:\n  postgres:\n"
             "    dsn: postgresql://zx:${env:ZX_T_UNSET}@db1/a\n",
             ZX_CONF_SKIP_SECRETS, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        CHECK(c->pg_dsn == NULL);
        CHECK_STR(c->pg_dsn_shown, "postgresql://zx:***@db1/a");
    }
    zx_conf_free(c);
    c = load("workspace:\n  postgres:\n"
             "    dsn: postgresql://zx:${env:ZX_T_UNSET}@db1/a\n", 0, &e);
    EXPECT_ERR(&e, 3, 10, "environment variable ZX_T_UNSET is not set");
    CHECK(e.n == 1);

    /* both sections */
    c = load("workspace:\n  sqlite: {path: ws.db}\n  postgres:\n"
             "    dsn: postgresql://zx:SECRETVALUE@db1/a\n", 0, &e);
    EXPECT_ERR(&e, 4, 5, "workspace: workspace.sqlite (line 2) and "
               "workspace.postgres are both given; write one of them");
    CHECK(e.n == 1);
    CHECK(!any_contains(&e, "SECRETVALUE"));
    /* missing dsn, an empty section, unknown key */
    c = load("workspace:\n  postgres:\n    schema: s\n", 0, &e);
    EXPECT_ERR(&e, 3, 5, "workspace.postgres: missing required field 'dsn'");
    CHECK(e.n == 1);
    c = load("workspace:\n  postgres:\n", 0, &e);
    EXPECT_ERR(&e, 2, 12, "workspace.postgres: missing required field 'dsn'");
    CHECK(e.n == 1);
    c = load("workspace:\n  postgres: {dns: \"host=db1\"}\n", 0, &e);
    EXPECT_ERR(&e, 2, 14, "unknown key 'dns' in workspace.postgres; allowed: "
               "dsn, schema, application_name");
    EXPECT_ERR(&e, 2, 13, "workspace.postgres: missing required field 'dsn'");
    CHECK(e.n == 2);
    c = load("workspace:\n  postgres:\n    dsn:\n", 0, &e);
    EXPECT_ERR(&e, 3, 9, "dsn has no value");

    /* bad schemas: empty, 64 bytes, a control character, a NUL */
    {
        static const char *const bad[] = {
            "\"\"", "s234567890123456789012345678901234567890123456789012345678901234",
            "\"a\\tb\"", "\"pub\\0lic\"",
        };
        char yaml[300];
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            snprintf(yaml, sizeof(yaml), "workspace:\n  postgres:\n"
                     "    dsn: host=db1\n    schema: %s\n", bad[i]);
            c = load(yaml, 0, &e);
            CHECK(c == NULL && e.n == 1);
            EXPECT_ERR(&e, 4, 13, i == 3 ? "schema contains a NUL byte"
                                         : "is not a valid name: 1 to 63 bytes, "
                                           "without control characters");
        }
        c = load("workspace:\n  postgres:\n    dsn: host=db1\n"
                 "    schema: \"s23456789012345678901234567890123456789012345678"
                 "901234567890123 é\"\n", 0, &e);
        CHECK(c == NULL);   /* 65 bytes: é is two */
        c = load("workspace:\n  postgres:\n    dsn: host=db1\n"
                 "    schema: \"My Schema-é\"\n", 0, &e);
        CHECK(c != NULL);
        if (c)
            CHECK_STR(c->pg_schema, "My Schema-é");
        zx_conf_free(c);
    }

    /* bad dsns: the message shows the dsn as written, password hidden */
    c = load("workspace:\n  postgres:\n"
             "    dsn: \"host=db1 password='SECRETVALUE\"\n", 0, &e);
    EXPECT_ERR(&e, 3, 10, "dsn: a quoted value is not closed, got 'host=db1 "
               "password=***'");
    CHECK(!any_contains(&e, "SECRETVALUE"));
    c = load("workspace:\n  postgres:\n"
             "    dsn: \"PostgreSQL://zx:SECRETVALUE@db1/a\"\n", 0, &e);
    EXPECT_ERR(&e, 3, 10, "in lower case");
    EXPECT_ERR(&e, 3, 10, "got 'PostgreSQL://zx:***@db1/a'");
    CHECK(!any_contains(&e, "SECRETVALUE"));
    c = load("workspace:\n  postgres:\n"
             "    dsn: \"host=db1\\npassword=SECRETVALUE\"\n", 0, &e);
    EXPECT_ERR(&e, 3, 10, "dsn must be text without control characters");
    CHECK(!any_contains(&e, "SECRETVALUE"));
    c = load("workspace:\n  postgres:\n"
             "    dsn: \"host=db1 password=${env:ZX_T_PGPASS} ${oops}\"\n", 0, &e);
    EXPECT_ERR(&e, 3, 10, "the '${' at byte 38 of the value does not start");
    CHECK(!any_contains(&e, "SECRETVALUE"));
    /* a value is put in as it is: a password ending in \ inside quotes
     * escapes the closing quote */
    setenv("ZX_T_PGBAD", "SECRETVALUE\\", 1);
    c = load("workspace:\n  postgres:\n"
             "    dsn: \"host=db1 password='${env:ZX_T_PGBAD}'\"\n", 0, &e);
    EXPECT_ERR(&e, 3, 10, "dsn: a quoted value is not closed, got the value of "
               "'host=db1 password=***'");
    CHECK(!any_contains(&e, "SECRETVALUE"));
    c = load("workspace:\n  postgres:\n    dsn: \"\"\n", 0, &e);
    EXPECT_ERR(&e, 3, 10, "dsn must not be empty");
    c = load("workspace:\n  postgres:\n    dsn: \"  \"\n", 0, &e);
    EXPECT_ERR(&e, 3, 10, "dsn: it is empty or only spaces, got '  '");
    c = load("workspace:\n  postgres:\n    dsn: db1\n", 0, &e);
    EXPECT_ERR(&e, 3, 10, "dsn: expected key=value pairs (host=db1 "
               "dbname=analytics) or a postgresql:// URI, got '***'");
    c = load("workspace:\n  postgres:\n    dsn: host=db1\n"
             "    application_name: \"a\\x01\"\n", 0, &e);
    EXPECT_ERR(&e, 4, 23, "application_name must be text without control characters");

    /* the example's commented postgres block, uncommented in place of its
     * sqlite one, loads */
    {
        char path[4200], *text, *out, *line, *save = NULL;
        size_t len = 0;
        int block = 0;
        FILE *m;
        snprintf(path, sizeof(path), "%s/conf/zx.example.yaml", srcroot);
        text = read_all(path);
        CHECK(text != NULL);
        if (text) {
            m = open_memstream(&out, &len);
            for (line = strtok_r(text, "\n", &save); line;
                 line = strtok_r(NULL, "\n", &save)) {
                if (!strcmp(line, "workspace:") || !strcmp(line, "  sqlite:") ||
                    !strncmp(line, "    path:", 9))
                    continue;
                if (!strcmp(line, "# workspace:"))
                    block = 1;
                else if (strncmp(line, "#   ", 4))
                    block = 0;
                if (block && strncmp(line, "#     #", 7))
                    fprintf(m, "%s\n", line + 2);
            }
            fclose(m);
            setenv("PG_PASSWORD", "SECRETVALUE", 1);
            c = load(out, 0, &e);
            CHECK(c != NULL);
            dump(&e);
            if (c) {
                CHECK(c->ws_kind == ZX_WS_KIND_POSTGRES);
                CHECK_STR(c->pg_dsn_shown, "postgresql://zx:***@db1:5432/"
                          "analytics?sslmode=verify-full");
                CHECK_STR(c->pg_schema, "public");
                CHECK_STR(c->pg_application_name, "zxd");
            }
            zx_conf_free(c);
            unsetenv("PG_PASSWORD");
            free(out);
            free(text);
        }
    }
    unlink(tpath("pg.pass"));
    zx_conf_errors_free(&e);
}

/* ---- postgres change data capture (issue 8: configuration) ------------- */

static const char pg_yaml[] =
    "connections:\n"
    "  shop:\n"                                                    /* 2 */
    "    kind: postgres\n"
    "    dsn: \"postgresql://zx:${env:ZX_T_PGCDC_PW}@db1:5432/shop\"\n"
    "pipelines:\n"
    "  shop-cdc:\n"                                                /* 6 */
    "    direction: stream\n"
    "    source: postgres\n"
    "    connection: shop\n"
    "    tables: [orders, sales.Customers]\n"                      /* 10 */
    "  audit:\n"                                                   /* 11 */
    "    direction: stream\n"
    "    source: postgres\n"
    "    connection: shop\n"
    "    tables: [orders]\n"
    "    table_prefix: audit_\n"
    "    initial_copy: false\n"
    "    history: true\n"
    "    slot: audit_slot\n"
    "    publication: \"Audit Pub\"\n"                             /* 20 */
    "  web:\n"
    "    direction: stream\n"
    "    source: http\n"
    "    key: k\n";

static void test_pg_cdc(void)
{
    zx_conf_errors e = {0};
    const zx_conf_connection *cn;
    const zx_conf_pipeline *p, *a, *w;
    const zx_postgres_opts *po, *ao;
    zx_conf *c;
    char name[80], want[80];

    setenv("ZX_T_PGCDC_PW", "SECRETVALUE", 1);
    c = load(pg_yaml, 0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (!c)
        goto out;
    cn = zx_conf_find_connection(c, "shop");
    CHECK(cn != NULL);
    if (cn) {
        CHECK_STR(cn->kind, "postgres");
        CHECK_STR(cn->dsn, "postgresql://zx:SECRETVALUE@db1:5432/shop");
        CHECK_STR(cn->dsn_shown, "postgresql://zx:***@db1:5432/shop");
        /* the fields of kind kafka: none, not even security's default */
        CHECK(cn->security == NULL && cn->nbrokers == 0 && cn->brokers == NULL &&
              cn->brokers_csv == NULL && cn->nprops == 0);
    }
    p = zx_conf_find(c, "shop-cdc");
    a = zx_conf_find(c, "audit");
    w = zx_conf_find(c, "web");
    CHECK(p && a && w);
    if (!p || !a || !w)
        goto out;
    /* defaults and derived names */
    CHECK_STR(p->source, "postgres");
    CHECK(p->conn == cn);
    CHECK_STR(p->connection, "shop");
    po = zx_postgres_opts_of(p);
    CHECK(zx_postgres_is(p) && po->ntables == 2 && p->nmirrors == 2);
    if (po->ntables == 2 && p->nmirrors == 2 && p->mirrors && p->mirror_of) {
        CHECK_STR(po->tables[0], "public.orders");
        CHECK_STR(po->tables[1], "sales.Customers");
        CHECK_STR(p->mirrors[0], "orders");
        CHECK_STR(p->mirrors[1], "Customers");
        CHECK_STR(p->mirror_of[0], "public.orders");
        CHECK_STR(p->mirror_of[1], "sales.Customers");
    }
    CHECK(p->mirrors != NULL);
    CHECK(p->table == NULL);
    CHECK(po->table_prefix == NULL);
    CHECK(po->initial_copy == 1 && p->own && p->history == 0);
    CHECK_STR(po->slot, "zx_shop_cdc");
    CHECK_STR(po->publication, "zx_shop_cdc");
    CHECK(p->metadata == 0 && zx_http_opts_of(p) == NULL);
    CHECK(p->in_ring_size == 0);
    CHECK(p->shm_size == ZX_SEG_MAX_BYTES(0, p->ring_size));
    CHECK(p->line == 6 && p->column == 3);
    /* everything written */
    ao = zx_postgres_opts_of(a);
    CHECK(ao->ntables == 1 && a->nmirrors == 1 && a->mirrors);
    if (ao->ntables == 1 && a->nmirrors == 1 && a->mirrors) {
        CHECK_STR(ao->tables[0], "public.orders");
        CHECK_STR(a->mirrors[0], "audit_orders");
    }
    CHECK_STR(ao->table_prefix, "audit_");
    CHECK(ao->initial_copy == 0 && a->history == 1);
    CHECK_STR(ao->slot, "audit_slot");
    CHECK_STR(ao->publication, "Audit Pub");
    CHECK(a->table == NULL);
    /* the other sources have none of it */
    CHECK(!zx_postgres_is(w) && zx_postgres_opts_of(w)->tables == NULL);
    CHECK(w->nmirrors == 0 && w->mirrors == NULL && w->mirror_of == NULL);
    CHECK(zx_postgres_opts_of(w)->slot == NULL && zx_postgres_opts_of(w)->publication == NULL);
    CHECK_STR(w->table, "web");
    zx_conf_free(c);

    /* zxctl: the dsn's reference is not resolved; shown as written */
    unsetenv("ZX_T_PGCDC_PW");
    c = load(pg_yaml, ZX_CONF_SKIP_SECRETS, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        CHECK(c->connections[0].dsn == NULL);
        CHECK_STR(c->connections[0].dsn_shown, "postgresql://zx:***@db1:5432/shop");
    }
    zx_conf_free(c);
    c = load(pg_yaml, 0, &e);
    EXPECT_ERR(&e, 4, 10, "environment variable ZX_T_PGCDC_PW is not set");
    CHECK(e.n == 1);
    setenv("ZX_T_PGCDC_PW", "SECRETVALUE", 1);

    /* Derived names: '-' as '_', cut to 63 bytes; a key=value dsn. */
    snprintf(name, sizeof(name), "a-%s", "bcdefghijklmnopqrstuvwxyzbcdefghijklmnopqrstuvwxyzbcdefghijkl");
    CHECK(strlen(name) == 63);
    {
        char buf[1024];
        snprintf(buf, sizeof(buf), "connections:\n  db: {kind: postgres, dsn: \"host=db1 "
                 "dbname=shop user=zx password='SECRET VALUE'\"}\npipelines:\n  %s: "
                 "{direction: stream, source: postgres, connection: db, tables: [t]}\n", name);
        c = load(buf, 0, &e);
    }
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        snprintf(want, sizeof(want), "zx_a_%.58s", name + 2);
        CHECK(strlen(want) == 63);
        CHECK_STR(zx_postgres_opts_of(&c->pipelines[0])->slot, want);
        CHECK_STR(zx_postgres_opts_of(&c->pipelines[0])->publication, want);
        CHECK_STR(c->connections[0].dsn_shown, "host=db1 dbname=shop user=zx password=***");
    }
    zx_conf_free(c);
out:
    zx_conf_errors_free(&e);
}

/* Each rule of postgres pipelines and connections, with its message. */
static void test_pg_cdc_errors(void)
{
    const char *conn = "connections:\n  shop: {kind: postgres, dsn: \"postgresql://zx:"
                       "SECRETVALUE@db1/shop\"}\n  k: {kind: kafka, brokers: [\"b:1\"]}\n";
    zx_conf_errors e = {0};
    zx_conf *c;
    char buf[4096];

    /* The error at line l is at the value written after tok on that line
     * of buf (the text loaded). */
#define EXPECT_AT(l, tok, sub) EXPECT_ERR(&e, l, col_after(buf, l, tok), sub)
#define LOADB(text) (snprintf(buf, sizeof(buf), "%s", text), load(buf, 0, &e))
    /* a postgres pipeline "cdc" on line 5 with these options */
#define PLOAD(opts) (snprintf(buf, sizeof(buf), "%spipelines:\n  cdc: {direction: "  \
                              "stream, source: postgres, connection: shop, %s}\n",  \
                              conn, opts), load(buf, 0, &e))
    c = PLOAD("tables: [t]");
    CHECK(c != NULL);
    dump(&e);
    zx_conf_free(c);

    /* Options of other sources are refused on a postgres pipeline... */
    c = PLOAD("tables: [t], key: k, topic: t, group: g, start: new, ack: commit, "
              "max_body_size: 1MiB, table: x, metadata: [_ingested_at], max_columns: 9");
    CHECK(c == NULL);
    EXPECT_AT(5, " key: ", "pipelines.cdc: key applies only to source: http");
    EXPECT_AT(5, "topic: ", "pipelines.cdc: topic applies only to source: kafka");
    EXPECT_AT(5, "group: ", "pipelines.cdc: group applies only to source: kafka");
    EXPECT_AT(5, "start: ", "pipelines.cdc: start applies only to source: kafka");
    EXPECT_AT(5, "ack: ", "pipelines.cdc: ack applies only to source: http");
    EXPECT_AT(5, "max_body_size: ", "pipelines.cdc: max_body_size applies only to "
              "source: http");
    EXPECT_AT(5, " table: ", "pipelines.cdc: table applies only to source: http or kafka");
    EXPECT_AT(5, "metadata: ", "pipelines.cdc: metadata applies only to source: http or "
              "kafka");
    EXPECT_AT(5, "max_columns: ", "pipelines.cdc: max_columns applies only to source: http "
              "or kafka");
    CHECK(e.n == 9);
    CHECK(!any_contains(&e, "SECRETVALUE"));
    /* ... and its options on the other sources. */
    c = LOADB("pipelines:\n  web: {direction: stream, source: http, key: k, tables: [t], "
              "table_prefix: p_, initial_copy: false, history: true, slot: s, "
              "publication: p}\n");
    EXPECT_AT(2, "tables: ", "pipelines.web: tables applies only to source: postgres");
    EXPECT_AT(2, "table_prefix: ", "pipelines.web: table_prefix applies only to source: "
              "postgres");
    EXPECT_AT(2, "initial_copy: ", "pipelines.web: initial_copy applies only to source: "
              "postgres");
    EXPECT_AT(2, "history: ", "pipelines.web: history applies only to mirrors (format: "
              "debezium or mode: latest)");
    EXPECT_AT(2, "slot: ", "pipelines.web: slot applies only to source: postgres");
    EXPECT_AT(2, "publication: ", "pipelines.web: publication applies only to source: "
              "postgres");
    CHECK(e.n == 6);
    snprintf(buf, sizeof(buf), "%spipelines:\n  clicks: {direction: stream, source: kafka, "
             "connection: k, topic: t, tables: [t]}\n", conn);
    c = load(buf, 0, &e);
    EXPECT_AT(5, "tables: ", "pipelines.clicks: tables applies only to source: postgres");
    CHECK(e.n == 1);

    /* Required: connection and tables; the connection of the right kind. */
    c = LOADB("pipelines:\n  cdc: {direction: stream, source: postgres}\n");
    EXPECT_ERR(&e, 2, 3, "pipeline cdc: missing required field 'connection'");
    EXPECT_ERR(&e, 2, 3, "pipeline cdc: missing required field 'tables'");
    CHECK(e.n == 2);
    snprintf(buf, sizeof(buf), "%spipelines:\n  cdc: {direction: stream, source: postgres, "
             "connection: k, tables: [t]}\n", conn);
    c = load(buf, 0, &e);
    EXPECT_AT(5, "connection: ", "pipelines.cdc: connection k is of kind: kafka, but source: "
              "postgres needs kind: postgres");
    CHECK(e.n == 1);
    snprintf(buf, sizeof(buf), "%spipelines:\n  clicks: {direction: stream, source: kafka, "
             "connection: shop, topic: t}\n", conn);
    c = load(buf, 0, &e);
    EXPECT_AT(5, "connection: ", "pipelines.clicks: connection shop is of kind: postgres, "
              "but source: kafka needs kind: kafka");
    CHECK(e.n == 1);
    CHECK(!any_contains(&e, "SECRETVALUE"));

    /* Connections: each kind's options only (a sub-section once); dsn
     * required for postgres; its password never shown. */
    c = LOADB("connections:\n"
              "  pg:\n"
              "    kind: postgres\n"
              "    dsn: host=db1\n"
              "    brokers: [\"b:1\"]\n"                               /* 5 */
              "    security: ssl\n"                                     /* 6 */
              "    properties: {a: 1}\n"                                /* 7 */
              "    sasl: {mechanism: PLAIN, username: u, password: p}\n" /* 8 */
              "    tls: {ca: ca.pem}\n"                                 /* 9 */
              "  k: {kind: kafka, brokers: [\"b:1\"], dsn: host=x}\n"   /* 10 */
              "  nodsn: {kind: postgres}\n");                           /* 11 */
    EXPECT_AT(5, "brokers: ", "connections.pg: brokers applies only to kind: kafka");
    EXPECT_AT(6, "security: ", "connections.pg: security applies only to kind: kafka");
    EXPECT_AT(7, "properties: ", "connections.pg: properties applies only to kind: kafka");
    EXPECT_AT(8, "sasl: ", "connections.pg: sasl applies only to kind: kafka");
    EXPECT_AT(9, "tls: ", "connections.pg: tls applies only to kind: kafka");
    EXPECT_AT(10, "dsn: ", "connections.k: dsn applies only to kind: postgres");
    EXPECT_ERR(&e, 11, 3, "connection nodsn: missing required field 'dsn'");
    CHECK(e.n == 7);
    c = LOADB("connections:\n  pg: {kind: postgres, dsn: \"host=db1 password='SECRETVALUE\"}\n");
    EXPECT_AT(2, "dsn: ", "dsn: a quoted value is not closed, got 'host=db1 password=***'");
    CHECK(e.n == 1);
    CHECK(!any_contains(&e, "SECRETVALUE"));
    c = LOADB("connections:\n  pg: {kind: postgres, dsn: \"\"}\n");
    EXPECT_AT(2, "dsn: ", "dsn must not be empty");
    c = LOADB("connections:\n  pg: {kind: postgress, dsn: host=db1}\n");
    EXPECT_AT(2, "kind: ", "invalid kind 'postgress': expected one of: kafka, postgres, "
              "aws, mysql, sqlite, iceberg_rest, glue, s3tables, opensearch, http, redis (did you mean "
              "'postgres'?)");
    CHECK(e.n == 1);   /* nothing else: the kind is unknown */

    /* tables: a list; schema.table or table; none twice; at most 1000. */
    c = PLOAD("tables: orders");
    EXPECT_AT(5, "tables: ", "tables: expected a list of tables ([public.orders, "
              "customers]), got a single value");
    c = PLOAD("tables: []");
    EXPECT_AT(5, "tables: ", "tables: the list is empty");
    c = PLOAD("tables: [a.b.c, 1x, \"x y\", s., .t, \"\", [t], public.orders, orders]");
    EXPECT_AT(5, "tables: [", "tables: 'a.b.c' is not a table: write schema.table, or "
              "table for public.table, each name 1 to 63 letters, digits or _, not "
              "starting with a digit");
    EXPECT_AT(5, "a.b.c, ", "tables: '1x' is not a table");
    EXPECT_AT(5, "1x, ", "tables: 'x y' is not a table");
    EXPECT_AT(5, "\"x y\", ", "tables: 's.' is not a table");
    EXPECT_AT(5, "s., ", "tables: '.t' is not a table");
    EXPECT_AT(5, ".t, ", "tables: '' is not a table");
    EXPECT_AT(5, "\"\", ", "tables: expected a table (schema.table or table), got a list");
    EXPECT_AT(5, "public.orders, ", "tables: public.orders is listed twice");
    CHECK(e.n == 8);
    {
        /* 1001 tables; then 1000 */
        char *many = NULL, *big = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&many, &len);
        for (int i = 0; i < 1001; i++)
            fprintf(m, "%st%d", i ? ", " : "", i);
        fclose(m);
        for (int n = 1001; n >= 1000; n--) {
            if (n == 1000)
                *strrchr(many, ',') = '\0';
            free(big);
            if (asprintf(&big, "%spipelines:\n  cdc: {direction: stream, source: postgres, "
                         "connection: shop, tables: [%s]}\n", conn, many) < 0)
                exit(2);
            c = load(big, 0, &e);
            if (n == 1001) {
                EXPECT_ERR(&e, 5, col_after(big, 5, "tables: "), "tables: at most 1000 "
                           "tables in one pipeline, got 1001");
                CHECK(e.n == 1);
            } else {
                CHECK(c != NULL);
                dump(&e);
                if (c)
                    CHECK(c->pipelines[0].nmirrors == 1000 && c->pipelines[0].mirrors &&
                          !strcmp(c->pipelines[0].mirrors[999], "t999"));
                zx_conf_free(c);
            }
        }
        free(many);
        free(big);
    }

    /* Mirror names follow the rules of `table`. */
    c = PLOAD("tables: [_zx_t, s.x__REJECTS, sqlite_t, ok]");
    EXPECT_AT(5, "tables: [", "pipelines.cdc: public._zx_t would be mirrored to table "
              "'_zx_t', which is reserved for zx's own tables");
    EXPECT_AT(5, "_zx_t, ", "pipelines.cdc: s.x__REJECTS would be mirrored to table "
              "'x__REJECTS', which is reserved for zx's own tables");
    EXPECT_AT(5, "__REJECTS, ", "pipelines.cdc: public.sqlite_t would be mirrored to table "
              "'sqlite_t', which is reserved by SQLite");
    CHECK(e.n == 3);
    c = PLOAD("tables: [abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij], "
              "table_prefix: long_");
    EXPECT_AT(5, "tables: [", "pipelines.cdc: public.abcdefghijabcdefghijabcdefghijabcdefghij"
              "abcdefghijabcdefghij would be mirrored to table 'long_abcdefghijabcdefghij"
              "abcdefghijabcdefghijabcdefghijabcdefghij', which is not a valid table name: "
              "1 to 63 letters, digits or _, not starting with a digit (shorten "
              "table_prefix)");
    CHECK(e.n == 1);
    c = PLOAD("tables: [t], table_prefix: \"x-\"");
    EXPECT_AT(5, "table_prefix: ", "table_prefix: 'x-' is not a valid table name");
    CHECK(e.n == 1);
    c = PLOAD("tables: [t], table_prefix: _zx_");
    EXPECT_AT(5, "table_prefix: ", "table_prefix: '_zx_' is reserved for zx's own tables");
    CHECK(e.n == 1);
    /* with history, `<mirror>__changes` must fit in 63 */
    c = PLOAD("tables: [t, abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcde], "
              "history: true");
    EXPECT_AT(5, "t, ", "pipelines.cdc: with history, the mirror of public.abcdefghij"
              "abcdefghijabcdefghijabcdefghijabcdefghijabcde, 'abcdefghijabcdefghijabcdef"
              "ghijabcdefghijabcdefghijabcde', has 55 characters: at most 54, so that its "
              "table abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcde__changes fits "
              "in 63");
    CHECK(e.n == 1);
    c = PLOAD("tables: [t, abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd], "
              "history: true");
    CHECK(c != NULL);
    dump(&e);
    zx_conf_free(c);

    /* Two source tables with one mirror name: an error naming both. */
    c = PLOAD("tables: [public.orders, sales.orders]");
    EXPECT_AT(5, "public.orders, ", "pipeline cdc: public.orders and sales.orders would both "
              "be mirrored to table 'orders'; a mirror is named after its table, without the "
              "schema: mirror them in two pipelines with different table_prefix");
    CHECK(e.n == 1);
    c = PLOAD("tables: [orders, Orders], history: true");
    EXPECT_AT(5, "[orders, ", "pipeline cdc: public.orders and public.Orders would both be "
              "mirrored to table 'orders' ('orders' and 'Orders' are one name, case does "
              "not count); a mirror is named");
    CHECK(e.n == 1);    /* their __changes tables: no second message */
    /* a mirror and another's history in one pipeline */
    c = PLOAD("tables: [orders, orders__changes], history: true");
    EXPECT_AT(5, "[orders, ", "pipeline cdc: table 'orders__changes' (the mirror of "
              "public.orders__changes) would also be the history of public.orders");
    CHECK(e.n == 1);
    /* across pipelines: a mirror and a table, a table and a history, two
     * mirrors (the same table in two pipelines, prefixes apart, is fine) */
    snprintf(buf, sizeof(buf), "%spipelines:\n"
             "  web: {direction: stream, source: http, key: k, table: Orders}\n"      /* 5 */
             "  cdc: {direction: stream, source: postgres, connection: shop, tables: "
             "[orders, items], history: true}\n"                                      /* 6 */
             "  web2: {direction: stream, source: http, key: k, table: items__changes}\n"
             "  cdc2: {direction: stream, source: postgres, connection: shop, tables: "
             "[s.items]}\n"                                                           /* 8 */
             "  cdc3: {direction: stream, source: postgres, connection: shop, tables: "
             "[s.items], table_prefix: s_}\n", conn);
    c = load(buf, 0, &e);
    EXPECT_AT(6, "tables: [", "pipeline cdc: table 'orders' (the mirror of public.orders) "
              "is already written by pipeline web (line 5): 'Orders' and 'orders' are one "
              "name, case does not count");
    EXPECT_ERR(&e, 7, 3, "pipeline web2: table 'items__changes' is already written by "
               "pipeline cdc (line 6, as the history of public.items)");
    EXPECT_AT(8, "tables: [", "pipeline cdc2: table 'items' (the mirror of s.items) is "
              "already written by pipeline cdc (line 6, as the mirror of public.items)");
    CHECK(e.n == 3);

    /* Slot and publication names; booleans. */
    c = PLOAD("tables: [t], slot: Bad, publication: \"\"");
    EXPECT_AT(5, "slot: ", "slot: 'Bad' is not a replication slot name: 1 to 63 lower-case "
              "letters, digits or _");
    EXPECT_AT(5, "publication: ", "publication: '' is not a valid name: 1 to 63 bytes, "
              "without control characters");
    CHECK(e.n == 2);
    c = PLOAD("tables: [t], slot: a-b, publication: "
              "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd");
    EXPECT_AT(5, "slot: ", "slot: 'a-b' is not a replication slot name");
    EXPECT_AT(5, "publication: ", "publication: 'abcdefghij");
    CHECK(e.n == 2);
    c = PLOAD("tables: [t], slot: abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd");
    EXPECT_AT(5, "slot: ", "is not a replication slot name");
    c = PLOAD("tables: [t], initial_copy: yes, history: 1");
    EXPECT_AT(5, "initial_copy: ", "initial_copy: expected true or false, got 'yes'");
    EXPECT_AT(5, "history: ", "history: expected true or false, got '1'");
    CHECK(e.n == 2);
    c = PLOAD("tables: [t], initial_copy: FALSE, history: True");
    CHECK(c != NULL);
    if (c)
        CHECK(zx_postgres_opts_of(&c->pipelines[0])->initial_copy == 0 &&
              c->pipelines[0].history == 1);
    zx_conf_free(c);

    /* One slot per pipeline on a database: the same connection, or
     * connections with the same dsn; derived names count ("a-b" and "a_b"
     * both derive zx_a_b). */
    c = LOADB("connections:\n"
              "  db: {kind: postgres, dsn: \"host=db1 dbname=shop\"}\n"
              "  same: {kind: postgres, dsn: \"host=db1 dbname=shop\"}\n"
              "  other: {kind: postgres, dsn: \"host=db2 dbname=shop\"}\n"
              "pipelines:\n"
              "  a-b: {direction: stream, source: postgres, connection: db, tables: [t1]}\n"
              "  a_b: {direction: stream, source: postgres, connection: db, tables: [t2]}\n"
              "  x: {direction: stream, source: postgres, connection: same, tables: [t3], "
              "slot: zx_a_b}\n"
              "  y: {direction: stream, source: postgres, connection: other, tables: [t4], "
              "slot: zx_a_b}\n");
    EXPECT_ERR(&e, 7, 3, "pipeline a_b: replication slot zx_a_b is already the slot of "
               "pipeline a-b (line 6) on the same database; a slot serves one pipeline: set "
               "`slot:` (and `publication:`) to another name");
    EXPECT_ERR(&e, 8, 3, "pipeline x: replication slot zx_a_b is already the slot of "
               "pipeline a-b (line 6)");
    CHECK(e.n == 2);     /* y: another server */
    /* zxctl (secrets skipped, the dsn not resolved): the slots compare too */
    c = load("connections:\n"
             "  db: {kind: postgres, dsn: \"postgresql://zx:${env:ZX_T_NO_SUCH_PW}@db1/shop\"}\n"
             "pipelines:\n"
             "  a: {direction: stream, source: postgres, connection: db, tables: [t1], slot: s}\n"
             "  b: {direction: stream, source: postgres, connection: db, tables: [t2], slot: s}\n",
             ZX_CONF_SKIP_SECRETS, &e);
    CHECK(c == NULL);
    zx_conf_free(c);
    EXPECT_ERR(&e, 5, 3, "pipeline b: replication slot s is already the slot of pipeline a "
               "(line 4)");
    CHECK(e.n == 1);
#undef PLOAD
#undef LOADB
#undef EXPECT_AT
    zx_conf_errors_free(&e);
}

static void test_pg_cdc_same(void)
{
    zx_conf_errors e = {0};
    zx_conf *c1, *c2 = NULL;
    char *t2 = NULL;
    const char *text = pg_yaml;

    setenv("ZX_T_PGCDC_PW", "SECRETVALUE", 1);
    c1 = load(text, 0, &e);
    CHECK(c1 != NULL);
    dump(&e);
    if (!c1)
        goto out;
#define PG_SAME_AFTER(from, to, same_cdc, same_audit) do {                  \
        char *at_ = strstr(text, from);                                     \
        CHECK(at_ != NULL);                                                 \
        if (!at_)                                                           \
            break;                                                          \
        free(t2);                                                           \
        if (asprintf(&t2, "%.*s%s%s", (int)(at_ - text), text, to,          \
                     at_ + strlen(from)) < 0)                               \
            exit(2);                                                        \
        zx_conf_free(c2);                                                   \
        c2 = load(t2, 0, &e);                                               \
        CHECK(c2 != NULL);                                                  \
        dump(&e);                                                           \
        if (!c2)                                                            \
            break;                                                          \
        CHECK(zx_conf_pipeline_same(&c1->pipelines[0], &c2->pipelines[0])   \
              == (same_cdc));                                               \
        CHECK(zx_conf_pipeline_same(&c1->pipelines[1], &c2->pipelines[1])   \
              == (same_audit));                                             \
        CHECK(zx_conf_pipeline_same(&c1->pipelines[2], &c2->pipelines[2])); \
    } while (0)

    PG_SAME_AFTER("pipelines:\n", "# moved\npipelines:\n", 1, 1);
    PG_SAME_AFTER("[orders, sales.Customers]", "[public.orders, sales.Customers]", 1, 1);
    PG_SAME_AFTER("[orders, sales.Customers]", "[sales.Customers, orders]", 0, 1);
    PG_SAME_AFTER("[orders, sales.Customers]", "[orders]", 0, 1);
    PG_SAME_AFTER("    tables: [orders, sales.Customers]\n",
                  "    tables: [orders, sales.Customers]\n    table_prefix: p_\n", 0, 1);
    PG_SAME_AFTER("    tables: [orders, sales.Customers]\n",
                  "    tables: [orders, sales.Customers]\n    initial_copy: true\n", 1, 1);
    PG_SAME_AFTER("    tables: [orders, sales.Customers]\n",
                  "    tables: [orders, sales.Customers]\n    initial_copy: false\n", 0, 1);
    PG_SAME_AFTER("    tables: [orders, sales.Customers]\n",
                  "    tables: [orders, sales.Customers]\n    history: true\n", 0, 1);
    /* the derived slot and publication, written: the same */
    PG_SAME_AFTER("    tables: [orders, sales.Customers]\n",
                  "    tables: [orders, sales.Customers]\n    slot: zx_shop_cdc\n"
                  "    publication: zx_shop_cdc\n", 1, 1);
    PG_SAME_AFTER("    tables: [orders, sales.Customers]\n",
                  "    tables: [orders, sales.Customers]\n    slot: other\n", 0, 1);
    PG_SAME_AFTER("    tables: [orders, sales.Customers]\n",
                  "    tables: [orders, sales.Customers]\n    publication: other\n", 0, 1);
    PG_SAME_AFTER("table_prefix: audit_", "table_prefix: audit2_", 1, 0);
    PG_SAME_AFTER("    initial_copy: false\n", "", 1, 0);
    PG_SAME_AFTER("history: true", "history: false", 1, 0);
    PG_SAME_AFTER("slot: audit_slot", "slot: audit_slot2", 1, 0);
    PG_SAME_AFTER("\"Audit Pub\"", "\"audit pub\"", 1, 0);
    /* the connection: its dsn changes both */
    PG_SAME_AFTER("@db1:5432/shop", "@db2:5432/shop", 0, 0);
    zx_conf_free(c2);
    c2 = NULL;
    /* a new password (the same dsn as shown): both restart */
    setenv("ZX_T_PGCDC_PW", "NEWSECRET", 1);
    c2 = load(text, 0, &e);
    CHECK(c2 != NULL);
    if (c2) {
        CHECK(!zx_conf_pipeline_same(&c1->pipelines[0], &c2->pipelines[0]));
        CHECK(!zx_conf_pipeline_same(&c1->pipelines[1], &c2->pipelines[1]));
        CHECK(zx_conf_pipeline_same(&c1->pipelines[2], &c2->pipelines[2]));
        CHECK(!zx_conf_connection_same(&c1->connections[0], &c2->connections[0]));
    }
#undef PG_SAME_AFTER
out:
    zx_conf_free(c1);
    zx_conf_free(c2);
    free(t2);
    zx_conf_errors_free(&e);
}

int main(int argc, char **argv)
{
    if (cfg_test_init(argc, argv) != 0)
        return 2;
    test_postgres();
    test_pg_cdc();
    test_pg_cdc_errors();
    test_pg_cdc_same();
    return cfg_test_finish("test_config_pg");
}
