/*
 * test_config_kafka.c — unit tests of the configuration loader's
 * connections and `source: kafka`.
 *
 * Covers: a Kafka connection with SASL, TLS and properties and a kafka
 * pipeline (fields, defaults, metadata, secrets from ${env:} never shown);
 * each rule's message, one pipeline or connection at a time; rings (only
 * http pipelines have request and reply rings, and the budget counts only
 * what each takes); zx_conf_pipeline_same and zx_conf_connection_same
 * after each kind of change; change streams on kafka and http (format:
 * debezium, mode: latest, encoding: avro with a schema registry) and what
 * they refuse.
 *
 * Temporary files go to a mkdtemp directory (config_testlib.h), removed
 * at the end.
 * It must never: depend on timing, or on files outside its temporary
 * directory and the source tree.
 */
#include "config_testlib.h"
#include "conf/config.h"
#include "common/segment.h"     /* ZX_SEG_MAX_BYTES, for the ring sizes */
#include "workers/sources/kafka/kafka_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- connections and source: kafka ------------------------------------ */

/* The configuration of the brief: a Kafka connection with SASL, TLS and
 * properties, a kafka pipeline and an http one. */
static const char *kafka_yaml =
    "connections:\n"                                               /* 1 */
    "  main_kafka:\n"                                              /* 2 */
    "    kind: kafka\n"                                            /* 3 */
    "    brokers: [\"127.0.0.1:9094\", \"[::1]:9095\"]\n"          /* 4 */
    "    security: sasl_ssl\n"                                     /* 5 */
    "    sasl: {mechanism: SCRAM-SHA-512, username: zx, password: \"${env:ZX_T_KPASS}\"}\n"
    "    tls: {ca: ca.pem, cert: /CERT, key: client.key, key_password: \"${env:ZX_T_KEYPASS}\"}\n"
    "    properties: {fetch.max.bytes: \"52428800\", \"socket.keepalive.enable\": true,"
    " sasl.oauthbearer.config: \"${env:ZX_T_OAUTH}\", queued.min.messages: 1000}\n"
    "pipelines:\n"                                                 /* 9 */
    "  clicks:\n"                                                  /* 10 */
    "    direction: stream\n"
    "    source: kafka\n"
    "    connection: main_kafka\n"                                 /* 13 */
    "    topic: clicks\n"
    "    group: zx-clicks\n"
    "    start: oldest\n"
    "    table: clicks\n"
    "    metadata: [_key, _partition, _offset, _timestamp, _ingested_at]\n"
    "  web:\n"                                                     /* 19 */
    "    direction: stream\n"
    "    source: http\n"
    "    key: ${env:ZX_T_WEBKEY}\n";

static char *kafka_text(void)
{
    char *t = NULL, cert[300];
    const char *at = strstr(kafka_yaml, "/CERT");

    snprintf(cert, sizeof(cert), "%s", tpath("client.pem"));
    if (asprintf(&t, "%.*s%s%s", (int)(at - kafka_yaml), kafka_yaml, cert,
                 at + 5) < 0)
        exit(2);
    return t;
}

static void kafka_env(void)
{
    setenv("ZX_T_KPASS", "kafka pass SECRETVALUE", 1);
    setenv("ZX_T_KEYPASS", "keypass-SECRETVALUE", 1);
    setenv("ZX_T_OAUTH", "principal=SECRETVALUE", 1);
    setenv("ZX_T_WEBKEY", "webkey", 1);
    write_file("ca.pem", "-----BEGIN CERTIFICATE-----\n");
    write_file("client.pem", "-----BEGIN CERTIFICATE-----\n");
    write_file("client.key", "-----BEGIN PRIVATE KEY-----\n");
}

