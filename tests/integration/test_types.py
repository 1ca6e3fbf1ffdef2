"""
Tables as users see them: types inferred from the first batch (declared
types in PRAGMA table_info on SQLite, pg_attribute on Postgres, compared as
kinds through Zxd.column_kinds, and SQLite's exact names checked there), new
fields becoming columns, values that do not fit their column (NULL + counted
+ <table>__rejects), column-name normalisation, metadata columns, and the
stored text forms of timestamps, booleans and JSON (read back from Postgres
as zx's text forms, see conftest).
"""

import datetime
import json
import os

import pytest

from conftest import uid, wait_for, TS_RE

PIPES = {
    "ty": {"ack": "commit", "metadata": ["_ingested_at"]},
    "meta": {"ack": "commit", "metadata": ["_ingested_at", "_request_id"]},
    "mis": {"ack": "commit"},
    "mis2": {"ack": "commit"},
    "mis3": {"ack": "commit", "metadata": ["_request_id"]},
    "norm": {"ack": "commit"},
}


@pytest.fixture(scope="module")
def z(module_zxd):
    return module_zxd(PIPES)


# the declared name of each kind on SQLite: checked there, exactly
SQLITE_NAMES = {"integer": "INTEGER", "real": "REAL", "boolean": "BOOLEAN", "text": "TEXT",
                "timestamp": "TIMESTAMP", "json": "JSON"}


def kinds(z, table):
    """{column: kind} (conftest's column_kinds); on SQLite also asserts
    that every column's declared name is SQLite's exact name of its kind."""
    got = z.column_kinds(table)
    if z.workspace == "sqlite":
        cols = z.columns(table)
        for c, k in got.items():
            assert cols[c] == SQLITE_NAMES.get(k), \
                f"column {c} of {table}: declared {cols[c]!r} (all: {cols})"
    return got


def sql(z, script):
    """Run SQL statements on z's workspace as someone else than zx would
    (SQLite: the file, made when missing; Postgres: z's database)."""
    if z.workspace == "postgres":
        z.pg.execute(z.pg_db, script)
        return
    import sqlite3
    os.makedirs(z.data_dir, exist_ok=True)
    db = sqlite3.connect(z.db_path)
    try:
        db.executescript(script)
        db.commit()
    finally:
        db.close()


def wait_rejects(z, name, total):
    """Poll status until pipeline `name` counts `total` rejects; return it."""
    last = {}

    def ok():
        p = z.pipeline(name)
        last["p"] = p
        return p and p.get("rejects", 0) >= total and p
    return wait_for(ok, lambda: f"{name}.rejects >= {total} in zxctl status (last: {last.get('p')})")


# ---------------------------------------------------------------- inference

