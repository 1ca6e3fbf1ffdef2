/*
 * options.c — the table of zxd's core configuration options
 * (zx_cf_options, with its sections), and lookups in them.  The options of
 * one source or destination are rows of its plug-in (conf/plugin.h); the
 * loader sees both through conf/rows.c.
 *
 * Every option lives in exactly one row, here or in a plug-in: the loader
 * (config.c) walks the YAML against it, fields.c sets (from the file or
 * the row's `def` text, parsed like a value from the file), compares and
 * frees a field by its row, and reference.c prints the rows as
 * conf/OPTIONS.md.  Nothing else may list option names.
 *
 * It must never: hold code that reads YAML or reports errors (fields.c and
 * config.c do), or list an option outside the table.
 */
#define ZX_CONF_INTERNAL
#include "conf/values.h"
#include "conf/plugin.h"
#include "common/colname.h"

#include <stdio.h>
#include <string.h>

static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const synchronous[] = {"normal", "full", NULL};
static const char *const sqlite_page_sizes[] = {"4KiB", "8KiB", "16KiB", "32KiB", "64KiB", NULL};
static const char *const directions[] = {"stream", "out", NULL};
static const char *const token_roles[] = {"orchestrator", "agent", "status", NULL};
static const char *const status_pages[] = {"auto", "on", "off", NULL};
/* order = ZX_FORMAT_*, ZX_STREAM_*, ZX_ENC_* of conf/config.h, and
 * zx_wire_mode of common/schema_registry.h */
static const char *const stream_formats[] = {"json", "debezium", NULL};
static const char *const stream_modes[] = {"append", "latest", NULL};

/* The options below that more than one source (or connection kind) takes;
 * an option of one plug-in alone is a row of its own (its <name>_plugin.c).
 * Which sources (kinds) take them is derived from the plug-ins
 * (conf/rows.c): the values of `source:` and `kind:`, the sources that take
 * a connection, the kinds of table destinations, and by capability
 * (zx_plugin.caps): zx_cf_stream_sources (append events to a table of
 * their own, decoded as JSON or Debezium events,
 * workers/sources/debezium/), zx_cf_mirror_sources (may keep mirrors with
 * history), zx_cf_park_sources (mirror tables may park changes; not http:
 * a push acknowledged at commit must be in its table), zx_cf_dsn_kinds. */

#define ROOT(f) offsetof(zx_conf, f)
#define HTTP(f) (offsetof(zx_conf, http) + offsetof(zx_conf_http, f))
#define PIPE(f) offsetof(zx_conf_pipeline, f)
#define CONN(f) offsetof(zx_conf_connection, f)
#define AUTH(f) offsetof(zx_conf_author, f)
#define TOKEN(f) offsetof(zx_conf_apitoken, f)

