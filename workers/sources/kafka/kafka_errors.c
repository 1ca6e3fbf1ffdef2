/*
 * kafka_errors.c — librdkafka's errors turned into one sentence a person
 * can act on: which broker, what failed (unreachable, TLS and which check,
 * authentication, unknown topic, not authorized), what to change.  The
 * Kafka source and `zxctl test` both use it: the one place librdkafka's
 * error codes and reason texts are read (see kafka_int.h).
 *
 * Known client bug: librdkafka before 2.6.1 sends a wrong SCRAM nonce that
 * Kafka 4.x brokers refuse exactly as a wrong password; when SCRAM fails
 * with such a librdkafka, the sentence says so and how to get out of it.
 *
 * It must never: copy a secret into a sentence (it only sees error texts,
 * the user name and the mechanism), or depend on a librdkafka handle (it is
 * pure, so that tests/unit/test_kafka_errors.c can feed it the texts
 * librdkafka produces).
 */
#include <stdio.h>
#include <string.h>

#include "workers/sources/kafka/kafka_int.h"

/* librdkafka 2.6.1, as rd_kafka_version() gives it (final release). */
#define SCRAM_FIXED_VERSION 0x020601ff

/* OpenSSL's X509_V_ERR_* codes met here (stable numbers of its ABI). */
enum {
    X509_UNABLE_TO_GET_ISSUER_CERT = 2,
    X509_CERT_SIGNATURE_FAILURE = 7,
    X509_CERT_NOT_YET_VALID = 9,
    X509_CERT_HAS_EXPIRED = 10,
    X509_DEPTH_ZERO_SELF_SIGNED_CERT = 18,
    X509_SELF_SIGNED_CERT_IN_CHAIN = 19,
    X509_UNABLE_TO_GET_ISSUER_CERT_LOCALLY = 20,
    X509_UNABLE_TO_VERIFY_LEAF_SIGNATURE = 21,
    X509_INVALID_PURPOSE = 26,
    X509_HOSTNAME_MISMATCH = 62,
    X509_EMAIL_MISMATCH = 63,
    X509_IP_ADDRESS_MISMATCH = 64,
};

int ke_scram_broken(int v)
{
    return v < SCRAM_FIXED_VERSION;
}

int ke_stale_generation(rd_kafka_resp_err_t err)
{
    return err == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
           err == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS ||
           err == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID ||
           err == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID;
}

void ke_broker(const char *reason, char *out, size_t n)
{
    out[0] = '\0';
    if (!reason || !n)
        return;
    const char *colon = strstr(reason, ": ");
    if (!colon)
        return;
    const char *s = reason;
    const char *scheme = strstr(reason, "://");
    if (scheme && scheme < colon)
        s = scheme + 3;
    const char *slash = memchr(s, '/', (size_t)(colon - s));
    const char *end = slash ? slash : colon;
    size_t len = (size_t)(end - s);
    /* "host:port" (or "[v6]:port"): it has a ':' and no blank */
    if (!len || !memchr(s, ':', len) || memchr(s, ' ', len))
        return;
    if (len >= n)
        len = n - 1;
    memcpy(out, s, len);
    out[len] = '\0';
}

/* The part of reason after its "broker/id: " prefix, without librdkafka's
 * "(after Nms in state X[, N identical error(s) suppressed])" tail. */
static void detail(const char *reason, char *out, size_t n)
{
    char b[256];
    out[0] = '\0';
    if (!reason)
        return;
    const char *s = reason;
    ke_broker(reason, b, sizeof(b));
    if (b[0])
        s = strstr(reason, ": ") + 2;
    snprintf(out, n, "%s", s);
    char *tail = strstr(out, " (after ");
    if (tail)
        *tail = '\0';
}

static const char *has(const char *s, const char *what)
{
    return s ? strstr(s, what) : NULL;
}

