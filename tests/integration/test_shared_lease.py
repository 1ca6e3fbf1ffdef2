"""
Leases in a shared Postgres workspace (`workspace.postgres.shared: true`,
`workspace.postgres.lease`): several zxd configured with the same Postgres
CDC pipeline (one replication slot) run its worker on one zxd at a time,
the one holding the lease "pipeline:<name>" in `_zx_leases`; the others
show it as `standby`, naming the holder, and take it over once the holder
stops renewing it (at once when it stops cleanly), starting from the
positions in the workspace.  A holder paused past its lease cannot commit
when it wakes up.  A scheduled reverse sync configured on both runs on the
holder of "sync:<name>" only.

Timings are never asserted (the machine is shared); takeover times are
printed.
"""

import os
import random
import secrets
import signal
import socket
import threading
import time

import pytest

from conftest import http_request, wait_for
import pg_fixtures
from pg_cdc_fixtures import make_cdc_env, superuser

pytestmark = pytest.mark.postgres_only

LEASE = "3s"
DEADLINE = 120


@pytest.fixture
def cdc_env(pg, workspace):
    yield from make_cdc_env(pg, "postgres")


def shared(z, other=None, lease=LEASE):
    """Make z (not started) share the workspace of other (or be the first)
    with a short lease (a test that needs no failover takes a longer one: a
    short lease can move to the other zxd when a CPU-starved writer renews
    it late, as it did once in CI)."""
    base = z.workspace_lines
    z.workspace_lines = lambda: base() + [f"    lease: {lease}"]
    z.pg_shared = True
    if other is not None:
        z.use_workspace_of(other)
    z.write_config()
    return z


def pair(env, db):
    cdc = {"shop": {"connection": "db", "tables": ["orders"],
                    "extra": {"table_prefix": "shop_"}}}
    a = shared(env.zxd(cdc, {"db": superuser(db)}, start=False))
    a.start()
    wait_for(lambda: a.pipeline("shop")["state"] == "running", "a runs shop",
             deadline=DEADLINE)
    b = shared(env.zxd(cdc, {"db": superuser(db)}, start=False), a)
    b.start()
    return a, b


def source_rows(pg, db):
    return [tuple(r) for r in pg.query(db, "SELECT id, v, n FROM orders ORDER BY id")]


def mirror_rows(z):
    return [tuple(r) for r in z.query("SELECT id, v, n FROM shop_orders ORDER BY id")]


def wait_equal(pg, db, z, what):
    last = {}

    def same():
        last["src"], last["dst"] = source_rows(pg, db), mirror_rows(z)
        return last["src"] == last["dst"]

    def why():
        s, d = set(last.get("src", [])), set(last.get("dst", []))
        return (f"{what}: mirror equal to the source; only in the source: "
                f"{sorted(s - d)[:10]}, only in the mirror: {sorted(d - s)[:10]}")
    wait_for(same, why, deadline=DEADLINE)


def standby_of(z):
    st = z.pipeline("shop")
    return st["state"] == "standby", st


class Workload:
    """Inserts, updates and deletes on the source until stopped."""

    def __init__(self, pg, db, first_id):
        self.pg, self.db, self.next = pg, db, first_id
        self.stop_ev = threading.Event()
        self.errors = []
        self.done = 0
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        rnd = random.Random(7)
        try:
            with self.pg.connect(self.db) as conn:
                conn.autocommit = True
                while not self.stop_ev.is_set():
                    k = rnd.random()
                    if k < 0.5:
                        conn.execute("INSERT INTO orders VALUES (%s, %s, %s)",
                                     (self.next, f"v{self.next}", 0))
                        self.next += 1
                    elif k < 0.85:
                        conn.execute("UPDATE orders SET n = n + 1, v = v || 'u' WHERE id = %s",
                                     (rnd.randrange(1, self.next),))
                    else:
                        conn.execute("DELETE FROM orders WHERE id = %s",
                                     (rnd.randrange(1, self.next),))
                    self.done += 1
                    time.sleep(0.002)
        except Exception as e:     # reported by the test
            self.errors.append(repr(e))

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        self.t.join(60)
        assert not self.errors, self.errors


def lease_row(z, name="pipeline:shop"):
    rows = z.query("SELECT holder, holder_desc FROM _zx_leases WHERE name = ?", (name,))
    return rows[0] if rows else None


