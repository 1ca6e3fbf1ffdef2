"""
`source: kinesis` end to end (workers/sources/kinesis/) against kinesalite
(tests/services/kinesalite), a Kinesis emulator that splits and merges
shards as Kinesis does, through a `kind: aws` connection with its
`endpoint`:

- every record of every shard arrives: JSON objects, arrays and NDJSON in
  the data, KPL-aggregated records taken apart (each user record with its
  own partition key and sub-sequence), a record that is none of these in
  `__rejects` with its shard, sequence number and reason; the metadata
  columns asked for;
- shards split and merged while records flow, the worker and the writer
  SIGKILLed: every id arrives, and none twice (the positions are stored
  with the rows);
- `start: new` skips what was put before the first start, and a restart
  before any record keeps that time rather than moving it on;
- `zxctl test` says where the credentials came from and what the stream
  is, or precisely what failed, and never shows the secret.
"""

import datetime
import hashlib
import http.server
import json
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import REPO, Zxd, uid, wait_for, zxd_factory

SECRET = "zx-kinesis-secret-" + "k" * 8


def _service_env(name):
    p = subprocess.run([os.path.join(REPO, "tests", "services", name), "start"],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"tests/services/{name} start failed:\n{p.stderr[-2000:]}")
    return dict(l.split("=", 1) for l in p.stdout.split("\n") if "=" in l)


def _emulator(service, url_key):
    import boto3
    env = _service_env(service)
    env["KINESIS_ENDPOINT"] = env[url_key]
    client = boto3.client("kinesis", endpoint_url=env[url_key], region_name=env["REGION"],
                          aws_access_key_id="zxtestkey", aws_secret_access_key="zxtestsecret")
    return env, client


@pytest.fixture(scope="session")
def kinesalite():
    """The kinesalite of tests/services/kinesalite (started once), and a
    boto3 Kinesis client of it.  It reshards as Kinesis does; its
    AT_TIMESTAMP iterator never answers when no record is past the time
    (kinesalite 3.3.3), so `start: new` is tested on moto."""
    return _emulator("kinesalite", "KINESIS_ENDPOINT")


@pytest.fixture(scope="session")
def moto_kinesis():
    """moto's Kinesis (tests/services/moto, started once) and a client."""
    return _emulator("moto", "AWS_ENDPOINT")




_MADE = []   # (client, stream) made by the current test


@pytest.fixture(autouse=True)
def _delete_streams():
    """Each test's streams are deleted after it (an emulator counts the
    shards of every stream it keeps against its limit)."""
    yield
    while _MADE:
        client, name = _MADE.pop()
        try:
            client.delete_stream(StreamName=name, EnforceConsumerDeletion=True)
        except Exception:  # noqa: BLE001 - best effort
            pass


def make_stream(client, shards):
    name = f"s{uid()[:10]}"
    client.create_stream(StreamName=name, ShardCount=shards)
    _MADE.append((client, name))
    wait_for(lambda: client.describe_stream_summary(StreamName=name)
             ["StreamDescriptionSummary"]["StreamStatus"] == "ACTIVE", "the stream ACTIVE")
    return name


def put(client, stream, items):
    """Put [(data bytes, partition key)] in order, 500 a call."""
    for i in range(0, len(items), 500):
        r = client.put_records(StreamName=stream, Records=[
            {"Data": d, "PartitionKey": k} for d, k in items[i:i + 500]])
        assert r["FailedRecordCount"] == 0, r


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, wire, payload):
    key = _varint((num << 3) | wire)
    if wire == 2:
        return key + _varint(len(payload)) + payload
    return key + _varint(payload)


def kpl_aggregate(records):
    """A KPL aggregated record of [(partition key, data bytes)]."""
    keys = []
    for k, _ in records:
        if k not in keys:
            keys.append(k)
    body = b"".join(_field(1, 2, k.encode()) for k in keys)
    for k, d in records:
        rec = _field(1, 0, keys.index(k)) + _field(3, 2, d)
        body += _field(3, 2, rec)
    return b"\xf3\x89\x9a\xc2" + body + hashlib.md5(body).digest()


