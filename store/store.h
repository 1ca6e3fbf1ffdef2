/*
 * store.h — the LMDB store: positions, schemas, idempotency keys, counters
 * and state that must survive a restart (docs/architecture.md §4).
 *
 * Location: one LMDB environment in the single file `<data_dir>/store.lmdb`
 * (MDB_NOSUBDIR; LMDB adds the lock file `<data_dir>/store.lmdb-lock`).
 *
 * Processes: only the writer opens the store read-write (and only after it
 * has forked).  Stream workers and the supervisor open it read-only
 * (ZX_STORE_RDONLY) and keep their read transactions short.  A read-only
 * open before the writer ever created the store fails cleanly with
 * ZX_STORE_NOSTORE.
 *
 * It must never: be opened before fork() and used in the child, hold a read
 * transaction for long, or let an LMDB error code escape (they are
 * translated to ZX_STORE_* here, in store.c, and nowhere else).
 *
 * Named databases and their layouts.  "pipeline" is the pipeline name's
 * bytes without a NUL; '\0' is one zero byte; integers are in host byte
 * order (the store never leaves this host); every value starts with a
 * 32-bit layout version (currently 1) unless said otherwise.
 *
 *   positions    key: pipeline
 *                val: u32 version, u32 0, u64 seq (last applied frame),
 *                     i64 committed_us (no upstream bytes since frames
 *                     carry positions per part)
 *                key: pipeline '\0' part  (a frame's position part:
 *                     "topic:partition", a shard id...)
 *                val: u32 version, u32 0, i64 committed_us, then the
 *                     part's opaque value (the source's own bytes)
 *   schemas      key: pipeline
 *                val: table name, '\0', columns JSON as last applied
 *                     ([{"name":..,"type":..}]), '\0'  (no version word)
 *   idempotency  key: pipeline '\0' dedup-key bytes (a frame's dedup_key:
 *                     a push's Idempotency-Key)
 *                val: u32 version, u32 0, i64 created_us,
 *                     u64 hash, u64 accepted, char batch_id[40]
 *   counters     key: pipeline '\0' counter name (e.g. "rows", "rejects",
 *                     "rejects:<column>")
 *                val: u64 (no version word)
 *   hashes       reverse syncs (upsert, mirror): what the destination was
 *                last sent for each key.
 *                key: sync '\0' key hash (ZX_KEYHASH_LEN = 16 bytes, the
 *                     result's key columns hashed: workers/syncs/hash.h)
 *                val: u32 version, u32 0, u64 row hash, then the key's
 *                     values as a JSON array text (what a mirror's delete
 *                     sends when the key disappears)
 *                Replaced only after the destination committed a run,
 *                or before, while state "hashes_pending" marks them
 *                unconfirmed until it did (proto/frame.h, "Row-hashes
 *                frames").
 *   runs         reverse-sync runs, their history.
 *                key: sync '\0' run id (u64, big-endian: oldest first)
 *                val: u32 version, u32 0, then the run record, a JSON
 *                     object text (proto/control.h "runs")
 *   state        key: pipeline '\0' name   (anything else that must
 *                     survive a restart; opaque bytes)
 *
 * Keys are limited by LMDB to 511 bytes: a longer pipeline '\0' key
 * combination is refused with ZX_STORE_KEYTOOLONG (never a crash).
 *
 * Map growth (writer only): when a write fails because the map is full, the
 * call returns ZX_STORE_MAP_FULL and the transaction is dead.  The caller
 * then calls zx_store_abort(), which grows the map (doubling it), and redoes
 * the whole transaction from zx_store_begin().  If zx_store_commit() itself
 * returns ZX_STORE_MAP_FULL, the transaction is already gone and the map
 * already grown: just redo it.  The writer must not hold a read transaction
 * of its own while it writes (growing the map remaps the file).
 * Read-only handles follow a map grown by the writer transparently (at
 * zx_store_begin), which is why a handle must have at most one transaction
 * open at a time while another process may grow the map.
 *
 * Threads: one zx_store may be used by one thread at a time; a transaction
 * belongs to the thread that began it.
 */
#ifndef ZX_WRITER_STORE_H
#define ZX_WRITER_STORE_H

#include <stddef.h>
#include <stdint.h>

/* Result codes: 0 for success, otherwise one of these (a range apart from
 * errno values). */
