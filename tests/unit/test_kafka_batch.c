/*
 * test_kafka_batch.c — Kafka messages into one frame (workers/sources/
 * kafka_batch.c): rows and metadata columns, rejects, tombstones, the
 * position per partition and its encoding, the frame size limit; and the
 * rowset functions it relies on (zx_rowset_add_to_rows, zx_rowset_save /
 * zx_rowset_truncate).  The frame it makes is encoded and decoded again
 * with proto/frame.h.  No broker, no timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_fast.h"
#include "common/rowset.h"
#include "conf/config.h"
#include "proto/frame.h"
#include "workers/sources/kafka/kafka_int.h"

#include "tests/unit/batch_testlib.h"
#include "tests/unit/check.h"

#define ALL_META (ZX_META_KEY | ZX_META_PARTITION | ZX_META_OFFSET | ZX_META_TIMESTAMP)
#define BIG ((size_t)1 << 30)

static kb_msg msg(const char *topic, int32_t part, int64_t off, const char *key,
                  const char *payload)
{
    kb_msg m = {.topic = topic, .partition = part, .offset = off, .ts_ms = -1};
    if (key) {
        m.key = key;
        m.key_len = strlen(key);
    }
    if (payload) {
        m.payload = payload;
        m.len = strlen(payload);
    }
    return m;
}

/* The value of column `name` in row r of rs (type ZX_T__COUNT when the
 * column does not exist). */
static zx_value cell(const zx_rowset *rs, uint32_t r, const char *name)
{
    zx_value none = {.type = ZX_T__COUNT};
    int64_t c = zx_rowset_find_column(rs, name, strlen(name));
    if (c < 0 || r >= rs->nrows)
        return none;
    zx_value *row = calloc(rs->ncols, sizeof(*row));
    zx_rowset_row(rs, r, row);
    zx_value v = row[c];
    free(row);
    return v;
}

static int text_is(zx_value v, const char *s)
{
    return (v.type == ZX_T_TEXT || v.type == ZX_T_TIMESTAMP || v.type == ZX_T_JSON) &&
           v.len == strlen(s) && memcmp(v.s, s, v.len) == 0;
}

static zx_type coltype(const zx_rowset *rs, const char *name)
{
    int64_t c = zx_rowset_find_column(rs, name, strlen(name));
    return c < 0 ? ZX_T__COUNT : (zx_type)rs->cols[c].type;
}

static void test_add_to_rows(void)
{
    zx_rowset rs;
    zx_rowset_init(&rs);
    uint32_t a = (uint32_t)zx_rowset_column(&rs, "a", 1, ZX_T_NULL);
    for (int r = 0; r < 3; r++) {
        zx_rowset_begin_row(&rs);
        for (int k = 0; k <= r; k++) { /* row r has r+1 cells */
            zx_value v = {.type = ZX_T_INT, .u.i = r * 10 + k};
            zx_rowset_add(&rs, a, &v);
        }
        zx_rowset_end_row(&rs);
    }
    uint32_t b = (uint32_t)zx_rowset_column(&rs, "b", 1, ZX_T_NULL);
    uint32_t c = (uint32_t)zx_rowset_column(&rs, "c", 1, ZX_T_NULL);
    uint32_t cols[2] = {b, c};
    zx_value vals[2] = {{.type = ZX_T_INT, .u.i = 7}, {.type = ZX_T_BOOL, .u.b = 1}};
    CHECK(zx_rowset_add_to_rows(&rs, 1, cols, vals, 2) == 0);
    CHECK(rs.nrows == 3);
    CHECK(rs.ncells == 6 + 4);
    /* row 0 untouched, rows 1 and 2 keep their last "a" and gain b, c */
    CHECK(cell(&rs, 0, "a").u.i == 0 && cell(&rs, 0, "b").type == ZX_T_NULL);
    CHECK(cell(&rs, 1, "a").u.i == 11 && cell(&rs, 1, "b").u.i == 7 &&
          cell(&rs, 1, "c").type == ZX_T_BOOL);
    CHECK(cell(&rs, 2, "a").u.i == 22 && cell(&rs, 2, "b").u.i == 7 &&
          cell(&rs, 2, "c").u.b == 1);
    CHECK(rs.row_start[1] - rs.row_start[0] == 1);
    CHECK(rs.row_start[2] - rs.row_start[1] == 4);
    CHECK(rs.row_start[3] - rs.row_start[2] == 5);
    CHECK(coltype(&rs, "b") == ZX_T_INT && coltype(&rs, "c") == ZX_T_BOOL);
    /* the last row only: nothing moves */
    zx_value d = {.type = ZX_T_INT, .u.i = 99};
    CHECK(zx_rowset_add_to_rows(&rs, 2, &b, &d, 1) == 0);
    CHECK(cell(&rs, 2, "b").u.i == 99 && cell(&rs, 1, "b").u.i == 7);
    zx_rowset_free(&rs);
}

