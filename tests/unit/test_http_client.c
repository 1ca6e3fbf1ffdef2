/*
 * test_http_client.c — unit tests of common/http_client.c against a real
 * local HTTP server this test starts (python3's http.server, written to a
 * temporary file, bound to a free port on 127.0.0.1).  Its endpoints: a
 * plain answer, an echo of the method, body and Authorization header, a
 * slow answer (for the deadline), a large body (for the size bound), an
 * answer that is 503 twice then 200 (for the retries), one that is always
 * 503 or always 429 (for the bound on attempts and on the total time), a
 * 404 (not tried again), and a count of the requests each key received.
 * A port nothing listens on gives the connection errors.
 *
 * It must never: wait without a bound (the server is killed at the end,
 * and its start is awaited with a deadline), or assert how long anything
 * took: only what was answered and how many requests the server saw.
 */
#include "common/http_client.h"
#include "tests/unit/check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char server_py[] =
    "import http.server, socketserver, sys, time, threading\n"
    "hits = {}\n"
    "lock = threading.Lock()\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def log_message(self, *a): pass\n"
    "    def send(self, code, body, extra=()):\n"
    "        self.send_response(code)\n"
    "        for k, v in extra: self.send_header(k, v)\n"
    "        self.send_header('Content-Length', str(len(body)))\n"
    "        self.end_headers()\n"
    "        try: self.wfile.write(body)\n"
    "        except Exception: pass\n"
    "    def handle_any(self):\n"
    "        n = int(self.headers.get('Content-Length') or 0)\n"
    "        data = self.rfile.read(n) if n else b''\n"
    "        parts = self.path.strip('/').split('/')\n"
    "        with lock:\n"
    "            key = '/'.join(parts)\n"
    "            hits[key] = hits.get(key, 0) + 1\n"
    "            seen = hits[key]\n"
    "        what = parts[0]\n"
    "        if what == 'ok': self.send(200, b'hello')\n"
    "        elif what == 'echo':\n"
    "            auth = self.headers.get('Authorization') or '-'\n"
    "            x = self.headers.get('X-Zx') or '-'\n"
    "            self.send(201, ('%s %s %s ' % (self.command, auth, x)).encode() + data)\n"
    "        elif what == 'slow': time.sleep(30); self.send(200, b'late')\n"
    "        elif what == 'big': self.send(200, b'x' * (2 * 1024 * 1024))\n"
    "        elif what == 'flaky':\n"
    "            if seen <= 2: self.send(503, b'busy')\n"
    "            else: self.send(200, b'finally')\n"
    "        elif what == 'down': self.send(503, b'down')\n"
    "        elif what == 'limit': self.send(429, b'slow down', [('Retry-After', '0')])\n"
    "        elif what == 'missing': self.send(404, b'no such thing')\n"
    "        elif what == 'count':\n"
    "            with lock: c = hits.get('/'.join(parts[1:]), 0)\n"
    "            self.send(200, str(c).encode())\n"
    "        else: self.send(400, b'?')\n"
    "    do_GET = do_POST = do_PUT = do_DELETE = handle_any\n"
    "class S(socketserver.ThreadingMixIn, http.server.HTTPServer):\n"
    "    daemon_threads = True\n"
    "    def handle_error(self, request, addr): pass\n"
    "s = S(('127.0.0.1', 0), H)\n"
    "open(sys.argv[1] + '.tmp', 'w').write(str(s.server_address[1]))\n"
    "import os; os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "s.serve_forever()\n";

static pid_t server_pid;
static int port;
static char dir[64];

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

/* Start the server; 0, or -1 (then the tests that need it are skipped). */
static int start_server(void)
{
    snprintf(dir, sizeof(dir), "/tmp/zx-http-client-XXXXXX");
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
    /* a generous deadline for a slow machine; checked, not assumed */
    for (int i = 0; i < 600; i++) {
        FILE *pf = fopen(portf, "r");
        if (pf) {
            int ok = fscanf(pf, "%d", &port) == 1;
            fclose(pf);
            if (ok && port > 0)
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

static void url(char *out, size_t n, const char *path)
{
    snprintf(out, n, "http://127.0.0.1:%d/%s", port, path);
}

/* How many requests the server received for path. */
static long count(const char *path)
{
    zx_http_opts o = { .max_attempts = 1 };
    zx_http_client *c = zx_http_client_new(&o, NULL, 0);
    char u[256], p[200], err[256];
    snprintf(p, sizeof(p), "count/%s", path);
    url(u, sizeof(u), p);
    zx_http_response r;
    long n = -1;
    if (c && zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) == 0 &&
        r.status == 200 && r.body)
        n = strtol(r.body, NULL, 10);
    zx_http_response_free(&r);
    zx_http_client_free(c);
    return n;
}

static void test_plain(void)
{
    zx_http_opts o = { 0 };
    char err[256] = "", u[256];
    zx_http_client *c = zx_http_client_new(&o, err, sizeof(err));
    CHECK(c != NULL);
    zx_http_response r;
    url(u, sizeof(u), "ok");
    CHECK(zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) == 0);
    CHECK(r.status == 200 && r.len == 5 && r.body && strcmp(r.body, "hello") == 0);
    CHECK(r.attempts == 1);
    zx_http_response_free(&r);
    CHECK(r.body == NULL && r.status == 0);

    /* a 404 is an answer, and not asked again */
    url(u, sizeof(u), "missing/a");
    CHECK(zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) == 0);
    CHECK(r.status == 404 && r.attempts == 1);
    CHECK(r.body && strcmp(r.body, "no such thing") == 0);
    zx_http_response_free(&r);
    CHECK(count("missing/a") == 1);

    /* not http(s) */
    CHECK(zx_http_request(c, "GET", "ftp://127.0.0.1/x", NULL, NULL, 0, &r, err,
                          sizeof(err)) == ZX_HTTP_REFUSED);
    CHECK(strstr(err, "not an http:// or https:// URL") != NULL);
    zx_http_response_free(&r);
    CHECK(zx_http_requests(c) == 2);
    zx_http_client_free(c);
}

