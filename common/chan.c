/*
 * chan.c — send and receive supervisor/child messages (proto/chan.h).
 * Must never interpret the JSON it carries.
 */
#include "proto/chan.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int zx_chan_send(int sock, int type, const char *json, const int *fds, int nfds)
{
    uint32_t t = (uint32_t)type;
    size_t jl = strlen(json);
    if (jl + 4 > ZX_CHAN_MAX || nfds > 4 || nfds < 0) {
        errno = EMSGSIZE;
        return -1;
    }
    struct iovec iov[2] = {{&t, 4}, {(void *)json, jl}};
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {0};
    m.msg_iov = iov;
    m.msg_iovlen = 2;
    if (nfds > 0) {
        memset(&u, 0, sizeof(u));
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    }
    for (;;) {
        ssize_t n = sendmsg(sock, &m, MSG_NOSIGNAL);
        if (n >= 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

int zx_chan_recv(int sock, char *buf, size_t cap, int *fds, int *nfds)
{
    uint32_t t = 0;
    struct iovec iov[2] = {{&t, 4}, {buf, cap - 1}};
    union {
        char b[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {0};
    m.msg_iov = iov;
    m.msg_iovlen = 2;
    m.msg_control = u.b;
    m.msg_controllen = sizeof(u.b);
    *nfds = 0;
    ssize_t n;
    do {
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return -1;
    if (n == 0)
        return 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                if (*nfds < 4)
                    fds[(*nfds)++] = fd;
                else
                    close(fd);
            }
        }
    }
    if (n < 4 || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        for (int i = 0; i < *nfds; i++)
            close(fds[i]);
        *nfds = 0;
        errno = n < 4 ? EPROTO : EMSGSIZE;
        return -1;
    }
    buf[n - 4] = '\0';
    return (int)t;
}
