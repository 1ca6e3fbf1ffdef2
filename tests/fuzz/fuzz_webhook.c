/*
 * fuzz_webhook.c — fuzz target for Standard Webhooks checks
 * (common/webhook_sig.h): the three headers a hostile client sends before
 * its body, the signature list, and secrets from the configuration.
 *
 * Input: four parts separated by NUL bytes: webhook-id, webhook-timestamp,
 * webhook-signature, then the body (the rest, NULs included); missing
 * parts are NULL headers.  Checks: zx_webhook_check_head answers 0 or -1
 * with a phrase; zx_webhook_verify answers 0 or 1 (a random signature
 * almost never matches) and does answer 1 once the input's own signature
 * is appended to its list; zx_webhook_key on the first part answers a
 * length in range or -1 with a phrase.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/webhook/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/webhook_sig.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *part[3] = {NULL, NULL, NULL};
    size_t off = 0;
    for (int i = 0; i < 3 && off <= size; i++) {
        part[i] = buf + off;
        off += strlen(buf + off) + 1;
    }
    const char *body = off <= size ? buf + off : "";
    size_t blen = off <= size ? size - off : 0;

    char why[400] = "";
    int h = zx_webhook_check_head(part[0], part[1], part[2], 1614265330, why, sizeof(why));
    fuzz_check(h == 0 || (h == -1 && why[0]), "check_head: -1 without a phrase");

    static const uint8_t key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30};
    if (h == 0) {
        int v = zx_webhook_verify(key, sizeof(key), part[0], part[1], body, blen, part[2]);
        fuzz_check(v == 0 || v == 1, "verify: not 0 or 1");
        char own[64];
        fuzz_check(zx_webhook_sign(key, sizeof(key), part[0], part[1], body, blen, own,
                                   sizeof(own)) == 0, "sign failed");
        size_t sl = strlen(part[2]);
        char *list = malloc(sl + sizeof(own) + 2);
        if (list) {
            snprintf(list, sl + sizeof(own) + 2, "%s %s", part[2], own);
            fuzz_check(zx_webhook_verify(key, sizeof(key), part[0], part[1], body, blen,
                                         list) == 1, "its own signature in the list not found");
            free(list);
        }
    }
    uint8_t k[ZX_WEBHOOK_KEY_MAX];
    why[0] = '\0';
    int kl = zx_webhook_key(part[0] ? part[0] : "", k, why, sizeof(why));
    fuzz_check((kl >= ZX_WEBHOOK_KEY_MIN && kl <= ZX_WEBHOOK_KEY_MAX) || (kl == -1 && why[0]),
               "key: bad length or -1 without a phrase");
    free(buf);
    return 0;
}
