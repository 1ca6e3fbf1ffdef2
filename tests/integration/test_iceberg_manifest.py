"""
Iceberg v2 manifests and manifest lists written by zx
(workers/destinations/iceberg/ice_manifest.h over formats/avro.h, through
the test tool tests/tools/icewrite) read back by real readers:

- pyiceberg's own Avro reader (pyiceberg.manifest.read_manifest_list and
  ManifestFile.fetch_manifest_entry), which resolves every field by its
  field id: every field of every entry, with partition tuples of every
  supported type, metrics maps (present, empty, absent), Appendix D
  bounds, and sequence-number inheritance;
- fastavro, a second independent Avro reader: the same values from the
  writer's schema, the file metadata Iceberg requires, and the schema's
  field ids; both codecs (null, deflate);
- a whole table: a Parquet file written by pyarrow, a manifest and a
  manifest list by icewrite, a v2 metadata JSON written here; pyiceberg's
  StaticTable scans it and returns the rows, and prunes files by the
  partition values and the column bounds icewrite wrote;
- zx's own readers (zx_ice_mlist_read and zx_ice_manifest_read over
  formats/avro_read.h, through icewrite --read-list / --read-manifest)
  read its files back as fastavro does, and read the manifest lists (v1,
  v2) and manifests pyiceberg's writer makes, both codecs.

Binaries: $ZX_BUILD_DIR (default <repo>/build)/tests/tools/icewrite.  No
server is needed; files go to pytest's tmp_path.
"""

import datetime as dt
import json
import os
import struct
import subprocess
import uuid

import pytest

pytestmark = pytest.mark.sqlite_only

pyiceberg_manifest = pytest.importorskip("pyiceberg.manifest")
from pyiceberg.io.pyarrow import PyArrowFileIO  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.path.abspath(os.environ.get("ZX_BUILD_DIR", os.path.join(REPO, "build")))
ICEWRITE = os.path.join(BUILD_DIR, "tests", "tools", "icewrite")

TABLE_SCHEMA = {
    "type": "struct", "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "name", "required": False, "type": "string"},
        {"id": 3, "name": "day", "required": False, "type": "date"},
        {"id": 4, "name": "score", "required": False, "type": "double"},
    ],
}

# one partition field of every type the manifest supports
PFIELDS = [
    {"id": 1000, "name": "p_int", "type": "int"},
    {"id": 1001, "name": "p_long", "type": "long"},
    {"id": 1002, "name": "p_string", "type": "string"},
    {"id": 1003, "name": "day", "type": "date"},
    {"id": 1004, "name": "p_ts", "type": "timestamp"},
    {"id": 1005, "name": "p tz/é", "type": "timestamptz"},
    {"id": 1006, "name": "p_bool", "type": "boolean"},
    {"id": 1007, "name": "p_double", "type": "double"},
    {"id": 1008, "name": "p_bin", "type": "binary"},
]

SNAP = 8765432109876543210
# Doubles here are exact in float32: pyiceberg 0.12's Cython Avro decoder
# (decoder_fast.read_double) reads a double through a C float (0.1 comes
# back as 0.10000000149011612, 1e300 as inf).  The unit test checks the
# encoding byte for byte; fastavro reads the same values.
ENTRIES = [
    {   # added, everything inherited, every map present
        "status": 1, "snapshot_id": None, "sequence_number": None,
        "file_sequence_number": None, "content": 0,
        "file_path": "s3://bucket/t/data/00000-a.parquet", "file_format": "PARQUET",
        "partition": [-7, 2 ** 40, "héllo", 19000, 1700000000123456, -1, True, -0.5, "00ff"],
        "record_count": 3, "file_size_in_bytes": 1234,
        "column_sizes": [[1, 100], [2, 2 ** 33]], "value_counts": [[1, 3], [2, 3]],
        "null_value_counts": [[1, 0], [2, 1]], "nan_value_counts": [[4, 0]],
        "lower_bounds": [[1, {"type": "long", "value": -5}],
                         [2, {"type": "string", "value": "abc"}],
                         [3, {"type": "date", "value": 19000}],
                         [4, {"type": "double", "value": -0.0}]],
        "upper_bounds": [[1, {"type": "long", "value": 2 ** 62}],
                         [2, {"type": "string", "value": "zz\u00e9"}],
                         [3, {"type": "date", "value": 19001}],
                         [4, {"type": "double", "value": 1.5}]],
        "key_metadata": "deadbeef", "split_offsets": [4, 1000],
        "sort_order_id": 0,
    },
    {   # existing, explicit ids, null partition values, empty maps, absent ones
        "status": 0, "snapshot_id": 42, "sequence_number": 3, "file_sequence_number": 4,
        "content": 0, "file_path": "s3://bucket/t/data/00001-b.parquet",
        "partition": [None, None, None, None, None, None, None, None, None],
        "record_count": 0, "file_size_in_bytes": 0,
        "column_sizes": [], "value_counts": None, "null_value_counts": [],
        "lower_bounds": [], "upper_bounds": None,
    },
    {   # deleted
        "status": 2, "snapshot_id": 43, "sequence_number": 2, "file_sequence_number": 2,
        "content": 0, "file_path": "s3://bucket/t/data/00002-c.parquet",
        "partition": [2147483647, -2 ** 63, "", -719000, -2208988800000000, 0, False, 2.0 ** 100,
                      ""],
        "record_count": 2 ** 40, "file_size_in_bytes": 2 ** 41,
        "lower_bounds": [[1, {"type": "decimal", "value": -129}],
                         [2, {"type": "hex", "value": ""}],
                         [3, {"type": "boolean", "value": True}],
                         [4, {"type": "int", "value": -2}]],
    },
]