static void version_text(int v, char *out, size_t n)
{
    snprintf(out, n, "%d.%d.%d", (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff);
}

static void who(const ke_ctx *c, char *out, size_t n)
{
    if (c->username)
        snprintf(out, n, "user \"%s\"", c->username);
    else
        snprintf(out, n, "this client");
}

/* "at broker B" or "" into out. */
static void at_broker(const char *reason, const char *prep, char *out, size_t n)
{
    char b[256];
    ke_broker(reason, b, sizeof(b));
    if (b[0])
        snprintf(out, n, "%s%s broker %s", prep[0] ? " " : "", prep, b);
    else
        out[0] = '\0';
}

/* Topic named in a reason such as "Subscribed topic not available: T:
 * Broker: Unknown topic or partition", into out ("" when none). */
static void topic_in(const char *reason, char *out, size_t n)
{
    static const char pre[] = "topic not available: ";
    out[0] = '\0';
    const char *s = has(reason, pre);
    if (!s)
        return;
    s += sizeof(pre) - 1;
    const char *e = strstr(s, ": ");
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len >= n)
        len = n - 1;
    memcpy(out, s, len);
    out[len] = '\0';
}

static ke_kind tls_error(const ke_ctx *c, const char *reason, const char *d, char *out,
                         size_t n)
{
    char at[300];
    at_broker(reason, "with", at, sizeof(at));
    const char *why = NULL;
    char buf[200];
    switch (c->x509_error) {
    case 0:
        break;
    case X509_HOSTNAME_MISMATCH:
    case X509_IP_ADDRESS_MISMATCH:
    case X509_EMAIL_MISMATCH:
        snprintf(out, n,
                 "TLS%s failed: hostname mismatch: the broker's certificate is not issued "
                 "for the host name or address zx connected to (check brokers, or the "
                 "certificate's subject alternative names)", at);
        return KE_TLS;
    case X509_UNABLE_TO_GET_ISSUER_CERT:
    case X509_CERT_SIGNATURE_FAILURE:
    case X509_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        why = "the broker's certificate is not signed by a CA zx trusts (tls.ca, or the "
              "system's CAs when tls.ca is not set)";
        break;
    case X509_CERT_HAS_EXPIRED:
        why = "the broker's certificate (or one of its CAs) has expired";
        break;
    case X509_CERT_NOT_YET_VALID:
        why = "the broker's certificate is not valid yet (check the clocks)";
        break;
    case X509_INVALID_PURPOSE:
        why = "the broker's certificate is not meant for a TLS server";
        break;
    default:
        snprintf(buf, sizeof(buf), "the broker's certificate was refused (OpenSSL "
                 "X509 verify error %d)", c->x509_error);
        why = buf;
        break;
    }
    if (why || has(d, "certificate verify failed") ||
        has(d, "Failed to verify broker certificate")) {
        if (!why) {
            const char *v = has(d, "Failed to verify broker certificate: ");
            if (v) {
                snprintf(buf, sizeof(buf), "%s", v + 37);
                why = buf;
            } else {
                why = "the broker's certificate could not be verified with tls.ca (or the "
                      "system's CAs when tls.ca is not set)";
            }
        }
        snprintf(out, n, "TLS%s failed: certificate verify failed: %s", at, why);
        return KE_TLS;
    }
    if (has(d, "unexpected eof") || has(d, "wrong version number") ||
        has(d, "packet length too long") || has(d, "Disconnected") ||
        has(d, "record layer failure")) {
        snprintf(out, n,
                 "TLS handshake%s failed: the broker did not answer TLS (is it a TLS "
                 "listener? check security)", at);
        return KE_PROTOCOL;
    }
    if (has(d, "unexpected message") || has(d, "certificate required") ||
        has(d, "handshake failure")) {
        snprintf(out, n,
                 "TLS handshake%s failed: the broker refused the handshake; it may require a "
                 "client certificate (tls.cert and tls.key) (%s)", at, d);
        return KE_TLS;
    }
    snprintf(out, n, "TLS handshake%s failed: %s", at, d[0] ? d : "no detail");
    return KE_TLS;
}

