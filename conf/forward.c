/*
 * forward.c — a stream's `forward: {kafka: {...}}`: where it publishes
 * what the writer applied (workers/forward/forward.h).  The walk reads
 * the sub-section with the destination plug-in's own rows into
 * p->dest_plugin and p->dest_own (conf/config.c, walk_map) and runs the
 * plug-in's check; here, once connections are resolved: only streams
 * forward, only to a destination that publishes events (kafka today),
 * through a connection of its kind (p->dest_conn).
 *
 * It must never: let a reverse sync take `forward:`, or leave a
 * forwarding stream without its connection.
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"
#include "conf/plugin.h"

#include <string.h>

/* The destinations a stream may forward to: those that publish events,
 * whose consumers read every change in order. */
static const char *const forward_kinds[] = {"kafka", NULL};

int zx_conf_forwards(const zx_conf_pipeline *p)
{
    return p && p->forward && !zx_conf_is_sync(p) && p->dest_plugin && p->dest_conn;
}

void zx_cf_resolve_forwards(zx_cf_ctx *x, zx_conf *c)
{
    for (size_t i = 0; i < c->npipelines; i++) {
        zx_conf_pipeline *p = &c->pipelines[i];
        if (!p->forward)
            continue;
        if (zx_conf_is_sync(p)) {
            zx_cf_error(x, p->line, p->column, "pipelines.%s: forward applies to streams: "
                        "a reverse sync sends its result to its destination", p->name);
            continue;
        }
        if (c->ws_kind == ZX_WS_KIND_POSTGRES && c->pg_shared) {
            /* the journal is numbered per pipeline name in the workspace:
             * two zxd would number the same rows */
            zx_cf_error(x, p->line, p->column, "pipelines.%s: forward is not available with "
                        "workspace.postgres.shared yet: forward from a reverse sync of the "
                        "table with on: change instead", p->name);
            continue;
        }
        int ok = 0;
        for (size_t k = 0; p->dest_plugin && forward_kinds[k]; k++)
            ok |= !strcmp(p->dest_plugin->name, forward_kinds[k]);
        if (!ok) {
            char kinds[64];
            zx_cf_join(kinds, sizeof(kinds), forward_kinds, ", ");
            if (p->dest_plugin)
                zx_cf_error(x, p->line, p->column, "pipelines.%s: forward: %s is not an "
                            "event log: a stream forwards to %s (for %s, write a reverse "
                            "sync of its table with on: change)", p->name,
                            p->dest_plugin->name, kinds, p->dest_plugin->name);
            else
                zx_cf_error(x, p->line, p->column, "pipelines.%s: forward: name where, as "
                            "forward: {kafka: {connection: <a kind: kafka connection>, "
                            "topic: <name>}}", p->name);
            continue;
        }
        zx_dest_where w = {0};
        if (p->dest_plugin->dest_where)
            p->dest_plugin->dest_where(p, &w);
        w.option = "forward.kafka";
        if (w.connection)
            zx_cf_dest_connection(x, c, p, &w);
    }
}
