"""
`zxctl test` for Postgres change data capture (issue 8: the configuration
and the checks the worker also runs when it starts), against the
real server of tests/services/postgres (pg_fixtures.py: wal_level =
logical; roles zx, a superuser, and zx_nocreate, without REPLICATION).

What it covers: a zxd with an http pipeline and `source: postgres`
pipelines starts and runs both kinds side by side (a postgres pipeline
whose checks fail is failed with their message, at once and not
restarted when the server refuses the configuration: a table without a
key, a wrong password, a database that does not exist; a reload that fixes
it runs it); `zxctl test <pipeline>` and `zxctl test <connection>` then run
the checks of workers/sources/postgres/pg_cdc_check.c in order and name what is
missing with the command that fixes it: a wrong password (the dsn shown
with *** only), a role without REPLICATION (ALTER ROLE), a missing table,
a table the role may not read (GRANT SELECT; a role with REPLICATION made
here), a table without a primary key, a publication the role may not
create, an existing publication that does not cover a table, an existing
slot of another plugin; and the summary when everything is there (server,
wal_level, slots, senders, tables with their estimated rows, publication
and slot to be created or existing).  wal_level = replica needs a second
server: its message is unit-tested (tests/unit/test_pg_cdc_check.c).

Every database and role made here is dropped at teardown; passwords reach
zxd through ${env:} only and are checked to appear in no log, no status
and no answer of zxctl.
"""

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

import pg_fixtures
from conftest import ZXD, wait_for
from pg_cdc_fixtures import assert_no_password, make_cdc_env, superuser


@pytest.fixture
def cdc_env(pg):
    yield from make_cdc_env(pg)


def test_superuser_and_a_created_table_pass(pg, cdc_env):
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY, total numeric)")
    pg.execute(db, "INSERT INTO orders SELECT g, g * 1.5 FROM generate_series(1, 500) g")
    pg.execute(db, "ANALYZE orders")
    pg.execute(db, "CREATE TABLE items (id int PRIMARY KEY)")   # never analyzed
    z = cdc_env.zxd({"shop-cdc": {"connection": "shop", "tables": ["orders", "public.items"]}},
                    {"shop": superuser(db)})

    # zxd runs both: the http pipeline works, the postgres one mirrors
    st = z.status()
    web, cdc = z.pipeline("web", st), z.pipeline("shop-cdc", st)
    assert web["state"] == "running", web
    assert cdc["state"] == "running" and cdc["source"] == "postgres", cdc
    z.push_ok("web", [{"a": 1}])
    z.wait_count("web", 1)
    z.wait_count("orders", 500)
    rc, out = z.test_output("shop-cdc")
    assert rc == 0, out
    assert "publication zx_shop_cdc: exists (made by zx: the pipeline adds what it lacks)" \
        in out, out

    # stopped, and what it made dropped: the checks say what will be made
    r = z.zxctl("stop", "shop-cdc")
    assert r.returncode == 0, r
    wait_for(lambda: not pg.query(db, "SELECT active FROM pg_replication_slots WHERE "
                                      "slot_name = 'zx_shop_cdc' AND active"),
             "the slot to be let go", deadline=30)
    pg.execute(db, "SELECT pg_drop_replication_slot('zx_shop_cdc')")
    pg.execute(db, "DROP PUBLICATION zx_shop_cdc")
    rc, out = z.test_output("shop-cdc")
    assert rc == 0, out
    shown = z.dsn_shown("shop")
    assert f"Postgres {shown} (server {pg.version.split()[0]}" in out, out
    assert f"database {db}, role zx)" in out, out
    assert "wal_level logical; role zx is a superuser" in out, out
    assert re.search(r"replication slots: \d+ of 20 free; WAL senders: \d+ of 20 free", out), out
    assert "tables: public.orders (about 500 rows), public.items (rows not estimated yet: " \
           "never analyzed)" in out, out
    assert "publication zx_shop_cdc: to be created; slot zx_shop_cdc: to be created" in out, out
    assert "initial copy: yes" in out, out
    # nothing was created
    assert pg.query(db, "SELECT count(*) FROM pg_publication") == [(0,)]
    assert pg.query(db, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = "
                        "'zx_shop_cdc'") == [(0,)]

    # the connection alone: server, role, slots, senders
    rc, out = z.test_output("shop")
    assert rc == 0, out
    assert "Ready for change data capture" in out and "tables:" not in out, out
    j = z.zxctl_json("test", "shop")
    assert j["ok"] is True and j["source"] == "postgres", j
    assert_no_password(z, out, cdc_env)
    z.assert_no_secret()


