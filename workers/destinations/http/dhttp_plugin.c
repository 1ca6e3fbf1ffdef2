/*
 * dhttp_plugin.c — the plug-in http (destination): a reverse sync's rows
 * sent to an HTTP API in JSON batches (dest_dhttp.c).  Its registration
 * (conf/plugin.h), listed once in workers/plugins.def; its option rows
 * (the sub-section destination.http, into its own struct dhttp_opts.h;
 * and the options of its connections, kind http, into
 * zx_conf_connection), its checks.  The connection is resolved by
 * conf/syncs.c through dest_where (as a catalog: p->dest_catalog, whose
 * secrets, the header values, its worker keeps).
 */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/lineage.h"
#include "conf/plugin.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/http/dhttp_opts.h"
#include "workers/syncs/sync_opts.h"

extern const zx_dest zx_dest_http;   /* dest_dhttp.c */

#define OWN(f) offsetof(zx_dhttp_opts, f)
#define CONN(f) offsetof(zx_conf_connection, f)
#define SEC "pipelines.<name>.destination.http"

static const char *const conn_kinds[] = {"http", NULL};
static const char *const methods[] = {"POST", "PUT", "PATCH", NULL};
static const char *const del_methods[] = {"DELETE", "POST", "PUT", "PATCH", NULL};
static const char *const bodies[] = {"array", "ndjson", "wrap", NULL};
static const char *const sync_only[] = {"sync", NULL};
/* headers zx sets itself (PROPS: refused keys, with what to do instead) */
static const char *const owned_headers[] = {
    "Idempotency-Key", "zx sends one per batch",
    "Content-Type", "zx sets it from `body`",
    "Content-Length", "zx sets it",
    "Host", "it comes from base_url",
    "Transfer-Encoding", "zx sets it",
    NULL, NULL,
};

