"""
The files destination in an S3 bucket (`path: s3://bucket/prefix`, a
`kind: aws` connection), against moto in server mode
(tests/services/moto, started once):

- every format (csv, json, parquet) in every mode (replace, append,
  upsert, mirror), two runs each, read back with pyarrow straight from the
  bucket (its S3 filesystem) and with DuckDB from the objects' bytes;
- a file larger than a part goes up as a multipart upload, each part and
  the object with a SHA-256 checksum, and is whole;
- a run killed mid-upload leaves no object under the key; the next run
  aborts the upload it left and writes the object;
- a 2 GB object streams up with the worker's peak RSS printed (and bounded
  far below the object's size);
- a missing bucket fails the run with S3's words and the bucket's name;
- no secret in the log or in zxctl's answers.

One workspace is enough (what is tested is the bucket side): SQLite.
"""

import io
import json
import os
import subprocess
import tempfile

import pytest

from conftest import REPO, ZXD, uid, wait_for
from sync_fixtures import make_sync_env

pytestmark = pytest.mark.sqlite_only

SECRET = "zx-s3-secret-" + "q" * 10
ROWS = [(1, "a@x.io", "free", 1.5), (2, "b@x.io", "pro", None), (3, "c@x.io", None, -2.25)]


@pytest.fixture(scope="module")
def moto():
    """moto's addresses, and a boto3 S3 client of it."""
    import boto3
    p = subprocess.run([os.path.join(REPO, "tests", "services", "moto"), "start"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    env = dict(l.split("=", 1) for l in p.stdout.split("\n") if "=" in l)
    s3 = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT"], region_name=env["REGION"],
                      aws_access_key_id="zxtestkey", aws_secret_access_key=SECRET)
    return env, s3


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def bucket(s3):
    name = f"zx-{uid()[:12].lower()}"
    s3.create_bucket(Bucket=name)
    return name


def aws_conn(env):
    return {"kind": "aws", "extra": {"region": env["REGION"], "endpoint": env["AWS_ENDPOINT"],
                                     "path_style": True, "access_key_id": "zxtestkey",
                                     "secret_access_key": SECRET}}


def make_items(z, rows=ROWS):
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE items (id {t['int']} PRIMARY KEY, email {t['text']}, "
              f"plan {t['text']}, score {t['real']})")
    for r in rows:
        vals = ", ".join("NULL" if v is None else repr(v) if not isinstance(v, str)
                         else "'" + v + "'" for v in r)
        z.ws_exec(f"INSERT INTO items VALUES ({vals})")


def keys(s3, b, prefix=""):
    r = s3.list_objects_v2(Bucket=b, Prefix=prefix)
    return sorted(o["Key"] for o in r.get("Contents", []))


def uploads(s3, b):
    return s3.list_multipart_uploads(Bucket=b).get("Uploads", [])


def fetch(s3, b, key):
    return s3.get_object(Bucket=b, Key=key)["Body"].read()


def read_pyarrow(env, b, key, fmt):
    """Rows of an object read by pyarrow through its S3 filesystem."""
    import pyarrow.csv as pcsv
    import pyarrow.fs as pfs
    import pyarrow.json as pjson
    import pyarrow.parquet as pq
    host = env["AWS_ENDPOINT"].split("://", 1)[1]
    fs = pfs.S3FileSystem(endpoint_override=host, scheme="http", region=env["REGION"],
                          access_key="zxtestkey", secret_key=SECRET)
    path = f"{b}/{key}"
    if fmt == "parquet":
        t = pq.read_table(path, filesystem=fs)
    else:
        with fs.open_input_stream(path) as f:
            data = f.read()
        t = (pcsv.read_csv(io.BytesIO(data)) if fmt == "csv"
             else pjson.read_json(io.BytesIO(data)))
    return t.to_pylist()


def read_duckdb(s3, b, key, fmt):
    """Rows of an object read by DuckDB (from its bytes, fetched from moto)."""
    import duckdb
    with tempfile.NamedTemporaryFile(suffix="." + fmt) as f:
        f.write(fetch(s3, b, key))
        f.flush()
        fn = {"parquet": "read_parquet", "csv": "read_csv", "json": "read_json"}[fmt]
        c = duckdb.connect()
        cur = c.execute(f"SELECT * FROM {fn}('{f.name}')")
        names = [d[0] for d in cur.description]
        out = [dict(zip(names, r)) for r in cur.fetchall()]
        c.close()
        return out


def norm(rows):
    """(op, id, email, plan, score) sorted, whatever the reader's types."""
    out = []
    for r in rows:
        score = r.get("score")
        out.append((r.get("_zx_op"), int(r["id"]), r.get("email") or None,
                    r.get("plan") or None, None if score is None else float(score)))
    return sorted(out, key=lambda x: (x[1], x[0] or ""))


EXT = {"csv": ".csv", "json": ".json", "parquet": ".parquet"}


def test_every_format_in_every_mode_lands_in_the_bucket(sync_env, moto):
    env, s3 = moto
    b = bucket(s3)
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    z.connections = {"aws": aws_conn(env)}
    syncs = {}
    for fmt in ("csv", "json", "parquet"):
        for mode in ("replace", "append", "upsert", "mirror"):
            # replace into a named object; the others into a folder
            path = (f"s3://{b}/{fmt}/latest{EXT[fmt]}" if mode == "replace"
                    else f"s3://{b}/{fmt}/{mode}/")
            syncs[f"{fmt}_{mode}"] = {
                "query": "SELECT id, email, plan, score FROM items", "mode": mode,
                "key": ["id"],
                "dest": {"files": {"path": path, "format": fmt, "connection": "aws"}}}
    z.syncs = syncs
    z.write_config()
    make_items(z)
    z.start()
    first = {n: z.run(n) for n in syncs}
    z.ws_exec("DELETE FROM items WHERE id = 2", "UPDATE items SET plan = 'x' WHERE id = 3")
    second = {n: z.run(n) for n in syncs}
    base = [(None, 1, "a@x.io", "free", 1.5), (None, 2, "b@x.io", "pro", None),
            (None, 3, "c@x.io", None, -2.25)]
    after = [(None, 1, "a@x.io", "free", 1.5), (None, 3, "c@x.io", "x", -2.25)]
    for fmt in ("csv", "json", "parquet"):
        ext = EXT[fmt]
        # replace: the one object, now the second run's result
        k = f"{fmt}/latest{ext}"
        assert keys(s3, b, f"{fmt}/latest") == [k]
        for rows in (read_pyarrow(env, b, k, fmt), read_duckdb(s3, b, k, fmt)):
            assert norm(rows) == after, (fmt, rows)
        for mode in ("append", "upsert", "mirror"):
            n = f"{fmt}_{mode}"
            k1 = f"{fmt}/{mode}/{n}-{first[n]['id']}{ext}"
            k2 = f"{fmt}/{mode}/{n}-{second[n]['id']}{ext}"
            assert keys(s3, b, f"{fmt}/{mode}/") == sorted([k1, k2]), (n, keys(s3, b))
            if mode == "append":
                want1, want2 = base, after
            elif mode == "upsert":          # only what changed: id 3
                want1, want2 = base, [(None, 3, "c@x.io", "x", -2.25)]
            else:                           # mirror: _zx_op, deletes set the key only
                want1 = [("upsert",) + r[1:] for r in base]
                want2 = [("delete", 2, None, None, None), ("upsert", 3, "c@x.io", "x", -2.25)]
            for k, want in ((k1, want1), (k2, want2)):
                for reader in ("pyarrow", "duckdb"):
                    rows = (read_pyarrow(env, b, k, fmt) if reader == "pyarrow"
                            else read_duckdb(s3, b, k, fmt))
                    assert norm(rows) == want, (n, k, reader, rows)
    assert uploads(s3, b) == []
    rec = first["parquet_replace"]
    assert rec["rows_sent"] == 3
    assert SECRET not in z.log_text()


def big_items(z, rows):
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE big (id {t['int']} PRIMARY KEY, v {t['text']})")
    z.ws_exec("WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < "
              f"{rows}) INSERT INTO big SELECT g, 'value-' || g || '-' || "
              "hex(randomblob(24)) FROM s")


def test_a_large_file_goes_up_in_checksummed_parts(sync_env, moto):
    env, s3 = moto
    b = bucket(s3)
    z = sync_env.zxd({}, {"alice": ["big"]}, start=False)
    z.connections = {"aws": aws_conn(env)}
    z.syncs = {"big": {"query": "SELECT id, v FROM big", "mode": "replace",
                       "dest": {"files": {"path": f"s3://{b}/out/big.csv", "format": "csv",
                                          "connection": "aws"}}}}
    z.write_config()
    big_items(z, 300000)                      # ~21 MB of CSV: 3 parts of 8 MiB
    z.start()
    r = z.run("big")
    h = s3.head_object(Bucket=b, Key="out/big.csv", ChecksumMode="ENABLED")
    assert h["ETag"].strip('"').endswith("-3"), h["ETag"]     # a multipart object
    assert h.get("ChecksumSHA256"), h                         # each part sent with one
    data = fetch(s3, b, "out/big.csv").decode()
    lines = data.split("\r\n")
    assert lines[0] == "id,v" and lines[-1] == ""
    ids = [int(l.split(",", 1)[0]) for l in lines[1:-1]]
    assert ids == list(range(1, 300001))
    assert uploads(s3, b) == []


def test_a_run_killed_mid_upload_leaves_nothing_visible_and_the_next_run_cleans_up(
        sync_env, moto):
    env, s3 = moto
    b = bucket(s3)
    z = sync_env.zxd({}, {"alice": ["big"]}, start=False)
    z.connections = {"aws": aws_conn(env)}
    z.syncs = {"f": {"query": "SELECT id, v FROM big", "mode": "replace",
                     "dest": {"files": {"path": f"s3://{b}/out/", "format": "json",
                                        "connection": "aws"}}}}
    z.write_config()
    big_items(z, 600000)                      # ~60 MB of NDJSON
    z.start()
    assert z.zxctl("run", "f").returncode == 0
    wait_for(lambda: uploads(s3, b), "a multipart upload under way", deadline=120,
             interval=0.05)
    pid = z.pipeline("f")["pid"]
    os.kill(pid, 9)
    wait_for(lambda: z.runs("f") and z.runs("f")[0]["state"] == "failed", "the failed run")
    assert keys(s3, b) == []                                  # never a partial object
    left = uploads(s3, b)
    assert [u["Key"] for u in left] == ["out/f.json"]         # what the dead run left
    r = z.run("f", timeout=600)
    assert r["rows_sent"] == 600000
    assert keys(s3, b) == ["out/f.json"]
    assert uploads(s3, b) == []                               # aborted by the next run
    wait_for(lambda: "event=files_uploads_aborted sync=f" in z.log_text(),
             "the sweep in the log")
    assert "uploads=1" in [l for l in z.log_text().splitlines()
                           if "event=files_uploads_aborted" in l][0]
    n = sum(1 for _ in io.BytesIO(fetch(s3, b, "out/f.json")))
    assert n == 600000


def test_a_missing_bucket_fails_the_run_naming_it(sync_env, moto):
    env, s3 = moto
    b = f"zx-missing-{uid()[:8].lower()}"
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    z.connections = {"aws": aws_conn(env)}
    z.syncs = {"m": {"query": "SELECT id, email FROM items", "mode": "replace",
                     "dest": {"files": {"path": f"s3://{b}/x/", "format": "parquet",
                                        "connection": "aws"}}}}
    z.write_config()
    make_items(z)
    z.start()
    rec = z.run("m", check=False)
    assert rec.get("state") == "failed", rec
    err = rec.get("error", "")
    assert f"S3 bucket {b}" in err and "NoSuchBucket" in err, err
    assert SECRET not in err and SECRET not in z.log_text()
    p = z.zxctl("runs", "m", json_out=True)
    assert SECRET not in p.stdout


def test_an_s3_path_is_checked_when_the_file_is_loaded(sync_env, moto):
    env, s3 = moto
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    z.connections = {"aws": aws_conn(env), "lite": {"kind": "sqlite", "path": "x.db"}}
    cases = [
        ({"path": "s3://zx-ok/x/", "format": "csv"},
         "an s3:// path needs `connection:` naming a connection of kind aws"),
        ({"path": "s3://Bad_Bucket/x/", "format": "csv", "connection": "aws"},
         "the bucket name must be"),
        ({"path": "s3://zx-ok/a//b/", "format": "csv", "connection": "aws"},
         "an empty, '.' or '..' part in the key"),
        ({"path": "s3://zx-ok/x/", "format": "csv", "connection": "lite"},
         "connection lite is of kind sqlite; an s3:// path needs kind aws"),
        ({"path": "s3://zx-ok/x/", "format": "csv", "connection": "nope"},
         "unknown connection 'nope'"),
        ({"path": "var/exports/x", "format": "csv", "connection": "aws"},
         "destination.files.connection goes with an s3:// path"),
        ({"path": "s3://zx-ok/x/", "format": "csv", "connection": "aws",
          "kms_key_id": "k1"}, "kms_key_id goes with sse: aws:kms"),
    ]
    for files, want in cases:
        z.syncs = {"m": {"query": "SELECT id FROM items", "mode": "replace",
                         "dest": {"files": files}}}
        z.write_config()
        p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"],
                           capture_output=True, text=True, timeout=60, env=z.env)
        assert p.returncode != 0 and want in p.stderr + p.stdout, (files, p.stderr)


