#!/usr/bin/env python3
"""Write the seed corpus of fuzz_delta_dv (tests/fuzz/corpus/delta_dv/):
bitmap data in the layouts zx reads (portable with array, run and bitmap
containers; the native layout of PROTOCOL.md's inline example), DV files,
Z85 texts; byte 0 as fuzz_delta_dv.c reads it.  Built with struct and
zlib alone (no roaring library), so that the seeds do not depend on the
codec under test.  Run from anywhere; overwrites the seed-* files, keeps
crash-* files."""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "delta_dv")
MAGIC = struct.pack("<I", 1681511377)
Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85_decode(s):
    out = b""
    for i in range(0, len(s), 5):
        v = 0
        for c in s[i:i + 5]:
            v = v * 85 + Z85.index(c)
        out += struct.pack(">I", v)
    return out


def bitmap32_no_run(values):
    """Cookie 12346 with its offset header; array or bitmap containers."""
    conts = {}
    for v in values:
        conts.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(conts)
    head = struct.pack("<II", 12346, len(keys))
    desc = b"".join(struct.pack("<HH", k, len(conts[k]) - 1) for k in keys)
    datas = []
    for k in keys:
        c = conts[k]
        if len(c) <= 4096:
            datas.append(b"".join(struct.pack("<H", x) for x in c))
        else:
            bits = bytearray(8192)
            for x in c:
                bits[x >> 3] |= 1 << (x & 7)
            datas.append(bytes(bits))
    off = len(head) + 8 * len(keys)
    offs = b""
    for d in datas:
        offs += struct.pack("<I", off)
        off += len(d)
    return head + desc + offs + b"".join(datas)


def portable(values):
    buckets = {}
    for v in values:
        buckets.setdefault(v >> 32, []).append(v & 0xFFFFFFFF)
    out = MAGIC + struct.pack("<Q", len(buckets))
    for k in sorted(buckets):
        out += struct.pack("<I", k) + bitmap32_no_run(buckets[k])
    return out


def runs_bitmap():
    """One bucket, cookie 12347, 4 containers (so an offset header): runs
    [10, 19] + [100, 100]; an array {5}; runs [0, 999]; an array {1, 2}."""
    conts = [("run", [(10, 9), (100, 0)]), ("arr", [5]), ("run", [(0, 999)]), ("arr", [1, 2])]
    n = len(conts)
    head = struct.pack("<I", 12347 | (n - 1) << 16) + bytes([0b0101])
    desc, datas = b"", []
    for key, (kind, c) in enumerate(conts):
        if kind == "run":
            card = sum(l + 1 for _, l in c)
            datas.append(struct.pack("<H", len(c)) +
                         b"".join(struct.pack("<HH", s, l) for s, l in c))
        else:
            card = len(c)
            datas.append(b"".join(struct.pack("<H", x) for x in c))
        desc += struct.pack("<HH", key, card - 1)
    off = len(head) + 8 * n
    offs = b""
    for d in datas:
        offs += struct.pack("<I", off)
        off += len(d)
    return MAGIC + struct.pack("<QI", 1, 0) + head + desc + offs + b"".join(datas)


def dv_file(*bitmaps):
    out, offsets = b"\x01", []
    for b in bitmaps:
        offsets.append(len(out))
        out += struct.pack(">I", len(b)) + b + struct.pack(">I", zlib.crc32(b))
    return out, offsets


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        if name.startswith("seed-"):
            os.remove(os.path.join(OUT, name))
    inline = z85_decode("wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L")
    multi = portable([1, 5, 70000, (1 << 32) + 3, (2 << 32) + 9])
    a, c = portable([0, 2, 4]), portable([7, 1 << 33])
    f, offs = dv_file(a, c)
    seeds = {
        "spec-inline": b"\x00" + inline,
        "spec-inline-buckets": b"\x01" + inline,
        "portable-buckets": b"\x01" + multi,
        "portable-array": b"\x00" + portable(list(range(0, 3000, 3))),
        "portable-bitmap": b"\x00" + portable(list(range(5000))),
        "runs": b"\x00" + runs_bitmap(),
        "empty": b"\x00" + MAGIC + bytes(8),
        "file-first": b"\x02" + struct.pack("<IH", offs[0], len(a)) + f,
        "file-second": b"\x02" + struct.pack("<IH", offs[1], len(c)) + f,
        "z85-hello": b"\x03HelloWorld",
        "z85-uuid": b"\x03ab^-aqEH.-t@S}K{vb[*k^",
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, "seed-" + name), "wb") as fh:
            fh.write(data)


if __name__ == "__main__":
    main()
