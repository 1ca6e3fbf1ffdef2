#!/usr/bin/env python3
"""
pg_cdc_bench.py — the measuring half of pg_cdc_bench.sh (which makes the
databases, starts and stops zxd and drops the slots).  Subcommands:

  copy-wait   wait for zx's initial copy: `event=copy_done` in the zxd log
              AND the mirror holding the expected rows; prints one JSON
              object (seconds since zxd was started, rows, zx's own copy
              seconds, CPU seconds of each zxd process and of the Postgres
              backends that worked meanwhile).
  caught-up   wait until the slot's confirmed_flush_lsn reaches
              pg_current_wal_lsn() (taken when called).
  stream      one streaming measurement: a probe that commits a marker row
              every ~20 ms at the source and polls the mirror for it, a
              pgbench load (fixed rate or as fast as it goes) on the source,
              then the time until the slot confirms the WAL end of the load;
              prints one JSON object.

Nothing here asserts on time: it measures and reports.  Clocks:
time.time() for what pg_cdc_bench.sh also times (zxd's start), the
monotonic clock for everything measured inside one process.
"""

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time

import psycopg

CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---- processes and CPU -----------------------------------------------------

def _stat(pid):
    """(ppid, cpu seconds user+system) of pid, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    rest = data[data.rindex(")") + 2:].split()
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / CLK_TCK


def _title(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip() or "?"
    except OSError:
        return "?"


def _machine_busy():
    """(busy jiffies, total jiffies) of the whole machine."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


class CpuSampler:
    """CPU seconds used by the descendants of zxd and by the children of the
    postmaster, between start() and the last sample()."""

    def __init__(self, zxd_pid, pg_datadir, zxd_from_zero=False):
        """zxd_from_zero: zxd was just started, count its CPU from its start
        (else from the first sample, like every other process)."""
        self.zxd_pid = zxd_pid
        self.zxd_from_zero = zxd_from_zero
        self.postmaster = None
        try:
            with open(os.path.join(pg_datadir, "postmaster.pid")) as f:
                self.postmaster = int(f.readline())
        except (OSError, ValueError, TypeError):
            pass
        self.base = {}      # pid -> cpu at first sight (0 for one born later)
        self.last = {}      # pid -> (cpu, kind, title)
        self.m0 = _machine_busy()
        self.m1 = self.m0
        self.t0 = time.monotonic()
        self.t1 = self.t0
        self.first = True

    def _scan(self):
        parent = {}
        cpu = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                s = _stat(int(d))
                if s:
                    parent[int(d)] = s[0]
                    cpu[int(d)] = s[1]
        return parent, cpu

    def sample(self):
        parent, cpu = self._scan()
        zx = set()
        todo = [self.zxd_pid] if self.zxd_pid else []
        while todo:
            p = todo.pop()
            if p in cpu and p not in zx:
                zx.add(p)
                todo += [c for c, pp in parent.items() if pp == p]
        me = set()
        todo = [os.getpid()]
        while todo:
            p = todo.pop()
            if p in cpu and p not in me:
                me.add(p)
                todo += [c for c, pp in parent.items() if pp == p]
        for pid, c in cpu.items():
            if pid in zx:
                kind = "zxd"
            elif self.postmaster and parent.get(pid) == self.postmaster:
                kind = "pg"
            elif pid in me:
                kind = "me"       # this helper and its pgbench
            else:
                continue
            if pid not in self.base:
                self.base[pid] = (c if self.first and not (kind == "zxd" and self.zxd_from_zero)
                                  else 0.0)
            prev = self.last.get(pid)
            title = _title(pid)
            if prev and (c == prev[0] or title.endswith(" idle") or title == "?"):
                title = prev[2] if prev[2] != "?" else title   # the title while it worked
            self.last[pid] = (c, kind, title)
        self.first = False
        self.m1 = _machine_busy()
        self.t1 = time.monotonic()

    @staticmethod
    def _pg_group(title):
        """'walsender', '<database> backend', or the process's own name
        (checkpointer, walwriter, ...)."""
        w = title.split()
        if len(w) >= 2 and w[1] == "walsender":
            return "walsender"
        if len(w) >= 4 and re.match(r"^[\d.:\[\]a-f]+\(\d+\)$|^\[local\]$", w[3]):
            return f"{w[2]} backend"
        return " ".join(w[1:3]) if len(w) > 1 else title

    def report(self, pg_words=()):
        """{'zxd': [(title, s)], 'pg': [(title, s)], 'machine_busy': frac,
        'wall': s}; Postgres processes listed when their title names one of
        pg_words (database names, 'walsender', ...) or they used > 1 s."""
        zx, pg = [], []
        ours = 0.0           # CPU of zxd, of our Postgres processes, of pgbench
        bench = 0.0
        psql_cpu = 0.0
        for pid, (c, kind, title) in self.last.items():
            used = c - self.base.get(pid, 0.0)
            mine = kind != "pg" or any(w in title for w in pg_words)
            if mine:
                ours += used
            if used < 0.05:
                continue
            if kind == "me":
                if "pgbench" in title:
                    bench += used
                elif title.startswith("psql"):
                    psql_cpu += used
            elif kind == "zxd":
                zx.append((title, round(used, 1)))
            elif mine or used > 1.0:
                pg.append((self._pg_group(title), used))
        agg = {}
        for g, used in pg:
            n, tot = agg.get(g, (0, 0.0))
            agg[g] = (n + 1, tot + used)
        pg = [(g if n == 1 else f"{g} x{n}", round(tot, 1)) for g, (n, tot) in agg.items()]
        busy = self.m1[0] - self.m0[0]
        tot = self.m1[1] - self.m0[1]
        return {"zxd": sorted(zx, key=lambda x: -x[1]), "pg": sorted(pg, key=lambda x: -x[1]),
                "machine_busy": round(busy / tot, 3) if tot else 0.0,
                # what the rest of the machine used meanwhile (other tests,
                # builds, ...): busy time not spent by the processes above
                "others": round(max(0.0, busy / CLK_TCK - ours), 1),
                "pgbench": round(bench, 1),
                "psql": round(psql_cpu, 1),
                "wall": round(self.t1 - self.t0, 1)}


