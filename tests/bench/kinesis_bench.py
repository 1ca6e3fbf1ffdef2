"""kinesis_bench.sh's helper: the stream and its records, the run watcher,
the report.  Needs boto3.  Commands (argv[1]):

  fill ENDPOINT STREAM SHARDS N PROCS
      create STREAM with SHARDS shards on the Kinesis at ENDPOINT, wait until
      it is ACTIVE, put N JSON records of ~200 bytes (ids 1..N, the id as the
      partition key) with PutRecords of 500, from PROCS processes; failed
      entries are put again.  Prints "seconds bytes per-shard-counts".
  run LABEL DB TABLE N DEADLINE OUTDIR EMU_PIDS -- CMD...
      start CMD in its own session, poll DB until TABLE holds N rows, stop
      CMD (SIGTERM, SIGKILL after 60 s); CPU of CMD's process tree and of the
      emulators (EMU_PIDS: "name:pid,name:pid") over the same window; writes
      OUTDIR/result.json.  Exit 0 when the table got its N rows.
  streamarn ENDPOINT STREAM   exit 0 when ListShards by StreamARN works
  report RESULT.json      the figures of one run
  summary ZX.json BENTO.json   one line: both rates and the ratio
"""
import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time

CREDS = {"region_name": "us-east-1", "aws_access_key_id": "zxtestkey",
         "aws_secret_access_key": "zxtestsecret"}


def record(i):
    """Record i: ~200 bytes of JSON (the fields kafka_bench.sh uses)."""
    tags = ('["a","b"]', '["b","c","d"]', '["new"]', '[]')[i % 4]
    return ('{"id":%d,"user":"user-%05d","event":"page_view","url":"/products/%04d",'
            '"ts":"2026-11-30T18:%02d:%02d.%06dZ","amount":%d.%02d,"ok":%s,'
            '"tags":%s,"note":"%s"}'
            % (i, i % 10000, i % 1000, (i // 60000) % 60, (i // 1000) % 60, i % 1000000,
               i % 5000, i % 100 or 1, "true" if i % 3 else "false", tags, "x" * 40)).encode()


def _client(endpoint):
    import boto3
    from botocore.config import Config
    return boto3.client("kinesis", endpoint_url=endpoint, config=Config(
        retries={"max_attempts": 10, "mode": "standard"}, max_pool_connections=4), **CREDS)


def _put_range(args):
    """Put ids lo..hi-1, 500 a call; returns (bytes, {shard: count})."""
    endpoint, stream, lo, hi = args
    k = _client(endpoint)
    nbytes, shards = 0, {}
    for start in range(lo, hi, 500):
        todo = [{"Data": record(i), "PartitionKey": str(i)}
                for i in range(start, min(start + 500, hi))]
        nbytes += sum(len(e["Data"]) for e in todo)
        for attempt in range(20):
            r = k.put_records(StreamName=stream, Records=todo)
            again = []
            for e, res in zip(todo, r["Records"]):
                if "ErrorCode" in res:
                    again.append(e)
                else:
                    shards[res["ShardId"]] = shards.get(res["ShardId"], 0) + 1
            if not again:
                break
            todo = again
            time.sleep(0.05 * (attempt + 1))
        else:
            raise SystemExit(f"fill: {len(todo)} records still refused after 20 attempts")
    return nbytes, shards


def fill(endpoint, stream, nshards, n, procs):
    nshards, n, procs = int(nshards), int(n), max(1, int(procs))
    k = _client(endpoint)
    k.create_stream(StreamName=stream, ShardCount=nshards)
    t_end = time.monotonic() + 60
    while k.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"][
            "StreamStatus"] != "ACTIVE":
        if time.monotonic() > t_end:
            raise SystemExit(f"fill: stream {stream} not ACTIVE after 60 s")
        time.sleep(0.05)
    # slices of 10,000 ids handed to the processes as they free up
    step = 10000
    jobs = [(endpoint, stream, lo, min(lo + step, n + 1)) for lo in range(1, n + 1, step)]
    t0 = time.monotonic()
    total, shards = 0, {}
    with multiprocessing.Pool(procs) as pool:
        for nbytes, sh in pool.imap_unordered(_put_range, jobs):
            total += nbytes
            for s, c in sh.items():
                shards[s] = shards.get(s, 0) + c
    secs = time.monotonic() - t0
    counts = ",".join(str(shards[s]) for s in sorted(shards))
    print(f"{secs:.2f} {total} {counts}")


def streamarn(endpoint, stream):
    """Exit 0 when the Kinesis at endpoint takes ListShards by StreamARN."""
    k = _client(endpoint)
    arn = k.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"]
    try:
        k.list_shards(StreamARN=arn)
    except Exception as e:  # noqa: BLE001 (any refusal means the same)
        sys.exit(f"ListShards by StreamARN: {e}")


