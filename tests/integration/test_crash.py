"""
Zero loss under crashes: clients push continuously (retrying every request
that did not get a 202) while the test SIGKILLs the writer, the gateway and
the stream workers several times.  After the last restart:

- stream `acc` (ack: accepted, no idempotency key): every row that got a
  202 is in the table at least once;
- stream `exa` (?wait=commit + an Idempotency-Key per request, retried with
  the same key until 202): every row that got a 202 is there exactly once,
  and no row is there twice.
"""

import collections
import os
import signal
import threading
import time

from conftest import uid, wait_for, pid_alive

ROUNDS = 3                 # kill each of the 4 targets this many times (< 5 crashes in 60 s)
ROWS = 20                  # rows per request


class Client(threading.Thread):
    def __init__(self, z, name, exactly_once):
        super().__init__(daemon=True)
        self.z, self.name, self.exactly_once = z, name, exactly_once
        self.acked = []            # ids of rows whose request got a 202
        self.sent = set()          # ids of rows ever sent
        self.stop_flag = threading.Event()
        self.attempts = 0
        self.non202 = collections.Counter()
        self.failure = None

    def run(self):
        try:
            while not self.stop_flag.is_set():
                ids = [uid() for _ in range(ROWS)]
                self.sent.update(ids)
                body = [{"id": i, "k": k, "client": self.name} for k, i in enumerate(ids)]
                key = "idem-" + uid() if self.exactly_once else None
                # retry this very request until it gets a 202 (or we are told to stop)
                while not self.stop_flag.is_set():
                    self.attempts += 1
                    try:
                        r = self.z.push(self.name, body, wait_commit=self.exactly_once,
                                        idem=key, timeout=5)
                    except OSError as e:
                        self.non202[type(e).__name__] += 1
                        time.sleep(0.05)
                        continue
                    if r.status == 202:
                        if r.json is None or r.json.get("accepted") != ROWS:
                            self.failure = f"202 with a wrong body: {r!r}"
                            return
                        self.acked.extend(ids)
                        break
                    self.non202[r.status] += 1
                    if r.status in (400, 401, 404, 405, 413):
                        self.failure = f"unexpected {r!r}"
                        return
                    time.sleep(0.05)
        except Exception as e:  # surfaced by the test
            self.failure = repr(e)


def test_zero_loss_under_sigkill(make_zxd):
    z = make_zxd({"acc": {"ack": "accepted"}, "exa": {}})
    for n in ("writer", "gateway", "acc", "exa"):
        z.wait_running(n)
    clients = [Client(z, "acc", False), Client(z, "exa", True)]
    for c in clients:
        c.start()

    def progress(n_more):
        marks = [len(c.acked) for c in clients]
        wait_for(lambda: all(len(c.acked) >= m + n_more for c, m in zip(clients, marks))
                 or any(c.failure for c in clients),
                 lambda: f"both clients to get {n_more} more acked rows "
                 f"(acked {[len(c.acked) for c in clients]}, errors {[dict(c.non202) for c in clients]})",
                 deadline=45)
        for c in clients:
            assert c.failure is None, f"{c.name}: {c.failure}"

    kills = []
    try:
        progress(ROWS * 3)
        for rnd in range(ROUNDS):
            for target in ("writer", "gateway", "acc", "exa"):
                pid = z.wait_running(target, deadline=45)
                os.kill(pid, signal.SIGKILL)
                kills.append((target, pid))
                z.wait_running(target, not_pid=pid, deadline=45)
                progress(ROWS * 2)
    finally:
        for c in clients:
            c.stop_flag.set()
        for c in clients:
            c.join(30)
    for c in clients:
        assert c.failure is None, f"{c.name}: {c.failure}"
    assert len(kills) == ROUNDS * 4

    # after the last restart: everything is up again
    for n in ("writer", "gateway", "acc", "exa"):
        assert z.entry(n)["state"] != "failed", z.entry(n)
        z.wait_running(n)
    # a committed push on each stream: anything still in a ring gets in too
    for n in ("acc", "exa"):
        wait_for(lambda: z.push(n, {"id": "final-" + n, "k": -1}, wait_commit=True,
                                timeout=10).status == 202, f"a final committed push to {n}")

    acc, exa = clients
    # ack accepted: at least once
    have = collections.Counter(i for (i,) in z.query("SELECT id FROM acc"))
    lost = [i for i in acc.acked if have[i] == 0]
    assert not lost, (f"acc: {len(lost)} of {len(acc.acked)} acknowledged rows lost "
                      f"(kills: {kills}; non-202: {dict(acc.non202)})")

    # wait=commit + Idempotency-Key: exactly once
    have = collections.Counter(i for (i,) in z.query("SELECT id FROM exa"))
    lost = [i for i in exa.acked if have[i] == 0]
    dup = {i: n for i, n in have.items() if n > 1}
    assert not lost, (f"exa: {len(lost)} of {len(exa.acked)} committed rows lost "
                      f"(kills: {kills}; non-202: {dict(exa.non202)})")
    assert not dup, f"exa: {len(dup)} rows written more than once despite Idempotency-Key: {list(dup.items())[:5]}"
    stray = set(have) - exa.sent - {"final-exa"}
    assert not stray, f"exa holds ids never sent: {list(stray)[:5]}"
    assert len(acc.acked) > 0 and len(exa.acked) > 0
    print(f"crash test: {len(kills)} kills; acc: {len(acc.acked)} rows acked in {acc.attempts} attempts "
          f"(non-202 {dict(acc.non202)}), {sum(have.values())} rows in exa; exa: {len(exa.acked)} acked in "
          f"{exa.attempts} attempts (non-202 {dict(exa.non202)})")
    assert pid_alive(z.pid)


