"""
The Kafka destination (`destination: {kafka: {connection, topic, format}}`),
judged by a consumer nobody here wrote (confluent-kafka) on the real broker
of tests/services/kafka (started once per session, never stopped here):

- format json: one message per row, the key the JSON of the key columns
  (exact bytes), the value the row; a mirror run after updates, inserts and
  deletes sends only those, a delete as a tombstone;
- format debezium: envelopes with before/after/op/source (c on a first
  run, u for a changed row, c for a new one, d then a tombstone for a
  deleted key), source naming the sync and the run, seq increasing per key;
- every message in the partition a Java producer picks for its key:
  toPositive(murmur2(key)) % partitions, murmur2 written here from Kafka's
  Utils.murmur2 and checked against Kafka's own test vectors;
- order per key across runs;
- an unknown topic and an unreachable broker fail the run with a clear
  error, within the destination's timeout; the hashes are not recorded,
  so a later good run sends everything again (at least once).

One workspace is enough (what is tested is the broker side): SQLite.
"""

import json
import socket

import pytest

from conftest import uid, wait_for
from kafka_fixtures import kafka, make_kzxd  # noqa: F401
from sync_fixtures import make_sync_env

pytestmark = pytest.mark.sqlite_only

pytest.importorskip("confluent_kafka")

PARTITIONS = 3


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


# ---- Java's murmur2 (org.apache.kafka.common.utils.Utils.murmur2) ----------

