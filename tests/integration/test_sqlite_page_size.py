"""
workspace.sqlite.page_size: the page size of a workspace file zx creates
(default 32KiB); an existing file keeps its own and its rows; a value that
is not one of 4KiB..64KiB is refused by `zxd --check` naming the option.
Read with Python's own sqlite3 (PRAGMA page_size), not through zx.
"""

import sqlite3
import subprocess

import pytest

from conftest import ZXD

pytestmark = pytest.mark.sqlite_only


def page_size(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute("PRAGMA page_size").fetchone()[0]
    finally:
        db.close()


def with_page_size(z, value):
    """z's configuration with workspace.sqlite.page_size: value."""
    z.write_config(z.config_text().replace(
        "    path: workspace.db", f"    path: workspace.db\n    page_size: {value}", 1))


def test_a_new_file_gets_the_default_page_size(make_zxd):
    z = make_zxd({"ev": {}})
    z.push("ev", [{"n": i} for i in range(100)])
    z.stop()
    assert page_size(z.db_path) == 32768
    assert z.count("ev") == 100


def test_a_configured_page_size_applies_to_a_new_file_only(make_zxd):
    z = make_zxd({"ev": {}}, start=False)
    with_page_size(z, "4KiB")
    z.start()
    z.push("ev", [{"n": i, "s": "x" * 50} for i in range(2000)])
    z.stop()
    assert page_size(z.db_path) == 4096
    # the file exists now: another size is not applied, nothing is lost
    with_page_size(z, "64KiB")
    z.start()
    z.push("ev", [{"n": 2000 + i} for i in range(10)])
    z.stop()
    assert page_size(z.db_path) == 4096
    assert z.count("ev") == 2010


def test_a_page_size_that_sqlite_cannot_take_is_refused(make_zxd):
    z = make_zxd({"ev": {}}, start=False)
    with_page_size(z, "3KiB")
    p = subprocess.run([ZXD, "-c", z.cfg_path, "--check"], capture_output=True, text=True,
                       env=z.env, timeout=60)
    assert p.returncode == 1, p
    assert "page_size" in p.stderr and "32KiB" in p.stderr, p.stderr
