/*
 * avro_connect.c — Avro writer schemas: read with jansson into nodes that
 * carry the Kafka Connect schema keys, checked against avro-c's reading of
 * the same text, and written out as JsonConverter's schema JSON.  The
 * mapping is in avro_connect.h; datums are decoded in avro_decode.c.
 *
 * It must never: accept a schema avro-c refuses or reads differently,
 * follow a type into itself (recursive types are refused), or recurse
 * deeper than ZX_AVRO_MAX_DEPTH.
 */
#include "common/avro_connect.h"
#include "common/avro_node.h"
#include "common/buf.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <avro.h>

/* Compilation state. */
typedef struct cctx {
    zx_avro_schema *s;
    json_t *names;          /* full name -> JSON integer, index in s->nodes */
    char *err;
    size_t errlen;
    const char *rec;        /* full name of the record being read, for messages */
    const char *field;      /* name of its field being read */
    int failed;
} cctx;

/* Copies s into out (n bytes), printable ASCII only, at most 80 bytes. */
static void shown(char *out, size_t n, const char *s)
{
    size_t o = 0;
    for (; s && *s && o + 4 < n && o < 80; s++)
        out[o++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    if (s && *s)
        out[o++] = '.', out[o++] = '.';
    out[o] = '\0';
}

static void fail(cctx *c, const char *fmt, ...)
{
    if (c->failed)
        return;
    c->failed = 1;
    if (!c->err || c->errlen == 0)
        return;
    char where[256] = "", rec[96], field[96];
    if (c->rec && c->field) {
        shown(rec, sizeof(rec), c->rec);
        shown(field, sizeof(field), c->field);
        snprintf(where, sizeof(where), "field \"%s\" of %s: ", field, rec);
    } else if (c->rec) {
        shown(rec, sizeof(rec), c->rec);
        snprintf(where, sizeof(where), "%s: ", rec);
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "avro schema: %s%s", where, msg);
}

static void oom(cctx *c)
{
    c->rec = c->field = NULL;
    fail(c, "out of memory");
}

static av_node *new_node(cctx *c, av_kind kind, const char *ctype)
{
    zx_avro_schema *s = c->s;
    if (zx_grow_to(&s->nodes, s->nnodes + 1, &s->cap, sizeof(*s->nodes), 32) < 0) {
        oom(c);
        return NULL;
    }
    av_node *n = calloc(1, sizeof(*n));
    if (!n) {
        oom(c);
        return NULL;
    }
    n->kind = kind;
    n->ctype = ctype;
    n->null_branch = -1;
    n->height = 1;
    n->weight = 1;
    s->nodes[s->nnodes++] = n;
    return n;
}

static void free_node(av_node *n)
{
    for (size_t i = 0; n->fields && i < n->n; i++)
        json_decref(n->fields[i].name);
    free(n->fields);
    free(n->branches);
    free(n->fullname);
    json_decref(n->symbols);
    json_decref(n->extra);
    free(n);
}

/* ---- names --------------------------------------------------------------- */

static int is_alpha_(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* An Avro name: [A-Za-z_][A-Za-z0-9_]*, the n bytes at s. */
static int valid_name(const char *s, size_t n)
{
    if (n == 0 || !is_alpha_(s[0]))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!is_alpha_(s[i]) && !is_digit(s[i]))
            return 0;
    return 1;
}

/* Names joined by dots (a namespace, or a full name); "" is not one. */
static int valid_dotted(const char *s)
{
    const char *p = s;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (!valid_name(p, n))
            return 0;
        if (!dot)
            return 1;
        p = dot + 1;
    }
}

static const struct {
    const char *name;
    av_kind kind;
    const char *ctype;
} prims[] = {
    {"null", AV_NULL, NULL},         {"boolean", AV_BOOLEAN, "boolean"},
    {"int", AV_INT, "int32"},        {"long", AV_LONG, "int64"},
    {"float", AV_FLOAT, "float32"},  {"double", AV_DOUBLE, "float64"},
    {"bytes", AV_BYTES, "bytes"},    {"string", AV_STRING, "string"},
};

