"""
`zxctl verify NAME [--table T]` (issue 18, point 11): compare a Postgres
CDC pipeline's mirrors with their source and report the keys that differ
and how, on each workspace backend (ZX_WORKSPACES: the module runs once per
backend).

What it covers: a mirror that matches (every type of test_pg_cdc.py's
`kinds`, NULLs and edge values included) verifies clean with exit 0; a
mirror corrupted behind zx's back (a value changed, a row deleted, an
extra row inserted, a column set NULL) is reported key by key (missing,
extra, which columns differ) with exit 4, and --repair re-copies exactly
those keys through the pipeline (a second verify is clean); a verify while the source keeps
changing reports no false difference; `zxctl status` shows the last
verify (after a restart of zxd too); --table and the errors (unknown table, a pipeline that is not
postgres); on a Postgres workspace a table of 20,000 rows is hashed by key
ranges on both servers and only the ranges that differ are compared key by
key (the same keys reported, the answer counting ranges).
"""

import json
import os
import sqlite3
import threading

import pytest

from conftest import wait_for
from pg_cdc_fixtures import make_cdc_env, superuser
from test_pg_cdc import KINDS_COLS, KINDS_ROWS, TYPES_DDL, wait_caught_up, wait_rows

DEADLINE = 90
EXIT_DIFFERENCES = 4


@pytest.fixture
def mirror_env(pg, workspace):
    yield from make_cdc_env(pg, workspace)


def ws_sql(z, *statements):
    """Run statements on z's workspace behind zx's back."""
    if z.workspace == "postgres":
        for s in statements:
            z.pg.execute(z.pg_db, s)
        return
    db = sqlite3.connect(z.db_path, timeout=30)
    try:
        for s in statements:
            db.execute(s)
        db.commit()
    finally:
        db.close()


def verify(z, *args, rc=None):
    """`zxctl --json verify ...`: (exit code, the answer)."""
    p = z.zxctl("verify", *args, json_out=True, timeout=300, check_rc=rc)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        pytest.fail(f"zxctl --json verify {args}: not JSON: {p.stdout!r} {p.stderr!r}")


def found(answer, table=None):
    """{key text: (how, sorted columns)} of the answer's first (or named)
    table."""
    t = [x for x in answer["tables"] if table in (None, x["table"])][0]
    return {",".join(k["key"].values()): (k["how"], sorted(k.get("columns", [])))
            for k in t["keys"]}


def shop(pg, mirror_env, rows=200):
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY, customer text, "
                   "total numeric(12,2), placed timestamptz, paid boolean, note text)")
    pg.execute(db, f"INSERT INTO orders SELECT g, 'c' || g, g * 1.25, "
                   f"'2026-11-30 10:00:00+00'::timestamptz + g * interval '1 minute', "
                   f"g % 2 = 0, CASE WHEN g % 3 = 0 THEN NULL ELSE 'n' || g END "
                   f"FROM generate_series(1, {rows}) g")
    for s in TYPES_DDL:
        pg.execute(db, s)
    for i, row in enumerate(KINDS_ROWS):
        pg.execute(db, "INSERT INTO kinds VALUES " + (row % (i + 1)))
    z = mirror_env.zxd({"vshop": {"connection": "db", "tables": ["orders", "kinds"],
                          "extra": {"table_prefix": "s_"}}}, {"db": superuser(db)})
    wait_rows(z, "s_orders", rows)
    wait_rows(z, "s_kinds", len(KINDS_ROWS))
    return db, z


def test_matching_mirror_verifies_clean(pg, mirror_env):
    db, z = shop(pg, mirror_env)
    # changes through the stream too (not only the initial copy)
    for i, row in enumerate(KINDS_ROWS):
        pg.execute(db, "INSERT INTO kinds VALUES " + (row % (i + 101)))
    pg.execute(db, "UPDATE orders SET note = NULL, total = 0.10 WHERE id <= 5")
    pg.execute(db, "DELETE FROM orders WHERE id = 7")
    wait_rows(z, "s_kinds", 2 * len(KINDS_ROWS))
    wait_caught_up(pg, db, "zx_vshop")
    rc, a = verify(z, "vshop", rc=0)
    assert a["differing"] == 0, a
    assert a["compared"] == 199 + 2 * len(KINDS_ROWS), a
    assert {t["table"]: (t["mirror"], t["compared"], t["differing"]) for t in a["tables"]} == {
        "public.orders": ("s_orders", 199, 0),
        "public.kinds": ("s_kinds", 2 * len(KINDS_ROWS), 0)}
    p = z.zxctl("verify", "vshop", check_rc=0, timeout=300)
    assert "199 rows compared, 0 differing" in p.stdout, p.stdout
    assert "public.orders -> s_orders" in p.stdout, p.stdout


