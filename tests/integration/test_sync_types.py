"""
A reverse sync's column types come from the query, not from its first row
(issue 18, point 7).  On the SQLite workspace an expression has no declared
type: `coalesce(discount, 0)` whose first row is 0 once made the column an
integer and nulled 0.1, 0.15 and 0.2; a CASE whose first value is NULL
made its numbers text; a column of integers then text nulled the text.
Every value must arrive, with the widest type its values need, on every
destination kind (SQLite, PostgreSQL, MariaDB tables; CSV, JSON and
Parquet files, read back with pyarrow), through the streamed path
(replace, no key) and the spilled one (upsert by key).  On both workspace
backends (Postgres declares its types: the same result must arrive).
"""

import csv
import json
import os

import pytest

from sync_fixtures import make_sync_env, sqlite_rows
from test_sync_dests import Dest, mariadb  # noqa: F401 (a fixture)

COLS = ["id", "discount", "later", "mixed", "blank"]
EXPECTED = {
    "discount": [0, 0.1, 0.15, 0.2],
    "later": [None, 20.5, 30.5, 40.5],
    "mixed": ["1", "2", "x3", "x4"],
    "blank": [None, None, None, None],
}


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def make_orders(z):
    if z.workspace == "postgres":
        z.ws_exec("CREATE TABLE orders (id bigint PRIMARY KEY, discount double precision)")
        later = "CASE WHEN id = 1 THEN NULL ELSE (id * 10 + 0.5)::float8 END"
        mixed = "CASE WHEN id < 3 THEN id::text ELSE 'x' || id END"
    else:
        z.ws_exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, discount REAL)")
        later = "CASE WHEN id = 1 THEN NULL ELSE id * 10 + 0.5 END"
        mixed = "CASE WHEN id < 3 THEN id ELSE 'x' || id END"
    z.ws_exec("INSERT INTO orders VALUES (1, NULL), (2, 0.1), (3, 0.15), (4, 0.2)")
    return (f"SELECT id, coalesce(discount, 0) AS discount, {later} AS later, "
            f"{mixed} AS mixed, NULL AS blank FROM orders ORDER BY id")


def check(rows, text_only=False):
    """rows: dicts by column name, in id order.  text_only: every value
    is text (CSV), so numbers are compared by value."""
    assert [int(r["id"]) for r in rows] == [1, 2, 3, 4], rows
    for col, want in EXPECTED.items():
        got = [r.get(col) for r in rows]
        if text_only:
            got = [None if g in ("", None) else g for g in got]
        for g, w in zip(got, want):
            if w is None:
                assert g is None, (col, got)
            elif isinstance(w, str):
                assert g == w, (col, got)
            else:
                assert g is not None, (col, got, "nulled")
                if not text_only:
                    assert not isinstance(g, str), (col, got, "a number made text")
                assert abs(float(g) - w) < 1e-9, (col, got)


def table_rows(d):
    cols = ", ".join(COLS)
    table = "orders_out"
    if d.kind == "sqlite":
        got = sqlite_rows(d.path, f"SELECT {cols} FROM {table} ORDER BY id")
    elif d.kind == "postgres":
        got = d.pg.query(d.db, f"SELECT {cols} FROM {table} ORDER BY id")
    else:
        with d.my.cursor() as cur:
            cur.execute(f"SELECT {cols} FROM {d.dbname}.{table} ORDER BY id")
            got = cur.fetchall()
    return [dict(zip(COLS, r)) for r in got]


@pytest.mark.parametrize("kind,mode", [("sqlite", "replace"), ("sqlite", "upsert"),
                                       ("postgres", "replace"), ("postgres", "upsert"),
                                       ("mysql", "replace"), ("mysql", "upsert")])
def test_table_types_from_all_values(sync_env, pg, request, kind, mode):
    mfx = request.getfixturevalue("mariadb") if kind == "mysql" else None
    z = sync_env.zxd({}, {"alice": ["orders"]}, start=False)
    d = Dest(kind, sync_env, pg, mfx, z.root)
    request.addfinalizer(d.close)
    query = make_orders(z)
    table = "public.orders_out" if kind == "postgres" else "orders_out"
    z.syncs = {"s": {"query": query, "mode": mode,
                     "key": ["id"] if mode == "upsert" else None,
                     "dest": {"connection": "d", "table": table}}}
    z.connections = {"d": d.conn}
    z.write_config()
    z.start()
    r = z.run("s")
    assert r["rows_sent"] == 4
    assert r.get("values_nulled", 0) == 0, r
    check(table_rows(d))
    if mode == "upsert":
        # the same result: its row hashes (made with the final types) match
        assert z.run("s")["rows_sent"] == 0


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_file_types_from_all_values(sync_env, fmt):
    z = sync_env.zxd({}, {"alice": ["orders"]}, start=False)
    query = make_orders(z)
    z.syncs = {"s": {"query": query, "mode": "replace",
                     "dest": {"files": {"path": "var/exports/out", "format": fmt}}}}
    z.write_config()
    z.start()
    r = z.run("s")
    assert r["rows_sent"] == 4 and r.get("values_nulled", 0) == 0, r
    out = os.path.join(z.root, "var", "exports", "out")
    files = [os.path.join(out, f) for f in os.listdir(out) if f.endswith("." + fmt)]
    assert len(files) == 1, os.listdir(out)
    if fmt == "csv":
        with open(files[0], newline="") as f:
            check(list(csv.DictReader(f)), text_only=True)
    elif fmt == "json":
        check([json.loads(line) for line in open(files[0]) if line.strip()])
    else:
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        t = pq.read_table(files[0])
        check(t.to_pylist())
        assert t.schema.field("discount").type == pa.float64()
        assert t.schema.field("later").type == pa.float64()
        assert t.schema.field("mixed").type == pa.string()


