#!/usr/bin/env python3
"""
parquet_bench.py — zx's Parquet writer (formats/parquet.h, driven by
tests/tools/pqwrite --generate) against pyarrow.parquet.write_table on the
same rows: id int64 = i; name text "user-NNNNNN@example.org" (i % 10000,
NULL when i % 1000 == 999); amount double i * 0.5; ts timestamp[us, UTC]
2020-01-01 + i s; flag bool i % 3 == 0.

Both sides time the write only (zx: inside zx_pq_write / zx_pq_finish, the
rowsets being made outside the clock; pyarrow: write_table of a table
already in memory).  pyarrow's runs share one process, whose memory pool
stays warm after the first; so each zx run writes the file twice in one
process (pqwrite --repeat 2, as zxd writes file after file) and its second
write is the one compared; the first (a fresh process faulting its
buffers' pages in) is printed too.  The runs alternate (zx, pyarrow with its defaults,
pyarrow with zx's dictionary choice, again) so that a shared machine's load
falls on all alike; best of --repeat runs each.  Prints each side's settings,
rows/s, file sizes and the ratios (pyarrow's time / zx's: above 1, zx is
faster).

Settings: both write data pages v1 of about 1 MiB, column statistics, the
same codec (zstd at level 1 on both: Arrow's default level is 1).  zx puts
text columns through a dictionary (PLAIN past 1 MiB of dictionary) and
writes the others PLAIN; pyarrow's default tries the dictionary on every
column (falling back to PLAIN past its 1 MiB dictionary page), so the
second pyarrow line (use_dictionary=[text columns]) makes the same choice
as zx.  Row groups: zx cuts at 128 MiB buffered, pyarrow at 1Mi rows (one
group either way at the default 1M rows).

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
    codec = a.codec if a.codec != "none" else "NONE"
    t = table(a.rows)
    sides = {"zx": None, "zx_cold": None, "pyarrow": None, "pyarrow_dict_text": None}
    zx_info = None
    with tempfile.TemporaryDirectory(prefix="zxpq_bench_") as d:
        zx_path, pa_path = os.path.join(d, "zx.parquet"), os.path.join(d, "pa.parquet")
        pa2_path = os.path.join(d, "pa2.parquet")

        def best(k, dt):
            sides[k] = dt if sides[k] is None else min(sides[k], dt)

        for _ in range(a.repeat):
            out = subprocess.run([pqwrite, zx_path, "--generate", str(a.rows), "--codec", a.codec,
                                  "--repeat", "2"],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            if zx_info is None or r["write_seconds"] < zx_info["write_seconds"]:
                zx_info = r
            best("zx", r["write_seconds"])
            best("zx_cold", r["write_seconds_first"])
            t0 = time.perf_counter()
            pq.write_table(t, pa_path, compression=codec)
            best("pyarrow", time.perf_counter() - t0)
            t0 = time.perf_counter()
            pq.write_table(t, pa2_path, compression=codec, use_dictionary=["name"])
            best("pyarrow_dict_text", time.perf_counter() - t0)
        # the files hold the same values
        zt = pq.read_table(zx_path)
        assert zt.equals(pq.read_table(pa_path)), "files differ"
        assert zt.equals(pq.read_table(pa2_path)), "files differ"
        files = (("zx", zx_path), ("zx_cold", zx_path), ("pyarrow", pa_path),
                 ("pyarrow_dict_text", pa2_path))
        sizes = {k: os.path.getsize(p) for k, p in files}
        groups = {k: pq.ParquetFile(p).metadata.num_row_groups for k, p in files}
    level = " level 1" if a.codec == "zstd" else ""
    print(f"rows {a.rows:,}  codec {a.codec}{level}  best of {a.repeat}, runs alternated  "
          f"(pyarrow {pa.__version__})")
    label = {
        "zx": "zx pqwrite, 2nd file of the process (dictionary: text cols)",
        "zx_cold": "zx pqwrite, 1st file of a fresh process",
        "pyarrow": "pyarrow write_table, defaults (dictionary: every column)",
        "pyarrow_dict_text": "pyarrow write_table, use_dictionary=['name'] (zx's choice)",
    }
    for k in sides:
        print(f"{label[k]:<62} {sides[k]:.3f} s  {a.rows / sides[k]:>12,.0f} rows/s  "
              f"{sizes[k]:>12,} bytes  {groups[k]} row group(s)")
    print(f"(zx with making the rows: {zx_info['total_seconds']:.3f} s)")
    print(f"ratio pyarrow defaults / zx: {sides['pyarrow'] / sides['zx']:.2f}   "
          f"pyarrow zx's dictionary choice / zx: {sides['pyarrow_dict_text'] / sides['zx']:.2f}   "
          f"(zx's 1st file: {sides['pyarrow'] / sides['zx_cold']:.2f}, "
          f"{sides['pyarrow_dict_text'] / sides['zx_cold']:.2f})")


if __name__ == "__main__":
    main()
