"""
Reverse syncs end to end: a real zxd reads its workspace (SQLite or
PostgreSQL, both backends) as an author and sends the result to a real
destination; every mode, second and third runs sending only what changed,
mirror deletes, duplicate keys, the author's policy enforced by the
database, previews, failures that leave the stored hashes alone, a
SIGKILLed run, the history, schedules.

Destinations here: an SQLite file and a PostgreSQL database (tables), and
files (CSV, JSON, Parquet: read back by Python's csv and json, pyarrow
and duckdb).  MariaDB: test_syncs_mysql.py.
"""

import csv
import datetime
import hashlib
import hmac
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import ZXCTL, ZXD, wait_for
from sync_fixtures import make_sync_env, sqlite_rows


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


ROWS = [
    (1, "a@x.org", "free", True, "2026-11-30T10:00:00.000000Z"),
    (2, "b@x.org", "pro", False, None),
    (3, 'c,"q"@x.org', "free", True, "1969-07-20T20:17:40.123456Z"),
]


def make_customers(z, rows=ROWS, extra_tables=True):
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE customers (id {t['int']} PRIMARY KEY, email {t['text']}, "
              f"plan {t['text']}, active {t['bool']}, updated_at {t['ts']})")
    insert_customers(z, rows)
    if extra_tables:
        z.ws_exec(f"CREATE TABLE secrets (id {t['int']}, token {t['text']})",
                  "INSERT INTO secrets VALUES (1, 'hunter2')")


def insert_customers(z, rows):
    for r in rows:
        vals = ", ".join("NULL" if v is None else ("TRUE" if v is True else "FALSE")
                         if isinstance(v, bool) else str(v) if isinstance(v, int)
                         else "'" + v.replace("'", "''") + "'" for v in r)
        z.ws_exec(f"INSERT INTO customers VALUES ({vals})")


def dest_sqlite(z):
    return os.path.join(z.root, "dest.db")


def sqlite_conn(z, **kw):
    return {"crm": dict({"kind": "sqlite", "path": dest_sqlite(z)}, **kw)}


def dest_rows(z, table="customers", cols="id, email, plan"):
    return sqlite_rows(dest_sqlite(z), f"SELECT {cols} FROM {table} ORDER BY id")


def one_sync(sync_env, mode, key=("id",), query="SELECT id, email, plan, active, updated_at "
             "FROM customers", dest=None, conns=None, start=True, **kw):
    """A zxd with one sync `crm` to the SQLite file dest.db."""
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False, **kw)
    z.syncs = {"crm": {"author": "alice", "query": query,
                       "dest": dest or {"connection": "crm", "table": "customers"},
                       "mode": mode, "key": list(key) if key else None}}
    z.connections = conns if conns is not None else sqlite_conn(z)
    z.write_config()
    make_customers(z)
    if start:
        z.start()
    return z


# ---- modes ----------------------------------------------------------------

def test_upsert_sends_only_what_changed(sync_env):
    z = one_sync(sync_env, "upsert")
    r1 = z.run("crm")
    assert (r1["rows_read"], r1["rows_sent"], r1["rows_inserted"], r1["rows_unchanged"]) == \
        (3, 3, 3, 0)
    assert dest_rows(z) == [(1, "a@x.org", "free"), (2, "b@x.org", "pro"),
                            (3, 'c,"q"@x.org', "free")]
    r2 = z.run("crm")
    assert (r2["rows_read"], r2["rows_sent"], r2["rows_unchanged"]) == (3, 0, 3)

    z.ws_exec("UPDATE customers SET plan = 'enterprise' WHERE id = 2")
    insert_customers(z, [(4, "d@x.org", "free", True, "2026-12-01T00:00:00Z")])
    r3 = z.run("crm")
    assert (r3["rows_sent"], r3["rows_updated"], r3["rows_inserted"], r3["rows_unchanged"]) == \
        (2, 1, 1, 2)
    assert dest_rows(z) == [(1, "a@x.org", "free"), (2, "b@x.org", "enterprise"),
                            (3, 'c,"q"@x.org', "free"), (4, "d@x.org", "free")]
    # the history, newest first
    runs = z.runs("crm")
    assert [r["rows_sent"] for r in runs[:3]] == [2, 0, 3]
    assert all(r["state"] == "succeeded" and r["trigger"].startswith("manual") for r in runs[:3])
    # --full sends every row again
    r4 = z.run("crm", "--full")
    assert r4["rows_sent"] == 4
    # the first run, with nothing stored, sent its rows as it read them where
    # the types are known before the first row (Postgres); later runs compare
    # first
    done = [l for l in z.log_text().splitlines() if "event=sync_done" in l]
    assert len(done) == 4, done
    first = "yes" if z.workspace == "postgres" else "no"
    assert [l.split("sent_while_reading=")[1].split()[0] for l in done] == \
        [first, "no", "no", "no"], done


def test_mirror_deletes_the_keys_that_disappear(sync_env):
    z = one_sync(sync_env, "mirror")
    assert z.run("crm")["rows_sent"] == 3
    z.ws_exec("DELETE FROM customers WHERE id IN (1, 3)")
    r = z.run("crm")
    assert (r["rows_deleted"], r["rows_sent"], r["rows_unchanged"]) == (2, 0, 1)
    assert dest_rows(z) == [(2, "b@x.org", "pro")]
    # forgotten: the next run deletes nothing
    r = z.run("crm")
    assert (r["rows_deleted"], r["rows_sent"]) == (0, 0)
    # a key that comes back is sent again
    insert_customers(z, [ROWS[0]])
    r = z.run("crm")
    assert (r["rows_inserted"], r["rows_deleted"]) == (1, 0)
    assert [x[0] for x in dest_rows(z)] == [1, 2]


