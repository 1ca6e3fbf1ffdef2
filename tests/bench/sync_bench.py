#!/usr/bin/env python3
"""
sync_bench.py — the helper of sync_bench.sh (zx's reverse syncs beside
pyarrow and dlt).  Each subcommand does one measured step and prints one
JSON object (the shell keeps it in a file); `report` reads them all and
prints the table.  No thresholds: it measures, it does not judge.

  make-table --dsn D --rows N      the workspace table bench_rows
  update --dsn D --rows N          UPDATE 1% of the rows (id % 100 = 0)
  zx-run --zxctl Z --sock S --name N [--full]
                                   `zxctl --json run N --wait`, timed
  check-pg --src D --dst D --table T
                                   does the destination hold the source's rows?
  arrow-ref --dsn D --out F --zx-file F
                                   pyarrow.parquet.write_table (zstd) of the
                                   rows read once beforehand (read not timed)
  dlt-fs --src D --out DIR --pipelines-dir P
                                   dlt: sql_database (pyarrow) -> filesystem parquet
  dlt-pg --src D --dst D --pipelines-dir P --run K [--no-cursor] [--format F]
                                   dlt: sql_database (pyarrow) -> postgres, merge on id
  report --dir DIR                 the table of every figure

Only 127.0.0.1; it changes nothing but the databases and folders it is given.
"""

import argparse
import datetime
import glob
import json
import os
import subprocess
import sys
import time

TABLE = "bench_rows"
COLS = "id, email, plan, amount, active, updated_at"


def _psycopg():
    import psycopg
    return psycopg


# ---- CPU seconds: who used the machine during a step ------------------------------