static ke_kind auth_error(const ke_ctx *c, rd_kafka_resp_err_t err, const char *reason,
                          const char *d, char *out, size_t n)
{
    char at[300], u[200], v[32];
    at_broker(reason, "at", at, sizeof(at));
    who(c, u, sizeof(u));
    const char *mech = c->mechanism ? c->mechanism : "?";
    const char *offered = has(d, "supported mechanisms: ");
    if (err == RD_KAFKA_RESP_ERR_UNSUPPORTED_SASL_MECHANISM || has(d, "handshake failed")) {
        const char *list = offered ? offered + 22 : "";
        while (*list == ' ')
            list++;
        if (!*list)
            snprintf(out, n,
                     "SASL handshake%s failed: the listener does not take SASL (is it a "
                     "PLAINTEXT or SSL listener? check security)", at);
        else
            snprintf(out, n,
                     "SASL handshake%s failed: the listener does not offer %s (it offers: "
                     "%.100s; check sasl.mechanism)", at, mech, list);
        return KE_PROTOCOL;
    }
    const char *why = "invalid credentials";
    char dbuf[160];
    if (has(d, "Invalid username or password"))
        why = "invalid user name or password";
    else if (!has(d, "invalid credentials") && d[0]) {
        const char *s = has(d, "SASL authentication error: ");
        /* the broker's words, cut to fit */
        snprintf(dbuf, sizeof(dbuf), "%.*s", (int)sizeof(dbuf) - 1, s ? s + 27 : d);
        why = dbuf;
    }
    if (c->mechanism && strncmp(c->mechanism, "SCRAM", 5) == 0 &&
        ke_scram_broken(c->rdkafka_version)) {
        version_text(c->rdkafka_version, v, sizeof(v));
        snprintf(out, n,
                 "authentication failed%s: the broker refused %s with SASL %s (%s). Either "
                 "the password is wrong, or the broker runs Kafka 4.x: librdkafka %s cannot "
                 "use SCRAM with Kafka 4.x brokers (fixed in librdkafka 2.6.1): build zx "
                 "against librdkafka >= 2.6.1, or use SASL PLAIN over TLS",
                 at, u, mech, why, v);
        return KE_AUTH;
    }
    snprintf(out, n,
             "authentication failed%s: the broker refused %s with SASL %s (%s): check "
             "sasl.username and sasl.password", at, u, mech, why);
    return KE_AUTH;
}