const zx_cf_section zx_cf_sections[] = {
    {"server", ZX_CF_ROOT, 0, NULL,
     "Where zxd keeps its state and how operators reach it."},
    {"server.http", ZX_CF_ROOT, 0, NULL,
     "The HTTP gateway: the push endpoint and `/healthz`."},
    {"workspace", ZX_CF_ROOT, 0, NULL,
     "The database the pipelines write into: `sqlite` (the default, also "
     "when `workspace` is absent) or `postgres`, written as a sub-section; "
     "at most one of the two. The workspace cannot change on reload: "
     "restart zxd to change it."},
    {"workspace.sqlite", ZX_CF_ROOT, 0, NULL,
     "The embedded SQLite workspace, in WAL mode."},
    {"workspace.postgres", ZX_CF_ROOT, 0, NULL,
     "A PostgreSQL database as the workspace, for production: the writer "
     "connects with libpq. `dsn` is required."},
    {"connections", ZX_CF_CONNECTION, 1, "connections.<name>",
     "How to reach the systems pipelines read from, one entry per "
     "connection; the key is its name (the same rules as a pipeline name), "
     "which pipelines give as `connection:`. Several pipelines may share "
     "one. A reload restarts the pipelines whose connection changed; a "
     "connection no pipeline uses is allowed."},
    {"connections.<name>", ZX_CF_CONNECTION, 0, NULL,
     "A connection: `kind: kafka`, a Kafka cluster, for `source: kafka`; "
     "`kind: postgres`, a PostgreSQL database, for `source: postgres` or a "
     "reverse sync's destination; `kind: aws`, an AWS account (a region, and "
     "how zx finds credentials), for `source: kinesis`; `kind: mysql`, a MySQL or MariaDB "
     "database, or `kind: sqlite`, a SQLite file, for a reverse sync's "
     "destination; `kind: iceberg_rest` (an Iceberg REST catalog), `kind: glue` "
     "(AWS Glue) or `kind: s3tables` (Amazon S3 Tables), the catalog of a "
     "reverse sync's `destination.iceberg`; `kind: opensearch`, an OpenSearch or "
     "Elasticsearch cluster, for a reverse sync's `destination.opensearch`; "
     "`kind: http`, an HTTP API (its base URL and headers), for a reverse sync's "
     "`destination.http`; `kind: redis`, a Redis server, for a reverse sync's "
     "`destination.redis`. "
     "Each option applies to the kinds its *Kinds* column names; given to "
     "another kind it is an error."},
    {"connections.<name>.sasl", ZX_CF_CONNECTION, 0, NULL,
     "SASL authentication of a `kafka` connection, for `security: "
     "sasl_plaintext` or `sasl_ssl` (and only then); all three options are "
     "then required."},
    {"connections.<name>.tls", ZX_CF_CONNECTION, 0, NULL,
     "TLS files (PEM) of a `kafka` connection, for `security: ssl` or "
     "`sasl_ssl` (and only then), or of a `redis` connection (`ca` or `cert` "
     "written, or a `rediss://` address, makes it TLS); without `ca` the "
     "system's CA store is used. Paths are relative to the config file's folder, and each file "
     "must be readable when the configuration is loaded. (A `postgres` "
     "connection takes its TLS settings in its `dsn`: `sslmode`, "
     "`sslrootcert`, ...)"},
    {"authors", ZX_CF_AUTHOR, 1, "authors.<name>",
     "Who may read what: each reverse sync names its `author`, and its query "
     "runs with that author's rights, enforced by the workspace database "
     "(PostgreSQL: a role of that author alone, `zx_author_<name>_<hash>`, "
     "with SELECT on `tables` only, "
     "in a READ ONLY transaction; SQLite: a read-only connection whose "
     "authorizer allows reading `tables` only)."},
    {"authors.<name>", ZX_CF_AUTHOR, 0, NULL,
     "An author: the workspace tables its syncs may read."},
    {"api_tokens", ZX_CF_APITOKEN, 1, "api_tokens.<name>",
     "Bearer tokens of the gateway's sync API (`POST /api/syncs/<name>/runs`, "
     "`GET /api/runs/<id>`), one entry per client; the key names it in logs "
     "and run records."},
    {"api_tokens.<name>", ZX_CF_APITOKEN, 0, NULL,
     "An API token: its secret, its role, and the syncs it may run."},
    {"pipelines", ZX_CF_PIPELINE, 1, "pipelines.<name>",
     "One entry per pipeline; the key is the pipeline's name: 1 to 63 "
     "characters among `a-z 0-9 _ -`, starting with a letter. Pipelines "
     "whose settings do not change are left running by a reload."},
    {"pipelines.<name>", ZX_CF_PIPELINE, 0, NULL,
     "A pipeline: `direction: stream` with `source: http` (JSON pushed to "
     "`POST /api/streams/<name>/push`), `source: kafka` (messages consumed "
     "from Kafka topics through a `connection`), `source: postgres` "
     "(tables of a PostgreSQL database mirrored through a `connection`), "
     "`source: kinesis` (records of an Amazon Kinesis data stream, through a "
     "`connection`) or `source: generate` (rows made from a template); or "
     "`direction: out`, "
     "a reverse sync (see the list after this table). Each option applies to the sources its *Sources* "
     "column names; given to another source it is an error. No two "
     "pipelines write the same workspace table (names compared without "
     "regard to case): a `table`, a mirror, or a mirror's `__changes` "
     "table."},
    {"pipelines.<name>.destination", ZX_CF_PIPELINE, 0, NULL,
     "Where a reverse sync sends its result: a table of a `connection` "
     "(kind `postgres`, `mysql` or `sqlite`; `table` required), or a "
     "sub-section of its own: `files` (a folder or a bucket), `delta` (a Delta "
     "Lake table) or `iceberg` (an Iceberg table through its catalog). Exactly "
     "one of them."},
    {"pipelines.<name>.forward", ZX_CF_PIPELINE, 0, NULL,
     "A stream (any source) also publishes what the writer applied: `forward: {kafka: "
     "{connection, topic, format, key...}}` takes the options of the Kafka destination "
     "(`pipelines.<name>.destination.kafka`). Each appended row is one message (op `c` "
     "in the `debezium` format); each mirror change is one message with its operation "
     "(`c`, `u`, `d` then a tombstone; a key move is a delete of the old key and a "
     "create), keyed by the mirror's key (or `key`). Messages are made from the "
     "writer's commits, never before: the writer keeps each applied frame in the "
     "workspace table `_zx_forward` in the same transaction as its rows, and the "
     "stream's worker publishes them in commit order and deletes them once the brokers "
     "acknowledged them (at least once: a restart may publish the last ones again; "
     "`source.seq` increases per key, and a run sent again repeats its own: skip a message "
     "whose `source.seq` is not above its key's last)."},
    {"pipelines.<name>.schema_registry", ZX_CF_PIPELINE, 0, NULL,
     "The schema registry of a Kafka stream with `format: debezium` and "
     "`encoding: avro` (Confluent's API, which Apicurio and Karapace also "
     "serve)."},
    /* then each destination plug-in's own sub-section (zx_cf_sec) */
};
const size_t zx_cf_nsections = sizeof(zx_cf_sections) / sizeof(zx_cf_sections[0]);
_Static_assert(sizeof(zx_cf_sections) / sizeof(zx_cf_sections[0]) <=
               ZX_CF_MAX_SECTIONS, "raise ZX_CF_MAX_SECTIONS in conf/config.h");

/* Rows use designated initializers: omitted fields are 0 / NULL
 * (no default, no flags, every source, no list offsets). */