# ---- the mirror ------------------------------------------------------------

class Mirror:
    """Reads the workspace: a read-only sqlite3 connection, or psycopg."""

    def __init__(self, backend, where):
        self.backend = backend
        self.where = where
        self.conn = None

    def _connect(self):
        if self.backend == "sqlite":
            c = sqlite3.connect(f"file:{self.where}?mode=ro", uri=True, timeout=30,
                                isolation_level=None, check_same_thread=False)
        else:
            c = psycopg.connect(self.where, autocommit=True)
        self.conn = c

    def one(self, sql):
        """The first column of the first row, or None if the table is not
        there yet (or the file)."""
        try:
            if self.conn is None:
                self._connect()
            r = self.conn.execute(sql).fetchone()
            return r[0] if r else None
        except (sqlite3.Error, psycopg.Error):
            try:
                if self.conn is not None:
                    self.conn.close()
            except Exception:
                pass
            self.conn = None
            return None


# ---- copy-wait ---------------------------------------------------------------

def cmd_copy_wait(a):
    mirror = Mirror(a.backend, a.mirror)
    cpu = CpuSampler(a.zxd_pid, a.pg_datadir, zxd_from_zero=True)
    cpu.sample()
    t_copy_done = None
    zx_seconds = zx_rows = None
    pos = 0
    buf = ""
    last_cpu = time.monotonic()
    last_note = time.monotonic()
    deadline = time.monotonic() + a.deadline
    t_rows = None
    n = None
    while True:
        now = time.monotonic()
        if now > deadline:
            print(json.dumps({"error": f"no copy_done + {a.rows} rows within {a.deadline} s",
                              "copy_done": t_copy_done is not None, "count": n}))
            return 1
        try:
            os.kill(a.zxd_pid, 0)
        except OSError:
            print(json.dumps({"error": "zxd exited during the copy"}))
            return 1
        if t_copy_done is None:
            try:
                with open(a.log, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
                pos += len(chunk)
                buf += chunk.decode("utf-8", "replace")
            except OSError:
                pass
            m = re.search(r"event=copy_done\b[^\n]*", buf)
            if m:
                t_copy_done = time.time()
                s = re.search(r"seconds=([\d.]+)", m.group(0))
                r = re.search(r"rows=(\d+)", m.group(0))
                zx_seconds = float(s.group(1)) if s else None
                zx_rows = int(r.group(1)) if r else None
            if re.search(r"event=cdc_failed", buf):
                print(json.dumps({"error": "zx reported event=cdc_failed (see the log)"}))
                return 1
            buf = buf[-4096:]
        if t_copy_done is not None:
            # count only once the source says it is done: a count(*) of
            # millions of rows is work the copy would compete with
            t_q = time.time()
            n = mirror.one(f'SELECT count(*) FROM "{a.table}"')
            if n is not None and n >= a.rows:
                t_rows = time.time()
                # the rows were all there when the query's snapshot was
                # taken: between t_q and t_rows; report the end (the bound
                # that cannot flatter) and the spread
                break
        if now - last_cpu >= 1.0:
            cpu.sample()
            last_cpu = now
        if now - last_note >= 30.0 and a.verbose:
            print(f"  ... {now - (deadline - a.deadline):.0f} s, copy_done "
                  f"{'seen' if t_copy_done else 'not yet'}", file=sys.stderr)
            last_note = now
        time.sleep(0.05 if t_copy_done is None else 0.1)
    cpu.sample()
    done = max(t_copy_done, t_rows)
    out = {
        "seconds": round(done - a.t0, 3),
        "count_query_seconds": round(t_rows - t_q, 3),
        "copy_done_after": round(t_copy_done - a.t0, 3),
        "rows_in_mirror": n,
        "rows": a.rows,
        "zx_copy_seconds": zx_seconds,
        "zx_copy_rows": zx_rows,
        "cpu": cpu.report(tuple(a.pg_word or ())),
    }
    print(json.dumps(out))
    return 0


# ---- the slot ----------------------------------------------------------------

def slot_confirmed_ge(conn, slot, lsn):
    r = conn.execute("SELECT confirmed_flush_lsn >= %s::pg_lsn FROM pg_replication_slots "
                     "WHERE slot_name = %s", (lsn, slot)).fetchone()
    return bool(r and r[0])


def wait_slot(conn, slot, lsn, deadline, interval=0.01):
    """Monotonic time when the slot confirmed lsn, or None at the deadline."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if slot_confirmed_ge(conn, slot, lsn):
            return time.monotonic()
        time.sleep(interval)
    return None


def cmd_caught_up(a):
    with psycopg.connect(a.src, autocommit=True) as conn:
        lsn = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        # a commit in this database moves the end the slot sees past any
        # idle WAL of other databases
        conn.execute("INSERT INTO bench_probe VALUES (-1, now()) ON CONFLICT (id) DO UPDATE "
                     "SET t_src = excluded.t_src")
        t0 = time.monotonic()
        t = wait_slot(conn, a.slot, lsn, a.deadline, 0.05)
    print(json.dumps({"lsn": lsn, "seconds": None if t is None else round(t - t0, 3)}))
    return 0 if t is not None else 1


# ---- stream --------------------------------------------------------------------

class Probe:
    """Every `interval` s: INSERT a marker (id, now()) at the source
    (synchronous_commit on for this session, so the commit is flushed as on
    a production server) and note the monotonic time its commit returned.
    Meanwhile poll the mirror's max(id) every `poll` s (ids grow, and the
    mirror applies transactions in commit order: max(id) >= k means marker
    k is there) and note when each marker was first seen."""

    def __init__(self, src, mirror, start_id, interval=0.02, poll=0.004):
        self.src = src
        self.mirror = mirror
        self.interval = interval
        self.poll = poll
        self.next_id = start_id
        self.first_id = start_id
        self.commits = {}     # id -> monotonic time the commit returned
        self.sent = {}        # id -> monotonic time before the INSERT
        self.seen = {}        # id -> monotonic time first seen in the mirror
        self.stop_ins = threading.Event()
        self.stop_poll = threading.Event()
        self.errors = []
        self.lock = threading.Lock()

    def _insert(self):
        try:
            with psycopg.connect(self.src, autocommit=True) as c:
                c.execute("SET synchronous_commit = on")
                nxt = time.monotonic()
                while not self.stop_ins.is_set():
                    k = self.next_id
                    self.next_id += 1
                    t_s = time.monotonic()
                    c.execute("INSERT INTO bench_probe (id, t_src) VALUES (%s, now())", (k,))
                    t_c = time.monotonic()
                    with self.lock:
                        self.sent[k] = t_s
                        self.commits[k] = t_c
                    nxt += self.interval
                    d = nxt - time.monotonic()
                    if d > 0:
                        time.sleep(d)
                    else:
                        nxt = time.monotonic()
        except Exception as e:   # reported, the run goes on without markers
            self.errors.append(f"probe insert: {e!r}")

    def _poll(self):
        hi = self.next_id - 1
        try:
            while not self.stop_poll.is_set():
                m = self.mirror.one('SELECT max(id) FROM "bench_probe"')
                t = time.monotonic()
                if m is not None and m > hi:
                    # a marker may show before its INSERT returned to the
                    # probe (the commit is done before the client hears of
                    # it): noted all the same, its latency counted as 0
                    with self.lock:
                        for k in range(max(hi + 1, self.first_id), m + 1):
                            self.seen.setdefault(k, t)
                    hi = max(hi, m)
                time.sleep(self.poll)
        except Exception as e:
            self.errors.append(f"probe poll: {e!r}")

    def start(self):
        self.ti = threading.Thread(target=self._insert, daemon=True)
        self.tp = threading.Thread(target=self._poll, daemon=True)
        self.tp.start()
        self.ti.start()

    def stop(self, settle):
        self.stop_ins.set()
        self.ti.join()
        end = time.monotonic() + settle
        while time.monotonic() < end:
            with self.lock:
                if all(k in self.seen for k in self.commits):
                    break
            time.sleep(0.05)
        self.stop_poll.set()
        self.tp.join()

    def latencies(self, t_from, t_to):
        """Latencies (s) of markers committed in [t_from, t_to], and how many
        of them were never seen."""
        lat, unseen = [], 0
        with self.lock:
            for k, tc in self.commits.items():
                if t_from <= tc <= t_to:
                    if k in self.seen:
                        lat.append(max(0.0, self.seen[k] - tc))
                    else:
                        unseen += 1
        return sorted(lat), unseen


def pct(v, p):
    if not v:
        return None
    i = min(len(v) - 1, max(0, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[i]


def table_changes(conn, tables):
    """n_tup_ins + n_tup_upd + n_tup_del of the tables (cumulative)."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    r = conn.execute("SELECT coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0), "
                     "coalesce(sum(n_tup_del), 0) FROM pg_stat_user_tables "
                     "WHERE schemaname = 'public' AND relname = ANY(%s)", (list(tables),)).fetchone()
    return tuple(int(x) for x in r)


