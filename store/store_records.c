/*
 * store_records.c — the records of the LMDB store's named databases (see
 * store.h for the layouts): keys (pipeline [ '\0' name ]), positions,
 * schemas, idempotency records and their pruning, counters, state, and
 * dropping a pipeline.
 *
 * It must never: call an LMDB function outside a transaction of this
 * handle, return an LMDB code (every result goes through zx_store_txn_rc),
 * write in a read-only or failed transaction, or read a record without
 * checking its size and layout version.
 */
#include "store/store_int.h"

#include <string.h>

/* Layout of a positions value (followed by the upstream bytes). */
typedef struct pos_v1 {
    uint32_t version, pad;
    uint64_t seq;
    int64_t committed_us;
} pos_v1;

/* Layout of a position part value (followed by the value bytes). */
typedef struct part_v1 {
    uint32_t version, pad;
    int64_t committed_us;
} part_v1;

/* Layout of a dedup value (the second word was an HTTP status once; 0). */
typedef struct idem_v1 {
    uint32_t version, reserved;
    int64_t created_us;
    uint64_t body_hash, accepted;
    char request_id[40];
} idem_v1;

/* ---- keys ---------------------------------------------------------------- */

/* buf = pipeline [ '\0' name ].  Returns 0 or a code. */
int zx_store_make_key(const zx_store_txn *t, unsigned char buf[KEYBUF], const char *pipeline,
                      const void *name, size_t namelen, int with_name, MDB_val *k)
{
    if (!pipeline || !*pipeline || (with_name && (!name || !namelen)))
        return ZX_STORE_INVALID;
    size_t pl = strlen(pipeline);
    size_t n = pl + (with_name ? 1 + namelen : 0);
    if (n > t->s->maxkey || n < pl)
        return ZX_STORE_KEYTOOLONG;
    memcpy(buf, pipeline, pl);
    if (with_name) {
        buf[pl] = 0;
        memcpy(buf + pl + 1, name, namelen);
    }
    k->mv_data = buf;
    k->mv_size = n;
    return 0;
}

int zx_store_check_write(zx_store_txn *t)
{
    if (t->readonly)
        return ZX_STORE_READONLY;
    if (t->failed)
        return ZX_STORE_TXN_FAILED;
    return 0;
}

/* ---- positions ----------------------------------------------------------- */

int zx_store_position_put(zx_store_txn *t, const char *pipeline, const zx_position *p)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    int code = zx_store_check_write(t);
    if (code || (code = zx_store_make_key(t, kb, pipeline, NULL, 0, 0, &k)))
        return code;
    if (p->upstream_len && !p->upstream)
        return ZX_STORE_INVALID;
    v.mv_size = sizeof(pos_v1) + p->upstream_len;
    v.mv_data = NULL;
    int rc = mdb_put(t->txn, t->s->dbi[DB_POSITIONS], &k, &v, MDB_RESERVE);
    if (rc)
        return zx_store_txn_rc(t, rc);
    pos_v1 h = { .version = LAYOUT_V1, .seq = p->seq, .committed_us = p->committed_us };
    memcpy(v.mv_data, &h, sizeof(h));
    if (p->upstream_len)
        memcpy((char *)v.mv_data + sizeof(h), p->upstream, p->upstream_len);
    return 0;
}

int zx_store_position_get(zx_store_txn *t, const char *pipeline, zx_position *p)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    int code = zx_store_make_key(t, kb, pipeline, NULL, 0, 0, &k);
    if (code)
        return code;
    memset(p, 0, sizeof(*p));
    int rc = mdb_get(t->txn, t->s->dbi[DB_POSITIONS], &k, &v);
    if (rc)
        return zx_store_txn_rc(t, rc);
    pos_v1 h;
    if (v.mv_size < sizeof(h))
        return ZX_STORE_CORRUPT;
    memcpy(&h, v.mv_data, sizeof(h));
    if (h.version != LAYOUT_V1)
        return ZX_STORE_CORRUPT;
    p->seq = h.seq;
    p->committed_us = h.committed_us;
    p->upstream_len = v.mv_size - sizeof(h);
    p->upstream = p->upstream_len ? (const char *)v.mv_data + sizeof(h) : NULL;
    return 0;
}


