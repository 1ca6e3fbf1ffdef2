"""
zx with a real Debezium Server 3.6.1 (tests/services/debezium) capturing
real databases, on both workspace backends:

- PostgreSQL (pgoutput) -> Debezium Server's http sink -> a zx push stream
  (`format: debezium`, `key_columns` since the sink sends no key; each
  request signed the Standard Webhooks way and checked by zx against its
  `webhook_secret`, the stream having no key at all);
- MariaDB (binlog) -> Debezium Server's Kafka sink -> the real Kafka broker
  -> a zx Kafka stream (`format: debezium`, `table: "{source.table}"`);

each with JsonConverter's `schemas.enable` true and false.  A table with
every common type gets a snapshot, inserts, updates (one of the key),
deletes and a truncate, and while the changes flow zx's stream worker and
writer are SIGKILLed; in the end every mirror equals its source row for
row (with a schema, every column by its type; without one, the columns
whose JSON form needs no schema, and the feed says the types were
inferred).
"""

import base64
import datetime
import decimal
import json
import os
import signal
import time
import uuid

import pytest

from conftest import uid, wait_for
from debezium_fixtures import dbz_start, dbz_stop
from kafka_fixtures import kafka, make_kzxd, settle  # noqa: F401
from sync_fixtures import mariadb_env

# --------------------------------------------------------------------------
# comparing a source row with its mirror, column by column
# --------------------------------------------------------------------------

def _us(v):
    """A timestamp (datetime, naive = UTC, or zx's text) as µs since 1970."""
    if isinstance(v, str):
        v = datetime.datetime.fromisoformat(v.replace("Z", "+00:00").replace(" ", "T"))
    if v.tzinfo is None:
        v = v.replace(tzinfo=datetime.timezone.utc)
    return round(v.timestamp() * 1_000_000)


