/*
 * test_os_doc.c — what the OpenSearch destination sends and reads
 * (workers/destinations/opensearch/os_doc.c, os_bulk.c), without a server.
 *
 * Proves: a row's document has every type as documented (numbers, bools,
 * UTC timestamps, dates, decimals as strings, JSON as is, bytes in base64,
 * text escaped), a misfit (NaN, text in an integer column) is written as
 * null and counted; ids of one and of several key columns (escaping of
 * '|' and '\'), refused when NULL, empty or longer than 512 bytes; the
 * mapping of each type; the _bulk answer read item by item (statuses,
 * "type: reason" of an error, a count that differs, garbage) and the
 * summary of an error answer.
 */
#include <string.h>

#include "common/buf.h"
#include "tests/unit/check.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/opensearch/os_bulk.h"
#include "workers/destinations/opensearch/os_doc.h"

static zx_value vi(int64_t i) { zx_value v = {.type = ZX_T_INT, .u.i = i}; return v; }
static zx_value vr(double d) { zx_value v = {.type = ZX_T_REAL, .u.d = d}; return v; }
static zx_value vb(int b) { zx_value v = {.type = ZX_T_BOOL, .u.b = b}; return v; }
static zx_value vt(const char *s)
{
    zx_value v = {.type = ZX_T_TEXT, .len = (uint32_t)strlen(s), .s = s};
    return v;
}
static zx_value vj(const char *s)
{
    zx_value v = {.type = ZX_T_JSON, .len = (uint32_t)strlen(s), .s = s};
    return v;
}
static zx_value vts(int64_t us, const char *s)
{
    zx_value v = {.type = ZX_T_TIMESTAMP, .len = (uint32_t)strlen(s), .u.i = us, .s = s};
    return v;
}

static void test_doc(void)
{
    zx_dcol cols[] = {
        {"id", ZX_DT_INT64, 0, 0}, {"name", ZX_DT_TEXT, 0, 0}, {"price", ZX_DT_DOUBLE, 0, 0},
        {"ok", ZX_DT_BOOL, 0, 0}, {"at", ZX_DT_TIMESTAMP, 0, 0}, {"day", ZX_DT_DATE, 0, 0},
        {"amount", ZX_DT_DECIMAL, 10, 2}, {"meta", ZX_DT_JSON, 0, 0},
        {"raw", ZX_DT_BYTES, 0, 0}, {"none", ZX_DT_TEXT, 0, 0},
    };
    zx_value v[] = {
        vi(42), vt("a \"q\"\n\xc3\xa9"), vr(1.5), vb(1),
        vts(1767323045000000LL, "2026-01-02T04:04:05+01:00"), vt("2026-01-02"),
        vt("12.50"), vj("{\"a\":[1,2]}"), vt("hi!"), {0},
    };
    zx_buf b, tmp;
    zx_buf_init(&b);
    zx_buf_init(&tmp);
    zx_dest_stats st = {0};
    CHECK(zx_os_doc(&b, cols, 10, v, &tmp, &st) == 0);
    CHECK(!strcmp(b.p, "{\"id\":42,\"name\":\"a \\\"q\\\"\\n\xc3\xa9\",\"price\":1.5,"
                  "\"ok\":true,\"at\":\"2026-01-02T03:04:05.000000Z\",\"day\":\"2026-01-02\","
                  "\"amount\":\"12.50\",\"meta\":{\"a\":[1,2]},\"raw\":\"aGkh\","
                  "\"none\":null}"));
    CHECK(st.nulled == 0);

    /* misfits: NaN, text that is no integer */
    zx_dcol c2[] = {{"x", ZX_DT_DOUBLE, 0, 0}, {"n", ZX_DT_INT64, 0, 0}};
    zx_value v2[] = {vr(0.0 / 0.0), vt("abc")};
    zx_buf_reset(&b);
    CHECK(zx_os_doc(&b, c2, 2, v2, &tmp, &st) == 0);
    CHECK(!strcmp(b.p, "{\"x\":null,\"n\":null}"));
    CHECK(st.nulled == 2 && !strcmp(st.misfit_col, "x"));
    zx_buf_free(&b);
    zx_buf_free(&tmp);
}

