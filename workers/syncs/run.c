/*
 * run.c — one run of a reverse sync (run.h): read, compare, send, record.
 *
 * It must never: write the store (the writer does, from the row-hashes
 * frames), send a row-hashes frame before the destination committed, hold
 * a read transaction of the store across more than one batch, or keep the
 * whole result in memory.
 */
#include "workers/syncs/run.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/frame.h"
#include "workers/destinations/dest.h"
#include "workers/syncs/hash.h"
#include "workers/syncs/query.h"
#include "workers/syncs/spill.h"
#include "store/store.h"

#define NET_TIMEOUT_MS 30000
#define SORT_MEMORY (64u << 20)
#define STORE_BATCH 4096          /* stored keys read per read transaction */
#define SAMPLE_ROWS 5
#define HASH_FRAME_ROWS 20000

typedef struct srun {
    zx_src *rt;
    const zx_conf *conf;
    const zx_conf_pipeline *p;
    const char *name;
    uint64_t id;
    int preview, full;
    int hashed;                   /* upsert / mirror: hashes compared and kept */
    int key_changed;              /* the stored hashes are of other key columns */
    int stream;                   /* no key, types known before the first
                                     row: rows sent as they are read */
    int reseed;                   /* the types the rows were hashed with
                                     changed once all were read */
    uint64_t seed_final;          /* then: the seed of the final types */
    char *keysig;                 /* the key columns as a JSON array */
    char tmpdir[4200];

    const zx_dest *dest;
    void *dstate;
    int dest_begun;
    zx_dest_run drun;             /* the run as the destination sees it */
    zx_dest_stats dstats;

    zx_query *q;
    const zx_dcol *cols;
    size_t ncols;
    size_t key_idx[ZX_FRAME_MAX_KEY_COLUMNS];
    size_t nkeys;
    uint64_t seed;

    zx_store *store;
    zx_spill_budget budget;       /* max_spill_bytes, every spill together */
    zx_spill rows, hashes, deletes;
    zx_keysort *keys;

    zx_rowset rs, send;
    zx_value *vals;
    zx_buf scratch, kv, rec;
    zx_buf fb;

    uint64_t read, inserted, updated, unchanged, deleted, to_send, sent, dup_keys;
    uint64_t ordinal;             /* sending: the result row the batch starts at */
    unsigned char *marks;         /* upsert/mirror: bit i set = row i of the
                                     result (in read order) is to be sent */
    size_t marks_bytes;
    json_t *sample, *sample_deletes, *dups;
    int64_t started_ms, last_status_ms;
    const char *phase;
    int64_t phase_at, phase_ms[4];    /* time in reading, comparing, sending,
                                         recording */
    char err[1024];
} srun;

/* ---- status ------------------------------------------------------------- */

static void put_status(srun *r, const char *state)
{
    int64_t now = zx_mono_ms();
    double secs = (double)(now - r->started_ms) / 1000.0;
    uint64_t done = !strcmp(r->phase, "sending") ? r->sent : r->read;
    double rate = secs > 0.05 ? (double)done / secs : 0;
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}",
                          "run", "", "state", state, "phase", r->phase,
                          "rows_read", (json_int_t)r->read,
                          "rows_inserted", (json_int_t)r->inserted,
                          "rows_updated", (json_int_t)r->updated,
                          "rows_unchanged", (json_int_t)r->unchanged,
                          "rows_deleted", (json_int_t)r->deleted,
                          "rows_sent", (json_int_t)r->sent,
                          "rows_failed", (json_int_t)(strcmp(state, "failed") ? 0
                                                      : r->to_send),
                          "values_nulled", (json_int_t)r->dstats.nulled,
                          "bytes", (json_int_t)r->dstats.bytes,
                          "rows_per_second", rate);
    if (!o)
        return;
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)r->id);
    json_object_set_new(o, "run", json_string(id));
    json_object_set_new(o, "mode", json_string(r->p->mode == ZX_MODE_REPLACE ? "replace"
                                               : r->p->mode == ZX_MODE_APPEND ? "append"
                                               : r->p->mode == ZX_MODE_UPSERT ? "upsert"
                                               : "mirror"));
    if (!strcmp(state, "running") && !strcmp(r->phase, "sending") && rate > 0 &&
        r->to_send > r->sent)
        json_object_set_new(o, "seconds_left",
                            json_real((double)(r->to_send - r->sent) / rate));
    if (!strcmp(state, "running") && !strcmp(r->phase, "sending"))
        json_object_set_new(o, "rows_to_send", json_integer((json_int_t)r->to_send));
    if (r->err[0])
        json_object_set_new(o, "error", json_string(r->err));
    if (r->key_changed)
        json_object_set_new(o, "note", json_string("the key columns changed since the last "
                                                   "run: every row was sent, and rows of "
                                                   "the old keys were not deleted (a run in "
                                                   "replace mode drops them)"));
    if (!strcmp(state, "previewed")) {
        json_object_set(o, "sample", r->sample ? r->sample : json_array());
        json_object_set(o, "sample_deletes", r->sample_deletes ? r->sample_deletes
                                                                : json_array());
    }
    char *js = json_dumps(o, JSON_COMPACT);
    if (js && strlen(js) >= ZX_SEG_SOURCE_STATUS_MAX) {
        /* too big for the segment (a wide sample): drop the sample */
        json_object_del(o, "sample");
        json_object_del(o, "sample_deletes");
        free(js);
        js = json_dumps(o, JSON_COMPACT);
    }
    if (js)
        zx_src_set_status(r->rt, js);
    free(js);
    json_decref(o);
    r->last_status_ms = now;
}

