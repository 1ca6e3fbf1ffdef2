"""
`source: kinesis` (workers/sources/kinesis/) when Kinesis answers GetRecords
with ExpiredIteratorException (an iterator unused for 5 minutes, e.g. while
the writer was blocked): the source asks for a new iterator from the
position it holds for the shard, AFTER_SEQUENCE_NUMBER of the last record
it handed on (or where the shard started: TRIM_HORIZON), never LATEST, and
so loses no record and repeats none.

kinesalite never expires an iterator by itself within a test's time: the
test runs its own kinesalite (tests/services/kinesalite with its own
ZX_SERVICES_DIR, so the shared one is untouched) with ZX_KINESALITE_CONTROL=1,
whose wrapper (tests/services/kinesalite.d/serve.js) answers GetRecords with
the exact error real Kinesis gives, on demand: every Nth call, or every call
while "held".  A hold proves the LATEST case deterministically: records are
put while every read is answered "expired", the source renews its iterator
after they are in, and only then are reads let through: an iterator from
LATEST would start after them.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest

from conftest import REPO, uid, wait_for
from test_kinesis import ids_in, make_kin, put  # noqa: F401 - make_kin: a fixture

SCRIPT = os.path.join(REPO, "tests", "services", "kinesalite")


class ExpiringKinesalite:
    """A private kinesalite with the expiry hook on, and a boto3 client."""

    def __init__(self, url):
        import boto3
        self.url = url
        self.client = boto3.client("kinesis", endpoint_url=url, region_name="us-east-1",
                                   aws_access_key_id="zxtestkey",
                                   aws_secret_access_key="zxtestsecret")

    def _call(self, path, body=None):
        req = urllib.request.Request(
            self.url + path, method="POST" if body is not None else "GET",
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def expire(self, **how):
        """every=N and/or hold=bool (serve.js); returns the counters."""
        return self._call("/__zx/expire", how)

    def calls(self):
        """{"get_records", "expired", "iterators": [GetShardIterator requests]}."""
        return self._call("/__zx/calls")


@pytest.fixture(scope="module")
def expiring_kinesalite():
    d = tempfile.mkdtemp(prefix="zxkx-", dir="/tmp")
    env = dict(os.environ, ZX_SERVICES_DIR=d, ZX_KINESALITE_CONTROL="1")
    env.pop("ZX_KINESALITE_EXPIRE_EVERY", None)
    try:
        p = subprocess.run([SCRIPT, "start"], env=env, capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"tests/services/kinesalite start failed:\n{p.stderr[-2000:]}")
        vals = dict(l.split("=", 1) for l in p.stdout.split("\n") if "=" in l)
        yield ExpiringKinesalite(vals["KINESIS_ENDPOINT"])
    finally:
        subprocess.run([SCRIPT, "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(d, ignore_errors=True)


def renewals_after(emu, mark):
    """The GetShardIterator requests after the first `mark`, by shard."""
    out = {}
    for it in emu.calls()["iterators"][mark:]:
        out.setdefault(it["shard"], []).append(it)
    return out


def hold_and_put(emu, k, stream, shards, ids):
    """Hold every read as expired until each shard has had its iterator
    renewed at least once; put ids meanwhile; wait until each shard has
    asked for an iterator after the put (an iterator from LATEST would now
    start past them); release.  Returns (the renewals after the put, the
    GetRecords calls seen in a 1 s window of the hold, the window in s)."""
    emu.expire(hold=True)
    mark = len(emu.calls()["iterators"])
    wait_for(lambda: len(renewals_after(emu, mark)) == len(shards),
             lambda: f"each shard's iterator renewed under the hold: "
                     f"{renewals_after(emu, mark)}")
    # the pacing: a service that expires every iterator is not called in a loop
    c0, t0 = emu.calls()["get_records"], time.monotonic()
    time.sleep(1.0)
    c1, t1 = emu.calls()["get_records"], time.monotonic()
    put(k, stream, [(json.dumps({"id": i}).encode(), f"h{i}") for i in ids])
    mark = len(emu.calls()["iterators"])
    wait_for(lambda: len(renewals_after(emu, mark)) == len(shards),
             lambda: f"each shard's iterator renewed after the put: "
                     f"{renewals_after(emu, mark)}")
    after = renewals_after(emu, mark)
    emu.expire(hold=False)
    return after, c1 - c0, t1 - t0


@pytest.mark.sqlite_only   # the source's renewal alone: the workspace does not matter
def test_expired_iterators_are_renewed_from_the_stored_position(expiring_kinesalite,
                                                                  make_kin):
    emu = expiring_kinesalite
    k = emu.client
    stream = f"x{uid()[:10]}"
    k.create_stream(StreamName=stream, ShardCount=2)
    wait_for(lambda: k.describe_stream_summary(StreamName=stream)
             ["StreamDescriptionSummary"]["StreamStatus"] == "ACTIVE", "the stream ACTIVE")
    shards = [s["ShardId"] for s in k.list_shards(StreamName=stream)["Shards"]]
    assert len(shards) == 2, shards
    want = set()

    # 1. every read expires from the very start: nothing read yet, so each
    # renewal is where the shard started (TRIM_HORIZON)
    emu.expire(hold=True, every=0)
    z = make_kin({"ex": {"stream": stream, "extra": {
        "batch_records": 40, "metadata": "[_shard, _sequence]"}}}, endpoint=emu.url)
    first, n, secs = hold_and_put(emu, k, stream, shards, range(200))
    want |= set(range(200))
    assert all(it["type"] == "TRIM_HORIZON" for its in first.values() for it in its), first
    # at most 5 GetRecords a second per shard, expired or not (and the renewal
    # between two of them): 2 shards, the window's calls plus one each side
    assert n <= 2 * (secs / 0.2 + 2), f"{n} GetRecords in {secs:.1f} s: not paced"
    wait_for(lambda: set(ids_in(z, "ex")) >= want,
             lambda: f"the 200 records put under the hold; have {len(ids_in(z, 'ex'))}"
                     f"\n{z.log_tail(20)}")

    # 2. records keep coming while every 3rd GetRecords expires: the reading
    # lags (40 records a call), so each renewal has records behind it
    expired0 = emu.calls()["expired"]
    emu.expire(every=3)
    errors = []

    def producer():
        try:
            for i in range(1000, 2500, 100):
                put(k, stream, [(json.dumps({"id": j}).encode(), f"p{j % 37}")
                                for j in range(i, i + 100)])
                time.sleep(0.02)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    th = threading.Thread(target=producer, daemon=True)
    th.start()
    th.join(timeout=60)
    assert not errors, errors
    want |= set(range(1000, 2500))
    wait_for(lambda: set(ids_in(z, "ex")) >= want,
             lambda: f"{len(want)} ids; have {len(set(ids_in(z, 'ex')))}\n{z.log_tail(20)}",
             deadline=60)
    churned = emu.calls()["expired"] - expired0
    assert churned >= 10, f"only {churned} iterators expired while records flowed"
    emu.expire(every=0)

    # 3. every read held again, now with records read on both shards: each
    # renewal is AFTER_SEQUENCE_NUMBER of the last record handed on
    last, n, secs = hold_and_put(emu, k, stream, shards, range(5000, 5200))
    want |= set(range(5000, 5200))
    assert all(it["type"] == "AFTER_SEQUENCE_NUMBER" and it["seq"]
               for its in last.values() for it in its), last
    assert n <= 2 * (secs / 0.2 + 2), f"{n} GetRecords in {secs:.1f} s: not paced"
    wait_for(lambda: set(ids_in(z, "ex")) >= want,
             lambda: f"the records put under the second hold; have "
                     f"{len(set(ids_in(z, 'ex')))} of {len(want)}\n{z.log_tail(20)}")

    # every id once
    got = ids_in(z, "ex")
    twice = len(got) - len(set(got))
    calls = emu.calls()
    print(f"kinesis expired iterators: {calls['expired']} expired of "
          f"{calls['get_records']} GetRecords, {len(calls['iterators'])} iterators asked "
          f"for; {len(set(got))} ids, {twice} twice")
    assert set(got) == want, sorted(want - set(got))[:20]
    assert twice == 0, f"{twice} ids twice"

    # never LATEST; each AFTER_SEQUENCE_NUMBER names a record of that shard
    # that was written (the last one handed on)
    types = {it["type"] for it in calls["iterators"]}
    assert types <= {"TRIM_HORIZON", "AFTER_SEQUENCE_NUMBER"}, types
    written = {}
    for shard, seq in z.query('SELECT "_shard", "_sequence" FROM "ex"'):
        written.setdefault(shard, set()).add(str(seq).split(".")[0])
    afters = [it for it in calls["iterators"] if it["type"] == "AFTER_SEQUENCE_NUMBER"]
    assert {it["shard"] for it in afters} == set(shards), afters
    for it in afters:
        assert it["seq"] in written.get(it["shard"], set()), it

    # the log says which shard expired and where it renews from
    lines = re.findall(r'event=kinesis_iterator_expired pipeline=ex shard=(\S+) '
                       r'renew_from=(\S+) position="([^"]*)"', z.log_text())
    assert len(lines) == calls["expired"], (len(lines), calls["expired"])
    assert {s for s, _, _ in lines} == set(shards), lines[:5]
    assert {(t, p) for _, t, p in lines if t == "TRIM_HORIZON"} == {("TRIM_HORIZON", "none")}
    for shard, t, pos in lines:
        if t == "AFTER_SEQUENCE_NUMBER":
            assert pos.startswith("after ") and pos[6:] in written[shard], (shard, pos)
        else:
            assert t == "TRIM_HORIZON", (shard, t, pos)
