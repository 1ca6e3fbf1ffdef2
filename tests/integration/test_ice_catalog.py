"""
The Iceberg catalogs the Iceberg destination commits through
(workers/destinations/iceberg/ice_catalog.h), driven by the test tool
tests/tools/icecat, against real servers:

- Apache Iceberg's REST catalog (tests/services/iceberg-rest): namespace
  and table made, loaded, a set-properties commit with assert-table-uuid
  that pyiceberg then sees; a wrong table uuid or ref snapshot id is a
  CONFLICT; a missing table NOT_FOUND; a second create EXISTS.
- AWS Glue in moto (tests/services/moto): a table made the way Iceberg's
  GlueCatalog keeps one (metadata file in moto's S3, its location in the
  table's parameters; pyiceberg's GlueCatalog loads it), committed with
  the VersionId read, a stale base a CONFLICT, a missing table NOT_FOUND.
  (moto's UpdateTable ignores VersionId: the stale base is caught by the
  catalog's check that metadata_location is still the base's.)
- Amazon S3 Tables in moto: CreateTable, the metadata written to the
  table's warehouseLocation, UpdateTableMetadataLocation with the
  versionToken; a stale token a CONFLICT (moto's own check).

Binaries: $ZX_BUILD_DIR (default <repo>/build)/tests/tools/icecat.
"""

import json
import os
import subprocess

import pytest

from conftest import BUILD_DIR, REPO, uid

pytestmark = pytest.mark.sqlite_only

ICECAT = os.path.join(BUILD_DIR, "tests", "tools", "icecat")
SECRET = "zx-icecat-secret-" + "s" * 8

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "v", "required": False, "type": "string"}]}


def metadata_v2(location=""):
    """A new table's whole TableMetadata (v2), as the destination makes it."""
    return {"format-version": 2, "table-uuid": "9b2c1d1e-0000-4000-8000-" + uid()[:12],
            "location": location, "last-sequence-number": 0,
            "last-updated-ms": 1700000000000, "last-column-id": 2, "current-schema-id": 0,
            "schemas": [SCHEMA], "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}], "last-partition-id": 999,
            "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": {}, "current-snapshot-id": -1, "snapshots": [],
            "snapshot-log": [], "metadata-log": [], "refs": {}}


def icecat(tmp_path, env, *args, **files):
    """Run icecat with the settings in env (ICECAT_*) and JSON files
    (request=..., base=...); return its JSON line."""
    argv = [ICECAT, *args]
    for k, v in files.items():
        p = tmp_path / f"{k}-{uid()[:8]}.json"
        p.write_text(json.dumps(v))
        argv += ["--" + k.replace("_", "-"), str(p)]
    e = {k: v for k, v in os.environ.items() if not k.startswith("ICECAT_")}
    e.update(env)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=e)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert SECRET not in p.stdout + p.stderr
    return out


def next_metadata(table, **props):
    """The whole metadata after a set-properties: base's file in the log."""
    m = json.loads(json.dumps(table["metadata"]))
    m["properties"].update(props)
    m["metadata-log"].append({"timestamp-ms": m["last-updated-ms"],
                              "metadata-file": table["metadata_location"]})
    m["last-updated-ms"] += 1
    return m


# ---- REST ------------------------------------------------------------

def test_rest_catalog(tmp_path, iceberg_rest):
    env = {"ICECAT_KIND": "iceberg_rest", "ICECAT_URI": iceberg_rest["ICEBERG_REST_URI"],
           "ICECAT_NAME": "rest_cat"}
    ns, t = f"zx_ic_{uid()[:10]}", "orders"
    assert icecat(tmp_path, env, "ensure-namespace", ns)["result"] == "ok"
    assert icecat(tmp_path, env, "ensure-namespace", ns)["result"] == "ok"   # exists: fine
    req = {"name": t, "schema": SCHEMA, "properties": {"owner": "zx"}}
    made = icecat(tmp_path, env, "create", ns, t, request=req)
    assert made["result"] == "ok", made
    assert made["table"]["metadata"]["properties"]["owner"] == "zx"
    again = icecat(tmp_path, env, "create", ns, t, request=req)
    assert again["result"] == "exists" and f"{ns}.{t}" in again["error"]

    base = icecat(tmp_path, env, "load", ns, t)
    assert base["result"] == "ok"
    assert base["table"]["metadata_location"] == made["table"]["metadata_location"]
    tuuid = base["table"]["metadata"]["table-uuid"]

    ok = icecat(tmp_path, env, "commit", ns, t, base=base,
                requirements=[{"type": "assert-table-uuid", "uuid": tuuid},
                              {"type": "assert-ref-snapshot-id", "ref": "main",
                               "snapshot-id": None}],
                updates=[{"action": "set-properties", "updates": {"zx.run": "r1"}}])
    assert ok["result"] == "ok", ok
    assert ok["table"]["metadata"]["properties"]["zx.run"] == "r1"
    assert ok["table"]["metadata_location"] != base["table"]["metadata_location"]

    from pyiceberg.catalog.rest import RestCatalog
    cat = RestCatalog("zx", uri=iceberg_rest["ICEBERG_REST_URI"])
    tbl = cat.load_table(f"{ns}.{t}")
    assert tbl.properties.get("zx.run") == "r1"
    assert str(tbl.metadata.table_uuid) == tuuid

    ups = [{"action": "set-properties", "updates": {"zx.run": "r2"}}]
    for bad in ([{"type": "assert-table-uuid", "uuid": "00000000-0000-4000-8000-000000000000"}],
                [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 12345}]):
        r = icecat(tmp_path, env, "commit", ns, t, base=base, requirements=bad, updates=ups)
        assert r["result"] == "conflict", r
        assert r["error"].startswith(f"iceberg catalog rest_cat: table {ns}.{t}: commit")
    assert cat.load_table(f"{ns}.{t}").properties.get("zx.run") == "r1"

    missing = icecat(tmp_path, env, "load", ns, "nope")
    assert missing["result"] == "not_found" and f"{ns}.nope" in missing["error"]
    r = icecat(tmp_path, env, "commit", ns, "nope", base=base,
               requirements=[], updates=ups)
    assert r["result"] == "error" and "404" in r["error"]


