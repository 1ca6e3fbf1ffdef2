"""
Configuration validation and reload: `zxd --check` reports every error as
file:line:column; SIGHUP / `zxctl reload` apply only the difference
(unchanged workers keep their pid, changed ones restart, added ones start,
removed ones stop and answer 404) and an invalid file changes nothing.
"""

import json
import os
import re
import signal
import subprocess

import pytest

from conftest import ZXD, uid, wait_for, pid_alive

ERR_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<msg>.+)$")

BASE = """\
server:
  data_dir: ./var
  control_socket: zxd.sock
  http:
    listen: "127.0.0.1:18080"
    max_body_size: 1MiB
    backpressure_timeout: 2s
workspace:
  sqlite:
    path: workspace.db
pipelines:
  web_events:
    direction: stream
    source: http
    key: ${env:ZX_WEB_EVENTS_KEY}
    table: web_events
    metadata: [_ingested_at]
    ack: accepted
  orders:
    direction: stream
    source: http
    key: literal-orders-key
    table: orders
    ack: commit
"""


def line_of(text, needle, nth=1):
    """1-based line number of the nth line containing needle."""
    seen = 0
    for i, l in enumerate(text.split("\n"), 1):
        if needle in l:
            seen += 1
            if seen == nth:
                return i
    raise AssertionError(f"{needle!r} not in config text")


def col_of(text, line, needle):
    return text.split("\n")[line - 1].index(needle) + 1


def run_check(root, text):
    path = os.path.join(root, "check.yaml")
    with open(path, "w") as f:
        f.write(text)
    env = dict(os.environ, ZX_WEB_EVENTS_KEY="secret-web")
    p = subprocess.run([ZXD, "-c", path, "--check"], capture_output=True, text=True,
                       timeout=30, env=env, stdin=subprocess.DEVNULL, cwd="/")
    errs = []
    for l in p.stderr.splitlines():
        m = ERR_RE.match(l.strip())
        if m and m.group("file") == path:
            errs.append((int(m.group("line")), int(m.group("col")), m.group("msg")))
    return path, p, errs


def assert_error_at(p, errs, line, cols=None, what=""):
    assert p.returncode != 0, f"--check exited 0 for an invalid file ({what})"
    hits = [e for e in errs if e[0] == line]
    assert hits, (f"{what}: no 'file:{line}:column: message' line on stderr; "
                  f"parsed errors {errs}\nstderr:\n{p.stderr}")
    if cols is not None:
        assert any(h[1] in cols for h in hits), \
            f"{what}: error on line {line} has column {[h[1] for h in hits]}, expected one of {cols}"


# --------------------------------------------------------------------- --check

def test_check_valid_exits_0(tmpdir_short):
    path, p, errs = run_check(tmpdir_short, BASE)
    assert p.returncode == 0, f"valid config rejected:\n{p.stderr}"
    assert errs == [], errs
    assert not os.path.exists(os.path.join(tmpdir_short, "var", "zxd.sock")), \
        "--check must not start the daemon"


def test_check_unknown_key(tmpdir_short):
    text = BASE.replace("    source: http\n    key: ${env", "    source: http\n    colour: blue\n    key: ${env")
    line = line_of(text, "colour: blue")
    path, p, errs = run_check(tmpdir_short, text)
    assert_error_at(p, errs, line, cols={5}, what="unknown key")
    msg = [e[2] for e in errs if e[0] == line][0]
    assert "colour" in msg, f"message should name the unknown key: {msg!r}"


def test_check_unknown_key_in_server(tmpdir_short):
    text = BASE.replace("  control_socket: zxd.sock\n", "  control_socket: zxd.sock\n  dta_dir: x\n")
    line = line_of(text, "dta_dir")
    _, p, errs = run_check(tmpdir_short, text)
    assert_error_at(p, errs, line, cols={3}, what="unknown server key")


def test_check_wrong_type(tmpdir_short):
    text = BASE.replace("    table: orders", "    table: [a, b]")
    line = line_of(text, "table: [a, b]")
    _, p, errs = run_check(tmpdir_short, text)
    assert_error_at(p, errs, line, cols={5, col_of(text, line, "[")}, what="wrong type")


def test_check_wrong_type_size(tmpdir_short):
    text = BASE.replace("max_body_size: 1MiB", "max_body_size: {a: 1}")
    line = line_of(text, "max_body_size")
    _, p, errs = run_check(tmpdir_short, text)
    assert_error_at(p, errs, line, what="mapping where a size is expected")


