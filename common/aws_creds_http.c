/*
 * aws_creds_http.c — the credential chain's HTTP links that answer JSON:
 * ECS container credentials and EC2 instance metadata (IMDSv2)
 * (aws_creds_int.h).
 */
#include "common/aws_creds_int.h"
#include "common/http_client.h"
#include "common/util.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CREDS_MAX_BODY (64 * 1024)
#define IMDS_TIMEOUT_MS 1000
#define IMDS_TOKEN_TTL "21600"

static void resp_wipe_free(zx_http_response *r)
{
    if (r->body)
        explicit_bzero(r->body, r->len);
    zx_http_response_free(r);
}

int zx_aws_json_creds(const char *body, size_t len, zx_aws_cred *out,
                      char *err, size_t errlen)
{
    if (!body || len == 0)
        return zx_seterr(err, errlen, "an empty answer");
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return zx_seterr(err, errlen, "an answer that is not a JSON object");
    }
    const char *code = json_string_value(json_object_get(j, "Code"));
    const char *ak = json_string_value(json_object_get(j, "AccessKeyId"));
    const char *sk = json_string_value(json_object_get(j, "SecretAccessKey"));
    const char *tok = json_string_value(json_object_get(j, "Token"));
    const char *exp = json_string_value(json_object_get(j, "Expiration"));
    time_t t = 0;
    int rc = -1;
    if (code && strcmp(code, "Success") != 0)
        zx_seterr(err, errlen, "the answer's Code is %.100s, not Success", code);
    else if (!ak || !*ak)
        zx_seterr(err, errlen, "an answer without AccessKeyId");
    else if (!sk || !*sk)
        zx_seterr(err, errlen, "an answer without SecretAccessKey");
    else if (exp && zx_aws_parse_time(exp, &t) < 0)
        zx_seterr(err, errlen, "an answer whose Expiration is not a time");
    else if (zx_aws_cred_set(out, ak, sk, tok, t) < 0)
        zx_seterr(err, errlen, "out of memory");
    else
        rc = 0;
    json_decref(j);     /* jansson does not wipe: the strings are freed as is */
    return rc;
}

static zx_http_client *client(long timeout_ms, int attempts, const char *ca_file,
                              char *err, size_t errlen)
{
    zx_http_opts ho = {.timeout_ms = timeout_ms, .max_response = CREDS_MAX_BODY,
                       .ca_file = ca_file, .max_attempts = attempts,
                       .total_ms = timeout_ms * attempts + 500,
                       .no_proxy = 1};   /* metadata services are local: a proxy would
                                            answer with its own host's credentials */
    return zx_http_client_new(&ho, err, errlen);
}

int zx_aws_ecs_fetch(const char *url, const char *auth, const char *ca_file,
                     zx_aws_cred *out, char *err, size_t errlen)
{
    char herr[256];
    zx_http_client *hc = client(2000, 2, ca_file, herr, sizeof(herr));
    if (!hc)
        return zx_seterr(err, errlen, "ECS container: %s", herr);
    char *authh = NULL;
    const char *hdrs[3] = {"Accept: application/json", NULL, NULL};
    if (auth && *auth) {
        if (asprintf(&authh, "Authorization: %s", auth) < 0) {
            zx_http_client_free(hc);
            return zx_seterr(err, errlen, "ECS container: out of memory");
        }
        hdrs[1] = authh;
    }
    zx_http_response r;
    int rc = zx_http_request(hc, "GET", url, hdrs, NULL, 0, &r, herr, sizeof(herr));
    zx_http_client_free(hc);
    if (authh) {
        explicit_bzero(authh, strlen(authh));
        free(authh);
    }
    if (rc != 0) {
        resp_wipe_free(&r);
        return zx_seterr(err, errlen, "ECS container: no answer from %.200s: %s", url, herr);
    }
    if (r.status != 200) {
        long st = r.status;
        resp_wipe_free(&r);
        return zx_seterr(err, errlen, "ECS container: HTTP %ld from %.200s%s", st, url,
                      st == 401 || st == 403 ? " (check AWS_CONTAINER_AUTHORIZATION_TOKEN)" : "");
    }
    char perr[256];
    rc = zx_aws_json_creds(r.body, r.len, out, perr, sizeof(perr));
    resp_wipe_free(&r);
    if (rc < 0)
        return zx_seterr(err, errlen, "ECS container: %.200s: %s", url, perr);
    return 0;
}

