/*
 * store.c — the LMDB store (see store.h for the contract and the layouts).
 *
 * This is the only file that calls LMDB for the store and the only place
 * where LMDB error codes are translated into ZX_STORE_* codes.  It must
 * never let an LMDB code escape, keep a transaction open across calls of
 * its own, or grow the map while a transaction of this handle is active.
 */
#include "workers/writer/store.h"

#include <errno.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STORE_FILE "store.lmdb"
#define LAYOUT_V1 1u
#define KEYBUF 512

enum { DB_POSITIONS, DB_SCHEMAS, DB_IDEM, DB_COUNTERS, DB_HASHES, DB_RUNS, DB_STATE, DB__COUNT };

static const char *const db_names[DB__COUNT] = {
    [DB_POSITIONS] = "positions", [DB_SCHEMAS] = "schemas",
    [DB_IDEM] = "idempotency",    [DB_COUNTERS] = "counters",
    [DB_HASHES] = "hashes",       [DB_RUNS] = "runs",
    [DB_STATE] = "state",
};

struct zx_store {
    MDB_env *env;
    int readonly;
    int need_grow;         /* a write hit MDB_MAP_FULL: grow at abort */
    int write_open;        /* a write transaction is open */
    size_t maxkey;
    MDB_dbi dbi[DB__COUNT];
    unsigned char prune_key[KEYBUF]; /* where idem_prune resumes */
    size_t prune_len;                /* 0: from the start */
};

struct zx_store_txn {
    zx_store *s;
    MDB_txn *txn;
    int readonly;
    int failed;            /* first error code of a failed write call */
};

/* Layout of a positions value (followed by the upstream bytes). */
typedef struct pos_v1 {
    uint32_t version, pad;
    uint64_t seq;
    int64_t committed_us;
} pos_v1;

/* Layout of an idempotency value. */
typedef struct idem_v1 {
    uint32_t version, status;
    int64_t created_us;
    uint64_t body_hash, accepted;
    char request_id[40];
} idem_v1;

const char *zx_store_strerror(int code)
{
    switch (code) {
    case ZX_STORE_OK: return "success";
    case ZX_STORE_NOTFOUND: return "not found";
    case ZX_STORE_NOSTORE: return "store does not exist yet (the writer has not created it)";
    case ZX_STORE_MAP_FULL: return "store map full (grown; redo the transaction)";
    case ZX_STORE_KEYTOOLONG: return "store key too long (pipeline name plus key over 511 bytes)";
    case ZX_STORE_INVALID: return "invalid argument";
    case ZX_STORE_READONLY: return "store opened read-only";
    case ZX_STORE_CORRUPT: return "store corrupted or record layout unknown";
    case ZX_STORE_NOMEM: return "out of memory";
    case ZX_STORE_NOSPACE: return "no space left on device";
    case ZX_STORE_ACCESS: return "permission denied";
    case ZX_STORE_READERS_FULL: return "too many store readers";
    case ZX_STORE_IO: return "store I/O or system error";
    case ZX_STORE_TXN_FAILED: return "an earlier call failed in this transaction";
    default: return "unknown store error";
    }
}

/* Translate an LMDB or errno code. */
static int tr(int rc)
{
    switch (rc) {
    case MDB_SUCCESS: return ZX_STORE_OK;
    case MDB_NOTFOUND: return ZX_STORE_NOTFOUND;
    case MDB_MAP_FULL: return ZX_STORE_MAP_FULL;
    case MDB_BAD_VALSIZE: return ZX_STORE_KEYTOOLONG;
    case MDB_READERS_FULL: return ZX_STORE_READERS_FULL;
    case MDB_CORRUPTED: case MDB_PAGE_NOTFOUND: case MDB_INVALID:
    case MDB_VERSION_MISMATCH: case MDB_INCOMPATIBLE: case MDB_BAD_DBI:
        return ZX_STORE_CORRUPT;
    case ENOENT: return ZX_STORE_NOSTORE;
    case ENOMEM: return ZX_STORE_NOMEM;
    case ENOSPC: return ZX_STORE_NOSPACE;
    case EACCES: case EPERM: return ZX_STORE_ACCESS;
    case EROFS: return ZX_STORE_READONLY;
    default: return ZX_STORE_IO;
    }
}

