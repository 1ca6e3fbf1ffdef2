"""
The HTTP API destination (workers/destinations/http/), end to end: a zxd
whose reverse syncs send to a receiver of this test's own (http.server in a
thread) that records every request, counts those in flight, applies a
batch's items once per Idempotency-Key (as a receiver that honours it),
and can answer 429 with Retry-After, 500, 400, too late (after the
client's timeout: a duplicate delivery), slowly, or with per-item errors.
No assertion on timing but lower bounds (a rate makes 20 requests take at
least 19 intervals).

It must never: talk to anything but 127.0.0.1, or leave a thread running.
"""

import http.server
import json
import select
import socket
import threading
import time

import pytest

from sync_fixtures import make_sync_env
from test_syncs import insert_customers, make_customers

TOKEN = "Bearer zx-http-t0ken-" + "9f3a71c2"
QUERY = "SELECT id, email, plan FROM customers"


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


class Receiver:
    """An API: records requests; plan(n, req) says how to answer the n-th
    (0-based) request: None (apply, 200), or a dict with "status",
    "headers", "body", "sleep" (seconds before answering), "apply"
    (apply the items even though the answer is an error), "slow" (send
    the answer's body a few bytes at a time), "results" (a function of the
    items giving the body)."""

    def __init__(self, plan=None):
        self.plan = plan or (lambda n, req: None)
        self.lock = threading.Lock()
        self.requests = []
        self.keys_applied = set()
        self.rows = {}                 # id -> row, as applied
        self.applied = {}              # id -> times applied (upserts)
        self.deleted = []              # keys deleted, in order
        self.inflight = 0
        self.max_inflight = 0
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def handle_any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                with rec.lock:
                    rec.inflight += 1
                    rec.max_inflight = max(rec.max_inflight, rec.inflight)
                    idx = len(rec.requests)
                    req = {"method": self.command, "path": self.path, "body": body,
                           "headers": {k.lower(): v for k, v in self.headers.items()},
                           "t": time.monotonic()}
                    rec.requests.append(req)
                gone = False
                try:
                    act = rec.plan(idx, req) or {}
                    if act.get("sleep"):
                        # in flight until answered or the client hangs up
                        # (its timeout): only then is it not counted
                        gone = self.wait_or_gone(act["sleep"])
                        if gone:
                            with rec.lock:
                                rec.inflight -= 1
                    status = act.get("status", 200)
                    items = rec.items(req)
                    if status < 300 or act.get("apply"):
                        rec.apply(req, items)
                    out = act.get("body", b"")
                    if "results" in act:
                        out = json.dumps(act["results"](items)).encode()
                    if isinstance(out, str):
                        out = out.encode()
                    self.send_response(status)
                    for k, v in (act.get("headers") or {}).items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    if act.get("slow"):
                        for i in range(0, len(out), 8):
                            self.wfile.write(out[i:i + 8])
                            self.wfile.flush()
                            time.sleep(0.02)
                    else:
                        self.wfile.write(out)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    if not gone:
                        with rec.lock:
                            rec.inflight -= 1

            def wait_or_gone(self, seconds):
                """Sleep seconds; True as soon as the client closed the
                connection (the batch still counts as received: applied
                below, as a server that finished its work would)."""
                end = time.monotonic() + seconds
                while True:
                    left = end - time.monotonic()
                    if left <= 0:
                        return False
                    r, _, _ = select.select([self.connection], [], [], left)
                    if r:
                        try:
                            if self.connection.recv(1, socket.MSG_PEEK) == b"":
                                return True
                        except OSError:
                            return True
                        time.sleep(min(left, 0.05))

            do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/v2"

    @staticmethod
    def items(req):
        b = req["body"].decode()
        ct = req["headers"].get("content-type", "")
        if "ndjson" in ct:
            return [json.loads(line) for line in b.splitlines() if line]
        doc = json.loads(b)
        return doc["records"] if isinstance(doc, dict) else doc

    def apply(self, req, items):
        with self.lock:
            key = req["headers"].get("idempotency-key")
            if key in self.keys_applied:
                return                      # a duplicate: dropped
            self.keys_applied.add(key)
            for it in items:
                if req["method"] == "DELETE" or it.get("op") == "delete":
                    k = it.get("key", it)
                    self.deleted.append(k)
                    self.rows.pop(k["id"], None)
                else:
                    row = {k: v for k, v in it.items() if k != "op"}
                    self.rows[row["id"]] = row
                    self.applied[row["id"]] = self.applied.get(row["id"], 0) + 1

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
        self.thread.join(5)