def icewrite(doc):
    assert os.access(ICEWRITE, os.X_OK), f"{ICEWRITE} is not built (ninja -C {BUILD_DIR})"
    p = subprocess.run([ICEWRITE], input=json.dumps(doc), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def le32(v):
    return struct.pack("<i", v)


def le64(v):
    return struct.pack("<q", v)


def f64(v):
    return struct.pack("<d", v)


def expected_bounds(pairs):
    if pairs is None:
        return None
    out = {}
    for fid, b in pairs:
        t, v = b["type"], b["value"]
        out[fid] = {"long": lambda: le64(v), "timestamp": lambda: le64(v),
                    "int": lambda: le32(v), "date": lambda: le32(v),
                    "double": lambda: f64(v), "string": lambda: v.encode(),
                    "hex": lambda: bytes.fromhex(v), "boolean": lambda: b"\x01" if v else b"\x00",
                    "decimal": lambda: v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big",
                                                  signed=True)}[t]()
    return out


def pvalue(f, v):
    """A partition value as the readers give it back (before logical types)."""
    if v is None:
        return None
    if f["type"] == "binary":
        return bytes.fromhex(v)
    return v


def write_pair(tmp_path, codec):
    mpath = str(tmp_path / f"m-{codec}.avro")
    lpath = str(tmp_path / f"snap-{codec}.avro")
    spec = [{"source-id": 1, "field-id": f["id"], "name": f["name"], "transform": "identity"}
            for f in PFIELDS]
    doc = {
        "manifest": {"path": mpath, "schema": TABLE_SCHEMA, "schema_id": 0,
                     "partition_spec": spec, "partition_spec_id": 7, "content": 0,
                     "codec": codec, "partition_fields": PFIELDS, "entries": ENTRIES},
        "manifest_list": {
            "path": lpath, "snapshot_id": SNAP, "parent_snapshot_id": None,
            "sequence_number": 9, "codec": codec,
            "manifests": [
                {"written": True, "manifest_path": mpath, "sequence_number": 9,
                 "added_snapshot_id": SNAP},
                {"manifest_path": "s3://bucket/t/metadata/other.avro", "manifest_length": 77,
                 "partition_spec_id": 0, "content": 1, "sequence_number": 5,
                 "min_sequence_number": 1, "added_snapshot_id": 11, "added_files_count": 2,
                 "existing_files_count": 3, "deleted_files_count": 4, "added_rows_count": 5,
                 "existing_rows_count": 6, "deleted_rows_count": 7,
                 "partitions": [{"contains_null": True, "contains_nan": None,
                                 "lower_bound": None, "upper_bound": "01"},
                                {"contains_null": False, "contains_nan": False,
                                 "lower_bound": "", "upper_bound": "ff"}],
                 "key_metadata": "0102"},
            ]},
    }
    out = icewrite(doc)
    assert out["manifest_length"] == os.path.getsize(mpath)
    assert out["manifest_list_length"] == os.path.getsize(lpath)
    return mpath, lpath, spec


