"""
What bounds a reverse sync's query (issue 18): its deadline
(`query_timeout`), the bytes of its temporary files (`max_spill_bytes`),
and a stop that ends the query on the server, not only in zx; and, on an
SQLite workspace, which table-valued functions a query may use and how a
refusal reads.

Every test here waits for conditions with deadlines; none measures time.
"""

import os
import signal
import subprocess

import pytest

from conftest import ZXD, wait_for
from test_syncs import dest_rows, dest_sqlite, one_sync
from sync_fixtures import make_sync_env, sqlite_rows


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


# A query that would run for an hour (Postgres) or for ever (SQLite: an
# unbounded recursive CTE aggregated, so no row ever comes).
def endless_query(z):
    if z.workspace == "postgres":
        return "SELECT id, pg_sleep(3600) IS NULL AS slept FROM customers"
    return ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
            "SELECT max(n) AS id, count(*) AS slept FROM c")


# An endless stream of rows: each one spilled in upsert mode.
ENDLESS_ROWS = ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
                "SELECT n AS id, 'row number ' || n AS v FROM c")


def sync_backends(z):
    """The workspace backends serving the sync's query (Postgres): their
    pids and states."""
    return z.pg.query("postgres", "SELECT pid, state FROM pg_stat_activity "
                      "WHERE datname = %s AND application_name = 'zx-sync-crm'", (z.pg_db,))


def wait_query_running(z):
    """Until the run's worker is in its query (Postgres: the server runs
    the rows' COPY)."""
    wait_for(lambda: (z.pipeline("crm").get("source_status") or {}).get("phase") == "reading",
             "the run to be reading")
    if z.workspace == "postgres":
        wait_for(lambda: z.pg.query("postgres", "SELECT 1 FROM pg_stat_activity WHERE datname = %s "
                                    "AND application_name = 'zx-sync-crm' AND state = 'active' "
                                    "AND query LIKE 'COPY%%'", (z.pg_db,)),
                 "the query running on the server")


def tmp_files(z):
    d = os.path.join(z.data_dir, "tmp")
    return os.listdir(d) if os.path.isdir(d) else []


def endless_sync(sync_env, extra=None, query=None, mode="replace", key=None):
    z = one_sync(sync_env, mode, key=key, start=False)
    z.syncs["crm"]["query"] = query or endless_query(z)
    z.syncs["crm"]["extra"] = extra or {}
    z.write_config()
    z.start()
    return z


# ---- query_timeout ------------------------------------------------------------------

def test_a_query_past_its_query_timeout_fails_naming_the_option(sync_env):
    z = endless_sync(sync_env, {"query_timeout": "2s"})
    r = z.run("crm", check=False)
    assert r["state"] == "failed", r
    assert "query_timeout (2s)" in r["error"], r["error"]
    assert r["rows_sent"] == 0
    assert not os.path.exists(dest_sqlite(z)) or \
        sqlite_rows(dest_sqlite(z), "SELECT count(*) FROM sqlite_master WHERE name = "
                    "'customers'") == [(0,)]
    if z.workspace == "postgres":
        # cancelled on the server, not left sleeping there
        wait_for(lambda: sync_backends(z) == [], "the query's backend to end", deadline=60)


def test_an_invalid_query_timeout_is_refused_at_load(sync_env):
    z = one_sync(sync_env, "replace", key=None, start=False)
    z.syncs["crm"]["extra"] = {"query_timeout": "0s", "max_spill_bytes": "1KiB"}
    z.write_config()
    p = subprocess.run([ZXD, "--check", "-c", z.cfg_path], capture_output=True, text=True,
                       env=z.env)
    assert p.returncode != 0, p.stderr
    assert "query_timeout" in p.stderr and "max_spill_bytes" in p.stderr, p.stderr


# ---- a stop ends the query on the server --------------------------------------------

def test_zxctl_stop_during_the_query_ends_it_on_the_server(sync_env):
    z = endless_sync(sync_env)
    assert z.zxctl("run", "crm").returncode == 0
    wait_query_running(z)
    p = z.zxctl("stop", "crm")
    assert p.returncode == 0, p.stdout + p.stderr
    wait_for(lambda: z.runs("crm") and z.runs("crm")[0]["state"] == "failed", "the run to end",
             deadline=60)
    rec = z.runs("crm")[0]
    # the worker ended the run itself (no SIGKILL after 10 s), saying why
    assert "stopped while the query ran" in rec["error"], rec
    assert "signal" not in rec["error"], rec
    if z.workspace == "postgres":
        wait_for(lambda: sync_backends(z) == [], "the query's backend to end", deadline=60)


@pytest.mark.postgres_only
def test_a_worker_killed_outright_leaves_no_query_behind(sync_env):
    z = endless_sync(sync_env)
    assert z.zxctl("run", "crm").returncode == 0
    wait_query_running(z)
    pid = wait_for(lambda: z.pipeline("crm").get("pid"), "the run's worker")
    os.kill(pid, signal.SIGKILL)
    # the server finds out by itself (client_connection_check_interval)
    wait_for(lambda: sync_backends(z) == [], "the dead worker's backend to end", deadline=90)


