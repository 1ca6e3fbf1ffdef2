/*
 * fields.c — setting a field of the config from a YAML value (or from an
 * option's default) by its row of the options table, and freeing and
 * comparing those fields by row.  Scalars (strings, enums, sizes,
 * durations, ...) and metadata are set here; lists of host:port and of
 * topics, and properties, in lists.c.
 *
 * The value parsers are in values.c, the rows in options.c and the
 * plug-ins' <name>_plugin.c (through rows.c); a new option
 * of an existing type needs no change here.
 *
 * It must never: quote the value of an option marked secret (a DSN only
 * with its passwords hidden), of a secret property, or of any
 * ${env:}/${file:} reference, in an error message; nor know an option by
 * its name.
 */
#define ZX_CONF_INTERNAL
#include "conf/values.h"
#include "conf/plugin.h"
#include "common/dsn.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- setting fields ---------------------------------------------------- */

static void *field(void *base, const zx_cf_option *o)
{
    return (char *)base + o->offset;
}

static int set_str(zx_cf_ctx *x, const yaml_node_t *n, char **dst,
                   const char *v)
{
    char *c = strdup(v);

    if (!c) {
        zx_cf_error_at(x, n, "out of memory");
        return -1;
    }
    free(*dst);
    *dst = c;
    return 0;
}

static int check_range(zx_cf_ctx *x, const zx_cf_option *o,
                        const yaml_node_t *n, uint64_t v, const char *shown)
{
    char lo[32], hi[32];

    if (v >= o->min && v <= o->max)
        return 0;
    zx_cf_fmt_value(o, lo, sizeof(lo), o->min);
    zx_cf_fmt_value(o, hi, sizeof(hi), o->max);
    zx_cf_error_at(x, n, "%s must be between %s and %s, got %s", o->name, lo,
                   hi, shown);
    return -1;
}

static int list_index(const char *const *l, const char *v)
{
    int i;

    for (i = 0; l[i]; i++)
        if (!strcmp(l[i], v))
            return i;
    return -1;
}

static void join_list(char *buf, size_t len, const char *const *l)
{
    size_t i, off = 0;

    buf[0] = '\0';
    for (i = 0; l[i] && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
                                l[i]);
}

static int bad_enum(zx_cf_ctx *x, const zx_cf_option *o, const yaml_node_t *n,
                    const char *v, const char *shown)
{
    char all[256];
    size_t cnt = 0;
    const char *near;

    while (o->allowed[cnt])
        cnt++;
    near = zx_cf_suggest(v, o->allowed, cnt);
    join_list(all, sizeof(all), o->allowed);
    zx_cf_error_at(x, n, "invalid %s %s: expected one of: %s%s%s%s", o->name,
                   shown, all, near ? " (did you mean '" : "",
                   near ? near : "", near ? "'?)" : "");
    return -1;
}

static int ident_ok(const char *v)
{
    size_t i, len = strlen(v);

    if (len == 0 || len > 63 || isdigit((unsigned char)v[0]))
        return 0;
    for (i = 0; i < len; i++)
        if (!isalnum((unsigned char)v[i]) && v[i] != '_')
            return 0;
    return 1;
}

int zx_cf_table_name_ok(const char *v, const char **why)
{
    const char *w = NULL;
    size_t len = strlen(v);

    if (!ident_ok(v))
        w = "is not a valid table name: 1 to 63 letters, digits or _, not "
            "starting with a digit";
    else if (!strncasecmp(v, "_zx", 3) ||
             (len >= 9 && !strcasecmp(v + len - 9, "__rejects")))
        w = "is reserved for zx's own tables (names starting with _zx or "
            "ending with __rejects)";
    else if (!strncasecmp(v, "sqlite_", 7))
        w = "is reserved by SQLite (names starting with sqlite_)";
    if (why)
        *why = w;
    return w == NULL;
}