@pytest.fixture
def receiver():
    made = []

    def make(plan=None):
        r = Receiver(plan)
        made.append(r)
        return r
    yield make
    for r in made:
        r.close()


def http_zxd(sync_env, rcv, dest, mode="upsert", rows=None, timeout="1s", syncs=None):
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False)
    z.env["ZX_TEST_HTTP_TOKEN"] = TOKEN
    z.connections = {"api": {"kind": "http", "extra": {
        "base_url": rcv.url, "timeout": timeout,
        "headers": {"Authorization": "${env:ZX_TEST_HTTP_TOKEN}", "X-Tenant": "t1"}}}}
    z.syncs = syncs or {"s": {"query": QUERY, "mode": mode, "key": ["id"],
                              "dest": {"http": dict({"connection": "api"}, **dest)}}}
    z.write_config()
    make_customers(z, rows=rows or [], extra_tables=False)
    return z


def many(n, start=1):
    return [(i, f"u{i}@x.org", "free" if i % 2 else "pro", True, None)
            for i in range(start, start + n)]


def no_token_anywhere(z):
    assert TOKEN not in z.log_text()
    for args in (("status",), ("--json", "status"), ("runs", "s"), ("--json", "runs", "s")):
        p = z.zxctl(*args)
        assert TOKEN not in p.stdout + p.stderr, args


def test_every_row_once_through_retries_timeouts_and_duplicates(sync_env, receiver):
    """429 with Retry-After, 500, an answer after the timeout (the batch
    arrived: a duplicate), an applied batch answered 503, a slow answer:
    every row arrives, none applied twice, each batch's key the same on
    every send, never more than `concurrency` in flight."""
    first = {}

    def plan(n, req):
        if n == 0:
            return {"status": 429, "headers": {"Retry-After": "1"}, "body": "slow down"}
        if n == 1:
            return {"status": 500, "body": "oops"}
        if n == 2:
            return {"sleep": 2.0}                      # after the 1 s timeout
        if n == 3:
            return {"status": 503, "apply": True}      # applied, answer lost
        if n == 4:
            return {"slow": True, "body": json.dumps({"ok": True, "pad": "x" * 100})}
        first.setdefault(n, True)
        return {"sleep": 0.05}

    rcv = receiver(plan)
    z = http_zxd(sync_env, rcv, {"path": "/contacts/batch", "batch_rows": 5,
                                 "concurrency": 2, "max_backoff": "2s"}, rows=many(40))
    z.start()
    r = z.run("s")
    assert r["rows_sent"] == 40, r
    assert sorted(rcv.rows) == list(range(1, 41))
    assert all(v == 1 for v in rcv.applied.values()), rcv.applied
    assert rcv.rows[3] == {"id": 3, "email": "u3@x.org", "plan": "free"}
    # one key per batch: the same on every send of the same body, and
    # distinct bodies have distinct keys
    by_body = {}
    for q in rcv.requests:
        by_body.setdefault(q["body"], set()).add(q["headers"]["idempotency-key"])
        assert q["headers"]["authorization"] == TOKEN
        assert q["headers"]["x-tenant"] == "t1"
        assert q["headers"]["content-type"] == "application/json"
    assert len(by_body) == 8
    assert all(len(k) == 1 for k in by_body.values())
    assert len({next(iter(k)) for k in by_body.values()}) == 8
    assert len(rcv.requests) >= 12      # 8 batches, 4 of them sent again
    assert rcv.max_inflight <= 2
    # Retry-After: 1 was waited for (a lower bound only)
    b0 = rcv.requests[0]["body"]
    resent = [q["t"] for q in rcv.requests[1:] if q["body"] == b0]
    assert resent and resent[0] - rcv.requests[0]["t"] >= 0.9
    runs = z.runs("s")
    last = runs[0]
    assert last["batches"] == 8 and last["batches_retried"] >= 4, last
    assert last["batches_failed"] == 0
    # the first of the two answered at once (both in flight together)
    assert "HTTP 429" in last["first_error"] or "HTTP 500" in last["first_error"], last
    p = z.zxctl("runs", "s")
    assert "from POST /contacts/batch" in p.stdout, p.stdout     # the first error
    # a second run sends nothing (no change)
    assert z.run("s")["rows_sent"] == 0
    no_token_anywhere(z)