ke_kind ke_describe(const ke_ctx *c, rd_kafka_resp_err_t err, const char *reason,
                    const char *topic, char *out, size_t n)
{
    char d[400], u[200], t[256], b[256];
    detail(reason, d, sizeof(d));
    who(c, u, sizeof(u));
    ke_broker(reason, b, sizeof(b));
    if (!topic || !topic[0]) {
        topic_in(reason, t, sizeof(t));
        topic = t[0] ? t : NULL;
    }
    switch (err) {
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_SASL_MECHANISM:
    case RD_KAFKA_RESP_ERR_ILLEGAL_SASL_STATE:
        return auth_error(c, err, reason, d, out, n);

    case RD_KAFKA_RESP_ERR__SSL:
        return tls_error(c, reason, d, out, n);

    case RD_KAFKA_RESP_ERR__RESOLVE:
        snprintf(out, n, "cannot resolve the host of broker %s: %s (check brokers)",
                 b[0] ? b : "?", d);
        return KE_UNREACHABLE;

    case RD_KAFKA_RESP_ERR__TRANSPORT:
        if (has(d, "SSL handshake") || has(d, "connecting to a PLAINTEXT"))
            return tls_error(c, reason, d, out, n);
        if (has(d, "Failed to resolve")) {
            const char *e = strstr(d, "': ");
            snprintf(out, n, "cannot resolve the host of broker %s: %s (check brokers)",
                     b[0] ? b : "?", e ? e + 3 : d);
            return KE_UNREACHABLE;
        }
        if (has(d, "Connect to ") || has(d, "Connection setup timed out") ||
            has(d, "Connection refused") || has(d, "No route to host") ||
            has(d, "Network is unreachable")) {
            const char *e = has(d, " failed: ");
            snprintf(out, n, "cannot reach broker %s: %s", b[0] ? b : "?", e ? e + 9 : d);
            return KE_UNREACHABLE;
        }
        if (has(d, "while requesting ApiVersion") || has(d, "SSL listener")) {
            snprintf(out, n,
                     "broker %s closed the connection at the first request: it may be a TLS "
                     "listener (check security)", b[0] ? b : "?");
            return KE_PROTOCOL;
        }
        if (has(d, "require SASL")) {
            snprintf(out, n,
                     "broker %s closed the connection: it probably requires SASL "
                     "authentication (check security)", b[0] ? b : "?");
            return KE_PROTOCOL;
        }
        snprintf(out, n, "connection to broker %s lost: %s", b[0] ? b : "?", d);
        return KE_TRANSIENT;

    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
        snprintf(out, n, "cannot reach any broker (%s)", d[0] ? d : "all brokers are down");
        return KE_UNREACHABLE;

    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
        if (topic)
            snprintf(out, n, "topic \"%s\" does not exist (create it, or check topic)", topic);
        else
            snprintf(out, n, "unknown topic (%s)", d);
        return KE_UNKNOWN_TOPIC;

    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
        snprintf(out, n, "unknown partition%s%s (%s)", topic ? " of topic " : "",
                 topic ? topic : "", d);
        return KE_OTHER;

    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        if (topic)
            snprintf(out, n,
                     "not authorized to read topic \"%s\": %s needs the Read and Describe "
                     "ACLs on it", topic, u);
        else
            snprintf(out, n, "not authorized to read a topic: %s lacks an ACL (%s)", u, d);
        return KE_TOPIC_DENIED;

    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
        if (c->group)
            snprintf(out, n,
                     "not authorized to use consumer group \"%s\": %s needs the Read ACL on "
                     "the group", c->group, u);
        else
            snprintf(out, n, "not authorized to use a consumer group: %s lacks an ACL (%s)",
                     u, d);
        return KE_GROUP_DENIED;

    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
        snprintf(out, n, "not authorized on the cluster: %s lacks an ACL (%s)", u, d);
        return KE_OTHER;

    case RD_KAFKA_RESP_ERR__PARTITION_EOF:
    case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET:
    case RD_KAFKA_RESP_ERR__NO_OFFSET:
        snprintf(out, n, "%s", d[0] ? d : rd_kafka_err2str(err));
        return KE_TRANSIENT;

    default:
        snprintf(out, n, "Kafka error: %s%s%s", rd_kafka_err2str(err), d[0] ? ": " : "", d);
        return KE_OTHER;
    }
}

int ke_permanent(const ke_ctx *c, rd_kafka_resp_err_t err, const char *reason)
{
    char out[600], d[400];
    ke_kind k = ke_describe(c, err, reason, NULL, out, sizeof(out));
    detail(reason, d, sizeof(d));
    /* a broker going away mid-way is no answer to the credentials */
    if (has(d, "Disconnected") || has(d, "onnection closed") || has(d, "unexpected eof") ||
        has(d, "timed out"))
        return 0;
    switch (k) {
    case KE_AUTH:           /* the broker checked the credentials: no */
    case KE_TOPIC_DENIED:   /* the broker's ACLs said no */
    case KE_GROUP_DENIED:
        return 1;
    case KE_TLS:
        /* the certificate check failed, or the broker refused ours; an
         * unexplained handshake failure may be a broker going down */
        return c->x509_error != 0 || has(d, "certificate verify failed") ||
               has(d, "Failed to verify broker certificate") || has(d, "handshake failure") ||
               has(d, "certificate required") || has(d, "unexpected message");
    case KE_PROTOCOL:
        /* the listener answered, in a way that says the settings do not
         * fit it: SASL without the mechanism, or no TLS at all */
        return err == RD_KAFKA_RESP_ERR_UNSUPPORTED_SASL_MECHANISM ||
               has(d, "supported mechanisms: ") || has(d, "wrong version number") ||
               has(d, "packet length too long");
    default:                /* unreachable, unknown topic, other: may pass */
        return 0;
    }
}
