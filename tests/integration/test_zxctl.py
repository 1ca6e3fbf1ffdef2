"""
zxctl, as scripts and operators use it: every command, human and --json
output, exit codes (0 ok, 1 daemon error, 2 usage, 3 unreachable), the
control socket's mode, and `feed --follow` showing live events.
"""

import json
import os
import re
import stat
import subprocess
import threading

import pytest

from conftest import ZXCTL, uid, wait_for, pid_alive

PIPES = {
    "za": {},
    "zs": {},            # stop / start
    "zr": {},            # restart
    "zc": {"metadata": ["_ingested_at"]},   # checkpoints
    "zf": {},            # feed --follow (json)
    "zh": {},            # feed --follow (human)
    "zk": {},            # feed --follow: restart, rejects, schema
    "zo": {},            # checkpoints of pushes without keys (owed store records)
}

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


@pytest.fixture(scope="module")
def z(module_zxd):
    return module_zxd(PIPES)


# ----------------------------------------------------------------- status

def test_status_json_shape(z):
    for n in PIPES:
        z.wait_running(n)
    st = z.status()
    assert st["pid"] == z.pid, f"status pid {st.get('pid')} is not the supervisor's {z.pid}"
    assert isinstance(st.get("version"), str) and st["version"], st
    assert st.get("config") == os.path.realpath(z.cfg_path), st.get("config")
    assert RFC3339.match(st.get("started_at") or ""), st.get("started_at")
    procs = {p["name"]: p for p in st["processes"]}
    for n in ("writer", "gateway"):
        assert n in procs, f"status lacks process {n}: {st['processes']}"
        assert procs[n]["state"] == "running" and pid_alive(procs[n]["pid"]), procs[n]
        assert isinstance(procs[n]["restarts"], int)
    pipes = {p["name"]: p for p in st["pipelines"]}
    assert set(pipes) == set(PIPES), sorted(pipes)
    for n, p in pipes.items():
        assert p["source"] == "http" and p["table"] == n, p
        assert p["state"] == "running" and pid_alive(p["pid"]), p
        for k in ("restarts", "rows", "rejects"):
            assert isinstance(p[k], int), (k, p)
        assert isinstance(p["rejects_by_column"], dict), p
        ring = p["ring"]
        for k in ("published", "acked", "used_bytes", "capacity"):
            assert isinstance(ring[k], int), (k, ring)
        assert ring["capacity"] > 0
    all_pids = [st["pid"]] + [procs[n]["pid"] for n in procs] + [p["pid"] for p in pipes.values()]
    assert len(set(all_pids)) == len(all_pids), f"pids not distinct: {all_pids}"


def test_status_rows_counter(z):
    z.push_ok("za", [{"n": i} for i in range(3)], wait_commit=True)
    wait_for(lambda: z.pipeline("za")["rows"] >= 3, "za.rows >= 3 in status")
    assert z.pipeline("za")["rows"] == 3, z.pipeline("za")
    assert z.count("za") == 3


def test_status_human(z):
    p = z.zxctl("status", check_rc=0)
    out = p.stdout
    for n in ("za", "zs", "writer", "gateway", "running"):
        assert n in out, f"human status lacks {n!r}:\n{out}"
    with pytest.raises(ValueError):
        json.loads(out)


def test_status_via_config_file(z):
    p = z.zxctl("status", json_out=True, use_config=True, check_rc=0)
    assert json.loads(p.stdout)["pid"] == z.pid


