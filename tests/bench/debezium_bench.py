#!/usr/bin/env python3
"""
debezium_bench.py — the helper of debezium_bench.sh (Debezium Server
PostgreSQL -> Kafka beside zx's mirror apply of those events and zx's own
Postgres CDC).  Each measuring subcommand does one step and prints one JSON
object (the shell keeps it in a file); `report` reads them all and prints
the table.  No thresholds: it measures, it does not judge.

  make-tables --dsn D --tables T,...   the source tables (empty)
  dbz-run --dsn D --table T --rows N --bootstrap B --topic T
                                       INSERT N rows in one statement, time
                                       from its commit until the topic's end
                                       offsets reach N
  topic-end --bootstrap B --topic T    the topic's end offsets, summed
  delete-topic --bootstrap B --topic T
  wait-streaming --zxctl Z --sock S --pipeline P --dsn D --slot S
                                       until the CDC pipeline streams
  zx-wait --t0 T --backend b --mirror M --table T --rows N
                                       time from T (zxd's start) until the
                                       mirror holds N rows
  cdc-run --dsn D --table T --rows N --backend b --mirror M --mirror-table T
                                       INSERT N rows, time from the commit
                                       until the mirror holds them
  check --dsn D --table T --backend b --mirror M --mirror-table T
                                       count, sum(id), sum(n) of both sides
  report --dir DIR                     the table of every figure

Every timed step also counts the CPU seconds used meanwhile by each process
tree named with --pid NAME=PID (Debezium's JVM, the broker, zxd), by the
Postgres server (--pg-datadir), by this helper, and by the rest of the
machine.  Only 127.0.0.1; it changes nothing but what it is given.
"""

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time

POLL = 0.2           # seconds between two looks at the topic or the mirror


def _psycopg():
    import psycopg
    return psycopg


# ---- CPU seconds: who used the machine during a step -------------------------

_HZ = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    w = s[s.rfind(")") + 2:].split()
    return int(w[1]), (int(w[11]) + int(w[12])) / _HZ


def _machine_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / _HZ          # all but idle and iowait


class Cpu:
    """Samples /proc every 0.5 s in a thread: the CPU seconds of each named
    process tree, of the Postgres server, of this helper, and of the rest of
    the machine.  A process that ends loses at most its last 0.5 s."""

    def __init__(self, pids, pg_datadir=None):
        import threading
        self.roots = [(n, p) for n, p in pids]
        try:
            with open(os.path.join(pg_datadir or "", "postmaster.pid")) as f:
                self.roots.append(("postgres", int(f.readline())))
        except (OSError, ValueError):
            pass
        self.roots.append(("helper", os.getpid()))
        self.base, self.last, self.title = {}, {}, {}
        self.stop_ev = threading.Event()
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.own = 0.0

    def _sample(self, first=False):
        st = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                x = _proc_stat(int(d))
                if x:
                    st[int(d)] = x
        kids = {}
        for pid, (pp, _) in st.items():
            kids.setdefault(pp, []).append(pid)

        def tree(root):
            out, todo = set(), [root]
            while todo:
                p = todo.pop()
                if p in st and p not in out:
                    out.add(p)
                    todo += kids.get(p, [])
            return out
        groups = [(n, tree(r)) for n, r in self.roots]
        for pid, (_, c) in st.items():
            for name, members in groups:
                if pid in members:
                    if pid not in self.base:
                        self.base[pid] = c if first else 0.0
                        self.title[pid] = _title(pid, name)
                    self.last[pid] = (name, c)
                    break

    def _loop(self):
        t = time.thread_time()
        while not self.stop_ev.wait(0.5):
            self._sample()
        self.own = time.thread_time() - t

    def start(self):
        self.m0, self.t0 = _machine_busy(), time.monotonic()
        self._sample(first=True)
        self.th.start()
        return self

    def stop(self):
        self.stop_ev.set()
        self.th.join()
        self._sample()
        out = {n: 0.0 for n, _ in self.roots}
        parts = {}
        for pid, (name, c) in self.last.items():
            used = max(0.0, c - self.base.get(pid, 0.0))
            out[name] += used
            t = self.title.get(pid)
            if t:
                g = parts.setdefault(name, {})
                g[t] = g.get(t, 0.0) + used
        busy = _machine_busy() - self.m0
        out["helper"] = max(0.0, out["helper"] - self.own)
        out = {k: round(v, 1) for k, v in out.items()}
        out["others"] = round(max(0.0, busy - sum(out.values()) - self.own), 1)
        out["wall"] = round(time.monotonic() - self.t0, 2)
        out["parts"] = {g: {t: round(v, 1) for t, v in sorted(d.items(), key=lambda x: -x[1])
                            if v >= 0.05} for g, d in parts.items()}
        return out


