"""
End-to-end tests of the writer's limits (issue 5): a durable push does not
wait out an idle group-commit window, nothing a client sends is lost to the
column limit (pipelines.<name>.max_columns and the `_extra` column), one
workspace has one writer (a second zxd on the same SQLite file, or the same
Postgres database and schema, is refused, naming the holder), and the
SQLite workspace files get the store's mode.

What it must never do: assert a duration (waits are polling loops with
generous deadlines), or touch a process it did not start.
"""

import json
import os
import stat
import subprocess

import pytest

from conftest import ZXD, wait_for


def feed_events(z):
    """Every event of `zxctl feed` (the recent history) as dicts."""
    out = []
    for line in z.zxctl("feed", json_out=True, check_rc=0).stdout.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if isinstance(j, dict) and "event" in j:
            out.append(j)
    return out


def with_workspace_lines(z, *lines):
    """z's config with `lines` added to its `workspace:` section."""
    text = z.config_text()
    extra = "".join(f"  {l}\n" for l in lines)
    return text.replace("workspace:\n", "workspace:\n" + extra, 1)


# ------------------------------------------------------- adaptive group commit

def test_wait_commit_does_not_wait_out_the_window(make_zxd):
    """With the longest commit_interval (10 s) and a commit_timeout of 5 s,
    back-to-back ?wait=commit pushes are each committed at once (nothing
    else is waiting in the rings): before, every push after the first waited
    for the rest of the 10 s window and got 503."""
    z = make_zxd({"gc": {}}, start=False, http_extra="commit_timeout: 5s")
    z.write_config(with_workspace_lines(z, "commit_interval: 10s"))
    z.start()
    for i in range(4):
        r = z.push("gc", {"i": i}, wait_commit=True)
        assert r.status == 202 and r.json.get("committed") is True, \
            f"push {i}: {r!r}\n" + z.log_tail(20)
    assert z.count("gc") == 4


# ----------------------------------------------------------------- column cap

def test_column_cap_keeps_the_rest_in_extra(make_zxd):
    z = make_zxd({"wide": {"extra": {"max_columns": 3}, "metadata": ["_ingested_at"]}})
    z.push_ok("wide", [{"a": 1, "b": "x", "c": 2.5, "d": {"n": [1]}, "e": "over",
                        "_extra": "mine"}], wait_commit=True)
    cols = z.column_kinds("wide")
    assert list(cols) == ["a", "b", "c", "_ingested_at", "_extra"], cols
    assert cols["_extra"] == "json", z.columns("wide")
    (extra,) = z.query("SELECT _extra FROM wide")[0]
    # a client's own "_extra" field is normalised to data_extra, like every
    # reserved name, and kept too
    assert json.loads(extra) == {"d": {"n": [1]}, "e": "over", "data_extra": "mine"}, extra
    # later pushes: new fields go on into _extra, known ones keep columns
    z.push_ok("wide", [{"a": 2, "f": True}, {"b": "y"}], wait_commit=True)
    rows = z.query(f"SELECT a, b, _extra FROM wide ORDER BY {z.row_order}")
    assert rows[1] == (2, None, '{"f":true}') and rows[2] == (None, "y", None), rows
    assert list(z.columns("wide")) == ["a", "b", "c", "_ingested_at", "_extra"]
    # the feed says so once (per table and cap), with the cap and the column;
    # said after the commit that made the rows visible, so wait for it
    capped = wait_for(lambda: [e for e in feed_events(z) if e.get("event") == "columns_capped"],
                      "the columns_capped event")
    assert len(capped) == 1, capped
    assert capped[0]["pipeline"] == "wide" and capped[0]["table"] == "wide"
    assert capped[0]["max_columns"] == 3 and capped[0]["column"] == "_extra"
    assert "_extra" in capped[0]["message"] and "max_columns" in capped[0]["message"]
    # ...and still once after a restart of the writer (recorded in LMDB)
    wpid = z.pids()["writer"]
    os.kill(wpid, 9)
    z.wait_running("writer", not_pid=wpid)
    z.push_ok("wide", [{"g": 1}], wait_commit=True)
    capped = [e for e in feed_events(z) if e.get("event") == "columns_capped"]
    assert len(capped) == 1, capped


