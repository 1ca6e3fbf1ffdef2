/*
 * test_kafka_errors.c — librdkafka's errors into one sentence
 * (workers/sources/kafka/kafka_errors.c).  The reason texts are the ones
 * librdkafka 2.0.2 printed against the test brokers (tests/services/kafka)
 * for each failure: wrong password (PLAIN, SCRAM), SCRAM against Kafka 4.x,
 * wrong CA, hostname mismatch, TLS or SASL to the wrong listener, refused
 * connection, unknown topic, missing ACLs.  No broker, no timing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "workers/sources/kafka/kafka_int.h"

#include "tests/unit/check.h"

#define V_2_0_2 0x020002ff
#define V_2_6_1 0x020601ff

static ke_ctx ctx(const char *security, const char *mech, const char *user, int version)
{
    ke_ctx c = {.security = security, .mechanism = mech, .username = user,
                .group = "g1", .rdkafka_version = version};
    return c;
}

/* Check the kind and that each of the NULL-ended phrases is in the text
 * (and that `absent` is not). */
static void expect(int line, const ke_ctx *c, rd_kafka_resp_err_t err, const char *reason,
                   const char *topic, ke_kind kind, const char *absent, ...)
{
    char out[512];
    ke_kind k = ke_describe(c, err, reason, topic, out, sizeof(out));
    int bad = k != kind;
    va_list ap;
    va_start(ap, absent);
    const char *want;
    while ((want = va_arg(ap, const char *)))
        if (!strstr(out, want)) {
            printf("%s:%d: missing \"%s\"\n", __FILE__, line, want);
            bad = 1;
        }
    va_end(ap);
    if (absent && strstr(out, absent)) {
        printf("%s:%d: unexpected \"%s\"\n", __FILE__, line, absent);
        bad = 1;
    }
    if (strstr(out, "(after ") || strlen(out) >= 500) {
        printf("%s:%d: librdkafka's tail kept, or too long\n", __FILE__, line);
        bad = 1;
    }
    if (bad) {
        printf("%s:%d: kind %d (want %d): %s\n", __FILE__, line, (int)k, (int)kind, out);
        failures++;
    }
}

static void test_broker(void)
{
    char b[64];
    ke_broker("sasl_ssl://127.0.0.1:9094/bootstrap: SASL authentication error: x", b, sizeof(b));
    CHECK(strcmp(b, "127.0.0.1:9094") == 0);
    ke_broker("127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: x", b, sizeof(b));
    CHECK(strcmp(b, "127.0.0.1:1") == 0);
    ke_broker("ssl://kafka-1.example.com:9093/2: Disconnected", b, sizeof(b));
    CHECK(strcmp(b, "kafka-1.example.com:9093") == 0);
    ke_broker("1/1 brokers are down", b, sizeof(b));
    CHECK(b[0] == '\0');
    ke_broker("Subscribed topic not available: clicks: Broker: Unknown topic or partition", b,
              sizeof(b));
    CHECK(b[0] == '\0');
    ke_broker(NULL, b, sizeof(b));
    CHECK(b[0] == '\0');
}

