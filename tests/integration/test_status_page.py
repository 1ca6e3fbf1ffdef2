"""
The status page at `/` and the routes it reads, end to end: a zxd with a
push stream `orders` and a reverse sync `export` (orders → a SQLite
table), so that the lineage has edges.

- GET /api/status answers the JSON of `zxctl status --json` to any API
  token (401 without one, 405 for POST);
- a token of role `status` reads /api/status, /api/lineage and /metrics,
  and gets 403, with a message naming its role, on the run routes;
- `/` serves one HTML page with its security headers and no external
  asset; server.status_page: auto serves it on a loopback listen address
  only (404 on 0.0.0.0), `on` serves it there, `off` never;
- in a real browser (Debian's chromium driven by Playwright): the page
  opened with `#key=TOKEN` clears the fragment, shows the pipelines,
  follows rows pushed (rows and rate cells), draws the lineage as SVG
  (the stream's and the table's nodes and the edges between them), shows
  the feed (or says it is not available), and a wrong key shows 401; a
  screenshot is kept in tests/artifacts/status_page.png.
"""
import json
import os
import re
import shutil

import pytest

from conftest import REPO, Zxd, http_request, uid, wait_for, zxd_factory

OPS_ENV = "ZX_PAGE_OPS_TOKEN"
VIEW_ENV = "ZX_PAGE_VIEW_TOKEN"
ARTIFACTS = os.path.join(REPO, "tests", "artifacts")


class PageZxd(Zxd):
    """A Zxd with a reverse sync, an orchestrator token and a status token;
    listen_host and status_page change what `/` does."""

    def __init__(self, root, pipelines, listen_host="127.0.0.1", status_page=None, **kw):
        self.ops_token = "ops-" + uid()
        self.view_token = "view-" + uid()
        self.listen_host = listen_host
        self.status_page = status_page
        super().__init__(root, pipelines, **kw)
        self.env[OPS_ENV] = self.ops_token
        self.env[VIEW_ENV] = self.view_token

    def config_text(self):
        text = super().config_text()
        if self.status_page:
            text = text.replace("server:\n", f"server:\n  status_page: {self.status_page}\n", 1)
        text = text.replace(f'listen: "127.0.0.1:{self.port}"',
                            f'listen: "{self.listen_host}:{self.port}"')
        dest = os.path.join(self.root, "dest.db")
        return text + "\n".join([
            "  export:", "    direction: out", "    author: alice",
            "    query: SELECT id, n FROM orders",
            "    destination: {connection: lite, table: orders_copy}", "    mode: replace",
            "authors:", "  alice: {tables: [orders]}",
            "connections:", "  lite:", "    kind: sqlite", f"    path: {dest}",
            "api_tokens:",
            "  ops:", "    token: ${env:%s}" % OPS_ENV, "    role: orchestrator",
            "  viewer:", "    token: ${env:%s}" % VIEW_ENV, "    role: status",
        ]) + "\n"

    def api(self, method, path, token, body=None):
        h = {"Authorization": f"Bearer {token}"} if token else {}
        return http_request(self.port, method, path, body, h)


@pytest.fixture
def make_pzxd(workspace):
    yield from zxd_factory(workspace, PageZxd)


def push_rows(z, n, start=0):
    z.push_ok("orders", [{"id": uid(), "n": start + i} for i in range(n)], wait_commit=True)


def test_status_route_and_status_role(make_pzxd):
    z = make_pzxd({"orders": {}})
    push_rows(z, 3)
    for tok in (z.ops_token, z.view_token):
        r = z.api("GET", "/api/status", tok)
        assert r.status == 200, r
        assert r.headers["content-type"].startswith("application/json")
        st = r.json
        # the same document as zxctl status --json: same keys, same pipelines
        ref = z.status()
        assert set(st) == set(ref), (sorted(st), sorted(ref))
        assert st["ok"] is True and st["pid"] == ref["pid"]
        pipes = {p["name"]: p for p in st["pipelines"]}
        assert set(pipes) == {"orders", "export"}
        assert pipes["orders"]["rows"] == 3 and pipes["orders"]["state"] == "running"
        assert {p["name"] for p in st["processes"]} == {"writer", "gateway"}
        assert st["rings"]["shared_bytes"] > 0
    # the read routes any token may call, the status role included
    assert z.api("GET", "/api/lineage", z.view_token).status == 200
    assert z.api("GET", "/metrics", z.view_token).status == 200
    # nothing else for the status role: 403 naming why
    r = z.api("POST", "/api/syncs/export/runs", z.view_token, body=b"")
    assert r.status == 403, r
    assert "role status" in r.json["error"] and "read-only" in r.json["error"], r.json
    r = z.api("GET", "/api/runs/1", z.view_token)
    assert r.status == 403 and "role status" in r.json["error"], r
    # the orchestrator may run; its run's record is readable
    r = z.api("POST", "/api/syncs/export/runs", z.ops_token, body=b"")
    assert r.status == 202, r
    # no token, a wrong one, a wrong method
    r = z.api("GET", "/api/status", None)
    assert r.status == 401 and r.headers.get("www-authenticate") == "Bearer", r
    assert z.api("GET", "/api/status", "wrong-" + uid()).status == 401
    r = z.api("POST", "/api/status", z.view_token, body=b"")
    assert r.status == 405 and r.headers.get("allow") == "GET", r


