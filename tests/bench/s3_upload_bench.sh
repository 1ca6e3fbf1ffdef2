#!/usr/bin/env bash
# s3_upload_bench.sh — one large Parquet file to S3 (moto): zx's uploader
# against boto3's upload_file.
#
# What it measures.  A Parquet file of ZX_BENCH_S3_MB megabytes (default
# 1000, i.e. ~1 GB; random integers, doubles and hex strings, so that it
# does not compress to nothing) is made once with pyarrow and cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/zx/.  It is read once (page cache warm for
# both), then uploaded to the same moto (tests/services/moto) twice:
#   1. zx: tests/bench/s3_put (s3_put.c): zx's uploader (common/aws_s3.h,
#      zx_s3_upload_new / write / commit; static keys, path style), the file
#      read in 8 MiB chunks, 8 MiB parts sent one after the other, each with
#      its SHA-256 checksum (the uploader's default);
#   2. boto3: upload_file with its default TransferConfig (multipart, 8 MiB
#      parts, 10 threads; its default checksum, CRC32 since boto3 1.36).
# After each, boto3's head_object checks the object's size (s3_put's own
# HeadObject too, when it answers), then it is deleted (moto holds objects
# in memory).  For each it prints bytes, seconds, MB/s
# (10^6 bytes), CPU of the uploader (user+sys), its max RSS, and moto's CPU
# over the same upload (moto is one Python process: near 100% of a core, it
# is the limit); then both rates and the ratio zx/boto3.
#
# moto is started if it is not running (ZX_SERVICES_DIR as tests/services
# use it) and stopped at the end if this script started it; its bucket
# (zx-s3-bench-<random>) is deleted.  Only 127.0.0.1.  Never run in CI: it
# is a benchmark, it prints figures and asserts none.
#
# Usage: tests/bench/s3_upload_bench.sh
# Environment (all optional):
#   ZX_BUILD_DIR      build folder (default $PWD/build); s3_put is built
#                     there if missing (ninja -C build tests/bench/s3_put)
#   ZX_BENCH_S3_MB    size of the Parquet file in MB (default 1000)
#   ZX_BENCH_S3_PART_MIB  zx's part size in MiB (default 8, as boto3's)
#   ZX_BENCH_S3_CHECKSUM  zx's part checksum: sha256 (default), md5, none
#   ZX_SERVICES_DIR   where tests/services keep their state
# Needs python3 with boto3 and pyarrow; moto[server] (the service
# script installs it with pip).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${ZX_BUILD_DIR:-$PWD/build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
MB=${ZX_BENCH_S3_MB:-1000}
PART=${ZX_BENCH_S3_PART_MIB:-8}
SUM=${ZX_BENCH_S3_CHECKSUM:-sha256}
MOTO=$REPO/tests/services/moto
PY=$HERE/s3_upload_bench.py
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/zx
FILE=$CACHE/s3bench-${MB}mb.parquet
S3PUT=$BUILD/tests/bench/s3_put

case ${1:-} in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) echo "usage: $0 (no arguments; see --help)" >&2; exit 2 ;;
esac

say() { echo "s3_upload_bench: $*" >&2; }
die() { say "$*"; exit 1; }

python3 -c 'import boto3, pyarrow' 2>/dev/null ||
    die "python3 needs boto3 and pyarrow (pip install boto3 pyarrow)"

MOTO_STARTED=0
EP=
BUCKET=
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$BUCKET" ] && [ "$MOTO_STARTED" = 0 ]; then
        python3 "$PY" delete "$EP" "$BUCKET" 2>/dev/null || say "could not delete bucket $BUCKET"
    fi
    if [ "$MOTO_STARTED" = 1 ]; then
        "$MOTO" stop >/dev/null || say "could not stop moto"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'say interrupted; exit 130' INT TERM

# ---- the uploader and the file -----------------------------------------------
if [ ! -x "$S3PUT" ]; then
    say "building $S3PUT"
    ninja -C "$BUILD" tests/bench/s3_put >&2 || die "cannot build tests/bench/s3_put in $BUILD"
fi
if [ ! -f "$FILE" ]; then
    say "making $FILE (once; pyarrow)"
    mkdir -p "$CACHE"
    python3 "$PY" make "$FILE" "$MB" || die "could not make $FILE"
fi
SIZE=$(stat -c %s "$FILE")
cat "$FILE" >/dev/null     # in the page cache for both uploads