int zx_cf_table_template_ok(const char *v, const char **why)
{
    static const char *const known[] = {"source.table", "source.schema", "source.db",
                                        "source.collection", "topic"};
    const char *w = NULL;
    for (const char *p = v; *p && !w; p++) {
        if (*p == '{') {
            const char *e = strchr(p, '}');
            size_t n = e ? (size_t)(e - p - 1) : 0, k;
            for (k = 0; e && k < sizeof(known) / sizeof(known[0]); k++)
                if (strlen(known[k]) == n && !strncmp(known[k], p + 1, n))
                    break;
            if (!e || k == sizeof(known) / sizeof(known[0]))
                w = "has an unknown placeholder: the known ones are {source.table}, "
                    "{source.schema}, {source.db}, {source.collection} and {topic}";
            else
                p = e;
        } else if (!isalnum((unsigned char)*p) && *p != '_') {
            w = "is not a table name template: letters, digits, _ and placeholders "
                "such as {source.table}";
        }
    }
    if (!w && strlen(v) > 200)
        w = "is too long for a table name template (200 bytes at most)";
    if (!w && !strncasecmp(v, "_zx", 3))
        w = "is reserved for zx's own tables (names starting with _zx)";
    if (why)
        *why = w;
    return w == NULL;
}

/* YAML 1.2's core schema booleans: 1, 0, or -1. */
static int bool_value(const char *v)
{
    static const char *const t[] = {"true", "True", "TRUE", NULL};
    static const char *const f[] = {"false", "False", "FALSE", NULL};

    for (size_t i = 0; t[i]; i++) {
        if (!strcmp(v, t[i]))
            return 1;
        if (!strcmp(v, f[i]))
            return 0;
    }
    return -1;
}

/* STRING: text without control characters (ZX_CF_TOKEN: printable ASCII
 * without spaces), not empty.  0, or -1 reported. */
static int check_string(zx_cf_ctx *x, const zx_cf_option *o, const yaml_node_t *n,
                        const char *v)
{
    for (const char *p = v; *p; p++) {
        if ((o->flags & ZX_CF_TOKEN) ? (*p <= ' ' || *p > '~')
                                     : (unsigned char)*p < ' ') {
            zx_cf_error_at(x, n, "%s must be %s", o->name,
                           (o->flags & ZX_CF_TOKEN)
                               ? "printable ASCII without spaces"
                               : "text without control characters");
            return -1;
        }
    }
    if (!*v) {
        zx_cf_error_at(x, n, "%s must not be empty", o->name);
        return -1;
    }
    return 0;
}

/* PATH: not empty, no '~', no control character.  0, or -1 reported. */
static int check_path(zx_cf_ctx *x, const zx_cf_option *o, const yaml_node_t *n,
                      const char *v)
{
    if (!*v) {
        zx_cf_error_at(x, n, "%s must not be empty", o->name);
        return -1;
    }
    if (v[0] == '~') {
        zx_cf_error_at(x, n, "%s: '~' is not expanded; write an absolute "
                       "path or one relative to %s", o->name,
                       (o->flags & ZX_CF_REL_DATA) ? "data_dir"
                                                   : "the config file");
        return -1;
    }
    for (const char *p = v; *p; p++) {
        if ((unsigned char)*p < ' ') {
            zx_cf_error_at(x, n, "%s: control character in a path", o->name);
            return -1;
        }
    }
    return 0;
}

/* SIZE, DURATION, UINT: parsed, within the row's bounds, and set.  0, or
 * -1 reported. */
