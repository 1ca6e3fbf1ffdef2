"""
A removed pipeline's state is dropped (issue 19): a pipeline removed by a
reload, once its worker has stopped and its last frames are applied, loses
its positions and state in the store and the workspace (the writer does it,
asked by the supervisor: proto/chan.h FORGET), so that a pipeline added
again under the same name starts from scratch.  Where a pipeline does start
from state stored before (removed while zxd was down, then added again),
`zxctl status` says so.

http pipelines show it without any upstream: their idempotency keys and row
counter are state of the store.  A push replayed with the same
Idempotency-Key to the re-added pipeline is new data (its rows are written
again), and the row counter starts at zero.

The changes a removed Postgres CDC pipeline had parked (its mirror table
refused by the workspace: _zx_parked) go with its state, on each workspace
backend (ZX_WORKSPACES): added again under the same name, once the cause
is gone, it replays none of them.
"""

import json
import signal

import pytest

from conftest import pid_alive, uid, wait_for
from pg_cdc_fixtures import make_cdc_env, superuser
from test_table_blocking import block_table, unblock_table, wait_same


def log_lines(z, event, pipeline):
    return [l for l in z.log_text().splitlines()
            if f" event={event} " in l and f" pipeline={pipeline} " in l]


def rows(tag, n):
    return [{"tag": tag, "n": i} for i in range(n)]


def test_removed_then_readded_by_sighup_starts_from_scratch(make_zxd):
    z = make_zxd({"a": {}, "b": {}}, start=False)
    z.prepare_keys("b")
    z.start()
    pb = z.wait_running("b")
    tag, idem = uid(), "idem-" + uid()
    z.push_ok("b", rows(tag, 3), idem=idem, wait_commit=True)
    assert z.count("b", "tag = ?", (tag,)) == 3
    wait_for(lambda: z.pipeline("b").get("rows") == 3, "b's row counter at 3")
    # a pipeline with state, started with it at zxd's start: none stored yet
    assert z.pipeline("b").get("resumed") is None, z.pipeline("b")

    z.set_pipelines({"a": {}})
    z.signal(signal.SIGHUP)
    wait_for(lambda: not pid_alive(pb), "removed pipeline b to exit")
    line = wait_for(lambda: log_lines(z, "state_dropped", "b"),
                    lambda: "event=state_dropped pipeline=b in the log\n" + z.log_tail(30))
    assert "added again, it starts from scratch" in line[0], line
    feed = [json.loads(l) for l in z.zxctl("--json", "feed", check_rc=0).stdout.splitlines()]
    assert [e for e in feed if e.get("event") == "state_dropped" and e.get("pipeline") == "b"], \
        feed

    z.set_pipelines({"a": {}, "b": {}})
    z.signal(signal.SIGHUP)
    z.wait_running("b", not_pid=pb)
    st = z.pipeline("b")
    assert st.get("resumed") is None, st
    # the same Idempotency-Key is new to the new pipeline: its rows are
    # written again (the old pipeline's key would have answered from the
    # store and written nothing)
    z.push_ok("b", rows(tag, 3), idem=idem, wait_commit=True)
    assert z.count("b", "tag = ?", (tag,)) == 6
    # its counter starts from zero, not from the old pipeline's 3
    wait_for(lambda: z.pipeline("b").get("rows") == 3,
             lambda: f"b's row counter at 3: {z.pipeline('b')}")
    assert not log_lines(z, "state_drop_failed", "b"), z.log_tail(30)
    # the pipeline that stayed kept its state
    assert not log_lines(z, "state_dropped", "a"), z.log_tail(30)


def test_readded_while_zxd_was_down_says_it_resumed(make_zxd):
    z = make_zxd({"a": {}, "b": {}})
    z.wait_running("b")
    tag, idem = uid(), "idem-" + uid()
    z.push_ok("b", rows(tag, 2), idem=idem, wait_commit=True)
    z.stop()
    # removed while zxd was down: zxd never saw the removal
    z.set_pipelines({"a": {}})
    z.start()
    z.wait_running("a")
    z.stop()
    z.set_pipelines({"a": {}, "b": {}})
    z.start()
    z.wait_running("b")
    st = z.pipeline("b")
    res = st.get("resumed")
    assert isinstance(res, dict) and res.get("stored_at", "").startswith("20"), st
    assert res.get("positions") == 0, st
    out = z.zxctl("status", check_rc=0).stdout
    assert f"resumed from state stored {res['stored_at']}" in out, out
    # and it did resume: the old key still answers from the store
    z.push_ok("b", rows(tag, 2), idem=idem, wait_commit=True)
    assert z.count("b", "tag = ?", (tag,)) == 2


@pytest.fixture
def mirror_env(pg, workspace):
    yield from make_cdc_env(pg, workspace)


def test_removed_pipeline_drops_its_parked_changes(pg, mirror_env):
    db = mirror_env.db()
    pg.execute(db, "CREATE TABLE good (id int PRIMARY KEY, v text);"
                   "CREATE TABLE bad (id int PRIMARY KEY, v text);"
                   "INSERT INTO good VALUES (1, 'g1');"
                   "INSERT INTO bad VALUES (1, 'b1'), (2, 'b2');")
    spec = {"connection": "db", "tables": ["good", "bad"], "extra": {"history": "true"}}
    z = mirror_env.zxd({"fp": dict(spec)}, {"db": superuser(db)}, start=False)
    block_table(z, "bad")
    z.start()
    wait_same(z, pg, db, "good")
    pg.execute(db, "INSERT INTO bad VALUES (3, 'b3'); UPDATE bad SET v = 'b1x' WHERE id = 1;"
                   "INSERT INTO good VALUES (2, 'g2');")
    wait_same(z, pg, db, "good")

    def parked():
        return z.query("SELECT count(*) FROM _zx_parked WHERE pipeline = ?", ("fp",))[0][0]
    wait_for(lambda: parked() > 0, lambda: f"fp's changes of bad parked: {z.pipeline('fp')}")

    # removed: its parked changes go with its positions
    pid = z.pids()["fp"]
    del z.cdc["fp"]
    z.write_config()
    z.signal(signal.SIGHUP)
    wait_for(lambda: not pid_alive(pid), "removed pipeline fp to exit")
    wait_for(lambda: log_lines(z, "state_dropped", "fp"),
             lambda: "event=state_dropped pipeline=fp in the log\n" + z.log_tail(30))
    assert parked() == 0
    # its slot too (a reload's retire): the pipeline added again makes its own
    wait_for(lambda: log_lines(z, "slot_dropped", "fp"),
             lambda: "event=slot_dropped pipeline=fp in the log\n" + z.log_tail(30))

    # added again, the cause gone: a new copy of the source, none of the old
    # pipeline's parked changes (row 3 is deleted upstream meanwhile)
    pg.execute(db, "DELETE FROM bad WHERE id = 3")
    unblock_table(z, "bad")
    z.cdc["fp"] = dict(spec)
    z.write_config()
    z.signal(signal.SIGHUP)
    z.wait_running("fp", not_pid=pid)
    wait_same(z, pg, db, "bad")
    wait_same(z, pg, db, "good")
    pg.execute(db, "INSERT INTO bad VALUES (4, 'b4')")     # its history begins
    wait_same(z, pg, db, "bad")
    hist = [tuple(r) for r in z.query('SELECT _op, id, v FROM "bad__changes" ORDER BY _lsn')]
    assert ("insert", 3, "b3") not in hist and ("insert", 4, "b4") in hist, hist
    assert parked() == 0
    assert not log_lines(z, "state_drop_failed", "fp"), z.log_tail(30)
