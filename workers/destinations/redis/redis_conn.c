/*
 * redis_conn.c — a connection to a Redis server (redis_conn.h): the
 * address, the socket and its deadlines, TLS through OpenSSL, AUTH and
 * SELECT, and the pipelined exchange.
 */
#include "workers/destinations/redis/redis_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"

#define CHUNK 16384
#define MAX_PENDING (1024 * 1024)   /* unparsed reply bytes at most */

struct zx_redis_conn {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    int64_t timeout_ms;
    zx_redis_rd *rd;
    char where[300];          /* "127.0.0.1:6379" for messages */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the socket, plain or TLS ------------------------------------------ */

/* Wait for events on k's socket until deadline.  1 ready, 0 timed out,
 * -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = events};
        int r = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

static void ssl_error(char *err, size_t errlen, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    snprintf(err, errlen, "%s: %s", what, e ? buf : "TLS error");
}

/* Read into buf: >0 bytes, 0 would block (*want set: POLLIN or POLLOUT),
 * -1 error (err), -2 the server closed. */
static ssize_t k_read(zx_redis_conn *k, char *buf, size_t n, short *want, char *err,
                      size_t errlen)
{
    if (!k->ssl) {
        ssize_t r = recv(k->fd, buf, n, 0);
        if (r > 0)
            return r;
        if (r == 0)
            return -2;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            *want = POLLIN;
            return 0;
        }
        snprintf(err, errlen, "read from %s: %s", k->where, strerror(errno));
        return -1;
    }
    int r = SSL_read(k->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (r > 0)
        return r;
    int e = SSL_get_error(k->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        *want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        return 0;
    }
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !ERR_peek_error()))
        return -2;
    ssl_error(err, errlen, "TLS read");
    return -1;
}

/* Write from buf: as k_read. */
static ssize_t k_write(zx_redis_conn *k, const char *buf, size_t n, short *want, char *err,
                       size_t errlen)
{
    if (!k->ssl) {
        ssize_t r = send(k->fd, buf, n, MSG_NOSIGNAL);
        if (r >= 0)
            return r ? r : 0;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            *want = POLLOUT;
            return 0;
        }
        snprintf(err, errlen, "write to %s: %s", k->where, strerror(errno));
        return -1;
    }
    int r = SSL_write(k->ssl, buf, (int)n);
    if (r > 0)
        return r;
    int e = SSL_get_error(k->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        *want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        return 0;
    }
    ssl_error(err, errlen, "TLS write");
    return -1;
}

/* A lookup in flight (getaddrinfo_a): on the heap, since the resolver's
 * thread may still use it when the deadline passes and it cannot be
 * cancelled (then it is left to that thread: one small block per such
 * lookup). */
typedef struct lookup {
    struct gaicb cb;
    struct addrinfo hints;
    char host[256], port[8];
} lookup;

/* host:port resolved before deadline (getaddrinfo itself has no
 * timeout).  0 with *res (freeaddrinfo it), or -1 with err. */
static int resolve(const char *host, unsigned port, int64_t deadline, struct addrinfo **res,
                   char *err, size_t errlen)
{
    lookup *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "resolve %s: out of memory", host);
        return -1;
    }
    snprintf(l->host, sizeof(l->host), "%s", host);
    snprintf(l->port, sizeof(l->port), "%u", port);
    l->hints = (struct addrinfo){.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
    l->cb = (struct gaicb){.ar_name = l->host, .ar_service = l->port, .ar_request = &l->hints};
    struct gaicb *list[1] = {&l->cb};
    int g = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
    if (g) {
        snprintf(err, errlen, "resolve %s: %s", host, gai_strerror(g));
        free(l);
        return -1;
    }
    while ((g = gai_error(&l->cb)) == EAI_INPROGRESS) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            if (gai_cancel(&l->cb) == EAI_CANCELED || gai_error(&l->cb) != EAI_INPROGRESS) {
                if (gai_error(&l->cb) == 0)
                    freeaddrinfo(l->cb.ar_result);
                free(l);
            }
            snprintf(err, errlen, "resolve %s: no answer within the deadline", host);
            return -1;
        }
        struct timespec ts = {left / 1000, (left % 1000) * 1000000L};
        gai_suspend((const struct gaicb *const *)list, 1, &ts);
    }
    if (g) {
        snprintf(err, errlen, "resolve %s: %s", host, gai_strerror(g));
        free(l);
        return -1;
    }
    *res = l->cb.ar_result;
    free(l);
    return 0;
}

