/*
 * test_sdnotify.c — common/sdnotify.c against real AF_UNIX datagram
 * sockets (a path and an abstract name), and common/log_journal.c's
 * record format (the journal's native protocol, parsed back here) and its
 * stderr check ($JOURNAL_STREAM against a fake journal socket).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/log_journal.h"
#include "common/sdnotify.h"
#include "check.h"

static int bind_dgram(const char *name)
{
    struct sockaddr_un sa;
    socklen_t len;
    if (zx_sd_addr(name, &sa, &len) < 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0)
        return -1;
    return fd;
}

/* the next datagram, NUL-terminated, or "" when none waits */
static const char *recv_one(int fd, char *buf, size_t n)
{
    ssize_t r = recv(fd, buf, n - 1, 0);
    buf[r > 0 ? r : 0] = '\0';
    return buf;
}

static void test_addr(void)
{
    struct sockaddr_un sa;
    socklen_t len;
    CHECK(zx_sd_addr("/run/systemd/notify", &sa, &len) == 0);
    CHECK(strcmp(sa.sun_path, "/run/systemd/notify") == 0);
    CHECK(len == offsetof(struct sockaddr_un, sun_path) + strlen("/run/systemd/notify") + 1);
    CHECK(zx_sd_addr("@abc", &sa, &len) == 0);
    CHECK(sa.sun_path[0] == '\0' && memcmp(sa.sun_path + 1, "abc", 3) == 0);
    CHECK(len == offsetof(struct sockaddr_un, sun_path) + 4);
    CHECK(zx_sd_addr("", &sa, &len) < 0 && errno == EINVAL);
    CHECK(zx_sd_addr(NULL, &sa, &len) < 0 && errno == EINVAL);
    CHECK(zx_sd_addr("vsock:2:1234", &sa, &len) < 0 && errno == EAFNOSUPPORT);
    char longp[200];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    CHECK(zx_sd_addr(longp, &sa, &len) < 0 && errno == EINVAL);
}

static void test_notify(const char *name)
{
    char buf[2048];
    int fd = bind_dgram(name);
    CHECK(fd >= 0);
    setenv("NOTIFY_SOCKET", name, 1);
    CHECK(zx_sd_notify_init() == 1);
    CHECK(getenv("NOTIFY_SOCKET") == NULL); /* children never see it */
    CHECK(zx_sd_notify("READY=1\nSTATUS=up") == 0);
    CHECK(strcmp(recv_one(fd, buf, sizeof(buf)), "READY=1\nSTATUS=up") == 0);
    CHECK(zx_sd_notify_reloading("again") == 0);
    recv_one(fd, buf, sizeof(buf));
    CHECK(strncmp(buf, "RELOADING=1\nMONOTONIC_USEC=", 27) == 0);
    CHECK(strstr(buf, "\nSTATUS=again") != NULL);
    CHECK(strtoull(buf + 27, NULL, 10) > 0);
    CHECK(zx_sd_notifyf("STATUS=%d pipelines", 3) == 0);
    CHECK(strcmp(recv_one(fd, buf, sizeof(buf)), "STATUS=3 pipelines") == 0);
    /* a forked child (a worker) sends nothing, even though it inherited
     * the saved name */
    pid_t pid = fork();
    if (pid == 0)
        _exit(zx_sd_notify("READY=1") == 0 && zx_sd_notifyf("X=%d", 1) == 0 ? 0 : 1);
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(strcmp(recv_one(fd, buf, sizeof(buf)), "") == 0);
    close(fd);
    /* the socket gone: the send fails, says so, does not crash */
    if (name[0] == '/') {
        unlink(name);
        CHECK(zx_sd_notify("READY=1") < 0);
    }
}

static void test_unset(void)
{
    unsetenv("NOTIFY_SOCKET");
    CHECK(zx_sd_notify_init() == 0);
    CHECK(zx_sd_notify("READY=1") == 0);
    setenv("NOTIFY_SOCKET", "vsock:1:2", 1);
    CHECK(zx_sd_notify_init() < 0);
    CHECK(getenv("NOTIFY_SOCKET") == NULL);
    CHECK(zx_sd_notify("READY=1") == 0);
}

