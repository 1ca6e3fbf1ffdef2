"""
A reverse sync of a result far larger than what the run keeps in memory:
millions of rows in mirror mode (key hashes sorted on disk in several
runs, merged with the stored hashes), the run worker's peak memory read
from /proc while it works, then a second run that finds the few changes
and the deletes.  Heavy (ZX_HEAVY_TESTS=1): about a minute per backend.
ZX_SYNC_HEAVY_ROWS sets the size (default 4,000,000).
"""

import os
import threading
import time

import pytest

from conftest import wait_for
from sync_fixtures import make_sync_env, sqlite_rows

pytestmark = pytest.mark.skipif(os.environ.get("ZX_HEAVY_TESTS") != "1",
                                reason="heavy test: set ZX_HEAVY_TESTS=1 to run it")

ROWS = int(os.environ.get("ZX_SYNC_HEAVY_ROWS", "4000000"))


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def peak_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def test_millions_of_rows_in_bounded_memory(sync_env):
    z = sync_env.zxd({}, {"alice": ["big"]}, start=False)
    dest = os.path.join(z.root, "dest.db")
    z.syncs = {"big": {"query": "SELECT id, v FROM big", "mode": "mirror", "key": ["id"],
                       "dest": {"connection": "d", "table": "big"}}}
    z.connections = {"d": {"kind": "sqlite", "path": dest}}
    z.write_config()
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE big (id {t['int']} PRIMARY KEY, v {t['text']})")
    if z.workspace == "postgres":
        z.ws_exec(f"INSERT INTO big SELECT g, 'value-' || g FROM generate_series(1, {ROWS}) g")
    else:
        z.ws_exec("WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < "
                  f"{ROWS}) INSERT INTO big SELECT g, 'value-' || g FROM s")
    z.start()
    peak = [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            e = z.pipeline("big")
            if e.get("pid"):
                peak[0] = max(peak[0], peak_kib(e["pid"]))
            time.sleep(0.2)
    w = threading.Thread(target=watch, daemon=True)
    w.start()
    try:
        t0 = time.time()
        r = z.run("big", timeout=1800)
        took = time.time() - t0
    finally:
        stop.set()
        w.join()
    assert r["rows_sent"] == ROWS and r["rows_inserted"] == ROWS
    print(f"\n{ROWS} rows mirrored in {took:.1f} s; the run worker's peak RSS {peak[0] // 1024} MiB")
    # the key sorter holds 64 MiB, batches a few more: far less than the
    # result (the keys alone are ~30 bytes x ROWS)
    assert 0 < peak[0] < 400 * 1024, f"peak RSS {peak[0]} KiB"
    assert sqlite_rows(dest, "SELECT count(*) FROM big") == [(ROWS,)]

    z.ws_exec("DELETE FROM big WHERE id % 100000 = 7", "UPDATE big SET v = 'changed' WHERE id % 250000 = 3")
    r = z.run("big", timeout=1800)
    deleted = ROWS // 100000 + (1 if ROWS % 100000 >= 7 else 0)
    assert r["rows_deleted"] == deleted, r
    assert r["rows_updated"] == ROWS // 250000 + (1 if ROWS % 250000 >= 3 else 0), r
    assert sqlite_rows(dest, "SELECT count(*) FROM big") == [(ROWS - deleted,)]
    assert sqlite_rows(dest, "SELECT count(*) FROM big WHERE v = 'changed'") == [(r["rows_updated"],)]
