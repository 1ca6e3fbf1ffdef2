/*
 * yamlwalk.c — YAML file to libyaml document, error messages, and the small
 * helpers the config walk needs (null test, duplicate keys, suggestions).
 *
 * Every error goes through zx_cf_error so that all messages share one form:
 * "file:line:column: message" with 1-based positions (libyaml's marks are
 * 0-based).  I/O errors have no position: "file: message".
 *
 * It must never: know option names or the config struct, or quote the
 * resolved value of a ${env:}/${file:} reference.
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <strings.h>

#define ZX_CF_MAX_FILE   (4u << 20)   /* a config larger than 4 MiB is a mistake */
#define ZX_CF_MAX_ERRORS 100
/* libyaml's scanner costs O(depth) per token inside flow collections and
 * its loader looks anchors up linearly: a hostile file of 4 MiB nested
 * `[[[[` or of many anchors and aliases would take hours.  A configuration
 * needs far less than these. */
#define ZX_CF_MAX_DEPTH   64
#define ZX_CF_MAX_ANCHORS 1000
#define ZX_CF_MAX_ALIASES 10000
/* Values (scalars and collections) the file holds once each alias is
 * counted as what it repeats: the loader walks an aliased node again for
 * every alias, so a small file of aliases to large anchors would cost as
 * much as a file many times its size.  A configuration of 1,024 pipelines
 * holds a few tens of thousands. */
#define ZX_CF_MAX_VALUES  1000000

static void cf_push(zx_cf_ctx *x, char *msg)
{
    char **m;

    if (!msg)
        return;
    if (!x->errs) {
        free(msg);
        return;
    }
    m = realloc(x->errs->msgs, (x->errs->n + 1) * sizeof(*m));
    if (!m) {
        free(msg);
        return;
    }
    x->errs->msgs = m;
    m[x->errs->n++] = msg;
}

static void cf_verror(zx_cf_ctx *x, int line, int col, const char *fmt,
                      va_list ap)
{
    char *body = NULL, *msg = NULL;

    x->nerr++;
    if (x->nerr > ZX_CF_MAX_ERRORS + 1)
        return;
    if (x->nerr == ZX_CF_MAX_ERRORS + 1) {
        if (asprintf(&msg, "%s: too many errors, stopped reporting after %d",
                     x->file, ZX_CF_MAX_ERRORS) < 0)
            msg = NULL;
        cf_push(x, msg);
        return;
    }
    if (vasprintf(&body, fmt, ap) < 0)
        return;
    if (line > 0) {
        if (asprintf(&msg, "%s:%d:%d: %s", x->file, line, col, body) < 0)
            msg = NULL;
    } else if (asprintf(&msg, "%s: %s", x->file, body) < 0) {
        msg = NULL;
    }
    free(body);
    cf_push(x, msg);
}

void zx_cf_verror(zx_cf_ctx *x, int line, int col, const char *fmt, va_list ap)
{
    cf_verror(x, line, col, fmt, ap);
}

void zx_cf_error(zx_cf_ctx *x, int line, int col, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cf_verror(x, line, col, fmt, ap);
    va_end(ap);
}

void zx_cf_error_at(zx_cf_ctx *x, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cf_verror(x, zx_cf_line(n), zx_cf_col(n), fmt, ap);
    va_end(ap);
}

int zx_cf_line(const yaml_node_t *n)
{
    return n ? (int)n->start_mark.line + 1 : 0;
}

int zx_cf_col(const yaml_node_t *n)
{
    return n ? (int)n->start_mark.column + 1 : 0;
}

