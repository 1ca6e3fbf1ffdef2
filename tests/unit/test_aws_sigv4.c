/*
 * test_aws_sigv4.c — AWS Signature Version 4 (common/aws_sigv4.h) against
 * tests/unit/data/sigv4_vectors.txt (the AWS SigV4 test suite's cases, the
 * examples of S3's documentation, zx's own cases checked with botocore; the
 * file's head describes its format), then the errors: bad input refused
 * with a clear reason that never holds the secret.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/aws_sigv4.h"
#include "common/buf.h"

#include "tests/unit/check.h"

#ifndef ZX_SIGV4_VECTORS
#error "ZX_SIGV4_VECTORS: the vectors file's path (tests/unit/meson.build sets it)"
#endif

enum { S_REQ, S_CREQ, S_STS, S_AUTHZ, S_N };
static const char *const SECTIONS[S_N] = {"req", "creq", "sts", "authz"};

typedef struct vcase {
    char name[128];
    char ak[256], sk[256], region[64], service[64];
    char token[2048], phash[96];
    unsigned flags;
    zx_buf sec[S_N];
    int have[S_N];
} vcase;

static int ncases;

/* "20150830T123600Z" into seconds; -1 if malformed. */
static time_t parse_amzdate(const char *s)
{
    struct tm tm = {0};
    if (strlen(s) != 16 || sscanf(s, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return timegm(&tm);
}

static int header_is(const char *line, const char *name)
{
    size_t n = strlen(name);
    return !strncasecmp(line, name, n) && line[n] == ':';
}

static void show_diff(const char *what, const char *want, const char *got)
{
    printf("--- %s wanted:\n%s\n--- got:\n%s\n---\n", what, want, got ? got : "(null)");
}

/* Runs one case: the request parsed from its req section, then the
 * canonical request, string to sign and Authorization compared. */
static void run_case(vcase *c)
{
    ncases++;
    char *req = strdup(c->sec[S_REQ].p ? c->sec[S_REQ].p : "");
    const char *headers[160];
    size_t nh = 0;
    char *body = NULL, *line = req;
    char *eol = strchr(line, '\n');
    if (eol)
        *eol = '\0';
    char *sp1 = strchr(line, ' '), *sp2 = strrchr(line, ' ');
    CHECK(sp1 && sp2 && sp2 > sp1);
    if (!sp1 || !sp2 || sp2 <= sp1) {
        printf("case %s: bad request line\n", c->name);
        free(req);
        return;
    }
    *sp1 = *sp2 = '\0';
    char *path = sp1 + 1, *query = strchr(path, '?');
    if (query)
        *query++ = '\0';
    time_t now = -1;
    char *p = eol ? eol + 1 : NULL;
    while (p) {
        char *e = strchr(p, '\n');
        if (e)
            *e = '\0';
        if (!*p) {        /* the empty line: the body follows */
            body = e ? e + 1 : NULL;
            break;
        }
        if (header_is(p, "x-amz-date")) {
            now = parse_amzdate(p + 10 + strspn(p + 11, " ") + 1);
        } else if (!header_is(p, "x-amz-security-token") &&
                   !((c->flags & ZX_SIGV4_CONTENT_SHA256) && header_is(p, "x-amz-content-sha256"))) {
            if (nh < sizeof(headers) / sizeof(headers[0]) - 1)
                headers[nh++] = p;
        }
        p = e ? e + 1 : NULL;
    }
    headers[nh] = NULL;
    CHECK(now > 0);
    zx_sigv4_request rq = {
        .method = line, .path = path, .query = query, .headers = headers,
        .payload = body, .payload_len = body ? strlen(body) : 0,
        .payload_hash = c->phash[0] ? c->phash : NULL,
        .region = c->region, .service = c->service, .now = now, .flags = c->flags,
    };
    zx_aws_keys k = {c->ak, c->sk, c->token[0] ? c->token : NULL};
    char err[256] = "", *creq = NULL, *sts = NULL;
    int rc = zx_sigv4_canonical(&rq, &k, &creq, &sts, err, sizeof(err));
    if (rc != 0)
        printf("case %s: %s\n", c->name, err);
    CHECK(rc == 0);
    if (rc == 0 && strcmp(creq, c->sec[S_CREQ].p)) {
        printf("case %s:\n", c->name);
        show_diff("canonical request", c->sec[S_CREQ].p, creq);
        CHECK(!"canonical request");
    }
    if (rc == 0 && strcmp(sts, c->sec[S_STS].p)) {
        printf("case %s:\n", c->name);
        show_diff("string to sign", c->sec[S_STS].p, sts);
        CHECK(!"string to sign");
    }
    free(creq);
    free(sts);

    zx_sigv4_signed out;
    rc = zx_sigv4_sign(&rq, &k, &out, err, sizeof(err));
    CHECK(rc == 0);
    if (rc == 0) {
        char want[4096];
        snprintf(want, sizeof(want), "Authorization: %s", c->sec[S_AUTHZ].p);
        if (strcmp(out.lines[0], want)) {
            printf("case %s:\n", c->name);
            show_diff("Authorization", want, out.lines[0]);
            CHECK(!"Authorization");
        }
        const char *sig = strstr(c->sec[S_AUTHZ].p, "Signature=");
        CHECK(sig && !strcmp(out.signature, sig + 10));
        CHECK(!strncmp(out.lines[1], "X-Amz-Date: ", 12) &&
              parse_amzdate(out.lines[1] + 12) == now);
        size_t i = 2;
        if (c->flags & ZX_SIGV4_CONTENT_SHA256) {
            CHECK(out.lines[i] && !strncmp(out.lines[i], "x-amz-content-sha256: ", 22));
            i++;
        }
        if (c->token[0]) {
            snprintf(want, sizeof(want), "X-Amz-Security-Token: %s", c->token);
            CHECK(out.lines[i] && !strcmp(out.lines[i], want));
            i++;
        }
        CHECK(out.lines[i] == NULL);
        CHECK(strstr(out.lines[0], c->sk) == NULL);
    }
    zx_sigv4_signed_free(&out);
    free(req);
}

/* "@@ word rest" directives; returns the section index opened, or -1. */
static int directive(vcase *c, const char *d)
{
    char w[16] = "", a[2048] = "", b[256] = "";
    sscanf(d, "%15s %2047s %255s", w, a, b);
    if (!strcmp(w, "case")) {
        snprintf(c->name, sizeof(c->name), "%s", a);
        c->token[0] = c->phash[0] = '\0';
        c->flags = 0;
        for (int i = 0; i < S_N; i++) {
            zx_buf_reset(&c->sec[i]);
            c->have[i] = 0;
        }
    } else if (!strcmp(w, "keys")) {
        snprintf(c->ak, sizeof(c->ak), "%s", a);
        snprintf(c->sk, sizeof(c->sk), "%s", b);
    } else if (!strcmp(w, "scope")) {
        snprintf(c->region, sizeof(c->region), "%s", a);
        snprintf(c->service, sizeof(c->service), "%s", b);
    } else if (!strcmp(w, "token")) {
        snprintf(c->token, sizeof(c->token), "%s", a);
    } else if (!strcmp(w, "payload-hash")) {
        snprintf(c->phash, sizeof(c->phash), "%s", a);
    } else if (!strcmp(w, "flags")) {
        c->flags = (strstr(d, " s3") ? ZX_SIGV4_S3 : 0) |
                   (strstr(d, "content-sha256") ? ZX_SIGV4_CONTENT_SHA256 : 0);
    } else if (!strcmp(w, "end")) {
        CHECK(c->have[S_REQ] && c->have[S_CREQ] && c->have[S_STS] && c->have[S_AUTHZ]);
        run_case(c);
    } else {
        for (int i = 0; i < S_N; i++)
            if (!strcmp(w, SECTIONS[i]))
                return i;
        printf("vectors: unknown directive @@ %s\n", w);
        CHECK(!"directive");
    }
    return -1;
}

static void test_vectors(void)
{
    FILE *f = fopen(ZX_SIGV4_VECTORS, "r");
    CHECK(f != NULL);
    if (!f) {
        printf("cannot open %s\n", ZX_SIGV4_VECTORS);
        return;
    }
    vcase *c = calloc(1, sizeof(*c));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int sec = -1;
    while ((n = getline(&line, &cap, f)) >= 0) {
        if (n && line[n - 1] == '\n')
            line[--n] = '\0';
        if (!strncmp(line, "@@ ", 3)) {
            sec = directive(c, line + 3);
            if (sec >= 0)
                c->have[sec] = 1;
        } else if (sec >= 0) {
            zx_buf *b = &c->sec[sec];
            if (b->len || c->have[sec] > 1)
                zx_buf_put(b, "\n", 1);
            zx_buf_put(b, line, (size_t)n);
            c->have[sec] = 2;
        }
    }
    free(line);
    fclose(f);
    for (int i = 0; i < S_N; i++)
        zx_buf_free(&c->sec[i]);
    free(c);
    printf("%d vectors\n", ncases);
    CHECK(ncases >= 40);
}

/* ---- errors --------------------------------------------------------- */

#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

/* Signs headers/path/query expecting failure with `want` in the error. */
static void expect_error(const char *path, const char *query, const char *const *headers,
                         const char *phash, const char *want)
{
    zx_sigv4_request rq = {
        .method = "GET", .path = path, .query = query, .headers = headers,
        .payload_hash = phash, .region = "us-east-1", .service = "service",
        .now = 1440938160, .flags = 0,
    };
    zx_aws_keys k = {"AKIDEXAMPLE", SECRET, "tok"};
    zx_sigv4_signed out;
    char err[512] = "";
    int rc = zx_sigv4_sign(&rq, &k, &out, err, sizeof(err));
    CHECK(rc == -1);
    CHECK(out.lines[0] == NULL);
    if (!strstr(err, want)) {
        printf("wanted \"%s\" in: %s\n", want, err);
        CHECK(!"error text");
    }
    CHECK(strstr(err, SECRET) == NULL && strstr(err, "wJalr") == NULL);
    zx_sigv4_signed_free(&out);
    char *creq = (char *)"x", *sts = (char *)"x";
    CHECK(zx_sigv4_canonical(&rq, &k, &creq, &sts, err, sizeof(err)) == -1);
    CHECK(creq == NULL && sts == NULL);
}

static void test_errors(void)
{
    const char *nohost[] = {"Content-Type: text/plain", NULL};
    expect_error("/", NULL, nohost, NULL, "no Host header");
    const char *nocolon[] = {"Host: example.amazonaws.com", "Just-A-Name", NULL};
    expect_error("/", NULL, nocolon, NULL, "header line 2 has no ':'");
    const char *spacename[] = {"Host: example.amazonaws.com", "Bad Name: x", NULL};
    expect_error("/", NULL, spacename, NULL, "header line 2: the name");
    const char *crlf[] = {"Host: example.amazonaws.com", "X-Inject: a\r\nEvil: b", NULL};
    expect_error("/", NULL, crlf, NULL, "control character");
    const char *dated[] = {"Host: example.amazonaws.com", "X-Amz-Date: 20150830T123600Z", NULL};
    expect_error("/", NULL, dated, NULL, "x-amz-date is added by the signer");
    const char *tokened[] = {"Host: h", "X-Amz-Security-Token: tok", NULL};
    expect_error("/", NULL, tokened, NULL, "x-amz-security-token is added by the signer");

    size_t big = ZX_SIGV4_LINE_MAX + 10;
    char *longline = malloc(big + 1);
    memcpy(longline, "X-Long: ", 8);
    memset(longline + 8, 'a', big - 8);
    longline[big] = '\0';
    const char *toolong[] = {"Host: example.amazonaws.com", longline, NULL};
    expect_error("/", NULL, toolong, NULL, "header line 2 is over 16384 bytes");
    free(longline);

    const char *many[ZX_SIGV4_HEADERS_MAX + 2];
    for (size_t i = 0; i < ZX_SIGV4_HEADERS_MAX + 1; i++)
        many[i] = "Host: h";
    many[ZX_SIGV4_HEADERS_MAX + 1] = NULL;
    expect_error("/", NULL, many, NULL, "over 128 header lines");

    const char *ok[] = {"Host: example.amazonaws.com", NULL};
    expect_error("", NULL, ok, NULL, "must start with '/'");
    expect_error("relative", NULL, ok, NULL, "must start with '/'");
    expect_error("/a?b=1", NULL, ok, NULL, "give the query string in query");
    expect_error("/", "a=%zz", ok, NULL, "'%' not followed by two hex digits");
    expect_error("/", "a=%4", ok, NULL, "'%' not followed by two hex digits");
    expect_error("/", "a=b c", ok, NULL, "query string holds a space");
    expect_error("/", NULL, ok, "not-a-hash", "payload_hash must be");
    expect_error("/", NULL, NULL, NULL, "no Host header");

    /* bad keys: the reason, never the secret */
    zx_sigv4_request rq = {.method = "GET", .path = "/", .headers = ok, .region = "us-east-1",
                           .service = "service", .now = 1440938160};
    zx_sigv4_signed out;
    char err[512];
    zx_aws_keys nokey = {"", SECRET, NULL};
    CHECK(zx_sigv4_sign(&rq, &nokey, &out, err, sizeof(err)) == -1 &&
          strstr(err, "access key id") && !strstr(err, SECRET));
    char longsecret[400];
    memset(longsecret, 'S', sizeof(longsecret) - 1);
    longsecret[sizeof(longsecret) - 1] = '\0';
    zx_aws_keys bigsecret = {"AKIDEXAMPLE", longsecret, NULL};
    CHECK(zx_sigv4_sign(&rq, &bigsecret, &out, err, sizeof(err)) == -1 &&
          strstr(err, "secret access key") && !strstr(err, "SSSSSSSS"));
    zx_aws_keys nosecret = {"AKIDEXAMPLE", NULL, NULL};
    CHECK(zx_sigv4_sign(&rq, &nosecret, &out, err, sizeof(err)) == -1);
    zx_aws_keys badtok = {"AKIDEXAMPLE", SECRET, "a\nb"};
    CHECK(zx_sigv4_sign(&rq, &badtok, &out, err, sizeof(err)) == -1 &&
          strstr(err, "session token"));
    rq.region = "us east";
    zx_aws_keys good = {"AKIDEXAMPLE", SECRET, NULL};
    CHECK(zx_sigv4_sign(&rq, &good, &out, err, sizeof(err)) == -1 && strstr(err, "region"));
    rq.region = "us-east-1";
    rq.method = NULL;
    CHECK(zx_sigv4_sign(&rq, &good, &out, err, sizeof(err)) == -1 && strstr(err, "method"));
    rq.method = "GET";
    rq.payload_len = 3;    /* no payload */
    CHECK(zx_sigv4_sign(&rq, &good, &out, err, sizeof(err)) == -1 && strstr(err, "payload"));
    rq.payload_len = 0;
    /* a short err buffer: truncated, terminated */
    const char *const *saved = rq.headers;
    rq.headers = nohost;
    char tiny[8];
    CHECK(zx_sigv4_sign(&rq, &good, &out, tiny, sizeof(tiny)) == -1 && strlen(tiny) == 7);
    CHECK(zx_sigv4_sign(&rq, &good, &out, NULL, 0) == -1);
    rq.headers = saved;
    CHECK(zx_sigv4_sign(&rq, &good, &out, err, sizeof(err)) == 0);
    zx_sigv4_signed_free(&out);
    zx_sigv4_signed_free(&out);   /* twice: fine */
    zx_sigv4_signed_free(NULL);
}

/* ---- the pieces -------------------------------------------------------- */

static void check_creq_uri(const char *path, unsigned flags, const char *want)
{
    const char *h[] = {"Host: h", NULL};
    zx_sigv4_request rq = {.method = "GET", .path = path, .headers = h, .region = "r",
                           .service = "s", .now = 0, .flags = flags};
    zx_aws_keys k = {"AK", "SK", NULL};
    char *creq = NULL, *sts = NULL, err[256];
    CHECK(zx_sigv4_canonical(&rq, &k, &creq, &sts, err, sizeof(err)) == 0);
    char *nl = creq ? strchr(creq + 4, '\n') : NULL;
    if (!nl || (size_t)(nl - creq - 4) != strlen(want) || strncmp(creq + 4, want, strlen(want))) {
        printf("path %s: wanted %s in:\n%s\n", path, want, creq ? creq : "(null)");
        CHECK(!"canonical URI");
    }
    free(creq);
    free(sts);
}

static void test_pieces(void)
{
    char *e = zx_aws_uri_encode("a b/c~-._*+\xe1\x88\xb4", 14, 1);
    CHECK(e && !strcmp(e, "a%20b/c~-._%2A%2B%E1%88%B4"));
    free(e);
    e = zx_aws_uri_encode("a/b", 3, 0);
    CHECK(e && !strcmp(e, "a%2Fb"));
    free(e);
    e = zx_aws_uri_encode("", 0, 0);
    CHECK(e && !strcmp(e, ""));
    free(e);
    e = zx_aws_uri_encode("a\0b", 3, 0);     /* bytes, not a C string */
    CHECK(e && !strcmp(e, "a%00b"));
    free(e);

    char hex[65];
    CHECK(zx_aws_sha256_hex("", 0, hex) == 0 &&
          !strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    CHECK(zx_aws_sha256_hex(NULL, 0, hex) == 0 && hex[0] == 'e');

    check_creq_uri("/", 0, "/");
    check_creq_uri("/..", 0, "/");
    check_creq_uri("/../../a/../../b/./c/", 0, "/b/c/");
    check_creq_uri("/a/b/..", 0, "/a");
    check_creq_uri("/a//b///", 0, "/a/b/");
    check_creq_uri("/%7Ea%2f", 0, "/%257Ea%252f");
    check_creq_uri("/a//b/../c", ZX_SIGV4_S3, "/a//b/../c");       /* S3: as given */
    check_creq_uri("/%7ea%2f b", ZX_SIGV4_S3, "/~a%2F%20b");
    check_creq_uri("//", ZX_SIGV4_S3, "//");

    /* the session token with ZX_SIGV4_CONTENT_SHA256: both lines, in order */
    const char *h[] = {"Host: examplebucket.s3.amazonaws.com", NULL};
    zx_sigv4_request rq = {.method = "PUT", .path = "/k", .headers = h, .payload = "abc",
                           .payload_len = 3, .region = "us-east-1", .service = "s3",
                           .now = 1369353600, .flags = ZX_SIGV4_S3 | ZX_SIGV4_CONTENT_SHA256};
    zx_aws_keys k = {"AKIAIOSFODNN7EXAMPLE", SECRET, "TOKEN"};
    zx_sigv4_signed out;
    char err[256];
    CHECK(zx_sigv4_sign(&rq, &k, &out, err, sizeof(err)) == 0);
    CHECK(out.lines[0] && strstr(out.lines[0], "SignedHeaders=host;x-amz-content-sha256;"
                                                "x-amz-date;x-amz-security-token, "));
    CHECK(out.lines[1] && !strcmp(out.lines[1], "X-Amz-Date: 20130524T000000Z"));
    CHECK(out.lines[2] && !strcmp(out.lines[2], "x-amz-content-sha256: ba7816bf8f01cfea414140de5d"
                                                "ae2223b00361a396177a9cb410ff61f20015ad"));
    CHECK(out.lines[3] && !strcmp(out.lines[3], "X-Amz-Security-Token: TOKEN"));
    CHECK(out.lines[4] == NULL);
    char sig1[65];
    memcpy(sig1, out.signature, sizeof(sig1));
    zx_sigv4_signed_free(&out);
    /* an uppercase hex payload_hash is the same digest */
    rq.payload_hash = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
    CHECK(zx_sigv4_sign(&rq, &k, &out, err, sizeof(err)) == 0 && !strcmp(out.signature, sig1));
    zx_sigv4_signed_free(&out);
    /* another secret, another signature */
    k.secret_key = "another";
    CHECK(zx_sigv4_sign(&rq, &k, &out, err, sizeof(err)) == 0 && strcmp(out.signature, sig1));
    zx_sigv4_signed_free(&out);
    /* streaming payload literal accepted */
    rq.payload_hash = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
    CHECK(zx_sigv4_sign(&rq, &k, &out, err, sizeof(err)) == 0 &&
          !strcmp(out.lines[2], "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER"));
    zx_sigv4_signed_free(&out);
}

int main(void)
{
    test_vectors();
    test_errors();
    test_pieces();
    if (failures)
        printf("%d checks failed\n", failures);
    return failures != 0;
}
