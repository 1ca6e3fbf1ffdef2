/*
 * test_gateway_feed.c — the gateway's feed ring (gateway_feed.h): the SSE
 * frame of an event, resume after an id, the gap mark (evictions, the
 * supervisor's "lost"), the count and byte bounds, repeats and malformed
 * events refused, and the parsing of Last-Event-ID / since.
 */
#include "workers/gateway/gateway_feed.h"

#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"

static int add(zx_gwfeed_ring *r, uint64_t id, uint64_t lost, const char *json)
{
    return zx_gwfeed_ring_add(r, id, lost, json, strlen(json));
}

static void frames(void)
{
    zx_gwfeed_ring *r = zx_gwfeed_ring_new(10, 4096);
    CHECK(r);
    CHECK(add(r, 5, 0, "{\"ts\":\"t\", \"event\":\"batch\", \"rows\":3}") == 0);
    const zx_gwfeed_ev *e = zx_gwfeed_ring_after(r, 0);
    CHECK(e && e->id == 5);
    CHECK(e && !strcmp(e->frame, "id: 5\nevent: batch\ndata: {\"ts\":\"t\",\"event\":\"batch\","
                                 "\"rows\":3}\n\n"));
    CHECK(e && e->len == strlen(e->frame));
    /* a newline in a string stays escaped: data is one line */
    CHECK(add(r, 6, 0, "{\"event\":\"error\",\"message\":\"a\\nb\\r\"}") == 0);
    e = zx_gwfeed_ring_after(r, 5);
    CHECK(e && !strcmp(e->frame, "id: 6\nevent: error\ndata: {\"event\":\"error\",\"message\":"
                                 "\"a\\nb\\r\"}\n\n"));
    /* a kind unfit for an event line, or none: "message" */
    CHECK(add(r, 7, 0, "{\"event\":\"bad kind\\n\"}") == 0);
    e = zx_gwfeed_ring_after(r, 6);
    CHECK(e && !strncmp(e->frame, "id: 7\nevent: message\ndata: ", 27));
    CHECK(add(r, 8, 0, "{\"x\":1}") == 0);
    e = zx_gwfeed_ring_after(r, 7);
    CHECK(e && !strncmp(e->frame, "id: 8\nevent: message\n", 21));
    /* a repeat, an older id, id 0 and a non-object are refused */
    CHECK(add(r, 8, 0, "{\"event\":\"batch\"}") == 1);
    CHECK(add(r, 3, 0, "{\"event\":\"batch\"}") == 1);
    CHECK(add(r, 0, 0, "{\"event\":\"batch\"}") == 1);
    CHECK(zx_gwfeed_ring_count(r) == 4);
    CHECK(zx_gwfeed_ring_lost(r) == 0);
    CHECK(add(r, 9, 0, "[1,2]") == 1);
    CHECK(add(r, 10, 0, "{\"event\":") == 1);
    /* those are gone for good: a client after 8 may miss them */
    CHECK(zx_gwfeed_ring_lost(r) == 10);
    CHECK(zx_gwfeed_ring_gap(r, 8));
    CHECK(!zx_gwfeed_ring_gap(r, 10));
    zx_gwfeed_ring_free(r);
    zx_gwfeed_ring_free(NULL);
    CHECK(!zx_gwfeed_ring_new(0, 10));
    CHECK(!zx_gwfeed_ring_new(10, 0));
}

static void resume_and_gap(void)
{
    zx_gwfeed_ring *r = zx_gwfeed_ring_new(5, 1 << 20);
    /* ids with holes (they are clock-based): resume is "id > N" */
    uint64_t ids[] = {100, 105, 230, 231, 400};
    for (int i = 0; i < 5; i++)
        CHECK(add(r, ids[i], 0, "{\"event\":\"batch\"}") == 0);
    CHECK(zx_gwfeed_ring_oldest(r) == 100);
    CHECK(zx_gwfeed_ring_newest(r) == 400);
    CHECK(zx_gwfeed_ring_after(r, 0)->id == 100);
    CHECK(zx_gwfeed_ring_after(r, 100)->id == 105);
    CHECK(zx_gwfeed_ring_after(r, 101)->id == 105);
    CHECK(zx_gwfeed_ring_after(r, 229)->id == 230);
    CHECK(zx_gwfeed_ring_after(r, 399)->id == 400);
    CHECK(!zx_gwfeed_ring_after(r, 400));
    CHECK(!zx_gwfeed_ring_after(r, 1000));
    /* everything was received: no gap even for an id older than the oldest */
    CHECK(!zx_gwfeed_ring_gap(r, 1));
    /* the count bound evicts the oldest: a client after 50 or 100 missed 100 */
    CHECK(add(r, 500, 0, "{\"event\":\"batch\"}") == 0);
    CHECK(zx_gwfeed_ring_count(r) == 5);
    CHECK(zx_gwfeed_ring_oldest(r) == 105);
    CHECK(zx_gwfeed_ring_lost(r) == 100);
    CHECK(zx_gwfeed_ring_gap(r, 50));
    CHECK(zx_gwfeed_ring_gap(r, 99));
    CHECK(!zx_gwfeed_ring_gap(r, 100));
    CHECK(!zx_gwfeed_ring_gap(r, 105));
    /* walking from an id gets exactly the later events, in order */
    uint64_t want[] = {230, 231, 400, 500};
    uint64_t at = 105;
    for (int i = 0; i < 4; i++) {
        const zx_gwfeed_ev *e = zx_gwfeed_ring_after(r, at);
        CHECK(e && e->id == want[i]);
        at = e ? e->id : at;
    }
    CHECK(!zx_gwfeed_ring_after(r, at));
    /* the supervisor's lost mark (events it could not send, or a
     * restart's): raises the mark, never lowers it */
    CHECK(add(r, 700, 650, "{\"event\":\"batch\"}") == 0);
    CHECK(zx_gwfeed_ring_lost(r) == 650);
    CHECK(zx_gwfeed_ring_gap(r, 500));
    CHECK(!zx_gwfeed_ring_gap(r, 650));
    CHECK(add(r, 800, 10, "{\"event\":\"batch\"}") == 0);
    CHECK(zx_gwfeed_ring_lost(r) == 650);
    /* an id at or below the lost mark is a repeat */
    CHECK(add(r, 600, 0, "{\"event\":\"batch\"}") == 1);
    zx_gwfeed_ring_free(r);
}

