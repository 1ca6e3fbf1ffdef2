/*
 * fuzz_dhttp_results.c — fuzz target for what the HTTP API destination
 * reads of an API's answers (workers/destinations/http/): the per-item
 * results at results_path (dhttp_results.c, jansson underneath), the
 * Retry-After header and the sanitizing of an answer's text for messages.
 *
 * Input: byte 0 picks the results path, byte 1 the batch's item count,
 * the rest is the answer's body, given without a NUL after it (so that a
 * read past the end is caught).  zx_dhttp_results must return -1 (with a
 * message) or the number of failed items, each reported once, in
 * increasing order, below the count, with a one-line reason of printable
 * ASCII; Retry-After (the body's first 100 bytes as text) -1 or >= 0;
 * the sanitized text printable ASCII within its buffer.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/dhttp_results/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/destinations/http/dhttp_results.h"
#include "workers/destinations/http/dhttp_send.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct seen {
    long n;
    long last;
    uint32_t nitems;
} seen;

static void printable(const char *s, const char *what)
{
    for (; *s; s++)
        fuzz_check((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f, what);
}

static void on_fail(void *arg, uint32_t i, const char *why)
{
    seen *s = arg;
    fuzz_check(i < s->nitems, "results: an index beyond the batch");
    fuzz_check((long)i > s->last, "results: indexes not increasing");
    fuzz_check(why && *why, "results: no reason");
    printable(why, "results: reason not printable");
    s->last = i;
    s->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const paths[] = {"results", "data.items", "a.b.c", "x"};
    if (size < 2 || size > 65536)
        return 0;
    const char *path = paths[data[0] & 3];
    uint32_t nitems = data[1];
    size_t len = size - 2;
    char *body = malloc(len ? len : 1);
    if (!body)
        return 0;
    memcpy(body, data + 2, len);

    char err[300];
    seen s = {.last = -1, .nitems = nitems};
    err[0] = 0;
    long r = zx_dhttp_results(body, len, path, nitems, on_fail, &s, err, sizeof(err));
    fuzz_check(r >= -1 && r <= (long)nitems, "results: out of range");
    if (r < 0) {
        fuzz_check(err[0] != 0 && s.n == 0, "results: -1 without a message, or after reports");
    } else {
        fuzz_check(r == s.n, "results: count differs from the reports");
    }

    char txt[101];
    size_t tl = len < 100 ? len : 100;
    memcpy(txt, body, tl);
    txt[tl] = 0;
    long ra = zx_dhttp_retry_after(txt, 1700000000);
    fuzz_check(ra >= -1, "retry-after: below -1");

    char out[64];
    zx_dhttp_sanitize(body, len, 40, out, sizeof(out));
    fuzz_check(memchr(out, 0, sizeof(out)) != NULL, "sanitize: no NUL");
    printable(out, "sanitize: not printable");
    free(body);
    return 0;
}
