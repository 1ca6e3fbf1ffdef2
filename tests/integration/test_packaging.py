"""
The Debian package (packaging/debian, issue 23), end to end on this
machine: build it with packaging/build-deb.sh, check it with lintian (no
E: lines), install it with dpkg, check its files, the zx user and the
systemd unit (systemd-analyze verify), run the installed zxd as user zx on
the installed /etc/zx/zx.yaml as systemd would (systemd is not PID 1 here:
a fake $NOTIFY_SOCKET checks READY=1, RELOADING=1 ... READY=1 for
`zxctl reload`, SIGHUP and a refused reload, STOPPING=1 on SIGTERM, each
from the supervisor's pid; a fake journal socket, through $JOURNAL_STREAM
naming zxd's stderr and ZX_JOURNAL_SOCKET, checks structured records),
then purge it: /etc/zx goes, /var/lib/zx stays, unless
/var/lib/zx/.purge-data asks for it to go.

It installs a package and makes a system user: it runs only when
ZX_PACKAGE_TESTS=1 or $CI is set (test.sh sets ZX_PACKAGE_TESTS=1 for its
first pytest pass), as root or with `sudo -n`, once (not under ASan: it
builds its own binaries), and never on a machine that already has zx
installed, /etc/zx or /var/lib/zx.  Afterwards it purges the package,
removes /var/lib/zx and, if it made the zx user, removes it (set
ZX_PACKAGE_KEEP_USER=1 to keep it).
"""

import array
import http.client
import os
import pwd
import grp
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNIT = "/lib/systemd/system/zxd.service"
CONF = "/etc/zx/zx.yaml"

pytestmark = [
    pytest.mark.skipif(os.environ.get("ZX_PACKAGE_TESTS") != "1" and not os.environ.get("CI"),
                       reason="installs a package: set ZX_PACKAGE_TESTS=1 (test.sh and CI do)"),
    pytest.mark.skipif(bool(os.environ.get("ASAN_OPTIONS")),
                       reason="runs once, in the plain pass: the package builds its own binaries"),
]


def _sudo():
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"],
                                               capture_output=True).returncode == 0:
        return ["sudo", "-n"]
    pytest.skip("needs root or sudo -n to install a package")


def sh(*cmd, check=True, **kw):
    """Run cmd as root; return the CompletedProcess (text)."""
    r = subprocess.run(_sudo() + list(cmd), capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}\n"
                             f"stdout: {r.stdout[-3000:]}\nstderr: {r.stderr[-3000:]}")
    return r


def installed():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "zx"], capture_output=True,
                       text=True)
    return r.returncode == 0 and "installed" in r.stdout and "not-installed" not in r.stdout


def user_exists(name="zx"):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


