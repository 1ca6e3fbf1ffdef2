/*
 * aws_sts.c — STS AssumeRole (signed) and AssumeRoleWithWebIdentity
 * (unsigned) for the credential chain, and the small bounded scanner of
 * their XML answers (aws_creds_int.h).  No XML library: STS's answers are
 * flat elements without attributes where we read them.
 */
#include "common/aws_creds_int.h"
#include "common/aws_sigv4.h"
#include "common/http_client.h"
#include "common/timefmt.h"
#include "common/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STS_MAX_BODY   (64 * 1024)     /* bytes of an answer looked at */
#define STS_MAX_TEXT   8192            /* bytes of one element's text */

void zx_aws_wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

void zx_aws_cred_clear(zx_aws_cred *k)
{
    if (!k)
        return;
    zx_aws_wipe_free(k->access_key);
    zx_aws_wipe_free(k->secret_key);
    zx_aws_wipe_free(k->session_token);
    memset(k, 0, sizeof(*k));
}

int zx_aws_cred_set(zx_aws_cred *k, const char *ak, const char *sk, const char *tok,
                    time_t expiry)
{
    zx_aws_cred_clear(k);
    k->access_key = strdup(ak ? ak : "");
    k->secret_key = strdup(sk ? sk : "");
    k->session_token = tok && *tok ? strdup(tok) : NULL;
    k->expiry = expiry;
    if (!k->access_key || !k->secret_key || (tok && *tok && !k->session_token)) {
        zx_aws_cred_clear(k);
        return -1;
    }
    return 0;
}

int zx_aws_parse_time(const char *s, time_t *t)
{
    int64_t us;
    if (!s || !zx_rfc3339_parse(s, strlen(s), &us))
        return -1;
    *t = (time_t)(us / 1000000);
    return 0;
}

/* Decode the five XML entities (and numeric ones below 128) of [p, p+n). */
static char *xml_decode(const char *p, size_t n)
{
    static const struct { const char *ent; char c; } ents[] = {
        {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''},
    };
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        int done = 0;
        if (p[i] == '&') {
            for (size_t e = 0; e < sizeof(ents) / sizeof(ents[0]) && !done; e++) {
                size_t el = strlen(ents[e].ent);
                if (n - i >= el && memcmp(p + i, ents[e].ent, el) == 0) {
                    *o++ = ents[e].c;
                    i += el;
                    done = 1;
                }
            }
            if (!done && n - i >= 4 && p[i + 1] == '#') {
                size_t j = i + 2;
                unsigned v = 0;
                while (j < n && j < i + 6 && p[j] >= '0' && p[j] <= '9')
                    v = v * 10 + (unsigned)(p[j++] - '0');
                if (j < n && p[j] == ';' && j > i + 2 && v >= 32 && v < 127) {
                    *o++ = (char)v;
                    i = j + 1;
                    done = 1;
                }
            }
        }
        if (!done)
            *o++ = p[i++];
    }
    *o = '\0';
    return out;
}

/* The span between <name> and </name> in [p, p+len): 0 or -1. */
static int xml_span(const char *p, size_t len, const char *name, const char **b, size_t *n)
{
    char open[64], close[64];
    int ol = snprintf(open, sizeof(open), "<%s>", name);
    int cl = snprintf(close, sizeof(close), "</%s>", name);
    if (ol <= 0 || (size_t)ol >= sizeof(open) || cl <= 0 || (size_t)cl >= sizeof(close))
        return -1;
    const char *s = memmem(p, len, open, (size_t)ol);
    if (!s)
        return -1;
    s += ol;
    const char *e = memmem(s, len - (size_t)(s - p), close, (size_t)cl);
    if (!e)
        return -1;
    *b = s;
    *n = (size_t)(e - s);
    return 0;
}

char *zx_aws_xml_text(const char *p, size_t len, const char *name)
{
    const char *b;
    size_t n;
    if (len > STS_MAX_BODY)
        len = STS_MAX_BODY;
    if (xml_span(p, len, name, &b, &n) < 0 || n > STS_MAX_TEXT)
        return NULL;
    /* trim blanks and newlines around the text */
    while (n && (*b == ' ' || *b == '\n' || *b == '\r' || *b == '\t'))
        b++, n--;
    while (n && (b[n - 1] == ' ' || b[n - 1] == '\n' || b[n - 1] == '\r' || b[n - 1] == '\t'))
        n--;
    return xml_decode(b, n);
}