static void test_truncate(void)
{
    zx_rowset rs;
    zx_rowset_init(&rs);
    uint32_t a = (uint32_t)zx_rowset_column(&rs, "a", 1, ZX_T_NULL);
    zx_rowset_begin_row(&rs);
    zx_value i1 = {.type = ZX_T_INT, .u.i = 1};
    zx_rowset_add(&rs, a, &i1);
    zx_rowset_end_row(&rs);
    zx_rowset_mark mk;
    zx_rowset_save(&rs, &mk);
    /* a second row widens "a" and adds "x", a third is left open */
    zx_rowset_begin_row(&rs);
    zx_value r2 = {.type = ZX_T_REAL, .u.d = 2.5};
    zx_rowset_add(&rs, a, &r2);
    uint32_t x = (uint32_t)zx_rowset_column(&rs, "x", 1, ZX_T_NULL);
    zx_rowset_add(&rs, x, &i1);
    zx_rowset_end_row(&rs);
    zx_rowset_begin_row(&rs);
    zx_rowset_add(&rs, a, &i1);
    CHECK(coltype(&rs, "a") == ZX_T_REAL);
    zx_rowset_truncate(&rs, &mk);
    CHECK(rs.nrows == 1 && rs.ncols == 1 && rs.ncells == 1 && !rs.row_open);
    CHECK(coltype(&rs, "a") == ZX_T_INT);
    CHECK(zx_rowset_find_column(&rs, "x", 1) == -1);
    /* and the rowset goes on normally */
    CHECK(zx_rowset_column(&rs, "y", 1, ZX_T_NULL) == 1);
    zx_rowset_begin_row(&rs);
    zx_rowset_add(&rs, 1, &i1);
    zx_rowset_end_row(&rs);
    CHECK(rs.nrows == 2 && cell(&rs, 1, "y").u.i == 1 && cell(&rs, 0, "a").u.i == 1);
    zx_rowset_free(&rs);
}

