/*
 * dhttp_opts.h — the HTTP API destination's own options (conf/plugin.h):
 * the rows of dhttp_plugin.c (section `pipelines.<name>.destination.http`)
 * set them, per reverse sync, into the struct zx_conf_pipeline.dest_own
 * points at; the destination gets it as zx_dest_args.opts.  Owned by the
 * zx_conf.  The connection's options (base_url, headers, timeout, ca_file,
 * insecure) are zx_conf_connection's (kind http).
 */
#ifndef ZX_DEST_DHTTP_OPTS_H
#define ZX_DEST_DHTTP_OPTS_H

#include <stdint.h>

typedef struct zx_dhttp_opts {
    char *connection;        /* `connection`: a `kind: http` connection */
    char *path;              /* `path`: appended to its base_url; starts '/' */
    char *method;            /* "POST" (default) | "PUT" | "PATCH" */
    char *body;              /* "array" (default) | "ndjson" | "wrap" */
    char *wrap;              /* with body wrap: the member name ("records") */
    uint32_t batch_rows;     /* rows (or keys) per request at most */
    char *rate;              /* "20/s", "600/m", "5"; NULL: no limit */
    uint32_t concurrency;    /* requests in flight at most */
    char *delete_path;       /* mirror: deletes go there; NULL: to path, as
                                {"op":"delete","key":{...}} items */
    char *delete_method;     /* with delete_path: "DELETE" (default) |
                                "POST" | "PUT" | "PATCH" */
    char *op_field;          /* NULL: rows as they are; set: every row gets
                                "<op_field>":"upsert" and delete items use it
                                instead of "op" */
    char *results_path;      /* NULL: none; "results", "data.items": where
                                the response's per-item results are */
    uint32_t max_retries;    /* sends of one batch after the first, at most */
    uint32_t max_backoff_ms; /* the longest wait between two sends */
    uint64_t max_response;   /* bytes of a response body at most */
    /* derived by the check (not a row) */
    double rate_per_s;       /* 0: no limit */
} zx_dhttp_opts;

/* Parse a `rate` ("20/s", "600/m", "3600/h", or a number: per second) into
 * *per_s (> 0).  0, or -1 when it is none of those (or 0, or above 100000
 * per second). */
int zx_dhttp_parse_rate(const char *s, double *per_s);

#endif