# the summary the written manifest gives itself, per partition field
SUMMARY = [
    (False, None, le32(-7), le32(2147483647)),
    (False, None, le64(-2 ** 63), le64(2 ** 40)),
    (False, None, b"", "héllo".encode()),
    (False, None, le32(-719000), le32(19000)),
    (False, None, le64(-2208988800000000), le64(1700000000123456)),
    (False, None, le64(-1), le64(0)),
    (False, None, b"\x00", b"\x01"),
    (False, False, f64(-0.5), f64(2.0 ** 100)),
    (False, None, b"", b"\x00\xff"),
]
# (a manifest's partition summary covers all its entries, deleted ones too)


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_pyiceberg_reads_manifest_list_and_manifest(tmp_path, codec):
    mpath, lpath, _ = write_pair(tmp_path, codec)
    io = PyArrowFileIO()
    mfs = list(pyiceberg_manifest.read_manifest_list(io.new_input(lpath)))
    assert len(mfs) == 2
    m, other = mfs
    assert m.manifest_path == mpath
    assert m.manifest_length == os.path.getsize(mpath)
    assert m.partition_spec_id == 7
    assert m.content == pyiceberg_manifest.ManifestContent.DATA
    assert (m.sequence_number, m.min_sequence_number) == (9, 3)
    assert m.added_snapshot_id == SNAP
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (1, 1, 1)
    assert (m.added_rows_count, m.existing_rows_count, m.deleted_rows_count) == (3, 0, 2 ** 40)
    assert m.key_metadata is None
    got = [(s.contains_null, s.contains_nan, s.lower_bound, s.upper_bound) for s in m.partitions]
    want = [(True, s[1], s[2], s[3]) for s in SUMMARY]   # entry 2 has nulls everywhere
    assert got == want

    assert other.manifest_path == "s3://bucket/t/metadata/other.avro"
    assert other.manifest_length == 77 and other.partition_spec_id == 0
    assert other.content == pyiceberg_manifest.ManifestContent.DELETES
    assert (other.sequence_number, other.min_sequence_number, other.added_snapshot_id) == (5, 1, 11)
    assert (other.added_files_count, other.existing_files_count,
            other.deleted_files_count) == (2, 3, 4)
    assert (other.added_rows_count, other.existing_rows_count,
            other.deleted_rows_count) == (5, 6, 7)
    assert [(s.contains_null, s.contains_nan, s.lower_bound, s.upper_bound)
            for s in other.partitions] == [(True, None, None, b"\x01"),
                                           (False, False, b"", b"\xff")]
    assert other.key_metadata == b"\x01\x02"

    entries = m.fetch_manifest_entry(io, discard_deleted=False)
    assert len(entries) == 3
    S = pyiceberg_manifest.ManifestEntryStatus
    for e, want in zip(entries, ENTRIES):
        assert e.status == S(want["status"])
        if want["status"] == 1:
            # inherited from the manifest list
            assert (e.snapshot_id, e.sequence_number, e.file_sequence_number) == (SNAP, 9, 9)
        else:
            assert (e.snapshot_id, e.sequence_number, e.file_sequence_number) == (
                want["snapshot_id"], want["sequence_number"], want["file_sequence_number"])
        df = e.data_file
        assert df.content == pyiceberg_manifest.DataFileContent.DATA
        assert df.file_path == want["file_path"]
        assert df.file_format == pyiceberg_manifest.FileFormat.PARQUET
        assert list(df.partition) == [pvalue(f, v) for f, v in zip(PFIELDS, want["partition"])]
        assert df.record_count == want["record_count"]
        assert df.file_size_in_bytes == want["file_size_in_bytes"]

        def as_map(k):
            v = want.get(k)
            return None if v is None else dict(v)
        # pyiceberg reads an absent map as an empty dict
        assert (df.column_sizes or None) == (as_map("column_sizes") or None)
        assert (df.value_counts or None) == (as_map("value_counts") or None)
        assert (df.null_value_counts or None) == (as_map("null_value_counts") or None)
        assert (df.nan_value_counts or None) == (as_map("nan_value_counts") or None)
        assert (df.lower_bounds or None) == (expected_bounds(want.get("lower_bounds")) or None)
        assert (df.upper_bounds or None) == (expected_bounds(want.get("upper_bounds")) or None)
        km = want.get("key_metadata")
        assert df.key_metadata == (bytes.fromhex(km) if km else None)
        assert df.split_offsets == want.get("split_offsets")
        assert df.equality_ids is None
        assert df.sort_order_id == want.get("sort_order_id")
        assert df.spec_id == 7
    # the live ones only, by default
    assert len(m.fetch_manifest_entry(io)) == 2


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_fastavro_reads_every_field(tmp_path, codec):
    fastavro = pytest.importorskip("fastavro")
    mpath, lpath, spec = write_pair(tmp_path, codec)
    with open(mpath, "rb") as f:
        r = fastavro.reader(f)
        meta = r.metadata
        records = list(r)
    assert meta["avro.codec"] == codec
    assert json.loads(meta["schema"]) == TABLE_SCHEMA
    assert meta["schema-id"] == "0"
    assert json.loads(meta["partition-spec"]) == spec
    assert meta["partition-spec-id"] == "7"
    assert meta["format-version"] == "2"
    assert meta["content"] == "data"
    schema = json.loads(meta["avro.schema"])
    assert schema["name"] == "manifest_entry"
    ids = {f["name"]: f["field-id"] for f in schema["fields"]}
    assert ids == {"status": 0, "snapshot_id": 1, "sequence_number": 3,
                   "file_sequence_number": 4, "data_file": 2}
    df_schema = schema["fields"][4]["type"]
    df_ids = {f["name"]: f["field-id"] for f in df_schema["fields"]}
    assert df_ids == {"content": 134, "file_path": 100, "file_format": 101, "partition": 102,
                      "record_count": 103, "file_size_in_bytes": 104, "column_sizes": 108,
                      "value_counts": 109, "null_value_counts": 110, "nan_value_counts": 137,
                      "lower_bounds": 125, "upper_bounds": 128, "key_metadata": 131,
                      "split_offsets": 132, "equality_ids": 135, "sort_order_id": 140,
                      "referenced_data_file": 143}
    kv = {}
    for f in df_schema["fields"]:
        t = f["type"]
        if isinstance(t, list) and isinstance(t[1], dict) and t[1].get("logicalType") == "map":
            kv[f["name"]] = tuple(x["field-id"] for x in t[1]["items"]["fields"])
        elif isinstance(t, list) and isinstance(t[1], dict) and t[1]["type"] == "array":
            kv[f["name"]] = t[1]["element-id"]
    assert kv == {"column_sizes": (117, 118), "value_counts": (119, 120),
                  "null_value_counts": (121, 122), "nan_value_counts": (138, 139),
                  "lower_bounds": (126, 127), "upper_bounds": (129, 130),
                  "split_offsets": 133, "equality_ids": 136}
    part = df_schema["fields"][3]["type"]
    assert part["name"] == "r102"
    assert [f["field-id"] for f in part["fields"]] == [f["id"] for f in PFIELDS]
    # a name that is no Avro name is made one, the original kept
    assert part["fields"][5]["name"] == "p_x20tz_x2F_xE9"
    assert part["fields"][5]["iceberg-field-name"] == "p tz/é"

    assert len(records) == 3
    for rec, want in zip(records, ENTRIES):
        assert rec["status"] == want["status"]
        assert rec["snapshot_id"] == want["snapshot_id"]
        assert rec["sequence_number"] == want["sequence_number"]
        assert rec["file_sequence_number"] == want["file_sequence_number"]
        df = rec["data_file"]
        assert df["content"] == 0
        assert df["file_path"] == want["file_path"]
        assert df["file_format"] == "PARQUET"
        got_part = list(df["partition"].values())
        for f, g, v in zip(PFIELDS, got_part, want["partition"]):
            if v is None:
                assert g is None
            elif f["type"] == "date":
                assert (g - dt.date(1970, 1, 1)).days == v
            elif f["type"] in ("timestamp", "timestamptz"):
                # (fastavro gives every timestamp-micros as an aware UTC datetime)
                base = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
                assert (g - base) // dt.timedelta(microseconds=1) == v
            else:
                assert g == pvalue(f, v)
        assert df["record_count"] == want["record_count"]
        assert df["file_size_in_bytes"] == want["file_size_in_bytes"]
        for k in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts"):
            w = want.get(k)
            assert df[k] == (None if w is None else [{"key": a, "value": b} for a, b in w])
        for k in ("lower_bounds", "upper_bounds"):
            w = expected_bounds(want.get(k))
            assert df[k] == (None if w is None else [{"key": a, "value": b}
                                                      for a, b in w.items()])
        km = want.get("key_metadata")
        assert df["key_metadata"] == (bytes.fromhex(km) if km else None)
        assert df["split_offsets"] == want.get("split_offsets")
        assert df["equality_ids"] is None
        assert df["sort_order_id"] == want.get("sort_order_id")
        assert df["referenced_data_file"] is None

    with open(lpath, "rb") as f:
        r = fastavro.reader(f)
        meta = r.metadata
        lrecs = list(r)
    assert meta["snapshot-id"] == str(SNAP)
    assert meta["parent-snapshot-id"] == "null"
    assert meta["sequence-number"] == "9"
    assert meta["format-version"] == "2"
    lschema = json.loads(meta["avro.schema"])
    assert lschema["name"] == "manifest_file"
    assert {f["name"]: f["field-id"] for f in lschema["fields"]} == {
        "manifest_path": 500, "manifest_length": 501, "partition_spec_id": 502, "content": 517,
        "sequence_number": 515, "min_sequence_number": 516, "added_snapshot_id": 503,
        "added_files_count": 504, "existing_files_count": 505, "deleted_files_count": 506,
        "added_rows_count": 512, "existing_rows_count": 513, "deleted_rows_count": 514,
        "partitions": 507, "key_metadata": 519}
    summ = lschema["fields"][13]["type"][1]
    assert summ["element-id"] == 508
    assert {f["name"]: f["field-id"] for f in summ["items"]["fields"]} == {
        "contains_null": 509, "contains_nan": 518, "lower_bound": 510, "upper_bound": 511}
    assert lrecs[0] == {
        "manifest_path": mpath, "manifest_length": os.path.getsize(mpath),
        "partition_spec_id": 7, "content": 0, "sequence_number": 9, "min_sequence_number": 3,
        "added_snapshot_id": SNAP, "added_files_count": 1, "existing_files_count": 1,
        "deleted_files_count": 1, "added_rows_count": 3, "existing_rows_count": 0,
        "deleted_rows_count": 2 ** 40,
        "partitions": [{"contains_null": True, "contains_nan": s[1], "lower_bound": s[2],
                        "upper_bound": s[3]} for s in SUMMARY],
        "key_metadata": None}
    assert lrecs[1]["partitions"] == [
        {"contains_null": True, "contains_nan": None, "lower_bound": None,
         "upper_bound": b"\x01"},
        {"contains_null": False, "contains_nan": False, "lower_bound": b"",
         "upper_bound": b"\xff"}]
    assert lrecs[1]["key_metadata"] == b"\x01\x02"


