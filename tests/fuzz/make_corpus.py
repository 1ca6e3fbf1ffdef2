#!/usr/bin/env python3
"""make_corpus.py - writes the seed corpora of the fuzz targets into
tests/fuzz/corpus/<target>/seed-*: small valid and near-valid inputs made by
hand.  Run it again after changing a record layout (proto/push.h) or the
input conventions of a target (the byte 0 / byte 1 flags documented at the
top of each fuzz_*.c).  Reproducers of fixed crashes live next to the seeds
as crash-* files and are never rewritten here.
"""
import gzip
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- a minimal MessagePack writer (only what frames use) -----------------
def mp(v):
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        if 0 <= v < 2**64:
            return b"\xcf" + struct.pack(">Q", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        v = v.encode()
        return (bytes([0xA0 | len(v)]) if len(v) < 32 else b"\xd9" + bytes([len(v)])) + v
    if isinstance(v, bytes):
        return b"\xc4" + bytes([len(v)]) + v
    if isinstance(v, Ext):
        return b"\xc7" + bytes([len(v.data)]) + struct.pack("b", v.type) + v.data
    if isinstance(v, list):
        return b"\xdc" + struct.pack(">H", len(v)) + b"".join(mp(x) for x in v)
    if isinstance(v, dict):
        return (b"\xde" + struct.pack(">H", len(v)) +
                b"".join(mp(k) + mp(x) for k, x in v.items()))
    raise TypeError(v)


class Ext:
    def __init__(self, t, data):
        self.type, self.data = t, data


def ts(us, text):
    return Ext(1, struct.pack(">q", us) + text.encode())


def frame(meta, cols, rows, rejects=(), pipeline="web", table="events", version=2, kind=1):
    """A frame of proto/frame.h, version 2: rejects are [reason, raw, key, position]."""
    return mp(["ZXF", version, kind, pipeline, table, meta, cols, rows, list(rejects)])


def frame_v1(meta, cols, rows, pipeline="web", table="events"):
    """A frame of the previous format (version 1, 8 elements): must be refused."""
    return mp(["ZXF", 1, 1, pipeline, table, meta, cols, rows])


# ---- push records (proto/push.h, x86-64 host order) ----------------------
REQ_MAGIC, REP_MAGIC = 0x5A585051, 0x5A585052


def push_req(body, flags=0, idem=b"", rid=b"r-1", req_id=7, body_len=None, version=1):
    bl = len(body) if body_len is None else body_len
    h = struct.pack("<IHHQqHHIQq", REQ_MAGIC, version, flags, req_id, 1764500000000000,
                    len(idem), len(rid), 0, bl, 0)
    return b"\0" + h + idem + rid + body


def push_rep(body, status=202, body_len=None):
    bl = len(body) if body_len is None else body_len
    return b"\1" + struct.pack("<IHHQIIII", REP_MAGIC, 1, status, 7, 0, bl, 0, 0) + body


def http(stream, mode=0, piece=0):
    return bytes([mode, piece]) + stream


def chunked(parts):
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


# ---- Kafka messages (the input layout at the top of fuzz_kafka_batch.c) -----
def kafka(msgs, meta=0xF, limit=0, lparam=0):
    """msgs: dicts of key, payload (None: tombstone), topic 0-3, part 0-7, off 0-7,
    ts 0-7, prm (byte), kind (payload kind 0-3), huge_key.  One message:
    the payload is the rest of the input; several: each has its length."""
    multi = len(msgs) != 1
    out = bytes([(meta & 15) | (limit << 4) | (multi << 6), lparam])
    for m in msgs:
        key, payload = m.get("key"), m.get("payload", b"")
        h0 = ((key is not None) | (payload is None) << 1 | m.get("huge_key", 0) << 2 |
              m.get("kind", 0) << 4 | m.get("topic", 0) << 6)
        h1 = m.get("part", 0) | m.get("off", 0) << 3
        key, payload = key or b"", payload or b""
        out += bytes([h0, h1, m.get("ts", 2), len(key), m.get("prm", 0)])
        if multi:
            out += struct.pack("<H", len(payload))
        out += key + payload
    return out


def main():
    ev = b'{"user":"ann","n":1,"ok":true,"at":"2026-11-30T16:00:00Z","o":{"a":[1,2]}}'
    nd = ev + b"\n" + b'{"user":"bob","n":2.5}\n'
    gz = gzip.compress(nd, mtime=0)
    post = b"POST /api/streams/web/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"
    seeds = {
        "frame": {
            "rows": frame({"ia": 1764500000000000, "bi": "r-1", "ac": 2, "md": 3},
                          [["user", 4], ["n", 1], ["at", 5], ["o", 6], ["ok", 3], ["x", 2]],
                          [["ann", 1, ts(1764500000000000, "2026-11-30T16:00:00Z"),
                            Ext(2, b'{"a":1}'), True, 1.5],
                           [None, -5, None, None, False, float("inf")]]),
            "meta-all": frame({"ia": -1, "bi": "abc", "dk": "key-1", "dh": 2**63 + 5,
                               "ac": 1, "md": 1,
                               "po": [["clicks:0", b"\x00\x01pos"], ["clicks:1", b""]],
                               "zz": [1, {"q": None}]},
                              [["a", 1]], [[2**62]],
                              [["not JSON", b"{\x00\xff", b"k\x001",
                                '{"topic":"t","partition":3,"offset":42}'],
                               ["not an object", b"[1]", None, ""]]),
            "empty": frame({}, [], []),
            "nil-meta": frame({"bi": None, "dk": None, "po": None}, [["a", 0]], [[None]]),
            "positions": frame({"po": [["clicks:0", struct.pack(">q", 42)],
                                       ["r\u00e9gion:\u2713", b"\x00"], ["empty", b""]]},
                               [["a", 1]], [[1]]),
            "rejects": frame({"bi": "b-1"}, [], [],
                             [["not JSON", b"\x00\x01{", None, '{"offset":1}'],
                              ["too deep", b"[[[[", b"", '{"offset":2}'],
                              ["", b"", b"\x00key", ""]]),
            "changes": frame({"kc": ["id"], "st": [["id", "bigint"], ["p", "numeric(10,2)"]],
                              "hi": 1, "po": [["slot", b"\x00\x00\x00\x16\xb3\x74\xd8\x48"]]},
                             [["_zx_op", 4], ["_zx_lsn", 4], ["_zx_xid", 1], ["id", 1],
                              ["p", 4], ["_zx_unchanged", 6], ["_zx_old:id", 1]],
                             [["update", "16/B374D848", 733, 7, "1.50", Ext(2, b'["b"]'), 6],
                              ["delete", "16/B374D900", 734, 8, None, None, None],
                              ["truncate", "16/B374DA00", 735, None, None, None, None]],
                             kind=2),
            "big-uint": frame({}, [["a", 1]], [[2**63]]),
            "bad-version": frame({}, [], [], version=1),
            "v1-frame": frame_v1({"rq": "r-1", "po": b"\x01"}, [["a", 1]], [[1]]),
            "dup-cols": frame({}, [["a", 1], ["a", 2]], [[1, 2]]),
            "short-row": frame({}, [["a", 1], ["b", 1]], [[1]]),
            "bad-ext": frame({}, [["a", 5]], [[Ext(1, b"\0\0")]]),
            "bad-position": frame({"po": [["clicks:0", b"\x01", b"extra"]]}, [], []),
            "po-bin": frame({"po": b"\x00\x01pos"}, [], []),
            "bad-reject": frame({}, [], [], [["reason", b"raw", None]]),
            "reject-key-str": frame({}, [], [], [["reason", b"raw", "key", "{}"]]),
            "no-rejects": mp(["ZXF", 2, 1, "web", "events", {}, [], []]),
            "trailing": frame({}, [], []) + b"\x00",
        },
        "push": {
            "json": push_req(b'[' + ev + b',{"n":3}]'),
            "ndjson": push_req(nd, flags=2, idem=b"idem-1"),
            "wait-commit": push_req(b'{"a":1}', flags=1, rid=b""),
            "empty-body": push_req(b"", rid=b"x" * 64),
            "bad-json": push_req(b'{"a":', flags=2),
            "long-body-len": push_req(b'{"a":1}', body_len=2**64 - 1),
            "bad-version": push_req(b'{"a":1}', version=2),
            "idem-too-long": push_req(b"{}", idem=b"k" * 256),
            "reply": push_rep(b'{"accepted":2,"request_id":"r-1"}'),
            "reply-empty": push_rep(b"", status=503),
            "reply-short": push_rep(b"{}", body_len=3),
        },
        "http": {
            "post": http(post + b"Content-Length: %d\r\n\r\n%s" % (len(ev), ev)),
            "post-pieces": http(post + b"Content-Length: %d\r\n\r\n%s" % (len(ev), ev), 1, 4),
            "chunked": http(post + b"Transfer-Encoding: chunked\r\n\r\n" +
                            chunked([ev[:10], ev[10:]]), 1, 3),
            "gzip": http(post + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(gz)
                         + gz, 0, 6),
            "gzip-chunked": http(post + b"Content-Encoding: gzip\r\n"
                                 b"Transfer-Encoding: chunked\r\n\r\n" + chunked([gz]), 1),
            "continue": http(post + b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n{}", 3),
            "pipelined": http(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
                              b"GET /api/streams?x=%41+b&wait=commit HTTP/1.1\r\nHost: a\r\n\r\n"
                              b"HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 1, 2),
            "deny": http(b"POST /deny/x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
                         b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 4),
            "too-big": http(post + b"Content-Length: 9000\r\n\r\n" + b"x" * 100, 2),
            "smuggle": http(post + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"0\r\n\r\n"),
            "cl-overflow": http(post + b"Content-Length: 18446744073709551617\r\n\r\n{}"),
            "chunk-ext": http(post + b"Transfer-Encoding: chunked\r\n\r\n"
                              b"2;ext=1\r\n{}\r\n0\r\nX-Trailer: 1\r\n\r\n", 1, 1),
            "absolute": http(b"OPTIONS http://h:1/p?q=1 HTTP/1.1\r\nHost: h\r\n\r\n"
                             b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", 8),
            "version": http(b"GET / HTTP/1.9\r\nHost: a\r\n\r\nGET / HTTP/2.0\r\n\r\n"),
            "bad-te": http(post + b"Transfer-Encoding: gzip, chunked\r\n\r\n"),
            "bad-ce": http(post + b"Content-Encoding: br\r\nContent-Length: 1\r\n\r\nx"),
            "leading-crlf": http(b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n"),
            "client-closes": http(post + b"Content-Length: 100\r\n\r\n{", 9, 1),
        },
        "json_rows": {
            "obj": b"\0" + ev,
            "ndjson": b"\1" + nd,
            "array": b"\0[" + ev + b",{\"n\":-9223372036854775808}]",
            "bad": b"\0{\"a\":1e999999,\"b\":-99999999999999999999}",
        },
    }
    seeds["kafka_batch"] = {
        "object": kafka([{"key": b"user-1", "payload": ev}]),
        "array": kafka([{"key": b"k", "payload": b'[' + ev + b',{"n":3},{"_key":"x"}]',
                         "part": 1, "off": 2, "prm": 41}]),
        "not-json": kafka([{"key": b"k", "payload": b"hello, {world"}]),
        "number": kafka([{"payload": b"42", "ts": 0}]),
        "empty": kafka([{"key": b"", "payload": b""}]),
        "empty-array": kafka([{"payload": b" [ ] "}], meta=0),
        "tombstone": kafka([{"key": b"gone", "payload": None, "off": 2, "prm": 9}]),
        "huge-key": kafka([{"key": b"K", "huge_key": 1, "payload": b"{not json"},
                           {"key": b"key", "huge_key": 1, "payload": b'{"a":1}'}]),
        "huge-payload": kafka([{"key": b"k", "payload": b'{"a":"x"', "kind": 1}]),
        "bad-utf8": kafka([{"key": b"\xff\xfe\x00k", "payload": b'{"a":"\xc3\x28\xed\xa0\x80",'
                                                              b'"\xf5b":1}'},
                           {"payload": b"\xc3\x28"}]),
        "nested-deep": kafka([{"payload": b'{"a":' + b"[" * 70 + b"]" * 70 + b"}"},
                              {"payload": b'{"a":1}', "kind": 3, "prm": 200},
                              {"payload": b"{}", "kind": 3, "prm": 2}]),
        "wide": kafka([{"payload": b"", "kind": 2, "prm": 100},
                       {"payload": b"", "kind": 2, "prm": 100},
                       {"payload": b"", "kind": 2, "prm": 130}]),
        "batch": kafka([{"key": b"a", "payload": ev, "part": 0},
                        {"key": b"b", "payload": b'{"n":1}', "part": 1, "topic": 1},
                        {"payload": None, "part": 0},
                        {"payload": b"[1]", "part": 2, "topic": 2},
                        {"payload": b'{"n":2}', "part": 0, "off": 2, "prm": 7}],
                       meta=0xF),
        "extremes": kafka([{"key": b"x", "payload": b'{"a":1}', "part": 5, "off": 3, "ts": 3},
                           {"payload": b'{"a":2}', "part": 6, "off": 7, "ts": 4},
                           {"payload": b'{"a":3}', "part": 4, "off": 4, "ts": 5},
                           {"payload": b"nope", "part": 3, "prm": 0x80, "off": 5, "ts": 6},
                           {"payload": b'{"a":5}', "part": 5, "off": 6, "ts": 7}]),
        "small-limit": kafka([{"key": b"a", "payload": ev}, {"payload": ev},
                              {"payload": None}, {"payload": b"x" * 300}],
                             limit=1, lparam=20),
        "tiny-limit": kafka([{"payload": None}, {"payload": None, "part": 1}],
                            limit=1, lparam=0),
    }
    seeds["json_fast"] = {k: bytes([v[0] | 2]) + v[1:] if k == "obj" else v
                          for k, v in seeds["json_rows"].items()}
    for target, files in seeds.items():
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
