/*
 * secret_store.c — the encrypted secrets store and its key file
 * (secret_store.h): parse and write the JSON store, AES-256-GCM per value
 * (OpenSSL's EVP), the key file's checks.
 */
#include "common/secret_store.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/util.h"
#include "common/hex.h"

#define NONCE_LEN 12
#define TAG_LEN   16
#define KEY_ID_LEN 8

typedef struct ss_entry {
    char *name;
    unsigned char nonce[NONCE_LEN];
    unsigned char *data;        /* ciphertext then tag */
    size_t dlen;
    char set_at[32];
} ss_entry;

struct zx_secret_store {
    int have_id;
    unsigned char key_id[KEY_ID_LEN];
    ss_entry *e;
    size_t n, cap;
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) {
        vsnprintf(err, errlen, fmt, ap);
        zx_oneline(err);
    }
    va_end(ap);
    return -1;
}

int zx_ss_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > ZX_SS_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

static void key_id(const unsigned char key[ZX_SS_KEY_LEN], unsigned char id[KEY_ID_LEN])
{
    static const char label[] = "zx_secret_key_id";
    unsigned char in[sizeof(label) - 1 + ZX_SS_KEY_LEN], md[SHA256_DIGEST_LENGTH];
    memcpy(in, label, sizeof(label) - 1);
    memcpy(in + sizeof(label) - 1, key, ZX_SS_KEY_LEN);
    SHA256(in, sizeof(in), md);
    memcpy(id, md, KEY_ID_LEN);
    explicit_bzero(in, sizeof(in));
}

static int hex_decode(const char *s, size_t slen, unsigned char *out, size_t n)
{
    if (slen != n * 2)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int h = zx_hexval((unsigned char)s[2 * i]), l = zx_hexval((unsigned char)s[2 * i + 1]);
        if (h < 0 || l < 0)
            return -1;
        out[i] = (unsigned char)(h << 4 | l);
    }
    return 0;
}

static void hex_encode(const unsigned char *p, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[p[i] >> 4];
        out[2 * i + 1] = d[p[i] & 15];
    }
    out[2 * n] = '\0';
}

/* ---- the key file ---------------------------------------------------- */

int zx_ss_read_key(const char *path, unsigned char key[ZX_SS_KEY_LEN], char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return fail(err, errlen, "cannot read the secret key file %s: %s%s", path,
                    strerror(errno), errno == ENOENT ? " (make one with `zxctl secret init`)"
                                                     : "");
    struct stat st;
    char buf[80];
    ssize_t got = -1;
    int rc = -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        fail(err, errlen, "secret key file %s is not a regular file", path);
        goto out;
    }
    if (st.st_mode & 077) {
        fail(err, errlen, "secret key file %s may be read by others (mode %03o): "
             "chmod 600 it", path, (unsigned)(st.st_mode & 0777));
        goto out;
    }
    do
        got = read(fd, buf, sizeof(buf));
    while (got < 0 && errno == EINTR);
    size_t n = got > 0 ? (size_t)got : 0;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    if (hex_decode(buf, n, key, ZX_SS_KEY_LEN) < 0) {
        fail(err, errlen, "secret key file %s is not a zx key (64 hex digits): make one "
             "with `zxctl secret init`", path);
        goto out;
    }
    rc = 0;
out:
    explicit_bzero(buf, sizeof(buf));
    close(fd);
    return rc;
}

/* Write all of p[0..n) to fd.  0 or -1 (errno). */
static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Write p[0..n) to path with mode 0600: through path.tmp and a rename when
 * via_tmp, else created exclusively.  0 or -1 (err). */
static int write_file(const char *path, const char *p, size_t n, int via_tmp, const char *what,
                      char *err, size_t errlen)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return fail(err, errlen, "%s path %s is too long", what, path);
    const char *target = via_tmp ? tmp : path;
    if (via_tmp)
        unlink(tmp);
    int fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return fail(err, errlen, "cannot create %s %s: %s", what, target, strerror(errno));
    if (write_all(fd, p, n) < 0 || fsync(fd) < 0) {
        int e = errno;
        close(fd);
        unlink(target);
        return fail(err, errlen, "cannot write %s %s: %s", what, target, strerror(e));
    }
    close(fd);
    if (via_tmp && rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return fail(err, errlen, "cannot put %s in place at %s: %s", what, path, strerror(e));
    }
    return 0;
}