def test_page_served_with_its_headers(make_pzxd):
    z = make_pzxd({"orders": {}})
    r = z.get("/")
    assert r.status == 200, r
    h = r.headers
    assert h["content-type"] == "text/html; charset=utf-8"
    assert h["content-security-policy"] == ("default-src 'self'; script-src 'unsafe-inline'; "
                                            "style-src 'unsafe-inline'; connect-src 'self'")
    assert h["x-content-type-options"] == "nosniff"
    assert h["cache-control"] == "no-store"
    html = r.body.decode("utf-8")
    assert html.lower().startswith("<!doctype html>")
    with open(os.path.join(REPO, "workers", "gateway", "status_page.html"), "rb") as f:
        assert r.body == f.read()   # the file, byte for byte: nothing added
    # one file: no external script, style, image or font
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)=', html, re.I), \
        "the page loads something"
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html
    # it holds no data: no pipeline name, no token
    assert "orders" not in html and z.view_token not in html
    assert http_request(z.port, "HEAD", "/").status == 200
    r = http_request(z.port, "POST", "/", b"", {})
    assert r.status == 405 and r.headers.get("allow") == "GET", r


def test_page_only_on_loopback_by_default(make_pzxd):
    # auto on 0.0.0.0: not served
    z = make_pzxd({"orders": {}}, listen_host="0.0.0.0")
    r = z.get("/")
    assert r.status == 404, r
    assert "server.status_page" in r.json["error"], r.json
    # the API is still there
    assert z.api("GET", "/api/status", z.view_token).status == 200
    z.stop()
    # on: served on any address
    z2 = make_pzxd({"orders": {}}, listen_host="0.0.0.0", status_page="on")
    assert z2.get("/").status == 200
    z2.stop()
    # off: never, not even on loopback
    z3 = make_pzxd({"orders": {}}, status_page="off")
    r = z3.get("/")
    assert r.status == 404 and "off" in r.json["error"], r
    # a reload that turns it on restarts the gateway, which serves it
    z3.status_page = "on"
    z3.write_config()
    z3.zxctl("reload", check_rc=0)
    def served():
        try:
            return z3.get("/", timeout=5).status == 200
        except OSError:
            return False    # the gateway between its two lives
    wait_for(served, "GET / == 200 after the reload")


# ---- in a browser -----------------------------------------------------------

def _chromium():
    """Debian's chromium, or None."""
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


@pytest.fixture
def browser():
    exe = _chromium()
    if not exe:
        pytest.skip("chromium is not installed: packaging/install-deps.sh --test installs "
                    "Debian's chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: packaging/install-deps.sh --test "
                    "pip-installs it")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


