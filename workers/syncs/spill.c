/*
 * spill.c — temporary record files and the external key sorter (spill.h).
 */
#include "workers/syncs/spill.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_RECORD (1u << 30)

#define SPILL_BUF (1u << 20)

int zx_spill_open(zx_spill *s, const char *dir, zx_spill_budget *budget, char *err,
                  size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    s->budget = budget;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot make the folder %s for temporary files: %s", dir,
                 strerror(errno));
        return -1;
    }
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/spill.XXXXXX", dir);
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot make a temporary file in %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!(s->buf = malloc(SPILL_BUF))) {
        close(fd);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->fd = fd;
    return 0;
}

/* Write n bytes at p to the file.  0 or -1 (errno). */
static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int flush_buf(zx_spill *s)
{
    if (s->blen && write_all(s->fd, s->buf, s->blen) < 0)
        return -1;
    s->blen = 0;
    return 0;
}

int zx_spill_put(zx_spill *s, const void *a, size_t alen, const void *b, size_t blen)
{
    if (alen + blen > MAX_RECORD || s->reading || !s->buf) {
        errno = EINVAL;
        return -1;
    }
    uint32_t n = (uint32_t)(alen + blen);
    zx_spill_budget *bud = s->budget;
    if (bud && bud->limit &&
        (bud->used > bud->limit || 4 + (uint64_t)n > bud->limit - bud->used)) {
        bud->exceeded = 1;
        errno = EFBIG;
        return -1;
    }
    /* a record per key: copied into the buffer (no stdio: one memcpy of
     * each part, no lock, no call per part) */
    if (SPILL_BUF - s->blen < 4 + (size_t)n && flush_buf(s) < 0)
        return -1;
    if (4 + (size_t)n <= SPILL_BUF) {
        char *p = s->buf + s->blen;
        memcpy(p, &n, 4);
        if (alen)
            memcpy(p + 4, a, alen);
        if (blen)
            memcpy(p + 4 + alen, b, blen);
        s->blen += 4 + (size_t)n;
    } else if (write_all(s->fd, (const char *)&n, 4) < 0 ||
               (alen && write_all(s->fd, a, alen) < 0) ||
               (blen && write_all(s->fd, b, blen) < 0)) {
        return -1;
    }
    s->records++;
    s->bytes += 4 + n;
    if (bud)
        bud->used += 4 + (uint64_t)n;
    return 0;
}

int zx_spill_rewind(zx_spill *s)
{
    if (!s->buf || (!s->reading && flush_buf(s) < 0))
        return -1;
    s->reading = 1;
    s->blen = s->bpos = 0;
    s->eof = 0;
    if (lseek(s->fd, 0, SEEK_SET) < 0)
        return -1;
    return 0;
}

/* More bytes into the read buffer (what is left unread moved to its
 * start).  1 some read, 0 the end of the file, -1 an error. */
static int fill_buf(zx_spill *s)
{
    if (s->eof)
        return 0;
    if (s->bpos) {
        memmove(s->buf, s->buf + s->bpos, s->blen - s->bpos);
        s->blen -= s->bpos;
        s->bpos = 0;
    }
    for (;;) {
        ssize_t r = read(s->fd, s->buf + s->blen, SPILL_BUF - s->blen);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0) {
            s->eof = 1;
            return 0;
        }
        s->blen += (size_t)r;
        return 1;
    }
}

