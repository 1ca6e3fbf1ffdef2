"""
GET /metrics, end to end: a zxd with a push stream; rows pushed and
committed show up in the Prometheus text exposition format (0.0.4) as
zx_rows_written_total{pipeline="orders"} and its siblings, parsed by
prometheus_client's own parser and checked by `promtool check metrics`
(Debian's prometheus); the route takes an API token like the rest of
the API; a worker killed shows as a restart.  And a real Prometheus
(tests/services/prometheus) scrapes zxd, and its HTTP API answers the
query zx_rows_written_total with the rows pushed.
"""

import os
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import REPO, Zxd, http_request, uid, wait_for, zxd_factory

TOKEN_ENV = "ZX_METRICS_TOKEN"
PROMETHEUS = os.path.join(REPO, "tests", "services", "prometheus")


class MetricsZxd(Zxd):
    """A Zxd with one API token (role orchestrator), the only key to /metrics."""

    def __init__(self, root, pipelines, **kw):
        self.token = "tok-" + uid()
        self.more_pipelines = []    # lines under pipelines: (reverse syncs)
        self.more_sections = []     # top-level lines (authors:, connections:)
        super().__init__(root, pipelines, **kw)
        self.env[TOKEN_ENV] = self.token

    def config_text(self):
        return super().config_text() + "\n".join(self.more_pipelines + self.more_sections + [
            "api_tokens:",
            "  scraper:",
            "    token: ${env:%s}" % TOKEN_ENV,
            "    role: orchestrator",
        ]) + "\n"

    def scrape(self, token=None, method="GET"):
        tok = self.token if token is None else token
        h = {"Authorization": f"Bearer {tok}"} if tok else {}
        return http_request(self.port, method, "/metrics", headers=h)


@pytest.fixture
def make_mzxd(workspace):
    yield from zxd_factory(workspace, MetricsZxd)


