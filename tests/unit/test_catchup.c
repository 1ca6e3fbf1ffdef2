/*
 * test_catchup.c — when a stream source's catching up begins and ends
 * (workers/sources/catchup.h): the thresholds and their hysteresis,
 * unknown figures, a count that begins again, the expected total
 * following a lag that still grows, and the words of the slot.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "workers/sources/catchup.h"

int main(void)
{
    zx_catchup c;
    zx_catchup_view v;
    memset(&c, 0, sizeof(c));

    /* near, or nothing known: not catching up */
    CHECK(zx_catchup_update(&c, 1, 0, 9999, 0, &v) == 0);
    CHECK(zx_catchup_update(&c, 2, 0, -1, -1, &v) == 0);
    CHECK(zx_catchup_update(&c, 3, 0, -1, 59999, &v) == 0);

    /* 10,000 left: it begins, counting from the messages read then */
    CHECK(zx_catchup_update(&c, 100, 500, 10000, -1, &v) == 1);
    CHECK(v.done == 0 && v.expected == 10000 && v.started_us == 100);
    CHECK(zx_catchup_update(&c, 200, 4500, 7000, -1, &v) == 1);
    CHECK(v.done == 4000 && v.expected == 11000 && v.started_us == 100);

    /* below the start but not below the end: still on */
    CHECK(zx_catchup_update(&c, 300, 9000, 5000, -1, &v) == 1);
    /* the high watermark unknown for a moment: no news, still on, no total */
    CHECK(zx_catchup_update(&c, 350, 9100, -1, -1, &v) == 1);
    CHECK(v.done == 8600 && v.expected == 0);
    /* fewer than 1,000 left: over */
    CHECK(zx_catchup_update(&c, 400, 13000, 999, -1, &v) == 0);
    CHECK(!c.active);
    CHECK(zx_catchup_update(&c, 500, 13100, 5000, -1, &v) == 0); /* no new start below */

    /* behind in time (Kinesis): a minute begins it, under 5 s ends it */
    memset(&c, 0, sizeof(c));
    CHECK(zx_catchup_update(&c, 10, 7, -1, 60000, &v) == 1);
    CHECK(v.done == 0 && v.expected == 0);
    CHECK(zx_catchup_update(&c, 20, 1007, -1, 5000, &v) == 1);
    CHECK(v.done == 1000);
    CHECK(zx_catchup_update(&c, 30, 2007, -1, 4999, &v) == 0);

    /* both known: both must be near for it to end */
    memset(&c, 0, sizeof(c));
    CHECK(zx_catchup_update(&c, 1, 0, 50000, 0, &v) == 1);
    CHECK(zx_catchup_update(&c, 2, 10, 10, 70000, &v) == 1);
    CHECK(zx_catchup_update(&c, 3, 20, 10, 10, &v) == 0);

    /* the worker's count began again (a restart of the count): done from it */
    memset(&c, 0, sizeof(c));
    CHECK(zx_catchup_update(&c, 1, 1000000, 20000, -1, &v) == 1);
    CHECK(zx_catchup_update(&c, 2, 300, 19000, -1, &v) == 1);
    CHECK(v.done == 0 && v.expected == 19000);

    /* partitions revoked (the summed positions fall) and assigned (they
     * jump): done goes on from where it was */
    memset(&c, 0, sizeof(c));
    CHECK(zx_catchup_update(&c, 1, 5000, 50000, -1, &v) == 1);
    CHECK(zx_catchup_update(&c, 2, 8000, 47000, -1, &v) == 1 && v.done == 3000);
    zx_catchup_rebase(&c, 2000000);
    CHECK(zx_catchup_update(&c, 3, 2000100, 90000, -1, &v) == 1);
    CHECK(v.done == 3100 && v.expected == 93100);
    zx_catchup_rebase(&c, 10);
    CHECK(zx_catchup_update(&c, 4, 20, 90000, -1, &v) == 1 && v.done == 3110);
    zx_catchup_rebase(&c, 1);
    CHECK(zx_catchup_update(&c, 5, 1, 90000, -1, &v) == 1 && v.done == 3110);
    memset(&c, 0, sizeof(c));
    zx_catchup_rebase(&c, 99);                 /* not catching up: nothing */
    CHECK(!c.active && c.base == 0);

    /* a hostile high watermark: no overflow of the total */
    memset(&c, 0, sizeof(c));
    CHECK(zx_catchup_update(&c, 1, 0, INT64_MAX, -1, &v) == 1);
    CHECK(zx_catchup_update(&c, 2, UINT64_MAX / 2 + 10, INT64_MAX, -1, &v) == 1);
    CHECK(v.expected == 0 || v.expected >= v.done);

    char buf[128];
    CHECK(strcmp(zx_catchup_what(buf, sizeof(buf), "orders", -1), "catching up on orders") == 0);
    CHECK(strcmp(zx_catchup_what(buf, sizeof(buf), NULL, 999), "catching up") == 0);
    CHECK(strcmp(zx_catchup_what(buf, sizeof(buf), "s", 42000), "catching up on s, 42 s behind") == 0);
    CHECK(strcmp(zx_catchup_what(buf, sizeof(buf), "s", 125000),
                 "catching up on s, 2 min 5 s behind") == 0);
    CHECK(strcmp(zx_catchup_what(buf, sizeof(buf), "s", 3 * 3600000LL + 12 * 60000),
                 "catching up on s, 3 h 12 min behind") == 0);
    char small[8];
    zx_catchup_what(small, sizeof(small), "a-long-label", 0);
    CHECK(strlen(small) == 7);
    return failures != 0;
}
