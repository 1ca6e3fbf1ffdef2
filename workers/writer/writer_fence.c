/*
 * writer_fence.c — exactly once across zxd that share one Postgres
 * workspace and read one upstream (a Kafka consumer group spread over
 * several hosts): the compare-and-set of a frame's positions.  See
 * writer_int.h (wr_fence) and proto/frame.h ("po", fenced entries).
 *
 * The argument.  A part's stored position (_zx_positions) only moves
 * inside a writer transaction that holds its row lock, from the value a
 * frame says it started from (`from`) to that frame's own value, and the
 * frame's rows go into the same transaction.  So a stored value V means:
 * the rows of every message below V are in the workspace, once, and none
 * above.  A frame whose `from` is not V was built by a worker that did
 * not know V: its rows would repeat messages (V > from) or leave some out
 * (V < from): it is skipped, and the workspace's V is copied into this
 * zxd's store so that its worker reads on from V (kafka_fence.c).  The
 * first message's offset is checked too: a frame that starts below V
 * despite from == V (a worker that batched a message fetched before it
 * moved) would duplicate: refused, logged as an error; one that starts
 * past from leaves a gap: legitimate only with compaction or
 * transaction markers, counted and logged.
 *
 * It must never: run in a workspace that is not shared (one zxd, one
 * store: the positions of its own store are the truth, nothing to
 * fence), or apply a frame's rows when one of its fenced parts fails.
 */
#include "workers/writer/writer_int.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"

/* The offset at the head of a stored value (8 bytes little-endian int64),
 * or -2 when the value is not one (too short, negative). */
static int64_t stored_offset(const void *v, size_t len)
{
    if (len < 8)
        return -2;
    const unsigned char *b = v;
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x |= (uint64_t)b[i] << (8 * i);
    return (int64_t)x < 0 ? -2 : (int64_t)x;
}

/* One fenced part's row as locked. */
typedef struct fcur {
    void *val;          /* malloc'd; NULL: never stored */
    size_t len;
} fcur;

/* Replace a->pos with the workspace's values of the fenced parts that
 * have one (parts, values copied into one block).  0, or -1 (ENOMEM). */
static int keep_current(applied *a, const zx_frame_meta *m, const fcur *cur)
{
    size_t n = 0, bytes = 0;
    for (size_t i = 0, k = 0; i < m->npositions; i++) {
        if (!m->positions[i].fenced)
            continue;
        if (cur[k].val) {
            n++;
            bytes += strlen(m->positions[i].part) + 1 + cur[k].len;
        }
        k++;
    }
    char *blk = malloc(n * sizeof(zx_frame_pos) + bytes + 1);
    if (!blk)
        return -1;
    zx_frame_pos *ps = (zx_frame_pos *)blk;
    char *o = blk + n * sizeof(zx_frame_pos);
    size_t j = 0;
    for (size_t i = 0, k = 0; i < m->npositions; i++) {
        if (!m->positions[i].fenced)
            continue;
        if (cur[k].val) {
            size_t pl = strlen(m->positions[i].part) + 1;
            memcpy(o, m->positions[i].part, pl);
            ps[j] = (zx_frame_pos){.part = o, .from = -1, .first = -1};
            o += pl;
            memcpy(o, cur[k].val, cur[k].len);
            ps[j].value = o;
            ps[j].value_len = cur[k].len;
            o += cur[k].len;
            j++;
        }
        k++;
    }
    free(a->pos);
    a->pos = ps;
    a->npos = n;
    return 0;
}

