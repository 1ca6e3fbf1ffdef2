/*
 * test_aws_s3_moto.c — the S3 client end to end against a real moto
 * (tests/services/moto start; then ZX_MOTO_ENDPOINT=http://127.0.0.1:PORT).
 * Skipped (exit 77) when ZX_MOTO_ENDPOINT is not set.  A bucket of its own
 * per run: CreateBucket, Put/Head/Get/Range/List/Delete, put-if-absent
 * twice, checksums (SHA-256 and MD5), SSE AES256, a 3-part multipart
 * upload of 12 MiB through the uploader read back and compared, an abort
 * that leaves no object and no upload, a left-behind upload found by
 * ListMultipartUploads and aborted; then the rate of a 64 MiB multipart
 * upload (printed).
 */
#include "common/aws_s3.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static zx_s3 *s;
static char bucket[64];
static char err[1024];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Deterministic bytes, different per seed. */
static char *pattern(size_t n, unsigned seed)
{
    char *p = malloc(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; p && i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (char)x;
    }
    return p;
}

static void check_rc(int rc, int want, const char *what)
{
    if (rc != want)
        printf("%s: rc %d (wanted %d): %s\n", what, rc, want, err);
    CHECK(rc == want);
}

static void test_objects(void)
{
    check_rc(zx_s3_create_bucket(s, bucket, err, sizeof(err)), 0, "CreateBucket");
    check_rc(zx_s3_create_bucket(s, bucket, err, sizeof(err)), 0, "CreateBucket again");

    const char *key = "dir one/a+b é.txt";
    zx_s3_put_opts po = { .content_type = "text/plain" };
    zx_s3_object_info info = { 0 };
    check_rc(zx_s3_put_object(s, bucket, key, "hello, S3", 9, &po, &info, err, sizeof(err)), 0,
             "PutObject sha256");
    CHECK(info.size == 9 && info.etag[0] == '"');
    zx_s3_object_info h = { 0 };
    check_rc(zx_s3_head_object(s, bucket, key, &h, err, sizeof(err)), 0, "HeadObject");
    CHECK(h.size == 9 && strcmp(h.etag, info.etag) == 0);
    /* the SHA-256 checksum sent is the one stored: base64(sha256("hello, S3")) */
    if (strcmp(h.sha256, "GV1oxUKecMj4ZRHsBXcU/bPIylOWEm1RWO+YxiU6NMQ=") != 0)
        printf("stored checksum: '%s'\n", h.sha256);
    CHECK(strcmp(h.sha256, "GV1oxUKecMj4ZRHsBXcU/bPIylOWEm1RWO+YxiU6NMQ=") == 0);
    char *d = NULL;
    size_t n = 0;
    check_rc(zx_s3_get_object(s, bucket, key, 0, &d, &n, err, sizeof(err)), 0, "GetObject");
    CHECK(n == 9 && d && memcmp(d, "hello, S3", 9) == 0);
    free(d);
    check_rc(zx_s3_get_range(s, bucket, key, 7, 10, &d, &n, err, sizeof(err)), 0, "Range");
    CHECK(n == 2 && d && memcmp(d, "S3", 2) == 0);
    free(d);
    /* bounded: larger than max */
    check_rc(zx_s3_get_object(s, bucket, key, 4, &d, &n, err, sizeof(err)), ZX_S3_ERR,
             "GetObject bounded");
    CHECK(strstr(err, "too large") != NULL && d == NULL);

    po.checksum = ZX_S3_CHECKSUM_MD5;
    check_rc(zx_s3_put_object(s, bucket, "dir one/md5", "x", 1, &po, NULL, err, sizeof(err)), 0,
             "PutObject md5");
    po.checksum = ZX_S3_CHECKSUM_SHA256;
    po.sse = "AES256";
    check_rc(zx_s3_put_object(s, bucket, "dir one/sse", "y", 1, &po, NULL, err, sizeof(err)), 0,
             "PutObject SSE AES256");
    po.sse = "aws:kms-nope";
    check_rc(zx_s3_put_object(s, bucket, "dir one/sse2", "y", 1, &po, NULL, err, sizeof(err)),
             ZX_S3_ERR, "PutObject bad SSE");
    CHECK(strstr(err, "AES256 or aws:kms") != NULL);

    zx_s3_list l;
    check_rc(zx_s3_list_objects(s, bucket, "dir one/", NULL, &l, err, sizeof(err)), 0, "List");
    CHECK(l.n == 3 && !l.truncated);
    int found = 0;
    for (size_t i = 0; i < l.n; i++)
        if (strcmp(l.items[i].key, key) == 0 && l.items[i].size == 9)
            found = 1;
    CHECK(found);
    zx_s3_list_free(&l);
    check_rc(zx_s3_list_objects(s, bucket, "nothing/", NULL, &l, err, sizeof(err)), 0,
             "List empty");
    CHECK(l.n == 0);
    zx_s3_list_free(&l);

    check_rc(zx_s3_delete_object(s, bucket, key, err, sizeof(err)), 0, "DeleteObject");
    check_rc(zx_s3_delete_object(s, bucket, key, err, sizeof(err)), 0, "DeleteObject again");
    check_rc(zx_s3_head_object(s, bucket, key, &h, err, sizeof(err)), ZX_S3_NOT_FOUND,
             "HeadObject gone");
    check_rc(zx_s3_get_object(s, bucket, key, 0, &d, &n, err, sizeof(err)), ZX_S3_NOT_FOUND,
             "GetObject gone");

    /* put-if-absent twice */
    zx_s3_put_opts once = { .if_none_match = 1 };
    check_rc(zx_s3_put_object(s, bucket, "log/00000.json", "{}", 2, &once, NULL, err,
                              sizeof(err)), 0, "put-if-absent 1");
    check_rc(zx_s3_put_object(s, bucket, "log/00000.json", "{1}", 3, &once, NULL, err,
                              sizeof(err)), ZX_S3_EXISTS, "put-if-absent 2");
    check_rc(zx_s3_get_object(s, bucket, "log/00000.json", 0, &d, &n, err, sizeof(err)), 0,
             "get after put-if-absent");
    CHECK(n == 2 && d && memcmp(d, "{}", 2) == 0);
    free(d);

    /* a missing bucket names itself and the operation */
    check_rc(zx_s3_put_object(s, "zx-no-such-bucket", "data/x.parquet", "x", 1, NULL, NULL, err,
                              sizeof(err)), ZX_S3_ERR, "PutObject no bucket");
    printf("no bucket: %s\n", err);
    CHECK(strstr(err, "S3 bucket zx-no-such-bucket: NoSuchBucket: ") != NULL);
    CHECK(strstr(err, "(PutObject data/x.parquet") != NULL);
}

