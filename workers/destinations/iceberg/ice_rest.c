/*
 * ice_rest.c — an Iceberg REST catalog (the REST catalog OpenAPI spec,
 * open-api/rest-catalog-open-api.yaml in apache/iceberg): GET /v1/config
 * at open (its prefix), OAuth2 client credentials or a bearer token,
 * namespaces, load, create and commit of tables.  The server writes the
 * metadata files: this file never writes to storage.
 *
 * A commit is sent once (a retried POST could hide whether the first one
 * landed): a lost answer or a 5xx is ZX_ICECAT_UNKNOWN.  Never puts a
 * token or a secret in a message.
 */
#include "workers/destinations/iceberg/ice_catalog_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define REST_MAX_RESPONSE ((size_t)64 << 20)   /* a big table's metadata */

static int rest_oauth(zx_icecat *c, const char *url, const char *credential, const char *scope,
                      char *err, size_t errlen);

/* One request: 0 with *status and *out (the parsed body, NULL when not
 * JSON or none; the raw body's words in text on a status >= 300), or a
 * ZX_HTTP_* code with err. */
static int rest_call(zx_icecat *c, int once, const char *method, const char *path,
                     const json_t *body, long *status, json_t **out, char *text,
                     size_t textlen, char *err, size_t errlen)
{
    char url[ICE_URL_MAX];
    *out = NULL;
    *status = 0;
    if (text && textlen)
        text[0] = 0;
    if ((size_t)snprintf(url, sizeof(url), "%s%s", c->base, path) >= sizeof(url))
        return zx_seterr(err, errlen, "the URL is too long"), ZX_HTTP_REFUSED;
    char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !b)
        return zx_seterr(err, errlen, "out of memory"), ZX_HTTP_REFUSED;
    const char *h[5];
    int nh = 0;
    h[nh++] = "Accept: application/json";
    if (b)
        h[nh++] = "Content-Type: application/json";
    h[nh++] = "X-Client-Version: zx";
    int ai = nh;   /* the token, last */
    if (c->auth)
        h[nh++] = c->auth;
    h[nh] = NULL;
    zx_http_response r = {0};
    int rc = zx_http_request(once ? c->http_once : c->http, method, url, h, b,
                             b ? strlen(b) : 0, &r, err, errlen);
    if (rc == 0 && r.status == 401 && c->credential) {
        /* the token expired: a new one, and the request once more (a 401
         * was refused before it was looked at) */
        char e[512];
        if (rest_oauth(c, c->token_url, c->credential, c->scope, e, sizeof(e)) == 0) {
            h[ai] = c->auth;
            h[ai + 1] = NULL;
            zx_http_response_free(&r);
            rc = zx_http_request(once ? c->http_once : c->http, method, url, h, b,
                                 b ? strlen(b) : 0, &r, err, errlen);
        }
    }
    free(b);
    *status = r.status;
    if (rc == 0) {
        if (r.body && r.len)
            *out = json_loadb(r.body, r.len, 0, NULL);
        if (r.status >= 300 && text)
            ice_rest_error_text(r.body, text, textlen);
    }
    zx_http_response_free(&r);
    return rc;
}

static char *form_escape(const char *s)
{
    size_t n = strlen(s) * 3 + 1;
    char *o = malloc(n);
    if (o && ice_pct(s, o, n) < 0) {
        free(o);
        o = NULL;
    }
    return o;
}

