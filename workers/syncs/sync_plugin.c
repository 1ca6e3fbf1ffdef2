/*
 * sync_plugin.c — the plug-in sync, of role ZX_PLUGIN_SYNC (conf/plugin.h):
 * the runner of reverse syncs (direction: out), one run per worker
 * (run.c).  It is no source: `source:` is not written in a reverse sync,
 * whose zx_conf_pipeline.source the loader sets to this plug-in's name.
 * Its registration (conf/plugin.h), listed once in workers/plugins.def.
 * Its option rows are here, all its own (ZX_CF_OWN: into a zx_sync_opts
 * per reverse sync, sync_opts.h, read through zx_sync_opts_of): the loader
 * parses, checks, compares and frees them, and conf/OPTIONS.md documents
 * them, from this table; what spans several of them is its check
 * (sync_check.c).
 */
#include <stddef.h>

#include "conf/plugin.h"
#include "workers/sources/source.h"
#include "workers/syncs/sync_opts.h"

extern const zx_source zx_source_sync;   /* run.c */
extern const zx_plugin zx_plugin_sync;  /* below */
int zx_sync_check(zx_cf_check *ck, zx_conf_pipeline *p);   /* sync_check.c */

#define OWN(f) offsetof(zx_sync_opts, f)

/* Order = zx_sync_mode (workers/destinations/dest.h). */
static const char *const modes[] = {"replace", "append", "upsert", "mirror", NULL};
static const char *const on_values[] = {"change", NULL};

