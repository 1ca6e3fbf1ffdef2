"""
HTTP push endpoint, end to end: every success and error case of
POST /api/streams/<name>/push, gzip, NDJSON, idempotency, "nothing written"
on every rejected request, back-pressure and /healthz.

Each test uses its own `tag` value so tests sharing the module's daemon
never count each other's rows.
"""

import gzip
import json
import os
import signal
import time

import pytest

from conftest import uid, wait_for, pid_alive

PIPES = {
    "ev": {"ack": "accepted"},                     # key through ${env:...}
    "evc": {"ack": "commit"},
    "evf": {"key_ref": "file"},                    # key through ${file:...}
    "evl": {"key_ref": "literal", "table": "evl_tab"},
}


@pytest.fixture(scope="module")
def z(module_zxd):
    return module_zxd(PIPES)


def rows(tag, n, **extra):
    return [dict({"id": uid(), "tag": tag, "n": i}, **extra) for i in range(n)]


def tagged(z, table, tag):
    return z.count(table, "tag = ?", (tag,))


def sentinel(z, name):
    """A committed push after everything sent before it: once it returns,
    anything accepted earlier on this stream's ring is committed too."""
    z.push_ok(name, rows("sentinel-" + uid(), 1), wait_commit=True)


def assert_error(r, status):
    assert r.status == status, f"expected {status}, got {r!r}"
    assert isinstance(r.json, dict) and isinstance(r.json.get("error"), str) \
        and r.json["error"], f"expected a JSON body with an 'error' field, got {r!r}"


# ---------------------------------------------------------------- successes

def test_object_202_then_visible(z):
    tag = uid()
    r = z.push_ok("ev", rows(tag, 1)[0])
    assert r.json["accepted"] == 1
    z.wait_count("ev", 1, "tag = ?", (tag,))
    assert tagged(z, "ev", tag) == 1


def test_array_202_accepted_count(z):
    tag = uid()
    r = z.push("ev", rows(tag, 7))
    assert r.status == 202, r
    assert r.json["accepted"] == 7, r
    z.wait_count("ev", 7, "tag = ?", (tag,))
    sentinel(z, "ev")
    assert tagged(z, "ev", tag) == 7


def test_ndjson_202(z):
    tag = uid()
    r = z.push("ev", rows(tag, 5), ndjson_body=True)
    assert r.status == 202, r
    assert r.json["accepted"] == 5, r
    z.wait_count("ev", 5, "tag = ?", (tag,))


def test_ndjson_without_trailing_newline(z):
    tag = uid()
    body = "\n".join(json.dumps(x) for x in rows(tag, 3))
    r = z.push("ev", body=body, content_type="application/x-ndjson")
    assert r.status == 202, r
    assert r.json["accepted"] == 3, r
    z.wait_count("ev", 3, "tag = ?", (tag,))


def test_wait_commit_visible_immediately(z):
    tag = uid()
    r = z.push("ev", rows(tag, 4), wait_commit=True)
    assert r.status == 202, r
    assert r.json["accepted"] == 4, r
    # No polling: ?wait=commit answers only after the commit.
    assert tagged(z, "ev", tag) == 4


def test_ack_commit_pipeline_visible_immediately(z):
    tag = uid()
    r = z.push("evc", rows(tag, 3))
    assert r.status == 202, r
    assert r.json["accepted"] == 3, r
    assert tagged(z, "evc", tag) == 3


def test_gzip_body(z):
    tag = uid()
    r = z.push("ev", rows(tag, 6), gzip=True, wait_commit=True)
    assert r.status == 202, r
    assert r.json["accepted"] == 6, r
    assert tagged(z, "ev", tag) == 6


def test_gzip_ndjson_body(z):
    tag = uid()
    r = z.push("ev", rows(tag, 2), gzip=True, ndjson_body=True, wait_commit=True)
    assert r.status == 202, r
    assert r.json["accepted"] == 2, r
    assert tagged(z, "ev", tag) == 2


def test_file_secret_key(z):
    tag = uid()
    r = z.push("evf", rows(tag, 2), wait_commit=True)
    assert r.status == 202, r
    assert tagged(z, "evf", tag) == 2


