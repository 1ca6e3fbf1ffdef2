#!/usr/bin/env bash
# Build zx and run zxd in the foreground on conf/zx.example.yaml: an HTTP
# push stream "web_events" into the embedded SQLite workspace
# conf/var/workspace.db.  Installs what is missing first (build packages, and
# curl and sqlite3 for the README's Try-it lines).  Build errors are shown.
set -euo pipefail
cd "$(dirname "$0")"
packaging/install-deps.sh
if [ ! -f build/build.ninja ]; then
    # meson's own output only matters when it fails
    if ! out=$(meson setup build 2>&1); then
        echo "$out" >&2
        echo "zx: meson setup failed (above)" >&2
        exit 1
    fi
fi
# ninja's progress lines are noise when the build works; when it fails, all
# of its output (the compiler's messages) is shown
if ! out=$(ninja -C build 2>&1); then
    echo "$out" >&2
    echo "zx: the build failed (above)" >&2
    exit 1
fi
export ZX_WEB_EVENTS_KEY="${ZX_WEB_EVENTS_KEY:-dev-secret}"
cat >&2 <<MSG
zx: push with key \$ZX_WEB_EVENTS_KEY ($ZX_WEB_EVENTS_KEY) to http://127.0.0.1:8780/api/streams/web_events/push
zx: in another terminal:  $PWD/build/zxctl/zxctl -c $PWD/conf/zx.example.yaml status
zx:   (or export ZX_CONFIG=$PWD/conf/zx.example.yaml, then plain zxctl status)
MSG
exec build/supervisor/zxd -c conf/zx.example.yaml
