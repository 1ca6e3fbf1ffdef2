"""
Every mode on every table destination, end to end: PostgreSQL, MariaDB
(tests/services/mariadb) and SQLite, each read back by its own client;
first, second and third runs (only the changes sent; deletes in mirror);
the table made with the result's types and a primary key on the key; the
files destination in its per-run modes.  On both workspace backends.
"""

import json
import os

import pytest

from conftest import wait_for
from sync_fixtures import make_sync_env, mariadb_env, sqlite_rows
from test_syncs import insert_customers, make_customers

QUERY = "SELECT id, email, plan, active, updated_at FROM customers"


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def mysql_connect(env):
    import pymysql
    return pymysql.connect(host=env["MYSQL_HOST"], port=int(env["MYSQL_PORT"]),
                           user=env["MYSQL_USER"], password=env["MYSQL_PASSWORD"],
                           autocommit=True)


@pytest.fixture
def mariadb():
    """The server's addresses and a connection of this test's own (a test
    restarts the server: a connection shared by tests would die with it)."""
    env = mariadb_env()
    if env is None:
        pytest.fail("tests/services/mariadb is missing")
    conn = mysql_connect(env)
    yield env, conn
    conn.close()


class Dest:
    """A table destination of one kind: its connection's settings and a
    reader of its rows."""

    def __init__(self, kind, sync_env, pg, mariadb_fx, root):
        self.kind = kind
        if kind == "sqlite":
            self.path = os.path.join(root, "dest.db")
            self.conn = {"kind": "sqlite", "path": self.path}
            self.table = "customers"
        elif kind == "postgres":
            self.pg = pg
            self.db = sync_env.pg_db()
            self.conn = sync_env.pg_conn(self.db)
            self.table = "public.customers"
        else:
            env, c = mariadb_fx
            self.my = c
            self.env = env
            self.dbname = "zxt_" + os.urandom(4).hex()
            with c.cursor() as cur:
                cur.execute(f"CREATE DATABASE {self.dbname}")
            self.conn = {"kind": "mysql",
                         "dsn": f"mysql://{env['MYSQL_USER']}:{{pw}}@{env['MYSQL_HOST']}:"
                                f"{env['MYSQL_PORT']}/{self.dbname}",
                         "password": env["MYSQL_PASSWORD"]}
            self.table = "customers"

    def rows(self, table="customers", cols="id, email, plan"):
        sql = f"SELECT {cols} FROM {table} ORDER BY id"
        if self.kind == "sqlite":
            return [tuple(r) for r in sqlite_rows(self.path, sql)]
        if self.kind == "postgres":
            return [tuple(r) for r in self.pg.query(self.db, sql)]
        with self.my.cursor() as cur:
            cur.execute(f"SELECT {cols} FROM {self.dbname}.{table} ORDER BY id")
            return [tuple(r) for r in cur.fetchall()]

    def close(self):
        if self.kind == "mysql":
            try:
                c = mysql_connect(self.env)
                with c.cursor() as cur:
                    cur.execute(f"DROP DATABASE IF EXISTS {self.dbname}")
                c.close()
            except Exception:
                pass


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def dest_kind(request):
    return request.param


def setup(sync_env, pg, request, dest_kind, mode, key=("id",)):
    mfx = request.getfixturevalue("mariadb") if dest_kind == "mysql" else None
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False)
    d = Dest(dest_kind, sync_env, pg, mfx, z.root)
    request.addfinalizer(d.close)
    z.syncs = {"s": {"query": QUERY, "mode": mode, "key": list(key) if key else None,
                     "dest": {"connection": "d", "table": d.table}}}
    z.connections = {"d": d.conn}
    z.write_config()
    make_customers(z)
    z.start()
    return z, d


def test_upsert_three_runs(sync_env, pg, request, dest_kind):
    z, d = setup(sync_env, pg, request, dest_kind, "upsert")
    assert z.run("s")["rows_sent"] == 3
    assert d.rows() == [(1, "a@x.org", "free"), (2, "b@x.org", "pro"), (3, 'c,"q"@x.org', "free")]
    assert z.run("s")["rows_sent"] == 0
    z.ws_exec("UPDATE customers SET email = 'b2@x.org' WHERE id = 2")
    insert_customers(z, [(4, "d@x.org", "pro", False, None)])
    r = z.run("s")
    assert (r["rows_sent"], r["rows_inserted"], r["rows_updated"]) == (2, 1, 1)
    assert d.rows() == [(1, "a@x.org", "free"), (2, "b2@x.org", "pro"),
                        (3, 'c,"q"@x.org', "free"), (4, "d@x.org", "pro")]
    # the types: an integer key, a boolean, a timestamp that round-trips
    got = d.rows(cols="id, active, updated_at")
    assert got[0][0] == 1 and bool(got[0][1]) is True
    ts = got[2][2]
    text = ts if isinstance(ts, str) else ts.isoformat()
    assert text.startswith("1969-07-20") and "20:17:40.123456" in text, got[2]