/* OAuth2 client credentials at url: c->auth set.  0 or -1. */
static int rest_oauth(zx_icecat *c, const char *url, const char *credential, const char *scope,
                      char *err, size_t errlen)
{
    const char *colon = strchr(credential, ':');
    char *id = colon ? strndup(credential, (size_t)(colon - credential)) : strdup(credential);
    char *eid = id ? form_escape(id) : NULL;
    char *esec = form_escape(colon ? colon + 1 : "");
    char *esc = form_escape(scope ? scope : "catalog");
    char *form = NULL;
    int rc = -1;
    zx_http_response r = {0};
    json_t *j = NULL;
    if (!eid || !esec || !esc ||
        asprintf(&form, "grant_type=client_credentials&client_id=%s&client_secret=%s&scope=%s",
                 eid, esec, esc) < 0) {
        form = NULL;
        zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
        goto out;
    }
    const char *h[] = {"Content-Type: application/x-www-form-urlencoded",
                       "Accept: application/json", NULL};
    char e[512];
    int hr = zx_http_request(c->http, "POST", url, h, form, strlen(form), &r, e, sizeof(e));
    if (hr != 0) {
        zx_seterr(err, errlen, "iceberg catalog %s: OAuth2 token: %s", c->name, e);
        goto out;
    }
    j = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    const char *tok = json_string_value(json_object_get(j, "access_token"));
    if (r.status != 200 || !tok) {
        char t[512];
        const char *d = json_string_value(json_object_get(j, "error_description"));
        const char *ec = json_string_value(json_object_get(j, "error"));
        if (ec)
            snprintf(t, sizeof(t), "%s%s%s", ec, d ? ": " : "", d ? d : "");
        else
            ice_rest_error_text(r.body, t, sizeof(t));
        zx_seterr(err, errlen, "iceberg catalog %s: OAuth2 token: %ld %s", c->name, r.status,
                  t);
        goto out;
    }
    if (c->auth) {
        memset(c->auth, 0, strlen(c->auth));
        free(c->auth);
    }
    if (asprintf(&c->auth, "Authorization: Bearer %s", tok) < 0) {
        c->auth = NULL;
        zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
        goto out;
    }
    rc = 0;
out:
    if (form)
        memset(form, 0, strlen(form));
    if (esec)
        memset(esec, 0, strlen(esec));
    free(form);
    free(id);
    free(eid);
    free(esec);
    free(esc);
    json_decref(j);
    zx_http_response_free(&r);
    return rc;
}

/* A setting of /v1/config's answer: overrides win over defaults. */
static const char *config_get(const json_t *cfg, const char *key)
{
    const char *v = json_string_value(json_object_get(json_object_get(cfg, "overrides"), key));
    return v ? v : json_string_value(json_object_get(json_object_get(cfg, "defaults"), key));
}

int ice_rest_open(zx_icecat *c, const zx_icecat_args *a, char *err, size_t errlen)
{
    if (!a->uri || strncmp(a->uri, "http", 4))
        return zx_seterr(err, errlen, "iceberg catalog %s: uri: not an http(s):// URL",
                         c->name);
    size_t ul = strlen(a->uri);
    while (ul && a->uri[ul - 1] == '/')
        ul--;
    if (asprintf(&c->base, "%.*s/v1", (int)ul, a->uri) < 0) {
        c->base = NULL;
        return zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
    }
    c->prefix = strdup("");
    zx_http_opts o = {.timeout_ms = c->timeout_ms, .max_response = REST_MAX_RESPONSE};
    char e[512];
    if (!c->prefix || !(c->http = zx_http_client_new(&o, e, sizeof(e))))
        return zx_seterr(err, errlen, "iceberg catalog %s: %s", c->name, c->prefix ? e : "out of memory");
    o.max_attempts = 1;
    if (!(c->http_once = zx_http_client_new(&o, e, sizeof(e))))
        return zx_seterr(err, errlen, "iceberg catalog %s: %s", c->name, e);
    char tok_url[ICE_URL_MAX];
    snprintf(tok_url, sizeof(tok_url), "%s/oauth/tokens", c->base);
    if (a->token && *a->token) {
        if (asprintf(&c->auth, "Authorization: Bearer %s", a->token) < 0) {
            c->auth = NULL;
            return zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
        }
    } else if (a->credential && *a->credential) {
        if (!(c->credential = strdup(a->credential)) ||
            (a->scope && !(c->scope = strdup(a->scope))) || !(c->token_url = strdup(tok_url)))
            return zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
        if (rest_oauth(c, tok_url, a->credential, a->scope, err, errlen) < 0)
            return -1;
    }
    char path[ICE_URL_MAX] = "/config", wh[1024];
    if (a->warehouse && *a->warehouse) {
        if (ice_pct(a->warehouse, wh, sizeof(wh)) < 0)
            return zx_seterr(err, errlen, "iceberg catalog %s: warehouse too long", c->name);
        snprintf(path, sizeof(path), "/config?warehouse=%s", wh);
    }
    long st;
    json_t *cfg;
    char text[600];
    int rc = rest_call(c, 0, "GET", path, NULL, &st, &cfg, text, sizeof(text), e, sizeof(e));
    if (rc != 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: GET %s/config: %s", c->name,
                         c->base, e);
    if (st != 200 || !json_is_object(cfg)) {
        json_decref(cfg);
        return zx_seterr(err, errlen, "iceberg catalog %s: GET %s/config: %ld %s", c->name,
                         c->base, st, st == 200 ? "not a JSON object" : text);
    }
    const char *px = config_get(cfg, "prefix");
    const char *oauth = config_get(cfg, "oauth2-server-uri");
    int r2 = 0;
    if (px && *px) {
        char ep[1024];
        free(c->prefix);
        c->prefix = NULL;
        if (ice_pct_keep(px, 1, ep, sizeof(ep)) < 0 || asprintf(&c->prefix, "/%s", ep) < 0) {
            c->prefix = NULL;
            r2 = zx_seterr(err, errlen, "iceberg catalog %s: config prefix too long", c->name);
        }
    }
    if (r2 == 0 && oauth && c->credential && strcmp(oauth, tok_url)) {
        free(c->token_url);
        if (!(c->token_url = strdup(oauth)))
            r2 = zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
        else
            r2 = rest_oauth(c, oauth, c->credential, c->scope, err, errlen);
    }
    json_decref(cfg);
    return r2;
}

