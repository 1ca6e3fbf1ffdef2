/*
 * keyseq.c — see keyseq.h.  The cycle's entries: an open-addressing table
 * keyed by (pipeline, name), name "ks:<table>:<hex>", "kh:<table>:<32 hex>"
 * or "kt:<table>"; stored in the order of their names.
 */
#include "workers/writer/keyseq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "proto/frame.h"

#define NAME_MAX_LEN 256
/* Hex digits of a key's encoding kept as they are; a longer encoding is
 * named by its hash. */
#define KEY_HEX_MAX 160

typedef struct entry {
    char *pipeline;          /* NULL: empty slot */
    char name[NAME_MAX_LEN];
    char *seq;
    size_t seqlen;
} entry;

struct zx_keyseq {
    entry *v;
    size_t cap, n;           /* cap: a power of two */
};

zx_keyseq *zx_keyseq_new(void)
{
    return calloc(1, sizeof(zx_keyseq));
}

size_t zx_keyseq_count(const zx_keyseq *ks)
{
    return ks->n;
}

void zx_keyseq_clear(zx_keyseq *ks)
{
    for (size_t i = 0; i < ks->cap; i++) {
        free(ks->v[i].pipeline);
        free(ks->v[i].seq);
        ks->v[i].pipeline = NULL;
        ks->v[i].seq = NULL;
    }
    ks->n = 0;
}

void zx_keyseq_free(zx_keyseq *ks)
{
    if (!ks)
        return;
    zx_keyseq_clear(ks);
    free(ks->v);
    free(ks);
}

static uint64_t slot_hash(const char *pipeline, const char *name)
{
    return XXH3_64bits_withSeed(name, strlen(name), XXH3_64bits(pipeline, strlen(pipeline)));
}

static entry *find(zx_keyseq *ks, const char *pipeline, const char *name)
{
    if (!ks->cap)
        return NULL;
    for (size_t i = slot_hash(pipeline, name) & (ks->cap - 1);; i = (i + 1) & (ks->cap - 1)) {
        entry *e = &ks->v[i];
        if (!e->pipeline)
            return e;
        if (!strcmp(e->pipeline, pipeline) && !strcmp(e->name, name))
            return e;
    }
}

static int grow(zx_keyseq *ks)
{
    size_t cap = ks->cap ? ks->cap * 2 : 1024;
    entry *old = ks->v;
    size_t oldcap = ks->cap;
    ks->v = calloc(cap, sizeof(*ks->v));
    if (!ks->v) {
        ks->v = old;
        return -1;
    }
    ks->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].pipeline)
            *find(ks, old[i].pipeline, old[i].name) = old[i];
    free(old);
    return 0;
}

/* Set (pipeline, name) to seq.  0 or -1. */
static int put(zx_keyseq *ks, const char *pipeline, const char *name, const char *seq,
               size_t len)
{
    if ((ks->n + 1) * 2 > ks->cap && grow(ks) < 0)
        return -1;
    entry *e = find(ks, pipeline, name);
    char *s = malloc(len + 1);
    if (!s)
        return -1;
    memcpy(s, seq, len);
    s[len] = '\0';
    if (!e->pipeline) {
        if (!(e->pipeline = strdup(pipeline))) {
            free(s);
            return -1;
        }
        snprintf(e->name, sizeof(e->name), "%s", name);
        ks->n++;
    }
    free(e->seq);
    e->seq = s;
    e->seqlen = len;
    return 0;
}

/* The newest known seq of (pipeline, name): the cycle's, else the store's.
 * *len 0: none. */
static const char *known(zx_keyseq *ks, zx_store_txn *rt, const char *pipeline,
                         const char *name, size_t *len)
{
    entry *e = find(ks, pipeline, name);
    if (e && e->pipeline) {
        *len = e->seqlen;
        return e->seq;
    }
    const void *v;
    if (rt && zx_store_state_get(rt, pipeline, name, &v, len) == 0)
        return v;
    *len = 0;
    return NULL;
}

/* a < b as bytes (a shorter prefix is less) */
static int older(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c < 0 || (c == 0 && al < bl);
}

static int64_t col_of(const zx_rowset *rs, const char *name)
{
    for (uint32_t c = 0; c < rs->ncols; c++)
        if (!strcmp(rs->cols[c].name, name))
            return c;
    return -1;
}

/* Append n bytes to the growable buffer (*b, *len, *cap).  0 or -1. */
static int app(unsigned char **b, size_t *len, size_t *cap, const void *p, size_t n)
{
    if (*len + n > *cap) {
        size_t c = (*len + n) * 2;
        unsigned char *nb = realloc(*b, c);
        if (!nb)
            return -1;
        *b = nb;
        *cap = c;
    }
    memcpy(*b + *len, p, n);
    *len += n;
    return 0;
}

/* n bytes of u, most significant first (so that hex keeps their order). */
static int app_be(unsigned char **b, size_t *len, size_t *cap, uint64_t u)
{
    unsigned char x[8];
    for (int i = 7; i >= 0; i--, u >>= 8)
        x[i] = (unsigned char)u;
    return app(b, len, cap, x, 8);
}

/* The name of row v's key, into out: "ks:<table>:<hex of the encoding of
 * the key values>", whose order follows the keys' (integers in numeric
 * order), so that the store's B-tree takes new keys of a growing id side
 * by side and a cycle dirties few pages; or, for an encoding longer than
 * KEY_HEX_MAX / 2 bytes, "kh:<table>:<hex of its 128-bit hash>".  The
 * encoding (type tag, then the value: 8 bytes big-endian for numbers, with
 * the sign bit flipped for integers; 4 bytes of length then the bytes for
 * text) is one-to-one, and is built in *buf (reused).  0 or -1. */
