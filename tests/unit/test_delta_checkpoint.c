/*
 * test_delta_checkpoint.c — workers/destinations/delta/delta_checkpoint.h:
 * a table replayed from hand-written commits becomes a Parquet file that
 * starts and ends with the magic, whose footer length fits, whose row
 * count is one per action, whose footer names the nested columns; a
 * sink's error is passed on; a table without a protocol is refused.
 * (tests/integration/test_delta_checkpoint.py reads the file with pyarrow
 * and deltalake.)
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/buf.h"
#include "workers/destinations/delta/delta_checkpoint.h"

static const char *C0 =
    "{\"commitInfo\":{\"operation\":\"WRITE\"}}\n"
    "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n"
    "{\"metaData\":{\"id\":\"t-1\",\"format\":{\"provider\":\"parquet\",\"options\":{}},"
    "\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[{\\\"name\\\":\\\"a\\\","
    "\\\"type\\\":\\\"long\\\",\\\"nullable\\\":true,\\\"metadata\\\":{}},{\\\"name\\\":"
    "\\\"p\\\",\\\"type\\\":\\\"string\\\",\\\"nullable\\\":true,\\\"metadata\\\":{}}]}\","
    "\"partitionColumns\":[\"p\"],\"configuration\":{\"k\":\"v\"},\"createdTime\":1}}\n"
    "{\"add\":{\"path\":\"p=x/a.parquet\",\"partitionValues\":{\"p\":\"x\"},\"size\":10,"
    "\"modificationTime\":2,\"dataChange\":true,\"stats\":\"{\\\"numRecords\\\":3}\"}}\n";
static const char *C1 =
    "{\"add\":{\"path\":\"p=y/b.parquet\",\"partitionValues\":{\"p\":null},\"size\":11,"
    "\"modificationTime\":3,\"dataChange\":true,\"tags\":{\"zx.rows\":\"1\"}}}\n"
    "{\"txn\":{\"appId\":\"app\",\"version\":7}}\n";
static const char *C2 =
    "{\"remove\":{\"path\":\"p=x/a.parquet\",\"deletionTimestamp\":4,\"dataChange\":true}}\n"
    "{\"add\":{\"path\":\"p=x/c.parquet\",\"partitionValues\":{\"p\":\"x\"},\"size\":12,"
    "\"modificationTime\":4,\"dataChange\":false}}\n"
    "{\"txn\":{\"appId\":\"other\",\"version\":1}}\n";

static int to_buf(void *ctx, const void *p, size_t n, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return zx_buf_put(ctx, p, n);
}

static int fail_sink(void *ctx, const void *p, size_t n, char *err, size_t errlen)
{
    (void)p;
    (void)n;
    if (++*(int *)ctx < 3)
        return 0;
    snprintf(err, errlen, "disk full");
    return -1;
}

static int has(const zx_buf *b, size_t from, size_t to, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = from; i + n <= to; i++)
        if (!memcmp(b->p + i, s, n))
            return 1;
    return 0;
}

int main(void)
{
    char err[512];
    zx_delta_table t;
    memset(&t, 0, sizeof(t));
    t.version = -1;
    const char *cs[] = { C0, C1, C2 };
    for (int v = 0; v < 3; v++)
        CHECK(zx_delta_apply(&t, v, cs[v], strlen(cs[v]), "test", err, sizeof(err)) == 0);
    CHECK(t.version == 2 && t.nfiles == 2);

    zx_buf b = {0};
    uint64_t rows = 0;
    CHECK(zx_delta_checkpoint(&t, to_buf, &b, &rows, err, sizeof(err)) == 0);
    CHECK(rows == 6);   /* protocol, metaData, 2 txns, 2 adds */
    CHECK(b.len > 12 && !memcmp(b.p, "PAR1", 4) && !memcmp(b.p + b.len - 4, "PAR1", 4));
    uint32_t flen = 0;
    for (int i = 0; i < 4; i++)
        flen |= (uint32_t)(uint8_t)b.p[b.len - 8 + i] << (8 * i);
    CHECK(flen > 0 && flen < b.len - 12);
    size_t fstart = b.len - 8 - flen;
    CHECK(has(&b, fstart, b.len - 8, "partitionValues"));
    CHECK(has(&b, fstart, b.len - 8, "key_value"));
    CHECK(has(&b, fstart, b.len - 8, "schemaString"));
    CHECK(has(&b, fstart, b.len - 8, "writerFeatures"));

    /* the same table gives the same bytes */
    zx_buf b2 = {0};
    CHECK(zx_delta_checkpoint(&t, to_buf, &b2, &rows, err, sizeof(err)) == 0);
    CHECK(b2.len == b.len && !memcmp(b.p, b2.p, b.len));

    int calls = 0;
    CHECK(zx_delta_checkpoint(&t, fail_sink, &calls, &rows, err, sizeof(err)) == -1);
    CHECK(!strcmp(err, "disk full") && rows == 0);

    char name[64];
    zx_delta_checkpoint_name(10, name);
    CHECK(!strcmp(name, "_delta_log/00000000000000000010.checkpoint.parquet"));
    char *lc = zx_delta_last_checkpoint_json(10, 6, 1234);
    CHECK(lc && !strcmp(lc, "{\"version\":10,\"size\":6,\"sizeInBytes\":1234}"));
    free(lc);

    zx_delta_table e;
    memset(&e, 0, sizeof(e));
    CHECK(zx_delta_checkpoint(&e, to_buf, &b2, &rows, err, sizeof(err)) == -1);
    CHECK(strstr(err, "no protocol") != NULL);

    zx_buf_free(&b);
    zx_buf_free(&b2);
    zx_delta_table_free(&t);
    return failures != 0;
}
