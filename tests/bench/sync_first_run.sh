#!/usr/bin/env bash
# sync_first_run.sh — the four phase times of a reverse sync's first run
# (zxd's event=sync_done line: reading_ms comparing_ms sending_ms
# recording_ms), mode replace and mode mirror (key [id], nothing stored
# yet) side by side, both into one Parquet file (destination files), on a
# SQLite workspace of ZX_BENCH_ROWS rows (lake_bench.py's: id, email,
# plan, amount, active, updated_at).  Each mode runs ZX_BENCH_REPEAT times
# (each mirror run under its own sync name: every one is a first run);
# the medians are printed.  Then (ZX_BENCH_SECOND=1, the default) one
# more run of the first mirror sync, nothing changed: the next-run cost.
# No thresholds: it measures.  Never run in CI.
#
# Usage: tests/bench/sync_first_run.sh
# Environment (all optional):
#   ZX_BENCH_ROWS     rows (default 1000000)
#   ZX_BENCH_REPEAT   runs of each mode (default 3)
#   ZX_BENCH_SECOND   1: also the mirror's second run (default 1)
#   ZX_BENCH_PERF     a file: the runs are profiled (perf record -g
#                     --call-graph dwarf on zxd and its workers) into it
#   ZX_BENCH_MODES    the modes run (default "replace mirror")
#   ZX_BUILD_DIR      build folder (default <repo>/build)
# Needs: zxd and zxctl built, python3 (sqlite3).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
ROWS=${ZX_BENCH_ROWS:-1000000}
REPEAT=${ZX_BENCH_REPEAT:-3}
SECOND=${ZX_BENCH_SECOND:-1}
BUILD=${ZX_BUILD_DIR:-$REPO/build}
ZXD=$BUILD/supervisor/zxd
ZXCTL=$BUILD/zxctl/zxctl
[ -x "$ZXD" ] && [ -x "$ZXCTL" ] || { echo "sync_first_run: zxd/zxctl not built in $BUILD" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/zx_first_run.XXXXXX")
ZXD_PID=
cleanup() {
    if [ -n "$ZXD_PID" ]; then
        kill -TERM "$ZXD_PID" 2>/dev/null || true
        for _ in $(seq 1 300); do kill -0 "$ZXD_PID" 2>/dev/null || break; sleep 0.1; done
        wait "$ZXD_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

python3 "$HERE/lake_bench.py" make-ws --db "$WORK/ws.db" --rows "$ROWS" >/dev/null

Q="SELECT id, email, plan, amount, active, updated_at FROM items"
{
    printf 'server:\n  data_dir: %s/var\n  control_socket: %s/zxd.sock\n  file_roots: ["%s/out"]\n' \
        "$WORK" "$WORK" "$WORK"
    printf 'workspace:\n  sqlite:\n    path: "%s/ws.db"\npipelines:\n' "$WORK"
    for i in $(seq 1 "$REPEAT"); do
        for mode in replace mirror; do
            mkdir -p "$WORK/out/${mode}_$i"
            printf '  %s_%s:\n    direction: out\n    author: bench\n    query: "%s"\n' "$mode" "$i" "$Q"
            printf '    destination: {files: {path: "%s/out/%s_%s", format: parquet, compression: zstd}}\n' \
                "$WORK" "$mode" "$i"
            printf '    mode: %s\n' "$mode"
            [ "$mode" = mirror ] && printf '    key: [id]\n'
        done
    done
    printf 'authors:\n  bench: {tables: [items]}\n'
} >"$WORK/zxd.yaml"

"$ZXD" -c "$WORK/zxd.yaml" --check >"$WORK/check.txt" 2>&1 || { cat "$WORK/check.txt" >&2; exit 1; }
setsid "$ZXD" -c "$WORK/zxd.yaml" >"$WORK/zxd.log" 2>&1 </dev/null &
ZXD_PID=$!
SOCK=$WORK/zxd.sock
for _ in $(seq 1 300); do
    [ -S "$SOCK" ] && "$ZXCTL" -s "$SOCK" status >/dev/null 2>&1 && break
    kill -0 "$ZXD_PID" 2>/dev/null || { tail -20 "$WORK/zxd.log" >&2; exit 1; }
    sleep 0.1
done

# run NAME: one run, waited for; prints its four phase times
run() {
    "$ZXCTL" -s "$SOCK" run "$1" --wait >/dev/null 2>&1 || { echo "run $1 failed" >&2; tail -5 "$WORK/zxd.log" >&2; exit 1; }
    local line
    for _ in $(seq 1 50); do
        line=$(grep "event=sync_done sync=$1 " "$WORK/zxd.log" | tail -1 || true)
        [ -n "$line" ] && break
        sleep 0.1
    done
    sed -E 's/.*reading_ms=([0-9]+) comparing_ms=([0-9]+) sending_ms=([0-9]+) recording_ms=([0-9]+).*/\1 \2 \3 \4/' <<<"$line"
}

PERF_PID=
if [ -n "${ZX_BENCH_PERF:-}" ]; then
    # zxd, its children now (the writer) and those it starts (the runs)
    PIDS=$(pgrep -d, -P "$ZXD_PID" || true)
    perf record -q -g --call-graph dwarf,16384 -F 1000 -p "$ZXD_PID${PIDS:+,$PIDS}" \
        -o "$ZX_BENCH_PERF" 2>"$WORK/perf.log" &
    PERF_PID=$!
    sleep 1
fi
MODES=${ZX_BENCH_MODES:-replace mirror}
declare -A T=()
for i in $(seq 1 "$REPEAT"); do
    for mode in $MODES; do
        T[$mode]+="$(run "${mode}_$i")"$'\n'
    done
done
second=
if [ "$SECOND" = 1 ] && [[ " $MODES " = *" mirror "* ]]; then
    for i in $(seq 1 "$REPEAT"); do
        # a second run of mirror_i: nothing changed since its first
        second+="$(run "mirror_$i")"$'\n'
    done
fi

if [ -n "$PERF_PID" ]; then
    kill -INT "$PERF_PID"; wait "$PERF_PID" || true
fi

median() {  # column N of the lines on stdin
    awk -v c="$1" 'NF { print $c }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
printf 'rows %s, %s runs each, medians (ms)\n' "$ROWS" "$REPEAT"
printf '%-14s %8s %10s %8s %10s %8s\n' "" reading comparing sending recording total
show() {  # LABEL LINES
    local r c s k
    r=$(median 1 <<<"$2"); c=$(median 2 <<<"$2"); s=$(median 3 <<<"$2"); k=$(median 4 <<<"$2")
    printf '%-14s %8s %10s %8s %10s %8s\n' "$1" "$r" "$c" "$s" "$k" $((r + c + s + k))
    printf '%-14s %s\n' "" "$(tr '\n' '|' <<<"${2%$'\n'}")"
}
[ -n "${T[replace]:-}" ] && show replace "${T[replace]}"
[ -n "${T[mirror]:-}" ] && show "mirror first" "${T[mirror]}"
if [ -n "$second" ]; then
    show "mirror second" "$second"
    # what the second run of mirror_1 found: every row unchanged, none sent
    grep "event=sync_done sync=mirror_1 " "$WORK/zxd.log" | tail -1 |
        grep -oE '(read|sent|deleted|unchanged)=[0-9]+' | tr '\n' ' ' | sed 's/^/               second run of mirror_1: /; s/ $/\n/'
fi