def test_check_missing_field(tmpdir_short):
    text = BASE.replace("    key: literal-orders-key\n", "")
    name_line = line_of(text, "  orders:")
    _, p, errs = run_check(tmpdir_short, text)
    assert p.returncode != 0, "a pipeline without a key was accepted"
    hits = [e for e in errs if e[0] in (name_line, name_line + 1)]
    assert hits, (f"missing field: no error at the pipeline (line {name_line} or {name_line + 1}); "
                  f"got {errs}\n{p.stderr}")
    assert any("key" in h[2] for h in hits), f"message should name the missing field 'key': {hits}"


def test_check_duplicate_pipeline(tmpdir_short):
    text = BASE + """\
  web_events:
    direction: stream
    source: http
    key: other
    table: web_events_2
"""
    line = line_of(text, "  web_events:", nth=2)
    _, p, errs = run_check(tmpdir_short, text)
    assert_error_at(p, errs, line, cols={3}, what="duplicate pipeline name")
    msg = [e[2] for e in errs if e[0] == line][0]
    assert "web_events" in msg, msg


def test_check_reports_every_error(tmpdir_short):
    text = BASE.replace("    source: http\n    key: ${env", "    source: http\n    colour: blue\n    key: ${env")
    text = text.replace("    table: orders", "    table: [a, b]")
    text += "  orders:\n    direction: stream\n    source: http\n    key: k\n"
    text += "  nokey:\n    direction: stream\n    source: http\n"
    lines = {
        "unknown key": [line_of(text, "colour: blue")],
        "wrong type": [line_of(text, "table: [a, b]")],
        "duplicate": [line_of(text, "  orders:", nth=2)],
        "missing": [line_of(text, "  nokey:"), line_of(text, "  nokey:") + 1],
    }
    _, p, errs = run_check(tmpdir_short, text)
    assert p.returncode != 0
    found = {e[0] for e in errs}
    for what, ls in lines.items():
        assert found & set(ls), f"{what} (line {ls}) not reported; got {errs}\n{p.stderr}"


def test_check_yaml_syntax_error(tmpdir_short):
    text = BASE.replace("    ack: commit", "    ack: [commit")
    _, p, errs = run_check(tmpdir_short, text)
    assert p.returncode != 0
    assert errs, f"a YAML syntax error must be reported as file:line:column: message\n{p.stderr}"


def test_check_bad_values(tmpdir_short):
    text = BASE.replace("    ack: commit", "    ack: sometimes")
    line = line_of(text, "ack: sometimes")
    _, p, errs = run_check(tmpdir_short, text)
    assert_error_at(p, errs, line, what="ack: sometimes")


def test_check_relative_paths_from_config_folder(make_zxd):
    """data_dir ./var is resolved against the config's folder (zxd runs with
    cwd /), the socket and the workspace (SQLite's workspace.db) inside it."""
    z = make_zxd({"p": {}})
    assert os.path.isdir(z.data_dir)
    assert os.path.exists(z.sock)
    z.push_ok("p", {"x": 1}, wait_commit=True)
    if z.workspace == "sqlite":
        assert os.path.exists(z.db_path)
    else:   # the rows are in the database; no SQLite file anywhere
        assert z.count("p") == 1
        assert not os.path.exists(z.db_path) and not os.path.exists("/workspace.db")
    assert not os.path.exists("/var/zxd.sock")


# ---------------------------------------------------------------------- reload

def pids_of(z, names):
    return {n: z.wait_running(n) for n in names}


