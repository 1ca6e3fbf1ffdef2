#!/usr/bin/env python3
"""Transcribes the example events of Debezium's documentation into
sqlserver_doc.jsonl, oracle_doc.jsonl and mongodb_doc.jsonl (here).  These
are NOT captured: they are the docs' examples, made valid JSON (see
README.md, "From Debezium's documentation").

Usage: doc_examples.py ADOC_DIR
  ADOC_DIR holds sqlserver.adoc, oracle.adoc and mongodb.adoc from
  debezium/debezium documentation/modules/ROOT/pages/connectors/ (commit
  aad5519902997a3627fe296f77ea6d3452e9acce, 2026-08-22) and mongodb19.adoc,
  the same file at tag v1.9.8.Final (the older MongoDB event format).
"""
import json
import os
import re
import sys

SRC = sys.argv[1]
OUT = os.path.dirname(os.path.abspath(__file__))


def blocks(name):
    t = open(os.path.join(SRC, name)).read()
    return re.findall(r'\n----\n\s*(\{.*?)\n----\n', t, re.S)


def clean(s):
    s = re.sub(r'\s*// <\d+>', '', s)
    return s.replace('{debezium-version}', '3.6.1.Final')


def fix_ts(s):
    # "ts_ms" written three times for ms/us/ns: the 2nd and 3rd are ts_us, ts_ns
    lines = s.split('\n')
    out = []
    for l in lines:
        m = re.match(r'(\s*)"ts_ms": (\d+)(,?)$', l)
        if m:
            n = len(m.group(2))
            if n >= 18: l = f'{m.group(1)}"ts_ns": {m.group(2)}{m.group(3)}'
            elif n >= 15: l = f'{m.group(1)}"ts_us": {m.group(2)}{m.group(3)}'
        out.append(l)
    return '\n'.join(out)


def trailing(s):
    return re.sub(r',(\s*[}\]])', r'\1', s)


def parse(s):
    return json.loads(trailing(fix_ts(clean(s))))


def line(topic, key, value):
    return json.dumps({"topic": topic, "key": key, "value": value}, separators=(",", ":"))


# ---- SQL Server
b = blocks('sqlserver.adoc')
key = parse([x for x in b if 'customers.Key' in x][0])
cre = parse([x for x in b if '"op": "c"' in x and '"schema": {\n    "type"' in x][0])
schema = cre["schema"]


def with_schema(x):
    x = x.replace('"schema": { ... },\n  },', '"schema": null,').replace('"schema": { ... },', '"schema": null,')
    v = parse(x); v["schema"] = schema; return v
upd = with_schema([x for x in b if '"op": "u"' in x and '"connector": "sqlserver"' in x][0])
dele = with_schema([x for x in b if '"op": "d"' in x and '"connector": "sqlserver"' in x][0])
for v in (cre, upd, dele):
    v["payload"]["source"]["event_serial_no"] = int(v["payload"]["source"]["event_serial_no"])


def key_for(i):
    k = json.loads(json.dumps(key)); k["payload"]["id"] = i; return k
T = "server1.testDB.dbo.customers"
with open(os.path.join(OUT, 'sqlserver_doc.jsonl'), 'w') as f:
    for v in (cre, upd, dele):
        f.write(line(T, key_for(1005), v) + "\n")
    f.write(line(T, key_for(1005), None) + "\n")


# ---- Oracle
b = blocks('oracle.adoc')
key = parse([x for x in b if 'CUSTOMERS.Key' in x][0])
cre = parse([x for x in b if '"op": "c"' in x and '"schema": {\n        "type"' in x][0])
schema = cre["schema"]
upd = with_schema([x for x in b if '"op": "u"' in x and '"txId": "6.9.809"' in x][0])
dele = with_schema([x for x in b if '"op": "d"' in x and '"scn": "2122184"' in x][0])
tr = [x for x in b if '"op": "t"' in x][0]
tr = with_schema(tr)
T = "server1.DEBEZIUM.CUSTOMERS"
with open(os.path.join(OUT, 'oracle_doc.jsonl'), 'w') as f:
    for v in (cre, upd, dele):
        f.write(line(T, key, v) + "\n")
    f.write(line(T, key, None) + "\n")
    f.write(line(T, None, tr) + "\n")


# ---- MongoDB: payloads only (schemas.enable=false), see README
b = blocks('mongodb.adoc')
key = parse([x for x in b if 'customers.Key' in x][0])


def payload(x):
    return parse(x.replace('"schema": { ... },', '"schema": null,'))["payload"]
cre = payload([x for x in b if '"op": "c"' in x and '"after": "{' in x and '"schema"' in x][0])
upd = payload([x for x in b if '"op": "u"' in x and 'updateDescription' in x][0])
dele = payload([x for x in b if '"op": "d"' in x and '"before":"{' in x][0])
b19 = blocks('mongodb19.adoc')
cre19 = payload([x for x in b19 if '"op": "c"' in x and '"patch": null' in x and '"schema"' in x][0])
upd19 = payload([x for x in b19 if '"op": "u"' in x and '"patch": "{' in x][0])
del19 = payload([x for x in b19 if '"op": "d"' in x and '"filter"' in x][0])
T = "fulfillment.inventory.customers"
k = key["payload"]
with open(os.path.join(OUT, 'mongodb_doc.jsonl'), 'w') as f:
    for v in (cre, upd, dele):
        f.write(line(T, k, v) + "\n")
    f.write(line(T, k, None) + "\n")
    for v in (cre19, upd19, del19):
        f.write(line(T, k, v) + "\n")
    f.write(line(T, k, None) + "\n")