static const char *const kind_names[] = {
    [AV_NULL] = "null",     [AV_BOOLEAN] = "boolean", [AV_INT] = "int",
    [AV_LONG] = "long",     [AV_FLOAT] = "float",     [AV_DOUBLE] = "double",
    [AV_BYTES] = "bytes",   [AV_STRING] = "string",   [AV_RECORD] = "record",
    [AV_ENUM] = "enum",     [AV_ARRAY] = "array",     [AV_MAP] = "map",
    [AV_UNION] = "union",   [AV_FIXED] = "fixed",
};

static int prim_index(const char *t)
{
    for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
        if (!strcmp(t, prims[i].name))
            return (int)i;
    return -1;
}

/* ns.name, or name when ns is empty or name has a dot: a new string. */
static char *qualify(const char *name, const char *ns)
{
    size_t a = strlen(name), b = ns ? strlen(ns) : 0;
    char *f = malloc(a + b + 2);
    if (!f)
        return NULL;
    if (b && !strchr(name, '.')) {
        memcpy(f, ns, b);
        f[b] = '.';
        memcpy(f + b + 1, name, a + 1);
    } else {
        memcpy(f, name, a + 1);
    }
    return f;
}

/* The full name of the named type defined by object j in namespace ns, and
 * (in *space, into f) the namespace its children inherit.  A new string, or
 * NULL after fail(). */
static char *define_name(cctx *c, json_t *j, const char *ns, const char *what)
{
    json_t *jn = json_object_get(j, "name");
    if (!json_is_string(jn)) {
        fail(c, "a %s has no \"name\"", what);
        return NULL;
    }
    const char *name = json_string_value(jn);
    if (strlen(name) != json_string_length(jn) || !valid_dotted(name)) {
        char sh[96];
        shown(sh, sizeof(sh), name);
        fail(c, "\"%s\" is not a valid Avro name", sh);
        return NULL;
    }
    const char *space = ns;
    json_t *js = json_object_get(j, "namespace");
    if (!strchr(name, '.') && js) {
        if (!json_is_string(js)) {
            fail(c, "the \"namespace\" of %s is not a string", name);
            return NULL;
        }
        space = json_string_value(js);
        if (space[0] && (strlen(space) != json_string_length(js) || !valid_dotted(space))) {
            char sh[96];
            shown(sh, sizeof(sh), space);
            fail(c, "namespace \"%s\" is not valid", sh);
            return NULL;
        }
    }
    char *full = qualify(name, space);
    if (!full) {
        oom(c);
        return NULL;
    }
    if (prim_index(full) >= 0) {
        fail(c, "a %s may not be named \"%s\" (a primitive type)", what, full);
        free(full);
        return NULL;
    }
    if (json_object_get(c->names, full)) {
        char sh[96];
        shown(sh, sizeof(sh), full);
        fail(c, "type %s is defined twice", sh);
        free(full);
        return NULL;
    }
    return full;
}

/* Records n (named full) in the name table. */
static int register_name(cctx *c, av_node *n, char *full)
{
    n->fullname = full;
    if (json_object_set_new(c->names, full, json_integer((json_int_t)(c->s->nnodes - 1)))) {
        oom(c);
        return -1;
    }
    return 0;
}

/* The namespace children of a named type inherit: the part of its full
 * name before the last dot ("" when none), as a new string. */
static char *space_of(cctx *c, const char *full)
{
    const char *dot = strrchr(full, '.');
    size_t n = dot ? (size_t)(dot - full) : 0;
    char *sp = malloc(n + 1);
    if (!sp) {
        oom(c);
        return NULL;
    }
    memcpy(sp, full, n);
    sp[n] = '\0';
    return sp;
}

/* 1 when key is in set already, else 0 after adding it (-1 after fail()):
 * duplicates found in one pass, whatever the count. */
