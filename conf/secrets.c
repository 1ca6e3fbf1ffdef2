/*
 * secrets.c — ${env:NAME}, ${file:PATH} and ${secret:NAME} references in
 * config values.
 *
 * `${env:NAME}` stands for the value of that environment variable (NAME:
 * letters, digits and `_`, not starting with a digit; it must be set and
 * not empty); `${file:PATH}` for the content of that file (PATH relative to
 * the config file's folder, up to the first `}`; a regular file of at most
 * 64 KiB, not empty, without NUL bytes; trailing newlines stripped, so
 * `echo secret > file` works); `${secret:NAME}` for secret NAME of the
 * encrypted store (server.secret_store under server.secret_key_file,
 * common/secret_store.h; both paths read from the document as written,
 * since the references of other values are resolved before the server
 * section's values are set; key and store read once per load).  A reference may be the whole value or stand
 * inside a longer one, several in one value:
 * `postgresql://${env:PG_USER}:${env:PG_PASSWORD}@db1/analytics`.
 * `$${` is a literal `${` (so a `$` cannot be written right before a
 * reference); any other `$` is itself (`$ConnectionString` is literal).
 * Every other `${` must start a valid reference: a typo is an error, not
 * text.  A value resolves to at most 1 MiB.
 *
 * It must never: put a resolved value into an error message, quote any
 * part of a secret option's text, follow a reference found inside a
 * resolved value (each piece is read from the text as written, once), or
 * read a non-regular file (a FIFO or /dev/stdin would hang the reload).
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/secret_store.h"

#define ZX_CF_MAX_SECRET (64u << 10)   /* one ${file:} */
#define ZX_CF_MAX_VALUE  (1u << 20)    /* a value, references resolved */

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

/* ---- ${secret:NAME} ---------------------------------------------------- */

struct zx_cf_secrets {
    int failed;                       /* the key or store could not be read */
    unsigned char key[ZX_SS_KEY_LEN];
    zx_secret_store *store;
};

void zx_cf_secrets_free(zx_cf_ctx *x)
{
    if (!x->secrets)
        return;
    explicit_bzero(x->secrets->key, sizeof(x->secrets->key));
    zx_ss_free(x->secrets->store);
    free(x->secrets);
    x->secrets = NULL;
}

/* server.<name> as written in the document (def when absent), absolute
 * (relative to the config's folder), into out. */
static void cf_server_path(zx_cf_ctx *x, const char *name, const char *def, char *out,
                           size_t outlen)
{
    const char *v = NULL;
    yaml_node_t *root = x->have_doc ? zx_cf_root(x) : NULL;
    yaml_node_t *server = NULL;
    for (int pass = 0; pass < 2; pass++) {
        yaml_node_t *m = pass ? server : root;
        if (!m || m->type != YAML_MAPPING_NODE)
            break;
        const char *want = pass ? name : "server";
        for (yaml_node_pair_t *pr = m->data.mapping.pairs.start;
             pr < m->data.mapping.pairs.top; pr++) {
            const char *k = zx_cf_scalar(zx_cf_node(x, pr->key));
            if (k && !strcmp(k, want)) {
                if (pass)
                    v = zx_cf_scalar(zx_cf_node(x, pr->value));
                else
                    server = zx_cf_node(x, pr->value);
            }
        }
    }
    if (!v || !*v)
        v = def;
    if (v[0] == '/')
        snprintf(out, outlen, "%s", v);
    else
        snprintf(out, outlen, "%s/%s", x->base_dir, v);
}

/* The value of secret name into *out (the caller wipes and frees it).  0,
 * or -1 after reporting at n. */
