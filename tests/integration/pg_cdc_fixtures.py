"""
What the Postgres change-data-capture tests share (test_pg_cdc_checks.py,
test_pg_cdc.py): a zxd with `source: postgres` pipelines whose connection
passwords reach it through ${env:} only (PgCdcZxd), the factory of
databases, roles and such daemons (make_cdc_env, behind each module's
cdc_env fixture), and the comparison of a source table with its mirror.

It must never: leave a database, role or slot behind (everything made is
dropped at teardown), or talk to anything but the server of
tests/services/postgres.
"""

import contextlib
import json
import os
import re
import secrets
import signal
import urllib.parse

import pg_fixtures
from conftest import Zxd, _mkroot, teardown_zxds


class PgCdcZxd(Zxd):
    """A Zxd with an http pipeline "web" and postgres pipelines.

    cdc: {name: {"connection": str, "tables": [..], "extra": {key: value}}}
    pg_connections: {name: {"user": role, "password": str, "db": name}};
    each password goes through ${env:ZX_PGCDC_PW_<NAME>}."""

    def __init__(self, root, cdc, pg_connections, **kw):
        self.cdc = dict(cdc)
        self.pg_connections = dict(pg_connections)
        super().__init__(root, {"web": {}}, **kw)
        # the dsn alone says where and as whom the checks connect
        for k in [k for k in self.env if k.startswith("PG")]:
            del self.env[k]

    @staticmethod
    def pw_env(conn):
        return "ZX_PGCDC_PW_" + re.sub(r"[^A-Za-z0-9]", "_", conn).upper()

    def dsn_config(self, name):
        c = self.pg_connections[name]
        srv = pg_fixtures.service()
        return (f"postgresql://{urllib.parse.quote(c['user'], safe='')}:"
                f"${{env:{self.pw_env(name)}}}@{srv.host}:{c.get('port', srv.port)}/"
                f"{urllib.parse.quote(c['db'], safe='')}")

    def dsn_shown(self, name):
        return self.dsn_config(name).replace("${env:%s}" % self.pw_env(name), "***")

    def config_text(self):
        text = super().config_text()          # ends with the pipelines' lines
        lines = []
        for name, s in self.cdc.items():
            lines += [f"  {name}:", "    direction: stream", "    source: postgres",
                      f"    connection: {s['connection']}",
                      f"    tables: [{', '.join(s['tables'])}]"]
            for k, v in (s.get("extra") or {}).items():
                lines.append(f"    {k}: {v}")
        lines.append("connections:")
        for name, c in self.pg_connections.items():
            self.env[self.pw_env(name)] = urllib.parse.quote(c["password"], safe="")
            lines += [f"  {name}:", "    kind: postgres",
                      f"    dsn: {json.dumps(self.dsn_config(name))}"]
        return text + "\n".join(lines) + "\n"

    def test_output(self, name):
        """`zxctl test NAME`: (exit code, stdout + stderr)."""
        p = self.zxctl("test", name, timeout=60)
        return p.returncode, (p.stdout or "") + (p.stderr or "")


def make_cdc_env(pg, workspace=None):
    """Generator behind a module's cdc_env fixture (`yield from
    make_cdc_env(pg, workspace)`): the factory of what a test needs, all
    removed at teardown: db() -> a fresh database; role(replication=True)
    -> (name, password), a LOGIN role; zxd(cdc, connections) -> a started
    PgCdcZxd on the workspace backend given (None: the current one)."""
    made, dbs, roles = [], [], []

    class Env:
        secrets = list(pg_fixtures.USERS.values())

        @staticmethod
        def db():
            name = pg.create_database()
            dbs.append(name)
            return name

        @staticmethod
        def role(replication=True):
            name = "zx_cdc_t_" + secrets.token_hex(4)
            pw = "cdc-pw-" + secrets.token_hex(8)
            from psycopg import sql
            pg.execute("postgres", sql.SQL("CREATE ROLE {} LOGIN {} PASSWORD {}").format(
                sql.Identifier(name), sql.SQL("REPLICATION" if replication else ""),
                sql.Literal(pw)))
            roles.append(name)
            Env.secrets.append(pw)
            return name, pw

        @staticmethod
        def zxd(cdc, connections, start=True, **kw):
            if workspace:
                kw.setdefault("workspace", workspace)
            z = PgCdcZxd(_mkroot(), cdc, connections, **kw)
            made.append(z)
            if start:
                z.start()
            return z

    yield Env
    teardown_zxds(made)
    for d in dbs:
        pg.drop_database(d)
    for r in roles:
        pg.execute("postgres", f'DROP ROLE IF EXISTS "{r}"')


def superuser(db):
    return {"user": pg_fixtures.SUPERUSER,
            "password": pg_fixtures.USERS[pg_fixtures.SUPERUSER], "db": db}


@contextlib.contextmanager
def copy_held(pg, db, z):
    """Start z (made with start=False) so that its initial copy stays under
    way while the body runs, however fast this machine copies: a transaction
    holding an id on the source keeps the slot from being made (a logical
    slot waits for every such transaction) until the writer is ready and
    stopped (SIGSTOP); then the copy starts, fills the ring and waits there,
    in the copy state, until the body is over and the writer goes on."""
    hold = pg.connect(db)
    hold.autocommit = True
    hold.execute("BEGIN")
    hold.execute("SELECT txid_current()")
    writer = None
    try:
        z.start()
        writer = z.pids()["writer"]
        os.kill(writer, signal.SIGSTOP)
        hold.execute("ROLLBACK")
        yield
    finally:
        if writer:
            os.kill(writer, signal.SIGCONT)
        hold.close()


def assert_no_password(z, text, env):
    for s in env.secrets:
        assert s not in text, "a password is in zxctl's answer"
        assert s not in z.log_text(), "a password is in the zxd log"