/* No upload in progress under prefix. */
static size_t uploads_under(const char *prefix, char *first_id, size_t idlen)
{
    zx_s3_uploads u;
    int rc = zx_s3_list_uploads(s, bucket, prefix, NULL, NULL, &u, err, sizeof(err));
    check_rc(rc, 0, "ListMultipartUploads");
    size_t n = u.n;
    if (n && first_id)
        snprintf(first_id, idlen, "%s", u.items[0].upload_id);
    zx_s3_uploads_free(&u);
    return n;
}

static void test_multipart(void)
{
    size_t total = 12u << 20;
    char *data = pattern(total, 1);
    zx_s3_put_opts po = { .sse = "AES256", .content_type = "application/x-parquet" };
    zx_s3_upload *u = zx_s3_upload_new(s, bucket, "big/12m.bin", 5u << 20, &po, err,
                                       sizeof(err));
    CHECK(u != NULL);
    /* odd-sized writes across part boundaries */
    size_t off = 0, step = 777777;
    while (off < total) {
        size_t k = total - off < step ? total - off : step;
        check_rc(zx_s3_upload_write(u, data + off, k, err, sizeof(err)), 0, "upload write");
        off += k;
        zx_s3_object_info h;
        if (off == 11u << 20 || (off >= (11u << 20) && off < (11u << 20) + step))
            CHECK(zx_s3_head_object(s, bucket, "big/12m.bin", &h, err, sizeof(err)) ==
                  ZX_S3_NOT_FOUND); /* nothing visible before commit */
    }
    CHECK(uploads_under("big/", NULL, 0) == 1);
    zx_s3_object_info info;
    check_rc(zx_s3_upload_commit(u, &info, err, sizeof(err)), 0, "upload commit");
    CHECK(zx_s3_upload_parts(u) == 3 && info.size == total);
    CHECK(strstr(info.etag, "-3\"") != NULL);
    zx_s3_object_info hb;
    CHECK(zx_s3_head_object(s, bucket, "big/12m.bin", &hb, err, sizeof(err)) == 0);
    CHECK(hb.size == total && strcmp(hb.etag, info.etag) == 0);
    printf("12 MiB object: ETag %s, SHA-256 checksum %s\n", hb.etag, hb.sha256);
    CHECK(hb.sha256[0] != 0); /* AWS: composite "<b64>-3"; moto 5.2: another form */
    zx_s3_upload_free(u);
    CHECK(uploads_under("big/", NULL, 0) == 0);

    /* an object larger than the client's bound on an answer's body (16
     * MiB): HEAD has no body, and its size is no reason to fail */
    u = zx_s3_upload_new(s, bucket, "big/17m.bin", 5u << 20, NULL, err, sizeof(err));
    check_rc(zx_s3_upload_write(u, data, total, err, sizeof(err)), 0, "17m write");
    check_rc(zx_s3_upload_write(u, data, 5u << 20, err, sizeof(err)), 0, "17m write 2");
    check_rc(zx_s3_upload_commit(u, NULL, err, sizeof(err)), 0, "17m commit");
    zx_s3_upload_free(u);
    zx_s3_object_info h17;
    check_rc(zx_s3_head_object(s, bucket, "big/17m.bin", &h17, err, sizeof(err)), 0,
             "HeadObject of 17 MiB");
    CHECK(h17.size == (17u << 20));
    check_rc(zx_s3_delete_object(s, bucket, "big/17m.bin", err, sizeof(err)), 0, "17m delete");

    char *d = NULL;
    size_t n = 0;
    check_rc(zx_s3_get_object(s, bucket, "big/12m.bin", 16u << 20, &d, &n, err, sizeof(err)), 0,
             "get 12 MiB");
    CHECK(n == total && d && memcmp(d, data, total) == 0);
    free(d);
    check_rc(zx_s3_get_range(s, bucket, "big/12m.bin", (5u << 20) - 3, 6, &d, &n, err,
                             sizeof(err)), 0, "range across parts");
    CHECK(n == 6 && d && memcmp(d, data + (5u << 20) - 3, 6) == 0);
    free(d);

    /* one part only: one PutObject, no multipart upload */
    u = zx_s3_upload_new(s, bucket, "big/small.bin", 5u << 20, NULL, err, sizeof(err));
    check_rc(zx_s3_upload_write(u, data, 5u << 20, err, sizeof(err)), 0, "small write");
    CHECK(uploads_under("big/", NULL, 0) == 0);
    check_rc(zx_s3_upload_commit(u, &info, err, sizeof(err)), 0, "small commit");
    CHECK(zx_s3_upload_parts(u) == 0 && info.size == 5u << 20 && !strchr(info.etag, '-'));
    zx_s3_upload_free(u);

    /* put-if-absent through Complete: the key exists, the upload goes */
    zx_s3_put_opts once = { .if_none_match = 1 };
    u = zx_s3_upload_new(s, bucket, "big/12m.bin", 5u << 20, &once, err, sizeof(err));
    check_rc(zx_s3_upload_write(u, data, 6u << 20, err, sizeof(err)), 0, "write exists");
    check_rc(zx_s3_upload_commit(u, NULL, err, sizeof(err)), ZX_S3_EXISTS, "Complete exists");
    zx_s3_upload_free(u);
    CHECK(uploads_under("big/", NULL, 0) == 0);

    /* SSE aws:kms on a multipart upload (moto keeps the key id) */
    zx_s3_put_opts kms = { .sse = "aws:kms", .kms_key_id = "alias/zx-test" };
    u = zx_s3_upload_new(s, bucket, "big/kms.bin", 5u << 20, &kms, err, sizeof(err));
    check_rc(zx_s3_upload_write(u, data, (5u << 20) + 10, err, sizeof(err)), 0, "kms write");
    check_rc(zx_s3_upload_commit(u, NULL, err, sizeof(err)), 0, "kms commit");
    zx_s3_upload_free(u);

    /* freed before commit: aborted */
    u = zx_s3_upload_new(s, bucket, "big/dropped.bin", 5u << 20, NULL, err, sizeof(err));
    check_rc(zx_s3_upload_write(u, data, 6u << 20, err, sizeof(err)), 0, "dropped write");
    zx_s3_upload_free(u);
    CHECK(uploads_under("big/", NULL, 0) == 0);

    /* abort: no object, no upload */
    u = zx_s3_upload_new(s, bucket, "big/aborted.bin", 5u << 20, NULL, err, sizeof(err));
    check_rc(zx_s3_upload_write(u, data, 6u << 20, err, sizeof(err)), 0, "abort write");
    CHECK(zx_s3_upload_parts(u) == 1 && uploads_under("big/aborted", NULL, 0) == 1);
    check_rc(zx_s3_upload_abort(u, err, sizeof(err)), 0, "upload abort");
    zx_s3_upload_free(u);
    zx_s3_object_info h;
    CHECK(zx_s3_head_object(s, bucket, "big/aborted.bin", &h, err, sizeof(err)) ==
          ZX_S3_NOT_FOUND);
    CHECK(uploads_under("big/aborted", NULL, 0) == 0);

    /* a crashed run's upload: found by prefix, aborted */
    char *id = NULL;
    check_rc(zx_s3_mpu_create(s, bucket, "run7/part-0.parquet", &po, &id, err, sizeof(err)), 0,
             "CreateMultipartUpload");
    zx_s3_part p;
    check_rc(zx_s3_mpu_part(s, bucket, "run7/part-0.parquet", id, 1, data, 1000, NULL, &p, err,
                            sizeof(err)), 0, "UploadPart");
    CHECK(p.number == 1 && p.etag[0] && p.sha256[0]);
    check_rc(zx_s3_mpu_part(s, bucket, "run7/part-0.parquet", id, 10001, data, 1, NULL, &p, err,
                            sizeof(err)), ZX_S3_ERR, "UploadPart 10001");
    char found[256] = "";
    CHECK(uploads_under("run7/", found, sizeof(found)) == 1);
    CHECK(id && strcmp(found, id) == 0);
    CHECK(uploads_under("run8/", NULL, 0) == 0);
    char *id2 = NULL;
    check_rc(zx_s3_mpu_create(s, bucket, "run7/part-1.parquet", NULL, &id2, err, sizeof(err)), 0,
             "CreateMultipartUpload 2");
    free(id2);
    int aborted = -1;
    /* a date before both: nothing is old enough */
    check_rc(zx_s3_abort_uploads(s, bucket, "run7/", 1000000000, &aborted, err, sizeof(err)), 0,
             "abort none");
    CHECK(aborted == 0 && uploads_under("run7/", NULL, 0) == 2);
    check_rc(zx_s3_abort_uploads(s, bucket, "run7/", (int64_t)time(NULL) + 3600, &aborted, err,
                                 sizeof(err)), 0, "abort leftovers");
    CHECK(aborted == 2);
    CHECK(uploads_under("run7/", NULL, 0) == 0);
    check_rc(zx_s3_mpu_abort(s, bucket, "run7/part-0.parquet", found, err, sizeof(err)), 0,
             "abort leftover again");
    free(id);
    free(data);
}

