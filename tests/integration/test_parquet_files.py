"""
Parquet files written by zx (formats/parquet.h, through the test tool
tests/tools/pqwrite) read back by two independent readers, pyarrow and
DuckDB: the same values and types for every zx column type (NULLs,
unicode, empty strings, int64 limits, NaN and infinities, timestamps
before 1970, dates 0001-01-01 and 9999-12-31, decimals of many precisions
and scales up to 38, JSON, bytes), every codec, an empty file that keeps
its schema, files of several row groups (dictionary reset per group, a
dictionary that overflows to PLAIN), the column statistics readers see,
field ids and the writer's own file-level statistics (against pyarrow),
and 10,000,000 rows.

Binaries: $ZX_BUILD_DIR (default <repo>/build)/tests/tools/pqwrite.  No
server is needed; files go to pytest's tmp_path.
"""

import datetime
import decimal
import json
import math
import os
import subprocess

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.path.abspath(os.environ.get("ZX_BUILD_DIR", os.path.join(REPO, "build")))
PQWRITE = os.path.join(BUILD_DIR, "tests", "tools", "pqwrite")

UTC = datetime.timezone.utc
D = decimal.Decimal


def pqwrite(path, schema, rows, *args):
    """Write rows (lists of JSON values) with pqwrite; return its summary."""
    assert os.access(PQWRITE, os.X_OK), f"{PQWRITE} is not built (ninja -C {BUILD_DIR})"
    lines = [json.dumps(schema)] + [json.dumps(r) for r in rows]
    p = subprocess.run([PQWRITE, str(path), *args], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


SCHEMA = [["id", "int64"], ["name", "text"], ["x", "double"], ["ok", "bool"],
          ["at", "timestamp"], ["day", "date"], ["d1", "decimal", 10, 2],
          ["d2", "decimal", 18, 6], ["d3", "decimal", 38, 10], ["d4", "decimal", 38, 0],
          ["d5", "decimal", 1, 0], ["d6", "decimal", 20, 20], ["doc", "json"],
          ["raw", "bytes"]]

ROWS = [
    [9223372036854775807, "h\u00e9llo w\u00f6rld \u2713 \U0001F600", 1.5, True,
     "2026-12-01T06:13:18.123456Z", "2024-02-29", "-123.45", "123456789012.123456",
     "1234567890123456789012345678.0123456789", "-99999999999999999999999999999999999999",
     "9", "0.12345678901234567890", {"a": [1, 2.5, {"b": None}], "c": "\u00e9"}, "bytes\u0000x"],
    [-9223372036854775808, "", "NaN", False, "1969-07-20T20:17:40Z", "0001-01-01",
     "0.005", "-0.0000005", "-0.00000000005", "0", "-9", "-0.00000000000000000001",
     [1, "two", None], ""],
    [None] * 14,
    [0, "a,b\"c\nd\te", "Infinity", True, "0001-01-01T00:00:00Z", "9999-12-31",
     "99999999.99", "999999999999.999999", "9999999999999999999999999999.9999999999",
     "99999999999999999999999999999999999999", "0", "0.99999999999999999999",
     "just a string", "\u00ff"],
    [-1, "x" * 200, "-Infinity", False, "9999-12-31T23:59:59.999999Z", "1970-01-01",
     "-0.01", "0.1", "1e3", "12e-1", "5", "-0.5", 42, "b"],
    [1, "-0.0", -0.0, None, "1900-01-01T00:00:00.000001+01:00", "1969-12-31",
     None, None, None, None, None, None, None, None],
    # misfits: each becomes NULL and is counted
    ["not a number", 7, "abc", "maybe", "yesterday", "2023-02-29", "1000000000",
     "1e20", "x", "1e38", "10", "1", "{oops", None],
]
MISFITS = 11   # row 7 but name (7 -> "7"), doc (text: a JSON string) and raw (NULL)


def expected():
    """Per column, the Python values a reader should give."""
    def ts(s):
        return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(UTC)

    nan = float("nan")
    return {
        "id": [9223372036854775807, -9223372036854775808, None, 0, -1, 1, None],
        "name": [ROWS[0][1], "", None, "a,b\"c\nd\te", "x" * 200, "-0.0", "7"],
        "x": [1.5, nan, None, math.inf, -math.inf, -0.0, None],
        "ok": [True, False, None, True, False, None, None],
        "at": [ts("2026-12-01T06:13:18.123456Z"), ts("1969-07-20T20:17:40Z"), None,
               ts("0001-01-01T00:00:00Z"), ts("9999-12-31T23:59:59.999999Z"),
               ts("1900-01-01T00:00:00.000001+01:00"), None],
        "day": [datetime.date(2024, 2, 29), datetime.date(1, 1, 1), None,
                datetime.date(9999, 12, 31), datetime.date(1970, 1, 1),
                datetime.date(1969, 12, 31), None],
        "d1": [D("-123.45"), D("0.01"), None, D("99999999.99"), D("-0.01"), None, None],
        "d2": [D("123456789012.123456"), D("-0.000001"), None, D("999999999999.999999"),
               D("0.100000"), None, None],
        "d3": [D("1234567890123456789012345678.0123456789"), D("-0.0000000001"), None,
               D("9999999999999999999999999999.9999999999"), D("1000.0000000000"), None, None],
        "d4": [D("-99999999999999999999999999999999999999"), D("0"), None,
               D("99999999999999999999999999999999999999"), D("1"), None, None],
        "d5": [D("9"), D("-9"), None, D("0"), D("5"), None, None],
        "d6": [D("0.12345678901234567890"), D("-0.00000000000000000001"), None,
               D("0.99999999999999999999"), D("-0.50000000000000000000"), None, None],
        "doc": [{"a": [1, 2.5, {"b": None}], "c": "\u00e9"}, [1, "two", None], None,
                "just a string", 42, None, "{oops"],
        "raw": [b"bytes\x00x", b"", None, "\u00ff".encode(), b"b", None, None],
    }


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, decimal.Decimal) and isinstance(b, decimal.Decimal):
        return a == b and a.as_tuple().exponent == b.as_tuple().exponent
    return a == b and type(a) is type(b)