enum {
    ZX_STORE_OK = 0,
    ZX_STORE_ERR_BASE = 12000,
    ZX_STORE_NOTFOUND = 12001,    /* no such record */
    ZX_STORE_NOSTORE = 12002,     /* read-only open: the store does not exist
                                     yet (the writer has not created it) */
    ZX_STORE_MAP_FULL = 12003,    /* map grown; redo the transaction */
    ZX_STORE_KEYTOOLONG = 12004,  /* pipeline + key over the LMDB key limit */
    ZX_STORE_INVALID = 12005,     /* bad argument (empty name, NULL...) */
    ZX_STORE_READONLY = 12006,    /* write on a read-only handle/txn */
    ZX_STORE_CORRUPT = 12007,     /* corrupted file or bad record layout */
    ZX_STORE_NOMEM = 12008,
    ZX_STORE_NOSPACE = 12009,     /* disk full */
    ZX_STORE_ACCESS = 12010,      /* permission denied */
    ZX_STORE_READERS_FULL = 12011,/* too many concurrent readers */
    ZX_STORE_IO = 12012,          /* any other system or LMDB error */
    ZX_STORE_TXN_FAILED = 12013,  /* an earlier call failed in this txn:
                                     abort it */
    ZX_STORE_ERR_END
};

/* Static message for a ZX_STORE_* code (or "unknown store error"). */
const char *zx_store_strerror(int code);

typedef struct zx_store zx_store;
typedef struct zx_store_txn zx_store_txn;

#define ZX_STORE_RDONLY 0x1u
/* Read-write only: a commit syncs the data pages to disk but not the meta
 * page (LMDB's MDB_NOMETASYNC; the next commit's sync carries it): one
 * sync per commit instead of two.  A system crash or power loss (never a
 * process crash) may then undo the last committed transaction; the store
 * is never corrupted.  The writer uses it with the workspace's
 * `synchronous: normal`, whose last commits a power loss may undo too. */
#define ZX_STORE_NOMETASYNC 0x2u

/* Default initial map size of a newly created store (read-write). */
#define ZX_STORE_DEFAULT_MAPSIZE ((size_t)256 * 1024 * 1024)

/* Open the store in data_dir (which must exist).
 * flags: ZX_STORE_RDONLY, or 0 / ZX_STORE_NOMETASYNC (read-write: creates
 * the file, mode 0640 less the umask, and every named database if
 * missing).  initial_mapsize: 0 for the default; a read-write
 * open uses it as the map size (at least the data already in the file; it
 * is mainly there to let tests force map growth); read-only opens ignore it.
 * On success stores the handle in *out and returns 0.  On failure returns a
 * ZX_STORE_* code (ZX_STORE_NOSTORE when a read-only open finds no store)
 * and writes a message naming the path into err (if errlen > 0). */
int zx_store_open(const char *data_dir, unsigned flags, size_t initial_mapsize,
                  zx_store **out, char *err, size_t errlen);

/* Close the handle.  No transaction may be open.  NULL is a no-op. */
void zx_store_close(zx_store *s);

/* Current map size in bytes (for tests and metrics). */
size_t zx_store_mapsize(zx_store *s);

/* Begin a transaction (readonly != 0 for a read transaction; a read-only
 * handle only allows read transactions: ZX_STORE_READONLY otherwise).
 * Only one write transaction at a time.  Returns 0 and *t, or a code. */
int zx_store_begin(zx_store *s, int readonly, zx_store_txn **t);

/* Commit and free t.  Returns 0 or a code; t is freed in every case.
 * ZX_STORE_MAP_FULL: the map has been grown, redo the transaction.
 * A transaction in which a call failed is aborted and returns
 * ZX_STORE_TXN_FAILED (or the original code). */
int zx_store_commit(zx_store_txn *t);

/* Abort and free t (grows the map when a call returned ZX_STORE_MAP_FULL).
 * NULL is a no-op. */
void zx_store_abort(zx_store_txn *t);

/* Every put/get below returns 0 or a ZX_STORE_* code.  Pointers returned
 * by a get point into the map: valid until the next write in the same
 * transaction or the end of the transaction, whichever comes first.
 * "pipeline" is a non-empty NUL-terminated name. */

typedef struct zx_position {
    uint64_t seq;           /* last applied frame sequence number */
    int64_t committed_us;   /* when it was committed, µs since the epoch */
    const void *upstream;   /* opaque upstream position (may be NULL/0) */
    size_t upstream_len;
} zx_position;

