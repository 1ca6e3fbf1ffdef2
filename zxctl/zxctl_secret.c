/*
 * zxctl_secret.c — `zxctl secret`: the encrypted secrets that
 * `${secret:NAME}` values read (common/secret_store.h).  It works on the
 * files named by the configuration (server.secret_key_file,
 * server.secret_store), not through zxd: a secret can be set before zxd
 * first starts, and zxd reads it at its next start or reload.
 *
 *   init          make the key file (0600; refused when it exists)
 *   set NAME      the value from standard input (never an argument, so it
 *                 stays out of the shell's history and of ps); a terminal
 *                 gets a prompt without echo; one trailing newline dropped
 *   list          names and when each was set, never a value
 *   delete NAME
 *   rotate-key    a new key; every secret encrypted again under it.  The
 *                 new key is written to KEY.new first, then the store,
 *                 then KEY.new renamed over KEY: a rotation cut short is
 *                 finished by running it again.
 *
 * It must never: print a value or the key, take a value from the command
 * line, or leave a value in freed memory.
 */
#include "zxctl/zxctl_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "common/secret_store.h"
#include "conf/config.h"
#include "proto/control.h"

/* Read the value from stdin into buf (room for ZX_SS_MAX_VALUE + 2): its
 * length, or -1 after printing why. */
