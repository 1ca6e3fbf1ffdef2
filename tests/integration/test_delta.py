"""
The Delta Lake destination (`destination: {delta: {path: ...}}`), judged by
independent readers: delta-rs (PyPI `deltalake`) and Polars read the table
after every run and must return exactly the rows of the query's result,
value by value, types included.

- every mode (replace, append, upsert, mirror) over several runs, with
  updates, deletes, key moves and a new column (schema growth);
- deletion vectors (tables zx creates for a keyed sync): an upsert or
  mirror marks the rows it replaces or deletes in the files' deletion
  vectors, read by both readers, across runs, checkpoints and vacuum;
- copy-on-write (deletion_vectors: false, or a table without them): an
  upsert that changes a few rows rewrites only the data files holding
  them (file_rows small, so the table has many files);
- each run is one commit whose txn names the sync and the run; the log is
  written put-if-absent: a writer (deltalake) appending between zx's runs
  keeps its rows, and a commit racing zx's is not lost;
- a failed or killed run leaves no version and no stray reference;
- a table in moto's S3 (tests/services/moto), read by deltalake from there;
- the run history shows the version and files each run made.

One workspace is enough (what is tested is the table side): SQLite.
"""

import datetime
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import REPO, uid, wait_for
from sync_fixtures import make_sync_env

pytestmark = pytest.mark.sqlite_only

deltalake = pytest.importorskip("deltalake")
pl = pytest.importorskip("polars")

UTC = datetime.timezone.utc
SECRET = "zx-delta-secret-" + "q" * 8


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def make_items(z, n=0, rows=()):
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE items (id {t['int']} PRIMARY KEY, name {t['text']}, "
              f"price {t['real']}, at {t['ts']})")
    if n:
        z.ws_exec("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) "
                  "INSERT INTO items SELECT i, 'item ' || i, i * 0.5, "
                  "'2026-01-01T00:00:00.000000Z' FROM s" % n)
    for r in rows:
        z.ws_exec("INSERT INTO items VALUES (%d, %s, %s, %s)" % (
            r[0], "NULL" if r[1] is None else "'%s'" % r[1], "NULL" if r[2] is None else repr(r[2]),
            "NULL" if r[3] is None else "'%s'" % r[3]))


