#!/usr/bin/env python3
"""Seeds of fuzz_fwd_send (tests/fuzz/fuzz_fwd_send.c): journal entries
made of the frame corpus' seeds (corpus/frame/), a 2-byte big-endian length
before each, one to three frames a seed.  Run from the repository root."""
import os

src = "tests/fuzz/corpus/frame"
dst = "tests/fuzz/corpus/fwd_send"
os.makedirs(dst, exist_ok=True)
frames = {}
for name in sorted(os.listdir(src)):
    with open(os.path.join(src, name), "rb") as f:
        data = f.read()
    if len(data) < 65536:
        frames[name] = data


def entry(b):
    return len(b).to_bytes(2, "big") + b


names = sorted(frames)
for i, name in enumerate(names):
    group = [frames[name]] + [frames[names[(i + k) % len(names)]] for k in (1, 2)][: i % 3]
    with open(os.path.join(dst, "seed-" + name), "wb") as f:
        f.write(b"".join(entry(b) for b in group))
