"""
The gateway's sync API, end to end: an orchestrator's token starts runs
(POST /api/syncs/NAME/runs) and reads their state (GET /api/runs/ID); an
agent's token gets a preview waiting for `zxctl approve` (or `reject`);
wrong, missing and out-of-scope tokens are refused without a hint of what
exists.  Both workspace backends; the destination is an SQLite file.
"""

import json
import os

import pytest

from conftest import http_request, wait_for
from sync_fixtures import make_sync_env, sqlite_rows, token
from test_syncs import make_customers


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def api_zxd(sync_env):
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False)
    dest = os.path.join(z.root, "dest.db")
    q = "SELECT id, email, plan FROM customers"
    z.syncs = {
        "crm": {"query": q, "mode": "upsert", "key": ["id"],
                "dest": {"connection": "crm", "table": "customers"}},
        "other": {"query": q, "mode": "replace",
                  "dest": {"connection": "crm", "table": "other"}},
    }
    z.connections = {"crm": {"kind": "sqlite", "path": dest}}
    z.api_tokens = {"airflow": {"token": token(), "role": "orchestrator", "syncs": ["crm"]},
                    "assistant": {"token": token(), "role": "agent"}}
    z.write_config()
    make_customers(z)
    z.start()
    return z, dest


def call(z, method, path, tok=None, body=None):
    h = {"Authorization": f"Bearer {tok}"} if tok else {}
    if body is not None:
        h["Content-Type"] = "application/json"
    return http_request(z.port, method, path, body=body, headers=h)


def wait_state(z, tok, run, states, deadline=60):
    last = {}

    def done():
        r = call(z, "GET", f"/api/runs/{run}", tok)
        assert r.status == 200, r
        last.update(r.json)
        return r.json["state"] in states
    wait_for(done, f"run {run} in {states}", deadline=deadline)
    return last


def test_an_orchestrator_starts_a_run_and_follows_it(sync_env):
    z, dest = api_zxd(sync_env)
    tok = z.api_tokens["airflow"]["token"]
    r = call(z, "POST", "/api/syncs/crm/runs", tok)
    assert r.status == 202, r
    run = r.json["run"]
    assert r.json["status_url"] == f"/api/runs/{run}" and r.json["sync"] == "crm"
    rec = wait_state(z, tok, run, {"succeeded", "failed"})
    assert rec["state"] == "succeeded" and rec["rows_sent"] == 3, rec
    assert "orchestrator airflow" in rec["trigger"]
    assert sqlite_rows(dest, "SELECT count(*) FROM customers") == [(3,)]
    # a body asking for a full run; then an unchanged one sends nothing
    r = call(z, "POST", "/api/syncs/crm/runs", tok, body=b'{"full": true}')
    assert r.status == 202
    assert wait_state(z, tok, r.json["run"], {"succeeded"})["rows_sent"] == 3
    r = call(z, "POST", "/api/syncs/crm/runs", tok, body=b"")
    assert wait_state(z, tok, r.json["run"], {"succeeded"})["rows_sent"] == 0
    # the history shows the API's runs
    assert all("airflow" in x["trigger"] for x in z.runs("crm")[:3])
    assert z.api_tokens["airflow"]["token"] not in z.log_text()


def test_bad_tokens_and_requests_are_refused(sync_env):
    z, dest = api_zxd(sync_env)
    tok = z.api_tokens["airflow"]["token"]
    assert call(z, "POST", "/api/syncs/crm/runs").status == 401
    r = call(z, "POST", "/api/syncs/crm/runs", "tok-wrong-0123456789abcdef")
    assert r.status == 401 and "www-authenticate" in r.headers
    # a sync the token may not run, and one that does not exist
    assert call(z, "POST", "/api/syncs/other/runs", tok).status == 403
    assert call(z, "POST", "/api/syncs/nope/runs", tok).status == 404
    assert call(z, "POST", "/api/syncs/web/runs", tok).status == 404   # a stream, not a sync
    assert call(z, "GET", "/api/syncs/crm/runs", tok).status == 405
    assert call(z, "POST", "/api/syncs/crm/runs", tok, body=b"[1]").status == 400
    assert call(z, "POST", "/api/syncs/crm/runs", tok, body=b'{"full": 1}').status == 400
    assert call(z, "POST", "/api/syncs/../runs", tok).status == 404
    assert call(z, "GET", "/api/runs/abc", tok).status == 404
    assert call(z, "GET", "/api/runs/123", tok).status == 404
    # a run of a sync the token may not read is not found for it
    agent = z.api_tokens["assistant"]["token"]
    r = call(z, "POST", "/api/syncs/other/runs", agent)
    assert r.status == 202
    assert call(z, "GET", f"/api/runs/{r.json['run']}", tok).status == 404
    assert call(z, "GET", f"/api/runs/{r.json['run']}", agent).status == 200
    assert not os.path.exists(dest) or sqlite_rows(
        dest, "SELECT count(*) FROM sqlite_master WHERE name = 'customers'") == [(0,)]