class KinZxd(Zxd):
    """A Zxd whose pipelines are `source: kinesis` through one `kind: aws`
    connection `aws` to kinesalite.  kpipes: {name: {"stream": s, "extra":
    {option: YAML text}}}; conn_extra: more connection lines."""

    def __init__(self, root, kpipes, endpoint=None, conn_extra=None, http_pipes=None,
                 keys=True, **kw):
        self.kpipes = dict(kpipes)
        self.keys_in_conn = keys
        self.endpoint = endpoint
        self.conn_extra = dict(conn_extra or {})
        super().__init__(root, dict(http_pipes or {}), **kw)
        self.env["ZX_TEST_AWS_SECRET"] = SECRET

    def config_text(self):
        text = super().config_text()
        at = text.index("\npipelines:\n") + 1
        http = text[at + len("pipelines:\n"):]
        text = text[:at] + "pipelines:\n"
        conn = ["connections:", "  aws:", "    kind: aws", "    region: us-east-1",
                f"    endpoint: {self.endpoint}"]
        if self.keys_in_conn:
            conn += ["    access_key_id: zxtestkey",
                     "    secret_access_key: ${env:ZX_TEST_AWS_SECRET}"]
        conn += [f"    {k}: {v}" for k, v in self.conn_extra.items()]
        lines = []
        for name, s in self.kpipes.items():
            lines += [f"  {name}:", "    direction: stream", "    source: kinesis",
                      "    connection: aws", f"    stream: {s['stream']}",
                      f"    table: {name}"]
            lines += [f"    {k}: {v}" for k, v in (s.get("extra") or {}).items()]
        return (text[:-len("pipelines:\n")] + "\n".join(conn) + "\npipelines:\n" + http +
                "\n".join(lines) + "\n")

    def source_status(self, name):
        return (self.pipeline(name) or {}).get("source_status") or {}


@pytest.fixture
def make_kin(workspace):
    """make_kin(kpipes, endpoint=URL, **opts) -> KinZxd."""
    gen = zxd_factory(workspace, cls=KinZxd)
    yield next(gen)
    next(gen, None)


def ids_in(z, table):
    if not z.table_exists(table):
        return []
    return [r[0] for r in z.query(f'SELECT "id" FROM "{table}"')]


@pytest.mark.pairwise("emu")   # kinesalite on SQLite, moto on Postgres
@pytest.mark.parametrize("emu", ["kinesalite", "moto_kinesis"])
def test_every_record_of_every_shard_with_metadata_and_rejects(emu, request, make_kin):
    env, k = request.getfixturevalue(emu)
    stream = make_stream(k, 4)
    items = [(json.dumps({"id": i, "v": f"v{i}"}).encode(), f"key{i}") for i in range(200)]
    items.append((json.dumps([{"id": 1000}, {"id": 1001}]).encode(), "arr"))
    items.append((b'{"id": 1002}\n{"id": 1003}\n', "nd"))
    items.append((b"this is not json", "bad"))
    items.append((kpl_aggregate([("pa", b'{"id": 2000}'), ("pb", b'{"id": 2001}'),
                                 ("pa", b'{"id": 2002}')]), "agg"))
    put(k, stream, items)
    z = make_kin({"ev": {"stream": stream, "extra": {
        "metadata": "[_shard, _sequence, _partition_key, _arrival, _ingested_at]"}}},
        endpoint=env["KINESIS_ENDPOINT"])
    want = set(range(200)) | {1000, 1001, 1002, 1003, 2000, 2001, 2002}
    wait_for(lambda: len(ids_in(z, "ev")) >= len(want),
             lambda: f"{len(want)} rows; have {len(ids_in(z, 'ev'))}\n{z.log_tail(30)}")
    got = ids_in(z, "ev")
    assert sorted(got) == sorted(want), sorted(set(got) ^ want)
    cols = list(z.columns("ev"))
    for c in ("_shard", "_sequence", "_partition_key", "_arrival", "_ingested_at"):
        assert c in cols, cols
    rows = z.query('SELECT "id", "_shard", "_sequence", "_partition_key" FROM "ev" '
                   'WHERE "id" >= 2000 ORDER BY "id"')
    assert [r[3] for r in rows] == ["pa", "pb", "pa"], rows
    seqs = [r[2] for r in rows]
    assert [s.rsplit(".", 1)[1] for s in seqs] == ["0", "1", "2"], seqs
    assert len({s.rsplit(".", 1)[0] for s in seqs}) == 1, seqs
    assert all(r[1].startswith("shardId-") for r in rows), rows
    # the poison record: a reject naming its shard and sequence number
    wait_for(lambda: z.table_exists("ev__rejects"), "ev__rejects")
    rej = z.query('SELECT * FROM "ev__rejects"')
    assert len(rej) == 1, rej
    text = json.dumps([str(c) for c in rej[0]])
    assert "not JSON" in text and "shardId-" in text and "sequence" in text, text
    def each_shard_read():
        st = z.source_status("ev")
        shards = st.get("shards") or []
        return (st.get("state") == "reading" and st.get("shards_reading") == 4 and
                len(shards) == 4 and
                all(x["state"] == "reading" and x["millis_behind"] >= 0 for x in shards))
    wait_for(each_shard_read, lambda: f"4 shards reading, each its lag: "
             f"{z.source_status('ev')}")
    # nothing twice after a restart
    z.stop()
    put(k, stream, [(json.dumps({"id": 3000 + i}).encode(), f"r{i}") for i in range(50)])
    z.start()
    want |= set(range(3000, 3050))
    wait_for(lambda: len(ids_in(z, "ev")) >= len(want), "the rows put while zxd was down")
    got = ids_in(z, "ev")
    assert sorted(got) == sorted(want), f"{len(got) - len(set(got))} twice"
    assert SECRET not in z.log_text()