/* Enter phase ph ("reading", "comparing", "sending", "recording"): the
 * time spent in each is logged when the run ends. */
static void set_phase(srun *r, const char *ph)
{
    int64_t now = zx_mono_ms();
    static const char *const names[] = {"reading", "comparing", "sending", "recording"};
    for (int i = 0; i < 4; i++)
        if (r->phase && !strcmp(r->phase, names[i]))
            r->phase_ms[i] += now - r->phase_at;
    r->phase = ph;
    r->phase_at = now;
}

static void progress(srun *r)
{
    if (zx_mono_ms() - r->last_status_ms >= 500)
        put_status(r, "running");
}

/* ---- the destination ---------------------------------------------------- */

static int open_dest(srun *r)
{
    const zx_conf_pipeline *p = r->p;
    const char *kind = p->dest_conn ? p->dest_conn->kind : "files";
    r->dest = zx_dest_find(kind);
    if (!r->dest)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: destination %s is not available "
                         "in this build", r->name, kind);
    if (p->mode == ZX_MODE_MIRROR && !(r->dest->caps & ZX_DEST_DELETES))
        return zx_seterr(r->err, sizeof(r->err), "sync %s: destination %s cannot delete "
                         "rows: mode mirror needs it (use upsert)", r->name, kind);
    if (r->preview)
        return 0;
    char exports[ZX_CONF_EXPORTS_MAX];
    const char *roots[64];
    size_t nroots = zx_conf_file_roots(r->conf, exports, sizeof(exports), roots, 64);
    zx_dest_args a = {
        .conf = r->conf, .sync = r->name, .conn = p->dest_conn, .table = p->dest_table,
        .path = p->dest_path, .format = p->dest_format, .compression = p->dest_compression,
        .roots = roots, .nroots = nroots, .deadline_ms = NET_TIMEOUT_MS,
    };
    return r->dest->open(&a, &r->dstate, r->err, sizeof(r->err));
}

/* ---- pass 1: read and compare ------------------------------------------- */

static int deliver_begin(srun *r);
static int dest_write(srun *r, const zx_rowset *rs);

static int find_keys(srun *r)
{
    for (size_t k = 0; k < r->p->nkey_cols; k++) {
        size_t i;
        for (i = 0; i < r->ncols && strcmp(r->cols[i].name, r->p->key_cols[k]); i++)
            ;
        if (i == r->ncols) {
            char list[512];
            size_t off = 0;
            list[0] = 0;
            for (size_t j = 0; j < r->ncols && off < sizeof(list); j++)
                off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", j ? ", " : "",
                                        r->cols[j].name);
            return zx_seterr(r->err, sizeof(r->err), "sync %s: key column %s is not in the "
                             "query's result (its columns: %s)", r->name, r->p->key_cols[k],
                             list);
        }
        r->key_idx[r->nkeys++] = i;
    }
    return 0;
}

/* The row as a JSON object, for a preview's sample. */
static json_t *row_json(srun *r, const zx_value *vals)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < r->ncols; i++) {
        const zx_value *v = &vals[i];
        json_t *j;
        switch (v->type) {
        case ZX_T_INT: j = json_integer(v->u.i); break;
        case ZX_T_REAL: j = json_real(v->u.d); break;
        case ZX_T_BOOL: j = json_boolean(v->u.b); break;
        case ZX_T_TEXT: case ZX_T_TIMESTAMP: case ZX_T_JSON:
            j = json_stringn_nocheck(v->s, v->len > 200 ? 200 : v->len);
            break;
        default: j = json_null();
        }
        json_object_set_new(o, r->cols[i].name, j);
    }
    return o;
}

/* Copy row vals into r->send (strings into its arena). */
static int copy_row(srun *r, const zx_value *vals)
{
    if (zx_rowset_begin_row(&r->send) < 0)
        return -1;
    for (size_t i = 0; i < r->ncols; i++) {
        zx_value v = vals[i];
        if (v.type == ZX_T_NULL)
            continue;
        if (v.s && !(v.s = zx_rowset_strdup(&r->send, v.s, v.len)))
            return -1;
        if (zx_rowset_add(&r->send, (uint32_t)i, &v) < 0)
            return -1;
    }
    zx_rowset_end_row(&r->send);
    return 0;
}

