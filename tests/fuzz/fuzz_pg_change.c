/*
 * fuzz_pg_change.c — fuzz target for what the Postgres CDC source makes of
 * the replication stream: pgoutput messages (pgoutput.c, protocol 1, with
 * a relation cache) turned into changes-frame rows (pg_cdc_change.c, whose
 * values go through pg_values.c), then encoded as a changes frame and
 * decoded again (proto/frame.c), as the worker and the writer do.
 *
 * Input: the format of fuzz_pgoutput.c (byte 0: bit 2 = raw pgoutput
 * messages, else CopyData payloads; the other bits are ignored), then
 * payloads, each a 2-byte big-endian length and that many bytes.  Each
 * payload is copied to a heap block of exactly its length.
 *
 * Checks: every Insert, Update and Delete of a described relation becomes
 * exactly one row (a Truncate one row per relation), or a failure that
 * leaves the rowset as it was; the rowset encodes as a changes frame (no
 * column name with a NUL, no type outside zx_type) and decodes to the
 * same number of rows.  Leaks are found by ASan (libFuzzer build).
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/pg_change/ (the protocol-1 seeds of corpus/pgoutput/).  Must
 * never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/frame.h"
#include "tests/fuzz/fuzz_check.h"
#include "workers/sources/postgres/pg_cdc_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NTABLES 4

static pgo_decoder dec;

static void keys_of(pgcdc_table *t, const pgo_rel *rel)
{
    for (uint32_t k = 0; k < t->nkeys; k++)
        free(t->keys[k]);
    free(t->keys);
    t->keys = calloc(rel->ncols + 1u, sizeof(*t->keys));
    t->nkeys = 0;
    fuzz_check(t->keys != NULL, "out of memory");
    for (uint16_t i = 0; i < rel->ncols; i++)
        if (rel->cols[i].flags & PGO_COL_KEY)
            fuzz_check((t->keys[t->nkeys++] = strdup(rel->cols[i].name)) != NULL,
                       "out of memory");
}

/* Encode t's rows as a changes frame, decode it, and empty t->rs. */
static void round_trip(pgcdc_table *t)
{
    zx_frame_meta m = { .kind = ZX_FRAME_CHANGES, .pipeline = "p", .table = "t",
                        .key_cols = (const char *const *)t->keys, .nkey_cols = t->nkeys,
                        .history = 1 };
    if (m.nkey_cols > ZX_FRAME_MAX_KEY_COLUMNS)
        m.nkey_cols = ZX_FRAME_MAX_KEY_COLUMNS;
    zx_buf fb;
    zx_buf_init(&fb);
    fuzz_check(zx_frame_encode(&m, &t->rs, &fb) == 0, "a changes frame did not encode");
    zx_frame_meta d;
    zx_rowset back;
    zx_rowset_init(&back);
    char err[256];
    fuzz_check(zx_frame_decode(fb.p, fb.len, &d, &back, err, sizeof(err)) == 0,
               "a changes frame did not decode");
    fuzz_check(back.nrows == t->rs.nrows && d.kind == ZX_FRAME_CHANGES,
               "the decoded frame has another row count or kind");
    zx_rowset_free(&back);
    zx_buf_free(&fb);
    zx_rowset_reset(&t->rs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 18)
        return 0;
    int raw = (data[0] & 4) != 0;
    pgo_cache *cache = pgo_cache_create(64, 1 << 20);
    if (!cache)
        return 0;
    pgo_decoder_init(&dec, 1, cache);
    pgcdc_table t[NTABLES];
    memset(t, 0, sizeof(t));
    for (int i = 0; i < NTABLES; i++) {
        zx_rowset_init(&t[i].rs);
        t[i].qname = "public.t";
    }
    size_t at = 1;
    while (at + 2 <= size) {
        size_t n = (size_t)data[at] << 8 | data[at + 1];
        at += 2;
        if (n > size - at)
            n = size - at;
        uint8_t *p = malloc(n ? n : 1);
        if (!p)
            break;
        memcpy(p, data + at, n);
        at += n;
        const uint8_t *msg = p;
        size_t len = n;
        if (!raw) {
            pgo_frame f;
            if (pgo_frame_decode(&dec, p, n, &f) < 0 || f.type != PGO_XLOGDATA) {
                free(p);
                continue;
            }
            msg = f.data;
            len = f.len;
        }
        pgo_msg m;
        if (pgo_decode(&dec, msg, len, &m) == 0) {
            uint32_t relid = m.type == PGO_TRUNCATE ? 0 : m.rel ? m.rel->relid : 0;
            pgcdc_table *x = relid ? &t[relid % NTABLES] : NULL;
            if (m.type == PGO_RELATION && x) {
                keys_of(x, m.rel);
            } else if ((m.type == PGO_INSERT || m.type == PGO_UPDATE ||
                        m.type == PGO_DELETE) && x) {
                if (!x->keys)
                    keys_of(x, m.rel);
                uint32_t before = x->rs.nrows;
                char err[256];
                int rc = pgcdc_change_row(x, &m, 0x16B374D848ull, 1764540000000000ll, 7, err,
                                          sizeof(err));
                fuzz_check(rc == 0 ? x->rs.nrows == before + 1 : x->rs.nrows == before,
                           "a change made other than one row");
            } else if (m.type == PGO_TRUNCATE) {
                for (uint32_t i = 0; i < m.u.truncate.nrels; i++) {
                    pgcdc_table *y = &t[pgo_truncate_relid(&m, i) % NTABLES];
                    uint32_t before = y->rs.nrows;
                    if (pgcdc_truncate_row(y, 1, 0, 0) == 0)
                        fuzz_check(y->rs.nrows == before + 1, "a truncate made no row");
                }
            }
            if (x && x->rs.nrows >= 64)
                round_trip(x);
        }
        free(p);
    }
    for (int i = 0; i < NTABLES; i++) {
        if (t[i].rs.nrows)
            round_trip(&t[i]);
        for (uint32_t k = 0; k < t[i].nkeys; k++)
            free(t[i].keys[k]);
        free(t[i].keys);
        zx_rowset_free(&t[i].rs);
    }
    pgo_cache_destroy(cache);
    return 0;
}
