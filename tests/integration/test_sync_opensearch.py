"""
The OpenSearch destination (`destination: {opensearch: {connection,
index}}`, a `kind: opensearch` connection), against a real OpenSearch
node (tests/services/opensearch: 2.19, no security plug-in), read back
with opensearch-py:

- upsert and mirror runs: documents, their ids (the key), their values;
  only changes sent; mirror's deletes (a key already gone is no error);
- the index zx creates has a mapping from the result's types;
- a document the index's mapping refuses is refused alone: the others are
  indexed, the run counts it, the next run sends it again;
- append (ids by the cluster) and replace (the index emptied first);
- basic authentication and the API key reach the server as headers: the
  node has no security plug-in, so a small recording stand-in of the
  _bulk API (this file's Recorder) checks them;
- a cluster answering 503, and items answered 429, are sent again;
- composite keys make ids (escaped) that mirror deletes;
- an unreachable cluster fails the run with a clear error, quickly;
- `zxd --check` refuses bad urls, credentials, index names.
- over TLS (`https://`), through a TLS-terminating proxy in front of the
  node (tests/integration/tls_proxy.py, with a CA and certificates made
  here): with `ca_file` the rows reach the index; without it (the system's
  store) and with a certificate for another host the run fails naming the
  certificate, having sent nothing; `insecure: true` skips both checks;
  basic authentication over TLS (the proxy checks the header).

One workspace is enough (what is tested is the index side): SQLite.
"""

import base64
import http.server
import json
import os
import subprocess
import threading
import time

import pytest

from conftest import ZXD, uid
from sync_fixtures import make_sync_env

pytestmark = pytest.mark.sqlite_only

opensearchpy = pytest.importorskip("opensearchpy")

API_KEY = "zx-os-apikey-" + "k" * 12
PASSWORD = "zx-os-pw-" + "p" * 10


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def client(opensearch):
    return opensearchpy.OpenSearch(hosts=[opensearch["URL"]], timeout=30)


def new_index():
    return "zx-" + uid()[:10].lower()


def make_items(z, n):
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE items (id {t['int']} PRIMARY KEY, name {t['text']}, "
              f"price {t['real']}, active {t['bool']}, at {t['ts']}, n {t['text']})")
    if n:
        z.ws_exec("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s "
                  "WHERE i < %d) INSERT INTO items SELECT i, 'item ' || i, i * 0.5, "
                  "i %% 2, '2026-01-02T03:04:05.000000Z', CAST(i AS TEXT) FROM s" % n)


def os_sync(sync_env, url, mode, index, key=("id",), rows=0, conn_extra=None, dest_extra=None,
            query="SELECT id, name, price, active, at, n FROM items"):
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    z.connections = {"os": {"kind": "opensearch",
                            "extra": dict({"url": url}, **(conn_extra or {}))}}
    d = dict({"connection": "os", "index": index}, **(dest_extra or {}))
    z.syncs = {"search": {"author": "alice", "query": query, "dest": {"opensearch": d},
                          "mode": mode, "key": list(key) if key else None}}
    z.write_config()
    make_items(z, rows)
    z.start()
    return z


def docs(es, index):
    es.indices.refresh(index=index)
    r = es.search(index=index, body={"query": {"match_all": {}}, "size": 10000})
    return {h["_id"]: h["_source"] for h in r["hits"]["hits"]}


def expected(z):
    out = {}
    for i, name, price, active, n in z.query(
            "SELECT id, name, price, active, n FROM items ORDER BY id"):
        out[str(i)] = {"id": i, "name": name, "price": price, "active": bool(active),
                       "at": "2026-01-02T03:04:05.000000Z", "n": n}
    return out


# ---- modes ------------------------------------------------------------------------

