"""
The replication slots of Postgres CDC pipelines that are gone (issue 8):
`zxctl drop-slot NAME [--connection CONN]` for a slot left behind, and a
reload that removes a `source: postgres` pipeline (or moves it off its
slot) dropping its slot and the publication zx made for it, against the
real server of tests/services/postgres (pg_fixtures.py).

What it covers: drop-slot drops a slot and, where zx made it (its comment
starts with "zx: created for pipeline "), the publication of the same
name, and keeps a publication the user made; it refuses the slot of a
configured pipeline (with or without --connection), says which connections
it looked at when none has the slot (exit 1), leaves alone a slot of
another database, names the process holding a slot in use (here
pg_recvlogical) after waiting for it; SIGHUP removing two pipelines drops
both slots, the zx-made publication but not the user's, and leaves the
slot of a pipeline that stays, and of one renamed with its slot; moving a
pipeline to another role on the same database keeps its slot (the two
dsns are told to be the same database), moving it to another slot drops
the old one.

The slots and publications are made here with SQL, named as the
pipelines' (derived or explicit) ones; every name here has "sa" in it,
since slot names are the whole server's and other modules' pipelines
(shop, ...) must never meet them.  The CDC worker of those pipelines
may run or not (it may even fail to start: not this module's concern): if
it runs, it takes the slot made here, and the drop waits for it to let go
once it is stopped.

Every database and role made here is dropped at teardown (their slots
with them); passwords reach zxd through ${env:} only and are checked to
appear in no log and no answer of zxctl.
"""

import json
import os
import signal
import subprocess
import time

import pytest

import pg_fixtures
from conftest import wait_for
from pg_cdc_fixtures import assert_no_password, make_cdc_env, superuser

DEADLINE = 90          # a drop waits up to 10 s for a stopped worker's slot


@pytest.fixture
def cdc_env(pg):
    yield from make_cdc_env(pg)


def slots(pg, db):
    return {r[0] for r in pg.query(db, "SELECT slot_name FROM pg_replication_slots")}


def publications(pg, db):
    return {r[0] for r in pg.query(db, "SELECT pubname FROM pg_publication")}


def make_slot(pg, db, name):
    pg.execute(db, "SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (name,))


def make_publication(pg, db, name, table, made_for=None):
    """A publication of table; made_for: the pipeline zx would have made
    it for (its comment then says so), or None (the user's)."""
    pg.execute(db, f'CREATE PUBLICATION "{name}" FOR TABLE {table}')
    if made_for:
        pg.execute(db, f"COMMENT ON PUBLICATION \"{name}\" IS 'zx: created for pipeline "
                       f"{made_for}'")


def out_of(p):
    return (p.stdout or "") + (p.stderr or "")


def log_events(z, event):
    """The log lines of event=<event>."""
    return [l for l in z.log_text().splitlines() if f" event={event} " in l]


def wait_event(z, event, pipeline, deadline=DEADLINE):
    """The log line of event for pipeline, once there."""
    def line():
        for l in log_events(z, event):
            if f" pipeline={pipeline} " in l:
                return l
        return None
    return wait_for(line, lambda: f"event={event} pipeline={pipeline} in the log\n" +
                    z.log_tail(40), deadline=deadline)


def settle(z, pg, db, pipeline, slot, deadline=60):
    """Wait until pipeline's worker holds slot (the CDC worker runs) or is
    seen failing (it cannot run here: not this module's concern).  Returns
    "active" or "failing"."""
    def state():
        if pg.query(db, "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND active",
                    (slot,)):
            return "active"
        p = z.pipeline(pipeline)
        if p and (p.get("restarts") or p.get("state") in ("failed", "backoff") or
                  p.get("source_error")):
            return "failing"
        return None
    return wait_for(state, lambda: f"pipeline {pipeline} to hold slot {slot} or fail\n" +
                    z.log_tail(30), deadline=deadline)


def test_drop_slot_drops_it_and_only_a_zx_publication(pg, cdc_env):
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY)")
    make_slot(pg, db, "zx_sa_x")
    make_publication(pg, db, "zx_sa_x", "orders", made_for="sa-x")
    make_slot(pg, db, "zx_sa_y")
    make_publication(pg, db, "zx_sa_y", "orders")               # the user's
    z = cdc_env.zxd({}, {"db": superuser(db)})
    shown = z.dsn_shown("db")

    p = z.zxctl("drop-slot", "zx_sa_x")
    assert p.returncode == 0, out_of(p)
    assert p.stdout == (f"connection db: replication slot zx_sa_x dropped on Postgres {shown}; "
                        "publication zx_sa_x (made by zx for pipeline sa-x) dropped\n"), out_of(p)
    assert "zx_sa_x" not in slots(pg, db)
    assert "zx_sa_x" not in publications(pg, db)

    p = z.zxctl("--json", "drop-slot", "zx_sa_y", "--connection", "db")
    assert p.returncode == 0, out_of(p)
    j = json.loads(p.stdout)
    assert j["ok"] is True and j["name"] == "zx_sa_y" and j["dropped_on"] == ["db"], j
    assert j["result"] == (f"connection db: replication slot zx_sa_y dropped on Postgres "
                           f"{shown}; publication zx_sa_y kept: zx did not make it (its comment "
                           "does not start with 'zx: created for pipeline ')"), j
    assert "zx_sa_y" not in slots(pg, db)
    assert "zx_sa_y" in publications(pg, db)

    # logged and on the feed, without the pipeline (asked for by hand)
    assert len(log_events(z, "slot_dropped")) == 2, z.log_tail(20)
    feed = [json.loads(l) for l in z.zxctl("--json", "feed", check_rc=0).stdout.splitlines()]
    ev = [e for e in feed if e.get("event") == "slot_dropped"]
    assert [e["slot"] for e in ev] == ["zx_sa_x", "zx_sa_y"], feed
    assert ev[0]["pipeline"] is None and "dropped on Postgres" in ev[0]["message"], ev
    assert_no_password(z, out_of(p), cdc_env)
    z.assert_no_secret()


