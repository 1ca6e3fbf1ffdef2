"""Reverse syncs with `on: change` (supervisor/syncs_change.c,
workers/syncs/sync_watch.h): a sync runs when a commit of the writer changed
a table it reads (one of its author's tables that its query names);
changes are coalesced (one run in flight and one queued at most, at most one
start per min_interval); it runs once at start; a run's record shows
change_latency_ms.  Rows reach the workspace through the HTTP push pipeline
`web` (table web), as a stream's would."""
import os
import subprocess
import time

import pytest

from conftest import ZXD, wait_for
from sync_fixtures import make_sync_env, sqlite_rows


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def make(sync_env, min_interval="1s", query="SELECT id, v FROM web"):
    z = sync_env.zxd({}, {"alice": ["web", "other"]}, start=False)
    dest = os.path.join(z.root, "dest.db")
    z.syncs = {
        "on_web": {"author": "alice", "query": query,
                   "dest": {"connection": "crm", "table": "web_copy"}, "mode": "mirror",
                   "key": ["id"], "extra": {"on": "change", "min_interval": min_interval}},
        # names another table only: web's commits never start it
        "on_other": {"author": "alice", "query": "SELECT 1 AS id FROM other",
                     "dest": {"connection": "crm", "table": "other_copy"},
                     "mode": "mirror", "key": ["id"],
                     "extra": {"on": "change", "min_interval": "1s"}},
    }
    z.connections = {"crm": {"kind": "sqlite", "path": dest}}
    z.write_config()
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE other (id {t['int']})")
    z.start()
    # the push pipeline makes table web with its first rows
    z.push_ok("web", [{"id": 0, "v": "seed"}])
    return z, dest


def copy_rows(dest):
    try:
        return sqlite_rows(dest, "SELECT id, v FROM web_copy ORDER BY id")
    except Exception:
        return None


def change_runs(z, name):
    return [r for r in z.runs(name, limit=200) if r["trigger"] == "change"]


def test_a_commit_to_a_watched_table_runs_the_sync(sync_env):
    z, dest = make(sync_env)
    wait_for(lambda: copy_rows(dest) == [(0, "seed")], "the seed row in the copy")
    z.push_ok("web", [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])
    wait_for(lambda: copy_rows(dest) == [(0, "seed"), (1, "a"), (2, "b")],
             "rows pushed after start reach the destination without a manual run")
    runs = change_runs(z, "on_web")
    done = [r for r in runs if r["state"] == "succeeded"]
    assert done, runs
    assert all(isinstance(r.get("change_latency_ms"), int) and r["change_latency_ms"] >= 0
               for r in done), done
    # the other sync ran once, at start, and never for web's commits
    other = change_runs(z, "on_other")
    assert len(other) == 1, other


def test_changes_are_coalesced(sync_env):
    z, dest = make(sync_env, min_interval="2s")
    wait_for(lambda: copy_rows(dest) == [(0, "seed")], "the seed row in the copy")
    wait_for(lambda: all(r["state"] == "succeeded" for r in change_runs(z, "on_web")),
             "the first runs to end")
    before = len(change_runs(z, "on_web"))
    t0 = time.monotonic()
    for i in range(1, 41):
        z.push_ok("web", [{"id": i, "v": f"r{i}"}])
    elapsed = time.monotonic() - t0
    want = [(0, "seed")] + [(i, f"r{i}") for i in range(1, 41)]
    wait_for(lambda: copy_rows(dest) == want, "all 40 pushes in the copy")
    wait_for(lambda: all(r["state"] in ("succeeded", "failed")
                         for r in change_runs(z, "on_web")), "runs to end")
    runs = change_runs(z, "on_web")[: len(change_runs(z, "on_web")) - before]
    # 40 commits, a run started at most every 2 s: at most one per 2 s of
    # pushing, plus the one queued behind the last (bounds, not timings)
    assert 1 <= len(runs) <= int(elapsed / 2) + 3, (len(runs), elapsed)
    assert all(r["state"] == "succeeded" for r in runs), runs
    # deletes follow too: mirror
    z.ws_exec("DELETE FROM web WHERE id > 20")      # not through the writer: no run ...
    z.push_ok("web", [{"id": 100, "v": "x"}])        # ... until a commit comes
    wait_for(lambda: copy_rows(dest) == want[:21] + [(100, "x")],
             "the deletes and the new row in the copy")


def test_the_option_is_checked(sync_env):
    z = sync_env.zxd({}, {"alice": ["web"]}, start=False)
    z.syncs = {"s": {"author": "alice", "query": "SELECT 1 AS id",
                     "dest": {"connection": "crm", "table": "t"}, "mode": "upsert",
                     "key": ["id"], "extra": {"on": "changes"}}}
    z.connections = {"crm": {"kind": "sqlite", "path": os.path.join(z.root, "d.db")}}
    z.write_config()
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 1 and "on" in p.stderr and "change" in p.stderr, p.stderr
