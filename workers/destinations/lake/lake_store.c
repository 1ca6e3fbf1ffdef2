/*
 * lake_store.c — a lake table's files in a folder or an S3 prefix
 * (lake_store.h).
 */
#include "workers/destinations/lake/lake_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/aws_creds.h"
#include "common/aws_s3.h"
#include "common/fileroots.h"
#include "common/util.h"
#include "workers/aws_conn.h"

#define LAKE_GET_MAX ((size_t)256 << 20)
#define LAKE_PART (8u << 20)
#define S3_SCHEME "s3://"

struct zx_lake {
    char *root;              /* as given */
    char *what;
    /* a folder */
    char *froot;             /* the file root it lies under */
    /* S3 */
    zx_aws_creds *creds;
    zx_s3 *s3;
    char *bucket;
    char *prefix;            /* "" or "a/b/" (with its '/') */
};

struct zx_lake_out {
    zx_lake *l;
    char *rel;
    int dfd, fd;             /* a folder: its folder, the temporary file */
    char *tmp, *name;        /* names in dfd */
    zx_s3_upload *up;        /* S3 */
    uint64_t bytes;
};

const char *zx_lake_root(const zx_lake *l) { return l->root; }
int zx_lake_is_s3(const zx_lake *l) { return l->s3 != NULL; }

/* 1 when rel is a relative name zx may use: no leading '/', no "." or
 * ".." part, no "//", no control characters. */
static int rel_ok(const char *rel)
{
    if (!rel || !rel[0] || rel[0] == '/' || strlen(rel) > 900)
        return 0;
    for (const char *p = rel; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '\\')
            return 0;
    const char *s = rel;
    for (;;) {
        size_t n = strcspn(s, "/");
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return 0;
        if (!s[n])
            return 1;
        s += n + 1;
    }
}

static int bad_rel(const zx_lake *l, const char *rel, char *err, size_t errlen)
{
    return zx_seterr(err, errlen, "%s %s: bad file name '%.100s'", l->what, l->root,
                     rel ? rel : "(none)");
}

void zx_lake_free(zx_lake *l)
{
    if (!l)
        return;
    zx_s3_free(l->s3);
    zx_aws_creds_free(l->creds);
    free(l->root);
    free(l->what);
    free(l->froot);
    free(l->bucket);
    free(l->prefix);
    free(l);
}

static int open_s3(zx_lake *l, const zx_lake_args *a, char *err, size_t errlen)
{
    const char *b = a->root + strlen(S3_SCHEME);
    size_t bl = strcspn(b, "/");
    if (bl < 3 || bl > 63)
        return zx_seterr(err, errlen, "%s %s: not s3://bucket/prefix", l->what, l->root);
    if (!a->conn)
        return zx_seterr(err, errlen, "%s %s: an s3:// path needs `connection:` naming a "
                         "connection of kind %s", l->what, l->root, ZX_AWS_CONN_KIND);
    if (!a->conn->kind || strcmp(a->conn->kind, ZX_AWS_CONN_KIND))
        return zx_seterr(err, errlen, "%s %s: connection %s is of kind %s; an s3:// path "
                         "needs kind %s", l->what, l->root, a->conn->name,
                         a->conn->kind ? a->conn->kind : "(none)", ZX_AWS_CONN_KIND);
    l->bucket = strndup(b, bl);
    const char *p = b[bl] ? b + bl + 1 : "";
    size_t pl = strlen(p);
    while (pl && p[pl - 1] == '/')
        pl--;
    l->prefix = malloc(pl + 2);
    if (!l->bucket || !l->prefix)
        return zx_seterr(err, errlen, "%s %s: out of memory", l->what, l->root);
    memcpy(l->prefix, p, pl);
    if (pl)
        l->prefix[pl++] = '/';
    l->prefix[pl] = 0;
    if (pl) {
        char t[1000];
        snprintf(t, sizeof(t), "%.*s", (int)pl - 1, l->prefix);
        if (!rel_ok(t))
            return zx_seterr(err, errlen, "%s %s: bad prefix (no '.', '..' or empty parts)",
                             l->what, l->root);
    }
    zx_aws_cred_opts co;
    zx_aws_conn_cred_opts(a->conn, &co);
    char e[1200];
    if (!(l->creds = zx_aws_creds_new(&co, e, sizeof(e))))
        return zx_seterr(err, errlen, "%s %s: connection %s: %s", l->what, l->root,
                         a->conn->name, e);
    zx_http_opts ho = {.timeout_ms = a->deadline_ms > 0 ? a->deadline_ms : 60000,
                       .max_attempts = 4};
    if (!(l->s3 = zx_aws_conn_s3(a->conn, l->creds, &ho, e, sizeof(e))))
        return zx_seterr(err, errlen, "%s %s: connection %s: %s", l->what, l->root,
                         a->conn->name, e);
    return 0;
}

