#!/usr/bin/env bash
# Install, build and run every zx test: C unit tests (meson test), the same
# under AddressSanitizer + UndefinedBehaviorSanitizer, each libFuzzer target
# for a short fixed time, and the end-to-end pytest suite against real zxd
# processes.  Exit status 0 only if all pass.  Warnings are errors here
# (-Dwerror=true), not in a user's build.
# ZX_FUZZ_SECONDS: time per fuzz target (default 10; 0 skips the fuzz step).
# Each "== step" line says how long the run has taken so far.
set -euo pipefail
cd "$(dirname "$0")"
packaging/install-deps.sh --test

# setup a build dir if new, and make sure an existing one has the options
setup() {
    local dir="$1"
    shift
    [ -f "$dir/build.ninja" ] || meson setup "$dir" "$@" >/dev/null
    meson configure "$dir" "$@" >/dev/null
}

echo "== [${SECONDS}s] build"
# meson compiles through ccache when it is installed (install-deps --test):
# the unit tests compile many of the product's files again, each in its own
# target, and those repeats become cache hits (a third less CPU per build).
setup build -Dwerror=true
ninja -C build

# Real services (tests/services/) are stopped when this script ends,
# whatever happens.
stop_services() {
    tests/services/kafka stop >/dev/null 2>&1 || true
    tests/services/kafka stop 3.9 >/dev/null 2>&1 || true
    tests/services/postgres stop >/dev/null 2>&1 || true
    tests/services/mariadb stop >/dev/null 2>&1 || true
    tests/services/schema-registry stop >/dev/null 2>&1 || true
    tests/services/moto stop >/dev/null 2>&1 || true
    tests/services/kinesalite stop >/dev/null 2>&1 || true
    tests/services/iceberg-rest stop >/dev/null 2>&1 || true
    tests/services/opensearch stop >/dev/null 2>&1 || true
    tests/services/redis stop >/dev/null 2>&1 || true
    tests/services/prometheus stop >/dev/null 2>&1 || true
}
trap stop_services EXIT

# tests_failed: a pytest pass failed; print the last errors the running
# services logged (a server's own fault shows there, not in the test's
# output), then fail.  Not PostgreSQL's: its log is full of the errors the
# tests provoke on purpose.
tests_failed() {
    local s log
    for s in kafka iceberg-rest opensearch redis kinesalite prometheus; do
        log=$(tests/services/$s env 2>/dev/null | sed -n 's/^LOG=//p' | head -n 1)
        [ -n "$log" ] && [ -f "$log" ] || continue
        if grep -qE 'ERROR|FATAL|PANIC|Exception' "$log"; then
            echo "== errors in $s's log ($log), the last 8:" >&2
            grep -E 'ERROR|FATAL|PANIC|Exception' "$log" | tail -n 8 | cut -c1-400 >&2
        fi
    done
    exit 1
}

