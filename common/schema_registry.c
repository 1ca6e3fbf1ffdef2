/*
 * schema_registry.c — the wire-format prefixes of Avro messages and a
 * cached client of a Confluent-compatible schema registry (over common/http_client); the
 * contract is in schema_registry.h.
 *
 * It must never: put the password in a message or a log, follow a
 * redirect, read more than ZX_REGISTRY_RESPONSE_MAX bytes of a response,
 * or wait longer than the timeout it was given.
 */
#include "common/schema_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common/http_client.h"
#include "common/util.h"

/* ---- wire formats -------------------------------------------------------- */

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

int zx_wire_parse(const void *msg, size_t len, zx_wire_mode mode, const void *hdr,
                  size_t hdr_len, int64_t *id, size_t *offset, char *err, size_t errlen)
{
    const uint8_t *p = msg;
    uint64_t v;
    if (len == 0 || !msg) {
        zx_seterr(err, errlen, "wire: an empty message (a tombstone) has no schema id");
        return -1;
    }
    switch (mode) {
    case ZX_WIRE_CONFLUENT:
    case ZX_WIRE_APICURIO_ID8: {
        int n = mode == ZX_WIRE_CONFLUENT ? 4 : 8;
        const char *what = mode == ZX_WIRE_CONFLUENT ? "Confluent's" : "Apicurio's 8-byte id";
        if (p[0] != 0) {
            zx_seterr(err, errlen, "wire: byte 0 is 0x%02x, not 0 (not %s wire format)", p[0],
                      what);
            return -1;
        }
        if (len < (size_t)n + 1) {
            zx_seterr(err, errlen, "wire: %zu bytes, fewer than the %d of %s prefix", len, n + 1,
                    what);
            return -1;
        }
        v = be(p + 1, n);
        if (v == 0 || v > (mode == ZX_WIRE_CONFLUENT ? 0x7fffffffu : (uint64_t)INT64_MAX)) {
            zx_seterr(err, errlen, "wire: schema id %llu is not a valid id", (unsigned long long)v);
            return -1;
        }
        *id = (int64_t)v;
        *offset = (size_t)n + 1;
        return 0;
    }
    case ZX_WIRE_HEADERS:
        if (!hdr) {
            zx_seterr(err, errlen, "wire: no schema id header (apicurio.value.globalId)");
            return -1;
        }
        if (hdr_len != 8) {
            zx_seterr(err, errlen, "wire: the schema id header has %zu bytes, not 8", hdr_len);
            return -1;
        }
        v = be(hdr, 8);
        if (v == 0 || v > (uint64_t)INT64_MAX) {
            zx_seterr(err, errlen, "wire: schema id %llu is not a valid id", (unsigned long long)v);
            return -1;
        }
        *id = (int64_t)v;
        *offset = 0;
        return 0;
    }
    zx_seterr(err, errlen, "wire: unknown mode %d", (int)mode);
    return -1;
}

/* ---- the cache ----------------------------------------------------------- */

/* One id's answer: a schema, or a refusal (-1) remembered until expires. */
typedef struct entry {
    int64_t id;
    zx_avro_schema *schema;   /* NULL for a refusal */
    char *refusal;            /* the message of a refusal */
    time_t expires;           /* refusals: CLOCK_MONOTONIC seconds */
    int next;                 /* next entry of its bucket, or -1 */
} entry;

#define NBUCKETS 16384        /* a power of two, > ZX_REGISTRY_CACHE_MAX */

struct zx_registry {
    zx_http_client *http;
    char *base;               /* url without a trailing '/' */
    char *shown;              /* base without user:password@, for messages */
    entry *ents;              /* ZX_REGISTRY_CACHE_MAX slots, a ring in order of caching */
    size_t nents, oldest;     /* slots used; the oldest when full */
    int buckets[NBUCKETS];    /* first entry of each bucket, or -1 */
};

static size_t bucket_of(int64_t id)
{
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 50) & (NBUCKETS - 1);
}

static entry *lookup(zx_registry *r, int64_t id)
{
    for (int i = r->buckets[bucket_of(id)]; i >= 0; i = r->ents[i].next)
        if (r->ents[i].id == id)
            return &r->ents[i];
    return NULL;
}

static void unlink_entry(zx_registry *r, int slot)
{
    int *pp = &r->buckets[bucket_of(r->ents[slot].id)];
    while (*pp != slot)
        pp = &r->ents[*pp].next;
    *pp = r->ents[slot].next;
    zx_avro_schema_free(r->ents[slot].schema);
    free(r->ents[slot].refusal);
    r->ents[slot].schema = NULL;
    r->ents[slot].refusal = NULL;
}

/* A slot for id (the oldest entry goes when the cache is full). */
static entry *insert(zx_registry *r, int64_t id)
{
    int slot;
    if (r->nents < ZX_REGISTRY_CACHE_MAX) {
        slot = (int)r->nents++;
    } else {
        slot = (int)r->oldest;
        r->oldest = (r->oldest + 1) % ZX_REGISTRY_CACHE_MAX;
        unlink_entry(r, slot);
    }
    entry *e = &r->ents[slot];
    size_t b = bucket_of(id);
    e->id = id;
    e->next = r->buckets[b];
    r->buckets[b] = slot;
    return e;
}

