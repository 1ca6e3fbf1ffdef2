/*
 * run_record.c — stage 4 of a run (run_int.h): record.  Once the
 * destination committed, the new hashes (and the deleted keys) are read
 * back from their spill and handed to the writer in row-hashes frames
 * through the worker runtime (workers/sources/source.h); the writer keeps
 * them in the store.
 *
 * It must never: run before the destination committed.
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

/* rs as a row-hashes frame; pos (NULL: none) the cursor's mark, with the
 * run's last frame (run_cursor.c); confirm: the frame confirms the run's
 * unconfirmed hashes ("hc"), else it carries "hp" while r->unconfirmed. */
static int publish(srun *r, const zx_rowset *rs, const zx_frame_pos *pos, int confirm)
{
    zx_frame_meta m = {0};
    m.kind = ZX_FRAME_HASHES;
    if (confirm)
        m.hashes_confirm = r->unconfirmed;
    else if (!r->prerecording)
        m.hashes_pending = r->unconfirmed;
    m.table = "";
    m.key_cols = (const char *const *)r->o->key_cols;
    m.nkey_cols = r->o->nkey_cols;
    m.positions = pos;
    m.npositions = pos ? 1 : 0;
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

/* The next record to hand over into r->rec: the key hash, then for a put
 * its keyrec (row hash, ordinal) and the key's JSON (a delete: the key
 * hash alone).  From
 * the hashes spill, or (hashes_from_keys) from the sorted keys: each
 * distinct key (a duplicate fails the run before this), its row hash as
 * compare saw it.  1, 0 at the end, -1 (r->err set for the sorter). */
static int next_record(srun *r, unsigned char prev[ZX_SYNC_KEYHASH_LEN], int *started)
{
    if (r->prerecording && !r->hashes_from_keys)
        return zx_spill_get(&r->pre, &r->rec);
    if (!r->hashes_from_keys)
        return zx_spill_get(&r->hashes, &r->rec);
    for (;;) {
        const unsigned char *kh;
        const char *pl;
        size_t len;
        int g = zx_keysort_next(r->keys, &kh, &pl, &len, r->err, sizeof(r->err));
        if (g <= 0)
            return g;
        if (len < sizeof(keyrec))
            return zx_seterr(r->err, sizeof(r->err), "sync %s: a sorted key is damaged",
                             r->name);
        if (*started && !memcmp(kh, prev, ZX_SYNC_KEYHASH_LEN))
            continue;
        *started = 1;
        memcpy(prev, kh, ZX_SYNC_KEYHASH_LEN);
        keyrec kr;
        memcpy(&kr, pl, sizeof(kr));
        if (r->reseed)
            kr.rh = zx_sync_row_hash_reseed(kr.rh, r->seed_final);
        size_t kvlen = len - sizeof(keyrec);
        if (zx_buf_reserve(&r->rec, ZX_SYNC_KEYHASH_LEN + sizeof(keyrec) + kvlen) < 0)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
        memcpy(r->rec.p, kh, ZX_SYNC_KEYHASH_LEN);
        memcpy(r->rec.p + ZX_SYNC_KEYHASH_LEN, &kr, sizeof(keyrec));
        memcpy(r->rec.p + ZX_SYNC_KEYHASH_LEN + sizeof(keyrec), pl + sizeof(keyrec), kvlen);
        r->rec.len = ZX_SYNC_KEYHASH_LEN + sizeof(keyrec) + kvlen;
        return 1;
    }
}

int run_prerecord(srun *r)
{
    r->prerecording = 1;
    int rc = run_record_hashes(r);
    r->prerecording = 0;
    if (rc < 0)
        return -1;
    /* committed by the writer before anything is sent */
    while (zx_src_acked_seq(r->rt) < zx_src_published_seq(r->rt)) {
        if (zx_src_stopping(r->rt))
            return zx_seterr(r->err, sizeof(r->err), "sync %s: stopped before sending "
                             "(zxd is stopping or the run was cancelled); nothing was sent",
                             r->name);
        zx_src_wait(r->rt, 50);
    }
    return 0;
}

int run_record_hashes(srun *r)
{
    if (!r->prerecording)
        run_set_phase(r, "recording");
    run_put_status(r, "running");
    zx_rowset hs;
    zx_rowset_init(&hs);
    int rc = 0;
    int64_t ckh = -1, crh = -1, ckv = -1;
    size_t max_bytes = zx_src_max_frame(r->rt) / 4;
    unsigned char prev[ZX_SYNC_KEYHASH_LEN];
    int started = 0;
    /* the cursor's mark goes with the last frame (none: a frame of its
     * own), committed by the writer with the run's hashes */
    zx_frame_pos mark = { 0 };
    int with_mark = !r->prerecording && !r->unconfirmed && run_cursor_pos(r, &mark);
    if (r->hashes_from_keys ? zx_keysort_rewind(r->keys) < 0
        : zx_spill_rewind(r->prerecording ? &r->pre : &r->hashes) < 0)
        rc = -1;
    run_failed_sort(r);
    while (rc == 0) {
        int g = next_record(r, prev, &started);
        if (g < 0) {
            rc = -1;
            break;
        }
        const size_t put_min = ZX_SYNC_KEYHASH_LEN + sizeof(keyrec);
        if (g == 1 && r->prerecording && r->rec.len >= put_min) {
            keyrec kr;   /* sent, version unknown: 0 matches no row */
            memcpy(&kr, r->rec.p + ZX_SYNC_KEYHASH_LEN, sizeof(kr));
            kr.rh = 0;
            memcpy(r->rec.p + ZX_SYNC_KEYHASH_LEN, &kr, sizeof(kr));
        }
        if (g == 1 && r->rec.len >= ZX_SYNC_KEYHASH_LEN &&
            (r->nfailed_ord || r->nfailed_kh)) {
            /* refused by the destination: the old hash stays, so the next
             * run sends the row (or deletes the key) again */
            keyrec kr = {0, UINT64_MAX};
            if (r->rec.len >= put_min)
                memcpy(&kr, r->rec.p + ZX_SYNC_KEYHASH_LEN, sizeof(kr));
            if (run_failed(r, kr.ordinal, (const unsigned char *)r->rec.p))
                continue;
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
            if (r->rec.len >= put_min) {   /* a put; else a delete */
                keyrec kr;
                memcpy(&kr, r->rec.p + ZX_SYNC_KEYHASH_LEN, sizeof(kr));
                zx_value h = {.type = ZX_T_INT};
                h.u.i = (int64_t)kr.rh;
                zx_value k = {.type = ZX_T_TEXT};
                k.len = (uint32_t)(r->rec.len - put_min);
                if (zx_rowset_add(&hs, (uint32_t)crh, &h) < 0 ||
                    !(k.s = zx_rowset_strdup(&hs, r->rec.p + put_min, k.len)) ||
                    zx_rowset_add(&hs, (uint32_t)ckv, &k) < 0)
                    goto oom;
            }
            zx_rowset_end_row(&hs);
        }
        if (hs.nrows && (g == 0 || hs.nrows >= HASH_FRAME_ROWS ||
                         zx_frame_estimate(&hs) >= max_bytes)) {
            int last = g == 0 && with_mark;
            if (publish(r, &hs, last ? &mark : NULL, 0) < 0)
                break;
            if (last)
                with_mark = 0;
            zx_rowset_reset(&hs);
            run_progress(r);
        }
        if (g == 0)
            break;
    }
    if (rc == 0 && !r->err[0] && with_mark) {
        zx_rowset_reset(&hs);
        publish(r, &hs, &mark, 0);   /* no rows: the mark alone */
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

int run_hashes_early(const srun *r)
{
    return r->stream_keyed && r->hashed && r->o->mode == ZX_MODE_UPSERT && r->id && r->read &&
           !r->failed_over;
}

int run_confirm_hashes(srun *r)
{
    if (r->nfailed_ord + r->nfailed_kh != r->unconfirmed_failed || r->failed_over) {
        zx_warn("event=sync_hashes_unconfirmed sync=%s run=%llu action=\"the destination "
                "refused rows after the hashes were recorded: they stay unconfirmed, so the "
                "next run sends every row\"", r->name, (unsigned long long)r->id);
        return 0;
    }
    zx_rowset hs;
    zx_rowset_init(&hs);
    zx_frame_pos mark = { 0 };
    int with_mark = run_cursor_pos(r, &mark);
    int rc = publish(r, &hs, with_mark ? &mark : NULL, 1);
    zx_rowset_free(&hs);
    return rc;
}
