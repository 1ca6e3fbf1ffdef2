/*
 * fuzz_debezium.c — fuzz target for the change-event decoder
 * (workers/sources/debezium/debezium.h): zx_dbz_add on a Kafka message (key and
 * value), and zx_dbz_add_body on an HTTP push body, in both modes.
 *
 * Input: byte 0 picks the path (bit 0: http body, bit 1: mode latest,
 * bit 2: ndjson body, bit 3: a second message after the first), bytes 1-2
 * the key's length (big-endian, cut to what is left); then the key, then
 * the value (an empty value is a tombstone).  Seeds: corpus/debezium/,
 * made from tests/corpus/debezium by make_dbz_corpus.py.
 * Checks: every change appended makes a row with an operation, names are
 * normalised (the writer trusts them), a reject has a reason, the frame
 * taken back after a failure is as it was, and the frame encodes (no NUL
 * in a name, no value the codec refuses).  And, for a Kafka message, the
 * differential check of the fast path (debezium_fast.c): the message goes
 * through it (jansson when it declines) and through the jansson path
 * alone, on frames of their own, and anything that differs aborts
 * (dbz_oracle.h: answers, reasons, notes, frames, declared types, cells).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/frame.h"
#include "tests/fuzz/dbz_oracle.h"
#include "tests/fuzz/fuzz_check.h"
#include "workers/sources/debezium/debezium.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* With ZX_FUZZ_STATS set: how many Kafka messages the fast path answered,
 * printed at exit (what a run of the differential check covered). */
static unsigned long n_msgs, n_fast;
static void print_stats(void)
{
    fprintf(stderr, "fuzz_debezium: %lu Kafka messages, %lu answered by the fast path\n",
            n_msgs, n_fast);
}

static void check_names(const zx_dbz_frame *f)
{
    const zx_rowset *rs = f->rs;
    for (uint32_t c = 0; c < rs->ncols; c++) {
        const char *n = rs->cols[c].name;
        fuzz_check(strlen(n) == rs->cols[c].name_len && n[0], "column name length");
    }
    if (f->changes) {
        size_t n = strlen(f->table);
        fuzz_check(n >= 1 && n <= ZX_COLNAME_MAX, "table name length");
        fuzz_check(strspn(f->table, "abcdefghijklmnopqrstuvwxyz0123456789_") == n,
                   "table name normalised");
        fuzz_check(f->nkeys <= ZX_FRAME_MAX_KEY_COLUMNS, "key count");
    }
    for (uint32_t r = 0; r < rs->nrows; r++) {
        int op = 0;
        for (uint64_t i = rs->row_start[r]; i < rs->row_start[r + 1]; i++)
            op |= !strcmp(rs->cols[rs->cells[i].col].name, ZX_CH_OP);
        fuzz_check(op, "a change without _zx_op");
    }
}

