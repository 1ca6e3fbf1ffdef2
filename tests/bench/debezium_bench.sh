#!/usr/bin/env bash
# debezium_bench.sh — Debezium Server's own end-to-end rate, PostgreSQL ->
# Kafka, beside zx applying those very events and zx's own PostgreSQL CDC,
# on the same workload and machine, one after the other (never at once):
#
#  The workload: BENCH_ROWS (default 1,000,000) rows INSERTed in one
#  statement (INSERT ... SELECT FROM generate_series, one transaction) into
#  bench(id bigint primary key, n integer, name text, amount numeric(12,2),
#  at timestamptz) of a fresh database on the PostgreSQL of
#  tests/services/postgres.
#  1. Debezium Server 3.6.1.Final (tests/services/debezium: pgoutput, a
#     filtered publication, JSON with schemas, Kafka sink) started on the
#     empty table, streaming into topic <prefix>.public.bench of the broker
#     of tests/services/kafka.  Timed: from the INSERT's commit until the
#     topic's end offset reaches N (confluent-kafka get_watermark_offsets,
#     polled every 0.2 s).  Then Debezium is stopped (its slot dropped);
#     the topic keeps the N events.
#  2. zx applying those N events: a zxd with one `source: kafka` stream
#     (`format: debezium`, `table: "{source.table}"`), fresh data folder,
#     reading the topic from its oldest offset.  Timed: from zxd's start
#     until the mirror table bench holds N rows.  On each workspace backend:
#     SQLite (<data_dir>/workspace.db) and PostgreSQL (a fresh database on
#     the same server).
#  3. zx's own CDC: a zxd with a `source: postgres` pipeline on bench2 (the
#     same columns, `initial_copy: false`), fresh data folder; once it
#     streams (`zxctl status`: state streaming, the slot made) the same N
#     rows are INSERTed into bench2.  Timed: from that commit until the
#     mirror table bench2 holds N rows.  Both workspace backends.
#  "Holds N rows": every 0.2 s the mirror is asked for the row of the last
#  id (by its key) and, once it is there, for count(*); done when that is N
#  (then count, sum(id) and sum(n) are compared with the source).
#  Prints the figures, the ratios (zx's apply / Debezium's rate, zx from
#  Debezium's events / zx's own CDC), the machine and the versions, and for
#  each step the CPU seconds of Debezium's JVM, the broker, zxd, the
#  Postgres server and the rest of the machine meanwhile (on a shared box
#  the last one says how much other work was slowing the step).
#  No thresholds, no pass/fail: figures only.
#
# Usage: tests/bench/debezium_bench.sh [--help]
#
# JVMs: the services' defaults are tuned for quick tests (C1 only, serial
# GC, small heaps); for a fair figure this script starts Debezium Server
# with the JVM's own defaults (full JIT, G1) and -Xmx2g, and a broker it
# starts itself with Kafka's own kafka-server-start settings (-Xmx1g, G1).
# DBZ_JAVA_OPTS, ZX_KAFKA_HEAP and ZX_KAFKA_JVM_OPTS override them.
#
# Services: PostgreSQL and Kafka of tests/services (in $ZX_SERVICES_DIR):
# a running one is reused and left running, one started here is stopped at
# the end.  It makes database zxbench_src_<pid> (and zxbench_ws_<pid>_<k>
# for the Postgres workspaces), Debezium instance zxbench-<pid> (slot
# dbz_zxbench_<pid>), topic zxbench<pid>.public.bench, and zx's slots
# zx_bench_cdc_<pid>_<backend>; it drops them all, and stops every zxd and
# the Debezium Server it started, whatever happens.  Runs zxd from a copy
# of the binaries taken at the start.  Only 127.0.0.1.  The zxd and
# Debezium logs and the JSON of every step stay in a temporary folder
# printed at the start and the end.
#
# Environment (all optional):
#   BENCH_ROWS        rows (default 1000000)
#   BENCH_BACKENDS    workspace backends, in order (default "sqlite postgres")
#   BENCH_DEADLINE    seconds each timed step may take (default 600 + rows/500)
#   BENCH_KEEP=1      keep the SQLite workspace files and zxd's LMDB stores
#   ZX_BUILD_DIR      build folder (default <repo>/build)
#   ZX_SERVICES_DIR   the services' folders (default /tmp/zx-services)
# Needs psql, python3 with psycopg 3 and confluent-kafka, java 21+ and mvn
# (tests/services/debezium), java (tests/services/kafka).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
for arg in "$@"; do
    case $arg in
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "debezium_bench: unknown argument $arg (--help)" >&2; exit 2 ;;
    esac
