"""Delta deletion vectors: zx's roaring codec (workers/destinations/delta/
delta_dv.h, through the test tool tests/tools/dvtool) against pyroaring's
BitMap64 (CRoaring's portable 64-bit serialization), both ways:

- zx's bitmap data, less its 4-byte magic number, deserializes in
  pyroaring to the same set, and is byte for byte what pyroaring writes
  for a bitmap built one add at a time (no run containers);
- pyroaring's serialization, with the magic prepended, decodes in zx to
  the same set, as it is and after run_optimize() (run containers, with
  and without the offset header);
- zx refuses pyroaring's bytes when a position is past the data file.

Binaries: $ZX_BUILD_DIR (default <repo>/build)/tests/tools/dvtool.  No
server is needed.
"""

import os
import random
import struct
import subprocess

import pytest

pytestmark = pytest.mark.sqlite_only

pyroaring = pytest.importorskip("pyroaring")
if not hasattr(pyroaring, "BitMap64"):
    pytest.skip("pyroaring has no BitMap64", allow_module_level=True)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.path.abspath(os.environ.get("ZX_BUILD_DIR", os.path.join(REPO, "build")))
DVTOOL = os.path.join(BUILD_DIR, "tests", "tools", "dvtool")
MAGIC = struct.pack("<I", 1681511377)


def sets():
    rnd = random.Random(20261203)
    out = {
        "empty": [],
        "zero": [0],
        "array_max": list(range(4096)),
        "bitmap_min": list(range(4097)),
        "full_container": list(range(65536)),
        "container_edge": [65535, 65536],
        "buckets": [0, 65535, 65536, 2**32 - 1, 2**32, 2**32 + 1, (3 << 32) + 65536,
                    2**62, 2**63 - 1],
        "runs": list(range(100, 5000)) + list(range(70000, 70010)) + [2**33 + 5],
        "many_runs": [c * 65536 + x for c in range(6) for x in range(c * 10, c * 10 + 3000)],
    }
    for i in range(6):
        x, vals = rnd.randrange(2**34), []
        step = rnd.choice([2, 3, 50, 2000])
        for _ in range(rnd.randrange(1, 30000)):
            x += rnd.randrange(1, step)
            if rnd.random() < 0.001:
                x += rnd.randrange(2**33)
            vals.append(x)
        out[f"random{i}"] = vals
    return out


SETS = sets()


def zx_encode(vals):
    data = "".join(f"{v}\n" for v in vals).encode()
    return subprocess.run([DVTOOL, "encode"], input=data, capture_output=True,
                          check=True).stdout


def zx_decode(blob, max_pos):
    r = subprocess.run([DVTOOL, "decode", str(max_pos)], input=blob, capture_output=True)
    if r.returncode != 0:
        return None, r.stderr.decode().strip()
    return [int(x) for x in r.stdout.split()], ""


@pytest.mark.parametrize("name", sorted(SETS))
def test_zx_bytes_read_by_pyroaring(name):
    vals = SETS[name]
    blob = zx_encode(vals)
    assert blob[:4] == MAGIC
    bm = pyroaring.BitMap64.deserialize(blob[4:])
    assert list(bm) == vals
    # no run containers: the same bytes as CRoaring writes (one add at a
    # time: BitMap64(list) makes run containers of ranges)
    plain = pyroaring.BitMap64()
    for v in vals:
        plain.add(v)
    assert blob[4:] == plain.serialize()


@pytest.mark.parametrize("name", sorted(SETS))
@pytest.mark.parametrize("runs", [False, True])
def test_pyroaring_bytes_read_by_zx(name, runs):
    vals = SETS[name]
    bm = pyroaring.BitMap64(vals)
    if runs:
        bm.run_optimize()
    blob = MAGIC + bm.serialize()
    max_pos = vals[-1] if vals else 0
    got, err = zx_decode(blob, max_pos)
    assert err == "" and got == vals
    if max_pos > 0:
        got, err = zx_decode(blob, max_pos - 1)
        assert got is None and "beyond the data file's last row" in err


def test_run_containers_were_written():
    """The run cases above do hold run containers (cookie 12347), with an
    offset header (4 containers or more) and without."""
    for name, ncont in (("runs", 2), ("many_runs", 6)):
        bm = pyroaring.BitMap64(SETS[name])
        bm.run_optimize()
        raw = bm.serialize()
        # the first bucket's 32-bit bitmap starts after numBuckets and its key
        cookie = struct.unpack_from("<I", raw, 12)[0]
        assert cookie & 0xFFFF == 12347, name
        if name == "many_runs":
            assert (cookie >> 16) + 1 == ncont
