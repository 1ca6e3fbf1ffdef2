/*
 * test_config.c — unit tests of the YAML configuration loader (conf/).
 *
 * Covers: the committed example loads with absolute paths and defaults;
 * every error class gives its file:line:column message; all errors of a file
 * are reported; ${env:} and ${file:} references, whole or inside longer
 * values, the $${ escape, and that a resolved value never appears in an
 * error; connections and `source: kafka` (fields, each rule's message,
 * secrets, rings); `workspace.postgres` (defaults, its rules, the dsn's
 * password never shown); connections of kind postgres and `source:
 * postgres` (defaults, derived slot and publication, mirror names, every
 * refusal, the duplicate mirror error, one slot per database);
 * zx_conf_pipeline_same and zx_conf_connection_same;
 * conf/OPTIONS.md equals zx_conf_write_reference's output.
 *
 * Finding the source tree (for conf/OPTIONS.md and conf/zx.example.yaml):
 * argv[1] if given, else $ZX_SOURCE_ROOT, else derived from __FILE__ (meson
 * compiles with a path relative to the build directory, where `meson test`
 * runs the test).
 *
 * `test_config --print-reference` prints the reference: regenerate with
 *     build/tests/unit/test_config --print-reference > conf/OPTIONS.md
 *
 * Temporary files go to a mkdtemp directory, removed at the end.  It must
 * never: depend on timing, or on files outside that directory and the
 * source tree.
 */
#define ZX_CONF_INTERNAL        /* the value parsers, for test_numbers() */
#include "conf/config.h"
#include "conf/values.h"
#include "conf/plugin.h"
#include "common/segment.h"     /* ZX_SEG_MAX_BYTES, for the ring sizes */
#include "workers/sources/http/http_opts.h" /* the sources' own options */
#include "workers/sources/kafka/kafka_opts.h"
#include "workers/sources/postgres/postgres_opts.h"
#include "workers/destinations/files/files_opts.h" /* a destination's own options */
#include "workers/syncs/sync_opts.h" /* a reverse sync's own options */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* p's http options (http_opts.h), or all-zero ones for another source. */
static const zx_http_opts *HO(const zx_conf_pipeline *p)
{
    static const zx_http_opts none;
    const zx_http_opts *o = zx_http_opts_of(p);

    return o ? o : &none;
}

static int failures;
static char tmpdir[64];
static char srcroot[4096];

#define CHECK(c) do {                                                     \
        if (!(c)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,        \
                    __LINE__, #c);                                        \
            failures++;                                                   \
        }                                                                 \
    } while (0)

#define CHECK_STR(a, b) do {                                              \
        const char *a_ = (a), *b_ = (b);                                  \
        if (!a_ || !b_ || strcmp(a_, b_)) {                               \
            fprintf(stderr, "%s:%d: check failed: %s == \"%s\" (got "     \
                    "\"%s\")\n", __FILE__, __LINE__, #a, b_ ? b_ : "NULL",\
                    a_ ? a_ : "NULL");                                    \
            failures++;                                                   \
        }                                                                 \
    } while (0)

static const char *tpath(const char *name)
{
    static char buf[4][256];
    static int k;

    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(tpath(name), "w");

    if (!f || fputs(text, f) < 0) {
        fprintf(stderr, "%s:%d: cannot write %s\n", __FILE__, __LINE__, name);
        exit(2);
    }
    fclose(f);
}

/* Write `text` to t.yaml and load it. */
/* The own options of kafka pipeline p (a zeroed struct for another
 * source's, or NULL, so that a failed CHECK does not crash). */
static const zx_kafka_opts *kopts(const zx_conf_pipeline *p)
{
    static const zx_kafka_opts none;
    return p && p->own && p->source && !strcmp(p->source, "kafka") ? p->own : &none;
}

static zx_conf *load(const char *text, unsigned flags, zx_conf_errors *e)
{
    zx_conf_errors_free(e);
    write_file("t.yaml", text);
    return zx_conf_load(tpath("t.yaml"), flags, e);
}

static void dump(const zx_conf_errors *e)
{
    size_t i;

    for (i = 0; i < e->n; i++)
        fprintf(stderr, "    got: %s\n", e->msgs[i]);
}

/* Some message is "<t.yaml>:line:col: ..." and contains `sub`. */
static int has_err(const zx_conf_errors *e, int line, int col, const char *sub)
{
    char pre[320];
    size_t i;

    snprintf(pre, sizeof(pre), "%s:%d:%d: ", tpath("t.yaml"), line, col);
    for (i = 0; i < e->n; i++)
        if (!strncmp(e->msgs[i], pre, strlen(pre)) && strstr(e->msgs[i], sub))
            return 1;
    return 0;
}

