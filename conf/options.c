/*
 * options.c — the one table of zxd configuration options, and setting a
 * field of the config from a YAML value (or from an option's default) by its
 * row.  The value parsers are in values.c, the reference documentation
 * generated from the table in reference.c.
 *
 * Every option lives in exactly one row of zx_cf_options: the loader
 * (config.c) walks the YAML against it, defaults come from its `def` text
 * (parsed like a value from the file), and zx_conf_write_reference prints it
 * as conf/OPTIONS.md.  Nothing else may list option names.
 *
 * It must never: quote the value of an option marked secret, or of any
 * ${env:}/${file:} reference, in an error message.
 */
#define ZX_CONF_INTERNAL
#include "conf/values.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const synchronous[] = {"normal", "full", NULL};
static const char *const directions[] = {"stream", NULL};
static const char *const sources[] = {"http", NULL};
static const char *const acks[] = {"accepted", "commit", NULL};
/* Order = bit order of ZX_META_*. */
static const char *const metadata[] = {"_ingested_at", "_request_id", NULL};

#define ROOT(f) offsetof(zx_conf, f)
#define HTTP(f) (offsetof(zx_conf, http) + offsetof(zx_conf_http, f))
#define PIPE(f) offsetof(zx_conf_pipeline, f)

const zx_cf_section zx_cf_sections[] = {
    {"server", ZX_CF_ROOT, 0, NULL,
     "Where zxd keeps its state and how operators reach it."},
    {"server.http", ZX_CF_ROOT, 0, NULL,
     "The HTTP gateway: the push endpoint and `/healthz`."},
    {"workspace", ZX_CF_ROOT, 0, NULL,
     "The database the pipelines write into. Today: SQLite (the default "
     "when `workspace` is absent)."},
    {"workspace.sqlite", ZX_CF_ROOT, 0, NULL,
     "The embedded SQLite workspace, in WAL mode."},
    {"pipelines", ZX_CF_PIPELINE, 1, "pipelines.<name>",
     "One entry per pipeline; the key is the pipeline's name: 1 to 63 "
     "characters among `a-z 0-9 _ -`, starting with a letter. Pipelines "
     "whose settings do not change are left running by a reload."},
    {"pipelines.<name>", ZX_CF_PIPELINE, 0, NULL,
     "A pipeline. Today: `direction: stream` with `source: http` (JSON "
     "pushed to `POST /api/streams/<name>/push`)."},
};
const size_t zx_cf_nsections = sizeof(zx_cf_sections) / sizeof(zx_cf_sections[0]);