def test_one_holder_streams_the_other_takes_over_after_a_kill_and_a_stop(pg, cdc_env):
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY, v text, n int)")
    pg.execute(db, "INSERT INTO orders SELECT g, 'v' || g, 0 FROM generate_series(1, 200) g")
    a, b = pair(cdc_env, db)
    wait_equal(pg, db, a, "the initial copy")

    # b is standby and says who holds the lease
    wait_for(lambda: standby_of(b)[0], "b standby", deadline=DEADLINE)
    st = standby_of(b)[1]
    assert st["pid"] is None, st
    assert st["lease"]["held"] is False and st["lease"]["name"] == "pipeline:shop", st
    why = st["last_error"]
    assert why.startswith("standby: held by host "), why
    assert f"zxd pid {a.pid}" in why and f"data_dir {a.data_dir}" in why and " since " in why, why
    text = b.zxctl("status").stdout
    assert "standby" in text and f"zxd pid {a.pid}" in text, text
    assert a.pipeline("shop")["lease"]["held"] is True
    holder, desc = lease_row(a)
    assert holder == open(f"{a.data_dir}/instance-id").read().strip() and \
        f"zxd pid {a.pid}" in desc

    with Workload(pg, db, 1001) as w:
        wait_for(lambda: w.done > 300, "changes on the source", deadline=DEADLINE)
        # the holder dies with all its processes
        t0 = time.monotonic()
        a.kill_all()
        wait_for(lambda: b.pipeline("shop")["state"] == "running", "b takes over",
                 deadline=DEADLINE)
        print(f"takeover after SIGKILL: {time.monotonic() - t0:.1f} s (lease {LEASE})")
        n = w.done
        wait_for(lambda: w.done > n + 300, "changes after the takeover", deadline=DEADLINE)
    wait_equal(pg, db, b, "after the takeover")
    assert "event=lease_positions_copied pipeline=shop" in b.log_text()
    assert lease_row(b)[0] == open(f"{b.data_dir}/instance-id").read().strip()

    # a comes back: standby now, naming b
    a.start()
    wait_for(lambda: standby_of(a)[0] and f"zxd pid {b.pid}" in standby_of(a)[1]["last_error"],
             "a standby behind b", deadline=DEADLINE)
    with Workload(pg, db, 100001) as w:
        wait_for(lambda: w.done > 200, "changes on the source", deadline=DEADLINE)
        t0 = time.monotonic()
        b.stop()            # a clean stop gives the lease up
        wait_for(lambda: a.pipeline("shop")["state"] == "running", "a takes over",
                 deadline=DEADLINE)
        print(f"takeover after a clean stop: {time.monotonic() - t0:.1f} s (lease {LEASE})")
        n = w.done
        wait_for(lambda: w.done > n + 200, "changes after the takeover", deadline=DEADLINE)
    assert "event=lease_released pipeline=shop" in b.log_text()
    wait_equal(pg, db, a, "after the second takeover")
    for z in (a, b):
        assert "event=fatal" not in z.log_text()


def checkpoint_of(z, pipeline="shop"):
    inst = open(f"{z.data_dir}/instance-id").read().strip()
    return z.query("SELECT pipeline, seq FROM _zx_checkpoints WHERE pipeline LIKE ? "
                   "ORDER BY pipeline", (f"{inst}/{pipeline}#%",))


def test_a_paused_holder_cannot_write_after_a_takeover(pg, cdc_env):
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY, v text, n int)")
    pg.execute(db, "INSERT INTO orders SELECT g, 'v' || g, 0 FROM generate_series(1, 100) g")
    a, b = pair(cdc_env, db)
    wait_equal(pg, db, a, "the initial copy")
    wait_for(lambda: standby_of(b)[0], "b standby", deadline=DEADLINE)
    inst_b = open(f"{b.data_dir}/instance-id").read().strip()
    a.remember_pids()
    with Workload(pg, db, 1001) as w:
        wait_for(lambda: w.done > 200, "changes on the source", deadline=DEADLINE)
        os.killpg(a.pid, signal.SIGSTOP)      # every process of a, its writer too
        try:
            ckpt = checkpoint_of(a)
            assert ckpt, "a committed before it was paused"
            t0 = time.monotonic()
            wait_for(lambda: (lease_row(b) or ("",))[0] == inst_b, "b takes the lease over",
                     deadline=DEADLINE)
            print(f"lease taken over from a paused holder: {time.monotonic() - t0:.1f} s")
            n = w.done
            wait_for(lambda: w.done > n + 100, "changes while a is paused", deadline=DEADLINE)
        finally:
            os.killpg(a.pid, signal.SIGCONT)
        # a wakes up: its writer must not commit anything of shop, and its
        # worker is stopped
        wait_for(lambda: "event=lease_lost pipeline=shop" in a.log_text(), "a's writer "
                 "notices the loss", deadline=DEADLINE)
        wait_for(lambda: standby_of(a)[0] and
                 f"zxd pid {b.pid}" in standby_of(a)[1]["last_error"],
                 "a standby behind b", deadline=DEADLINE)
        assert standby_of(a)[1]["pid"] is None
        assert "event=lease_stop pipeline=shop" in a.log_text() or \
            "event=lease_expired pipeline=shop" in a.log_text(), a.log_tail()
        wait_for(lambda: b.pipeline("shop")["state"] == "running", "b runs shop",
                 deadline=DEADLINE)
        n = w.done
        wait_for(lambda: w.done > n + 200, "changes after a woke up", deadline=DEADLINE)
    wait_equal(pg, db, b, "after the takeover from the paused holder")
    # nothing of a's was committed after its pause
    assert checkpoint_of(a) == ckpt, (ckpt, checkpoint_of(a))
    assert "event=fatal" not in a.log_text() + b.log_text()