def test_writer_crash_between_workspace_and_store_commits(make_zxd):
    """The one window the checkpoint in the workspace transaction closes: the
    writer dies after the workspace commit and before the LMDB commit (a
    fault injection point, ZX_FAULT_INJECTION=1 + a marker file).  The
    restarted writer must not apply the frame again, must still record its
    Idempotency-Key, and the waiting push must get its 202."""
    z = make_zxd({"fi": {}}, start=False)
    z.env["ZX_FAULT_INJECTION"] = "1"
    z.start()
    z.wait_running("fi")
    z.push_ok("fi", [{"id": "warm"}], wait_commit=True)
    writer = z.wait_running("writer")
    marker = os.path.join(z.data_dir, "fault-crash-after-workspace-commit")
    open(marker, "w").close()

    rows = [{"id": f"r{i}", "n": i} for i in range(50)]
    r = z.push("fi", rows, wait_commit=True, idem="fault-1", timeout=30)
    assert r.status == 202 and r.json.get("accepted") == 50, r
    assert not os.path.exists(marker), "the fault injection point was not reached"
    # the writer did die there and was restarted
    new_writer = z.wait_running("writer", not_pid=writer)
    assert new_writer != writer
    w = [p for p in z.status()["processes"] if p["name"] == "writer"][0]
    assert w["restarts"] == 1 and "status 70" in (w["last_error"] or ""), w
    # applied exactly once
    assert z.count("fi", "id LIKE 'r%'") == 50
    # the key was recorded by the restarted writer: a retry is a replay
    r2 = z.push("fi", rows, wait_commit=True, idem="fault-1", timeout=30)
    assert r2.status == 202 and r2.json.get("accepted") == 50, r2
    assert r2.headers.get("idempotent-replayed") == "true", r2.headers
    assert z.count("fi", "id LIKE 'r%'") == 50
    # and the stream goes on
    z.push_ok("fi", [{"id": "after"}], wait_commit=True)
    assert z.count("fi") == 52


def test_writer_crash_between_answering_pushes_and_the_store_commit(make_zxd):
    """A cycle whose store records are only the pipeline's position and rows
    counter (pushes without Idempotency-Key, new columns or rejects) answers
    its waiting pushes right after the workspace commit, before the LMDB
    commit and its sync.  The writer dying there (ZX_FAULT_INJECTION=1 + the
    marker fault-crash-after-release) loses nothing the push was told: the
    rows are in the workspace exactly once, and the stream goes on."""
    z = make_zxd({"fr": {}}, start=False)
    z.env["ZX_FAULT_INJECTION"] = "1"
    z.start()
    z.wait_running("fr")
    z.push_ok("fr", [{"id": "warm", "n": 0}], wait_commit=True)   # makes the table
    writer = z.wait_running("writer")
    marker = os.path.join(z.data_dir, "fault-crash-after-release")
    open(marker, "w").close()
    rows = [{"id": f"r{i}", "n": i} for i in range(50)]
    r = z.push("fr", rows, wait_commit=True, timeout=30)
    assert r.status == 202 and r.json.get("accepted") == 50, r
    assert r.json.get("committed") is True, r.json
    # the writer removes the marker right after answering: the answer may
    # be here first
    wait_for(lambda: not os.path.exists(marker), "the fault injection point reached",
             deadline=30)
    wait_for(lambda: "event=fault_injection point=after_release" in z.log_text(),
             "the fault injection logged", deadline=30)
    new_writer = z.wait_running("writer", not_pid=writer)
    assert new_writer != writer
    assert z.count("fr", "id LIKE 'r%'") == 50          # the answer was true
    z.push_ok("fr", [{"id": "after", "n": 51}], wait_commit=True)
    assert z.count("fr") == 52                           # and nothing twice
    assert z.count("fr", "id = 'after'") == 1



def test_push_waiting_for_its_commit_outlives_its_stream_worker(make_zxd):
    """A ?wait=commit push is answered by the gateway once the writer has
    committed its frame, not by the stream worker that read it: the worker
    may die in between (here SIGKILLed while the writer is paused) and the
    push still gets its 202, committed, as soon as the writer commits; its
    rows are there once."""
    z = make_zxd({"wk": {}})
    z.wait_running("wk")
    z.push_ok("wk", [{"id": "warm"}], wait_commit=True)   # makes the table
    writer = z.wait_running("writer")
    worker = z.wait_running("wk")
    published = z.pipeline("wk")["ring"]["published"]
    result = {}

    def push():
        result["r"] = z.push("wk", [{"id": f"r{i}"} for i in range(10)], wait_commit=True,
                             timeout=60)

    os.kill(writer, signal.SIGSTOP)
    try:
        t = threading.Thread(target=push, daemon=True)
        t.start()
        wait_for(lambda: z.pipeline("wk")["ring"]["published"] > published,
                 "the push's frame published", deadline=30)
        os.kill(worker, signal.SIGKILL)
        z.wait_running("wk", not_pid=worker)
        assert "r" not in result, result    # no answer before the commit
    finally:
        os.kill(writer, signal.SIGCONT)
    t.join(60)
    r = result.get("r")
    assert r is not None and r.status == 202, r
    assert r.json.get("accepted") == 10 and r.json.get("committed") is True, r.json
    assert z.count("wk", "id LIKE 'r%'") == 10
    z.push_ok("wk", [{"id": "after"}], wait_commit=True)
    assert z.count("wk") == 12
