/*
 * writer_commit.c — after the cycle's workspace commit: record what its
 * frames did in the LMDB store (positions, dedup keys, row hashes,
 * counters, schemas) in one transaction, then tell the feed (new
 * columns, caps, rejects, one batch event per pipeline and table).  See
 * writer_int.h.
 *
 * It must never: write the store before the workspace committed (the
 * workspace checkpoint is the truth; the store may lag, never lead).
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

/* Frame a kept fields in _extra: count them (counter "extra_values") and
 * decide whether the feed is told, once per table and cap: the state
 * record "capped:<table>" holds the cap (u32) last announced.  0 or a
 * ZX_STORE_* code. */
static int capped(zx_store_txn *t, applied *a)
{
    int rc = zx_store_counter_add(t, a->p->name, "extra_values", a->extra_values);
    if (rc != 0 || !a->extra_fields)
        return rc;
    char key[96];
    snprintf(key, sizeof(key), "capped:%s", a->table);
    const void *val = NULL;
    size_t len = 0;
    uint32_t cap = a->max_columns, had = 0;
    rc = zx_store_state_get(t, a->p->name, key, &val, &len);
    if (rc == 0 && len == sizeof(had))
        memcpy(&had, val, sizeof(had));
    else if (rc != 0 && rc != ZX_STORE_NOTFOUND)
        return rc;
    if (rc == 0 && had == cap)
        return 0;
    a->announce_cap = 1;
    return zx_store_state_put(t, a->p->name, key, &cap, sizeof(cap));
}

/* A row-hashes frame's effect on its sync's hashes before its own are
 * put (proto/frame.h, "Row-hashes frames"): hashes of another key, or
 * left unconfirmed by a run that did not confirm them, are forgotten
 * ("kc" differs from state key_cols; state hashes_pending held by another
 * run than this frame's "hp", or by any run when the frame is neither
 * unconfirmed nor a confirmation); "hp" = N marks them unconfirmed (state
 * hashes_pending = N, 8 bytes), "hc" = N ends that mark.  0 or a
 * ZX_STORE_* code. */
static int hashes_state(zx_store_txn *t, const applied *a)
{
    const char *sync = a->p->name;
    int rc = 0;
    const char *clear = NULL;   /* why the sync's hashes are forgotten */
    const void *v = NULL;
    size_t len = 0;
    if (a->keysig) {
        /* hashes of another key say nothing of this one's rows */
        int g = zx_store_state_get(t, sync, ZX_STATE_KEY_COLS, &v, &len);
        size_t kl = strlen(a->keysig);
        if (g != 0 && g != ZX_STORE_NOTFOUND)
            return g;
        int differs = g != 0 || len != kl || memcmp(v, a->keysig, kl);
        if (g == 0 && differs)
            clear = "the key columns changed";
        if (differs && (rc = zx_store_state_put(t, sync, ZX_STATE_KEY_COLS, a->keysig, kl)))
            return rc;
    }
    int g = zx_store_state_get(t, sync, ZX_STATE_HASHES_PENDING, &v, &len);
    if (g != 0 && g != ZX_STORE_NOTFOUND)
        return g;
    int pending = g == 0;
    uint64_t held = 0;   /* a damaged record: a run of its own, never confirmed */
    if (pending && len == sizeof(held))
        memcpy(&held, v, sizeof(held));
    if (a->hconfirm) {
        if (pending && held == a->hconfirm)
            rc = zx_store_state_del(t, sync, ZX_STATE_HASHES_PENDING);
    } else if (a->hpending) {
        if (pending && held != a->hpending)
            clear = "an earlier run left them unconfirmed";
        if (!pending || held != a->hpending)
            rc = zx_store_state_put(t, sync, ZX_STATE_HASHES_PENDING, &a->hpending,
                                    sizeof(a->hpending));
    } else if (pending) {
        clear = "an earlier run left them unconfirmed";
        rc = zx_store_state_del(t, sync, ZX_STATE_HASHES_PENDING);
    }
    if (rc == 0 && clear) {
        zx_info("event=sync_hashes_forgotten sync=%s why=\"%s\"", sync, clear);
        rc = zx_store_hashes_clear(t, sync);
    }
    return rc;
}

/* The deleted keys' positions past their pipeline's retention go
 * (keyseq.h): once a second, at most 1,000 records looked at per
 * pipeline.  0 or a ZX_STORE_* code. */