def test_literal_key_and_explicit_table(z):
    tag = uid()
    r = z.push("evl", rows(tag, 2), wait_commit=True)
    assert r.status == 202, r
    assert tagged(z, "evl_tab", tag) == 2


def test_values_round_trip(z):
    tag = uid()
    row = {"id": uid(), "tag": tag, "n": 42, "s": "héllo \"quoted\" \u2603"}
    z.push_ok("evc", row)
    got = z.query('SELECT n, s FROM evc WHERE tag = ?', (tag,))
    assert got == [(42, row["s"])]


# ------------------------------------------------------------------- errors
# For every rejected request: JSON body with "error", and nothing written
# (checked after a committed sentinel push on the same stream).

def test_missing_key_401(z):
    tag = uid()
    r = z.push("ev", rows(tag, 2), auth=False)
    assert_error(r, 401)
    sentinel(z, "ev")
    assert tagged(z, "ev", tag) == 0


def test_wrong_key_401(z):
    tag = uid()
    r = z.push("ev", rows(tag, 2), key="not-the-key")
    assert_error(r, 401)
    r = z.push("ev", rows(tag, 2), key=z.keys["evc"])      # another stream's key
    assert_error(r, 401)
    r = z.push("ev", rows(tag, 2), auth=False,
               headers={"Authorization": "Basic " + z.keys["ev"]})
    assert_error(r, 401)
    sentinel(z, "ev")
    assert tagged(z, "ev", tag) == 0


def test_unknown_stream_404(z):
    r = z.push("no_such_stream", rows(uid(), 1), key=z.keys["ev"])
    assert_error(r, 404)


def test_get_on_push_url_405(z):
    r = z.get("/api/streams/ev/push", headers={"Authorization": "Bearer " + z.keys["ev"]})
    assert_error(r, 405)


def test_malformed_json_400_names_byte(z):
    tag = uid()
    body = '[{"id": "x", "tag": "%s", "n": 1}, {"tag": "%s", "n": }]' % (tag, tag)
    r = z.push("ev", body=body)
    assert_error(r, 400)
    assert "byte" in r.json["error"].lower(), f"JSON error should name the byte offset: {r!r}"
    sentinel(z, "ev")
    assert tagged(z, "ev", tag) == 0


def test_malformed_ndjson_400_names_line(z):
    tag = uid()
    good = [json.dumps(x) for x in rows(tag, 4)]
    body = "\n".join([good[0], good[1], '{"tag": "broken", ', good[2], good[3]]) + "\n"
    r = z.push("ev", body=body, content_type="application/x-ndjson")
    assert_error(r, 400)
    assert "line 3" in r.json["error"], f"NDJSON error should say 'line 3': {r!r}"
    sentinel(z, "ev")
    assert tagged(z, "ev", tag) == 0, "rows of a rejected NDJSON body were written"


@pytest.mark.parametrize("body", ["42", '"a string"', "[1, 2]", '[{"a": 1}, 7]', "null"])
def test_not_objects_400(z, body):
    r = z.push("ev", body=body)
    assert_error(r, 400)


def test_body_over_limit_413(z):
    tag = uid()
    big = rows(tag, 1, pad="x" * 1024)
    big = big * 1200                                  # ~1.3 MB > 1 MiB
    r = z.push("ev", big)
    assert_error(r, 413)
    sentinel(z, "ev")
    assert tagged(z, "ev", tag) == 0


def test_gzip_bomb_413(z):
    tag = uid()
    body = json.dumps({"id": uid(), "tag": tag, "pad": "x" * (3 * 1024 * 1024)}).encode()
    small = gzip.compress(body)
    assert len(small) < 64 * 1024
    r = z.push("ev", body=small, headers={"Content-Encoding": "gzip"})
    assert_error(r, 413)
    sentinel(z, "ev")
    assert tagged(z, "ev", tag) == 0


def test_bad_gzip_is_4xx(z):
    r = z.push("ev", body=b"this is not gzip", headers={"Content-Encoding": "gzip"})
    assert 400 <= r.status < 500, r
    assert isinstance(r.json, dict) and "error" in r.json, r