/* The value of field name in a journal datagram (either form), copied to
 * out; returns its length, or -1 when absent. */
static long field(const char *rec, size_t n, const char *name, char *out, size_t cap)
{
    size_t off = 0, nl = strlen(name);
    while (off < n) {
        const char *p = rec + off;
        const char *eol = memchr(p, '\n', n - off);
        const char *eq = memchr(p, '=', n - off);
        if (!eol)
            return -1;
        if (eq && eq < eol) {
            size_t vlen = (size_t)(eol - eq - 1);
            if ((size_t)(eq - p) == nl && memcmp(p, name, nl) == 0 && vlen < cap) {
                memcpy(out, eq + 1, vlen);
                out[vlen] = '\0';
                return (long)vlen;
            }
            off = (size_t)(eol - rec) + 1;
        } else {
            /* NAME\n, 64-bit little-endian length, bytes, \n */
            const unsigned char *l = (const unsigned char *)eol + 1;
            uint64_t vlen = 0;
            for (int i = 7; i >= 0; i--)
                vlen = vlen << 8 | l[i];
            const char *v = eol + 9;
            if ((size_t)(eol - p) == nl && memcmp(p, name, nl) == 0 && vlen < cap) {
                memcpy(out, v, vlen);
                out[vlen] = '\0';
                return (long)vlen;
            }
            off = (size_t)(v - rec) + vlen + 1;
        }
    }
    return -1;
}

static void test_record(void)
{
    char rec[4096], v[1024];
    size_t n = zx_log_journal_record(rec, sizeof(rec), ZX_LOG_WARN, "worker:orders",
                                     "event=crash pipeline=orders status=\"killed by \\\"9\\\"\" "
                                     "bad-key=x =y n=42");
    CHECK(n > 0 && rec[n - 1] == '\n');
    CHECK(field(rec, n, "MESSAGE", v, sizeof(v)) > 0 &&
          strncmp(v, "proc=worker:orders event=crash pipeline=orders", 46) == 0);
    CHECK(field(rec, n, "PRIORITY", v, sizeof(v)) == 1 && strcmp(v, "4") == 0);
    CHECK(field(rec, n, "SYSLOG_IDENTIFIER", v, sizeof(v)) == 3 && strcmp(v, "zxd") == 0);
    CHECK(field(rec, n, "ZX_PROC", v, sizeof(v)) > 0 && strcmp(v, "worker:orders") == 0);
    CHECK(field(rec, n, "ZX_EVENT", v, sizeof(v)) > 0 && strcmp(v, "crash") == 0);
    CHECK(field(rec, n, "ZX_PIPELINE", v, sizeof(v)) > 0 && strcmp(v, "orders") == 0);
    CHECK(field(rec, n, "ZX_STATUS", v, sizeof(v)) > 0 && strcmp(v, "killed by \"9\"") == 0);
    CHECK(field(rec, n, "ZX_N", v, sizeof(v)) == 2 && strcmp(v, "42") == 0);
    CHECK(field(rec, n, "ZX_BAD-KEY", v, sizeof(v)) < 0);
    CHECK(field(rec, n, "ZX_", v, sizeof(v)) < 0);
    /* priorities of each level */
    const char *want[] = {"7", "6", "4", "3"};
    for (int l = 0; l < 4; l++) {
        n = zx_log_journal_record(rec, sizeof(rec), l, "supervisor", "event=x");
        CHECK(field(rec, n, "PRIORITY", v, sizeof(v)) == 1 && strcmp(v, want[l]) == 0);
    }
    /* a newline in a value: the binary length form */
    n = zx_log_journal_record(rec, sizeof(rec), ZX_LOG_ERROR, "writer",
                              "event=e error=\"line one\nline two\"");
    CHECK(field(rec, n, "ZX_ERROR", v, sizeof(v)) == 17 && strcmp(v, "line one\nline two") == 0);
    CHECK(memmem(rec, n, "ZX_ERROR\n\x11\0\0\0\0\0\0\0line one\nline two\n", 35) != NULL);
    CHECK(field(rec, n, "MESSAGE", v, sizeof(v)) > 0 && strstr(v, "line one\nline two"));
    CHECK(field(rec, n, "ZX_EVENT", v, sizeof(v)) == 1);
    /* too small a buffer: 0, never a cut record */
    CHECK(zx_log_journal_record(rec, 20, ZX_LOG_INFO, "writer", "event=e") == 0);
}

