/*
 * util.c — process and descriptor helpers.  See util.h.
 */
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t zx_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t zx_mono_ms(void)
{
    return zx_mono_us() / 1000;
}

int zx_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int zx_set_cloexec(int fd)
{
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0)
        return -1;
    return fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}

int zx_eventfd(void)
{
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void zx_close_fds_except(const int *keep, size_t nkeep)
{
    /* Collect first, close after: closing while reading /proc/self/fd
     * would close the directory's own descriptor under us.  Scan again
     * while a scan filled the array. */
    int fds[4096];
    size_t n;
again:
    n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    int dfd = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) && n < sizeof(fds) / sizeof(fds[0])) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int fd = atoi(e->d_name);
        if (fd < 3 || fd == dfd)
            continue;
        int kept = 0;
        for (size_t i = 0; i < nkeep; i++)
            if (keep[i] == fd)
                kept = 1;
        if (!kept)
            fds[n++] = fd;
    }
    closedir(d);
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
    if (n == sizeof(fds) / sizeof(fds[0]))
        goto again;
}

int zx_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int zx_mkdir_p(const char *path, mode_t mode)
{
    char tmp[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, mode) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, mode) < 0) {
        struct stat st;
        if (errno != EEXIST)
            return -1;
        if (stat(tmp, &st) < 0)
            return -1;
        if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
    }
    return 0;
}

int zx_ct_equal(const void *a, size_t alen, const void *b, size_t blen)
{
    const unsigned char *x = a, *y = b;
    unsigned char diff = alen != blen;
    /* Walk the expected key's length whatever the candidate's length. */
    for (size_t i = 0; i < blen; i++)
        diff |= (unsigned char)((i < alen ? x[i] : 0) ^ y[i]);
    return diff == 0;
}

uint64_t zx_hash64(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 14695981039346656037ull; /* FNV-1a 64 offset basis */
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    return h;
}

int zx_random(void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

void zx_child_reset_signals(void)
{
    signal(SIGHUP, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
}

char *zx_oneline(char *s)
{
    for (char *p = s; p && *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    return s;
}

int zx_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        zx_oneline(err);
    }
    return -1;
}

const char *zx_join_or(char *buf, size_t len, const char *const *names, size_t n)
{
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        zx_addf(buf, len, "%s%s", !i ? "" : i + 1 == n ? " or " : ", ", names[i]);
    return buf;
}

void zx_addf(char *out, size_t outlen, const char *fmt, ...)
{
    if (!out || outlen == 0)
        return;
    size_t len = strnlen(out, outlen);
    if (len + 1 >= outlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + len, outlen - len, fmt, ap);
    va_end(ap);
}
