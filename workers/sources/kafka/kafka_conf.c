/*
 * kafka_conf.c — a connection's settings (conf/config.h, validated
 * already) as a librdkafka configuration: brokers, security protocol,
 * SASL, TLS files, the pass-through properties; zx's log callback (the
 * key=value log) and a certificate callback that remembers which TLS check
 * failed, so that kafka_errors.c can say it.  See kafka_int.h.
 *
 * It must never: refuse what conf/ accepted (librdkafka has the last word
 * and its refusal is reported), print a secret (a refused secret property
 * is named, not shown), or dump the configuration.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/sources/kafka/kafka_int.h"

/* A property whose value is a secret (as conf/ decides: its key names a
 * password or secret, or it is an OAUTHBEARER setting). */
static int secret_key(const char *key)
{
    return strcasestr(key, "password") || strcasestr(key, "secret") ||
           strcasestr(key, "sasl.oauthbearer");
}

static int user_has(const zx_conf_connection *c, const char *key)
{
    for (size_t i = 0; c && i < c->nprops; i++)
        if (c->prop_keys[i] && strcasecmp(c->prop_keys[i], key) == 0)
            return 1;
    return 0;
}

int kc_set(rd_kafka_conf_t *conf, const zx_conf_connection *c, int user_wins,
           const char *key, const char *val, char *err, size_t errlen)
{
    if (user_wins && user_has(c, key))
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
 * starts with a kc_seen (kc_build's contract). */
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
    kc_seen *seen = opaque;
    if (seen)
        atomic_store(&seen->x509_error, *x509_error);
    snprintf(errstr, errstr_size, "certificate verify failed (X509 error %d)", *x509_error);
    return 0;
}

static int is_tls(const zx_conf_connection *c)
{
    return c->security && (strcmp(c->security, "ssl") == 0 || strcmp(c->security, "sasl_ssl") == 0);
}

static int is_sasl(const zx_conf_connection *c)
{
    return c->security && strncmp(c->security, "sasl_", 5) == 0;
}

rd_kafka_conf_t *kc_build(const zx_conf_connection *c, kc_seen *seen, char *err,
                          size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!conf) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    if (kc_set(conf, c, 0, "bootstrap.servers", c->brokers_csv, err, errlen) < 0 ||
        kc_set(conf, c, 0, "security.protocol", c->security ? c->security : "plaintext", err,
               errlen) < 0)
        goto fail;
    if (is_sasl(c) &&
        ((c->sasl_mechanism &&
          kc_set(conf, c, 0, "sasl.mechanism", c->sasl_mechanism, err, errlen) < 0) ||
         (c->sasl_username &&
          kc_set(conf, c, 0, "sasl.username", c->sasl_username, err, errlen) < 0) ||
         (c->sasl_password &&
          kc_set(conf, c, 0, "sasl.password", c->sasl_password, err, errlen) < 0)))
        goto fail;
    if (is_tls(c) &&
        ((c->tls_ca && kc_set(conf, c, 0, "ssl.ca.location", c->tls_ca, err, errlen) < 0) ||
         (c->tls_cert &&
          kc_set(conf, c, 0, "ssl.certificate.location", c->tls_cert, err, errlen) < 0) ||
         (c->tls_key && kc_set(conf, c, 0, "ssl.key.location", c->tls_key, err, errlen) < 0) ||
         (c->tls_key_password &&
          kc_set(conf, c, 0, "ssl.key.password", c->tls_key_password, err, errlen) < 0)))
        goto fail;
    for (size_t i = 0; i < c->nprops; i++)
        if (c->prop_keys[i] && c->prop_values[i] &&
            kc_set(conf, c, 0, c->prop_keys[i], c->prop_values[i], err, errlen) < 0)
            goto fail;
    /* (log.connection.close stays on: without it librdkafka also keeps
     * quiet about a listener of another protocol closing the connection) */
    if (kc_set(conf, c, 1, "client.id", "zx", err, errlen) < 0 ||
        kc_set(conf, c, 0, "log.queue", "true", err, errlen) < 0)
        goto fail;
    rd_kafka_conf_set_log_cb(conf, log_cb);
    if (is_tls(c) && rd_kafka_conf_set_ssl_cert_verify_cb(conf, verify_cb) != RD_KAFKA_CONF_OK) {
        zx_seterr(err, errlen, "librdkafka has no TLS support");
        goto fail;
    }
    rd_kafka_conf_set_opaque(conf, seen);
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

void kc_err_ctx(const zx_conf_connection *c, const char *group, const kc_seen *seen,
                ke_ctx *out)
{
    memset(out, 0, sizeof(*out));
    out->security = c->security;
    if (is_sasl(c)) {
        out->mechanism = c->sasl_mechanism;
        out->username = c->sasl_username;
    }
    out->group = group;
    out->rdkafka_version = rd_kafka_version();
    out->x509_error = seen ? atomic_load(&((kc_seen *)seen)->x509_error) : 0;
}

void kc_describe(const zx_conf_connection *c, char *out, size_t n)
{
    char sec[32];
    size_t i = 0;
    for (const char *s = c->security ? c->security : "plaintext"; *s && i < sizeof(sec) - 1; s++)
        sec[i++] = (char)toupper((unsigned char)*s);
    sec[i] = '\0';
    if (is_sasl(c))
        snprintf(out, n, "%s, %s as %s", sec, c->sasl_mechanism ? c->sasl_mechanism : "?",
                 c->sasl_username ? c->sasl_username : "?");
    else
        snprintf(out, n, "%s", sec);
}
