/*
 * parquet_encode.c — the buffered row group into pages: dictionary,
 * definition levels (RLE / bit-packed hybrid), PLAIN and RLE_DICTIONARY
 * values, compression, and the bytes to fd (parquet_int.h).
 *
 * Pages are cut at about page_bytes of encoded values, on a multiple of 8
 * rows (so that definition levels are whole bytes of the row group's
 * bitmap).  Must never hold more than one page beyond the row group's own
 * buffers.
 */
#include <errno.h>
#include <limits.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define XXH_INLINE_ALL     /* the hash of short strings, inlined */
#include <xxhash.h>

#include "formats/parquet_int.h"

#define OUT_CAP (1u << 20)

/* ---- output ------------------------------------------------------------ */

static int write_fd(zx_pq_writer *w, const uint8_t *p, size_t n, char *err, size_t errlen)
{
    if (w->o.sink)
        return w->o.sink(w->o.sink_ctx, p, n, err, errlen) < 0 ? -1 : 0;
    while (n) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            snprintf(err, errlen, "parquet: write failed: %s", strerror(errno));
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int pq_out_flush(zx_pq_writer *w, char *err, size_t errlen)
{
    if (w->out.len && write_fd(w, (const uint8_t *)w->out.p, w->out.len, err, errlen) < 0)
        return -1;
    w->out.len = 0;
    return 0;
}

int pq_emit(zx_pq_writer *w, const void *p, size_t n, char *err, size_t errlen)
{
    if (w->out.len + n > OUT_CAP && pq_out_flush(w, err, errlen) < 0)
        return -1;
    if (n >= OUT_CAP) {
        if (write_fd(w, p, n, err, errlen) < 0)
            return -1;
    } else {
        if (zx_buf_reserve(&w->out, n) < 0) {
            snprintf(err, errlen, "parquet: out of memory");
            return -1;
        }
        memcpy(w->out.p + w->out.len, p, n);
        w->out.len += n;
    }
    w->pos += n;
    return 0;
}

/* ---- dictionary -------------------------------------------------------- */

/* A slot holds an entry's number + 1 in its low 17 bits (0: empty; at
 * most PQ_DICT_MAX_ENTRIES entries) and the top 15 bits of the entry's
 * hash above them, so that most probes compare without touching the
 * entries, and the table stays small (cache misses are what the lookup
 * costs).  The slot is picked by the hash's low bits (at most 2^17 slots,
 * so they never overlap the tag). */
#define SLOT_ENTRY_BITS 17
#define SLOT_TAG(h) ((h) >> SLOT_ENTRY_BITS)

static int dict_rehash(pq_col *c, uint32_t nslots)
{
    uint32_t *s = calloc(nslots, sizeof(*s));
    if (!s)
        return -1;
    uint32_t mask = nslots - 1;
    for (uint32_t e = 0; e < c->ndent; e++) {
        uint32_t i = c->dent[e].hash & mask;
        while (s[i])
            i = (i + 1) & mask;
        s[i] = SLOT_TAG(c->dent[e].hash) << SLOT_ENTRY_BITS | (e + 1);
    }
    free(c->slots);
    c->slots = s;
    c->nslots = nslots;
    return 0;
}

/* a[0..n) == b[0..n), in 8-byte words (the last one overlapping): the
 * short values a dictionary holds compare without a call. */
static inline int bytes_equal(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            if (x[i] != y[i])
                return 0;
        return 1;
    }
    uint64_t u, v;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        if (u != v)
            return 0;
    }
    memcpy(&u, x + n - 8, 8);
    memcpy(&v, y + n - 8, 8);
    return u == v;
}

uint32_t pq_dict_hash(const uint8_t *s, uint32_t n)
{
    return (uint32_t)XXH3_64bits(s, n);
}

void pq_dict_prefetch(const pq_col *c, uint32_t h)
{
    if (c->nslots)
        __builtin_prefetch(&c->slots[h & (c->nslots - 1)]);
}

