/*
 * store_int.h — private declarations of the LMDB store, shared by store.c
 * (environment, transactions, map growth, error translation) and
 * store_records.c (keys and record layouts of each named database).
 *
 * It must never be included outside those two files: the contract is
 * store.h, and LMDB types must not leak beyond them.
 */
#ifndef ZX_WRITER_STORE_INT_H
#define ZX_WRITER_STORE_INT_H

#include "store/store.h"

#include <lmdb.h>
#include <stddef.h>

#define STORE_FILE "store.lmdb"
#define LAYOUT_V1 1u
#define KEYBUF 512

enum { DB_POSITIONS, DB_SCHEMAS, DB_IDEM, DB_COUNTERS, DB_HASHES, DB_RUNS, DB_STATE, DB__COUNT };

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

/* Records the outcome of an LMDB call made in t and returns it as a
 * ZX_STORE_* code.  A failure other than "not found" in a write transaction
 * makes it unusable (t->failed); MDB_MAP_FULL marks the map for growth. */
int zx_store_txn_rc(zx_store_txn *t, int rc);

/* store_records.c, shared with store_syncs.c: */
/* buf = pipeline [ '\0' name ] (with_name), the key in *k.  0 or a code
 * (INVALID, KEYTOOLONG). */
int zx_store_make_key(const zx_store_txn *t, unsigned char buf[KEYBUF], const char *pipeline,
                      const void *name, size_t namelen, int with_name, MDB_val *k);
/* 0 when t may be written, else READONLY or TXN_FAILED. */
int zx_store_check_write(zx_store_txn *t);
/* Call cb for every record of db whose key is pipeline '\0' ... in key
 * order (pl: the prefix length, pipeline '\0'), or delete them all (del).
 * A non-zero cb return stops the walk and is returned. */
typedef int (*zx_store_walk_cb)(const MDB_val *k, size_t pl, const MDB_val *v, void *ctx);
int zx_store_walk_prefix(zx_store_txn *t, int db, const char *pipeline, int del,
                         zx_store_walk_cb cb, void *ctx);

#endif
