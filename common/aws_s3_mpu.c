/*
 * aws_s3_mpu.c — S3 multipart uploads (aws_s3.h): CreateMultipartUpload,
 * UploadPart, CompleteMultipartUpload, AbortMultipartUpload,
 * ListMultipartUploads.
 */
#include "common/aws_s3_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"

/* "uploadId=ID" (and "partNumber=N&" before it when number > 0). */
static int upload_query(zx_buf *q, int number, const char *upload_id)
{
    if (number > 0 && zx_buf_printf(q, "partNumber=%d", number) < 0)
        return -1;
    return s3_query(q, "uploadId", upload_id);
}

int zx_s3_mpu_create(zx_s3 *s, const char *bucket, const char *key, const zx_s3_put_opts *po,
                     char **upload_id, char *err, size_t errlen)
{
    static const zx_s3_put_opts none;
    if (!po)
        po = &none;
    *upload_id = NULL;
    s3_hdrs h = { .n = 0 };
    if (s3_hdr(&h, "Content-Type: %s",
               po->content_type ? po->content_type : "application/octet-stream") < 0)
        return zx_seterr(err, errlen, "the content type is too long");
    if (s3_sse_headers(&h, po, err, errlen) < 0)
        return ZX_S3_ERR;
    if (po->checksum == ZX_S3_CHECKSUM_SHA256)
        s3_hdr(&h, "x-amz-checksum-algorithm: SHA256");
    s3_call c = { .op = "CreateMultipartUpload", .method = "POST", .bucket = bucket,
                  .key = key, .query = "uploads", .headers = (const char *const *)h.v };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    if (rc == 0 && r.status != 200)
        rc = s3_fail(s, &c, &r, err, errlen);
    else if (rc == 0 && zx_s3_parse_upload_id(r.body, r.len, upload_id, err, errlen) < 0)
        rc = ZX_S3_ERR;
    zx_http_response_free(&r);
    return rc;
}

int zx_s3_mpu_part(zx_s3 *s, const char *bucket, const char *key, const char *upload_id,
                   int number, const void *data, size_t len, const zx_s3_put_opts *po,
                   zx_s3_part *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (number < 1 || number > ZX_S3_PARTS_MAX)
        return zx_seterr(err, errlen, "S3 part numbers are 1..%d, not %d", ZX_S3_PARTS_MAX,
                         number);
    if (len > ZX_S3_PART_MAX)
        return zx_seterr(err, errlen, "an S3 part has at most 5 GiB");
    zx_s3_checksum ck = po ? po->checksum : ZX_S3_CHECKSUM_SHA256;
    s3_hdrs h = { .n = 0 };
    char phash[65];
    if (s3_body_headers(&h, ck, data, len, phash, out->sha256) < 0)
        return zx_seterr(err, errlen, "out of memory");
    zx_buf q = { 0 };
    if (upload_query(&q, number, upload_id) < 0) {
        zx_buf_free(&q);
        return zx_seterr(err, errlen, "out of memory");
    }
    s3_call c = { .op = "UploadPart", .method = "PUT", .bucket = bucket, .key = key,
                  .query = q.p, .headers = (const char *const *)h.v, .body = data, .len = len,
                  .payload_hash = phash };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    if (rc == 0 && r.status != 200) {
        rc = s3_fail(s, &c, &r, err, errlen);
    } else if (rc == 0 && !r.header[S3_H_ETAG]) {
        rc = zx_seterr(err, errlen, "S3 bucket %.63s: UploadPart %d of %.200s answered without "
                                    "an ETag", bucket, number, key);
    } else if (rc == 0) {
        out->number = number;
        out->size = len;
        snprintf(out->etag, sizeof(out->etag), "%s", r.header[S3_H_ETAG]);
    }
    zx_http_response_free(&r);
    zx_buf_free(&q);
    return rc;
}