static int seen_before(cctx *c, json_t *set, const char *key)
{
    if (json_object_get(set, key))
        return 1;
    if (json_object_set_new(set, key, json_null())) {
        oom(c);
        return -1;
    }
    return 0;
}

/* ---- sizes --------------------------------------------------------------- */

static uint32_t add32(uint32_t a, uint32_t b)
{
    return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}

static uint64_t add_weight(uint64_t a, uint64_t b)
{
    uint64_t cap = (uint64_t)ZX_AVRO_MAX_NODES + 1;
    return a + b > cap ? cap : a + b;
}

/* Checks the height and weight of a finished node.  0 or -1. */
static int check_size(cctx *c, const av_node *n)
{
    if (n->height > ZX_AVRO_MAX_DEPTH) {
        fail(c, "it nests deeper than %d levels", ZX_AVRO_MAX_DEPTH);
        return -1;
    }
    if (n->weight > ZX_AVRO_MAX_NODES) {
        fail(c, "its Kafka Connect schema would have more than %d objects", ZX_AVRO_MAX_NODES);
        return -1;
    }
    return 0;
}

/* ---- properties ---------------------------------------------------------- */

/* Whether a JSON integer j is within [lo, hi]. */
static int int_in(json_t *j, json_int_t lo, json_int_t hi)
{
    return json_is_integer(j) && json_integer_value(j) >= lo && json_integer_value(j) <= hi;
}

/* The Connect name of a logicalType on n, with the decimal's parameters
 * added to params; NULL when there is none or it does not apply. */
static const char *logical_name(cctx *c, av_node *n, json_t *j, json_t *params)
{
    json_t *lt = json_object_get(j, "logicalType");
    if (!json_is_string(lt))
        return NULL;
    const char *t = json_string_value(lt);
    if (!strcmp(t, "decimal") && (n->kind == AV_BYTES || n->kind == AV_FIXED)) {
        json_t *jp = json_object_get(j, "precision"), *js = json_object_get(j, "scale");
        /* the most decimal digits the fixed's two's complement can hold */
        double maxp = n->kind == AV_FIXED ? floor(((double)n->size * 8 - 1) * 0.3010299956639812)
                                          : 1e18;
        if (!int_in(jp, 1, INT32_MAX) || (double)json_integer_value(jp) > maxp)
            return NULL;
        json_int_t p = json_integer_value(jp), sc = 0;
        if (js) {
            if (!int_in(js, 0, p))
                return NULL;
            sc = json_integer_value(js);
        }
        char buf[32];
        snprintf(buf, sizeof(buf), "%lld", (long long)sc);
        int bad = json_object_set_new(params, "scale", json_string(buf));
        snprintf(buf, sizeof(buf), "%lld", (long long)p);
        bad |= json_object_set_new(params, "connect.decimal.precision", json_string(buf));
        if (bad) {
            oom(c);
            return NULL;
        }
        return "org.apache.kafka.connect.data.Decimal";
    }
    static const struct {
        const char *lt;
        av_kind kind;
        const char *name;
    } map[] = {
        {"date", AV_INT, "org.apache.kafka.connect.data.Date"},
        {"time-millis", AV_INT, "org.apache.kafka.connect.data.Time"},
        {"time-micros", AV_LONG, "io.debezium.time.MicroTime"},
        {"timestamp-millis", AV_LONG, "org.apache.kafka.connect.data.Timestamp"},
        {"timestamp-micros", AV_LONG, "io.debezium.time.MicroTimestamp"},
        {"uuid", AV_STRING, "io.debezium.data.Uuid"},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(t, map[i].lt) && n->kind == map[i].kind)
            return map[i].name;
    return NULL;
}

/* Decodes a JSON string into bytes, each code point one byte (Avro's JSON
 * form of bytes: ISO-8859-1).  Returns the count, or -1 when a code point
 * is above 0xFF.  out has room for the string's length. */