static long read_value(const char *name, char *buf)
{
    struct termios old, quiet;
    int tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
    if (tty) {
        fprintf(stderr, "value of secret %s (not shown): ", name);
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    size_t n = 0;
    for (;;) {
        ssize_t g = read(STDIN_FILENO, buf + n, ZX_SS_MAX_VALUE + 1 - n);
        if (g < 0 && errno == EINTR)
            continue;
        if (g <= 0)
            break;
        n += (size_t)g;
        if (n > ZX_SS_MAX_VALUE || (tty && memchr(buf, '\n', n)))
            break;
    }
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    if (tty) {
        char *nl = memchr(buf, '\n', n);
        if (nl)
            n = (size_t)(nl - buf);
    }
    if (n > 0 && buf[n - 1] == '\n')
        n--;
    if (n > 0 && buf[n - 1] == '\r')
        n--;
    if (n > ZX_SS_MAX_VALUE) {
        fprintf(stderr, "zxctl: secret %s: the value is longer than %u bytes\n", name,
                ZX_SS_MAX_VALUE);
        return -1;
    }
    if (n == 0) {
        fprintf(stderr, "zxctl: secret %s: no value on standard input (echo -n VALUE | "
                "zxctl secret set %s)\n", name, name);
        return -1;
    }
    if (memchr(buf, '\0', n)) {
        fprintf(stderr, "zxctl: secret %s: the value contains a NUL byte\n", name);
        return -1;
    }
    return (long)n;
}

static int say(const char *fmt, const char *a, const char *b)
{
    char *ca = zxctl_clean(a), *cb = zxctl_clean(b ? b : "");
    fprintf(stderr, fmt, ca, cb);
    fputc('\n', stderr);
    free(ca);
    free(cb);
    return ZX_EXIT_DAEMON_ERROR;
}

/* rotate-key: see the head of the file. */
static int rotate(const char *kp, const char *sp, zx_secret_store *s,
                  unsigned char key[ZX_SS_KEY_LEN], char *e, size_t el)
{
    char np[4200];
    unsigned char nk[ZX_SS_KEY_LEN];
    snprintf(np, sizeof(np), "%s.new", kp);
    if (!zx_ss_key_matches(s, key)) {
        /* the store is under another key: a rotation cut after the store
         * was saved leaves the new key in KEY.new */
        if (zx_ss_read_key(np, nk, e, el) == 0 && zx_ss_key_matches(s, nk)) {
            explicit_bzero(nk, sizeof(nk));
            if (rename(np, kp) < 0)
                return say("zxctl: cannot rename %s over the key file: %s", np,
                           strerror(errno));
            printf("a rotation cut short is finished: %s is the key of %s\n", kp, sp);
            return ZX_EXIT_OK;
        }
        explicit_bzero(nk, sizeof(nk));
        return say("zxctl: the secrets store %s was not written under the key in %s; "
                   "nothing changed", sp, kp);
    }
    unlink(np);   /* a rotation cut before the store was saved */
    if (zx_ss_write_key(np, nk, 0, e, el) < 0)
        return say("zxctl: %s%s", e, NULL);
    if (zx_ss_rekey(s, key, nk, e, el) < 0 || zx_ss_save(s, sp, e, el) < 0) {
        explicit_bzero(nk, sizeof(nk));
        unlink(np);
        return say("zxctl: %s; the old key stays%s", e, NULL);
    }
    explicit_bzero(nk, sizeof(nk));
    if (rename(np, kp) < 0)
        return say("zxctl: the store is under the new key in %s, but it cannot replace the "
                   "key file (%s): run `zxctl secret rotate-key` again", np, strerror(errno));
    printf("new key in %s; %zu secret%s encrypted again in %s; `zxctl reload` makes zxd "
           "read them\n", kp, zx_ss_count(s), zx_ss_count(s) == 1 ? "" : "s", sp);
    return ZX_EXIT_OK;
}

int zxctl_secret(const char *config, const char *how, const char *sub, const char *name)
{
    zx_conf *conf = zxctl_load_config(config, how);
    if (!conf)
        return ZX_EXIT_USAGE;
    const char *kp = conf->secret_key_file, *sp = conf->secret_store;
    unsigned char key[ZX_SS_KEY_LEN];
    char e[700];
    zx_secret_store *s = NULL;
    char *buf = NULL;
    int rc = ZX_EXIT_DAEMON_ERROR;
    if (!strcmp(sub, "init")) {
        if (zx_ss_write_key(kp, key, 0, e, sizeof(e)) < 0)
            rc = say("zxctl: %s%s", e, errno == EEXIST ? " (it exists: a key is made once; "
                     "`zxctl secret rotate-key` replaces it)" : "");
        else {
            printf("secret key written to %s (mode 0600); keep a copy where you keep "
                   "keys: without it the secrets in %s cannot be read\n", kp, sp);
            rc = ZX_EXIT_OK;
        }
        goto out;
    }
    if (zx_ss_read_key(kp, key, e, sizeof(e)) < 0 || zx_ss_load(sp, &s, e, sizeof(e)) < 0) {
        rc = say("zxctl: %s%s", e, NULL);
        goto out;
    }
    if (!strcmp(sub, "list")) {
        for (size_t i = 0; i < zx_ss_count(s); i++) {
            const char *at;
            const char *n = zx_ss_name(s, i, &at);
            printf("%-40s set %s\n", n, at[0] ? at : "(unknown)");
        }
        if (!zx_ss_count(s))
            printf("no secrets in %s\n", sp);
        rc = ZX_EXIT_OK;
    } else if (!strcmp(sub, "set")) {
        buf = malloc(ZX_SS_MAX_VALUE + 2);
        if (!buf)
            zxctl_oom();
        long n = read_value(name, buf);
        if (n < 0)
            goto out;
        if (zx_ss_set(s, key, name, buf, (size_t)n, e, sizeof(e)) < 0 ||
            zx_ss_save(s, sp, e, sizeof(e)) < 0) {
            rc = say("zxctl: %s%s", e, NULL);
            goto out;
        }
        printf("secret %s set in %s; `zxctl reload` makes zxd read it\n", name, sp);
        rc = ZX_EXIT_OK;
    } else if (!strcmp(sub, "delete")) {
        if (!zx_ss_delete(s, name)) {
            rc = say("zxctl: no secret %s in %s", name, sp);
            goto out;
        }
        if (zx_ss_save(s, sp, e, sizeof(e)) < 0) {
            rc = say("zxctl: %s%s", e, NULL);
            goto out;
        }
        printf("secret %s deleted from %s\n", name, sp);
        rc = ZX_EXIT_OK;
    } else {
        rc = rotate(kp, sp, s, key, e, sizeof(e));
    }
out:
    explicit_bzero(key, sizeof(key));
    if (buf) {
        explicit_bzero(buf, ZX_SS_MAX_VALUE + 2);
        free(buf);
    }
    zx_ss_free(s);
    zx_conf_free(conf);
    return rc;
}
