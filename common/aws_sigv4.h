/*
 * aws_sigv4.h — AWS Signature Version 4: signs one HTTP request for any
 * AWS service (Kinesis, S3, STS, ...) with an access key, its secret and
 * an optional session token, the way the AWS SDKs do:
 *
 *   canonical request = method \n canonical URI \n canonical query \n
 *                       canonical headers \n signed headers \n payload hash
 *   string to sign    = "AWS4-HMAC-SHA256" \n yyyymmddThhmmssZ \n
 *                       date/region/service/aws4_request \n hex(SHA256(creq))
 *   signing key       = HMAC chain "AWS4"+secret -> date -> region ->
 *                       service -> "aws4_request"
 *
 * Non-S3 services get a normalised path ("." and ".." segments and
 * repeated slashes removed) whose segments are percent-encoded again (the
 * path as sent is encoded twice); S3 (ZX_SIGV4_S3) takes the path as given
 * (no normalisation) and encodes it once: each segment's %XX escapes are
 * decoded and the bytes encoded again, so a key encoded with
 * zx_aws_uri_encode(key, len, 1) is unchanged and a byte sent raw is
 * encoded.  Query names and values are decoded and re-encoded with AWS's
 * rules ('+' is a literal plus: send a space as %20), sorted by name then
 * value, "name=" for a name without a value.  Header names are
 * lowercased, values trimmed with inner runs of spaces collapsed, several
 * lines of one name joined with ",".  X-Amz-Date (and X-Amz-Security-Token
 * when a session token is given, x-amz-content-sha256 with
 * ZX_SIGV4_CONTENT_SHA256) are added to the signed headers.
 *
 * Pure: OpenSSL's libcrypto for SHA-256 and HMAC, no I/O, no globals,
 * thread-safe.  The derived keys are wiped from the stack after use; the
 * secret never appears in an error message.
 */
#ifndef ZX_COMMON_AWS_SIGV4_H
#define ZX_COMMON_AWS_SIGV4_H

#include <stddef.h>
#include <time.h>

#define ZX_SIGV4_UNSIGNED "UNSIGNED-PAYLOAD"
#define ZX_SIGV4_S3             0x1u  /* S3: no path normalisation, no double encoding */
#define ZX_SIGV4_CONTENT_SHA256 0x2u  /* add and sign x-amz-content-sha256 (S3 needs it) */

/* Bounds on input from outside; longer input is refused with an error. */
#define ZX_SIGV4_LINE_MAX    16384    /* bytes of one header line */
#define ZX_SIGV4_HEADERS_MAX 128      /* header lines of one request */
#define ZX_SIGV4_PATH_MAX    16384    /* bytes of the path */
#define ZX_SIGV4_QUERY_MAX   65536    /* bytes of the query */

typedef struct zx_aws_keys {          /* borrowed for the call */
    const char *access_key;
    const char *secret_key;           /* secret: never logged */
    const char *session_token;        /* NULL or "": none */
} zx_aws_keys;

typedef struct zx_sigv4_request {
    const char *method;               /* "GET", "POST", ... */
    const char *path;                 /* as sent (percent-encoded), at least "/" */
    const char *query;                /* as sent, no '?'; NULL or "": none */
    const char *const *headers;       /* "Name: value" as sent, NULL-ended; must hold Host */
    const void *payload;              /* hashed unless payload_hash is set */
    size_t payload_len;
    const char *payload_hash;         /* NULL: SHA-256 of payload; else a hex digest
                                         or ZX_SIGV4_UNSIGNED */
    const char *region, *service;     /* "eu-west-1", "kinesis" / "s3" / "sts" */
    time_t now;                       /* signing time, UTC seconds */
    unsigned flags;                   /* ZX_SIGV4_* */
} zx_sigv4_request;

/* The header lines to add to the request (each "Name: value", no CRLF). */
typedef struct zx_sigv4_signed {
    char *lines[5];                   /* NULL-ended: Authorization, X-Amz-Date,
                                         [x-amz-content-sha256], [X-Amz-Security-Token] */
    char signature[65];               /* hex, for tests */
} zx_sigv4_signed;

/* Sign rq with k.  0 and out filled (free with zx_sigv4_signed_free), or -1
 * with the reason in err (bad input: no Host, a header line without ':',
 * a line, path or query over its ZX_SIGV4_*_MAX, control characters in a
 * header, a malformed payload_hash, out of memory); out is then empty
 * (all lines NULL), safe to free.  Never puts the secret in err.
 *
 * Headers of rq that the signer adds itself (X-Amz-Date, and
 * X-Amz-Security-Token / x-amz-content-sha256 when it adds them) must not
 * be in rq->headers, nor Authorization: they are refused, so a request
 * never carries two. */
int zx_sigv4_sign(const zx_sigv4_request *rq, const zx_aws_keys *k,
                  zx_sigv4_signed *out, char *err, size_t errlen);

/* Frees out's lines and sets them to NULL; out itself is the caller's.
 * NULL and an already freed out are fine. */
void zx_sigv4_signed_free(zx_sigv4_signed *out);

/* For tests (the suite's .creq and .sts files): the canonical request and
 * the string to sign, malloc'd, caller frees; -1 with err (as
 * zx_sigv4_sign), *creq and *sts then NULL. */
int zx_sigv4_canonical(const zx_sigv4_request *rq, const zx_aws_keys *k,
                       char **creq, char **sts, char *err, size_t errlen);

/* Percent-encode s per AWS (unreserved A-Z a-z 0-9 - . _ ~ kept; '/' kept
 * when keep_slash): malloc'd, NULL on out of memory. */
char *zx_aws_uri_encode(const char *s, size_t len, int keep_slash);

/* SHA-256 of data as 64 lowercase hex digits and a NUL into hex (room for
 * 65).  0, or -1 when libcrypto fails (out of memory). */
int zx_aws_sha256_hex(const void *data, size_t len, char hex[65]);

#endif /* ZX_COMMON_AWS_SIGV4_H */