def test_json_flag_after_command(z):
    p = subprocess.run([ZXCTL, "-s", z.sock, "status", "--json"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p
    assert json.loads(p.stdout)["pid"] == z.pid


def test_socket_mode_0600(z):
    s = os.stat(z.sock)
    assert stat.S_ISSOCK(s.st_mode), "control_socket is not a socket"
    assert stat.S_IMODE(s.st_mode) == 0o600, f"control socket mode {oct(stat.S_IMODE(s.st_mode))}"


# ------------------------------------------------------ restart / stop / start

def test_restart_pipeline(z):
    old = z.wait_running("zr")
    p = z.zxctl("restart", "zr", check_rc=0)
    new = z.wait_running("zr", not_pid=old)
    wait_for(lambda: not pid_alive(old), f"old zr worker {old} to exit")
    assert new != old
    z.push_ok("zr", {"n": 1}, wait_commit=True)
    j = z.zxctl_json("restart", "zr")
    assert j == {"ok": True} or j.get("ok") is True, j


def test_restart_writer(z):
    old = z.wait_running("writer")
    z.zxctl("restart", "writer", check_rc=0)
    z.wait_running("writer", not_pid=old)
    z.push_ok("za", {"n": 100}, wait_commit=True)


def test_restart_gateway(z):
    old = z.wait_running("gateway")
    z.zxctl("restart", "gateway", check_rc=0)
    z.wait_running("gateway", not_pid=old)
    wait_for(lambda: z.get("/healthz", timeout=5).status == 200, "healthz 200 after gateway restart")
    z.push_ok("za", {"n": 101}, wait_commit=True)


def test_stop_start(z):
    old = z.wait_running("zs")
    z.push_ok("zs", {"n": 1}, wait_commit=True)
    z.zxctl("stop", "zs", check_rc=0)
    wait_for(lambda: z.pipeline("zs")["state"] == "stopped", "zs state 'stopped'")
    assert z.pipeline("zs")["pid"] is None, z.pipeline("zs")
    wait_for(lambda: not pid_alive(old), f"stopped zs worker {old} to exit")
    r = z.push("zs", {"n": 2}, timeout=60)
    assert r.status != 202 and 400 <= r.status < 600, f"push to a stopped pipeline: {r!r}"
    assert isinstance(r.json, dict) and "error" in r.json, r
    # other pipelines are not affected
    z.push_ok("za", {"n": 3}, wait_commit=True)
    j = z.zxctl_json("start", "zs")
    assert j.get("ok") is True, j
    z.wait_running("zs", not_pid=old)
    z.push_ok("zs", {"n": 4}, wait_commit=True)
    assert z.count("zs") == 2


@pytest.mark.parametrize("cmd", ["restart", "stop", "start", "checkpoints"])
def test_unknown_pipeline_exit_1(z, cmd):
    p = z.zxctl(cmd, "no_such_pipeline")
    assert p.returncode == 1, f"{cmd} no_such_pipeline: exit {p.returncode}\n{p.stdout}{p.stderr}"
    assert (p.stdout + p.stderr).strip(), "an error must be explained"
    p = z.zxctl(cmd, "no_such_pipeline", json_out=True)
    assert p.returncode == 1, p
    j = json.loads(p.stdout)
    assert j.get("ok") is False and isinstance(j.get("error"), str) and j["error"], j


def test_stop_writer_refused(z):
    p = z.zxctl("stop", "writer")
    assert p.returncode == 1, f"stop writer: exit {p.returncode} (stop is for pipelines only)"
    z.wait_running("writer")


# ------------------------------------------------------------- checkpoints

def test_checkpoints_of_pushes_without_keys(z):
    """Pushes with nothing for the store but their frame and rows (no
    Idempotency-Key, no new column, no reject) leave those to a later store
    commit, made by itself at most 100 ms later: `zxctl checkpoints`
    catches up with no other push to carry them, and a clean stop right
    after more pushes writes theirs."""
    z.push_ok("zo", [{"n": 0}], wait_commit=True)   # the table and its column
    for i in range(1, 6):
        z.push_ok("zo", [{"n": i}, {"n": -i}], wait_commit=True)
    wait_for(lambda: z.zxctl_json("checkpoints", "zo").get("rows") == 11,
             lambda: f"rows 11 in the store: {z.zxctl_json('checkpoints', 'zo')}", deadline=10)
    j = z.zxctl_json("checkpoints", "zo")
    assert j["seq"] >= 6 and RFC3339.match(j["committed_at"]), j
    for i in range(6, 9):
        z.push_ok("zo", [{"n": i}], wait_commit=True)
    z.stop()
    z.start()
    z.wait_running("zo")
    j = z.zxctl_json("checkpoints", "zo")
    assert j["rows"] == 14 and j["seq"] >= 9, j
    assert z.pipeline("zo")["rows"] == 14


def test_checkpoints(z):
    z.push_ok("zc", [{"n": 1, "s": "a"}, {"n": 2, "s": "b"}], wait_commit=True)
    z.push_ok("zc", {"n": 3, "s": "c"}, wait_commit=True, idem="ck-" + uid())
    j = z.zxctl_json("checkpoints", "zc")
    assert j.get("ok") is True and j.get("pipeline") == "zc" and j.get("table") == "zc", j
    assert isinstance(j.get("seq"), int) and j["seq"] >= 2, j
    assert isinstance(j.get("committed_at"), str) and RFC3339.match(j["committed_at"]), j
    assert j.get("rows") == 3, j
    assert j.get("rejects") == 0 and j.get("rejects_by_column") in ({}, None), j
    assert isinstance(j.get("idempotency_keys"), int) and j["idempotency_keys"] >= 1, j
    schema = {c["name"]: (c["type"] or "").upper() for c in j.get("schema", [])}
    assert schema.get("n") == "INTEGER" and schema.get("s") == "TEXT", schema
    assert schema.get("_ingested_at") in ("TIMESTAMP", None), schema
    p = z.zxctl("checkpoints", "zc", check_rc=0)
    assert "zc" in p.stdout


# ----------------------------------------------------------- usage errors

@pytest.mark.parametrize("args", [
    ["frobnicate"], ["restart"], ["stop"], ["start"], ["checkpoints"], [],
    ["--no-such-option", "status"],
])
def test_usage_errors_exit_2(z, args):
    p = subprocess.run([ZXCTL, "-s", z.sock] + args, capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 2, f"zxctl {' '.join(args)}: exit {p.returncode}, expected 2\n{p.stderr}"
    assert p.stderr.strip(), "a usage error must say what is wrong on stderr"


@pytest.mark.parametrize("cmd", ["status", "reload", "feed"])
def test_unreachable_exit_3(tmpdir_short, cmd):
    sock = os.path.join(tmpdir_short, "nobody.sock")
    p = subprocess.run([ZXCTL, "-s", sock, cmd], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 3, f"zxctl {cmd} with no daemon: exit {p.returncode}\n{p.stderr}"
    assert p.stderr.strip()
    # a stale socket file nobody listens on
    import socket as _s
    s = _s.socket(_s.AF_UNIX, _s.SOCK_STREAM)
    stale = os.path.join(tmpdir_short, "stale.sock")
    s.bind(stale)
    s.close()
    p = subprocess.run([ZXCTL, "-s", stale, "--json", cmd], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 3, f"zxctl {cmd} on a dead socket: exit {p.returncode}\n{p.stderr}"


# -------------------------------------------------------------------- feed

def feed_events(text):
    out = []
    for l in text.splitlines():
        l = l.strip()
        if not l:
            continue
        try:
            j = json.loads(l)
        except ValueError:
            continue
        if isinstance(j, dict) and "event" in j:
            out.append(j)
    return out


class Follower:
    """`zxctl feed --follow` in the background, its lines collected."""

    def __init__(self, z, json_out=True):
        cmd = [ZXCTL, "-s", z.sock] + (["--json"] if json_out else []) + ["feed", "--follow"]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, text=True)
        self.lines = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def events(self):
        return feed_events("\n".join(self.snapshot()))

    def wait_event(self, pred, what):
        def ok():
            if self.p.poll() is not None:
                pytest.fail(f"zxctl feed --follow exited with {self.p.returncode}: "
                            f"{self.p.stderr.read()}")
            return [e for e in self.events() if pred(e)]
        return wait_for(ok, lambda: f"{what} on feed --follow; lines so far:\n"
                        + "\n".join(self.snapshot()[-30:]))

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(timeout=30)


@pytest.fixture
def follower(z):
    made = []

    def make(json_out=True):
        f = Follower(z, json_out)
        made.append(f)
        return f
    yield make
    for f in made:
        f.close()


def test_feed_history(z):
    z.push_ok("za", {"n": 200}, wait_commit=True)
    p = z.zxctl("feed", json_out=True, check_rc=0)
    ev = feed_events(p.stdout)
    assert any(e["event"] == "batch" and e.get("pipeline") == "za" for e in ev), \
        f"no batch event for za in the feed history:\n{p.stdout[-3000:]}"
    for e in ev:
        assert RFC3339.match(e.get("ts", "")), e
        assert isinstance(e.get("message"), str), e
    p = z.zxctl("feed", check_rc=0)
    assert "za" in p.stdout


def test_feed_follow_batch_and_schema(z, follower):
    f = follower()
    # make sure the follower is connected before pushing: wait for history or
    # just for the process to be alive and the socket accepted (history of za
    # exists from earlier tests in most orders; not required)
    z.push_ok("zf", [{"n": 1, "word": "a"}, {"n": 2, "word": "b"}], wait_commit=True)
    got = f.wait_event(lambda e: e["event"] == "batch" and e.get("pipeline") == "zf",
                       "a batch event for zf")
    assert any(e.get("rows") == 2 and e.get("table") == "zf" for e in got), got
    f.wait_event(lambda e: e["event"] == "schema" and e.get("table") == "zf"
                 and e.get("column") == "word", "a schema event for column zf.word")
    # a live one, after the follower certainly runs
    z.push_ok("zf", [{"n": 3, "extra_col": True}] * 3, wait_commit=True)
    f.wait_event(lambda e: e["event"] == "batch" and e.get("pipeline") == "zf" and e.get("rows") == 3,
                 "a batch event of 3 rows for zf")
    f.wait_event(lambda e: e["event"] == "schema" and e.get("column") == "extra_col",
                 "a schema event for the new column extra_col")


def test_feed_follow_human(z, follower):
    f = follower(json_out=False)
    z.push_ok("zh", [{"n": 1}] * 4, wait_commit=True)

    def seen():
        return [l for l in f.snapshot() if "zh" in l]
    wait_for(seen, lambda: "a human feed line naming zh; lines:\n" + "\n".join(f.snapshot()[-30:]))


def test_feed_follow_restart_rejects_reload(z, follower):
    f = follower()
    z.push_ok("zk", {"n": 1}, wait_commit=True)
    z.push_ok("zk", {"n": "not a number"}, wait_commit=True)
    f.wait_event(lambda e: e["event"] == "rejects" and e.get("pipeline") == "zk",
                 "a rejects event for zk")
    old = z.wait_running("zk")
    z.zxctl("restart", "zk", check_rc=0)
    z.wait_running("zk", not_pid=old)
    f.wait_event(lambda e: e["event"] in ("restart", "start") and
                 (e.get("pipeline") == "zk" or "zk" in str(e.get("process", ""))),
                 "a restart/start event for zk")
    j = z.zxctl_json("reload")
    assert j.get("ok") is True
    f.wait_event(lambda e: e["event"] == "reload", "a reload event")
