/*
 * s3_put.c — upload one file to S3 with zx's uploader (common/aws_s3.h:
 * zx_s3_upload_new / write / commit), for s3_upload_bench.sh.
 *
 * Usage: s3_put ENDPOINT BUCKET KEY FILE [PART_MIB [CHECKSUM]]
 *   ENDPOINT   http(s)://host[:port] of an S3-compatible service (moto),
 *              addressed path style
 *   PART_MIB   part size in MiB (default 8; at least 5)
 *   CHECKSUM   sha256 (default: the uploader's), md5 or none
 * S3_PUT_PARALLEL: parts in flight (default 4, what the files destination
 * uploads with; 0: one at a time in the writer's thread).
 * Keys: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (default zxtestkey /
 * zxtestsecret, what moto takes), static (zx_s3_static_keys); region
 * AWS_REGION (default us-east-1).
 *
 * Creates the bucket (or finds it ours), reads FILE in 8 MiB chunks and
 * writes each to the uploader (which uploads a part whenever one fills),
 * commits, then checks the object's size with HeadObject.  Prints one line
 * of KEY=value figures on stdout:
 *   bytes=N seconds=S mb_per_s=R parts=P requests=Q user_s=U sys_s=Y
 *   max_rss_kb=K head_size=N   (head_size=error when HeadObject failed:
 *                               the reason on stderr; not fatal)
 * (MB = 10^6 bytes; seconds from the upload's creation to the commit's
 * answer, the file's reads included).  Exit 0 when the upload was committed
 * (and HeadObject, when it answers, gives the file's size); 1 with the
 * error on stderr otherwise (the upload aborted).
 */
#include "common/aws_s3.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define CHUNK ((size_t)8 << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* Reads f to its end into u, CHUNK bytes at a time.  0, or -1 with err. */
static int copy_file(FILE *f, const char *path, zx_s3_upload *u, char *err, size_t errlen)
{
    char *buf = malloc(CHUNK);
    if (!buf) {
        snprintf(err, errlen, "out of memory (a buffer of %zu bytes)", CHUNK);
        return -1;
    }
    int rc = 0;
    size_t n;
    while ((n = fread(buf, 1, CHUNK, f)) > 0) {
        if (zx_s3_upload_write(u, buf, n, err, errlen) != 0) {
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        rc = -1;
    }
    free(buf);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: s3_put ENDPOINT BUCKET KEY FILE [PART_MIB [sha256|md5|none]]\n");
        return 2;
    }
    const char *endpoint = argv[1], *bucket = argv[2], *key = argv[3], *path = argv[4];
    long part_mib = argc > 5 ? strtol(argv[5], NULL, 10) : 8;
    if (part_mib < 5 || part_mib > 5120) {
        fprintf(stderr, "s3_put: PART_MIB must be 5 to 5120, not %s\n", argv[5]);
        return 2;
    }
    zx_s3_put_opts po = { .content_type = "application/vnd.apache.parquet" };
    if (argc > 6) {
        if (strcmp(argv[6], "md5") == 0)
            po.checksum = ZX_S3_CHECKSUM_MD5;
        else if (strcmp(argv[6], "none") == 0)
            po.checksum = ZX_S3_CHECKSUM_NONE;
        else if (strcmp(argv[6], "sha256") != 0) {
            fprintf(stderr, "s3_put: CHECKSUM is sha256, md5 or none, not %s\n", argv[6]);
            return 2;
        }
    }

    char err[1024];
    zx_aws_keys keys = { env_or("AWS_ACCESS_KEY_ID", "zxtestkey"),
                         env_or("AWS_SECRET_ACCESS_KEY", "zxtestsecret"), NULL };
    zx_s3_opts o = { .region = env_or("AWS_REGION", "us-east-1"), .endpoint = endpoint,
                     .path_style = 1, .keys = zx_s3_static_keys, .keys_ctx = &keys };
    zx_s3 *s = zx_s3_new(&o, err, sizeof(err));
    if (!s) {
        fprintf(stderr, "s3_put: %s\n", err);
        return 1;
    }
    FILE *f = NULL;
    zx_s3_upload *u = NULL;
    zx_s3 *par[ZX_S3_UPLOAD_THREADS_MAX] = {0};
    int npar = atoi(env_or("S3_PUT_PARALLEL", "4"));
    if (npar < 0 || npar > ZX_S3_UPLOAD_THREADS_MAX) {
        fprintf(stderr, "s3_put: S3_PUT_PARALLEL is 0 to %d\n", ZX_S3_UPLOAD_THREADS_MAX);
        return 1;
    }
    int rc = 1;
    if (zx_s3_create_bucket(s, bucket, err, sizeof(err)) != 0)
        goto out;
    f = fopen(path, "rb");
    if (!f) {
        snprintf(err, sizeof(err), "cannot open %s: %s", path, strerror(errno));
        goto out;
    }
    double t0 = now_s();
    u = zx_s3_upload_new(s, bucket, key, (size_t)part_mib << 20, &po, err, sizeof(err));
    if (!u)
        goto out;
    if (npar > 0) {
        for (int i = 0; i < npar; i++)
            if (!(par[i] = zx_s3_new(&o, err, sizeof(err))))
                goto out;
        if (zx_s3_upload_parallel(u, par, npar, err, sizeof(err)) != 0)
            goto out;
    }
    if (copy_file(f, path, u, err, sizeof(err)) != 0)
        goto out;
    zx_s3_object_info info = { 0 };
    if (zx_s3_upload_commit(u, &info, err, sizeof(err)) != 0)
        goto out;
    double dt = now_s() - t0;
    uint64_t bytes = zx_s3_upload_bytes(u);
    /* HeadObject: a failure is said but not fatal (s3_upload_bench.sh
     * checks the size with boto3 too) */
    zx_s3_object_info head = { 0 };
    char herr[1024] = "";
    int hr = zx_s3_head_object(s, bucket, key, &head, herr, sizeof(herr));
    if (hr == ZX_S3_NOT_FOUND)
        snprintf(herr, sizeof(herr), "no such object after the commit");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char hs[32] = "error";
    if (hr == 0)
        snprintf(hs, sizeof(hs), "%llu", (unsigned long long)head.size);
    printf("bytes=%llu seconds=%.3f mb_per_s=%.1f parts=%d requests=%lu user_s=%.2f "
           "sys_s=%.2f max_rss_kb=%ld head_size=%s\n",
           (unsigned long long)bytes, dt, (double)bytes / 1e6 / dt, zx_s3_upload_parts(u),
           zx_s3_requests(s), ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss, hs);
    if (hr != 0)
        fprintf(stderr, "s3_put: HeadObject %s/%s failed: %s\n", bucket, key, herr);
    else if (head.size != bytes) {
        snprintf(err, sizeof(err), "HeadObject %s/%s: %llu bytes, but %llu were uploaded",
                 bucket, key, (unsigned long long)head.size, (unsigned long long)bytes);
        goto out;
    }
    rc = 0;
out:
    if (rc != 0)
        fprintf(stderr, "s3_put: %s\n", err);
    zx_s3_upload_free(u);       /* aborts an upload not committed */
    if (f)
        fclose(f);
    for (int i = 0; i < ZX_S3_UPLOAD_THREADS_MAX; i++)
        zx_s3_free(par[i]);
    zx_s3_free(s);
    return rc;
}
