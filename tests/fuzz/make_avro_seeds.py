#!/usr/bin/env python3
"""Makes the seeds of tests/fuzz/corpus/avro again (fuzz_avro.c reads them).

Usage: tests/fuzz/make_avro_seeds.py   (needs fastavro from PyPI)

Mode 0 and 1 seeds are datums of the two schemas written in fuzz_avro.c
(read from its C string constants, so there is one copy of each), encoded
by fastavro; mode 2 seeds are the schemas and datums of tests/corpus/avro
framed as [2][length, 2 bytes little-endian][schema][datum], plus a few
schemas alone.  Saved crash reproducers live in the same folder (crash-*).
"""
import io
import json
import os
import re
import struct

import fastavro

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "avro")
FIXTURES = os.path.join(HERE, "..", "corpus", "avro")


def c_string(src, name):
    """The value of `static const char name[] = "..." "...";` in src."""
    m = re.search(r"static const char %s\[\] =\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+);" % name, src)
    parts = re.findall(r"\"((?:[^\"\\]|\\.)*)\"", m.group(1))
    return "".join(p.encode().decode("unicode_escape") for p in parts)


def enc(schema, datum):
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(strip(schema)), datum)
    return buf.getvalue()


def strip(s):
    if isinstance(s, dict):
        return {k: strip(v) for k, v in s.items() if k != "logicalType"}
    if isinstance(s, list):
        return [strip(v) for v in s]
    return s


def save(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(OUT, exist_ok=True)
    src = open(os.path.join(HERE, "fuzz_avro.c")).read()
    dbz = json.loads(c_string(src, "debezium_schema"))
    mixed = json.loads(c_string(src, "mixed_schema"))

    value = {"id": 7, "s": "h\u00e9", "i8": -5, "i16": 300, "dec": b"\x00\x30\x39",
             "vdec": {"scale": 1, "value": b"\xff"}, "ts": 1700000000000000,
             "zts": "2024-01-01T00:00:00Z", "js": "{}", "en": "a", "f": 0.5, "d": -1e300,
             "b": True, "raw": b"\x00\x01", "date": 1, "tms": 2, "tus": 3, "tsms": 4, "tsus": 5,
             "u": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "fd": b"\xff" * 7 + b"\x01"}
    empty = dict((k, None) for k in value)
    empty.update({"id": 1, "i8": 0, "en": None, "raw": b"", "date": 0, "tms": 0, "tus": 0,
                  "tsms": 0, "tsus": 0, "u": "", "fd": b"\x00" * 8})
    source = {"version": "2.7", "ts_ms": 1, "table": "t"}
    for i, ev in enumerate([
            {"before": None, "after": value, "source": source, "op": "c", "ts_ms": 9},
            {"before": value, "after": empty, "source": source, "op": "u", "ts_ms": None},
            {"before": empty, "after": None, "source": source, "op": "d", "ts_ms": 1}]):
        save("dbz_%d" % i, b"\x00" + enc(dbz, ev))

    for i, m in enumerate([
            {"a": [None, 1, 5], "m": {"k": [1, 2], "": []}, "e": "Z", "z": [b"", b""],
             "u": {"v": 1.5}, "x": b"abc"},
            {"a": [], "m": {}, "e": "X", "z": [], "u": True, "x": b"\x00\x00\x00"},
            {"a": [2, 3], "m": {"a": [-1]}, "e": "Y", "z": [], "u": "Y", "x": b"xyz"},
            {"a": [1, "two"], "m": {}, "e": "Y", "z": [], "u": 2.5, "x": b"xyz"}]):
        save("mixed_%d" % i, b"\x01" + enc(mixed, m))
    # a sized block (negative count, then the block's byte size): [1, 2]
    save("mixed_sized", b"\x01" + b"\x03\x08\x02\x02\x02\x04\x00" + b"\x00" + b"\x00" +
         b"\x00" + b"\x00\x00" + b"abc")

    for f in sorted(os.listdir(FIXTURES)):
        if not f.endswith(".bin"):
            continue
        schema = open(os.path.join(FIXTURES, f.rsplit("_", 1)[0] + ".avsc"), "rb").read()
        schema = json.dumps(json.loads(schema), separators=(",", ":")).encode()
        datum = open(os.path.join(FIXTURES, f), "rb").read()
        save("text_" + f[:-4], b"\x02" + struct.pack("<H", len(schema)) + schema + datum)
    for i, (s, d) in enumerate([
            ('"long"', b"\x02"), ('["null","string"]', b"\x02\x02a"),
            ('{"type":"map","values":["int","null"]}', b"\x02\x02k\x00\x02\x00"),
            ('{"type":"record","name":"L","fields":[{"name":"n","type":["null","L"]}]}', b""),
            ('{"type":"enum","name":"E","symbols":["A"],"connect.parameters":{"k":"v"}}', b"\x00"),
            ('{"type":"fixed","name":"F","size":2,"logicalType":"decimal","precision":4}',
             b"\xff\x80")]):
        b = s.encode()
        save("schema_%d" % i, b"\x02" + struct.pack("<H", len(b)) + b + d)


if __name__ == "__main__":
    main()