int zx_store_position_part_put(zx_store_txn *t, const char *pipeline, const char *part,
                               const void *val, size_t len, int64_t committed_us)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    int code = zx_store_check_write(t);
    if (!part || !*part || (len && !val))
        return ZX_STORE_INVALID;
    if (code || (code = zx_store_make_key(t, kb, pipeline, part, strlen(part), 1, &k)))
        return code;
    v.mv_size = sizeof(part_v1) + len;
    v.mv_data = NULL;
    int rc = mdb_put(t->txn, t->s->dbi[DB_POSITIONS], &k, &v, MDB_RESERVE);
    if (rc)
        return zx_store_txn_rc(t, rc);
    part_v1 h = { .version = LAYOUT_V1, .committed_us = committed_us };
    memcpy(v.mv_data, &h, sizeof(h));
    if (len)
        memcpy((char *)v.mv_data + sizeof(h), val, len);
    return 0;
}

struct part_ctx {
    zx_store_position_cb cb;
    void *ctx;
};

static int part_cb(const MDB_val *k, size_t pl, const MDB_val *v, void *ctx)
{
    struct part_ctx *e = ctx;
    char name[KEYBUF];
    size_t nl = k->mv_size - pl;
    part_v1 h;
    if (v->mv_size < sizeof(h))
        return ZX_STORE_CORRUPT;
    memcpy(&h, v->mv_data, sizeof(h));
    if (h.version != LAYOUT_V1)
        return ZX_STORE_CORRUPT;
    memcpy(name, (const char *)k->mv_data + pl, nl);
    name[nl] = 0;
    return e->cb(name, (const char *)v->mv_data + sizeof(h), v->mv_size - sizeof(h), e->ctx);
}

int zx_store_positions_each(zx_store_txn *t, const char *pipeline, zx_store_position_cb cb,
                            void *ctx)
{
    struct part_ctx e = { cb, ctx };
    if (!cb)
        return ZX_STORE_INVALID;
    return zx_store_walk_prefix(t, DB_POSITIONS, pipeline, 0, part_cb, &e);
}

/* ---- schemas ------------------------------------------------------------- */

int zx_store_schema_put(zx_store_txn *t, const char *pipeline, const char *table,
                        const char *json)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    int code = zx_store_check_write(t);
    if (code || (code = zx_store_make_key(t, kb, pipeline, NULL, 0, 0, &k)))
        return code;
    if (!table || !json)
        return ZX_STORE_INVALID;
    size_t tl = strlen(table), jl = strlen(json);
    v.mv_size = tl + 1 + jl + 1;
    v.mv_data = NULL;
    int rc = mdb_put(t->txn, t->s->dbi[DB_SCHEMAS], &k, &v, MDB_RESERVE);
    if (rc)
        return zx_store_txn_rc(t, rc);
    memcpy(v.mv_data, table, tl + 1);
    memcpy((char *)v.mv_data + tl + 1, json, jl + 1);
    return 0;
}

int zx_store_schema_get(zx_store_txn *t, const char *pipeline, const char **table,
                        const char **json, size_t *json_len)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    int code = zx_store_make_key(t, kb, pipeline, NULL, 0, 0, &k);
    if (code)
        return code;
    int rc = mdb_get(t->txn, t->s->dbi[DB_SCHEMAS], &k, &v);
    if (rc)
        return zx_store_txn_rc(t, rc);
    const char *d = v.mv_data;
    const char *z = v.mv_size ? memchr(d, 0, v.mv_size) : NULL;
    if (!z || d[v.mv_size - 1] != 0 || z == d + v.mv_size - 1)
        return ZX_STORE_CORRUPT;
    if (table)
        *table = d;
    if (json)
        *json = z + 1;
    if (json_len)
        *json_len = (size_t)(d + v.mv_size - 1 - (z + 1));
    return 0;
}

/* ---- idempotency --------------------------------------------------------- */

int zx_store_idem_put(zx_store_txn *t, const char *pipeline, const char *key,
                      size_t keylen, const zx_idem_rec *r)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    int code = zx_store_check_write(t);
    if (code || (code = zx_store_make_key(t, kb, pipeline, key, keylen, 1, &k)))
        return code;
    idem_v1 rec;
    memset(&rec, 0, sizeof(rec));
    rec.version = LAYOUT_V1;
    rec.created_us = r->created_us;
    rec.body_hash = r->body_hash;
    rec.accepted = r->accepted;
    size_t il = strnlen(r->request_id, sizeof(rec.request_id) - 1);
    memcpy(rec.request_id, r->request_id, il);
    v.mv_data = &rec;
    v.mv_size = sizeof(rec);
    return zx_store_txn_rc(t, mdb_put(t->txn, t->s->dbi[DB_IDEM], &k, &v, 0));
}

