/*
 * config.h — the zxd YAML configuration: its C model and its loader.
 *
 * Option rows (name, type, default, offset into the struct below or into
 * a plug-in's own struct, help text, allowed values, the sources that take
 * it) drive parsing, validation, comparison (zx_conf_pipeline_same),
 * freeing and the reference documentation (conf/OPTIONS.md, printed by
 * zx_conf_write_reference): the core table of conf/options.c, and each
 * plug-in's rows in its `<name>_plugin.c` (conf/plugin.h).  To add an
 * option: add the field (here, or in the plug-in's own struct), add one
 * row, regenerate OPTIONS.md (`zxd --config-reference`, or
 * `tests/unit/test_config --print-reference`).  A new value of `source:`
 * is a plug-in with the rows it takes.
 *
 * Loading is all-or-nothing: zx_conf_load either returns a fully validated
 * configuration (every path absolute, every default filled in) or NULL with
 * every error it found, each "file:line:column: message" (1-based).  It
 * never touches running state, so a reload can build the new config, diff
 * it with zx_conf_pipeline_same, and only then swap.
 *
 * References written as ${env:NAME} or ${file:PATH}, a whole value or
 * inside a longer one (`postgresql://zx:${env:PG_PASSWORD}@db1/x`), are
 * resolved at load time ($${ is a literal ${; rules in conf/secrets.c);
 * an error message never contains a resolved value.
 *
 * This module must never: open sockets or databases, create directories,
 * log, exit, or print a secret.  It is safe to call from the supervisor.
 */
#ifndef ZX_CONF_CONFIG_H
#define ZX_CONF_CONFIG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The most pipelines one zxd runs: the one limit the supervisor, the
 * gateway and the writer are sized for.  `zxd --check` refuses more. */
#define ZX_MAX_PIPELINES 1024

/* Optional metadata columns of a stream (zx_conf_pipeline.metadata).  Which
 * ones a pipeline may ask for depends on its source: http takes
 * _ingested_at and _request_id; kafka takes _key, _partition, _offset,
 * _timestamp and _ingested_at. */
/* zx_conf_pipeline.format, .stream_mode (kafka's encoding: ZX_ENC_* of
 * workers/sources/kafka/kafka_opts.h) */
enum { ZX_FORMAT_JSON = 0, ZX_FORMAT_DEBEZIUM = 1 };
enum { ZX_STREAM_APPEND = 0, ZX_STREAM_LATEST = 1 };
/* `slot_lost` of a postgres pipeline (workers/sources/postgres/postgres_opts.h) */
enum { ZX_SLOT_LOST_FAIL = 0, ZX_SLOT_LOST_RESYNC = 1 };

#define ZX_META_INGESTED_AT 0x1u   /* "_ingested_at": UTC time the row arrived */
#define ZX_META_REQUEST_ID  0x2u   /* "_request_id": id of the push request   */
#define ZX_META_KEY        0x4u   /* "_key": the Kafka message key (text) */
#define ZX_META_PARTITION  0x8u   /* "_partition" */
#define ZX_META_OFFSET     0x10u  /* "_offset" */
#define ZX_META_TIMESTAMP  0x20u  /* "_timestamp": the message's timestamp */
#define ZX_META_SHARD      0x40u  /* "_shard": the Kinesis shard id */
#define ZX_META_SEQUENCE   0x80u  /* "_sequence": the record's sequence number (text) */
#define ZX_META_PARTITION_KEY 0x100u /* "_partition_key": the (user) record's */
#define ZX_META_ARRIVAL    0x200u /* "_arrival": when Kinesis took the record */

/* zx_conf.status_page (server.status_page) */
enum { ZX_STATUS_PAGE_AUTO = 0, ZX_STATUS_PAGE_ON = 1, ZX_STATUS_PAGE_OFF = 2 };

typedef struct zx_conf_http {
    char *listen;            /* as written, "host:port" or "[v6]:port" */
    char *host;              /* listen's host part, without brackets */
    uint16_t port;           /* 0 = any free port (tests) */
    uint64_t max_body_size;  /* bytes; default 16 MiB */
    uint64_t max_header_size;/* bytes; default 64 KiB */
    uint32_t max_connections;/* default 1024 */
    uint32_t idle_timeout_ms;          /* default 60 s */
    uint32_t backpressure_timeout_ms;  /* default 2 s: how long a push waits
                                          for room in the ring before 503 */
    uint32_t commit_timeout_ms;        /* default 30 s: how long ?wait=commit
                                          waits before 503 */
    uint64_t max_held_bytes; /* bytes; 0 = max(256 MiB, 4 x largest body) */
    uint32_t header_timeout_ms;        /* default 10 s: request line + headers */
    uint32_t body_timeout_ms;          /* default 30 s (+1 s per body_min_rate
                                          bytes received) */
    uint64_t body_min_rate;            /* bytes/s; default 1 KiB (<= 1 GiB) */
    uint32_t api_auth_failures;        /* default 10: failed API tokens from
                                          one address per window ... */
    uint32_t api_auth_window_ms;       /* default 60 s: ... before 429 */
} zx_conf_http;

/* A connection (`connections.<name>`): how to reach a system that
 * pipelines read from, shared by every pipeline naming it in `connection:`.
 * Its `kind` says which fields apply: `kafka` (a Kafka cluster, for
 * `source: kafka`: brokers ... properties) or `postgres` (a PostgreSQL
 * database, for `source: postgres`: dsn, dsn_shown).  The fields of the
 * other kind are NULL / 0.  Every string is owned by the zx_conf. */
