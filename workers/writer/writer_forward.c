/*
 * writer_forward.c — the writer's side of the forward journal (see "The
 * forward journal" in writer_int.h): a frame of a forwarding pipeline goes
 * into _zx_forward in the transaction that applies it, numbered so that
 * the pipeline's forwarder reads the journal in the order it was applied.
 *
 * It must never: give an n twice to one pipeline, journal a frame that
 * was not applied (parked, skipped, rolled back: the transaction takes it
 * back), or journal other bytes than those applied.
 */
#include "workers/writer/writer_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/timefmt.h"

/* The next n of p's journal into *n (taken: p->fw_last = *n, so that it
 * is never given again, whatever becomes of the transaction).  0, or -1
 * when the journal's largest n cannot be read (err set). */
static int next_n(writer *w, wpipe *p, uint64_t *n, char *err, size_t errlen)
{
    if (!p->fw_loaded) {
        uint64_t last = 0;
        if (zx_ws_forward_last(w->ws, p->name, &last) < 0) {
            snprintf(err, errlen, "cannot read the forward journal of pipeline %s: %s",
                     p->name, zx_ws_errmsg(w->ws));
            return -1;
        }
        if (last > p->fw_last)
            p->fw_last = last;
        p->fw_loaded = 1;
    }
    uint64_t next = p->fw_last + 1;
    /* the old segment of a pipeline removed and added back may still be
     * draining under the same name: past its numbers too */
    for (int i = 0; i < MAX_PIPES; i++) {
        const wpipe *q = &w->pipes[i];
        if (q != p && q->used && q->fw_loaded && q->fw_last >= next &&
            strcmp(q->name, p->name) == 0)
            next = q->fw_last + 1;
    }
    int64_t now = zx_now_us();
    if (now > 0 && (uint64_t)now > next)
        next = (uint64_t)now;
    p->fw_last = next;
    *n = next;
    return 0;
}

int wr_forward(writer *w, wpipe *p, const applied *a, const zx_frame_meta *m, const void *data,
               size_t len, char *err, size_t errlen)
{
    if (!m->forward || (m->kind != ZX_FRAME_ROWS && m->kind != ZX_FRAME_CHANGES))
        return 0;
    /* stale changes left out: what was applied is w->rs2 (drop_stale) */
    const zx_rowset *rs = a->stale ? &w->rs2 : &w->rs;
    if (!rs->nrows)
        return 0;
    if (a->stale) {
        zx_buf_reset(&w->fwbuf);
        if (zx_frame_encode(m, rs, &w->fwbuf) < 0) {
            snprintf(err, errlen, "cannot encode frame %llu of %s again for its forward "
                     "journal: %s", (unsigned long long)a->seq, p->name, strerror(errno));
            return -1;
        }
        data = w->fwbuf.p;
        len = w->fwbuf.len;
    }
    uint64_t n;
    if (next_n(w, p, &n, err, errlen) < 0)
        return -1;
    if (zx_ws_forward_put(w->ws, p->name, n, data, len, rs->nrows) < 0) {
        snprintf(err, errlen, "cannot journal frame %llu of %s for forwarding: %s",
                 (unsigned long long)a->seq, p->name, zx_ws_errmsg(w->ws));
        return -1;
    }
    return 0;
}
