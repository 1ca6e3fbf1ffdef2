/*
 * schema_registry.h — the schema id in front of an Avro message, and a
 * client with a cache for the registry that serves the schema of that id.
 *
 * Wire formats (zx_wire_parse):
 *   ZX_WIRE_CONFLUENT     byte 0 = 0 (the magic byte), bytes 1-4 the schema
 *                         id (big-endian, 1..2147483647), then the datum.
 *   ZX_WIRE_APICURIO_ID8  byte 0 = 0, bytes 1-8 Apicurio's global (or
 *                         content) id, big-endian, 1..2^63-1, then the datum.
 *                         The bytes cannot tell it from Confluent's: it is
 *                         an option of the source, never guessed.
 *   ZX_WIRE_HEADERS       Apicurio with ids in message headers: the datum
 *                         is the whole message; the id is the value of the
 *                         header the caller picked (apicurio.value.globalId,
 *                         or apicurio.key.globalId for keys): 8 bytes,
 *                         big-endian.
 *
 * The registry (zx_registry_*): the Confluent-compatible REST API,
 *     GET {url}/schemas/ids/{id}  ->  {"schema": "<schema JSON as a string>",
 *                                      "schemaType": "AVRO" (may be absent)}
 * url is the base the user configures: Confluent's root
 * (http://host:8081), or Apicurio 3's compatibility API, which includes its
 * prefix (http://host:8080/apis/ccompat/v7).  There an id is a content id,
 * or a global id when Apicurio runs with
 * apicurio.ccompat.legacy-id-mode.enabled=true: the ids in the messages
 * must be of the kind the registry serves.  Schemas with references to
 * other subjects are not resolved (they fail to parse: -1).
 *
 * What an answer means for the caller (zx_registry_get):
 *   0   the schema (parsed by zx_avro_schema_parse) is cached;
 *   1   try later, nothing is lost: the registry could not be reached, timed
 *       out, answered 5xx, 408 or 429, refused the credentials (401, 403:
 *       a configuration error, not the message's), answered 404 without
 *       Confluent's "schema not found" error code 40403 (a wrong URL or
 *       prefix, not an unknown id), or answered 200 with something that is
 *       not {"schema": "..."};
 *  -1   the message can never be decoded (it goes to the rejects): 404 with
 *       error code 40403 (no schema of that id), a schema that is not Avro
 *       (schemaType PROTOBUF or JSON), a schema zx_avro_schema_parse
 *       refuses, or a response larger than ZX_REGISTRY_RESPONSE_MAX.
 * A -1 is remembered for ZX_REGISTRY_NEGATIVE_S seconds (the same message
 * again costs no request); a 1 is never cached.
 *
 * Limits: each request takes at most timeout_ms in all (connection
 * included); a response body is read up to ZX_REGISTRY_RESPONSE_MAX bytes;
 * no redirect is followed; only http and https.  The cache holds at most
 * ZX_REGISTRY_CACHE_MAX ids; when full, the entry cached first goes.
 *
 * Threads: a zx_registry is used by one thread at a time (zx's workers are
 * processes, each with its own).  It must never: print or return the
 * password, block longer than its timeout, or keep a schema past
 * zx_registry_free.
 */
#ifndef ZX_COMMON_SCHEMA_REGISTRY_H
#define ZX_COMMON_SCHEMA_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "common/avro_connect.h"

#define ZX_REGISTRY_RESPONSE_MAX (4u << 20)  /* bytes of one response body */
#define ZX_REGISTRY_CACHE_MAX    10000       /* schemas (and refusals) cached */
#define ZX_REGISTRY_NEGATIVE_S   30          /* seconds a -1 is remembered */

typedef enum zx_wire_mode {
    ZX_WIRE_CONFLUENT,
    ZX_WIRE_APICURIO_ID8,
    ZX_WIRE_HEADERS,
} zx_wire_mode;

/* Reads the schema id of the len bytes at msg, framed as mode says (hdr,
 * hdr_len: the id header's value, for ZX_WIRE_HEADERS only; NULL when the
 * message has none).  Returns 0 with *id and *offset set (the datum is the
 * len - *offset bytes at msg + *offset), or -1 with a message in err
 * (NUL-terminated, truncated to errlen; err may be NULL) such as
 *     "wire: byte 0 is 0x7b, not 0 (not Confluent's wire format)"
 *     "wire: 3 bytes, fewer than the 5 of Confluent's prefix"
 *     "wire: no schema id header (apicurio.value.globalId)"
 * An empty message (a tombstone) is an error: the caller handles those
 * first.  Does not allocate. */
int zx_wire_parse(const void *msg, size_t len, zx_wire_mode mode, const void *hdr,
                  size_t hdr_len, int64_t *id, size_t *offset, char *err, size_t errlen);

typedef struct zx_registry zx_registry;

/* A client for the registry at url (http:// or https://, no query; a
 * trailing '/' is dropped), with HTTP basic authentication when username
 * is not NULL (password NULL is taken as ""), each request bounded by
 * timeout_ms (> 0).  Copies what it needs of its arguments.  Makes no
 * request.  Returns the client (free it with zx_registry_free), or NULL
 * when url is not http(s), timeout_ms <= 0, or out of memory. */
zx_registry *zx_registry_new(const char *url, const char *username, const char *password,
                             long timeout_ms);

/* Frees the client and every schema it cached.  NULL is a no-op. */
void zx_registry_free(zx_registry *r);

/* The schema of id (> 0): from the cache, else fetched and parsed.  Returns
 * 0 with *schema set (owned by r: valid until zx_registry_free, or until
 * ZX_REGISTRY_CACHE_MAX other ids have been fetched after it; use it before
 * the next zx_registry_get to be sure), 1 or -1 as explained above with
 * *schema NULL and a message in err (never the password), such as
 *     "registry http://127.0.0.1:8081: schema id 7: not found (404, error
 *      40403: Schema 7 not found)"
 *     "registry http://127.0.0.1:8081: schema id 7: Couldn't connect to
 *      server (will retry)" */
int zx_registry_get(zx_registry *r, int64_t id, const zx_avro_schema **schema, char *err,
                    size_t errlen);

/* `zxctl test`: lists the registry's subjects (GET /subjects) with r's
 * credentials and timeout.  Returns 0 with out set to
 *     "schema registry http://127.0.0.1:8081: 3 subjects"
 * or -1 with the reason in out (unreachable, TLS, refused credentials, a
 * 404 that hints at the URL's prefix, an answer that is not a list),
 * never the password.  Caches nothing. */
int zx_registry_check(zx_registry *r, char *out, size_t outlen);

/* Requests made so far (for tests and metrics). */
unsigned long zx_registry_requests(const zx_registry *r);

#endif /* ZX_COMMON_SCHEMA_REGISTRY_H */