typedef struct zx_conf_connection {
    char *name;              /* map key, same syntax as a pipeline name */
    char *kind;              /* "kafka" | "postgres" */
    char **brokers;          /* kafka: "host:port" each, as written (host
                                non-empty, port 1..65535); at least one */
    size_t nbrokers;
    char *brokers_csv;       /* brokers joined with ',' (what librdkafka wants) */
    char *security;          /* kafka: "plaintext" (default) | "ssl" |
                                "sasl_plaintext" | "sasl_ssl"; NULL for
                                other kinds */
    char *sasl_mechanism;    /* "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512";
                                NULL when no sasl (security not sasl_*) */
    char *sasl_username;     /* taken literally but for ${env:}/${file:}
                                references ("$ConnectionString" is literal) */
    char *sasl_password;     /* secret; NULL when no sasl, or when loaded with
                                ZX_CONF_SKIP_SECRETS and written with a
                                ${env:}/${file:} reference */
    char *tls_ca, *tls_cert, *tls_key;  /* absolute paths or NULL; checked
                                readable at load (not with SKIP_SECRETS);
                                cert and key both or neither */
    char *tls_key_password;  /* secret or NULL (as sasl_password) */
    char **prop_keys;        /* other librdkafka properties, passed through */
    char **prop_values;      /* as text (numbers and booleans as written), in
                                file order; never a key zx sets itself.  A
                                value whose key contains "password", "secret"
                                or "sasl.oauthbearer" is secret: NULL when
                                loaded with ZX_CONF_SKIP_SECRETS and written
                                with a reference */
    size_t nprops;
    char *dsn;               /* mysql: mysql://user:pw@host:port/db, checked
                                with zx_mysql_dsn_parse (common/mysql_dsn.h);
                                postgres: libpq connection string (a
                                `postgresql://` URI or key=value pairs),
                                references resolved: may hold a password,
                                never print it (use dsn_shown).  NULL for
                                other kinds, and when loaded with
                                ZX_CONF_SKIP_SECRETS and written with a
                                ${env:}/${file:} reference */
    char *dsn_shown;         /* mysql: zx_mysql_dsn_redact of the dsn;
                                postgres: dsn with every password replaced by
                                `***` (zx_dsn_redact, common/dsn.h): what
                                logs, `zxctl test` and errors may show.  When
                                dsn is NULL (skipped secret): the dsn as
                                written, references unresolved, passwords
                                hidden.  NULL for other kinds */
    char *path;              /* sqlite: the database file, absolute
                                (relative paths are taken from the
                                configuration's folder); NULL for other
                                kinds */
    /* aws (an AWS account, for `source: kinesis`): the region and how the
     * credentials are found (common/aws_creds.h); NULL / 0 for other
     * kinds */
    char *region;            /* aws: "eu-west-1" */
    char *access_key_id;     /* aws: static keys; NULL: the credential chain */
    char *secret_access_key; /* aws: secret (as sasl_password); with access_key_id */
    char *session_token;     /* aws: secret; NULL: none */
    char *profile;           /* aws: the shared files' profile; NULL: $AWS_PROFILE
                                or default */
    char *role_arn;          /* aws: a role assumed on top of the credentials found */
    char *external_id;       /* aws: with role_arn */
    char *endpoint;          /* aws: a compatible service's URL (moto, MinIO...);
                                NULL: AWS's own for the region */
    int path_style;          /* aws: S3 buckets in the path, not the host name */
    /* Iceberg catalogs (workers/destinations/iceberg/iceberg_plugin.c):
     * iceberg_rest, glue, s3tables; NULL for other kinds */
    char *uri;               /* iceberg_rest: the catalog's base URL */
    char *warehouse;         /* iceberg_rest: the warehouse to ask for;
                                glue: where new tables go (s3://...) */
    char *credential;        /* iceberg_rest: secret: "client_id:client_secret" */
    char *token;             /* iceberg_rest: secret: a bearer token */
    char *scope;             /* iceberg_rest: the OAuth2 scope */
    char *aws_connection;    /* glue, s3tables: the `kind: aws` connection's
                                name (`connection:`) */
    char *table_bucket_arn;  /* s3tables */
    char *catalog_id;        /* glue: the account id of the catalog */
    /* OpenSearch / Elasticsearch (workers/destinations/opensearch/
     * opensearch_plugin.c): kind opensearch; NULL / 0 for other kinds */
    char *os_url;            /* `url`: the cluster's base URL (http[s]://host:port[/prefix]) */
    char *os_api_key;        /* `api_key`: secret, sent as "Authorization:
                                ApiKey <it>"; NULL: none */
    char *os_ca_file;        /* `ca_file`: PEM CA bundle, absolute; NULL: the system's */
    int os_insecure;         /* `insecure: true`: no check of the server's certificate */
    /* http (the HTTP API destination, workers/destinations/http/);
     * NULL / 0 for other kinds */
    char *base_url;          /* http: "https://api.example/v2" */
    char **header_keys;      /* http: `headers`, sent with every request */
    char **header_values;    /* secret each (never logged; wiped from the
                                workers that do not use the connection);
                                NULL when loaded with ZX_CONF_SKIP_SECRETS
                                and written with a reference */
    size_t nheaders;
    uint32_t http_timeout_ms; /* http: one request, connect included */
    char *http_ca;           /* http: a PEM CA bundle (absolute); NULL: the
                                system's */
    int http_insecure;       /* http: 1: no certificate check (tests only) */
    /* redis (workers/destinations/redis/redis_plugin.c); NULL / 0 for
     * other kinds.  Its TLS files are tls_ca, tls_cert, tls_key. */
    char *address;           /* redis: host:port, or redis:// / rediss:// URL */
    uint32_t db;             /* redis: the database number (SELECT) */
    char *username;          /* redis: an ACL user (NULL: default); opensearch:
                                HTTP basic authentication (NULL: none) */
    char *password;          /* redis, opensearch: secret (as sasl_password) */
    int read_only;           /* `read_only: true`: reverse syncs never
                                write to it (a destination refuses it at
                                open); 0 (default) */
    int line, column;        /* where the connection's name is written */
} zx_conf_connection;

