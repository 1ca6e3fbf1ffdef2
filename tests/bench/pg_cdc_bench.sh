#!/usr/bin/env bash
# pg_cdc_bench.sh — the Postgres change-data-capture pipeline (`source:
# postgres`) measured on this machine, on each workspace backend (SQLite,
# Postgres), beside the physical limit measured in the same run:
#
#  1. Initial copy: a source table of ZX_BENCH_ROWS rows of 10 columns of
#     mixed types (bigint key, int, numeric(12,2), text of 20-40 bytes,
#     timestamptz, boolean, double precision, uuid, small jsonb, date).
#     zx: time from zxd's start to the moment the log says event=copy_done
#     AND the mirror holds every row (a count(*) polled once copy_done is
#     logged).  The limit: psql `\copy (SELECT * ...) TO pstdout` piped
#     into psql `\copy ... FROM pstdin` between two databases of the same
#     server (COPY ... TO STDOUT into COPY ... FROM STDIN, text format), into
#     a table with its primary key (as zx's mirror has) and without index.
#  2. Streaming apply, on the same zxd once the copy is done: a pgbench load
#     (pg_cdc_load.sql: one insert, one update, one delete per transaction,
#     synchronous_commit on as on a production source) at a fixed rate
#     (ZX_BENCH_RATE changes/s, pgbench -R) and as fast as pgbench goes.
#     Changes = the table's n_tup_ins + n_tup_upd + n_tup_del over the load;
#     applied changes/s = changes / (time from the load's start until the
#     slot's confirmed_flush_lsn reaches pg_current_wal_lsn() taken when
#     the load ended; zx confirms only what the workspace committed).
#     Latency: a probe commits a marker row into bench_probe (in the same
#     pipeline) every ~20 ms and polls the mirror every ~4 ms (SQLite: a
#     read-only sqlite3 connection to the workspace file; Postgres: the
#     workspace database) for it; p50 / p99 / max of source commit -> seen
#     in the mirror, over the markers committed during the load.
#     Then the backlog: zxd stopped, the max-rate load made, zxd started
#     again; changes / time from its start until the slot confirms the
#     load's WAL end: the apply rate with the cores left to zx.
#
# Usage: tests/bench/pg_cdc_bench.sh [--quick]
#   --quick   ZX_BENCH_ROWS=200000 and 10 s loads unless set (a few minutes)
#
# Starts the Postgres of tests/services/postgres (reuses a running one and
# then leaves it running; stops it at the end only if it started it).
# Makes its own databases (zx_bench_src_<pid>, zx_bench_copy_<pid>,
# zx_bench_ws_<pid>) and drops them, stops every zxd it started and drops
# the replication slots of its pipelines (zx_bench_cdc_<pid>_<backend>),
# whatever happens.  Runs zxd from a copy of the binary taken at the start
# (a rebuild meanwhile does not change it).  Only 127.0.0.1.  No
# thresholds: it prints figures.  The zxd logs and the JSON of every
# measurement stay in a temporary folder printed at the start and the end.
#
# The machine is shared by everything: pgbench, the source server, zxd and
# (Postgres backend) the workspace server run on the same cores, so the
# "max" figures are those of this box with its load generator on it.  Each
# measurement prints the CPU seconds of zxd's processes, of the Postgres
# backends, of pgbench, and of everything else on the machine meanwhile
# (other tests or builds running at the same time lower the figures: see
# that last number before trusting one).
#
# Environment (all optional):
#   ZX_BENCH_ROWS            rows of the source table (default 5000000)
#   ZX_BENCH_STREAM_SECONDS  seconds of each pgbench load (default 30)
#   ZX_BENCH_RATE            changes/s of the fixed-rate load (default 10000)
#   ZX_BENCH_CLIENTS         pgbench -c (default 8)
#   ZX_BENCH_JOBS            pgbench -j (default 2)
#   ZX_BENCH_BACKENDS        workspace backends, in order (default "sqlite postgres")
#   ZX_BENCH_SKIP_STREAM=1   the initial copy only
#   ZX_BENCH_BACKLOG=0       no backlog measurement (the end of 2. above)
#   ZX_BENCH_KEEP=1          keep the SQLite workspace files too (big)
#   ZX_BENCH_WS_EXTRA        one more line under `workspace:` of zxd's
#                            configuration (e.g. "commit_interval: 100ms")
#   ZX_BUILD_DIR             build folder (default <repo>/build)
#   ZX_PG_BIN                PostgreSQL binaries (default /usr/lib/postgresql/15/bin: pgbench)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
QUICK=0
for arg in "$@"; do
    case $arg in
        --quick) QUICK=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "pg_cdc_bench: unknown argument $arg (--quick, --help)" >&2; exit 2 ;;
    esac