static void test_rows_and_metadata(void)
{
    kbatch b;
    kb_init(&b, ALL_META | ZX_META_INGESTED_AT);
    CHECK(b.metadata == ALL_META);
    CHECK(kb_empty(&b));
    kb_msg m = msg("clicks", 3, 41, "k1", "{\"id\":1,\"_key\":\"json\",\"name\":\"a\"}");
    m.ts_ms = 1700000000123;
    CHECK(kb_add(&b, &m, 0, BIG) == KB_ADDED);
    kb_msg m2 = msg("clicks", 3, 42, NULL, "[{\"id\":2},{\"id\":3,\"extra\":true}]");
    m2.ts_ms = 1700000000123;
    CHECK(kb_add(&b, &m2, 0, BIG) == KB_ADDED);
    CHECK(!kb_empty(&b));
    CHECK(b.nmsgs == 2);
    const zx_rowset *rs = &b.rs;
    CHECK(rs->nrows == 3);
    CHECK(cell(rs, 0, "id").u.i == 1 && text_is(cell(rs, 0, "_key"), "k1"));
    /* the JSON field "_key" is data: colname.h renames it */
    CHECK(text_is(cell(rs, 0, "data_key"), "json"));
    CHECK(cell(rs, 0, "_partition").u.i == 3 && cell(rs, 0, "_offset").u.i == 41);
    zx_value ts = cell(rs, 0, "_timestamp");
    CHECK(ts.type == ZX_T_TIMESTAMP && ts.u.i == 1700000000123000);
    CHECK(text_is(ts, "2023-11-14T22:13:20.123000Z"));
    /* both rows of the array get the second message's metadata */
    for (uint32_t r = 1; r < 3; r++) {
        CHECK(cell(rs, r, "id").u.i == (int64_t)r + 1);
        CHECK(cell(rs, r, "_offset").u.i == 42);
        CHECK(cell(rs, r, "_key").type == ZX_T_NULL); /* no key: no value */
        CHECK(cell(rs, r, "_timestamp").u.i == 1700000000123000);
    }
    CHECK(cell(rs, 2, "extra").type == ZX_T_BOOL);
    CHECK(coltype(rs, "_key") == ZX_T_TEXT && coltype(rs, "_offset") == ZX_T_INT &&
          coltype(rs, "_timestamp") == ZX_T_TIMESTAMP);

    zx_frame_meta fm;
    CHECK(kb_meta(&b, &fm) == 0);
    CHECK(fm.npositions == 1 && strcmp(fm.positions[0].part, "clicks:3") == 0);
    int64_t next = 0;
    CHECK(kb_pos_decode(fm.positions[0].value, fm.positions[0].value_len, &next) == 0 &&
          next == 43);
    CHECK(fm.accepted == 3 && fm.nrejects == 0);
    kb_reset(&b);
    CHECK(kb_empty(&b) && b.rs.nrows == 0);
    kb_free(&b);

    /* no metadata asked: no metadata columns */
    kb_init(&b, ZX_META_INGESTED_AT);
    m = msg("t", 0, 0, "k", "{\"a\":1}");
    CHECK(kb_add(&b, &m, 0, BIG) == KB_ADDED);
    CHECK(b.rs.ncols == 1 && coltype(&b.rs, "_key") == ZX_T__COUNT);
    kb_free(&b);
}

