/*
 * proctitle.h — readable process titles for ps, like PostgreSQL's
 * ps_status.c: the argv area is overwritten in place (so `ps` and
 * /proc/PID/cmdline show "zxd: writer") and prctl(PR_SET_NAME) sets the
 * 15-byte comm name.
 *
 * zx_proctitle_init must be called once, first thing in main(), before
 * anything reads argv or environ: it moves environ out of the way (the
 * strings are copied) and returns a copy of argv that stays valid.
 */
#ifndef ZX_COMMON_PROCTITLE_H
#define ZX_COMMON_PROCTITLE_H

/* The copies made by zx_proctitle_init (valid for the life of the process). */
extern char **zx_proctitle_argv;
extern char **zx_proctitle_environ;

/* Returns a heap copy of argv (never freed) to use instead of argv. */
char **zx_proctitle_init(int argc, char **argv);

/* Set the title, e.g. "zxd: stream web_events".  Truncated to the space
 * the original argv + environ occupied. */
void zx_proctitle_set(const char *title);

#endif