int wr_fence(writer *w, wpipe *p, applied *a, const zx_frame_meta *m, uint64_t seq, char *err,
             size_t errlen)
{
    if (w->a->conf->ws_kind != ZX_WS_KIND_POSTGRES || !w->a->conf->pg_shared)
        return 0;
    size_t nf = 0;
    for (size_t i = 0; i < m->npositions; i++)
        nf += m->positions[i].fenced != 0;
    if (!nf)
        return 0;
    fcur *cur = calloc(nf, sizeof(*cur));
    if (!cur) {
        snprintf(err, errlen, "out of memory fencing frame %llu of %s", (unsigned long long)seq,
                 p->name);
        return -1;
    }
    int rc = 0, pass = 1, dup = 0, gap = 0;
    for (size_t i = 0, k = 0; i < m->npositions; i++) {
        const zx_frame_pos *fp = &m->positions[i];
        if (!fp->fenced)
            continue;
        if (zx_ws_position_lock(w->ws, p->name, fp->part, &cur[k].val, &cur[k].len) < 0) {
            snprintf(err, errlen, "cannot lock the position %s of pipeline %s: %s", fp->part,
                     p->name, zx_ws_errmsg(w->ws));
            rc = -1;
            goto out;
        }
        int64_t stored = cur[k].val ? stored_offset(cur[k].val, cur[k].len) : -1;
        k++;
        if (cur[k - 1].val && stored < 0) {
            zx_error("event=fence_unreadable pipeline=%s part=\"%s\" len=%zu detail=\"the "
                     "stored position is not an offset: the frame is not applied\"", p->name,
                     fp->part, cur[k - 1].len);
            pass = 0;
            continue;
        }
        if (stored >= 0 && fp->from != stored) {
            zx_info("event=frame_fenced pipeline=%s seq=%" PRIu64 " part=\"%s\" from=%" PRId64
                    " stored=%" PRId64 " first=%" PRId64 " rows=%u", p->name, seq, fp->part,
                    fp->from, stored, fp->first, w->rs.nrows);
            pass = 0;
        } else if (stored >= 0 && fp->first >= 0 && fp->first < stored) {
            zx_error("event=fence_duplicate pipeline=%s seq=%" PRIu64 " part=\"%s\" from=%"
                     PRId64 " stored=%" PRId64 " first=%" PRId64 " rows=%u detail=\"the frame "
                     "begins below the stored position: its rows would be duplicates; not "
                     "applied\"", p->name, seq, fp->part, fp->from, stored, fp->first,
                     w->rs.nrows);
            pass = 0;
            dup = 1;
        } else if (fp->from >= 0 && fp->first > fp->from) {
            zx_warn("event=fence_gap pipeline=%s seq=%" PRIu64 " part=\"%s\" from=%" PRId64
                    " first=%" PRId64 " missing=%" PRId64 " detail=\"the frame begins past the "
                    "stored position: messages in between are not in the workspace (fine only "
                    "for a compacted topic or transaction markers)\"", p->name, seq, fp->part,
                    fp->from, fp->first, fp->first - fp->from);
            gap = 1;
        }
    }
    if (pass) {
        a->fence_gap = gap;
        goto out;
    }
    if (keep_current(a, m, cur) < 0) {
        snprintf(err, errlen, "out of memory fencing frame %llu of %s", (unsigned long long)seq,
                 p->name);
        rc = -1;
        goto out;
    }
    p->ckpt = seq; /* written before the commit (wr_write_checkpoints) */
    p->ckpt_dirty = 1;
    a->fenced = 1;
    a->fence_dup = dup;
    a->skipped = 1;     /* no rows: nothing to announce */
    rc = 1;
out:
    for (size_t k = 0; k < nf; k++)
        free(cur[k].val);
    free(cur);
    return rc;
}

void wr_fence_skipped(writer *w, applied *a)
{
    if (w->a->conf->ws_kind != ZX_WS_KIND_POSTGRES || !w->a->conf->pg_shared)
        return;
    int any = 0;
    for (size_t i = 0; i < a->npos; i++)
        any |= a->pos[i].fenced;
    if (!any)
        return;
    free(a->pos);
    a->pos = NULL;
    a->npos = 0;
}

void wr_fence_tell(writer *w)
{
    for (size_t i = 0; i < w->nap; i++)
        if (w->ap[i].fenced)
            atomic_fetch_add_explicit(&w->ap[i].p->seg.hdr->frames_fenced, 1,
                                      memory_order_release);
}
