/*
 * aws_call.c — one signed request to an AWS service (aws_call.h).
 *
 * It must never: put a secret, a token or a signature in a message, or
 * send a request it did not sign with the keys of this very call (they
 * may have been refreshed since the last one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/aws_call.h"
#include "common/aws_sigv4.h"
#include "common/util.h"

struct zx_aws_client {
    char service[32];
    char region[33];
    char url[ZX_AWS_URL_MAX];   /* scheme://host[:port][/prefix], no trailing '/' */
    char host[256];             /* host[:port], the Host header */
    size_t prefix;              /* bytes of url before the path prefix */
    zx_aws_creds *creds;        /* borrowed */
    zx_http_client *http;
};

static int name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (!n || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return 0;
    return 1;
}

/* Split endpoint into c->url, c->host, c->prefix.  0 or -1 with err. */
static int parse_endpoint(zx_aws_client *c, const char *endpoint, char *err, size_t errlen)
{
    const char *rest;
    if (!strncmp(endpoint, "https://", 8))
        rest = endpoint + 8;
    else if (!strncmp(endpoint, "http://", 7))
        rest = endpoint + 7;
    else
        return zx_seterr(err, errlen, "endpoint %.200s: not an http:// or https:// URL",
                         endpoint);
    size_t hl = strcspn(rest, "/?#");
    if (!hl || hl >= sizeof(c->host))
        return zx_seterr(err, errlen, "endpoint %.200s: no host, or a host over %zu bytes",
                         endpoint, sizeof(c->host) - 1);
    if (rest[hl] == '?' || rest[hl] == '#')
        return zx_seterr(err, errlen, "endpoint %.200s: a query or a fragment is not taken",
                         endpoint);
    for (size_t i = 0; i < hl; i++)
        if ((unsigned char)rest[i] <= ' ' || rest[i] == '@' || rest[i] == '\\')
            return zx_seterr(err, errlen, "endpoint %.200s: the host holds '%c' or a blank",
                             endpoint, rest[i] == '@' || rest[i] == '\\' ? rest[i] : ' ');
    memcpy(c->host, rest, hl);
    c->host[hl] = '\0';
    size_t n = strlen(endpoint);
    while (n > (size_t)(rest - endpoint) + hl && endpoint[n - 1] == '/')
        n--;                                  /* no trailing '/' */
    if (n >= sizeof(c->url))
        return zx_seterr(err, errlen, "endpoint: longer than %d bytes", ZX_AWS_URL_MAX - 1);
    memcpy(c->url, endpoint, n);
    c->url[n] = '\0';
    c->prefix = (size_t)(rest - endpoint) + hl;
    return 0;
}

zx_aws_client *zx_aws_client_new(const char *service, const char *region, const char *endpoint,
                                 zx_aws_creds *creds, const zx_http_opts *http, char *err,
                                 size_t errlen)
{
    if (!service || !name_ok(service, 31)) {
        zx_seterr(err, errlen, "AWS service name %.40s: not [a-z0-9-]{1,31}",
                  service ? service : "(none)");
        return NULL;
    }
    if (!region || !name_ok(region, 32)) {
        zx_seterr(err, errlen, "region %.40s: not a region name such as eu-west-1",
                  region ? region : "(none)");
        return NULL;
    }
    zx_aws_client *c = calloc(1, sizeof(*c));
    if (!c) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(c->service, sizeof(c->service), "%s", service);
    snprintf(c->region, sizeof(c->region), "%s", region);
    char def[160];
    if (!endpoint || !endpoint[0]) {
        snprintf(def, sizeof(def), "https://%s.%s.amazonaws.com", service, region);
        endpoint = def;
    }
    zx_http_opts o = {0};
    if (http)
        o = *http;
    if (parse_endpoint(c, endpoint, err, errlen) < 0 ||
        !(c->http = zx_http_client_new(&o, err, errlen))) {
        free(c);
        return NULL;
    }
    c->creds = creds;
    return c;
}