class CutProxy:
    """A TCP proxy to the Postgres server that the test can cut (every
    connection closed, new ones refused) and mend: a zxd whose workspace
    dsn points at it loses its workspace while the others keep theirs."""

    def __init__(self, port):
        self.up = port
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.cut_now = False
        self.socks = []
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            if self.cut_now:
                c.close()
                continue
            try:
                u = socket.create_connection(("127.0.0.1", self.up))
            except OSError:
                c.close()
                continue
            with self.lock:
                self.socks += [c, u]
            threading.Thread(target=self.pump, args=(c, u), daemon=True).start()
            threading.Thread(target=self.pump, args=(u, c), daemon=True).start()

    @staticmethod
    def pump(src, dst):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                dst.sendall(b)
        except OSError:
            pass
        for x in (src, dst):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        self.cut_now = True
        with self.lock:
            for x in self.socks:
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.socks = []

    def mend(self):
        self.cut_now = False

    def close(self):
        self.cut()
        self.lsock.close()


def test_a_holder_cut_off_from_the_workspace_stops_and_the_other_takes_over(pg, cdc_env):
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY, v text, n int)")
    pg.execute(db, "INSERT INTO orders SELECT g, 'v' || g, 0 FROM generate_series(1, 100) g")
    proxy = CutProxy(pg_fixtures.service().port)
    try:
        cdc = {"shop": {"connection": "db", "tables": ["orders"],
                        "extra": {"table_prefix": "shop_"}}}
        a = cdc_env.zxd(cdc, {"db": superuser(db)}, start=False)
        a.pg_port = proxy.port        # a's workspace only: the source stays reachable
        shared(a).start()
        wait_for(lambda: a.pipeline("shop")["state"] == "running", "a runs shop",
                 deadline=DEADLINE)
        b = shared(cdc_env.zxd(cdc, {"db": superuser(db)}, start=False), a)
        b.start()
        wait_equal(pg, db, a, "the initial copy")
        wait_for(lambda: standby_of(b)[0], "b standby", deadline=DEADLINE)
        with Workload(pg, db, 1001) as w:
            wait_for(lambda: w.done > 200, "changes on the source", deadline=DEADLINE)
            t0 = time.monotonic()
            proxy.cut()
            # a cannot renew: it stops its worker; b takes over
            wait_for(lambda: "event=lease_lost pipeline=shop" in a.log_text(),
                     "a's writer gives the lease up", deadline=DEADLINE)
            wait_for(lambda: a.pipeline("shop")["pid"] is None, "a's worker stopped",
                     deadline=DEADLINE)
            wait_for(lambda: b.pipeline("shop")["state"] == "running", "b takes over",
                     deadline=DEADLINE)
            print(f"takeover from a holder cut off from the workspace: "
                  f"{time.monotonic() - t0:.1f} s (lease {LEASE})")
            assert a.pipeline("shop")["state"] == "standby"
            proxy.mend()
            # a reaches the workspace again: standby behind b
            wait_for(lambda: standby_of(a)[0] and
                     f"zxd pid {b.pid}" in standby_of(a)[1]["last_error"],
                     "a standby behind b", deadline=DEADLINE)
            n = w.done
            wait_for(lambda: w.done > n + 200, "changes after the takeover", deadline=DEADLINE)
        wait_equal(pg, db, b, "after the takeover from the cut-off holder")
        assert a.pipeline("shop")["pid"] is None
        assert "event=fatal" not in a.log_text() + b.log_text()
    finally:
        proxy.close()