typedef struct zx_conf_pipeline {
    char *name;              /* map key: [a-z][a-z0-9_-]{0,62} */
    char *direction;         /* "stream" (only value accepted today) */
    char *source;            /* its plug-in's name (conf/plugin.h; known to the
                                configuration; zxd marks a pipeline whose
                                source this build has no worker for as
                                failed, see workers/sources/registry.c).
                                A stream: its `source:`.  A reverse sync
                                (direction: out) writes none: the loader
                                sets "sync", the name of the plug-in of
                                role ZX_PLUGIN_SYNC.  Kept as the internal
                                name on purpose (status output, the worker's
                                process title, zx_source_find and the tests
                                read it); it is not a source plug-in: look
                                a pipeline's plug-in up with
                                zx_plugin_of_pipeline, never with
                                zx_plugin_find(ZX_PLUGIN_SOURCE...). */
    /* http's `key`, `webhook_secret`, `ack` and `max_body_size`: its own
     * options (own, workers/sources/http/http_opts.h) */
    char *table;             /* http, kafka: default: name with '-'
                                replaced by '_'; [A-Za-z_][A-Za-z0-9_]{0,62},
                                not "_zx*", not "*__rejects", not "sqlite_*"
                                (case-insensitive).  NULL for postgres: its
                                tables are `mirrors` */
    uint32_t metadata;       /* ZX_META_* bits; 0 for postgres */
    uint64_t body_limit;     /* effective limit: what its plug-in's
                                body_limit gives (http: its own
                                max_body_size), or the server's
                                http.max_body_size when that is 0 or the
                                plug-in has none */
    uint64_t ring_size;      /* bytes of this pipeline's frames ring: the
                                server's ring_size, or less when the ring
                                budget made it smaller (see ring_budget) */
    uint64_t in_ring_size;   /* bytes of its request ring: twice (the body
                                limit + 64 KiB), at least 8 MiB; 0 for
                                sources other than http (no request ring,
                                no reply ring) */
    uint64_t shm_size;       /* all the shared memory its segment may take
                                (rings, their headers, the reply ring):
                                ZX_SEG_MAX_BYTES(in_ring_size, ring_size) */
    char *connection;        /* kafka: the connection's name as written;
                                NULL for sources without a connection */
    const zx_conf_connection *conn; /* that connection, resolved: owned by the
                                zx_conf (an element of its connections);
                                NULL for sources without a connection */
    /* kafka's topics, group, start, on_topic_reset, encoding and
     * schema_registry: its own options (own,
     * workers/sources/kafka/kafka_opts.h) */
    uint32_t max_columns;    /* columns its table gets from the data at most
                                (default 500, 1..1500); the rest go to _extra */
    uint64_t max_parked_bytes; /* `max_parked_bytes`: bytes of changes parked
                                per mirror table the workspace refuses
                                (default 256 MiB; 0 = never park: the
                                pipeline is held back) */
    /* The workspace mirror tables this pipeline writes, set by its
     * plug-in's check (postgres: table_prefix + each source table's name);
     * NULL, 0 for the others.  No two tables of the whole file (mirrors,
     * their `<mirror>__changes` with history, other pipelines' tables) are
     * equal without regard to case (conf/tables.c). */
    char **mirrors;          /* nmirrors names, each a valid table name */
    char **mirror_of;        /* nmirrors: what mirrors[i] mirrors, as its
                                source names it (postgres: "schema.table"),
                                for messages */
    size_t nmirrors;
    uint32_t max_tables;     /* `max_tables`: tables a `table` template may
                                make (default 100) */
    char *table_pattern;     /* `table_pattern`: POSIX extended regex the
                                made names must match (checked to compile);
                                NULL: any */
    /* kafka and http: how each message becomes rows (other sources: 0,
     * NULL) */
    int format;              /* ZX_FORMAT_JSON (0, default): rows appended;
                                ZX_FORMAT_DEBEZIUM: Debezium change events
                                mirrored (workers/sources/debezium/debezium.h) */
    int stream_mode;         /* `mode` of a stream: ZX_STREAM_APPEND (0,
                                default) or ZX_STREAM_LATEST (a mirror kept
                                latest per `key_columns`) */
    char **key_columns;      /* `key_columns`: the mirror's key where the
                                messages carry none (required with mode:
                                latest); NULL, 0: none */
    size_t nkey_columns;
    /* postgres's `tables`, `table_prefix`, `initial_copy`, `slot`,
     * `slot_lost` and `publication`: its own options (own,
     * workers/sources/postgres/postgres_opts.h) */
    int history;             /* 1: also append every change to
                                `<mirror>__changes` (mirrors then at most 54
                                bytes); 0 (default) */
    uint32_t deleted_keys_retention_ms; /* `deleted_keys_retention`: how
                                long a deleted key's position is kept
                                (workers/writer/keyseq.h) */
    /* direction: out (a reverse sync; source is "sync"): its options
     * (author, query, mode, key, schedule, batch_rows, query_timeout,
     * max_spill_bytes, destination.connection and .table) are the plug-in
     * sync's own (workers/syncs/sync_opts.h, zx_sync_opts_of); what two of
     * them resolve to is here.  Other pipelines have these NULL. */
    const struct zx_conf_author *auth; /* its `author`, resolved: owned by
                                the zx_conf (an element of its authors) */
    const zx_conf_connection *dest_conn; /* its `destination.connection`,
                                or its files destination's `connection`
                                (an s3:// path's, kind aws), resolved;
                                NULL without connection */
    const zx_conf_connection *dest_catalog; /* a lake destination's catalog
                                (Iceberg: kind iceberg_rest, glue or
                                s3tables), resolved like dest_conn; NULL:
                                none */
    /* the other destinations' options (`destination.files: {path, format,
     * compression}`...) are their plug-in's own: dest_own */
    const struct zx_plugin *plugin; /* its plug-in (conf/plugin.h,
                                zx_plugin_of_pipeline(source)): its source's,
                                or for a reverse sync the one plug-in of role
                                ZX_PLUGIN_SYNC; resolved by the loader; NULL
                                only while a configuration with errors is
                                built */
    void *own;               /* that plug-in's own options struct (its
                                opts_size bytes, its ZX_CF_OWN rows set),
                                owned by the zx_conf; NULL when it has none */
    const struct zx_plugin *dest_plugin; /* a reverse sync's destination
                                plug-in (role ZX_PLUGIN_DESTINATION): the one
                                whose sub-section `destination.<its name>`
                                is written (set by the walk, so a plug-in's
                                check sees it), or for `destination:
                                {connection, table}` the plug-in of the
                                connection's kind (set once connections are
                                resolved: NULL before, and in checks).  NULL
                                when none is written.  A stream with
                                `forward: {<its name>: {...}}` (forward set):
                                where it forwards what it applies (today
                                kafka only), the same plug-in and options
                                as a sync's destination */
    int forward;             /* a stream: 1 when `forward:` is written (its
                                sub-section is walked as a destination's;
                                conf/forward.c checks it and resolves
                                dest_conn); 0 for every other pipeline */
    void *dest_own;          /* that plug-in's own options struct (its
                                opts_size bytes, its ZX_CF_OWN rows set,
                                e.g. workers/destinations/files/files_opts.h),
                                allocated when its sub-section is written;
                                owned by the zx_conf; NULL when it has none */
    int line, column;        /* where the pipeline's name is written (1-based) */
} zx_conf_pipeline;