/* Record the outcome of an LMDB call made in t.  A failure other than
 * "not found" in a write transaction makes it unusable. */
static int txn_rc(zx_store_txn *t, int rc)
{
    int code = tr(rc);
    if (code == ZX_STORE_OK || code == ZX_STORE_NOTFOUND)
        return code;
    if (code == ZX_STORE_MAP_FULL)
        t->s->need_grow = 1;
    if (!t->readonly && !t->failed)
        t->failed = code;
    return code;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int grow(zx_store *s)
{
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    size_t want = info.me_mapsize * 2;
    if (want < info.me_mapsize)
        return ZX_STORE_NOSPACE;
    int rc = mdb_env_set_mapsize(s->env, want);
    if (rc == 0)
        s->need_grow = 0;
    return tr(rc);
}

size_t zx_store_mapsize(zx_store *s)
{
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    return info.me_mapsize;
}

/* Open (and for a writer create) every named database. */
static int open_dbis(zx_store *s, char *err, size_t errlen)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        MDB_txn *txn = NULL;
        int rc = mdb_txn_begin(s->env, NULL, s->readonly ? MDB_RDONLY : 0, &txn);
        if (rc == MDB_MAP_RESIZED && s->readonly) {
            mdb_env_set_mapsize(s->env, 0);
            continue;
        }
        if (rc) {
            seterr(err, errlen, "store: cannot begin transaction: %s", mdb_strerror(rc));
            return tr(rc);
        }
        for (int i = 0; i < DB__COUNT && rc == 0; i++)
            rc = mdb_dbi_open(txn, db_names[i], s->readonly ? 0 : MDB_CREATE, &s->dbi[i]);
        if (rc) {
            mdb_txn_abort(txn);
            if (rc == MDB_NOTFOUND) {
                seterr(err, errlen, "store: not initialised yet by the writer");
                return ZX_STORE_NOSTORE;
            }
            if (rc == MDB_MAP_FULL && grow(s) == 0)
                continue;
            seterr(err, errlen, "store: cannot open databases: %s", mdb_strerror(rc));
            return tr(rc);
        }
        rc = mdb_txn_commit(txn);
        if (rc == MDB_MAP_FULL && grow(s) == 0)
            continue;
        if (rc) {
            seterr(err, errlen, "store: cannot commit: %s", mdb_strerror(rc));
            return tr(rc);
        }
        return 0;
    }
    seterr(err, errlen, "store: cannot open databases (map keeps changing)");
    return ZX_STORE_IO;
}

