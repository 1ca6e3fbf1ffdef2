#!/usr/bin/env bash
# Install what zx needs on Debian 12, only what is missing.  The one list of
# zx's Debian packages.  Usage: packaging/install-deps.sh [--test]
#   (no option)  build and run zx, and try it as the README shows (curl,
#                sqlite3): what ./run.sh needs
#   --test       also what ./test.sh needs: wrk, the JSON libraries the
#                benchmarks compare with, clang (libFuzzer), ccache (the test
#                builds compile many files twice), pytest, for the
#                real Kafka brokers of tests/services/kafka: Java, Maven (it
#                fetches Kafka's jars; a JDK: tests/services/iceberg-rest
#                compiles its small launcher), openssl, kcat and confluent-kafka
#                (from PyPI), and for the PostgreSQL server of
#                tests/services/postgres: postgresql-15 and psycopg 3 (from
#                PyPI)
# For reverse syncs: libzstd and libsnappy (Parquet), libmariadb (MySQL and
# MariaDB destinations), libxxhash (row hashes); mariadb-server for the real
# MariaDB of tests/services/mariadb.
# libpq-dev is a build dependency: the PostgreSQL workspace links libpq.
# Avro messages: libavro-dev (avro-c, schemas) and libcurl4-openssl-dev (the
# schema registry client, common/schema_registry.c).
# The Redis destination: libhiredis-dev (its protocol code; TLS is zx's own
# OpenSSL) and, for tests/services/redis, redis-server (7.0 on Debian 12).
# GET /metrics: prometheus (2.42 on Debian 12: promtool, and the server of
# tests/services/prometheus; under systemd the package also enables its own
# prometheus.service on :9090, which the tests do not use) and
# prometheus-client (PyPI).
# graphviz: `dot -Tsvg` draws `zxctl lineage --format dot` in its test.
# The status page's browser test: Debian's chromium, driven by playwright
# (PyPI) with chromium as its executable (no `playwright install`).
# The Debian package's test (tests/integration/test_packaging.py):
# debhelper, dpkg-dev and fakeroot build it (packaging/build-deb.sh),
# lintian checks it, adduser makes its user, systemd's systemd-analyze
# checks its unit.
# Another apt or dpkg holding the lock (unattended-upgrades on a new VM) is
# waited for, up to ZX_APT_LOCK_WAIT seconds (default 600), with a message.
set -euo pipefail

BUILD_PKGS="gcc pkg-config meson ninja-build libevent-dev libmsgpack-dev liblmdb-dev
libyaml-dev libsqlite3-dev libjansson-dev zlib1g-dev librdkafka-dev libpq-dev
libzstd-dev libsnappy-dev libmariadb-dev libxxhash-dev libssl-dev
libavro-dev libcurl4-openssl-dev libhiredis-dev"
RUN_PKGS="curl sqlite3"
TEST_PKGS="wrk libjson-c-dev libcjson-dev clang default-jre-headless default-jdk-headless maven openssl kcat
postgresql-15 mariadb-server ccache redis-server prometheus graphviz chromium
debhelper dpkg-dev fakeroot lintian adduser systemd"
LOCK_WAIT="${ZX_APT_LOCK_WAIT:-600}"

want="$BUILD_PKGS $RUN_PKGS"
if [ "${1:-}" = "--test" ]; then want="$want $TEST_PKGS"; fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# Another apt or dpkg holding the lock: say so and wait.  apt-get waits for
# dpkg's lock by itself (DPkg::Lock::Timeout) but not for the lists lock of
# `apt-get update`, so a lock error is also retried every 5 s.  fuser (psmisc)
# only adds the message before apt-get starts waiting silently.
lock_msg_shown=0
lock_msg() {
    if [ "$lock_msg_shown" = 0 ]; then
        echo "zx: another apt/dpkg is running (e.g. unattended-upgrades on a new machine);" \
             "waiting up to ${LOCK_WAIT}s for it to finish..." >&2
        lock_msg_shown=1
    fi
}

