#!/usr/bin/env bash
# push_bench.sh — HTTP push throughput of zxd on the SQLite workspace.
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
ZXCTL=$BUILD/supervisor/zxctl
DURATION=${ZX_BENCH_DURATION:-60}
THREADS=${ZX_BENCH_THREADS:-2}
CONNS=${ZX_BENCH_CONNECTIONS:-8}
EVENTS=${ZX_BENCH_EVENTS:-1000}
ACK=${ZX_BENCH_ACK:-accepted}

die() { echo "push_bench: $*" >&2; exit 1; }

[ -x "$ZXD" ] || die "zxd not built at $ZXD (ninja -C build, or set ZX_BUILD_DIR)"
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

DIR=$(mktemp -d /tmp/zxbench.XXXXXX)
CFG=$DIR/zxd.yaml
LOG=$DIR/zxd.log
DB=$DIR/var/workspace.db
SOCK=$DIR/var/zxd.sock
ZXD_PID=
ZXD_PGID=

cleanup() {
    local rc=$?
    if [ -n "$ZXD_PID" ] && kill -0 "$ZXD_PID" 2>/dev/null; then
        kill -TERM "$ZXD_PID" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$ZXD_PID" 2>/dev/null || break
            sleep 0.1
        done
    fi
    # the whole process group zxd leads (setsid below): whatever is left
    if [ -n "$ZXD_PGID" ]; then
        kill -KILL -- "-$ZXD_PGID" 2>/dev/null || true
    fi
    if [ "${ZX_BENCH_KEEP:-0}" = 1 ]; then
        echo "push_bench: kept $DIR" >&2
    else
        rm -rf "$DIR"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
KEY=bench-$(python3 -c 'import secrets; print(secrets.token_hex(8))')

cat >"$CFG" <<EOF
server:
  data_dir: ./var
  control_socket: zxd.sock
  http:
    listen: "127.0.0.1:$PORT"
    max_body_size: 16MiB
    backpressure_timeout: 2s
workspace:
  sqlite:
    path: workspace.db
pipelines:
  bench:
    direction: stream
    source: http
    key: \${env:ZX_BENCH_KEY}
    table: bench
    metadata: [_ingested_at]
    ack: $ACK
EOF

export ZX_BENCH_KEY=$KEY ZX_BENCH_EVENTS=$EVENTS
setsid "$ZXD" -c "$CFG" >"$LOG" 2>&1 </dev/null &
ZXD_PID=$!
ZXD_PGID=$ZXD_PID

# python3 helpers (stdlib only) --------------------------------------------
http_status() {  # METHOD PATH [wait-commit-body] -> prints the status code or 000
    python3 - "$PORT" "$@" <<'EOF'
import http.client, os, sys
port, method, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
body = sys.argv[4].encode() if len(sys.argv) > 4 else None
h = {"Authorization": "Bearer " + os.environ["ZX_BENCH_KEY"], "Content-Type": "application/json"}
try:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=body, headers=h)
    print(c.getresponse().status)
except OSError:
    print("000")
EOF
}
count_rows() {
    python3 - "$DB" <<'EOF'
import sqlite3, sys
try:
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=30)
    print(db.execute('SELECT count(*) FROM "bench"').fetchone()[0])
except sqlite3.Error:
    print(0)
EOF
}
now() { python3 -c 'import time; print(f"{time.monotonic():.3f}")'; }

# wait for the daemon ------------------------------------------------------
for i in $(seq 1 300); do
    kill -0 "$ZXD_PID" 2>/dev/null || { tail -30 "$LOG" >&2; die "zxd exited during start-up"; }
    [ "$(http_status GET /healthz)" = 200 ] && break
    [ "$i" = 300 ] && { tail -30 "$LOG" >&2; die "no /healthz 200 within 30 s"; }
    sleep 0.1
done
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
