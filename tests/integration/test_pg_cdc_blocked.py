"""
Postgres change data capture: what one table's trouble does (issue 18,
point 16), on each workspace backend (ZX_WORKSPACES).

What it covers: source columns that differ only in case ("UPPER" and
upper) mirrored into distinct columns on SQLite, whose identifiers ignore
case (the second one is stored as upper_2, README "Change data capture"),
their inserts and updates landing in the right column, and the mapping
kept over a restart; Postgres keeps both names as they are.  The history
of a 1,590-column table, whose row would not fit a Postgres row, kept as
one JSON object per change (_row), said once in the log.
"""

import json

import pytest

from conftest import wait_for
from pg_cdc_fixtures import make_cdc_env, superuser

DEADLINE = 90


@pytest.fixture
def mirror_env(pg, workspace):
    yield from make_cdc_env(pg, workspace)


def test_columns_differing_only_in_case_are_distinct(pg, mirror_env):
    db = mirror_env.db()
    pg.execute(db, 'CREATE TABLE ccase (id int PRIMARY KEY, "UPPER" text, upper text)')
    pg.execute(db, "INSERT INTO ccase VALUES (1, 'U1', 'l1'), (2, 'U2', NULL)")
    z = mirror_env.zxd({"cc": {"connection": "db", "tables": ["ccase"],
                           "extra": {"history": "true"}}}, {"db": superuser(db)})
    # SQLite sees "UPPER" and upper as one name: the later gets upper_2
    low = "upper_2" if z.workspace == "sqlite" else "upper"
    cols = ["id", "UPPER", low]

    def rows():
        if not z.table_exists("ccase"):
            return None
        return z.query(f'SELECT id, "UPPER", "{low}" FROM ccase ORDER BY id')

    def want(rows_want):
        wait_for(lambda: rows() == rows_want,
                 lambda: f"ccase to be {rows_want}, is {rows()} {z.columns('ccase')}; "
                         f"log:\n{z.log_text()[-3000:]}",
                 deadline=DEADLINE)

    want([(1, "U1", "l1"), (2, "U2", None)])
    assert [c for c in z.columns("ccase") if c.lower() in ("upper", "upper_2")] == cols[1:]
    pg.execute(db, "INSERT INTO ccase VALUES (3, NULL, 'l3')")
    pg.execute(db, 'UPDATE ccase SET "UPPER" = \'U1b\' WHERE id = 1')
    pg.execute(db, "UPDATE ccase SET upper = 'l2b' WHERE id = 2")
    want([(1, "U1b", "l1"), (2, "U2", "l2b"), (3, None, "l3")])
    hist = z.query(f'SELECT _op, id, "UPPER", "{low}" FROM "ccase__changes" ORDER BY _lsn')
    assert hist[-3:] == [("insert", 3, None, "l3"), ("update", 1, "U1b", "l1"),
                         ("update", 2, "U2", "l2b")], hist
    assert "duplicate column" not in z.log_text()

    # a restart keeps the mapping: the same columns, no new one
    z.stop()
    pg.execute(db, 'UPDATE ccase SET upper = \'l1c\', "UPPER" = \'U1c\' WHERE id = 1')
    pg.execute(db, "DELETE FROM ccase WHERE id = 3")
    z.start()
    want([(1, "U1c", "l1c"), (2, "U2", "l2b")])
    assert [c for c in z.columns("ccase") if c.lower().startswith("upper")] == cols[1:]
    assert "duplicate column" not in z.log_text()


def test_history_of_a_wide_table_is_kept_as_json(pg, mirror_env):
    """A 1,590-column table's history row would not fit a Postgres row
    ("row is too big": every change a reject, nothing in the log): its
    __changes keeps the row as one JSON object in _row, said once."""
    db = mirror_env.db()
    ncols = 1589
    cols = ", ".join(f"c{i} int" for i in range(1, ncols + 1))
    pg.execute(db, f"CREATE TABLE wide (id int PRIMARY KEY, {cols})")
    vals = ", ".join(str(i) for i in range(1, ncols + 1))
    pg.execute(db, f"INSERT INTO wide VALUES (1, {vals})")
    z = mirror_env.zxd({"wb": {"connection": "db", "tables": ["wide"],
                           "extra": {"history": "true"}}}, {"db": superuser(db)})
    wait_for(lambda: z.table_exists("wide") and z.count("wide") == 1, "the copied row",
             deadline=DEADLINE)
    pg.execute(db, f"INSERT INTO wide VALUES (2, {vals})")
    pg.execute(db, "UPDATE wide SET c1589 = -1 WHERE id = 1")
    pg.execute(db, "DELETE FROM wide WHERE id = 2")
    wait_for(lambda: z.table_exists("wide__changes") and z.count("wide__changes") == 3,
             lambda: f"3 changes in wide__changes; log:\n{z.log_text()[-3000:]}",
             deadline=DEADLINE)
    assert list(z.columns("wide__changes")) == ["_op", "_lsn", "_commit_time", "_xid", "_row"]
    hist = z.query('SELECT _op, _row FROM "wide__changes" ORDER BY _lsn')
    rows = [(op, json.loads(r) if isinstance(r, str) else r) for op, r in hist]
    assert [op for op, _ in rows] == ["insert", "update", "delete"], hist
    assert rows[0][1]["id"] == 2 and rows[0][1]["c1"] == 1 and rows[0][1]["c1589"] == 1589
    assert len(rows[0][1]) == ncols + 1
    assert rows[1][1]["id"] == 1 and rows[1][1]["c1589"] == -1
    assert rows[2][1]["id"] == 2
    assert z.query("SELECT c1589 FROM wide") == [(-1,)]
    assert not z.table_exists("wide__changes__rejects") and not z.table_exists("wide__rejects")
    # said after the commit that made the rows visible: wait for it
    log = wait_for(lambda: "event=history_as_json" in z.log_text() and z.log_text(),
                   lambda: f"the history_as_json warning; log:\n{z.log_text()[-3000:]}")
    assert log.count("event=history_as_json") == 1, log[-3000:]
    assert "table=wide columns=1590" in log
