/*
 * fuzz_frame.c — fuzz target for the worker -> writer frame decoder
 * (proto/frame.h: zx_frame_decode, and through it proto/frame_read.c).
 *
 * Input: the whole input is one frame.  Beyond "no crash, no read outside
 * the buffer" it checks that what the decoder accepts survives the codec:
 * encode(decode(x)) decodes again to the same metadata, columns and rows,
 * and encoding that second result gives the same bytes (the encoder is a
 * function of what was decoded).  The input is freed right after the first
 * decode, so that ASan catches anything decoded that still points into it
 * (everything must be copied into the rowset's arena).  Positions and
 * rejects must come out as frame.h describes them (parts non-empty, bytes
 * present when their length is not 0, a NULL key only as nil).  On a decode
 * failure the message must be set and NUL-terminated, and the outputs
 * reset.
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

static int same_bytes(const void *a, size_t alen, const void *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* What a successful decode promises about positions and rejects. */
static void check_decoded(const zx_frame_meta *m)
{
    fuzz_check(m->version == ZX_FRAME_VERSION &&
               (m->kind == ZX_FRAME_ROWS || m->kind == ZX_FRAME_CHANGES ||
                m->kind == ZX_FRAME_HASHES), "version or kind");
    fuzz_check(m->kind == ZX_FRAME_CHANGES || (!m->ncol_types && !m->history),
               "changes metadata in a rows or row-hashes frame");
    /* "kc" in a rows frame is allowed: a mirror's initial copy (proto/frame.h) */
    fuzz_check(m->nkey_cols <= ZX_FRAME_MAX_KEY_COLUMNS, "key columns over the limit");
    for (size_t i = 0; i < m->nkey_cols; i++)
        fuzz_check(m->key_cols[i] != NULL, "key column NULL");
    for (size_t i = 0; i < m->ncol_types; i++)
        fuzz_check(m->col_types[i].column && m->col_types[i].type, "column type NULL");
    fuzz_check((m->positions == NULL) == (m->npositions == 0), "positions NULL iff none");
    fuzz_check(m->npositions <= ZX_FRAME_MAX_POSITIONS, "positions over the limit");
    for (size_t i = 0; i < m->npositions; i++) {
        const zx_frame_pos *p = &m->positions[i];
        fuzz_check(p->part && p->part[0], "position part empty");
        fuzz_check(p->value || p->value_len == 0, "position value NULL");
        fuzz_check(p->from >= -1 && p->first >= -1 && (p->fenced || (p->from == -1 &&
                   p->first == -1)), "position fence out of range");
    }
    fuzz_check((m->rejects == NULL) == (m->nrejects == 0), "rejects NULL iff none");
    fuzz_check(m->nrejects <= ZX_FRAME_MAX_REJECTS, "rejects over the limit");
    for (size_t i = 0; i < m->nrejects; i++) {
        const zx_frame_reject *j = &m->rejects[i];
        fuzz_check(j->reason && j->position, "reject reason or position NULL");
        fuzz_check(j->raw || j->raw_len == 0, "reject raw NULL");
        fuzz_check(j->key || j->key_len == 0, "reject key NULL with a length");
    }
}