def test_a_mirror_run_cut_after_its_commit_still_deletes_later(sync_env):
    """A mirror records its new keys before its destination commits (on
    Postgres its first run sends the rows while it reads them, so before the
    commit, not before sending): a run that dies right after the commit,
    before its hashes are recorded, still leaves the keys known, and a later
    run deletes the one that left the result."""
    z = one_sync(sync_env, "mirror", start=False)
    z.env["ZX_FAULT_INJECTION"] = "1"
    z.start()
    marker = os.path.join(z.data_dir, "fault-sync-exit-after-commit")
    open(marker, "w").close()
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and "status 70" in r["error"], r
    assert not os.path.exists(marker)
    assert "event=fault_injection point=sync_after_commit" in z.log_text()
    assert dest_rows(z) == [(1, "a@x.org", "free"), (2, "b@x.org", "pro"),
                            (3, 'c,"q"@x.org', "free")]      # committed
    z.ws_exec("DELETE FROM customers WHERE id = 1")
    r = z.run("crm")
    # the keys were known (row hash 0: sent, version unknown): 2 sent again,
    # 1 deleted; without the record the run would be a first one again and
    # key 1 would stay in the destination for ever
    assert (r["rows_deleted"], r["rows_sent"], r["rows_inserted"]) == (1, 2, 0), r
    assert dest_rows(z) == [(2, "b@x.org", "pro"), (3, 'c,"q"@x.org', "free")]


@pytest.mark.postgres_only   # a first run sends while it reads where types are known first
@pytest.mark.parametrize("point", ["before-commit", "after-commit"])
def test_an_upsert_cut_around_its_commit_sends_every_row_again(sync_env, point):
    """A first upsert into a transactional destination hands its row hashes
    to the writer while the destination builds its key and commits, marked
    unconfirmed, and confirms them once it committed.  A run cut after the
    writer stored them, before the commit (nothing in the destination) or
    after it (the confirmation never sent), must not leave them trusted:
    the next run sends every row, and the one after it nothing."""
    z = one_sync(sync_env, "upsert", start=False)
    z.env["ZX_FAULT_INJECTION"] = "1"
    z.start()
    marker = os.path.join(z.data_dir, "fault-sync-exit-" + point)
    open(marker, "w").close()
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and "status 70" in r["error"], r
    assert not os.path.exists(marker)
    assert "event=fault_injection point=sync_" + point.replace("-", "_") in z.log_text()
    tables = sqlite_rows(dest_sqlite(z), "SELECT count(*) FROM sqlite_master "
                         "WHERE name = 'customers'")[0][0]
    committed = dest_rows(z) if tables else []
    assert len(committed) == (3 if point == "after-commit" else 0), committed
    r = z.run("crm")
    # without the mark the stored hashes would say every row was sent: 0 sent
    assert (r["rows_read"], r["rows_sent"], r["rows_unchanged"]) == (3, 3, 0), r
    assert "event=sync_hashes_unconfirmed" in z.log_text()
    assert dest_rows(z) == [(1, "a@x.org", "free"), (2, "b@x.org", "pro"),
                            (3, 'c,"q"@x.org', "free")]
    r = z.run("crm")
    assert (r["rows_sent"], r["rows_unchanged"]) == (0, 3), r
    z.ws_exec("UPDATE customers SET plan = 'enterprise' WHERE id = 2")
    r = z.run("crm")
    assert (r["rows_sent"], r["rows_updated"], r["rows_unchanged"]) == (1, 1, 2), r
    assert dest_rows(z)[1] == (2, "b@x.org", "enterprise")


def test_mirror_with_a_composite_key(sync_env):
    z = one_sync(sync_env, "mirror", key=("plan", "id"))
    assert z.run("crm")["rows_sent"] == 3
    z.ws_exec("DELETE FROM customers WHERE id = 2")
    assert z.run("crm")["rows_deleted"] == 1
    assert sqlite_rows(dest_sqlite(z), "SELECT plan, id FROM customers ORDER BY id") == \
        [("free", 1), ("free", 3)]


def test_replace_holds_exactly_the_result_and_append_adds(sync_env):
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False)
    z.syncs = {
        "rep": {"query": "SELECT id, email FROM customers", "mode": "replace",
                "dest": {"connection": "crm", "table": "rep"}},
        "app": {"query": "SELECT id, email FROM customers", "mode": "append",
                "dest": {"connection": "crm", "table": "app"}},
    }
    z.connections = sqlite_conn(z)
    z.write_config()
    make_customers(z)
    z.start()
    assert z.run("rep")["rows_sent"] == 3
    z.ws_exec("DELETE FROM customers WHERE id = 1")
    assert z.run("rep")["rows_sent"] == 2
    assert dest_rows(z, "rep", "id") == [(2,), (3,)]
    z.run("app")
    z.run("app")
    assert sqlite_rows(dest_sqlite(z), "SELECT count(*), count(DISTINCT id) FROM app") == [(4, 2)]


def test_duplicate_keys_fail_before_anything_is_committed(sync_env):
    z = one_sync(sync_env, "upsert", query="SELECT id, email FROM customers UNION ALL "
                 "SELECT id, 'again' FROM customers WHERE id = 2")
    r = z.run("crm", check=False)
    assert r["state"] == "failed"
    assert "duplicate key" in r["error"] and "[2]" in r["error"], r["error"]
    if z.workspace == "postgres":
        # a first run into a transactional destination sends as it reads
        # (its types are known before the first row); the duplicate rolls
        # the destination's transaction back
        assert "nothing was committed (the rows sent are rolled back)" in r["error"], r
    else:
        # SQLite's types come from every row: nothing is sent before the end
        assert "nothing was sent" in r["error"], r
    assert not os.path.exists(dest_sqlite(z)) or \
        sqlite_rows(dest_sqlite(z), "SELECT count(*) FROM sqlite_master WHERE name = "
                    "'customers'") == [(0,)]


def test_null_key_fails_naming_the_column(sync_env):
    z = one_sync(sync_env, "upsert", key=("updated_at",))
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and "key column updated_at" in r["error"], r["error"]


# ---- the author's policy ------------------------------------------------------

