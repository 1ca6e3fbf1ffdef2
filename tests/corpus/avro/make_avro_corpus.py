#!/usr/bin/env python3
"""Makes the Avro fixtures of tests/corpus/avro again (test_avro_connect.c
reads them; zx's own decoder has no part in making them).

Usage: tests/corpus/avro/make_avro_corpus.py   (needs fastavro from PyPI)

For each case NAME it writes
  NAME.avsc   the Avro writer schema, as Debezium's AvroConverter (Confluent's
              AvroData) writes it for a MySQL table: connect.name,
              connect.version, connect.parameters, connect.default, and, in
              logical.avsc, plain Avro logical types of other producers
  NAME_K.bin  a datum, encoded by fastavro (schemaless: no container file,
              no wire-format prefix)
  NAME_K.json what Kafka Connect's JsonConverter (schemas.enable=true) writes
              for that event, {"schema": ..., "payload": ...}, written out
              here by hand from the Connect and JsonConverter rules: the
              oracle the test compares with (the schema's text byte for
              byte, key order included; the payload as JSON values)
The datums are written with the logicalType properties removed (same bytes),
so that decimals can be given in padded forms that must be normalised.
"""
import base64
import copy
import io
import json
import os
import struct

import fastavro

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, obj):
    with open(os.path.join(HERE, name), "w") as f:
        f.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=True) + "\n")


def strip_logical(s):
    """The schema with every logicalType removed (the same binary form)."""
    if isinstance(s, dict):
        return {k: strip_logical(v) for k, v in s.items() if k != "logicalType"}
    if isinstance(s, list):
        return [strip_logical(v) for v in s]
    return s


def encode(schema, datum):
    parsed = fastavro.parse_schema(strip_logical(copy.deepcopy(schema)))
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed, datum)
    return buf.getvalue()


def b64(b):
    return base64.b64encode(b).decode()


def java_bytes(n):
    """BigInteger.toByteArray(): the fewest two's-complement bytes."""
    bits = (n if n >= 0 else ~n).bit_length()
    return n.to_bytes(bits // 8 + 1, "big", signed=True)


def f32(x):
    """The float32 nearest x, as Java's Float.toString then a double reads it."""
    v = struct.unpack("<f", struct.pack("<f", x))[0]
    for p in range(1, 10):
        t = "%.*g" % (p, v)
        if struct.unpack("<f", struct.pack("<f", float(t)))[0] == v:
            return float(t)
    return v


# ---- the Debezium envelope ------------------------------------------------

def opt(t, default=None):
    return ["null", t]


DECIMAL = {"type": "bytes", "scale": 2, "precision": 10, "connect.version": 1,
           "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
           "connect.name": "org.apache.kafka.connect.data.Decimal", "logicalType": "decimal"}

VALUE = {
    "type": "record", "name": "Value", "namespace": "dbserver1.inventory.customers",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": opt("string"), "default": None},
        {"name": "big", "type": opt("long"), "default": None},
        {"name": "small", "type": opt({"type": "int", "connect.type": "int16"}), "default": None},
        {"name": "tiny", "type": {"type": "int", "connect.type": "int8"}},
        {"name": "price", "type": opt(DECIMAL), "default": None},
        {"name": "vdec", "type": opt({
            "type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
            "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
            "connect.doc": "Variable scaled decimal", "connect.version": 1,
            "connect.name": "io.debezium.data.VariableScaleDecimal"}), "default": None},
        {"name": "created", "type": opt({"type": "long", "connect.version": 1,
                                         "connect.name": "io.debezium.time.MicroTimestamp"}),
         "default": None},
        {"name": "zoned", "type": opt({"type": "string", "connect.version": 1,
                                       "connect.name": "io.debezium.time.ZonedTimestamp"}),
         "default": None},
        {"name": "doc", "type": opt({"type": "string", "connect.version": 1,
                                     "connect.name": "io.debezium.data.Json"}), "default": None},
        {"name": "uid", "type": opt({"type": "string", "connect.version": 1,
                                     "connect.name": "io.debezium.data.Uuid"}), "default": None},
        {"name": "color", "type": opt({"type": "string", "connect.version": 1,
                                       "connect.parameters": {"allowed": "red,green,blue"},
                                       "connect.name": "io.debezium.data.Enum"}),
         "default": None},
        {"name": "birthday", "type": opt({"type": "int", "connect.version": 1,
                                          "connect.name": "io.debezium.time.Date"}),
         "default": None},
        {"name": "flag", "type": opt("boolean"), "default": None},
        {"name": "ratio", "type": opt("float"), "default": None},
        {"name": "score", "type": opt("double"), "default": None},
        {"name": "blob", "type": opt("bytes"), "default": None},
        {"name": "qty", "type": [{"type": "int", "connect.default": 7}, "null"], "default": 7},
    ],
    "connect.name": "dbserver1.inventory.customers.Value",
}

