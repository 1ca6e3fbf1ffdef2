"""
Progress of long work (issue 23): a reverse sync's run publishes its phase,
rows done and expected (the previous run's rows read) while it runs;
`zxctl status --json` shows it as "progress" (done, expected, rate,
eta_seconds), the human status as a `progress:` line, the feed as
"progress" events (at most every 5 s, none when idle), and `zxctl run
--wait` as a live line rewritten with '\\r' on a terminal, plain lines
otherwise.  The initial copy of a Postgres stream shows the same
progress (rows copied of the planner's estimate).

The run is made slow enough to be seen: a few hundred thousand rows, each
with a subquery over a small table (a few seconds of reading), sent to an
SQLite table in batches of 200 rows.
"""

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import termios
import time

import pytest

from conftest import ZXCTL, http_request, wait_for
from pg_cdc_fixtures import copy_held, make_cdc_env, superuser
from sync_fixtures import make_sync_env

ROWS = 300000
METRICS_TOKEN = "tok-progress-metrics-0123456789"
QUERY = "SELECT id, v, (SELECT count(*) FROM pad WHERE pad.k <= big.id % 400) AS c FROM big"


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def big_sync(sync_env, first_run=True):
    z = sync_env.zxd({}, {"alice": ["big", "pad"]}, start=False)
    z.syncs = {"big_out": {"author": "alice", "query": QUERY,
                           "dest": {"connection": "d", "table": "big"}, "mode": "upsert",
                           "key": ["id"], "extra": {"batch_rows": 200}}}
    z.connections = {"d": {"kind": "sqlite", "path": os.path.join(z.root, "dest.db")}}
    z.api_tokens = {"scraper": {"token": METRICS_TOKEN, "role": "status"}}
    z.write_config()
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE big (id {t['int']} PRIMARY KEY, v {t['text']})")
    if z.workspace == "postgres":
        z.ws_exec(f"INSERT INTO big SELECT g, 'value-' || g FROM generate_series(1, {ROWS}) g")
    else:
        z.ws_exec("WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < "
                  f"{ROWS}) INSERT INTO big SELECT g, 'value-' || g FROM s")
    z.ws_exec(f"CREATE TABLE pad (k {t['int']})")
    if z.workspace == "postgres":
        z.ws_exec("INSERT INTO pad SELECT g FROM generate_series(1, 400) g")
    else:
        z.ws_exec("WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < "
                  "400) INSERT INTO pad SELECT g FROM s")
    if z.workspace == "postgres":
        z.ws_exec("ANALYZE big", "ANALYZE pad")
    z.start()
    if first_run:
        first = z.run("big_out")       # its rows read: the next run's expected
        assert first["rows_read"] == ROWS
    return z


@pytest.fixture
def mirror_env(pg, workspace):
    yield from make_cdc_env(pg, workspace)


def feed(z):
    out = z.zxctl("--json", "feed", check_rc=0).stdout.splitlines()
    return [json.loads(l) for l in out[1:] if l.strip()]


def idle(z):
    return (z.pipeline("big_out").get("sync") or {}).get("state") == "idle"