static void test_rejects(void)
{
    kbatch b;
    kb_init(&b, ZX_META_OFFSET);
    kb_msg ok = msg("t", 1, 10, NULL, "{\"a\":1}");
    CHECK(kb_add(&b, &ok, 0, BIG) == KB_ADDED);
    struct {
        const char *payload;
        const char *reason;
    } bad[] = {
        {"not json", "not JSON: at byte"},
        {"5", "the message is a"},
        {"[{\"a\":2.5,\"new\":1},7]", "element 1 of the array is a"},
        {"", "empty message"},
        {"   ", "empty message"},
        {"{\"a\":", "not JSON"},
    };
    size_t nbad = sizeof(bad) / sizeof(bad[0]);
    for (size_t i = 0; i < nbad; i++) {
        kb_msg m = msg("t", 1, 11 + (int64_t)i, "key", bad[i].payload);
        CHECK(kb_add(&b, &m, 0, BIG) == KB_ADDED);
    }
    /* only the good message's row, its column types as before */
    CHECK(b.rs.nrows == 1 && coltype(&b.rs, "a") == ZX_T_INT);
    CHECK(zx_rowset_find_column(&b.rs, "new", 3) == -1);
    CHECK(b.nrej == nbad);
    for (size_t i = 0; i < nbad && i < b.nrej; i++) {
        const zx_frame_reject *r = &b.rej[i];
        if (!strstr(r->reason, bad[i].reason)) {
            printf("reject %zu: reason \"%s\", want \"%s\"\n", i, r->reason, bad[i].reason);
            failures++;
        }
        CHECK(r->raw_len == strlen(bad[i].payload) &&
              memcmp(r->raw, bad[i].payload, r->raw_len) == 0);
        CHECK(r->key_len == 3 && memcmp(r->key, "key", 3) == 0);
        char want[128];
        snprintf(want, sizeof(want), "{\"topic\":\"t\",\"partition\":1,\"offset\":%d}",
                 11 + (int)i);
        CHECK(strcmp(r->position, want) == 0);
    }
    /* a tombstone: no row, no reject, the position moves */
    kb_msg tomb = msg("t", 1, 30, "gone", NULL);
    CHECK(kb_add(&b, &tomb, 0, BIG) == KB_ADDED);
    CHECK(b.rs.nrows == 1 && b.nrej == nbad);
    /* the stream goes on after the rejects */
    kb_msg ok2 = msg("t", 1, 31, NULL, "{\"a\":2}");
    CHECK(kb_add(&b, &ok2, 0, BIG) == KB_ADDED);
    CHECK(b.rs.nrows == 2 && cell(&b.rs, 1, "_offset").u.i == 31);
    zx_frame_meta fm;
    CHECK(kb_meta(&b, &fm) == 0);
    int64_t next;
    CHECK(fm.npositions == 1 &&
          kb_pos_decode(fm.positions[0].value, 8, &next) == 0 && next == 32);
    CHECK(fm.nrejects == nbad);

    /* a reject keeps at most KB_RAW_MAX bytes of the message and its key */
    size_t big = KB_RAW_MAX + 1000;
    char *junk = malloc(big + 1);
    memset(junk, 'x', big);
    junk[big] = '\0';
    kb_msg m = msg("t", 2, 0, NULL, junk);
    m.key = junk;
    m.key_len = big;
    CHECK(kb_add(&b, &m, 1, BIG) == KB_ADDED);
    CHECK(b.rej[b.nrej - 1].raw_len == KB_RAW_MAX && b.rej[b.nrej - 1].key_len == KB_RAW_MAX);
    free(junk);
    kb_free(&b);
}

static void test_limits(void)
{
    kbatch b;
    kb_init(&b, 0);
    char payload[2048];
    snprintf(payload, sizeof(payload), "{\"s\":\"%0*d\"}", 1500, 7);
    kb_msg m = msg("t", 0, 5, NULL, payload);
    /* alone and too large: a reject, never KB_FULL */
    CHECK(kb_add(&b, &m, 0, 1000) == KB_ADDED);
    CHECK(b.rs.nrows == 0 && b.nrej == 1 && strstr(b.rej[0].reason, "too large"));
    kb_reset(&b);
    kb_msg small = msg("t", 0, 5, NULL, "{\"a\":1}");
    CHECK(kb_add(&b, &small, 0, 4000) == KB_ADDED);
    size_t ncells = b.rs.ncells, ncols = b.rs.ncols;
    kb_msg m2 = msg("t", 0, 6, NULL, payload);
    CHECK(kb_add(&b, &m2, 0, 1000 + kb_estimate(&b) / 2) == KB_FULL);
    /* unchanged: the same message goes first into the next frame */
    CHECK(b.rs.nrows == 1 && b.rs.ncells == ncells && b.rs.ncols == ncols && b.nmsgs == 1);
    zx_frame_meta fm;
    CHECK(kb_meta(&b, &fm) == 0);
    int64_t next;
    CHECK(kb_pos_decode(fm.positions[0].value, 8, &next) == 0 && next == 6);
    kb_free(&b);
}

