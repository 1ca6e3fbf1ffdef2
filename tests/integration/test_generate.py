"""
`source: generate` end to end (workers/sources/generate/): rows made from a
template of fields, `count` of them exactly, with the types and ranges the
template says; a restart (the worker SIGKILLed, zxd stopped and started,
zxd killed as a whole) continues the sequence, unique and without gaps; a
bad template is refused by `zxd --check` naming the pipeline and the field.
Runs on every workspace of ZX_WORKSPACES.
"""

import json
import os
import re
import signal
import subprocess

import pytest

from conftest import TS_RE, ZXD, Zxd, wait_for, zxd_factory

# every generator once
FIELDS = {
    "id": "sequence",
    "user_id": "int 1..1000",
    "kind": "choice click,view,buy",
    "at": "timestamp",
    "uid": "uuid",
    "price": "float 0..100",
    "meta": 'json {"a": 1, "b": [true, null]}',
    "flag": "bool",
}
KINDS = {"id": "integer", "user_id": "integer", "kind": "text", "at": "timestamp",
         "uid": "text", "price": "real", "meta": "json", "flag": "boolean"}
UUID4_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


class GenZxd(Zxd):
    """A Zxd whose pipelines are `source: generate`.

    gpipes: {name: {"fields": {column: generator}, "rate": str|None,
                     "count": int|None, "extra": {option: YAML text}}}"""

    def __init__(self, root, gpipes, **kw):
        self.gpipes = dict(gpipes)
        super().__init__(root, {}, **kw)

    def config_text(self):
        text = super().config_text()          # ends with "pipelines:"
        lines = []
        for name, s in self.gpipes.items():
            lines += [f"  {name}:", "    direction: stream", "    source: generate",
                      f"    table: {name.replace('-', '_')}", "    fields:"]
            for col, gen in s["fields"].items():
                lines.append(f"      {col}: {json.dumps(gen)}")
            if s.get("rate"):
                lines.append(f"    rate: {json.dumps(s['rate'])}")
            if s.get("count") is not None:
                lines.append(f"    count: {s['count']}")
            for k, v in (s.get("extra") or {}).items():
                lines.append(f"    {k}: {v}")
        return text + "\n".join(lines) + "\n"

    def source_status(self, name):
        return (self.pipeline(name) or {}).get("source_status") or {}

    def wait_done(self, name, count, deadline=300):
        """Wait until the source says done and the table has count rows."""
        def ok():
            st = self.source_status(name)
            n = self.count(name) if self.table_exists(name) else 0
            assert n <= count, f"{name} has {n} rows, more than count {count}"
            return st.get("state") == "done" and n == count
        wait_for(ok, lambda: f"{name} done with {count} rows (status "
                 f"{self.source_status(name)}, rows "
                 f"{self.count(name) if self.table_exists(name) else 0})\n" + self.log_tail(30),
                 deadline)

    def check_sequence(self, name, count):
        """The sequence is 0..count-1, each once."""
        n, distinct, lo, hi = self.query(
            f'SELECT count(*), count(DISTINCT "id"), min("id"), max("id") FROM "{name}"')[0]
        assert (n, distinct, lo, hi) == (count, count, 0, count - 1), \
            f"rows, distinct ids, min, max = {(n, distinct, lo, hi)}, expected " \
            f"{(count, count, 0, count - 1)}"


@pytest.fixture
def make_gzxd(workspace):
    yield from zxd_factory(workspace, GenZxd)


def test_count_rows_with_the_template_types_and_ranges(make_gzxd, workspace):
    z = make_gzxd({"gen": {"fields": FIELDS, "count": 5000}})
    z.wait_done("gen", 5000)
    z.check_sequence("gen", 5000)
    assert z.column_kinds("gen") == KINDS
    rows = z.query('SELECT "user_id", "kind", "at", "uid", "price", "meta", "flag" FROM "gen"')
    assert len(rows) == 5000
    uids = set()
    for user_id, kind, at, uid, price, meta, flag in rows:
        assert 1 <= user_id <= 1000
        assert kind in ("click", "view", "buy")
        assert TS_RE.match(at), at
        assert UUID4_RE.match(uid), uid
        uids.add(uid)
        assert 0 <= price <= 100
        assert json.loads(meta) == {"a": 1, "b": [True, None]}
        assert flag in (True, False, 1, 0)
    assert len(uids) == 5000
    assert {r[1] for r in rows} == {"click", "view", "buy"}
    # done, and the pipeline stays running (idle): no restart, no more rows
    p = z.pipeline("gen")
    assert p["state"] == "running", p
    assert z.source_status("gen") == {"state": "done", "rows": 5000, "count": 5000}
    t = z.zxctl("test", "gen")
    assert t.returncode == 0 and "makes its rows itself" in t.stdout \
        and "8 fields into table gen" in t.stdout, (t.stdout, t.stderr)
    pid = p["pid"]
    z.stop()
    z.start()
    z.wait_running("gen", not_pid=pid)
    z.wait_done("gen", 5000)
    z.check_sequence("gen", 5000)


