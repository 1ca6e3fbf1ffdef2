/*
 * lake_side.c — the rows and key hashes zx keeps beside each data file it
 * writes into a lake table (lake_side.h).
 */
#include "workers/destinations/lake/lake_side.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/util.h"
#include "proto/frame.h"

#define SIDE_GET_MAX ((size_t)1 << 30)
#define SIDE_FLUSH (1u << 20)
#define SIDE_PLAIN_MAX ((size_t)256 << 20)   /* one frame, decompressed */

struct zx_side {
    zx_lake *l;
    zx_lake_out *rows, *keys;
    ZSTD_CCtx *z;
    zx_buf fb, zb;           /* a frame; compressed bytes to write */
};

static int side_name(const char *name, const char *ext, char out[1000])
{
    return snprintf(out, 1000, "%s/%s.%s", ZX_LAKE_SIDE_DIR, name, ext) < 1000 ? 0 : -1;
}

zx_side *zx_side_open(zx_lake *l, const char *name, int rows, char *err, size_t errlen)
{
    char rn[1000], kn[1000];
    if (side_name(name, "rows", rn) < 0 || side_name(name, "keys", kn) < 0) {
        zx_seterr(err, errlen, "%s: name too long", name);
        return NULL;
    }
    zx_side *s = calloc(1, sizeof(*s));
    if (!s) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    s->l = l;
    if (rows && !(s->z = ZSTD_createCCtx())) {
        zx_seterr(err, errlen, "out of memory");
        zx_side_abort(s);
        return NULL;
    }
    if (rows)
        ZSTD_CCtx_setParameter(s->z, ZSTD_c_compressionLevel, 1);
    if ((rows && !(s->rows = zx_lake_create(l, rn, err, errlen))) ||
        !(s->keys = zx_lake_create(l, kn, err, errlen))) {
        zx_side_abort(s);
        return NULL;
    }
    return s;
}

/* Compress in (n bytes; end: finish the stream) and write what comes out. */
static int squeeze(zx_side *s, const void *in, size_t n, int end, char *err, size_t errlen)
{
    ZSTD_inBuffer ib = {in, n, 0};
    for (;;) {
        if (zx_buf_reserve(&s->zb, ZSTD_CStreamOutSize()) < 0)
            return zx_seterr(err, errlen, "out of memory");
        ZSTD_outBuffer ob = {s->zb.p + s->zb.len, ZSTD_CStreamOutSize(), 0};
        size_t left = ZSTD_compressStream2(s->z, &ob, &ib, end ? ZSTD_e_end : ZSTD_e_continue);
        if (ZSTD_isError(left))
            return zx_seterr(err, errlen, "zstd: %s", ZSTD_getErrorName(left));
        s->zb.len += ob.pos;
        if (s->zb.len >= SIDE_FLUSH || (end && left == 0)) {
            if (zx_lake_write(s->rows, s->zb.p, s->zb.len, err, errlen) < 0)
                return -1;
            s->zb.len = 0;
        }
        if (end ? left == 0 : ib.pos == ib.size)
            return 0;
    }
}

int zx_side_add(zx_side *s, const zx_rowset *rs, const unsigned char *keys, char *err,
                size_t errlen)
{
    if (!rs->nrows)
        return 0;
    if (!s->rows)
        return zx_lake_write(s->keys, keys, (size_t)rs->nrows * ZX_LAKE_KEY_LEN, err, errlen);
    zx_frame_meta m = {0};
    m.kind = ZX_FRAME_ROWS;
    zx_buf_reset(&s->fb);
    unsigned char len[4] = {0};
    if (zx_buf_put(&s->fb, len, 4) < 0 || zx_frame_encode(&m, rs, &s->fb) < 0)
        return zx_seterr(err, errlen, "out of memory");
    size_t fl = s->fb.len - 4;
    for (int i = 0; i < 4; i++)
        s->fb.p[i] = (char)(fl >> (8 * i));
    if (squeeze(s, s->fb.p, s->fb.len, 0, err, errlen) < 0)
        return -1;
    return zx_lake_write(s->keys, keys, (size_t)rs->nrows * ZX_LAKE_KEY_LEN, err, errlen);
}

int zx_side_commit(zx_side *s, char *err, size_t errlen)
{
    int rc = s->rows ? squeeze(s, "", 0, 1, err, errlen) : 0;
    if (rc == 0 && s->rows) {
        rc = zx_lake_out_commit(s->rows, NULL, err, errlen);
        s->rows = NULL;
    }
    if (rc == 0) {
        rc = zx_lake_out_commit(s->keys, NULL, err, errlen);
        s->keys = NULL;
    }
    zx_side_abort(s);
    return rc;
}