def test_deletes_manifest(tmp_path):
    """A deletes manifest: content "deletes", equality ids, a referenced file."""
    fastavro = pytest.importorskip("fastavro")
    mpath = str(tmp_path / "d.avro")
    icewrite({"manifest": {
        "path": mpath, "schema": TABLE_SCHEMA, "content": 1, "entries": [
            {"status": 1, "snapshot_id": 5, "content": 2, "file_path": "/t/eq.parquet",
             "record_count": 1, "file_size_in_bytes": 10, "equality_ids": [1, 2]},
            {"status": 1, "snapshot_id": 5, "content": 1, "file_path": "/t/pos.parquet",
             "record_count": 1, "file_size_in_bytes": 10, "equality_ids": [],
             "referenced_data_file": "/t/data.parquet"}]}})
    with open(mpath, "rb") as f:
        r = fastavro.reader(f)
        assert r.metadata["content"] == "deletes"
        assert r.metadata["partition-spec"] == "[]"
        recs = list(r)
    assert recs[0]["data_file"]["equality_ids"] == [1, 2]
    assert recs[0]["data_file"]["partition"] == {}
    assert recs[1]["data_file"]["equality_ids"] == []
    assert recs[1]["data_file"]["referenced_data_file"] == "/t/data.parquet"
    # a data file in a deletes manifest is refused
    p = subprocess.run([ICEWRITE], input=json.dumps({"manifest": {
        "path": mpath, "schema": TABLE_SCHEMA, "content": 1, "entries": [
            {"status": 1, "content": 0, "file_path": "/t/x", "record_count": 1,
             "file_size_in_bytes": 1}]}}), capture_output=True, text=True)
    assert p.returncode == 1 and "manifest of deletes" in p.stderr


