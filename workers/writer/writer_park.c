/*
 * writer_park.c — parked tables (see ptable in writer_int.h): a frame a
 * mirror refuses for a reason that will not pass by itself goes to
 * _zx_parked in the same transaction as the checkpoint that passes it,
 * later frames of that table follow it there (order is kept), and the
 * table is retried with backoff, its parked frames applied oldest first.
 *
 * It must never: apply a parked frame out of order, lose one (it is
 * deleted in the savepoint that applies it), or pass max_parked_bytes
 * (the whole pipeline is held back instead).
 */
#include "workers/writer/writer_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/chan.h"
#include "proto/control.h"

ptable *wr_pt_find(writer *w, const char *pipeline, const char *table)
{
    for (size_t i = 0; i < w->npt; i++)
        if (strcmp(w->pt[i].pipeline, pipeline) == 0 && strcmp(w->pt[i].table, table) == 0)
            return &w->pt[i];
    return NULL;
}

/* A new zeroed entry (pointers into w->pt stay valid only until the next
 * pt_add), or NULL out of memory or for a name too long to keep. */
static ptable *pt_add(writer *w, const char *pipeline, const char *table)
{
    if (strlen(pipeline) >= sizeof(w->pt->pipeline) || strlen(table) >= sizeof(w->pt->table) ||
        zx_grow(&w->pt, w->npt, &w->pt_cap, sizeof(*w->pt)) < 0)
        return NULL;
    ptable *t = &w->pt[w->npt++];
    memset(t, 0, sizeof(*t));
    snprintf(t->pipeline, sizeof(t->pipeline), "%s", pipeline);
    snprintf(t->table, sizeof(t->table), "%s", table);
    return t;
}

static int pt_seen(const char *pipeline, const char *table, uint64_t count, uint64_t rows,
                   uint64_t bytes, uint64_t last_n, void *ctx)
{
    writer *w = ctx;
    ptable *t = wr_pt_find(w, pipeline, table);
    if (!t && !(t = pt_add(w, pipeline, table)))
        return 1;
    t->count = count;
    t->rows = rows;
    t->bytes = bytes;
    t->last_n = last_n;
    t->seen = 1;
    return 0;
}

void wr_pt_forget(writer *w, const char *pipeline)
{
    for (size_t i = 0; pipeline && i < w->npt;) {
        if (strcmp(w->pt[i].pipeline, pipeline) == 0) {
            memmove(&w->pt[i], &w->pt[i + 1], (w->npt - i - 1) * sizeof(*w->pt));
            w->npt--;
        } else {
            i++;
        }
    }
}

/* Read the parked tables' counts from the workspace (the truth: a cycle
 * rolled back undid what it parked or replayed), keeping what is known
 * only here (why, retry times, told).  0, or -1 (w->pt_stale set: read
 * again before the next frame is applied). */
int wr_pt_load(writer *w)
{
    for (size_t i = 0; i < w->npt; i++)
        w->pt[i].seen = 0;
    if (zx_ws_parked_each(w->ws, pt_seen, w) != 0) {
        w->pt_stale = 1;
        return -1;
    }
    for (size_t i = 0; i < w->npt; i++)
        if (!w->pt[i].seen)
            w->pt[i].count = w->pt[i].rows = w->pt[i].bytes = 0;
    w->pt_stale = 0;
    return 0;
}

/* After a commit (or pt_load): the log and the feed hear once when a
 * table starts to be parked and once when it is applied again; entries
 * with nothing parked are forgotten; each pipeline's status line
 * (seg writer_tables) follows. */
void wr_pt_tell(writer *w)
{
    for (size_t i = 0; i < w->npt; i++) {
        ptable *t = &w->pt[i];
        char msg[600];
        if (t->count && !t->told) {
            t->told = 1;
            snprintf(msg, sizeof(msg), "table %s refuses its changes (%s): they are parked "
                     "in _zx_parked, in order, and retried; the pipeline's other tables go on",
                     t->table, t->why[0] ? t->why : "reason not known yet");
            zx_error("event=table_blocked pipeline=%s table=%s parked_changes=%llu "
                     "parked_bytes=%llu error=\"%s\"", t->pipeline, t->table,
                     (unsigned long long)t->rows, (unsigned long long)t->bytes, t->why);
            wr_emit(w, json_pack("{s:s, s:s, s:s, s:s}", "event", "error", "pipeline",
                              t->pipeline, "table", t->table, "message", msg));
        } else if (!t->count && t->told) {
            t->told = 0;
            snprintf(msg, sizeof(msg), "table %s takes its changes again: the parked ones "
                     "were applied", t->table);
            zx_info("event=table_unblocked pipeline=%s table=%s", t->pipeline, t->table);
            wr_emit(w, json_pack("{s:s, s:s, s:s, s:s}", "event", "table_unblocked", "pipeline",
                              t->pipeline, "table", t->table, "message", msg));
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < w->npt; i++)
        if (w->pt[i].count || w->pt[i].told)
            w->pt[k++] = w->pt[i];
    w->npt = k;
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *p = &w->pipes[i];
        if (!p->used)
            continue;
        char line[ZX_SEG_WRITER_TABLES_MAX] = "";
        size_t len = 0;
        for (size_t j = 0; j < w->npt && len < sizeof(line); j++) {
            const ptable *t = &w->pt[j];
            if (!t->count || strcmp(t->pipeline, p->name) != 0)
                continue;
            int n = snprintf(line + len, sizeof(line) - len, "%s%s (%s): %llu changes parked, "
                             "%llu bytes", len ? "; " : "", t->table,
                             t->why[0] ? t->why : "retrying", (unsigned long long)t->rows,
                             (unsigned long long)t->bytes);
            len = n < 0 ? sizeof(line) : len + (size_t)n;
        }
        zx_seg_hdr *h = p->seg.hdr;
        if (strncmp(h->writer_tables, line, sizeof(line)) != 0)
            zx_segment_write_text(&h->writer_tables_seq, h->writer_tables,
                                  sizeof(h->writer_tables), line);
    }
}

