/*
 * zxctl_progress.c — work in progress as zxctl shows it: the `progress:`
 * line of `status`, and the live line of `run NAME --wait`, which asks
 * zxd for the sync's progress (the read-only command `progress`, on a
 * connection of its own) while it waits for the run's answer.  On a
 * terminal the line is rewritten in place ('\r', cleared at the end);
 * otherwise a plain line at most every 10 s.
 *
 * It must never: print a control byte received from zxd (the line is
 * made here from numbers; what is cleaned), wait longer than the run's own
 * deadline, or fail the run's wait because a progress request failed (an
 * older zxd without `progress` shows no progress).
 */
#include "zxctl/zxctl_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common/progress.h"
#include "proto/control.h"

#define POLL_MS 1000          /* how often progress is asked for */
#define PLAIN_EVERY_MS 10000  /* not a terminal: a line at most this often */
#define ASK_TIMEOUT_MS 2000

char *zxctl_progress_text(const json_t *pg)
{
    if (!json_is_object(pg))
        return NULL;
    const json_t *w = json_object_get(pg, "what");
    const json_t *done = json_object_get(pg, "done"), *exp = json_object_get(pg, "expected");
    const json_t *eta = json_object_get(pg, "eta_seconds");
    char *what = zxctl_clean(json_is_string(w) ? json_string_value(w) : "working");
    char line[400];
    zx_progress_line(line, sizeof(line), what,
                     json_is_integer(done) && json_integer_value(done) > 0
                         ? (uint64_t)json_integer_value(done) : 0,
                     json_is_integer(exp) && json_integer_value(exp) > 0
                         ? (uint64_t)json_integer_value(exp) : 0,
                     json_is_true(json_object_get(pg, "exact")),
                     json_number_value(json_object_get(pg, "rate")),
                     json_is_number(eta) ? json_number_value(eta) : -1);
    free(what);
    return zxctl_xstrdup(line);
}

/* `progress NAME` of zxd at path: the answer (caller decrefs) or NULL. */
static json_t *ask(const char *path, const char *name)
{
    int64_t deadline = zxctl_now_ms() + ASK_TIMEOUT_MS;
    json_t *req = json_pack("{s:i, s:s, s:s}", "v", ZX_CTL_VERSION, "cmd", "progress", "name",
                            name);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body)
        return NULL;
    size_t n = strlen(body);
    char *text = zxctl_xrealloc(body, n + 2);
    memcpy(text + n, "\n", 2);
    zxctl_conn c = { .fd = zxctl_connect(path, deadline), .path = path };
    json_t *resp = NULL;
    char *line;
    if (c.fd >= 0 && zxctl_send(c.fd, text, n + 1, deadline) == 0 &&
        zxctl_readline(&c, deadline, &line) == 1)
        resp = json_loads(line, 0, NULL);
    if (c.fd >= 0)
        close(c.fd);
    free(c.buf);
    free(text);
    if (resp && !json_is_true(json_object_get(resp, "ok"))) {
        json_decref(resp);
        resp = NULL;
    }
    return resp;
}

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t zxctl_progress_since(void)
{
    return wall_us();
}

int zxctl_wait_answer(zxctl_conn *c, const char *name, int64_t deadline, int64_t since_us,
                      int tty, char **line)
{
    int shown = 0;               /* a live line is on the terminal */
    int64_t last_plain = 0;
    for (;;) {
        int64_t now = zxctl_now_ms();
        int64_t until = deadline >= 0 && deadline < now + POLL_MS ? deadline : now + POLL_MS;
        int r = zxctl_readline(c, until, line);
        if (r != -1 || errno != ETIMEDOUT || (deadline >= 0 && zxctl_now_ms() >= deadline)) {
            if (shown) {
                fputs("\r\033[K", stdout);
                fflush(stdout);
            }
            return r;
        }
        json_t *resp = ask(c->path, name);
        const json_t *pg = json_object_get(resp, "progress");
        const char *run = json_string_value(json_object_get(resp, "run"));
        /* the run this wait is for: made after the request went out (ids
         * are µs of their creation); an earlier one still running is not */
        char *text = run && strtoll(run, NULL, 10) >= since_us ? zxctl_progress_text(pg)
                                                                : NULL;
        json_decref(resp);
        if (!text)
            continue;
        char *n = zxctl_clean(name);
        now = zxctl_now_ms();
        if (tty) {
            /* cut to the terminal's width: a wrapped line would not be
             * rewritten by '\r' (the text is ASCII but for what) */
            struct winsize ws;
            size_t cols = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8
                              ? ws.ws_col : 80;
            char full[600];
            snprintf(full, sizeof(full), "%s: %s", n, text);
            if (strlen(full) > cols - 1) {
                size_t cut = cols - 1;
                while (cut > 0 && ((unsigned char)full[cut] & 0xc0) == 0x80)
                    cut--;          /* not inside a UTF-8 character */
                full[cut] = '\0';
            }
            printf("\r%s\033[K", full);
            fflush(stdout);
            shown = 1;
        } else if (!last_plain || now - last_plain >= PLAIN_EVERY_MS) {
            printf("%s: %s\n", n, text);
            fflush(stdout);
            last_plain = now;
        }
        free(n);
        free(text);
    }
}