echo "== [${SECONDS}s] PostgreSQL (tests/services/postgres), for the unit and end-to-end tests"
# Started before the unit tests: test_workspace runs its suite against it
# too (ZX_PG_DSN; meson test passes the environment through).  Its lines
# reach the tests' environment as ZX_PG_<KEY> (PG_VERSION -> ZX_PG_VERSION,
# PGPORT -> ZX_PG_PORT, DSN -> ZX_PG_DSN, ...), not under libpq's own
# names, which every zxd would take as its defaults.
pg_env=$(tests/services/postgres start)
echo "$pg_env"
while IFS='=' read -r k v; do
    k=${k#PG_}
    k=${k#PG}
    export "ZX_PG_$k=$v"
done <<<"$pg_env"

echo "== [${SECONDS}s] MariaDB (tests/services/mariadb), for the unit and end-to-end tests"
# test_dest_mysql writes to it (ZX_MYSQL_DSN).  Its lines reach the tests
# as ZX_MYSQL_<KEY>: MYSQL_PORT -> ZX_MYSQL_PORT, DSN -> ZX_MYSQL_DSN, ...
my_env=$(tests/services/mariadb start)
echo "$my_env"
while IFS='=' read -r k v; do
    k=${k#MYSQL_}
    export "ZX_MYSQL_$k=$v"
done <<<"$my_env"

echo "== [${SECONDS}s] moto (tests/services/moto), for the S3 client's unit test and the Kinesis tests"
# test_aws_s3_moto runs against it (ZX_MOTO_ENDPOINT); the end-to-end tests
# find it again with `env`.
moto_env=$(tests/services/moto start)
echo "$moto_env"
ZX_MOTO_ENDPOINT=$(sed -n 's/^AWS_ENDPOINT=//p' <<<"$moto_env")
export ZX_MOTO_ENDPOINT

echo "== [${SECONDS}s] unit tests"
meson test -C build --suite unit --print-errorlogs

echo "== [${SECONDS}s] unit and multi-process tests under ASan + UBSan"
setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --suite unit --print-errorlogs --timeout-multiplier 3

FUZZ_SECONDS="${ZX_FUZZ_SECONDS:-10}"
if [ "$FUZZ_SECONDS" != 0 ]; then
    echo "== [${SECONDS}s] fuzz targets: libFuzzer + ASan + UBSan, ${FUZZ_SECONDS}s each (tests/fuzz/)"
    if [ ! -f build-fuzz/build.ninja ]; then
        CC="$(command -v ccache >/dev/null && echo "ccache clang" || echo clang)" \
            meson setup build-fuzz -Dfuzzing=true -Dwerror=true >/dev/null
    fi
    meson configure build-fuzz -Dfuzzing=true -Dwerror=true >/dev/null
    ninja -C build-fuzz fuzz
    FUZZ_DIR=$(mktemp -d /tmp/zx-fuzz.XXXXXX)
    # One target on each core: the step takes half the time.
    FUZZ_JOBS=$(nproc 2>/dev/null || echo 2)
    fuzz_one() {
        local t="$1" d="tests/fuzz/corpus/$1/"
        mkdir -p "$FUZZ_DIR/$t"
        # new inputs go to $FUZZ_DIR/$t, the seeds in the repo stay as they are
        if ! build-fuzz/tests/fuzz/fuzz_"$t" -max_total_time="$FUZZ_SECONDS" -timeout=30 \
                -max_len=4096 -artifact_prefix="$FUZZ_DIR/$t-" "$FUZZ_DIR/$t" "$d" \
                >"$FUZZ_DIR/$t.log" 2>&1; then
            touch "$FUZZ_DIR/$t.failed"
        fi
    }
    for d in tests/fuzz/corpus/*/; do
        while [ "$(jobs -rp | wc -l)" -ge "$FUZZ_JOBS" ]; do
            wait -n || true
        done
        fuzz_one "$(basename "$d")" &
    done
    wait
    fuzz_failed=0
    for d in tests/fuzz/corpus/*/; do
        t=$(basename "$d")
        if [ -e "$FUZZ_DIR/$t.failed" ]; then
            tail -n 80 "$FUZZ_DIR/$t.log" >&2
            echo "fuzz_$t failed: reproducer and log in $FUZZ_DIR; once fixed, add the" \
                 "reproducer to $d as crash-<what>" >&2
            fuzz_failed=1
        else
            echo "fuzz_$t: $(grep -E '^#[0-9]+' "$FUZZ_DIR/$t.log" | tail -n 1)"
        fi
    done
    [ "$fuzz_failed" = 0 ] || exit 1
    rm -rf "$FUZZ_DIR"
fi

echo "== [${SECONDS}s] real services the end-to-end tests use (tests/services/), started once"
# Each prints its addresses; the tests read them again with `env`.
# (PostgreSQL is already running: started before the unit tests.)
tests/services/kafka start
tests/services/kafka start 3.9
tests/services/kinesalite start
tests/services/iceberg-rest start
tests/services/opensearch start
tests/services/redis start
tests/services/prometheus start

echo "== [${SECONDS}s] end-to-end tests (pytest)"
# ZX_HEAVY_TESTS: the long crash and multi-instance runs (a million Kafka
# messages under SIGKILLs) run in this pass only, not again under ASan.
# ZX_PACKAGE_TESTS: test_packaging.py builds, installs, runs and purges the
# Debian package, in this pass only (once: it runs no zxd of the build).
# ZX_WORKSPACES: every test that runs a zxd runs once on each workspace
# backend (conftest.py); tests/integration/test_postgres.py runs once.
export ZX_WORKSPACES=${ZX_WORKSPACES:-sqlite,postgres}
# Two pytest workers (pytest-xdist), each taking whole files (a module's
# daemon stays in one worker): most of a test's time is waiting on a
# daemon, a timer or a server, so two tests at once take little more
# time than one.  Every test has its own folder, ports, Postgres database,
# topics and streams.  ZX_TEST_WORKERS=1 runs them one at a time.
# Tests marked `serial` restart a server every test shares (conftest.py):
# with two workers they run after the others, one at a time.
TEST_WORKERS="${ZX_TEST_WORKERS:-2}"
workers=()
if [ "$TEST_WORKERS" -gt 1 ]; then
    workers=(-n "$TEST_WORKERS" --dist loadfile -m "not serial")
fi
ZX_HEAVY_TESTS=1 ZX_PACKAGE_TESTS=1 ZX_BUILD_DIR="$PWD/build" python3 -m pytest tests/integration -q -p no:cacheprovider "${workers[@]}" --durations=30 "$@" || tests_failed
if [ "$TEST_WORKERS" -gt 1 ]; then
    ZX_HEAVY_TESTS=1 ZX_PACKAGE_TESTS=1 ZX_BUILD_DIR="$PWD/build" python3 -m pytest tests/integration -q -p no:cacheprovider -m serial "$@" || tests_failed
fi

echo "== [${SECONDS}s] end-to-end tests against the ASan + UBSan build (any sanitizer report fails)"
# On the SQLite workspace only: the processes, rings and sources under test
# are the same on both backends, and the PostgreSQL workspace's own code
# (libpq, COPY) ran under ASan in the unit tests; this keeps the whole run
# within its half hour on two cores.
ninja -C build-asan supervisor/zxd zxctl/zxctl >/dev/null
SAN_DIR=$(mktemp -d /tmp/zx-sanitizers.XXXXXX)
# Left out here: test_debezium_server.py (what it adds to test_debezium*.py
# is a real Debezium Server, not zx code: the same push and Kafka paths run
# here in those), and the scans of process memory for secrets (an ASan
# process's memory is mostly the sanitizer's shadow and quarantine: a scan
# takes a minute and says nothing about zx's own buffers), and the runs
# that only scale up code the smaller tests here run too: the 2 GB upload
# to S3 (a bound on the worker's RSS) and ten million Parquet rows; the
# start with many pipelines starts 100 here, not 300.  The sanitizer
# options must reach pytest's environment: the tests that cannot run under
# ASan skip themselves on ASAN_OPTIONS.
ASAN_OPTIONS="detect_leaks=1:log_path=$SAN_DIR/asan" \
UBSAN_OPTIONS="print_stacktrace=1:log_path=$SAN_DIR/ubsan" ZX_TEST_MANY_PIPELINES=100 \
ZX_WORKSPACES=sqlite ZX_BUILD_DIR="$PWD/build-asan" python3 -m pytest tests/integration -q -p no:cacheprovider "${workers[@]}" \
    --ignore=tests/integration/test_debezium_server.py \
    --deselect "tests/integration/test_debezium_avro.py::test_registry_password_stays_in_its_worker" \
    --deselect "tests/integration/test_worker_secrets.py::test_each_process_holds_only_its_own_secrets" \
    --deselect "tests/integration/test_kinesis.py::test_the_secret_key_is_only_in_the_worker_that_uses_it" \
    --deselect "tests/integration/test_files_s3.py::test_a_2_gb_object_streams_with_bounded_memory" \
    --deselect "tests/integration/test_parquet_files.py::test_ten_million_rows" \
    --durations=15 "$@" || tests_failed
if [ "$TEST_WORKERS" -gt 1 ]; then
    ASAN_OPTIONS="detect_leaks=1:log_path=$SAN_DIR/asan" \
    UBSAN_OPTIONS="print_stacktrace=1:log_path=$SAN_DIR/ubsan" \
    ZX_WORKSPACES=sqlite ZX_BUILD_DIR="$PWD/build-asan" python3 -m pytest tests/integration -q \
        -p no:cacheprovider -m serial "$@" || tests_failed
fi
if [ -n "$(ls -A "$SAN_DIR")" ]; then
    echo "sanitizer reports from zxd/zxctl processes:" >&2
    cat "$SAN_DIR"/* >&2
    exit 1
fi
rm -rf "$SAN_DIR"
echo "== [${SECONDS}s] every test passed"
