/*
 * fuzz_frame.c — fuzz target for the worker -> writer frame decoder
 * (proto/frame.h: zx_frame_decode, and through it proto/frame_read.c).
 *
 * Input: the whole input is one frame.  Beyond "no crash, no read outside
 * the buffer" it checks that what the decoder accepts survives the codec:
 * encode(decode(x)) decodes again to the same metadata, columns and rows,
 * and encoding that second result gives the same bytes (the encoder is a
 * function of what was decoded).  On a decode failure the message must be
 * set and NUL-terminated, and the outputs reset.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds: corpus/frame/.
 * Must never be linked into zx.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/frame.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_str(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static void same_meta(const zx_frame_meta *a, const zx_frame_meta *b)
{
    fuzz_check(a->version == b->version && a->kind == b->kind, "version or kind");
    fuzz_check(same_str(a->pipeline, b->pipeline), "pipeline");
    fuzz_check(same_str(a->table, b->table), "table");
    fuzz_check(a->ingested_at_us == b->ingested_at_us, "ingested_at_us");
    fuzz_check(same_str(a->request_id, b->request_id), "request_id");
    fuzz_check(same_str(a->idem_key, b->idem_key), "idem_key");
    fuzz_check(a->idem_hash == b->idem_hash, "idem_hash");
    fuzz_check(a->metadata == b->metadata, "metadata bits");
    fuzz_check(a->accepted == b->accepted, "accepted");
    fuzz_check((a->position == NULL) == (b->position == NULL), "position presence");
    fuzz_check(a->position_len == b->position_len, "position length");
    if (a->position && a->position_len)
        fuzz_check(memcmp(a->position, b->position, a->position_len) == 0, "position bytes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zx_rowset rs1, rs2;
    zx_frame_meta m1, m2;
    zx_frame_buf b1, b2;
    char err[160];

    zx_rowset_init(&rs1);
    zx_rowset_init(&rs2);
    zx_frame_buf_init(&b1);
    zx_frame_buf_init(&b2);
    /* exact-size copy: ASan sees any read past the end */
    uint8_t *buf = malloc(size ? size : 1);
    if (size)
        memcpy(buf, data, size);
    memset(err, 'x', sizeof(err));
    if (zx_frame_decode(buf, size, &m1, &rs1, err, sizeof(err)) != 0) {
        fuzz_check(memchr(err, '\0', sizeof(err)) != NULL, "message not terminated");
        fuzz_check(err[0] != '\0', "failure without a message");
        fuzz_check(rs1.ncols == 0 && rs1.nrows == 0, "rowset not reset on failure");
        goto done;
    }
    fuzz_check(m1.pipeline && m1.table, "pipeline or table NULL");
    for (uint64_t i = 0; i < rs1.ncells; i++) {
        const zx_cell *c = &rs1.cells[i];
        fuzz_check(c->col < rs1.ncols, "cell column");
        fuzz_check(c->v.type > ZX_T_NULL && c->v.type < ZX_T__COUNT, "cell type");
        if (c->v.type == ZX_T_TEXT || c->v.type == ZX_T_JSON || c->v.type == ZX_T_TIMESTAMP)
            fuzz_check(c->v.s && c->v.s[c->v.len] == '\0', "string not terminated");
    }
    /* A decoded frame must encode, and decode back to the same thing. */
    fuzz_check(zx_frame_encode(&m1, &rs1, &b1) == 0, "cannot encode a decoded frame");
    if (zx_frame_decode(b1.data, b1.len, &m2, &rs2, err, sizeof(err)) != 0) {
        fprintf(stderr, "re-decode: %s\n", err);
        fuzz_check(0, "cannot decode the re-encoded frame");
    }
    same_meta(&m1, &m2);
    fuzz_same_rows(&rs1, &rs2);
    fuzz_check(zx_frame_encode(&m2, &rs2, &b2) == 0, "cannot encode twice");
    fuzz_check(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0,
               "encoding is not stable");
done:
    free(buf);
    zx_frame_buf_free(&b1);
    zx_frame_buf_free(&b2);
    zx_rowset_free(&rs1);
    zx_rowset_free(&rs2);
    return 0;
}
