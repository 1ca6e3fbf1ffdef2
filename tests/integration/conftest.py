"""
End-to-end test harness for zxd / zxctl (pytest, stdlib only).

What it is for: start a real `zxd` on a private temporary folder with a
config written by the test, talk to it the way users do (HTTP pushes, the
`zxctl` client, signals, the SQLite workspace opened read-only), and always
leave nothing running behind.

What it must never do: rely on timing thresholds (every wait is a polling
loop with a generous deadline that fails with a clear message), touch any
process it did not start, or send traffic anywhere but 127.0.0.1.

Binaries are found in $ZX_BUILD_DIR (default <repo>/build):
$ZX_BUILD_DIR/supervisor/zxd and $ZX_BUILD_DIR/supervisor/zxctl.
Set ZX_KEEP=1 to keep the temporary folders for inspection.
"""

import gzip as _gzip
import http.client
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import uuid

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.path.abspath(os.environ.get("ZX_BUILD_DIR", os.path.join(REPO, "build")))
ZXD = os.path.join(BUILD_DIR, "supervisor", "zxd")
ZXCTL = os.path.join(BUILD_DIR, "supervisor", "zxctl")

DEADLINE = 30.0          # default deadline of every polling wait, seconds
HTTP_TIMEOUT = 30.0      # socket timeout of test HTTP requests

TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")

# Every daemon alive during a test, so a failure report can show their logs.
_LIVE = []


# --------------------------------------------------------------------------
# small utilities
# --------------------------------------------------------------------------

def wait_for(pred, what, deadline=DEADLINE, interval=0.05):
    """Call pred() until it returns a truthy value; return that value.
    Fail with `what` (a string or a callable giving one) after `deadline` s."""
    end = time.monotonic() + deadline
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except AssertionError:
            raise
        except Exception as e:  # keep polling; remember why for the message
            last_exc = e
        if time.monotonic() >= end:
            msg = what() if callable(what) else what
            if last_exc is not None:
                msg += f" (last error: {last_exc!r})"
            pytest.fail(f"timed out after {deadline:.0f} s waiting for {msg}")
        time.sleep(interval)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pid_alive(pid):
    """True when pid exists and is not a zombie."""
    if not pid:
        return False
    st = proc_state(pid)
    return st is not None and st not in ("Z", "X")


def proc_state(pid):
    """The one-letter state of /proc/PID/stat, or None when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm may hold spaces and parentheses: the state follows the last ')'.
    rest = data[data.rindex(")") + 2:]
    return rest.split()[0]


def proc_ppid(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    rest = data[data.rindex(")") + 2:].split()
    return int(rest[1])


def proc_title(pid):
    """The process title as ps shows it: /proc/PID/cmdline with NULs as
    spaces, trailing padding removed."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def children_of(pid):
    """Pids whose parent is pid (any state)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and proc_ppid(int(d)) == pid:
            out.append(int(d))
    return out


def descendants_of(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children_of(p):
            if c not in out:
                out.append(c)
                todo.append(c)
    return out


def uid():
    return uuid.uuid4().hex


def ndjson(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


class Resp:
    """An HTTP answer: status, headers (lower-case names), raw body, json."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        try:
            self.json = json.loads(body.decode("utf-8")) if body else None
        except (ValueError, UnicodeDecodeError):
            self.json = None

    def __repr__(self):
        b = self.body[:300]
        return f"<HTTP {self.status} {b!r}>"