# ---- reverse syncs -------------------------------------------------------------------

@pytest.fixture
def sync_env(pg, workspace):
    from sync_fixtures import make_sync_env
    yield from make_sync_env(pg, "postgres")


def clock_offset_ms(seconds_before_minute):
    """An offset for zxd's schedule clock that puts the next whole minute
    `seconds_before_minute` from now (as test_syncs.py)."""
    to_next = 60 - (time.time() % 60)
    return int(((to_next - seconds_before_minute) % 60) * 1000)


def test_a_scheduled_sync_runs_on_the_lease_holder_only(sync_env):
    syncs = {"nums": {"author": "alice", "query": "SELECT id FROM nums", "mode": "replace",
                      "dest": {"files": {"path": "var/exports/n.csv", "format": "csv"}},
                      "schedule": "* * * * *"}}
    offset = str(clock_offset_ms(12))
    a = shared(sync_env.zxd(syncs, {"alice": ["nums"]}, start=False), lease="60s")
    a.env["ZX_TEST_CLOCK_OFFSET_MS"] = offset
    a.ws_exec("CREATE TABLE nums (id bigint PRIMARY KEY)", "INSERT INTO nums VALUES (1), (2)")
    a.start()
    wait_for(lambda: a.pipeline("nums")["lease"]["held"], "a holds the sync's lease",
             deadline=DEADLINE)
    b = shared(sync_env.zxd(syncs, {"alice": ["nums"]}, start=False), a, lease="60s")
    b.env["ZX_TEST_CLOCK_OFFSET_MS"] = offset
    token = "tok-" + secrets.token_hex(8)
    b.api_tokens = {"scraper": {"token": token, "role": "orchestrator"}}
    b.write_config()
    b.start()
    wait_for(lambda: b.pipeline("nums")["state"] == "standby" and
             f"zxd pid {a.pid}" in (b.pipeline("nums")["last_error"] or ""),
             "b standby for the sync", deadline=DEADLINE)
    # /metrics says so too
    r = http_request(b.port, "GET", "/metrics", headers={"Authorization": f"Bearer {token}"})
    assert r.status == 200, r
    assert 'zx_pipeline_state{pipeline="nums",state="standby"} 1' in r.body.decode(), r.body[-3000:]
    # a manual run on the standby says where it runs
    p = b.zxctl("run", "nums")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "runs on the zxd holding its lease" in p.stdout + p.stderr and \
        f"zxd pid {a.pid}" in p.stdout + p.stderr, p.stdout + p.stderr
    # the minute comes on both: one run, on a
    wait_for(lambda: any(r["trigger"] == "schedule" and r["state"] == "succeeded"
                         for r in a.runs("nums")), "a's scheduled run", deadline=DEADLINE)
    wait_for(lambda: "event=run_skipped sync=nums trigger=schedule" in b.log_text(),
             "b skips the scheduled run", deadline=DEADLINE)
    assert [r["trigger"] for r in a.runs("nums")] == ["schedule"]
    assert b.runs("nums") == []
    assert not os.path.exists(os.path.join(b.data_dir, "exports", "n.csv"))
    assert os.path.exists(os.path.join(a.data_dir, "exports", "n.csv"))