/* An author (`authors.<name>`): whose rights a sync's query runs with.
 * The query may read only `tables` (workspace tables, exact names). */
typedef struct zx_conf_author {
    char *name;
    char **tables;
    size_t ntables;
    char **operators;        /* system users whose one-off sends (`zxctl
                                send`) run as this author; NULL = none */
    size_t noperators;
    int line, column;
} zx_conf_author;

/* An API token (`api_tokens.<name>`) of the gateway's sync API. */
typedef struct zx_conf_apitoken {
    char *name;
    char *token;             /* the bearer token (secret); NULL when loaded
                                with ZX_CONF_SKIP_SECRETS and written with
                                a reference */
    char *role;              /* "orchestrator": its runs start at once;
                                "agent": they wait for `zxctl approve`;
                                "status": read-only (status, lineage,
                                feed, metrics), runs nothing */
    char **syncs;            /* the syncs it may run; NULL (nsyncs 0) = all */
    size_t nsyncs;
    uint32_t approval_timeout_ms; /* agent: an unapproved run expires after
                                     this (from when it was asked for) */
    uint32_t max_waiting;    /* agent: its runs not yet approved, at most */
    int line, column;
} zx_conf_apitoken;

/* The most source tables one postgres pipeline mirrors (`tables:`). */
#define ZX_MAX_PG_TABLES 1000

/* The database the pipelines write into (zx_conf.ws_kind): `workspace.sqlite`
 * or `workspace.postgres`, at most one of the two written. */
enum {
    ZX_WS_KIND_SQLITE = 0,   /* the default, also when `workspace` is absent */
    ZX_WS_KIND_POSTGRES = 1
};

typedef struct zx_conf {
    char *path;              /* absolute path of the file (symlinks resolved) */
    char *base_dir;          /* its folder */
    char *data_dir;          /* absolute, normalised; not created here */
    char **file_roots;       /* server.file_roots: absolute, normalised;
                                with <data_dir>/exports the folders files
                                may be written to (zx_conf_file_roots) */
    size_t nfile_roots;
    char *control_socket;    /* absolute; shorter than sun_path */
    char *control_group;     /* NULL or a group name: socket mode 0660 with
                                that group (checked by whoever binds) */
    char *secret_key_file;   /* absolute: the key of ${secret:NAME} */
    char *secret_store;      /* absolute: the encrypted secrets
                                (common/secret_store.h) */
    char *log_level;         /* "debug" | "info" (default) | "warn" | "error" */
    int core_dumps;          /* `server.core_dumps`: 1 lets zxd and its
                                workers be dumpable; 0 (default): not */
    zx_conf_http http;
    int ws_kind;             /* ZX_WS_KIND_SQLITE (default) or
                                ZX_WS_KIND_POSTGRES (`workspace.postgres`
                                written) */
    char *sqlite_path;       /* absolute; default <data_dir>/workspace.db.
                                The sqlite_* fields hold their defaults, and
                                are unused, with ZX_WS_KIND_POSTGRES */
    char *sqlite_synchronous;/* "normal" (default) | "full" */
    char *sqlite_page_size;  /* "4KiB" .. "64KiB" (default "32KiB"): new files */
    /* ZX_WS_KIND_POSTGRES only: with ZX_WS_KIND_SQLITE pg_dsn and
     * pg_dsn_shown are NULL, pg_schema and pg_application_name hold their
     * defaults. */
    char *pg_dsn;            /* libpq connection string (`postgresql://` URI
                                or key=value pairs), references resolved:
                                may hold a password, never print it (use
                                pg_dsn_shown).  NULL when loaded with
                                ZX_CONF_SKIP_SECRETS and written with a
                                ${env:}/${file:} reference */
    char *pg_dsn_shown;      /* pg_dsn with every password replaced by `***`
                                (zx_dsn_redact, common/dsn.h): what logs,
                                status and errors may show.  When pg_dsn is
                                NULL (skipped secret): the dsn as written,
                                references unresolved, passwords hidden */
    char *pg_schema;         /* schema of the tables: 1 to 63 bytes without
                                control characters (so no NUL), an exact
                                name (to be quoted); default "public" */
    char *pg_application_name; /* libpq application_name; default "zxd" */
    int pg_shared;           /* workspace.postgres.shared: several zxd write
                                the schema (workspace_pg.c) */
    uint32_t pg_lease_ms;    /* workspace.postgres.lease: how long a lease
                                (workers/writer/workspace_lease.h) lasts
                                unrenewed; 2 s .. 10 min, default 15 s */
    uint32_t commit_interval_ms; /* longest a writer transaction stays open
                                    while frames keep arriving; 20 ms */
    uint32_t max_queue_delay_ms; /* a frame waiting this long for the writer
                                    makes new pushes wait; 0 = bytes only */
    uint32_t sync_query_timeout_ms; /* default query_timeout of syncs (1 h) */
    int status_page;         /* ZX_STATUS_PAGE_*: the gateway's page at `/` */
    uint64_t sync_max_spill_bytes;  /* default max_spill_bytes of syncs
                                       (10 GiB) */
    uint64_t ring_size;      /* per pipeline frames ring, default 64 MiB;
                                validated >= 2 * largest body limit + 1 MiB */
    uint64_t ring_budget;    /* shared memory all pipelines' rings may take;
                                default: a quarter of the machine's memory */
    uint64_t ring_bytes;     /* what they take (sum of pipelines' shm_size) */
    size_t nconnections;
    zx_conf_connection *connections; /* in file order; those no pipeline
                                        uses are kept too */
    size_t npipelines;
    zx_conf_pipeline *pipelines;  /* in file order */
    size_t nauthors;
    zx_conf_author *authors;      /* in file order */
    size_t napitokens;
    zx_conf_apitoken *apitokens;  /* in file order */
} zx_conf;