def test_mirror_deletes(sync_env, pg, request, dest_kind):
    z, d = setup(sync_env, pg, request, dest_kind, "mirror")
    z.run("s")
    z.ws_exec("DELETE FROM customers WHERE id = 1")
    r = z.run("s")
    assert (r["rows_deleted"], r["rows_sent"]) == (1, 0)
    assert [x[0] for x in d.rows()] == [2, 3]
    z.ws_exec("DELETE FROM customers")
    r = z.run("s")
    assert r["rows_deleted"] == 2 and d.rows() == []


def test_replace_and_append(sync_env, pg, request, dest_kind):
    z, d = setup(sync_env, pg, request, dest_kind, "replace", key=None)
    z.run("s")
    z.ws_exec("DELETE FROM customers WHERE id = 3")
    assert z.run("s")["rows_sent"] == 2
    assert [x[0] for x in d.rows()] == [1, 2]
    # the same table in append mode: everything again
    z.syncs["s"]["mode"] = "append"
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    z.run("s")
    assert [x[0] for x in d.rows()] == [1, 1, 2, 2]


# ---- files in their per-run modes ----------------------------------------------------

def test_files_modes_write_a_file_per_run(sync_env):
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False)
    z.syncs = {"m": {"query": "SELECT id, plan FROM customers", "mode": "mirror", "key": ["id"],
                     "dest": {"files": {"path": "var/exports/out", "format": "json"}}}}
    z.write_config()
    make_customers(z)
    z.start()
    r1 = z.run("m")
    z.ws_exec("DELETE FROM customers WHERE id = 2", "UPDATE customers SET plan = 'x' WHERE id = 3")
    r2 = z.run("m")
    out = os.path.join(z.data_dir, "exports", "out")
    f1 = os.path.join(out, f"m-{r1['id']}.json")
    f2 = os.path.join(out, f"m-{r2['id']}.json")
    assert sorted(os.listdir(out)) == sorted([os.path.basename(f1), os.path.basename(f2)])
    one = [json.loads(l) for l in open(f1)]
    assert [(o["_zx_op"], o["id"]) for o in one] == [("upsert", 1), ("upsert", 2), ("upsert", 3)]
    two = [json.loads(l) for l in open(f2)]
    assert sorted((o["_zx_op"], o["id"], o.get("plan")) for o in two) == \
        [("delete", 2, None), ("upsert", 3, "x")]


# ---- a destination that goes away mid-run; a run killed mid-file --------------------

def big_source(z, rows):
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE big (id {t['int']} PRIMARY KEY, v {t['text']})")
    if z.workspace == "postgres":
        z.ws_exec(f"INSERT INTO big SELECT g, 'value-' || g FROM generate_series(1, {rows}) g")
    else:
        z.ws_exec("WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < "
                  f"{rows}) INSERT INTO big SELECT g, 'value-' || g FROM s")


def wait_sending(z, name):
    """Until the run of `name` is sending (its worker's progress)."""
    def sending():
        e = z.pipeline(name)
        st = e.get("source_status") or {}
        return e.get("pid") and st.get("phase") == "sending"
    wait_for(sending, f"{name} sending", deadline=120, interval=0.02)
    return z.pipeline(name)["pid"]


