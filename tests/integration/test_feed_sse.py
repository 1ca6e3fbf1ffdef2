"""
GET /api/feed, end to end: the live feed as server-sent events on the
gateway (workers/gateway/gateway_feed.h).  A zxd with push streams and
one API token; rows pushed show up as `batch` events with increasing ids;
a client reconnecting with Last-Event-ID (or ?last_event_id=) gets exactly
the later events; an id older than anything held gets `gap` first;
?since=now skips the history; wrong tokens get 401 and malformed ids 400;
a client that never reads is dropped once its output passes its bound,
and meanwhile pushes go on and another reader gets its events; a
restarted gateway still lets a client resume.
"""

import os
import signal
import socket
import time

import pytest

from conftest import Zxd, http_request, uid, wait_for, zxd_factory

TOKEN_ENV = "ZX_FEED_TOKEN"


class FeedZxd(Zxd):
    """A Zxd with one API token, the key to /api/feed."""

    def __init__(self, root, pipelines, **kw):
        self.token = "tok-" + uid()
        super().__init__(root, pipelines, **kw)
        self.env[TOKEN_ENV] = self.token

    def config_text(self):
        return super().config_text() + "\n".join([
            "api_tokens:",
            "  reader:",
            "    token: ${env:%s}" % TOKEN_ENV,
            "    role: orchestrator",
        ]) + "\n"


@pytest.fixture
def make_fzxd(workspace):
    yield from zxd_factory(workspace, FeedZxd)


class Sse:
    """A raw-socket SSE client: sends GET /api/feed, reads the answer's head,
    then parses frames as they come ({"id", "event", "data", "retry",
    "comment"} dicts)."""

    def __init__(self, port, token, path="/api/feed", headers=None, rcvbuf=None, timeout=30):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(timeout)
        self.s.connect(("127.0.0.1", port))
        h = {"Host": "127.0.0.1", "Accept": "text/event-stream"}
        if token is not None:
            h["Authorization"] = "Bearer " + token
        h.update(headers or {})
        req = f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items())
        self.s.sendall((req + "\r\n").encode())
        self.buf = b""
        self.frames = []
        self.eof = False
        self.status = None
        self.in_body = False    # frames are parsed once the head is read
        self.headers = {}
        self.body = b""

    def read_head(self, timeout=30):
        end = time.monotonic() + timeout
        while b"\r\n\r\n" not in self.buf:
            if not self._recv(end):
                break
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        for l in lines[1:]:
            k, _, v = l.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.buf = rest
        self.in_body = self.status == 200
        self._parse()
        if self.status != 200:   # a plain answer: read its body
            n = int(self.headers.get("content-length", "0"))
            while len(self.buf) < n and self._recv(end):
                pass
            self.body = self.buf
        return self.status

    def _recv(self, end):
        self.s.settimeout(max(0.05, end - time.monotonic()))
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            self.eof = True
            return False
        if not d:
            self.eof = True
            return False
        self.buf += d
        self._parse()
        return True

    def _parse(self):
        while self.in_body and b"\n\n" in self.buf:
            raw, _, self.buf = self.buf.partition(b"\n\n")
            f = {}
            for line in raw.decode("utf-8").split("\n"):
                if line.startswith(":"):
                    f["comment"] = line[1:].strip()
                    continue
                k, _, v = line.partition(":")
                f[k] = v[1:] if v.startswith(" ") else v
            self.frames.append(f)

    def events(self):
        return [f for f in self.frames if "event" in f]

    def wait(self, pred, what, timeout=60):
        end = time.monotonic() + timeout
        while True:
            got = pred(self.frames)
            if got:
                return got
            if self.eof or time.monotonic() > end:
                pytest.fail(f"{what}: not seen (eof={self.eof}); frames so far:\n"
                            + "\n".join(map(str, self.frames[-20:])))
            self._recv(min(end, time.monotonic() + 0.5))

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


@pytest.fixture
def clients():
    made = []

    def make(*a, **kw):
        c = Sse(*a, **kw)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()


def batches(frames, pipeline=None):
    import json
    out = []
    for f in frames:
        if f.get("event") == "batch":
            d = json.loads(f["data"])
            if pipeline is None or d.get("pipeline") == pipeline:
                out.append((int(f["id"]), d))
    return out


def ids_of(frames):
    return [int(f["id"]) for f in frames if "id" in f]