int zx_ss_write_key(const char *path, unsigned char key[ZX_SS_KEY_LEN], int tmp_then_rename,
                    char *err, size_t errlen)
{
    if (getrandom(key, ZX_SS_KEY_LEN, 0) != ZX_SS_KEY_LEN)
        return fail(err, errlen, "cannot get random bytes for a key: %s", strerror(errno));
    char text[2 * ZX_SS_KEY_LEN + 2];
    hex_encode(key, ZX_SS_KEY_LEN, text);
    text[2 * ZX_SS_KEY_LEN] = '\n';
    text[2 * ZX_SS_KEY_LEN + 1] = '\0';
    int rc = write_file(path, text, 2 * ZX_SS_KEY_LEN + 1, tmp_then_rename, "secret key file",
                        err, errlen);
    explicit_bzero(text, sizeof(text));
    return rc;
}

/* ---- the store --------------------------------------------------------- */

zx_secret_store *zx_ss_new(void)
{
    return calloc(1, sizeof(zx_secret_store));
}

static void entry_free(ss_entry *e)
{
    free(e->name);
    free(e->data);
    memset(e, 0, sizeof(*e));
}

void zx_ss_free(zx_secret_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        entry_free(&s->e[i]);
    free(s->e);
    free(s);
}

/* The index of name, or where it would go (*found 0). */
static size_t find(const zx_secret_store *s, const char *name, int *found)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->e[mid].name, name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

/* A new entry for name at its place (the caller fills it).  NULL out of
 * memory or full. */
static ss_entry *insert(zx_secret_store *s, const char *name)
{
    int found;
    size_t at = find(s, name, &found);
    if (found)
        return &s->e[at];   /* its data stays until replaced */
    if (s->n >= ZX_SS_MAX_SECRETS)
        return NULL;
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 16;
        ss_entry *ne = realloc(s->e, c * sizeof(*ne));
        if (!ne)
            return NULL;
        s->e = ne;
        s->cap = c;
    }
    char *nm = strdup(name);
    if (!nm)
        return NULL;
    memmove(&s->e[at + 1], &s->e[at], (s->n - at) * sizeof(*s->e));
    memset(&s->e[at], 0, sizeof(*s->e));
    s->e[at].name = nm;
    s->n++;
    return &s->e[at];
}

