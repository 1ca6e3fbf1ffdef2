/*
 * test_redis_keytpl.c — the Redis destination's pure parts: key templates
 * (parse, bind, format, escaping: workers/destinations/redis/
 * redis_keytpl.h), addresses (redis_addr.h) and the bounded reply reader
 * over hiredis (redis_reply.h); and that a connection to a server that
 * never answers gives up (redis_conn.h: a listening socket that accepts
 * nothing, a short timeout; no duration is measured).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "workers/destinations/redis/redis_addr.h"
#include "workers/destinations/redis/redis_conn.h"
#include "workers/destinations/redis/redis_keytpl.h"
#include "workers/destinations/redis/redis_reply.h"

#include "tests/unit/check.h"

/* values of a row, by column: NULL pointer = a NULL value */
static const char *row[4];

static int text_of(void *ctx, size_t col, const char **s, size_t *n)
{
    (void)ctx;
    if (!row[col])
        return 0;
    *s = row[col];
    *n = strlen(row[col]);
    return 1;
}

static const char *const cols[] = {"id", "name", "tenant", "a}b"};

/* Format tpl over row; "" refused (*why set), the key otherwise. */
static const char *fmt(const char *tpl, char *out, size_t outlen)
{
    zx_redis_tpl t;
    char err[300];
    zx_buf b = {0};
    out[0] = '\0';
    if (zx_redis_tpl_parse(tpl, &t, err, sizeof(err)) < 0 ||
        zx_redis_tpl_bind(&t, cols, 3, err, sizeof(err)) < 0) {
        snprintf(out, outlen, "ERR %s", err);
        zx_redis_tpl_free(&t);
        return out;
    }
    const char *why = NULL;
    size_t bad = 99;
    int r = zx_redis_tpl_format(&t, text_of, NULL, &b, &why, &bad);
    if (r == 1)
        snprintf(out, outlen, "%s", b.p);
    else if (r == 0)
        snprintf(out, outlen, "REFUSED %zu %s", bad, why);
    zx_buf_free(&b);
    zx_redis_tpl_free(&t);
    return out;
}

static void test_templates(void)
{
    char o[600];
    row[0] = "42";
    row[1] = "ab-c.d_e@f";
    row[2] = NULL;
    CHECK(!strcmp(fmt("cache:order:{id}", o, sizeof(o)), "cache:order:42"));
    CHECK(!strcmp(fmt("{id}", o, sizeof(o)), "42"));
    CHECK(!strcmp(fmt("{name}:{id}:x", o, sizeof(o)), "ab-c.d_e@f:42:x"));
    CHECK(!strcmp(fmt("{{lit}}:{id}", o, sizeof(o)), "{lit}:42"));
    /* escaping: separators, pattern characters, space, control, non-ASCII */
    row[1] = "1:x *?[]\\{}%\n\xc3\xbc";
    CHECK(!strcmp(fmt("u:{name}", o, sizeof(o)),
                  "u:1%3Ax%20%2A%3F%5B%5D%5C%7B%7D%25%0A%C3%BC"));
    /* NULL refuses the row, naming the placeholder's column */
    CHECK(!strcmp(fmt("t:{tenant}:{id}", o, sizeof(o)), "REFUSED 2 is NULL"));
    /* too long */
    static char big[5000];
    memset(big, 'a', sizeof(big) - 1);
    row[1] = big;
    CHECK(!strncmp(fmt("k:{name}", o, sizeof(o)), "REFUSED", 7));
    char lit[ZX_REDIS_KEY_MAX + 20];
    memset(lit, 'b', ZX_REDIS_KEY_MAX);
    strcpy(lit + ZX_REDIS_KEY_MAX, "{id}");
    CHECK(!strncmp(fmt(lit, o, sizeof(o)), "REFUSED", 7));
    /* syntax */
    CHECK(!strncmp(fmt("cache:order", o, sizeof(o)), "ERR key template 'cache:order' has no "
                   "placeholder", 40));
    CHECK(strstr(fmt("x{id", o, sizeof(o)), "is not closed") != NULL);
    CHECK(strstr(fmt("x}", o, sizeof(o)), "closes nothing") != NULL);
    CHECK(strstr(fmt("x{}", o, sizeof(o)), "must name a result column") != NULL);
    CHECK(strstr(fmt("x{a{b}", o, sizeof(o)), "must name a result column") != NULL);
    CHECK(strstr(fmt("x{nope}", o, sizeof(o)), "{nope} is not a column of the result "
                 "(columns: id, name, tenant)") != NULL);
}