static int tcp_connect(zx_redis_conn *k, const zx_redis_addr *a, int64_t deadline, char *err,
                       size_t errlen)
{
    struct addrinfo *res = NULL;
    if (resolve(a->host, (unsigned)a->port, deadline, &res, err, errlen) < 0)
        return -1;
    int rc = -1;
    char why[200] = "no address";
    for (struct addrinfo *ai = res; ai && rc < 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        ai->ai_protocol);
        if (fd < 0) {
            snprintf(why, sizeof(why), "%s", strerror(errno));
            continue;
        }
        int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (r < 0 && errno == EINPROGRESS) {
            int w = wait_fd(fd, POLLOUT, deadline);
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            if (w == 0) {
                snprintf(why, sizeof(why), "timed out after %lld ms",
                         (long long)k->timeout_ms);
            } else if (w < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
                snprintf(why, sizeof(why), "%s", strerror(errno));
            } else if (soerr) {
                snprintf(why, sizeof(why), "%s", strerror(soerr));
            } else {
                r = 0;
            }
        } else if (r < 0) {
            snprintf(why, sizeof(why), "%s", strerror(errno));
        }
        if (r == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            k->fd = fd;
            rc = 0;
        } else {
            close(fd);
        }
    }
    freeaddrinfo(res);
    if (rc < 0)
        snprintf(err, errlen, "connect to %s: %s", k->where, why);
    return rc;
}