static void test_kafka(void)
{
    zx_conf_errors e = {0};
    char *text = kafka_text();
    const zx_conf_connection *cn;
    const zx_conf_pipeline *p, *w;
    zx_conf *c;

    kafka_env();
    c = load(text, 0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (!c)
        goto out;
    CHECK(c->nconnections == 1);
    cn = zx_conf_find_connection(c, "main_kafka");
    CHECK(cn == &c->connections[0]);
    CHECK(zx_conf_find_connection(c, "clicks") == NULL);
    CHECK(zx_conf_find_connection(NULL, "main_kafka") == NULL);
    CHECK_STR(cn->name, "main_kafka");
    CHECK(cn->line == 2 && cn->column == 3);
    CHECK_STR(cn->kind, "kafka");
    CHECK(cn->nbrokers == 2);
    CHECK_STR(cn->brokers[0], "127.0.0.1:9094");
    CHECK_STR(cn->brokers[1], "[::1]:9095");
    CHECK_STR(cn->brokers_csv, "127.0.0.1:9094,[::1]:9095");
    CHECK_STR(cn->security, "sasl_ssl");
    CHECK_STR(cn->sasl_mechanism, "SCRAM-SHA-512");
    CHECK_STR(cn->sasl_username, "zx");
    CHECK_STR(cn->sasl_password, "kafka pass SECRETVALUE");
    CHECK_STR(cn->tls_ca, tpath("ca.pem"));
    CHECK_STR(cn->tls_cert, tpath("client.pem"));
    CHECK_STR(cn->tls_key, tpath("client.key"));
    CHECK_STR(cn->tls_key_password, "keypass-SECRETVALUE");
    CHECK(cn->nprops == 4);
    if (cn->nprops == 4) {
        CHECK_STR(cn->prop_keys[0], "fetch.max.bytes");
        CHECK_STR(cn->prop_values[0], "52428800");
        CHECK_STR(cn->prop_keys[1], "socket.keepalive.enable");
        CHECK_STR(cn->prop_values[1], "true");
        CHECK_STR(cn->prop_keys[2], "sasl.oauthbearer.config");
        CHECK_STR(cn->prop_values[2], "principal=SECRETVALUE");
        CHECK_STR(cn->prop_keys[3], "queued.min.messages");
        CHECK_STR(cn->prop_values[3], "1000");
    }

    CHECK(c->npipelines == 2);
    p = zx_conf_find(c, "clicks");
    w = zx_conf_find(c, "web");
    CHECK(p && w);
    if (!p || !w)
        goto out;
    CHECK_STR(p->source, "kafka");
    CHECK_STR(p->connection, "main_kafka");
    CHECK(p->conn == cn);
    CHECK(kopts(p)->ntopics == 1 && kopts(p)->topics_regex == 0);
    if (kopts(p)->ntopics == 1)
        CHECK_STR(kopts(p)->topics[0], "clicks");
    CHECK_STR(kopts(p)->group, "zx-clicks");
    CHECK(p->own && kopts(p)->start_new == 0);
    CHECK_STR(p->table, "clicks");
    CHECK(p->metadata == (ZX_META_KEY | ZX_META_PARTITION | ZX_META_OFFSET |
                          ZX_META_TIMESTAMP | ZX_META_INGESTED_AT));
    CHECK(zx_http_opts_of(p) == NULL);   /* no http options */
    /* a Kafka frame is bounded like a push body: the server's limit */
    CHECK(p->body_limit == 16u << 20);
    CHECK(p->ring_size == 64u << 20);
    CHECK(p->in_ring_size == 0);
    CHECK(p->shm_size == ZX_SEG_MAX_BYTES(0, p->ring_size));
    CHECK(p->line == 10 && p->column == 3);

    CHECK_STR(w->source, "http");
    CHECK_STR(HO(w)->key, "webkey");
    CHECK(w->conn == NULL && w->connection == NULL);
    CHECK(w->in_ring_size == 2 * ((16u << 20) + (64u << 10)));
    CHECK(w->shm_size == ZX_SEG_MAX_BYTES(w->in_ring_size, w->ring_size));
    CHECK(c->ring_bytes == p->shm_size + w->shm_size);
    zx_conf_free(c);

    /* zxctl: secrets written as references stay NULL (also a secret
     * property), and TLS files are not opened. */
    unsetenv("ZX_T_KPASS");
    unsetenv("ZX_T_KEYPASS");
    unsetenv("ZX_T_OAUTH");
    unsetenv("ZX_T_WEBKEY");
    unlink(tpath("client.key"));
    c = load(text, ZX_CONF_SKIP_SECRETS, &e);
    CHECK(c != NULL && e.n == 0);
    dump(&e);
    if (c) {
        cn = &c->connections[0];
        CHECK(cn->sasl_password == NULL && cn->tls_key_password == NULL);
        CHECK_STR(cn->sasl_username, "zx");
        CHECK_STR(cn->tls_key, tpath("client.key"));
        CHECK(cn->nprops == 4 && cn->prop_values[2] == NULL);
        CHECK(cn->nprops == 4 && cn->prop_values[0] != NULL);
        CHECK(HO(&c->pipelines[1])->key == NULL);
    }
    zx_conf_free(c);
    /* ... but zxd reports them, never showing a secret. */
    setenv("ZX_T_WEBKEY", "webkey", 1);
    c = load(text, 0, &e);
    CHECK(c == NULL);
    EXPECT_ERR(&e, 6, 62, "environment variable ZX_T_KPASS is not set");
    EXPECT_ERR(&e, 7, 99, "environment variable ZX_T_KEYPASS is not set");
    EXPECT_ERR(&e, 8, 105, "environment variable ZX_T_OAUTH is not set");
    EXPECT_ERR(&e, 7, 73, "connections.main_kafka: tls.key: cannot read ");
    CHECK(any_contains(&e, "client.key: No such file or directory"));
    CHECK(e.n == 4);
    write_file("client.key", "-----BEGIN PRIVATE KEY-----\n");

    /* Other shapes: topics lists and regexes, brokers as one string (also
     * from the environment), start: new, connections after pipelines, an
     * unused connection, a literal $ConnectionString user name. */
    setenv("ZX_T_BROKERS", "k3:9092,k4:9092", 1);
    setenv("ZX_T_KPASS", "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKey=SECRETVALUE", 1);
    c = load("pipelines:\n"
             "  a: {direction: stream, source: kafka, connection: k, topics: [a.b, c_d-e]}\n"
             "  b: {direction: stream, source: kafka, connection: k, topics: \"^clicks\\\\..*\","
             " start: new, group: \"zx group/1\"}\n"
             "  c: {direction: stream, source: kafka, connection: env, topics: single}\n"
             "connections:\n"
             "  k: {kind: kafka, brokers: \" k1:9092 , k2:19092\"}\n"
             "  unused: {kind: kafka, brokers: [\"u:1\"]}\n"
             "  env:\n"
             "    kind: kafka\n"
             "    brokers: ${env:ZX_T_BROKERS}\n"
             "    security: sasl_ssl\n"
             "    sasl:\n"
             "      mechanism: PLAIN\n"
             "      username: $ConnectionString\n"
             "      password: ${env:ZX_T_KPASS}\n", 0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        const zx_conf_pipeline *a = &c->pipelines[0], *b = &c->pipelines[1];
        const zx_conf_pipeline *pc = &c->pipelines[2];
        CHECK(c->nconnections == 3);
        const zx_kafka_opts *ka = kopts(a), *kb = kopts(b), *kc = kopts(pc);
        CHECK(ka->ntopics == 2 && !ka->topics_regex);
        if (ka->ntopics == 2) {
            CHECK_STR(ka->topics[0], "a.b");
            CHECK_STR(ka->topics[1], "c_d-e");
        }
        CHECK(ka->group == NULL && ka->start_new == 0);
        CHECK(a->conn == &c->connections[0] && b->conn == a->conn);
        CHECK(kb->ntopics == 1 && kb->topics_regex == 1);
        if (kb->ntopics == 1)
            CHECK_STR(kb->topics[0], "^clicks\\..*");
        CHECK(kb->start_new == 1);
        CHECK_STR(kb->group, "zx group/1");
        CHECK(kc->ntopics == 1 && !kc->topics_regex);
        if (kc->ntopics == 1)
            CHECK_STR(kc->topics[0], "single");
        CHECK(pc->conn == &c->connections[2]);
        CHECK(c->connections[0].nbrokers == 2);
        CHECK_STR(c->connections[0].brokers[0], "k1:9092");
        CHECK_STR(c->connections[0].brokers_csv, "k1:9092,k2:19092");
        CHECK_STR(c->connections[0].security, "plaintext");
        CHECK(c->connections[0].sasl_mechanism == NULL);
        CHECK(c->connections[0].tls_ca == NULL && c->connections[0].nprops == 0);
        CHECK_STR(c->connections[2].brokers_csv, "k3:9092,k4:9092");
        CHECK_STR(c->connections[2].sasl_username, "$ConnectionString");
        CHECK_STR(c->connections[2].sasl_password,
                  "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKey=SECRETVALUE");
    }
    zx_conf_free(c);
out:
    zx_conf_errors_free(&e);
    free(text);
}

/* One pipeline or connection at a time: each rule's message. */
static void test_kafka_errors(void)
{
    const char *conn = "connections:\n  main_kafka: {kind: kafka, brokers: [\"b:9092\"]}\n";
    zx_conf_errors e = {0};
    zx_conf *c;
    char buf[1024];

#define KLOAD(pipe) (snprintf(buf, sizeof(buf), "%spipelines:\n  clicks: {direction: "  \
                              "stream, source: kafka, connection: main_kafka, %s}\n",   \
                              conn, pipe), load(buf, 0, &e))
    /* line 4 is the pipeline; the options given start at column 70 */

    /* Options of another source. */
    c = KLOAD("topic: t, key: k");
    CHECK(c == NULL);
    EXPECT_ERR(&e, 4, 85, "pipelines.clicks: key applies only to source: http");
    CHECK(e.n == 1);
    c = KLOAD("topic: t, ack: commit, max_body_size: 1MiB");
    EXPECT_ERR(&e, 4, 85, "pipelines.clicks: ack applies only to source: http");
    EXPECT_ERR(&e, 4, 108, "pipelines.clicks: max_body_size applies only to source: http");
    c = load("pipelines:\n  web: {direction: stream, source: http, key: k, topic: t,"
             " group: g, start: new, connection: main_kafka}\n", 0, &e);
    EXPECT_ERR(&e, 2, 57, "pipelines.web: topic applies only to source: kafka");
    EXPECT_ERR(&e, 2, 67, "pipelines.web: group applies only to source: kafka");
    EXPECT_ERR(&e, 2, 77, "pipelines.web: start applies only to source: kafka");
    EXPECT_ERR(&e, 2, 94, "pipelines.web: connection applies only to source: kafka");
    CHECK(e.n == 4);

    /* Required per source: connection and one of topic/topics for kafka;
     * key only for http; none checked with an unknown source. */
    c = load("pipelines:\n  clicks: {direction: stream, source: kafka}\n", 0, &e);
    EXPECT_ERR(&e, 2, 3, "pipeline clicks: missing required field 'connection'");
    EXPECT_ERR(&e, 2, 3, "pipeline clicks: missing required field 'topic' (or 'topics')");
    CHECK(e.n == 2);
    c = KLOAD("topic: t, topics: [a]");
    EXPECT_ERR(&e, 4, 88, "pipelines.clicks: write topic or topics, not both");
    CHECK(e.n == 1);
    c = load("pipelines:\n  x: {direction: stream, source: kafak}\n", 0, &e);
    EXPECT_ERR(&e, 2, 34, "invalid source 'kafak': expected one of: http, kafka, "
               "postgres, kinesis, sync, generate (did you mean 'kafka'?)");
    CHECK(e.n == 1);

    /* Metadata of another source, unknown metadata. */
    c = KLOAD("topic: t, metadata: [_key, _request_id]");
    EXPECT_ERR(&e, 4, 97, "pipelines.clicks: metadata _request_id applies only to "
               "source: http (source: kafka takes _key, _partition, _offset, "
               "_timestamp, _ingested_at)");
    CHECK(e.n == 1);
    c = load("pipelines:\n  web: {direction: stream, source: http, key: k, "
             "metadata: [_ingested_at, _offset, _bogus]}\n", 0, &e);
    EXPECT_ERR(&e, 2, 75, "pipelines.web: metadata _offset applies only to "
               "source: kafka (source: http takes _ingested_at, _request_id)");
    EXPECT_ERR(&e, 2, 84, "invalid metadata '_bogus'");
    CHECK(e.n == 2);

    /* Connections: unknown (with a suggestion), none defined. */
    c = load("connections:\n  main_kafka: {kind: kafka, brokers: [\"b:9092\"]}\n"
             "  other: {kind: kafka, brokers: [\"b:9092\"]}\n"
             "pipelines:\n  clicks:\n    direction: stream\n    source: kafka\n"
             "    connection: mian_kafka\n    topic: t\n", 0, &e);
    EXPECT_ERR(&e, 8, 17, "pipelines.clicks: unknown connection 'mian_kafka': "
               "expected one of: main_kafka, other (did you mean 'main_kafka'?)");
    CHECK(e.n == 1);
    c = load("pipelines:\n  clicks:\n    direction: stream\n    source: kafka\n"
             "    connection: k\n    topic: t\n", 0, &e);
    EXPECT_ERR(&e, 5, 17, "pipelines.clicks: unknown connection 'k': connections "
               "defines none");

    /* Topics. */
    c = KLOAD("topic: \"bad topic\"");
    EXPECT_ERR(&e, 4, 77, "topic: 'bad topic' is not a topic name");
    c = KLOAD("topic: \"^re\"");
    EXPECT_ERR(&e, 4, 77, "(a regular expression goes in `topics:`)");
    c = KLOAD("topics: [a, \"^re\"]");
    EXPECT_ERR(&e, 4, 82, "(a regular expression must be the whole value");
    c = KLOAD("topics: \"^(unclosed\"");
    EXPECT_ERR(&e, 4, 78, "topics: '^(unclosed' is not a valid regular expression "
               "(POSIX extended): ");
    c = KLOAD("topics: []");
    EXPECT_ERR(&e, 4, 78, "topics: the list is empty");
    c = KLOAD("topic: [a, b]");
    EXPECT_ERR(&e, 4, 77, "topic: expected one topic name (for several, write "
               "topics: [a, b]), got a list");
    c = KLOAD("topics: {a: 1}");
    EXPECT_ERR(&e, 4, 78, "topics: expected a list of topic names or one \"^regex\"");
