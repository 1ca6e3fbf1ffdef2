/*
 * redis_plugin.c — the plug-in redis: destination Redis keys (dest_redis.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.def;
 * its option rows (the sub-section destination.redis, into its own struct
 * redis_opts.h; and the options of `kind: redis` connections, into
 * zx_conf_connection: address, db, username, password; their `tls` files
 * are the rows kafka's connections have); its checks.  The connection is
 * resolved by conf/syncs.c through dest_where.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/lineage.h"
#include "conf/plugin.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/redis/redis_addr.h"
#include "workers/destinations/redis/redis_keytpl.h"
#include "workers/destinations/redis/redis_opts.h"
#include "workers/syncs/sync_opts.h"

extern const zx_dest zx_dest_redis;   /* dest_redis.c */

#define OWN(f) offsetof(zx_redis_opts, f)
#define CONN(f) offsetof(zx_conf_connection, f)
#define SEC ((uint64_t)1000)

static const char *const conn_kinds[] = {"redis", NULL};
/* username and password are opensearch's too (one row each) */
static const char *const user_kinds[] = {"redis", "opensearch", NULL};
/* order = ZX_REDIS_* of redis_opts.h */
static const char *const actions[] = {"set", "hset", "invalidate", NULL};
static const char *const sync_only[] = {"sync", NULL};

