"""
The Redis destination (workers/destinations/redis/), end to end against a
real Redis 7 (tests/services/redis), read back with redis-py: rows as JSON
(SET) and as hashes (HSET, HDEL of NULL columns), a TTL, a database
number, invalidation (DEL) of changed and deleted keys in mirror mode, an
ACL user, TLS, a wrong password (a clear error that never holds it), and
a command the server refuses for one row (WRONGTYPE): that row only is
refused, and the next run sends it again; a batch whose connection is
lost goes again on a new one, and a server lost for good fails the run,
the next sending everything.  On both workspace backends.
"""

import json
import os
import secrets

import pytest

from sync_fixtures import make_sync_env

PW_ENV = "ZX_TEST_REDIS_PW"


@pytest.fixture
def sync_env(pg, workspace):
    yield from make_sync_env(pg, workspace)


def client(svc, db=0):
    import redis
    host, port = svc["ADDR"].rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), password=svc["PASSWORD"], db=db)


def orders(z, rows):
    """(Re)make the workspace table orders(id, name, qty, note) with rows."""
    t = z.ws_types()
    z.ws_exec("DROP TABLE IF EXISTS orders",
              f"CREATE TABLE orders (id {t['int']} PRIMARY KEY, name {t['text']}, "
              f"qty {t['int']}, note {t['text']})")
    for r in rows:
        z.ws_exec("INSERT INTO orders VALUES (%s)" % ", ".join(
            "NULL" if v is None else repr(v) if isinstance(v, str) else str(v) for v in r))


ROWS = [(1, "apple", 3, "fresh"), (2, "pear", 5, None), (3, "fig", 7, "dry")]


def redis_zxd(sync_env, svc, dest, mode="upsert", conn=None, rows=ROWS, password=None):
    """A started zxd with one sync "c" of orders into Redis connection
    "cache" (the service's plain address and default user unless conn
    says otherwise; the password through ${env:})."""
    z = sync_env.zxd({}, {"alice": ["orders"]}, start=False)
    c = {"kind": "redis", "extra": {"address": svc["ADDR"], "password": "${env:%s}" % PW_ENV}}
    c["extra"].update(conn or {})
    z.env[PW_ENV] = password if password is not None else svc["PASSWORD"]
    z.connections = {"cache": c}
    z.syncs = {"c": {"query": "SELECT id, name, qty, note FROM orders", "mode": mode,
                     "key": ["id"], "dest": {"redis": dict({"connection": "cache"}, **dest)}}}
    z.write_config()
    orders(z, rows)
    z.start()
    return z


def prefix():
    return "cache:t" + secrets.token_hex(4)


def test_set_as_json_then_mirror_updates_and_deletes(sync_env, redis_service):
    p = prefix()
    z = redis_zxd(sync_env, redis_service, {"key": p + ":order:{id}", "action": "set"},
                  mode="mirror")
    r = client(redis_service)
    rec = z.run("c")
    assert rec["rows_sent"] == 3 and rec.get("batches") == 1, rec
    assert json.loads(r.get(f"{p}:order:1")) == {"id": 1, "name": "apple", "qty": 3,
                                                 "note": "fresh"}
    assert json.loads(r.get(f"{p}:order:2")) == {"id": 2, "name": "pear", "qty": 5,
                                                 "note": None}
    assert r.ttl(f"{p}:order:1") == -1          # no ttl: never expires
    z.ws_exec("UPDATE orders SET qty = 9 WHERE id = 2", "DELETE FROM orders WHERE id = 3")
    rec = z.run("c")
    assert (rec["rows_sent"], rec["rows_deleted"]) == (1, 1), rec
    assert json.loads(r.get(f"{p}:order:2"))["qty"] == 9
    assert r.get(f"{p}:order:3") is None
    assert r.exists(f"{p}:order:1")
    assert redis_service["PASSWORD"] not in z.log_text()


