/*
 * zxctl_int.h — private declarations shared by the files of the zxctl
 * program: zxctl.c (arguments, finding the socket, the request and its
 * answer, main), zxctl_io.c (the control socket with deadlines) and
 * zxctl_print.c (human output of the daemon's answers).
 *
 * It must never be included by zxd's own code: zxctl is a separate program
 * and these functions may exit() on out of memory.
 */
#ifndef ZX_SUPERVISOR_ZXCTL_INT_H
#define ZX_SUPERVISOR_ZXCTL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define ZXCTL_READ_CHUNK 65536

/* A connection and its receive buffer.  Lines returned by zxctl_readline
 * point into buf and stay valid until the next zxctl_readline. */
typedef struct zxctl_conn {
    int fd;
    const char *path;         /* as shown in messages */
    char *buf;
    size_t start, len, cap;   /* unread bytes are buf[start..len) */
} zxctl_conn;

/* ---- zxctl.c ---------------------------------------------------------- */

/* Prints "out of memory" and exits with ZX_EXIT_DAEMON_ERROR. */
void zxctl_oom(void);
/* realloc / strdup that never return NULL (zxctl_oom instead). */
void *zxctl_xrealloc(void *p, size_t n);
char *zxctl_xstrdup(const char *s);
struct zx_conf;
/* The configuration cfg (named `how` in messages: "-c", "$ZX_CONFIG"...),
 * loaded without its secrets; NULL after printing why it cannot be used
 * (its errors, one a line, control bytes cleaned).  zx_conf_free it. */
struct zx_conf *zxctl_load_config(const char *cfg, const char *how);

/* ---- zxctl_io.c ------------------------------------------------------- */

/* CLOCK_MONOTONIC in milliseconds, for deadlines (-1 = no deadline). */
int64_t zxctl_now_ms(void);

/* Connect to the Unix socket at path before deadline.  Returns a
 * non-blocking fd, or -1 with errno set (ETIMEDOUT after the deadline). */
int zxctl_connect(const char *path, int64_t deadline);

/* Write all of buf before deadline (never raises SIGPIPE).  0 ok, -1 with
 * errno. */
int zxctl_send(int fd, const char *buf, size_t len, int64_t deadline);

/* Next line from the daemon, without its '\n' and NUL-terminated, in
 * *line (points into c->buf, valid until the next call).  Returns 1 with a
 * line, 0 at the end of the stream (a last line without '\n' is still
 * returned first), or -1 with errno: ETIMEDOUT, EMSGSIZE (longer than
 * ZX_CTL_MAX_LINE), or a socket error. */
int zxctl_readline(zxctl_conn *c, int64_t deadline, char **line);

/* ---- zxctl_progress.c ------------------------------------------------- */

/* The line of a "progress" object of zxd (PROGRESS, proto/control.h):
 * "reading 1,200 of ~5,000 rows (24%), 1,000 rows/s, ~4 s left", made
 * from its numbers (its what cleaned); NULL when pg is no object.  Caller
 * frees. */
char *zxctl_progress_text(const json_t *pg);

/* The wall clock (µs) to pass as since_us: taken before `run` is sent. */
int64_t zxctl_progress_since(void);

/* Read the answer of `run NAME --wait` on c like zxctl_readline (same
 * returns, *line the same), asking zxd at c->path for NAME's progress
 * every second meanwhile and showing that of the run made after since_us
 * on stdout: on a terminal (tty) one line rewritten with '\r' and
 * cleared before returning; otherwise a plain line at most every 10 s. */
int zxctl_wait_answer(zxctl_conn *c, const char *name, int64_t deadline, int64_t since_us,
                      int tty, char **line);

/* ---- zxctl_print.c ---------------------------------------------------- */

/* Copy of s with control bytes replaced by '?' (UTF-8 kept).  Caller frees. */
char *zxctl_clean(const char *s);

/* Printable text of a JSON value: "-" for missing, null or "", numbers in
 * decimal, strings cleaned, arrays/objects as compact JSON.  Caller frees. */
char *zxctl_fmt(const json_t *v);

/* Human output of an ok answer to status, reload and checkpoints, and of
 * one feed event.  Every string from the daemon is cleaned. */
void zxctl_print_status(const json_t *r, FILE *out);
void zxctl_print_reload(const json_t *r, FILE *out);
void zxctl_print_checkpoints(const json_t *r, FILE *out);
void zxctl_print_event(const json_t *ev, FILE *out);
/* zxctl_print_runs.c: the lines `status` prints under a sync (its state,
 * the run's progress from st, the last run, the next one).  Caller frees. */
char *zxctl_sync_line(const json_t *sync, const json_t *st);
/* zxctl_send.c: fill req for `send` from the options (the destination
 * split, a relative path made absolute, the format from its extension):
 * -1 when done, else an exit code (usage printed). */
int zxctl_send_request(const char *query, const char *to, const char *mode, const char *key,
                       const char *format, json_t *req);
/* zxctl_secret.c: `secret SUB [NAME]` on the secrets files of configuration
 * config (how: where its path came from, for messages).  Returns the exit
 * status (ZX_EXIT_OK, ZX_EXIT_DAEMON_ERROR when refused, ZX_EXIT_USAGE
 * for a configuration that cannot be used). */
int zxctl_secret(const char *config, const char *how, const char *sub, const char *name);
/* zxctl_lineage.c: `lineage [NAME]` of configuration config (how: where
 * its path came from), NAME's part in direction dir (conf/lineage.h:
 * ZX_LN_AROUND, _UP, _DOWN), rendered in format (checked by
 * zx_lineage_format_ok) on stdout.  Returns the exit status (ZX_EXIT_OK;
 * ZX_EXIT_DAEMON_ERROR: no such NAME; ZX_EXIT_USAGE: a configuration
 * that cannot be used). */
int zxctl_lineage(const char *config, const char *how, const char *name, int dir,
                  const char *format);
/* The YAML of the sync equivalent to the send req (answered resp). */
void zxctl_print_sync_yaml(const char *name, const json_t *req, const json_t *resp, FILE *out);
/* A sync run's record (run, preview, approve, reject), and `runs`. */
void zxctl_print_run(const json_t *r, FILE *out);
void zxctl_print_runs(const json_t *r, FILE *out);
/* zxctl_print_verify.c: the report of `verify`, and the "last verify"
 * line of a pipeline in `status` (caller frees). */
void zxctl_print_verify(const json_t *r, FILE *out);
char *zxctl_verify_line(const json_t *last);

#endif
