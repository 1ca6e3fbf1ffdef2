/*
 * fuzz_delta_dv.c — fuzz target for Delta deletion vectors
 * (workers/destinations/delta/delta_dv.h) and Z85 (common/z85.h): the
 * bytes a hostile table hands zx in a DV file or inline in its log.
 *
 * Byte 0 picks what the rest is (modulo 4):
 *   0  bitmap data, read with max_pos 2^20 - 1
 *   1  bitmap data, read with max_pos 2^36 - 1 (several buckets; inputs
 *      up to 512 bytes, so that run containers stay cheap)
 *   2  a DV's offset (uint32 LE) and size (uint16 LE), then a DV file
 *   3  Z85 text (cut to a multiple of 5), and a pathOrInlineDv for
 *      zx_dv_uuid_name
 * Checks: a refusal is -1 with a phrase and nothing handed back; what is
 * read is ascending, unique, <= max_pos, and encodes to bitmap data that
 * reads back the same; a DV file_get accepts points inside the file, and
 * the same bytes added to a new file are got back; Z85 that decodes
 * encodes back to the same text.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/delta_dv/ (make_dv_seeds.py).  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/z85.h"
#include "tests/fuzz/fuzz_check.h"
#include "workers/destinations/delta/delta_dv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads bitmap data p[0..len) and checks what comes back. */
static void read_bitmap(const uint8_t *p, size_t len, uint64_t max_pos)
{
    uint64_t *pos = (uint64_t *)1;
    size_t n = 7;
    char err[256] = "";
    if (zx_dv_decode(p, len, max_pos, &pos, &n, err, sizeof(err)) < 0) {
        fuzz_check(pos == NULL && n == 0 && err[0], "decode: -1 without a phrase, or a result");
        return;
    }
    fuzz_check((n == 0) == (pos == NULL), "decode: NULL and n disagree");
    for (size_t i = 0; i < n; i++)
        fuzz_check(pos[i] <= max_pos && (i == 0 || pos[i] > pos[i - 1]),
                   "decode: a position past max_pos or out of order");
    zx_buf b = {0};
    fuzz_check(zx_dv_encode(pos, n, &b) == 0, "encode of what decode read failed");
    uint64_t *again = NULL;
    size_t n2 = 0;
    fuzz_check(zx_dv_decode(b.p, b.len, max_pos, &again, &n2, err, sizeof(err)) == 0 &&
                   n2 == n && (n == 0 || memcmp(again, pos, n * sizeof(*pos)) == 0),
               "re-encoded positions read back differently");
    free(again);
    free(pos);
    zx_buf_free(&b);
}

static void read_file(const uint8_t *p, size_t len)
{
    if (len < 6)
        return;
    uint64_t off = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
                   (uint64_t)p[3] << 24;
    uint64_t sz = (uint64_t)p[4] | (uint64_t)p[5] << 8;
    const uint8_t *f = p + 6;
    size_t flen = len - 6;
    const void *bm = (const void *)1;
    char err[256] = "";
    if (zx_dv_file_get(f, flen, off, sz, &bm, err, sizeof(err)) < 0) {
        fuzz_check(bm == NULL && err[0], "file_get: -1 without a phrase, or a pointer");
        return;
    }
    const uint8_t *b = bm;
    fuzz_check(b >= f + 1 && b + sz <= f + flen, "file_get: a bitmap outside the file");
    read_bitmap(b, (size_t)sz, (1u << 20) - 1);
    zx_buf nf = {0};
    uint64_t o = 0;
    fuzz_check(zx_dv_file_add(&nf, "x", 1, &o) == 0 && o == 1, "file_add: first offset");
    fuzz_check(zx_dv_file_add(&nf, b, (size_t)sz, &o) == 0 && o == 10, "file_add failed");
    const void *again = NULL;
    fuzz_check(zx_dv_file_get(nf.p, nf.len, o, sz, &again, err, sizeof(err)) == 0 &&
                   memcmp(again, b, (size_t)sz) == 0,
               "a DV added to a new file is not got back");
    zx_buf_free(&nf);
}

static void read_z85(const uint8_t *p, size_t len)
{
    size_t tl = len / 5 * 5;
    zx_buf b = {0};
    if (zx_z85_decode((const char *)p, tl, &b) == 0) {
        fuzz_check(b.len == tl / 5 * 4, "z85: wrong length");
        char *txt = malloc(tl + 1);
        if (txt) {
            fuzz_check(zx_z85_encode(b.p, b.len, txt, tl + 1) == 0 &&
                           memcmp(txt, p, tl) == 0,
                       "z85: does not encode back to its text");
            free(txt);
        }
    } else {
        fuzz_check(b.len == 0, "z85: -1 but bytes added");
    }
    zx_buf_free(&b);
    char s[64], name[128];
    size_t sl = len < sizeof(s) - 1 ? len : sizeof(s) - 1;
    memcpy(s, p, sl);
    s[sl] = '\0';
    if (zx_dv_uuid_name(s, name, sizeof(name)) == 0)
        fuzz_check(strstr(name, "deletion_vector_") != NULL && strlen(name) >= 56,
                   "uuid_name: not a DV file name");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    switch (data[0] % 4) {
    case 0:
        read_bitmap(p, len, (1u << 20) - 1);
        break;
    case 1:
        if (len <= 512)
            read_bitmap(p, len, (1ull << 36) - 1);
        break;
    case 2:
        read_file(p, len);
        break;
    default:
        read_z85(p, len);
        break;
    }
    return 0;
}
