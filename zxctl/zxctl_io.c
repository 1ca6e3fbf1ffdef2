/*
 * zxctl_io.c — zxctl's side of the control socket: connecting, sending a
 * request and reading answer lines, each before a deadline.
 *
 * It must never: block without a deadline (except when the caller passes
 * none, for `feed --follow`), raise SIGPIPE (sends use MSG_NOSIGNAL), or
 * buffer a line longer than ZX_CTL_MAX_LINE.
 */
#include "zxctl/zxctl_int.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/control.h"

int64_t zxctl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before deadline (-1 = no deadline: wait forever),
 * for poll(); 0 when it has passed. */
static int zxctl_left_ms(int64_t deadline)
{
    if (deadline < 0)
        return -1;
    int64_t left = deadline - zxctl_now_ms();
    if (left <= 0)
        return 0;
    return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Wait until fd is ready for `events`.  0 ready, -1 with errno (ETIMEDOUT
 * when the deadline passed). */
static int zxctl_wait(int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd p = { .fd = fd, .events = events };
        int ms = zxctl_left_ms(deadline);
        if (ms == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        int r = poll(&p, 1, ms);
        if (r > 0)
            return 0;      /* readable, writable, or an error the call will see */
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* Copy of s with control bytes replaced by '?' (UTF-8 kept).  Caller frees. */
/* ------------------------------------------------------------ the socket */

/* Connect to the Unix socket at path before deadline.  Returns a
 * non-blocking fd, or -1 with errno set. */
int zxctl_connect(const char *path, int64_t deadline)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    for (;;) {
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        if (errno == EINTR)
            continue;
        if (errno == EINPROGRESS) {
            /* not for AF_UNIX today, but be correct if it ever happens */
            int err = 0;
            socklen_t el = sizeof err;
            if (zxctl_wait(fd, POLLOUT, deadline) < 0)
                goto fail;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                goto fail;
            if (err == 0)
                return fd;
            errno = err;
            goto fail;
        }
        if (errno != EAGAIN)
            goto fail;
        /* the listen backlog is full: retry until the deadline */
        int ms = zxctl_left_ms(deadline);
        if (ms == 0) {
            errno = ETIMEDOUT;
            goto fail;
        }
        poll(NULL, 0, ms < 0 || ms > 20 ? 20 : ms);
    }
fail:;
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

/* Write all of buf before deadline.  0 ok, -1 with errno. */
int zxctl_send(int fd, const char *buf, size_t len, int64_t deadline)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (zxctl_wait(fd, POLLOUT, deadline) < 0)
                return -1;
            continue;
        }
        return -1;
    }
    return 0;
}

/* Next line from the daemon, without its '\n' and NUL-terminated, in
 * *line (valid until the next call).  Returns 1 with a line, 0 at the end
 * of the stream (a last line without '\n' is still returned first), or -1
 * with errno: ETIMEDOUT, EMSGSIZE (longer than ZX_CTL_MAX_LINE), or a
 * socket error. */
int zxctl_readline(zxctl_conn *c, int64_t deadline, char **line)
{
    size_t scanned = 0;
    for (;;) {
        char *base = c->buf + c->start;
        size_t have = c->len - c->start;
        char *nl = have > scanned ? memchr(base + scanned, '\n', have - scanned) : NULL;
        if (nl && (size_t)(nl - base) > ZX_CTL_MAX_LINE) {
            errno = EMSGSIZE;
            return -1;
        }
        if (nl) {
            *nl = '\0';
            *line = base;
            c->start += (size_t)(nl - base) + 1;
            return 1;
        }
        scanned = have;
        if (have > ZX_CTL_MAX_LINE) {
            errno = EMSGSIZE;
            return -1;
        }
        if (c->start > 0) {
            memmove(c->buf, base, have);
            c->start = 0;
            c->len = have;
        }
        if (c->cap - c->len < ZXCTL_READ_CHUNK + 1) {
            c->cap = c->len + ZXCTL_READ_CHUNK + 1;
            c->buf = zxctl_xrealloc(c->buf, c->cap);
        }
        ssize_t n = recv(c->fd, c->buf + c->len, ZXCTL_READ_CHUNK, 0);
        if (n > 0) {
            c->len += (size_t)n;
            continue;
        }
        if (n == 0) {
            if (c->len == c->start)
                return 0;
            c->buf[c->len] = '\0';       /* cap > len: room was kept */
            *line = c->buf + c->start;
            c->start = c->len;
            return 1;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        if (zxctl_wait(c->fd, POLLIN, deadline) < 0)
            return -1;
    }
}
