/*
 * store_syncs.c — the reverse-sync records of the LMDB store: row hashes
 * by key hash, and the run history (layouts in store.h).
 *
 * It must never: return an LMDB code (zx_store_txn_rc translates), write in
 * a read-only or failed transaction, or trust a record's size or version
 * without checking it.
 */
#include "store/store_int.h"

#include <string.h>

typedef struct hash_v1 {
    uint32_t version, pad;
    uint64_t row_hash;
} hash_v1;

typedef struct run_v1 {
    uint32_t version, pad;
} run_v1;

int zx_store_hash_put(zx_store_txn *t, const char *sync, const unsigned char *kh,
                      uint64_t row_hash, const char *kv, size_t kvlen)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    int code = zx_store_check_write(t);
    if (!kh || (kvlen && !kv))
        return ZX_STORE_INVALID;
    if (code || (code = zx_store_make_key(t, kb, sync, kh, ZX_KEYHASH_LEN, 1, &k)))
        return code;
    v.mv_size = sizeof(hash_v1) + kvlen;
    v.mv_data = NULL;
    int rc = mdb_put(t->txn, t->s->dbi[DB_HASHES], &k, &v, MDB_RESERVE);
    if (rc)
        return zx_store_txn_rc(t, rc);
    hash_v1 h = { .version = LAYOUT_V1, .row_hash = row_hash };
    memcpy(v.mv_data, &h, sizeof(h));
    if (kvlen)
        memcpy((char *)v.mv_data + sizeof(h), kv, kvlen);
    return 0;
}

int zx_store_hashes_write(zx_store_txn *t, const char *sync, const zx_store_hash_rec *recs,
                          size_t n)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    MDB_cursor *c = NULL;
    static const unsigned char zero[ZX_KEYHASH_LEN];
    int code = zx_store_check_write(t);
    if (code || !n)
        return code;
    if (!recs)
        return ZX_STORE_INVALID;
    if ((code = zx_store_make_key(t, kb, sync, zero, ZX_KEYHASH_LEN, 1, &k)))
        return code;
    size_t pl = k.mv_size - ZX_KEYHASH_LEN;   /* sync '\0' */
    int rc = mdb_cursor_open(t->txn, t->s->dbi[DB_HASHES], &c);
    if (rc)
        return zx_store_txn_rc(t, rc);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const zx_store_hash_rec *e = &recs[i];
        if (e->kvlen && !e->kv) {
            mdb_cursor_close(c);
            return ZX_STORE_INVALID;
        }
        memcpy(kb + pl, e->kh, ZX_KEYHASH_LEN);
        k.mv_data = kb;
        k.mv_size = pl + ZX_KEYHASH_LEN;
        if (e->del) {
            rc = mdb_cursor_get(c, &k, &v, MDB_SET);
            if (rc == 0)
                rc = mdb_cursor_del(c, 0);
            else if (rc == MDB_NOTFOUND)
                rc = 0;
            continue;
        }
        v.mv_size = sizeof(hash_v1) + e->kvlen;
        v.mv_data = NULL;
        rc = mdb_cursor_put(c, &k, &v, MDB_RESERVE);
        if (rc == 0) {
            hash_v1 h = { .version = LAYOUT_V1, .row_hash = e->row_hash };
            memcpy(v.mv_data, &h, sizeof(h));
            if (e->kvlen)
                memcpy((char *)v.mv_data + sizeof(h), e->kv, e->kvlen);
        }
    }
    mdb_cursor_close(c);
    return rc ? zx_store_txn_rc(t, rc) : 0;
}

int zx_store_hash_del(zx_store_txn *t, const char *sync, const unsigned char *kh)
{
    unsigned char kb[KEYBUF];
    MDB_val k;
    int code = zx_store_check_write(t);
    if (!kh)
        return ZX_STORE_INVALID;
    if (code || (code = zx_store_make_key(t, kb, sync, kh, ZX_KEYHASH_LEN, 1, &k)))
        return code;
    int rc = mdb_del(t->txn, t->s->dbi[DB_HASHES], &k, NULL);
    if (rc == MDB_NOTFOUND)
        return 0;
    return rc ? zx_store_txn_rc(t, rc) : 0;
}

