"""
Exactly once across hosts: three zxd (three data directories) in one Kafka
consumer group write one shared Postgres workspace
(`workspace.postgres.shared: true`) while, at random, a host is SIGKILLed
(its whole process group) and started again, SIGSTOPped for longer than
the group's session timeout and continued, or stopped and started.  A
partition then moves from one host to another while the first still has
frames of it in flight; the writer's compare-and-set of each partition's
position (workers/writer/writer_fence.c, workers/sources/kafka/
kafka_fence.c) skips those frames, and the host that was fenced reads on
from the workspace's position.

At the end (all three up, the group's offsets at the end of every
partition): exactly N rows, no id twice, none missing, no frame refused as
a duplicate nor accepted past a gap, and the logs show that frames were
fenced (without the fence the same run writes duplicates: see the
README's section on the shared workspace).

N is 60,000 (about two minutes here); ZX_SHARED_KAFKA_N=1000000 runs the
long version by hand.  The chaos is drawn from a seed, printed (run pytest
with -s); ZX_SHARED_KAFKA_SEED replays one.
"""

import os
import random
import re
import signal
import threading
import time

import pytest

from conftest import uid, wait_for
from kafka_fixtures import kafka, make_kzxd, settle  # noqa: F401
from test_kafka_crash import produce_paced

pytestmark = pytest.mark.postgres_only

N = int(os.environ.get("ZX_SHARED_KAFKA_N", "60000"))
PARTS = 12
SESSION_TIMEOUT_S = 10      # kafka.c sets session.timeout.ms 10000


def log_count(z, pattern):
    return len(re.findall(pattern, z.log_text()))


def shared_hosts(make_kzxd, pipes, conns):
    a = make_kzxd(pipes, conns, workspace="postgres", start=False)
    a.pg_shared = True
    a.write_config()
    a.start()
    zs = [a]
    for _ in range(2):
        z = make_kzxd(pipes, conns, workspace="postgres", start=False)
        z.use_workspace_of(a)
        z.pg_shared = True
        z.write_config()
        z.start()
        zs.append(z)
    return zs


def chaos_step(rng, zs, events, what=None):
    """One random misfortune for one random host, and its recovery.
    "zombie": its writer is stopped first, so that its worker fills the
    ring with frames, then the whole host for longer than the session
    timeout: the other hosts take its partitions over and write them, and
    its writer, continued, applies frames of ranges written since (the
    case the fence is for, made sure to happen once per run)."""
    i = rng.randrange(len(zs))
    z = zs[i]
    what = what or rng.choice(["kill", "sigstop", "restart", "zombie"])
    t0 = time.monotonic()
    if what == "zombie":
        wpid = z.wait_running("writer", deadline=60)
        os.kill(wpid, signal.SIGSTOP)
        settle(rng.uniform(1.5, 3))
        pg = os.getpgid(z.pid)
        os.killpg(pg, signal.SIGSTOP)
        settle(SESSION_TIMEOUT_S + rng.uniform(2, 5))
        os.killpg(pg, signal.SIGCONT)     # the writer too
    elif what == "kill":
        z.kill_all()                      # SIGKILL to the whole process group
        settle(rng.uniform(0.5, 3))
        z.start()
    elif what == "sigstop":
        pg = os.getpgid(z.pid)
        os.killpg(pg, signal.SIGSTOP)     # its session expires meanwhile
        settle(SESSION_TIMEOUT_S + rng.uniform(2, 5))
        os.killpg(pg, signal.SIGCONT)
    else:
        z.stop()
        settle(rng.uniform(0.5, 2))
        z.start()
    events.append((what, i, round(time.monotonic() - t0, 1)))


