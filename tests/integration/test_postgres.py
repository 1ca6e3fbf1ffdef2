"""
Postgres-only behaviour of the workspace (issue 7): what SQLite cannot
show because its database cannot go away.

- The server restarted mid-load (fast shutdown, and a crash with -m
  immediate): pushes answered 202 are all in the table, those answered
  with ?wait=commit exactly once; /healthz says why while it is down.
- pg_terminate_backend of the writer's session mid-load: the same.
- A second zxd on the same database and schema is refused, naming the
  holder; another schema of the same database works.
- A role without CREATE: zxd refuses to start and says what to grant;
  `zxctl test workspace` says what zx has and lacks.
- Identifiers over 63 bytes: the rejects table of a 63-byte table name is
  shortened the same way every time.
- The password: the config has only a reference to it (${env:} inside the
  dsn); it shows in no log, no `zxctl status`, no `zxctl test workspace`,
  no `zxd --check`; a wrong one stops zxd, saying why, showing neither.
- A server that cannot be reached (a closed port): /healthz answers 503
  naming the writer, and the log says where it tried, password hidden.
- A table whose trigger refuses every row holds back (or rejects) only its
  own pipeline's rows, the others are committed.

The whole suite also runs on Postgres (ZX_WORKSPACES=sqlite,postgres);
these tests run on Postgres (once) whatever ZX_WORKSPACES says.
"""

import os
import subprocess
import threading
import time

import pytest

import pg_fixtures
from conftest import PG_PASSWORD_ENV, ZXD, free_port, uid, wait_for

PG_SCRIPT = pg_fixtures.PG_SCRIPT

pytestmark = pytest.mark.postgres_only


def pg_zxd(make_zxd, pipelines=None, **kw):
    return make_zxd(pipelines or {"ev": {}}, workspace="postgres", **kw)


def pusher(z, start, n, per, wait_commit, acked, errors, stop):
    """Push ids start.. in batches of `per`; record the ids of every batch
    answered 202 (committed: with wait_commit)."""
    i = start
    while i < start + n and not stop.is_set():
        rows = [{"id": k, "tag": "load"} for k in range(i, i + per)]
        try:
            r = z.push("ev", rows, wait_commit=wait_commit, timeout=60)
        except OSError as e:  # refused while zxd is busy: not acknowledged
            errors.append(repr(e))
            time.sleep(0.05)
            i += per
            continue
        if r.status == 202 and (not wait_commit or r.json.get("committed")):
            acked.extend(range(i, i + per))
        else:
            errors.append(r.status)
            time.sleep(0.05)
        i += per


def ids_in(z):
    return [r[0] for r in z.query('SELECT id FROM "ev"')]


@pytest.mark.serial  # restarts the PostgreSQL server every test shares
@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_server_restart_mid_load_loses_nothing_acknowledged(make_zxd, mode):
    z = pg_zxd(make_zxd)
    z.push_ok("ev", {"id": -1, "tag": "first"}, wait_commit=True)
    acked_c, acked_a, errors, stop = [], [], [], threading.Event()
    t1 = threading.Thread(target=pusher, args=(z, 0, 200_000, 200, True, acked_c, errors, stop))
    t2 = threading.Thread(target=pusher, args=(z, 1_000_000, 200_000, 200, False, acked_a,
                                               errors, stop))
    t1.start()
    t2.start()
    wait_for(lambda: len(acked_c) > 5_000, "commits before the restart", deadline=60)
    env = dict(os.environ, ZX_PG_RESTART_MODE=mode)
    p = subprocess.run([PG_SCRIPT, "restart"], capture_output=True, text=True, env=env,
                       timeout=180)
    assert p.returncode == 0, p.stderr
    # the writer reconnects by itself and commits again
    n0 = len(acked_c)
    wait_for(lambda: len(acked_c) > n0 + 5_000, lambda: "commits after the restart\n"
             + z.log_tail(20), deadline=120)
    stop.set()
    t1.join(120)
    t2.join(120)
    # everything accepted is committed once the frames drain
    z.push_ok("ev", {"id": -2, "tag": "last"}, wait_commit=True)
    ids = ids_in(z)
    have = set(ids)
    lost_c = [i for i in acked_c if i not in have]
    lost_a = [i for i in acked_a if i not in have]
    assert not lost_c and not lost_a, f"lost {len(lost_c)} committed, {len(lost_a)} accepted"
    dup_c = len([i for i in ids if 0 <= i < 1_000_000]) - len(set(i for i in ids
                                                                   if 0 <= i < 1_000_000))
    assert dup_c == 0, f"{dup_c} ?wait=commit rows twice"
    log = z.log_text()
    assert "event=workspace_down" in log and "event=workspace_up" in log
    assert "zx-secret" not in log
    print(f"\n[postgres restart -m {mode}] {len(acked_c)} rows committed, {len(acked_a)} "
          f"accepted, 0 lost, {len(ids) - len(have)} duplicates in all, {len(errors)} pushes "
          f"refused meanwhile")