def test_hset_with_ttl_in_another_database(sync_env, redis_service):
    p = prefix()
    z = redis_zxd(sync_env, redis_service,
                  {"key": p + ":{name}:{id}", "action": "hset", "ttl": "60s", "batch_rows": 2},
                  conn={"db": 3})
    r = client(redis_service, db=3)
    rec = z.run("c")
    assert rec["rows_sent"] == 3 and rec["batches"] == 2, rec
    h = r.hgetall(f"{p}:apple:1")
    assert h == {b"id": b"1", b"name": b"apple", b"qty": b"3", b"note": b"fresh"}
    assert r.hgetall(f"{p}:pear:2") == {b"id": b"2", b"name": b"pear", b"qty": b"5"}
    assert 0 < r.ttl(f"{p}:apple:1") <= 60
    assert not client(redis_service, db=0).exists(f"{p}:apple:1")
    # a column turned NULL leaves the hash
    z.ws_exec("UPDATE orders SET note = NULL WHERE id = 1")
    assert z.run("c")["rows_sent"] == 1
    assert r.hgetall(f"{p}:apple:1") == {b"id": b"1", b"name": b"apple", b"qty": b"3"}


def test_invalidate_deletes_changed_and_deleted_keys(sync_env, redis_service):
    p = prefix()
    z = redis_zxd(sync_env, redis_service, {"key": p + ":order:{id}", "action": "invalidate"},
                  mode="mirror")
    r = client(redis_service)
    for i in (1, 2, 3):
        r.set(f"{p}:order:{i}", "cached")
    assert z.run("c")["rows_sent"] == 3          # every row is new: every key dropped
    assert not any(r.exists(f"{p}:order:{i}") for i in (1, 2, 3))
    for i in (1, 2, 3):
        r.set(f"{p}:order:{i}", "cached")
    z.ws_exec("UPDATE orders SET qty = 4 WHERE id = 2", "DELETE FROM orders WHERE id = 3")
    rec = z.run("c")
    assert (rec["rows_sent"], rec["rows_deleted"]) == (1, 1), rec
    assert r.get(f"{p}:order:1") == b"cached"    # unchanged: left alone
    assert not r.exists(f"{p}:order:2") and not r.exists(f"{p}:order:3")


def test_key_values_are_escaped(sync_env, redis_service):
    p = prefix()
    z = redis_zxd(sync_env, redis_service, {"key": p + ":{name}", "action": "set"},
                  rows=[(1, "a:b c*", 1, None), (2, "ü{x}", 2, None)])
    r = client(redis_service)
    assert z.run("c")["rows_sent"] == 2
    assert r.exists(f"{p}:a%3Ab%20c%2A")
    assert r.exists(f"{p}:%C3%BC%7Bx%7D")


def test_acl_user_over_tls(sync_env, redis_service):
    if "TLS_ADDR" not in redis_service:
        pytest.skip("this redis-server has no TLS")
    p = prefix()
    z = redis_zxd(sync_env, redis_service, {"key": p + ":order:{id}"},
                  conn={"address": "rediss://" + redis_service["TLS_ADDR"],
                        "username": redis_service["ACL_USER"],
                        "tls": {"ca": redis_service["CA"]}},
                  password=redis_service["ACL_PASSWORD"])
    assert z.run("c")["rows_sent"] == 3
    assert json.loads(client(redis_service).get(f"{p}:order:3"))["name"] == "fig"
    assert redis_service["ACL_PASSWORD"] not in z.log_text()


def test_acl_user_refused_outside_its_keys_row_by_row(sync_env, redis_service):
    """The ACL user may write cache:* only: each row's SET is refused on
    its own (NOPERM); the run counts them, nothing is recorded."""
    t = secrets.token_hex(4)
    z = redis_zxd(sync_env, redis_service, {"key": "other:" + t + ":{id}"},
                  conn={"username": redis_service["ACL_USER"]},
                  password=redis_service["ACL_PASSWORD"])
    rec = z.run("c", check=False)
    assert rec["rows_failed"] == 3 and "NOPERM" in rec.get("first_error", ""), rec
    assert not client(redis_service).exists(f"other:{t}:1")


