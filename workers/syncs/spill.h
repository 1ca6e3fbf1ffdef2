/*
 * spill.h — a sync run's temporary files, so that a result of any size
 * runs in bounded memory (docs/architecture.md §8.2): the rows to send, the keys seen
 * (sorted in runs on disk and merged), the deletes, the hashes to record.
 *
 * A spill is written once, then read from its start.  Its file is
 * anonymous (O_TMPFILE in the folder, else made and unlinked at once): a
 * run killed at any moment leaves nothing behind.  Records are a 4-byte
 * length and the bytes; a record read back is checked against the file's
 * size (a truncated file is an error, never a crash).
 *
 * Thread safety: one thread per spill / sorter.
 */
#ifndef ZX_SYNCS_SPILL_H
#define ZX_SYNCS_SPILL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "workers/syncs/hash.h"

/* The bytes all the spills of one run may write together (a sync's
 * max_spill_bytes): shared by the spills and the sorter's runs, owned by
 * the caller, which must keep it alive as long as any of them. */
typedef struct zx_spill_budget {
    uint64_t limit;         /* 0: no bound */
    uint64_t used;          /* written so far, every spill together */
    int exceeded;           /* 1: a put was refused for the bound */
} zx_spill_budget;

typedef struct zx_spill {
    int fd;                 /* its file; open while buf is set */
    char *buf;              /* 1 MiB: writes gathered, reads ahead */
    size_t blen, bpos;      /* bytes in buf; reading: the next one to hand */
    int eof;                /* reading: the file's end was met */
    uint64_t records;       /* written */
    uint64_t bytes;         /* written */
    int reading;
    zx_spill_budget *budget;/* NULL: unbounded */
} zx_spill;

/* Open an empty spill in folder dir (made if missing), its writes counted
 * in budget (may be NULL: unbounded).  0, or -1 with err (naming the
 * folder). */
int zx_spill_open(zx_spill *s, const char *dir, zx_spill_budget *budget, char *err,
                  size_t errlen);
/* Append one record: a (alen bytes) then b (blen bytes), either may be
 * empty.  0 or -1 (errno: ENOSPC...; EFBIG when the record would take the
 * budget past its limit: then budget->exceeded is set and nothing of the
 * record is written). */
int zx_spill_put(zx_spill *s, const void *a, size_t alen, const void *b, size_t blen);
/* Start reading from the first record.  0 or -1. */
int zx_spill_rewind(zx_spill *s);
/* Read the next record into out (out->len = its length; out reused).
 * 1 one read, 0 the end, -1 an error (a truncated file, out of memory). */
int zx_spill_get(zx_spill *s, zx_buf *out);
/* Close (the file disappears).  Safe on a zeroed or closed spill. */
void zx_spill_close(zx_spill *s);

/* ---- the key sorter: (key hash, key JSON) pairs in key-hash order ----- */

#define ZX_KEYSORT_MAX_RUNS 256

typedef struct zx_keysort zx_keysort;

/* A sorter spilling to dir, holding at most mem_bytes in memory (at least
 * 1 MiB is used), its runs counted in budget (may be NULL).  NULL when out
 * of memory. */
zx_keysort *zx_keysort_new(const char *dir, size_t mem_bytes, zx_spill_budget *budget);
/* Add a key (kh: ZX_SYNC_KEYHASH_LEN bytes; kv: its JSON, kvlen bytes).
 * 0, or -1 with err (a spill that failed, too many keys for the runs). */
int zx_keysort_add(zx_keysort *k, const unsigned char *kh, const char *kv, size_t kvlen,
                   char *err, size_t errlen);
/* No more adds: prepare the merged reading.  0 or -1 with err. */
int zx_keysort_finish(zx_keysort *k, char *err, size_t errlen);
/* The next key in key-hash order (memcmp of the hashes; equal hashes come
 * one after the other): *kh and *kv valid until the next call.  1, 0 at
 * the end, -1 with err. */
int zx_keysort_next(zx_keysort *k, const unsigned char **kh, const char **kv, size_t *kvlen,
                    char *err, size_t errlen);
/* 1 when every key added is held in memory (no run was written to a
 * file), else 0.  Then, once finished, zx_keysort_rewind can read them
 * again. */
int zx_keysort_in_memory(const zx_keysort *k);
/* Read the keys again from the first, as zx_keysort_next handed them out
 * (finished, in memory only).  0, or -1 when they are not in memory or
 * not finished. */
int zx_keysort_rewind(zx_keysort *k);
/* Keys added. */
uint64_t zx_keysort_count(const zx_keysort *k);
void zx_keysort_free(zx_keysort *k);

#endif
