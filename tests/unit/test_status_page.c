/*
 * test_status_page.c — when the gateway serves the status page
 * (status_page.h): which listen hosts are loopback, and what
 * server.status_page auto, on and off make of them.
 */
#include "workers/gateway/status_page.h"

#include <string.h>

#include "tests/unit/check.h"

extern const unsigned char zx_status_page_html[];
extern const size_t zx_status_page_html_len;

static void loopback_hosts(void)
{
    const char *yes[] = {"127.0.0.1", "127.1.2.3", "127.255.255.254", "localhost",
                         "LocalHost", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"};
    const char *no[] = {"", "0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "126.255.255.255",
                        "192.168.1.10", "::2", "::ffff:10.0.0.1", "example.com",
                        "localhost.example.com", "127.0.0.1.example", "fe80::1", "[::1]"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        CHECK(zx_status_page_loopback(yes[i]) == 1);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        CHECK(zx_status_page_loopback(no[i]) == 0);
    CHECK(zx_status_page_loopback(NULL) == 0);
}

static void modes(void)
{
    zx_conf c;
    memset(&c, 0, sizeof(c));
    char lo[] = "127.0.0.1", any[] = "0.0.0.0";
    c.http.host = lo;
    c.status_page = ZX_STATUS_PAGE_AUTO;
    CHECK(zx_status_page_enabled(&c) == 1);
    c.http.host = any;
    CHECK(zx_status_page_enabled(&c) == 0);
    c.status_page = ZX_STATUS_PAGE_ON;
    CHECK(zx_status_page_enabled(&c) == 1);
    c.status_page = ZX_STATUS_PAGE_OFF;
    CHECK(zx_status_page_enabled(&c) == 0);
    c.http.host = lo;
    CHECK(zx_status_page_enabled(&c) == 0);
}

/* the page is built in, whole, NUL after its last byte */
static void embedded(void)
{
    CHECK(zx_status_page_html_len > 1000);
    CHECK(!memcmp(zx_status_page_html, "<!doctype html>", 15));
    CHECK(zx_status_page_html[zx_status_page_html_len] == 0);
    CHECK(strstr((const char *)zx_status_page_html, "</html>") != NULL);
}

int main(void)
{
    loopback_hosts();
    modes();
    embedded();
    if (!failures)
        printf("ok\n");
    return failures != 0;
}