/* Spill one rowset of rows to send as a frame record. */
static int spill_rows(srun *r, const zx_rowset *rs)
{
    if (!rs->nrows)
        return 0;
    zx_frame_meta m = {0};
    m.kind = ZX_FRAME_ROWS;
    zx_buf_reset(&r->fb);
    if (zx_frame_encode(&m, rs, &r->fb) < 0 ||
        zx_spill_put(&r->rows, r->fb.p, r->fb.len, NULL, 0) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot keep the rows to send in "
                         "%s: %s", r->name, r->tmpdir, strerror(errno));
    return 0;
}

/* What the key sorter keeps of a row (after its key hash): its row hash
 * and its place in the result, then its key as JSON. */
typedef struct keyrec {
    uint64_t rh;
    uint64_t ordinal;
} keyrec;

/* One batch read: every row's key (and row hash) to the sorter, the
 * batch to the rows spill.  Which rows are sent is decided once all keys
 * are sorted (merge_keys), without a lookup per row. */
static int read_batch(srun *r)
{
    zx_buf *pl = &r->kv;
    for (uint32_t i = 0; i < r->rs.nrows; i++) {
        uint64_t ordinal = r->read++;
        if (!r->nkeys)
            continue;
        zx_rowset_row(&r->rs, i, r->vals);
        unsigned char kh[ZX_SYNC_KEYHASH_LEN];
        for (size_t k = 0; k < r->nkeys; k++)
            if (r->vals[r->key_idx[k]].type == ZX_T_NULL)
                return zx_seterr(r->err, sizeof(r->err), "sync %s: row %llu of the result "
                                 "has no value in key column %s: a key must not be NULL",
                                 r->name, (unsigned long long)r->read,
                                 r->cols[r->key_idx[k]].name);
        keyrec kr = {0, ordinal};
        if (r->hashed && zx_sync_row_hash(r->vals, r->ncols, r->seed, &r->scratch, &kr.rh) < 0)
            goto oom;
        pl->len = 0;
        if (zx_buf_put(pl, &kr, sizeof(kr)) < 0 ||
            zx_sync_key_hash(r->vals, r->key_idx, r->nkeys, &r->scratch, kh) < 0 ||
            zx_sync_key_json(r->vals, r->key_idx, r->nkeys, pl) < 0)
            goto oom;
        if (zx_keysort_add(r->keys, kh, pl->p, pl->len, r->err, sizeof(r->err)) < 0)
            return -1;
    }
    if (r->preview && !r->hashed) {
        /* every row would be sent: sample, keep nothing */
        for (uint32_t i = 0; i < r->rs.nrows && json_array_size(r->sample) < SAMPLE_ROWS; i++) {
            zx_rowset_row(&r->rs, i, r->vals);
            json_array_append_new(r->sample, row_json(r, r->vals));
        }
        return 0;
    }
    return spill_rows(r, &r->rs);
oom:
    return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
}

static int mark(srun *r, uint64_t ordinal)
{
    size_t byte = (size_t)(ordinal / 8);
    if (byte >= r->marks_bytes) {
        size_t n = r->marks_bytes ? r->marks_bytes : 4096;
        while (n <= byte)
            n *= 2;
        unsigned char *m = realloc(r->marks, n);
        if (!m)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
        memset(m + r->marks_bytes, 0, n - r->marks_bytes);
        r->marks = m;
        r->marks_bytes = n;
    }
    r->marks[byte] |= (unsigned char)(1u << (ordinal % 8));
    return 0;
}

static int marked(const srun *r, uint64_t ordinal)
{
    size_t byte = (size_t)(ordinal / 8);
    return byte < r->marks_bytes && (r->marks[byte] >> (ordinal % 8) & 1);
}

/* The key columns as a JSON array (r->keysig), and whether the stored
 * hashes were made with other ones: then they say nothing of this key's
 * rows (every row is sent, as with --full) and a mirror cannot tell which
 * rows of the old keys to delete (it deletes none; the writer forgets the
 * old hashes with the first new ones). */
static int key_signature(srun *r)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < r->p->nkey_cols; i++)
        json_array_append_new(arr, json_string(r->p->key_cols[i]));
    r->keysig = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_decref(arr);
    if (!r->keysig)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    zx_store_txn *t = NULL;
    if (!r->store || zx_store_begin(r->store, 1, &t) != 0)
        return 0;
    const void *old = NULL;
    size_t len = 0;
    if (zx_store_state_get(t, r->name, "key_cols", &old, &len) == 0 &&
        (len != strlen(r->keysig) || memcmp(old, r->keysig, len))) {
        r->key_changed = 1;
        r->full = 1;
        zx_warn("event=sync_key_changed sync=%s was=\"%.*s\" now=\"%s\" action=\"every row "
                "is sent; rows of the old keys are not deleted\"", r->name,
                (int)(len > 200 ? 200 : len), (const char *)old, r->keysig);
    }
    zx_store_abort(t);
    return 0;
}