def diagnose(kafka, topic, group, zs, seed, events):
    """What a loss needs to be read: the chaos, the offsets missing per
    partition, the workspace's positions, the group's offsets, and each
    host's lines about partitions, fences and gaps."""
    a = zs[0]
    end = kafka.end_offsets(topic)
    out = [f"seed {seed}, events {events}", f"end offsets {end}",
           f"group offsets {kafka.committed(group, topic)}",
           "positions in the workspace: " + repr(a.query(
               'SELECT part, get_byte(value, 0) + 256 * get_byte(value, 1) + 65536 * '
               'get_byte(value, 2), committed_at FROM "_zx_positions" ORDER BY 1'))]
    have = {}
    for part, off in a.query('SELECT "_partition", "_offset" FROM "ev"'):
        have.setdefault(int(part), set()).add(int(off))
    for part in sorted(end):
        gone = sorted(set(range(end[part])) - have.get(part, set()))
        if gone:
            runs, lo = [], gone[0]
            for x, y in zip(gone, gone[1:] + [None]):
                if y != x + 1:
                    runs.append(f"{lo}..{x}")
                    lo = y
            out.append(f"partition {part}: {len(gone)} offsets missing: {', '.join(runs[:10])}")
    pat = re.compile(r"event=(kafka_(start|assigned|revoked|fenced|offset_gap|resume|paused|"
                     r"resumed|ownership|revoke_uncommitted|fence|partition_idle)|frame_fenced|fence_|start |"
                     r"fatal|commit_failed)")
    for k, z in enumerate(zs):
        lines = [ln for ln in z.log_text().splitlines() if pat.search(ln)]
        out.append(f"---- host {k}: {len(lines)} lines about partitions ----")
        out.extend(lines[-150:])
    return "\n".join(out)


def test_three_hosts_one_group_write_every_message_exactly_once(kafka, make_kzxd):
    seed = int(os.environ.get("ZX_SHARED_KAFKA_SEED", str(random.randrange(1 << 30))))
    print(f"\n[shared kafka] seed {seed} (ZX_SHARED_KAFKA_SEED={seed} replays it), N={N}")
    rng = random.Random(seed)
    topic = kafka.create_topic(partitions=PARTS)
    group = f"g-{uid()[:10]}"
    pipes = {"ev": {"connection": "c", "topic": topic, "group": group,
                    "metadata": ["_partition", "_offset"]}}
    zs = shared_hosts(make_kzxd, pipes, {"c": kafka.connection("plaintext")})
    a = zs[0]

    errors = []
    chunks = max(20, N // 1000)
    th = threading.Thread(target=produce_paced,
                          args=(kafka, topic, N, PARTS, chunks, 0.5, errors), daemon=True)
    th.start()
    wait_for(lambda: a.table_exists("ev") and a.count("ev") >= min(2000, N // 10),
             lambda: "rows flowing\n" + a.log_tail(30), deadline=120)
    events = []
    chaos_step(rng, zs, events, "zombie")
    while th.is_alive() or len(events) < 4:
        chaos_step(rng, zs, events)
        settle(rng.uniform(1, 3))
    th.join(300)
    assert not th.is_alive() and not errors, errors

    def stats():
        return a.query('SELECT count(*), count(DISTINCT id), min(id), max(id) FROM "ev"')[0]
    wait_for(lambda: stats()[1] >= N, lambda: f"{N} distinct ids (have {stats()})\n"
             + diagnose(kafka, topic, group, zs, seed, events), deadline=240)
    end = kafka.end_offsets(topic)
    wait_for(lambda: kafka.committed(group, topic) == end,
             lambda: f"group offsets {kafka.committed(group, topic)} != end {end}",
             deadline=120)
    settle(2)   # anything still in flight would show now
    rows, distinct, lo, hi = stats()
    fenced = sum(log_count(z, r"event=frame_fenced ") for z in zs)
    seeks = sum(log_count(z, r"event=kafka_fenced ") for z in zs)
    dups = sum(log_count(z, r"event=fence_duplicate ") for z in zs)
    gaps = sum(log_count(z, r"event=fence_gap ") for z in zs)
    skips = sum(log_count(z, r"event=kafka_offset_gap ") for z in zs)
    print(f"[shared kafka] events {events}: rows {rows}, distinct {distinct}, frames fenced "
          f"{fenced}, partitions read again {seeks}, refused duplicates {dups}, gaps {gaps}, "
          f"librdkafka skips read again {skips}")
    if rows != N or distinct != N:
        bad = a.query('SELECT "_partition", min("_offset"), max("_offset"), count(*) FROM '
                      '(SELECT "_partition", "_offset" FROM "ev" GROUP BY 1, 2 HAVING '
                      'count(*) > 1) d GROUP BY 1 ORDER BY 1')
        print(f"[shared kafka] offsets twice, per partition (min, max, count): {bad}")
    assert (distinct, lo, hi) == (N, 0, N - 1), "ids lost"
    assert rows == N, f"{rows - N} duplicate rows"
    assert dups == 0 and gaps == 0, (dups, gaps)
    # the run moved partitions with frames in flight, and the fence caught them
    assert fenced > 0, (fenced, seeks)
    for z in zs:
        assert "event=fatal" not in z.log_text()
        assert z.pipeline("ev")["state"] == "running"
    for z in zs:
        z.stop()
