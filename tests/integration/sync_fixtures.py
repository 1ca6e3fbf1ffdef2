"""
What the reverse-sync tests share (test_syncs*.py): a zxd with `direction:
out` pipelines, authors, destination connections and API tokens
(SyncZxd), whose passwords reach it through ${env:} only; writing the
workspace tables a sync reads (SyncZxd.ws_exec, as a dbt model would);
reading each destination back; and the factory behind a module's
`sync_env` fixture (make_sync_env), which removes everything it made.

On a PostgreSQL workspace the zxd connect as zx_createrole (CREATEROLE,
not a superuser, owner of its fresh database: the least a workspace role
needs for syncs, README "Reverse syncs"), and the workspace tables are made
as that role, as a dbt model run by the workspace's owner would; set
ZX_TEST_SYNC_PG_ROLE to another role of pg_fixtures.USERS (e.g. zx, the
superuser) to run them as that one.

It must never: leave a database, a role or a folder behind, or talk to
anything but 127.0.0.1.
"""

import json
import os
import re
import secrets
import sqlite3
import subprocess
import urllib.parse

import pg_fixtures
from conftest import REPO, Zxd, _mkroot, teardown_zxds


def yaml_value(v):
    """A Python value as an inline YAML value (JSON is YAML)."""
    return json.dumps(v)


class SyncZxd(Zxd):
    """A Zxd with an http pipeline "web" and reverse syncs.

    syncs: {name: {"author": a, "query": sql, "dest": {...}, "mode": m,
                   "key": [..], "schedule": s, "extra": {k: v}}}
      dest: {"connection": c, "table": t} or {"files": {"path": p, "format": f}}
    authors: {name: [tables]}
    connections: {name: {"kind": k, "dsn": d, "password": pw, "path": p,
                         "read_only": bool, "extra": {k: v}}}; a dsn may hold
                         "{pw}" where the password goes: it becomes
                         ${env:...}; extra: other options as written
    api_tokens: {name: {"token": t, "role": r, "syncs": [..], "extra": {k: v}}}"""

    def __init__(self, root, syncs, authors, connections=None, api_tokens=None, **kw):
        self.syncs = dict(syncs)
        self.authors = dict(authors)
        self.connections = dict(connections or {})
        self.api_tokens = dict(api_tokens or {})
        super().__init__(root, {"web": {}}, **kw)

    @staticmethod
    def pw_env(conn):
        return "ZX_SYNC_PW_" + re.sub(r"[^A-Za-z0-9]", "_", conn).upper()

    @staticmethod
    def token_env(name):
        return "ZX_SYNC_TOKEN_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()

    def config_text(self):
        text = super().config_text()          # ends with the pipelines' lines
        lines = []
        for name, s in self.syncs.items():
            lines += [f"  {name}:", "    direction: out",
                      f"    author: {s.get('author', 'alice')}",
                      f"    query: {yaml_value(s['query'])}",
                      f"    destination: {yaml_value(s['dest'])}",
                      f"    mode: {s.get('mode', 'upsert')}"]
            if s.get("key"):
                lines.append(f"    key: {yaml_value(s['key'])}")
            if s.get("schedule"):
                lines.append(f"    schedule: {yaml_value(s['schedule'])}")
            for k, v in (s.get("extra") or {}).items():
                lines.append(f"    {k}: {v}")
        if self.authors:
            lines.append("authors:")
            for name, tables in self.authors.items():
                lines.append(f"  {name}: {{tables: {yaml_value(tables)}}}")
        if self.connections:
            lines.append("connections:")
            for name, c in self.connections.items():
                lines += [f"  {name}:", f"    kind: {c['kind']}"]
                if "dsn" in c:
                    dsn = c["dsn"]
                    if "password" in c:
                        self.env[self.pw_env(name)] = urllib.parse.quote(c["password"], safe="")
                        dsn = dsn.replace("{pw}", "${env:%s}" % self.pw_env(name))
                    lines.append(f"    dsn: {yaml_value(dsn)}")
                if "path" in c:
                    lines.append(f"    path: {yaml_value(c['path'])}")
                if c.get("read_only"):
                    lines.append("    read_only: true")
                for k, v in (c.get("extra") or {}).items():
                    lines.append(f"    {k}: {yaml_value(v)}")
        if self.api_tokens:
            lines.append("api_tokens:")
            for name, t in self.api_tokens.items():
                self.env[self.token_env(name)] = t["token"]
                lines += [f"  {name}:", "    token: ${env:%s}" % self.token_env(name),
                          f"    role: {t['role']}"]
                if t.get("syncs"):
                    lines.append(f"    syncs: {yaml_value(t['syncs'])}")
                for k, v in (t.get("extra") or {}).items():
                    lines.append(f"    {k}: {v}")
        return text + "\n".join(lines) + "\n"

    # -- the workspace tables a sync reads ---------------------------------

    def ws_exec(self, *statements):
        """Run SQL on the workspace (SQLite file or Postgres database), as
        a tool building tables there would (dbt, a script)."""
        if self.workspace == "postgres":
            for st in statements:
                self.pg.execute(self.pg_db, st, user=self.pg_user)
            return
        os.makedirs(self.data_dir, exist_ok=True)
        db = sqlite3.connect(self.db_path, timeout=30)
        try:
            for st in statements:
                db.execute(st)
            db.commit()
        finally:
            db.close()

    def ws_types(self):
        """Column types of the workspace for the tests' DDL."""
        if self.workspace == "postgres":
            return {"int": "bigint", "text": "text", "real": "double precision",
                    "ts": "timestamptz", "bool": "boolean", "json": "jsonb"}
        return {"int": "INTEGER", "text": "TEXT", "real": "REAL", "ts": "TIMESTAMP",
                "bool": "BOOLEAN", "json": "JSON"}

    # -- runs ----------------------------------------------------------------

    def run(self, name, *args, check=True, timeout=300):
        """`zxctl --json run NAME --wait`: the run's record (dict)."""
        p = self.zxctl("run", name, "--wait", *args, json_out=True, timeout=timeout)
        rec = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
        if check:
            assert p.returncode == 0 and rec.get("state") == "succeeded", \
                f"run {name} failed (rc {p.returncode}): {p.stdout} {p.stderr}\n" + \
                self.log_tail()
        return rec

    def preview(self, name):
        p = self.zxctl("preview", name, json_out=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])

    def runs(self, name, limit=None):
        args = ["runs", name] + (["--limit", str(limit)] if limit else [])
        p = self.zxctl(*args, json_out=True)
        assert p.returncode == 0, p.stdout + p.stderr
        return json.loads(p.stdout)["runs"]