def test_upsert_then_mirror_index_by_key_and_delete(sync_env, opensearch):
    es = client(opensearch)
    index = new_index()
    z = os_sync(sync_env, opensearch["URL"], "mirror", index, rows=25,
                dest_extra={"batch_rows": 10})
    r = z.run("search")
    assert r["rows_sent"] == 25 and r.get("rows_failed", 0) == 0, r
    assert r["batches"] == 3, r            # 10 + 10 + 5
    assert docs(es, index) == expected(z)
    # the mapping zx made from the result's types
    props = es.indices.get_mapping(index=index)[index]["mappings"]["properties"]
    assert props["id"]["type"] == "keyword"          # the key
    assert props["name"]["type"] == "text"
    assert props["name"]["fields"]["keyword"]["type"] == "keyword"
    assert props["price"]["type"] == "double"
    assert props["active"]["type"] == "boolean"
    assert props["at"]["type"] == "date"

    # changes: one updated, two deleted, one new; a document deleted behind
    # zx's back (its delete then finds nothing: no error)
    z.ws_exec("UPDATE items SET name = 'renamed' WHERE id = 3",
              "DELETE FROM items WHERE id IN (4, 5)",
              "INSERT INTO items VALUES (100, 'new', 1.25, 1, "
              "'2026-01-02T03:04:05.000000Z', '100')")
    es.delete(index=index, id="5", refresh=True)
    r = z.run("search")
    assert (r["rows_sent"], r["rows_deleted"]) == (2, 2), r
    assert r.get("rows_failed", 0) == 0, r
    assert docs(es, index) == expected(z)
    # nothing changed: nothing sent
    r = z.run("search")
    assert r["rows_sent"] == 0 and r.get("rows_deleted", 0) == 0, r


def test_a_document_the_mapping_refuses_is_refused_alone_and_sent_again(sync_env, opensearch):
    es = client(opensearch)
    index = new_index()
    # the index exists with n as a number: text that is no number is refused
    es.indices.create(index=index, body={"mappings": {"properties": {
        "n": {"type": "long"}}}})
    z = os_sync(sync_env, opensearch["URL"], "upsert", index, rows=5)
    z.ws_exec("UPDATE items SET n = 'not a number' WHERE id = 2")
    r = z.run("search")
    assert r["state"] == "succeeded", r
    assert r["rows_failed"] == 1, r
    assert "mapper_parsing_exception" in r["first_error"], r
    got = docs(es, index)
    assert sorted(got) == ["1", "3", "4", "5"]
    # the next run sends it again (its old hash was kept), and again it fails
    r = z.run("search")
    assert (r["rows_sent"], r["rows_unchanged"], r["rows_failed"]) == (1, 4, 1), r
    # once the value fits, it goes through
    z.ws_exec("UPDATE items SET n = '2' WHERE id = 2")
    r = z.run("search")
    assert r.get("rows_failed", 0) == 0 and r["rows_sent"] == 1, r
    assert docs(es, index)["2"]["n"] == "2"
    r = z.run("search")
    assert r["rows_sent"] == 0, r


def test_append_and_replace(sync_env, opensearch):
    es = client(opensearch)
    index = new_index()
    z = os_sync(sync_env, opensearch["URL"], "append", index, key=None, rows=4)
    z.run("search")
    z.run("search")
    got = docs(es, index)
    assert len(got) == 8                   # ids chosen by the cluster
    assert sorted(d["id"] for d in got.values()) == [1, 1, 2, 2, 3, 3, 4, 4]

    index2 = new_index()
    z2 = os_sync(sync_env, opensearch["URL"], "replace", index2, rows=6)
    z2.run("search")
    es.index(index=index2, id="stray", body={"id": 999}, refresh=True)
    z2.ws_exec("DELETE FROM items WHERE id > 3")
    z2.run("search")
    assert docs(es, index2) == expected(z2)


# ---- headers, errors ------------------------------------------------------------------

