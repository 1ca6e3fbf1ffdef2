/*
 * fileroots.c — confining written files to configured folders
 * (fileroots.h).
 */
#include "common/fileroots.h"
#include "common/util.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* One line into err; returns -1.  (No common/util.h: the configuration
 * links this file alone.) */
/* mkdir -p path (mode 0755); 0 or -1 (errno). */
static int mkdir_p(const char *path)
{
    char b[4096];
    size_t n = strlen(path);
    if (n >= sizeof(b)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(b, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (b[i] != '/' && b[i] != '\0')
            continue;
        char k = b[i];
        b[i] = '\0';
        if (mkdir(b, 0755) < 0 && errno != EEXIST)
            return -1;
        b[i] = k;
    }
    return 0;
}

int zx_fr_normalised(const char *path)
{
    if (!path || path[0] != '/')
        return 0;
    if (!strcmp(path, "/"))
        return 1;
    const char *p = path;
    while (*p == '/') {
        const char *c = p + 1, *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        p = c + n;
    }
    return 1;
}

char *zx_fr_normalise(const char *path)
{
    if (!path || path[0] != '/')
        return NULL;
    size_t n = strlen(path), o = 0;
    char *out = malloc(n + 2);
    if (!out)
        return NULL;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 0)
            break;
        if (l == 1 && p[0] == '.') {
        } else if (l == 2 && p[0] == '.' && p[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
        } else {
            out[o++] = '/';
            memcpy(out + o, p, l);
            o += l;
        }
        p += l;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    return out;
}

int zx_fr_root_of(const char *path, const char *const *roots, size_t n)
{
    if (!zx_fr_normalised(path))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *r = roots[i];
        if (!zx_fr_normalised(r))
            continue;
        size_t l = strlen(r);
        if (!strcmp(r, "/"))
            return (int)i;
        if (!strncmp(path, r, l) && (path[l] == '\0' || path[l] == '/'))
            return (int)i;
    }
    return -1;
}

char *zx_fr_list(const char *const *roots, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    if (!outlen)
        return out;
    out[0] = '\0';
    for (size_t i = 0; i < n && o + 1 < outlen; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";
        int k = snprintf(out + o, outlen - o, "%s%s", sep, roots[i]);
        if (k < 0)
            break;
        o += (size_t)k;
    }
    if (n == 0)
        snprintf(out, outlen, "(none)");
    return out;
}

int zx_fr_check_below(const char *root, const char *path, int last_is_dir, char *err,
                      size_t errlen)
{
    size_t rl = strcmp(root, "/") ? strlen(root) : 0;
    char buf[4096];
    if (strlen(path) >= sizeof(buf))
        return zx_seterr(err, errlen, "%s: the path is too long", path);
    snprintf(buf, sizeof(buf), "%s", path);
    for (size_t i = rl; buf[i];) {
        size_t e = i + 1;
        while (buf[e] && buf[e] != '/')
            e++;
        int last = buf[e] == '\0';
        char keep = buf[e];
        buf[e] = '\0';
        struct stat sb;
        int rc = lstat(buf, &sb);
        if (rc < 0 && errno == ENOENT)
            return 0;              /* the rest does not exist yet: made as folders */
        if (rc < 0)
            return zx_seterr(err, errlen, "%s: cannot check %s: %s", path, buf,
                             strerror(errno));
        if (S_ISLNK(sb.st_mode))
            return zx_seterr(err, errlen, "%s: %s is a symbolic link; zx does not follow "
                             "links below %s", path, buf, root);
        if ((!last || last_is_dir) && !S_ISDIR(sb.st_mode))
            return zx_seterr(err, errlen, "%s: %s is not a folder", path, buf);
        if (last && !last_is_dir && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
            return zx_seterr(err, errlen, "%s: it exists and is not a regular file", path);
        buf[e] = keep;
        i = e;
    }
    return 0;
}

int zx_fr_open_dir(const char *root, const char *dir, char *err, size_t errlen)
{
    const char *const one[1] = {root};
    if (zx_fr_root_of(dir, one, 1) != 0)
        return zx_seterr(err, errlen, "%s is not under %s", dir, root);
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && mkdir_p(root) == 0)
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return zx_seterr(err, errlen, "cannot open the folder %s: %s", root, strerror(errno));
    const char *p = dir + (strcmp(root, "/") ? strlen(root) : 0);
    char name[256];
    while (*p == '/') {
        const char *c = p + 1, *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || n >= sizeof(name)) {
            close(fd);
            return zx_seterr(err, errlen, "%s: a bad folder name", dir);
        }
        memcpy(name, c, n);
        name[n] = '\0';
        int nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0 && errno == ENOENT) {
            if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST) {
                int e2 = errno;
                close(fd);
                return zx_seterr(err, errlen, "cannot create the folder %s: %s", dir,
                                 strerror(e2));
            }
            nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (nfd < 0) {
            int e2 = errno;
            struct stat sb;
            if ((e2 == ELOOP || e2 == ENOTDIR) && fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(sb.st_mode)) {
                close(fd);
                return zx_seterr(err, errlen, "%.*s is a symbolic link; zx does not follow links "
                            "below %s", (int)(c + n - dir), dir, root);
            }
            close(fd);
            return zx_seterr(err, errlen, "cannot open the folder %s: %s", dir, strerror(e2));
        }
        close(fd);
        fd = nfd;
        p = c + n;
    }
    return fd;
}