def check_values(got, want, reader):
    for col, wv in want.items():
        gv = got[col]
        assert len(gv) == len(wv), (reader, col)
        for i, (g, w) in enumerate(zip(gv, wv)):
            if col == "doc" and g is not None:
                g = json.loads(g)
            assert same(g, w), f"{reader}: {col}[{i}] = {g!r}, want {w!r}"


PA_TYPES = {
    "id": pa.int64(), "name": pa.string(), "x": pa.float64(), "ok": pa.bool_(),
    "at": pa.timestamp("us", tz="UTC"), "day": pa.date32(), "d1": pa.decimal128(10, 2),
    "d2": pa.decimal128(18, 6), "d3": pa.decimal128(38, 10), "d4": pa.decimal128(38, 0),
    "d5": pa.decimal128(1, 0), "d6": pa.decimal128(20, 20), "raw": pa.binary(),
}
DUCK_TYPES = {
    "id": "BIGINT", "name": "VARCHAR", "x": "DOUBLE", "ok": "BOOLEAN",
    "at": "TIMESTAMP WITH TIME ZONE", "day": "DATE", "d1": "DECIMAL(10,2)",
    "d2": "DECIMAL(18,6)", "d3": "DECIMAL(38,10)", "d4": "DECIMAL(38,0)",
    "d5": "DECIMAL(1,0)", "d6": "DECIMAL(20,20)", "raw": "BLOB",
}


def check_pyarrow_schema(schema):
    for name, t in PA_TYPES.items():
        assert schema.field(name).type == t, (name, schema.field(name).type)
    doc = schema.field("doc").type
    # JSON: a string column, or pyarrow's JSON extension type over one
    assert doc == pa.string() or getattr(doc, "storage_type", None) == pa.string(), doc


def duck_read(path):
    con = duckdb.connect()
    rel = con.sql(f"SELECT * FROM read_parquet('{path}')")
    types = dict(zip(rel.columns, [str(t) for t in rel.types]))
    rows = rel.fetchall()
    cols = {c: [r[i] for r in rows] for i, c in enumerate(rel.columns)}
    # DuckDB's datetime.max clamps: compare timestamps as µs since the epoch
    us = con.sql(f'SELECT epoch_us("at") FROM read_parquet(\'{path}\')').fetchall()
    con.close()
    return types, cols, [u[0] for u in us]


def to_us(dt):
    return None if dt is None else (dt - datetime.datetime(1970, 1, 1, tzinfo=UTC)) // \
        datetime.timedelta(microseconds=1)