static void test_echo_auth(void)
{
    zx_http_opts o = { .username = "zx", .password = "s3cret-pw" };
    char err[256] = "", u[256];
    zx_http_client *c = zx_http_client_new(&o, err, sizeof(err));
    zx_http_response r;
    const char *const hdrs[] = { "X-Zx: yes", "Content-Type: text/plain", NULL };
    url(u, sizeof(u), "echo");
    CHECK(zx_http_request(c, "PUT", u, hdrs, "row 1", 5, &r, err, sizeof(err)) == 0);
    /* basic auth of zx:s3cret-pw */
    CHECK(r.status == 201 && r.body &&
          strcmp(r.body, "PUT Basic eng6czNjcmV0LXB3 yes row 1") == 0);
    zx_http_response_free(&r);
    CHECK(zx_http_request(c, "POST", u, NULL, "{}", 2, &r, err, sizeof(err)) == 0);
    CHECK(r.body && strncmp(r.body, "POST Basic ", 11) == 0 && strstr(r.body, " - {}"));
    zx_http_response_free(&r);
    zx_http_client_free(c);
}

static void test_deadline(void)
{
    zx_http_opts o = { .timeout_ms = 300, .max_attempts = 1 };
    char err[256] = "", u[256];
    zx_http_client *c = zx_http_client_new(&o, err, sizeof(err));
    zx_http_response r;
    url(u, sizeof(u), "slow/1");
    CHECK(zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) ==
          ZX_HTTP_TRANSFER);
    CHECK(r.status == 0 && r.attempts == 1);
    CHECK(strstr(err, "imed out") != NULL); /* "Operation timed out after ..." */
    zx_http_response_free(&r);
    zx_http_client_free(c);
}

static void test_size_bound(void)
{
    zx_http_opts o = { .max_response = 1 << 20 };
    char err[256] = "", u[256];
    zx_http_client *c = zx_http_client_new(&o, err, sizeof(err));
    zx_http_response r;
    url(u, sizeof(u), "big/1");
    CHECK(zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) ==
          ZX_HTTP_TOO_BIG);
    CHECK(strcmp(err, "the response is larger than 1048576 bytes") == 0);
    CHECK(r.attempts == 1); /* not asked again */
    CHECK(r.len <= (1 << 20));
    zx_http_response_free(&r);
    CHECK(count("big/1") == 1);
    zx_http_client_free(c);
}

static void test_retries(void)
{
    char err[256] = "", u[256];
    zx_http_response r;
    /* 503, 503, then 200: three attempts make it */
    zx_http_opts o = { .max_attempts = 3, .backoff_ms = 20 };
    zx_http_client *c = zx_http_client_new(&o, err, sizeof(err));
    url(u, sizeof(u), "flaky/a");
    CHECK(zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) == 0);
    CHECK(r.status == 200 && r.attempts == 3 && r.body && !strcmp(r.body, "finally"));
    zx_http_response_free(&r);
    CHECK(count("flaky/a") == 3);
    zx_http_client_free(c);

    /* two attempts are not enough: the last answer (503) is returned */
    zx_http_opts o2 = { .max_attempts = 2, .backoff_ms = 20 };
    c = zx_http_client_new(&o2, err, sizeof(err));
    url(u, sizeof(u), "flaky/b");
    CHECK(zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) == 0);
    CHECK(r.status == 503 && r.attempts == 2 && r.body && !strcmp(r.body, "busy"));
    zx_http_response_free(&r);
    CHECK(count("flaky/b") == 2);

    /* 429 is tried again too, as often as allowed */
    url(u, sizeof(u), "limit/a");
    CHECK(zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) == 0);
    CHECK(r.status == 429 && r.attempts == 2);
    zx_http_response_free(&r);
    CHECK(count("limit/a") == 2);
    zx_http_client_free(c);

    /* the total time bounds the attempts: 1000 allowed, each wait doubling
     * from 100 ms up to 1 s, within 1.5 s in all: far fewer are made */
    zx_http_opts o3 = { .max_attempts = 1000, .backoff_ms = 100, .backoff_max_ms = 1000,
                        .total_ms = 1500 };
    c = zx_http_client_new(&o3, err, sizeof(err));
    url(u, sizeof(u), "down/a");
    CHECK(zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) == 0);
    CHECK(r.status == 503 && r.attempts >= 1 && r.attempts < 20);
    long seen = count("down/a");
    CHECK(seen == r.attempts);
    zx_http_response_free(&r);
    zx_http_client_free(c);
}