def settled_changes(conn, tables, wait=15.0):
    """The counters once they stop moving (backends flush their statistics
    when they exit, a moment after pgbench disconnects)."""
    prev = None
    end = time.monotonic() + wait
    while True:
        cur = table_changes(conn, tables)
        if cur == prev or time.monotonic() > end:
            return cur
        prev = cur
        time.sleep(0.7)


def parse_pgbench(out):
    def grab(rx, conv=float):
        m = re.search(rx, out, re.M)
        return conv(m.group(1)) if m else None
    return {
        "transactions": grab(r"number of transactions actually processed: (\d+)", int),
        "failed": grab(r"number of failed transactions: (\d+)", int),
        "tps": grab(r"^tps = ([\d.]+)"),
        "latency_avg_ms": grab(r"^latency average = ([\d.]+) ms"),
        "lag_avg_ms": grab(r"^rate limit schedule lag: avg ([\d.]+)"),
        "skipped": grab(r"number of transactions skipped: (\d+)", int),
    }


def prime_deletes(conn):
    """The load deletes the row inserted 1000 inserts earlier: before its
    first run, 1000 rows so that every transaction deletes one."""
    if not conn.execute("SELECT is_called FROM bench_ins_seq").fetchone()[0]:
        conn.execute("INSERT INTO bench_src (id, qty, label, created_at) "
                     "SELECT nextval('bench_ins_seq'), 0, 'delete-pool', now() "
                     "FROM generate_series(1, 1000)")


