/*
 * aws_s3_xml.c — the pure pieces of the S3 client (aws_s3.h): a small
 * bounded scanner of S3's XML answers (errors, ListObjectsV2,
 * ListMultipartUploads, CompleteMultipartUploadResult), the
 * CompleteMultipartUpload body, and the request's address.
 *
 * The scanner knows S3's answers only: elements found by name within the
 * bytes given (never past them), no nesting of one name in itself, text
 * with the five entities and &#N; / &#xN; escapes.  No XML library.
 */
#include "common/aws_s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "common/util.h"

typedef struct span {
    const char *p;
    size_t n;
} span;

/* The first occurrence of needle (nlen bytes) in [p, end), or NULL. */
static const char *find(const char *p, const char *end, const char *needle, size_t nlen)
{
    while (p && (size_t)(end - p) >= nlen) {
        p = memchr(p, needle[0], (size_t)(end - p) - nlen + 1);
        if (!p)
            return NULL;
        if (memcmp(p, needle, nlen) == 0)
            return p;
        p++;
    }
    return NULL;
}

/* The next element <tag ...>content</tag> (or <tag/>) at or after *pos
 * within end: 1 with its content in *in and *pos past it, or 0. */
static int xml_elem(const char **pos, const char *end, const char *tag, span *in)
{
    size_t tlen = strlen(tag);
    const char *p = *pos;
    for (;;) {
        p = find(p, end, "<", 1);
        if (!p || (size_t)(end - p) < tlen + 2)
            return 0;
        if (memcmp(p + 1, tag, tlen) == 0 &&
            (p[tlen + 1] == '>' || p[tlen + 1] == ' ' || p[tlen + 1] == '/' ||
             p[tlen + 1] == '\t' || p[tlen + 1] == '\n' || p[tlen + 1] == '\r'))
            break;
        p++;
    }
    const char *gt = memchr(p, '>', (size_t)(end - p));
    if (!gt)
        return 0;
    if (gt[-1] == '/') {
        in->p = gt + 1;
        in->n = 0;
        *pos = gt + 1;
        return 1;
    }
    char close[80];
    if (tlen + 3 >= sizeof(close))
        return 0;
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *c = find(gt + 1, end, close, tlen + 3);
    if (!c)
        return 0;
    in->p = gt + 1;
    in->n = (size_t)(c - in->p);
    *pos = c + tlen + 3;
    return 1;
}

/* The content of the first <tag> within s. */
static int xml_get(span s, const char *tag, span *in)
{
    const char *pos = s.p;
    return xml_elem(&pos, s.p + s.n, tag, in);
}