const zx_cf_option zx_cf_options[] = {
    {"server", "data_dir", ZX_CF_PATH, "./var", NULL, ROOT(data_dir), 0, 0, 0,
     NULL, "Folder for the LMDB store, the SQLite workspace and the control "
     "socket; relative to the config file's folder."},
    {"server", "control_socket", ZX_CF_PATH, "zxd.sock", NULL,
     ROOT(control_socket), ZX_CF_REL_DATA, 0, 0, NULL,
     "Unix socket `zxctl` talks to; relative to `data_dir`. At most 107 "
     "bytes once made absolute."},
    {"server", "control_group", ZX_CF_GROUP, NULL, "none",
     ROOT(control_group), 0, 0, 0, NULL,
     "Group allowed to use the control socket (mode 0660). Without it the "
     "socket is mode 0600: its owner only."},
    {"server", "log_level", ZX_CF_ENUM, "info", NULL, ROOT(log_level), 0, 0, 0,
     log_levels, "Lowest level of the log lines written to stderr."},
    {"server", "ring_size", ZX_CF_SIZE, "64MiB", NULL, ROOT(ring_size), 0,
     MiB, 64 * GiB, NULL,
     "Shared-memory ring between each pipeline's worker and the writer. "
     "Must hold two of the largest push bodies plus 1 MiB. When left at its "
     "default and the pipelines' rings would take more than `ring_budget`, "
     "each is made smaller (never below that minimum)."},
    {"server", "ring_budget", ZX_CF_SIZE, NULL,
     "a quarter of the machine's memory", ROOT(ring_budget), 0, 64 * MiB,
     1024 * GiB, NULL,
     "Shared memory that all pipelines' rings together may take (each "
     "pipeline: its frames ring, a request ring of twice its body limit, at "
     "least 8 MiB, and 1 MiB for replies). `zxd --check` refuses a "
     "configuration whose rings do not fit; `zxctl status` shows what each "
     "ring holds."},

    {"server", "max_queue_delay", ZX_CF_DURATION, "250ms", NULL,
     ROOT(max_queue_delay_ms), 0, 0, 10 * MIN, NULL,
     "Bounds each pipeline's ring by time as `ring_size` bounds it by "
     "bytes: while the oldest frame has waited this long for the writer, "
     "new pushes wait for room (503 after `http.backpressure_timeout`), so "
     "that a client's wait stays short at saturation. Applies only while "
     "the writer runs: a writer that is down or restarting is absorbed by "
     "the ring's bytes. 0: bytes only."},

    {"server.http", "listen", ZX_CF_LISTEN, "127.0.0.1:8780", NULL,
     HTTP(listen), 0, 0, 0, NULL,
     "Address and port of the gateway: `host:port` or `[ipv6]:port`. Use "
     "`0.0.0.0:8780` for every interface; port 0 picks a free port."},
    {"server.http", "max_body_size", ZX_CF_SIZE, "16MiB", NULL,
     HTTP(max_body_size), 0, KiB, GiB, NULL,
     "Largest request body; a larger push gets 413."},
    {"server.http", "max_header_size", ZX_CF_SIZE, "64KiB", NULL,
     HTTP(max_header_size), 0, KiB, MiB, NULL,
     "Largest total size of a request's headers; larger gets 431."},
    {"server.http", "max_connections", ZX_CF_UINT, "1024", NULL,
     HTTP(max_connections), 0, 1, 1000000, NULL,
     "Open client connections at most; more wait in the listen queue."},
    {"server.http", "idle_timeout", ZX_CF_DURATION, "60s", NULL,
     HTTP(idle_timeout_ms), 0, 1, 24 * HOUR, NULL,
     "A connection with no request for this long is closed."},
    {"server.http", "max_held_bytes", ZX_CF_SIZE, NULL,
     "max(256MiB, 4 × the largest `max_body_size`)", HTTP(max_held_bytes), 0,
     MiB, 1024 * GiB, NULL,
     "Request bodies the gateway holds at once, all connections together, "
     "counted as they are held (inflated gzip and chunked bodies included). "
     "A push that would pass it gets 503 with `Retry-After: 1`. Should be "
     "at least `max_body_size`."},
    {"server.http", "header_timeout", ZX_CF_DURATION, "10s", NULL,
     HTTP(header_timeout_ms), 0, 100, HOUR, NULL,
     "A request's line and headers must arrive within this time, counted "
     "from the connection (or, on a kept-alive connection, from the "
     "request's first byte); else 408 and the connection is closed."},
    {"server.http", "body_timeout", ZX_CF_DURATION, "30s", NULL,
     HTTP(body_timeout_ms), 0, 100, 24 * HOUR, NULL,
     "A request body must arrive within this time plus one second per "
     "`body_min_rate` bytes received; else 408 and the connection is "
     "closed."},
    {"server.http", "body_min_rate", ZX_CF_SIZE, "1KiB", NULL,
     HTTP(body_min_rate), 0, 1, GiB, NULL,
     "Bytes per second a body must keep up, on average, once "
     "`body_timeout` is used up."},
    {"server.http", "backpressure_timeout", ZX_CF_DURATION, "2s", NULL,
     HTTP(backpressure_timeout_ms), 0, 0, 10 * MIN, NULL,
     "How long a push waits for room in a full ring before it is answered "
     "503 with Retry-After. 0 answers at once."},
    {"server.http", "commit_timeout", ZX_CF_DURATION, "30s", NULL,
     HTTP(commit_timeout_ms), 0, 1, HOUR, NULL,
     "How long a push with `?wait=commit` (or `ack: commit`) waits for the "
     "writer's commit before it is answered 503."},

    {"workspace", "commit_interval", ZX_CF_DURATION, "20ms", NULL,
     ROOT(commit_interval_ms), 0, 0, 10 * SEC, NULL,
     "Longest time a group-commit transaction of the writer stays open "
     "while frames keep arriving: it commits as soon as a pass over the "
     "rings finds no new frame, or once this much time has passed since its "
     "first frame. A lone push is committed at once. 0: one pass over the "
     "rings per transaction."},

    {"workspace.sqlite", "path", ZX_CF_PATH, "workspace.db", NULL,
     ROOT(sqlite_path), ZX_CF_REL_DATA, 0, 0, NULL,
     "The database file; relative to `server.data_dir`."},
    {"workspace.sqlite", "synchronous", ZX_CF_ENUM, "normal", NULL,
     ROOT(sqlite_synchronous), 0, 0, 0, synchronous,
     "`normal`: a power loss may lose the last commits, never corrupts. "
     "`full`: commits survive a power loss, at a cost per commit."},

    {"pipelines.<name>", "direction", ZX_CF_ENUM, NULL, NULL, PIPE(direction),
     ZX_CF_REQUIRED, 0, 0, directions,
     "`stream`: append each event to a workspace table as it arrives."},
    {"pipelines.<name>", "source", ZX_CF_ENUM, NULL, NULL, PIPE(source),
     ZX_CF_REQUIRED, 0, 0, sources,
     "`http`: clients push JSON (object, array or newline-delimited) to "
     "`POST /api/streams/<name>/push`."},
    {"pipelines.<name>", "key", ZX_CF_STRING, NULL, NULL, PIPE(key),
     ZX_CF_REQUIRED | ZX_CF_SECRET, 0, 0, NULL,
     "Key clients must present to push (required for `source: http`). "
     "Printable ASCII without spaces. Prefer `${env:NAME}` or "
     "`${file:PATH}` to keep it out of the file."},
    {"pipelines.<name>", "table", ZX_CF_IDENT, NULL,
     "the pipeline name, `-` written `_`", PIPE(table), 0, 0, 0, NULL,
     "Workspace table the rows go to: `[A-Za-z_][A-Za-z0-9_]`, at most 63 "
     "characters, not starting with `_zx` nor ending with `__rejects` "
     "(reserved for zx's own tables), nor starting with `sqlite_` "
     "(reserved by SQLite)."},
    {"pipelines.<name>", "metadata", ZX_CF_METADATA, NULL, "none",
     PIPE(metadata), 0, 0, 0, metadata,
     "List of metadata columns added to every row: `_ingested_at` (UTC time "
     "of arrival), `_request_id` (id of the push request)."},
    {"pipelines.<name>", "ack", ZX_CF_ENUM_INT, "accepted", NULL,
     PIPE(ack_commit), 0, 0, 0, acks,
     "When a push is answered 202: `accepted` once its rows are in the ring, "
     "`commit` once the writer committed them (as with `?wait=commit`)."},
    {"pipelines.<name>", "max_body_size", ZX_CF_SIZE, NULL,
     "`server.http.max_body_size`", PIPE(max_body_size), 0, KiB, GiB, NULL,
     "Largest push body for this stream."},
    {"pipelines.<name>", "max_columns", ZX_CF_UINT, "500", NULL,
     PIPE(max_columns), 0, 1, 1500, NULL,
     "Columns the table gets from the data at most (metadata columns and "
     "`_extra` are not counted; SQLite allows 2000 in all). Fields that "
     "would need a column beyond it are kept, one JSON object per row, in "
     "the column `_extra`; the feed says so once (`columns_capped`)."},
};
const size_t zx_cf_noptions = sizeof(zx_cf_options) / sizeof(zx_cf_options[0]);
_Static_assert(sizeof(zx_cf_options) / sizeof(zx_cf_options[0]) <=
               ZX_CF_MAX_OPTIONS, "raise ZX_CF_MAX_OPTIONS in conf/config.h");