def run_pgbench(a, cpu):
    """pgbench with the load script; (output, exit code, t_start, t_end)."""
    cmd = [a.pgbench, "-n", "-M", "prepared", "-f", a.script, "-c", str(a.clients),
           "-j", str(a.jobs), "-T", str(a.seconds), "-D", f"nrows={a.nrows}"]
    if a.tps:
        cmd += ["-R", str(a.tps)]
    cmd.append(a.src)
    env = dict(os.environ)
    env["PGOPTIONS"] = "-c synchronous_commit=on"
    t_start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                         text=True)
    while p.poll() is None:        # CPU sampled while it runs
        time.sleep(0.5)
        if cpu:
            cpu.sample()
    out = p.stdout.read()
    return out, p.returncode, t_start, time.monotonic()


def load_result(a, out, rc, c0, c1, t_start, t_end, lsn_end, cpu):
    ins, upd, dele = (c1[i] - c0[i] for i in range(3))
    return {
        "pgbench_rc": rc,
        "pgbench": parse_pgbench(out),
        "pgbench_tail": "\n".join(out.strip().splitlines()[-14:]),
        "load_seconds": round(t_end - t_start, 3),
        "inserts": ins, "updates": upd, "deletes": dele, "changes": ins + upd + dele,
        "lsn_end": lsn_end,
        "cpu": cpu.report(tuple(a.pg_word or ())) if cpu else None,
    }


