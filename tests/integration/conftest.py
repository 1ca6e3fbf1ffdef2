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
$ZX_BUILD_DIR/supervisor/zxd and $ZX_BUILD_DIR/zxctl/zxctl.
Set ZX_KEEP=1 to keep the temporary folders for inspection.

Workspace backends: ZX_WORKSPACES is a comma list of "sqlite" and
"postgres" (default: sqlite).  Set, it parametrises every test that runs a
zxd through make_zxd, module_zxd or make_kzxd (or takes `workspace` itself)
over those backends, with ids [sqlite] / [postgres]; the other tests run
once, on the first backend.  A test marked @pytest.mark.sqlite_only runs on
sqlite only (skipped when sqlite is not in the list); one marked
@pytest.mark.postgres_only runs once, on postgres, whatever the list (its
zxd are made with workspace="postgres").  A test marked
@pytest.mark.pairwise("NAME"), parametrised over NAME too, runs each value
of NAME on one backend in turn (the first value on the first backend, the
second on the second, ...) instead of every value on every backend: for
the long runs, where each backend and each value need a run, not each pair.
Unset, nothing is parametrised:
the suite runs as it always did, on SQLite.  A zxd on
"postgres" gets a fresh database on the server of tests/services/postgres
(pg_fixtures.py), dropped at teardown, and Zxd.query / count / table_exists /
columns / wait_count read it through psycopg instead of sqlite3 (with
SQLite's ? placeholders turned into psycopg's %s).

Values read back compare the same on both backends: on Postgres a
TIMESTAMPTZ comes back as zx's text form (YYYY-MM-DDTHH:MM:SS.ffffffZ, in
UTC, like the TEXT SQLite stores) and a JSONB as its JSON text without the
blanks Postgres prints after "," and ":" (jsonb keeps no text of its own;
its key order and number literals are kept); a BOOLEAN is a Python bool,
equal to SQLite's 1 / 0.  Declared types differ (INTEGER / bigint, ...):
compare Zxd.column_kinds(table) ("integer", "real", "boolean", "text",
"timestamp", "json"), which knows each backend's exact names; Zxd.columns
gives the names themselves.  Zxd.row_order is the column that orders a
table's rows as they were written ("rowid"; "ctid" on Postgres, whose
tables zx only appends to).