def test_rest_catalog_wrong_uri_fails_at_open(tmp_path):
    r = icecat(tmp_path, {"ICECAT_URI": "http://127.0.0.1:9", "ICECAT_TOKEN": SECRET,
                          "ICECAT_DEADLINE_MS": "500"}, "load", "a", "b")
    assert r["result"] == "error" and "/v1/config" in r["error"]


# ---- moto: Glue and S3 Tables ----------------------------------------

@pytest.fixture(scope="module")
def moto():
    p = subprocess.run([os.path.join(REPO, "tests", "services", "moto"), "start"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return dict(l.split("=", 1) for l in p.stdout.split("\n") if "=" in l)


def aws_env(m, kind):
    return {"ICECAT_KIND": kind, "ICECAT_NAME": f"{kind}_cat", "ICECAT_REGION": m["REGION"],
            "ICECAT_ENDPOINT": m["AWS_ENDPOINT"], "ICECAT_ACCESS_KEY": "zxtestkey",
            "ICECAT_SECRET_KEY": SECRET, "ICECAT_PATH_STYLE": "1"}


def boto(m, service):
    import boto3
    return boto3.client(service, endpoint_url=m["AWS_ENDPOINT"], region_name=m["REGION"],
                        aws_access_key_id="zxtestkey", aws_secret_access_key=SECRET)


def read_s3(m, url):
    bucket, key = url[len("s3://"):].split("/", 1)
    return json.loads(boto(m, "s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def test_glue_catalog(tmp_path, moto):
    bucket = f"zx-ic-{uid()[:12]}"
    boto(moto, "s3").create_bucket(Bucket=bucket)
    env = aws_env(moto, "glue")
    env["ICECAT_LOCATION"] = f"s3://{bucket}/wh"
    ns, t = f"zx_ic_{uid()[:10]}", "orders"
    assert icecat(tmp_path, env, "ensure-namespace", ns)["result"] == "ok"
    assert icecat(tmp_path, env, "ensure-namespace", ns)["result"] == "ok"
    made = icecat(tmp_path, env, "create", ns, t, metadata=metadata_v2())
    assert made["result"] == "ok", made
    loc = made["table"]["metadata_location"]
    assert loc.startswith(f"s3://{bucket}/wh/{ns}.db/{t}/metadata/00000-")
    assert loc.endswith(".metadata.json")
    assert read_s3(moto, loc)["location"] == f"s3://{bucket}/wh/{ns}.db/{t}"
    g = boto(moto, "glue").get_table(DatabaseName=ns, Name=t)["Table"]
    assert g["TableType"] == "EXTERNAL_TABLE"
    assert g["Parameters"]["table_type"] == "ICEBERG"
    assert g["Parameters"]["metadata_location"] == loc
    assert g["StorageDescriptor"]["Location"] == f"s3://{bucket}/wh/{ns}.db/{t}"
    again = icecat(tmp_path, env, "create", ns, t, metadata=metadata_v2())
    assert again["result"] == "exists", again

    base = icecat(tmp_path, env, "load", ns, t)
    assert base["result"] == "ok" and base["table"]["metadata_location"] == loc
    assert base["table"]["token"] == g["VersionId"]
    ok = icecat(tmp_path, env, "commit", ns, t, base=base,
                new_metadata=next_metadata(base["table"], **{"zx.run": "r1"}))
    assert ok["result"] == "ok", ok
    new = ok["table"]["metadata_location"]
    assert new.startswith(f"s3://{bucket}/wh/{ns}.db/{t}/metadata/00001-")
    g = boto(moto, "glue").get_table(DatabaseName=ns, Name=t)["Table"]
    assert g["Parameters"]["metadata_location"] == new
    assert g["Parameters"]["previous_metadata_location"] == loc
    assert read_s3(moto, new)["properties"]["zx.run"] == "r1"

    # an Iceberg client finds it where Iceberg's GlueCatalog keeps it
    from pyiceberg.catalog.glue import GlueCatalog
    cat = GlueCatalog("glue", **{
        "glue.endpoint": moto["AWS_ENDPOINT"], "glue.region": moto["REGION"],
        "glue.access-key-id": "zxtestkey", "glue.secret-access-key": SECRET,
        "s3.endpoint": moto["AWS_ENDPOINT"], "s3.region": moto["REGION"],
        "s3.access-key-id": "zxtestkey", "s3.secret-access-key": SECRET,
        "s3.force-virtual-addressing": "false"})
    assert cat.load_table(f"{ns}.{t}").properties.get("zx.run") == "r1"

    # the first base again: stale (VersionId and metadata_location moved on)
    stale = icecat(tmp_path, env, "commit", ns, t, base=base,
                   new_metadata=next_metadata(base["table"], **{"zx.run": "r2"}))
    assert stale["result"] == "conflict", stale
    assert stale["error"].startswith(f"iceberg catalog glue_cat: table {ns}.{t}: commit")
    assert boto(moto, "glue").get_table(DatabaseName=ns, Name=t)["Table"][
        "Parameters"]["metadata_location"] == new

    missing = icecat(tmp_path, env, "load", ns, "nope")
    assert missing["result"] == "not_found", missing


def test_s3tables_catalog(tmp_path, moto):
    arn = boto(moto, "s3tables").create_table_bucket(name=f"zx-ic-{uid()[:12]}")["arn"]
    env = aws_env(moto, "s3tables")
    env["ICECAT_BUCKET_ARN"] = arn
    ns, t = f"zx_ic_{uid()[:10]}", "orders"
    assert icecat(tmp_path, env, "ensure-namespace", ns)["result"] == "ok"
    assert icecat(tmp_path, env, "ensure-namespace", ns)["result"] == "ok"
    made = icecat(tmp_path, env, "create", ns, t, metadata=metadata_v2())
    assert made["result"] == "ok", made
    s3t = boto(moto, "s3tables")
    cur = s3t.get_table_metadata_location(tableBucketARN=arn, namespace=ns, name=t)
    wh = cur["warehouseLocation"]
    loc = made["table"]["metadata_location"]
    assert cur["metadataLocation"] == loc and loc.startswith(wh + "/metadata/00000-")
    assert read_s3(moto, loc)["location"] == wh
    assert icecat(tmp_path, env, "create", ns, t, metadata=metadata_v2())["result"] == "exists"

    base = icecat(tmp_path, env, "load", ns, t)
    assert base["result"] == "ok" and base["table"]["token"] == cur["versionToken"]
    ok = icecat(tmp_path, env, "commit", ns, t, base=base,
                new_metadata=next_metadata(base["table"], **{"zx.run": "r1"}))
    assert ok["result"] == "ok", ok
    new = ok["table"]["metadata_location"]
    assert new.startswith(wh + "/metadata/00001-")
    cur = s3t.get_table_metadata_location(tableBucketARN=arn, namespace=ns, name=t)
    assert cur["metadataLocation"] == new
    assert read_s3(moto, new)["properties"]["zx.run"] == "r1"

    stale = icecat(tmp_path, env, "commit", ns, t, base=base,
                   new_metadata=next_metadata(base["table"], **{"zx.run": "r2"}))
    assert stale["result"] == "conflict", stale
    assert s3t.get_table_metadata_location(tableBucketARN=arn, namespace=ns,
                                           name=t)["metadataLocation"] == new

    missing = icecat(tmp_path, env, "load", ns, "nope")
    assert missing["result"] == "not_found", missing


# ---- REST: what a real catalog will not do on demand -------------------

class FakeRest:
    """A REST catalog in a thread for what the real one cannot be made to
    do: a config with a prefix, an OAuth2 token endpoint that checks the
    form, and commits answered with a chosen status (or never).  Records
    every request (method, path, Authorization, body)."""

    def __init__(self, commit_status, token_uses=10**9):
        import http.server
        import threading
        import urllib.parse
        self.seen, self.commit_status = [], commit_status
        self.token_uses, self.tokens, self.uses = token_uses, 0, 0
        fake = self

        def refused(h):
            """401 unless the request carries the latest token, still fresh."""
            fake.uses += 1
            if (h.headers.get("Authorization") == f"Bearer tok-{fake.tokens}" and
                    fake.uses <= fake.token_uses):
                return False
            h.answer(401, {"error": {"message": "token expired",
                                     "type": "NotAuthorizedException", "code": 401}})
            return True

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def answer(self, status, body):
                b = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

            def do_GET(self):
                fake.seen.append(("GET", self.path, self.headers.get("Authorization"), None))
                if refused(self):
                    return
                if self.path.startswith("/v1/config"):
                    return self.answer(200, {"defaults": {"prefix": "wrong"},
                                             "overrides": {"prefix": "my wh/x"}})
                if self.path == "/v1/my%20wh/x/namespaces/s/tables/t":
                    return self.answer(200, {"metadata-location": "s3://b/m.json",
                                             "metadata": {"format-version": 2}})
                self.answer(404, {"error": {"message": "nope", "type": "NoSuchTableException",
                                            "code": 404}})

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n).decode()
                fake.seen.append(("POST", self.path, self.headers.get("Authorization"), body))
                if self.path == "/v1/oauth/tokens":
                    f = urllib.parse.parse_qs(body)
                    if f == {"grant_type": ["client_credentials"], "client_id": ["zxid"],
                             "client_secret": [SECRET], "scope": ["catalog"]}:
                        fake.tokens += 1
                        fake.uses = 0
                        return self.answer(200, {"access_token": f"tok-{fake.tokens}",
                                                 "token_type": "bearer"})
                    return self.answer(401, {"error": "invalid_client"})
                if refused(self):
                    return
                st = fake.commit_status
                if st is None:
                    import time
                    time.sleep(3)
                    return
                self.answer(st, {"error": {"message": "it went wrong", "type": "X",
                                           "code": st}})

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.uri = f"http://127.0.0.1:{self.srv.server_address[1]}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def commits(self):
        return [s for s in self.seen if s[0] == "POST" and "/tables/" in s[1]]

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.mark.parametrize("status,result", [(503, "unknown"), (500, "unknown"),
                                           (504, "unknown"), (None, "unknown"),
                                           (409, "conflict"), (400, "error"),
                                           (403, "error")])
def test_rest_commit_outcomes_are_sent_once(tmp_path, status, result):
    fake = FakeRest(status)
    try:
        env = {"ICECAT_URI": fake.uri + "/", "ICECAT_CREDENTIAL": "zxid:" + SECRET,
               "ICECAT_DEADLINE_MS": "1000"}
        base = icecat(tmp_path, env, "load", "s", "t")
        assert base["result"] == "ok", base
        r = icecat(tmp_path, env, "commit", "s", "t", base=base, requirements=[],
                   updates=[{"action": "set-properties", "updates": {"a": "b"}}])
        assert r["result"] == result, r
        assert len(fake.commits()) == 1, fake.seen      # never sent twice
        method, path, auth, body = fake.commits()[0]
        assert path == "/v1/my%20wh/x/namespaces/s/tables/t"
        assert auth == f"Bearer tok-{fake.tokens}"   # each icecat run has its own
        assert json.loads(body) == {"identifier": {"namespace": ["s"], "name": "t"},
                                    "requirements": [],
                                    "updates": [{"action": "set-properties",
                                                 "updates": {"a": "b"}}]}
        if status in (400, 403):
            assert f"{status} X: it went wrong" in r["error"]
    finally:
        fake.close()


def test_rest_oauth_refused_fails_at_open(tmp_path):
    fake = FakeRest(200)
    try:
        r = icecat(tmp_path, {"ICECAT_URI": fake.uri, "ICECAT_CREDENTIAL": "zxid:wrong"},
                   "load", "s", "t")
        assert r["result"] == "error" and "OAuth2 token: 401 invalid_client" in r["error"]
    finally:
        fake.close()


def test_rest_token_renewed_on_401(tmp_path):
    """An expired token (401): a new one from the token endpoint, and the
    request once more."""
    fake = FakeRest(200, token_uses=1)
    try:
        env = {"ICECAT_URI": fake.uri, "ICECAT_CREDENTIAL": "zxid:" + SECRET}
        r = icecat(tmp_path, env, "load", "s", "t")
        assert r["result"] == "ok", r
        got = [(m, p, a) for m, p, a, _ in fake.seen]
        assert got == [("POST", "/v1/oauth/tokens", None),
                       ("GET", "/v1/config", "Bearer tok-1"),
                       ("GET", "/v1/my%20wh/x/namespaces/s/tables/t", "Bearer tok-1"),
                       ("POST", "/v1/oauth/tokens", None),
                       ("GET", "/v1/my%20wh/x/namespaces/s/tables/t", "Bearer tok-2")]
    finally:
        fake.close()