/* Error list filled by zx_conf_load: each message is
 * "file:line:column: message" where file is the path as passed to
 * zx_conf_load; errors with no place in the text (cannot open or read the
 * file, out of memory) are "file: message".  At most 100 are stored, then
 * one "too many errors".  Initialise with {0}; free with
 * zx_conf_errors_free. */
typedef struct zx_conf_errors {
    size_t n;
    char **msgs;
} zx_conf_errors;

/* Flag for zx_conf_load: do not resolve ${env:}/${file:} references in
 * options marked secret (pipelines.*.key, connections.*.sasl.password,
 * connections.*.tls.key_password, and properties whose key names a
 * password or secret); leave those fields NULL, with no error.  Nor check
 * that TLS files are readable (zxctl may run as another user than zxd).
 * Other options (paths, ...) are still resolved, since the caller (zxctl)
 * needs them. */
#define ZX_CONF_SKIP_SECRETS 0x1u

/* Read, parse and validate the YAML file at `path`.
 * Returns a new configuration owned by the caller (free with zx_conf_free),
 * or NULL on any error: then every error found (not only the first) is
 * appended to errs, unless errs is NULL.  Out of memory is reported as an
 * error too.  Does not create anything, and opens only the file itself,
 * ${file:} secrets and the connections' TLS files (opened and closed at
 * once, to report a missing or unreadable one). */
zx_conf *zx_conf_load(const char *path, unsigned flags, zx_conf_errors *errs);

/* Free the messages and reset *errs to {0}.  NULL ok. */
void zx_conf_errors_free(zx_conf_errors *errs);

/* Free a configuration and everything it points to.  NULL ok. */
void zx_conf_free(zx_conf *c);

/* The pipeline called `name`, or NULL.  The pointer is owned by c and valid
 * until zx_conf_free(c). */
const zx_conf_pipeline *zx_conf_find(const zx_conf *c, const char *name);
/* Each secret of p's own options (the string rows of its plug-in flagged
 * ZX_CF_OWN and ZX_CF_SECRET: http's key and webhook_secret; then those of
 * its destination plug-in's, in dest_own) that is set: fn(secret, arg), in
 * row order.  The strings are p's (owned by its
 * zx_conf).  p NULL, or without own options: none. */
void zx_conf_own_secrets(const zx_conf_pipeline *p, void (*fn)(const char *s, void *arg),
                         void *arg);
/* Each secret string option of connection c that is set (every row of
 * a `connections.<name>` section flagged ZX_CF_SECRET of type string:
 * sasl.password, tls.key_password, secret_access_key, session_token...;
 * every value of such a mapping: http's headers; not the dsn, whose
 * password is inside it): fn(secret, arg), in row
 * order.  The strings are c's.  c NULL: none. */
void zx_conf_connection_secrets(const zx_conf_connection *c,
                                void (*fn)(const char *s, void *arg), void *arg);
/* The bytes of changes the writer may park per mirror table of pipeline p
 * (its max_parked_bytes) when p keeps mirrors and its plug-in parks
 * (ZX_PLUGIN_PARK: source postgres; kafka with format debezium or mode
 * latest; not http); 0 for any other pipeline (or NULL, or one whose
 * plug-in is not resolved), whose frames are held back as a whole when
 * their table refuses them. */
uint64_t zx_conf_parked_bound(const zx_conf_pipeline *p);

/* The author / API token called `name`, or NULL.  Owned by c. */
const zx_conf_author *zx_conf_find_author(const zx_conf *c, const char *name);
const zx_conf_apitoken *zx_conf_find_apitoken(const zx_conf *c, const char *name);

/* 1 when p is a reverse sync (`direction: out`), else 0. */
int zx_conf_is_sync(const zx_conf_pipeline *p);
/* 1 when p is a stream that forwards what it applies (`forward:`, checked:
 * p->dest_plugin and p->dest_conn set), else 0. */
int zx_conf_forwards(const zx_conf_pipeline *p);

/* The folders files may be written to: roots[0] = exports, which gets
 * "<data_dir>/exports" (exlen bytes; ZX_CONF_EXPORTS_MAX is enough), then
 * server.file_roots (pointers into c).  Returns how many were put in
 * roots (at most max). */
#define ZX_CONF_EXPORTS_MAX 4200
size_t zx_conf_file_roots(const zx_conf *c, char *exports, size_t exlen, const char **roots,
                          size_t max);

/* Where a files destination may write: path (absolute, normalised) of
 * format fmt ("csv", "json", "parquet"), for sync `self` (its name; a
 * send's transient name) lies under a root (zx_conf_file_roots), no part
 * of it below the root is a symbolic link, and it is not another
 * configured sync's output (its file, its per-run files, or its file in
 * its folder).  0, or -1 with one line in err naming the path, the roots
 * and server.file_roots, or the other sync. */
int zx_conf_check_files_path(const zx_conf *c, const char *self, const char *path,
                             const char *fmt, char *err, size_t errlen);

/* The connection called `name`, or NULL.  Owned by c, valid until
 * zx_conf_free(c). */
