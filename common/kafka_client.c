/*
 * kafka_client.c — a librdkafka configuration from a connection's
 * settings (kafka_client.h).
 */
#include "common/kafka_client.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "common/log.h"
#include "common/util.h"

/* A property whose value is a secret (as conf/ decides: its key names a
 * password or secret, or it is an OAUTHBEARER setting). */
static int secret_key(const char *key)
{
    return strcasestr(key, "password") || strcasestr(key, "secret") ||
           strcasestr(key, "sasl.oauthbearer");
}

/* librdkafka's aliases among the properties zx proposes defaults for. */
static const char *const aliases[][2] = {
    {"max.partition.fetch.bytes", "fetch.message.max.bytes"},
};

static int user_has_exactly(const zx_kafka_settings *s, const char *key)
{
    for (size_t i = 0; s && i < s->nprops; i++)
        if (s->prop_keys[i] && strcasecmp(s->prop_keys[i], key) == 0)
            return 1;
    return 0;
}

static int user_has(const zx_kafka_settings *s, const char *key)
{
    if (user_has_exactly(s, key))
        return 1;
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        for (int j = 0; j < 2; j++)
            if (strcasecmp(aliases[i][j], key) == 0 && user_has_exactly(s, aliases[i][!j]))
                return 1;
    return 0;
}

int zx_kafka_conf_set(rd_kafka_conf_t *conf, const zx_kafka_settings *s, int user_wins,
                      const char *key, const char *val, char *err, size_t errlen)
{
    if (user_wins && user_has(s, key))
        return 0;
    char e[512];
    if (rd_kafka_conf_set(conf, key, val, e, sizeof(e)) == RD_KAFKA_CONF_OK)
        return 0;
    if (secret_key(key))
        return zx_seterr(err, errlen, "librdkafka refused the value of property %s", key);
    return zx_seterr(err, errlen, "librdkafka refused property %s: %s", key, e);
}

/* librdkafka's log lines, in zx's format.  Broker failures ("FAIL") are
 * left to the error callbacks, which say them better and once. */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    if (level > LOG_WARNING || strcmp(fac, "FAIL") == 0)
        return;
    char q[1024];
    if (level <= LOG_ERR)
        zx_error("event=rdkafka facility=%s message=%s", fac, zx_log_quote(buf, q, sizeof(q)));
    else
        zx_warn("event=rdkafka facility=%s message=%s", fac, zx_log_quote(buf, q, sizeof(q)));
}

/* Runs on a broker thread for each certificate of the chain: keep
 * OpenSSL's verdict, and remember which check failed.  The client's opaque
 * starts with a zx_kafka_seen (zx_kafka_conf_new's contract). */
static int verify_cb(rd_kafka_t *rk, const char *broker_name, int32_t broker_id,
                     int *x509_error, int depth, const char *buf, size_t size, char *errstr,
                     size_t errstr_size, void *opaque)
{
    (void)rk;
    (void)broker_name;
    (void)broker_id;
    (void)depth;
    (void)buf;
    (void)size;
    if (*x509_error == 0)
        return 1;
    zx_kafka_seen *seen = opaque;
    if (seen)
        atomic_store(&seen->x509_error, *x509_error);
    snprintf(errstr, errstr_size, "certificate verify failed (X509 error %d)", *x509_error);
    return 0;
}

int zx_kafka_is_tls(const zx_kafka_settings *s)
{
    return s->security &&
           (strcmp(s->security, "ssl") == 0 || strcmp(s->security, "sasl_ssl") == 0);
}

int zx_kafka_is_sasl(const zx_kafka_settings *s)
{
    return s->security && strncmp(s->security, "sasl_", 5) == 0;
}

/* Set key to val when val is not NULL.  0, or -1 (err set). */
static int set_opt(rd_kafka_conf_t *conf, const zx_kafka_settings *s, const char *key,
                   const char *val, char *err, size_t errlen)
{
    return val ? zx_kafka_conf_set(conf, s, 0, key, val, err, errlen) : 0;
}

