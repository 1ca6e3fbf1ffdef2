/*
 * kafka_sr.h — registering the Kafka destination's Avro schemas in a
 * Confluent-compatible schema registry:
 *     POST {url}/subjects/{subject}/versions  {"schema": "<schema JSON>"}
 *       -> 200 {"id": N}
 * A schema the subject has already keeps its id (the registry's rule), so
 * every run registers its schemas.
 */
#ifndef ZX_DEST_KAFKA_SR_H
#define ZX_DEST_KAFKA_SR_H

#include <stddef.h>
#include <stdint.h>

/* Register schema (JSON text) under subject at the registry url (http://
 * or https://, no trailing slash needed), each attempt within timeout_ms.
 * Returns 0 with *id (1..2^31-1), or -1 with err: the registry cannot be
 * reached ("schema registry http://h:8081: Connection refused"), refuses
 * the schema (409: incompatible with the subject's, with the registry's
 * message; 422: invalid), or answers something else. */
int zx_ksr_register(const char *url, const char *subject, const char *schema, long timeout_ms,
                    uint32_t *id, char *err, size_t errlen);

#endif