/* zx_log under a $JOURNAL_STREAM naming stderr goes to the (fake)
 * journal socket; run in a child, as the choice is made once a process. */
static void test_journal_send(void)
{
    char dir[] = "/tmp/zx-test-journal.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sock[256], errf[256];
    snprintf(sock, sizeof(sock), "%s/socket", dir);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    int fd = bind_dgram(sock);
    CHECK(fd >= 0);
    pid_t pid = fork();
    if (pid == 0) {
        int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(e, STDERR_FILENO);
        struct stat st;
        fstat(STDERR_FILENO, &st);
        char js[64];
        snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
        setenv("JOURNAL_STREAM", js, 1);
        setenv("ZX_JOURNAL_SOCKET", sock, 1);
        zx_log_set_proc("writer");
        zx_warn("event=ready pipeline=web_events");
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    char rec[4096], v[512];
    ssize_t n = recv(fd, rec, sizeof(rec), 0);
    CHECK(n > 0);
    if (n > 0) {
        CHECK(field(rec, (size_t)n, "PRIORITY", v, sizeof(v)) == 1 && strcmp(v, "4") == 0);
        CHECK(field(rec, (size_t)n, "MESSAGE", v, sizeof(v)) > 0 &&
              strcmp(v, "proc=writer event=ready pipeline=web_events") == 0);
        CHECK(field(rec, (size_t)n, "ZX_PIPELINE", v, sizeof(v)) > 0 &&
              strcmp(v, "web_events") == 0);
    }
    struct stat es;
    CHECK(stat(errf, &es) == 0 && es.st_size == 0); /* not on stderr too */

    /* JOURNAL_STREAM naming another file: stderr as always */
    pid = fork();
    if (pid == 0) {
        int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(e, STDERR_FILENO);
        setenv("JOURNAL_STREAM", "1:1", 1);
        setenv("ZX_JOURNAL_SOCKET", sock, 1);
        zx_info("event=plain");
        _exit(0);
    }
    waitpid(pid, &st, 0);
    CHECK(recv(fd, rec, sizeof(rec), 0) < 0);
    CHECK(stat(errf, &es) == 0 && es.st_size > 0);

    /* the journal socket gone: the line falls back to stderr */
    unlink(sock);
    pid = fork();
    if (pid == 0) {
        int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(e, STDERR_FILENO);
        struct stat st2;
        fstat(STDERR_FILENO, &st2);
        char js[64];
        snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st2.st_dev,
                 (unsigned long long)st2.st_ino);
        setenv("JOURNAL_STREAM", js, 1);
        setenv("ZX_JOURNAL_SOCKET", sock, 1);
        zx_info("event=fallback");
        _exit(0);
    }
    waitpid(pid, &st, 0);
    CHECK(stat(errf, &es) == 0 && es.st_size > 0);
    close(fd);
    unlink(errf);
    rmdir(dir);
}

int main(void)
{
    test_addr();
    char path[] = "/tmp/zx-test-notify.XXXXXX";
    int tfd = mkstemp(path);
    close(tfd);
    unlink(path);
    test_notify(path);
    char abs[64];
    snprintf(abs, sizeof(abs), "@zx-test-notify-%d", (int)getpid());
    test_notify(abs);
    test_unset();
    test_record();
    test_journal_send();
    if (!failures)
        printf("ok\n");
    return failures != 0;
}