static int stop_asked(void *rt)
{
    return zx_src_stopping(rt);
}

/* The result read to its end: its columns take their final types (the
 * destination makes its table, a file its schema, from these).  Row
 * hashes were made with the seed of the types known at the start; when
 * the final ones differ, each is hashed again with theirs (rk_next), so
 * that a type that changes between runs sends every row again, as it
 * always has. */
static void final_types(srun *r)
{
    size_t n = 0;
    const zx_dcol *qc = zx_query_columns(r->q, &n);
    zx_dcol *own = (zx_dcol *)r->cols;
    for (size_t i = 0; i < n && i < r->ncols; i++) {
        if (own[i].type != qc[i].type)
            zx_debug("event=sync_column_type sync=%s column=\"%s\" type=%s was=%s",
                     r->name, own[i].name, zx_dtype_name(qc[i].type),
                     zx_dtype_name(own[i].type));
        own[i].type = qc[i].type;
        own[i].precision = qc[i].precision;
        own[i].scale = qc[i].scale;
    }
    r->seed_final = zx_sync_columns_seed(r->cols, r->ncols);
    r->reseed = r->seed_final != r->seed;
}

static int read_result(srun *r)
{
    set_phase(r, "reading");
    put_status(r, "running");   /* a long query shows as one */
    zx_query_limits lim = {
        .connect_timeout_ms = NET_TIMEOUT_MS,
        .query_timeout_ms = r->p->query_timeout_ms ? r->p->query_timeout_ms
                                                   : r->conf->sync_query_timeout_ms,
        .stopping = stop_asked, .ctx = r->rt,
    };
    if (zx_query_open(r->conf, r->name, r->p->auth, r->p->query, &lim, &r->q, r->err,
                      sizeof(r->err)) < 0)
        return -1;
    /* the columns outlive the query (closed before sending): a copy */
    const zx_dcol *qc = zx_query_columns(r->q, &r->ncols);
    zx_dcol *own = calloc(r->ncols, sizeof(*own));
    if (!own || !(r->vals = calloc(r->ncols, sizeof(*r->vals)))) {
        free(own);
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    }
    r->cols = own;
    for (size_t i = 0; i < r->ncols; i++) {
        own[i] = qc[i];
        if (!(own[i].name = strdup(qc[i].name)))
            return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    }
    if (find_keys(r) < 0)
        return -1;
    /* SQLite: the types come from every row (query.h), so nothing may be
     * sent, nor a table made, before the last one is read: the rows are
     * kept in the spill like those of a keyed run */
    if (r->stream && !zx_query_types_known(r->q))
        r->stream = 0;
    r->seed = zx_sync_columns_seed(r->cols, r->ncols);
    if (r->nkeys && !(r->keys = zx_keysort_new(r->tmpdir, SORT_MEMORY, &r->budget)))
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    if (r->hashed) {
        char serr[256];
        int rc = zx_store_open(r->conf->data_dir, ZX_STORE_RDONLY, 0, &r->store, serr,
                               sizeof(serr));
        if (rc && rc != ZX_STORE_NOSTORE)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: %s", r->name, serr);
        if (key_signature(r) < 0)
            return -1;
    }
    for (;;) {
        if (zx_src_stopping(r->rt))
            return zx_seterr(r->err, sizeof(r->err), "sync %s: stopped while reading the "
                             "result (zxd is stopping or the run was cancelled)", r->name);
        int64_t n = zx_query_next(r->q, &r->rs, r->p->batch_rows, r->err, sizeof(r->err));
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        if (r->stream) {
            /* no key: nothing to compare, nothing to refuse; the rows go
             * straight to the destination, in its transaction */
            r->read += r->rs.nrows;
            if ((!r->dest_begun && deliver_begin(r) < 0) ||
                dest_write(r, &r->rs) < 0)
                return -1;
            r->sent += r->rs.nrows;
        } else if (read_batch(r) < 0) {
            return -1;
        }
        progress(r);
    }
    final_types(r);
    zx_query_close(r->q);   /* the snapshot is let go before sending */
    r->q = NULL;
    if (!r->hashed)
        r->to_send = r->read;   /* every row (upsert, mirror: merge_keys decides) */
    return 0;
}