/* The host of endpoint for messages ("169.254.169.254"). */
static const char *host_of(const char *endpoint, char *buf, size_t bl)
{
    const char *p = strstr(endpoint, "://");
    p = p ? p + 3 : endpoint;
    snprintf(buf, bl, "%.*s", (int)strcspn(p, "/"), p);
    return buf;
}

/* One IMDS request; 0 with *r (status 200), 1 no answer, -1 other. */
static int imds_req(zx_http_client *hc, const char *method, const char *url,
                    const char *const *hdrs, zx_http_response *r, const char *host,
                    const char *what, char *err, size_t errlen)
{
    char herr[256];
    int rc = zx_http_request(hc, method, url, hdrs, NULL, 0, r, herr, sizeof(herr));
    if (rc == ZX_HTTP_TRANSFER) {
        resp_wipe_free(r);
        zx_seterr(err, errlen, "EC2 instance metadata: no answer from %s in 1 s (%s)", host, herr);
        return 1;
    }
    if (rc != 0) {
        resp_wipe_free(r);
        return zx_seterr(err, errlen, "EC2 instance metadata: %s: %s", what, herr);
    }
    if (r->status != 200 || !r->body) {
        long st = r->status;
        resp_wipe_free(r);
        return zx_seterr(err, errlen, "EC2 instance metadata: %s: HTTP %ld from %s%s", what, st,
                      host, st == 404 && strcmp(what, "role list") == 0
                      ? " (no IAM role attached to the instance)" : "");
    }
    return 0;
}

int zx_aws_imds_fetch(const char *endpoint, zx_aws_cred *out, char *role_out,
                      size_t roomlen, char *err, size_t errlen)
{
    char host[256], url[1024], tokh[1200], herr[256];
    host_of(endpoint, host, sizeof(host));
    zx_http_client *hc = client(IMDS_TIMEOUT_MS, 1, NULL, herr, sizeof(herr));
    if (!hc)
        return zx_seterr(err, errlen, "EC2 instance metadata: %s", herr);
    zx_http_response r;
    const char *put_h[] = {"X-aws-ec2-metadata-token-ttl-seconds: " IMDS_TOKEN_TTL, NULL};
    snprintf(url, sizeof(url), "%s/latest/api/token", endpoint);
    int rc = imds_req(hc, "PUT", url, put_h, &r, host, "token PUT", err, errlen);
    if (rc != 0)
        goto out;
    if (r.len == 0 || r.len > 1000 || strpbrk(r.body, "\r\n")) {
        resp_wipe_free(&r);
        rc = zx_seterr(err, errlen, "EC2 instance metadata: the token PUT answered no usable token");
        goto out;
    }
    snprintf(tokh, sizeof(tokh), "X-aws-ec2-metadata-token: %s", r.body);
    resp_wipe_free(&r);
    const char *get_h[] = {tokh, NULL};
    snprintf(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/", endpoint);
    rc = imds_req(hc, "GET", url, get_h, &r, host, "role list", err, errlen);
    if (rc != 0)
        goto out;
    char role[256];
    size_t rl = strcspn(r.body, "\r\n");
    if (rl == 0 || rl >= sizeof(role) || strcspn(r.body, "/?# ") < rl) {
        resp_wipe_free(&r);
        rc = zx_seterr(err, errlen, "EC2 instance metadata: the role list holds no usable role name");
        goto out;
    }
    memcpy(role, r.body, rl);
    role[rl] = '\0';
    resp_wipe_free(&r);
    snprintf(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/%s", endpoint, role);
    rc = imds_req(hc, "GET", url, get_h, &r, host, "role credentials", err, errlen);
    if (rc != 0)
        goto out;
    char perr[256];
    if (zx_aws_json_creds(r.body, r.len, out, perr, sizeof(perr)) < 0)
        rc = zx_seterr(err, errlen, "EC2 instance metadata: role %s: %s", role, perr);
    else if (role_out && roomlen)
        snprintf(role_out, roomlen, "%s", role);
    resp_wipe_free(&r);
out:
    explicit_bzero(tokh, sizeof(tokh));
    zx_http_client_free(hc);
    return rc;
}
