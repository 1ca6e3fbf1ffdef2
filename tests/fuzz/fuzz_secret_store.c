/*
 * fuzz_secret_store.c — fuzz target for the secrets store's decoder
 * (common/secret_store.h, zx_ss_parse), which reads a file anyone with
 * write access to the config folder could have changed.
 *
 * Input: any bytes, taken as the store's text.  The parser must answer 0
 * or -1 with a one-line message; on 0, for a fixed key: every secret
 * either decrypts (a value of at most ZX_SS_MAX_VALUE bytes) or fails its
 * check with a message; names come back sorted and valid; setting a value
 * and reading it back gives the value.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/secret_store/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/secret_store.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned char key[ZX_SS_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 8};
    char err[300];
    err[0] = '\0';
    zx_secret_store *s = NULL;
    if (zx_ss_parse((const char *)data, size, &s, err, sizeof(err)) < 0) {
        fuzz_check(s == NULL, "failed parse left a store");
        fuzz_check(err[0] != '\0' && !strchr(err, '\n'), "no one-line message");
        return 0;
    }
    fuzz_check(s != NULL, "parse gave no store");
    const char *prev = NULL;
    for (size_t i = 0; i < zx_ss_count(s); i++) {
        const char *at;
        const char *n = zx_ss_name(s, i, &at);
        fuzz_check(n && zx_ss_name_ok(n), "a stored name is not valid");
        fuzz_check(!prev || strcmp(prev, n) < 0, "names not sorted");
        prev = n;
        char *v = NULL;
        size_t len = 0;
        err[0] = '\0';
        if (zx_ss_get(s, key, n, &v, &len, err, sizeof(err)) == 0)
            fuzz_check(v && len <= ZX_SS_MAX_VALUE && v[len] == '\0', "bad value");
        else
            fuzz_check(!v && err[0], "failed get without message");
        free(v);
    }
    if (zx_ss_key_matches(s, key)) {
        char *v = NULL;
        size_t len = 0;
        fuzz_check(zx_ss_set(s, key, "fuzz_name", "value", 5, err, sizeof(err)) == 0 ||
                   zx_ss_count(s) >= ZX_SS_MAX_SECRETS, "set failed");
        if (zx_ss_get(s, key, "fuzz_name", &v, &len, err, sizeof(err)) == 0)
            fuzz_check(len == 5 && !memcmp(v, "value", 5), "read back differs");
        free(v);
    }
    zx_ss_free(s);
    return 0;
}