static int sweep_tombstones(writer *w, zx_store_txn *t, int64_t now_us)
{
    if (now_us - w->swept_us < 1000000)
        return 0;
    w->swept_us = now_us;
    for (int i = 0; i < MAX_PIPES; i++) {
        const wpipe *p = &w->pipes[i];
        if (!p->used)
            continue;
        const zx_conf_pipeline *pc = zx_conf_find(w->a->conf, p->name);
        int64_t keep_ms = pc && pc->deleted_keys_retention_ms ? pc->deleted_keys_retention_ms
                                                              : 168LL * 3600 * 1000;
        uint64_t removed = 0;
        int rc = zx_keyseq_prune(w->ks, t, p->name, now_us - keep_ms * 1000, 1000, &removed);
        if (rc)
            return rc;
        if (removed)
            zx_info("event=deleted_keys_swept pipeline=%s removed=%llu", p->name,
                    (unsigned long long)removed);
    }
    return 0;
}

int wr_store_txn(writer *w)
{
    int64_t now = zx_now_us();
    for (int attempt = 0; attempt < 8; attempt++) {
        zx_store_txn *t;
        int rc = zx_store_begin(w->store, 0, &t);
        if (rc)
            return rc;
        for (size_t i = 0; i < w->nap; i++)
            w->ap[i].announce_cap = 0; /* decided again by this attempt */
        /* what light cycles owe first: the cycle's own positions are newer */
        for (int i = 0; i < MAX_PIPES && rc == 0 && w->owed_since_ms; i++) {
            wpipe *p = &w->pipes[i];
            if (!p->used || !p->owed)
                continue;
            zx_position pos = {p->owed_seq, now, NULL, 0};
            rc = zx_store_position_put(t, p->name, &pos);
            if (rc == 0 && p->owed_rows)
                rc = zx_store_counter_add(t, p->name, "rows", p->owed_rows);
        }
        for (size_t i = 0; i < w->nap && rc == 0; i++) {
            applied *a = &w->ap[i];
            zx_position pos = {a->seq, now, NULL, 0};
            rc = a->replayed ? 0 : zx_store_position_put(t, a->p->name, &pos);
            for (size_t k = 0; rc == 0 && k < a->npos; k++) {
                rc = zx_store_position_part_put(t, a->p->name, a->pos[k].part, a->pos[k].value,
                                                a->pos[k].value_len, now);
                if (rc == ZX_STORE_KEYTOOLONG) {
                    zx_warn("event=position_not_stored pipeline=%s part=\"%.60s\" "
                            "error=\"key too long\"", a->p->name, a->pos[k].part);
                    rc = 0;
                }
            }
            if (rc == 0 && a->dedup) {
                zx_idem_rec r = {0};
                r.created_us = now;
                r.body_hash = a->dedup_hash;
                r.accepted = a->accepted;
                snprintf(r.request_id, sizeof(r.request_id), "%s", a->rid);
                rc = zx_store_idem_put(t, a->p->name, a->dedup, strlen(a->dedup), &r);
                if (rc == ZX_STORE_KEYTOOLONG)
                    rc = 0;
            }
            if (rc == 0 && (a->keysig || a->nhashes || a->hpending || a->hconfirm))
                rc = hashes_state(t, a);
            if (rc == 0 && a->nhashes)
                rc = zx_store_hashes_write(t, a->p->name, a->hashes, a->nhashes);
            if (rc == 0 && a->messages)
                rc = zx_store_counter_add(t, a->p->name, "rejects:_message", a->messages);
            if (rc == 0 && a->rows)
                rc = zx_store_counter_add(t, a->p->name, "rows", a->rows);
            if (rc == 0 && a->fenced)
                rc = zx_store_counter_add(t, a->p->name, "frames_fenced", 1);
            if (rc == 0 && a->fence_dup)
                rc = zx_store_counter_add(t, a->p->name, "fence_duplicates", 1);
            if (rc == 0 && a->fence_gap)
                rc = zx_store_counter_add(t, a->p->name, "fence_gaps", 1);
            if (rc == 0 && a->rejects)
                rc = zx_store_counter_add(t, a->p->name, "rejects", a->rejects);
            uint64_t nulled = 0;
            for (size_t k = 0; k < a->nrejcols; k++)
                nulled += a->rejcols[k].count;
            if (rc == 0 && nulled)
                rc = zx_store_counter_add(t, a->p->name, "values_nulled", nulled);
            if (rc == 0 && a->nnewcols)
                rc = zx_store_counter_add(t, a->p->name, "columns_added", a->nnewcols);
            for (size_t k = 0; rc == 0 && k < a->nrejcols; k++) {
                char cname[96];
                snprintf(cname, sizeof(cname), "rejects:%s", a->rejcols[k].name);
                rc = zx_store_counter_add(t, a->p->name, cname, a->rejcols[k].count);
                if (rc == ZX_STORE_KEYTOOLONG)
                    rc = 0; /* the total is still counted */
            }
            if (rc == 0 && a->extra_values)
                rc = capped(t, a);
            if (rc == 0 && (a->nnewcols || a->created)) {
                char *js = NULL;
                int cr = zx_ws_table_columns(w->ws, a->table, &js);
                if (cr == 0 && js)
                    rc = zx_store_schema_put(t, a->p->name, a->table, js);
                else if (cr < 0)
                    zx_warn("event=schema_not_recorded pipeline=%s table=%s error=\"%s\"",
                            a->p->name, a->table, zx_ws_errmsg(w->ws));
                free(js);
            }
        }
        if (rc == 0)
            rc = zx_keyseq_store(w->ks, t, now);
        if (rc == 0)
            rc = sweep_tombstones(w, t, now);
        if (rc == 0)
            rc = zx_store_commit(t);
        else
            zx_store_abort(t);
        if (rc == 0) {
            wr_fence_tell(w);
            for (int i = 0; i < MAX_PIPES; i++)
                w->pipes[i].owed = 0, w->pipes[i].owed_rows = 0;
            w->owed_since_ms = 0;
        }
        if (rc != ZX_STORE_MAP_FULL)
            return rc;
    }
    return ZX_STORE_MAP_FULL;
}