static int tls_start(zx_redis_conn *k, const zx_conf_connection *c, const zx_redis_addr *a,
                     int64_t deadline, char *err, size_t errlen)
{
    if (!(k->ctx = SSL_CTX_new(TLS_client_method()))) {
        ssl_error(err, errlen, "TLS");
        return -1;
    }
    SSL_CTX_set_min_proto_version(k->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(k->ctx, SSL_VERIFY_PEER, NULL);
    int ok = c->tls_ca ? SSL_CTX_load_verify_locations(k->ctx, c->tls_ca, NULL)
                       : SSL_CTX_set_default_verify_paths(k->ctx);
    if (ok != 1) {
        ssl_error(err, errlen, c->tls_ca ? "tls.ca" : "the system's CA store");
        return -1;
    }
    if (c->tls_key_password)
        SSL_CTX_set_default_passwd_cb_userdata(k->ctx, c->tls_key_password);
    if (c->tls_cert && (SSL_CTX_use_certificate_chain_file(k->ctx, c->tls_cert) != 1 ||
                        SSL_CTX_use_PrivateKey_file(k->ctx, c->tls_key, SSL_FILETYPE_PEM) != 1)) {
        ssl_error(err, errlen, "tls.cert / tls.key");
        return -1;
    }
    SSL_CTX_set_mode(k->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                     SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (!(k->ssl = SSL_new(k->ctx)) || SSL_set_fd(k->ssl, k->fd) != 1) {
        ssl_error(err, errlen, "TLS");
        return -1;
    }
    struct in6_addr ip6;
    struct in_addr ip4;
    int is_ip = inet_pton(AF_INET, a->host, &ip4) == 1 || inet_pton(AF_INET6, a->host, &ip6) == 1;
    if (is_ip) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(k->ssl);
        X509_VERIFY_PARAM_set1_ip_asc(vp, a->host);
    } else {
        SSL_set_tlsext_host_name(k->ssl, a->host);
        SSL_set1_host(k->ssl, a->host);
    }
    for (;;) {
        int r = SSL_connect(k->ssl);
        if (r == 1)
            return 0;
        int e = SSL_get_error(k->ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            long v = SSL_get_verify_result(k->ssl);
            if (v != X509_V_OK)
                snprintf(err, errlen, "TLS handshake with %s: the server's certificate: %s",
                         k->where, X509_verify_cert_error_string(v));
            else {
                char m[340];
                snprintf(m, sizeof(m), "TLS handshake with %.300s", k->where);
                ssl_error(err, errlen, m);
            }
            return -1;
        }
        int w = wait_fd(k->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
        if (w <= 0) {
            snprintf(err, errlen, "TLS handshake with %s: %s", k->where,
                     w == 0 ? "timed out" : strerror(errno));
            return -1;
        }
    }
}

/* ---- commands and the exchange ------------------------------------------- */

int zx_redis_encode(zx_buf *b, int argc, const char **argv, const size_t *lens)
{
    char *cmd = NULL;
    int n = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (n < 0 || !cmd)
        return -1;
    int rc = zx_buf_put(b, cmd, (size_t)n);
    free(cmd);
    return rc;
}

int zx_redis_exchange(zx_redis_conn *k, const char *out, size_t outlen, size_t nreplies,
                      zx_redis_reply_fn fn, void *ctx, char *err, size_t errlen)
{
    int64_t deadline = now_ms() + k->timeout_ms;
    size_t sent = 0, got = 0;
    char buf[CHUNK];
    while (got < nreplies) {
        zx_redis_reply rep;
        int r = zx_redis_rd_next(k->rd, &rep, err, errlen);
        if (r < 0)
            return -1;
        if (r == 1) {
            if (fn(ctx, got++, &rep) < 0)
                return -1;
            deadline = now_ms() + k->timeout_ms;
            continue;
        }
        short want_w = 0, want_r = 0;
        int progress = 0;
        if (sent < outlen) {
            size_t n = outlen - sent < CHUNK ? outlen - sent : CHUNK;
            ssize_t w = k_write(k, out + sent, n, &want_w, err, errlen);
            if (w < 0) {
                if (w == -2)
                    snprintf(err, errlen, "%s closed the connection", k->where);
                return -1;
            }
            sent += (size_t)w;
            progress |= w > 0;
        }
        size_t room = zx_redis_rd_room(k->rd);
        if (room == 0)
            continue;         /* zx_redis_rd_next says it is too large */
        ssize_t g = k_read(k, buf, room < sizeof(buf) ? room : sizeof(buf), &want_r, err,
                           errlen);
        if (g == -2) {
            snprintf(err, errlen, "%s closed the connection after %zu of %zu replies",
                     k->where, got, nreplies);
            return -1;
        }
        if (g < 0)
            return -1;
        if (g > 0) {
            if (zx_redis_rd_feed(k->rd, buf, (size_t)g, err, errlen) < 0)
                return -1;
            progress = 1;
        }
        if (progress) {
            deadline = now_ms() + k->timeout_ms;   /* each wait is bounded */
            continue;
        }
        int w = wait_fd(k->fd, (short)(want_r | want_w | POLLIN), deadline);
        if (w == 0) {
            snprintf(err, errlen, "%s: nothing sent or received for %lld ms (%zu of %zu "
                     "replies came)",
                     k->where, (long long)k->timeout_ms, got, nreplies);
            return -1;
        }
        if (w < 0) {
            snprintf(err, errlen, "%s: poll: %s", k->where, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* One command, one reply: OK status expected.  0 or -1 with err "<what>:
 * <server's error>". */
static int simple(zx_redis_conn *k, const char *what, int argc, const char **argv,
                  const size_t *lens, char *err, size_t errlen);

static int keep_reply(void *ctx, size_t i, const zx_redis_reply *r)
{
    (void)i;
    *(zx_redis_reply *)ctx = *r;
    return 0;
}

static int simple(zx_redis_conn *k, const char *what, int argc, const char **argv,
                  const size_t *lens, char *err, size_t errlen)
{
    zx_buf b = {0};
    zx_redis_reply r = {0};
    int rc = -1;
    if (zx_redis_encode(&b, argc, argv, lens) < 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (zx_redis_exchange(k, b.p, b.len, 1, keep_reply, &r, err, errlen) < 0)
        goto out;
    if (r.type == ZX_REDIS_R_ERROR)
        snprintf(err, errlen, "%s: %s", what, r.text);
    else
        rc = 0;
out:
    if (b.p)
        explicit_bzero(b.p, b.cap);   /* AUTH's password */
    zx_buf_free(&b);
    return rc;
}

zx_redis_conn *zx_redis_open(const zx_conf_connection *c, int64_t timeout_ms, char *err,
                             size_t errlen)
{
    zx_redis_addr a;
    if (!c || !c->address) {
        snprintf(err, errlen, "no address");
        return NULL;
    }
    if (zx_redis_addr_parse(c->address, &a, err, errlen) < 0)
        return NULL;
    zx_redis_conn *k = calloc(1, sizeof(*k));
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    k->fd = -1;
    k->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
    snprintf(k->where, sizeof(k->where), strchr(a.host, ':') ? "[%s]:%u" : "%s:%u", a.host,
             (unsigned)a.port);
    int64_t deadline = now_ms() + k->timeout_ms;
    if (!(k->rd = zx_redis_rd_new(MAX_PENDING))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (tcp_connect(k, &a, deadline, err, errlen) < 0)
        goto fail;
    if ((a.tls || c->tls_ca || c->tls_cert) && tls_start(k, c, &a, deadline, err, errlen) < 0)
        goto fail;
    if (c->password) {
        const char *argv[3] = {"AUTH"};
        size_t lens[3] = {4};
        int n = 1;
        if (c->username) {
            argv[n] = c->username;
            lens[n++] = strlen(c->username);
        }
        argv[n] = c->password;
        lens[n++] = strlen(c->password);
        if (simple(k, "AUTH", n, argv, lens, err, errlen) < 0)
            goto fail;
    }
    int64_t db = a.db >= 0 ? a.db : (int64_t)c->db;
    if (db > 0) {
        char d[24];
        int dl = snprintf(d, sizeof(d), "%lld", (long long)db);
        const char *argv[2] = {"SELECT", d};
        size_t lens[2] = {6, (size_t)dl};
        if (simple(k, "SELECT", 2, argv, lens, err, errlen) < 0)
            goto fail;
    }
    return k;
fail:
    zx_redis_close(k);
    return NULL;
}

void zx_redis_close(zx_redis_conn *k)
{
    if (!k)
        return;
    if (k->ssl) {
        SSL_shutdown(k->ssl);      /* one try, no wait */
        SSL_free(k->ssl);
    }
    SSL_CTX_free(k->ctx);
    if (k->fd >= 0)
        close(k->fd);
    zx_redis_rd_free(k->rd);
    free(k);
}