int zx_ss_parse(const char *text, size_t len, zx_secret_store **out, char *err, size_t errlen)
{
    *out = NULL;
    if (len > ZX_SS_MAX_FILE)
        return fail(err, errlen, "larger than %u MiB", ZX_SS_MAX_FILE >> 20);
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return fail(err, errlen, "not JSON (line %d: %.120s)", je.line, je.text);
    zx_secret_store *s = zx_ss_new();
    int rc = -1;
    if (!s) {
        fail(err, errlen, "out of memory");
        goto out;
    }
    const char *fmt = json_string_value(json_object_get(root, "format"));
    json_t *ver = json_object_get(root, "version"), *secrets = json_object_get(root, "secrets");
    if (!fmt || strcmp(fmt, "zx_secret_store") != 0) {
        fail(err, errlen, "not a zx secrets store (no \"format\": \"zx_secret_store\")");
        goto out;
    }
    if (!json_is_integer(ver) || json_integer_value(ver) != 1) {
        fail(err, errlen, "version %s is not one this zx reads (1)",
             json_is_integer(ver) ? "other than 1" : "missing");
        goto out;
    }
    if (!json_is_object(secrets) || json_object_size(secrets) > ZX_SS_MAX_SECRETS) {
        fail(err, errlen, "\"secrets\" is not an object of at most %d secrets",
             ZX_SS_MAX_SECRETS);
        goto out;
    }
    const char *kid = json_string_value(json_object_get(root, "key_id"));
    if (kid) {
        if (hex_decode(kid, strlen(kid), s->key_id, KEY_ID_LEN) < 0) {
            fail(err, errlen, "\"key_id\" is not 16 hex digits");
            goto out;
        }
        s->have_id = 1;
    } else if (json_object_size(secrets)) {
        fail(err, errlen, "secrets without a \"key_id\"");
        goto out;
    }
    const char *name;
    json_t *v;
    json_object_foreach(secrets, name, v) {
        if (!zx_ss_name_ok(name)) {
            fail(err, errlen, "a secret's name is not letters, digits, '_', '-' or '.' "
                 "(at most %d)", ZX_SS_NAME_MAX);
            goto out;
        }
        const char *nonce = json_string_value(json_object_get(v, "nonce"));
        const char *data = json_string_value(json_object_get(v, "data"));
        const char *at = json_string_value(json_object_get(v, "set_at"));
        size_t dl = data ? strlen(data) : 0;
        if (!nonce || !data || dl > ZX_BASE64_LEN(ZX_SS_MAX_VALUE + TAG_LEN)) {
            fail(err, errlen, "secret %s: \"nonce\" or \"data\" missing, or data too long",
                 name);
            goto out;
        }
        ss_entry *e = insert(s, name);
        if (!e || !(e->data = malloc(dl / 4 * 3 + 3))) {
            fail(err, errlen, "out of memory");
            goto out;
        }
        long n = zx_base64_decode(data, dl, e->data);
        if (hex_decode(nonce, strlen(nonce), e->nonce, NONCE_LEN) < 0 || n < TAG_LEN + 1) {
            fail(err, errlen, "secret %s: \"nonce\" is not 24 hex digits or \"data\" is not "
                 "base64 of a value and its tag", name);
            goto out;
        }
        e->dlen = (size_t)n;
        snprintf(e->set_at, sizeof(e->set_at), "%.31s", at ? at : "");
    }
    *out = s;
    s = NULL;
    rc = 0;
out:
    zx_ss_free(s);
    json_decref(root);
    return rc;
}

int zx_ss_load(const char *path, zx_secret_store **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) {
        *out = zx_ss_new();
        return *out ? 0 : fail(err, errlen, "out of memory");
    }
    if (fd < 0)
        return fail(err, errlen, "cannot read the secrets store %s: %s", path,
                    strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)ZX_SS_MAX_FILE) {
        close(fd);
        return fail(err, errlen, "secrets store %s is not a regular file of at most %u MiB",
                    path, ZX_SS_MAX_FILE >> 20);
    }
    size_t size = (size_t)st.st_size, n = 0;
    char *buf = malloc(size + 1);
    if (!buf) {
        close(fd);
        return fail(err, errlen, "out of memory");
    }
    while (n < size) {
        ssize_t g = read(fd, buf + n, size - n);
        if (g < 0 && errno == EINTR)
            continue;
        if (g <= 0)
            break;
        n += (size_t)g;
    }
    close(fd);
    char e[300];
    int rc = zx_ss_parse(buf, n, out, e, sizeof(e));
    free(buf);
    if (rc < 0)
        return fail(err, errlen, "secrets store %s: %s", path, e);
    return 0;
}

int zx_ss_key_matches(const zx_secret_store *s, const unsigned char key[ZX_SS_KEY_LEN])
{
    if (!s->have_id)
        return s->n == 0;
    unsigned char id[KEY_ID_LEN];
    key_id(key, id);
    return memcmp(id, s->key_id, KEY_ID_LEN) == 0;
}

/* AES-256-GCM of in (n bytes) with aad name: enc 1 writes n bytes and the
 * tag to out; enc 0 reads the tag after in (n includes it) and writes
 * n - TAG_LEN bytes.  0, or -1 (the check failed). */