static void test_auth(void)
{
    ke_ctx plain = ctx("sasl_plaintext", "PLAIN", "zx", V_2_0_2);
    expect(__LINE__, &plain, RD_KAFKA_RESP_ERR__AUTHENTICATION,
           "sasl_plaintext://127.0.0.1:40431/bootstrap: SASL authentication error: "
           "Authentication failed: Invalid username or password (after 304ms in state "
           "AUTH_REQ, 1 identical error(s) suppressed)",
           NULL, KE_AUTH, "librdkafka", "authentication failed", "127.0.0.1:40431",
           "user \"zx\"", "SASL PLAIN", "invalid user name or password", NULL);

    const char *scram = "sasl_plaintext://127.0.0.1:40431/bootstrap: SASL authentication "
                        "error: Authentication failed during authentication due to invalid "
                        "credentials with SASL mechanism SCRAM-SHA-256 (after 348ms in state "
                        "AUTH_REQ)";
    ke_ctx s202 = ctx("sasl_ssl", "SCRAM-SHA-256", "zx", V_2_0_2);
    expect(__LINE__, &s202, RD_KAFKA_RESP_ERR__AUTHENTICATION, scram, NULL, KE_AUTH, NULL,
           "authentication failed", "SCRAM-SHA-256",
           "librdkafka 2.0.2 cannot use SCRAM with Kafka 4.x brokers (fixed in librdkafka "
           "2.6.1): build zx against librdkafka >= 2.6.1, or use SASL PLAIN over TLS", NULL);
    ke_ctx s261 = ctx("sasl_ssl", "SCRAM-SHA-512", "zx", V_2_6_1);
    expect(__LINE__, &s261, RD_KAFKA_RESP_ERR__AUTHENTICATION, scram, NULL, KE_AUTH,
           "librdkafka", "authentication failed", "sasl.password", NULL);
    /* PLAIN with an old librdkafka: no SCRAM hint */
    expect(__LINE__, &plain, RD_KAFKA_RESP_ERR__AUTHENTICATION, scram, NULL, KE_AUTH,
           "Kafka 4.x", "authentication failed", NULL);
    CHECK(ke_scram_broken(V_2_0_2) && ke_scram_broken(0x020601fe) && !ke_scram_broken(V_2_6_1) &&
          !ke_scram_broken(0x020a00ff));

    /* SASL against a listener without it */
    expect(__LINE__, &plain, RD_KAFKA_RESP_ERR__AUTHENTICATION,
           "sasl_plaintext://127.0.0.1:39289/bootstrap: SASL PLAIN mechanism handshake failed: "
           "Broker: Request not valid in current SASL state: broker's supported mechanisms:  "
           "(after 1ms in state AUTH_HANDSHAKE)",
           NULL, KE_PROTOCOL, NULL, "SASL handshake", "does not take SASL", "security", NULL);
    expect(__LINE__, &plain, RD_KAFKA_RESP_ERR__AUTHENTICATION,
           "sasl_plaintext://h:1/bootstrap: SASL PLAIN mechanism handshake failed: Broker: "
           "Unsupported SASL mechanism: broker's supported mechanisms: SCRAM-SHA-512 (after 1ms "
           "in state AUTH_HANDSHAKE)",
           NULL, KE_PROTOCOL, NULL, "does not offer PLAIN", "SCRAM-SHA-512", NULL);
}

static void test_tls(void)
{
    const char *verify = "ssl://127.0.0.1:38967/bootstrap: SSL handshake failed: "
                         "error:0A000086:SSL routines::certificate verify failed: broker "
                         "certificate could not be verified, verify that ssl.ca.location is "
                         "correctly configured or root CA certificates are installed (install "
                         "ca-certificates package) (after 65ms in state SSL_HANDSHAKE)";
    ke_ctx c = ctx("ssl", NULL, NULL, V_2_0_2);
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__SSL, verify, NULL, KE_TLS, NULL,
           "TLS with broker 127.0.0.1:38967 failed", "certificate verify failed", NULL);
    c.x509_error = 20; /* unable to get local issuer certificate: the wrong CA */
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__SSL, verify, NULL, KE_TLS, "hostname",
           "certificate verify failed", "not signed by a CA zx trusts", "tls.ca", NULL);
    c.x509_error = 62; /* the certificate's names do not include the host */
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__SSL, verify, NULL, KE_TLS, "not signed",
           "hostname mismatch", NULL);
    c.x509_error = 64;
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__SSL, verify, NULL, KE_TLS, NULL,
           "hostname mismatch", NULL);
    c.x509_error = 10;
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__SSL, verify, NULL, KE_TLS, NULL, "expired", NULL);
    c.x509_error = 0;
    /* TLS to a plaintext listener */
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__SSL,
           "ssl://127.0.0.1:39289/bootstrap: SSL handshake failed: error:0A000126:SSL "
           "routines::unexpected eof while reading (after 2ms in state SSL_HANDSHAKE)",
           NULL, KE_PROTOCOL, NULL, "TLS handshake with broker 127.0.0.1:39289 failed",
           "TLS listener", NULL);
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__TRANSPORT,
           "ssl://127.0.0.1:39289/bootstrap: SSL handshake failed: Disconnected: connecting to "
           "a PLAINTEXT broker listener? (after 2ms in state SSL_HANDSHAKE)",
           NULL, KE_PROTOCOL, NULL, "TLS handshake", NULL);
    /* plaintext to a TLS listener */
    ke_ctx p = ctx("plaintext", NULL, NULL, V_2_0_2);
    expect(__LINE__, &p, RD_KAFKA_RESP_ERR__TRANSPORT,
           "127.0.0.1:38967/bootstrap: Disconnected while requesting ApiVersion: might be "
           "caused by incorrect security.protocol configuration (connecting to a SSL listener?) "
           "or broker version is < 0.10 (see api.version.request) (after 1ms in state "
           "APIVERSION_QUERY)",
           NULL, KE_PROTOCOL, NULL, "127.0.0.1:38967", "TLS listener", "security", NULL);
    expect(__LINE__, &p, RD_KAFKA_RESP_ERR__TRANSPORT,
           "127.0.0.1:40431/bootstrap: Disconnected: verify that security.protocol is correctly "
           "configured, broker might require SASL authentication (after 1ms in state UP)",
           NULL, KE_PROTOCOL, NULL, "requires SASL", NULL);
}

