/*
 * log.h — one line per event, key=value, to stderr.
 *
 * Every line starts with `ts=<RFC 3339 UTC µs> level=<level> proc=<role>
 * pid=<pid>` followed by the caller's key=value pairs.  Never log a secret
 * or a request body.  Safe to call from any process; not from a signal
 * handler.
 */
#ifndef ZX_COMMON_LOG_H
#define ZX_COMMON_LOG_H

enum { ZX_LOG_DEBUG = 0, ZX_LOG_INFO = 1, ZX_LOG_WARN = 2, ZX_LOG_ERROR = 3 };

/* Set the process role shown as proc= (copied, at most 63 bytes). */
void zx_log_set_proc(const char *role);

/* Set the minimum level from "debug", "info", "warn", "error" (unknown → info). */
void zx_log_set_level_name(const char *name);

void zx_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define zx_debug(...) zx_log(ZX_LOG_DEBUG, __VA_ARGS__)
#define zx_info(...) zx_log(ZX_LOG_INFO, __VA_ARGS__)
#define zx_warn(...) zx_log(ZX_LOG_WARN, __VA_ARGS__)
#define zx_error(...) zx_log(ZX_LOG_ERROR, __VA_ARGS__)

/* Quote s for a log value: returns s itself when it has no space, quote,
 * '=' or control byte, else a "..." form with escapes in buf (truncated to
 * n bytes).  The result is valid as long as s and buf are. */
const char *zx_log_quote(const char *s, char *buf, unsigned n);

#endif