class Recorder(http.server.BaseHTTPRequestHandler):
    """A stand-in of OpenSearch's index and _bulk API (not OpenSearch: it
    checks nothing of the documents), recording each request's method,
    path and Authorization header, and the ids indexed.  plan: what the
    next _bulk requests get, one entry each: "503" (the whole request
    refused) or "item429" (its first item answered 429)."""
    seen = []
    ids = []
    plan = []

    def log_message(self, *a):
        pass

    def answer(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        Recorder.seen.append((self.command, self.path, self.headers.get("Authorization")))
        if self.path.endswith("/_bulk"):
            what = Recorder.plan.pop(0) if Recorder.plan else None
            if what == "503":
                self.answer(503, {"error": "unavailable", "status": 503})
                return
            lines = [l for l in body.split(b"\n") if l.strip()]
            items = []
            for l in lines:
                a = json.loads(l)
                act = next(iter(a))
                if act not in ("index", "delete"):
                    continue
                if what == "item429" and not items:
                    items.append({act: {"_id": a[act].get("_id"), "status": 429,
                                        "error": {"type": "es_rejected_execution_exception",
                                                  "reason": "busy"}}})
                    continue
                items.append({act: {"_id": a[act].get("_id"), "status": 201}})
                if act == "index":
                    Recorder.ids.append(a[act].get("_id"))
            self.answer(200, {"took": 1, "errors": what is not None, "items": items})
        else:
            self.answer(200, {"acknowledged": True})

    do_GET = do_PUT = do_POST = do_DELETE = handle_any


@pytest.fixture
def recorder():
    Recorder.seen = []
    Recorder.ids = []
    Recorder.plan = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("auth", ["basic", "api_key"])
def test_credentials_are_sent_as_headers_and_never_logged(sync_env, recorder, auth):
    if auth == "basic":
        extra = {"username": "zxuser", "password": "${env:ZX_TEST_OS_PW}"}
        want = "Basic " + base64.b64encode(f"zxuser:{PASSWORD}".encode()).decode()
    else:
        extra = {"api_key": "${env:ZX_TEST_OS_KEY}"}
        want = "ApiKey " + API_KEY
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    z.env["ZX_TEST_OS_PW"] = PASSWORD
    z.env["ZX_TEST_OS_KEY"] = API_KEY
    z.connections = {"os": {"kind": "opensearch", "extra": dict({"url": recorder}, **extra)}}
    z.syncs = {"search": {"author": "alice", "query": "SELECT id, name FROM items",
                          "dest": {"opensearch": {"connection": "os", "index": "people"}},
                          "mode": "upsert", "key": ["id"]}}
    z.write_config()
    make_items(z, 3)
    z.start()
    r = z.run("search")
    assert r["rows_sent"] == 3, r
    assert [m + " " + p.split("?")[0] for m, p, _ in Recorder.seen] == [
        "GET /people", "POST /people/_bulk", "POST /people/_refresh"]
    assert all(h == want for _, _, h in Recorder.seen), Recorder.seen
    log = z.log_text()
    assert PASSWORD not in log and API_KEY not in log
    # the long-lived processes (writer, gateway, the stream's worker) wiped
    # the connection's secret (supervisor/scrub.c: a secret option row)
    if os.geteuid() == 0 and "ASAN_OPTIONS" not in os.environ:
        from test_worker_secrets import memory_has
        secret = (PASSWORD if auth == "basic" else API_KEY).encode()
        pids = z.pids()
        # zxd itself keeps the configuration: the scan finds it there
        assert memory_has(pids.pop("supervisor"), [secret])[secret] == 1
        for name, pid in pids.items():
            if not pid:
                continue
            assert memory_has(pid, [secret])[secret] == 0, f"{name} holds the secret"


def test_a_busy_cluster_gets_the_batch_again_and_the_busy_items_again(sync_env, recorder):
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    z.connections = {"os": {"kind": "opensearch", "extra": {"url": recorder}}}
    z.syncs = {"search": {"author": "alice", "query": "SELECT id, name FROM items",
                          "dest": {"opensearch": {"connection": "os", "index": "people"}},
                          "mode": "upsert", "key": ["id"]}}
    z.write_config()
    make_items(z, 3)
    z.start()
    Recorder.plan = ["503", "item429"]
    r = z.run("search")
    assert (r["rows_sent"], r.get("rows_failed", 0)) == (3, 0), r
    # the 503 tried again by the client, the item answered 429 sent alone
    assert (r["batches"], r["batches_retried"], r["batches_failed"]) == (2, 2, 0), r
    assert sorted(Recorder.ids) == ["1", "2", "3"]
    assert "429" in r["first_error"], r


def test_a_composite_key_makes_ids_and_mirror_deletes_them(sync_env, opensearch):
    es = client(opensearch)
    index = new_index()
    z = os_sync(sync_env, opensearch["URL"], "mirror", index, key=("id", "name"), rows=3,
                query="SELECT id, name, n FROM items")
    z.ws_exec("UPDATE items SET name = 'a|b' WHERE id = 2")
    z.run("search")
    assert sorted(docs(es, index)) == ["1|item 1", "2|a\\|b", "3|item 3"]
    z.ws_exec("DELETE FROM items WHERE id = 2")
    r = z.run("search")
    assert r["rows_deleted"] == 1, r
    assert sorted(docs(es, index)) == ["1|item 1", "3|item 3"]


def test_an_unreachable_cluster_fails_the_run_with_a_clear_error(sync_env):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                              # nothing listens there now
    z = os_sync(sync_env, f"http://127.0.0.1:{port}", "upsert", "people", rows=2)
    r = z.run("search", check=False, timeout=120)
    assert r["state"] == "failed", r
    assert "opensearch os index people: cannot reach the cluster" in r["error"], r
    assert f"127.0.0.1:{port}" in r["error"], r


def test_the_configuration_is_checked(sync_env):
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    ok = {"url": "http://127.0.0.1:9200"}
    cases = [
        ({"url": "ftp://x"}, {}, "url: an http:// or https:// URL"),
        ({"url": "http://user:pw@h:9200"}, {}, "no query, fragment or user"),
        ({}, {}, "kind opensearch needs `url`"),
        (dict(ok, password="p"), {}, "password goes with username"),
        (dict(ok, username="u", api_key="k"), {}, "api_key or username, not both"),
        (ok, {"index": "Upper"}, "is not an index name"),
        (ok, {"index": "_x"}, "is not an index name"),
        (ok, {"index": None}, "missing required field 'index'"),
        (ok, {"connection": "nope"}, "unknown connection 'nope' (a search cluster, of kind "
         "opensearch)"),
        (ok, {"batch_rows": 0}, "batch_rows"),
    ]
    for conn, dest, want in cases:
        d = {"connection": "os", "index": "people"}
        d.update(dest)
        d = {k: v for k, v in d.items() if v is not None}
        z.connections = {"os": {"kind": "opensearch", "extra": conn}}
        z.syncs = {"s": {"query": "SELECT id FROM items", "mode": "upsert", "key": ["id"],
                         "dest": {"opensearch": d}}}
        z.write_config()
        p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"],
                           capture_output=True, text=True, timeout=60, env=z.env)
        assert p.returncode != 0 and want in p.stderr + p.stdout, (conn, dest, p.stderr)
    # and a good one passes
    z.connections = {"os": {"kind": "opensearch", "extra": dict(ok, username="u",
                                                                 password="p")}}
    z.syncs = {"s": {"query": "SELECT id FROM items", "mode": "upsert", "key": ["id"],
                     "dest": {"opensearch": {"connection": "os", "index": "people"}}}}
    z.write_config()
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"],
                       capture_output=True, text=True, timeout=60, env=z.env)
    assert p.returncode == 0, p.stderr


