"""
One mirror table the workspace refuses blocks only itself (issue 18,
point 16(d)), on each workspace backend (ZX_WORKSPACES).

What it covers: a Postgres CDC pipeline mirroring two tables, one of which
the workspace cannot take (an object of its name that is not a table: an
index on SQLite, a table without columns on Postgres, so that CREATE
TABLE fails every time).  The other table keeps being mirrored and the
slot's confirmed_flush_lsn advances; `zxctl status` shows the pipeline
running with "blocked tables: <table> (<why>): N changes parked"; the log
says so once.  The writer killed with SIGKILL meanwhile loses nothing.
Once the cause is gone (and `zxctl reload` retries at once), the parked
changes are applied in their order (history included, each change once),
the mirror equals its source and the log says the table recovered.  With
a small max_parked_bytes the pipeline is held back as a whole, saying
why, and goes on once the cause is gone.  The same for a Kafka pipeline
of Debezium events whose table template makes two mirrors from one
partition.
"""

import json
import os
import signal
import sqlite3

import pytest

from conftest import pid_alive, uid, wait_for
from kafka_fixtures import kafka, make_kzxd  # noqa: F401
from pg_cdc_fixtures import make_cdc_env, superuser

DEADLINE = 120


@pytest.fixture
def mirror_env(pg, workspace):
    yield from make_cdc_env(pg, workspace)


def ws_sql(z, script):
    """Run SQL statements on z's workspace as someone else than zx would."""
    if z.workspace == "postgres":
        z.pg.execute(z.pg_db, script)
        return
    os.makedirs(z.data_dir, exist_ok=True)
    db = sqlite3.connect(z.db_path)
    try:
        db.executescript(script)
        db.commit()
    finally:
        db.close()


def block_table(z, name):
    """Make `name` impossible to create as a table in z's workspace."""
    if z.workspace == "postgres":
        ws_sql(z, f'CREATE TABLE "{name}" ()')
    else:
        ws_sql(z, f'CREATE TABLE base(a INTEGER); CREATE INDEX "{name}" ON base(a);')


def unblock_table(z, name):
    if z.workspace == "postgres":
        ws_sql(z, f'DROP TABLE "{name}"')
    else:
        ws_sql(z, f'DROP INDEX "{name}"')


def source_rows(pg, db, table):
    return pg.query(db, f"SELECT id, v FROM {table} ORDER BY id")


def mirror_rows(z, table):
    if not z.table_exists(table):
        return None
    return [tuple(r) for r in z.query(f'SELECT id, v FROM "{table}" ORDER BY id')]


def wait_caught_up(pg, db, slot):
    end = pg.query(db, "SELECT pg_current_wal_insert_lsn()::text")[0][0]
    wait_for(lambda: pg.query(db, "SELECT confirmed_flush_lsn >= %s::pg_lsn FROM "
                                  "pg_replication_slots WHERE slot_name = %s",
                              (end, slot)) == [(True,)],
             f"slot {slot} to confirm the WAL up to {end}", deadline=DEADLINE)


def wait_same(z, pg, db, table):
    wait_for(lambda: mirror_rows(z, table) == [tuple(r) for r in source_rows(pg, db, table)],
             lambda: f"{table} to equal its source {source_rows(pg, db, table)}: is "
                     f"{mirror_rows(z, table)}; log:\n{z.log_text()[-3000:]}",
             deadline=DEADLINE)


def test_a_refused_table_blocks_only_itself(pg, mirror_env):
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE good (id int PRIMARY KEY, v text);"
                   "CREATE TABLE bad (id int PRIMARY KEY, v text);"
                   "INSERT INTO good VALUES (1, 'g1'), (2, 'g2');"
                   "INSERT INTO bad VALUES (1, 'b1'), (2, 'b2');")
    z = mirror_env.zxd({"c": {"connection": "db", "tables": ["good", "bad"],
                           "extra": {"history": "true"}}}, {"db": superuser(db)},
                       start=False)
    block_table(z, "bad")
    z.start()

    # the other table is mirrored, its changes too, while bad's wait
    wait_same(z, pg, db, "good")
    pg.execute(db, "INSERT INTO bad VALUES (3, 'b3');"
                   "UPDATE bad SET v = 'b1x' WHERE id = 1;"
                   "DELETE FROM bad WHERE id = 2;"
                   "UPDATE bad SET v = 'b3x' WHERE id = 3;"
                   "INSERT INTO good VALUES (3, 'g3');")
    wait_same(z, pg, db, "good")
    wait_caught_up(pg, db, "zx_c")

    p = z.pipeline("c")
    assert p["state"] == "running" and p["blocked_reason"] is None, p
    assert p["blocked_tables"].startswith("bad ("), p
    assert "changes parked" in p["blocked_tables"], p
    text = z.zxctl("status", check_rc=0).stdout
    assert "  blocked tables: bad (" in text, text
    line = [ln for ln in text.splitlines() if ln.startswith("c ")][0]
    assert " running " in line, line
    assert z.log_text().count("event=table_blocked pipeline=c table=bad") == 1

    # a writer killed meanwhile loses nothing of what it parked
    old = z.pids()["writer"]
    os.kill(old, signal.SIGKILL)
    wait_for(lambda: not pid_alive(old), "the killed writer to be gone")
    z.wait_running("writer", not_pid=old)
    pg.execute(db, "INSERT INTO bad VALUES (4, 'b4'); UPDATE bad SET v = 'b4x' WHERE id = 4;"
                   "INSERT INTO good VALUES (4, 'g4');")
    wait_same(z, pg, db, "good")
    wait_for(lambda: (z.pipeline("c").get("blocked_tables") or "").startswith("bad ("),
             lambda: f"bad still parked after the restart: {z.pipeline('c')}")

    # the cause gone: the parked changes are applied, in order, once each
    unblock_table(z, "bad")
    z.zxctl("reload", check_rc=0)
    wait_same(z, pg, db, "bad")
    wait_for(lambda: z.pipeline("c").get("blocked_tables") is None,
             lambda: f"bad no longer blocked: {z.pipeline('c')}")
    hist = [tuple(r) for r in z.query('SELECT _op, id, v FROM "bad__changes" ORDER BY _lsn')]
    changes = [("insert", 3, "b3"), ("update", 1, "b1x"), ("delete", 2, None),
               ("update", 3, "b3x"), ("insert", 4, "b4"), ("update", 4, "b4x")]
    assert hist[-len(changes):] == changes, hist
    assert len(hist) == len(set(hist)), hist
    assert z.query("SELECT count(*) FROM _zx_parked") == [(0,)]
    assert "event=table_unblocked pipeline=c table=bad" in z.log_text()
    # and it is live again
    pg.execute(db, "INSERT INTO bad VALUES (5, 'b5')")
    wait_same(z, pg, db, "bad")
    assert z.pipeline("c")["state"] == "running"


