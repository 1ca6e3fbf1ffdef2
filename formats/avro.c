/*
 * avro.c — the Avro container file writer and datum encoders (avro.h).
 *
 * Pure: bytes in, bytes out through the caller's sink or buffer.  It must
 * never parse the schema it is given nor log.
 */
#include "formats/avro.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <zlib.h>

/* ---- datum encoders ---------------------------------------------------- */

size_t zx_avro_zigzag(int64_t v, uint8_t out[10])
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 0;
    while (z >= 0x80) {
        out[n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    out[n++] = (uint8_t)z;
    return n;
}

size_t zx_avro_unzigzag(const uint8_t *p, size_t n, int64_t *v)
{
    uint64_t z = 0;
    for (size_t i = 0; i < n && i < 10; i++) {
        z |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
            return i + 1;
        }
    }
    return 0;
}

int zx_avro_put_long(zx_buf *b, int64_t v)
{
    uint8_t t[10];
    return zx_buf_put(b, t, zx_avro_zigzag(v, t));
}

int zx_avro_put_int(zx_buf *b, int32_t v)
{
    return zx_avro_put_long(b, v);
}

int zx_avro_put_boolean(zx_buf *b, int v)
{
    uint8_t c = v ? 1 : 0;
    return zx_buf_put(b, &c, 1);
}

static int put_le(zx_buf *b, uint64_t u, size_t n)
{
    uint8_t t[8];
    for (size_t i = 0; i < n; i++)
        t[i] = (uint8_t)(u >> (8 * i));
    return zx_buf_put(b, t, n);
}

int zx_avro_put_float(zx_buf *b, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return put_le(b, u, 4);
}

int zx_avro_put_double(zx_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    return put_le(b, u, 8);
}

int zx_avro_put_bytes(zx_buf *b, const void *p, size_t n)
{
    size_t len0 = b->len;
    if (n > INT64_MAX || zx_avro_put_long(b, (int64_t)n) < 0)
        return -1;
    if (zx_buf_put(b, p, n) < 0) {
        b->len = len0;
        if (b->p)
            b->p[len0] = '\0';
        return -1;
    }
    return 0;
}

int zx_avro_put_string(zx_buf *b, const char *s, size_t n)
{
    return zx_avro_put_bytes(b, s, n);
}

int zx_avro_put_str(zx_buf *b, const char *s)
{
    return zx_avro_put_bytes(b, s, strlen(s));
}

int zx_avro_put_fixed(zx_buf *b, const void *p, size_t n)
{
    return zx_buf_put(b, p, n);
}

int zx_avro_put_union(zx_buf *b, int32_t branch)
{
    return branch < 0 ? -1 : zx_avro_put_long(b, branch);
}

int zx_avro_put_block(zx_buf *b, int64_t n)
{
    return n < 0 ? -1 : zx_avro_put_long(b, n);
}

/* ---- the container file ------------------------------------------------ */

struct zx_avro_writer {
    zx_avro_codec codec;
    int level;
    size_t block_bytes;
    int (*sink)(void *, const void *, size_t, char *, size_t);
    void *sink_ctx;
    zx_buf *out;
    uint8_t sync[16];
    zx_buf datum;        /* the pending records */
    uint64_t pending;    /* records in datum */
    uint64_t records;    /* all records */
    uint64_t written;    /* bytes handed to the output */
    zx_buf frame;        /* a block's framing and compressed data */
    int failed;
};

static int emit(zx_avro_writer *w, const void *p, size_t n, char *err, size_t errlen)
{
    if (w->sink) {
        if (w->sink(w->sink_ctx, p, n, err, errlen) < 0)
            return -1;
    } else if (zx_buf_put(w->out, p, n) < 0) {
        snprintf(err, errlen, "avro: out of memory");
        return -1;
    }
    w->written += n;
    return 0;
}

/* Raw deflate (no zlib header) of p[0..n), appended to out. */
static int deflate_into(zx_buf *out, const void *p, size_t n, int level, char *err,
                        size_t errlen)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    if (deflateInit2(&zs, level ? level : Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
        snprintf(err, errlen, "avro: deflate: cannot start");
        return -1;
    }
    int rc = -1;
    uLong bound = deflateBound(&zs, (uLong)n);
    if (zx_buf_reserve(out, bound) < 0) {
        snprintf(err, errlen, "avro: out of memory");
        goto done;
    }
    zs.next_in = (Bytef *)(uintptr_t)p;
    zs.avail_in = (uInt)n;
    zs.next_out = (Bytef *)out->p + out->len;
    zs.avail_out = (uInt)bound;
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
        snprintf(err, errlen, "avro: deflate failed");
        goto done;
    }
    out->len += zs.total_out;
    out->p[out->len] = '\0';
    rc = 0;
done:
    deflateEnd(&zs);
    return rc;
}

