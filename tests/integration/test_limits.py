"""
Limits are one number, enforced where they are configured: the number of
pipelines (`zxd --check` refuses more, and below it start-up is reliable:
messages to the writer and the gateway wait, they are never dropped), and
the shared memory of the rings (server.ring_budget), shown by zxctl status.
"""

import json
import os
import signal
import subprocess

from conftest import ZXD, Zxd, wait_for

MAX_PIPELINES = 1024     # conf/config.h ZX_MAX_PIPELINES
MiB = 1024 * 1024


def _check(z):
    return subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                          env=z.env, timeout=120)


def test_check_refuses_more_pipelines_than_the_limit(tmpdir_short):
    n = MAX_PIPELINES + 1
    z = Zxd(tmpdir_short, {f"p{i}": {} for i in range(n)},
            server_extra="ring_budget: 1024GiB")
    r = _check(z)
    assert r.returncode == 1, r
    assert f"one zxd runs at most {MAX_PIPELINES} pipelines; this file has {n}" in r.stderr, r.stderr
    # the message names the first pipeline over the limit, with its place
    assert f"pipeline p{MAX_PIPELINES}:" in r.stderr, r.stderr
    assert r.stderr.startswith(z.cfg_path + ":"), r.stderr


def test_check_refuses_rings_over_the_budget(tmpdir_short):
    z = Zxd(tmpdir_short, {f"p{i}": {} for i in range(5)},
            server_extra="ring_size: 64MiB\nring_budget: 256MiB")
    r = _check(z)
    assert r.returncode == 1, r
    assert "the rings of 5 pipelines need" in r.stderr, r.stderr
    assert "server.ring_budget is 256 MiB" in r.stderr, r.stderr


def test_default_ring_size_shrinks_to_the_budget(make_zxd):
    z = make_zxd({f"p{i}": {} for i in range(10)}, server_extra="ring_budget: 256MiB")
    st = z.status()
    rings = st["rings"]
    assert rings["budget_bytes"] == 256 * MiB, rings
    assert 0 < rings["shared_bytes"] <= 256 * MiB, rings
    for p in st["pipelines"]:
        r = p["rings"]
        assert set(r) >= {"in", "out", "frames", "shared_bytes"}, r
        assert r["frames"]["capacity"] < 64 * MiB, r
        # at least twice the body limit (1 MiB in these tests) plus 1 MiB
        assert r["frames"]["capacity"] >= 3 * MiB, r
        for k in ("in", "out", "frames"):
            assert set(r[k]) == {"published", "acked", "used_bytes", "capacity"}, r
    # the rings work at that size
    z.push_ok("p9", [{"n": i} for i in range(100)], wait_commit=True)
    p9 = z.pipeline("p9")
    assert p9["rings"]["frames"]["published"] == 1
    assert p9["rings"]["frames"]["acked"] == 1
    assert p9["rings"]["in"]["published"] == 1
    assert p9["rings"]["out"]["published"] == 1


