/*
 * test_dest_http.c — unit tests of the HTTP API destination
 * (workers/destinations/http/): its configuration (connection kind http,
 * its header values as secrets, the sub-section destination.http and its
 * mistakes), rows as JSON (every cell type), per-item results, the
 * backoff, Retry-After and the rate's syntax.  The requests themselves
 * are tested end to end (tests/integration/test_sync_http.py).
 *
 * It must never: depend on timing or the network.
 */
#include "config_testlib.h"
#include "conf/config.h"
#include "conf/plugin.h"
#include "workers/destinations/http/dhttp_json.h"
#include "workers/destinations/http/dhttp_opts.h"
#include "workers/destinations/http/dhttp_results.h"
#include "workers/destinations/http/dhttp_send.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD "authors:\n  alice: {tables: [t]}\n"
#define SYNC(dest) \
    "pipelines:\n  s: {direction: out, author: alice, query: SELECT 1 AS id, mode: mirror,\n" \
    "      key: [id], destination: {http: " dest "}}\n"
#define CONN(extra) \
    "connections:\n  api: {kind: http, base_url: \"https://api.example/v2\"" extra "}\n"

static void collect(const char *s, void *arg)
{
    const char **seen = arg;
    for (int i = 0; i < 7; i++)
        if (!seen[i]) {
            seen[i] = s;
            return;
        }
}