# ---- moto --------------------------------------------------------------------
if ! EP=$("$MOTO" env 2>/dev/null | sed -n 's/^AWS_ENDPOINT=//p') || [ -z "$EP" ]; then
    say "starting moto (tests/services/moto start)"
    MOTO_STARTED=1
    "$MOTO" start >/dev/null || die "tests/services/moto start failed"
    EP=$("$MOTO" env | sed -n 's/^AWS_ENDPOINT=//p')
fi
[ -n "$EP" ] || die "moto printed no AWS_ENDPOINT"
MOTO_PID=$(cat "${ZX_SERVICES_DIR:-/tmp/zx-services}/moto/moto.pid")
BUCKET_NAME=zx-s3-bench-$(python3 -c 'import secrets; print(secrets.token_hex(4))')
BUCKET=$BUCKET_NAME

echo "== one Parquet file to S3 (moto): zx's uploader and boto3's upload_file =="
echo "file: $FILE, $SIZE bytes ($(python3 -c "import sys; print(f'{int(sys.argv[1]) / 1e6:,.0f}')" "$SIZE") MB)"
echo "moto $(python3 -c 'import moto; print(moto.__version__)') at $EP (pid $MOTO_PID); boto3 $(python3 -c 'import boto3; print(boto3.__version__)'); bucket $BUCKET"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) before the runs"

# val LINE KEY: the value of KEY=... in LINE
val() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# show LABEL LINE MOTO_CPU HEAD: the figures of one upload (HEAD: the
# object's size as boto3's head_object gives it)
show() {
    echo "$1: $(val "$2" bytes) bytes in $(val "$2" seconds) s = $(val "$2" mb_per_s) MB/s" \
         "($(val "$2" parts) parts)"
    echo "$1: CPU $(val "$2" user_s) s user + $(val "$2" sys_s) s sys; max RSS" \
         "$(( $(val "$2" max_rss_kb) / 1024 )) MiB; moto's CPU meanwhile $3 s" \
         "($(python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.0%}')" "$3" "$(val "$2" seconds)")" \
         "of one core)"
    echo "$1: object size: $4 bytes (head_object, boto3); the uploader's own HeadObject:" \
         "$(val "$2" head_size)"
    [ "$4" = "$SIZE" ] || { echo "$1: WRONG SIZE: the file has $SIZE bytes"; return 1; }
}
# objsize KEY: the object's size (boto3 head_object), or "missing"
objsize() { python3 "$PY" head "$EP" "$BUCKET" "$1" 2>/dev/null || echo missing; }
cpu_diff() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }
FAILED=0

echo
echo "-- zx ($S3PUT, ${PART} MiB parts, $SUM checksums) --"
c0=$(python3 "$PY" cpu "$MOTO_PID")
if ZX=$("$S3PUT" "$EP" "$BUCKET" zx.parquet "$FILE" "$PART" "$SUM"); then
    c1=$(python3 "$PY" cpu "$MOTO_PID")
    show zx "$ZX" "$(cpu_diff "$c0" "$c1")" "$(objsize zx.parquet)" || { ZX=; FAILED=1; }
    python3 "$PY" delete "$EP" "$BUCKET" zx.parquet
else
    echo "zx: FAILED"; ZX=; FAILED=1
fi

echo
echo "-- boto3 (upload_file, default TransferConfig) --"
c0=$(python3 "$PY" cpu "$MOTO_PID")
if B3=$(python3 "$PY" boto3 "$EP" "$BUCKET" boto3.parquet "$FILE"); then
    c1=$(python3 "$PY" cpu "$MOTO_PID")
    show boto3 "$B3" "$(cpu_diff "$c0" "$c1")" "$(objsize boto3.parquet)" || { B3=; FAILED=1; }
    echo "boto3: $(val "${B3:-x=1}" threads) threads"
    python3 "$PY" delete "$EP" "$BUCKET" boto3.parquet
else
    echo "boto3: FAILED"; B3=; FAILED=1
fi

echo
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
z=${ZX:+$(val "$ZX" mb_per_s)}
b=${B3:+$(val "$B3" mb_per_s)}
echo "zx: ${z:-n/a} MB/s ... boto3: ${b:-n/a} MB/s ... ratio zx/boto3:" \
     "$( [ -n "$z" ] && [ -n "$b" ] && python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$z" "$b" || echo n/a)"
exit $FAILED
