/*
 * kafka_sr.c — schema registration (kafka_sr.h) through the shared HTTP
 * client (common/http_client.h).
 *
 * It must never: print a whole response (messages are cut), or wait
 * beyond its timeout per attempt.
 */
#include "workers/destinations/kafka/kafka_sr.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http_client.h"

int zx_ksr_register(const char *url, const char *subject, const char *schema, long timeout_ms,
                    uint32_t *id, char *err, size_t errlen)
{
    zx_http_opts ho = {.timeout_ms = timeout_ms, .max_response = 64 * 1024};
    char e[300];
    int rc = -1;
    zx_http_response resp = {0};
    char *body = NULL;
    json_t *req = json_pack("{s:s}", "schema", schema), *ans = NULL;
    zx_http_client *c = zx_http_client_new(&ho, e, sizeof(e));
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        n--;
    char full[1024];
    if (!req || !c || !(body = json_dumps(req, JSON_COMPACT))) {
        snprintf(err, errlen, "schema registry %.200s: %s", url, c ? "out of memory" : e);
        goto out;
    }
    if ((size_t)snprintf(full, sizeof(full), "%.*s/subjects/%s/versions", (int)n, url,
                         subject) >= sizeof(full)) {
        snprintf(err, errlen, "schema registry %.200s: the URL is too long", url);
        goto out;
    }
    static const char *const hdrs[] = {"Content-Type: application/vnd.schemaregistry.v1+json",
                                       "Accept: application/vnd.schemaregistry.v1+json", NULL};
    if (zx_http_request(c, "POST", full, hdrs, body, strlen(body), &resp, e, sizeof(e)) != 0) {
        snprintf(err, errlen, "schema registry %.200s: %s", url, e);
        goto out;
    }
    ans = resp.body ? json_loads(resp.body, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(ans, "message"));
    if (resp.status != 200) {
        snprintf(err, errlen, "schema registry %.200s %s subject %s: HTTP %ld%s%.300s", url,
                 resp.status == 409 ? "refuses the schema (incompatible with the subject's) of"
                 : resp.status == 422 ? "refuses the schema (invalid) of" : "cannot register",
                 subject, resp.status, msg ? ": " : "", msg ? msg : "");
        goto out;
    }
    json_int_t v = json_integer_value(json_object_get(ans, "id"));
    if (!json_is_integer(json_object_get(ans, "id")) || v < 1 || v > 0x7fffffff) {
        snprintf(err, errlen, "schema registry %.200s: subject %s: the answer has no schema "
                 "id", url, subject);
        goto out;
    }
    *id = (uint32_t)v;
    rc = 0;
out:
    json_decref(ans);
    json_decref(req);
    free(body);
    zx_http_response_free(&resp);
    zx_http_client_free(c);
    return rc;
}