static void test_ids(void)
{
    zx_buf id, tmp;
    zx_buf_init(&id);
    zx_buf_init(&tmp);
    const char *why;
    zx_value v[] = {vi(7), vt("a|b\\c"), vts(0, "1970-01-01T01:00:00+01:00"), {0}, vt("")};
    size_t one[] = {0}, two[] = {0, 1}, ts[] = {2}, nul[] = {3}, empty[] = {4};
    CHECK(zx_os_doc_id(&id, v, one, 1, &tmp, &why) == 1 && !strcmp(id.p, "7"));
    zx_buf_reset(&id);
    CHECK(zx_os_doc_id(&id, v, two, 2, &tmp, &why) == 1 && !strcmp(id.p, "7|a\\|b\\\\c"));
    zx_buf_reset(&id);
    /* one key column: the value as it is */
    size_t txt[] = {1};
    CHECK(zx_os_doc_id(&id, v, txt, 1, &tmp, &why) == 1 && !strcmp(id.p, "a|b\\c"));
    zx_buf_reset(&id);
    CHECK(zx_os_doc_id(&id, v, ts, 1, &tmp, &why) == 1 &&
          !strcmp(id.p, "1970-01-01T00:00:00.000000Z"));
    zx_buf_reset(&id);
    CHECK(zx_os_doc_id(&id, v, nul, 1, &tmp, &why) == 0 && why && strstr(why, "NULL"));
    zx_buf_reset(&id);
    CHECK(zx_os_doc_id(&id, v, empty, 1, &tmp, &why) == 0 && why && strstr(why, "empty"));
    char big[600];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    zx_value vb2[] = {vt(big)};
    zx_buf_reset(&id);
    CHECK(zx_os_doc_id(&id, vb2, one, 1, &tmp, &why) == 0 && why && strstr(why, "512"));
    big[512] = '\0';
    zx_value vb3[] = {vt(big)};
    zx_buf_reset(&id);
    CHECK(zx_os_doc_id(&id, vb3, one, 1, &tmp, &why) == 1 && id.len == 512);
    zx_value bad[] = {vt("\xff\xfe")};
    zx_buf_reset(&id);
    CHECK(zx_os_doc_id(&id, bad, one, 1, &tmp, &why) == 0);
    zx_buf_free(&id);
    zx_buf_free(&tmp);
}

static void test_mapping(void)
{
    zx_dcol cols[] = {
        {"id", ZX_DT_INT64, 0, 0}, {"name", ZX_DT_TEXT, 0, 0}, {"n", ZX_DT_INT64, 0, 0},
        {"p", ZX_DT_DECIMAL, 10, 2}, {"at", ZX_DT_TIMESTAMP, 0, 0}, {"j", ZX_DT_JSON, 0, 0},
        {"b", ZX_DT_BYTES, 0, 0}, {"f", ZX_DT_BOOL, 0, 0},
    };
    const char *keys[] = {"id"};
    zx_buf b;
    zx_buf_init(&b);
    CHECK(zx_os_mapping(&b, cols, 8, keys, 1) == 0);
    CHECK(!strcmp(b.p, "{\"mappings\":{\"properties\":{\"id\":{\"type\":\"keyword\"},"
                  "\"name\":{\"type\":\"text\",\"fields\":{\"keyword\":{\"type\":\"keyword\","
                  "\"ignore_above\":256}}},\"n\":{\"type\":\"long\"},\"p\":{\"type\":"
                  "\"double\"},\"at\":{\"type\":\"date\"},\"b\":{\"type\":\"binary\"},"
                  "\"f\":{\"type\":\"boolean\"}}}}"));
    zx_buf_free(&b);
}