SOURCE = {
    "type": "record", "name": "Source", "namespace": "io.debezium.connector.mysql",
    "fields": [
        {"name": "version", "type": "string"},
        {"name": "connector", "type": "string"},
        {"name": "name", "type": "string"},
        {"name": "ts_ms", "type": "long"},
        {"name": "snapshot", "type": [{"type": "string", "connect.version": 1,
                                       "connect.parameters": {"allowed": "true,last,false,incremental"},
                                       "connect.default": "false",
                                       "connect.name": "io.debezium.data.Enum"}, "null"],
         "default": "false"},
        {"name": "db", "type": "string"},
        {"name": "table", "type": opt("string"), "default": None},
        {"name": "server_id", "type": "long"},
        {"name": "file", "type": "string"},
        {"name": "pos", "type": "long"},
        {"name": "row", "type": "int"},
    ],
    "connect.name": "io.debezium.connector.mysql.Source",
}

ENVELOPE = {
    "type": "record", "name": "Envelope", "namespace": "dbserver1.inventory.customers",
    "fields": [
        {"name": "before", "type": opt(VALUE), "default": None},
        {"name": "after", "type": opt("Value"), "default": None},
        {"name": "source", "type": SOURCE},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": opt("long"), "default": None},
        {"name": "transaction", "type": opt({
            "type": "record", "name": "block", "namespace": "event",
            "fields": [{"name": "id", "type": "string"},
                       {"name": "total_order", "type": "long"},
                       {"name": "data_collection_order", "type": "long"}],
            "connect.version": 1, "connect.name": "event.block"}), "default": None},
    ],
    "connect.version": 1,
    "connect.name": "dbserver1.inventory.customers.Envelope",
}


def c(t, field, optional=False, **extra):
    """A Connect field schema in JsonConverter's key order."""
    d = {"type": t}
    if "fields" in extra:
        d["fields"] = extra.pop("fields")
    d["optional"] = optional
    for k in ("name", "version", "doc", "parameters", "default"):
        if k in extra:
            d[k] = extra.pop(k)
    assert not extra, extra
    d["field"] = field
    return d


def value_schema(field):
    return c("struct", field, True, fields=[
        c("int32", "id"),
        c("string", "name", True),
        c("int64", "big", True),
        c("int16", "small", True),
        c("int8", "tiny"),
        c("bytes", "price", True, name="org.apache.kafka.connect.data.Decimal", version=1,
          parameters={"scale": "2", "connect.decimal.precision": "10"}),
        c("struct", "vdec", True, fields=[c("int32", "scale"), c("bytes", "value")],
          name="io.debezium.data.VariableScaleDecimal", version=1,
          doc="Variable scaled decimal"),
        c("int64", "created", True, name="io.debezium.time.MicroTimestamp", version=1),
        c("string", "zoned", True, name="io.debezium.time.ZonedTimestamp", version=1),
        c("string", "doc", True, name="io.debezium.data.Json", version=1),
        c("string", "uid", True, name="io.debezium.data.Uuid", version=1),
        c("string", "color", True, name="io.debezium.data.Enum", version=1,
          parameters={"allowed": "red,green,blue"}),
        c("int32", "birthday", True, name="io.debezium.time.Date", version=1),
        c("boolean", "flag", True),
        c("float32", "ratio", True),
        c("float64", "score", True),
        c("bytes", "blob", True),
        c("int32", "qty", True, default=7),
    ], name="dbserver1.inventory.customers.Value")