rd_kafka_conf_t *zx_kafka_conf_new(const zx_kafka_settings *s, zx_kafka_seen *seen, char *err,
                                   size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!conf) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    if (set_opt(conf, s, "bootstrap.servers", s->brokers, err, errlen) < 0 ||
        set_opt(conf, s, "security.protocol", s->security ? s->security : "plaintext", err,
                errlen) < 0)
        goto fail;
    if (zx_kafka_is_sasl(s) &&
        (set_opt(conf, s, "sasl.mechanism", s->sasl_mechanism, err, errlen) < 0 ||
         set_opt(conf, s, "sasl.username", s->sasl_username, err, errlen) < 0 ||
         set_opt(conf, s, "sasl.password", s->sasl_password, err, errlen) < 0))
        goto fail;
    if (zx_kafka_is_tls(s) &&
        (set_opt(conf, s, "ssl.ca.location", s->tls_ca, err, errlen) < 0 ||
         set_opt(conf, s, "ssl.certificate.location", s->tls_cert, err, errlen) < 0 ||
         set_opt(conf, s, "ssl.key.location", s->tls_key, err, errlen) < 0 ||
         set_opt(conf, s, "ssl.key.password", s->tls_key_password, err, errlen) < 0))
        goto fail;
    for (size_t i = 0; i < s->nprops; i++)
        if (s->prop_keys[i] && set_opt(conf, s, s->prop_keys[i], s->prop_values[i], err,
                                       errlen) < 0)
            goto fail;
    /* (log.connection.close stays on: without it librdkafka also keeps
     * quiet about a listener of another protocol closing the connection) */
    if (zx_kafka_conf_set(conf, s, 1, "client.id", "zx", err, errlen) < 0 ||
        zx_kafka_conf_set(conf, s, 0, "log.queue", "true", err, errlen) < 0)
        goto fail;
    rd_kafka_conf_set_log_cb(conf, log_cb);
    if (zx_kafka_is_tls(s) &&
        rd_kafka_conf_set_ssl_cert_verify_cb(conf, verify_cb) != RD_KAFKA_CONF_OK) {
        zx_seterr(err, errlen, "librdkafka has no TLS support");
        goto fail;
    }
    rd_kafka_conf_set_opaque(conf, seen);
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

/* conf's value of key as a number, 0 when unset or not a number. */
static long conf_long(rd_kafka_conf_t *conf, const char *key)
{
    char v[64];
    size_t n = sizeof(v);
    if (rd_kafka_conf_get(conf, key, v, &n) != RD_KAFKA_CONF_OK)
        return 0;
    return strtol(v, NULL, 10);
}

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

int zx_kafka_bound_prefetch(rd_kafka_conf_t *conf, const zx_kafka_settings *s,
                            uint64_t budget, zx_kafka_prefetch *out, char *err,
                            size_t errlen)
{
    uint64_t queue = clamp_u64(budget, UINT64_C(1) << 20, UINT64_C(64) << 20);
    uint64_t fetch = queue / 2 < (UINT64_C(1) << 20) ? UINT64_C(1) << 20 : queue / 2;
    /* librdkafka refuses fetch.max.bytes below message.max.bytes or above
     * receive.message.max.bytes - 512 (whoever set those) */
    long msgmax = conf_long(conf, "message.max.bytes");
    long recvmax = conf_long(conf, "receive.message.max.bytes");
    if (msgmax > 0 && fetch < (uint64_t)msgmax)
        fetch = (uint64_t)msgmax;
    if (recvmax > 512 && fetch > (uint64_t)recvmax - 512)
        fetch = (uint64_t)recvmax - 512;
    uint64_t part = fetch / 2 < (UINT64_C(1) << 20) ? fetch / 2 : UINT64_C(1) << 20;
    uint64_t minmsgs = clamp_u64(queue / 512, 1000, 100000);
    char v[4][24];
    snprintf(v[0], sizeof(v[0]), "%" PRIu64, queue / 1024);
    snprintf(v[1], sizeof(v[1]), "%" PRIu64, fetch);
    snprintf(v[2], sizeof(v[2]), "%" PRIu64, part);
    snprintf(v[3], sizeof(v[3]), "%" PRIu64, minmsgs);
    if (zx_kafka_conf_set(conf, s, 1, "queued.max.messages.kbytes", v[0], err, errlen) < 0 ||
        zx_kafka_conf_set(conf, s, 1, "fetch.max.bytes", v[1], err, errlen) < 0 ||
        zx_kafka_conf_set(conf, s, 1, "max.partition.fetch.bytes", v[2], err, errlen) < 0 ||
        zx_kafka_conf_set(conf, s, 1, "queued.min.messages", v[3], err, errlen) < 0)
        return -1;
    if (out) {
        out->queued_kbytes = conf_long(conf, "queued.max.messages.kbytes");
        out->queued_min_messages = conf_long(conf, "queued.min.messages");
        out->fetch_max_bytes = conf_long(conf, "fetch.max.bytes");
        out->partition_fetch_bytes = conf_long(conf, "max.partition.fetch.bytes");
    }
    return 0;
}

int zx_kafka_x509_error(const zx_kafka_seen *seen)
{
    return seen ? atomic_load(&((zx_kafka_seen *)seen)->x509_error) : 0;
}

void zx_kafka_describe(const zx_kafka_settings *s, char *out, size_t n)
{
    char sec[32];
    size_t i = 0;
    for (const char *p = s->security ? s->security : "plaintext"; *p && i < sizeof(sec) - 1; p++)
        sec[i++] = (char)toupper((unsigned char)*p);
    sec[i] = '\0';
    if (zx_kafka_is_sasl(s))
        snprintf(out, n, "%s, %s as %s", sec, s->sasl_mechanism ? s->sasl_mechanism : "?",
                 s->sasl_username ? s->sasl_username : "?");
    else
        snprintf(out, n, "%s", sec);
}