def test_drop_slot_refuses_a_configured_pipelines_slot(pg, cdc_env):
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY)")
    make_slot(pg, db, "zx_sa_orders")
    make_slot(pg, db, "sa_my_slot")
    z = cdc_env.zxd({"sa-orders": {"connection": "db", "tables": ["orders"]},
                     "sa-mine": {"connection": "db", "tables": ["orders"],
                              "extra": {"slot": "sa_my_slot", "table_prefix": "m_"}}},
                    {"db": superuser(db)})
    for slot, pipeline in (("zx_sa_orders", "sa-orders"), ("sa_my_slot", "sa-mine")):
        for extra in ((), ("--connection", "db")):
            p = z.zxctl("drop-slot", slot, *extra)
            assert p.returncode == 1, out_of(p)
            assert p.stderr == (f"zxctl: slot {slot} belongs to pipeline {pipeline}: remove "
                                "the pipeline from the configuration and reload; zx drops it "
                                "then\n"), out_of(p)
    assert {"zx_sa_orders", "sa_my_slot"} <= slots(pg, db)


def test_drop_slot_of_no_connection_says_where_it_looked(pg, cdc_env):
    db1, db2 = cdc_env.db(), cdc_env.db()
    make_slot(pg, db2, "zx_sa_elsewhere")
    z = cdc_env.zxd({}, {"a": superuser(db1), "b": superuser(db2)})

    p = z.zxctl("drop-slot", "zx_sa_nope")
    assert p.returncode == 1, out_of(p)
    assert p.stderr == ("zxctl: no configured postgres connection has replication slot zx_sa_nope "
                        f"(looked at: a ({z.dsn_shown('a')}), b ({z.dsn_shown('b')}))\n"), \
        out_of(p)

    # a slot of another database of the same server: left alone there
    p = z.zxctl("drop-slot", "zx_sa_elsewhere", "--connection", "a")
    assert p.returncode == 1, out_of(p)
    assert (f"zxctl: no configured postgres connection has replication slot zx_sa_elsewhere "
            f"(looked at: a ({z.dsn_shown('a')}))\n") in p.stderr, out_of(p)
    assert (f"connection a: replication slot zx_sa_elsewhere on Postgres {z.dsn_shown('a')} is a "
            f"slot of database {db2}, not of {db1}: left alone") in p.stderr, out_of(p)
    assert "zx_sa_elsewhere" in slots(pg, db2)

    # every connection: dropped where it is (b), not found on a
    p = z.zxctl("drop-slot", "zx_sa_elsewhere")
    assert p.returncode == 0, out_of(p)
    assert p.stdout.startswith(f"connection b: replication slot zx_sa_elsewhere dropped on "
                               f"Postgres {z.dsn_shown('b')}; publication zx_sa_elsewhere does "
                               "not exist"), out_of(p)
    assert "zx_sa_elsewhere" not in slots(pg, db2)

    for args, want in (
            (("drop-slot", "Bad-Name"), "zxctl: 'Bad-Name' is not a replication slot name "
                                        "(1 to 63 of a-z, 0-9 and _)\n"),
            (("drop-slot", "zx_sa_x", "--connection", "nope"),
             "zxctl: no connection named 'nope' of kind postgres in the configuration\n")):
        p = z.zxctl(*args)
        assert p.returncode == 1 and p.stderr == want, out_of(p)
    for args in (("drop-slot",), ("status", "--connection", "a"),
                 ("drop-slot", "zx_sa_x", "--connection")):
        p = z.zxctl(*args)
        assert p.returncode == 2, out_of(p)
    assert_no_password(z, out_of(p), cdc_env)


