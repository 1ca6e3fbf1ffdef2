/*
 * forget.h — the writer drops the state of a pipeline the configuration
 * no longer has (proto/chan.h FORGET): its positions, schema, counters,
 * idempotency keys and state in the LMDB store (zx_store_pipeline_drop)
 * and, in one workspace transaction, its positions (zx_ws_positions_drop),
 * the frames parked for its mirror tables (_zx_parked, zx_ws_parked_drop)
 * and what its forward journal still holds (_zx_forward,
 * zx_ws_forward_drop), so that a pipeline added again later under the
 * same name starts from scratch instead of resuming from positions of
 * long ago, replaying changes of the old pipeline or forwarding them.
 * The writer reads its parked tables again afterwards (zx_forget_run's
 * answer).
 *
 * The supervisor sends FORGET right after DETACH, once the pipeline's
 * worker has stopped.  A request waits (in a short queue owned here) until
 * the writer has applied the last frames of the detached segment, so that
 * no frame of it writes positions again after the drop.  It is refused
 * (kept, logged and sent to the feed) when a pipeline of that name is
 * attached again by then: that pipeline uses the positions now.
 *
 * Order: the workspace first, then the store.  The writer copies the
 * workspace's positions into the store at start (reconcile), so the other
 * order could bring dropped positions back after a crash in between; this
 * one leaves at worst the store's copy, which `zxctl status` then shows
 * as state the pipeline resumed from.  A failure of either is tried again
 * (1 s apart, ZX_FORGET_TRIES times), then logged and sent to the feed as
 * event=state_drop_failed.  The table and its rows stay.
 *
 * It must never: drop the state of a pipeline that is attached, or block
 * the writer's loop longer than one workspace statement.
 */
#ifndef ZX_WRITER_FORGET_H
#define ZX_WRITER_FORGET_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "workers/writer/workspace.h"

#define ZX_FORGET_MAX 64     /* requests waiting at once; more are refused */
#define ZX_FORGET_TRIES 10

typedef struct zx_forget_req {
    char name[64];
    unsigned tries;
    int64_t next_ms;         /* monotonic: not before */
} zx_forget_req;

typedef struct zx_forget {
    zx_forget_req q[ZX_FORGET_MAX];
    size_t n;
} zx_forget;

/* The writer's answers to zx_forget_run (callbacks, ctx is the writer):
 * state(name) 2 while a segment of that name is detaching (wait), 1 when
 * one is attached (refuse), 0 when none (drop). */
typedef int (*zx_forget_state_fn)(void *ctx, const char *name);
/* Send a feed event object (takes the reference; NULL is logged). */
typedef void (*zx_forget_emit_fn)(void *ctx, void *json_event);

/* Queue the FORGET message json ({"name": N}).  A bad message or a full
 * queue is logged (event=bad_forget, state_drop_failed) and dropped. */
void zx_forget_add(zx_forget *f, const char *json);

/* Do the queued requests that are due: each dropped (event=state_dropped),
 * refused (event=state_kept), waiting, retried or given up
 * (event=state_drop_failed), as described above.  Returns the number of
 * requests still queued. */
size_t zx_forget_run(zx_forget *f, zx_store *st, zx_ws *ws, zx_forget_state_fn state,
                     zx_forget_emit_fn emit, void *ctx);

#endif
