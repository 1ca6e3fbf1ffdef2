#!/usr/bin/env python3
# make_pgoutput_corpus.py — writes the seeds of tests/fuzz/corpus/pgoutput/
# (the input layout is in fuzz_pgoutput.c): python3 tests/fuzz/make_pgoutput_corpus.py tests/fuzz/corpus/pgoutput
"""Seeds for tests/fuzz/corpus/pgoutput/ (input layout: fuzz_pgoutput.c)."""
import os, struct, sys
out = sys.argv[1]
u8 = lambda v: struct.pack(">B", v)
u16 = lambda v: struct.pack(">H", v)
u32 = lambda v: struct.pack(">I", v)
u64 = lambda v: struct.pack(">Q", v)
s = lambda t: t.encode() + b"\0"
def xid(x): return u32(x) if x else b""
def text(v): return b"t" + u32(len(v)) + v.encode()
def rel(x=0, extra=0):
    cols = [(1, "id", 23, -1), (0, "name", 1043, 68), (0, "bio", 25, -1)]
    cols += [(0, "extra%d" % i, 25, -1) for i in range(extra)]
    b = b"R" + xid(x) + u32(16384) + s("public") + s("users") + b"d" + u16(len(cols))
    for f, n, t, m in cols:
        b += u8(f) + s(n) + u32(t) + struct.pack(">i", m)
    return b
def tup(*vals):
    b = u16(len(vals))
    for v in vals:
        b += v.encode() if v in ("n", "u") else (b"b" + u32(len(v[1:])) + v[1:].encode() if v.startswith("\x01") else text(v))
    return b
BEGIN = b"B" + u64(0x16B374D848) + u64(700000000000000) + u32(777)
COMMIT = b"C" + u8(0) + u64(0x16B374D848) + u64(0x16B374D878) + u64(700000000000001)
def tx(x=0):
    return [
        b"O" + u64(0x1234) + s("pg_16390"),
        b"Y" + xid(x) + u32(90001) + s("") + s("mood"),
        rel(x),
        b"I" + xid(x) + u32(16384) + b"N" + tup("1", "n", "\x01abcd"),
        b"U" + xid(x) + u32(16384) + b"N" + tup("1", "bob", "u"),
        b"U" + xid(x) + u32(16384) + b"K" + tup("1", "n", "n") + b"N" + tup("2", "bob", "u"),
        b"U" + xid(x) + u32(16384) + b"O" + tup("2", "bob", "a") + b"N" + tup("2", "rob", "b"),
        rel(x, 1),
        b"I" + xid(x) + u32(16384) + b"N" + tup("3", "c", "d", "e"),
        b"D" + xid(x) + u32(16384) + b"K" + tup("3", "n", "n", "n"),
        b"D" + xid(x) + u32(16384) + b"O" + tup("3", "c", "u", "e"),
        b"T" + xid(x) + u32(3) + u8(3) + u32(16384) + u32(16390) + u32(16400),
        b"M" + xid(x) + u8(1) + u64(0x16B374D000) + s("zx") + u32(5) + b"a\0b\0c",
    ]
V1 = [BEGIN] + tx() + [COMMIT]
V2 = [b"S" + u32(900) + u8(1)] + tx(900) + [b"E", b"A" + u32(900) + u32(901),
      b"S" + u32(900) + u8(0), b"I" + u32(901) + u32(16384) + b"N" + tup("9", "n", "n", "n"), b"E",
      b"c" + u32(900) + u8(0) + u64(0x20) + u64(0x48) + u64(123)] + V1
def xlog(m): return b"w" + u64(0x16B374D848) + u64(0x16B3750000) + u64(700000000000000) + m
KEEP = [b"k" + u64(0x16B3750000) + u64(700000000000001) + u8(1),
        b"k" + u64(0) + u64(0) + u8(0)]
def inp(flags, payloads):
    return u8(flags) + b"".join(u16(len(p)) + p for p in payloads)
seeds = {
    "seed-v1-copydata-cache": inp(2, [xlog(m) for m in V1] + KEEP),
    "seed-v1-copydata-nocache": inp(0, KEEP + [xlog(m) for m in V1]),
    "seed-v2-copydata-cache": inp(3, [xlog(m) for m in V2] + KEEP[:1]),
    "seed-v1-raw-cache": inp(6, V1),
    "seed-v2-raw-cache": inp(7, V2),
    "seed-v2-raw-nocache": inp(5, V2),
    "seed-v2-raw-cache-40rels": inp(7 | 8, V2),
    "seed-v2-raw-cache-256b": inp(7 | 16, V2),
    "seed-v2-raw-cache-1rel": inp(7 | 24, V2),
}
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(len(seeds), "seeds")
# many small relations: the cache's table grows, then (limit 40) fills
many = [b"R" + u32(1000 + i) + s("") + s("t%d" % i) + b"n" + u16(0) for i in range(45)]
many += [b"I" + u32(1000 + i) + b"N" + u16(0) for i in range(45)]
for name, flags in (("seed-v1-raw-cache-45rels", 6), ("seed-v1-raw-cache-45rels-limit40", 6 | 8)):
    with open(os.path.join(out, name), "wb") as f:
        f.write(inp(flags, many))
