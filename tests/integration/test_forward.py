"""
A stream's `forward: {kafka: {...}}`: what the writer applied, published to
a Kafka topic from the writer's commits (the workspace's forward journal
`_zx_forward`), judged by a consumer nobody here wrote (confluent-kafka) on
the real broker of tests/services/kafka:

- a Postgres CDC mirror under a workload of inserts, updates, key moves and
  deletes, its worker SIGKILLed again and again: the topic, read as a
  consumer of an at-least-once topic does (a message whose source.seq is
  not above its key's last one is a replay and must repeat what that seq
  carried; the others apply in order), equals the source table; every
  message is in the partition Java's murmur2 picks for its key; ops are
  c/u/d with a tombstone after each d; and the journal ends empty
  (both workspaces: the journal is a workspace table);
- pushed rows forwarded as JSON, keyed by `key`: every row once at least,
  values as pushed;
- a broker nobody answers on: the stream goes on, the journal keeps what
  is not published, and a reload to the real broker publishes all of it;
- `forward:` on a reverse sync, to a non-Kafka connection, or without a
  topic: refused by zxd --check with a message naming the option.
"""
import json
import os
import signal
import subprocess
import threading

import pytest

from conftest import DEADLINE, ZXD, pid_alive, uid, wait_for
from kafka_fixtures import kafka, make_kzxd  # noqa: F401
from orders_workload import MirrorZxd, source_rows, workload
from sync_fixtures import make_sync_env
from test_sync_kafka_out import java_partition

confluent_kafka = pytest.importorskip("confluent_kafka")

