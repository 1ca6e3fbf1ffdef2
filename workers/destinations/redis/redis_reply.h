/*
 * redis_reply.h — the replies of a Redis server, read from the bytes it
 * sends, with bounds: hiredis' parser (redisReader, Debian's libhiredis
 * 0.14) over reply objects of our own.
 *
 * This is where a server's bytes become data: it must never hold more
 * than max_pending unparsed bytes (a reply that needs more is an error, so
 * a hostile "$999999999" cannot make it buffer gigabytes), build an array
 * of more than ZX_REDIS_REPLY_MAX_ELEMENTS elements (zx sends no command
 * whose reply is an array), or keep more of a string than
 * ZX_REDIS_REPLY_TEXT - 1 bytes (errors and statuses are shown cut).
 * Nesting is hiredis' limit (7 levels).
 *
 * It must never: know about sockets, TLS or commands.
 */
#ifndef ZX_DEST_REDIS_REPLY_H
#define ZX_DEST_REDIS_REPLY_H

#include <stddef.h>

#define ZX_REDIS_REPLY_MAX_ELEMENTS 64
#define ZX_REDIS_REPLY_TEXT 256

/* Reply types (hiredis' numbers). */
enum {
    ZX_REDIS_R_STRING = 1, ZX_REDIS_R_ARRAY = 2, ZX_REDIS_R_INTEGER = 3,
    ZX_REDIS_R_NIL = 4, ZX_REDIS_R_STATUS = 5, ZX_REDIS_R_ERROR = 6
};

typedef struct zx_redis_reply {
    int type;                       /* ZX_REDIS_R_* */
    long long integer;              /* INTEGER */
    size_t elements;                /* ARRAY */
    char text[ZX_REDIS_REPLY_TEXT]; /* STRING, STATUS, ERROR: the first bytes,
                                       control bytes as '?', NUL-terminated */
} zx_redis_reply;

typedef struct zx_redis_rd zx_redis_rd;

/* A reader keeping at most max_pending unparsed bytes (>= 1024).  NULL
 * out of memory.  Free with zx_redis_rd_free. */
zx_redis_rd *zx_redis_rd_new(size_t max_pending);

/* Bytes the reader may take now (max_pending less what it holds; 0: the
 * next reply is too large, call zx_redis_rd_next to get that error). */
size_t zx_redis_rd_room(const zx_redis_rd *rd);

/* Hand it n bytes the server sent.  0; -1 with err when that makes more
 * than max_pending unparsed bytes, or out of memory. */
int zx_redis_rd_feed(zx_redis_rd *rd, const char *buf, size_t n, char *err, size_t errlen);

/* The next whole reply into *out: 1; 0 when more bytes are needed; -1 with
 * err (a protocol error, a reply over the bounds above, out of memory):
 * the stream cannot be read further. */
int zx_redis_rd_next(zx_redis_rd *rd, zx_redis_reply *out, char *err, size_t errlen);

/* NULL ok. */
void zx_redis_rd_free(zx_redis_rd *rd);

#endif
