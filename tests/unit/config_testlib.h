/*
 * config_testlib.h — what the unit tests of the YAML configuration loader
 * (test_config.c, test_config_kafka.c, test_config_pg.c,
 * test_config_syncs.c) share: the CHECK macros and their failure count,
 * a temporary directory for the files they load, finding the source tree,
 * and reading messages.
 *
 * A test's main calls cfg_test_init(argc, argv) first and returns
 * cfg_test_finish("test_NAME") last.  Between the two, tmpdir is a fresh
 * mkdtemp directory (/tmp/zx_test_config_XXXXXX) and srcroot the source
 * tree (conf/OPTIONS.md, conf/zx.example.yaml): argv[1] if given and not
 * an option, else $ZX_SOURCE_ROOT, else derived from this library's
 * __FILE__ (meson compiles with a path relative to the build directory,
 * where `meson test` runs the test), else "." or "..".
 *
 * Not thread-safe: one test thread, process-wide state (failures, tmpdir,
 * srcroot, the static buffers of tpath, HO and kopts).  Nothing here may
 * depend on timing or on files outside tmpdir and the source tree.
 */
#ifndef ZX_TESTS_CONFIG_TESTLIB_H
#define ZX_TESTS_CONFIG_TESTLIB_H

#include "conf/config.h"
#include "workers/sources/http/http_opts.h"
#include "workers/sources/kafka/kafka_opts.h"

#include <stdio.h>
#include <string.h>

/* Checks failed so far; each CHECK macro adds 1 when its check fails. */
extern int failures;
/* The test's temporary directory, set by cfg_test_init. */
extern char tmpdir[64];
/* The source tree, set by cfg_test_init; no trailing '/'. */
extern char srcroot[4096];

/* c is true; else "file:line: check failed: c" on stderr, failures++. */
#define CHECK(c) do {                                                     \
        if (!(c)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,        \
                    __LINE__, #c);                                        \
            failures++;                                                   \
        }                                                                 \
    } while (0)

/* Strings a and b are both non-NULL and equal; else both shown, failures++. */
#define CHECK_STR(a, b) do {                                              \
        const char *a_ = (a), *b_ = (b);                                  \
        if (!a_ || !b_ || strcmp(a_, b_)) {                               \
            fprintf(stderr, "%s:%d: check failed: %s == \"%s\" (got "     \
                    "\"%s\")\n", __FILE__, __LINE__, #a, b_ ? b_ : "NULL",\
                    a_ ? a_ : "NULL");                                    \
            failures++;                                                   \
        }                                                                 \
    } while (0)

/* Some message of e is at line l, column c of t.yaml and contains sub;
 * else what is missing and every message of e on stderr, failures++. */
#define EXPECT_ERR(e, l, c, sub) do {                                     \
        if (!has_err(e, l, c, sub)) {                                     \
            fprintf(stderr, "%s:%d: missing error %d:%d: %s\n", __FILE__, \
                    __LINE__, l, c, sub);                                 \
            dump(e);                                                      \
            failures++;                                                   \
        }                                                                 \
    } while (0)

/* Some message of the zx_conf_errors named e (in scope) contains sub;
 * else what is missing and every message on stderr, failures++. */
#define EXPECT_SUB(sub) do {                                                   \
        if (!has_sub(&e, sub)) {                                               \
            fprintf(stderr, "%s:%d: missing error: %s\n", __FILE__, __LINE__,  \
                    sub);                                                      \
            dump(&e);                                                          \
            failures++;                                                        \
        }                                                                      \
    } while (0)

/* Find srcroot (see above) and make tmpdir.  0, or -1 when the directory
 * cannot be made (perror printed; main then returns 2). */
int cfg_test_init(int argc, char **argv);

/* Remove the files in tmpdir and tmpdir itself, then print
 * "<name>: all checks passed" on stdout or "<name>: N check(s) failed" on
 * stderr.  Returns main's exit status: 0, or 1 when a check failed. */
int cfg_test_finish(const char *name);

/* tmpdir/name in one of 4 static buffers used in turn: valid until the
 * fourth call after this one; the caller does not free it. */
const char *tpath(const char *name);

/* Write text to tmpdir/name (created or truncated); exits with status 2
 * (after a message) when it cannot. */
void write_file(const char *name, const char *text);

/* Free what e holds, write text to tmpdir/t.yaml and zx_conf_load it with
 * flags: the configuration (the caller frees it with zx_conf_free) or NULL,
 * the messages in e either way (the caller frees them). */
zx_conf *load(const char *text, unsigned flags, zx_conf_errors *e);

/* Every message of e on stderr, "    got: " before each. */
void dump(const zx_conf_errors *e);

/* 1 when some message of e starts "<tmpdir/t.yaml>:line:col: " and
 * contains sub, else 0. */
int has_err(const zx_conf_errors *e, int line, int col, const char *sub);

/* 1 when some message of e contains sub, else 0. */
int any_contains(const zx_conf_errors *e, const char *sub);

/* The same as any_contains (the reverse syncs' tests call it this). */
int has_sub(const zx_conf_errors *e, const char *sub);

/* The whole of the file at path, malloc'ed and NUL-terminated (the caller
 * frees it), or NULL when it cannot be opened. */
char *read_all(const char *path);

/* Column (1-based) just after the first `tok` on line `line` (1-based) of
 * text: where the value written after tok starts.  0 when not found. */
int col_after(const char *text, int line, const char *tok);

/* p's http options (http_opts.h), or a static all-zero struct for another
 * source's pipeline; owned by p or static, never freed by the caller. */
const zx_http_opts *HO(const zx_conf_pipeline *p);

/* The own options of kafka pipeline p, or a static zeroed struct for
 * another source's or for NULL (so that a failed CHECK does not crash);
 * owned by p or static, never freed by the caller. */
const zx_kafka_opts *kopts(const zx_conf_pipeline *p);

#endif /* ZX_TESTS_CONFIG_TESTLIB_H */