def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def test_a_2_gb_object_streams_with_bounded_memory(sync_env, moto):
    """2 GB of CSV made by the query itself (no table to fill), uploaded as
    it is written: the sync worker's peak RSS is printed and stays far
    below the object's size (a few parts, not the file)."""
    env, s3 = moto
    b = bucket(s3)
    rows = int(os.environ.get("ZX_S3_BIG_ROWS", "10000000"))     # ~2.1 GB
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    z.connections = {"aws": aws_conn(env)}
    q = ("WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < "
         f"{rows}) SELECT i AS id, printf('%0200d', i) AS v FROM g")
    z.syncs = {"huge": {"query": q, "mode": "replace",
                        "dest": {"files": {"path": f"s3://{b}/big/huge.csv", "format": "csv",
                                           "connection": "aws"}}}}
    z.write_config()
    make_items(z)
    z.start()
    assert z.zxctl("run", "huge").returncode == 0
    wait_for(lambda: z.pipeline("huge").get("pid"), "the run's worker")
    pid = z.pipeline("huge")["pid"]
    peak = 0
    def done():
        nonlocal peak
        try:
            peak = max(peak, vm_hwm_kib(pid))
        except OSError:
            pass
        return z.runs("huge") and z.runs("huge")[0]["state"] in ("succeeded", "failed")
    wait_for(done, "the 2 GB run", deadline=900, interval=0.5)
    rec = z.runs("huge")[0]
    assert rec["state"] == "succeeded", rec
    size = s3.head_object(Bucket=b, Key="big/huge.csv")["ContentLength"]
    # "id,v\r\n", then each row: the id, ',', 200 digits, "\r\n"
    want = 6 + rows * 203 + sum(len(str(i)) for i in range(1, rows + 1))
    assert size == want, (size, want)
    print(f"\n2 GB to S3: {size / 1e9:.2f} GB, {rec.get('rows_sent')} rows, "
          f"sync worker peak RSS {peak / 1024:.0f} MiB")
    assert rec["rows_sent"] == rows
    assert peak and peak < 512 * 1024, f"peak RSS {peak} KiB"
    s3.delete_object(Bucket=b, Key="big/huge.csv")


def test_server_side_encryption_is_asked_for_each_object(sync_env, moto):
    env, s3 = moto
    b = bucket(s3)
    z = sync_env.zxd({}, {"alice": ["items"]}, start=False)
    z.connections = {"aws": aws_conn(env)}
    files = {"format": "parquet", "connection": "aws"}
    z.syncs = {
        "aes": {"query": "SELECT id, email FROM items", "mode": "replace",
                "dest": {"files": dict(files, path=f"s3://{b}/aes/", sse="AES256")}},
        "kms": {"query": "SELECT id, email FROM items", "mode": "append",
                "dest": {"files": dict(files, path=f"s3://{b}/kms/", sse="aws:kms",
                                       kms_key_id="zx-test-key")}}}
    z.write_config()
    make_items(z)
    z.start()
    z.run("aes")
    r = z.run("kms")
    h = s3.head_object(Bucket=b, Key="aes/aes.parquet")
    assert h["ServerSideEncryption"] == "AES256", h
    h = s3.head_object(Bucket=b, Key=f"kms/kms-{r['id']}.parquet")
    assert h["ServerSideEncryption"] == "aws:kms", h
    assert h["SSEKMSKeyId"].endswith("zx-test-key"), h