int zx_store_position_put(zx_store_txn *t, const char *pipeline, const zx_position *p);
/* ZX_STORE_NOTFOUND when the pipeline has no position yet. */
int zx_store_position_get(zx_store_txn *t, const char *pipeline, zx_position *p);

/* One part of the pipeline's upstream position: the value of `part`
 * (non-empty, NUL-terminated) as of committed_us. */
int zx_store_position_part_put(zx_store_txn *t, const char *pipeline, const char *part,
                               const void *val, size_t len, int64_t committed_us);
/* Call cb for every part of the pipeline, in part order (bytes); part is a
 * NUL-terminated copy and val points into the map, both valid during the
 * call.  A non-zero return from cb stops the walk and is returned. */
typedef int (*zx_store_position_cb)(const char *part, const void *val, size_t len, void *ctx);
int zx_store_positions_each(zx_store_txn *t, const char *pipeline, zx_store_position_cb cb,
                            void *ctx);

/* table and json are NUL-terminated; json is the columns as last applied. */
int zx_store_schema_put(zx_store_txn *t, const char *pipeline, const char *table,
                        const char *json);
/* Any output pointer may be NULL.  ZX_STORE_NOTFOUND if none stored. */
int zx_store_schema_get(zx_store_txn *t, const char *pipeline, const char **table,
                        const char **json, size_t *json_len);

/* What the writer records for a frame's dedup key: enough for the source
 * to answer a batch given again as it answered the first. */
typedef struct zx_idem_rec {
    int64_t created_us;     /* when the key was first committed */
    uint64_t body_hash;     /* the frame's dedup_hash */
    uint64_t accepted;      /* rows the batch counted */
    char request_id[40];    /* the frame's batch_id, NUL-terminated
                               (truncated to 39 bytes) */
} zx_idem_rec;

/* key: keylen bytes (1 .. about 500 minus the pipeline name; any bytes). */
int zx_store_idem_put(zx_store_txn *t, const char *pipeline, const char *key,
                      size_t keylen, const zx_idem_rec *r);
/* Copies the record into *r.  ZX_STORE_NOTFOUND if absent. */
int zx_store_idem_get(zx_store_txn *t, const char *pipeline, const char *key,
                      size_t keylen, zx_idem_rec *r);
/* Delete idempotency records (all pipelines) created before older_than_us.
 * Bounded work: examines at most max_scan records per call (0 = no bound),
 * resuming where the previous call on this handle stopped and wrapping
 * around at the end; adds the number deleted to *removed (may be NULL).
 * Write transaction only. */
int zx_store_idem_prune(zx_store_txn *t, int64_t older_than_us, size_t max_scan,
                        uint64_t *removed);
/* Number of idempotency records of the pipeline (a range scan: O(n)). */
uint64_t zx_store_idem_count(zx_store_txn *t, const char *pipeline);

/* Add delta to a counter (created at 0; wraps modulo 2^64). */
int zx_store_counter_add(zx_store_txn *t, const char *pipeline, const char *name,
                         uint64_t delta);
/* *v = 0 and ZX_STORE_NOTFOUND if the counter does not exist. */
int zx_store_counter_get(zx_store_txn *t, const char *pipeline, const char *name,
                         uint64_t *v);
/* Call cb for each counter of the pipeline in name order; name is a
 * NUL-terminated copy valid during the call.  A non-zero return from cb
 * stops the walk and is returned. */
int zx_store_counters_each(zx_store_txn *t, const char *pipeline,
                           int (*cb)(const char *name, uint64_t v, void *ctx), void *ctx);

/* State: opaque bytes under pipeline '\0' name.  get: *val points into the
 * map (validity as above). */
int zx_store_state_put(zx_store_txn *t, const char *pipeline, const char *name,
                       const void *val, size_t len);
int zx_store_state_get(zx_store_txn *t, const char *pipeline, const char *name,
                       const void **val, size_t *len);
/* Delete the state record (absent: 0 too).  0 or a ZX_STORE_* code. */
int zx_store_state_del(zx_store_txn *t, const char *pipeline, const char *name);
/* 0 when pipeline has a state record whose name starts with prefix,
 * ZX_STORE_NOTFOUND when not, or another ZX_STORE_* code. */