#undef KLOAD

    /* Connection names and keys. */
    c = load("connections:\n  Main: {kind: kafka, brokers: [\"b:1\"]}\n"
             "  a: {kind: kafka, brokers: [\"b:1\"]}\n"
             "  a: {kind: kafka, brokers: [\"b:1\"]}\n"
             "  b: {brokers: [\"b:1\"], knd: kafka}\n"
             "  c: [x]\n", 0, &e);
    EXPECT_ERR(&e, 2, 3, "invalid connection name 'Main'");
    EXPECT_ERR(&e, 4, 3, "duplicate connection 'a' (first defined at line 3, column 3)");
    EXPECT_ERR(&e, 5, 25, "unknown key 'knd' in connection b (did you mean 'kind'?)");
    EXPECT_ERR(&e, 5, 3, "connection b: missing required field 'kind'");
    EXPECT_ERR(&e, 6, 6, "connection c must be a mapping of settings (kind, brokers, ...)");
    /* what else is required depends on the kind: only kind is named */
    EXPECT_ERR(&e, 6, 3, "connection c: missing required field 'kind'");
    CHECK(!any_contains(&e, "missing required field 'brokers'"));
    CHECK(e.n == 6);
    c = load("connections: [a]\n", 0, &e);
    EXPECT_ERR(&e, 1, 14, "connections must be a mapping from each connection's name");

    /* Brokers. */
    c = load("connections:\n  k:\n    kind: kafka\n    brokers: [\"k1\", \"k2:0\", "
             "\"k3:70000\", \":9092\", [x], \"k4:1,k5:2\"]\n", 0, &e);
    EXPECT_ERR(&e, 4, 15, "brokers: expected host:port, like kafka-1:9092, got 'k1'");
    EXPECT_ERR(&e, 4, 21, "brokers: the port must be a number from 1 to 65535, got 'k2:0'");
    EXPECT_ERR(&e, 4, 29, "got 'k3:70000'");
    EXPECT_ERR(&e, 4, 41, "brokers: the host is missing");
    EXPECT_ERR(&e, 4, 50, "brokers: expected host:port, got a list");
    EXPECT_ERR(&e, 4, 55, "got 'k4:1,k5:2'");
    CHECK(e.n == 6);
    c = load("connections:\n  k: {kind: kafka, brokers: \"k1:1,,k2:2\"}\n", 0, &e);
    EXPECT_ERR(&e, 2, 29, "brokers: expected host:port, like kafka-1:9092, got ''");
    c = load("connections:\n  k: {kind: kafka, brokers: []}\n", 0, &e);
    EXPECT_ERR(&e, 2, 29, "brokers: the list is empty");
    c = load("connections:\n  k: {kind: kafka}\n", 0, &e);
    EXPECT_ERR(&e, 2, 3, "connection k: missing required field 'brokers'");
    setenv("ZX_T_BROKERS", "SECRETVALUE", 1);
    c = load("connections:\n  k: {kind: kafka, brokers: \"${env:ZX_T_BROKERS}\"}\n", 0, &e);
    EXPECT_ERR(&e, 2, 29, "brokers: expected host:port, like kafka-1:9092, got "
               "the value of ${env:ZX_T_BROKERS}");
    CHECK(!any_contains(&e, "SECRETVALUE"));

    /* Security, SASL, TLS. */
    c = load("connections:\n  k: {kind: kafka, brokers: [\"b:1\"], security: sasl-ssl}\n", 0, &e);
    EXPECT_ERR(&e, 2, 48, "invalid security 'sasl-ssl': expected one of: plaintext, "
               "ssl, sasl_plaintext, sasl_ssl (did you mean 'sasl_ssl'?)");
    CHECK(e.n == 1);
    c = load("connections:\n  k:\n    kind: kafka\n    brokers: [\"b:1\"]\n"
             "    sasl: {mechanism: PLAIN, username: u, password: p}\n", 0, &e);
    EXPECT_ERR(&e, 5, 11, "connections.k: sasl needs security: sasl_plaintext or "
               "sasl_ssl (security is plaintext)");
    CHECK(e.n == 1);
    c = load("connections:\n  k:\n    kind: kafka\n    brokers: [\"b:1\"]\n"
             "    security: ssl\n"
             "    sasl: {mechanism: PLAIN, username: u, password: p}\n", 0, &e);
    EXPECT_ERR(&e, 6, 11, "connections.k: sasl needs security: sasl_plaintext or "
               "sasl_ssl (security is ssl)");
    c = load("connections:\n  k:\n    kind: kafka\n    brokers: [\"b:1\"]\n"
             "    security: sasl_plaintext\n", 0, &e);
    EXPECT_ERR(&e, 5, 15, "connections.k: security: sasl_plaintext needs sasl with "
               "mechanism, username and password");
    CHECK(e.n == 1);
    c = load("connections:\n  k:\n    kind: kafka\n    brokers: [\"b:1\"]\n"
             "    security: sasl_ssl\n"
             "    sasl: {mechanism: SCRAM-SHA-1, username: u, pasword: p}\n", 0, &e);
    EXPECT_ERR(&e, 6, 23, "invalid mechanism 'SCRAM-SHA-1': expected one of: "
               "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (did you mean 'SCRAM-SHA-512'?)");
    EXPECT_ERR(&e, 6, 49, "unknown key 'pasword' in connections.k.sasl (did you "
               "mean 'password'?); allowed: mechanism, username, password");
    EXPECT_ERR(&e, 6, 11, "connections.k: sasl: missing required field 'password'");
    CHECK(e.n == 3);
    c = load("connections:\n  k:\n    kind: kafka\n    brokers: [\"b:1\"]\n"
             "    security: sasl_plaintext\n"
             "    sasl: {mechanism: PLAIN, username: u, password: p}\n"
             "    tls: {ca: ca.pem}\n", 0, &e);
    EXPECT_ERR(&e, 7, 10, "connections.k: tls needs security: ssl or sasl_ssl "
               "(security is sasl_plaintext)");
    CHECK(e.n == 1);
    c = load("connections:\n  k:\n    kind: kafka\n    brokers: [\"b:1\"]\n"
             "    security: ssl\n"
             "    tls: {ca: nope.pem, cert: client.pem, key_password: x, kee: y}\n", 0, &e);
    EXPECT_ERR(&e, 6, 15, "connections.k: tls.ca: cannot read ");
    CHECK(any_contains(&e, "/nope.pem: No such file or directory"));
    EXPECT_ERR(&e, 6, 31, "connections.k: tls.cert and tls.key go together: add tls.key");
    EXPECT_ERR(&e, 6, 57, "connections.k: tls.key_password needs tls.key");
    EXPECT_ERR(&e, 6, 60, "unknown key 'kee' in connections.k.tls (did you mean 'key'?)");
    CHECK(e.n == 4);
    c = load("connections:\n  k:\n    kind: kafka\n    brokers: [\"b:1\"]\n"
             "    security: ssl\n    tls: {ca: .}\n", 0, &e);
    EXPECT_ERR(&e, 6, 15, "is not a regular file");

    /* Properties. */
    c = load("connections:\n  k:\n    kind: kafka\n    brokers: [\"b:1\"]\n"
             "    properties:\n"
             "      bootstrap.servers: x\n"                   /* 6 */
             "      Group.Id: g\n"                            /* 7 */
             "      auto.offset.reset: earliest\n"            /* 8 */
             "      enable.auto.commit: true\n"               /* 9 */
             "      ssl.key.password: p\n"                    /* 10 */
             "      fetch.max.bytes: {a: 1}\n"                /* 11 */
             "      \"bad key\": 1\n"                         /* 12 */
             "      fetch.min.bytes: 1\n"                     /* 13 */
             "      fetch.min.bytes: 2\n"                     /* 14 */
             "      client.id:\n", 0, &e);                    /* 15 */
    EXPECT_ERR(&e, 6, 7, "properties: bootstrap.servers is set by zx: use `brokers`");
    EXPECT_ERR(&e, 7, 7, "properties: Group.Id is set by zx: use the pipeline's `group`");
    EXPECT_ERR(&e, 8, 7, "properties: auto.offset.reset is set by zx: use the pipeline's `start`");
    EXPECT_ERR(&e, 9, 7, "properties: enable.auto.commit is set by zx: zx commits offsets itself");
    EXPECT_ERR(&e, 10, 7, "properties: ssl.key.password is set by zx: use `tls.key_password`");
    EXPECT_ERR(&e, 11, 24, "properties.fetch.max.bytes: expected a single value "
               "(text, number or boolean), got a mapping");
    EXPECT_ERR(&e, 12, 7, "properties: 'bad key' is not a property name");
    EXPECT_ERR(&e, 14, 7, "properties: duplicate property 'fetch.min.bytes' (first "
               "written at line 13, column 7)");
    EXPECT_ERR(&e, 15, 17, "properties.client.id: expected a single value");
    CHECK(e.n == 9);
    c = load("connections:\n  k: {kind: kafka, brokers: [\"b:1\"], properties: [a]}\n", 0, &e);
    EXPECT_ERR(&e, 2, 50, "properties: expected a mapping of property names to values");

    /* Secrets never appear in messages: sasl.password, tls.key_password and
     * secret properties, literal or from the environment. */
    setenv("ZX_T_CTRL", "bad\001SECRETVALUE", 1);
    c = load("connections:\n  k:\n    kind: kafka\n    brokers: [\"b:1\"]\n"
             "    security: sasl_ssl\n"
             "    sasl: {mechanism: PLAIN, username: u, password: \"bad\\x01SECRETVALUE\"}\n"
             "    tls: {key_password: \"${env:ZX_T_CTRL}\", cert: client.pem, key: client.key}\n"
             "    properties:\n"
             "      sasl.oauthbearer.client.secret: \"x\\x02SECRETVALUE\"\n"
             "      ssl.keystore.password: ${env:ZX_T_CTRL}\n"
             "      other: \"SECRETVALUE-not\\x03\"\n", 0, &e);
    EXPECT_ERR(&e, 6, 53, "password must be text without control characters");
    EXPECT_ERR(&e, 7, 25, "key_password must be text without control characters");
    EXPECT_ERR(&e, 9, 39, "properties.sasl.oauthbearer.client.secret must be text "
               "without control characters");
    EXPECT_ERR(&e, 10, 30, "properties.ssl.keystore.password must be text without "
               "control characters");
    EXPECT_ERR(&e, 11, 14, "properties.other must be text without control characters");
    CHECK(e.n == 5);
    CHECK(!any_contains(&e, "SECRETVALUE"));
    zx_conf_errors_free(&e);
}