def _title(pid, group):
    """Which process of zxd (its title, "zxd: writer") or of Postgres
    ("walsender", the database of a backend) it is; None for the others."""
    if group not in ("zxd", "postgres"):
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            w = f.read().replace(b"\0", b" ").decode(errors="replace").split()
    except OSError:
        return None
    if group == "zxd":
        return " ".join(w[1:3]) if w[:1] == ["zxd:"] else " ".join(w[:1])
    if w[:1] != ["postgres:"] or len(w) < 2:
        return "postmaster"
    if w[1] == "walsender":
        return "walsender"
    if len(w) >= 3 and "(" in " ".join(w[3:4]) or w[1] == "zx":
        return "backend " + (w[2] if len(w) > 2 else "?")
    return "other"


def _pids(a):
    out = []
    for s in a.pid or []:
        n, _, p = s.partition("=")
        if p.isdigit():
            out.append((n, int(p)))
    return out


def _alive(pids):
    """The name of a watched process that is gone, or None."""
    for n, p in pids:
        try:
            os.kill(p, 0)
        except ProcessLookupError:
            return n
        except PermissionError:
            pass
    return None


# ---- the source ---------------------------------------------------------------

DDL = "(id bigint PRIMARY KEY, n integer, name text, amount numeric(12,2), at timestamptz)"
INSERT = ("INSERT INTO {t} SELECT g, g %% 1000, 'name-' || g, (g %% 100000) / 100.0, "
          "timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second' "
          "FROM generate_series(1, %s) g")


def cmd_make_tables(a):
    psycopg = _psycopg()
    with psycopg.connect(a.dsn, autocommit=True) as c:
        for t in a.tables.split(","):
            c.execute(f"DROP TABLE IF EXISTS {t}")
            c.execute(f"CREATE TABLE {t} {DDL}")
    return 0


def _insert(dsn, table, rows):
    """INSERT ... generate_series in one statement (autocommit: the commit
    is the statement's end).  (start, commit) as time.time()."""
    psycopg = _psycopg()
    with psycopg.connect(dsn, autocommit=True) as c:
        t0 = time.time()
        n = c.execute(INSERT.format(t=table), (rows,)).rowcount
        t1 = time.time()
    if n != rows:
        raise SystemExit(f"inserted {n} rows, not {rows}")
    return t0, t1


# ---- Kafka -------------------------------------------------------------------------

def _consumer(bootstrap):
    from confluent_kafka import Consumer
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "zxbench-watermarks",
                     "enable.auto.commit": False})


def _partitions(cons, topic):
    md = cons.list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        raise SystemExit(f"topic {topic}: {t.error if t else 'not found'}")
    return sorted(t.partitions)


def _end(cons, topic, parts):
    from confluent_kafka import TopicPartition
    return sum(cons.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
               for p in parts)


def cmd_topic_end(a):
    cons = _consumer(a.bootstrap)
    try:
        print(_end(cons, a.topic, _partitions(cons, a.topic)))
    finally:
        cons.close()
    return 0


def cmd_delete_topic(a):
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": a.bootstrap})   # alive until the answers
    fs = admin.delete_topics([a.topic])
    for f in fs.values():
        f.result(timeout=30)
    return 0


