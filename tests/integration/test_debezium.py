"""
Debezium change events and latest-per-key feeds end to end, against the
real Kafka broker (kafka_fixtures.py) and zx's own http push, on both
workspace backends.  The events are the ones Debezium Server 3.6 really
wrote (tests/corpus/debezium, captured from PostgreSQL and MariaDB by
tests/services/debezium): each file is produced to Kafka as captured (key,
value, tombstones) and the mirrors are checked value by value against what
the SQL of that corpus left in the source table.  Also: replays of older
events change nothing (before and after a restart), bad events go to
__rejects and the stream goes on, events without a schema are inferred and
the feed says so once, `mode: latest` keeps the latest row per key, and a
stream of 30,000 changes through SIGKILLed workers and writers ends equal
to the model of the source.

The tests with a real Debezium Server capturing real databases are in
test_debezium_server.py.
"""

import decimal
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import REPO, ZXD, uid, wait_for
from kafka_fixtures import kafka, make_kzxd, settle  # noqa: F401

CORPUS = os.path.join(REPO, "tests", "corpus", "debezium")


def corpus(name):
    with open(os.path.join(CORPUS, name)) as f:
        return [json.loads(l) for l in f if l.strip()]


def dumps(v):
    return None if v is None else json.dumps(v)


def produce_events(kafka, topic, events):
    kafka.produce(topic, [dumps(e["value"]) for e in events],
                  keys=[dumps(e["key"]) for e in events], partition=0)


def feed(z):
    out = []
    for line in z.zxctl("--json", "feed", check_rc=0).stdout.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def dbz_pipe(topic, **extra):
    spec = {"connection": "c", "topic": topic, "table": '"{source.table}"',
            "extra": {"format": "debezium"}}
    spec["extra"].update(extra)
    return spec


def text(v):
    """A value read back, as text (bytes from bytea as \\x hex)."""
    if isinstance(v, (bytes, memoryview)):
        return "\\x" + bytes(v).hex()
    return None if v is None else str(v)


def by_id(z, table, cols):
    rows = z.query(f'SELECT id, {", ".join(chr(34) + c + chr(34) for c in cols)} '
                   f'FROM "{table}" ORDER BY id')
    return {r[0]: dict(zip(cols, r[1:])) for r in rows}


# --------------------------------------------------------------------------
# the captured PostgreSQL events, with and without schemas
# --------------------------------------------------------------------------