/* Empties the entry of id, to be filled again (a refusal that expired). */
static void drop(entry *e)
{
    zx_avro_schema_free(e->schema);
    free(e->refusal);
    e->schema = NULL;
    e->refusal = NULL;
    e->expires = 0;
}

static time_t now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

/* ---- the client ---------------------------------------------------------- */

zx_registry *zx_registry_new(const char *url, const char *username, const char *password,
                             long timeout_ms)
{
    if (!url || timeout_ms <= 0 ||
        (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
        strchr(url, '?') || strchr(url, '#'))
        return NULL;
    zx_registry *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    /* one attempt per request: a stream asks again later ("will retry") */
    zx_http_opts o = { .timeout_ms = timeout_ms, .max_response = ZX_REGISTRY_RESPONSE_MAX,
                       .username = username, .password = password, .max_attempts = 1 };
    r->http = zx_http_client_new(&o, NULL, 0);
    r->base = strdup(url);
    r->ents = calloc(ZX_REGISTRY_CACHE_MAX, sizeof(entry));
    if (!r->base || !r->ents || !r->http) {
        zx_registry_free(r);
        return NULL;
    }
    size_t n = strlen(r->base);
    while (n > 0 && r->base[n - 1] == '/')
        r->base[--n] = '\0';
    for (size_t i = 0; i < NBUCKETS; i++)
        r->buckets[i] = -1;
    /* scheme://[userinfo@]host...: messages show no userinfo */
    const char *auth = strstr(r->base, "://") + 3;
    const char *slash = strchr(auth, '/');
    const char *at = memchr(auth, '@', slash ? (size_t)(slash - auth) : strlen(auth));
    if (at) {
        r->shown = malloc(strlen(r->base) + 1);
        if (r->shown) {
            size_t k = (size_t)(auth - r->base);
            memcpy(r->shown, r->base, k);
            strcpy(r->shown + k, at + 1);
        }
    } else {
        r->shown = strdup(r->base);
    }
    if (!r->shown) {
        zx_registry_free(r);
        return NULL;
    }
    return r;
}

void zx_registry_free(zx_registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->ents && i < r->nents; i++) {
        zx_avro_schema_free(r->ents[i].schema);
        free(r->ents[i].refusal);
    }
    free(r->ents);
    zx_http_client_free(r->http); /* wipes the password */
    free(r->base);
    free(r->shown);
    free(r);
}

unsigned long zx_registry_requests(const zx_registry *r)
{
    return zx_http_requests(r->http);
}

typedef zx_http_response body;

/* The request itself.  Returns 0 with *status and the body, or 1 (a
 * transfer error, worth a retry: message in err, without saying so), or
 * -1 (response too large). */
static int fetch(zx_registry *r, const char *path, long *status, body *b, char *err,
                 size_t errlen)
{
    char url[8300];
    if ((size_t)snprintf(url, sizeof(url), "%s/%s", r->base, path) >= sizeof(url)) {
        zx_seterr(err, errlen, "the registry URL is too long");
        return -1;
    }
    static const char *const hdrs[] = {
        "Accept: application/vnd.schemaregistry.v1+json, "
        "application/vnd.schemaregistry+json, application/json", NULL };
    char why[512] = "";
    int rc = zx_http_request(r->http, "GET", url, hdrs, NULL, 0, b, why, sizeof(why));
    *status = b->status;
    if (rc == ZX_HTTP_TOO_BIG) {
        zx_seterr(err, errlen, "%s", why);
        return -1;
    }
    if (rc != 0) {
        zx_seterr(err, errlen, "%s", why);
        return 1;
    }
    return 0;
}

/* Confluent's error body {"error_code": N, "message": "..."}: N, or 0. */
static long error_code(const body *b, char *msg, size_t msglen)
{
    msg[0] = '\0';
    json_t *j = b->body ? json_loadb(b->body, b->len, 0, NULL) : NULL;
    long code = 0;
    if (json_is_integer(json_object_get(j, "error_code")))
        code = (long)json_integer_value(json_object_get(j, "error_code"));
    const char *m = json_string_value(json_object_get(j, "message"));
    if (m) {
        size_t o = 0;
        for (; *m && o + 1 < msglen && o < 160; m++)
            msg[o++] = (*m >= 0x20 && *m < 0x7f) ? *m : '?';
        msg[o] = '\0';
    }
    json_decref(j);
    return code;
}

/* Interprets a 200 body: 0 with *out, 1 (worth a retry) or -1 with a
 * message. */
