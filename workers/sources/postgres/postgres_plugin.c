/*
 * postgres_plugin.c — the plug-in postgres: source: postgres, change data
 * capture through logical replication (pg_cdc.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.def.
 * Its option rows are here: the loader parses, checks, compares and frees
 * them, and conf/OPTIONS.md documents them, from this table.
 */
#include <stddef.h>

#include "conf/lineage.h"
#include "conf/plugin.h"
#include "workers/sources/postgres/pg_cdc_check.h"
#include "workers/sources/postgres/pg_retire.h"
#include "workers/sources/postgres/postgres_opts.h"
#include "workers/sources/source.h"

extern const zx_source zx_source_postgres;   /* pg_cdc.c */

static const char *const conn_kinds[] = {"postgres", NULL};

#define OWN(f) offsetof(zx_postgres_opts, f)

/* order = ZX_SLOT_LOST_* of conf/config.h */
static const char *const slot_lost[] = {"fail", "resync", NULL};

static const zx_cf_option options[] = {
    {.section = "pipelines.<name>", .name = "tables", .type = ZX_CF_PGTABLES,
     .offset = OWN(tables), .n_offset = OWN(ntables),
     .flags = ZX_CF_REQUIRED | ZX_CF_OWN,
     .help = "The tables to mirror: a list of `schema.table`, or `table` "
     "for `public.table` (`[public.orders, sales.customers]`); each name 1 "
     "to 63 letters, digits or `_`, exact (`Orders` is the table created as "
     "`\"Orders\"`, not `orders`); at most 1000, none twice. Each is "
     "mirrored into the workspace table of its name without the schema "
     "(`orders`, `customers`), after `table_prefix`: two tables that would "
     "get the same mirror are an error (mirror them in two pipelines with "
     "different prefixes)."},
    {.section = "pipelines.<name>", .name = "table_prefix", .type = ZX_CF_IDENT,
     .def_doc = "none", .offset = OWN(table_prefix), .flags = ZX_CF_OWN,
     .help = "Written before each mirror table's name (`shop_` mirrors "
     "`public.orders` into `shop_orders`). Each mirror name follows the "
     "rules of `table`; with `history`, at most 54 characters (its "
     "`__changes` table must fit in 63)."},
    {.section = "pipelines.<name>", .name = "initial_copy", .type = ZX_CF_BOOL,
     .def = "true", .offset = OWN(initial_copy), .flags = ZX_CF_OWN,
     .help = "`true`: copy the rows already in each table first (from the "
     "slot's snapshot), then stream the changes; `false`: changes from the "
     "slot's creation on only."},
    {.section = "pipelines.<name>", .name = "slot", .type = ZX_CF_SLOT,
     .def_doc = "`zx_` and the pipeline name, `-` written `_`, cut to 63 bytes",
     .offset = OWN(slot), .flags = ZX_CF_OWN,
     .help = "The logical replication slot: 1 to 63 lower-case letters, "
     "digits or `_`. Created if missing; an existing one must be a "
     "`pgoutput` slot of the same database. No two pipelines on the same "
     "database may share one."},
    {.section = "pipelines.<name>", .name = "slot_lost", .type = ZX_CF_ENUM_INT,
     .def = "fail", .offset = OWN(slot_lost), .flags = ZX_CF_OWN,
     .allowed = slot_lost,
     .help = "What to do when the slot zx streamed from is gone (dropped by "
     "someone, or invalidated by `max_slot_wal_keep_size`): the changes "
     "made meanwhile are lost to zx. `fail`: the pipeline stops (status "
     "`failed`, the log and the feed say so at error level) and nothing "
     "is copied; `resync`: a new slot is made, every table is copied "
     "again, and each `__changes` table gets a row with `_op` `gap` whose "
     "`_lsn` is `A..B`: the history lacks the changes between the last "
     "confirmed LSN A and the new snapshot B. Set it, `zxctl reload`, and "
     "set it back once the pipeline streams again."},
    {.section = "pipelines.<name>", .name = "publication", .type = ZX_CF_SQLNAME,
     .def_doc = "`zx_` and the pipeline name, `-` written `_`, cut to 63 bytes",
     .offset = OWN(publication), .flags = ZX_CF_OWN,
     .help = "The publication the slot reads through: 1 to 63 bytes without "
     "control characters, an exact (quoted) name. Created `FOR TABLE` the "
     "`tables` if missing (PostgreSQL 15 needs CREATE on the database and "
     "ownership of the tables for that); an existing one is used as it is, "
     "and must cover every table (`zxctl test` checks)."},
};

/* Lineage: each source table, through the replication slot, on its
 * connection. */
static void pg_lineage(const zx_conf *c, const zx_conf_pipeline *p, zx_lineage_out *out)
{
    (void)c;
    const zx_postgres_opts *o = zx_postgres_opts_of(p);
    int slot = o->slot ? zx_lineage_ext(out, "postgres.slot", p->connection, o->slot) : -1;
    for (size_t i = 0; i < o->ntables; i++) {
        int t = zx_lineage_ext(out, "postgres.table", p->connection, o->tables[i]);
        if (slot >= 0)
            zx_lineage_ext_into(out, t, slot);
    }
}

const zx_plugin zx_plugin_postgres = {
    .name = ZX_POSTGRES_NAME,
    .role = ZX_PLUGIN_SOURCE,
    .lineage = pg_lineage,
    .caps = ZX_PLUGIN_MIRROR | ZX_PLUGIN_PARK | ZX_PLUGIN_DSN | ZX_PLUGIN_VERIFY,
    .conn_kinds = conn_kinds,
    .check = zx_pg_check,
    .test = zx_pg_cdc_test,
    .retire = zx_pg_retire,
    .retire_what = "slot",
    .retire_subject = zx_pg_retire_subject,
    .admin = &zx_pg_admin_drop_slot,   /* zxctl drop-slot (pg_retire.h) */
    .opts_size = sizeof(zx_postgres_opts),
    .source = &zx_source_postgres,
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .doc = "change data capture: the `tables` of the PostgreSQL database of "
     "`connection` are mirrored, each into a workspace table of its own "
     "name (with `table_prefix`), through logical replication (pgoutput, a "
     "publication and a replication slot). Needs `wal_level = logical` and "
     "a role with REPLICATION: `zxctl test <pipeline>` checks every "
     "requirement and says what is missing.",
};