def test_pg_corpus_mirrors_the_source(kafka, make_kzxd):
    """pg_schemas.jsonl up to the TRUNCATE: snapshot rows, inserts, an
    update, an update with a TOASTed column not sent, a key change (d +
    tombstone + c) and a delete; then the truncate and one insert."""
    events = corpus("pg_schemas.jsonl")
    cut = next(i for i, e in enumerate(events) if e["value"] and e["value"]["payload"]["op"] == "t")
    topic = kafka.create_topic(f"pg{uid()[:8]}.public.all_types")
    z = make_kzxd({"inv": dbz_pipe(topic, history="true")},
                  {"c": kafka.connection("plaintext")})
    produce_events(kafka, topic, events[:cut])
    z.wait_count("all_types", 4)       # 1, 3, 11 and 20 (10 moved, 2 deleted)
    wait_for(lambda: z.table_exists("all_types__changes") and
             z.count("all_types__changes") == 10, "the history of 10 changes", deadline=60)
    cols = ["c_smallint", "c_integer", "c_bigint", "c_numeric", "c_numeric_v", "c_boolean",
            "c_text", "c_varchar", "c_char", "c_bytea", "c_date", "c_time", "c_timestamp",
            "c_timestamptz", "c_jsonb", "c_uuid", "c_enum", "c_big_text", "c_double"]
    got = by_id(z, "all_types", cols)
    assert sorted(got) == [1, 3, 11, 20]
    one = got[1]
    assert one["c_text"] == "changed" and one["c_integer"] == 101
    assert decimal.Decimal(text(one["c_numeric"])) == decimal.Decimal("0.5")
    assert decimal.Decimal(text(one["c_numeric_v"])) == decimal.Decimal("3.14159265358979323846")
    assert one["c_smallint"] == 1 and one["c_bigint"] == 10000000000
    assert one["c_boolean"] in (True, 1)
    assert one["c_varchar"] == "varchar" and one["c_char"] == "abc"
    assert text(one["c_bytea"]) == "\\x000102ff"
    assert text(one["c_date"]) == "2024-02-29"
    assert text(one["c_time"]).startswith("13:14:15.123456")
    assert text(one["c_timestamp"]).replace(" ", "T").startswith("2024-02-29T13:14:15.123456")
    assert text(one["c_timestamptz"]).replace(" ", "T").startswith("2024-02-29T13:14:15.123456")
    assert json.loads(one["c_jsonb"]) == {"a": 1, "b": [True, None]}
    assert text(one["c_uuid"]) == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert one["c_enum"] == "happy"
    # the TOASTed column was not sent by the update: the stored value stays
    three = got[3]
    assert three["c_smallint"] == 42
    assert three["c_big_text"] is not None and len(three["c_big_text"]) == 3200
    # the moved key has row 10's values
    assert got[20]["c_text"] == "line1\nline2\ttab" and got[20]["c_bigint"] == 9223372036854775807
    assert text(got[20]["c_date"]) == "9999-12-31"
    assert got[11]["c_double"] == float("-inf")
    # the history: every change with its operation and position
    ops = [r[0] for r in z.query('SELECT "_op" FROM "all_types__changes" ORDER BY "_lsn", "_op"')]
    assert sorted(ops) == sorted(["insert"] * 6 + ["update"] * 2 + ["delete"] * 2)
    lsns = {r[0] for r in z.query('SELECT "_lsn" FROM "all_types__changes"')}
    assert all("/" in l for l in lsns)
    # the mirror got the source's types
    kinds = z.column_kinds("all_types")
    assert kinds["c_bigint"] == "integer" and kinds["c_double"] == "real"
    assert kinds["c_timestamptz"] == "timestamp" and kinds["c_jsonb"] == "json"
    decl = z.columns("all_types")
    if z.workspace == "postgres":
        assert decl["c_date"] == "date" and decl["c_numeric"] == "numeric(12,3)", decl
        assert decl["c_time"] == "time without time zone" and decl["c_uuid"] == "uuid", decl
    else:
        # SQLite declares them too (PRAGMA table_info), the values unchanged
        assert decl["c_date"] == "DATE" and decl["c_time"] == "TIME", decl
        assert decl["c_timetz"] == "TIME WITH TIME ZONE" and decl["c_uuid"] == "UUID", decl
        assert decl["c_numeric"] == "NUMERIC TEXT(12,3)", decl
        assert decl["c_numeric_v"] == "NUMERIC TEXT", decl
        assert decl["c_timestamp"] == "TIMESTAMP" and decl["c_bigint"] == "INTEGER", decl
        assert z.query('SELECT typeof("c_numeric"), typeof("c_date"), typeof("c_time") '
                       'FROM "all_types" WHERE id = 1') == [("text", "text", "text")]
    # the truncate empties it; what follows stays
    produce_events(kafka, topic, events[cut:])
    wait_for(lambda: [r[0] for r in z.query('SELECT id FROM "all_types"')] == [30],
             "only row 30 after the truncate", deadline=60)
    assert z.count("all_types__rejects") == 0 if z.table_exists("all_types__rejects") else True
    assert not any(e.get("event") == "types_inferred" for e in feed(z))


def test_events_without_schema_are_inferred_and_said_once(kafka, make_kzxd):
    events = corpus("pg_noschemas.jsonl")
    topic = kafka.create_topic(f"pgn{uid()[:8]}.public.all_types")
    z = make_kzxd({"inv": dbz_pipe(topic)}, {"c": kafka.connection("plaintext")})
    produce_events(kafka, topic, events)
    wait_for(lambda: z.table_exists("all_types") and
             [r[0] for r in z.query('SELECT id FROM "all_types"')] == [30],
             "row 30 alone after the truncate", deadline=60)
    # said after the commit that made the row visible: wait for it
    told = wait_for(lambda: [e for e in feed(z) if e.get("event") == "types_inferred"],
                    "the types_inferred event")
    assert len(told) == 1 and told[0]["table"] == "all_types"
    assert "schemas.enable" in told[0]["message"]


