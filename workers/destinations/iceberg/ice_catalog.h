/*
 * ice_catalog.h — the Iceberg catalogs a table is found and committed
 * through: an Iceberg REST catalog (kind iceberg_rest: the REST catalog
 * OpenAPI spec, OAuth2 client credentials or a bearer token), AWS Glue
 * (kind glue: the table's metadata file in S3, its location in Glue's
 * table parameters, swapped with UpdateTable and the table's VersionId)
 * and Amazon S3 Tables (kind s3tables: UpdateTableMetadataLocation with
 * the table's versionToken).
 *
 * One interface for all three.  The destination (dest_iceberg.c) makes
 * the table's metadata itself (TableMetadata v2 JSON, the Iceberg table
 * spec) and hands a catalog both forms of a change: REST's requirements
 * and updates (the server writes the metadata file), and the whole new
 * metadata (a file catalog writes it through args.put, to
 * "<table location>/metadata/<5-digit version>-<uuid>.metadata.json",
 * then swaps its pointer).
 *
 * Errors: -1 with one line in err naming the catalog and the table, with
 * the catalog's own words ("iceberg catalog rest_cat: table sales.orders:
 * 403 Forbidden: ..."), never a secret (no token, no client secret, no
 * signature).
 *
 * A catalog handle is one process's, used by one thread.
 */
#ifndef ZX_DEST_ICE_CATALOG_H
#define ZX_DEST_ICE_CATALOG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

#define ZX_ICECAT_NOT_FOUND 1   /* load: no such table */
#define ZX_ICECAT_EXISTS    2   /* create: the table exists already */
#define ZX_ICECAT_CONFLICT  3   /* commit: a requirement failed (another
                                   writer committed first; REST 409, Glue
                                   ConcurrentModificationException, S3
                                   Tables ConflictException): nothing changed */
#define ZX_ICECAT_UNKNOWN   4   /* commit: the outcome is unknown (timeout,
                                   5xx after retries): read the table back */

typedef struct zx_icecat zx_icecat;

typedef struct zx_icecat_args {
    const char *name;             /* the connection's name, for messages */
    const char *kind;             /* "iceberg_rest" | "glue" | "s3tables" */
    /* iceberg_rest */
    const char *uri;              /* "https://host/api/catalog" (no /v1) */
    const char *warehouse;        /* sent as ?warehouse= to /v1/config; NULL: none */
    const char *credential;       /* "client_id:client_secret" (OAuth2 client
                                     credentials at <uri>/v1/oauth/tokens, or
                                     the config's oauth2-server-uri); NULL */
    const char *token;            /* a bearer token; NULL */
    const char *scope;            /* OAuth2 scope; NULL: "catalog" */
    /* glue and s3tables: the `kind: aws` connection (region, keys, endpoint) */
    const zx_conf_connection *aws;
    const char *location;         /* glue: where new tables go,
                                     "s3://bucket/warehouse" (a table:
                                     <location>/<ns>.db/<table>) */
    const char *table_bucket_arn; /* s3tables */
    const char *catalog_id;       /* glue: the account id; NULL: the caller's */
    int64_t deadline_ms;          /* per request; <= 0: 30 s */
    /* file catalogs (glue, s3tables): write the n bytes at p to url
     * ("s3://bucket/key"), whole, visible at once.  0 or -1 with err. */
    int (*put)(void *ctx, const char *url, const void *p, size_t n, char *err,
               size_t errlen);
    void *put_ctx;
} zx_icecat_args;

/* A table as the catalog has it (every field owned; zx_icecat_table_free). */
typedef struct zx_icecat_table {
    json_t *metadata;             /* TableMetadata JSON */
    char *metadata_location;      /* its file's URL; NULL when unknown */
    char *token;                  /* glue: VersionId; s3tables: versionToken;
                                     REST: NULL */
} zx_icecat_table;

void zx_icecat_table_free(zx_icecat_table *t);

/* A catalog of args' kind (strings copied).  REST: GET /v1/config (and the
 * OAuth2 token) happen here, so a wrong URI or credential fails at open.
 * NULL with err. */
zx_icecat *zx_icecat_open(const zx_icecat_args *args, char *err, size_t errlen);
void zx_icecat_free(zx_icecat *c);                     /* NULL: no-op */

/* Make namespace ns (one level, "sales") when missing.  0 or -1. */
int zx_icecat_ensure_namespace(zx_icecat *c, const char *ns, char *err, size_t errlen);

/* Load table ns.name into *out (zeroed first).  0, ZX_ICECAT_NOT_FOUND, -1. */
int zx_icecat_load(zx_icecat *c, const char *ns, const char *name, zx_icecat_table *out,
                   char *err, size_t errlen);

/* Create table ns.name.  REST: from create_req (the CreateTableRequest
 * body: name, schema, partition-spec, write-order, properties; the server
 * makes the metadata).  Glue / s3tables: from metadata (a whole v2
 * TableMetadata the caller made, whose "location" the caller chose: for
 * s3tables leave it "" and the catalog fills in the location S3 Tables
 * gives, "<warehouseLocation>"), written through put, then registered.
 * *out gets the table as created.  0, ZX_ICECAT_EXISTS, -1. */
int zx_icecat_create(zx_icecat *c, const char *ns, const char *name, const json_t *create_req,
                     const json_t *metadata, zx_icecat_table *out, char *err, size_t errlen);

/* Commit a change to table ns.name whose state the caller read as base.
 * REST: POST requirements (e.g. [{"type":"assert-table-uuid",...},
 * {"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":N|null}])
 * and updates (add-snapshot, set-snapshot-ref, add-schema,
 * set-current-schema, remove-snapshots, set-properties...).  Glue /
 * s3tables: new_metadata (the whole TableMetadata after the change, its
 * metadata-log holding base's file) written through put, then the pointer
 * swapped from base->metadata_location with base->token.  *out (may be
 * NULL) gets the table after the commit.  0, ZX_ICECAT_CONFLICT,
 * ZX_ICECAT_UNKNOWN, or -1 (a refusal that retrying cannot change). */
int zx_icecat_commit(zx_icecat *c, const char *ns, const char *name,
                     const zx_icecat_table *base, const json_t *requirements,
                     const json_t *updates, const json_t *new_metadata,
                     zx_icecat_table *out, char *err, size_t errlen);

#endif
