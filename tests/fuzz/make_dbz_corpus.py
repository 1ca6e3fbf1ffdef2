#!/usr/bin/env python3
"""Seeds for fuzz_debezium (tests/fuzz/corpus/debezium/) from the captured
events of tests/corpus/debezium/*.jsonl: each event as a Kafka message
(flags 0), an http body (flags 1), and a few in latest mode.  Input layout:
see fuzz_debezium.c."""
import glob, json, os, sys

root = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(root, "corpus", "debezium")
os.makedirs(out, exist_ok=True)
n = 0
for path in sorted(glob.glob(os.path.join(root, "..", "corpus", "debezium", "*.jsonl"))):
    base = os.path.basename(path)[:-6]
    for i, line in enumerate(open(path)):
        if i % 3:
            continue   # a third of the events: the seeds stay small
        ev = json.loads(line)
        if "body" in ev:   # an http capture: the push body
            key, val = b"", ev["body"].encode()
        else:
            key = b"" if ev.get("key") is None else json.dumps(ev["key"]).encode()
            val = b"" if ev.get("value") is None else json.dumps(ev["value"]).encode()
        for flags in ((0, 1, 8 | 16) if i == 0 else (0,) if i % 2 else (1,)):
            blob = bytes([flags]) + len(key).to_bytes(2, "big") + key + val
            with open(os.path.join(out, f"{base}-{i}-{flags}"), "wb") as f:
                f.write(blob)
            n += 1
for j, body in enumerate([b'{"sku":"a","price":1}', b'[{"sku":"a"},{"sku":"b","x":[1,{"y":2}]}]',
                          b'{"sku":"a"}\n{"sku":"b"}\n']):
    for flags in (2, 3, 7):
        with open(os.path.join(out, f"latest-{j}-{flags}"), "wb") as f:
            f.write(bytes([flags, 0, 0]) + body)
        n += 1
print(f"{n} seeds in {out}", file=sys.stderr)