void zx_aws_client_free(zx_aws_client *c)
{
    if (!c)
        return;
    zx_http_client_free(c->http);
    free(c);
}

const char *zx_aws_client_host(const zx_aws_client *c) { return c->host; }
const char *zx_aws_client_url(const zx_aws_client *c) { return c->url; }

int zx_aws_call(zx_aws_client *c, const char *method, const char *path, const char *query,
                const char *const *headers, const void *body, size_t len, unsigned sign_flags,
                zx_http_response *resp, char *err, size_t errlen)
{
    memset(resp, 0, sizeof(*resp));
    if (!path || path[0] != '/')
        return zx_seterr(err, errlen, "request path must start with '/'");
    zx_aws_keys keys;
    char cerr[1024];
    if (zx_aws_creds_get(c->creds, 0, &keys, cerr, sizeof(cerr)) < 0) {
        zx_seterr(err, errlen, "%s", cerr);
        return ZX_AWS_NO_CREDS;
    }
    /* the full path: the endpoint's prefix, then path */
    const char *prefix = c->url + c->prefix;
    size_t pl = strlen(prefix), ql = query && query[0] ? strlen(query) : 0;
    size_t full_len = pl + strlen(path) + 1;
    char *full = malloc(full_len);
    char *url = malloc(strlen(c->url) + strlen(path) + ql + 2);
    size_t nh = 0;
    while (headers && headers[nh])
        nh++;
    const char **hdrs = calloc(nh + 2 + 6, sizeof(*hdrs));
    char host[300];
    zx_sigv4_signed sig;
    memset(&sig, 0, sizeof(sig));
    int rc = -1;
    if (!full || !url || !hdrs) {
        zx_seterr(err, errlen, "out of memory");
        goto out;
    }
    snprintf(full, full_len, "%s%s", prefix, path);
    sprintf(url, "%s%s%s%s", c->url, path, ql ? "?" : "", ql ? query : "");
    snprintf(host, sizeof(host), "Host: %s", c->host);
    size_t k = 0;
    hdrs[k++] = host;
    for (size_t i = 0; i < nh; i++)
        hdrs[k++] = headers[i];
    hdrs[k] = NULL;
    zx_sigv4_request rq = {
        .method = method, .path = full, .query = query, .headers = hdrs,
        .payload = body, .payload_len = body ? len : 0,
        .region = c->region, .service = c->service, .now = time(NULL),
        .flags = sign_flags,
    };
    char serr[300];
    if (zx_sigv4_sign(&rq, &keys, &sig, serr, sizeof(serr)) < 0) {
        zx_seterr(err, errlen, "cannot sign the request: %s", serr);
        goto out;
    }
    /* the signed Host line itself (libcurl would drop a default port) */
    k = 1;
    for (size_t i = 0; i < nh; i++)
        hdrs[k++] = headers[i];
    for (size_t i = 0; sig.lines[i] && i < 5; i++)
        hdrs[k++] = sig.lines[i];
    hdrs[k] = NULL;
    rc = zx_http_request(c->http, method, url, hdrs, body, body ? len : 0, resp, err, errlen);
out:
    zx_sigv4_signed_free(&sig);
    free(hdrs);
    free(url);
    free(full);
    return rc;
}

int zx_aws_json_call(zx_aws_client *c, const char *target, const char *json, size_t len,
                     zx_http_response *resp, char *err, size_t errlen)
{
    char tgt[200];
    if (snprintf(tgt, sizeof(tgt), "X-Amz-Target: %s", target) >= (int)sizeof(tgt)) {
        memset(resp, 0, sizeof(*resp));
        return zx_seterr(err, errlen, "X-Amz-Target %.60s...: too long", target);
    }
    const char *h[] = {"Content-Type: application/x-amz-json-1.1", tgt, NULL};
    return zx_aws_call(c, "POST", "/", NULL, h, json, len, 0, resp, err, errlen);
}