# ---- TLS ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    from tls_proxy import make_pki
    return make_pki(str(tmp_path_factory.mktemp("pki")))


@pytest.fixture
def tls_proxy(opensearch, pki):
    """proxy(cert="good", auth=None): a started TLSProxy in front of the
    node, serving pki's certificate cert."""
    from tls_proxy import TLSProxy
    made = []

    def make(cert="good", auth=None):
        p = TLSProxy(opensearch["ADDR"], *pki[cert], auth=auth).start()
        made.append(p)
        return p
    yield make
    for p in made:
        p.stop()


def test_tls_with_the_ca_file_mirrors_the_rows(sync_env, opensearch, pki, tls_proxy):
    es = client(opensearch)                # the node itself, plain http
    index = new_index()
    proxy = tls_proxy()
    z = os_sync(sync_env, f"https://127.0.0.1:{proxy.port}", "mirror", index, rows=12,
                conn_extra={"ca_file": pki["ca"]}, dest_extra={"batch_rows": 5})
    r1 = z.run("search")
    assert r1["rows_sent"] == 12 and r1.get("rows_failed", 0) == 0, r1
    assert r1["batches"] == 3, r1          # 5 + 5 + 2
    assert docs(es, index) == expected(z)
    z.ws_exec("UPDATE items SET name = 'over tls' WHERE id = 2", "DELETE FROM items WHERE id = 7")
    r2 = z.run("search")
    assert (r2["rows_sent"], r2["rows_deleted"]) == (1, 1), r2
    assert docs(es, index) == expected(z)
    # every request went through the proxy: 3 + 2 (the row, the delete)
    assert sum(1 for _, p, _ in proxy.seen if p.split("?")[0] == f"/{index}/_bulk") == 5