/* The table of a LoadTableResult / CommitTableResponse into *out. */
static int take_table(zx_icecat *c, const char *what, json_t *j, zx_icecat_table *out,
                      char *err, size_t errlen)
{
    json_t *md = json_object_get(j, "metadata");
    const char *loc = json_string_value(json_object_get(j, "metadata-location"));
    if (!json_is_object(md))
        return zx_seterr(err, errlen, "iceberg catalog %s: %s: the answer has no metadata",
                         c->name, what);
    out->metadata = json_incref(md);
    if (loc && !(out->metadata_location = strdup(loc))) {
        zx_icecat_table_free(out);
        return zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
    }
    return 0;
}

static int rest_ensure_namespace(zx_icecat *c, const char *ns, char *err, size_t errlen)
{
    char path[ICE_URL_MAX], e[512], text[600];
    long st;
    json_t *j = NULL;
    if (ice_rest_path(c->prefix, ns, NULL, 0, path, sizeof(path)) < 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: namespace %s: too long", c->name, ns);
    int rc = rest_call(c, 0, "GET", path, NULL, &st, &j, text, sizeof(text), e, sizeof(e));
    json_decref(j);
    if (rc != 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: namespace %s: %s", c->name, ns, e);
    if (st == 200 || st == 204)
        return 0;
    if (st != 404)
        return zx_seterr(err, errlen, "iceberg catalog %s: namespace %s: %ld %s", c->name, ns,
                         st, text);
    json_t *body = json_pack("{s:[s],s:{}}", "namespace", ns, "properties");
    ice_rest_path(c->prefix, NULL, NULL, 0, path, sizeof(path));
    rc = rest_call(c, 0, "POST", path, body, &st, &j, text, sizeof(text), e, sizeof(e));
    json_decref(body);
    json_decref(j);
    if (rc != 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: namespace %s: create: %s", c->name,
                         ns, e);
    if (st == 200 || st == 204 || st == 409)
        return 0;
    return zx_seterr(err, errlen, "iceberg catalog %s: namespace %s: create: %ld %s", c->name,
                     ns, st, text);
}

static int rest_load(zx_icecat *c, const char *ns, const char *name, zx_icecat_table *out,
                     char *err, size_t errlen)
{
    char path[ICE_URL_MAX], e[512], text[600];
    long st;
    json_t *j = NULL;
    if (ice_rest_path(c->prefix, ns, name, 0, path, sizeof(path)) < 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: name too long", c->name,
                         ns, name);
    int rc = rest_call(c, 0, "GET", path, NULL, &st, &j, text, sizeof(text), e, sizeof(e));
    if (rc != 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: %s", c->name, ns, name,
                         e);
    char what[600];
    snprintf(what, sizeof(what), "table %s.%s", ns, name);
    if (st == 200)
        rc = take_table(c, what, j, out, err, errlen);
    else if (st == 404) {
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: %s", c->name, ns, name, text);
        rc = ZX_ICECAT_NOT_FOUND;
    } else
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: %ld %s", c->name, ns,
                       name, st, text);
    json_decref(j);
    return rc;
}

static int rest_create(zx_icecat *c, const char *ns, const char *name, const json_t *create_req,
                       const json_t *metadata, zx_icecat_table *out, char *err, size_t errlen)
{
    (void)metadata;
    char path[ICE_URL_MAX], e[512], text[600];
    if (!json_is_object(create_req))
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: no CreateTableRequest",
                         c->name, ns, name);
    if (ice_rest_path(c->prefix, ns, NULL, 1, path, sizeof(path)) < 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: name too long", c->name,
                         ns, name);
    json_t *body = json_deep_copy(create_req);
    if (!body || json_object_set_new(body, "name", json_string(name)) < 0) {
        json_decref(body);
        return zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
    }
    long st;
    json_t *j = NULL;
    int rc = rest_call(c, 0, "POST", path, body, &st, &j, text, sizeof(text), e, sizeof(e));
    json_decref(body);
    if (rc != 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: create: %s", c->name,
                         ns, name, e);
    char what[600];
    snprintf(what, sizeof(what), "table %s.%s: create", ns, name);
    if (st == 200)
        rc = take_table(c, what, j, out, err, errlen);
    else if (st == 409) {
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: create: %s", c->name, ns, name,
                  text);
        rc = ZX_ICECAT_EXISTS;
    } else
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: create: %ld %s", c->name,
                       ns, name, st, text);
    json_decref(j);
    return rc;
}