PARTITIONS = 3


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def read_topic(broker, topic):
    """Every message now in topic: [(partition, offset, key bytes, value
    bytes or None)], each partition in order."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.addr("plaintext"), "group.id": "zxt-" + uid(),
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        md = c.list_topics(topic, timeout=10)
        parts = sorted(md.topics[topic].partitions)
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in parts}
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        out, pos = [], {p: 0 for p in parts}
        while any(pos[p] < ends[p] for p in parts):
            m = c.poll(5)
            assert m is not None, f"topic {topic}: no message before the end {ends} ({pos})"
            if m.error():
                continue
            out.append((m.partition(), m.offset(), m.key(), m.value()))
            pos[m.partition()] = m.offset() + 1
        return out
    finally:
        c.close()


def journal_empty(z):
    return not z.table_exists("_zx_forward") or z.count("_zx_forward") == 0


def cdc_mirror(topic, extra=""):
    return ("  cdc:\n    direction: stream\n    source: postgres\n    connection: src\n"
            "    tables: [orders]\n"
            f"    forward: {{kafka: {{connection: k, topic: {topic}, format: debezium{extra}}}}}\n")


def test_cdc_mirror_forwards_every_change(request, sync_env, pg, kafka):  # noqa: F811
    db = sync_env.pg_db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, "
                   "cents bigint NOT NULL, status text NOT NULL)")
    pg.execute(db, "INSERT INTO orders SELECT g, 'c' || (g % 50), g * 100, 'new' "
                   "FROM generate_series(1, 200) g")
    topic = kafka.create_topic("fwd-" + uid()[:8], partitions=PARTITIONS)
    request.addfinalizer(lambda: kafka.delete_topic(topic))

    z = sync_env.zxd({}, {"alice": ["orders"]}, start=False, cls=MirrorZxd)
    z.connections = {"src": sync_env.pg_conn(db),
                     "k": {"kind": "kafka", "extra": {"brokers": [kafka.addr("plaintext")],
                                                      "security": "plaintext"}}}
    z.mirror = cdc_mirror(topic)
    z.write_config()
    z.start()
    initial = source_rows(pg, db)
    wait_for(lambda: z.table_exists("orders") and
             sorted(z.query("SELECT id, customer, cents, status FROM orders")) == initial,
             "the initial copy", deadline=DEADLINE * 3)

    # the stream's worker (and its forwarder thread) SIGKILLed while changes flow
    stop, kills = threading.Event(), []

    def killer():
        while not stop.wait(1.5):
            e = z.entry("cdc")
            pid = e.get("pid") if isinstance(e, dict) else None
            if pid and pid > 0 and pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
                kills.append(pid)
    k = threading.Thread(target=killer, daemon=True)
    k.start()
    touched = set()
    try:
        workload(pg, db, 11, touched, 500)
    finally:
        stop.set()
        k.join(timeout=30)
    want = source_rows(pg, db)
    wait_for(lambda: sorted(z.query("SELECT id, customer, cents, status FROM orders")) == want
             and journal_empty(z),
             lambda: "the mirror to equal the source and the journal to empty\n" +
             z.log_tail(30), deadline=DEADLINE * 4)
    assert kills, "the stream's worker was never running when looked at"

    msgs = read_topic(kafka, topic)
    # read as a consumer of an at-least-once topic does: a message whose
    # source.seq is not above its key's last one is a replay (a run sent
    # again after its worker was killed) and must repeat what was sent
    # under that seq; the others apply in order
    state, last_seq, ops, after_d, sent, replays = {}, {}, {}, {}, {}, 0
    for part, off, key, val in msgs:
        assert key is not None, f"message {part}/{off} has no key"
        assert part == java_partition(key, PARTITIONS), (key, part)
        kid = json.loads(key)["id"]
        if val is None:                       # the tombstone after a d
            assert after_d.pop(kid, None) is not None, f"a tombstone of key {kid} not after its d"
            continue
        assert kid not in after_d, f"key {kid}: its d is not followed by a tombstone"
        ev = json.loads(val)
        op = ev["op"]
        assert ev["source"]["name"] == "cdc"
        seq = ev["source"]["seq"]
        what = (op, ev["before"], ev["after"])
        if op == "d":
            assert ev["after"] is None and ev["before"]["id"] == kid
            after_d[kid] = seq
        else:
            assert op in ("c", "u"), op
        if seq <= last_seq.get(kid, ""):
            assert sent.get((kid, seq)) == what, f"key {kid}: seq {seq} went back to a new event"
            replays += 1
            continue
        sent[(kid, seq)] = what
        last_seq[kid] = seq
        ops[op] = ops.get(op, 0) + 1
        if op == "d":
            state.pop(kid, None)
        else:
            a = ev["after"]
            state[kid] = (a["id"], a["customer"], a["cents"], a["status"])
    assert sorted(state.values()) == want
    assert ops.get("c", 0) >= 200 and ops.get("u", 0) > 0 and ops.get("d", 0) > 0, ops


@pytest.mark.sqlite_only
def test_pushed_rows_forward_as_json(request, kafka, make_kzxd):  # noqa: F811
    topic = kafka.create_topic("fwdp-" + uid()[:8], partitions=PARTITIONS)
    request.addfinalizer(lambda: kafka.delete_topic(topic))
    z = make_kzxd({}, {"k": kafka.connection()}, start=False)
    z.set_pipelines({"clicks": {"extra": {
        "forward": f"{{kafka: {{connection: k, topic: {topic}, format: json, key: [id]}}}}"}}})
    z.start()
    sent = []
    for b in range(5):
        rows = [{"id": b * 100 + i, "page": f"/p/{i}", "ms": i * 1.5, "ok": i % 2 == 0}
                for i in range(100)]
        z.push_ok("clicks", rows)
        sent += rows
    wait_for(lambda: z.count("clicks") == 500 and journal_empty(z),
             lambda: "500 rows and an empty journal\n" + z.log_tail(20))
    msgs = read_topic(kafka, topic)
    got = {}
    for part, _off, key, val in msgs:
        row = json.loads(val)
        assert json.loads(key) == {"id": row["id"]}
        assert part == java_partition(key, PARTITIONS)
        got[row["id"]] = row
    assert len(got) == 500 and len(msgs) >= 500
    for r in sent:
        assert {k: got[r["id"]][k] for k in r} == r


@pytest.mark.sqlite_only
def test_journal_keeps_what_an_absent_broker_did_not_take(request, kafka, make_kzxd):  # noqa: F811
    topic = kafka.create_topic("fwda-" + uid()[:8], partitions=1)
    request.addfinalizer(lambda: kafka.delete_topic(topic))
    dead = {"brokers": ["127.0.0.1:1"], "security": "plaintext"}
    z = make_kzxd({}, {"k": dead}, start=False)
    fwd = f"{{kafka: {{connection: k, topic: {topic}, format: json, timeout: 2s}}}}"
    z.set_pipelines({"clicks": {"extra": {"forward": fwd}}})
    z.start()
    for b in range(3):
        z.push_ok("clicks", [{"id": b * 10 + i} for i in range(10)])
    # the stream went on: its rows are in the table, and in the journal
    wait_for(lambda: z.count("clicks") == 30, "30 rows")
    assert z.count("_zx_forward") == 3
    wait_for(lambda: "event=forward_failed" in z.log_text(), "the forward's failure logged")
    # zxctl status says what waits and why
    wait_for(lambda: (z.pipeline("clicks").get("forward") or {}).get("pending_frames") == 3
             and z.pipeline("clicks")["forward"].get("last_error"), "the forward's status")
    fw = z.pipeline("clicks")["forward"]
    assert fw["to"] == "kafka" and fw["topic"] == topic and fw["rows"] == 0, fw
    assert fw["oldest_pending_ms"] >= 0, fw
    text = z.zxctl("status", check_rc=0).stdout
    assert f"forward: to kafka {topic}, 0 rows and 0 deletes published, 3 frames waiting" \
        in text and "failing: " in text, text
    z.set_kafka(connections={"k": kafka.connection()})
    z.signal(signal.SIGHUP)
    wait_for(lambda: journal_empty(z), lambda: "the journal to empty\n" + z.log_tail(20),
             deadline=DEADLINE * 2)
    ids = sorted(json.loads(v)["id"] for _p, _o, _k, v in read_topic(kafka, topic))
    assert sorted(set(ids)) == list(range(30))
    wait_for(lambda: z.pipeline("clicks")["forward"]["pending_frames"] == 0 and
             z.pipeline("clicks")["forward"]["last_error"] is None and
             z.pipeline("clicks")["forward"]["rows"] == 30, "the forward's status, caught up")


@pytest.mark.sqlite_only
@pytest.mark.parametrize("pipeline,message", [
    ("  s:\n    direction: out\n    author: a\n    query: SELECT 1 AS x\n    mode: append\n"
     "    destination: {kafka: {connection: k, topic: t}}\n"
     "    forward: {kafka: {connection: k, topic: u}}\n",
     "pipelines.s: forward applies to streams"),
    ("  h:\n    direction: stream\n    source: http\n    key: abc\n"
     "    forward: {kafka: {connection: pg, topic: t}}\n",
     "pipelines.h: forward.kafka: connection pg is of kind postgres; it needs kind kafka"),
    ("  h:\n    direction: stream\n    source: http\n    key: abc\n"
     "    forward: {kafka: {connection: k}}\n",
     "pipelines.h: forward.kafka: missing required field 'topic'"),
    ("  h:\n    direction: stream\n    source: http\n    key: abc\n"
     "    forward: {kafka: {connection: k, topic: t, colour: red}}\n",
     "unknown key 'colour' in pipeline h.forward.kafka"),
])
def test_forward_misconfigured_is_refused(tmp_path, pipeline, message):
    cfg = tmp_path / "zx.yaml"
    cfg.write_text("server:\n  data_dir: ./var\nconnections:\n"
                   "  k: {kind: kafka, brokers: [\"127.0.0.1:9092\"]}\n"
                   "  pg: {kind: postgres, dsn: \"postgresql://u@127.0.0.1/db\"}\n"
                   "pipelines:\n" + pipeline + "authors:\n  a: {tables: [x]}\n")
    p = subprocess.run([ZXD, "--check", "-c", str(cfg)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0
    assert message in p.stderr, p.stderr
