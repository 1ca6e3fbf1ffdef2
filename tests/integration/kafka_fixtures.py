"""
Kafka fixtures for the end-to-end tests (test_kafka.py, test_kafka_crash.py).

What it is for: a real Apache Kafka broker (tests/services/kafka: 4.1.x by
default, 3.9.x for SCRAM with an old librdkafka), started once per test
session and left running (test.sh stops it); producers and admin calls
through clients nobody here wrote (confluent-kafka from PyPI, Debian's
kcat); and a Zxd whose configuration has Kafka connections and pipelines.

What it must never do: stop the broker (other modules use it), talk to
anything but 127.0.0.1, or write a password into a file other than the
environment of the zxd it starts (passwords reach zxd through ${env:}).
"""

import ctypes
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import REPO, ZXD, Zxd, _mkroot, teardown_zxds, uid, wait_for

KAFKA_SCRIPT = os.path.join(REPO, "tests", "services", "kafka")

USERS = {"zx": "zx-secret", "noacl": "noacl-secret", "admin": "admin-secret"}
SECRETS = ("zx-secret", "noacl-secret", "admin-secret", "wrong-secret-")


def _start_broker(version=None, services_dir=None, command="start"):
    """The broker of tests/services/kafka (`command`: start, or resume a
    halted one); services_dir: its own ZX_SERVICES_DIR (a broker of the
    test's own, which it may stop and start), else the environment's."""
    if not os.path.exists(KAFKA_SCRIPT):
        pytest.fail(f"{KAFKA_SCRIPT} is missing")
    args = [KAFKA_SCRIPT, command] + ([version] if version else [])
    env = dict(os.environ, ZX_SERVICES_DIR=services_dir) if services_dir else None
    p = subprocess.run(args, capture_output=True, text=True, timeout=900,
                       stdin=subprocess.DEVNULL, env=env)
    if p.returncode != 0:
        pytest.fail(f"{' '.join(args)} failed ({p.returncode}):\n{p.stderr[-4000:]}")
    env = {}
    for line in p.stdout.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            env[k.strip()] = v.strip()
    for k in ("KAFKA_VERSION", "PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL", "CA", "OTHER_CA"):
        assert k in env, f"{' '.join(args)} printed no {k}=: {p.stdout!r}"
    return Kafka(env, services_dir)


def run_kafka_script(command, services_dir, version=None):
    """tests/services/kafka COMMAND (halt, stop) on the broker of
    services_dir; fails the test when it fails."""
    args = [KAFKA_SCRIPT, command] + ([version] if version else [])
    p = subprocess.run(args, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL,
                       env=dict(os.environ, ZX_SERVICES_DIR=services_dir))
    assert p.returncode == 0, f"{' '.join(args)} failed ({p.returncode}):\n{p.stderr[-4000:]}"