def cmd_dbz_run(a):
    """The INSERT, then the topic's end offset polled every 0.2 s until it
    reaches base + N: Debezium Server read the N changes from the slot and
    the broker acknowledged them."""
    pids = _pids(a)
    cons = _consumer(a.bootstrap)
    parts = _partitions(cons, a.topic)
    base = _end(cons, a.topic, parts)
    cpu = Cpu(pids, a.pg_datadir).start()
    t_ins, t_commit = _insert(a.dsn, a.table, a.rows)
    out = {"rows": a.rows, "insert_seconds": round(t_commit - t_ins, 3), "base_offset": base,
           "partitions": len(parts)}
    first = None
    deadline = t_commit + a.deadline
    end = base
    while True:
        t = time.time()
        end = _end(cons, a.topic, parts)
        if first is None and end > base:
            first = t
        if end - base >= a.rows:
            break
        gone = _alive(pids)
        if gone or t > deadline:
            out["error"] = (f"{gone} exited" if gone else f"deadline of {a.deadline} s") + \
                f" with {end - base} of {a.rows} events in the topic"
            break
        time.sleep(POLL)
    out["cpu"] = cpu.stop()
    cons.close()
    out["events"] = end - base
    if "error" not in out:
        out["seconds"] = round(t - t_commit, 3)
        out["first_seconds"] = round(first - t_commit, 3)
    print(json.dumps(out))
    return 0 if "error" not in out else 1


# ---- the mirror ------------------------------------------------------------------

class Mirror:
    """A look at a workspace table, SQLite (a read-only connection to the
    file) or Postgres; a table not there yet holds no row."""

    def __init__(self, backend, where, table):
        self.backend, self.where, self.table = backend, where, table
        self.c = None

    def _conn(self):
        if self.c is None:
            if self.backend == "sqlite":
                if not os.path.exists(self.where):
                    return None
                self.c = sqlite3.connect(f"file:{self.where}?mode=ro", uri=True, timeout=10,
                                         isolation_level=None)
            else:
                self.c = _psycopg().connect(self.where, autocommit=True)
        return self.c

    def _one(self, q, args=()):
        try:
            c = self._conn()
            if c is None:
                return None
            if self.backend == "sqlite":
                return c.execute(q, args).fetchone()
            return c.execute(q.replace("?", "%s"), args).fetchone()
        except Exception as e:                       # no table yet, a busy file
            msg = str(e)
            if "no such table" in msg or "does not exist" in msg or "locked" in msg or "busy" in msg:
                if self.backend == "postgres":
                    self.close()
                return None
            raise

    def has(self, key):
        return self._one(f'SELECT 1 FROM "{self.table}" WHERE id = ?', (key,)) is not None

    def any(self):
        return self._one(f'SELECT 1 FROM "{self.table}" LIMIT 1') is not None

    def count(self):
        r = self._one(f'SELECT count(*) FROM "{self.table}"')
        return r[0] if r else 0

    def sums(self):
        r = self._one(f'SELECT count(*), sum(id), sum(n) FROM "{self.table}"')
        return [int(x or 0) for x in r] if r else [0, 0, 0]

    def close(self):
        if self.c is not None:
            try:
                self.c.close()
            except Exception:
                pass
        self.c = None


def _wait_mirror(m, rows, t0, deadline, pids, last_key=None):
    """Every 0.2 s: is the last id's row there (a look up by the key), and
    once it is, count(*): done when it is N.  (t_first, t_done, count)."""
    first = done = None
    seen_last = False
    n = 0
    while True:
        t = time.time()
        if first is None and m.any():
            first = t
        if not seen_last:
            seen_last = m.has(last_key or rows)
        if seen_last:
            n = m.count()
            if n >= rows:
                done = t
                break
        gone = _alive(pids)
        if gone:
            return first, None, n, f"{gone} exited"
        if t - t0 > deadline:
            return first, None, m.count(), f"deadline of {deadline} s"
        time.sleep(max(0.0, POLL - (time.time() - t)))
    return first, done, n, None


def cmd_zx_wait(a):
    pids = _pids(a)
    cpu = Cpu(pids, a.pg_datadir).start()
    m = Mirror(a.backend, a.mirror, a.table)
    first, done, n, err = _wait_mirror(m, a.rows, a.t0, a.deadline, pids)
    out = {"rows": a.rows, "backend": a.backend, "cpu": cpu.stop(), "mirror_rows": n}
    m.close()
    if err:
        out["error"] = f"{err} with {n} of {a.rows} rows in the mirror"
    else:
        out["seconds"] = round(done - a.t0, 3)
        out["first_seconds"] = round(first - a.t0, 3) if first else None
    print(json.dumps(out))
    return 0 if not err else 1


