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


def api_zxd(sync_env, http_extra="", agent_extra=None, more_syncs=None):
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False, http_extra=http_extra)
    dest = os.path.join(z.root, "dest.db")
    q = "SELECT id, email, plan FROM customers"
    z.syncs = {
        "crm": {"query": q, "mode": "upsert", "key": ["id"],
                "dest": {"connection": "crm", "table": "customers"}},
        "other": {"query": q, "mode": "replace",
                  "dest": {"connection": "crm", "table": "other"}},
    }
    z.syncs.update(more_syncs or {})
    z.connections = {"crm": {"kind": "sqlite", "path": dest}}
    z.api_tokens = {"airflow": {"token": token(), "role": "orchestrator", "syncs": ["crm"]},
                    "assistant": {"token": token(), "role": "agent",
                                  "extra": agent_extra or {}}}
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
    assert rec["preview"]["rows_inserted"] == 3 and "sample" not in rec["preview"], rec
    assert not os.path.exists(dest)
    # approval shows the preview and its sample, then runs
    p = z.zxctl("approve", run)
    assert p.returncode == 0, p.stderr
    assert "preview: would send 3 of 3 rows read" in p.stdout, p.stdout
    assert "sample of the rows to send" in p.stdout and "a@x.org" in p.stdout, p.stdout
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


def test_agents_cannot_block_a_sync(sync_env):
    """Issue 18.4: an agent asking again and again fills its own queue (16
    runs not approved, max_waiting), is told to come back later (429,
    Retry-After, a JSON error naming the limit); orchestrators and
    operators are never refused because of it, and their runs go first."""
    z, dest = api_zxd(sync_env)
    agent = z.api_tokens["assistant"]["token"]
    orch = z.api_tokens["airflow"]["token"]
    codes = [call(z, "POST", "/api/syncs/crm/runs", agent).status for _ in range(16)]
    assert codes == [202] * 16
    r = call(z, "POST", "/api/syncs/crm/runs", agent)
    assert r.status == 429 and r.headers.get("retry-after") == "10", r
    assert "assistant" in r.json["error"] and "max_waiting" in r.json["error"], r.json
    assert r.json["status"] == 429
    # on another sync too: the queue is the token's
    assert call(z, "POST", "/api/syncs/other/runs", agent).status == 429
    # the orchestrator and the operator run at once
    r = call(z, "POST", "/api/syncs/crm/runs", orch)
    assert r.status == 202, r
    rec = wait_state(z, orch, r.json["run"], {"succeeded", "failed"})
    assert rec["state"] == "succeeded" and rec["rows_sent"] == 3, rec
    p = z.zxctl("run", "crm", "--wait")
    assert p.returncode == 0, p.stdout + p.stderr
    assert sqlite_rows(dest, "SELECT count(*) FROM customers") == [(3,)]
    # the agent's runs still wait, all 16 of them
    def agents():
        return [x for x in z.runs("crm", limit=50) if "agent" in x["trigger"]]
    assert len(agents()) == 16
    assert all(x["state"] in ("awaiting_approval", "previewing", "queued") for x in agents())
    # a rejected one makes room
    wait_for(lambda: any(x["state"] == "awaiting_approval" for x in agents()),
             "a run awaiting approval")
    first = next(x for x in agents() if x["state"] == "awaiting_approval")
    assert z.zxctl("reject", first["id"]).returncode == 0
    assert call(z, "POST", "/api/syncs/crm/runs", agent).status == 202
    assert call(z, "POST", "/api/syncs/crm/runs", agent).status == 429


def test_an_agents_run_not_approved_expires(sync_env):
    """Issue 18.4: a run nobody approves ends `expired` after the token's
    approval_timeout, with its reason, in the API, `zxctl runs` and the
    feed; it leaves the token's queue and sends nothing."""
    z, dest = api_zxd(sync_env, agent_extra={"approval_timeout": "2s", "max_waiting": 1})
    agent = z.api_tokens["assistant"]["token"]
    run = call(z, "POST", "/api/syncs/crm/runs", agent).json["run"]
    rec = wait_state(z, agent, run, {"expired", "succeeded", "failed"})
    assert rec["state"] == "expired", rec
    assert "not approved within 2s" in rec["error"] and "approval_timeout" in rec["error"], rec
    assert rec["ended_at"], rec
    mine = [x for x in z.runs("crm") if x["id"] == run]
    assert mine and mine[0]["state"] == "expired", mine
    assert "expired" in z.zxctl("runs", "crm", check_rc=0).stdout
    feed = [json.loads(l) for l in z.zxctl("--json", "feed", check_rc=0).stdout.splitlines()]
    ev = [e for e in feed if e.get("id") == run and e.get("state") == "expired"]
    assert ev and "approval_timeout" in ev[0]["error"], feed
    assert "run_expired" in z.log_text()
    p = z.zxctl("approve", run)
    assert p.returncode == 1 and "expired" in p.stderr, p.stderr
    assert not os.path.exists(dest) or sqlite_rows(
        dest, "SELECT count(*) FROM sqlite_master WHERE name = 'customers'") == [(0,)]
    # its place in the queue (max_waiting: 1) is free again
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