def test_terminated_session_reconnects_and_loses_nothing(make_zxd, pg):
    z = pg_zxd(make_zxd)
    z.push_ok("ev", {"id": -1}, wait_commit=True)
    acked, errors, stop = [], [], threading.Event()
    t = threading.Thread(target=pusher, args=(z, 0, 100_000, 100, True, acked, errors, stop))
    t.start()
    wait_for(lambda: len(acked) > 2_000, "commits before the termination", deadline=60)
    killed = pg.query(z.pg_db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE datname = current_database() AND application_name "
                               "LIKE 'zxd #%%'")
    assert killed and all(r[0] for r in killed)
    n0 = len(acked)
    wait_for(lambda: len(acked) > n0 + 2_000, lambda: "commits after the termination\n"
             + z.log_tail(20), deadline=60)
    stop.set()
    t.join(60)
    ids = ids_in(z)
    assert set(acked) <= set(ids)
    assert len(ids) == len(set(ids))


def test_healthz_and_status_say_why_while_the_server_is_down(make_zxd, pg):
    """The server stopped for good would stop the other tests: instead the
    writer's connections are refused (the database no longer allows
    connections) and its session is terminated."""
    z = pg_zxd(make_zxd)
    z.push_ok("ev", {"id": 1}, wait_commit=True)
    pg.execute("postgres", f'ALTER DATABASE "{z.pg_db}" ALLOW_CONNECTIONS false')
    try:
        pg.query("postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE datname = %s", (z.pg_db,))
        z._pg_close()  # the harness's own reading connection went too
        r = z.push("ev", {"id": 2})
        assert r.status == 202  # accepted into the ring: waits there

        def unhealthy():
            h = z.get("/healthz", timeout=10)
            return h.status == 503 and "workspace unavailable" in str(h.json) and h
        h = wait_for(unhealthy, lambda: "healthz 503 naming the workspace\n" + z.log_tail(20))
        assert "zx-secret" not in str(h.json)
        st = z.zxctl("status", check_rc=0).stdout
        assert "workspace unavailable" in st and "zx-secret" not in st
        # its frames wait: the pipeline is blocked, not running
        p = z.pipeline("ev")
        assert p["state"] == "blocked", p
        assert "workspace unavailable" in p["blocked_reason"], p
        assert "  blocked: workspace unavailable" in st, st
    finally:
        pg.execute("postgres", f'ALTER DATABASE "{z.pg_db}" ALLOW_CONNECTIONS true')
    wait_for(lambda: z.get("/healthz", timeout=10).status == 200, "healthz 200 again",
             deadline=60)
    wait_for(lambda: z.count("ev") == 2, "the row that waited in the ring")
    wait_for(lambda: z.pipeline("ev")["state"] == "running", "ev running again")
    assert z.pipeline("ev")["blocked_reason"] is None


def test_second_zxd_on_one_schema_is_refused_and_another_schema_works(make_zxd):
    a = pg_zxd(make_zxd)
    a.push_ok("ev", {"id": 1}, wait_commit=True)
    b = make_zxd({"ev": {}}, workspace="postgres", start=False)
    b.use_workspace_of(a)
    b.start(wait=False)
    assert b.wait_exit(60) != 0
    log = b.log_text()
    assert "is in use by another zxd" in log and f"data_dir {a.data_dir}" in log, log[-2000:]
    assert "zx-secret" not in log
    c = make_zxd({"ev": {}}, workspace="postgres", start=False)
    schema = f"s_{uid()[:6]}"
    c.use_workspace_of(a, schema=schema)
    c.start()
    c.push_ok("ev", {"id": 2}, wait_commit=True)
    assert a.count("ev") == 1
    assert a.query(f'SELECT count(*) FROM "{schema}"."ev"')[0][0] == 1


def test_role_without_create_is_refused_and_zxctl_test_says_what_is_missing(make_zxd, pg):
    z = make_zxd({"ev": {}}, workspace="postgres", start=False)
    z.pg_user = pg_fixtures.NOCREATE_USER
    z.write_config()
    z.start(wait=False)
    assert z.wait_exit(60) != 0
    log = z.log_text()
    assert "permission denied for schema public" in log and "grant CREATE" in log, log[-2000:]
    assert "nocreate-secret" not in log
    # granted: it starts, and zxctl test workspace says it is usable
    pg.execute(z.pg_db, f'GRANT CREATE ON SCHEMA public TO "{pg_fixtures.NOCREATE_USER}"')
    z.start()
    out = z.zxctl("test", "workspace", check_rc=0).stdout
    assert "usable (USAGE and CREATE)" in out and "writer lock held by zxd" in out, out
    # revoked again: zxctl test names what to grant
    pg.execute(z.pg_db, f'REVOKE CREATE ON SCHEMA public FROM "{pg_fixtures.NOCREATE_USER}"')
    p = z.zxctl("test", "workspace")
    assert p.returncode != 0 and "GRANT CREATE ON SCHEMA" in (p.stdout + p.stderr)