def test_corrupted_mirror_reports_each_key_then_status(pg, mirror_env):
    db, z = shop(pg, mirror_env)
    wait_caught_up(pg, db, "zx_vshop")
    ws_sql(z, "UPDATE s_orders SET customer = 'tampered' WHERE id = 3",
           "DELETE FROM s_orders WHERE id = 4",
           "INSERT INTO s_orders (id, customer) VALUES (9999, 'ghost')",
           "UPDATE s_orders SET total = NULL WHERE id = 5",
           "UPDATE s_orders SET note = NULL, paid = NULL WHERE id = 8")
    rc, a = verify(z, "vshop", rc=EXIT_DIFFERENCES)
    assert a["differing"] == 5, a
    assert found(a, "public.orders") == {
        "3": ("differ", ["customer"]),
        "4": ("missing", []),
        "9999": ("extra", []),
        "5": ("differ", ["total"]),
        "8": ("differ", ["note", "paid"]),
    }, a
    assert found(a, "public.kinds") == {}, a
    # the human report says the same
    p = z.zxctl("verify", "vshop", "--table", "orders", check_rc=EXIT_DIFFERENCES, timeout=300)
    out = p.stdout
    assert "200 rows compared, 5 differing" in out, out
    assert "id=4: missing in the mirror" in out, out
    assert "id=9999: extra in the mirror" in out, out
    assert "id=8: values differ: paid, note" in out, out
    assert "public.kinds" not in out, out
    # zxctl status shows the last verify of the pipeline
    st = z.pipeline("vshop")
    assert st["last_verify"]["differing"] == 5, st
    assert st["last_verify"]["table"] == "orders", st
    p = z.zxctl("status", check_rc=0)
    assert "last verify:" in p.stdout and "5 differing, table orders" in p.stdout, p.stdout
    # a key the source changes is compared with its new value
    pg.execute(db, "UPDATE orders SET customer = 'tampered' WHERE id = 3")
    pg.execute(db, "DELETE FROM orders WHERE id = 9")
    wait_for(lambda: z.count("s_orders", "id = 9") == 0, "the delete", deadline=DEADLINE)
    rc, a = verify(z, "vshop", "--table", "public.orders", rc=EXIT_DIFFERENCES)
    assert set(found(a)) == {"4", "9999", "5", "8"}, a
    assert [t["table"] for t in a["tables"]] == ["public.orders"], a
    # --repair: the pipeline re-copies exactly those keys through the writer
    before = z.query("SELECT count(*) FROM s_orders")[0][0]
    rc, a = verify(z, "vshop", "--repair", rc=0)
    assert a["differing"] == 4 and a["repaired"] == 4, a
    assert set(found(a, "public.orders")) == {"4", "9999", "5", "8"}, a
    assert z.count("s_orders", "id = 9999") == 0
    assert z.count("s_orders", "id = 4") == 1
    assert z.query("SELECT customer FROM s_orders WHERE id = 4") == [("c4",)]
    assert z.count("s_orders") == before     # one row back, one gone
    p = z.zxctl("status", check_rc=0)
    assert "4 differing, 4 repaired" in p.stdout, p.stdout
    rc, a = verify(z, "vshop", rc=0)
    assert a["differing"] == 0, a
    # the last verify is still shown after zxd restarted
    z.stop()
    z.start()
    assert z.pipeline("vshop")["last_verify"]["differing"] == 0, z.pipeline("vshop")
    assert z.pipeline("vshop")["last_verify"]["compared"] == 199 + len(KINDS_ROWS), \
        z.pipeline("vshop")
    # the stream goes on after a repair
    pg.execute(db, "UPDATE orders SET note = 'after' WHERE id = 8")
    wait_for(lambda: z.query("SELECT note FROM s_orders WHERE id = 8") == [("after",)],
             "the update after the repair", deadline=DEADLINE)


