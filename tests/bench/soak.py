#!/usr/bin/env python3
"""soak.py — an hour of mixed load on one zxd, with reloads and SIGKILLs,
to show that memory and file descriptors stay flat and nothing is lost
(issue 23's soak; run through tests/bench/soak.sh, never in CI).

Load (rates are fixed, so that a minute is like any other):
  - clicks: HTTP pushes, ZX_SOAK_PUSH_RPS requests/s of 50 rows, each with
    an Idempotency-Key, sent again (same key) until answered 2xx;
  - events: a Kafka stream (4 partitions) fed ZX_SOAK_KAFKA_RATE messages/s;
  - shop: Postgres CDC of pgbench's accounts, branches and tellers while
    `pgbench -R ZX_SOAK_TPS` runs;
  - dbz: a real Debezium Server (tests/services/debezium) capturing table
    items into Kafka, mirrored by a zx Kafka stream in `format: debezium`,
    items changed ZX_SOAK_ITEM_RATE times/s (inserts, updates, deletes);
  - branches_out: a reverse sync every minute (schedule) to a Parquet file;
  - items_out: a reverse sync `on: change` (min_interval 5 s, mode mirror)
    of the items mirror into a Postgres table.
Chaos: SIGHUP to zxd every minute; every 30-90 s a SIGKILL of one of its
processes picked at random (the writer, the gateway, a stream's worker, a
sync's worker while it runs; never the supervisor).

Every minute it prints, per process: RSS (MiB) and open fds; per pipeline:
rows written, restarts, and the p99 of commit latency over that minute
(from GET /metrics' zx_commit_latency_seconds histogram: the upper bound
of the bucket holding the 99th percentile).  At the end it stops the load,
waits for zx to catch up, and checks: every click and every Kafka message
is in its table (at least once: distinct ids equal to those sent), the
CDC and Debezium mirrors equal their source tables, the Parquet file holds
every branch, and items_out's table equals the items mirror.  A JSON
report goes to ZX_SOAK_REPORT (default soak-report.json in the run's
folder).  Exit 0 only when every check passed.

Environment: ZX_BUILD_DIR, ZX_SOAK_SECONDS (3600), ZX_SOAK_PUSH_RPS (20),
ZX_SOAK_KAFKA_RATE (500), ZX_SOAK_TPS (100), ZX_SOAK_ITEM_RATE (20),
ZX_SOAK_KILL_EVERY (60: mean seconds between kills), ZX_SOAK_KEEP (keep
the run's folder).  It talks only to 127.0.0.1 and kills what it started.
"""
import atexit
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("ZX_BUILD_DIR", os.path.join(REPO, "build"))
ZXD = os.path.join(BUILD, "supervisor", "zxd")
ZXCTL = os.path.join(BUILD, "zxctl", "zxctl")
SECONDS = int(os.environ.get("ZX_SOAK_SECONDS", "3600"))
PUSH_RPS = float(os.environ.get("ZX_SOAK_PUSH_RPS", "20"))
KAFKA_RATE = float(os.environ.get("ZX_SOAK_KAFKA_RATE", "500"))
TPS = int(os.environ.get("ZX_SOAK_TPS", "100"))
ITEM_RATE = float(os.environ.get("ZX_SOAK_ITEM_RATE", "20"))
KILL_EVERY = float(os.environ.get("ZX_SOAK_KILL_EVERY", "60"))
PUSH_ROWS = 50
PGBENCH = next((p for p in ("/usr/lib/postgresql/15/bin/pgbench", shutil.which("pgbench") or "")
                if p and os.path.exists(p)), None)


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def service(name, *args, env=None, check=True):
    args = args or ("start",)
    p = subprocess.run([os.path.join(REPO, "tests", "services", name), *args], capture_output=True,
                       text=True, timeout=900, env=env)
    if p.returncode != 0 and check:
        sys.exit(f"tests/services/{name} {' '.join(args)} failed:\n{p.stderr[-3000:]}")
    return dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)


# ---- zxd's processes ---------------------------------------------------------

def children_of(root_pid):
    """{pid: title} of every process below root_pid (its title: cmdline)."""
    kids, out = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    todo = [root_pid]
    while todo:
        p = todo.pop()
        for c in kids.get(p, []):
            try:
                with open(f"/proc/{c}/cmdline", "rb") as f:
                    out[c] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            todo.append(c)
    return out


