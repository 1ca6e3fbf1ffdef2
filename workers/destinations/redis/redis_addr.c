/*
 * redis_addr.c — a Redis address as written (redis_addr.h).  Pure.
 */
#include "workers/destinations/redis/redis_addr.h"

#include <stdio.h>
#include <string.h>

static int parse_port(const char *s, size_t n, uint16_t *port)
{
    unsigned v = 0;
    if (n == 0 || n > 5)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

int zx_redis_addr_parse(const char *s, zx_redis_addr *a, char *err, size_t errlen)
{
    const char *p = s, *end;
    memset(a, 0, sizeof(*a));
    a->port = ZX_REDIS_DEFAULT_PORT;
    a->db = -1;
    int url = 0;
    if (!strncmp(p, "redis://", 8)) {
        p += 8;
        url = 1;
    } else if (!strncmp(p, "rediss://", 9)) {
        p += 9;
        url = 1;
        a->tls = 1;
    } else if (strstr(p, "://")) {
        snprintf(err, errlen, "address '%.100s': host:port, or a redis:// or rediss:// URL",
                 s);
        return -1;
    }
    end = p + strcspn(p, "/?#");
    if (memchr(p, '@', (size_t)(end - p))) {
        snprintf(err, errlen, "address: write no user or password in it (use `username` "
                 "and `password`)");
        return -1;
    }
    const char *hs = p, *he, *colon = NULL;
    if (*p == '[') {
        he = memchr(p, ']', (size_t)(end - p));
        if (!he) {
            snprintf(err, errlen, "address '%.100s': '[' without ']'", s);
            return -1;
        }
        hs = p + 1;
        if (he + 1 < end) {
            if (he[1] != ':') {
                snprintf(err, errlen, "address '%.100s': expected [ipv6]:port", s);
                return -1;
            }
            colon = he + 1;
        }
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
        he = colon ? colon : end;
        if (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1))) {
            snprintf(err, errlen, "address '%.100s': write an IPv6 address in brackets: "
                     "[::1]:6379", s);
            return -1;
        }
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0 || hl >= sizeof(a->host)) {
        snprintf(err, errlen, "address '%.100s': the host is missing or too long", s);
        return -1;
    }
    for (const char *q = hs; q < he; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
              (*q >= '0' && *q <= '9') || strchr(".-_:%", *q))) {
            snprintf(err, errlen, "address '%.100s': the host may only hold letters, digits "
                     "and . - _ : %%", s);
            return -1;
        }
    memcpy(a->host, hs, hl);
    a->host[hl] = '\0';
    if (colon && parse_port(colon + 1, (size_t)(end - colon - 1), &a->port) < 0) {
        snprintf(err, errlen, "address '%.100s': the port must be 1 to 65535", s);
        return -1;
    }
    if (*end && !url) {
        snprintf(err, errlen, "address '%.100s': host:port (a database number goes in `db`, "
                 "or in a redis:// URL)", s);
        return -1;
    }
    if (*end == '/') {
        const char *d = end + 1;
        int64_t v = 0;
        size_t n = strlen(d);
        if (n == 0) {
            /* "redis://h:1/": no database */
        } else {
            if (n > 9 || strspn(d, "0123456789") != n) {
                snprintf(err, errlen, "address '%.100s': the path is the database number "
                         "(redis://host:port/0)", s);
                return -1;
            }
            for (size_t i = 0; i < n; i++)
                v = v * 10 + (d[i] - '0');
            a->db = v;
        }
    } else if (*end) {
        snprintf(err, errlen, "address '%.100s': no query or fragment is taken", s);
        return -1;
    }
    return 0;
}

