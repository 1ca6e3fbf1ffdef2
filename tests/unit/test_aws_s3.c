/*
 * test_aws_s3.c — the pure pieces of the S3 client (common/aws_s3_xml.c):
 * the scanner of S3's error answers, ListObjectsV2 and
 * ListMultipartUploads pages, InitiateMultipartUpload and
 * CompleteMultipartUpload results, the Complete body and the addressing
 * (virtual-hosted and path style, key encoding).  Plus the client's
 * message for a failed request, against a local server that answers S3's
 * XML errors (python3's http.server; skipped when python3 is missing).
 */
#include "common/aws_s3.h"
#include "tests/unit/check.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void test_error(void)
{
    static const char x[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist"
        "</Message><BucketName>zx-lake</BucketName>"
        "<RequestId>4442587FB7D0A2F9</RequestId><HostId>abc=</HostId></Error>";
    zx_s3_error e;
    CHECK(zx_s3_parse_error(x, strlen(x), &e) == 1);
    CHECK(strcmp(e.code, "NoSuchBucket") == 0);
    CHECK(strcmp(e.message, "The specified bucket does not exist") == 0);
    CHECK(strcmp(e.request_id, "4442587FB7D0A2F9") == 0);

    /* entities, a message over lines, a long message cut */
    static const char y[] = "<Error><Code>AccessDenied</Code><Message>a &amp; b &lt;c&gt;\n"
                            "d&#39;e &#x41;</Message></Error>";
    CHECK(zx_s3_parse_error(y, strlen(y), &e) == 1);
    CHECK(strcmp(e.message, "a & b <c> d'e A") == 0);
    char big[2000];
    int n = snprintf(big, sizeof(big), "<Error><Code>X</Code><Message>");
    memset(big + n, 'm', 1000);
    snprintf(big + n + 1000, sizeof(big) - (size_t)n - 1000, "</Message></Error>");
    CHECK(zx_s3_parse_error(big, strlen(big), &e) == 1);
    CHECK(strlen(e.message) < sizeof(e.message));

    /* not an error; cut before the end; empty; NULL */
    CHECK(zx_s3_parse_error("<ListBucketResult/>", 19, &e) == 0 && e.code[0] == '\0');
    CHECK(zx_s3_parse_error(x, 40, &e) == 0);
    CHECK(zx_s3_parse_error("", 0, &e) == 0);
    CHECK(zx_s3_parse_error(NULL, 0, &e) == 0);
    /* the scanner never reads past len: the closing tag is beyond it */
    static const char z[] = "<Error><Code>Slow</Code></Error>";
    CHECK(zx_s3_parse_error(z, 20, &e) == 0);
}

static void test_list(void)
{
    static const char x[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
        "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Name>b</Name><Prefix>data%2F</Prefix><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys>"
        "<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
        "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
        "<Contents><Key>data/a.parquet</Key><LastModified>2026-12-02T15:00:00.000Z</LastModified>"
        "<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>1234</Size>"
        "<StorageClass>STANDARD</StorageClass></Contents>"
        "<Contents><Key>data/b%20c%2B%C3%A9.csv</Key><Size>0</Size><ETag>\"e\"</ETag></Contents>"
        "<Contents><Key>data/%26amp</Key><Size>18446744073709551615</Size></Contents>"
        "</ListBucketResult>";
    zx_s3_list l = { 0 };
    char err[256] = "";
    CHECK(zx_s3_parse_list(x, strlen(x), &l, err, sizeof(err)) == 0);
    CHECK(l.n == 3 && l.truncated == 1);
    CHECK(l.next && strcmp(l.next, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=") == 0);
    if (l.n == 3) {
        CHECK(strcmp(l.items[0].key, "data/a.parquet") == 0 && l.items[0].size == 1234);
        CHECK(strcmp(l.items[0].etag, "\"9b2cf535f27731c974343645a3985328\"") == 0);
        CHECK(strcmp(l.items[1].key, "data/b c+\xc3\xa9.csv") == 0 && l.items[1].size == 0);
        CHECK(strcmp(l.items[2].key, "data/&amp") == 0);
        CHECK(l.items[2].size == UINT64_MAX);
    }
    zx_s3_list_free(&l);
    CHECK(l.items == NULL && l.next == NULL);

    /* without encoding-type=url the key is taken as is ('%' literal) */
    static const char y[] = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                            "<Contents><Key>100%25 &amp; more</Key><Size>7</Size></Contents>"
                            "</ListBucketResult>";
    CHECK(zx_s3_parse_list(y, strlen(y), &l, err, sizeof(err)) == 0);
    CHECK(l.n == 1 && l.truncated == 0 && l.next == NULL);
    CHECK(l.n == 1 && strcmp(l.items[0].key, "100%25 & more") == 0);
    zx_s3_list_free(&l);

    /* empty page; not a list; a key over 1024 bytes */
    CHECK(zx_s3_parse_list("<ListBucketResult><KeyCount>0</KeyCount></ListBucketResult>", 59,
                           &l, err, sizeof(err)) == 0 && l.n == 0);
    zx_s3_list_free(&l);
    CHECK(zx_s3_parse_list("<Error/>", 8, &l, err, sizeof(err)) < 0);
    CHECK(strstr(err, "ListBucketResult") != NULL);
    zx_s3_list_free(&l);
    char *big = malloc(3000);
    int n = snprintf(big, 3000, "<ListBucketResult><Contents><Key>");
    memset(big + n, 'k', 1100);
    snprintf(big + n + 1100, 3000 - (size_t)n - 1100, "</Key></Contents></ListBucketResult>");
    CHECK(zx_s3_parse_list(big, strlen(big), &l, err, sizeof(err)) < 0);
    CHECK(strstr(err, "longer than 1024") != NULL);
    zx_s3_list_free(&l);
    free(big);
}

static void test_uploads(void)
{
    static const char x[] =
        "<ListMultipartUploadsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker/>"
        "<NextKeyMarker>run%2F2.parquet</NextKeyMarker>"
        "<NextUploadIdMarker>VXBsb2FkIElE2</NextUploadIdMarker>"
        "<EncodingType>url</EncodingType><MaxUploads>2</MaxUploads>"
        "<IsTruncated>true</IsTruncated>"
        "<Upload><Key>run/1.parquet</Key><UploadId>VXBsb2FkIElE1</UploadId>"
        "<Initiator><ID>x</ID></Initiator><StorageClass>STANDARD</StorageClass>"
        "<Initiated>2026-12-02T15:00:00.000Z</Initiated></Upload>"
        "<Upload><Key>run%2F2.parquet</Key><UploadId>VXBsb2FkIElE2</UploadId></Upload>"
        "</ListMultipartUploadsResult>";
    zx_s3_uploads u = { 0 };
    char err[256] = "";
    CHECK(zx_s3_parse_uploads(x, strlen(x), &u, err, sizeof(err)) == 0);
    CHECK(u.n == 2 && u.truncated == 1);
    if (u.n == 2) {
        CHECK(strcmp(u.items[0].key, "run/1.parquet") == 0);
        CHECK(strcmp(u.items[0].upload_id, "VXBsb2FkIElE1") == 0);
        CHECK(strcmp(u.items[0].initiated, "2026-12-02T15:00:00.000Z") == 0);
        CHECK(strcmp(u.items[1].key, "run/2.parquet") == 0 && u.items[1].initiated[0] == 0);
    }
    CHECK(u.next_key_marker && strcmp(u.next_key_marker, "run/2.parquet") == 0);
    CHECK(u.next_upload_id_marker && strcmp(u.next_upload_id_marker, "VXBsb2FkIElE2") == 0);
    zx_s3_uploads_free(&u);
    CHECK(zx_s3_parse_uploads("<ListMultipartUploadsResult><IsTruncated>false</IsTruncated>"
                              "</ListMultipartUploadsResult>", 89, &u, err, sizeof(err)) == 0);
    CHECK(u.n == 0 && !u.truncated);
    zx_s3_uploads_free(&u);
    CHECK(zx_s3_parse_uploads("<ListBucketResult/>", 19, &u, err, sizeof(err)) < 0);
    zx_s3_uploads_free(&u);

    char *id = NULL;
    static const char init[] = "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
                               "<UploadId>abc~def</UploadId></InitiateMultipartUploadResult>";
    CHECK(zx_s3_parse_upload_id(init, strlen(init), &id, err, sizeof(err)) == 0);
    CHECK(id && strcmp(id, "abc~def") == 0);
    free(id);
    CHECK(zx_s3_parse_upload_id("<Error/>", 8, &id, err, sizeof(err)) < 0 && id == NULL);

    char etag[ZX_S3_ETAG_MAX];
    static const char done[] = "<CompleteMultipartUploadResult><Location>x</Location>"
                               "<ETag>&quot;3858f62230ac3c915f300c664312c11f-9&quot;</ETag>"
                               "</CompleteMultipartUploadResult>";
    CHECK(zx_s3_parse_complete(done, strlen(done), etag) == 1);
    CHECK(strcmp(etag, "\"3858f62230ac3c915f300c664312c11f-9\"") == 0);
    static const char moto[] = "<CompleteMultipartUploadResponse><ETag>\"e-2\"</ETag>"
                               "</CompleteMultipartUploadResponse>";
    CHECK(zx_s3_parse_complete(moto, strlen(moto), etag) == 1 && strcmp(etag, "\"e-2\"") == 0);
    static const char fail200[] = "<Error><Code>InternalError</Code></Error>";
    CHECK(zx_s3_parse_complete(fail200, strlen(fail200), etag) == 0);
}

static void test_complete_body(void)
{
    zx_s3_part p[3] = {
        { .number = 1, .size = ZX_S3_PART_MIN, .etag = "\"a1\"", .sha256 = "c2hh" },
        { .number = 2, .size = ZX_S3_PART_MIN + 1, .etag = "\"b&2\"" },
        { .number = 5, .size = 3, .etag = "\"c3\"", .sha256 = "eA==" },
    };
    zx_buf b = { 0 };
    char err[256] = "";
    CHECK(zx_s3_complete_body(p, 3, &b, err, sizeof(err)) == 0);
    CHECK(b.p && strcmp(b.p,
        "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Part><PartNumber>1</PartNumber><ETag>\"a1\"</ETag>"
        "<ChecksumSHA256>c2hh</ChecksumSHA256></Part>"
        "<Part><PartNumber>2</PartNumber><ETag>\"b&amp;2\"</ETag></Part>"
        "<Part><PartNumber>5</PartNumber><ETag>\"c3\"</ETag>"
        "<ChecksumSHA256>eA==</ChecksumSHA256></Part>"
        "</CompleteMultipartUpload>") == 0);
    zx_buf_free(&b);
    /* a small part before the last */
    p[1].size = 100;
    CHECK(zx_s3_complete_body(p, 3, &b, err, sizeof(err)) < 0);
    CHECK(strstr(err, "part 2 has 100 bytes") != NULL);
    /* ...is fine as the last */
    CHECK(zx_s3_complete_body(p, 2, &b, err, sizeof(err)) == 0);
    zx_buf_free(&b);
    p[1].size = ZX_S3_PART_MIN;
    p[2].number = 2;
    CHECK(zx_s3_complete_body(p, 3, &b, err, sizeof(err)) < 0);
    CHECK(strstr(err, "increase") != NULL);
    p[2].number = 10001;
    CHECK(zx_s3_complete_body(p, 3, &b, err, sizeof(err)) < 0);
    CHECK(zx_s3_complete_body(p, 0, &b, err, sizeof(err)) < 0);
    p[2].number = 3;
    p[0].etag[0] = '\0';
    CHECK(zx_s3_complete_body(p, 3, &b, err, sizeof(err)) < 0);
    CHECK(strstr(err, "no ETag") != NULL);
    zx_buf_free(&b);
}

static void test_address(void)
{
    char *u, *h, *p, err[256] = "";
    /* AWS default, virtual-hosted; key encoded per segment */
    CHECK(zx_s3_address(NULL, "eu-west-1", 0, "zx-lake", "data/a b+c/é.parquet", NULL, &u, &h,
                        &p, err, sizeof(err)) == 0);
    CHECK(strcmp(h, "zx-lake.s3.eu-west-1.amazonaws.com") == 0);
    CHECK(strcmp(p, "/data/a%20b%2Bc/%C3%A9.parquet") == 0);
    CHECK(strcmp(u, "https://zx-lake.s3.eu-west-1.amazonaws.com/data/a%20b%2Bc/%C3%A9.parquet") == 0);
    free(u), free(h), free(p);
    /* path style on moto, a query, the bucket itself */
    CHECK(zx_s3_address("http://127.0.0.1:5000/", "us-east-1", 1, "zx-lake", NULL,
                        "list-type=2&prefix=a%2F", &u, &h, &p, err, sizeof(err)) == 0);
    CHECK(strcmp(h, "127.0.0.1:5000") == 0 && strcmp(p, "/zx-lake") == 0);
    CHECK(strcmp(u, "http://127.0.0.1:5000/zx-lake?list-type=2&prefix=a%2F") == 0);
    free(u), free(h), free(p);
    CHECK(zx_s3_address("http://127.0.0.1:5000", "us-east-1", 1, "zx-lake", "k~1/x", "uploads",
                        &u, &h, &p, err, sizeof(err)) == 0);
    CHECK(strcmp(u, "http://127.0.0.1:5000/zx-lake/k~1/x?uploads") == 0);
    CHECK(strcmp(p, "/zx-lake/k~1/x") == 0);
    free(u), free(h), free(p);
    /* virtual-hosted bucket itself; a dotted bucket falls back to path style */
    CHECK(zx_s3_address("https://minio.example:9000", "r", 0, "b-1", NULL, NULL, &u, &h, &p, err,
                        sizeof(err)) == 0);
    CHECK(strcmp(u, "https://b-1.minio.example:9000/") == 0 && strcmp(p, "/") == 0);
    free(u), free(h), free(p);
    CHECK(zx_s3_address(NULL, "us-east-1", 0, "my.bucket", "k", NULL, &u, &h, &p, err,
                        sizeof(err)) == 0);
    CHECK(strcmp(u, "https://s3.us-east-1.amazonaws.com/my.bucket/k") == 0);
    free(u), free(h), free(p);
    /* refused: endpoint with a path, not http(s), bad bucket, key too long, empty key */
    CHECK(zx_s3_address("http://h/x", "r", 1, "b", "k", NULL, &u, &h, &p, err, sizeof(err)) < 0);
    CHECK(strstr(err, "without a path") != NULL && u == NULL);
    CHECK(zx_s3_address("ftp://h", "r", 1, "b", "k", NULL, &u, &h, &p, err, sizeof(err)) < 0);
    CHECK(zx_s3_address("http://u:pw@h", "r", 1, "b", "k", NULL, &u, &h, &p, err,
                        sizeof(err)) < 0);
    CHECK(zx_s3_address(NULL, "r", 1, "b/x", "k", NULL, &u, &h, &p, err, sizeof(err)) < 0);
    CHECK(strstr(err, "bad S3 bucket name") != NULL);
    CHECK(zx_s3_address(NULL, "r", 1, "b", "", NULL, &u, &h, &p, err, sizeof(err)) < 0);
    char key[1100];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    CHECK(zx_s3_address(NULL, "r", 1, "b", key, NULL, &u, &h, &p, err, sizeof(err)) < 0);
    CHECK(zx_s3_address(NULL, NULL, 1, "b", "k", NULL, &u, &h, &p, err, sizeof(err)) < 0);
}

/* ---- the client's messages, against a local server ------------------- */

static const char server_py[] =
    "import http.server, sys, os\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def log_message(self, *a): pass\n"
    "    def send(self, code, body, extra=()):\n"
    "        self.send_response(code)\n"
    "        for k, v in extra: self.send_header(k, v)\n"
    "        self.send_header('Content-Length', str(len(body)))\n"
    "        self.end_headers()\n"
    "        if self.command != 'HEAD': self.wfile.write(body)\n"
    "    def any(self):\n"
    "        n = int(self.headers.get('Content-Length') or 0)\n"
    "        if n: self.rfile.read(n)\n"
    "        p = self.path\n"
    "        rid = [('x-amz-request-id', 'RID42')]\n"
    "        if p.startswith('/nobucket/'):\n"
    "            self.send(404, b'<Error><Code>NoSuchBucket</Code><Message>The specified bucket"
    " does not exist</Message><RequestId>RID7</RequestId></Error>', rid)\n"
    "        elif p.startswith('/denied/'):\n"
    "            self.send(403, b'' if self.command == 'HEAD' else b'<Error><Code>AccessDenied"
    "</Code><Message>Access Denied</Message></Error>', rid)\n"
    "        elif p.startswith('/moved'):\n"
    "            self.send(301, b'<Error><Code>PermanentRedirect</Code><Message>Use the right"
    " endpoint</Message></Error>', [('x-amz-bucket-region', 'eu-west-3')])\n"
    "        elif p.startswith('/slow/'):\n"
    "            self.send(503, b'<Error><Code>SlowDown</Code><Message>Reduce your request"
    " rate</Message></Error>')\n"
    "        elif p.startswith('/ok/'):\n"
    "            auth = self.headers.get('Authorization') or ''\n"
    "            ok = auth.startswith('AWS4-HMAC-SHA256 Credential=AKID/') and not"
    " self.headers.get('Expect')\n"
    "            self.send(200 if ok else 400, b'', [('ETag', '\"e1\"')])\n"
    "        elif p.startswith('/tok/'):\n"
    "            ok = self.headers.get('X-Amz-Security-Token') == 'TOKEN-1' and"
    " 'X-Amz-Security-Token' in (self.headers.get('Authorization') or '').title()\n"
    "            self.send(204 if ok else 400, b'')\n"
    "        else: self.send(400, b'?')\n"
    "    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = any\n"
    "s = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
    "open(sys.argv[1] + '.tmp', 'w').write(str(s.server_address[1]))\n"
    "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "s.serve_forever()\n";

static pid_t server_pid;
static char dir[64];

static int start_server(int *port)
{
    snprintf(dir, sizeof(dir), "/tmp/zx-aws-s3-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char py[128], portf[128];
    snprintf(py, sizeof(py), "%s/server.py", dir);
    snprintf(portf, sizeof(portf), "%s/port", dir);
    FILE *f = fopen(py, "w");
    if (!f)
        return -1;
    fputs(server_py, f);
    fclose(f);
    server_pid = fork();
    if (server_pid < 0)
        return -1;
    if (server_pid == 0) {
        execlp("python3", "python3", py, portf, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600; i++) {
        FILE *pf = fopen(portf, "r");
        if (pf) {
            int ok = fscanf(pf, "%d", port) == 1;
            fclose(pf);
            if (ok && *port > 0)
                return 0;
        }
        if (waitpid(server_pid, NULL, WNOHANG) == server_pid) {
            server_pid = 0;
            return -1;
        }
        struct timespec ts = { 0, 50 * 1000000L };
        nanosleep(&ts, NULL);
    }
    return -1;
}

static void stop_server(void)
{
    if (server_pid > 0) {
        kill(server_pid, SIGKILL);
        waitpid(server_pid, NULL, 0);
        server_pid = 0;
    }
    char p[128];
    snprintf(p, sizeof(p), "%s/server.py", dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/port", dir);
    unlink(p);
    rmdir(dir);
}

static void test_messages(void)
{
    int port = 0;
    if (start_server(&port) < 0) {
        printf("test_aws_s3: cannot start python3's http.server: messages skipped\n");
        stop_server();
        return;
    }
    char ep[64], err[512] = "";
    snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", port);
    zx_aws_keys k = { "AKID", "SECRET-never-shown", NULL };
    zx_s3_opts o = { .region = "us-east-1", .endpoint = ep, .path_style = 1,
                     .keys = zx_s3_static_keys, .keys_ctx = &k,
                     .http = { .backoff_ms = 1, .max_attempts = 2 } };
    zx_s3 *s = zx_s3_new(&o, err, sizeof(err));
    CHECK(s != NULL);
    if (!s) {
        stop_server();
        return;
    }
    CHECK(zx_s3_put_object(s, "nobucket", "data/x.parquet", "abc", 3, NULL, NULL, err,
                           sizeof(err)) == ZX_S3_ERR);
    CHECK(strcmp(err, "S3 bucket nobucket: NoSuchBucket: The specified bucket does not exist "
                      "(PutObject data/x.parquet, request id RID7)") == 0);
    CHECK(zx_s3_last_status(s) == 404 && strcmp(zx_s3_last_code(s), "NoSuchBucket") == 0);
    char *d = NULL;
    size_t n = 0;
    CHECK(zx_s3_get_object(s, "denied", "a/b", 0, &d, &n, err, sizeof(err)) == ZX_S3_ERR);
    CHECK(strcmp(err, "S3 bucket denied: AccessDenied: Access Denied (GetObject a/b needs "
                      "s3:GetObject, request id RID42)") == 0);
    zx_s3_object_info info;
    CHECK(zx_s3_head_object(s, "denied", "a/b", &info, err, sizeof(err)) == ZX_S3_ERR);
    CHECK(strstr(err, "HTTP 403: access denied") != NULL);
    CHECK(strstr(err, "HeadObject a/b needs s3:GetObject") != NULL);
    zx_s3_list l;
    CHECK(zx_s3_list_objects(s, "moved", "p/", NULL, &l, err, sizeof(err)) == ZX_S3_ERR);
    CHECK(strstr(err, "PermanentRedirect: Use the right endpoint; the bucket is in region "
                      "eu-west-3, not us-east-1 (ListObjectsV2 p/)") != NULL);
    zx_s3_list_free(&l);
    /* 503 SlowDown is tried again (2 attempts here) */
    unsigned long before = zx_s3_requests(s);
    CHECK(zx_s3_delete_object(s, "slow", "k", err, sizeof(err)) == ZX_S3_ERR);
    CHECK(zx_s3_requests(s) - before == 2);
    CHECK(strstr(err, "SlowDown: Reduce your request rate (DeleteObject k)") != NULL);
    /* signed, no Expect header, the ETag captured */
    CHECK(zx_s3_put_object(s, "ok", "k", "abc", 3, NULL, &info, err, sizeof(err)) == 0);
    CHECK(strcmp(info.etag, "\"e1\"") == 0 && info.size == 3);
    CHECK(strstr(err, "SECRET") == NULL);
    zx_s3_free(s);

    /* keys from a callback, with a session token: sent and signed */
    zx_aws_keys tk = { "AKID", "SECRET", "TOKEN-1" };
    o.keys_ctx = &tk;
    s = zx_s3_new(&o, err, sizeof(err));
    CHECK(zx_s3_delete_object(s, "tok", "k", err, sizeof(err)) == 0);
    zx_s3_free(s);
    o.keys_ctx = &k;

    /* nothing listens: the endpoint is named, not the URL's key */
    snprintf(ep, sizeof(ep), "http://127.0.0.1:1");
    s = zx_s3_new(&o, err, sizeof(err));
    CHECK(zx_s3_delete_object(s, "b", "k", err, sizeof(err)) == ZX_S3_ERR);
    CHECK(strstr(err, "S3 bucket b: cannot reach http://127.0.0.1:1: ") != NULL);
    CHECK(strstr(err, "(DeleteObject k)") != NULL);
    zx_s3_free(s);
    /* no keys */
    zx_aws_keys none = { 0 };
    o.keys_ctx = &none;
    s = zx_s3_new(&o, err, sizeof(err));
    CHECK(zx_s3_delete_object(s, "b", "k", err, sizeof(err)) == ZX_S3_ERR);
    CHECK(strcmp(err, "S3 bucket b: no credentials: no S3 access key (DeleteObject k)") == 0);
    zx_s3_free(s);
    o.endpoint = "http://h/path";
    CHECK(zx_s3_new(&o, err, sizeof(err)) == NULL);
    stop_server();
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    test_error();
    test_list();
    test_uploads();
    test_complete_body();
    test_address();
    test_messages();
    if (failures)
        printf("test_aws_s3: %d check(s) failed\n", failures);
    else
        printf("test_aws_s3: all checks passed\n");
    return failures != 0;
}
