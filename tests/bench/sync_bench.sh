#!/usr/bin/env bash
# sync_bench.sh — zx's reverse syncs (`direction: out`) measured on this
# machine, side by side with pyarrow and dlt on the same rows, one after
# the other (never at once):
#
#  1. A workspace database (PostgreSQL, tests/services/postgres) with a
#     table bench_rows of ZX_BENCH_ROWS rows: id bigint primary key, email
#     text (~20 bytes), plan text, amount double precision, active boolean,
#     updated_at timestamptz.  zxd runs with it as its workspace.
#     The floor, measured first: `psql \copy (SELECT ...) TO /dev/null`
#     (reading the rows out; and again in COPY's binary form, as zx reads
#     these columns) and `\copy ... TO STDOUT | psql \copy ... FROM
#     STDIN` into a fresh table with its primary key in the destination
#     database (what a first upsert cannot beat).
#  2. zx to_parquet: mode replace, files, format parquet, zstd.  Beside it
#     pyarrow.parquet.write_table (zstd) of the same rows, read once into an
#     Arrow table beforehand (the read is not counted); zx's Parquet writer
#     alone on the same rows (tests/tools/pqwrite, when built); and dlt: its
#     sql_database source (backend pyarrow) -> filesystem destination,
#     Parquet (zstd too).  Time, rows/s, file size of each.
#  3. zx to_pg: mode upsert, key [id], into a table of another database of
#     the same server; first run, then UPDATE of 1% of the rows (every
#     100th id: plan, amount, updated_at) and a second run, which sends
#     only those.  Beside it dlt: sql_database (pyarrow) -> postgres,
#     write_disposition merge, primary_key id, first run and, after the
#     same update, a second run with an incremental cursor on updated_at
#     (reads the changed rows only) and one without a cursor (re-reads and
#     merges every row, as a query without such a column needs).  And zx
#     to_pg_cursor: the same upsert with `cursor: updated_at` (its second
#     run reads only the rows at or past the first run's mark), into its
#     own table, beside dlt with its cursor.  Each destination is checked
#     against the source (count, sum, a hash).
#  zx's times are the run record's ended_at - started_at (`zxctl --json run
#  NAME --wait`), the wall clock of that zxctl beside them; dlt's the wall
#  clock of pipeline.run() in a process where dlt is already imported.
#  The ratios printed are other's time / zx's time.  No thresholds.
#  Each step also prints the CPU seconds used meanwhile by zxd, by the
#  Postgres server, by the helper (dlt, psql) and by the rest of the
#  machine: on a shared box the last one tells how much other work slowed
#  the step.
#
# Usage: tests/bench/sync_bench.sh [--quick]
#   --quick   ZX_BENCH_ROWS=100000 unless set (a minute or two)
#
# Installs dlt from PyPI when missing (pip --break-system-packages
# "dlt[postgres,parquet]==$DLT_VERSION" sqlalchemy psycopg2-binary; the
# local filesystem destination needs no extra).  Starts the Postgres of
# tests/services/postgres (reuses a running one and then leaves it
# running; stops it at the end only if it started it).  Makes its own
# databases (zxbench_ws_<pid>, zxbench_dst_<pid>, zxbench_dlt_<pid>) and
# drops them, and the author role zx made, and stops its zxd, whatever
# happens.  Runs zxd from a copy of the binaries taken at the start.
# Only 127.0.0.1.  The zxd log and the JSON of every step stay in a
# temporary folder printed at the start and the end.
#
# Environment (all optional):
#   ZX_BENCH_ROWS       rows of bench_rows (default 1000000)
#   ZX_BENCH_SKIP_DLT=1 zx and pyarrow only
#   ZX_BENCH_DLT_FORMAT loader_file_format of dlt -> postgres (default: dlt's
#                       own choice: csv, loaded with COPY, for its Arrow rows)
#   ZX_BENCH_KEEP=1     keep the Parquet files
#   ZX_BUILD_DIR        build folder (default <repo>/build)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
DLT_VERSION=1.31.0
QUICK=0
for arg in "$@"; do
    case $arg in
        --quick) QUICK=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "sync_bench: unknown argument $arg (--quick, --help)" >&2; exit 2 ;;
    esac
done
if [ "$QUICK" = 1 ]; then ROWS=${ZX_BENCH_ROWS:-100000}; else ROWS=${ZX_BENCH_ROWS:-1000000}; fi
case $ROWS in ''|*[!0-9]*) echo "sync_bench: ZX_BENCH_ROWS must be a number" >&2; exit 2 ;; esac
[ "$ROWS" -ge 100 ] && [ "$ROWS" -le 100000000 ] ||
    { echo "sync_bench: ZX_BENCH_ROWS must be 100 to 100000000" >&2; exit 2; }
