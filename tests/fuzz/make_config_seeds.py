#!/usr/bin/env python3
"""Write the seed corpus of fuzz_config (tests/fuzz/corpus/config/): the
example configuration and small valid and invalid files covering every
source, reverse syncs, each kind of connection, authors, api tokens, and
YAML oddities (bad types, deep nesting, anchors, huge numbers, duplicate
keys).  Each seed is < 4 KiB (test.sh fuzzes with -max_len=4096).
Run from anywhere; overwrites the seed-*.yaml files, keeps crash-* files."""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "config")

KAFKA_CONN = """connections:
  main_kafka:
    kind: kafka
    brokers: ["127.0.0.1:9094", "[::1]:9095"]
    security: sasl_ssl
    sasl: {mechanism: SCRAM-SHA-512, username: zx, password: "${env:ZX_KPASS}"}
    tls: {ca: ca.pem, cert: /CERT, key: client.key, key_password: "${file:kp.txt}"}
    properties: {fetch.max.bytes: "52428800", socket.keepalive.enable: true}
"""
PG_CONN = """connections:
  shop: {kind: postgres, dsn: "postgresql://zx:${env:PGPW}@db1:5432/shop?sslmode=require"}
"""
DEST_CONNS = """connections:
  pg: {kind: postgres, dsn: "host=db1 dbname=crm user=zx password=${env:P}"}
  shop: {kind: mysql, dsn: "mysql://zx:pw@127.0.0.1:3306/shop"}
  lite: {kind: sqlite, path: dest.db}
  ro: {kind: sqlite, path: ro.db, read_only: true}
"""
AUTHORS = """authors:
  alice: {tables: [t, web_events]}
api_tokens:
  airflow: {token: "0123456789abcdef0123", role: orchestrator, syncs: [a]}
  bot: {token: "fedcba9876543210fedc", role: agent, approval_timeout: 90s, max_waiting: 2}
"""