static int cf_read_store_secret(zx_cf_ctx *x, const yaml_node_t *n, const char *name,
                                char **out)
{
    char e[600];
    if (!x->secrets) {
        char kp[4200], sp[4200];
        x->secrets = calloc(1, sizeof(*x->secrets));
        if (!x->secrets) {
            zx_cf_error_at(x, n, "out of memory");
            return -1;
        }
        cf_server_path(x, "secret_key_file", "secret.key", kp, sizeof(kp));
        cf_server_path(x, "secret_store", "secrets.zx", sp, sizeof(sp));
        if (zx_ss_read_key(kp, x->secrets->key, e, sizeof(e)) < 0 ||
            zx_ss_load(sp, &x->secrets->store, e, sizeof(e)) < 0) {
            x->secrets->failed = 1;
            zx_cf_error_at(x, n, "${secret:%s}: %s", name, e);
            return -1;
        }
    }
    if (x->secrets->failed) {
        zx_cf_error_at(x, n, "${secret:%s}: the secrets store cannot be read (said above)",
                       name);
        return -1;
    }
    size_t len;
    if (zx_ss_get(x->secrets->store, x->secrets->key, name, out, &len, e, sizeof(e)) < 0) {
        zx_cf_error_at(x, n, "${secret:%s}: %s", name, e);
        return -1;
    }
    if (memchr(*out, '\0', len)) {
        explicit_bzero(*out, len);
        free(*out);
        *out = NULL;
        zx_cf_error_at(x, n, "${secret:%s}: the value contains a NUL byte", name);
        return -1;
    }
    return 0;
}

/* One piece of a value as written. */
enum { CF_LIT, CF_ESC, CF_ENV, CF_FILE, CF_SECRET, CF_BAD };
typedef struct cf_piece {
    int kind;
    size_t len;          /* bytes of the text it covers */
    size_t alen;         /* CF_ENV, CF_FILE: the name or path ... */
    const char *arg;     /* ... at arg (within the text) */
} cf_piece;

/* The piece of text t starting at t[0] (not at its end). */
static void cf_next(const char *t, cf_piece *p)
{
    const char *close;

    memset(p, 0, sizeof(*p));
    if (t[0] == '$' && t[1] == '$' && t[2] == '{') {
        p->kind = CF_ESC;
        p->len = 3;
        return;
    }
    if (t[0] != '$' || t[1] != '{') {
        p->kind = CF_LIT;
        p->len = t[0] == '$' ? 1 : strcspn(t, "$");
        return;
    }
    close = strchr(t, '}');
    p->kind = CF_BAD;
    p->len = close ? (size_t)(close - t) + 1 : strlen(t);
    if (!close)
        return;
    if (!strncmp(t, "${env:", 6) && cf_env_name_ok(t + 6, (size_t)(close - t) - 6)) {
        p->kind = CF_ENV;
        p->arg = t + 6;
    } else if (!strncmp(t, "${file:", 7) && close > t + 7) {
        p->kind = CF_FILE;
        p->arg = t + 7;
    } else if (!strncmp(t, "${secret:", 9) && close > t + 9 &&
               (size_t)(close - t) - 9 <= ZX_SS_NAME_MAX) {
        char nm[ZX_SS_NAME_MAX + 1];
        memcpy(nm, t + 9, (size_t)(close - t) - 9);
        nm[(size_t)(close - t) - 9] = '\0';
        if (zx_ss_name_ok(nm)) {
            p->kind = CF_SECRET;
            p->arg = t + 9;
        }
    }
    if (p->arg)
        p->alen = (size_t)(close - p->arg);
}

/* Append len bytes of s to *buf (length *blen).  0, or -1 after
 * reporting (out of memory, or the value grew past ZX_CF_MAX_VALUE). */
static int cf_append(zx_cf_ctx *x, const yaml_node_t *n, char **buf,
                     size_t *blen, const char *s, size_t len)
{
    char *nb;

    if (*blen + len > ZX_CF_MAX_VALUE) {
        zx_cf_error_at(x, n, "the value is longer than %u MiB once its "
                       "references are resolved", ZX_CF_MAX_VALUE >> 20);
        return -1;
    }
    nb = realloc(*buf, *blen + len + 1);
    if (!nb) {
        zx_cf_error_at(x, n, "out of memory");
        return -1;
    }
    memcpy(nb + *blen, s, len);
    *blen += len;
    nb[*blen] = '\0';
    *buf = nb;
    return 0;
}

