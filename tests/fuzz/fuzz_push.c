/*
 * fuzz_push.c — fuzz target for the gateway <-> stream worker records
 * (proto/push.h: zx_push_req_parse, zx_push_rep_parse) and for what the
 * worker does with an accepted request record (workers/sources/http/http_push.c):
 * parse the body with the fast JSON parser, fall back to the jansson one,
 * encode the rows into a frame (proto/frame.h).
 *
 * Input: byte 0 bit 0 picks the record (0 request, 1 reply); the rest is the
 * record, copied to an 8-byte aligned buffer of its exact size.  Checks: a
 * record that parses has every view pointer and length inside the record
 * (and rewriting it with zx_push_req_write gives the same bytes); the frame
 * made from its rows decodes back to the same rows and metadata.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds: corpus/push/.
 * Must never be linked into zx.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_fast.h"
#include "common/json_rows.h"
#include "proto/frame.h"
#include "proto/push.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const void *p, size_t n, const void *rec, size_t len)
{
    const char *s = p, *b = rec;
    return s >= b && s <= b + len && n <= (size_t)(b + len - s);
}

/* The worker's path for an accepted request: rows -> frame -> rows. */
static void worker_path(const zx_push_view *v)
{
    const zx_push_req *h = v->h;
    zx_body_format fmt = (h->flags & ZX_PUSH_NDJSON) ? ZX_BODY_NDJSON : ZX_BODY_JSON;
    zx_rowset rs, back;
    zx_json_err jerr;
    zx_buf fb;
    zx_frame_meta m = {0}, m2;
    char rid[ZX_PUSH_RID_MAX + 1], idem[ZX_PUSH_IDEM_MAX + 1], err[160];

    zx_rowset_init(&rs);
    zx_rowset_init(&back);
    zx_buf_init(&fb);
    int n = zx_json_fast_parse(v->body, h->body_len, fmt, &rs);
    if (n < 0) {
        zx_rowset_reset(&rs);
        n = zx_json_rows_parse(v->body, h->body_len, fmt, &rs, &jerr);
        if (n < 0)
            fuzz_check(jerr.msg[0] != '\0', "JSON error without a message");
    }
    if (n <= 0)
        goto done;
    fuzz_check((uint32_t)n == rs.nrows, "row count");
    memcpy(rid, v->rid, h->rid_len);
    rid[h->rid_len] = '\0';
    m.kind = ZX_FRAME_ROWS;
    m.pipeline = "fuzz";
    m.table = "t";
    m.ingested_at_us = h->received_us;
    m.batch_id = memchr(rid, '\0', h->rid_len) ? NULL : rid;
    if (v->idem && !memchr(v->idem, '\0', h->idem_len)) {
        memcpy(idem, v->idem, h->idem_len);
        idem[h->idem_len] = '\0';
        m.dedup_key = idem;
        m.dedup_hash = h->req_id;
    }
    m.metadata = h->flags & 3;
    m.accepted = (uint64_t)n;
    fuzz_check(zx_frame_encode(&m, &rs, &fb) == 0, "cannot encode the rows");
    if (zx_frame_decode(fb.p, fb.len, &m2, &back, err, sizeof(err)) != 0) {
        fprintf(stderr, "decode: %s\n", err);
        fuzz_check(0, "the writer cannot decode the worker's frame");
    }
    fuzz_check(m2.accepted == m.accepted && m2.ingested_at_us == m.ingested_at_us,
               "frame metadata");
    fuzz_same_rows(&rs, &back);
done:
    zx_buf_free(&fb);
    zx_rowset_free(&rs);
    zx_rowset_free(&back);
}

static void request(const void *rec, size_t len)
{
    zx_push_view v;
    if (zx_push_req_parse(rec, len, &v) != 0)
        return;
    const zx_push_req *h = v.h;
    fuzz_check((const void *)h == rec, "header pointer");
    fuzz_check(h->idem_len <= ZX_PUSH_IDEM_MAX && h->rid_len <= ZX_PUSH_RID_MAX,
               "key or id length");
    fuzz_check((v.idem == NULL) == (h->idem_len == 0), "idem presence");
    if (v.idem)
        fuzz_check(inside(v.idem, h->idem_len, rec, len), "idem outside the record");
    fuzz_check(inside(v.rid, h->rid_len, rec, len), "request id outside the record");
    fuzz_check(inside(v.body, h->body_len, rec, len), "body outside the record");
    fuzz_check(v.body + h->body_len == (const char *)rec + len, "bytes after the body");
    /* the writer of the record agrees with its reader */
    char *again = malloc(len);
    fuzz_check(again != NULL, "out of memory");
    zx_push_req_write(again, h->flags, h->req_id, h->received_us, h->deadline_mono_us,
                      v.idem, h->idem_len, v.rid, h->rid_len, v.body, h->body_len);
    zx_push_view v2;
    fuzz_check(zx_push_req_parse(again, len, &v2) == 0, "rewritten record refused");
    fuzz_check(v2.h->body_len == h->body_len && v2.h->req_id == h->req_id &&
               memcmp(v2.body, v.body, h->body_len) == 0, "rewritten record differs");
    free(again);
    worker_path(&v);
}

static void reply(const void *rec, size_t len)
{
    const zx_push_rep *h = NULL;
    const char *body = NULL;
    if (zx_push_rep_parse(rec, len, &h, &body) != 0)
        return;
    fuzz_check((const void *)h == rec, "header pointer");
    fuzz_check(inside(body, h->body_len, rec, len), "reply body outside the record");
    fuzz_check(body + h->body_len == (const char *)rec + len, "bytes after the reply");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t n = size - 1;
    void *rec = malloc(n ? n : 1); /* malloc: aligned for any record */
    fuzz_check(rec != NULL, "out of memory");
    if (n)
        memcpy(rec, data + 1, n);
    if (data[0] & 1)
        reply(rec, n);
    else
        request(rec, n);
    free(rec);
    return 0;
}
