"""The seed's flow, end to end: PostgreSQL orders → a mirror table in the
workspace → three reverse syncs `on: change`: Iceberg (the lake, through
the REST catalog), OpenSearch documents (search), Redis key invalidation
(cache).  The mirror is fed by either leg, one test each:

- zx-cdc: zx's own CDC (`source: postgres`);
- debezium: a real Debezium Server (tests/services/debezium, pgoutput) into
  its Kafka sink, the real broker (tests/services/kafka), and a zx stream
  with `source: kafka` and `format: debezium` (a key move is a delete, a
  tombstone and a create there).
  Under a workload of inserts, updates, key moves and
deletes, with the syncs' workers SIGKILLed again and again, all three
converge to the source: the Iceberg table read by pyiceberg, the index by
opensearch-py, Redis by redis-py.

Redis is a cache being invalidated: before the workload every order's key
holds a stale copy; afterwards the key of each order the workload touched
(changed, moved, deleted) is gone and the others still hold their copy.

No timing assertion: the workload runs for a fixed number of operations and
the test waits (with a deadline) for the three targets to equal the source.
"""
import os
import signal
import threading

import pytest

from conftest import DEADLINE, pid_alive, uid, wait_for
from debezium_fixtures import dbz_start, dbz_stop
from kafka_fixtures import kafka  # noqa: F401  (the debezium leg's broker)
from orders_workload import COLS, MirrorZxd, source_rows, workload
from sync_fixtures import make_sync_env

opensearchpy = pytest.importorskip("opensearchpy")
redis_py = pytest.importorskip("redis")
pytest.importorskip("pyiceberg")

pytestmark = pytest.mark.skipif(not os.environ.get("ZX_HEAVY_TESTS"),
                                reason="heavy: set ZX_HEAVY_TESTS=1 (test.sh does)")

N0 = 300               # orders before the workload
OPS = 900              # the workload's operations


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


# Each leg readies its source of changes for database db (PostgreSQL's
# orders, filled) and returns the YAML of the pipeline mirroring it into
# the workspace table orders, adding the connections it needs; teardown
# through request.addfinalizer (before the database is dropped).

def zx_cdc_leg(request, pg, db, connections):
    """zx's own CDC (its copy, then its slot)."""
    connections["src"] = request.getfixturevalue("sync_env").pg_conn(db)
    return ("  cdc:\n    direction: stream\n    source: postgres\n    connection: src\n"
            "    tables: [orders]\n")


def debezium_leg(request, pg, db, connections):
    """Debezium Server (its snapshot, then pgoutput) → its Kafka sink →
    the broker → a zx Kafka stream, `format: debezium`."""
    broker = request.getfixturevalue("kafka")
    name = f"fan{uid()[:8]}"
    topic = f"{name}.public.orders"          # made by the script's start
    request.addfinalizer(lambda: broker.delete_topic(topic))
    request.addfinalizer(lambda: dbz_stop(name))      # runs first
    dbz_start(name, {"DBZ_SOURCE": "postgres", "DBZ_DB_PORT": str(pg.port), "DBZ_DB_NAME": db,
                     "DBZ_TABLES": "public.orders", "DBZ_TOPIC_PREFIX": name,
                     "DBZ_SINK": "kafka", "DBZ_KAFKA_BOOTSTRAP": broker.addr("plaintext")})
    connections["k"] = {"kind": "kafka", "extra": {"brokers": [broker.addr("plaintext")],
                                                   "security": "plaintext"}}
    return ("  dbz:\n    direction: stream\n    source: kafka\n    connection: k\n"
            f"    topic: {topic}\n    table: orders\n    format: debezium\n")


LEGS = {"zx-cdc": zx_cdc_leg, "debezium": debezium_leg}


