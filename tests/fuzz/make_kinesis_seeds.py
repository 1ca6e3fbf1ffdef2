#!/usr/bin/env python3
"""Write the seed corpora of fuzz_kinesis_kpl and fuzz_kinesis_json
(tests/fuzz/corpus/kinesis_kpl/, corpus/kinesis_json/): KPL aggregated
records built with a small protobuf writer (byte 0 as fuzz_kinesis_kpl.c
reads it), and Kinesis API responses in the shapes of the API reference's
examples (byte 0 picks the parser, see fuzz_kinesis_json.c).  Each seed is
< 4 KiB (test.sh fuzzes with -max_len=4096).  Run from anywhere; overwrites
the seed-* files, keeps crash-* files."""
import base64
import hashlib
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def key(num, wt):
    return varint(num << 3 | wt)


def ld(num, b):
    if isinstance(b, str):
        b = b.encode()
    return key(num, 2) + varint(len(b)) + b


def uint(num, v):
    return key(num, 0) + varint(v)


def record(pki, data, ehki=None, extra=b""):
    r = uint(1, pki)
    if ehki is not None:
        r += uint(2, ehki)
    r += ld(3, data) + extra
    return ld(3, r)


def aggregate(pks, ehks, recs, extra=b""):
    return b"".join(ld(1, k) for k in pks) + b"".join(ld(2, k) for k in ehks) + \
        b"".join(recs) + extra


def wrapped(pb, bad=False):
    md = bytearray(hashlib.md5(pb).digest())
    if bad:
        md[0] ^= 0x80
    return b"\xf3\x89\x9a\xc2" + pb + bytes(md)


tag = ld(4, ld(1, "env") + ld(2, "prod"))
KPL = {
    # byte 0 = 1: the body is wrapped with its right MD5 by the target
    "agg-two-keys": b"\x01" + aggregate(
        ["user-1", "user-2"], ["170141183460469231731687303715884105728"],
        [record(0, '{"id":1}'), record(1, '{"id":2}', 0, tag), record(0, ""),
         record(1, '[{"id":3},{"id":4}]')]),
    "agg-unknown-fields": b"\x01" + aggregate(
        ["k"], [], [record(0, "x", extra=uint(9, 5) + key(10, 1) + b"12345678" +
                           key(11, 3) + uint(1, 1) + key(11, 4) + key(12, 5) + b"abcd")],
        extra=uint(15, 99)),
    "agg-zero-records": b"\x01" + aggregate(["lonely"], [], []),
    "agg-index-out-of-range": b"\x01" + aggregate(["a"], [], [record(3, "x")]),
    "agg-cut": b"\x01" + aggregate(["a"], [], [record(0, "hello")])[:-2],
    "agg-bad-md5": b"\x02" + aggregate(["a"], [], [record(0, "x")]),
    # byte 0 = 0: the record's data as is
    "plain-json": b"\x00" + b'{"order":17,"total":9.5}',
    "plain-whole-aggregate": b"\x00" + wrapped(aggregate(["p", "q"], [], [
        record(0, "one"), record(1, "two")])),
    "plain-magic-only": b"\x00\xf3\x89\x9a\xc2" + bytes(16),
}

SEQ1 = "49590338271490256608559692538361571095921575989136588898"
SEQ2 = "49590338271490256608559692538361571095921575989136588899"
ITER = ("AAAAAAAAAAHsW8zCWf9164uy8Epue6WS3w6wmj4a4USt+CNvMd6uXQ+HL5vAJMznqqC0DLKsIjuoiTi1"
        "BpT6nW0LN2M2D56zM5H8anHm30Gbri9ua+qaGgj+3XTyvbhpERfrezgLHbPB/rIcVpykJbaSj5tmcX"
        "YRmFnqZBEyHwtZYFmh6hvWVFkIwLuMZLMrpWhG5r5hzkE=")
HALF = "170141183460469231731687303715884105727"
TOP = "340282366920938463463374607431768211455"