def test_drop_slot_names_the_process_holding_it(pg, cdc_env):
    """A slot in use (here by pg_recvlogical) is waited for, 10 s, then
    the answer names the process, its application_name and address."""
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE t (id int PRIMARY KEY)")
    make_publication(pg, db, "sa_busy_pub", "t")
    make_slot(pg, db, "zx_sa_busy")
    z = cdc_env.zxd({}, {"db": superuser(db)})
    srv = pg_fixtures.service()
    recv = os.path.join("/usr/lib/postgresql", srv.version.split(".")[0], "bin",
                        "pg_recvlogical")
    if not os.path.exists(recv):
        pytest.skip(f"{recv} is not installed")
    env = dict(os.environ, PGPASSWORD=pg_fixtures.USERS[pg_fixtures.SUPERUSER])
    holder = subprocess.Popen([recv, "-h", srv.host, "-p", str(srv.port), "-U",
                               pg_fixtures.SUPERUSER, "-d", db, "-S", "zx_sa_busy", "--start",
                               "-o", "proto_version=1", "-o", "publication_names=sa_busy_pub",
                               "-f", "/dev/null"],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, start_new_session=True)
    try:
        def active_pid():
            rows = pg.query(db, "SELECT active_pid FROM pg_replication_slots "
                                "WHERE slot_name = 'zx_sa_busy' AND active")
            return rows[0][0] if rows else None
        pid = wait_for(active_pid, "pg_recvlogical to hold slot zx_sa_busy")
        t0 = time.monotonic()
        p = z.zxctl("drop-slot", "zx_sa_busy", timeout=120)
        took = time.monotonic() - t0
        assert p.returncode == 1, out_of(p)
        assert p.stderr.startswith(
            f"zxctl: connection db: replication slot zx_sa_busy on Postgres "
            f"{z.dsn_shown('db')} is "
            f"still in use after 10 s, held by process {pid} (application_name pg_recvlogical, "
            f"client 127.0.0.1): stop that client (or SELECT pg_terminate_backend({pid}))"), \
            out_of(p)
        assert took >= 9.5, took
        assert "zx_sa_busy" in slots(pg, db)
    finally:
        holder.terminate()
        holder.wait(timeout=30)

    # let go: dropped now
    wait_for(lambda: not pg.query(db, "SELECT 1 FROM pg_replication_slots WHERE "
                                      "slot_name = 'zx_sa_busy' AND active"),
             "slot zx_sa_busy to be free")
    p = z.zxctl("drop-slot", "zx_sa_busy")
    assert p.returncode == 0, out_of(p)
    assert "zx_sa_busy" not in slots(pg, db)


