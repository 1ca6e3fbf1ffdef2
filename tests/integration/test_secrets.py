"""`${secret:NAME}`: secrets encrypted at rest (AES-256-GCM under a key file the
operator owns), kept with `zxctl secret init | set | list | delete |
rotate-key`, read by zxd at start and reload (common/secret_store.h,
conf/secrets.c, zxctl/zxctl_secret.c).

What a user relies on: the key file is 0600 and one others can read is
refused; a value is read from standard input, never an argument, and never
printed; the store is AES-256-GCM with the name bound to each value (read
back here with Python's `cryptography`, an independent implementation);
zxd authenticates pushes with the secret; a rotated key keeps every secret;
and the value shows nowhere: not in the log, the status, the config file or
the store."""
import base64
import hashlib
import json
import os
import stat
import subprocess

import pytest

from conftest import ZXCTL, ZXD

pytestmark = pytest.mark.sqlite_only     # no workspace table is involved


def zxctl_secret(z, *args, value=None):
    return subprocess.run([ZXCTL, "-c", z.cfg_path, "secret", *args],
                          input=value, capture_output=True, text=True, timeout=30,
                          env=z.env)


def decrypt(store_path, key_path, name):
    """The value of secret name, decrypted by Python's cryptography."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    with open(key_path) as f:
        key = bytes.fromhex(f.read().strip())
    with open(store_path) as f:
        doc = json.load(f)
    assert doc["format"] == "zx_secret_store" and doc["version"] == 1
    assert doc["key_id"] == hashlib.sha256(b"zx_secret_key_id" + key).digest()[:8].hex()
    e = doc["secrets"][name]
    return AESGCM(key).decrypt(bytes.fromhex(e["nonce"]), base64.b64decode(e["data"]),
                               b"zx_secret_name:" + name.encode()).decode()


def test_secret_push_key_lifecycle(make_zxd):
    value = "push-key-" + os.urandom(8).hex()
    z = make_zxd({"web": {"key_ref": "none", "extra": {"key": "${secret:web_key}"}}},
                 start=False)
    key_path = os.path.join(z.root, "secret.key")
    store_path = os.path.join(z.root, "secrets.zx")

    # before init: a clear error, and zxd refuses the config
    p = zxctl_secret(z, "list")
    assert p.returncode == 1 and "zxctl secret init" in p.stderr
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "${secret:web_key}" in p.stderr and "secret.key" in p.stderr

    p = zxctl_secret(z, "init")
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(os.stat(key_path).st_mode) == 0o600
    again = zxctl_secret(z, "init")
    assert again.returncode == 1 and "exists" in again.stderr

    # set reads stdin; a value on the command line is a usage error
    assert zxctl_secret(z, "set", "web_key", value).returncode == 2
    p = zxctl_secret(z, "set", "web_key", value=value + "\n")
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(os.stat(store_path).st_mode) == 0o600
    assert zxctl_secret(z, "set", "empty", value="").returncode == 1
    assert zxctl_secret(z, "set", "bad/name", value="x").returncode == 2
    with open(store_path) as f:
        assert value not in f.read()
    assert decrypt(store_path, key_path, "web_key") == value

    lst = zxctl_secret(z, "list")
    assert lst.returncode == 0 and "web_key" in lst.stdout and value not in lst.stdout

    # zxd authenticates pushes with the secret's value
    z.start()
    z.push_ok("web", [{"a": 1}], key=value)
    assert z.push("web", [{"a": 2}], key="wrong-" + value).status == 401

    # a new key: every secret encrypted again, the old key file replaced
    old_key = open(key_path).read()
    p = zxctl_secret(z, "rotate-key")
    assert p.returncode == 0, p.stderr
    assert open(key_path).read() != old_key
    assert stat.S_IMODE(os.stat(key_path).st_mode) == 0o600
    assert decrypt(store_path, key_path, "web_key") == value
    z.zxctl("reload", check_rc=0)
    z.push_ok("web", [{"a": 3}], key=value)

    # a value set again is read at reload
    value2 = value + "-2"
    assert zxctl_secret(z, "set", "web_key", value=value2).returncode == 0
    z.zxctl("reload", check_rc=0)
    z.push_ok("web", [{"a": 4}], key=value2)
    assert z.push("web", [{"a": 5}], key=value).status == 401

    # the value shows nowhere
    shown = z.log_text()
    for args in (("status",), ("--json", "status"), ("--json", "checkpoints", "web")):
        shown += z.zxctl(*args).stdout
    shown += open(z.cfg_path).read() + open(store_path).read()
    assert value not in shown and value2 not in shown

    # a key file others may read is refused, and zxd keeps its config
    os.chmod(key_path, 0o644)
    r = z.zxctl("reload")
    assert r.returncode == 1 and "chmod 600" in r.stdout + r.stderr
    os.chmod(key_path, 0o600)
    z.push_ok("web", [{"a": 6}], key=value2)

    # a value moved under another name fails its check (the name is bound)
    with open(store_path) as f:
        doc = json.load(f)
    doc["secrets"]["other"] = doc["secrets"]["web_key"]
    with open(store_path, "w") as f:
        json.dump(doc, f)
    os.chmod(store_path, 0o600)
    z.set_pipelines({"web": {"key_ref": "none", "extra": {"key": "${secret:other}"}}})
    r = z.zxctl("reload")
    assert r.returncode == 1 and "fails its check" in r.stdout + r.stderr

    # delete
    assert zxctl_secret(z, "delete", "other").returncode == 0
    assert zxctl_secret(z, "delete", "other").returncode == 1
    assert "other" not in zxctl_secret(z, "list").stdout


def test_rotation_cut_short_is_finished_by_running_it_again(make_zxd):
    z = make_zxd({"web": {"key_ref": "none", "extra": {"key": "${secret:k}"}}}, start=False)
    key_path = os.path.join(z.root, "secret.key")
    store_path = os.path.join(z.root, "secrets.zx")
    assert zxctl_secret(z, "init").returncode == 0
    assert zxctl_secret(z, "set", "k", value="v1").returncode == 0
    # a rotation cut after the store was saved: the store is under
    # secret.key.new, secret.key is the old one
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    new = os.urandom(32)
    with open(store_path) as f:
        doc = json.load(f)
    nonce = os.urandom(12)
    doc["key_id"] = hashlib.sha256(b"zx_secret_key_id" + new).digest()[:8].hex()
    doc["secrets"]["k"]["nonce"] = nonce.hex()
    doc["secrets"]["k"]["data"] = base64.b64encode(
        AESGCM(new).encrypt(nonce, b"v1", b"zx_secret_name:k")).decode()
    with open(store_path, "w") as f:
        json.dump(doc, f)
    fd = os.open(key_path + ".new", os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, (new.hex() + "\n").encode())
    os.close(fd)
    p = subprocess.run([ZXCTL, "-c", z.cfg_path, "secret", "list"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0     # list does not decrypt
    p = zxctl_secret(z, "rotate-key")
    assert p.returncode == 0 and "finished" in p.stdout, p.stderr
    assert not os.path.exists(key_path + ".new")
    assert decrypt(store_path, key_path, "k") == "v1"