@pytest.fixture(scope="module")
def deb():
    """Build the .deb; yield its path; leave the machine as it was."""
    _sudo()
    for p in ("/etc/zx", "/var/lib/zx"):
        if os.path.exists(p):
            pytest.skip(f"{p} exists on this machine: not touching it")
    if installed():
        pytest.skip("the zx package is installed on this machine: not touching it")
    for tool in ("dpkg-buildpackage", "dh", "lintian", "systemd-analyze", "setpriv"):
        assert shutil.which(tool), f"{tool} missing: packaging/install-deps.sh --test"
    had_user = user_exists()
    out = tempfile.mkdtemp(prefix="zx-deb.")
    r = subprocess.run([os.path.join(REPO, "packaging", "build-deb.sh")],
                       env=dict(os.environ, ZX_DEB_OUT=out), capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, f"build-deb.sh failed:\n{r.stderr[-5000:]}"
    path = r.stdout.strip().splitlines()[-1]
    assert path.endswith(".deb") and os.path.exists(path), r.stdout
    yield path
    if installed():
        sh("dpkg", "--purge", "zx", check=False)
    sh("rm", "-rf", "/var/lib/zx", "/run/zx", check=False)
    if not had_user and user_exists() and os.environ.get("ZX_PACKAGE_KEEP_USER") != "1":
        sh("deluser", "--system", "--quiet", "zx", check=False)
        if grp_exists("zx"):
            sh("delgroup", "--system", "--quiet", "zx", check=False)
    shutil.rmtree(out, ignore_errors=True)


def grp_exists(name):
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def test_lintian_has_no_errors(deb):
    r = subprocess.run(["lintian", "--pedantic", deb], capture_output=True, text=True)
    lines = [l for l in (r.stdout + r.stderr).splitlines() if l[:2] in ("E:", "W:", "I:", "P:")]
    print("lintian:\n" + "\n".join(lines))
    errors = [l for l in lines if l.startswith("E:")]
    assert not errors, "lintian errors:\n" + "\n".join(errors)


def test_install_files_user_and_unit(deb):
    sh("dpkg", "-i", deb)
    assert installed()
    for f in ("/usr/bin/zxd", "/usr/bin/zxctl", UNIT, CONF,
              "/usr/share/man/man8/zxd.8.gz", "/usr/share/man/man1/zxctl.1.gz",
              "/usr/share/man/man5/zx.yaml.5.gz", "/usr/share/doc/zx/README.Debian"):
        assert os.path.exists(f), f"{f} not installed"
    conffiles = subprocess.run(["dpkg-query", "-W", "-f=${Conffiles}", "zx"],
                               capture_output=True, text=True).stdout
    assert CONF in conffiles, conffiles
    # the zx system user, its data folder and the example's push key
    u = pwd.getpwnam("zx")
    assert u.pw_uid < 1000 and u.pw_dir == "/var/lib/zx", u
    st = os.stat("/var/lib/zx")
    assert st.st_uid == u.pw_uid and stat.S_IMODE(st.st_mode) == 0o750
    st = os.stat("/etc/zx/web_events.key")
    assert st.st_uid == 0 and st.st_gid == u.pw_gid and stat.S_IMODE(st.st_mode) == 0o640
    # the configuration is the README's example with the package's paths
    text = open(CONF).read()
    assert "data_dir: /var/lib/zx" in text and "/run/zx/zxd.sock" in text
    assert "${file:/etc/zx/web_events.key}" in text
    r = sh("/usr/bin/zxd", "-c", CONF, "--check")
    assert "configuration ok" in r.stdout
    # the unit
    unit = open(UNIT).read()
    for want in ("Type=notify", "ExecReload=/usr/bin/zxctl", "User=zx", "ProtectSystem=strict",
                 "ProtectHome=yes", "PrivateTmp=yes", "NoNewPrivileges=yes",
                 "ReadWritePaths=/var/lib/zx", "StateDirectory=zx", "RuntimeDirectory=zx",
                 "ConfigurationDirectory=zx", "LimitNOFILE=65536"):
        assert want in unit, want
    r = sh("systemd-analyze", "verify", UNIT, check=False)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    r = sh("systemd-analyze", "security", "--offline=yes", UNIT, check=False)
    last = [l for l in r.stdout.splitlines() if "Overall exposure level" in l]
    print("systemd-analyze security:", last)
    assert last, r.stdout[-2000:] + r.stderr[-2000:]


class Listener:
    """An AF_UNIX datagram socket zxd (user zx) may send to, with the
    sender's credentials (SO_PASSCRED)."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        os.chmod(path, 0o666)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)

    def recv(self, timeout):
        """(bytes, sender pid) of the next datagram, or (None, None)."""
        self.sock.settimeout(timeout)
        try:
            data, anc, _, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(12))
        except socket.timeout:
            return None, None
        pid = None
        for level, typ, d in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                pid = array.array("i", d[:12])[0]
        return data, pid

    def wait_for(self, pred, what, timeout=60):
        """Datagrams until pred(data) holds; returns the list read."""
        seen = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            data, pid = self.recv(max(0.1, deadline - time.monotonic()))
            if data is None:
                break
            seen.append((data, pid))
            if pred(data):
                return seen
        raise AssertionError(f"no {what} within {timeout}s; got {seen!r}")

    def collect(self):
        """Read every datagram in a thread (a Unix datagram socket queues
        only net.unix.max_dgram_qlen of them; zxd falls back to stderr
        when the queue is full); returns the list it fills."""
        got = []

        def run():
            while not self.closed:
                data, _ = self.recv(0.2)
                if data is not None:
                    got.append(data)
        self.closed = False
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        return got

    def close(self):
        if getattr(self, "thread", None):
            self.closed = True
            self.thread.join()
        self.sock.close()


def journal_fields(data):
    """The fields of one native journal datagram (both forms)."""
    out, i = {}, 0
    while i < len(data):
        eol = data.index(b"\n", i)
        line = data[i:eol]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            out.setdefault(k.decode(), []).append(v.decode())
            i = eol + 1
        else:
            n = int.from_bytes(data[eol + 1:eol + 9], "little")
            out.setdefault(line.decode(), []).append(data[eol + 9:eol + 9 + n].decode())
            i = eol + 9 + n + 1
    return out


def as_zx(*cmd, **kw):
    return ["setpriv", "--reuid=zx", "--regid=zx", "--init-groups", *cmd]


def push(port, key):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", "/api/streams/web_events/push?wait=commit", body=b'{"page":"/deb"}',
              headers={"Authorization": f"Bearer {key}"})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def test_zxd_as_systemd_runs_it_then_purge(deb):
    if not installed():
        sh("dpkg", "-i", deb)
    if os.geteuid() != 0:
        pytest.skip("runs zxd as user zx with setpriv: needs root itself")
    s = socket.socket()
    if s.connect_ex(("127.0.0.1", 8780)) == 0:
        s.close()
        pytest.skip("127.0.0.1:8780 (the example's port) is in use")
    s.close()
    tmp = tempfile.mkdtemp(prefix="zx-deb-run.")
    os.chmod(tmp, 0o755)
    notify = Listener(os.path.join(tmp, "notify"))
    journal = Listener(os.path.join(tmp, "journal"))
    journal_got = journal.collect()
    # what RuntimeDirectory=zx would make
    sh("install", "-d", "-o", "zx", "-g", "zx", "-m", "0750", "/run/zx")
    errpath = os.path.join(tmp, "stderr")
    errf = open(errpath, "wb")
    st = os.fstat(errf.fileno())
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
           "NOTIFY_SOCKET": notify.path,
           "JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}",
           "ZX_JOURNAL_SOCKET": journal.path}
    conf_orig = open(CONF, "rb").read()
    p = subprocess.Popen(as_zx("/usr/bin/zxd", "-c", CONF), env=env, stdout=errf, stderr=errf)
    try:
        seen = notify.wait_for(lambda d: b"READY=1" in d, "READY=1")
        # every notification from the supervisor (setpriv execs: same pid)
        assert all(pid == p.pid for _, pid in seen), (p.pid, seen)
        assert any(b"STATUS=" in d for d, _ in seen), seen
        # the example pipeline takes a push with the key postinst made
        key = open("/etc/zx/web_events.key").read().strip()
        status, body = push(8780, key)
        assert status == 202 and b'"committed":true' in body, (status, body)
        # zxctl reload: RELOADING=1 with MONOTONIC_USEC, then READY=1
        r = subprocess.run(as_zx("/usr/bin/zxctl", "-c", CONF, "reload"), capture_output=True,
                           text=True, timeout=90, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        seen = notify.wait_for(lambda d: b"READY=1" in d, "READY=1 after zxctl reload")
        first = seen[0][0]
        assert first.startswith(b"RELOADING=1\nMONOTONIC_USEC="), seen
        assert int(first.split(b"MONOTONIC_USEC=")[1].split(b"\n")[0]) > 0
        assert all(pid == p.pid for _, pid in seen), seen
        # SIGHUP: the same
        os.kill(p.pid, signal.SIGHUP)
        seen = notify.wait_for(lambda d: b"READY=1" in d, "READY=1 after SIGHUP")
        assert seen[0][0].startswith(b"RELOADING=1\n"), seen
        # a reload zxd refuses fails the command (ExecReload, `systemctl
        # reload`), and zxd says READY=1 again, still on the old
        # configuration; so does a file zxctl itself cannot read
        def reload_with(text):
            with open(CONF, "wb") as f:
                f.write(text)
            try:
                return subprocess.run(as_zx("/usr/bin/zxctl", "-c", CONF, "reload"),
                                      capture_output=True, text=True, timeout=90, env=env)
            finally:
                with open(CONF, "wb") as f:
                    f.write(conf_orig)
        r = reload_with(conf_orig.replace(b"path: workspace.db", b"path: other.db"))
        assert r.returncode != 0 and "reload failed" in r.stderr, (r.returncode, r.stderr)
        assert "workspace cannot change" in r.stderr, r.stderr
        seen = notify.wait_for(lambda d: b"READY=1" in d, "READY=1 after a refused reload")
        assert seen[0][0].startswith(b"RELOADING=1\n"), seen
        assert b"failed" in seen[-1][0], seen
        r = reload_with(conf_orig + b"\nno_such_section: {}\n")
        assert r.returncode != 0 and "no_such_section" in r.stderr, (r.returncode, r.stderr)
        assert push(8780, key)[0] == 202
        # the journal: structured records (MESSAGE, PRIORITY, fields)
        time.sleep(0.5)
        recs = [journal_fields(d) for d in list(journal_got)]
        assert recs, "no record reached the fake journal"
        for f in recs:
            assert f.get("MESSAGE") and f.get("PRIORITY"), f
            assert f.get("SYSLOG_IDENTIFIER") == ["zxd"], f
        starts = [f for f in recs if f.get("ZX_EVENT") == ["start"]
                  and f.get("ZX_PROC") == ["supervisor"]]
        assert starts and starts[0]["PRIORITY"] == ["6"], recs[:5]
        assert starts[0]["ZX_CONFIG"] == [CONF], starts[0]
        rejected = [f for f in recs if f.get("ZX_EVENT") == ["reload"]
                    and f.get("ZX_RESULT") == ["rejected"]]
        assert rejected and rejected[0]["PRIORITY"] == ["3"], recs
        # SIGTERM: STOPPING=1, then zxd exits 0
        p.send_signal(signal.SIGTERM)
        notify.wait_for(lambda d: b"STOPPING=1" in d, "STOPPING=1")
        assert p.wait(timeout=120) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        errf.close()
        notify.close()
        journal.close()
        if open(CONF, "rb").read() != conf_orig:
            with open(CONF, "wb") as f:
                f.write(conf_orig)
    shutil.rmtree(tmp, ignore_errors=True)

    # purge: the configuration goes, the data stays, the user stays
    sh("dpkg", "--purge", "zx")
    assert not installed()
    assert not os.path.exists("/etc/zx"), os.listdir("/etc/zx")
    assert not os.path.exists("/run/zx")
    assert os.path.exists("/var/lib/zx/workspace.db")
    assert user_exists()
    # ... unless /var/lib/zx/.purge-data asks for the data to go
    sh("dpkg", "-i", deb)
    assert os.path.exists("/var/lib/zx/workspace.db")   # an install keeps it
    sh("touch", "/var/lib/zx/.purge-data")
    sh("dpkg", "--purge", "zx")
    assert not os.path.exists("/var/lib/zx")