done
ROWS=${BENCH_ROWS:-1000000}
case $ROWS in ''|*[!0-9]*) echo "debezium_bench: BENCH_ROWS must be a number" >&2; exit 2 ;; esac
[ "$ROWS" -ge 10 ] && [ "$ROWS" -le 100000000 ] ||
    { echo "debezium_bench: BENCH_ROWS must be 10 to 100000000" >&2; exit 2; }
BACKENDS=${BENCH_BACKENDS:-sqlite postgres}
DEADLINE=${BENCH_DEADLINE:-$(( 600 + ROWS / 500 ))}
BUILD=${ZX_BUILD_DIR:-$REPO/build}
case $BUILD in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
SVC=$REPO/tests/services
PY="python3 $HERE/debezium_bench.py"

die() { echo "debezium_bench: $*" >&2; exit 1; }
say() { echo "debezium_bench: $*" >&2; }
step() { echo "-- $*" >&2; }
for b in $BACKENDS; do
    case $b in sqlite|postgres) ;; *) die "BENCH_BACKENDS: unknown backend $b" ;; esac
done
command -v psql >/dev/null || die "psql is needed (apt-get install postgresql-client)"
[ -x "$BUILD/supervisor/zxd" ] || die "zxd not built at $BUILD/supervisor/zxd (set ZX_BUILD_DIR)"
[ -x "$BUILD/zxctl/zxctl" ] || die "zxctl not built at $BUILD/zxctl/zxctl"
python3 -c 'import psycopg, confluent_kafka' 2>/dev/null ||
    die "python3 with psycopg 3 and confluent-kafka is needed"

WORK=$(mktemp -d /tmp/zx_debezium_bench.XXXXXX)
mkdir -p "$WORK/bin"
cp "$BUILD/supervisor/zxd" "$BUILD/zxctl/zxctl" "$WORK/bin/"
ZXD=$WORK/bin/zxd
ZXCTL=$WORK/bin/zxctl
TAG=$$
SRC_DB=zxbench_src_$TAG
DBZ_NAME=zxbench-$TAG
DBZ_SLOT_NAME=dbz_zxbench_$TAG
PREFIX=zxbench$TAG
TOPIC=$PREFIX.public.bench
DBS=()
SLOTS=()
ZXD_PID=
DBZ_STARTED=0
PG_WAS_RUNNING=0
KAFKA_WAS_RUNNING=0
PG_STARTED=0
KAFKA_STARTED=0
TOPIC_MADE=0

stop_zxd() {  # SIGTERM, then the whole group if it lingers
    [ -n "${ZXD_PID:-}" ] || return 0
    if kill -0 "$ZXD_PID" 2>/dev/null; then
        kill -TERM "$ZXD_PID" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$ZXD_PID" 2>/dev/null || break
            sleep 0.1
        done
    fi
    kill -KILL -- "-$ZXD_PID" 2>/dev/null || true
    wait "$ZXD_PID" 2>/dev/null || true
    ZXD_PID=
}

drop_slot() {  # waits until no walsender holds it, then drops it
    local s=$1 i st
    for i in $(seq 1 100); do
        st=$(psql "$ADMIN" -Atqc "SELECT active FROM pg_replication_slots WHERE slot_name = '$s'" 2>/dev/null || echo "?")
        [ -z "$st" ] && return 0
        if [ "$st" = f ]; then
            psql "$ADMIN" -qc "SELECT pg_drop_replication_slot('$s')" >/dev/null 2>&1 && return 0
        fi
        [ "$i" = 50 ] && psql "$ADMIN" -qc "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '$s' AND active" >/dev/null 2>&1
        sleep 0.2
    done
    say "could not drop the replication slot $s: drop it by hand (SELECT pg_drop_replication_slot('$s'))"
}