def test_wrong_password_is_a_clear_error_without_it(sync_env, redis_service):
    bad = "not-the-password-" + secrets.token_hex(4)
    z = redis_zxd(sync_env, redis_service, {"key": prefix() + ":{id}"}, password=bad)
    rec = z.run("c", check=False)
    assert rec["state"] == "failed", rec
    err = rec.get("error", "")
    assert "AUTH" in err and "WRONGPASS" in err and "redis connection cache" in err, err
    assert bad not in json.dumps(rec) and bad not in z.log_text()
    out = z.zxctl("runs", "c")
    assert bad not in out.stdout + out.stderr


def test_a_host_that_does_not_resolve_fails_the_run_naming_it(sync_env, redis_service):
    # .invalid never resolves (RFC 2606): the lookup fails, or has no answer
    # before the run's deadline; either way the run says so and ends
    z = redis_zxd(sync_env, redis_service, {"key": prefix() + ":{id}"},
                  conn={"address": "redis://zx-no-such-host.invalid:6379"})
    rec = z.run("c", check=False)
    assert rec["state"] == "failed", rec
    assert "resolve zx-no-such-host.invalid" in rec.get("error", ""), rec


def test_a_wrongtype_key_refuses_that_row_only_and_the_next_run_resends_it(
        sync_env, redis_service):
    p = prefix()
    r = client(redis_service)
    r.rpush(f"{p}:order:2", "a list, not a string")
    z = redis_zxd(sync_env, redis_service, {"key": p + ":order:{id}", "action": "hset"})
    rec = z.run("c", check=False)
    assert rec["rows_failed"] == 1 and rec["rows_sent"] == 3, rec
    assert "WRONGTYPE" in rec.get("first_error", ""), rec
    assert f"key {p}:order:2:" in rec["first_error"], rec
    assert r.hget(f"{p}:order:1", "name") == b"apple"
    assert r.hget(f"{p}:order:3", "name") == b"fig"
    assert r.type(f"{p}:order:2") == b"list"
    # nothing changed in the source: only the refused row goes again
    r.delete(f"{p}:order:2")
    rec = z.run("c")
    assert rec["rows_sent"] == 1 and rec.get("rows_failed", 0) == 0, rec
    assert r.hget(f"{p}:order:2", "name") == b"pear"
    assert z.run("c")["rows_sent"] == 0


def test_mirror_template_must_use_key_columns_only(sync_env, redis_service):
    z = sync_env.zxd({}, {"alice": ["orders"]}, start=False)
    z.connections = {"cache": {"kind": "redis", "extra": {"address": redis_service["ADDR"]}}}
    z.syncs = {"c": {"query": "SELECT id, name FROM orders", "mode": "mirror", "key": ["id"],
                     "dest": {"redis": {"connection": "cache", "key": "cache:{name}"}}}}
    z.write_config()
    import subprocess
    from conftest import ZXD
    p = subprocess.run([ZXD, "--check", "-c", z.cfg_path], capture_output=True, text=True,
                       env=z.env, timeout=60)
    assert p.returncode != 0
    assert "mode mirror deletes keys by the sync's key columns only" in p.stderr + p.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="reading another process's memory needs root")
@pytest.mark.skipif("ASAN_OPTIONS" in os.environ,
                    reason="a scan of an ASan process's memory says nothing of zx's buffers")
def test_the_password_is_in_no_other_process(sync_env, redis_service):
    from test_worker_secrets import memory_has
    z = redis_zxd(sync_env, redis_service, {"key": prefix() + ":{id}"})
    assert z.run("c")["rows_sent"] == 3
    pw = redis_service["PASSWORD"].encode()
    pids = z.pids()
    for role in ("web", "writer", "gateway"):
        assert memory_has(pids[role], [pw])[pw] == 0, f"{role} holds the redis password"