int zx_store_open(const char *data_dir, unsigned flags, size_t initial_mapsize,
                  zx_store **out, char *err, size_t errlen)
{
    zx_store *s = NULL;
    char path[4096];
    int code = ZX_STORE_OK, rc;

    *out = NULL;
    if (!data_dir || !*data_dir) {
        seterr(err, errlen, "store: no data directory");
        return ZX_STORE_INVALID;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", data_dir, STORE_FILE) >= sizeof(path)) {
        seterr(err, errlen, "store: data directory path too long");
        return ZX_STORE_INVALID;
    }
    s = calloc(1, sizeof(*s));
    if (!s) {
        seterr(err, errlen, "store: out of memory");
        return ZX_STORE_NOMEM;
    }
    s->readonly = (flags & ZX_STORE_RDONLY) != 0;
    if (s->readonly) {
        struct stat st;
        if (stat(path, &st) != 0) {
            code = errno == ENOENT ? ZX_STORE_NOSTORE : tr(errno);
            seterr(err, errlen, "store: %s: %s", path,
                   errno == ENOENT ? "does not exist yet (the writer has not created it)"
                                   : strerror(errno));
            goto fail;
        }
    }
    if ((rc = mdb_env_create(&s->env)) != 0) {
        seterr(err, errlen, "store: mdb_env_create: %s", mdb_strerror(rc));
        code = tr(rc);
        goto fail;
    }
    mdb_env_set_maxdbs(s->env, DB__COUNT + 1);
    mdb_env_set_maxreaders(s->env, 512);
    /* 0 = adopt the size recorded in an existing file */
    mdb_env_set_mapsize(s->env, s->readonly ? 0
                        : (initial_mapsize ? initial_mapsize : ZX_STORE_DEFAULT_MAPSIZE));
    rc = mdb_env_open(s->env, path,
                      MDB_NOSUBDIR | MDB_NOTLS | (s->readonly ? MDB_RDONLY : 0), 0640);
    if (rc) {
        code = tr(rc);
        if (rc == ENOENT && !s->readonly)
            code = ZX_STORE_IO; /* the data directory itself is missing */
        seterr(err, errlen, "store: %s: %s", path, mdb_strerror(rc));
        goto fail;
    }
    s->maxkey = (size_t)mdb_env_get_maxkeysize(s->env);
    if (s->maxkey >= KEYBUF)
        s->maxkey = KEYBUF - 1;
    if (!s->readonly) {
        int dead = 0;
        mdb_reader_check(s->env, &dead); /* slots of crashed readers */
    }
    if ((code = open_dbis(s, err, errlen)) != 0)
        goto fail;
    *out = s;
    return 0;
fail:
    if (s && s->env)
        mdb_env_close(s->env);
    free(s);
    return code;
}

void zx_store_close(zx_store *s)
{
    if (!s)
        return;
    mdb_env_close(s->env);
    free(s);
}

int zx_store_begin(zx_store *s, int readonly, zx_store_txn **t)
{
    *t = NULL;
    if (!readonly && s->readonly)
        return ZX_STORE_READONLY;
    if (!readonly && s->write_open)
        return ZX_STORE_INVALID;
    if (!readonly && s->need_grow) {
        int g = grow(s);
        if (g)
            return g;
    }
    zx_store_txn *x = calloc(1, sizeof(*x));
    if (!x)
        return ZX_STORE_NOMEM;
    int rc = 0;
    for (int attempt = 0; attempt < 4; attempt++) {
        rc = mdb_txn_begin(s->env, NULL, readonly ? MDB_RDONLY : 0, &x->txn);
        if (rc == MDB_MAP_RESIZED) {         /* the writer grew the map */
            mdb_env_set_mapsize(s->env, 0);
            continue;
        }
        if (rc == MDB_READERS_FULL) {        /* maybe slots of dead readers */
            int dead = 0;
            mdb_reader_check(s->env, &dead);
            if (dead > 0)
                continue;
        }
        break;
    }
    if (rc) {
        free(x);
        return tr(rc);
    }
    x->s = s;
    x->readonly = readonly != 0;
    if (!readonly)
        s->write_open = 1;
    *t = x;
    return 0;
}

static void txn_free(zx_store_txn *t)
{
    if (!t->readonly)
        t->s->write_open = 0;
    free(t);
}

void zx_store_abort(zx_store_txn *t)
{
    if (!t)
        return;
    zx_store *s = t->s;
    mdb_txn_abort(t->txn);
    int wrote = !t->readonly;
    txn_free(t);
    if (wrote && s->need_grow)
        grow(s);
}

int zx_store_commit(zx_store_txn *t)
{
    zx_store *s = t->s;
    if (t->failed) {
        int code = t->failed;
        zx_store_abort(t);
        return code;
    }
    int rc = mdb_txn_commit(t->txn);
    int wrote = !t->readonly;
    txn_free(t);
    if (rc == MDB_MAP_FULL && wrote) {
        grow(s);
        return ZX_STORE_MAP_FULL;
    }
    return tr(rc);
}

