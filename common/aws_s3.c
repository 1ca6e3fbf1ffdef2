/*
 * aws_s3.c — the S3 client's requests (aws_s3.h): one signed request
 * (s3_call), the messages of its failures, and the object and bucket
 * operations.  Multipart operations are in aws_s3_mpu.c, the XML and
 * addressing in aws_s3_xml.c.
 */
#include "common/aws_s3_call.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/base64.h"
#include "common/util.h"

int zx_s3_static_keys(void *ctx, zx_aws_keys *out, char *err, size_t errlen)
{
    const zx_aws_keys *k = ctx;
    if (!k || !k->access_key || !*k->access_key || !k->secret_key)
        return zx_seterr(err, errlen, "no S3 access key");
    *out = *k;
    return 0;
}

zx_s3 *zx_s3_new(const zx_s3_opts *o, char *err, size_t errlen)
{
    if (!o || !o->region || !*o->region || !o->keys) {
        zx_seterr(err, errlen, "an S3 client needs a region and keys");
        return NULL;
    }
    /* the endpoint's shape is checked once here */
    char *u, *h, *p;
    if (zx_s3_address(o->endpoint, o->region, 1, "bucket", NULL, NULL, &u, &h, &p, err,
                      errlen) < 0)
        return NULL;
    free(u);
    free(h);
    free(p);
    zx_s3 *s = calloc(1, sizeof(*s));
    if (!s) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    zx_http_opts ho = o->http;
    if (ho.timeout_ms <= 0)
        ho.timeout_ms = 60000;   /* a part of several MiB on a slow link */
    if (ho.max_attempts <= 0)
        ho.max_attempts = 4;
    ho.username = ho.password = NULL;
    ho.max_response = 16u << 20; /* a list page of 1000 long keys */
    s->http = zx_http_client_new(&ho, err, errlen);
    s->region = strdup(o->region);
    s->endpoint = o->endpoint && *o->endpoint ? strdup(o->endpoint) : NULL;
    if (!s->endpoint && s->region) {
        size_t n = strlen(s->region) + 32;
        s->endpoint = malloc(n);
        if (s->endpoint)
            snprintf(s->endpoint, n, "https://s3.%s.amazonaws.com", s->region);
    }
    s->path_style = o->path_style;
    s->keys = o->keys;
    s->keys_ctx = o->keys_ctx;
    s->max_get = o->max_get ? o->max_get : (size_t)64 << 20;
    if (!s->http || !s->region || !s->endpoint) {
        if (s->http)
            zx_seterr(err, errlen, "out of memory");
        zx_s3_free(s);
        return NULL;
    }
    return s;
}

void zx_s3_free(zx_s3 *s)
{
    if (!s)
        return;
    zx_http_client_free(s->http);
    free(s->region);
    free(s->endpoint);
    free(s);
}

long zx_s3_last_status(const zx_s3 *s)
{
    return s ? s->last_status : 0;
}

const char *zx_s3_last_code(const zx_s3 *s)
{
    return s ? s->last_code : "";
}

unsigned long zx_s3_requests(const zx_s3 *s)
{
    return s ? zx_http_requests(s->http) : 0;
}

/* ---- header lists ---------------------------------------------------- */

int s3_hdr(s3_hdrs *h, const char *fmt, ...)
{
    if (h->n >= S3_HDRS_MAX)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(h->store[h->n], sizeof(h->store[0]), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(h->store[0]))
        return -1;
    h->v[h->n] = h->store[h->n];
    h->n++;
    h->v[h->n] = NULL;
    return 0;
}

static int s3_digest(const char *alg, const void *data, size_t len, unsigned char *md,
                     unsigned *mdlen)
{
    const EVP_MD *m = strcmp(alg, "md5") == 0 ? EVP_md5() : EVP_sha256();
    return EVP_Digest(data, len, md, mdlen, m, NULL) == 1 ? 0 : -1;
}

