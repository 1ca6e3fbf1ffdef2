"""
`zxctl lineage`: where data comes from and goes to, drawn from the
configuration alone (no zxd, no services): a Kafka stream, a Postgres CDC
pipeline with history, a push stream that forwards to a topic, and reverse
syncs to files, Kafka and OpenSearch.

- the JSON form has the expected nodes and edges (upstream objects →
  stream → tables, `__changes`, `__rejects` → the syncs whose query reads
  them → their destinations, and the forward's topic);
- NAME with --upstream / --downstream keeps only that side;
- `--format dot` is drawn by Graphviz (`dot -Tsvg`, Debian's graphviz);
- `--format mermaid` passes a small syntax check: `flowchart LR`, node
  declarations, and every edge `A --> B` between declared ids;
- usage errors (exit 2) and an unknown NAME (exit 1);
- `GET /api/lineage` of a running zxd (a push stream and a sync to a
  file): the same JSON, for an API token only (401 without, or with a
  wrong one; 405 for POST).
"""
import json
import os
import re
import secrets
import shutil
import subprocess

import pytest

from conftest import ZXCTL, Zxd, http_request, zxd_factory

CONFIG = """\
server:
  data_dir: ./var
  control_socket: zxd.sock
connections:
  k: {kind: kafka, brokers: ["127.0.0.1:9094"]}
  src: {kind: postgres, dsn: "postgresql://zx@127.0.0.1:5432/shop"}
  search: {kind: opensearch, url: "http://127.0.0.1:9200"}
pipelines:
  clicks:
    direction: stream
    source: kafka
    connection: k
    topic: clicks
  shop:
    direction: stream
    source: postgres
    connection: src
    tables: [orders, public.customers]
    table_prefix: shop_
    history: true
  events:
    direction: stream
    source: http
    key: ${env:LINEAGE_PUSH_KEY}
    table: events
    forward: {kafka: {connection: k, topic: events_out}}
  clicks_files:
    direction: out
    author: analyst
    query: SELECT * FROM clicks
    destination: {files: {path: var/exports/clicks.csv, format: csv}}
    mode: replace
  orders_kafka:
    direction: out
    author: analyst
    query: >-
      SELECT o.id, c.name FROM shop_orders o
      JOIN shop_customers c ON c.id = o.customer_id
    destination: {kafka: {connection: k, topic: orders_enriched}}
    mode: upsert
    key: [id]
  history_search:
    direction: out
    author: analyst
    query: SELECT * FROM shop_orders__changes
    destination: {opensearch: {connection: search, index: order-history}}
    mode: append
authors:
  analyst:
    tables: [clicks, shop_orders, shop_customers, shop_orders__changes, events]
"""


@pytest.fixture
def cfg(tmp_path):
    p = tmp_path / "zx.yaml"
    p.write_text(CONFIG)
    return str(p)


def zxctl(cfg, *args, rc=0):
    assert os.path.exists(ZXCTL), f"zxctl not built: {ZXCTL} (set ZX_BUILD_DIR)"
    # the push key is a secret zxctl never reads: left unset on purpose
    env = {k: v for k, v in os.environ.items() if k != "LINEAGE_PUSH_KEY"}
    r = subprocess.run([ZXCTL, "-c", cfg, "lineage", *args], capture_output=True,
                       text=True, timeout=30, env=env)
    assert r.returncode == rc, (r.returncode, r.stdout, r.stderr)
    return r


def graph(cfg, *args):
    g = json.loads(zxctl(cfg, *args, "--format", "json").stdout)
    nodes = {n["id"]: n for n in g["nodes"]}
    edges = {(e["from"], e["to"]) for e in g["edges"]}
    for f, t in edges:
        assert f in nodes and t in nodes, (f, t)
    return nodes, edges


