#!/usr/bin/env python3
"""
lake_bench.py — the helper of lake_bench.sh (zx's mirror into Delta Lake and
Iceberg beside dlt and pyiceberg).  Each subcommand does one measured series
and prints one JSON object (the shell keeps it in a file); `report` reads
them all and prints the table.  It measures; it does not judge.

The workspace is a SQLite file with `base` (the N rows, made once) and
`items` (what the syncs read: reset to `base` before each series):
    id INTEGER PRIMARY KEY, email TEXT, plan TEXT, amount REAL,
    active BOOLEAN, updated_at TIMESTAMP
A series is three runs on one fresh table:
    1. the first run (N rows);
    2. after a random 1% change: 0.5% of the ids updated (plan || '+',
       amount + 1, updated_at), 0.5% deleted, chosen with random.Random(seed);
    3. after a clustered 1% change among the last 1% of ids (every other one
       updated, the others deleted).
After each run the table is read back (deltalake / pyiceberg) and must hold
exactly the workspace's rows: count, sum(id), sum(amount), count of '+'
plans.  A mismatch is printed as such and the series is marked wrong.

  make-ws   --db F --rows N
  config    --out zxd.yaml ...           zxd's configuration (every sync)
  zx-series --db F --name SYNC --kind delta|iceberg ...
  floor     --name SYNC --file F         zx replace into one Parquet file
  peer      --db F --kind dlt-delta|dlt-iceberg|pyiceberg ...
  report    --dir D
"""
import argparse
import datetime
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time

COLS = ["id", "email", "plan", "amount", "active", "updated_at"]
DDL = ("(id INTEGER PRIMARY KEY, email TEXT, plan TEXT, amount REAL, active BOOLEAN, "
       "updated_at TIMESTAMP)")
QUERY = "SELECT id, email, plan, amount, active, updated_at FROM items"


# ---- the workspace --------------------------------------------------------------------------

def cmd_make_ws(a):
    t0 = time.monotonic()
    db = sqlite3.connect(a.db)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("DROP TABLE IF EXISTS base")
    db.execute("CREATE TABLE base " + DDL)
    db.execute(
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?) "
        "INSERT INTO base SELECT i, 'user' || i || '@example.com', "
        "CASE i % 3 WHEN 0 THEN 'free' WHEN 1 THEN 'pro' ELSE 'team' END, "
        "(i * 37 % 10000) / 100.0, i % 2, "
        "printf('2026-01-%02dT%02d:%02d:00.000000Z', 1 + i % 28, i % 24, i % 60) FROM s",
        (a.rows,))
    db.commit()
    db.close()
    reset(a.db)
    print(json.dumps({"rows": a.rows, "seconds": round(time.monotonic() - t0, 2),
                      "db_bytes": os.path.getsize(a.db)}))
    return 0


def reset(path):
    db = sqlite3.connect(path)
    db.execute("DROP TABLE IF EXISTS items")
    db.execute("CREATE TABLE items " + DDL)
    db.execute("INSERT INTO items SELECT * FROM base")
    db.commit()
    db.close()