/* ---- pass 2: duplicates, changes and deletes ---------------------------- */

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
    if (zx_spill_put(&r->deletes, kv, kvlen, NULL, 0) < 0 ||
        zx_spill_put(&r->hashes, kh, ZX_SYNC_KEYHASH_LEN, NULL, 0) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot keep the deletes in %s: %s",
                         r->name, r->tmpdir, strerror(errno));
    return 0;
}

/* Row k of the result is new or changed: send it, record its hash. */
static int add_change(srun *r, const rkeys *k)
{
    unsigned char hrec[ZX_SYNC_KEYHASH_LEN + 8];
    memcpy(hrec, k->kh, ZX_SYNC_KEYHASH_LEN);
    memcpy(hrec + ZX_SYNC_KEYHASH_LEN, &k->kr.rh, 8);
    if (mark(r, k->kr.ordinal) < 0)
        return -1;
    if (!r->preview && zx_spill_put(&r->hashes, hrec, sizeof(hrec), k->kv, k->kvlen) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot keep the row hashes in "
                         "%s: %s", r->name, r->tmpdir, strerror(errno));
    return 0;
}

/* Both sorted by key hash: the result's keys and (upsert, mirror) the
 * stored ones, merged in one pass: a key twice in the result is a
 * duplicate; a result key that is not stored, or stored with another row
 * hash, is a change to send; a stored key that is not in the result is a
 * delete (mirror).  The hashes to record come out in key order, which is
 * how the writer puts them fastest. */
static int merge_keys(srun *r)
{
    if (!r->keys)
        return 0;
    if (zx_keysort_finish(r->keys, r->err, sizeof(r->err)) < 0)
        return -1;
    set_phase(r, "comparing");
    rkeys k = {r, NULL, {0, 0}, NULL, 0, {0}, 0, 0};
    sstream st = {0};
    st.r = r;
    int mirror = r->p->mode == ZX_MODE_MIRROR;
    /* hashes of another key say nothing of this one's rows */
    int use_store = r->hashed && r->store && !r->key_changed;
    st.ended = !use_store;
    if (use_store && !(st.v = calloc(STORE_BATCH, sizeof(*st.v))))
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    int rc = rk_next(&k);
    uint64_t n = 0;
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
                rc = add_change(r, &k);
            }
            if (match)
                st.at++;
        }
        if (rc == 0)
            rc = rk_next(&k);
        if (++n % 65536 == 0)
            progress(r);
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
                  "(%s...): %s%s; nothing was sent", r->name, (unsigned long long)r->dup_keys,
                  r->dup_keys > 1 ? "s" : "", r->p->key_cols[0], list ? list : "?",
                  r->dup_keys > 5 ? " and more" : "");
        free(list);
        return -1;
    }
    return 0;
}

/* ---- pass 3: send ------------------------------------------------------- */

static int send_deletes(srun *r)
{
    zx_rowset keys;
    zx_rowset_init(&keys);
    int rc = 0;
    if (zx_spill_rewind(&r->deletes) < 0) {
        rc = zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read back the deletes",
                       r->name);
        goto out;
    }
    for (;;) {
        int g = zx_spill_get(&r->deletes, &r->rec);
        if (g < 0) {
            rc = zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read back the deletes",
                           r->name);
            break;
        }
        if (g == 1 &&
            zx_sync_key_from_json(r->rec.p, r->rec.len,
                                  (const char *const *)r->p->key_cols, r->p->nkey_cols, &keys,
                                  r->err, sizeof(r->err)) < 0) {
            rc = -1;
            break;
        }
        if (keys.nrows && (g == 0 || keys.nrows >= r->p->batch_rows)) {
            if (r->dest->delete_keys(r->dstate, &keys, r->err, sizeof(r->err)) < 0) {
                rc = -1;
                break;
            }
            zx_rowset_reset(&keys);
        }
        if (g == 0)
            break;
    }
out:
    zx_rowset_free(&keys);
    return rc;
}

/* Of the batch in r->rs (the next rows of the result, from r->ordinal on),
 * the rows marked to send: *out is r->rs when all are, else r->send with
 * copies of them. */
static int pick_marked(srun *r, const zx_rowset **out)
{
    uint64_t first = r->ordinal;
    uint32_t n = r->rs.nrows, count = 0;
    r->ordinal += n;
    for (uint32_t i = 0; i < n; i++)
        count += (uint32_t)marked(r, first + i);
    *out = &r->rs;
    if (count == n)
        return 0;
    if (zx_query_rs_columns(&r->send, r->cols, r->ncols) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    for (uint32_t i = 0; i < n && count; i++) {
        if (!marked(r, first + i))
            continue;
        zx_rowset_row(&r->rs, i, r->vals);
        if (copy_row(r, r->vals) < 0)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
        count--;
    }
    *out = &r->send;
    return 0;
}

/* A preview of an upsert or mirror: a sample of the rows it would send,
 * read back from the rows kept. */
static int sample_marked(srun *r)
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
            if (marked(r, r->ordinal + i)) {
                zx_rowset_row(&r->rs, i, r->vals);
                json_array_append_new(r->sample, row_json(r, r->vals));
            }
        r->ordinal += r->rs.nrows;
    }
    return 0;
}

