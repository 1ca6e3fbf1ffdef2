#!/usr/bin/env bash
# push_bench.sh — HTTP push throughput of zxd on the SQLite workspace (or
# on Postgres with ZX_BENCH_PG_DSN: see bench_zxd.sh and pg_bench.sh).
#
# Starts zxd on a fresh temporary folder (127.0.0.1 only), drives
# POST /api/streams/bench/push with wrk (NDJSON bodies of 1,000 events of
# ~200 bytes, built once by push.lua), then prints:
#   - rows/s sustained: rows counted in the table before and after the run,
#     divided by the elapsed time (wrk's own count is shown, not trusted);
#   - p50 / p99 latency of the 202 (wrk --latency);
#   - VmRSS (and VmHWM) of every zxd process, sampled at the end of the run;
#   - the configuration used.
# It stops by itself and always kills the zxd it started.  It must never
# send traffic anywhere but 127.0.0.1.
#
# Environment (all optional):
#   ZX_BUILD_DIR            build folder (default <repo>/build)
#   ZX_BENCH_DURATION       seconds of load (default 60)
#   ZX_BENCH_THREADS        wrk threads (default 2)
#   ZX_BENCH_CONNECTIONS    wrk connections (default 8)
#   ZX_BENCH_EVENTS         events per request (default 1000)
#   ZX_BENCH_ACK            accepted | commit (default accepted)
#   ZX_BENCH_KEEP=1         keep the temporary folder
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${ZX_BUILD_DIR:-$REPO/build}
ZXD=$BUILD/supervisor/zxd
ZXCTL=$BUILD/zxctl/zxctl
DURATION=${ZX_BENCH_DURATION:-60}
THREADS=${ZX_BENCH_THREADS:-2}
CONNS=${ZX_BENCH_CONNECTIONS:-8}
EVENTS=${ZX_BENCH_EVENTS:-1000}
ACK=${ZX_BENCH_ACK:-accepted}

BENCH_NAME=push_bench
. "$HERE/bench_zxd.sh"
die() { bench_die "$@"; }

command -v python3 >/dev/null || die "python3 is needed"
if ! command -v wrk >/dev/null; then
    echo "push_bench: installing wrk (Debian package)" >&2
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >/dev/null && apt-get install -y -qq wrk >/dev/null
    else
        sudo apt-get update -qq >/dev/null && sudo apt-get install -y -qq wrk >/dev/null
    fi
    command -v wrk >/dev/null || die "could not install wrk"
fi
BENCH_PIPELINE_EXTRA="    ack: $ACK"
export ZX_BENCH_EVENTS=$EVENTS
bench_start
SOCK=$DIR/var/zxd.sock

# python3 helpers (stdlib only) --------------------------------------------
now() { python3 -c 'import time; print(f"{time.monotonic():.3f}")'; }

# warm-up: one committed push creates the table
st=$(http_status POST '/api/streams/bench/push?wait=commit' '{"id":0,"warmup":true}')
[ "$st" = 202 ] || { tail -30 "$LOG" >&2; die "warm-up push answered $st"; }

# run ------------------------------------------------------------------------
C0=$(count_rows); T0=$(now)
WRK_OUT=$DIR/wrk.out
timeout $((DURATION + 120)) wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --timeout 30s --latency \
    -s "$HERE/push.lua" "http://127.0.0.1:$PORT/api/streams/bench/push" >"$WRK_OUT" 2>&1 || true
C1=$(count_rows); T1=$(now)

# RSS at the end of the load, before anything stops
RSS_OUT=$DIR/rss.out
python3 - "$ZXD_PID" "$ZXCTL" "$SOCK" >"$RSS_OUT" <<'EOF'
import json, os, subprocess, sys
sup, zxctl, sock = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def kids(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        if int(st[st.rindex(")") + 2:].split()[1]) == pid:
            out.append(int(d))
    return out
pids = [sup] + kids(sup)
for p in pids:
    try:
        title = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode().strip()
        status = dict(l.split(":", 1) for l in open(f"/proc/{p}/status").read().splitlines() if ":" in l)
    except OSError:
        continue
    print(f"  {p:>7}  {title:<28} VmRSS {status.get('VmRSS', '?').strip():>12}   VmHWM {status.get('VmHWM', '?').strip():>12}")
EOF

# committed after the run: what was accepted but still in the ring
st=$(http_status POST '/api/streams/bench/push?wait=commit' '{"id":-1,"final":true}')
C2=$(count_rows)

python3 - "$WRK_OUT" "$C0" "$C1" "$C2" "$T0" "$T1" "$EVENTS" "$DURATION" "$THREADS" "$CONNS" "$ACK" "$st" <<'EOF'
import re, sys
out = open(sys.argv[1]).read()
c0, c1, c2 = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t0, t1 = float(sys.argv[5]), float(sys.argv[6])
events, dur, thr, conns, ack, fin = sys.argv[7:13]
m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
reqs = int(m.group(1)) if m else 0
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
non2xx = int(non2xx.group(1)) if non2xx else 0
def lat(p):
    m = re.search(r"^\s+%s%%\s+(\S+)" % p, out, re.M)
    return m.group(1) if m else "?"
rows_run = c1 - c0
print("== zx push bench ==")
print(f"load: wrk -t{thr} -c{conns} -d{dur}s, NDJSON bodies of {events} events (~200 B each), ack: {ack}")
print(f"rows/s sustained (table count, {t1 - t0:.1f} s): {rows_run / (t1 - t0):,.0f}  ({rows_run:,} rows committed during the run)")
print(f"rows accepted per wrk: {(reqs - non2xx) * int(events):,}  ({reqs:,} requests, {non2xx} non-2xx); "
      f"in the table after a final commit: {c2 - c0 - 1:,} (final push: {fin})")
print(f"  (wrk counts completed requests only: the up to {conns} requests in flight when it stops "
      f"are committed too, so the table may hold up to {int(conns) * int(events):,} rows more)")
print(f"latency of the 202: p50 {lat(50)}   p99 {lat(99)}")
print("--- wrk output ---")
print(out.rstrip())
EOF
echo "--- RSS of zxd processes at the end of the run ---"
cat "$RSS_OUT"
echo "--- config used ($CFG) ---"
sed 's/^/  /' "$CFG"

# stop: SIGTERM drains; report its exit status
kill -TERM "$ZXD_PID"
rc=0
for _ in $(seq 1 300); do
    kill -0 "$ZXD_PID" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$ZXD_PID" 2>/dev/null; then
    echo "zxd did not exit within 30 s of SIGTERM; killing it" >&2
    rc=1
else
    wait "$ZXD_PID" || rc=$?
    echo "zxd exited with status $rc after SIGTERM"
fi
ZXD_PID=
[ "$rc" = 0 ]
