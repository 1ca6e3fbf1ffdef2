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
"""

import json
import signal

from conftest import pid_alive, uid, wait_for


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
