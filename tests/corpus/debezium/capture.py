#!/usr/bin/env python3
"""Makes the captured files of tests/corpus/debezium again (see README.md).

Usage: tests/corpus/debezium/capture.py [--keep-services]

Starts PostgreSQL, MariaDB and Kafka with tests/services/* in
$ZX_SERVICES_DIR (default /tmp/zx-dbz-corpus; services already running
there are reused), then for schemas.enable true and false:
  PostgreSQL: a fresh database dbzpg with pg_setup.sql; Debezium Server
    instances into Kafka (topic prefix pg), into the http receiver
    (debezium.d/http_receiver.py) and, with schemas only, into Kafka with
    decimal.handling.mode=string (prefix pgstr); without schemas also the
    http sink in batch mode; pg_changes.sql once they stream.
  MariaDB: a fresh database dbzmy with mariadb_setup.sql; one instance
    into Kafka (prefix my); mariadb_changes.sql once it streams.
Each capture waits for the event of the last statement (id 30), stops the
instances and writes its file here.  Stops the services at the end unless
--keep-services.  Needs python3 with confluent-kafka, psql and mariadb.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer, TopicPartition

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SVC = os.path.join(ROOT, "tests", "services")
ENV = dict(os.environ)
ENV.setdefault("ZX_SERVICES_DIR", "/tmp/zx-dbz-corpus")
# the http sink signs its requests with it (Standard Webhooks)
WEBHOOK_SECRET = "whsec_" + "Y29ycHVzLXNlY3JldC1vZi10aGlydHktdHdvLWJ5dGU="


def say(msg):
    print(f"capture: {msg}", file=sys.stderr, flush=True)


def service(name, *args, env=None):
    out = subprocess.run([os.path.join(SVC, name), *args], env=env or ENV,
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def dbz_start(name, **settings):
    env = dict(ENV)
    env.update({k: str(v) for k, v in settings.items()})
    return service("debezium", "start", name, env=env)


def after_id(value):
    """the id of the row after the change, for a value of either format"""
    if value is None:
        return None
    v = value.get("payload", value) if "schema" in value else value
    return (v.get("after") or {}).get("id")


class KafkaTopic:
    """reads one topic's partition 0 from the offset it had when made"""

    def __init__(self, bootstrap, topic):
        self.topic = topic
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": "corpus",
                           "enable.auto.commit": False})
        try:
            _, self.start = self.c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        except Exception:
            self.start = 0
        self.records = []
        self.assigned = False

    def poll(self):
        if not self.assigned:
            self.c.assign([TopicPartition(self.topic, 0, self.start)])
            self.assigned = True
        while True:
            m = self.c.poll(0.5)
            if m is None:
                return
            if m.error():
                if m.error().retriable() or "UNKNOWN_TOPIC" in str(m.error()):
                    return
                raise RuntimeError(m.error())
            k, v = m.key(), m.value()
            self.records.append((m.topic(), k.decode() if k is not None else None,
                                 v.decode() if v is not None else None))

    def values(self):
        return [json.loads(v) if v is not None else None for _, _, v in self.records]

    def write(self, path):
        with open(path, "w") as f:
            for topic, k, v in self.records:
                # the key and value exactly as Debezium wrote them (compact
                # JSON, one line each); null for a missing key / tombstone
                line = '{"topic": %s, "key": %s, "value": %s}' % (
                    json.dumps(topic), k if k is not None else "null",
                    v if v is not None else "null")
                json.loads(line)
                f.write(line + "\n")
        self.c.close()


class HttpCapture:
    def __init__(self):
        fd, self.path = tempfile.mkstemp(prefix="dbz-http-", suffix=".jsonl")
        os.close(fd)
        self.p = subprocess.Popen([sys.executable, os.path.join(SVC, "debezium.d", "http_receiver.py"),
                                   self.path, "0"], stdout=subprocess.PIPE, text=True)
        self.port = int(self.p.stdout.readline().strip().split("=")[1])

    def requests(self):
        with open(self.path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def values(self):
        out = []
        for r in self.requests():
            b = json.loads(r["body"])
            out.extend(b if isinstance(b, list) else [b])
        return out

    def write(self, path):
        self.p.terminate()
        self.p.wait()
        with open(path, "w") as f:
            for r in self.requests():
                r.pop("status", None)
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        os.unlink(self.path)


def wait_for(outputs, pred, what, timeout=120):
    t = time.time() + timeout
    while time.time() < t:
        for o in outputs:
            if isinstance(o, KafkaTopic):
                o.poll()
        if all(pred(o.values()) for o in outputs):
            return
        time.sleep(0.5)
    raise RuntimeError(f"timed out waiting for {what}")


def psql(pg, db, *args, **kw):
    env = dict(os.environ, PGPASSWORD=pg["PGPASSWORD"])
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg["PGHOST"], "-p",
                    pg["PGPORT"], "-U", pg["PGUSER"], "-d", db, *args], env=env, check=True,
                   stdout=subprocess.DEVNULL, **kw)


def mysql(my, *args, **kw):
    subprocess.run(["mariadb", "--no-defaults", "-h", my["MYSQL_HOST"], "-P", my["MYSQL_PORT"],
                    "-u", my["MYSQL_USER"], f"-p{my['MYSQL_PASSWORD']}", *args], check=True, **kw)


def last_done(values):
    return any(after_id(v) == 30 for v in values)


