"""
A Delta table's checkpoint written by zx (workers/destinations/delta/
delta_checkpoint.c, through tests/tools/deltackpt) stands in for the
commits it covers:

- deltalake (delta-rs) writes a table over a dozen commits: appends with
  an application txn, a delete and an overwrite (so files are removed), in
  an unpartitioned and a partitioned variant (a null partition value too);
- deltackpt checkpoints it at its last version: pyarrow reads the
  checkpoint, one row per action (protocol, metaData, a txn per
  application, an add per live file, the same paths deltalake lists);
- the JSON commits at or before that version are deleted: deltalake still
  loads the table at the same version with the same rows, partition
  columns and txn version, and Polars reads the same rows;
- in a copy where the commits before that version are deleted, deltalake
  appends on top of the checkpoint.
- a hand-written log of a thousand files and 160 applications (maps with
  several, null and no entries, fields null and missing): pyarrow gives
  back every field of every action, DuckDB counts the same.

Binaries: $ZX_BUILD_DIR (default <repo>/build)/tests/tools/deltackpt.  No
zxd, no services.
"""

import glob
import json
import os
import shutil
import subprocess

import pytest

deltalake = pytest.importorskip("deltalake")
pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.sqlite_only

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.path.abspath(os.environ.get("ZX_BUILD_DIR", os.path.join(REPO, "build")))
DELTACKPT = os.path.join(BUILD_DIR, "tests", "tools", "deltackpt")


def txn(app, v):
    return deltalake.CommitProperties(
        app_transactions=[deltalake.Transaction(app_id=app, version=v)])


def batch(lo, hi):
    ids = list(range(lo, hi))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"n{i}" if i % 7 else None for i in ids], pa.string()),
        "region": pa.array([None if i % 5 == 0 else ("eu" if i % 2 else "us") for i in ids],
                           pa.string()),
    })


def make_table(path, partitioned):
    """A table over 13 commits (0..12); returns the last version."""
    part = ["region"] if partitioned else None
    deltalake.write_deltalake(path, batch(0, 10), partition_by=part)
    for k in range(1, 9):
        deltalake.write_deltalake(path, batch(k * 10, k * 10 + 10), mode="append",
                                  partition_by=part, commit_properties=txn("zx-run", k))
    dt = deltalake.DeltaTable(path)
    dt.delete("id % 3 = 0")                                          # removes, re-adds
    deltalake.write_deltalake(path, batch(100, 105), mode="append", partition_by=part,
                              commit_properties=txn("other-app", 42))
    deltalake.write_deltalake(path, batch(200, 230), mode="overwrite", partition_by=part)
    deltalake.write_deltalake(path, batch(300, 304), mode="append", partition_by=part,
                              commit_properties=txn("zx-run", 9))
    return deltalake.DeltaTable(path).version()


def paths_of(dt):
    """The live files' paths as deltalake lists them (an arro3 table)."""
    return sorted(pa.table(dt.get_add_actions(flatten=True)).column("path").to_pylist())