static int set_number(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                      const yaml_node_t *n, const char *v, const char *shown)
{
    uint64_t u = 0;
    const char *p = v;
    int r;

    if (o->type == ZX_CF_SIZE) {
        r = zx_cf_parse_size(v, &u);
        if (r == ZX_CF_TOO_BIG) /* names the limit, not only the value */
            return check_range(x, o, n, UINT64_MAX, shown);
        if (r < 0) {
            zx_cf_error_at(x, n, "%s: expected an integer or a size like "
                           "16MiB, 512KiB, 1GiB, got %s", o->name, shown);
            return -1;
        }
    } else if (o->type == ZX_CF_DURATION) {
        r = zx_cf_parse_duration(v, &u);
        if (r == ZX_CF_TOO_BIG)
            return check_range(x, o, n, UINT64_MAX, shown);
        if (r < 0) {
            zx_cf_error_at(x, n, "%s: expected a duration like 500ms, 60s, 2m "
                           "or 1h, got %s%s", o->name, shown,
                           r == -2 ? " (a number needs a unit)" : "");
            return -1;
        }
    } else {
        r = zx_cf_parse_u64(&p, &u);
        if (r == ZX_CF_TOO_BIG && !*p)
            return check_range(x, o, n, UINT64_MAX, shown);
        if (r < 0 || *p) {
            zx_cf_error_at(x, n, "%s: expected an integer, got %s", o->name,
                           shown);
            return -1;
        }
    }
    if (check_range(x, o, n, u, shown) < 0)
        return -1;
    if (o->type == ZX_CF_SIZE)
        *(uint64_t *)field(base, o) = u;
    else
        *(uint32_t *)field(base, o) = (uint32_t)u;
    return 0;
}

/* IDENT: a table name, or (`table`) a template (format: debezium, checked
 * with the pipeline).  0, or -1 reported. */
static int check_ident(zx_cf_ctx *x, const zx_cf_option *o, const yaml_node_t *n,
                       const char *v, const char *shown)
{
    const char *why = NULL;
    int ok = !strcmp(o->name, "table") && strchr(v, '{')
             ? zx_cf_table_template_ok(v, &why) : zx_cf_table_name_ok(v, &why);

    if (!ok) {
        zx_cf_error_at(x, n, "%s: %s %s", o->name, shown, why);
        return -1;
    }
    return 0;
}

/* SLOT, GROUP, SQLNAME: a name of their rules.  0, or -1 reported. */
static int check_name(zx_cf_ctx *x, const zx_cf_option *o, const yaml_node_t *n,
                      const char *v, const char *shown)
{
    const char *p;

    if (o->type == ZX_CF_SLOT) {
        for (p = v; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                  *p == '_'))
                break;
        if (!*v || *p || strlen(v) > 63) {
            zx_cf_error_at(x, n, "%s: %s is not a replication slot name: 1 to "
                           "63 lower-case letters, digits or _", o->name,
                           shown);
            return -1;
        }
    } else if (o->type == ZX_CF_GROUP) {
        for (p = v; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr("_.-", *p))
                break;
        if (!*v || *p || strlen(v) > 32 || *v == '-') {
            zx_cf_error_at(x, n, "%s: %s is not a group name", o->name, shown);
            return -1;
        }
    } else {
        for (p = v; *p; p++)
            if ((unsigned char)*p < ' ' || *p == 0x7f)
                break;
        if (!*v || *p || strlen(v) > 63) {
            zx_cf_error_at(x, n, "%s: %s is not a valid name: 1 to 63 bytes, "
                           "without control characters", o->name, shown);
            return -1;
        }
    }
    return 0;
}

/* DSN: one line, not empty, as zx_dsn_check takes it.  0, or -1
 * reported. */
static int check_dsn(zx_cf_ctx *x, const zx_cf_option *o, const yaml_node_t *n,
                     const char *v, const char *shown)
{
    const char *why = NULL;

    for (const char *p = v; *p; p++) {
        if ((unsigned char)*p < ' ' || *p == 0x7f) {
            zx_cf_error_at(x, n, "%s must be text without control "
                           "characters (key=value pairs on one line)",
                           o->name);
            return -1;
        }
    }
    if (!*v) {
        zx_cf_error_at(x, n, "%s must not be empty", o->name);
        return -1;
    }
    if (zx_dsn_check(v, &why) < 0) {
        zx_cf_error_at(x, n, "%s: %s, got %s", o->name, why, shown);
        return -1;
    }
    return 0;
}