def test_past_max_parked_bytes_the_pipeline_is_held_back(pg, mirror_env):
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE good (id int PRIMARY KEY, v text);"
                   "CREATE TABLE bad (id int PRIMARY KEY, v text);"
                   "INSERT INTO good VALUES (1, 'g1');"
                   "INSERT INTO bad VALUES (1, 'b1');")
    z = mirror_env.zxd({"c": {"connection": "db", "tables": ["good", "bad"],
                           "extra": {"max_parked_bytes": "1KiB"}}}, {"db": superuser(db)},
                       start=False)
    block_table(z, "bad")
    z.start()
    wait_same(z, pg, db, "good")
    for i in range(2, 40):
        pg.execute(db, f"INSERT INTO bad VALUES ({i}, '{'x' * 100}')")

    def held():
        p = z.pipeline("c")
        return p if p["state"] == "blocked" else None
    p = wait_for(held, lambda: f"c to be held back: {z.pipeline('c')}", deadline=DEADLINE)
    assert "max_parked_bytes" in p["blocked_reason"], p
    assert "bad" in p["blocked_reason"], p

    unblock_table(z, "bad")
    z.zxctl("reload", check_rc=0)
    wait_same(z, pg, db, "bad")
    pg.execute(db, "INSERT INTO good VALUES (2, 'g2')")
    wait_same(z, pg, db, "good")
    wait_for(lambda: z.pipeline("c")["state"] == "running",
             lambda: f"c running again: {z.pipeline('c')}")


def dbz_event(op, row, lsn, table, before=None):
    return {"before": before, "after": row if op != "d" else None,
            "source": {"connector": "postgresql", "db": "shop", "schema": "public",
                       "table": table, "lsn": lsn, "ts_ms": 1700000000000},
            "op": op}


def test_debezium_a_refused_table_blocks_only_itself(kafka, make_kzxd):  # noqa: F811
    topic = kafka.create_topic(f"tb{uid()[:8]}.public.mixed")
    z = make_kzxd({"d": {"connection": "c", "topic": topic, "table": '"{source.table}"',
                         "extra": {"format": "debezium", "history": "true"}}},
                  {"c": kafka.connection("plaintext")}, start=False)
    block_table(z, "bad")
    z.start()
    # one partition: bad's events come first, good's after them
    events = [dbz_event("c", {"id": 1, "v": "b1"}, 100, "bad"),
              dbz_event("c", {"id": 1, "v": "g1"}, 110, "good"),
              dbz_event("u", {"id": 1, "v": "b1x"}, 120, "bad"),
              dbz_event("c", {"id": 2, "v": "b2"}, 130, "bad"),
              dbz_event("d", None, 140, "bad", before={"id": 2}),
              dbz_event("c", {"id": 2, "v": "g2"}, 150, "good")]
    keys = [json.dumps({"id": (e["after"] or e["before"])["id"]}) for e in events]
    kafka.produce(topic, [json.dumps(e) for e in events], keys=keys, partition=0)

    def good():
        return z.table_exists("good") and z.query('SELECT id, v FROM "good" ORDER BY id')
    wait_for(lambda: good() == [(1, "g1"), (2, "g2")],
             lambda: f"good mirrored past bad's events: {good()}; log:\n{z.log_text()[-3000:]}",
             deadline=DEADLINE)
    wait_for(lambda: (z.pipeline("d").get("blocked_tables") or "").startswith("bad ("),
             lambda: f"bad parked: {z.pipeline('d')}", deadline=DEADLINE)
    assert z.pipeline("d")["state"] == "running"

    unblock_table(z, "bad")
    z.zxctl("reload", check_rc=0)

    def bad():
        return z.table_exists("bad") and z.query('SELECT id, v FROM "bad" ORDER BY id')
    wait_for(lambda: bad() == [(1, "b1x")], lambda: f"bad applied in order: {bad()}",
             deadline=DEADLINE)
    wait_for(lambda: z.table_exists("bad__changes") and z.count("bad__changes") == 4,
             lambda: f"bad's 4 changes in its history once each: "
                     f"{z.query('SELECT * FROM bad__changes') if z.table_exists('bad__changes') else None}",
             deadline=DEADLINE)
    wait_for(lambda: z.pipeline("d").get("blocked_tables") is None,
             lambda: f"bad no longer blocked: {z.pipeline('d')}")