#define EXPECT_ERR(e, l, c, sub) do {                                     \
        if (!has_err(e, l, c, sub)) {                                     \
            fprintf(stderr, "%s:%d: missing error %d:%d: %s\n", __FILE__, \
                    __LINE__, l, c, sub);                                 \
            dump(e);                                                      \
            failures++;                                                   \
        }                                                                 \
    } while (0)

static int any_contains(const zx_conf_errors *e, const char *sub)
{
    size_t i;

    for (i = 0; i < e->n; i++)
        if (strstr(e->msgs[i], sub))
            return 1;
    return 0;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0;

    if (!f)
        return NULL;
    FILE *m = open_memstream(&buf, &len);
    int ch;
    while ((ch = fgetc(f)) != EOF)
        fputc(ch, m);
    fclose(m);
    fclose(f);
    return buf;
}

/* First of: argv[1], $ZX_SOURCE_ROOT, the prefix of __FILE__ before
 * tests/unit/test_config.c, ".", "..", that holds conf/OPTIONS.md. */
static void find_srcroot(int argc, char **argv)
{
    const char *suffix = "tests/unit/test_config.c";
    size_t fl = strlen(__FILE__), sl = strlen(suffix), i;
    char from_file[4096] = "", probe[4200];
    const char *cands[5];

    if (fl >= sl && !strcmp(__FILE__ + fl - sl, suffix))
        snprintf(from_file, sizeof(from_file), "%.*s", (int)(fl - sl), __FILE__);
    cands[0] = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
    cands[1] = getenv("ZX_SOURCE_ROOT");
    cands[2] = from_file[0] ? from_file : NULL;
    cands[3] = ".";
    cands[4] = "..";
    for (i = 0; i < 5; i++) {
        if (!cands[i] || !*cands[i])
            continue;
        snprintf(probe, sizeof(probe), "%s/conf/OPTIONS.md", cands[i]);
        if (access(probe, R_OK) == 0 || i < 2) {
            snprintf(srcroot, sizeof(srcroot), "%s", cands[i]);
            return;
        }
    }
    snprintf(srcroot, sizeof(srcroot), ".");
}

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
    EXPECT_ERR(&e, 2, 13, "'${env:A' is not a valid reference: write ${env:NAME} "
               "or ${file:PATH}, or $${ for a literal ${");
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
    }
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

/* Column (1-based) just after the first `tok` on line `line` (1-based) of
 * text: where the value written after tok starts.  0 when not found. */
static int col_after(const char *text, int line, const char *tok)
{
    const char *l = text, *nl, *at;

    for (int i = 1; l && i < line; i++) {
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    if (!l)
        return 0;
    nl = strchr(l, '\n');
    at = strstr(l, tok);
    if (!at || (nl && at > nl))
        return 0;
    return (int)(at - l) + (int)strlen(tok) + 1;
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
              "aws, mysql, sqlite (did you mean 'postgres'?)");
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

/* Reverse syncs: a whole valid file (authors, tokens, connections of
 * every destination kind, a sync of each destination), then each mistake
 * an operator makes, with its message. */
static int has_sub(const zx_conf_errors *e, const char *sub)
{
    for (size_t i = 0; i < e->n; i++)
        if (strstr(e->msgs[i], sub))
            return 1;
    return 0;
}

#define EXPECT_SUB(sub) do {                                                   \
        if (!has_sub(&e, sub)) {                                               \
            fprintf(stderr, "%s:%d: missing error: %s\n", __FILE__, __LINE__,  \
                    sub);                                                      \
            dump(&e);                                                          \
            failures++;                                                        \
        }                                                                      \
    } while (0)

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
    find_srcroot(argc, argv);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/zx_test_config_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    test_example();
    test_values();
    test_errors();
    test_numbers();
    test_many_errors();
    test_yaml_limits();
    test_secrets();
    test_references();
    test_postgres();
    test_same();
    test_kafka();
    test_kafka_errors();
    test_kafka_rings();
    test_kafka_same();
    test_pg_cdc();
    test_pg_cdc_errors();
    test_pg_cdc_same();
    test_syncs();
    test_stream_no_destination();
    test_files_roots();
    test_change_streams();
    test_webhook_secret();
    test_reference();
    unlink(tpath("t.yaml"));
    unlink(tpath("web.key"));
    unlink(tpath("bad.key"));
    unlink(tpath("ca.pem"));
    unlink(tpath("client.pem"));
    unlink(tpath("client.key"));
    rmdir(tmpdir);
    if (failures)
        fprintf(stderr, "test_config: %d check(s) failed\n", failures);
    else
        printf("test_config: all checks passed\n");
    return failures ? 1 : 0;
}