/* A scalar option's value v (shown: how a message may quote it) checked
 * by its row's type and set into its field.  0, or -1 reported. */
static int set_text(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                    const yaml_node_t *n, const char *v, const char *shown)
{
    const char *why = NULL;
    char *host = NULL;
    uint16_t port;
    int r = 0;

    switch (o->type) {
    case ZX_CF_STRING:
        r = check_string(x, o, n, v);
        break;
    case ZX_CF_PATH:
        r = check_path(x, o, n, v);
        break;
    case ZX_CF_ENUM:
        if (list_index(o->allowed, v) < 0)
            return bad_enum(x, o, n, v, shown);
        break;
    case ZX_CF_ENUM_INT:
        r = list_index(o->allowed, v);
        if (r < 0)
            return bad_enum(x, o, n, v, shown);
        *(int *)field(base, o) = r;
        return 0;
    case ZX_CF_SIZE: case ZX_CF_DURATION: case ZX_CF_UINT:
        return set_number(x, o, base, n, v, shown);
    case ZX_CF_LISTEN:
        if (zx_cf_split_listen(v, &host, &port, &why) < 0) {
            zx_cf_error_at(x, n, "%s: %s, got %s", o->name, why, shown);
            return -1;
        }
        free(host);
        break;
    case ZX_CF_IDENT:
        r = check_ident(x, o, n, v, shown);
        break;
    case ZX_CF_BOOL:
        r = bool_value(v);
        if (r < 0) {
            zx_cf_error_at(x, n, "%s: expected true or false, got %s", o->name,
                           shown);
            return -1;
        }
        *(int *)field(base, o) = r;
        return 0;
    case ZX_CF_SLOT: case ZX_CF_GROUP: case ZX_CF_SQLNAME:
        r = check_name(x, o, n, v, shown);
        break;
    case ZX_CF_DSN:
        r = check_dsn(x, o, n, v, shown);
        break;
    case ZX_CF_METADATA: case ZX_CF_HOSTPORTS: case ZX_CF_TOPIC:
    case ZX_CF_TOPICS: case ZX_CF_PGTABLES: case ZX_CF_NAMES: case ZX_CF_PROPS:
    case ZX_CF_PATHS:    /* not scalars: zx_cf_set_node never calls set_text */
        zx_cf_error_at(x, n, "%s: expected a list", o->name);
        return -1;
    }
    return r < 0 ? -1 : set_str(x, n, field(base, o), v);
}

static int set_metadata(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                        const yaml_node_t *n)
{
    yaml_node_item_t *it;
    uint32_t bits = 0;
    int rc = 0, i;

    if (n->type != YAML_SEQUENCE_NODE) {
        zx_cf_error_at(x, n, "%s: expected a list like [_ingested_at], got %s",
                       o->name, zx_cf_kind(n));
        return -1;
    }
    for (it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *in = zx_cf_node(x, *it);
        const char *v = zx_cf_scalar(in);
        char shown[96];
        if (!v) {
            zx_cf_error_at(x, in, "%s: expected a column name, got %s",
                           o->name, zx_cf_kind(in));
            rc = -1;
            continue;
        }
        i = list_index(o->allowed, v);
        if (i < 0) {
            snprintf(shown, sizeof(shown), "'%.80s'", v);
            bad_enum(x, o, in, v, shown);
            rc = -1;
        } else if (bits & (1u << i)) {
            zx_cf_error_at(x, in, "%s: '%s' is listed twice", o->name, v);
            rc = -1;
        }
        if (i >= 0)
            bits |= 1u << i;
    }
    if (rc == 0)
        *(uint32_t *)field(base, o) = bits;
    return rc;
}