/* 1001 keys: two pages, the continuation token sent back as given. */
static void test_pages(void)
{
    double t0 = now_s();
    for (int i = 0; i < 1001; i++) {
        char key[64];
        snprintf(key, sizeof(key), "many/k+%04d=x", i);
        if (zx_s3_put_object(s, bucket, key, "", 0, NULL, NULL, err, sizeof(err)) != 0) {
            check_rc(-1, 0, "put many");
            return;
        }
    }
    double t1 = now_s();
    size_t total = 0, pages = 0;
    char *next = NULL;
    int last = -1, ordered = 1;
    do {
        zx_s3_list l;
        int rc = zx_s3_list_objects(s, bucket, "many/", next, &l, err, sizeof(err));
        check_rc(rc, 0, "list page");
        free(next);
        next = l.next;
        l.next = NULL;
        for (size_t i = 0; i < l.n; i++) {
            int k = atoi(l.items[i].key + 7);
            ordered &= k == last + 1;
            last = k;
        }
        total += l.n;
        pages++;
        zx_s3_list_free(&l);
        if (rc != 0)
            break;
    } while (next && pages < 10);
    free(next);
    CHECK(total == 1001 && pages == 2 && ordered);
    printf("1001 PutObject of 0 bytes: %.0f/s; listed in %zu pages\n", 1001 / (t1 - t0), pages);
}