int pq_dict_add(pq_col *c, const uint8_t *s, uint32_t n, const uint32_t *hash, uint32_t *index)
{
    _Static_assert(PQ_DICT_MAX_ENTRIES < (1u << SLOT_ENTRY_BITS), "slot entry bits");
    if (!c->nslots && dict_rehash(c, 1024) < 0)
        return -1;
    uint32_t h = hash ? *hash : pq_dict_hash(s, n);
    uint32_t mask = c->nslots - 1, tag = SLOT_TAG(h);
    uint32_t i = h & mask;
    for (uint32_t sl; (sl = c->slots[i]) != 0; i = (i + 1) & mask) {
        if (SLOT_TAG(sl) != tag)
            continue;
        uint32_t e = (sl & ((1u << SLOT_ENTRY_BITS) - 1)) - 1;
        if (c->dent[e].len == n && bytes_equal(c->dict.p + c->dent[e].off, s, n)) {
            *index = e;
            return 0;
        }
    }
    if (c->ndent >= PQ_DICT_MAX_ENTRIES || c->dict.len + 4 + (size_t)n > PQ_DICT_MAX_BYTES)
        return 1;
    if (c->ndent == c->dent_cap) {
        uint32_t cap = c->dent_cap ? c->dent_cap * 2 : 1024;
        pq_dent *d = realloc(c->dent, cap * sizeof(*d));
        if (!d)
            return -1;
        c->dent = d;
        c->dent_cap = cap;
    }
    if (zx_buf_reserve(&c->dict, 4 + (size_t)n) < 0)
        return -1;
    memcpy(c->dict.p + c->dict.len, &n, 4);
    if (n)
        memcpy(c->dict.p + c->dict.len + 4, s, n);
    c->dent[c->ndent] = (pq_dent){(uint32_t)c->dict.len + 4, n, h};
    c->dict.len += 4 + (size_t)n;
    c->slots[i] = tag << SLOT_ENTRY_BITS | ++c->ndent;
    *index = c->ndent - 1;
    /* at most 3/4 full: 65,536 entries fit 2^17 slots */
    if ((uint64_t)c->ndent * 4 > (uint64_t)c->nslots * 3 && dict_rehash(c, c->nslots * 2) < 0)
        return -1;
    return 0;
}

static void dict_reset(pq_col *c)
{
    c->dict.len = 0;
    c->ndent = 0;
    if (c->slots)
        memset(c->slots, 0, c->nslots * sizeof(*c->slots));
}

/* Fold the dictionary's entries into the min/max. */
static int dict_stats(pq_col *c)
{
    for (uint32_t e = 0; e < c->ndent; e++)
        if (pq_stats_bytes(c, (const uint8_t *)c->dict.p + c->dent[e].off, c->dent[e].len) < 0)
            return -1;
    return 0;
}

int pq_dict_fallback(pq_col *c)
{
    size_t need = 0;
    for (uint32_t v = 0; v < c->nvals; v++)
        need += 4 + (size_t)c->dent[c->idx[v]].len;
    if (zx_buf_reserve(&c->vals, need) < 0 || dict_stats(c) < 0)
        return -1;
    for (uint32_t v = 0; v < c->nvals; v++) {
        const pq_dent *e = &c->dent[c->idx[v]];
        memcpy(c->vals.p + c->vals.len, c->dict.p + e->off - 4, 4 + (size_t)e->len);
        c->vals.len += 4 + (size_t)e->len;
    }
    c->bytes = c->vals.len;
    c->dict_on = 0;
    dict_reset(c);
    free(c->idx);                       /* unused until the next row group */
    c->idx = NULL;
    c->idx_cap = 0;
    return 0;
}

/* ---- statistics -------------------------------------------------------- */

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int r = memcmp(a, b, an < bn ? an : bn);
    if (r)
        return r;
    return an < bn ? -1 : an > bn;
}

static int buf_set(zx_buf *b, const uint8_t *s, size_t n)
{
    b->len = 0;
    if (zx_buf_reserve(b, n ? n : 1) < 0)
        return -1;
    if (n)
        memcpy(b->p, s, n);
    b->len = n;
    return 0;
}

int pq_stats_bytes(pq_col *c, const uint8_t *s, size_t n)
{
    if (!c->has) {
        c->has = 1;
        return buf_set(&c->bmin, s, n) < 0 || buf_set(&c->bmax, s, n) < 0 ? -1 : 0;
    }
    if (bytes_cmp(s, n, (const uint8_t *)c->bmin.p, c->bmin.len) < 0)
        return buf_set(&c->bmin, s, n);
    if (bytes_cmp(s, n, (const uint8_t *)c->bmax.p, c->bmax.len) > 0)
        return buf_set(&c->bmax, s, n);
    return 0;
}