/* Park frame seq of p (data, len bytes; m decoded into w->rs),
 * which its table refuses (why), in _zx_parked, and record its positions
 * and the checkpoint, inside the open transaction (see ptable).  0; -2
 * when it may not be parked (the table's parked frames would pass
 * max_parked_bytes: err says so, and the pipeline is to be held back);
 * -1 on a database failure or out of memory (err set). */
int wr_park_frame(writer *w, wpipe *p, applied *a, const zx_frame_meta *m, const void *data,
                  size_t len, uint64_t seq, const char *why, char *err, size_t errlen)
{
    char reason[256];
    snprintf(reason, sizeof(reason), "%s", why);
    ptable *t = wr_pt_find(w, p->name, m->table);
    uint64_t have = t ? t->bytes : 0;
    if (have + len > p->max_parked_bytes) {
        snprintf(err, errlen, "table %s refuses its changes (%s), and its parked changes would "
                 "pass pipelines.%s.max_parked_bytes (%llu bytes): the whole pipeline is "
                 "held back", m->table, reason, p->name,
                 (unsigned long long)p->max_parked_bytes);
        return -2;
    }
    if (!t && !(t = pt_add(w, p->name, m->table))) {
        snprintf(err, errlen, "out of memory parking frame %llu of %s (table %s)",
                 (unsigned long long)seq, p->name, m->table);
        return -1;
    }
    if (zx_ws_park_put(w->ws, p->name, m->table, t->last_n + 1, w->rs.nrows, data, len, reason,
                       zx_now_us()) < 0) {
        snprintf(err, errlen, "cannot park frame %llu of %s (table %s): %s",
                 (unsigned long long)seq, p->name, m->table, zx_ws_errmsg(w->ws));
        return -1;
    }
    t->last_n++;
    t->count++;
    t->rows += w->rs.nrows;
    t->bytes += len;
    snprintf(t->why, sizeof(t->why), "%s", reason);
    if (!t->retry_at_ms) {
        t->backoff_ms = 1000;
        t->retry_at_ms = zx_mono_ms() + t->backoff_ms;
    }
    a->parked = 1;
    a->skipped = 1;   /* nothing in the table: nothing to announce */
    return wr_record_progress(w, p, m, seq, err, errlen);
}

/* p's parked tables whose retry is due: apply their parked frames, oldest
 * first, each deleted from _zx_parked in the same savepoint; a table that
 * still refuses waits again (backoff).  0, or -1 on a failure that needs
 * a rollback (err set). */
int wr_replay_parked(writer *w, wpipe *p, size_t *bytes, int *began, int *nframes,
                     char *err, size_t errlen)
{
    int64_t now = zx_mono_ms();
    for (size_t i = 0; i < w->npt && *bytes < CYCLE_BYTES; i++) {
        ptable *t = &w->pt[i];
        if (strcmp(t->pipeline, p->name) != 0 || !t->count || t->retry_at_ms > now)
            continue;
        while (t->count && *bytes < CYCLE_BYTES) {
            if (wr_begin_once(w, began, err, errlen) < 0)
                return -1;
            t = &w->pt[i]; /* pt_load may have moved it */
            if (!t->count)
                break;
            uint64_t n = 0, nrows = 0;
            void *f = NULL;
            size_t len = 0;
            int got = zx_ws_park_first(w->ws, p->name, t->table, &n, &f, &len);
            if (got < 0)
                return zx_seterr(err, errlen, "cannot read the parked changes of %s "
                                 "(pipeline %s): %s", t->table, p->name, zx_ws_errmsg(w->ws));
            if (got == 0) {
                t->count = t->rows = t->bytes = 0;
                break;
            }
            if (zx_ws_savepoint(w->ws) < 0) {
                free(f);
                return zx_seterr(err, errlen, "savepoint: %s", zx_ws_errmsg(w->ws));
            }
            char why[256] = "";
            int ar = wr_replay_frame(w, p, f, len, &nrows, why, sizeof(why));
            free(f);
            if (ar == -2) {
                wr_drop_last_applied(w);
                if (zx_ws_savepoint_rollback(w->ws) < 0)
                    return zx_seterr(err, errlen, "savepoint: %s", zx_ws_errmsg(w->ws));
                t->backoff_ms = t->backoff_ms * 2 > 60000 ? 60000
                                : t->backoff_ms ? t->backoff_ms * 2 : 1000;
                t->retry_at_ms = zx_mono_ms() + t->backoff_ms;
                snprintf(t->why, sizeof(t->why), "%s", why);
                zx_info("event=parked_table_retry pipeline=%s table=%s retry_in_ms=%lld "
                        "error=\"%s\"", p->name, t->table, (long long)t->backoff_ms, why);
                break;
            }
            if (ar < 0)
                return zx_seterr(err, errlen, "%s", why);
            if (zx_ws_park_del(w->ws, p->name, t->table, n) < 0 ||
                zx_ws_savepoint_release(w->ws) < 0)
                return zx_seterr(err, errlen, "cannot delete a parked frame of %s (pipeline "
                                 "%s): %s", t->table, p->name, zx_ws_errmsg(w->ws));
            t->count--;
            t->rows -= nrows < t->rows ? nrows : t->rows;
            t->bytes -= len < t->bytes ? len : t->bytes;
            if (!t->count)
                t->backoff_ms = t->retry_at_ms = 0;
            *bytes += len;
            (*nframes)++;
        }
    }
    return 0;
}