int s3_body_headers(s3_hdrs *h, zx_s3_checksum ck, const void *body, size_t len,
                    char phash[65], char b64[48])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    b64[0] = '\0';
    if (s3_digest("sha256", body, len, md, &mdlen) < 0)
        return -1;
    static const char hx[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        phash[2 * i] = hx[md[i] >> 4];
        phash[2 * i + 1] = hx[md[i] & 15];
    }
    phash[64] = '\0';
    if (ck == ZX_S3_CHECKSUM_SHA256) {
        zx_base64_encode(md, 32, b64);
        /* the SDKs name the algorithm too (moto keeps the checksum only then) */
        if (s3_hdr(h, "x-amz-sdk-checksum-algorithm: SHA256") < 0)
            return -1;
        return s3_hdr(h, "x-amz-checksum-sha256: %s", b64);
    }
    if (ck == ZX_S3_CHECKSUM_MD5) {
        char m64[32];
        if (s3_digest("md5", body, len, md, &mdlen) < 0)
            return -1;
        zx_base64_encode(md, 16, m64);
        return s3_hdr(h, "Content-MD5: %s", m64);
    }
    return 0;
}

int s3_sse_headers(s3_hdrs *h, const zx_s3_put_opts *po, char *err, size_t errlen)
{
    if (!po || !po->sse || !*po->sse)
        return 0;
    if (strcmp(po->sse, "AES256") != 0 && strcmp(po->sse, "aws:kms") != 0)
        return zx_seterr(err, errlen, "S3 server-side encryption is AES256 or aws:kms, not '%.40s'",
                         po->sse);
    if (s3_hdr(h, "x-amz-server-side-encryption: %s", po->sse) < 0)
        return zx_seterr(err, errlen, "too many headers");
    if (strcmp(po->sse, "aws:kms") == 0 && po->kms_key_id && *po->kms_key_id &&
        s3_hdr(h, "x-amz-server-side-encryption-aws-kms-key-id: %s", po->kms_key_id) < 0)
        return zx_seterr(err, errlen, "the KMS key id is too long");
    return 0;
}

/* ---- one request ----------------------------------------------------- */

/* The IAM action an operation needs, for AccessDenied. */
static const char *action_of(const char *op)
{
    static const char *const map[][2] = {
        { "PutObject", "s3:PutObject" }, { "GetObject", "s3:GetObject" },
        { "HeadObject", "s3:GetObject" }, { "DeleteObject", "s3:DeleteObject" },
        { "ListObjectsV2", "s3:ListBucket" }, { "CreateBucket", "s3:CreateBucket" },
        { "CreateMultipartUpload", "s3:PutObject" }, { "UploadPart", "s3:PutObject" },
        { "CompleteMultipartUpload", "s3:PutObject" },
        { "AbortMultipartUpload", "s3:AbortMultipartUpload" },
        { "ListMultipartUploads", "s3:ListBucketMultipartUploads" },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(map[i][0], op) == 0)
            return map[i][1];
    return NULL;
}

/* What a status means when the answer has no XML (HEAD has no body). */
static const char *status_text(long st)
{
    switch (st) {
    case 301: return "the bucket is in another region or needs another endpoint";
    case 400: return "bad request";
    case 403: return "access denied (check the keys, the region, the bucket policy)";
    case 404: return "not found";
    case 409: return "conflict";
    case 412: return "precondition failed";
    case 416: return "the range is past the object's end";
    default: return st >= 500 ? "the service failed (tried again)" : "unexpected answer";
    }
}

/* What a message names after the operation: the key, or a list's prefix. */
static const char *subj(const s3_call *c)
{
    return c->key ? c->key : c->about ? c->about : "";
}

int s3_fail(zx_s3 *s, const s3_call *c, const zx_http_response *r, char *err, size_t errlen)
{
    zx_s3_error e;
    zx_s3_parse_error(r->body, r->len, &e);
    snprintf(s->last_code, sizeof(s->last_code), "%s", e.code);
    char code[80], extra[200] = "";
    if (e.code[0])
        snprintf(code, sizeof(code), "%s", e.code);
    else
        snprintf(code, sizeof(code), "HTTP %ld", r->status);
    const char *act = action_of(c->op);
    if (act && (r->status == 403 || strcmp(e.code, "AccessDenied") == 0))
        snprintf(extra, sizeof(extra), " needs %s", act);
    const char *breg = r->header[S3_H_REGION];
    char regmsg[160] = "";
    if (breg && strcmp(breg, s->region) != 0)
        snprintf(regmsg, sizeof(regmsg), "; the bucket is in region %.40s, not %.40s", breg,
                 s->region);
    const char *rid = e.request_id[0] ? e.request_id : r->header[S3_H_REQID];
    char ridmsg[120] = "";
    if (rid && *rid)
        snprintf(ridmsg, sizeof(ridmsg), ", request id %.80s", rid);
    zx_seterr(err, errlen, "S3 bucket %.63s: %s: %s%s (%s%s%.200s%s%s)", c->bucket, code,
              e.message[0] ? e.message : status_text(r->status), regmsg, c->op,
              subj(c)[0] ? " " : "", subj(c), extra, ridmsg);
    return ZX_S3_ERR;
}

