/*
 * iceberg_plugin.c — the plug-in iceberg: destination Apache Iceberg
 * tables through a catalog (dest_iceberg.c).  Its registration
 * (conf/plugin.h), listed once in workers/plugins.def; its option rows
 * (the sub-section destination.iceberg, into its own struct
 * iceberg_opts.h; and the options of its catalog connections, kinds
 * iceberg_rest, glue and s3tables, into zx_conf_connection), its checks.
 * The catalog and the aws connection are resolved by conf/syncs.c through
 * dest_where.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf/plugin.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/iceberg/iceberg_opts.h"

extern const zx_dest zx_dest_iceberg;   /* dest_iceberg.c */

#define OWN(f) offsetof(zx_iceberg_opts, f)
#define CONN(f) offsetof(zx_conf_connection, f)

static const char *const conn_kinds[] = {"iceberg_rest", "glue", "s3tables", NULL};
static const char *const compressions[] = {"zstd", "snappy", "none", NULL};
static const char *const sync_only[] = {"sync", NULL};

static const zx_cf_option options[] = {
    {.section = "pipelines.<name>.destination.iceberg", .name = "catalog",
     .type = ZX_CF_STRING, .def_doc = "**required** with `iceberg`",
     .offset = OWN(catalog), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The connection of the table's catalog: `kind: iceberg_rest` (an "
     "Iceberg REST catalog: Polaris, Nessie, Gravitino, Lakekeeper, Unity, "
     "Tabular...), `kind: glue` (AWS Glue) or `kind: s3tables` (Amazon S3 Tables)."},
    {.section = "pipelines.<name>.destination.iceberg", .name = "namespace",
     .type = ZX_CF_STRING, .def_doc = "**required** with `iceberg`",
     .offset = OWN(namespace_), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The table's namespace (one level; Glue: the database), created when "
     "missing."},
    {.section = "pipelines.<name>.destination.iceberg", .name = "table",
     .type = ZX_CF_STRING, .def_doc = "**required** with `iceberg`",
     .offset = OWN(table), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The table's name, created (format version 2) when missing, with the "
     "result's columns and the sync's `key` as its identifier fields."},
    {.section = "pipelines.<name>.destination.iceberg", .name = "connection",
     .type = ZX_CF_STRING, .def_doc = "the catalog's own (glue, s3tables); none",
     .offset = OWN(connection), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The `kind: aws` connection the table's files in S3 are written "
     "through. A table in a folder of this host needs none (its folder must lie "
     "under `server.file_roots`)."},
    {.section = "pipelines.<name>.destination.iceberg", .name = "compression",
     .type = ZX_CF_ENUM, .def = "zstd", .offset = OWN(compression), .flags = ZX_CF_OWN,
     .allowed = compressions, .sources = sync_only,
     .help = "The data files' Parquet codec."},
    {.section = "pipelines.<name>.destination.iceberg", .name = "file_rows",
     .type = ZX_CF_UINT, .def = "262144", .offset = OWN(file_rows), .flags = ZX_CF_OWN,
     .min = 1000, .max = 100000000, .sources = sync_only,
     .help = "Rows per data file at most. An upsert or mirror run rewrites the "
     "files that hold a changed or deleted key."},
    {.section = "pipelines.<name>.destination.iceberg", .name = "keep_snapshots",
     .type = ZX_CF_UINT, .def = "100", .offset = OWN(keep_snapshots), .flags = ZX_CF_OWN,
     .min = 1, .max = 100000, .sources = sync_only,
     .help = "Snapshots kept: older ones expire at the end of a run, and the files "
     "zx wrote that no kept snapshot uses are deleted (never another writer's)."},
    /* the catalog connections */
    {.section = "connections.<name>", .name = "uri", .type = ZX_CF_STRING,
     .offset = CONN(uri), .flags = ZX_CF_TOKEN,
     .help = "iceberg_rest: the catalog's base URL, before `/v1` "
     "(`https://catalog.example/api/catalog`)."},
    {.section = "connections.<name>", .name = "warehouse", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(warehouse), .flags = ZX_CF_TOKEN,
     .help = "iceberg_rest: the warehouse asked for (`/v1/config?warehouse=`); glue: "
     "where new tables go, `s3://bucket/prefix` (a table: "
     "`<warehouse>/<namespace>.db/<table>`)."},
    {.section = "connections.<name>", .name = "credential", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(credential), .flags = ZX_CF_SECRET,
     .help = "iceberg_rest: OAuth2 client credentials, `client_id:client_secret`, "
     "exchanged at the catalog's token endpoint. Prefer `${env:NAME}`."},
    {.section = "connections.<name>", .name = "token", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(token), .flags = ZX_CF_SECRET,
     .help = "iceberg_rest: a bearer token, instead of `credential`."},
    {.section = "connections.<name>", .name = "scope", .type = ZX_CF_STRING,
     .def_doc = "`catalog`", .offset = CONN(scope),
     .help = "iceberg_rest: the OAuth2 scope asked for with `credential`."},
    {.section = "connections.<name>", .name = "connection", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(aws_connection),
     .help = "glue, s3tables: the `kind: aws` connection (region, credentials) the "
     "catalog and the table's files are reached through."},
    {.section = "connections.<name>", .name = "table_bucket_arn", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(table_bucket_arn), .flags = ZX_CF_TOKEN,
     .help = "s3tables: the table bucket "
     "(`arn:aws:s3tables:REGION:ACCOUNT:bucket/NAME`)."},
    {.section = "connections.<name>", .name = "catalog_id", .type = ZX_CF_STRING,
     .def_doc = "the caller's account", .offset = CONN(catalog_id), .flags = ZX_CF_TOKEN,
     .help = "glue: the account id of the Data Catalog."},
};

