/*
 * plugins.c — the registry of plug-ins (conf/plugin.h), made from the one
 * list workers/plugins.def, and its lookups.  Adding a plug-in: its
 * folder, its `<name>_plugin.c` with its `const zx_plugin`, one line in
 * plugins.def, its folder's `subdir()` line (meson does not glob), and its
 * tests.
 */
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "conf/plugin.h"

#define ZX_PLUGIN(x) extern const zx_plugin zx_plugin_##x;
#include "workers/plugins.def"
#undef ZX_PLUGIN

const zx_plugin *const zx_plugins[] = {
#define ZX_PLUGIN(x) &zx_plugin_##x,
#include "workers/plugins.def"
#undef ZX_PLUGIN
};
const size_t zx_nplugins = sizeof(zx_plugins) / sizeof(zx_plugins[0]);

const zx_plugin *zx_plugin_find(zx_plugin_role role, const char *name)
{
    for (size_t i = 0; name && i < zx_nplugins; i++)
        if (zx_plugins[i]->role == role && !strcmp(zx_plugins[i]->name, name))
            return zx_plugins[i];
    return NULL;
}

const zx_plugin *zx_plugin_of_pipeline(const char *source)
{
    const zx_plugin *p = zx_plugin_find(ZX_PLUGIN_SOURCE, source);

    return p ? p : zx_plugin_find(ZX_PLUGIN_SYNC, source);
}

/* 1 when plug-in p takes connections of its kinds as role's: a
 * destination written as a sub-section of its own (Iceberg's catalogs) is
 * not a table destination of its kinds. */
static int takes_kinds(const zx_plugin *p, zx_plugin_role role)
{
    return p->role == role && !(role == ZX_PLUGIN_DESTINATION && p->dest_where);
}

const zx_plugin *zx_plugin_for_kind(zx_plugin_role role, const char *kind)
{
    for (size_t i = 0; kind && i < zx_nplugins; i++)
        for (size_t k = 0; takes_kinds(zx_plugins[i], role) && zx_plugins[i]->conn_kinds &&
                           zx_plugins[i]->conn_kinds[k]; k++)
            if (!strcmp(zx_plugins[i]->conn_kinds[k], kind))
                return zx_plugins[i];
    return NULL;
}

const char *zx_plugin_kinds(zx_plugin_role role, char *buf, size_t len)
{
    const char *kinds[64];
    size_t n = 0;

    for (size_t i = 0; i < zx_nplugins; i++)
        for (size_t k = 0; takes_kinds(zx_plugins[i], role) && zx_plugins[i]->conn_kinds &&
                           zx_plugins[i]->conn_kinds[k] && n < 64; k++) {
            const char *kd = zx_plugins[i]->conn_kinds[k];
            size_t j;
            for (j = 0; j < n && strcmp(kinds[j], kd); j++)
                ;
            if (j == n)
                kinds[n++] = kd;
        }
    return zx_join_or(buf, len, kinds, n);
}