def js(v):
    return json.dumps(v, indent=1).encode()


JSON = {
    "get-records": b"\x00" + js({
        "MillisBehindLatest": 2100, "NextShardIterator": ITER,
        "Records": [
            {"Data": "XzxkYXRhPl8w", "PartitionKey": "partitionKey",
             "ApproximateArrivalTimestamp": 1.441215410867E9,
             "SequenceNumber": "21269319989652663814458848515492872193"},
            {"Data": base64.b64encode(wrapped(aggregate(["a"], [], [record(0, "{}")]))).decode(),
             "PartitionKey": "a", "ApproximateArrivalTimestamp": 1764500000,
             "SequenceNumber": SEQ1, "EncryptionType": "NONE"}]}),
    "get-records-closed": b"\x00" + js({
        "Records": [], "MillisBehindLatest": 0, "ChildShards": [
            {"ShardId": "shardId-000000000001", "ParentShards": ["shardId-000000000000"],
             "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": HALF}},
            {"ShardId": "shardId-000000000002", "ParentShards": ["shardId-000000000000"],
             "HashKeyRange": {"StartingHashKey": str(int(HALF) + 1), "EndingHashKey": TOP}}]}),
    "get-records-merge": b"\x00" + js({
        "Records": [], "NextShardIterator": None, "ChildShards": [
            {"ShardId": "shardId-000000000003",
             "ParentShards": ["shardId-000000000001", "shardId-000000000002"]}]}),
    "get-records-bad-seq": b"\x00" + js({"Records": [
        {"Data": "", "PartitionKey": "k", "SequenceNumber": "0123"}]}),
    "shard-iterator": b"\x01" + js({"ShardIterator": ITER}),
    "list-shards": b"\x02" + js({"Shards": [
        {"ShardId": "shardId-000000000000",
         "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": TOP},
         "SequenceNumberRange": {"StartingSequenceNumber": SEQ1, "EndingSequenceNumber": SEQ2}},
        {"ShardId": "shardId-000000000003", "ParentShardId": "shardId-000000000001",
         "AdjacentParentShardId": "shardId-000000000002",
         "SequenceNumberRange": {"StartingSequenceNumber": SEQ2}}],
        "NextToken": "AAAAAAAAAAGx4lpYyMpIvSfXf5bJpm8jIWB2KQPhw6NrBnFOygsi3WE9YAaqBCvbqXt"}),
    "stream-summary": b"\x03" + js({"StreamDescriptionSummary": {
        "StreamName": "samplestream",
        "StreamARN": "arn:aws:kinesis:us-east-1:123456789012:stream/samplestream",
        "StreamStatus": "ACTIVE", "StreamModeDetails": {"StreamMode": "PROVISIONED"},
        "RetentionPeriodHours": 24, "StreamCreationTimestamp": 1.550088187E9,
        "EnhancedMonitoring": [{"ShardLevelMetrics": []}], "EncryptionType": "NONE",
        "OpenShardCount": 3, "ConsumerCount": 0}}),
    "error-expired": b"\x00" + js({
        "__type": "com.amazonaws.kinesis.v20131202#ExpiredIteratorException",
        "message": "Iterator expired. The iterator was created at time ..."}),
    "error-not-found": b"\x03" + js({
        "__type": "ResourceNotFoundException",
        "Message": "Stream orders under account 123456789012 not found."}),
    "error-throughput": b"\x00" + js({
        "__type": "ProvisionedThroughputExceededException:http://internal.amazon.com/coral/",
        "message": "Rate exceeded for shard shardId-000000000001"}),
}


def write(name, seeds):
    out = os.path.join(HERE, "corpus", name)
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.startswith("seed-"):
            os.remove(os.path.join(out, f))
    for k, v in seeds.items():
        assert len(v) < 4096, k
        with open(os.path.join(out, "seed-" + k), "wb") as fh:
            fh.write(v)


write("kinesis_kpl", KPL)
write("kinesis_json", JSON)