def test_splits_merges_and_sigkills_lose_nothing_and_repeat_nothing(kinesalite, make_kin):
    env, k = kinesalite
    stream = make_stream(k, 2)
    z = make_kin({"rs": {"stream": stream}}, endpoint=env["KINESIS_ENDPOINT"])
    errors = []
    n = 10000

    def producer():
        try:
            for i in range(0, n, 100):
                put(k, stream, [(json.dumps({"id": j}).encode(), f"p{j % 37}")
                                for j in range(i, i + 100)])
                time.sleep(0.05)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    th = threading.Thread(target=producer, daemon=True)
    th.start()
    wait_for(lambda: len(ids_in(z, "rs")) > 200, "the first rows")
    # a split of the first shard, then a merge of two adjacent open shards
    shards = k.list_shards(StreamName=stream)["Shards"]
    s0 = shards[0]
    lo, hi = (int(s0["HashKeyRange"]["StartingHashKey"]),
              int(s0["HashKeyRange"]["EndingHashKey"]))
    k.split_shard(StreamName=stream, ShardToSplit=s0["ShardId"],
                  NewStartingHashKey=str((lo + hi) // 2))
    wait_for(lambda: k.describe_stream_summary(StreamName=stream)
             ["StreamDescriptionSummary"]["StreamStatus"] == "ACTIVE", "the split done")
    os.kill(z.pids()["rs"], signal.SIGKILL)
    open_shards = sorted((s for s in k.list_shards(StreamName=stream)["Shards"]
                          if "EndingSequenceNumber" not in s["SequenceNumberRange"]),
                         key=lambda s: int(s["HashKeyRange"]["StartingHashKey"]))
    a, b = open_shards[0], open_shards[1]
    k.merge_shards(StreamName=stream, ShardToMerge=a["ShardId"],
                   AdjacentShardToMerge=b["ShardId"])
    wait_for(lambda: k.describe_stream_summary(StreamName=stream)
             ["StreamDescriptionSummary"]["StreamStatus"] == "ACTIVE", "the merge done")
    os.kill(z.pids()["writer"], signal.SIGKILL)
    th.join(timeout=120)
    assert not errors, errors
    wait_for(lambda: len(set(ids_in(z, "rs"))) >= n,
             lambda: f"{n} ids; have {len(set(ids_in(z, 'rs')))}\n{z.log_tail(40)}",
             deadline=180)
    got = ids_in(z, "rs")
    assert set(got) == set(range(n))
    twice = len(got) - len(set(got))
    print(f"kinesis reshard+SIGKILL: {n} ids, {twice} twice")
    assert twice == 0, f"{twice} ids twice"
    st = z.source_status("rs")
    assert st.get("shards_finished", 0) >= 3, st   # the split parent, the two merged


@pytest.mark.sqlite_only   # where the shards start: the source's alone
def test_start_new_skips_older_records_and_keeps_its_time(moto_kinesis, make_kin):
    env, k = moto_kinesis
    stream = make_stream(k, 1)
    put(k, stream, [(json.dumps({"id": i}).encode(), "old") for i in range(10)])
    time.sleep(1.1)   # the first start comes later than every old record
    z = make_kin({"nw": {"stream": stream, "extra": {"start": "new"}}},
                 endpoint=env["KINESIS_ENDPOINT"])
    wait_for(lambda: z.source_status("nw").get("state") == "reading", "reading")
    time.sleep(1)
    # a restart before any new record: the first start's time holds
    z.stop()
    put(k, stream, [(json.dumps({"id": 100 + i}).encode(), "new") for i in range(5)])
    z.start()
    put(k, stream, [(json.dumps({"id": 200 + i}).encode(), "new") for i in range(5)])
    want = set(range(100, 105)) | set(range(200, 205))
    wait_for(lambda: set(ids_in(z, "nw")) == want,
             lambda: f"{sorted(want)}; have {sorted(ids_in(z, 'nw'))}\n{z.log_tail(30)}")


@pytest.mark.sqlite_only   # where the shards start: the source's alone
def test_start_at_a_time_reads_what_was_put_from_then_on(moto_kinesis, make_kin):
    env, k = moto_kinesis
    stream = make_stream(k, 2)
    put(k, stream, [(json.dumps({"id": i}).encode(), f"p{i}") for i in range(10)])
    time.sleep(1.5)
    at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    time.sleep(0.5)
    put(k, stream, [(json.dumps({"id": 100 + i}).encode(), f"p{i}") for i in range(10)])
    z = make_kin({"at": {"stream": stream, "extra": {"start": '{at: "%s"}' % at}}},
                 endpoint=env["KINESIS_ENDPOINT"])
    want = set(range(100, 110))
    wait_for(lambda: set(ids_in(z, "at")) == want,
             lambda: f"{sorted(want)}; have {sorted(ids_in(z, 'at'))}\n{z.log_tail(30)}")
    # later records too, and a restart resumes after the stored positions
    z.stop()
    put(k, stream, [(json.dumps({"id": 200 + i}).encode(), f"p{i}") for i in range(4)])
    z.start()
    want |= set(range(200, 204))
    wait_for(lambda: sorted(ids_in(z, "at")) == sorted(want),
             lambda: f"{sorted(want)}; have {sorted(ids_in(z, 'at'))}")


@pytest.mark.sqlite_only
def test_zxctl_test_says_where_the_keys_came_from_or_what_failed(kinesalite, make_kin):
    env, k = kinesalite
    stream = make_stream(k, 3)
    z = make_kin({"ok": {"stream": stream}, "gone": {"stream": "no-such-stream"}},
                 endpoint=env["KINESIS_ENDPOINT"])
    p = z.zxctl("test", "ok", check_rc=0)
    assert f"stream {stream}" in p.stdout and "ACTIVE with 3 open shards" in p.stdout, p.stdout
    assert "credentials from connection keys" in p.stdout, p.stdout
    p = z.zxctl("test", "gone", check_rc=1)
    out = p.stdout + p.stderr
    assert "ResourceNotFoundException" in out and "no-such-stream" in out, out
    # the pipeline says so in its status, and does not stop
    wait_for(lambda: "ResourceNotFoundException" in
             ((z.pipeline("gone") or {}).get("last_error") or ""),
             lambda: f"the error in status: {z.pipeline('gone')}")
    shown = z.log_text() + z.zxctl("status").stdout + z.zxctl("--json", "status").stdout
    assert SECRET not in shown


class _CannedKinesis(http.server.BaseHTTPRequestHandler):
    """Kinesis answering each stream's calls with the error AWS gives for
    a case the emulators cannot play (IAM, a clock off, another region)."""
    answers = {
        "denied": ("AccessDeniedException", "User: arn:aws:iam::111122223333:user/zx is "
                   "not authorized to perform: kinesis:DescribeStreamSummary on resource: "
                   "arn:aws:kinesis:us-east-1:111122223333:stream/denied because no "
                   "identity-based policy allows the kinesis:DescribeStreamSummary action"),
        "skew": ("InvalidSignatureException", "Signature expired: 20261202T100000Z is now "
                 "earlier than 20261202T100500Z (20261202T101000Z - 5 min.)"),
        "nokey": ("UnrecognizedClientException", "The security token included in the "
                  "request is invalid."),
        "elsewhere": ("ResourceNotFoundException", "Stream elsewhere under account "
                      "111122223333 not found."),
    }

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(n) or b"{}")
        kind, msg = self.answers.get(req.get("StreamName"), ("InternalFailure", "?"))
        data = json.dumps({"__type": kind, "message": msg}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.mark.sqlite_only
def test_zxctl_test_names_what_aws_refused_and_what_to_do(make_kin):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CannedKinesis)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        z = make_kin({n: {"stream": n} for n in _CannedKinesis.answers}, endpoint=url)
        want = {
            "denied": ["AccessDeniedException", "not authorized to perform: "
                       "kinesis:DescribeStreamSummary"],
            "skew": ["Signature expired", "this host's clock is off"],
            "nokey": ["UnrecognizedClientException",
                      "the access key is not known in this region or account"],
            "elsewhere": ["ResourceNotFoundException", f"looked for at {url}",
                          "is the connection's region the stream's?"],
        }
        for name, parts in want.items():
            p = z.zxctl("test", name, check_rc=1)
            out = p.stdout + p.stderr
            for part in parts:
                assert part in out, (name, part, out)
            assert SECRET not in out
    finally:
        srv.shutdown()


@pytest.mark.sqlite_only
def test_an_endpoint_nobody_answers_is_said(make_kin):
    z = make_kin({"far": {"stream": "x"}}, endpoint="http://127.0.0.1:9")
    p = z.zxctl("test", "far", check_rc=1)
    out = p.stdout + p.stderr
    assert "no answer from 127.0.0.1:9" in out, out


@pytest.mark.sqlite_only
@pytest.mark.skipif(os.geteuid() != 0, reason="reading another process's memory needs root")
def test_the_secret_key_is_only_in_the_worker_that_uses_it(kinesalite, make_kin):
    """The connection's secret_access_key is in the kinesis worker alone:
    not in another pipeline's worker, the writer or the gateway (each
    child is scrubbed of the secrets it does not use, supervisor/scrub.c,
    by the rows flagged secret)."""
    from test_worker_secrets import memory_has
    env, k = kinesalite
    stream = make_stream(k, 1)
    z = make_kin({"kin": {"stream": stream}}, endpoint=env["KINESIS_ENDPOINT"],
                 http_pipes={"web": {}})
    z.wait_running("kin")
    z.wait_running("web")
    pids = z.pids()
    needle = SECRET.encode()
    assert memory_has(pids["kin"], [needle])[needle] == 1, "the kinesis worker lost it"
    for role in ("web", "writer", "gateway"):
        assert memory_has(pids[role], [needle])[needle] == 0, f"{role} holds the secret key"


class _CredServer(http.server.ThreadingHTTPServer):
    """Plays EC2 instance metadata (IMDSv2) and an ECS credentials endpoint
    on 127.0.0.1, serving keys that expire `life` seconds after each
    request; counts the requests for credentials."""
    daemon_threads = True

    def __init__(self, life):
        self.life = life
        self.served = []          # access key ids handed out
        self.tokens_first = True  # every IMDS GET came with a token
        super().__init__(("127.0.0.1", 0), _CredHandler)


class _CredHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _send(self, code, body, ctype="text/plain"):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _keys(self):
        srv = self.server
        kid = f"ASIA{len(srv.served):04d}ZXTEST"
        srv.served.append(kid)
        exp = (datetime.datetime.now(datetime.timezone.utc) +
               datetime.timedelta(seconds=srv.life)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return json.dumps({"Code": "Success", "AccessKeyId": kid,
                           "SecretAccessKey": SECRET, "Token": "tok-" + kid,
                           "Expiration": exp})

    def do_PUT(self):
        if self.path == "/latest/api/token":
            self._send(200, "imds-token")
        else:
            self._send(404, "")

    def do_GET(self):
        if self.path.startswith("/latest/"):
            if self.headers.get("X-aws-ec2-metadata-token") != "imds-token":
                self.server.tokens_first = False
                self._send(401, "")
            elif self.path == "/latest/meta-data/iam/security-credentials/":
                self._send(200, "zx-role")
            elif self.path == "/latest/meta-data/iam/security-credentials/zx-role":
                self._send(200, self._keys(), "application/json")
            else:
                self._send(404, "")
        elif self.path == "/ecs/creds" and self.headers.get("Authorization") == "ecs-secret":
            self._send(200, self._keys(), "application/json")
        else:
            self._send(403, "")


@pytest.mark.sqlite_only
@pytest.mark.parametrize("link", ["imds", "ecs"])
def test_temporary_credentials_are_renewed_in_the_worker(link, kinesalite, make_kin):
    """No keys in the connection: EC2 instance metadata (IMDSv2) or the ECS
    endpoint supplies them, expiring 5 min 10 s after each request; the
    worker renews them ~10 s in (5 minutes before they expire) without a
    restart, records keep arriving, `zxctl test` names the link, and the
    secret is shown nowhere."""
    env, k = kinesalite
    srv = _CredServer(life=310)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        stream = make_stream(k, 1)
        z = make_kin({"cr": {"stream": stream}}, endpoint=env["KINESIS_ENDPOINT"],
                     keys=False, start=False)
        for v in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                  "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_EC2_METADATA_DISABLED",
                  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
            z.env.pop(v, None)
        z.env["AWS_SHARED_CREDENTIALS_FILE"] = z.env["AWS_CONFIG_FILE"] = "/nonexistent"
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        if link == "imds":
            z.env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = url
            z.env.pop("AWS_CONTAINER_CREDENTIALS_FULL_URI", None)
        else:
            z.env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = url + "/ecs/creds"
            z.env["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "ecs-secret"
            z.env["AWS_EC2_METADATA_DISABLED"] = "true"
        z.start()
        put(k, stream, [(json.dumps({"id": i}).encode(), "a") for i in range(10)])
        wait_for(lambda: len(ids_in(z, "cr")) == 10, lambda: f"10 rows\n{z.log_tail(20)}")
        n0 = len(srv.served)
        wait_for(lambda: len(srv.served) > n0, "the keys renewed before they expire",
                 deadline=60)
        put(k, stream, [(json.dumps({"id": 100 + i}).encode(), "a") for i in range(10)])
        wait_for(lambda: len(ids_in(z, "cr")) == 20, "the rows after the renewal")
        assert srv.tokens_first
        p = z.zxctl("test", "cr", check_rc=0)
        want = "EC2 instance metadata (role zx-role)" if link == "imds" else "ECS container"
        assert want in p.stdout, p.stdout
        shown = (z.log_text() + p.stdout + z.zxctl("status").stdout +
                 z.zxctl("--json", "status").stdout)
        assert SECRET not in shown and "tok-ASIA" not in shown
    finally:
        srv.shutdown()


@pytest.mark.sqlite_only
def test_a_role_is_assumed_through_sts(moto_kinesis, make_kin):
    """role_arn on the connection: STS AssumeRole (moto's, at the
    connection's endpoint) with the connection's keys; the records come
    through the role's keys and `zxctl test` says so."""
    env, k = moto_kinesis
    stream = make_stream(k, 1)
    z = make_kin({"ro": {"stream": stream}}, endpoint=env["KINESIS_ENDPOINT"],
                 conn_extra={"role_arn": "arn:aws:iam::123456789012:role/zx-reader",
                             "external_id": "zx-ext"})
    put(k, stream, [(json.dumps({"id": i}).encode(), "a") for i in range(5)])
    wait_for(lambda: len(ids_in(z, "ro")) == 5, lambda: f"5 rows\n{z.log_tail(20)}")
    p = z.zxctl("test", "ro", check_rc=0)
    assert "assume role arn:aws:iam::123456789012:role/zx-reader" in p.stdout, p.stdout