apt_get() {
    local waited=0 err rc
    if command -v fuser >/dev/null &&
       $SUDO fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock \
           /var/lib/apt/lists/lock >/dev/null 2>&1; then
        lock_msg
    fi
    err=$(mktemp)
    while :; do
        rc=0
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout="$LOCK_WAIT" \
            "$@" 2>"$err" || rc=$?
        if [ "$rc" != 0 ] && grep -q "Could not get lock" "$err" && [ "$waited" -lt "$LOCK_WAIT" ]; then
            lock_msg
            sleep 5
            waited=$((waited + 5))
            continue
        fi
        cat "$err" >&2
        rm -f "$err"
        if [ "$rc" != 0 ] && [ "$waited" -ge "$LOCK_WAIT" ]; then
            echo "zx: the apt/dpkg lock was still held after ${LOCK_WAIT}s (ZX_APT_LOCK_WAIT)" >&2
        fi
        return "$rc"
    done
}

missing=""
for p in $want; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    echo "zx: installing Debian packages:$missing" >&2
    apt_get update -qq
    # -qq keeps apt quiet on success; its errors still reach the terminal
    # shellcheck disable=SC2086  # one word per package
    apt_get install -y -qq $missing >/dev/null
fi

# The end-to-end tests need python3 with pytest: the machine's python3 if it
# has pytest, else Debian's python3-pytest, else pip.
if [ "${1:-}" = "--test" ]; then
    if ! command -v python3 >/dev/null; then
        apt_get install -y -qq python3 >/dev/null
    fi
    if ! python3 -c 'import pytest' 2>/dev/null; then
        if [ "$(command -v python3)" = /usr/bin/python3 ]; then
            apt_get update -qq
            apt_get install -y -qq python3-pytest >/dev/null
        else
            python3 -m pip install -q "pytest>=7"
        fi
    fi
    # The tests' Kafka client: confluent-kafka from PyPI, whose wheel bundles
    # a recent librdkafka (tests/integration/requirements.txt).  Not Debian's
    # python3-confluent-kafka: it uses Debian's librdkafka 2.0.2, whose SCRAM
    # fails against Kafka 4.x brokers (fixed in librdkafka 2.6.1).
    pip_opts=(-q)
    pip_ready=0
    pip_setup() {
        [ "$pip_ready" = 1 ] && return 0
        if [ "$(command -v python3)" = /usr/bin/python3 ]; then
            if ! python3 -m pip --version >/dev/null 2>&1; then
                apt_get update -qq
                apt_get install -y -qq python3-pip >/dev/null
            fi
            # Debian's python3 is "externally managed" (PEP 668)
            pip_opts+=(--break-system-packages)
        fi
        pip_ready=1
    }
    if ! python3 -c 'import sys, confluent_kafka
v = tuple(int(x) for x in confluent_kafka.libversion()[0].split(".")[:3])
sys.exit(v < (2, 6, 1))' 2>/dev/null; then
        pip_setup
        echo "zx: installing confluent-kafka from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "confluent-kafka>=2.6.1"
    fi
    # pytest-xdist: the end-to-end suite runs its files on two workers
    # (test.sh); most of a test's time is waiting on a daemon or a server.
    if ! python3 -c 'import xdist' 2>/dev/null; then
        pip_setup
        echo "zx: installing pytest-xdist from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "pytest-xdist>=3.1"
    fi
    # The tests' PostgreSQL client (tests/integration/pg_fixtures.py):
    # psycopg 3 from PyPI, whose binary wheel bundles its own libpq.
    if ! python3 -c 'import sys, psycopg