/* Rings: only http pipelines have a request (and reply) ring, and the
 * budget counts only what each takes. */
static void test_kafka_rings(void)
{
    const char *conn = "connections:\n  k: {kind: kafka, brokers: [\"b:1\"]}\n"
                       "server: {ring_size: 64MiB, ring_budget: 256MiB}\n";
    zx_conf_errors e = {0};
    zx_conf *c;
    char buf[1024];

    snprintf(buf, sizeof(buf), "%spipelines:\n"
             "  a: {direction: stream, source: kafka, connection: k, topic: a}\n"
             "  b: {direction: stream, source: kafka, connection: k, topic: b}\n"
             "  c: {direction: stream, source: kafka, connection: k, topic: c}\n", conn);
    c = load(buf, 0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        CHECK(c->ring_bytes == 3 * ZX_SEG_MAX_BYTES(0, 64u << 20));
        CHECK(c->pipelines[2].in_ring_size == 0);
    }
    zx_conf_free(c);
    snprintf(buf, sizeof(buf), "%spipelines:\n"
             "  a: {direction: stream, source: http, key: k}\n"
             "  b: {direction: stream, source: http, key: k}\n"
             "  c: {direction: stream, source: http, key: k}\n", conn);
    c = load(buf, 0, &e);
    CHECK(c == NULL);
    CHECK(any_contains(&e, "the rings of 3 pipelines need"));
    zx_conf_errors_free(&e);
}

