"""
Postgres change data capture: what one table's trouble does (issue 18,
point 16), on each workspace backend (ZX_WORKSPACES).

What it covers: source columns that differ only in case ("UPPER" and
upper) mirrored into distinct columns on SQLite, whose identifiers ignore
case (the second one is stored as upper_2, README "Change data capture"),
their inserts and updates landing in the right column, and the mapping
kept over a restart; Postgres keeps both names as they are.
"""

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
    z = mirror_env.zxd({"c": {"connection": "db", "tables": ["ccase"],
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
                 lambda: f"ccase to be {rows_want}, is {rows()} {z.columns('ccase')}; log:\n{z.log_text()[-3000:]}",
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
