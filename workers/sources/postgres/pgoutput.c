/*
 * pgoutput.c — decoding pgoutput's logical replication messages and their
 * CopyData framing, encoding the standby status update, and the relation
 * cache.  See pgoutput.h for the contract.
 *
 * Every read goes through the `rd` cursor below, whose getters check the
 * bytes left before touching them; a count read from the input is checked
 * against the bytes it implies before any loop or arithmetic uses it.
 * State (the stream block, the cache) changes only once a message has
 * been read to its last byte.
 *
 * It must never: read outside [buf, buf + len), allocate outside
 * pgo_cache, or keep a pointer into an input after returning.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "workers/sources/postgres/pgoutput.h"

/* ---- LSNs and times -------------------------------------------------- */

int pgo_lsn_format(pgo_lsn lsn, char *out, size_t n)
{
    char tmp[PGO_LSN_LEN + 8];
    int k = snprintf(tmp, sizeof(tmp), "%X/%X", (unsigned)(uint32_t)(lsn >> 32),
                     (unsigned)(uint32_t)lsn);
    if (k < 0 || (size_t)k >= n) {
        if (n > 0)
            out[0] = '\0';
        return -1;
    }
    memcpy(out, tmp, (size_t)k + 1);
    return k;
}

/* Reads 1 to 8 hex digits at *s into *v, advancing *s.  0 or -1. */
static int hex32(const char **s, uint32_t *v)
{
    uint32_t x = 0;
    int n = 0, h;
    while ((h = zx_hexval(**s)) >= 0) {
        if (++n > 8)
            return -1;
        x = (x << 4) | (uint32_t)h;
        (*s)++;
    }
    *v = x;
    return n > 0 ? 0 : -1;
}

int pgo_lsn_parse(const char *s, pgo_lsn *lsn)
{
    uint32_t hi, lo;
    if (!s || hex32(&s, &hi) != 0 || *s++ != '/' || hex32(&s, &lo) != 0 || *s != '\0')
        return -1;
    *lsn = ((uint64_t)hi << 32) | lo;
    return 0;
}

int pgo_time_to_unix_us(int64_t pg_us, int64_t *out)
{
    if (pg_us > INT64_MAX - PGO_EPOCH_DIFF_US)
        return -1;
    *out = pg_us + PGO_EPOCH_DIFF_US;
    return 0;
}

int pgo_time_from_unix_us(int64_t unix_us, int64_t *out)
{
    if (unix_us < INT64_MIN + PGO_EPOCH_DIFF_US)
        return -1;
    *out = unix_us - PGO_EPOCH_DIFF_US;
    return 0;
}

/* ---- the relation cache ---------------------------------------------- */

typedef struct cslot {
    uint32_t relid;            /* 0: empty */
    size_t size;               /* bytes of rel's block */
    pgo_rel *rel;              /* one malloc: pgo_rel, columns, names */
} cslot;

struct pgo_cache {
    uint32_t max_rels;
    size_t max_bytes;
    uint32_t n;                /* relations held */
    size_t bytes;              /* sum of their blocks' sizes */
    uint32_t cap;              /* slots (a power of two, 0 before the
                                  first put); n <= cap / 2 */
    cslot *slots;
};

pgo_cache *pgo_cache_create(uint32_t max_rels, size_t max_bytes)
{
    pgo_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->max_rels = max_rels == 0 ? PGO_CACHE_DEFAULT_RELS
                  : max_rels > PGO_CACHE_MAX_RELS ? PGO_CACHE_MAX_RELS : max_rels;
    c->max_bytes = max_bytes == 0 ? PGO_CACHE_DEFAULT_BYTES : max_bytes;
    return c;
}

void pgo_cache_clear(pgo_cache *c)
{
    for (uint32_t i = 0; i < c->cap; i++) {
        free(c->slots[i].rel);
        c->slots[i] = (cslot){0};
    }
    c->n = 0;
    c->bytes = 0;
}

void pgo_cache_destroy(pgo_cache *c)
{
    if (!c)
        return;
    pgo_cache_clear(c);
    free(c->slots);
    free(c);
}

