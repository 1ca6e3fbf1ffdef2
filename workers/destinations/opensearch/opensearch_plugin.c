/*
 * opensearch_plugin.c — the plug-in opensearch: destination an OpenSearch
 * (or Elasticsearch) index, written through the _bulk API
 * (dest_opensearch.c).  Its registration (conf/plugin.h), listed once in
 * workers/plugins.def; its option rows (the sub-section
 * destination.opensearch, into its own struct opensearch_opts.h; and the
 * options of its connections, kind opensearch, into zx_conf_connection),
 * its checks.  The connection is resolved by conf/syncs.c through
 * dest_where (as a catalog: a connection of one of conn_kinds, whose
 * secrets the sync's worker keeps).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf/lineage.h"
#include "conf/plugin.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/opensearch/opensearch_opts.h"

extern const zx_dest zx_dest_opensearch;   /* dest_opensearch.c */

#define OWN(f) offsetof(zx_opensearch_opts, f)
#define CONN(f) offsetof(zx_conf_connection, f)

static const char *const conn_kinds[] = {"opensearch", NULL};
static const char *const sync_only[] = {"sync", NULL};

static const zx_cf_option options[] = {
    {.section = "pipelines.<name>.destination.opensearch", .name = "connection",
     .type = ZX_CF_STRING, .def_doc = "**required** with `opensearch`",
     .offset = OWN(connection), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The `kind: opensearch` connection of the cluster."},
    {.section = "pipelines.<name>.destination.opensearch", .name = "index",
     .type = ZX_CF_STRING, .def_doc = "**required** with `opensearch`",
     .offset = OWN(index), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The index written (or an alias of one index). Created when missing, "
     "with a mapping from the result's columns: the `key` columns `keyword`; text "
     "`text` with a `keyword` sub-field (`ignore_above: 256`); integers `long`; "
     "reals and decimals `double` (a decimal is sent as its exact literal, kept so "
     "in `_source`); booleans `boolean`; dates and timestamps `date`; bytes `binary` "
     "(sent as base64); JSON columns are left to dynamic mapping. An index that "
     "exists is used as it is: a document whose value its mapping refuses is "
     "refused alone (sent again by the next run)."},
    {.section = "pipelines.<name>.destination.opensearch", .name = "batch_rows",
     .type = ZX_CF_UINT, .def = "1000", .offset = OWN(batch_rows), .flags = ZX_CF_OWN,
     .min = 1, .max = 100000, .sources = sync_only,
     .help = "Documents (and deletes) per `_bulk` request at most."},
    {.section = "pipelines.<name>.destination.opensearch", .name = "batch_bytes",
     .type = ZX_CF_SIZE, .def = "5MiB", .offset = OWN(batch_bytes), .flags = ZX_CF_OWN,
     .min = 64 * ZX_CF_KIB, .max = 100 * ZX_CF_MIB, .sources = sync_only,
     .help = "Bytes of one `_bulk` request body at most (OpenSearch refuses bodies "
     "above its `http.max_content_length`, 100 MiB by default); a document larger "
     "than this is refused alone."},
    /* the connections */
    {.section = "connections.<name>", .name = "url", .type = ZX_CF_STRING,
     .def_doc = "**required** with `opensearch`", .offset = CONN(os_url), .flags = ZX_CF_TOKEN,
     .help = "opensearch: the cluster's base URL (`https://search.example:9200`, "
     "`http://127.0.0.1:9200`, or with a path prefix of a proxy)."},
    /* username and password: one row each for redis and opensearch
     * (redis_plugin.c) */
    {.section = "connections.<name>", .name = "api_key", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(os_api_key), .flags = ZX_CF_SECRET,
     .help = "opensearch: an API key, sent as `Authorization: ApiKey <api_key>` "
     "(Elasticsearch's encoded key; OpenSearch's security plug-in takes JWTs "
     "instead: use `username`). Instead of `username`."},
    {.section = "connections.<name>", .name = "ca_file", .type = ZX_CF_PATH,
     .def_doc = "the system's CA store", .offset = CONN(os_ca_file),
     .help = "opensearch: the PEM CA bundle an `https://` url's certificate is "
     "checked against (relative to the config file's folder)."},
    {.section = "connections.<name>", .name = "insecure", .type = ZX_CF_BOOL,
     .def = "false", .offset = CONN(os_insecure),
     .help = "opensearch: `true`: do not check the server's certificate nor its "
     "name (a test cluster's self-signed certificate). Never in production."},
};

/* 1 when s is an index name OpenSearch takes: 1..255 bytes, lower case,
 * not "." or "..", not starting with '_', '-' or '+', none of
 * \ / * ? " < > | , # : and no space or control character. */
static int index_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255 || !strcmp(s, ".") || !strcmp(s, "..") || s[0] == '_' ||
        s[0] == '-' || s[0] == '+')
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p == 0x7f || (*p >= 'A' && *p <= 'Z') || strchr("\\/*?\"<>|,#:", *p))
            return 0;
    return 1;
}

