"""
A reverse sync's `cursor:` end to end (workers/syncs/cursor.h): an upsert
sync whose runs read only the rows at or past the last successful run's
mark.  A real zxd on its workspace (SQLite by default; ZX_WORKSPACES=
postgres runs them on PostgreSQL) sends to an SQLite file.

What it shows, from `zxctl runs` (rows_read, cursor_from, cursor_mark):
the first run reads everything and records the mark; a second reads only
the changed and new rows (and the row at the mark, read again: `>=`);
updated and new rows arrive; rows committed late with the mark's own
value are not missed; NULL cursors are read every run; `--full` reads
all; the mark survives a restart of zxd; a cursor column missing from the
result fails the run naming it; a mirror with a cursor is refused at the
configuration check.
"""

import os
import subprocess

import pytest

from conftest import ZXD
from sync_fixtures import make_sync_env, sqlite_rows


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


N = 200


def stamp(i):
    """The i-th timestamp (UTC, one second apart)."""
    return f"2026-01-01 {i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00"


def cursor_sync(sync_env, mode="upsert", query="SELECT id, name, updated_at FROM items",
                start=True, cursor="updated_at"):
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    dest = os.path.join(z.root, "dest.db")
    z.syncs = {"crm": {"author": "alice", "query": query,
                       "dest": {"connection": "crm", "table": "items"},
                       "mode": mode, "key": ["id"], "extra": {"cursor": cursor}}}
    z.connections = {"crm": {"kind": "sqlite", "path": dest}}
    z.write_config()
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE items (id {t['int']} PRIMARY KEY, name {t['text']}, "
              f"updated_at {t['ts']})")
    values = ", ".join(f"({i}, 'n{i}', '{stamp(i)}')" for i in range(1, N + 1))
    z.ws_exec(f"INSERT INTO items VALUES {values}")
    z.dest = dest
    if start:
        z.start()
    return z


def dest(z):
    return dict(sqlite_rows(z.dest, "SELECT id, name FROM items"))


def counts(r):
    return (r["rows_read"], r["rows_sent"], r["rows_inserted"], r["rows_updated"],
            r["rows_unchanged"])


def test_a_cursor_run_reads_only_rows_past_the_mark(sync_env):
    z = cursor_sync(sync_env)
    r1 = z.run("crm")
    assert counts(r1) == (N, N, N, 0, 0)
    assert r1["cursor_from"] is None and r1["cursor_mark"]       # read everything
    assert len(dest(z)) == N

    # two rows changed, one new: read with the row at the mark (>=)
    z.ws_exec(f"UPDATE items SET name = 'changed', updated_at = '{stamp(N + 10)}' "
              "WHERE id IN (5, 17)",
              f"INSERT INTO items VALUES ({N + 1}, 'new', '{stamp(N + 11)}')")
    r2 = z.run("crm")
    assert counts(r2) == (4, 3, 1, 2, 1)
    assert r2["cursor_from"] == r1["cursor_mark"]
    d = dest(z)
    assert d[5] == "changed" and d[17] == "changed" and d[N + 1] == "new" and len(d) == N + 1
    # `zxctl runs` shows what each read
    assert [x["rows_read"] for x in z.runs("crm")[:2]] == [4, N]

    # nothing changed: only the row at the mark is read, nothing sent
    r3 = z.run("crm")
    assert counts(r3)[:2] == (1, 0)
    # and `zxctl run --wait` says what it read past
    text = z.zxctl("run", "crm", "--wait").stdout
    assert f"cursor: read from {r2['cursor_mark']}, up to {r2['cursor_mark']}" in text, text

    # a row committed late with the mark's own value is not missed; the
    # row already sent at that value is dropped by its hash
    z.ws_exec(f"INSERT INTO items VALUES ({N + 2}, 'late', '{stamp(N + 11)}')")
    r4 = z.run("crm")
    assert counts(r4) == (2, 1, 1, 0, 1)
    assert dest(z)[N + 2] == "late"

    # NULL cursors: read by every run, sent once
    z.ws_exec(f"INSERT INTO items VALUES ({N + 3}, 'no stamp', NULL)")
    r5 = z.run("crm")
    assert counts(r5)[:3] == (3, 1, 1)
    r6 = z.run("crm")
    assert counts(r6)[:2] == (3, 0)
    assert dest(z)[N + 3] == "no stamp"

    # --full reads (and sends) everything, and records the mark again
    r7 = z.run("crm", "--full")
    assert r7["rows_read"] == N + 3 and r7["cursor_from"] is None
    assert r7["cursor_mark"] == r6["cursor_mark"]

    # the mark survives a restart of zxd
    z.ws_exec(f"UPDATE items SET name = 'after restart', updated_at = '{stamp(N + 20)}' "
              "WHERE id = 1")
    z.stop()
    z.start()
    r8 = z.run("crm")
    assert r8["cursor_from"] == r7["cursor_mark"]
    assert counts(r8)[:4] == (4, 1, 0, 1)    # the mark's 2 rows, the NULL one, id 1
    assert dest(z)[1] == "after restart"


def test_an_integer_cursor_and_a_changed_query(sync_env):
    z = cursor_sync(sync_env, query="SELECT id, name, id * 10 AS version FROM items",
                    cursor="version")
    assert z.run("crm")["rows_read"] == N
    r = z.run("crm")
    assert (r["rows_read"], r["cursor_from"], r["cursor_mark"]) == (1, str(N * 10), str(N * 10))
    # another query: the mark says nothing of its rows, it reads everything
    z.stop()
    z.syncs["crm"]["query"] = "SELECT id, name || '!' AS name, id * 10 AS version FROM items"
    z.write_config()
    z.start()
    r = z.run("crm")
    assert r["rows_read"] == N and r["rows_updated"] == N and r["cursor_from"] is None


def test_a_cursor_column_missing_from_the_result_fails_the_run(sync_env):
    z = cursor_sync(sync_env, query="SELECT id, name FROM items")
    r = z.run("crm", check=False)
    assert r["state"] == "failed"
    assert "sync crm: cursor column updated_at is not in the query's result" in r["error"]
    assert not os.path.exists(z.dest) or not sqlite_rows(
        z.dest, "SELECT name FROM sqlite_master WHERE name = 'items'")


def test_a_cursor_column_gone_after_a_mark_fails_the_run_naming_it(sync_env):
    z = cursor_sync(sync_env, query="SELECT * FROM items")
    assert z.run("crm")["rows_read"] == N
    # the same query, but its table lost the column: the query past the
    # mark fails in the database's words; the run says it in zx's
    z.ws_exec("ALTER TABLE items DROP COLUMN updated_at")
    r = z.run("crm", check=False)
    assert r["state"] == "failed"
    assert "cursor column updated_at is not in the query's result (its columns: id, name)" \
        in r["error"], r["error"]


def test_mirror_with_a_cursor_is_refused_at_the_check(sync_env):
    z = cursor_sync(sync_env, mode="mirror", start=False)
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                       timeout=60, env=z.env)
    assert p.returncode != 0
    assert "pipelines.crm: cursor cannot be used with mode: mirror" in p.stdout + p.stderr


def test_a_cursor_that_cannot_be_one_fails_the_run_naming_it(sync_env):
    z = cursor_sync(sync_env, query="SELECT id, name, id * 1.5 AS score FROM items",
                    cursor="score")
    r = z.run("crm", check=False)
    assert r["state"] == "failed"
    assert "sync crm: cursor column score" in r["error"], r["error"]
    assert "real number" in r["error"] or "a timestamp or a date" in r["error"], r["error"]