static int rest_commit(zx_icecat *c, const char *ns, const char *name,
                       const zx_icecat_table *base, const json_t *requirements,
                       const json_t *updates, const json_t *new_metadata, zx_icecat_table *out,
                       char *err, size_t errlen)
{
    (void)base;
    (void)new_metadata;
    char path[ICE_URL_MAX], e[512], text[600];
    if (!json_is_array(updates))
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: no updates",
                         c->name, ns, name);
    if (ice_rest_path(c->prefix, ns, name, 0, path, sizeof(path)) < 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: name too long", c->name,
                         ns, name);
    json_t *req = requirements ? json_incref((json_t *)requirements) : json_array();
    json_t *body = json_pack("{s:{s:[s],s:s},s:o,s:O}", "identifier", "namespace", ns, "name",
                             name, "requirements", req, "updates", updates);
    if (!body)
        return zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
    long st;
    json_t *j = NULL;
    int hr = rest_call(c, 1, "POST", path, body, &st, &j, text, sizeof(text), e, sizeof(e));
    json_decref(body);
    int rc;
    if (hr == ZX_HTTP_REFUSED) /* never sent */
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: %s", c->name, ns,
                       name, e);
    else if (hr != 0) {
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: outcome unknown: %s",
                  c->name, ns, name, e);
        rc = ZX_ICECAT_UNKNOWN;
    } else if ((rc = ice_rest_commit_status(st)) == 0) {
        if (out) {
            char what[600];
            snprintf(what, sizeof(what), "table %s.%s: commit", ns, name);
            rc = take_table(c, what, j, out, err, errlen);
        }
    } else if (rc == ZX_ICECAT_CONFLICT)
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: conflict: %s", c->name,
                  ns, name, text);
    else if (rc == ZX_ICECAT_UNKNOWN)
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: outcome unknown: %ld %s",
                  c->name, ns, name, st, text);
    else
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: %ld %s", c->name, ns,
                  name, st, text);
    json_decref(j);
    return rc;
}

const ice_ops ice_rest_ops = {
    .ensure_namespace = rest_ensure_namespace,
    .load = rest_load,
    .create = rest_create,
    .commit = rest_commit,
};
