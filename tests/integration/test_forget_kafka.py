"""
A removed Kafka pipeline's positions are dropped (issue 19), against the
real broker of tests/services/kafka (kafka_fixtures.py): removed by a
reload (SIGHUP) and added again under the same name, a pipeline without a
consumer group reads its topic again from its start (each offset twice in
its table); removed while zxd was down and added again, it resumes from
its stored positions (each offset once) and `zxctl status` says so.
"""

import json
import signal

from conftest import pid_alive, wait_for
from kafka_fixtures import check_offsets, kafka, make_kzxd  # noqa: F401

META = ["_partition", "_offset"]


def rows_of(n, start=0):
    return [json.dumps({"id": i}) for i in range(start, start + n)]


def state_events(z, event, pipeline):
    return [l for l in z.log_text().splitlines()
            if f" event={event} " in l and f" pipeline={pipeline} " in l]


def test_kafka_pipeline_readded_by_sighup_reads_its_topic_again(kafka, make_kzxd):
    topic = kafka.create_topic(partitions=2)
    kafka.produce(topic, rows_of(20))
    other = {"connection": "c", "topic": topic, "start": "new"}
    pipes = {"kf": {"connection": "c", "topic": topic, "start": "oldest", "metadata": META},
             "other": other}
    z = make_kzxd(pipes, {"c": kafka.connection("plaintext")})
    z.wait_count("kf", 20)
    ends = kafka.end_offsets(topic)
    pid = z.wait_running("kf")
    assert z.pipeline("kf").get("resumed") is None

    z.set_kafka({"other": other})
    z.signal(signal.SIGHUP)
    wait_for(lambda: not pid_alive(pid), "removed pipeline kf to exit")
    wait_for(lambda: state_events(z, "state_dropped", "kf"),
             lambda: "event=state_dropped pipeline=kf in the log\n" + z.log_tail(30))

    z.set_kafka(pipes)
    z.signal(signal.SIGHUP)
    z.wait_running("kf", not_pid=pid)
    assert z.pipeline("kf").get("resumed") is None, z.pipeline("kf")
    # from scratch: the topic read again from its start (start: oldest)
    z.wait_count("kf", 40)
    rows = z.query('SELECT "_partition", "_offset" FROM "kf"')
    assert check_offsets(rows, ends, exact=False, what="kf") == 20


def test_kafka_pipeline_readded_while_down_resumes_and_says_so(kafka, make_kzxd):
    topic = kafka.create_topic(partitions=2)
    kafka.produce(topic, rows_of(20))
    pipes = {"kd": {"connection": "c", "topic": topic, "start": "oldest", "metadata": META},
             "other": {"connection": "c", "topic": topic, "start": "new"}}
    z = make_kzxd(pipes, {"c": kafka.connection("plaintext")})
    z.wait_count("kd", 20)
    z.stop()
    z.set_kafka({"other": pipes["other"]})
    z.start()
    z.wait_running("other")
    z.stop()
    z.set_kafka(pipes)
    z.start()
    z.wait_running("kd")
    st = z.pipeline("kd")
    res = st.get("resumed")
    assert isinstance(res, dict) and res.get("positions") == 2, st
    out = z.zxctl("status", check_rc=0).stdout
    assert f"resumed from positions stored {res['stored_at']} (2)" in out, out
    kafka.produce(topic, rows_of(6, start=20))
    z.wait_count("kd", 26)
    check_offsets(z.query('SELECT "_partition", "_offset" FROM "kd"'), kafka.end_offsets(topic),
                  what="kd")