static int gcm(int enc, const unsigned char key[ZX_SS_KEY_LEN],
               const unsigned char nonce[NONCE_LEN], const char *name, const unsigned char *in,
               size_t n, unsigned char *out)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int ok = c != NULL, l = 0;
    size_t body = enc ? n : n - TAG_LEN;
    if (body > (size_t)ZX_SS_MAX_VALUE)
        ok = 0;
    ok = ok && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) == 1;
    ok = ok && EVP_CipherInit_ex(c, NULL, NULL, key, nonce, enc) == 1;
    /* the associated data: the name, so a value cannot move to another */
    static const char pre[] = "zx_secret_name:";
    ok = ok && EVP_CipherUpdate(c, NULL, &l, (const unsigned char *)pre, sizeof(pre) - 1) == 1;
    ok = ok && EVP_CipherUpdate(c, NULL, &l, (const unsigned char *)name, (int)strlen(name)) == 1;
    ok = ok && EVP_CipherUpdate(c, out, &l, in, (int)body) == 1;
    if (ok && !enc)
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN, (void *)(in + body)) == 1;
    ok = ok && EVP_CipherFinal_ex(c, out + l, &l) == 1;
    if (ok && enc)
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, out + body) == 1;
    EVP_CIPHER_CTX_free(c);
    return ok ? 0 : -1;
}

int zx_ss_get(const zx_secret_store *s, const unsigned char key[ZX_SS_KEY_LEN], const char *name,
              char **value, size_t *len, char *err, size_t errlen)
{
    *value = NULL;
    *len = 0;
    int found;
    size_t at = find(s, name, &found);
    if (!found)
        return fail(err, errlen, "no secret %s in the store (set it with `zxctl secret set "
                    "%s`)", name, name);
    if (!zx_ss_key_matches(s, key))
        return fail(err, errlen, "the secrets store was written under another key than "
                    "the key file's (a key file from elsewhere, or a rotation cut short: "
                    "run `zxctl secret rotate-key` again)");
    const ss_entry *e = &s->e[at];
    char *v = malloc(e->dlen - TAG_LEN + 1);
    if (!v)
        return fail(err, errlen, "out of memory");
    if (gcm(0, key, e->nonce, name, e->data, e->dlen, (unsigned char *)v) < 0) {
        explicit_bzero(v, e->dlen - TAG_LEN);
        free(v);
        return fail(err, errlen, "secret %s fails its check (the store was changed by hand, "
                    "or damaged): set it again", name);
    }
    v[e->dlen - TAG_LEN] = '\0';
    *value = v;
    *len = e->dlen - TAG_LEN;
    return 0;
}

