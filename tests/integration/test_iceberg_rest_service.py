"""
The Iceberg REST catalog of tests/services/iceberg-rest works end to end
with clients nobody here wrote: pyiceberg's RestCatalog creates a namespace
and a table and appends a pyarrow table; pyiceberg and daft
(daft.read_iceberg) read the rows back.

- folder warehouse: the session's catalog (the `iceberg_rest` fixture of
  conftest.py, started once per session); the data file lands in the
  folder.
- S3 warehouse: a catalog of the test's own (its own ZX_SERVICES_DIR and
  port, stopped at the end) keeping its tables in a bucket of moto
  (tests/services/moto: started if it is not running, and then stopped at
  the end; a moto already running is left running); the table's metadata
  and data files land in the bucket.

No zxd: this checks the service the Iceberg tests build on.  Nothing leaves
127.0.0.1 (daft's telemetry is off).
"""

import os
import shutil
import subprocess
import tempfile
import urllib.parse

import pytest

from conftest import REPO, free_port, iceberg_rest_start, uid

# daft sends usage events at import unless told not to
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("DAFT_ANALYTICS_ENABLED", "0")

SERVICES = os.path.join(REPO, "tests", "services")


def _imports():
    try:
        import daft  # noqa: F401
        import pyarrow  # noqa: F401
        import pyiceberg  # noqa: F401
    except ImportError as e:
        pytest.fail(f"{e.name} is not installed (packaging/install-deps.sh --test)")


def client_props(lines):
    """pyiceberg catalog properties for a catalog's lines: its uri, and for
    an S3 warehouse the endpoint, region and keys its data files need."""
    props = {"uri": lines["ICEBERG_REST_URI"]}
    if "ICEBERG_S3_ENDPOINT" in lines:
        props.update({
            "s3.endpoint": lines["ICEBERG_S3_ENDPOINT"],
            "s3.region": lines["ICEBERG_S3_REGION"],
            "s3.access-key-id": lines["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": lines["AWS_SECRET_ACCESS_KEY"],
            "s3.force-virtual-addressing": "false",
        })
    return props


def roundtrip(lines):
    """Namespace, table, append, read back with pyiceberg and daft; returns
    the table's location."""
    _imports()
    import daft
    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog

    cat = RestCatalog("zx", **client_props(lines))
    ns = f"zx_smoke_{uid()[:12].lower()}"
    cat.create_namespace(ns)
    assert (ns,) in cat.list_namespaces()
    data = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "name": pa.array(["ada", "bob", None], pa.string()),
        "score": pa.array([1.5, None, -2.25], pa.float64()),
    })
    want = data.to_pylist()
    table = cat.create_table(f"{ns}.people", schema=data.schema)
    table.append(data)
    assert (ns, "people") in cat.list_tables(ns)

    loaded = cat.load_table(f"{ns}.people")
    assert loaded.location().startswith(lines["ICEBERG_WAREHOUSE"].split("://", 1)[0])
    assert len(loaded.snapshots()) == 1
    assert loaded.scan().to_arrow().sort_by("id").to_pylist() == want

    got = daft.read_iceberg(loaded).sort("id").to_pydict()
    assert got == {k: [r[k] for r in want] for k in want[0]}
    return loaded.location()


def test_folder_warehouse(iceberg_rest):
    wh = iceberg_rest["ICEBERG_WAREHOUSE"]
    if not wh.startswith("file://"):
        pytest.skip(f"the session's catalog has an S3 warehouse ({wh})")
    location = roundtrip(iceberg_rest)
    folder = urllib.parse.urlparse(location).path
    assert folder.startswith(urllib.parse.urlparse(wh).path), (location, wh)
    files = [f for _, _, fs in os.walk(folder) for f in fs]
    assert any(f.endswith(".parquet") for f in files), files
    assert any(f.endswith(".metadata.json") for f in files), files


def _moto(command):
    p = subprocess.run([os.path.join(SERVICES, "moto"), command], capture_output=True,
                       text=True, timeout=300, stdin=subprocess.DEVNULL)
    return p.returncode, dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l), p.stderr


@pytest.fixture(scope="module")
def s3_catalog():
    """moto (started if not running), and a catalog of this module's own
    whose warehouse is s3://<bucket>/wh on it: (its lines, boto3 client)."""
    _imports()
    import boto3
    rc, moto, _ = _moto("env")
    started_moto = rc != 0
    if started_moto:
        rc, moto, err = _moto("start")
        assert rc == 0, f"tests/services/moto start failed:\n{err[-2000:]}"
    root = tempfile.mkdtemp(prefix="zxice-", dir="/tmp")
    bucket = f"zx-ice-{uid()[:12].lower()}"
    env = dict(os.environ, ZX_SERVICES_DIR=root, ZX_ICEBERG_PORT=str(free_port()),
               ZX_ICEBERG_WAREHOUSE=f"s3://{bucket}/wh",
               ZX_ICEBERG_S3_ENDPOINT=moto["AWS_ENDPOINT"], ZX_ICEBERG_S3_REGION=moto["REGION"],
               ZX_ICEBERG_S3_KEY=moto["AWS_ACCESS_KEY_ID"],
               ZX_ICEBERG_S3_SECRET=moto["AWS_SECRET_ACCESS_KEY"])
    try:
        lines = iceberg_rest_start(env)
        s3 = boto3.client("s3", endpoint_url=moto["AWS_ENDPOINT"], region_name=moto["REGION"],
                          aws_access_key_id=moto["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=moto["AWS_SECRET_ACCESS_KEY"])
        yield lines, s3, bucket
    finally:
        subprocess.run([os.path.join(SERVICES, "iceberg-rest"), "stop"], env=env,
                       capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        shutil.rmtree(root, ignore_errors=True)
        if started_moto:
            _moto("stop")


def test_s3_warehouse(s3_catalog, monkeypatch):
    lines, s3, bucket = s3_catalog
    assert lines["ICEBERG_WAREHOUSE"] == f"s3://{bucket}/wh"
    # pyarrow's S3 filesystem (pyiceberg's writer) sends even a small file as
    # a multipart upload, and its AWS SDK rejects moto's answer to
    # CompleteMultipartUpload (tests/services/README.md, moto); with
    # allow_delayed_open it sends a small file in one PutObject.
    import pyarrow.fs
    real = pyarrow.fs.S3FileSystem
    monkeypatch.setattr(pyarrow.fs, "S3FileSystem",
                        lambda **kw: real(allow_delayed_open=True, **kw))
    location = roundtrip(lines)
    assert location.startswith(f"s3://{bucket}/wh/"), location
    prefix = location[len(f"s3://{bucket}/"):] + "/"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]]
    assert any(k.startswith(prefix + "data/") and k.endswith(".parquet") for k in keys), keys
    assert any(k.startswith(prefix + "metadata/") and k.endswith(".metadata.json")
               for k in keys), keys