static const char *const capture[] = { "ETag", "x-amz-request-id", "Content-Length",
                                       "x-amz-bucket-region", "x-amz-checksum-sha256", NULL };

int s3_do(zx_s3 *s, const s3_call *c, zx_http_response *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    s->last_status = 0;
    s->last_code[0] = '\0';
    char why[512];
    zx_aws_keys k = { 0 };
    if (s->keys(s->keys_ctx, &k, why, sizeof(why)) < 0)
        return zx_seterr(err, errlen, "S3 bucket %.63s: no credentials: %s (%s%s%.200s)",
                         c->bucket, why, c->op, subj(c)[0] ? " " : "", subj(c));
    char *url = NULL, *host = NULL, *path = NULL;
    if (zx_s3_address(s->endpoint, s->region, s->path_style, c->bucket, c->key, c->query, &url,
                      &host, &path, why, sizeof(why)) < 0)
        return zx_seterr(err, errlen, "%s (%s%s%.200s)", why, c->op, subj(c)[0] ? " " : "",
                         subj(c));
    s3_hdrs h = { .n = 0 };
    int bad = s3_hdr(&h, "Host: %s", host) < 0, typed = 0;
    for (int i = 0; c->headers && c->headers[i] && !bad; i++) {
        bad = s3_hdr(&h, "%s", c->headers[i]) < 0;
        typed |= strncasecmp(c->headers[i], "Content-Type:", 13) == 0;
    }
    /* PUT and POST always carry a body (Content-Length: 0 at least), and
     * a type: libcurl would call it a form, which servers then parse */
    int sends = strcmp(c->method, "PUT") == 0 || strcmp(c->method, "POST") == 0;
    if (sends && !typed && !bad)
        bad = s3_hdr(&h, "Content-Type: application/octet-stream") < 0;
    const void *body = c->body ? c->body : "";
    zx_sigv4_request rq = {
        .method = c->method, .path = path, .query = c->query, .headers = (const char *const *)h.v,
        .payload = body, .payload_len = c->len, .payload_hash = c->payload_hash,
        .region = s->region, .service = "s3", .now = time(NULL),
        .flags = ZX_SIGV4_S3 | ZX_SIGV4_CONTENT_SHA256,
    };
    zx_sigv4_signed sg;
    memset(&sg, 0, sizeof(sg));
    int rc = 0;
    if (bad) {
        rc = zx_seterr(err, errlen, "S3 bucket %.63s: a header is too long (%s)", c->bucket,
                       c->op);
    } else if (zx_sigv4_sign(&rq, &k, &sg, why, sizeof(why)) < 0) {
        rc = zx_seterr(err, errlen, "S3 bucket %.63s: cannot sign the request: %s (%s)",
                       c->bucket, why, c->op);
    } else {
        const char *all[S3_HDRS_MAX + 8];
        int n = 0;
        for (int i = 0; i < h.n; i++)
            all[n++] = h.v[i];
        for (int i = 0; sg.lines[i]; i++)
            all[n++] = sg.lines[i];
        all[n++] = "Expect:"; /* no 100-continue round trip (not signed) */
        all[n] = NULL;
        zx_http_extra x = { .capture = capture, .max_response = c->max_response };
        int hr = zx_http_request_ex(s->http, c->method, url, all, sends ? body : NULL,
                                    sends ? c->len : 0, &x, r, why, sizeof(why));
        s->last_status = r->status;
        if (hr != 0)
            rc = zx_seterr(err, errlen, "S3 bucket %.63s: %s %s: %s (%s%s%.200s)", c->bucket,
                           hr == ZX_HTTP_TOO_BIG ? "answer too large from" : "cannot reach",
                           s->endpoint, why, c->op, subj(c)[0] ? " " : "", subj(c));
    }
    zx_sigv4_signed_free(&sg);
    free(url);
    free(host);
    free(path);
    return rc;
}

