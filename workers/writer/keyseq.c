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

/* One key's newest position in the cycle.  Its strings are in the
 * arena: "pipeline\0name\0" at key (the name at key + plen + 1), the seq
 * (seqlen bytes) at seq. */
typedef struct entry {
    uint64_t h;              /* 0: empty slot */
    uint32_t key, seq, seqlen;
    uint16_t plen;
    uint8_t del;             /* the key's last change deleted it */
} entry;

/* Where the sweep of one pipeline's tombstones resumes. */
typedef struct sweep {
    char pipeline[64];
    char from[NAME_MAX_LEN];
} sweep;

/* A table's high-water mark (keyseq.h). */
typedef struct mark {
    char *pipeline, *table;
    char *seq;               /* NULL: nothing applied yet */
    size_t len;
    int none;                /* no mark: every change is looked up */
    char *dmax;              /* the cycle's newest tombstone or truncate */
    size_t dlen;
} mark;

struct zx_keyseq {
    entry *v;
    size_t cap, n;           /* cap: a power of two */
    size_t nstore;           /* entries for the store: tombstones, truncates */
    char *arena;
    size_t alen, acap;
    sweep *sw;
    size_t nsw;
    mark *mk;
    size_t nmk;
};

zx_keyseq *zx_keyseq_new(void)
{
    return calloc(1, sizeof(zx_keyseq));
}

size_t zx_keyseq_count(const zx_keyseq *ks)
{
    return ks->nstore;
}

static const char *e_pipeline(const zx_keyseq *ks, const entry *e)
{
    return ks->arena + e->key;
}

static const char *e_name(const zx_keyseq *ks, const entry *e)
{
    return ks->arena + e->key + e->plen + 1;
}

/* 1 when e goes to the store: a tombstone, or a truncate ("kt:"). */
static int stored(const zx_keyseq *ks, const entry *e)
{
    return e->del || e_name(ks, e)[1] == 't';
}

void zx_keyseq_clear(zx_keyseq *ks)
{
    if (ks->cap > 4096 && ks->n * 8 < ks->cap) {
        free(ks->v);          /* a big cycle's table goes: the next grows again */
        ks->v = NULL;
        ks->cap = 0;
    } else if (ks->n) {
        memset(ks->v, 0, ks->cap * sizeof(*ks->v));
    }
    if (ks->acap > (1u << 20) && ks->alen * 8 < ks->acap) {
        free(ks->arena);
        ks->arena = NULL;
        ks->acap = 0;
    }
    ks->alen = 0;
    ks->n = 0;
    ks->nstore = 0;
    for (size_t i = 0; i < ks->nmk; i++) {
        free(ks->mk[i].dmax);
        ks->mk[i].dmax = NULL;
        ks->mk[i].dlen = 0;
    }
}

void zx_keyseq_free(zx_keyseq *ks)
{
    if (!ks)
        return;
    free(ks->v);
    free(ks->arena);
    free(ks->sw);
    for (size_t i = 0; i < ks->nmk; i++) {
        free(ks->mk[i].pipeline);
        free(ks->mk[i].table);
        free(ks->mk[i].seq);
        free(ks->mk[i].dmax);
    }
    free(ks->mk);
    free(ks);
}

static uint64_t slot_hash(const char *pipeline, const char *name)
{
    uint64_t h = XXH3_64bits_withSeed(name, strlen(name), XXH3_64bits(pipeline, strlen(pipeline)));
    return h ? h : 1;
}

static entry *find(zx_keyseq *ks, const char *pipeline, const char *name, uint64_t h)
{
    if (!ks->cap)
        return NULL;
    for (size_t i = h & (ks->cap - 1);; i = (i + 1) & (ks->cap - 1)) {
        entry *e = &ks->v[i];
        if (!e->h)
            return e;
        if (e->h == h && !strcmp(e_pipeline(ks, e), pipeline) && !strcmp(e_name(ks, e), name))
            return e;
    }
}

static int grow(zx_keyseq *ks)
{
    size_t cap = ks->cap ? ks->cap * 2 : 1024;
    entry *old = ks->v;
    size_t oldcap = ks->cap;
    entry *v = calloc(cap, sizeof(*v));
    if (!v)
        return -1;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].h)
            continue;
        size_t j = old[i].h & (cap - 1);
        while (v[j].h)
            j = (j + 1) & (cap - 1);
        v[j] = old[i];
    }
    free(old);
    ks->v = v;
    ks->cap = cap;
    return 0;
}

/* n bytes at p into the arena (a NUL after them when nul): the offset,
 * or -1 out of memory. */