SEEDS = {
    "empty": "",
    "server": """server:
  data_dir: /var/lib/zx
  control_socket: zxd.sock
  log_level: debug
  core_dumps: false
  ring_size: 64MiB
  ring_budget: 1GiB
  max_queue_delay: 250ms
  sync_query_timeout: 1h
  sync_max_spill_bytes: 10GiB
  file_roots: [/srv/exports, out]
  http:
    listen: "127.0.0.1:8780"
    max_body_size: 8MiB
    max_header_size: 16KiB
    max_connections: 1000
    idle_timeout: 60s
    header_timeout: 10s
    body_timeout: 30s
    body_min_rate: 1KiB
    backpressure_timeout: 5s
    api_auth_failures: 5
    api_auth_window: 1m
workspace:
  sqlite: {path: ws.db, synchronous: full}
""",
    "workspace-pg": """workspace:
  postgres: {dsn: "postgresql://zx@localhost/zx", schema: zx, application_name: zxd}
""",
    "http-mixed": """pipelines:
  web_events:
    direction: stream
    source: http
    key: ${env:ZX_KEY}
    webhook_secret: ${file:hook.txt}
    ack: commit
    table: web_events
    format: json
    mode: upsert
    key_columns: [id]
    metadata: [_ingested_at]
    max_columns: 200
    history: true
    max_body_size: 1MiB
    max_parked_bytes: 64MiB
""",
    "http": """pipelines:
  web_events:
    direction: stream
    source: http
    key: ${env:ZX_KEY}
    ack: commit
    table: web_events
    mode: latest
    key_columns: [id]
    max_columns: 200
    history: true
    max_body_size: 1MiB
  signed: {direction: stream, source: http, webhook_secret: "${file:hook.txt}", table: s}
""",
    "kafka": KAFKA_CONN + """pipelines:
  clicks:
    direction: stream
    source: kafka
    connection: main_kafka
    topics: [clicks, views]
    group: zx-clicks
    start: oldest
    on_topic_reset: fail
    encoding: json
    table: clicks
""",
    "kafka-plain": """connections:
  k: {kind: kafka, brokers: " k1:9092 , k2:19092", security: sasl_plaintext,
      sasl: {mechanism: PLAIN, username: u, password: p}}
pipelines:
  c: {direction: stream, source: kafka, connection: k, topic: t, table: c, max_parked_bytes: 1MiB}
""",
    "postgres": PG_CONN + """pipelines:
  orders:
    direction: stream
    source: postgres
    connection: shop
    tables: [orders, sales.Customers]
    table_prefix: shop_
    initial_copy: false
    history: true
    slot: audit_slot
    slot_lost: fail
    publication: "Audit Pub"
""",
    "generate": """pipelines:
  gen:
    direction: stream
    source: generate
    table: gen
    fields:
      id: sequence
      user_id: int 1..1000
      kind: choice click,view,buy
      at: timestamp
      uid: uuid
      price: float 0..100
      meta: 'json {"a": 1, "b": [true, null]}'
      flag: bool
    rate: 100/s
    count: 5000
""",
    "reverse-table": DEST_CONNS + AUTHORS + """pipelines:
  a:
    direction: out
    author: alice
    query: SELECT 1 AS id
    destination: {connection: pg, table: public.customers}
    mode: upsert
    key: [id]
    schedule: "*/15 * * * *"
    batch_rows: 1000
    query_timeout: 10m
    max_spill_bytes: 1GiB
  b: {direction: out, author: alice, query: SELECT * FROM t, mode: replace,
      destination: {connection: shop, table: t}}
  c: {direction: out, author: alice, query: SELECT * FROM t, mode: append,
      destination: {connection: lite, table: t}}
""",
    "reverse-files": """server: {file_roots: [out]}
authors:
  alice: {tables: [t]}
pipelines:
  a: {direction: out, author: alice, query: SELECT 1, mode: replace,
      destination: {files: {path: out/sub/x.csv, format: csv}}}
  b: {direction: out, author: alice, query: SELECT 1, mode: replace,
      destination: {files: {path: out/y.parquet, format: parquet, compression: zstd}}}
  c: {direction: out, author: alice, query: SELECT 1, mode: replace,
      destination: {files: {path: out/z.json, format: json}}}
""",
    "authors": """authors:
  alice:
    tables: [t, "s.T"]
    operators: [bob]
api_tokens:
  t: {token: "0123456789abcdef0", role: agent, syncs: [x]}
  u: {token: short, role: boss}
""",
    # invalid ones
    "bad-types": """server: [a, b]
workspace: 3
pipelines:
  p: {direction: [stream], source: {http: 1}, table: 12, history: maybe, max_columns: -3}
connections: "none"
""",
    "bad-values": """server:
  data_dir: ""
  ring_size: 18446744073709551616
  ring_budget: -1
  http: {listen: "127.0.0.1:18446744073709617316", max_connections: 4294967297,
         idle_timeout: 4294967297ms, max_body_size: 99999999999999999999GiB}
  max_queue_delay: 1e308s
  log_level: loud
""",
    "huge-numbers": """server:
  ring_size: 0x7fffffffffffffff
  sync_max_spill_bytes: 9223372036854775807KiB
  max_queue_delay: 9223372036854775807ms
  sync_query_timeout: 18446744073709551615s
pipelines:
  g: {direction: stream, source: generate, table: g, fields: {a: int -9223372036854775808..9223372036854775807},
      count: 18446744073709551615, rate: 99999999999999999999/s}
""",
    "duplicates": """server: {data_dir: a}
server: {data_dir: b}
connections:
  a: {kind: kafka, brokers: ["b:1"]}
  a: {kind: kafka, brokers: ["b:1"], brokers: ["c:2"]}
  b: {brokers: ["b:1"], knd: kafka}
  Main: {kind: kafka, brokers: ["b:1"]}
pipelines:
  p: {direction: stream, source: http, table: t, table: u}
  p: {direction: stream, source: http, table: t}
""",
    "anchors-valid": """pipelines:
  a: &p {direction: stream, source: http, key: k, table: a, metadata: &md [_ingested_at]}
  b: {direction: stream, source: http, key: k, table: b, metadata: *md}
""",
    "anchors": """x-common: &common
  direction: stream
  source: http
  metadata: &md [_ingested_at]
pipelines:
  a: {<<: *common, table: a}
  b:
    <<: *common
    table: b
    metadata: *md
  c: *common
""",
    "alias-bomb": """a: &a [x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
pipelines:
  p: {direction: stream, source: http, table: t, metadata: *d}
""",
    "deep": "pipelines:\n  p:\n    fields: " + "[" * 300 + "]" * 300 + "\n"
            "  q: " + "{a: " * 200 + "1" + "}" * 200 + "\n",
    "refs": """server:
  data_dir: /srv/${env:BAD NAME}/${enx:A}/${file:}/${env:A
  control_socket: ${file:/dev/zero}
connections:
  k: {kind: kafka, brokers: "b:1,${env:ZX_T_SECRET}"}
  p: {kind: postgres, dsn: "${file:/proc/self/fd/0}"}
""",
    "unknown-keys": """sever: {}
pipelines:
  p: {direction: stream, source: htpp, tabel: t}
  q: {direction: sideways, source: http, table: t}
  r: {direction: out, author: nobody, query: "", destination: {connection: nope, table: t}}
""",
    "wrong-source-options": PG_CONN + """pipelines:
  web: {direction: stream, source: http, table: t, tables: [a], table_prefix: p_,
        initial_copy: true, topic: x, group: g}
  pg: {direction: stream, source: postgres, connection: shop, tables: [t], key: k,
       topic: t, group: g, start: new, ack: commit}
  kk: {direction: stream, source: kafka, connection: shop, topic: t}
""",
    "bad-cron-dsn": DEST_CONNS.replace("host=db1", "host='db1 port=x") + """authors:
  alice: {tables: [t]}
pipelines:
  a: {direction: out, author: alice, query: SELECT 1, mode: upsert, key: [],
      destination: {connection: shop, table: ""}, schedule: "61 25 32 13 8 extra"}
  b: {direction: out, author: alice, query: SELECT 1, mode: replace,
      destination: {files: {path: ../../etc/passwd, format: xls}}, schedule: "@every"}
""",
    "bad-names": """pipelines:
  "": {direction: stream, source: http, table: t}
  "a\\u0000b": {direction: stream, source: http, table: "t\\x01"}
  """ + "n" * 300 + """: {direction: stream, source: http, table: t}
  ok: {direction: stream, source: http, table: "\\U0001F600", metadata: ["", _x]}
""",
    "scalars": """? [complex, key]
: value
!!binary aGVsbG8=: 1
pipelines: !!map
  p: !!str {direction: stream}
  q: !custom {direction: stream, source: http, table: t}
  r: {direction: stream, source: http, table: ~, history: !!bool yes}
""",
    "multi-doc": """pipelines: {}
---
pipelines: {p: {direction: stream, source: http, table: t}}
...
""",
    "yaml-error": "pipelines:\n  p: {direction: stream\n  - bad\n\t tab: \"unterminated\n",
    "too-many-errors": "pipelines:\n" + "".join(
        f"  p{i}: {{direction: x, source: y}}\n" for i in range(120)),
    "sasl-tls": """connections:
  a: {kind: kafka, brokers: [b:1], security: ssl, tls: {ca: /nonexistent/ca.pem}}
  b: {kind: kafka, brokers: [b:1], security: sasl_ssl, sasl: {mechanism: GSSAPI}}
  c: {kind: kafka, brokers: [b:1], security: plaintext, sasl: {username: u}, tls: {cert: c}}
  d: {kind: kafka, brokers: [], security: none}
  e: {kind: kafka, brokers: ["b:99999", ":1", "[::1", "h:"], properties: {bootstrap.servers: x, "": 1, a: [1]}}
""",
}


def main():
    os.makedirs(OUT, exist_ok=True)
    shutil.copyfile(os.path.join(HERE, "..", "..", "conf", "zx.example.yaml"),
                    os.path.join(OUT, "seed-example.yaml"))
    for name, text in SEEDS.items():
        data = text.encode()
        assert len(data) < 4096, name
        with open(os.path.join(OUT, f"seed-{name}.yaml"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
