#!/usr/bin/env bash
# pg_bench.sh — the push benchmark into the Postgres workspace, beside the
# same benchmark on SQLite, beside the physical limit: `psql \copy` of the
# same rows from a file into a table of the same shape, on the same server,
# measured in the same run.  Prints one line per figure and the ratios.
#
# Starts the Postgres of tests/services/postgres (reuses a running one),
# makes a fresh database per measurement and drops it after.  Only
# 127.0.0.1.  No thresholds: it prints figures.
#
# Environment (all optional): ZX_BENCH_DURATION (seconds per zx run,
# default 30), ZX_BENCH_COPY_ROWS (rows for \copy, default 2000000), and
# what push_bench.sh reads.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export ZX_BENCH_DURATION=${ZX_BENCH_DURATION:-30}
COPY_ROWS=${ZX_BENCH_COPY_ROWS:-2000000}
die() { echo "pg_bench: $*" >&2; exit 1; }
command -v psql >/dev/null || die "psql is needed (apt-get install postgresql-client)"

eval "$("$REPO/tests/services/postgres" start | sed -n 's/^\(DSN\|PGPORT\|PGHOST\|PGUSER\|PGPASSWORD\)=/export PG_\1=/p')"
[ -n "${PG_DSN:-}" ] || die "tests/services/postgres start printed no DSN"
ADMIN=$PG_DSN
DBS=()
cleanup() {
    for d in "${DBS[@]}"; do
        psql "$ADMIN" -qc "DROP DATABASE IF EXISTS \"$d\" WITH (FORCE)" >/dev/null 2>&1 || true
    done
    [ -n "${TMPF:-}" ] && rm -f "$TMPF"
}
trap cleanup EXIT
newdb() {  # prints the DSN of a fresh database
    local d
    d=zxbench_$(python3 -c 'import secrets; print(secrets.token_hex(4))')
    psql "$ADMIN" -qc "CREATE DATABASE \"$d\"" >/dev/null
    DBS+=("$d")
    echo "${PG_DSN%/*}/$d"
}
rate() { sed -n 's/^rows\/s sustained[^:]*: \([0-9,]*\).*/\1/p' "$1" | tr -d ,; }

echo "== Postgres workspace ($(psql "$ADMIN" -Atc 'SHOW server_version'), fsync $(psql "$ADMIN" -Atc 'SHOW fsync')) =="
PGOUT=$(mktemp /tmp/zxpgbench.XXXXXX)
DSN1=$(newdb)
ZX_BENCH_PG_DSN=$DSN1 "$HERE/push_bench.sh" >"$PGOUT" 2>&1 || { cat "$PGOUT"; die "push_bench on Postgres failed"; }
sed -n '/== zx push bench ==/,/latency/p' "$PGOUT"
ZX_PG=$(rate "$PGOUT")

echo "== SQLite workspace, same load =="
"$HERE/push_bench.sh" >"$PGOUT" 2>&1 || { cat "$PGOUT"; die "push_bench on SQLite failed"; }
sed -n '/== zx push bench ==/,/latency/p' "$PGOUT"
ZX_SQ=$(rate "$PGOUT")
rm -f "$PGOUT"

echo "== psql \\copy of $COPY_ROWS rows of the same shape (text format file) =="
DSN2=$(newdb)
TMPF=$(mktemp /tmp/zxpgcopy.XXXXXX)
python3 - "$COPY_ROWS" >"$TMPF" <<'PY'
import sys
n = int(sys.argv[1]); pad = "x" * 64
w = sys.stdout.write
for i in range(1, n + 1):
    w(f"{i}\tuser-{i % 10000:05d}\tpage_view\t/products/{i % 1000:04d}\t"
      f"2026-11-29T18:09:25.123456Z\t{i % 500}.25\t1\t{pad}\t2026-11-30T00:00:00.000000Z\n")
PY
psql "$DSN2" -qc 'CREATE TABLE "bench"(id bigint, "user" text, event text, url text,
    ts timestamptz, amount double precision, ok boolean, note text, _ingested_at timestamptz)'
T0=$(python3 -c 'import time; print(time.monotonic())')
psql "$DSN2" -qc "\\copy \"bench\" FROM '$TMPF'"
T1=$(python3 -c 'import time; print(time.monotonic())')
N=$(psql "$DSN2" -Atc 'SELECT count(*) FROM "bench"')
COPY_RATE=$(python3 -c "print(round($N / ($T1 - $T0)))")
echo "rows/s of \\copy: $COPY_RATE ($N rows in $(python3 -c "print(f'{$T1 - $T0:.1f}')") s)"

echo "== summary =="
python3 - "$ZX_PG" "$ZX_SQ" "$COPY_RATE" <<'PY'
import sys
pg, sq, cp = (int(x or 0) for x in sys.argv[1:4])
print(f"zx on Postgres: {pg:,} rows/s   zx on SQLite: {sq:,} rows/s   psql \\copy: {cp:,} rows/s")
if cp:
    print(f"zx on Postgres / \\copy: {pg / cp:.2f}   zx on Postgres / zx on SQLite: {pg / sq if sq else 0:.2f}")
PY