/* ---- keys ---------------------------------------------------------------- */

/* buf = pipeline [ '\0' name ].  Returns 0 or a code. */
static int make_key(const zx_store_txn *t, unsigned char buf[KEYBUF], const char *pipeline,
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

static int check_write(zx_store_txn *t)
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
    int code = check_write(t);
    if (code || (code = make_key(t, kb, pipeline, NULL, 0, 0, &k)))
        return code;
    if (p->upstream_len && !p->upstream)
        return ZX_STORE_INVALID;
    v.mv_size = sizeof(pos_v1) + p->upstream_len;
    v.mv_data = NULL;
    int rc = mdb_put(t->txn, t->s->dbi[DB_POSITIONS], &k, &v, MDB_RESERVE);
    if (rc)
        return txn_rc(t, rc);
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
    int code = make_key(t, kb, pipeline, NULL, 0, 0, &k);
    if (code)
        return code;
    memset(p, 0, sizeof(*p));
    int rc = mdb_get(t->txn, t->s->dbi[DB_POSITIONS], &k, &v);
    if (rc)
        return txn_rc(t, rc);
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

/* ---- schemas ------------------------------------------------------------- */

int zx_store_schema_put(zx_store_txn *t, const char *pipeline, const char *table,
                        const char *json)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    int code = check_write(t);
    if (code || (code = make_key(t, kb, pipeline, NULL, 0, 0, &k)))
        return code;
    if (!table || !json)
        return ZX_STORE_INVALID;
    size_t tl = strlen(table), jl = strlen(json);
    v.mv_size = tl + 1 + jl + 1;
    v.mv_data = NULL;
    int rc = mdb_put(t->txn, t->s->dbi[DB_SCHEMAS], &k, &v, MDB_RESERVE);
    if (rc)
        return txn_rc(t, rc);
    memcpy(v.mv_data, table, tl + 1);
    memcpy((char *)v.mv_data + tl + 1, json, jl + 1);
    return 0;
}

int zx_store_schema_get(zx_store_txn *t, const char *pipeline, const char **table,
                        const char **json, size_t *json_len)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v;
    int code = make_key(t, kb, pipeline, NULL, 0, 0, &k);
    if (code)
        return code;
    int rc = mdb_get(t->txn, t->s->dbi[DB_SCHEMAS], &k, &v);
    if (rc)
        return txn_rc(t, rc);
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
    int code = check_write(t);
    if (code || (code = make_key(t, kb, pipeline, key, keylen, 1, &k)))
        return code;
    idem_v1 rec;
    memset(&rec, 0, sizeof(rec));
    rec.version = LAYOUT_V1;
    rec.status = r->status;
    rec.created_us = r->created_us;
    rec.body_hash = r->body_hash;
    rec.accepted = r->accepted;
    size_t il = strnlen(r->request_id, sizeof(rec.request_id) - 1);
    memcpy(rec.request_id, r->request_id, il);
    v.mv_data = &rec;
    v.mv_size = sizeof(rec);
    return txn_rc(t, mdb_put(t->txn, t->s->dbi[DB_IDEM], &k, &v, 0));
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
        r->status = rec.status;
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
    int code = make_key(t, kb, pipeline, key, keylen, 1, &k);
    if (code)
        return code;
    int rc = mdb_get(t->txn, t->s->dbi[DB_IDEM], &k, &v);
    if (rc)
        return txn_rc(t, rc);
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
    int code = check_write(t), rc;
    if (code)
        return code;
    if ((rc = mdb_cursor_open(t->txn, s->dbi[DB_IDEM], &c)) != 0)
        return txn_rc(t, rc);
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
    return rc ? txn_rc(t, rc) : 0;
}