def murmur2(data):
    m, r = 0x5BD1E995, 24
    n = len(data)
    h = (0x9747B28C ^ n) & 0xFFFFFFFF
    for i in range(n // 4):
        k = data[4 * i] | data[4 * i + 1] << 8 | data[4 * i + 2] << 16 | data[4 * i + 3] << 24
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail, rest = n & ~3, n % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h    # as Java's int


def java_partition(key, partitions):
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def test_murmur2_matches_kafkas_vectors():
    # from Kafka's UtilsTest.testMurmur2
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


# ---- helpers -----------------------------------------------------------------

def consume_all(kafka, topic):
    """Every message of topic, [(partition, offset, key, value)] in offset
    order per partition (value None: a tombstone)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": kafka.addr("plaintext"), "group.id": "zx-t-" + uid()[:8],
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = kafka.end_offsets(topic)
        c.assign([TopicPartition(topic, p, 0) for p in ends])
        got, seen = [], {p: 0 for p in ends}
        while any(seen[p] < ends[p] for p in ends):
            m = c.poll(10)
            assert m is not None, f"timed out reading {topic}: {seen} of {ends}"
            assert m.error() is None, m.error()
            got.append((m.partition(), m.offset(), m.key(), m.value()))
            seen[m.partition()] = m.offset() + 1
        return sorted(got)
    finally:
        c.close()


def kafka_sync(sync_env, kafka, mode, fmt="json", topic=None, brokers=None, rows=10,
               extra=None, conn=None, key=("id",)):
    topic = topic or kafka.create_topic("zx-out-" + uid()[:10], partitions=PARTITIONS)
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    d = {"connection": "bus", "topic": topic, "format": fmt, "batch_rows": 100,
         "linger_ms": 5}
    d.update(extra or {})
    z.connections = {"bus": {"kind": "kafka",
                             "extra": conn or {"brokers": [brokers or kafka.addr("plaintext")]}}}
    z.env["ZX_T_KAFKA_PW"] = "zx-secret"
    z.syncs = {"out": {"author": "alice", "query": "SELECT id, name, price FROM items",
                       "dest": {"kafka": d}, "mode": mode,
                       "key": list(key) if key else None}}
    z.write_config()
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE items (id {t['int']} PRIMARY KEY, name {t['text']}, "
              f"price {t['real']})")
    for i in range(1, rows + 1):
        z.ws_exec(f"INSERT INTO items VALUES ({i}, 'item {i}', {i * 0.5})")
    z.start()
    return z, topic


def key_of(i):
    return b'{"id":%d}' % i


def check_partitions(msgs):
    for p, _, k, _ in msgs:
        assert k is not None
        assert p == java_partition(k, PARTITIONS), (k, p)


def latest(msgs):
    """The last message of each key (offset order within its partition)."""
    out = {}
    for p, o, k, v in msgs:
        out[k] = v
    return out


# ---- format json ---------------------------------------------------------------

def test_json_mirror_runs_tombstones_and_partitions(sync_env, kafka):
    z, topic = kafka_sync(sync_env, kafka, "mirror")
    r = z.run("out")
    assert r["rows_sent"] == 10
    # one hand-over of 10 rows: one batch, counted once all are acknowledged
    assert r.get("batches") == 1 and not r.get("batches_failed"), r
    msgs = consume_all(kafka, topic)
    assert len(msgs) == 10
    check_partitions(msgs)
    assert len({p for p, *_ in msgs}) > 1          # spread over partitions
    vals = {k: json.loads(v) for _, _, k, v in msgs}
    assert vals[key_of(3)] == {"id": 3, "name": "item 3", "price": 1.5}
    assert set(vals) == {key_of(i) for i in range(1, 11)}

    # nothing changed: nothing sent
    z.run("out")
    assert len(consume_all(kafka, topic)) == 10

    # updates, an insert, deletes
    z.ws_exec("UPDATE items SET name = 'changed' WHERE id IN (2, 5)",
              "INSERT INTO items VALUES (11, 'eleven', NULL)",
              "DELETE FROM items WHERE id IN (3, 7, 9)")
    r = z.run("out")
    assert r["rows_sent"] == 3 and r["rows_deleted"] == 3
    assert r.get("batches") == 2, r               # the rows, then the deletes
    msgs = consume_all(kafka, topic)
    assert len(msgs) == 10 + 3 + 3
    check_partitions(msgs)
    last = latest(msgs)
    assert json.loads(last[key_of(2)])["name"] == "changed"
    assert json.loads(last[key_of(11)]) == {"id": 11, "name": "eleven", "price": None}
    for i in (3, 7, 9):
        assert last[key_of(i)] is None            # a tombstone last
    assert sum(1 for *_, v in msgs if v is None) == 3
    # order per key: the first message of key 2 is the old row
    k2 = [v for _, _, k, v in msgs if k == key_of(2)]
    assert [json.loads(v)["name"] for v in k2] == ["item 2", "changed"]


def test_json_append_sends_every_row_each_run(sync_env, kafka):
    z, topic = kafka_sync(sync_env, kafka, "append", rows=4)
    z.run("out")
    z.run("out")
    msgs = consume_all(kafka, topic)
    assert len(msgs) == 8
    check_partitions(msgs)


def test_append_without_key_sends_keyless_messages(sync_env, kafka):
    z, topic = kafka_sync(sync_env, kafka, "append", rows=5, key=None)
    r = z.run("out")
    assert r["rows_sent"] == 5
    msgs = consume_all(kafka, topic)
    assert len(msgs) == 5 and all(k is None for _, _, k, _ in msgs)
    assert sorted(json.loads(v)["id"] for *_, v in msgs) == [1, 2, 3, 4, 5]


# ---- format debezium ------------------------------------------------------------

def test_debezium_envelopes_ops_and_sequence(sync_env, kafka):
    z, topic = kafka_sync(sync_env, kafka, "mirror", fmt="debezium", rows=6)
    r1 = z.run("out")
    msgs = consume_all(kafka, topic)
    assert len(msgs) == 6
    check_partitions(msgs)
    for _, _, k, v in msgs:
        e = json.loads(v)
        assert set(e) == {"before", "after", "source", "op", "ts_ms", "transaction"}
        assert e["op"] == "c" and e["before"] is None
        assert json.loads(k) == {"id": e["after"]["id"]}
        s = e["source"]
        assert s["connector"] == "zx" and s["name"] == "out" and s["table"] == topic
        assert s["run"] == int(r1["id"]) and len(s["seq"]) == 32
        assert isinstance(e["ts_ms"], int)

    z.ws_exec("UPDATE items SET price = 99 WHERE id = 2",
              "INSERT INTO items VALUES (7, 'seven', 7.5)",
              "DELETE FROM items WHERE id = 4")
    r2 = z.run("out")
    assert int(r2["id"]) > int(r1["id"])
    msgs = consume_all(kafka, topic)
    assert len(msgs) == 6 + 2 + 2                 # u, c, then d + tombstone
    check_partitions(msgs)
    by_key = {}
    for p, o, k, v in msgs:
        by_key.setdefault(k, []).append(v)
    u = [json.loads(v) for v in by_key[key_of(2)]]
    assert [e["op"] for e in u] == ["c", "u"]
    assert u[1]["after"] == {"id": 2, "name": "item 2", "price": 99.0}
    assert u[1]["source"]["run"] == int(r2["id"])
    assert u[0]["source"]["seq"] < u[1]["source"]["seq"]
    assert [json.loads(v)["op"] for v in by_key[key_of(7)]] == ["c"]
    d = by_key[key_of(4)]
    assert len(d) == 3 and d[2] is None           # c, d, tombstone
    e = json.loads(d[1])
    assert e["op"] == "d" and e["before"] == {"id": 4} and e["after"] is None
    assert json.loads(d[0])["source"]["seq"] < e["source"]["seq"]


def test_sasl_ssl_plain_as_event_hubs_is_reached(sync_env, kafka):
    """The README's Event Hubs shape (SASL_SSL, PLAIN, a password from the
    environment) against the broker's SASL_SSL listener: the connection's
    TLS and SASL options are the kafka source's, through the shared
    client."""
    conn = {"brokers": [kafka.addr("sasl_ssl")], "security": "sasl_ssl",
            "sasl": {"mechanism": "PLAIN", "username": "zx", "password": "${env:ZX_T_KAFKA_PW}"},
            "tls": {"ca": kafka.env["CA"]}}
    z, topic = kafka_sync(sync_env, kafka, "upsert", fmt="debezium", rows=3, conn=conn)
    assert z.run("out")["rows_sent"] == 3
    msgs = consume_all(kafka, topic)
    assert len(msgs) == 3
    check_partitions(msgs)
    assert "zx-secret" not in open(z.cfg_path).read()


def test_debezium_output_read_back_by_zx_debezium_source(sync_env, kafka, make_kzxd):
    """Round trip: a second zxd's `format: debezium` stream (zx's reader of
    Debezium's JSON) applies what the destination sent (c, u, d and
    tombstones) to a mirror table equal to the sync's result."""
    z, topic = kafka_sync(sync_env, kafka, "mirror", fmt="debezium", rows=8)
    z.run("out")
    z.ws_exec("UPDATE items SET name = 'renamed', price = NULL WHERE id IN (1, 6)",
              "DELETE FROM items WHERE id IN (2, 3)",
              "INSERT INTO items VALUES (20, 'twenty', 2.5)")
    z.run("out")
    want = sorted(tuple(r) for r in z.query("SELECT id, name, price FROM items"))
    k = make_kzxd({"back": {"connection": "c", "topic": topic, "table": "items_copy",
                            "extra": {"format": "debezium", "key_columns": "[id]"}}},
                  {"c": kafka.connection("plaintext")})
    wait_for(lambda: k.table_exists("items_copy") and k.count("items_copy") == len(want) and
             sorted(tuple(r) for r in k.query("SELECT id, name, price FROM items_copy")) == want,
             "the mirror read back equals the result", deadline=60)