def samples(text):
    """{(name, frozenset(labels.items())): value} of a scrape's text."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def val(sm, name, **labels):
    return sm.get((name, frozenset(labels.items())))


def scrape_ok(z):
    r = z.scrape()
    assert r.status == 200, r
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4"), r.headers
    return r.body.decode("utf-8")


def push_rows(z, name, n, batch=10):
    sent = 0
    while sent < n:
        k = min(batch, n - sent)
        z.push_ok(name, [{"id": uid(), "n": sent + i, "note": "x" * (i % 7)} for i in range(k)],
                  wait_commit=True)
        sent += k
    return sent


def test_metrics_count_what_was_pushed(make_mzxd):
    z = make_mzxd({"orders": {}, "clicks": {}})
    t0 = time.time()
    n = push_rows(z, "orders", 37)
    push_rows(z, "clicks", 5)
    text = scrape_ok(z)
    sm = samples(text)
    assert val(sm, "zx_rows_written_total", pipeline="orders") == n, text
    assert val(sm, "zx_rows_written_total", pipeline="clicks") == 5
    assert val(sm, "zx_rejects_total", pipeline="orders") == 0
    # one frame per push (10 rows each)
    assert val(sm, "zx_frames_written_total", pipeline="orders") == 4
    assert val(sm, "zx_frame_bytes_written_total", pipeline="orders") > 37 * 10
    assert val(sm, "zx_frame_errors_total", pipeline="orders") == 0
    last = val(sm, "zx_last_commit_timestamp_seconds", pipeline="orders")
    assert t0 - 1 <= last <= time.time() + 1, last
    assert val(sm, "zx_pipeline_up", pipeline="orders") == 1
    assert val(sm, "zx_pipeline_restarts_total", pipeline="orders") == 0
    assert val(sm, "zx_pipeline_state", pipeline="orders", state="running") == 1
    assert val(sm, "zx_pipeline_state", pipeline="orders", state="failed") == 0
    assert val(sm, "zx_frames_pending", pipeline="orders") == 0
    assert val(sm, "zx_source_error", pipeline="orders") == 0
    for ring in ("frames", "in", "out"):
        assert val(sm, "zx_ring_capacity_bytes", pipeline="orders", ring=ring) > 0
        assert val(sm, "zx_ring_used_bytes", pipeline="orders", ring=ring) is not None
    assert val(sm, "zx_ring_budget_bytes") > 0
    assert val(sm, "zx_process_up", process="writer") == 1
    assert val(sm, "zx_process_up", process="gateway") == 1
    assert val(sm, "zx_process_restarts_total", process="writer") == 0
    assert val(sm, "zx_metrics_truncated") == 0
    assert abs(val(sm, "zx_start_time_seconds") - t0) < 120
    # counters are typed so (prometheus_client strips _total from the family)
    types = {f.name: f.type for f in text_string_to_metric_families(text)}
    assert types["zx_rows_written"] == "counter" and types["zx_ring_used_bytes"] == "gauge"
    # the same counts as zxctl status
    assert z.pipeline("orders")["rows"] == n
    # more rows: the counter follows
    push_rows(z, "orders", 3)
    sm = samples(scrape_ok(z))
    assert val(sm, "zx_rows_written_total", pipeline="orders") == n + 3


def test_nulled_values_columns_and_histograms(make_mzxd):
    z = make_mzxd({"orders": {}})
    z.push_ok("orders", [{"id": 1, "qty": 5}], wait_commit=True)
    # qty is an integer column now: "many" does not fit (NULL + a reject);
    # "colour" is a new column
    z.push_ok("orders", [{"id": 2, "qty": "many", "colour": "red"},
                         {"id": 3, "qty": "few"}], wait_commit=True)
    z.push_ok("orders", [{"id": i, "qty": i} for i in range(4, 54)], wait_commit=True)
    text = scrape_ok(z)
    sm = samples(text)
    assert val(sm, "zx_values_nulled_total", pipeline="orders") == 2, text
    assert val(sm, "zx_rejects_total", pipeline="orders") == 2
    # id and qty with the table, then colour
    assert val(sm, "zx_columns_added_total", pipeline="orders") == 3
    # one observation per frame committed; buckets cumulative up to +Inf
    n = val(sm, "zx_commit_latency_seconds_count", pipeline="orders")
    assert n == 3, text
    les = sorted(((float(dict(k[1])["le"]), v) for k, v in sm.items()
                  if k[0] == "zx_commit_latency_seconds_bucket"
                  and dict(k[1])["pipeline"] == "orders"))
    assert les[-1] == (float("inf"), 3) and len(les) == 13
    assert all(a[1] <= b[1] for a, b in zip(les, les[1:])), les
    assert 0 <= val(sm, "zx_commit_latency_seconds_sum", pipeline="orders") < 60
    # rows per writer transaction: every row once, one transaction per push
    assert val(sm, "zx_writer_transaction_rows_sum", pipeline="orders") == 53
    assert val(sm, "zx_writer_transaction_rows_count", pipeline="orders") == 3
    assert val(sm, "zx_writer_transaction_rows_bucket", pipeline="orders", le="1") == 1
    assert val(sm, "zx_writer_transaction_rows_bucket", pipeline="orders", le="10") == 2
    assert val(sm, "zx_writer_transaction_rows_bucket", pipeline="orders", le="100") == 3
    # the counters outlive a restart of zxd (seeded from the store)
    z.stop()
    z.start()
    sm = samples(scrape_ok(z))
    assert val(sm, "zx_values_nulled_total", pipeline="orders") == 2
    assert val(sm, "zx_columns_added_total", pipeline="orders") == 3


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool (Debian prometheus) missing")
def test_promtool_accepts_the_text(make_mzxd):
    z = make_mzxd({"orders": {}})
    push_rows(z, "orders", 5)
    text = scrape_ok(z)
    p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=60)
    # exit 0: valid, and no lint problem (naming, units, HELP)
    assert p.returncode == 0, (p.stdout + p.stderr).decode()
    assert not (p.stdout + p.stderr).strip(), (p.stdout + p.stderr).decode()


def test_metrics_take_an_api_token(make_mzxd):
    z = make_mzxd({"orders": {}})
    r = z.scrape(token="")
    assert r.status == 401 and r.headers.get("www-authenticate") == "Bearer", r
    r = z.scrape(token="tok-wrong")
    assert r.status == 401, r
    # the stream's push key is no API token
    r = z.scrape(token=z.keys["orders"])
    assert r.status == 401, r
    r = z.scrape(method="POST")
    assert r.status == 405 and r.headers.get("allow") == "GET", r
    r = z.scrape(method="HEAD")
    assert r.status == 200 and r.body == b"", r
    assert int(r.headers["content-length"]) > 100
    assert z.scrape().status == 200


def test_a_killed_worker_counts_as_a_restart(make_mzxd):
    z = make_mzxd({"orders": {}})
    push_rows(z, "orders", 4)
    pid = z.pipeline("orders")["pid"]
    os.kill(pid, signal.SIGKILL)
    z.wait_running("orders", not_pid=pid)

    def restarted():
        sm = samples(scrape_ok(z))
        return val(sm, "zx_pipeline_restarts_total", pipeline="orders") == 1 and \
            val(sm, "zx_pipeline_up", pipeline="orders") == 1
    wait_for(restarted, "orders' restart in /metrics")
    # and the rows are still counted (the segment outlives the worker)
    push_rows(z, "orders", 2)
    sm = samples(scrape_ok(z))
    assert val(sm, "zx_rows_written_total", pipeline="orders") == 6


@pytest.fixture(scope="session")
def prometheus_service():
    """The Prometheus of tests/services/prometheus, started once per
    session and left running (test.sh stops it): its lines as a dict."""
    if not shutil.which("prometheus"):
        pytest.skip("prometheus (Debian's package) is not installed")
    p = subprocess.run([PROMETHEUS, "start"], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        pytest.fail(f"tests/services/prometheus start failed ({p.returncode}):\n"
                    f"{p.stderr[-4000:]}")
    lines = dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
    for k in ("URL", "TARGETS_DIR", "TOKEN_FILE"):
        assert k in lines, f"tests/services/prometheus start printed no {k}=: {p.stdout!r}"
    return lines


def prom_query(url, q):
    """The vector Prometheus' HTTP API answers for instant query q."""
    with urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": q}),
                                timeout=10) as r:
        doc = json.load(r)
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