def cmd_stream(a):
    mirror = Mirror(a.backend, a.mirror)
    conn = psycopg.connect(a.src, autocommit=True)
    prime_deletes(conn)
    # start from a caught-up slot
    lsn0 = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    if wait_slot(conn, a.slot, lsn0, 300, 0.05) is None:
        print(json.dumps({"error": "the slot did not catch up before the load"}))
        return 1
    start_id = int(conn.execute("SELECT coalesce(max(id), 0) + 1 FROM bench_probe")
                   .fetchone()[0])
    c0 = settled_changes(conn, ["bench_src"], wait=3)
    probe = Probe(a.src, mirror, max(start_id, 1), interval=a.probe_interval)
    probe.start()
    time.sleep(1.0)    # the probe's first markers before the load: idle latency
    cpu = CpuSampler(a.zxd_pid, a.pg_datadir)
    cpu.sample()
    out, rc, t_start, t_end = run_pgbench(a, cpu)
    lsn_end = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    t_caught = wait_slot(conn, a.slot, lsn_end, a.deadline)
    cpu.sample()
    probe.stop(settle=min(30.0, a.deadline))
    c1 = settled_changes(conn, ["bench_src"])
    conn.close()
    markers = len([1 for tc in probe.commits.values() if t_start <= tc <= t_end])
    lat, unseen = probe.latencies(t_start, t_end)
    idle_lat, _ = probe.latencies(t_start - 1.0, t_start)
    res = load_result(a, out, rc, c0, c1, t_start, t_end, lsn_end, cpu)
    res.update({
        "probe_markers": len(probe.commits), "markers_during_load": markers,
        "caught_up_seconds": None if t_caught is None else round(t_caught - t_start, 3),
        "catch_up_after_load": None if t_caught is None else round(t_caught - t_end, 3),
        "latency_ms": {
            "n": len(lat), "unseen": unseen,
            "p50": None if not lat else round(pct(lat, 50) * 1000, 1),
            "p99": None if not lat else round(pct(lat, 99) * 1000, 1),
            "max": None if not lat else round(lat[-1] * 1000, 1),
            "mean": None if not lat else round(sum(lat) / len(lat) * 1000, 1),
        },
        "idle_latency_ms": None if not idle_lat else round(pct(idle_lat, 50) * 1000, 1),
        "probe_errors": probe.errors,
        # every marker: [seconds after the load began at its commit, latency
        # in ms or null if never seen], for a look at how latency moved
        "markers": [[round(tc - t_start, 3),
                     None if k not in probe.seen else round(max(0.0, probe.seen[k] - tc) * 1000, 1)]
                    for k, tc in sorted(probe.commits.items())],
    })
    print(json.dumps(res))
    return 0 if rc == 0 else 1


def cmd_load(a):
    """The load alone (zxd stopped: it becomes a backlog); its changes and
    the WAL end after it."""
    conn = psycopg.connect(a.src, autocommit=True)
    prime_deletes(conn)
    c0 = settled_changes(conn, ["bench_src"], wait=3)
    out, rc, t_start, t_end = run_pgbench(a, None)
    lsn_end = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    c1 = settled_changes(conn, ["bench_src"])
    conn.close()
    print(json.dumps(load_result(a, out, rc, c0, c1, t_start, t_end, lsn_end, None)))
    return 0 if rc == 0 else 1