def test_start_with_many_pipelines_is_reliable(make_zxd):
    # Start-up sends one ATTACH message (with two fds) per pipeline to the
    # writer and to the gateway: far more than a socket holds.  Every
    # stream must be served at once (none 404, none missing from healthz).
    n = int(os.environ.get("ZX_TEST_MANY_PIPELINES", "300"))
    z = make_zxd({f"s{i}": {} for i in range(n)}, server_extra="ring_budget: 1024GiB",
                 start=False)
    z.start(wait=False)
    z.wait_healthy(deadline=180)
    h = z.get("/healthz")
    assert h.status == 200, h
    assert len(h.json["streams"]) == n, f"healthz lists {len(h.json['streams'])} of {n} streams"
    for i in (0, n // 2, n - 1):
        z.push_ok(f"s{i}", {"i": i}, wait_commit=True)
    st = z.status()
    assert len(st["pipelines"]) == n
    assert all(p["state"] == "running" for p in st["pipelines"]), \
        [p for p in st["pipelines"] if p["state"] != "running"][:3]


def _start_with_fd_limit(z, nofile):
    """Start z's zxd with a hard limit of `nofile` descriptors."""
    z._log = open(z.log_path, "ab")
    z.proc = subprocess.Popen(["prlimit", f"--nofile={nofile}:{nofile}", ZXD, "-c", z.cfg_path],
                              cwd="/", stdin=subprocess.DEVNULL, stdout=z._log,
                              stderr=subprocess.STDOUT, env=z.env, start_new_session=True)
    z._all_pids.add(z.proc.pid)
    z.wait_healthy()


def test_reload_that_cannot_start_a_pipeline_says_so(make_zxd):
    # With few descriptors left, a reload that adds many pipelines cannot
    # make them all: the rest of the new configuration runs, and both
    # zxctl reload (exit 1, naming them) and SIGHUP (a log line) say so.
    names = [f"n{i}" for i in range(60)]
    z = make_zxd({"a": {}}, start=False)
    z.prepare_keys(*names)
    _start_with_fd_limit(z, 64)
    z.set_pipelines({"a": {}, **{n: {} for n in names}})
    p = z.zxctl("reload", check_rc=1)
    assert "reload failed: the new configuration is running, but" in p.stderr, p.stderr
    assert "could not be started" in p.stderr, p.stderr
    assert "pipeline n59: too few file descriptors left (limit 64" in p.stderr, p.stderr
    j = json.loads(z.zxctl("reload", json_out=True, check_rc=1).stdout)
    assert j["ok"] is False and j.get("failed"), j
    assert "n59" in [f["name"] for f in j["failed"]], j
    # what could start runs; a keeps working
    z.push_ok("a", {"n": 1}, wait_commit=True)
    # SIGHUP logs the partial failure
    z.signal(signal.SIGHUP)
    wait_for(lambda: "event=reload result=partial" in open(z.log_path).read(),
             "a log line for the partial reload after SIGHUP\n" + z.log_tail())


def test_control_socket_connections_are_capped_and_timed_out(make_zxd):
    import socket as _socket
    import time as _time
    z = make_zxd({"a": {}})
    idle = []
    try:
        for _ in range(64):
            c = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            c.connect(z.sock)
            idle.append(c)
        # the 65th is told why, at once
        wait_for(lambda: "too many control connections (64 open)" in
                 z.zxctl("status").stderr, "zxctl refused while 64 connections sit idle")
        t0 = _time.monotonic()
        # a connection that sends no request is closed (10 s), so the
        # control socket comes back by itself
        idle[0].settimeout(60)
        assert idle[0].recv(100) == b"", "an idle control connection was not closed"
        assert _time.monotonic() - t0 < 60
        z.status()
    finally:
        for c in idle:
            c.close()


def test_ring_is_bounded_by_time_while_the_writer_runs(make_zxd):
    # The writer is stopped (it still counts as running): once a frame has
    # waited max_queue_delay, a new push waits for room like with a full
    # ring, and gets 503 after backpressure_timeout, nothing written.  Its
    # ring had plenty of bytes left.
    z = make_zxd({"s": {}}, server_extra="max_queue_delay: 100ms",
                 backpressure_timeout="1s")
    writer = z.wait_running("writer")
    os.kill(writer, signal.SIGSTOP)
    try:
        z.push_ok("s", {"n": 1})
        import time as _time
        _time.sleep(0.3)
        r = z.push("s", {"n": 2})
        assert r.status == 503, r
        assert "busy" in r.json["error"], r
        assert r.headers.get("retry-after"), r
        fr = z.pipeline("s")["rings"]["frames"]
        assert fr["used_bytes"] < fr["capacity"] // 100, fr
    finally:
        os.kill(writer, signal.SIGCONT)
    z.push_ok("s", {"n": 3}, wait_commit=True)
    wait_for(lambda: z.count("s") == 2, "rows 1 and 3 only")
    assert sorted(r[0] for r in z.query('SELECT n FROM "s"')) == [1, 3]