@pytest.mark.parametrize("case", ["system_store", "wrong_host"])
def test_tls_a_certificate_not_trusted_fails_the_run_sending_nothing(sync_env, opensearch, pki,
                                                                      tls_proxy, case):
    es = client(opensearch)
    index = new_index()
    if case == "system_store":            # our CA is in no system store
        proxy, extra = tls_proxy("good"), {}
    else:                                 # trusted, but for zx.invalid only
        proxy, extra = tls_proxy("wronghost"), {"ca_file": pki["ca"]}
    z = os_sync(sync_env, f"https://127.0.0.1:{proxy.port}", "upsert", index, rows=3,
                conn_extra=extra)
    t0 = time.monotonic()
    r = z.run("search", check=False, timeout=120)
    took = time.monotonic() - t0
    assert r["state"] == "failed", r
    err = r.get("error", "")
    assert f"opensearch os index {index}: cannot reach the cluster at " \
        f"https://127.0.0.1:{proxy.port}" in err, r
    assert "certificate" in err.lower(), r
    if case == "system_store":
        assert "verify" in err.lower() or "issuer" in err.lower(), r
    else:
        assert "zx.invalid" in err or "name" in err.lower(), r
    assert r.get("rows_sent", 0) == 0, r
    # no request crossed the proxy (libcurl checks the host name once the
    # handshake is done, then closes without a request)
    assert proxy.seen == [], proxy.seen
    assert not es.indices.exists(index=index)
    assert took < 20, f"a certificate refused is not tried again: {took:.1f} s"


def test_tls_insecure_skips_the_checks(sync_env, opensearch, tls_proxy):
    es = client(opensearch)
    index = new_index()
    proxy = tls_proxy("wronghost")        # an unknown CA and another host's name
    z = os_sync(sync_env, f"https://127.0.0.1:{proxy.port}", "upsert", index, rows=4,
                conn_extra={"insecure": True})
    r = z.run("search")
    assert r["rows_sent"] == 4, r
    assert docs(es, index) == expected(z)
    assert proxy.upstream_connections >= 1


def test_tls_basic_authentication_through_the_proxy(sync_env, opensearch, pki, tls_proxy):
    """The proxy answers 401 to a request without the right Authorization
    header: with it every request reaches the node; with a wrong password
    the run fails naming the 401, and the index is not made."""
    es = client(opensearch)
    want = "Basic " + base64.b64encode(f"zxuser:{PASSWORD}".encode()).decode()
    proxy = tls_proxy("good", auth=want)
    for pw, ok in ((PASSWORD, True), ("not-" + PASSWORD, False)):
        index = new_index()
        z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
        z.env["ZX_TEST_OS_PW"] = pw
        z.connections = {"os": {"kind": "opensearch", "extra": {
            "url": f"https://127.0.0.1:{proxy.port}", "ca_file": pki["ca"],
            "username": "zxuser", "password": "${env:ZX_TEST_OS_PW}"}}}
        z.syncs = {"search": {"author": "alice", "query": "SELECT id, name, price, active, at, n "
                              "FROM items", "dest": {"opensearch": {"connection": "os",
                                                                    "index": index}},
                              "mode": "upsert", "key": ["id"]}}
        z.write_config()
        make_items(z, 3)
        z.start()
        r = z.run("search", check=False, timeout=120)
        if ok:
            assert r["state"] == "succeeded" and r["rows_sent"] == 3, r
            assert docs(es, index) == expected(z)
            assert proxy.refused == 0 and all(h == want for _, _, h in proxy.seen), proxy.seen
        else:
            assert r["state"] == "failed", r
            assert "401" in r.get("error", ""), r
            assert proxy.refused >= 1
            assert not es.indices.exists(index=index)
        assert pw not in z.log_text()
        z.stop()
