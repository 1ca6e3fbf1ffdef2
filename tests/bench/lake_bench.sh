#!/usr/bin/env bash
# lake_bench.sh — zx's reverse sync in mode mirror (key id) into Delta Lake
# and Apache Iceberg tables, measured on this machine, with dlt and
# pyiceberg on the same rows one after the other (never at once).
#
#  The workspace: a SQLite file with ZX_BENCH_ROWS rows (default 1,000,000:
#  id, email, plan, amount, active, updated_at).  One series (lake_bench.py)
#  is three runs on a fresh table: the first run; a run after 1% of the rows
#  changed at random (0.5% updated, 0.5% deleted); a run after 1% changed in
#  a cluster (the last 1% of ids: half updated, half deleted).  For each:
#  seconds (the run record's ended_at - started_at), files added/removed and
#  bytes written (the run record), live files and bytes of the table after
#  it (read from the table), and a check: the table read back (deltalake,
#  pyiceberg) holds exactly the workspace's rows (count, sum(id),
#  sum(amount), updated rows).  zx marks replaced rows in deletion vectors
#  (Delta) and position delete files (Iceberg) of tables it creates; each
#  target is measured with file_rows 262144 (the default) and 20000.
#  Targets: delta in a folder, delta in moto's S3 (tests/services/moto),
#  iceberg through a REST catalog (tests/services/iceberg-rest) with a
#  folder warehouse, and with an s3:// warehouse in moto.  This script
#  starts its own two catalogs (its own ZX_SERVICES_DIR and ports; the
#  shared one on 18181 is left alone) and stops them at the end.  moto is
#  reused when running (and then left running), else started and stopped.
#  The floor: zx mode replace of the same rows into one Parquet file
#  (destination files, zstd); printed: zx's first run / floor.
#  The peers, in a folder only, each given every current row plus a
#  tombstone per deleted id (a mirror by hand): dlt (filesystem destination,
#  table_format delta, then iceberg; write_disposition merge, strategy
#  upsert, a hard_delete column; dlt's iceberg upsert is pyiceberg's
#  table.upsert and has no hard_delete, so it gets no tombstones and its
#  table is checked to hold the deleted rows still) and pyiceberg's
#  table.upsert + table.delete through the folder catalog.  Their times
#  include reading the SQLite rows into Arrow with sqlite3 (shown apart).
#  Printed: zx / peer (below 1: zx is faster), with and without that read.
#  Every zx series is run ZX_BENCH_REPEAT times (default 2); medians shown.
#  No thresholds: it measures.  Never run in CI.
#
# Usage: tests/bench/lake_bench.sh [--quick]
#   --quick   ZX_BENCH_ROWS=100000 and ZX_BENCH_REPEAT=1 unless set
#
# Needs: zxd and zxctl built (meson setup build -Dbuildtype=release; ninja
# -C build), python3 with pyarrow, deltalake, pyiceberg, boto3; java for
# the catalogs.  Installs dlt from PyPI when missing (pip
# --break-system-packages "dlt[deltalake]==$DLT_VERSION" sqlalchemy: for
# this bench only, not in packaging/install-deps.sh; sqlalchemy is what
# dlt's iceberg table format needs for its in-memory catalog; not
# pyiceberg-core, which would change the pyiceberg of everyone's tests).
#
# Environment (all optional):
#   ZX_BENCH_ROWS          rows (default 1000000)
#   ZX_BENCH_REPEAT        repetitions of each zx series (default 2)
#   ZX_BENCH_SKIP_S3=1     folder targets only
#   ZX_BENCH_SKIP_ICEBERG_S3=1   no Iceberg in S3
#   ZX_BENCH_SKIP_PEERS=1  zx only
#   ZX_BENCH_PEERS         the peers run (default "dlt-delta dlt-iceberg pyiceberg")
#   ZX_BENCH_PEER_TIMEOUT  seconds a peer's series may take (default 1800; dlt
#                          ignores SIGTERM while loading: SIGKILL 20 s later)
#   ZX_BUILD_DIR           build folder (default <repo>/build)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
DLT_VERSION=1.31.0
QUICK=0
for arg in "$@"; do
    case $arg in
        --quick) QUICK=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "lake_bench: unknown argument $arg (--quick, --help)" >&2; exit 2 ;;
    esac