The config file holds no Postgres password: the dsn is
postgresql://USER:${env:ZX_TEST_PG_PASSWORD}@host:port/db, the variable set
in zxd's environment only.  At teardown every zxd's log is checked for the
test roles' passwords (Zxd.assert_no_secret checks the log, the config file
and `zxctl status` on demand).
"""

import datetime
import gzip as _gzip
import http.client
import inspect
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
import urllib.parse
import uuid

import pytest

import pg_fixtures
from pg_fixtures import pg  # noqa: F401  (the session fixture, for every test)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.path.abspath(os.environ.get("ZX_BUILD_DIR", os.path.join(REPO, "build")))
ZXD = os.path.join(BUILD_DIR, "supervisor", "zxd")
ZXCTL = os.path.join(BUILD_DIR, "zxctl", "zxctl")

DEADLINE = 30.0          # default deadline of every polling wait, seconds
HTTP_TIMEOUT = 30.0      # socket timeout of test HTTP requests

TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")

# Every daemon alive during a test, so a failure report can show their logs.
_LIVE = []

# Workspace backends (see the docstring above)
KNOWN_WORKSPACES = ("sqlite", "postgres")
WORKSPACES = [w.strip() for w in os.environ.get("ZX_WORKSPACES", "sqlite").split(",")
              if w.strip()] or ["sqlite"]
# Parametrise only when asked: unset, test ids and order stay as they were.
_PARAMETRISE = bool(os.environ.get("ZX_WORKSPACES", "").strip())
# Fixtures that make zxd processes: a test using one runs on every backend.
ZXD_FACTORIES = {"make_zxd", "module_zxd", "make_kzxd", "mirror_env", "sync_env",
                 "make_kin"}
# The backend of the current module's tests: the default of every Zxd made
# without workspace=, e.g. by make_kzxd or a test calling Zxd() itself.
_CURRENT = {"workspace": WORKSPACES[0]}
# Zxd on "postgres" whose database is not dropped yet (workspace fixture's
# teardown drops what the factories left).
_PG_ZXDS = []
# The variable of zxd's environment that holds the Postgres password (the
# config file has only a reference to it)
PG_PASSWORD_ENV = "ZX_TEST_PG_PASSWORD"
# Passwords that must never show: the test roles' of tests/services/postgres
PG_SECRETS = tuple(pg_fixtures.USERS.values())

# Each backend's declared type names (PRAGMA table_info / format_type), and
# the kind of column each is; anything else is "? <name>"
COLUMN_KINDS = {
    "sqlite": {"INTEGER": "integer", "REAL": "real", "BOOLEAN": "boolean",
               "TEXT": "text", "TIMESTAMP": "timestamp", "JSON": "json"},
    "postgres": {"bigint": "integer", "double precision": "real", "boolean": "boolean",
                 "text": "text", "timestamp with time zone": "timestamp", "jsonb": "json"},
}


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

    pipelines: {name: {"key": str, "key_ref": "env"|"file"|"literal"|"none",
                        "table": str|None, "metadata": [..]|None,
                        "ack": "accepted"|"commit"|None, "extra": {k: v}}}
    Every value is optional; the key defaults to "key-<name>-<random>" and is
    passed through ${env:ZX_KEY_<NAME>} unless key_ref says otherwise.
    pg_user: on a Postgres workspace, the role zxd connects as (one of
    pg_fixtures.USERS, default the superuser zx); its fresh database is
    owned by that role."""

    def __init__(self, root, pipelines, max_body_size="1MiB",
                 backpressure_timeout="2s", server_extra="", http_extra="",
                 workspace=None, pg_user=None):
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
        # the workspace backend: "sqlite" (db_path) or "postgres" (pg_db, a
        # fresh database of pg_fixtures.service(), schema public)
        self.workspace = workspace or _CURRENT["workspace"]
        self.pg = self.pg_db = self._pg_conn = None
        self.pg_schema = "public"
        # the workspace's role (one of pg_fixtures.USERS; default the
        # superuser); another one owns the fresh database (so it may create
        # schemas and owns schema public)
        self.pg_user = pg_user or pg_fixtures.SUPERUSER
        self.pg_port = None           # the port in zxd's dsn, when not the server's
        self._pg_owns_db = False      # pg_db is this zxd's own: drop it at teardown
        if self.workspace == "postgres":
            # libpq's PG* variables would fill in whatever the DSN leaves
            # out: the DSN alone says where and as whom zxd connects
            for k in [k for k in self.env if k.startswith("PG")]:
                del self.env[k]
            self.pg = pg_fixtures.service()
            self.pg_db = self.pg.create_database(owner=self.pg_user)
            self._pg_owns_db = True
            _PG_ZXDS.append(self)
        elif self.workspace != "sqlite":
            raise ValueError(f"unknown workspace backend {self.workspace!r} "
                             f"(known: {', '.join(KNOWN_WORKSPACES)})")
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
        lines += ["workspace:"] + self.workspace_lines() + ["pipelines:"]
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
            elif ref == "none":
                pass    # no key: signed pushes only (extra: webhook_secret)
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

    def workspace_lines(self):
        """The lines under `workspace:` for this zxd's backend.  On Postgres
        the dsn refers to ${env:ZX_TEST_PG_PASSWORD}, set here in zxd's
        environment: the file holds no password."""
        if self.workspace == "postgres":
            self.env[PG_PASSWORD_ENV] = urllib.parse.quote(
                pg_fixtures.USERS[self.pg_user], safe="")
            return ["  postgres:",
                    f"    dsn: {json.dumps(self.pg_dsn_config)}",
                    f"    schema: {self.pg_schema}"] + \
                (["    shared: true"] if getattr(self, "pg_shared", False) else [])
        return ["  sqlite:",
                "    path: workspace.db"]

    def _pg_uri(self, password):
        return (f"postgresql://{urllib.parse.quote(self.pg_user, safe='')}:{password}@"
                f"{self.pg.host}:{self.pg_port or self.pg.port}/"
                f"{urllib.parse.quote(self.pg_db, safe='')}")

    @property
    def pg_dsn_config(self):
        """The dsn as the config file has it (the password a reference)."""
        return self._pg_uri("${env:%s}" % PG_PASSWORD_ENV)

    @property
    def pg_dsn_shown(self):
        """The dsn as zxd shows it (password replaced by ***)."""
        return self._pg_uri("***")

    @property
    def pg_dsn(self):
        """The dsn zxd connects with, password included: for clients only,
        never to be written into a config or a message."""
        return self.pg.dsn_for(self.pg_db, self.pg_user)

    def use_workspace_of(self, other, schema=None, user=None):
        """Point this zxd (not started yet) at other's workspace: the same
        SQLite file, or the same Postgres database (this zxd's own fresh
        one is dropped) in schema (default: other's) as role user (default:
        this zxd's).  The database stays other's to drop."""
        assert self.workspace == other.workspace, (self.workspace, other.workspace)
        if self.workspace == "postgres":
            if self.pg_db != other.pg_db:
                self.drop_workspace()
                self.pg_db = other.pg_db
                self._pg_owns_db = False
            self.pg_schema = schema or other.pg_schema
            if user:
                self.pg_user = user
            self.write_config()
        else:
            assert schema is None and user is None, "SQLite has no schema nor role"
            self.write_config(self.config_text().replace(
                "    path: workspace.db", f"    path: {other.db_path}", 1))

    def log_text(self):
        """The whole log ("" when there is none yet)."""
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def secrets_in(self, text):
        """The test passwords text holds."""
        return [s for s in PG_SECRETS if s in text]

    def assert_no_secret(self, status=True):
        """No Postgres password in the log, the config file, nor (zxd
        running, status=True) `zxctl status`, text and JSON."""
        found = {"zxd log": self.secrets_in(self.log_text())}
        try:
            with open(self.cfg_path) as f:
                found["config file"] = self.secrets_in(f.read())
        except FileNotFoundError:
            pass
        if status and self.proc is not None and self.proc.poll() is None:
            for args in (("status",), ("--json", "status")):
                p = self.zxctl(*args)
                found["zxctl " + " ".join(args)] = self.secrets_in(p.stdout + p.stderr)
        bad = {k: v for k, v in found.items() if v}
        assert not bad, f"a Postgres password shows in: {sorted(bad)}"

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
        self._pg_close()

    def drop_workspace(self):
        """Drop the PostgreSQL database of a closed zxd (nothing on sqlite:
        the file goes with the folder; nothing when the database is another
        zxd's, see use_workspace_of)."""
        self._pg_close()
        if self.pg_db is not None and self._pg_owns_db:
            self.pg.drop_database(self.pg_db)
        self._pg_owns_db = False
        if self in _PG_ZXDS:
            _PG_ZXDS.remove(self)

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
            # a pipeline whose frames the writer holds back is "blocked": its
            # worker runs all the same
            if not e or e.get("state") not in ("running", "blocked") or not e.get("pid"):
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
        """The rows of sql (SQLite's ? placeholders, on either backend)."""
        if self.workspace == "postgres":
            return self._pg_query(sql, params)
        db = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def _pg_query(self, sql, params=()):
        import psycopg
        sql, params = _pg_placeholders(sql, params)
        for attempt in (1, 2):
            if self._pg_conn is None:
                self._pg_conn = _pg_reader(self.pg.connect(self.pg_db))
            try:
                cur = self._pg_conn.execute(sql, params)
                return cur.fetchall() if cur.description else []
            except psycopg.OperationalError:
                # e.g. a connection the server closed: once more on a new one
                self._pg_close()
                if attempt == 2:
                    raise

    def _pg_close(self):
        if self._pg_conn is not None:
            try:
                self._pg_conn.close()
            finally:
                self._pg_conn = None

    def table_exists(self, table):
        if self.workspace == "postgres":
            return bool(self.query("SELECT 1 FROM information_schema.tables "
                                   "WHERE table_schema = ? AND table_name = ?",
                                   (self.pg_schema, table)))
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
        """{column name: declared type} in column order, from PRAGMA
        table_info (SQLite: "INTEGER", ...) or pg_attribute (PostgreSQL:
        format_type, "bigint", ...); {} when there is no such table."""
        if self.workspace == "postgres":
            return dict(self.query(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                "WHERE a.attrelid = to_regclass(format('%I.%I', ?::text, ?::text)) "
                "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                (self.pg_schema, table)))
        return {r[1]: r[2] for r in self.query(f'PRAGMA table_info("{table}")')}

    def column_kinds(self, table):
        """{column name: kind} in column order, the kind one of "integer",
        "real", "boolean", "text", "timestamp", "json" for this backend's
        exact declared name (COLUMN_KINDS), else "? <declared name>"."""
        names = COLUMN_KINDS[self.workspace]
        return {c: names.get(t, f"? {t}") for c, t in self.columns(table).items()}

    @property
    def row_order(self):
        """An ORDER BY expression for the order rows were written in: SQLite's
        rowid; on Postgres ctid, the row's place in the heap (zx only
        appends: no UPDATE or DELETE leaves room for a later row before an
        earlier one)."""
        return "ctid" if self.workspace == "postgres" else "rowid"

    def wait_count(self, table, n, where="", params=(), deadline=DEADLINE):
        last = {}

        def ok():
            last["n"] = self.count(table, where, params)
            return last["n"] >= n
        wait_for(ok, lambda: f"{n} rows in {table} where {where or 'true'} "
                 f"(have {last.get('n')})\n" + self.log_tail(20), deadline)
        return last["n"]


def _pg_reader(conn):
    """conn set up to read values the way the tests compare them (see the
    module's docstring): TimeZone UTC, TIMESTAMPTZ as zx's text, JSON and
    JSONB as compact JSON text."""
    from psycopg.adapt import Loader
    from psycopg.types.datetime import TimestamptzLoader

    class ZxTimestamptzLoader(TimestamptzLoader):
        def load(self, data):
            v = super().load(data)
            return v.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    class JsonTextLoader(Loader):
        def load(self, data):
            return json_compact(bytes(data).decode("utf-8"))

    conn.execute("SET TimeZone TO 'UTC'")
    conn.adapters.register_loader("timestamptz", ZxTimestamptzLoader)
    conn.adapters.register_loader("jsonb", JsonTextLoader)
    conn.adapters.register_loader("json", JsonTextLoader)
    return conn


_JSON_BLANKS = re.compile(r'("(?:[^"\\]|\\.)*")|[ \t\r\n]+')


def json_compact(text):
    """JSON text without blanks outside strings (nothing else changed)."""
    return _JSON_BLANKS.sub(lambda m: m.group(1) or "", text)


def _pg_placeholders(sql, params):
    """SQLite's ? placeholders as psycopg's %s (outside quoted strings and
    identifiers), every % doubled; without params the SQL goes as it is."""
    if not params:
        return sql, None
    if isinstance(params, dict):
        raise ValueError("named parameters are not translated for PostgreSQL: use ?")
    out, quote = [], None
    for ch in sql:
        if quote:
            if ch == quote:         # '' and "" inside: closes and reopens
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "?":
            out.append("%s")
            continue
        out.append("%%" if ch == "%" else ch)
    return "".join(out), tuple(params)


# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------

@pytest.fixture(scope="module", autouse=True)
def workspace(request):
    """The workspace backend of the current test: "sqlite" or "postgres".
    Parametrised by pytest_generate_tests when ZX_WORKSPACES is set; module
    scoped, so a module's tests run backend by backend and module_zxd can
    use it.  Every Zxd made meanwhile without workspace= gets it."""
    ws = getattr(request, "param", WORKSPACES[0])
    if ws == "postgres":
        pg_fixtures.service()       # start the server now, not inside a test
    _CURRENT["workspace"] = ws
    yield ws
    _CURRENT["workspace"] = WORKSPACES[0]
    # databases of zxd the factories did not drop (make_kzxd, Zxd() in a test)
    for z in list(_PG_ZXDS):
        z.close()
        z.drop_workspace()


def pytest_generate_tests(metafunc):
    if not _PARAMETRISE or "workspace" not in metafunc.fixturenames:
        return
    ws = list(WORKSPACES)
    if metafunc.definition.get_closest_marker("sqlite_only"):
        ws = [w for w in ws if w == "sqlite"]
    if metafunc.definition.get_closest_marker("postgres_only"):
        ws = ["postgres"]       # whatever the list: these make their backend themselves
    runs_zxd = bool(ZXD_FACTORIES & set(metafunc.fixturenames)) or \
        "workspace" in inspect.signature(metafunc.function).parameters
    if not runs_zxd:
        ws = ws[:1]             # no zxd of its own: once is enough
    if not ws:
        ws = [pytest.param("sqlite", marks=pytest.mark.skip(
            reason=f"sqlite_only, and ZX_WORKSPACES={','.join(WORKSPACES)}"))]
    metafunc.parametrize("workspace", ws, indirect=True, scope="module",
                         ids=lambda w: w)


def pytest_collection_modifyitems(config, items):
    """@pytest.mark.pairwise("NAME"): keep one backend per value of NAME."""
    if len(WORKSPACES) < 2:
        return
    keep, drop = [], []
    for item in items:
        m = item.get_closest_marker("pairwise")
        cs = getattr(item, "callspec", None)
        if not m or not cs or "workspace" not in cs.params:
            keep.append(item)
            continue
        name = m.args[0]
        values = [mk.args[1] for mk in item.iter_markers("parametrize")
                  if mk.args[0] == name][0]
        i = values.index(cs.params[name])
        (keep if WORKSPACES[i % len(WORKSPACES)] == cs.params["workspace"]
         else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def teardown_zxds(made):
    """Kill and remove every Zxd of made (folder, own Postgres database);
    then fail if a log held a Postgres password."""
    leaks = []
    for z in made:
        z.close()
        z.drop_workspace()
        found = z.secrets_in(z.log_text())
        if found:
            leaks.append(f"{z.log_path}: {len(found)} password(s)")
        _cleanup_root(z.root)
    if leaks:
        pytest.fail("a Postgres password is in a zxd log: " + "; ".join(leaks), pytrace=False)


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


def zxd_factory(workspace, cls=None):
    """Generator for a factory fixture: yields make(pipelines, start=True,
    **opts) -> cls (Zxd, or a subclass) on the workspace backend; at
    teardown everything it made is killed (whole process group) and removed
    (folder, PostgreSQL database)."""
    made = []

    def make(pipelines, start=True, **opts):
        opts.setdefault("workspace", workspace)
        z = (cls or Zxd)(_mkroot(), pipelines, **opts)
        made.append(z)
        if start:
            z.start()
        return z
    yield make
    teardown_zxds(made)


@pytest.fixture
def make_zxd(workspace):
    """Factory: make_zxd(pipelines, start=True, **opts) -> Zxd on the
    current workspace backend (see zxd_factory)."""
    yield from zxd_factory(workspace)


@pytest.fixture(scope="module")
def module_zxd(workspace):
    """Module-scoped factory, for one daemon shared by a module's tests."""
    yield from zxd_factory(workspace)


ICEBERG_REST = os.path.join(REPO, "tests", "services", "iceberg-rest")


def iceberg_rest_start(env=None):
    """tests/services/iceberg-rest start: its KEY=value lines as a dict
    (ICEBERG_REST_URI, ICEBERG_WAREHOUSE, ...).  env: the script's
    environment for an instance of a test's own (ZX_SERVICES_DIR,
    ZX_ICEBERG_PORT, ZX_ICEBERG_WAREHOUSE, ...), else os.environ.  Fails the
    test when it fails."""
    args = [ICEBERG_REST, "start"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL, env=env)
    if p.returncode != 0:
        pytest.fail(f"{' '.join(args)} failed ({p.returncode}):\n{p.stderr[-4000:]}")
    lines = dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
    for k in ("ICEBERG_REST_URI", "ICEBERG_WAREHOUSE", "LOG"):
        assert k in lines, f"{' '.join(args)} printed no {k}=: {p.stdout!r}"
    return lines


@pytest.fixture(scope="session")
def iceberg_rest():
    """The Iceberg REST catalog of tests/services/iceberg-rest (its folder
    warehouse unless ZX_ICEBERG_WAREHOUSE says otherwise), started once per
    session and left running (test.sh stops it): its lines as a dict."""
    return iceberg_rest_start()


OPENSEARCH = os.path.join(REPO, "tests", "services", "opensearch")


@pytest.fixture(scope="session")
def opensearch():
    """The OpenSearch node of tests/services/opensearch, started once per
    session and left running (test.sh stops it): its lines as a dict (URL,
    ADDR, OPENSEARCH_VERSION, DATA_DIR, LOG).  Fails the test when it
    cannot start."""
    args = [OPENSEARCH, "start"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        pytest.fail(f"{' '.join(args)} failed ({p.returncode}):\n{p.stderr[-4000:]}")
    lines = dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
    for k in ("URL", "LOG"):
        assert k in lines, f"{' '.join(args)} printed no {k}=: {p.stdout!r}"
    return lines


REDIS_SERVICE = os.path.join(REPO, "tests", "services", "redis")


@pytest.fixture(scope="session")
def redis_service():
    """The Redis server of tests/services/redis, started once per session
    and left running (test.sh stops it): its lines as a dict (ADDR,
    TLS_ADDR and CA when it has TLS, PASSWORD, ACL_USER, ACL_PASSWORD,
    ...)."""
    p = subprocess.run([REDIS_SERVICE, "start"], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        pytest.fail(f"tests/services/redis start failed ({p.returncode}):\n{p.stderr[-4000:]}")
    lines = dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
    for k in ("ADDR", "PORT", "PASSWORD", "ACL_USER", "ACL_PASSWORD"):
        assert k in lines, f"tests/services/redis start printed no {k}=: {p.stdout!r}"
    return lines


@pytest.fixture
def tmpdir_short():
    root = _mkroot()
    yield root
    _cleanup_root(root)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "sqlite_only: runs on the SQLite workspace only (ZX_WORKSPACES)")
    config.addinivalue_line(
        "markers", "postgres_only: runs once, on the Postgres workspace, whatever "
        "ZX_WORKSPACES says")
    config.addinivalue_line(
        "markers", "serial: stops or restarts a server every test shares; test.sh runs "
        "these after the others, one at a time, not beside them on its two workers")
    config.addinivalue_line(
        "markers", "pairwise(NAME): each value of the parameter NAME on one workspace "
        "in turn, not on every one")
    unknown = [w for w in WORKSPACES if w not in KNOWN_WORKSPACES]
    if unknown or len(set(WORKSPACES)) != len(WORKSPACES):
        raise pytest.UsageError(f"ZX_WORKSPACES={os.environ.get('ZX_WORKSPACES')!r}: a comma "
                                f"list of {', '.join(KNOWN_WORKSPACES)}, each once")
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
        if any(z.workspace == "postgres" for z in _LIVE):
            rep.sections.append(("PostgreSQL log", pg_fixtures.service().log_tail(40)))