def test_an_agents_run_waits_for_approval(sync_env):
    z, dest = api_zxd(sync_env)
    agent = z.api_tokens["assistant"]["token"]
    r = call(z, "POST", "/api/syncs/crm/runs", agent)
    assert r.status == 202
    run = r.json["run"]
    rec = wait_state(z, agent, run, {"awaiting_approval", "failed"})
    assert rec["state"] == "awaiting_approval", rec
    assert rec["preview"]["rows_inserted"] == 3 and len(rec["preview"]["sample"]) == 3
    assert not os.path.exists(dest)
    # approval shows the preview, then runs
    p = z.zxctl("approve", run)
    assert p.returncode == 0, p.stderr
    assert "preview: would send 3 of 3 rows read" in p.stdout, p.stdout
    rec = wait_state(z, agent, run, {"succeeded", "failed"})
    assert rec["state"] == "succeeded" and rec["rows_sent"] == 3, rec
    assert sqlite_rows(dest, "SELECT count(*) FROM customers") == [(3,)]
    # a second one is rejected: nothing sent
    z.ws_exec("UPDATE customers SET plan = 'x'")
    run2 = call(z, "POST", "/api/syncs/crm/runs", agent).json["run"]
    assert wait_state(z, agent, run2, {"awaiting_approval"})["preview"]["rows_updated"] == 3
    p = z.zxctl("reject", run2)
    assert p.returncode == 0, p.stderr
    assert wait_state(z, agent, run2, {"rejected"})["state"] == "rejected"
    assert sqlite_rows(dest, "SELECT count(*) FROM customers WHERE plan = 'x'") == [(0,)]
    # approving it now is refused
    p = z.zxctl("approve", run2)
    assert p.returncode == 1 and "rejected" in p.stderr
    states = [x["state"] for x in z.runs("crm")]
    assert states[:2] == ["rejected", "succeeded"], states


def test_runs_waiting_are_bounded(sync_env):
    """An agent asking again and again: 16 runs wait for approval, the
    17th is told to come back later (429, Retry-After); nothing grows."""
    z, dest = api_zxd(sync_env)
    agent = z.api_tokens["assistant"]["token"]
    codes = [call(z, "POST", "/api/syncs/crm/runs", agent).status for _ in range(16)]
    assert codes == [202] * 16
    r = call(z, "POST", "/api/syncs/crm/runs", agent)
    assert r.status == 429 and r.headers.get("retry-after") == "10", r
    assert "16 runs waiting" in r.json["error"]
    p = z.zxctl("run", "crm")
    assert p.returncode == 1 and "runs waiting already" in p.stderr
    # a rejected one makes room
    waiting = [x for x in z.runs("crm", limit=50) if x["state"] in
               ("awaiting_approval", "previewing", "queued")]
    assert len(waiting) == 16
    wait_for(lambda: any(x["state"] == "awaiting_approval" for x in z.runs("crm", limit=50)),
             "a run awaiting approval")
    first = next(x for x in z.runs("crm", limit=50) if x["state"] == "awaiting_approval")
    assert z.zxctl("reject", first["id"]).returncode == 0
    assert call(z, "POST", "/api/syncs/crm/runs", agent).status == 202


def test_a_run_awaiting_approval_outlives_a_restart(sync_env):
    z, dest = api_zxd(sync_env)
    agent = z.api_tokens["assistant"]["token"]
    run = call(z, "POST", "/api/syncs/crm/runs", agent).json["run"]
    assert wait_state(z, agent, run, {"awaiting_approval"})["preview"]["rows_inserted"] == 3
    z.stop()
    z.start()
    rec = wait_state(z, agent, run, {"awaiting_approval"})
    assert rec["preview"]["rows_inserted"] == 3
    out = {}

    def approved():
        p = z.zxctl("approve", run)
        out["p"] = p
        assert p.returncode == 0 or "retry approve" in p.stderr, p.stderr
        return p.returncode == 0
    wait_for(approved, "the approval (once zxd has started)")
    assert "preview: would send 3" in out["p"].stdout, out["p"].stdout
    assert wait_state(z, agent, run, {"succeeded", "failed"})["state"] == "succeeded"
    assert sqlite_rows(dest, "SELECT count(*) FROM customers") == [(3,)]


def test_a_run_cut_by_zxd_dying_is_recorded_as_failed(sync_env):
    import signal
    from test_sync_dests import big_source, wait_sending
    z = sync_env.zxd({}, {"alice": ["big"]}, start=False)
    z.syncs = {"b": {"query": "SELECT id, v FROM big", "mode": "upsert", "key": ["id"],
                     "dest": {"files": {"path": "var/exports/out", "format": "csv"}}}}
    z.write_config()
    big_source(z, 1000000)
    z.start()
    assert z.zxctl("run", "b").returncode == 0
    wait_sending(z, "b")
    z.kill_all()          # SIGKILL to every process of zxd
    z.start()
    wait_for(lambda: z.runs("b") and z.runs("b")[0]["state"] == "failed", "the cut run")
    rec = z.runs("b")[0]
    assert "zxd stopped during the run" in rec["error"], rec
    r = z.run("b", timeout=600)
    assert r["rows_sent"] == 1000000 and r["rows_unchanged"] == 0


def test_a_waiting_run_of_a_removed_sync_fails(sync_env):
    z, dest = api_zxd(sync_env)
    agent = z.api_tokens["assistant"]["token"]
    run = call(z, "POST", "/api/syncs/crm/runs", agent).json["run"]
    wait_state(z, agent, run, {"awaiting_approval"})
    del z.syncs["crm"]
    z.api_tokens["airflow"]["syncs"] = ["other"]
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    r = call(z, "GET", f"/api/runs/{run}", agent)
    wait_for(lambda: call(z, "GET", f"/api/runs/{run}", agent).json["state"] == "failed",
             "the run failed")
    rec = call(z, "GET", f"/api/runs/{run}", agent).json
    assert "removed from the configuration" in rec["error"], rec
    assert z.zxctl("approve", run).returncode == 1
    del r