/* A printable copy of an untrusted message: control bytes become '?'. */
static void clean(char *s)
{
    for (; s && *s; s++)
        if ((unsigned char)*s < 32 || *s == 127)
            *s = '?';
}

int zx_aws_sts_parse(const char *body, size_t len, zx_aws_cred *out,
                     char *err, size_t errlen)
{
    const char *cb;
    size_t cn;
    if (!body)
        return zx_seterr(err, errlen, "an empty answer");
    if (len > STS_MAX_BODY)
        len = STS_MAX_BODY;
    if (xml_span(body, len, "Credentials", &cb, &cn) < 0) {
        char *code = zx_aws_xml_text(body, len, "Code");
        char *msg = zx_aws_xml_text(body, len, "Message");
        clean(code);
        clean(msg);
        if (code || msg)
            zx_seterr(err, errlen, "%.100s: %.300s", code ? code : "error",
                   msg ? msg : "(no message)");
        else
            zx_seterr(err, errlen, "an answer without <Credentials> nor <Error>");
        free(code);
        free(msg);
        return -1;
    }
    char *ak = zx_aws_xml_text(cb, cn, "AccessKeyId");
    char *sk = zx_aws_xml_text(cb, cn, "SecretAccessKey");
    char *tok = zx_aws_xml_text(cb, cn, "SessionToken");
    char *exp = zx_aws_xml_text(cb, cn, "Expiration");
    time_t t = 0;
    int rc = -1;
    if (!ak || !*ak)
        zx_seterr(err, errlen, "<Credentials> without <AccessKeyId>");
    else if (!sk || !*sk)
        zx_seterr(err, errlen, "<Credentials> without <SecretAccessKey>");
    else if (!tok || !*tok)
        zx_seterr(err, errlen, "<Credentials> without <SessionToken>");
    else if (!exp || zx_aws_parse_time(exp, &t) < 0)
        zx_seterr(err, errlen, "<Credentials> without a valid <Expiration>");
    else if (zx_aws_cred_set(out, ak, sk, tok, t) < 0)
        zx_seterr(err, errlen, "out of memory");
    else
        rc = 0;
    zx_aws_wipe_free(ak);
    zx_aws_wipe_free(sk);
    zx_aws_wipe_free(tok);
    free(exp);
    return rc;
}

/* "host[:port]" of an http(s) URL into host (room hl), and where its path
 * starts (*path: "" or "/..."): 0, or -1 (no scheme, no host, userinfo,
 * a query or fragment). */
static int url_host(const char *url, char *host, size_t hl, const char **path)
{
    const char *p = strstr(url, "://");
    if (!p || strpbrk(url, "?#"))
        return -1;
    p += 3;
    size_t n = strcspn(p, "/");
    if (n == 0 || n >= hl || memchr(p, '@', n))
        return -1;
    memcpy(host, p, n);
    host[n] = '\0';
    *path = p + n;
    return 0;
}

/* Append "&name=enc(value)" to *body (malloc'd, grown): 0 or -1. */
static int form_add(char **body, const char *name, const char *value)
{
    char *enc = zx_aws_uri_encode(value, strlen(value), 0);
    if (!enc)
        return -1;
    size_t ol = strlen(*body), nl = strlen(name), el = strlen(enc);
    char *nb = realloc(*body, ol + nl + el + 3);
    if (!nb) {
        explicit_bzero(enc, el);
        free(enc);
        return -1;
    }
    snprintf(nb + ol, nl + el + 3, "&%s=%s", name, enc);
    explicit_bzero(enc, el);
    free(enc);
    *body = nb;
    return 0;
}

/* POST body to the STS endpoint, signed with base unless NULL, and parse
 * the answer.  what names the action in messages. */