static int iceberg_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    int rc = 0;
    static const char *const req[] = {"catalog", "namespace", "table", NULL};
    for (int i = 0; req[i]; i++) {
        char at[64];
        snprintf(at, sizeof(at), "destination.iceberg.%s", req[i]);
        if (!zx_check_written(ck, at)) {
            zx_check_error(ck, "destination.iceberg", "pipelines.%s: destination.iceberg: "
                           "missing required field '%s'", p->name, req[i]);
            rc = -1;
        }
    }
    const zx_iceberg_opts *o = p->dest_own;
    const char *bad = NULL;
    if (o && o->namespace_ && (!o->namespace_[0] || strpbrk(o->namespace_, "./\x1f")))
        bad = "namespace";
    else if (o && o->table && (!o->table[0] || strpbrk(o->table, "/\x1f")))
        bad = "table";
    if (bad) {
        char at[64];
        snprintf(at, sizeof(at), "destination.iceberg.%s", bad);
        zx_check_error(ck, at, "pipelines.%s: destination.iceberg.%s: a name without '/' "
                       "(and for a namespace one level, without '.')", p->name, bad);
        rc = -1;
    }
    return rc;
}

static int catalog_check_connection(zx_cf_check *ck, zx_conf_connection *c)
{
    int bad = 0;
    const char *need = !strcmp(c->kind, "iceberg_rest") ? "uri"
                       : !strcmp(c->kind, "glue") ? "connection" : "connection";
    if (!zx_check_written(ck, need)) {
        zx_check_error(ck, need, "connections.%s: kind %s needs `%s`", c->name, c->kind, need);
        bad++;
    }
    if (!strcmp(c->kind, "s3tables") && !c->table_bucket_arn) {
        zx_check_error(ck, "table_bucket_arn", "connections.%s: kind s3tables needs "
                       "`table_bucket_arn`", c->name);
        bad++;
    }
    if (!strcmp(c->kind, "glue") && !c->warehouse) {
        zx_check_error(ck, "warehouse", "connections.%s: kind glue needs `warehouse` "
                       "(s3://bucket/prefix: where new tables go)", c->name);
        bad++;
    }
    if (c->uri && strncmp(c->uri, "http://", 7) && strncmp(c->uri, "https://", 8)) {
        zx_check_error(ck, "uri", "connections.%s: uri: an http:// or https:// URL", c->name);
        bad++;
    }
    if (c->credential && !strchr(c->credential, ':')) {
        zx_check_error(ck, "credential", "connections.%s: credential: "
                       "client_id:client_secret", c->name);
        bad++;
    }
    return bad ? -1 : 0;
}

static void iceberg_where(const zx_conf_pipeline *p, zx_dest_where *w)
{
    const zx_iceberg_opts *o = p->dest_own;
    w->path = NULL;
    w->format = NULL;
    w->connection = o ? o->connection : NULL;
    w->catalog = o ? o->catalog : NULL;
    w->option = "destination.iceberg";
    if (o && o->catalog && o->namespace_ && o->table)
        snprintf(w->target, sizeof(w->target), "catalog %s table %s.%s", o->catalog,
                 o->namespace_, o->table);
}

const zx_plugin zx_plugin_dest_iceberg = {
    .name = "iceberg",
    .role = ZX_PLUGIN_DESTINATION,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_iceberg,
    .check = iceberg_check,
    .check_connection = catalog_check_connection,
    .dest_where = iceberg_where,
    .section_doc = "Apache Iceberg (table format 2): each run is one snapshot, committed "
     "through the catalog with its optimistic concurrency (REST: assert-table-uuid "
     "and assert-ref-snapshot-id; Glue: the table's VersionId; S3 Tables: its "
     "versionToken). The snapshot's summary names the sync and the run, so a run "
     "whose commit's answer was lost is found committed, never committed twice. "
     "`replace` overwrites; `append` appends; `upsert` and `mirror` append the new and "
     "changed rows and a position delete file per partition for the rows they replace "
     "(merge-on-read, found from key copies zx keeps in `<table location>/_zx/`; zx's "
     "delete files are compacted once they number 16), or, on a table whose "
     "`write.merge.mode` is `copy-on-write`, rewrite only the data files holding a "
     "changed or deleted key. New result columns are "
     "added to the schema with new field ids; a column whose type changes fails the "
     "run. Tested with the readers pyiceberg and Daft.",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_iceberg_opts),
    .doc = "Apache Iceberg tables through a REST catalog, AWS Glue or Amazon S3 Tables, "
     "one snapshot per run.",
};