static int idem_decode(const MDB_val *v, zx_idem_rec *r)
{
    idem_v1 rec;
    if (v->mv_size != sizeof(rec))
        return ZX_STORE_CORRUPT;
    memcpy(&rec, v->mv_data, sizeof(rec));
    if (rec.version != LAYOUT_V1)
        return ZX_STORE_CORRUPT;
    if (r) {
        memset(r, 0, sizeof(*r));
        r->created_us = rec.created_us;
        r->body_hash = rec.body_hash;
        r->accepted = rec.accepted;
        memcpy(r->request_id, rec.request_id, sizeof(r->request_id) - 1);
    }
    return 0;
}

int zx_store_idem_get(zx_store_txn *t, const char *pipeline, const char *key,
                      size_t keylen, zx_idem_rec *r)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    int code = zx_store_make_key(t, kb, pipeline, key, keylen, 1, &k);
    if (code)
        return code;
    int rc = mdb_get(t->txn, t->s->dbi[DB_IDEM], &k, &v);
    if (rc)
        return zx_store_txn_rc(t, rc);
    return idem_decode(&v, r);
}

int zx_store_idem_prune(zx_store_txn *t, int64_t older_than_us, size_t max_scan,
                        uint64_t *removed)
{
    zx_store *s = t->s;
    MDB_cursor *c = NULL;
    MDB_val k, v;
    uint64_t n = 0;
    size_t scanned = 0;
    int code = zx_store_check_write(t), rc;
    if (code)
        return code;
    if ((rc = mdb_cursor_open(t->txn, s->dbi[DB_IDEM], &c)) != 0)
        return zx_store_txn_rc(t, rc);
    if (s->prune_len) {
        k.mv_data = s->prune_key;
        k.mv_size = s->prune_len;
        rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    } else {
        rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
    }
    while (rc == 0) {
        if (max_scan && scanned == max_scan) {
            /* remember the next unexamined key */
            size_t l = k.mv_size < KEYBUF ? k.mv_size : KEYBUF;
            memcpy(s->prune_key, k.mv_data, l);
            s->prune_len = l;
            break;
        }
        scanned++;
        idem_v1 rec;
        int old = 1; /* a record of unknown layout is garbage: remove it */
        if (v.mv_size == sizeof(rec)) {
            memcpy(&rec, v.mv_data, sizeof(rec));
            old = rec.version != LAYOUT_V1 || rec.created_us < older_than_us;
        }
        if (old) {
            if ((rc = mdb_cursor_del(c, 0)) != 0)
                break;
            n++;
        }
        /* after a delete, MDB_NEXT yields the deleted item's successor */
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    if (rc == MDB_NOTFOUND) {
        s->prune_len = 0; /* reached the end: next call starts over */
        rc = 0;
    }
    mdb_cursor_close(c);
    if (removed)
        *removed += n;
    return rc ? zx_store_txn_rc(t, rc) : 0;
}

/* Walk the keys of db that start with pipeline '\0'.  cb returns non-zero
 * to stop (returned); del != 0 deletes each visited record instead. */

int zx_store_walk_prefix(zx_store_txn *t, int db, const char *pipeline, int del,
                         zx_store_walk_cb cb, void *ctx)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v, pk;
    MDB_cursor *c = NULL;
    int code = zx_store_make_key(t, kb, pipeline, "", 0, 0, &pk);
    if (code)
        return code;
    if (pk.mv_size + 1 > t->s->maxkey)
        return ZX_STORE_KEYTOOLONG;
    kb[pk.mv_size] = 0;
    pk.mv_size++;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[db], &c);
    if (rc)
        return zx_store_txn_rc(t, rc);
    k = pk;
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    while (rc == 0) {
        if (k.mv_size < pk.mv_size || memcmp(k.mv_data, pk.mv_data, pk.mv_size) != 0) {
            rc = MDB_NOTFOUND;
            break;
        }
        if (del) {
            if ((rc = mdb_cursor_del(c, 0)) != 0)
                break;
        } else if ((code = cb(&k, pk.mv_size, &v, ctx)) != 0) {
            break;
        }
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    if (code)
        return code;
    return rc == MDB_NOTFOUND ? 0 : zx_store_txn_rc(t, rc);
}

