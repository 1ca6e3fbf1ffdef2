/*
 * store.c — the LMDB store (see store.h for the contract and the layouts):
 * the environment, transactions and map growth.  The keys and record
 * layouts of each named database are in store_records.c.
 *
 * store.c and store_records.c are the only files that call LMDB for the
 * store, and this file is the only place where LMDB error codes are
 * translated into ZX_STORE_* codes (store_records.c goes through
 * zx_store_txn_rc).  It must never let an LMDB code escape, keep a
 * transaction open across calls of its own, or grow the map while a
 * transaction of this handle is active.
 */
#include "store/store_int.h"
#include "common/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const db_names[DB__COUNT] = {
    [DB_POSITIONS] = "positions", [DB_SCHEMAS] = "schemas",
    [DB_IDEM] = "idempotency",    [DB_COUNTERS] = "counters",
    [DB_HASHES] = "hashes",       [DB_RUNS] = "runs",
    [DB_STATE] = "state",
};

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
int zx_store_txn_rc(zx_store_txn *t, int rc)
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
            zx_seterr(err, errlen, "store: cannot begin transaction: %s", mdb_strerror(rc));
            return tr(rc);
        }
        for (int i = 0; i < DB__COUNT && rc == 0; i++)
            rc = mdb_dbi_open(txn, db_names[i], s->readonly ? 0 : MDB_CREATE, &s->dbi[i]);
        if (rc) {
            mdb_txn_abort(txn);
            if (rc == MDB_NOTFOUND) {
                zx_seterr(err, errlen, "store: not initialised yet by the writer");
                return ZX_STORE_NOSTORE;
            }
            if (rc == MDB_MAP_FULL && grow(s) == 0)
                continue;
            zx_seterr(err, errlen, "store: cannot open databases: %s", mdb_strerror(rc));
            return tr(rc);
        }
        rc = mdb_txn_commit(txn);
        if (rc == MDB_MAP_FULL && grow(s) == 0)
            continue;
        if (rc) {
            zx_seterr(err, errlen, "store: cannot commit: %s", mdb_strerror(rc));
            return tr(rc);
        }
        return 0;
    }
    zx_seterr(err, errlen, "store: cannot open databases (map keeps changing)");
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
        zx_seterr(err, errlen, "store: no data directory");
        return ZX_STORE_INVALID;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", data_dir, STORE_FILE) >= sizeof(path)) {
        zx_seterr(err, errlen, "store: data directory path too long");
        return ZX_STORE_INVALID;
    }
    s = calloc(1, sizeof(*s));
    if (!s) {
        zx_seterr(err, errlen, "store: out of memory");
        return ZX_STORE_NOMEM;
    }
    s->readonly = (flags & ZX_STORE_RDONLY) != 0;
    if (s->readonly) {
        struct stat st;
        if (stat(path, &st) != 0) {
            code = errno == ENOENT ? ZX_STORE_NOSTORE : tr(errno);
            zx_seterr(err, errlen, "store: %s: %s", path,
                   errno == ENOENT ? "does not exist yet (the writer has not created it)"
                                   : strerror(errno));
            goto fail;
        }
    }
    if ((rc = mdb_env_create(&s->env)) != 0) {
        zx_seterr(err, errlen, "store: mdb_env_create: %s", mdb_strerror(rc));
        code = tr(rc);
        goto fail;
    }
    mdb_env_set_maxdbs(s->env, DB__COUNT + 1);
    mdb_env_set_maxreaders(s->env, 512);
    /* 0 = adopt the size recorded in an existing file */
    mdb_env_set_mapsize(s->env, s->readonly ? 0
                        : (initial_mapsize ? initial_mapsize : ZX_STORE_DEFAULT_MAPSIZE));
    unsigned envflags = MDB_NOSUBDIR | MDB_NOTLS;
    if (s->readonly)
        envflags |= MDB_RDONLY;
    else if (flags & ZX_STORE_NOMETASYNC)
        envflags |= MDB_NOMETASYNC;
    rc = mdb_env_open(s->env, path, envflags, 0640);
    if (rc) {
        code = tr(rc);
        if (rc == ENOENT && !s->readonly)
            code = ZX_STORE_IO; /* the data directory itself is missing */
        zx_seterr(err, errlen, "store: %s: %s", path, mdb_strerror(rc));
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
