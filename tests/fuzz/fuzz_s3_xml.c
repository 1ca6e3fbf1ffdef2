/*
 * fuzz_s3_xml.c — fuzz target for the S3 client's scanner of S3's XML
 * answers (common/aws_s3_xml.c), which reads what an S3 endpoint (or
 * anything answering in its place) sends back.
 *
 * Input: any bytes, given without a NUL after them (so that a read past
 * the end is caught), to each reader: the error scanner, the ListObjectsV2
 * and ListMultipartUploads pages, the InitiateMultipartUpload and
 * CompleteMultipartUpload results.  Each must answer 0 / -1 (or 1 / 0)
 * without reading past the input; error fields are NUL-terminated and
 * printable-or-UTF-8 (no control characters); keys within ZX_S3_KEY_MAX;
 * a -1 carries a message.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/s3_xml/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws_s3.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_field(const char *f, size_t cap, const char *what)
{
    fuzz_check(memchr(f, '\0', cap) != NULL, what);
    for (; *f; f++)
        fuzz_check((unsigned char)*f >= 0x20 && *f != 0x7f, what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    char *x = malloc(size ? size : 1);
    if (!x)
        return 0;
    memcpy(x, data, size);
    char err[256];

    zx_s3_error e;
    int r = zx_s3_parse_error(x, size, &e);
    fuzz_check(r == 0 || r == 1, "error: neither 0 nor 1");
    fuzz_check(r == (e.code[0] != '\0'), "error: 1 without a code, or 0 with one");
    check_field(e.code, sizeof(e.code), "error: code");
    check_field(e.message, sizeof(e.message), "error: message");
    check_field(e.request_id, sizeof(e.request_id), "error: request id");

    zx_s3_list l;
    memset(&l, 0, sizeof(l));
    err[0] = '\0';
    r = zx_s3_parse_list(x, size, &l, err, sizeof(err));
    fuzz_check(r == 0 || (r == -1 && err[0]), "list: not 0, or -1 without a message");
    for (size_t i = 0; i < l.n; i++) {
        fuzz_check(l.items[i].key && strlen(l.items[i].key) <= ZX_S3_KEY_MAX, "list: key");
        check_field(l.items[i].etag, sizeof(l.items[i].etag), "list: etag");
    }
    zx_s3_list_free(&l);

    zx_s3_uploads u;
    memset(&u, 0, sizeof(u));
    err[0] = '\0';
    r = zx_s3_parse_uploads(x, size, &u, err, sizeof(err));
    fuzz_check(r == 0 || (r == -1 && err[0]), "uploads: not 0, or -1 without a message");
    for (size_t i = 0; i < u.n; i++) {
        if (!u.items[i].key)
            continue; /* a -1 part-way: freed below */
        fuzz_check(strlen(u.items[i].key) <= ZX_S3_KEY_MAX, "uploads: key");
        check_field(u.items[i].initiated, sizeof(u.items[i].initiated), "uploads: initiated");
    }
    zx_s3_uploads_free(&u);

    char *id = NULL;
    r = zx_s3_parse_upload_id(x, size, &id, err, sizeof(err));
    fuzz_check((r == 0 && id) || (r == -1 && !id), "upload id: result and id disagree");
    free(id);

    char etag[ZX_S3_ETAG_MAX];
    r = zx_s3_parse_complete(x, size, etag);
    fuzz_check(r == 0 || r == 1, "complete: neither 0 nor 1");
    check_field(etag, sizeof(etag), "complete: etag");
    free(x);
    return 0;
}
