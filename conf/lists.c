/*
 * lists.c — the options whose value is a list or a mapping, set by their
 * row: host:port lists (one YAML list, or one comma-separated string),
 * Kafka topic names and topic regexes, Postgres tables (`schema.table`),
 * and pass-through properties (a
 * mapping of names to single values, some refused, some secret).
 *
 * Each item may hold ${env:}/${file:} references, resolved like any value.
 *
 * It must never: quote a secret property's value, or the resolved value of
 * a reference, in an error message; nor know an option by its name (the
 * row says the type, the refused property names and where to store).
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"

#include "common/buf.h"

#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A growing list of strings. */
typedef struct strvec {
    char **v;
    size_t n, cap;
} strvec;

void zx_cf_free_strs(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static void strvec_free(strvec *sv)
{
    zx_cf_free_strs(sv->v, sv->n);
    memset(sv, 0, sizeof(*sv));
}

/* Append s (taken, even on failure; NULL allowed).  0, or -1 on out of
 * memory (reported at n). */
static int strvec_push(zx_cf_ctx *x, const yaml_node_t *n, strvec *sv, char *s)
{
    if (zx_grow_to(&sv->v, sv->n + 1, &sv->cap, sizeof(*sv->v), 4) < 0) {
        free(s);
        zx_cf_error_at(x, n, "out of memory");
        return -1;
    }
    sv->v[sv->n++] = s;
    return 0;
}

/* Replace the list field of o by sv (taken). */
static void set_list(const zx_cf_option *o, void *base, strvec *sv)
{
    char ***dst = (char ***)((char *)base + o->offset);
    size_t *cnt = (size_t *)((char *)base + o->n_offset);
    strvec old = {*dst, *cnt, *cnt};

    strvec_free(&old);
    *dst = sv->v;
    *cnt = sv->n;
    memset(sv, 0, sizeof(*sv));
}

/* A broker: host:port with a host and a port from 1 to 65535. */
static int broker_ok(zx_cf_ctx *x, const zx_cf_option *o, const yaml_node_t *n,
                     const char *v, const char *shown)
{
    const char *why = NULL;
    char *host = NULL;
    uint16_t port = 0;

    if (!*v || !strchr(v, ':'))
        why = "expected host:port, like kafka-1:9092";
    else if (zx_cf_split_listen(v, &host, &port, &why) == 0 && port == 0)
        why = "the port must be a number from 1 to 65535";
    free(host);
    if (!why)
        return 0;
    zx_cf_error_at(x, n, "%s: %s, got %s", o->name, why, shown);
    return -1;
}

/* Brokers of the text v (one or several, comma-separated) onto sv. */
static int add_brokers(zx_cf_ctx *x, const zx_cf_option *o,
                       const yaml_node_t *n, const char *v, const char *shown,
                       int from_ref, strvec *sv)
{
    const char *p = v, *end;
    int rc = 0;

    do {
        char *item, *shown_item = NULL;
        size_t len;
        end = strchr(p, ',');
        len = end ? (size_t)(end - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        item = strndup(p, len);
        if (!item || (!from_ref && asprintf(&shown_item, "'%.80s'", item) < 0)) {
            free(item);
            zx_cf_error_at(x, n, "out of memory");
            return -1;
        }
        if (broker_ok(x, o, n, item, shown_item ? shown_item : shown) < 0) {
            free(item);
            rc = -1;
        } else if (strvec_push(x, n, sv, item) < 0) {
            rc = -1;
        }
        free(shown_item);
        p = end ? end + 1 : NULL;
    } while (p);
    return rc;
}

/* Kafka's rule for topic names: 1 to 249 of [A-Za-z0-9._-], not . nor .. */
static int topic_ok(const char *v)
{
    size_t i, len = strlen(v);

    if (len == 0 || len > 249 || !strcmp(v, ".") || !strcmp(v, ".."))
        return 0;
    for (i = 0; i < len; i++)
        if (!isalnum((unsigned char)v[i]) && !strchr("._-", v[i]))
            return 0;
    return 1;
}

static int check_topic(zx_cf_ctx *x, const zx_cf_option *o,
                       const yaml_node_t *n, const char *v, const char *shown)
{
    if (topic_ok(v))
        return 0;
    zx_cf_error_at(x, n, "%s: %s is not a topic name: 1 to 249 letters, "
                   "digits, '.', '_' or '-'%s", o->name, shown,
                   v[0] == '^' ? (o->type == ZX_CF_TOPIC
                                  ? " (a regular expression goes in `topics:`)"
                                  : " (a regular expression must be the whole "
                                    "value: topics: \"^...\")")
                               : "");
    return -1;
}

static int check_regex(zx_cf_ctx *x, const zx_cf_option *o,
                       const yaml_node_t *n, const char *v, const char *shown)
{
    regex_t re;
    char why[160];
    int r = regcomp(&re, v, REG_EXTENDED | REG_NOSUB);

    if (r == 0) {
        regfree(&re);
        return 0;
    }
    regerror(r, &re, why, sizeof(why));
    zx_cf_error_at(x, n, "%s: %s is not a valid regular expression (POSIX "
                   "extended): %s", o->name, shown, why);
    return -1;
}

/* One part of a Postgres table name as zx takes it: 1 to 63 letters,
 * digits or _, not starting with a digit. */
static int pg_ident_ok(const char *v, size_t len)
{
    size_t i;

    if (len == 0 || len > 63 || isdigit((unsigned char)v[0]))
        return 0;
    for (i = 0; i < len; i++)
        if (!isalnum((unsigned char)v[i]) && v[i] != '_')
            return 0;
    return 1;
}

/* A PGTABLES item v: "schema.table" (a new string, "public." added to a
 * bare table) onto sv, or an error.  0 or -1. */
static int add_pg_table(zx_cf_ctx *x, const zx_cf_option *o,
                        const yaml_node_t *n, const char *v, const char *shown,
                        strvec *sv)
{
    const char *dot = strchr(v, '.');
    char *full = NULL;
    size_t i;

    if (dot ? !pg_ident_ok(v, (size_t)(dot - v)) ||
              !pg_ident_ok(dot + 1, strlen(dot + 1))
            : !pg_ident_ok(v, strlen(v))) {
        zx_cf_error_at(x, n, "%s: %s is not a table: write schema.table, or "
                       "table for public.table, each name 1 to 63 letters, "
                       "digits or _, not starting with a digit", o->name,
                       shown);
        return -1;
    }
    if (asprintf(&full, "%s%s", dot ? "" : "public.", v) < 0) {
        zx_cf_error_at(x, n, "out of memory");
        return -1;
    }
    for (i = 0; i < sv->n; i++) {
        if (!strcmp(sv->v[i], full)) {
            zx_cf_error_at(x, n, "%s: %s is listed twice", o->name, full);
            free(full);
            return -1;
        }
    }
    return strvec_push(x, n, sv, full);
}

/* HOSTPORTS, TOPIC, TOPICS: a scalar or a sequence of scalars; PGTABLES: a
 * sequence. */
int zx_cf_set_list(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                   const yaml_node_t *n)
{
    strvec sv = {0};
    yaml_node_item_t *it;
    char *val = NULL, *shown = NULL;
    int rc = 0;

    if (o->type == ZX_CF_PGTABLES && n->type != YAML_SEQUENCE_NODE) {
        zx_cf_error_at(x, n, "%s: expected a list of tables ([public.orders, "
                       "customers]), got %s", o->name, zx_cf_kind(n));
        return -1;
    }
    if (o->type == ZX_CF_PGTABLES &&
        n->data.sequence.items.top - n->data.sequence.items.start >
        ZX_MAX_PG_TABLES) {
        zx_cf_error_at(x, n, "%s: at most %d tables in one pipeline, got %ld",
                       o->name, ZX_MAX_PG_TABLES,
                       (long)(n->data.sequence.items.top -
                              n->data.sequence.items.start));
        return -1;
    }
    if (n->type == YAML_SCALAR_NODE) {
        if (zx_cf_resolve_scalar(x, o->name, n, ZX_CF_SHOW_PLAIN, &val,
                                 &shown) < 0)
            return -1;
        if (o->type == ZX_CF_HOSTPORTS) {
            /* items of a value with a reference are not quoted: they may
             * come from its resolved value */
            rc = add_brokers(x, o, n, val, shown,
                             strstr(zx_cf_scalar(n), "${") != NULL, &sv);
            free(val);
            val = NULL;
        } else if (o->type == ZX_CF_TOPICS && val[0] == '^') {
            rc = check_regex(x, o, n, val, shown);
        } else {
            rc = check_topic(x, o, n, val, shown);
        }
        if (rc == 0 && val)
            rc = strvec_push(x, n, &sv, val);
        else
            free(val);
        free(shown);
        goto out;
    }
    if (n->type != YAML_SEQUENCE_NODE || o->type == ZX_CF_TOPIC) {
        zx_cf_error_at(x, n, "%s: expected %s, got %s", o->name,
                       o->type == ZX_CF_TOPIC
                           ? "one topic name (for several, write topics: [a, b])"
                           : o->type == ZX_CF_TOPICS
                           ? "a list of topic names or one \"^regex\""
                           : "a list of host:port or one comma-separated string",
                       zx_cf_kind(n));
        return -1;
    }
    for (it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *in = zx_cf_node(x, *it);
        if (!zx_cf_scalar(in) || zx_cf_is_null(in)) {
            zx_cf_error_at(x, in, "%s: expected %s, got %s", o->name,
                           o->type == ZX_CF_TOPICS ? "a topic name"
                           : o->type == ZX_CF_PGTABLES ? "a table (schema.table "
                                                         "or table)"
                           : "host:port",
                           zx_cf_kind(in));
            rc = -1;
            continue;
        }
        if (zx_cf_resolve_scalar(x, o->name, in, ZX_CF_SHOW_PLAIN, &val,
                                 &shown) < 0) {
            rc = -1;
            continue;
        }
        if (o->type == ZX_CF_PGTABLES) {
            if (add_pg_table(x, o, in, val, shown, &sv) < 0)
                rc = -1;
            free(val);
        } else if (o->type == ZX_CF_HOSTPORTS) {
            if (broker_ok(x, o, in, val, shown) < 0) {
                free(val);
                rc = -1;
            } else if (strvec_push(x, in, &sv, val) < 0) {
                rc = -1;
            }
        } else if (check_topic(x, o, in, val, shown) < 0) {
            free(val);
            rc = -1;
        } else if (strvec_push(x, in, &sv, val) < 0) {
            rc = -1;
        }
        free(shown);
    }
    if (rc == 0 && sv.n == 0) {
        zx_cf_error_at(x, n, "%s: the list is empty", o->name);
        rc = -1;
    }
out:
    if (rc == 0)
        set_list(o, base, &sv);
    strvec_free(&sv);
    return rc;
}

/* 1 when a property with this name holds a secret. */
static int prop_secret(const char *k)
{
    return strcasestr(k, "password") || strcasestr(k, "secret") ||
           strcasestr(k, "sasl.oauthbearer");
}

static int prop_name_ok(const char *k)
{
    const char *p;

    for (p = k; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
            return 0;
    return *k != '\0';
}

/* PROPS: a mapping of property names to single values. */
int zx_cf_set_props(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                    const yaml_node_t *n)
{
    strvec keys = {0}, vals = {0};
    yaml_node_pair_t *p0, *p;
    size_t *first = NULL, i;
    int rc = 0;

    if (n->type != YAML_MAPPING_NODE) {
        zx_cf_error_at(x, n, "%s: expected a mapping of property names to "
                       "values ({fetch.max.bytes: 52428800}), got %s", o->name,
                       zx_cf_kind(n));
        return -1;
    }
    first = zx_cf_dups(x, n);
    p0 = n->data.mapping.pairs.start;
    for (p = p0; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = zx_cf_node(x, p->key), *vn = zx_cf_node(x, p->value);
        const char *k = zx_cf_scalar(kn);
        char *val = NULL, *shown = NULL, *what = NULL;
        int r;

        if (!k || zx_cf_is_null(kn)) {
            zx_cf_error_at(x, kn, "%s: a property name must be a single "
                           "word, got %s", o->name, zx_cf_kind(kn));
            rc = -1;
            continue;
        }
        if (!prop_name_ok(k)) {
            zx_cf_error_at(x, kn, "%s: '%.64s' is not a property name "
                           "(letters, digits, '.', '_' and '-')", o->name, k);
            rc = -1;
            continue;
        }
        if (first && first[p - p0] != SIZE_MAX) {
            yaml_node_t *fk = zx_cf_node(x, p0[first[p - p0]].key);
            zx_cf_error_at(x, kn, "%s: duplicate property '%.64s' (first "
                           "written at line %d, column %d)", o->name, k,
                           zx_cf_line(fk), zx_cf_col(fk));
            rc = -1;
            continue;
        }
        for (i = 0; o->allowed && o->allowed[i]; i += 2)
            if (!strcasecmp(o->allowed[i], k))
                break;
        if (o->allowed && o->allowed[i]) {
            zx_cf_error_at(x, kn, "%s: %.64s is set by zx: %s", o->name, k,
                           o->allowed[i + 1]);
            rc = -1;
            continue;
        }
        if (asprintf(&what, "%s.%.64s", o->name, k) < 0) {
            zx_cf_error_at(x, kn, "out of memory");
            rc = -1;
            break;
        }
        if (zx_cf_is_null(vn) || !zx_cf_scalar(vn)) {
            zx_cf_error_at(x, vn, "%s: expected a single value (text, number "
                           "or boolean), got %s", what, zx_cf_kind(vn));
            rc = -1;
        } else if ((r = zx_cf_resolve_scalar(x, what, vn, (o->flags & ZX_CF_SECRET) || prop_secret(k)
                                             ? ZX_CF_SHOW_SECRET
                                             : ZX_CF_SHOW_PLAIN,
                                             &val, &shown)) < 0) {
            rc = -1;
        } else {
            const char *c;
            for (c = val; c && *c; c++)
                if ((unsigned char)*c < ' ')
                    break;
            if (c && *c) {
                zx_cf_error_at(x, vn, "%s must be text without control "
                               "characters", what);
                rc = -1;
            }
            char *kc = strdup(k);
            if (!kc)
                zx_cf_error_at(x, kn, "out of memory");
            if (!kc || strvec_push(x, kn, &keys, kc) < 0 ||
                strvec_push(x, vn, &vals, val) < 0)
                rc = -1;
            val = NULL;
        }
        free(val);
        free(shown);
        free(what);
    }
    free(first);
    if (rc == 0) {
        char ***kd = (char ***)((char *)base + o->offset);
        char ***vd = (char ***)((char *)base + o->v_offset);
        size_t *cnt = (size_t *)((char *)base + o->n_offset);
        strvec ok = {*kd, *cnt, *cnt}, ov = {*vd, *cnt, *cnt};
        strvec_free(&ok);
        strvec_free(&ov);
        *kd = keys.v;
        *vd = vals.v;
        *cnt = keys.n;
        memset(&keys, 0, sizeof(keys));
        memset(&vals, 0, sizeof(vals));
    }
    strvec_free(&keys);
    strvec_free(&vals);
    return rc;
}

/* NAMES: each item 1 to 63 bytes without control characters, none
 * twice. */
static int name_item_ok(zx_cf_ctx *x, const zx_cf_option *o, const yaml_node_t *in,
                        const char *val, const char *shown, const strvec *sv)
{
    size_t len = strlen(val), i;

    for (i = 0; i < len; i++)
        if ((unsigned char)val[i] < ' ' || val[i] == 0x7f)
            break;
    if (!len || len > 63 || i < len) {
        zx_cf_error_at(x, in, "%s: '%.80s' is not a valid name: 1 to 63 bytes "
                       "without control characters", o->name, shown);
        return -1;
    }
    for (i = 0; i < sv->n; i++)
        if (!strcmp(sv->v[i], val)) {
            zx_cf_error_at(x, in, "%s: '%.80s' is listed twice", o->name, shown);
            return -1;
        }
    return 0;
}

/* A ZX_CF_PATHS item: not empty, no control characters, made absolute
 * against the config file's folder (*val replaced), not listed twice. */
static int path_item(zx_cf_ctx *x, const zx_cf_option *o, const yaml_node_t *in,
                     char **val, const char *shown, const strvec *sv)
{
    size_t len = strlen(*val), i;

    for (i = 0; i < len; i++)
        if ((unsigned char)(*val)[i] < ' ' || (*val)[i] == 0x7f)
            break;
    if (!len || len > 4000 || i < len) {
        zx_cf_error_at(x, in, "%s: '%.80s' is not a valid path: 1 to 4000 bytes "
                       "without control characters", o->name, shown);
        return -1;
    }
    char *abs = zx_cf_abspath(x->base_dir, *val);
    if (!abs) {
        zx_cf_error_at(x, in, "out of memory");
        return -1;
    }
    free(*val);
    *val = abs;
    for (i = 0; i < sv->n; i++)
        if (!strcmp(sv->v[i], abs)) {
            zx_cf_error_at(x, in, "%s: '%.80s' is listed twice", o->name, shown);
            return -1;
        }
    return 0;
}

int zx_cf_set_names(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                    const yaml_node_t *n)
{
    strvec sv = {0};
    const yaml_node_t *one[1] = {n};
    size_t i, cnt;
    int rc = 0;

    if (n->type == YAML_SCALAR_NODE) {
        one[0] = n;
        cnt = 1;
    } else if (n->type == YAML_SEQUENCE_NODE) {
        cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
        if (cnt > 4096) {
            zx_cf_error_at(x, n, "%s: at most 4096 names, got %zu", o->name, cnt);
            return -1;
        }
    } else {
        zx_cf_error_at(x, n, "%s: expected a list of names ([a, b]), got %s",
                       o->name, zx_cf_kind(n));
        return -1;
    }
    for (i = 0; i < cnt; i++) {
        const yaml_node_t *in = n->type == YAML_SCALAR_NODE ? one[0]
            : zx_cf_node(x, n->data.sequence.items.start[i]);
        char *val = NULL, *shown = NULL;
        if (!zx_cf_scalar(in) || zx_cf_is_null(in)) {
            zx_cf_error_at(x, in, "%s: expected a name, got %s", o->name,
                           zx_cf_kind(in));
            rc = -1;
            continue;
        }
        if (zx_cf_resolve_scalar(x, o->name, in, ZX_CF_SHOW_PLAIN, &val, &shown) < 0) {
            rc = -1;
            continue;
        }
        if (o->type == ZX_CF_PATHS && path_item(x, o, in, &val, shown, &sv) < 0) {
            free(val);
            rc = -1;
        } else if (o->type != ZX_CF_PATHS && name_item_ok(x, o, in, val, shown, &sv) < 0) {
            free(val);
            rc = -1;
        } else if (strvec_push(x, in, &sv, val) < 0) {
            rc = -1;
        }
        free(shown);
    }
    if (rc == 0 && sv.n == 0) {
        zx_cf_error_at(x, n, "%s: the list is empty", o->name);
        rc = -1;
    }
    if (rc == 0)
        set_list(o, base, &sv);
    strvec_free(&sv);
    return rc;
}