static long latin1(const char *s, size_t n, uint8_t *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char b = (unsigned char)s[i];
        if (b < 0x80) {
            out[o++] = b;
            i++;
        } else if ((b & 0xE0) == 0xC0 && b <= 0xC3 && i + 1 < n) {
            out[o++] = (uint8_t)(((b & 0x1F) << 6) | ((unsigned char)s[i + 1] & 0x3F));
            i += 2;
        } else {
            return -1;
        }
    }
    return (long)o;
}

/* connect.default d as n's payload would be written, or NULL (skipped:
 * not a value of n's Connect type, or out of memory). */
static json_t *default_value(const av_node *n, json_t *d)
{
    switch (n->kind) {
    case AV_INT:
    case AV_LONG: {
        if (!json_is_integer(d))
            return NULL;
        json_int_t v = json_integer_value(d);
        if (n->conv == AV_CONV_INT8)
            v = (int8_t)v;
        else if (n->conv == AV_CONV_INT16)
            v = (int16_t)v;
        else if (n->kind == AV_INT && (v < INT32_MIN || v > INT32_MAX))
            return NULL;
        return json_integer(v);
    }
    case AV_FLOAT:
        return json_is_number(d) ? av_float_json((float)json_number_value(d)) : NULL;
    case AV_DOUBLE:
        return json_is_number(d) ? av_double_json(json_number_value(d)) : NULL;
    case AV_BOOLEAN:
        return json_is_boolean(d) ? json_boolean(json_is_true(d)) : NULL;
    case AV_STRING:
    case AV_ENUM:
        return json_is_string(d) ? json_stringn(json_string_value(d), json_string_length(d))
                                 : NULL;
    case AV_BYTES:
    case AV_FIXED: {
        if (!json_is_string(d))
            return NULL;
        size_t len = json_string_length(d);
        uint8_t *b = malloc(len + 1);
        if (!b)
            return NULL;
        long k = latin1(json_string_value(d), len, b);
        json_t *r = k < 0 ? NULL : av_base64(b, (size_t)k, n->conv == AV_CONV_DECIMAL);
        free(b);
        return r;
    }
    default:
        return NULL;
    }
}

/* Reads the connect.* properties, logicalType and avro* properties of the
 * schema object j into n (ctype, conv, extra).  0, or -1 after fail(). */