# A function whose loop catches the cancel (query_canceled) and sleeps
# again: PQcancel alone cannot end it; only pg_terminate_backend can.
DEAF_FUNCTION = """
CREATE FUNCTION {schema}.zx_test_deaf_to_cancel() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  LOOP
    BEGIN
      PERFORM pg_sleep(3600);
    EXCEPTION WHEN query_canceled THEN
      NULL;
    END;
  END LOOP;
END $$"""


@pytest.mark.postgres_only
@pytest.mark.parametrize("how", ["stop", "deadline"])
def test_a_query_deaf_to_the_cancel_is_terminated_on_the_server(pg, sync_env, how):
    """PQcancel first; a statement that ignores it is ended with
    pg_terminate_backend (after 3 s), and the run says so."""
    z = one_sync(sync_env, "replace", key=None, start=False)
    pg.execute(z.pg_db, DEAF_FUNCTION.format(schema=f'"{z.pg_schema}"'))
    z.syncs["crm"]["query"] = "SELECT id, zx_test_deaf_to_cancel() AS slept FROM customers"
    z.syncs["crm"]["extra"] = {"query_timeout": "2s"} if how == "deadline" else {}
    z.write_config()
    z.start()
    assert z.zxctl("run", "crm").returncode == 0
    wait_query_running(z)
    if how == "stop":
        p = z.zxctl("stop", "crm")
        assert p.returncode == 0, p.stdout + p.stderr
    wait_for(lambda: z.runs("crm") and z.runs("crm")[0]["state"] == "failed", "the run to end",
             deadline=90)
    rec = z.runs("crm")[0]
    assert "terminated on the server (pg_terminate_backend)" in rec["error"], rec
    assert ("stopped while the query ran" if how == "stop" else "query_timeout (2s)") \
        in rec["error"], rec
    assert "signal" not in rec["error"], rec
    wait_for(lambda: sync_backends(z) == [], "the query's backend to end", deadline=60)
    assert "terminated on the server (pg_terminate_backend)" in z.log_text(), z.log_tail(30)


# ---- max_spill_bytes ----------------------------------------------------------------

def test_a_run_past_max_spill_bytes_fails_naming_it_and_leaves_no_file(sync_env):
    z = endless_sync(sync_env, {"max_spill_bytes": "1MiB"}, query=ENDLESS_ROWS, mode="upsert",
                     key=("id",))
    r = z.run("crm", check=False)
    assert r["state"] == "failed", r
    assert "max_spill_bytes (1048576 bytes" in r["error"], r["error"]
    assert r["rows_sent"] == 0
    assert tmp_files(z) == []
    if z.workspace == "postgres":
        wait_for(lambda: sync_backends(z) == [], "the query's backend to end", deadline=60)
    # a bounded result under the limit runs
    z.syncs["crm"]["query"] = ENDLESS_ROWS.replace("FROM c)", "FROM c WHERE n < 100)")
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    assert z.run("crm")["rows_sent"] == 100


# ---- SQLite: table-valued functions, what a refusal says ----------------------------

@pytest.mark.sqlite_only
def test_json_each_and_json_tree_are_read_only_and_allowed(sync_env):
    z = one_sync(sync_env, "replace", key=None, start=False,
                 query="SELECT c.id * 10 + j.key AS id, j.value AS email, "
                       "(SELECT count(*) FROM json_tree('{\"a\": [1, 2]}')) AS plan "
                       "FROM customers c, json_each('[\"x\", \"y\"]') j")
    z.write_config()
    z.start()
    r = z.run("crm")
    assert r["rows_sent"] == 6
    assert dest_rows(z) == [(10, "x", 4), (11, "y", 4), (20, "x", 4), (21, "y", 4),
                            (30, "x", 4), (31, "y", 4)]


@pytest.mark.sqlite_only
def test_a_table_named_like_json_each_is_still_the_authors_policy(sync_env):
    z = one_sync(sync_env, "replace", key=None, start=False,
                 query="SELECT * FROM json_each")
    z.ws_exec("CREATE TABLE json_each (id INTEGER, secret TEXT)",
              "INSERT INTO json_each VALUES (1, 'hunter2')")
    z.start()
    r = z.run("crm", check=False)
    assert r["state"] == "failed", r
    assert "reads table json_each, which author alice may not read" in r["error"], r["error"]


@pytest.mark.sqlite_only
@pytest.mark.parametrize("query,words", [
    ("PRAGMA table_info(customers)",
     "it would run PRAGMA table_info(customers) (SQLite authorizer action SQLITE_PRAGMA, "
     "refused: a sync's query may only read)"),
    ("DELETE FROM customers WHERE id = 1",
     "it would delete rows from table customers (SQLite authorizer action SQLITE_DELETE"),
    ("UPDATE customers SET plan = 'x'",
     "it would update column plan of table customers (SQLite authorizer action SQLITE_UPDATE"),
    # a table-valued function other than json_each / json_tree
    ("SELECT name AS id FROM pragma_table_info('customers')",
     "when a table-valued function is first used: of those a sync may use json_each and "
     "json_tree only"),
])
def test_a_refusal_says_what_is_refused_and_why(sync_env, query, words):
    z = one_sync(sync_env, "replace", key=None, query=query)
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and words in r["error"], r["error"]
    assert z.query("SELECT count(*) FROM customers") == [(3,)]
