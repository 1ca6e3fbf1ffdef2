#!/usr/bin/env bash
# Install, build and run every zx test: C unit tests (meson test), the same
# under AddressSanitizer + UndefinedBehaviorSanitizer, and the end-to-end
# pytest suite against real zxd processes.  Exit status 0 only if all pass.
set -euo pipefail
cd "$(dirname "$0")"
packaging/install-deps.sh --test

echo "== build"
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build

echo "== unit tests"
meson test -C build --suite unit --print-errorlogs

echo "== unit and multi-process tests under ASan + UBSan"
[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --suite unit --print-errorlogs --timeout-multiplier 3

echo "== end-to-end tests (pytest)"
ZX_BUILD_DIR="$PWD/build" python3 -m pytest tests/integration -q -p no:cacheprovider "$@"

echo "== end-to-end tests against the ASan + UBSan build (any sanitizer report fails)"
ninja -C build-asan supervisor/zxd supervisor/zxctl >/dev/null
SAN_DIR=$(mktemp -d /tmp/zx-sanitizers.XXXXXX)
ASAN_OPTIONS="detect_leaks=1:log_path=$SAN_DIR/asan" \
UBSAN_OPTIONS="print_stacktrace=1:log_path=$SAN_DIR/ubsan" \
ZX_BUILD_DIR="$PWD/build-asan" python3 -m pytest tests/integration -q -p no:cacheprovider "$@"
if [ -n "$(ls -A "$SAN_DIR")" ]; then
    echo "sanitizer reports from zxd/zxctl processes:" >&2
    cat "$SAN_DIR"/* >&2
    exit 1
fi
rm -rf "$SAN_DIR"
