#!/usr/bin/env bash
# Build zx and run zxd in the foreground on conf/zx.example.yaml: an HTTP
# push stream "web_events" into the embedded SQLite workspace conf/var/workspace.db.
set -euo pipefail
cd "$(dirname "$0")"
packaging/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
export ZX_WEB_EVENTS_KEY="${ZX_WEB_EVENTS_KEY:-dev-secret}"
echo "zx: push with key \$ZX_WEB_EVENTS_KEY ($ZX_WEB_EVENTS_KEY) to http://127.0.0.1:8780/api/streams/web_events/push" >&2
exec build/supervisor/zxd -c conf/zx.example.yaml
