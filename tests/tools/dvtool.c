/*
 * dvtool — a test tool for Delta deletion vectors
 * (workers/destinations/delta/delta_dv.h), driven by
 * tests/integration/test_delta_dv_interop.py:
 *
 *   dvtool encode            positions (decimal, one a line) on stdin ->
 *                            the bitmap data (magic included) on stdout
 *   dvtool decode MAX_POS    bitmap data on stdin -> its positions, one a
 *                            line, on stdout; exit 1 with the error on
 *                            stderr when zx refuses it
 *
 * Never installed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "workers/destinations/delta/delta_dv.h"

static int encode(void)
{
    uint64_t *pos = NULL;
    size_t n = 0, cap = 0;
    char line[64];
    zx_buf out = {0};
    int rc = 1;
    while (fgets(line, sizeof(line), stdin)) {
        char *end;
        if (line[0] == '\n')
            continue;
        uint64_t v = strtoull(line, &end, 10);
        if (end == line || zx_grow(&pos, n, &cap, sizeof(*pos)) < 0)
            goto done;
        pos[n++] = v;
    }
    if (zx_dv_encode(pos, n, &out) < 0) {
        fprintf(stderr, "dvtool: positions not ascending, unique, below 2^63\n");
        goto done;
    }
    rc = fwrite(out.p, 1, out.len, stdout) == out.len ? 0 : 1;
done:
    free(pos);
    zx_buf_free(&out);
    return rc;
}

static int decode(uint64_t max_pos)
{
    zx_buf in = {0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
        if (zx_buf_put(&in, chunk, got) < 0)
            return 1;
    uint64_t *pos;
    size_t n;
    char err[256];
    if (zx_dv_decode(in.p, in.len, max_pos, &pos, &n, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        zx_buf_free(&in);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        printf("%" PRIu64 "\n", pos[i]);
    free(pos);
    zx_buf_free(&in);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "encode") == 0)
        return encode();
    if (argc == 3 && strcmp(argv[1], "decode") == 0)
        return decode(strtoull(argv[2], NULL, 10));
    fprintf(stderr, "usage: dvtool encode < positions > bitmap\n"
                    "       dvtool decode MAX_POS < bitmap > positions\n");
    return 2;
}