def test_reload_removing_pipelines_drops_their_slots(pg, cdc_env):
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY, total numeric)")
    pg.execute(db, "CREATE TABLE items (id bigint PRIMARY KEY, name text)")
    # shop: derived slot and publication (zx_sa_shop), the publication made
    # by zx; keep: an explicit slot and the user's own publication; stay:
    # not removed; renamed: removed, but a new pipeline takes its slot
    make_slot(pg, db, "zx_sa_shop")
    make_publication(pg, db, "zx_sa_shop", "orders", made_for="sa-shop")
    make_slot(pg, db, "sa_keep_slot")
    make_publication(pg, db, "sa_user_pub", "items")
    make_slot(pg, db, "zx_sa_stay")
    make_slot(pg, db, "sa_shared_slot")
    cdc = {
        "sa-shop": {"connection": "db", "tables": ["orders"]},
        "sa-keep": {"connection": "db", "tables": ["items"],
                    "extra": {"slot": "sa_keep_slot", "publication": "sa_user_pub",
                              "table_prefix": "k_"}},
        "sa-stay": {"connection": "db", "tables": ["orders"], "extra": {"table_prefix": "s_"}},
        "sa-old": {"connection": "db", "tables": ["items"],
                   "extra": {"slot": "sa_shared_slot", "table_prefix": "o_"}},
    }
    z = cdc_env.zxd(cdc, {"db": superuser(db)})
    shown = z.dsn_shown("db")
    # where the worker runs, it holds the slots when they are removed: the
    # drop waits for it to let go
    for pipeline, slot in (("sa-shop", "zx_sa_shop"), ("sa-keep", "sa_keep_slot")):
        settle(z, pg, db, pipeline, slot)

    del z.cdc["sa-shop"], z.cdc["sa-keep"]
    z.cdc["sa-new"] = z.cdc.pop("sa-old")
    z.write_config()
    z.signal(signal.SIGHUP)

    line = wait_event(z, "slot_dropped", "sa-shop")
    assert (f'slot=zx_sa_shop message="replication slot zx_sa_shop dropped on Postgres {shown}; '
            'publication zx_sa_shop (made by zx for pipeline sa-shop) dropped"') in line, line
    line = wait_event(z, "slot_dropped", "sa-keep")
    assert ('slot=sa_keep_slot message="replication slot sa_keep_slot dropped on Postgres '
            f'{shown}; '
            "publication sa_user_pub kept: zx did not make it (its comment does not start with "
            "'zx: created for pipeline ')\"") in line, line
    left = slots(pg, db)
    assert "zx_sa_shop" not in left and "sa_keep_slot" not in left, left
    assert {"zx_sa_stay", "sa_shared_slot"} <= left, left
    pubs = publications(pg, db)
    assert "zx_sa_shop" not in pubs and "sa_user_pub" in pubs, pubs
    # the renamed pipeline's slot was never planned for a drop
    for ev in ("slot_dropped", "slot_kept", "slot_drop_failed", "slot_drop_start"):
        assert not [l for l in log_events(z, ev) if "sa-old" in l or "sa_shared_slot" in l], \
            z.log_tail(40)
    assert not log_events(z, "slot_drop_failed"), z.log_tail(40)

    # on the feed too
    feed = [json.loads(l) for l in z.zxctl("--json", "feed", check_rc=0).stdout.splitlines()]
    ev = {e["pipeline"]: e for e in feed if e.get("event") == "slot_dropped"}
    assert set(ev) == {"sa-shop", "sa-keep"}, feed
    assert ev["sa-shop"]["slot"] == "zx_sa_shop", ev
    assert "zx_sa_shop dropped" in ev["sa-shop"]["message"], ev

    # nothing left to drop by hand
    p = z.zxctl("drop-slot", "zx_sa_shop")
    assert p.returncode == 1 and "no configured postgres connection has replication slot " \
        "zx_sa_shop" in p.stderr, out_of(p)
    assert_no_password(z, out_of(p), cdc_env)
    z.assert_no_secret()


