/*
 * run_compare.c — stage 2 of a run (run_int.h): compare.  The result's
 * keys, sorted on disk, and the stored hashes of the sync, read in
 * key-hash order in short read transactions, are merged in one pass:
 * duplicates fail the run, new or changed rows are marked to send (their
 * hashes spilled for stage 4), stored keys no longer in the result are
 * deletes (mirror).
 *
 * It must never: send anything, or write the store.
 */
#include "workers/syncs/run_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"

/* Set bit ordinal of the bitmap *bits (*nbytes long, grown zeroed). */
static int set_bit(srun *r, unsigned char **bits, size_t *nbytes, uint64_t ordinal)
{
    size_t byte = (size_t)(ordinal / 8);
    if (byte >= *nbytes) {
        size_t n = *nbytes ? *nbytes : 4096;
        while (n <= byte)
            n *= 2;
        unsigned char *m = realloc(*bits, n);
        if (!m)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
        memset(m + *nbytes, 0, n - *nbytes);
        *bits = m;
        *nbytes = n;
    }
    (*bits)[byte] |= (unsigned char)(1u << (ordinal % 8));
    return 0;
}

static int mark(srun *r, uint64_t ordinal)
{
    return set_bit(r, &r->marks, &r->marks_bytes, ordinal);
}

int run_marked(const srun *r, uint64_t ordinal)
{
    size_t byte = (size_t)(ordinal / 8);
    return byte < r->marks_bytes && (r->marks[byte] >> (ordinal % 8) & 1);
}

int run_updated(const srun *r, uint64_t ordinal)
{
    size_t byte = (size_t)(ordinal / 8);
    return byte < r->upd_bytes && (r->upd_marks[byte] >> (ordinal % 8) & 1);
}

/* The stored hashes of the sync, read in key-hash order in batches, each
 * in a short read transaction of its own. */
typedef struct stored {
    unsigned char kh[ZX_SYNC_KEYHASH_LEN];
    uint64_t rh;
    size_t kvoff, kvlen;      /* in the batch's arena */
} stored;

typedef struct sstream {
    srun *r;
    stored *v;
    size_t n, at;
    zx_buf arena;
    unsigned char last[ZX_SYNC_KEYHASH_LEN];
    int started, ended, oom;
} sstream;

static int scan_one(const unsigned char *kh, uint64_t rh, const char *kv, size_t kvlen, void *c)
{
    sstream *s = c;
    stored *e = &s->v[s->n];
    memcpy(e->kh, kh, ZX_SYNC_KEYHASH_LEN);
    e->rh = rh;
    e->kvoff = s->arena.len;
    e->kvlen = kvlen;
    if (zx_buf_put(&s->arena, kv, kvlen) < 0) {
        s->oom = 1;
        return 1;
    }
    s->n++;
    memcpy(s->last, kh, ZX_SYNC_KEYHASH_LEN);
    return 0;
}

/* The current stored key, or NULL at the end (-1 on an error: r->err). */
static int st_peek(sstream *s, stored **e)
{
    *e = NULL;
    if (s->at < s->n) {
        *e = &s->v[s->at];
        return 0;
    }
    if (s->ended)
        return 0;
    srun *r = s->r;
    zx_store_txn *t = NULL;
    size_t visited = 0;
    s->n = s->at = 0;
    s->arena.len = 0;
    int rc = zx_store_begin(r->store, 1, &t);
    if (rc == 0)
        rc = zx_store_hashes_scan(t, r->name, s->started ? s->last : NULL, STORE_BATCH,
                                  scan_one, s, &visited);
    zx_store_abort(t);
    s->started = 1;
    if (rc || s->oom)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read the stored row "
                         "hashes: %s", r->name, s->oom ? "out of memory"
                         : zx_store_strerror(rc));
    if (s->n < STORE_BATCH)
        s->ended = 1;
    if (s->n)
        *e = &s->v[0];
    return 0;
}

/* A cursor's run (upsert) reads a few keys of many stored: each is looked
 * up instead of the stored ones being scanned, STORE_BATCH lookups per
 * short read transaction.  0 and *found (*rh), or -1 (r->err). */
typedef struct lookups {
    zx_store_txn *t;
    size_t n;
} lookups;

static int lookup(srun *r, lookups *l, const unsigned char *kh, int *found, uint64_t *rh)
{
    if (l->t && l->n >= STORE_BATCH) {
        zx_store_abort(l->t);
        l->t = NULL;
    }
    int rc = l->t ? 0 : zx_store_begin(r->store, 1, &l->t);
    if (rc == 0) {
        l->n++;
        rc = zx_store_hash_get(l->t, r->name, kh, rh, NULL, NULL);
    }
    *found = rc == 0;
    if (rc == 0 || rc == ZX_STORE_NOTFOUND)
        return 0;
    return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read the stored row hashes: %s",
                     r->name, zx_store_strerror(rc));
}