def test_a_reload_raising_count_continues(make_gzxd, workspace):
    z = make_gzxd({"gen": {"fields": {"id": "sequence"}, "count": 3000}})
    z.wait_done("gen", 3000)
    z.gpipes["gen"]["count"] = 7000
    z.write_config()
    r = z.zxctl("reload")
    assert r.returncode == 0, (r.stdout, r.stderr)
    z.wait_done("gen", 7000)
    z.check_sequence("gen", 7000)


def _wait_rows(z, name, at_least):
    wait_for(lambda: z.table_exists(name) and z.count(name) >= at_least,
             lambda: f"{name} has {at_least} rows\n" + z.log_tail(30), 120)


def test_restart_continues_the_sequence(make_gzxd, workspace):
    """SIGKILL of the worker, SIGTERM and start of zxd, SIGKILL of every
    zxd process and start: `id` stays unique and gap-free, count rows in
    all."""
    total = 40000
    z = make_gzxd({"gen": {"fields": {"id": "sequence", "n": "int 0..9"},
                           "rate": "4000/s", "count": total}})
    _wait_rows(z, "gen", 2000)
    pid = z.wait_running("gen")
    os.kill(pid, signal.SIGKILL)
    pid = z.wait_running("gen", not_pid=pid)
    before = z.count("gen")
    _wait_rows(z, "gen", before + 4000)
    z.stop()
    after_stop = z.count("gen")
    assert after_stop < total, "the rate should have left rows to make after a stop"
    z.check_sequence("gen", after_stop)
    z.start()
    _wait_rows(z, "gen", after_stop + 4000)
    z.kill_all()
    z.start()
    z.wait_done("gen", total)
    z.check_sequence("gen", total)


def test_max_rate(make_gzxd, workspace):
    z = make_gzxd({"fast": {"fields": {"id": "sequence"}, "rate": "max", "count": 50000}})
    z.wait_done("fast", 50000)
    z.check_sequence("fast", 50000)
    assert z.column_kinds("fast") == {"id": "integer"}


BAD = [
    ({"kind": "pick a,b"}, None, 'field kind: unknown generator "pick"'),
    ({"user_id": "int 10..1"}, None, "field user_id: `int` wants LO..HI"),
    ({"price": "float 0..inf"}, None, "field price: `float` wants LO..HI"),
    ({"meta": 'json {"a": '}, None, "field meta: `json` wants a JSON object or array"),
    ({"kind": "choice a,,b"}, None, "field kind: `choice` word 2 is empty"),
    ({"Kind": "uuid"}, None, "field Kind: not a column name"),
    ({"id": "sequence"}, "10/minute", "`rate` wants `max` or N/s"),
]


@pytest.mark.parametrize("fields,rate,message", BAD)
def test_a_bad_template_is_refused_by_check(make_gzxd, fields, rate, message):
    z = make_gzxd({"bad": {"fields": fields, "rate": rate}}, start=False)
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                       env=z.env, timeout=60)
    assert p.returncode == 1, p
    assert "pipeline bad" in p.stderr and message in p.stderr, p.stderr


def test_table_is_required(make_gzxd):
    z = make_gzxd({"bad": {"fields": {"id": "sequence"}}}, start=False)
    z.write_config(z.config_text().replace("    table: bad\n", ""))
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                       env=z.env, timeout=60)
    assert p.returncode == 1, p
    assert "pipeline bad: missing required field 'table'" in p.stderr, p.stderr


def test_fields_are_required(make_gzxd):
    z = make_gzxd({"bad": {"fields": {}}}, start=False)
    # an empty mapping: written as {} is refused like no fields at all
    z.write_config(z.config_text().replace("    fields:\n", "    fields: {}\n"))
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                       env=z.env, timeout=60)
    assert p.returncode == 1, p
    assert "bad" in p.stderr and "fields" in p.stderr, p.stderr