# values of the rows (make_customers); "free" is also the duplicate key of dupes
VALUES = ["a@x.org", "b@x.org", "x.org", "free"]


def test_an_agent_sees_counts_never_values(sync_env):
    """Issue 18.3: before an operator approves, an agent's token reads how
    many rows its run would send and delete, never a value: no sample, no
    error quoting the data; nor any run but its own.  The operator sees the
    sample (`zxctl runs`, `zxctl approve`)."""
    dupes = {"dupes": {"query": "SELECT plan AS id, email FROM customers", "mode": "upsert",
                       "key": ["id"], "dest": {"connection": "crm", "table": "dupes"}}}
    z, dest = api_zxd(sync_env, more_syncs=dupes)
    agent = z.api_tokens["assistant"]["token"]
    orch = z.api_tokens["airflow"]["token"]
    run = call(z, "POST", "/api/syncs/crm/runs", agent).json["run"]
    rec = wait_state(z, agent, run, {"awaiting_approval", "failed"})
    assert rec["state"] == "awaiting_approval", rec
    assert rec["preview"]["rows_inserted"] == 3 and rec["preview"]["rows_deleted"] == 0, rec
    raw = call(z, "GET", f"/api/runs/{run}", agent).body.decode()
    assert "sample" not in raw and not [v for v in VALUES if v in raw], raw
    # the operator sees the sample of what waits for approval
    p = z.zxctl("runs", "crm", check_rc=0)
    assert f"run {run} awaits approval" in p.stdout, p.stdout
    assert "sample of the rows to send" in p.stdout and "a@x.org" in p.stdout, p.stdout
    assert "a@x.org" in json.dumps(z.runs("crm"))
    # a preview failing on the data (duplicate keys, named in the error)
    run2 = call(z, "POST", "/api/syncs/dupes/runs", agent).json["run"]
    rec2 = wait_state(z, agent, run2, {"awaiting_approval", "failed"})
    assert rec2["state"] == "failed", rec2
    raw2 = call(z, "GET", f"/api/runs/{run2}", agent).body.decode()
    assert not [v for v in VALUES if v in raw2], raw2
    assert "zxctl runs dupes" in rec2["error"], rec2
    err = [x for x in z.runs("dupes") if x["id"] == run2][0]["error"]
    assert "duplicate" in err and "free" in err, err
    # runs that are not its own: an operator's preview, an orchestrator's run
    pv = z.preview("crm")
    assert pv["sample"], pv
    for t in (agent, orch):
        r = call(z, "GET", f"/api/runs/{pv['id']}", t)
        assert r.status == 404 and not [v for v in VALUES if v in r.body.decode()], r
    orun = call(z, "POST", "/api/syncs/crm/runs", orch).json["run"]
    assert wait_state(z, orch, orun, {"succeeded", "failed"})["state"] == "succeeded"
    assert call(z, "GET", f"/api/runs/{orun}", agent).status == 404
    # approved: it runs; the API still shows counts only
    assert z.zxctl("approve", run).returncode == 0
    rec = wait_state(z, agent, run, {"succeeded", "failed"})
    assert rec["state"] == "succeeded" and rec["approved"] is True, rec
    raw = call(z, "GET", f"/api/runs/{run}", agent).body.decode()
    assert not [v for v in VALUES if v in raw], raw