/* Resolve the scalar node n (the value of `what`): *val = its text (a new
 * string), *shown = how a message may quote it (never a secret, a DSN's
 * password, nor a resolved reference: a reference is shown as written).
 * Returns 0; 1 when it is a secret holding a reference skipped under
 * ZX_CONF_SKIP_SECRETS (*val NULL, *shown NULL); -1 after reporting at n. */
int zx_cf_resolve_scalar(zx_cf_ctx *x, const char *what, const yaml_node_t *n,
                         int show, char **val, char **shown)
{
    const char *text = zx_cf_scalar(n);
    char *red = NULL;
    int is_ref = 0, r;

    *val = NULL;
    *shown = NULL;
    if (!text) {
        zx_cf_error_at(x, n, "%s: expected a single value, got %s", what,
                       zx_cf_kind(n));
        return -1;
    }
    if (n->data.scalar.length != strlen(text)) {
        zx_cf_error_at(x, n, "%s contains a NUL byte", what);
        return -1;
    }
    if (zx_cf_resolve(x, n, text, show != ZX_CF_SHOW_PLAIN, val, &is_ref) < 0)
        return -1;
    if (!*val)
        return 1;
    if (is_ref == ZX_CF_REF_WHOLE) {
        r = asprintf(shown, "the value of %.80s", text);
    } else if (show == ZX_CF_SHOW_DSN) {
        red = zx_dsn_redact(text);
        r = red ? asprintf(shown, "%s'%.80s%s'", is_ref ? "the value of " : "",
                           red, strlen(red) > 80 ? "..." : "")
                : -1;
        free(red);
    } else if (show == ZX_CF_SHOW_SECRET) {
        r = asprintf(shown, "the %s", what);
    } else if (is_ref) {
        r = asprintf(shown, "the value of '%.80s%s'", text,
                     strlen(text) > 80 ? "..." : "");
    } else {
        r = asprintf(shown, "'%.80s%s'", *val, strlen(*val) > 80 ? "..." : "");
    }
    if (r < 0) {
        *shown = NULL;
        free(*val);
        *val = NULL;
        zx_cf_error_at(x, n, "out of memory");
        return -1;
    }
    return 0;
}

int zx_cf_set_node(zx_cf_ctx *x, const zx_cf_option *o, void *base,
                   const yaml_node_t *n)
{
    char *val = NULL, *shown = NULL;
    int rc;

    if (zx_cf_is_null(n)) {
        zx_cf_error_at(x, n, "%s has no value%s", o->name,
                       (o->flags & ZX_CF_REQUIRED) ? ""
                       : "; remove the line to use the default");
        return -1;
    }
    switch (o->type) {
    case ZX_CF_METADATA:
        return set_metadata(x, o, base, n);
    case ZX_CF_HOSTPORTS: case ZX_CF_TOPIC: case ZX_CF_TOPICS:
    case ZX_CF_PGTABLES:
        return zx_cf_set_list(x, o, base, n);
    case ZX_CF_NAMES:
    case ZX_CF_PATHS:
        return zx_cf_set_names(x, o, base, n);
    case ZX_CF_PROPS:
        return zx_cf_set_props(x, o, base, n);
    default:
        break;
    }
    if ((o->flags & ZX_CF_OR_AT) && n->type == YAML_MAPPING_NODE) {
        /* {at: VALUE}: the value itself */
        yaml_node_pair_t *p = n->data.mapping.pairs.start;
        const char *k = p + 1 == n->data.mapping.pairs.top
                            ? zx_cf_scalar(zx_cf_node(x, p->key)) : NULL;
        if (!k || strcmp(k, "at")) {
            zx_cf_error_at(x, n, "%s: a mapping here holds one key, at ({at: "
                           "2026-12-01T00:00:00Z})", o->name);
            return -1;
        }
        n = zx_cf_node(x, p->value);
    }
    if (!zx_cf_scalar(n)) {
        zx_cf_error_at(x, n, "%s: expected a single value, got %s", o->name,
                       zx_cf_kind(n));
        return -1;
    }
    rc = zx_cf_resolve_scalar(x, o->name, n,
                              o->type == ZX_CF_DSN ? ZX_CF_SHOW_DSN
                              : (o->flags & ZX_CF_SECRET) ? ZX_CF_SHOW_SECRET
                              : ZX_CF_SHOW_PLAIN, &val, &shown);
    if (rc == 1) {  /* skipped secret: leave the field NULL */
        free(*(char **)field(base, o));
        *(char **)field(base, o) = NULL;
        return 0;
    }
    if (rc == 0)
        rc = set_text(x, o, base, n, val, shown);
    if (val && ((o->flags & ZX_CF_SECRET) || o->type == ZX_CF_DSN))
        explicit_bzero(val, strlen(val));
    free(val);
    free(shown);
    return rc;
}

