/*
 * files_s3.c — the files destination's objects in an S3 bucket
 * (files_s3.h): the path rules, the leftover sweep, and one streamed
 * upload per run through common/aws_s3.h.
 */
#include "workers/destinations/files/files_s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws_creds.h"
#include "common/aws_s3.h"
#include "common/util.h"
#include "workers/aws_conn.h"

#define FS3_PART (8u << 20)

#define FS3_PARALLEL 4           /* parts in flight: one connection to S3
                                    rarely fills a link; memory is 5 parts */

struct zx_fs3 {
    zx_aws_creds *creds;
    zx_s3 *s3;
    zx_s3 *par[FS3_PARALLEL];    /* the parts' own clients, one per thread */
    char *bucket;
    char *sse, *kms_key_id;
    zx_s3_upload *up;            /* the running object; NULL: none */
    char *where;                 /* "s3://bucket/key" of it */
    uint64_t bytes;
};

zx_fs3 *zx_fs3_open(const zx_fs3_args *a, char *err, size_t errlen)
{
    zx_fs3 *f = calloc(1, sizeof(*f));
    if (!f) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    zx_aws_cred_opts co;
    zx_aws_conn_cred_opts(a->conn, &co);
    char e[1200];
    if (!(f->creds = zx_aws_creds_new(&co, e, sizeof(e)))) {
        zx_seterr(err, errlen, "connection %s: %s", a->conn->name, e);
        goto fail;
    }
    zx_http_opts ho = {.timeout_ms = a->deadline_ms > 0 ? a->deadline_ms : 60000,
                       .max_attempts = 4};
    if (!(f->s3 = zx_aws_conn_s3(a->conn, f->creds, &ho, e, sizeof(e)))) {
        zx_seterr(err, errlen, "connection %s: %s", a->conn->name, e);
        goto fail;
    }
    for (int i = 0; i < FS3_PARALLEL; i++)
        if (!(f->par[i] = zx_aws_conn_s3(a->conn, f->creds, &ho, e, sizeof(e)))) {
            zx_seterr(err, errlen, "connection %s: %s", a->conn->name, e);
            goto fail;
        }
    f->bucket = strdup(a->bucket);
    f->sse = a->sse ? strdup(a->sse) : NULL;
    f->kms_key_id = a->kms_key_id ? strdup(a->kms_key_id) : NULL;
    if (!f->bucket || (a->sse && !f->sse) || (a->kms_key_id && !f->kms_key_id)) {
        zx_seterr(err, errlen, "out of memory");
        goto fail;
    }
    return f;
fail:
    zx_fs3_free(f);
    return NULL;
}

/* 1 when key is stem + ext or stem + "-<digits>" + ext. */
static int own_key(const char *key, const char *stem, const char *ext)
{
    size_t sl = strlen(stem), el = strlen(ext), kl = strlen(key);
    if (kl < sl + el || strncmp(key, stem, sl) || strcmp(key + kl - el, ext))
        return 0;
    const char *m = key + sl, *end = key + kl - el;
    if (m == end)
        return 1;
    if (*m++ != '-' || m == end)
        return 0;
    for (; m < end; m++)
        if (*m < '0' || *m > '9')
            return 0;
    return 1;
}

/* Abort this output's uploads in progress (see begin). */
static int sweep(zx_fs3 *f, const char *stem, const char *ext, int *swept, char *err,
                 size_t errlen)
{
    char *km = NULL, *um = NULL;
    int rc = 0, pages = 0;
    for (;;) {
        zx_s3_uploads u;
        if (zx_s3_list_uploads(f->s3, f->bucket, stem, km, um, &u, err, errlen) != 0) {
            zx_s3_uploads_free(&u);
            rc = -1;
            break;
        }
        for (size_t i = 0; i < u.n && rc == 0; i++) {
            if (!own_key(u.items[i].key, stem, ext))
                continue;
            if (zx_s3_mpu_abort(f->s3, f->bucket, u.items[i].key, u.items[i].upload_id, err,
                                errlen) != 0)
                rc = -1;
            else if (swept)
                (*swept)++;
        }
        free(km);
        free(um);
        km = um = NULL;
        int more = rc == 0 && u.truncated && u.next_key_marker && ++pages < 100;
        if (more) {
            km = strdup(u.next_key_marker);
            um = u.next_upload_id_marker ? strdup(u.next_upload_id_marker) : NULL;
        }
        zx_s3_uploads_free(&u);
        if (!more || !km)
            break;
    }
    free(km);
    free(um);
    return rc;
}

int zx_fs3_begin(zx_fs3 *f, const char *key, const char *stem, const char *ext, int *swept,
                 char *err, size_t errlen)
{
    if (swept)
        *swept = 0;
    zx_fs3_abort(f);
    if (sweep(f, stem, ext, swept, err, errlen) < 0)
        return -1;
    size_t n = strlen(f->bucket) + strlen(key) + 8;
    if (!(f->where = malloc(n)))
        return zx_seterr(err, errlen, "out of memory");
    snprintf(f->where, n, "s3://%s/%s", f->bucket, key);
    zx_s3_put_opts po = {.sse = f->sse, .kms_key_id = f->kms_key_id,
                         .checksum = ZX_S3_CHECKSUM_SHA256};
    if (!(f->up = zx_s3_upload_new(f->s3, f->bucket, key, FS3_PART, &po, err, errlen)))
        return -1;
    if (zx_s3_upload_parallel(f->up, f->par, FS3_PARALLEL, err, errlen) != 0)
        return -1;
    f->bytes = 0;
    return 0;
}

int zx_fs3_write(zx_fs3 *f, const void *p, size_t n, char *err, size_t errlen)
{
    if (!f->up)
        return zx_seterr(err, errlen, "no object is being written");
    if (zx_s3_upload_write(f->up, p, n, err, errlen) != 0)
        return -1;
    f->bytes += n;
    return 0;
}

int zx_fs3_commit(zx_fs3 *f, uint64_t *size, char *err, size_t errlen)
{
    if (!f->up)
        return zx_seterr(err, errlen, "no object is being written");
    int rc = zx_s3_upload_commit(f->up, NULL, err, errlen);
    zx_s3_upload_free(f->up);                   /* a failed one was aborted */
    f->up = NULL;
    if (rc != 0)
        return -1;
    if (size)
        *size = f->bytes;
    return 0;
}

void zx_fs3_abort(zx_fs3 *f)
{
    if (!f)
        return;
    zx_s3_upload_free(f->up);                   /* aborts it */
    f->up = NULL;
    free(f->where);
    f->where = NULL;
}

void zx_fs3_free(zx_fs3 *f)
{
    if (!f)
        return;
    zx_fs3_abort(f);
    zx_s3_free(f->s3);
    for (int i = 0; i < FS3_PARALLEL; i++)
        zx_s3_free(f->par[i]);
    zx_aws_creds_free(f->creds);
    free(f->bucket);
    free(f->sse);
    free(f->kms_key_id);
    free(f);
}

const char *zx_fs3_where(const zx_fs3 *f)
{
    return f && f->where ? f->where : "";
}