static int take_props(cctx *c, av_node *n, json_t *j)
{
    json_t *cname = json_object_get(j, "connect.name");
    json_t *cver = json_object_get(j, "connect.version");
    json_t *cdoc = json_object_get(j, "connect.doc");
    json_t *cpar = json_object_get(j, "connect.parameters");
    json_t *cdef = json_object_get(j, "connect.default");
    json_t *ctyp = json_object_get(j, "connect.type");
    if ((cname && !json_is_string(cname)) || (cdoc && !json_is_string(cdoc))) {
        fail(c, "connect.name and connect.doc must be strings");
        return -1;
    }
    if (cver && !json_is_integer(cver)) {
        fail(c, "connect.version must be an integer");
        return -1;
    }
    if (cpar && !json_is_object(cpar)) {
        fail(c, "connect.parameters must be an object");
        return -1;
    }
    json_t *params = json_object();
    json_t *extra = json_object();
    int rc = -1;
    if (!params || !extra) {
        oom(c);
        goto done;
    }
    const char *lname = logical_name(c, n, j, params);
    if (c->failed)
        goto done;
    if (!lname && n->kind == AV_INT && json_is_string(ctyp) && !json_object_get(j, "logicalType")) {
        if (!strcmp(json_string_value(ctyp), "int8")) {
            n->ctype = "int8";
            n->conv = AV_CONV_INT8;
        } else if (!strcmp(json_string_value(ctyp), "int16")) {
            n->ctype = "int16";
            n->conv = AV_CONV_INT16;
        }
    }
    if (n->kind == AV_ENUM) {
        size_t len = 0;
        for (size_t i = 0; i < n->n; i++)
            len += json_string_length(json_array_get(n->symbols, i)) + 1;
        char *allowed = malloc(len + 1), *o = allowed;
        if (!allowed) {
            oom(c);
            goto done;
        }
        for (size_t i = 0; i < n->n; i++) {
            json_t *sym = json_array_get(n->symbols, i);
            if (i)
                *o++ = ',';
            memcpy(o, json_string_value(sym), json_string_length(sym));
            o += json_string_length(sym);
        }
        *o = '\0';
        int bad = json_object_set_new(params, "allowed", json_string(allowed));
        free(allowed);
        if (bad) {
            oom(c);
            goto done;
        }
    }
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        if (!strncmp(key, "avro", 4) && json_is_string(v) &&
            json_object_set(params, key, v)) {
            oom(c);
            goto done;
        }
    }
    json_object_foreach(cpar, key, v) {
        if (!json_is_string(v)) {
            fail(c, "connect.parameters values must be strings");
            goto done;
        }
        if (json_object_set(params, key, v)) {
            oom(c);
            goto done;
        }
    }
    json_t *name = cname ? json_incref(cname)
                 : lname ? json_string(lname)
                 : n->kind == AV_RECORD ? json_string(n->fullname) : NULL;
    const char *nm = name ? json_string_value(name) : NULL;
    if (nm && !strcmp(nm, "org.apache.kafka.connect.data.Decimal") &&
        (n->kind == AV_BYTES || n->kind == AV_FIXED))
        n->conv = AV_CONV_DECIMAL;
    int bad = 0;
    if (name)
        bad |= json_object_set_new(extra, "name", name);
    if (cver)
        bad |= json_object_set(extra, "version", cver);
    if (cdoc)
        bad |= json_object_set(extra, "doc", cdoc);
    if (json_object_size(params))
        bad |= json_object_set(extra, "parameters", params);
    if (cdef) {
        json_t *d = default_value(n, cdef);
        if (d)
            bad |= json_object_set_new(extra, "default", d);
    }
    if (bad) {
        oom(c);
        goto done;
    }
    if (json_object_size(extra)) {
        n->extra = extra;
        extra = NULL;
    }
    rc = 0;
done:
    json_decref(params);
    json_decref(extra);
    return rc;
}

/* ---- the compiler -------------------------------------------------------- */

static av_node *compile(cctx *c, json_t *j, const char *ns, unsigned depth, int in_union);

/* A reference to a named type, or a primitive type name. */
static av_node *compile_name(cctx *c, const char *t, size_t tlen, const char *ns, int in_union)
{
    int pi = prim_index(t);
    if (pi >= 0) {
        if (prims[pi].kind == AV_NULL && !in_union) {
            fail(c, "null outside a union (Kafka Connect has no null type)");
            return NULL;
        }
        av_node *n = new_node(c, prims[pi].kind, prims[pi].ctype);
        if (n)
            n->min_size = prims[pi].kind == AV_NULL ? 0 : prims[pi].kind == AV_FLOAT ? 4
                        : prims[pi].kind == AV_DOUBLE ? 8 : 1;
        if (n && prims[pi].kind == AV_NULL)
            n->weight = 0;
        return n;
    }
    char sh[96];
    shown(sh, sizeof(sh), t);
    if (strlen(t) != tlen || !valid_dotted(t)) {
        fail(c, "\"%s\" is not a type", sh);
        return NULL;
    }
    char *full = qualify(t, ns);
    if (!full) {
        oom(c);
        return NULL;
    }
    json_t *ix = json_object_get(c->names, full);
    free(full);
    if (!ix) {
        fail(c, "unknown type \"%s\"", sh);
        return NULL;
    }
    av_node *n = c->s->nodes[json_integer_value(ix)];
    if (n->defining) {
        fail(c, "type %s contains itself (a recursive type has no Kafka Connect schema)", sh);
        return NULL;
    }
    return n;
}