/* Copies an ETag header into info. */
static void set_info(zx_s3_object_info *info, const zx_http_response *r, uint64_t size)
{
    if (!info)
        return;
    info->size = size;
    snprintf(info->etag, sizeof(info->etag), "%s", r->header[S3_H_ETAG] ? r->header[S3_H_ETAG] : "");
    snprintf(info->sha256, sizeof(info->sha256), "%s",
             r->header[S3_H_SHA256] ? r->header[S3_H_SHA256] : "");
}

/* ---- objects and buckets --------------------------------------------- */

int zx_s3_create_bucket(zx_s3 *s, const char *bucket, char *err, size_t errlen)
{
    char body[256] = "";
    if (strcmp(s->region, "us-east-1") != 0)
        snprintf(body, sizeof(body),
                 "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                 "<LocationConstraint>%.64s</LocationConstraint></CreateBucketConfiguration>",
                 s->region);
    s3_call c = { .op = "CreateBucket", .method = "PUT", .bucket = bucket, .body = body,
                  .len = strlen(body) };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    if (rc == 0 && r.status != 200)
        rc = s3_is_code(&r, "BucketAlreadyOwnedByYou") ? 0 : s3_fail(s, &c, &r, err, errlen);
    zx_http_response_free(&r);
    return rc;
}

int zx_s3_put_object(zx_s3 *s, const char *bucket, const char *key, const void *body,
                     size_t len, const zx_s3_put_opts *po, zx_s3_object_info *info,
                     char *err, size_t errlen)
{
    static const zx_s3_put_opts none;
    if (!po)
        po = &none;
    s3_hdrs h = { .n = 0 };
    char phash[65], b64[48];
    if (s3_hdr(&h, "Content-Type: %s",
               po->content_type ? po->content_type : "application/octet-stream") < 0 ||
        (po->if_none_match && s3_hdr(&h, "If-None-Match: *") < 0))
        return zx_seterr(err, errlen, "S3 bucket %.63s: the content type is too long (PutObject)",
                         bucket);
    if (s3_sse_headers(&h, po, err, errlen) < 0)
        return ZX_S3_ERR;
    if (s3_body_headers(&h, po->checksum, body, len, phash, b64) < 0)
        return zx_seterr(err, errlen, "out of memory");
    s3_call c = { .op = "PutObject", .method = "PUT", .bucket = bucket, .key = key,
                  .headers = (const char *const *)h.v, .body = body, .len = len,
                  .payload_hash = phash };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    if (rc == 0 && r.status == 200)
        set_info(info, &r, len);
    else if (rc == 0 && r.status == 412)
        rc = ZX_S3_EXISTS;
    else if (rc == 0)
        rc = s3_fail(s, &c, &r, err, errlen);
    zx_http_response_free(&r);
    return rc;
}

int zx_s3_head_object(zx_s3 *s, const char *bucket, const char *key,
                      zx_s3_object_info *info, char *err, size_t errlen)
{
    const char *const mode[] = { "x-amz-checksum-mode: ENABLED", NULL };
    s3_call c = { .op = "HeadObject", .method = "HEAD", .bucket = bucket, .key = key,
                  .headers = mode };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    if (rc == 0 && r.status == 200) {
        const char *cl = r.header[S3_H_LENGTH];
        set_info(info, &r, cl ? strtoull(cl, NULL, 10) : 0);
    } else if (rc == 0 && r.status == 404) {
        rc = ZX_S3_NOT_FOUND;
    } else if (rc == 0) {
        rc = s3_fail(s, &c, &r, err, errlen);
    }
    zx_http_response_free(&r);
    return rc;
}

