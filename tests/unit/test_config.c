/*
 * test_config.c — unit tests of the YAML configuration loader (conf/)
 * itself.
 *
 * Covers: the committed example loads with absolute paths and defaults;
 * the value parsers never wrap; every error class gives its
 * file:line:column message; all errors of a file are reported; nesting and
 * alias limits; ${env:} and ${file:} references, whole or inside longer
 * values, the $${ escape, and that a resolved value never appears in an
 * error; zx_conf_pipeline_same; a stream refuses a reverse sync's options;
 * an http stream's webhook_secret; conf/OPTIONS.md equals
 * zx_conf_write_reference's output.
 *
 * The loader's other sections have their own tests: test_config_kafka.c
 * (connections and source: kafka, change streams), test_config_pg.c
 * (workspace.postgres and source: postgres), test_config_syncs.c (reverse
 * syncs and where files destinations may write); config_testlib.h holds
 * what they share.
 *
 * `test_config --print-reference` prints the reference: regenerate with
 *     build/tests/unit/test_config --print-reference > conf/OPTIONS.md
 *
 * How the source tree is found (for conf/OPTIONS.md and
 * conf/zx.example.yaml) and where temporary files go: config_testlib.h.
 * It must never: depend on timing, or on files outside its temporary
 * directory and the source tree.
 */
#define ZX_CONF_INTERNAL        /* the value parsers, for test_numbers() */
#include "config_testlib.h"
#include "conf/config.h"
#include "conf/values.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_example(void)
{
    zx_conf_errors e = {0};
    char path[4200], want[300];
    char *text;
    zx_conf *c;
    const zx_conf_pipeline *p;

    snprintf(path, sizeof(path), "%s/conf/zx.example.yaml", srcroot);
    text = read_all(path);
    CHECK(text != NULL);
    if (!text) {
        fprintf(stderr, "    cannot read %s (set ZX_SOURCE_ROOT)\n", path);
        return;
    }
    setenv("ZX_WEB_EVENTS_KEY", "k-123_secret", 1);
    c = load(text, 0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        snprintf(want, sizeof(want), "%s/var", tmpdir);
        CHECK_STR(c->data_dir, want);
        snprintf(want, sizeof(want), "%s/var/zxd.sock", tmpdir);
        CHECK_STR(c->control_socket, want);
        snprintf(want, sizeof(want), "%s/var/workspace.db", tmpdir);
        CHECK_STR(c->sqlite_path, want);
        CHECK_STR(c->base_dir, tmpdir);
        CHECK_STR(c->path, tpath("t.yaml"));
        CHECK(c->control_group == NULL);
        CHECK_STR(c->log_level, "info");
        CHECK_STR(c->http.listen, "127.0.0.1:8780");
        CHECK_STR(c->http.host, "127.0.0.1");
        CHECK(c->http.port == 8780);
        CHECK(c->http.max_body_size == 16u << 20);
        CHECK(c->http.max_header_size == 64u << 10);
        CHECK(c->http.max_connections == 1024);
        CHECK(c->http.idle_timeout_ms == 60000);
        CHECK(c->http.backpressure_timeout_ms == 2000);
        CHECK(c->http.commit_timeout_ms == 30000);
        CHECK_STR(c->sqlite_synchronous, "normal");
        CHECK(c->ws_kind == ZX_WS_KIND_SQLITE);
        CHECK(c->pg_dsn == NULL && c->pg_dsn_shown == NULL);
        CHECK(c->commit_interval_ms == 20);
        CHECK(c->ring_size == 64u << 20);
        CHECK(c->npipelines == 2);   /* web_events and its export, web_events_csv */
        CHECK(zx_conf_is_sync(zx_conf_find(c, "web_events_csv")));
        CHECK(c->nauthors == 1 && !strcmp(c->authors[0].name, "analyst"));
        p = zx_conf_find(c, "web_events");
        CHECK(p != NULL && p == &c->pipelines[0]);
        CHECK(zx_conf_find(c, "nope") == NULL);
        if (p) {
            CHECK_STR(p->direction, "stream");
            CHECK_STR(p->source, "http");
            CHECK_STR(HO(p)->key, "k-123_secret");
            CHECK_STR(p->table, "web_events");
            CHECK(p->metadata == ZX_META_INGESTED_AT);
            CHECK(HO(p)->ack_commit == 0);
            CHECK(HO(p)->max_body_size == 0);
            CHECK(p->body_limit == 16u << 20);
            CHECK(p->ring_size == 64u << 20);
            CHECK(p->line == 10 && p->column == 3);
        }
    }
    zx_conf_free(c);

    /* Unset variable: an error at the value, naming the variable. */
    unsetenv("ZX_WEB_EVENTS_KEY");
    c = load(text, 0, &e);
    CHECK(c == NULL);
    EXPECT_ERR(&e, 13, 10, "environment variable ZX_WEB_EVENTS_KEY is not set");
    CHECK(e.n == 1);
    /* zxctl: secrets skipped, paths still there. */
    c = load(text, ZX_CONF_SKIP_SECRETS, &e);
    CHECK(c != NULL && e.n == 0);
    if (c) {
        CHECK(HO(&c->pipelines[0])->key == NULL);
        CHECK(c->control_socket != NULL);
    }
    zx_conf_free(c);
    zx_conf_errors_free(&e);
    free(text);
}