def test_verify_while_writes_flow_reports_no_false_difference(pg, mirror_env):
    db, z = shop(pg, mirror_env, rows=2000)
    stop = threading.Event()
    errors = []

    def writer():
        i = 0
        try:
            while not stop.is_set():
                i += 1
                pg.execute(db, f"INSERT INTO orders VALUES ({10000 + i}, 'w', 1.00, now(), "
                               f"true, 'x')")
                pg.execute(db, f"UPDATE orders SET total = total + 1, note = NULL "
                               f"WHERE id = {1 + (i * 37) % 2000}")
                pg.execute(db, f"DELETE FROM orders WHERE id = {10000 + i - 5}")
        except Exception as e:            # reported by the test
            errors.append(e)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        wait_for(lambda: z.count("s_orders", "id > 10010") > 0, "writes reaching the mirror",
                 deadline=DEADLINE)
        rc, a = verify(z, "vshop", "--table", "orders")
    finally:
        stop.set()
        t.join(60)
    assert not errors, errors
    assert rc == 0 and a["differing"] == 0, a
    assert a["tables"][0]["compared"] >= 2000, a


def test_errors_say_what_to_do(pg, mirror_env):
    db, z = shop(pg, mirror_env, rows=10)
    p = z.zxctl("verify", "vshop", "--table", "nosuch", check_rc=1)
    assert "pipeline vshop: verify: table nosuch is not one of the pipeline's tables" in \
        p.stderr, p.stderr
    p = z.zxctl("verify", "web", check_rc=1)
    assert "only a `source: postgres` pipeline" in p.stderr, p.stderr
    p = z.zxctl("verify", "nope", check_rc=1)
    assert "no pipeline of that name" in p.stderr, p.stderr
    p = z.zxctl("status", "--table", "x", check_rc=2)
    assert "--table and --repair go with verify only" in p.stderr, p.stderr
    # a pipeline stopped on purpose: said at once, nothing compared
    z.zxctl("stop", "vshop", check_rc=0)
    p = z.zxctl("verify", "vshop", check_rc=1, timeout=60)
    assert "pipeline vshop: verify: the pipeline is stopped (`zxctl start vshop`, then " \
           "verify)" in p.stderr, p.stderr
    z.zxctl("start", "vshop", check_rc=0)
    # a mirror the workspace lost
    ws_sql(z, "DROP TABLE s_kinds")
    p = z.zxctl("verify", "vshop", "--table", "kinds", check_rc=1)
    assert "pipeline vshop: verify: table public.kinds: mirror table s_kinds is not in the " \
           "workspace" in p.stderr, p.stderr


def test_repair_after_a_restart_goes_into_history(pg, mirror_env):
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE o (id int PRIMARY KEY, v text, n numeric)")
    pg.execute(db, "INSERT INTO o SELECT g, 'v' || g, g / 4.0 FROM generate_series(1, 50) g")
    z = mirror_env.zxd({"vrep": {"connection": "db", "tables": ["o"],
                              "extra": {"history": "true"}}}, {"db": superuser(db)})
    wait_rows(z, "o", 50)
    # zxd restarted: the worker resumes streaming without copying again
    z.stop()
    z.start()
    pg.execute(db, "UPDATE o SET v = 'moved on' WHERE id = 1")
    wait_for(lambda: z.query("SELECT v FROM o WHERE id = 1") == [("moved on",)],
             "the stream after the restart", deadline=DEADLINE)
    wait_caught_up(pg, db, "zx_vrep")
    ws_sql(z, "UPDATE o SET v = NULL, n = 7 WHERE id = 2", "DELETE FROM o WHERE id = 3")
    rc, a = verify(z, "vrep", "--repair", rc=0)
    assert found(a) == {"2": ("differ", ["n", "v"]), "3": ("missing", [])}, a
    assert a["repaired"] == 2 and a["tables"][0]["repaired"] == 2, a
    assert z.query("SELECT v, n FROM o WHERE id IN (2, 3) ORDER BY id") in (
        [("v2", "0.50000000000000000000"), ("v3", "0.75000000000000000000")],
        [("v2", decimal_of("0.50000000000000000000")),
         ("v3", decimal_of("0.75000000000000000000"))]), \
        z.query("SELECT v, n FROM o WHERE id IN (2, 3) ORDER BY id")
    hist = z.query('SELECT _op, id FROM "o__changes" WHERE id IN (2, 3) ORDER BY id')
    assert hist == [("update", 2), ("update", 3)], hist
    rc, a = verify(z, "vrep", rc=0)
    assert a["differing"] == 0, a


