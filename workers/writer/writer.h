/*
 * writer.h — the writer process ("zxd: writer").
 *
 * The only process that writes the workspace and opens the LMDB store for
 * writing.  It drains every pipeline's frames ring, applies the frames in
 * one workspace transaction (group commit across pipelines), records in
 * the same transaction the last applied frame of each pipeline
 * (_zx_checkpoints), then records positions, idempotency keys, counters and
 * schemas in LMDB, and only then releases the frames, which publishes the
 * acknowledgement in each ring header and wakes the workers.
 *
 * Group commit is adaptive (writer.c, cycle()): a transaction is held
 * open only while frames keep arriving, up to workspace.commit_interval,
 * and committed as soon as a pass over the rings finds nothing new; so a
 * lone ?wait=commit push is committed at once.
 *
 * One workspace, one writer: the workspace is locked for the writer's life
 * (workspace.h, zx_ws_open_sqlite).
 *
 * Crash windows: a crash before the workspace commit re-applies the frames
 * (they are still in the rings); a crash between the workspace commit and
 * the LMDB commit is reconciled at start: frames whose seq is at or below
 * the workspace checkpoint are not applied again, but their LMDB side
 * effects (idempotency keys, positions) are written.
 */
#ifndef ZX_WRITER_WRITER_H
#define ZX_WRITER_WRITER_H

#include "conf/config.h"

typedef struct zx_writer_args {
    const zx_conf *conf;
    int chan;       /* SOCK_SEQPACKET to the supervisor (proto/chan.h) */
    int self_efd;   /* the writer's eventfd: any producer wakes it */
    int gateway_efd; /* the gateway's eventfd (zx_seg_hdr.gw_commit_wait), or -1 */
} zx_writer_args;

/* Run until SIGTERM (then apply every published frame and return 0), or
 * return on a fatal error: ZX_EXIT_FATAL_CONFIG (proto/control.h) when
 * another process holds the workspace (restarting cannot help), 1 when the
 * store or the workspace cannot be opened for another reason. */
int zx_writer_main(const zx_writer_args *a);

#endif
