/*
 * log_journal.c — one log record as one journal datagram (log_journal.h).
 * Must never allocate on the heap, block (MSG_DONTWAIT) or hold a
 * descriptor across fork(): one socket per record, closed at once (log
 * records are events, not a firehose).
 */
#include "common/log_journal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

/* -1: not decided yet; 0: stderr; 1: the journal */
static int journal_on = -1;

static int journal_wanted(void)
{
    const char *v = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    char end;
    struct stat st;
    if (!v || sscanf(v, "%llu:%llu%c", &dev, &ino, &end) != 2)
        return 0;
    if (fstat(STDERR_FILENO, &st) < 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* Append one field; returns the new offset, or 0 when it does not fit. */
static size_t put_field(char *out, size_t cap, size_t off, const char *name, size_t nlen,
                        const char *val, size_t vlen)
{
    int binary = memchr(val, '\n', vlen) != NULL;
    size_t need = nlen + 1 + (binary ? 8 : 0) + vlen + 1;
    if (off + need > cap)
        return 0;
    memcpy(out + off, name, nlen);
    off += nlen;
    if (binary) {
        out[off++] = '\n';
        uint64_t l = vlen;
        for (int i = 0; i < 8; i++)
            out[off++] = (char)((l >> (8 * i)) & 0xff);
    } else {
        out[off++] = '=';
    }
    memcpy(out + off, val, vlen);
    off += vlen;
    out[off++] = '\n';
    return off;
}

static int key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

size_t zx_log_journal_record(char *out, size_t cap, int level, const char *proc,
                             const char *text)
{
    static const char *const prio[] = {"7", "6", "4", "3"};
    size_t off = 0;
    char msg[2200];
    int m = snprintf(msg, sizeof(msg), "proc=%s %s", proc ? proc : "", text ? text : "");
    if (m < 0)
        return 0;
    if ((size_t)m >= sizeof(msg))
        m = (int)sizeof(msg) - 1;
    const char *pr = prio[level < 0 ? 0 : level > 3 ? 3 : level];
    /* (off stays > 0 after the first field: put_field returns 0 only
     * when a field does not fit) */
    if (!(off = put_field(out, cap, off, "MESSAGE", 7, msg, (size_t)m)) ||
        !(off = put_field(out, cap, off, "PRIORITY", 8, pr, 1)) ||
        !(off = put_field(out, cap, off, "SYSLOG_IDENTIFIER", 17, "zxd", 3)) ||
        !(off = put_field(out, cap, off, "ZX_PROC", 7, proc ? proc : "", proc ? strlen(proc) : 0)))
        return 0;
    const char *p = text ? text : "";
    while (*p) {
        while (*p == ' ')
            p++;
        const char *k = p;
        while (key_char(*p))
            p++;
        size_t klen = (size_t)(p - k);
        int field = klen > 0 && klen <= 61 && *p == '=';
        if (*p == '=')
            p++;
        /* the value: "..." with \" and \\ escapes, or up to a space */
        char val[2048];
        size_t vlen = 0;
        if (*p == '"') {
            p++;
            while (*p && *p != '"') {
                if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
                    p++;
                if (vlen < sizeof(val))
                    val[vlen++] = *p;
                p++;
            }
            if (*p == '"')
                p++;
        } else {
            while (*p && *p != ' ') {
                if (vlen < sizeof(val))
                    val[vlen++] = *p;
                p++;
            }
        }
        if (!field)
            continue;
        char name[64] = "ZX_";
        for (size_t i = 0; i < klen; i++) {
            char c = k[i];
            name[3 + i] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
        }
        size_t next = put_field(out, cap, off, name, 3 + klen, val, vlen);
        if (!next)
            return 0;
        off = next;
    }
    return off;
}

int zx_log_journal_send(int level, const char *proc, const char *text)
{
    if (journal_on < 0)
        journal_on = journal_wanted();
    if (!journal_on)
        return -1;
    char rec[6144];
    size_t n = zx_log_journal_record(rec, sizeof(rec), level, proc, text);
    if (!n)
        return -1;
    const char *path = getenv("ZX_JOURNAL_SOCKET");
    if (!path || path[0] != '/')
        path = JOURNAL_SOCKET;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    ssize_t w = sendto(fd, rec, n, MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&sa,
                       sizeof(sa));
    int e = errno;
    close(fd);
    errno = e;
    return w == (ssize_t)n ? 0 : -1;
}
