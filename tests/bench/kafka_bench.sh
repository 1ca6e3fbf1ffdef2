#!/usr/bin/env bash
# kafka_bench.sh — Kafka to SQLite: zxd against a peer, Bento v1.20.0.
#
# Preloads ZX_BENCH_ROWS (default 1,000,000) JSON messages of ~200 bytes
# (unique ids; id int, user, event, url, ts text, amount float, ok bool,
# tags array, note) into a fresh topic of 6 partitions on a real Apache
# Kafka broker, then consumes the whole topic into a SQLite file (WAL,
# synchronous=NORMAL), one consumer after the other on the same machine:
#   1. zxd: one `source: kafka` stream pipeline, consumer group zx-bench,
#      from the oldest offset, into table bench of <data_dir>/workspace.db;
#   2. Bento: input kafka_franz (consumer group bento-bench, from the oldest
#      offset), output sql_insert (driver sqlite, modernc.org/sqlite), batches
#      of 100 rows or 1 s, 2 batches in flight, the table created by
#      init_statement with one column per field (tags as JSON text).
# Bento's batch size: sql_insert sends a batch as one multi-row INSERT, and
# modernc.org/sqlite binds parameters in O(n^2) (conn.bind looks each of the
# n = rows x 9 parameters up in the whole argument list), so batches of
# 1,000 rows cost ~90-110 CPU-s per million rows (7k-17k rows/s here), where
# 50-200 rows cost ~40 CPU-s (~38-41k rows/s) on the same 2-core machine;
# max_in_flight 1, 2, 4 and 64 were tried too: 2 was best.  The default is
# the peer's best; ZX_BENCH_BENTO_BATCH=1000 shows the other.
# Each run starts the consumer, polls the table until it holds every row
# (30 min deadline) and stops the consumer.  For each it prints:
#   - rows/s: rows / seconds from the start of the process until the table
#     held them all (and the same from the first row committed);
#   - CPU seconds per million rows: user+sys of every process of the
#     consumer's tree (from /proc/<pid>/stat, sampled every 0.5 s, the last
#     sample taken when the table is complete);
#   - peak RSS (VmHWM) of each process, their sum, and the peak of the sum
#     of their PSS (sampled every 0.5 s; zxd's processes share their rings);
#   - the rows in the table after the stop, and how many distinct ids;
# then a summary line with the ratio zx/bento of rows/s.
# The limit, in the same run (after zx, with --zx-only too): the same
# messages through one prepared INSERT into SQLite, a transaction per
# 20,000 rows, into a table made by the statement zx made
# (tests/bench/sqlite_insert_limit, built with zx; parsing not timed);
# the summary prints it and the ratio zx/limit.  --no-limit skips it.
#
# The table is polled with `SELECT max(rowid)` (a read of one b-tree path,
# where count(*) would read the whole table every poll on a 2-core machine);
# the end is confirmed with count(*), and if rowids have gaps the poll
# falls back to count(*) once a second.
#
# The broker: ZX_BENCH_KAFKA=host:port if set; else the one
# tests/services/kafka runs (`env`), else one it starts for this run and
# stops at the end.  The topic (zxbench-<random>) is deleted at the end.
# Preload: kcat -P -l (random partitioner, not sticky: even partitions) when
# kcat is installed, else a Python producer (confluent-kafka, round robin);
# kcat is about twice as fast here.
# The Bento binary: $BENTO, else the one tests/bench/build_bento.sh caches
# (it is built then, which takes ~15 min).
# It never sends traffic anywhere but the broker (127.0.0.1 unless
# ZX_BENCH_KAFKA says otherwise) and kills whatever it started.
#
# Usage: kafka_bench.sh [--zx-only | --peer-only] [--no-limit]
# Environment (all optional):
#   ZX_BUILD_DIR            build folder (default <repo>/build)
#   ZX_BENCH_ROWS           messages (default 5000000)
#   ZX_BENCH_PARTITIONS     partitions of the topic (default 6)
#   ZX_BENCH_DEADLINE       seconds each consumer may take (default 1800)
#   ZX_BENCH_KAFKA          host:port of a PLAINTEXT listener to use
#   ZX_BENCH_PRELOAD        kcat | python (default: kcat if installed)
#   ZX_BENCH_ZX_EXTRA       lines added under zx's pipeline (indented 4)
#   ZX_BENCH_ZX_SERVER      lines added under zx's server: (indented 2),
#                           e.g. "  ring_size: 16MiB"
#   ZX_BENCH_ZX_HTTP        lines added under zx's server.http: (indented
#                           4), e.g. "    max_body_size: 4MiB"
#   ZX_BENCH_BENTO_BATCH    Bento's sql_insert batching.count (default 100)
#   ZX_BENCH_BENTO_INFLIGHT Bento's sql_insert max_in_flight (default 2)
#   BENTO                   the Bento binary
#   ZX_BENCH_KEEP=1         keep the temporary folder and the topic
# Needs python3 with confluent-kafka (pip install confluent-kafka).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${ZX_BUILD_DIR:-$REPO/build}
case $BUILD in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
ZXD=$BUILD/supervisor/zxd
ROWS=${ZX_BENCH_ROWS:-5000000}
PARTS=${ZX_BENCH_PARTITIONS:-6}
DEADLINE=${ZX_BENCH_DEADLINE:-1800}
BATCH=${ZX_BENCH_BENTO_BATCH:-100}
INFLIGHT=${ZX_BENCH_BENTO_INFLIGHT:-2}
KAFKA_SVC=$REPO/tests/services/kafka

