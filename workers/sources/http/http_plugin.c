/*
 * http_plugin.c — the plug-in http: source: http, clients push JSON
 * through the gateway (http_push.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.c.
 * Its option rows still live in conf/options.c (issue 19 moves them here).
 */
#include "conf/plugin.h"
#include "workers/sources/source.h"

extern const zx_source zx_source_http;   /* http_push.c */

static const char *const metadata[] = {"_ingested_at", "_request_id", NULL};

const zx_plugin zx_plugin_http = {
    .name = "http",
    .role = ZX_PLUGIN_SOURCE,
    .metadata = metadata,
    .source = &zx_source_http,
    .doc = "clients push JSON (object, array or newline-delimited) to "
     "`POST /api/streams/<name>/push`.",
};