def test_prometheus_scrapes_zxd(make_mzxd, prometheus_service):
    svc = prometheus_service
    z = make_mzxd({"orders": {}})
    n = push_rows(z, "orders", 23)
    inst = f"zx-test-{uid()[:10]}"
    with open(svc["TOKEN_FILE"], "w") as f:
        f.write(z.token)
    tgt = os.path.join(svc["TARGETS_DIR"], f"{inst}.json")
    with open(tgt + ".tmp", "w") as f:
        json.dump([{"targets": [f"127.0.0.1:{z.port}"], "labels": {"zx_test": inst}}], f)
    os.rename(tgt + ".tmp", tgt)     # whole, for the file watcher
    try:
        q = f'zx_rows_written_total{{pipeline="orders",zx_test="{inst}"}}'
        got = {}

        def scraped():
            res = prom_query(svc["URL"], q)
            got["res"] = res
            return len(res) == 1 and float(res[0]["value"][1]) == n
        wait_for(scraped, lambda: f"Prometheus to have {q} == {n} (has {got.get('res')})",
                 deadline=60)
        # the scrape itself succeeded (up 1), and the gauges came along
        up = prom_query(svc["URL"], f'up{{zx_test="{inst}"}}')
        assert up and up[0]["value"][1] == "1", up
        st = prom_query(svc["URL"], f'zx_pipeline_state{{zx_test="{inst}",state="running"}}')
        assert st and st[0]["value"][1] == "1", st
    finally:
        os.unlink(tgt)