/* ---- setting fields ---------------------------------------------------- */

static void *field(void *base, const zx_cf_option *o)
{
    return (char *)base + o->offset;
}

static int set_str(zx_cf_ctx *x, const yaml_node_t *n, char **dst,
                   const char *v)
{
    char *c = strdup(v);

    if (!c) {
        zx_cf_error_at(x, n, "out of memory");
        return -1;
    }
    free(*dst);
    *dst = c;
    return 0;
}

static int check_range(zx_cf_ctx *x, const zx_cf_option *o,
                        const yaml_node_t *n, uint64_t v, const char *shown)
{
    char lo[32], hi[32];

    if (v >= o->min && v <= o->max)
        return 0;
    zx_cf_fmt_value(o, lo, sizeof(lo), o->min);
    zx_cf_fmt_value(o, hi, sizeof(hi), o->max);
    zx_cf_error_at(x, n, "%s must be between %s and %s, got %s", o->name, lo,
                   hi, shown);
    return -1;
}

static int list_index(const char *const *l, const char *v)
{
    int i;

    for (i = 0; l[i]; i++)
        if (!strcmp(l[i], v))
            return i;
    return -1;
}

static void join_list(char *buf, size_t len, const char *const *l)
{
    size_t i, off = 0;

    buf[0] = '\0';
    for (i = 0; l[i] && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
                                l[i]);
}