@pytest.mark.parametrize("leg", list(LEGS))
def test_mirror_fans_out_to_lake_search_and_cache(leg, request, sync_env, pg, iceberg_rest,
                                                   opensearch, redis_service):
    from pyiceberg.catalog.rest import RestCatalog
    db = sync_env.pg_db()
    pg.execute(db, "CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, "
                   "cents bigint NOT NULL, status text NOT NULL)")
    pg.execute(db, f"INSERT INTO orders SELECT g, 'c' || (g % 50), g * 100, 'new' "
                   f"FROM generate_series(1, {N0}) g")

    ns = "fan_" + uid()[:8].lower()
    index = "fan-" + uid()[:8].lower()
    prefix = "fan:" + uid()[:8]
    r = redis_py.Redis(host=redis_service["ADDR"].rsplit(":", 1)[0],
                       port=int(redis_service["ADDR"].rsplit(":", 1)[1]),
                       password=redis_service["PASSWORD"])
    wh = iceberg_rest["ICEBERG_WAREHOUSE"]
    wh = wh[len("file://"):] if wh.startswith("file://") else wh

    z = sync_env.zxd({}, {"alice": ["orders"]}, start=False, cls=MirrorZxd)
    z.server_extra = f'file_roots: ["{wh}"]'
    z.env["ZX_FAN_REDIS_PW"] = redis_service["PASSWORD"]
    z.connections = {
        "cat": {"kind": "iceberg_rest", "extra": {"uri": iceberg_rest["ICEBERG_REST_URI"]}},
        "search": {"kind": "opensearch", "extra": {"url": opensearch["URL"]}},
        "cache": {"kind": "redis", "extra": {"address": redis_service["ADDR"],
                                             "password": "${env:ZX_FAN_REDIS_PW}"}},
    }
    q = "SELECT id, customer, cents, status FROM orders"
    on = {"on": "change", "min_interval": "500ms"}
    z.syncs = {
        "lake": {"author": "alice", "query": q, "mode": "mirror", "key": ["id"],
                 "dest": {"iceberg": {"catalog": "cat", "namespace": ns, "table": "orders"}},
                 "extra": on},
        "search": {"author": "alice", "query": q, "mode": "mirror", "key": ["id"],
                   "dest": {"opensearch": {"connection": "search", "index": index}},
                   "extra": on},
        "cache": {"author": "alice", "query": q, "mode": "mirror", "key": ["id"],
                  "dest": {"redis": {"connection": "cache", "key": prefix + ":{id}",
                                     "action": "invalidate"}},
                  "extra": on},
    }
    z.mirror = LEGS[leg](request, pg, db, z.connections)
    z.write_config()
    z.start()

    cat = RestCatalog("zxfan", uri=iceberg_rest["ICEBERG_REST_URI"])
    osc = opensearchpy.OpenSearch(opensearch["URL"])

    def lake_rows():
        try:
            t = cat.load_table(f"{ns}.orders").scan().to_arrow()
        except Exception:
            return None
        return sorted(zip(*[t.column(c).to_pylist() for c in COLS]))

    def search_rows():
        try:
            osc.indices.refresh(index=index)
            hits = osc.search(index=index, body={"size": 10000, "query": {"match_all": {}}})
        except Exception:
            return None
        return sorted(tuple(h["_source"][c] for c in COLS) for h in hits["hits"]["hits"])

    def settled(want):
        return lake_rows() == want and search_rows() == want

    initial = source_rows(pg, db)
    wait_for(lambda: settled(initial), "the initial copy in the lake and the index",
             deadline=DEADLINE * 6)
    wait_for(lambda: all(x["state"] in ("succeeded", "failed") for x in z.runs("cache")),
             "the cache's first run to end", deadline=DEADLINE * 2)
    # the cache holds a stale copy of every order
    for row in initial:
        r.set(f"{prefix}:{row[0]}", "stale")

    touched = set()
    stop = threading.Event()
    kills = []

    def killer():
        # a run takes tens of ms: look often, kill what runs
        while not stop.is_set():
            try:
                st = z.status()
            except Exception:
                continue
            for name in ("lake", "search", "cache"):
                e = z.entry(name, st)
                pid = e.get("pid") if isinstance(e, dict) else None
                if pid and pid > 0 and pid_alive(pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                        kills.append(name)
                    except ProcessLookupError:
                        pass
            stop.wait(0.02)

    k = threading.Thread(target=killer, daemon=True)
    k.start()
    try:
        workload(pg, db, 7, touched, OPS)
    finally:
        stop.set()
        k.join(timeout=30)

    want = source_rows(pg, db)
    def why():
        lr, sr = lake_rows(), search_rows()
        return (f"the lake and the index to equal the source ({len(want)} rows; lake "
                f"{None if lr is None else len(lr)}, differing {lr != want}; index "
                f"{None if sr is None else len(sr)}, differing {sr != want}); last runs: " +
                "; ".join(f"{n}: " + ", ".join(f"{x['state']} {x['trigger']} "
                                               f"{x.get('started_at')} {x.get('error')}"
                                               for x in z.runs(n, limit=3))
                          for n in ("lake", "search")) + "\n" + z.log_tail(40))

    wait_for(lambda: settled(want), why, deadline=DEADLINE * 4)
    # the mirror they read equals the source too, no event refused
    assert sorted(z.query("SELECT id, customer, cents, status FROM orders")) == want
    assert not z.table_exists("orders__rejects") or z.count("orders__rejects") == 0

    def cache_ok():
        for row in initial:
            v = r.get(f"{prefix}:{row[0]}")
            if row[0] in touched and v is not None:
                return False
            if row[0] not in touched and v != b"stale":
                return False
        return True

    wait_for(cache_ok, "every touched order's cache key gone, the others kept",
             deadline=DEADLINE * 6)
    assert len(touched) > 100
    # the syncs' workers were killed, and runs after that delivered
    assert kills, "no sync worker was running when looked at"
    for name in ("lake", "search", "cache"):
        runs = [x for x in z.runs(name, limit=200) if x["trigger"] == "change"]
        assert any(x["state"] == "succeeded" for x in runs), (name, runs[:3])
        lat = [x["change_latency_ms"] for x in runs if x.get("change_latency_ms") is not None]
        assert lat and all(v >= 0 for v in lat), (name, runs[:3])