def test_first_batch_creates_typed_table(z):
    tag = uid()
    batch = [
        {"tag": tag, "i": 1, "r": 1.5, "b": True, "s": "text",
         "t": "2026-11-29T19:09:25.5+01:00", "o": {"x": 1, "y": [1, 2]},
         "a": [1, "two", {"3": 3}]},
        {"tag": tag, "i": -7, "r": 2.25, "b": False, "s": "more",
         "t": "2026-01-02T03:04:05Z", "o": {"x": 2, "y": []}, "a": []},
    ]
    z.push_ok("ty", batch)
    cols = kinds(z, "ty")
    expect = {"tag": "text", "i": "integer", "r": "real", "b": "boolean", "s": "text",
              "t": "timestamp", "o": "json", "a": "json"}
    for c, t in expect.items():
        assert cols.get(c) == t, f"column {c}: a {cols.get(c)!r} column, expected {t} " \
            f"(all: {z.columns('ty')})"
    assert cols.get("_ingested_at") == "timestamp", cols
    assert "_request_id" not in cols, "metadata _request_id was not asked for on this pipeline"

    got = z.query("SELECT i, r, b, s, t, o, a FROM ty WHERE tag = ? ORDER BY i DESC", (tag,))
    assert len(got) == 2, got
    i, r, b, s, t, o, a = got[0]
    assert (i, r, b, s) == (1, 1.5, 1, "text"), got[0]
    assert t == "2026-11-29T18:09:25.500000Z", f"timestamp not stored as UTC with microseconds: {t!r}"
    assert json.loads(o) == {"x": 1, "y": [1, 2]}, o
    assert o == json.dumps({"x": 1, "y": [1, 2]}, separators=(",", ":")), \
        f"JSON not stored compact: {o!r}"
    assert json.loads(a) == [1, "two", {"3": 3}], a
    i, r, b, s, t, o, a = got[1]
    assert (i, r, b, s) == (-7, 2.25, 0, "more"), got[1]
    assert t == "2026-01-02T03:04:05.000000Z", t
    assert a == "[]", a

    # the second step of the same test: later batches add new fields as columns
    tag2 = uid()
    z.push_ok("ty", {"tag": tag2, "i": 3, "newtext": "hello", "newnum": 9, "newflag": True})
    cols = kinds(z, "ty")
    assert cols.get("newtext") == "text", cols
    assert cols.get("newnum") == "integer", cols
    assert cols.get("newflag") == "boolean", cols
    assert z.query("SELECT newtext, newnum, newflag FROM ty WHERE tag = ?", (tag2,)) == [("hello", 9, 1)]
    assert z.query("SELECT count(*) FROM ty WHERE tag = ? AND newtext IS NULL AND newnum IS NULL",
                   (tag,)) == [(2,)], "old rows must have NULL in new columns"
    # rows missing a field get NULL, not an error
    tag3 = uid()
    z.push_ok("ty", {"tag": tag3})
    assert z.query("SELECT i, s FROM ty WHERE tag = ?", (tag3,)) == [(None, None)]
    p = z.pipeline("ty")
    assert p["rejects"] == 0, f"no reject expected on ty: {p}"


def test_ingested_at_format(z):
    tag = uid()
    z.push_ok("ty", {"tag": tag, "i": 1})
    (v,), = z.query("SELECT _ingested_at FROM ty WHERE tag = ?", (tag,))
    assert isinstance(v, str) and TS_RE.match(v), f"_ingested_at {v!r} is not YYYY-MM-DDTHH:MM:SS.ffffffZ"
    when = datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    now = datetime.datetime.now(datetime.timezone.utc)
    # a clock sanity check (UTC, not local time), not a timing threshold
    assert abs((now - when).total_seconds()) < 3600, f"_ingested_at {v} far from now {now}"


def test_request_id_metadata(z):
    t1, t2 = uid(), uid()
    r1 = z.push_ok("meta", [{"tag": t1, "n": 1}, {"tag": t1, "n": 2}])
    r2 = z.push_ok("meta", {"tag": t2, "n": 3})
    cols = kinds(z, "meta")
    assert cols.get("_request_id") == "text" and cols.get("_ingested_at") == "timestamp", cols
    ids1 = {x for (x,) in z.query("SELECT _request_id FROM meta WHERE tag = ?", (t1,))}
    ids2 = {x for (x,) in z.query("SELECT _request_id FROM meta WHERE tag = ?", (t2,))}
    assert len(ids1) == 1 and None not in ids1 and "" not in ids1, ids1
    assert len(ids2) == 1 and None not in ids2, ids2
    assert ids1 != ids2, "two requests share a _request_id"
    for r, ids in ((r1, ids1), (r2, ids2)):
        rid = r.json.get("request_id")
        if rid is not None:
            assert {str(rid)} == {str(x) for x in ids}, (r, ids)


# ------------------------------------------------------------------ misfits

