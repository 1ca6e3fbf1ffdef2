"""
Debezium Server for the end-to-end tests (test_debezium_server.py,
test_fanout.py): start and stop one instance of tests/services/debezium.

What it is for: a real Debezium Server capturing a real database into its
http or Kafka sink, configured through the script's DBZ_* environment.

What it must never do: leave an instance running (whoever calls dbz_start
calls dbz_stop, which also drops its PostgreSQL slot), or talk to anything
but 127.0.0.1.
"""

import os
import subprocess

import pytest

from conftest import REPO

DBZ = os.path.join(REPO, "tests", "services", "debezium")


def dbz_start(name, env):
    """Start instance name with the settings env (DBZ_*); returns the
    script's KEY=value lines as a dict.  Fails the test when it fails."""
    e = dict(os.environ)
    e.update(env)
    p = subprocess.run([DBZ, "start", name], capture_output=True, text=True, env=e, timeout=600,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        pytest.fail(f"tests/services/debezium start {name} failed:\n{p.stderr[-4000:]}")
    return dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)


def dbz_stop(name):
    """Stop instance name and remove its folder (and slot)."""
    subprocess.run([DBZ, "stop", name], capture_output=True, timeout=300,
                   stdin=subprocess.DEVNULL)