static int64_t stash(zx_keyseq *ks, const char *p, size_t n, int nul)
{
    size_t need = ks->alen + n + (size_t)(nul != 0);
    if (need > UINT32_MAX)
        return -1;
    if (need > ks->acap) {
        size_t c = ks->acap ? ks->acap : 65536;
        while (c < need)
            c *= 2;
        char *a = realloc(ks->arena, c);
        if (!a)
            return -1;
        ks->arena = a;
        ks->acap = c;
    }
    int64_t at = (int64_t)ks->alen;
    memcpy(ks->arena + ks->alen, p, n);
    ks->alen += n;
    if (nul)
        ks->arena[ks->alen++] = '\0';
    return at;
}

/* Set (pipeline, name) to seq.  0 or -1. */
static int put(zx_keyseq *ks, const char *pipeline, const char *name, const char *seq,
               size_t len, int del)
{
    if ((ks->n + 1) * 2 > ks->cap && grow(ks) < 0)
        return -1;
    uint64_t h = slot_hash(pipeline, name);
    entry *e = find(ks, pipeline, name, h);
    int64_t sat = stash(ks, seq, len, 0);
    if (sat < 0)
        return -1;
    if (!e->h) {
        size_t pl = strlen(pipeline);
        int64_t kat = pl < 65535 ? stash(ks, pipeline, pl, 1) : -1;
        if (kat < 0 || stash(ks, name, strlen(name), 1) < 0)
            return -1;
        e->h = h;
        e->key = (uint32_t)kat;
        e->plen = (uint16_t)pl;
        ks->n++;
    } else if (stored(ks, e)) {
        ks->nstore--;
    }
    e->seq = (uint32_t)sat;
    e->seqlen = (uint32_t)len;
    e->del = (uint8_t)(del != 0);
    ks->nstore += (size_t)stored(ks, e);
    return 0;
}

/* a < b as bytes (a shorter prefix is less) */
static int older(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c < 0 || (c == 0 && al < bl);
}

static mark *mark_of(const zx_keyseq *ks, const char *pipeline, const char *table)
{
    for (size_t i = 0; i < ks->nmk; i++)
        if (!strcmp(ks->mk[i].table, table) && !strcmp(ks->mk[i].pipeline, pipeline))
            return &ks->mk[i];
    return NULL;
}

/* *p (*pl bytes, malloc'ed or NULL) becomes s when s is newer.  0 or -1. */
static int raise_to(char **p, size_t *pl, const char *s, size_t len)
{
    if (*p && !older(*p, *pl, s, len))
        return 0;
    char *n = realloc(*p, len ? len : 1);
    if (!n)
        return -1;
    memcpy(n, s, len);
    *p = n;
    *pl = len;
    return 0;
}

int zx_keyseq_hwm_known(const zx_keyseq *ks, const char *pipeline, const char *table)
{
    return mark_of(ks, pipeline, table) != NULL;
}

int zx_keyseq_hwm_init(zx_keyseq *ks, zx_store_txn *rt, const char *pipeline,
                       const char *table, const char *rows_max, size_t len)
{
    mark *m = mark_of(ks, pipeline, table);
    if (!m) {
        mark *n = realloc(ks->mk, (ks->nmk + 1) * sizeof(*n));
        if (!n)
            return -1;
        ks->mk = n;
        m = &ks->mk[ks->nmk];
        memset(m, 0, sizeof(*m));
        if (!(m->pipeline = strdup(pipeline)) || !(m->table = strdup(table))) {
            free(m->pipeline);
            free(m->table);
            return -1;
        }
        ks->nmk++;
    }
    m->none = 0;
    if (len && raise_to(&m->seq, &m->len, rows_max, len) < 0)
        return -1;
    if (!rt) {
        m->none = 1;   /* the store unknown: no mark */
        return 0;
    }
    char name[NAME_MAX_LEN];
    const char *kinds[2] = { "kw", "kt" };
    for (int i = 0; i < 2; i++) {
        const void *v;
        size_t vl;
        snprintf(name, sizeof(name), "%s:%.70s", kinds[i], table);
        if (zx_store_state_get(rt, pipeline, name, &v, &vl) == 0 && vl &&
            raise_to(&m->seq, &m->len, v, vl) < 0)
            return -1;
    }
    /* records of earlier versions: positions no mark covers */
    const char *old[2] = { "ks", "kh" };
    for (int i = 0; i < 2 && !m->none; i++) {
        snprintf(name, sizeof(name), "%s:%.70s:", old[i], table);
        m->none = zx_store_state_any(rt, pipeline, name) != ZX_STORE_NOTFOUND;
    }
    return 0;
}

