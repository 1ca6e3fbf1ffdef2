/*
 * registry.c — the stream sources zxd knows, by the name `source:` takes:
 * the source plug-ins of workers/plugins.c (conf/plugin.h).  Adding a
 * source: its folder, its `<name>_plugin.c`, one line in
 * workers/plugins.c, and its tests.  Nothing here.
 */
#include <string.h>

#include "conf/plugin.h"
#include "workers/sources/source.h"

const zx_source *zx_source_find(const char *name)
{
    const zx_plugin *p = zx_plugin_of_pipeline(name);   /* a reverse sync's too */

    return p ? p->source : NULL;
}

zx_source_test_fn zx_source_tester(const char *name)
{
    const zx_plugin *p = zx_plugin_find(ZX_PLUGIN_SOURCE, name);

    if (p)
        return p->test;
    /* a connection kind: the source plug-in that reads it */
    for (size_t i = 0; name && i < zx_nplugins; i++) {
        p = zx_plugins[i];
        for (size_t k = 0; p->role == ZX_PLUGIN_SOURCE && p->test && p->conn_kinds &&
                           p->conn_kinds[k]; k++)
            if (!strcmp(p->conn_kinds[k], name))
                return p->test;
    }
    return NULL;
}
