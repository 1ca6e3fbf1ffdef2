#!/usr/bin/env python3
"""outbound_bench.py — reverse syncs to event systems, search and APIs, side by
side with Bento v1.20.0 (tests/bench/build_bento.sh), and the fan-out latency.

Part 1, throughput.  A SQLite workspace holds ZX_BENCH_ROWS (1,000,000) rows
of ~90 bytes (id, customer, cents, status, note, ts).  Each target gets the
whole table once, from zx and then from Bento, one after the other:
  - Kafka (a fresh topic of 6 partitions on tests/services/kafka): zx sync
    `destination.kafka` (format json, key [id], batch_rows 1000, linger 20 ms);
    Bento `sql_select` → `kafka_franz` (key = id, batches of 1000);
  - OpenSearch (tests/services/opensearch, a fresh index each): zx
    `destination.opensearch` (batch_rows 1000); Bento `sql_select` →
    `opensearch` (action index, id = id, batches of 1000, max_in_flight 4);
  - an HTTP receiver in this script (it counts the items of each JSON array
    it is posted): zx `destination.http` (body array, batch_rows 1000,
    concurrency 4); Bento `sql_select` → `http_client` (a JSON array per
    batch of 1000 through `archive: json_array`, max_in_flight 4).
zx runs each sync in mode upsert with key [id] (its first run sends every row
and records a hash of each: the work a later run saves).  For each it
prints rows/s (wall clock of the run or of Bento's process) and CPU µs per
row (zx: user+sys of zxd's processes, the run's worker included, from
/proc; Bento: its own, from getrusage), checks the target holds every row,
and prints the ratio zx/bento of rows/s.

Part 2, fan-out latency.  PostgreSQL (tests/services/postgres) table orders
(1,000 rows) → zx CDC → the mirror table → three syncs `on: change`
(min_interval 100 ms, mode mirror) to Kafka, OpenSearch and the receiver.
A driver updates one random row a time at ZX_BENCH_RATE (1,000) changes/s
for ZX_BENCH_SECONDS (20); for one change in 100 it notes the commit time
and measures when each target first holds that version (Kafka: a consumer;
the receiver: its arrival; OpenSearch: GET of the document every 25 ms).
Prints p50 and p99 per target and for "all three".  Beside them the CDC
pipeline forwards what it applies (`forward: {kafka: ...}`, format json) to a
topic of its own: "forward" is when that topic first holds the version, the
path without a sync run (commit → mirror → forward journal → topic).

Part 3, forward throughput: a CDC pipeline with `forward:` to Kafka (format
debezium): its initial copy of ZX_BENCH_FWD_ROWS (200,000) rows and one
UPDATE of all of them, each timed until the topic holds it.

Usage: outbound_bench.py [--throughput-only | --latency-only | --forward-only]
Environment: ZX_BUILD_DIR, ZX_BENCH_ROWS, ZX_BENCH_RATE, ZX_BENCH_SECONDS,
ZX_BENCH_SYNC_BATCH (the HTTP sync's batch_rows, default 10000),
ZX_BENCH_TARGETS (part 1's targets, default kafka,opensearch,http), BENTO (the
binary; else build_bento.sh's).
It never talks to anything but 127.0.0.1 and kills what it started.
"""
import http.server
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("ZX_BUILD_DIR", os.path.join(REPO, "build"))
ZXD = os.path.join(BUILD, "supervisor", "zxd")
ZXCTL = os.path.join(BUILD, "zxctl", "zxctl")
ROWS = int(os.environ.get("ZX_BENCH_ROWS", "1000000"))
RATE = int(os.environ.get("ZX_BENCH_RATE", "1000"))
SECONDS = int(os.environ.get("ZX_BENCH_SECONDS", "20"))
# rows the sync hands its destination at a time (its `batch_rows`; default
# 10000): the HTTP sender keeps `concurrency` requests in flight within one
SYNC_BATCH = int(os.environ.get("ZX_BENCH_SYNC_BATCH", "10000"))
# which targets part 1 measures (comma-separated; default all three)
TARGETS = os.environ.get("ZX_BENCH_TARGETS", "kafka,opensearch,http").split(",")