ENVELOPE_CONNECT = {
    "type": "struct",
    "fields": [
        value_schema("before"),
        value_schema("after"),
        c("struct", "source", fields=[
            c("string", "version"), c("string", "connector"), c("string", "name"),
            c("int64", "ts_ms"),
            c("string", "snapshot", True, name="io.debezium.data.Enum", version=1,
              parameters={"allowed": "true,last,false,incremental"}, default="false"),
            c("string", "db"), c("string", "table", True), c("int64", "server_id"),
            c("string", "file"), c("int64", "pos"), c("int32", "row"),
        ], name="io.debezium.connector.mysql.Source"),
        c("string", "op"),
        c("int64", "ts_ms", True),
        c("struct", "transaction", True, fields=[
            c("string", "id"), c("int64", "total_order"), c("int64", "data_collection_order"),
        ], name="event.block", version=1),
    ],
    "optional": False,
    "name": "dbserver1.inventory.customers.Envelope",
    "version": 1,
}


def row(i, full):
    """A row as written (Avro) and as JsonConverter writes it (payload)."""
    price = 12345 * (1 if i % 2 else -1)
    # padded forms: sign bytes a BigInteger would not have
    padded = (b"\x00\x00" if price >= 0 else b"\xff\xff") + java_bytes(price)
    av = {"id": i, "name": None, "big": None, "small": None, "tiny": -3, "price": None,
          "vdec": None, "created": None, "zoned": None, "doc": None, "uid": None, "color": None,
          "birthday": None, "flag": None, "ratio": None, "score": None, "blob": None, "qty": 7}
    js = dict(av)
    if full:
        av.update({"name": "Zo\u00eb \u2603 \U0001F600", "big": -(2 ** 62), "small": -1234,
                   "price": padded, "vdec": {"scale": 3, "value": b"\x01\xe2\x40"},
                   "created": 1700000000123456, "zoned": "2024-01-02T03:04:05.123Z",
                   "doc": '{"a": [1, 2]}', "uid": "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
                   "color": "green", "birthday": 19000, "flag": True, "ratio": 0.1,
                   "score": 3.141592653589793, "blob": bytes(range(7)), "qty": None})
        js = dict(av)
        js.update({"price": b64(java_bytes(price)),
                   "vdec": {"scale": 3, "value": b64(b"\x01\xe2\x40")},
                   "ratio": f32(0.1), "blob": b64(bytes(range(7)))})
    return av, js


def source(snapshot):
    s = {"version": "2.7.3.Final", "connector": "mysql", "name": "dbserver1",
         "ts_ms": 1700000000000, "snapshot": snapshot, "db": "inventory", "table": "customers",
         "server_id": 223344, "file": "mysql-bin.000003", "pos": 154, "row": 0}
    return s, dict(s)


def debezium():
    with open(os.path.join(HERE, "debezium.avsc"), "w") as f:
        f.write(json.dumps(ENVELOPE, indent=1) + "\n")
    cases = []
    a1, j1 = row(1001, True)
    s1, sj1 = source("false")
    cases.append(({"before": None, "after": a1, "source": s1, "op": "c",
                   "ts_ms": 1700000000456, "transaction": None},
                  {"before": None, "after": j1, "source": sj1, "op": "c",
                   "ts_ms": 1700000000456, "transaction": None}))
    a2, j2 = row(1002, False)
    s2, sj2 = source(None)
    tx = {"id": "file=mysql-bin.000003,pos=154", "total_order": 2, "data_collection_order": 1}
    cases.append(({"before": a1, "after": a2, "source": s2, "op": "u", "ts_ms": None,
                   "transaction": tx},
                  {"before": j1, "after": j2, "source": sj2, "op": "u", "ts_ms": None,
                   "transaction": dict(tx)}))
    cases.append(({"before": a2, "after": None, "source": s1, "op": "d", "ts_ms": 1,
                   "transaction": None},
                  {"before": j2, "after": None, "source": sj1, "op": "d", "ts_ms": 1,
                   "transaction": None}))
    for k, (av, js) in enumerate(cases, 1):
        with open(os.path.join(HERE, "debezium_%d.bin" % k), "wb") as f:
            f.write(encode(ENVELOPE, av))
        write("debezium_%d.json" % k, {"schema": ENVELOPE_CONNECT, "payload": js})