done
if [ "$QUICK" = 1 ]; then
    ROWS=${ZX_BENCH_ROWS:-100000}; REPEAT=${ZX_BENCH_REPEAT:-1}
else
    ROWS=${ZX_BENCH_ROWS:-1000000}; REPEAT=${ZX_BENCH_REPEAT:-2}
fi
case $ROWS$REPEAT in *[!0-9]*) echo "lake_bench: ZX_BENCH_ROWS and ZX_BENCH_REPEAT are numbers" >&2; exit 2 ;; esac
BUILD=${ZX_BUILD_DIR:-$REPO/build}
PY="python3 $HERE/lake_bench.py"
SKIP_S3=${ZX_BENCH_SKIP_S3:-0}
SKIP_ICE_S3=${ZX_BENCH_SKIP_ICEBERG_S3:-$SKIP_S3}
SKIP_PEERS=${ZX_BENCH_SKIP_PEERS:-0}
PEER_TIMEOUT=${ZX_BENCH_PEER_TIMEOUT:-1800}

die() { echo "lake_bench: $*" >&2; exit 1; }
say() { echo "lake_bench: $*" >&2; }
step() { echo "-- $*" >&2; }
[ -x "$BUILD/supervisor/zxd" ] || die "zxd not built at $BUILD/supervisor/zxd (set ZX_BUILD_DIR)"
[ -x "$BUILD/zxctl/zxctl" ] || die "zxctl not built at $BUILD/zxctl/zxctl"
python3 -c 'import pyarrow, deltalake, pyiceberg, boto3' 2>/dev/null ||
    die "python3 with pyarrow, deltalake, pyiceberg and boto3 is needed"
if [ "$SKIP_PEERS" != 1 ] && ! python3 -c 'import dlt, sqlalchemy' 2>/dev/null; then
    say "installing dlt $DLT_VERSION from PyPI"
    pip install -q --break-system-packages "dlt[deltalake]==$DLT_VERSION" sqlalchemy >&2 ||
        die "pip install dlt failed"
fi

T_START=$(date +%s)
WORK=$(mktemp -d /tmp/zx_lake_bench.XXXXXX)
mkdir -p "$WORK/bin" "$WORK/out" "$WORK/zxd" "$WORK/res"
cp "$BUILD/supervisor/zxd" "$BUILD/zxctl/zxctl" "$WORK/bin/"
ZXD=$WORK/bin/zxd
ZXCTL=$WORK/bin/zxctl
ZXD_PID=
MOTO_WAS_RUNNING=0
CATALOGS=()
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