int zx_spill_get(zx_spill *s, zx_buf *out)
{
    uint32_t n;
    out->len = 0;
    if (!s->buf || !s->reading)
        return 0;
    while (s->blen - s->bpos < 4) {
        int f = fill_buf(s);
        if (f < 0)
            return -1;
        if (f == 0)
            return s->blen == s->bpos ? 0 : -1;   /* a part of a length: truncated */
    }
    memcpy(&n, s->buf + s->bpos, 4);
    s->bpos += 4;
    if (n > MAX_RECORD)
        return -1;
    if (zx_buf_reserve(out, n) < 0)
        return -1;
    size_t have = s->blen - s->bpos;
    if (have >= n) {
        memcpy(out->p, s->buf + s->bpos, n);
        s->bpos += n;
        out->len = n;
        return 1;
    }
    /* a record past the buffer: what it holds, then the rest read
     * straight into out */
    memcpy(out->p, s->buf + s->bpos, have);
    s->bpos = s->blen = 0;
    size_t got = have;
    while (got < n) {
        ssize_t r = read(s->fd, out->p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;   /* truncated */
        got += (size_t)r;
    }
    out->len = n;
    return 1;
}

void zx_spill_close(zx_spill *s)
{
    if (s->buf)
        close(s->fd);
    free(s->buf);
    memset(s, 0, sizeof(*s));
    s->fd = -1;
}

/* ---- the key sorter ------------------------------------------------------ */

typedef struct kent {
    uint64_t hi;              /* the first 8 bytes of kh, big-endian: most
                                 comparisons end there */
    unsigned char kh[ZX_SYNC_KEYHASH_LEN];
    uint32_t off, len;        /* the JSON in the arena */
} kent;

static uint64_t be64_of(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

typedef struct krun {
    zx_spill sp;
    zx_buf rec;              /* its current record */
    int live;                 /* rec holds a key not yet handed out */
} krun;

struct zx_keysort {
    char dir[4096];
    size_t mem;
    zx_spill_budget *budget;
    kent *ents;
    size_t nents, cap;
    zx_buf arena;
    krun runs[ZX_KEYSORT_MAX_RUNS];
    size_t nruns;
    uint64_t count;
    size_t mem_pos;           /* reading the in-memory run (no spill) */
    int finished;
    int last_run;             /* index of the run handed out last, -1 */
};

zx_keysort *zx_keysort_new(const char *dir, size_t mem_bytes, zx_spill_budget *budget)
{
    zx_keysort *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->budget = budget;
    snprintf(k->dir, sizeof(k->dir), "%s", dir);
    k->mem = mem_bytes < (1u << 20) ? (1u << 20) : mem_bytes;
    k->last_run = -1;
    return k;
}

static const zx_buf *g_arena;   /* qsort has no context argument */

static int kent_cmp(const void *a, const void *b)
{
    const kent *x = a, *y = b;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    int r = memcmp(x->kh + 8, y->kh + 8, ZX_SYNC_KEYHASH_LEN - 8);
    if (r)
        return r;
    /* equal hashes: by the JSON, so that a duplicate is found whatever
     * the order */
    size_t n = x->len < y->len ? x->len : y->len;
    r = memcmp(g_arena->p + x->off, g_arena->p + y->off, n);
    return r ? r : (x->len > y->len) - (x->len < y->len);
}

/* Sort ents[0..n-1] with kent_cmp over the arena a: insertion sort for a
 * few, qsort for more (keys that repeat). */
static void sort_few(kent *e, size_t n, const zx_buf *a)
{
    g_arena = a;
    if (n > 32) {
        qsort(e, n, sizeof(kent), kent_cmp);
    } else {
        for (size_t i = 1; i < n; i++) {
            kent x = e[i];
            size_t j = i;
            for (; j > 0 && kent_cmp(&e[j - 1], &x) > 0; j--)
                e[j] = e[j - 1];
            e[j] = x;
        }
    }
    g_arena = NULL;
}

#define TOP_BITS 8             /* the first pass: 256 buckets */
#define SUB_BITS 10            /* then each bucket by the next 10 bits */

/* Sort the entries of one first-pass bucket e[0..n-1] (kent_cmp's order):
 * scattered into tmp by the 10 bits after the first 8, each group of
 * those (a few keys) sorted alone, copied back.  The bucket and tmp are a
 * few hundred KiB: this runs in the CPU's cache. */
static void sort_bucket(kent *e, size_t n, kent *tmp, const zx_buf *a)
{
    uint32_t pos[(size_t)1 << SUB_BITS];
    size_t ns = (size_t)1 << SUB_BITS;
    if (n < 64) {
        sort_few(e, n, a);
        return;
    }
    memset(pos, 0, sizeof(pos));
    for (size_t i = 0; i < n; i++)
        pos[(e[i].hi >> (64 - TOP_BITS - SUB_BITS)) & (ns - 1)]++;
    uint32_t at = 0;
    for (size_t s = 0; s < ns; s++) {
        uint32_t c = pos[s];
        pos[s] = at;
        at += c;
    }
    for (size_t i = 0; i < n; i++)
        tmp[pos[(e[i].hi >> (64 - TOP_BITS - SUB_BITS)) & (ns - 1)]++] = e[i];
    /* pos[s] is now where group s ends (and s + 1 starts) */
    for (size_t s = 0, start = 0; s < ns; s++) {
        if (pos[s] - start > 1)
            sort_few(tmp + start, pos[s] - start, a);
        start = pos[s];
    }
    memcpy(e, tmp, n * sizeof(kent));
}

/* The keys in memory sorted (kent_cmp's order).  Key hashes are uniform:
 * one pass scatters the entries into 256 buckets by their first 8 bits
 * (256 places written at once: kind to the TLB and the write buffers),
 * each bucket is sorted alone in the cache (sort_bucket), then the JSON
 * is copied into a new arena in the sorted order, so that whoever reads
 * the sorted keys reads the arena from start to end, not at random.
 * glibc's qsort of a million keys took ~4x longer and left the arena in
 * add order.  Takes a second copy of the entries and of the arena while
 * it runs (qsort took a copy of the entries too); out of memory for it,
 * qsort in place. */
static void sort_mem(zx_keysort *k)
{
    size_t n = k->nents, nb = (size_t)1 << TOP_BITS;
    if (n < 4096) {
        sort_few(k->ents, n, &k->arena);
        return;
    }
    uint32_t pos[(size_t)1 << TOP_BITS];
    kent *out = malloc(k->cap * sizeof(kent)), *tmp = NULL;
    zx_buf a2;
    zx_buf_init(&a2);
    memset(pos, 0, sizeof(pos));
    for (size_t i = 0; i < n; i++)
        pos[k->ents[i].hi >> (64 - TOP_BITS)]++;
    size_t most = 0;
    for (size_t b = 0; b < nb; b++)
        most = pos[b] > most ? pos[b] : most;
    /* 32 bytes of slack after each arena: short JSON is copied 32 at once */
    if (!out || !(tmp = malloc(most * sizeof(kent))) ||
        zx_buf_reserve(&a2, k->arena.len + 32) < 0 || zx_buf_reserve(&k->arena, 32) < 0) {
        free(out);
        free(tmp);
        zx_buf_free(&a2);
        sort_few(k->ents, n, &k->arena);
        return;
    }
    uint32_t at = 0;
    for (size_t b = 0; b < nb; b++) {
        uint32_t c = pos[b];
        pos[b] = at;
        at += c;
    }
    for (size_t i = 0; i < n; i++) {
        const kent *e = &k->ents[i];
        out[pos[e->hi >> (64 - TOP_BITS)]++] = *e;
    }
    /* pos[b] is now where bucket b ends (and b + 1 starts) */
    for (size_t b = 0, start = 0; b < nb; b++) {
        sort_bucket(out + start, pos[b] - start, tmp, &k->arena);
        start = pos[b];
    }
    free(tmp);
    char *to = a2.p;
    for (size_t i = 0; i < n; i++) {
        kent *o = &out[i];
        const char *from = k->arena.p + o->off;
        if (i + 8 < n)
            __builtin_prefetch(k->arena.p + out[i + 8].off);
        if (o->len <= 32)
            memcpy(to, from, 32);   /* the next key's copy writes over the rest */
        else
            memcpy(to, from, o->len);
        o->off = (uint32_t)(to - a2.p);
        to += o->len;
    }
    a2.len = k->arena.len;
    free(k->ents);
    k->ents = out;
    zx_buf_free(&k->arena);
    k->arena = a2;
}

/* Write the sorted in-memory keys as a new run. */
static int spill_run(zx_keysort *k, char *err, size_t errlen)
{
    if (k->nruns == ZX_KEYSORT_MAX_RUNS) {
        snprintf(err, errlen, "the result has more keys than the sorter takes (%d runs of "
                 "%zu MiB)", ZX_KEYSORT_MAX_RUNS, k->mem >> 20);
        return -1;
    }
    sort_mem(k);
    krun *r = &k->runs[k->nruns];
    if (zx_spill_open(&r->sp, k->dir, k->budget, err, errlen) < 0)
        return -1;
    k->nruns++;
    for (size_t i = 0; i < k->nents; i++)
        if (zx_spill_put(&r->sp, k->ents[i].kh, ZX_SYNC_KEYHASH_LEN,
                         k->arena.p + k->ents[i].off, k->ents[i].len) < 0) {
            snprintf(err, errlen, "cannot write the keys to a temporary file in %s: %s",
                     k->dir, strerror(errno));
            return -1;
        }
    k->nents = 0;
    k->arena.len = 0;
    return 0;
}

int zx_keysort_add(zx_keysort *k, const unsigned char *kh, const char *kv, size_t kvlen,
                   char *err, size_t errlen)
{
    if (kvlen > (1u << 24)) {
        snprintf(err, errlen, "a key is longer than 16 MiB");
        return -1;
    }
    if (zx_grow_to(&k->ents, k->nents + 1, &k->cap, sizeof(*k->ents), 4096) < 0) {
        snprintf(err, errlen, "out of memory sorting the keys");
        return -1;
    }
    if (k->arena.len > UINT32_MAX - kvlen || zx_buf_put(&k->arena, kv, kvlen) < 0) {
        snprintf(err, errlen, "out of memory sorting the keys");
        return -1;
    }
    kent *e = &k->ents[k->nents++];
    memcpy(e->kh, kh, ZX_SYNC_KEYHASH_LEN);
    e->hi = be64_of(kh);
    e->off = (uint32_t)(k->arena.len - kvlen);
    e->len = (uint32_t)kvlen;
    k->count++;
    if (k->nents * sizeof(kent) + k->arena.len >= k->mem)
        return spill_run(k, err, errlen);
    return 0;
}

static int run_advance(krun *r)
{
    int g = zx_spill_get(&r->sp, &r->rec);
    if (g < 0 || (g == 1 && r->rec.len < ZX_SYNC_KEYHASH_LEN))
        return -1;
    r->live = g == 1;
    return 0;
}

int zx_keysort_finish(zx_keysort *k, char *err, size_t errlen)
{
    k->finished = 1;
    if (k->nruns && k->nents && spill_run(k, err, errlen) < 0)
        return -1;
    if (!k->nruns) {
        sort_mem(k);   /* everything fits: read it from memory */
        return 0;
    }
    free(k->ents);
    k->ents = NULL;
    k->cap = 0;
    zx_buf_free(&k->arena);
    for (size_t i = 0; i < k->nruns; i++)
        if (zx_spill_rewind(&k->runs[i].sp) < 0 || run_advance(&k->runs[i]) < 0) {
            snprintf(err, errlen, "cannot read back the sorted keys in %s", k->dir);
            return -1;
        }
    return 0;
}

int zx_keysort_next(zx_keysort *k, const unsigned char **kh, const char **kv, size_t *kvlen,
                    char *err, size_t errlen)
{
    if (!k->nruns) {
        if (k->mem_pos >= k->nents)
            return 0;
        kent *e = &k->ents[k->mem_pos++];
        *kh = e->kh;
        *kv = k->arena.p + e->off;
        *kvlen = e->len;
        return 1;
    }
    /* the run handed out last moves on; then the smallest head wins (a
     * linear scan: a few runs) */
    if (k->last_run >= 0 && run_advance(&k->runs[k->last_run]) < 0) {
        snprintf(err, errlen, "cannot read back the sorted keys in %s", k->dir);
        return -1;
    }
    int best = -1;
    for (size_t i = 0; i < k->nruns; i++) {
        krun *r = &k->runs[i];
        if (!r->live)
            continue;
        if (best < 0) {
            best = (int)i;
            continue;
        }
        const zx_buf *a = &r->rec, *b = &k->runs[best].rec;
        int c = memcmp(a->p, b->p, ZX_SYNC_KEYHASH_LEN);
        if (!c) {
            size_t n = a->len < b->len ? a->len : b->len;
            c = memcmp(a->p, b->p, n);
            if (!c)
                c = (a->len > b->len) - (a->len < b->len);
        }
        if (c < 0)
            best = (int)i;
    }
    k->last_run = best;
    if (best < 0)
        return 0;
    krun *r = &k->runs[best];
    *kh = (const unsigned char *)r->rec.p;
    *kv = r->rec.p + ZX_SYNC_KEYHASH_LEN;
    *kvlen = r->rec.len - ZX_SYNC_KEYHASH_LEN;
    return 1;
}

int zx_keysort_in_memory(const zx_keysort *k)
{
    return k->nruns == 0;
}

int zx_keysort_rewind(zx_keysort *k)
{
    if (k->nruns || !k->finished)
        return -1;
    k->mem_pos = 0;
    return 0;
}

uint64_t zx_keysort_count(const zx_keysort *k)
{
    return k->count;
}

void zx_keysort_free(zx_keysort *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->nruns; i++) {
        zx_spill_close(&k->runs[i].sp);
        zx_buf_free(&k->runs[i].rec);
    }
    free(k->ents);
    zx_buf_free(&k->arena);
    free(k);
}