static void test_values(void)
{
    zx_conf_errors e = {0};
    char want[300];
    zx_conf *c;

    c = load("server:\n"
             "  data_dir: ../x/./y/\n"
             "  control_socket: /run/zx/ctl.sock\n"
             "  control_group: zx-ops\n"
             "  log_level: debug\n"
             "  ring_size: 1GiB\n"
             "  http:\n"
             "    listen: \"[::1]:0\"\n"
             "    max_body_size: 512KiB\n"
             "    max_header_size: 16384\n"
             "    idle_timeout: 2m\n"
             "    backpressure_timeout: 0\n"
             "    commit_timeout: 500ms\n"
             "workspace:\n"
             "  commit_interval: 1s\n"
             "  sqlite: {path: /srv/ws.db, synchronous: full}\n"
             "pipelines:\n"
             "  click-stream:\n"
             "    direction: stream\n"
             "    source: http\n"
             "    key: abc\n"
             "    ack: commit\n"
             "    metadata: [_request_id, _ingested_at]\n"
             "    max_body_size: 100MB\n"
             "  other: {direction: stream, source: http, key: k, table: Other_T}\n",
             0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        snprintf(want, sizeof(want), "%.*s/x/y",
                 (int)(strrchr(tmpdir, '/') - tmpdir), tmpdir);
        CHECK_STR(c->data_dir, want);
        CHECK_STR(c->control_socket, "/run/zx/ctl.sock");
        CHECK_STR(c->control_group, "zx-ops");
        CHECK_STR(c->log_level, "debug");
        CHECK(c->ring_size == 1u << 30);
        CHECK_STR(c->http.host, "::1");
        CHECK(c->http.port == 0);
        CHECK(c->http.max_body_size == 512u << 10);
        CHECK(c->http.max_header_size == 16384);
        CHECK(c->http.idle_timeout_ms == 120000);
        CHECK(c->http.backpressure_timeout_ms == 0);
        CHECK(c->http.commit_timeout_ms == 500);
        CHECK(c->commit_interval_ms == 1000);
        CHECK_STR(c->sqlite_path, "/srv/ws.db");
        CHECK_STR(c->sqlite_synchronous, "full");
        CHECK(c->npipelines == 2);
        CHECK_STR(c->pipelines[0].name, "click-stream");
        CHECK_STR(c->pipelines[0].table, "click_stream");
        CHECK(HO(&c->pipelines[0])->ack_commit == 1);
        CHECK(c->pipelines[0].metadata == (ZX_META_INGESTED_AT | ZX_META_REQUEST_ID));
        CHECK(HO(&c->pipelines[0])->max_body_size == 100000000u);
        CHECK(c->pipelines[0].body_limit == 100000000u);
        CHECK_STR(c->pipelines[1].table, "Other_T");
        CHECK(c->pipelines[1].body_limit == 512u << 10);
    }
    zx_conf_free(c);

    /* A file with only pipelines: every other section defaults. */
    c = load("pipelines:\n  a:\n    direction: stream\n    source: http\n"
             "    key: k\n", 0, &e);
    CHECK(c != NULL && e.n == 0);
    if (c) {
        snprintf(want, sizeof(want), "%s/var/workspace.db", tmpdir);
        CHECK_STR(c->sqlite_path, want);
    }
    zx_conf_free(c);
    zx_conf_errors_free(&e);
}

/* Numbers never wrap: every decimal parser of conf/values.c on values
 * around 2^64, with units whose multiplication overflows. */