def test_reload_moving_a_pipeline_keeps_or_drops_its_old_slot(pg, cdc_env):
    """Another role on the same database, same slot: the slot is the
    pipeline's still (the two dsns differ; the slot-drop process finds
    them the same database).  Another slot: the old one is dropped."""
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY)")
    make_slot(pg, db, "zx_sa_mv")
    make_publication(pg, db, "zx_sa_mv", "orders", made_for="sa-mv")
    role, pw = cdc_env.role(replication=True)
    pg.execute(db, f'GRANT SELECT ON orders TO "{role}"')
    z = cdc_env.zxd({"sa-mv": {"connection": "a", "tables": ["orders"]}},
                    {"a": superuser(db), "b": {"user": role, "password": pw, "db": db}})
    settle(z, pg, db, "sa-mv", "zx_sa_mv")

    z.cdc["sa-mv"]["connection"] = "b"
    z.write_config()
    z.signal(signal.SIGHUP)
    line = wait_event(z, "slot_kept", "sa-mv")
    assert (f'slot=zx_sa_mv message="replication slot zx_sa_mv is pipeline sa-mv\'s (on the same '
            f'database: Postgres {z.dsn_shown("a")}): not dropped"') in line, line
    assert "zx_sa_mv" in slots(pg, db)

    z.cdc["sa-mv"]["extra"] = {"slot": "zx_sa_mv2"}
    z.write_config()
    z.signal(signal.SIGHUP)
    line = wait_event(z, "slot_dropped", "sa-mv")
    # the publication (derived from the pipeline's name: zx_sa_mv) is still
    # the pipeline's
    assert (f'slot=zx_sa_mv message="replication slot zx_sa_mv dropped on Postgres '
            f'{z.dsn_shown("b")}; publication zx_sa_mv kept: pipeline sa-mv uses it"') in line, \
        line
    assert "zx_sa_mv" not in slots(pg, db)
    assert not log_events(z, "slot_drop_failed"), z.log_tail(40)
    assert_no_password(z, z.log_text(), cdc_env)


class Forwarder:
    """A TCP port that forwards to the Postgres service once open(): before,
    nothing listens there (a server away)."""

    def __init__(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.srv = None

    def open(self):
        import socket
        import threading
        self.srv = socket.create_server(("127.0.0.1", self.port))
        target = (pg_fixtures.service().host, pg_fixtures.service().port)

        def pipe(a, b):
            try:
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    b.sendall(d)
            except OSError:
                pass
            finally:
                for x in (a, b):
                    try:
                        x.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        def serve():
            while True:
                try:
                    c, _ = self.srv.accept()
                except OSError:
                    return
                u = socket.create_connection(target)
                threading.Thread(target=pipe, args=(c, u), daemon=True).start()
                threading.Thread(target=pipe, args=(u, c), daemon=True).start()
        threading.Thread(target=serve, daemon=True).start()

    def close(self):
        if self.srv:
            self.srv.close()


def test_reload_retire_tries_again_when_the_server_was_away(pg, cdc_env):
    """The retire hook (the slot drop) fails while the server is away, and
    is tried again with backoff: once the server is back, the slot goes."""
    db = cdc_env.db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY)")
    make_slot(pg, db, "zx_sa_away")
    make_publication(pg, db, "zx_sa_away", "orders", made_for="sa-away")
    fw = Forwarder()
    try:
        conn = dict(superuser(db), port=fw.port)
        z = cdc_env.zxd({"sa-away": {"connection": "far", "tables": ["orders"]}}, {"far": conn})
        z.wait_running("writer")
        del z.cdc["sa-away"]
        z.write_config()
        z.signal(signal.SIGHUP)
        line = wait_event(z, "slot_drop_failed", "sa-away")
        assert "slot=zx_sa_away" in line and "trying again in 5 s (attempt 2 of 4)" in line, line
        assert "zx_sa_away" in slots(pg, db)
        fw.open()   # the server is back
        line = wait_event(z, "slot_dropped", "sa-away")
        assert (f'slot=zx_sa_away message="replication slot zx_sa_away dropped on Postgres '
                f'{z.dsn_shown("far")}; publication zx_sa_away (made by zx for pipeline '
                'sa-away) dropped"') in line, line
        assert "zx_sa_away" not in slots(pg, db)
        assert "zx_sa_away" not in publications(pg, db)
        assert_no_password(z, z.log_text(), cdc_env)
    finally:
        fw.close()