def test_misfits_become_null_counted_and_recorded(z):
    tag = uid()
    z.push_ok("mis", {"tag": tag, "i": 10, "r": 2.5, "s": "x"})       # creates i INTEGER, r REAL, s TEXT
    cols = kinds(z, "mis")
    assert (cols.get("i"), cols.get("r"), cols.get("s")) == ("integer", "real", "text"), cols

    # values that fit after conversion: no reject
    z.push_ok("mis", {"tag": "int-as-real", "i": 3.0})
    z.push_ok("mis", {"tag": "real-from-int", "r": 5})
    z.push_ok("mis", {"tag": "text-from-num", "s": 42})
    z.push_ok("mis", {"tag": "text-from-obj", "s": {"k": [1]}})
    assert z.query("SELECT i FROM mis WHERE tag = 'int-as-real'") == [(3,)]
    (r,), = z.query("SELECT r FROM mis WHERE tag = 'real-from-int'")
    assert r == 5.0 and isinstance(r, float), f"REAL column holds {r!r}"
    (s,), = z.query("SELECT s FROM mis WHERE tag = 'text-from-num'")
    assert s == "42", f"TEXT column holds {s!r} for 42"
    (s,), = z.query("SELECT s FROM mis WHERE tag = 'text-from-obj'")
    assert s is not None and json.loads(s) == {"k": [1]}, s

    # the misfit: "abc" into INTEGER -> NULL, row kept, other fields kept
    mtag = uid()
    z.push_ok("mis", {"tag": mtag, "i": "abc", "s": "kept"})
    assert z.query("SELECT i, s FROM mis WHERE tag = ?", (mtag,)) == [(None, "kept")]

    p = wait_rejects(z, "mis", 1)
    assert p["rejects"] == 1, f"only one misfit was pushed: {p}"
    assert p.get("rejects_by_column") == {"i": 1}, p
    cols = kinds(z, "mis")
    assert cols.get("i") == "integer", f"a misfit must not change the column type: {cols}"

    rj = kinds(z, "mis__rejects")
    for c in ("rejected_at", "pipeline", "request_id", "column_name", "column_type",
              "value_type", "raw_value", "reason"):
        assert rj.get(c) == ("timestamp" if c == "rejected_at" else "text"), \
            f"mis__rejects: column {c} is {rj.get(c)!r} (all: {z.columns('mis__rejects')})"
    got = z.query("SELECT rejected_at, pipeline, request_id, column_name, column_type, "
                  "value_type, raw_value, reason FROM mis__rejects")
    assert len(got) == 1, got
    at, pipe, _rid, col, ctype, vtype, raw, reason = got[0]
    assert TS_RE.match(at or ""), f"rejected_at {at!r}"
    assert pipe == "mis" and col == "i" and (ctype or "").upper() == "INTEGER", got[0]
    assert vtype, got[0]
    assert "abc" in (raw or ""), got[0]
    assert reason, got[0]


def test_misfit_timestamp(z):
    tag = uid()
    z.push_ok("mis2", {"tag": tag, "ts": "2026-01-01T00:00:00Z", "b": True})
    cols = kinds(z, "mis2")
    assert cols.get("ts") == "timestamp" and cols.get("b") == "boolean", cols
    z.push_ok("mis2", {"tag": tag, "ts": "not a time"})
    assert z.query("SELECT count(*) FROM mis2 WHERE tag = ? AND ts IS NULL", (tag,)) == [(1,)]
    p = wait_rejects(z, "mis2", 1)
    assert p.get("rejects_by_column") == {"ts": 1}, p


def test_misfits_counted_per_column(z):
    tag = uid()
    z.push_ok("mis3", {"tag": tag, "i": 1, "r": 1.5})
    r = z.push_ok("mis3", [{"tag": tag, "i": "abc", "r": 2.5},
                           {"tag": tag, "i": "def", "r": "zz"},
                           {"tag": tag, "i": 5, "r": 3.5}])
    assert z.count("mis3", "tag = ?", (tag,)) == 4, "rows with misfits must be kept"
    assert z.count("mis3", "tag = ? AND i IS NULL", (tag,)) == 2
    assert z.count("mis3", "tag = ? AND r IS NULL", (tag,)) == 1
    p = wait_rejects(z, "mis3", 3)
    assert p["rejects"] == 3, p
    assert p.get("rejects_by_column") == {"i": 2, "r": 1}, p
    got = sorted(z.query("SELECT column_name, pipeline FROM mis3__rejects"))
    assert got == [("i", "mis3"), ("i", "mis3"), ("r", "mis3")], got
    # request_id of the reject rows is the push's _request_id
    rids = {x for (x,) in z.query("SELECT request_id FROM mis3__rejects")}
    row_rids = {x for (x,) in z.query("SELECT _request_id FROM mis3 WHERE i IS NULL OR r IS NULL")}
    assert len(rids) == 1 and rids == row_rids, (rids, row_rids)
    if r.json.get("request_id") is not None:
        assert rids == {str(r.json["request_id"])}


