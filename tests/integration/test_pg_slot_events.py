"""
What the Postgres CDC worker says about its replication slot (issue 18,
points 17 and 19): a slot dropped (or invalidated) while zxd was stopped is
never a silent re-copy, and a slot whose creation waits behind an open
transaction says what it waits for.

Real PostgreSQL 15 (tests/services/postgres) as the source; each
workspace backend holds the mirrors.
"""

import psycopg
import pytest

from conftest import wait_for
from pg_cdc_fixtures import make_cdc_env, superuser

DEADLINE = 90


@pytest.fixture
def mirror_env(pg, workspace):
    yield from make_cdc_env(pg, workspace)


def source_error(z, name):
    """What the source says now ("" when nothing)."""
    return (z.pipeline(name) or {}).get("source_error") or ""


def any_error(z, name):
    p = z.pipeline(name) or {}
    return (p.get("source_error") or "") + " | " + (p.get("last_error") or "")


def test_a_dropped_slot_stops_the_pipeline_then_resync_copies_and_marks_the_gap(pg, mirror_env):
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE o (id int PRIMARY KEY, v text)")
    pg.execute(db, "INSERT INTO o SELECT g, 'v' || g FROM generate_series(1, 100) g")
    z = mirror_env.zxd({"o": {"connection": "db", "tables": ["o"],
                              "extra": {"history": "true"}}}, {"db": superuser(db)})
    z.wait_count("o", 100, deadline=DEADLINE)
    pg.execute(db, "UPDATE o SET v = 'streamed' WHERE id = 1")
    wait_for(lambda: z.count("o", "v = 'streamed'") == 1, "the update streamed",
             deadline=DEADLINE)

    # someone drops the slot while zxd is stopped; changes go on meanwhile
    z.stop()
    pg.execute("postgres", "SELECT pg_drop_replication_slot('zx_o')")
    pg.execute(db, "UPDATE o SET v = 'while gone' WHERE id = 2")
    pg.execute(db, "DELETE FROM o WHERE id = 3")
    z.start()

    # the pipeline stops with what happened and what to do; nothing copied,
    # no new slot made
    want = "replication slot zx_o is gone from Postgres"
    wait_for(lambda: want in any_error(z, "o"),
             lambda: f"the pipeline's error names the lost slot: {z.pipeline('o')}",
             deadline=DEADLINE)
    err = any_error(z, "o")
    assert "set `slot_lost: resync` on pipeline o and run `zxctl reload`" in err, err
    # failed at once: a restart cannot bring the changes back
    wait_for(lambda: (z.pipeline("o") or {}).get("state") == "failed",
             lambda: f"the pipeline failed: {z.pipeline('o')}", deadline=DEADLINE)
    assert z.pipeline("o")["restarts"] == 0, z.pipeline("o")
    log = z.log_text()
    assert "event=slot_lost pipeline=o slot=zx_o" in log and "action=fail" in log, log[-3000:]
    assert "level=error" in log.split("event=slot_lost", 1)[0].rsplit("\n", 1)[-1], \
        "slot_lost is logged at error level"
    assert pg.query("postgres", "SELECT count(*) FROM pg_replication_slots "
                                "WHERE slot_name = 'zx_o'") == [(0,)]
    assert z.log_text().count("event=copy_table") == 1, "copied again without a word"
    assert z.count("o", "id = 3") == 1     # the mirror stays as it was

    # the operator asks for a resync: the tables are copied again, the
    # history records the gap, the stream goes on
    z.cdc["o"]["extra"]["slot_lost"] = "resync"
    z.write_config()
    z.zxctl("reload", check_rc=0)
    wait_for(lambda: z.count("o", "id = 3") == 0 and z.count("o", "v = 'while gone'") == 1,
             "the mirror copied again", deadline=DEADLINE)
    gap = z.query('SELECT _lsn FROM "o__changes" WHERE _op = \'gap\'')
    assert len(gap) == 1, gap
    a, b = gap[0][0].split("..")
    assert a and b and a != b, gap
    pg.execute(db, "INSERT INTO o VALUES (1000, 'after')")
    wait_for(lambda: z.count("o", "id = 1000") == 1, "streaming after the resync",
             deadline=DEADLINE)
    wait_for(lambda: source_error(z, "o") == "", lambda: f"error cleared: {z.pipeline('o')}",
             deadline=DEADLINE)
    assert "event=resync_done pipeline=o" in z.log_text()
    ops = [r[0] for r in z.query('SELECT _op FROM "o__changes" ORDER BY _lsn')]
    assert ops.count("gap") == 1 and "insert" in ops, ops


