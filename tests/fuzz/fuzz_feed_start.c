/*
 * fuzz_feed_start.c — fuzz target for where a GET /api/feed client asks
 * to start (workers/gateway/gateway_feed.h: zx_gwfeed_parse_start): the
 * Last-Event-ID header and the last_event_id and since query parameters,
 * all three from the client.
 *
 * Input: up to three strings separated by NUL bytes; an empty one stands
 * for an absent header or parameter (NULL).  The parser must answer 0
 * with a known start (and, to resume, the number the decimal text says,
 * checked here independently), or -1 with a non-empty printable message.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/feed_start/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/gateway/gateway_feed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The decimal value of s (digits only, 1 to 20, at most 2^64 - 1) into
 * *v: 1, else 0. */
static int decimal(const char *s, uint64_t *v)
{
    size_t n = strlen(s);
    if (n == 0 || n > 20)
        return 0;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return 0;
        x = x * 10 + d;
    }
    *v = x;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *buf = malloc(size + 3);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = buf[size + 2] = '\0';
    const char *part[3];
    size_t off = 0;
    for (int i = 0; i < 3; i++) {
        part[i] = off <= size ? buf + off : buf + size;
        off += strlen(part[i]) + 1;
    }
    const char *hdr = *part[0] ? part[0] : NULL, *ql = *part[1] ? part[1] : NULL,
               *qs = *part[2] ? part[2] : NULL;
    enum zx_gwfeed_from from = (enum zx_gwfeed_from)99;
    uint64_t after = 12345;
    char why[200] = "";
    int rc = zx_gwfeed_parse_start(hdr, ql, qs, &from, &after, why, sizeof(why));
    fuzz_check(rc == 0 || rc == -1, "rc is neither 0 nor -1");
    if (rc == 0) {
        fuzz_check(from == ZX_GWFEED_HISTORY || from == ZX_GWFEED_AFTER || from == ZX_GWFEED_NOW,
                   "an unknown start");
        if (from == ZX_GWFEED_AFTER) {
            const char *text = hdr ? hdr : ql;
            uint64_t v = 0;
            fuzz_check(text && decimal(text, &v) && v == after,
                       "resumes after a number its text does not say");
        }
    } else {
        fuzz_check(why[0] != '\0', "refused without a message");
        for (const char *p = why; *p; p++)
            fuzz_check((unsigned char)*p >= 0x20, "a control byte in the message");
    }
    free(buf);
    return 0;
}