def test_a_run_shows_its_progress_in_status_and_the_feed(sync_env):
    z = big_sync(sync_env)
    assert z.pipeline("big_out")["progress"] is None       # idle: none
    p = z.zxctl("--json", "run", "big_out", "--full", check_rc=0)
    run_id = json.loads(p.stdout)["run"]
    seen = []

    def progressing():
        pg = z.pipeline("big_out").get("progress")
        if pg and pg["done"] > 0 and pg["rate"] > 0:
            seen.append(pg)
        return len(seen) >= 2 or idle(z)
    wait_for(progressing, "the run's progress", deadline=120, interval=0.2)
    assert seen, "no progress seen while the run ran: " + z.log_tail()
    pg = seen[-1]
    assert pg["what"] in ("reading", "comparing", "sending", "recording"), pg
    # reading: of the previous run's rows read; then of the rows read or to send
    assert pg["expected"] == ROWS and 0 < pg["done"] <= ROWS, pg
    assert 0 <= pg["percent"] <= 100 and pg["eta_seconds"] is not None, pg
    assert pg["eta_seconds"] >= 0 and pg["line"].startswith(pg["what"] + " "), pg
    # GET /metrics has it too while the run goes on
    r = http_request(z.port, "GET", "/metrics",
                     headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert r.status == 200, r
    text = r.body.decode()
    if z.pipeline("big_out").get("progress"):     # still running after the scrape
        assert 'zx_progress_done_rows{pipeline="big_out"}' in text, text
        assert 'zx_progress_rows_per_second{pipeline="big_out"}' in text, text
    # the human status: one progress line (taken while it still runs)
    text = z.zxctl("status", check_rc=0).stdout
    if not idle(z):
        assert "  progress: " in text and " rows" in text, text
    # the command `progress` answers the same alone
    pj = json.loads(z.zxctl("--json", "progress", "big_out", check_rc=0).stdout)
    assert pj["ok"] and pj["pipeline"] == "big_out" and "progress" in pj, pj
    assert pj["progress"] is None or pj["run"] == run_id, pj
    wait_for(lambda: idle(z), "the run's end", deadline=300)
    assert z.pipeline("big_out")["progress"] is None       # over: none
    r = http_request(z.port, "GET", "/metrics",
                     headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert "# TYPE zx_progress_done_rows gauge" in r.body.decode()
    assert 'zx_progress_done_rows{pipeline="big_out"}' not in r.body.decode()
    assert z.zxctl("progress", "big_out", check_rc=0).stdout.strip() == \
        "big_out: no work in progress"
    # this run's events (the first run's expected nothing)
    started = [r for r in z.runs("big_out") if r["id"] == run_id][0]["started_at"]

    def progress_events():
        return [e for e in feed(z) if e["event"] == "progress" and
                e["pipeline"] == "big_out" and e["ts"] >= started]
    events = progress_events()
    assert events, "no progress event in the feed"
    # (an event as a phase begins may have nothing done in it yet)
    assert any(e["done"] > 0 for e in events), events
    for e in events:
        assert e["expected"] == ROWS and "rate" in e and "eta_seconds" in e, e
        assert e["run"] == run_id, e
        assert e["message"].startswith(e["what"] + " "), e
    # at most one every 5 s
    ts = [time.mktime(time.strptime(x["ts"][:19], "%Y-%m-%dT%H:%M:%S")) for x in events]
    assert all(b - a >= 4 for a, b in zip(ts, ts[1:])), [x["ts"] for x in events]
    # none once idle
    n = len(events)
    time.sleep(6)
    assert len(progress_events()) == n
    runs = z.runs("big_out")
    assert runs[0]["id"] == run_id and runs[0]["state"] == "succeeded"


@pytest.mark.postgres_only
def test_a_first_run_on_postgres_expects_the_planners_estimate(sync_env):
    """No earlier run: the rows to expect come from EXPLAIN of the query, in
    the run's own read-only session. (A first upsert into SQLite sends its
    rows as it reads them: its progress is "sending", of the rows read.)"""
    z = big_sync(sync_env, first_run=False)
    z.zxctl("--json", "run", "big_out", check_rc=0)
    seen = []

    def reading():
        pg = z.pipeline("big_out").get("progress")
        if pg and pg["what"] in ("reading", "sending") and pg["done"] > 0:
            seen.append(pg)
        return seen or idle(z)
    wait_for(reading, "the run reading", deadline=120, interval=0.1)
    assert seen, "the run read without a progress seen: " + z.log_tail()
    pg = seen[-1]
    # an estimate (ANALYZEd: about the rows), never said to be exact
    assert pg["expected"] is not None and ROWS / 2 <= pg["expected"] <= ROWS * 2, pg
    assert pg["exact"] is False, pg
    wait_for(lambda: idle(z), "the run's end", deadline=300)
    assert z.runs("big_out")[0]["state"] == "succeeded"


def read_all(fd, proc, deadline=300):
    out = b""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:     # EIO: the other side is closed
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return out.decode("utf-8", "replace")


def test_run_wait_on_a_terminal_rewrites_one_line(sync_env):
    z = big_sync(sync_env)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
    proc = subprocess.Popen([ZXCTL, "-s", z.sock, "run", "big_out", "--wait", "--full"],
                            stdin=slave, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = read_all(master, proc).replace("\r\n", "\n")    # the terminal's newlines
    proc.wait(timeout=60)
    os.close(master)
    assert proc.returncode == 0, out
    assert "\rbig_out: " in out, repr(out[:2000])
    live = [seg for seg in out.split("\r") if seg.startswith("big_out: ")]
    assert any(" of " in seg and "rows" in seg and "rows/s" in seg for seg in live), live[:5]
    # cleared before the summary, which follows on a clean line
    last = out.rindex("\r")
    assert out[last:].startswith("\r\x1b[K") and "succeeded" in out[last:], repr(out[last:])
    assert "\n" not in out[:last], repr(out[:300])       # one line, rewritten


def test_run_wait_without_a_terminal_prints_plain_lines(sync_env):
    z = big_sync(sync_env)
    p = subprocess.run([ZXCTL, "-s", z.sock, "run", "big_out", "--wait", "--full"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "\r" not in p.stdout and "\x1b" not in p.stdout, repr(p.stdout)
    lines = p.stdout.splitlines()
    prog = [l for l in lines if l.startswith("big_out: ")]
    assert prog, p.stdout
    assert all(" rows" in l for l in prog), prog
    assert any(l.startswith("run ") and "succeeded" in l for l in lines), p.stdout
    # --json prints the answer alone
    j = subprocess.run([ZXCTL, "-s", z.sock, "--json", "run", "big_out", "--wait"],
                       capture_output=True, text=True, timeout=300)
    assert json.loads(j.stdout)["state"] == "succeeded", j.stdout


CDC_ROWS = 3000000


def test_the_cdc_initial_copy_shows_its_progress(pg, mirror_env):
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE orders (id int PRIMARY KEY, v int)")
    pg.execute(db, f"INSERT INTO orders SELECT g, g FROM generate_series(1, {CDC_ROWS}) g")
    pg.execute(db, "ANALYZE orders")
    z = mirror_env.zxd({"shopp": {"connection": "db", "tables": ["orders"]}},
                       {"db": superuser(db)}, start=False)
    seen, texts = [], []
    with copy_held(pg, db, z):     # the copy stays under way (3M rows take ~1 s)

        def copying():
            e = z.pipeline("shopp")
            pg_ = e.get("progress")
            if pg_ and pg_["done"] > 0:
                seen.append(pg_)
                if len(texts) < 1:
                    texts.append(z.zxctl("status", check_rc=0).stdout)
            return len(seen) >= 2 or (e.get("source_status") or {}).get("state") == "streaming"
        wait_for(copying, "the copy's progress", deadline=120, interval=0.05)
        assert seen, "the copy ended before any progress was seen: " + z.log_tail()
        pg_ = seen[-1]
        assert pg_["what"] == "copying public.orders", pg_
        assert pg_["expected"] == CDC_ROWS and pg_["exact"] is False, pg_   # the estimate
        assert 0 < pg_["done"] <= CDC_ROWS and 0 <= pg_["percent"] <= 100, pg_
        assert "rate" in pg_ and "eta_seconds" in pg_, pg_
        assert "progress: copying public.orders " in texts[0], texts[0]
        assert " of ~3,000,000 rows (" in texts[0], texts[0]
    # streaming: the copy is over, and so is its progress
    wait_for(lambda: (z.pipeline("shopp").get("source_status") or {}).get("state") ==
             "streaming", "streaming", deadline=300)
    wait_for(lambda: z.pipeline("shopp")["progress"] is None, "no progress once streaming",
             deadline=30)
    z.wait_count("orders", CDC_ROWS, deadline=300)