static const zx_cf_option options[] = {
    {.section = "pipelines.<name>", .name = "author", .type = ZX_CF_STRING,
     .offset = OWN(author), .flags = ZX_CF_REQUIRED | ZX_CF_OWN,
     .help = "The entry of `authors` whose rights the query runs with."},
    {.section = "pipelines.<name>", .name = "query", .type = ZX_CF_STRING,
     .offset = OWN(query), .flags = ZX_CF_REQUIRED | ZX_CF_OWN,
     .help = "Exactly one read-only SELECT on the workspace. The database "
     "enforces it when the sync runs: a second statement, a write, or a "
     "table outside the author's fails the run before anything is sent."},
    {.section = "pipelines.<name>", .name = "mode", .type = ZX_CF_ENUM_INT,
     .offset = OWN(mode), .flags = ZX_CF_REQUIRED | ZX_CF_OWN, .allowed = modes,
     .help = "`replace`: the destination holds exactly the result (in one "
     "transaction, or a rename for files). `append`: every row of the "
     "result is added. `upsert`: only rows new or changed since the last "
     "successful run (a hash of each row sent is kept by `key`). `mirror`: "
     "upsert, and the keys gone from the result are deleted."},
    {.section = "pipelines.<name>", .name = "key", .type = ZX_CF_NAMES,
     .def_doc = "none; **required** for `upsert` and `mirror`",
     .offset = OWN(key_cols), .n_offset = OWN(nkey_cols), .flags = ZX_CF_OWN,
     .help = "Result columns that identify a row (`[id]`, `[region, id]`). "
     "Duplicate keys in a result fail the run, naming them, before anything "
     "is sent."},
    {.section = "pipelines.<name>", .name = "cursor", .type = ZX_CF_STRING,
     .def_doc = "none: every run reads the whole result",
     .offset = OWN(cursor), .flags = ZX_CF_OWN,
     .help = "`mode: upsert` only. A result column that grows whenever a row "
     "changes (`updated_at`: a timestamp, a date or an integer version; on "
     "an SQLite workspace also text, compared as bytes, such as ISO times). A "
     "run reads only the rows whose cursor is at or past the greatest value "
     "the last successful run read (its mark, kept with the sync's row hashes; "
     "`>=`, so rows committed late with that same value are not missed, and "
     "the row hashes drop those already sent), plus every row whose cursor is "
     "NULL. The first run, a run after `query` or `cursor` changed, and "
     "`zxctl run NAME --full` read everything. A row that commits with a "
     "cursor below the mark (a long transaction that stamped `now()` when it "
     "began) waits for a `--full` run. The column must be in the result: a "
     "run fails, naming it, when it is not. Deletes need the whole result: "
     "`mirror` refuses a cursor (run a `mirror` sync without one, less often, "
     "to find them)."},
    {.section = "pipelines.<name>", .name = "partition_by", .type = ZX_CF_NAMES,
     .def_doc = "none: unpartitioned", .offset = OWN(partition_by),
     .n_offset = OWN(npartition_by), .flags = ZX_CF_OWN,
     .help = "The partitions of a lake table zx creates (`delta`, `iceberg`): result "
     "columns, or for Iceberg transforms of them: `identity(c)`, `year(c)`, `month(c)`, "
     "`day(c)`, `hour(c)`, `bucket[N](c)`, `truncate[W](c)` (Delta: columns only). "
     "Each data file holds one partition's rows. A table that exists keeps its own "
     "partitioning: a different one fails the run."},
    {.section = "pipelines.<name>", .name = "schedule", .type = ZX_CF_STRING,
     .def_doc = "none: runs by hand or through the API only",
     .offset = OWN(schedule), .flags = ZX_CF_OWN,
     .help = "When to run: 5-field cron, in UTC (`*/15 * * * *`; names and "
     "`@hourly`, `@daily`... allowed). Runs of one sync never overlap; a "
     "run missed while zxd was down runs once when it starts."},
    {.section = "pipelines.<name>", .name = "on", .type = ZX_CF_ENUM,
     .def_doc = "none", .offset = OWN(on), .flags = ZX_CF_OWN, .allowed = on_values,
     .help = "`change`: the sync also runs when a commit of the writer changed a "
     "table it reads: one of its author's `tables` that the query names (a view "
     "by its own name). Changes are coalesced: at most one run in flight and one "
     "queued, started at most once per `min_interval`, so a busy table costs one "
     "run per interval, not one per change. It runs once when zxd starts (or the "
     "sync is added), for the changes made while it was not watching. With "
     "`schedule` too, both start runs. A run's record shows `change_latency_ms`: "
     "from the first commit it answers to the end of the run."},
    {.section = "pipelines.<name>", .name = "min_interval", .type = ZX_CF_DURATION,
     .def = "5s", .offset = OWN(min_interval_ms), .flags = ZX_CF_OWN, .min = 0,
     .max = 24 * ZX_CF_HOUR,
     .help = "With `on: change`: the least time between the starts of two runs "
     "that changes start."},
    {.section = "pipelines.<name>", .name = "batch_rows", .type = ZX_CF_UINT,
     .def = "10000", .offset = OWN(batch_rows), .flags = ZX_CF_OWN, .min = 1, .max = 1000000,
     .help = "Rows per batch sent to the destination."},
    {.section = "pipelines.<name>", .name = "query_timeout",
     .type = ZX_CF_DURATION, .def_doc = "`server.sync_query_timeout` (1h)",
     .offset = OWN(query_timeout_ms), .flags = ZX_CF_OWN, .min = ZX_CF_SEC, .max = 7 * 24 * ZX_CF_HOUR,
     .help = "How long the query may take, from its start to its last row "
     "read (in `replace` and `append` without `key`, that includes the "
     "time the destination takes to write them). Enforced by the "
     "database (PostgreSQL: `statement_timeout`; SQLite: interrupted) "
     "and by zx: past it, the query is cancelled and the run fails, "
     "naming this option. A stop (`zxctl stop`, zxd stopping) cancels the "
     "query on the server the same way."},
    {.section = "pipelines.<name>", .name = "max_spill_bytes",
     .type = ZX_CF_SIZE, .def_doc = "`server.sync_max_spill_bytes` (10GiB)",
     .offset = OWN(max_spill_bytes), .flags = ZX_CF_OWN, .min = ZX_CF_MIB, .max = 1024 * ZX_CF_GIB,
     .help = "Bytes a run may write to its temporary files (the rows to "
     "send, the sorted keys, the hashes and deletes kept until the "
     "destination commits). A run that would write more fails, naming "
     "this option, before anything is sent; its files are gone with it."},
    {.section = "pipelines.<name>.destination", .name = "connection",
     .type = ZX_CF_STRING, .def_doc = "none",
     .offset = OWN(dest_connection), .flags = ZX_CF_OWN,
     .help = "The entry of `connections` (kind `postgres`, `mysql` or "
     "`sqlite`, not `read_only`) whose `table` receives the result."},
    {.section = "pipelines.<name>.destination", .name = "table",
     .type = ZX_CF_STRING, .def_doc = "**required** with `connection`",
     .offset = OWN(dest_table), .flags = ZX_CF_OWN,
     .help = "The table: `schema.table` or `table` (postgres: schema "
     "`public`; mysql: the dsn's database). Created when missing, with a "
     "primary key on `key`; missing columns are added."},
};

const zx_sync_opts *zx_sync_opts_of(const zx_conf_pipeline *p)
{
    return p && p->plugin == &zx_plugin_sync ? p->own : NULL;
}

const zx_plugin zx_plugin_sync = {
    .name = "sync",
    .role = ZX_PLUGIN_SYNC,
    .source = &zx_source_sync,
    .check = zx_sync_check,
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_sync_opts),
    .doc = "a reverse sync (`direction: out`; `source` is not written): the "
     "result of `query`, run as `author`, sent to `destination` in `mode`, "
     "by hand (`zxctl run`), on `schedule`, or through the gateway's API.",
};
