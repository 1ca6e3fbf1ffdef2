/*
 * http_client.h — zx's one HTTP client (libcurl), for the schema registry
 * and the HTTP services to come (AWS, Iceberg REST catalogs, OpenSearch,
 * the HTTP API destination).  Each request is bounded: a deadline per
 * attempt, a bound on the response's size, a bound on the attempts and
 * on the time all of them and the waits between them take.  Answers
 * 5xx and 429 and connection errors are tried again after a wait that
 * doubles from the first (with jitter: between half and all of it; at
 * least Retry-After when the server says one, within the total time).
 * A refused TLS certificate, a malformed URL or a response too large are
 * not tried again.
 *
 * Not thread-safe: one client per thread (it keeps one libcurl handle,
 * so that connections are reused).  It follows no redirects and speaks
 * http and https only.  Messages never hold the password, nor the URL
 * (which may carry a token): the caller adds its own context.
 */
#ifndef ZX_COMMON_HTTP_CLIENT_H
#define ZX_COMMON_HTTP_CLIENT_H

#include <stddef.h>

/* What zx_http_request returns besides 0 (an answer). */
#define ZX_HTTP_TRANSFER   1   /* no answer (connect, TLS handshake, timeout,
                                * connection cut) after the attempts allowed:
                                * may work later */
#define ZX_HTTP_TOO_BIG   -2   /* the response is larger than max_response */
#define ZX_HTTP_REFUSED   -3   /* the request cannot work as it is (bad URL,
                                * refused certificate, unreadable TLS files,
                                * out of memory): trying again will not help */

/* A client's settings.  Zero fields take their defaults. */
typedef struct zx_http_opts {
    long timeout_ms;              /* one attempt, connect included; <= 0: 10000 */
    size_t max_response;          /* bytes of a response body; 0: 1 MiB */
    const char *ca_file;          /* PEM CA bundle; NULL: the system's */
    const char *client_cert;      /* PEM client certificate; NULL: none */
    const char *client_key;       /* its key; NULL: in client_cert's file */
    const char *client_key_password; /* secret; NULL: none */
    int insecure;                 /* 1: do not verify the server's
                                   * certificate nor its name (never by
                                   * default) */
    const char *username;         /* HTTP basic authentication; NULL: none */
    const char *password;         /* secret; NULL with a username: "" */
    int max_attempts;             /* tries of one request; <= 0: 3 */
    long backoff_ms;              /* the first wait; <= 0: 200 */
    long backoff_max_ms;          /* the longest wait; <= 0: 5000 */
    long total_ms;                /* all attempts and waits; <= 0:
                                   * max_attempts * timeout_ms */
    const char *user_agent;       /* NULL: "zx" */
    int no_proxy;                 /* 1: never through a proxy, whatever
                                   * http_proxy/https_proxy say (link-local
                                   * services: EC2 and ECS metadata); 0: libcurl's
                                   * proxy variables apply */
} zx_http_opts;

typedef struct zx_http_client zx_http_client;

/* Bounds of the response headers zx_http_request_ex captures. */
#define ZX_HTTP_CAPTURE_MAX   8     /* header names per request */
#define ZX_HTTP_CAPTURE_VALUE 1024  /* bytes of one value kept (longer: cut) */

/* A response.  body is NUL-terminated (len bytes before the NUL), owned by
 * the response: zx_http_response_free frees it. */
typedef struct zx_http_response {
    long status;          /* the HTTP status of the last answer; 0: none */
    char *body;           /* NULL when there was no body */
    size_t len;
    int attempts;         /* requests sent for it, 1..max_attempts */
    /* zx_http_request_ex only: header[i] is the value (trimmed, malloc'd,
     * owned by the response) of the i-th name of its capture list in the
     * last answer, NULL when that answer did not carry it; the first line
     * wins when a name comes twice.  Always NULL for zx_http_request. */
    char *header[ZX_HTTP_CAPTURE_MAX];
} zx_http_response;

/* What zx_http_request_ex adds to a request.  Zero fields: as
 * zx_http_request. */
typedef struct zx_http_extra {
    const char *const *capture;   /* response header names to keep (any case),
                                   * NULL-ended, at most ZX_HTTP_CAPTURE_MAX
                                   * (more: ZX_HTTP_REFUSED); NULL: none */
    size_t max_response;          /* this request's bound on the body;
                                   * 0: the client's max_response */
} zx_http_extra;

/* A new client with o's settings (copied: o's strings need not outlive the
 * call).  Makes no request.  Returns the client (zx_http_client_free), or
 * NULL with the reason in err (out of memory; libcurl without
 * http/https). */
zx_http_client *zx_http_client_new(const zx_http_opts *o, char *err, size_t errlen);

/* Frees the client (and wipes its password).  NULL is a no-op. */
void zx_http_client_free(zx_http_client *c);

/* One request: method ("GET", "POST", "PUT", "DELETE", ...), url (http://
 * or https://), headers (each "Name: value", NULL-ended; may be NULL), a
 * body of body_len bytes (NULL: none).  Tried again as the top of this
 * file says: callers of a request that must not run twice set
 * max_attempts 1.  Returns
 *   0                  an answer: resp->status (any: a 5xx or 429 after
 *                      the last attempt too), its body;
 *   ZX_HTTP_TRANSFER,  no usable answer, with resp->status (0 when there
 *   ZX_HTTP_TOO_BIG,   was no answer) and a message in err such as
 *   ZX_HTTP_REFUSED    "Connection refused (3 attempts in 1.2 s)" or
 *                      "the response is larger than 1048576 bytes".
 * resp is set in every case; free it with zx_http_response_free. */
int zx_http_request(zx_http_client *c, const char *method, const char *url,
                    const char *const *headers, const void *body, size_t body_len,
                    zx_http_response *resp, char *err, size_t errlen);

/* zx_http_request with x's additions (x NULL: the same as
 * zx_http_request): the response headers named in x->capture land in
 * resp->header[], and x->max_response bounds this body. */
int zx_http_request_ex(zx_http_client *c, const char *method, const char *url,
                       const char *const *headers, const void *body, size_t body_len,
                       const zx_http_extra *x, zx_http_response *resp, char *err,
                       size_t errlen);

/* Frees resp's body and captured headers and zeroes it.  NULL is a no-op. */
void zx_http_response_free(zx_http_response *resp);

/* Requests sent so far by c, every attempt counted (for tests, metrics). */
unsigned long zx_http_requests(const zx_http_client *c);

#endif
