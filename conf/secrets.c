/*
 * secrets.c — ${env:NAME} and ${file:PATH} references in config values.
 *
 * A value that is exactly `${env:NAME}` takes the value of that environment
 * variable; exactly `${file:PATH}` takes the content of that file (PATH
 * relative to the config file's folder; trailing newlines stripped, so
 * `echo secret > file` works).  A reference must be the whole value: there
 * is no interpolation inside longer strings, which would be ambiguous.
 *
 * It must never: put a resolved value into an error message, follow a
 * reference found inside a resolved value, or read a non-regular file
 * (a FIFO or /dev/stdin would hang the reload).
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ZX_CF_MAX_SECRET (64u << 10)

static int cf_env_name_ok(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || len > 255)
        return 0;
    for (i = 0; i < len; i++) {
        char c = s[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'
                 || (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

static int cf_read_secret(zx_cf_ctx *x, const yaml_node_t *n,
                          const char *rel, char **out)
{
    char *path = NULL, *buf = NULL;
    int fd = -1, rc = -1;
    struct stat st;
    size_t len = 0;
    ssize_t got;

    if (rel[0] == '/')
        path = strdup(rel);
    else if (asprintf(&path, "%s/%s", x->base_dir, rel) < 0)
        path = NULL;
    if (!path) {
        zx_cf_error_at(x, n, "out of memory");
        goto out;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        zx_cf_error_at(x, n, "cannot read secret file %s: %s", path,
                       strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        zx_cf_error_at(x, n, "secret file %s is not a regular file", path);
        goto out;
    }
    if (st.st_size > (off_t)ZX_CF_MAX_SECRET) {
        zx_cf_error_at(x, n, "secret file %s is larger than %u KiB", path,
                       ZX_CF_MAX_SECRET >> 10);
        goto out;
    }
    buf = malloc(ZX_CF_MAX_SECRET + 1);
    if (!buf) {
        zx_cf_error_at(x, n, "out of memory");
        goto out;
    }
    while (len < ZX_CF_MAX_SECRET) {
        got = read(fd, buf + len, ZX_CF_MAX_SECRET - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            zx_cf_error_at(x, n, "cannot read secret file %s: %s", path,
                           strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        len--;
    buf[len] = '\0';
    if (memchr(buf, '\0', len)) {
        zx_cf_error_at(x, n, "secret file %s contains a NUL byte", path);
        goto out;
    }
    if (len == 0) {
        zx_cf_error_at(x, n, "secret file %s is empty", path);
        goto out;
    }
    *out = buf;
    buf = NULL;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    free(path);
    return rc;
}

int zx_cf_resolve(zx_cf_ctx *x, const yaml_node_t *n, const char *text,
                  int skip, char **out, int *is_ref)
{
    size_t len = strlen(text);
    const char *v;

    *out = NULL;
    *is_ref = 0;
    if (strncmp(text, "${", 2) != 0) {
        if (strstr(text, "${env:") || strstr(text, "${file:")) {
            zx_cf_error_at(x, n, "a ${env:...} or ${file:...} reference must "
                           "be the whole value, not part of a longer string");
            return -1;
        }
        *out = strdup(text);
        if (!*out) {
            zx_cf_error_at(x, n, "out of memory");
            return -1;
        }
        return 0;
    }
    *is_ref = 1;
    if (len < 4 || text[len - 1] != '}')
        goto bad;
    if (!strncmp(text, "${env:", 6)) {
        char name[256];
        size_t nl = len - 7;
        if (!cf_env_name_ok(text + 6, nl))
            goto bad;
        if (skip)
            return 0;
        memcpy(name, text + 6, nl);
        name[nl] = '\0';
        v = getenv(name);
        if (!v) {
            zx_cf_error_at(x, n, "environment variable %s is not set", name);
            return -1;
        }
        if (!*v) {
            zx_cf_error_at(x, n, "environment variable %s is empty", name);
            return -1;
        }
        *out = strdup(v);
        if (!*out) {
            zx_cf_error_at(x, n, "out of memory");
            return -1;
        }
        return 0;
    }
    if (!strncmp(text, "${file:", 7) && len > 8) {
        char *rel;
        int rc;
        if (skip)
            return 0;
        rel = strndup(text + 7, len - 8);
        if (!rel) {
            zx_cf_error_at(x, n, "out of memory");
            return -1;
        }
        rc = cf_read_secret(x, n, rel, out);
        free(rel);
        return rc;
    }
bad:
    zx_cf_error_at(x, n, "'%.80s' is not a valid reference: write "
                   "${env:NAME} or ${file:PATH}", text);
    return -1;
}
