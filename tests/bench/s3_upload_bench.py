"""s3_upload_bench.sh's helper (needs boto3; pyarrow for `make`).

  make PATH MB        write a Parquet file of about MB megabytes (10^6) at
                      PATH (through PATH.tmp, renamed at the end): random
                      integers, doubles and hex strings, snappy-compressed
                      (random data: the file stays about as large as the data)
  boto3 ENDPOINT BUCKET KEY FILE
                      upload_file with boto3's default TransferConfig
                      (multipart above 8 MiB, 8 MiB parts, 10 threads), then
                      head_object; prints the figures as s3_put does
  head ENDPOINT BUCKET KEY      the object's size
  delete ENDPOINT BUCKET [KEY...]   delete the keys, then the bucket
  cpu PID             CPU seconds (user+sys) of PID so far
"""
import os
import resource
import sys
import time

CREDS = {"region_name": "us-east-1",
         "aws_access_key_id": os.environ.get("AWS_ACCESS_KEY_ID", "zxtestkey"),
         "aws_secret_access_key": os.environ.get("AWS_SECRET_ACCESS_KEY", "zxtestsecret")}


def _s3(endpoint):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint,
                        config=Config(s3={"addressing_style": "path"}), **CREDS)


def make(path, mb):
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    target = int(float(mb) * 1e6)
    rows = 500_000
    tmp = path + ".tmp"
    schema = pa.schema([("id", pa.int64()), ("user_id", pa.int64()), ("amount", pa.float64()),
                        ("score", pa.float64()), ("token", pa.string()), ("note", pa.string())])
    ids = pa.array(range(rows), pa.int64())

    def hex_strings(width):
        """rows random hex strings of width characters, built from buffers."""
        offsets = pa.array(range(0, (rows + 1) * width, width), pa.int32()).buffers()[1]
        data = pa.py_buffer(os.urandom(rows * width // 2).hex().encode())
        return pa.Array.from_buffers(pa.string(), rows, [None, offsets, data])

    with pq.ParquetWriter(tmp, schema, compression="snappy") as w:
        done = 0
        while os.path.getsize(tmp) < target:
            w.write_table(pa.table({
                "id": pc.add(ids, done),
                "user_id": pc.cast(pc.multiply(pc.random(rows), float(1 << 40)), pa.int64(),
                                   safe=False),
                "amount": pc.multiply(pc.random(rows), 1000.0),
                "score": pc.random(rows),
                "token": hex_strings(32),
                "note": hex_strings(48),
            }, schema=schema))
            done += rows
    os.rename(tmp, path)
    print(f"made {path}: {os.path.getsize(path):,} bytes, {done:,} rows", file=sys.stderr)


def upload(endpoint, bucket, key, path):
    from boto3.s3.transfer import TransferConfig
    s3 = _s3(endpoint)
    try:
        s3.create_bucket(Bucket=bucket)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    cfg = TransferConfig()
    size = os.path.getsize(path)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    s3.upload_file(path, bucket, key, Config=cfg)
    dt = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    head = s3.head_object(Bucket=bucket, Key=key)["ContentLength"]
    parts = -(-size // cfg.multipart_chunksize) if size >= cfg.multipart_threshold else 1
    print(f"bytes={size} seconds={dt:.3f} mb_per_s={size / 1e6 / dt:.1f} parts={parts} "
          f"threads={cfg.max_concurrency} user_s={r1.ru_utime - r0.ru_utime:.2f} "
          f"sys_s={r1.ru_stime - r0.ru_stime:.2f} max_rss_kb={r1.ru_maxrss} head_size={head}")
    if head != size:
        sys.exit(f"boto3: head_object says {head} bytes, the file has {size}")


def head(endpoint, bucket, key):
    print(_s3(endpoint).head_object(Bucket=bucket, Key=key)["ContentLength"])


def delete(endpoint, bucket, *keys):
    s3 = _s3(endpoint)
    for k in keys:
        s3.delete_object(Bucket=bucket, Key=k)
    if not keys:
        for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
            s3.delete_object(Bucket=bucket, Key=o["Key"])
        for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
            s3.abort_multipart_upload(Bucket=bucket, Key=u["Key"], UploadId=u["UploadId"])
        s3.delete_bucket(Bucket=bucket)


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        r = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    print(f"{(int(r[11]) + int(r[12])) / tick:.2f}")


if __name__ == "__main__":
    c, a = sys.argv[1], sys.argv[2:]
    f = {"make": make, "boto3": upload, "head": head, "delete": delete, "cpu": cpu}.get(c)
    if f is None:
        sys.exit(f"s3_upload_bench.py: unknown command {c}")
    f(*a)