def decimal_of(text):
    import decimal
    return decimal.Decimal(text)


def test_repair_of_many_keys_in_several_steps(pg, mirror_env):
    """2001 keys: more than one step of the worker's repair (50 ms each,
    here about 5) and more than the answer lists."""
    db, z = shop(pg, mirror_env, rows=3000)
    wait_caught_up(pg, db, "zx_vshop")
    ws_sql(z, "UPDATE s_orders SET customer = 'bad' WHERE id % 2 = 0",
           "DELETE FROM s_orders WHERE id % 2 = 1 AND id <= 1001")
    rc, a = verify(z, "vshop", "--table", "orders", "--repair", rc=0)
    t = a["tables"][0]
    assert (a["differing"], a["repaired"], t["repaired"]) == (2001, 2001, 2001), a
    assert len(t["keys"]) == 100 and t["more"] == 1901, a
    assert z.count("s_orders") == 3000
    assert z.count("s_orders", "customer = 'bad'") == 0
    rc, a = verify(z, "vshop", rc=0)
    assert a["differing"] == 0, a


def big_table(pg, mirror_env, rows):
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE big (id bigint PRIMARY KEY, v text, n numeric, "
                   "at timestamptz, f double precision)")
    pg.execute(db, f"INSERT INTO big SELECT g, 'v' || g, g / 7.0, "
                   f"'2026-01-01 00:00:00+00'::timestamptz + g * interval '1 second', "
                   f"CASE WHEN g % 5 = 0 THEN NULL ELSE g / 3.0 END "
                   f"FROM generate_series(1, {rows}) g")
    z = mirror_env.zxd({"vbig": {"connection": "db", "tables": ["big"]}},
                       {"db": superuser(db)})
    wait_rows(z, "big", rows)
    wait_caught_up(pg, db, "zx_vbig")
    return db, z


def test_large_table_by_key_ranges(pg, mirror_env, workspace):
    """20,000 rows with 3 keys corrupted far apart: on a Postgres workspace
    the table is hashed by key ranges on both servers and only the 3
    ranges that differ are compared key by key; either way exactly those
    keys are reported."""
    db, z = big_table(pg, mirror_env, 20000)
    rc, a = verify(z, "vbig", rc=0)
    t = a["tables"][0]
    assert (a["compared"], a["differing"], t["differing"]) == (20000, 0, 0), a
    if workspace == "postgres":
        assert t["ranges"] > 1 and t["ranges_differing"] == 0, a
        p = z.zxctl("verify", "vbig", check_rc=0, timeout=300)
        assert f"({t['ranges']} key ranges hashed, 0 differing)" in p.stdout, p.stdout
    else:
        assert (t["ranges"], t["ranges_differing"]) == (0, 0), a
    ws_sql(z, "UPDATE big SET v = 'tampered' WHERE id = 17",
           "UPDATE big SET f = NULL WHERE id = 10001",
           "DELETE FROM big WHERE id = 19990")
    rc, a = verify(z, "vbig", rc=EXIT_DIFFERENCES)
    t = a["tables"][0]
    assert found(a) == {"17": ("differ", ["v"]), "10001": ("differ", ["f"]),
                        "19990": ("missing", [])}, a
    assert (t["compared"], t["differing"]) == (20000, 3), a
    if workspace == "postgres":
        assert t["ranges"] > 1 and t["ranges_differing"] == 3, a
        p = z.zxctl("verify", "vbig", check_rc=EXIT_DIFFERENCES, timeout=300)
        assert f"({t['ranges']} key ranges hashed, 3 differing)" in p.stdout, p.stdout
    rc, a = verify(z, "vbig", "--repair", rc=0)
    assert a["repaired"] == 3, a
    # a key above every source key: the last range (open above) differs
    ws_sql(z, "INSERT INTO big (id, v) VALUES (30000, 'ghost')")
    rc, a = verify(z, "vbig", rc=EXIT_DIFFERENCES)
    assert found(a) == {"30000": ("extra", [])}, a
    if workspace == "postgres":
        assert a["tables"][0]["ranges_differing"] == 1, a
    rc, a = verify(z, "vbig", "--repair", rc=0)
    rc, a = verify(z, "vbig", rc=0)
    assert a["tables"][0]["ranges_differing"] == 0 and a["differing"] == 0, a
