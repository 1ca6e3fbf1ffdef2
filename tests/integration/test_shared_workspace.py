"""
Several zxd sharing one Postgres workspace (issue 24, first part:
`workspace.postgres.shared: true`).  Each zxd has its own data directory
and instance id; they write the same tables, each keeps its own
checkpoints ("<instance>/<pipeline>"), and a table's schema changes are
made by one at a time under a lock in the workspace after reading what
the others made, so that two zxd adding columns to one table at the same
moment both go on, with every row and no reject.  A zxd without `shared`
is refused while shared ones write the schema, and the other way round.
"""

import subprocess
import threading

import pytest

from conftest import ZXD, wait_for

pytestmark = pytest.mark.postgres_only


def shared_pair(make_zxd, pipelines=None):
    pipelines = pipelines or {"clicks": {}}
    a = make_zxd(pipelines, workspace="postgres", start=False)
    a.pg_shared = True
    a.write_config()
    a.start()
    b = make_zxd(pipelines, workspace="postgres", start=False)
    b.use_workspace_of(a)
    b.pg_shared = True
    b.write_config()
    b.start()
    return a, b


def instance_of(z):
    with open(f"{z.data_dir}/instance-id") as f:
        return f.read().strip()


def test_two_zxd_write_one_table_and_add_columns_at_the_same_time(make_zxd):
    a, b = shared_pair(make_zxd)
    ia, ib = instance_of(a), instance_of(b)
    assert len(ia) == 16 and ia != ib
    errors = []
    meet = threading.Barrier(2, timeout=60)

    def pushes(z, tag, base):
        # each round brings columns neither zxd has made yet, both at once
        for r in range(12):
            meet.wait()
            rows = [{"id": base + r * 10 + k, "who": tag, f"c{r}": k, f"{tag}_{r}": "x"}
                    for k in range(10)]
            resp = z.push("clicks", rows, wait_commit=True, timeout=60)
            if resp.status != 202 or not resp.json.get("committed"):
                errors.append((tag, r, resp.status, resp.body[:300]))
    ta = threading.Thread(target=pushes, args=(a, "a", 0))
    tb = threading.Thread(target=pushes, args=(b, "b", 100000))
    ta.start(), tb.start()
    ta.join(120), tb.join(120)
    assert not errors, errors
    assert a.count("clicks") == 240
    assert a.query("SELECT count(*) FROM clicks WHERE who = 'a'") == [(120,)]
    assert a.query("SELECT count(*) FROM clicks WHERE who = 'b'") == [(120,)]
    cols = {r[0] for r in a.query("SELECT column_name FROM information_schema.columns "
                                  "WHERE table_schema = ? AND table_name = 'clicks'",
                                  (a.pg_schema,))}
    for r in range(12):
        assert {f"c{r}", f"a_{r}", f"b_{r}"} <= cols, cols
    # every value where it was sent: no reject, nothing nulled
    assert not a.table_exists("clicks__rejects") or a.count("clicks__rejects") == 0
    for r in range(12):
        assert a.query(f"SELECT count(*) FROM clicks WHERE c{r} IS NOT NULL") == [(20,)], r
        assert a.query(f"SELECT count(*) FROM clicks WHERE a_{r} = 'x'") == [(10,)], r
        assert a.query(f"SELECT count(*) FROM clicks WHERE b_{r} = 'x'") == [(10,)], r
    # each keeps its own checkpoint of its own pipeline "clicks"
    names = [r[0] for r in a.query("SELECT pipeline FROM _zx_checkpoints")]
    for i in (ia, ib):   # "<instance>/<pipeline>#<its incarnation>"
        assert sum(n.startswith(f"{i}/clicks#") for n in names) == 1, names
    hosts = {r[0] for r in a.query("SELECT instance FROM _zx_hosts")}
    assert hosts == {ia, ib}
    for z in (a, b):
        assert z.pipeline("clicks")["state"] == "running"
        assert "event=fatal" not in z.log_text()


def test_a_restarted_writer_goes_on_from_its_own_checkpoint(make_zxd):
    a, b = shared_pair(make_zxd)
    for i in range(5):
        a.push_ok("clicks", [{"id": i, "who": "a"}], wait_commit=True)
        b.push_ok("clicks", [{"id": 100 + i, "who": "b"}], wait_commit=True)
    a.stop()
    b.push_ok("clicks", [{"id": 200, "who": "b"}], wait_commit=True)
    a.start()
    a.push_ok("clicks", [{"id": 300, "who": "a"}], wait_commit=True)
    wait_for(lambda: a.count("clicks") == 12, "12 rows")
    assert sorted(r[0] for r in a.query("SELECT id FROM clicks")) == \
        list(range(5)) + list(range(100, 105)) + [200, 300]


def test_shared_and_unshared_zxd_keep_each_other_out(make_zxd):
    a, _ = shared_pair(make_zxd)
    lone = make_zxd({"clicks": {}}, workspace="postgres", start=False)
    lone.use_workspace_of(a)
    lone.start(wait=False)
    assert lone.wait_exit(60) != 0
    log = lone.log_text()
    assert "is in use by another zxd" in log and "workspace.postgres.shared: true" in log, \
        log[-2000:]
    assert "shared by zxd instance " in log, log[-2000:]
    # and an unshared one first keeps a shared one out
    c = make_zxd({"ev": {}}, workspace="postgres")
    d = make_zxd({"ev": {}}, workspace="postgres", start=False)
    d.use_workspace_of(c)
    d.pg_shared = True
    d.write_config()
    d.start(wait=False)
    assert d.wait_exit(60) != 0
    log = d.log_text()
    assert "is written by a zxd without workspace.postgres.shared" in log, log[-2000:]


def test_forward_is_refused_with_a_shared_workspace(tmp_path):
    """The forward journal is numbered per pipeline name in the workspace:
    refused until it is per instance."""
    cfg = tmp_path / "zx.yaml"
    cfg.write_text("server:\n  data_dir: ./var\nworkspace:\n  postgres:\n"
                   "    dsn: \"postgresql://u@127.0.0.1/db\"\n    shared: true\n"
                   "connections:\n  k: {kind: kafka, brokers: [\"127.0.0.1:9092\"]}\n"
                   "pipelines:\n  h:\n    direction: stream\n    source: http\n"
                   "    key: abc\n    forward: {kafka: {connection: k, topic: t}}\n")
    p = subprocess.run([ZXD, "--check", "-c", str(cfg)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0
    assert "pipelines.h: forward is not available with workspace.postgres.shared" in p.stderr, \
        p.stderr
