/*
 * mutate.h — the byte mutator shared by the standalone (gcc) builds of the
 * fuzz targets in this folder, for machines without clang's libFuzzer.
 * Header-only; it must never be linked into zx itself.
 */
#ifndef ZX_FUZZ_MUTATE_H
#define ZX_FUZZ_MUTATE_H

#include <stdint.h>
#include <string.h>

static uint64_t fuzz_rng = 88172645463325252ull;

/* xorshift64: the same sequence on every run. */
static uint64_t rnd(void)
{
    fuzz_rng ^= fuzz_rng << 13;
    fuzz_rng ^= fuzz_rng >> 7;
    fuzz_rng ^= fuzz_rng << 17;
    return fuzz_rng;
}

/* Apply `muts` random edits to buf[1..n) (byte 0 selects the body format
 * and is kept): replace a byte, delete one, or insert one of the ntoks
 * tokens.  Returns the new length, at most cap. */
static size_t fuzz_mutate(uint8_t *buf, size_t n, size_t cap, int muts,
                          const char (*toks)[24], size_t ntoks)
{
    for (int m = 0; m < muts; m++) {
        size_t pos = n > 1 ? 1 + rnd() % (n - 1) : 1;
        switch (rnd() % 4) {
        case 0: /* flip a byte */
            buf[pos] = (uint8_t)rnd();
            break;
        case 1: /* delete a byte */
            if (n > 1) {
                memmove(buf + pos, buf + pos + 1, n - pos - 1);
                n--;
            }
            break;
        default: { /* insert a token */
            const char *t = toks[rnd() % ntoks];
            size_t tl = strlen(t);
            if (n + tl < cap && pos <= n) {
                memmove(buf + pos + tl, buf + pos, n - pos);
                memcpy(buf + pos, t, tl);
                n += tl;
            }
        }
        }
    }
    return n;
}

#endif