static void put_le(uint8_t *out, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

static void put_be128(uint8_t *out, zx_i128 v, int n)
{
    unsigned __int128 u = (unsigned __int128)v;
    for (int i = 0; i < n; i++)
        out[n - 1 - i] = (uint8_t)(u >> (8 * i));
}

static void chunk_stats(const pq_col *c, pq_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->null_count = (int64_t)c->nulls;
    st->nan_count = c->phys == PQ_DOUBLE ? (int64_t)c->nans : -1;
    if (!c->has)
        return;
    switch (c->phys) {
    case PQ_BOOLEAN:
        st->min[0] = (uint8_t)c->imin;
        st->max[0] = (uint8_t)c->imax;
        st->minlen = st->maxlen = 1;
        st->legacy = 1;
        break;
    case PQ_INT32:
        put_le(st->min, (uint64_t)c->imin, 4);
        put_le(st->max, (uint64_t)c->imax, 4);
        st->minlen = st->maxlen = 4;
        st->legacy = 1;
        break;
    case PQ_INT64:
        put_le(st->min, (uint64_t)c->imin, 8);
        put_le(st->max, (uint64_t)c->imax, 8);
        st->minlen = st->maxlen = 8;
        st->legacy = 1;
        break;
    case PQ_DOUBLE: {
        if (c->nans)
            return;                     /* a NaN is present: no min/max */
        double mn = c->dmin == 0 ? -0.0 : c->dmin;
        double mx = c->dmax == 0 ? 0.0 : c->dmax;
        memcpy(st->min, &mn, 8);
        memcpy(st->max, &mx, 8);
        st->minlen = st->maxlen = 8;
        st->legacy = 1;
        break;
    }
    case PQ_FLBA:
        put_be128(st->min, c->qmin, c->flba_len);
        put_be128(st->max, c->qmax, c->flba_len);
        st->minlen = st->maxlen = (uint8_t)c->flba_len;
        break;
    default:                            /* BYTE_ARRAY */
        if (c->bmin.len > PQ_STAT_MAX || c->bmax.len > PQ_STAT_MAX)
            return;
        if (c->bmin.len)
            memcpy(st->min, c->bmin.p, c->bmin.len);
        if (c->bmax.len)
            memcpy(st->max, c->bmax.p, c->bmax.len);
        st->minlen = (uint8_t)c->bmin.len;
        st->maxlen = (uint8_t)c->bmax.len;
        break;
    }
    st->has_minmax = 1;
}

/* Keep s[0..n) cut to PQ_STAT_MAX + 1 bytes in dst if it orders before
 * (sign < 0) or after (sign > 0) what dst holds, or if first. */
static void fold_bytes(uint8_t *dst, uint8_t *dstlen, const uint8_t *s, size_t n, int sign,
                       int first)
{
    if (n > PQ_STAT_MAX + 1)
        n = PQ_STAT_MAX + 1;
    int r = first ? 0 : bytes_cmp(s, n, dst, *dstlen);
    if (first || (sign < 0 ? r < 0 : r > 0)) {
        if (n)
            memcpy(dst, s, n);
        *dstlen = (uint8_t)n;
    }
}

/* Fold the row group's statistics of c (its chunk m, nrows rows) into
 * the file's. */
static void file_stats_fold(pq_col *c, const pq_chunk_meta *m, uint32_t nrows)
{
    pq_filestats *f = &c->f;
    f->values += nrows;
    f->nulls += c->nulls;
    f->nans += c->nans;
    f->compressed += (uint64_t)m->total_compressed;
    f->uncompressed += (uint64_t)m->total_uncompressed;
    if (!c->has)
        return;
    int first = !f->has;
    f->has = 1;
    switch (c->phys) {
    case PQ_DOUBLE:
        if (first || c->dmin < f->dmin)
            f->dmin = c->dmin;
        if (first || c->dmax > f->dmax)
            f->dmax = c->dmax;
        break;
    case PQ_FLBA:
        if (first || c->qmin < f->qmin)
            f->qmin = c->qmin;
        if (first || c->qmax > f->qmax)
            f->qmax = c->qmax;
        put_be128(f->bmin, f->qmin, c->flba_len);
        put_be128(f->bmax, f->qmax, c->flba_len);
        f->bminlen = f->bmaxlen = (uint8_t)c->flba_len;
        break;
    case PQ_BYTE_ARRAY:
        fold_bytes(f->bmin, &f->bminlen, (const uint8_t *)c->bmin.p, c->bmin.len, -1, first);
        fold_bytes(f->bmax, &f->bmaxlen, (const uint8_t *)c->bmax.p, c->bmax.len, 1, first);
        break;
    default:                            /* BOOLEAN, INT32, INT64 */
        if (first || c->imin < f->imin)
            f->imin = c->imin;
        if (first || c->imax > f->imax)
            f->imax = c->imax;
        break;
    }
}

/* ---- pages ------------------------------------------------------------- */

static int bit_width(uint32_t max)
{
    int b = 1;
    while (b < 32 && (max >> b))
        b++;
    return b;
}

/* Compress `data` and write it with its page header. */
static int write_page(zx_pq_writer *w, int type, const uint8_t *data, size_t n, uint32_t nvalues,
                      int encoding, pq_chunk_meta *m, char *err, size_t errlen)
{
    if (n > INT32_MAX) {
        snprintf(err, errlen, "parquet: a page of %zu bytes (more than 2 GiB: values too large)",
                 n);
        return -1;
    }
    const uint8_t *payload = data;
    size_t plen = n;
    if (w->o.codec == ZX_PQ_ZSTD) {
        size_t bound = ZSTD_compressBound(n);
        w->cpage.len = 0;
        if (zx_buf_reserve(&w->cpage, bound) < 0)
            goto oom;
        size_t r = ZSTD_compress2(w->zc, w->cpage.p, bound, data, n);   /* params: zx_pq_open */
        if (ZSTD_isError(r)) {
            snprintf(err, errlen, "parquet: zstd: %s", ZSTD_getErrorName(r));
            return -1;
        }
        payload = (const uint8_t *)w->cpage.p;
        plen = r;
    } else if (w->o.codec == ZX_PQ_SNAPPY) {
        size_t bound = snappy_max_compressed_length(n);
        w->cpage.len = 0;
        if (zx_buf_reserve(&w->cpage, bound) < 0)
            goto oom;
        size_t outlen = bound;
        if (snappy_compress((const char *)data, n, (char *)w->cpage.p, &outlen) != SNAPPY_OK) {
            snprintf(err, errlen, "parquet: snappy compression failed");
            return -1;
        }
        payload = (const uint8_t *)w->cpage.p;
        plen = outlen;
    }
    if (plen > INT32_MAX) {
        snprintf(err, errlen, "parquet: a compressed page of more than 2 GiB");
        return -1;
    }
    pq_meta_page_header(&w->tc, type, (int32_t)n, (int32_t)plen, (int32_t)nvalues, encoding);
    if (w->tc.failed)
        goto oom;
    if (pq_emit(w, w->tc.buf, w->tc.len, err, errlen) < 0 ||
        pq_emit(w, payload, plen, err, errlen) < 0)
        return -1;
    m->total_uncompressed += (int64_t)(w->tc.len + n);
    m->total_compressed += (int64_t)(w->tc.len + plen);
    return 0;
oom:
    snprintf(err, errlen, "parquet: out of memory compressing a page");
    return -1;
}

static uint8_t *page_room(zx_pq_writer *w, size_t n)
{
    if (zx_buf_reserve(&w->page, n) < 0)
        return NULL;
    return (uint8_t *)w->page.p + w->page.len;
}

/* Definition levels of rows [r0, r0 + nrows) (r0 % 8 == 0), with their
 * 4-byte length: one RLE run when all agree, else one bit-packed run of
 * the bitmap's bytes. */
static int put_defs(zx_pq_writer *w, const pq_col *c, uint32_t r0, uint32_t nrows,
                    uint32_t present)
{
    size_t nbytes = ((size_t)nrows + 7) / 8;
    uint8_t *p = page_room(w, 4 + 10 + 1 + nbytes);
    if (!p)
        return -1;
    size_t k = 4;
    if (present == nrows || present == 0) {
        k += zx_tc_uvarint(p + k, (uint64_t)nrows << 1);
        p[k++] = present ? 1 : 0;
    } else {
        k += zx_tc_uvarint(p + k, ((uint64_t)nbytes << 1) | 1);
        memcpy(p + k, c->defs.p + r0 / 8, nbytes);
        if (nrows % 8)
            p[k + nbytes - 1] &= (uint8_t)((1u << (nrows % 8)) - 1);
        k += nbytes;
    }
    uint32_t len = (uint32_t)(k - 4);
    memcpy(p, &len, 4);
    w->page.len += k;
    return 0;
}

/* Dictionary indices idx[0..n) with bit width bw: the width byte, then
 * one bit-packed run (padded to a multiple of 8 values). */
static int put_indices(zx_pq_writer *w, const uint32_t *idx, uint32_t n, int bw)
{
    size_t groups = ((size_t)n + 7) / 8;
    uint8_t *p = page_room(w, 1 + 10 + groups * (size_t)bw + 8);
    if (!p)
        return -1;
    size_t k = 0;
    p[k++] = (uint8_t)bw;
    k += zx_tc_uvarint(p + k, ((uint64_t)groups << 1) | 1);
    size_t want = k + groups * (size_t)bw;   /* whole groups of 8 values */
    uint64_t acc = 0;
    int bits = 0;
    for (uint32_t i = 0; i < n; i++) {
        acc |= (uint64_t)idx[i] << bits;
        bits += bw;
        while (bits >= 8) {
            p[k++] = (uint8_t)acc;
            acc >>= 8;
            bits -= 8;
        }
    }
    if (bits)
        p[k++] = (uint8_t)acc;
    while (k < want)
        p[k++] = 0;
    w->page.len += k;
    return 0;
}

/* BOOLEAN values v0 .. v0 + n of the bitmap, as bits from bit 0. */
static int put_bools(zx_pq_writer *w, const pq_col *c, uint32_t v0, uint32_t n)
{
    size_t nbytes = ((size_t)n + 7) / 8;
    uint8_t *p = page_room(w, nbytes);
    if (!p)
        return -1;
    const uint8_t *src = (const uint8_t *)c->vals.p;
    size_t total = c->vals.len;
    unsigned sh = v0 % 8;
    size_t b0 = v0 / 8;
    for (size_t i = 0; i < nbytes; i++) {
        unsigned lo = src[b0 + i] >> sh;
        unsigned hi = (sh && b0 + i + 1 < total) ? (unsigned)src[b0 + i + 1] << (8 - sh) : 0;
        p[i] = (uint8_t)(lo | hi);
    }
    if (n % 8)
        p[nbytes - 1] &= (uint8_t)((1u << (n % 8)) - 1);
    w->page.len += nbytes;
    return 0;
}

/* Bits set in a byte (no libgcc call where the CPU's popcnt is not
 * assumed). */
static inline uint32_t pop8(unsigned d)
{
    d = d - ((d >> 1) & 0x55u);
    d = (d & 0x33u) + ((d >> 2) & 0x33u);
    return (d + (d >> 4)) & 0x0Fu;
}

static int write_chunk(zx_pq_writer *w, pq_col *c, pq_chunk_meta *m, char *err, size_t errlen)
{
    uint32_t nrows = w->rg_rows;
    m->file_offset = (int64_t)w->pos;
    m->dict_page_offset = -1;
    m->num_values = nrows;
    m->encodings = 1u << PQ_ENC_RLE;
    int use_dict = c->dict_on && c->ndent > 0;
    int bw = 0;
    if (use_dict) {
        m->dict_page_offset = (int64_t)w->pos;
        if (dict_stats(c) < 0)
            goto oom;
        if (write_page(w, PQ_PAGE_DICTIONARY, (const uint8_t *)c->dict.p, c->dict.len,
                       c->ndent, PQ_ENC_PLAIN, m, err, errlen) < 0)
            return -1;
        m->encodings |= 1u << PQ_ENC_PLAIN | 1u << PQ_ENC_RLE_DICTIONARY;
        bw = bit_width(c->ndent - 1);
    } else {
        m->encodings |= 1u << PQ_ENC_PLAIN;
    }
    chunk_stats(c, &m->st);
    m->data_page_offset = (int64_t)w->pos;

    size_t width = c->phys == PQ_INT32 ? 4 : c->phys == PQ_FLBA ? (size_t)c->flba_len : 8;
    uint32_t r = 0, v = 0;
    size_t voff = 0;
    while (r < nrows) {
        uint32_t r1 = r, v1 = v;
        size_t voff1 = voff;
        uint64_t est = 0;
        while (r1 < nrows && est < w->o.page_bytes) {
            uint32_t take = nrows - r1 < 8 ? nrows - r1 : 8;
            unsigned d = (uint8_t)c->defs.p[r1 / 8];   /* p is char: no sign */
            if (take < 8)
                d &= (1u << take) - 1;
            uint32_t np = pop8(d);
            if (use_dict) {
                est += ((uint64_t)np * (unsigned)bw + 7) / 8;
            } else if (c->phys == PQ_BOOLEAN) {
                est += 1;
            } else if (c->phys == PQ_BYTE_ARRAY) {
                for (uint32_t k = 0; k < np; k++) {
                    uint32_t l;
                    memcpy(&l, c->vals.p + voff1, 4);
                    voff1 += 4 + (size_t)l;
                    est += 4 + (uint64_t)l;
                }
            } else {
                voff1 += np * width;
                est += np * width;
            }
            v1 += np;
            r1 += take;
        }
        w->page.len = 0;
        if (put_defs(w, c, r, r1 - r, v1 - v) < 0)
            goto oom;
        int enc = PQ_ENC_PLAIN;
        if (use_dict) {
            enc = PQ_ENC_RLE_DICTIONARY;
            if (v1 > v && put_indices(w, c->idx + v, v1 - v, bw) < 0)
                goto oom;
            if (v1 == v) {              /* all NULL: still the width byte */
                uint8_t *p = page_room(w, 1);
                if (!p)
                    goto oom;
                p[0] = (uint8_t)bw;
                w->page.len++;
            }
        } else if (c->phys == PQ_BOOLEAN) {
            if (v1 > v && put_bools(w, c, v, v1 - v) < 0)
                goto oom;
        } else if (voff1 > voff && voff >= w->page.len) {
            /* PLAIN values in place: the levels go just before them, over
             * the previous page's values (written out already; nothing
             * reads them again), so the page is not copied */
            uint8_t *p = (uint8_t *)c->vals.p + voff - w->page.len;
            memcpy(p, w->page.p, w->page.len);
            if (write_page(w, PQ_PAGE_DATA, p, w->page.len + (voff1 - voff), r1 - r, enc, m,
                           err, errlen) < 0)
                return -1;
            goto next;
        } else if (voff1 > voff) {
            uint8_t *p = page_room(w, voff1 - voff);
            if (!p)
                goto oom;
            memcpy(p, c->vals.p + voff, voff1 - voff);
            w->page.len += voff1 - voff;
        }
        if (write_page(w, PQ_PAGE_DATA, (const uint8_t *)w->page.p, w->page.len, r1 - r, enc, m,
                       err, errlen) < 0)
            return -1;
    next:
        r = r1;
        v = v1;
        voff = voff1;
    }
    return 0;
oom:
    snprintf(err, errlen, "parquet: out of memory encoding column %s", c->dc.name);
    return -1;
}

static void col_reset(pq_col *c)
{
    c->defs.len = 0;
    c->vals.len = 0;
    c->nvals = 0;
    c->bytes = 0;
    c->plain = 0;
    dict_reset(c);
    c->dict_on = c->dict_ok;
    c->nulls = c->nans = 0;
    c->has = 0;
    c->bmin.len = c->bmax.len = 0;
}

int pq_flush_rowgroup(zx_pq_writer *w, char *err, size_t errlen)
{
    if (w->nrgs == w->rgs_cap) {
        uint32_t cap = w->rgs_cap ? w->rgs_cap * 2 : 16;
        pq_rowgroup *g = realloc(w->rgs, cap * sizeof(*g));
        if (!g)
            goto oom;
        w->rgs = g;
        w->rgs_cap = cap;
    }
    pq_rowgroup *rg = &w->rgs[w->nrgs];
    memset(rg, 0, sizeof(*rg));
    rg->chunks = calloc(w->ncols, sizeof(*rg->chunks));
    if (!rg->chunks)
        goto oom;
    rg->num_rows = w->rg_rows;
    rg->file_offset = (int64_t)w->pos;
    for (size_t i = 0; i < w->ncols; i++) {
        if (write_chunk(w, &w->cols[i], &rg->chunks[i], err, errlen) < 0) {
            free(rg->chunks);
            rg->chunks = NULL;
            return -1;
        }
        rg->total_byte_size += rg->chunks[i].total_uncompressed;
        rg->total_compressed += rg->chunks[i].total_compressed;
        file_stats_fold(&w->cols[i], &rg->chunks[i], w->rg_rows);
        col_reset(&w->cols[i]);
    }
    w->nrgs++;
    w->rg_rows = 0;
    w->rg_bytes = 0;
    return 0;
oom:
    snprintf(err, errlen, "parquet: out of memory writing a row group");
    return -1;
}