@pytest.mark.parametrize("codec", ["zstd", "snappy", "none"])
def test_every_type_read_back(tmp_path, codec):
    path = tmp_path / f"types-{codec}.parquet"
    out = pqwrite(path, SCHEMA, ROWS, "--codec", codec)
    assert out["rows"] == len(ROWS) and out["nulled"] == MISFITS
    want = expected()

    pf = pq.ParquetFile(path)
    assert pf.metadata.num_rows == len(ROWS)
    assert pf.metadata.created_by.startswith("zx")
    cc = pf.metadata.row_group(0).column(0).compression
    assert cc == {"zstd": "ZSTD", "snappy": "SNAPPY", "none": "UNCOMPRESSED"}[codec]
    t = pf.read()
    check_pyarrow_schema(t.schema)
    got = {c: t.column(c).to_pylist() for c in t.column_names}
    check_values(got, want, "pyarrow")

    types, cols, at_us = duck_read(path)
    for name, ty in DUCK_TYPES.items():
        assert types[name] == ty, (name, types[name])
    assert types["doc"] in ("JSON", "VARCHAR")
    wat = want.pop("at")
    assert at_us == [to_us(v) for v in wat]
    cols["raw"] = [None if v is None else bytes(v) for v in cols["raw"]]
    check_values(cols, want, "duckdb")


def test_logical_and_legacy_types(tmp_path):
    path = tmp_path / "meta.parquet"
    pqwrite(path, SCHEMA, ROWS[:2])
    s = pq.ParquetFile(path).schema
    by = {s.column(i).name: s.column(i) for i in range(len(s))}
    assert by["name"].physical_type == "BYTE_ARRAY" and by["name"].converted_type == "UTF8"
    assert by["doc"].converted_type == "JSON"
    assert by["day"].physical_type == "INT32" and by["day"].converted_type == "DATE"
    assert by["at"].physical_type == "INT64" and by["at"].converted_type == "TIMESTAMP_MICROS"
    assert str(by["at"].logical_type).startswith("Timestamp(isAdjustedToUTC=true, timeUnit=micro")
    assert by["d2"].physical_type == "INT64" and by["d2"].converted_type == "DECIMAL"
    assert by["d3"].physical_type == "FIXED_LEN_BYTE_ARRAY" and by["d3"].length == 16
    assert by["d6"].physical_type == "FIXED_LEN_BYTE_ARRAY" and by["d6"].length == 9
    assert by["raw"].physical_type == "BYTE_ARRAY" and by["raw"].converted_type == "NONE"
    assert all(by[c].max_definition_level == 1 for c in by)     # OPTIONAL


def test_statistics(tmp_path):
    path = tmp_path / "stats.parquet"
    pqwrite(path, SCHEMA, ROWS)
    rg = pq.ParquetFile(path).metadata.row_group(0)
    st = {rg.column(i).path_in_schema: rg.column(i).statistics for i in range(rg.num_columns)}
    assert st["id"].has_min_max and st["id"].min == -9223372036854775808
    assert st["id"].max == 9223372036854775807 and st["id"].null_count == 2
    # a string over 64 bytes is the max: no min/max, only the null count
    assert not st["name"].has_min_max and st["name"].null_count == 1
    assert st["ok"].min is False and st["ok"].max is True and st["ok"].null_count == 3
    assert st["day"].min == datetime.date(1, 1, 1) and st["day"].max == datetime.date(9999, 12, 31)
    assert st["d1"].min == D("-123.45") and st["d1"].max == D("99999999.99")
    assert st["d3"].min == D("-0.0000000001")
    assert st["d3"].max == D("9999999999999999999999999999.9999999999")
    assert st["d4"].min == D("-99999999999999999999999999999999999999")
    # NaN present: no min/max for the double column
    assert not st["x"].has_min_max and st["x"].null_count == 2

    path2 = tmp_path / "stats2.parquet"
    pqwrite(path2, [["s", "text"], ["x", "double"], ["t", "timestamp"]],
            [["pear", 2.5, "2001-01-01T00:00:00Z"], ["apple", -0.0, None],
             [None, 0.0, "1950-06-01T12:00:00Z"], ["\u00e9clair", -7.25, None]])
    rg = pq.ParquetFile(path2).metadata.row_group(0)
    s, x, t = (rg.column(i).statistics for i in range(3))
    assert (s.min, s.max, s.null_count) == ("apple", "\u00e9clair", 1)   # byte order
    assert (x.min, x.max, x.null_count) == (-7.25, 2.5, 0)
    assert t.min == datetime.datetime(1950, 6, 1, 12, tzinfo=UTC) and t.null_count == 2
    # DuckDB prunes with them and still finds the right rows
    con = duckdb.connect()
    assert con.sql(f"SELECT count(*) FROM '{path2}' WHERE x > 2").fetchall()[0][0] == 1
    assert con.sql(f"SELECT s FROM '{path2}' WHERE s = 'apple'").fetchall() == [("apple",)]


