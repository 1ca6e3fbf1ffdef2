"""
A pipeline whose frames the writer holds back is "blocked", never
"running" (issue 18, point 16), on each workspace backend (ZX_WORKSPACES).

What it covers: a table that refuses every insert (a view of that name,
made by someone else) holds back its pipeline: `zxctl status --json` says
state "blocked" with blocked_reason, the human status "blocked: <reason>",
the other pipeline stays "running"; once the cause is gone the rows are
written and the state is "running" again.
"""

import os

from conftest import wait_for


def sql(z, script):
    """Run SQL statements on z's workspace as someone else than zx would."""
    if z.workspace == "postgres":
        z.pg.execute(z.pg_db, script)
        return
    import sqlite3
    os.makedirs(z.data_dir, exist_ok=True)
    db = sqlite3.connect(z.db_path)
    try:
        db.executescript(script)
        db.commit()
    finally:
        db.close()


def test_held_back_pipeline_is_blocked_not_running(make_zxd):
    z = make_zxd({"stuck": {}, "free": {}}, start=False)
    sql(z, "CREATE TABLE base(a INTEGER); CREATE VIEW stuck AS SELECT DISTINCT a FROM base;")
    z.start()
    assert z.push("stuck", [{"n": 1}, {"n": 2}]).status == 202
    z.push_ok("free", [{"n": 1}], wait_commit=True)

    def blocked():
        p = z.pipeline("stuck")
        return p if p["state"] == "blocked" else None
    p = wait_for(blocked, lambda: f"stuck to be blocked: {z.pipeline('stuck')}", deadline=90)
    assert p["blocked_reason"] and "view" in p["blocked_reason"], p
    assert p["pid"], p
    free = z.pipeline("free")
    assert free["state"] == "running" and free["blocked_reason"] is None, free
    text = z.zxctl("status", check_rc=0).stdout
    assert "blocked: " + p["blocked_reason"] in text, text
    line = [ln for ln in text.splitlines() if ln.startswith("stuck ")][0]
    assert " blocked " in line and " running " not in line, line

    sql(z, "DROP VIEW stuck;")
    wait_for(lambda: z.pipeline("stuck")["rows"] == 2, "held-back rows written after the fix",
             deadline=90)
    p = z.pipeline("stuck")
    assert p["state"] == "running" and p["blocked_reason"] is None, p
    assert z.query("SELECT n FROM stuck ORDER BY n") == [(1,), (2,)]