def cmd_cdc_run(a):
    pids = _pids(a)
    m = Mirror(a.backend, a.mirror, a.mirror_table)
    before = m.count()
    cpu = Cpu(pids, a.pg_datadir).start()
    t_ins, t_commit = _insert(a.dsn, a.table, a.rows)
    first, done, n, err = _wait_mirror(m, a.rows + before, t_commit, a.deadline, pids, a.rows)
    out = {"rows": a.rows, "backend": a.backend, "insert_seconds": round(t_commit - t_ins, 3),
           "cpu": cpu.stop(), "mirror_rows": n, "rows_before": before}
    m.close()
    if err:
        out["error"] = f"{err} with {n} of {a.rows} rows in the mirror"
    else:
        out["seconds"] = round(done - t_commit, 3)
        out["first_seconds"] = round(first - t_commit, 3) if first else None
    print(json.dumps(out))
    return 0 if not err else 1


def cmd_wait_streaming(a):
    """Until `zxctl --json status` says the pipeline's source streams and
    the slot exists."""
    psycopg = _psycopg()
    t0 = time.time()
    last = None
    while time.time() - t0 < a.deadline:
        p = subprocess.run([a.zxctl, "-s", a.sock, "--json", "status"], capture_output=True,
                           text=True, stdin=subprocess.DEVNULL)
        try:
            st = json.loads(p.stdout)
        except ValueError:
            st = {}
        for pl in st.get("pipelines", []):
            if pl.get("name") == a.pipeline:
                last = pl
                s = pl.get("source_status") or {}
                if isinstance(s, dict) and s.get("state") == "streaming":
                    with psycopg.connect(a.dsn, autocommit=True) as c:
                        if c.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s",
                                     (a.slot,)).fetchone():
                            print(json.dumps({"seconds": round(time.time() - t0, 2)}))
                            return 0
        time.sleep(0.2)
    print(json.dumps({"error": f"not streaming after {a.deadline} s: {json.dumps(last)[:800]}"}))
    return 1


def cmd_check(a):
    psycopg = _psycopg()
    with psycopg.connect(a.dsn) as c:
        s = [int(x or 0) for x in c.execute(
            f"SELECT count(*), sum(id), sum(n) FROM {a.table}").fetchone()]
    m = Mirror(a.backend, a.mirror, a.mirror_table)
    d = m.sums()
    m.close()
    print(json.dumps({"same": s == d, "source": s, "mirror": d}))
    return 0


# ---- the report -------------------------------------------------------------------

def _load(d, name):
    try:
        with open(os.path.join(d, name + ".json")) as f:
            txt = f.read().strip()
        return json.loads(txt.splitlines()[-1]) if txt else None
    except (OSError, ValueError):
        return None


def _cpu(c):
    if not c:
        return ""
    out = []
    for k, v in c.items():
        if k in ("wall", "parts"):
            continue
        p = (c.get("parts") or {}).get(k)
        out.append(f"{k} {v:.1f}" + (" (" + ", ".join(f"{t} {x:.1f}" for t, x in p.items()) + ")"
                                     if p and len(p) > 1 else ""))
    return "CPU s: " + ", ".join(out)