class Kafka:
    """One running broker: its addresses and a few admin and produce calls
    (all through its PLAINTEXT listener, whose clients are super users)."""

    def __init__(self, env, services_dir=None):
        self.env = env
        self.services_dir = services_dir
        self.version = env["KAFKA_VERSION"]
        self.major = int(self.version.split(".")[0])
        self._admin = None
        self._producer = None

    def addr(self, listener):
        return self.env[listener.upper()]

    # -- admin -------------------------------------------------------------

    def admin(self):
        if self._admin is None:
            from confluent_kafka.admin import AdminClient
            self._admin = AdminClient({"bootstrap.servers": self.addr("plaintext")})
        return self._admin

    def create_topic(self, name=None, partitions=1):
        from confluent_kafka.admin import NewTopic
        name = name or f"zx-{uid()[:12]}"
        fs = self.admin().create_topics([NewTopic(name, num_partitions=partitions,
                                                  replication_factor=1)])
        for f in fs.values():
            f.result(timeout=60)
        # wait until the broker serves it (metadata with its partitions)
        wait_for(lambda: self.partitions(name) == partitions,
                 f"topic {name} with {partitions} partitions", deadline=60)
        return name

    def delete_topic(self, name):
        """Delete topic name and wait until the broker no longer serves it."""
        fs = self.admin().delete_topics([name], operation_timeout=60)
        for f in fs.values():
            f.result(timeout=60)
        wait_for(lambda: self.partitions(name) == 0, f"topic {name} deleted", deadline=60)

    def create_topic_again(self, name, partitions=1):
        """Create topic name right after delete_topic (the broker may still
        be removing the old one: retried until it accepts)."""
        last = {}

        def made():
            try:
                self.create_topic(name, partitions)
                return True
            except Exception as e:  # TOPIC_ALREADY_EXISTS while deleting
                last["e"] = e
                time.sleep(0.5)
                return False
        wait_for(made, lambda: f"topic {name} created again (last: {last.get('e')!r})",
                 deadline=120)
        return name

    def group_members(self, group):
        """How many members the broker has in group (0 when it has none)."""
        fs = self.admin().describe_consumer_groups([group], request_timeout=30)
        return len(fs[group].result(timeout=30).members)

    def add_partitions(self, topic, total):
        from confluent_kafka.admin import NewPartitions
        fs = self.admin().create_partitions([NewPartitions(topic, total)])
        for f in fs.values():
            f.result(timeout=60)
        wait_for(lambda: self.partitions(topic) == total,
                 f"topic {topic} with {total} partitions", deadline=60)

    def partitions(self, topic):
        md = self.admin().list_topics(topic=topic, timeout=30)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return 0
        return len(t.partitions)

    def end_offsets(self, topic):
        """{partition: high watermark}"""
        from confluent_kafka import Consumer
        c = Consumer({"bootstrap.servers": self.addr("plaintext"), "group.id": "zx-tests-probe",
                      "enable.auto.commit": False})
        try:
            out = {}
            for p in range(self.partitions(topic)):
                lo, hi = c.get_watermark_offsets(_tp(topic, p), timeout=30)
                out[p] = hi
            return out
        finally:
            c.close()

    def committed(self, group, topic):
        """{partition: committed offset (or -1001 when none)}"""
        from confluent_kafka import Consumer
        c = Consumer({"bootstrap.servers": self.addr("plaintext"), "group.id": group,
                      "enable.auto.commit": False})
        try:
            tps = [_tp(topic, p) for p in range(self.partitions(topic))]
            return {tp.partition: tp.offset for tp in c.committed(tps, timeout=30)}
        finally:
            c.close()

    # -- produce -----------------------------------------------------------

    def producer(self):
        if self._producer is None:
            from confluent_kafka import Producer
            self._producer = Producer({"bootstrap.servers": self.addr("plaintext"),
                                       "linger.ms": 5, "queue.buffering.max.messages": 1000000,
                                       "batch.num.messages": 10000})
        return self._producer

    def produce(self, topic, values, keys=None, partition=None, timestamp=None):
        """Produce each value (str, bytes or None: a tombstone) with the
        matching key; all to `partition` when given (else by key, or round
        robin over the partitions without keys).  Waits for every ack."""
        p = self.producer()
        n = self.partitions(topic) if partition is None else None
        errors = []

        def cb(err, msg):
            if err is not None:
                errors.append(err)
        for i, v in enumerate(values):
            kw = {"value": v, "on_delivery": cb}
            if keys is not None:
                kw["key"] = keys[i]
            if partition is not None:
                kw["partition"] = partition
            elif keys is None:
                kw["partition"] = i % n
            if timestamp is not None:
                kw["timestamp"] = timestamp
            end = time.monotonic() + 60
            while True:
                try:
                    p.produce(topic, **kw)
                    break
                except BufferError:
                    p.poll(0.1)
                except Exception as e:  # a partition added since the
                    # producer last read the metadata: refresh it
                    if "UNKNOWN_PARTITION" not in str(e) or time.monotonic() > end:
                        raise
                    p.list_topics(topic, timeout=10)
                    time.sleep(0.2)
            if i % 10000 == 0:
                p.poll(0)
        remaining = p.flush(120)
        assert remaining == 0, f"{remaining} messages not delivered to {topic}"
        assert not errors, f"produce errors: {errors[:5]}"

    def produce_kcat(self, topic, lines, partition=0):
        """Produce with Debian's kcat: each (key, value) line, key and value
        separated by a tab."""
        assert shutil.which("kcat"), "kcat is not installed (apt-get install kcat)"
        data = "".join(f"{k}\t{v}\n" for k, v in lines).encode()
        p = subprocess.run(["kcat", "-P", "-b", self.addr("plaintext"), "-t", topic,
                            "-p", str(partition), "-K", "\t"], input=data,
                           capture_output=True, timeout=60)
        assert p.returncode == 0, f"kcat failed: {p.stderr.decode(errors='replace')}"

    # -- connections ---------------------------------------------------------

    def connection(self, security="plaintext", mechanism="PLAIN", user="zx", password=None,
                   ca="CA", brokers=None, properties=None):
        """A connection spec for KafkaZxd (ca: "CA", "OTHER_CA", a path, or
        None for no tls.ca)."""
        spec = {"brokers": brokers or [self.addr(security)], "security": security}
        if security.startswith("sasl"):
            spec["sasl"] = {"mechanism": mechanism, "username": user,
                            "password": password if password is not None else USERS[user]}
        if security in ("ssl", "sasl_ssl") and ca:
            spec["tls"] = {"ca": self.env.get(ca, ca)}
        if properties:
            spec["properties"] = properties
        return spec