def test_static_table_scans_rows(tmp_path):
    """A whole table pyiceberg scans: Parquet by pyarrow, Avro by zx, metadata here."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from pyiceberg.expressions import EqualTo, GreaterThan
    from pyiceberg.table import StaticTable

    loc = tmp_path / "tbl"
    (loc / "data").mkdir(parents=True)
    (loc / "metadata").mkdir()

    def fid(i):
        return {b"PARQUET:field_id": str(i).encode()}
    schema = pa.schema([pa.field("id", pa.int64(), metadata=fid(1)),
                        pa.field("name", pa.string(), metadata=fid(2)),
                        pa.field("day", pa.date32(), metadata=fid(3)),
                        pa.field("score", pa.float64(), metadata=fid(4))])
    files = []
    rows_by_day = {19000: [(1, "a", 1.5), (2, None, -2.0)], 19001: [(3, "c", None)]}
    for i, (day, rows) in enumerate(sorted(rows_by_day.items())):
        path = str(loc / "data" / f"{i:05d}-{uuid.uuid4()}.parquet")
        t = pa.table({"id": [r[0] for r in rows], "name": [r[1] for r in rows],
                      "day": [dt.date(1970, 1, 1) + dt.timedelta(days=day)] * len(rows),
                      "score": [r[2] for r in rows]}, schema=schema)
        pq.write_table(t, path)
        ids = [r[0] for r in rows]
        names = [r[1] for r in rows if r[1] is not None]
        files.append({
            "status": 1, "content": 0, "file_path": "file://" + path,
            "partition": [day], "record_count": len(rows),
            "file_size_in_bytes": os.path.getsize(path),
            "value_counts": [[c, len(rows)] for c in (1, 2, 3, 4)],
            "null_value_counts": [[1, 0], [2, len(rows) - len(names)], [3, 0],
                                  [4, sum(r[2] is None for r in rows)]],
            "nan_value_counts": [[4, 0]],
            "lower_bounds": [[1, {"type": "long", "value": min(ids)}],
                             [2, {"type": "string", "value": min(names)}],
                             [3, {"type": "date", "value": day}]],
            "upper_bounds": [[1, {"type": "long", "value": max(ids)}],
                             [2, {"type": "string", "value": max(names)}],
                             [3, {"type": "date", "value": day}]],
        })
    snap = 1234567890123
    mpath = str(loc / "metadata" / f"{uuid.uuid4()}-m0.avro")
    lpath = str(loc / "metadata" / f"snap-{snap}-1-{uuid.uuid4()}.avro")
    spec_fields = [{"source-id": 3, "field-id": 1000, "name": "day", "transform": "identity"}]
    icewrite({
        "manifest": {"path": mpath, "schema": TABLE_SCHEMA, "schema_id": 0,
                     "partition_spec": spec_fields, "partition_spec_id": 0, "content": 0,
                     "codec": "deflate",
                     "partition_fields": [{"id": 1000, "name": "day", "type": "date"}],
                     "entries": files},
        "manifest_list": {"path": lpath, "snapshot_id": snap, "sequence_number": 1,
                          "manifests": [{"written": True, "manifest_path": "file://" + mpath,
                                         "sequence_number": 1, "added_snapshot_id": snap}]},
    })
    metadata = {
        "format-version": 2, "table-uuid": str(uuid.uuid4()), "location": "file://" + str(loc),
        "last-sequence-number": 1, "last-updated-ms": 1764700000000, "last-column-id": 4,
        "current-schema-id": 0, "schemas": [TABLE_SCHEMA],
        "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": spec_fields}],
        "last-partition-id": 1000, "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}], "properties": {},
        "current-snapshot-id": snap,
        "snapshots": [{"snapshot-id": snap, "sequence-number": 1,
                       "timestamp-ms": 1764700000000, "manifest-list": "file://" + lpath,
                       "summary": {"operation": "append"}, "schema-id": 0}],
        "snapshot-log": [{"snapshot-id": snap, "timestamp-ms": 1764700000000}],
        "metadata-log": [], "refs": {"main": {"snapshot-id": snap, "type": "branch"}},
    }
    meta_path = loc / "metadata" / "00001-x.metadata.json"
    meta_path.write_text(json.dumps(metadata))
    table = StaticTable.from_metadata("file://" + str(meta_path))
    got = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {"id": 1, "name": "a", "day": dt.date(2022, 1, 8), "score": 1.5},
        {"id": 2, "name": None, "day": dt.date(2022, 1, 8), "score": -2.0},
        {"id": 3, "name": "c", "day": dt.date(2022, 1, 9), "score": None},
    ]
    # pruning by the partition tuple and by the column bounds zx wrote
    assert len(list(table.scan(row_filter=EqualTo("day", "2022-01-09")).plan_files())) == 1
    assert len(list(table.scan(row_filter=GreaterThan("id", 2)).plan_files())) == 1
    assert len(list(table.scan(row_filter=GreaterThan("id", 3)).plan_files())) == 0
    assert len(list(table.scan(row_filter=EqualTo("name", "b")).plan_files())) == 0
    assert table.scan(row_filter=GreaterThan("id", 1)).to_arrow().num_rows == 2


def read_list(path):
    """zx's reader (zx_ice_mlist_read, through icewrite --read-list)."""
    p = subprocess.run([ICEWRITE, "--read-list", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def hexor(b):
    return None if b is None else b.hex()


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_zx_reads_its_own_list(tmp_path, codec):
    fastavro = pytest.importorskip("fastavro")
    _, lpath, _ = write_pair(tmp_path, codec)
    with open(lpath, "rb") as f:
        want = list(fastavro.reader(f))
    got = read_list(lpath)
    for w in want:
        w["key_metadata"] = hexor(w["key_metadata"])
        for s in w["partitions"] or []:
            s["lower_bound"] = hexor(s["lower_bound"])
            s["upper_bound"] = hexor(s["upper_bound"])
    assert got == want


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_zx_reads_pyiceberg_list(tmp_path, version, codec):
    """A manifest list pyiceberg's own writer wrote (v1 and v2, both codecs)."""
    M = pyiceberg_manifest
    path = str(tmp_path / f"py-v{version}-{codec}.avro")
    files = []
    for i in range(3):
        files.append(M.ManifestFile.from_args(
            manifest_path=f"s3://b/t/metadata/m{i}.avro", manifest_length=1000 + i,
            partition_spec_id=i, content=M.ManifestContent.DATA if i < 2 or version == 1 else
            M.ManifestContent.DELETES,
            sequence_number=7, min_sequence_number=3 + i, added_snapshot_id=99,
            added_files_count=i, existing_files_count=2 * i, deleted_files_count=3 * i,
            added_rows_count=10 * i, existing_rows_count=20 * i, deleted_rows_count=30 * i,
            partitions=[M.PartitionFieldSummary.from_args(
                contains_null=bool(i % 2), contains_nan=None, lower_bound=b"\x01\x00\x00\x00",
                upper_bound=None)] if i else None,
            key_metadata=b"\xab" if i == 1 else None))
    out = PyArrowFileIO().new_output(path)
    with M.write_manifest_list(format_version=version, output_file=out, snapshot_id=99,
                               parent_snapshot_id=98, sequence_number=7,
                               avro_compression=codec) as w:
        w.add_manifests(files)
    got = read_list(path)
    assert len(got) == 3
    for i, g in enumerate(got):
        assert g["manifest_path"] == f"s3://b/t/metadata/m{i}.avro"
        assert g["manifest_length"] == 1000 + i
        assert g["partition_spec_id"] == i
        assert g["added_snapshot_id"] == 99
        assert (g["added_files_count"], g["existing_files_count"],
                g["deleted_files_count"]) == (i, 2 * i, 3 * i)
        assert (g["added_rows_count"], g["existing_rows_count"],
                g["deleted_rows_count"]) == (10 * i, 20 * i, 30 * i)
        if version == 2:
            assert g["content"] == (0 if i < 2 else 1)
            assert (g["sequence_number"], g["min_sequence_number"]) == (7, 3 + i)
        else:   # v1 has neither: read as 0
            assert (g["content"], g["sequence_number"], g["min_sequence_number"]) == (0, 0, 0)
        assert g["partitions"] == ([{"contains_null": bool(i % 2), "contains_nan": None,
                                     "lower_bound": "01000000", "upper_bound": None}]
                                   if i else None)
        assert g["key_metadata"] == ("ab" if i == 1 else None)


def read_manifest(path):
    """zx's reader (zx_ice_manifest_read, through icewrite --read-manifest)."""
    p = subprocess.run([ICEWRITE, "--read-manifest", str(path)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_zx_reads_its_own_manifest(tmp_path):
    mpath, _, spec = write_pair(tmp_path, "deflate")
    got = read_manifest(mpath)
    assert json.loads(got["meta"]["partition-spec"]) == spec
    assert got["meta"]["content"] == "data" and got["meta"]["format-version"] == "2"
    assert [(f["id"], f["type"]) for f in got["partition_fields"]] == \
        [(f["id"], f["type"]) for f in PFIELDS]
    for g, w in zip(got["entries"], ENTRIES):
        for k in ("status", "snapshot_id", "sequence_number", "file_sequence_number",
                  "content", "file_path", "record_count", "file_size_in_bytes",
                  "split_offsets", "sort_order_id"):
            assert g[k] == w.get(k), k
        assert g["file_format"] == "PARQUET"
        assert g["partition"] == w["partition"]
        for k in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts"):
            assert g[k] == w.get(k), k
        for k in ("lower_bounds", "upper_bounds"):
            eb = expected_bounds(w.get(k))
            assert g[k] == (None if eb is None else [[i, b.hex()] for i, b in eb.items()]), k
        assert g["key_metadata"] == w.get("key_metadata")
        assert g["equality_ids"] is None and g["referenced_data_file"] is None


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_zx_reads_pyiceberg_manifest(tmp_path, codec):
    """A manifest pyiceberg's own writer wrote: zx reads every field."""
    M = pyiceberg_manifest
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
    from pyiceberg.typedef import Record
    from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False),
                    NestedField(3, "at", TimestamptzType(), required=False), schema_id=3)
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name"),
                         PartitionField(3, 1001, DayTransform(), "at_day"),
                         PartitionField(1, 1002, BucketTransform(4), "id_bucket"), spec_id=5)
    path = str(tmp_path / f"pym-{codec}.avro")
    out = PyArrowFileIO().new_output(path)
    with M.write_manifest(format_version=2, spec=spec, schema=schema, output_file=out,
                          snapshot_id=77, avro_compression=codec) as w:
        for i in range(3):
            df = M.DataFile.from_args(
                content=M.DataFileContent.DATA, file_path=f"s3://b/t/data/{i}.parquet",
                file_format=M.FileFormat.PARQUET,
                partition=Record("n\u00e9" if i else None, 20000 + i, i),
                record_count=100 + i, file_size_in_bytes=2000 + i,
                column_sizes={1: 10 + i, 2: 20}, value_counts={1: 100 + i},
                null_value_counts={1: 0, 2: i}, nan_value_counts={},
                lower_bounds={1: struct.pack("<q", -i)}, upper_bounds={1: struct.pack("<q", i)},
                key_metadata=None, split_offsets=[4], equality_ids=None, sort_order_id=0)
            w.add_entry(M.ManifestEntry.from_args(
                status=M.ManifestEntryStatus.ADDED if i < 2 else M.ManifestEntryStatus.EXISTING,
                snapshot_id=77 if i < 2 else 70, sequence_number=None if i < 2 else 4,
                file_sequence_number=None if i < 2 else 4, data_file=df))
    got = read_manifest(path)
    assert got["meta"]["partition-spec-id"] == "5"
    assert got["meta"]["content"] == "data" and got["meta"]["format-version"] == "2"
    assert json.loads(got["meta"]["schema"])["fields"][2]["type"] == "timestamptz"
    assert got["partition_fields"] == [{"id": 1000, "name": "name", "type": "string"},
                                       {"id": 1001, "name": "at_day", "type": "date"},
                                       {"id": 1002, "name": "id_bucket", "type": "int"}]
    assert len(got["entries"]) == 3
    for i, e in enumerate(got["entries"]):
        assert e["status"] == (1 if i < 2 else 0)
        assert e["snapshot_id"] == (77 if i < 2 else 70)
        assert e["sequence_number"] == (None if i < 2 else 4)
        assert e["file_sequence_number"] == (None if i < 2 else 4)
        assert e["content"] == 0 and e["file_format"] == "PARQUET"
        assert e["file_path"] == f"s3://b/t/data/{i}.parquet"
        assert e["partition"] == ["n\u00e9" if i else None, 20000 + i, i]
        assert (e["record_count"], e["file_size_in_bytes"]) == (100 + i, 2000 + i)
        assert e["column_sizes"] == [[1, 10 + i], [2, 20]]
        assert e["value_counts"] == [[1, 100 + i]]
        assert e["null_value_counts"] == [[1, 0], [2, i]]
        assert e["nan_value_counts"] in ([], None)
        assert e["lower_bounds"] == [[1, struct.pack("<q", -i).hex()]]
        assert e["upper_bounds"] == [[1, struct.pack("<q", i).hex()]]
        assert e["key_metadata"] is None and e["equality_ids"] is None
        assert e["split_offsets"] == [4] and e["sort_order_id"] == 0