void zx_side_abort(zx_side *s)
{
    if (!s)
        return;
    zx_lake_out_abort(s->rows);
    zx_lake_out_abort(s->keys);
    ZSTD_freeCCtx(s->z);
    zx_buf_free(&s->fb);
    zx_buf_free(&s->zb);
    free(s);
}

int zx_side_keys(zx_lake *l, const char *name, zx_buf *out, char *err, size_t errlen)
{
    char kn[1000];
    if (side_name(name, "keys", kn) < 0)
        return zx_seterr(err, errlen, "%s: name too long", name);
    int rc = zx_lake_get(l, kn, SIDE_GET_MAX, out, err, errlen);
    if (rc == 0 && out->len % ZX_LAKE_KEY_LEN)
        return zx_seterr(err, errlen, "%s: %s is damaged (%zu bytes, not a multiple of %d)",
                         zx_lake_root(l), kn, out->len, ZX_LAKE_KEY_LEN);
    return rc;
}

int zx_side_rows(zx_lake *l, const char *name, int (*each)(void *ctx, const zx_rowset *rs),
                 void *ctx, char *err, size_t errlen)
{
    char rn[1000];
    if (side_name(name, "rows", rn) < 0)
        return zx_seterr(err, errlen, "%s: name too long", name);
    zx_buf zin = {0};
    int rc = zx_lake_get(l, rn, SIDE_GET_MAX, &zin, err, errlen);
    if (rc == 0) {
        char e[512];
        rc = zx_side_decode(zin.p, zin.len, each, ctx, e, sizeof(e));
        if (rc < 0)
            zx_seterr(err, errlen, "%s: %s is damaged: %s", zx_lake_root(l), rn, e);
    }
    zx_buf_free(&zin);
    return rc;
}

int zx_side_decode(const void *z, size_t n, int (*each)(void *ctx, const zx_rowset *rs),
                   void *ctx, char *err, size_t errlen)
{
    zx_buf plain = {0};
    ZSTD_DCtx *d = ZSTD_createDCtx();
    zx_rowset rs;
    zx_rowset_init(&rs);
    ZSTD_inBuffer ib = {z, n, 0};
    size_t off = 0, last = 1;
    int rc = d ? 0 : zx_seterr(err, errlen, "out of memory");
    while (rc == 0) {
        /* decompress a step, then hand out every whole frame */
        if (ib.pos < ib.size || last != 0) {
            if (plain.len > SIDE_PLAIN_MAX) {
                rc = zx_seterr(err, errlen, "a frame longer than %zu bytes", SIDE_PLAIN_MAX);
                break;
            }
            if (zx_buf_reserve(&plain, ZSTD_DStreamOutSize()) < 0) {
                rc = zx_seterr(err, errlen, "out of memory");
                break;
            }
            ZSTD_outBuffer ob = {plain.p + plain.len, ZSTD_DStreamOutSize(), 0};
            last = ZSTD_decompressStream(d, &ob, &ib);
            if (ZSTD_isError(last)) {
                rc = zx_seterr(err, errlen, "zstd: %s", ZSTD_getErrorName(last));
                break;
            }
            plain.len += ob.pos;
            if (ob.pos == 0 && ib.pos == ib.size && last != 0) {
                rc = zx_seterr(err, errlen, "cut short");
                break;
            }
        }
        while (rc == 0 && plain.len - off >= 4) {
            const unsigned char *p = (const unsigned char *)plain.p + off;
            size_t fl = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 |
                        (size_t)p[3] << 24;
            if (plain.len - off - 4 < fl)
                break;
            zx_frame_meta m;
            char de[256];
            if (zx_frame_decode(p + 4, fl, &m, &rs, de, sizeof(de)) < 0)
                rc = zx_seterr(err, errlen, "%s", de);
            else if (each(ctx, &rs) < 0)
                rc = zx_seterr(err, errlen, "the rows were refused");
            off += 4 + fl;
        }
        if (off && rc == 0) {
            memmove(plain.p, plain.p + off, plain.len - off);
            plain.len -= off;
            off = 0;
        }
        if (ib.pos == ib.size && last == 0) {
            if (plain.len && rc == 0)
                rc = zx_seterr(err, errlen, "a frame cut short");
            break;
        }
    }
    ZSTD_freeDCtx(d);
    zx_rowset_free(&rs);
    zx_buf_free(&plain);
    return rc;
}

int zx_side_delete(zx_lake *l, const char *name, char *err, size_t errlen)
{
    char rn[1000], kn[1000];
    if (side_name(name, "rows", rn) < 0 || side_name(name, "keys", kn) < 0)
        return zx_seterr(err, errlen, "%s: name too long", name);
    if (zx_lake_delete(l, rn, err, errlen) < 0)
        return -1;
    return zx_lake_delete(l, kn, err, errlen);
}