def test_identifiers_over_63_bytes_are_shortened_the_same_way(make_zxd):
    name = "t" * 63
    z = pg_zxd(make_zxd, {"ev": {"table": name}})
    z.push_ok("ev", [{"n": 1}, {"n": "x"}], wait_commit=True)
    z.push_ok("ev", [{"n": "y"}], wait_commit=True)
    tables = [r[0] for r in z.query("SELECT tablename FROM pg_tables WHERE schemaname = "
                                    "'public' AND tablename LIKE 'ttt%%' ORDER BY 1")]
    assert name in tables
    rej = [t for t in tables if t != name]
    assert len(rej) == 1 and len(rej[0]) == 63 and rej[0].startswith("t" * 54 + "_"), tables
    assert z.query(f'SELECT count(*) FROM "{rej[0]}"')[0][0] == 2


def test_password_is_in_no_file_log_or_status(make_zxd):
    z = pg_zxd(make_zxd)
    with open(z.cfg_path) as f:
        cfg = f.read()
    # the file refers to the variable; zxd's environment has the password
    assert f"postgresql://zx:${{env:{PG_PASSWORD_ENV}}}@" in cfg, cfg
    assert z.env[PG_PASSWORD_ENV] == pg_fixtures.USERS["zx"]
    z.push_ok("ev", [{"id": 1}, {"id": "x"}], wait_commit=True)
    assert z.count("ev") == 2
    status = z.zxctl("status", check_rc=0).stdout
    assert "zx-secret" not in status, status
    z.assert_no_secret()        # the log, the file, zxctl status and --json status
    shown = [z.zxctl("test", "workspace", check_rc=0),
             z.zxctl("status", use_config=True, check_rc=0),
             subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                            timeout=60, env=z.env, stdin=subprocess.DEVNULL)]
    assert shown[2].returncode == 0, shown[2].stderr
    for p in shown:
        assert not z.secrets_in(p.stdout + p.stderr), p.args
    assert "zx-secret" not in z.log_text()


def test_wrong_password_stops_zxd_saying_why_without_showing_it(make_zxd):
    z = pg_zxd(make_zxd, start=False)
    wrong = f"wrong-secret-{uid()[:8]}"
    z.env[PG_PASSWORD_ENV] = wrong      # after write_config: the file is unchanged
    z.start(wait=False)
    assert z.wait_exit(60) != 0, z.log_tail(30)
    log = z.log_text()
    assert f"cannot connect to Postgres {z.pg_dsn_shown}: " in log, log[-2000:]
    assert 'password authentication failed for user "zx"' in log, log[-2000:]
    assert wrong not in log and "zx-secret" not in log


def test_closed_port_healthz_503_naming_the_writer(make_zxd):
    z = pg_zxd(make_zxd, start=False)
    z.pg_port = free_port()              # nothing listens there
    z.write_config()
    z.start(wait=False)

    def writer_down():
        try:
            r = z.get("/healthz", timeout=5)
        except OSError:
            return False
        return r.status == 503 and "writer" in str(r.json) and r
    h = wait_for(writer_down, lambda: "healthz 503 naming the writer\n" + z.log_tail(20))
    assert not z.secrets_in(h.body.decode("utf-8", "replace"))
    wait_for(lambda: (z.process("writer") or {}).get("restarts", 0) >= 1,
             "the writer restarted (a refused connection is not fatal)")
    assert z.proc.poll() is None, "zxd must keep running, retrying the server"
    log = z.log_text()
    assert f"cannot connect to Postgres postgresql://zx:***@127.0.0.1:{z.pg_port}/{z.pg_db}: " \
        in log and "Connection refused" in log, log[-2000:]
    z.assert_no_secret()
    r = z.push("ev", {"id": 1})
    assert r.status == 202, r           # accepted into the ring meanwhile


def test_trigger_that_refuses_every_row_holds_back_only_its_pipeline(make_zxd):
    """The writer's own words: a table that refuses a frame "for a reason
    that will not go away by itself (the table is a view, a trigger
    refuses every row...)" holds back its pipeline only."""
    z = pg_zxd(make_zxd, {"blocked": {}, "free": {}}, start=False)
    z.pg.execute(z.pg_db, """
        CREATE TABLE blocked(n bigint);
        CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql
            AS $$BEGIN RAISE EXCEPTION 'no rows here'; END$$;
        CREATE TRIGGER refuse BEFORE INSERT ON blocked FOR EACH ROW EXECUTE FUNCTION refuse();
    """)
    z.start()
    r = z.push("blocked", [{"n": 1}, {"n": 2}])
    assert r.status == 202, r
    z.push_ok("free", [{"n": 1}], wait_commit=True)
    assert z.count("free") == 1

    def told():     # held back saying why, or rejected: either way not silent
        p = z.pipeline("blocked")
        return ("no rows here" in (p["last_error"] or "") or p["rejects"] == 2) and p
    p = wait_for(told, "blocked's rows held back or rejected, saying why")
    if p["rejects"] == 2:
        return
    z.pg.execute(z.pg_db, "DROP TRIGGER refuse ON blocked")
    wait_for(lambda: z.pipeline("blocked")["rows"] == 2, "held-back rows written after the fix",
             deadline=90)
    assert z.query("SELECT n FROM blocked ORDER BY n") == [(1,), (2,)]