static void test_kafka_same(void)
{
    char *text = kafka_text(), *t2 = NULL;
    zx_conf_errors e = {0};
    zx_conf *c1, *c2 = NULL;

    kafka_env();
    c1 = load(text, 0, &e);
    CHECK(c1 != NULL);
    dump(&e);
    if (!c1)
        goto out;
#define SAME_AFTER(from, to, same_clicks, same_web) do {                    \
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
              == (same_clicks));                                            \
        CHECK(zx_conf_pipeline_same(&c1->pipelines[1], &c2->pipelines[1])   \
              == (same_web));                                               \
    } while (0)

    SAME_AFTER("connections:\n", "# moved\n\nconnections:\n", 1, 1);
    SAME_AFTER("  clicks:\n", "\n\n  clicks:\n", 1, 1);
    if (c2)
        CHECK(c2->pipelines[0].line != c1->pipelines[0].line &&
              zx_conf_connection_same(c1->pipelines[0].conn, c2->pipelines[0].conn));
    SAME_AFTER("topic: clicks", "topic: clicks2", 0, 1);
    SAME_AFTER("topic: clicks", "topics: [clicks]", 1, 1);   /* the same list */
    SAME_AFTER("topic: clicks", "topics: [clicks, other]", 0, 1);
    SAME_AFTER("topic: clicks", "topics: \"^clicks\"", 0, 1);
    SAME_AFTER("group: zx-clicks", "group: zx-other", 0, 1);
    SAME_AFTER("    group: zx-clicks\n", "", 0, 1);
    SAME_AFTER("start: oldest", "start: new", 0, 1);
    SAME_AFTER("_timestamp, ", "", 0, 1);
    SAME_AFTER("\"[::1]:9095\"", "\"[::1]:9096\"", 0, 1);
    SAME_AFTER("SCRAM-SHA-512", "SCRAM-SHA-256", 0, 1);
    SAME_AFTER("\"52428800\"", "\"52428801\"", 0, 1);
    SAME_AFTER(", queued.min.messages: 1000", "", 0, 1);
    SAME_AFTER("ca: ca.pem", "ca: client.pem", 0, 1);
    SAME_AFTER("pipelines:\n", "  other: {kind: kafka, brokers: [\"o:1\"]}\npipelines:\n", 1, 1);
    zx_conf_free(c2);
    c2 = NULL;
    /* A connection's secret changes: its pipelines restart. */
    setenv("ZX_T_KPASS", "new pass", 1);
    c2 = load(text, 0, &e);
    CHECK(c2 != NULL);
    if (c2) {
        CHECK(!zx_conf_pipeline_same(&c1->pipelines[0], &c2->pipelines[0]));
        CHECK(zx_conf_pipeline_same(&c1->pipelines[1], &c2->pipelines[1]));
        CHECK(!zx_conf_connection_same(&c1->connections[0], &c2->connections[0]));
    }
    CHECK(zx_conf_connection_same(NULL, NULL));
    CHECK(!zx_conf_connection_same(&c1->connections[0], NULL));
    CHECK(zx_conf_connection_same(&c1->connections[0], &c1->connections[0]));
    /* A pipeline pointed at another connection with the same settings. */
    zx_conf_free(c2);
    c2 = load("connections:\n  k1: {kind: kafka, brokers: [\"b:1\"]}\n"
              "  k2: {kind: kafka, brokers: [\"b:1\"]}\n"
              "pipelines:\n"
              "  a: {direction: stream, source: kafka, connection: k1, topic: t}\n"
              "  b: {direction: stream, source: kafka, connection: k2, topic: t}\n",
              0, &e);
    CHECK(c2 != NULL);
    if (c2)
        CHECK(!zx_conf_pipeline_same(&c2->pipelines[0], &c2->pipelines[1]));