const zx_cf_option zx_cf_options[] = {
    {.section = "server", .name = "data_dir", .type = ZX_CF_PATH,
     .def = "./var", .offset = ROOT(data_dir),
     .help = "Folder for the LMDB store, the SQLite workspace and the "
     "control socket; relative to the config file's folder."},
    {.section = "server", .name = "control_socket", .type = ZX_CF_PATH,
     .def = "zxd.sock", .offset = ROOT(control_socket),
     .flags = ZX_CF_REL_DATA,
     .help = "Unix socket `zxctl` talks to; relative to `data_dir`. At most "
     "107 bytes once made absolute."},
    {.section = "server", .name = "control_group", .type = ZX_CF_GROUP,
     .def_doc = "none", .offset = ROOT(control_group),
     .help = "Group allowed to use the control socket (mode 0660). Without "
     "it the socket is mode 0600: its owner only."},
    {.section = "server", .name = "file_roots", .type = ZX_CF_PATHS,
     .def_doc = "none", .offset = ROOT(file_roots), .n_offset = ROOT(nfile_roots),
     .help = "Folders, besides `<data_dir>/exports`, that reverse syncs' "
     "`files` destinations and `zxctl send --to files:` may write into; "
     "relative to the config file's folder. A path outside them, through a "
     "symbolic link below them, or onto another sync's output is refused."},
    {.section = "server", .name = "secret_key_file", .type = ZX_CF_PATH,
     .def = "secret.key", .offset = ROOT(secret_key_file),
     .help = "The key of the secrets store, which `${secret:NAME}` values are "
     "read from: 64 hex digits, made (mode 0600) by `zxctl secret init`; one "
     "others may read is refused. Relative to the config file's folder (so "
     "`/etc/zx/secret.key` for `/etc/zx/zx.yaml`). Written literally: no "
     "references."},
    {.section = "server", .name = "secret_store", .type = ZX_CF_PATH,
     .def = "secrets.zx", .offset = ROOT(secret_store),
     .help = "The secrets store `zxctl secret set` writes and `${secret:NAME}` "
     "reads: each value encrypted with AES-256-GCM under `secret_key_file`. "
     "Relative to the config file's folder. Written literally: no references."},
    {.section = "server", .name = "log_level", .type = ZX_CF_ENUM,
     .def = "info", .offset = ROOT(log_level), .allowed = log_levels,
     .help = "Lowest level of the log lines written to stderr."},
    {.section = "server", .name = "core_dumps", .type = ZX_CF_BOOL,
     .def = "false", .offset = ROOT(core_dumps),
     .help = "`true`: zxd and its workers may write core files (as the "
     "core size limit and kernel.core_pattern allow).  By default they "
     "are not dumpable (PR_SET_DUMPABLE 0): a core would hold the "
     "passwords and keys they keep in memory, and their memory cannot be "
     "read by other processes of the same user."},
    {.section = "server", .name = "ring_size", .type = ZX_CF_SIZE,
     .def = "64MiB", .offset = ROOT(ring_size), .min = MiB, .max = 64 * GiB,
     .help = "Shared-memory ring between each pipeline's worker and the "
     "writer. Must hold two of the largest push bodies plus 1 MiB (for "
     "`kafka` pipelines: two of `http.max_body_size`). When left at its "
     "default and the pipelines' rings would take more than `ring_budget`, "
     "each is made smaller (never below that minimum)."},
    {.section = "server", .name = "ring_budget", .type = ZX_CF_SIZE,
     .def_doc = "a quarter of the machine's memory",
     .offset = ROOT(ring_budget), .min = 64 * MiB, .max = 1024 * GiB,
     .help = "Shared memory that all pipelines' rings together may take "
     "(each pipeline: its frames ring; an `http` pipeline also a request "
     "ring of twice its body limit, at least 8 MiB, and 1 MiB for replies). "
     "`zxd --check` refuses a configuration whose rings do not fit; "
     "`zxctl status` shows what each ring holds."},
    {.section = "server", .name = "max_queue_delay", .type = ZX_CF_DURATION,
     .def = "250ms", .offset = ROOT(max_queue_delay_ms), .min = 0,
     .max = 10 * MIN,
     .help = "Bounds each pipeline's ring by time as `ring_size` bounds it "
     "by bytes: while the oldest frame has waited this long for the writer, "
     "new pushes wait for room (503 after `http.backpressure_timeout`), so "
     "that a client's wait stays short at saturation. Applies only while "
     "the writer runs: a writer that is down or restarting is absorbed by "
     "the ring's bytes. 0: bytes only."},

    {.section = "server", .name = "sync_query_timeout", .type = ZX_CF_DURATION,
     .def = "1h", .offset = ROOT(sync_query_timeout_ms), .min = SEC,
     .max = 7 * 24 * HOUR,
     .help = "The default `query_timeout` of reverse syncs: how long a "
     "sync's query may take, from its start to its last row read."},
    {.section = "server", .name = "sync_max_spill_bytes", .type = ZX_CF_SIZE,
     .def = "10GiB", .offset = ROOT(sync_max_spill_bytes), .min = MiB,
     .max = 1024 * GiB,
     .help = "The default `max_spill_bytes` of reverse syncs: the bytes a "
     "run may write to its temporary files in `<data_dir>/tmp`."},

    {.section = "server", .name = "status_page", .type = ZX_CF_ENUM_INT,
     .def = "auto", .offset = ROOT(status_page), .allowed = status_pages,
     .help = "The gateway's status page at `/` (pipelines, rings, the feed "
     "and the lineage; it asks for an API token in the browser). `auto`: "
     "served only when `server.http.listen` is a loopback address "
     "(127.0.0.0/8, `::1`, `localhost`); `on`: served on any address; "
     "`off`: never. When not served, `/` answers 404."},

    {.section = "server.http", .name = "listen", .type = ZX_CF_LISTEN,
     .def = "127.0.0.1:8780", .offset = HTTP(listen),
     .help = "Address and port of the gateway: `host:port` or "
     "`[ipv6]:port`. Use `0.0.0.0:8780` for every interface; port 0 picks "
     "a free port."},
    {.section = "server.http", .name = "max_body_size", .type = ZX_CF_SIZE,
     .def = "16MiB", .offset = HTTP(max_body_size), .min = KiB, .max = GiB,
     .help = "Largest request body; a larger push gets 413."},
    {.section = "server.http", .name = "max_header_size", .type = ZX_CF_SIZE,
     .def = "64KiB", .offset = HTTP(max_header_size), .min = KiB, .max = MiB,
     .help = "Largest total size of a request's headers; larger gets 431."},
    {.section = "server.http", .name = "max_connections", .type = ZX_CF_UINT,
     .def = "1024", .offset = HTTP(max_connections), .min = 1,
     .max = 1000000,
     .help = "Open client connections at most; more wait in the listen "
     "queue."},
    {.section = "server.http", .name = "idle_timeout", .type = ZX_CF_DURATION,
     .def = "60s", .offset = HTTP(idle_timeout_ms), .min = 1,
     .max = 24 * HOUR,
     .help = "A connection with no request for this long is closed, and "
     "so is one that takes nothing of its answer for this long. A "
     "`GET /api/feed` stream may be silent for longer (it sends a "
     "keep-alive every 15 s)."},
    {.section = "server.http", .name = "max_held_bytes", .type = ZX_CF_SIZE,
     .def_doc = "max(256MiB, 4 × the largest `max_body_size`)",
     .offset = HTTP(max_held_bytes), .min = MiB, .max = 1024 * GiB,
     .help = "Request bodies the gateway holds at once, all connections "
     "together, counted as they are held (inflated gzip and chunked bodies "
     "included). A push that would pass it gets 503 with `Retry-After: 1`. "
     "Should be at least `max_body_size`."},
    {.section = "server.http", .name = "header_timeout",
     .type = ZX_CF_DURATION, .def = "10s", .offset = HTTP(header_timeout_ms),
     .min = 100, .max = HOUR,
     .help = "A request's line and headers must arrive within this time, "
     "counted from the connection (or, on a kept-alive connection, from the "
     "request's first byte); else 408 and the connection is closed."},
    {.section = "server.http", .name = "body_timeout", .type = ZX_CF_DURATION,
     .def = "30s", .offset = HTTP(body_timeout_ms), .min = 100,
     .max = 24 * HOUR,
     .help = "A request body must arrive within this time plus one second "
     "per `body_min_rate` bytes received; else 408 and the connection is "
     "closed."},
    {.section = "server.http", .name = "body_min_rate", .type = ZX_CF_SIZE,
     .def = "1KiB", .offset = HTTP(body_min_rate), .min = 1, .max = GiB,
     .help = "Bytes per second a body must keep up, on average, once "
     "`body_timeout` is used up."},
    {.section = "server.http", .name = "backpressure_timeout",
     .type = ZX_CF_DURATION, .def = "2s",
     .offset = HTTP(backpressure_timeout_ms), .min = 0, .max = 10 * MIN,
     .help = "How long a push waits for room in a full ring before it is "
     "answered 503 with Retry-After. 0 answers at once."},
    {.section = "server.http", .name = "api_auth_failures", .type = ZX_CF_UINT,
     .def = "10", .offset = HTTP(api_auth_failures), .min = 1, .max = 1000000,
     .help = "Failed API tokens (401 on `/api/syncs/...` or `/api/runs/...`) "
     "one client address may send within `api_auth_window`: then every API "
     "request from it gets 429 with `Retry-After` until that window (which "
     "began at its first failure) ends, and one warning "
     "`event=api_auth_blocked` is logged. The gateway tracks at most 4,096 "
     "addresses (the oldest make room). Clients behind one proxy share its "
     "address."},
    {.section = "server.http", .name = "api_auth_window", .type = ZX_CF_DURATION,
     .def = "60s", .offset = HTTP(api_auth_window_ms), .min = SEC, .max = 24 * HOUR,
     .help = "The window of `api_auth_failures`."},
    {.section = "server.http", .name = "commit_timeout",
     .type = ZX_CF_DURATION, .def = "30s", .offset = HTTP(commit_timeout_ms),
     .min = 1, .max = HOUR,
     .help = "How long a push with `?wait=commit` (or `ack: commit`) waits "
     "for the writer's commit before it is answered 503."},

    {.section = "workspace", .name = "commit_interval",
     .type = ZX_CF_DURATION, .def = "20ms", .offset = ROOT(commit_interval_ms),
     .min = 0, .max = 10 * SEC,
     .help = "Longest time a group-commit transaction of the writer stays "
     "open while frames keep arriving: it commits as soon as a pass over "
     "the rings finds no new frame, or once this much time has passed since "
     "its first frame. A lone push is committed at once. 0: one pass over "
     "the rings per transaction."},

    {.section = "workspace.sqlite", .name = "path", .type = ZX_CF_PATH,
     .def = "workspace.db", .offset = ROOT(sqlite_path),
     .flags = ZX_CF_REL_DATA,
     .help = "The database file; relative to `server.data_dir`."},
    {.section = "workspace.sqlite", .name = "synchronous", .type = ZX_CF_ENUM,
     .def = "normal", .offset = ROOT(sqlite_synchronous),
     .allowed = synchronous,
     .help = "`normal`: a power loss may lose the last commits, never "
     "corrupts. `full`: commits survive a power loss, at a cost per "
     "commit."},
    {.section = "workspace.sqlite", .name = "page_size", .type = ZX_CF_ENUM,
     .def = "32KiB", .offset = ROOT(sqlite_page_size),
     .allowed = sqlite_page_sizes,
     .help = "The page size of a workspace file zx creates; an existing "
     "file keeps its own (SQLite's `VACUUM` after `PRAGMA journal_mode="
     "delete; PRAGMA page_size=N` changes it, with zxd stopped). Larger "
     "pages write less per appended row, smaller ones less per row a mirror "
     "updates or deletes at random (a changed row rewrites its whole page). "
     "On a 2-core machine (tests/bench/push_bench.sh appends, "
     "pg_cdc_bench.sh at 10,000 changes/s): `64KiB` appends ~4% faster than "
     "`32KiB` (718-734k against 706k rows/s) but its CDC p99 is 102-108 ms; "
     "`16KiB` and `4KiB` cut that p99 from 59 ms to 47 and 36 ms, appending "
     "4% and 20% slower."},

    {.section = "workspace.postgres", .name = "dsn", .type = ZX_CF_DSN,
     .offset = ROOT(pg_dsn), .flags = ZX_CF_REQUIRED | ZX_CF_SECRET,
     .help = "How to reach the database, as libpq takes it: a URI "
     "(`postgresql://zx:${env:PG_PASSWORD}@db1:5432/analytics?sslmode="
     "verify-full`) or key=value pairs (`host=db1 dbname=analytics "
     "user=zx`). Keep the password out of the file with a reference inside "
     "the value, or with libpq's password file. A reference's value goes in "
     "as it is, neither escaped nor quoted: in a URI, write a password with "
     "reserved characters percent-encoded (`%40` for `@`); in a quoted "
     "key=value pair, with `\\'` and `\\\\` escaped."},
    {.section = "workspace.postgres", .name = "schema", .type = ZX_CF_SQLNAME,
     .def = "public", .offset = ROOT(pg_schema),
     .help = "Schema zx writes its tables in: 1 to 63 bytes without control "
     "characters, taken as an exact (quoted) name (`Analytics` is not "
     "`analytics`)."},
    {.section = "workspace.postgres", .name = "application_name",
     .type = ZX_CF_STRING, .def = "zxd", .offset = ROOT(pg_application_name),
     .help = "Name zxd's connections give the server (libpq's "
     "`application_name`, shown in `pg_stat_activity`)."},
    {.section = "workspace.postgres", .name = "shared", .type = ZX_CF_BOOL,
     .def = "false", .offset = ROOT(pg_shared),
     .help = "Whether several zxd (each with its own `server.data_dir`, on one host or "
     "many) write this schema together. `false`: one zxd owns the schema, and a "
     "second one is refused. `true`: every zxd that says so writes its pipelines' "
     "rows into the same tables; each keeps its own checkpoints (named by the "
     "random id in `<data_dir>/instance-id`), and a table's schema changes "
     "(creating it, adding a column) are made by one of them at a time, under a "
     "lock in the workspace, after reading what the others made. A zxd with "
     "`false` is refused while zxd with `true` write the schema, and the other way "
     "round."},
    {.section = "workspace.postgres", .name = "lease", .type = ZX_CF_DURATION,
     .def = "15s", .offset = ROOT(pg_lease_ms), .min = 2 * SEC, .max = 10 * MIN,
     .help = "With `shared: true`: how long a lease in the workspace lasts when its "
     "holder stops renewing it (it renews every third of it). A pipeline with one "
     "upstream reader (`source: postgres`, `kinesis`) and a reverse sync's runs run on "
     "one zxd at a time, the one holding its lease (table `_zx_leases`); the others "
     "show it as `standby` and take it over once it expires (at once when its holder "
     "stops cleanly). Shorter: a faster takeover, more renewals; a holder that cannot "
     "reach the workspace for this long stops its pipeline."},

    {.section = "connections.<name>", .name = "kind", .type = ZX_CF_ENUM,
     .offset = CONN(kind), .flags = ZX_CF_REQUIRED, .allowed = zx_cf_conn_kinds,
     .help = "`kafka`: a Kafka cluster (or a service speaking its protocol), "
     "read with librdkafka. `postgres`: a PostgreSQL database, read with "
     "libpq (logical replication) or written by reverse syncs. `aws`: an AWS "
     "account (its region and credentials), for Kinesis and files in S3. `mysql`: a "
     "MySQL or MariaDB database, and `sqlite`: a SQLite file, written by "
     "reverse syncs. `iceberg_rest`: an Iceberg REST catalog, `glue`: AWS Glue's "
     "Data Catalog, and `s3tables`: an Amazon S3 Tables table bucket, the "
     "catalogs of Iceberg tables reverse syncs write. `opensearch`: an OpenSearch "
     "or Elasticsearch cluster, whose indices reverse syncs write. `http`: an HTTP "
     "API reverse syncs send rows to. `redis`: a Redis server, whose keys reverse "
     "syncs write."},
    {.section = "connections.<name>", .name = "dsn", .type = ZX_CF_DSN,
     .offset = CONN(dsn), .flags = ZX_CF_REQUIRED | ZX_CF_SECRET,
     .sources = zx_cf_dsn_kinds,
     .help = "`mysql`: `mysql://user:${env:MYSQL_PW}@host:3306/database` "
     "(MySQL or MariaDB, for reverse syncs). `postgres`: the database, as "
     "libpq takes it: a URI "
     "(`postgresql://zx:${env:PG_PASSWORD}@db1:5432/shop?sslmode="
     "verify-full`) or key=value pairs (`host=db1 dbname=shop user=zx`). "
     "The role needs REPLICATION (or superuser) and SELECT on the tables "
     "(`zxctl test` checks). References inside the value go in as they "
     "are, as for `workspace.postgres.dsn`."},
    {.section = "connections.<name>", .name = "read_only", .type = ZX_CF_BOOL,
     .def = "false", .offset = CONN(read_only), .sources = zx_cf_table_kinds,
     .help = "`true`: zx never writes to this database (a reverse sync "
     "naming it as its destination fails before it connects)."},
    {.section = "pipelines.<name>", .name = "direction", .type = ZX_CF_ENUM,
     .offset = PIPE(direction), .flags = ZX_CF_REQUIRED,
     .allowed = directions,
     .help = "`stream`: append each event to a workspace table as it "
     "arrives (or mirror tables). `out`: a reverse sync, sending the result "
     "of `query` to `destination`; it takes no `source`."},
    {.section = "pipelines.<name>", .name = "source", .type = ZX_CF_ENUM,
     .offset = PIPE(source), .flags = ZX_CF_REQUIRED,
     .def_doc = "**required** with `direction: stream`",
     .allowed = zx_cf_source_names,
     .help = "Where the events come from (see the list after this table)."},
    {.section = "pipelines.<name>", .name = "connection", .type = ZX_CF_STRING,
     .offset = PIPE(connection), .flags = ZX_CF_REQUIRED,
     .sources = zx_cf_conn_sources,
     .help = "Name of the entry of `connections` to read from; its `kind` "
     "must fit the source (`kafka` for `kafka`, `postgres` for "
     "`postgres`, `aws` for `kinesis`)."},
    {.section = "pipelines.<name>", .name = "table", .type = ZX_CF_IDENT,
     .def_doc = "the pipeline name, `-` written `_`", .offset = PIPE(table),
     .sources = zx_cf_stream_sources,
     .help = "Workspace table the rows go to: `[A-Za-z_][A-Za-z0-9_]`, at "
     "most 63 characters, not starting with `_zx` nor ending with "
     "`__rejects` (reserved for zx's own tables), nor starting with "
     "`sqlite_` (reserved by SQLite). With `format: debezium` it may hold "
     "placeholders replaced by each event's values, normalised as column "
     "names are: `{source.table}`, `{source.schema}`, `{source.db}`, "
     "`{source.collection}` (MongoDB), `{topic}` (`\"{source.table}\"` "
     "mirrors each captured table into its own). A name made from an event "
     "that is another pipeline's table is a reject; two templates whose "
     "names could meet (neither fixed start before the first `{` begins "
     "the other) are refused."},
    {.section = "pipelines.<name>", .name = "max_tables", .type = ZX_CF_UINT,
     .def = "100", .offset = PIPE(max_tables), .min = 1, .max = 100000,
     .sources = zx_cf_stream_sources,
     .help = "With placeholders in `table`: the most tables the pipeline "
     "makes from its events. An event naming a table beyond them is a "
     "reject (in the pipeline's `__rejects`, with the reason), so a stream "
     "naming ever new tables cannot fill the workspace. The names it made "
     "are kept with the pipeline's positions: a restart counts them "
     "again."},
    {.section = "pipelines.<name>", .name = "table_pattern", .type = ZX_CF_STRING,
     .def_doc = "none (any name)", .offset = PIPE(table_pattern),
     .sources = zx_cf_stream_sources,
     .help = "With placeholders in `table`: a regular expression (POSIX "
     "extended, unanchored: write `^...$` for the whole name) every table "
     "name made from an event must match, else the event is a reject "
     "(`^(orders|customers)$`)."},
    {.section = "pipelines.<name>", .name = "format", .type = ZX_CF_ENUM_INT,
     .def = "json", .offset = PIPE(format), .allowed = stream_formats,
     .sources = zx_cf_stream_sources,
     .help = "`json`: each JSON object is a row appended to `table`. "
     "`debezium`: each message is a Debezium change event (as Kafka "
     "Connect's JsonConverter writes it, with or without the "
     "`schema`/`payload` envelope; http: one event, or an array of them) "
     "applied to a mirror table: inserts and updates replace the key's row, "
     "deletes remove it, truncates empty the table. The key is the message "
     "key's fields (or `key_columns`), the types those of the event's "
     "schema (inferred without one)."},
    {.section = "pipelines.<name>", .name = "mode", .type = ZX_CF_ENUM_INT,
     .def = "append", .offset = PIPE(stream_mode), .allowed = stream_modes,
     .sources = zx_cf_stream_sources,
     .help = "`append`: every row is added. `latest`: the table is a mirror "
     "keeping the latest row per `key_columns` (each JSON object replaces "
     "its key's row; a Kafka tombstone whose key is a JSON object holding "
     "the key columns deletes it). Not with `format: debezium`, which "
     "mirrors already."},
    {.section = "pipelines.<name>", .name = "key_columns", .type = ZX_CF_NAMES,
     .def_doc = "none; **required** with `mode: latest`",
     .offset = PIPE(key_columns), .n_offset = PIPE(nkey_columns),
     .sources = zx_cf_stream_sources,
     .help = "The mirror's key columns (`[sku]`, `[region, id]`), for "
     "`mode: latest`, and for `format: debezium` events whose message has no "
     "key (http pushes)."},
    {.section = "pipelines.<name>", .name = "metadata", .type = ZX_CF_METADATA,
     .def_doc = "none", .offset = PIPE(metadata), .allowed = zx_meta_names,
     .sources = zx_cf_stream_sources,
     .help = "List of metadata columns added to every row: `_ingested_at` "
     "(UTC time of arrival), `_request_id` (id of the push request), `_key` "
     "(the Kafka message's key, as text), `_partition`, `_offset`, "
     "`_timestamp` (the Kafka message's), `_shard`, `_sequence`, "
     "`_partition_key`, `_arrival` (the Kinesis record's). Each source takes only some "
     "(see the list after this table)."},
    {.section = "pipelines.<name>", .name = "max_columns", .type = ZX_CF_UINT,
     .def = "500", .offset = PIPE(max_columns), .min = 1, .max = 1500,
     .sources = zx_cf_stream_sources,
     .help = "Columns the table gets from the data at most (metadata columns "
     "and `_extra` are not counted; SQLite allows 2000 in all). Fields that "
     "would need a column beyond it are kept, one JSON object per row, in "
     "the column `_extra`; the feed says so once (`columns_capped`)."},
    {.section = "pipelines.<name>", .name = "history", .type = ZX_CF_BOOL,
     .def = "false", .offset = PIPE(history), .sources = zx_cf_mirror_sources,
     .help = "`true`: also append every change to `<mirror>__changes`, with "
     "its operation (`insert`, `update`, `delete`, `truncate`), source "
     "position and time. Kafka and http streams: with `format: debezium` "
     "or `mode: latest` only."},
    {.section = "pipelines.<name>", .name = "deleted_keys_retention",
     .type = ZX_CF_DURATION, .def = "168h", .offset = PIPE(deleted_keys_retention_ms),
     .min = MIN, .max = 30 * 24 * HOUR, .sources = zx_cf_mirror_sources,
     .help = "`format: debezium`: how long zx keeps the source position of "
     "a deleted key (a record in its data directory) so that a replay of "
     "an older change to that key, a source sending again what it sent "
     "before a restart, does not bring the row back. A key's position "
     "while it has a row is kept in the row (the mirror's column "
     "`_zx_seq`). Past the retention, such a replay inserts the row "
     "again: keep it longer than the longest time the source may replay "
     "(Kafka's `delete.retention.ms` is a guide)."},
    {.section = "pipelines.<name>", .name = "max_parked_bytes", .type = ZX_CF_SIZE,
     .def = "256MiB", .offset = PIPE(max_parked_bytes), .min = 0, .max = 1024 * GiB,
     .sources = zx_cf_park_sources,
     .help = "A mirror table (CDC; Kafka with `format: debezium` or `mode: "
     "latest`) the workspace refuses (a conflicting object of its name, "
     "say) blocks only itself: its changes are parked in the "
     "workspace table `_zx_parked`, in order, while the pipeline's other "
     "tables and its source position go on; they are applied once the "
     "table takes them (retried with backoff, and at `zxctl reload`). "
     "This bounds the parked changes of one table: beyond it the whole "
     "pipeline is held back, as with `0` (never park)."},
    {.section = "authors.<name>", .name = "tables", .type = ZX_CF_NAMES,
     .offset = AUTH(tables), .n_offset = AUTH(ntables),
     .flags = ZX_CF_REQUIRED,
     .help = "Workspace tables its syncs may read (exact names)."},
    {.section = "authors.<name>", .name = "operators", .type = ZX_CF_NAMES,
     .def_doc = "none", .offset = AUTH(operators), .n_offset = AUTH(noperators),
     .help = "System users (as the control socket sees them) whose one-off "
     "sends, `zxctl send`, run as this author. A user in no author's list "
     "cannot send."},

    {.section = "api_tokens.<name>", .name = "token", .type = ZX_CF_STRING,
     .offset = TOKEN(token), .flags = ZX_CF_REQUIRED | ZX_CF_SECRET | ZX_CF_TOKEN,
     .help = "The bearer token (`Authorization: Bearer <token>`): printable "
     "ASCII without spaces, at least 16 characters. Prefer `${env:NAME}`."},
    {.section = "api_tokens.<name>", .name = "role", .type = ZX_CF_ENUM,
     .offset = TOKEN(role), .flags = ZX_CF_REQUIRED, .allowed = token_roles,
     .help = "`orchestrator` (Airflow, Dagster...): its runs start at once. "
     "`agent`: its runs wait in `awaiting_approval` until an operator "
     "runs `zxctl approve RUN` (or `reject`). `status`: read-only, for the "
     "status page and monitoring: it may `GET /api/status`, `/api/lineage`, "
     "`/api/feed` and `/metrics`, nothing else (403 on the run routes); "
     "`syncs` does not apply to it."},
    {.section = "api_tokens.<name>", .name = "syncs", .type = ZX_CF_NAMES,
     .def_doc = "every sync", .offset = TOKEN(syncs), .n_offset = TOKEN(nsyncs),
     .help = "The syncs it may run."},
    {.section = "api_tokens.<name>", .name = "approval_timeout",
     .type = ZX_CF_DURATION, .def = "24h", .offset = TOKEN(approval_timeout_ms),
     .min = SEC, .max = 30 * 24 * HOUR,
     .help = "Role `agent`: a run of this token not approved (nor rejected) "
     "this long after it was asked for ends `expired`, with the reason in "
     "its record, `zxctl runs` and the feed; nothing is sent. The runs of a "
     "token removed from the configuration expire at once."},
    {.section = "api_tokens.<name>", .name = "max_waiting", .type = ZX_CF_UINT,
     .def = "16", .offset = TOKEN(max_waiting), .min = 1, .max = 256,
     .help = "Role `agent`: its runs not yet approved (being previewed or "
     "awaiting approval), all syncs together, at most; one more gets 429. "
     "They have a queue of their own: an agent never fills a sync's queue "
     "(16 runs), and its previews wait behind the runs of operators, "
     "schedules and orchestrators."},
};
const size_t zx_cf_noptions = sizeof(zx_cf_options) / sizeof(zx_cf_options[0]);