static int sts_call(const zx_aws_sts *s, const zx_aws_cred *base, const char *body,
                    const char *what, zx_aws_cred *out, char *err, size_t errlen)
{
    char host[512], url[1024], hosth[600];
    const char *path;
    if (url_host(s->endpoint, host, sizeof(host), &path) < 0 ||
        strlen(s->endpoint) + 2 > sizeof(url))
        return zx_seterr(err, errlen, "%s: the STS endpoint %.200s is not a URL like "
                      "https://sts.eu-west-1.amazonaws.com", what, s->endpoint);
    snprintf(url, sizeof(url), "%s%s", s->endpoint, *path ? "" : "/");
    if (!*path)
        path = "/";
    snprintf(hosth, sizeof(hosth), "Host: %s", host);
    const char *hdrs[10] = {hosth, "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                            "Accept: text/xml"};
    size_t nh = 3;
    zx_sigv4_signed sig;
    memset(&sig, 0, sizeof(sig));
    if (base) {
        char serr[256];
        zx_sigv4_request rq = {
            .method = "POST", .path = path, .headers = hdrs, .payload = body,
            .payload_len = strlen(body), .region = s->region, .service = "sts",
            .now = s->now,
        };
        zx_aws_keys k = {base->access_key, base->secret_key, base->session_token};
        if (zx_sigv4_sign(&rq, &k, &sig, serr, sizeof(serr)) < 0)
            return zx_seterr(err, errlen, "%s: cannot sign the request: %s", what, serr);
        for (int i = 0; sig.lines[i] && nh < 9; i++)
            hdrs[nh++] = sig.lines[i];
    }
    hdrs[nh] = NULL;
    zx_http_opts ho = {.timeout_ms = 5000, .max_response = STS_MAX_BODY,
                       .ca_file = s->ca_file, .max_attempts = 3, .total_ms = 15000};
    char herr[256];
    zx_http_client *hc = zx_http_client_new(&ho, herr, sizeof(herr));
    if (!hc) {
        zx_sigv4_signed_free(&sig);
        return zx_seterr(err, errlen, "%s: %s", what, herr);
    }
    zx_http_response resp;
    int rc = zx_http_request(hc, "POST", url, hdrs, body, strlen(body), &resp, herr, sizeof(herr));
    zx_sigv4_signed_free(&sig);
    zx_http_client_free(hc);
    if (rc != 0) {
        zx_http_response_free(&resp);
        return zx_seterr(err, errlen, "%s: no answer from %s: %s", what, host, herr);
    }
    char perr[512];
    int prc = zx_aws_sts_parse(resp.body, resp.len, out, perr, sizeof(perr));
    if (resp.status != 200 && prc == 0) {
        zx_aws_cred_clear(out);
        prc = -1;
        snprintf(perr, sizeof(perr), "unexpected status");
    }
    if (resp.body)
        explicit_bzero(resp.body, resp.len);
    long status = resp.status;
    zx_http_response_free(&resp);
    if (prc < 0)
        return zx_seterr(err, errlen, "%s: %s (HTTP %ld from %s)", what, perr, status, host);
    return 0;
}

int zx_aws_sts_assume(const zx_aws_sts *s, const zx_aws_cred *base, const char *role_arn,
                      const char *session_name, const char *external_id,
                      zx_aws_cred *out, char *err, size_t errlen)
{
    char what[400];
    snprintf(what, sizeof(what), "STS AssumeRole %.300s", role_arn);
    char *body = strdup("Action=AssumeRole&Version=2011-06-15");
    if (!body || form_add(&body, "RoleArn", role_arn) < 0 ||
        form_add(&body, "RoleSessionName", session_name) < 0 ||
        (external_id && *external_id && form_add(&body, "ExternalId", external_id) < 0)) {
        free(body);
        return zx_seterr(err, errlen, "%s: out of memory", what);
    }
    int rc = sts_call(s, base, body, what, out, err, errlen);
    free(body);
    return rc;
}

int zx_aws_sts_web_identity(const zx_aws_sts *s, const char *role_arn,
                            const char *session_name, const char *token,
                            zx_aws_cred *out, char *err, size_t errlen)
{
    char what[400];
    snprintf(what, sizeof(what), "STS AssumeRoleWithWebIdentity %.300s", role_arn);
    char *body = strdup("Action=AssumeRoleWithWebIdentity&Version=2011-06-15");
    if (!body || form_add(&body, "RoleArn", role_arn) < 0 ||
        form_add(&body, "RoleSessionName", session_name) < 0 ||
        form_add(&body, "WebIdentityToken", token) < 0) {
        if (body)
            explicit_bzero(body, strlen(body));
        free(body);
        return zx_seterr(err, errlen, "%s: out of memory", what);
    }
    int rc = sts_call(s, NULL, body, what, out, err, errlen);
    explicit_bzero(body, strlen(body));
    free(body);
    return rc;
}