done
if [ "$QUICK" = 1 ]; then
    ROWS=${ZX_BENCH_ROWS:-200000}
    SECS=${ZX_BENCH_STREAM_SECONDS:-10}
else
    ROWS=${ZX_BENCH_ROWS:-5000000}
    SECS=${ZX_BENCH_STREAM_SECONDS:-30}
fi
RATE=${ZX_BENCH_RATE:-10000}
CLIENTS=${ZX_BENCH_CLIENTS:-8}
JOBS=${ZX_BENCH_JOBS:-2}
BACKENDS=${ZX_BENCH_BACKENDS:-sqlite postgres}
BUILD=${ZX_BUILD_DIR:-$REPO/build}
PGBIN=${ZX_PG_BIN:-/usr/lib/postgresql/15/bin}
PGBENCH=$PGBIN/pgbench
PY="python3 $HERE/pg_cdc_bench.py"
# three changes per pgbench transaction (pg_cdc_load.sql)
TPS=$(( (RATE + 2) / 3 ))

die() { echo "pg_cdc_bench: $*" >&2; exit 1; }
say() { echo "pg_cdc_bench: $*" >&2; }
command -v psql >/dev/null || die "psql is needed (apt-get install postgresql-client)"
[ -x "$PGBENCH" ] || die "pgbench not found at $PGBENCH (set ZX_PG_BIN)"
[ -x "$BUILD/supervisor/zxd" ] || die "zxd not built at $BUILD/supervisor/zxd (set ZX_BUILD_DIR)"
python3 -c 'import psycopg' 2>/dev/null || die "python3 with psycopg 3 is needed"
for b in $BACKENDS; do
    case $b in sqlite|postgres) ;; *) die "ZX_BENCH_BACKENDS: unknown backend $b" ;; esac
done

# ---- the run's folder, binaries, Postgres -----------------------------------
WORK=$(mktemp -d /tmp/zx_pg_cdc_bench.XXXXXX)
mkdir -p "$WORK/bin"
cp "$BUILD/supervisor/zxd" "$BUILD/zxctl/zxctl" "$WORK/bin/"
ZXD=$WORK/bin/zxd

PG_WAS_RUNNING=0
"$REPO/tests/services/postgres" env >/dev/null 2>&1 && PG_WAS_RUNNING=1
PGENV=$("$REPO/tests/services/postgres" start)
eval "$(echo "$PGENV" | sed -n 's/^\(DSN\|DATA_DIR\|PG_VERSION\)=/PG_\1=/p')"
[ -n "${PG_DSN:-}" ] || die "tests/services/postgres start printed no DSN"
ADMIN=$PG_DSN
dsn_of() { echo "${PG_DSN%/*}/$1"; }

TAG=$$
SRC_DB=zx_bench_src_$TAG
COPY_DB=zx_bench_copy_$TAG
WS_DB=zx_bench_ws_$TAG
SRC=$(dsn_of "$SRC_DB")
DBS=()
SLOTS=()
ZXD_PID=

stop_zxd() {  # SIGTERM (drains), then the whole group if it lingers
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
    local s=$1 i
    for i in $(seq 1 100); do
        local st
        st=$(psql "$ADMIN" -Atqc "SELECT active FROM pg_replication_slots WHERE slot_name = '$s'" 2>/dev/null || echo "?")
        [ -z "$st" ] && return 0                       # not there (any more)
        if [ "$st" = f ]; then
            psql "$ADMIN" -qc "SELECT pg_drop_replication_slot('$s')" >/dev/null 2>&1 && return 0
        fi
        [ "$i" = 50 ] && psql "$ADMIN" -qc "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '$s' AND active" >/dev/null 2>&1
        sleep 0.2
    done
    say "could not drop the replication slot $s: drop it by hand (SELECT pg_drop_replication_slot('$s'))"
}

