#!/usr/bin/env bash
# kinesis_bench.sh — Kinesis to SQLite: zxd against a peer, Bento v1.20.0.
#
# What it measures.  A 4-shard stream on kinesalite (tests/services/kinesalite,
# a Kinesis emulator in node) is pre-filled with BENCH_RECORDS (default
# 1,000,000) JSON records of ~200 bytes (unique ids 1..N, the fields
# kafka_bench.sh uses; the id is the partition key), with PutRecords of 500
# from several processes (the fill time is printed).  Then the whole stream
# is read into a SQLite file, one consumer after the other, both from the
# oldest record of every shard:
#   1. zxd: one `source: kinesis` stream pipeline through a `kind: aws`
#      connection whose endpoint is kinesalite's (dummy static keys), into
#      table bench of <data_dir>/workspace.db;
#   2. Bento: input aws_kinesis (its checkpoints and shard leases in a
#      DynamoDB table on moto, tests/services/moto: the input's `endpoint` is
#      kinesalite's and AWS_ENDPOINT_URL_DYNAMODB points its DynamoDB client at
#      moto), output sql_insert (driver sqlite, modernc.org/sqlite) with the
#      batching kafka_bench.sh found best for it (100 rows or 1 s, 2 in
#      flight), the table created by init_statement, one column per field.
# For each run (start of the process until the table holds every record,
# polled with max(rowid), confirmed with count(*)) it prints:
#   - records/s;
#   - CPU: user+sys of the consumer's process tree (each process's own and
#     its reaped children's, from /proc/<pid>/stat, sampled every 0.5 s and
#     when the table is complete), per record;
#   - the emulators' CPU over the same window (kinesalite; moto for Bento's
#     checkpoints) and the whole machine's, and which one limits the run:
#     kinesalite is one node thread, so kinesalite near 100% of a core means
#     the emulator is the bottleneck, not the consumer;
#   - the rows after the stop and the distinct ids (duplicates);
# then a summary line with both rates and the ratio zx/bento.
#
# kinesalite 3.3.3 predates the StreamARN field, by which Bento names the
# stream in ListShards, GetShardIterator and GetRecords: the script starts
# kinesalite with kinesalite_streamarn.js preloaded (NODE_OPTIONS), which
# copies the ARN's stream name into StreamName; both consumers meet that
# same emulator.  A kinesalite already running without it serves --zx-only
# runs only.
# Services: kinesalite (and moto, for Bento) are started if they are not
# running (with ZX_SERVICES_DIR as tests/services use it) and stopped at
# the end if this script started them; a running one is used and left
# running.  The stream (zxbench-<random>) goes with kinesalite (in memory);
# on a kinesalite it did not start the script deletes it.  Only 127.0.0.1.
# Never run in CI: it is a benchmark, it prints figures and asserts none.
#
# Usage: tests/bench/kinesis_bench.sh [--zx-only | --peer-only]
#   e.g. BENCH_RECORDS=20000 tests/bench/kinesis_bench.sh   (a quick check)
# Environment (all optional):
#   ZX_BUILD_DIR             build folder (default $PWD/build)
#   BENCH_RECORDS            records in the stream (default 1000000)
#   ZX_BENCH_SHARDS          shards of the stream (default 4)
#   ZX_BENCH_FILL_PROCS      processes putting records (default 3)
#   ZX_BENCH_DEADLINE        seconds each consumer may take (default 1800)
#   ZX_BENCH_ZX_EXTRA        lines added under zx's pipeline (indented 4)
#   ZX_BENCH_BENTO_BATCH     Bento's sql_insert batching.count (default 100)
#   ZX_BENCH_BENTO_INFLIGHT  Bento's sql_insert max_in_flight (default 2)
#   BENTO                    the Bento binary (default: the one
#                            tests/bench/build_bento.sh caches; built then,
#                            ~15 min on 2 cores)
#   ZX_SERVICES_DIR          where tests/services keep their state
#   ZX_BENCH_KEEP=1          keep the temporary folder
# Needs python3 with boto3; node and npm for kinesalite; moto[server] for
# Bento's DynamoDB (tests/services/moto installs it with pip).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${ZX_BUILD_DIR:-$PWD/build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
ZXD=$BUILD/supervisor/zxd
ROWS=${BENCH_RECORDS:-1000000}
SHARDS=${ZX_BENCH_SHARDS:-4}
PROCS=${ZX_BENCH_FILL_PROCS:-3}
DEADLINE=${ZX_BENCH_DEADLINE:-1800}
BATCH=${ZX_BENCH_BENTO_BATCH:-100}
INFLIGHT=${ZX_BENCH_BENTO_INFLIGHT:-2}
KINESALITE=$REPO/tests/services/kinesalite
MOTO=$REPO/tests/services/moto
PY=$HERE/kinesis_bench.py

