#!/usr/bin/env bash
# bench_generate.sh — how many rows a second `source: generate` (rate: max)
# gets into each workspace: one zxd, one pipeline making ZX_BENCH_ROWS rows
# (default 2,000,000) of a template with one field of every generator,
# timed from the first committed rows to the last.  Prints one
# line per workspace.  Not run in CI; no thresholds: it prints figures.
#
# SQLite always; PostgreSQL with the server of tests/services/postgres
# (started, or reused when running; honours ZX_SERVICES_DIR), in a fresh
# database dropped after.  Binaries from $ZX_BUILD_DIR (default build/).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${ZX_BUILD_DIR:-$REPO/build}
ROWS=${ZX_BENCH_ROWS:-2000000}
WORKSPACES=${ZX_BENCH_WORKSPACES:-sqlite,postgres}
die() { echo "bench_generate: $*" >&2; exit 1; }
[ -x "$BUILD/supervisor/zxd" ] && [ -x "$BUILD/supervisor/zxctl" ] ||
    die "build zxd and zxctl first (ninja -C build supervisor/zxd supervisor/zxctl)"
[[ "$ROWS" =~ ^[1-9][0-9]*$ ]] && [ "$ROWS" -le 4294967295 ] || die "ZX_BENCH_ROWS: 1 to 4294967295"

ROOT=$(mktemp -d /tmp/zxgenb.XXXXXX)
ZXD_PID=
PG_ADMIN=
PG_DB=
cleanup() {
    [ -n "$ZXD_PID" ] && kill "$ZXD_PID" 2>/dev/null && wait "$ZXD_PID" 2>/dev/null || true
    [ -n "$PG_DB" ] && psql "$PG_ADMIN" -qc "DROP DATABASE IF EXISTS \"$PG_DB\" WITH (FORCE)" \
        >/dev/null 2>&1 || true
    rm -rf "$ROOT"
}
trap cleanup EXIT

# run WORKSPACE_YAML LABEL: one zxd, ROWS rows, prints the figure
run() {
    local ws="$1" label="$2"
    local d="$ROOT/$label"
    mkdir -p "$d"
    cat >"$d/zxd.yaml" <<YAML
server:
  data_dir: ./var
  control_socket: zxd.sock
  http:
    listen: "127.0.0.1:0"
workspace:
$ws
pipelines:
  gen:
    direction: stream
    source: generate
    table: gen
    rate: max
    count: $ROWS
    fields:
      id: sequence
      user_id: int 1..1000
      kind: choice click,view,buy
      at: timestamp
      uid: uuid
      price: float 0..100
      meta: 'json {"a": 1}'
      flag: bool
YAML
    "$BUILD/supervisor/zxd" -c "$d/zxd.yaml" >"$d/zxd.log" 2>&1 &
    ZXD_PID=$!
    local t0 t1 n started=0
    # timed on committed rows: from the first ones seen in the table (so
    # start-up is not counted) to the last
    while [ "$started" -le 0 ] 2>/dev/null; do
        kill -0 "$ZXD_PID" 2>/dev/null || { tail -20 "$d/zxd.log"; die "zxd exited ($label)"; }
        started=$(count_rows "$label" "$d")
        sleep 0.05
    done
    t0=$(date +%s.%N)
    n=$started
    while [ "$n" != "$ROWS" ]; do
        kill -0 "$ZXD_PID" 2>/dev/null || { tail -20 "$d/zxd.log"; die "zxd exited ($label)"; }
        sleep 0.1
        n=$(count_rows "$label" "$d")
    done
    t1=$(date +%s.%N)
    kill "$ZXD_PID"; wait "$ZXD_PID" || true; ZXD_PID=
    python3 -c "import sys; n=$ROWS-$started; s=$t1-$t0; print(f'$label: {n:,} rows in {s:.2f} s = {n/s:,.0f} rows/s')"
}

count_rows() {
    if [ "$1" = sqlite ]; then
        python3 -c "import sqlite3,sys; print(sqlite3.connect('file:$2/var/workspace.db?mode=ro', uri=True).execute('SELECT count(*) FROM gen').fetchone()[0])" 2>/dev/null || echo 0
    else
        psql "$PG_DSN_DB" -Atc 'SELECT count(*) FROM gen' 2>/dev/null || echo 0
    fi
}

echo "== bench_generate: $ROWS rows, rate: max, 8 fields ($(nproc) cores) =="
case ",$WORKSPACES," in *,sqlite,*)
    run "  sqlite:
    path: workspace.db" sqlite ;;
esac
case ",$WORKSPACES," in *,postgres,*)
    command -v psql >/dev/null || die "psql is needed (apt-get install postgresql-client)"
    eval "$("$REPO/tests/services/postgres" start | sed -n 's/^\(DSN\)=/PG_\1=/p')"
    [ -n "${PG_DSN:-}" ] || die "tests/services/postgres start printed no DSN"
    PG_ADMIN=$PG_DSN
    PG_DB=zxgenb_$(python3 -c 'import secrets; print(secrets.token_hex(4))')
    psql "$PG_ADMIN" -qc "CREATE DATABASE \"$PG_DB\"" >/dev/null
    PG_DSN_DB="${PG_DSN%/*}/$PG_DB"
    run "  postgres:
    dsn: \"$PG_DSN_DB\"" postgres ;;
esac