@pytest.mark.parametrize("query,words", [
    ("SELECT id, token FROM secrets", ["secrets", "alice"]),
    ("SELECT id FROM customers; DELETE FROM customers", ["exactly one statement"]),
    ("DELETE FROM customers", []),
    ("UPDATE customers SET plan = 'x'", []),
])
def test_the_author_policy_is_enforced_by_the_database(sync_env, query, words):
    z = one_sync(sync_env, "replace", key=None, query=query)
    r = z.run("crm", check=False)
    assert r["state"] == "failed", r
    for w in words:
        assert w in r["error"], r["error"]
    # nothing changed, nothing sent
    assert z.query("SELECT count(*) FROM customers") == [(3,)]
    assert z.query("SELECT plan FROM customers WHERE id = 2") == [("pro",)]
    assert not os.path.exists(dest_sqlite(z)) or \
        sqlite_rows(dest_sqlite(z), "SELECT count(*) FROM sqlite_master WHERE name = "
                    "'customers'") == [(0,)]


def test_a_function_with_side_effects_cannot_write(sync_env, pg):
    z = one_sync(sync_env, "replace", key=None, start=False)
    if z.workspace == "postgres":
        z.ws_exec("CREATE TABLE audit (n int)",
                  "CREATE FUNCTION bump() RETURNS int LANGUAGE sql AS "
                  "$$ INSERT INTO audit VALUES (1) RETURNING n $$")
        z.syncs["crm"]["query"] = "SELECT bump() AS n, id FROM customers"
        want = "read-only transaction"
    else:
        # SQLite's functions that reach outside the database are refused
        z.syncs["crm"]["query"] = "SELECT load_extension('/tmp/x') AS n, id FROM customers"
        want = "load_extension"
    z.write_config()
    z.start()
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and want in r["error"], r["error"]
    if z.workspace == "postgres":
        assert z.query("SELECT count(*) FROM audit") == [(0,)]


# ---- authors' roles (PostgreSQL) ---------------------------------------------

# Pairs of distinct author names that a role name made of the name's first
# 40 characters, '-' written '_', would confuse
ALIKE_AUTHORS = [
    ("bob-x", "bob_x"),
    ("a" + "b" * 39 + "-first-of-sixty-chars", "a" + "b" * 39 + "_other_of_sixty_chars"),
]


def author_grants(z, pg):
    """{role: [tables]} of the zx_author_ roles that may SELECT a table of
    z's workspace schema."""
    got = {}
    for role, table in pg.query(
            z.pg_db, "SELECT g.rolname, c.relname FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace, aclexplode(c.relacl) x "
            "JOIN pg_roles g ON g.oid = x.grantee WHERE n.nspname = %s "
            "AND x.privilege_type = 'SELECT' AND g.rolname LIKE 'zx\\_author\\_%%' "
            "ORDER BY 1, 2", (z.pg_schema,)):
        got.setdefault(role, []).append(table)
    return got


def alike_zxd(sync_env, one, other, one_tables, other_tables, syncs):
    z = sync_env.zxd({}, {one: one_tables, other: other_tables}, start=False,
                     workspace="postgres")
    z.syncs = {name: {"author": a, "query": q, "mode": "replace",
                      "dest": {"connection": "crm", "table": name}}
               for name, (a, q) in syncs.items()}
    z.connections = sqlite_conn(z)
    z.write_config()
    make_customers(z)
    return z


@pytest.mark.postgres_only
@pytest.mark.parametrize("one,other", ALIKE_AUTHORS, ids=["punctuation", "60_chars"])
def test_alike_author_names_have_roles_of_their_own(sync_env, pg, one, other):
    z = alike_zxd(sync_env, one, other, ["customers"], ["secrets"], {
        "one_reads": (one, "SELECT id, email FROM customers"),
        "one_steals": (one, "SELECT id, token FROM secrets"),
        "other_reads": (other, "SELECT id, token FROM secrets")})
    z.start()
    for name, ok in [("other_reads", True), ("one_steals", False), ("one_reads", True),
                     ("other_reads", True), ("one_steals", False)]:
        r = z.run(name, check=ok)
        if not ok:
            assert r["state"] == "failed" and "permission denied" in r["error"] and \
                "secrets" in r["error"], r
    # whichever ran last, each author's role may read exactly its tables
    grants = author_grants(z, pg)
    assert sorted(grants.values()) == [["customers"], ["secrets"]], grants
    assert sqlite_rows(dest_sqlite(z), "SELECT count(*) FROM sqlite_master WHERE name = "
                       "'one_steals'") == [(0,)]


