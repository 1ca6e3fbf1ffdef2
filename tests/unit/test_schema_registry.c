/*
 * test_schema_registry.c — unit tests of common/schema_registry.c:
 * zx_wire_parse on each framing and each refusal, and the registry client
 * against a small HTTP server in a thread of this test (one request per
 * connection), which answers by path: a schema, Confluent's 404 40403, a
 * bare 404, 500, a Protobuf schema, a schema that does not parse, a slow
 * answer, an answer over the size limit, not JSON; with and without basic
 * authentication, under an Apicurio-like /apis/ccompat/v7 prefix.  Checks
 * the 0 / 1 / -1 answers, the messages (never the password), the cache
 * (no second request) and the remembered refusals.
 *
 * A real registry would be tests/services/apicurio, which cannot run on
 * zx's machines yet (see tests/services/README.md).  It must never: use a
 * port other than the one it bound on 127.0.0.1, or wait without a bound.
 */
#include "common/schema_registry.h"
#include "tests/unit/check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- wire ---------------------------------------------------------------- */

static void test_wire(void)
{
    int64_t id = 0;
    size_t off = 0;
    char err[200];
    const uint8_t c1[] = {0, 0, 0, 1, 2, 0x42};
    CHECK(zx_wire_parse(c1, sizeof(c1), ZX_WIRE_CONFLUENT, NULL, 0, &id, &off, err,
                        sizeof(err)) == 0);
    CHECK(id == 258 && off == 5);
    const uint8_t c2[] = {0, 0x7f, 0xff, 0xff, 0xff};
    CHECK(zx_wire_parse(c2, sizeof(c2), ZX_WIRE_CONFLUENT, NULL, 0, &id, &off, err,
                        sizeof(err)) == 0);
    CHECK(id == 2147483647 && off == 5);
    const uint8_t c3[] = {0, 0x80, 0, 0, 0};
    CHECK(zx_wire_parse(c3, sizeof(c3), ZX_WIRE_CONFLUENT, NULL, 0, &id, &off, err,
                        sizeof(err)) == -1);
    CHECK(!strcmp(err, "wire: schema id 2147483648 is not a valid id"));
    const uint8_t c4[] = {0, 0, 0, 0, 0, 1};
    CHECK(zx_wire_parse(c4, sizeof(c4), ZX_WIRE_CONFLUENT, NULL, 0, &id, &off, err,
                        sizeof(err)) == -1);
    CHECK(!strcmp(err, "wire: schema id 0 is not a valid id"));
    CHECK(zx_wire_parse("{\"a\":1}", 7, ZX_WIRE_CONFLUENT, NULL, 0, &id, &off, err,
                        sizeof(err)) == -1);
    CHECK(!strcmp(err, "wire: byte 0 is 0x7b, not 0 (not Confluent's wire format)"));
    CHECK(zx_wire_parse("\0\0\0", 3, ZX_WIRE_CONFLUENT, NULL, 0, &id, &off, err,
                        sizeof(err)) == -1);
    CHECK(!strcmp(err, "wire: 3 bytes, fewer than the 5 of Confluent's prefix"));
    CHECK(zx_wire_parse("", 0, ZX_WIRE_CONFLUENT, NULL, 0, &id, &off, err, sizeof(err)) == -1);
    CHECK(strstr(err, "tombstone") != NULL);

    const uint8_t a1[] = {0, 0, 0, 0, 0, 0, 0, 1, 3, 0x42};
    CHECK(zx_wire_parse(a1, sizeof(a1), ZX_WIRE_APICURIO_ID8, NULL, 0, &id, &off, err,
                        sizeof(err)) == 0);
    CHECK(id == 259 && off == 9);
    CHECK(zx_wire_parse(a1, 6, ZX_WIRE_APICURIO_ID8, NULL, 0, &id, &off, err, sizeof(err)) == -1);
    CHECK(!strcmp(err, "wire: 6 bytes, fewer than the 9 of Apicurio's 8-byte id prefix"));
    const uint8_t a2[] = {0, 0x80, 0, 0, 0, 0, 0, 0, 1};
    CHECK(zx_wire_parse(a2, sizeof(a2), ZX_WIRE_APICURIO_ID8, NULL, 0, &id, &off, err,
                        sizeof(err)) == -1);

    const uint8_t h[] = {0, 0, 0, 0, 0, 0, 0x10, 0x01};
    CHECK(zx_wire_parse("\x02\x04", 2, ZX_WIRE_HEADERS, h, sizeof(h), &id, &off, err,
                        sizeof(err)) == 0);
    CHECK(id == 4097 && off == 0);
    CHECK(zx_wire_parse("\x02", 1, ZX_WIRE_HEADERS, NULL, 0, &id, &off, err, sizeof(err)) == -1);
    CHECK(!strcmp(err, "wire: no schema id header (apicurio.value.globalId)"));
    CHECK(zx_wire_parse("\x02", 1, ZX_WIRE_HEADERS, h, 4, &id, &off, err, sizeof(err)) == -1);
    CHECK(!strcmp(err, "wire: the schema id header has 4 bytes, not 8"));
    /* NULL err is allowed */
    CHECK(zx_wire_parse("x", 1, ZX_WIRE_CONFLUENT, NULL, 0, &id, &off, NULL, 0) == -1);
}

