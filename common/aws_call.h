/*
 * aws_call.h — one signed request to an AWS service (or a compatible one:
 * moto, kinesalite, MinIO): the endpoint, the credentials of the
 * connection (common/aws_creds.h), SigV4 (common/aws_sigv4.h) and zx's
 * HTTP client (common/http_client.h) put together, for the Kinesis source
 * and every AWS feature after it.
 *
 * Not thread-safe: one client per thread.  A request is signed once and
 * the HTTP client may send it again (5xx, 429, connection errors: see
 * http_client.h), which a signature allows for 15 minutes.
 *
 * Messages never hold a secret, a session token nor a signature.
 */
#ifndef ZX_COMMON_AWS_CALL_H
#define ZX_COMMON_AWS_CALL_H

#include <stddef.h>

#include "common/aws_creds.h"
#include "common/http_client.h"

#define ZX_AWS_URL_MAX 2048      /* bytes of an endpoint or a request URL */

/* What zx_aws_call returns besides 0 and the ZX_HTTP_* codes. */
#define ZX_AWS_NO_CREDS  -10     /* no credentials (err says which links
                                    were tried and why each failed) */

typedef struct zx_aws_client zx_aws_client;

/* A client of `service` (its signing name: "kinesis", "s3", "sts",
 * "glue") in `region` ("eu-west-1": [a-z0-9-], 1 to 32), at endpoint
 * (NULL or "": https://SERVICE.REGION.amazonaws.com; else an http:// or
 * https:// URL, host[:port] and an optional path prefix, no query), taking
 * its keys from creds (borrowed: it must outlive the client), with the
 * HTTP settings http (copied; NULL: the defaults).  Makes no request.
 * Returns the client (zx_aws_client_free), or NULL with err ("endpoint
 * ftp://x: not an http:// or https:// URL", a bad region, out of memory). */
zx_aws_client *zx_aws_client_new(const char *service, const char *region, const char *endpoint,
                                 zx_aws_creds *creds, const zx_http_opts *http, char *err,
                                 size_t errlen);

void zx_aws_client_free(zx_aws_client *c);

/* The endpoint's host[:port] and its URL without a trailing '/' (owned by
 * c, for messages). */
const char *zx_aws_client_host(const zx_aws_client *c);
const char *zx_aws_client_url(const zx_aws_client *c);

/* One request: method, path (percent-encoded as sent, starting with '/';
 * appended to the endpoint's path prefix), query (as sent, no '?'; NULL:
 * none), headers ("Name: value", NULL-ended, NULL: none; Host and the
 * signature's headers are added), body[0..len) (NULL: none), sign_flags
 * (ZX_SIGV4_*).  Returns
 *   0              an answer, any status, in *resp;
 *   ZX_HTTP_*      no usable answer (http_client.h), err says why;
 *   ZX_AWS_NO_CREDS no credentials, err says why;
 *   -1             the request cannot be made (out of memory, a path or
 *                  header the signer refuses), err says why.
 * *resp is set in every case: free it with zx_http_response_free. */
int zx_aws_call(zx_aws_client *c, const char *method, const char *path, const char *query,
                const char *const *headers, const void *body, size_t len, unsigned sign_flags,
                zx_http_response *resp, char *err, size_t errlen);

/* An AWS JSON protocol call (awsJson1_1: Kinesis, Glue, ...): POST / with
 * X-Amz-Target: target ("Kinesis_20131202.GetRecords") and the JSON body.
 * Returns as zx_aws_call. */
int zx_aws_json_call(zx_aws_client *c, const char *target, const char *json, size_t len,
                     zx_http_response *resp, char *err, size_t errlen);

#endif