static int count_cb(const MDB_val *k, size_t pl, const MDB_val *v, void *ctx)
{
    (void)k; (void)pl; (void)v;
    ++*(uint64_t *)ctx;
    return 0;
}

uint64_t zx_store_idem_count(zx_store_txn *t, const char *pipeline)
{
    uint64_t n = 0;
    zx_store_walk_prefix(t, DB_IDEM, pipeline, 0, count_cb, &n);
    return n;
}

/* ---- counters ------------------------------------------------------------ */

static int counter_key(zx_store_txn *t, unsigned char kb[KEYBUF], const char *pipeline,
                       const char *name, MDB_val *k)
{
    if (!name)
        return ZX_STORE_INVALID;
    return zx_store_make_key(t, kb, pipeline, name, strlen(name), 1, k);
}

int zx_store_counter_get(zx_store_txn *t, const char *pipeline, const char *name,
                         uint64_t *v)
{
    unsigned char kb[KEYBUF];
    MDB_val k, d;
    *v = 0;
    int code = counter_key(t, kb, pipeline, name, &k);
    if (code)
        return code;
    int rc = mdb_get(t->txn, t->s->dbi[DB_COUNTERS], &k, &d);
    if (rc)
        return zx_store_txn_rc(t, rc);
    if (d.mv_size != sizeof(uint64_t))
        return ZX_STORE_CORRUPT;
    memcpy(v, d.mv_data, sizeof(uint64_t));
    return 0;
}

int zx_store_counter_add(zx_store_txn *t, const char *pipeline, const char *name,
                         uint64_t delta)
{
    unsigned char kb[KEYBUF];
    MDB_val k, d;
    uint64_t cur = 0;
    int code = zx_store_check_write(t);
    if (code || (code = counter_key(t, kb, pipeline, name, &k)))
        return code;
    int rc = mdb_get(t->txn, t->s->dbi[DB_COUNTERS], &k, &d);
    if (rc == 0 && d.mv_size == sizeof(cur))
        memcpy(&cur, d.mv_data, sizeof(cur));
    else if (rc && rc != MDB_NOTFOUND)
        return zx_store_txn_rc(t, rc);
    cur += delta;
    d.mv_data = &cur;
    d.mv_size = sizeof(cur);
    return zx_store_txn_rc(t, mdb_put(t->txn, t->s->dbi[DB_COUNTERS], &k, &d, 0));
}

struct each_ctx {
    int (*cb)(const char *name, uint64_t v, void *ctx);
    void *ctx;
};

static int each_cb(const MDB_val *k, size_t pl, const MDB_val *v, void *ctx)
{
    struct each_ctx *e = ctx;
    char name[KEYBUF];
    size_t nl = k->mv_size - pl;
    uint64_t val = 0;
    memcpy(name, (const char *)k->mv_data + pl, nl);
    name[nl] = 0;
    if (v->mv_size == sizeof(val))
        memcpy(&val, v->mv_data, sizeof(val));
    return e->cb(name, val, e->ctx);
}

int zx_store_counters_each(zx_store_txn *t, const char *pipeline,
                           int (*cb)(const char *name, uint64_t v, void *ctx), void *ctx)
{
    struct each_ctx e = { cb, ctx };
    if (!cb)
        return ZX_STORE_INVALID;
    return zx_store_walk_prefix(t, DB_COUNTERS, pipeline, 0, each_cb, &e);
}

/* ---- state --------------------------------------------------------------- */

int zx_store_state_put(zx_store_txn *t, const char *pipeline, const char *name,
                       const void *val, size_t len)
{
    unsigned char kb[KEYBUF];
    MDB_val k, d;
    int code = zx_store_check_write(t);
    if (code || (code = counter_key(t, kb, pipeline, name, &k)))
        return code;
    if (len && !val)
        return ZX_STORE_INVALID;
    d.mv_data = (void *)val;
    d.mv_size = len;
    return zx_store_txn_rc(t, mdb_put(t->txn, t->s->dbi[DB_STATE], &k, &d, 0));
}

int zx_store_state_get(zx_store_txn *t, const char *pipeline, const char *name,
                       const void **val, size_t *len)
{
    unsigned char kb[KEYBUF];
    MDB_val k, d;
    int code = counter_key(t, kb, pipeline, name, &k);
    if (code)
        return code;
    int rc = mdb_get(t->txn, t->s->dbi[DB_STATE], &k, &d);
    if (rc)
        return zx_store_txn_rc(t, rc);
    *val = d.mv_data;
    *len = d.mv_size;
    return 0;
}

