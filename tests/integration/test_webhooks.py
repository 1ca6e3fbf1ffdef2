"""Pushes signed the Standard Webhooks way (`webhook_secret`): what
Debezium Server's http sink sends with authentication.type=standard-webhooks
(tests/services/debezium uses it against a real Debezium Server; see
test_debezium_server.py), and Svix and others.  The signatures here are
made with Python's hmac, independently of zx's C.

Each test asserts what a sender relies on: a signed push is written once,
anything unsigned, re-signed, tampered with or replayed late is a 401 with
the reason and writes nothing, and unproven bodies cannot take the room of
authenticated pushes."""

import base64
import gzip
import hashlib
import hmac
import json
import socket
import time

import pytest

from conftest import uid, wait_for

SECRET_BYTES = bytes(range(1, 33))
SECRET = "whsec_" + base64.b64encode(SECRET_BYTES).decode()
OTHER = "whsec_" + base64.b64encode(bytes(range(101, 133))).decode()
MiB = 1024 * 1024

PIPES = {
    "wh": {"key_ref": "none", "extra": {"webhook_secret": f'"{SECRET}"'}},   # signed only
    "whk": {"extra": {"webhook_secret": f'"{SECRET}"'}},                    # signed or key
}


@pytest.fixture(scope="module")
def z(module_zxd):
    return module_zxd(PIPES)


def sign(body, msg_id, ts, secret=SECRET):
    key = base64.b64decode(secret[len("whsec_"):])
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def signed_headers(body, msg_id=None, ts=None, secret=SECRET):
    msg_id = msg_id or f"msg_{uid()}"
    ts = str(int(time.time()) if ts is None else ts)
    return {"webhook-id": msg_id, "webhook-timestamp": ts,
            "webhook-signature": sign(body, msg_id, ts, secret)}


def rows(tag, n):
    return [{"id": uid(), "tag": tag, "n": i} for i in range(n)]


def tagged(z, table, tag):
    if not z.table_exists(table):
        return 0
    return z.count(table, "tag = ?", (tag,))


def push_signed(z, name, body, headers, **kw):
    return z.push(name, body=body, auth=False, headers=headers, **kw)


def sentinel(z, name):
    body = json.dumps(rows("sentinel-" + uid(), 1)).encode()
    r = push_signed(z, name, body, signed_headers(body), wait_commit=True)
    assert r.status == 202, r


def test_signed_push_is_written(z):
    tag = uid()
    body = json.dumps(rows(tag, 3)).encode()
    r = push_signed(z, "wh", body, signed_headers(body), wait_commit=True)
    assert r.status == 202 and r.json["accepted"] == 3, r
    assert tagged(z, "wh", tag) == 3
    # several v1 signatures (a sender rotating its secret): one matching is enough
    body = json.dumps(rows(tag, 2)).encode()
    h = signed_headers(body)
    h["webhook-signature"] = sign(body, h["webhook-id"], h["webhook-timestamp"], OTHER) + \
        " " + h["webhook-signature"]
    r = push_signed(z, "wh", body, h, wait_commit=True)
    assert r.status == 202, r
    assert tagged(z, "wh", tag) == 5


def test_signed_gzip_push_is_checked_on_the_inflated_body(z):
    tag = uid()
    body = json.dumps(rows(tag, 4)).encode()
    r = push_signed(z, "wh", body, signed_headers(body), gzip=True, wait_commit=True)
    assert r.status == 202, r
    assert tagged(z, "wh", tag) == 4


@pytest.mark.parametrize("fault", ["tampered", "other_secret", "other_id", "other_ts",
                                   "garbage", "v2_only"])
def test_a_bad_signature_is_401_and_writes_nothing(z, fault):
    tag = uid()
    body = json.dumps(rows(tag, 2)).encode()
    h = signed_headers(body)
    if fault == "tampered":
        body = body.replace(b'"n": 1', b'"n": 7')
    elif fault == "other_secret":
        h["webhook-signature"] = sign(body, h["webhook-id"], h["webhook-timestamp"], OTHER)
    elif fault == "other_id":
        h["webhook-id"] = "msg_" + uid()
    elif fault == "other_ts":
        h["webhook-timestamp"] = str(int(h["webhook-timestamp"]) - 1)
    elif fault == "garbage":
        h["webhook-signature"] = "v1,!!!not-base64 v1 ,"
    else:
        h["webhook-signature"] = "v2" + h["webhook-signature"][2:]
    r = push_signed(z, "wh", body, h)
    assert r.status == 401, r
    assert "webhook-signature does not match the body for stream wh" in r.json["error"], r
    sentinel(z, "wh")
    assert tagged(z, "wh", tag) == 0


@pytest.mark.parametrize("shift,word", [(-600, "behind"), (+600, "ahead of")])
def test_a_replay_outside_five_minutes_is_refused(z, shift, word):
    tag = uid()
    body = json.dumps(rows(tag, 1)).encode()
    r = push_signed(z, "wh", body, signed_headers(body, ts=int(time.time()) + shift))
    assert r.status == 401, r
    assert f"s {word} zx's clock (at most 300 s either way" in r.json["error"], r
    sentinel(z, "wh")
    assert tagged(z, "wh", tag) == 0