def test_mariadb_corpus(kafka, make_kzxd):
    """MariaDB's shapes: binlog positions, its types (unsigned, year, set,
    TIME beyond 24 hours)."""
    events = corpus("mariadb_schemas.jsonl")
    topic = kafka.create_topic(f"my{uid()[:8]}.dbzmy.all_types")
    z = make_kzxd({"my": dbz_pipe(topic, history="true")}, {"c": kafka.connection("plaintext")})
    produce_events(kafka, topic, events)
    ncd = sum(1 for e in events if e["value"] and e["value"]["payload"]["op"] in "crudt")
    wait_for(lambda: z.table_exists("all_types__changes") and
             z.count("all_types__changes") == ncd, f"{ncd} changes in the history", deadline=60)
    lsns = [r[0] for r in z.query('SELECT "_lsn" FROM "all_types__changes"')]
    assert all(l.startswith("binlog.") and l.count(":") == 2 for l in lsns if l)


# --------------------------------------------------------------------------
# replays, rejects
# --------------------------------------------------------------------------

def pg_event(op, row, lsn, before=None, table="items"):
    return {"before": before, "after": row if op != "d" else None,
            "source": {"connector": "postgresql", "db": "shop", "schema": "public",
                       "table": table, "lsn": lsn, "ts_ms": 1700000000000},
            "op": op}


def test_older_events_never_overwrite_newer_rows(kafka, make_kzxd):
    topic = kafka.create_topic(f"r{uid()[:8]}.public.items")
    z = make_kzxd({"r": dbz_pipe(topic)}, {"c": kafka.connection("plaintext")})
    key = lambda i: json.dumps({"id": i})  # noqa: E731
    first = [pg_event("c", {"id": 1, "v": "a"}, 100), pg_event("u", {"id": 1, "v": "b"}, 200),
             pg_event("c", {"id": 2, "v": "x"}, 300), pg_event("d", None, 400, {"id": 2})]
    kafka.produce(topic, [json.dumps(e) for e in first], keys=[key(1), key(1), key(2), key(2)],
                  partition=0)
    wait_for(lambda: z.table_exists("items") and
             z.query('SELECT id, v FROM "items"') == [(1, "b")], "row 1 = b alone", deadline=60)
    # Debezium restarted and sends its older events again
    kafka.produce(topic, [json.dumps(e) for e in first[:3]], keys=[key(1), key(1), key(2)],
                  partition=0)
    marker = pg_event("c", {"id": 9, "v": "m"}, 500)
    kafka.produce(topic, [json.dumps(marker)], keys=[key(9)], partition=0)
    z.wait_count("items", 2, deadline=60)   # the marker came after the replays
    assert z.query('SELECT id, v FROM "items" ORDER BY id') == [(1, "b"), (9, "m")]
    # each row holds the position of the change that wrote it
    assert z.query('SELECT id, "_zx_seq" FROM "items" ORDER BY id') == \
        [(1, "p%016x" % 200), (9, "p%016x" % 500)]
    # and after a restart of zxd (a row's position from the row, a deleted
    # key's from the store)
    z.stop()
    z.start()
    kafka.produce(topic, [json.dumps(first[0]), json.dumps(first[2]),
                          json.dumps(pg_event("c", {"id": 10, "v": "n"}, 600))],
                  keys=[key(1), key(2), key(10)], partition=0)
    z.wait_count("items", 3, deadline=60)
    assert z.query('SELECT id, v FROM "items" ORDER BY id') == [(1, "b"), (9, "m"), (10, "n")]
    # an equal position is applied (the changes of one transaction share it)
    kafka.produce(topic, [json.dumps(pg_event("u", {"id": 10, "v": "n2"}, 600))], keys=[key(10)],
                  partition=0)
    wait_for(lambda: z.query('SELECT v FROM "items" WHERE id = 10') == [("n2",)],
             "the change at the same position applied", deadline=60)


