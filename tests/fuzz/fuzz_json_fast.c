/*
 * fuzz_json_fast.c — differential fuzz target: the fast parser
 * (common/json_fast.h) against its oracle zx_json_rows_parse (jansson).
 * Built by meson with -Dfuzzing=true (clang, libFuzzer: build-fuzz/tests/
 * fuzz/fuzz_json_fast) and, as a corpus replay test, by every build
 * (tests/fuzz/replay.c over corpus/json_fast/).  By hand, with clang:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     tests/fuzz/fuzz_json_fast.c common/{rowset,colname,timefmt,json_rows,json_numbers,json_fast}.c \
 *     $(pkg-config --cflags --libs jansson) -lm -o fuzz
 * Without clang (gcc), a built-in mutation loop over the seeds below:
 *   gcc -g -O1 -fsanitize=address,undefined -DZX_FUZZ_STANDALONE -D_GNU_SOURCE \
 *     -I. tests/fuzz/fuzz_json_fast.c common/{rowset,colname,timefmt,json_rows,json_numbers,json_fast}.c \
 *     $(pkg-config --cflags --libs jansson) -lm -o fuzz_json_fast && ./fuzz_json_fast 200000
 *
 * Input: byte 0 bit 0 picks NDJSON, bit 1 pre-fills both rowsets with the
 * same small body first; the rest is the body.  Aborts when the fast path
 * accepts something jansson refuses, accepts a failing body, or builds a
 * rowset that differs in any column, type, cell, string byte or double bit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_fast.h"
#include "common/json_rows.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fast path differs from jansson: %s\n", what);
        abort();
    }
}

static void same(const zx_rowset *a, const zx_rowset *b)
{
    check(a->ncols == b->ncols, "column count");
    for (uint32_t c = 0; c < a->ncols; c++) {
        check(a->cols[c].name_len == b->cols[c].name_len &&
              memcmp(a->cols[c].name, b->cols[c].name, a->cols[c].name_len + 1) == 0,
              "column name");
        check(a->cols[c].type == b->cols[c].type, "column type");
    }
    check(a->nrows == b->nrows && a->ncells == b->ncells, "row or cell count");
    for (uint32_t r = 0; a->nrows && r <= a->nrows; r++)
        check(a->row_start[r] == b->row_start[r], "row bounds");
    for (uint64_t i = 0; i < a->ncells; i++) {
        const zx_value *x = &a->cells[i].v, *y = &b->cells[i].v;
        check(a->cells[i].col == b->cells[i].col && x->type == y->type, "cell");
        switch (x->type) {
        case ZX_T_INT:
            check(x->u.i == y->u.i, "integer");
            break;
        case ZX_T_REAL:
            check(memcmp(&x->u.d, &y->u.d, sizeof(double)) == 0, "real");
            break;
        case ZX_T_BOOL:
            check(x->u.b == y->u.b, "boolean");
            break;
        case ZX_T_TIMESTAMP:
            check(x->u.i == y->u.i, "timestamp");
            /* fall through */
        case ZX_T_TEXT:
        case ZX_T_JSON:
            check(x->len == y->len && memcmp(x->s, y->s, x->len + 1) == 0, "string");
            break;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char prefix[] = "{\"a\":1,\"user\":\"x\",\"id_2\":2.5,\"o\":{}}";
    zx_rowset fast, ref;
    zx_rowset_init(&fast);
    zx_rowset_init(&ref);
    zx_body_format f = size && (data[0] & 1) ? ZX_BODY_NDJSON : ZX_BODY_JSON;
    if (size && (data[0] & 2)) {
        zx_json_rows_parse(prefix, sizeof(prefix) - 1, ZX_BODY_JSON, &fast, NULL);
        zx_json_rows_parse(prefix, sizeof(prefix) - 1, ZX_BODY_JSON, &ref, NULL);
    }
    size_t n = size ? size - 1 : 0;
    char *body = malloc(n ? n : 1);    /* exact size: ASan sees over-reads */
    if (n)
        memcpy(body, data + 1, n);
    int nf = zx_json_fast_parse(body, n, f, &fast);
    int nr = zx_json_rows_parse(body, n, f, &ref, NULL);
    check(nf >= -1, "return value below -1");
    if (nf >= 0) {
        check(nr == nf, "row count (or jansson refused)");
        same(&fast, &ref);
    }
    free(body);
    zx_rowset_free(&fast);
    zx_rowset_free(&ref);
    return 0;
}

#ifdef ZX_FUZZ_STANDALONE
#include "tests/fuzz/mutate.h"

static const char *const seeds[] = {
    "\0{\"a\":1,\"b\":2.5,\"c\":\"2026-11-29T18:09:25Z\",\"d\":[1,{\"e\":null}],\"A b\":true}",
    "\1{\"a\":1}\r\n\n{\"a\":-0,\"x\":\"caf\xc3\xa9\\u00e9\\ud83d\\ude00\"}\n\n",
    "\2[{\"k\":1},{\"k\":-9223372036854775808,\"_key\":\"\\u00e9\\\"\"},{\"k\":1e-7}]",
    "\3{\"a b\":1,\"a-b\":2,\"a_b_2\":{\"z\":[[[[]]]],\"y\":[0.1,-0.0,1E+2,\"\\/\\t\"]}}\n"
    "{\"t\":\"2024-02-29 23:59:59.123456789+05:30\"}",
    "\0 [ { \"User\" : { \"k\" : \"\\u0001\" } , \"user\" : [ true , false , null ] } ] ",
};

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 100000;
    static const char toks[][24] = {"{", "}", "[", "]", "\"", ",", ":", "\\", "\n",
                                   "1", "-", "e9", ".5", "null", "\\u0000", "\xff",
                                   "99999999999999999999", "\r\n", " ", "\\u00e9",
                                   "\\ud83d", "\\ude00", "\"k\":", "0", "\xc3\xa9"};
    uint8_t buf[4096];
    for (long it = 0; it < iters; it++) {
        const char *seed = seeds[rnd() % (sizeof(seeds) / sizeof(seeds[0]))];
        size_t n = 1 + strlen(seed + 1);
        memcpy(buf, seed, n);
        n = fuzz_mutate(buf, n, sizeof(buf), (int)(rnd() % 6), toks,
                        sizeof(toks) / sizeof(toks[0]));
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz_json_fast: %ld inputs, fast path and jansson agree\n", iters);
    return 0;
}
#endif
