#!/usr/bin/env bash
# soak.sh — an hour of mixed load with reloads and SIGKILLs (tests/bench/soak.py
# says what runs and what is checked).  Not in CI.
#   tests/bench/soak.sh                  # one hour
#   ZX_SOAK_SECONDS=600 tests/bench/soak.sh
# Needs the test dependencies (packaging/install-deps.sh --test) and a build
# (meson setup build && ninja -C build); starts postgres, kafka and a
# Debezium Server through tests/services and stops the Debezium it started.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${ZX_BUILD_DIR:-$repo/build}"
ninja -C "$build" >/dev/null
exec env ZX_BUILD_DIR="$build" python3 "$here/soak.py" "$@"
