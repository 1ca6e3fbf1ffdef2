/*
 * fuzz_os_bulk.c — fuzz target for the OpenSearch destination's reader of
 * what the cluster answers (workers/destinations/opensearch/os_bulk.c): a
 * _bulk answer, item by item, and the one-line summary of an error answer.
 *
 * Input: the first byte is the number of items sent (0..255), the rest the
 * answer's body, given without a NUL after it (so that a read past the end
 * is caught).  zx_os_bulk_parse must answer 0 only after calling back once
 * per item, in order, and -1 with a message otherwise; each item's status
 * is 100..599; its why is NUL-terminated, within its size, free of control
 * characters, empty exactly for 2xx.  zx_os_error_text's line likewise,
 * cut to the size given (a small one too).
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/os_bulk/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/destinations/opensearch/os_bulk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *s, size_t cap, const char *what)
{
    fuzz_check(memchr(s, '\0', cap) != NULL, what);
    for (; *s; s++)
        fuzz_check((unsigned char)*s >= 0x20 && *s != 0x7f, what);
}

typedef struct seen {
    size_t calls;
    int stop_at;        /* returning 7 at that call: the parse answers 7 */
} seen;

static int each(void *ctx, size_t i, const zx_os_item *it)
{
    seen *s = ctx;
    fuzz_check(i == s->calls, "items called back out of order");
    s->calls++;
    fuzz_check(it->status >= 100 && it->status <= 599, "status out of range");
    check_line(it->why, sizeof(it->why), "why");
    int ok = it->status >= 200 && it->status <= 299;
    fuzz_check(ok == (it->why[0] == '\0'), "why set for a 2xx, or empty for an error");
    return (int)i == s->stop_at ? 7 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    size_t nitems = data[0];
    size_t n = size - 1;
    char *x = malloc(n ? n : 1);
    if (!x)
        return 0;
    memcpy(x, data + 1, n);
    char err[256];

    for (int stop = -1; stop <= 0; stop++) {
        seen s = {0, stop};
        err[0] = '\0';
        int r = zx_os_bulk_parse(x, n, nitems, each, &s, err, sizeof(err));
        if (stop == 0 && nitems > 0 && s.calls == 1) {
            fuzz_check(r == 7, "the callback's answer not returned");
            continue;
        }
        fuzz_check(r == 0 || r == -1, "neither 0 nor -1");
        if (r == 0)
            fuzz_check(s.calls == nitems, "0 without a call per item");
        else
            fuzz_check(err[0] != '\0', "-1 without a message");
        check_line(err, sizeof(err), "err");
    }

    char line[240], small[5];
    zx_os_error_text(x, n, line, sizeof(line));
    check_line(line, sizeof(line), "error text");
    zx_os_error_text(x, n, small, sizeof(small));
    check_line(small, sizeof(small), "error text (small)");
    free(x);
    return 0;
}