static void test_positions(void)
{
    unsigned char v[8];
    kb_pos_encode(0x0102030405060708LL, v);
    CHECK(v[0] == 0x08 && v[7] == 0x01);
    int64_t n = -5;
    CHECK(kb_pos_decode(v, 8, &n) == 0 && n == 0x0102030405060708LL);
    CHECK(kb_pos_decode(v, 7, &n) == -1);
    memset(v, 0xff, 8);
    CHECK(kb_pos_decode(v, 8, &n) == -1);
    char name[32];
    CHECK(kb_part_name(name, sizeof(name), "clicks", 3) == 8 && strcmp(name, "clicks:3") == 0);
    CHECK(kb_part_name(name, 4, "clicks", 3) == -1);

    /* two partitions and a start: new position, through a real frame */
    kbatch b;
    kb_init(&b, ZX_META_PARTITION);
    kb_msg a = msg("a.b", 0, 100, NULL, "{\"x\":1}");
    kb_msg c = msg("c", 5, 7, NULL, "{\"x\":2}");
    kb_msg a2 = msg("a.b", 0, 101, NULL, "{\"x\":3}");
    CHECK(kb_add(&b, &a, 0, BIG) == KB_ADDED);
    CHECK(kb_add(&b, &c, 1, BIG) == KB_ADDED);
    CHECK(kb_add(&b, &a2, 0, BIG) == KB_ADDED);
    CHECK(kb_note_position(&b, 2, "d", 1, 55) == 0);
    kb_msg bad = msg("c", 5, 8, "k", "nope");
    CHECK(kb_add(&b, &bad, 1, BIG) == KB_ADDED);
    zx_frame_meta fm;
    CHECK(kb_meta(&b, &fm) == 0);
    fm.pipeline = "p";
    fm.table = "t";
    zx_buf fb;
    zx_buf_init(&fb);
    CHECK(zx_frame_encode(&fm, &b.rs, &fb) == 0);
    CHECK(fb.len <= kb_estimate(&b));
    zx_rowset out;
    zx_rowset_init(&out);
    zx_frame_meta dm;
    char err[256];
    CHECK(zx_frame_decode(fb.p, fb.len, &dm, &out, err, sizeof(err)) == 0);
    CHECK(out.nrows == 3 && dm.npositions == 3 && dm.nrejects == 1);
    const char *want[3] = {"a.b:0", "c:5", "d:1"};
    int64_t wantv[3] = {102, 9, 55};
    for (size_t i = 0; i < 3 && i < dm.npositions; i++) {
        int64_t nx = -1;
        CHECK(strcmp(dm.positions[i].part, want[i]) == 0);
        CHECK(kb_pos_decode(dm.positions[i].value, dm.positions[i].value_len, &nx) == 0 &&
              nx == wantv[i]);
    }
    if (dm.nrejects == 1) {
        CHECK(strcmp(dm.rejects[0].position, "{\"topic\":\"c\",\"partition\":5,\"offset\":8}") == 0);
        CHECK(dm.rejects[0].key_len == 1 && dm.rejects[0].raw_len == 4);
    }
    CHECK(cell(&out, 1, "_partition").u.i == 5);
    zx_rowset_free(&out);
    zx_buf_free(&fb);
    kb_free(&b);

    /* positions only (start: new): a frame with no row */
    kb_init(&b, 0);
    CHECK(kb_note_position(&b, 0, "t", 0, 9) == 0);
    CHECK(!kb_empty(&b) && b.nmsgs == 0);
    CHECK(kb_meta(&b, &fm) == 0 && fm.npositions == 1 && fm.accepted == 0);
    kb_free(&b);
}

/* A fencing batch (a shared workspace): its positions carry from (set by
 * the caller, kb_set_from) and the first offset of the partition's
 * messages in the frame; a position alone has first -1; kb_other_part
 * says when a message of another partition must start the next frame. */