void zx_cf_set_default(zx_cf_ctx *x, const zx_cf_option *o, void *base)
{
    if (o->def)
        set_text(x, o, base, NULL, o->def, o->def);
}

static int is_str_type(zx_cf_type t)
{
    return t == ZX_CF_STRING || t == ZX_CF_PATH || t == ZX_CF_ENUM ||
           t == ZX_CF_LISTEN || t == ZX_CF_IDENT || t == ZX_CF_GROUP ||
           t == ZX_CF_DSN || t == ZX_CF_SQLNAME || t == ZX_CF_SLOT;
}

static int is_list_type(zx_cf_type t)
{
    return t == ZX_CF_HOSTPORTS || t == ZX_CF_TOPIC || t == ZX_CF_TOPICS ||
           t == ZX_CF_PGTABLES || t == ZX_CF_NAMES || t == ZX_CF_PATHS;
}

void zx_cf_clear_field(const zx_cf_option *o, void *base)
{
    if (is_str_type(o->type)) {
        char *v = *(char **)field(base, o);
        /* a secret leaves no copy in freed memory (a worker forked later
         * inherits the supervisor's heap: supervisor/scrub.c) */
        if (v && ((o->flags & ZX_CF_SECRET) || o->type == ZX_CF_DSN))
            explicit_bzero(v, strlen(v));
        free(v);
        *(char **)field(base, o) = NULL;
    } else if (is_list_type(o->type) || o->type == ZX_CF_PROPS) {
        /* topic and topics share their field: the second finds it NULL */
        size_t *cnt = (size_t *)((char *)base + o->n_offset);
        zx_cf_free_strs(*(char ***)field(base, o), *cnt);
        *(char ***)field(base, o) = NULL;
        if (o->type == ZX_CF_PROPS) {
            char ***vd = (char ***)((char *)base + o->v_offset);
            for (size_t i = 0; *vd && i < *cnt; i++)
                if ((*vd)[i])
                    explicit_bzero((*vd)[i], strlen((*vd)[i]));
            zx_cf_free_strs(*vd, *cnt);
            *vd = NULL;
        }
        *cnt = 0;
    } else if (o->type == ZX_CF_ENUM_INT || o->type == ZX_CF_BOOL) {
        *(int *)field(base, o) = 0;
    } else if (o->type == ZX_CF_SIZE) {
        *(uint64_t *)field(base, o) = 0;
    } else {   /* DURATION, UINT, METADATA */
        *(uint32_t *)field(base, o) = 0;
    }
}

void zx_cf_free_fields(int target, void *base)
{
    size_t i;

    for (i = 0; i < zx_cf_nrows(); i++) {
        const zx_cf_option *o = zx_cf_row(i);
        if (zx_cf_target(o->section) == target && !(o->flags & ZX_CF_OWN) &&
            (is_str_type(o->type) || is_list_type(o->type) ||
             o->type == ZX_CF_PROPS))
            zx_cf_clear_field(o, base);
    }
}

