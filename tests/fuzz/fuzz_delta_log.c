/*
 * fuzz_delta_log.c — fuzz target for what zx reads of a Delta table that
 * other writers share (workers/destinations/delta/delta_log.c): a commit
 * of the log (JSON lines of actions) replayed onto a table, then the
 * result's columns merged into the schema it left; and the copy of rows
 * zx keeps beside its data files (workers/destinations/lake/lake_side.c),
 * a zstd stream of rows frames that sits in a folder or a bucket others
 * can write to.
 *
 * Input: any bytes.  The first byte picks the reader (even: the log; odd:
 * the sidecar), the rest is its input, given without a NUL after it.
 * Each answers 0 or -1 (with a message) and never reads past its input;
 * after a replay every live file has a path.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/delta_log/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/destinations/delta/delta_log.h"
#include "workers/destinations/lake/lake_side.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_rows(void *ctx, const zx_rowset *rs)
{
    *(uint64_t *)ctx += rs->nrows;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 262144)
        return 0;
    char *x = malloc(size);
    if (!x)
        return 0;
    memcpy(x, data + 1, size - 1);
    char err[512];
    err[0] = 0;
    if (!(data[0] & 1)) {
        zx_delta_table t;
        memset(&t, 0, sizeof(t));
        t.version = -1;
        int r = zx_delta_apply(&t, 0, x, size - 1, "fuzz", err, sizeof(err));
        fuzz_check(r == 0 || r == -1, "apply: neither 0 nor -1");
        fuzz_check(r == 0 || err[0], "apply: -1 without a message");
        for (size_t i = 0; i < t.nfiles; i++)
            fuzz_check(t.files[i].path && t.files[i].add_json, "apply: a file without path");
        if (r == 0) {
            zx_dcol cols[3] = {{"id", ZX_DT_INT64, 0, 0}, {"name", ZX_DT_TEXT, 0, 0},
                               {"amount", ZX_DT_DECIMAL, 12, 2}};
            size_t added = 0;
            char *s = zx_delta_schema_merge(&t, cols, 3, &added, "fuzz", err, sizeof(err));
            fuzz_check(s || err[0], "merge: NULL without a message");
            fuzz_check(added <= 3, "merge: added more than given");
            free(s);
        }
        zx_delta_table_free(&t);
    } else {
        uint64_t rows = 0;
        int r = zx_side_decode(x, size - 1, count_rows, &rows, err, sizeof(err));
        fuzz_check(r == 0 || r == -1, "side: neither 0 nor -1");
        fuzz_check(r == 0 || err[0], "side: -1 without a message");
    }
    free(x);
    return 0;
}