/* The result's next distinct key (duplicates counted and named). */
typedef struct rkeys {
    srun *r;
    const unsigned char *kh;
    keyrec kr;
    const char *kv;
    size_t kvlen;
    unsigned char prev[ZX_SYNC_KEYHASH_LEN];
    int have, started;
} rkeys;

static int rk_next(rkeys *k)
{
    srun *r = k->r;
    for (;;) {
        const char *pl;
        size_t len;
        int g = zx_keysort_next(r->keys, &k->kh, &pl, &len, r->err, sizeof(r->err));
        if (g < 0)
            return -1;
        k->have = g;
        if (!g)
            return 0;
        if (len < sizeof(keyrec))
            return zx_seterr(r->err, sizeof(r->err), "sync %s: a sorted key is damaged",
                             r->name);
        memcpy(&k->kr, pl, sizeof(keyrec));
        if (r->reseed)
            k->kr.rh = zx_sync_row_hash_reseed(k->kr.rh, r->seed_final);
        k->kv = pl + sizeof(keyrec);
        k->kvlen = len - sizeof(keyrec);
        if (k->started && !memcmp(k->kh, k->prev, ZX_SYNC_KEYHASH_LEN)) {
            if (r->dup_keys++ < 5)
                json_array_append_new(r->dups, json_stringn_nocheck(k->kv, k->kvlen));
            continue;
        }
        k->started = 1;
        memcpy(k->prev, k->kh, ZX_SYNC_KEYHASH_LEN);
        return 0;
    }
}

static int add_delete(srun *r, const unsigned char *kh, const char *kv, size_t kvlen)
{
    r->deleted++;
    if (r->preview) {
        if (json_array_size(r->sample_deletes) < SAMPLE_ROWS) {
            json_error_t je;
            json_t *k = json_loadb(kv, kvlen, 0, &je);
            json_array_append_new(r->sample_deletes, k ? k : json_null());
        }
        return 0;
    }
    if (zx_spill_put(&r->deletes, kh, ZX_SYNC_KEYHASH_LEN, kv, kvlen) < 0 ||
        zx_spill_put(&r->hashes, kh, ZX_SYNC_KEYHASH_LEN, NULL, 0) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot keep the deletes in %s: %s",
                         r->name, r->tmpdir, strerror(errno));
    return 0;
}

/* Row k of the result is new or (upd) changed: send it, record its hash. */
static int add_change(srun *r, const rkeys *k, int upd)
{
    unsigned char hrec[ZX_SYNC_KEYHASH_LEN + sizeof(keyrec)];
    memcpy(hrec, k->kh, ZX_SYNC_KEYHASH_LEN);
    memcpy(hrec + ZX_SYNC_KEYHASH_LEN, &k->kr, sizeof(keyrec));
    if (mark(r, k->kr.ordinal) < 0 ||
        (upd && set_bit(r, &r->upd_marks, &r->upd_bytes, k->kr.ordinal) < 0))
        return -1;
    if (!r->preview && !r->hashes_from_keys &&
        zx_spill_put(&r->hashes, hrec, sizeof(hrec), k->kv, k->kvlen) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot keep the row hashes in "
                         "%s: %s", r->name, r->tmpdir, strerror(errno));
    /* mirror: a new key is recorded before it is sent (run_prerecord) */
    if (!upd && !r->preview && !r->hashes_from_keys && r->o->mode == ZX_MODE_MIRROR &&
        zx_spill_put(&r->pre, hrec, sizeof(hrec), k->kv, k->kvlen) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot keep the new keys in "
                         "%s: %s", r->name, r->tmpdir, strerror(errno));
    return 0;
}

/* Both sorted by key hash: the result's keys and (upsert, mirror) the
 * stored ones, merged in one pass: a key twice in the result is a
 * duplicate; a result key that is not stored, or stored with another row
 * hash, is a change to send; a stored key that is not in the result is a
 * delete (mirror).  The hashes to record come out in key order, which is
 * how the writer puts them fastest. */
