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

#include "conf/config.h"

typedef struct zx_fwd zx_fwd;

/* Start forwarding pipeline p (zx_conf_forwards(p) is 1) of conf; both
 * must outlive zx_fwd_stop.  Returns the forwarder, or NULL with err set
 * (out of memory, no thread). */
zx_fwd *zx_fwd_start(const zx_conf *conf, const zx_conf_pipeline *p, char *err,
                     size_t errlen);

/* Stop: the run in progress is aborted (what it sent stays in the
 * journal, sent again next time), the thread joined, everything freed.
 * NULL: no-op. */
void zx_fwd_stop(zx_fwd *f);

#endif