# -------------------------------------------------------------- idempotency

def test_idempotency_wait_commit(z):
    tag, key = uid(), "idem-" + uid()
    body = rows(tag, 3)
    r1 = z.push("ev", body, idem=key, wait_commit=True)
    r2 = z.push("ev", body, idem=key, wait_commit=True)
    assert r1.status == 202, r1
    assert r2.status == r1.status, (r1, r2)
    assert r2.json["accepted"] == r1.json["accepted"] == 3, (r1, r2)
    assert tagged(z, "ev", tag) == 3


def test_idempotency_ack_accepted(z):
    tag, key = uid(), "idem-" + uid()
    body = rows(tag, 5)
    r1 = z.push("ev", body, idem=key)
    assert r1.status == 202, r1
    r2 = z.push("ev", body, idem=key)
    assert r2.status == 202, r2
    assert r2.json["accepted"] == r1.json["accepted"] == 5, (r1, r2)
    z.wait_count("ev", 5, "tag = ?", (tag,))
    r3 = z.push("ev", body, idem=key)             # after the commit too
    assert r3.status == 202 and r3.json["accepted"] == 5, r3
    sentinel(z, "ev")
    assert tagged(z, "ev", tag) == 5


def test_idempotency_ack_commit_pipeline(z):
    tag, key = uid(), "idem-" + uid()
    body = rows(tag, 2)
    r1 = z.push("evc", body, idem=key, ndjson_body=True)
    r2 = z.push("evc", body, idem=key, ndjson_body=True)
    assert (r1.status, r1.json["accepted"]) == (202, 2), r1
    assert (r2.status, r2.json["accepted"]) == (202, 2), r2
    assert tagged(z, "evc", tag) == 2


def test_idempotency_keys_are_distinct(z):
    tag = uid()
    body = rows(tag, 2)
    z.push_ok("ev", body, idem="idem-" + uid(), wait_commit=True)
    z.push_ok("ev", body, idem="idem-" + uid(), wait_commit=True)
    assert tagged(z, "ev", tag) == 4


def test_idempotency_error_replayed(z):
    key = "idem-" + uid()
    r1 = z.push("ev", body="{broken", idem=key)
    r2 = z.push("ev", body="{broken", idem=key)
    assert_error(r1, 400)
    assert_error(r2, 400)


# ------------------------------------------------------------------ healthz

def test_healthz_200_json(z):
    r = z.get("/healthz")
    assert r.status == 200, r
    assert isinstance(r.json, dict), f"/healthz should answer a JSON object: {r!r}"


# ------------------------------------------------------------ back-pressure

def test_backpressure_503_retry_after(make_zxd):
    """With the writer stopped (SIGSTOP) the ring fills; the gateway answers
    503 with Retry-After after backpressure_timeout; once the writer goes
    on, every 202 row is committed and no 503 row is."""
    z = make_zxd({"bp": {"ack": "accepted"}}, server_extra="ring_size: 4MiB",
                 backpressure_timeout="1s")
    writer = z.wait_running("writer")
    pad = "y" * 900
    ok_tags, bad_tags = [], []
    got503 = None
    os.kill(writer, signal.SIGSTOP)
    try:
        for i in range(200):                 # bounded: 200 x ~1 MB
            tag = uid()
            r = z.push("bp", [{"id": uid(), "tag": tag, "n": j, "pad": pad} for j in range(900)],
                       timeout=60)
            if r.status == 202:
                ok_tags.append(tag)
            elif r.status == 503:
                bad_tags.append(tag)
                got503 = r
                break
            else:
                pytest.fail(f"push {i}: unexpected answer {r!r}")
    finally:
        os.kill(writer, signal.SIGCONT)
    assert got503 is not None, f"no 503 after {len(ok_tags)} accepted ~1 MB pushes with the writer stopped"
    assert_error(got503, 503)
    ra = got503.headers.get("retry-after")
    assert ra is not None and ra.strip().isdigit(), f"503 without a numeric Retry-After: {got503.headers}"
    # Writer resumes: everything accepted gets committed, the 503 body never.
    for tag in ok_tags:
        z.wait_count("bp", 900, "tag = ?", (tag,))
    wait_for(lambda: z.push("bp", [{"id": uid(), "tag": "s", "n": 0}], wait_commit=True).status == 202,
             "a committed push after SIGCONT of the writer")
    for tag in bad_tags:
        assert tagged(z, "bp", tag) == 0, "rows of a 503 push were written"
    for tag in ok_tags:
        assert tagged(z, "bp", tag) == 900
    assert pid_alive(writer)