zx_lake *zx_lake_open(const zx_lake_args *a, char *err, size_t errlen)
{
    zx_lake *l = calloc(1, sizeof(*l));
    if (!l || !(l->root = strdup(a->root ? a->root : "")) ||
        !(l->what = strdup(a->what ? a->what : "lake"))) {
        zx_seterr(err, errlen, "lake: out of memory");
        zx_lake_free(l);
        return NULL;
    }
    if (!strncmp(l->root, S3_SCHEME, strlen(S3_SCHEME))) {
        if (open_s3(l, a, err, errlen) < 0) {
            zx_lake_free(l);
            return NULL;
        }
        return l;
    }
    if (!zx_fr_normalised(l->root) || !strcmp(l->root, "/")) {
        zx_seterr(err, errlen, "%s %s: not an absolute path without '.' or '..' parts",
                  l->what, l->root);
        zx_lake_free(l);
        return NULL;
    }
    int r = zx_fr_root_of(l->root, a->roots, a->nroots);
    if (r < 0) {
        char list[1024];
        zx_fr_list(a->roots, a->nroots, list, sizeof(list));
        zx_seterr(err, errlen, "%s %s is outside the folders zx may write files to (%s); "
                  "add a folder to server.file_roots to allow it", l->what, l->root, list);
        zx_lake_free(l);
        return NULL;
    }
    if (!(l->froot = strdup(a->roots[r]))) {
        zx_seterr(err, errlen, "%s: out of memory", l->what);
        zx_lake_free(l);
        return NULL;
    }
    char e[600];
    int fd = zx_fr_open_dir(l->froot, l->root, e, sizeof(e));
    if (fd < 0) {
        zx_seterr(err, errlen, "%s %s: %s", l->what, l->root, e);
        zx_lake_free(l);
        return NULL;
    }
    close(fd);
    return l;
}

/* A folder: open the folder of rel (made when missing); *base its last
 * part.  The descriptor, or -1 with err. */
static int dir_of(zx_lake *l, const char *rel, const char **base, char *err, size_t errlen)
{
    const char *slash = strrchr(rel, '/');
    *base = slash ? slash + 1 : rel;
    char path[2048];
    if (snprintf(path, sizeof(path), "%s%s%.*s", l->root, slash ? "/" : "",
                 slash ? (int)(slash - rel) : 0, rel) >= (int)sizeof(path))
        return zx_seterr(err, errlen, "%s %s: path too long", l->what, l->root);
    char e[600];
    int fd = zx_fr_open_dir(l->froot, path, e, sizeof(e));
    if (fd < 0)
        return zx_seterr(err, errlen, "%s %s: %s", l->what, l->root, e);
    return fd;
}

/* "prefix" + rel into key.  0 or -1. */
static int s3_key(const zx_lake *l, const char *rel, char *key, size_t keylen, char *err,
                  size_t errlen)
{
    if (snprintf(key, keylen, "%s%s", l->prefix, rel) >= (int)keylen)
        return zx_seterr(err, errlen, "%s %s: key too long", l->what, l->root);
    return 0;
}