# ---- the run watcher ---------------------------------------------------------
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    """(ppid, cpu seconds of pid and its reaped children, starttime)."""
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    r = s[s.rindex(")") + 2:].split()
    # r[0] is field 3: ppid 4, utime 14, stime 15, cutime 16, cstime 17, starttime 22
    return int(r[1]), (int(r[11]) + int(r[12]) + int(r[13]) + int(r[14])) / TICK, int(r[19])


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


def _machine_cpu():
    """CPU seconds of the whole machine (every core, busy time)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / TICK      # minus idle and iowait


class Tree:
    """CPU of a process tree: each process's own and its reaped children's,
    the last value seen of each (pid, start) kept (a process that exits
    between samples keeps its last sample; once reaped its time is in its
    parent's children time, which is counted from then on)."""

    def __init__(self, root):
        self.root, self.procs = root, {}

    def sample(self):
        for pid in _tree(self.root):
            try:
                _, cpu, start = _stat(pid)
                with open(f"/proc/{pid}/status") as f:
                    hwm = [l for l in f if l.startswith("VmHWM:")]
            except (OSError, ValueError, IndexError):
                continue
            e = self.procs.setdefault((pid, start), {"pid": pid, "rss_peak_kb": 0})
            e["cpu"] = cpu
            if hwm:
                e["rss_peak_kb"] = max(e["rss_peak_kb"], int(hwm[0].split()[1]))

    def cpu(self):
        return sum(e["cpu"] for e in self.procs.values())

    def rss_kb(self):
        return sum(e["rss_peak_kb"] for e in self.procs.values())


def _emu_cpu(pids):
    out = {}
    for name, pid in pids:
        try:
            out[name] = _stat(pid)[1]
        except (OSError, ValueError, IndexError):
            out[name] = None
    return out


class Table:
    """Read-only polls of the table the consumer fills: max(rowid) (one
    b-tree path) while it grows, count(*) to confirm the end."""

    def __init__(self, path, table):
        self.path, self.table, self.db = path, table, None

    def _q(self, sql):
        try:
            if self.db is None:
                if not os.path.exists(self.path):
                    return None
                self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
            return self.db.execute(sql).fetchone()
        except sqlite3.Error:
            self.close()
            return None

    def rows(self, exact=False):
        r = self._q(f'SELECT {"count(*)" if exact else "max(rowid)"} FROM "{self.table}"')
        return (r[0] or 0) if r else 0

    def distinct_ids(self):
        r = self._q(f'SELECT count(DISTINCT "id") FROM "{self.table}"')
        return r[0] if r else None

    def close(self):
        if self.db is not None:
            self.db.close()
            self.db = None


def run(label, db, table, n, deadline, outdir, emus, cmd):
    n, deadline = int(n), float(deadline)
    emu_pids = [(e.split(":")[0], int(e.split(":")[1])) for e in emus.split(",") if e]
    log = open(os.path.join(outdir, "log"), "wb")
    emu0, mach0, t0 = _emu_cpu(emu_pids), _machine_cpu(), time.monotonic()
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
    tree, tab = Tree(proc.pid), Table(db, table)
    t_first = t_done = None
    last_sample = last_progress = t0
    exact = False
    tree.sample()
    while True:
        time.sleep(0.1)
        now = time.monotonic()
        rows = tab.rows(exact)
        if rows and t_first is None:
            t_first = now
        if rows >= n:
            if exact or tab.rows(True) >= n:
                t_done = now
                tree.sample()
                emu1, mach1 = _emu_cpu(emu_pids), _machine_cpu()
                break
            print(f"{label}: rowids have gaps: polling count(*) now", file=sys.stderr)
            exact = True
        if proc.poll() is not None:
            res["error"] = (f"exited with status {proc.returncode} after {now - t0:.1f} s, "
                            f"{rows:,} rows in the table")
            break
        if now - t0 > deadline:
            res["error"] = f"deadline: {rows:,} rows after {deadline:.0f} s"
            break
        if now - last_sample >= 0.5:
            tree.sample()
            last_sample = now
        if now - last_progress >= 10:
            print(f"{label}: {rows:,} rows after {now - t0:.0f} s", file=sys.stderr)
            last_progress = now
    tab.close()

    ts = time.monotonic()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
            res["stop"] = (f"exited with status {proc.returncode} "
                           f"{time.monotonic() - ts:.1f} s after SIGTERM")
        except subprocess.TimeoutExpired:
            res["stop"] = "still running 60 s after SIGTERM: killed"
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    os.unlink(os.path.join(outdir, "pid"))

    if t_done is not None:
        wall = t_done - t0
        res.update(ok=True, seconds=wall, rows_per_s=n / wall, first_row_s=t_first - t0,
                   cpu_s=tree.cpu(), rss_peak_sum_kb=tree.rss_kb(),
                   machine_cpu_s=mach1 - mach0, cores=os.cpu_count())
        res["cpu_us_per_row"] = res["cpu_s"] / n * 1e6
        res["emulators"] = {k: (emu1[k] - emu0[k]) if emu0.get(k) is not None and
                            emu1.get(k) is not None else None for k in emu0}
        fin = Table(db, table)
        res["rows_after_stop"] = fin.rows(True)
        res["distinct_ids"] = fin.distinct_ids()
        fin.close()
    with open(os.path.join(outdir, "result.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0 if res["ok"] else 1


def _limit(r):
    """Which side limits the run, from each one's CPU over the wall time:
    the machine when its cores are busy and others took a quarter of it;
    kinesalite (one node thread) when it is busy 75% of the time or more
    and busier than the consumer; the consumer when it is; else round
    trips (each shard's GetRecords waits for the previous answer)."""
    wall = r["seconds"]
    emus = {k: v / wall for k, v in r["emulators"].items() if v is not None}
    cons = r["cpu_s"] / wall
    kin = emus.get("kinesalite", 0.0)
    busy = r["machine_cpu_s"] / (wall * r["cores"])
    others = max(r["machine_cpu_s"] - r["cpu_s"] - sum(v for v in r["emulators"].values() if v),
                 0.0)
    ours = f"the consumer used {cons:.0%} of a core, kinesalite {kin:.0%}"
    if busy >= 0.9 and others >= 0.25 * r["machine_cpu_s"]:
        return (f"the machine: its {r['cores']} cores are {busy:.0%} busy, "
                f"{others / r['machine_cpu_s']:.0%} of it other processes ({ours})")
    if kin >= 0.75 and kin > cons:
        return (f"the emulator: kinesalite's one node thread is busy {kin:.0%} of the time "
                f"while the consumer used {cons:.0%} of a core")
    if cons >= 0.75 and cons >= kin:
        return f"the consumer: {ours}"
    return f"round trips, no side saturated: {ours}"


def report(path):
    r = json.load(open(path))
    L = r["label"]
    if not r["ok"]:
        print(f"{L}: FAILED: {r.get('error', '?')}")
        if "stop" in r:
            print(f"{L}: stop: {r['stop']}")
        return
    from_first = r["rows_wanted"] / max(r["seconds"] - r["first_row_s"], 1e-9)
    print(f"{L}: {r['rows_wanted']:,} records in {r['seconds']:.1f} s: "
          f"{r['rows_per_s']:,.0f} records/s (first row after {r['first_row_s']:.1f} s; "
          f"from it: {from_first:,.0f} records/s)")
    print(f"{L}: CPU {r['cpu_s']:.1f} s user+sys (process tree) = "
          f"{r['cpu_us_per_row']:.1f} CPU-us per record; peak RSS (sum) "
          f"{r['rss_peak_sum_kb'] / 1024:,.0f} MiB")
    for k, v in r["emulators"].items():
        if v is not None:
            print(f"{L}: {k}: CPU {v:.1f} s over the same {r['seconds']:.1f} s "
                  f"({v / r['seconds']:.0%} of one core)")
    others = r["machine_cpu_s"] - r["cpu_s"] - sum(v for v in r["emulators"].values() if v)
    print(f"{L}: machine: {r['machine_cpu_s']:.1f} CPU-s busy of {r['cores']} cores x "
          f"{r['seconds']:.1f} s ({r['machine_cpu_s'] / (r['cores'] * r['seconds']):.0%}); "
          f"other processes than these: {max(others, 0):.1f} CPU-s")
    print(f"{L}: limited by {_limit(r)}")
    dup = r["rows_after_stop"] - (r["distinct_ids"] or 0)
    print(f"{L}: after the stop: {r['rows_after_stop']:,} rows, {r['distinct_ids']:,} distinct ids"
          + (f" ({dup:,} duplicates)" if dup else ""))
    if "stop" in r:
        print(f"{L}: stop: {r['stop']}")


def summary(zx, peer):
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
        return (f"{name}: {r['rows_per_s']:,.0f} records/s, "
                f"{r['cpu_us_per_row']:.1f} CPU-us/record")
    ratio = f"{z['rows_per_s'] / b['rows_per_s']:.2f}" if z and b else "n/a"
    cpu = f"{b['cpu_us_per_row'] / z['cpu_us_per_row']:.2f}" if z and b else "n/a"
    print(f"{part('zx', z)} ... {part('bento', b)} ... ratio zx/bento: {ratio} "
          f"(CPU per record bento/zx: {cpu})")


if __name__ == "__main__":
    c, a = sys.argv[1], sys.argv[2:]
    if c == "fill":
        fill(*a)
    elif c == "streamarn":
        streamarn(*a)
    elif c == "run":
        sys.exit(run(*a[:7], a[8:] if a[7] == "--" else a[7:]))
    elif c == "report":
        report(*a)
    elif c == "summary":
        summary(*a)
    else:
        sys.exit(f"kinesis_bench.py: unknown command {c}")
