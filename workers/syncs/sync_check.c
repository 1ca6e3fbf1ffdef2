/*
 * sync_check.c — the check of a reverse sync (the plug-in sync's `check`,
 * conf/plugin.h), on its own options once its entry is walked: its
 * destination is one of a connection's table or a destination plug-in's
 * sub-section (`destination.files`...), its key against its mode, its
 * schedule.  What spans pipelines or needs connections and authors
 * resolved (the destination's connection, the author, two syncs writing
 * one file) is conf/syncs.c's; a destination's own options are its
 * plug-in's check (files_plugin.c).
 *
 * It must never: read another pipeline, resolve a connection, or run the
 * query.
 */
#include <stddef.h>
#include <stdio.h>

#include "common/cron.h"
#include "conf/check.h"
#include "conf/plugin.h"
#include <string.h>

#include "workers/destinations/dest.h"
#include "workers/destinations/lake/lake_part.h"
#include "workers/syncs/sync_opts.h"

/* Where the sync writes: a connection's table, or one destination's
 * sub-section (p->dest_plugin: set by the walk for a sub-section only,
 * connections are resolved later), exactly one.  0, or -1 when it
 * reported an error. */
static int check_destination(zx_cf_check *ck, const zx_conf_pipeline *p,
                             const zx_sync_opts *o)
{
    int cn = zx_check_written(ck, "destination.connection");
    int tn = zx_check_written(ck, "destination.table");
    const zx_plugin *d = p->dest_plugin;
    char sub[96];
    int rc = -1;

    snprintf(sub, sizeof(sub), "destination.%s", d ? d->name : "");
    if (!zx_check_written(ck, "destination"))
        zx_check_error(ck, NULL, "pipeline %s: missing required field 'destination' "
                       "({connection: C, table: T} or {files: {path: P, format: F}})",
                       p->name);
    else if (cn && d)
        zx_check_error(ck, sub, "pipelines.%s: destination: write connection (and table) "
                       "or %s, not both", p->name, d->name);
    else if (!cn && !d)
        zx_check_error(ck, "destination", "pipelines.%s: destination needs connection and "
                       "table, or files", p->name);
    else if (cn && !tn)
        zx_check_error(ck, "destination", "pipelines.%s: destination: missing required "
                       "field 'table' (the table of connection %s to write)", p->name,
                       o->dest_connection ? o->dest_connection : "?");
    else
        rc = 0;
    if (tn && !cn) {
        zx_check_error(ck, "destination.table", "pipelines.%s: destination.table needs "
                       "destination.connection", p->name);
        rc = -1;
    }
    return rc;
}

/* its schedule: a 5-field cron that fires.  0, or -1 (reported). */
static int check_schedule(zx_cf_check *ck, const zx_conf_pipeline *p, const zx_sync_opts *o)
{
    char err[200];
    zx_cron cr;

    if (!o->schedule)
        return 0;
    if (zx_cron_parse(o->schedule, &cr, err, sizeof(err)) < 0) {
        zx_check_error(ck, "schedule", "pipelines.%s: schedule '%.80s': %s", p->name,
                       o->schedule, err);
        return -1;
    }
    if (zx_cron_never(&cr)) {
        zx_check_error(ck, "schedule", "pipelines.%s: schedule '%.80s' never fires (no "
                       "such day)", p->name, o->schedule);
        return -1;
    }
    return 0;
}

/* its cursor (cursor.h): a column name, in mode upsert (a mirror's
 * deletes need the whole result; replace and append keep no hashes to
 * drop the rows read again).  0, or -1 (reported). */
static int check_cursor(zx_cf_check *ck, const zx_conf_pipeline *p, const zx_sync_opts *o)
{
    size_t n = strlen(o->cursor);
    if (!n || n > 128) {
        zx_check_error(ck, "cursor", "pipelines.%s: cursor: a column of the query's result "
                       "(1 to 128 bytes), not '%.40s'", p->name, o->cursor);
        return -1;
    }
    if (o->mode == ZX_MODE_MIRROR) {
        zx_check_error(ck, "cursor", "pipelines.%s: cursor cannot be used with mode: mirror: "
                       "a mirror deletes the keys gone from the whole result, which a run "
                       "that reads only the rows past its cursor does not see. Use mode: "
                       "upsert with cursor (and, to propagate deletes, a mirror sync "
                       "without cursor on a slower schedule)", p->name);
        return -1;
    }
    if (o->mode != ZX_MODE_UPSERT) {
        zx_check_error(ck, "cursor", "pipelines.%s: cursor needs mode: upsert (mode %s sends "
                       "the whole result each run; upsert keeps the row hashes that let a "
                       "run read only the rows past its cursor)", p->name,
                       o->mode == ZX_MODE_REPLACE ? "replace" : "append");
        return -1;
    }
    return 0;
}

int zx_sync_check(zx_cf_check *ck, zx_conf_pipeline *p);   /* sync_plugin.c's .check */

int zx_sync_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    const zx_sync_opts *o = zx_sync_opts_of(p);
    if (!o)   /* its own struct could not be allocated: the loader said so */
        return -1;
    int rc = check_destination(ck, p, o);

    if (zx_check_written(ck, "mode") && (o->mode == ZX_MODE_UPSERT || o->mode == ZX_MODE_MIRROR) &&
        !o->nkey_cols) {
        zx_check_error(ck, "mode", "pipelines.%s: mode %s needs key: the result columns "
                       "that identify a row (key: [id])", p->name,
                       o->mode == ZX_MODE_UPSERT ? "upsert" : "mirror");
        rc = -1;
    }
    if (check_schedule(ck, p, o) < 0)
        rc = -1;
    if (o->cursor && check_cursor(ck, p, o) < 0)
        rc = -1;
    if (o->npartition_by) {
        const zx_dest *d = p->dest_plugin ? p->dest_plugin->dest : NULL;
        if (!zx_check_written(ck, "destination.connection") &&
            (!d || !(d->caps & ZX_DEST_PARTITIONS))) {
            zx_check_error(ck, "partition_by", "pipelines.%s: partition_by is for lake "
                           "tables (destination delta or iceberg)", p->name);
            rc = -1;
        } else if (zx_check_written(ck, "destination.connection")) {
            zx_check_error(ck, "partition_by", "pipelines.%s: partition_by is for lake "
                           "tables (destination delta or iceberg), not a database's",
                           p->name);
            rc = -1;
        }
        if (o->npartition_by > ZX_PART_MAX) {
            zx_check_error(ck, "partition_by", "pipelines.%s: partition_by: %zu fields, at "
                           "most %d", p->name, o->npartition_by, ZX_PART_MAX);
            rc = -1;
        }
        for (size_t i = 0; i < o->npartition_by; i++) {
            zx_part pt;
            char e[300];
            if (zx_part_parse(o->partition_by[i], &pt, e, sizeof(e)) < 0) {
                zx_check_error(ck, "partition_by", "pipelines.%s: %s", p->name, e);
                rc = -1;
            } else if (d && !strcmp(p->dest_plugin->name, "delta") && pt.t != ZX_PT_IDENTITY) {
                zx_check_error(ck, "partition_by", "pipelines.%s: partition_by: %s: Delta "
                               "tables are partitioned by column values only (write the "
                               "column; a transform such as day() is for Iceberg)", p->name,
                               o->partition_by[i]);
                rc = -1;
            }
        }
    }
    return rc;
}