/* Hand rs to the destination.  A value it could not hold (written as
 * NULL, dest.h) fails the run: nothing is committed and no hash is kept,
 * so once the query or the destination is fixed the next run sends the
 * row again.  0 or -1 (r->err). */
static int dest_write(srun *r, const zx_rowset *rs)
{
    uint64_t nulled = r->dstats.nulled;
    if (r->dest->write(r->dstate, rs, r->err, sizeof(r->err)) < 0)
        return -1;
    if (r->dstats.nulled == nulled)
        return 0;
    return zx_seterr(r->err, sizeof(r->err), "sync %s: column %s: the destination cannot "
                     "hold the value %s (%llu value%s in this batch), so nothing was "
                     "committed; convert it in the query (CAST, NULLIF, CASE), or give the "
                     "table's column a type that holds it", r->name,
                     r->dstats.misfit_col[0] ? r->dstats.misfit_col : "?",
                     r->dstats.misfit_val[0] ? r->dstats.misfit_val : "(unknown)",
                     (unsigned long long)(r->dstats.nulled - nulled),
                     r->dstats.nulled - nulled == 1 ? "" : "s");
}

static int deliver_begin(srun *r)
{
    set_phase(r, "sending");
    put_status(r, "running");
    /* the destination keeps it until commit or abort (dest.h) */
    r->drun = (zx_dest_run){
        .run_id = r->id, .mode = (zx_sync_mode)r->p->mode, .cols = r->cols, .ncols = r->ncols,
        .key_cols = (const char *const *)r->p->key_cols, .nkey_cols = r->p->nkey_cols,
        .rows_expected = r->to_send, .deletes_expected = r->deleted,
    };
    if (r->dest->begin(r->dstate, &r->drun, &r->dstats, r->err, sizeof(r->err)) < 0)
        return -1;
    r->dest_begun = 1;
    return 0;
}

static int deliver_end(srun *r)
{
    if (r->p->mode == ZX_MODE_MIRROR && r->deleted && send_deletes(r) < 0)
        return -1;
    if (r->dest->commit(r->dstate, r->err, sizeof(r->err)) < 0)
        return -1;
    r->dest_begun = 0;
    return 0;
}

static int deliver(srun *r)
{
    if (deliver_begin(r) < 0)
        return -1;
    if (zx_spill_rewind(&r->rows) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read back the rows to send",
                         r->name);
    for (;;) {
        if (zx_src_stopping(r->rt))
            return zx_seterr(r->err, sizeof(r->err), "sync %s: stopped while sending (zxd is "
                             "stopping or the run was cancelled); nothing was committed",
                             r->name);
        int g = zx_spill_get(&r->rows, &r->rec);
        if (g < 0)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read back the rows to "
                             "send", r->name);
        if (g == 0)
            break;
        zx_frame_meta m;
        char derr[256];
        if (zx_frame_decode(r->rec.p, r->rec.len, &m, &r->rs, derr, sizeof(derr)) < 0)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: the rows kept in %s are "
                             "damaged: %s", r->name, r->tmpdir, derr);
        /* a column without values in this batch still has its place */
        if (r->rs.ncols != r->ncols) {
            for (size_t i = r->rs.ncols; i < r->ncols; i++)
                zx_rowset_column(&r->rs, r->cols[i].name, strlen(r->cols[i].name), ZX_T_NULL);
        }
        const zx_rowset *out = &r->rs;
        if (r->hashed && pick_marked(r, &out) < 0)
            return -1;
        if (out->nrows && dest_write(r, out) < 0)
            return -1;
        r->sent += out->nrows;
        progress(r);
    }
    return deliver_end(r);
}

/* ---- pass 4: record the hashes ------------------------------------------ */

static int publish(srun *r, const zx_rowset *rs)
{
    zx_frame_meta m = {0};
    m.kind = ZX_FRAME_HASHES;
    m.table = "";
    m.key_cols = (const char *const *)r->p->key_cols;
    m.nkey_cols = r->p->nkey_cols;
    uint64_t seq;
    zx_pub_result pr = zx_src_publish(r->rt, &m, rs, &seq);
    while (pr == ZX_PUB_WAIT) {
        if (zx_src_stopping(r->rt))
            return zx_seterr(r->err, sizeof(r->err), "sync %s: stopped while recording the "
                             "row hashes; the next run sends the rest again", r->name);
        zx_src_wait(r->rt, 50);
        pr = zx_src_retry(r->rt, &seq);
    }
    if (pr != ZX_PUB_OK)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot hand the row hashes to the "
                         "writer (%s)", r->name, pr == ZX_PUB_TOO_BIG ? "frame too big"
                         : "out of memory");
    return 0;
}