@pytest.mark.postgres_only
def test_a_run_of_another_author_never_lends_its_grants(sync_env, pg):
    """bob-x's query waits (on a lock the test holds) after its role was
    set up; bob_x's sync runs meanwhile.  Sharing one role, bob-x's query
    would then read bob_x's secrets."""
    one, other = ALIKE_AUTHORS[0]
    z = alike_zxd(sync_env, one, other, ["customers", "gate"], ["secrets", "gate"], {
        "one_steals": (one, "SELECT s.id, s.token FROM gate, secrets s"),
        "other_reads": (other, "SELECT id, token FROM secrets")})
    z.ws_exec("CREATE TABLE gate (n int)", "INSERT INTO gate VALUES (1)")
    z.start()
    holder = pg.connect(z.pg_db)
    steal = None
    try:
        holder.execute("BEGIN")
        holder.execute("LOCK TABLE gate IN ACCESS EXCLUSIVE MODE")
        steal = subprocess.Popen([ZXCTL, "-s", z.sock, "--json", "run", "one_steals", "--wait"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=z.env, text=True)
        wait_for(lambda: pg.query(z.pg_db, "SELECT 1 FROM pg_stat_activity WHERE "
                                  "application_name = 'zx-sync-one_steals' AND "
                                  "wait_event_type = 'Lock'"),
                 lambda: "one_steals never waited on the lock of table gate\n" + z.log_tail())
        assert z.run("other_reads")["rows_sent"] == 1
        holder.execute("COMMIT")
        out, err = steal.communicate(timeout=300)
    finally:
        holder.close()
        if steal and steal.poll() is None:
            steal.kill()
            steal.wait()
    rec = json.loads(out.strip().splitlines()[-1])
    assert rec["state"] == "failed" and "permission denied" in rec["error"], (rec, err)
    assert sqlite_rows(dest_sqlite(z), "SELECT count(*) FROM sqlite_master WHERE name = "
                       "'one_steals'") == [(0,)]


@pytest.mark.postgres_only
def test_a_workspace_role_without_superuser_runs_syncs_again_and_again(sync_env, pg):
    z = one_sync(sync_env, "upsert", workspace="postgres", pg_user="zx_createrole")
    assert pg.query("postgres", "SELECT rolsuper, rolcreaterole, rolreplication FROM pg_roles "
                    "WHERE rolname = %s", (z.pg_user,)) == [(False, True, False)]
    # the second run altered the role the first made: it used to need a superuser
    for want in (3, 0, 0):
        assert z.run("crm")["rows_sent"] == want
    (role, tables), = author_grants(z, pg).items()
    assert tables == ["customers"]
    assert pg.query("postgres", "SELECT rolcanlogin, rolsuper, rolinherit, rolcreaterole, "
                    "rolcreatedb, shobj_description(oid, 'pg_authid') FROM pg_roles "
                    "WHERE rolname = %s", (role,)) == \
        [(True, False, False, False, False, "zx author: alice")]


@pytest.mark.postgres_only
def test_an_author_role_zx_cannot_vouch_for_fails_the_run(sync_env, pg):
    z = one_sync(sync_env, "upsert", workspace="postgres")
    z.run("crm")
    (role, _), = author_grants(z, pg).items()
    # a grant zx did not make and cannot revoke: the author could read secrets
    pg.execute(z.pg_db, "GRANT SELECT ON secrets TO PUBLIC")
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and "may still read table public.secrets" in r["error"] and \
        role in r["error"], r
    pg.execute(z.pg_db, "REVOKE SELECT ON secrets FROM PUBLIC")
    z.run("crm")
    # a role of that name that is not marked as alice's
    pg.execute("postgres", f'COMMENT ON ROLE "{role}" IS \'made by hand\'')
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and f"role {role} exists but is not zx's role of author " \
        "alice" in r["error"], r
    pg.execute("postgres", f'COMMENT ON ROLE "{role}" IS \'zx author: alice\'')
    # a member of another role (SET ROLE would reach its rights)
    pg.execute("postgres", f'GRANT pg_read_all_data TO "{role}"')
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and "is a member of pg_read_all_data" in r["error"], r
    pg.execute("postgres", f'REVOKE pg_read_all_data FROM "{role}"')
    assert z.run("crm")["state"] == "succeeded"


@pytest.mark.postgres_only
def test_a_table_of_another_schema_granted_to_public_fails_the_run(sync_env, pg):
    """Not only the workspace schema: a table the author's role could read
    in any other schema of the database (granted to PUBLIC, with USAGE on
    its schema) fails the run, naming it and what to revoke; pg_catalog and
    information_schema stay readable (the run succeeds once it is gone)."""
    z = one_sync(sync_env, "upsert", workspace="postgres")
    z.run("crm")
    (role, _), = author_grants(z, pg).items()
    pg.execute(z.pg_db, "CREATE SCHEMA other")
    pg.execute(z.pg_db, "CREATE TABLE other.secret (id int, card text)")
    pg.execute(z.pg_db, "INSERT INTO other.secret VALUES (1, '4111 1111 1111 1111')")
    pg.execute(z.pg_db, "GRANT USAGE ON SCHEMA other TO PUBLIC")
    pg.execute(z.pg_db, "GRANT SELECT ON other.secret TO PUBLIC")
    z.syncs["crm"]["query"] = "SELECT id, card AS email FROM other.secret"
    z.write_config()
    assert z.zxctl_json("reload").get("ok") is True
    r = z.run("crm", check=False)
    assert r["state"] == "failed", r
    assert f"role {role} of author alice may still read table other.secret" in r["error"], r
    assert "REVOKE SELECT ON other.secret FROM PUBLIC" in r["error"], r
    assert "REVOKE USAGE ON SCHEMA other" in r["error"], r
    assert r["rows_sent"] == 0, r
    assert "4111" not in json.dumps(r)
    # the schema's USAGE taken back: nothing there is readable, the run
    # gets no further than the server's "permission denied"
    pg.execute(z.pg_db, "REVOKE USAGE ON SCHEMA other FROM PUBLIC")
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and "permission denied for schema other" in r["error"], r
    z.syncs["crm"]["query"] = "SELECT id, email, plan, active, updated_at FROM customers"
    z.write_config()
    assert z.zxctl_json("reload").get("ok") is True
    assert z.run("crm")["state"] == "succeeded"


@pytest.mark.postgres_only
def test_the_role_an_author_shared_before_is_taken_away(sync_env, pg):
    """zx before: zx_author_<first 40 characters, '-' as '_'>_<6 hex digits
    of the key>, one role for alike names; it must not keep their grants."""
    z = one_sync(sync_env, "upsert", workspace="postgres")
    z.run("crm")                            # makes var/author.key
    with open(os.path.join(z.data_dir, "author.key"), "rb") as f:
        key = f.read()
    legacy = "zx_author_alice_" + hmac.new(key, b"zx role", hashlib.sha256).digest()[:3].hex()
    for st in (f'CREATE ROLE "{legacy}" LOGIN PASSWORD \'old-role-pw\'',
               f'GRANT USAGE ON SCHEMA public TO "{legacy}"',
               f'GRANT SELECT ON customers, secrets TO "{legacy}"'):
        pg.execute(z.pg_db, st, user=z.pg_user)
    assert z.run("crm")["state"] == "succeeded"
    assert pg.query("postgres", "SELECT 1 FROM pg_roles WHERE rolname = %s", (legacy,)) == []
    assert list(author_grants(z, pg).values()) == [["customers"]]


# ---- preview -------------------------------------------------------------------

def test_preview_counts_and_samples_without_sending(sync_env):
    z = one_sync(sync_env, "mirror")
    p = z.preview("crm")
    assert p["state"] == "previewed"
    assert (p["rows_read"], p["rows_inserted"], p["rows_deleted"]) == (3, 3, 0)
    assert len(p["sample"]) == 3 and p["sample"][0]["email"] == "a@x.org"
    assert not os.path.exists(dest_sqlite(z))
    z.run("crm")
    z.ws_exec("DELETE FROM customers WHERE id = 3",
              "UPDATE customers SET plan = 'x' WHERE id = 1")
    p = z.preview("crm")
    assert (p["rows_updated"], p["rows_deleted"], p["rows_unchanged"]) == (1, 1, 1)
    assert p["sample_deletes"] == [[3]]
    # the preview changed nothing: the run that follows sends the same
    r = z.run("crm")
    assert (r["rows_updated"], r["rows_deleted"]) == (1, 1)
    assert [x["state"] for x in z.runs("crm")] == ["succeeded", "succeeded"]
    out = z.zxctl("preview", "crm")
    assert out.returncode == 0 and "would send 0 of 2 rows read" in out.stdout, out.stdout


# ---- failures ---------------------------------------------------------------------

def test_a_failed_run_leaves_the_hashes_and_the_next_one_sends_again(sync_env, pg):
    db = sync_env.pg_db()
    pg.execute(db, "CREATE ROLE zx_sync_t_writer LOGIN PASSWORD 'w-secret-1'")
    try:
        pg.execute(db, "CREATE TABLE customers (id bigint PRIMARY KEY, email text, plan text)")
        pg.execute(db, "GRANT SELECT, INSERT, UPDATE ON customers TO zx_sync_t_writer")
        conns = {"crm": sync_env.pg_conn(db, "zx_sync_t_writer", "w-secret-1")}
        z = one_sync(sync_env, "upsert", conns=conns,
                     query="SELECT id, email, plan FROM customers")
        assert z.run("crm")["rows_sent"] == 3
        z.ws_exec("UPDATE customers SET plan = 'gold' WHERE id = 1")
        pg.execute(db, "REVOKE UPDATE, INSERT ON customers FROM zx_sync_t_writer")
        r = z.run("crm", check=False)
        assert r["state"] == "failed" and "permission denied" in r["error"], r
        assert r["rows_sent"] == 0 and r["rows_failed"] == 1
        pg.execute(db, "GRANT INSERT, UPDATE ON customers TO zx_sync_t_writer")
        r = z.run("crm")
        assert (r["rows_sent"], r["rows_updated"]) == (1, 1)
        assert pg.query(db, "SELECT plan FROM customers WHERE id = 1") == [("gold",)]
        assert "w-secret-1" not in z.log_text()
    finally:
        # the database goes at teardown; the role's grants with it
        try:
            pg.execute(db, "DROP OWNED BY zx_sync_t_writer")
            pg.execute("postgres", "DROP ROLE IF EXISTS zx_sync_t_writer")
        except Exception:
            pass


def test_an_unreachable_destination_fails_the_run_clearly(sync_env):
    conns = {"crm": {"kind": "postgres", "dsn": "postgresql://zx:{pw}@127.0.0.1:1/nowhere",
                     "password": "nope-secret"}}
    z = one_sync(sync_env, "upsert", conns=conns)
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and "crm" in r["error"], r
    assert "nope-secret" not in json.dumps(r) and "nope-secret" not in z.log_text()


def test_read_only_connection_is_refused_at_load(sync_env):
    z = one_sync(sync_env, "upsert", start=False)
    z.connections = sqlite_conn(z, read_only=True)
    z.write_config()
    chk = subprocess.run([ZXD, "--check", "-c", z.cfg_path], capture_output=True, text=True,
                         env=z.env)
    assert chk.returncode != 0 and "crm is read_only: zx never writes to it" in chk.stderr, \
        chk.stderr


def test_a_sigkilled_run_fails_and_the_next_run_sends_everything(sync_env):
    z = one_sync(sync_env, "upsert", start=False)
    t = z.ws_types()
    z.ws_exec(f"CREATE TABLE big (id {t['int']} PRIMARY KEY, v {t['text']})")
    if z.workspace == "postgres":
        z.ws_exec("INSERT INTO big SELECT g, repeat('x', 200) || g FROM generate_series(1, 300000) g")
    else:
        z.ws_exec("WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < 300000) "
                  "INSERT INTO big SELECT g, printf('%.*c', 200, 'x') || g FROM s")
    z.authors = {"alice": ["customers", "big"]}
    z.syncs["crm"]["query"] = "SELECT id, v FROM big"
    z.syncs["crm"]["dest"] = {"connection": "crm", "table": "big"}
    z.write_config()
    z.start()
    p = z.zxctl("run", "crm")
    assert p.returncode == 0, p.stderr

    def worker():
        e = z.pipeline("crm")
        return e["pid"] if e.get("pid") else None
    pid = wait_for(worker, "the run's worker")
    time.sleep(0.3)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: z.runs("crm") and z.runs("crm")[0]["state"] == "failed", "the failed run")
    rec = z.runs("crm")[0]
    assert "signal 9" in rec["error"], rec
    r = z.run("crm")
    assert r["rows_sent"] == 300000 and r["rows_unchanged"] == 0
    assert sqlite_rows(dest_sqlite(z), "SELECT count(*) FROM big") == [(300000,)]
    assert z.run("crm")["rows_sent"] == 0