static int bad_enum(zx_cf_ctx *x, const zx_cf_option *o, const yaml_node_t *n,
                    const char *v, const char *shown)
{
    char all[256];
    size_t cnt = 0;
    const char *near;

    while (o->allowed[cnt])
        cnt++;
    near = zx_cf_suggest(v, o->allowed, cnt);
    join_list(all, sizeof(all), o->allowed);
    zx_cf_error_at(x, n, "invalid %s %s: expected one of: %s%s%s%s", o->name,
                   shown, all, near ? " (did you mean '" : "",
                   near ? near : "", near ? "'?)" : "");
    return -1;
}

static int ident_ok(const char *v)
{
    size_t i, len = strlen(v);

    if (len == 0 || len > 63 || isdigit((unsigned char)v[0]))
        return 0;
    for (i = 0; i < len; i++)
        if (!isalnum((unsigned char)v[i]) && v[i] != '_')
            return 0;
    return 1;
}

static int set_text(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                    const yaml_node_t *n, const char *v, const char *shown)
{
    uint64_t u = 0;
    const char *why = NULL, *p;
    char *host = NULL;
    uint16_t port;
    int r;

    switch (o->type) {
    case ZX_CF_STRING:
        for (p = v; *p; p++) {
            if ((o->flags & ZX_CF_SECRET) ? (*p <= ' ' || *p > '~')
                                          : (unsigned char)*p < ' ') {
                zx_cf_error_at(x, n, "%s must be %s", o->name,
                               (o->flags & ZX_CF_SECRET)
                                   ? "printable ASCII without spaces"
                                   : "text without control characters");
                return -1;
            }
        }
        if (!*v) {
            zx_cf_error_at(x, n, "%s must not be empty", o->name);
            return -1;
        }
        return set_str(x, n, field(base, o), v);
    case ZX_CF_PATH:
        if (!*v) {
            zx_cf_error_at(x, n, "%s must not be empty", o->name);
            return -1;
        }
        if (v[0] == '~') {
            zx_cf_error_at(x, n, "%s: '~' is not expanded; write an absolute "
                           "path or one relative to %s", o->name,
                           (o->flags & ZX_CF_REL_DATA) ? "data_dir"
                                                       : "the config file");
            return -1;
        }
        for (p = v; *p; p++) {
            if ((unsigned char)*p < ' ') {
                zx_cf_error_at(x, n, "%s: control character in a path", o->name);
                return -1;
            }
        }
        return set_str(x, n, field(base, o), v);
    case ZX_CF_ENUM:
        if (list_index(o->allowed, v) < 0)
            return bad_enum(x, o, n, v, shown);
        return set_str(x, n, field(base, o), v);
    case ZX_CF_ENUM_INT:
        r = list_index(o->allowed, v);
        if (r < 0)
            return bad_enum(x, o, n, v, shown);
        *(int *)field(base, o) = r;
        return 0;
    case ZX_CF_SIZE:
        r = zx_cf_parse_size(v, &u);
        if (r == ZX_CF_TOO_BIG) /* names the limit, not only the value */
            return check_range(x, o, n, UINT64_MAX, shown);
        if (r < 0) {
            zx_cf_error_at(x, n, "%s: expected an integer or a size like "
                           "16MiB, 512KiB, 1GiB, got %s", o->name, shown);
            return -1;
        }
        if (check_range(x, o, n, u, shown) < 0)
            return -1;
        *(uint64_t *)field(base, o) = u;
        return 0;
    case ZX_CF_DURATION:
        r = zx_cf_parse_duration(v, &u);
        if (r == ZX_CF_TOO_BIG)
            return check_range(x, o, n, UINT64_MAX, shown);
        if (r < 0) {
            zx_cf_error_at(x, n, "%s: expected a duration like 500ms, 60s, 2m "
                           "or 1h, got %s%s", o->name, shown,
                           r == -2 ? " (a number needs a unit)" : "");
            return -1;
        }
        if (check_range(x, o, n, u, shown) < 0)
            return -1;
        *(uint32_t *)field(base, o) = (uint32_t)u;
        return 0;
    case ZX_CF_UINT:
        p = v;
        r = zx_cf_parse_u64(&p, &u);
        if (r == ZX_CF_TOO_BIG && !*p)
            return check_range(x, o, n, UINT64_MAX, shown);
        if (r < 0 || *p) {
            zx_cf_error_at(x, n, "%s: expected an integer, got %s", o->name,
                           shown);
            return -1;
        }
        if (check_range(x, o, n, u, shown) < 0)
            return -1;
        *(uint32_t *)field(base, o) = (uint32_t)u;
        return 0;
    case ZX_CF_LISTEN:
        if (zx_cf_split_listen(v, &host, &port, &why) < 0) {
            zx_cf_error_at(x, n, "%s: %s, got %s", o->name, why, shown);
            return -1;
        }
        free(host);
        return set_str(x, n, field(base, o), v);
    case ZX_CF_IDENT:
        if (!ident_ok(v)) {
            zx_cf_error_at(x, n, "%s: %s is not a valid table name: 1 to 63 "
                           "letters, digits or _, not starting with a digit",
                           o->name, shown);
            return -1;
        }
        if (!strncasecmp(v, "_zx", 3) || (strlen(v) >= 9 &&
            !strcasecmp(v + strlen(v) - 9, "__rejects"))) {
            zx_cf_error_at(x, n, "%s: %s is reserved for zx's own tables "
                           "(names starting with _zx or ending with "
                           "__rejects)", o->name, shown);
            return -1;
        }
        if (!strncasecmp(v, "sqlite_", 7)) {
            zx_cf_error_at(x, n, "%s: %s is reserved by SQLite (names starting "
                           "with sqlite_)", o->name, shown);
            return -1;
        }
        return set_str(x, n, field(base, o), v);
    case ZX_CF_GROUP:
        for (p = v; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr("_.-", *p))
                break;
        if (!*v || *p || strlen(v) > 32 || *v == '-') {
            zx_cf_error_at(x, n, "%s: %s is not a group name", o->name, shown);
            return -1;
        }
        return set_str(x, n, field(base, o), v);
    case ZX_CF_METADATA:
        break;
    }
    zx_cf_error_at(x, n, "%s: expected a list", o->name);
    return -1;
}