static void test_reach(void)
{
    ke_ctx c = ctx("plaintext", NULL, NULL, V_2_0_2);
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__TRANSPORT,
           "127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused "
           "(after 0ms in state CONNECT, 1 identical error(s) suppressed)",
           NULL, KE_UNREACHABLE, NULL, "cannot reach broker 127.0.0.1:1: Connection refused",
           NULL);
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__RESOLVE,
           "nosuch.invalid:9092/bootstrap: Failed to resolve 'nosuch.invalid:9092': Name or "
           "service not known (after 2ms in state CONNECT)",
           NULL, KE_UNREACHABLE, NULL, "cannot resolve", "nosuch.invalid:9092", NULL);
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "1/1 brokers are down", NULL,
           KE_UNREACHABLE, NULL, "cannot reach any broker", NULL);
    /* a connection the broker closed after it was up: librdkafka reconnects */
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR__TRANSPORT,
           "127.0.0.1:9092/1: Disconnected (after 600012ms in state UP)", NULL, KE_TRANSIENT,
           NULL, NULL);
}

static void test_topics(void)
{
    ke_ctx c = ctx("sasl_plaintext", "PLAIN", "noacl", V_2_0_2);
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
           "Subscribed topic not available: nosuch: Broker: Unknown topic or partition", NULL,
           KE_UNKNOWN_TOPIC, NULL, "topic \"nosuch\" does not exist", NULL);
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, NULL, "clicks",
           KE_UNKNOWN_TOPIC, NULL, "topic \"clicks\" does not exist", NULL);
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, NULL, "probe1",
           KE_TOPIC_DENIED, NULL, "not authorized to read topic \"probe1\"", "user \"noacl\"",
           NULL);
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
           "Subscribed topic not available: probe1: Broker: Topic authorization failed", NULL,
           KE_TOPIC_DENIED, NULL, "topic \"probe1\"", NULL);
    expect(__LINE__, &c, RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
           "FindCoordinator response error: Group authorization failed.", NULL, KE_GROUP_DENIED,
           NULL, "not authorized to use consumer group \"g1\"", "user \"noacl\"", NULL);
}

/* Which errors fail the pipeline at once (ke_permanent): the brokers'
 * answer to settings; never a broker away, restarting or hanging up. */