def rss_fds(pid):
    """(RSS MiB, its anonymous part MiB, open fds) of pid, or Nones.  The
    anonymous part is the process' own memory: RSS also counts the pages
    of the shared rings it has touched, which grow until the ring has
    wrapped once."""
    try:
        with open(f"/proc/{pid}/status") as f:
            st = {l.split(":")[0]: l.split()[1] for l in f if l.startswith(("VmRSS", "RssAnon"))}
        return (int(st["VmRSS"]) / 1024.0, int(st["RssAnon"]) / 1024.0,
                len(os.listdir(f"/proc/{pid}/fd")))
    except (OSError, KeyError, ValueError):
        return None, None, None


def role_of(title):
    """'writer', 'gateway', 'stream clicks', 'sync items_out'... from a title."""
    m = re.match(r"zxd: (.*)", title)
    return m.group(1).split(" (")[0].strip() if m else title


# ---- /metrics ----------------------------------------------------------------

def scrape(port, token):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = re.match(r'([a-zA-Z_:]+)(\{.*\})? (\S+)$', line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), tuple(sorted(labels.items())))] = float(m.group(3))
    return out


def lat_buckets(sm, pipeline):
    """[(le, cumulative count)] of zx_commit_latency_seconds for pipeline."""
    b = []
    for (name, labels), v in sm.items():
        d = dict(labels)
        if name == "zx_commit_latency_seconds_bucket" and d.get("pipeline") == pipeline:
            b.append((float("inf") if d["le"] == "+Inf" else float(d["le"]), v))
    return sorted(b)


def p99(prev, cur):
    """The upper bound of the bucket holding the 99th percentile of what
    was observed between two scrapes (None when nothing was)."""
    pd = dict(prev)
    diff = [(le, c - pd.get(le, 0)) for le, c in cur]
    if not diff or diff[-1][1] <= 0:
        return None
    want = 0.99 * diff[-1][1]
    return next(le for le, c in diff if c >= want)


def metric(sm, name, **labels):
    return sm.get((name, tuple(sorted(labels.items()))))


# ---- load --------------------------------------------------------------------

class Pusher(threading.Thread):
    """PUSH_RPS pushes of PUSH_ROWS rows a second; each batch sent again with
    its Idempotency-Key until it is answered 2xx."""

    def __init__(self, port, key, stop):
        super().__init__(daemon=True)
        self.port, self.key, self.stop = port, key, stop
        self.sent = 0          # ids 0 .. sent-1 are acknowledged
        self.retries = 0

    def run(self):
        t_next = time.monotonic()
        while not self.stop.is_set():
            rows = [{"id": self.sent + i, "user": f"u{random.randrange(1000)}",
                     "page": random.choice(["/", "/cart", "/pay"]), "ms": random.random() * 900}
                    for i in range(PUSH_ROWS)]
            body = json.dumps(rows).encode()
            idem = uuid.uuid4().hex
            while True:
                try:
                    req = urllib.request.Request(
                        f"http://127.0.0.1:{self.port}/api/streams/clicks/push", data=body,
                        method="POST", headers={"Authorization": f"Bearer {self.key}",
                                                "Content-Type": "application/json",
                                                "Idempotency-Key": idem})
                    with urllib.request.urlopen(req, timeout=30) as r:
                        if 200 <= r.status < 300:
                            break
                except (urllib.error.URLError, OSError, TimeoutError):
                    pass
                self.retries += 1
                if self.stop.is_set() and self.retries > 10**6:
                    return
                time.sleep(0.2)
            self.sent += PUSH_ROWS
            t_next += 1.0 / PUSH_RPS
            d = t_next - time.monotonic()
            if d > 0:
                time.sleep(d)
            else:
                t_next = time.monotonic()


class KafkaFeeder(threading.Thread):
    def __init__(self, boot, topic, stop):
        super().__init__(daemon=True)
        from confluent_kafka import Producer
        self.p = Producer({"bootstrap.servers": boot, "linger.ms": 20, "acks": "all"})
        self.topic, self.stop, self.sent, self.failed = topic, stop, 0, 0

    def run(self):
        t0 = time.monotonic()
        while not self.stop.is_set():
            due = int((time.monotonic() - t0) * KAFKA_RATE)
            while self.sent < due:
                v = json.dumps({"id": self.sent, "kind": random.choice("abc"),
                                "amount": random.randrange(10**6)})
                self.p.produce(self.topic, v.encode(), key=str(self.sent).encode())
                self.sent += 1
            self.p.poll(0)
            time.sleep(0.01)
        if self.p.flush(60) != 0:
            self.failed += 1