static int set_metadata(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                        const yaml_node_t *n)
{
    yaml_node_item_t *it;
    uint32_t bits = 0;
    int rc = 0, i;

    if (n->type != YAML_SEQUENCE_NODE) {
        zx_cf_error_at(x, n, "%s: expected a list like [_ingested_at], got %s",
                       o->name, zx_cf_kind(n));
        return -1;
    }
    for (it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *in = zx_cf_node(x, *it);
        const char *v = zx_cf_scalar(in);
        char shown[96];
        if (!v) {
            zx_cf_error_at(x, in, "%s: expected a column name, got %s",
                           o->name, zx_cf_kind(in));
            rc = -1;
            continue;
        }
        i = list_index(o->allowed, v);
        if (i < 0) {
            snprintf(shown, sizeof(shown), "'%.80s'", v);
            bad_enum(x, o, in, v, shown);
            rc = -1;
        } else if (bits & (1u << i)) {
            zx_cf_error_at(x, in, "%s: '%s' is listed twice", o->name, v);
            rc = -1;
        }
        if (i >= 0)
            bits |= 1u << i;
    }
    if (rc == 0)
        *(uint32_t *)field(base, o) = bits;
    return rc;
}

int zx_cf_set_node(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                   const yaml_node_t *n)
{
    char *val = NULL, *shown = NULL;
    const char *text;
    int is_ref = 0, rc = -1, skip;

    if (zx_cf_is_null(n)) {
        zx_cf_error_at(x, n, "%s has no value%s", o->name,
                       (o->flags & ZX_CF_REQUIRED) ? ""
                       : "; remove the line to use the default");
        return -1;
    }
    if (o->type == ZX_CF_METADATA)
        return set_metadata(x, o, base, n);
    text = zx_cf_scalar(n);
    if (!text) {
        zx_cf_error_at(x, n, "%s: expected a single value, got %s", o->name,
                       zx_cf_kind(n));
        return -1;
    }
    skip = (x->flags & ZX_CONF_SKIP_SECRETS) && (o->flags & ZX_CF_SECRET);
    if (zx_cf_resolve(x, n, text, skip, &val, &is_ref) < 0)
        return -1;
    if (!val) {  /* skipped secret: leave the field NULL */
        free(*(char **)field(base, o));
        *(char **)field(base, o) = NULL;
        return 0;
    }
    if (is_ref)
        rc = asprintf(&shown, "the value of %.80s", text);
    else if (o->flags & ZX_CF_SECRET)
        rc = asprintf(&shown, "the %s", o->name);
    else
        rc = asprintf(&shown, "'%.80s%s'", val, strlen(val) > 80 ? "..." : "");
    if (rc < 0) {
        shown = NULL;
        zx_cf_error_at(x, n, "out of memory");
        rc = -1;
        goto out;
    }
    rc = set_text(x, o, base, n, val, shown);
out:
    free(val);
    free(shown);
    return rc;
}

void zx_cf_set_default(zx_cf_ctx *x, const zx_cf_option *o, void *base)
{
    if (o->def)
        set_text(x, o, base, NULL, o->def, o->def);
}

void zx_cf_free_fields(int target, void *base)
{
    size_t i;

    for (i = 0; i < zx_cf_noptions; i++) {
        const zx_cf_option *o = &zx_cf_options[i];
        size_t s;
        for (s = 0; s < zx_cf_nsections; s++)
            if (!strcmp(zx_cf_sections[s].path, o->section))
                break;
        if (s == zx_cf_nsections || zx_cf_sections[s].target != target)
            continue;
        switch (o->type) {
        case ZX_CF_STRING: case ZX_CF_PATH: case ZX_CF_ENUM:
        case ZX_CF_LISTEN: case ZX_CF_IDENT: case ZX_CF_GROUP:
            free(*(char **)field(base, o));
            *(char **)field(base, o) = NULL;
            break;
        default:
            break;
        }
    }
}