sys.exit(int(psycopg.__version__.split(".")[0]) < 3)' 2>/dev/null; then
        pip_setup
        echo "zx: installing psycopg (3, binary) from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "psycopg[binary]>=3.1"
    fi
    # Independent readers of what reverse syncs write (pyarrow and duckdb
    # read the Parquet files; duckdb hands timestamps with a time zone to
    # Python through pytz, which it does not depend on) and the MariaDB
    # client of the tests (PyMySQL, pure Python).
    if ! python3 -c 'import pyarrow, duckdb, pymysql, pytz' 2>/dev/null; then
        pip_setup
        echo "zx: installing pyarrow, duckdb, pytz and PyMySQL from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "pyarrow>=14" "duckdb>=0.10" "pytz" \
            "PyMySQL>=1.1"
    fi
    # Iceberg clients of tests/services/iceberg-rest: pyiceberg (with its
    # pyarrow I/O) and daft.  daft 0.7 wants pyarrow < 26: pip may move
    # pyarrow down a version here.  fastavro: a second reader of zx's
    # Iceberg manifests (test_iceberg_manifest.py).
    if ! python3 -c 'import pyiceberg, daft, fastavro' 2>/dev/null; then
        pip_setup
        echo "zx: installing pyiceberg, daft and fastavro from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "pyiceberg[pyarrow]>=0.9" "daft>=0.4" \
            "fastavro>=1.9"
    fi
    # Delta Lake readers of the delta destination: delta-rs and Polars, in
    # versions that read deletion vectors (delta-rs' own scan from 1.4.2;
    # Polars 2.1 through it, as tested).
    if ! python3 -c 'import deltalake, polars
v = lambda m: tuple(int(x) for x in m.__version__.split(".")[:3] if x.isdigit())
assert v(deltalake) >= (1, 4, 2) and v(polars) >= (2, 1)' 2>/dev/null; then
        pip_setup
        echo "zx: installing deltalake and polars from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "deltalake>=1.4.2" "polars>=2.1"
    fi
    # A second roaring codec for Delta's deletion vectors: pyroaring's
    # BitMap64 (CRoaring; test_delta_dv_interop.py).
    if ! python3 -c 'from pyroaring import BitMap64' 2>/dev/null; then
        pip_setup
        echo "zx: installing pyroaring from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "pyroaring>=1.0"
    fi
    # The opensearch destination's reader: opensearch-py (its node:
    # tests/services/opensearch, from Maven Central's jars).
    if ! python3 -c 'import opensearchpy' 2>/dev/null; then
        pip_setup
        echo "zx: installing opensearch-py from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "opensearch-py>=2.4"
    fi
    # Python's cryptography: the secret store's second reader
    # (test_secrets.py) and the CA and certificates of the TLS proxy of
    # tests/integration/tls_proxy.py.
    if ! python3 -c 'from cryptography import x509' 2>/dev/null; then
        pip_setup
        echo "zx: installing cryptography from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "cryptography>=38"
    fi
    # The parser of zxd's GET /metrics in test_metrics.py: prometheus-client
    # (its Prometheus server and promtool: Debian's prometheus, above).
    if ! python3 -c 'import prometheus_client' 2>/dev/null; then
        pip_setup
        echo "zx: installing prometheus-client from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "prometheus-client>=0.17"
    fi
    # The status page's test drives Debian's chromium with Playwright.
    if ! python3 -c 'import playwright.sync_api' 2>/dev/null; then
        pip_setup
        echo "zx: installing playwright from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "playwright>=1.40"
    fi
    # The Redis destination's tests read Redis back with redis-py.
    if ! python3 -c 'import redis' 2>/dev/null; then
        pip_setup
        echo "zx: installing redis (redis-py) from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "redis>=5"
    fi
    # kinesalite (tests/services/kinesalite) runs on Node.js with npm: the
    # machine's own when it has them (NodeSource's nodejs bundles npm and
    # conflicts with Debian's npm package), else Debian's.
    if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
        echo "zx: installing Debian packages: nodejs npm" >&2
        apt_get update -qq
        apt_get install -y -qq nodejs npm >/dev/null
    fi
    # The AWS tests: boto3 (the tests' Kinesis client) and moto's server
    # (tests/services/moto); kinesalite comes from npm (tests/services/kinesalite).
    if ! python3 -c 'import boto3, moto.server, flask_cors' 2>/dev/null; then
        pip_setup
        echo "zx: installing boto3 and moto[server] from PyPI" >&2
        python3 -m pip install "${pip_opts[@]}" "boto3>=1.34" "moto[server]>=5.2"
    fi
fi