stop_zxd() {
    [ -n "${ZXD_PID:-}" ] || return 0
    kill -TERM "$ZXD_PID" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$ZXD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$ZXD_PID" 2>/dev/null || true
    wait "$ZXD_PID" 2>/dev/null || true
    ZXD_PID=
}
cleanup() {
    local rc=$?
    set +e
    stop_zxd
    for c in "${CATALOGS[@]}"; do
        ZX_SERVICES_DIR=$c "$REPO/tests/services/iceberg-rest" stop >/dev/null 2>&1
    done
    [ "$MOTO_WAS_RUNNING" = 0 ] && [ "$SKIP_S3" != 1 ] &&
        "$REPO/tests/services/moto" stop >/dev/null 2>&1
    rm -rf "$WORK/bin" "$WORK/out" "$WORK/dlt_out" "$WORK/dlt_pipelines" "$WORK/ws.db"* "$WORK/zxd/var"
    say "zxd log and measurements kept in $WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- services ------------------------------------------------------------------------------
S3ARGS=()
if [ "$SKIP_S3" != 1 ]; then
    "$REPO/tests/services/moto" env >/dev/null 2>&1 && MOTO_WAS_RUNNING=1
    MENV=$("$REPO/tests/services/moto" start) || die "moto did not start"
    S3_ENDPOINT=$(sed -n 's/^AWS_ENDPOINT=//p' <<<"$MENV")
    S3_REGION=$(sed -n 's/^REGION=//p' <<<"$MENV")
    S3_KEY=$(sed -n 's/^AWS_ACCESS_KEY_ID=//p' <<<"$MENV")
    S3_SECRET=$(sed -n 's/^AWS_SECRET_ACCESS_KEY=//p' <<<"$MENV")
    BUCKET=zx-lakebench-$$
    python3 - "$S3_ENDPOINT" "$S3_REGION" "$S3_KEY" "$S3_SECRET" "$BUCKET" <<'PY' || die "could not make the bucket"
import sys, boto3
e, r, k, s, b = sys.argv[1:]
boto3.client("s3", endpoint_url=e, region_name=r, aws_access_key_id=k,
             aws_secret_access_key=s).create_bucket(Bucket=b)
PY
    S3ARGS=(--s3-endpoint "$S3_ENDPOINT" --s3-region "$S3_REGION" --s3-key "$S3_KEY" --s3-secret "$S3_SECRET")
fi
catalog() {  # DIR [WAREHOUSE]: start an iceberg-rest of this bench; prints its URI
    local dir=$1 port out
    port=$(free_port)
    CATALOGS+=("$dir")
    if [ -n "${2:-}" ]; then
        out=$(ZX_SERVICES_DIR=$dir ZX_ICEBERG_PORT=$port ZX_ICEBERG_WAREHOUSE=$2 \
              ZX_ICEBERG_S3_ENDPOINT=$S3_ENDPOINT ZX_ICEBERG_S3_REGION=$S3_REGION \
              ZX_ICEBERG_S3_KEY=$S3_KEY ZX_ICEBERG_S3_SECRET=$S3_SECRET \
              "$REPO/tests/services/iceberg-rest" start) || return 1
    else
        out=$(ZX_SERVICES_DIR=$dir ZX_ICEBERG_PORT=$port "$REPO/tests/services/iceberg-rest" start) || return 1
    fi
    echo "$out" >"$dir.env"
}
step "starting the Iceberg REST catalogs"
catalog "$WORK/cat_dir" || die "the folder catalog did not start"
CAT_DIR_URI=$(sed -n 's/^ICEBERG_REST_URI=//p' "$WORK/cat_dir.env")
CAT_DIR_WH=$(sed -n 's/^ICEBERG_WAREHOUSE=file:\/\///p' "$WORK/cat_dir.env")
CAT_S3_URI=
if [ "$SKIP_ICE_S3" != 1 ]; then
    catalog "$WORK/cat_s3" "s3://$BUCKET/wh" || die "the S3 catalog did not start"
    CAT_S3_URI=$(sed -n 's/^ICEBERG_REST_URI=//p' "$WORK/cat_s3.env")
fi

# ---- what runs where -----------------------------------------------------------------------
{
    printf '{"machine": "%s cores, %s, load average at start %s",\n' "$(nproc)" \
        "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf ' "zx": "%s, commit %s, build %s",\n' "$("$ZXD" --version 2>&1 | head -1)" \
        "$(git -C "$REPO" log -1 --format='%h' 2>/dev/null)" \
        "$(python3 -c 'import json,sys; print([o["value"] for o in json.load(open(sys.argv[1])) if o["name"] == "buildtype"][0])' \
            "$BUILD/meson-info/intro-buildoptions.json" 2>/dev/null || echo '?')"
    printf ' "python": "pyarrow %s, deltalake %s, pyiceberg %s, dlt %s"}\n' \
        "$(python3 -c 'import pyarrow; print(pyarrow.__version__)')" \
        "$(python3 -c 'import deltalake; print(deltalake.__version__)')" \
        "$(python3 -c 'import pyiceberg; print(pyiceberg.__version__)')" \
        "$(python3 -c 'import dlt; print(dlt.__version__)' 2>/dev/null || echo -)"
} >"$WORK/res/meta.json"

# ---- the workspace -------------------------------------------------------------------------
DB=$WORK/ws.db
step "making $ROWS rows in $DB"
$PY make-ws --db "$DB" --rows "$ROWS" >"$WORK/res/ws.json" || die "could not make the workspace"

# ---- zxd: every sync in one configuration --------------------------------------------------
NS=lakebench_$$
declare -A SERIES=()   # sync name -> the arguments of its zx-series
SYNCS=""              # "name": destination, ... (JSON)
add_sync() {  # NAME DEST_JSON SERIES_ARGS...
    local name=$1 dest=$2; shift 2
    SYNCS+="${SYNCS:+, }\"$name\": $dest"
    SERIES[$name]="$*"
}
ORDER=()
for rep in $(seq 1 "$REPEAT"); do
    for fr in default 20000; do
        frj=""; [ "$fr" != default ] && frj=", \"file_rows\": $fr"
        n=delta_dir_${fr}_$rep
        add_sync "$n" "{\"delta\": {\"path\": \"$WORK/out/$n\"$frj}}" \
            --kind delta --where folder --file-rows $fr --path "$WORK/out/$n"
        ORDER+=("$n")
        n=ice_dir_${fr}_$rep
        add_sync "$n" "{\"iceberg\": {\"catalog\": \"cat_dir\", \"namespace\": \"$NS\", \"table\": \"$n\"$frj}}" \
            --kind iceberg --where folder --file-rows $fr --catalog-uri "$CAT_DIR_URI" --ident "$NS.$n"
        ORDER+=("$n")
        if [ "$SKIP_S3" != 1 ]; then
            n=delta_s3_${fr}_$rep
            add_sync "$n" "{\"delta\": {\"path\": \"s3://$BUCKET/delta/$n\", \"connection\": \"s3\"$frj}}" \
                --kind delta --where s3 --file-rows $fr --path "s3://$BUCKET/delta/$n"
            ORDER+=("$n")
        fi
        if [ "$SKIP_ICE_S3" != 1 ]; then
            n=ice_s3_${fr}_$rep
            add_sync "$n" "{\"iceberg\": {\"catalog\": \"cat_s3\", \"namespace\": \"$NS\", \"table\": \"$n\", \"connection\": \"s3\"$frj}}" \
                --kind iceberg --where s3 --file-rows $fr --catalog-uri "$CAT_S3_URI" --ident "$NS.$n"
            ORDER+=("$n")
        fi
    done
done
add_sync warm_delta_dir "{\"delta\": {\"path\": \"$WORK/out/warm_delta\"}}"
WARM=(warm_delta_dir)
add_sync warm_ice_dir "{\"iceberg\": {\"catalog\": \"cat_dir\", \"namespace\": \"$NS\", \"table\": \"warm\"}}"
WARM+=(warm_ice_dir)
if [ "$SKIP_S3" != 1 ]; then
    add_sync warm_delta_s3 "{\"delta\": {\"path\": \"s3://$BUCKET/delta/warm\", \"connection\": \"s3\"}}"
    WARM+=(warm_delta_s3)
fi
if [ "$SKIP_ICE_S3" != 1 ]; then
    add_sync warm_ice_s3 "{\"iceberg\": {\"catalog\": \"cat_s3\", \"namespace\": \"$NS\", \"table\": \"warm\", \"connection\": \"s3\"}}"
    WARM+=(warm_ice_s3)
fi
add_sync floor "{\"files\": {\"path\": \"$WORK/out/floor\", \"format\": \"parquet\", \"compression\": \"zstd\"}}"
SYNCS="{$SYNCS}"
mkdir -p "$WORK/out/floor"
CATS3=(); [ -n "$CAT_S3_URI" ] && CATS3=(--catalog-s3 "$CAT_S3_URI")
$PY config --out "$WORK/zxd/zxd.yaml" --db "$DB" --port "$(free_port)" --syncs "$SYNCS" \
    --file-roots "$WORK/out" "$CAT_DIR_WH" --catalog-dir "$CAT_DIR_URI" "${CATS3[@]}" "${S3ARGS[@]}"
"$ZXD" -c "$WORK/zxd/zxd.yaml" --check >"$WORK/zxd/check.txt" 2>&1 ||
    { cat "$WORK/zxd/check.txt" >&2; die "zxd --check refused $WORK/zxd/zxd.yaml"; }
setsid "$ZXD" -c "$WORK/zxd/zxd.yaml" >"$WORK/zxd/zxd.log" 2>&1 </dev/null &
ZXD_PID=$!
SOCK=
for _ in $(seq 1 300); do
    for s in "$WORK/zxd/zxd.sock" "$WORK/zxd/var/zxd.sock"; do [ -S "$s" ] && SOCK=$s; done
    [ -n "$SOCK" ] && "$ZXCTL" -s "$SOCK" status >/dev/null 2>&1 && break
    kill -0 "$ZXD_PID" 2>/dev/null || { tail -20 "$WORK/zxd/zxd.log" >&2; die "zxd exited"; }
    sleep 0.1
done
"$ZXCTL" -s "$SOCK" status >/dev/null 2>&1 || { tail -20 "$WORK/zxd/zxd.log" >&2; die "zxd did not answer"; }
ZXARGS=(--zxctl "$ZXCTL" --sock "$SOCK")

# ---- the floor, then every zx series -------------------------------------------------------
step "warming up: one small run into each kind of target (not measured)"
for n in "${WARM[@]}"; do
    $PY warm "${ZXARGS[@]}" --name "$n" >"$WORK/warm_$n.json" || say "warm-up $n failed: $(cat "$WORK/warm_$n.json")"
done
step "floor: zx replace into one Parquet file"
$PY floor "${ZXARGS[@]}" --name floor --file "$WORK/out/floor/floor.parquet" >"$WORK/res/floor.json" ||
    say "the floor failed: $(cat "$WORK/res/floor.json")"
for n in "${ORDER[@]}"; do
    step "zx $n"
    rep=${n##*_}
    # shellcheck disable=SC2086  # the series' arguments split into words
    $PY zx-series "${ZXARGS[@]}" "${S3ARGS[@]}" --db "$DB" --name "$n" --seed "$rep" ${SERIES[$n]} \
        >"$WORK/res/zx_$n.json" || say "zx series $n failed"
    # the folder tables are not needed any more
    case $n in delta_dir_*) rm -rf "${WORK:?}/out/$n" ;; esac
done
stop_zxd

# ---- the peers (folder only), on the series of the first repetition's seed -----------------
if [ "$SKIP_PEERS" != 1 ]; then
    for kind in ${ZX_BENCH_PEERS:-dlt-delta dlt-iceberg pyiceberg}; do
        step "peer $kind"
        rm -rf "$WORK/dlt_out" "$WORK/dlt_pipelines"
        mkdir -p "$WORK/dlt_out"
        timeout -k 20 "$PEER_TIMEOUT" $PY peer --db "$DB" --kind "$kind" --seed 1 --out "$WORK/dlt_out" \
            --pipelines-dir "$WORK/dlt_pipelines" --catalog-uri "$CAT_DIR_URI" \
            --namespace "${NS}_peer" >"$WORK/res/peer_$kind.json" || {
            say "peer $kind failed or took more than $PEER_TIMEOUT s"
            [ -s "$WORK/res/peer_$kind.json" ] ||
                echo "{\"kind\": \"$kind\", \"runs\": [], \"error\": \"failed or not done in $PEER_TIMEOUT s (ZX_BENCH_PEER_TIMEOUT)\"}" \
                    >"$WORK/res/peer_$kind.json"
        }
    done
fi

# what zxd keeps for its mirror runs (the keys' hashes of every sync)
echo "{\"store_bytes\": $(du -sb "$WORK/zxd/var" | cut -f1), \"syncs\": ${#ORDER[@]}}" >"$WORK/res/store.json"
$PY report --dir "$WORK/res" | tee "$WORK/report.txt"
echo "whole script: $(( $(date +%s) - T_START )) s"