def cmd_drain(a):
    """zxd was started at --t0 (time.time()) on a backlog: seconds until the
    slot confirmed --lsn; the CPU zxd and Postgres used meanwhile."""
    cpu = CpuSampler(a.zxd_pid, a.pg_datadir, zxd_from_zero=True)
    cpu.sample()
    conn = psycopg.connect(a.src, autocommit=True)
    end = time.monotonic() + a.deadline
    t = None
    last = time.monotonic()
    while time.monotonic() < end:
        if slot_confirmed_ge(conn, a.slot, a.lsn):
            t = time.time()
            break
        if time.monotonic() - last >= 1.0:
            cpu.sample()
            last = time.monotonic()
        time.sleep(0.01)
    cpu.sample()
    conn.close()
    print(json.dumps({"seconds": None if t is None else round(t - a.t0, 3),
                      "cpu": cpu.report(tuple(a.pg_word or ()))}))
    return 0 if t is not None else 1


def cmd_timed(a):
    """Run a shell command (the psql pipe); its wall seconds and the CPU of
    the Postgres processes meanwhile (psql itself counts as ours)."""
    cpu = CpuSampler(None, a.pg_datadir)
    cpu.sample()
    t0 = time.monotonic()
    p = subprocess.Popen(["bash", "-c", a.command])
    while p.poll() is None:
        time.sleep(0.2)
        cpu.sample()
    t1 = time.monotonic()
    cpu.sample()
    print(json.dumps({"seconds": round(t1 - t0, 3), "rc": p.returncode,
                      "cpu": cpu.report(tuple(a.pg_word or ()))}))
    return p.returncode


def cmd_show_cpu(a):
    r = _load(a.file)
    for ln in _cpu_lines((r or {}).get("cpu")):
        print(ln.replace(": zxd [-]", ""))
    return 0


# ---- printing ------------------------------------------------------------------

def _load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _cpu_lines(cpu, indent="  "):
    if not cpu:
        return []
    zx = ", ".join(f"{t.replace('zxd: ', '')} {s:.1f}" for t, s in cpu["zxd"]) or "-"
    pg = ", ".join(f"{t.replace('postgres: ', '')} {s:.1f}" for t, s in cpu["pg"]) or "-"
    oth = cpu.get("others")
    return [f"{indent}CPU s over {cpu['wall']:.0f} s (machine busy {cpu['machine_busy'] * 100:.0f}% "
            f"of {os.cpu_count()} cores): zxd [{zx}]",
            f"{indent}  postgres [{pg}]"
            + (f"  pgbench {cpu['pgbench']:.1f}" if cpu.get("pgbench") else "")
            + (f"  psql {cpu['psql']:.1f}" if cpu.get("psql") else "")
            + (f"  everything else on the machine: {oth:.1f}" if oth is not None else "")]


def cmd_show_copy(a):
    r = _load(a.file)
    name = {"sqlite": "SQLite", "postgres": "Postgres"}[a.backend]
    if not r or "error" in r:
        print(f"zx initial copy into {name}: FAILED ({(r or {}).get('error', 'no result')})")
        return 0
    rate = r["rows"] / r["seconds"]
    print(f"rows/s of zx initial copy into {name}: {rate:,.0f}  ({r['rows']:,} rows in "
          f"{r['seconds']:.1f} s from zxd start to copy_done + every row in the mirror)")
    zs = r.get("zx_copy_seconds")
    print(f"  copy_done logged {r['copy_done_after']:.1f} s after zxd start"
          + (f" (zx's own copy timer: {zs:.1f} s"
             + (f", {r['zx_copy_rows'] / zs:,.0f} rows/s" if zs else "")
             + f"; rows={r['zx_copy_rows']:,})" if zs is not None else "")
          + f"; the last count(*) took {r['count_query_seconds']:.2f} s")
    for l in _cpu_lines(r.get("cpu")):
        print(l)
    return 0


