/*
 * gen_template.c — parse and check `fields:` of `source: generate` (see
 * gen_core.h).  Every number is range-checked and every message names the
 * field and says what is allowed.
 */
#include "workers/sources/generate/gen_core.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/colname.h"
#include "common/util.h"

#define KINDS "sequence, int LO..HI, float LO..HI, choice A,B,..., bool, timestamp, uuid, " \
              "json VALUE"

/* A copy of s[0..n) with the blanks at both ends cut; NULL: no memory. */
static char *trimdup(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = '\0';
    }
    return r;
}

/* Split args "LO..HI" into two trimmed copies.  0, -1 (no ".." or no
 * memory: *lo, *hi NULL). */
static int split_range(const char *args, char **lo, char **hi)
{
    *lo = *hi = NULL;
    const char *dots = strstr(args, "..");
    if (!dots)
        return -1;
    *lo = trimdup(args, (size_t)(dots - args));
    *hi = trimdup(dots + 2, strlen(dots + 2));
    if (!*lo || !*hi) {
        free(*lo);
        free(*hi);
        *lo = *hi = NULL;
        return -1;
    }
    return 0;
}

static int parse_i64(const char *s, int64_t *v)
{
    if (!*s || isspace((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *v = x;
    return 0;
}

static int parse_f64(const char *s, double *v)
{
    if (!*s || isspace((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || *end || !isfinite(x))
        return -1;
    *v = x;
    return 0;
}

static int parse_int(zx_gen_field *f, const char *args, char *err, size_t errlen)
{
    char *lo, *hi;
    int ok = split_range(args, &lo, &hi) == 0 && parse_i64(lo, &f->lo) == 0 &&
             parse_i64(hi, &f->hi) == 0 && f->lo <= f->hi;
    free(lo);
    free(hi);
    if (!ok)
        return zx_seterr(err, errlen,
                         "field %s: `int` wants LO..HI, two integers (64-bit) with LO <= HI "
                         "(e.g. int 1..1000), not \"%.80s\"", f->name, args);
    return 0;
}

static int parse_float(zx_gen_field *f, const char *args, char *err, size_t errlen)
{
    char *lo, *hi;
    int ok = split_range(args, &lo, &hi) == 0 && parse_f64(lo, &f->dlo) == 0 &&
             parse_f64(hi, &f->dhi) == 0 && f->dlo <= f->dhi;
    free(lo);
    free(hi);
    if (!ok)
        return zx_seterr(err, errlen,
                         "field %s: `float` wants LO..HI, two finite numbers with LO <= HI "
                         "(e.g. float 0..100), not \"%.80s\"", f->name, args);
    return 0;
}

static int parse_choice(zx_gen_field *f, const char *args, char *err, size_t errlen)
{
    size_t n = 1;
    for (const char *c = args; *c; c++)
        n += *c == ',';
    if (!*args)
        return zx_seterr(err, errlen,
                         "field %s: `choice` wants a comma-separated list of words "
                         "(e.g. choice click,view,buy)", f->name);
    if (n > ZX_GEN_MAX_CHOICES)
        return zx_seterr(err, errlen, "field %s: `choice` has %zu words, at most %u allowed",
                         f->name, n, ZX_GEN_MAX_CHOICES);
    f->choices = calloc(n, sizeof(*f->choices));
    if (!f->choices)
        return zx_seterr(err, errlen, "field %s: out of memory", f->name);
    const char *p = args;
    for (size_t i = 0; i < n; i++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        f->choices[i] = trimdup(p, len);
        if (!f->choices[i])
            return zx_seterr(err, errlen, "field %s: out of memory", f->name);
        f->nchoices++;
        if (!f->choices[i][0])
            return zx_seterr(err, errlen,
                             "field %s: `choice` word %zu is empty (a comma-separated list "
                             "of words, e.g. choice click,view,buy)", f->name, i + 1);
        p = comma ? comma + 1 : p + len;
    }
    return 0;
}

static int parse_json(zx_gen_field *f, const char *args, char *err, size_t errlen)
{
    json_error_t je;
    /* flags 0: an object or an array only, nothing after it */
    json_t *v = json_loadb(args, strlen(args), 0, &je);
    if (!v)
        return zx_seterr(err, errlen,
                         "field %s: `json` wants a JSON object or array (e.g. json {\"a\": 1}): "
                         "%s at character %d", f->name, je.text, je.position);
    f->json = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    if (!f->json)
        return zx_seterr(err, errlen, "field %s: out of memory", f->name);
    f->json_len = strlen(f->json);
    return 0;
}

static const struct {
    const char *word;
    zx_gen_kind kind;
    int has_args;
} kinds[] = {
    {"sequence", ZX_GEN_SEQUENCE, 0}, {"int", ZX_GEN_INT, 1},
    {"float", ZX_GEN_FLOAT, 1},       {"choice", ZX_GEN_CHOICE, 1},
    {"bool", ZX_GEN_BOOL, 0},         {"timestamp", ZX_GEN_TIMESTAMP, 0},
    {"uuid", ZX_GEN_UUID, 0},         {"json", ZX_GEN_JSON, 1},
};

/* Parse spec into f (f->name set).  0, or -1 with err. */
static int parse_spec(zx_gen_field *f, const char *spec, char *err, size_t errlen)
{
    size_t slen = strlen(spec);
    if (slen > ZX_GEN_MAX_SPEC)
        return zx_seterr(err, errlen, "field %s: the generator is %zu bytes, at most %u allowed",
                         f->name, slen, ZX_GEN_MAX_SPEC);
    while (isspace((unsigned char)*spec))
        spec++;
    size_t wl = 0;
    while (spec[wl] && !isspace((unsigned char)spec[wl]))
        wl++;
    if (!wl)
        return zx_seterr(err, errlen, "field %s: no generator (one of: %s)", f->name, KINDS);
    char *args = trimdup(spec + wl, strlen(spec + wl));
    if (!args)
        return zx_seterr(err, errlen, "field %s: out of memory", f->name);
    int rc = -1;
    size_t k;
    for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        if (strlen(kinds[k].word) == wl && !memcmp(kinds[k].word, spec, wl))
            break;
    if (k == sizeof(kinds) / sizeof(kinds[0])) {
        zx_seterr(err, errlen, "field %s: unknown generator \"%.*s\" (one of: %s)", f->name,
                  (int)(wl > 40 ? 40 : wl), spec, KINDS);
        goto out;
    }
    f->kind = kinds[k].kind;
    if (!kinds[k].has_args && args[0]) {
        zx_seterr(err, errlen, "field %s: `%s` takes nothing after it, not \"%.80s\"", f->name,
                  kinds[k].word, args);
        goto out;
    }
    switch (f->kind) {
    case ZX_GEN_INT: rc = parse_int(f, args, err, errlen); break;
    case ZX_GEN_FLOAT: rc = parse_float(f, args, err, errlen); break;
    case ZX_GEN_CHOICE: rc = parse_choice(f, args, err, errlen); break;
    case ZX_GEN_JSON: rc = parse_json(f, args, err, errlen); break;
    default: rc = 0; break;
    }
out:
    free(args);
    return rc;
}

static void field_free(zx_gen_field *f)
{
    free(f->name);
    for (size_t i = 0; i < f->nchoices; i++)
        free(f->choices[i]);
    free(f->choices);
    free(f->json);
    memset(f, 0, sizeof(*f));
}

void zx_gen_template_free(zx_gen_template *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nfields; i++)
        field_free(&t->fields[i]);
    free(t->fields);
    t->fields = NULL;
    t->nfields = 0;
}

/* 0 when name is a column name zx would make of it, else -1 with err. */
static int check_name(const zx_gen_template *t, const char *name, char *err, size_t errlen)
{
    char norm[ZX_COLNAME_MAX + 1];
    zx_colname_normalise(name, strlen(name), norm);
    if (strcmp(norm, name) != 0)
        return zx_seterr(err, errlen,
                         "field %.80s: not a column name (lower-case letters, digits and _, "
                         "not starting with a digit, at most %d bytes, not a metadata name "
                         "such as _key or _zx*): write \"%s\"", name, ZX_COLNAME_MAX, norm);
    for (size_t i = 0; i < t->nfields; i++)
        if (!strcmp(t->fields[i].name, name))
            return zx_seterr(err, errlen, "field %s: given twice", name);
    return 0;
}

int zx_gen_template_parse(const char *const *names, const char *const *specs, size_t n,
                          zx_gen_template *t, char *err, size_t errlen)
{
    t->fields = NULL;
    t->nfields = 0;
    if (n == 0 || n > ZX_GEN_MAX_FIELDS)
        return zx_seterr(err, errlen, "`fields` has %zu fields: 1 to %u allowed", n,
                         ZX_GEN_MAX_FIELDS);
    t->fields = calloc(n, sizeof(*t->fields));
    if (!t->fields)
        return zx_seterr(err, errlen, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (check_name(t, names[i], err, errlen) < 0)
            goto fail;
        zx_gen_field *f = &t->fields[t->nfields];
        f->name = strdup(names[i]);
        if (!f->name) {
            zx_seterr(err, errlen, "out of memory");
            goto fail;
        }
        t->nfields++;
        if (parse_spec(f, specs[i] ? specs[i] : "", err, errlen) < 0)
            goto fail;
    }
    return 0;
fail:
    zx_gen_template_free(t);
    return -1;
}
