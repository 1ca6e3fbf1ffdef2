/*
 * redis_conn.h — one connection to a Redis server, as a `kind: redis`
 * connection (conf/config.h: address, db, username, password, tls) says:
 * a TCP socket of our own, plain or TLS (OpenSSL), every wait bounded by
 * a deadline; commands encoded with hiredis' redisFormatCommandArgv and
 * replies read with redis_reply.h (hiredis 0.14, Debian's, has no TLS: it
 * is used for the protocol only).
 *
 * Errors are one line in err, never holding the password (a server's
 * error text is passed on: Redis never echoes a password).
 *
 * It must never: log, keep a copy of the password beyond zx_redis_open,
 * or wait longer than the timeout it was given for any one byte.  (The
 * name is resolved with getaddrinfo, which has no deadline of its own:
 * give an address, or a name /etc/hosts or a near resolver answers.)
 */
#ifndef ZX_DEST_REDIS_CONN_H
#define ZX_DEST_REDIS_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"
#include "workers/destinations/redis/redis_addr.h"
#include "workers/destinations/redis/redis_reply.h"

typedef struct zx_redis_conn zx_redis_conn;

/* Connect to c (kind redis): TCP (TLS when its address is rediss:// or it
 * has tls.ca / tls.cert: the server's certificate checked against tls.ca,
 * or the system's CAs, and the address's host), AUTH when it has a
 * password (with its username: an ACL user), SELECT its db unless 0.
 * Each network wait at most timeout_ms (<= 0: 30 s).  The connection, or
 * NULL with err ("connect to 127.0.0.1:6379: Connection refused", "AUTH:
 * WRONGPASS invalid username-password pair..."). */
zx_redis_conn *zx_redis_open(const zx_conf_connection *c, int64_t timeout_ms, char *err,
                             size_t errlen);

/* Called once per reply, in order; i: its command's index.  0 to go on,
 * -1 to stop (the exchange returns -1 with err as the callback left it). */
typedef int (*zx_redis_reply_fn)(void *ctx, size_t i, const zx_redis_reply *r);

/* Pipeline: send the encoded commands out[0..outlen) (RESP, several
 * commands), reading the replies while sending, until nreplies came.  An
 * error reply is a reply (the callback decides).  0; -1 with err when the
 * connection failed, timed out (timeout_ms without a byte sent or
 * received: each wait is bounded, not the whole exchange, whose replies
 * are bounded in size), or the server sent what cannot be read: the
 * connection is of no further use (close it). */
int zx_redis_exchange(zx_redis_conn *k, const char *out, size_t outlen, size_t nreplies,
                      zx_redis_reply_fn fn, void *ctx, char *err, size_t errlen);

/* Encode one command (argv[0..argc), binary-safe) onto b.  0 or -1 (out
 * of memory). */
struct zx_buf;
int zx_redis_encode(struct zx_buf *b, int argc, const char **argv, const size_t *lens);

/* Close and free.  NULL ok. */
void zx_redis_close(zx_redis_conn *k);

#endif
