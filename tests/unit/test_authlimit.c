/*
 * test_authlimit.c — the gateway's failed-token table (authlimit.h): the
 * limit per address and window, a new window after one ends, the memory
 * bound and what eviction keeps, and the address taken from a peer.
 */
#include "workers/gateway/authlimit.h"

#include <string.h>

#include "tests/unit/check.h"

static void limit_and_window(void)
{
    zx_authlimit *l = zx_authlimit_new(3, 1000, 16);
    CHECK(l);
    CHECK(zx_authlimit_fail(l, "10.0.0.1", 0) == 0);
    CHECK(zx_authlimit_fail(l, "10.0.0.1", 100) == 0);
    CHECK(zx_authlimit_blocked(l, "10.0.0.1", 100) == 0);
    /* the third failure blocks it, once: the caller logs that one */
    CHECK(zx_authlimit_fail(l, "10.0.0.1", 200) == 3);
    CHECK(zx_authlimit_blocked(l, "10.0.0.1", 200) == 800);
    CHECK(zx_authlimit_blocked(l, "10.0.0.1", 999) == 1);
    CHECK(zx_authlimit_fail(l, "10.0.0.1", 300) == 0);
    /* another address is not touched */
    CHECK(zx_authlimit_blocked(l, "10.0.0.2", 300) == 0);
    /* the window (from the first failure) ends: free again, a new window */
    CHECK(zx_authlimit_blocked(l, "10.0.0.1", 1000) == 0);
    CHECK(zx_authlimit_fail(l, "10.0.0.1", 1000) == 0);
    CHECK(zx_authlimit_fail(l, "10.0.0.1", 1001) == 0);
    CHECK(zx_authlimit_fail(l, "10.0.0.1", 1002) == 3);
    CHECK(zx_authlimit_blocked(l, "10.0.0.1", 1002) == 998);
    CHECK(zx_authlimit_count(l) == 1);
    zx_authlimit_free(l);
    zx_authlimit_free(NULL);
    CHECK(!zx_authlimit_new(0, 1000, 16));
    CHECK(!zx_authlimit_new(3, 0, 16));
    CHECK(!zx_authlimit_new(3, 1000, 0));
    CHECK(zx_authlimit_blocked(NULL, "x", 0) == 0);
}

static void bounded(void)
{
    zx_authlimit *l = zx_authlimit_new(2, 60000, 8);
    char a[32];
    /* one blocked address, then a flood of new ones: the table stays at 8
     * and keeps the blocked one while unblocked ones can make room */
    zx_authlimit_fail(l, "192.0.2.1", 0);
    CHECK(zx_authlimit_fail(l, "192.0.2.1", 1) == 2);
    for (int i = 0; i < 1000; i++) {
        snprintf(a, sizeof(a), "198.51.100.%d", i);
        zx_authlimit_fail(l, a, 10 + i);
        CHECK(zx_authlimit_count(l) <= 8);
    }
    CHECK(zx_authlimit_count(l) == 8);
    CHECK(zx_authlimit_blocked(l, "192.0.2.1", 2000) > 0);
    /* the newest ones are held */
    CHECK(zx_authlimit_fail(l, "198.51.100.999", 2000) == 2);
    /* all blocked: the oldest makes room, the table never grows */
    zx_authlimit *f = zx_authlimit_new(1, 60000, 4);
    for (int i = 0; i < 10; i++) {
        snprintf(a, sizeof(a), "203.0.113.%d", i);
        CHECK(zx_authlimit_fail(f, a, i) == 1);
        CHECK(zx_authlimit_count(f) <= 4);
    }
    CHECK(zx_authlimit_blocked(f, "203.0.113.9", 10) > 0);
    CHECK(zx_authlimit_blocked(f, "203.0.113.0", 10) == 0);
    /* an entry whose window is over is taken first */
    CHECK(zx_authlimit_fail(f, "203.0.113.50", 60007) == 1);
    CHECK(zx_authlimit_blocked(f, "203.0.113.9", 60007) > 0);
    CHECK(zx_authlimit_count(f) == 4);
    /* a long address is cut, consistently */
    char longa[200];
    memset(longa, 'a', sizeof(longa) - 1);
    longa[sizeof(longa) - 1] = 0;
    zx_authlimit *g = zx_authlimit_new(1, 1000, 4);
    CHECK(zx_authlimit_fail(g, longa, 0) == 1);
    CHECK(zx_authlimit_blocked(g, longa, 1) == 999);
    zx_authlimit_free(g);
    zx_authlimit_free(f);
    zx_authlimit_free(l);
}

static void addresses(void)
{
    char b[ZX_AUTHLIMIT_ADDR_MAX];
    zx_authlimit_addr("127.0.0.1:53412", b, sizeof(b));
    CHECK(!strcmp(b, "127.0.0.1"));
    zx_authlimit_addr("[::1]:53412", b, sizeof(b));
    CHECK(!strcmp(b, "[::1]"));
    zx_authlimit_addr("[2001:db8::7]:1", b, sizeof(b));
    CHECK(!strcmp(b, "[2001:db8::7]"));
    zx_authlimit_addr("::1", b, sizeof(b));
    CHECK(!strcmp(b, "::1"));
    zx_authlimit_addr("unix", b, sizeof(b));
    CHECK(!strcmp(b, "unix"));
    zx_authlimit_addr(NULL, b, sizeof(b));
    CHECK(!strcmp(b, ""));
}

int main(void)
{
    limit_and_window();
    bounded();
    addresses();
    return failures != 0;
}