uint32_t pgo_cache_count(const pgo_cache *c)
{
    return c->n;
}

size_t pgo_cache_bytes(const pgo_cache *c)
{
    return c->bytes;
}

static uint32_t slot_of(uint32_t relid, uint32_t cap)
{
    return (relid * 2654435761u) & (cap - 1);
}

/* The slot holding relid, or the empty slot where it would go.  cap > 0. */
static cslot *find_slot(const pgo_cache *c, uint32_t relid)
{
    uint32_t i = slot_of(relid, c->cap);
    while (c->slots[i].relid != 0 && c->slots[i].relid != relid)
        i = (i + 1) & (c->cap - 1);
    return &c->slots[i];
}

const pgo_rel *pgo_cache_get(const pgo_cache *c, uint32_t relid)
{
    if (c->cap == 0 || relid == 0)
        return NULL;
    return find_slot(c, relid)->rel;
}

/* Doubles the slots (first: 64).  0 or -1 (out of memory, unchanged). */
static int cache_grow(pgo_cache *c)
{
    uint32_t ncap = c->cap ? c->cap * 2 : 64;
    cslot *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return -1;
    cslot *old = c->slots;
    uint32_t ocap = c->cap;
    c->slots = ns;
    c->cap = ncap;
    for (uint32_t i = 0; i < ocap; i++)
        if (old[i].relid != 0)
            *find_slot(c, old[i].relid) = old[i];
    free(old);
    return 0;
}

static int seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Length of name when it is a valid name (not NULL, at most PGO_MAX_NAME
 * bytes), else -1. */
static long name_len(const char *name)
{
    if (!name)
        return -1;
    size_t n = strnlen(name, PGO_MAX_NAME + 1);
    return n > PGO_MAX_NAME ? -1 : (long)n;
}

/* Appends name and its NUL at *pos in block; returns the copy. */
static const char *put_name(char *block, size_t *pos, const char *name)
{
    size_t n = strlen(name) + 1;
    char *dst = block + *pos;
    memcpy(dst, name, n);
    *pos += n;
    return dst;
}

const pgo_rel *pgo_cache_put(pgo_cache *c, const pgo_rel *rel, char *err, size_t errlen)
{
    if (rel->relid == 0)
        return seterr(err, errlen, "relation id 0 is not a relation"), NULL;
    if (rel->ncols > PGO_MAX_COLS || (rel->ncols > 0 && !rel->cols))
        return seterr(err, errlen, "relation %u: %u columns, more than %u", rel->relid,
                      (unsigned)rel->ncols, PGO_MAX_COLS), NULL;
    /* Sizes: every term is bounded (PGO_MAX_COLS names of PGO_MAX_NAME
     * bytes), so the sum cannot overflow. */
    long kn = name_len(rel->nspname), kr = name_len(rel->relname), k;
    if (kn < 0 || kr < 0)
        return seterr(err, errlen, "relation %u: a missing name or one longer than %u bytes",
                      rel->relid, PGO_MAX_NAME), NULL;
    size_t strs = (size_t)kn + 1 + (size_t)kr + 1;
    for (uint32_t i = 0; i < rel->ncols; i++) {
        if ((k = name_len(rel->cols[i].name)) < 0)
            return seterr(err, errlen,
                          "relation %u: column %u has no name or one longer than %u bytes",
                          rel->relid, i + 1, PGO_MAX_NAME), NULL;
        strs += (size_t)k + 1;
    }
    size_t size = sizeof(pgo_rel) + (size_t)rel->ncols * sizeof(pgo_col) + strs;

    cslot *s = c->cap ? find_slot(c, rel->relid) : NULL;
    size_t old = s && s->rel ? s->size : 0;
    int is_new = !(s && s->rel);
    if (is_new && c->n >= c->max_rels)
        return seterr(err, errlen, "relation cache full: %u relations already (the limit)",
                      c->n), NULL;
    if (c->bytes - old > c->max_bytes || size > c->max_bytes - (c->bytes - old))
        return seterr(err, errlen,
                      "relation cache full: relation %u needs %zu bytes, %zu of %zu in use",
                      rel->relid, size, c->bytes - old, c->max_bytes), NULL;

    char *block = malloc(size);
    if (!block)
        return seterr(err, errlen, "out of memory for relation %u", rel->relid), NULL;
    if (is_new && (c->n + 1) * 2 > c->cap) {
        if (cache_grow(c) != 0) {
            free(block);
            return seterr(err, errlen, "out of memory for relation %u", rel->relid), NULL;
        }
    }
    if (is_new)
        s = find_slot(c, rel->relid);

    pgo_rel *r = (pgo_rel *)block;
    pgo_col *cols = (pgo_col *)(block + sizeof(pgo_rel));
    size_t pos = sizeof(pgo_rel) + (size_t)rel->ncols * sizeof(pgo_col);
    *r = *rel;
    r->cols = cols;
    r->nspname = put_name(block, &pos, rel->nspname);
    r->relname = put_name(block, &pos, rel->relname);
    for (uint32_t i = 0; i < rel->ncols; i++) {
        cols[i] = rel->cols[i];
        cols[i].name = put_name(block, &pos, rel->cols[i].name);
    }

    free(s->rel);
    s->relid = rel->relid;
    s->rel = r;
    s->size = size;
    c->bytes = c->bytes - old + size;
    c->n += (uint32_t)is_new;
    return r;
}