def test_role_without_replication_is_told_alter_role(pg, cdc_env):
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id int PRIMARY KEY)")
    conn = {"user": pg_fixtures.NOCREATE_USER,
            "password": pg_fixtures.USERS[pg_fixtures.NOCREATE_USER], "db": db}
    z = cdc_env.zxd({"cdc": {"connection": "nc", "tables": ["orders"]}}, {"nc": conn})
    for name in ("cdc", "nc"):
        rc, out = z.test_output(name)
        assert rc == 1, out
        assert ("role zx_nocreate has no REPLICATION attribute (and is not a superuser): "
                "logical replication needs it; as a superuser: ALTER ROLE zx_nocreate "
                "REPLICATION") in out, out
        assert_no_password(z, out, cdc_env)


def test_wrong_password_names_the_dsn_without_it(pg, cdc_env):
    db = cdc_env.db()
    conn = dict(superuser(db), password="not-the-password")
    cdc_env.secrets.append("not-the-password")
    z = cdc_env.zxd({"cdc": {"connection": "db", "tables": ["t"]}}, {"db": conn})
    rc, out = z.test_output("cdc")
    assert rc == 1, out
    assert f"cannot connect to Postgres {z.dsn_shown('db')}: " in out, out
    assert "password authentication failed" in out, out
    assert_no_password(z, out, cdc_env)


def test_missing_tables_are_named(pg, cdc_env):
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id int PRIMARY KEY)")
    pg.execute(db, "CREATE SCHEMA sales")
    pg.execute(db, "CREATE VIEW order_view AS SELECT * FROM orders")
    z = cdc_env.zxd({
        "missing": {"connection": "db", "tables": ["orders", "sales.customers"]},
        "case": {"connection": "db", "tables": ["Orders"], "extra": {"table_prefix": "c_"}},
        "view": {"connection": "db", "tables": ["order_view"]},
    }, {"db": superuser(db)})
    rc, out = z.test_output("missing")
    assert rc == 1, out
    assert f"table sales.customers does not exist in database {db}" in out, out
    rc, out = z.test_output("case")
    assert rc == 1, out
    assert (f'table public."Orders" does not exist in database {db} (public.orders exists: '
            "the names in `tables` are exact)") in out, out
    rc, out = z.test_output("view")
    assert rc == 1, out
    assert "public.order_view is a view, not a table" in out, out


def test_missing_select_then_publication_rights(pg, cdc_env):
    """A role with REPLICATION but no SELECT on a table zx made: GRANT
    SELECT; then, reading it, it may not create the publication (PG 15:
    CREATE on the database and ownership of the tables); once a superuser
    made the publication, everything passes."""
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id int PRIMARY KEY)")
    role, pw = cdc_env.role(replication=True)
    z = cdc_env.zxd({"cdc": {"connection": "repl", "tables": ["orders"]}},
                    {"repl": {"user": role, "password": pw, "db": db}})
    rc, out = z.test_output("cdc")
    assert rc == 1, out
    assert (f"role {role} may not read public.orders: GRANT SELECT ON public.orders TO "
            f"{role}") in out, out

    pg.execute(db, f'GRANT SELECT ON public.orders TO "{role}"')
    rc, out = z.test_output("cdc")
    assert rc == 1, out
    assert (f"publication zx_cdc does not exist and role {role} may not create it: "
            "PostgreSQL's CREATE PUBLICATION ... FOR TABLE needs CREATE on database "
            f"{db} (GRANT CREATE ON DATABASE {db} TO {role}) and ownership of every table, "
            f"which {role} lacks for public.orders (owner: zx); or create it as a superuser "
            "or the tables' owner: CREATE PUBLICATION zx_cdc FOR TABLE public.orders") in out, out

    pg.execute(db, "CREATE PUBLICATION zx_cdc FOR TABLE public.orders")
    rc, out = z.test_output("cdc")
    assert rc == 0, out
    assert f"role {role} has REPLICATION" in out, out
    assert "publication zx_cdc: exists and covers every table" in out, out
    assert_no_password(z, out, cdc_env)


