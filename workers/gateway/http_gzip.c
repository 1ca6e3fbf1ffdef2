/* http_gzip.c - streaming gzip inflation with a cap on the inflated size.
 *
 * Must never allocate more than the cap plus one output block, and never
 * trust the sizes written in the gzip stream itself.
 */
#include "http_gzip.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define GZ_BLOCK (64u * 1024u)

struct zx_http_gz {
    z_stream zs;
    uint64_t max_out;
    uint64_t total_out;
    int started;  /* some input was given */
    int ended;    /* the last member ended (Z_STREAM_END) and no byte since */
    int failed;
};

zx_http_gz *zx_http_gz_new(uint64_t max_out)
{
    zx_http_gz *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    if (inflateInit2(&g->zs, 16 + MAX_WBITS) != Z_OK) {
        free(g);
        return NULL;
    }
    g->max_out = max_out;
    return g;
}

void zx_http_gz_free(zx_http_gz *g)
{
    if (!g)
        return;
    inflateEnd(&g->zs);
    free(g);
}

zx_http_gz_result zx_http_gz_feed(zx_http_gz *g, const void *in, size_t len,
                                  zx_http_gz_out *out)
{
    const unsigned char *p = in;
    zx_http_gz_result res = ZX_HTTP_GZ_OK;
    int more_out = 0; /* the output block was filled: zlib may hold more */

    if (g->failed)
        return ZX_HTTP_GZ_CORRUPT;
    if (len > 0)
        g->started = 1;
    while (len > 0 || more_out) {
        /* Room left under the cap, plus one byte to notice going above it
         * (total_out <= max_out here: passing it ends the feed). */
        uint64_t room = g->max_out - g->total_out + 1;
        size_t want = (room == 0 || room > GZ_BLOCK) ? GZ_BLOCK : (size_t)room;
        uInt chunk_in = len > (size_t)UINT32_MAX ? UINT32_MAX : (uInt)len;
        size_t got;
        int zr;

        if (g->ended) {
            /* Another member follows: it must be gzip too. */
            if (inflateReset(&g->zs) != Z_OK) {
                res = ZX_HTTP_GZ_CORRUPT;
                goto done;
            }
            g->ended = 0;
        }
        if (out->cap - out->len < want && (res = out->grow(out, want)) != ZX_HTTP_GZ_OK)
            goto done;
        g->zs.next_in = (Bytef *)p;
        g->zs.avail_in = chunk_in;
        g->zs.next_out = out->p + out->len;
        g->zs.avail_out = (uInt)want;
        zr = inflate(&g->zs, Z_NO_FLUSH);
        more_out = g->zs.avail_out == 0 && zr == Z_OK;
        got = want - g->zs.avail_out;
        p += chunk_in - g->zs.avail_in;
        len -= chunk_in - g->zs.avail_in;
        g->total_out += got;
        out->len += got;
        if (g->total_out > g->max_out) {
            res = ZX_HTTP_GZ_TOO_BIG;
            goto done;
        }
        switch (zr) {
        case Z_OK:
            break;
        case Z_STREAM_END:
            g->ended = 1;
            break;
        case Z_BUF_ERROR:
            /* No progress possible: fine when all input is consumed (more
             * will come); with input left it cannot happen with room in the
             * output block. */
            more_out = 0;
            if (len == 0)
                break;
            res = ZX_HTTP_GZ_CORRUPT;
            goto done;
        case Z_MEM_ERROR:
            res = ZX_HTTP_GZ_NOMEM;
            goto done;
        default: /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
            res = ZX_HTTP_GZ_CORRUPT;
            goto done;
        }
    }
done:
    if (res != ZX_HTTP_GZ_OK)
        g->failed = 1;
    return res;
}

zx_http_gz_result zx_http_gz_finish(zx_http_gz *g)
{
    if (g->failed)
        return ZX_HTTP_GZ_CORRUPT;
    if (!g->started || g->ended)
        return ZX_HTTP_GZ_OK;
    return ZX_HTTP_GZ_CORRUPT;
}
