/*
 * redis_reply.c — bounded reading of Redis replies (redis_reply.h) with
 * hiredis' redisReader and reply objects of our own (hiredis' own would
 * calloc an array of any size a server names).
 */
#include "workers/destinations/redis/redis_reply.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct zx_redis_rd {
    redisReader *r;
    size_t max_pending;
    int too_many;             /* an array over the bound was refused */
};

typedef struct obj {
    int type;
    long long integer;
    size_t len;               /* of text kept */
    char text[ZX_REDIS_REPLY_TEXT];
    size_t n;                 /* array: elements */
    struct obj **el;
} obj;

static void free_obj(void *p)
{
    obj *o = p;
    if (!o)
        return;
    for (size_t i = 0; o->el && i < o->n; i++)
        free_obj(o->el[i]);
    free(o->el);
    free(o);
}

/* A new object of that type, attached to its parent array when it has one. */
static obj *new_obj(const redisReadTask *task, int type)
{
    obj *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->type = type;
    if (task->parent) {
        obj *p = task->parent->obj;
        if (!p || task->idx < 0 || (size_t)task->idx >= p->n) {
            free(o);
            return NULL;
        }
        p->el[task->idx] = o;
    }
    return o;
}

static void *mk_string(const redisReadTask *task, char *s, size_t len)
{
    obj *o = new_obj(task, task->type);
    if (!o)
        return NULL;
    size_t k = len < sizeof(o->text) - 1 ? len : sizeof(o->text) - 1;
    for (size_t i = 0; i < k; i++)
        o->text[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    o->text[k] = '\0';
    o->len = k;
    return o;
}

static void *mk_array(const redisReadTask *task, int n)
{
    if (n < 0 || n > ZX_REDIS_REPLY_MAX_ELEMENTS) {
        zx_redis_rd *rd = task->privdata;   /* the reader's privdata */
        if (rd)
            rd->too_many = 1;
        return NULL;
    }
    obj *o = new_obj(task, ZX_REDIS_R_ARRAY);
    if (!o)
        return NULL;
    if (n > 0 && !(o->el = calloc((size_t)n, sizeof(*o->el)))) {
        if (!task->parent)
            free(o);
        return NULL;      /* a child: freed with its parent */
    }
    o->n = (size_t)n;
    return o;
}

static void *mk_integer(const redisReadTask *task, long long v)
{
    obj *o = new_obj(task, ZX_REDIS_R_INTEGER);
    if (o)
        o->integer = v;
    return o;
}

static void *mk_nil(const redisReadTask *task)
{
    return new_obj(task, ZX_REDIS_R_NIL);
}

static redisReplyObjectFunctions fns = {
    .createString = mk_string, .createArray = mk_array, .createInteger = mk_integer,
    .createNil = mk_nil, .freeObject = free_obj,
};

zx_redis_rd *zx_redis_rd_new(size_t max_pending)
{
    zx_redis_rd *rd = calloc(1, sizeof(*rd));
    if (!rd)
        return NULL;
    if (!(rd->r = redisReaderCreateWithFunctions(&fns))) {
        free(rd);
        return NULL;
    }
    rd->r->privdata = rd;
    rd->max_pending = max_pending < 1024 ? 1024 : max_pending;
    return rd;
}

static size_t pending(const zx_redis_rd *rd)
{
    return rd->r->len > rd->r->pos ? rd->r->len - rd->r->pos : 0;
}

size_t zx_redis_rd_room(const zx_redis_rd *rd)
{
    size_t p = pending(rd);
    return p >= rd->max_pending ? 0 : rd->max_pending - p;
}

int zx_redis_rd_feed(zx_redis_rd *rd, const char *buf, size_t n, char *err, size_t errlen)
{
    if (n > zx_redis_rd_room(rd)) {
        snprintf(err, errlen, "the server sent a reply larger than %zu bytes", rd->max_pending);
        return -1;
    }
    if (redisReaderFeed(rd->r, buf, n) != REDIS_OK) {
        snprintf(err, errlen, "reading the server's reply: %s", rd->r->errstr);
        return -1;
    }
    return 0;
}

int zx_redis_rd_next(zx_redis_rd *rd, zx_redis_reply *out, char *err, size_t errlen)
{
    void *rep = NULL;
    if (redisReaderGetReply(rd->r, &rep) != REDIS_OK) {
        if (rd->too_many)
            snprintf(err, errlen, "the server sent an array reply of more than %d elements",
                     ZX_REDIS_REPLY_MAX_ELEMENTS);
        else
            snprintf(err, errlen, "the server's reply does not parse: %s", rd->r->errstr);
        return -1;
    }
    if (!rep) {
        if (zx_redis_rd_room(rd) == 0) {
            snprintf(err, errlen, "the server sent a reply larger than %zu bytes",
                     rd->max_pending);
            return -1;
        }
        return 0;
    }
    obj *o = rep;
    memset(out, 0, sizeof(*out));
    out->type = o->type;
    out->integer = o->integer;
    out->elements = o->n;
    memcpy(out->text, o->text, o->len + 1);
    free_obj(o);
    return 1;
}

void zx_redis_rd_free(zx_redis_rd *rd)
{
    if (!rd)
        return;
    redisReaderFree(rd->r);
    free(rd);
}