int zx_keyseq_needs_rows(const zx_keyseq *ks, const char *pipeline, const char *table,
                         const zx_rowset *rs)
{
    const mark *m = mark_of(ks, pipeline, table);
    if (!m || m->none)
        return 1;
    if (!m->seq)
        return 0;   /* nothing applied yet */
    int64_t cseq = zx_rowset_find_column(rs, ZX_CH_SEQ, strlen(ZX_CH_SEQ));
    for (uint64_t i = 0; cseq >= 0 && i < rs->ncells; i++) {
        const zx_cell *c = &rs->cells[i];
        if (c->col == (uint32_t)cseq && c->v.type == ZX_T_TEXT && c->v.len &&
            older(c->v.s, c->v.len, m->seq, m->len))
            return 1;
    }
    return 0;
}

/* A tombstone's value: the seq, a NUL, the time it was written (8 bytes,
 * little-endian µs since the epoch).  The seq's length, or -1 when v is
 * not one. */
static long tomb_seq(const void *v, size_t len, int64_t *at)
{
    const unsigned char *p = v;
    if (len < 9 || p[len - 9] != '\0')
        return -1;
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--)
        u = (u << 8) | p[len - 8 + i];
    if (at)
        *at = (int64_t)u;
    return (long)(len - 9);
}

/* The newest known seq of (pipeline, name): the cycle's, else the one
 * the workspace's row holds (have, may be NULL), else the store's: the
 * key's tombstone ("d" and its name), else its record of an older
 * version (keyseq.h).  *len 0: none. */
static const char *known(zx_keyseq *ks, zx_store_txn *rt, const char *pipeline,
                         const char *name, const zx_keyseq_have *have, size_t *len)
{
    entry *e = find(ks, pipeline, name, slot_hash(pipeline, name));
    if (e && e->h) {
        *len = e->seqlen;
        return ks->arena + e->seq;
    }
    if (!rt && !have) {
        *len = 0;
        return NULL;     /* the cycle's alone (a change at or past the mark) */
    }
    if (have && have->len) {
        *len = have->len;
        return have->s;
    }
    const void *v;
    if (rt && name[0] == 'k' && name[1] != 't') {
        char dn[NAME_MAX_LEN + 1];
        snprintf(dn, sizeof(dn), "d%s", name);
        long l;
        if (zx_store_state_get(rt, pipeline, dn, &v, len) == 0 &&
            (l = tomb_seq(v, *len, NULL)) > 0) {
            *len = (size_t)l;
            return v;
        }
    }
    if (rt && zx_store_state_get(rt, pipeline, name, &v, len) == 0)
        return v;
    *len = 0;
    return NULL;
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
                      const zx_rowset *rs, const char *const *keys, size_t nkeys,
                      const zx_keyseq_have *have, uint8_t *skip)
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
    /* the last truncate, copied: a put may move the cycle's arena */
    char *t = NULL, *hwm0 = NULL;
    size_t hl0 = 0;
    const char *t0 = known(ks, rt, pipeline, tname, NULL, &tl);
    if (t0 && !(t = malloc(tl ? tl : 1)))
        goto nomem;
    if (t0)
        memcpy(t, t0, tl);
    /* the mark as the frame starts: a change at or past it is newer than
     * anything applied before the frame, so only the cycle's entries can
     * be newer than it (no row, tombstone or record looked up) */
    mark *m = mark_of(ks, pipeline, table);
    int fast = m && !m->none;
    if (fast && m->seq) {
        if (!(hwm0 = malloc(m->len ? m->len : 1)))
            goto nomem;
        memcpy(hwm0, m->seq, m->len);
        hl0 = m->len;
    }
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
            char *nt = realloc(t, s->len);
            if (!nt || put(ks, pipeline, tname, s->s, s->len, 0) < 0) {
                t = nt ? nt : t;
                goto nomem;
            }
            t = nt;
            memcpy(t, s->s, s->len);
            tl = s->len;
            if (m && (raise_to(&m->seq, &m->len, s->s, s->len) < 0 ||
                      raise_to(&m->dmax, &m->dlen, s->s, s->len) < 0))
                goto nomem;
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
        int below = !fast || (hwm0 && older(s->s, s->len, hwm0, hl0));
        const char *k = below ? known(ks, rt, pipeline, name, have ? &have[r] : NULL, &kl)
                              : known(ks, NULL, pipeline, name, NULL, &kl);
        if (k && older(s->s, s->len, k, kl)) {
            skip[r] = 1;
            skipped++;
            continue;
        }
        int del = op->len == 6 && !memcmp(op->s, "delete", 6);
        if (put(ks, pipeline, name, s->s, s->len, del) < 0)
            goto nomem;
        if (m && (raise_to(&m->seq, &m->len, s->s, s->len) < 0 ||
                  (del && raise_to(&m->dmax, &m->dlen, s->s, s->len) < 0)))
            goto nomem;
    }
    free(v);
    free(buf);
    free(t);
    free(hwm0);
    return skipped;