# ------------------------------------------------------------ normalisation

def test_column_name_normalisation(z):
    tag = uid()
    long = "X" * 70
    z.push_ok("norm", {"tag": tag, "User Name": "u", "2fa": True, "a-b.c": 1,
                       "CamelCase": 2, "émoji ☃ x": "e", long: 3})
    cols = z.columns("norm")
    for c in ("user_name", "_2fa", "a_b_c", "camelcase", "x" * 63):
        assert c in cols, f"normalised column {c!r} missing: {sorted(cols)}"
    assert all(len(c.encode()) <= 63 for c in cols), sorted(cols)
    assert all(c == c.lower() for c in cols), sorted(cols)
    got = z.query(f'SELECT user_name, _2fa, a_b_c, camelcase, "{"x" * 63}" FROM norm WHERE tag = ?',
                  (tag,))
    assert got == [("u", 1, 1, 2, 3)], got
    assert "_moji_x" in cols, f"'émoji ☃ x' should become '_moji_x': {sorted(cols)}"
    assert all(set(c) <= set("abcdefghijklmnopqrstuvwxyz0123456789_") for c in cols), sorted(cols)
    # the same field spelt differently lands in the same column
    z.push_ok("norm", {"tag": tag, "USER NAME": "v"})
    assert z.query("SELECT count(*) FROM norm WHERE tag = ? AND user_name = 'v'", (tag,)) == [(1,)]


# A view of the pipeline's table name, that no row can be inserted into
# (DISTINCT: Postgres would insert through a plain one-table view, an
# automatically updatable one; SQLite inserts through none):
#  - "no column": the view lacks the pushed field's column, so that adding
#    the column is refused first and the rows come to the view with none;
#  - "with column": the view has that column: the insert itself is refused.
REFUSING_VIEWS = {
    "no column": "CREATE VIEW blocked AS SELECT DISTINCT a FROM base;",
    "with column": "CREATE VIEW blocked AS SELECT DISTINCT a AS n FROM base;",
}


@pytest.mark.parametrize("view", sorted(REFUSING_VIEWS))
def test_table_that_refuses_rows_holds_back_only_its_pipeline(make_zxd, request, view):
    """A table that refuses every insert (here: a view of that name, made by
    someone else) must not stop the other pipelines' group commit: its
    frames stay in its ring, status and the feed say why, and once the
    cause is gone they are written, none lost."""
    z = make_zxd({"blocked": {}, "free": {}}, start=False)
    sql(z, "CREATE TABLE base(a INTEGER); " + REFUSING_VIEWS[view])
    z.start()
    r = z.push("blocked", [{"n": 1}, {"n": 2}])
    assert r.status == 202, r
    z.push_ok("free", [{"n": 1}], wait_commit=True)
    z.push_ok("free", [{"n": 2}], wait_commit=True)
    assert z.count("free") == 2
    wait_for(lambda: "view" in (z.pipeline("blocked")["last_error"] or ""),
             "status to say why blocked's frames are held back")
    feed = z.zxctl("feed", json_out=True, check_rc=0).stdout
    assert '"event":"error"' in feed.replace(" ", ""), feed
    sql(z, "DROP VIEW blocked;")
    wait_for(lambda: z.pipeline("blocked")["rows"] == 2, "held-back rows written after the fix",
             deadline=90)
    assert z.count("blocked") == 2
    # the values too: nothing of the held-back frame went to the rejects
    assert z.query("SELECT n FROM blocked ORDER BY n") == [(1,), (2,)]
    p = z.pipeline("blocked")
    assert not p["last_error"] and p["rejects"] == 0, p