def test_bad_events_go_to_rejects_and_the_stream_goes_on(kafka, make_kzxd):
    topic = kafka.create_topic(f"b{uid()[:8]}.public.items")
    z = make_kzxd({"b": dbz_pipe(topic)}, {"c": kafka.connection("plaintext")})
    key = json.dumps({"id": 1})
    values = ["{not json", json.dumps([1, 2]),
              json.dumps({"after": {"id": 1}, "op": "z", "source": {"table": "items"}}),
              json.dumps({"after": {"v": 1}, "op": "c", "source": {"table": "items"}}),
              json.dumps(pg_event("c", {"id": 1, "v": "ok"}, 10))]
    kafka.produce(topic, values, keys=[key] * len(values), partition=0)
    z.wait_count("items", 1, deadline=60)
    reasons = sorted(r[0] for r in z.query('SELECT reason FROM "items__rejects"'))
    assert len(reasons) == 4, reasons
    assert any("not JSON" in r for r in reasons)
    assert any("must be a JSON object" in r for r in reasons)
    assert any("unknown operation" in r for r in reasons)
    assert any("no value for key column id" in r for r in reasons)


def test_a_name_from_the_data_never_writes_another_pipelines_table(kafka, make_kzxd):
    """{source.table} is data: an event naming another pipeline's table is
    a reject, and that table is left alone."""
    topic = kafka.create_topic(f"v{uid()[:8]}.public.items")
    other = kafka.create_topic()
    z = make_kzxd({"b": dbz_pipe(topic), "victim": {"connection": "c", "topic": other}},
                  {"c": kafka.connection("plaintext")})
    kafka.produce(other, [json.dumps({"id": 1, "v": "mine"})], partition=0)
    z.wait_count("victim", 1)
    bad = pg_event("c", {"id": 1, "v": "overwritten"}, 10, table="Victim")
    good = pg_event("c", {"id": 2, "v": "ok"}, 11)
    kafka.produce(topic, [json.dumps(bad), json.dumps(good)],
                  keys=[json.dumps({"id": 1}), json.dumps({"id": 2})], partition=0)
    z.wait_count("items", 1, deadline=60)
    assert z.query('SELECT id, v FROM "victim"') == [(1, "mine")]
    reasons = [r[0] for r in z.query('SELECT reason FROM "items__rejects"')]
    assert any("pipeline victim's table" in r for r in reasons), reasons


# --------------------------------------------------------------------------
# http pushes
# --------------------------------------------------------------------------

def test_http_push_of_debezium_events(make_zxd):
    events = corpus("pg_http_schemas.jsonl")
    z = make_zxd({"pgpush": {"table": '"{source.table}"',
                             "extra": {"format": "debezium", "key_columns": "[id]"}}})
    for e in events:   # the requests Debezium's http sink made, as it made them
        r = z.push("pgpush", body=e["body"].encode(), wait_commit=True)
        assert r.status == 202, r
    ids = [r[0] for r in z.query('SELECT id FROM "all_types" ORDER BY id')]
    assert ids == [30]
    # several events in one array, and an array mixing two tables
    ev = [pg_event("c", {"id": i, "v": "x"}, 1000 + i) for i in (40, 41)]
    assert z.push("pgpush", ev, wait_commit=True).json["accepted"] == 2
    mixed = [pg_event("c", {"id": 50}, 2000), pg_event("c", {"id": 51}, 2001, table="other")]
    r = z.push("pgpush", mixed, wait_commit=True)
    assert r.status == 400 and "one table" in r.json["error"]
    assert not z.table_exists("other")


