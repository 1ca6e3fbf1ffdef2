/*
 * fuzz_redis_reply.c — fuzz target for the Redis destination's reply
 * reader (workers/destinations/redis/redis_reply.h: hiredis' parser over
 * bounded reply objects), which reads what a Redis server sends.
 *
 * Input: any bytes, taken as a server's stream, fed in pieces whose sizes
 * come from the first byte.  Beyond "no crash, no leak": the reader never
 * holds more than its bound of unparsed bytes (room never exceeds it and a
 * feed beyond room is refused), a reply's text is NUL-terminated within
 * its buffer, an array never has more elements than the bound, and an
 * error (-1) comes with a message.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/redis_reply/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/destinations/redis/redis_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BOUND 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t step = (size_t)(data[0] % 64) + 1, off = 1;
    zx_redis_rd *rd = zx_redis_rd_new(BOUND);
    fuzz_check(rd != NULL, "zx_redis_rd_new failed");
    for (;;) {
        zx_redis_reply r;
        char err[300] = "";
        int g = zx_redis_rd_next(rd, &r, err, sizeof(err));
        if (g < 0) {
            fuzz_check(err[0] != '\0', "an error without a message");
            break;
        }
        if (g == 1) {
            fuzz_check(memchr(r.text, '\0', sizeof(r.text)) != NULL, "text not terminated");
            fuzz_check(r.type >= ZX_REDIS_R_STRING && r.type <= ZX_REDIS_R_ERROR, "bad type");
            fuzz_check(r.elements <= ZX_REDIS_REPLY_MAX_ELEMENTS, "array over the bound");
            continue;
        }
        if (off == size)
            break;
        size_t room = zx_redis_rd_room(rd);
        fuzz_check(room <= BOUND, "room beyond the bound");
        size_t k = size - off < step ? size - off : step;
        if (k > room) {
            fuzz_check(zx_redis_rd_feed(rd, (const char *)data + off, k, err,
                                        sizeof(err)) == -1, "a feed beyond room was taken");
            break;
        }
        if (zx_redis_rd_feed(rd, (const char *)data + off, k, err, sizeof(err)) < 0)
            break;
        off += k;
    }
    zx_redis_rd_free(rd);
    return 0;
}
