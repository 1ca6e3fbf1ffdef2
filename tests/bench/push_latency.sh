#!/usr/bin/env bash
# push_latency.sh — rows/s and latency of HTTP pushes, with and without
# ?wait=commit, at the maximum rate and at a fixed rate of half of it.
#
# Starts zxd on a fresh temporary folder (127.0.0.1 only, the same config
# as push_bench.sh) and, for bodies of 10 and of 1,000 events (~200 B each),
# with and without ?wait=commit:
#   1. max:  a closed loop over 8 connections (what wrk measures): the
#            maximum rate;
#   2. half: a fixed schedule (open loop) at half the rate found in 1,
#            latency counted from the time each request was due
#            (tests/bench/pushgen.c; no coordinated omission).
# Between runs one ?wait=commit push waits until the writer has committed
# everything before it, so a run does not inherit the last one's backlog.
# Prints one table row per run and the machine's load average before and
# after (the figures are only comparable on a quiet machine).
# It stops by itself and always kills the zxd it started.  It must never
# send traffic anywhere but 127.0.0.1.
#
# Environment (all optional):
#   ZX_BUILD_DIR          build folder (default <repo>/build); pushgen is
#                         built there on demand (ninja tests/bench/pushgen)
#   ZX_BENCH_SECONDS      seconds per run (default 20)
#   ZX_BENCH_SIZES        events per push (default "10 1000")
#   ZX_BENCH_CONNECTIONS  closed-loop connections (default 8)
#   ZX_BENCH_COMMIT_INTERVAL  workspace.commit_interval (default: zxd's)
#   ZX_BENCH_KEEP=1       keep the temporary folder
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${ZX_BUILD_DIR:-$REPO/build}
ZXD=$BUILD/supervisor/zxd
GEN=$BUILD/tests/bench/pushgen
SECONDS_PER_RUN=${ZX_BENCH_SECONDS:-20}
SIZES=${ZX_BENCH_SIZES:-10 1000}
CONNS=${ZX_BENCH_CONNECTIONS:-8}

BENCH_NAME=push_latency
. "$HERE/bench_zxd.sh"
die() { bench_die "$@"; }

if [ ! -x "$GEN" ]; then
    ninja -C "$BUILD" tests/bench/pushgen >/dev/null || die "cannot build pushgen in $BUILD"
fi
[ -n "${ZX_BENCH_COMMIT_INTERVAL:-}" ] &&
    BENCH_WORKSPACE_EXTRA="  commit_interval: $ZX_BENCH_COMMIT_INTERVAL"
bench_start

barrier() {  # everything pushed so far is committed
    local st
    st=$(http_status POST '/api/streams/bench/push?wait=commit' '{"barrier":true}')
    [ "$st" = 202 ] || { tail -30 "$LOG" >&2; die "barrier push answered $st"; }
}

barrier

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
RESULTS=$DIR/results.txt
: >"$RESULTS"
run() {  # label args... -> appends "label <pushgen line>"
    local label=$1
    shift
    local line
    line=$("$GEN" -p "$PORT" -k "$KEY" -d "$SECONDS_PER_RUN" "$@")
    echo "$label $line" | tee -a "$RESULTS" >&2
    barrier
}
for ev in $SIZES; do
    for w in 0 1; do
        wflag=
        [ "$w" = 1 ] && wflag=-w
        run "max" -e "$ev" -c "$CONNS" -r 0 $wflag
        max_rate=$(tail -1 "$RESULTS" | sed -n 's/.* req_s=\([0-9.]*\).*/\1/p')
        half=$(python3 -c "print(max(1.0, float('$max_rate') / 2))")
        run "half" -e "$ev" -c 256 -r "$half" $wflag
    done
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$RESULTS" "$LOAD0" "$LOAD1" "$SECONDS_PER_RUN" "$CONNS" <<'EOF'
import sys
rows = []
for line in open(sys.argv[1]):
    label, *kv = line.split()
    d = dict(x.split("=", 1) for x in kv)
    d["label"] = label
    rows.append(d)
print("== zx push latency bench ==")
print(f"{sys.argv[4]} s per run; max = closed loop over {sys.argv[5]} connections; "
      "half = fixed rate of half the max, latency from the time each request was due")
print(f"load average before: {sys.argv[2]}   after: {sys.argv[3]} (2-core machine)")
hdr = f"| {'events':>6} | {'wait':>6} | {'load':>4} | {'req/s':>9} | {'rows/s':>9} | {'p50 ms':>7} | {'p99 ms':>8} | {'non-202':>7} | {'gen cpu':>7} |"
print(hdr)
print("|" + "|".join("-" * (len(c)) for c in hdr.split("|")[1:-1]) + "|")
for d in rows:
    bad = int(d["non202"]) + int(d["errors"]) + int(d["unanswered"])
    print(f"| {d['events']:>6} | {'commit' if d['wait_commit'] == '1' else 'no':>6} | {d['label']:>4} | "
          f"{float(d['req_s']):>9,.0f} | {float(d['rows_s']):>9,.0f} | {float(d['p50_ms']):>7.2f} | "
          f"{float(d['p99_ms']):>8.2f} | {bad:>7} | {float(d['gen_cpu_pct']):>6.1f}% |")
EOF
echo "--- config used ($CFG) ---"
sed 's/^/  /' "$CFG"
kill -TERM "$ZXD_PID"
for _ in $(seq 1 300); do
    kill -0 "$ZXD_PID" 2>/dev/null || break
    sleep 0.1
done