const zx_conf_connection *zx_conf_find_connection(const zx_conf *c,
                                                  const char *name);

/* 1 when every field that affects the running worker (everything but
 * line/column) is equal, so a reload can leave that worker and its ring
 * untouched; else 0.  Compares the name, every option of the options table
 * (by its type; slot and publication as derived when not written), the
 * derived sizes (body_limit, ring_size, in_ring_size, shm_size),
 * mirrors, and the resolved connections with
 * zx_conf_connection_same: a changed connection changes every pipeline
 * using it.  NULL pointers compare equal only to each other. */
int zx_conf_pipeline_same(const zx_conf_pipeline *a, const zx_conf_pipeline *b);

/* 1 when the two connections have the same name and settings (every
 * option, brokers_csv, dsn_shown; not line/column), else 0.  TLS files are compared
 * by path, not content.  NULL pointers compare equal only to each other. */
int zx_conf_connection_same(const zx_conf_connection *a,
                            const zx_conf_connection *b);

/* Print the reference documentation of every option (Markdown, one table
 * per section) to `out`.  conf/OPTIONS.md is exactly this output; a unit
 * test keeps them equal. */
void zx_conf_write_reference(FILE *out);

/* 1 when v is a table name by the rules of `table:` (ZX_CF_IDENT: 1 to 63
 * letters, digits or _, not starting with a digit, not _zx*, *__rejects
 * nor sqlite_*, without regard to case), else 0 with *why (if not NULL)
 * a static phrase saying which rule it breaks.  Public: a plug-in's check
 * names its mirrors by it (conf/plugin.h). */
int zx_cf_table_name_ok(const char *v, const char **why);

/* Free the own options structs of a pipeline built by hand (p->own and
 * p->dest_own, with every string and list their plug-ins' rows describe;
 * both set NULL).  For a pipeline that is not a loaded configuration's: a
 * one-off send (supervisor/syncs_send.c).  NULL ok. */
void zx_conf_pipeline_free_own(zx_conf_pipeline *p);

/* ------------------------------------------------------------------------
 * Internal to conf/ (config.c, entries.c, options.c, fields.c, lists.c,
 * values.c, reference.c, secrets.c, yamlwalk.c, rows.c, tables.c,
 * model.c) and its unit tests.  Not a contract: other modules must not
 * define ZX_CONF_INTERNAL.
 * ---------------------------------------------------------------------- */
#ifdef ZX_CONF_INTERNAL
#include <yaml.h>

#include "conf/option.h"

/* Load context: where errors go and what the walk needs. */
typedef struct zx_cf_ctx {
    const char *file;        /* as shown in messages */
    const char *base_dir;    /* folder of the file, for ${file:} */
    unsigned flags;          /* ZX_CONF_* */
    yaml_document_t doc;
    int have_doc;
    zx_conf_errors *errs;    /* may be NULL */
    size_t nerr;             /* errors found, whether stored or not */
    struct zx_cf_secrets *secrets; /* ${secret:}: the key and store, read
                                      once per load (secrets.c) */
} zx_cf_ctx;

/* secrets.c: forget (wipe) what ${secret:} read.  Safe twice. */
void zx_cf_secrets_free(zx_cf_ctx *x);