def test_idempotency_concurrent_duplicates(z):
    """The same request sent 4 times at once with one Idempotency-Key (a
    client retrying before the first answer): its rows land once."""
    import threading
    tag, key = uid(), "idem-" + uid()
    body = rows(tag, 10)
    answers = []

    def send():
        answers.append(z.push("ev", body, idem=key, wait_commit=True))
    ts = [threading.Thread(target=send) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert len(answers) == 4
    for r in answers:
        assert (r.status == 202 and r.json.get("accepted") == 10) or \
            (r.status in (409, 503) and isinstance(r.json, dict) and "error" in r.json), r
    assert any(r.status == 202 for r in answers), answers
    # a retry after everything settled is answered as the first was
    r = z.push("ev", body, idem=key, wait_commit=True)
    assert r.status == 202 and r.json["accepted"] == 10, r
    sentinel(z, "ev")
    assert tagged(z, "ev", tag) == 10


def test_default_body_limit_16mib(make_zxd):
    """Without max_body_size the limit is 16 MiB: 2 MiB is accepted,
    17 MiB gets 413 and writes nothing."""
    z = make_zxd({"big": {"ack": "commit"}}, max_body_size=None)
    tag = uid()
    pad = "z" * 1000
    r = z.push("big", [{"tag": tag, "n": i, "pad": pad} for i in range(2000)])   # ~2 MiB
    assert r.status == 202 and r.json["accepted"] == 2000, r
    assert tagged(z, "big", tag) == 2000
    tag2 = uid()
    body = json.dumps([{"tag": tag2, "n": i, "pad": pad} for i in range(17 * 1024)])  # ~17 MiB
    assert len(body) > 16 * 1024 * 1024
    r = z.push("big", body=body)
    assert_error(r, 413)
    z.push_ok("big", {"tag": "sentinel"})
    assert tagged(z, "big", tag2) == 0


def test_gateway_bounds_memory_of_announced_bodies(make_zxd):
    """Bodies are held by the gateway until answered: whatever the number of
    connections, their announced sizes may not pass max(256 MiB, 4 x the
    body limit).  Four clients announce 60 MiB each and send nothing; the
    fifth is answered 503 with Retry-After at once, and a small push still
    goes through after the four leave."""
    import socket
    z = make_zxd({"mem": {}}, max_body_size="64MiB", server_extra="ring_size: 256MiB")
    z.wait_running("mem")
    head = (f"POST /api/streams/mem/push HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {z.keys['mem']}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {60 * 1024 * 1024}\r\n\r\n").encode()
    holders = []
    try:
        for _ in range(4):
            s = socket.create_connection(("127.0.0.1", z.port), timeout=10)
            s.sendall(head)
            holders.append(s)
        # once the gateway has read the four heads, a fifth is refused at
        # once (a fifth let through would wait for its body: retry then)
        def fifth_refused():
            fifth = socket.create_connection(("127.0.0.1", z.port), timeout=10)
            fifth.settimeout(2)
            try:
                fifth.sendall(head)
                return fifth.recv(4096).decode("latin-1")
            except socket.timeout:
                return None
            finally:
                fifth.close()
        answer = wait_for(fifth_refused, "a fifth announced body to be refused")
        assert answer.startswith("HTTP/1.1 503"), answer
        assert "retry-after:" in answer.lower(), answer
        assert "too many request bodies" in answer, answer
    finally:
        for s in holders:
            s.close()
    wait_for(lambda: z.push("mem", {"n": 1}, wait_commit=True).status == 202,
             "a push once the announced bodies are gone")