static av_node *compile_record(cctx *c, json_t *j, const char *ns, unsigned depth)
{
    char *full = define_name(c, j, ns, "record");
    if (!full)
        return NULL;
    json_t *fields = json_object_get(j, "fields");
    av_node *n = new_node(c, AV_RECORD, "struct");
    if (!n || register_name(c, n, full) < 0) {
        free(full);
        if (n)
            n->fullname = NULL;
        return NULL;
    }
    const char *saved_rec = c->rec, *saved_field = c->field;
    c->rec = full;
    c->field = NULL;
    char *space = NULL;
    json_t *names = json_object();
    if (!names) {
        oom(c);
        goto out;
    }
    if (!json_is_array(fields) || json_array_size(fields) == 0) {
        fail(c, "a record needs a non-empty \"fields\" array (avro-c refuses an empty one)");
        goto out;
    }
    if (!(space = space_of(c, full)))
        goto out;
    n->fields = calloc(json_array_size(fields), sizeof(av_field));
    if (!n->fields) {
        oom(c);
        goto out;
    }
    n->defining = 1;
    uint32_t height = 0;
    for (size_t i = 0; i < json_array_size(fields); i++) {
        json_t *f = json_array_get(fields, i);
        json_t *fn = json_object_get(f, "name"), *ft = json_object_get(f, "type");
        c->field = NULL;
        if (!json_is_object(f) || !json_is_string(fn)) {
            fail(c, "field %zu is not an object with a \"name\"", i);
            goto out;
        }
        c->field = json_string_value(fn);
        if (!valid_name(c->field, json_string_length(fn)) ||
            strlen(c->field) != json_string_length(fn)) {
            fail(c, "not a valid Avro name");
            goto out;
        }
        int dup = seen_before(c, names, c->field);
        if (dup < 0)
            goto out;
        if (dup) {
            fail(c, "the record has two fields of that name");
            goto out;
        }
        if (!ft) {
            fail(c, "the field has no \"type\"");
            goto out;
        }
        av_node *t = compile(c, ft, space, depth + 1, 0);
        if (!t)
            goto out;
        n->fields[i].name = json_incref(fn);
        n->fields[i].type = t;
        n->n = i + 1;
        n->min_size = add32(n->min_size, t->min_size);
        n->weight = add_weight(n->weight, t->weight);
        n->dynamic |= t->dynamic;
        if (t->height > height)
            height = t->height;
    }
    n->height = height + 1;
    c->field = NULL;
    if (check_size(c, n) == 0)
        take_props(c, n, j);
    n->defining = 0;
out:
    free(space);
    json_decref(names);
    if (!c->failed) {
        c->rec = saved_rec;
        c->field = saved_field;
    }
    return c->failed ? NULL : n;
}

static av_node *compile_enum(cctx *c, json_t *j, const char *ns)
{
    char *full = define_name(c, j, ns, "enum");
    if (!full)
        return NULL;
    json_t *syms = json_object_get(j, "symbols");
    av_node *n = new_node(c, AV_ENUM, "string");
    if (!n || register_name(c, n, full) < 0) {
        free(full);
        if (n)
            n->fullname = NULL;
        return NULL;
    }
    if (!json_is_array(syms) || json_array_size(syms) == 0) {
        fail(c, "enum %s needs a non-empty \"symbols\" array", full);
        return NULL;
    }
    json_t *seen = json_object();
    if (!seen || !(n->symbols = json_array())) {
        json_decref(seen);
        oom(c);
        return NULL;
    }
    for (size_t i = 0; i < json_array_size(syms); i++) {
        json_t *s = json_array_get(syms, i);
        int bad = !json_is_string(s) || !valid_name(json_string_value(s), json_string_length(s));
        if (bad)
            fail(c, "symbol %zu of enum %s is not a valid Avro name", i, full);
        else if ((bad = seen_before(c, seen, json_string_value(s))) > 0)
            fail(c, "enum %s has symbol %zu twice", full, i);
        else if ((bad = json_array_append(n->symbols, s)) != 0)
            oom(c);
        if (bad) {
            json_decref(seen);
            return NULL;
        }
    }
    json_decref(seen);
    n->n = json_array_size(syms);
    n->min_size = 1;
    return take_props(c, n, j) < 0 ? NULL : n;
}