def test_sync_runs_by_outcome(make_mzxd):
    z = make_mzxd({"orders": {}}, start=False)
    dest = os.path.join(z.root, "dest.db")
    z.more_pipelines = [
        "  export:", "    direction: out", "    author: alice",
        "    query: SELECT id, n FROM orders",
        "    destination: {connection: lite, table: orders_copy}", "    mode: replace",
        "  broken:", "    direction: out", "    author: alice",
        "    query: SELECT id, no_such_column FROM orders",
        "    destination: {connection: lite, table: broken}", "    mode: replace",
    ]
    z.more_sections = ["authors:", "  alice: {tables: [orders]}",
                       "connections:", "  lite:", "    kind: sqlite", f"    path: {dest}"]
    z.write_config()
    z.start()
    push_rows(z, "orders", 6)
    sm = samples(scrape_ok(z))
    assert val(sm, "zx_sync_runs_total", pipeline="export", outcome="succeeded") == 0
    assert val(sm, "zx_sync_run_duration_seconds_count", pipeline="export") == 0
    for _ in range(2):
        z.zxctl("run", "export", "--wait", check_rc=0)
    z.zxctl("run", "broken", "--wait", check_rc=1)
    text = scrape_ok(z)
    sm = samples(text)
    assert val(sm, "zx_sync_runs_total", pipeline="export", outcome="succeeded") == 2, text
    assert val(sm, "zx_sync_runs_total", pipeline="export", outcome="failed") == 0
    assert val(sm, "zx_sync_runs_total", pipeline="broken", outcome="failed") == 1
    assert val(sm, "zx_sync_runs_total", pipeline="broken", outcome="succeeded") == 0
    assert val(sm, "zx_sync_run_duration_seconds_count", pipeline="export") == 2
    assert 0 < val(sm, "zx_sync_run_duration_seconds_sum", pipeline="export") < 120
    # a sync between runs is idle, not stopped
    assert val(sm, "zx_pipeline_state", pipeline="export", state="idle") == 1
    if shutil.which("promtool"):
        p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                           capture_output=True, timeout=60)
        assert p.returncode == 0, (p.stdout + p.stderr).decode()


def test_kafka_lag_per_partition(request):
    """zx_source_lag_messages{topic, partition}: what the source says of
    each partition (high watermark minus its position), 0 once read."""
    from kafka_fixtures import KafkaZxd, _start_broker
    from conftest import _mkroot, teardown_zxds
    kafka = _start_broker()

    class KMetricsZxd(KafkaZxd):
        def __init__(self, *a, **kw):
            self.token = "tok-" + uid()
            super().__init__(*a, **kw)
            self.env[TOKEN_ENV] = self.token

        def config_text(self):
            return super().config_text() + (
                "api_tokens:\n  scraper:\n    token: ${env:%s}\n    role: orchestrator\n"
                % TOKEN_ENV)

    topic = kafka.create_topic(partitions=2)
    kafka.produce(topic, [json.dumps({"id": i}) for i in range(30)],
                  keys=[f"k{i}" for i in range(30)])
    z = KMetricsZxd(_mkroot(), {"k": {"connection": "c", "topic": topic}},
                    {"c": kafka.connection("plaintext")})
    request.addfinalizer(lambda: teardown_zxds([z]))
    z.start()
    z.wait_count(z.table("k"), 30)

    def lag_zero():
        r = http_request(z.port, "GET", "/metrics",
                         headers={"Authorization": f"Bearer {z.token}"})
        sm = samples(r.body.decode())
        lags = [val(sm, "zx_source_lag_messages", pipeline="k", topic=topic, partition=p)
                for p in ("0", "1")]
        return lags == [0, 0]
    wait_for(lag_zero, "zx_source_lag_messages 0 on both partitions")