RUN_ZX=1 RUN_PEER=1 RUN_LIMIT=1
for a in "$@"; do
    case $a in
        --no-limit) RUN_LIMIT=0 ;;
        --zx-only) RUN_PEER=0 ;;
        --peer-only) RUN_ZX=0 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "usage: $0 [--zx-only | --peer-only] [--no-limit]" >&2; exit 2 ;;
    esac
done
[ "$RUN_ZX$RUN_PEER" != 00 ] || { echo "kafka_bench: --zx-only and --peer-only exclude each other" >&2; exit 2; }

say() { echo "kafka_bench: $*" >&2; }
die() { say "$*"; exit 1; }

command -v python3 >/dev/null || die "python3 is needed"
python3 -c 'import confluent_kafka' 2>/dev/null ||
    die "python3 needs confluent-kafka (pip install confluent-kafka)"

WORK=
WATCHER=
BROKER=
TOPIC=
KAFKA_STARTED=0
cleanup() {
    local rc=$? f pid
    trap - EXIT INT TERM
    # the watcher of a run (it kills its consumer's group on SIGTERM)
    [ -n "$WATCHER" ] && kill -TERM "$WATCHER" 2>/dev/null && wait "$WATCHER" 2>/dev/null || true
    # consumers still running (interrupted run): their whole process group
    for f in "${WORK:-/nonexistent}"/*/pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        [ -n "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null || true
    done
    if [ -n "$TOPIC" ] && [ "${ZX_BENCH_KEEP:-0}" != 1 ]; then
        python3 "$WORK/kb.py" delete "$BROKER" "$TOPIC" 2>/dev/null ||
            say "could not delete topic $TOPIC"
    fi
    if [ "$KAFKA_STARTED" = 1 ]; then
        "$KAFKA_SVC" stop >/dev/null || say "could not stop the broker"
    fi
    if [ -n "$WORK" ]; then
        if [ "${ZX_BENCH_KEEP:-0}" = 1 ]; then
            say "kept $WORK (topic $TOPIC)"
        else
            rm -rf "$WORK"
        fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'say interrupted; exit 130' INT TERM
WORK=$(mktemp -d /tmp/zxkafka.XXXXXX)

# ---- python helper -----------------------------------------------------------
cat >"$WORK/kb.py" <<'PYEOF'
"""kafka_bench.sh's helper: data, topic, preload, and the run watcher."""
import json, os, signal, sqlite3, subprocess, sys, time


def gen(n, path):
    """n NDJSON messages of ~200 bytes, ids 1..n."""
    pad = "x" * 40
    tags = ['["a","b"]', '["b","c","d"]', '["new"]', '[]']
    with open(path, "w") as f:
        buf = []
        for i in range(1, n + 1):
            buf.append(
                '{"id":%d,"user":"user-%05d","event":"page_view","url":"/products/%04d",'
                '"ts":"2026-11-30T18:%02d:%02d.%06dZ","amount":%d.%02d,"ok":%s,'
                '"tags":%s,"note":"%s"}\n'
                % (i, i % 10000, i % 1000, (i // 60000) % 60, (i // 1000) % 60,
                   i % 1000000, i % 5000, i % 100 or 1, "true" if i % 3 else "false",
                   tags[i % 4], pad))
            if len(buf) == 10000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))


# librdkafka's own log lines off (log_level 0): failures raise instead, once
QUIET = {"log_level": 0}


def _admin(brokers):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": brokers, **QUIET})


def ping(brokers):
    """Exit 1 unless the broker answers a metadata request within 15 s."""
    from confluent_kafka import KafkaException
    try:
        _admin(brokers).list_topics(timeout=15)
    except KafkaException as e:
        sys.exit(f"no Kafka broker answers at {brokers}: {e}")


def create(brokers, topic, parts):
    from confluent_kafka.admin import NewTopic
    a = _admin(brokers)
    for f in a.create_topics([NewTopic(topic, num_partitions=int(parts),
                                       replication_factor=1)]).values():
        f.result(60)


def delete(brokers, topic):
    a = _admin(brokers)
    for f in a.delete_topics([topic], operation_timeout=30).values():
        f.result(60)


def produce(brokers, topic, path):
    """Python preload (when kcat is absent): round robin over the partitions."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 50, "batch.size": 1048576,
                  "compression.type": "none", "queue.buffering.max.messages": 1000000,
                  "queue.buffering.max.kbytes": 1048576})
    nparts = len(p.list_topics(topic, timeout=30).topics[topic].partitions)
    errs = []

    def cb(err, msg):
        if err is not None:
            errs.append(err)
    n = 0
    with open(path, "rb") as f:
        for line in f:
            while True:
                try:
                    p.produce(topic, line[:-1], partition=n % nparts, on_delivery=cb)
                    break
                except BufferError:
                    p.poll(0.1)
            n += 1
            if n % 10000 == 0:
                p.poll(0)
    left = p.flush(300)
    if left or errs:
        sys.exit(f"produce: {left} undelivered, {len(errs)} errors: {errs[:3]}")


def partitions(brokers, topic):
    """Messages per partition (high watermarks), space separated."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": brokers, "group.id": "zx-bench-watermarks", **QUIET})
    md = c.list_topics(topic, timeout=30)
    out = []
    for p in sorted(md.topics[topic].partitions):
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        out.append(hi - lo)
    c.close()
    print(" ".join(map(str, out)))


# ---- the run watcher ---------------------------------------------------------
TICK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    rest = s[s.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): ppid 4, utime 14, stime 15, starttime 22
    return int(rest[1]), int(rest[11]), int(rest[12]), int(rest[19])


def _tree(root):
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                kids.setdefault(_stat(int(d))[0], []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


class Sampler:
    def __init__(self, root):
        self.root = root
        self.procs = {}       # (pid, starttime) -> dict
        self.pss_peak = 0
        self.rss_sum_peak = 0

    def sample(self):
        pss_sum = rss_sum = 0
        for pid in _tree(self.root):
            try:
                _, ut, st, start = _stat(pid)
                with open(f"/proc/{pid}/status") as f:
                    status = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    name = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                pss = 0
                try:
                    with open(f"/proc/{pid}/smaps_rollup") as f:
                        for l in f:
                            if l.startswith("Pss:"):
                                pss = int(l.split()[1])
                                break
                except OSError:
                    pass
            except (OSError, ValueError, IndexError):
                continue
            kb = lambda k: int(status.get(k, "0 kB").split()[0])
            e = self.procs.setdefault((pid, start), {"pid": pid, "name": name, "rss_peak": 0})
            e["name"] = name or e["name"]
            e["cpu"] = (ut + st) / TICK
            e["user"], e["sys"] = ut / TICK, st / TICK
            e["rss_peak"] = max(e["rss_peak"], kb("VmRSS"), kb("VmHWM"))
            for k in ("RssAnon", "RssFile", "RssShmem"):
                e[k] = max(e.get(k, 0), kb(k))
            rss_sum += kb("VmRSS")
            pss_sum += pss
        self.pss_peak = max(self.pss_peak, pss_sum)
        self.rss_sum_peak = max(self.rss_sum_peak, rss_sum)

    def cpu(self):
        return sum(e["cpu"] for e in self.procs.values())


class Table:
    """Read-only polls of the table the consumer fills."""
    def __init__(self, path, table):
        self.path, self.table, self.db = path, table, None
        self.exact = False      # rowids have gaps: count(*) from now on

    def _q(self, sql):
        try:
            if self.db is None:
                if not os.path.exists(self.path):
                    return None
                self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
            return self.db.execute(sql).fetchone()
        except sqlite3.Error:
            if self.db is not None:
                self.db.close()
            self.db = None
            return None

    def rows(self):
        r = self._q(f'SELECT count(*) FROM "{self.table}"' if self.exact
                    else f'SELECT max(rowid) FROM "{self.table}"')
        return (r[0] or 0) if r else 0

    def count(self):
        r = self._q(f'SELECT count(*) FROM "{self.table}"')
        return r[0] if r else 0

    def distinct_ids(self):
        r = self._q(f'SELECT count(DISTINCT "id") FROM "{self.table}"')
        return r[0] if r else None

    def close(self):
        if self.db is not None:
            self.db.close()
            self.db = None


def run(label, db, table, n, deadline, outdir, grace, cmd):
    """Start cmd in its own session, wait until table holds n rows, stop it.
    Writes outdir/pid (while it runs) and outdir/result.json."""
    n, deadline, grace = int(n), float(deadline), float(grace)
    log = open(os.path.join(outdir, "log"), "wb")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd=outdir)
    with open(os.path.join(outdir, "pid"), "w") as f:
        f.write(str(proc.pid))

    def killgroup(*_):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        sys.exit(130)
    signal.signal(signal.SIGTERM, killgroup)
    signal.signal(signal.SIGINT, killgroup)

    res = {"label": label, "rows_wanted": n, "ok": False}
    smp, tab = Sampler(proc.pid), Table(db, table)
    t_first = t_done = None
    last_sample = last_progress = t0
    rows = 0
    smp.sample()
    while True:
        time.sleep(0.1)
        now = time.monotonic()
        rows = tab.rows()
        if rows and t_first is None:
            t_first = now
        if rows >= n:
            if not tab.exact:
                exact = tab.count()
                if exact < n:
                    print(f"{label}: rowids have gaps ({rows:,} >= {n:,} but "
                          f"count(*) = {exact:,}): polling count(*) now", file=sys.stderr)
                    tab.exact = True
                    continue
            t_done = now
            smp.sample()
            break
        if proc.poll() is not None:
            res["error"] = f"exited with status {proc.returncode} after {now - t0:.1f} s, " \
                           f"{rows:,} rows in the table"
            break
        if now - t0 > deadline:
            res["error"] = f"deadline: {rows:,} rows after {deadline:.0f} s"
            break
        if now - last_sample >= 0.5:
            smp.sample()
            last_sample = now
            if tab.exact:
                time.sleep(0.5)
        if now - last_progress >= 10:
            print(f"{label}: {rows:,} rows after {now - t0:.0f} s", file=sys.stderr)
            last_progress = now
    tab.close()

    # stop: SIGTERM to the consumer, SIGKILL to its group after `grace`
    ts = time.monotonic()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
            res["stop"] = f"exited with status {proc.returncode} {time.monotonic() - ts:.1f} s after SIGTERM"
            res["stop_ok"] = proc.returncode == 0
        except subprocess.TimeoutExpired:
            res["stop"] = f"still running {grace:.0f} s after SIGTERM: killed"
            res["stop_ok"] = False
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    os.unlink(os.path.join(outdir, "pid"))

    res["procs"] = sorted(smp.procs.values(), key=lambda e: e["pid"])
    res["cpu_s"] = smp.cpu()
    res["rss_peak_sum_kb"] = sum(e["rss_peak"] for e in smp.procs.values())
    res["rss_sum_peak_kb"] = smp.rss_sum_peak
    res["pss_sum_peak_kb"] = smp.pss_peak
    if t_done is not None:
        res["ok"] = True
        res["seconds"] = t_done - t0
        res["rows_per_s"] = n / (t_done - t0)
        res["first_row_s"] = t_first - t0
        res["rows_per_s_from_first"] = n / max(t_done - t_first, 1e-9)
        res["cpu_per_million"] = res["cpu_s"] / (n / 1e6)
        fin = Table(db, table)
        res["rows_after_stop"] = fin.count()
        res["distinct_ids"] = fin.distinct_ids()
        fin.close()
    with open(os.path.join(outdir, "result.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0 if res["ok"] else 1


def report(path):
    r = json.load(open(path))
    L = r["label"]
    if not r["ok"]:
        print(f"{L}: FAILED: {r.get('error', '?')}")
    else:
        print(f"{L}: {r['rows_wanted']:,} rows in {r['seconds']:.1f} s: {r['rows_per_s']:,.0f} rows/s "
              f"(first row after {r['first_row_s']:.1f} s; from it: {r['rows_per_s_from_first']:,.0f} rows/s)")
        print(f"{L}: CPU {r['cpu_s']:.1f} s user+sys = {r['cpu_per_million']:.1f} CPU-s per million rows")
        dup = r["rows_after_stop"] - (r["distinct_ids"] or 0)
        print(f"{L}: after the stop: {r['rows_after_stop']:,} rows, {r['distinct_ids']:,} distinct ids"
              + (f" ({dup:,} duplicates)" if dup else ""))
    print(f"{L}: peak RSS: sum of the processes' peaks {r['rss_peak_sum_kb'] / 1024:,.1f} MiB; "
          f"peak of the sum of PSS {r['pss_sum_peak_kb'] / 1024:,.1f} MiB")
    for e in r["procs"]:
        print(f"  {e['pid']:>7}  {e['name'][:40]:<40}  CPU {e['user']:7.1f} u {e['sys']:6.1f} s"
              f"   peak RSS {e['rss_peak'] / 1024:8.1f} MiB (sampled peaks: anon "
              f"{e.get('RssAnon', 0) / 1024:.1f}, file {e.get('RssFile', 0) / 1024:.1f}, "
              f"shmem {e.get('RssShmem', 0) / 1024:.1f})")
    if "stop" in r:
        print(f"{L}: stop: {r['stop']}")


def summary(zx, peer, limit=None):
    def load(p):
        try:
            r = json.load(open(p))
            return r if r["ok"] else None
        except (OSError, ValueError):
            return None
    z, b = load(zx), load(peer)
    def part(name, r):
        if r is None:
            return f"{name}: n/a"
        return (f"{name}: {r['rows_per_s']:,.0f} rows/s, {r['cpu_per_million']:.1f} CPU-s/M rows, "
                f"peak RSS {r['rss_peak_sum_kb'] / 1024:,.0f} MiB (PSS {r['pss_sum_peak_kb'] / 1024:,.0f})")
    ratio = f"{z['rows_per_s'] / b['rows_per_s']:.2f}" if z and b else "n/a"
    print(f"{part('zx', z)} ... {part('bento', b)} ... ratio zx/bento: {ratio}")
    lim = None
    try:
        lim = dict(kv.split("=") for kv in open(limit).read().split()) if limit else None
    except (OSError, ValueError):
        pass
    if lim:
        lr = float(lim["rows_per_s"])
        zr = f"{z['rows_per_s'] / lr:.2f}" if z else "n/a"
        zf = f"{z['rows_per_s_from_first'] / lr:.2f}" if z else "n/a"
        print(f"limit (one prepared INSERT into SQLite, {int(lim['rows']):,} rows): {lr:,.0f} rows/s"
              f" ... ratio zx/limit: {zr} (from zx's first row: {zf})")


if __name__ == "__main__":
    c, a = sys.argv[1], sys.argv[2:]
    if c == "gen":
        gen(int(a[0]), a[1])
    elif c == "ping":
        ping(*a)
    elif c == "create":
        create(*a)
    elif c == "delete":
        delete(*a)
    elif c == "produce":
        produce(*a)
    elif c == "partitions":
        partitions(*a)
    elif c == "run":
        sys.exit(run(*a[:7], a[8:] if a[7] == "--" else a[7:]))
    elif c == "report":
        report(*a)
    elif c == "summary":
        summary(*a)
    else:
        sys.exit(f"kb.py: unknown command {c}")
PYEOF
now() { python3 -c 'import time; print(f"{time.monotonic():.3f}")'; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }

# ---- the peer's binary (before anything long) --------------------------------
if [ "$RUN_PEER" = 1 ]; then
    BENTO=${BENTO:-${XDG_CACHE_HOME:-$HOME/.cache}/zx/bento-v1.20.0/bento}
    if [ ! -x "$BENTO" ]; then
        say "no Bento binary at $BENTO: building it (tests/bench/build_bento.sh, ~15 min)"
        BENTO=$("$HERE/build_bento.sh") || die "could not build Bento"
    fi
fi

# ---- broker ------------------------------------------------------------------
if [ -n "${ZX_BENCH_KAFKA:-}" ]; then
    BROKER=$ZX_BENCH_KAFKA
else
    [ -x "$KAFKA_SVC" ] || die "no $KAFKA_SVC (or set ZX_BENCH_KAFKA=host:port)"
    if ! KENV=$("$KAFKA_SVC" env 2>/dev/null); then
        say "starting a broker (tests/services/kafka start)"
        KAFKA_STARTED=1     # stopped at the end, even if `start` fails half way
        KENV=$("$KAFKA_SVC" start) || die "tests/services/kafka start failed"
    fi
    BROKER=$(printf '%s\n' "$KENV" | sed -n 's/^PLAINTEXT=//p')
    [ -n "$BROKER" ] || die "tests/services/kafka printed no PLAINTEXT= line"
    KVER=$(printf '%s\n' "$KENV" | sed -n 's/^KAFKA_VERSION=//p')
fi

python3 "$WORK/kb.py" ping "$BROKER" || die "the broker at $BROKER does not answer"

# ---- topic and preload -------------------------------------------------------
TOPIC_NAME=zxbench-$(python3 -c 'import secrets; print(secrets.token_hex(4))')
python3 "$WORK/kb.py" create "$BROKER" "$TOPIC_NAME" "$PARTS" || die "cannot create topic $TOPIC_NAME on $BROKER"
TOPIC=$TOPIC_NAME
DATA=$WORK/data.ndjson
t=$(now)
python3 "$WORK/kb.py" gen "$ROWS" "$DATA"
GEN_S=$(elapsed "$t" "$(now)")
PRELOAD=${ZX_BENCH_PRELOAD:-$(command -v kcat >/dev/null && echo kcat || echo python)}
t=$(now)
case $PRELOAD in
    kcat)
        kcat -P -b "$BROKER" -t "$TOPIC" -X linger.ms=50 -X batch.size=1048576 \
            -X compression.type=none -X queue.buffering.max.messages=1000000 \
            -X partitioner=random -X sticky.partitioning.linger.ms=0 -l "$DATA" ||
            die "kcat preload failed" ;;
    python)
        python3 "$WORK/kb.py" produce "$BROKER" "$TOPIC" "$DATA" || die "preload failed" ;;
    *) die "ZX_BENCH_PRELOAD: kcat or python" ;;
esac
PRELOAD_S=$(elapsed "$t" "$(now)")
PER_PART=$(python3 "$WORK/kb.py" partitions "$BROKER" "$TOPIC")
IN_TOPIC=$(( $(echo "$PER_PART" | tr ' ' '+') ))
[ "$IN_TOPIC" = "$ROWS" ] || die "topic holds $IN_TOPIC messages, not $ROWS"
SIZE=$(stat -c %s "$DATA")
[ "$RUN_ZX$RUN_LIMIT" = 11 ] || rm -f "$DATA"

echo "== Kafka -> SQLite: zx and Bento =="
echo "broker: Apache Kafka ${KVER:-?} at $BROKER; topic $TOPIC, $PARTS partitions: $PER_PART"
echo "data: $ROWS JSON messages, $((SIZE / ROWS)) bytes on average (made in $GEN_S s)"
echo "preload: $PRELOAD_S s with $PRELOAD ($(python3 -c "import sys; print(f'{int(sys.argv[1]) / float(sys.argv[2]):,.0f}')" "$ROWS" "$PRELOAD_S") messages/s)"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) before the runs"

FAILED=0
# consume LABEL DB DIR -- CMD...: one consumer run (kb.py run), in the
# background so that a signal to this script is handled at once
consume() {
    local label=$1 db=$2 dir=$3
    shift 4
    python3 "$WORK/kb.py" run "$label" "$db" bench "$ROWS" "$DEADLINE" "$dir" 60 -- "$@" &
    WATCHER=$!
    local rc=0
    wait "$WATCHER" || rc=$?
    WATCHER=
    return $rc
}
report() {  # LABEL DIR NAME: the figures, and the log's tail after a failure
    if [ -f "$2/result.json" ]; then
        python3 "$WORK/kb.py" report "$2/result.json"
        python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1]))["ok"])' \
            "$2/result.json" && return 0
    else
        echo "$1: FAILED: no result"
    fi
    echo "--- $3 log (last 30 lines) ---"
    tail -30 "$2/log" 2>/dev/null || true
}

# ---- zx ----------------------------------------------------------------------
if [ "$RUN_ZX" = 1 ]; then
    echo
    echo "-- zx ($ZXD) --"
    ZDIR=$WORK/zx
    mkdir -p "$ZDIR/var"
    cat >"$ZDIR/zxd.yaml" <<EOF
server:
  data_dir: $ZDIR/var
${ZX_BENCH_ZX_SERVER:-}
  http:
    listen: "127.0.0.1:0"
${ZX_BENCH_ZX_HTTP:-}
connections:
  bench_kafka: {kind: kafka, brokers: ["$BROKER"]}
pipelines:
  bench:
    direction: stream
    source: kafka
    connection: bench_kafka
    topic: $TOPIC
    group: zx-bench
    start: oldest
    table: bench
EOF
    [ -z "${ZX_BENCH_ZX_EXTRA:-}" ] || printf '%s\n' "$ZX_BENCH_ZX_EXTRA" >>"$ZDIR/zxd.yaml"
    if [ ! -x "$ZXD" ]; then
        echo "zx: SKIPPED: zxd not built at $ZXD (ninja -C build, or set ZX_BUILD_DIR)"
        FAILED=1
    elif ! CHECK=$("$ZXD" --check -c "$ZDIR/zxd.yaml" 2>&1); then
        echo "zx: SKIPPED: zxd --check rejects the Kafka pipeline (is zx's Kafka source built into $ZXD?):"
        printf '%s\n' "$CHECK" | head -20 | sed 's/^/    /'
        FAILED=1
    else
        consume zx "$ZDIR/var/workspace.db" "$ZDIR" -- "$ZXD" -c "$ZDIR/zxd.yaml" || FAILED=1
        report zx "$ZDIR" zxd
        echo "zx config:"; sed 's/^/    /' "$ZDIR/zxd.yaml"
        if [ "$RUN_LIMIT" = 1 ]; then
            echo
            echo "-- limit ($BUILD/tests/bench/sqlite_insert_limit) --"
            LIMIT_BIN=$BUILD/tests/bench/sqlite_insert_limit
            DDL=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(
                "SELECT sql FROM sqlite_master WHERE name=?", ("bench",)).fetchone()[0])' \
                "$ZDIR/var/workspace.db" 2>/dev/null || true)
            if [ ! -x "$LIMIT_BIN" ]; then
                echo "limit: SKIPPED: not built ($LIMIT_BIN)"
            elif [ -z "$DDL" ]; then
                echo "limit: SKIPPED: zx made no table bench"
            else
                echo "table: $DDL"
                "$LIMIT_BIN" "$WORK/limit.db" "$DATA" "$DDL" >"$WORK/limit.txt" ||
                    { echo "limit: FAILED"; rm -f "$WORK/limit.txt"; }
                [ -f "$WORK/limit.txt" ] && echo "limit: $(cat "$WORK/limit.txt")"
                rm -f "$WORK"/limit.db*
            fi
        fi
    fi
fi

# ---- Bento -------------------------------------------------------------------
if [ "$RUN_PEER" = 1 ]; then
    echo
    echo "-- bento ($BENTO, $("$BENTO" --version 2>/dev/null | head -1 || true)) --"
    BDIR=$WORK/bento
    mkdir -p "$BDIR"
    cat >"$BDIR/bento.yaml" <<EOF
http:
  enabled: false
logger:
  level: warn
metrics:
  none: {}
input:
  kafka_franz:
    seed_brokers: ["$BROKER"]
    topics: ["$TOPIC"]
    consumer_group: bento-bench
    start_from_oldest: true
output:
  sql_insert:
    driver: sqlite
    dsn: "file:$BDIR/bench.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
    table: bench
    columns: [id, user, event, url, ts, amount, ok, tags, note]
    args_mapping: |
      root = [ this.id, this.user, this.event, this.url, this.ts, this.amount, this.ok, this.tags.string(), this.note ]
    init_statement: |
      CREATE TABLE IF NOT EXISTS bench (id INTEGER, user TEXT, event TEXT, url TEXT, ts TEXT, amount REAL, ok INTEGER, tags TEXT, note TEXT)
    max_in_flight: $INFLIGHT
    batching:
      count: $BATCH
      period: 1s
EOF
    consume bento "$BDIR/bench.db" "$BDIR" -- "$BENTO" -c "$BDIR/bento.yaml" || FAILED=1
    report bento "$BDIR" bento
    echo "bento config:"; sed 's/^/    /' "$BDIR/bento.yaml"
fi

echo
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$DATA"
python3 "$WORK/kb.py" summary "$WORK/zx/result.json" "$WORK/bento/result.json" "$WORK/limit.txt"
exit $FAILED