/* A hash value's parts; CORRUPT when it is not one. */
static int hash_parse(const MDB_val *v, uint64_t *rh, const char **kv, size_t *kvlen)
{
    hash_v1 h;
    if (v->mv_size < sizeof(h))
        return ZX_STORE_CORRUPT;
    memcpy(&h, v->mv_data, sizeof(h));
    if (h.version != LAYOUT_V1)
        return ZX_STORE_CORRUPT;
    if (rh)
        *rh = h.row_hash;
    if (kv)
        *kv = (const char *)v->mv_data + sizeof(h);
    if (kvlen)
        *kvlen = v->mv_size - sizeof(h);
    return 0;
}

int zx_store_hash_get(zx_store_txn *t, const char *sync, const unsigned char *kh,
                      uint64_t *row_hash, const char **kv, size_t *kvlen)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    if (!kh)
        return ZX_STORE_INVALID;
    int code = zx_store_make_key(t, kb, sync, kh, ZX_KEYHASH_LEN, 1, &k);
    if (code)
        return code;
    int rc = mdb_get(t->txn, t->s->dbi[DB_HASHES], &k, &v);
    if (rc)
        return zx_store_txn_rc(t, rc);
    return hash_parse(&v, row_hash, kv, kvlen);
}

int zx_store_hashes_scan(zx_store_txn *t, const char *sync, const unsigned char *after,
                         size_t max, zx_store_hash_cb cb, void *ctx, size_t *visited)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v, pk;
    MDB_cursor *c = NULL;
    size_t n = 0;
    int code = zx_store_make_key(t, kb, sync, "", 0, 0, &pk);

    if (visited)
        *visited = 0;
    if (code)
        return code;
    if (pk.mv_size + 1 + ZX_KEYHASH_LEN > t->s->maxkey)
        return ZX_STORE_KEYTOOLONG;
    kb[pk.mv_size++] = 0;              /* prefix: sync '\0' */
    size_t pl = pk.mv_size;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[DB_HASHES], &c);
    if (rc)
        return zx_store_txn_rc(t, rc);
    k = pk;
    if (after) {
        memcpy(kb + pl, after, ZX_KEYHASH_LEN);
        k.mv_size = pl + ZX_KEYHASH_LEN;
    }
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    if (rc == 0 && after && k.mv_size == pl + ZX_KEYHASH_LEN &&
        !memcmp(k.mv_data, kb, pl + ZX_KEYHASH_LEN))
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);   /* strictly after */
    while (rc == 0 && (!max || n < max)) {
        if (k.mv_size != pl + ZX_KEYHASH_LEN || memcmp(k.mv_data, kb, pl) != 0) {
            if (k.mv_size < pl || memcmp(k.mv_data, kb, pl) != 0) {
                rc = MDB_NOTFOUND;
                break;
            }
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);   /* not a hash key */
            continue;
        }
        uint64_t rh;
        const char *kv;
        size_t kvlen;
        if ((code = hash_parse(&v, &rh, &kv, &kvlen)) != 0)
            break;
        n++;
        if ((code = cb((const unsigned char *)k.mv_data + pl, rh, kv, kvlen, ctx)) != 0)
            break;
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    if (visited)
        *visited = n;
    if (code)
        return code;
    return rc == 0 || rc == MDB_NOTFOUND ? 0 : zx_store_txn_rc(t, rc);
}

int zx_store_hashes_clear(zx_store_txn *t, const char *sync)
{
    int code = zx_store_check_write(t);
    return code ? code : zx_store_walk_prefix(t, DB_HASHES, sync, 1, NULL, NULL);
}

static int count_one(const MDB_val *k, size_t pl, const MDB_val *v, void *ctx)
{
    (void)k; (void)pl; (void)v;
    ++*(uint64_t *)ctx;
    return 0;
}

uint64_t zx_store_hashes_count(zx_store_txn *t, const char *sync)
{
    uint64_t n = 0;
    zx_store_walk_prefix(t, DB_HASHES, sync, 0, count_one, &n);
    return n;
}

static void be64(unsigned char b[8], uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        b[i] = (unsigned char)v;
}

static uint64_t from_be64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | b[i];
    return v;
}

int zx_store_run_put(zx_store_txn *t, const char *sync, uint64_t id, const char *json,
                     size_t len)
{
    unsigned char kb[KEYBUF], idb[8];
    MDB_val k, v;
    int code = zx_store_check_write(t);
    if (len && !json)
        return ZX_STORE_INVALID;
    be64(idb, id);
    if (code || (code = zx_store_make_key(t, kb, sync, idb, 8, 1, &k)))
        return code;
    v.mv_size = sizeof(run_v1) + len;
    v.mv_data = NULL;
    int rc = mdb_put(t->txn, t->s->dbi[DB_RUNS], &k, &v, MDB_RESERVE);
    if (rc)
        return zx_store_txn_rc(t, rc);
    run_v1 h = { .version = LAYOUT_V1 };
    memcpy(v.mv_data, &h, sizeof(h));
    if (len)
        memcpy((char *)v.mv_data + sizeof(h), json, len);
    return 0;
}

