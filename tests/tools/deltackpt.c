/*
 * deltackpt — a test tool: checkpoint a Delta table in a folder with
 * workers/destinations/delta/delta_checkpoint.h.
 *
 *   deltackpt TABLE_DIR
 *
 * Reads the table's log (zx_delta_read: every commit from version 0),
 * writes `_delta_log/<version>.checkpoint.parquet` at its last version,
 * then `_delta_log/_last_checkpoint`.  Prints one JSON line: version,
 * rows, bytes.  Exit status 0, or 1 with a message on stderr.  Test use
 * only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "workers/destinations/delta/delta_checkpoint.h"
#include "workers/destinations/lake/lake_store.h"

static int to_buf(void *ctx, const void *p, size_t n, char *err, size_t errlen)
{
    if (zx_buf_put(ctx, p, n) == 0)
        return 0;
    snprintf(err, errlen, "deltackpt: out of memory");
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: deltackpt TABLE_DIR\n");
        return 1;
    }
    char err[1024];
    const char *roots[] = { argv[1] };
    zx_lake_args a = { .root = argv[1], .roots = roots, .nroots = 1, .what = "delta" };
    zx_lake *l = zx_lake_open(&a, err, sizeof(err));
    zx_delta_table t;
    zx_buf b = {0};
    char *last = NULL;
    int rc = 1;
    memset(&t, 0, sizeof(t));
    if (!l)
        goto out;
    uint64_t rows;
    char name[64];
    if (zx_delta_read(l, &t, err, sizeof(err)) < 0)
        goto out;
    if (t.version < 0) {
        snprintf(err, sizeof(err), "%s: no Delta log", argv[1]);
        goto out;
    }
    if (zx_delta_checkpoint(&t, to_buf, &b, &rows, err, sizeof(err)) < 0)
        goto out;
    zx_delta_checkpoint_name(t.version, name);
    if (zx_lake_put(l, name, b.p, b.len, 0, err, sizeof(err)) < 0)
        goto out;
    if (!(last = zx_delta_last_checkpoint_json(t.version, rows, b.len))) {
        snprintf(err, sizeof(err), "out of memory");
        goto out;
    }
    if (zx_lake_put(l, ZX_DELTA_LAST_CHECKPOINT, last, strlen(last), 0, err, sizeof(err)) < 0)
        goto out;
    printf("{\"version\":%lld,\"rows\":%llu,\"bytes\":%zu}\n", (long long)t.version,
           (unsigned long long)rows, b.len);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "deltackpt: %s\n", err);
    free(last);
    zx_buf_free(&b);
    zx_delta_table_free(&t);
    zx_lake_free(l);
    return rc;
}