static const zx_cf_option options[] = {
    {.section = "pipelines.<name>.destination.redis", .name = "connection",
     .type = ZX_CF_STRING, .def_doc = "**required** with `redis`",
     .offset = OWN(connection), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The `kind: redis` connection of the server."},
    {.section = "pipelines.<name>.destination.redis", .name = "key",
     .type = ZX_CF_STRING, .def_doc = "**required** with `redis`",
     .offset = OWN(key), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The key template: each row's key, with result columns in braces "
     "(`cache:order:{id}`, `{tenant}:user:{id}`); `{{` and `}}` are literal braces. "
     "With `mode: mirror` it may name only the sync's `key` columns (deletes know "
     "those only). A value is written as its text (numbers in decimal, timestamps "
     "`YYYY-MM-DDTHH:MM:SS.ffffffZ`, booleans `true`/`false`) with every byte outside "
     "`!`..`~` and each of `% : { } * ? [ ] \\` written `%XX` (upper-case hex), so a "
     "value never reaches into another part of the key nor into a pattern "
     "(`1:x` gives `cache:order:1%3Ax`). A row whose placeholder is NULL, or whose "
     "key would be longer than 4096 bytes, is refused (sent again by the next run)."},
    {.section = "pipelines.<name>.destination.redis", .name = "action",
     .type = ZX_CF_ENUM_INT, .def = "set", .offset = OWN(action), .flags = ZX_CF_OWN,
     .allowed = actions, .sources = sync_only,
     .help = "`set`: `SET key <row as a JSON object>` (keys in column order; as the "
     "files destination's NDJSON). `hset`: the row as a hash, `HSET key column text "
     "...` of its non-NULL columns and `HDEL` of its NULL ones (texts as in `key`, "
     "bytes as they are). `invalidate`: `DEL key`, so that a cache in front of the "
     "source loads the row again. In mirror mode a key gone from the result is "
     "deleted (`DEL`) whatever the action."},
    {.section = "pipelines.<name>.destination.redis", .name = "ttl",
     .type = ZX_CF_DURATION, .def_doc = "none: keys never expire",
     .offset = OWN(ttl_ms), .flags = ZX_CF_OWN, .min = 1, .max = 3650 * 24 * 3600 * SEC,
     .sources = sync_only,
     .help = "With `set` and `hset`: how long a key written lives (`SET ... PX`, "
     "`PEXPIRE` after `HSET`), from each write."},
    {.section = "pipelines.<name>.destination.redis", .name = "batch_rows",
     .type = ZX_CF_UINT, .def = "1000", .offset = OWN(batch_rows), .flags = ZX_CF_OWN,
     .min = 1, .max = 100000, .sources = sync_only,
     .help = "Rows whose commands are pipelined in one round trip (written all, then "
     "their replies read) at most."},
    /* the connection */
    {.section = "connections.<name>", .name = "address", .type = ZX_CF_STRING,
     .offset = CONN(address), .flags = ZX_CF_REQUIRED | ZX_CF_TOKEN,
     .help = "redis: the server, `host:port` (`[ipv6]:port`; port 6379 when left "
     "out), or a URL `redis://host:port/db` or `rediss://host:port/db` (TLS), without "
     "user or password."},
    {.section = "connections.<name>", .name = "db", .type = ZX_CF_UINT, .def = "0",
     .offset = CONN(db), .max = 1000000,
     .help = "redis: the database number (`SELECT`); not with a URL that names one."},
    {.section = "connections.<name>", .name = "username", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(username), .sources = user_kinds,
     .help = "redis: the ACL user (`AUTH username password`, Redis 6 and later; "
     "none: `default`); needs `password`. opensearch: the user of HTTP basic "
     "authentication (the security plug-in's internal users, or Elasticsearch's "
     "native realm)."},
    {.section = "connections.<name>", .name = "password", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(password), .flags = ZX_CF_SECRET,
     .sources = user_kinds,
     .help = "redis: the password (`requirepass`, or the ACL user's; none: no AUTH). "
     "opensearch: `username`'s password. A secret: never logged nor shown, wiped from "
     "the workers that do not use it. Prefer `${secret:NAME}`, `${env:NAME}` or "
     "`${file:PATH}`."},
};

/* Make the TLS path *f absolute and, unless secrets are skipped, check that
 * it is a readable regular file. */
static int tls_file(zx_cf_check *ck, const zx_conf_connection *c, const char *opt, char **f)
{
    char name[16];
    struct stat st;
    int fd, rc = 0;

    snprintf(name, sizeof(name), "tls.%s", opt);
    if (!*f || zx_check_abspath(ck, name, f) < 0 || (zx_check_flags(ck) & ZX_CONF_SKIP_SECRETS))
        return *f ? 0 : 0;
    fd = open(*f, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        zx_check_error(ck, name, "connections.%s: tls.%s: cannot read %s: %s", c->name, opt, *f,
                       strerror(errno));
        rc = -1;
    } else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        zx_check_error(ck, name, "connections.%s: tls.%s: %s is not a regular file", c->name,
                       opt, *f);
        rc = -1;
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

static int redis_check_connection(zx_cf_check *ck, zx_conf_connection *c)
{
    int rc = 0;
    char e[300];
    zx_redis_addr a;
    if (c->address && zx_redis_addr_parse(c->address, &a, e, sizeof(e)) < 0) {
        zx_check_error(ck, "address", "connections.%s: %s", c->name, e);
        rc = -1;
    } else if (c->address && a.db >= 0 && zx_check_written(ck, "db")) {
        zx_check_error(ck, "db", "connections.%s: db: the address names database %lld "
                       "already", c->name, (long long)a.db);
        rc = -1;
    }
    if (zx_check_written(ck, "username") && !zx_check_written(ck, "password")) {
        zx_check_error(ck, "username", "connections.%s: username needs password", c->name);
        rc = -1;
    }
    int cert = zx_check_written(ck, "tls.cert"), key = zx_check_written(ck, "tls.key");
    if (cert != key) {
        zx_check_error(ck, cert ? "tls.cert" : "tls.key", "connections.%s: tls.cert and "
                       "tls.key go together: add tls.%s", c->name, cert ? "key" : "cert");
        rc = -1;
    }
    if (zx_check_written(ck, "tls.key_password") && !key) {
        zx_check_error(ck, "tls.key_password", "connections.%s: tls.key_password needs "
                       "tls.key", c->name);
        rc = -1;
    }
    if (tls_file(ck, c, "ca", &c->tls_ca) < 0 || tls_file(ck, c, "cert", &c->tls_cert) < 0 ||
        tls_file(ck, c, "key", &c->tls_key) < 0)
        rc = -1;
    return rc;
}

static int redis_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    const zx_redis_opts *o = p->dest_own;
    const zx_sync_opts *so = zx_sync_opts_of(p);
    int rc = 0;
    static const char *const req[] = {"connection", "key", NULL};
    for (int i = 0; req[i]; i++) {
        char at[64];
        snprintf(at, sizeof(at), "destination.redis.%s", req[i]);
        if (!zx_check_written(ck, at)) {
            zx_check_error(ck, "destination.redis", "pipelines.%s: destination.redis: "
                           "missing required field '%s'", p->name, req[i]);
            rc = -1;
        }
    }
    if (!o || !o->key)
        return rc;
    zx_redis_tpl t;
    char e[400];
    if (zx_redis_tpl_parse(o->key, &t, e, sizeof(e)) < 0) {
        zx_check_error(ck, "destination.redis.key", "pipelines.%s: destination.redis.%s",
                       p->name, e);
        return -1;
    }
    if (so && so->mode == ZX_MODE_REPLACE) {
        zx_check_error(ck, "mode", "pipelines.%s: mode replace: Redis has no table to "
                       "replace; use upsert or mirror (or append) with destination redis",
                       p->name);
        rc = -1;
    }
    if (so && so->mode == ZX_MODE_MIRROR &&
        zx_redis_tpl_bind(&t, (const char *const *)so->key_cols, so->nkey_cols, e,
                          sizeof(e)) < 0) {
        zx_check_error(ck, "destination.redis.key", "pipelines.%s: destination.redis.key: "
                       "mode mirror deletes keys by the sync's key columns only, so the "
                       "template may name only those: %s", p->name, e);
        rc = -1;
    }
    if (o->action == ZX_REDIS_INVALIDATE && o->ttl_ms) {
        zx_check_error(ck, "destination.redis.ttl", "pipelines.%s: destination.redis.ttl "
                       "goes with action set or hset (invalidate deletes keys)", p->name);
        rc = -1;
    }
    zx_redis_tpl_free(&t);
    return rc;
}

static void redis_where(const zx_conf_pipeline *p, zx_dest_where *w)
{
    const zx_redis_opts *o = p->dest_own;
    w->path = NULL;
    w->format = NULL;
    w->connection = o ? o->connection : NULL;
    w->conn_kinds = conn_kinds;
    w->option = "destination.redis";
}

/* Lineage: the keys it writes (its key template), on its connection. */
static void redis_lineage(const zx_conf *c, const zx_conf_pipeline *p, zx_lineage_out *out)
{
    (void)c;
    const zx_redis_opts *o = p->dest_own;
    if (o && o->key)
        zx_lineage_ext(out, "redis.key", o->connection, o->key);
}

const zx_plugin zx_plugin_dest_redis = {
    .name = "redis",
    .role = ZX_PLUGIN_DESTINATION,
    .lineage = redis_lineage,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_redis,
    .check = redis_check,
    .check_connection = redis_check_connection,
    .dest_where = redis_where,
    .section_doc = "Redis (tested with Redis 7.0): each row new or changed since the "
     "last run (upsert, mirror; every row with append) becomes a key made by `key`: "
     "`set` writes the row as JSON, `hset` as a hash, `invalidate` deletes it; with "
     "`mode: mirror` the keys of rows gone from the result are deleted. Commands are "
     "pipelined, `batch_rows` rows a round trip, each wait bounded; a batch whose "
     "connection fails is sent again on a new one (twice at most). Not a "
     "transaction: a run's batches are visible as they are sent, and a run that fails "
     "is sent again in full by the next. A command the server refuses on its own "
     "(`WRONGTYPE`: with `hset`, the key holds another type, which `set` would replace; "
     "`NOPERM`: the ACL user may not write it) refuses its row only: the rest is delivered, the run counts it (`zxctl "
     "runs`) and the next run sends it again. `mode: replace` is refused (Redis has no "
     "table to replace).",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_redis_opts),
    .doc = "Redis keys: rows as JSON strings or hashes under a key template, or "
     "deleted to invalidate a cache; AUTH, ACL users, TLS, a database number.",
};