def cmd_show_stream(a):
    r = _load(a.file)
    if not r or "error" in r:
        print(f"{a.label}: FAILED ({(r or {}).get('error', 'no result')})")
        return 0
    pb = r["pgbench"]
    secs = r["load_seconds"]
    ch = r["changes"]
    print(f"{a.label}: source committed {ch:,} changes in {secs:.1f} s = {ch / secs:,.0f} changes/s "
          f"({r['inserts']:,} ins, {r['updates']:,} upd, {r['deletes']:,} del; pgbench "
          f"{pb.get('transactions') or 0:,} tx, tps {pb.get('tps') or 0:,.0f}"
          + (f", schedule lag avg {pb['lag_avg_ms']} ms" if pb.get("lag_avg_ms") is not None else "")
          + (f", failed {pb['failed']}" if pb.get("failed") else "")
          + (f", pgbench exit {r['pgbench_rc']}" if r["pgbench_rc"] else "") + ")")
    cu = r.get("caught_up_seconds")
    if cu is None:
        print("  applied: the slot did NOT confirm the end of the load within the deadline")
    else:
        print(f"  applied: {ch / cu:,.0f} changes/s (slot confirmed the load's WAL end "
              f"{r['catch_up_after_load']:.2f} s after the load ended, {cu:.1f} s after it began)")
    l = r["latency_ms"]
    if l["n"]:
        print(f"  latency source commit -> mirror commit (probe, {l['n']} markers during the load): "
              f"p50 {l['p50']:.0f} ms  p99 {l['p99']:.0f} ms  max {l['max']:.0f} ms  "
              f"mean {l['mean']:.0f} ms" + (f"  ({l['unseen']} never seen)" if l["unseen"] else "")
              + (f"  [idle before the load: p50 {r['idle_latency_ms']:.0f} ms]"
                 if r.get("idle_latency_ms") is not None else ""))
    else:
        print(f"  latency: no probe marker seen ({l['unseen']} unseen; {r['probe_errors']})")
    for e in r.get("probe_errors") or []:
        print(f"  probe error: {e}")
    for ln in _cpu_lines(r.get("cpu")):
        print(ln)
    if r["pgbench_rc"]:
        print("  pgbench said:\n" + "\n".join("    " + x for x in r["pgbench_tail"].splitlines()))
    return 0


def cmd_show_backlog(a):
    load = _load(a.load)
    drain = _load(a.drain)
    if not load or not drain or drain.get("seconds") is None:
        print(f"{a.label}: FAILED (see {a.load}, {a.drain})")
        return 0
    ch = load["changes"]
    print(f"{a.label}: {ch:,} changes made while zxd was stopped ({load['load_seconds']:.1f} s, "
          f"{ch / load['load_seconds']:,.0f} changes/s at the source); zxd restarted: slot confirmed "
          f"their WAL end after {drain['seconds']:.1f} s = {ch / drain['seconds']:,.0f} changes/s applied")
    for ln in _cpu_lines(drain.get("cpu")):
        print(ln)
    return 0


def cmd_summary(a):
    """One line per figure, and the ratios the brief asks for."""
    base = _load(a.baseline) or {}
    pk = base.get("pk")
    print(f"psql \\copy (COPY TO STDOUT | COPY FROM STDIN), into a table with its primary key: "
          f"{pk or 0:,.0f} rows/s; into a table without index: {base.get('noindex') or 0:,.0f} rows/s")
    for b in a.backends:
        c = _load(os.path.join(a.dir, b, "copy.json"))
        rate = c["rows"] / c["seconds"] if c and "seconds" in c else None
        line = f"zx initial copy into {b}: " + (f"{rate:,.0f} rows/s" if rate else "failed")
        if b == "postgres" and rate and pk:
            line += f"   zx/psql = {rate / pk:.2f}"
            if base.get("noindex"):
                line += f" (vs \\copy without index: {rate / base['noindex']:.2f})"
            line += f"   vs aim 300,000 rows/s: {rate / 300000:.2f}; vs supabase/etl ~122k: {rate / 122000:.2f}"
        print(line)
        for kind, lab in (("rate", "fixed rate"), ("max", "max rate")):
            path = os.path.join(a.dir, b, f"stream_{kind}.json")
            if not os.path.exists(path):
                continue
            s = _load(path)
            if not s or "error" in s:
                print(f"zx streaming into {b}, {lab}: failed")
                continue
            src = s["changes"] / s["load_seconds"]
            cu = s.get("caught_up_seconds")
            app = f"{s['changes'] / cu:,.0f}" if cu else "not caught up"
            l = s["latency_ms"]
            lat = (f"p50 {l['p50']:.0f} / p99 {l['p99']:.0f} / max {l['max']:.0f} ms"
                   if l["n"] else "no markers")
            print(f"zx streaming into {b}, {lab}: source {src:,.0f} changes/s, applied {app} "
                  f"changes/s, latency {lat}")
        ld = _load(os.path.join(a.dir, b, "backlog_load.json"))
        dr = _load(os.path.join(a.dir, b, "backlog_drain.json"))
        if ld and dr and dr.get("seconds"):
            print(f"zx streaming into {b}, backlog drain (no load running): "
                  f"{ld['changes'] / dr['seconds']:,.0f} changes/s applied")
    print("peers: Sequin ~40-50k ops/s at 55 ms mean; aims: >= 300,000 rows/s initial copy into "
          "Postgres, 100,000 changes/s, p99 < 250 ms at 10,000 changes/s")
    return 0