def test_rate_is_honoured(sync_env, receiver):
    """rate 5/s: 20 requests start at least 200 ms apart (a lower bound)."""
    rcv = receiver()
    z = http_zxd(sync_env, rcv, {"path": "/c", "batch_rows": 1, "concurrency": 4,
                                 "rate": "5/s", "body": "ndjson"}, rows=many(20))
    z.start()
    assert z.run("s")["rows_sent"] == 20
    ts = sorted(q["t"] for q in rcv.requests)
    assert len(ts) == 20
    assert ts[-1] - ts[0] >= 3.0, ts[-1] - ts[0]
    assert rcv.max_inflight <= 4
    assert all(q["headers"]["content-type"] == "application/x-ndjson" for q in rcv.requests)


def test_mirror_deletes_as_items_and_to_a_delete_path(sync_env, receiver):
    """Keys that disappeared reach the API: as {"op":"delete","key":...}
    items in the body's shape (wrap), or in batches of keys sent with
    DELETE to delete_path."""
    rcv = receiver()
    syncs = {
        "s": {"query": QUERY, "mode": "mirror", "key": ["id"],
              "dest": {"http": {"connection": "api", "path": "/items", "body": "wrap",
                                "wrap": "records", "op_field": "op"}}},
        "t": {"query": QUERY, "mode": "mirror", "key": ["id"],
              "dest": {"http": {"connection": "api", "path": "/rows",
                                "delete_path": "/rows/delete", "method": "PUT"}}},
    }
    z = http_zxd(sync_env, rcv, {}, rows=many(4), syncs=syncs)
    z.start()
    assert z.run("s")["rows_sent"] == 4
    assert z.run("t")["rows_sent"] == 4
    first = rcv.requests[0]
    doc = json.loads(first["body"])
    assert list(doc) == ["records"] and doc["records"][0]["op"] == "upsert"
    assert rcv.requests[1]["method"] == "PUT"
    z.ws_exec("DELETE FROM customers WHERE id IN (2, 3)")
    n = len(rcv.requests)
    assert z.run("s")["rows_deleted"] == 2
    assert z.run("t")["rows_deleted"] == 2
    new = rcv.requests[n:]
    items = json.loads(new[0]["body"])["records"]
    assert new[0]["path"] == "/v2/items"
    assert sorted(i["key"]["id"] for i in items) == [2, 3]
    assert all(i["op"] == "delete" for i in items)
    assert new[1]["method"] == "DELETE" and new[1]["path"] == "/v2/rows/delete"
    assert sorted(k["id"] for k in json.loads(new[1]["body"])) == [2, 3]
    assert sorted(rcv.rows) == [1, 4]


