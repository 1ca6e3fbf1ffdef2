"""
A new user's first minutes: what ./run.sh, `meson setup`, `meson install`
and a plain `zxctl status` do on a machine that has only what run.sh
installs.

- zxctl finds the control socket from $ZX_CONFIG, and with nothing given
  says where it looked (exit 3); a socket that is not there is reported
  with where its path came from.
- run.sh shows the build's errors and prints the exact zxctl command
  (checked on a tiny stand-in project, so no second zx build is made).
- the main build needs no JSON library that only benchmarks compare with,
  and -Werror is not a default of a user's build.
- `meson install` installs the man pages, the systemd unit and an example
  configuration, not just the binaries.
"""

import json
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import BUILD_DIR, REPO, ZXCTL


def _env_without(*names):
    env = dict(os.environ)
    for n in names:
        env.pop(n, None)
    return env


def _default_config():
    """The default configuration path compiled into zxctl (from its help)."""
    out = subprocess.run([ZXCTL, "help"], capture_output=True, text=True, timeout=30).stdout
    for word in out.replace(",", " ").split():
        if word.endswith("/zx/zx.yaml"):
            return word
    pytest.fail(f"zxctl help does not name its default configuration:\n{out}")


# ---------------------------------------------------------------- zxctl

def test_zxctl_status_with_zx_config(make_zxd, tmpdir_short):
    z = make_zxd({"nu": {}})
    z.wait_running("nu")
    env = _env_without("ZXCTL_SOCKET")
    env["ZX_CONFIG"] = z.cfg_path
    # from an unrelated folder, with neither -s nor -c
    p = subprocess.run([ZXCTL, "--json", "status"], cwd=tmpdir_short, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"zxctl status with $ZX_CONFIG: exit {p.returncode}\n{p.stderr}"
    assert json.loads(p.stdout)["pid"] == z.pid
    p = subprocess.run([ZXCTL, "status"], cwd=tmpdir_short, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "nu" in p.stdout, p.stdout + p.stderr


def test_zxctl_with_nothing_set_says_where_it_looked(tmpdir_short):
    default = _default_config()
    if os.path.exists(default):
        pytest.skip(f"{default} exists on this machine: zxctl would use it")
    env = _env_without("ZX_CONFIG", "ZXCTL_SOCKET")
    p = subprocess.run([ZXCTL, "status"], cwd=tmpdir_short, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, f"exit {p.returncode}, want 3 (unreachable)\n{p.stderr}"
    err = p.stderr
    for where in ("$ZX_CONFIG", "$ZXCTL_SOCKET", default, "./var/zxd.sock", "-c"):
        assert where in err, f"the message does not mention {where!r}:\n{err}"
    assert p.stdout == ""


def test_zxctl_missing_socket_names_its_origin(tmpdir_short):
    cfg = os.path.join(tmpdir_short, "zx.yaml")
    with open(cfg, "w") as f:
        f.write("server:\n  data_dir: ./var\npipelines: {}\n")
    env = _env_without("ZXCTL_SOCKET")
    env["ZX_CONFIG"] = cfg
    p = subprocess.run([ZXCTL, "status"], cwd=tmpdir_short, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, f"exit {p.returncode}\n{p.stderr}"
    sock = os.path.join(tmpdir_short, "var", "zxd.sock")
    assert sock in p.stderr, p.stderr
    assert cfg in p.stderr and "$ZX_CONFIG" in p.stderr, \
        f"the message does not say the path came from $ZX_CONFIG:\n{p.stderr}"


# ---------------------------------------------------------------- run.sh

STAND_IN_MESON = """project('standin', 'c')
subdir('supervisor')
"""

GOOD_ZXD = r"""#include <stdio.h>
int main(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        printf("arg %s\n", argv[i]);
    return 0;
}
"""


def _stand_in(root, zxd_source):
    """A copy of run.sh next to a tiny meson project whose only target is
    build/supervisor/zxd, and an install-deps.sh that installs nothing."""
    os.makedirs(os.path.join(root, "packaging"))
    os.makedirs(os.path.join(root, "supervisor"))
    os.makedirs(os.path.join(root, "conf"))
    shutil.copy(os.path.join(REPO, "run.sh"), root)
    with open(os.path.join(root, "packaging", "install-deps.sh"), "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(os.path.join(root, "packaging", "install-deps.sh"), 0o755)
    with open(os.path.join(root, "meson.build"), "w") as f:
        f.write(STAND_IN_MESON)
    with open(os.path.join(root, "supervisor", "meson.build"), "w") as f:
        f.write("executable('zxd', 'zxd.c')\n")
    with open(os.path.join(root, "supervisor", "zxd.c"), "w") as f:
        f.write(zxd_source)
    shutil.copy(os.path.join(REPO, "conf", "zx.example.yaml"), os.path.join(root, "conf"))


def _run_sh(root):
    return subprocess.run(["bash", os.path.join(root, "run.sh")], cwd="/",
                          capture_output=True, text=True, timeout=300)


def test_run_sh_shows_build_errors(tmpdir_short):
    _stand_in(tmpdir_short, "int main(void) { return zx_no_such_function_here(; }\n")
    p = _run_sh(tmpdir_short)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert "zxd.c" in out and "error" in out, \
        f"run.sh failed without showing the compiler's error:\n{out}"


def test_run_sh_prints_the_zxctl_command(tmpdir_short):
    _stand_in(tmpdir_short, GOOD_ZXD)
    p = _run_sh(tmpdir_short)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "arg -c" in p.stdout, p.stdout          # the stand-in zxd ran
    root = os.path.realpath(tmpdir_short)
    want = f"{root}/build/zxctl/zxctl -c {root}/conf/zx.example.yaml status"
    assert want in p.stderr, f"run.sh does not print {want!r}:\n{p.stderr}"
    assert f"ZX_CONFIG={root}/conf/zx.example.yaml" in p.stderr, p.stderr


# ---------------------------------------------------------------- meson

def _pc_dirs():
    out = subprocess.run(["pkg-config", "--variable", "pc_path", "pkg-config"],
                         capture_output=True, text=True, timeout=30).stdout.strip()
    return [d for d in out.split(":") if os.path.isdir(d)]


def test_main_build_needs_no_bench_json_libraries():
    """With json-c and cJSON invisible to pkg-config (as on a machine with only
    run.sh's packages), a fresh `meson setup` works and makes no target that
    needs them; and -Werror is not a default."""
    if not shutil.which("meson") or not shutil.which("pkg-config"):
        pytest.skip("meson or pkg-config missing")
    root = tempfile.mkdtemp(prefix="zxnu-", dir="/tmp")
    try:
        pcdir = os.path.join(root, "pc")
        os.mkdir(pcdir)
        for d in _pc_dirs():
            for name in os.listdir(d):
                if name.endswith(".pc") and name not in ("json-c.pc", "libcjson.pc") \
                        and not os.path.exists(os.path.join(pcdir, name)):
                    os.symlink(os.path.join(d, name), os.path.join(pcdir, name))
        env = dict(os.environ, PKG_CONFIG_LIBDIR=pcdir)
        env.pop("PKG_CONFIG_PATH", None)
        bd = os.path.join(root, "b")
        p = subprocess.run(["meson", "setup", bd, REPO], env=env, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, f"meson setup failed without json-c/cJSON:\n{p.stdout}{p.stderr}"
        targets = json.loads(subprocess.run(["meson", "introspect", "--targets", bd],
                                            capture_output=True, text=True,
                                            timeout=60).stdout)
        names = {t["name"] for t in targets if t.get("build_by_default", True)}
        assert "zxd" in names and "zxctl" in names, sorted(names)
        assert "bench_json_libs" not in names, \
            "bench_json_libs is built by default although json-c and cJSON are missing"
        opts = json.loads(subprocess.run(["meson", "introspect", "--buildoptions", bd],
                                         capture_output=True, text=True, timeout=60).stdout)
        werror = [o["value"] for o in opts if o["name"] == "werror"]
        assert werror == [False], f"werror default is {werror}: a newer compiler breaks users"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_meson_install_puts_man_pages_unit_and_example_config(tmpdir_short):
    if not shutil.which("meson"):
        pytest.skip("meson missing")
    opts = json.loads(subprocess.run(["meson", "introspect", "--buildoptions", BUILD_DIR],
                                     capture_output=True, text=True, timeout=60).stdout)
    opt = {o["name"]: o["value"] for o in opts}
    prefix = opt["prefix"]
    sysconfdir = os.path.join(prefix, opt["sysconfdir"])   # an absolute one wins
    mandir = os.path.join(prefix, opt["mandir"])
    bindir = os.path.join(prefix, opt["bindir"])
    dest = os.path.join(tmpdir_short, "dest")
    p = subprocess.run(["meson", "install", "-C", BUILD_DIR, "--no-rebuild", "--destdir", dest],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr

    def at(path):
        return dest + path

    for exe in ("zxd", "zxctl"):
        assert os.access(at(os.path.join(bindir, exe)), os.X_OK), exe
    for page in ("man8/zxd.8", "man1/zxctl.1", "man5/zx.yaml.5"):
        assert os.path.isfile(at(os.path.join(mandir, page))), f"{page} not installed"
    unit = at(os.path.join(prefix, "lib", "systemd", "system", "zxd.service"))
    assert os.path.isfile(unit), "systemd unit not installed"
    text = open(unit).read()
    config = os.path.join(sysconfdir, "zx", "zx.yaml")
    assert f"ExecStart={bindir}/zxd -c {config}" in text, text
    example = at(os.path.join(sysconfdir, "zx", "zx.yaml.example"))
    assert os.path.isfile(example), "example configuration not installed"
    assert open(example).read() == open(os.path.join(REPO, "conf", "zx.example.yaml")).read()
    # zxctl looks for the configuration where it is installed
    assert _default_config() == config