def cmd_report(a):
    d = a.dir
    meta = _load(d, "meta") or {}
    n = meta.get("rows", 0)
    W = 112
    print()
    print("=" * W)
    print(f"Debezium Server vs zx: {n:,} rows of bench(id bigint pk, n integer, name text, "
          f"amount numeric(12,2), at timestamptz),")
    print("one INSERT ... SELECT FROM generate_series; rates = rows / seconds "
          "(polls every 0.2 s)")
    for k in ("machine", "memory", "load", "postgres", "kafka", "debezium", "zx"):
        if meta.get(k):
            print(f"  {k + ':':<10}{meta[k]}")
    print("-" * W)
    print(f"{'step':<62}{'seconds':>10}{'rows/s':>12}  {'first':>7}")
    rates = {}

    def row(key, what, r, note=""):
        if r is None:
            print(f"{what:<62}{'FAILED':>10}  (no result: see the messages above)")
            return
        if "seconds" in r and "error" not in r and r["seconds"] > 0:
            rate = r["rows"] / r["seconds"]
            rates[key] = rate
            fs = r.get("first_seconds")
            print(f"{what:<62}{r['seconds']:>10.2f}{rate:>12,.0f}  "
                  f"{(f'{fs:.1f} s' if fs is not None else '-'):>7}")
        else:
            print(f"{what:<62}{'FAILED':>10}  {r.get('error', '')}")
        extra = []
        if r.get("insert_seconds") is not None:
            extra.append(f"INSERT took {r['insert_seconds']:.1f} s (not counted)")
        if note:
            extra.append(note)
        if extra:
            print(f"{'':<4}{'; '.join(extra)}")
        if r.get("cpu"):
            print(f"{'':<4}{_cpu(r['cpu'])}")

    dbz = _load(d, "dbz")
    row("dbz", "1. Debezium Server: PG commit -> all events in Kafka", dbz,
        meta.get("topic_note", ""))
    names = {"sqlite": "SQLite", "postgres": "Postgres"}
    for b in meta.get("backends", []):
        r = _load(d, f"kafka_{b}")
        c = _load(d, f"check_kafka_{b}")
        row(f"kafka_{b}", f"2. zx Kafka debezium -> {names[b]} ws: zxd start -> mirror full", r,
            ("mirror == source (count, sum id, sum n): " + ("yes" if c["same"] else
                                                            "NO " + json.dumps(c))) if c else "")
    for b in meta.get("backends", []):
        r = _load(d, f"cdc_{b}")
        c = _load(d, f"check_cdc_{b}")
        w = _load(d, f"streaming_{b}")
        note = []
        if w and "seconds" in w:
            note.append(f"streaming {w['seconds']:.1f} s after zxd answered")
        if c:
            note.append("mirror == source: " + ("yes" if c["same"] else "NO " + json.dumps(c)))
        row(f"cdc_{b}", f"3. zx Postgres CDC -> {names[b]} ws: PG commit -> mirror full", r,
            "; ".join(note))
    print("-" * W)
    print("ratios (of rows/s):")
    dr = rates.get("dbz")

    def ratio(label, x, y):
        if x and y:
            print(f"  {label:<76}{x / y:8.2f}")
    for b in meta.get("backends", []):
        k, c = rates.get(f"kafka_{b}"), rates.get(f"cdc_{b}")
        ratio(f"zx apply of the Debezium events ({names[b]}) / Debezium Server PG->Kafka", k, dr)
        ratio(f"zx from Debezium events ({names[b]}) / zx's own CDC ({names[b]})", k, c)
        ratio(f"zx's own CDC PG->{names[b]} / Debezium Server PG->Kafka", c, dr)
    print("'first': seconds from the start of the timing until the first event / row was seen.")
    print("CPU s: CPU seconds of each process tree during the step (others = the rest of the "
          "machine).")
    print("=" * W)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("--pid", action="append", help="NAME=PID of a process tree to watch")
        p.add_argument("--pg-datadir")
        p.add_argument("--deadline", type=float, default=3600)

    p = sub.add_parser("make-tables")
    p.add_argument("--dsn", required=True)
    p.add_argument("--tables", required=True)
    p = sub.add_parser("dbz-run")
    for k in ("--dsn", "--table", "--bootstrap", "--topic"):
        p.add_argument(k, required=True)
    p.add_argument("--rows", type=int, required=True)
    common(p)
    for name in ("topic-end", "delete-topic"):
        p = sub.add_parser(name)
        p.add_argument("--bootstrap", required=True)
        p.add_argument("--topic", required=True)
    p = sub.add_parser("wait-streaming")
    for k in ("--zxctl", "--sock", "--pipeline", "--dsn", "--slot"):
        p.add_argument(k, required=True)
    p.add_argument("--deadline", type=float, default=120)
    p = sub.add_parser("zx-wait")
    p.add_argument("--t0", type=float, required=True)
    p.add_argument("--backend", choices=["sqlite", "postgres"], required=True)
    p.add_argument("--mirror", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--rows", type=int, required=True)
    common(p)
    p = sub.add_parser("cdc-run")
    for k in ("--dsn", "--table", "--mirror", "--mirror-table"):
        p.add_argument(k, required=True)
    p.add_argument("--backend", choices=["sqlite", "postgres"], required=True)
    p.add_argument("--rows", type=int, required=True)
    common(p)
    p = sub.add_parser("check")
    for k in ("--dsn", "--table", "--mirror", "--mirror-table"):
        p.add_argument(k, required=True)
    p.add_argument("--backend", choices=["sqlite", "postgres"], required=True)
    p = sub.add_parser("report")
    p.add_argument("--dir", required=True)
    a = ap.parse_args()
    return globals()["cmd_" + a.cmd.replace("-", "_")](a)


if __name__ == "__main__":
    sys.exit(main())