# ---- files ---------------------------------------------------------------------------

def test_files_csv_json_parquet_read_back_by_independent_readers(sync_env):
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False)
    q = "SELECT id, email, plan, active, updated_at FROM customers"
    out = os.path.join(z.data_dir, "exports")
    z.syncs = {f: {"query": q, "mode": "replace", "dest": {"files": {"path": f"var/exports/{f}",
                                                                     "format": f}}}
               for f in ("csv", "json", "parquet")}
    z.write_config()
    make_customers(z)
    z.start()
    for f in ("csv", "json", "parquet"):
        assert z.run(f)["rows_sent"] == 3
    with open(os.path.join(out, "csv", "csv.csv"), newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["id", "email", "plan", "active", "updated_at"]
    assert rows[3][:3] == ["3", 'c,"q"@x.org', "free"]
    assert rows[2][4] == ""                       # NULL
    with open(os.path.join(out, "json", "json.json")) as fh:
        objs = [json.loads(l) for l in fh]
    assert objs[0]["id"] == 1 and objs[1]["updated_at"] is None
    assert objs[2]["updated_at"] == "1969-07-20T20:17:40.123456Z"
    import duckdb
    import pyarrow.parquet as pq
    path = os.path.join(out, "parquet", "parquet.parquet")
    t = pq.read_table(path)
    assert t.num_rows == 3 and t.column("email").to_pylist()[2] == 'c,"q"@x.org'
    ts = t.column("updated_at").to_pylist()
    assert ts[0] == datetime.datetime(2026, 11, 30, 10, 0, tzinfo=datetime.timezone.utc)
    assert ts[1] is None
    con = duckdb.connect()
    assert con.execute(f"SELECT count(*), sum(id) FROM read_parquet('{path}')").fetchone() == (3, 6)
    # no temporary file left in the folders
    for f in ("csv", "json", "parquet"):
        assert [n for n in os.listdir(os.path.join(out, f)) if n.startswith(".")] == []


# ---- schedules ------------------------------------------------------------------------

def clock_offset_ms(seconds_before_minute=3.0):
    """An offset for zxd's schedule clock that puts the next whole minute
    `seconds_before_minute` from now."""
    now = time.time()
    to_next = 60 - (now % 60)
    # Never a zero offset: with less than `seconds_before_minute` left, aim
    # at the minute after, or zxd may start after the boundary and wait 60 s.
    return int(((to_next - seconds_before_minute) % 60) * 1000)


def test_a_schedule_runs_the_sync(sync_env):
    z = one_sync(sync_env, "upsert", start=False)
    z.syncs["crm"]["schedule"] = "* * * * *"
    z.env["ZX_TEST_CLOCK_OFFSET_MS"] = str(clock_offset_ms(3))
    z.write_config()
    z.start()
    wait_for(lambda: any(r["trigger"] == "schedule" and r["state"] == "succeeded"
                         for r in z.runs("crm")), "a scheduled run", deadline=40)
    assert dest_rows(z)[0] == (1, "a@x.org", "free")
    st = z.pipeline("crm")
    assert st["sync"]["next_run_at"].endswith(":00.000000Z")


def test_a_run_missed_while_zxd_was_down_runs_once_at_start(sync_env):
    z = one_sync(sync_env, "upsert", start=False)
    z.syncs["crm"]["schedule"] = "0 * * * *"
    z.write_config()
    z.start()
    z.run("crm")
    z.stop()
    # zxd comes back "two hours later": two fires were missed, one run
    z.env["ZX_TEST_CLOCK_OFFSET_MS"] = str(2 * 3600 * 1000)
    z.start()
    wait_for(lambda: any("missed" in r["trigger"] for r in z.runs("crm")), "the missed run")
    time.sleep(1.0)
    assert sum("missed" in r["trigger"] for r in z.runs("crm")) == 1


# ---- one-off sends -------------------------------------------------------------------

def test_zxctl_send_runs_once_as_the_operators_author(sync_env):
    import getpass
    me = getpass.getuser()
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False)
    z.connections = sqlite_conn(z)
    z.write_config()
    # no author lists this user yet: refused
    make_customers(z)
    z.start()
    p = z.zxctl("send", "--query", "SELECT id, email FROM customers", "--to", "crm:sent",
                "--mode", "replace")
    assert p.returncode == 1 and f"user {me} is not an operator" in p.stderr, p.stderr
    text = open(z.cfg_path).read().replace("alice: {tables: [\"customers\"]}",
                                          f"alice: {{tables: [\"customers\"], operators: [{me}]}}")
    z.write_config(text)
    assert z.zxctl("reload").returncode == 0
    p = z.zxctl("send", "--query", "SELECT id, email FROM customers", "--to", "crm:sent",
                "--mode", "upsert", "--key", "id", "--print-sync", "crm_sent")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "succeeded" in p.stdout and "sent 3" in p.stdout, p.stdout
    assert "  crm_sent:\n    direction: out\n    author: alice\n" in p.stdout, p.stdout
    assert "destination: {connection: \"crm\", table: \"sent\"}" in p.stdout
    assert sqlite_rows(dest_sqlite(z), "SELECT count(*) FROM sent") == [(3,)]
    # a file, its format from the extension, the path relative to zxctl's folder
    out = os.path.join(z.data_dir, "exports", "x.csv")
    p = subprocess.run([ZXCTL, "-s", z.sock,
                        "send", "--query", "SELECT id FROM customers WHERE id > 1", "--to",
                        "files:var/exports/x.csv", "--mode", "replace"], cwd=z.root,
                       capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert open(out).read().split() == ["id", "2", "3"]
    # the policy holds for sends too; mirror is refused; the transient
    # pipelines are gone afterwards
    p = z.zxctl("send", "--query", "SELECT * FROM secrets", "--to", "crm:s", "--mode", "replace")
    assert p.returncode == 1 and "secrets" in p.stderr
    p = z.zxctl("send", "--query", "SELECT id FROM customers", "--to", "crm:s", "--mode",
                "mirror", "--key", "id")
    assert p.returncode == 1 and "configure a sync" in p.stderr
    wait_for(lambda: not any(e["name"].startswith("zx-send-")
                             for e in z.status()["pipelines"]), "the sends' pipelines gone")


# ---- the README's example -----------------------------------------------------------

@pytest.mark.sqlite_only
def test_the_examples_sync_exports_the_pushed_events(tmp_path):
    """The README's lines: run conf/zx.example.yaml, push two events, run
    web_events_csv, read the CSV."""
    from conftest import REPO, free_port, http_request
    conf = tmp_path / "conf"
    conf.mkdir()
    port = free_port()
    text = open(os.path.join(REPO, "conf", "zx.example.yaml")).read()
    text = text.replace('listen: "127.0.0.1:8780"', f'listen: "127.0.0.1:{port}"')
    (conf / "zx.example.yaml").write_text(text)
    env = dict(os.environ, ZX_WEB_EVENTS_KEY="dev-secret")
    log = open(tmp_path / "zxd.log", "w")
    p = subprocess.Popen([ZXD, "-c", str(conf / "zx.example.yaml")], stdout=log, stderr=log,
                         env=env, start_new_session=True)
    try:
        sock = str(conf / "var" / "zxd.sock")
        wait_for(lambda: os.path.exists(sock) and subprocess.run(
            [ZXCTL, "-s", sock, "status"], capture_output=True).returncode == 0, "zxd up")
        h = {"Authorization": "Bearer dev-secret"}
        assert http_request(port, "POST", "/api/streams/web_events/push",
                            b'{"page":"/home","ms":12}', h).status == 202
        h["Content-Type"] = "application/x-ndjson"
        assert http_request(port, "POST", "/api/streams/web_events/push?wait=commit",
                            b'{"page":"/a"}\n{"page":"/b","ms":30}', h).status == 202
        r = subprocess.run([ZXCTL, "-c", str(conf / "zx.example.yaml"), "run", "web_events_csv",
                            "--wait"], capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0 and "succeeded" in r.stdout, r.stdout + r.stderr
        with open(conf / "var" / "exports" / "web_events.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert sorted(x["page"] for x in rows) == ["/a", "/b", "/home"]
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=60)
        log.close()


def test_a_changed_key_sends_everything_once_and_deletes_nothing_wrong(sync_env):
    z = one_sync(sync_env, "mirror")
    assert z.run("crm")["rows_sent"] == 3
    # the key becomes (id, plan), into a table keyed so: the stored hashes
    # are of another key and say nothing of this one's rows
    z.syncs["crm"]["key"] = ["id", "plan"]
    z.syncs["crm"]["dest"] = {"connection": "crm", "table": "customers2"}
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    z.ws_exec("DELETE FROM customers WHERE id = 3")
    r = z.run("crm")
    assert (r["rows_sent"], r["rows_deleted"]) == (2, 0), r
    assert "key columns changed" in r["note"], r
    assert dest_rows(z, "customers2") == [(1, "a@x.org", "free"), (2, "b@x.org", "pro")]
    # the next run compares with the new key's hashes
    z.ws_exec("DELETE FROM customers WHERE id = 2")
    r = z.run("crm")
    assert (r["rows_sent"], r["rows_deleted"], r["rows_unchanged"]) == (0, 1, 1), r
    assert dest_rows(z, "customers2") == [(1, "a@x.org", "free")]
    # and with the same key and table again, a wrong key's table refuses
    z.syncs["crm"]["key"] = ["id"]
    z.write_config()
    assert z.zxctl("reload").returncode == 0
    r = z.run("crm", check=False)
    assert r["state"] == "failed" and "customers2" in r["error"], r


# ---- values of every type, out of each workspace ---------------------------------------

def test_values_of_every_type_leave_the_workspace_as_they_are(sync_env):
    """A text with tabs, newlines and backslashes, NULLs, int64 limits,
    doubles, booleans, timestamps before 1970 with microseconds, JSON,
    decimals, dates, bytes: read as the author (COPY on Postgres), sent
    to a JSON file and to Parquet, read back."""
    z = sync_env.zxd({}, {"alice": ["kinds"]}, start=False)
    z.syncs = {"j": {"query": "SELECT * FROM kinds", "mode": "replace",
                     "dest": {"files": {"path": "var/exports/k.json", "format": "json"}}},
               "p": {"query": "SELECT * FROM kinds", "mode": "replace",
                     "dest": {"files": {"path": "var/exports/k.parquet", "format": "parquet"}}}}
    z.write_config()
    weird = "tab\there\nnew line \\ back\\slash \"q\" é 日本"
    if z.workspace == "postgres":
        z.ws_exec("CREATE TABLE kinds (id bigint PRIMARY KEY, t text, i bigint, d double precision, "
                  "b boolean, ts timestamptz, j jsonb, n numeric(20,4), dt date, by bytea)",
                  "INSERT INTO kinds VALUES (1, E'" + weird.replace("\\", "\\\\").replace("'", "''")
                  .replace("\t", "\\t").replace("\n", "\\n") + "', 9223372036854775807, 1.5, true, "
                  "'1969-07-20 20:17:40.123456+00', '{\"a\": [1, 2]}', 1234567890123456.7891, "
                  "'0001-01-01', '\\x00ff10'), "
                  "(2, NULL, -9223372036854775808, NULL, false, NULL, NULL, NULL, NULL, NULL)")
    else:
        z.ws_exec("CREATE TABLE kinds (id INTEGER PRIMARY KEY, t TEXT, i INTEGER, d REAL, "
                  "b BOOLEAN, ts TIMESTAMP, j JSON, n TEXT, dt TEXT, by BLOB)",
                  "INSERT INTO kinds VALUES (1, '" + weird.replace("'", "''") + "', "
                  "9223372036854775807, 1.5, 1, '1969-07-20T20:17:40.123456Z', '{\"a\":[1,2]}', "
                  "'1234567890123456.7891', '0001-01-01', X'00ff10'), "
                  "(2, NULL, -9223372036854775808, NULL, 0, NULL, NULL, NULL, NULL, NULL)")
    z.start()
    z.run("j")
    z.run("p")
    rows = [json.loads(l) for l in open(os.path.join(z.data_dir, "exports", "k.json"))]
    rows.sort(key=lambda r: r["id"])
    a, b = rows
    assert a["t"] == weird and b["t"] is None
    assert a["i"] == 9223372036854775807 and b["i"] == -9223372036854775808
    assert a["d"] == 1.5 and b["d"] is None
    assert a["b"] is True and b["b"] is False
    assert a["ts"] == "1969-07-20T20:17:40.123456Z" and b["ts"] is None
    assert a["j"] == {"a": [1, 2]}
    assert a["n"] == "1234567890123456.7891"
    assert a["dt"] == "0001-01-01"
    import base64
    assert base64.b64decode(a["by"]) == b"\x00\xff\x10"
    import pyarrow.parquet as pq
    t = pq.read_table(os.path.join(z.data_dir, "exports", "k.parquet")).to_pylist()
    t.sort(key=lambda r: r["id"])
    assert t[0]["t"] == weird and t[0]["i"] == 9223372036854775807
    assert t[0]["ts"] == datetime.datetime(1969, 7, 20, 20, 17, 40, 123456,
                                           tzinfo=datetime.timezone.utc)
    assert t[1]["i"] == -9223372036854775808 and t[1]["t"] is None


# ---- where files may be written --------------------------------------------------------

def zxd_check(z):
    return subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                          env=z.env, timeout=60)


def test_a_sync_writes_files_only_under_the_roots(sync_env, tmp_path):
    """zxd --check refuses a files path that leaves <data_dir>/exports by
    '..', an absolute path elsewhere, a symbolic link inside the root that
    points out, and another sync's output; a folder of server.file_roots
    is allowed.  Each message names the path, the roots and the option."""
    outside = tmp_path / "outside"
    outside.mkdir()
    added = tmp_path / "added"
    z = sync_env.zxd({}, {"alice": ["customers"]}, start=False)
    exports = os.path.join(z.data_dir, "exports")
    os.makedirs(exports)
    os.symlink(str(outside), os.path.join(exports, "away"))
    q = "SELECT id, email FROM customers"

    def refused(path, *want):
        z.syncs = {"f": {"query": q, "mode": "replace",
                         "dest": {"files": {"path": path, "format": "csv"}}}}
        z.write_config()
        p = zxd_check(z)
        assert p.returncode != 0, (path, p.stdout, p.stderr)
        for w in want:
            assert w in p.stderr, (path, w, p.stderr)
        return p.stderr

    roots = [exports]
    refused("var/exports/../../x.csv", os.path.join(z.root, "x.csv"), *roots,
            "server.file_roots")
    refused(str(outside / "x.csv"), str(outside / "x.csv"), *roots, "server.file_roots")
    refused("var/exports/away/x.csv", os.path.join(exports, "away"), "symbolic link",
            "server.file_roots")
    # another sync's output: its file, or its file in its folder
    z.syncs = {"a": {"query": q, "mode": "replace",
                     "dest": {"files": {"path": "var/exports/a.csv", "format": "csv"}}},
               "b": {"query": q, "mode": "replace",
                     "dest": {"files": {"path": "var/exports/a.csv", "format": "csv"}}}}
    z.write_config()
    p = zxd_check(z)
    assert p.returncode != 0 and "output of sync a" in p.stderr, p.stderr
    z.syncs["b"]["dest"] = {"files": {"path": "var/exports/d", "format": "csv"}}
    z.syncs["a"]["dest"] = {"files": {"path": "var/exports/d/b.csv", "format": "csv"}}
    z.write_config()
    p = zxd_check(z)
    assert p.returncode != 0 and "output of sync b" in p.stderr, p.stderr
    # under an added root it works
    z.server_extra = f"file_roots: [{json.dumps(str(added))}]"
    refused(str(outside / "x.csv"), exports, str(added), "server.file_roots")
    z.syncs = {"f": {"query": q, "mode": "replace",
                     "dest": {"files": {"path": str(added / "sub" / "f.csv"), "format": "csv"}}}}
    z.write_config()
    p = zxd_check(z)
    assert p.returncode == 0, p.stderr
    make_customers(z)
    z.start()
    assert z.run("f")["rows_sent"] == 3
    assert open(added / "sub" / "f.csv").read().split()[0] == "id,email"
    assert os.listdir(outside) == []


SEND_REFUSED = {
    "dotdot": ("{exports}/../../escaped.csv", "outside the folders"),
    "absolute": ("{outside}/x.csv", "outside the folders"),
    "link": ("{exports}/away/x.csv", "symbolic link"),
    "another_sync": ("{exports}/nightly.csv", "output of sync nightly"),
}


@pytest.mark.parametrize("case", sorted(SEND_REFUSED))
def test_a_send_writes_only_where_a_sync_could(sync_env, tmp_path, case):
    """zxctl send --to files: is refused outside the roots ('..', an
    absolute path elsewhere, a link inside the root pointing out) and onto
    another sync's output, which stays as it was."""
    outside = tmp_path / "outside"
    outside.mkdir()
    z = sync_env.zxd({"nightly": {"query": "SELECT id FROM customers", "mode": "replace",
                                  "dest": {"files": {"path": "var/exports/nightly.csv",
                                                     "format": "csv"}}}},
                     {"alice": ["customers"]}, start=False)
    import getpass
    me = getpass.getuser()
    z.write_config()
    text = open(z.cfg_path).read().replace("alice: {tables: [\"customers\"]}",
                                          f"alice: {{tables: [\"customers\"], operators: [{me}]}}")
    assert "operators" in text
    z.write_config(text)
    make_customers(z)
    z.start()
    exports = os.path.join(z.data_dir, "exports")
    assert z.run("nightly")["rows_sent"] == 3
    before = open(os.path.join(exports, "nightly.csv")).read()
    os.symlink(str(outside), os.path.join(exports, "away"))

    def send(path):
        return z.zxctl("send", "--query", "SELECT 1 AS x", "--to", "files:" + path,
                       "--mode", "replace")

    path, want = SEND_REFUSED[case]
    path = path.format(exports=exports, outside=outside)
    p = send(path)
    assert p.returncode == 1, (path, p.stdout, p.stderr)
    assert want in p.stderr and path.split("/")[-1] in p.stderr, (path, p.stderr)
    if want == "outside the folders":
        assert exports in p.stderr and "server.file_roots" in p.stderr, p.stderr
    assert os.listdir(outside) == []
    assert not os.path.exists(os.path.join(z.root, "escaped.csv"))
    assert open(os.path.join(exports, "nightly.csv")).read() == before
    p = send(exports + "/mine.csv")
    assert p.returncode == 0, p.stdout + p.stderr
    assert open(os.path.join(exports, "mine.csv")).read().split() == ["x", "1"]