RUN_ZX=1 RUN_PEER=1
for a in "$@"; do
    case $a in
        --zx-only) RUN_PEER=0 ;;
        --peer-only) RUN_ZX=0 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "usage: $0 [--zx-only | --peer-only]" >&2; exit 2 ;;
    esac
done
[ "$RUN_ZX$RUN_PEER" != 00 ] || { echo "kinesis_bench: --zx-only and --peer-only exclude each other" >&2; exit 2; }

say() { echo "kinesis_bench: $*" >&2; }
die() { say "$*"; exit 1; }

command -v python3 >/dev/null || die "python3 is needed"
python3 -c 'import boto3' 2>/dev/null || die "python3 needs boto3 (pip install boto3)"

WORK=
WATCHER=
KIN_STARTED=0
MOTO_STARTED=0
ENDPOINT=
STREAM=
cleanup() {
    local rc=$? f pid
    trap - EXIT INT TERM
    [ -n "$WATCHER" ] && kill -TERM "$WATCHER" 2>/dev/null && wait "$WATCHER" 2>/dev/null || true
    for f in "${WORK:-/nonexistent}"/*/pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        [ -n "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null || true
    done
    if [ "$KIN_STARTED" = 1 ]; then
        "$KINESALITE" stop >/dev/null || say "could not stop kinesalite"
    elif [ -n "$STREAM" ]; then
        python3 -c 'import sys, boto3
boto3.client("kinesis", endpoint_url=sys.argv[1], region_name="us-east-1",
             aws_access_key_id="zxtestkey", aws_secret_access_key="zxtestsecret"
             ).delete_stream(StreamName=sys.argv[2])' "$ENDPOINT" "$STREAM" 2>/dev/null ||
            say "could not delete stream $STREAM"
    fi
    if [ "$MOTO_STARTED" = 1 ]; then
        "$MOTO" stop >/dev/null || say "could not stop moto"
    fi
    if [ -n "$WORK" ]; then
        if [ "${ZX_BENCH_KEEP:-0}" = 1 ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'say interrupted; exit 130' INT TERM
WORK=$(mktemp -d /tmp/zxkinesis.XXXXXX)

# ---- the peer's binary (before anything long) --------------------------------
if [ "$RUN_PEER" = 1 ]; then
    BENTO=${BENTO:-${XDG_CACHE_HOME:-$HOME/.cache}/zx/bento-v1.20.0/bento}
    if [ ! -x "$BENTO" ]; then
        say "no Bento binary at $BENTO: building it (tests/bench/build_bento.sh, ~15 min)"
        BENTO=$("$HERE/build_bento.sh") || die "could not build Bento"
    fi
fi
if [ "$RUN_ZX" = 1 ] && [ ! -x "$ZXD" ]; then
    die "zxd not built at $ZXD (ninja -C build supervisor/zxd, or set ZX_BUILD_DIR)"
fi

# ---- services ----------------------------------------------------------------
# svc_env SCRIPT VAR: the running service's VAR, or empty
svc_env() { "$1" env 2>/dev/null | sed -n "s/^$2=//p"; }
if ! ENDPOINT=$(svc_env "$KINESALITE" KINESIS_ENDPOINT) || [ -z "$ENDPOINT" ]; then
    say "starting kinesalite (tests/services/kinesalite start, with kinesalite_streamarn.js)"
    KIN_STARTED=1
    NODE_OPTIONS="--require $HERE/kinesalite_streamarn.js" "$KINESALITE" start >/dev/null ||
        die "tests/services/kinesalite start failed"
    ENDPOINT=$(svc_env "$KINESALITE" KINESIS_ENDPOINT)
fi
[ -n "$ENDPOINT" ] || die "kinesalite printed no KINESIS_ENDPOINT"
KIN_PID=$(cat "${ZX_SERVICES_DIR:-/tmp/zx-services}/kinesalite/kinesalite.pid")
EMUS="kinesalite:$KIN_PID"
if [ "$RUN_PEER" = 1 ]; then
    if ! MOTO_EP=$(svc_env "$MOTO" AWS_ENDPOINT) || [ -z "$MOTO_EP" ]; then
        say "starting moto (tests/services/moto start), for Bento's DynamoDB"
        MOTO_STARTED=1
        "$MOTO" start >/dev/null || die "tests/services/moto start failed"
        MOTO_EP=$(svc_env "$MOTO" AWS_ENDPOINT)
    fi
    [ -n "$MOTO_EP" ] || die "moto printed no AWS_ENDPOINT"
    MOTO_PID=$(cat "${ZX_SERVICES_DIR:-/tmp/zx-services}/moto/moto.pid")
fi

# ---- the stream --------------------------------------------------------------
STREAM_NAME=zxbench-$(python3 -c 'import secrets; print(secrets.token_hex(4))')
STREAM=$STREAM_NAME
say "filling $STREAM ($SHARDS shards) with $ROWS records from $PROCS processes"
FILL=$(python3 "$PY" fill "$ENDPOINT" "$STREAM" "$SHARDS" "$ROWS" "$PROCS") ||
    die "could not fill the stream"
read -r FILL_S FILL_BYTES PER_SHARD <<<"$FILL"

if [ "$RUN_PEER" = 1 ] && ! python3 "$PY" streamarn "$ENDPOINT" "$STREAM"; then
    say "the running kinesalite refuses StreamARN (it was not started by this script with"
    say "kinesalite_streamarn.js): Bento cannot read from it.  Stop it"
    die "(ZX_SERVICES_DIR=${ZX_SERVICES_DIR:-} tests/services/kinesalite stop) and run again, or use --zx-only"
fi

echo "== Kinesis (kinesalite) -> SQLite: zx and Bento =="
echo "kinesalite at $ENDPOINT (pid $KIN_PID); stream $STREAM, $SHARDS shards: $PER_SHARD records"
echo "data: $ROWS JSON records, $((FILL_BYTES / ROWS)) bytes on average"
echo "fill: $FILL_S s with PutRecords of 500 from $PROCS processes ($(python3 -c "import sys; print(f'{int(sys.argv[1]) / float(sys.argv[2]):,.0f}')" "$ROWS" "$FILL_S") records/s)"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) before the runs"

FAILED=0
# consume LABEL DB DIR EMUS -- CMD...: one consumer run, in the background
# so that a signal to this script is handled at once
consume() {
    local label=$1 db=$2 dir=$3 emus=$4
    shift 5
    python3 "$PY" run "$label" "$db" bench "$ROWS" "$DEADLINE" "$dir" "$emus" -- "$@" &
    WATCHER=$!
    local rc=0
    wait "$WATCHER" || rc=$?
    WATCHER=
    return $rc
}
report() {  # LABEL DIR NAME: the figures, and the log's tail after a failure
    if [ -f "$2/result.json" ]; then
        python3 "$PY" report "$2/result.json"
        python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1]))["ok"])' \
            "$2/result.json" && return 0
    else
        echo "$1: FAILED: no result"
    fi
    echo "--- $3 log (last 30 lines) ---"
    tail -30 "$2/log" 2>/dev/null || true
}

# ---- zx ----------------------------------------------------------------------
if [ "$RUN_ZX" = 1 ]; then
    echo
    echo "-- zx ($ZXD) --"
    ZDIR=$WORK/zx
    mkdir -p "$ZDIR/var"
    cat >"$ZDIR/zxd.yaml" <<EOF
server:
  data_dir: $ZDIR/var
  http:
    listen: "127.0.0.1:0"
connections:
  bench_aws:
    kind: aws
    region: us-east-1
    endpoint: $ENDPOINT
    access_key_id: zxtestkey
    secret_access_key: zxtestsecret
pipelines:
  bench:
    direction: stream
    source: kinesis
    connection: bench_aws
    stream: $STREAM
    start: oldest
    table: bench
EOF
    [ -z "${ZX_BENCH_ZX_EXTRA:-}" ] || printf '%s\n' "$ZX_BENCH_ZX_EXTRA" >>"$ZDIR/zxd.yaml"
    if ! CHECK=$("$ZXD" --check -c "$ZDIR/zxd.yaml" 2>&1); then
        echo "zx: SKIPPED: zxd --check rejects the Kinesis pipeline:"
        printf '%s\n' "$CHECK" | head -20 | sed 's/^/    /'
        FAILED=1
    else
        consume zx "$ZDIR/var/workspace.db" "$ZDIR" "$EMUS" -- "$ZXD" -c "$ZDIR/zxd.yaml" || FAILED=1
        report zx "$ZDIR" zxd
        echo "zx config:"; sed 's/^/    /' "$ZDIR/zxd.yaml"
    fi
fi

# ---- Bento -------------------------------------------------------------------
if [ "$RUN_PEER" = 1 ]; then
    echo
    echo "-- bento ($BENTO, $("$BENTO" --version 2>/dev/null | head -1 || true)) --"
    BDIR=$WORK/bento
    mkdir -p "$BDIR"
    cat >"$BDIR/bento.yaml" <<EOF
http:
  enabled: false
logger:
  level: warn
metrics:
  none: {}
input:
  aws_kinesis:
    streams: ["$STREAM"]
    dynamodb:
      table: bento_bench_checkpoints
      create: true
    start_from_oldest: true
    region: us-east-1
    endpoint: $ENDPOINT
    credentials:
      id: zxtestkey
      secret: zxtestsecret
output:
  sql_insert:
    driver: sqlite
    dsn: "file:$BDIR/bench.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
    table: bench
    columns: [id, user, event, url, ts, amount, ok, tags, note]
    args_mapping: |
      root = [ this.id, this.user, this.event, this.url, this.ts, this.amount, this.ok, this.tags.string(), this.note ]
    init_statement: |
      CREATE TABLE IF NOT EXISTS bench (id INTEGER, user TEXT, event TEXT, url TEXT, ts TEXT, amount REAL, ok INTEGER, tags TEXT, note TEXT)
    max_in_flight: $INFLIGHT
    batching:
      count: $BATCH
      period: 1s
EOF
    # the input's DynamoDB client (checkpoints, leases) goes to moto; its
    # Kinesis client to kinesalite (the config's endpoint); no IMDS lookups
    consume bento "$BDIR/bench.db" "$BDIR" "$EMUS,moto:$MOTO_PID" -- \
        env AWS_ENDPOINT_URL_DYNAMODB="$MOTO_EP" AWS_EC2_METADATA_DISABLED=true \
        "$BENTO" -c "$BDIR/bento.yaml" || FAILED=1
    report bento "$BDIR" bento
    echo "bento config (env AWS_ENDPOINT_URL_DYNAMODB=$MOTO_EP):"; sed 's/^/    /' "$BDIR/bento.yaml"
fi

echo
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$PY" summary "$WORK/zx/result.json" "$WORK/bento/result.json"
exit $FAILED
