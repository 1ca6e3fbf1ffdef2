/*
 * aws_s3_upload.c — the S3 uploader (aws_s3.h): an object written in
 * pieces, one part buffered, full parts uploaded as the next byte comes
 * (so that an object of exactly one part is one PutObject), visible only
 * at commit.
 */
#include "common/aws_s3_call.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

enum { UP_OPEN, UP_FAILED, UP_DONE };

struct zx_s3_upload {
    zx_s3 *s;
    char *bucket, *key, *content_type, *sse, *kms;
    zx_s3_put_opts po;           /* its strings point at the copies above */
    size_t part_size, fill;
    char *buf;                   /* part_size bytes, allocated at the first write */
    zx_s3_part *parts;
    size_t nparts, cap;
    char *upload_id;             /* NULL until the first part goes */
    uint64_t bytes;
    int state;
};

static char *dup_opt(const char *s, int *bad)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *bad = 1;
    return d;
}

zx_s3_upload *zx_s3_upload_new(zx_s3 *s, const char *bucket, const char *key,
                               size_t part_size, const zx_s3_put_opts *po, char *err,
                               size_t errlen)
{
    if (!part_size)
        part_size = (size_t)8 << 20;
    if (!s || !bucket || !key || !*key) {
        zx_seterr(err, errlen, "an S3 upload needs a client, a bucket and a key");
        return NULL;
    }
    if (part_size < ZX_S3_PART_MIN || part_size > ZX_S3_PART_MAX) {
        zx_seterr(err, errlen, "an S3 part size is 5 MiB..5 GiB, not %zu bytes", part_size);
        return NULL;
    }
    zx_s3_upload *u = calloc(1, sizeof(*u));
    if (!u) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    int bad = 0;
    u->s = s;
    u->part_size = part_size;
    u->bucket = dup_opt(bucket, &bad);
    u->key = dup_opt(key, &bad);
    if (po) {
        u->po = *po;
        u->po.content_type = u->content_type = dup_opt(po->content_type, &bad);
        u->po.sse = u->sse = dup_opt(po->sse, &bad);
        u->po.kms_key_id = u->kms = dup_opt(po->kms_key_id, &bad);
    }
    if (bad) {
        zx_seterr(err, errlen, "out of memory");
        u->state = UP_DONE;
        zx_s3_upload_free(u);
        return NULL;
    }
    return u;
}

/* Uploads the buffer as the next part (creating the upload first). */
static int flush_part(zx_s3_upload *u, char *err, size_t errlen)
{
    if (u->nparts >= ZX_S3_PARTS_MAX)
        return zx_seterr(err, errlen,
                         "S3 bucket %.63s: %.200s needs more than %d parts of %zu bytes: "
                         "use a larger part size", u->bucket, u->key, ZX_S3_PARTS_MAX,
                         u->part_size);
    if (!u->upload_id &&
        zx_s3_mpu_create(u->s, u->bucket, u->key, &u->po, &u->upload_id, err, errlen) != 0)
        return ZX_S3_ERR;
    if (zx_grow(&u->parts, u->nparts, &u->cap, sizeof(*u->parts)) < 0)
        return zx_seterr(err, errlen, "out of memory");
    zx_s3_part *p = &u->parts[u->nparts];
    if (zx_s3_mpu_part(u->s, u->bucket, u->key, u->upload_id, (int)u->nparts + 1, u->buf,
                       u->fill, &u->po, p, err, errlen) != 0)
        return ZX_S3_ERR;
    u->nparts++;
    u->fill = 0;
    return 0;
}

int zx_s3_upload_write(zx_s3_upload *u, const void *buf, size_t len, char *err,
                       size_t errlen)
{
    if (u->state != UP_OPEN)
        return zx_seterr(err, errlen, "S3 bucket %.63s: the upload of %.200s is %s", u->bucket,
                         u->key, u->state == UP_FAILED ? "failed" : "finished");
    if (!u->buf && len) {
        u->buf = malloc(u->part_size);
        if (!u->buf) {
            u->state = UP_FAILED;
            return zx_seterr(err, errlen, "out of memory (a part of %zu bytes)", u->part_size);
        }
    }
    const char *p = buf;
    while (len) {
        if (u->fill == u->part_size && flush_part(u, err, errlen) != 0) {
            u->state = UP_FAILED;
            return ZX_S3_ERR;
        }
        size_t k = u->part_size - u->fill < len ? u->part_size - u->fill : len;
        memcpy(u->buf + u->fill, p, k);
        u->fill += k;
        u->bytes += k;
        p += k;
        len -= k;
    }
    return 0;
}

int zx_s3_upload_commit(zx_s3_upload *u, zx_s3_object_info *info, char *err, size_t errlen)
{
    if (u->state != UP_OPEN) {
        int failed = u->state == UP_FAILED;
        zx_seterr(err, errlen, "S3 bucket %.63s: the upload of %.200s is %s", u->bucket,
                  u->key, failed ? "failed" : "finished");
        if (failed)
            zx_s3_upload_abort(u, NULL, 0);
        return ZX_S3_ERR;
    }
    u->state = UP_DONE;
    int rc;
    if (!u->upload_id) {
        rc = zx_s3_put_object(u->s, u->bucket, u->key, u->buf ? u->buf : "", u->fill, &u->po,
                              info, err, errlen);
    } else {
        rc = u->fill ? flush_part(u, err, errlen) : 0;
        if (rc == 0)
            rc = zx_s3_mpu_complete(u->s, u->bucket, u->key, u->upload_id, u->parts, u->nparts,
                                    &u->po, info, err, errlen);
        if (rc == 0) {
            free(u->upload_id);
            u->upload_id = NULL;
        } else {
            /* nothing of the run stays behind; the first error is the one said */
            zx_s3_mpu_abort(u->s, u->bucket, u->key, u->upload_id, NULL, 0);
            free(u->upload_id);
            u->upload_id = NULL;
        }
    }
    free(u->buf);
    u->buf = NULL;
    return rc;
}

int zx_s3_upload_abort(zx_s3_upload *u, char *err, size_t errlen)
{
    int rc = 0;
    if (u->upload_id) {
        rc = zx_s3_mpu_abort(u->s, u->bucket, u->key, u->upload_id, err, errlen);
        free(u->upload_id);
        u->upload_id = NULL;
    }
    u->state = UP_DONE;
    free(u->buf);
    u->buf = NULL;
    return rc;
}

uint64_t zx_s3_upload_bytes(const zx_s3_upload *u)
{
    return u ? u->bytes : 0;
}

int zx_s3_upload_parts(const zx_s3_upload *u)
{
    return u ? (int)u->nparts : 0;
}

void zx_s3_upload_free(zx_s3_upload *u)
{
    if (!u)
        return;
    if (u->upload_id)
        zx_s3_upload_abort(u, NULL, 0);
    free(u->buf);
    free(u->parts);
    free(u->upload_id);
    free(u->bucket);
    free(u->key);
    free(u->content_type);
    free(u->sse);
    free(u->kms);
    free(u);
}