static int opensearch_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    int rc = 0;
    static const char *const req[] = {"connection", "index", NULL};
    for (int i = 0; req[i]; i++) {
        char at[64];
        snprintf(at, sizeof(at), "destination.opensearch.%s", req[i]);
        if (!zx_check_written(ck, at)) {
            zx_check_error(ck, "destination.opensearch", "pipelines.%s: destination."
                           "opensearch: missing required field '%s'", p->name, req[i]);
            rc = -1;
        }
    }
    const zx_opensearch_opts *o = p->dest_own;
    if (o && o->index && !index_name_ok(o->index)) {
        zx_check_error(ck, "destination.opensearch.index", "pipelines.%s: destination."
                       "opensearch.index: '%.64s' is not an index name (lower case, at most "
                       "255 bytes, no \\ / * ? \" < > | , # : or space, not starting with "
                       "_ - +)", p->name, o->index);
        rc = -1;
    }
    return rc;
}

static int opensearch_check_connection(zx_cf_check *ck, zx_conf_connection *c)
{
    int bad = 0;
    if (!zx_check_written(ck, "url")) {
        zx_check_error(ck, "url", "connections.%s: kind opensearch needs `url`", c->name);
        bad++;
    } else if (c->os_url && strncmp(c->os_url, "http://", 7) &&
               strncmp(c->os_url, "https://", 8)) {
        zx_check_error(ck, "url", "connections.%s: url: an http:// or https:// URL", c->name);
        bad++;
    } else if (c->os_url && (strchr(c->os_url, '?') || strchr(c->os_url, '#') ||
                             strchr(strstr(c->os_url, "//") + 2, '@'))) {
        zx_check_error(ck, "url", "connections.%s: url: no query, fragment or user "
                       "in it (give username and password as options)", c->name);
        bad++;
    }
    if (zx_check_written(ck, "password") && !zx_check_written(ck, "username")) {
        zx_check_error(ck, "password", "connections.%s: password goes with username",
                       c->name);
        bad++;
    }
    if (zx_check_written(ck, "api_key") && zx_check_written(ck, "username")) {
        zx_check_error(ck, "api_key", "connections.%s: api_key or username, not both",
                       c->name);
        bad++;
    }
    return bad ? -1 : 0;
}

static void opensearch_where(const zx_conf_pipeline *p, zx_dest_where *w)
{
    const zx_opensearch_opts *o = p->dest_own;
    w->path = NULL;
    w->format = NULL;
    w->connection = NULL;
    w->catalog = o ? o->connection : NULL;    /* checked of kind opensearch */
    w->catalog_what = "a search cluster";
    w->option = "destination.opensearch";
    if (o && o->connection && o->index)
        snprintf(w->target, sizeof(w->target), "connection %s index %s", o->connection,
                 o->index);
}

/* Lineage: the index it writes, on its cluster's connection. */
static void opensearch_lineage(const zx_conf *c, const zx_conf_pipeline *p,
                               zx_lineage_out *out)
{
    (void)c;
    const zx_opensearch_opts *o = p->dest_own;
    if (o && o->index)
        zx_lineage_ext(out, "opensearch.index", o->connection, o->index);
}

const zx_plugin zx_plugin_dest_opensearch = {
    .name = "opensearch",
    .role = ZX_PLUGIN_DESTINATION,
    .lineage = opensearch_lineage,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_opensearch,
    .check = opensearch_check,
    .check_connection = opensearch_check_connection,
    .dest_where = opensearch_where,
    .section_doc = "OpenSearch (tested with 2.19) or Elasticsearch: the result's rows "
     "become documents of one index, sent with the `_bulk` API. With a `key`, a "
     "document's `_id` is its key (one key column: its value as text; several: the "
     "values joined with `|`, each `\\` and `|` in a value escaped with `\\`; at most "
     "512 bytes, a longer one is refused alone); without one (`append`), OpenSearch "
     "picks ids. `upsert` and `mirror` index (replace) the new and changed documents "
     "by key; `mirror` deletes the documents of keys that left the result (a "
     "document already gone is no error); `append` adds every row; `replace` first "
     "deletes every document of the index (`_delete_by_query`), then indexes the "
     "result: readers see the index emptied and filled again, not one swap. There "
     "is no transaction: a run that fails part way leaves what it sent, and the "
     "next run sends the rest. A document the cluster refuses (a value its mapping "
     "does not take) is refused alone: the others go through, the run counts it "
     "(`zxctl runs`: failed rows, first error) and the next `upsert` or `mirror` run "
     "sends it again (`append` and `replace` only count it). Requests answered 429 or "
     "5xx, or cut, are tried again with a backoff (in `append` mode, whose documents "
     "have no ids, never: a repeat could add them twice); bulk items answered 429 are "
     "sent again alone, up to 5 times. Written documents are made "
     "visible to searches at the end of the run (`_refresh`).",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_opensearch_opts),
    .doc = "An OpenSearch or Elasticsearch index, written with the _bulk API.",
};