def _tp(topic, partition):
    from confluent_kafka import TopicPartition
    return TopicPartition(topic, partition)


@pytest.fixture(scope="session")
def kafka():
    """The main broker (Kafka 4.1.x), started once per session."""
    return _start_broker()


@pytest.fixture(scope="session")
def kafka39():
    """A Kafka 3.9.x broker (SCRAM works there with librdkafka < 2.6.1)."""
    return _start_broker("3.9")


def linked_rdkafka_version():
    """rd_kafka_version() of the librdkafka zxd is linked against, or None."""
    try:
        out = subprocess.run(["ldd", ZXD], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return None
    m = re.search(r"librdkafka\.so[^ ]* => (\S+)", out)
    if not m:
        return None
    lib = ctypes.CDLL(m.group(1))
    lib.rd_kafka_version.restype = ctypes.c_int
    return lib.rd_kafka_version()


# --------------------------------------------------------------------------
# zxd with Kafka pipelines
# --------------------------------------------------------------------------

class KafkaZxd(Zxd):
    """A Zxd whose configuration has Kafka connections and pipelines.

    kpipes: {name: {"connection": str, "topic": str | "topics": [..] |
                    "regex": "^...", "group": str|None, "start": "oldest"|"new",
                    "table": str|None, "metadata": [..]|None,
                    "extra": {option: YAML text}}}
    connections: {name: Kafka.connection(...)}; passwords go through
    ${env:ZX_KAFKA_PW_<NAME>}."""

    def __init__(self, root, kpipes, connections, **kw):
        self.kpipes = dict(kpipes)
        self.connections = dict(connections)
        super().__init__(root, {}, **kw)

    @staticmethod
    def pw_env(conn):
        return "ZX_KAFKA_PW_" + re.sub(r"[^A-Za-z0-9]", "_", conn).upper()

    def set_kafka(self, kpipes=None, connections=None):
        if kpipes is not None:
            self.kpipes = dict(kpipes)
        if connections is not None:
            self.connections = dict(connections)
        self.write_config()

    def config_text(self):
        text = super().config_text()          # ends with "pipelines:"
        lines = []
        for name, s in self.kpipes.items():
            lines += [f"  {name}:", "    direction: stream", "    source: kafka",
                      f"    connection: {s['connection']}"]
            if "topic" in s:
                lines.append(f"    topic: {s['topic']}")
            elif "regex" in s:
                lines.append(f"    topics: {json.dumps(s['regex'])}")
            else:
                lines.append(f"    topics: [{', '.join(s['topics'])}]")
            if s.get("group"):
                lines.append(f"    group: {json.dumps(s['group'])}")
            if s.get("start"):
                lines.append(f"    start: {s['start']}")
            lines.append(f"    table: {s.get('table') or name.replace('-', '_')}")
            if s.get("metadata"):
                lines.append(f"    metadata: [{', '.join(s['metadata'])}]")
            for k, v in (s.get("extra") or {}).items():   # written as given (YAML)
                lines.append(f"    {k}: {v}")
        lines.append("connections:")
        for name, c in self.connections.items():
            lines += [f"  {name}:", "    kind: kafka",
                      f"    brokers: [{', '.join(json.dumps(b) for b in c['brokers'])}]",
                      f"    security: {c['security']}"]
            if "sasl" in c:
                env = self.pw_env(name)
                self.env[env] = c["sasl"]["password"]
                lines += ["    sasl:", f"      mechanism: {c['sasl']['mechanism']}",
                          f"      username: {json.dumps(c['sasl']['username'])}",
                          f"      password: \"${{env:{env}}}\""]
            if "tls" in c:
                lines += ["    tls:", f"      ca: {json.dumps(c['tls']['ca'])}"]
            if c.get("properties"):
                lines.append("    properties:")
                for k, v in c["properties"].items():
                    lines.append(f"      {k}: {json.dumps(v)}")
        return text + "\n".join(lines) + "\n"

    def table(self, name):
        s = self.kpipes.get(name) or {}
        return s.get("table") or name.replace("-", "_")

    # -- what the tests look at ----------------------------------------------

    def source_status(self, name):
        p = self.pipeline(name)
        return (p or {}).get("source_status") or {}

    def source_error(self, name):
        p = self.pipeline(name)
        return (p or {}).get("source_error")

    def wait_source_error(self, name, *phrases, deadline=60):
        last = {}

        def ok():
            e = self.source_error(name)
            last["e"] = e
            return e and all(ph in e for ph in phrases)
        wait_for(ok, lambda: f"source_error of {name} containing {phrases} "
                 f"(last: {last.get('e')!r})\n" + self.log_tail(30), deadline)
        return last["e"]

    def test_output(self, name, timeout=60):
        """`zxctl test NAME`: (exit code, stdout + stderr)."""
        p = self.zxctl("test", name, timeout=timeout)
        return p.returncode, (p.stdout or "") + (p.stderr or "")

    def offsets(self, name, where=""):
        """[(partition, offset)] of every row of the pipeline's table."""
        t = self.table(name)
        if not self.table_exists(t):
            return []
        return self.query(f'SELECT "_partition", "_offset" FROM "{t}"'
                          + (f" WHERE {where}" if where else ""))

    def assert_no_secret(self, status=True):
        """No password (Kafka's, nor the workspace's) in the log nor in
        `zxctl status`."""
        super().assert_no_secret(status)
        with open(self.log_path, "rb") as f:
            log = f.read().decode("utf-8", "replace")
        st = ""
        if self.proc is not None and self.proc.poll() is None:
            st = self.zxctl("--json", "status").stdout or ""
        for s in SECRETS:
            assert s not in log, f"a password ({s}) is in the zxd log"
            assert s not in st, f"a password ({s}) is in zxctl status"


@pytest.fixture
def make_kzxd():
    """Factory: make_kzxd(kpipes, connections, start=True, **opts) -> KafkaZxd.
    Everything it made is killed and removed at teardown."""
    made = []

    def make(kpipes, connections, start=True, **opts):
        z = KafkaZxd(_mkroot(), kpipes, connections, **opts)
        made.append(z)
        if start:
            z.start()
        return z
    yield make
    teardown_zxds(made)


def check_offsets(rows, ends, exact=True, what=""):
    """rows: [(partition, offset)]; ends: {partition: high watermark}.
    Every offset below each end must be there; with exact, once only.
    Returns the number of duplicates."""
    seen = {}
    for p, o in rows:
        seen[(p, o)] = seen.get((p, o), 0) + 1
    missing = [(p, o) for p, hi in ends.items() for o in range(hi) if (p, o) not in seen]
    assert not missing, f"{what}: {len(missing)} offsets missing, e.g. {missing[:10]}"
    extra = [k for k in seen if k[0] not in ends or k[1] >= ends[k[0]]]
    assert not extra, f"{what}: rows beyond the end offsets: {extra[:10]}"
    dups = sum(n - 1 for n in seen.values())
    if exact:
        assert dups == 0, f"{what}: {dups} duplicate rows"
    return dups


def wait_offsets(z, name, ends, deadline=60, what=""):
    """Wait until the table has every offset below ends."""
    total = sum(ends.values())
    z.wait_count(z.table(name), total, deadline=deadline)
    return check_offsets(z.offsets(name), ends, what=what or name)


def settle(seconds):
    """A pause where the test needs time to pass (never as a check)."""
    time.sleep(seconds)
