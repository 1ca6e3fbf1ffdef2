/*
 * dhttp_send.h — the HTTP API destination's requests: batches sent with
 * libcurl's multi interface, at most `concurrency` in flight, starting at
 * least 1/rate s apart (retries included), each tried again after a
 * timeout, a connection error, a 5xx, 408, 409, 425 or 429 (waits
 * doubling from 0.5 s with jitter, at least Retry-After, at most
 * max_backoff_ms; max_retries sends after the first), and given up on at
 * once after any other answer outside 2xx, a refused certificate or an
 * answer larger than max_response.
 *
 * Every request has a timeout (timeout_ms, connect included), and every
 * wait is bounded: a sender never waits for a peer longer than
 * (max_retries + 1) * (timeout_ms + max_backoff_ms) per batch.
 *
 * Messages name the method and path ("HTTP 503 from POST /contacts"),
 * never the base URL nor a header; an answer's text in a message is
 * sanitized (dhttp_results.h) and every header value found in it is
 * replaced by "***".
 *
 * Not thread-safe: one sender per destination.
 */
#ifndef ZX_DEST_DHTTP_SEND_H
#define ZX_DEST_DHTTP_SEND_H

#include <stddef.h>
#include <stdint.h>

#include "workers/destinations/dest.h"

typedef struct zx_dhttp_cfg {
    const char *base_url;         /* http:// or https://, no trailing '/' needed */
    const char *const *hdr_names; /* headers sent with every request */
    const char *const *hdr_values;/* secrets */
    size_t nheaders;
    long timeout_ms;              /* one request; > 0 */
    const char *ca_file;          /* NULL: the system's */
    int insecure;
    unsigned concurrency;         /* >= 1 */
    double rate_per_s;            /* 0: none */
    unsigned max_retries;
    long max_backoff_ms;          /* > 0 */
    size_t max_response;          /* > 0 */
    int (*stopping)(void *ctx);   /* the run's stop (dest.h); NULL: none */
    void *stop_ctx;
} zx_dhttp_cfg;

typedef struct zx_dhttp_sender zx_dhttp_sender;

/* One batch.  The caller sets the inputs; send_all sets the outputs. */
typedef struct zx_dhttp_batch {
    const char *method;           /* "POST" ... */
    const char *path;             /* appended to base_url; in messages */
    const char *content_type;
    const char *body;             /* the caller's, len bytes */
    size_t len;
    char idem[40];                /* Idempotency-Key (hex, NUL-ended) */
    /* out */
    long status;                  /* the last answer's HTTP status; 0: none */
    char *resp;                   /* its body, NUL-ended (resp_len bytes);
                                     owned by the batch: zx_dhttp_batch_clear */
    size_t resp_len;
    int done;                     /* 1: a 2xx answer */
} zx_dhttp_batch;

/* A sender for cfg (its strings are copied).  NULL with err when out of
 * memory or libcurl cannot start.  Free with zx_dhttp_sender_free. */
zx_dhttp_sender *zx_dhttp_sender_new(const zx_dhttp_cfg *cfg, char *err, size_t errlen);

/* Frees s (and wipes its header values).  NULL: no-op. */
void zx_dhttp_sender_free(zx_dhttp_sender *s);

/* Send b[0..n) as the top of this file says; counts batches_retried,
 * batches_failed and notes errors (zx_dest_note_error) in st.  Returns 0
 * when every batch got a 2xx answer (each b[i].done = 1, its answer in
 * b[i].resp), or -1 with err (one line, after "HTTP 400 from POST /path":
 * the answer's first 200 bytes) once a batch is given up on; the
 * requests then in flight are abandoned (their batches may or may not
 * have arrived). */
int zx_dhttp_send_all(zx_dhttp_sender *s, zx_dhttp_batch *b, size_t n, zx_dest_stats *st,
                      char *err, size_t errlen);

/* Free b's answer.  NULL: no-op. */
void zx_dhttp_batch_clear(zx_dhttp_batch *b);

/* Requests started so far, every send counted (tests). */
unsigned long zx_dhttp_requests(const zx_dhttp_sender *s);

/* The wait before send number `attempt` (>= 1: the first retry is 1):
 * 500 ms doubled attempt-1 times, cut to max_ms, jittered by r (0..1) to
 * between half and all of it; at least retry_after_ms (-1: none), and at
 * most max_ms. */
long zx_dhttp_backoff(unsigned attempt, long retry_after_ms, long max_ms, double r);

/* A Retry-After value: seconds, or an HTTP date (now_s: the time now, in
 * seconds since the epoch), as ms from now (>= 0); -1 when it is neither. */
long zx_dhttp_retry_after(const char *v, long long now_s);

#endif