stop_dbz() {
    [ "$DBZ_STARTED" = 1 ] || return 0
    "$SVC/debezium" stop "$DBZ_NAME" >/dev/null 2>"$WORK/debezium_stop.err" ||
        { say "tests/services/debezium stop $DBZ_NAME failed:"; tail -5 "$WORK/debezium_stop.err" >&2; }
    DBZ_STARTED=0
}

cleanup() {
    local rc=$?
    set +e
    stop_zxd
    stop_dbz
    if [ -n "${ADMIN:-}" ]; then
        for s in "${SLOTS[@]}" "$DBZ_SLOT_NAME"; do drop_slot "$s"; done
        for d in "${DBS[@]}"; do
            psql "$ADMIN" -qc "DROP DATABASE IF EXISTS \"$d\" WITH (FORCE)" >/dev/null 2>&1 ||
                say "could not drop database $d"
        done
    fi
    if [ "$TOPIC_MADE" = 1 ] && [ "$KAFKA_STARTED" = 0 ] && [ -n "${KAFKA_BOOT:-}" ]; then
        $PY delete-topic --bootstrap "$KAFKA_BOOT" --topic "$TOPIC" 2>/dev/null ||
            say "could not delete topic $TOPIC"
    fi
    if [ "${BENCH_KEEP:-0}" != 1 ]; then
        rm -f "$WORK"/*/var/workspace.db "$WORK"/*/var/workspace.db-wal "$WORK"/*/var/workspace.db-shm \
            "$WORK"/*/var/store.lmdb "$WORK"/*/var/store.lmdb-lock
    fi
    rm -rf "$WORK/bin"
    [ "$KAFKA_STARTED" = 1 ] && { "$SVC/kafka" stop >/dev/null 2>&1 || say "could not stop kafka"; }
    [ "$PG_STARTED" = 1 ] && { "$SVC/postgres" stop >/dev/null 2>&1 || say "could not stop postgres"; }
    echo "debezium_bench: logs and measurements kept in $WORK" >&2
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

newdb() {
    psql "$ADMIN" -qc "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)" >/dev/null 2>&1
    psql "$ADMIN" -qc "CREATE DATABASE \"$1\"" >/dev/null
    DBS+=("$1")
}
now() { date +%s.%N; }
envval() { sed -n "s/^$1=//p" <<<"$2" | head -1; }

# ---- services ------------------------------------------------------------------------
MEM_START="$(free -m | awk '/^Mem:/ {printf "%s MiB total, %s MiB free, %s MiB available", $2, $4, $7}') at the start; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "debezium_bench: $ROWS rows; logs and JSON in $WORK" >&2
"$SVC/postgres" env >/dev/null 2>&1 && PG_WAS_RUNNING=1
step "PostgreSQL (tests/services/postgres)"
PGENV=$("$SVC/postgres" start) || die "tests/services/postgres start failed"
[ "$PG_WAS_RUNNING" = 0 ] && PG_STARTED=1
ADMIN=$(envval DSN "$PGENV")
PG_DATA_DIR=$(envval DATA_DIR "$PGENV")
PG_VERSION=$(envval PG_VERSION "$PGENV")
PG_PORT=$(envval PGPORT "$PGENV")
PG_PASSWORD=$(envval PGPASSWORD "$PGENV")
PG_USER=$(envval PGUSER "$PGENV")
[ -n "$ADMIN" ] || die "tests/services/postgres start printed no DSN"
dsn_of() { echo "${ADMIN%/*}/$1"; }
# what zxd's configurations hold: the password as a reference (as the tests do)
export ZX_BENCH_PG_PASSWORD
ZX_BENCH_PG_PASSWORD=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$PG_PASSWORD")
dsn_config() { echo "postgresql://$PG_USER:\${env:ZX_BENCH_PG_PASSWORD}@127.0.0.1:$PG_PORT/$1"; }

"$SVC/kafka" env >/dev/null 2>&1 && KAFKA_WAS_RUNNING=1
step "Kafka (tests/services/kafka)"
export ZX_KAFKA_HEAP=${ZX_KAFKA_HEAP:--Xms1g -Xmx1g}
export ZX_KAFKA_JVM_OPTS=${ZX_KAFKA_JVM_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true}
KENV=$("$SVC/kafka" start) || die "tests/services/kafka start failed"
[ "$KAFKA_WAS_RUNNING" = 0 ] && KAFKA_STARTED=1
KAFKA_BOOT=$(envval PLAINTEXT "$KENV")
KAFKA_VERSION=$(envval KAFKA_VERSION "$KENV")
KAFKA_DATA=$(envval DATA_DIR "$KENV")
KAFKA_PID=$(cat "$KAFKA_DATA/pid" 2>/dev/null || echo 0)
[ -n "$KAFKA_BOOT" ] || die "tests/services/kafka start printed no PLAINTEXT address"
KAFKA_JVM="$ZX_KAFKA_HEAP $ZX_KAFKA_JVM_OPTS"
[ "$KAFKA_STARTED" = 0 ] && KAFKA_JVM="(already running: its own settings)"

newdb "$SRC_DB"
SRC=$(dsn_of "$SRC_DB")
$PY make-tables --dsn "$SRC" --tables bench,bench2

# ---- 1. Debezium Server -------------------------------------------------------------------
export DBZ_JAVA_OPTS=${DBZ_JAVA_OPTS:--Xmx2g -XX:+ExitOnOutOfMemoryError}
DBZ_JAVA_BIN=${DBZ_JAVA:-java}
[ -z "${DBZ_JAVA:-}" ] && [ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/java ] &&
    DBZ_JAVA_BIN=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java
step "Debezium Server $DBZ_NAME (PostgreSQL $SRC_DB public.bench -> Kafka $TOPIC)"
DBZ_STARTED=1
DBZENV=$(DBZ_SOURCE=postgres DBZ_DB_PORT=$PG_PORT DBZ_DB_NAME=$SRC_DB DBZ_TABLES=public.bench \
    DBZ_SINK=kafka DBZ_KAFKA_BOOTSTRAP=$KAFKA_BOOT DBZ_SCHEMAS=true DBZ_SLOT=$DBZ_SLOT_NAME \
    DBZ_TOPIC_PREFIX=$PREFIX "$SVC/debezium" start "$DBZ_NAME" 2>"$WORK/debezium_start.err") ||
    { tail -20 "$WORK/debezium_start.err" >&2; die "tests/services/debezium start failed"; }
TOPIC_MADE=1
DBZ_PID=$(envval DBZ_PID "$DBZENV")
DBZ_LOG=$(envval LOG "$DBZENV")
DBZ_PROPS=$(envval PROPERTIES "$DBZENV")
[ "$(envval DBZ_TOPICS "$DBZENV")" = "$TOPIC" ] || say "Debezium made topics $(envval DBZ_TOPICS "$DBZENV"), expected $TOPIC"
cp "$DBZ_PROPS" "$WORK/debezium.properties" 2>/dev/null || true
DBZ_JAVA_VERSION=$("$DBZ_JAVA_BIN" -version 2>&1 | head -1)
step "INSERT of $ROWS rows into bench; waiting for the topic's end offset to reach $ROWS"
$PY dbz-run --dsn "$SRC" --table bench --rows "$ROWS" --bootstrap "$KAFKA_BOOT" --topic "$TOPIC" \
    --pid "debezium=$DBZ_PID" --pid "kafka=$KAFKA_PID" --pg-datadir "$PG_DATA_DIR" \
    --deadline "$DEADLINE" >"$WORK/dbz.json" || say "Debezium did not deliver every event: $(cat "$WORK/dbz.json")"
cp "$DBZ_LOG" "$WORK/debezium.log" 2>/dev/null || true
step "stopping Debezium Server"
stop_dbz
EVENTS=$($PY topic-end --bootstrap "$KAFKA_BOOT" --topic "$TOPIC" || echo 0)
TOPIC_BYTES=$(find "$KAFKA_DATA" -path "*/$TOPIC-*/*.log" -type f -printf '%s\n' 2>/dev/null |
    awk '{s += $1} END {print s + 0}')
say "topic $TOPIC: $EVENTS events, $TOPIC_BYTES bytes of log segments"

# ---- zxd ------------------------------------------------------------------------------------
# ws_lines BACKEND K: the workspace section (a fresh database for postgres)
WS_DSN=
ws_lines() {
    if [ "$1" = postgres ]; then
        local db=zxbench_ws_${TAG}_$2
        newdb "$db"
        WS_DSN=$(dsn_of "$db")
        printf '  postgres:\n    dsn: "%s"\n    schema: public\n' "$(dsn_config "$db")"
    else
        WS_DSN=
        printf '  sqlite:\n    path: workspace.db\n'
    fi
}

start_zxd() {  # DIR: start zxd on DIR/zxd.yaml; sets ZXD_PID, SOCK
    local dir=$1
    "$ZXD" -c "$dir/zxd.yaml" --check >"$dir/check.txt" 2>&1 ||
        { cat "$dir/check.txt" >&2; die "zxd --check refused $dir/zxd.yaml"; }
    setsid "$ZXD" -c "$dir/zxd.yaml" >"$dir/zxd.log" 2>&1 </dev/null &
    ZXD_PID=$!
    SOCK=$dir/var/zxd.sock
}

wait_sock() {
    local i
    for i in $(seq 1 300); do
        [ -S "$SOCK" ] && "$ZXCTL" -s "$SOCK" status >/dev/null 2>&1 && return 0
        kill -0 "$ZXD_PID" 2>/dev/null || { tail -20 "$1/zxd.log" >&2; return 1; }
        sleep 0.1
    done
    return 1
}

log_note() {  # DIR: warnings and errors of the zxd log
    local n
    n=$(grep -c 'level=error\|level=warn' "$1/zxd.log" 2>/dev/null || true)
    if [ "${n:-0}" != 0 ]; then
        say "the zxd log $1/zxd.log has $n warning/error lines; the first:"
        grep -m5 'level=error\|level=warn' "$1/zxd.log" | cut -c1-300 >&2
    fi
}

mirror_of() {  # BACKEND DIR
    if [ "$1" = postgres ]; then echo "$WS_DSN"; else echo "$2/var/workspace.db"; fi
}

K=0
# ---- 2. zx applying Debezium's events from Kafka ------------------------------------------------
if [ "$EVENTS" -ge "$ROWS" ] 2>/dev/null; then
    for b in $BACKENDS; do
        K=$((K + 1))
        dir=$WORK/kafka_$b
        mkdir -p "$dir"
        {
            printf 'server:\n  data_dir: ./var\n  control_socket: zxd.sock\n  http:\n    listen: "127.0.0.1:0"\n'
            printf 'workspace:\n'
            ws_lines "$b" "$K"
            cat <<EOF
pipelines:
  dbz:
    direction: stream
    source: kafka
    connection: k
    topic: $TOPIC
    format: debezium
    table: "{source.table}"
connections:
  k:
    kind: kafka
    brokers: ["$KAFKA_BOOT"]
    security: plaintext
EOF
        } >"$dir/zxd.yaml"         # a { } group: ws_lines set WS_DSN here
        step "zx: $TOPIC ($EVENTS Debezium events) -> $b workspace (log $dir/zxd.log)"
        T0=$(now)
        start_zxd "$dir"
        $PY zx-wait --t0 "$T0" --backend "$b" --mirror "$(mirror_of "$b" "$dir")" --table bench \
            --rows "$ROWS" --pid "zxd=$ZXD_PID" --pid "kafka=$KAFKA_PID" --pg-datadir "$PG_DATA_DIR" \
            --deadline "$DEADLINE" >"$WORK/kafka_$b.json" ||
            { say "zx did not apply every event: $(cat "$WORK/kafka_$b.json")"; tail -15 "$dir/zxd.log" >&2; }
        $PY check --dsn "$SRC" --table bench --backend "$b" --mirror "$(mirror_of "$b" "$dir")" \
            --mirror-table bench >"$WORK/check_kafka_$b.json" || true
        log_note "$dir"
        stop_zxd
    done
else
    say "the topic holds $EVENTS events, not $ROWS: zx's runs on it are skipped"
fi

# ---- 3. zx's own Postgres CDC ---------------------------------------------------------------------
for b in $BACKENDS; do
    K=$((K + 1))
    dir=$WORK/cdc_$b
    pipe=bench_cdc_${TAG}_$b
    slot=zx_$pipe
    mkdir -p "$dir"
    psql "$SRC" -qc 'TRUNCATE bench2' >/dev/null
    {
        printf 'server:\n  data_dir: ./var\n  control_socket: zxd.sock\n  http:\n    listen: "127.0.0.1:0"\n'
        printf 'workspace:\n'
        ws_lines "$b" "$K"
        cat <<EOF
pipelines:
  $pipe:
    direction: stream
    source: postgres
    connection: src
    tables: [public.bench2]
    initial_copy: false
connections:
  src:
    kind: postgres
    dsn: "$(dsn_config "$SRC_DB")"
EOF
    } >"$dir/zxd.yaml"
    step "zx: Postgres CDC of $SRC_DB public.bench2 -> $b workspace (pipeline $pipe, log $dir/zxd.log)"
    SLOTS+=("$slot")
    start_zxd "$dir"
    if ! wait_sock "$dir" ||
       ! $PY wait-streaming --zxctl "$ZXCTL" --sock "$SOCK" --pipeline "$pipe" --dsn "$SRC" \
            --slot "$slot" >"$WORK/streaming_$b.json"; then
        say "zx's CDC pipeline did not stream: $(cat "$WORK/streaming_$b.json" 2>/dev/null)"
        tail -15 "$dir/zxd.log" >&2
        echo '{"error": "the pipeline did not stream"}' >"$WORK/cdc_$b.json"
        stop_zxd; drop_slot "$slot"
        continue
    fi
    step "INSERT of $ROWS rows into bench2; waiting for the mirror"
    $PY cdc-run --dsn "$SRC" --table bench2 --rows "$ROWS" --backend "$b" \
        --mirror "$(mirror_of "$b" "$dir")" --mirror-table bench2 --pid "zxd=$ZXD_PID" \
        --pid "kafka=$KAFKA_PID" --pg-datadir "$PG_DATA_DIR" --deadline "$DEADLINE" \
        >"$WORK/cdc_$b.json" ||
        { say "zx's CDC did not mirror every row: $(cat "$WORK/cdc_$b.json")"; tail -15 "$dir/zxd.log" >&2; }
    $PY check --dsn "$SRC" --table bench2 --backend "$b" --mirror "$(mirror_of "$b" "$dir")" \
        --mirror-table bench2 >"$WORK/check_cdc_$b.json" || true
    log_note "$dir"
    stop_zxd
    drop_slot "$slot"
done

# ---- the report ------------------------------------------------------------------------------------
META_MACHINE="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))" \
META_MEMORY="$MEM_START" \
META_LOAD="$(free -m | awk '/^Mem:/ {printf "%s MiB free, %s MiB available", $4, $7}') and load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" \
META_PG="PostgreSQL $PG_VERSION ($(psql "$ADMIN" -Atc "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'shared_buffers', 'logical_decoding_work_mem')")); source and Postgres workspaces on one server" \
META_KAFKA="Apache Kafka $KAFKA_VERSION (tests/services/kafka, KRaft, 1 node; JVM: $KAFKA_JVM)" \
META_DBZ="Debezium Server ${DBZ_VERSION:-3.6.1.Final} (postgres pgoutput -> kafka sink, JSON with schemas; $DBZ_JAVA_VERSION, $DBZ_JAVA_OPTS)" \
META_ZX="$("$ZXD" --version 2>&1 | head -1), $BUILD/supervisor/zxd (sha256 $(sha256sum "$ZXD" | cut -c1-12)); librdkafka $(python3 -c 'import ctypes, sys; l = ctypes.CDLL(sys.argv[1]); l.rd_kafka_version_str.restype = ctypes.c_char_p; print(l.rd_kafka_version_str().decode())' "$(ldd "$ZXD" | awk '/librdkafka/ {print $3; exit}')" 2>/dev/null || echo '?')" \
META_TOPIC="topic $TOPIC: $EVENTS events, $(python3 -c "print(f'{$TOPIC_BYTES / 1048576:.0f} MiB, {$TOPIC_BYTES / max($EVENTS, 1):.0f} B/event')") in its log segments" \
META_ROWS=$ROWS META_BACKENDS=$BACKENDS python3 -c '
import json, os
e = os.environ
print(json.dumps({"rows": int(e["META_ROWS"]), "backends": e["META_BACKENDS"].split(),
    "machine": e["META_MACHINE"], "memory": e["META_MEMORY"], "load": e["META_LOAD"],
    "postgres": e["META_PG"], "kafka": e["META_KAFKA"], "debezium": e["META_DBZ"],
    "zx": e["META_ZX"], "topic_note": e["META_TOPIC"]}))' >"$WORK/meta.json"
$PY report --dir "$WORK"