def test_the_server_stopped_mid_run_fails_it_and_the_next_run_sends_again(
        sync_env, pg, request, mariadb):
    import subprocess
    from conftest import REPO
    z = sync_env.zxd({}, {"alice": ["big"]}, start=False)
    d = Dest("mysql", sync_env, pg, mariadb, z.root)
    request.addfinalizer(d.close)
    z.syncs = {"s": {"query": "SELECT id, v FROM big", "mode": "upsert", "key": ["id"],
                     "dest": {"connection": "d", "table": "big"}}}
    z.connections = {"d": d.conn}
    z.write_config()
    big_source(z, 500000)
    z.start()
    assert z.zxctl("run", "s").returncode == 0
    wait_sending(z, "s")
    env = dict(z.env, ZX_MYSQL_RESTART_MODE="immediate")
    r = subprocess.run([os.path.join(REPO, "tests", "services", "mariadb"), "restart"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    wait_for(lambda: z.runs("s") and z.runs("s")[0]["state"] in ("failed", "succeeded"),
             "the run's end", deadline=120)
    rec = z.runs("s")[0]
    assert rec["state"] == "failed", rec      # killed under it
    # none of the rows it was to send is committed: on Postgres (a first run,
    # sent as read) those read before the server went, on SQLite all of them
    assert rec["rows_sent"] == 0 and 0 < rec["rows_failed"] == rec["rows_read"] <= 500000, rec
    if z.workspace == "sqlite":
        assert rec["rows_failed"] == 500000, rec
    # reconnect (the server is back on the same port): the hashes were left
    # alone, so everything is sent again
    env_, _ = mariadb
    d.my = mysql_connect(env_)
    r = z.run("s", timeout=600)
    assert r["rows_sent"] == 500000 and r["rows_inserted"] == 500000
    with d.my.cursor() as cur:
        cur.execute(f"SELECT count(*), count(DISTINCT id) FROM {d.dbname}.big")
        assert cur.fetchone() == (500000, 500000)


def test_a_run_killed_mid_file_leaves_no_partial_file(sync_env):
    z = sync_env.zxd({}, {"alice": ["big"]}, start=False)
    z.syncs = {"f": {"query": "SELECT id, v FROM big", "mode": "replace",
                     "dest": {"files": {"path": "var/exports/out/big.csv", "format": "csv"}}}}
    z.write_config()
    big_source(z, 1000000)
    z.start()
    assert z.zxctl("run", "f").returncode == 0
    pid = wait_sending(z, "f")
    os.kill(pid, 9)
    wait_for(lambda: z.runs("f") and z.runs("f")[0]["state"] == "failed", "the failed run")
    out = os.path.join(z.data_dir, "exports", "out")
    assert not os.path.exists(os.path.join(out, "big.csv"))     # never a partial file
    r = z.run("f", timeout=600)
    assert r["rows_sent"] == 1000000
    with open(os.path.join(out, "big.csv")) as fh:
        assert sum(1 for _ in fh) == 1000001
    assert [n for n in os.listdir(out) if n != "big.csv"] == []   # the dead run's temp file gone


# ---- a value the destination cannot hold -----------------------------------------------

def test_a_value_the_table_cannot_hold_fails_the_run_and_is_sent_once_fixed(sync_env, pg):
    """Text into an integer column of an existing table: the run fails
    naming the column and the value, nothing is committed and no hash
    kept, so once the column is fixed the next run sends those rows."""
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False)
    db = sync_env.pg_db()
    pg.execute(db, "CREATE TABLE t (id bigint PRIMARY KEY, plan integer)")
    z.syncs = {"s": {"query": "SELECT id, plan FROM customers", "mode": "upsert",
                     "key": ["id"], "dest": {"connection": "d", "table": "public.t"}}}
    z.connections = {"d": sync_env.pg_conn(db)}
    z.write_config()
    make_customers(z)
    z.start()
    r = z.run("s", check=False)
    assert r.get("state") == "failed", r
    assert "column plan" in r["error"] and '"free"' in r["error"], r
    assert r["rows_sent"] == 0
    assert pg.query(db, "SELECT count(*) FROM t") == [(0,)]
    # said in the human output too, not only in --json
    p = z.zxctl("runs", "s")
    assert "failed" in p.stdout and "column plan" in p.stdout, p.stdout
    p = z.zxctl("run", "s", "--wait")
    assert p.returncode != 0 and "column plan" in p.stdout + p.stderr, p.stdout + p.stderr
    assert pg.query(db, "SELECT count(*) FROM t") == [(0,)]
    pg.execute(db, "ALTER TABLE t ALTER plan TYPE text")
    r = z.run("s")
    assert r["rows_sent"] == 3, r
    assert [tuple(x) for x in pg.query(db, "SELECT id, plan FROM t ORDER BY id")] == \
        [(1, "free"), (2, "pro"), (3, "free")]


def test_an_infinite_timestamp_into_parquet_fails_the_run_naming_it(sync_env):
    """Parquet has no infinity: a Postgres 'infinity' timestamp is not
    silently written as NULL; the run fails, says which column and value,
    and writes no file."""
    z = sync_env.zxd({}, {"alice": ["ev"]}, start=False)
    if z.workspace != "postgres":
        pytest.skip("only a PostgreSQL workspace has infinite timestamps")
    z.syncs = {"f": {"query": "SELECT id, at FROM ev", "mode": "replace",
                     "dest": {"files": {"path": "var/exports/ev.parquet",
                                        "format": "parquet"}}}}
    z.write_config()
    z.ws_exec("CREATE TABLE ev (id bigint PRIMARY KEY, at timestamptz)",
              "INSERT INTO ev VALUES (1, '2024-01-02 03:04:05+00'), (2, 'infinity'), "
              "(3, '-infinity')")
    z.start()
    r = z.run("f", check=False)
    assert r.get("state") == "failed", r
    assert "column at" in r["error"] and "infinity" in r["error"], r
    p = z.zxctl("runs", "f")
    assert "column at" in p.stdout and "infinity" in p.stdout, p.stdout
    assert not os.path.exists(os.path.join(z.data_dir, "exports", "ev.parquet"))
    # converted in the query, as the message says, it goes through
    z.syncs["f"]["query"] = "SELECT id, CASE WHEN isfinite(at) THEN at END AS at FROM ev"
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    r = z.run("f")
    assert r["rows_sent"] == 3
    assert os.path.exists(os.path.join(z.data_dir, "exports", "ev.parquet"))