/* Whether r's error code is code. */
int s3_is_code(const zx_http_response *r, const char *code)
{
    zx_s3_error e;
    zx_s3_parse_error(r->body, r->len, &e);
    return strcmp(e.code, code) == 0;
}

/* GET with an optional Range header. */
static int get(zx_s3 *s, const char *op, const char *bucket, const char *key, const char *range,
               size_t max, char **data, size_t *len, char *err, size_t errlen)
{
    *data = NULL;
    *len = 0;
    s3_hdrs h = { .n = 0 };
    if (range)
        s3_hdr(&h, "Range: %s", range);
    s3_call c = { .op = op, .method = "GET", .bucket = bucket, .key = key,
                  .headers = (const char *const *)h.v, .max_response = max };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    if (rc == 0 && (r.status == 200 || r.status == 206)) {
        *data = r.body ? r.body : strdup("");
        *len = r.len;
        r.body = NULL;
        if (!*data)
            rc = zx_seterr(err, errlen, "out of memory");
    } else if (rc == 0 && r.status == 404 && !s3_is_code(&r, "NoSuchBucket")) {
        rc = ZX_S3_NOT_FOUND;
    } else if (rc == 0) {
        rc = s3_fail(s, &c, &r, err, errlen);
    }
    zx_http_response_free(&r);
    return rc;
}

int zx_s3_get_object(zx_s3 *s, const char *bucket, const char *key, size_t max,
                     char **data, size_t *len, char *err, size_t errlen)
{
    return get(s, "GetObject", bucket, key, NULL, max ? max : s->max_get, data, len, err,
               errlen);
}

int zx_s3_get_range(zx_s3 *s, const char *bucket, const char *key, uint64_t off, size_t n,
                    char **data, size_t *len, char *err, size_t errlen)
{
    *data = NULL;
    *len = 0;
    if (n == 0)
        return zx_seterr(err, errlen, "an S3 range needs at least one byte");
    if (off > UINT64_MAX - n)
        return zx_seterr(err, errlen, "an S3 range past 2^64 bytes");
    char range[64];
    snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)off,
             (unsigned long long)(off + n - 1));
    /* an error body may be larger than a small range */
    return get(s, "GetObject", bucket, key, range, n < 65536 ? 65536 : n, data, len, err,
               errlen);
}

int zx_s3_delete_object(zx_s3 *s, const char *bucket, const char *key, char *err,
                        size_t errlen)
{
    s3_call c = { .op = "DeleteObject", .method = "DELETE", .bucket = bucket, .key = key };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    if (rc == 0 && r.status != 204 && r.status != 200)
        rc = s3_fail(s, &c, &r, err, errlen);
    zx_http_response_free(&r);
    return rc;
}

/* Appends "&name=value" (value percent-encoded) to q when value is set. */
int s3_query(zx_buf *q, const char *name, const char *value)
{
    if (!value || !*value)
        return 0;
    char *e = zx_aws_uri_encode(value, strlen(value), 0);
    int rc = e ? zx_buf_printf(q, "%s%s=%s", q->len ? "&" : "", name, e) : -1;
    free(e);
    return rc;
}

int zx_s3_list_objects(zx_s3 *s, const char *bucket, const char *prefix,
                       const char *continuation, zx_s3_list *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    zx_buf q = { 0 };
    if (zx_buf_printf(&q, "list-type=2&encoding-type=url") < 0 ||
        s3_query(&q, "prefix", prefix) < 0 ||
        s3_query(&q, "continuation-token", continuation) < 0) {
        zx_buf_free(&q);
        return zx_seterr(err, errlen, "out of memory");
    }
    s3_call c = { .op = "ListObjectsV2", .method = "GET", .bucket = bucket, .key = NULL,
                  .query = q.p, .about = prefix };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    if (rc == 0 && r.status != 200)
        rc = s3_fail(s, &c, &r, err, errlen);
    else if (rc == 0 && zx_s3_parse_list(r.body, r.len, out, err, errlen) < 0)
        rc = ZX_S3_ERR;
    zx_http_response_free(&r);
    zx_buf_free(&q);
    return rc;
}

void zx_s3_list_free(zx_s3_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i].key);
    free(l->items);
    free(l->next);
    memset(l, 0, sizeof(*l));
}
