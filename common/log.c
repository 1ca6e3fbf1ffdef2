/*
 * log.c — key=value log lines to stderr, or to the journal when zxd runs
 * as a systemd service (log_journal.c).  Must never allocate on the heap
 * or log secrets; one write(2) per line so lines from processes sharing
 * stderr do not interleave.
 */
#include "common/log.h"
#include "common/log_journal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char log_proc[64] = "zxd";
static int log_min = ZX_LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void zx_log_set_proc(const char *role)
{
    snprintf(log_proc, sizeof(log_proc), "%s", role);
}

void zx_log_set_level_name(const char *name)
{
    log_min = ZX_LOG_INFO;
    for (int i = 0; name && i < 4; i++)
        if (strcmp(name, level_names[i]) == 0)
            log_min = i;
}

void zx_log(int level, const char *fmt, ...)
{
    if (level < log_min)
        return;
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line),
                     "ts=%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ level=%s proc=%s pid=%d ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000,
                     level_names[level < 0 ? 0 : level > 3 ? 3 : level], log_proc,
                     (int)getpid());
    int prefix = n;
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    va_end(ap);
    if (n < 0 || prefix < 0)
        return;
    if ((size_t)n >= sizeof(line) - 1)
        n = sizeof(line) - 2;
    line[n] = '\0';
    /* the journal has its own time stamp, level and pid: it takes the
     * caller's text as fields */
    if ((size_t)prefix <= (size_t)n &&
        zx_log_journal_send(level, log_proc, line + prefix) == 0)
        return;
    /* one line whatever the values quoted (a parser's error near a
     * client's text, a server's answer) */
    for (int i = 0; i < n; i++)
        if ((unsigned char)line[i] < 0x20)
            line[i] = ' ';
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}

const char *zx_log_quote(const char *s, char *buf, unsigned n)
{
    if (!s)
        return "-";
    int plain = *s != '\0';
    for (const char *p = s; *p && plain; p++)
        if (*p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x20)
            plain = 0;
    if (plain)
        return s;
    unsigned o = 0;
    if (n < 4)
        return "\"\"";
    buf[o++] = '"';
    for (const char *p = s; *p && o + 3 < n; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c < 0x20) {
            buf[o++] = ' ';
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}