/* ---- the reading cursor ---------------------------------------------- */

typedef struct rd {
    const uint8_t *p;
    size_t len, off;
    pgo_decoder *d;
    const char *layer;         /* "pgoutput" or "CopyData" */
    int type;                  /* the message's first byte (-1: none) */
} rd;

static const char *frame_name(int type)
{
    return type == 'w' ? "XLogData" : type == 'k' ? "primary keepalive" : "unknown";
}

/* Sets d->err to "<layer> <Type> ('x') at byte <off>: <what>" and returns
 * -1. */
static int fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(rd *r, const char *fmt, ...)
{
    char *e = r->d->err;
    size_t cap = sizeof(r->d->err);
    const char *name = r->type < 0 ? "message"
                       : r->layer[0] == 'C' ? frame_name(r->type) : pgo_type_name(r->type);
    int k;
    if (r->type >= 0x20 && r->type < 0x7f)
        k = snprintf(e, cap, "%s %s ('%c') at byte %zu: ", r->layer, name, r->type, r->off);
    else
        k = snprintf(e, cap, "%s %s at byte %zu: ", r->layer, name, r->off);
    if (k < 0 || (size_t)k >= cap)
        k = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e + k, cap - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

static size_t left(const rd *r)
{
    return r->len - r->off;
}

/* 0 when n more bytes are there, else -1 naming what was wanted. */
static int need(rd *r, size_t n, const char *what)
{
    if (n <= left(r))
        return 0;
    return fail(r, "truncated: %s needs %zu bytes, %zu left", what, n, left(r));
}

static int get_u8(rd *r, const char *what, uint8_t *v)
{
    if (need(r, 1, what) != 0)
        return -1;
    *v = r->p[r->off++];
    return 0;
}

static int get_u16(rd *r, const char *what, uint16_t *v)
{
    if (need(r, 2, what) != 0)
        return -1;
    const uint8_t *p = r->p + r->off;
    *v = (uint16_t)((unsigned)p[0] << 8 | p[1]);
    r->off += 2;
    return 0;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int get_u32(rd *r, const char *what, uint32_t *v)
{
    if (need(r, 4, what) != 0)
        return -1;
    *v = be32(r->p + r->off);
    r->off += 4;
    return 0;
}

static int get_u64(rd *r, const char *what, uint64_t *v)
{
    if (need(r, 8, what) != 0)
        return -1;
    *v = (uint64_t)be32(r->p + r->off) << 32 | be32(r->p + r->off + 4);
    r->off += 8;
    return 0;
}

static int get_i64(rd *r, const char *what, int64_t *v)
{
    uint64_t u;
    if (get_u64(r, what, &u) != 0)
        return -1;
    /* two's complement without implementation-defined conversion */
    *v = u <= INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
    return 0;
}

/* A length sent as Int32: negative or beyond the bytes left is an error. */
static int get_len(rd *r, const char *what, uint32_t *v)
{
    size_t at = r->off;
    uint32_t u;
    if (get_u32(r, what, &u) != 0)
        return -1;
    if (u > INT32_MAX || u > left(r)) {
        r->off = at;
        if (u > INT32_MAX)
            return fail(r, "%s is negative (%lld)", what, (long long)u - 4294967296LL);
        return fail(r, "%s %u is beyond the %zu bytes left", what, u, left(r) - 4);
    }
    *v = u;
    return 0;
}

/* A NUL-terminated string of at most max bytes (0: any) into *s, which
 * points into the input. */
static int get_str(rd *r, const char *what, size_t max, const char **s)
{
    const uint8_t *start = r->p + r->off;
    const uint8_t *nul = left(r) ? memchr(start, 0, left(r)) : NULL;
    if (!nul)
        return fail(r, "truncated: %s has no terminating NUL in the %zu bytes left", what,
                    left(r));
    size_t n = (size_t)(nul - start);
    if (max && n > max)
        return fail(r, "%s is %zu bytes long, more than %zu", what, n, max);
    *s = (const char *)start;
    r->off += n + 1;
    return 0;
}

/* A namespace: "" is pg_catalog. */
static int get_nsp(rd *r, const char *what, const char **s)
{
    if (get_str(r, what, PGO_MAX_NAME, s) != 0)
        return -1;
    if ((*s)[0] == '\0')
        *s = "pg_catalog";
    return 0;
}

static int get_xid(rd *r, const char *what, uint32_t *xid)
{
    size_t at = r->off;
    if (get_u32(r, what, xid) != 0)
        return -1;
    if (*xid == 0) {
        r->off = at;
        return fail(r, "%s is 0 (invalid)", what);
    }
    return 0;
}

/* ---- messages -------------------------------------------------------- */

const char *pgo_type_name(int type)
{
    switch (type) {
    case PGO_BEGIN: return "Begin";
    case PGO_COMMIT: return "Commit";
    case PGO_ORIGIN: return "Origin";
    case PGO_RELATION: return "Relation";
    case PGO_TYPE: return "Type";
    case PGO_INSERT: return "Insert";
    case PGO_UPDATE: return "Update";
    case PGO_DELETE: return "Delete";
    case PGO_TRUNCATE: return "Truncate";
    case PGO_MESSAGE: return "Message";
    case PGO_STREAM_START: return "Stream Start";
    case PGO_STREAM_STOP: return "Stream Stop";
    case PGO_STREAM_COMMIT: return "Stream Commit";
    case PGO_STREAM_ABORT: return "Stream Abort";
    default: return "unknown";
    }
}

uint32_t pgo_truncate_relid(const pgo_msg *m, uint32_t i)
{
    return be32(m->u.truncate.relids + (size_t)i * 4);
}

int pgo_decoder_init(pgo_decoder *d, int version, pgo_cache *cache)
{
    d->version = version;
    d->in_stream = 0;
    d->stream_xid = 0;
    d->cache = cache;
    d->err[0] = '\0';
    if (version != 1 && version != 2) {
        snprintf(d->err, sizeof(d->err),
                 "pgoutput protocol version %d is not supported (1 or 2)", version);
        return -1;
    }
    return 0;
}

/* A TupleData into vals and *t.  want: the relation's column count, or -1
 * when there is no cache to compare with. */
static int get_tuple(rd *r, const char *what, long want, pgo_value *vals, pgo_tuple *t)
{
    size_t at = r->off;
    uint16_t n;
    if (get_u16(r, what, &n) != 0)
        return -1;
    if (n > PGO_MAX_COLS || n > left(r)) {
        r->off = at;
        return fail(r, "%s has %u columns, more than %s (%zu)", what, (unsigned)n,
                    n > PGO_MAX_COLS ? "a table can have" : "the bytes left",
                    n > PGO_MAX_COLS ? (size_t)PGO_MAX_COLS : left(r) - 2);
    }
    if (want >= 0 && n != want) {
        r->off = at;
        return fail(r, "%s has %u columns, its relation %ld", what, (unsigned)n, want);
    }
    for (uint32_t i = 0; i < n; i++) {
        uint8_t kind;
        char col[64];
        snprintf(col, sizeof(col), "%s column %u", what, i + 1);
        if (get_u8(r, col, &kind) != 0)
            return -1;
        vals[i] = (pgo_value){.kind = (char)kind};
        switch (kind) {
        case PGO_NULL:
        case PGO_UNCHANGED:
            break;
        case PGO_TEXT:
        case PGO_BINARY:
            strncat(col, " length", sizeof(col) - strlen(col) - 1);
            if (get_len(r, col, &vals[i].len) != 0)
                return -1;
            vals[i].data = r->p + r->off;
            r->off += vals[i].len;
            break;
        default:
            r->off--;
            return fail(r, "%s: unknown kind 0x%02x (not n, u, t or b)", col, kind);
        }
    }
    t->ncols = n;
    t->vals = vals;
    return 0;
}

/* The relation of a change, from the cache (when there is one). */
static int change_rel(rd *r, pgo_msg *m, long *want)
{
    *want = -1;
    if (!r->d->cache)
        return 0;
    m->rel = pgo_cache_get(r->d->cache, m->u.change.relid);
    if (!m->rel) {
        r->off -= 4;
        return fail(r, "relation %u is unknown (no Relation message before it)",
                    m->u.change.relid);
    }
    *want = m->rel->ncols;
    return 0;
}

static int dec_change(rd *r, pgo_msg *m)
{
    pgo_decoder *d = r->d;
    uint8_t tag;
    long want;
    m->u.change.old_kind = 0;
    if (get_u32(r, "relation id", &m->u.change.relid) != 0 || change_rel(r, m, &want) != 0 ||
        get_u8(r, "tuple tag", &tag) != 0)
        return -1;
    if (m->type != PGO_INSERT && (tag == 'K' || tag == 'O')) {
        m->u.change.old_kind = (char)tag;
        if (get_tuple(r, tag == 'K' ? "old key" : "old tuple", want, d->vals[0],
                      &m->u.change.old_tuple) != 0)
            return -1;
        if (m->type == PGO_DELETE)
            return 0;
        if (get_u8(r, "tuple tag", &tag) != 0)
            return -1;
    } else if (m->type == PGO_DELETE) {
        r->off--;
        return fail(r, "expected 'K' (old key) or 'O' (old tuple), got 0x%02x", tag);
    }
    if (tag != 'N') {
        r->off--;
        return fail(r, "expected 'N' (new tuple)%s, got 0x%02x",
                    m->type == PGO_UPDATE && !m->u.change.old_kind ? ", 'K' or 'O'" : "", tag);
    }
    return get_tuple(r, "new tuple", want, d->vals[1], &m->u.change.new_tuple);
}

static int dec_relation(rd *r, pgo_msg *m)
{
    pgo_rel *rel = &m->u.relation;
    uint8_t ri;
    uint16_t n;
    size_t at;
    if (get_xid(r, "relation id", &rel->relid) != 0 ||
        get_nsp(r, "namespace", &rel->nspname) != 0 ||
        get_str(r, "relation name", PGO_MAX_NAME, &rel->relname) != 0 ||
        get_u8(r, "replica identity", &ri) != 0)
        return -1;
    if (ri != 'd' && ri != 'n' && ri != 'f' && ri != 'i') {
        r->off--;
        return fail(r, "replica identity 0x%02x is not d, n, f or i", ri);
    }
    rel->replident = (char)ri;
    at = r->off;
    if (get_u16(r, "column count", &n) != 0)
        return -1;
    /* a column takes at least 10 bytes: flags, "" name, type, typmod */
    if (n > PGO_MAX_COLS || n > left(r) / 10) {
        r->off = at;
        return fail(r, "%u columns: more than %s (%zu)", (unsigned)n,
                    n > PGO_MAX_COLS ? "a table can have" : "the bytes left hold",
                    n > PGO_MAX_COLS ? (size_t)PGO_MAX_COLS : left(r) / 10);
    }
    for (uint32_t i = 0; i < n; i++) {
        pgo_col *c = &r->d->cols[i];
        uint32_t mod;
        if (get_u8(r, "column flags", &c->flags) != 0)
            return -1;
        if (c->flags & ~PGO_COL_KEY) {
            r->off--;
            return fail(r, "column %u: flags 0x%02x (only 1, key, is known)", i + 1, c->flags);
        }
        if (get_str(r, "column name", PGO_MAX_NAME, &c->name) != 0 ||
            get_u32(r, "column type", &c->type_oid) != 0 ||
            get_u32(r, "column type modifier", &mod) != 0)
            return -1;
        c->typmod = mod <= INT32_MAX ? (int32_t)mod : (int32_t)(mod - 0x80000000u) + INT32_MIN;
    }
    rel->ncols = n;
    rel->cols = r->d->cols;
    return 0;
}

static int dec_truncate(rd *r, pgo_msg *m)
{
    size_t at = r->off;
    uint32_t n;
    if (get_u32(r, "relation count", &n) != 0)
        return -1;
    if (n == 0 || n > (left(r) > 0 ? (left(r) - 1) / 4 : 0)) {
        r->off = at;
        return fail(r, "relation count %u is %s", n,
                    n == 0 ? "0" : "beyond what the bytes left hold");
    }
    if (get_u8(r, "options", &m->u.truncate.options) != 0)
        return -1;
    if (m->u.truncate.options & ~(PGO_TRUNCATE_CASCADE | PGO_TRUNCATE_RESTART_IDENTITY)) {
        r->off--;
        return fail(r, "options 0x%02x (only 1 cascade, 2 restart identity are known)",
                    m->u.truncate.options);
    }
    m->u.truncate.nrels = n;
    m->u.truncate.relids = r->p + r->off;
    for (uint32_t i = 0; i < n; i++, r->off += 4)
        if (be32(r->p + r->off) == 0)
            return fail(r, "relation id %u of %u is 0", i + 1, n);
    return 0;
}

static int dec_message(rd *r, pgo_msg *m)
{
    if (get_u8(r, "flags", &m->u.message.flags) != 0)
        return -1;
    if (m->u.message.flags & ~PGO_MESSAGE_TRANSACTIONAL) {
        r->off--;
        return fail(r, "flags 0x%02x (only 1, transactional, is known)", m->u.message.flags);
    }
    if (get_u64(r, "LSN", &m->u.message.lsn) != 0 ||
        get_str(r, "prefix", 0, &m->u.message.prefix) != 0 ||
        get_len(r, "content length", &m->u.message.len) != 0)
        return -1;
    m->u.message.content = r->p + r->off;
    r->off += m->u.message.len;
    return 0;
}

/* A flags byte that must be 0. */
static int get_zero_flags(rd *r)
{
    uint8_t f;
    if (get_u8(r, "flags", &f) != 0)
        return -1;
    if (f != 0) {
        r->off--;
        return fail(r, "flags 0x%02x (must be 0)", f);
    }
    return 0;
}

/* The message's body after its type byte and (when streamed) its xid. */
static int dec_body(rd *r, pgo_msg *m)
{
    uint8_t b;
    switch (m->type) {
    case PGO_BEGIN:
        if (get_u64(r, "final LSN", &m->u.begin.final_lsn) != 0)
            return -1;
        if (m->u.begin.final_lsn == 0) {
            r->off -= 8;
            return fail(r, "final LSN is 0 (invalid)");
        }
        return get_i64(r, "commit time", &m->u.begin.commit_time) != 0 ||
               get_u32(r, "xid", &m->u.begin.xid) != 0 ? -1 : 0;
    case PGO_COMMIT:
        return get_zero_flags(r) != 0 ||
               get_u64(r, "commit LSN", &m->u.commit.commit_lsn) != 0 ||
               get_u64(r, "end LSN", &m->u.commit.end_lsn) != 0 ||
               get_i64(r, "commit time", &m->u.commit.commit_time) != 0 ? -1 : 0;
    case PGO_ORIGIN:
        return get_u64(r, "origin LSN", &m->u.origin.lsn) != 0 ||
               get_str(r, "origin name", 0, &m->u.origin.name) != 0 ? -1 : 0;
    case PGO_RELATION:
        return dec_relation(r, m);
    case PGO_TYPE:
        return get_u32(r, "type oid", &m->u.type.oid) != 0 ||
               get_nsp(r, "namespace", &m->u.type.nspname) != 0 ||
               get_str(r, "type name", PGO_MAX_NAME, &m->u.type.name) != 0 ? -1 : 0;
    case PGO_INSERT:
    case PGO_UPDATE:
    case PGO_DELETE:
        return dec_change(r, m);
    case PGO_TRUNCATE:
        return dec_truncate(r, m);
    case PGO_MESSAGE:
        return dec_message(r, m);
    case PGO_STREAM_START:
        if (get_xid(r, "xid", &m->u.stream_start.xid) != 0 ||
            get_u8(r, "first segment", &b) != 0)
            return -1;
        if (b > 1) {
            r->off--;
            return fail(r, "first segment byte 0x%02x (0 or 1)", b);
        }
        m->u.stream_start.first_segment = b;
        return 0;
    case PGO_STREAM_STOP:
        return 0;
    case PGO_STREAM_COMMIT:
        return get_xid(r, "xid", &m->u.stream_commit.xid) != 0 || get_zero_flags(r) != 0 ||
               get_u64(r, "commit LSN", &m->u.stream_commit.commit_lsn) != 0 ||
               get_u64(r, "end LSN", &m->u.stream_commit.end_lsn) != 0 ||
               get_i64(r, "commit time", &m->u.stream_commit.commit_time) != 0 ? -1 : 0;
    case PGO_STREAM_ABORT:
        return get_xid(r, "xid", &m->u.stream_abort.xid) != 0 ||
               get_xid(r, "subtransaction xid", &m->u.stream_abort.subxid) != 0 ? -1 : 0;
    }
    return -1; /* not reached: pgo_decode checked the type */
}

int pgo_decode(pgo_decoder *d, const void *buf, size_t len, pgo_msg *m)
{
    rd r = {.p = buf, .len = len, .d = d, .layer = "pgoutput", .type = -1};
    memset(m, 0, sizeof(*m));
    if (len == 0)
        return fail(&r, "empty (no type byte)");
    r.type = r.p[0];
    r.off = 1;
    m->type = (pgo_type)r.type;
    switch (r.type) {
    case PGO_BEGIN: case PGO_COMMIT: case PGO_ORIGIN: case PGO_RELATION: case PGO_TYPE:
    case PGO_INSERT: case PGO_UPDATE: case PGO_DELETE: case PGO_TRUNCATE: case PGO_MESSAGE:
        break;
    case PGO_STREAM_START: case PGO_STREAM_STOP: case PGO_STREAM_COMMIT: case PGO_STREAM_ABORT:
        if (d->version < 2) {
            r.off = 0;
            return fail(&r, "streaming messages need protocol version 2, this is %d",
                        d->version);
        }
        break;
    case 'b': case 'P': case 'K': case 'r': case 'p':
        r.off = 0;
        r.type = -1;
        return fail(&r, "type 0x%02x ('%c') is a two-phase commit message (protocol version "
                    "3), not supported", (unsigned)r.p[0], r.p[0]);
    default:
        r.off = 0;
        r.type = -1;
        if (r.p[0] >= 0x20 && r.p[0] < 0x7f)
            return fail(&r, "unknown type 0x%02x ('%c')", (unsigned)r.p[0], r.p[0]);
        return fail(&r, "unknown type 0x%02x", (unsigned)r.p[0]);
    }

    /* Where the message may come, stream blocks being what they are. */
    switch (r.type) {
    case PGO_BEGIN: case PGO_COMMIT: case PGO_STREAM_START: case PGO_STREAM_COMMIT:
    case PGO_STREAM_ABORT:
        if (d->in_stream) {
            r.off = 0;
            return fail(&r, "inside the stream block of xid %u (no Stream Stop before it)",
                        d->stream_xid);
        }
        break;
    case PGO_STREAM_STOP:
        if (!d->in_stream) {
            r.off = 0;
            return fail(&r, "no stream block is open");
        }
        break;
    case PGO_RELATION: case PGO_TYPE: case PGO_INSERT: case PGO_UPDATE: case PGO_DELETE:
    case PGO_TRUNCATE: case PGO_MESSAGE:
        if (d->in_stream) {
            if (get_xid(&r, "xid", &m->xid) != 0)
                return -1;
            m->streamed = 1;
        }
        break;
    }

    if (dec_body(&r, m) != 0)
        return -1;
    if (r.off != len)
        return fail(&r, "%zu bytes left over after the message", len - r.off);

    if (m->type == PGO_RELATION && d->cache) {
        char why[PGO_ERR_LEN - 64];
        m->rel = pgo_cache_put(d->cache, &m->u.relation, why, sizeof(why));
        if (!m->rel) {
            r.off = 0;
            return fail(&r, "%s", why);
        }
    }
    if (m->type == PGO_STREAM_START) {
        d->in_stream = 1;
        d->stream_xid = m->u.stream_start.xid;
    } else if (m->type == PGO_STREAM_STOP) {
        d->in_stream = 0;
        d->stream_xid = 0;
    }
    d->err[0] = '\0';
    return 0;
}

/* ---- CopyData payloads ----------------------------------------------- */

int pgo_frame_decode(pgo_decoder *d, const void *buf, size_t len, pgo_frame *f)
{
    rd r = {.p = buf, .len = len, .d = d, .layer = "CopyData", .type = -1};
    uint8_t reply;
    memset(f, 0, sizeof(*f));
    if (len == 0)
        return fail(&r, "empty (no type byte)");
    r.type = r.p[0];
    r.off = 1;
    f->type = (pgo_frame_type)r.type;
    switch (r.type) {
    case PGO_XLOGDATA:
        if (get_u64(&r, "WAL start", &f->wal_start) != 0 ||
            get_u64(&r, "WAL end", &f->wal_end) != 0 ||
            get_i64(&r, "send time", &f->send_time) != 0)
            return -1;
        f->len = len - r.off;
        f->data = f->len ? r.p + r.off : NULL;
        break;
    case PGO_KEEPALIVE:
        if (get_u64(&r, "WAL end", &f->wal_end) != 0 ||
            get_i64(&r, "send time", &f->send_time) != 0 ||
            get_u8(&r, "reply requested", &reply) != 0)
            return -1;
        if (reply > 1) {
            r.off--;
            return fail(&r, "reply requested byte 0x%02x (0 or 1)", reply);
        }
        f->reply_requested = reply;
        if (r.off != len)
            return fail(&r, "%zu bytes left over after the message", len - r.off);
        break;
    default:
        r.off = 0;
        r.type = -1;
        return fail(&r, "unknown type 0x%02x (not 'w' XLogData or 'k' keepalive)",
                    (unsigned)r.p[0]);
    }
    d->err[0] = '\0';
    return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

size_t pgo_status_encode(uint8_t out[PGO_STATUS_LEN], pgo_lsn written, pgo_lsn flushed,
                         pgo_lsn applied, int64_t now_pg_us, int reply)
{
    out[0] = 'r';
    put64(out + 1, written);
    put64(out + 9, flushed);
    put64(out + 17, applied);
    put64(out + 25, (uint64_t)now_pg_us);
    out[33] = reply ? 1 : 0;
    return PGO_STATUS_LEN;
}