class ItemChanger(threading.Thread):
    """Inserts, updates and deletes on items at ITEM_RATE a second."""

    def __init__(self, dsn, stop):
        super().__init__(daemon=True)
        self.dsn, self.stop, self.changes = dsn, stop, 0

    def run(self):
        import psycopg
        with psycopg.connect(self.dsn, autocommit=True) as c:
            while not self.stop.is_set():
                k = random.randrange(1, 2001)
                r = random.random()
                if r < 0.6:
                    c.execute("INSERT INTO items VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE "
                              "SET v = items.v + 1, note = excluded.note",
                              (k, random.randrange(10**6), "n%d" % random.randrange(10**4)))
                else:
                    c.execute("DELETE FROM items WHERE id = %s", (k,))
                self.changes += 1
                time.sleep(1.0 / ITEM_RATE)


# ---- the run -------------------------------------------------------------------

def main():
    import psycopg
    # a SIGTERM (or ^C) still stops what the run started (atexit)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    if not PGBENCH:
        sys.exit("pgbench is missing (Debian postgresql-15)")
    pg, kafka = service("postgres"), service("kafka")
    boot, dsn = kafka["PLAINTEXT"], pg["DSN"]
    tag = uuid.uuid4().hex[:8]
    db = f"zxsoak_{tag}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {db}")
    sdsn = dsn.rsplit("/", 1)[0] + "/" + db
    subprocess.run([PGBENCH, "-i", "-s", "5", "-I", "dtgvp", "-q", sdsn], check=True,
                   capture_output=True)
    with psycopg.connect(sdsn, autocommit=True) as c:
        c.execute("CREATE TABLE items (id int PRIMARY KEY, v bigint NOT NULL, note text)")
        c.execute("INSERT INTO items SELECT g, g, 'n' || g FROM generate_series(1, 1000) g")
    root = tempfile.mkdtemp(prefix="zxsoak-")
    report_path = os.environ.get("ZX_SOAK_REPORT", os.path.join(root, "soak-report.json"))
    log(f"run folder {root}, source database {db}, {SECONDS} s")
    sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
    dbz_name = f"soak{tag}"
    dbz_topic = f"{dbz_name}.public.items"
    pg_port = re.search(r":(\d+)/", dsn).group(1)
    atexit.register(lambda: service("debezium", "stop", dbz_name, check=False))
    service("debezium", "start", dbz_name,
            env=dict(os.environ, DBZ_SOURCE="postgres", DBZ_DB_PORT=pg_port, DBZ_DB_NAME=db,
                     DBZ_TABLES="public.items", DBZ_TOPIC_PREFIX=dbz_name, DBZ_SINK="kafka",
                     DBZ_KAFKA_BOOTSTRAP=boot))
    events = f"soak-events-{tag}"
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic(events, 4, 1)])[events].result(30)
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    push_key, token = "push-" + uuid.uuid4().hex, "tok-" + uuid.uuid4().hex
    os.makedirs(os.path.join(root, "var", "exports"), exist_ok=True)
    cfg = f"""server:
  data_dir: ./var
  control_socket: zxd.sock
  http: {{listen: "127.0.0.1:{port}"}}
workspace:
  sqlite: {{path: workspace.db}}
api_tokens:
  soak: {{token: "{token}", role: orchestrator}}
authors:
  soak: {{tables: [pgbench_branches, items]}}
connections:
  src: {{kind: postgres, dsn: "{sdsn}"}}
  k: {{kind: kafka, brokers: ["{boot}"]}}
pipelines:
  clicks:
    direction: stream
    source: http
    key: "{push_key}"
  events:
    direction: stream
    source: kafka
    connection: k
    topic: {events}
    group: soak-{tag}
  shop:
    direction: stream
    source: postgres
    connection: src
    tables: [public.pgbench_accounts, public.pgbench_branches, public.pgbench_tellers]
    slot: zx_soak_{tag}
    publication: zx_soak_{tag}
  dbz:
    direction: stream
    source: kafka
    connection: k
    topic: {dbz_topic}
    table: items
    format: debezium
  branches_out:
    direction: out
    author: soak
    query: "SELECT bid, bbalance FROM pgbench_branches"
    mode: replace
    schedule: "* * * * *"
    destination: {{files: {{path: var/exports/branches.parquet, format: parquet}}}}
  items_out:
    direction: out
    author: soak
    query: "SELECT id, v, note FROM items"
    mode: mirror
    key: [id]
    on: change
    min_interval: 5s
    destination: {{connection: src, table: items_copy}}
"""
    cfg_path = os.path.join(root, "zx.yaml")
    with open(cfg_path, "w") as f:
        f.write(cfg)
    zlog = open(os.path.join(root, "zxd.log"), "ab")
    zxd = subprocess.Popen([ZXD, "-c", cfg_path], stdout=zlog, stderr=zlog,
                           start_new_session=True)

    def kill_zxd():
        try:
            os.killpg(zxd.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    atexit.register(kill_zxd)

    def zxctl(*args, timeout=600):
        return subprocess.run([ZXCTL, "-c", cfg_path, *args], capture_output=True, text=True,
                              timeout=timeout)
    for _ in range(600):
        if zxctl("status").returncode == 0:
            break
        time.sleep(0.1)
    else:
        sys.exit("zxd did not start: see " + os.path.join(root, "zxd.log"))
    stop = threading.Event()
    pusher = Pusher(port, push_key, stop)
    feeder = KafkaFeeder(boot, events, stop)
    changer = ItemChanger(sdsn, stop)
    for t in (pusher, feeder, changer):
        t.start()
    bench = subprocess.Popen([PGBENCH, "-n", "-c", "2", "-j", "1", "-R", str(TPS), "-T",
                              str(SECONDS), sdsn], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    minutes, kills, reloads = [], [], 0
    prev = {}
    t0 = time.monotonic()
    next_kill = t0 + random.uniform(0.5, 1.5) * KILL_EVERY
    next_minute = t0 + 60
    try:
        while time.monotonic() - t0 < SECONDS:
            now = time.monotonic()
            if now >= next_kill:
                procs = {pid: role_of(t) for pid, t in children_of(zxd.pid).items()
                         if t.startswith("zxd: ")}
                if procs:
                    pid = random.choice(sorted(procs))
                    try:
                        os.kill(pid, signal.SIGKILL)
                        kills.append((round(now - t0), procs[pid]))
                        log(f"SIGKILL {procs[pid]} (pid {pid})")
                    except ProcessLookupError:
                        pass
                next_kill = now + random.uniform(0.5, 1.5) * KILL_EVERY
            if now >= next_minute:
                os.kill(zxd.pid, signal.SIGHUP)
                reloads += 1
                row = {"minute": len(minutes) + 1, "procs": {}, "pipelines": {}}
                for pid, title in children_of(zxd.pid).items():
                    r, a, n = rss_fds(pid)
                    if r is not None:
                        row["procs"][role_of(title)] = {"rss_mib": round(r, 1),
                                                        "anon_mib": round(a, 1), "fds": n}
                r, a, n = rss_fds(zxd.pid)
                row["procs"]["supervisor"] = {"rss_mib": round(r, 1), "anon_mib": round(a, 1),
                                              "fds": n}
                try:
                    sm = scrape(port, token)
                except Exception as e:
                    sm = {}
                    row["scrape_error"] = repr(e)
                for p in ("clicks", "events", "shop", "dbz"):
                    cur = lat_buckets(sm, p)
                    row["pipelines"][p] = {
                        "rows": metric(sm, "zx_rows_written_total", pipeline=p),
                        "restarts": metric(sm, "zx_pipeline_restarts_total", pipeline=p),
                        "p99_commit_s": p99(prev.get(p, []), cur)}
                    prev[p] = cur
                for pr in ("writer", "gateway"):
                    row["pipelines"]["proc_" + pr] = {
                        "restarts": metric(sm, "zx_process_restarts_total", process=pr)}
                minutes.append(row)
                log("minute %d: " % row["minute"] + "; ".join(
                    f"{k} {v['rss_mib']}/{v['anon_mib']} MiB {v['fds']} fds"
                    for k, v in sorted(row["procs"].items()))
                    + " | p99 " + ", ".join(f"{p} {row['pipelines'][p]['p99_commit_s']}"
                                            for p in ("clicks", "events", "shop", "dbz")))
                next_minute += 60
            time.sleep(0.2)
    finally:
        stop.set()
    bench_out = bench.communicate(timeout=600)[0]
    for t in (pusher, feeder, changer):
        t.join(120)
    log(f"load stopped: {pusher.sent} clicks, {feeder.sent} Kafka messages, "
        f"{changer.changes} item changes; checking")
    checks = {}
    wsdb = os.path.join(root, "var", "workspace.db")

    def ws(q):
        c = sqlite3.connect(f"file:{wsdb}?mode=ro", uri=True, timeout=60)
        try:
            return c.execute(q).fetchall()
        finally:
            c.close()

    def src(q):
        with psycopg.connect(sdsn) as c:
            return c.execute(q).fetchall()

    def until(what, fn, deadline=600):
        end = time.monotonic() + deadline
        last = None
        while time.monotonic() < end:
            try:
                last = fn()
                if last is True:
                    return True
            except Exception as e:
                last = repr(e)
            time.sleep(2)
        checks[what] = f"FAILED: {last}"
        return False

    if until("clicks", lambda: ws("SELECT count(DISTINCT id) FROM clicks")[0][0] == pusher.sent):
        n, d = ws("SELECT count(*), count(DISTINCT id) FROM clicks")[0]
        checks["clicks"] = f"ok: {d} distinct of {pusher.sent} sent ({n - d} duplicates)"
    if until("events", lambda: ws("SELECT count(DISTINCT id) FROM events")[0][0] == feeder.sent):
        checks["events"] = f"ok: {feeder.sent} messages"
    for t, k, v in (("pgbench_accounts", "aid", "abalance"), ("pgbench_branches", "bid", "bbalance"),
                    ("pgbench_tellers", "tid", "tbalance")):
        q = f"SELECT {k}, {v} FROM {t} ORDER BY {k}"
        if until(t, lambda: [tuple(r) for r in ws(q)] == [tuple(r) for r in src(q)]):
            checks[t] = f"ok: {len(src(q))} rows equal"
    q = "SELECT id, v, note FROM items ORDER BY id"
    if until("items", lambda: [tuple(r) for r in ws(q)] == [tuple(r) for r in src(q)]):
        checks["items"] = f"ok: {len(src(q))} rows equal"
    r = zxctl("run", "items_out", "--wait")
    if until("items_copy", lambda: [tuple(r) for r in src("SELECT id, v, note FROM items_copy "
                                                         "ORDER BY id")] ==
             [tuple(r) for r in ws(q)], deadline=120):
        checks["items_copy"] = "ok: equal to the items mirror"
    r = zxctl("run", "branches_out", "--wait")
    try:
        import pyarrow.parquet as pq
        n = pq.read_table(os.path.join(root, "var", "exports", "branches.parquet")).num_rows
        checks["branches.parquet"] = "ok: 5 branches" if n == 5 else f"FAILED: {n} rows"
    except Exception as e:
        checks["branches.parquet"] = f"FAILED: {e!r}"
    status = zxctl("--json", "status").stdout
    zxd.send_signal(signal.SIGTERM)
    try:
        zxd.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(zxd.pid, signal.SIGKILL)
    service("debezium", "stop", dbz_name, check=False)
    with psycopg.connect(dsn, autocommit=True) as c:
        for sl in c.execute("SELECT slot_name FROM pg_replication_slots WHERE database = %s",
                            (db,)).fetchall():
            c.execute("SELECT pg_drop_replication_slot(%s)", (sl[0],))
        c.execute(f"DROP DATABASE {db} WITH (FORCE)")
    report = {"seconds": SECONDS, "pushed": pusher.sent, "push_retries": pusher.retries,
              "kafka_sent": feeder.sent, "item_changes": changer.changes,
              "pgbench": bench_out.strip().splitlines()[-12:], "kills": kills,
              "reloads": reloads, "minutes": minutes, "checks": checks, "status": status}
    with open(report_path, "w") as f:
        json.dump(report, f, indent=1)
    log(f"report: {report_path}")
    # flat after warm-up: first minutes after 5 against the last ones
    roles = sorted({r for m in minutes for r in m["procs"]})
    print("\nafter minute 5:    RSS MiB first/last/max    anon MiB first/last/max    "
          "fds first/last/max")
    for r in roles:
        ms = [m["procs"][r] for m in minutes[5:] if r in m["procs"]]
        if ms:
            rs, an, fs = ([x[k] for x in ms] for k in ("rss_mib", "anon_mib", "fds"))
            print(f"{r:18} {rs[0]:7} {rs[-1]:7} {max(rs):7}    {an[0]:7} {an[-1]:7} "
                  f"{max(an):7}    {fs[0]:4} {fs[-1]:4} {max(fs):4}")
    p99s = {p: [m["pipelines"][p]["p99_commit_s"] for m in minutes
                if m["pipelines"].get(p, {}).get("p99_commit_s") is not None]
            for p in ("clicks", "events", "shop", "dbz")}
    for p, v in p99s.items():
        if v:
            print(f"p99 commit latency {p}: per minute min {min(v)} s, max {max(v)} s, "
                  f"last {v[-1]} s")
    for k, v in checks.items():
        print(f"check {k}: {v}")
    print(f"kills: {len(kills)} ({', '.join(sorted({k[1] for k in kills}))}), reloads: {reloads}")
    if not os.environ.get("ZX_SOAK_KEEP"):
        shutil.rmtree(root, ignore_errors=True)
    return 0 if all(v.startswith("ok") for v in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