def test_tls_checks_the_servers_certificate(sync_env, redis_service):
    """Without the test CA (the system's CAs), the handshake fails and the
    run says why."""
    if "TLS_ADDR" not in redis_service:
        pytest.skip("this redis-server has no TLS")
    z = redis_zxd(sync_env, redis_service, {"key": prefix() + ":{id}"},
                  conn={"address": "rediss://" + redis_service["TLS_ADDR"]})
    rec = z.run("c", check=False)
    assert rec["state"] == "failed", rec
    assert "TLS handshake" in rec["error"] and "certificate" in rec["error"], rec


class CuttingProxy:
    """A TCP proxy to Redis that closes a connection once the client sent
    more than its cut of bytes: the next of `cuts` for each new connection,
    then `cut` (None: never), to lose a server mid-run."""

    def __init__(self, upstream):
        import socket
        import threading
        self.upstream = upstream
        self.cut = None
        self.cuts = []
        self.ls = socket.create_server(("127.0.0.1", 0))
        self.addr = "127.0.0.1:%d" % self.ls.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import socket
        import threading
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            host, port = self.upstream.rsplit(":", 1)
            u = socket.create_connection((host, int(port)))
            cut = self.cuts.pop(0) if self.cuts else self.cut
            threading.Thread(target=self._pipe, args=(c, u, cut), daemon=True).start()
            threading.Thread(target=self._pipe, args=(u, c, None), daemon=True).start()

    @staticmethod
    def _pipe(a, b, cut):
        sent = 0
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                if cut is not None and sent + len(d) > cut:
                    break
                b.sendall(d)
                sent += len(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(2)
            except OSError:
                pass

    def close(self):
        self.ls.close()


def test_a_batch_whose_connection_is_lost_goes_again_on_a_new_one(
        sync_env, redis_service, request):
    proxy = CuttingProxy(redis_service["ADDR"])
    request.addfinalizer(proxy.close)
    proxy.cuts = [3000]                 # the first connection: AUTH, a few batches
    p = prefix()
    rows = [(i, "n%d" % i, i, None) for i in range(1, 201)]
    z = redis_zxd(sync_env, redis_service, {"key": p + ":{id}", "batch_rows": 10},
                  conn={"address": proxy.addr}, rows=rows)
    rec = z.run("c")
    assert rec["rows_sent"] == 200 and rec["batches_retried"] == 1, rec
    assert rec["batches"] == 20 and rec["batches_failed"] == 0, rec
    assert "closed the connection" in rec["first_error"], rec
    assert len(client(redis_service).keys(p + ":*")) == 200


def test_a_connection_lost_for_good_fails_the_run_and_the_next_sends_everything(
        sync_env, redis_service, request):
    proxy = CuttingProxy(redis_service["ADDR"])
    request.addfinalizer(proxy.close)
    proxy.cuts = [3000]                 # the first connection: AUTH, a few batches;
    proxy.cut = 100                     # the others die in their first batch
    p = prefix()
    rows = [(i, "n%d" % i, i, None) for i in range(1, 201)]
    z = redis_zxd(sync_env, redis_service, {"key": p + ":{id}", "batch_rows": 10},
                  conn={"address": proxy.addr}, rows=rows)
    rec = z.run("c", check=False)
    assert rec["state"] == "failed" and "closed the connection" in rec["error"], rec
    assert rec["batches_failed"] == 1 and rec["batches_retried"] == 2, rec
    assert rec["batches"] >= 1, rec
    r = client(redis_service)
    assert 0 < len(r.keys(p + ":*")) < 200
    proxy.cut = None
    rec = z.run("c")
    assert rec["rows_sent"] == 200, rec
    assert len(r.keys(p + ":*")) == 200