static void test_escape(void)
{
    zx_buf b = {0};
    CHECK(zx_redis_key_escape(&b, "", 0) == 0 && b.len == 0);
    CHECK(zx_redis_key_escape(&b, "a\0b", 3) == 0 && !strcmp(b.p, "a%00b"));
    zx_buf_reset(&b);
    /* every byte outside 0x21..0x7e is escaped, and only the listed inside */
    for (int c = 0; c < 256; c++) {
        char ch = (char)c;
        zx_buf_reset(&b);
        CHECK(zx_redis_key_escape(&b, &ch, 1) == 0);
        int esc = c < 0x21 || c > 0x7e || strchr("%:{}*?[]\\", c);
        CHECK(b.len == (esc ? 3u : 1u));
    }
    zx_buf_free(&b);
}

static void test_addresses(void)
{
    zx_redis_addr a;
    char e[300];
    CHECK(zx_redis_addr_parse("127.0.0.1:6380", &a, e, sizeof(e)) == 0 &&
          !strcmp(a.host, "127.0.0.1") && a.port == 6380 && !a.tls && a.db == -1);
    CHECK(zx_redis_addr_parse("cache.internal", &a, e, sizeof(e)) == 0 && a.port == 6379);
    CHECK(zx_redis_addr_parse("[::1]:7000", &a, e, sizeof(e)) == 0 && !strcmp(a.host, "::1") &&
          a.port == 7000);
    CHECK(zx_redis_addr_parse("rediss://h.example:6390/4", &a, e, sizeof(e)) == 0 && a.tls &&
          a.port == 6390 && a.db == 4 && !strcmp(a.host, "h.example"));
    CHECK(zx_redis_addr_parse("redis://h/", &a, e, sizeof(e)) == 0 && a.db == -1 && !a.tls);
    CHECK(zx_redis_addr_parse("redis://user:pw@h:1", &a, e, sizeof(e)) == -1 &&
          strstr(e, "password") && !strstr(e, "pw@"));
    CHECK(zx_redis_addr_parse("h:0", &a, e, sizeof(e)) == -1);
    CHECK(zx_redis_addr_parse("h:65536", &a, e, sizeof(e)) == -1);
    CHECK(zx_redis_addr_parse("::1:6379", &a, e, sizeof(e)) == -1 && strstr(e, "brackets"));
    CHECK(zx_redis_addr_parse("h:1/2", &a, e, sizeof(e)) == -1);
    CHECK(zx_redis_addr_parse("http://h:1", &a, e, sizeof(e)) == -1);
    CHECK(zx_redis_addr_parse("redis://h:1/x", &a, e, sizeof(e)) == -1);
    CHECK(zx_redis_addr_parse(":6379", &a, e, sizeof(e)) == -1);
}