static void byte_bound(void)
{
    /* each frame: "id: N\nevent: batch\ndata: {...}\n\n" with a 200-byte pad */
    char js[300];
    memset(js, 0, sizeof(js));
    strcpy(js, "{\"event\":\"batch\",\"pad\":\"");
    memset(js + strlen(js), 'x', 200);
    strcat(js, "\"}");
    zx_gwfeed_ring *r = zx_gwfeed_ring_new(1000, 2048);
    for (uint64_t id = 1000; id < 1100; id++)   /* ids of one length: frames of one */
        CHECK(add(r, id, 0, js) == 0);
    size_t one = zx_gwfeed_ring_after(r, 0)->len;
    CHECK(one > 200 && one < 300);
    CHECK(zx_gwfeed_ring_bytes(r) <= 2048);
    CHECK(zx_gwfeed_ring_count(r) == 2048 / one);
    CHECK(zx_gwfeed_ring_bytes(r) == zx_gwfeed_ring_count(r) * one);
    CHECK(zx_gwfeed_ring_newest(r) == 1099);
    CHECK(zx_gwfeed_ring_lost(r) == 1099 - zx_gwfeed_ring_count(r));
    /* an event whose frame alone is above the bound is not kept: lost */
    char *big = calloc(1, 4096);
    strcpy(big, "{\"event\":\"batch\",\"pad\":\"");
    memset(big + strlen(big), 'y', 3000);
    strcat(big, "\"}");
    CHECK(add(r, 1100, 0, big) == 1);
    CHECK(zx_gwfeed_ring_lost(r) == 1100);
    CHECK(zx_gwfeed_ring_newest(r) == 1099);
    CHECK(zx_gwfeed_ring_bytes(r) <= 2048);
    free(big);
    /* the real bounds hold too */
    zx_gwfeed_ring_free(r);
    r = zx_gwfeed_ring_new(ZX_GWFEED_MAX_EVENTS, ZX_GWFEED_MAX_BYTES);
    for (uint64_t id = 1; id <= 5000; id++)
        CHECK(add(r, id, 0, js) == 0);
    CHECK(zx_gwfeed_ring_count(r) <= ZX_GWFEED_MAX_EVENTS);
    CHECK(zx_gwfeed_ring_bytes(r) <= ZX_GWFEED_MAX_BYTES);
    CHECK(zx_gwfeed_ring_newest(r) == 5000);
    CHECK(zx_gwfeed_ring_oldest(r) == zx_gwfeed_ring_lost(r) + 1);
    zx_gwfeed_ring_free(r);
}

static void parse_start(void)
{
    enum zx_gwfeed_from from;
    uint64_t after;
    char why[200];
    CHECK(zx_gwfeed_parse_start(NULL, NULL, NULL, &from, &after, why, sizeof(why)) == 0);
    CHECK(from == ZX_GWFEED_HISTORY && after == 0);
    CHECK(zx_gwfeed_parse_start(NULL, NULL, "now", &from, &after, why, sizeof(why)) == 0);
    CHECK(from == ZX_GWFEED_NOW);
    CHECK(zx_gwfeed_parse_start(NULL, NULL, "later", &from, &after, why, sizeof(why)) < 0);
    CHECK(zx_gwfeed_parse_start("42", NULL, NULL, &from, &after, why, sizeof(why)) == 0);
    CHECK(from == ZX_GWFEED_AFTER && after == 42);
    CHECK(zx_gwfeed_parse_start(NULL, "0", NULL, &from, &after, why, sizeof(why)) == 0);
    CHECK(from == ZX_GWFEED_AFTER && after == 0);
    /* the header wins over the query */
    CHECK(zx_gwfeed_parse_start("7", "9", NULL, &from, &after, why, sizeof(why)) == 0);
    CHECK(after == 7);
    CHECK(zx_gwfeed_parse_start("18446744073709551615", NULL, NULL, &from, &after, why,
                                sizeof(why)) == 0);
    CHECK(after == UINT64_MAX);
    const char *bad[] = {"", "18446744073709551616", "99999999999999999999", "123456789012345678901",
                         "-1", "+1", "1a", " 1", "0x10", "1.0"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = 0;
        CHECK(zx_gwfeed_parse_start(bad[i], NULL, NULL, &from, &after, why, sizeof(why)) < 0);
        CHECK(strstr(why, "Last-Event-ID"));
        CHECK(zx_gwfeed_parse_start(NULL, bad[i], NULL, &from, &after, why, sizeof(why)) < 0);
        CHECK(strstr(why, "last_event_id"));
    }
}

int main(void)
{
    frames();
    resume_and_gap();
    byte_bound();
    parse_start();
    if (!failures)
        printf("ok\n");
    return failures != 0;
}