static void test_fenced_positions(void)
{
    kbatch b;
    kb_init(&b, 0);
    b.fence = 1;
    CHECK(!kb_other_part(&b, 0));
    kb_msg a = msg("t", 0, 40, NULL, "{\"x\":1}");
    kb_msg a2 = msg("t", 0, 41, NULL, "{\"x\":2}");
    CHECK(kb_add(&b, &a, 0, BIG) == KB_ADDED && kb_add(&b, &a2, 0, BIG) == KB_ADDED);
    kb_set_from(&b, 0, 40);
    kb_set_from(&b, 7, 99);                /* not in the batch: nothing */
    CHECK(!kb_other_part(&b, 0) && kb_other_part(&b, 1));
    zx_frame_meta fm;
    CHECK(kb_meta(&b, &fm) == 0 && fm.npositions == 1);
    CHECK(fm.positions[0].fenced && fm.positions[0].from == 40 && fm.positions[0].first == 40);
    fm.pipeline = "p";
    fm.table = "t";
    zx_buf fb;
    zx_buf_init(&fb);
    CHECK(zx_frame_encode(&fm, &b.rs, &fb) == 0);
    zx_rowset out;
    zx_rowset_init(&out);
    zx_frame_meta dm;
    char err[256];
    CHECK(zx_frame_decode(fb.p, fb.len, &dm, &out, err, sizeof(err)) == 0);
    int64_t nx = -1;
    CHECK(dm.npositions == 1 && dm.positions[0].fenced && dm.positions[0].from == 40 &&
          dm.positions[0].first == 40 &&
          kb_pos_decode(dm.positions[0].value, dm.positions[0].value_len, &nx) == 0 &&
          nx == 42);
    zx_rowset_free(&out);
    zx_buf_free(&fb);
    /* the next frame: first is its own first message */
    kb_reset(&b);
    kb_msg a3 = msg("t", 0, 42, NULL, "{\"x\":3}");
    CHECK(kb_add(&b, &a3, 0, BIG) == KB_ADDED);
    kb_set_from(&b, 0, 42);
    CHECK(kb_meta(&b, &fm) == 0 && fm.positions[0].first == 42 && fm.positions[0].from == 42);
    /* a position alone (start: new) */
    kb_reset(&b);
    CHECK(kb_note_position(&b, 3, "t", 3, 9) == 0);
    CHECK(kb_meta(&b, &fm) == 0 && fm.positions[0].fenced && fm.positions[0].first == -1 &&
          fm.positions[0].from == -1);
    kb_free(&b);

    /* not fencing: plain positions */
    kb_init(&b, 0);
    CHECK(kb_add(&b, &a, 0, BIG) == KB_ADDED);
    kb_set_from(&b, 0, 40);
    CHECK(kb_meta(&b, &fm) == 0 && !fm.positions[0].fenced);
    kb_free(&b);
}

/* The reason a reject gives for what the JSON parser refused: chosen by
 * the error's code (never by its words). */
static const char *reason_of(const char *body, char *r, size_t n)
{
    zx_rowset rs;
    zx_json_err e;
    zx_rowset_init(&rs);
    CHECK(zx_json_rows_parse(body, strlen(body), ZX_BODY_JSON, &rs, &e) < 0);
    zx_json_message_reason(&e, r, n);
    zx_rowset_free(&rs);
    return r;
}

static void test_reasons(void)
{
    char r[128];
    CHECK(strcmp(reason_of("  ", r, sizeof(r)), "empty message") == 0);
    CHECK(strncmp(reason_of("\"x\"", r, sizeof(r)), "the message is a string; it must be",
                  35) == 0);
    CHECK(strncmp(reason_of("x", r, sizeof(r)), "not JSON: at byte 0", 19) == 0);
    CHECK(strncmp(reason_of("[{}, {}, 3]", r, sizeof(r)), "element 2", 9) == 0);
    zx_json_err none = {0};
    zx_json_message_reason(&none, r, sizeof(r));
    CHECK(strcmp(r, "not JSON") == 0);
}