def _time(v):
    if isinstance(v, datetime.timedelta):        # MySQL's TIME (PyMySQL)
        return round(v.total_seconds() * 1_000_000)
    if isinstance(v, datetime.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    s = str(v)
    neg = s.startswith("-")
    h, m, rest = s.lstrip("-").split(":")
    us = (int(h) * 3600 + int(m) * 60) * 1_000_000 + round(decimal.Decimal(rest) * 1_000_000)
    return -us if neg else us


def _bytes(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    return v[2:] if isinstance(v, str) and v.startswith("\\x") else v


def _json(v):
    return json.loads(v) if isinstance(v, (str, bytes)) else v


CANON = {
    "int": lambda v: int(v),
    "num": lambda v: decimal.Decimal(str(v)).normalize(),
    "float": lambda v: float(v),
    "bool": lambda v: bool(int(v)) if isinstance(v, (int, str)) else bool(v),
    "text": lambda v: str(v),
    "bytes": _bytes,
    "date": lambda v: str(v)[:10],
    "time": _time,
    "ts": _us,
    "json": _json,
    "uuid": lambda v: str(v).lower(),
}


def same_rows(src, mirror, kinds, cols):
    """src, mirror: {id: {col: value}}.  None when equal, else a reason."""
    if sorted(src) != sorted(mirror):
        return f"keys differ: source {sorted(src)[:20]}, mirror {sorted(mirror)[:20]}"
    for k in src:
        for c in cols:
            a, b = src[k][c], mirror[k][c]
            if a is None or b is None:
                if a is not None or b is not None:
                    return f"row {k} column {c}: source {a!r}, mirror {b!r}"
                continue
            if CANON[kinds[c]](a) != CANON[kinds[c]](b):
                return f"row {k} column {c}: source {a!r}, mirror {b!r}"
    return None


def mirror_rows(z, table, cols):
    if not z.table_exists(table):
        return {}
    rows = z.query(f'SELECT id, {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{table}"')
    return {r[0]: dict(zip(cols, r[1:])) for r in rows}


def converge(z, table, src_fn, kinds, cols, deadline=180):
    last = {}

    def ok():
        try:
            last["why"] = same_rows(src_fn(), mirror_rows(z, table, cols), kinds, cols)
        except Exception as e:   # a table being made, a process restarting
            last["why"] = repr(e)
        return last["why"] is None
    wait_for(ok, lambda: f"the mirror {table} equal to its source ({last.get('why')})",
             deadline=deadline)


def logged(z, event):
    """The writer logged event (the feed keeps only its latest events)."""
    return f"event={event} " in z.log_text()


# --------------------------------------------------------------------------
# PostgreSQL -> Debezium Server (http sink) -> zx push stream
# --------------------------------------------------------------------------

PG_KINDS = {"c_smallint": "int", "c_integer": "int", "c_bigint": "int", "c_numeric": "num",
            "c_numeric_v": "num", "c_double": "float", "c_real": "float", "c_boolean": "bool",
            "c_text": "text", "c_varchar": "text", "c_char": "text", "c_bytea": "bytes",
            "c_date": "date", "c_time": "time", "c_timestamp": "ts", "c_timestamptz": "ts",
            "c_json": "json", "c_jsonb": "json", "c_uuid": "uuid", "c_enum": "text"}
# without a schema, the columns whose JSON form is the value itself
PG_PLAIN = ["c_smallint", "c_integer", "c_bigint", "c_double", "c_boolean", "c_text",
            "c_varchar", "c_uuid", "c_enum"]

PG_DDL = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE t (id integer PRIMARY KEY, c_smallint smallint, c_integer integer,
  c_bigint bigint, c_numeric numeric(12,3), c_numeric_v numeric, c_double double precision,
  c_real real, c_boolean boolean, c_text text, c_varchar varchar(20), c_char char(3),
  c_bytea bytea, c_date date, c_time time, c_timestamp timestamp, c_timestamptz timestamptz,
  c_json json, c_jsonb jsonb, c_uuid uuid, c_enum mood);
"""


def pg_row(i):
    return (i, i % 32000 - 16000, i * 1000 - 7, i * 10_000_000_019, f"{i}.{i % 1000:03d}",
            f"{i}.000000000000000000{i}", i / 4, 1.5 + i % 4, i % 2 == 0, f"row {i} ünï ☃",
            f"v{i}", "ab", bytes([i % 256, 0, 255]), datetime.date(2020, 1, 1) +
            datetime.timedelta(days=i), datetime.time(i % 24, i % 60, i % 60, i % 1000000),
            datetime.datetime(2024, 2, 29, 12, 0, 0, i % 1000000) + datetime.timedelta(hours=i),
            datetime.datetime(2024, 2, 29, 12, 0, 0, tzinfo=datetime.timezone.utc) +
            datetime.timedelta(minutes=i), json.dumps({"i": i, "a": [1, None]}),
            json.dumps({"k": f"v{i}"}), str(uuid.UUID(int=i)), ["sad", "ok", "happy"][i % 3])


def pg_insert(pg, db, rows):
    with pg.connect(db) as conn:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
                            " %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)


def pg_source(pg, db, cols):
    with pg.connect(db) as conn:
        rows = conn.execute(f"SELECT id, {', '.join(cols)} FROM t").fetchall()
    return {r[0]: dict(zip(cols, r[1:])) for r in rows}


@pytest.mark.pairwise("schemas")  # with schemas on SQLite, without on Postgres
@pytest.mark.parametrize("schemas", [True, False], ids=["schemas", "noschemas"])
def test_postgres_through_the_http_sink(pg, make_zxd, schemas):
    db = pg.create_database()
    name = f"pg{uid()[:8]}"
    try:
        pg.execute(db, PG_DDL)
        pg_insert(pg, db, [pg_row(i) for i in range(1, 201)])      # the snapshot
        # no key: Debezium signs each request (Standard Webhooks), zx checks
        secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
        z = make_zxd({"dbz": {"table": '"{source.table}"', "key_ref": "none",
                              "extra": {"format": "debezium", "key_columns": "[id]",
                                        "history": "true",
                                        "webhook_secret": f'"{secret}"'}}})
        dbz_start(name, {"DBZ_SOURCE": "postgres", "DBZ_DB_PORT": str(pg.port),
                         "DBZ_DB_NAME": db, "DBZ_TABLES": "public.t",
                         "DBZ_SCHEMAS": "true" if schemas else "false", "DBZ_SINK": "http",
                         "DBZ_HTTP_URL": f"http://127.0.0.1:{z.port}/api/streams/dbz/push",
                         "DBZ_HTTP_WEBHOOK_SECRET": secret, "DBZ_SLOT": f"dbz_{name}",
                         "DBZ_EXTRA_PROPS": "debezium.source.skipped.operations=none"})
        cols = list(PG_KINDS) if schemas else PG_PLAIN
        src = lambda: pg_source(pg, db, cols)  # noqa: E731
        converge(z, "t", src, PG_KINDS, cols)
        # changes, with zx's worker and writer SIGKILLed while they flow
        pg_insert(pg, db, [pg_row(i) for i in range(201, 401)])
        os.kill(z.pids()["dbz"], signal.SIGKILL)
        pg.execute(db, "UPDATE t SET c_text = c_text || ' updated', c_numeric = c_numeric + 1 "
                       "WHERE id % 3 = 0")
        pg.execute(db, "UPDATE t SET id = id + 10000 WHERE id % 50 = 1")   # key changes
        os.kill(z.pids()["writer"], signal.SIGKILL)
        pg.execute(db, "DELETE FROM t WHERE id % 7 = 0")
        pg.execute(db, "UPDATE t SET c_jsonb = '{\"changed\": true}', c_bytea = NULL "
                       "WHERE id % 11 = 0")
        converge(z, "t", src, PG_KINDS, cols)
        assert z.count("t__changes") >= 400
        # a truncate, and life after it
        pg.execute(db, "TRUNCATE t")
        pg_insert(pg, db, [pg_row(i) for i in range(500, 510)])
        converge(z, "t", src, PG_KINDS, cols)
        if not schemas:  # said after a commit: wait for it
            wait_for(lambda: logged(z, "types_inferred"), "the types_inferred warning")
        assert logged(z, "types_inferred") == (not schemas)
        if schemas:
            kinds = z.column_kinds("t")
            assert kinds["c_bigint"] == "integer" and kinds["c_timestamptz"] == "timestamp"
    finally:
        dbz_stop(name)
        pg.drop_database(db)


# --------------------------------------------------------------------------
# MariaDB -> Debezium Server (Kafka sink) -> Kafka -> zx Kafka stream
# --------------------------------------------------------------------------

MY_KINDS = {"c_tinyint": "int", "c_smallint": "int", "c_mediumint": "int", "c_int": "int",
            "c_bigint": "int", "c_decimal": "num", "c_double": "float", "c_bool": "int",
            "c_char": "text", "c_varchar": "text", "c_text": "text", "c_blob": "bytes",
            "c_date": "date", "c_time": "time", "c_datetime": "ts", "c_timestamp": "ts",
            "c_year": "int", "c_json": "json", "c_enum": "text", "c_set": "text"}
MY_PLAIN = ["c_tinyint", "c_smallint", "c_mediumint", "c_int", "c_bigint", "c_double", "c_bool",
            "c_char", "c_varchar", "c_text", "c_year", "c_enum", "c_set"]

MY_DDL = """CREATE TABLE t (id INT PRIMARY KEY, c_tinyint TINYINT, c_smallint SMALLINT,
  c_mediumint MEDIUMINT, c_int INT, c_bigint BIGINT, c_decimal DECIMAL(12,3), c_double DOUBLE,
  c_bool BOOLEAN, c_char CHAR(3), c_varchar VARCHAR(20), c_text TEXT, c_blob BLOB, c_date DATE,
  c_time TIME(6), c_datetime DATETIME(6), c_timestamp TIMESTAMP(6) NULL, c_year YEAR,
  c_json JSON, c_enum ENUM('sad','ok','happy'), c_set SET('a','b','c'))"""


def my_row(i):
    return (i, i % 127, i % 32000 - 16000, i * 31, i * 1000 - 7, i * 10_000_000_019,
            f"{i}.{i % 1000:03d}", i / 4, i % 2, "ab", f"v{i}", f"text {i} ünï",
            bytes([i % 256, 0, 255]), datetime.date(2020, 1, 1) + datetime.timedelta(days=i),
            datetime.timedelta(hours=i % 800, seconds=i % 60, microseconds=i % 1000000),
            datetime.datetime(2024, 2, 29, 12, 0, 0, i % 1000000) + datetime.timedelta(hours=i),
            datetime.datetime(2024, 2, 29, 12, 0, 0) + datetime.timedelta(minutes=i),
            1901 + i % 254, json.dumps({"i": i}), ["sad", "ok", "happy"][i % 3],
            ["a", "a,b", "b,c"][i % 3])


def my_conn(env, db):
    import pymysql
    return pymysql.connect(host=env["MYSQL_HOST"], port=int(env["MYSQL_PORT"]),
                           user=env["MYSQL_USER"], password=env["MYSQL_PASSWORD"], database=db,
                           autocommit=True)


def my_exec(env, db, sql, rows=None):
    c = my_conn(env, db)
    try:
        with c.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            if rows:
                cur.executemany(sql, rows)
            else:
                cur.execute(sql)
    finally:
        c.close()


def my_source(env, db, cols):
    c = my_conn(env, db)
    try:
        with c.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            cur.execute(f"SELECT id, {', '.join(cols)} FROM t")
            return {r[0]: dict(zip(cols, r[1:])) for r in cur.fetchall()}
    finally:
        c.close()


@pytest.mark.pairwise("schemas")  # without schemas on SQLite, with on Postgres
@pytest.mark.parametrize("schemas", [False, True], ids=["noschemas", "schemas"])
def test_mariadb_through_kafka(kafka, make_kzxd, schemas):
    env = mariadb_env()
    db = f"dbz{uid()[:8]}"
    name = f"my{uid()[:8]}"
    my_exec(env, "mysql", f"CREATE DATABASE {db}")
    try:
        my_exec(env, db, MY_DDL)
        ins = "INSERT INTO t VALUES (" + ", ".join(["%s"] * 21) + ")"
        my_exec(env, db, ins, [my_row(i) for i in range(1, 201)])
        dbz_start(name, {"DBZ_SOURCE": "mariadb", "DBZ_DB_PORT": env["MYSQL_PORT"],
                         "DBZ_DB_USER": env["MYSQL_USER"], "DBZ_DB_PASSWORD": env["MYSQL_PASSWORD"],
                         "DBZ_DB_NAME": db, "DBZ_TABLES": f"{db}.t", "DBZ_TOPIC_PREFIX": name,
                         "DBZ_SCHEMAS": "true" if schemas else "false", "DBZ_SINK": "kafka",
                         "DBZ_KAFKA_BOOTSTRAP": kafka.addr("plaintext"),
                         "DBZ_EXTRA_PROPS": "debezium.source.skipped.operations=none"})
        z = make_kzxd({"my": {"connection": "c", "regex": f"^{name}\\..*",
                              "table": '"{source.table}"',
                              "extra": {"format": "debezium", "history": "true"}}},
                      {"c": kafka.connection("plaintext")})
        cols = list(MY_KINDS) if schemas else MY_PLAIN
        src = lambda: my_source(env, db, cols)  # noqa: E731
        converge(z, "t", src, MY_KINDS, cols)
        my_exec(env, db, ins, [my_row(i) for i in range(201, 401)])
        os.kill(z.pids()["my"], signal.SIGKILL)
        my_exec(env, db, "UPDATE t SET c_text = CONCAT(c_text, ' updated'), "
                         "c_decimal = c_decimal + 1 WHERE id % 3 = 0")
        my_exec(env, db, "UPDATE t SET id = id + 10000 WHERE id % 50 = 1")
        os.kill(z.pids()["writer"], signal.SIGKILL)
        my_exec(env, db, "DELETE FROM t WHERE id % 7 = 0")
        converge(z, "t", src, MY_KINDS, cols)
        my_exec(env, db, "TRUNCATE TABLE t")
        my_exec(env, db, ins, [my_row(i) for i in range(500, 510)])
        converge(z, "t", src, MY_KINDS, cols)
        lsns = [r[0] for r in z.query('SELECT "_lsn" FROM "t__changes" LIMIT 5')]
        assert all(l.startswith("binlog.") for l in lsns)
        if not schemas:  # said after a commit: wait for it
            wait_for(lambda: logged(z, "types_inferred"), "the types_inferred warning")
        assert logged(z, "types_inferred") == (not schemas)
    finally:
        dbz_stop(name)
        my_exec(env, "mysql", f"DROP DATABASE IF EXISTS {db}")