# ---- failures --------------------------------------------------------------------

def test_unknown_topic_fails_the_run(sync_env, kafka):
    z, topic = kafka_sync(sync_env, kafka, "upsert", topic="zx-missing-" + uid()[:8], rows=2)
    r = z.run("out", check=False)
    assert r.get("state") == "failed", r
    assert "does not exist" in r.get("error", "") and topic in r["error"], r


def test_unreachable_broker_fails_within_the_timeout(sync_env, kafka):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                     # nothing listens there now
    z, _ = kafka_sync(sync_env, kafka, "upsert", topic="nowhere",
                      brokers=f"127.0.0.1:{port}", rows=2, extra={"timeout": "3s"})
    r = z.run("out", check=False, timeout=120)
    assert r.get("state") == "failed", r
    assert "cannot reach the brokers" in r.get("error", ""), r


def test_failed_run_records_nothing_and_the_next_sends_all(sync_env, kafka):
    """At least once: a run that fails sends everything again next time."""
    topic = "zx-late-" + uid()[:8]
    z, _ = kafka_sync(sync_env, kafka, "upsert", topic=topic, rows=3)
    assert z.run("out", check=False)["state"] == "failed"
    kafka.create_topic(topic, partitions=PARTITIONS)
    assert z.run("out")["rows_sent"] == 3
    msgs = consume_all(kafka, topic)
    assert len(msgs) == 3
    check_partitions(msgs)


