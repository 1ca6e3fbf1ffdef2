/*
 * redis_opts.h — the Redis destination's own options (conf/plugin.h): the
 * rows of redis_plugin.c (section `pipelines.<name>.destination.redis`)
 * set them, per reverse sync, into the struct zx_conf_pipeline.dest_own
 * points at; the destination gets it as zx_dest_args.opts.  Owned by the
 * zx_conf.  The connection's options (address, db, username, password,
 * tls) are in zx_conf_connection (kind redis).
 */
#ifndef ZX_DEST_REDIS_OPTS_H
#define ZX_DEST_REDIS_OPTS_H

#include <stdint.h>

/* `action` (ZX_CF_ENUM_INT: the order of redis_plugin.c's actions[]) */
enum { ZX_REDIS_SET = 0, ZX_REDIS_HSET = 1, ZX_REDIS_INVALIDATE = 2 };

typedef struct zx_redis_opts {
    char *connection;        /* `connection`: a `kind: redis` connection */
    char *key;               /* `key`: the key template ("cache:order:{id}",
                                redis_keytpl.h) */
    int action;              /* ZX_REDIS_SET (default), _HSET, _INVALIDATE */
    uint64_t ttl_ms;         /* `ttl`: expiry of the keys written; 0: none */
    uint32_t batch_rows;     /* `batch_rows`: rows per pipelined round trip */
} zx_redis_opts;

#endif