/* Appends the code point cp as UTF-8 to out (room checked by caller: 4). */
static size_t put_utf8(unsigned long cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* One entity at s.p[i] ('&'): its bytes into out (room 4), *used the
 * entity's length.  The bytes' count, or 0 when it is not one. */
static size_t entity(span s, size_t i, char *out, size_t *used)
{
    static const struct { const char *name; char ch; } named[] = {
        { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
    };
    for (size_t k = 0; k < sizeof(named) / sizeof(named[0]); k++) {
        size_t l = strlen(named[k].name);
        if (s.n - i >= l && memcmp(s.p + i, named[k].name, l) == 0) {
            out[0] = named[k].ch;
            *used = l;
            return 1;
        }
    }
    if (s.n - i < 4 || s.p[i + 1] != '#')
        return 0;
    size_t j = i + 2;
    int hex = s.p[j] == 'x' || s.p[j] == 'X';
    if (hex)
        j++;
    unsigned long cp = 0;
    size_t digits = 0;
    for (; j < s.n && s.p[j] != ';' && digits < 8; j++, digits++) {
        int v = hex ? zx_hexval((unsigned char)s.p[j])
                    : (s.p[j] >= '0' && s.p[j] <= '9' ? s.p[j] - '0' : -1);
        if (v < 0)
            return 0;
        cp = cp * (hex ? 16 : 10) + (unsigned long)v;
    }
    if (j >= s.n || s.p[j] != ';' || !digits || cp > 0x10FFFF || cp == 0)
        return 0;
    *used = j + 1 - i;
    return put_utf8(cp, out);
}

/* The text of s (entities decoded, then %XX decoded when url) into out of
 * room cap (NUL-terminated).  Its length, or -1 when it does not fit. */
static long xml_text(span s, int url, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < s.n;) {
        char tmp[4];
        size_t k = 1, used = 1;
        tmp[0] = s.p[i];
        if (s.p[i] == '&') {
            k = entity(s, i, tmp, &used);
            if (!k) {
                tmp[0] = '&';
                k = used = 1;
            }
        }
        if (o + k + 1 > cap)
            return -1;
        memcpy(out + o, tmp, k);
        o += k;
        i += used;
    }
    out[o] = '\0';
    if (url) {
        size_t w = 0;
        for (size_t r = 0; r < o; r++) {
            int b = zx_pct_byte(out, o, r);
            if (b >= 0) {
                out[w++] = (char)b;
                r += 2;
            } else {
                out[w++] = out[r];
            }
        }
        out[w] = '\0';
        o = w;
    }
    return (long)o;
}

/* Like xml_text into a fixed field, cut to fit, control characters (a
 * message spans lines) replaced by spaces. */
static void xml_field(span s, char *out, size_t cap)
{
    if (xml_text(s, 0, out, cap) < 0) {
        span cut = { s.p, s.n < cap / 4 ? s.n : cap / 4 };
        if (xml_text(cut, 0, out, cap) < 0)
            out[0] = '\0';
    }
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
}

/* A malloc'd decoded copy of s, at most max bytes; NULL (with err) when
 * longer or out of memory. */
static char *xml_dup(span s, int url, size_t max, const char *what, char *err, size_t errlen)
{
    /* decoding never lengthens: entities and escapes are longer than
     * their bytes */
    if (s.n > max * 12 + 64) {
        zx_seterr(err, errlen, "S3 answered a %s longer than %zu bytes", what, max);
        return NULL;
    }
    size_t cap = s.n + 1;
    char *out = malloc(cap);
    if (!out) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    long l = xml_text(s, url, out, cap);
    if (l < 0 || (size_t)l > max) {
        free(out);
        zx_seterr(err, errlen, "S3 answered a %s longer than %zu bytes", what, max);
        return NULL;
    }
    return out;
}

static uint64_t to_u64(span s)
{
    uint64_t v = 0;
    for (size_t i = 0; i < s.n && s.p[i] >= '0' && s.p[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(s.p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return UINT64_MAX;
        v = v * 10 + d;
    }
    return v;
}

static int is_true(span s)
{
    return s.n == 4 && memcmp(s.p, "true", 4) == 0;
}

int zx_s3_parse_error(const char *xml, size_t len, zx_s3_error *e)
{
    memset(e, 0, sizeof(*e));
    span all = { xml ? xml : "", xml ? len : 0 }, err, f;
    if (!xml_get(all, "Error", &err) || !xml_get(err, "Code", &f))
        return 0;
    xml_field(f, e->code, sizeof(e->code));
    if (xml_get(err, "Message", &f))
        xml_field(f, e->message, sizeof(e->message));
    if (xml_get(err, "RequestId", &f))
        xml_field(f, e->request_id, sizeof(e->request_id));
    return e->code[0] != '\0';
}

int zx_s3_parse_list(const char *xml, size_t len, zx_s3_list *out, char *err, size_t errlen)
{
    span all = { xml ? xml : "", xml ? len : 0 }, res, f, c;
    if (!xml_get(all, "ListBucketResult", &res))
        return zx_seterr(err, errlen, "S3 answered something other than a ListBucketResult");
    int url = xml_get(res, "EncodingType", &f) && f.n == 3 && memcmp(f.p, "url", 3) == 0;
    out->truncated = xml_get(res, "IsTruncated", &f) && is_true(f);
    if (out->truncated && xml_get(res, "NextContinuationToken", &f) && f.n) {
        free(out->next);
        out->next = xml_dup(f, 0, 4096, "continuation token", err, errlen);
        if (!out->next)
            return -1;
    }
    const char *pos = res.p, *end = res.p + res.n;
    while (xml_elem(&pos, end, "Contents", &c)) {
        if (!xml_get(c, "Key", &f))
            continue;
        if (zx_grow(&out->items, out->n, &out->cap, sizeof(*out->items)) < 0)
            return zx_seterr(err, errlen, "out of memory");
        zx_s3_entry *e = &out->items[out->n];
        memset(e, 0, sizeof(*e));
        e->key = xml_dup(f, url, ZX_S3_KEY_MAX, "key", err, errlen);
        if (!e->key)
            return -1;
        out->n++;
        if (xml_get(c, "Size", &f))
            e->size = to_u64(f);
        if (xml_get(c, "ETag", &f))
            xml_field(f, e->etag, sizeof(e->etag));
    }
    return 0;
}

int zx_s3_parse_uploads(const char *xml, size_t len, zx_s3_uploads *out, char *err,
                        size_t errlen)
{
    span all = { xml ? xml : "", xml ? len : 0 }, res, f, c;
    if (!xml_get(all, "ListMultipartUploadsResult", &res))
        return zx_seterr(err, errlen,
                         "S3 answered something other than a ListMultipartUploadsResult");
    int url = xml_get(res, "EncodingType", &f) && f.n == 3 && memcmp(f.p, "url", 3) == 0;
    out->truncated = xml_get(res, "IsTruncated", &f) && is_true(f);
    if (out->truncated) {
        free(out->next_key_marker);
        free(out->next_upload_id_marker);
        out->next_key_marker = out->next_upload_id_marker = NULL;
        if (xml_get(res, "NextKeyMarker", &f) &&
            !(out->next_key_marker = xml_dup(f, url, ZX_S3_KEY_MAX, "key", err, errlen)))
            return -1;
        if (xml_get(res, "NextUploadIdMarker", &f) &&
            !(out->next_upload_id_marker = xml_dup(f, 0, 1024, "upload id", err, errlen)))
            return -1;
    }
    const char *pos = res.p, *end = res.p + res.n;
    while (xml_elem(&pos, end, "Upload", &c)) {
        span k, id;
        if (!xml_get(c, "Key", &k) || !xml_get(c, "UploadId", &id))
            continue;
        if (zx_grow(&out->items, out->n, &out->cap, sizeof(*out->items)) < 0)
            return zx_seterr(err, errlen, "out of memory");
        zx_s3_upload_entry *e = &out->items[out->n];
        memset(e, 0, sizeof(*e));
        out->n++;
        e->key = xml_dup(k, url, ZX_S3_KEY_MAX, "key", err, errlen);
        e->upload_id = e->key ? xml_dup(id, 0, 1024, "upload id", err, errlen) : NULL;
        if (!e->upload_id)
            return -1;
        if (xml_get(c, "Initiated", &f))
            xml_field(f, e->initiated, sizeof(e->initiated));
    }
    return 0;
}

int zx_s3_parse_upload_id(const char *xml, size_t len, char **upload_id, char *err,
                          size_t errlen)
{
    span all = { xml ? xml : "", xml ? len : 0 }, res, f;
    *upload_id = NULL;
    if (!xml_get(all, "InitiateMultipartUploadResult", &res) || !xml_get(res, "UploadId", &f) ||
        !f.n)
        return zx_seterr(err, errlen, "S3 answered CreateMultipartUpload without an UploadId");
    *upload_id = xml_dup(f, 0, 1024, "upload id", err, errlen);
    return *upload_id ? 0 : -1;
}

int zx_s3_parse_complete(const char *xml, size_t len, char etag[ZX_S3_ETAG_MAX])
{
    span all = { xml ? xml : "", xml ? len : 0 }, f;
    etag[0] = '\0';
    zx_s3_error e;
    /* AWS names the root CompleteMultipartUploadResult, moto ...Response:
     * a 200 answer is a success unless it holds an Error */
    if (zx_s3_parse_error(xml, len, &e) || !xml_get(all, "ETag", &f))
        return 0;
    xml_field(f, etag, ZX_S3_ETAG_MAX);
    return 1;
}

/* Appends s with & < > escaped. */
static int put_escaped(zx_buf *b, const char *s)
{
    for (; *s; s++) {
        const char *rep = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : NULL;
        if (rep ? zx_buf_put(b, rep, strlen(rep)) < 0 : zx_buf_put(b, s, 1) < 0)
            return -1;
    }
    return 0;
}

int zx_s3_complete_body(const zx_s3_part *parts, size_t n, zx_buf *b, char *err,
                        size_t errlen)
{
    if (n == 0)
        return zx_seterr(err, errlen, "a multipart upload needs at least one part");
    if (n > ZX_S3_PARTS_MAX)
        return zx_seterr(err, errlen, "a multipart upload has at most %d parts",
                         ZX_S3_PARTS_MAX);
    for (size_t i = 0; i < n; i++) {
        if (parts[i].number < 1 || parts[i].number > ZX_S3_PARTS_MAX ||
            (i && parts[i].number <= parts[i - 1].number))
            return zx_seterr(err, errlen,
                             "part numbers must increase within 1..%d (part %zu is %d)",
                             ZX_S3_PARTS_MAX, i + 1, parts[i].number);
        if (i + 1 < n && parts[i].size < ZX_S3_PART_MIN)
            return zx_seterr(err, errlen,
                             "part %d has %llu bytes: every part but the last needs at "
                             "least %zu (5 MiB)",
                             parts[i].number, (unsigned long long)parts[i].size,
                             ZX_S3_PART_MIN);
        if (!parts[i].etag[0])
            return zx_seterr(err, errlen, "part %d has no ETag", parts[i].number);
    }
    int bad = zx_buf_printf(b, "<CompleteMultipartUpload "
                               "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for (size_t i = 0; i < n && !bad; i++) {
        bad |= zx_buf_printf(b, "<Part><PartNumber>%d</PartNumber><ETag>", parts[i].number);
        bad |= put_escaped(b, parts[i].etag);
        bad |= zx_buf_printf(b, "</ETag>");
        if (parts[i].sha256[0]) {
            bad |= zx_buf_printf(b, "<ChecksumSHA256>");
            bad |= put_escaped(b, parts[i].sha256);
            bad |= zx_buf_printf(b, "</ChecksumSHA256>");
        }
        bad |= zx_buf_printf(b, "</Part>");
    }
    bad |= zx_buf_printf(b, "</CompleteMultipartUpload>");
    return bad ? zx_seterr(err, errlen, "out of memory") : 0;
}

/* A bucket name S3 accepts in a path (the legacy rules are wider than the
 * current ones: letters, digits, '.', '-', '_'; 1..255). */
static int bucket_ok(const char *b)
{
    size_t n = strlen(b);
    if (n < 1 || n > 255)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = b[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '-' || ch == '_'))
            return 0;
    }
    return 1;
}

/* A bucket name that can be a host name label under TLS: 3..63 of
 * a-z 0-9 '-', not starting or ending with '-'. */
static int bucket_dns(const char *b)
{
    size_t n = strlen(b);
    if (n < 3 || n > 63 || b[0] == '-' || b[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '-'))
            return 0;
    return 1;
}

int zx_s3_address(const char *endpoint, const char *region, int path_style,
                  const char *bucket, const char *key, const char *query, char **url,
                  char **host, char **path, char *err, size_t errlen)
{
    *url = *host = *path = NULL;
    char defep[160];
    if (!endpoint || !*endpoint) {
        if (!region || !*region || strlen(region) > 64)
            return zx_seterr(err, errlen, "S3 needs a region");
        snprintf(defep, sizeof(defep), "https://s3.%s.amazonaws.com", region);
        endpoint = defep;
    }
    size_t sl = strncmp(endpoint, "https://", 8) == 0 ? 8
              : strncmp(endpoint, "http://", 7) == 0  ? 7
                                                      : 0;
    size_t hl = sl ? strlen(endpoint + sl) : 0;
    while (hl && endpoint[sl + hl - 1] == '/')
        hl--;
    if (!sl || !hl || memchr(endpoint + sl, '/', hl) || memchr(endpoint + sl, '?', hl) ||
        memchr(endpoint + sl, '@', hl) || memchr(endpoint + sl, '#', hl))
        return zx_seterr(err, errlen,
                         "the S3 endpoint must be http(s)://host[:port] without a path");
    if (!bucket || !bucket_ok(bucket))
        return zx_seterr(err, errlen,
                         "bad S3 bucket name '%.80s': letters, digits, '.', '-' and '_' only",
                         bucket ? bucket : "");
    if (key && (!*key || strlen(key) > ZX_S3_KEY_MAX))
        return zx_seterr(err, errlen, "an S3 key has 1..%d bytes", ZX_S3_KEY_MAX);
    int virt = !path_style && bucket_dns(bucket);
    char *ek = key ? zx_aws_uri_encode(key, strlen(key), 1) : NULL;
    zx_buf h = { 0 }, p = { 0 }, u = { 0 };
    int bad = key && !ek;
    if (virt)
        bad |= zx_buf_printf(&h, "%s.%.*s", bucket, (int)hl, endpoint + sl);
    else
        bad |= zx_buf_printf(&h, "%.*s", (int)hl, endpoint + sl);
    if (!virt)
        bad |= zx_buf_printf(&p, "/%s%s", bucket, key ? "/" : "");
    else
        bad |= zx_buf_printf(&p, "/");
    if (ek)
        bad |= zx_buf_printf(&p, "%s", ek);
    bad |= zx_buf_printf(&u, "%.*s%s%s%s%s", (int)sl, endpoint, h.p ? h.p : "", p.p ? p.p : "",
                         query && *query ? "?" : "", query ? query : "");
    free(ek);
    if (bad) {
        zx_buf_free(&h);
        zx_buf_free(&p);
        zx_buf_free(&u);
        return zx_seterr(err, errlen, "out of memory");
    }
    *url = u.p;
    *host = h.p;
    *path = p.p;
    return 0;
}