def test_a_message_the_broker_refuses_fails_the_run(sync_env, kafka):
    """A delivery report with an error (here the broker's MESSAGE_TOO_LARGE
    for a topic whose max.message.bytes is small) fails the run: nothing
    is recorded, and once the row fits the next run sends every row."""
    from confluent_kafka.admin import NewTopic
    topic = "zx-small-" + uid()[:8]
    fs = kafka.admin().create_topics([NewTopic(topic, num_partitions=PARTITIONS,
                                               replication_factor=1,
                                               config={"max.message.bytes": "600"})])
    for f in fs.values():
        f.result(timeout=60)
    z, _ = kafka_sync(sync_env, kafka, "upsert", topic=topic, rows=3,
                      extra={"linger_ms": 0, "batch_rows": 1})
    z.ws_exec("UPDATE items SET name = '%s' WHERE id = 2" % ("x" * 2000))
    r = z.run("out", check=False)
    assert r.get("state") == "failed", r
    assert "not acknowledged" in r.get("error", ""), r
    assert r.get("batches_failed", 0) >= 1 and r.get("first_error"), r
    z.ws_exec("UPDATE items SET name = 'short' WHERE id = 2")
    assert z.run("out")["rows_sent"] == 3
    last = latest(consume_all(kafka, topic))
    assert json.loads(last[key_of(2)])["name"] == "short"


# ---- format avro ------------------------------------------------------------------
# The registry is tests/services/schema-registry, a STAND-IN (a mock of the
# Confluent API: it registers and serves schemas, and checks compatibility
# only for a subject whose level was set), run in a folder of this module's
# own so that starting and stopping it touches no other test's.

@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    import os
    import subprocess
    from conftest import REPO
    script = os.path.join(REPO, "tests", "services", "schema-registry")
    env = dict(os.environ, ZX_SERVICES_DIR=str(tmp_path_factory.mktemp("registry")))

    def reg(cmd):
        p = subprocess.run([script, cmd], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL, env=env)
        assert p.returncode == 0, p.stderr
        return dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
    url = reg("start")["REGISTRY_URL"]
    yield url
    reg("stop")


def avro_decode(url, data, cache={}):
    """A Confluent-framed Avro message decoded with the registry's schema
    (fastavro)."""
    import io
    import urllib.request
    import fastavro
    assert data[0] == 0, data[:5]
    sid = int.from_bytes(data[1:5], "big")
    if (url, sid) not in cache:
        with urllib.request.urlopen(f"{url}/schemas/ids/{sid}", timeout=30) as r:
            cache[(url, sid)] = fastavro.parse_schema(json.loads(json.load(r)["schema"]))
    return fastavro.schemaless_reader(io.BytesIO(data[5:]), cache[(url, sid)])


def test_avro_with_the_registrys_schemas(sync_env, kafka, registry):
    pytest.importorskip("fastavro")
    z, topic = kafka_sync(sync_env, kafka, "mirror", fmt="avro", rows=6,
                          extra={"schema_registry": registry})
    z.run("out")
    z.ws_exec("UPDATE items SET price = NULL WHERE id = 2", "DELETE FROM items WHERE id = 5")
    z.run("out")
    msgs = consume_all(kafka, topic)
    assert len(msgs) == 6 + 1 + 1
    check_partitions(msgs)                        # murmur2 of the framed key bytes
    got = {}
    for _, _, k, v in msgs:
        key = avro_decode(registry, k)
        got[key["id"]] = None if v is None else avro_decode(registry, v)
    assert got[1] == {"id": 1, "name": "item 1", "price": 0.5}
    assert got[2] == {"id": 2, "name": "item 2", "price": None}
    assert got[5] is None                         # the tombstone last
    import urllib.request
    with urllib.request.urlopen(f"{registry}/subjects", timeout=30) as r:
        subjects = json.load(r)
    assert f"{topic}-key" in subjects and f"{topic}-value" in subjects