static void test_numbers(void)
{
    uint64_t v;
    const char *p;
    char *host = NULL;
    uint16_t port = 0;
    const char *why = NULL;

    p = "18446744073709551615x";
    CHECK(zx_cf_parse_u64(&p, &v) == 0 && v == UINT64_MAX && *p == 'x');
    p = "18446744073709551616x";                      /* 2^64 */
    v = 7;
    CHECK(zx_cf_parse_u64(&p, &v) == ZX_CF_TOO_BIG && v == 7 && *p == 'x');
    p = "18446744073709551617";                       /* 2^64 + 1 */
    CHECK(zx_cf_parse_u64(&p, &v) == ZX_CF_TOO_BIG && *p == '\0');
    p = "99999999999999999999";
    CHECK(zx_cf_parse_u64(&p, &v) == ZX_CF_TOO_BIG);
    p = "184467440737095516150";                      /* one digit more */
    CHECK(zx_cf_parse_u64(&p, &v) == ZX_CF_TOO_BIG);
    p = "000000000000000000000000000042";             /* zeros are not digits that count */
    CHECK(zx_cf_parse_u64(&p, &v) == 0 && v == 42);
    p = "x1";
    CHECK(zx_cf_parse_u64(&p, &v) == -1 && *p == 'x');

    CHECK(zx_cf_parse_size("18446744073709551615", &v) == 0 && v == UINT64_MAX);
    CHECK(zx_cf_parse_size("18446744073709551615b", &v) == 0 && v == UINT64_MAX);
    CHECK(zx_cf_parse_size("18446744073709551616", &v) == ZX_CF_TOO_BIG);
    CHECK(zx_cf_parse_size("18446744073709551615GiB", &v) == ZX_CF_TOO_BIG);
    CHECK(zx_cf_parse_size("17179869184GiB", &v) == ZX_CF_TOO_BIG);   /* 2^64 */
    CHECK(zx_cf_parse_size("17179869183GiB", &v) == 0 && v == 17179869183ull * GiB);
    CHECK(zx_cf_parse_size("16777216TiB", &v) == ZX_CF_TOO_BIG);
    CHECK(zx_cf_parse_size("18446744073709552KB", &v) == ZX_CF_TOO_BIG);
    CHECK(zx_cf_parse_size("99999999999999999999 MiB", &v) == ZX_CF_TOO_BIG);
    CHECK(zx_cf_parse_size("99999999999999999999 parsecs", &v) == -1);
    CHECK(zx_cf_parse_size("16MiB", &v) == 0 && v == 16 * MiB);

    CHECK(zx_cf_parse_duration("18446744073709551615ms", &v) == 0 && v == UINT64_MAX);
    CHECK(zx_cf_parse_duration("18446744073709551616ms", &v) == ZX_CF_TOO_BIG);
    CHECK(zx_cf_parse_duration("18446744073709551615h", &v) == ZX_CF_TOO_BIG);
    CHECK(zx_cf_parse_duration("5124095576030h", &v) == 0 && v == 5124095576030ull * HOUR);
    CHECK(zx_cf_parse_duration("5124095576031h", &v) == ZX_CF_TOO_BIG);
    CHECK(zx_cf_parse_duration("307445734561826m", &v) == ZX_CF_TOO_BIG);
    CHECK(zx_cf_parse_duration("18446744073709552s", &v) == ZX_CF_TOO_BIG);
    CHECK(zx_cf_parse_duration("99999999999999999999", &v) == -2);   /* no unit */
    CHECK(zx_cf_parse_duration("99999999999999999999 fortnights", &v) == -1);
    CHECK(zx_cf_parse_duration("20ms", &v) == 0 && v == 20);
    CHECK(zx_cf_parse_duration("1h", &v) == 0 && v == HOUR);
    CHECK(zx_cf_parse_duration("0", &v) == 0 && v == 0);

    CHECK(zx_cf_split_listen("127.0.0.1:18446744073709551617", &host, &port, &why) == -1 &&
          host == NULL && why && strstr(why, "0 to 65535"));
    CHECK(zx_cf_split_listen("127.0.0.1:65536", &host, &port, &why) == -1);
    CHECK(zx_cf_split_listen("127.0.0.1:65535", &host, &port, &why) == 0 && port == 65535);
    free(host);

    /* through the loader: refused, naming the value as written */
    zx_conf_errors e = {0};
    zx_conf *c = load("server:\n  http:\n    max_body_size: 18446744073709551615GiB\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_ERR(&e, 3, 20, "max_body_size");
    EXPECT_ERR(&e, 3, 20, "18446744073709551615GiB");
    c = load("server:\n  http:\n    idle_timeout: 99999999999999999999h\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_ERR(&e, 3, 19, "99999999999999999999h");
    c = load("server:\n  http:\n    max_connections: 18446744073709551616\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_ERR(&e, 3, 22, "18446744073709551616");
    c = load("server:\n  http:\n    max_connections: 4294967297\n", 0, &e);  /* 2^32+1 */
    CHECK(c == NULL);
    EXPECT_ERR(&e, 3, 22, "max_connections must be between 1 and 1000000");
    c = load("server:\n  http:\n    idle_timeout: 4294967297ms\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_ERR(&e, 3, 19, "idle_timeout must be between");
    c = load("server:\n  http:\n    listen: 127.0.0.1:18446744073709617316\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_ERR(&e, 3, 13, "the port must be a number from 0 to 65535");
    zx_conf_errors_free(&e);
}

static void test_errors(void)
{
    zx_conf_errors e = {0};
    zx_conf *c;

    /* Unknown key with a suggestion and the allowed list. */
    c = load("server:\n  data_dri: x\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_ERR(&e, 2, 3, "unknown key 'data_dri' in server (did you mean 'data_dir'?)");
    EXPECT_ERR(&e, 2, 3, "allowed: data_dir, control_socket");
    c = load("pipeline:\n  a: {}\n", 0, &e);
    EXPECT_ERR(&e, 1, 1, "unknown section 'pipeline' (did you mean 'pipelines'?)");
    c = load("pipelines:\n  a: {direction: stream, source: http, key: k, tabel: t}\n",
             0, &e);
    EXPECT_ERR(&e, 2, 48, "unknown key 'tabel' in pipeline a (did you mean 'table'?)");

    /* Wrong types. */
    c = load("server:\n  http:\n    max_body_size: abc\n", 0, &e);
    EXPECT_ERR(&e, 3, 20, "expected an integer or a size like 16MiB");
    EXPECT_ERR(&e, 3, 20, "got 'abc'");
    c = load("server:\n  http:\n    idle_timeout: 60\n", 0, &e);
    EXPECT_ERR(&e, 3, 19, "a number needs a unit");
    c = load("server:\n  http:\n    max_connections: 0\n", 0, &e);
    EXPECT_ERR(&e, 3, 22, "max_connections must be between 1 and 1000000");
    c = load("server:\n  http: [a]\n", 0, &e);
    EXPECT_ERR(&e, 2, 9, "server.http must be a mapping");
    c = load("server:\n  data_dir: {a: 1}\n", 0, &e);
    EXPECT_ERR(&e, 2, 13, "data_dir: expected a single value, got a mapping");
    c = load("server:\n  log_level:\n", 0, &e);
    EXPECT_ERR(&e, 2, 13, "log_level has no value");
    c = load("server:\n  http:\n    listen: 8780\n", 0, &e);
    EXPECT_ERR(&e, 3, 13, "listen: expected host:port");

    /* Invalid enum values, with a suggestion. */
    c = load("server:\n  log_level: verbose\n", 0, &e);
    EXPECT_ERR(&e, 2, 14, "invalid log_level 'verbose': expected one of: debug, info, warn, error");
    c = load("pipelines:\n  a:\n    direction: streem\n    source: http\n    key: k\n",
             0, &e);
    EXPECT_ERR(&e, 3, 16, "did you mean 'stream'?");

    /* Missing required field, at the pipeline's name. */
    c = load("pipelines:\n  web_events:\n    direction: stream\n    source: http\n",
             0, &e);
    EXPECT_ERR(&e, 2, 3, "pipeline web_events: missing required field 'key'");
    CHECK(e.n == 1);

    /* Duplicate pipeline, duplicate key. */
    c = load("pipelines:\n  a: {direction: stream, source: http, key: k}\n"
             "  a: {direction: stream, source: http, key: k}\n", 0, &e);
    EXPECT_ERR(&e, 3, 3, "duplicate pipeline 'a' (first defined at line 2, column 3)");
    c = load("server:\n  data_dir: a\n  data_dir: b\n", 0, &e);
    EXPECT_ERR(&e, 3, 3, "duplicate key 'data_dir' (first written at line 2, column 3)");

    /* Pipeline names and tables. */
    c = load("pipelines:\n  Web:\n    {direction: stream, source: http, key: k}\n",
             0, &e);
    EXPECT_ERR(&e, 2, 3, "invalid pipeline name 'Web'");
    c = load("pipelines:\n  a: {direction: stream, source: http, key: k, table: x__rejects}\n"
             "  b: {direction: stream, source: http, key: k, table: _ZX_b}\n"
             "  c: {direction: stream, source: http, key: k, table: 9c}\n"
             "  d: {direction: stream, source: http, key: k, table: B}\n"
             "  e: {direction: stream, source: http, key: k, table: b}\n", 0, &e);
    EXPECT_ERR(&e, 2, 55, "reserved for zx's own tables");
    EXPECT_ERR(&e, 3, 55, "reserved for zx's own tables");
    EXPECT_ERR(&e, 4, 55, "not a valid table name");
    EXPECT_ERR(&e, 6, 3, "pipeline e: table 'b' is already written by pipeline d (line 5)");
    CHECK(e.n == 4);

    /* YAML syntax error, empty file, top level not a mapping, 2 documents. */
    c = load("server:\n  data_dir: [unclosed\n", 0, &e);
    EXPECT_ERR(&e, 3, 1, "YAML syntax error: did not find expected ',' or ']'");
    c = load("server:\n  data_dir: x\n bad: 1\n", 0, &e);
    EXPECT_ERR(&e, 3, 2, "YAML syntax error");
    c = load("", 0, &e);
    EXPECT_ERR(&e, 1, 1, "the file is empty");
    c = load("# nothing here\n", 0, &e);
    EXPECT_ERR(&e, 1, 1, "the file is empty");
    c = load("- server\n- pipelines\n", 0, &e);
    EXPECT_ERR(&e, 1, 1, "the top level must be a mapping");
    c = load("just words\n", 0, &e);
    EXPECT_ERR(&e, 1, 1, "the top level must be a mapping");
    c = load("server: {}\n---\nserver: {}\n", 0, &e);
    EXPECT_ERR(&e, 2, 1, "a second YAML document");
    c = load("server:\n  data_dir: \"\xff\"\n", 0, &e);
    EXPECT_ERR(&e, 2, 14, "the file must be UTF-8");

    /* A missing file: no position. */
    zx_conf_errors_free(&e);
    c = zx_conf_load(tpath("nope.yaml"), 0, &e);
    CHECK(c == NULL && e.n == 1);
    CHECK(e.n == 1 && strstr(e.msgs[0], "nope.yaml: cannot open: "));

    /* Ring too small for the body limits. */
    c = load("server:\n  http:\n    max_body_size: 40MiB\n", 0, &e);
    EXPECT_ERR(&e, 3, 20, "ring_size (67108864 bytes) must be at least");
    c = load("server:\n  ring_size: 2MiB\n", 0, &e);
    EXPECT_ERR(&e, 2, 14, "ring_size (2097152 bytes) must be at least");
    c = load("pipelines:\n  big: {direction: stream, source: http, key: k, "
             "max_body_size: 1GiB}\n", 0, &e);
    EXPECT_ERR(&e, 2, 3, "pipeline big: its max_body_size needs a ring_size");

    /* errs may be NULL. */
    write_file("t.yaml", "server: 1\n");
    CHECK(zx_conf_load(tpath("t.yaml"), 0, NULL) == NULL);
    zx_conf_errors_free(&e);
    zx_conf_errors_free(NULL);
    zx_conf_free(NULL);
}

static void test_many_errors(void)
{
    zx_conf_errors e = {0};
    zx_conf *c;

    c = load("server:\n"                          /* 1 */
             "  data_dri: ./var\n"                /* 2 unknown */
             "  log_level: loud\n"                /* 3 enum */
             "  http:\n"                          /* 4 */
             "    max_body_size: big\n"           /* 5 type */
             "  data_dri: x\n"                    /* 6 duplicate */
             "pipelines:\n"                       /* 7 */
             "  a:\n"                             /* 8 missing key */
             "    direction: streem\n"            /* 9 enum */
             "    source: http\n"                 /* 10 */
             "  a:\n"                             /* 11 duplicate */
             "    direction: stream\n", 0, &e);
    CHECK(c == NULL);
    EXPECT_ERR(&e, 2, 3, "unknown key 'data_dri'");
    EXPECT_ERR(&e, 3, 14, "invalid log_level 'loud'");
    EXPECT_ERR(&e, 5, 20, "got 'big'");
    EXPECT_ERR(&e, 6, 3, "duplicate key 'data_dri'");
    EXPECT_ERR(&e, 9, 16, "invalid direction 'streem'");
    EXPECT_ERR(&e, 8, 3, "pipeline a: missing required field 'key'");
    EXPECT_ERR(&e, 11, 3, "duplicate pipeline 'a'");
    CHECK(e.n == 7);
    if (e.n != 7)
        dump(&e);
    zx_conf_errors_free(&e);
}

static void test_secrets(void)
{
    zx_conf_errors e = {0};
    zx_conf *c;

    write_file("web.key", "s3cret-file-key\n");
    c = load("pipelines:\n  a:\n    direction: stream\n    source: http\n"
             "    key: ${file:web.key}\n", 0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c)
        CHECK_STR(HO(&c->pipelines[0])->key, "s3cret-file-key");
    zx_conf_free(c);

    c = load("pipelines:\n  a:\n    direction: stream\n    source: http\n"
             "    key: ${file:missing.key}\n", 0, &e);
    EXPECT_ERR(&e, 5, 10, "cannot read secret file");
    EXPECT_ERR(&e, 5, 10, "missing.key: No such file or directory");
    c = load("pipelines:\n  a:\n    direction: stream\n    source: http\n"
             "    key: ${file:missing.key}\n", ZX_CONF_SKIP_SECRETS, &e);
    CHECK(c != NULL && HO(&c->pipelines[0])->key == NULL);
    zx_conf_free(c);

    /* Bad values never echo the secret. */
    write_file("bad.key", "has space-SECRETVALUE\n");
    c = load("pipelines:\n  a:\n    direction: stream\n    source: http\n"
             "    key: ${file:bad.key}\n", 0, &e);
    EXPECT_ERR(&e, 5, 10, "key must be printable ASCII without spaces");
    CHECK(!any_contains(&e, "SECRETVALUE"));
    c = load("pipelines:\n  a:\n    direction: stream\n    source: http\n"
             "    key: \"literal SECRETVALUE\"\n", 0, &e);
    EXPECT_ERR(&e, 5, 10, "key must be printable ASCII");
    CHECK(!any_contains(&e, "SECRETVALUE"));
    setenv("ZX_TEST_SIZE", "SECRETVALUE", 1);
    c = load("server:\n  http:\n    max_body_size: ${env:ZX_TEST_SIZE}\n", 0, &e);
    EXPECT_ERR(&e, 3, 20, "got the value of ${env:ZX_TEST_SIZE}");
    CHECK(!any_contains(&e, "SECRETVALUE"));
    setenv("ZX_TEST_SIZE", "2MiB", 1);
    c = load("server:\n  http:\n    max_body_size: ${env:ZX_TEST_SIZE}\n", 0, &e);
    CHECK(c != NULL && c->http.max_body_size == 2u << 20);
    zx_conf_free(c);
    setenv("ZX_TEST_EMPTY", "", 1);
    c = load("server:\n  data_dir: ${env:ZX_TEST_EMPTY}\n", 0, &e);
    EXPECT_ERR(&e, 2, 13, "environment variable ZX_TEST_EMPTY is empty");

    /* Malformed references. */
    c = load("server:\n  data_dir: ${env:BAD NAME}\n", 0, &e);
    EXPECT_ERR(&e, 2, 13, "is not a valid reference");
    zx_conf_errors_free(&e);
}

/* References inside longer values, several in one, the $${ escape, values
 * never read again, and what messages show of them. */
static void test_references(void)
{
    zx_conf_errors e = {0};
    zx_conf *c;
    int i;

    setenv("ZX_T_A", "alpha", 1);
    setenv("ZX_T_B", "beta", 1);
    setenv("ZX_T_NESTED", "${env:ZX_T_A}", 1);
    setenv("ZX_T_SECRET", "SECRETVALUE", 1);
    unsetenv("ZX_T_UNSET");
    write_file("part.txt", "from-file\n\n");

    /* env, two references, file, escape, a value never read again */
    c = load("server:\n"
             "  data_dir: /srv/${env:ZX_T_A}/x\n"
             "  control_socket: /run/${env:ZX_T_A}-${env:ZX_T_B}.sock\n"
             "workspace:\n"
             "  sqlite: {path: \"/db/${file:part.txt}.db\"}\n"
             "pipelines:\n"
             "  a:\n"
             "    direction: stream\n    source: http\n"
             "    key: k-${env:ZX_T_NESTED}-$${env:ZX_T_A}-$$x-$x\n", 0, &e);
    CHECK(c != NULL);
    dump(&e);
    if (c) {
        CHECK_STR(c->data_dir, "/srv/alpha/x");
        CHECK_STR(c->control_socket, "/run/alpha-beta.sock");
        CHECK_STR(c->sqlite_path, "/db/from-file.db");
        CHECK_STR(HO(&c->pipelines[0])->key, "k-${env:ZX_T_A}-${env:ZX_T_A}-$$x-$x");
    }
    zx_conf_free(c);
    /* $${ alone, and a reference made only of escapes */
    c = load("workspace:\n  postgres:\n    dsn: host=db1\n"
             "    application_name: \"$${file:x}$${\"\n", 0, &e);
    CHECK(c != NULL);
    if (c)
        CHECK_STR(c->pg_application_name, "${file:x}${");
    zx_conf_free(c);

    /* A missing variable inside a value: named, no value quoted. */
    c = load("server:\n  data_dir: /srv/${env:ZX_T_SECRET}/${env:ZX_T_UNSET}\n",
             0, &e);
    EXPECT_ERR(&e, 2, 13, "environment variable ZX_T_UNSET is not set");
    CHECK(e.n == 1);
    CHECK(!any_contains(&e, "SECRETVALUE"));
    /* A bad value shows the reference as written, not its value. */
    c = load("server:\n  http:\n    max_body_size: \"${env:ZX_T_SECRET}MiB\"\n",
             0, &e);
    EXPECT_ERR(&e, 3, 20, "got the value of '${env:ZX_T_SECRET}MiB'");
    CHECK(!any_contains(&e, "SECRETVALUE"));
    setenv("ZX_T_N", "2", 1);
    c = load("server:\n  http:\n    max_body_size: ${env:ZX_T_N}MiB\n", 0, &e);
    CHECK(c != NULL && c->http.max_body_size == 2u << 20);
    zx_conf_free(c);
    c = load("connections:\n  k: {kind: kafka, brokers: \"b:1,${env:ZX_T_SECRET}\"}\n",
             0, &e);
    EXPECT_ERR(&e, 2, 29, "brokers: expected host:port, like kafka-1:9092, got "
               "the value of 'b:1,${env:ZX_T_SECRET}'");
    CHECK(!any_contains(&e, "SECRETVALUE"));

    /* Malformed references inside a value: each one, quoted only when the
     * option is not secret. */
    c = load("server:\n  data_dir: /srv/${env:BAD NAME}/${enx:A}/${file:}/${env:A\n",
             0, &e);
    EXPECT_ERR(&e, 2, 13, "'${env:BAD NAME}' is not a valid reference");
    EXPECT_ERR(&e, 2, 13, "'${enx:A}' is not a valid reference");
    EXPECT_ERR(&e, 2, 13, "'${file:}' is not a valid reference");
    EXPECT_ERR(&e, 2, 13, "'${env:A' is not a valid reference: write ${env:NAME}, "
               "${file:PATH} or ${secret:NAME}, or $${ for a literal ${");
    CHECK(e.n == 4);
    c = load("pipelines:\n  a:\n    direction: stream\n    source: http\n"
             "    key: SECRETVALUE${oops}\n", 0, &e);
    EXPECT_ERR(&e, 5, 10, "the '${' at byte 12 of the value does not start a "
               "valid reference");
    CHECK(!any_contains(&e, "SECRETVALUE"));
    /* ... checked even when secrets are skipped */
    c = load("pipelines:\n  a:\n    direction: stream\n    source: http\n"
             "    key: x-${env:ZX_T_UNSET}-${oops}\n", ZX_CONF_SKIP_SECRETS, &e);
    EXPECT_ERR(&e, 5, 10, "the '${' at byte 21 of the value does not start");
    c = load("pipelines:\n  a:\n    direction: stream\n    source: http\n"
             "    key: x-${env:ZX_T_UNSET}\n", ZX_CONF_SKIP_SECRETS, &e);
    CHECK(c != NULL && HO(&c->pipelines[0])->key == NULL);
    zx_conf_free(c);

    /* The file rules hold inside a value: a folder is not a regular file, a
     * missing one is named. */
    c = load("server:\n  data_dir: /srv/${file:.}\n", 0, &e);
    EXPECT_ERR(&e, 2, 13, "is not a regular file");
    c = load("server:\n  data_dir: /srv/${file:nope.txt}\n", 0, &e);
    EXPECT_ERR(&e, 2, 13, "nope.txt: No such file or directory");
    /* A value resolves to at most 1 MiB. */
    {
        static char big[60 * 1024 + 1], yaml[1024];
        size_t off;
        memset(big, 'b', sizeof(big) - 1);
        write_file("big.txt", big);
        off = (size_t)snprintf(yaml, sizeof(yaml), "server:\n  control_group: \"");
        for (i = 0; i < 20; i++)
            off += (size_t)snprintf(yaml + off, sizeof(yaml) - off, "${file:big.txt}");
        snprintf(yaml + off, sizeof(yaml) - off, "\"\n");
        c = load(yaml, 0, &e);
        EXPECT_ERR(&e, 2, 18, "the value is longer than 1 MiB once its "
                   "references are resolved");
        CHECK(e.n == 1);
        unlink(tpath("big.txt"));
    }
    /* A NUL byte is refused, not cut. */
    c = load("server:\n  log_level: \"info\\0debug\"\n", 0, &e);
    EXPECT_ERR(&e, 2, 14, "log_level contains a NUL byte");
    unlink(tpath("part.txt"));
    zx_conf_errors_free(&e);
}

static void test_same(void)
{
    const char *base = "pipelines:\n  a: {direction: stream, source: http, key: k}\n"
                       "  b: {direction: stream, source: http, key: k, "
                       "max_body_size: 1MiB}\n";
    zx_conf_errors e = {0};
    zx_conf *c1, *c2;

    c1 = load(base, 0, &e);
    c2 = load(base, 0, &e);
    CHECK(c1 && c2);
    if (!c1 || !c2)
        goto out;
    CHECK(zx_conf_pipeline_same(&c1->pipelines[0], &c2->pipelines[0]));
    CHECK(zx_conf_pipeline_same(&c1->pipelines[1], &c2->pipelines[1]));
    CHECK(!zx_conf_pipeline_same(&c1->pipelines[0], &c2->pipelines[1]));
    CHECK(zx_conf_pipeline_same(NULL, NULL));
    CHECK(!zx_conf_pipeline_same(&c1->pipelines[0], NULL));
    zx_conf_free(c2);
    /* Server body limit changes a, not b (which has its own). */
    c2 = load("server: {http: {max_body_size: 2MiB}}\n" "pipelines:\n"
              "  a: {direction: stream, source: http, key: k}\n"
              "  b: {direction: stream, source: http, key: k, max_body_size: 1MiB}\n",
              0, &e);
    CHECK(c2 != NULL);
    if (c2) {
        CHECK(!zx_conf_pipeline_same(&c1->pipelines[0], &c2->pipelines[0]));
        CHECK(zx_conf_pipeline_same(&c1->pipelines[1], &c2->pipelines[1]));
    }
    zx_conf_free(c2);
    c2 = load("pipelines:\n  a: {direction: stream, source: http, key: k2}\n"
              "  b: {direction: stream, source: http, key: k, max_body_size: 1MiB,"
              " metadata: [_ingested_at]}\n", 0, &e);
    CHECK(c2 != NULL);
    if (c2) {
        CHECK(!zx_conf_pipeline_same(&c1->pipelines[0], &c2->pipelines[0]));
        CHECK(!zx_conf_pipeline_same(&c1->pipelines[1], &c2->pipelines[1]));
    }
out:
    zx_conf_free(c1);
    zx_conf_free(c2);
    zx_conf_errors_free(&e);
}

static void test_reference(void)
{
    char path[4200], *want, *got = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&got, &len);

    zx_conf_write_reference(m);
    fclose(m);
    snprintf(path, sizeof(path), "%s/conf/OPTIONS.md", srcroot);
    want = read_all(path);
    CHECK(want != NULL);
    if (!want)
        fprintf(stderr, "    cannot read %s (set ZX_SOURCE_ROOT)\n", path);
    else if (strcmp(want, got)) {
        fprintf(stderr, "%s:%d: %s differs from zx_conf_write_reference; "
                "regenerate: test_config --print-reference > conf/OPTIONS.md\n",
                __FILE__, __LINE__, path);
        failures++;
    }
    CHECK(strstr(got, "| `max_body_size` | size | `16MiB` |") != NULL);
    free(want);
    free(got);
}

/* A stream takes none of a reverse sync's options: `destination` (its
 * connection and table, or a destination's own sub-section such as
 * files) is refused once, at the sub-section, naming `direction: out`,
 * and so is an option of the sync's such as `query`; a sync takes no
 * source's sub-section (kafka's schema_registry). */
static void test_stream_no_destination(void)
{
    zx_conf_errors e = {0};
    char buf[1024];
    static const char head[] =
        "authors:\n  alice: {tables: [t]}\n"
        "connections:\n  lite: {kind: sqlite, path: dest.db}\n"
        "pipelines:\n";
    static const struct {
        const char *pipe;
        int col;      /* of the error (line 6, the pipeline's) */
        const char *err;
    } bad[] = {
        {"  s: {direction: stream, source: http, key: k123, "
         "destination: {files: {path: var/exports/x, format: csv}}}", 64,
         "pipelines.s: destination applies only to a reverse sync (direction: out)"},
        {"  s: {direction: stream, source: http, key: k123, "
         "destination: {connection: lite, table: t}}", 64,
         "pipelines.s: destination applies only to a reverse sync (direction: out)"},
        {"  s: {direction: stream, source: http, key: k123, "
         "destination: {connection: lite, table: t, files: {path: x, format: csv}}}", 64,
         "pipelines.s: destination applies only to a reverse sync (direction: out)"},
        {"  s: {direction: stream, source: http, key: k123, query: SELECT 1}", 58,
         "pipelines.s: query applies only to a reverse sync (direction: out)"},
        {"  s: {direction: out, author: alice, query: SELECT 1, mode: replace, "
         "destination: {connection: lite, table: t}, schema_registry: {url: \"http://h\"}}",
         130, "pipelines.s: schema_registry applies only to source: kafka"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(buf, sizeof(buf), "%s%s\n", head, bad[i].pipe);
        zx_conf *c = load(buf, 0, &e);
        CHECK(c == NULL);
        zx_conf_free(c);
        EXPECT_ERR(&e, 6, bad[i].col, bad[i].err);
        CHECK(e.n == 1);
        if (e.n != 1)
            dump(&e);
    }
    zx_conf_errors_free(&e);
}

/* webhook_secret: an http stream may have it instead of a key; a bad one
 * is refused without being shown. */
static void test_webhook_secret(void)
{
    zx_conf_errors e = {0};
    zx_conf *c = load("pipelines:\n"
                      "  wh: {direction: stream, source: http,\n"
                      "       webhook_secret: \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"}\n"
                      "  both: {direction: stream, source: http, key: k123,\n"
                      "         webhook_secret: \"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"}\n", 0, &e);
    CHECK(c != NULL);
    if (!c)
        dump(&e);
    if (c) {
        const zx_conf_pipeline *p = zx_conf_find(c, "wh");
        CHECK(p && !HO(p)->key && HO(p)->webhook_secret &&
              !strcmp(HO(p)->webhook_secret, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
        p = zx_conf_find(c, "both");
        CHECK(p && HO(p)->key && HO(p)->webhook_secret);
        zx_conf_free(c);
    }
    static const struct {
        const char *pipe, *err;
    } bad[] = {
        {"source: http", "missing required field 'key' (or 'webhook_secret'"},
        {"source: http, webhook_secret: \"whsec_c2hvcnQtc2VjcmV0\"",
         "webhook_secret: the secret decodes to 12 bytes, not 24 to 64"},
        {"source: http, webhook_secret: \"whsec_%%%%notbase64%%%%\"",
         "webhook_secret: the secret is not base64"},
        {"source: kafka, connection: k, topic: t, "
         "webhook_secret: \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"",
         "webhook_secret applies only to source: http"},
    };
    char buf[1024];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(buf, sizeof(buf), "connections:\n  k: {kind: kafka, brokers: [\"a:1\"]}\n"
                 "pipelines:\n  s: {direction: stream, %s}\n", bad[i].pipe);
        c = load(buf, 0, &e);
        CHECK(c == NULL);
        zx_conf_free(c);
        EXPECT_SUB(bad[i].err);
        for (size_t k = 0; k < e.n; k++)
            CHECK(!strstr(e.msgs[k], "c2hvcnQ") && !strstr(e.msgs[k], "MfKQ9r8"));
    }
    zx_conf_errors_free(&e);
}

/* Nesting, anchors and aliases past the limits of conf/yamlwalk.c are one
 * error at their place, found before libyaml's quadratic loader runs. */
static void test_yaml_limits(void)
{
    zx_conf_errors e = {0};
    size_t cap = 64 * 1024, n;
    char *buf = malloc(cap);
    zx_conf *c;

    CHECK(buf != NULL);
    if (!buf)
        return;
    /* 64 levels: the root mapping and 63 flow sequences; then 65 */
    for (int deeper = 0; deeper <= 1; deeper++) {
        n = (size_t)snprintf(buf, cap, "a: ");
        for (int i = 0; i < 63 + deeper; i++)
            buf[n++] = '[';
        for (int i = 0; i < 63 + deeper; i++)
            buf[n++] = ']';
        buf[n] = '\0';
        c = load(buf, 0, &e);
        CHECK(c == NULL && has_sub(&e, "nesting deeper") == deeper);
    }
    CHECK(e.n == 1);
    EXPECT_ERR(&e, 1, 4 + 63, "nesting deeper than 64 levels");
    n = (size_t)snprintf(buf, cap, "a: [");
    for (int i = 0; i < 1001; i++)
        n += (size_t)snprintf(buf + n, cap - n, "&a%d 1, ", i);
    snprintf(buf + n, cap - n, "]\n");
    c = load(buf, 0, &e);
    CHECK(c == NULL && e.n == 1 && has_sub(&e, "more than 1000 anchors (&name)"));
    n = (size_t)snprintf(buf, cap, "a: [&a 1");
    for (int i = 0; i < 10001; i++)
        n += (size_t)snprintf(buf + n, cap - n, ", *a");
    snprintf(buf + n, cap - n, "]\n");
    c = load(buf, 0, &e);
    CHECK(c == NULL && e.n == 1 && has_sub(&e, "more than 10000 aliases (*name)"));
    /* a small file that repeats a large anchor through its aliases: 1,000
     * aliases of 1,001 values each are over a million values */
    n = (size_t)snprintf(buf, cap, "x: &a [1");
    for (int i = 0; i < 999; i++)
        n += (size_t)snprintf(buf + n, cap - n, ",1");
    n += (size_t)snprintf(buf + n, cap - n, "]\ny: [*a");
    for (int i = 0; i < 999; i++)
        n += (size_t)snprintf(buf + n, cap - n, ", *a");
    snprintf(buf + n, cap - n, "]\n");
    c = load(buf, 0, &e);
    CHECK(c == NULL && e.n == 1 &&
          has_sub(&e, "more than 1000000 values, counting each alias (*name) as the "
                      "values it repeats"));
    zx_conf_errors_free(&e);
    free(buf);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--print-reference")) {
        zx_conf_write_reference(stdout);
        return 0;
    }
    if (cfg_test_init(argc, argv) != 0)
        return 2;
    test_example();
    test_values();
    test_errors();
    test_numbers();
    test_many_errors();
    test_yaml_limits();
    test_secrets();
    test_references();
    test_same();
    test_stream_no_destination();
    test_webhook_secret();
    test_reference();
    return cfg_test_finish("test_config");
}
