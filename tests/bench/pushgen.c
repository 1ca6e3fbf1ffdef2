/*
 * pushgen.c — a fixed-rate (open-loop) HTTP push load generator for
 * tests/bench/push_latency.sh.
 *
 * wrk is a closed loop: each connection sends its next request only when
 * the previous one is answered, so a slow server slows the load down and
 * the latency it reports leaves out the time requests would have waited
 * (coordinated omission).  pushgen sends request i at t0 + i / rate,
 * whatever the server does: when no connection is free it opens another
 * one (up to -c), and beyond that the request waits in a queue.  Its
 * latency is counted from the time it was due, not from the time it was
 * sent.  With -r 0 it is a closed loop over -c connections (the maximum
 * rate, as wrk measures it), latency counted from the send.
 *
 * One thread, epoll, non-blocking sockets, keep-alive; the request (one
 * NDJSON body of -e events of about 200 bytes, the same as push.lua's) is
 * built once.  It prints one line of "key=value" figures, among them its
 * own CPU time and how late it sent requests that had a free connection,
 * so a reader can tell when the generator itself was the limit.
 *
 * It must never connect anywhere but the numeric IPv4 address it is given
 * (127.0.0.1 by default), nor retry a request (each is counted once).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define RBUF 8192

typedef struct conn {
    int fd;
    int busy;            /* a request is in flight on it */
    int connecting;
    size_t woff;         /* bytes of the request written */
    int64_t due_us;      /* when the request in flight was due */
    char rbuf[RBUF];
    size_t rlen;
} conn;

typedef struct gen {
    struct sockaddr_in addr;
    char *req;
    size_t reqlen;
    double rate;         /* requests per second; 0 = closed loop */
    int maxconns, nconns, open_now, ep;
    conn conns[MAX_CONNS];
    int64_t t0, t_end;
    uint64_t next_i;     /* next request to schedule (open loop) */
    /* backlog: due times of requests waiting for a connection (FIFO) */
    int64_t *backlog;
    size_t bl_head, bl_len, bl_cap;
    /* results */
    uint32_t *lat_us;
    size_t nlat, lat_cap;
    uint64_t sent, ok, ok_in_time, non202, errors, unanswered, connects;
    int64_t max_send_lag_us;  /* lateness of sends that had a free conn */
    size_t max_backlog;
} gen;

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void die(const char *what)
{
    fprintf(stderr, "pushgen: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "pushgen: out of memory\n");
        exit(1);
    }
    return q;
}

static void record(gen *g, int64_t lat)
{
    if (g->nlat == g->lat_cap) {
        g->lat_cap = g->lat_cap ? g->lat_cap * 2 : 65536;
        g->lat_us = xrealloc(g->lat_us, g->lat_cap * sizeof(*g->lat_us));
    }
    g->lat_us[g->nlat++] = lat < 0 ? 0 : lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
}

static void watch(gen *g, conn *c, uint32_t events, int op)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(g->ep, op, c->fd, &ev) < 0)
        die("epoll_ctl");
}

static conn *open_conn(gen *g)
{
    conn *c = NULL;
    for (int i = 0; i < g->maxconns && !c; i++)
        if (g->conns[i].fd < 0)
            c = &g->conns[i];
    if (!c)
        return NULL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    if (connect(fd, (struct sockaddr *)&g->addr, sizeof(g->addr)) < 0 && errno != EINPROGRESS)
        die("connect");
    c->connecting = 1;
    g->open_now++;
    g->connects++;
    watch(g, c, EPOLLOUT, EPOLL_CTL_ADD);
    return c;
}

