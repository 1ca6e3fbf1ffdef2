/*
 * plugin_util.c — small helpers zxd and the plug-ins share (conf/plugin.h):
 * whether two strings, or two connections' databases, are the same; the
 * admin command of a name.
 */
#include <string.h>

#include "conf/plugin.h"

int zx_str_same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

int zx_conf_same_place(const zx_conf_connection *a, const zx_conf_connection *b)
{
    return a == b || zx_str_same(a->dsn_shown, b->dsn_shown) || zx_str_same(a->dsn, b->dsn);
}

const zx_plugin_admin *zx_plugin_admin_find(const char *command, const zx_plugin **owner)
{
    for (size_t i = 0; command && i < zx_nplugins; i++) {
        const zx_plugin_admin *a = zx_plugins[i]->admin;
        if (a && a->command && !strcmp(a->command, command)) {
            if (owner)
                *owner = zx_plugins[i];
            return a;
        }
    }
    return NULL;
}