def test_a_run_in_flight_is_stopped_when_its_zxd_loses_the_lease(sync_env):
    """A holder whose writer stops renewing the lease (paused here) kills
    its run in flight: another zxd may run the sync from then on, and two
    runs of one sync never write at once.  The run fails naming the
    lease."""
    syncs = {"slow": {"author": "alice", "mode": "replace",
                      "query": "SELECT id, pg_sleep(600) IS NULL AS slept FROM nums",
                      "dest": {"files": {"path": "var/exports/slow.csv", "format": "csv"}}}}
    a = shared(sync_env.zxd(syncs, {"alice": ["nums"]}, start=False))
    a.ws_exec("CREATE TABLE nums (id bigint PRIMARY KEY)", "INSERT INTO nums VALUES (1)")
    a.start()
    wait_for(lambda: a.pipeline("slow")["lease"]["held"], "a holds the sync's lease",
             deadline=DEADLINE)
    b = shared(sync_env.zxd(syncs, {"alice": ["nums"]}, start=False), a)
    b.start()
    wait_for(lambda: b.pipeline("slow")["state"] == "standby", "b standby", deadline=DEADLINE)
    p = a.zxctl("run", "slow")
    assert p.returncode == 0, p.stdout + p.stderr
    wait_for(lambda: [r["state"] for r in a.runs("slow")] == ["running"], "a's run runs",
             deadline=DEADLINE)
    inst_b = open(f"{b.data_dir}/instance-id").read().strip()
    writer = a.process("writer")["pid"]
    os.kill(writer, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        wait_for(lambda: a.runs("slow")[0]["state"] == "failed", "a's run stopped",
                 deadline=DEADLINE)
        print(f"run stopped {time.monotonic() - t0:.1f} s after the writer's pause")
        wait_for(lambda: (lease_row(b, "sync:slow") or ("",))[0] == inst_b,
                 "b takes the lease over", deadline=DEADLINE)
    finally:
        os.kill(writer, signal.SIGCONT)
    run = a.runs("slow")[0]
    assert run["error"].startswith("sync slow: the run was stopped: this zxd no longer holds "
                                   "lease sync:slow"), run
    assert "event=run_cut sync=slow" in a.log_text(), a.log_tail()
    # nothing is written by the cut run, and the query's backend is gone
    assert not os.path.exists(os.path.join(a.data_dir, "exports", "slow.csv"))
    wait_for(lambda: a.pg.query("postgres", "SELECT count(*) FROM pg_stat_activity WHERE "
                                "datname = %s AND query LIKE %s",
                                (a.pg_db, "%pg_sleep(600)%"))[0][0] == 0,
             "the cut run's query ends", deadline=DEADLINE)
    # a is standby now, b the holder: a run on a is refused and names b
    wait_for(lambda: a.pipeline("slow")["state"] == "standby", "a standby", deadline=DEADLINE)
    p = a.zxctl("run", "slow")
    assert p.returncode == 1 and f"zxd pid {b.pid}" in p.stdout + p.stderr, p.stdout + p.stderr


def test_an_on_change_sync_hears_the_commits_of_another_zxd(sync_env):
    """`on: change` in a shared workspace: rows that another zxd commits to
    a table the sync reads start the sync on the zxd holding its lease
    (the writers tell each other in the commit's transaction: LISTEN and
    NOTIFY), not only rows its own zxd commits."""
    syncs = {"copy": {"author": "alice", "mode": "replace", "query": "SELECT id, v FROM web",
                      "dest": {"files": {"path": "var/exports/web.csv", "format": "csv"}},
                      "extra": {"on": "change", "min_interval": "1s"}}}
    a = shared(sync_env.zxd(syncs, {"alice": ["web"]}, start=False), lease="60s")
    a.ws_exec("CREATE TABLE web (id bigint, v text)")
    a.start()
    wait_for(lambda: a.pipeline("copy")["lease"]["held"], "a holds the sync's lease",
             deadline=DEADLINE)
    b = shared(sync_env.zxd(syncs, {"alice": ["web"]}, start=False), a, lease="60s")
    b.start()
    wait_for(lambda: b.pipeline("copy")["state"] == "standby", "b standby", deadline=DEADLINE)
    # its first run, at start, on a
    wait_for(lambda: [r["state"] for r in a.runs("copy")] == ["succeeded"], "a's first run",
             deadline=DEADLINE)
    out = os.path.join(a.data_dir, "exports", "web.csv")
    t0 = time.monotonic()
    b.push_ok("web", [{"id": 1, "v": "pushed to b"}])
    wait_for(lambda: len(a.runs("copy")) == 2 and a.runs("copy")[0]["state"] == "succeeded",
             "a's run for b's commit", deadline=DEADLINE)
    print(f"a's run for b's commit ended {time.monotonic() - t0:.1f} s after the push")
    assert a.runs("copy")[0]["trigger"] == "change", a.runs("copy")
    with open(out) as f:
        assert "pushed to b" in f.read()
    # one more from b, one from a: each heard once, and nothing runs on b
    b.push_ok("web", [{"id": 2, "v": "again b"}])
    wait_for(lambda: "again b" in open(out).read(), "the second row from b", deadline=DEADLINE)
    a.push_ok("web", [{"id": 3, "v": "from a"}])
    wait_for(lambda: "from a" in open(out).read(), "the row from a", deadline=DEADLINE)
    assert b.runs("copy") == []
    assert "event=workspace_listen_failed" not in a.log_text() + b.log_text()