/* Walk the keys of db that start with pipeline '\0'.  cb returns non-zero
 * to stop (returned); del != 0 deletes each visited record instead. */
typedef int (*walk_cb)(const MDB_val *k, size_t prefix_len, const MDB_val *v, void *ctx);

static int walk_prefix(zx_store_txn *t, int db, const char *pipeline, int del,
                       walk_cb cb, void *ctx)
{
    unsigned char kb[KEYBUF];
    MDB_val k, v, pk;
    MDB_cursor *c = NULL;
    int code = make_key(t, kb, pipeline, "", 0, 0, &pk);
    if (code)
        return code;
    if (pk.mv_size + 1 > t->s->maxkey)
        return ZX_STORE_KEYTOOLONG;
    kb[pk.mv_size] = 0;
    pk.mv_size++;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[db], &c);
    if (rc)
        return txn_rc(t, rc);
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
    return rc == MDB_NOTFOUND ? 0 : txn_rc(t, rc);
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
    walk_prefix(t, DB_IDEM, pipeline, 0, count_cb, &n);
    return n;
}

/* ---- counters ------------------------------------------------------------ */

static int counter_key(zx_store_txn *t, unsigned char kb[KEYBUF], const char *pipeline,
                       const char *name, MDB_val *k)
{
    if (!name)
        return ZX_STORE_INVALID;
    return make_key(t, kb, pipeline, name, strlen(name), 1, k);
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
        return txn_rc(t, rc);
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
    int code = check_write(t);
    if (code || (code = counter_key(t, kb, pipeline, name, &k)))
        return code;
    int rc = mdb_get(t->txn, t->s->dbi[DB_COUNTERS], &k, &d);
    if (rc == 0 && d.mv_size == sizeof(cur))
        memcpy(&cur, d.mv_data, sizeof(cur));
    else if (rc && rc != MDB_NOTFOUND)
        return txn_rc(t, rc);
    cur += delta;
    d.mv_data = &cur;
    d.mv_size = sizeof(cur);
    return txn_rc(t, mdb_put(t->txn, t->s->dbi[DB_COUNTERS], &k, &d, 0));
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
    return walk_prefix(t, DB_COUNTERS, pipeline, 0, each_cb, &e);
}

/* ---- state --------------------------------------------------------------- */

int zx_store_state_put(zx_store_txn *t, const char *pipeline, const char *name,
                       const void *val, size_t len)
{
    unsigned char kb[KEYBUF];
    MDB_val k, d;
    int code = check_write(t);
    if (code || (code = counter_key(t, kb, pipeline, name, &k)))
        return code;
    if (len && !val)
        return ZX_STORE_INVALID;
    d.mv_data = (void *)val;
    d.mv_size = len;
    return txn_rc(t, mdb_put(t->txn, t->s->dbi[DB_STATE], &k, &d, 0));
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
        return txn_rc(t, rc);
    *val = d.mv_data;
    *len = d.mv_size;
    return 0;
}

/* ---- pipelines ----------------------------------------------------------- */

int zx_store_pipeline_drop(zx_store_txn *t, const char *pipeline)
{
    unsigned char kb[KEYBUF];
    MDB_val k;
    int code = check_write(t);
    if (code || (code = make_key(t, kb, pipeline, NULL, 0, 0, &k)))
        return code;
    static const int exact[] = { DB_POSITIONS, DB_SCHEMAS };
    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
        int rc = mdb_del(t->txn, t->s->dbi[exact[i]], &k, NULL);
        if (rc && rc != MDB_NOTFOUND)
            return txn_rc(t, rc);
    }
    static const int prefixed[] = { DB_IDEM, DB_COUNTERS, DB_HASHES, DB_RUNS, DB_STATE };
    for (size_t i = 0; i < sizeof(prefixed) / sizeof(prefixed[0]); i++)
        if ((code = walk_prefix(t, prefixed[i], pipeline, 1, NULL, NULL)) != 0)
            return code;
    return 0;
}