BUILD=${ZX_BUILD_DIR:-$REPO/build}
PY="python3 $HERE/sync_bench.py"
SKIP_DLT=${ZX_BENCH_SKIP_DLT:-0}

die() { echo "sync_bench: $*" >&2; exit 1; }
say() { echo "sync_bench: $*" >&2; }
command -v psql >/dev/null || die "psql is needed (apt-get install postgresql-client)"
[ -x "$BUILD/supervisor/zxd" ] || die "zxd not built at $BUILD/supervisor/zxd (set ZX_BUILD_DIR)"
[ -x "$BUILD/zxctl/zxctl" ] || die "zxctl not built at $BUILD/zxctl/zxctl"
python3 -c 'import psycopg, pyarrow' 2>/dev/null || die "python3 with psycopg 3 and pyarrow is needed"
if [ "$SKIP_DLT" != 1 ] && ! python3 -c 'import dlt, sqlalchemy, psycopg2' 2>/dev/null; then
    say "installing dlt $DLT_VERSION from PyPI"
    pip install -q --break-system-packages "dlt[postgres,parquet]==$DLT_VERSION" sqlalchemy \
        psycopg2-binary >&2 || die "pip install dlt failed"
fi

T_START=$(date +%s.%N)
WORK=$(mktemp -d /tmp/zx_sync_bench.XXXXXX)
mkdir -p "$WORK/bin" "$WORK/out" "$WORK/zxd"
cp "$BUILD/supervisor/zxd" "$BUILD/zxctl/zxctl" "$WORK/bin/"
PQW=()
[ -x "$BUILD/tests/tools/pqwrite" ] && cp "$BUILD/tests/tools/pqwrite" "$WORK/bin/" &&
    PQW=(--pqwrite "$WORK/bin/pqwrite")
ZXD=$WORK/bin/zxd
ZXCTL=$WORK/bin/zxctl

PG_WAS_RUNNING=0
"$REPO/tests/services/postgres" env >/dev/null 2>&1 && PG_WAS_RUNNING=1
PGENV=$("$REPO/tests/services/postgres" start)
eval "$(echo "$PGENV" | sed -n 's/^\(DSN\|DATA_DIR\|PG_VERSION\)=/PG_\1=/p')"
[ -n "${PG_DSN:-}" ] || die "tests/services/postgres start printed no DSN"
ADMIN=$PG_DSN
dsn_of() { echo "${PG_DSN%/*}/$1"; }

TAG=$$
WS_DB=zxbench_ws_$TAG
DST_DB=zxbench_dst_$TAG
DLT_DB=zxbench_dlt_$TAG
AUTHOR=zxbench_$TAG
WS=$(dsn_of "$WS_DB")
DST=$(dsn_of "$DST_DB")
DLTDST=$(dsn_of "$DLT_DB")
DBS=()
ZXD_PID=

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

