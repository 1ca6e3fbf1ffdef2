"""
bench_shared_kafka.py — rows/s of one Kafka pipeline spread over one, two
and three zxd sharing one Postgres workspace (`workspace.postgres.shared:
true`, one consumer group), against the same Postgres.  A benchmark: run by
hand, never in CI (pytest collects only test_*.py from this folder unless
named), figures printed, nothing timed against a threshold:

    ZX_WORKSPACES=postgres ZX_BUILD_DIR=$PWD/build \\
        python3 -m pytest tests/integration/bench_shared_kafka.py -s -q -p no:cacheprovider

ZX_BENCH_N messages (default 1,000,000, ~200 bytes of JSON each) are
loaded first into one topic of 12 partitions; then, for k = 1, 2, 3, k zxd
(each with its own data directory, one new shared workspace database per
k, one new group) are started together and the clock runs from their start
until the table holds every message; rows/s are counted from the first
message read to the last (`_ingested_at`), leaving out the group's join
(the broker's initial rebalance delay).  Printed per k: each zxd's
share of the rows, and CPU seconds of the zxd processes and of Postgres
(from /proc), which says where it flattens.
"""

import glob
import json
import os
import time

import pytest

from conftest import descendants_of, uid, wait_for
from kafka_fixtures import kafka, make_kzxd  # noqa: F401

pytestmark = pytest.mark.postgres_only

N = int(os.environ.get("ZX_BENCH_N", "1000000"))
PARTS = 12
HOSTS = [int(x) for x in os.environ.get("ZX_BENCH_HOSTS", "1 2 3").split()]


def cpu_seconds(pids):
    """utime + stime of every process in pids and their threads, seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total / tick


def postgres_pids():
    """The test cluster's postmaster (tests/services/postgres, in
    $ZX_SERVICES_DIR) and its backends: not any other Postgres running."""
    d = os.environ.get("ZX_SERVICES_DIR", "/tmp/zx-services")
    pids = []
    for pidfile in glob.glob(os.path.join(d, "postgres-*", "postmaster.pid")):
        with open(pidfile) as f:
            pm = int(f.readline())
        pids += [pm] + descendants_of(pm)
    return pids


def test_rows_per_second_with_one_two_three_zxd(kafka, make_kzxd):
    topic = kafka.create_topic(partitions=PARTS)
    t0 = time.monotonic()
    values = (json.dumps({"id": i, "user": f"user-{i % 10000:06d}@example.org",
                          "amount": i * 0.5, "status": ("new", "paid", "shipped")[i % 3],
                          "ts": "2026-12-04T12:00:00.000000Z", "note": "x" * 60})
              for i in range(N))
    kafka.produce(topic, values)
    print(f"\n[bench shared kafka] {N} messages loaded into {PARTS} partitions in "
          f"{time.monotonic() - t0:.1f} s")
    results = []
    for k in HOSTS:
        group = f"g-{uid()[:10]}"
        pipes = {"ev": {"connection": "c", "topic": topic, "group": group,
                        "start": "oldest", "metadata": ["_ingested_at"]}}
        conns = {"c": kafka.connection("plaintext")}
        zs = []
        for i in range(k):
            z = make_kzxd(pipes, conns, workspace="postgres", start=False)
            if i:
                z.use_workspace_of(zs[0])
            z.pg_shared = True
            z.write_config()
            zs.append(z)
        a = zs[0]
        pg_pids = postgres_pids()
        pg0 = cpu_seconds(pg_pids)
        t0 = time.monotonic()
        for z in zs:
            z.start(wait=False)
        for z in zs:
            z.wait_healthy()
        wait_for(lambda: a.table_exists("ev") and a.count("ev") >= N,
                 lambda: f"{N} rows\n" + "\n".join(z.log_tail(15) for z in zs),
                 deadline=1800, interval=0.5)
        secs = time.monotonic() - t0
        zx_cpu = sum(cpu_seconds([z.pid] + descendants_of(z.pid)) for z in zs)
        pg_cpu = cpu_seconds(postgres_pids()) - pg0  # backends started since count whole
        shares = [z.pipeline("ev").get("rows", 0) for z in zs]
        rows = a.count("ev")
        # from the first message read to the last (the group's join, a few
        # seconds with the broker's initial rebalance delay, left out)
        span = float(a.query('SELECT extract(epoch FROM max("_ingested_at") - '
                             'min("_ingested_at")) FROM "ev"')[0][0])
        results.append((k, secs, span, rows, shares, zx_cpu, pg_cpu))
        print(f"[bench shared kafka] {k} zxd: {rows} rows in {secs:.1f} s from the start, "
              f"{span:.2f} s from the first message read to the last = {rows / span:,.0f} "
              f"rows/s; rows per zxd {shares}; CPU s: zxd {zx_cpu:.1f}, postgres {pg_cpu:.1f}")
        for z in zs:
            z.stop()
        assert rows == N, (k, rows)
    print("| zxd | s from start | s first to last read | rows/s | rows per zxd | zxd CPU s "
          "| postgres CPU s |")
    print("|---|---|---|---|---|---|---|")
    for k, secs, span, rows, shares, zc, pc in results:
        print(f"| {k} | {secs:.1f} | {span:.2f} | {rows / span:,.0f} | "
              f"{', '.join(map(str, shares))} | {zc:.1f} | {pc:.1f} |")
