/*
 * kafka_client.h — a librdkafka configuration from a Kafka connection's
 * settings, for every Kafka client of zx: the Kafka source's consumer
 * today, the Kafka destination's producer to come.  Brokers, security
 * protocol, SASL, TLS files, the connection's pass-through properties,
 * zx's log callback and a certificate callback that remembers which TLS
 * check failed (so that an error can say it).
 *
 * It must never: refuse what conf/ accepted (conf/ refuses the properties
 * zx sets itself; librdkafka has the last word and its refusal is
 * reported), print a secret (a refused secret property is named, not
 * shown), or dump the configuration.
 */
#ifndef ZX_COMMON_KAFKA_CLIENT_H
#define ZX_COMMON_KAFKA_CLIENT_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

/* A connection's settings, validated already (conf/).  Borrowed: the
 * strings must outlive the calls that take them (not the configuration
 * built: librdkafka copies). */
typedef struct zx_kafka_settings {
    const char *brokers;          /* "host:port,host:port" */
    const char *security;         /* "plaintext" | "ssl" | "sasl_plaintext" |
                                   * "sasl_ssl"; NULL: plaintext */
    const char *sasl_mechanism;   /* used with sasl_* only; NULL: unset */
    const char *sasl_username;
    const char *sasl_password;    /* secret */
    const char *tls_ca;           /* files, used with *ssl only; NULL: unset */
    const char *tls_cert;
    const char *tls_key;
    const char *tls_key_password; /* secret */
    char *const *prop_keys;       /* pass-through librdkafka properties */
    char *const *prop_values;
    size_t nprops;
} zx_kafka_settings;

/* What the client's callbacks pass on: the start of the struct its opaque
 * (rd_kafka_conf_set_opaque) points to. */
typedef struct zx_kafka_seen {
    _Atomic int x509_error;    /* last failing X509_V_ERR_*, 0 none;
                                  written by librdkafka's broker threads */
} zx_kafka_seen;

/* A new librdkafka configuration for s: brokers, security, SASL, TLS
 * files, then s's properties, client.id "zx" (unless a property sets it);
 * plus zx's log callback (through the main queue: call
 * rd_kafka_set_log_queue(rk, NULL) once the client exists) and, with TLS,
 * a certificate callback recording the failing check in seen->x509_error.
 * The opaque is set to seen (may be NULL); a caller that sets its own must
 * point it to a struct that starts with a zx_kafka_seen.  Returns the
 * configuration (the caller gives it to rd_kafka_new or destroys it), or
 * NULL with err set (naming the property, never a secret value). */
rd_kafka_conf_t *zx_kafka_conf_new(const zx_kafka_settings *s, zx_kafka_seen *seen, char *err,
                                   size_t errlen);

/* Set key=val on conf: always, or (user_wins) only when s's properties do
 * not set key (nor an alias librdkafka has for it).  0, or -1 with "librdkafka refused property K: why" in err
 * (for a secret key, "librdkafka refused the value of property K"). */
int zx_kafka_conf_set(rd_kafka_conf_t *conf, const zx_kafka_settings *s, int user_wins,
                      const char *key, const char *val, char *err, size_t errlen);

/* The bounds of a consumer's prefetch, as applied (the user's values
 * where s's properties set them, else zx's). */
typedef struct zx_kafka_prefetch {
    long queued_kbytes;         /* queued.max.messages.kbytes */
    long queued_min_messages;   /* queued.min.messages */
    long fetch_max_bytes;       /* fetch.max.bytes */
    long partition_fetch_bytes; /* max.partition.fetch.bytes */
} zx_kafka_prefetch;

/* Bound what librdkafka fetches ahead of a consumer by `budget` bytes
 * (the caller's share of memory for messages not yet taken; a consumer
 * worker passes a quarter of its ring): queued.max.messages.kbytes =
 * budget clamped to [1 MiB, 64 MiB]; fetch.max.bytes = half of that, at
 * least 1 MiB (one response never fills the queue alone), and within
 * what librdkafka accepts beside message.max.bytes and
 * receive.message.max.bytes;
 * max.partition.fetch.bytes = 1 MiB at most, at most half of
 * fetch.max.bytes; queued.min.messages = the queue bound / 512 bytes
 * clamped to [1000, 100000] (librdkafka's per-message overhead is not in
 * the kbytes bound: small messages are bounded by their count).  Each
 * only when s's properties do not set it (nor its alias:
 * fetch.message.max.bytes for max.partition.fetch.bytes).  The applied
 * values go to *out (read back from conf).  0, or -1 with err set as
 * zx_kafka_conf_set. */
int zx_kafka_bound_prefetch(rd_kafka_conf_t *conf, const zx_kafka_settings *s,
                            uint64_t budget, zx_kafka_prefetch *out, char *err,
                            size_t errlen);

/* 1 when s's security protocol uses SASL / TLS, else 0. */
int zx_kafka_is_sasl(const zx_kafka_settings *s);
int zx_kafka_is_tls(const zx_kafka_settings *s);

/* "SASL_SSL, SCRAM-SHA-512 as zx" / "PLAINTEXT" into out (n bytes). */
void zx_kafka_describe(const zx_kafka_settings *s, char *out, size_t n);

/* The last failing X509 check the certificate callback saw, 0 none. */
int zx_kafka_x509_error(const zx_kafka_seen *seen);

#endif