static int record_hashes(srun *r)
{
    set_phase(r, "recording");
    put_status(r, "running");
    zx_rowset hs;
    zx_rowset_init(&hs);
    int rc = 0;
    int64_t ckh = -1, crh = -1, ckv = -1;
    size_t max_bytes = zx_src_max_frame(r->rt) / 4;
    if (zx_spill_rewind(&r->hashes) < 0)
        rc = -1;
    while (rc == 0) {
        int g = zx_spill_get(&r->hashes, &r->rec);
        if (g < 0) {
            rc = -1;
            break;
        }
        if (g == 1) {
            if (!hs.ncols) {
                ckh = zx_rowset_column(&hs, ZX_HASH_KH, strlen(ZX_HASH_KH), ZX_T_TEXT);
                crh = zx_rowset_column(&hs, ZX_HASH_RH, strlen(ZX_HASH_RH), ZX_T_INT);
                ckv = zx_rowset_column(&hs, ZX_HASH_KV, strlen(ZX_HASH_KV), ZX_T_TEXT);
                if (ckh < 0 || crh < 0 || ckv < 0) {
                    rc = -1;
                    break;
                }
            }
            if (r->rec.len < ZX_SYNC_KEYHASH_LEN) {
                rc = -1;
                break;
            }
            zx_value v = {0};
            if (zx_rowset_begin_row(&hs) < 0)
                goto oom;
            v.type = ZX_T_TEXT;
            v.len = ZX_SYNC_KEYHASH_LEN;
            if (!(v.s = zx_rowset_strdup(&hs, r->rec.p, ZX_SYNC_KEYHASH_LEN)) ||
                zx_rowset_add(&hs, (uint32_t)ckh, &v) < 0)
                goto oom;
            if (r->rec.len >= ZX_SYNC_KEYHASH_LEN + 8) {   /* a put; else a delete */
                uint64_t rh;
                memcpy(&rh, r->rec.p + ZX_SYNC_KEYHASH_LEN, 8);
                zx_value h = {.type = ZX_T_INT};
                h.u.i = (int64_t)rh;
                zx_value k = {.type = ZX_T_TEXT};
                k.len = (uint32_t)(r->rec.len - ZX_SYNC_KEYHASH_LEN - 8);
                if (zx_rowset_add(&hs, (uint32_t)crh, &h) < 0 ||
                    !(k.s = zx_rowset_strdup(&hs, r->rec.p + ZX_SYNC_KEYHASH_LEN + 8,
                                             k.len)) ||
                    zx_rowset_add(&hs, (uint32_t)ckv, &k) < 0)
                    goto oom;
            }
            zx_rowset_end_row(&hs);
        }
        if (hs.nrows && (g == 0 || hs.nrows >= HASH_FRAME_ROWS ||
                         zx_frame_estimate(&hs) >= max_bytes)) {
            if (publish(r, &hs) < 0)
                break;
            zx_rowset_reset(&hs);
            progress(r);
        }
        if (g == 0)
            break;
    }
    zx_rowset_free(&hs);
    if (rc < 0 && !r->err[0])
        zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read back the row hashes kept in "
                  "%s", r->name, r->tmpdir);
    return r->err[0] ? -1 : 0;
oom:
    zx_rowset_free(&hs);
    return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
}

/* ---- the worker --------------------------------------------------------- */

static void cleanup(srun *r)
{
    if (r->dest_begun && r->dest && r->dest->abort)
        r->dest->abort(r->dstate);
    r->dest_begun = 0;
    if (r->dest && r->dest->close && r->dstate)
        r->dest->close(r->dstate);
    r->dstate = NULL;
    zx_query_close(r->q);
    r->q = NULL;
    zx_store_close(r->store);
    r->store = NULL;
    zx_spill_close(&r->rows);
    zx_spill_close(&r->hashes);
    zx_spill_close(&r->deletes);
    zx_keysort_free(r->keys);
    r->keys = NULL;
}

static int sync_do(srun *r)
{
    char serr[512];
    r->budget.limit = r->p->max_spill_bytes ? r->p->max_spill_bytes
                                            : r->conf->sync_max_spill_bytes;
    if (zx_spill_open(&r->rows, r->tmpdir, &r->budget, serr, sizeof(serr)) < 0 ||
        zx_spill_open(&r->hashes, r->tmpdir, &r->budget, serr, sizeof(serr)) < 0 ||
        zx_spill_open(&r->deletes, r->tmpdir, &r->budget, serr, sizeof(serr)) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: %s", r->name, serr);
    if (!r->p->auth)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: author %s is not configured",
                         r->name, r->p->author ? r->p->author : "?");
    /* replace and append without a key: streamed, read and sent at once
     * (when the types are known before the first row: read_result) */
    r->stream = !r->preview && !r->p->nkey_cols && !r->hashed;
    if (open_dest(r) < 0 || read_result(r) < 0 || merge_keys(r) < 0)
        return -1;
    if (r->preview)
        return r->hashed ? sample_marked(r) : 0;
    if (r->stream)
        return (!r->dest_begun && deliver_begin(r) < 0) || deliver_end(r) < 0 ? -1 : 0;
    if (deliver(r) < 0)
        return -1;
    if (r->hashed && record_hashes(r) < 0)
        return -1;
    return 0;
}

