/*
 * fuzz_json_rows.c — fuzz target for zx_json_rows_parse (and, through it,
 * colname and timefmt).
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer: build-fuzz/tests/
 * fuzz/fuzz_json_rows) and, as a corpus replay test, by every build
 * (tests/fuzz/replay.c over corpus/json_rows/).  By hand, with clang:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     tests/fuzz/fuzz_json_rows.c common/{rowset,colname,timefmt,json_rows,json_numbers}.c \
 *     $(pkg-config --cflags --libs jansson) -lm -o fuzz
 * Without clang (gcc), a built-in mutation loop over the seeds below:
 *   gcc -g -O1 -fsanitize=address,undefined -DZX_FUZZ_STANDALONE -D_GNU_SOURCE \
 *     -I. tests/fuzz/fuzz_json_rows.c common/{rowset,colname,timefmt,json_rows,json_numbers}.c \
 *     $(pkg-config --cflags --libs jansson) -o fuzz_json_rows && ./fuzz_json_rows 200000
 * It checks invariants, not just the absence of crashes: on success every
 * cell's column exists, string values have the stated length and a NUL after
 * it, and names are valid normalised names; on failure the message is set.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/colname.h"
#include "common/json_rows.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "invariant broken: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zx_rowset rs;
    zx_json_err err;
    zx_rowset_init(&rs);
    /* first byte picks the format; the body is copied so that reading past
     * its end is caught by ASan */
    zx_body_format f = size && (data[0] & 1) ? ZX_BODY_NDJSON : ZX_BODY_JSON;
    size_t n = size ? size - 1 : 0;
    char *body = malloc(n ? n : 1);
    if (n)
        memcpy(body, data + 1, n);
    int rows = zx_json_rows_parse(body, n, f, &rs, &err);
    if (rows < 0) {
        check(err.msg[0] != '\0', "error without a message");
        check(memchr(err.msg, '\0', sizeof(err.msg)) != NULL, "message not terminated");
        check(err.offset <= n, "error offset past the body");
    } else {
        check((uint32_t)rows == rs.nrows, "row count");
        for (uint32_t c = 0; c < rs.ncols; c++) {
            const zx_column *col = &rs.cols[c];
            check(col->name_len >= 1 && col->name_len <= ZX_COLNAME_MAX, "name length");
            check(strlen(col->name) == col->name_len, "name NUL");
            check(!zx_colname_is_reserved(col->name), "reserved name");
            for (uint32_t i = 0; i < col->name_len; i++) {
                char ch = col->name[i];
                check((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_',
                      "name byte");
            }
        }
        for (uint64_t i = 0; i < rs.ncells; i++) {
            const zx_cell *cell = &rs.cells[i];
            check(cell->col < rs.ncols, "cell column");
            if (cell->v.type == ZX_T_TEXT || cell->v.type == ZX_T_JSON ||
                cell->v.type == ZX_T_TIMESTAMP) {
                check(cell->v.s != NULL, "string value");
                check(cell->v.s[cell->v.len] == '\0', "string NUL");
                check(memchr(cell->v.s, '\0', cell->v.len) == NULL, "embedded NUL");
            }
        }
    }
    free(body);
    zx_rowset_free(&rs);
    return 0;
}

#ifdef ZX_FUZZ_STANDALONE
#include "tests/fuzz/mutate.h"

static const char *const seeds[] = {
    "\0{\"a\":1,\"b\":2.5,\"c\":\"2026-11-29T18:09:25Z\",\"d\":[1,{\"e\":null}],\"A b\":true}",
    "\1{\"a\":1}\r\n\n{\"a\":99999999999999999999,\"x\":\"caf\xc3\xa9\"}\n[1]\n",
    "\0[{\"k\":1},{\"k\":-9223372036854775809,\"_key\":\"\\u00e9\\\"\"},{\"k\":1e400}]",
    "\1{\"a b\":1,\"a-b\":2,\"a_b_2\":{\"z\":[[[[]]]]}}\n{\"t\":\"2024-02-29 23:59:59.123456789+05:30\"}",
};

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 100000;
    static const char toks[][24] = {"{", "}", "[", "]", "\"", ",", ":", "\\", "\n",
                                   "1", "-", "e9", ".5", "null", "\\u0000", "\xff",
                                   "99999999999999999999", "\r\n", " "};
    uint8_t buf[4096];
    for (long it = 0; it < iters; it++) {
        const char *seed = seeds[rnd() % (sizeof(seeds) / sizeof(seeds[0]))];
        size_t n = 1 + strlen(seed + 1);
        memcpy(buf, seed, n);
        n = fuzz_mutate(buf, n, sizeof(buf), 1 + (int)(rnd() % 8), toks,
                        sizeof(toks) / sizeof(toks[0]));
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz_json_rows: %ld inputs, no invariant broken\n", iters);
    return 0;
}
#endif