#undef SAME_AFTER
out:
    zx_conf_free(c1);
    zx_conf_free(c2);
    free(t2);
    free(text);
    zx_conf_errors_free(&e);
}

/* format: debezium, mode: latest and encoding: avro on kafka and http
 * streams, and what they refuse. */
static void test_change_streams(void)
{
    zx_conf_errors e = {0};
    char buf[4096];
    static const char head[] = "connections:\n  k: {kind: kafka, brokers: [\"127.0.0.1:9092\"]}\n";
    snprintf(buf, sizeof(buf), "%spipelines:\n"
             "  inv: {direction: stream, source: kafka, connection: k, topics: \"^db\\\\..*\",\n"
             "        format: debezium, table: \"m_{source.table}\", history: true}\n"
             "  av: {direction: stream, source: kafka, connection: k, topic: t, format: debezium,\n"
             "       encoding: avro, schema_registry: {url: \"http://127.0.0.1:8081\", wire: apicurio,\n"
             "       username: u, password: p}}\n"
             "  prices: {direction: stream, source: http, key: k123, mode: latest,\n"
             "           key_columns: [sku], history: true}\n", head);
    zx_conf *c = load(buf, 0, &e);
    CHECK(c != NULL);
    if (!c)
        dump(&e);
    if (c) {
        const zx_conf_pipeline *p = zx_conf_find(c, "inv");
        CHECK(p && p->format == ZX_FORMAT_DEBEZIUM && !strcmp(p->table, "m_{source.table}"));
        CHECK(p && p->history == 1 && p->stream_mode == ZX_STREAM_APPEND);
        p = zx_conf_find(c, "av");
        const zx_kafka_opts *k = kopts(p);
        CHECK(p && k->encoding == ZX_ENC_AVRO && k->registry_wire == 1 && k->registry_url &&
              !strcmp(k->registry_url, "http://127.0.0.1:8081") && k->registry_password &&
              !strcmp(k->registry_password, "p") && k->registry_username &&
              !strcmp(k->registry_username, "u"));
        p = zx_conf_find(c, "prices");
        CHECK(p && p->stream_mode == ZX_STREAM_LATEST && p->nkey_columns == 1 &&
              !strcmp(p->key_columns[0], "sku") && p->format == ZX_FORMAT_JSON);
        zx_conf_free(c);
    }
    static const struct {
        const char *pipe, *err;
    } bad[] = {
        {"source: http, key: k123, mode: latest", "mode: latest needs key_columns"},
        {"source: http, key: k123, key_columns: [a]", "key_columns applies only to mode: latest"},
        {"source: http, key: k123, history: true", "history applies only to mirrors"},
        {"source: http, key: k123, table: \"{source.table}\"", "need format: debezium"},
        {"source: http, key: k123, format: debezium, table: \"{source.tabel}\"",
         "unknown placeholder"},
        {"source: http, key: k123, format: debezium, table: \"a-{source.table}\"",
         "not a table name template"},
        {"source: http, key: k123, format: debezium, mode: latest, key_columns: [a]",
         "format: debezium keeps mirrors already"},
        {"source: http, key: k123, format: debezium, metadata: [_ingested_at]",
         "metadata columns are for appended rows"},
        {"source: http, key: k123, encoding: avro", "encoding applies only to source: kafka"},
        {"source: http, key: k123, schema_registry: {url: \"http://x\"}",
         "pipelines.s: schema_registry applies only to source: kafka"},
        {"source: kafka, connection: k, topic: t, schema_registry: {url: \"http://x\"}",
         "schema_registry applies only to encoding: avro"},
        {"source: kafka, connection: k, topic: t, encoding: avro", "applies only to format: debezium"},
        {"source: kafka, connection: k, topic: t, format: debezium, encoding: avro",
         "needs schema_registry.url"},
        {"source: kafka, connection: k, topic: t, format: debezium, encoding: avro, "
         "schema_registry: {url: \"ftp://x\"}", "must start with http://"},
        {"source: kafka, connection: k, topic: t, format: debezium, encoding: avro, "
         "schema_registry: {url: \"http://x\", username: u}", "both username and password"},
        {"source: kafka, connection: k, topic: t, format: protobuf", "format"},
        {"source: postgres, connection: k, tables: [t], format: debezium",
         "format applies only to source"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(buf, sizeof(buf), "%spipelines:\n  s: {direction: stream, %s}\n", head,
                 bad[i].pipe);
        c = load(buf, 0, &e);
        CHECK(c == NULL);
        zx_conf_free(c);
        EXPECT_SUB(bad[i].err);
    }
    /* two templates whose names could meet; apart when neither fixed
     * start begins the other */
    static const struct {
        const char *a, *b, *err;
    } pairs[] = {
        {"{source.table}", "{source.db}_{source.table}", "begins with a placeholder"},
        {"m_{source.table}", "M_{source.db}", "begins with 'm_'"},
        {"m_{source.table}", "m_x_{source.table}", "begins with 'm_'"},
        {"{source.table}", "{source.table}", "already written by pipeline a"},
        {"a_{source.table}", "b_{source.table}", NULL},
        {"ab_{source.table}", "ac{topic}", NULL},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        snprintf(buf, sizeof(buf), "%spipelines:\n"
                 "  a: {direction: stream, source: kafka, connection: k, topic: t1,\n"
                 "      format: debezium, table: \"%s\"}\n"
                 "  b: {direction: stream, source: kafka, connection: k, topic: t2,\n"
                 "      format: debezium, table: \"%s\"}\n", head, pairs[i].a, pairs[i].b);
        c = load(buf, 0, &e);
        CHECK((c == NULL) == (pairs[i].err != NULL));
        if (c && pairs[i].err == NULL)
            zx_conf_free(c);
        else if (!c && pairs[i].err)
            EXPECT_SUB(pairs[i].err);
        else {
            fprintf(stderr, "pair %zu: %s / %s\n", i, pairs[i].a, pairs[i].b);
            dump(&e);
            zx_conf_free(c);
        }
    }
    zx_conf_errors_free(&e);
}

int main(int argc, char **argv)
{
    if (cfg_test_init(argc, argv) != 0)
        return 2;
    test_kafka();
    test_kafka_errors();
    test_kafka_rings();
    test_kafka_same();
    test_change_streams();
    return cfg_test_finish("test_config_kafka");
}
