/*
 * redis_addr.h — the address of a `kind: redis` connection, parsed: what
 * the plug-in checks at load and the connection dials.  Pure; it must
 * never resolve a name or open anything.
 */
#ifndef ZX_DEST_REDIS_ADDR_H
#define ZX_DEST_REDIS_ADDR_H

#include <stddef.h>
#include <stdint.h>

#define ZX_REDIS_DEFAULT_PORT 6379

/* An address as written: "host:port", "host" (port 6379), "[v6]:port",
 * "redis://host[:port][/db]" or "rediss://..." (TLS). */
typedef struct zx_redis_addr {
    char host[256];
    uint16_t port;
    int tls;                  /* 1: rediss:// */
    int64_t db;               /* the URL's /db; -1: none */
} zx_redis_addr;

/* Parse s into *a.  0, or -1 with err (a URL with user:password@ is
 * refused: the password goes in `password`). */
int zx_redis_addr_parse(const char *s, zx_redis_addr *a, char *err, size_t errlen);

#endif
