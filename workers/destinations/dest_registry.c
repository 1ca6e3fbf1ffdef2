/*
 * dest_registry.c — the reverse-sync destinations zxd knows, by the kind
 * of their connection ("postgres", "mysql", "sqlite") or "files": the
 * destination plug-ins of workers/plugins.c (conf/plugin.h).  Adding one:
 * its folder, its `<name>_plugin.c`, one line in workers/plugins.c, and
 * its tests.
 */
#include "conf/plugin.h"
#include "workers/destinations/dest.h"

const zx_dest *zx_dest_find(const char *name)
{
    const zx_plugin *p = zx_plugin_find(ZX_PLUGIN_DESTINATION, name);

    return p ? p->dest : NULL;
}