static void close_conn(gen *g, conn *c)
{
    if (c->busy)
        g->errors++;
    epoll_ctl(g->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->busy = 0;
    g->open_now--;
}

/* Write what is left of the request; 0, or -1 when the connection died. */
static int flush_req(gen *g, conn *c)
{
    while (c->woff < g->reqlen) {
        ssize_t n = write(c->fd, g->req + c->woff, g->reqlen - c->woff);
        if (n < 0 && errno == EAGAIN) {
            watch(g, c, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
            return 0;
        }
        if (n <= 0)
            return -1;
        c->woff += (size_t)n;
    }
    watch(g, c, EPOLLIN, EPOLL_CTL_MOD);
    return 0;
}

static void start_req(gen *g, conn *c, int64_t due)
{
    c->busy = 1;
    c->woff = 0;
    c->rlen = 0;
    c->due_us = due;
    g->sent++;
    if (flush_req(g, c) < 0)
        close_conn(g, c);
}

static void bl_push(gen *g, int64_t due)
{
    if (g->bl_len == g->bl_cap) {
        size_t cap = g->bl_cap ? g->bl_cap * 2 : 1024;
        int64_t *b = xrealloc(NULL, cap * sizeof(*b));
        for (size_t i = 0; i < g->bl_len; i++)
            b[i] = g->backlog[(g->bl_head + i) % (g->bl_cap ? g->bl_cap : 1)];
        free(g->backlog);
        g->backlog = b;
        g->bl_head = 0;
        g->bl_cap = cap;
    }
    g->backlog[(g->bl_head + g->bl_len) % g->bl_cap] = due;
    g->bl_len++;
    if (g->bl_len > g->max_backlog)
        g->max_backlog = g->bl_len;
}

/* An idle connection: give it the oldest waiting request, if any. */
static void on_idle(gen *g, conn *c)
{
    int64_t t = now_us();
    if (g->rate <= 0) {            /* closed loop */
        if (t < g->t_end)
            start_req(g, c, t);
        return;
    }
    if (g->bl_len) {
        int64_t due = g->backlog[g->bl_head];
        g->bl_head = (g->bl_head + 1) % g->bl_cap;
        g->bl_len--;
        start_req(g, c, due);
    }
}

/* A whole response in c->rbuf?  1 done (recorded), 0 not yet, -1 bad. */
static int parse_resp(gen *g, conn *c, int *keep)
{
    c->rbuf[c->rlen < RBUF ? c->rlen : RBUF - 1] = '\0';
    char *he = strstr(c->rbuf, "\r\n\r\n");
    if (!he)
        return c->rlen >= RBUF - 1 ? -1 : 0;
    int status = 0;
    if (sscanf(c->rbuf, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    size_t clen = 0;
    *keep = 1;
    for (char *l = strstr(c->rbuf, "\r\n"); l && l < he; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
            clen = strtoul(l + 17, NULL, 10);
        if (strncasecmp(l + 2, "Connection: close", 17) == 0)
            *keep = 0;
    }
    size_t total = (size_t)(he + 4 - c->rbuf) + clen;
    if (total > RBUF - 1)
        return -1;
    if (c->rlen < total)
        return 0;
    int64_t t = now_us();
    record(g, t - c->due_us);
    if (status == 202) {
        g->ok++;
        g->ok_in_time += t <= g->t_end;
    }
    else
        g->non202++;
    c->busy = 0;
    c->rlen = 0;
    return 1;
}

static void on_event(gen *g, conn *c, uint32_t ev)
{
    if (c->connecting) {
        int e = 0;
        socklen_t l = sizeof(e);
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &l);
        if (e || (ev & (EPOLLERR | EPOLLHUP))) {
            errno = e;
            die("connect to the gateway");
        }
        c->connecting = 0;
        watch(g, c, EPOLLIN, EPOLL_CTL_MOD);
        on_idle(g, c);
        return;
    }
    if ((ev & EPOLLOUT) && c->busy && c->woff < g->reqlen && flush_req(g, c) < 0) {
        close_conn(g, c);
        return;
    }
    if (!(ev & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        return;
    ssize_t n = read(c->fd, c->rbuf + c->rlen, RBUF - 1 - c->rlen);
    if (n < 0 && errno == EAGAIN)
        return;
    if (n <= 0) {
        close_conn(g, c);
        return;
    }
    c->rlen += (size_t)n;
    int keep = 1;
    int r = parse_resp(g, c, &keep);
    if (r < 0) {
        fprintf(stderr, "pushgen: unreadable response\n");
        close_conn(g, c);
        return;
    }
    if (r == 1) {
        if (!keep)
            close_conn(g, c);
        else
            on_idle(g, c);
    }
}

static char *build_request(const char *path, const char *key, int events, size_t *len)
{
    char pad[65];
    memset(pad, 'x', 64);
    pad[64] = '\0';
    size_t cap = (size_t)events * 256 + 1024, blen = 0;
    char *body = xrealloc(NULL, cap);
    for (int i = 1; i <= events; i++)
        blen += (size_t)snprintf(body + blen, cap - blen,
                                 "{\"id\":%d,\"user\":\"user-%05d\",\"event\":\"page_view\","
                                 "\"url\":\"/products/%04d\",\"ts\":\"2026-11-29T18:09:25.123456Z\","
                                 "\"amount\":%d.25,\"ok\":true,\"note\":\"%s\"}\n",
                                 i, i % 10000, i % 1000, i % 500, pad);
    char head[1024];
    int hl = snprintf(head, sizeof(head),
                      "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                      "Content-Type: application/x-ndjson\r\nContent-Length: %zu\r\n\r\n",
                      path, key, blen);
    if (hl < 0 || (size_t)hl >= sizeof(head)) {
        fprintf(stderr, "pushgen: path or key too long\n");
        exit(2);
    }
    char *req = xrealloc(NULL, (size_t)hl + blen);
    memcpy(req, head, (size_t)hl);
    memcpy(req + hl, body, blen);
    free(body);
    *len = (size_t)hl + blen;
    return req;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(const gen *g, double p)
{
    if (!g->nlat)
        return 0;
    size_t i = (size_t)(p / 100.0 * (double)(g->nlat - 1) + 0.5);
    return g->lat_us[i] / 1000.0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: pushgen -p PORT -k KEY [-a 127.0.0.1] [-s STREAM] [-e EVENTS] [-r RATE]\n"
            "               [-c CONNS] [-d SECONDS] [-w]\n"
            "  -r RATE  requests/s on a fixed schedule (open loop); 0 = closed loop over\n"
            "           CONNS connections (default 0)\n"
            "  -c CONNS connections at most (default 8; open loop: opened as needed)\n"
            "  -w       push with ?wait=commit\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static gen G;
    gen *g = &G;
    const char *addr = "127.0.0.1", *key = NULL, *stream = "bench";
    long port = 0, events = 1000, seconds = 20;
    int wait = 0, o;
    g->maxconns = 8;
    while ((o = getopt(argc, argv, "a:p:k:s:e:r:c:d:w")) != -1) {
        switch (o) {
        case 'a': addr = optarg; break;
        case 'p': port = strtol(optarg, NULL, 10); break;
        case 'k': key = optarg; break;
        case 's': stream = optarg; break;
        case 'e': events = strtol(optarg, NULL, 10); break;
        case 'r': g->rate = strtod(optarg, NULL); break;
        case 'c': g->maxconns = (int)strtol(optarg, NULL, 10); break;
        case 'd': seconds = strtol(optarg, NULL, 10); break;
        case 'w': wait = 1; break;
        default: usage();
        }
    }
    if (!key || port <= 0 || port > 65535 || events < 1 || events > 100000 || seconds < 1 ||
        seconds > 3600 || g->maxconns < 1 || g->maxconns > MAX_CONNS || g->rate < 0 ||
        g->rate > 1e6)
        usage();
    g->addr.sin_family = AF_INET;
    g->addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &g->addr.sin_addr) != 1)
        usage();
    char path[200];
    snprintf(path, sizeof(path), "/api/streams/%s/push%s", stream, wait ? "?wait=commit" : "");
    g->req = build_request(path, key, (int)events, &g->reqlen);
    for (int i = 0; i < MAX_CONNS; i++)
        g->conns[i].fd = -1;
    g->ep = epoll_create1(EPOLL_CLOEXEC);
    if (g->ep < 0)
        die("epoll_create1");

    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    g->t0 = now_us();
    g->t_end = g->t0 + (int64_t)seconds * 1000000;
    if (g->rate <= 0)
        for (int i = 0; i < g->maxconns; i++)
            open_conn(g);
    else
        for (int i = 0; i < g->maxconns && i < 8; i++)
            open_conn(g);   /* a few ready up front; more when needed */
    int64_t drain_end = g->t_end + 35 * 1000000;
    struct epoll_event evs[256];
    for (;;) {
        int64_t t = now_us();
        /* open loop: hand every request now due to a free connection */
        while (g->rate > 0) {
            int64_t due = g->t0 + (int64_t)((double)g->next_i * 1e6 / g->rate);
            if (due > t || due >= g->t_end)
                break;
            g->next_i++;
            conn *free_c = NULL;
            for (int i = 0; i < g->maxconns && !free_c; i++)
                if (g->conns[i].fd >= 0 && !g->conns[i].busy && !g->conns[i].connecting)
                    free_c = &g->conns[i];
            if (free_c && !g->bl_len) {
                if (t - due > g->max_send_lag_us)
                    g->max_send_lag_us = t - due;
                start_req(g, free_c, due);
            } else {
                bl_push(g, due);
                if (g->open_now < g->maxconns)
                    open_conn(g);
            }
        }
        int inflight = 0;
        for (int i = 0; i < g->maxconns; i++)
            inflight += g->conns[i].fd >= 0 && g->conns[i].busy;
        if (t >= g->t_end && !inflight && !g->bl_len)
            break;
        if (t >= drain_end) {
            g->unanswered = (uint64_t)inflight + g->bl_len;
            break;
        }
        /* wait for the next due request with microsecond precision (a
         * millisecond timeout would send late, in bursts) */
        int64_t wait_us = 100000;
        if (g->rate > 0 && t < g->t_end) {
            int64_t due = g->t0 + (int64_t)((double)g->next_i * 1e6 / g->rate);
            wait_us = due <= t ? 0 : due - t;
            if (wait_us > 100000)
                wait_us = 100000;
        }
        struct timespec ts = {wait_us / 1000000, (wait_us % 1000000) * 1000};
        int n = epoll_pwait2(g->ep, evs, 256, &ts, NULL);
        if (n < 0 && errno != EINTR)
            die("epoll_pwait2");
        for (int i = 0; i < n; i++)
            on_event(g, evs[i].data.ptr, evs[i].events);
        /* closed loop: replace connections the server closed */
        if (g->rate <= 0 && now_us() < g->t_end)
            while (g->open_now < g->maxconns && open_conn(g))
                ;
    }
    int64_t t1 = now_us();
    getrusage(RUSAGE_SELF, &ru1);
    double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec -
                          ru0.ru_stime.tv_sec) +
                 (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec -
                          ru0.ru_stime.tv_usec) / 1e6;
    qsort(g->lat_us, g->nlat, sizeof(*g->lat_us), cmp_u32);
    double el = (double)(g->t_end - g->t0) / 1e6;
    printf("mode=%s rate=%.0f events=%ld wait_commit=%d seconds=%.1f sent=%llu ok=%llu "
           "non202=%llu errors=%llu unanswered=%llu req_s=%.1f rows_s=%.0f p50_ms=%.2f "
           "p90_ms=%.2f p99_ms=%.2f max_ms=%.2f connections=%llu max_queue=%zu "
           "max_send_lag_ms=%.2f gen_cpu_pct=%.1f drain_s=%.1f\n",
           g->rate > 0 ? "fixed" : "closed", g->rate, events, wait, el,
           (unsigned long long)g->sent, (unsigned long long)g->ok,
           (unsigned long long)g->non202, (unsigned long long)g->errors,
           (unsigned long long)g->unanswered, (double)g->ok_in_time / el,
           (double)g->ok_in_time * (double)events / el, pct(g, 50), pct(g, 90), pct(g, 99),
           g->nlat ? g->lat_us[g->nlat - 1] / 1000.0 : 0.0, (unsigned long long)g->connects,
           g->max_backlog, g->max_send_lag_us / 1000.0, 100.0 * cpu / ((double)(t1 - g->t0) / 1e6),
           (double)(t1 - g->t_end) / 1e6);
    return 0;
}
