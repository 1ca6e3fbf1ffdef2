/*
 * util.h — small process and file-descriptor helpers shared by zxd's
 * processes.  Nothing here allocates memory that outlives a call.
 */
#ifndef ZX_COMMON_UTIL_H
#define ZX_COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"

/* The project's error convention.  A function that can fail returns -1
 * (or NULL) and, when err is not NULL and errlen > 0, leaves in
 * err[0..errlen) a message a person can act on, naming what failed
 * (NUL-terminated, cut to fit); on success it returns 0 (or its result)
 * and leaves err alone.  Modules with many error kinds also return codes
 * from their own range (e.g. ZX_STORE_*, with a *_strerror).  A library's
 * errors are translated where it is called, never further up.
 * zx_seterr formats such a message and returns -1, so that a failure is
 * `return zx_seterr(err, errlen, "...", ...);`. */
int zx_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Append a formatted text to out, a NUL-terminated string in outlen
 * bytes; what does not fit is cut (out stays NUL-terminated).  Nothing
 * happens when out is NULL, outlen is 0 or out is already full. */
void zx_addf(char *out, size_t outlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The n names as a person reads a choice ("csv, json or parquet") into
 * buf (len bytes; cut to fit, NUL-terminated when len > 0); returns buf. */
const char *zx_join_or(char *buf, size_t len, const char *const *names, size_t n);

/* Make s one line: every control byte (a newline, a tab, ...) becomes a
 * space, so that a message quoting outside text (a parser's "near '...'",
 * a server's answer) stays one log line and one line of an error.
 * Returns s.  NULL: no-op. */
char *zx_oneline(char *s);

/* Monotonic clock in milliseconds / microseconds. */
int64_t zx_mono_ms(void);
int64_t zx_mono_us(void);

/* Set O_NONBLOCK / FD_CLOEXEC.  0 or -1 (errno). */
int zx_set_nonblock(int fd);
int zx_set_cloexec(int fd);

/* New non-blocking, close-on-exec eventfd; -1 on error (errno). */
int zx_eventfd(void);

/* Close every descriptor >= 3 that is not in keep[0..nkeep-1]. */
void zx_close_fds_except(const int *keep, size_t nkeep);

/* write(2) until all n bytes are out (retrying EINTR; a non-blocking fd
 * that would block is an error).  0 or -1 (errno). */
int zx_write_all(int fd, const void *buf, size_t n);

/* mkdir -p with mode; 0 or -1 (errno). */
int zx_mkdir_p(const char *path, mode_t mode);

/* zx_grow (room in a growable array) lives in common/buf.h. */

/* Constant-time comparison of two byte strings: 1 when equal. The time
 * depends only on the lengths. */
int zx_ct_equal(const void *a, size_t alen, const void *b, size_t blen);

/* 64-bit FNV-1a hash. */
uint64_t zx_hash64(const void *p, size_t n);

/* Fill buf with n random bytes (getrandom); 0 or -1. */
int zx_random(void *buf, size_t n);

/* Reset the signal dispositions a forked child inherits from the
 * supervisor: HUP, TERM, INT, CHLD and USR1 to their defaults, PIPE
 * ignored; and unblock all signals. */
void zx_child_reset_signals(void);

#endif
