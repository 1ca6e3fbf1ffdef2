/*
 * registry.c — the stream sources zxd knows, by the name `source:` takes.
 * Adding a source: its own file with its `const zx_source`, one line here,
 * its option rows in conf/options.c, and its tests.  Nothing else.
 *
 * And the `zxctl test` of every source (zx_source_tester): a registered
 * source's `test`, or, for a source the configuration knows whose worker
 * is not in this build yet (conf/options.c lists it, `sources` below does
 * not: zxd marks its pipelines failed), its checks alone, from the
 * test_only table.  A source leaves test_only when its zx_source (whose
 * `test` is the same function) joins `sources`.
 */
#include <string.h>

#include "workers/sources/source.h"

extern const zx_source zx_source_http;
extern const zx_source zx_source_kafka;
extern const zx_source zx_source_postgres;
extern const zx_source zx_source_sync;    /* workers/syncs/run.c */

static const zx_source *const sources[] = {
    &zx_source_http,
    &zx_source_kafka,
    &zx_source_postgres,
    &zx_source_sync,
};

/* Sources without a worker yet: their `zxctl test` only (none now; a
 * source the configuration learns before its worker lands goes here). */
static const struct {
    const char *name;
    zx_source_test_fn test;
} test_only[] = {
    {NULL, NULL},
};

const zx_source *zx_source_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof(sources) / sizeof(sources[0]); i++)
        if (strcmp(sources[i]->name, name) == 0)
            return sources[i];
    return NULL;
}

zx_source_test_fn zx_source_tester(const char *name)
{
    const zx_source *src = zx_source_find(name);

    if (src)
        return src->test;
    for (size_t i = 0; name && i < sizeof(test_only) / sizeof(test_only[0]); i++)
        if (test_only[i].name && strcmp(test_only[i].name, name) == 0)
            return test_only[i].test;
    return NULL;
}
