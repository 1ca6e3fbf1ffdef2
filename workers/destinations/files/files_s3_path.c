/*
 * files_s3_path.c — what an S3 path of the files destination may be
 * (files_s3.h): pure, for the loader's check and the destination alike.
 */
#include "workers/destinations/files/files_s3.h"

#include <string.h>

#include "common/util.h"

#define FS3_KEY_MAX 900          /* of the configured key part: room for
                                    "<sync>-<run id>.parquet" below S3's 1024 */

int zx_files_is_s3(const char *path)
{
    return path && !strncmp(path, ZX_FILES_S3_SCHEME, strlen(ZX_FILES_S3_SCHEME));
}

static int bucket_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int zx_files_s3_check(const char *url, size_t *key_off, char *err, size_t errlen)
{
    if (!zx_files_is_s3(url))
        return zx_seterr(err, errlen, "%.80s: not an s3:// URL", url ? url : "(none)");
    const char *b = url + strlen(ZX_FILES_S3_SCHEME);
    size_t bl = strcspn(b, "/");
    if (bl < 3 || bl > 63 || !bucket_char(b[0]) || !bucket_char(b[bl - 1]))
        return zx_seterr(err, errlen, "%.120s: the bucket name must be 3 to 63 lower-case "
                         "letters, digits, '.' or '-', starting and ending with a letter "
                         "or digit", url);
    for (size_t i = 0; i < bl; i++)
        if (!bucket_char(b[i]) && b[i] != '.' && b[i] != '-')
            return zx_seterr(err, errlen, "%.120s: the bucket name must be 3 to 63 "
                             "lower-case letters, digits, '.' or '-'", url);
    const char *k = b + bl;
    if (*k == '/')
        k++;
    size_t kl = strlen(k);
    if (kl > FS3_KEY_MAX)
        return zx_seterr(err, errlen, "%.120s...: the key part is %zu bytes (at most %d)",
                         url, kl, FS3_KEY_MAX);
    for (const char *s = k; *s;) {
        size_t n = strcspn(s, "/");
        if ((n == 0 && s[n] == '/') || (n == 1 && s[0] == '.') ||
            (n == 2 && s[0] == '.' && s[1] == '.'))
            return zx_seterr(err, errlen, "%.200s: an empty, '.' or '..' part in the key "
                             "(write s3://bucket/a/b/)", url);
        s += n;
        if (*s == '/')
            s++;
    }
    for (const char *s = k; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '\\')
            return zx_seterr(err, errlen, "%.120s: a control character or '\\' in the key",
                             url);
    if (key_off)
        *key_off = (size_t)(k - url);
    return 0;
}