def test_missing_or_malformed_headers(z):
    body = b'{"a": 1}'
    h = signed_headers(body)
    del h["webhook-id"]
    r = push_signed(z, "wh", body, h)
    assert r.status == 401 and "missing: webhook-id" in r.json["error"], r
    h = signed_headers(body)
    h["webhook-timestamp"] = "yesterday"
    r = push_signed(z, "wh", body, h)
    assert r.status == 401 and "Unix seconds" in r.json["error"], r
    # no key configured: a Bearer token opens nothing
    r = z.push("wh", [{"a": 1}], key="anything")
    assert r.status == 401 and "wrong key for stream wh" in r.json["error"], r
    r = z.push("wh", [{"a": 1}], auth=False)
    assert r.status == 401 and "'webhook-signature'" in r.json["error"], r


def test_the_webhook_id_makes_retries_idempotent(z):
    """A sender retries with the same webhook-id (a new timestamp and
    signature): the rows are written once."""
    tag = uid()
    body = json.dumps(rows(tag, 3)).encode()
    mid = f"msg_{uid()}"
    r1 = push_signed(z, "wh", body, signed_headers(body, msg_id=mid), wait_commit=True)
    r2 = push_signed(z, "wh", body, signed_headers(body, msg_id=mid, ts=int(time.time()) - 5),
                     wait_commit=True)
    assert r1.status == r2.status == 202, (r1, r2)
    assert r1.json["accepted"] == r2.json["accepted"] == 3, (r1, r2)
    assert tagged(z, "wh", tag) == 3


def test_a_replayed_push_is_written_once_whatever_its_idempotency_key(z):
    """Someone who saw a signed push sends it again within the 5 minutes,
    adding an Idempotency-Key (headers other than the three are not
    signed): the webhook-id still decides, and the rows are written once."""
    tag = uid()
    body = json.dumps(rows(tag, 2)).encode()
    h = signed_headers(body)
    r1 = push_signed(z, "wh", body, h, wait_commit=True)
    assert r1.status == 202, r1
    for other in ("replay-1", "replay-2"):
        r = push_signed(z, "wh", body, dict(h, **{"Idempotency-Key": other}), wait_commit=True)
        assert r.status == 202 and r.json["accepted"] == 2, r
        assert r.headers.get("idempotent-replayed") == "true", r
    sentinel(z, "wh")
    assert tagged(z, "wh", tag) == 2


def test_key_and_signature_both_open_a_stream_that_has_both(z):
    tag = uid()
    r = z.push("whk", rows(tag, 2), wait_commit=True)            # Bearer key
    assert r.status == 202, r
    body = json.dumps(rows(tag, 1)).encode()
    r = push_signed(z, "whk", body, signed_headers(body), wait_commit=True)
    assert r.status == 202, r
    assert tagged(z, "whk", tag) == 3


def test_unproven_bodies_cannot_crowd_out_authenticated_pushes(make_zxd):
    """max_held_bytes 8 MiB: bodies whose signature is not checked yet hold
    at most 2 MiB between them.  Two signed pushes announcing 1.5 MiB each,
    their bodies never finished: the second is refused (503), and a pushe
    with the key of 3 MiB still goes through meanwhile."""
    z = make_zxd({"both": {"extra": {"webhook_secret": f'"{SECRET}"'}}}, max_body_size="4MiB",
                 http_extra="max_held_bytes: 8MiB\nbody_timeout: 10m\nidle_timeout: 10m")
    z.wait_running("both")
    socks = []
    try:
        answers = []
        for _ in range(2):
            s = socket.create_connection(("127.0.0.1", z.port), timeout=30)
            socks.append(s)
            h = signed_headers(b"[]")      # the body never arrives: no signature will do
            head = ("POST /api/streams/both/push HTTP/1.1\r\nHost: x\r\n"
                    "Content-Type: application/json\r\n"
                    f"Content-Length: {3 * MiB // 2}\r\n"
                    + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n").encode()
            s.sendall(head + b"[" + b" " * 1000)
        # the second was refused at once; the first waits for its body
        s2 = socks[1]
        s2.settimeout(30)
        a = s2.recv(65536)
        answers.append(a)
        assert a.startswith(b"HTTP/1.1 503 "), a[:300]
        tag = uid()
        big = [{"id": uid(), "tag": tag, "pad": "x" * 1000} for _ in range(3000)]   # ~3 MiB
        r = z.push("both", big, wait_commit=True)
        assert r.status == 202, r
        assert tagged(z, "both", tag) == 3000
    finally:
        for s in socks:
            s.close()
    # the held bytes are given back: a signed push works again
    body = json.dumps(rows("after", 1)).encode()
    wait_for(lambda: push_signed(z, "both", body, signed_headers(body)).status == 202,
             "a signed push accepted once the holders left")