_HZ = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid):
    """(ppid, cpu seconds) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    w = s[s.rfind(")") + 2:].split()
    return int(w[1]), (int(w[11]) + int(w[12])) / _HZ


def _machine_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / _HZ          # all but idle and iowait


class Cpu:
    """Samples /proc every 50 ms in a thread while a step runs: the CPU
    seconds of zxd and its children, of the Postgres server's processes, of
    this helper and its children (dlt, psql, pqwrite), and of the rest of
    the machine (other people's builds and tests).  A process that ends
    loses at most its last 50 ms; the sampler's own CPU is counted apart."""

    def __init__(self, zxd_pid=None, pg_datadir=None):
        import threading
        self.zxd = zxd_pid
        self.pm = None
        try:
            with open(os.path.join(pg_datadir or "", "postmaster.pid")) as f:
                self.pm = int(f.readline())
        except (OSError, ValueError):
            pass
        self.base, self.last = {}, {}
        self.stop_ev = threading.Event()
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.first = True
        self.own = 0.0

    def _sample(self):
        st = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                x = _proc_stat(int(d))
                if x:
                    st[int(d)] = x
        kids = {}
        for pid, (pp, _) in st.items():
            kids.setdefault(pp, []).append(pid)

        def tree(root):
            out, todo = set(), [root] if root else []
            while todo:
                p = todo.pop()
                if p in st and p not in out:
                    out.add(p)
                    todo += kids.get(p, [])
            return out
        groups = (("zx", tree(self.zxd)), ("pg", tree(self.pm)), ("me", tree(os.getpid())))
        for pid, (_, c) in st.items():
            for name, members in groups:
                if pid in members:
                    if pid not in self.base:
                        self.base[pid] = c if self.first else 0.0
                    self.last[pid] = (name, c)
                    break
        self.first = False

    def _loop(self):
        t = time.thread_time()
        while not self.stop_ev.wait(0.05):
            self._sample()
        self.own = time.thread_time() - t       # this sampler's CPU, not the step's

    def start(self):
        self.m0, self.t0 = _machine_busy(), time.monotonic()
        self._sample()
        self.th.start()
        return self

    def stop(self):
        self.stop_ev.set()
        self.th.join()
        self._sample()
        out = {"zx": 0.0, "pg": 0.0, "me": 0.0}
        for pid, (name, c) in self.last.items():
            out[name] += max(0.0, c - self.base.get(pid, 0.0))
        busy = _machine_busy() - self.m0
        out["me"] = max(0.0, out["me"] - self.own)
        out = {k: round(v, 2) for k, v in out.items()}
        out["sampler"] = round(self.own, 2)
        out["others"] = round(max(0.0, busy - sum(out.values())), 2)
        out["wall"] = round(time.monotonic() - self.t0, 3)
        out["cores"] = os.cpu_count()
        return out


# ---- the data -------------------------------------------------------------------

def cmd_make_table(a):
    """bench_rows: id bigint primary key, email (~20 bytes), plan, amount,
    active, updated_at; VACUUM ANALYZE so every reader starts alike."""
    psycopg = _psycopg()
    t0 = time.monotonic()
    with psycopg.connect(a.dsn, autocommit=True) as c:
        c.execute(f"DROP TABLE IF EXISTS {TABLE}")
        c.execute(f"""CREATE TABLE {TABLE} (id bigint PRIMARY KEY, email text, plan text,
                       amount double precision, active boolean, updated_at timestamptz)""")
        c.execute(f"""INSERT INTO {TABLE}
            SELECT g, 'user' || lpad(g::text, 7, '0') || '@ex.org',
                   (ARRAY['free', 'pro', 'team', 'enterprise'])[1 + g %% 4],
                   round((g %% 100000) * 1.37, 2), g %% 3 <> 0,
                   timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second'
            FROM generate_series(1, %s) g""", (a.rows,))
        c.execute(f"VACUUM (FREEZE, ANALYZE) {TABLE}")
        size = c.execute(f"SELECT pg_size_pretty(pg_table_size('{TABLE}')), "
                         f"(SELECT round(avg(octet_length(email))) FROM {TABLE} WHERE id <= 10000) "
                         ).fetchone()
    print(json.dumps({"rows": a.rows, "seconds": round(time.monotonic() - t0, 3),
                      "heap": size[0], "email_bytes": int(size[1])}))
    return 0


def cmd_update(a):
    """1% of the rows, spread over the whole table (every 100th id): a new
    plan, amount and updated_at."""
    psycopg = _psycopg()
    t0 = time.monotonic()
    with psycopg.connect(a.dsn, autocommit=True) as c:
        n = c.execute(f"""UPDATE {TABLE} SET plan = plan || '+', amount = amount + 1,
                          updated_at = now() WHERE id % 100 = 0""").rowcount
        c.execute(f"VACUUM ANALYZE {TABLE}")
    print(json.dumps({"updated": n, "seconds": round(time.monotonic() - t0, 3)}))
    return 0


# ---- zx ------------------------------------------------------------------------------

def _ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")) if s else None


def cmd_zx_run(a):
    """One run, waited for: the wall clock of `zxctl run --wait` and the
    run's record (its started_at / ended_at give the run's own seconds)."""
    cmd = [a.zxctl, "-s", a.sock, "--json", "run", a.name, "--wait"] + (["--full"] if a.full else [])
    cpu = Cpu(a.zxd_pid, a.pg_datadir).start()
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    cpu = cpu.stop()
    rec = {}
    for line in reversed(p.stdout.strip().splitlines()):
        try:
            rec = json.loads(line)
            break
        except ValueError:
            continue
    st, en = _ts(rec.get("started_at")), _ts(rec.get("ended_at"))
    out = {"name": a.name, "rc": p.returncode, "wall": round(wall, 3), "record": rec, "cpu": cpu,
           "run_seconds": round((en - st).total_seconds(), 3) if st and en else None}
    if p.returncode != 0 or rec.get("state") != "succeeded":
        out["error"] = rec.get("error") or (p.stderr.strip() or p.stdout.strip())[-2000:]
    if a.file and os.path.exists(a.file):
        out["file_bytes"] = os.path.getsize(a.file)
        try:
            import pyarrow.parquet as pq
            md = pq.ParquetFile(a.file).metadata
            out["file_rows"] = md.num_rows
            out["file_row_groups"] = md.num_row_groups
            out["file_codec"] = md.row_group(0).column(0).compression if md.num_row_groups else None
            out["file_schema"] = str(pq.read_schema(a.file)).replace("\n", "; ")
        except Exception as e:          # a file pyarrow cannot read is a finding
            out["file_error"] = str(e)[:500]
    print(json.dumps(out))
    return 0 if "error" not in out else 1


def cmd_check_pg(a):
    """The destination table against the source: count, sum(amount), the
    number of '+' plans (the updated rows) and a hash of everything."""
    psycopg = _psycopg()
    q = ("SELECT count(*), sum(amount), count(*) FILTER (WHERE plan LIKE '%+'), "
         "md5(string_agg(md5(concat_ws('|', id, email, plan, amount, active, "
         "extract(epoch FROM updated_at))), '' ORDER BY id)) FROM {t}")
    with psycopg.connect(a.src) as c:
        s = c.execute(q.format(t=TABLE)).fetchone()
    with psycopg.connect(a.dst) as c:
        d = c.execute(q.format(t=a.table)).fetchone()
    same = tuple(s) == tuple(d)
    print(json.dumps({"same": same, "src": [str(x) for x in s], "dst": [str(x) for x in d]}))
    return 0


# ---- the floor: psql's COPY ------------------------------------------------------------

def cmd_copy_ref(a):
    """What the server and libpq alone take: `psql \\copy (SELECT ...) TO
    /dev/null` (reading the rows out), and `\\copy ... TO STDOUT | psql
    \\copy ... FROM STDIN` into a fresh table with its primary key in the
    destination database (a first upsert's floor)."""
    sel = f"SELECT {COLS} FROM {TABLE}"
    out = {}
    cpu = Cpu(None, a.pg_datadir).start()
    t0 = time.monotonic()
    subprocess.run(["psql", a.src, "-qc", f"\\copy ({sel}) TO '/dev/null'"], check=True)
    out["read_seconds"] = round(time.monotonic() - t0, 3)
    out["read_cpu"] = cpu.stop()
    # the same in COPY's binary form, as zx reads these columns
    cpu = Cpu(None, a.pg_datadir).start()
    t0 = time.monotonic()
    subprocess.run(["psql", a.src, "-qc", f"\\copy ({sel}) TO '/dev/null' (FORMAT binary)"],
                   check=True)
    out["read_bin_seconds"] = round(time.monotonic() - t0, 3)
    out["read_bin_cpu"] = cpu.stop()
    psycopg = _psycopg()
    with psycopg.connect(a.dst, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS zxbench_copy")
        c.execute("CREATE TABLE zxbench_copy (id bigint PRIMARY KEY, email text, plan text, "
                  "amount double precision, active boolean, updated_at timestamptz)")
    pipe = (f"psql '{a.src}' -qc \"\\\\copy ({sel}) TO STDOUT\" | "
            f"psql '{a.dst}' -v ON_ERROR_STOP=1 -qc '\\copy zxbench_copy FROM STDIN'")
    cpu = Cpu(None, a.pg_datadir).start()
    t0 = time.monotonic()
    subprocess.run(["bash", "-o", "pipefail", "-c", pipe], check=True)
    out["copy_seconds"] = round(time.monotonic() - t0, 3)
    out["copy_cpu"] = cpu.stop()
    with psycopg.connect(a.dst, autocommit=True) as c:
        out["rows"] = c.execute("SELECT count(*) FROM zxbench_copy").fetchone()[0]
        c.execute("DROP TABLE zxbench_copy")
    print(json.dumps(out))
    return 0


# ---- pyarrow --------------------------------------------------------------------------

def read_arrow(dsn):
    """The whole table as an Arrow table, with the types Postgres has
    (psycopg; not timed by the callers)."""
    import pyarrow as pa
    psycopg = _psycopg()
    with psycopg.connect(dsn) as c:
        rows = c.execute(f"SELECT {COLS} FROM {TABLE} ORDER BY id").fetchall()
    cols = list(zip(*rows)) if rows else [[]] * 6
    schema = pa.schema([("id", pa.int64()), ("email", pa.string()), ("plan", pa.string()),
                        ("amount", pa.float64()), ("active", pa.bool_()),
                        ("updated_at", pa.timestamp("us", tz="UTC"))])
    return pa.Table.from_arrays([pa.array(list(v), type=f.type) for v, f in zip(cols, schema)],
                                schema=schema)


def run_pqwrite(binary, tbl, path, repeat):
    """zx's Parquet writer alone (tests/tools/pqwrite, zstd) on the same rows,
    given as NDJSON on its stdin, updated_at as timestamp values (as the
    run's reader gives them: --typed-timestamps): its write_seconds count
    only the time inside the writer (zx_pq_write / zx_pq_finish), not the
    parsing.  Best of `repeat` runs, as pyarrow's."""
    ndjson = path + ".ndjson"
    cols = [c.to_pylist() for c in tbl.columns]
    with open(ndjson, "w") as f:
        f.write(json.dumps([["id", "int64"], ["email", "text"], ["plan", "text"],
                            ["amount", "double"], ["active", "bool"],
                            ["updated_at", "timestamp"]]) + "\n")
        for r in zip(*cols):
            ts = r[5].strftime("%Y-%m-%dT%H:%M:%S.%fZ") if r[5] is not None else None
            f.write(json.dumps([r[0], r[1], r[2], r[3], r[4], ts]) + "\n")
    try:
        best = None
        for _ in range(repeat):
            with open(ndjson) as f:
                p = subprocess.run([binary, path, "--codec", "zstd", "--typed-timestamps"],
                                   stdin=f, capture_output=True, text=True)
            if p.returncode != 0:
                return {"error": p.stderr.strip()[-500:]}
            r = json.loads(p.stdout.strip().splitlines()[-1])
            if best is None or r["write_seconds"] < best["write_seconds"]:
                best = r
        return best
    finally:
        for x in (ndjson, path):
            if os.path.exists(x):
                os.unlink(x)


def cmd_arrow_ref(a):
    import pyarrow
    import pyarrow.parquet as pq
    t0 = time.monotonic()
    tbl = read_arrow(a.dsn)
    read_s = time.monotonic() - t0
    best = None
    for _ in range(a.repeat):
        if os.path.exists(a.out):
            os.unlink(a.out)
        t0 = time.monotonic()
        pq.write_table(tbl, a.out, compression="zstd")
        s = time.monotonic() - t0
        best = s if best is None else min(best, s)
    out = {"rows": tbl.num_rows, "read_seconds": round(read_s, 3), "write_seconds": round(best, 3),
           "repeat": a.repeat, "bytes": os.path.getsize(a.out), "pyarrow": pyarrow.__version__,
           "row_groups": pq.ParquetFile(a.out).metadata.num_row_groups}
    if a.pqwrite:
        out["pqwrite"] = run_pqwrite(a.pqwrite, tbl, a.out + ".pqwrite", a.repeat)
    # zx's file, read back by pyarrow: the same rows and values?
    if a.zx_file and os.path.exists(a.zx_file):
        try:
            z = pq.read_table(a.zx_file)
            zs = z.sort_by("id")
            same_cols = [c for c in tbl.column_names if c in z.column_names and
                         zs.column(c).cast(tbl.schema.field(c).type).equals(tbl.column(c))]
            out["zx_file_rows"] = z.num_rows
            out["zx_file_equal_columns"] = same_cols
        except Exception as e:
            out["zx_file_error"] = str(e)[:500]
    print(json.dumps(out))
    return 0


# ---- dlt -----------------------------------------------------------------------------------

def _dlt_env(pipelines_dir):
    os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
    os.environ.setdefault("RUNTIME__LOG_LEVEL", "ERROR")
    # Parquet written with zstd, as zx and the pyarrow reference write it
    for sec in ("DATA_WRITER__COMPRESSION", "NORMALIZE__DATA_WRITER__COMPRESSION",
                "EXTRACT__DATA_WRITER__COMPRESSION"):
        os.environ.setdefault(sec, "zstd")
    os.makedirs(pipelines_dir, exist_ok=True)


def _dlt_source(src, cursor):
    from dlt.sources.sql_database import sql_database
    s = sql_database(credentials=src, table_names=[TABLE], backend="pyarrow")
    if cursor is not None:
        s.resources[TABLE].apply_hints(**cursor)
    return s


def _dlt_stages(trace):
    """Seconds of extract, normalize and load from a pipeline's trace."""
    out = {}
    for st in getattr(trace, "steps", []) or []:
        if st.started_at and st.finished_at:
            out[st.step] = round((st.finished_at - st.started_at).total_seconds(), 3)
    return out


def cmd_dlt_fs(a):
    _dlt_env(a.pipelines_dir)
    import dlt
    t_imp = time.monotonic()
    p = dlt.pipeline(pipeline_name="zxbench_fs", pipelines_dir=a.pipelines_dir,
                     destination=dlt.destinations.filesystem(bucket_url="file://" + a.out),
                     dataset_name="bench")
    src = _dlt_source(a.src, None)
    cpu = Cpu(None, a.pg_datadir).start()
    t0 = time.monotonic()
    info = p.run(src, loader_file_format="parquet", write_disposition="replace")
    secs = time.monotonic() - t0
    cpu = cpu.stop()
    files = sorted(glob.glob(os.path.join(a.out, "bench", TABLE, "**", "*.parquet"), recursive=True)
                   + glob.glob(os.path.join(a.out, "bench", TABLE + "*"), recursive=False))
    files = [f for f in dict.fromkeys(files) if os.path.isfile(f)]
    nbytes = sum(os.path.getsize(f) for f in files)
    rows = codec = None
    try:
        import pyarrow.parquet as pq
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        md = pq.ParquetFile(files[0]).metadata
        codec = md.row_group(0).column(0).compression
    except Exception:
        pass
    print(json.dumps({"seconds": round(secs, 3), "setup_seconds": round(t0 - t_imp, 3),
                      "stages": _dlt_stages(p.last_trace), "files": len(files), "bytes": nbytes,
                      "rows": rows, "codec": codec, "dlt": dlt.__version__, "cpu": cpu,
                      "failed_jobs": info.has_failed_jobs}))
    return 0


def cmd_dlt_pg(a):
    _dlt_env(a.pipelines_dir)
    import dlt
    hints = {"write_disposition": "merge", "primary_key": "id"}
    if not a.no_cursor:
        hints["incremental"] = dlt.sources.incremental("updated_at")
    p = dlt.pipeline(pipeline_name="zxbench_pg", pipelines_dir=a.pipelines_dir,
                     destination=dlt.destinations.postgres(credentials=a.dst),
                     dataset_name="bench")
    src = _dlt_source(a.src, hints)
    kw = {"loader_file_format": a.format} if a.format else {}
    cpu = Cpu(None, a.pg_datadir).start()
    t0 = time.monotonic()
    info = p.run(src, **kw)
    secs = time.monotonic() - t0
    cpu = cpu.stop()
    # the rows it moved this run, and the format its load jobs used
    rows = None
    try:
        rows = p.last_trace.last_normalize_info.row_counts.get(TABLE)
    except Exception:
        pass
    fmts = set()
    try:
        for pkg in info.load_packages:
            for jobs in pkg.jobs.values():
                for j in jobs:
                    fmts.add(j.job_file_info.file_format)
    except Exception:
        pass
    print(json.dumps({"run": a.run, "cursor": not a.no_cursor, "seconds": round(secs, 3),
                      "stages": _dlt_stages(p.last_trace), "rows": rows,
                      "formats": sorted(fmts), "dlt": dlt.__version__, "cpu": cpu,
                      "failed_jobs": info.has_failed_jobs}))
    return 0


# ---- the report ---------------------------------------------------------------------------

def _load(d, name):
    try:
        with open(os.path.join(d, name + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _rate(rows, s):
    return f"{rows / s:,.0f}" if rows and s else "-"


def _mb(b):
    return f"{b / 1e6:.1f} MB" if b else "-"


def _cpu(c, me="python"):
    """'CPU s: zx 1.2, postgres 0.8, python 0.1, rest of the machine 2.0'."""
    if not c:
        return ""
    parts = [f"zx {c['zx']:.1f}"] if c.get("zx") else []
    parts.append(f"postgres {c['pg']:.1f}")
    if c.get("me", 0) >= 0.05:
        parts.append(f"{me} {c['me']:.1f}")
    parts.append(f"rest of the machine {c['others']:.1f}")
    return "CPU s: " + ", ".join(parts)


def cmd_report(a):
    d = a.dir
    meta = _load(d, "meta") or {}
    tab = _load(d, "table") or {}
    upd = _load(d, "update") or {}
    n = tab.get("rows") or 0
    lines = []

    def row(what, secs, rows, extra="", cpu=None, me="python"):
        ok = secs is not None
        lines.append(f"{what:<58} {('%.2f s' % secs) if ok else 'FAILED':>10} "
                     f"{_rate(rows, secs) + ' rows/s' if ok else '':>18}  {extra}")
        if cpu:
            lines.append(f"{'':<90}{_cpu(cpu, me)}")

    print()
    print("=" * 118)
    print(f"Reverse syncs, zx beside dlt: {n:,} rows of bench_rows (id bigint pk, email ~"
          f"{tab.get('email_bytes', '?')} B, plan, amount, active, updated_at; heap {tab.get('heap', '?')})")
    for k in ("machine", "postgres", "zx", "dlt", "pyarrow"):
        if meta.get(k):
            print(f"  {k}: {meta[k]}")
    print("-" * 118)
    print(f"{'step':<58} {'time':>10} {'rate':>18}  notes")

    # 0. the floor
    cr = _load(d, "copy_ref")
    if cr:
        row("floor: psql \\copy (SELECT ...) TO /dev/null", cr["read_seconds"], cr["rows"],
            "reading the rows out of Postgres, nothing else", cr.get("read_cpu"), "psql")
        if "read_bin_seconds" in cr:
            row("floor: the same, COPY's binary form", cr["read_bin_seconds"], cr["rows"],
                "as zx reads these columns", cr.get("read_bin_cpu"), "psql")
        row("floor: psql \\copy out | \\copy in (table with pk)", cr["copy_seconds"], cr["rows"],
            "into a fresh table of the destination database", cr.get("copy_cpu"), "psql")

    # 1. zx -> postgres, upsert (and with cursor: updated_at)
    z1, z2 = _load(d, "zx_pg_1"), _load(d, "zx_pg_2")
    zc1, zc2 = _load(d, "zx_pg_c1"), _load(d, "zx_pg_c2")
    second = (f"second run, after UPDATE of {upd.get('updated', '?'):,} rows"
              if isinstance(upd.get('updated'), int) else "second run")
    for what, tag, z in (("zx to_pg (upsert)", "first run", z1), ("zx to_pg (upsert)", second, z2),
                         ("zx to_pg_cursor (upsert, cursor)", "first run", zc1),
                         ("zx to_pg_cursor (upsert, cursor)", second, zc2)):
        if not z:
            continue
        r = z.get("record") or {}
        ok = "error" not in z
        row(f"{what} {tag}", z.get("run_seconds") if ok else None,
            r.get("rows_read"),
            f"read {r.get('rows_read', 0):,}, sent {r.get('rows_sent', 0):,} "
            f"(ins {r.get('rows_inserted', 0):,}, upd {r.get('rows_updated', 0):,}, "
            f"unchanged {r.get('rows_unchanged', 0):,}); zxctl wall {z['wall']:.2f} s"
            if ok else f"error: {z.get('error')}", z.get("cpu"), "zxctl")
    if z1 and z2 and "error" not in z1 and "error" not in z2 and z1.get("run_seconds"):
        lines.append(f"{'':<58} second/first = {z2['run_seconds'] / z1['run_seconds']:.3f} "
                     f"(zxctl wall: {z2['wall'] / z1['wall']:.3f})")
    for k, lab in (("check_zx_1", "after the first run"), ("check_zx_2", "after the second run"),
                   ("check_zx_c1", "after the cursor sync's first run"),
                   ("check_zx_c2", "after the cursor sync's second run")):
        c = _load(d, k)
        if c:
            lines.append(f"{'':<58} destination == source {lab}: {'yes' if c['same'] else 'NO ' + json.dumps(c)}")

    # 2. parquet
    zp = _load(d, "zx_parquet")
    if zp:
        r = zp.get("record") or {}
        ok = "error" not in zp
        row("zx to_parquet (replace, files, zstd)", zp.get("run_seconds") if ok else None,
            r.get("rows_read"),
            (f"{_mb(zp.get('file_bytes'))}, {zp.get('file_row_groups', '?')} row groups, "
             f"{zp.get('file_codec')}; zxctl wall {zp['wall']:.2f} s") if ok else
            f"error: {zp.get('error')}", zp.get("cpu"), "zxctl")
    ar = _load(d, "arrow_ref")
    if ar:
        row("pyarrow.parquet.write_table (zstd), in-memory table", ar["write_seconds"], ar["rows"],
            f"{_mb(ar['bytes'])}, {ar['row_groups']} row groups; best of {ar['repeat']}; "
            f"the read into Arrow ({ar['read_seconds']:.1f} s, psycopg) not counted")
        pw = ar.get("pqwrite")
        if pw and "error" not in pw:
            row("zx's Parquet writer alone (pqwrite, zstd), same rows", pw["write_seconds"],
                pw["rows"], f"{_mb(pw['bytes'])}, {pw['row_groups']} row groups; best of {ar['repeat']}; "
                "time inside zx_pq_write/finish only (rows parsed from NDJSON beforehand, "
                "updated_at as timestamps)")
        elif pw:
            lines.append(f"{'':<58} pqwrite failed: {pw['error']}")
        if "zx_file_rows" in ar:
            lines.append(f"{'':<58} zx's file read back by pyarrow: {ar['zx_file_rows']:,} rows, columns "
                         f"equal to the source: {', '.join(ar['zx_file_equal_columns']) or 'none'}")
    dfs = _load(d, "dlt_fs")
    if dfs:
        row("dlt sql_database(pyarrow) -> filesystem parquet", dfs["seconds"], dfs.get("rows") or n,
            f"{_mb(dfs['bytes'])} in {dfs['files']} file(s), {dfs.get('codec')}; stages "
            + ", ".join(f"{k} {v:.1f}" for k, v in dfs.get("stages", {}).items())
            + " (2 columns of its own: _dlt_load_id, _dlt_id)", dfs.get("cpu"), "dlt")

    # 3. dlt -> postgres
    dp = [(_load(d, k), lab) for k, lab in (
        ("dlt_pg_1", "dlt -> postgres merge, first run (cursor updated_at)"),
        ("dlt_pg_2", "dlt -> postgres merge, second run (cursor updated_at)"),
        ("dlt_pg_3", "dlt -> postgres merge, second run without cursor"))]
    for r, lab in dp:
        if r:
            row(lab, r["seconds"], r.get("rows"),
                f"{r.get('rows') or 0:,} rows loaded; {'/'.join(r.get('formats') or []) or '?'}; stages "
                + ", ".join(f"{k} {v:.1f}" for k, v in r.get("stages", {}).items()),
                r.get("cpu"), "dlt")
    for k, lab in (("check_dlt_1", "after its first run"), ("check_dlt_2", "after its second run")):
        c = _load(d, k)
        if c:
            lines.append(f"{'':<58} dlt's table == source {lab}: {'yes' if c['same'] else 'NO ' + json.dumps(c)}")
    for ln in lines:
        print(ln)

    # ratios
    print("-" * 118)
    print("zx against the others (time of the other / time of zx: above 1 means zx is faster):")

    def ratio(lab, zx_s, other_s):
        if zx_s and other_s:
            print(f"  {lab:<78} {other_s / zx_s:7.1f}x  (zx {zx_s:.2f} s, other {other_s:.2f} s)")
        else:
            print(f"  {lab:<78}   n/a")
    ok = lambda z: z and "error" not in z
    zp_s = zp.get("run_seconds") if ok(zp) else None
    ratio("parquet: pyarrow write_table (write only) / zx run (read + write)", zp_s,
          ar and ar["write_seconds"])
    pw = (ar or {}).get("pqwrite") or {}
    if pw.get("write_seconds"):
        ratio("parquet writer alone: pyarrow write_table / zx pqwrite", pw["write_seconds"],
              ar["write_seconds"])
    ratio("parquet: dlt filesystem / zx to_parquet", zp_s, dfs and dfs["seconds"])
    z1s = z1.get("run_seconds") if ok(z1) else None
    z2s = z2.get("run_seconds") if ok(z2) else None
    d1, d2, d3 = (x[0] for x in dp)
    if cr:
        ratio("reading only: psql \\copy TO /dev/null / zx to_parquet (read + write)", zp_s,
              cr["read_seconds"])
        ratio("reading only, binary: psql \\copy (FORMAT binary) / zx to_parquet", zp_s,
              cr.get("read_bin_seconds"))
        ratio("postgres, first run: psql \\copy out | in / zx upsert", z1s, cr["copy_seconds"])
    ratio("postgres, first run: dlt merge / zx upsert", z1s, d1 and d1["seconds"])
    ratio("postgres, second run: dlt merge with an updated_at cursor / zx upsert", z2s,
          d2 and d2["seconds"])
    ratio("postgres, second run: dlt merge without cursor (re-reads all) / zx upsert", z2s,
          d3 and d3["seconds"])
    zc2s = zc2.get("run_seconds") if ok(zc2) else None
    ratio("postgres, second run: dlt merge with an updated_at cursor / zx with cursor: updated_at",
          zc2s, d2 and d2["seconds"])
    if zc2s and d2:
        wall = zc2["wall"]
        ratio("  the same, zx's zxctl wall clock (run --wait) instead of its run record", wall,
              d2["seconds"])
    print("  (zx's times: the run record's ended_at - started_at; `zxctl run --wait` wall clock "
          "beside it.  dlt's: pipeline.run(), dlt imported and the pipeline object made beforehand.")
    print("   CPU s: used during the step by zxd and its children, the Postgres server, the "
          "helper (dlt, psql), and everything else on the machine: a large last figure means "
          "other work shared the cores and slowed the step.)")
    print("=" * 118)
    return 0


def cmd_field(a):
    with open(a.file) as f:
        v = json.load(f)
    for k in a.path.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    print("" if v is None else v)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("make-table")
    c.add_argument("--dsn", required=True)
    c.add_argument("--rows", type=int, required=True)
    c = sub.add_parser("update")
    c.add_argument("--dsn", required=True)
    c = sub.add_parser("zx-run")
    c.add_argument("--zxctl", required=True)
    c.add_argument("--sock", required=True)
    c.add_argument("--name", required=True)
    c.add_argument("--full", action="store_true")
    c.add_argument("--file", help="the Parquet file the run writes (its size, its codec)")
    c.add_argument("--zxd-pid", type=int)
    c.add_argument("--pg-datadir")
    c = sub.add_parser("copy-ref")
    c.add_argument("--src", required=True)
    c.add_argument("--dst", required=True)
    c.add_argument("--pg-datadir")
    c = sub.add_parser("check-pg")
    c.add_argument("--src", required=True)
    c.add_argument("--dst", required=True)
    c.add_argument("--table", required=True)
    c = sub.add_parser("arrow-ref")
    c.add_argument("--dsn", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--zx-file")
    c.add_argument("--repeat", type=int, default=3)
    c.add_argument("--pqwrite", help="tests/tools/pqwrite: zx's Parquet writer alone, same rows")
    c = sub.add_parser("dlt-fs")
    c.add_argument("--src", required=True)
    c.add_argument("--pg-datadir")
    c.add_argument("--out", required=True)
    c.add_argument("--pipelines-dir", required=True)
    c = sub.add_parser("dlt-pg")
    c.add_argument("--src", required=True)
    c.add_argument("--pg-datadir")
    c.add_argument("--dst", required=True)
    c.add_argument("--pipelines-dir", required=True)
    c.add_argument("--run", type=int, required=True)
    c.add_argument("--no-cursor", action="store_true")
    c.add_argument("--format", help="loader_file_format (default: dlt's own choice)")
    c = sub.add_parser("report")
    c.add_argument("--dir", required=True)
    c = sub.add_parser("field")
    c.add_argument("file")
    c.add_argument("path")
    a = ap.parse_args()
    return {"make-table": cmd_make_table, "update": cmd_update, "zx-run": cmd_zx_run,
            "check-pg": cmd_check_pg, "copy-ref": cmd_copy_ref, "arrow-ref": cmd_arrow_ref, "dlt-fs": cmd_dlt_fs,
            "dlt-pg": cmd_dlt_pg, "report": cmd_report, "field": cmd_field}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