cleanup() {
    local rc=$?
    set +e
    stop_zxd
    for s in "${SLOTS[@]}"; do drop_slot "$s"; done
    for d in "${DBS[@]}"; do
        psql "$ADMIN" -qc "DROP DATABASE IF EXISTS \"$d\" WITH (FORCE)" >/dev/null 2>&1 ||
            say "could not drop database $d"
    done
    if [ "${ZX_BENCH_KEEP:-0}" != 1 ]; then
        rm -f "$WORK"/*/var/workspace.db "$WORK"/*/var/workspace.db-wal "$WORK"/*/var/workspace.db-shm
    fi
    rm -rf "$WORK/bin"
    if [ "$PG_WAS_RUNNING" = 0 ]; then
        "$REPO/tests/services/postgres" stop >/dev/null 2>&1 || true
    fi
    echo "pg_cdc_bench: zxd logs and measurements kept in $WORK" >&2
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

# ---- the source table --------------------------------------------------------
TABLE_DDL='(id bigint NOT NULL, qty int NOT NULL, amount numeric(12,2), label text,
    created_at timestamptz, active boolean, score double precision, ref uuid,
    attrs jsonb, day date)'

echo "== PostgreSQL $PG_PG_VERSION ($(psql "$ADMIN" -Atc "SELECT string_agg(name || ' ' || setting, ', ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'shared_buffers', 'max_wal_size')")), $(nproc) cores =="
echo "zxd: $("$ZXD" --version 2>&1 | head -1), copied from $BUILD/supervisor/zxd (modified $(date -u -r "$BUILD/supervisor/zxd" '+%F %T') UTC, sha256 $(sha256sum "$ZXD" | cut -c1-12)); repo at $(git -C "$REPO" log -1 --format='%h %s' 2>/dev/null | cut -c1-100)"
echo "logs and JSON: $WORK; load average now: $(cut -d' ' -f1-3 /proc/loadavg) (each CPU line below says what the rest of the machine used meanwhile)"
newdb "$SRC_DB"
say "making $ROWS source rows in $SRC_DB"
T0=$(now)
psql "$SRC" -v ON_ERROR_STOP=1 -q >/dev/null <<EOF
CREATE TABLE bench_src $TABLE_DDL;
INSERT INTO bench_src
  SELECT g, g % 1000, (g % 100000) / 100.0, 'label-' || substr(md5(g::text), 1, 14 + g % 21),
         timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second', g % 3 = 0, g / 7.0,
         md5(g::text)::uuid, jsonb_build_object('k', g % 100, 'tag', 't' || g % 7),
         date '2020-01-01' + g % 3000
  FROM generate_series(1, $ROWS) g;
ALTER TABLE bench_src ADD PRIMARY KEY (id);
CREATE SEQUENCE bench_ins_seq START 1000000000000;
CREATE TABLE bench_probe (id bigint PRIMARY KEY, t_src timestamptz);
VACUUM (FREEZE, ANALYZE) bench_src;
EOF
T1=$(now)
say "source made in $(python3 -c "print(f'{$T1 - $T0:.1f}')") s"
echo "source: bench_src, $ROWS rows, $(psql "$SRC" -Atc "SELECT pg_size_pretty(pg_table_size('bench_src')) || ' of heap, ' || round(avg(pg_column_size(b.*))) || ' B per row' FROM bench_src b WHERE id <= 10000")"

# ---- 1. the physical limit: psql \copy between two databases ------------------
newdb "$COPY_DB"
COPYDST=$(dsn_of "$COPY_DB")
echo "== psql \\copy (SELECT * FROM bench_src) TO pstdout | psql \\copy bench_src FROM pstdin =="
PIPE="psql '$SRC' -qc '\\copy (SELECT * FROM bench_src) TO pstdout' | psql '$COPYDST' -v ON_ERROR_STOP=1 -qc '\\copy bench_src FROM pstdin'"
baseline() {  # $1: what the table has, $2: name of the JSON; sets RATE_OUT
    $PY timed --pg-datadir "$PG_DATA_DIR" --pg-word "$SRC_DB" --pg-word "$COPY_DB" "$PIPE" \
        >"$WORK/copy_$2.json" || die "the psql \\copy pipe failed"
    local n secs
    n=$(psql "$COPYDST" -Atc 'SELECT count(*) FROM bench_src')
    secs=$($PY field "$WORK/copy_$2.json" seconds)
    RATE_OUT=$(python3 -c "print(round($n / $secs))")
    echo "rows/s of \\copy into a table $1: $(python3 -c "print(f'{$RATE_OUT:,}')")  ($n rows in $secs s)"
    $PY show-cpu "$WORK/copy_$2.json"
}
psql "$COPYDST" -qc "CREATE TABLE bench_src $TABLE_DDL; ALTER TABLE bench_src ADD PRIMARY KEY (id)" >/dev/null
baseline "with its primary key (as zx's mirror)" pk
PK_RATE=$RATE_OUT
psql "$COPYDST" -qc 'DROP TABLE bench_src' >/dev/null
psql "$COPYDST" -qc "CREATE TABLE bench_src $TABLE_DDL" >/dev/null
baseline "without index" noindex
NOIDX_RATE=$RATE_OUT
psql "$ADMIN" -qc "DROP DATABASE \"$COPY_DB\" WITH (FORCE)" >/dev/null
printf '{"pk": %s, "noindex": %s}\n' "$PK_RATE" "$NOIDX_RATE" >"$WORK/baseline.json"

# ---- 2. zx, per workspace backend ----------------------------------------------
run_backend() {
    local b=$1 dir=$WORK/$1 pipeline=bench_cdc_${TAG}_$1 slot=zx_bench_cdc_${TAG}_$1
    local name mirror ws_lines port n t0 words
    name=$([ "$b" = sqlite ] && echo SQLite || echo Postgres)
    mkdir -p "$dir"
    # the source as the previous backend's load left it: the expected rows
    psql "$SRC" -qc 'TRUNCATE bench_probe' >/dev/null
    psql "$SRC" -qc 'VACUUM ANALYZE bench_src' >/dev/null
    n=$(psql "$SRC" -Atc 'SELECT count(*) FROM bench_src')
    words=(--pg-word "$SRC_DB" --pg-word walsender)
    if [ "$b" = postgres ]; then
        newdb "$WS_DB"
        export ZX_BENCH_WS_DSN
        ZX_BENCH_WS_DSN=$(dsn_of "$WS_DB")
        mirror=$ZX_BENCH_WS_DSN
        ws_lines=$'  postgres:\n    dsn: ${env:ZX_BENCH_WS_DSN}'
        words+=(--pg-word "$WS_DB")
    else
        mirror=$dir/var/workspace.db
        ws_lines=$'  sqlite:\n    path: workspace.db'
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    cat >"$dir/zxd.yaml" <<EOF
server:
  data_dir: ./var
  control_socket: zxd.sock
  http:
    listen: "127.0.0.1:$port"
workspace:
$ws_lines${ZX_BENCH_WS_EXTRA:+
  $ZX_BENCH_WS_EXTRA}
pipelines:
  $pipeline:
    direction: stream
    source: postgres
    connection: src
    tables: [bench_src, bench_probe]
    initial_copy: true
    slot: $slot
connections:
  src:
    kind: postgres
    dsn: \${env:ZX_BENCH_SRC_DSN}
EOF
    export ZX_BENCH_SRC_DSN=$SRC
    "$ZXD" -c "$dir/zxd.yaml" --check >/dev/null || die "zxd --check refused $dir/zxd.yaml"
    SLOTS+=("$slot")
    echo "== zx initial copy, $name workspace (pipeline $pipeline, $n rows; log $dir/zxd.log) =="
    t0=$(now)
    setsid "$ZXD" -c "$dir/zxd.yaml" >"$dir/zxd.log" 2>&1 </dev/null &
    ZXD_PID=$!
    if ! $PY copy-wait --log "$dir/zxd.log" --backend "$b" --mirror "$mirror" --rows "$n" \
            --t0 "$t0" --zxd-pid "$ZXD_PID" --pg-datadir "$PG_DATA_DIR" "${words[@]}" \
            --deadline $(( 600 + n / 2000 )) --verbose >"$dir/copy.json"; then
        cat "$dir/copy.json"
        tail -20 "$dir/zxd.log" >&2
        stop_zxd; drop_slot "$slot"
        return 1
    fi
    $PY show-copy "$dir/copy.json" "$b"

    if [ "${ZX_BENCH_SKIP_STREAM:-0}" != 1 ]; then
        echo "== zx streaming apply, $name workspace (pgbench: $CLIENTS clients, $JOBS threads, $SECS s; 3 changes per transaction) =="
        $PY caught-up --src "$SRC" --slot "$slot" >/dev/null ||
            say "the slot had not caught up after the copy (going on)"
        $PY stream --src "$SRC" --slot "$slot" --backend "$b" --mirror "$mirror" \
            --pgbench "$PGBENCH" --script "$HERE/pg_cdc_load.sql" --seconds "$SECS" \
            --tps "$TPS" --clients "$CLIENTS" --jobs "$JOBS" --nrows "$ROWS" \
            --zxd-pid "$ZXD_PID" --pg-datadir "$PG_DATA_DIR" "${words[@]}" \
            >"$dir/stream_rate.json" || true
        $PY show-stream "$dir/stream_rate.json" "fixed rate $RATE changes/s (pgbench -R $TPS)"
        $PY stream --src "$SRC" --slot "$slot" --backend "$b" --mirror "$mirror" \
            --pgbench "$PGBENCH" --script "$HERE/pg_cdc_load.sql" --seconds "$SECS" \
            --tps 0 --clients "$CLIENTS" --jobs "$JOBS" --nrows "$ROWS" \
            --zxd-pid "$ZXD_PID" --pg-datadir "$PG_DATA_DIR" "${words[@]}" \
            >"$dir/stream_max.json" || true
        $PY show-stream "$dir/stream_max.json" "max rate (pgbench without -R)"
        if [ "${ZX_BENCH_BACKLOG:-1}" = 1 ]; then
            # the same load with zxd stopped, then zxd started on the backlog:
            # the apply rate without pgbench taking the cores meanwhile
            stop_zxd
            $PY load --src "$SRC" --pgbench "$PGBENCH" --script "$HERE/pg_cdc_load.sql" \
                --seconds "$SECS" --tps 0 --clients "$CLIENTS" --jobs "$JOBS" --nrows "$ROWS" \
                >"$dir/backlog_load.json" || true
            local lsn
            lsn=$($PY field "$dir/backlog_load.json" lsn_end 2>/dev/null || true)
            t0=$(now)
            setsid "$ZXD" -c "$dir/zxd.yaml" >>"$dir/zxd.log" 2>&1 </dev/null &
            ZXD_PID=$!
            if [ -n "$lsn" ]; then
                $PY drain --src "$SRC" --slot "$slot" --lsn "$lsn" --t0 "$t0" \
                    --zxd-pid "$ZXD_PID" --pg-datadir "$PG_DATA_DIR" "${words[@]}" \
                    >"$dir/backlog_drain.json" || true
            fi
            $PY show-backlog "$dir/backlog_load.json" "$dir/backlog_drain.json" \
                "backlog (the max-rate load made with zxd stopped)"
        fi
    fi
    if grep -q 'level=error\|level=warn\|event=cdc_failed' "$dir/zxd.log"; then
        echo "  (the zxd log has errors: $dir/zxd.log)"
    fi
    stop_zxd
    drop_slot "$slot"
    if [ "$b" = postgres ]; then
        psql "$ADMIN" -qc "DROP DATABASE IF EXISTS \"$WS_DB\" WITH (FORCE)" >/dev/null
    fi
    return 0
}

for b in $BACKENDS; do
    run_backend "$b" || echo "zx on $b: failed (see above)"
done

echo "== summary ($ROWS rows; loads of $SECS s; fixed rate $RATE changes/s) =="
$PY summary --dir "$WORK" --baseline "$WORK/baseline.json" $BACKENDS