def test_existing_publication_slot_and_keys(pg, cdc_env):
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id int PRIMARY KEY)")
    pg.execute(db, "CREATE TABLE items (id int PRIMARY KEY)")
    pg.execute(db, "CREATE TABLE events (at timestamptz, what text)")     # no key
    pg.execute(db, "CREATE PUBLICATION shop_pub FOR TABLE orders")
    pg.execute(db, "CREATE PUBLICATION ins_only FOR TABLE orders WITH (publish = 'insert')")
    pg.execute(db, "SELECT pg_create_logical_replication_slot('zx_td', 'test_decoding')")
    pg.execute(db, "SELECT pg_create_logical_replication_slot('zx_ok', 'pgoutput')")
    z = cdc_env.zxd({
        "cover": {"connection": "db", "tables": ["orders", "items"],
                  "extra": {"publication": "shop_pub"}},
        "ops": {"connection": "db", "tables": ["orders"],
                "extra": {"publication": "ins_only", "table_prefix": "o_"}},
        "slot": {"connection": "db", "tables": ["orders"],
                 "extra": {"slot": "zx_td", "table_prefix": "s_"}},
        "nokey": {"connection": "db", "tables": ["events"]},
        "good": {"connection": "db", "tables": ["orders"],
                 "extra": {"slot": "zx_ok", "publication": "shop_pub", "table_prefix": "g_",
                           "initial_copy": "false"}},
    }, {"db": superuser(db)})
    rc, out = z.test_output("cover")
    assert rc == 1, out
    assert ("publication shop_pub does not cover public.items: ALTER PUBLICATION shop_pub "
            "ADD TABLE public.items") in out, out
    rc, out = z.test_output("ops")
    assert rc == 1, out
    assert ("publication ins_only does not publish update, delete: ALTER PUBLICATION "
            "ins_only SET (publish = 'insert, update, delete, truncate')") in out, out
    rc, out = z.test_output("slot")
    assert rc == 1, out
    assert ("replication slot zx_td exists but is a slot of plugin test_decoding (zx reads "
            "pgoutput): drop it (SELECT pg_drop_replication_slot('zx_td'))") in out, out
    rc, out = z.test_output("nokey")
    assert rc == 1, out
    assert "public.events has no primary key (and no other replica identity)" in out, out
    rc, out = z.test_output("good")
    assert rc == 0, out
    # the pipeline runs now: its slot may already be held by its worker
    assert re.search(r"publication shop_pub: exists and covers every table; slot zx_ok: "
                     r"exists(, in use by pid \d+)?; initial copy: no", out), out


def test_check_refuses_what_the_checks_cannot_fix(pg, cdc_env):
    """zxd --check: a postgres pipeline's rules (here: two tables with one
    mirror) are refused before anything starts, naming both tables."""
    db = cdc_env.db()
    z = cdc_env.zxd({"cdc": {"connection": "db", "tables": ["public.orders", "sales.orders"]}},
                    {"db": superuser(db)}, start=False)
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                       env=z.env, timeout=60)
    assert p.returncode == 1, p
    assert ("pipeline cdc: public.orders and sales.orders would both be mirrored to table "
            "'orders'") in p.stderr, p.stderr
    z.cdc["cdc"]["extra"] = {"table_prefix": "p_"}
    z.cdc["cdc"]["tables"] = ["public.orders"]
    z.write_config()
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                       env=z.env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "configuration ok (2 pipelines)" in p.stdout, p.stdout


def test_reload_adds_a_postgres_pipeline(pg, cdc_env):
    """A postgres pipeline added by a reload starts (copies, then streams);
    changed, it is restarted and resumes without copying again; zxd and
    its other pipelines go on, and `zxctl test` runs on it."""
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id int PRIMARY KEY)")
    pg.execute(db, "INSERT INTO orders SELECT generate_series(1, 10)")
    z = cdc_env.zxd({}, {"db": superuser(db)})
    web_pid = z.wait_running("web")
    z.cdc = {"cdc": {"connection": "db", "tables": ["orders"]}}
    z.write_config()
    p = z.zxctl("reload")
    assert p.returncode == 0, p
    z.wait_running("cdc")
    z.wait_count("orders", 10)
    assert z.pipeline("web")["pid"] == web_pid
    rc, out = z.test_output("cdc")
    assert rc == 0, out
    # changed: restarted, and no second copy (the history starts empty)
    z.cdc["cdc"]["extra"] = {"history": "true"}
    z.write_config()
    j = json.loads(z.zxctl("--json", "reload").stdout)
    assert j["ok"] is True and j["changed"] == ["cdc"], j
    pg.execute(db, "INSERT INTO orders VALUES (11)")
    z.wait_count("orders__changes", 1)
    assert z.count("orders") == 11
    assert "event=copy_table" in z.log_text()
    assert z.log_text().count("event=copy_table") == 1, "copied again after the restart"
    z.push_ok("web", [{"a": 1}])
    z.wait_count("web", 1)