int run_merge_keys(srun *r)
{
    if (!r->keys)
        return 0;
    if (zx_keysort_finish(r->keys, r->err, sizeof(r->err)) < 0)
        return -1;
    run_set_phase(r, "comparing");
    rkeys k = {r, NULL, {0, 0}, NULL, 0, {0}, 0, 0};
    sstream st = {0};
    st.r = r;
    int mirror = r->o->mode == ZX_MODE_MIRROR;
    /* hashes of another key say nothing of this one's rows */
    int use_store = r->hashed && r->store && !r->key_changed;
    st.ended = !use_store;
    if (use_store && !(st.v = calloc(STORE_BATCH, sizeof(*st.v))))
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    /* nothing stored (a first run; or hashes of another key): every key is
     * new, none is deleted, so the hashes to record are the sorted keys
     * themselves, read again from the sorter when recording instead of
     * copied through the hashes spill */
    if (r->hashed && !r->preview && zx_keysort_in_memory(r->keys)) {
        stored *e0 = NULL;
        if (st_peek(&st, &e0) < 0) {
            free(st.v);
            zx_buf_free(&st.arena);
            return -1;
        }
        r->hashes_from_keys = e0 == NULL;
    }
    int rc = rk_next(&k);
    uint64_t n = 0;
    /* a cursor's run: lookups, not a scan of every stored key */
    lookups lk = {NULL, 0};
    int by_lookup = use_store && !mirror && r->cursor_run;
    while (rc == 0 && by_lookup && k.have) {
        int found = 0;
        uint64_t rh = 0;
        if ((rc = lookup(r, &lk, k.kh, &found, &rh)) < 0)
            break;
        if (found && !r->full && rh == k.kr.rh) {
            r->unchanged++;
        } else {
            if (found)
                r->updated++;
            else
                r->inserted++;
            rc = add_change(r, &k, found);
        }
        if (rc == 0)
            rc = rk_next(&k);
        if (++n % 65536 == 0) {
            r->compared = n;
            run_progress(r);
        }
    }
    zx_store_abort(lk.t);
    while (rc == 0 && k.have) {
        stored *e;
        while ((rc = st_peek(&st, &e)) == 0 && e &&
               memcmp(e->kh, k.kh, ZX_SYNC_KEYHASH_LEN) < 0) {
            if (mirror && (rc = add_delete(r, e->kh, st.arena.p + e->kvoff, e->kvlen)) < 0)
                break;
            st.at++;
        }
        if (rc < 0)
            break;
        if (r->hashed) {
            int match = e && !memcmp(e->kh, k.kh, ZX_SYNC_KEYHASH_LEN);
            if (match && !r->full && e->rh == k.kr.rh) {
                r->unchanged++;
            } else {
                if (match)
                    r->updated++;
                else
                    r->inserted++;
                rc = add_change(r, &k, match);
            }
            if (match)
                st.at++;
        }
        if (rc == 0)
            rc = rk_next(&k);
        if (++n % 65536 == 0) {
            r->compared = n;
            run_progress(r);
        }
    }
    /* stored keys after the result's last */
    while (rc == 0 && mirror) {
        stored *e;
        if ((rc = st_peek(&st, &e)) < 0 || !e)
            break;
        rc = add_delete(r, e->kh, st.arena.p + e->kvoff, e->kvlen);
        st.at++;
    }
    free(st.v);
    zx_buf_free(&st.arena);
    if (rc < 0)
        return -1;
    if (r->hashed)
        r->to_send = r->inserted + r->updated;
    if (r->dup_keys) {
        char *list = json_dumps(r->dups, JSON_COMPACT);
        zx_seterr(r->err, sizeof(r->err), "sync %s: the result has %llu duplicate key%s on "
                  "(%s...): %s%s; nothing was %s", r->name, (unsigned long long)r->dup_keys,
                  r->dup_keys > 1 ? "s" : "", r->o->key_cols[0], list ? list : "?",
                  r->dup_keys > 5 ? " and more" : "",
                  r->stream_keyed ? "committed (the rows sent are rolled back)" : "sent");
        free(list);
        return -1;
    }
    return 0;
}

/* A preview of an upsert or mirror: a sample of the rows it would send,
 * read back from the rows kept. */
int run_sample_marked(srun *r)
{
    if (zx_spill_rewind(&r->rows) < 0)
        return 0;
    r->ordinal = 0;
    while (json_array_size(r->sample) < SAMPLE_ROWS) {
        int g = zx_spill_get(&r->rows, &r->rec);
        zx_frame_meta m;
        char derr[256];
        if (g <= 0 || zx_frame_decode(r->rec.p, r->rec.len, &m, &r->rs, derr,
                                      sizeof(derr)) < 0)
            break;
        for (uint32_t i = 0; i < r->rs.nrows && json_array_size(r->sample) < SAMPLE_ROWS; i++)
            if (run_marked(r, r->ordinal + i)) {
                zx_rowset_row(&r->rs, i, r->vals);
                json_array_append_new(r->sample, run_row_json(r, r->vals));
            }
        r->ordinal += r->rs.nrows;
    }
    return 0;
}
