/*
 * batch_testlib.h — what the unit tests of the stream batches
 * (test_kafka_batch.c, test_kinesis_batch.c) share to check a batch's
 * frame size estimate: a JSON array payload of many small rows, and the
 * rowset's string counters recounted from its cells.
 *
 * Header-only (static functions); no state of its own.
 */
#ifndef ZX_TESTS_BATCH_TESTLIB_H
#define ZX_TESTS_BATCH_TESTLIB_H

#include "common/rowset.h"

#include <stdio.h>
#include <stdlib.h>

/* "[{"n":0},{"n":1},...]" of rows objects, NUL-terminated; malloc'd, the
 * caller frees it.  Aborts when out of memory (a test). */
static inline char *json_rows_array(int rows)
{
    char *p = malloc((size_t)rows * 16 + 4);
    if (!p)
        abort();
    size_t n = 0;
    p[n++] = '[';
    for (int i = 0; i < rows; i++)
        n += (size_t)sprintf(p + n, "%s{\"n\":%d}", i ? "," : "", i);
    p[n++] = ']';
    p[n] = 0;
    return p;
}

/* The string bytes of rs's cells (once per cell, as an encoder writes
 * them) and of its column names, counted again: they must equal
 * rs->str_bytes and rs->name_bytes. */
static inline void rowset_recount(const zx_rowset *rs, size_t *str, size_t *names)
{
    *str = *names = 0;
    for (uint64_t i = 0; i < rs->ncells; i++)
        *str += zx_value_str_bytes(&rs->cells[i].v);
    for (uint32_t c = 0; c < rs->ncols; c++)
        *names += rs->cols[c].name_len;
}

#endif