def test_approving_a_run_of_a_removed_sync_fails(sync_env):
    """Issue 18.9: a reload removed the sync (or made its name a stream):
    `zxctl approve` and `reject` exit 1 saying the sync is gone; the run
    failed, nothing was sent."""
    z, dest = api_zxd(sync_env)
    agent = z.api_tokens["assistant"]["token"]
    runs = [call(z, "POST", "/api/syncs/crm/runs", agent).json["run"] for _ in range(2)]
    other = call(z, "POST", "/api/syncs/other/runs", agent).json["run"]
    for r in runs + [other]:
        wait_state(z, agent, r, {"awaiting_approval"})
    # crm becomes an http stream of the same name
    del z.syncs["crm"]
    z.api_tokens["airflow"]["syncs"] = ["other"]
    z.set_pipelines({"web": {}, "crm": {"key_ref": "literal"}})
    assert z.zxctl("reload").returncode == 0
    p = z.zxctl("approve", runs[0])
    assert p.returncode == 1, p.stdout + p.stderr
    assert "sync crm was removed from the configuration" in p.stderr, p.stderr
    p = z.zxctl("reject", runs[1])
    assert p.returncode == 1 and "sync crm was removed" in p.stderr, p.stdout + p.stderr
    rec = call(z, "GET", f"/api/runs/{runs[0]}", agent).json
    assert rec["state"] == "failed" and "removed from the configuration" in rec["error"], rec
    # a sync simply removed: approve right after the reload
    del z.syncs["other"]
    z.api_tokens["airflow"]["syncs"] = []
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    p = z.zxctl("approve", other)
    assert p.returncode == 1 and "sync other was removed" in p.stderr, p.stdout + p.stderr
    assert not os.path.exists(dest) or sqlite_rows(
        dest, "SELECT count(*) FROM sqlite_master WHERE name IN ('customers', 'other')") == [(0,)]


def test_wrong_tokens_are_limited_per_address(sync_env):
    """Issue 18.9: after api_auth_failures wrong tokens from one address
    within api_auth_window, every API request from it gets 429 with
    Retry-After until the window ends; logged once per window."""
    z, dest = api_zxd(sync_env, http_extra="api_auth_failures: 3\napi_auth_window: 1h")
    orch = z.api_tokens["airflow"]["token"]
    wrong = "tok-wrong-0123456789abcdef"
    assert [call(z, "POST", "/api/syncs/crm/runs", wrong).status for _ in range(3)] == [401] * 3
    r = call(z, "POST", "/api/syncs/crm/runs", orch)      # even the right one
    assert r.status == 429, r
    assert 0 < int(r.headers["retry-after"]) <= 3600, r.headers
    assert "too many wrong API tokens" in r.json["error"] and "127.0.0.1" in r.json["error"]
    assert call(z, "GET", "/api/runs/1", orch).status == 429
    assert [call(z, "POST", "/api/syncs/crm/runs", wrong).status for _ in range(10)] == [429] * 10
    wait_for(lambda: "event=api_auth_blocked" in z.log_text(), "the warning")
    log = z.log_text()
    assert log.count("event=api_auth_blocked") == 1, log
    assert "peer=127.0.0.1 failures=3" in log and wrong not in log and orch not in log
    # pushes are no API requests
    z.push_ok("web", [{"a": 1}])


def test_a_blocked_address_may_try_again_after_the_window(sync_env):
    z, dest = api_zxd(sync_env, http_extra="api_auth_failures: 2\napi_auth_window: 1s")
    orch = z.api_tokens["airflow"]["token"]
    wrong = "tok-wrong-0123456789abcdef"

    def blocked():
        r = call(z, "POST", "/api/syncs/crm/runs", wrong)
        assert r.status in (401, 429), r
        if r.status == 429:
            assert r.headers["retry-after"] == "1", r.headers
        return r.status == 429
    for n in (1, 2):
        wait_for(blocked, "wrong tokens blocked")
        wait_for(lambda: call(z, "POST", "/api/syncs/crm/runs", orch).status == 202,
                 "the window to end")
        wait_for(lambda: z.log_text().count("event=api_auth_blocked") == n, f"warning {n}")
    assert z.log_text().count("event=api_auth_blocked") == 2


def test_a_sync_changed_after_the_preview_is_not_approved(sync_env):
    """An agent's run was previewed with the sync's old query; a reload
    changed the sync: approving it must not send what the operator never
    saw. The run fails, saying why, and nothing is sent."""
    z, dest = api_zxd(sync_env)
    agent = z.api_tokens["assistant"]["token"]
    run = call(z, "POST", "/api/syncs/crm/runs", agent).json["run"]
    wait_state(z, agent, run, {"awaiting_approval"})
    z.syncs["crm"]["query"] = z.syncs["crm"]["query"] + " LIMIT 1"
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    p = z.zxctl("approve", run)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "was changed by a reload after this run was previewed" in p.stderr, p.stderr
    rec = call(z, "GET", f"/api/runs/{run}", agent).json
    assert rec["state"] == "failed" and "changed by a reload" in rec["error"], rec
    assert "event=run_failed sync=crm run=" in z.log_text()
    assert not os.path.exists(dest) or sqlite_rows(
        dest, "SELECT count(*) FROM sqlite_master WHERE name = 'customers'") == [(0,)]
    # a new run of the changed sync waits for its own approval as before
    again = call(z, "POST", "/api/syncs/crm/runs", agent).json["run"]
    wait_state(z, agent, again, {"awaiting_approval"})