def test_stream_resume_gap_and_since(make_fzxd, clients):
    import json
    z = make_fzxd({"orders": {}})
    c = clients(z.port, z.token)
    assert c.read_head() == 200, c.body
    assert c.headers["content-type"] == "text/event-stream", c.headers
    assert c.headers["cache-control"] == "no-store", c.headers
    assert "content-length" not in c.headers
    c.wait(lambda fr: fr, "the first frame")
    assert c.frames[0] == {"retry": "2000"}, c.frames[0]
    for i in range(3):
        z.push_ok("orders", [{"id": uid(), "n": i}], wait_commit=True)
    got = c.wait(lambda fr: len(batches(fr, "orders")) >= 3 and batches(fr, "orders"),
                 "3 batch events of orders")
    ids = [i for i, _ in got]
    assert ids == sorted(ids) and len(set(ids)) == 3, ids
    for i, d in got:
        assert d["event"] == "batch" and d["table"] == "orders" and d["rows"] == 1, d
        assert isinstance(d["ts"], str) and isinstance(d["message"], str), d
    # every frame's id grows, history and live alike
    all_ids = ids_of(c.frames)
    assert all_ids == sorted(all_ids) and len(set(all_ids)) == len(all_ids), all_ids
    # the event line is the data's own "event"
    for f in c.events():
        assert json.loads(f["data"]).get("event") == f["event"], f

    # resume after the first batch: exactly the later events
    first = ids[0]
    seen = ids_of(c.frames)
    later = [i for i in seen if i > first]
    for how in ({"headers": {"Last-Event-ID": str(first)}},
                {"path": f"/api/feed?last_event_id={first}"}):
        r = clients(z.port, z.token, **how)
        assert r.read_head() == 200
        r.wait(lambda fr: len(ids_of(fr)) >= len(later), f"the events after {first} ({how})")
        got_ids = [i for i in ids_of(r.frames) if i <= seen[-1]]
        assert got_ids == later, (how, got_ids, later)
        assert not [f for f in r.frames if f.get("event") == "gap"], r.frames
        assert r.frames[0] == {"retry": "2000"}
    # resuming from the newest: nothing until the next event
    r = clients(z.port, z.token, headers={"Last-Event-ID": str(seen[-1])})
    assert r.read_head() == 200
    z.push_ok("orders", [{"id": uid(), "n": 9}], wait_commit=True)
    nb = r.wait(lambda fr: batches(fr, "orders"), "the next batch after the newest id")
    assert all(i > seen[-1] for i in ids_of(r.frames)), r.frames
    assert nb[0][1]["rows"] == 1

    # an id from before this zxd (older than anything held): gap, then all held
    g = clients(z.port, z.token, headers={"Last-Event-ID": "1"})
    assert g.read_head() == 200
    g.wait(lambda fr: len(fr) >= 3, "gap and the history")
    assert g.frames[0] == {"retry": "2000"}
    gap = g.frames[1]
    assert gap.get("event") == "gap" and "id" not in gap, gap
    gd = json.loads(gap["data"])
    assert gd["after"] == 1 and gd["oldest"] == ids_of(g.frames)[0], (gd, g.frames[:4])
    assert gd["oldest"] <= seen[0]

    # ?since=now: no history, then live events
    n = clients(z.port, z.token, path="/api/feed?since=now")
    assert n.read_head() == 200
    n.wait(lambda fr: fr, "retry")
    time.sleep(0.5)
    n._recv(time.monotonic() + 0.5)
    assert n.frames == [{"retry": "2000"}], n.frames
    z.push_ok("orders", [{"id": uid(), "n": 10}], wait_commit=True)
    n.wait(lambda fr: batches(fr, "orders"), "a live batch with since=now")


def test_auth_and_bad_requests(make_fzxd, clients):
    z = make_fzxd({"orders": {}})
    r = http_request(z.port, "GET", "/api/feed")
    assert r.status == 401, r
    assert r.headers.get("www-authenticate") == "Bearer"
    c = clients(z.port, "wrong-" + uid())
    assert c.read_head() == 401, c.body
    assert b"token" in c.body
    for bad in ("abc", "-1", "1.5", " ", "0x10", "1" * 21, "18446744073709551616"):
        c = clients(z.port, z.token, headers={"Last-Event-ID": bad})
        assert c.read_head() == 400, (bad, c.body)
        assert b"Last-Event-ID" in c.body
    for q in ("last_event_id=x", "last_event_id=", "since=later"):
        c = clients(z.port, z.token, path="/api/feed?" + q)
        assert c.read_head() == 400, (q, c.body)
    # the largest id is fine (nothing after it yet)
    c = clients(z.port, z.token, headers={"Last-Event-ID": "18446744073709551615"})
    assert c.read_head() == 200
    r = http_request(z.port, "POST", "/api/feed", b"",
                     {"Authorization": "Bearer " + z.token})
    assert r.status == 405, r


