"""
Shared memory held as it is used: a ring's consumer gives the pages it
releases back to the kernel (common/ring.h zx_ring_give_back), so a
pipeline whose writer keeps up holds about what is in flight, not every
page of its ring once the ring has gone round.  Measured as the RssShmem
of the writer and of the stream worker (/proc/PID/status), after pushes
that take a ring of 8 MiB round five times at a few MB/s; the rows all
arrive.  SQLite only: the rings do not depend on the workspace.
"""

import json
import time

import pytest

from conftest import descendants_of, proc_title, wait_for

pytestmark = pytest.mark.sqlite_only

MiB = 1 << 20


def rss_shmem_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssShmem:"):
                return int(line.split()[1])
    return 0


def process(z, title_part):
    for pid in descendants_of(z.proc.pid):
        t = proc_title(pid) or ""
        if title_part in t:
            return pid
    raise AssertionError(f"no process {title_part!r} under zxd {z.proc.pid}")


def test_rings_hold_what_is_in_flight_not_every_page_they_used(make_zxd):
    z = make_zxd({"ev": {}}, server_extra="ring_size: 8MiB")
    writer, worker = process(z, "zxd: writer"), process(z, "stream ev")
    rows = [{"n": i, "s": "x" * 400} for i in range(1000)]          # ~420 KB a push
    pushes = 5 * 8 * MiB // len(json.dumps(rows)) + 1
    for k in range(pushes):
        for r in rows:
            r["k"] = k
        z.push("ev", rows)
        time.sleep(0.1)                                              # ~4 MB/s
    wait_for(lambda: z.count("ev") == pushes * len(rows), "every row", deadline=120)
    time.sleep(0.5)
    held = {name: rss_shmem_kib(pid) for name, pid in (("writer", writer), ("worker", worker))}
    # 8 MiB went round five times: without giving pages back both would
    # hold the whole ring (and the worker its request ring too)
    assert held["writer"] < 3 * 1024 and held["worker"] < 3 * 1024, held
