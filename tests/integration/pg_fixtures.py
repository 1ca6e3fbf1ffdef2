"""
PostgreSQL fixtures for the end-to-end tests.

What it is for: a real PostgreSQL server (tests/services/postgres: a private
cluster of Debian's postgresql-15 on 127.0.0.1), started once per session and
left running (test.sh stops it); a fresh database for each zxd whose
workspace is PostgreSQL (conftest.Zxd with workspace="postgres") or for any
test that asks for one; and the SQL the tests read it back with, through a
client nobody here wrote (psycopg 3 from PyPI, autocommit).

What it must never do: stop the server (other modules use it), talk to
anything but 127.0.0.1, or leave a database behind (whoever calls
create_database() calls drop_database(), or leaves it to conftest's Zxd
teardown).

    def test_x(pg):
        db = pg.create_database()          # "zx_<16 hex digits>", empty
        try:
            pg.execute(db, 'CREATE TABLE "t" (x int)')
            assert pg.query(db, 'SELECT count(*) FROM "t"') == [(0,)]
        finally:
            pg.drop_database(db)

The service's lines (tests/services/postgres start) are in pg.env; test.sh
also exports them as ZX_PG_<KEY> (ZX_PG_DSN, ZX_PG_PORT, ...).  This module
does not need them: it asks the script, which answers at once when the
server runs.
"""

import os
import subprocess
import time
import urllib.parse
import uuid

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PG_SCRIPT = os.path.join(REPO, "tests", "services", "postgres")

# The test-only roles of tests/services/postgres, fixed passwords
SUPERUSER = "zx"
NOCREATE_USER = "zx_nocreate"        # may connect; no CREATE on schema public
CREATEROLE_USER = "zx_createrole"    # CREATEROLE, not a superuser: owns its workspaces
USERS = {SUPERUSER: "zx-secret", NOCREATE_USER: "nocreate-secret",
         CREATEROLE_USER: "createrole-secret"}

_service = None


def service():
    """The running server: started on first use (or found running), then
    the same object for the whole session.  Fails the test when it cannot
    be started."""
    global _service
    if _service is None:
        _service = _start()
    return _service


def _start():
    if not os.path.exists(PG_SCRIPT):
        pytest.fail(f"{PG_SCRIPT} is missing")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.fail("psycopg 3 is not installed (packaging/install-deps.sh --test, "
                    "or: python3 -m pip install 'psycopg[binary]')")
    args = [PG_SCRIPT, "start"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        pytest.fail(f"{' '.join(args)} failed ({p.returncode}):\n{p.stderr[-4000:]}")
    env = {}
    for line in p.stdout.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            env[k.strip()] = v.strip()
    for k in ("PG_VERSION", "PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "DSN"):
        assert k in env, f"{' '.join(args)} printed no {k}=: {p.stdout!r}"
    return Postgres(env)


class Postgres:
    """One running server: its addresses, fresh databases, and SQL on a new
    autocommit connection per call (as the superuser zx unless told)."""

    def __init__(self, env):
        self.env = env
        self.version = env["PG_VERSION"]
        self.host = env["PGHOST"]
        self.port = int(env["PGPORT"])
        self.dsn = env["DSN"]                 # the superuser, database "postgres"
        self.log_path = env.get("LOG")

    def dsn_for(self, dbname="postgres", user=SUPERUSER):
        """A libpq URI for one of the service's roles (USERS) and a database."""
        return (f"postgresql://{urllib.parse.quote(user, safe='')}:"
                f"{urllib.parse.quote(USERS[user], safe='')}@{self.host}:{self.port}/"
                f"{urllib.parse.quote(dbname, safe='')}")

    def admin_dsn(self, dbname="postgres"):
        """The superuser's libpq URI for dbname."""
        return self.dsn_for(dbname, SUPERUSER)

    def connect(self, dbname="postgres", user=SUPERUSER):
        """A new autocommit psycopg connection; the caller closes it."""
        import psycopg
        return psycopg.connect(self.dsn_for(dbname, user), autocommit=True, connect_timeout=30)

    def query(self, dbname, sql, params=None, user=SUPERUSER):
        """The rows of one statement, as a list of tuples ([] when it
        returns none).  params: psycopg's (%s placeholders); user: one of
        USERS."""
        with self.connect(dbname, user) as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def execute(self, dbname, sql, params=None, user=SUPERUSER):
        """One statement (or several, without params), nothing returned."""
        with self.connect(dbname, user) as conn:
            conn.execute(sql, params)

    def create_database(self, owner=SUPERUSER):
        """A fresh, empty database owned by owner (one of USERS: it may
        create schemas there, and schema public, owned by
        pg_database_owner, is its own); returns its name."""
        name = f"zx_{uuid.uuid4().hex[:16]}"
        assert owner in USERS, owner
        self.execute("postgres", f'CREATE DATABASE "{name}" OWNER "{owner}"')
        return name

    def drop_database(self, name):
        """Drop name if it exists: its connections (walsenders included) are
        terminated first and its replication slots dropped, which would
        otherwise hold it."""
        ident = name.replace('"', '""')
        with self.connect("postgres") as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE datname = %s AND pid <> pg_backend_pid()", (name,))
            end = time.monotonic() + 30
            while True:
                slots = conn.execute("SELECT slot_name, active FROM pg_replication_slots "
                                     "WHERE database = %s", (name,)).fetchall()
                for slot, active in slots:
                    if not active:
                        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                if all(not active for _, active in slots) or time.monotonic() > end:
                    break
                time.sleep(0.05)      # a terminated walsender lets go of its slot
            conn.execute(f'DROP DATABASE IF EXISTS "{ident}" WITH (FORCE)')

    def log_tail(self, n=40):
        """The server's log, last n lines (for failure messages)."""
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except (OSError, TypeError):
            return "(no PostgreSQL log)"
        return "---- PostgreSQL log (last %d lines) ----\n%s" % (n, "\n".join(lines[-n:]))


@pytest.fixture(scope="session")
def pg():
    """The PostgreSQL server (tests/services/postgres), started once per
    session and left running."""
    return service()