def cmd_field(a):
    """Print one field of a JSON object read from a file (dotted path)."""
    with open(a.file) as f:
        v = json.load(f)
    for k in a.path.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    print("" if v is None else v)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)

    c = sub.add_parser("copy-wait")
    c.add_argument("--log", required=True)
    c.add_argument("--backend", choices=["sqlite", "postgres"], required=True)
    c.add_argument("--mirror", required=True, help="workspace file or DSN")
    c.add_argument("--table", default="bench_src")
    c.add_argument("--rows", type=int, required=True)
    c.add_argument("--t0", type=float, required=True, help="time.time() of zxd's start")
    c.add_argument("--zxd-pid", type=int, required=True)
    c.add_argument("--pg-datadir")
    c.add_argument("--pg-word", action="append")
    c.add_argument("--deadline", type=float, default=3600)
    c.add_argument("--verbose", action="store_true")

    c = sub.add_parser("caught-up")
    c.add_argument("--src", required=True)
    c.add_argument("--slot", required=True)
    c.add_argument("--deadline", type=float, default=300)

    c = sub.add_parser("stream")
    c.add_argument("--src", required=True)
    c.add_argument("--slot", required=True)
    c.add_argument("--backend", choices=["sqlite", "postgres"], required=True)
    c.add_argument("--mirror", required=True)
    c.add_argument("--pgbench", required=True)
    c.add_argument("--script", required=True)
    c.add_argument("--seconds", type=int, required=True)
    c.add_argument("--tps", type=int, default=0, help="pgbench -R (0: as fast as it goes)")
    c.add_argument("--clients", type=int, default=8)
    c.add_argument("--jobs", type=int, default=2)
    c.add_argument("--nrows", type=int, required=True)
    c.add_argument("--zxd-pid", type=int, required=True)
    c.add_argument("--pg-datadir")
    c.add_argument("--pg-word", action="append")
    c.add_argument("--probe-interval", type=float, default=0.02)
    c.add_argument("--deadline", type=float, default=600)

    c = sub.add_parser("load")
    c.add_argument("--src", required=True)
    c.add_argument("--pgbench", required=True)
    c.add_argument("--script", required=True)
    c.add_argument("--seconds", type=int, required=True)
    c.add_argument("--tps", type=int, default=0)
    c.add_argument("--clients", type=int, default=8)
    c.add_argument("--jobs", type=int, default=2)
    c.add_argument("--nrows", type=int, required=True)
    c.add_argument("--pg-word", action="append")

    c = sub.add_parser("drain")
    c.add_argument("--src", required=True)
    c.add_argument("--slot", required=True)
    c.add_argument("--lsn", required=True)
    c.add_argument("--t0", type=float, required=True)
    c.add_argument("--zxd-pid", type=int, required=True)
    c.add_argument("--pg-datadir")
    c.add_argument("--pg-word", action="append")
    c.add_argument("--deadline", type=float, default=1800)

    c = sub.add_parser("show-backlog")
    c.add_argument("load")
    c.add_argument("drain")
    c.add_argument("label")

    c = sub.add_parser("timed")
    c.add_argument("--pg-datadir")
    c.add_argument("--pg-word", action="append")
    c.add_argument("command")

    c = sub.add_parser("show-cpu")
    c.add_argument("file")

    c = sub.add_parser("show-copy")
    c.add_argument("file")
    c.add_argument("backend")

    c = sub.add_parser("show-stream")
    c.add_argument("file")
    c.add_argument("label")

    c = sub.add_parser("summary")
    c.add_argument("--dir", required=True)
    c.add_argument("--baseline", required=True)
    c.add_argument("backends", nargs="+")

    c = sub.add_parser("field")
    c.add_argument("file")
    c.add_argument("path")

    a = ap.parse_args()
    return {"copy-wait": cmd_copy_wait, "caught-up": cmd_caught_up, "stream": cmd_stream,
            "field": cmd_field, "show-copy": cmd_show_copy, "show-stream": cmd_show_stream,
            "summary": cmd_summary, "load": cmd_load, "drain": cmd_drain,
            "show-backlog": cmd_show_backlog, "timed": cmd_timed,
            "show-cpu": cmd_show_cpu}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