static const zx_cf_option options[] = {
    {.section = SEC, .name = "connection", .type = ZX_CF_STRING,
     .def_doc = "**required** with `http`", .offset = OWN(connection), .flags = ZX_CF_OWN,
     .sources = sync_only,
     .help = "The `kind: http` connection: the API's `base_url` and the headers sent "
     "with every request."},
    {.section = SEC, .name = "path", .type = ZX_CF_STRING,
     .def_doc = "**required** with `http`", .offset = OWN(path),
     .flags = ZX_CF_OWN | ZX_CF_TOKEN, .sources = sync_only,
     .help = "Where the batches go, appended to the connection's `base_url` "
     "(`/contacts/batch`); starts with `/`."},
    {.section = SEC, .name = "method", .type = ZX_CF_ENUM, .def = "POST",
     .offset = OWN(method), .flags = ZX_CF_OWN, .allowed = methods, .sources = sync_only,
     .help = "The method of the batches' requests."},
    {.section = SEC, .name = "body", .type = ZX_CF_ENUM, .def = "array",
     .offset = OWN(body), .flags = ZX_CF_OWN, .allowed = bodies, .sources = sync_only,
     .help = "A batch's body: `array`, a JSON array of one object per row "
     "(`application/json`); `ndjson`, one object per line "
     "(`application/x-ndjson`); `wrap`, the array as the one member of an object, "
     "`{\"<wrap>\": [...]}`. A row is an object of the result's columns: numbers, "
     "text, booleans and NULL as JSON's; timestamps as ISO-8601 UTC text "
     "(`2024-05-01T10:00:00.000000Z`); dates as `YYYY-MM-DD`; decimals as text "
     "(exact); JSON columns embedded as JSON; bytes as base64 text. A double that is "
     "NaN or infinite cannot be sent: it fails the run."},
    {.section = SEC, .name = "wrap", .type = ZX_CF_STRING, .def = "records",
     .offset = OWN(wrap), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "With `body: wrap`: the name of the member that holds the array."},
    {.section = SEC, .name = "batch_rows", .type = ZX_CF_UINT, .def = "500",
     .offset = OWN(batch_rows), .flags = ZX_CF_OWN, .min = 1, .max = 100000,
     .sources = sync_only,
     .help = "Rows (or deleted keys) per request at most."},
    {.section = SEC, .name = "rate", .type = ZX_CF_STRING, .def_doc = "no limit",
     .offset = OWN(rate), .flags = ZX_CF_OWN | ZX_CF_TOKEN, .sources = sync_only,
     .help = "Requests per second at most, retries included: `20/s`, `600/m`, "
     "`3600/h`, or a number (per second). Requests start at least `1/rate` apart "
     "(a token bucket one request deep)."},
    {.section = SEC, .name = "concurrency", .type = ZX_CF_UINT, .def = "1",
     .offset = OWN(concurrency), .flags = ZX_CF_OWN, .min = 1, .max = 64,
     .sources = sync_only,
     .help = "Requests in flight at once at most."},
    {.section = SEC, .name = "delete_path", .type = ZX_CF_STRING, .def_doc = "none",
     .offset = OWN(delete_path), .flags = ZX_CF_OWN | ZX_CF_TOKEN, .sources = sync_only,
     .help = "`mode: mirror`: where the keys of deleted rows go, in batches of the "
     "same `body` shape whose items are the keys (`{\"id\": 7}`), sent with "
     "`delete_method`. Without it, deletes go to `path` with `method`, as items "
     "`{\"op\": \"delete\", \"key\": {\"id\": 7}}` (`op` is `op_field` when set)."},
    {.section = SEC, .name = "delete_method", .type = ZX_CF_ENUM, .def = "DELETE",
     .offset = OWN(delete_method), .flags = ZX_CF_OWN, .allowed = del_methods,
     .sources = sync_only,
     .help = "With `delete_path`: the method of the deletes' requests (`DELETE` "
     "with a body)."},
    {.section = SEC, .name = "op_field", .type = ZX_CF_STRING, .def_doc = "none",
     .offset = OWN(op_field), .flags = ZX_CF_OWN | ZX_CF_TOKEN, .sources = sync_only,
     .help = "A member every row gets first, `\"<op_field>\": \"upsert\"`, and the "
     "name of the member of delete items (instead of `op`), for an API that takes "
     "both in one body. Without it, rows are sent as they are."},
    {.section = SEC, .name = "results_path", .type = ZX_CF_STRING, .def_doc = "none",
     .offset = OWN(results_path), .flags = ZX_CF_OWN | ZX_CF_TOKEN, .sources = sync_only,
     .help = "Where a 2xx response holds per-item results, members joined by `.` "
     "(`results`, `data.items`): an array whose item i is the result of the batch's "
     "item i. An item failed when it is an object with a member `error` that is not "
     "null or false, or a number `status` of 400 or more; a batch with fewer results "
     "than items failed those without one. A failed item's row keeps its old hash, "
     "so the next run sends it again (a deleted key is deleted again). A response "
     "without that path (or not JSON) fails the run. Without `results_path`, a 2xx "
     "answer delivers every item."},
    {.section = SEC, .name = "max_retries", .type = ZX_CF_UINT, .def = "8",
     .offset = OWN(max_retries), .flags = ZX_CF_OWN, .max = 100, .sources = sync_only,
     .help = "Sends of a batch after the first, at most, after a timeout, a "
     "connection error, a 5xx, or a 408, 409, 425 or 429; then the run fails. Waits "
     "double from 0.5 s with jitter (between half and all of the wait), at least "
     "`Retry-After` (seconds or an HTTP date), at most `max_backoff`. Any other 4xx "
     "fails the run at once, with the status and the start of the response."},
    {.section = SEC, .name = "max_backoff", .type = ZX_CF_DURATION, .def = "30s",
     .offset = OWN(max_backoff_ms), .flags = ZX_CF_OWN, .min = 10, .max = 10 * ZX_CF_MIN,
     .sources = sync_only,
     .help = "The longest wait before a batch is sent again (a longer `Retry-After` "
     "is cut to it)."},
    {.section = SEC, .name = "max_response", .type = ZX_CF_SIZE, .def = "4MiB",
     .offset = OWN(max_response), .flags = ZX_CF_OWN, .min = 1024, .max = 256 * ZX_CF_MIB,
     .sources = sync_only,
     .help = "The largest response body read; a larger one fails the run."},
    /* the connection, kind http */
    {.section = "connections.<name>", .name = "base_url", .type = ZX_CF_STRING,
     .offset = CONN(base_url), .flags = ZX_CF_TOKEN,
     .help = "http: the API's base URL, `http://` or `https://` "
     "(`https://api.crm.example/v2`); a destination's `path` is appended to it."},
    {.section = "connections.<name>", .name = "headers", .type = ZX_CF_PROPS,
     .def_doc = "none", .offset = CONN(header_keys), .v_offset = CONN(header_values),
     .n_offset = CONN(nheaders), .flags = ZX_CF_SECRET, .allowed = owned_headers,
     .help = "http: headers sent with every request, `{Authorization: \"Bearer "
     "${env:CRM_TOKEN}\"}`. Every value is a secret, wiped from the memory of the "
     "processes that do not use the connection."},
    {.section = "connections.<name>", .name = "timeout", .type = ZX_CF_DURATION,
     .def = "30s", .offset = CONN(http_timeout_ms), .min = 100, .max = 10 * ZX_CF_MIN,
     .help = "http: how long one request may take, connecting included; then it "
     "is sent again (see `max_retries`)."},
    {.section = "connections.<name>", .name = "ca_file", .type = ZX_CF_PATH,
     .def_doc = "the system's CA store", .offset = CONN(http_ca),
     .help = "http: a PEM file of the CA certificates that sign the API's."},
    {.section = "connections.<name>", .name = "insecure", .type = ZX_CF_BOOL,
     .def = "false", .offset = CONN(http_insecure),
     .help = "http: `true`: the API's certificate and name are not checked. For "
     "tests only."},
};