static int take_schema(const body *b, zx_avro_schema **out, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = b->body ? json_loadb(b->body, b->len, 0, &je) : NULL;
    json_t *s = json_object_get(j, "schema");
    json_t *type = json_object_get(j, "schemaType");
    int rc;
    if (!json_is_string(s)) {
        zx_seterr(err, errlen, "the answer is not {\"schema\": \"...\"}");
        rc = 1;
    } else if (type && (!json_is_string(type) || strcmp(json_string_value(type), "AVRO"))) {
        char t[32];
        snprintf(t, sizeof(t), "%s", json_is_string(type) ? json_string_value(type) : "?");
        for (char *q = t; *q; q++)
            if (*q < 0x20 || *q >= 0x7f)
                *q = '?';
        zx_seterr(err, errlen, "a %s schema, not Avro", t);
        rc = -1;
    } else {
        char perr[384];
        *out = zx_avro_schema_parse(json_string_value(s), json_string_length(s), perr,
                                    sizeof(perr));
        if (*out) {
            rc = 0;
        } else {
            zx_seterr(err, errlen, "%s", perr);
            rc = -1;
        }
    }
    json_decref(j);
    return rc;
}

int zx_registry_get(zx_registry *r, int64_t id, const zx_avro_schema **schema, char *err,
                    size_t errlen)
{
    *schema = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (id <= 0) {
        zx_seterr(err, errlen, "registry %s: schema id %lld is not valid", r->shown, (long long)id);
        return -1;
    }
    entry *e = lookup(r, id);
    if (e && e->schema) {
        *schema = e->schema;
        return 0;
    }
    if (e && e->refusal && now_s() < e->expires) {
        zx_seterr(err, errlen, "%s", e->refusal);
        return -1;
    }
    if (e)
        drop(e);

    body b = {0};
    long status = 0;
    char why[512] = "";
    zx_avro_schema *s = NULL;
    char path[64];
    snprintf(path, sizeof(path), "schemas/ids/%lld", (long long)id);
    int rc = fetch(r, path, &status, &b, why, sizeof(why));
    if (rc == 0) {
        char msg[200];
        long code;
        if (status == 200) {
            rc = take_schema(&b, &s, why, sizeof(why));
        } else if (status == 404 && (code = error_code(&b, msg, sizeof(msg))) == 40403) {
            snprintf(why, sizeof(why), "not found (404, error 40403: %s)", msg);
            rc = -1;
        } else if (status == 404) {
            snprintf(why, sizeof(why), "HTTP 404 without Confluent's error 40403: is the URL "
                                       "(and its /apis/ccompat/v7 prefix for Apicurio) right?");
            rc = 1;
        } else if (status == 401 || status == 403) {
            snprintf(why, sizeof(why), "HTTP %ld: the registry refuses the credentials",
                     status);
            rc = 1;
        } else {
            (void)error_code(&b, msg, sizeof(msg));
            snprintf(why, sizeof(why), "HTTP %ld%s%s", status, msg[0] ? ": " : "", msg);
            rc = 1;
        }
    }
    zx_http_response_free(&b);
    char full[1024];
    snprintf(full, sizeof(full), "registry %s: schema id %lld: %s", r->shown, (long long)id,
             why);
    if (rc == 1) {
        /* rc, not the words, says a retry may help; the stream is told so */
        zx_seterr(err, errlen, "%s (will retry)", full);
        return 1;
    }
    if (!e)
        e = insert(r, id);
    if (rc == 0) {
        e->schema = s;
        *schema = s;
        return 0;
    }
    zx_seterr(err, errlen, "%s", full);
    e->refusal = strdup(full); /* NULL (out of memory): not remembered */
    e->expires = now_s() + ZX_REGISTRY_NEGATIVE_S;
    return -1;
}

int zx_registry_check(zx_registry *r, char *out, size_t outlen)
{
    body b = {0};
    long status = 0;
    char why[512] = "", msg[200];
    int rc = fetch(r, "subjects", &status, &b, why, sizeof(why));
    if (rc == 0) {
        json_t *j = status == 200 && b.body ? json_loadb(b.body, b.len, 0, NULL) : NULL;
        if (json_is_array(j)) {
            size_t n = json_array_size(j);
            zx_seterr(out, outlen, "schema registry %s: %zu subject%s", r->shown, n,
                    n == 1 ? "" : "s");
        } else if (status == 200) {
            snprintf(why, sizeof(why), "GET /subjects answered 200 but not a JSON list: is "
                                       "this a Confluent-compatible registry API?");
            rc = -1;
        } else if (status == 401 || status == 403) {
            snprintf(why, sizeof(why), "HTTP %ld: the registry refuses the credentials", status);
            rc = -1;
        } else if (status == 404) {
            snprintf(why, sizeof(why), "HTTP 404 for GET /subjects: is the URL (and its "
                                       "/apis/ccompat/v7 prefix for Apicurio) right?");
            rc = -1;
        } else {
            (void)error_code(&b, msg, sizeof(msg));
            snprintf(why, sizeof(why), "HTTP %ld%s%s", status, msg[0] ? ": " : "", msg);
            rc = -1;
        }
        json_decref(j);
    }
    zx_http_response_free(&b);
    if (rc != 0) {
        zx_seterr(out, outlen, "schema registry %s: %s", r->shown, why);
        return -1;
    }
    return 0;
}