/* Line and column (1-based) of byte `off` in buf, for reader errors. */
static void cf_offset_pos(const char *buf, size_t len, size_t off,
                          int *line, int *col)
{
    size_t i;

    *line = 1;
    *col = 1;
    for (i = 0; i < off && i < len; i++) {
        if (buf[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)buf[i] & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

static void cf_parser_error(zx_cf_ctx *x, yaml_parser_t *p, const char *buf,
                            size_t len)
{
    int line, col;
    const char *problem = p->problem ? p->problem : "malformed YAML";

    if (p->error == YAML_MEMORY_ERROR) {
        zx_cf_error(x, 0, 0, "out of memory while parsing");
    } else if (p->error == YAML_READER_ERROR) {
        cf_offset_pos(buf, len, p->problem_offset, &line, &col);
        zx_cf_error(x, line, col, "invalid text: %s (the file must be UTF-8)",
                    problem);
    } else if (p->context) {
        zx_cf_error(x, (int)p->problem_mark.line + 1,
                    (int)p->problem_mark.column + 1,
                    "YAML syntax error: %s (%s at line %d, column %d)",
                    problem, p->context, (int)p->context_mark.line + 1,
                    (int)p->context_mark.column + 1);
    } else {
        zx_cf_error(x, (int)p->problem_mark.line + 1,
                    (int)p->problem_mark.column + 1, "YAML syntax error: %s",
                    problem);
    }
}

static char *cf_read_file(zx_cf_ctx *x, const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0, got;

    if (!f) {
        zx_cf_error(x, 0, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            char *nb;
            if (cap >= ZX_CF_MAX_FILE) {
                zx_cf_error(x, 0, 0, "file is larger than %u MiB",
                            ZX_CF_MAX_FILE >> 20);
                goto fail;
            }
            cap = cap ? cap * 2 : 8192;
            nb = realloc(buf, cap + 1);
            if (!nb) {
                zx_cf_error(x, 0, 0, "out of memory");
                goto fail;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                zx_cf_error(x, 0, 0, "cannot read: %s", strerror(errno));
                goto fail;
            }
            break;
        }
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    fclose(f);
    free(buf);
    return NULL;
}

/* What cf_check_shape keeps while it reads: each anchor's name and the
 * values its node holds once its aliases are expanded (so that an alias
 * counts what walking it costs), and the collections open. */
typedef struct {
    struct { char *name; uint64_t size; } anchor[ZX_CF_MAX_ANCHORS];
    size_t nanchors;         /* recorded (closed) */
    size_t nseen;            /* met, open ones included */
    struct { char *anchor; uint64_t start; } open[ZX_CF_MAX_DEPTH + 1];
    int depth;
    uint64_t values;         /* values so far, aliases expanded */
} cf_shape;

static void shape_anchor(cf_shape *sh, char *name, uint64_t size)
{
    if (name && sh->nanchors < ZX_CF_MAX_ANCHORS && (name = strdup(name))) {
        sh->anchor[sh->nanchors].name = name;
        sh->anchor[sh->nanchors++].size = size;
    }
}

/* The values alias `name` stands for (its latest anchor), 1 if unknown
 * (yaml_parser_load reports it). */
static uint64_t shape_alias(const cf_shape *sh, const char *name)
{
    for (size_t i = sh->nanchors; name && i-- > 0;)
        if (!strcmp(sh->anchor[i].name, name))
            return sh->anchor[i].size;
    return 1;
}

/* One event; -1 (and one error) past a limit. */
static int shape_event(zx_cf_ctx *x, cf_shape *sh, const yaml_event_t *ev, size_t *aliases)
{
    const char *why = NULL;
    int lim = 0;
    char *anchor = NULL;

    switch (ev->type) {
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (sh->depth >= ZX_CF_MAX_DEPTH) {
            why = "nesting deeper than %d levels", lim = ZX_CF_MAX_DEPTH;
            break;
        }
        anchor = (char *)(ev->type == YAML_SEQUENCE_START_EVENT
                          ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor);
        sh->open[sh->depth].anchor = anchor ? strdup(anchor) : NULL;
        sh->open[sh->depth++].start = sh->values++;
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (sh->depth > 0) {
            sh->depth--;
            shape_anchor(sh, sh->open[sh->depth].anchor,
                         sh->values - sh->open[sh->depth].start);
            free(sh->open[sh->depth].anchor);
            sh->open[sh->depth].anchor = NULL;
        }
        return 0;
    case YAML_SCALAR_EVENT:
        anchor = (char *)ev->data.scalar.anchor;
        sh->values++;
        shape_anchor(sh, anchor, 1);
        break;
    case YAML_ALIAS_EVENT:
        if (++*aliases > ZX_CF_MAX_ALIASES)
            why = "more than %d aliases (*name)", lim = ZX_CF_MAX_ALIASES;
        sh->values += shape_alias(sh, (const char *)ev->data.alias.anchor);
        break;
    default:
        return 0;
    }
    if (!why && anchor && ++sh->nseen > ZX_CF_MAX_ANCHORS)
        why = "more than %d anchors (&name)", lim = ZX_CF_MAX_ANCHORS;
    if (!why && sh->values > ZX_CF_MAX_VALUES)
        why = "more than %d values, counting each alias (*name) as the values it "
              "repeats", lim = ZX_CF_MAX_VALUES;
    if (!why)
        return 0;
    zx_cf_error(x, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1, why, lim);
    return -1;
}

/* Read the events of buf and refuse (one error, -1) nesting deeper than
 * ZX_CF_MAX_DEPTH, more than ZX_CF_MAX_ANCHORS anchors or
 * ZX_CF_MAX_ALIASES aliases, or more than ZX_CF_MAX_VALUES values once
 * aliases are expanded (the loader walks an aliased node once for each
 * alias), stopping there so the cost stays bounded.  0 otherwise, also on
 * a syntax error (yaml_parser_load reports it). */
static int cf_check_shape(zx_cf_ctx *x, const char *buf, size_t len)
{
    yaml_parser_t p;
    yaml_event_t ev;
    cf_shape *sh = calloc(1, sizeof(*sh));
    size_t aliases = 0;
    int rc = 0, done = 0;

    if (!sh || !yaml_parser_initialize(&p)) {
        free(sh);
        return 0;               /* yaml_parser_load reports it */
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
    while (!done && rc == 0 && yaml_parser_parse(&p, &ev)) {
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = shape_event(x, sh, &ev, &aliases);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    for (size_t i = 0; i < sh->nanchors; i++)
        free(sh->anchor[i].name);
    for (int d = 0; d < sh->depth; d++)
        free(sh->open[d].anchor);
    free(sh);
    return rc;
}

int zx_cf_parse_file(zx_cf_ctx *x, const char *path)
{
    yaml_parser_t p;
    yaml_document_t extra;
    size_t len = 0;
    char *buf = cf_read_file(x, path, &len);
    int rc = -1, parser_ready = 0;

    if (!buf || cf_check_shape(x, buf, len) < 0)
        goto out;
    if (!yaml_parser_initialize(&p)) {
        zx_cf_error(x, 0, 0, "out of memory");
        goto out;
    }
    parser_ready = 1;
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
    if (!yaml_parser_load(&p, &x->doc)) {
        cf_parser_error(x, &p, buf, len);
        goto out;
    }
    x->have_doc = 1;
    if (!yaml_document_get_root_node(&x->doc)) {
        zx_cf_error(x, 1, 1, "the file is empty: expected a mapping with "
                    "the sections server, workspace, connections and "
                    "pipelines");
        goto out;
    }
    /* One document only: a second one is almost surely a paste mistake. */
    if (!yaml_parser_load(&p, &extra)) {
        cf_parser_error(x, &p, buf, len);
        goto out;
    }
    if (yaml_document_get_root_node(&extra)) {
        zx_cf_error(x, (int)extra.start_mark.line + 1,
                    (int)extra.start_mark.column + 1,
                    "a second YAML document starts here; the configuration "
                    "must be one document");
        yaml_document_delete(&extra);
        goto out;
    }
    yaml_document_delete(&extra);
    rc = 0;
out:
    if (parser_ready)
        yaml_parser_delete(&p);
    free(buf);
    return rc;
}

yaml_node_t *zx_cf_root(zx_cf_ctx *x)
{
    return x->have_doc ? yaml_document_get_root_node(&x->doc) : NULL;
}

yaml_node_t *zx_cf_node(zx_cf_ctx *x, int id)
{
    return yaml_document_get_node(&x->doc, id);
}

const char *zx_cf_scalar(const yaml_node_t *n)
{
    if (!n || n->type != YAML_SCALAR_NODE)
        return NULL;
    return (const char *)n->data.scalar.value;
}

int zx_cf_is_null(const yaml_node_t *n)
{
    const char *s = zx_cf_scalar(n);

    if (!s || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    return !*s || !strcmp(s, "~") || !strcasecmp(s, "null");
}

const char *zx_cf_kind(const yaml_node_t *n)
{
    if (!n)
        return "nothing";
    switch (n->type) {
    case YAML_MAPPING_NODE:  return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_SCALAR_NODE:   return zx_cf_is_null(n) ? "an empty value" : "a single value";
    default:                 return "nothing";
    }
}

typedef struct cf_keyref {
    const char *key;
    size_t idx;
} cf_keyref;

static int cf_keyref_cmp(const void *a, const void *b)
{
    const cf_keyref *ka = a, *kb = b;
    int c = strcmp(ka->key, kb->key);

    if (c)
        return c;
    return ka->idx < kb->idx ? -1 : ka->idx > kb->idx;
}

/* first[i] = index of the earlier pair with the same scalar key as pair i,
 * or SIZE_MAX.  Sorting keeps this O(n log n) for hostile huge mappings.
 * Returns NULL on out of memory (after reporting) or for an empty map. */
size_t *zx_cf_dups(zx_cf_ctx *x, const yaml_node_t *map)
{
    yaml_node_pair_t *p0 = map->data.mapping.pairs.start;
    size_t n = (size_t)(map->data.mapping.pairs.top - p0), i, m = 0, j;
    cf_keyref *refs;
    size_t *first;

    if (n == 0)
        return NULL;
    refs = malloc(n * sizeof(*refs));
    first = malloc(n * sizeof(*first));
    if (!refs || !first) {
        zx_cf_error(x, 0, 0, "out of memory");
        free(refs);
        free(first);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        const char *k = zx_cf_scalar(zx_cf_node(x, p0[i].key));
        first[i] = SIZE_MAX;
        if (k) {
            refs[m].key = k;
            refs[m++].idx = i;
        }
    }
    qsort(refs, m, sizeof(*refs), cf_keyref_cmp);
    for (i = 0; i < m; i = j) {
        for (j = i + 1; j < m && !strcmp(refs[j].key, refs[i].key); j++)
            first[refs[j].idx] = refs[i].idx;
    }
    free(refs);
    return first;
}

/* Levenshtein distance, for "did you mean".  Words longer than 63 bytes are
 * never suggested. */
static size_t cf_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), i, j;
    size_t row[64], prev, tmp;

    if (la > 63 || lb > 63)
        return (size_t)-1;
    for (j = 0; j <= lb; j++)
        row[j] = j;
    for (i = 1; i <= la; i++) {
        prev = row[0];
        row[0] = i;
        for (j = 1; j <= lb; j++) {
            size_t best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            tmp = row[j];
            row[j] = best;
            prev = tmp;
        }
    }
    return row[lb];
}

const char *zx_cf_suggest(const char *w, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t bestd = (size_t)-1, i, d, len = strlen(w);
    size_t limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;

    for (i = 0; i < n; i++) {
        d = cf_distance(w, cands[i]);
        if (d < bestd) {
            bestd = d;
            best = cands[i];
        }
    }
    return bestd <= limit ? best : NULL;
}