int zx_store_state_del(zx_store_txn *t, const char *pipeline, const char *name)
{
    unsigned char kb[KEYBUF];
    MDB_val k;
    int code = zx_store_check_write(t);
    if (code || (code = counter_key(t, kb, pipeline, name, &k)))
        return code;
    int rc = mdb_del(t->txn, t->s->dbi[DB_STATE], &k, NULL);
    if (rc == MDB_NOTFOUND)
        return 0;
    return rc ? zx_store_txn_rc(t, rc) : 0;
}

int zx_store_state_any(zx_store_txn *t, const char *pipeline, const char *prefix)
{
    unsigned char pb[KEYBUF];
    MDB_val k, v, pk;
    MDB_cursor *c = NULL;
    if (!prefix)
        return ZX_STORE_INVALID;
    int code = counter_key(t, pb, pipeline, prefix, &pk);
    if (code)
        return code;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[DB_STATE], &c);
    if (rc)
        return zx_store_txn_rc(t, rc);
    k = pk;
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    if (rc == 0 && (k.mv_size < pk.mv_size || memcmp(k.mv_data, pk.mv_data, pk.mv_size) != 0))
        rc = MDB_NOTFOUND;
    mdb_cursor_close(c);
    return rc == MDB_NOTFOUND ? ZX_STORE_NOTFOUND : rc ? zx_store_txn_rc(t, rc) : 0;
}

int zx_store_state_sweep(zx_store_txn *t, const char *pipeline, const char *prefix,
                         const char *from, size_t max_scan,
                         int (*expired)(const void *val, size_t len, void *ctx), void *ctx,
                         char *next, size_t nextcap, uint64_t *removed)
{
    unsigned char kb[KEYBUF], pb[KEYBUF];
    MDB_val k, v, pk, start;
    MDB_cursor *c = NULL;
    if (!prefix || !from || !expired || !next || nextcap < 256)
        return ZX_STORE_INVALID;
    next[0] = '\0';
    int code = zx_store_check_write(t);
    if (code || (code = counter_key(t, pb, pipeline, prefix, &pk)) ||
        (code = counter_key(t, kb, pipeline, from[0] ? from : prefix, &start)))
        return code;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[DB_STATE], &c);
    if (rc)
        return zx_store_txn_rc(t, rc);
    k = start;
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    size_t plen = pk.mv_size - strlen(prefix);   /* pipeline '\0' */
    uint64_t n = 0;
    for (size_t scanned = 0; rc == 0; scanned++) {
        if (k.mv_size < pk.mv_size || memcmp(k.mv_data, pk.mv_data, pk.mv_size) != 0) {
            rc = MDB_NOTFOUND;
            break;
        }
        if (scanned == max_scan) {
            size_t nl = k.mv_size - plen;
            if (nl >= nextcap)
                nl = nextcap - 1;
            memcpy(next, (const char *)k.mv_data + plen, nl);
            next[nl] = '\0';
            break;
        }
        if (expired(v.mv_data, v.mv_size, ctx) == 1) {
            if ((rc = mdb_cursor_del(c, 0)) != 0)
                break;
            n++;
        }
        /* after a delete, MDB_NEXT yields the deleted item's successor */
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    if (removed)
        *removed += n;
    return rc == MDB_NOTFOUND ? 0 : zx_store_txn_rc(t, rc);
}

/* ---- pipelines ----------------------------------------------------------- */

int zx_store_pipeline_drop(zx_store_txn *t, const char *pipeline)
{
    unsigned char kb[KEYBUF];
    MDB_val k;
    int code = zx_store_check_write(t);
    if (code || (code = zx_store_make_key(t, kb, pipeline, NULL, 0, 0, &k)))
        return code;
    static const int exact[] = { DB_POSITIONS, DB_SCHEMAS };
    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
        int rc = mdb_del(t->txn, t->s->dbi[exact[i]], &k, NULL);
        if (rc && rc != MDB_NOTFOUND)
            return zx_store_txn_rc(t, rc);
    }
    static const int prefixed[] = { DB_POSITIONS, DB_IDEM, DB_COUNTERS, DB_HASHES, DB_RUNS,
                                    DB_STATE };
    for (size_t i = 0; i < sizeof(prefixed) / sizeof(prefixed[0]); i++)
        if ((code = zx_store_walk_prefix(t, prefixed[i], pipeline, 1, NULL, NULL)) != 0)
            return code;
    return 0;
}
