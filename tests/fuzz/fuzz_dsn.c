/*
 * fuzz_dsn.c — fuzz target for the DSN password redaction and shape check
 * (common/dsn.h), which read a value from the configuration file.
 *
 * Input: any bytes, taken as a DSN (up to the first NUL).  Beyond "no
 * crash, no read outside the string" it checks the promise that matters:
 * a password never survives.  The input is also wrapped so that it holds
 * a known password, in a URI's user part and as a key=value pair before
 * it; the known password must not appear in any redacted output, and
 * zx_dsn_check must answer 0 or -1 with a phrase.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds: corpus/dsn/.
 * Must never be linked into zx.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dsn.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MARK "Zx9SecretMark7q"

static void redacts(const char *dsn, int must_hide)
{
    char *r = zx_dsn_redact(dsn);
    fuzz_check(r != NULL, "zx_dsn_redact returned NULL (not out of memory)");
    if (must_hide)
        fuzz_check(strstr(r, MARK) == NULL, "the password survived redaction");
    free(r);
    const char *why = NULL;
    int c = zx_dsn_check(dsn, &why);
    fuzz_check(c == 0 || (c == -1 && why && *why), "zx_dsn_check: -1 without a phrase");
    (void)zx_dsn_is_uri(dsn);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    redacts(s, 0);
    size_t n = strlen(s);
    /* the known password is not known when the input has it already */
    char *w = strstr(s, MARK) ? NULL : malloc(n + 64);
    if (w) {
        /* in a URI's user part */
        snprintf(w, n + 64, "postgresql://u:%s@%s", MARK, s);
        redacts(w, 1);
        /* as the first key=value pair, before the input (after it, the
         * input could make it the value of another key: "x= password=..."
         * is x's value to libpq) */
        snprintf(w, n + 64, "password=%s %s", MARK, s);
        redacts(w, 1);
        free(w);
    }
    free(s);
    return 0;
}
