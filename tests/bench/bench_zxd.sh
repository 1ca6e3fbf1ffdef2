# bench_zxd.sh — sourced by the push benchmarks (push_bench.sh,
# push_latency.sh): one zxd on a fresh temporary folder, 127.0.0.1 only,
# with one HTTP push stream "bench" on the SQLite workspace, stopped and
# removed whatever happens.  Never sends traffic anywhere but 127.0.0.1.
#
# The script that sources it sets BENCH_NAME (for messages) and may set
#   BENCH_WORKSPACE_EXTRA  lines added under `workspace:` (indented)
#   BENCH_PIPELINE_EXTRA   lines added under the pipeline (indented)
# then calls bench_start.  After it: DIR, CFG, LOG, DB, PORT, KEY (also
# exported as ZX_BENCH_KEY), ZXD_PID; http_status METHOD PATH [BODY];
# count_rows (rows in the table "bench").
# ZX_BENCH_KEEP=1 keeps the folder.  ZX_BENCH_PG_DSN=<libpq URI> puts the
# workspace on that Postgres database instead of SQLite (zxd reads it
# from the environment: the config file holds no password).

bench_die() { echo "$BENCH_NAME: $*" >&2; exit 1; }

bench_cleanup() {
    local rc=$?
    if [ -n "${ZXD_PID:-}" ] && kill -0 "$ZXD_PID" 2>/dev/null; then
        kill -TERM "$ZXD_PID" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$ZXD_PID" 2>/dev/null || break
            sleep 0.1
        done
    fi
    # the whole process group zxd leads (setsid): whatever is left
    [ -n "${ZXD_PID:-}" ] && kill -KILL -- "-$ZXD_PID" 2>/dev/null || true
    if [ -n "${DIR:-}" ]; then
        if [ "${ZX_BENCH_KEEP:-0}" = 1 ]; then
            echo "$BENCH_NAME: kept $DIR" >&2
        else
            rm -rf "$DIR"
        fi
    fi
    exit $rc
}

http_status() {  # METHOD PATH [body] -> prints the status code, or 000
    python3 - "$PORT" "$@" <<'EOF'
import http.client, os, sys
port, method, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
body = sys.argv[4].encode() if len(sys.argv) > 4 else None
h = {"Authorization": "Bearer " + os.environ["ZX_BENCH_KEY"], "Content-Type": "application/json"}
try:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, body=body, headers=h)
    print(c.getresponse().status)
except OSError:
    print("000")
EOF
}

# Rows in the table "bench" (0 before it exists).
count_rows() {
    if [ -n "${ZX_BENCH_PG_DSN:-}" ]; then
        psql "$ZX_BENCH_PG_DSN" -Atqc 'SELECT count(*) FROM "bench"' 2>/dev/null || echo 0
        return
    fi
    python3 - "$DB" <<'EOF'
import sqlite3, sys
try:
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=30)
    print(db.execute('SELECT count(*) FROM "bench"').fetchone()[0])
except sqlite3.Error:
    print(0)
EOF
}

# Start zxd and wait until /healthz says 200.
bench_start() {
    [ -x "$ZXD" ] || bench_die "zxd not built at $ZXD (ninja -C build, or set ZX_BUILD_DIR)"
    command -v python3 >/dev/null || bench_die "python3 is needed"
    DIR=$(mktemp -d /tmp/zxbench.XXXXXX)
    CFG=$DIR/zxd.yaml
    LOG=$DIR/zxd.log
    DB=$DIR/var/workspace.db
    ZXD_PID=
    trap bench_cleanup EXIT
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
${BENCH_WORKSPACE_EXTRA:-}
$(if [ -n "${ZX_BENCH_PG_DSN:-}" ]; then
    printf '  postgres:\n    dsn: "%s"\n' '${env:ZX_BENCH_PG_DSN}'
  else
    printf '  sqlite:\n    path: workspace.db\n'
  fi)
pipelines:
  bench:
    direction: stream
    source: http
    key: \${env:ZX_BENCH_KEY}
    table: bench
    metadata: [_ingested_at]
${BENCH_PIPELINE_EXTRA:-}
EOF
    export ZX_BENCH_KEY=$KEY
    setsid "$ZXD" -c "$CFG" >"$LOG" 2>&1 </dev/null &
    ZXD_PID=$!
    local i
    for i in $(seq 1 300); do
        kill -0 "$ZXD_PID" 2>/dev/null || { tail -30 "$LOG" >&2; bench_die "zxd exited during start-up"; }
        [ "$(http_status GET /healthz)" = 200 ] && return 0
        sleep 0.1
    done
    tail -30 "$LOG" >&2
    bench_die "no /healthz 200 within 30 s"
}
