/*
 * sync_plugin.c — the plug-in sync: the source of reverse syncs
 * (direction: out), one run per worker (run.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.c.
 * Its option rows still live in conf/options.c (issue 19 moves them here).
 */
#include "conf/plugin.h"
#include "workers/sources/source.h"

extern const zx_source zx_source_sync;   /* run.c */

const zx_plugin zx_plugin_sync = {
    .name = "sync",
    .role = ZX_PLUGIN_SOURCE,
    .source = &zx_source_sync,
    .doc = "a reverse sync (`direction: out`; `source` is not written): the "
     "result of `query`, run as `author`, sent to `destination` in `mode`, "
     "by hand (`zxctl run`), on `schedule`, or through the gateway's API.",
};