int zx_store_state_any(zx_store_txn *t, const char *pipeline, const char *prefix);
/* Visit at most max_scan state records of pipeline whose names start with
 * prefix, in name order, from the first name at or after `from` ("": from
 * the start), and delete those for which expired(val, len, ctx) returns
 * 1.  next (nextcap bytes, at least 256) receives the first name not
 * visited, to resume from ("" when the walk reached the end of the
 * prefix).  *removed += records deleted.  0 or a ZX_STORE_* code (a write
 * transaction is needed). */
int zx_store_state_sweep(zx_store_txn *t, const char *pipeline, const char *prefix,
                         const char *from, size_t max_scan,
                         int (*expired)(const void *val, size_t len, void *ctx), void *ctx,
                         char *next, size_t nextcap, uint64_t *removed);

/* ---- reverse syncs: row hashes and runs (store_syncs.c) ------------- */

#define ZX_KEYHASH_LEN 16

/* Put the hash record of key kh (ZX_KEYHASH_LEN bytes) of sync.  kv: the
 * key's JSON array text (kvlen bytes, may be 0). */
int zx_store_hash_put(zx_store_txn *t, const char *sync, const unsigned char *kh,
                      uint64_t row_hash, const char *kv, size_t kvlen);
/* Delete it; 0 also when there was none. */
int zx_store_hash_del(zx_store_txn *t, const char *sync, const unsigned char *kh);
/* One hash record of zx_store_hashes_write. */
typedef struct zx_store_hash_rec {
    unsigned char kh[ZX_KEYHASH_LEN];
    uint64_t row_hash;
    int del;                    /* forget the key (row_hash, kv ignored) */
    const char *kv;             /* the key's JSON (kvlen bytes; NULL if 0) */
    size_t kvlen;
} zx_store_hash_rec;
/* Put (or delete) n hash records of sync, in the order given, through one
 * LMDB cursor: a key that follows the last one put lands without a search
 * from the root (a run's keys come in key-hash order), where a put each
 * searches the whole tree.  0 or a ZX_STORE_* code (INVALID: a kv NULL
 * with a length; the transaction is then failed for other codes). */
int zx_store_hashes_write(zx_store_txn *t, const char *sync, const zx_store_hash_rec *recs,
                          size_t n);
/* *row_hash (and *kv, *kvlen into the map; either may be NULL) of key kh.
 * ZX_STORE_NOTFOUND when absent. */
int zx_store_hash_get(zx_store_txn *t, const char *sync, const unsigned char *kh,
                      uint64_t *row_hash, const char **kv, size_t *kvlen);
/* Visit the hash records of sync in key-hash order (bytes), starting after
 * key hash `after` (NULL: from the first), at most max records (0: no
 * bound).  cb gets the key hash, the row hash and the key's JSON (valid
 * during the call); a non-zero return stops the walk and is returned.
 * *visited (may be NULL) = records passed to cb. */
typedef int (*zx_store_hash_cb)(const unsigned char *kh, uint64_t row_hash, const char *kv,
                                size_t kvlen, void *ctx);
int zx_store_hashes_scan(zx_store_txn *t, const char *sync, const unsigned char *after,
                         size_t max, zx_store_hash_cb cb, void *ctx, size_t *visited);
/* Delete every hash record of sync. */
int zx_store_hashes_clear(zx_store_txn *t, const char *sync);
/* Number of hash records of sync (a range scan: O(n)). */
uint64_t zx_store_hashes_count(zx_store_txn *t, const char *sync);

/* Put run `id` of sync: its record, a JSON object text of len bytes. */
int zx_store_run_put(zx_store_txn *t, const char *sync, uint64_t id, const char *json,
                     size_t len);
/* Visit the runs of sync (NULL: of every sync) newest first: cb gets the
 * sync name (NUL-terminated copy), the id and the JSON (in the map), valid
 * during the call.  Non-zero from cb stops and is returned. */
typedef int (*zx_store_run_cb)(const char *sync, uint64_t id, const char *json, size_t len,
                               void *ctx);
int zx_store_runs_each(zx_store_txn *t, const char *sync, zx_store_run_cb cb, void *ctx);
/* Keep only the newest `keep` runs of sync; *removed (may be NULL) += the
 * records deleted. */
int zx_store_runs_prune(zx_store_txn *t, const char *sync, size_t keep, uint64_t *removed);

/* Remove everything stored for the pipeline in every named database.
 * 0 even when there was nothing. */
int zx_store_pipeline_drop(zx_store_txn *t, const char *pipeline);

#endif