int zx_dhttp_parse_rate(const char *s, double *per_s)
{
    if (!s || !*s)
        return -1;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || !(v > 0))
        return -1;
    double div = 1;
    if (*end == '/') {
        if (!strcmp(end + 1, "s"))
            div = 1;
        else if (!strcmp(end + 1, "m"))
            div = 60;
        else if (!strcmp(end + 1, "h"))
            div = 3600;
        else
            return -1;
    } else if (*end) {
        return -1;
    }
    v /= div;
    if (!(v > 0) || v > 100000 || !(v >= 1.0 / 86400))
        return -1;
    *per_s = v;
    return 0;
}

/* 1 when s is a results_path: names of [A-Za-z0-9_-] joined by '.'. */
static int path_ok(const char *s)
{
    size_t seg = 0;
    for (; *s; s++) {
        if (*s == '.') {
            if (!seg)
                return 0;
            seg = 0;
        } else if (isalnum((unsigned char)*s) || *s == '_' || *s == '-') {
            seg++;
        } else {
            return 0;
        }
    }
    return seg > 0;
}

static int http_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    zx_dhttp_opts *o = p->dest_own;
    int rc = 0;
    static const char *const req[] = {"connection", "path", NULL};
    for (int i = 0; req[i]; i++) {
        char at[64];
        snprintf(at, sizeof(at), "destination.http.%s", req[i]);
        if (!zx_check_written(ck, at)) {
            zx_check_error(ck, "destination.http", "pipelines.%s: destination.http: "
                           "missing required field '%s'", p->name, req[i]);
            rc = -1;
        }
    }
    const zx_sync_opts *so = zx_sync_opts_of(p);
    if (so && so->mode == ZX_MODE_REPLACE) {
        zx_check_error(ck, "mode", "pipelines.%s: destination http cannot replace what an "
                       "API holds: use mode: mirror (it also deletes the keys that "
                       "disappeared), upsert or append", p->name);
        rc = -1;
    }
    if (!o)
        return rc;
    if (o->path && o->path[0] != '/') {
        zx_check_error(ck, "destination.http.path", "pipelines.%s: destination.http.path: "
                       "starts with '/' (it is appended to the connection's base_url)",
                       p->name);
        rc = -1;
    }
    if (o->delete_path && o->delete_path[0] != '/') {
        zx_check_error(ck, "destination.http.delete_path", "pipelines.%s: "
                       "destination.http.delete_path: starts with '/'", p->name);
        rc = -1;
    }
    o->rate_per_s = 0;
    if (o->rate && zx_dhttp_parse_rate(o->rate, &o->rate_per_s) < 0) {
        zx_check_error(ck, "destination.http.rate", "pipelines.%s: destination.http.rate: "
                       "requests per second, minute or hour: `20/s`, `600/m`, `3600/h` "
                       "or a number (per second), at most 100000/s", p->name);
        rc = -1;
    }
    if (o->wrap && (!path_ok(o->wrap) || strchr(o->wrap, '.'))) {
        zx_check_error(ck, "destination.http.wrap", "pipelines.%s: destination.http.wrap: "
                       "a member name: letters, digits, '_' and '-'", p->name);
        rc = -1;
    }
    if (o->op_field && (!path_ok(o->op_field) || strchr(o->op_field, '.'))) {
        zx_check_error(ck, "destination.http.op_field", "pipelines.%s: "
                       "destination.http.op_field: a member name: letters, digits, '_' "
                       "and '-'", p->name);
        rc = -1;
    }
    if (o->results_path && !path_ok(o->results_path)) {
        zx_check_error(ck, "destination.http.results_path", "pipelines.%s: "
                       "destination.http.results_path: member names (letters, digits, "
                       "'_', '-') joined by '.': `results`, `data.items`", p->name);
        rc = -1;
    }
    return rc;
}