def test_bigger_result_types_change_after_the_first_batch(sync_env, request):
    """The value that widens a column comes thousands of rows (and
    several batches) after the first: still no value is nulled."""
    z = sync_env.zxd({}, {"alice": ["nums"]}, start=False)
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE nums (id {t['int']} PRIMARY KEY, v {t['real']})")
    z.ws_exec("INSERT INTO nums SELECT x, x FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
              "SELECT x + 1 FROM c WHERE x < 5000) SELECT x FROM c) s"
              if z.workspace == "sqlite" else
              "INSERT INTO nums SELECT x, x FROM generate_series(1, 5000) x")
    z.ws_exec("UPDATE nums SET v = 4999.5 WHERE id = 5000")
    path = os.path.join(z.root, "dest.db")
    z.connections = {"d": {"kind": "sqlite", "path": path}}
    expr = "v" if z.workspace == "postgres" else "CASE WHEN id < 5000 THEN CAST(v AS INTEGER) ELSE v END"
    z.syncs = {"s": {"query": f"SELECT id, {expr} AS v FROM nums ORDER BY id", "mode": "replace",
                     "dest": {"connection": "d", "table": "nums"}, "extra": {"batch_rows": 100}}}
    z.write_config()
    z.start()
    r = z.run("s")
    assert r["rows_sent"] == 5000 and r.get("values_nulled", 0) == 0, r
    assert sqlite_rows(path, "SELECT v FROM nums WHERE id IN (1, 5000) ORDER BY id") == \
        [(1.0,), (4999.5,)]
    assert sqlite_rows(path, "SELECT count(*) FROM nums WHERE v IS NULL") == [(0,)]


@pytest.mark.postgres_only
def test_postgres_numeric_and_null_expressions_keep_every_value(sync_env):
    """Postgres declares an expression's type: numeric without a precision
    (coalesce(numeric(10,2), 0) * 1.5) arrives as exact text, an untyped
    NULL as text; nothing is nulled."""
    z = sync_env.zxd({}, {"alice": ["prices"]}, start=False)
    z.ws_exec("CREATE TABLE prices (id bigint PRIMARY KEY, p numeric(10,2))",
              "INSERT INTO prices VALUES (1, NULL), (2, 0.10), (3, 12345678.99)")
    path = os.path.join(z.root, "dest.db")
    z.connections = {"d": {"kind": "sqlite", "path": path}}
    z.syncs = {"s": {"query": "SELECT id, coalesce(p, 0) * 1.5 AS n, p, NULL AS z FROM prices "
                              "ORDER BY id", "mode": "replace",
                     "dest": {"connection": "d", "table": "prices"}}}
    z.write_config()
    z.start()
    r = z.run("s")
    assert r["rows_sent"] == 3 and r.get("values_nulled", 0) == 0, r
    import decimal
    got = sqlite_rows(path, "SELECT n, p, z FROM prices ORDER BY id")
    assert [decimal.Decimal(str(g[0])) for g in got] == \
        [decimal.Decimal("0"), decimal.Decimal("0.15"), decimal.Decimal("18518518.485")]
    assert [None if g[1] is None else decimal.Decimal(str(g[1])) for g in got] == \
        [None, decimal.Decimal("0.10"), decimal.Decimal("12345678.99")]
    assert [g[2] for g in got] == [None, None, None]


@pytest.mark.sqlite_only
def test_a_sqlite_mirrors_declared_types_reach_a_parquet_file(sync_env):
    """A SQLite mirror declares numeric(10,2) as NUMERIC TEXT(10,2), date as
    DATE, time as TIME (workspace_sqlite_schema.c): a sync reading it
    writes decimal(10,2), date and text columns; a value the declared type
    cannot hold ('infinity') makes the column text instead of NULL."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import datetime
    import decimal
    z = sync_env.zxd({}, {"alice": ["m"]}, start=False)
    z.ws_exec('CREATE TABLE m (id INTEGER PRIMARY KEY, price "NUMERIC TEXT(10,2)", '
              'day DATE, at TIME, odd DATE)',
              "INSERT INTO m VALUES (1, '1.50', '2024-02-29', '13:14:15', '2024-01-01'), "
              "(2, '12345678.99', '0001-01-01', '00:00:00', 'infinity')")
    z.syncs = {"s": {"query": "SELECT id, price, day, at, odd FROM m ORDER BY id",
                     "mode": "replace",
                     "dest": {"files": {"path": "var/exports/out", "format": "parquet"}}}}
    z.write_config()
    z.start()
    r = z.run("s")
    assert r["rows_sent"] == 2 and r.get("values_nulled", 0) == 0, r
    out = os.path.join(z.root, "var", "exports", "out")
    [f] = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".parquet")]
    t = pq.read_table(f)
    assert t.schema.field("price").type == pa.decimal128(10, 2)
    assert t.schema.field("day").type == pa.date32()
    assert t.schema.field("odd").type == pa.string()
    rows = t.to_pylist()
    assert [x["price"] for x in rows] == [decimal.Decimal("1.50"), decimal.Decimal("12345678.99")]
    assert [x["day"] for x in rows] == [datetime.date(2024, 2, 29), datetime.date(1, 1, 1)]
    assert [x["at"] for x in rows] == ["13:14:15", "00:00:00"]
    assert [x["odd"] for x in rows] == ["2024-01-01", "infinity"]
