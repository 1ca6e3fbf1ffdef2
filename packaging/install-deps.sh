#!/usr/bin/env bash
# Install what zx needs to build and test on Debian 12, only what is missing.
# The one list of zx's Debian packages.  Usage: packaging/install-deps.sh [--test]
set -euo pipefail

BUILD_PKGS="gcc pkg-config meson ninja-build libevent-dev libmsgpack-dev liblmdb-dev
libyaml-dev libsqlite3-dev libjansson-dev zlib1g-dev"
TEST_PKGS="sqlite3 curl wrk libjson-c-dev libcjson-dev"

want="$BUILD_PKGS"
if [ "${1:-}" = "--test" ]; then want="$want $TEST_PKGS"; fi

missing=""
for p in $want; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    echo "zx: installing Debian packages:$missing" >&2
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# The end-to-end tests need python3 with pytest: the machine's python3 if it
# has pytest, else Debian's python3-pytest, else pip.
if [ "${1:-}" = "--test" ]; then
    if ! command -v python3 >/dev/null; then
        DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq python3 >/dev/null
    fi
    if ! python3 -c 'import pytest' 2>/dev/null; then
        if [ "$(command -v python3)" = /usr/bin/python3 ]; then
            SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
            $SUDO apt-get update -qq
            DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pytest >/dev/null
        else
            python3 -m pip install -q "pytest>=7"
        fi
    fi
fi
