"""
Debezium events in Avro (`format: debezium`, `encoding: avro`) from the
real Kafka broker, their schemas from a schema registry, on both workspace
backends.

The registry is tests/services/schema-registry, a STAND-IN (a mock of
Confluent's REST API): no real registry can run on zx's machines (see
tests/services/README.md).  The datums are tests/corpus/avro's
Debezium-shaped events (a MySQL envelope with every logical type), framed
in Confluent's wire format (a 0 byte, the 4-byte schema id) or Apicurio's
(an 8-byte global id), keys in Avro too.  Checked: the mirror follows the
events (an update that moves the key, a delete), a registry outage makes
the stream wait with a clear status and lose nothing, an unknown schema id
is a reject with the registry's reason and the stream goes on.
"""

import json
import os
import re
import subprocess
import urllib.request

import pytest

from conftest import REPO, uid, wait_for
from kafka_fixtures import kafka, make_kzxd  # noqa: F401

AVRO = os.path.join(REPO, "tests", "corpus", "avro")
REG = os.path.join(REPO, "tests", "services", "schema-registry")
KEY_SCHEMA = json.dumps({"type": "record", "name": "Key",
                         "namespace": "dbserver1.inventory.customers",
                         "fields": [{"name": "id", "type": "int"}]})


def reg(cmd):
    p = subprocess.run([REG, cmd], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    return dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)


@pytest.fixture(scope="module")
def registry():
    env = reg("start")
    yield env["REGISTRY_URL"]
    reg("stop")           # nothing of the tests outlives them