typedef struct got {
    int status[8];
    int del[8];
    char why[8][240];
    size_t n;
} got;

static int each(void *ctx, size_t i, const zx_os_item *it)
{
    got *g = ctx;
    if (i < 8) {
        g->status[i] = it->status;
        g->del[i] = it->is_delete;
        strcpy(g->why[i], it->why);
    }
    g->n++;
    return 0;
}

static void test_bulk(void)
{
    const char *ans = "{\"took\":3,\"errors\":true,\"items\":["
        "{\"index\":{\"_id\":\"1\",\"status\":201,\"result\":\"created\"}},"
        "{\"index\":{\"_id\":\"2\",\"status\":400,\"error\":{\"type\":\"mapper_parsing_exception\","
        "\"reason\":\"failed to parse field [n]\\nof type [long]\"}}},"
        "{\"delete\":{\"_id\":\"3\",\"status\":404,\"result\":\"not_found\"}},"
        "{\"index\":{\"_id\":\"4\",\"status\":429,\"error\":\"rejected\"}}]}";
    got g = {0};
    char err[200];
    CHECK(zx_os_bulk_parse(ans, strlen(ans), 4, each, &g, err, sizeof(err)) == 0);
    CHECK(g.n == 4 && g.status[0] == 201 && g.why[0][0] == '\0');
    CHECK(g.status[1] == 400 &&
          !strcmp(g.why[1], "HTTP 400 mapper_parsing_exception: failed to parse field [n] "
                  "of type [long]"));
    CHECK(g.status[2] == 404 && g.del[2] && !strcmp(g.why[2], "HTTP 404 not_found"));
    CHECK(g.status[3] == 429 && !strcmp(g.why[3], "HTTP 429 rejected"));
    memset(&g, 0, sizeof(g));
    CHECK(zx_os_bulk_parse(ans, strlen(ans), 3, each, &g, err, sizeof(err)) == -1 &&
          strstr(err, "4 items for 3 sent") && g.n == 0);
    CHECK(zx_os_bulk_parse("<html>", 6, 1, each, &g, err, sizeof(err)) == -1 &&
          strstr(err, "not JSON"));
    const char *nostatus = "{\"items\":[{\"index\":{\"_id\":\"1\"}}]}";
    CHECK(zx_os_bulk_parse(nostatus, strlen(nostatus), 1, each, &g, err, sizeof(err)) == -1);
    /* the body need not be NUL-terminated: only len bytes are read */
    const char *cut = "{\"items\":[]}XXXX";
    CHECK(zx_os_bulk_parse(cut, 12, 0, each, &g, err, sizeof(err)) == 0);

    char line[64];
    const char *e = "{\"error\":{\"root_cause\":[{\"type\":\"index_not_found_exception\","
                    "\"reason\":\"no such index [x]\"}],\"type\":\"t\",\"reason\":\"r\"},"
                    "\"status\":404}";
    zx_os_error_text(e, strlen(e), line, sizeof(line));
    CHECK(!strcmp(line, "index_not_found_exception: no such index [x]"));
    zx_os_error_text("{\"error\":\"bad\\tthing\"}", 22, line, sizeof(line));
    CHECK(!strcmp(line, "bad thing"));
    zx_os_error_text("nope", 4, line, sizeof(line));
    CHECK(line[0] == '\0');
    char small[6];
    const char *u = "{\"error\":\"\xc3\xa9\xc3\xa9\xc3\xa9\"}";
    zx_os_error_text(u, strlen(u), small, sizeof(small));
    CHECK(!strcmp(small, "\xc3\xa9\xc3\xa9"));   /* cut on a whole character */
}

int main(void)
{
    test_doc();
    test_ids();
    test_mapping();
    test_bulk();
    if (failures)
        printf("test_os_doc: %d check(s) failed\n", failures);
    return failures != 0;
}