/* The fingerprint as positions stored since issue 18 hold it (so a
 * stored witness still matches): FNV-1a 64 over the timestamp (8 bytes,
 * native order), then for the key and the payload their length (8
 * bytes) and either "\0" (NULL) or the whole bytes when at most twice
 * the edge (8 for the key, 32 for the payload), else the first and last
 * edge bytes; 0 is made 1. */
static uint64_t ref_fnv(uint64_t h, const void *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= ((const unsigned char *)d)[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t ref_edges(uint64_t h, const void *d, size_t n, size_t edge)
{
    uint64_t len = n;
    h = ref_fnv(h, &len, 8);
    if (!d)
        return ref_fnv(h, "\0", 1);
    if (n <= 2 * edge)
        return ref_fnv(h, d, n);
    h = ref_fnv(h, d, edge);
    return ref_fnv(h, (const char *)d + n - edge, edge);
}

static uint64_t ref_fingerprint(const kb_msg *m)
{
    int64_t ts = m->ts_ms;
    uint64_t h = ref_fnv(0xcbf29ce484222325ULL, &ts, 8);
    h = ref_edges(h, m->key, m->key_len, 8);
    h = ref_edges(h, m->payload, m->len, 32);
    return h ? h : 1;
}

/* Issue 18: a position carries the fingerprint of the message before it
 * (the witness a later start checks, to see a topic created again). */
static void test_fingerprints(void)
{
    /* unchanged since positions were first stored with it, for keys and
     * payloads NULL, empty, short, at the edge and longer */
    static const char *const texts[] = {
        NULL, "", "k", "0123456789abcdef", "0123456789abcdefg",
        "{\"id\":1,\"user\":\"user-00001\",\"event\":\"page_view\",\"note\":\"xxxx\"}",
        "0123456789012345678901234567890123456789012345678901234567890123",
        "01234567890123456789012345678901234567890123456789012345678901234",
    };
    size_t nt = sizeof(texts) / sizeof(texts[0]);
    for (size_t i = 0; i < nt; i++)
        for (size_t j = 0; j < nt; j++) {
            kb_msg x = msg("t", 0, 10, texts[i], texts[j]);
            x.ts_ms = (int64_t)(i * 131 + j);
            CHECK(kb_fingerprint(&x) == ref_fingerprint(&x));
        }

    kb_msg a = msg("t", 0, 10, "k", "{\"id\":1}");
    kb_msg a_same = msg("u", 3, 99, "k", "{\"id\":1}");
    kb_msg other = msg("t", 0, 10, "k", "{\"id\":2}");
    kb_msg later = a;
    later.ts_ms = 1700000000000;
    kb_msg nokey = msg("t", 0, 10, NULL, "{\"id\":1}");
    /* the message's own bytes and time, not where it is */
    CHECK(kb_fingerprint(&a) == kb_fingerprint(&a_same));
    CHECK(kb_fingerprint(&a) != kb_fingerprint(&other));
    CHECK(kb_fingerprint(&a) != kb_fingerprint(&later));
    CHECK(kb_fingerprint(&a) != kb_fingerprint(&nokey));
    kb_msg tomb = msg("t", 0, 10, NULL, NULL);
    CHECK(kb_fingerprint(&tomb) != 0);

    kbatch b;
    kb_init(&b, 0);
    kb_msg m1 = msg("t", 0, 10, NULL, "{\"id\":1}");
    kb_msg m2 = msg("t", 0, 11, NULL, "{\"id\":2}");
    CHECK(kb_add(&b, &m1, 0, BIG) == KB_ADDED && kb_add(&b, &m2, 0, BIG) == KB_ADDED);
    CHECK(kb_note_position(&b, 1, "t", 1, 500) == 0);
    zx_frame_meta fm;
    CHECK(kb_meta(&b, &fm) == 0 && fm.npositions == 2);
    int64_t next = -1;
    /* from a message: 16 bytes, the last message's fingerprint */
    CHECK(fm.positions[0].value_len == 16);
    CHECK(kb_pos_decode(fm.positions[0].value, 16, &next) == 0 && next == 12);
    CHECK(kb_pos_fp(fm.positions[0].value, 16) == kb_fingerprint(&m2));
    /* a start: new position has no message before it: 8 bytes, none */
    CHECK(fm.positions[1].value_len == 8);
    CHECK(kb_pos_decode(fm.positions[1].value, 8, &next) == 0 && next == 500);
    CHECK(kb_pos_fp(fm.positions[1].value, 8) == 0);
    /* other lengths are not positions */
    CHECK(kb_pos_decode(fm.positions[0].value, 12, &next) == -1);
    CHECK(kb_pos_fp(fm.positions[0].value, 12) == 0);
    kb_free(&b);
}

/* kb_estimate bounds the encoded frame when one arena string is the value
 * of many cells (a message's key and timestamp on every row of its JSON
 * array: the fuzzer's crash-shared-key-over-estimate), with rejects, and
 * stays exact through a message taken back (KB_FULL). */
static void test_estimate(void)
{
    enum { KEY = 20000, ROWS = 40 };
    char *key = malloc(KEY + 1), *payload = json_rows_array(ROWS);
    memset(key, 'k', KEY);
    key[KEY] = 0;

    kbatch b;
    kb_init(&b, ALL_META);
    kb_msg m = msg("t", 0, 1, key, payload);
    m.ts_ms = 1764518400000LL;
    CHECK(kb_add(&b, &m, 0, BIG) == KB_ADDED);
    CHECK(b.rs.nrows == ROWS);
    size_t str, names;
    rowset_recount(&b.rs, &str, &names);
    CHECK(b.rs.str_bytes == str && b.rs.name_bytes == names);
    CHECK(str >= (size_t)ROWS * KEY);
    kb_msg bad = msg("t", 0, 2, key, "not json");
    CHECK(kb_add(&b, &bad, 0, BIG) == KB_ADDED);
    CHECK(b.nrej == 1 && b.rej_bytes >= KEY);

    /* a message that does not fit: everything as it was */
    size_t est = kb_estimate(&b), rej_bytes = b.rej_bytes;
    kb_msg more = msg("t", 0, 3, key, payload);
    CHECK(kb_add(&b, &more, 0, est + 1000) == KB_FULL);
    CHECK(kb_estimate(&b) == est && b.rej_bytes == rej_bytes);
    rowset_recount(&b.rs, &str, &names);
    CHECK(b.rs.str_bytes == str && b.rs.name_bytes == names);

    zx_frame_meta fm;
    CHECK(kb_meta(&b, &fm) == 0);
    fm.pipeline = "p";
    fm.table = "t";
    zx_buf fb;
    zx_buf_init(&fb);
    CHECK(zx_frame_encode(&fm, &b.rs, &fb) == 0);
    CHECK(fb.len > (size_t)ROWS * KEY && fb.len <= kb_estimate(&b));

    /* an aborted row and a reset give their bytes back */
    zx_rowset_begin_row(&b.rs);
    zx_value t = {.type = ZX_T_TEXT, .len = 3, .s = "abc"};
    zx_rowset_add(&b.rs, 0, &t);
    CHECK(b.rs.str_bytes == str + 3);
    zx_rowset_abort_row(&b.rs);
    CHECK(b.rs.str_bytes == str);
    kb_reset(&b);
    CHECK(b.rs.str_bytes == 0 && b.rs.name_bytes == 0 && b.rej_bytes == 0);
    zx_buf_free(&fb);
    kb_free(&b);
    free(key);
    free(payload);
}

int main(void)
{
    test_add_to_rows();
    test_truncate();
    test_rows_and_metadata();
    test_rejects();
    test_limits();
    test_positions();
    test_fenced_positions();
    test_reasons();
    test_fingerprints();
    test_estimate();
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures != 0;
}