/* ---- the source table -------------------------------------------------- */

int zx_cf_conn_kind_ok(const char *name)
{
    zx_cf_derive();
    for (size_t i = 0; name && zx_cf_conn_kinds[i]; i++)
        if (!strcmp(zx_cf_conn_kinds[i], name))
            return 1;
    return 0;
}

int zx_cf_takes(const zx_cf_option *o, const char *src)
{
    size_t i;

    if (!o->sources) {
        /* a plug-in's row: a connection option, the kinds the plug-in
         * takes; a pipeline option of a source, that source only; of the
         * sync (ZX_PLUGIN_SYNC), reverse syncs only (src "sync") */
        const zx_plugin *pg = zx_cf_row_owner(o);
        if (pg && zx_cf_target(o->section) == ZX_CF_CONNECTION) {
            for (i = 0; src && pg->conn_kinds && pg->conn_kinds[i]; i++)
                if (!strcmp(pg->conn_kinds[i], src))
                    return 1;
            return 0;
        }
        return !pg || (pg->role != ZX_PLUGIN_SOURCE && pg->role != ZX_PLUGIN_SYNC) ||
               (src && !strcmp(pg->name, src));
    }
    for (i = 0; src && o->sources[i]; i++)
        if (!strcmp(o->sources[i], src))
            return 1;
    return 0;
}

void zx_cf_takers(const zx_cf_option *o, char *buf, size_t len, const char *sep)
{
    const zx_plugin *pg = zx_cf_row_owner(o);

    if (o->sources || !pg)
        zx_cf_join(buf, len, o->sources, sep);
    else if (zx_cf_target(o->section) == ZX_CF_CONNECTION)
        zx_cf_join(buf, len, pg->conn_kinds, sep);
    else
        snprintf(buf, len, "%s", pg->name);
}

uint32_t zx_cf_metadata_bits(const char *const *names)
{
    uint32_t bits = 0;
    size_t i, j;

    for (i = 0; names && names[i]; i++)
        for (j = 0; zx_meta_names[j]; j++)
            if (!strcmp(zx_meta_names[j], names[i]))
                bits |= 1u << j;
    return bits;
}

int zx_cf_target(const char *path)
{
    size_t s;

    for (s = 0; s < zx_cf_nsecs(); s++)
        if (!strcmp(zx_cf_sec(s)->path, path))
            return zx_cf_sec(s)->target;
    return -1;
}