static int sync_open(zx_src *rt, void **state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const zx_worker_args *a = zx_src_args(rt);
    srun *r = calloc(1, sizeof(*r));
    if (!r)
        return zx_seterr(err, errlen, "out of memory");
    r->rt = rt;
    r->conf = a->conf;
    r->p = a->pipeline;
    r->name = a->pipeline->name;
    r->id = a->run_id;
    r->preview = (a->run_flags & ZX_RUN_PREVIEW) != 0;
    r->full = (a->run_flags & ZX_RUN_FULL) != 0;
    r->hashed = (r->p->mode == ZX_MODE_UPSERT || r->p->mode == ZX_MODE_MIRROR) &&
                !(a->run_flags & ZX_RUN_ONEOFF);
    r->phase = "starting";
    r->started_ms = zx_mono_ms();
    snprintf(r->tmpdir, sizeof(r->tmpdir), "%s/tmp", a->conf->data_dir);
    zx_rowset_init(&r->rs);
    zx_rowset_init(&r->send);
    zx_buf_init(&r->fb);
    r->sample = json_array();
    r->sample_deletes = json_array();
    r->dups = json_array();
    *state = r;
    return 0;
}

static int sync_poll(zx_src *rt, void *state)
{
    (void)rt;
    srun *r = state;
    if (r->phase && !strcmp(r->phase, "done"))
        return ZX_SRC_DONE;
    int rc = sync_do(r);
    if (rc < 0 && r->budget.exceeded)
        /* whichever spill hit it, the cause is the bound */
        zx_seterr(r->err, sizeof(r->err), "sync %s: the run's temporary files reached its "
                  "max_spill_bytes (%llu bytes, in %s) after %llu rows read; nothing was "
                  "committed (raise max_spill_bytes of the sync, or "
                  "server.sync_max_spill_bytes, or narrow the query)", r->name,
                  (unsigned long long)r->budget.limit, r->tmpdir,
                  (unsigned long long)r->read);
    const char *final = rc < 0 ? "failed" : r->preview ? "previewed" : "succeeded";
    if (rc < 0 && r->dest_begun)
        r->sent = 0;   /* rolled back: nothing of it was committed */
    cleanup(r);
    set_phase(r, "done");   /* the run is over, whatever its outcome */
    if (rc < 0) {
        zx_error("event=sync_failed sync=%s run=%llu error=\"%s\"", r->name,
                 (unsigned long long)r->id, r->err);
    } else {
        zx_info("event=sync_done sync=%s run=%llu state=%s read=%llu sent=%llu deleted=%llu "
                "unchanged=%llu reading_ms=%lld comparing_ms=%lld sending_ms=%lld "
                "recording_ms=%lld", r->name, (unsigned long long)r->id, final,
                (unsigned long long)r->read, (unsigned long long)r->sent,
                (unsigned long long)r->deleted, (unsigned long long)r->unchanged,
                (long long)r->phase_ms[0], (long long)r->phase_ms[1], (long long)r->phase_ms[2],
                (long long)r->phase_ms[3]);
    }
    put_status(r, final);
    return ZX_SRC_DONE;
}

static void sync_close(zx_src *rt, void *state)
{
    (void)rt;
    srun *r = state;
    if (!r)
        return;
    cleanup(r);
    zx_rowset_free(&r->rs);
    zx_rowset_free(&r->send);
    zx_buf_free(&r->fb);
    zx_buf_free(&r->scratch);
    zx_buf_free(&r->kv);
    zx_buf_free(&r->rec);
    json_decref(r->sample);
    json_decref(r->sample_deletes);
    json_decref(r->dups);
    free(r->keysig);
    free(r->marks);
    free(r->vals);
    for (size_t i = 0; r->cols && i < r->ncols; i++)
        free((char *)r->cols[i].name);
    free((void *)r->cols);
    free(r);
}

const zx_source zx_source_sync = {
    .name = "sync",
    .flags = ZX_SOURCE_POSITIONS,   /* waits for the writer: its hashes must
                                       be the committed ones */
    .help = "one run of a reverse sync (direction: out)",
    .open = sync_open,
    .poll = sync_poll,
    .close = sync_close,
};