/* yamlwalk.c */
void zx_cf_error(zx_cf_ctx *x, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void zx_cf_error_at(zx_cf_ctx *x, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void zx_cf_verror(zx_cf_ctx *x, int line, int col, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
int zx_cf_parse_file(zx_cf_ctx *x, const char *path); /* 0 ok, -1 errors */
yaml_node_t *zx_cf_root(zx_cf_ctx *x);
yaml_node_t *zx_cf_node(zx_cf_ctx *x, int id);
int zx_cf_is_null(const yaml_node_t *n);
const char *zx_cf_scalar(const yaml_node_t *n);  /* NULL if not a scalar */
const char *zx_cf_kind(const yaml_node_t *n);    /* "a mapping", ... */
int zx_cf_line(const yaml_node_t *n);
int zx_cf_col(const yaml_node_t *n);
/* first[i] = index of the earlier pair of `map` with the same scalar key
 * as pair i, or SIZE_MAX.  Caller frees.  NULL for an empty mapping or on
 * out of memory (reported). */
size_t *zx_cf_dups(zx_cf_ctx *x, const yaml_node_t *map);
/* Closest word to `w` among `cands` (n of them), or NULL if none is close. */
const char *zx_cf_suggest(const char *w, const char *const *cands, size_t n);

/* secrets.c */
/* What zx_cf_resolve found in a value (*is_ref). */
#define ZX_CF_REF_NONE  0   /* no reference ($${ escapes maybe) */
#define ZX_CF_REF_WHOLE 1   /* exactly one reference, nothing else */
#define ZX_CF_REF_PART  2   /* references inside a longer value, or several */
/* Resolve `text`: each ${env:NAME} and ${file:PATH} in it is replaced by
 * its value and each $${ by a literal ${ (rules in secrets.c); nothing in
 * a resolved value is read again.  *out = the new string (caller frees),
 * *is_ref = ZX_CF_REF_*.  When secret is set, ZX_CONF_SKIP_SECRETS is in
 * x->flags and text holds a reference: *out = NULL and 0, nothing read
 * (the references' syntax is still checked).  Messages name a variable or
 * a file, never a value, and quote no part of text when secret is set.
 * Returns 0, or -1 after reporting at n. */
int zx_cf_resolve(zx_cf_ctx *x, const yaml_node_t *n, const char *text,
                  int secret, char **out, int *is_ref);

/* options.c: the table (its row type, zx_cf_option, is in conf/option.h);
 * fields.c, lists.c: setting, freeing, comparing by row. */
typedef struct zx_cf_section {
    const char *path;        /* "server.http"; "pipelines" is a named map */
    int target;              /* ZX_CF_ROOT, ZX_CF_PIPELINE, ZX_CF_CONNECTION */
    int named_map;           /* 1: keys are names, values are `entry` sections */
    const char *entry;       /* for a named map: the entry section's path */
    const char *help;
} zx_cf_section;

#define ZX_CF_MAX_SECTIONS 32
extern const zx_cf_option zx_cf_options[];
extern const size_t zx_cf_noptions;
/* the core's sections (options.c); every section, those of the
 * destination plug-ins' own sub-sections after them, is zx_cf_sec */
extern const zx_cf_section zx_cf_sections[];
extern const size_t zx_cf_nsections;

/* rows.c: every row, core (zx_cf_options) then each plug-in's in the
 * order of zx_plugins (conf/plugin.h), by one index (that of
 * zx_cf_where).  zx_cf_row: the row at i, NULL past the last.
 * zx_cf_row_owner: the plug-in whose rows hold o, NULL for a core row.
 * zx_cf_row_base: where the field of o lives for the struct at base (of
 * o's section's target): base; for a ZX_CF_OWN row, the pipeline's own
 * struct when base is a pipeline of o's plug-in that has one (a source's:
 * own; a destination's: dest_own), else NULL (the row is not this
 * pipeline's: nothing to set, free or compare).
 * zx_cf_section_dest: the destination plug-in whose own sub-section is
 * the section at path ("pipelines.<name>.destination.<its name>"), NULL
 * for any other section. */
/* The lists derived from the plug-ins (conf/plugin.h), NULL-ended, filled
 * once by zx_cf_derive (zx_cf_nrows calls it; safe from any thread): the
 * values of `source:` (the source plug-ins, and "sync", which the loader
 * refuses in a stream with "write direction: out"); of a connection's `kind:` (every plug-in's
 * conn_kinds); the sources that take a connection; the kinds of the table
 * destinations.  Valid for the process's life. */
extern const char *zx_cf_source_names[];
extern const char *zx_cf_conn_kinds[];
extern const char *zx_cf_conn_sources[];
extern const char *zx_cf_table_kinds[];
/* And by capability (zx_plugin.caps): the sources of ZX_PLUGIN_STREAM,
 * ZX_PLUGIN_MIRROR, ZX_PLUGIN_PARK; the connection kinds of the plug-ins
 * of ZX_PLUGIN_DSN.  In the order of zx_plugins, each name once. */
extern const char *zx_cf_stream_sources[];
extern const char *zx_cf_mirror_sources[];
extern const char *zx_cf_park_sources[];
extern const char *zx_cf_dsn_kinds[];
void zx_cf_derive(void);
size_t zx_cf_nrows(void);
const zx_cf_option *zx_cf_row(size_t i);
const struct zx_plugin *zx_cf_row_owner(const zx_cf_option *o);
void *zx_cf_row_base(const zx_cf_option *o, void *base);
const struct zx_plugin *zx_cf_section_dest(const char *path);
/* Every section, by one index (that of zx_cf_where.sec): the core's
 * (zx_cf_sections), then "pipelines.<name>.destination.<its name>" of
 * each destination plug-in with a section_doc (conf/plugin.h), in the
 * order of zx_plugins.  zx_cf_sec: the section at i, NULL past the last;
 * valid for the process's life. */
size_t zx_cf_nsecs(void);
const zx_cf_section *zx_cf_sec(size_t i);

/* 1 when name is a value of a connection's `kind:`, else 0. */
int zx_cf_conn_kind_ok(const char *name);
/* 1 when option o applies to source (or connection kind) `src` (always
 * when o->sources is NULL). */
int zx_cf_takes(const zx_cf_option *o, const char *src);
/* The sources (or kinds) that take o, joined with sep, into buf (len
 * bytes, cut): its `sources`, or for a plug-in's row without, its
 * plug-in's name (a connection option: its connection kinds). */
void zx_cf_takers(const zx_cf_option *o, char *buf, size_t len, const char *sep);
/* The ZX_META_* bits of the metadata names in the NULL-ended list. */
uint32_t zx_cf_metadata_bits(const char *const *names);
/* Target struct of the section called path, or -1. */
int zx_cf_target(const char *path);

/* Set option o in the struct at base from YAML node n: resolves
 * ${env:}/${file:}, checks the type and range.  Returns 0, or -1 after
 * reporting at n.  Frees any previous value in the field. */
int zx_cf_set_node(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                   const yaml_node_t *n);
/* Set option o to its default (no-op when o->def is NULL). */
void zx_cf_set_default(zx_cf_ctx *x, const zx_cf_option *o, void *base);
/* Split "host:port" / "[v6]:port"; 0 ok (host malloc'd), -1 with *why. */
int zx_cf_split_listen(const char *s, char **host, uint16_t *port,
                       const char **why);
/* How a message may quote a value (`show` of zx_cf_resolve_scalar). */
#define ZX_CF_SHOW_PLAIN  0   /* as written, or resolved when no reference */
#define ZX_CF_SHOW_SECRET 1   /* never: "the <what>" */
#define ZX_CF_SHOW_DSN    2   /* secret-bearing: as written, with its
                                 passwords hidden (zx_dsn_redact) */
/* The value of scalar node n for option `what`: *val = its text, resolved
 * (new string), *shown = how a message may quote it (never a secret, a
 * DSN's password nor a resolved reference: a reference is shown as
 * written).  A value with a NUL byte is refused.  0; 1 when a secret's
 * reference is skipped under ZX_CONF_SKIP_SECRETS (*val, *shown NULL);
 * -1 after reporting at n.  show: ZX_CF_SHOW_*; any but PLAIN is secret
 * (skipped under ZX_CONF_SKIP_SECRETS). */
int zx_cf_resolve_scalar(zx_cf_ctx *x, const char *what, const yaml_node_t *n,
                         int show, char **val, char **shown);
/* lists.c: zx_cf_set_node for HOSTPORTS, TOPIC, TOPICS / for PROPS; same
 * contract.  zx_cf_free_strs frees n strings and the array (NULL ok). */
int zx_cf_set_list(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                   const yaml_node_t *n);
int zx_cf_set_props(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                    const yaml_node_t *n);
/* NAMES: a sequence of names, or one scalar (a list of one); same
 * contract. */
int zx_cf_set_names(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                    const yaml_node_t *n);
void zx_cf_free_strs(char **v, size_t n);
/* Free every field the table describes for `target` in base (strings,
 * lists, properties), leaving them NULL / 0. */
void zx_cf_free_fields(int target, void *base);
/* A pipeline's own options structs (conf/plugin.h): its source's (own)
 * and its destination's (dest_own).  zx_cf_free_opts frees *own with every
 * string and list plug-in pg's ZX_CF_OWN rows describe, and sets *own to
 * NULL (NULL ok).  zx_cf_free_own does so for both of pl's.
 * zx_cf_own_same: 1 when a's and b's own structs (both) hold equal values
 * by those rows (both NULL: equal; the plug-ins are compared by the
 * caller), else 0. */
void zx_cf_free_opts(const struct zx_plugin *pg, void **own);
void zx_cf_free_own(zx_conf_pipeline *pl);
int zx_cf_own_same(const zx_conf_pipeline *a, const zx_conf_pipeline *b);
/* Free or zero the field of option o in base (NULL / 0). */
void zx_cf_clear_field(const zx_cf_option *o, void *base);
/* 1 when v is a table name template (`table:` with placeholders, for
 * format: debezium): letters, digits, _ and the placeholders
 * {source.table}, {source.schema}, {source.db}, {source.collection},
 * {topic}; not _zx*; at most 200 bytes.  Else 0 with *why as above. */
int zx_cf_table_template_ok(const char *v, const char **why);
/* 1 when every field the table describes for `target` is equal in a and b,
 * compared by its type; else 0. */
int zx_cf_fields_same(int target, const void *a, const void *b);

/* config.c: where the options and sub-sections of one mapping walk (the
 * top level, or one named-map entry with its sub-sections) were written,
 * so that cross-option errors point at the right line.  Index = row of
 * zx_cf_options / of zx_cf_sections. */
typedef struct zx_cf_where {
    size_t n;                /* rows: zx_cf_nrows() */
    const yaml_node_t **opt; /* n: the option's value */
    unsigned char *bad;      /* n: 1 when that value was refused */
    const yaml_node_t *sec[ZX_CF_MAX_SECTIONS]; /* the sub-section's value */
} zx_cf_where;
/* A new record for every row (zeroed), or NULL out of memory; free with
 * zx_cf_where_free (NULL ok). */
zx_cf_where *zx_cf_where_new(void);
void zx_cf_where_free(zx_cf_where *w);
/* Row of option `name` in `section`, or SIZE_MAX. */
size_t zx_cf_opt_index(const char *section, const char *name);
/* Where that option / the section at `path` was written, or NULL. */
const yaml_node_t *zx_cf_where_opt(const zx_cf_where *w, const char *section,
                                   const char *name);
const yaml_node_t *zx_cf_where_sec(const zx_cf_where *w, const char *path);
/* 1 when s is a valid pipeline or connection name. */
int zx_cf_name_ok(const char *s);
/* Absolute, lexically normalised path of rel against dir; NULL on out of
 * memory.  Caller frees. */
char *zx_cf_abspath(const char *dir, const char *rel);

/* entries.c: checks of one entry once walked (see there), and the
 * connections of the pipelines once all is walked (conn_node[i]: where
 * pipeline i wrote `connection:`, or NULL). */
void zx_cf_check_pipeline(zx_cf_ctx *x, const yaml_node_t *kn,
                          zx_conf_pipeline *pl, const zx_cf_where *w);
void zx_cf_check_connection(zx_cf_ctx *x, const yaml_node_t *kn,
                            zx_conf_connection *cn, const zx_cf_where *w);
void zx_cf_resolve_connections(zx_cf_ctx *x, zx_conf *c,
                               const yaml_node_t *const *conn_node);
/* Once connections are resolved: no two pipelines of one plug-in on the
 * same database (the same connection, or connections with the same dsn)
 * hold the same thing upstream (their plug-in's retire_subject, e.g. a
 * postgres replication slot). */
void zx_cf_check_slots(zx_cf_ctx *x, const zx_conf *c);
/* tables.c: once the whole file is walked, no two workspace tables the
 * pipelines write are one name (tables_node[i]: where pipeline i wrote
 * `tables:`, for the mirrors' errors; may be NULL), and no two table
 * templates could make one name. */
void zx_cf_check_tables(zx_cf_ctx *x, const zx_conf *c,
                        const yaml_node_t *const *tables_node);
void zx_cf_check_templates(zx_cf_ctx *x, const zx_conf *c);
/* syncs.c: once the whole file is walked, each sync's author and
 * destination connection (setting dest_conn and dest_plugin) and each API
 * token's syncs (dest_conn_node[i]: where pipeline i wrote
 * destination.connection; syncs_node[i]: where token i wrote syncs; either
 * array may be NULL). */
void zx_cf_resolve_syncs(zx_cf_ctx *x, zx_conf *c,
                         const yaml_node_t *const *dest_conn_node,
                         const yaml_node_t *const *syncs_node);
struct zx_dest_where;   /* conf/plugin.h */
/* syncs.c: the connection a destination's dest_where names (w->connection,
 * not NULL), checked and set into p->dest_conn, or an error through x. */
void zx_cf_dest_connection(zx_cf_ctx *x, const zx_conf *c, zx_conf_pipeline *p,
                           const struct zx_dest_where *w);
/* forward.c: once connections are resolved, each stream's `forward:`
 * (its destination's kind, its connection into dest_conn); `forward:` on
 * a reverse sync is an error. */
void zx_cf_resolve_forwards(zx_cf_ctx *x, zx_conf *c);
/* Join the NULL-ended list l with sep into buf (truncated). */
void zx_cf_join(char *buf, size_t len, const char *const *l, const char *sep);
#endif /* ZX_CONF_INTERNAL */

#endif /* ZX_CONF_CONFIG_H */
