/*
 * http_push.h — the stream worker of an HTTP push pipeline.
 *
 * One process per pipeline ("zxd: stream NAME").  It takes push requests
 * from its segment's "in" ring (the gateway put them there), parses the
 * body into rows (common/json_rows.h), encodes one frame per request
 * (proto/frame.h) into the "frames" ring for the writer, and answers
 * through the "out" ring: at once (ack: accepted) or when the writer has
 * acknowledged the frame (ack: commit / ?wait=commit).  Idempotency keys
 * are looked up in the LMDB store (read-only) and among the frames still
 * in flight.  A hostile body can at worst crash this process.
 */
#ifndef ZX_SOURCES_HTTP_PUSH_H
#define ZX_SOURCES_HTTP_PUSH_H

#include "common/segment.h"
#include "conf/config.h"

typedef struct zx_worker_args {
    const zx_conf *conf;
    const zx_conf_pipeline *pipeline;
    zx_segment *seg;       /* mapped; owned by the caller */
    int self_efd;          /* this worker's eventfd */
    int writer_efd;
    int gateway_efd;
} zx_worker_args;

/* Run until SIGTERM; returns the process exit code (0 after a clean
 * drain, 1 on a fatal error). */
int zx_http_push_main(const zx_worker_args *a);

#endif