def test_avro_registry_errors_fail_the_run(sync_env, kafka, registry):
    z, topic = kafka_sync(sync_env, kafka, "upsert", fmt="avro", rows=2,
                          extra={"schema_registry": registry + "/nowhere"})
    r = z.run("out", check=False)
    assert r.get("state") == "failed", r
    assert "schema registry" in r.get("error", "") and "HTTP 404" in r["error"], r


def registry_call(url, method, path, obj=None):
    """(status, answer) of one request to the registry's REST API."""
    import urllib.error
    import urllib.request
    data = None if obj is None else json.dumps(obj).encode()
    req = urllib.request.Request(url + path, data=data, method=method, headers={
        "Content-Type": "application/vnd.schemaregistry.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_avro_a_subject_that_refuses_the_schema_fails_the_run(sync_env, kafka, registry):
    """The value subject already has a schema zx's cannot read (price a
    required string; zx's is ["null", "double"]) and compatibility
    BACKWARD: the registry answers 409, the run fails naming the subject,
    nothing is produced and nothing recorded; once the subject accepts any
    schema (NONE) the next run sends every row.  The key subject, also
    BACKWARD, holds a schema zx's can read (id a required long): accepted."""
    pytest.importorskip("fastavro")
    topic = kafka.create_topic("zx-sr409-" + uid()[:8], partitions=PARTITIONS)
    avro_name = topic.replace("-", "_")
    old_value = {"type": "record", "name": avro_name + "_value", "namespace": "zx",
                 "fields": [{"name": "price", "type": "string"}]}
    old_key = {"type": "record", "name": avro_name + "_key", "namespace": "zx",
               "fields": [{"name": "id", "type": "long"}]}
    for subject, schema in ((f"{topic}-value", old_value), (f"{topic}-key", old_key)):
        st, ans = registry_call(registry, "POST", f"/subjects/{subject}/versions",
                                {"schema": json.dumps(schema)})
        assert st == 200, ans
        st, ans = registry_call(registry, "PUT", f"/config/{subject}",
                                {"compatibility": "BACKWARD"})
        assert st == 200 and ans == {"compatibility": "BACKWARD"}, ans

    z, _ = kafka_sync(sync_env, kafka, "upsert", fmt="avro", topic=topic, rows=4,
                      extra={"schema_registry": registry})
    r = z.run("out", check=False)
    assert r.get("state") == "failed", r
    err = r.get("error", "")
    assert f"refuses the schema (incompatible with the subject's) of subject {topic}-value" \
        in err, r
    assert "HTTP 409" in err and "incompatible with an earlier schema" in err, r
    assert r.get("rows_sent", 0) == 0, r
    assert all(n == 0 for n in kafka.end_offsets(topic).values()), kafka.end_offsets(topic)
    # the refused schema is not the subject's; the key's is (version 2)
    st, ans = registry_call(registry, "GET", f"/subjects/{topic}-value/versions/latest")
    assert st == 200 and ans["version"] == 1 and json.loads(ans["schema"]) == old_value, ans
    st, ans = registry_call(registry, "GET", f"/subjects/{topic}-key/versions/latest")
    assert st == 200 and ans["version"] == 2, ans

    # failing again while nothing changed: still nothing sent
    assert z.run("out", check=False).get("state") == "failed"

    st, ans = registry_call(registry, "PUT", f"/config/{topic}-value", {"compatibility": "NONE"})
    assert st == 200, ans
    r = z.run("out")
    assert r["rows_sent"] == 4, r                  # the hashes were not recorded
    msgs = consume_all(kafka, topic)
    assert len(msgs) == 4
    check_partitions(msgs)
    got = {avro_decode(registry, k)["id"]: avro_decode(registry, v) for _, _, k, v in msgs}
    assert got == {i: {"id": i, "name": f"item {i}", "price": i * 0.5} for i in range(1, 5)}
    assert z.run("out")["rows_sent"] == 0
