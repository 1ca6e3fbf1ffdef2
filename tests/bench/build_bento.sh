#!/usr/bin/env bash
# build_bento.sh — build the peer of kafka_bench.sh, Bento v1.20.0
# (github.com/warpstreamlabs/bento), once, and print the binary's path.
#
# `go install ...@v1.20.0` fails on the module proxy's version list, so the
# command is built inside a small wrapper module that requires it.  Pure Go
# (CGO_ENABLED=0): Bento's SQLite driver is then modernc.org/sqlite, whose
# sql driver name is "sqlite".  The binary is cached at
#   ${XDG_CACHE_HOME:-$HOME/.cache}/zx/bento-v1.20.0/bento
# and the script exits at once when it is there.  The build takes ~15 min
# on 2 cores; it runs under `nice -n 15`.
#
# Environment (all optional):
#   GO          the go command (default: go on PATH, else /usr/local/go/bin/go)
#   BENTO_VERSION  (default v1.20.0)
set -euo pipefail

VERSION=${BENTO_VERSION:-v1.20.0}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/zx
OUT=$CACHE/bento-$VERSION/bento
if [ -x "$OUT" ]; then
    echo "$OUT"
    exit 0
fi

GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[ -x "$GO" ] || { echo "build_bento: no go toolchain (set GO=)" >&2; exit 1; }

SRC=$CACHE/bento-build
mkdir -p "$SRC" "$(dirname "$OUT")"
# the go directive: the toolchain's own version, major.minor.patch
GOVER=$("$GO" env GOVERSION | sed 's/^go//; s/[^0-9.].*$//')
cat >"$SRC/go.mod" <<MOD
module zxbench/bento

go $GOVER

require github.com/warpstreamlabs/bento $VERSION
MOD
cat >"$SRC/tools.go" <<'GOSRC'
//go:build tools

// Pins the Bento command into this wrapper module's build list.
package tools

import _ "github.com/warpstreamlabs/bento/cmd/bento"
GOSRC

cd "$SRC"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
echo "build_bento: building Bento $VERSION in $SRC (takes minutes)" >&2
start=$(date +%s)
nice -n 15 "$GO" mod download github.com/warpstreamlabs/bento >&2
# as the upstream Makefile: stripped (-s -w), the version stamped (bento --version)
nice -n 15 "$GO" build -trimpath \
    -ldflags "-s -w -X main.Version=$VERSION -X main.DateBuilt=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    -o "$SRC/bento.tmp" github.com/warpstreamlabs/bento/cmd/bento >&2
mv "$SRC/bento.tmp" "$OUT"
echo "build_bento: built in $(( $(date +%s) - start )) s" >&2
echo "$OUT"