int zx_s3_mpu_complete(zx_s3 *s, const char *bucket, const char *key, const char *upload_id,
                       const zx_s3_part *parts, size_t n, const zx_s3_put_opts *po,
                       zx_s3_object_info *info, char *err, size_t errlen)
{
    zx_buf body = { 0 }, q = { 0 };
    char why[256];
    if (zx_s3_complete_body(parts, n, &body, why, sizeof(why)) < 0) {
        zx_buf_free(&body);
        return zx_seterr(err, errlen, "S3 bucket %.63s: %s (CompleteMultipartUpload %.200s)",
                         bucket, why, key);
    }
    s3_hdrs h = { .n = 0 };
    s3_hdr(&h, "Content-Type: application/xml");
    if (po && po->if_none_match)
        s3_hdr(&h, "If-None-Match: *");
    if (upload_query(&q, 0, upload_id) < 0) {
        zx_buf_free(&body);
        zx_buf_free(&q);
        return zx_seterr(err, errlen, "out of memory");
    }
    s3_call c = { .op = "CompleteMultipartUpload", .method = "POST", .bucket = bucket,
                  .key = key, .query = q.p, .headers = (const char *const *)h.v,
                  .body = body.p, .len = body.len };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    char etag[ZX_S3_ETAG_MAX];
    if (rc == 0 && r.status == 412) {
        rc = ZX_S3_EXISTS;
    } else if (rc == 0 && r.status != 200) {
        rc = s3_fail(s, &c, &r, err, errlen);
    } else if (rc == 0 && !zx_s3_parse_complete(r.body, r.len, etag)) {
        /* S3 may answer 200 and put the error in the body */
        rc = s3_fail(s, &c, &r, err, errlen);
    } else if (rc == 0 && info) {
        uint64_t size = 0;
        for (size_t i = 0; i < n; i++)
            size += parts[i].size;
        info->size = size;
        snprintf(info->etag, sizeof(info->etag), "%s", etag);
    }
    zx_http_response_free(&r);
    zx_buf_free(&body);
    zx_buf_free(&q);
    return rc;
}

int zx_s3_mpu_abort(zx_s3 *s, const char *bucket, const char *key, const char *upload_id,
                    char *err, size_t errlen)
{
    zx_buf q = { 0 };
    if (upload_query(&q, 0, upload_id) < 0) {
        zx_buf_free(&q);
        return zx_seterr(err, errlen, "out of memory");
    }
    s3_call c = { .op = "AbortMultipartUpload", .method = "DELETE", .bucket = bucket,
                  .key = key, .query = q.p };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    if (rc == 0 && r.status != 204 && r.status != 200 &&
        !(r.status == 404 && s3_is_code(&r, "NoSuchUpload")))
        rc = s3_fail(s, &c, &r, err, errlen);
    zx_http_response_free(&r);
    zx_buf_free(&q);
    return rc;
}

int zx_s3_list_uploads(zx_s3 *s, const char *bucket, const char *prefix,
                       const char *key_marker, const char *upload_id_marker,
                       zx_s3_uploads *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    zx_buf q = { 0 };
    if (zx_buf_printf(&q, "uploads&encoding-type=url") < 0 ||
        s3_query(&q, "prefix", prefix) < 0 || s3_query(&q, "key-marker", key_marker) < 0 ||
        s3_query(&q, "upload-id-marker", upload_id_marker) < 0) {
        zx_buf_free(&q);
        return zx_seterr(err, errlen, "out of memory");
    }
    s3_call c = { .op = "ListMultipartUploads", .method = "GET", .bucket = bucket,
                  .query = q.p, .about = prefix };
    zx_http_response r;
    int rc = s3_do(s, &c, &r, err, errlen);
    if (rc == 0 && r.status != 200)
        rc = s3_fail(s, &c, &r, err, errlen);
    else if (rc == 0 && zx_s3_parse_uploads(r.body, r.len, out, err, errlen) < 0)
        rc = ZX_S3_ERR;
    zx_http_response_free(&r);
    zx_buf_free(&q);
    return rc;
}

void zx_s3_uploads_free(zx_s3_uploads *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->n; i++) {
        free(u->items[i].key);
        free(u->items[i].upload_id);
    }
    free(u->items);
    free(u->next_key_marker);
    free(u->next_upload_id_marker);
    memset(u, 0, sizeof(*u));
}

/* "2026-12-02T15:00:00.000Z" as UTC seconds, or -1 when it is not that. */
static int64_t iso_utc(const char *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm);
}

int zx_s3_abort_uploads(zx_s3 *s, const char *bucket, const char *prefix, int64_t before,
                        int *aborted, char *err, size_t errlen)
{
    int n = 0, rc = 0;
    char *km = NULL, *im = NULL;
    for (;;) {
        zx_s3_uploads u;
        rc = zx_s3_list_uploads(s, bucket, prefix, km, im, &u, err, errlen);
        for (size_t i = 0; rc == 0 && i < u.n; i++) {
            int64_t at = iso_utc(u.items[i].initiated);
            if (before && (at < 0 || at >= before))
                continue; /* a run of now's, or of a date unread: left alone */
            rc = zx_s3_mpu_abort(s, bucket, u.items[i].key, u.items[i].upload_id, err, errlen);
            n += rc == 0;
        }
        free(km);
        free(im);
        km = u.next_key_marker;
        im = u.next_upload_id_marker;
        u.next_key_marker = u.next_upload_id_marker = NULL;
        int more = rc == 0 && u.truncated && (km || im);
        zx_s3_uploads_free(&u);
        if (!more)
            break;
    }
    free(km);
    free(im);
    if (aborted)
        *aborted = n;
    return rc;
}