def test_json_nodes_and_edges(cfg, tmp_path):
    nodes, edges = graph(cfg)
    export = os.path.realpath(str(tmp_path)) + "/var/exports/clicks.csv"
    expected = {
        # kafka: topic → stream → its table and rejects → the files sync
        ("kafka.topic:k/clicks", "stream:clicks"),
        ("stream:clicks", "table:clicks"),
        ("stream:clicks", "table:clicks__rejects"),
        ("table:clicks", "sync:clicks_files"),
        ("sync:clicks_files", "files:" + export),
        # CDC: tables → slot → stream → mirrors, history, rejects
        ("postgres.table:src/public.orders", "postgres.slot:src/zx_shop"),
        ("postgres.table:src/public.customers", "postgres.slot:src/zx_shop"),
        ("postgres.slot:src/zx_shop", "stream:shop"),
        ("stream:shop", "table:shop_orders"),
        ("stream:shop", "table:shop_orders__changes"),
        ("stream:shop", "table:shop_orders__rejects"),
        ("stream:shop", "table:shop_customers"),
        ("stream:shop", "table:shop_customers__changes"),
        ("table:shop_orders", "sync:orders_kafka"),
        ("table:shop_customers", "sync:orders_kafka"),
        ("sync:orders_kafka", "kafka.topic:k/orders_enriched"),
        ("table:shop_orders__changes", "sync:history_search"),
        ("sync:history_search", "opensearch.index:search/order-history"),
        # push: endpoint → stream → table, and its forward's topic
        ("http.push:/api/streams/events/push", "stream:events"),
        ("stream:events", "table:events"),
        ("stream:events", "kafka.topic:k/events_out"),
    }
    assert expected <= edges, sorted(expected - edges)
    # a sync reads only the tables its query names
    assert ("table:shop_orders__changes", "sync:orders_kafka") not in edges
    assert ("table:shop_orders", "sync:history_search") not in edges
    assert not any(t == "sync:clicks_files" and f != "table:clicks" for f, t in edges)
    roles = {i: n["role"] for i, n in nodes.items()}
    assert roles["kafka.topic:k/clicks"] == "upstream"
    assert roles["stream:shop"] == "stream"
    assert roles["table:shop_orders__changes"] == "table"
    assert nodes["table:shop_orders__changes"]["kind"] == "changes"
    assert nodes["table:events__rejects"]["kind"] == "rejects"
    assert roles["sync:orders_kafka"] == "sync"
    assert roles["kafka.topic:k/events_out"] == "downstream"
    assert nodes["kafka.topic:k/orders_enriched"]["connection"] == "k"
    assert nodes["kafka.topic:k/orders_enriched"]["name"] == "orders_enriched"
    # --json is the same as --format json
    r = subprocess.run([ZXCTL, "-c", cfg, "--json", "lineage"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0 and json.loads(r.stdout)["edges"]


def test_name_upstream_downstream(cfg):
    nodes, edges = graph(cfg, "history_search", "--upstream")
    assert set(nodes) == {"sync:history_search", "table:shop_orders__changes", "stream:shop",
                          "postgres.slot:src/zx_shop", "postgres.table:src/public.orders",
                          "postgres.table:src/public.customers"}
    nodes, _ = graph(cfg, "events", "--downstream")
    assert set(nodes) == {"stream:events", "table:events", "table:events__rejects",
                          "kafka.topic:k/events_out"}
    # a table by name; without a direction: everything connected to it
    nodes, _ = graph(cfg, "shop_orders")
    assert "sync:history_search" in nodes and "kafka.topic:k/orders_enriched" in nodes
    assert "stream:clicks" not in nodes and "stream:events" not in nodes
    text = zxctl(cfg, "clicks").stdout
    assert text.startswith("stream clicks (kafka)\n  from kafka.topic clicks (connection k)\n")
    assert "sync clicks_files\n  from table clicks\n  to   files " in text
    assert "shop" not in text


def test_dot_renders_with_graphviz(cfg, tmp_path):
    dot = shutil.which("dot")
    assert dot, "Graphviz's dot is missing: packaging/install-deps.sh --test installs graphviz"
    src = zxctl(cfg, "--format", "dot").stdout
    assert src.startswith("digraph lineage {")
    r = subprocess.run([dot, "-Tsvg"], input=src, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "<svg" in r.stdout and ">orders_enriched</text>" in r.stdout
    nodes, edges = graph(cfg)
    assert r.stdout.count('class="node"') == len(nodes)
    assert r.stdout.count('class="edge"') == len(edges)
    assert r.stderr == "", r.stderr   # no syntax warning either


NODE_RE = re.compile(r'^  (n\d+)(\["[^"]*"\]|\(\["[^"]*"\]\)|\[\("[^"]*"\)\])$')
EDGE_RE = re.compile(r"^  (n\d+) --> (n\d+)$")


def test_mermaid_syntax(cfg):
    out = zxctl(cfg, "--format", "mermaid").stdout
    lines = out.splitlines()
    assert lines[0] == "flowchart LR"
    declared, nedges = set(), 0
    for line in lines[1:]:
        m = NODE_RE.match(line)
        if m:
            assert m.group(1) not in declared, line
            declared.add(m.group(1))
            continue
        m = EDGE_RE.match(line)
        assert m, f"neither a node nor an edge: {line!r}"
        assert m.group(1) in declared and m.group(2) in declared, line
        nedges += 1
    nodes, edges = graph(cfg)
    assert len(declared) == len(nodes) and nedges == len(edges)


def test_errors(cfg):
    r = zxctl(cfg, "nothing_here", rc=1)
    assert "no pipeline, table or object named nothing_here" in r.stderr
    assert "--format wants" in zxctl(cfg, "--format", "svg", rc=2).stderr
    assert "need a NAME" in zxctl(cfg, "--upstream", rc=2).stderr
    assert "cannot be used together" in zxctl(cfg, "x", "--upstream", "--downstream",
                                              rc=2).stderr
    r = subprocess.run([ZXCTL, "-c", cfg, "status", "--upstream"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "go with lineage only" in r.stderr


class LineageZxd(Zxd):
    """A Zxd with a push stream `events` (its pipelines), a sync of its
    table to a CSV file and an API token."""

    token = "tok-" + secrets.token_hex(16)
    more_syncs = 0     # that many more syncs of events, each to a file of its own

    def config_text(self):
        self.env["LINEAGE_API_TOKEN"] = self.token
        more = "".join(
            f"  copy_{i:04d}:\n    direction: out\n    author: analyst\n"
            "    query: SELECT * FROM events\n"
            f"    destination: {{files: {{path: var/exports/copy_{i:04d}.csv, format: csv}}}}\n"
            "    mode: replace\n" for i in range(self.more_syncs))
        return super().config_text() + more + (
            "  events_csv:\n    direction: out\n    author: analyst\n"
            "    query: SELECT * FROM events\n"
            "    destination: {files: {path: var/exports/events.csv, format: csv}}\n"
            "    mode: replace\n"
            "authors:\n  analyst: {tables: [events]}\n"
            "api_tokens:\n  reader:\n    token: ${env:LINEAGE_API_TOKEN}\n"
            "    role: orchestrator\n    syncs: [events_csv]\n")


@pytest.fixture
def make_lineage_zxd(workspace):
    yield from zxd_factory(workspace, LineageZxd)


def test_api_lineage(make_lineage_zxd):
    z = make_lineage_zxd({"events": {}})
    auth = {"Authorization": f"Bearer {z.token}"}
    r = http_request(z.port, "GET", "/api/lineage", headers=auth)
    assert r.status == 200, r
    edges = {(e["from"], e["to"]) for e in r.json["edges"]}
    assert {("http.push:/api/streams/events/push", "stream:events"),
            ("stream:events", "table:events"), ("stream:events", "table:events__rejects"),
            ("table:events", "sync:events_csv")} <= edges, edges
    assert any(n["id"].startswith("files:") and n["id"].endswith("/var/exports/events.csv")
               for n in r.json["nodes"])
    # the same graph as zxctl draws from the file
    g = json.loads(zxctl(z.cfg_path, "--format", "json").stdout)
    assert g == r.json
    assert http_request(z.port, "GET", "/api/lineage").status == 401
    r = http_request(z.port, "GET", "/api/lineage", headers={"Authorization": "Bearer nope"})
    assert r.status == 401 and "nodes" not in r.json
    assert http_request(z.port, "POST", "/api/lineage", headers=auth).status == 405


def test_api_lineage_filters_formats_and_run_history(make_lineage_zxd):
    """?name= keeps what is connected to a node, direction= only one way,
    format= text, dot or mermaid; a sync's last ended run comes from the
    run history, in the API and in zxctl lineage alike."""
    z = make_lineage_zxd({"events": {}, "other": {}})
    auth = {"Authorization": f"Bearer {z.token}"}
    z.push_ok("events", [{"id": 1}, {"id": 2}], wait_commit=True)
    # no run yet: no last_run
    r = http_request(z.port, "GET", "/api/lineage", headers=auth)
    sync = next(n for n in r.json["nodes"] if n["id"] == "sync:events_csv")
    assert "last_run" not in sync
    rc = z.zxctl("run", "events_csv", "--wait")
    assert rc.returncode == 0, rc.stdout + rc.stderr
    r = http_request(z.port, "GET", "/api/lineage?name=events_csv&direction=upstream",
                     headers=auth)
    assert r.status == 200, r
    ids = {n["id"] for n in r.json["nodes"]}
    # upstream of the sync: its table, the stream, its endpoint; not the
    # CSV file, nor the other stream
    assert {"sync:events_csv", "table:events", "stream:events"} <= ids, ids
    assert not any(i.startswith("files:") for i in ids) and "stream:other" not in ids, ids
    sync = next(n for n in r.json["nodes"] if n["id"] == "sync:events_csv")
    assert sync["last_run"]["state"] == "succeeded", sync
    assert sync["last_run"]["rows_read"] == 2 and sync["last_run"]["ended_at"], sync
    # the other formats, as text
    r = http_request(z.port, "GET", "/api/lineage?name=events&format=dot", headers=auth)
    assert r.status == 200 and r.headers["content-type"].startswith("text/vnd.graphviz"), r
    dot = r.body.decode()
    assert dot.startswith("digraph lineage {") and "last run succeeded at" in dot, dot
    if shutil.which("dot"):
        p = subprocess.run(["dot", "-Tsvg"], input=r.body, capture_output=True, timeout=60)
        assert p.returncode == 0 and b"<svg" in p.stdout, p.stderr
    r = http_request(z.port, "GET", "/api/lineage?format=mermaid", headers=auth)
    assert r.status == 200 and r.body.decode().startswith("flowchart LR"), r
    r = http_request(z.port, "GET", "/api/lineage?format=text&name=other", headers=auth)
    assert r.status == 200 and r.body.decode().startswith("stream other"), r
    assert "events" not in r.body.decode()
    # zxctl reads the same history from the store
    out = zxctl(z.cfg_path, "events_csv").stdout
    assert "last run succeeded at" in out, out
    # bad parameters: 400; an unknown name: 404
    for q in ("?direction=upstream", "?name=events&direction=sideways", "?format=png",
              "?name=%01x"):
        r = http_request(z.port, "GET", "/api/lineage" + q, headers=auth)
        assert r.status == 400, (q, r)
    r = http_request(z.port, "GET", "/api/lineage?name=nosuch", headers=auth)
    assert r.status == 404 and "no pipeline, table or object named nosuch" in r.json["error"], r


def test_api_lineage_larger_than_a_channel_message(make_lineage_zxd, monkeypatch):
    """A configuration whose graph outgrows a channel message (64 KiB):
    the lineage still comes whole (handed over in a memfd)."""
    monkeypatch.setattr(LineageZxd, "more_syncs", 400)
    z = make_lineage_zxd({"events": {}})
    auth = {"Authorization": f"Bearer {z.token}"}
    r = http_request(z.port, "GET", "/api/lineage", headers=auth)
    assert r.status == 200, r
    assert len(r.body) > 65536, len(r.body)
    ids = {n["id"] for n in r.json["nodes"]}
    assert "sync:copy_0000" in ids and "sync:copy_0399" in ids
    r = http_request(z.port, "GET", "/api/lineage?format=dot", headers=auth)
    assert r.status == 200 and r.body.decode().count(" -> ") >= 800, r