static void same_meta(const zx_frame_meta *a, const zx_frame_meta *b)
{
    fuzz_check(a->version == b->version && a->kind == b->kind, "version or kind");
    fuzz_check(same_str(a->pipeline, b->pipeline), "pipeline");
    fuzz_check(same_str(a->table, b->table), "table");
    fuzz_check(a->ingested_at_us == b->ingested_at_us, "ingested_at_us");
    fuzz_check(same_str(a->batch_id, b->batch_id), "batch_id");
    fuzz_check(same_str(a->dedup_key, b->dedup_key), "dedup_key");
    fuzz_check(a->dedup_hash == b->dedup_hash, "dedup_hash");
    fuzz_check(a->metadata == b->metadata, "metadata bits");
    fuzz_check(a->accepted == b->accepted, "accepted");
    fuzz_check(a->npositions == b->npositions, "position count");
    for (size_t i = 0; i < a->npositions; i++) {
        const zx_frame_pos *x = &a->positions[i], *y = &b->positions[i];
        fuzz_check(same_str(x->part, y->part), "position part");
        fuzz_check(same_bytes(x->value, x->value_len, y->value, y->value_len),
                   "position value");
        fuzz_check(!x->fenced == !y->fenced && x->from == y->from && x->first == y->first,
                   "position fence");
    }
    fuzz_check(a->nkey_cols == b->nkey_cols && a->ncol_types == b->ncol_types &&
               a->history == b->history, "changes metadata");
    for (size_t i = 0; i < a->nkey_cols; i++)
        fuzz_check(same_str(a->key_cols[i], b->key_cols[i]), "key column");
    for (size_t i = 0; i < a->ncol_types; i++)
        fuzz_check(same_str(a->col_types[i].column, b->col_types[i].column) &&
                   same_str(a->col_types[i].type, b->col_types[i].type), "column type");
    fuzz_check(a->nrejects == b->nrejects, "reject count");
    for (size_t i = 0; i < a->nrejects; i++) {
        const zx_frame_reject *x = &a->rejects[i], *y = &b->rejects[i];
        fuzz_check(same_str(x->reason, y->reason), "reject reason");
        fuzz_check(same_bytes(x->raw, x->raw_len, y->raw, y->raw_len), "reject raw");
        fuzz_check((x->key == NULL) == (y->key == NULL), "reject key presence");
        fuzz_check(same_bytes(x->key, x->key_len, y->key, y->key_len), "reject key");
        fuzz_check(same_str(x->position, y->position), "reject position");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zx_rowset rs1, rs2;
    zx_frame_meta m1, m2;
    zx_buf b1, b2;
    char err[160];

    zx_rowset_init(&rs1);
    zx_rowset_init(&rs2);
    zx_buf_init(&b1);
    zx_buf_init(&b2);
    /* exact-size copy: ASan sees any read past the end */
    uint8_t *buf = malloc(size ? size : 1);
    if (size)
        memcpy(buf, data, size);
    memset(err, 'x', sizeof(err));
    int rc = zx_frame_decode(buf, size, &m1, &rs1, err, sizeof(err));
    /* nothing decoded may point into the input: overwrite and free it */
    if (size)
        memset(buf, 0xa5, size);
    free(buf);
    if (rc != 0) {
        fuzz_check(memchr(err, '\0', sizeof(err)) != NULL, "message not terminated");
        fuzz_check(err[0] != '\0', "failure without a message");
        fuzz_check(rs1.ncols == 0 && rs1.nrows == 0, "rowset not reset on failure");
        fuzz_check(m1.pipeline == NULL && m1.positions == NULL && m1.npositions == 0 &&
                   m1.rejects == NULL && m1.nrejects == 0, "metadata not zeroed on failure");
        goto done;
    }
    fuzz_check(m1.pipeline && m1.table, "pipeline or table NULL");
    check_decoded(&m1);
    for (uint64_t i = 0; i < rs1.ncells; i++) {
        const zx_cell *c = &rs1.cells[i];
        fuzz_check(c->col < rs1.ncols, "cell column");
        fuzz_check(c->v.type > ZX_T_NULL && c->v.type < ZX_T__COUNT, "cell type");
        if (c->v.type == ZX_T_TEXT || c->v.type == ZX_T_JSON || c->v.type == ZX_T_TIMESTAMP)
            fuzz_check(c->v.s && c->v.s[c->v.len] == '\0', "string not terminated");
    }
    /* A decoded frame must encode, and decode back to the same thing. */
    fuzz_check(zx_frame_encode(&m1, &rs1, &b1) == 0, "cannot encode a decoded frame");
    if (zx_frame_decode(b1.p, b1.len, &m2, &rs2, err, sizeof(err)) != 0) {
        fprintf(stderr, "re-decode: %s\n", err);
        fuzz_check(0, "cannot decode the re-encoded frame");
    }
    same_meta(&m1, &m2);
    fuzz_same_rows(&rs1, &rs2);
    fuzz_check(zx_frame_encode(&m2, &rs2, &b2) == 0, "cannot encode twice");
    fuzz_check(b1.len == b2.len && memcmp(b1.p, b2.p, b1.len) == 0,
               "encoding is not stable");
done:
    zx_buf_free(&b1);
    zx_buf_free(&b2);
    zx_rowset_free(&rs1);
    zx_rowset_free(&rs2);
    return 0;
}
