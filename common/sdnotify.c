/*
 * sdnotify.c — the sd_notify datagram (sdnotify.h).  One socket per
 * message, closed at once: nothing is held across fork(), so no child can
 * write into a descriptor that became something else.  It must never
 * block the supervisor's loop (MSG_DONTWAIT) nor let a child notify.
 */
#include "common/sdnotify.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char sd_name[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
static pid_t sd_owner; /* the process that called init; 0: none */

int zx_sd_addr(const char *name, struct sockaddr_un *sa, socklen_t *len)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 2 || n > sizeof(sa->sun_path)) {
        errno = EINVAL;
        return -1;
    }
    if (name[0] != '/' && name[0] != '@') {
        errno = EAFNOSUPPORT;
        return -1;
    }
    /* a path needs its terminating NUL inside sun_path; an abstract name
     * does not */
    if (name[0] == '/' && n == sizeof(sa->sun_path)) {
        errno = EINVAL;
        return -1;
    }
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, name, n);
    if (name[0] == '@') {
        sa->sun_path[0] = '\0';
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    return 0;
}

int zx_sd_notify_init(void)
{
    const char *v = getenv("NOTIFY_SOCKET");
    int rc = 0, e = 0;
    sd_owner = 0;
    sd_name[0] = '\0';
    if (v && *v) {
        struct sockaddr_un sa;
        socklen_t len;
        if (zx_sd_addr(v, &sa, &len) == 0) {
            snprintf(sd_name, sizeof(sd_name), "%s", v);
            sd_owner = getpid();
            rc = 1;
        } else {
            e = errno;
            rc = -1;
        }
    }
    unsetenv("NOTIFY_SOCKET");
    if (rc < 0)
        errno = e;
    return rc;
}

int zx_sd_notify(const char *state)
{
    if (!sd_owner || sd_owner != getpid() || !state)
        return 0;
    struct sockaddr_un sa;
    socklen_t len;
    if (zx_sd_addr(sd_name, &sa, &len) < 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    size_t n = strlen(state);
    ssize_t w = sendto(fd, state, n, MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&sa, len);
    int e = errno;
    close(fd);
    if (w < 0 || (size_t)w != n) {
        errno = w < 0 ? e : EMSGSIZE;
        return -1;
    }
    return 0;
}

int zx_sd_notifyf(const char *fmt, ...)
{
    if (!sd_owner || sd_owner != getpid())
        return 0;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return zx_sd_notify(buf);
}

int zx_sd_notify_reloading(const char *status)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned long long us = (unsigned long long)ts.tv_sec * 1000000ULL +
                            (unsigned long long)ts.tv_nsec / 1000ULL;
    return zx_sd_notifyf("RELOADING=1\nMONOTONIC_USEC=%llu%s%s", us, status ? "\nSTATUS=" : "",
                         status ? status : "");
}
