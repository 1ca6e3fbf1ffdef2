/*
 * registry.c — the stream sources zxd knows, by the name `source:` takes.
 * Adding a source: its own file with its `const zx_source`, one line here,
 * its option rows in conf/options.c, and its tests.  Nothing else.
 */
#include <string.h>

#include "workers/sources/source.h"

extern const zx_source zx_source_http;
extern const zx_source zx_source_kafka;

static const zx_source *const sources[] = {
    &zx_source_http,
    &zx_source_kafka,
};

const zx_source *zx_source_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof(sources) / sizeof(sources[0]); i++)
        if (strcmp(sources[i]->name, name) == 0)
            return sources[i];
    return NULL;
}