def test_reload_diff(make_zxd):
    z = make_zxd({"a": {}, "b": {}, "c": {}}, start=False)
    z.prepare_keys("d")
    z.start()
    before = pids_of(z, ["a", "b", "c"])
    for n in ("a", "b", "c"):
        z.push_ok(n, {"tag": "before", "n": 1}, wait_commit=True)

    z.set_pipelines({"a": {}, "b": {"ack": "commit"}, "d": {}})
    j = z.zxctl_json("reload")
    assert j.get("ok") is True, j
    assert sorted(j.get("added", [])) == ["d"], j
    assert sorted(j.get("changed", [])) == ["b"], j
    assert sorted(j.get("removed", [])) == ["c"], j
    assert sorted(j.get("unchanged", [])) == ["a"], j

    # unchanged: same pid, still pushing
    assert z.pipeline("a")["pid"] == before["a"], "unchanged pipeline a was restarted"
    assert pid_alive(before["a"])
    z.push_ok("a", {"tag": "after", "n": 2}, wait_commit=True)
    # changed: restarted with a new pid, and the new setting is in force
    nb = z.wait_running("b", not_pid=before["b"])
    assert nb != before["b"]
    wait_for(lambda: not pid_alive(before["b"]), f"old worker of b (pid {before['b']}) to exit")
    z.push_ok("b", {"tag": "after", "n": 2})          # ack: commit now: visible at once
    assert z.count("b", "tag = 'after'") == 1
    assert z.count("b", "tag = 'before'") == 1
    # removed: worker exits, pushes answer 404
    wait_for(lambda: not pid_alive(before["c"]), f"worker of removed pipeline c (pid {before['c']}) to exit")
    pc = z.pipeline("c")
    assert pc is None or pc.get("state") == "stopped", f"removed pipeline still in status: {pc}"
    r = z.push("c", {"tag": "after"}, key=z.keys["c"])
    assert r.status == 404, f"push to a removed pipeline: {r!r}"
    assert z.count("c", "tag = 'before'") == 1, "a removed pipeline's table keeps its rows"
    # added: started, takes pushes
    nd = z.wait_running("d")
    z.push_ok("d", {"tag": "new", "n": 3}, wait_commit=True)
    assert z.count("d", "tag = 'new'") == 1
    assert z.pipeline("a")["pid"] == before["a"]
    assert nd not in before.values()


def test_reload_no_change_keeps_every_pid(make_zxd):
    z = make_zxd({"a": {}, "b": {"ack": "commit"}})
    z.wait_running("writer")
    z.wait_running("gateway")
    for n in ("a", "b"):
        z.wait_running(n)
    before = z.pids()
    j = z.zxctl_json("reload")
    assert j.get("ok") is True and sorted(j.get("unchanged", [])) == ["a", "b"], j
    assert j.get("added") == [] and j.get("changed") == [] and j.get("removed") == [], j
    after = z.pids()
    for n in ("supervisor", "writer", "gateway", "a", "b"):
        assert after[n] == before[n], f"{n}: pid {before[n]} -> {after[n]} on a no-op reload"


def test_reload_key_change(make_zxd):
    z = make_zxd({"a": {"key_ref": "literal", "key": "old-key-" + uid()}})
    old_pid = z.wait_running("a")
    old_key = z.keys["a"]
    z.push_ok("a", {"n": 1}, wait_commit=True)
    new_key = "new-key-" + uid()
    z.keys["a"] = new_key
    z.set_pipelines({"a": {"key_ref": "literal", "key": new_key}})
    j = z.zxctl_json("reload")
    assert j.get("changed") == ["a"], j
    z.wait_running("a", not_pid=old_pid)
    assert z.push("a", {"n": 2}, key=old_key).status == 401
    z.push_ok("a", {"n": 3}, key=new_key, wait_commit=True)


def test_reload_invalid_keeps_running(make_zxd):
    z = make_zxd({"a": {}}, start=False)
    z.prepare_keys("e")
    z.start()
    pa = z.wait_running("a")
    before = z.pids()
    good = z.config_text()
    bad = good.replace("    source: http\n", "    source: http\n    bogus_option: 1\n", 1)
    line = line_of(bad, "bogus_option")
    z.write_config(bad)

    p = z.zxctl("reload")
    assert p.returncode == 1, f"zxctl reload of an invalid file: exit {p.returncode}\n{p.stdout}{p.stderr}"
    out = p.stdout + p.stderr
    assert f"{z.cfg_path}:{line}:" in out, f"reload should print {z.cfg_path}:{line}:col: ...; got:\n{out}"

    p = z.zxctl("reload", json_out=True)
    assert p.returncode == 1, p
    j = json.loads(p.stdout)
    assert j.get("ok") is False and any(f":{line}:" in e for e in j.get("errors", [])), j

    after = z.pids()
    assert after == before, f"an invalid reload changed processes: {before} -> {after}"
    z.push_ok("a", {"n": 1}, wait_commit=True)

    # SIGHUP with the invalid file: nothing changes, pushes still work
    z.signal(signal.SIGHUP)
    z.push_ok("a", {"n": 2}, wait_commit=True)
    st = z.status()
    assert z.pipeline("a", st)["pid"] == pa and z.proc.poll() is None

    # SIGHUP with a valid file that adds e: e starts, a untouched
    z.set_pipelines({"a": {}, "e": {}})
    z.signal(signal.SIGHUP)
    z.wait_running("e")
    z.push_ok("e", {"n": 1}, wait_commit=True)
    assert z.pipeline("a")["pid"] == pa