def test_page_in_a_browser(make_pzxd, browser):
    z = make_pzxd({"orders": {}})
    push_rows(z, 5)
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    console = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    requests = []
    page.on("request", lambda rq: requests.append(rq.url))
    page.goto(f"http://127.0.0.1:{z.port}/#key={z.view_token}")
    # the key left the address; it is in the tab's sessionStorage
    assert "#key" not in page.url and z.view_token not in page.url
    assert page.evaluate("sessionStorage.getItem('zx.status.key')") == z.view_token
    row = page.locator('#pipelines tr[data-pipeline="orders"]')
    row.wait_for(timeout=15000)
    assert row.locator(".state").inner_text() == "running"
    assert row.locator(".rows").inner_text() == "5"
    assert row.locator(".source").inner_text() == "http"
    assert page.locator('#pipelines tr[data-pipeline="export"]').count() == 1
    # rows arrive: the rows cell follows and the rate is positive
    push_rows(z, 40, start=5)
    page.wait_for_function(
        """() => { const r = document.querySelector('tr[data-pipeline="orders"]');
                   return r && r.querySelector('.rows').textContent === '45' &&
                          parseFloat(r.querySelector('.rate').textContent) > 0; }""",
        timeout=15000)
    # the lineage as SVG: the stream, its table, the sync and the edges
    page.locator('#lineage svg g.node[data-id="stream:orders"]').wait_for(timeout=15000)
    ids = set(page.eval_on_selector_all("#lineage svg g.node",
                                        "ns => ns.map(n => n.dataset.id)"))
    assert {"stream:orders", "table:orders", "sync:export"} <= ids, ids
    edges = {tuple(e) for e in page.eval_on_selector_all(
        "#lineage svg path.edge", "es => es.map(e => [e.dataset.from, e.dataset.to])")}
    assert ("stream:orders", "table:orders") in edges, edges
    assert ("table:orders", "sync:export") in edges, edges
    assert any(f == "sync:export" for f, _ in edges), edges
    # every drawn edge joins two drawn nodes; the labels are there
    assert all(f in ids and t in ids for f, t in edges)
    assert "orders" in page.locator('#lineage g.node[data-id="table:orders"]').text_content()
    # the feed: live (once GET /api/feed exists) or said to be absent
    page.wait_for_function(
        "() => /live|not available/.test(document.getElementById('feed-state').textContent)",
        timeout=15000)
    feed_state = page.locator("#feed-state").inner_text()
    if "live" in feed_state:
        push_rows(z, 2, start=45)
        page.wait_for_function(
            "() => document.querySelectorAll('#feed li[data-id]').length > 0", timeout=15000)
    else:
        assert "feed not available" in feed_state
        # and the status goes on
        push_rows(z, 2, start=45)
        page.wait_for_function(
            """() => document.querySelector('tr[data-pipeline="orders"] .rows')
                       .textContent === '47'""", timeout=15000)
    # nothing was asked of anything but this gateway
    assert all(u.startswith(f"http://127.0.0.1:{z.port}/") for u in requests), requests
    assert not [c for c in console if c.startswith("pageerror")], console
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "status_page.png")
    page.screenshot(path=shot, full_page=True)
    assert os.path.getsize(shot) > 10000
    # a wrong key: the page says 401 and asks for another
    page2 = ctx.new_page()
    page2.goto(f"http://127.0.0.1:{z.port}/#key=wrong-{uid()}")
    page2.wait_for_function(
        "() => /401/.test(document.getElementById('alert').textContent)", timeout=15000)
    assert page2.locator("#keyform").is_visible()
    assert page2.evaluate("sessionStorage.getItem('zx.status.key')") is None
    # typing the right key in the form shows the pipelines
    page2.fill("#key", z.view_token)
    page2.click("#keyform button[type=submit]")
    page2.locator('#pipelines tr[data-pipeline="orders"]').wait_for(timeout=15000)
    ctx.close()


def _sse(first, last, crlf_every=7):
    """Events first..last as text/event-stream, with the lines a reader
    must skip (retry:, comments) and some events ended by CRLF."""
    out = ["retry: 1000\n", ": a comment line\n\n"]
    for i in range(first, last + 1):
        data = json.dumps({"ts": f"2026-01-01T00:00:{i % 60:02d}Z", "event": "batch",
                           "pipeline": "orders", "message": f"event number {i}"})
        nl = "\r\n" if i % crlf_every == 0 else "\n"
        out.append(f"id: {i}{nl}event: batch{nl}data: {data}{nl}{nl}")
    return "".join(out)


def test_feed_reader_in_a_browser(make_pzxd, browser):
    """The page's reader of GET /api/feed, against a stand-in stream served
    by the browser's request routing (zxd's own feed route is another
    branch's): events parsed newest first and capped at 100, a
    reconnection after the stream ends carries Last-Event-ID, and 404 says
    "feed not available" while the status goes on."""
    z = make_pzxd({"orders": {}})
    ctx = browser.new_context()
    page = ctx.new_page()
    calls = []

    def feed(route, request):
        calls.append(dict(request.headers))
        n = len(calls)
        if n == 1:
            route.fulfill(status=200, headers={"Content-Type": "text/event-stream"},
                          body=_sse(1, 120))
        elif n == 2:
            route.fulfill(status=200, headers={"Content-Type": "text/event-stream"},
                          body=_sse(121, 121))
        else:
            route.fulfill(status=404, headers={"Content-Type": "application/json"},
                          body='{"error": "no such endpoint: /api/feed", "status": 404}')

    page.route("**/api/feed", feed)
    page.goto(f"http://127.0.0.1:{z.port}/#key={z.view_token}")
    page.wait_for_function("() => /not available/.test("
                           "document.getElementById('feed-state').textContent)", timeout=20000)
    assert len(calls) >= 3, calls
    assert calls[0]["authorization"] == f"Bearer {z.view_token}"
    assert "last-event-id" not in calls[0]
    assert calls[1].get("last-event-id") == "120", calls[1]
    assert calls[2].get("last-event-id") == "121", calls[2]
    ids = page.eval_on_selector_all("#feed li[data-id]", "ls => ls.map(l => l.dataset.id)")
    assert len(ids) == 100 and ids[0] == "121" and ids[-1] == "22", (len(ids), ids[:3], ids[-3:])
    first = page.locator("#feed li").first.inner_text()
    assert "batch" in first and "[orders]" in first and "event number 121" in first
    # the status goes on without the feed
    push_rows(z, 3)
    page.wait_for_function("""() => { const c = document.querySelector(
        'tr[data-pipeline="orders"] .rows'); return c && c.textContent === '3'; }""",
                           timeout=15000)
    ctx.close()