# ---- plain Avro (other producers) -----------------------------------------

LOGICAL = {
    "type": "record", "name": "Plain", "namespace": "shop",
    "fields": [
        {"name": "d", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tus", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "tsms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tsus", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5,
                                 "scale": 2}},
        {"name": "decf", "type": {"type": "fixed", "name": "Dec8", "size": 8,
                                  "logicalType": "decimal", "precision": 18, "scale": 4}},
        {"name": "bad", "type": {"type": "bytes", "logicalType": "decimal", "precision": 0}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "mood", "type": {"type": "enum", "name": "Mood", "symbols": ["HAPPY", "SAD"]}},
        {"name": "md5", "type": {"type": "fixed", "name": "MD5", "size": 4}},
        {"name": "jstr", "type": {"type": "string", "avro.java.string": "String"}},
    ],
}

LOGICAL_CONNECT = {
    "type": "struct",
    "fields": [
        c("int32", "d", name="org.apache.kafka.connect.data.Date"),
        c("int32", "tms", name="org.apache.kafka.connect.data.Time"),
        c("int64", "tus", name="io.debezium.time.MicroTime"),
        c("int64", "tsms", name="org.apache.kafka.connect.data.Timestamp"),
        c("int64", "tsus", name="io.debezium.time.MicroTimestamp"),
        c("string", "u", name="io.debezium.data.Uuid"),
        c("bytes", "dec", name="org.apache.kafka.connect.data.Decimal",
          parameters={"scale": "2", "connect.decimal.precision": "5"}),
        c("bytes", "decf", name="org.apache.kafka.connect.data.Decimal",
          parameters={"scale": "4", "connect.decimal.precision": "18"}),
        c("bytes", "bad"),
        {"type": "array", "items": {"type": "string", "optional": False}, "optional": False,
         "field": "tags"},
        {"type": "map", "keys": {"type": "string", "optional": False},
         "values": {"type": "int64", "optional": False}, "optional": False, "field": "attrs"},
        c("string", "mood", parameters={"allowed": "HAPPY,SAD"}),
        c("bytes", "md5"),
        c("string", "jstr", parameters={"avro.java.string": "String"}),
    ],
    "optional": False,
    "name": "shop.Plain",
}


def logical():
    with open(os.path.join(HERE, "logical.avsc"), "w") as f:
        f.write(json.dumps(LOGICAL, indent=1) + "\n")
    decf = -98765432
    av = {"d": 19000, "tms": 3723004, "tus": 3723004005, "tsms": 1700000000123,
          "tsus": 1700000000123456, "u": "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
          "dec": b"\x00" + java_bytes(255), "decf": decf.to_bytes(8, "big", signed=True),
          "bad": b"\x00\x01", "tags": ["a", "", "b\u00e9"], "attrs": {"x": 1, "y": -2},
          "mood": "SAD", "md5": b"\xde\xad\xbe\xef", "jstr": "j"}
    js = dict(av)
    js.update({"dec": b64(java_bytes(255)), "decf": b64(java_bytes(decf)),
               "bad": b64(b"\x00\x01"), "md5": b64(b"\xde\xad\xbe\xef")})
    with open(os.path.join(HERE, "logical_1.bin"), "wb") as f:
        f.write(encode(LOGICAL, av))
    write("logical_1.json", {"schema": LOGICAL_CONNECT, "payload": js})


if __name__ == "__main__":
    debezium()
    logical()