nomem:
    free(v);
    free(buf);
    free(t);
    free(hwm0);
    return -1;
}

static const zx_keyseq *sort_ks;   /* entry_cmp's arena (one sort at a time) */

static int entry_cmp(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    int c = strcmp(e_pipeline(sort_ks, x), e_pipeline(sort_ks, y));
    return c ? c : strcmp(e_name(sort_ks, x), e_name(sort_ks, y));
}

int zx_keyseq_store(zx_keyseq *ks, zx_store_txn *t, int64_t now_us)
{
    /* in the store's order: each put lands next to the last one */
    entry **order = ks->nstore ? malloc(ks->nstore * sizeof(*order)) : NULL;
    if (ks->nstore && !order)
        return ZX_STORE_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < ks->cap && n < ks->nstore; i++)
        if (ks->v[i].h && stored(ks, &ks->v[i]))
            order[n++] = &ks->v[i];
    sort_ks = ks;
    if (n)
        qsort(order, n, sizeof(*order), entry_cmp);
    int rc = 0;
    unsigned char *val = NULL;
    size_t vcap = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const entry *e = order[i];
        const char *pipeline = e_pipeline(ks, e), *name = e_name(ks, e);
        const char *seq = ks->arena + e->seq;
        if (!e->del) {                    /* a truncate: "kt:" */
            rc = zx_store_state_put(t, pipeline, name, seq, e->seqlen);
            continue;
        }
        if (e->seqlen + 9 > vcap) {
            unsigned char *nv = realloc(val, e->seqlen + 9);
            if (!nv) {
                rc = ZX_STORE_NOMEM;
                break;
            }
            val = nv;
            vcap = e->seqlen + 9;
        }
        memcpy(val, seq, e->seqlen);
        val[e->seqlen] = '\0';
        for (int b = 0; b < 8; b++)
            val[e->seqlen + 1 + b] = (unsigned char)((uint64_t)now_us >> (8 * b));
        char dn[NAME_MAX_LEN + 1];
        snprintf(dn, sizeof(dn), "d%s", name);
        rc = zx_store_state_put(t, pipeline, dn, val, e->seqlen + 9);
    }
    free(val);
    free(order);
    /* each table's newest tombstone or truncate ever stored: its mark's
     * part that no row holds (zx_keyseq_hwm_init) */
    for (size_t i = 0; i < ks->nmk && !rc; i++) {
        mark *m = &ks->mk[i];
        if (!m->dmax)
            continue;
        char name[NAME_MAX_LEN];
        snprintf(name, sizeof(name), "kw:%.70s", m->table);
        const void *v;
        size_t vl;
        int g = zx_store_state_get(t, m->pipeline, name, &v, &vl);
        if (g == 0 && !older(v, vl, m->dmax, m->dlen))
            continue;
        if (g != 0 && g != ZX_STORE_NOTFOUND)
            return g;
        rc = zx_store_state_put(t, m->pipeline, name, m->dmax, m->dlen);
    }
    return rc;
}

static int expired(const void *v, size_t len, void *ctx)
{
    int64_t at;
    return tomb_seq(v, len, &at) >= 0 && at < *(const int64_t *)ctx;
}

int zx_keyseq_prune(zx_keyseq *ks, zx_store_txn *t, const char *pipeline, int64_t before_us,
                    size_t max_scan, uint64_t *removed)
{
    sweep *sw = NULL;
    for (size_t i = 0; i < ks->nsw && !sw; i++)
        if (!strcmp(ks->sw[i].pipeline, pipeline))
            sw = &ks->sw[i];
    if (!sw) {
        sweep *n = realloc(ks->sw, (ks->nsw + 1) * sizeof(*n));
        if (!n)
            return ZX_STORE_NOMEM;
        ks->sw = n;
        sw = &ks->sw[ks->nsw++];
        snprintf(sw->pipeline, sizeof(sw->pipeline), "%s", pipeline);
        sw->from[0] = '\0';
    }
    char next[NAME_MAX_LEN];
    int rc = zx_store_state_sweep(t, pipeline, "dk", sw->from, max_scan, expired, &before_us,
                                  next, sizeof(next), removed);
    if (rc == 0)
        memcpy(sw->from, next, sizeof(next));
    return rc;
}