def test_nulls_unavailable_values_and_string_positions(make_zxd):
    """A null sets NULL, Debezium's unavailable value keeps the stored
    one, in a change alone and in a frame of several (issue 18, point 10);
    a position sent as a string orders like the number (point 19b)."""
    z = make_zxd({"dn": {"table": '"{source.table}"',
                         "extra": {"format": "debezium", "key_columns": "[id]"}}})
    big = "B" * 9000
    unav = "__debezium_unavailable_value"
    z.push("dn", [pg_event("c", {"id": i, "note": "x", "doc": "d", "big": big}, 100 + i)
                  for i in (1, 2, 3)], wait_commit=True)
    z.push("dn", [pg_event("u", {"id": 1, "note": None, "doc": "d1", "big": unav}, 200)],
           wait_commit=True)
    z.push("dn", [pg_event("u", {"id": 2, "note": None, "doc": None, "big": unav}, 201),
                  pg_event("u", {"id": 3, "note": "y", "doc": None, "big": None}, 202)],
           wait_commit=True)
    assert z.query('SELECT id, note, doc, big FROM "items" ORDER BY id') == [
        (1, None, "d1", big), (2, None, None, big), (3, "y", None, None)]
    # an older position as a string ("50" < 300) does not overwrite
    z.push("dn", [pg_event("u", {"id": 4, "note": "at 300"}, 300)], wait_commit=True)
    z.push("dn", [pg_event("u", {"id": 4, "note": "at 50"}, "50")], wait_commit=True)
    z.push("dn", [pg_event("u", {"id": 5, "note": "marker"}, "301")], wait_commit=True)
    assert z.query('SELECT note FROM "items" WHERE id IN (4, 5) ORDER BY id') == [
        ("at 300",), ("marker",)]
    z.push("dn", [pg_event("u", {"id": 4, "note": "at 400"}, "400")], wait_commit=True)
    assert z.query('SELECT note FROM "items" WHERE id = 4') == [("at 400",)]


def test_latest_per_key_of_a_json_feed(make_zxd):
    z = make_zxd({"prices": {"extra": {"mode": "latest", "key_columns": "[sku]",
                                       "history": "true"}}})
    z.push_ok("prices", [{"sku": "a", "price": 1.5}, {"sku": "b", "price": 2.0}], wait_commit=True)
    z.push_ok("prices", [{"sku": "a", "price": 3.25, "currency": "EUR"}], wait_commit=True)
    rows = z.query('SELECT sku, price, currency FROM "prices" ORDER BY sku')
    assert rows == [("a", 3.25, "EUR"), ("b", 2.0, None)]
    assert z.count("prices__changes") == 3
    # an object without its key is a reject; the others are applied
    r = z.push("prices", [{"sku": "c", "price": 1}, {"price": 9}], wait_commit=True)
    assert r.status == 202
    assert z.count("prices") == 3
    assert z.count("prices__rejects") == 1


def test_latest_from_kafka_with_tombstones(kafka, make_kzxd):
    topic = kafka.create_topic()
    z = make_kzxd({"lat": {"connection": "c", "topic": topic,
                           "extra": {"mode": "latest", "key_columns": "[sku]"}}},
                  {"c": kafka.connection("plaintext")})
    vals = [json.dumps({"sku": "a", "n": 1}), json.dumps({"sku": "b", "n": 1}),
            json.dumps({"sku": "a", "n": 2}), None]
    keys = [json.dumps({"sku": "a"}), json.dumps({"sku": "b"}), json.dumps({"sku": "a"}),
            json.dumps({"sku": "b"})]
    kafka.produce(topic, vals, keys=keys, partition=0)
    wait_for(lambda: z.table_exists("lat") and z.query('SELECT sku, n FROM "lat"') == [("a", 2)],
             "a = 2 alone (b deleted by its tombstone)", deadline=60)


# --------------------------------------------------------------------------
# kill -9 of the worker and the writer mid-way
# --------------------------------------------------------------------------

def test_sigkill_mid_stream_converges(kafka, make_kzxd):
    """30,000 changes to 3,000 keys over 3 partitions (each key in one), the
    worker and then the writer SIGKILLed while they are applied: the mirror
    ends equal to the model, and nothing older overwrote anything newer."""
    topic = kafka.create_topic(f"k{uid()[:8]}.public.items", partitions=3)
    z = make_kzxd({"k": dbz_pipe(topic)}, {"c": kafka.connection("plaintext")})
    model = {}
    vals, keys, parts = [], [], []
    lsn = 1000
    for step in range(30000):
        i = (step * 7919) % 3000
        lsn += 1
        if i in model and step % 10 == 9:
            ev = pg_event("d", None, lsn, {"id": i})
            del model[i]
        else:
            ev = pg_event("u" if i in model else "c", {"id": i, "v": step}, lsn)
            model[i] = step
        vals.append(json.dumps(ev))
        keys.append(json.dumps({"id": i}))
        parts.append(i % 3)
    # produce in three slices, killing processes between them
    third = len(vals) // 3
    for p in range(3):
        sel = [k for k in range(0, third) if parts[k] == p]
        kafka.produce(topic, [vals[k] for k in sel], keys=[keys[k] for k in sel], partition=p)
    wait_for(lambda: z.table_exists("items") and z.count("items") > 100, "some rows", deadline=60)
    os.kill(z.pids()["k"], signal.SIGKILL)
    for p in range(3):
        sel = [k for k in range(third, 2 * third) if parts[k] == p]
        kafka.produce(topic, [vals[k] for k in sel], keys=[keys[k] for k in sel], partition=p)
    settle(0.5)
    os.kill(z.pids()["writer"], signal.SIGKILL)
    for p in range(3):
        sel = [k for k in range(2 * third, len(vals)) if parts[k] == p]
        kafka.produce(topic, [vals[k] for k in sel], keys=[keys[k] for k in sel], partition=p)

    def converged():
        try:
            got = dict(z.query('SELECT id, v FROM "items"'))
        except Exception:
            return False
        return got == model
    wait_for(converged, "the mirror equal to the model", deadline=120)