def test_reload_human_output(make_zxd):
    z = make_zxd({"a": {}}, start=False)
    z.prepare_keys("added_one")
    z.start()
    z.set_pipelines({"a": {}, "added_one": {}})
    p = z.zxctl("reload", check_rc=0)
    assert "added_one" in p.stdout + p.stderr, f"reload output should name the added pipeline:\n{p.stdout}"
    z.wait_running("added_one")


def test_reload_removed_then_readded(make_zxd):
    z = make_zxd({"a": {}, "b": {}})
    pb = z.wait_running("b")
    z.set_pipelines({"a": {}})
    z.zxctl_json("reload")
    wait_for(lambda: not pid_alive(pb), "removed pipeline b to exit")
    z.set_pipelines({"a": {}, "b": {}})
    j = z.zxctl_json("reload")
    assert j.get("added") == ["b"], j
    z.wait_running("b", not_pid=pb)
    z.push_ok("b", {"n": 1}, wait_commit=True)


def test_reload_changed_pipeline_loses_nothing(make_zxd):
    """A changed pipeline is drained and restarted: rows acknowledged by the
    old worker while the reload happens are all committed."""
    import threading
    z = make_zxd({"rl": {"ack": "accepted"}})
    old = z.wait_running("rl")
    accepted, stop = [], threading.Event()

    def pusher():
        while not stop.is_set():
            ids = [uid() for _ in range(50)]
            try:
                r = z.push("rl", [{"id": i} for i in ids], timeout=10)
            except OSError:
                continue
            if r.status == 202:
                accepted.extend(ids)
    t = threading.Thread(target=pusher, daemon=True)
    t.start()
    wait_for(lambda: len(accepted) >= 500, "500 accepted rows before the reload")
    z.set_pipelines({"rl": {"ack": "accepted", "extra": {"max_body_size": "512KiB"}}})
    j = z.zxctl_json("reload")
    assert j.get("changed") == ["rl"], j
    new = z.wait_running("rl", not_pid=old)
    n = len(accepted)
    wait_for(lambda: len(accepted) >= n + 500, "500 more accepted rows after the reload")
    stop.set()
    t.join(30)
    z.push_ok("rl", {"id": "final"}, wait_commit=True)
    acked, missing = set(accepted), {}

    def all_there():
        missing["m"] = acked - {i for (i,) in z.query("SELECT id FROM rl")}
        return not missing["m"]
    wait_for(all_there, lambda: f"every acknowledged row committed across the reload "
             f"({len(missing.get('m', ()))} of {len(acked)} missing)")
    assert z.pipeline("rl")["pid"] == new


def test_reload_larger_body_limit_gets_new_rings(make_zxd):
    """Raising a stream's max_body_size past what its rings were sized for
    makes new rings: the old worker drains into the old ones (nothing
    accepted is lost), then bodies up to the new limit are taken."""
    z = make_zxd({"big": {"extra": {"max_body_size": "64KiB"}}})
    old = z.wait_running("big")
    z.push_ok("big", [{"n": i} for i in range(100)])           # ack: accepted
    pad = "x" * 1000
    rows = [{"n": 1000 + i, "pad": pad} for i in range(6000)]   # ~6 MB
    assert z.push("big", rows).status == 413
    z.set_pipelines({"big": {"extra": {"max_body_size": "16MiB"}}})
    j = z.zxctl_json("reload")
    assert j.get("changed") == ["big"], j
    z.wait_running("big", not_pid=old)
    z.push_ok("big", rows, wait_commit=True, timeout=60)
    assert z.count("big") == 6100
    assert z.count("big", "n < 100") == 100


def test_check_table_reserved_by_sqlite(tmpdir_short):
    text = BASE.replace("    table: web_events", "    table: sqlite_events")
    line = line_of(text, "table: sqlite_events")
    _, p, errs = run_check(tmpdir_short, text)
    assert_error_at(p, errs, line, what="reserved by SQLite")