/* A port on 127.0.0.1 that nothing listens on (bound, then closed). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t n = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &n) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static void test_connection_errors(void)
{
    int p = free_port();
    CHECK(p > 0);
    char err[256] = "", u[256];
    snprintf(u, sizeof(u), "http://127.0.0.1:%d/x", p);
    zx_http_opts o = { .max_attempts = 3, .backoff_ms = 10 };
    zx_http_client *c = zx_http_client_new(&o, err, sizeof(err));
    zx_http_response r;
    CHECK(zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) ==
          ZX_HTTP_TRANSFER);
    CHECK(r.status == 0 && r.attempts == 3 && zx_http_requests(c) == 3);
    /* curl's reason, and how many attempts it took */
    CHECK(strstr(err, "onnect") != NULL && strstr(err, "(3 attempts in ") != NULL);
    CHECK(strstr(err, u) == NULL); /* the URL is the caller's to show */
    zx_http_response_free(&r);

    /* a CA file that cannot be read: refused for good, no retry */
    zx_http_opts t = { .max_attempts = 3, .backoff_ms = 10,
                       .ca_file = "/nonexistent/zx-ca.pem" };
    zx_http_client *tc = zx_http_client_new(&t, err, sizeof(err));
    char hu[256];
    snprintf(hu, sizeof(hu), "https://127.0.0.1:%d/ok", port);
    int rc = zx_http_request(tc, "GET", hu, NULL, NULL, 0, &r, err, sizeof(err));
    CHECK(rc == ZX_HTTP_REFUSED || rc == ZX_HTTP_TRANSFER);
    CHECK(r.status == 0 && err[0] != '\0');
    if (rc == ZX_HTTP_REFUSED)
        CHECK(r.attempts == 1);
    zx_http_response_free(&r);
    zx_http_client_free(tc);
    zx_http_client_free(c);
}

/* zx_http_request_ex: response headers captured (any case, the last
 * answer's), a per-request bound on the body; too many names refused. */
static void test_capture(void)
{
    zx_http_opts o = { .backoff_ms = 1, .max_attempts = 2 };
    char err[256] = "", u[256];
    zx_http_client *c = zx_http_client_new(&o, err, sizeof(err));
    zx_http_response r;
    const char *const names[] = { "content-LENGTH", "X-Absent", "retry-after", NULL };
    zx_http_extra x = { .capture = names };
    url(u, sizeof(u), "ok");
    CHECK(zx_http_request_ex(c, "GET", u, NULL, NULL, 0, &x, &r, err, sizeof(err)) == 0);
    CHECK(r.status == 200 && r.header[0] && strcmp(r.header[0], "5") == 0);
    CHECK(r.header[1] == NULL && r.header[2] == NULL);
    zx_http_response_free(&r);
    CHECK(r.header[0] == NULL);
    url(u, sizeof(u), "limit/cap");
    CHECK(zx_http_request_ex(c, "GET", u, NULL, NULL, 0, &x, &r, err, sizeof(err)) == 0);
    CHECK(r.status == 429 && r.attempts == 2 && r.header[2] && strcmp(r.header[2], "0") == 0);
    zx_http_response_free(&r);
    /* the plain call captures nothing */
    url(u, sizeof(u), "ok");
    CHECK(zx_http_request(c, "GET", u, NULL, NULL, 0, &r, err, sizeof(err)) == 0);
    CHECK(r.header[0] == NULL);
    zx_http_response_free(&r);
    /* a bound of this request only */
    zx_http_extra small = { .max_response = 3 };
    CHECK(zx_http_request_ex(c, "GET", u, NULL, NULL, 0, &small, &r, err, sizeof(err)) ==
          ZX_HTTP_TOO_BIG);
    CHECK(strstr(err, "larger than 3 bytes") != NULL);
    zx_http_response_free(&r);
    const char *const many[] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", NULL };
    zx_http_extra m = { .capture = many };
    CHECK(zx_http_request_ex(c, "GET", u, NULL, NULL, 0, &m, &r, err, sizeof(err)) ==
          ZX_HTTP_REFUSED);
    zx_http_response_free(&r);
    zx_http_client_free(c);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (start_server() < 0) {
        printf("test_http_client: cannot start python3's http.server: skipped\n");
        stop_server();
        return 77; /* meson: skipped */
    }
    test_plain();
    test_echo_auth();
    test_deadline();
    test_size_bound();
    test_retries();
    test_connection_errors();
    test_capture();
    stop_server();
    if (failures)
        printf("test_http_client: %d check(s) failed\n", failures);
    else
        printf("test_http_client: all checks passed\n");
    return failures != 0;
}