def test_a_400_fails_the_run_with_the_answer(sync_env, receiver):
    """A 4xx other than 408/409/425/429 is not retried: the run fails with
    the status and the start of the answer (a header value echoed in it is
    hidden), and the next run sends the rows again."""
    bad = {"on": True}

    def plan(n, req):
        if bad["on"]:
            return {"status": 400, "body": '{"error": "email is invalid", "auth": "%s"}'
                    % TOKEN}
        return None
    rcv = receiver(plan)
    z = http_zxd(sync_env, rcv, {"path": "/c"}, rows=many(3))
    z.start()
    r = z.run("s", check=False)
    assert r["state"] == "failed", r
    assert "HTTP 400" in r["error"] and "email is invalid" in r["error"], r
    assert TOKEN not in r["error"] and "***" in r["error"], r
    assert len(rcv.requests) == 1       # not retried
    last = z.runs("s")[0]
    assert last["batches_failed"] == 1 and "HTTP 400" in last["first_error"], last
    p = z.zxctl("run", "s", "--wait")
    assert p.returncode != 0 and "HTTP 400 from POST /c" in p.stdout + p.stderr, p.stderr
    assert TOKEN not in p.stdout + p.stderr
    bad["on"] = False
    assert z.run("s")["rows_sent"] == 3
    assert sorted(rcv.rows) == [1, 2, 3]
    no_token_anywhere(z)


def test_item_errors_are_sent_again_by_the_next_run(sync_env, receiver):
    """Per-item results (results_path): the items the API refused keep
    their old hashes: the next run sends exactly those rows."""
    refuse = {2, 5}

    def results(items):
        return {"data": {"results": [
            {"id": it["id"], "status": 422, "error": "email is invalid"}
            if it["id"] in refuse else {"id": it["id"], "status": 200}
            for it in items]}}

    def plan(n, req):
        return {"results": results}
    rcv = receiver(plan)
    z = http_zxd(sync_env, rcv, {"path": "/c", "batch_rows": 3,
                                 "results_path": "data.results"}, rows=many(7))
    z.start()
    r = z.run("s")
    assert r["rows_sent"] == 7, r
    last = z.runs("s")[0]
    assert last["rows_failed"] == 2, last
    assert "email is invalid" in last["first_error"], last
    n = len(rcv.requests)
    refuse.clear()
    z.run("s")
    again = [i["id"] for q in rcv.requests[n:] for i in json.loads(q["body"])]
    assert sorted(again) == [2, 5]
    n = len(rcv.requests)
    assert z.run("s")["rows_sent"] == 0
    assert len(rcv.requests) == n


def test_a_stopped_api_cannot_hang_a_run(sync_env, receiver):
    """An API that never answers: every send times out, the run fails after
    max_retries + 1 sends, naming the timeout."""
    rcv = receiver(lambda n, req: {"sleep": 3})
    z = http_zxd(sync_env, rcv, {"path": "/c", "max_retries": 1, "max_backoff": "100ms"},
                 rows=many(2), timeout="500ms")
    z.start()
    r = z.run("s", check=False, timeout=60)
    assert r["state"] == "failed", r
    assert "imeout" in r["error"] and "2 sends" in r["error"], r
    last = z.runs("s")[0]
    assert last["batches_retried"] == 1 and last["batches_failed"] == 1, last


def test_a_stop_ends_a_run_waiting_out_a_retry_after(sync_env, receiver):
    """A batch waiting out a long Retry-After does not hold a stop: `zxctl
    stop` ends the run at once (failed, the rows sent again next time)."""
    from conftest import wait_for
    rcv = receiver(lambda n, req: {"status": 503, "headers": {"Retry-After": "300"}})
    z = http_zxd(sync_env, rcv, {"path": "/c", "max_retries": 5, "max_backoff": "10m"},
                 rows=many(2))
    z.start()
    assert z.zxctl("run", "s").returncode == 0
    wait_for(lambda: len(rcv.requests) >= 1, "the first send")
    assert z.zxctl("stop", "s").returncode == 0
    # the Retry-After is 300 s: only the stop can end the run this soon
    wait_for(lambda: z.runs("s") and z.runs("s")[0]["state"] == "failed",
             "the run to end failed after the stop", deadline=60)
    last = z.runs("s")[0]
    assert "stopped while sending" in last["error"], last   # the destination's own words
    assert len(rcv.requests) == 1
