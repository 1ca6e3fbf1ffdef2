#!/usr/bin/env python3
"""
parquet_bench.py — zx's Parquet writer (formats/parquet.h, driven by
tests/tools/pqwrite --generate) against pyarrow.parquet.write_table on the
same rows: id int64 = i; name text "user-NNNNNN@example.org" (i % 10000,
NULL when i % 1000 == 999); amount double i * 0.5; ts timestamp[us, UTC]
2020-01-01 + i s; flag bool i % 3 == 0.

Both sides time the write only (zx: inside zx_pq_write / zx_pq_finish, the
rowsets being made outside the clock; pyarrow: write_table of a table
already in memory), best of --repeat runs.  Prints rows/s and file sizes.

    python3 tests/bench/parquet_bench.py [--rows N] [--codec zstd|snappy|none]
                                         [--build BUILD_DIR] [--repeat K]
Run by hand; never timed in tests.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def table(n):
    """The rows pqwrite --generate makes, built with pyarrow.compute."""
    i = pa.array(range(n), pa.int64())

    def mod(x, m):
        return pc.subtract(x, pc.multiply(pc.divide(x, m), m))

    names = pc.binary_join_element_wise(
        "user-", pc.utf8_lpad(pc.cast(mod(i, 10000), pa.string()), 6, "0"), "@example.org", "")
    names = pc.if_else(pc.equal(mod(i, 1000), 999), pa.scalar(None, pa.string()), names)
    amount = pc.multiply(pc.cast(i, pa.float64()), 0.5)
    ts = pc.cast(pc.add(pc.multiply(i, 1000000), 1577836800000000), pa.timestamp("us", tz="UTC"))
    flag = pc.equal(mod(i, 3), 0)
    return pa.table({"id": i, "name": names, "amount": amount, "ts": ts, "flag": flag})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--codec", default="zstd")
    ap.add_argument("--build", default=os.environ.get("ZX_BUILD_DIR", os.path.join(REPO, "build")))
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    pqwrite = os.path.join(a.build, "tests", "tools", "pqwrite")
    with tempfile.TemporaryDirectory(prefix="zxpq_bench_") as d:
        zx_path, pa_path = os.path.join(d, "zx.parquet"), os.path.join(d, "pa.parquet")
        best = None
        for _ in range(a.repeat):
            out = subprocess.run([pqwrite, zx_path, "--generate", str(a.rows), "--codec", a.codec],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            if best is None or r["write_seconds"] < best["write_seconds"]:
                best = r
        t = table(a.rows)
        pa_best = None
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            pq.write_table(t, pa_path, compression=a.codec if a.codec != "none" else "NONE")
            dt = time.perf_counter() - t0
            pa_best = dt if pa_best is None else min(pa_best, dt)
        # the two files hold the same values
        assert pq.read_table(zx_path).equals(pq.read_table(pa_path)), "files differ"
        zx_size, pa_size = os.path.getsize(zx_path), os.path.getsize(pa_path)
        print(f"rows {a.rows:,}  codec {a.codec}")
        print(f"zx      {best['write_seconds']:.3f} s  {a.rows / best['write_seconds']:,.0f} rows/s  "
              f"{zx_size:,} bytes  {best['row_groups']} row group(s)  "
              f"(with making the rows: {best['total_seconds']:.3f} s)")
        print(f"pyarrow {pa_best:.3f} s  {a.rows / pa_best:,.0f} rows/s  {pa_size:,} bytes  "
              f"{pq.ParquetFile(pa_path).metadata.num_row_groups} row group(s)  "
              f"(pyarrow {pa.__version__})")


if __name__ == "__main__":
    main()