void zx_cf_free_opts(const zx_plugin *pg, void **own)
{
    if (!*own)
        return;
    for (size_t i = 0; pg && i < pg->noptions; i++) {
        const zx_cf_option *o = &pg->options[i];
        if ((o->flags & ZX_CF_OWN) && (is_str_type(o->type) || is_list_type(o->type) ||
                                       o->type == ZX_CF_PROPS))
            zx_cf_clear_field(o, *own);
    }
    free(*own);
    *own = NULL;
}

void zx_cf_free_own(zx_conf_pipeline *pl)
{
    if (!pl)
        return;
    zx_cf_free_opts(pl->plugin, &pl->own);
    zx_cf_free_opts(pl->dest_plugin, &pl->dest_own);
}

void zx_conf_pipeline_free_own(zx_conf_pipeline *p)
{
    zx_cf_free_own(p);
}

static int str_same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static int strs_same(char *const *a, char *const *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!str_same(a[i], b[i]))
            return 0;
    return 1;
}

/* 1 when the field of row o is equal in a and b (by its type). */
static int row_same(const zx_cf_option *o, const void *a, const void *b)
{
    const void *fa = (const char *)a + o->offset;
    const void *fb = (const char *)b + o->offset;
    size_t na, nb;

    switch (o->type) {
    case ZX_CF_STRING: case ZX_CF_PATH: case ZX_CF_ENUM:
    case ZX_CF_LISTEN: case ZX_CF_IDENT: case ZX_CF_GROUP:
    case ZX_CF_DSN: case ZX_CF_SQLNAME: case ZX_CF_SLOT:
        return str_same(*(char *const *)fa, *(char *const *)fb);
    case ZX_CF_ENUM_INT: case ZX_CF_BOOL:
        return *(const int *)fa == *(const int *)fb;
    case ZX_CF_SIZE:
        return *(const uint64_t *)fa == *(const uint64_t *)fb;
    case ZX_CF_DURATION: case ZX_CF_UINT: case ZX_CF_METADATA:
        return *(const uint32_t *)fa == *(const uint32_t *)fb;
    case ZX_CF_HOSTPORTS: case ZX_CF_TOPIC: case ZX_CF_TOPICS:
    case ZX_CF_PGTABLES: case ZX_CF_NAMES: case ZX_CF_PROPS:
    case ZX_CF_PATHS:
        na = *(const size_t *)((const char *)a + o->n_offset);
        nb = *(const size_t *)((const char *)b + o->n_offset);
        if (na != nb || !strs_same(*(char **const *)fa, *(char **const *)fb, na))
            return 0;
        return o->type != ZX_CF_PROPS ||
               strs_same(*(char **const *)((const char *)a + o->v_offset),
                         *(char **const *)((const char *)b + o->v_offset), na);
    }
    return 1;
}

int zx_cf_fields_same(int target, const void *a, const void *b)
{
    for (size_t i = 0; i < zx_cf_nrows(); i++) {
        const zx_cf_option *o = zx_cf_row(i);
        if (zx_cf_target(o->section) == target && !(o->flags & ZX_CF_OWN) &&
            !row_same(o, a, b))
            return 0;
    }
    return 1;
}

/* 1 when own structs a (of plug-in pa) and b (of pb) hold equal values by
 * their plug-in's ZX_CF_OWN rows; both NULL: equal. */
static int opts_same(const zx_plugin *pa, const void *a, const zx_plugin *pb, const void *b)
{
    if (!a || !b)
        return a == b;
    if (pa != pb)
        return 0;
    for (size_t i = 0; pa && i < pa->noptions; i++)
        if ((pa->options[i].flags & ZX_CF_OWN) && !row_same(&pa->options[i], a, b))
            return 0;
    return 1;
}

int zx_cf_own_same(const zx_conf_pipeline *a, const zx_conf_pipeline *b)
{
    return opts_same(a->plugin, a->own, b->plugin, b->own) &&
           opts_same(a->dest_plugin, a->dest_own, b->dest_plugin, b->dest_own);
}