def rows_of(dt):
    return sorted(dt.to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_checkpoint_replaces_commits(tmp_path, partitioned):
    if not os.path.exists(DELTACKPT):
        pytest.fail(f"{DELTACKPT} is not built (ninja -C {BUILD_DIR})")
    path = str(tmp_path / "t")
    version = make_table(path, partitioned)
    assert version == 12
    before = deltalake.DeltaTable(path)
    want_rows = rows_of(before)
    want_files = paths_of(before)
    want_parts = before.metadata().partition_columns
    assert want_parts == (["region"] if partitioned else [])
    assert before.transaction_version("zx-run") == 9
    assert before.transaction_version("other-app") == 42

    out = subprocess.run([DELTACKPT, path], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    log = os.path.join(path, "_delta_log")
    ck = os.path.join(log, f"{version:020d}.checkpoint.parquet")
    assert res["version"] == version and os.path.getsize(ck) == res["bytes"]
    with open(os.path.join(log, "_last_checkpoint")) as f:
        last = json.load(f)
    assert last["version"] == version and last["size"] == res["rows"]

    # the checkpoint as pyarrow reads it: one action a row
    t = pq.read_table(ck)
    assert t.num_rows == res["rows"] == 2 + 2 + len(want_files)
    acts = t.to_pylist()
    kinds = [[k for k, v in r.items() if v is not None] for r in acts]
    assert all(len(k) == 1 for k in kinds), kinds
    kinds = [k[0] for k in kinds]
    assert kinds.count("protocol") == 1 and kinds.count("metaData") == 1
    assert kinds.count("remove") == 0
    txns = {r["txn"]["appId"]: r["txn"]["version"] for r in acts if r["txn"]}
    assert txns == {"zx-run": 9, "other-app": 42}
    adds = [r["add"] for r in acts if r["add"]]
    assert sorted(a["path"] for a in adds) == want_files
    meta = next(r["metaData"] for r in acts if r["metaData"])
    assert meta["partitionColumns"] == want_parts
    assert meta["format"]["provider"] == "parquet"
    assert json.loads(meta["schemaString"])["type"] == "struct"
    proto = next(r["protocol"] for r in acts if r["protocol"])
    assert (proto["minReaderVersion"], proto["minWriterVersion"]) == (1, 2)
    for a in adds:
        assert a["size"] > 0 and a["dataChange"] in (True, False)
        assert json.loads(a["stats"])["numRecords"] > 0
        pv = dict(a["partitionValues"])
        if partitioned:
            assert list(pv) == ["region"]
            assert pv["region"] in ("eu", "us", None)
        else:
            assert pv == {}
    if partitioned:
        assert any(dict(a["partitionValues"])["region"] is None for a in adds)

    keep = str(tmp_path / "keep")
    shutil.copytree(path, keep)

    # the commits it covers are gone: the checkpoint is the table's state
    for v in range(version + 1):
        os.remove(os.path.join(log, f"{v:020d}.json"))
    assert not glob.glob(os.path.join(log, "*.json"))
    after = deltalake.DeltaTable(path)
    assert after.version() == version
    assert rows_of(after) == want_rows
    assert after.metadata().partition_columns == want_parts
    assert after.transaction_version("zx-run") == 9
    assert after.transaction_version("other-app") == 42
    assert paths_of(after) == want_files
    got = sorted(pl.read_delta(path).to_dicts(), key=lambda r: r["id"])
    assert got == want_rows

    # a writer goes on from the checkpoint: with the commits before it gone
    # (Delta's own log clean-up keeps the checkpoint's version; delta-rs
    # 1.6 will not append once that commit is gone, after its own
    # checkpoint too)
    for v in range(version):
        os.remove(os.path.join(keep, "_delta_log", f"{v:020d}.json"))
    deltalake.write_deltalake(keep, batch(400, 403), mode="append",
                              partition_by=["region"] if partitioned else None,
                              commit_properties=txn("zx-run", 10))
    on = deltalake.DeltaTable(keep)
    assert on.version() == version + 1
    assert on.transaction_version("zx-run") == 10
    assert on.transaction_version("other-app") == 42
    assert rows_of(on) == sorted(want_rows + batch(400, 403).to_pylist(),
                                 key=lambda r: r["id"])


def write_log(path, commits):
    log = os.path.join(path, "_delta_log")
    os.makedirs(log)
    for v, actions in enumerate(commits):
        with open(os.path.join(log, f"{v:020d}.json"), "w") as f:
            f.write("".join(json.dumps(a) + "\n" for a in actions))


def test_checkpoint_values(tmp_path):
    """A hand-written log of many files (maps with several, null and no
    entries; null and missing fields; many applications): every action's
    every field comes back from pyarrow (and DuckDB counts the rows)."""
    path = str(tmp_path / "t")
    schema = {"type": "struct", "fields": [
        {"name": n, "type": "string", "nullable": True, "metadata": {}} for n in "pqv"]}
    meta = {"id": "ck-1", "name": "orders", "description": None,
            "format": {"provider": "parquet", "options": {"x": "y", "z": None}},
            "schemaString": json.dumps(schema), "partitionColumns": ["p", "q"],
            "configuration": {"a": "1", "b": "2", "c": "3"}, "createdTime": 1700000000000}
    commits = [[{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
                {"metaData": meta}]]
    live, apps = {}, {}
    for c in range(1, 5):
        acts = []
        for i in range(300):
            n = c * 1000 + i
            add = {"path": f"p={n % 3}/q={n % 7}/f{n}.parquet",
                   "partitionValues": {"p": None if n % 3 == 0 else str(n % 3),
                                       "q": str(n % 7)},
                   "size": 1000 + n, "modificationTime": 1700000000000 + n,
                   "dataChange": n % 2 == 0}
            if n % 4:
                add["stats"] = json.dumps({"numRecords": n})
            tags = [None, {}, {"k": "v", "k2": None}, "missing"][n % 4]
            if tags != "missing":
                add["tags"] = tags
            acts.append({"add": add})
            live[add["path"]] = add
        if c > 1:                                      # every fifth file of the last commit
            for i in range(0, 300, 5):
                n = (c - 1) * 1000 + i
                p = f"p={n % 3}/q={n % 7}/f{n}.parquet"
                acts.append({"remove": {"path": p, "deletionTimestamp": 1, "dataChange": True}})
                live.pop(p)
        for a in range(c * 40):
            acts.append({"txn": {"appId": f"app-{a}", "version": c * 100 + a}})
            apps[f"app-{a}"] = c * 100 + a
        commits.append(acts)
    write_log(path, commits)

    out = subprocess.run([DELTACKPT, path], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    ck = os.path.join(path, "_delta_log", f"{len(commits) - 1:020d}.checkpoint.parquet")
    acts = pq.read_table(ck).to_pylist()
    assert len(acts) == 2 + len(apps) + len(live) == json.loads(out.stdout)["rows"]

    def field(d, k):
        return d[k] if k in d else None

    def as_map(m):
        return None if m is None else list(m.items())

    m = acts[1]["metaData"]
    assert m["id"] == "ck-1" and m["name"] == "orders" and m["description"] is None
    assert m["format"] == {"provider": "parquet", "options": [("x", "y"), ("z", None)]}
    assert m["partitionColumns"] == ["p", "q"]
    assert m["configuration"] == as_map(meta["configuration"])
    assert m["createdTime"] == meta["createdTime"] and m["schemaString"] == meta["schemaString"]
    assert acts[0]["protocol"]["minWriterVersion"] == 2
    got_apps = {r["txn"]["appId"]: r["txn"]["version"] for r in acts if r["txn"]}
    assert got_apps == apps
    adds = {r["add"]["path"]: r["add"] for r in acts if r["add"]}
    assert sorted(adds) == sorted(live)
    for p, want in live.items():
        got = adds[p]
        assert got["partitionValues"] == as_map(want["partitionValues"])
        assert got["tags"] == as_map(field(want, "tags"))
        for k in ("size", "modificationTime", "dataChange"):
            assert got[k] == want[k]
        assert got["stats"] == field(want, "stats")
        assert got["baseRowId"] is None

    duckdb = pytest.importorskip("duckdb")
    n = duckdb.sql(f"select count(*) filter (where add is not null), "
                   f"count(*) filter (where txn is not null), "
                   f"sum(len(map_keys(add.partitionValues))) from read_parquet('{ck}')").fetchall()[0]
    assert n == (len(live), len(apps), 2 * len(live))