static av_node *compile_fixed(cctx *c, json_t *j, const char *ns)
{
    char *full = define_name(c, j, ns, "fixed");
    if (!full)
        return NULL;
    json_t *size = json_object_get(j, "size");
    av_node *n = new_node(c, AV_FIXED, "bytes");
    if (!n || register_name(c, n, full) < 0) {
        free(full);
        if (n)
            n->fullname = NULL;
        return NULL;
    }
    if (!int_in(size, 0, INT32_MAX)) {
        fail(c, "fixed %s needs a \"size\" from 0 to 2147483647", full);
        return NULL;
    }
    n->size = json_integer_value(size);
    n->min_size = (uint32_t)n->size;
    return take_props(c, n, j) < 0 ? NULL : n;
}

/* A union: the JSON array j. */
static av_node *compile_union(cctx *c, json_t *j, const char *ns, unsigned depth)
{
    size_t nb = json_array_size(j);
    if (nb == 0) {
        fail(c, "a union has no branch");
        return NULL;
    }
    av_node *u = new_node(c, AV_UNION, NULL);
    if (!u)
        return NULL;
    json_t *seen = json_object();
    if (!seen || !(u->branches = calloc(nb, sizeof(*u->branches)))) {
        oom(c);
        goto fail;
    }
    u->min_size = UINT32_MAX;
    u->weight = 0;
    uint32_t height = 0;
    size_t nonnull = 0;
    for (size_t i = 0; i < nb; i++) {
        av_node *b = compile(c, json_array_get(j, i), ns, depth + 1, 1);
        if (!b)
            goto fail;
        if (b->kind == AV_UNION) {
            fail(c, "a union directly inside a union");
            goto fail;
        }
        /* named types by full name, others by kind ('#' is in no name) */
        char key[32];
        snprintf(key, sizeof(key), "#%s", kind_names[b->kind]);
        int dup = seen_before(c, seen, b->fullname ? b->fullname : key);
        if (dup > 0)
            fail(c, "a union has two branches of the same type (%s)",
                 b->fullname ? b->fullname : kind_names[b->kind]);
        if (dup)
            goto fail;
        u->branches[i] = b;
        u->n = i + 1;
        if (b->kind == AV_NULL)
            u->null_branch = (int)i;
        else
            nonnull++;
        if (b->min_size < u->min_size)
            u->min_size = b->min_size;
        if (b->weight > u->weight)
            u->weight = b->weight;
        if (b->height > height)
            height = b->height;
        u->dynamic |= b->dynamic;
    }
    if (nonnull == 0) {
        fail(c, "a union of only null (Kafka Connect has no null type)");
        goto fail;
    }
    if (nonnull > 1)
        u->dynamic = 1;
    u->min_size = add32(u->min_size, 1);
    u->height = height + 1;
    json_decref(seen);
    return check_size(c, u) < 0 ? NULL : u;
fail:
    json_decref(seen);
    return NULL;
}