/* Feed s to a new reader; the replies into out (at most n); count or -1. */
static int read_all(const char *s, size_t len, size_t max_pending, zx_redis_reply *out,
                    int n, char *err, size_t errlen)
{
    zx_redis_rd *rd = zx_redis_rd_new(max_pending);
    int got = 0, rc = 0;
    size_t off = 0;
    while (rc >= 0) {
        int r = zx_redis_rd_next(rd, &out[got < n ? got : n - 1], err, errlen);
        if (r < 0) {
            rc = -1;
            break;
        }
        if (r == 1) {
            got++;
            continue;
        }
        if (off == len)
            break;
        size_t room = zx_redis_rd_room(rd), k = len - off < 7 ? len - off : 7;
        if (k > room)
            k = room;
        if (k == 0) {
            rc = -1;
            snprintf(err, errlen, "no room");
            break;
        }
        if (zx_redis_rd_feed(rd, s + off, k, err, errlen) < 0) {
            rc = -1;
            break;
        }
        off += k;
    }
    zx_redis_rd_free(rd);
    return rc < 0 ? -1 : got;
}

static void test_replies(void)
{
    zx_redis_reply r[8];
    char e[300];
    const char ok[] = "+OK\r\n:12\r\n-WRONGTYPE Operation against a key\r\n$3\r\na\nb\r\n"
                      "$-1\r\n*2\r\n:1\r\n$1\r\nx\r\n";
    CHECK(read_all(ok, sizeof(ok) - 1, 1024, r, 8, e, sizeof(e)) == 6);
    CHECK(r[0].type == ZX_REDIS_R_STATUS && !strcmp(r[0].text, "OK"));
    CHECK(r[1].type == ZX_REDIS_R_INTEGER && r[1].integer == 12);
    CHECK(r[2].type == ZX_REDIS_R_ERROR && !strncmp(r[2].text, "WRONGTYPE", 9));
    CHECK(r[3].type == ZX_REDIS_R_STRING && !strcmp(r[3].text, "a?b"));
    CHECK(r[4].type == ZX_REDIS_R_NIL);
    CHECK(r[5].type == ZX_REDIS_R_ARRAY && r[5].elements == 2);
    /* a bulk string over the bound: an error, not gigabytes */
    static char big[3000];
    memcpy(big, "$999999999\r\n", 12);
    memset(big + 12, 'q', 2000);
    CHECK(read_all(big, 2012, 1024, r, 8, e, sizeof(e)) == -1 && strstr(e, "larger than"));
    memcpy(big, "$2000\r\n", 7);
    memset(big + 7, 'z', 2000);
    memcpy(big + 2007, "\r\n", 2);
    CHECK(read_all(big, 2009, 1024, r, 8, e, sizeof(e)) == -1 && strstr(e, "larger than"));
    CHECK(read_all(big, 2009, 4096, r, 8, e, sizeof(e)) == 1 && strlen(r[0].text) == 255);
    /* an array over the bound */
    CHECK(read_all("*1000000000\r\n", 13, 1024, r, 8, e, sizeof(e)) == -1 &&
          strstr(e, "more than 64 elements"));
    CHECK(read_all("!bad\r\n", 6, 1024, r, 8, e, sizeof(e)) == -1 && strstr(e, "parse"));
}

static void test_silent_server(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 8) == 0 &&
          getsockname(fd, (struct sockaddr *)&sa, &sl) == 0);
    char addr[64], err[400];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    zx_conf_connection c = {.name = "cache", .kind = "redis", .address = addr,
                            .password = "Zx9SecretMark7q"};
    zx_redis_conn *k = zx_redis_open(&c, 100, err, sizeof(err));
    CHECK(k == NULL && strstr(err, "nothing sent or received") && !strstr(err, "Zx9Secret"));
    snprintf(addr, sizeof(addr), "rediss://127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    k = zx_redis_open(&c, 100, err, sizeof(err));
    CHECK(k == NULL && strstr(err, "TLS handshake") && strstr(err, "timed out"));
    close(fd);
    /* nobody listens there now */
    k = zx_redis_open(&c, 100, err, sizeof(err));
    CHECK(k == NULL && strstr(err, "connect to 127.0.0.1:"));
}

int main(void)
{
    test_templates();
    test_escape();
    test_addresses();
    test_replies();
    test_silent_server();
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("test_redis_keytpl: all checks passed\n");
    return failures != 0;
}