def register(url, subject, schema):
    req = urllib.request.Request(f"{url}/subjects/{subject}/versions",
                                 data=json.dumps({"schema": schema}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)["id"]


def avro_int(n):
    """Avro's int: zigzag, then a varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def datum(i):
    with open(os.path.join(AVRO, f"debezium_{i}.bin"), "rb") as f:
        return f.read()


def framed(schema_id, body, wire="confluent"):
    return b"\0" + schema_id.to_bytes(8 if wire == "apicurio" else 4, "big") + body


def pipe(topic, url, wire=None):
    extra = {"format": "debezium", "encoding": "avro", "history": "true",
             "schema_registry": "{url: " + json.dumps(url) + (f", wire: {wire}" if wire else "") + "}"}
    return {"connection": "c", "topic": topic, "table": '"{source.table}"', "extra": extra}


def ids(z):
    if not z.table_exists("customers"):
        return None
    return [r[0] for r in z.query('SELECT id FROM "customers" ORDER BY id')]


@pytest.mark.parametrize("wire", ["confluent", "apicurio"])
def test_avro_events_through_the_registry(kafka, make_kzxd, registry, wire):
    with open(os.path.join(AVRO, "debezium.avsc")) as f:
        vid = register(registry, f"v{uid()[:8]}-value", f.read())
    kid = register(registry, f"v{uid()[:8]}-key", KEY_SCHEMA)
    topic = kafka.create_topic(f"a{uid()[:8]}.inventory.customers")
    z = make_kzxd({"av": pipe(topic, registry, wire if wire != "confluent" else None)},
                  {"c": kafka.connection("plaintext")})
    key = lambda i: framed(kid, avro_int(i), wire)  # noqa: E731
    kafka.produce(topic, [framed(vid, datum(1), wire), framed(vid, datum(2), wire)],
                  keys=[key(1001), key(1002)], partition=0)
    wait_for(lambda: ids(z) == [1002], "1002 alone (the update moved 1001)", deadline=60)
    row = z.query('SELECT tiny, qty FROM "customers"')[0]
    assert row == (-3, 7)
    # the first event's values, decoded by their logical types (in history)
    h = z.query('SELECT name, price, created, doc, uid FROM "customers__changes" '
                'WHERE id = 1001 AND "_op" = \'insert\'')
    assert h and h[0][0] == "Zoë ☃ 😀"
    assert str(h[0][1]).startswith("123.45") or str(h[0][1]) == "12.345"
    assert str(h[0][2]).replace(" ", "T").startswith("2023-11-14T22:13:20.123456")
    assert json.loads(h[0][3]) == {"a": [1, 2]}
    kafka.produce(topic, [framed(vid, datum(3), wire)], keys=[key(1002)], partition=0)
    wait_for(lambda: ids(z) == [], "the delete applied", deadline=60)
    # an id the registry does not know: a reject with its reason
    kafka.produce(topic, [framed(999999, datum(1), wire),
                          framed(vid, datum(1), wire)], keys=[key(1001), key(1001)], partition=0)
    wait_for(lambda: ids(z) == [1001], "the stream went on after the unknown id", deadline=60)
    reasons = [r[0] for r in z.query('SELECT reason FROM "customers__rejects"')]
    assert any("999999" in r and "not found" in r for r in reasons), reasons


def test_apicurio_ids_in_headers(kafka, make_kzxd, registry):
    """wire: headers: the datums carry no prefix; the ids are in the
    apicurio.value.globalId / apicurio.key.globalId headers (8 bytes)."""
    with open(os.path.join(AVRO, "debezium.avsc")) as f:
        vid = register(registry, f"h{uid()[:8]}-value", f.read())
    kid = register(registry, f"h{uid()[:8]}-key", KEY_SCHEMA)
    topic = kafka.create_topic(f"h{uid()[:8]}.inventory.customers")
    z = make_kzxd({"hd": pipe(topic, registry, "headers")}, {"c": kafka.connection("plaintext")})
    p = kafka.producer()
    for i, k in ((1, 1001), (2, 1002)):
        p.produce(topic, value=datum(i), key=avro_int(k), partition=0,
                  headers=[("apicurio.value.globalId", vid.to_bytes(8, "big")),
                           ("apicurio.key.globalId", kid.to_bytes(8, "big"))])
    # without its header the datum cannot be read: a reject, and the stream goes on
    p.produce(topic, value=datum(1), key=avro_int(1001), partition=0)
    assert p.flush(60) == 0
    wait_for(lambda: ids(z) == [1002], "1002 alone (the update moved 1001)", deadline=60)
    wait_for(lambda: z.table_exists("customers__rejects") and
             any("apicurio.value.globalId" in r[0]
                 for r in z.query('SELECT reason FROM "customers__rejects"')),
             "the datum without its header rejected", deadline=60)


def test_registry_outage_waits_and_loses_nothing(kafka, make_kzxd, registry):
    with open(os.path.join(AVRO, "debezium.avsc")) as f:
        schema = f.read()
    # a new schema text (so that no zx has it cached): another namespace
    schema = schema.replace("dbserver1.inventory.customers", f"o{uid()[:8]}.inventory.customers")
    vid = register(registry, f"o{uid()[:8]}-value", schema)
    kid = register(registry, f"o{uid()[:8]}-key", KEY_SCHEMA)
    topic = kafka.create_topic(f"o{uid()[:8]}.inventory.customers")
    z = make_kzxd({"out": pipe(topic, registry)}, {"c": kafka.connection("plaintext")})
    reg("stop")
    try:
        kafka.produce(topic, [framed(vid, datum(1))], keys=[framed(kid, avro_int(1001))],
                      partition=0)
        z.wait_source_error("out", "schema registry", "nothing is lost", deadline=60)
        assert ids(z) is None
        # zxctl test says the registry is the trouble, not Kafka
        rc, out = z.test_output("out")
        assert rc != 0 and f"topic {topic}: 1 partition" in out, out
        assert f"schema registry {registry}: " in out and "subjects" not in out, out
    finally:
        reg("start")
    wait_for(lambda: ids(z) == [1001], "the event applied once the registry is back",
             deadline=60)
    wait_for(lambda: not z.source_error("out"), "the status clear again", deadline=30)
    rc, out = z.test_output("out")
    assert rc == 0 and re.search(f"schema registry {re.escape(registry)}: [0-9]+ subjects", out), out


@pytest.mark.skipif(os.geteuid() != 0, reason="reading another process's memory needs root")
@pytest.mark.sqlite_only
def test_registry_password_stays_in_its_worker(kafka, make_kzxd, registry):
    """schema_registry.password is a secret of the kafka plug-in's own
    options: its worker keeps it, the writer and the gateway do not hold
    it (supervisor/scrub.c), and neither the log nor `zxctl status` shows
    it."""
    from test_worker_secrets import memory_has
    pw = f"zx-reg-{uid()}"
    topic = kafka.create_topic(f"s{uid()[:8]}.inventory.customers")
    p = pipe(topic, registry)
    p["extra"]["schema_registry"] = ("{url: " + json.dumps(registry) +
                                     ", username: zx, password: \"${env:ZX_TEST_REG_PW}\"}")
    z = make_kzxd({"sr": p}, {"c": kafka.connection("plaintext")}, start=False)
    z.env["ZX_TEST_REG_PW"] = pw
    z.start()
    z.wait_running("sr")
    pids = z.pids()
    needle = pw.encode()
    assert memory_has(pids["sr"], [needle])[needle] == 1, "its worker lost the password"
    for role in ("writer", "gateway"):
        assert memory_has(pids[role], [needle])[needle] == 0, f"the {role} holds it"
    shown = z.log_text() + "".join(z.zxctl(*a).stdout for a in (("status",), ("--json", "status")))
    assert pw not in shown