def test_tables_made_from_the_data_are_bounded(make_zxd):
    """Issue 18, point 18: `table: "{source.table}"` makes tables from the
    data, so a stream naming ever new tables once filled the workspace.  At
    most max_tables are made, each matching table_pattern; beyond them an
    event is a reject with the reason, the tables made still take events,
    and after a restart the pipeline still counts the tables it made."""
    z = make_zxd({"many": {"table": '"{source.table}"',
                           "extra": {"format": "debezium", "key_columns": "[id]",
                                     "max_tables": 3, "table_pattern": '"^t_"'}}})

    def push(table, i, lsn):
        r = z.push("many", [pg_event("c", {"id": i, "v": "x"}, lsn, table=table)],
                   wait_commit=True)
        assert r.status == 202, r
        return r

    for n in range(3 + 5):
        push(f"t_{n}", 1, 100 + n)
    assert [n for n in range(8) if z.table_exists(f"t_{n}")] == [0, 1, 2]
    reasons = [r[0] for r in z.query('SELECT reason FROM "many__rejects"')]
    assert len(reasons) == 5, reasons
    assert all("would be a new table beyond max_tables (3 tables made already)" in r
               for r in reasons), reasons
    push("t_1", 2, 200)                        # a table it made still takes events
    assert z.count("t_1") == 2
    push("x_1", 1, 300)                        # not matching table_pattern
    assert not z.table_exists("x_1")
    reasons = [r[0] for r in z.query('SELECT reason FROM "many__rejects"')]
    assert any('the table name "x_1" made from "{source.table}" does not match '
               'table_pattern "^t_"' in r for r in reasons), reasons

    z.stop()
    z.start()
    push("t_9", 1, 400)                        # still bounded after a restart
    assert not z.table_exists("t_9")
    push("t_2", 3, 500)                        # and its tables still take events
    assert z.count("t_2") == 2
    assert z.count("many__rejects") == 7


def test_the_default_bound_is_100_tables(make_zxd):
    """Without max_tables a template makes at most 100 tables: the 5 more
    an event stream names are rejects (on main, 105 tables were made)."""
    z = make_zxd({"flood": {"table": '"{source.table}"',
                            "extra": {"format": "debezium", "key_columns": "[id]"}}})
    for n in range(105):
        r = z.push("flood", [pg_event("c", {"id": 1}, 100 + n, table=f"f_{n}")],
                   wait_commit=True)
        assert r.status == 202, r
    made = [n for n in range(105) if z.table_exists(f"f_{n}")]
    assert made == list(range(100)), made
    assert z.count("flood__rejects") == 5


def test_a_bad_table_pattern_is_refused(make_zxd):
    z = make_zxd({"p": {"table": '"{source.table}"',
                        "extra": {"format": "debezium", "key_columns": "[id]",
                                  "table_pattern": '"^(unclosed"'}},
                  "q": {"extra": {"table_pattern": '"^x"'}}}, start=False)
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                       env=z.env, timeout=60)
    assert p.returncode == 1, p
    assert "pipelines.p: table_pattern is not a valid regular expression" in p.stderr, p.stderr
    assert ("pipelines.q: table_pattern applies only to a table with placeholders"
            in p.stderr), p.stderr
