/*
 * forward.h — a stream's forwarder: the thread of its worker that
 * publishes what the writer applied for the pipeline (`forward:`,
 * conf/forward.c), read from the workspace's forward journal
 * (fwd_journal.h) in commit order and sent through the destination the
 * section names (fwd_send.h; today kafka), then deleted from the journal.
 *
 * Delivery is at least once: entries are deleted only after their run
 * committed (the brokers acknowledged every message); a worker killed
 * in between publishes them again when it restarts.  A failure (brokers
 * down, workspace away) is logged and retried with backoff (1 s doubling
 * to 30 s), the journal keeping what is not yet published; the stream
 * itself goes on.
 *
 * The thread blocks every signal (the worker's own thread takes them)
 * and shares nothing with it but the configuration, which it only reads.
 */
#ifndef ZX_FORWARD_FORWARD_H
#define ZX_FORWARD_FORWARD_H

#include <stdint.h>

#include "conf/config.h"

typedef struct zx_fwd zx_fwd;

/* Where the forwarder reports its status: a JSON object text (at most
 * ZX_FWD_STATUS_MAX bytes), called from its thread, at most every 2 s
 * and on each change of its error:
 *   {"to": "kafka", "topic": T, "frames": N, "rows": N, "deletes": N,
 *    "skipped": N, "pending_frames": N, "oldest_pending_ms": N or null,
 *    "last_error": "..." or null}
 * rows, deletes: messages published for appended or changed rows and for
 * deleted keys since the worker started; pending_frames: entries waiting
 * in the journal, the oldest written oldest_pending_ms ago. */
#define ZX_FWD_STATUS_MAX 384

/* What the forwarder asks of the worker it runs in (each may be NULL),
 * called from its thread with ctx:
 *   report     its status (above);
 *   committed  a number that grows each time the writer commits frames
 *              of the pipeline (the frames ring's acknowledged sequence):
 *              while the journal is empty the forwarder looks at it every
 *              2 ms and reads the journal as soon as it moves (else every
 *              100 ms). */
typedef struct zx_fwd_hooks {
    void (*report)(void *ctx, const char *json);
    uint64_t (*committed)(void *ctx);
    void *ctx;
} zx_fwd_hooks;

/* Start forwarding pipeline p (zx_conf_forwards(p) is 1) of conf; conf,
 * p and hooks->ctx must outlive zx_fwd_stop (hooks is copied; NULL: none).
 * Returns the forwarder, or NULL with err set (out of memory, no
 * thread). */
zx_fwd *zx_fwd_start(const zx_conf *conf, const zx_conf_pipeline *p,
                     const zx_fwd_hooks *hooks, char *err, size_t errlen);

/* Stop: the run in progress is aborted (what it sent stays in the
 * journal, sent again next time), the thread joined, everything freed.
 * NULL: no-op. */
void zx_fwd_stop(zx_fwd *f);

#endif