def http_request(port, method, path, body=None, headers=None, timeout=HTTP_TIMEOUT):
    """One request on a fresh connection.  Survives the server answering
    early and closing (413) while the body is still being sent."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        hdrs = dict(headers or {})
        if body is not None:
            hdrs.setdefault("Content-Length", str(len(body)))
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.endheaders()
        if body:
            try:
                conn.send(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server may have answered already; read it below
        r = conn.getresponse()
        data = r.read()
        return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        conn.close()


# --------------------------------------------------------------------------
# the daemon
# --------------------------------------------------------------------------

class Zxd:
    """One zxd under test, with its own folder, config, port and log.

    pipelines: {name: {"key": str, "key_ref": "env"|"file"|"literal",
                        "table": str|None, "metadata": [..]|None,
                        "ack": "accepted"|"commit"|None, "extra": {k: v}}}
    Every value is optional; the key defaults to "key-<name>-<random>" and is
    passed through ${env:ZX_KEY_<NAME>} unless key_ref says otherwise."""

    def __init__(self, root, pipelines, max_body_size="1MiB",
                 backpressure_timeout="2s", server_extra="", http_extra=""):
        self.root = root
        self.cfg_path = os.path.join(root, "zxd.yaml")
        self.data_dir = os.path.join(root, "var")
        self.sock = os.path.join(self.data_dir, "zxd.sock")
        self.db_path = os.path.join(self.data_dir, "workspace.db")
        self.log_path = os.path.join(root, "zxd.log")
        self.port = free_port()
        self.max_body_size = max_body_size
        self.backpressure_timeout = backpressure_timeout
        self.server_extra = server_extra
        self.http_extra = http_extra
        self.env = dict(os.environ)
        self.keys = {}
        self.pipelines = {}
        self.proc = None
        self._log = None
        self._all_pids = set()
        self.set_pipelines(pipelines)

    # -- config ------------------------------------------------------------

    @staticmethod
    def env_name(name):
        return "ZX_KEY_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()

    def set_pipelines(self, pipelines, write=True):
        """Replace the pipeline set (keeps keys already chosen) and write the
        config file.  Env vars of new pipelines only reach a daemon started
        after this call, so define every pipeline a test will add before
        start() (see Zxd.prepare_keys)."""
        self.pipelines = {}
        for name, spec in pipelines.items():
            spec = dict(spec or {})
            key = spec.get("key") or self.keys.get(name) or f"key-{name}-{uid()[:12]}"
            spec["key"] = key
            self.keys[name] = key
            self.env[self.env_name(name)] = key
            self.pipelines[name] = spec
        if write:
            self.write_config()

    def prepare_keys(self, *names):
        for n in names:
            if n not in self.keys:
                self.keys[n] = f"key-{n}-{uid()[:12]}"
            self.env[self.env_name(n)] = self.keys[n]

    def config_text(self):
        lines = [
            "server:",
            "  data_dir: ./var",
            "  control_socket: zxd.sock",
        ]
        if self.server_extra:
            lines += ["  " + l for l in self.server_extra.strip("\n").split("\n")]
        lines += [
            "  http:",
            f'    listen: "127.0.0.1:{self.port}"',
        ]
        if self.max_body_size is not None:      # None: the default (16 MiB)
            lines.append(f"    max_body_size: {self.max_body_size}")
        if self.backpressure_timeout is not None:
            lines.append(f"    backpressure_timeout: {self.backpressure_timeout}")
        if self.http_extra:
            lines += ["    " + l for l in self.http_extra.strip("\n").split("\n")]
        lines += [
            "workspace:",
            "  sqlite:",
            "    path: workspace.db",
            "pipelines:",
        ]
        for name, spec in self.pipelines.items():
            lines.append(f"  {name}:")
            lines.append("    direction: stream")
            lines.append("    source: http")
            ref = spec.get("key_ref", "env")
            if ref == "env":
                lines.append(f"    key: ${{env:{self.env_name(name)}}}")
            elif ref == "file":
                kf = os.path.join(self.root, f"{name}.key")
                with open(kf, "w") as f:
                    f.write(spec["key"] + "\n")
                os.chmod(kf, 0o600)
                lines.append(f"    key: ${{file:{name}.key}}")   # relative to the config
            else:
                lines.append(f'    key: "{spec["key"]}"')
            if spec.get("table"):
                lines.append(f"    table: {spec['table']}")
            else:
                lines.append(f"    table: {name.replace('-', '_')}")
            if spec.get("metadata"):
                lines.append(f"    metadata: [{', '.join(spec['metadata'])}]")
            if spec.get("ack"):
                lines.append(f"    ack: {spec['ack']}")
            for k, v in (spec.get("extra") or {}).items():
                lines.append(f"    {k}: {v}")
        return "\n".join(lines) + "\n"

    def write_config(self, text=None):
        with open(self.cfg_path, "w") as f:
            f.write(text if text is not None else self.config_text())

    def table(self, name):
        spec = self.pipelines.get(name) or {}
        return spec.get("table") or name.replace("-", "_")

    # -- process -----------------------------------------------------------

    def start(self, wait=True):
        assert os.path.exists(ZXD), f"zxd not built: {ZXD} (set ZX_BUILD_DIR)"
        if self._log:
            self._log.close()
        self._log = open(self.log_path, "ab")
        self._log.write(f"\n===== test harness: starting zxd -c {self.cfg_path} =====\n".encode())
        self._log.flush()
        # cwd "/" so that relative paths must be resolved against the config's folder
        self.proc = subprocess.Popen([ZXD, "-c", self.cfg_path], cwd="/",
                                     stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=self.env,
                                     start_new_session=True)
        self._all_pids.add(self.proc.pid)
        if not _LIVE.count(self):
            _LIVE.append(self)
        if wait:
            self.wait_healthy()
        return self

    @property
    def pid(self):
        return self.proc.pid

    def wait_healthy(self, deadline=DEADLINE):
        def ok():
            if self.proc.poll() is not None:
                pytest.fail(f"zxd exited with {self.proc.returncode} during start-up\n"
                            + self.log_tail())
            try:
                r = self.get("/healthz", timeout=5)
            except OSError:
                return False
            return r.status == 200
        wait_for(ok, lambda: "GET /healthz == 200\n" + self.log_tail(), deadline)
        self.remember_pids()

    def log_tail(self, n=60):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except FileNotFoundError:
            return "(no log)"
        return "---- zxd log (last %d lines) ----\n%s" % (n, "\n".join(lines[-n:]))

    def remember_pids(self):
        """Record every descendant pid (for teardown)."""
        if self.proc and self.proc.poll() is None:
            for p in descendants_of(self.proc.pid):
                self._all_pids.add(p)

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def stop(self, deadline=60.0):
        """SIGTERM, wait, assert exit status 0."""
        self.remember_pids()
        self.proc.send_signal(signal.SIGTERM)
        rc = self.wait_exit(deadline)
        assert rc == 0, f"zxd exited with {rc} after SIGTERM (expected 0)\n" + self.log_tail()
        return rc

    def wait_exit(self, deadline=60.0):
        try:
            return self.proc.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            pytest.fail(f"zxd did not exit within {deadline:.0f} s\n" + self.log_tail())

    def kill_all(self):
        """SIGKILL the supervisor's process group and every zxd process it
        ever had as a descendant; reap the supervisor."""
        self.remember_pids()
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for p in sorted(self._all_pids):
            t = proc_title(p)
            if t is not None and (t.startswith("zxd") or ZXD in t) and pid_alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        # wait (bounded) until every process we knew is gone, so that none
        # still writes into the folder while it is being removed
        end = time.monotonic() + 30
        while time.monotonic() < end and any(pid_alive(p) and (proc_title(p) or "").startswith("zxd")
                                             for p in self._all_pids):
            time.sleep(0.02)
        if self._log:
            self._log.close()
            self._log = None

    def close(self):
        self.kill_all()
        if self in _LIVE:
            _LIVE.remove(self)

    # -- HTTP --------------------------------------------------------------

    def get(self, path, headers=None, timeout=HTTP_TIMEOUT):
        return http_request(self.port, "GET", path, None, headers, timeout)

    def push(self, name, rows=None, *, body=None, key=None, auth=True, ndjson_body=False,
             gzip=False, wait_commit=False, idem=None, headers=None, method="POST",
             content_type=None, timeout=HTTP_TIMEOUT):
        """POST /api/streams/<name>/push.  rows: a dict or list, JSON-encoded
        (or NDJSON with ndjson_body); body: raw bytes/str instead."""
        if body is None:
            if ndjson_body:
                body = ndjson(rows if isinstance(rows, list) else [rows])
            else:
                body = json.dumps(rows)
        if isinstance(body, str):
            body = body.encode("utf-8")
        h = {}
        if content_type:
            h["Content-Type"] = content_type
        elif ndjson_body:
            h["Content-Type"] = "application/x-ndjson"
        else:
            h["Content-Type"] = "application/json"
        if auth:
            h["Authorization"] = "Bearer " + (key if key is not None else self.keys[name])
        if gzip:
            body = _gzip.compress(body)
            h["Content-Encoding"] = "gzip"
        if idem:
            h["Idempotency-Key"] = idem
        h.update(headers or {})
        path = f"/api/streams/{name}/push" + ("?wait=commit" if wait_commit else "")
        return http_request(self.port, method, path, body, h, timeout)

    def push_ok(self, name, rows, **kw):
        """Push and assert 202 with accepted == number of rows."""
        r = self.push(name, rows, **kw)
        n = len(rows) if isinstance(rows, list) else 1
        assert r.status == 202, f"push to {name}: expected 202, got {r!r}"
        assert isinstance(r.json, dict) and r.json.get("accepted") == n, \
            f"push to {name}: expected {{'accepted': {n}}}, got {r!r}"
        return r

    # -- zxctl -------------------------------------------------------------

    def zxctl(self, *args, json_out=False, use_config=False, timeout=60, check_rc=None):
        assert os.path.exists(ZXCTL), f"zxctl not built: {ZXCTL} (set ZX_BUILD_DIR)"
        cmd = [ZXCTL] + (["-c", self.cfg_path] if use_config else ["-s", self.sock])
        if json_out:
            cmd.append("--json")
        cmd += list(args)
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=timeout, env=self.env, text=True)
        if check_rc is not None:
            assert p.returncode == check_rc, (
                f"{' '.join(cmd[1:])}: exit {p.returncode}, expected {check_rc}\n"
                f"stdout: {p.stdout}\nstderr: {p.stderr}\n" + self.log_tail(30))
        return p

    def zxctl_json(self, *args):
        p = self.zxctl(*args, json_out=True, check_rc=0)
        try:
            return json.loads(p.stdout)
        except ValueError:
            pytest.fail(f"zxctl --json {' '.join(args)}: stdout is not one JSON document:\n"
                        f"{p.stdout!r}")

    def status(self):
        s = self.zxctl_json("status")
        assert s.get("ok") is True, f"status not ok: {s}"
        return s

    def pipeline(self, name, st=None):
        st = st or self.status()
        for p in st.get("pipelines", []):
            if p.get("name") == name:
                return p
        return None

    def process(self, name, st=None):
        st = st or self.status()
        for p in st.get("processes", []):
            if p.get("name") == name:
                return p
        return None

    def entry(self, name, st=None):
        """A pipeline entry, or the process entry for writer/gateway."""
        if name in ("writer", "gateway"):
            return self.process(name, st)
        return self.pipeline(name, st)

    def wait_running(self, name, not_pid=None, deadline=DEADLINE):
        """Poll status until `name` (pipeline, writer or gateway) is running
        with a live pid different from not_pid; return that pid."""
        last = {}

        def ok():
            e = self.entry(name)
            last["e"] = e
            if not e or e.get("state") != "running" or not e.get("pid"):
                return False
            if not_pid is not None and e["pid"] == not_pid:
                return False
            if not pid_alive(e["pid"]):
                return False
            self._all_pids.add(e["pid"])
            return e["pid"]
        return wait_for(ok, lambda: f"{name} running with a new pid (last status entry: "
                        f"{last.get('e')}, old pid {not_pid})\n" + self.log_tail(30), deadline)

    def pids(self):
        """{"supervisor": pid, "writer": pid, "gateway": pid, <pipeline>: pid}"""
        st = self.status()
        out = {"supervisor": st.get("pid")}
        for p in st.get("processes", []) + st.get("pipelines", []):
            out[p["name"]] = p.get("pid")
            if p.get("pid"):
                self._all_pids.add(p["pid"])
        return out

    # -- workspace ---------------------------------------------------------

    def query(self, sql, params=()):
        db = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def table_exists(self, table):
        if not os.path.exists(self.db_path):
            return False
        return bool(self.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                               (table,)))

    def count(self, table, where="", params=()):
        if not self.table_exists(table):
            return 0
        sql = f'SELECT count(*) FROM "{table}"' + (f" WHERE {where}" if where else "")
        return self.query(sql, params)[0][0]

    def columns(self, table):
        """{column name: declared type} from PRAGMA table_info."""
        return {r[1]: r[2] for r in self.query(f'PRAGMA table_info("{table}")')}

    def wait_count(self, table, n, where="", params=(), deadline=DEADLINE):
        last = {}

        def ok():
            last["n"] = self.count(table, where, params)
            return last["n"] >= n
        wait_for(ok, lambda: f"{n} rows in {table} where {where or 'true'} "
                 f"(have {last.get('n')})\n" + self.log_tail(20), deadline)
        return last["n"]


# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------

def _mkroot():
    # Short paths: the control socket must fit in sun_path (108 bytes).
    return tempfile.mkdtemp(prefix="zxit-", dir="/tmp")


def _cleanup_root(root):
    if os.environ.get("ZX_KEEP") == "1":
        return
    for _ in range(50):
        shutil.rmtree(root, ignore_errors=True)
        if not os.path.exists(root):
            return
        time.sleep(0.1)


@pytest.fixture
def make_zxd():
    """Factory: make_zxd(pipelines, start=True, **opts) -> Zxd.  Everything
    it made is killed (whole process group) and removed at teardown."""
    made = []

    def make(pipelines, start=True, **opts):
        z = Zxd(_mkroot(), pipelines, **opts)
        made.append(z)
        if start:
            z.start()
        return z
    yield make
    for z in made:
        z.close()
        _cleanup_root(z.root)


@pytest.fixture(scope="module")
def module_zxd():
    """Module-scoped factory, for one daemon shared by a module's tests."""
    made = []

    def make(pipelines, start=True, **opts):
        z = Zxd(_mkroot(), pipelines, **opts)
        made.append(z)
        if start:
            z.start()
        return z
    yield make
    for z in made:
        z.close()
        _cleanup_root(z.root)


@pytest.fixture
def tmpdir_short():
    root = _mkroot()
    yield root
    _cleanup_root(root)


def pytest_configure(config):
    if not os.path.exists(ZXD):
        # Fail loudly rather than skipping: a missing build is an error.
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(f"zxd not found at {ZXD}; every test will fail"), 2)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        for z in list(_LIVE):
            rep.sections.append((f"zxd log {z.root}", z.log_tail(80)))