static int write_block(zx_avro_writer *w, char *err, size_t errlen)
{
    if (!w->pending)
        return 0;
    zx_buf data = {0};
    const void *dp = w->datum.p;
    size_t dn = w->datum.len;
    int rc = -1;
    if (w->codec == ZX_AVRO_DEFLATE) {
        if (dn > UINT32_MAX) {
            snprintf(err, errlen, "avro: a block over 4 GiB");
            goto done;
        }
        if (deflate_into(&data, dp, dn, w->level, err, errlen) < 0)
            goto done;
        dp = data.p;
        dn = data.len;
    }
    zx_buf_reset(&w->frame);
    if (zx_avro_put_long(&w->frame, (int64_t)w->pending) < 0 ||
        zx_avro_put_long(&w->frame, (int64_t)dn) < 0) {
        snprintf(err, errlen, "avro: out of memory");
        goto done;
    }
    if (emit(w, w->frame.p, w->frame.len, err, errlen) < 0 ||
        emit(w, dp, dn, err, errlen) < 0 || emit(w, w->sync, 16, err, errlen) < 0)
        goto done;
    zx_buf_reset(&w->datum);
    w->pending = 0;
    rc = 0;
done:
    zx_buf_free(&data);
    return rc;
}

static int put_meta(zx_buf *h, const char *key, const void *val, size_t len)
{
    return zx_avro_put_str(h, key) < 0 || zx_avro_put_bytes(h, val, len) < 0 ? -1 : 0;
}

int zx_avro_open(const char *schema_json, size_t schema_len, const zx_avro_opts *o,
                 zx_avro_writer **out, char *err, size_t errlen)
{
    static const zx_avro_opts defaults;
    if (!o)
        o = &defaults;
    *out = NULL;
    if (!o->sink && !o->out) {
        snprintf(err, errlen, "avro: no output (neither sink nor out)");
        return -1;
    }
    if (o->codec != ZX_AVRO_NULL && o->codec != ZX_AVRO_DEFLATE) {
        snprintf(err, errlen, "avro: unknown codec %d", (int)o->codec);
        return -1;
    }
    if (o->deflate_level < 0 || o->deflate_level > 9) {
        snprintf(err, errlen, "avro: deflate level %d (1..9)", o->deflate_level);
        return -1;
    }
    for (size_t i = 0; i < o->nmeta; i++)
        if (!o->meta[i].key || !strncmp(o->meta[i].key, "avro.", 5) ||
            (!o->meta[i].val && o->meta[i].len)) {
            snprintf(err, errlen, "avro: metadata key %s: reserved or invalid",
                     o->meta[i].key ? o->meta[i].key : "(null)");
            return -1;
        }
    zx_avro_writer *w = calloc(1, sizeof(*w));
    zx_buf h = {0};
    if (!w) {
        snprintf(err, errlen, "avro: out of memory");
        return -1;
    }
    w->codec = o->codec;
    w->level = o->deflate_level;
    w->block_bytes = o->block_bytes ? o->block_bytes : 64 * 1024;
    w->sink = o->sink;
    w->sink_ctx = o->sink_ctx;
    w->out = o->out;
    if (o->sync) {
        memcpy(w->sync, o->sync, 16);
    } else if (getrandom(w->sync, 16, 0) != 16) {
        snprintf(err, errlen, "avro: getrandom: %s", strerror(errno));
        goto failed;
    }
    const char *codec = w->codec == ZX_AVRO_DEFLATE ? "deflate" : "null";
    if (zx_buf_put(&h, "Obj\x01", 4) < 0 || zx_avro_put_block(&h, 2 + (int64_t)o->nmeta) < 0 ||
        put_meta(&h, "avro.schema", schema_json, schema_len) < 0 ||
        put_meta(&h, "avro.codec", codec, strlen(codec)) < 0)
        goto oom;
    for (size_t i = 0; i < o->nmeta; i++)
        if (put_meta(&h, o->meta[i].key, o->meta[i].val, o->meta[i].len) < 0)
            goto oom;
    if (zx_avro_put_block(&h, 0) < 0 || zx_buf_put(&h, w->sync, 16) < 0)
        goto oom;
    if (emit(w, h.p, h.len, err, errlen) < 0)
        goto failed;
    zx_buf_free(&h);
    *out = w;
    return 0;
oom:
    snprintf(err, errlen, "avro: out of memory");
failed:
    zx_buf_free(&h);
    zx_avro_free(w);
    return -1;
}

zx_buf *zx_avro_datum(zx_avro_writer *w)
{
    return &w->datum;
}

int zx_avro_end_record(zx_avro_writer *w, char *err, size_t errlen)
{
    if (w->failed) {
        snprintf(err, errlen, "avro: the writer failed before");
        return -1;
    }
    w->pending++;
    w->records++;
    if (w->datum.len >= w->block_bytes && write_block(w, err, errlen) < 0) {
        w->failed = 1;
        return -1;
    }
    return 0;
}

int zx_avro_finish(zx_avro_writer *w, uint64_t *bytes, char *err, size_t errlen)
{
    if (w->failed) {
        snprintf(err, errlen, "avro: the writer failed before");
        return -1;
    }
    w->failed = 1; /* only zx_avro_free from now on */
    if (write_block(w, err, errlen) < 0)
        return -1;
    if (bytes)
        *bytes = w->written;
    return 0;
}

uint64_t zx_avro_records(const zx_avro_writer *w)
{
    return w->records;
}

void zx_avro_free(zx_avro_writer *w)
{
    if (!w)
        return;
    zx_buf_free(&w->datum);
    zx_buf_free(&w->frame);
    free(w);
}
