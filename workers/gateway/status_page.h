/*
 * status_page.h — the status page at `/` (workers/gateway/status_page.html,
 * built into zxd by tools/embed.py): one HTML file whose own script asks
 * for an API token in the browser and reads the JSON routes with it
 * (/api/status, /api/lineage, /api/feed).  The page holds no data: the
 * gateway serves the same bytes to anyone it serves it to.
 *
 * Whether it is served is server.status_page: `on`, `off`, or `auto`
 * (served only when server.http.listen is a loopback address).
 */
#ifndef ZX_GATEWAY_STATUS_PAGE_H
#define ZX_GATEWAY_STATUS_PAGE_H

#include "conf/config.h"
#include "workers/gateway/http.h"

/* 1 when host (server.http.listen's host part, without brackets) is a
 * loopback address: "localhost", 127.0.0.0/8, ::1 or ::ffff:127.x.y.z;
 * 0 otherwise (any other name, an empty host, 0.0.0.0, ::). */
int zx_status_page_loopback(const char *host);

/* 1 when c serves the page (status_page on, or auto on a loopback listen
 * address), 0 when `/` answers 404. */
int zx_status_page_enabled(const zx_conf *c);

/* Answer a request for `/`: the page (GET, HEAD) with its security
 * headers, 405 for another method, or 404 when c does not serve it.
 * req is answered (and freed) on return. */
void zx_status_page_serve(const zx_conf *c, zx_http_req *req);

#endif