static int key_name(const char *table, const zx_value *v, const int64_t *kc, size_t nkeys,
                    unsigned char **buf, size_t *cap, char *out, size_t outlen)
{
    size_t len = 0;
    for (size_t k = 0; k < nkeys; k++) {
        const zx_value *x = &v[kc[k]];
        unsigned char tag = x->type;
        int rc = app(buf, &len, cap, &tag, 1);
        switch (x->type) {
        case ZX_T_INT:
        case ZX_T_TIMESTAMP:
            rc |= app_be(buf, &len, cap, (uint64_t)x->u.i ^ 0x8000000000000000ull);
            break;
        case ZX_T_REAL: {
            uint64_t u;
            memcpy(&u, &x->u.d, sizeof(u));
            rc |= app_be(buf, &len, cap, u);
            break;
        }
        case ZX_T_BOOL: {
            unsigned char b = (unsigned char)x->u.b;
            rc |= app(buf, &len, cap, &b, 1);
            break;
        }
        default: {
            uint32_t n = x->len;
            unsigned char nb[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                                   (unsigned char)(n >> 8), (unsigned char)n};
            rc |= app(buf, &len, cap, nb, sizeof(nb));
            if (n)
                rc |= app(buf, &len, cap, x->s, n);
        }
        }
        if (rc)
            return -1;
    }
    static const char hex[] = "0123456789abcdef";
    int o = snprintf(out, outlen, "%s:%.63s:", 2 * len <= KEY_HEX_MAX ? "ks" : "kh", table);
    if (o < 0 || (size_t)o + KEY_HEX_MAX + 1 > outlen)
        return -1;
    if (2 * len <= KEY_HEX_MAX) {
        for (size_t i = 0; i < len; i++) {
            out[o++] = hex[(*buf)[i] >> 4];
            out[o++] = hex[(*buf)[i] & 15];
        }
        out[o] = '\0';
    } else {
        XXH128_hash_t h = XXH3_128bits(*buf, len);
        snprintf(out + o, outlen - (size_t)o, "%016llx%016llx", (unsigned long long)h.high64,
                 (unsigned long long)h.low64);
    }
    return 0;
}

long zx_keyseq_filter(zx_keyseq *ks, zx_store_txn *rt, const char *pipeline, const char *table,
                      const zx_rowset *rs, const char *const *keys, size_t nkeys, uint8_t *skip)
{
    int64_t cseq = col_of(rs, ZX_CH_SEQ), cop = col_of(rs, ZX_CH_OP);
    memset(skip, 0, rs->nrows);
    if (cseq < 0 || cop < 0)
        return 0;
    int64_t kc[ZX_FRAME_MAX_KEY_COLUMNS];
    for (size_t k = 0; k < nkeys && k < ZX_FRAME_MAX_KEY_COLUMNS; k++)
        kc[k] = col_of(rs, keys[k]);
    zx_value *v = malloc((rs->ncols + 1) * sizeof(*v));
    if (!v)
        return -1;
    char tname[NAME_MAX_LEN];
    snprintf(tname, sizeof(tname), "kt:%.70s", table);
    long skipped = 0;
    unsigned char *buf = NULL;
    size_t bcap = 0;
    size_t tl;
    const char *t = known(ks, rt, pipeline, tname, &tl);   /* the last truncate */
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, v);
        const zx_value *s = &v[cseq], *op = &v[cop];
        if (s->type != ZX_T_TEXT || !s->len || op->type != ZX_T_TEXT)
            continue;
        if (t && older(s->s, s->len, t, tl)) {
            skip[r] = 1;
            skipped++;
            continue;
        }
        if (op->len == 8 && !memcmp(op->s, "truncate", 8)) {
            if (put(ks, pipeline, tname, s->s, s->len) < 0)
                goto nomem;
            t = known(ks, rt, pipeline, tname, &tl);
            continue;
        }
        int whole = nkeys > 0;
        for (size_t k = 0; k < nkeys; k++)
            whole &= kc[k] >= 0 && v[kc[k]].type != ZX_T_NULL;
        if (!whole)
            continue;   /* the writer rejects it */
        char name[NAME_MAX_LEN];
        if (key_name(table, v, kc, nkeys, &buf, &bcap, name, sizeof(name)) < 0)
            goto nomem;
        size_t kl;
        const char *k = known(ks, rt, pipeline, name, &kl);
        if (k && older(s->s, s->len, k, kl)) {
            skip[r] = 1;
            skipped++;
            continue;
        }
        if (put(ks, pipeline, name, s->s, s->len) < 0)
            goto nomem;
    }
    free(v);
    free(buf);
    return skipped;
nomem:
    free(v);
    free(buf);
    return -1;
}

static int entry_cmp(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    int c = strcmp(x->pipeline, y->pipeline);
    return c ? c : strcmp(x->name, y->name);
}

int zx_keyseq_store(zx_keyseq *ks, zx_store_txn *t)
{
    /* in the store's order: each put lands next to the last one */
    entry **order = ks->n ? malloc(ks->n * sizeof(*order)) : NULL;
    if (ks->n && !order)
        return ZX_STORE_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < ks->cap; i++)
        if (ks->v[i].pipeline)
            order[n++] = &ks->v[i];
    qsort(order, n, sizeof(*order), entry_cmp);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = zx_store_state_put(t, order[i]->pipeline, order[i]->name, order[i]->seq,
                                order[i]->seqlen);
    free(order);
    return rc;
}