/* Walk the runs database backwards (newest first within each sync; syncs
 * in reverse name order), visiting the records of `sync` (NULL: all). */
int zx_store_runs_each(zx_store_txn *t, const char *sync, zx_store_run_cb cb, void *ctx)
{
    MDB_cursor *c = NULL;
    MDB_val k, v;
    unsigned char kb[KEYBUF];
    size_t pl = 0;
    int code = 0;

    if (sync) {
        MDB_val pk;
        if ((code = zx_store_make_key(t, kb, sync, "", 0, 0, &pk)) != 0)
            return code;
        pl = pk.mv_size;
        if (pl + 9 + 8 > t->s->maxkey)
            return ZX_STORE_KEYTOOLONG;
        kb[pl++] = 0;
    }
    int rc = mdb_cursor_open(t->txn, t->s->dbi[DB_RUNS], &c);
    if (rc)
        return zx_store_txn_rc(t, rc);
    if (sync) {
        /* just past the sync's last key: prefix + 8 bytes of 0xff */
        memset(kb + pl, 0xff, 9);
        k.mv_data = kb;
        k.mv_size = pl + 9;
        rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        rc = rc == 0 ? mdb_cursor_get(c, &k, &v, MDB_PREV)
                     : mdb_cursor_get(c, &k, &v, MDB_LAST);
    } else {
        rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    }
    while (rc == 0) {
        const unsigned char *kd = k.mv_data;
        if (sync && (k.mv_size != pl + 8 || memcmp(kd, kb, pl) != 0))
            break;
        if (k.mv_size < 10 || kd[k.mv_size - 9] != 0) {
            rc = mdb_cursor_get(c, &k, &v, MDB_PREV);
            continue;
        }
        char name[KEYBUF];
        size_t nl = k.mv_size - 9;
        memcpy(name, kd, nl);
        name[nl] = 0;
        run_v1 h;
        if (v.mv_size < sizeof(h)) {
            code = ZX_STORE_CORRUPT;
            break;
        }
        memcpy(&h, v.mv_data, sizeof(h));
        if (h.version != LAYOUT_V1) {
            code = ZX_STORE_CORRUPT;
            break;
        }
        if ((code = cb(name, from_be64(kd + nl + 1), (const char *)v.mv_data + sizeof(h),
                       v.mv_size - sizeof(h), ctx)) != 0)
            break;
        rc = mdb_cursor_get(c, &k, &v, MDB_PREV);
    }
    mdb_cursor_close(c);
    if (code)
        return code;
    return rc == 0 || rc == MDB_NOTFOUND ? 0 : zx_store_txn_rc(t, rc);
}

typedef struct prune_ctx {
    size_t keep, seen;
    uint64_t ids[64];
    size_t nids;
    uint64_t oldest_kept;
} prune_ctx;

static int prune_one(const char *sync, uint64_t id, const char *json, size_t len, void *ctx)
{
    (void)sync; (void)json; (void)len;
    prune_ctx *p = ctx;
    if (p->seen++ < p->keep)
        return 0;
    if (p->nids == sizeof(p->ids) / sizeof(p->ids[0]))
        return 1;   /* enough for this call; the next one goes on */
    p->ids[p->nids++] = id;
    return 0;
}

int zx_store_runs_prune(zx_store_txn *t, const char *sync, size_t keep, uint64_t *removed)
{
    prune_ctx p = { .keep = keep };
    int code = zx_store_check_write(t);
    if (code)
        return code;
    code = zx_store_runs_each(t, sync, prune_one, &p);
    if (code && code != 1)
        return code;
    for (size_t i = 0; i < p.nids; i++) {
        unsigned char kb[KEYBUF], idb[8];
        MDB_val k;
        be64(idb, p.ids[i]);
        if ((code = zx_store_make_key(t, kb, sync, idb, 8, 1, &k)) != 0)
            return code;
        int rc = mdb_del(t->txn, t->s->dbi[DB_RUNS], &k, NULL);
        if (rc && rc != MDB_NOTFOUND)
            return zx_store_txn_rc(t, rc);
    }
    if (removed)
        *removed += p.nids;
    return 0;
}