static int http_check_connection(zx_cf_check *ck, zx_conf_connection *c)
{
    if (!zx_check_written(ck, "base_url")) {
        zx_check_error(ck, "base_url", "connections.%s: kind http needs `base_url`",
                       c->name);
        return -1;
    }
    if (c->base_url && strncmp(c->base_url, "http://", 7) &&
        strncmp(c->base_url, "https://", 8)) {
        zx_check_error(ck, "base_url", "connections.%s: base_url: an http:// or https:// "
                       "URL", c->name);
        return -1;
    }
    return 0;
}

static void http_where(const zx_conf_pipeline *p, zx_dest_where *w)
{
    const zx_dhttp_opts *o = p->dest_own;
    w->path = NULL;
    w->format = NULL;
    w->connection = NULL;
    w->catalog = o ? o->connection : NULL;   /* resolved into p->dest_catalog */
    w->option = "destination.http";
    w->catalog_what = "an API connection";
}

/* Lineage: the URL it sends to (its connection's base_url and its path),
 * and where deletes go when that is elsewhere. */
static void http_dest_lineage(const zx_conf *c, const zx_conf_pipeline *p,
                              zx_lineage_out *out)
{
    const zx_dhttp_opts *o = p->dest_own;
    if (!o)
        return;
    const zx_conf_connection *k = p->dest_catalog ? p->dest_catalog
                                  : zx_conf_find_connection(c, o->connection);
    const char *base = k && k->base_url ? k->base_url : "";
    char url[1024];
    snprintf(url, sizeof(url), "%s%s", base, o->path ? o->path : "");
    zx_lineage_ext(out, "http.endpoint", o->connection, url);
    if (o->delete_path) {
        snprintf(url, sizeof(url), "%s%s", base, o->delete_path);
        zx_lineage_ext(out, "http.endpoint", o->connection, url);
    }
}

const zx_plugin zx_plugin_dest_http = {
    .name = "http",
    .role = ZX_PLUGIN_DESTINATION,
    .lineage = http_dest_lineage,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_http,
    .check = http_check,
    .check_connection = http_check_connection,
    .dest_where = http_where,
    .section_doc = "An HTTP API: the rows of `upsert` and `mirror` runs (and `append`'s) "
     "are sent in JSON batches of `batch_rows`, at most `concurrency` at once and "
     "`rate` a second, each with a header `Idempotency-Key`: 32 hex digits of a hash "
     "of the sync, the run and the batch's body, the same on every send of that batch, "
     "so a receiver that keeps the keys it saw applies a batch once. Timeouts, "
     "connection errors, 5xx, 408, 409, 425 and 429 are retried (see `max_retries`); "
     "another 4xx fails the run at once. An API is not a transaction: a run that "
     "fails or is stopped half-way has delivered some batches, and keeps no hash of "
     "them, so the next run sends them again (at least once; a new run has new "
     "idempotency keys: the receiver's upsert by key makes them harmless). `mode: "
     "replace` is refused (an API cannot be emptied). `zxctl runs` shows the batches "
     "sent, retried and failed and the first error.",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_dhttp_opts),
    .doc = "An HTTP API, rows sent as JSON batches with idempotency keys, retries, a rate "
     "and a concurrency.",
};