def capture_pg(pg, kafka, schemas):
    suffix = "schemas" if schemas == "true" else "noschemas"
    say(f"PostgreSQL, schemas.enable={schemas}")
    psql(pg, "postgres", "-c", "DROP DATABASE IF EXISTS dbzpg", "-c", "CREATE DATABASE dbzpg")
    psql(pg, "dbzpg", "-f", os.path.join(HERE, "pg_setup.sql"))
    common = dict(DBZ_SOURCE="postgres", DBZ_DB_PORT=pg["PGPORT"], DBZ_DB_NAME="dbzpg",
                  DBZ_TABLES="public.all_types", DBZ_SCHEMAS=schemas,
                  DBZ_EXTRA_PROPS="debezium.source.skipped.operations=none")
    outputs = {}
    names = []
    http = HttpCapture()
    dbz_start("corpus-pg-http", DBZ_SINK="http", DBZ_TOPIC_PREFIX="pg",
              DBZ_HTTP_URL=f"http://127.0.0.1:{http.port}/api/streams/pg/push",
              DBZ_HTTP_WEBHOOK_SECRET=WEBHOOK_SECRET, **common)
    names.append("corpus-pg-http")
    outputs[f"pg_http_{suffix}.jsonl"] = http
    if schemas == "false":
        batch = HttpCapture()
        dbz_start("corpus-pg-batch", DBZ_SINK="http", DBZ_TOPIC_PREFIX="pg",
                  DBZ_HTTP_URL=f"http://127.0.0.1:{batch.port}/api/streams/pg/push",
                  DBZ_HTTP_WEBHOOK_SECRET=WEBHOOK_SECRET, DBZ_HTTP_BATCH="1", **common)
        names.append("corpus-pg-batch")
        outputs[f"pg_http_batch_{suffix}.jsonl"] = batch
    topic = KafkaTopic(kafka["PLAINTEXT"], "pg.public.all_types")
    dbz_start("corpus-pg-kafka", DBZ_SINK="kafka", DBZ_TOPIC_PREFIX="pg",
              DBZ_KAFKA_BOOTSTRAP=kafka["PLAINTEXT"], **common)
    names.append("corpus-pg-kafka")
    outputs[f"pg_{suffix}.jsonl"] = topic
    if schemas == "true":
        common2 = dict(common)
        common2["DBZ_EXTRA_PROPS"] += "\ndebezium.source.decimal.handling.mode=string"
        t2 = KafkaTopic(kafka["PLAINTEXT"], "pgstr.public.all_types")
        dbz_start("corpus-pg-decstr", DBZ_SINK="kafka", DBZ_TOPIC_PREFIX="pgstr",
                  DBZ_KAFKA_BOOTSTRAP=kafka["PLAINTEXT"], **common2)
        names.append("corpus-pg-decstr")
        outputs[f"pg_decimal_string_{suffix}.jsonl"] = t2
    wait_for(outputs.values(), lambda v: len([x for x in v if x]) >= 3, "the snapshot")
    say("snapshot captured; running pg_changes.sql")
    psql(pg, "dbzpg", "-f", os.path.join(HERE, "pg_changes.sql"))
    wait_for(outputs.values(), last_done, "the last change")
    time.sleep(2)
    for o in outputs.values():
        if isinstance(o, KafkaTopic):
            o.poll()
    for n in names:
        service("debezium", "stop", n)
    for fname, o in outputs.items():
        o.write(os.path.join(HERE, fname))
        say(f"wrote {fname}")


def capture_mariadb(my, kafka, schemas):
    suffix = "schemas" if schemas == "true" else "noschemas"
    say(f"MariaDB, schemas.enable={schemas}")
    mysql(my, "-e", "DROP DATABASE IF EXISTS dbzmy; CREATE DATABASE dbzmy")
    with open(os.path.join(HERE, "mariadb_setup.sql")) as f:
        mysql(my, "dbzmy", stdin=f)
    topic = KafkaTopic(kafka["PLAINTEXT"], "my.dbzmy.all_types")
    dbz_start("corpus-my-kafka", DBZ_SOURCE="mariadb", DBZ_DB_PORT=my["MYSQL_PORT"],
              DBZ_DB_NAME="dbzmy", DBZ_TABLES="dbzmy.all_types", DBZ_SCHEMAS=schemas,
              DBZ_SINK="kafka", DBZ_TOPIC_PREFIX="my", DBZ_KAFKA_BOOTSTRAP=kafka["PLAINTEXT"],
              DBZ_EXTRA_PROPS="debezium.source.skipped.operations=none")
    wait_for([topic], lambda v: len([x for x in v if x]) >= 3, "the snapshot")
    say("snapshot captured; running mariadb_changes.sql")
    with open(os.path.join(HERE, "mariadb_changes.sql")) as f:
        mysql(my, "dbzmy", stdin=f)
    wait_for([topic], last_done, "the last change")
    time.sleep(2)
    topic.poll()
    service("debezium", "stop", "corpus-my-kafka")
    topic.write(os.path.join(HERE, f"mariadb_{suffix}.jsonl"))
    say(f"wrote mariadb_{suffix}.jsonl")


def main():
    keep = "--keep-services" in sys.argv[1:]
    pg = service("postgres", "start")
    my = service("mariadb", "start")
    kafka = service("kafka", "start")
    try:
        for schemas in ("true", "false"):
            capture_pg(pg, kafka, schemas)
            capture_mariadb(my, kafka, schemas)
    finally:
        service("debezium", "stop")
        if not keep:
            for s in ("kafka", "mariadb", "postgres"):
                service(s, "stop")


if __name__ == "__main__":
    main()