/* ---- a small HTTP server ------------------------------------------------- */

#define PREFIX "/apis/ccompat/v7"
#define GOOD_SCHEMA                                                                          \
    "{\\\"type\\\":\\\"record\\\",\\\"name\\\":\\\"V\\\",\\\"namespace\\\":\\\"t\\\","         \
    "\\\"fields\\\":[{\\\"name\\\":\\\"id\\\",\\\"type\\\":\\\"long\\\"}],"                   \
    "\\\"connect.name\\\":\\\"t.V\\\"}"

static int srv_fd;
static int srv_port;
static volatile int srv_auth;    /* require Basic zx:s3cr3t-Q */
static volatile int srv_stop;
static int hits[16];             /* requests per schema id (under PREFIX) */
static int srv_busy;             /* connections being served */
static int other_hits;

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return;
        p += k;
        n -= (size_t)k;
    }
}

static void reply(int fd, int status, const char *body, size_t n)
{
    char head[256];
    int k = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, n);
    send_all(fd, head, (size_t)k);
    send_all(fd, body, n);
}

static void serve(int fd)
{
    char req[8192];
    size_t n = 0;
    while (n < sizeof(req) - 1) {
        ssize_t k = read(fd, req + n, sizeof(req) - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
        req[n] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    req[n] = '\0';
    if (srv_auth && !strstr(req, "\r\nAuthorization: Basic eng6czNjcjN0LVE=\r\n")) {
        reply(fd, 401, "{\"error_code\":401,\"message\":\"Unauthorized\"}", 44);
        return;
    }
    if (!strncmp(req, "GET " PREFIX "/subjects ", 4 + strlen(PREFIX) + 10)) {
        static const char subj[] = "[\"a-value\",\"b-key\"]";
        reply(fd, 200, subj, sizeof(subj) - 1);
        return;
    }
    int id = -1;
    if (!strncmp(req, "GET " PREFIX "/schemas/ids/", 4 + strlen(PREFIX) + 13))
        id = atoi(req + 4 + strlen(PREFIX) + 13);
    if (id < 0 || id >= 16) {
        __atomic_add_fetch(&other_hits, 1, __ATOMIC_SEQ_CST);
        reply(fd, 404, "<html>no</html>", 15);
        return;
    }
    __atomic_add_fetch(&hits[id], 1, __ATOMIC_SEQ_CST);
    static char big[5 << 20];
    const char *b;
    switch (id) {
    case 1:
        b = "{\"schema\":\"" GOOD_SCHEMA "\"}";
        reply(fd, 200, b, strlen(b));
        break;
    case 2:
        b = "{\"error_code\":40403,\"message\":\"Schema 2 not found\"}";
        reply(fd, 404, b, strlen(b));
        break;
    case 3:
        b = "{\"error_code\":50001,\"message\":\"Error in the backend data store\"}";
        reply(fd, 500, b, strlen(b));
        break;
    case 4:
        b = "{\"schema\":\"syntax = \\\"proto3\\\";\",\"schemaType\":\"PROTOBUF\"}";
        reply(fd, 200, b, strlen(b));
        break;
    case 5:
        b = "{\"schema\":\"{\\\"type\\\":\\\"record\\\"}\",\"schemaType\":\"AVRO\"}";
        reply(fd, 200, b, strlen(b));
        break;
    case 6:
        usleep(1500 * 1000);
        b = "{\"schema\":\"\\\"long\\\"\"}";
        reply(fd, 200, b, strlen(b));
        break;
    case 7:
        memset(big, ' ', sizeof(big));
        big[0] = '{';
        big[sizeof(big) - 1] = '}';
        reply(fd, 200, big, sizeof(big));
        break;
    case 9:
        reply(fd, 200, "<html>hi</html>", 15);
        break;
    default:
        b = "{\"schema\":\"\\\"string\\\"\"}";
        reply(fd, 200, b, strlen(b));
        break;
    }
}

static void *one_conn(void *arg)
{
    int c = (int)(intptr_t)arg;
    serve(c);
    close(c);
    __atomic_sub_fetch(&srv_busy, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Accepts connections, each served by a thread of its own (the slow
 * answer must not hold up the others). */
static void *server(void *arg)
{
    (void)arg;
    while (!srv_stop) {
        int c = accept(srv_fd, NULL, NULL);
        if (c < 0)
            break;
        pthread_t t;
        __atomic_add_fetch(&srv_busy, 1, __ATOMIC_SEQ_CST);
        if (pthread_create(&t, NULL, one_conn, (void *)(intptr_t)c) == 0) {
            pthread_detach(t);
        } else {
            close(c);
            __atomic_sub_fetch(&srv_busy, 1, __ATOMIC_SEQ_CST);
        }
    }
    return NULL;
}

static int start_server(pthread_t *t)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    srv_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (srv_fd < 0 || bind(srv_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(srv_fd, 16) < 0 || getsockname(srv_fd, (struct sockaddr *)&a, &al) < 0)
        return -1;
    srv_port = ntohs(a.sin_port);
    return pthread_create(t, NULL, server, NULL);
}

/* A port where nothing listens (bound, then closed). */
static int dead_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    bind(fd, (struct sockaddr *)&a, sizeof(a));
    getsockname(fd, (struct sockaddr *)&a, &al);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_client(void)
{
    pthread_t t;
    CHECK(start_server(&t) == 0);
    char url[128], err[600];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d" PREFIX "/", srv_port);
    const zx_avro_schema *s = NULL;

    CHECK(zx_registry_new("ftp://x", NULL, NULL, 1000) == NULL);
    CHECK(zx_registry_new(url, NULL, NULL, 0) == NULL);
    zx_registry_free(NULL);

    zx_registry *r = zx_registry_new(url, NULL, NULL, 1000);
    CHECK(r != NULL);
    /* a schema; then from the cache */
    CHECK(zx_registry_get(r, 1, &s, err, sizeof(err)) == 0 && s != NULL);
    if (!s)
        printf("  id 1: %s\n", err);
    const zx_avro_schema *s2 = NULL;
    CHECK(zx_registry_get(r, 1, &s2, err, sizeof(err)) == 0 && s2 == s);
    CHECK(hits[1] == 1 && zx_registry_requests(r) == 1);
    json_t *j = s ? zx_avro_decode(s, "\x54", 1, err, sizeof(err)) : NULL;
    CHECK(j && json_integer_value(json_object_get(json_object_get(j, "payload"), "id")) == 42);
    CHECK(j && !strcmp(json_string_value(json_object_get(json_object_get(j, "schema"), "name")),
                       "t.V"));
    json_decref(j);

    /* unknown id: -1, remembered */
    char want[300];
    snprintf(want, sizeof(want), "registry http://127.0.0.1:%d" PREFIX ": schema id 2: not "
             "found (404, error 40403: Schema 2 not found)", srv_port);
    CHECK(zx_registry_get(r, 2, &s, err, sizeof(err)) == -1 && s == NULL);
    CHECK(!strcmp(err, want));
    if (strcmp(err, want))
        printf("  got  %s\n  want %s\n", err, want);
    CHECK(zx_registry_get(r, 2, &s, err, sizeof(err)) == -1 && !strcmp(err, want));
    CHECK(hits[2] == 1);

    /* 500: try later, not remembered */
    CHECK(zx_registry_get(r, 3, &s, err, sizeof(err)) == 1);
    CHECK(strstr(err, "HTTP 500: Error in the backend data store (will retry)") != NULL);
    CHECK(zx_registry_get(r, 3, &s, err, sizeof(err)) == 1 && hits[3] == 2);

    CHECK(zx_registry_get(r, 4, &s, err, sizeof(err)) == -1);
    CHECK(strstr(err, "schema id 4: a PROTOBUF schema, not Avro") != NULL);
    CHECK(zx_registry_get(r, 5, &s, err, sizeof(err)) == -1);
    CHECK(strstr(err, "schema id 5: avro schema: a record has no \"name\"") != NULL);
    if (!strstr(err, "schema id 5: avro schema"))
        printf("  id 5: %s\n", err);
    CHECK(zx_registry_get(r, 7, &s, err, sizeof(err)) == -1);
    CHECK(strstr(err, "larger than 4194304 bytes") != NULL);
    CHECK(zx_registry_get(r, 9, &s, err, sizeof(err)) == 1);
    CHECK(strstr(err, "not {\"schema\": \"...\"}") != NULL);
    CHECK(zx_registry_get(r, 0, &s, err, sizeof(err)) == -1);
    zx_registry_free(r);

    /* a timeout */
    r = zx_registry_new(url, NULL, NULL, 300);
    CHECK(zx_registry_get(r, 6, &s, err, sizeof(err)) == 1);
    CHECK(strstr(err, "(will retry)") && strstr(err, "timed out"));
    if (!strstr(err, "timed out"))
        printf("  timeout: %s\n", err);
    zx_registry_free(r);

    /* a wrong prefix: a bare 404 is not the id's fault */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv_port);
    r = zx_registry_new(url, NULL, NULL, 1000);
    CHECK(zx_registry_get(r, 1, &s, err, sizeof(err)) == 1);
    CHECK(strstr(err, "HTTP 404 without Confluent's error 40403") != NULL);
    if (!strstr(err, "HTTP 404 without"))
        printf("  bare 404: %s\n", err);
    zx_registry_free(r);

    /* basic authentication; the password never shows */
    srv_auth = 1;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d" PREFIX, srv_port);
    r = zx_registry_new(url, "zx", "wrong-Q", 1000);
    CHECK(zx_registry_get(r, 8, &s, err, sizeof(err)) == 1);
    CHECK(strstr(err, "HTTP 401: the registry refuses the credentials") && !strstr(err, "wrong-Q"));
    zx_registry_free(r);
    r = zx_registry_new(url, "zx", "s3cr3t-Q", 1000);
    CHECK(zx_registry_get(r, 8, &s, err, sizeof(err)) == 0 && s != NULL);
    zx_registry_free(r);
    /* credentials in the URL are used, and not shown */
    snprintf(url, sizeof(url), "http://zx:s3cr3t-Q@127.0.0.1:%d" PREFIX, srv_port);
    r = zx_registry_new(url, NULL, NULL, 1000);
    CHECK(zx_registry_get(r, 8, &s, err, sizeof(err)) == 0);
    CHECK(zx_registry_get(r, 2, &s, err, sizeof(err)) == -1 && !strstr(err, "s3cr3t"));
    zx_registry_free(r);
    srv_auth = 0;

    /* nothing listens: try later */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", dead_port());
    r = zx_registry_new(url, NULL, NULL, 1000);
    CHECK(zx_registry_get(r, 1, &s, err, sizeof(err)) == 1);
    CHECK(strstr(err, "(will retry)") != NULL);
    /* zxctl test: the same, said as a test's failure */
    CHECK(zx_registry_check(r, err, sizeof(err)) == -1);
    CHECK(strstr(err, "schema registry http://127.0.0.1:") && !strstr(err, "will retry"));
    zx_registry_free(r);

    /* zxctl test: the subjects, or why not */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d" PREFIX, srv_port);
    r = zx_registry_new(url, NULL, NULL, 1000);
    CHECK(zx_registry_check(r, err, sizeof(err)) == 0 && strstr(err, ": 2 subjects"));
    if (!strstr(err, ": 2 subjects"))
        printf("  check: %s\n", err);
    zx_registry_free(r);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv_port);   /* no prefix */
    r = zx_registry_new(url, NULL, NULL, 1000);
    CHECK(zx_registry_check(r, err, sizeof(err)) == -1 &&
          strstr(err, "HTTP 404 for GET /subjects: is the URL"));
    zx_registry_free(r);
    srv_auth = 1;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d" PREFIX, srv_port);
    r = zx_registry_new(url, "zx", "wrong-Q", 1000);
    CHECK(zx_registry_check(r, err, sizeof(err)) == -1 &&
          strstr(err, "HTTP 401: the registry refuses the credentials") && !strstr(err, "wrong-Q"));
    zx_registry_free(r);
    srv_auth = 0;

    srv_stop = 1;
    shutdown(srv_fd, SHUT_RDWR);
    close(srv_fd);
    pthread_join(t, NULL);
    for (int i = 0; i < 300 && __atomic_load_n(&srv_busy, __ATOMIC_SEQ_CST); i++)
        usleep(10 * 1000);
}

int main(void)
{
    test_wire();
    test_client();
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures != 0;
}