cleanup() {
    local rc=$?
    set +e
    stop_zxd
    for d in "${DBS[@]}"; do
        psql "$ADMIN" -qc "DROP DATABASE IF EXISTS \"$d\" WITH (FORCE)" >/dev/null 2>&1 ||
            say "could not drop database $d"
    done
    # the author's login role zx made (zx_author_<name>_<hex>), server-wide
    for r in $(psql "$ADMIN" -Atc "SELECT rolname FROM pg_roles WHERE rolname LIKE 'zx\\_author\\_${AUTHOR}\\_%'" 2>/dev/null); do
        psql "$ADMIN" -qc "DROP ROLE IF EXISTS \"$r\"" >/dev/null 2>&1 || say "could not drop role $r"
    done
    if [ "${ZX_BENCH_KEEP:-0}" != 1 ]; then
        rm -rf "$WORK/out" "$WORK/dlt_out" "$WORK/arrow_ref.parquet"
    fi
    rm -rf "$WORK/bin" "$WORK/dlt_pipelines"
    if [ "$PG_WAS_RUNNING" = 0 ]; then
        "$REPO/tests/services/postgres" stop >/dev/null 2>&1 || true
    fi
    echo "sync_bench: zxd log and measurements kept in $WORK" >&2
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
step() { echo "-- $*" >&2; }

# ---- what runs where ------------------------------------------------------------------
ZX_COMMIT=$(git -C "$REPO" log -1 --format='%h %ad' --date=short 2>/dev/null || echo "?")
DIRTY=$(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null | wc -l)
{
    printf '{"machine": "%s cores, %s, load average at start %s",\n' "$(nproc)" \
        "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//' || echo '?')" \
        "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf ' "postgres": "%s (%s), one server for source and destinations",\n' "$PG_PG_VERSION" \
        "$(psql "$ADMIN" -Atc "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'shared_buffers')")"
    printf ' "zx": "%s, repo at commit %s%s; zxd copied from %s (sha256 %s)",\n' \
        "$("$ZXD" --version 2>&1 | head -1)" "$ZX_COMMIT" \
        "$([ "$DIRTY" != 0 ] && echo " + $DIRTY files changed in the work tree")" \
        "$BUILD/supervisor/zxd" "$(sha256sum "$ZXD" | cut -c1-12)"
    if [ "$SKIP_DLT" != 1 ]; then
        printf ' "dlt": "%s (sqlalchemy %s, psycopg2 %s)",\n' \
            "$(python3 -c 'import dlt; print(dlt.__version__)' 2>/dev/null)" \
            "$(python3 -c 'import sqlalchemy; print(sqlalchemy.__version__)' 2>/dev/null)" \
            "$(python3 -c 'import psycopg2; print(psycopg2.__version__.split()[0])' 2>/dev/null)"
    fi
    printf ' "pyarrow": "%s (python %s)"}\n' "$(python3 -c 'import pyarrow; print(pyarrow.__version__)')" \
        "$(python3 -c 'import platform; print(platform.python_version())')"
} >"$WORK/meta.json"
echo "sync_bench: $ROWS rows; zxd log and JSON in $WORK" >&2

# ---- 1. the workspace --------------------------------------------------------------------------
newdb "$WS_DB"
newdb "$DST_DB"
step "making $ROWS rows in $WS_DB.bench_rows"
$PY make-table --dsn "$WS" --rows "$ROWS" >"$WORK/table.json" || die "could not make the table"

# ---- zxd -------------------------------------------------------------------------------------------
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$WORK/zxd/zxd.yaml" <<EOF
server:
  data_dir: ./var
  control_socket: zxd.sock
  file_roots: [$WORK/out]
  http:
    listen: "127.0.0.1:$PORT"
workspace:
  postgres:
    dsn: \${env:ZX_BENCH_WS_DSN}
pipelines:
  to_pg:
    direction: out
    author: $AUTHOR
    query: "SELECT id, email, plan, amount, active, updated_at FROM bench_rows"
    destination: {connection: dst, table: bench_rows}
    mode: upsert
    key: [id]
  to_pg_cursor:
    direction: out
    author: $AUTHOR
    query: "SELECT id, email, plan, amount, active, updated_at FROM bench_rows"
    destination: {connection: dst, table: bench_rows_cursor}
    mode: upsert
    key: [id]
    cursor: updated_at
  to_parquet:
    direction: out
    author: $AUTHOR
    query: "SELECT id, email, plan, amount, active, updated_at FROM bench_rows"
    destination: {files: {path: $WORK/out, format: parquet, compression: zstd}}
    mode: replace
authors:
  $AUTHOR: {tables: [bench_rows]}
connections:
  dst:
    kind: postgres
    dsn: \${env:ZX_BENCH_DST_DSN}
EOF
export ZX_BENCH_WS_DSN=$WS ZX_BENCH_DST_DSN=$DST
"$ZXD" -c "$WORK/zxd/zxd.yaml" --check >"$WORK/zxd/check.txt" 2>&1 ||
    { cat "$WORK/zxd/check.txt" >&2; die "zxd --check refused $WORK/zxd/zxd.yaml"; }
setsid "$ZXD" -c "$WORK/zxd/zxd.yaml" >"$WORK/zxd/zxd.log" 2>&1 </dev/null &
ZXD_PID=$!
SOCK=$WORK/zxd/var/zxd.sock
[ -S "$WORK/zxd/zxd.sock" ] && SOCK=$WORK/zxd/zxd.sock
for _ in $(seq 1 300); do
    for s in "$WORK/zxd/zxd.sock" "$WORK/zxd/var/zxd.sock"; do
        [ -S "$s" ] && SOCK=$s
    done
    [ -S "$SOCK" ] && "$ZXCTL" -s "$SOCK" status >/dev/null 2>&1 && break
    kill -0 "$ZXD_PID" 2>/dev/null || { tail -20 "$WORK/zxd/zxd.log" >&2; die "zxd exited"; }
    sleep 0.1
done
"$ZXCTL" -s "$SOCK" status >/dev/null 2>&1 || { tail -20 "$WORK/zxd/zxd.log" >&2; die "zxd did not answer"; }

zx_run() {  # NAME JSON [--file F]: one timed run; its error and log tail if it failed
    local name=$1 out=$2; shift 2
    if ! $PY zx-run --zxctl "$ZXCTL" --sock "$SOCK" --name "$name" --zxd-pid "$ZXD_PID" \
            --pg-datadir "$PG_DATA_DIR" "$@" >"$WORK/$out.json"; then
        say "zx run $name failed: $($PY field "$WORK/$out.json" error)"
        say "the zxd log's last lines:"; tail -15 "$WORK/zxd/zxd.log" >&2
        return 1
    fi
}

# ---- the floor: psql's COPY --------------------------------------------------------------------------
step "psql \\copy references"
$PY copy-ref --src "$WS" --dst "$DST" --pg-datadir "$PG_DATA_DIR" >"$WORK/copy_ref.json" ||
    say "the psql \\copy reference failed"

# ---- 2. Parquet ---------------------------------------------------------------------------------------
step "zx to_parquet"
zx_run to_parquet zx_parquet --file "$WORK/out/to_parquet.parquet" || true
step "pyarrow write_table reference"
$PY arrow-ref --dsn "$WS" --out "$WORK/arrow_ref.parquet" --zx-file "$WORK/out/to_parquet.parquet" \
    "${PQW[@]}" >"$WORK/arrow_ref.json" || say "the pyarrow reference failed"
rm -f "$WORK/arrow_ref.parquet"
if [ "$SKIP_DLT" != 1 ]; then
    step "dlt -> filesystem parquet"
    $PY dlt-fs --pg-datadir "$PG_DATA_DIR" --src "$WS" --out "$WORK/dlt_out" --pipelines-dir "$WORK/dlt_pipelines" \
        >"$WORK/dlt_fs.json" || say "dlt -> filesystem failed"
    rm -rf "$WORK/dlt_out"
fi

# ---- 3. Postgres: first runs, the update, second runs --------------------------------------------------
step "zx to_pg, first run"
zx_run to_pg zx_pg_1 && $PY check-pg --src "$WS" --dst "$DST" --table bench_rows >"$WORK/check_zx_1.json"
step "zx to_pg_cursor (cursor: updated_at), first run"
zx_run to_pg_cursor zx_pg_c1 && $PY check-pg --src "$WS" --dst "$DST" --table bench_rows_cursor \
    >"$WORK/check_zx_c1.json"
DLT_FMT=()
[ -n "${ZX_BENCH_DLT_FORMAT:-}" ] && DLT_FMT=(--format "$ZX_BENCH_DLT_FORMAT")
if [ "$SKIP_DLT" != 1 ]; then
    newdb "$DLT_DB"
    step "dlt -> postgres merge, first run"
    $PY dlt-pg --pg-datadir "$PG_DATA_DIR" --src "$WS" --dst "$DLTDST" --pipelines-dir "$WORK/dlt_pipelines" --run 1 "${DLT_FMT[@]}" \
        >"$WORK/dlt_pg_1.json" && $PY check-pg --src "$WS" --dst "$DLTDST" --table bench.bench_rows \
        >"$WORK/check_dlt_1.json" || say "dlt -> postgres (first run) failed"
fi
step "UPDATE of 1% of the rows"
$PY update --dsn "$WS" >"$WORK/update.json"
step "zx to_pg, second run"
zx_run to_pg zx_pg_2 && $PY check-pg --src "$WS" --dst "$DST" --table bench_rows >"$WORK/check_zx_2.json"
step "zx to_pg_cursor (cursor: updated_at), second run"
zx_run to_pg_cursor zx_pg_c2 && $PY check-pg --src "$WS" --dst "$DST" --table bench_rows_cursor \
    >"$WORK/check_zx_c2.json"
if [ "$SKIP_DLT" != 1 ]; then
    step "dlt -> postgres merge, second run (cursor on updated_at)"
    $PY dlt-pg --pg-datadir "$PG_DATA_DIR" --src "$WS" --dst "$DLTDST" --pipelines-dir "$WORK/dlt_pipelines" --run 2 "${DLT_FMT[@]}" \
        >"$WORK/dlt_pg_2.json" && $PY check-pg --src "$WS" --dst "$DLTDST" --table bench.bench_rows \
        >"$WORK/check_dlt_2.json" || say "dlt -> postgres (second run) failed"
    step "dlt -> postgres merge, second run without cursor (every row again)"
    $PY dlt-pg --pg-datadir "$PG_DATA_DIR" --src "$WS" --dst "$DLTDST" --pipelines-dir "$WORK/dlt_pipelines" --run 3 --no-cursor \
        "${DLT_FMT[@]}" >"$WORK/dlt_pg_3.json" || say "dlt -> postgres (no cursor) failed"
fi
stop_zxd

$PY report --dir "$WORK"
echo "whole script: $(python3 -c "print(f'{$(now) - $T_START:.0f}')") s (the table's making and the checks included)"