int zx_lake_get(zx_lake *l, const char *rel, size_t max, zx_buf *out, char *err,
                size_t errlen)
{
    zx_buf_reset(out);
    if (!rel_ok(rel))
        return bad_rel(l, rel, err, errlen);
    if (!max)
        max = LAKE_GET_MAX;
    if (l->s3) {
        char key[ZX_S3_KEY_MAX + 1], *data = NULL;
        size_t len = 0;
        if (s3_key(l, rel, key, sizeof(key), err, errlen) < 0)
            return -1;
        int rc = zx_s3_get_object(l->s3, l->bucket, key, max, &data, &len, err, errlen);
        if (rc == ZX_S3_NOT_FOUND)
            return ZX_LAKE_NOT_FOUND;
        if (rc != 0)
            return -1;
        rc = zx_buf_put(out, data, len);
        free(data);
        return rc < 0 ? zx_seterr(err, errlen, "%s: out of memory", l->what) : 0;
    }
    const char *base;
    int dfd = dir_of(l, rel, &base, err, errlen);
    if (dfd < 0)
        return -1;
    int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    close(dfd);
    if (fd < 0) {
        if (errno == ENOENT)
            return ZX_LAKE_NOT_FOUND;
        return zx_seterr(err, errlen, "%s %s: %s: %s", l->what, l->root, rel, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > max) {
        close(fd);
        return zx_seterr(err, errlen, "%s %s: %s: not a regular file of at most %zu bytes",
                         l->what, l->root, rel, max);
    }
    if (zx_buf_reserve(out, (size_t)sb.st_size + 1) < 0) {
        close(fd);
        return zx_seterr(err, errlen, "%s: out of memory", l->what);
    }
    size_t got = 0;
    while (got < (size_t)sb.st_size) {
        ssize_t n = read(fd, out->p + got, (size_t)sb.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            return zx_seterr(err, errlen, "%s %s: %s: %s", l->what, l->root, rel, strerror(e));
        }
        got += (size_t)n;
    }
    close(fd);
    out->len = got;
    out->p[got] = 0;
    return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A folder: a new temporary file in dfd for base; its name into tmp. */
static int tmp_create(int dfd, const char *base, char *tmp, size_t tmplen)
{
    static unsigned seq;
    for (int i = 0; i < 100; i++) {
        snprintf(tmp, tmplen, ".%.200s.tmp-%d-%u", base, (int)getpid(), seq++);
        int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

int zx_lake_put(zx_lake *l, const char *rel, const void *p, size_t n, int if_absent,
                char *err, size_t errlen)
{
    if (!rel_ok(rel))
        return bad_rel(l, rel, err, errlen);
    if (l->s3) {
        char key[ZX_S3_KEY_MAX + 1];
        if (s3_key(l, rel, key, sizeof(key), err, errlen) < 0)
            return -1;
        zx_s3_put_opts po = {.if_none_match = if_absent,
                             .content_type = "application/octet-stream"};
        int rc = zx_s3_put_object(l->s3, l->bucket, key, p, n, &po, NULL, err, errlen);
        return rc == ZX_S3_EXISTS ? ZX_LAKE_EXISTS : rc == 0 ? 0 : -1;
    }
    const char *base;
    int dfd = dir_of(l, rel, &base, err, errlen);
    if (dfd < 0)
        return -1;
    char tmp[300];
    int fd = tmp_create(dfd, base, tmp, sizeof(tmp));
    if (fd < 0 || write_all(fd, p, n) < 0 || fsync(fd) < 0) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlinkat(dfd, tmp, 0);
        }
        close(dfd);
        return zx_seterr(err, errlen, "%s %s: %s: %s", l->what, l->root, rel, strerror(e));
    }
    close(fd);
    int rc = 0;
    if (if_absent) {
        if (linkat(dfd, tmp, dfd, base, 0) < 0)
            rc = errno == EEXIST ? ZX_LAKE_EXISTS : -1;
        int e = errno;
        unlinkat(dfd, tmp, 0);
        errno = e;
    } else if (renameat(dfd, tmp, dfd, base) < 0) {
        rc = -1;
        int e = errno;
        unlinkat(dfd, tmp, 0);
        errno = e;
    }
    if (rc < 0) {
        int e = errno;
        close(dfd);
        return zx_seterr(err, errlen, "%s %s: %s: %s", l->what, l->root, rel, strerror(e));
    }
    if (rc == 0)
        fsync(dfd);
    close(dfd);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void zx_lake_names_free(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

/* Add a copy of s to the list.  0 or -1 (out of memory). */
static int add_name(char ***names, size_t *n, size_t *cap, const char *s)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        char **nn = realloc(*names, c * sizeof(*nn));
        if (!nn)
            return -1;
        *names = nn;
        *cap = c;
    }
    if (!((*names)[*n] = strdup(s)))
        return -1;
    (*n)++;
    return 0;
}

static int list_s3(zx_lake *l, const char *rel, char ***names, size_t *n, size_t *cap,
                   char *err, size_t errlen)
{
    char pfx[ZX_S3_KEY_MAX + 1];
    if (snprintf(pfx, sizeof(pfx), "%s%s/", l->prefix, rel) >= (int)sizeof(pfx))
        return zx_seterr(err, errlen, "%s %s: key too long", l->what, l->root);
    size_t pl = strlen(pfx);
    char *next = NULL;
    for (;;) {
        zx_s3_list ls = {0};
        int rc = zx_s3_list_objects(l->s3, l->bucket, pfx, next, &ls, err, errlen);
        free(next);
        next = NULL;
        if (rc != 0) {
            zx_s3_list_free(&ls);
            return -1;
        }
        for (size_t i = 0; i < ls.n; i++) {
            const char *k = ls.items[i].key + pl;
            if (strlen(ls.items[i].key) <= pl || strchr(k, '/'))
                continue;
            if (add_name(names, n, cap, k) < 0) {
                zx_s3_list_free(&ls);
                return zx_seterr(err, errlen, "%s: out of memory", l->what);
            }
        }
        if (ls.truncated && ls.next)
            next = strdup(ls.next);
        int more = ls.truncated && next;
        zx_s3_list_free(&ls);
        if (!more)
            return 0;
    }
}

int zx_lake_list(zx_lake *l, const char *rel, char ***names, size_t *n, char *err,
                 size_t errlen)
{
    *names = NULL;
    *n = 0;
    size_t cap = 0;
    if (!rel_ok(rel))
        return bad_rel(l, rel, err, errlen);
    if (l->s3) {
        if (list_s3(l, rel, names, n, &cap, err, errlen) < 0) {
            zx_lake_names_free(*names, *n);
            *names = NULL;
            *n = 0;
            return -1;
        }
    } else {
        char probe[1000];
        snprintf(probe, sizeof(probe), "%s/x", rel);
        const char *base;
        int dfd = dir_of(l, probe, &base, err, errlen);
        if (dfd < 0)
            return -1;
        DIR *d = fdopendir(dfd);
        if (!d) {
            close(dfd);
            return zx_seterr(err, errlen, "%s %s: %s: %s", l->what, l->root, rel,
                             strerror(errno));
        }
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            if (add_name(names, n, &cap, de->d_name) < 0) {
                closedir(d);
                zx_lake_names_free(*names, *n);
                *names = NULL;
                *n = 0;
                return zx_seterr(err, errlen, "%s: out of memory", l->what);
            }
        }
        closedir(d);
    }
    if (*n)
        qsort(*names, *n, sizeof(**names), cmp_names);
    return 0;
}

int zx_lake_delete(zx_lake *l, const char *rel, char *err, size_t errlen)
{
    if (!rel_ok(rel))
        return bad_rel(l, rel, err, errlen);
    if (l->s3) {
        char key[ZX_S3_KEY_MAX + 1];
        if (s3_key(l, rel, key, sizeof(key), err, errlen) < 0)
            return -1;
        return zx_s3_delete_object(l->s3, l->bucket, key, err, errlen) == 0 ? 0 : -1;
    }
    const char *base;
    int dfd = dir_of(l, rel, &base, err, errlen);
    if (dfd < 0)
        return -1;
    int rc = unlinkat(dfd, base, 0);
    int e = errno;
    close(dfd);
    if (rc < 0 && e != ENOENT)
        return zx_seterr(err, errlen, "%s %s: %s: %s", l->what, l->root, rel, strerror(e));
    return 0;
}

/* ---- data files --------------------------------------------------------- */

static void out_free(zx_lake_out *o)
{
    if (!o)
        return;
    zx_s3_upload_free(o->up);
    if (o->fd >= 0)
        close(o->fd);
    if (o->tmp && o->dfd >= 0)
        unlinkat(o->dfd, o->tmp, 0);
    if (o->dfd >= 0)
        close(o->dfd);
    free(o->tmp);
    free(o->name);
    free(o->rel);
    free(o);
}

zx_lake_out *zx_lake_create(zx_lake *l, const char *rel, char *err, size_t errlen)
{
    if (!rel_ok(rel)) {
        bad_rel(l, rel, err, errlen);
        return NULL;
    }
    zx_lake_out *o = calloc(1, sizeof(*o));
    if (!o || !(o->rel = strdup(rel))) {
        free(o);
        zx_seterr(err, errlen, "%s: out of memory", l->what);
        return NULL;
    }
    o->l = l;
    o->fd = o->dfd = -1;
    if (l->s3) {
        char key[ZX_S3_KEY_MAX + 1];
        if (s3_key(l, rel, key, sizeof(key), err, errlen) < 0) {
            out_free(o);
            return NULL;
        }
        zx_s3_put_opts po = {.content_type = "application/octet-stream"};
        if (!(o->up = zx_s3_upload_new(l->s3, l->bucket, key, LAKE_PART, &po, err, errlen))) {
            out_free(o);
            return NULL;
        }
        return o;
    }
    const char *base;
    if ((o->dfd = dir_of(l, rel, &base, err, errlen)) < 0) {
        out_free(o);
        return NULL;
    }
    char tmp[300];
    o->fd = tmp_create(o->dfd, base, tmp, sizeof(tmp));
    if (o->fd < 0 || !(o->tmp = strdup(tmp)) || !(o->name = strdup(base))) {
        zx_seterr(err, errlen, "%s %s: %s: %s", l->what, l->root, rel,
                  o->fd < 0 ? strerror(errno) : "out of memory");
        if (o->fd >= 0 && !o->tmp)
            unlinkat(o->dfd, tmp, 0);
        out_free(o);
        return NULL;
    }
    return o;
}

int zx_lake_write(zx_lake_out *o, const void *p, size_t n, char *err, size_t errlen)
{
    if (o->up) {
        if (zx_s3_upload_write(o->up, p, n, err, errlen) != 0)
            return -1;
    } else if (write_all(o->fd, p, n) < 0) {
        return zx_seterr(err, errlen, "%s %s: %s: %s", o->l->what, o->l->root, o->rel,
                         strerror(errno));
    }
    o->bytes += n;
    return 0;
}

int zx_lake_sink(void *ctx, const void *p, size_t n, char *err, size_t errlen)
{
    return zx_lake_write(ctx, p, n, err, errlen);
}

int zx_lake_out_commit(zx_lake_out *o, uint64_t *size, char *err, size_t errlen)
{
    int rc = 0;
    if (o->up) {
        zx_s3_object_info info;
        if (zx_s3_upload_commit(o->up, &info, err, errlen) != 0)
            rc = -1;
    } else if (fsync(o->fd) < 0 || renameat(o->dfd, o->tmp, o->dfd, o->name) < 0) {
        rc = zx_seterr(err, errlen, "%s %s: %s: %s", o->l->what, o->l->root, o->rel,
                       strerror(errno));
    } else {
        free(o->tmp);
        o->tmp = NULL;
        fsync(o->dfd);
    }
    if (rc == 0 && size)
        *size = o->bytes;
    out_free(o);
    return rc;
}

void zx_lake_out_abort(zx_lake_out *o)
{
    if (o && o->up) {
        char e[256];
        zx_s3_upload_abort(o->up, e, sizeof(e));
    }
    out_free(o);
}