def drop_slot_while_stopped_then_start(pg, db, z):
    """Stop zxd, drop its slot, change the source meanwhile, start again:
    the pipeline must fail naming the lost slot, not make a new one."""
    z.stop()
    pg.execute("postgres", "SELECT pg_drop_replication_slot('zx_o')")
    pg.execute(db, "INSERT INTO o VALUES (-1, 'while gone')")
    z.start()
    wait_for(lambda: "replication slot zx_o is gone from Postgres" in any_error(z, "o"),
             lambda: f"the pipeline's error names the lost slot: {z.pipeline('o')}\n"
                     + z.log_tail(20), deadline=DEADLINE)
    assert pg.query("postgres", "SELECT count(*) FROM pg_replication_slots "
                                "WHERE slot_name = 'zx_o'") == [(0,)]


def test_a_slot_made_with_nothing_streamed_yet_is_known_when_dropped(pg, mirror_env):
    """No copy and no change yet: zx still knows it made the slot (the store
    has its consistent point), so changes made while it was gone are not
    skipped without a word."""
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE o (id int PRIMARY KEY, v text)")
    z = mirror_env.zxd({"o": {"connection": "db", "tables": ["o"],
                              "extra": {"initial_copy": "false"}}}, {"db": superuser(db)})
    # the slot's consistent point, acknowledged by the writer: only then
    # is it confirmed (until then the worker holds its position at 0/0)
    wait_for(lambda: ((z.pipeline("o") or {}).get("source_status") or {})
             .get("confirmed_lsn", "0/0") not in ("0/0", ""),
             lambda: f"a position confirmed: {z.pipeline('o')}", deadline=DEADLINE)
    drop_slot_while_stopped_then_start(pg, db, z)


def test_a_transaction_larger_than_a_batch_leaves_its_position_in_the_store(pg, mirror_env):
    """A transaction whose rows go out in several frames before its commit
    arrives: the commit's position still reaches the store (once lost, a
    dropped slot went unnoticed after such a transaction)."""
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE o (id int PRIMARY KEY, v text)")
    pg.execute(db, "INSERT INTO o VALUES (0, 'copied')")
    z = mirror_env.zxd({"o": {"connection": "db", "tables": ["o"]}}, {"db": superuser(db)},
                       server_extra="ring_size: 2MiB", max_body_size="64KiB")
    z.wait_count("o", 1, deadline=DEADLINE)
    # one transaction of about 6 MB: several frames of a 2 MiB ring
    pg.execute(db, "INSERT INTO o SELECT g, repeat('x', 200) FROM generate_series(1, 30000) g")
    end = pg.query("postgres", "SELECT pg_current_wal_lsn()::text")[0][0]
    z.wait_count("o", 30001, deadline=DEADLINE)
    # zx tells the server a position once the writer has stored it
    wait_for(lambda: pg.query("postgres", "SELECT confirmed_flush_lsn >= %s::pg_lsn FROM "
                                          "pg_replication_slots WHERE slot_name = 'zx_o'",
                              (end,)) == [(True,)],
             lambda: f"the slot confirmed past the transaction: {z.pipeline('o')}",
             deadline=DEADLINE)
    drop_slot_while_stopped_then_start(pg, db, z)


def test_slot_creation_behind_an_open_transaction_says_what_it_waits_for(pg, mirror_env):
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE w (id int PRIMARY KEY, v text)")
    pg.execute(db, "INSERT INTO w VALUES (1, 'a')")
    blocker = psycopg.connect(pg.dsn_for(db), application_name="the-blocker")
    try:
        cur = blocker.cursor()
        cur.execute("INSERT INTO w VALUES (2, 'b')")     # holds an xid, open
        pid = blocker.info.backend_pid
        z = mirror_env.zxd({"w": {"connection": "db", "tables": ["w"]}},
                           {"db": superuser(db)})
        wait_for(lambda: f"transaction of pid {pid}" in source_error(z, "w"),
                 lambda: f"the wait named pid {pid}: {z.pipeline('w')}", deadline=DEADLINE)
        err = source_error(z, "w")
        assert "creating replication slot zx_w has waited" in err, err
        assert "the-blocker" in err and "pg_terminate_backend" in err, err
        st = (z.pipeline("w") or {}).get("source_status") or {}
        assert st.get("state") == "creating_slot" and st.get("blocker_pid") == pid, st
        assert f"event=slot_wait pipeline=w slot=zx_w blocker_pid={pid}" in z.log_text()
        blocker.commit()
    finally:
        blocker.close()
    z.wait_count("w", 2, deadline=DEADLINE)
    wait_for(lambda: source_error(z, "w") == "", lambda: f"error cleared: {z.pipeline('w')}",
             deadline=DEADLINE)
    assert "event=slot_wait_over pipeline=w" in z.log_text()