static void bench(void)
{
    size_t total = 64u << 20, chunk = 1u << 20;
    char *data = pattern(chunk, 2);
    zx_s3_upload *u = zx_s3_upload_new(s, bucket, "bench/64m.bin", 8u << 20, NULL, err,
                                       sizeof(err));
    double t0 = now_s();
    int ok = u != NULL;
    for (size_t off = 0; ok && off < total; off += chunk)
        ok = zx_s3_upload_write(u, data, chunk, err, sizeof(err)) == 0;
    zx_s3_object_info info;
    ok = ok && zx_s3_upload_commit(u, &info, err, sizeof(err)) == 0;
    double dt = now_s() - t0;
    CHECK(ok);
    if (ok)
        printf("64 MiB multipart upload (8 MiB parts, SHA-256 checksums) to moto: %.2f s, "
               "%.1f MB/s\n", dt, (double)total / 1e6 / dt);
    else
        printf("bench: %s\n", err);
    zx_s3_upload_free(u);
    free(data);
}

/* Parallel parts: 3 threads, odd writes, read back whole; a thread whose
 * client cannot reach S3 fails the upload at the next write or the
 * commit, and nothing stays behind. */
static void test_parallel(const zx_s3_opts *o)
{
    zx_s3 *par[3];
    for (int i = 0; i < 3; i++)
        par[i] = zx_s3_new(o, err, sizeof(err));
    size_t total = (23u << 20) + 12345;
    char *data = pattern(total, 7);
    zx_s3_upload *u = zx_s3_upload_new(s, bucket, "par/23m.bin", 5u << 20, NULL, err,
                                       sizeof(err));
    check_rc(zx_s3_upload_parallel(u, par, 3, err, sizeof(err)), 0, "parallel");
    CHECK(zx_s3_upload_parallel(u, par, 3, err, sizeof(err)) != 0);   /* once */
    for (size_t off = 0, step = 999983; off < total; off += step)
        check_rc(zx_s3_upload_write(u, data + off, total - off < step ? total - off : step,
                                    err, sizeof(err)), 0, "parallel write");
    zx_s3_object_info info;
    check_rc(zx_s3_upload_commit(u, &info, err, sizeof(err)), 0, "parallel commit");
    CHECK(zx_s3_upload_parts(u) == 5 && strstr(info.etag, "-5\"") != NULL);
    zx_s3_upload_free(u);
    char *d = NULL;
    size_t n = 0;
    check_rc(zx_s3_get_object(s, bucket, "par/23m.bin", 32u << 20, &d, &n, err, sizeof(err)),
             0, "get parallel");
    CHECK(n == total && d && memcmp(d, data, total) == 0);
    free(d);
    CHECK(uploads_under("par/", NULL, 0) == 0);

    /* one client that cannot reach S3 */
    zx_s3_opts bad = *o;
    bad.endpoint = "http://127.0.0.1:9";
    bad.http.max_attempts = 1;
    bad.http.timeout_ms = 2000;
    zx_s3 *dead = zx_s3_new(&bad, err, sizeof(err));
    zx_s3 *mixed[2] = {dead, dead};
    u = zx_s3_upload_new(s, bucket, "par/fails.bin", 5u << 20, NULL, err, sizeof(err));
    check_rc(zx_s3_upload_parallel(u, mixed, 2, err, sizeof(err)), 0, "parallel dead");
    int rc = 0;
    for (size_t off = 0; off < total && rc == 0; off += 1u << 20)
        rc = zx_s3_upload_write(u, data + off, 1u << 20, err, sizeof(err));
    if (rc == 0)
        rc = zx_s3_upload_commit(u, NULL, err, sizeof(err));
    CHECK(rc != 0 && strstr(err, "127.0.0.1:9") != NULL);
    if (!strstr(err, "127.0.0.1:9"))
        printf("  the failed part said: %s\n", err);
    zx_s3_upload_free(u);
    zx_s3_object_info h;
    CHECK(zx_s3_head_object(s, bucket, "par/fails.bin", &h, err, sizeof(err)) ==
          ZX_S3_NOT_FOUND);
    CHECK(uploads_under("par/", NULL, 0) == 0);
    zx_s3_free(dead);
    for (int i = 0; i < 3; i++)
        zx_s3_free(par[i]);
    free(data);
}

int main(void)
{
    const char *ep = getenv("ZX_MOTO_ENDPOINT");
    if (!ep || !*ep) {
        printf("test_aws_s3_moto: ZX_MOTO_ENDPOINT not set: skipped\n");
        return 77;
    }
    snprintf(bucket, sizeof(bucket), "zx-test-%ld-%ld", (long)getpid(), (long)time(NULL));
    zx_aws_keys k = { "zxtestkey", "zxtestsecret", NULL };
    zx_s3_opts o = { .region = "us-east-1", .endpoint = ep, .path_style = 1,
                     .keys = zx_s3_static_keys, .keys_ctx = &k };
    s = zx_s3_new(&o, err, sizeof(err));
    if (!s) {
        printf("test_aws_s3_moto: %s\n", err);
        return 1;
    }
    test_objects();
    test_multipart();
    test_parallel(&o);
    test_pages();
    if (!getenv("ZX_S3_NO_BENCH"))
        bench();
    zx_s3_free(s);
    if (failures)
        printf("test_aws_s3_moto: %d check(s) failed\n", failures);
    else
        printf("test_aws_s3_moto: all checks passed\n");
    return failures != 0;
}