static av_node *compile(cctx *c, json_t *j, const char *ns, unsigned depth, int in_union)
{
    if (depth > ZX_AVRO_MAX_DEPTH) {
        fail(c, "it nests deeper than %d levels", ZX_AVRO_MAX_DEPTH);
        return NULL;
    }
    if (json_is_string(j))
        return compile_name(c, json_string_value(j), json_string_length(j), ns, in_union);
    if (json_is_array(j))
        return compile_union(c, j, ns, depth);
    if (!json_is_object(j)) {
        fail(c, "a schema must be a string, an object or an array");
        return NULL;
    }
    json_t *jt = json_object_get(j, "type");
    if (!json_is_string(jt)) {
        fail(c, "a schema object's \"type\" must be a string");
        return NULL;
    }
    const char *t = json_string_value(jt);
    if (!strcmp(t, "record") || !strcmp(t, "error"))
        return compile_record(c, j, ns, depth);
    if (!strcmp(t, "enum"))
        return compile_enum(c, j, ns);
    if (!strcmp(t, "fixed"))
        return compile_fixed(c, j, ns);
    if (!strcmp(t, "array") || !strcmp(t, "map")) {
        int arr = t[0] == 'a';
        json_t *in = json_object_get(j, arr ? "items" : "values");
        if (!in) {
            fail(c, "an %s has no \"%s\"", arr ? "array" : "map", arr ? "items" : "values");
            return NULL;
        }
        av_node *n = new_node(c, arr ? AV_ARRAY : AV_MAP, arr ? "array" : "map");
        if (!n)
            return NULL;
        av_node *it = compile(c, in, ns, depth + 1, 0);
        if (!it)
            return NULL;
        n->items = it;
        n->min_size = 1;
        n->height = it->height + 1;
        n->weight = add_weight(it->weight, arr ? 1 : 2);
        n->dynamic = it->dynamic;
        if (check_size(c, n) < 0 || take_props(c, n, j) < 0)
            return NULL;
        return n;
    }
    av_node *n = compile_name(c, t, json_string_length(jt), ns, in_union);
    if (!n || n->fullname)
        return n; /* a named type referred to as {"type": "Name"} */
    return take_props(c, n, j) < 0 ? NULL : n;
}

/* ---- the public functions ------------------------------------------------ */

zx_avro_schema *zx_avro_schema_parse(const char *text, size_t len, char *err, size_t errlen)
{
    cctx c = {.err = err, .errlen = errlen};
    if (err && errlen)
        err[0] = '\0';
    zx_avro_schema *s = calloc(1, sizeof(*s));
    json_t *root = NULL;
    avro_schema_t as = NULL;
    json_t *seen = NULL;
    c.s = s;
    c.names = json_object();
    if (!s || !c.names) {
        oom(&c);
        goto fail;
    }
    if (!text || len > ZX_AVRO_SCHEMA_MAX) {
        fail(&c, "the text is missing or longer than %u bytes", ZX_AVRO_SCHEMA_MAX);
        goto fail;
    }
    json_error_t je;
    /* the same flags as avro-c, so that both read the same tree */
    root = json_loadb(text, len, JSON_DECODE_ANY, &je);
    if (!root) {
        fail(&c, "not JSON: %s at byte %d", je.text, je.position);
        goto fail;
    }
    s->root = compile(&c, root, "", 0, 0);
    if (!s->root)
        goto fail;
    if (avro_schema_from_json_length(text, len, &as) != 0) {
        char msg[256];
        shown(msg, sizeof(msg), avro_strerror());
        fail(&c, "avro-c refuses it: %s", msg);
        as = NULL;
        goto fail;
    }
    seen = json_object();
    if (!seen) {
        oom(&c);
        goto fail;
    }
    if (!av_agree(s->root, as, seen)) {
        fail(&c, "avro-c reads it differently (a type, name, field, symbol or size differs)");
        goto fail;
    }
    s->connect = av_connect_schema(s->root, 0);
    if (!s->connect) {
        oom(&c);
        goto fail;
    }
    json_decref(seen);
    avro_schema_decref(as);
    json_decref(root);
    json_decref(c.names);
    return s;

fail:
    json_decref(seen);
    if (as)
        avro_schema_decref(as);
    json_decref(root);
    json_decref(c.names);
    zx_avro_schema_free(s);
    return NULL;
}

void zx_avro_schema_free(zx_avro_schema *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nnodes; i++)
        free_node(s->nodes[i]);
    free(s->nodes);
    json_decref(s->connect);
    free(s);
}

const json_t *zx_avro_schema_connect(const zx_avro_schema *s)
{
    return s->connect;
}

int zx_avro_schema_dynamic(const zx_avro_schema *s)
{
    return s->root->dynamic;
}