void wr_store_owe(writer *w)
{
    for (size_t i = 0; i < w->nap; i++) {
        applied *a = &w->ap[i];
        if (a->replayed)
            continue;
        if (!a->p->owed || a->seq > a->p->owed_seq)
            a->p->owed_seq = a->seq;
        a->p->owed = 1;
        a->p->owed_rows += a->rows;
        if (!w->owed_since_ms)
            w->owed_since_ms = zx_mono_ms();
    }
}

int wr_store_flush(writer *w)
{
    if (!w->owed_since_ms || w->nap)
        return 0;
    int rc = wr_store_txn(w);
    if (rc) {
        zx_error("event=store_failed error=\"%s\" retry=\"with the next commit, or in "
                 "%d ms\"", zx_store_strerror(rc), STORE_OWED_MS);
        w->owed_since_ms = zx_mono_ms(); /* not at once again */
    }
    return rc;
}

/* The feed hears once per mirror that its types were inferred. */
static void tell_inferred(writer *w, const applied *a)
{
    char key[400];
    snprintf(key, sizeof(key), "%s\t%s", a->p->name, a->table);
    for (size_t i = 0; i < w->ninferred_told; i++)
        if (strcmp(w->inferred_told[i], key) == 0)
            return;
    if (w->ninferred_told < INFERRED_MAX) {
        char **n = realloc(w->inferred_told, (w->ninferred_told + 1) * sizeof(*n));
        char *k = strdup(key);
        if (!n || !k) {
            free(k);
            if (n)
                w->inferred_told = n;
            return;
        }
        w->inferred_told = n;
        w->inferred_told[w->ninferred_told++] = k;
    }
    char msg[512];
    snprintf(msg, sizeof(msg), "pipeline %s: the change events for %s carry no schema, so its "
             "column types are inferred from the values (decimals stay base64 text, dates "
             "and times numbers); set schemas.enable=true in Debezium's JSON converter to get "
             "the source's types", a->p->name, a->table);
    wr_emit(w, json_pack("{s:s, s:s, s:s, s:s}", "event", "types_inferred", "pipeline",
                      a->p->name, "table", a->table, "message", msg));
    zx_warn("event=types_inferred pipeline=%s table=%s", a->p->name, a->table);
}

