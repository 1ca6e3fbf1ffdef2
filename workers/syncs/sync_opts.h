/*
 * sync_opts.h — the reverse sync's own options (conf/plugin.h): the rows
 * flagged ZX_CF_OWN of sync_plugin.c set them, per pipeline, into the
 * struct zx_conf_pipeline.own points at for a pipeline of the plug-in
 * sync (direction: out).  Read through zx_sync_opts_of(p) (never NULL
 * for a loaded reverse sync; owned by the zx_conf, freed with it by
 * zx_cf_free_own).  A one-off send (supervisor/syncs_send.c) fills one by
 * hand, owned by its transient pipeline and freed with it the same way.
 * None of these options is a secret.
 *
 * What they resolve to (the author, the destination's connection) stays
 * in zx_conf_pipeline (auth, dest_conn), set by conf/syncs.c.
 */
#ifndef ZX_SYNCS_SYNC_OPTS_H
#define ZX_SYNCS_SYNC_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

typedef struct zx_sync_opts {
    char *author;            /* `author`: the `authors` entry whose policy
                                the query runs under (required) */
    char *query;             /* `query`: exactly one read-only SELECT
                                (checked by the database when it runs) */
    int mode;                /* `mode`: ZX_MODE_REPLACE (0), _APPEND,
                                _UPSERT, _MIRROR: the zx_sync_mode numbers
                                of workers/destinations/dest.h */
    char **key_cols;         /* `key`: result columns that identify a row;
                                required for upsert and mirror; NULL, 0:
                                none */
    size_t nkey_cols;
    char *cursor;            /* `cursor`: a result column that grows as
                                rows change; a run reads only the rows at
                                or past the last run's mark (cursor.h);
                                upsert only (sync_check.c); NULL: none */
    char *schedule;          /* `schedule`: 5-field cron (UTC) as written,
                                checked with zx_cron_parse; NULL = only by
                                hand/API */
    char *on;                /* `on`: "change" (runs when a commit changed
                                a table it watches: sync_watch.h); NULL */
    uint32_t min_interval_ms; /* `min_interval`: between two runs `on:
                                change` starts (default 5 s) */
    uint32_t batch_rows;     /* `batch_rows`: rows per batch sent (default
                                10000) */
    uint32_t query_timeout_ms; /* `query_timeout`: the query's deadline;
                                0 = server.sync_query_timeout */
    uint64_t max_spill_bytes;/* `max_spill_bytes`: a run's temporary files
                                at most; 0 = server.sync_max_spill_bytes */
    char *dest_connection;   /* `destination.connection`: a connection of
                                kind postgres, mysql or sqlite; NULL for a
                                destination of its own sub-section */
    char *dest_table;        /* `destination.table`, with a connection */
    char **partition_by;     /* `partition_by`: the lake table's partition
                                fields ("day(created_at)", "region": the
                                syntax of workers/destinations/lake/
                                lake_part.h); NULL, 0: none */
    size_t npartition_by;
} zx_sync_opts;

/* p's sync options: p->own when p is a pipeline of the plug-in sync (a
 * reverse sync), else NULL (p NULL, a stream or batch pipeline, or a
 * configuration with errors). */
const zx_sync_opts *zx_sync_opts_of(const zx_conf_pipeline *p);

#endif
