/*
 * gateway.h — the gateway process ("zxd: gateway").
 *
 * It only speaks HTTP: it checks a push's key, reads its body (inflating
 * gzip) and hands it, untouched, to the stream's worker through the
 * pipeline segment's "in" ring; it relays the worker's answer from the
 * "out" ring.  It never parses a body, so a hostile body cannot hurt it.
 * It also answers GET /healthz from the status words in the segments.
 */
#ifndef ZX_GATEWAY_GATEWAY_H
#define ZX_GATEWAY_GATEWAY_H

#include <stdint.h>

#include "conf/config.h"

typedef struct zx_gateway_args {
    const zx_conf *conf;
    int chan;        /* SOCK_SEQPACKET to the supervisor (proto/chan.h) */
    int self_efd;    /* the gateway's eventfd */
    int listen_fd;   /* listening TCP socket made by the supervisor */
    uint64_t generation; /* 1 for the first gateway zxd starts, then one
                            more for each restart: tags request ids */
} zx_gateway_args;

/* Run until SIGTERM (stop accepting, answer what is pending for up to
 * 5 s, return 0) or a fatal error (return 1). */
int zx_gateway_main(const zx_gateway_args *a);

#endif