def change(path, kind, seed):
    """Apply one 1% change to items; returns (updated ids, deleted ids)."""
    db = sqlite3.connect(path)
    n = db.execute("SELECT max(id) FROM base").fetchone()[0]
    k = max(2, n // 100)
    if kind == "random":
        ids = random.Random(seed).sample(range(1, n + 1), k)
        upd, dele = ids[:k // 2], ids[k // 2:]
    else:   # clustered: the last 1% of ids
        last = range(n - k + 1, n + 1)
        upd, dele = [i for i in last if i % 2 == 0], [i for i in last if i % 2 == 1]
    db.execute("CREATE TEMP TABLE u (id INTEGER PRIMARY KEY)")
    db.execute("CREATE TEMP TABLE d (id INTEGER PRIMARY KEY)")
    db.executemany("INSERT INTO u VALUES (?)", [(i,) for i in upd])
    db.executemany("INSERT INTO d VALUES (?)", [(i,) for i in dele])
    db.execute(f"UPDATE items SET plan = plan || '+', amount = amount + 1, "
               f"updated_at = '2026-03-0{1 if kind == 'random' else 2}T12:00:00.000000Z' "
               f"WHERE id IN (SELECT id FROM u)")
    db.execute("DELETE FROM items WHERE id IN (SELECT id FROM d)")
    db.commit()
    db.close()
    return upd, dele


def expected(path, kept=()):
    """The figures of items; kept: ids deleted from items that a peer which
    cannot delete still holds (with the values they had in base)."""
    db = sqlite3.connect(path)
    db.execute("CREATE TEMP TABLE k (id INTEGER PRIMARY KEY)")
    db.executemany("INSERT INTO k VALUES (?)", [(i,) for i in kept])
    c, s, am, plus = db.execute(
        "SELECT count(*), coalesce(sum(id), 0), coalesce(sum(amount), 0), sum(plan LIKE '%+') "
        "FROM (SELECT id, plan, amount FROM items UNION ALL "
        "SELECT id, plan, amount FROM base WHERE id IN (SELECT id FROM k))").fetchone()
    db.close()
    return {"count": c, "sum_id": s, "sum_amount": round(am, 3), "plus": plus or 0}


def summary_of(t):
    """The same figures from an Arrow table read back."""
    import pyarrow.compute as pc
    import pyarrow as pa
    plan = t.column("plan")
    if plan.type == pa.string_view():     # delta-rs' own scan gives string views
        plan = plan.cast(pa.string())
    plus = pc.sum(pc.ends_with(plan, "+")).as_py() or 0
    return {"count": t.num_rows, "sum_id": pc.sum(t.column("id")).as_py() or 0,
            "sum_amount": round(pc.sum(t.column("amount")).as_py() or 0, 3), "plus": plus}


def arrow_of_items(path, extra_deleted=()):
    """items as an Arrow table (what a Python peer reads from the source),
    plus a tombstone row (deleted = true) for each id of extra_deleted."""
    import pyarrow as pa
    db = sqlite3.connect(path)
    rows = db.execute(QUERY + " ORDER BY id").fetchall()
    db.close()
    cols = list(zip(*rows)) if rows else [()] * len(COLS)
    # the conversions in Arrow (C++), not row by row in Python
    t = pa.table({"id": pa.array(cols[0], pa.int64()), "email": pa.array(cols[1], pa.string()),
                  "plan": pa.array(cols[2], pa.string()),
                  "amount": pa.array(cols[3], pa.float64()),
                  "active": pa.array(cols[4], pa.int64()).cast(pa.bool_()),
                  "updated_at": pa.array(cols[5], pa.string()).cast(
                      pa.timestamp("us", tz="UTC"))})
    if extra_deleted is None:
        return t
    t = t.append_column("deleted", pa.array([False] * t.num_rows, pa.bool_()))
    if extra_deleted:
        n = len(extra_deleted)
        tomb = pa.table({"id": pa.array(sorted(extra_deleted), pa.int64()),
                         "email": pa.nulls(n, pa.string()), "plan": pa.nulls(n, pa.string()),
                         "amount": pa.nulls(n, pa.float64()), "active": pa.nulls(n, pa.bool_()),
                         "updated_at": pa.nulls(n, pa.timestamp("us", tz="UTC")),
                         "deleted": pa.array([True] * n, pa.bool_())})
        t = pa.concat_tables([t, tomb])
    return t


# ---- reading the tables back ---------------------------------------------------------------

def s3_options(a):
    return {"AWS_ENDPOINT_URL": a.s3_endpoint, "AWS_REGION": a.s3_region,
            "AWS_ACCESS_KEY_ID": a.s3_key, "AWS_SECRET_ACCESS_KEY": a.s3_secret,
            "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}


def read_delta(path, so=None):
    import deltalake
    import pyarrow as pa
    dt = deltalake.DeltaTable(path, storage_options=so)
    if "deletionVectors" in (dt.protocol().reader_features or []):
        # delta-rs' pyarrow dataset refuses deletion vectors; its scan applies them
        t = pa.table(pa.RecordBatchReader.from_stream(dt.scan(columns=["id", "plan",
                                                                       "amount"])))
    else:
        t = dt.to_pyarrow_table(columns=["id", "plan", "amount"])
    adds = dt.get_add_actions(flatten=True)
    return summary_of(t), {"version": dt.version(), "live_files": adds.num_rows,
                           "live_bytes": int(sum(adds.column("size_bytes").to_pylist()))}


def catalog(uri, a=None):
    from pyiceberg.catalog.rest import RestCatalog
    props = {"uri": uri}
    if a is not None and getattr(a, "s3_endpoint", None):
        props.update({"s3.endpoint": a.s3_endpoint, "s3.region": a.s3_region,
                      "s3.access-key-id": a.s3_key, "s3.secret-access-key": a.s3_secret,
                      "s3.force-virtual-addressing": "false"})
    return RestCatalog("lakebench", **props)


def read_iceberg(cat, ident):
    t = cat.load_table(ident)
    data = t.scan(selected_fields=("id", "plan", "amount")).to_arrow()
    files = t.inspect.files()
    return summary_of(data), {"snapshots": len(t.snapshots()), "live_files": files.num_rows,
                              "live_bytes": int(sum(files.column("file_size_in_bytes").to_pylist()))}


# ---- zx ------------------------------------------------------------------------------------

def _ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")) if s else None


def zx_run(a, name):
    cmd = [a.zxctl, "-s", a.sock, "--json", "run", name, "--wait"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    rec = {}
    for line in reversed(p.stdout.strip().splitlines()):
        try:
            rec = json.loads(line)
            break
        except ValueError:
            continue
    st, en = _ts(rec.get("started_at")), _ts(rec.get("ended_at"))
    out = {"wall": round(wall, 3),
           "seconds": round((en - st).total_seconds(), 3) if st and en else None,
           **{k: rec.get(k) for k in ("state", "made", "rows_read", "rows_sent", "rows_deleted",
                                     "files_added", "files_removed", "bytes")}}
    if p.returncode != 0 or rec.get("state") != "succeeded":
        out["error"] = rec.get("error") or (p.stderr.strip() or p.stdout.strip())[-2000:]
    return out


def cmd_zx_series(a):
    """reset, first run, random change, run, clustered change, run; each read back."""
    reset(a.db)
    res = {"name": a.name, "kind": a.kind, "where": a.where, "file_rows": a.file_rows,
           "runs": [], "wrong": False}
    so = s3_options(a) if a.where == "s3" else None
    cat = catalog(a.catalog_uri, a if a.where == "s3" else None) if a.kind == "iceberg" else None
    for step in ("first", "random", "clustered"):
        if step != "first":
            change(a.db, step, a.seed)
        r = zx_run(a, a.name)
        r["step"] = step
        want = expected(a.db)
        if "error" not in r:
            try:
                got, table = (read_delta(a.path, so) if a.kind == "delta"
                              else read_iceberg(cat, a.ident))
                r["table"] = table
                r["check"] = "ok" if got == want else f"WRONG: table {got}, workspace {want}"
            except Exception as e:                  # noqa: BLE001 (a failure is a finding)
                r["check"] = f"WRONG: could not read the table back: {e}"[:600]
        else:
            r["check"] = "run failed"
        res["wrong"] |= r["check"] != "ok"
        res["runs"].append(r)
        print(f"   zx {a.name} {step}: {r.get('seconds')} s, files +{r.get('files_added')} "
              f"-{r.get('files_removed')}, {r.get('bytes')} B; {r['check']}"
              + (f"; error {r['error']}" if "error" in r else ""), file=sys.stderr)
        if "error" in r:
            break
    print(json.dumps(res))
    return 0


def cmd_warm(a):
    """A run of a small sync (not measured): the catalog's JVM, the first
    connection to moto and the namespace are made before the figures."""
    r = zx_run(a, a.name)
    print(json.dumps(r))
    return 0 if "error" not in r else 1


def cmd_floor(a):
    runs = []
    for _ in range(a.repeat):
        r = zx_run(a, a.name)
        if "error" in r:
            print(json.dumps({"error": r["error"]}))
            return 1
        import pyarrow.parquet as pq
        r["file_rows"] = pq.ParquetFile(a.file).metadata.num_rows
        r["file_bytes"] = os.path.getsize(a.file)
        runs.append(r)
    print(json.dumps({"runs": runs, "seconds": statistics.median(r["seconds"] for r in runs)}))
    return 0


# ---- the peers ------------------------------------------------------------------------------

def dir_stats(path):
    n = b = 0
    for root, _, files in os.walk(path):
        for f in files:
            if f.endswith(".parquet"):
                n += 1
                b += os.path.getsize(os.path.join(root, f))
    return n, b


def cmd_peer(a):
    """The same series by a peer.  Every run is given every current row
    (as zx's mirror reads them) plus a tombstone per id deleted since the
    last run (dlt: the hard_delete column; pyiceberg: table.delete)."""
    reset(a.db)
    res = {"kind": a.kind, "runs": [], "wrong": False}
    deleted, kept = [], []
    # dlt's iceberg upsert is pyiceberg's table.upsert: it has no hard_delete
    # (a tombstone would become a row of NULLs), so it gets no tombstones and
    # its table must hold the deleted rows as they were
    deletes = a.kind != "dlt-iceberg"
    if not deletes:
        res["note"] = "deletes not applied: dlt's iceberg upsert has no hard_delete"
    step_fn = {"dlt-delta": dlt_step, "dlt-iceberg": dlt_step, "pyiceberg": pyiceberg_step}[a.kind]
    state = {}
    for step in ("first", "random", "clustered"):
        if step != "first":
            _, deleted = change(a.db, step, a.seed)
            if not deletes:
                kept = sorted(set(kept) | set(deleted))
        t0 = time.monotonic()
        t = arrow_of_items(a.db, deleted if a.kind == "dlt-delta" else None)
        read_s = time.monotonic() - t0
        r = {"step": step, "read_seconds": round(read_s, 3)}
        try:
            t1 = time.monotonic()
            step_fn(a, state, t, deleted)
            r["write_seconds"] = round(time.monotonic() - t1, 3)
            r["seconds"] = round(read_s + r["write_seconds"], 3)
            got, table = state["read"]()
            want = expected(a.db, kept)
            r["table"] = table
            r["check"] = "ok" if got == want else f"WRONG: table {got}, workspace {want}"
        except Exception as e:                      # noqa: BLE001
            r["error"] = f"{type(e).__name__}: {e}"[:800]
            r["check"] = "run failed"
        res["wrong"] |= r["check"] != "ok"
        res["runs"].append(r)
        print(f"   {a.kind} {step}: {r.get('seconds')} s (read {read_s:.2f}); {r['check']}"
              + (f"; error {r['error']}" if "error" in r else ""), file=sys.stderr)
        if "error" in r:
            break
    print(json.dumps(res))
    return 0


def dlt_step(a, state, t, deleted):
    import dlt
    fmt = "delta" if a.kind == "dlt-delta" else "iceberg"
    if "pipe" not in state:
        state["pipe"] = dlt.pipeline(
            pipeline_name=f"lakebench_{fmt}", pipelines_dir=a.pipelines_dir,
            destination=dlt.destinations.filesystem(bucket_url="file://" + a.out),
            dataset_name="bench", dev_mode=False)
        state["read"] = lambda: dlt_read(a, fmt)
    res = dlt.resource(t, name="items", primary_key="id", table_format=fmt,
                       write_disposition={"disposition": "merge", "strategy": "upsert"},
                       columns={"deleted": {"hard_delete": True, "data_type": "bool"}})
    info = state["pipe"].run(res, loader_file_format="parquet")
    if info.has_failed_jobs:
        raise RuntimeError("dlt: failed jobs")


def dlt_read(a, fmt):
    path = os.path.join(a.out, "bench", "items")
    if fmt == "delta":
        got, table = read_delta(path)
    else:
        from pyiceberg.table import StaticTable
        meta = sorted(f for f in os.listdir(os.path.join(path, "metadata"))
                      if f.endswith(".metadata.json"))[-1]
        t = StaticTable.from_metadata(os.path.join(path, "metadata", meta))
        data = t.scan(selected_fields=("id", "plan", "amount")).to_arrow()
        files = t.inspect.files()
        got, table = summary_of(data), {"snapshots": len(t.snapshots()),
                                        "live_files": files.num_rows,
                                        "live_bytes": int(sum(files.column("file_size_in_bytes")
                                                              .to_pylist()))}
    n, b = dir_stats(path)
    table.update({"all_files": n, "all_bytes": b})
    return got, table


def pyiceberg_step(a, state, t, deleted):
    from pyiceberg.expressions import In
    if "tbl" not in state:
        cat = catalog(a.catalog_uri)
        ns = a.namespace
        try:
            cat.create_namespace(ns)
        except Exception:                           # noqa: BLE001 (already there)
            pass
        state["tbl"] = cat.create_table(f"{ns}.pyice", schema=t.schema)
        state["read"] = lambda: read_iceberg(cat, f"{ns}.pyice")
    tbl = state["tbl"]
    tbl.upsert(t, join_cols=["id"])
    if deleted:
        tbl.delete(In("id", list(deleted)))


# ---- the configuration ---------------------------------------------------------------------

def cmd_config(a):
    """zxd.yaml: one sync per (target, file_rows, repetition) and the floor."""
    syncs = json.loads(a.syncs)
    lines = ["server:", "  data_dir: ./var", "  control_socket: zxd.sock",
             f"  file_roots: {json.dumps(a.file_roots)}",
             "  http:", f'    listen: "127.0.0.1:{a.port}"',
             "workspace:", "  sqlite:", f"    path: {json.dumps(a.db)}", "pipelines:"]
    for name, dest in syncs.items():
        mode = "replace" if "files" in dest else "mirror"
        q = QUERY + " WHERE id <= 1000" if name.startswith("warm") else QUERY
        lines += [f"  {name}:", "    direction: out", "    author: bench",
                  f"    query: {json.dumps(q)}", f"    destination: {json.dumps(dest)}",
                  f"    mode: {mode}"]
        if mode == "mirror":
            lines.append("    key: [id]")
    lines += ["authors:", "  bench: {tables: [items]}", "connections:"]
    if a.catalog_dir:
        lines += ["  cat_dir:", "    kind: iceberg_rest", f"    uri: {json.dumps(a.catalog_dir)}"]
    if a.catalog_s3:
        lines += ["  cat_s3:", "    kind: iceberg_rest", f"    uri: {json.dumps(a.catalog_s3)}"]
    if a.s3_endpoint:
        lines += ["  s3:", "    kind: aws", f"    region: {a.s3_region}",
                  f"    endpoint: {json.dumps(a.s3_endpoint)}", "    path_style: true",
                  f"    access_key_id: {a.s3_key}", f"    secret_access_key: {a.s3_secret}"]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


# ---- the report ----------------------------------------------------------------------------

def _load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _fmt_s(x):
    return "-" if x is None else f"{x:.2f}"


def cmd_report(a):
    d = a.dir
    meta = _load(os.path.join(d, "meta.json")) or {}
    ws = _load(os.path.join(d, "ws.json")) or {}
    series = {}
    for f in sorted(os.listdir(d)):
        if f.startswith("zx_") and f.endswith(".json"):
            s = _load(os.path.join(d, f))
            if s:
                series.setdefault((s["kind"], s["where"], s["file_rows"]), []).append(s)
    print()
    print("=" * 118)
    print(f"zx mirror (key id) into Delta Lake and Iceberg: {ws.get('rows', 0):,} rows "
          "(id, email, plan, amount, active, updated_at), SQLite workspace")
    for k, v in meta.items():
        print(f"  {k}: {v}")
    print("-" * 118)
    print("Each figure: the median over the repetitions (run record ended_at - started_at); "
          "files +added/-removed and bytes written from the run record;")
    print("'table' = live data files / MB after the run (read from the table).  'check' = the "
          "table read back holds exactly the workspace's rows.")
    print(f"{'target':<34} {'run':<10} {'s (each rep)':<22} {'median':>7}  {'files':>9} "
          f"{'MB written':>10}  {'table':>15}  check")
    firsts = {}
    wrong = 0
    for key in sorted(series):
        kind, where, fr = key
        lab = f"zx {kind} {where} file_rows {fr}"
        for i, step in enumerate(("first", "random", "clustered")):
            runs = [s["runs"][i] for s in series[key] if len(s["runs"]) > i]
            secs = [r.get("seconds") for r in runs]
            med = _med(secs)
            if step == "first":
                firsts[key] = med
            r0 = runs[0] if runs else {}
            tb = r0.get("table") or {}
            checks = {r.get("check") for r in runs}
            wrong += sum(1 for r in runs if r.get("check") not in ("ok", "run failed"))
            print(f"{lab if i == 0 else '':<34} {step:<10} "
                  f"{' '.join(_fmt_s(x) for x in secs):<22} {_fmt_s(med):>7}  "
                  f"+{r0.get('files_added', '?')}/-{r0.get('files_removed', '?'):<4} "
                  f"{(r0.get('bytes') or 0) / 1e6:>10.1f}  "
                  f"{tb.get('live_files', '?'):>4} / {(tb.get('live_bytes') or 0) / 1e6:6.1f} MB  "
                  f"{'ok' if checks == {'ok'} else '; '.join(sorted(c or '?' for c in checks))}"
                  + (f"  error: {r0['error'][:200]}" if r0.get("error") else ""))
    floor = _load(os.path.join(d, "floor.json"))
    fl = floor.get("seconds") if floor and "error" not in floor else None
    print("-" * 118)
    if floor:
        if fl:
            r = floor["runs"][0]
            print(f"floor: zx replace into one Parquet file (files, zstd): "
                  f"{' '.join(_fmt_s(x['seconds']) for x in floor['runs'])} s, median {fl:.2f} s, "
                  f"{r['file_bytes'] / 1e6:.1f} MB, {r['file_rows']:,} rows")
        else:
            print(f"floor: FAILED: {floor.get('error')}")
    peers = {}
    for kind in ("dlt-delta", "dlt-iceberg", "pyiceberg"):
        p = _load(os.path.join(d, f"peer_{kind}.json"))
        if not p:
            continue
        peers[kind] = p
        if p.get("note"):
            print(f"{kind + ' (folder)':<34} note: {p['note']}")
        if p.get("error"):
            print(f"{kind + ' (folder)':<34} FAILED: {p['error']}")
        for i, r in enumerate(p["runs"]):
            tb = r.get("table") or {}
            wrong += r.get("check") not in ("ok", "run failed")
            print(f"{kind + ' (folder)' if i == 0 else '':<34} {r['step']:<10} "
                  f"{_fmt_s(r.get('seconds')):>7} s (reading the source {r['read_seconds']:.2f} s "
                  f"of it)  table {tb.get('live_files', '?')} files / "
                  f"{(tb.get('live_bytes') or 0) / 1e6:.1f} MB"
                  + (f", folder {tb['all_files']} files / {tb['all_bytes'] / 1e6:.1f} MB"
                     if "all_files" in tb else "")
                  + f"  {r.get('check')}" + (f"  error: {r['error'][:300]}" if r.get("error") else ""))
    print("-" * 118)
    print("Ratios (zx / peer: below 1 means zx is faster), folder, file_rows default:")
    for kind, fmt in (("dlt-delta", "delta"), ("dlt-iceberg", "iceberg"), ("pyiceberg", "iceberg")):
        p = peers.get(kind)
        key = (fmt, "folder", "default")
        if not p or key not in series:
            continue
        for i, step in enumerate(("first", "random", "clustered")):
            zs = _med(s["runs"][i].get("seconds") for s in series[key] if len(s["runs"]) > i)
            ps = p["runs"][i].get("seconds") if len(p["runs"]) > i else None
            pw = p["runs"][i].get("write_seconds") if len(p["runs"]) > i else None
            if zs and ps:
                print(f"  zx {fmt} / {kind:<12} {step:<10} {zs / ps:6.3f}   (zx {zs:.2f} s, "
                      f"{kind} {ps:.2f} s; without its read of the rows: {zs / pw:.3f})")
    if fl:
        print("zx's first run / floor (replace into one Parquet file):")
        for key, v in sorted(firsts.items()):
            if v:
                print(f"  zx {key[0]} {key[1]} file_rows {key[2]:<8} {v / fl:6.2f}   "
                      f"({v:.2f} s / {fl:.2f} s)")
    st = _load(os.path.join(d, "store.json"))
    if st and st.get("syncs"):
        print(f"zxd's data folder after the runs: {st['store_bytes'] / 1e9:.2f} GB for {st['syncs']} "
              f"mirror syncs of {ws.get('rows', 0):,} rows (the keys' hashes each keeps), "
              f"{st['store_bytes'] / st['syncs'] / max(1, ws.get('rows', 1)):.0f} B per row per sync")
    print(f"tables read back with the wrong rows: {wrong}" + ("" if wrong == 0 else "   <-- WRONG DATA")
          + "   (failed runs are shown as such above)")
    print("=" * 118)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)

    def s3(c):
        c.add_argument("--s3-endpoint")
        c.add_argument("--s3-region", default="us-east-1")
        c.add_argument("--s3-key")
        c.add_argument("--s3-secret")
    c = sub.add_parser("make-ws")
    c.add_argument("--db", required=True)
    c.add_argument("--rows", type=int, required=True)
    c = sub.add_parser("config")
    c.add_argument("--out", required=True)
    c.add_argument("--db", required=True)
    c.add_argument("--port", required=True)
    c.add_argument("--syncs", required=True, help="JSON {name: destination}")
    c.add_argument("--file-roots", nargs="+", required=True)
    c.add_argument("--catalog-dir")
    c.add_argument("--catalog-s3")
    s3(c)
    for name in ("zx-series", "floor", "warm"):
        c = sub.add_parser(name)
        c.add_argument("--zxctl", required=True)
        c.add_argument("--sock", required=True)
        c.add_argument("--name", required=True)
        s3(c)
    c = sub.choices["zx-series"]
    c.add_argument("--db", required=True)
    c.add_argument("--kind", choices=("delta", "iceberg"), required=True)
    c.add_argument("--where", choices=("folder", "s3"), required=True)
    c.add_argument("--file-rows", required=True)
    c.add_argument("--seed", type=int, required=True)
    c.add_argument("--path", help="delta: the table's path")
    c.add_argument("--catalog-uri", help="iceberg: the REST catalog")
    c.add_argument("--ident", help="iceberg: namespace.table")
    c = sub.choices["floor"]
    c.add_argument("--file", required=True)
    c.add_argument("--repeat", type=int, default=3)
    c = sub.add_parser("peer")
    c.add_argument("--db", required=True)
    c.add_argument("--kind", choices=("dlt-delta", "dlt-iceberg", "pyiceberg"), required=True)
    c.add_argument("--seed", type=int, required=True)
    c.add_argument("--out", help="dlt: the filesystem destination's folder")
    c.add_argument("--pipelines-dir")
    c.add_argument("--catalog-uri")
    c.add_argument("--namespace", default="lakebench_peer")
    c = sub.add_parser("report")
    c.add_argument("--dir", required=True)
    a = ap.parse_args()
    return {"make-ws": cmd_make_ws, "config": cmd_config, "zx-series": cmd_zx_series,
            "floor": cmd_floor, "warm": cmd_warm, "peer": cmd_peer, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