def expected(z, cols="id, name, price, at"):
    """The query's result, as the readers should give it back."""
    rows = z.query(f"SELECT {cols} FROM items ORDER BY id")
    out = []
    for r in rows:
        r = list(r)
        if "at" in cols.split(", "):
            i = cols.split(", ").index("at")
            if r[i] is not None:
                r[i] = datetime.datetime.strptime(r[i], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        out.append(tuple(r))
    return out


def read_deltalake(path, cols, storage_options=None):
    """The table through delta-rs: its pyarrow dataset, or, for a table
    with deletion vectors (which that path refuses), its own scan (the
    delta kernel's, which applies them)."""
    import pyarrow as pa
    dt = deltalake.DeltaTable(path, storage_options=storage_options)
    if "deletionVectors" in (dt.protocol().reader_features or []):
        t = pa.table(pa.RecordBatchReader.from_stream(dt.scan()))
    else:
        t = dt.to_pyarrow_table()
    rows = sorted(zip(*[t.column(c).to_pylist() for c in cols]), key=lambda r: r[0])
    return rows, dt


def read_polars(path, cols):
    df = pl.read_delta(path).select(cols).sort("id")
    return [tuple(r) for r in df.iter_rows()]


def check(z, path, cols=("id", "name", "price", "at")):
    want = expected(z, ", ".join(cols))
    got, dt = read_deltalake(path, cols)
    assert got == want
    assert read_polars(path, list(cols)) == want
    return dt


def delta_sync(sync_env, mode, key=("id",), name="lake", file_rows=None, query=None, rows=0,
               dv=None):
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    path = os.path.join(z.data_dir, "exports", name)
    d = {"path": f"var/exports/{name}"}
    if file_rows:
        d["file_rows"] = file_rows
    if dv is not None:
        d["deletion_vectors"] = dv
    z.syncs = {name: {"author": "alice", "query": query or "SELECT id, name, price, at FROM items",
                      "dest": {"delta": d}, "mode": mode,
                      "key": list(key) if key else None}}
    z.write_config()
    make_items(z, rows)
    z.start()
    return z, path


def log_versions(path):
    return sorted(int(n[:20]) for n in os.listdir(os.path.join(path, "_delta_log"))
                  if n.endswith(".json"))


def actions(path, v):
    with open(os.path.join(path, "_delta_log", "%020d.json" % v)) as fh:
        return [json.loads(l) for l in fh if l.strip()]


# ---- modes -------------------------------------------------------------------

def test_replace_append_and_the_schema_readers_see(sync_env):
    z, path = delta_sync(sync_env, "replace", key=None, rows=5)
    r = z.run("lake")
    assert r["state"] == "succeeded" and r["rows_sent"] == 5
    assert r["made"] == "delta version 0" and r["files_added"] == 1
    dt = check(z, path)
    assert dt.version() == 0
    schema = {f.name: str(f.type) for f in dt.schema().fields}
    assert schema == {"id": "PrimitiveType(\"long\")", "name": "PrimitiveType(\"string\")",
                      "price": "PrimitiveType(\"double\")",
                      "at": "PrimitiveType(\"timestamp\")"} or set(schema) == {"id", "name",
                                                                                 "price", "at"}
    a0 = actions(path, 0)
    assert a0[1]["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    txn = [a["txn"] for a in a0 if "txn" in a][0]
    assert txn["appId"] == "zx-lake" and txn["version"] == int(r["id"])
    add = [a["add"] for a in a0 if "add" in a][0]
    st = json.loads(add["stats"])
    assert st["numRecords"] == 5 and st["minValues"]["id"] == 1 and st["maxValues"]["id"] == 5
    assert st["nullCount"]["name"] == 0
    # replace again after changes: the table holds exactly the result
    z.ws_exec("DELETE FROM items WHERE id = 2", "UPDATE items SET name = NULL WHERE id = 3",
              "INSERT INTO items VALUES (9, 'nine', NULL, NULL)")
    assert z.run("lake")["made"] == "delta version 1"
    check(z, path)
    a1 = actions(path, 1)
    assert [a for a in a1 if "remove" in a][0]["remove"]["path"] == add["path"]
    # the history shows the version each run made
    made = [h.get("made") for h in z.runs("lake")]
    assert made[:2] == ["delta version 1", "delta version 0"], made


def test_append_adds_every_run(sync_env):
    z, path = delta_sync(sync_env, "append", key=None, rows=3)
    z.run("lake")
    z.ws_exec("INSERT INTO items VALUES (4, 'four', 4.0, NULL)")
    z.run("lake")
    got, dt = read_deltalake(path, ["id"])
    assert sorted(r[0] for r in got) == [1, 2, 3, 1, 2, 3, 4] or \
        sorted(r[0] for r in got) == sorted([1, 2, 3, 1, 2, 3, 4])
    assert dt.version() == 1
    assert [a for a in actions(path, 1) if "remove" in a] == []


@pytest.mark.parametrize("mode,dv", [("upsert", True), ("mirror", True),
                                     ("upsert", False), ("mirror", False)])
def test_upsert_and_mirror_over_several_runs(sync_env, mode, dv):
    z, path = delta_sync(sync_env, mode, rows=3000, file_rows=1000, dv=dv)
    assert z.run("lake")["rows_sent"] == 3000
    check(z, path)
    assert len(deltalake.DeltaTable(path).file_uris()) == 3
    proto = [a["protocol"] for a in actions(path, 0) if "protocol" in a][0]
    if dv:
        assert proto == {"minReaderVersion": 3, "minWriterVersion": 7,
                         "readerFeatures": ["deletionVectors"],
                         "writerFeatures": ["deletionVectors"]}
        md = [a["metaData"] for a in actions(path, 0) if "metaData" in a][0]
        assert md["configuration"] == {"delta.enableDeletionVectors": "true"}
    else:
        assert proto == {"minReaderVersion": 1, "minWriterVersion": 2}
    # change two rows in the first file, insert one: only that file is
    # touched (a new deletion vector, or rewritten)
    z.ws_exec("UPDATE items SET name = 'changed', price = NULL WHERE id IN (5, 7)",
              "INSERT INTO items VALUES (5000, 'new', 1.0, '2026-12-01T01:02:03.456789Z')")
    r = z.run("lake")
    assert r["state"] == "succeeded" and r["rows_sent"] == 3
    if dv:
        assert r["files_removed"] == 0 and r["files_added"] == 1, r
        assert r["made"] == "delta version 1 (deletion vectors of 1 file)", r
        a1 = actions(path, 1)
        rm = [a["remove"] for a in a1 if "remove" in a]
        re_add = [a["add"] for a in a1 if "add" in a and "deletionVector" in a["add"]]
        assert len(rm) == 1 and len(re_add) == 1 and rm[0]["path"] == re_add[0]["path"]
        assert "deletionVector" not in rm[0]
        d = re_add[0]["deletionVector"]
        assert d["storageType"] == "u" and d["cardinality"] == 2 and d["offset"] == 1
        assert d["pathOrInlineDv"].startswith("zx") and len(d["pathOrInlineDv"]) == 22
        assert json.loads(re_add[0]["stats"])["tightBounds"] is False
        assert len(os.listdir(os.path.join(path, "zx"))) == 1
        # zx keeps only the keys of its files: no copy of their rows
        side = os.listdir(os.path.join(path, "_zx"))
        assert side and not [n for n in side if n.endswith(".rows")], side
    else:
        assert r["files_removed"] == 1, r
    check(z, path)
    assert len(deltalake.DeltaTable(path).file_uris()) == 4 or \
        len(deltalake.DeltaTable(path).file_uris()) == 3
    # delete a row and move another's key
    z.ws_exec("DELETE FROM items WHERE id = 2500", "UPDATE items SET id = 7000 WHERE id = 1500")
    r = z.run("lake")
    assert r["state"] == "succeeded"
    if mode == "mirror":
        check(z, path)
        assert r["rows_deleted"] == 2
    else:
        # upsert keeps what disappeared
        got, _ = read_deltalake(path, ["id"])
        ids = {g[0] for g in got}
        assert 2500 in ids and 1500 in ids and 7000 in ids
    # nothing changed: no new version
    v = deltalake.DeltaTable(path).version()
    r = z.run("lake")
    assert r["rows_sent"] == 0 and deltalake.DeltaTable(path).version() == v


def test_a_new_column_grows_the_schema(sync_env):
    z, path = delta_sync(sync_env, "mirror", rows=4)
    z.run("lake")
    z.ws_exec("ALTER TABLE items ADD COLUMN qty INTEGER", "UPDATE items SET qty = id * 10")
    z.syncs["lake"]["query"] = "SELECT id, name, price, at, qty FROM items"
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    r = z.run("lake")
    assert r["state"] == "succeeded", r
    check(z, path, ("id", "name", "price", "at", "qty"))
    md = [a["metaData"] for a in actions(path, 1) if "metaData" in a]
    assert md and "qty" in md[0]["schemaString"]


def test_a_changed_type_fails_with_what_to_do(sync_env):
    z, path = delta_sync(sync_env, "replace", key=None, rows=2)
    z.run("lake")
    z.syncs["lake"]["query"] = "SELECT CAST(id AS TEXT) AS id, name, price, at FROM items"
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    r = z.run("lake", check=False)
    assert r["state"] == "failed"
    assert "column id is long in the table" in r["error"] and "cast it" in r["error"]
    assert log_versions(path) == [0]


# ---- concurrency and failures --------------------------------------------------

def test_another_writer_between_runs_keeps_its_rows(sync_env):
    import pyarrow as pa
    z, path = delta_sync(sync_env, "mirror", rows=10)
    z.run("lake")
    other = pa.table({"id": pa.array([100, 101], pa.int64()), "name": ["x", "y"],
                      "price": pa.array([None, None], pa.float64()),
                      "at": pa.array([None, None], pa.timestamp("us", tz="UTC"))})
    deltalake.write_deltalake(path, other, mode="append")
    z.ws_exec("UPDATE items SET name = 'z' WHERE id = 3")
    r = z.run("lake")
    assert r["state"] == "succeeded"
    got, dt = read_deltalake(path, ["id", "name"])
    ids = [g[0] for g in got]
    assert 100 in ids and 101 in ids and len(ids) == 12
    assert dict(got)[3] == "z"
    assert dt.version() == 2


def test_a_commit_that_loses_its_version_goes_to_the_next(sync_env):
    """Another writer takes the version zx is about to write (its file is
    put there while the run is held before its commit): zx's commit lands
    at the version after, and both writers' rows are there."""
    z, path = delta_sync(sync_env, "append", key=None, rows=3)
    z.run("lake")
    # take version 1 by hand the way another writer would (put-if-absent)
    import pyarrow as pa
    deltalake.write_deltalake(path, pa.table({"id": pa.array([50], pa.int64())}),
                              mode="append", schema_mode="merge")
    r = z.run("lake")
    assert r["state"] == "succeeded" and r["made"] == "delta version 2"
    got, _ = read_deltalake(path, ["id"])
    assert sorted(g[0] for g in got) == [1, 1, 2, 2, 3, 3, 50]


def stopped(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


@pytest.mark.parametrize("step", ["data", "files", "committed"])
def test_a_run_killed_at_each_step_shows_once_or_not_at_all(sync_env, step):
    """The run worker is stopped (ZX_TEST_LAKE_STOP_AT) when every data file
    is written but nothing committed, or right after its commit, and
    SIGKILLed there: the table holds the run once or not at all, and the
    next run converges (the hashes were not recorded, so it sends again)."""
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    path = os.path.join(z.data_dir, "exports", "lake")
    z.syncs = {"lake": {"author": "alice", "query": "SELECT id, name, price, at FROM items",
                        "dest": {"delta": {"path": "var/exports/lake", "file_rows": 1000}},
                        "mode": "mirror", "key": ["id"]}}
    z.write_config()
    make_items(z, 3000)
    z.start()
    z.run("lake")
    z.ws_exec("UPDATE items SET name = 'k' WHERE id % 700 = 0", "DELETE FROM items WHERE id = 1")
    z.stop()
    z.env["ZX_TEST_LAKE_STOP_AT"] = step
    z.start()
    assert z.zxctl("run", "lake").returncode == 0

    def worker():
        e = z.pipeline("lake")
        return e["pid"] if e.get("pid") and stopped(e["pid"]) else None
    pid = wait_for(worker, f"the run's worker stopped at {step}")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: z.runs("lake") and z.runs("lake")[0]["state"] == "failed", "the failed run")
    v = deltalake.DeltaTable(path).version()
    assert v == (0 if step in ("data", "files") else 1)
    got, _ = read_deltalake(path, ["id", "name", "price", "at"])
    if step in ("data", "files"):
        assert len(got) == 3000 and got[0][0] == 1          # the run is not there at all
    else:
        assert got == expected(z)                            # it is there, once
    z.stop()
    del z.env["ZX_TEST_LAKE_STOP_AT"]
    z.start()
    r = z.run("lake")
    assert r["state"] == "succeeded"
    check(z, path)
    assert len({a["add"]["path"] for v in log_versions(path) for a in actions(path, v)
                if "add" in a}) >= 3
    # the data files the killed run wrote are named by no commit
    named = {a["add"]["path"] for v in log_versions(path) for a in actions(path, v) if "add" in a}
    live = {os.path.basename(u) for u in deltalake.DeltaTable(path).file_uris()}
    assert live <= named


def test_a_writer_that_commits_during_a_run_loses_nothing(sync_env):
    """deltalake appends while zx's run is held between its data files and
    its commit: zx's put-if-absent loses that version, reads it, finds no
    conflict (an append), and commits at the next; both writers' rows are
    there.  Then a rewrite that races a writer removing the same file
    fails, naming the other writer, and commits nothing."""
    import pyarrow as pa
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    path = os.path.join(z.data_dir, "exports", "lake")
    z.syncs = {"lake": {"author": "alice", "query": "SELECT id, name, price, at FROM items",
                        "dest": {"delta": {"path": "var/exports/lake"}},
                        "mode": "upsert", "key": ["id"]}}
    z.env["ZX_TEST_LAKE_STOP_AT"] = "files"
    z.write_config()
    make_items(z, 10)
    z.start()
    other = pa.table({"id": pa.array([100], pa.int64()), "name": ["other"],
                      "price": pa.array([None], pa.float64()),
                      "at": pa.array([None], pa.timestamp("us", tz="UTC"))})

    def held_run():
        assert z.zxctl("run", "lake").returncode == 0

        def worker():
            e = z.pipeline("lake")
            return e["pid"] if e.get("pid") and stopped(e["pid"]) else None
        return wait_for(worker, "the run's worker held before its commit")

    pid = held_run()                      # the first run: creates the table
    os.kill(pid, signal.SIGCONT)
    wait_for(lambda: z.runs("lake") and z.runs("lake")[0]["state"] == "succeeded", "run 1")
    z.ws_exec("UPDATE items SET name = 'new' WHERE id = 4")
    pid = held_run()
    deltalake.write_deltalake(path, other, mode="append")      # takes version 1
    os.kill(pid, signal.SIGCONT)
    wait_for(lambda: z.runs("lake") and z.runs("lake")[0]["state"] in ("succeeded", "failed"),
             "run 2")
    r = z.runs("lake")[0]
    assert r["state"] == "succeeded" and r["made"].startswith("delta version 2"), r
    assert "event=delta_commit_retry" in z.log_text()
    got, _ = read_deltalake(path, ["id", "name"])
    assert len(got) == 11 and dict(got)[100] == "other" and dict(got)[4] == "new"
    # a writer that removes the file zx rewrites wins; zx fails naming it
    z.ws_exec("UPDATE items SET name = 'again' WHERE id = 5")
    pid = held_run()
    deltalake.DeltaTable(path).delete("id = 6")                # rewrites zx's file
    os.kill(pid, signal.SIGCONT)
    wait_for(lambda: z.runs("lake") and z.runs("lake")[0]["state"] in ("succeeded", "failed")
             and z.runs("lake")[0]["id"] != r["id"], "run 3")
    r3 = z.runs("lake")[0]
    assert r3["state"] == "failed" and "another writer" in r3["error"], r3
    assert "removed files this run rewrites" in r3["error"]
    assert deltalake.DeltaTable(path).version() == 3
    z.stop()
    del z.env["ZX_TEST_LAKE_STOP_AT"]
    z.start()
    # the next run starts from the new state: key 5 now lives in the file
    # delta-rs wrote, which zx cannot rewrite: the run fails, saying so,
    # rather than leave two rows of key 5
    r = z.run("lake", check=False)
    assert r["state"] == "failed" and "written by another writer" in r["error"], r
    assert "mode replace" in r["error"]
    assert deltalake.DeltaTable(path).version() == 3
    # replace takes the table over; upsert runs go on from there
    z.syncs["lake"]["mode"] = "replace"
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    z.run("lake")
    z.syncs["lake"]["mode"] = "upsert"
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    z.ws_exec("UPDATE items SET name = 'last' WHERE id = 5")
    z.run("lake")
    check(z, path)


def test_a_writer_that_fills_the_empty_table_during_the_first_run(sync_env):
    """A mirror's first run into an empty table keeps no keys (nothing it
    writes can replace a row); so when another writer commits data files
    while it runs, it cannot tell whether they hold its keys: it fails,
    commits nothing, and the next run (which keeps them) succeeds with
    both writers' rows."""
    import pyarrow as pa
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    path = os.path.join(z.data_dir, "exports", "lake")
    z.syncs = {"lake": {"author": "alice", "query": "SELECT id, name, price, at FROM items",
                        "dest": {"delta": {"path": "var/exports/lake"}},
                        "mode": "mirror", "key": ["id"]}}
    z.env["ZX_TEST_LAKE_STOP_AT"] = "files"
    z.write_config()
    make_items(z, 10)
    schema = {"id": pa.array([], pa.int64()), "name": pa.array([], pa.string()),
              "price": pa.array([], pa.float64()),
              "at": pa.array([], pa.timestamp("us", tz="UTC"))}
    deltalake.write_deltalake(path, pa.table(schema))            # version 0, empty
    z.start()
    assert z.zxctl("run", "lake").returncode == 0

    def worker():
        e = z.pipeline("lake")
        return e["pid"] if e.get("pid") and stopped(e["pid"]) else None
    pid = wait_for(worker, "the run's worker held before its commit")
    deltalake.write_deltalake(path, pa.table({
        "id": pa.array([100], pa.int64()), "name": ["other"],
        "price": pa.array([None], pa.float64()),
        "at": pa.array([None], pa.timestamp("us", tz="UTC"))}), mode="append")   # version 1
    os.kill(pid, signal.SIGCONT)
    wait_for(lambda: z.runs("lake") and z.runs("lake")[0]["state"] in ("succeeded", "failed"),
             "run 1")
    r = z.runs("lake")[0]
    assert r["state"] == "failed" and "while this run filled the empty table" in r["error"], r
    assert deltalake.DeltaTable(path).version() == 1
    z.stop()
    del z.env["ZX_TEST_LAKE_STOP_AT"]
    z.start()
    assert z.run("lake")["state"] == "succeeded"
    got, _ = read_deltalake(path, ["id", "name"])
    assert sorted(g[0] for g in got) == list(range(1, 11)) + [100]


def test_checkpoints_and_retention(sync_env):
    """Every 10th version gets a checkpoint (and _last_checkpoint); with the
    table's retentions set to 0 days, the log before it and the data files
    zx removed are cleaned up; readers and zx itself go on from the
    checkpoint."""
    import pyarrow as pa
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    path = os.path.join(z.data_dir, "exports", "lake")
    z.syncs = {"lake": {"author": "alice", "query": "SELECT id, name, price, at FROM items",
                        "dest": {"delta": {"path": "var/exports/lake", "file_rows": 1000}},
                        "mode": "mirror", "key": ["id"]}}
    z.write_config()
    make_items(z, 2500)
    # the table made by another writer first, with retentions of 0 days
    empty = pa.table({"id": pa.array([], pa.int64()), "name": pa.array([], pa.string()),
                      "price": pa.array([], pa.float64()),
                      "at": pa.array([], pa.timestamp("us", tz="UTC"))})
    deltalake.write_deltalake(path, empty, configuration={
        "delta.logRetentionDuration": "interval 0 days",
        "delta.deletedFileRetentionDuration": "interval 0 days"})
    z.start()
    for i in range(11):
        z.ws_exec(f"UPDATE items SET name = 'r{i}' WHERE id = {i * 200 + 1}")
        r = z.run("lake")
        assert r["state"] == "succeeded", r
    dlog = os.path.join(path, "_delta_log")
    assert os.path.exists(os.path.join(dlog, "%020d.checkpoint.parquet" % 10))
    with open(os.path.join(dlog, "_last_checkpoint")) as fh:
        assert json.load(fh)["version"] == 10
    assert "event=delta_checkpoint " in z.log_text()
    # commits before the checkpoint are gone (retention 0 days)
    assert min(log_versions(path)) == 10
    # removed data files were vacuumed: only live files (and zx's copies) remain
    live = {os.path.basename(u) for u in deltalake.DeltaTable(path).file_uris()}
    on_disk = {n for n in os.listdir(path) if n.endswith(".parquet")}
    assert on_disk == live
    check(z, path)
    # zx reads its table from the checkpoint on: more runs work, and the
    # retention goes on from there (a busy table: the next checkpoint at
    # 20 cleans what came before it, from zx's copy of the state)
    z.ws_exec("DELETE FROM items WHERE id = 2", "UPDATE items SET name = 'late' WHERE id = 3")
    assert z.run("lake")["state"] == "succeeded"
    check(z, path)
    assert deltalake.DeltaTable(path).version() == 12
    for i in range(9):
        z.ws_exec(f"UPDATE items SET name = 's{i}' WHERE id = {i * 200 + 5}")
        assert z.run("lake")["state"] == "succeeded"
    assert deltalake.DeltaTable(path).version() == 21
    assert min(log_versions(path)) == 20
    live = {os.path.basename(u) for u in deltalake.DeltaTable(path).file_uris()}
    on_disk = {n for n in os.listdir(path) if n.endswith(".parquet")}
    assert on_disk == live
    check(z, path)


def z85_decode(s):
    alpha = ("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
             ".-:+=^!/*?&<>()[]{}@%$#")
    out = b""
    for i in range(0, len(s), 5):
        v = 0
        for c in s[i:i + 5]:
            v = v * 85 + alpha.index(c)
        out += v.to_bytes(4, "big")
    return out


def live_dv_files(path):
    """The deletion vector files ("zx/deletion_vector_<uuid>.bin") of the
    live files: the latest checkpoint's adds, then the commits after it,
    a logical file being its path and its vector."""
    import pyarrow.parquet as pq
    import uuid
    dlog = os.path.join(path, "_delta_log")
    with open(os.path.join(dlog, "_last_checkpoint")) as fh:
        cv = json.load(fh)["version"]
    live = {}

    def key(a):
        d = a.get("deletionVector")
        return (a["path"], None if not d else (d["storageType"], d["pathOrInlineDv"],
                                                d.get("offset")))
    for r in pq.read_table(os.path.join(dlog, "%020d.checkpoint.parquet" % cv)).to_pylist():
        if r.get("add"):
            live[key(r["add"])] = r["add"]
    for v in log_versions(path):
        if v <= cv:
            continue
        for a in actions(path, v):
            if "remove" in a:
                live.pop(key(a["remove"]), None)
            if "add" in a:
                live[key(a["add"])] = a["add"]
    names = set()
    for a in live.values():
        d = a.get("deletionVector")
        if d and d["storageType"] == "u":
            pd = d["pathOrInlineDv"]
            names.add("deletion_vector_%s.bin" % uuid.UUID(bytes=z85_decode(pd[-20:])))
    return names


def test_deletion_vectors_across_runs_checkpoints_and_vacuum(sync_env):
    """A table with deletion vectors (made by deltalake, with retentions of
    0 days): every run of a mirror marks the rows it replaces or deletes in
    the vectors of zx's files, a vector growing over runs (a row changed
    again, rows of the same file in later runs); a file whose rows are all
    deleted is removed; deltalake appending between runs keeps its rows
    (zx replaces no row of a file it did not write); the checkpoint at
    version 10 carries the vectors (both readers read the table after the
    log before it is gone); vector files no longer current are vacuumed."""
    import random
    import pyarrow as pa
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    path = os.path.join(z.data_dir, "exports", "lake")
    z.syncs = {"lake": {"author": "alice",
                        "query": "SELECT id, name, price, at FROM items WHERE id < 100000",
                        "dest": {"delta": {"path": "var/exports/lake", "file_rows": 1000}},
                        "mode": "mirror", "key": ["id"]}}
    z.write_config()
    make_items(z, 3000)
    empty = pa.table({"id": pa.array([], pa.int64()), "name": pa.array([], pa.string()),
                      "price": pa.array([], pa.float64()),
                      "at": pa.array([], pa.timestamp("us", tz="UTC"))})
    deltalake.write_deltalake(path, empty, configuration={
        "delta.enableDeletionVectors": "true",
        "delta.logRetentionDuration": "interval 0 days",
        "delta.deletedFileRetentionDuration": "interval 0 days"})
    z.start()
    assert z.run("lake")["state"] == "succeeded"
    check(z, path)
    rnd = random.Random(21)
    for i in range(10):
        ids = rnd.sample(range(1, 2001), 40)
        z.ws_exec("UPDATE items SET name = 'u%d', price = %d WHERE id IN (%s)" % (
            i, i, ", ".join(map(str, ids[:20]))),
            "DELETE FROM items WHERE id IN (%s)" % ", ".join(map(str, ids[20:])),
            "UPDATE items SET name = 'again%d' WHERE id = 7" % i,
            "INSERT INTO items VALUES (%d, 'n%d', 1.5, NULL)" % (5000 + i, i))
        if i == 3:
            # every row of the third file goes: the file is removed
            z.ws_exec("DELETE FROM items WHERE id > 2000 AND id <= 3000")
        if i == 5:
            # another writer appends rows zx's query does not give
            deltalake.write_deltalake(path, pa.table({
                "id": pa.array([100001, 100002], pa.int64()),
                "name": pa.array(["other", "other"]), "price": pa.array([1.0, 2.0]),
                "at": pa.array([None, None], pa.timestamp("us", tz="UTC"))}), mode="append")
        r = z.run("lake")
        assert r["state"] == "succeeded", r
        if i == 3:
            assert r["files_removed"] == 1, r
        want = expected(z)
        if i >= 5:
            want = want + [(100001, "other", 1.0, None), (100002, "other", 2.0, None)]
        got, dt = read_deltalake(path, ("id", "name", "price", "at"))
        assert got == want, i
        assert read_polars(path, ["id", "name", "price", "at"]) == want, i
    # the vectors of the first file grew over the runs
    files = {os.path.basename(a["path"]): a for a in
             [json.loads(l)["add"] for v in log_versions(path) for l in
              open(os.path.join(path, "_delta_log", "%020d.json" % v)) if '"add"' in l]}
    cards = [a["deletionVector"]["cardinality"] for a in files.values()
             if a.get("deletionVector")]
    assert cards and max(cards) > 40, cards
    dlog = os.path.join(path, "_delta_log")
    assert os.path.exists(os.path.join(dlog, "%020d.checkpoint.parquet" % 10))
    assert min(log_versions(path)) == 10
    # both readers from the checkpoint on
    want = expected(z) + [(100001, "other", 1.0, None), (100002, "other", 2.0, None)]
    got, dt = read_deltalake(path, ("id", "name", "price", "at"))
    assert got == want
    assert read_polars(path, ["id", "name", "price", "at"]) == want
    # the vector files on disk are the ones live files use (older ones
    # vacuumed): the live files from the checkpoint (read with pyarrow) and
    # the commits after it
    assert sorted(os.listdir(os.path.join(path, "zx"))) == sorted(live_dv_files(path))


    # one more run from zx's checkpoint state, and the table is still right
    z.ws_exec("DELETE FROM items WHERE id = 8", "UPDATE items SET name = 'late' WHERE id = 9")
    assert z.run("lake")["state"] == "succeeded"
    got, dt = read_deltalake(path, ("id", "name", "price", "at"))
    want = expected(z) + [(100001, "other", 1.0, None), (100002, "other", 2.0, None)]
    assert got == want
    assert read_polars(path, ["id", "name", "price", "at"]) == want


def test_deletion_vectors_turned_off_and_protocols_zx_cannot_write(sync_env):
    """A table whose deletion vectors are turned off after zx wrote it with
    them: zx kept only its files' keys, cannot rewrite them, and says what
    to do; a replace run takes the table on by copy-on-write.  A table
    needing a feature zx does not know is refused, naming it."""
    z, path = delta_sync(sync_env, "mirror", rows=50)
    assert z.run("lake")["state"] == "succeeded"
    deltalake.DeltaTable(path).alter.set_table_properties(
        {"delta.enableDeletionVectors": "false"})
    z.ws_exec("UPDATE items SET name = 'x' WHERE id = 3")
    r = z.run("lake", check=False)
    assert r["state"] == "failed" and "kept only its keys" in r["error"] and \
        "delta.enableDeletionVectors back to true" in r["error"], r
    z.syncs["lake"]["mode"] = "replace"
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    assert z.run("lake")["state"] == "succeeded"
    z.syncs["lake"]["mode"] = "mirror"
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    z.ws_exec("UPDATE items SET name = 'y' WHERE id = 4")
    r = z.run("lake")
    assert r["state"] == "succeeded" and r["files_removed"] == 1, r
    check(z, path)
    # column mapping: refused by name
    other = os.path.join(z.data_dir, "exports", "cm")
    os.makedirs(os.path.join(other, "_delta_log"))
    with open(os.path.join(other, "_delta_log", "%020d.json" % 0), "w") as fh:
        fh.write(json.dumps({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                          "readerFeatures": ["columnMapping"],
                                          "writerFeatures": ["columnMapping"]}}) + "\n")
        fh.write(json.dumps({"metaData": {"id": "x", "format": {"provider": "parquet"},
                                          "schemaString": json.dumps({
                                              "type": "struct", "fields": []}),
                                          "partitionColumns": [], "configuration": {}}}) + "\n")
    z.syncs["cm"] = {"author": "alice", "query": "SELECT id FROM items",
                     "dest": {"delta": {"path": "var/exports/cm"}}, "mode": "mirror",
                     "key": ["id"]}
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    r = z.run("cm", check=False)
    assert r["state"] == "failed" and "columnMapping" in r["error"] and \
        "new table" in r["error"], r


def test_preview_sends_nothing(sync_env):
    z, path = delta_sync(sync_env, "mirror", rows=5)
    z.run("lake")
    z.ws_exec("DELETE FROM items WHERE id = 2", "UPDATE items SET name = 'p' WHERE id = 3")
    v = deltalake.DeltaTable(path).version()
    p = z.preview("lake")
    assert p["rows_updated"] == 1 and p["rows_deleted"] == 1, p
    assert deltalake.DeltaTable(path).version() == v


def test_a_partitioned_table(sync_env):
    """partition_by: [region]: the table's partitionColumns, each data file
    one region's rows (partitionValues, the column left out of the file),
    mirror runs rewrite only the files of the regions that changed."""
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    path = os.path.join(z.data_dir, "exports", "lake")
    z.syncs = {"lake": {"author": "alice",
                        "query": "SELECT id, name, price, at, "
                                 "CASE WHEN id % 3 = 0 THEN 'eu' WHEN id % 3 = 1 THEN 'us' "
                                 "ELSE NULL END AS region FROM items",
                        "dest": {"delta": {"path": "var/exports/lake"}},
                        "mode": "mirror", "key": ["id"], "extra": {"partition_by": "[region]"}}}
    z.write_config()
    make_items(z, 300)
    z.start()
    r = z.run("lake")
    assert r["state"] == "succeeded" and r["files_added"] == 3, r
    dt = deltalake.DeltaTable(path)
    assert dt.metadata().partition_columns == ["region"]
    q = "SELECT id, name, price, at, CASE WHEN id % 3 = 0 THEN 'eu' WHEN id % 3 = 1 THEN 'us' " \
        "ELSE NULL END FROM items ORDER BY id"

    def want():
        return [(a, b, c, None if d is None else datetime.datetime.strptime(
            d, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC), e) for a, b, c, d, e in z.query(q)]
    cols = ["id", "name", "price", "at", "region"]
    got, _ = read_deltalake(path, cols)
    assert got == want(), [a["add"]["partitionValues"] for a in actions(path, 0) if "add" in a]
    assert read_polars(path, cols) == want()
    adds = [a["add"] for a in actions(path, 0) if "add" in a]
    assert sorted(str(a["partitionValues"]["region"]) for a in adds) == ["None", "eu", "us"]
    import pyarrow.parquet as pq
    f = [a["path"] for a in adds][0]
    assert "region" not in pq.read_schema(os.path.join(path, f)).names
    z.ws_exec("UPDATE items SET name = 'x' WHERE id = 3")     # an eu row
    r = z.run("lake")
    # deletion vectors: the eu file gets one, the new row a new eu file
    assert r["files_removed"] == 0 and r["files_added"] == 1, r
    assert r["made"].endswith("(deletion vectors of 1 file)"), r
    got, _ = read_deltalake(path, cols)
    assert got == want()
    assert read_polars(path, cols) == want()
    # a partition_by that differs from the table's fails the run
    z.syncs["lake"]["extra"] = {"partition_by": "[name]"}
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    z.ws_exec("UPDATE items SET name = 'y' WHERE id = 4")
    r = z.run("lake", check=False)
    assert r["state"] == "failed" and "partitioned by" in r["error"], r


# ---- S3 -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def moto():
    import boto3
    p = subprocess.run([os.path.join(REPO, "tests", "services", "moto"), "start"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    env = dict(l.split("=", 1) for l in p.stdout.split("\n") if "=" in l)
    s3 = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT"], region_name=env["REGION"],
                      aws_access_key_id="zxtestkey", aws_secret_access_key=SECRET)
    return env, s3


def test_a_table_in_s3(sync_env, moto):
    env, s3 = moto
    b = f"zx-{uid()[:12].lower()}"
    s3.create_bucket(Bucket=b)
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    z.connections = {"lake": {"kind": "aws", "extra": {
        "region": env["REGION"], "endpoint": env["AWS_ENDPOINT"], "path_style": True,
        "access_key_id": "zxtestkey", "secret_access_key": SECRET}}}
    z.syncs = {"s3lake": {"author": "alice", "query": "SELECT id, name, price, at FROM items",
                          "dest": {"delta": {"path": f"s3://{b}/tables/items",
                                             "connection": "lake", "file_rows": 1000}},
                          "mode": "mirror", "key": ["id"]}}
    z.write_config()
    make_items(z, 2500)
    z.start()
    assert z.run("s3lake")["state"] == "succeeded"
    z.ws_exec("DELETE FROM items WHERE id = 10", "UPDATE items SET name = 'u' WHERE id = 2000")
    r = z.run("s3lake")
    assert r["state"] == "succeeded" and r["files_removed"] == 0, r
    assert r["made"] == "delta version 1 (deletion vectors of 2 files)", r
    dvs = [o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix="tables/items/zx/")
           .get("Contents", [])]
    assert len(dvs) == 1 and dvs[0].endswith(".bin"), dvs
    so = {"AWS_ENDPOINT_URL": env["AWS_ENDPOINT"], "AWS_REGION": env["REGION"],
          "AWS_ACCESS_KEY_ID": "zxtestkey", "AWS_SECRET_ACCESS_KEY": SECRET,
          "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    got, dt = read_deltalake(f"s3://{b}/tables/items", ["id", "name", "price", "at"], so)
    assert got == expected(z)
    assert dt.version() == 1
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix="tables/items/_delta_log/")
            .get("Contents", [])]
    assert keys == ["tables/items/_delta_log/%020d.json" % v for v in (0, 1)]
    assert SECRET not in z.log_text()
