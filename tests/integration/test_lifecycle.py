"""
Process lifecycle: process titles, SIGTERM drain (everything acknowledged
is committed, exit 0), restart of a SIGKILLed child with a new pid,
`failed` after 5 crashes in 60 s, no zombies, children exiting with a
SIGKILLed supervisor, and a clean start on the same folder afterwards.
"""

import json
import os
import signal
import threading
import time

import pytest

from conftest import (Zxd, uid, wait_for, pid_alive, proc_state, proc_title,
                      children_of, http_request)


def kill9(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def zombies_of(pid):
    return [c for c in children_of(pid) if proc_state(c) == "Z"]


def assert_no_zombies(z):
    wait_for(lambda: not zombies_of(z.pid),
             lambda: f"no zombie children of the supervisor (zombies: {zombies_of(z.pid)})")


# ----------------------------------------------------------------- titles

def test_process_titles(make_zxd):
    z = make_zxd({"web_events": {}, "other-one": {"table": "other_one"}})
    pids = {n: z.wait_running(n) for n in ("writer", "gateway", "web_events", "other-one")}
    assert proc_title(z.pid) == "zxd: supervisor", proc_title(z.pid)
    assert proc_title(pids["writer"]) == "zxd: writer", proc_title(pids["writer"])
    assert proc_title(pids["gateway"]) == "zxd: gateway", proc_title(pids["gateway"])
    assert proc_title(pids["web_events"]) == "zxd: stream web_events", proc_title(pids["web_events"])
    assert proc_title(pids["other-one"]) == "zxd: stream other-one", proc_title(pids["other-one"])
    # every child is a direct child of the supervisor
    kids = set(children_of(z.pid))
    for n, p in pids.items():
        assert p in kids, f"{n} (pid {p}) is not a child of the supervisor {z.pid}: {kids}"


# ------------------------------------------------------------- SIGTERM drain

class Pusher(threading.Thread):
    """Pushes 50-row batches to `name` until told to stop or until the
    daemon stops answering; remembers the ids of every 202."""

    def __init__(self, z, name, wait_commit=False):
        super().__init__(daemon=True)
        self.z, self.name, self.wait_commit = z, name, wait_commit
        self.accepted = []          # ids of rows that got a 202
        self.stop_flag = threading.Event()
        self.requests = 0
        self.errors = []

    def run(self):
        while not self.stop_flag.is_set():
            ids = [uid() for _ in range(50)]
            try:
                r = self.z.push(self.name, [{"id": i, "n": k} for k, i in enumerate(ids)],
                                wait_commit=self.wait_commit, timeout=10)
            except OSError as e:
                self.errors.append(repr(e))
                return                       # daemon gone: stop
            self.requests += 1
            if r.status == 202:
                assert r.json["accepted"] == 50
                self.accepted.extend(ids)
            else:
                self.errors.append(r.status)
                if r.status not in (503,):
                    return


def test_sigterm_drains_and_exits_0(make_zxd):
    z = make_zxd({"drain": {"ack": "accepted"}})
    z.wait_running("drain")
    pushers = [Pusher(z, "drain") for _ in range(3)]
    for p in pushers:
        p.start()
    wait_for(lambda: sum(len(p.accepted) for p in pushers) >= 3000,
             "3000 accepted rows before SIGTERM")
    z.remember_pids()
    z.signal(signal.SIGTERM)
    rc = z.wait_exit(60)
    for p in pushers:
        p.stop_flag.set()
        p.join(30)
    assert rc == 0, f"zxd exited {rc} after SIGTERM\n" + z.log_tail()
    accepted = set()
    for p in pushers:
        accepted.update(p.accepted)
    # straight from the file, with the daemon gone
    have = {i for (i,) in z.query("SELECT id FROM drain")}
    missing = accepted - have
    assert not missing, f"{len(missing)} of {len(accepted)} acknowledged rows lost by the drain"
    # every child is gone too
    for pid in list(z._all_pids):
        wait_for(lambda: not pid_alive(pid), f"child {pid} ({proc_title(pid)}) to exit after SIGTERM")
    # restart on the same folder: all rows still there, pushes work
    z.start()
    have = {i for (i,) in z.query("SELECT id FROM drain")}
    assert accepted <= have
    z.push_ok("drain", {"id": "after-restart", "n": 0}, wait_commit=True)
    z.stop()


def test_sigterm_drains_a_full_ring(make_zxd):
    """Rows acknowledged while the writer is frozen are still in the ring
    when SIGTERM arrives: the drain must commit them before exiting 0."""
    z = make_zxd({"fr": {"ack": "accepted"}})
    writer = z.wait_running("writer")
    ids = []
    os.kill(writer, signal.SIGSTOP)
    try:
        for _ in range(20):
            batch = [uid() for _ in range(100)]
            z.push_ok("fr", [{"id": i} for i in batch])
            ids.extend(batch)
        z.remember_pids()
        z.signal(signal.SIGTERM)
    finally:
        os.kill(writer, signal.SIGCONT)
    rc = z.wait_exit(60)
    assert rc == 0, f"exit {rc}\n" + z.log_tail()
    have = {i for (i,) in z.query("SELECT id FROM fr")} if z.table_exists("fr") else set()
    missing = set(ids) - have
    assert not missing, f"{len(missing)} of {len(ids)} acknowledged rows not committed by the drain"


def test_stop_pipeline_loses_nothing(make_zxd):
    """`zxctl stop` drains: every row acknowledged before the stop is
    committed; the pipeline's pushes are refused afterwards."""
    z = make_zxd({"st": {"ack": "accepted"}})
    z.wait_running("st")
    p = Pusher(z, "st")
    p.start()
    wait_for(lambda: len(p.accepted) >= 1000, "1000 accepted rows before the stop")
    z.zxctl("stop", "st", check_rc=0)
    wait_for(lambda: z.pipeline("st")["state"] == "stopped", "st stopped")
    p.stop_flag.set()
    p.join(30)
    acked = set(p.accepted)
    # ack: accepted promises the ring, not the commit: the writer may still
    # be committing the ring's last frames when the worker has stopped.
    missing = {}

    def all_there():
        missing["m"] = acked - {i for (i,) in z.query("SELECT id FROM st")}
        return not missing["m"]
    wait_for(all_there, lambda: f"every acknowledged row committed after zxctl stop "
             f"({len(missing.get('m', ()))} of {len(acked)} missing)")
    r = z.push("st", {"id": "after-stop"})
    assert r.status != 202, f"push to a stopped pipeline: {r!r}"


def test_sigint_like_sigterm(make_zxd):
    z = make_zxd({"p": {}})
    z.push_ok("p", {"n": 1})
    z.signal(signal.SIGINT)
    assert z.wait_exit(60) == 0, z.log_tail()
    assert z.count("p") == 1


# ------------------------------------------------------------- crash restart

@pytest.mark.parametrize("victim", ["stream", "writer", "gateway"])
def test_sigkill_child_is_restarted(make_zxd, victim):
    z = make_zxd({"k": {"ack": "accepted"}})
    name = "k" if victim == "stream" else victim
    old = z.wait_running(name)
    before = z.entry(name)["restarts"]
    z.push_ok("k", [{"n": i} for i in range(5)], wait_commit=True)
    kill9(old)
    new = z.wait_running(name, not_pid=old)
    assert new != old
    # status has the pid from the fork on; the child names itself just after
    title = "zxd: stream k" if victim == "stream" else f"zxd: {victim}"
    wait_for(lambda: proc_title(new) == title,
             lambda: f"the new {name} titled {title!r}, not {proc_title(new)!r}")
    wait_for(lambda: z.entry(name)["restarts"] >= before + 1, f"{name}.restarts to grow")
    # pushes work again (retry while the rest settles, e.g. a new gateway binding)
    wait_for(lambda: z.push("k", {"n": 99}, wait_commit=True, timeout=10).status == 202,
             "a committed push after the restart")
    assert z.count("k", "n < 5") == 5
    assert_no_zombies(z)
    wait_for(lambda: z.get("/healthz", timeout=5).status == 200, "healthz 200 after restart")


def test_failed_after_5_crashes(make_zxd):
    z = make_zxd({"crashy": {}, "steady": {}})
    steady = z.wait_running("steady")
    kills = 0
    pid = None
    t0 = time.monotonic()
    while kills < 8 and time.monotonic() - t0 < 60:
        st = z.pipeline("crashy")
        if st["state"] == "failed":
            break
        if st["state"] == "running" and st["pid"] and st["pid"] != pid and pid_alive(st["pid"]):
            pid = st["pid"]
            kill9(pid)
            kills += 1
            continue
        time.sleep(0.02)
    # the last kill may still be being processed
    wait_for(lambda: z.pipeline("crashy")["state"] in ("failed", "running"),
             "crashy to settle after the kills")
    st = z.pipeline("crashy")
    assert st["state"] == "failed", (f"crashy not failed after {kills} SIGKILLs in "
                                     f"{time.monotonic() - t0:.0f} s: {st}")
    assert kills in (5, 6), f"failed after {kills} crashes (spec: 5 in 60 s)"
    assert st["pid"] is None or not pid_alive(st["pid"]), st
    assert st.get("last_error"), f"a failed pipeline should say why: {st}"
    # it stays failed (no restart loop), the rest keeps working
    r = z.push("crashy", {"n": 1}, timeout=30)
    assert r.status != 202, r
    assert z.pipeline("steady")["pid"] == steady
    z.push_ok("steady", {"n": 1}, wait_commit=True)
    p = z.zxctl("status", check_rc=0)
    assert "failed" in p.stdout, p.stdout
    assert_no_zombies(z)
    # a stream worker is not up: /healthz says 503 and why
    h = z.get("/healthz")
    assert h.status == 503, f"/healthz with a failed stream worker: {h!r}"
    assert isinstance(h.json, dict) and "crashy" in h.body.decode(), \
        f"/healthz 503 should name the failed stream: {h!r}"
    # start brings it back
    z.zxctl("start", "crashy", check_rc=0)
    z.wait_running("crashy", not_pid=pid)
    z.push_ok("crashy", {"n": 2}, wait_commit=True)
    wait_for(lambda: z.get("/healthz", timeout=5).status == 200, "healthz 200 after start")


# ------------------------------------------------------- supervisor death

def test_children_exit_when_supervisor_killed(make_zxd):
    z = make_zxd({"a": {}, "b": {}})
    pids = {n: z.wait_running(n) for n in ("writer", "gateway", "a", "b")}
    z.push_ok("a", {"n": 1}, wait_commit=True)
    kill9(z.pid)
    z.proc.wait(timeout=30)
    for n, p in pids.items():
        wait_for(lambda: not pid_alive(p), f"{n} (pid {p}) to exit after SIGKILL of the supervisor")
    # nothing listens any more
    with pytest.raises(OSError):
        http_request(z.port, "GET", "/healthz", timeout=5)
    # a new daemon on the same folder starts cleanly (stale socket, locks)
    z.start()
    assert z.count("a") == 1
    z.push_ok("a", {"n": 2}, wait_commit=True)
    assert z.count("a") == 2
    # the old segment's checkpoint is forgotten: one per pipeline in use
    wait_for(lambda: z.query("SELECT count(*) FROM _zx_checkpoints WHERE pipeline LIKE 'a#%'")[0][0] == 1,
             "the checkpoint of the previous zxd's segment to be pruned")
    z.stop()


def test_no_zombies_after_many_restarts(make_zxd):
    z = make_zxd({"a": {}})
    for _ in range(3):
        old = z.wait_running("a")
        kill9(old)
        z.wait_running("a", not_pid=old)
    old = z.wait_running("gateway")
    kill9(old)
    z.wait_running("gateway", not_pid=old)
    assert_no_zombies(z)
    z.stop()


def test_healthz_503_while_the_writer_cannot_start(make_zxd):
    """A writer that cannot open the workspace (here: on SQLite a folder
    where the database file should be; on Postgres a database that does
    not accept connections) is restarted with backoff; meanwhile /healthz
    answers 503 naming the writer, status shows the error, pushes with
    ack: accepted still go into the ring, and once the cause is gone every
    one of them is committed."""
    z = make_zxd({"h": {}}, start=False)
    if z.workspace == "postgres":
        allow = 'ALTER DATABASE "%s" ALLOW_CONNECTIONS %%s' % z.pg_db
        z.pg.execute("postgres", allow % "false")

        def remove_cause():
            z.pg.execute("postgres", allow % "true")
    else:
        os.makedirs(os.path.join(z.data_dir, "workspace.db"))

        def remove_cause():
            os.rmdir(os.path.join(z.data_dir, "workspace.db"))
    try:
        writer_cannot_start(z, remove_cause)
    finally:
        if z.workspace == "postgres":   # whatever happened: the database can be dropped
            remove_cause()


def writer_cannot_start(z, remove_cause):
    z.start(wait=False)

    def writer_down():
        try:
            r = z.get("/healthz", timeout=5)
        except OSError:
            return False
        return r.status == 503 and "writer" in json.dumps(r.json)
    wait_for(writer_down, "healthz 503 naming the writer")
    h = z.get("/healthz")
    assert h.headers.get("retry-after"), h.headers
    wait_for(lambda: (z.process("writer") or {}).get("restarts", 0) >= 1, "writer restarts")
    w = z.process("writer")
    assert w["state"] in ("backoff", "starting", "running") and w["last_error"], w

    if z.workspace == "postgres":
        # the log says why (status: how the writer exited), without the
        # password
        log = z.log_text()
        assert f"cannot connect to Postgres {z.pg_dsn_shown}: " in log and \
            "is not currently accepting connections" in log, z.log_tail(30)
        z.assert_no_secret()
    r = z.push("h", [{"n": 1}, {"n": 2}])
    assert r.status == 202, r
    remove_cause()
    z.wait_healthy(deadline=60)
    wait_for(lambda: z.count("h") == 2, "rows accepted while the writer was down to be committed",
             deadline=60)