def test_empty_file_keeps_schema(tmp_path):
    path = tmp_path / "empty.parquet"
    out = pqwrite(path, SCHEMA, [])
    assert out["rows"] == 0 and out["row_groups"] == 0
    t = pq.read_table(path)
    assert t.num_rows == 0 and t.column_names == [c[0] for c in SCHEMA]
    check_pyarrow_schema(t.schema)
    types, cols, _ = duck_read(path)
    assert all(len(v) == 0 for v in cols.values())
    for name, ty in DUCK_TYPES.items():
        assert types[name] == ty


def test_row_groups_and_dictionary_fallback(tmp_path):
    """100,000 rows in row groups of ~2.5 MB and small pages: low-cardinality
    text goes through the dictionary in every row group; distinct text
    overflows the 1 MiB dictionary and falls back to PLAIN; every value
    still reads back."""
    n = 100000
    rows = []
    for i in range(n):
        rows.append([i, f"cat-{i % 7}" if i % 11 else None,
                     f"unique-{i:08d}-" + "z" * (i % 150),
                     i % 13 == 0, f"{i % 1000}.{i % 100:02d}"])
    schema = [["i", "int64"], ["cat", "text"], ["u", "text"], ["b", "bool"],
              ["m", "decimal", 12, 2]]
    path = tmp_path / "groups.parquet"
    out = pqwrite(path, schema, rows, "--row-group-bytes", "2500000", "--page-bytes", "8192")
    md = pq.ParquetFile(path).metadata
    assert out["row_groups"] == md.num_row_groups and md.num_row_groups > 3
    assert sum(md.row_group(g).num_rows for g in range(md.num_row_groups)) == n
    plain_only = 0
    for g in range(md.num_row_groups):
        cat, u = md.row_group(g).column(1), md.row_group(g).column(2)
        assert "RLE_DICTIONARY" in cat.encodings and cat.dictionary_page_offset is not None
        if "RLE_DICTIONARY" not in u.encodings:
            plain_only += 1
            assert u.dictionary_page_offset is None and "PLAIN" in u.encodings
    assert plain_only >= md.num_row_groups - 1      # the last group may be small
    t = pq.read_table(path)
    assert t.column("i").to_pylist() == list(range(n))
    assert t.column("cat").to_pylist() == [r[1] for r in rows]
    assert t.column("u").to_pylist() == [r[2] for r in rows]
    assert t.column("b").to_pylist() == [r[3] for r in rows]
    assert t.column("m").to_pylist() == [D(r[4]).quantize(D("0.01")) for r in rows]
    con = duckdb.connect()
    assert con.sql(f"SELECT count(*), count(cat), sum(i), sum(m) FROM '{path}'").fetchall()[0] == \
        (n, sum(1 for r in rows if r[1]), n * (n - 1) // 2, sum(D(r[4]) for r in rows))
    assert con.sql(f"SELECT count(DISTINCT u) FROM '{path}'").fetchall()[0][0] == n


def _signed(b):
    return int.from_bytes(b, "big", signed=True)


def test_field_ids_and_file_stats(tmp_path):
    """--field-ids: pyarrow sees each column's PARQUET:field_id.  --stats:
    the writer's file-level statistics (zx_pq_col_stats) over 40 row groups
    agree with what pyarrow reads of each column chunk, summed or folded,
    and with the data itself."""
    schema = [["i", "int64"], ["cat", "text"], ["u", "text"], ["b", "bool"],
              ["m", "decimal", 12, 2], ["q", "decimal", 30, 4], ["x", "double"],
              ["day", "date"], ["at", "timestamp"], ["raw", "bytes"], ["none", "int64"]]
    n = 20000
    rows = []
    for k in range(n):
        i = (k * 7919) % n                       # extremes away from the first group
        rows.append([i - 5000 if i % 9 else None, f"cat-{i % 7}",
                     f"unique-{i:06d}-" + "z" * (i % 80), i % 3 == 0,
                     f"{i % 1000 - 500}.{i % 100:02d}", f"-{i}.5" if i % 2 else f"{i}e20",
                     i * 0.25 - 77, f"{1900 + i % 300}-02-{1 + i % 28:02d}",
                     f"2020-01-01T00:00:{i % 60:02d}.{i:06d}Z", chr(i % 128) * (i % 5),
                     None])
    ids = list(range(3, 3 + len(schema)))
    path = tmp_path / "lake.parquet"
    out = pqwrite(path, schema, rows, "--row-group-bytes", "20000", "--field-ids",
                  ",".join(map(str, ids)), "--stats")
    f = pq.ParquetFile(path)
    md = f.metadata
    assert out["row_groups"] == md.num_row_groups and md.num_row_groups >= 10

    arrow = pq.read_schema(path)
    assert [arrow.field(c[0]).metadata[b"PARQUET:field_id"] for c in schema] == \
        [str(x).encode() for x in ids]
    assert [f.schema.column(k).name for k in range(len(schema))] == [c[0] for c in schema]

    cols = out["columns"]
    assert len(cols) == len(schema)
    for c, (name, ty, *_) in enumerate(schema):
        chunks = [md.row_group(g).column(c) for g in range(md.num_row_groups)]
        st = [ch.statistics for ch in chunks]
        got = cols[c]
        assert got["values"] == n and got["nans"] == 0, name
        assert got["nulls"] == sum(s.null_count for s in st), name
        assert got["compressed_bytes"] == sum(ch.total_compressed_size for ch in chunks), name
        assert got["uncompressed_bytes"] == sum(ch.total_uncompressed_size for ch in chunks), name
        if not all(s.has_min_max for s in st):
            continue
        if name == "q":
            lo = min((s.min_raw for s in st), key=_signed)
            hi = max((s.max_raw for s in st), key=_signed)
        else:
            lo, hi = min(s.min_raw for s in st), max(s.max_raw for s in st)
        if isinstance(lo, (bytes, str)):
            lo = (lo.encode() if isinstance(lo, str) else lo).hex()
            hi = (hi.encode() if isinstance(hi, str) else hi).hex()
        assert (got["min"], got["max"]) == (lo, hi), name

    by = {c[0]: cols[k] for k, c in enumerate(schema)}
    present = [r[0] for r in rows if r[0] is not None]
    assert (by["i"]["min"], by["i"]["max"], by["i"]["nulls"]) == \
        (min(present), max(present), n - len(present))
    # u: the max ("unique-019999-" and 79 z) is over 64 bytes: unknown
    assert "min" not in by["u"]
    assert (by["b"]["min"], by["b"]["max"]) == (0, 1)
    assert (by["m"]["min"], by["m"]["max"]) == (-50000, 49999)   # unscaled, scale 2
    assert _signed(bytes.fromhex(by["q"]["min"])) == -199995000   # scale 4
    assert _signed(bytes.fromhex(by["q"]["max"])) == 19998 * 10 ** 24
    assert (by["x"]["min"], by["x"]["max"]) == (-77, (n - 1) * 0.25 - 77)
    assert (by["day"]["min"], by["day"]["max"]) == \
        ((datetime.date(1900, 2, 1) - datetime.date(1970, 1, 1)).days,
         (datetime.date(2199, 2, 28) - datetime.date(1970, 1, 1)).days)
    assert by["raw"]["min"] == "" and by["raw"]["max"] == "7f7f7f7f"
    assert by["none"]["nulls"] == n and "min" not in by["none"]

    # ids must be >= 1; one per column
    p = subprocess.run([PQWRITE, str(tmp_path / "bad.parquet"), "--field-ids", "1,0"],
                       input=json.dumps([["a", "int64"], ["b", "text"]]) + "\n",
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "field id 0" in p.stderr


def test_ten_million_rows(tmp_path):
    n = 10_000_000
    path = tmp_path / "big.parquet"
    p = subprocess.run([PQWRITE, str(path), "--generate", str(n), "--row-group-bytes",
                        str(32 << 20)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["rows"] == n
    md = pq.ParquetFile(path).metadata
    assert md.num_rows == n and md.num_row_groups > 1 and md.num_row_groups == out["row_groups"]
    con = duckdb.connect()
    got = con.sql(f"""SELECT count(*), sum(id), count(name), sum(amount), sum(flag::INT),
                             min(ts), max(ts), count(DISTINCT name)
                      FROM '{path}'""").fetchall()[0]
    base = datetime.datetime(2020, 1, 1, tzinfo=UTC)
    assert got[0] == n
    assert got[1] == n * (n - 1) // 2
    assert got[2] == n - n // 1000
    assert got[3] == n * (n - 1) / 4
    assert got[4] == (n + 2) // 3
    assert got[5] == base and got[6] == base + datetime.timedelta(seconds=n - 1)
    assert got[7] == 10000 - 10      # i % 10000 but those with i % 1000 == 999 (NULL)
    # pyarrow reads a column of it whole, too
    ids = pq.read_table(path, columns=["id"]).column("id")
    assert len(ids) == n and pa.compute.sum(ids).as_py() == n * (n - 1) // 2


def test_batch_paths_read_back(tmp_path):
    """zx_pq_write takes a batch a column at a time when every cell is of
    its column's own type (formats/parquet_batch.c), else row by row: files
    made either way, and both in one file, read back the same in pyarrow,
    DuckDB and polars: NULLs, empty and long strings, int64's ends, -0.0,
    NaN (as text: converted), timestamps (pqwrite --generate makes them as
    timestamps)."""
    import polars as pl
    n = 20000
    long = "L" * 300
    rows = []
    for i in range(n):
        mixed = (i // 700) % 4 == 3        # every 4th batch of 700: a converted cell
        rows.append([
            -9223372036854775808 if i % 97 == 0 else 9223372036854775807 if i % 89 == 0
            else None if i % 31 == 0 else (str(i) if mixed and i % 700 == 5 else i),
            None if i % 13 == 0 else "" if i % 11 == 0 else long + str(i) if i % 7 == 0
            else f"k{i % 50}",
            None if i % 17 == 0 else -0.0 if i % 19 == 0 else ("NaN" if mixed and i % 700 == 9
                                                              else i * 0.5),
            None if i % 23 == 0 else i % 2 == 0,
        ])
    schema = [["id", "int64"], ["name", "text"], ["x", "double"], ["ok", "bool"]]
    path = tmp_path / "batches.parquet"
    out = pqwrite(path, schema, rows, "--batch", "700")
    assert out["rows"] == n and out["nulled"] == 0

    def want(c, v):
        if c == 0 and isinstance(v, str):
            return int(v)
        if c == 2 and isinstance(v, str):
            return float(v)
        return v

    expect = [[want(c, r[c]) for r in rows] for c in range(4)]

    def same(a, b):
        if isinstance(a, float) and isinstance(b, float):
            if math.isnan(a) or math.isnan(b):
                return math.isnan(a) and math.isnan(b)
            return a == b and math.copysign(1, a) == math.copysign(1, b)
        return a == b

    t = pq.read_table(path)
    pt = pl.read_parquet(path)
    dd = duckdb.connect().sql(f"SELECT id, name, x, ok FROM '{path}'").fetchall()
    for c, (name, _) in enumerate(schema):
        got = t.column(name).to_pylist()
        assert all(same(a, b) for a, b in zip(got, expect[c])), name
        assert all(same(a, b) for a, b in zip(pt[name].to_list(), expect[c])), name
        assert all(same(r[c], b) for r, b in zip(dd, expect[c])), name

    # generated rows: timestamps as timestamps, NULL names, small batches
    path = tmp_path / "generated.parquet"
    p = subprocess.run([PQWRITE, str(path), "--generate", "50000", "--batch", "999"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    t = pq.read_table(path)
    pt = pl.read_parquet(path)
    m = 50000
    base = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    assert t.column("id").to_pylist() == list(range(m))
    names = [None if i % 1000 == 999 else f"user-{i % 10000:06d}@example.org" for i in range(m)]
    assert t.column("name").to_pylist() == names and pt["name"].to_list() == names
    assert t.column("amount").to_pylist() == [i * 0.5 for i in range(m)]
    ts = [base + datetime.timedelta(seconds=i) for i in range(m)]
    assert t.column("ts").to_pylist() == ts
    assert [v.replace(tzinfo=datetime.timezone.utc) for v in pt["ts"].to_list()] == ts
    assert t.column("flag").to_pylist() == [i % 3 == 0 for i in range(m)]
    con = duckdb.connect()
    assert con.sql(f"SELECT count(*), count(name), sum(id), min(ts), max(ts) FROM '{path}'"
                   ).fetchall()[0] == (m, len([x for x in names if x]), m * (m - 1) // 2,
                                       ts[0], ts[-1])