static void now_rfc3339(char *out, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Encrypt value into entry e (its data replaced). */
static int seal(ss_entry *e, const unsigned char key[ZX_SS_KEY_LEN], const char *value,
                size_t len, char *err, size_t errlen)
{
    unsigned char *d = malloc(len + TAG_LEN);
    if (!d)
        return fail(err, errlen, "out of memory");
    if (getrandom(e->nonce, NONCE_LEN, 0) != NONCE_LEN ||
        gcm(1, key, e->nonce, e->name, (const unsigned char *)value, len, d) < 0) {
        free(d);
        return fail(err, errlen, "cannot encrypt secret %s", e->name);
    }
    free(e->data);
    e->data = d;
    e->dlen = len + TAG_LEN;
    return 0;
}

int zx_ss_set(zx_secret_store *s, const unsigned char key[ZX_SS_KEY_LEN], const char *name,
              const char *value, size_t len, char *err, size_t errlen)
{
    if (!zx_ss_name_ok(name))
        return fail(err, errlen, "a secret's name is letters, digits, '_', '-' and '.' (at "
                    "most %d)", ZX_SS_NAME_MAX);
    if (len == 0 || len > ZX_SS_MAX_VALUE)
        return fail(err, errlen, "secret %s: a value is 1 to %u bytes", name,
                    ZX_SS_MAX_VALUE);
    if (!zx_ss_key_matches(s, key))
        return fail(err, errlen, "the secrets store was written under another key than "
                    "the key file's: refusing to mix keys");
    ss_entry *e = insert(s, name);
    if (!e)
        return fail(err, errlen, "out of memory, or more than %d secrets", ZX_SS_MAX_SECRETS);
    if (seal(e, key, value, len, err, errlen) < 0) {
        if (!e->data)
            zx_ss_delete(s, name);   /* a new one; an old value stays */
        return -1;
    }
    now_rfc3339(e->set_at, sizeof(e->set_at));
    key_id(key, s->key_id);
    s->have_id = 1;
    return 0;
}

int zx_ss_delete(zx_secret_store *s, const char *name)
{
    int found;
    size_t at = find(s, name, &found);
    if (!found)
        return 0;
    entry_free(&s->e[at]);
    memmove(&s->e[at], &s->e[at + 1], (s->n - at - 1) * sizeof(*s->e));
    s->n--;
    return 1;
}

int zx_ss_rekey(zx_secret_store *s, const unsigned char oldkey[ZX_SS_KEY_LEN],
                const unsigned char newkey[ZX_SS_KEY_LEN], char *err, size_t errlen)
{
    /* all decrypted first: a value that fails its check changes nothing */
    char **vals = calloc(s->n ? s->n : 1, sizeof(char *));
    size_t *lens = calloc(s->n ? s->n : 1, sizeof(size_t));
    int rc = -1;
    if (!vals || !lens) {
        fail(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < s->n; i++)
        if (zx_ss_get(s, oldkey, s->e[i].name, &vals[i], &lens[i], err, errlen) < 0)
            goto out;
    for (size_t i = 0; i < s->n; i++)
        if (seal(&s->e[i], newkey, vals[i], lens[i], err, errlen) < 0)
            goto out;   /* the caller drops the store: nothing was saved */
    key_id(newkey, s->key_id);
    s->have_id = 1;
    rc = 0;
out:
    for (size_t i = 0; vals && i < s->n; i++) {
        if (vals[i])
            explicit_bzero(vals[i], lens[i]);
        free(vals[i]);
    }
    free(vals);
    free(lens);
    return rc;
}

size_t zx_ss_count(const zx_secret_store *s)
{
    return s->n;
}

const char *zx_ss_name(const zx_secret_store *s, size_t i, const char **set_at)
{
    if (i >= s->n)
        return NULL;
    if (set_at)
        *set_at = s->e[i].set_at;
    return s->e[i].name;
}

int zx_ss_save(const zx_secret_store *s, const char *path, char *err, size_t errlen)
{
    json_t *root = json_object(), *sec = json_object();
    int rc = -1;
    char *text = NULL;
    if (!root || !sec)
        goto oom;
    json_object_set_new(root, "format", json_string("zx_secret_store"));
    json_object_set_new(root, "version", json_integer(1));
    if (s->have_id) {
        char kid[2 * KEY_ID_LEN + 1];
        hex_encode(s->key_id, KEY_ID_LEN, kid);
        json_object_set_new(root, "key_id", json_string(kid));
    }
    for (size_t i = 0; i < s->n; i++) {
        const ss_entry *e = &s->e[i];
        char nonce[2 * NONCE_LEN + 1];
        hex_encode(e->nonce, NONCE_LEN, nonce);
        char *b = malloc(ZX_BASE64_LEN(e->dlen) + 1);
        if (!b)
            goto oom;
        zx_base64_encode(e->data, e->dlen, b);
        json_t *o = json_pack("{s:s, s:s, s:s}", "nonce", nonce, "data", b, "set_at",
                              e->set_at);
        free(b);
        if (!o || json_object_set_new(sec, e->name, o) < 0)
            goto oom;
    }
    json_object_set(root, "secrets", sec);
    text = json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS);
    if (!text)
        goto oom;
    size_t n = strlen(text);
    text[n] = '\n';   /* json_dumps' NUL: the file ends with a newline */
    rc = write_file(path, text, n + 1, 1, "secrets store", err, errlen);
    goto out;
oom:
    fail(err, errlen, "out of memory");
out:
    free(text);
    json_decref(sec);
    json_decref(root);
    return rc;
}