def service(name):
    p = subprocess.run([os.path.join(REPO, "tests", "services", name), "start"],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        sys.exit(f"tests/services/{name} start failed:\n{p.stderr[-3000:]}")
    return dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)


# ---- the HTTP receiver -----------------------------------------------------

class Receiver:
    def __init__(self, record=False):
        self.items = 0
        self.seen = {}          # id -> [(v, time)], when record
        self.lock = threading.Lock()
        rcv = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                now = time.time()
                if record:
                    for it in json.loads(body):
                        with rcv.lock:
                            rcv.seen.setdefault(it.get("id"), []).append((it.get("v"), now))
                with rcv.lock:
                    rcv.items += body.count(b'"id":')
                # the whole answer in one write: headers and body in two
                # segments would stall each answer on Nagle and the
                # client's delayed ACK
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                 b"Content-Type: application/json\r\n\r\n{}")

            def log_message(self, *a):
                pass

        class S(http.server.ThreadingHTTPServer):
            def server_bind(self):
                super().server_bind()

            def get_request(self):
                conn, addr = super().get_request()
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return conn, addr

        self.srv = S(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


# ---- zxd ---------------------------------------------------------------------

# the start of every configuration here: the SQLite workspace under data_dir
HEAD = """server:
  data_dir: ./var
  control_socket: zxd.sock
workspace:
  sqlite: {path: workspace.db}
"""

def proc_cpu(pid, children=False):
    with open(f"/proc/{pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    t = int(st[11]) + int(st[12]) + ((int(st[13]) + int(st[14])) if children else 0)
    return t / os.sysconf("SC_CLK_TCK")


class Zxd:
    def __init__(self, root, config):
        self.root = root
        self.cfg = os.path.join(root, "zx.yaml")
        with open(self.cfg, "w") as f:
            f.write(config)
        self.log = open(os.path.join(root, "zxd.log"), "ab")
        self.proc = subprocess.Popen([ZXD, "-c", self.cfg], stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        sock = os.path.join(root, "var", "zxd.sock")
        for _ in range(600):
            if os.path.exists(sock) and self.zxctl("status").returncode == 0:
                break
            time.sleep(0.1)
        else:
            sys.exit("zxd did not start: see " + os.path.join(root, "zxd.log"))

    def zxctl(self, *args, timeout=3600):
        return subprocess.run([ZXCTL, "-c", self.cfg, *args], capture_output=True, text=True,
                              timeout=timeout)

    def cpu(self):
        """user+sys seconds of zxd's processes (reaped workers included)."""
        total = proc_cpu(self.proc.pid, children=True)
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                    if ppid == self.proc.pid:
                        total += proc_cpu(int(d))
                except (OSError, ValueError, IndexError):
                    pass
        return total

    def run(self, name):
        c0, t0 = self.cpu(), time.monotonic()
        p = self.zxctl("--json", "run", name, "--wait")
        t1, c1 = time.monotonic(), self.cpu()
        rec = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
        if rec.get("state") != "succeeded":
            sys.exit(f"zx run {name} failed: {p.stdout} {p.stderr}")
        return t1 - t0, c1 - c0

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=60)
        except Exception:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()


def bento_binary():
    b = os.environ.get("BENTO")
    if b:
        return b
    p = subprocess.run(["bash", os.path.join(REPO, "tests", "bench", "build_bento.sh")],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("build_bento.sh failed:\n" + p.stderr[-2000:])
    return p.stdout.strip().splitlines()[-1]


def run_bento(binary, root, name, config):
    path = os.path.join(root, f"bento_{name}.yaml")
    with open(path, "w") as f:
        f.write(config)
    before = os.times()
    t0 = time.monotonic()
    with open(os.path.join(root, f"bento_{name}.log"), "wb") as log:
        p = subprocess.run([binary, "-c", path, "--log.level", "warn"], stdout=log,
                           stderr=log, timeout=3600)
    wall = time.monotonic() - t0
    after = os.times()
    if p.returncode != 0:
        sys.exit(f"bento {name} exited {p.returncode}: see {root}/bento_{name}.log")
    cpu = (after.children_user - before.children_user) + \
          (after.children_system - before.children_system)
    return wall, cpu


# ---- part 1 ------------------------------------------------------------------

def make_workspace(path):
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, cents INTEGER, "
               "status TEXT, note TEXT, ts TEXT)")
    r = random.Random(1)
    st = ["new", "paid", "shipped", "refunded"]
    batch = []
    for i in range(1, ROWS + 1):
        batch.append((i, f"c{r.randint(1, 50000)}", r.randint(0, 10**7), st[i % 4],
                      f"note {r.random():.8f}", f"2026-12-0{1 + i % 3}T10:00:00Z"))
        if len(batch) == 50000:
            db.executemany("INSERT INTO orders VALUES (?,?,?,?,?,?)", batch)
            batch = []
    if batch:
        db.executemany("INSERT INTO orders VALUES (?,?,?,?,?,?)", batch)
    db.commit()
    db.close()


def kafka_count(boot, topic):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": boot, "group.id": "zxbench-count"})
    md = c.list_topics(topic, timeout=30)
    n = 0
    for p in md.topics[topic].partitions:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        n += hi - lo
    c.close()
    return n


def new_topic(boot, name, parts=6):
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": boot})
    for f in a.create_topics([NewTopic(name, parts, 1)]).values():
        f.result(60)


def os_count(url, index):
    import urllib.request
    urllib.request.urlopen(urllib.request.Request(f"{url}/{index}/_refresh", method="POST"),
                           timeout=120).read()
    with urllib.request.urlopen(f"{url}/{index}/_count", timeout=60) as r:
        return json.load(r)["count"]


def throughput(root, bento):
    kafka, osr = service("kafka"), service("opensearch")
    boot, osurl = kafka["PLAINTEXT"], osr["URL"]
    ws = os.path.join(root, "var", "workspace.db")
    os.makedirs(os.path.dirname(ws), exist_ok=True)
    t0 = time.monotonic()
    make_workspace(ws)
    print(f"workspace: {ROWS} rows in {time.monotonic() - t0:.1f} s", flush=True)
    tag = uuid.uuid4().hex[:8]
    topics = {w: f"zxbench-{w}-{tag}" for w in ("zx", "bento")}
    for t in topics.values():
        new_topic(boot, t)
    index = {w: f"zxbench-{w}-{tag}" for w in ("zx", "bento")}
    rcv = Receiver()
    q = "SELECT id, customer, cents, status, note, ts FROM orders"
    cfg = HEAD + f"""authors:
  bench: {{tables: [orders]}}
connections:
  k: {{kind: kafka, brokers: ["{boot}"]}}
  search: {{kind: opensearch, url: "{osurl}"}}
  api: {{kind: http, base_url: "{rcv.url}"}}
pipelines:
  to_kafka:
    direction: out
    author: bench
    query: "{q}"
    mode: upsert
    key: [id]
    destination: {{kafka: {{connection: k, topic: {topics['zx']}, format: json, batch_rows: 1000, linger_ms: 20}}}}
  to_search:
    direction: out
    author: bench
    query: "{q}"
    mode: upsert
    key: [id]
    destination: {{opensearch: {{connection: search, index: {index['zx']}, batch_rows: 1000}}}}
  to_api:
    direction: out
    author: bench
    query: "{q}"
    mode: upsert
    key: [id]
    batch_rows: {SYNC_BATCH}
    destination: {{http: {{connection: api, path: /items, body: array, batch_rows: 1000, concurrency: 4}}}}
"""
    z = Zxd(root, cfg)
    results = {}
    try:
        for name, target in (("to_kafka", "kafka"), ("to_search", "opensearch"),
                             ("to_api", "http")):
            if target not in TARGETS:
                continue
            before = rcv.items
            wall, cpu = z.run(name)
            results[(target, "zx")] = (wall, cpu)
            print(f"zx    {target:10s} {ROWS / wall:10.0f} rows/s  {cpu * 1e6 / ROWS:6.1f} "
                  f"CPU-µs/row  ({wall:.1f} s, {cpu:.1f} CPU-s)", flush=True)
            if target == "http":
                assert rcv.items - before == ROWS, (rcv.items - before)
    finally:
        z.stop()
    if "kafka" in TARGETS:
        assert kafka_count(boot, topics["zx"]) == ROWS
    if "opensearch" in TARGETS:
        assert os_count(osurl, index["zx"]) == ROWS

    src = f"""input:
  sql_select:
    driver: sqlite
    dsn: "file:{ws}?mode=ro"
    table: orders
    columns: [id, customer, cents, status, note, ts]
"""
    outs = {
        "kafka": f"""output:
  kafka_franz:
    seed_brokers: ["{boot}"]
    topic: {topics['bento']}
    key: ${{! json("id") }}
    max_in_flight: 10
    batching: {{count: 1000, period: 20ms}}
""",
        "opensearch": f"""output:
  opensearch:
    urls: ["{osurl}"]
    index: {index['bento']}
    action: index
    id: ${{! json("id") }}
    max_in_flight: 4
    batching: {{count: 1000, period: 1s}}
""",
        "http": f"""output:
  http_client:
    url: {rcv.url}/items
    verb: POST
    headers: {{Content-Type: application/json}}
    max_in_flight: 4
    batching:
      count: 1000
      period: 1s
      processors:
        - archive: {{format: json_array}}
""",
    }
    for target, out in outs.items():
        if target not in TARGETS:
            continue
        before = rcv.items
        wall, cpu = run_bento(bento, root, target, src + out)
        results[(target, "bento")] = (wall, cpu)
        print(f"bento {target:10s} {ROWS / wall:10.0f} rows/s  {cpu * 1e6 / ROWS:6.1f} "
              f"CPU-µs/row  ({wall:.1f} s, {cpu:.1f} CPU-s)", flush=True)
        if target == "http":
            assert rcv.items - before == ROWS, (rcv.items - before)
    if "kafka" in TARGETS:
        assert kafka_count(boot, topics["bento"]) == ROWS
    if "opensearch" in TARGETS:
        assert os_count(osurl, index["bento"]) == ROWS
    rcv.close()
    for target in TARGETS:
        zw, zc = results[(target, "zx")]
        bw, bc = results[(target, "bento")]
        print(f"ratio zx/bento {target:10s}: rows/s {bw / zw:.2f}, CPU per row {zc / bc:.2f}")


# ---- part 2 ------------------------------------------------------------------

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def latency(root):
    import psycopg
    import urllib.request
    from confluent_kafka import Consumer
    kafka, osr, pg = service("kafka"), service("opensearch"), service("postgres")
    boot, osurl = kafka["PLAINTEXT"], osr["URL"]
    dsn = pg["DSN"]
    db = "zxbench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {db}")
    sdsn = dsn.rsplit("/", 1)[0] + "/" + db
    with psycopg.connect(sdsn, autocommit=True) as c:
        c.execute("CREATE TABLE orders (id int PRIMARY KEY, v bigint NOT NULL)")
        c.execute("INSERT INTO orders SELECT g, 0 FROM generate_series(1, 1000) g")
    tag = uuid.uuid4().hex[:8]
    topic, index = f"zxlat-{tag}", f"zxlat-{tag}"
    ftopic = f"zxfwd-{tag}"
    new_topic(boot, topic, 3)
    new_topic(boot, ftopic, 3)
    rcv = Receiver(record=True)
    on = "on: change\n    min_interval: 100ms"
    q = "SELECT id, v FROM orders"
    cfg = HEAD + f"""authors:
  bench: {{tables: [orders]}}
connections:
  src: {{kind: postgres, dsn: "{sdsn}"}}
  k: {{kind: kafka, brokers: ["{boot}"]}}
  search: {{kind: opensearch, url: "{osurl}"}}
  api: {{kind: http, base_url: "{rcv.url}"}}
pipelines:
  cdc:
    direction: stream
    source: postgres
    connection: src
    tables: [orders]
    forward: {{kafka: {{connection: k, topic: {ftopic}, format: json, linger_ms: 5}}}}
  to_kafka:
    direction: out
    author: bench
    query: "{q}"
    mode: mirror
    key: [id]
    {on}
    destination: {{kafka: {{connection: k, topic: {topic}, format: json, linger_ms: 5}}}}
  to_search:
    direction: out
    author: bench
    query: "{q}"
    mode: mirror
    key: [id]
    {on}
    destination: {{opensearch: {{connection: search, index: {index}}}}}
  to_api:
    direction: out
    author: bench
    query: "{q}"
    mode: mirror
    key: [id]
    {on}
    destination: {{http: {{connection: api, path: /items, body: array, concurrency: 2}}}}
"""
    os.makedirs(os.path.join(root, "lat"), exist_ok=True)
    z = Zxd(os.path.join(root, "lat"), cfg)
    kseen, fseen, stop = {}, {}, threading.Event()

    def consume(tp, seen):
        c = Consumer({"bootstrap.servers": boot, "group.id": "zxlat-" + tp,
                      "auto.offset.reset": "earliest"})
        c.subscribe([tp])
        while not stop.is_set():
            m = c.poll(0.1)
            if m is None or m.error() or m.value() is None:
                continue
            now = time.time()
            d = json.loads(m.value())
            seen.setdefault(d["id"], []).append((d["v"], now))
        c.close()

    threading.Thread(target=consume, args=(topic, kseen), daemon=True).start()
    threading.Thread(target=consume, args=(ftopic, fseen), daemon=True).start()
    # the first runs copy the 1,000 rows: wait for them
    time.sleep(5)
    samples, osseen = [], {}

    def os_poll(k, v):
        deadline = time.time() + 60
        while time.time() < deadline and not stop.is_set():
            try:
                with urllib.request.urlopen(f"{osurl}/{index}/_doc/{k}", timeout=10) as r:
                    if json.load(r)["_source"]["v"] >= v:
                        osseen[(k, v)] = time.time()
                        return
            except Exception:
                pass
            time.sleep(0.025)

    vers = {}
    with psycopg.connect(sdsn, autocommit=True) as c:
        t_end = time.monotonic() + SECONDS
        n = 0
        start = time.monotonic()
        while time.monotonic() < t_end:
            k = random.randint(1, 1000)
            vers[k] = vers.get(k, 0) + 1
            c.execute("UPDATE orders SET v = %s WHERE id = %s", (vers[k], k))
            n += 1
            if n % 100 == 0:
                samples.append((k, vers[k], time.time()))
                threading.Thread(target=os_poll, args=(k, vers[k]), daemon=True).start()
            ahead = start + n / RATE - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    rate = n / (time.monotonic() - start)
    time.sleep(15)
    stop.set()

    def first(seen, k, v):
        ts = [t for (vv, t) in seen.get(k, []) if vv is not None and vv >= v]
        return min(ts) if ts else None

    lat = {"kafka": [], "opensearch": [], "http": [], "all three": [], "forward": []}
    missing = 0
    for k, v, t in samples:
        a = first(kseen, k, v)
        b = osseen.get((k, v))
        h = first(rcv.seen, k, v)
        for name, x in (("kafka", a), ("opensearch", b), ("http", h)):
            if x is not None:
                lat[name].append((x - t) * 1000)
        f = first(fseen, k, v)
        if f is not None:
            lat["forward"].append((f - t) * 1000)
        if None in (a, b, h):
            missing += 1
        else:
            lat["all three"].append((max(a, b, h) - t) * 1000)
    z.stop()
    rcv.close()
    print(f"fan-out latency at {rate:.0f} changes/s for {SECONDS} s, {len(samples)} samples "
          f"({missing} not seen everywhere within 15 s of the end):")
    for name, xs in lat.items():
        print(f"  {name:10s} p50 {pct(xs, 50):8.0f} ms   p99 {pct(xs, 99):8.0f} ms   "
              f"(n={len(xs)})")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                  f"WHERE database = '{db}'")
        c.execute(f"DROP DATABASE {db} WITH (FORCE)")