static void encode(zx_dbz_frame *f, const zx_dbz_rejects *rej)
{
    zx_frame_meta m = { .kind = f->changes ? ZX_FRAME_CHANGES : ZX_FRAME_ROWS,
                        .table = f->changes ? f->table : "t", .key_cols = f->keys,
                        .nkey_cols = f->nkeys };
    if (rej) {
        m.rejects = rej->n ? rej->v : NULL;
        m.nrejects = rej->n;
    }
    fuzz_check(zx_dbz_frame_types(f, &m.col_types, &m.ncol_types) == 0, "types");
    zx_buf b;
    zx_buf_init(&b);
    fuzz_check(zx_frame_encode(&m, f->rs, &b) == 0, "the frame encodes");
    zx_frame_meta dm;
    zx_rowset back;
    zx_rowset_init(&back);
    char err[256];
    fuzz_check(zx_frame_decode(b.p, b.len, &dm, &back, err, sizeof(err)) == 0,
               "the frame decodes");
    fuzz_check(back.nrows == f->rs->nrows, "rows survive the frame");
    zx_rowset_free(&back);
    zx_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    unsigned flags = data[0];
    size_t klen = (size_t)data[1] << 8 | data[2];
    data += 3;
    size -= 3;
    if (klen > size)
        klen = size;
    /* copies, so that reading past them is caught */
    char *key = klen ? malloc(klen) : NULL, *val = size - klen ? malloc(size - klen) : NULL;
    if (klen)
        memcpy(key, data, klen);
    if (size - klen)
        memcpy(val, data + klen, size - klen);
    size_t vlen = size - klen;

    static const char *const keys[] = { "id", "sku" };
    zx_dbz_conf c = { .mode = (flags & 2) ? ZX_DBZ_LATEST : ZX_DBZ_DEBEZIUM,
                      .table = (flags & 16) ? "m_{source.table}" : "{topic}",
                      .key_columns = keys, .nkey_columns = (flags & 32) ? 2 : 1,
                      .table_max = (flags & 64) ? 54 : 0 };
    zx_rowset rs;
    zx_rowset_init(&rs);
    zx_dbz_frame f;
    zx_dbz_frame_init(&f, &rs);
    char why[400];
    unsigned notes = 0;
    if (flags & 1) {
        zx_dbz_rejects rej = { 0 };
        char msg[300];
        long n = zx_dbz_add_body(&c, &f, val, vlen, (flags & 4) != 0, "rid", &rej, &notes, msg,
                                 sizeof(msg));
        if (n < 0) {
            fuzz_check(msg[0] != '\0', "a refused body says why");
            fuzz_check(rs.nrows == 0 && rej.n == 0 && f.changes == 0, "a refused body leaves nothing");
        } else {
            fuzz_check((uint64_t)n == f.changes && rs.nrows == f.changes, "changes counted");
            for (size_t i = 0; i < rej.n; i++)
                fuzz_check(rej.v[i].reason && rej.v[i].reason[0], "a reject has a reason");
            check_names(&f);
            encode(&f, &rej);
        }
        free(rej.v);
    } else {
        /* the fast path against the reference, on frames of their own */
        dbz_side a, b;
        dbz_side_init(&a, &c, (flags & 16) != 0, (flags & 128) ? 1 : 0);
        dbz_side_init(&b, &c, (flags & 16) != 0, (flags & 128) ? 1 : 0);
        for (int round = 0; round < ((flags & 8) ? 2 : 1); round++) {
            zx_dbz_msg m = { .topic = "db.inv.t", .key = key, .key_len = klen,
                             .value = vlen ? val : NULL, .len = vlen, .position = "p" };
            int took = 0;
            const char *d = dbz_oracle_step(&a, &b, &m, &took);
            if (!n_msgs && getenv("ZX_FUZZ_STATS"))
                atexit(print_stats);
            n_msgs++;
            n_fast += took;
            if (d) {
                fprintf(stderr, "fast path differs from jansson: %s (%s | %s)\n", d, a.why,
                        b.why);
                fuzz_check(0, "the fast path answers as jansson does");
            }
        }
        dbz_side_free(&a);
        dbz_side_free(&b);
        for (int round = 0; round < ((flags & 8) ? 2 : 1); round++) {
            zx_dbz_msg m = { .topic = "db.inv.t", .key = key, .key_len = klen,
                             .value = vlen ? val : NULL, .len = vlen, .position = "p" };
            uint32_t rows0 = rs.nrows;
            uint64_t ch0 = f.changes;
            int rc = zx_dbz_add(&c, &f, &m, why, sizeof(why), &notes);
            if (rc == ZX_DBZ_REJECT)
                fuzz_check(why[0] != '\0', "a reject has a reason");
            if (rc != ZX_DBZ_ADDED)
                fuzz_check(rs.nrows == rows0 && f.changes == ch0, "nothing added");
            else
                fuzz_check(rs.nrows > rows0 && f.changes > ch0, "added");
            fuzz_check(rc != ZX_DBZ_OTHER || ch0 > 0, "OTHER only after a change");
            check_names(&f);
        }
        encode(&f, NULL);
    }
    zx_dbz_frame_free(&f);
    zx_rowset_free(&rs);
    free(key);
    free(val);
    return 0;
}