def test_default_cap_loses_nothing(make_zxd):
    """2,100 new fields in three pushes: before, the table grew to SQLite's
    2,000 columns and the rest became NULL forever; now it stops at the
    default cap (500) and every other field is in _extra."""
    z = make_zxd({"many": {}})
    for k in range(3):
        z.push_ok("many", [{f"f{i:04d}": i for i in range(k * 700, (k + 1) * 700)}],
                  wait_commit=True)
    cols = z.columns("many")
    assert len(cols) == 501 and "_extra" in cols, len(cols)
    kept = {}
    for (extra,) in z.query(f"SELECT _extra FROM many ORDER BY {z.row_order}"):
        kept.update(json.loads(extra))
    assert len(kept) == 1600 and kept["f2099"] == 2099, len(kept)
    assert z.query("SELECT f0499 FROM many")[0][0] == 499
    assert z.pipeline("many")["rejects"] == 0, z.pipeline("many")


def test_max_columns_is_range_checked(make_zxd):
    z = make_zxd({"bad": {"extra": {"max_columns": 1501}}}, start=False)
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0 and "max_columns must be between 1 and 1500" in p.stderr, p.stderr


# --------------------------------------------------- one workspace, one writer

def test_second_zxd_on_the_same_workspace_is_refused(make_zxd):
    a = make_zxd({"ev": {}})
    a.push_ok("ev", {"n": 1}, wait_commit=True)
    a_writer = a.pids()["writer"]
    b = make_zxd({"ev": {}}, start=False)
    b.use_workspace_of(a)
    b.start(wait=False)

    def refused():
        log = b.log_text()
        return "is in use by another zxd" in log and log
    log = wait_for(refused, lambda: "the second zxd's writer refusing the workspace\n"
                   + b.log_tail(30))
    # the message names the holder: its pids and data directory
    assert f"pid {a_writer} on host " in log, log
    assert f"zxd pid {a.pid}" in log and f"data_dir {a.data_dir}" in log, log
    if a.workspace == "sqlite":
        assert f"{a.db_path}-zxlock" in log, log
    else:
        # the workspace (its dsn without the password), and the holder's
        # Postgres session: the first writer's, the only zxd session there
        sessions = a.query("SELECT pid, application_name FROM pg_stat_activity WHERE "
                           "datname = current_database() AND application_name LIKE 'zxd #%'")
        assert len(sessions) == 1, sessions
        (spid, app), = sessions
        assert (f"workspace Postgres {a.pg_dsn_shown} schema {a.pg_schema} is in use by "
                f"another zxd: ") in log, log
        # what to do about it: shared mode, or another schema or database
        assert "unless every zxd that writes it sets workspace.postgres.shared: true" in log, log
        assert (f"(Postgres session pid {spid}, application {app}, from ") in log, log
    b.assert_no_secret(status=False)
    # the first keeps working, with the same writer
    a.push_ok("ev", {"n": 2}, wait_commit=True)
    assert a.count("ev") == 2
    assert a.pids()["writer"] == a_writer


def test_second_zxd_on_the_same_workspace_exits(make_zxd):
    """The writer exits with the "fatal, do not respawn" status; zxd then
    refuses to start instead of restarting the writer forever."""
    a = make_zxd({"ev": {}})
    b = make_zxd({"ev": {}}, start=False)
    b.use_workspace_of(a)
    b.start(wait=False)
    rc = b.wait_exit(30)
    assert rc != 0, b.log_tail(30)
    a.push_ok("ev", {"n": 1}, wait_commit=True)
    assert a.count("ev") == 1


# ----------------------------------------------------------------- file modes

@pytest.mark.sqlite_only
def test_workspace_files_have_the_store_mode(make_zxd):
    z = make_zxd({"m": {}})
    z.push_ok("m", {"x": 1}, wait_commit=True)

    def mode(p):
        return stat.S_IMODE(os.stat(p).st_mode)
    store = mode(os.path.join(z.data_dir, "store.lmdb"))
    got = {p: oct(mode(z.db_path + p)) for p in ("", "-wal", "-shm", "-zxlock")}
    assert set(got.values()) == {oct(store)}, (oct(store), got)
    assert store & 0o007 == 0, oct(store)