def sync_pg_role():
    """The workspace role of the syncs' zxd on Postgres: zx_createrole
    unless ZX_TEST_SYNC_PG_ROLE names another of pg_fixtures.USERS."""
    role = os.environ.get("ZX_TEST_SYNC_PG_ROLE") or pg_fixtures.CREATEROLE_USER
    if role not in pg_fixtures.USERS:
        raise ValueError(f"ZX_TEST_SYNC_PG_ROLE={role!r}: not one of the test roles "
                         f"({', '.join(pg_fixtures.USERS)})")
    return role


def make_sync_env(pg, workspace=None):
    """Generator behind a module's sync_env fixture: zxd(...) -> a started
    SyncZxd on the workspace backend (on Postgres as sync_pg_role() unless
    pg_user= says otherwise); pg_db() -> a fresh Postgres database (a
    destination); the roles zx made for authors are dropped at the end."""
    made, dbs = [], []

    class Env:
        @staticmethod
        def zxd(syncs, authors, start=True, cls=None, **kw):
            if workspace:
                kw.setdefault("workspace", workspace)
            kw.setdefault("pg_user", sync_pg_role())
            z = (cls or SyncZxd)(_mkroot(), syncs, authors, **kw)
            made.append(z)
            if start:
                z.start()
            return z

        @staticmethod
        def pg_db():
            name = pg.create_database()
            dbs.append(name)
            return name

        @staticmethod
        def pg_conn(db, user=None, password=None):
            srv = pg_fixtures.service()
            user = user or pg_fixtures.SUPERUSER
            return {"kind": "postgres",
                    "dsn": f"postgresql://{user}:{{pw}}@{srv.host}:{srv.port}/{db}",
                    "password": password or pg_fixtures.USERS[user]}

    yield Env
    teardown_zxds(made)
    for d in dbs:
        pg.drop_database(d)
    drop_author_roles(pg)


def drop_author_roles(pg):
    """The login roles zx made for authors (zx_author_*): server-wide, so
    dropped once their databases are gone."""
    try:
        rows = pg.query("postgres", "SELECT rolname FROM pg_roles WHERE rolname LIKE 'zx_author_%'")
    except Exception:
        return
    for (r,) in rows:
        try:
            pg.execute("postgres", f'DROP ROLE IF EXISTS "{r}"')
        except Exception:
            pass


def sqlite_rows(path, sql, params=()):
    db = sqlite3.connect(path, timeout=30)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def mariadb_env():
    """The addresses of tests/services/mariadb (started if needed), or None
    when it cannot run here."""
    script = os.path.join(REPO, "tests", "services", "mariadb")
    if not os.path.exists(script):
        return None
    out = subprocess.run([script, "start"], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError("tests/services/mariadb start failed: " + out.stderr[-2000:])
    return dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)


def token():
    return "tok-" + secrets.token_hex(16)