/* The value of one reference onto *buf.  0, or -1 after reporting. */
static int cf_append_ref(zx_cf_ctx *x, const yaml_node_t *n,
                         const cf_piece *p, char **buf, size_t *blen)
{
    char name[256], *rel, *content = NULL;
    const char *v;
    int rc;

    if (p->kind == CF_ENV) {
        memcpy(name, p->arg, p->alen);   /* cf_env_name_ok: at most 255 */
        name[p->alen] = '\0';
        v = getenv(name);
        if (!v) {
            zx_cf_error_at(x, n, "environment variable %s is not set", name);
            return -1;
        }
        if (!*v) {
            zx_cf_error_at(x, n, "environment variable %s is empty", name);
            return -1;
        }
        return cf_append(x, n, buf, blen, v, strlen(v));
    }
    rel = strndup(p->arg, p->alen);
    if (!rel) {
        zx_cf_error_at(x, n, "out of memory");
        return -1;
    }
    if (p->kind == CF_SECRET)
        rc = cf_read_store_secret(x, n, rel, &content);
    else
        rc = cf_read_secret(x, n, rel, &content);
    free(rel);
    if (rc == 0)
        rc = cf_append(x, n, buf, blen, content, strlen(content));
    if (content)
        explicit_bzero(content, strlen(content));
    free(content);
    return rc;
}

int zx_cf_resolve(zx_cf_ctx *x, const yaml_node_t *n, const char *text,
                  int secret, char **out, int *is_ref)
{
    size_t i, nrefs = 0, blen = 0;
    char *buf = NULL;
    cf_piece p;
    int rc = 0;

    *out = NULL;
    *is_ref = ZX_CF_REF_NONE;
    /* First the syntax of every reference, so that a typo is reported
     * even when the value is not resolved (ZX_CONF_SKIP_SECRETS). */
    for (i = 0; text[i]; i += p.len) {
        cf_next(text + i, &p);
        if (p.kind == CF_ENV || p.kind == CF_FILE || p.kind == CF_SECRET)
            nrefs++;
        if (p.kind != CF_BAD)
            continue;
        if (secret)
            zx_cf_error_at(x, n, "the '${' at byte %zu of the value does not "
                           "start a valid reference: write ${env:NAME}, "
                           "${file:PATH} or ${secret:NAME}, or $${ for a literal ${", i + 1);
        else
            zx_cf_error_at(x, n, "'%.*s%s' is not a valid reference: write "
                           "${env:NAME}, ${file:PATH} or ${secret:NAME}, or $${ "
                           "for a literal ${", (int)(p.len > 60 ? 60 : p.len),
                           text + i, p.len > 60 ? "..." : "");
        rc = -1;
    }
    if (rc < 0)
        return -1;
    if (nrefs) {
        cf_next(text, &p);
        *is_ref = nrefs == 1 && p.len == strlen(text) ? ZX_CF_REF_WHOLE
                                                       : ZX_CF_REF_PART;
    }
    if (nrefs && secret && (x->flags & ZX_CONF_SKIP_SECRETS))
        return 0;
    /* Then the value: each piece from the text as written, so nothing in
     * a resolved value is ever read as a reference. */
    if (cf_append(x, n, &buf, &blen, "", 0) < 0)
        return -1;
    for (i = 0; text[i]; i += p.len) {
        cf_next(text + i, &p);
        if (p.kind == CF_LIT)
            rc = cf_append(x, n, &buf, &blen, text + i, p.len);
        else if (p.kind == CF_ESC)
            rc = cf_append(x, n, &buf, &blen, "${", 2);
        else
            rc = cf_append_ref(x, n, &p, &buf, &blen);
        if (rc < 0) {
            free(buf);
            return -1;
        }
    }
    *out = buf;
    return 0;
}