static void test_config(void)
{
    zx_conf_errors e = {0};
    setenv("ZX_TEST_DHTTP_TOKEN", "Bearer sekr1t-value", 1);
    zx_conf *c = load(HEAD CONN(", headers: {Authorization: \"${env:ZX_TEST_DHTTP_TOKEN}\", "
                                "X-Tenant: t1}, timeout: 5s")
                      SYNC("{connection: api, path: /contacts/batch, rate: 20/s, "
                           "concurrency: 2, batch_rows: 100, results_path: data.items}"),
                      0, &e);
    CHECK(c != NULL);
    if (!c)
        dump(&e);
    const zx_conf_connection *cn = c ? zx_conf_find_connection(c, "api") : NULL;
    const zx_conf_pipeline *p = c ? zx_conf_find(c, "s") : NULL;
    if (cn && p) {
        CHECK_STR(cn->base_url, "https://api.example/v2");
        CHECK(cn->nheaders == 2);
        CHECK_STR(cn->header_keys[0], "Authorization");
        CHECK_STR(cn->header_values[0], "Bearer sekr1t-value");
        CHECK(cn->http_timeout_ms == 5000);
        CHECK(p->dest_catalog == cn);     /* its worker keeps its secrets */
        const zx_dhttp_opts *o = p->dest_own;
        CHECK(o && o->rate_per_s == 20 && o->concurrency == 2 && o->batch_rows == 100);
        CHECK(o && !strcmp(o->method, "POST") && !strcmp(o->body, "array"));
        CHECK(o && o->max_retries == 8 && o->max_response == 4u << 20);
        const char *seen[8] = {0};
        zx_conf_connection_secrets(cn, collect, seen);
        CHECK(seen[0] && !strcmp(seen[0], "Bearer sekr1t-value"));
        CHECK(seen[1] && !strcmp(seen[1], "t1"));
        CHECK(!seen[2]);
    }
    zx_conf_free(c);

    /* skipped secrets: a header value written as a reference is left NULL */
    c = load(HEAD CONN(", headers: {Authorization: \"${env:ZX_TEST_DHTTP_TOKEN}\"}")
             SYNC("{connection: api, path: /c}"), ZX_CONF_SKIP_SECRETS, &e);
    cn = c ? zx_conf_find_connection(c, "api") : NULL;
    CHECK(cn && cn->nheaders == 1 && cn->header_values[0] == NULL);
    zx_conf_free(c);

    static const struct {
        const char *text, *err;
    } bad[] = {
        {HEAD "connections:\n  api: {kind: http}\n" SYNC("{connection: api, path: /c}"),
         "kind http needs `base_url`"},
        {HEAD "connections:\n  api: {kind: http, base_url: \"ftp://x\"}\n"
         SYNC("{connection: api, path: /c}"), "an http:// or https:// URL"},
        {HEAD CONN("") SYNC("{connection: api, path: contacts}"), "starts with '/'"},
        {HEAD CONN("") SYNC("{connection: api}"), "missing required field 'path'"},
        {HEAD CONN("") SYNC("{path: /c}"), "missing required field 'connection'"},
        {HEAD CONN("") SYNC("{connection: api, path: /c, rate: fast}"), "destination.http.rate"},
        {HEAD CONN("") SYNC("{connection: api, path: /c, rate: 5/d}"), "destination.http.rate"},
        {HEAD CONN("") SYNC("{connection: api, path: /c, method: GET}"), "method"},
        {HEAD CONN("") SYNC("{connection: api, path: /c, results_path: \"a..b\"}"),
         "results_path"},
        {HEAD CONN("") SYNC("{connection: api, path: /c, concurrency: 0}"), "concurrency"},
        {HEAD CONN(", headers: {Idempotency-Key: x}") SYNC("{connection: api, path: /c}"),
         "zx sends one per batch"},
        {HEAD CONN("") SYNC("{connection: nope, path: /c}"), "unknown connection 'nope'"},
        {HEAD CONN("") "pipelines:\n  s: {direction: out, author: alice, query: SELECT 1, "
         "mode: replace, destination: {http: {connection: api, path: /c}}}\n",
         "cannot replace what an API holds"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = load(bad[i].text, 0, &e);
        CHECK(c == NULL);
        if (!any_contains(&e, bad[i].err)) {
            fprintf(stderr, "case %zu: missing error: %s\n", i, bad[i].err);
            dump(&e);
            failures++;
        }
        zx_conf_free(c);
    }
    zx_conf_errors_free(&e);
}

static void add(zx_rowset *rs, uint32_t col, zx_value v)
{
    if (v.s)
        v.s = zx_rowset_strdup(rs, v.s, v.len);
    zx_rowset_add(rs, col, &v);
}

static void test_json(void)
{
    zx_dcol cols[] = {
        {"id", ZX_DT_INT64, 0, 0}, {"name", ZX_DT_TEXT, 0, 0}, {"score", ZX_DT_DOUBLE, 0, 0},
        {"ok", ZX_DT_BOOL, 0, 0}, {"at", ZX_DT_TIMESTAMP, 0, 0}, {"doc", ZX_DT_JSON, 0, 0},
        {"blob", ZX_DT_BYTES, 0, 0}, {"n", ZX_DT_INT64, 0, 0}, {"price", ZX_DT_DECIMAL, 10, 2},
    };
    size_t nc = sizeof(cols) / sizeof(cols[0]);
    zx_rowset rs;
    zx_rowset_init(&rs);
    for (size_t i = 0; i < nc; i++)
        zx_rowset_column(&rs, cols[i].name, strlen(cols[i].name), ZX_T_NULL);
    zx_rowset_begin_row(&rs);
    add(&rs, 0, (zx_value){.type = ZX_T_INT, .u.i = -42});
    add(&rs, 1, (zx_value){.type = ZX_T_TEXT, .s = "a\"b\\\n\x01\xff\xc3\xa9", .len = 9});
    add(&rs, 2, (zx_value){.type = ZX_T_REAL, .u.d = 1.5});
    add(&rs, 3, (zx_value){.type = ZX_T_INT, .u.i = 1});
    add(&rs, 4, (zx_value){.type = ZX_T_TIMESTAMP, .u.i = 1000001, .s = "x", .len = 1});
    add(&rs, 5, (zx_value){.type = ZX_T_JSON, .s = "{\"a\":[1,2]}", .len = 11});
    add(&rs, 6, (zx_value){.type = ZX_T_TEXT, .s = "\x00\x01\xfe", .len = 3});
    add(&rs, 7, (zx_value){.type = ZX_T_TEXT, .s = "17", .len = 2});
    add(&rs, 8, (zx_value){.type = ZX_T_TEXT, .s = "-123.40", .len = 7});
    zx_rowset_end_row(&rs);
    zx_rowset_begin_row(&rs);
    add(&rs, 0, (zx_value){.type = ZX_T_INT, .u.i = 7});
    add(&rs, 2, (zx_value){.type = ZX_T_REAL, .u.d = NAN});
    zx_rowset_end_row(&rs);

    zx_value vals[16];
    zx_dest_stats st = {0};
    zx_buf b = {0};
    CHECK(zx_dhttp_open(&b, ZX_DHTTP_WRAP, "records") == 0);
    CHECK(zx_dhttp_row(&b, &rs, 0, cols, nc, NULL, vals, &st) == 0);
    CHECK(zx_dhttp_close(&b, ZX_DHTTP_WRAP) == 0);
    CHECK_STR(b.p, "{\"records\":[{\"id\":-42,\"name\":\"a\\\"b\\\\\\n\\u0001\xef\xbf\xbd\xc3\xa9\","
              "\"score\":1.5,\"ok\":true,\"at\":\"1970-01-01T00:00:01.000001Z\","
              "\"doc\":{\"a\":[1,2]},\"blob\":\"AAH+\",\"n\":17,\"price\":\"-123.40\"}]}");
    CHECK(st.nulled == 0);
    zx_buf_reset(&b);
    CHECK(zx_dhttp_row(&b, &rs, 1, cols, nc, "op", vals, &st) == 0);
    CHECK_STR(b.p, "{\"op\":\"upsert\",\"id\":7,\"name\":null,\"score\":null,\"ok\":null,"
              "\"at\":null,\"doc\":null,\"blob\":null,\"n\":null,\"price\":null}");
    CHECK(st.nulled == 1 && !strcmp(st.misfit_col, "score"));

    /* keys: {"op":"delete","key":{...}}, or the key alone */
    zx_rowset keys;
    zx_rowset_init(&keys);
    zx_rowset_column(&keys, "id", 2, ZX_T_NULL);
    zx_rowset_begin_row(&keys);
    add(&keys, 0, (zx_value){.type = ZX_T_INT, .u.i = 3});
    zx_rowset_end_row(&keys);
    zx_buf_reset(&b);
    CHECK(zx_dhttp_key(&b, &keys, 0, cols, nc, "op", vals, &st) == 0);
    CHECK_STR(b.p, "{\"op\":\"delete\",\"key\":{\"id\":3}}");
    zx_buf_reset(&b);
    CHECK(zx_dhttp_key(&b, &keys, 0, cols, nc, NULL, vals, &st) == 0);
    CHECK_STR(b.p, "{\"id\":3}");
    /* shapes */
    zx_buf_reset(&b);
    zx_dhttp_open(&b, ZX_DHTTP_NDJSON, NULL);
    zx_dhttp_key(&b, &keys, 0, cols, nc, NULL, vals, &st);
    zx_dhttp_sep(&b, ZX_DHTTP_NDJSON);
    zx_dhttp_key(&b, &keys, 0, cols, nc, NULL, vals, &st);
    zx_dhttp_close(&b, ZX_DHTTP_NDJSON);
    CHECK_STR(b.p, "{\"id\":3}\n{\"id\":3}\n");
    zx_buf_reset(&b);
    zx_dhttp_open(&b, ZX_DHTTP_ARRAY, NULL);
    zx_dhttp_close(&b, ZX_DHTTP_ARRAY);
    CHECK_STR(b.p, "[]");
    zx_buf_free(&b);
    zx_rowset_free(&keys);
    zx_rowset_free(&rs);
}

typedef struct fails {
    uint32_t idx[8];
    char why[8][300];
    int n;
} fails;

static void on_fail(void *arg, uint32_t i, const char *why)
{
    fails *f = arg;
    if (f->n < 8) {
        f->idx[f->n] = i;
        snprintf(f->why[f->n], sizeof(f->why[0]), "%s", why);
    }
    f->n++;
}

static void test_results(void)
{
    char err[300];
    fails f = {0};
    const char *ok = "{\"data\":{\"items\":[{\"status\":200},{\"error\":\"email is invalid\"},"
                     "{\"status\":422},{\"error\":null,\"status\":201},{\"error\":false},"
                     "{\"error\":{\"code\":7}},17]}}";
    CHECK(zx_dhttp_results(ok, strlen(ok), "data.items", 8, on_fail, &f, err,
                           sizeof(err)) == 4);
    CHECK(f.n == 4 && f.idx[0] == 1 && f.idx[1] == 2 && f.idx[2] == 5 && f.idx[3] == 7);
    CHECK_STR(f.why[0], "error: email is invalid");
    CHECK_STR(f.why[1], "status 422");
    CHECK_STR(f.why[2], "error: {\"code\":7}");
    CHECK(strstr(f.why[3], "no result") != NULL);
    memset(&f, 0, sizeof(f));
    CHECK(zx_dhttp_results(ok, strlen(ok), "data.items", 1, on_fail, &f, err,
                           sizeof(err)) == 0);
    CHECK(zx_dhttp_results(ok, strlen(ok), "data", 1, on_fail, &f, err, sizeof(err)) == -1);
    CHECK(strstr(err, "no array") != NULL);
    CHECK(zx_dhttp_results(ok, strlen(ok), "nope.x", 1, on_fail, &f, err, sizeof(err)) == -1);
    CHECK(zx_dhttp_results("<html>", 6, "results", 1, on_fail, &f, err, sizeof(err)) == -1);
    CHECK(strstr(err, "not JSON") != NULL);
    CHECK(zx_dhttp_results(NULL, 0, "results", 1, on_fail, &f, err, sizeof(err)) == -1);
    const char *top = "{\"results\":[{\"error\":\"a\\nb\\u0000c\"}]}";
    CHECK(zx_dhttp_results(top, strlen(top), "results", 1, on_fail, &f, err,
                           sizeof(err)) == 1);
    CHECK_STR(f.why[0], "error: a?b?c");
    CHECK(f.n == 1);
    char out[32];
    CHECK_STR(zx_dhttp_sanitize("abc\x01\xff" "defghijk", 13, 6, out, sizeof(out)),
              "abc??d...");
}

static void test_backoff(void)
{
    CHECK(zx_dhttp_backoff(1, -1, 30000, 0) == 250);
    CHECK(zx_dhttp_backoff(1, -1, 30000, 1) == 500);
    CHECK(zx_dhttp_backoff(3, -1, 30000, 1) == 2000);
    long w = zx_dhttp_backoff(40, -1, 2000, 0.5);
    CHECK(w >= 1000 && w <= 2000);
    CHECK(zx_dhttp_backoff(1, 5000, 2000, 0) == 2000);     /* cut to the max */
    CHECK(zx_dhttp_backoff(1, 1500, 30000, 0) == 1500);    /* Retry-After wins */
    CHECK(zx_dhttp_retry_after("3", 0) == 3000);
    CHECK(zx_dhttp_retry_after(" 120 \r\n", 0) == 120000);
    CHECK(zx_dhttp_retry_after("abc", 0) == -1);
    CHECK(zx_dhttp_retry_after("", 0) == -1);
    CHECK(zx_dhttp_retry_after("12x", 0) == -1);
    CHECK(zx_dhttp_retry_after("99999999999999999999", 0) > 0);
    /* 2015-10-21T07:28:00Z = 1445412480 */
    CHECK(zx_dhttp_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470) == 10000);
    CHECK(zx_dhttp_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412490) == 0);
    double r = 0;
    CHECK(zx_dhttp_parse_rate("20/s", &r) == 0 && r == 20);
    CHECK(zx_dhttp_parse_rate("600/m", &r) == 0 && r == 10);
    CHECK(zx_dhttp_parse_rate("3600/h", &r) == 0 && r == 1);
    CHECK(zx_dhttp_parse_rate("2.5", &r) == 0 && r == 2.5);
    CHECK(zx_dhttp_parse_rate("0", &r) < 0);
    CHECK(zx_dhttp_parse_rate("-1/s", &r) < 0);
    CHECK(zx_dhttp_parse_rate("5/d", &r) < 0);
    CHECK(zx_dhttp_parse_rate("nan", &r) < 0);
    CHECK(zx_dhttp_parse_rate("1000000/s", &r) < 0);
}

int main(int argc, char **argv)
{
    if (cfg_test_init(argc, argv) < 0)
        return 2;
    test_config();
    test_json();
    test_results();
    test_backoff();
    return cfg_test_finish("test_dest_http");
}