def forward_throughput(root):
    """Part 3: a CDC pipeline forwarding to Kafka (format debezium): its
    initial copy of ZX_BENCH_FWD_ROWS rows, then one UPDATE of every row;
    for each, the time until the mirror holds it and until the topic does,
    and the forwarded messages/s."""
    import psycopg
    kafka, pg = service("kafka"), service("postgres")
    boot, dsn = kafka["PLAINTEXT"], pg["DSN"]
    n = int(os.environ.get("ZX_BENCH_FWD_ROWS", "200000"))
    db = "zxbench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {db}")
    sdsn = dsn.rsplit("/", 1)[0] + "/" + db
    with psycopg.connect(sdsn, autocommit=True) as c:
        c.execute("CREATE TABLE orders (id int PRIMARY KEY, customer text NOT NULL, "
                  "cents bigint NOT NULL, status text NOT NULL)")
        c.execute(f"INSERT INTO orders SELECT g, 'c' || (g % 50), g * 100, 'new' "
                  f"FROM generate_series(1, {n}) g")
    topic = "zxfwdt-" + uuid.uuid4().hex[:8]
    new_topic(boot, topic, 6)
    cfg = HEAD + f"""connections:
  src: {{kind: postgres, dsn: "{sdsn}"}}
  k: {{kind: kafka, brokers: ["{boot}"]}}
pipelines:
  cdc:
    direction: stream
    source: postgres
    connection: src
    tables: [orders]
    forward: {{kafka: {{connection: k, topic: {topic}, format: debezium, linger_ms: 20}}}}
"""
    os.makedirs(os.path.join(root, "fwd"), exist_ok=True)
    db_path = os.path.join(root, "fwd", "var", "workspace.db")   # under data_dir

    def mirror_count():
        if not os.path.exists(db_path):
            return -1
        try:
            with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30) as c:
                return c.execute("SELECT count(*) FROM orders").fetchone()[0]
        except sqlite3.Error:
            return -1

    def wait(pred, what):
        end = time.monotonic() + 900
        while not pred():
            if time.monotonic() > end:
                sys.exit(f"forward bench: {what} not reached within 900 s")
            time.sleep(0.05)
        return time.monotonic()

    t0 = time.monotonic()
    z = Zxd(os.path.join(root, "fwd"), cfg)
    c0 = z.cpu()
    tm = wait(lambda: mirror_count() == n, "the copy in the mirror")
    tk = wait(lambda: kafka_count(boot, topic) >= n, "the copy in the topic")
    c1 = z.cpu()
    print(f"forward, initial copy of {n} rows (CDC, format debezium, 6 partitions):")
    print(f"  mirror after {tm - t0:6.1f} s; topic after {tk - t0:6.1f} s "
          f"({n / (tk - t0):,.0f} messages/s from zxd's start), zxd CPU {c1 - c0:.1f} s")
    with psycopg.connect(sdsn, autocommit=True) as c:
        t1 = time.monotonic()
        c.execute("UPDATE orders SET cents = cents + 1")
    c2 = z.cpu()
    tk2 = wait(lambda: kafka_count(boot, topic) >= 2 * n, "the updates in the topic")
    c3 = z.cpu()
    print(f"forward, one UPDATE of {n} rows: in the topic {tk2 - t1:6.1f} s after its "
          f"commit ({n / (tk2 - t1):,.0f} changes/s), zxd CPU {c3 - c2:.1f} s "
          f"({(c3 - c2) / n * 1e6:.1f} µs a change)")
    z.stop()
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                  f"WHERE database = '{db}'")
        c.execute(f"DROP DATABASE {db} WITH (FORCE)")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    root = tempfile.mkdtemp(prefix="zxbench-out-")
    try:
        if mode not in ("--latency-only", "--forward-only"):
            throughput(root, bento_binary())
        if mode not in ("--throughput-only", "--forward-only"):
            latency(root)
        if mode in ("", "--forward-only"):
            forward_throughput(root)
    finally:
        if not os.environ.get("ZX_BENCH_KEEP"):
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
