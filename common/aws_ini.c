/*
 * aws_ini.c — the AWS shared config/credentials file parser (aws_ini.h).
 * Entries are kept in file order; lookups are linear (a few dozen lines).
 */
#include "common/aws_ini.h"
#include "common/util.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct ini_ent {
    char *section, *key, *value;
} ini_ent;

struct zx_aws_ini {
    ini_ent *ents;
    size_t n, cap;
};

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Trim blanks at both ends of [*b, *e). */
static void trim(const char **b, const char **e)
{
    while (*b < *e && is_blank(**b))
        (*b)++;
    while (*e > *b && is_blank((*e)[-1]))
        (*e)--;
}

/* Cut an inline comment: '#' or ';' preceded by a blank. */
static const char *cut_comment(const char *b, const char *e)
{
    for (const char *p = b + 1; p < e; p++)
        if ((*p == '#' || *p == ';') && is_blank(p[-1]))
            return p;
    return e;
}

/* The section name of [b, e) with inner blank runs made one space. */
static char *section_name(const char *b, const char *e)
{
    char *s = malloc((size_t)(e - b) + 1), *o = s;
    if (!s)
        return NULL;
    for (const char *p = b; p < e; p++) {
        if (is_blank(*p)) {
            if (o > s && o[-1] != ' ')
                *o++ = ' ';
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return s;
}

static ini_ent *find(const zx_aws_ini *ini, const char *section, const char *key)
{
    if (!ini)
        return NULL;
    for (size_t i = ini->n; i-- > 0;)
        if (strcmp(ini->ents[i].section, section) == 0 &&
            (key == NULL || strcasecmp(ini->ents[i].key, key) == 0))
            return &ini->ents[i];
    return NULL;
}

static int add(zx_aws_ini *ini, const char *section, const char *kb, const char *ke,
               const char *vb, const char *ve)
{
    if (ini->n == ini->cap) {
        size_t nc = ini->cap ? ini->cap * 2 : 16;
        ini_ent *ne = realloc(ini->ents, nc * sizeof(*ne));
        if (!ne)
            return -1;
        ini->ents = ne;
        ini->cap = nc;
    }
    ini_ent *x = &ini->ents[ini->n];
    x->section = strdup(section);
    x->key = kb ? strndup(kb, (size_t)(ke - kb)) : strdup("");
    x->value = vb ? strndup(vb, (size_t)(ve - vb)) : strdup("");
    if (!x->section || !x->key || !x->value) {
        free(x->section);
        free(x->key);
        free(x->value);
        return -1;
    }
    ini->n++;
    return 0;
}

/* One line [b, e) (no '\n'); *section is the current one (owned). */
static int parse_line(zx_aws_ini *ini, const char *b, const char *e, char **section,
                      int *in_nested, const char *name, unsigned lineno,
                      char *err, size_t errlen)
{
    int indented = b < e && is_blank(*b);
    trim(&b, &e);
    if (b == e || *b == '#' || *b == ';')
        return 0;
    if (indented && *in_nested)
        return 0;                       /* a nested value: skipped */
    *in_nested = 0;
    if (*b == '[') {
        e = cut_comment(b, e);
        trim(&b, &e);
        if (e - b < 2 || e[-1] != ']')
            return zx_seterr(err, errlen, "%s line %u: a section line without its closing ']'",
                          name, lineno);
        const char *nb = b + 1, *ne = e - 1;
        trim(&nb, &ne);
        if (nb == ne)
            return zx_seterr(err, errlen, "%s line %u: an empty section name []", name, lineno);
        char *s = section_name(nb, ne);
        if (!s)
            return zx_seterr(err, errlen, "%s: out of memory", name);
        free(*section);
        *section = s;
        /* an entry with an empty key marks that the section exists */
        if (add(ini, s, NULL, NULL, NULL, NULL) < 0)
            return zx_seterr(err, errlen, "%s: out of memory", name);
        return 0;
    }
    const char *eq = memchr(b, '=', (size_t)(e - b));
    if (!eq)
        return zx_seterr(err, errlen, "%s line %u: neither a [section] nor key = value",
                      name, lineno);
    if (!*section)
        return zx_seterr(err, errlen, "%s line %u: a key before any [section]", name, lineno);
    const char *kb = b, *ke = eq, *vb = eq + 1, *ve = cut_comment(eq, e);
    trim(&kb, &ke);
    trim(&vb, &ve);
    if (kb == ke)
        return zx_seterr(err, errlen, "%s line %u: '=' without a key before it", name, lineno);
    if (vb == ve)
        *in_nested = 1;                 /* "s3 =" opens nested values */
    if (add(ini, *section, kb, ke, vb, ve) < 0)
        return zx_seterr(err, errlen, "%s: out of memory", name);
    return 0;
}

zx_aws_ini *zx_aws_ini_parse(const char *text, size_t len, const char *name,
                             char *err, size_t errlen)
{
    if (len > ZX_AWS_INI_MAX_FILE) {
        zx_seterr(err, errlen, "%s: larger than %d bytes", name, ZX_AWS_INI_MAX_FILE);
        return NULL;
    }
    if (len && memchr(text, '\0', len)) {
        zx_seterr(err, errlen, "%s: holds a NUL byte (not a text file)", name);
        return NULL;
    }
    zx_aws_ini *ini = calloc(1, sizeof(*ini));
    if (!ini) {
        zx_seterr(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    char *section = NULL;
    int nested = 0;
    unsigned lineno = 0;
    const char *p = text, *end = text + len;
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;                         /* a UTF-8 byte order mark */
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        if (le - p > ZX_AWS_INI_MAX_LINE) {
            zx_seterr(err, errlen, "%s line %u: longer than %d bytes", name, lineno,
                   ZX_AWS_INI_MAX_LINE);
            goto fail;
        }
        if (parse_line(ini, p, le, &section, &nested, name, lineno, err, errlen) < 0)
            goto fail;
        p = nl ? nl + 1 : end;
    }
    free(section);
    return ini;
fail:
    free(section);
    zx_aws_ini_free(ini);
    return NULL;
}

int zx_aws_ini_load(const char *path, zx_aws_ini **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 1;
        return zx_seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return zx_seterr(err, errlen, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return zx_seterr(err, errlen, "%s: not a regular file", path);
    }
    if (st.st_size > ZX_AWS_INI_MAX_FILE) {
        close(fd);
        return zx_seterr(err, errlen, "%s: larger than %d bytes", path, ZX_AWS_INI_MAX_FILE);
    }
    /* one byte more than allowed: a file that grew meanwhile is caught */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return zx_seterr(err, errlen, "%s: out of memory", path);
    }
    for (;;) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return zx_seterr(err, errlen, "%s: cannot read: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            close(fd);
            explicit_bzero(buf, n);
            free(buf);
            return zx_seterr(err, errlen, "%s: changed while read; try again", path);
        }
    }
    close(fd);
    *out = zx_aws_ini_parse(buf, n, path, err, errlen);
    explicit_bzero(buf, n);
    free(buf);
    return *out ? 0 : -1;
}

int zx_aws_ini_has(const zx_aws_ini *ini, const char *section)
{
    return find(ini, section, NULL) != NULL;
}

const char *zx_aws_ini_get(const zx_aws_ini *ini, const char *section, const char *key)
{
    if (!key || !*key)
        return NULL;
    ini_ent *x = find(ini, section, key);
    return x ? x->value : NULL;
}

void zx_aws_ini_free(zx_aws_ini *ini)
{
    if (!ini)
        return;
    for (size_t i = 0; i < ini->n; i++) {
        free(ini->ents[i].section);
        free(ini->ents[i].key);
        explicit_bzero(ini->ents[i].value, strlen(ini->ents[i].value));
        free(ini->ents[i].value);
    }
    free(ini->ents);
    free(ini);
}