def test_slow_reader_dropped_pushes_go_on(make_fzxd, clients):
    # 1500 new columns with long names: one `schema` event each (~350 bytes
    # as a frame), well above the 256 KiB a client may have queued
    z = make_fzxd({"wide": {"extra": {"max_columns": 1500}}, "orders": {}})
    slow = clients(z.port, z.token, path="/api/feed?since=now", rcvbuf=4096)
    # the head and the retry line fit in what the kernel takes; read no more
    assert slow.read_head() == 200
    fast = clients(z.port, z.token, path="/api/feed?since=now")
    assert fast.read_head() == 200
    pad = "c" * 50
    # in parts of 150: the writer sends its events without waiting, and a
    # burst of many hundreds may not all reach the supervisor
    for part in range(10):
        row = {f"{pad}_{part}_{i:04d}": i for i in range(150)}
        z.push_ok("wide", [row], wait_commit=True)
        fast.wait(lambda fr, p=part: sum(1 for f in fr if f.get("event") == "schema"
                                         and f"_{p}_0149" in f["data"]),
                  f"the schema events of part {part}")
    wait_for(lambda: "event=feed_client_dropped" in z.log_text(),
             "the slow feed client dropped (event=feed_client_dropped in the log)")
    assert z.log_text().count("event=feed_client_dropped") == 1, z.log_text()[-3000:]
    # pushes still succeed and a reader gets their events
    for i in range(3):
        z.push_ok("orders", [{"id": uid(), "n": i}], wait_commit=True)
    fast.wait(lambda fr: len(batches(fr, "orders")) >= 3, "orders batches on the fast reader")
    late = clients(z.port, z.token)
    assert late.read_head() == 200
    late.wait(lambda fr: len(batches(fr, "orders")) >= 3, "the history for a new reader")
    # the slow client's connection was closed: draining it ends in EOF
    slow.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    end = time.monotonic() + 30
    while not slow.eof and time.monotonic() < end:
        slow._recv(end)
    assert slow.eof, "the dropped client's connection is still open"
    # what it got is whole frames only, and fewer than were sent
    n_slow = sum(1 for f in slow.frames if f.get("event") == "schema")
    assert n_slow < 1500, n_slow


def test_resume_across_gateway_restart(make_fzxd, clients):
    z = make_fzxd({"orders": {}})
    c = clients(z.port, z.token)
    assert c.read_head() == 200
    z.push_ok("orders", [{"id": uid(), "n": 1}], wait_commit=True)
    first = c.wait(lambda fr: batches(fr, "orders"), "a batch")[0][0]
    gw = z.pids()["gateway"]
    os.kill(gw, signal.SIGKILL)
    z.wait_running("gateway", not_pid=gw)
    z.push_ok("orders", [{"id": uid(), "n": 2}], wait_commit=True)
    r = clients(z.port, z.token, headers={"Last-Event-ID": str(first)})
    assert r.read_head() == 200
    got = r.wait(lambda fr: batches(fr, "orders"), "the batch pushed after the restart")
    assert all(i > first for i in ids_of(r.frames)), r.frames
    assert not [f for f in r.frames if f.get("event") == "gap"], r.frames
    assert got[0][1]["rows"] == 1
    # the restart itself is in the feed too
    r.wait(lambda fr: [f for f in fr if f.get("event") == "restart"], "the gateway's restart")


def test_client_limit_and_quiet_stream(make_fzxd, clients):
    # an idle_timeout shorter than the keep-alive: a silent healthy stream
    # is not closed by it (no read timeout on a stream; writes complete)
    z = make_fzxd({"orders": {}}, http_extra="idle_timeout: 2s")
    quiet = clients(z.port, z.token, path="/api/feed?since=now")
    assert quiet.read_head() == 200
    many = []
    for _ in range(63):
        c = clients(z.port, z.token, path="/api/feed?since=now")
        assert c.read_head() == 200, c.body
        many.append(c)
    # the 65th: 503 with Retry-After
    extra = clients(z.port, z.token, path="/api/feed?since=now")
    assert extra.read_head() == 503, extra.body
    assert int(extra.headers["retry-after"]) > 0, extra.headers
    # other routes are not affected
    z.push_ok("orders", [{"id": uid(), "n": 1}], wait_commit=True)
    for c in many[:63:9]:
        c.wait(lambda fr: batches(fr, "orders"), "a batch on one of 64 clients")
    # one leaves: room for another
    many[0].close()
    wait_for(lambda: clients(z.port, z.token, path="/api/feed?since=now").read_head() == 200,
             "a feed client accepted once one left", deadline=30)
    # 16 s of silence: a keep-alive comment, and the stream still works
    quiet.wait(lambda fr: [f for f in fr if f.get("comment") == "keepalive"],
               "a keep-alive after 15 s of silence", timeout=25)
    assert not quiet.eof
    z.push_ok("orders", [{"id": uid(), "n": 2}], wait_commit=True)
    quiet.wait(lambda fr: len(batches(fr, "orders")) >= 2, "both batches on the quiet client")
