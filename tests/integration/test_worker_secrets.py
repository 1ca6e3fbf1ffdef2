"""
Secrets stay out of core files, and each process of zxd holds only its own
(issue 18, point 15).

A crashed worker once wrote a core holding every password and key of the
configuration.  Now zxd and its workers are not dumpable (no core file)
unless `server.core_dumps: true`, and a forked child erases from its memory
every secret its role does not need: a pipeline's worker keeps its own push
key only, the writer the workspace's password only, the gateway the push
keys.  Checked here by reading the processes' memory (/proc/PID/mem through
/proc/PID/maps, which needs root) for the keys, given in the three ways a
configuration can give them (${env:}, ${file:}, literal), and by crashing a
worker with the core size limit raised.
"""

import os
import resource
import signal

import pytest

from conftest import pid_alive, wait_for

needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="reading another process's memory needs root")

PIPES = {"alpha": {}, "beta": {"key_ref": "literal"}, "gamma": {"key_ref": "file"}}


CHUNK = 64 << 20
MAX_MAPPING = 64 << 30      # larger: a reservation (ASan's shadow), never filled


def memory_has(pid, needles):
    """{needle: 1 when one of pid's private mappings holds it}: every
    readable private mapping (heap, stack, anonymous, data) is read, in
    chunks that overlap by the longest needle."""
    found = dict.fromkeys(needles, 0)
    over = max(len(n) for n in needles)
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read().splitlines()
    with open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            parts = line.split()
            perms = parts[1]
            name = parts[5] if len(parts) > 5 else ""
            if perms[0] != "r" or perms[3] != "p" or name.startswith(("[vvar", "[vsyscall")):
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            if end - start > MAX_MAPPING:
                continue
            for at in range(start, end, CHUNK):
                try:
                    mem.seek(at)
                    data = mem.read(min(CHUNK + over, end - at))
                except (OSError, ValueError, OverflowError):
                    continue
                for n in needles:
                    if n in data:
                        found[n] = 1
    return found


@needs_root
def test_each_process_holds_only_its_own_secrets(make_zxd):
    z = make_zxd(dict((k, dict(v)) for k, v in PIPES.items()))
    for name in PIPES:
        z.push_ok(name, [{"n": 1}])
        z.wait_count(name, 1)
    pids = z.pids()
    keys = {name: z.keys[name].encode() for name in PIPES}
    for name in PIPES:
        found = memory_has(pids[name], list(keys.values()))
        assert found[keys[name]] == 1, f"worker {name} lost its own key"
        others = [n for n in PIPES if n != name and found[keys[n]]]
        assert not others, f"the worker of {name} holds the key of {others}"
    # the writer needs no push key, the gateway every one
    assert not any(memory_has(pids["writer"], list(keys.values())).values())
    assert all(memory_has(pids["gateway"], list(keys.values())).values())
    if z.workspace == "postgres":
        # the workspace's password: the writer's, no pipeline's
        pw = z.env["ZX_TEST_PG_PASSWORD"].encode()
        assert memory_has(pids["writer"], [pw])[pw] == 1
        for name in PIPES:
            assert memory_has(pids[name], [pw])[pw] == 0, f"worker {name} holds the dsn password"
    # a restarted worker is scrubbed again
    old = pids["alpha"]
    p = z.zxctl("restart", "alpha")
    assert p.returncode == 0, p
    new = z.wait_running("alpha", not_pid=old)
    # status shows the new pid as soon as it is forked, while the child may
    # still be erasing what it inherited: a row it wrote proves it is past
    # that and working
    z.push_ok("alpha", [{"n": 2}])
    z.wait_count("alpha", 2)
    found = memory_has(new, list(keys.values()))
    assert found == {keys["alpha"]: 1, keys["beta"]: 0, keys["gamma"]: 0}, found


def core_path(cwd, pid):
    """Where the kernel writes pid's core with core_pattern, or None when
    this test cannot tell (a pipe, or % specifiers other than %p)."""
    with open("/proc/sys/kernel/core_pattern") as f:
        pat = f.read().strip()
    if not pat or pat.startswith("|") or "%" in pat.replace("%p", ""):
        return None
    path = pat.replace("%p", str(pid))
    try:
        with open("/proc/sys/kernel/core_uses_pid") as f:
            if f.read().strip() == "1" and "%p" not in pat:
                path += f".{pid}"
    except OSError:
        pass
    return path if path.startswith("/") else os.path.join(cwd, path)


def crash_and_look_for_core(z):
    """SIGSEGV the worker of alpha (zxd started with an unlimited core size
    limit): the path of its core, and whether it exists once the worker is
    back."""
    pid = z.wait_running("alpha")
    cwd = os.readlink(f"/proc/{pid}/cwd")
    path = core_path(cwd, pid)
    if path is None:
        pytest.skip("kernel.core_pattern is a pipe or uses specifiers this test cannot follow")
    if os.path.exists(path):
        os.unlink(path)
    os.kill(pid, signal.SIGSEGV)
    wait_for(lambda: not pid_alive(pid), lambda: "the worker did not die", deadline=60)
    z.wait_running("alpha", not_pid=pid)
    there = os.path.exists(path)
    if there:
        os.unlink(path)
    return there


# AddressSanitizer catches SIGSEGV itself (a report, no core) and sets the
# core size limit to 0 when the process starts: nothing to see there.
no_asan = pytest.mark.skipif("ASAN_OPTIONS" in os.environ,
                             reason="a sanitizer build handles SIGSEGV and writes no core")


@pytest.fixture
def cores_unlimited():
    """zxd started meanwhile inherits an unlimited core size limit."""
    old = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    yield
    resource.setrlimit(resource.RLIMIT_CORE, old)


@no_asan
@pytest.mark.sqlite_only
def test_a_crashed_worker_writes_no_core(make_zxd, cores_unlimited):
    z = make_zxd({"alpha": {}})
    assert not crash_and_look_for_core(z), "a core file was written"


@no_asan
@pytest.mark.sqlite_only
def test_core_dumps_true_lets_a_worker_write_its_core(make_zxd, cores_unlimited):
    z = make_zxd({"alpha": {}}, server_extra="core_dumps: true")
    assert crash_and_look_for_core(z), "no core file though server.core_dumps is true"