@contextlib.contextmanager
def private_server(prefix, **settings):
    """A PostgreSQL server of its own (tests/services/postgres in a folder
    of its own, with settings as environment, e.g. ZX_PG_WAL_LEVEL):
    yields (port, script, env), stopped and removed afterwards."""
    root = tempfile.mkdtemp(prefix=prefix)
    if os.geteuid() == 0:       # the server runs as its own system user
        shutil.chown(root, user=os.environ.get("ZX_PG_OS_USER", "postgres"))
    env = dict(os.environ, ZX_SERVICES_DIR=root, **settings)
    script = os.path.join(os.path.dirname(pg_fixtures.__file__), "..", "services", "postgres")
    p = subprocess.run([script, "start"], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    try:
        yield int(dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)["PGPORT"]), \
            script, env
    finally:
        subprocess.run([script, "stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def test_wal_level_replica_is_told_to_set_logical(cdc_env):
    """A second server, made with wal_level = replica: the check (and so
    the pipeline's start) says to set wal_level = logical and restart."""
    with private_server("zx-replica-", ZX_PG_WAL_LEVEL="replica") as (port, _, _):
        conn = dict(superuser("postgres"), port=port)
        z = cdc_env.zxd({"cdc": {"connection": "old", "tables": ["orders"]}}, {"old": conn})
        for name in ("cdc", "old"):
            rc, out = z.test_output(name)
            assert rc == 1, out
            assert ("Postgres says wal_level is replica; set wal_level = logical (ALTER SYSTEM "
                    "SET wal_level = logical) and restart the server") in out, out
        wait_for(lambda: "wal_level is replica" in (z.pipeline("cdc").get("last_error") or ""),
                 lambda: f"the pipeline failed with the message: {z.pipeline('cdc')}",
                 deadline=60)


def test_table_without_key_fails_at_once_without_restarts(pg, cdc_env):
    """A configuration the server refuses (issue 18, 19c: a table without a
    primary key) can never work: the worker exits with the reserved "do
    not respawn" code, and the pipeline is failed on its first attempt,
    with the reason and no restart; zxd and its other pipeline go on, and
    `zxctl restart` tries again once the table has a key."""
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE events (at timestamptz, what text)")     # no key
    z = cdc_env.zxd({"nokey": {"connection": "db", "tables": ["events"]}},
                    {"db": superuser(db)})
    wait_for(lambda: z.pipeline("nokey")["state"] == "failed",
             lambda: f"the pipeline did not fail: {z.pipeline('nokey')}", deadline=60)
    p = z.pipeline("nokey")
    assert p["restarts"] == 0, p
    assert "public.events has no primary key" in (p["last_error"] or ""), p
    assert z.log_text().count("event=start process=nokey ") == 1, z.log_text()
    assert "event=crash process=nokey" not in z.log_text()
    z.push_ok("web", [{"a": 1}])
    z.wait_count("web", 1)
    # fixed upstream: a restart asked for runs it
    pg.execute(db, "ALTER TABLE events ADD COLUMN id serial PRIMARY KEY")
    p = z.zxctl("restart", "nokey")
    assert p.returncode == 0, p
    wait_for(lambda: z.pipeline("nokey")["state"] == "running" and
             z.pipeline("nokey").get("source_status"),
             lambda: f"not running after the restart: {z.pipeline('nokey')}", deadline=60)


def test_refused_password_fails_at_once_and_a_reload_with_the_right_one_runs(pg, cdc_env):
    """A password the server refuses cannot work until someone changes it
    (issue 18, 19c): the pipeline is failed on its first attempt with the
    reason and the fix, never restarted; a database that does not exist
    likewise; a reload that gives the right password runs it."""
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id int PRIMARY KEY)")
    pg.execute(db, "INSERT INTO orders SELECT generate_series(1, 3)")
    bad = dict(superuser(db), password="not-the-password-2")
    cdc_env.secrets.append("not-the-password-2")
    nodb = dict(superuser(db), db=db + "_nosuch")
    z = cdc_env.zxd({"cdc": {"connection": "bad", "tables": ["orders"]},
                     "cdc-nodb": {"connection": "nodb", "tables": ["orders"],
                                  "extra": {"table_prefix": "n_"}}},
                    {"bad": bad, "good": superuser(db), "nodb": nodb})
    for name, phrase in (("cdc", "password authentication failed"),
                         ("cdc-nodb", f"database \"{db}_nosuch\" does not exist")):
        wait_for(lambda: z.pipeline(name)["state"] == "failed",
                 lambda: f"{name} did not fail: {z.pipeline(name)}\n" + z.log_tail(30),
                 deadline=60)
        p = z.pipeline(name)
        assert p["restarts"] == 0, p
        assert phrase in (p["last_error"] or ""), p
        shown = z.dsn_shown("bad" if name == "cdc" else "nodb")
        assert f"cannot connect to Postgres {shown}" in (p["last_error"] or ""), p
        log = z.log_text()
        assert log.count(f"event=start process={name} ") == 1, z.log_tail(30)
        assert f"event=crash process={name} " not in log, z.log_tail(30)
        assert re.search(rf"event=failed process={name} .*not restarted: a restart cannot fix "
                         rf"this; fix it, then zxctl restart {name}", log), z.log_tail(30)
    # the right password by a reload: the changed pipeline starts again
    z.cdc["cdc"] = {"connection": "good", "tables": ["orders"]}
    z.write_config()
    j = z.zxctl_json("reload")
    assert j.get("ok") is True, j
    z.wait_count("orders", 3, deadline=60)
    z.wait_running("cdc")
    assert z.log_text().count("event=start process=cdc ") == 2, z.log_tail(30)
    assert z.pipeline("cdc-nodb")["state"] == "failed"
    assert_no_password(z, z.zxctl("status").stdout, cdc_env)


def test_a_source_server_down_for_a_while_is_waited_for(cdc_env):
    """The source's server stops for 8 s and starts again (a restart, a
    failover): the worker loses its stream, and its next open cannot
    connect; it retries in the worker with backoff (the error with
    "retrying" in zxctl status) instead of crash-looping until the
    supervisor gives up, and the mirror catches up once the server is
    back.  Before, five failed opens within a second failed the pipeline
    for good."""
    import psycopg
    with private_server("zx-outage-") as (port, script, env):
        conn = dict(superuser("postgres"), port=port)
        dsn = f"host=127.0.0.1 port={port} user={conn['user']} password={conn['password']} " \
              "dbname=postgres"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE TABLE orders (id int PRIMARY KEY, v text)")
            c.execute("INSERT INTO orders SELECT g, 'a' FROM generate_series(1, 10) g")
        z = cdc_env.zxd({"cdc": {"connection": "src", "tables": ["orders"]}}, {"src": conn})
        z.wait_count("orders", 10, deadline=60)
        r = subprocess.run([script, "restart"], capture_output=True, text=True, timeout=300,
                           env=dict(env, ZX_PG_RESTART_PAUSE="8",
                                    ZX_PG_RESTART_MODE="immediate"))
        assert r.returncode == 0, r.stderr
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("INSERT INTO orders SELECT g, 'b' FROM generate_series(11, 20) g")
            c.execute("UPDATE orders SET v = 'c' WHERE id = 1")
        z.wait_count("orders", 20, deadline=120)
        wait_for(lambda: z.count("orders", "v = 'c'") == 1, "the update after the outage",
                 deadline=60)
        p = z.pipeline("cdc")
        assert p["state"] == "running", p
        log = z.log_text()
        assert "event=source_open_retry pipeline=cdc" in log, z.log_tail(40)
        assert "event=source_open_recovered pipeline=cdc" in log, z.log_tail(40)
        assert "not restarted" not in log, z.log_tail(40)
        assert not p.get("source_error"), p