void wr_announce(writer *w)
{
    /* schema and reject events per frame; one batch event per pipeline and
     * table per cycle (a feed event per frame cost the writer a message to
     * the supervisor per frame) */
    for (size_t i = 0; i < w->nap; i++) {
        applied *a = &w->ap[i];
        if (a->bad || a->skipped)
            continue;
        for (size_t k = 0; k < a->nnewcols; k++) {
            char msg[256];
            snprintf(msg, sizeof(msg), "%s column %s %s (%s)", a->created ? "created" : "added",
                     a->newcols[k].name, a->table, zx_type_name(a->newcols[k].type));
            wr_emit(w, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "event", "schema", "pipeline",
                              a->p->name, "table", a->table, "column", a->newcols[k].name,
                              "type", zx_type_name(a->newcols[k].type), "message", msg));
        }
        if (a->history_json) {
            /* said once: when __changes is made so */
            char msg[400];
            snprintf(msg, sizeof(msg), "mirror %s has %u columns, too many for one history "
                     "row per change: %s__changes keeps each change's row as one JSON "
                     "object in its column _row", a->table, a->history_json, a->table);
            wr_emit(w, json_pack("{s:s, s:s, s:s, s:i, s:s}", "event", "history_as_json",
                              "pipeline", a->p->name, "table", a->table, "columns",
                              (int)a->history_json, "message", msg));
            zx_warn("event=history_as_json pipeline=%s table=%s columns=%u history=%s__changes "
                    "column=_row", a->p->name, a->table, a->history_json, a->table);
        }
        if (a->announce_cap) {
            char msg[400];
            snprintf(msg, sizeof(msg), "table %s has reached its cap of %u columns "
                     "(pipelines.%s.max_columns): new fields (first: %s) are kept as JSON "
                     "in its column _extra", a->table, a->max_columns, a->p->name, a->extra_first);
            wr_emit(w, json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s}", "event", "columns_capped",
                              "pipeline", a->p->name, "table", a->table, "max_columns",
                              (int)a->max_columns, "column", "_extra", "first_field",
                              a->extra_first, "message", msg));
            zx_warn("event=columns_capped pipeline=%s table=%s max_columns=%u first_field=%s",
                    a->p->name, a->table, a->max_columns, a->extra_first);
        }
        if (a->inferred)
            tell_inferred(w, a);
        if (a->messages) {
            char msg[256];
            snprintf(msg, sizeof(msg), "%llu input messages could not be read as rows for %s "
                     "(kept in %s__rejects with the reason)", (unsigned long long)a->messages,
                     a->table, a->table);
            wr_emit(w, json_pack("{s:s, s:s, s:s, s:I, s:s}", "event", "rejected_messages",
                              "pipeline", a->p->name, "table", a->table, "count",
                              (json_int_t)a->messages, "message", msg));
        }
        if (a->rejects > a->messages) {
            json_t *cols = json_object();
            for (size_t k = 0; k < a->nrejcols; k++)
                json_object_set_new(cols, a->rejcols[k].name, json_integer((json_int_t)a->rejcols[k].count));
            char msg[256];
            snprintf(msg, sizeof(msg), "%llu values did not fit their columns in %s (NULL stored; see %s__rejects)",
                     (unsigned long long)(a->rejects - a->messages), a->table, a->table);
            wr_emit(w, json_pack("{s:s, s:s, s:s, s:I, s:o, s:s}", "event", "rejects", "pipeline",
                              a->p->name, "table", a->table,
                              "count", (json_int_t)(a->rejects - a->messages),
                              "columns", cols, "message", msg));
        }
        if (a->in_batch)
            continue;
        /* this frame and the cycle's later ones of the same pipeline and
         * table: one batch event (seq: the last frame) */
        uint64_t rows = a->rows, rejects = a->rejects, first = a->seq, last = a->seq;
        size_t frames = 1;
        for (size_t k = i + 1; k < w->nap; k++) {
            applied *b = &w->ap[k];
            if (b->bad || b->skipped || b->p != a->p || strcmp(b->table, a->table) != 0)
                continue;
            b->in_batch = 1;
            rows += b->rows;
            rejects += b->rejects;
            last = b->seq;
            frames++;
        }
        if (rows == 0 && rejects == 0)
            continue; /* frames that carried only positions */
        char msg[256];
        if (frames == 1)
            snprintf(msg, sizeof(msg), "%llu rows into %s (frame %llu)",
                     (unsigned long long)rows, a->table, (unsigned long long)last);
        else
            snprintf(msg, sizeof(msg), "%llu rows into %s (%zu frames, %llu to %llu)",
                     (unsigned long long)rows, a->table, frames, (unsigned long long)first,
                     (unsigned long long)last);
        wr_emit(w, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:s}", "event", "batch",
                          "pipeline", a->p->name, "table", a->table, "rows", (json_int_t)rows,
                          "rejects", (json_int_t)rejects, "seq", (json_int_t)last, "frames",
                          (json_int_t)frames, "message", msg));
    }
}
