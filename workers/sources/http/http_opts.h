/*
 * http_opts.h — the http source's own options (conf/plugin.h): the rows
 * flagged ZX_CF_OWN of http_plugin.c set them, per pipeline, into the
 * struct zx_conf_pipeline.own points at.  Read as
 * `const zx_http_opts *o = p->own;` (never NULL for a loaded http
 * pipeline; owned by the zx_conf, freed with it).  Its secrets (key,
 * webhook_secret) are rows flagged ZX_CF_SECRET: never quoted in a
 * message, NULL when loaded with ZX_CONF_SKIP_SECRETS and written as a
 * reference, and scrubbed from a child like every secret
 * (supervisor/scrub.c, through zx_conf_own_secrets).
 */
#ifndef ZX_SOURCES_HTTP_OPTS_H
#define ZX_SOURCES_HTTP_OPTS_H

#include <stdint.h>

#include "conf/config.h"

typedef struct zx_http_opts {
    char *key;               /* `key`: push key (secret), printable ASCII
                                without spaces; NULL: none (then a
                                webhook_secret is required) */
    char *webhook_secret;    /* `webhook_secret`: Standard Webhooks secret
                                "whsec_..." (secret); NULL: none */
    int ack_commit;          /* `ack`: accepted (0, default) or commit (1) */
    uint64_t max_body_size;  /* `max_body_size`: the stream's own limit as
                                written; 0: the server's http.max_body_size
                                (the effective one is zx_conf_pipeline's
                                body_limit) */
} zx_http_opts;

/* p's http options: p->own when p is a pipeline of the http plug-in, else
 * NULL (p NULL, another source, or a configuration with errors). */
const zx_http_opts *zx_http_opts_of(const zx_conf_pipeline *p);

#endif
