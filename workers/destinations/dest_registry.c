/*
 * dest_registry.c — the reverse-sync destinations zxd knows, by the kind
 * of their connection ("postgres", "mysql", "sqlite") or "files".  Adding
 * one: its own file with its `const zx_dest`, one line here, its options
 * in conf/options.c, and its tests.
 */
#include <string.h>

#include "workers/destinations/dest.h"

extern const zx_dest zx_dest_postgres;
extern const zx_dest zx_dest_mysql;
extern const zx_dest zx_dest_sqlite;
extern const zx_dest zx_dest_files;

static const zx_dest *const dests[] = {
    &zx_dest_postgres,
    &zx_dest_mysql,
    &zx_dest_sqlite,
    &zx_dest_files,
};

const zx_dest *zx_dest_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof(dests) / sizeof(dests[0]); i++)
        if (!strcmp(dests[i]->name, name))
            return dests[i];
    return NULL;
}