static void test_permanent(void)
{
    ke_ctx plain = ctx("sasl_plaintext", "PLAIN", "zx", V_2_0_2);
    CHECK(ke_permanent(&plain, RD_KAFKA_RESP_ERR__AUTHENTICATION,
                       "sasl_plaintext://127.0.0.1:40431/bootstrap: SASL authentication error: "
                       "Authentication failed: Invalid username or password (after 304ms in "
                       "state AUTH_REQ)"));
    CHECK(ke_permanent(&plain, RD_KAFKA_RESP_ERR__AUTHENTICATION,
                       "sasl_plaintext://h:1/bootstrap: SASL PLAIN mechanism handshake failed: "
                       "Broker: Unsupported SASL mechanism: broker's supported mechanisms: "
                       "SCRAM-SHA-512 (after 1ms in state AUTH_HANDSHAKE)"));
    ke_ctx c = ctx("ssl", NULL, NULL, V_2_0_2);
    const char *verify = "ssl://127.0.0.1:38967/bootstrap: SSL handshake failed: "
                         "error:0A000086:SSL routines::certificate verify failed: broker "
                         "certificate could not be verified (after 65ms in state "
                         "SSL_HANDSHAKE)";
    CHECK(ke_permanent(&c, RD_KAFKA_RESP_ERR__SSL, verify));
    c.x509_error = 62;
    CHECK(ke_permanent(&c, RD_KAFKA_RESP_ERR__SSL, verify));
    c.x509_error = 0;
    CHECK(ke_permanent(&c, RD_KAFKA_RESP_ERR__SSL,
                       "ssl://h:1/bootstrap: SSL handshake failed: error:0A00010B:SSL "
                       "routines::wrong version number (after 2ms in state SSL_HANDSHAKE)"));
    ke_ctx acl = ctx("sasl_plaintext", "PLAIN", "noacl", V_2_0_2);
    CHECK(ke_permanent(&acl, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, NULL));
    CHECK(ke_permanent(&acl, RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
                       "FindCoordinator response error: Group authorization failed."));

    /* transient: may pass by itself */
    CHECK(!ke_permanent(&c, RD_KAFKA_RESP_ERR__SSL,
                        "ssl://127.0.0.1:39289/bootstrap: SSL handshake failed: "
                        "error:0A000126:SSL routines::unexpected eof while reading (after 2ms "
                        "in state SSL_HANDSHAKE)"));
    CHECK(!ke_permanent(&c, RD_KAFKA_RESP_ERR__TRANSPORT,
                        "ssl://127.0.0.1:39289/bootstrap: SSL handshake failed: Disconnected: "
                        "connecting to a PLAINTEXT broker listener? (after 2ms in state "
                        "SSL_HANDSHAKE)"));
    CHECK(!ke_permanent(&plain, RD_KAFKA_RESP_ERR__TRANSPORT,
                        "127.0.0.1:40431/bootstrap: Disconnected: verify that security.protocol "
                        "is correctly configured, broker might require SASL authentication "
                        "(after 1ms in state UP)"));
    CHECK(!ke_permanent(&c, RD_KAFKA_RESP_ERR__TRANSPORT,
                        "127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection "
                        "refused (after 0ms in state CONNECT)"));
    CHECK(!ke_permanent(&c, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "1/1 brokers are down"));
    CHECK(!ke_permanent(&c, RD_KAFKA_RESP_ERR__RESOLVE,
                        "nosuch.invalid:9092/bootstrap: Failed to resolve 'nosuch.invalid:9092': "
                        "Name or service not known (after 2ms in state CONNECT)"));
    CHECK(!ke_permanent(&acl, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
                        "Subscribed topic not available: nosuch: Broker: Unknown topic or "
                        "partition"));
    CHECK(!ke_permanent(&plain, RD_KAFKA_RESP_ERR__TRANSPORT,
                        "127.0.0.1:9092/1: Disconnected (after 600012ms in state UP)"));
    CHECK(!ke_permanent(&plain, RD_KAFKA_RESP_ERR__AUTHENTICATION,
                        "sasl_plaintext://h:1/bootstrap: SASL authentication error: "
                        "Disconnected while authenticating (after 3ms in state AUTH_REQ)"));
}

/* The commit errors after which the partitions may be another member's. */
static void test_stale_generation(void)
{
    CHECK(ke_stale_generation(RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION));
    CHECK(ke_stale_generation(RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS));
    CHECK(ke_stale_generation(RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID));
    CHECK(ke_stale_generation(RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID));
    /* a coordinator away (a broker restart): nobody else owns them */
    CHECK(!ke_stale_generation(RD_KAFKA_RESP_ERR_NOT_COORDINATOR));
    CHECK(!ke_stale_generation(RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE));
    CHECK(!ke_stale_generation(RD_KAFKA_RESP_ERR__TRANSPORT));
    CHECK(!ke_stale_generation(RD_KAFKA_RESP_ERR_NO_ERROR));
}

int main(void)
{
    test_stale_generation();
    test_broker();
    test_auth();
    test_tls();
    test_reach();
    test_topics();
    test_permanent();
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures != 0;
}
