/*
 * debezium_values.c — one payload value by its Kafka Connect schema
 * (debezium.h: zx_dbz_value).  The schema's semantic name decides, then
 * its type; the size of a number never does.
 *
 *   semantic name (or type)                 zx value     declared type
 *   org.apache.kafka.connect.data.Decimal   TEXT number  numeric(p,s)
 *     (base64 unscaled two's complement, scale in parameters)
 *   io.debezium.data.VariableScaleDecimal   TEXT number  numeric
 *     ({scale, value}: value as above)
 *   ...connect.data.Date, io.debezium.time.Date (days)   TEXT  date
 *   ...connect.data.Time, io.debezium.time.Time (ms),
 *   io.debezium.time.MicroTime (µs), NanoTime (ns)      TEXT  time
 *   ...connect.data.Timestamp, io.debezium.time.Timestamp (ms),
 *   MicroTimestamp (µs), NanoTimestamp (ns)         TIMESTAMP timestamp
 *   io.debezium.time.ZonedTimestamp (ISO text) TIMESTAMP timestamptz
 *   io.debezium.time.ZonedTime                   TEXT        timetz
 *   io.debezium.time.Year                        INT         integer
 *   io.debezium.time.MicroDuration               TEXT        interval
 *   io.debezium.data.Json                        JSON        jsonb
 *   io.debezium.data.Uuid                        TEXT        uuid
 *   io.debezium.data.Enum, EnumSet, Xml, Ltree   TEXT        text
 *   int8, int16 / int32 / int64                  INT         smallint /
 *                                                            integer / bigint
 *   float32 (float) / float64 (double)           REAL        real / double
 *   boolean                                      BOOL        boolean
 *   string                                       TEXT        text
 *   bytes (base64)                               TEXT "\x.." bytea
 *   array, map, struct                           JSON        jsonb
 * Date and time texts are what Postgres prints (ISO, UTC); a timestamp
 * outside the years 1-9999 stays its number as text.  From MySQL and
 * MariaDB (ZX_DBZ_MYSQL), whose TIME is a duration up to 838:59:59, the
 * times are declared interval.
 */
#include "workers/sources/debezium/debezium_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/timefmt.h"

#define MAX_DECIMAL_BYTES 64   /* 155 digits: above any database's numeric */
#define MAX_SCALE 1000

static const char *sname(const json_t *fs)
{
    const json_t *n = fs ? json_object_get(fs, "name") : NULL;
    return json_is_string(n) ? json_string_value(n) : "";
}

static const char *stype(const json_t *fs)
{
    const json_t *n = fs ? json_object_get(fs, "type") : NULL;
    return json_is_string(n) ? json_string_value(n) : "";
}

/* A parameter of fs as an integer in [lo, hi], or def. */
static long param(const json_t *fs, const char *key, long lo, long hi, long def)
{
    const json_t *p = json_object_get(fs, "parameters");
    const json_t *v = p ? json_object_get(p, key) : NULL;
    if (!json_is_string(v))
        return def;
    char *end;
    const char *s = json_string_value(v);
    long x = strtol(s, &end, 10);
    return end != s && *end == '\0' && x >= lo && x <= hi ? x : def;
}

int zx_dbz_decimal_text(const unsigned char *b, size_t n, int scale, char *out, size_t cap)
{
    if (n > MAX_DECIMAL_BYTES || scale < 0 || scale > MAX_SCALE)
        return -1;
    unsigned char mag[MAX_DECIMAL_BYTES];
    int neg = n && (b[0] & 0x80);
    if (n)
        memcpy(mag, b, n);
    if (neg) {   /* two's complement: invert and add one */
        for (size_t i = 0; i < n; i++)
            mag[i] = (unsigned char)~mag[i];
        for (size_t i = n; i-- > 0;)
            if (++mag[i] != 0)
                break;
    }
    /* repeated division by 10 of the big-endian magnitude */
    char digits[MAX_DECIMAL_BYTES * 3 + 2];
    size_t nd = 0;
    size_t start = 0;
    while (start < n && mag[start] == 0)
        start++;
    while (start < n) {
        unsigned rem = 0;
        for (size_t i = start; i < n; i++) {
            unsigned cur = (rem << 8) | mag[i];
            mag[i] = (unsigned char)(cur / 10);
            rem = cur % 10;
        }
        digits[nd++] = (char)('0' + rem);
        while (start < n && mag[start] == 0)
            start++;
    }
    if (nd == 0)
        digits[nd++] = '0';
    /* digits are least significant first */
    size_t intd = nd > (size_t)scale ? nd - (size_t)scale : 0;
    size_t need = (size_t)neg + (intd ? intd : 1) + (scale ? 1 + (size_t)scale : 0) + 1;
    if (need > cap)
        return -1;
    size_t o = 0;
    if (neg && !(nd == 1 && digits[0] == '0'))
        out[o++] = '-';
    if (!intd)
        out[o++] = '0';
    for (size_t i = 0; i < intd; i++)
        out[o++] = digits[nd - 1 - i];
    if (scale) {
        out[o++] = '.';
        for (int i = scale - 1; i >= 0; i--)
            out[o++] = (size_t)i < nd ? digits[i] : '0';
    }
    out[o] = '\0';
    return (int)o;
}

static int put_text(zx_rowset *rs, zx_value *out, zx_type t, const char *s, size_t n)
{
    char *c = zx_rowset_strdup(rs, s, n);
    if (!c)
        return -1;
    *out = (zx_value){ .type = (uint8_t)t, .len = (uint32_t)n, .s = c };
    return 0;
}

/* A value that does not match its schema: its JSON text, as TEXT (the
 * json_t form: zx_dbz_value's fallback for what as_text_sv leaves). */
static int as_text(const json_t *v, zx_rowset *rs, zx_value *out)
{
    if (json_is_string(v))
        return put_text(rs, out, ZX_T_TEXT, json_string_value(v), json_string_length(v));
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s)
        return -1;
    int rc = put_text(rs, out, ZX_T_TEXT, s, strlen(s));
    free(s);
    return rc;
}

/* The same for a scalar: a string, an integer ("%lld", as json_dumps
 * writes it), true or false; NEED_JSON (2) for a real or a container,
 * whose text is jansson's to write. */
#define NEED_JSON 2
static int as_text_sv(const zx_dbz_sv *v, zx_rowset *rs, zx_value *out)
{
    char b[32];
    int n;
    switch (v->t) {
    case ZX_DBZ_SV_STR:
        return put_text(rs, out, ZX_T_TEXT, v->s, v->n);
    case ZX_DBZ_SV_INT:
        n = snprintf(b, sizeof(b), "%" JSON_INTEGER_FORMAT, (json_int_t)v->i);
        return put_text(rs, out, ZX_T_TEXT, b, (size_t)n);
    case ZX_DBZ_SV_TRUE:
        return put_text(rs, out, ZX_T_TEXT, "true", 4);
    case ZX_DBZ_SV_FALSE:
        return put_text(rs, out, ZX_T_TEXT, "false", 5);
    default:
        return NEED_JSON;
    }
}

static int as_json(const json_t *v, zx_rowset *rs, zx_value *out)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s)
        return -1;
    int rc = put_text(rs, out, ZX_T_JSON, s, strlen(s));
    free(s);
    return rc;
}

/* Decimal from base64 text b64 with scale. */
static int decimal(const char *b64, size_t n, long scale, const zx_dbz_sv *v, zx_rowset *rs,
                   zx_value *out)
{
    unsigned char raw[MAX_DECIMAL_BYTES + 4];
    char txt[MAX_DECIMAL_BYTES * 3 + MAX_SCALE + 8];
    if (n > (MAX_DECIMAL_BYTES / 3 + 1) * 4)
        return as_text_sv(v, rs, out);
    long k = zx_base64_decode(b64, n, raw);
    int len = k < 0 || k > MAX_DECIMAL_BYTES ? -1
                                             : zx_dbz_decimal_text(raw, (size_t)k, (int)scale,
                                                                   txt, sizeof(txt));
    if (len < 0)
        return as_text_sv(v, rs, out);
    return put_text(rs, out, ZX_T_TEXT, txt, (size_t)len);
}

/* "HH:MM:SS[.ffffff]" of a time of day in µs (negative and above 24 h
 * as MySQL's TIME allows: "-838:59:59"). */
static int time_text(int64_t us, zx_rowset *rs, zx_value *out)
{
    char b[48];
    int neg = us < 0;
    uint64_t u = neg ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
    uint64_t s = u / 1000000, f = u % 1000000;
    int n = snprintf(b, sizeof(b), "%s%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, neg ? "-" : "",
                     s / 3600, s / 60 % 60, s % 60);
    if (f) {   /* as Postgres prints it: no trailing zeros */
        n += snprintf(b + n, sizeof(b) - (size_t)n, ".%06" PRIu64, f);
        while (b[n - 1] == '0')
            n--;
    }
    return put_text(rs, out, ZX_T_TEXT, b, (size_t)n);
}

#define MAX_DAYS 2932896      /* 9999-12-31 */
#define MIN_DAYS (-719162)    /* 0001-01-01 */

static int date_text(int64_t days, const zx_dbz_sv *v, zx_rowset *rs, zx_value *out)
{
    if (days < MIN_DAYS || days > MAX_DAYS)
        return as_text_sv(v, rs, out);
    int64_t y;
    unsigned m, d;
    zx_civil_from_days(days, &y, &m, &d);
    char b[24];
    int n = snprintf(b, sizeof(b), "%04" PRId64 "-%02u-%02u", y, m, d);
    return put_text(rs, out, ZX_T_TEXT, b, (size_t)n);
}

#define MAX_US 253402300799999999LL    /* 9999-12-31T23:59:59.999999Z */
#define MIN_US (-62135596800000000LL)  /* 0001-01-01T00:00:00Z */

static int timestamp(int64_t us, const zx_dbz_sv *v, zx_rowset *rs, zx_value *out)
{
    if (us < MIN_US || us > MAX_US)
        return as_text_sv(v, rs, out);
    char b[ZX_TS_BUFSZ];
    size_t n = zx_ts_format(us, b);
    if (put_text(rs, out, ZX_T_TIMESTAMP, b, n) < 0)
        return -1;
    out->u.i = us;
    return 0;
}

/* A JSON integer value as int64 (1), or 0 when v is not one. */
static int int_of(const zx_dbz_sv *v, int64_t *x)
{
    if (v->t != ZX_DBZ_SV_INT)
        return 0;
    *x = v->i;
    return 1;
}

/* Inferred as json_rows.h does (no schema). */
static int inferred(const zx_dbz_sv *v, zx_rowset *rs, zx_value *out)
{
    switch (v->t) {
    case ZX_DBZ_SV_INT:
        *out = (zx_value){ .type = ZX_T_INT, .u.i = v->i };
        return 0;
    case ZX_DBZ_SV_REAL:
        *out = (zx_value){ .type = ZX_T_REAL, .u.d = v->d };
        return 0;
    case ZX_DBZ_SV_TRUE:
    case ZX_DBZ_SV_FALSE:
        *out = (zx_value){ .type = ZX_T_BOOL, .u.b = v->t == ZX_DBZ_SV_TRUE };
        return 0;
    case ZX_DBZ_SV_STR: {
        int64_t us;
        if (zx_rfc3339_parse(v->s, v->n, &us)) {
            if (put_text(rs, out, ZX_T_TIMESTAMP, v->s, v->n) < 0)
                return -1;
            out->u.i = us;
            return 0;
        }
        return put_text(rs, out, ZX_T_TEXT, v->s, v->n);
    }
    default:
        return NEED_JSON;   /* as_json */
    }
}

/* A float that JsonConverter may write as a string ("NaN", "Infinity"). */
static int real(const zx_dbz_sv *v, zx_rowset *rs, zx_value *out)
{
    if (v->t == ZX_DBZ_SV_INT || v->t == ZX_DBZ_SV_REAL) {
        *out = (zx_value){ .type = ZX_T_REAL,
                           .u.d = v->t == ZX_DBZ_SV_INT ? (double)v->i : v->d };
        return 0;
    }
    const char *s = v->t == ZX_DBZ_SV_STR ? v->s : "";
    double d;
    if (strcmp(s, "NaN") == 0)
        d = NAN;
    else if (strcmp(s, "Infinity") == 0)
        d = INFINITY;
    else if (strcmp(s, "-Infinity") == 0)
        d = -INFINITY;
    else
        return as_text_sv(v, rs, out);
    *out = (zx_value){ .type = ZX_T_REAL, .u.d = d };
    return 0;
}

static int bytes(const zx_dbz_sv *v, zx_rowset *rs, zx_value *out)
{
    if (v->t != ZX_DBZ_SV_STR)
        return as_text_sv(v, rs, out);
    const char *s = v->s;
    size_t n = v->n;
    unsigned char sbuf[256], *raw = n / 4 * 3 + 4 <= sizeof(sbuf) ? sbuf : malloc(n / 4 * 3 + 4);
    if (!raw)
        return -1;
    long k = zx_base64_decode(s, n, raw);
    int rc = 0;
    if (k < 0) {
        rc = as_text_sv(v, rs, out);
        goto done;
    }
    static const char hx[] = "0123456789abcdef";
    char *t = zx_rowset_alloc(rs, 2 + 2 * (size_t)k + 1);
    if (!t) {
        rc = -1;
        goto done;
    }
    t[0] = '\\';
    t[1] = 'x';
    for (long i = 0; i < k; i++) {
        t[2 + 2 * i] = hx[raw[i] >> 4];
        t[3 + 2 * i] = hx[raw[i] & 15];
    }
    t[2 + 2 * k] = '\0';
    *out = (zx_value){ .type = ZX_T_TEXT, .len = (uint32_t)(2 + 2 * k), .s = t };
done:
    if (raw != sbuf)
        free(raw);
    return rc;
}

static void numeric_decl(const json_t *fs, char *b, size_t bn)
{
    long p = param(fs, "connect.decimal.precision", 1, 1000, 0);
    long s = param(fs, "scale", 0, 1000, -1);
    b[0] = '\0';
    if (!p || s < 0 || s > p)
        return;
    snprintf(b, bn, "numeric(%ld,%ld)", p, s);
}

enum kind {
    K_INFER = 0, K_DECIMAL, K_VARDEC, K_DATE, K_TIME_MS, K_TIME_US, K_TIME_NS, K_TS_MS,
    K_TS_US, K_TS_NS, K_ZONED_TS, K_TEXT, K_INT, K_DURATION, K_JSON, K_REAL, K_BOOL, K_BYTES,
};

/* The table of the top of this file: semantic names first, then types. */
static const struct sem {
    const char *name;
    enum kind kind;
    const char *decl;
} names[] = {
    { "org.apache.kafka.connect.data.Decimal", K_DECIMAL, "numeric" },
    { "io.debezium.data.VariableScaleDecimal", K_VARDEC, "numeric" },
    { "org.apache.kafka.connect.data.Date", K_DATE, "date" },
    { "io.debezium.time.Date", K_DATE, "date" },
    { "org.apache.kafka.connect.data.Time", K_TIME_MS, "time without time zone" },
    { "io.debezium.time.Time", K_TIME_MS, "time without time zone" },
    { "io.debezium.time.MicroTime", K_TIME_US, "time without time zone" },
    { "io.debezium.time.NanoTime", K_TIME_NS, "time without time zone" },
    { "org.apache.kafka.connect.data.Timestamp", K_TS_MS, "timestamp without time zone" },
    { "io.debezium.time.Timestamp", K_TS_MS, "timestamp without time zone" },
    { "io.debezium.time.MicroTimestamp", K_TS_US, "timestamp without time zone" },
    { "io.debezium.time.NanoTimestamp", K_TS_NS, "timestamp without time zone" },
    { "io.debezium.time.ZonedTimestamp", K_ZONED_TS, "timestamp with time zone" },
    { "io.debezium.time.ZonedTime", K_TEXT, "time with time zone" },
    { "io.debezium.time.Year", K_INT, "integer" },
    { "io.debezium.time.MicroDuration", K_DURATION, "interval" },
    { "io.debezium.data.Json", K_JSON, "jsonb" },
    { "io.debezium.data.Uuid", K_TEXT, "uuid" },
    { "io.debezium.data.Enum", K_TEXT, "text" },
    { "io.debezium.data.EnumSet", K_TEXT, "text" },
    { "io.debezium.data.Xml", K_TEXT, "text" },
    { "io.debezium.data.Ltree", K_TEXT, "text" },
}, types[] = {
    { "int8", K_INT, "smallint" },
    { "int16", K_INT, "smallint" },
    { "int32", K_INT, "integer" },
    { "int64", K_INT, "bigint" },
    { "float32", K_REAL, "real" },
    { "float64", K_REAL, "double precision" },
    { "float", K_REAL, "real" },             /* JsonConverter's words */
    { "double", K_REAL, "double precision" },
    { "boolean", K_BOOL, "boolean" },
    { "string", K_TEXT, "text" },
    { "bytes", K_BYTES, "bytea" },
    { "array", K_JSON, "jsonb" },
    { "map", K_JSON, "jsonb" },
    { "struct", K_JSON, "jsonb" },
};

static const struct sem *lookup(const json_t *fs)
{
    const char *name = sname(fs), *type = stype(fs);
    for (size_t i = 0; *name && i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(name, names[i].name))
            return &names[i];
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (!strcmp(type, types[i].name))
            return &types[i];
    return NULL;
}

/* x * mul, or 0 when it overflows. */
static int scaled(int64_t x, int64_t mul, int64_t *out)
{
    if (x > INT64_MAX / mul || x < INT64_MIN / mul)
        return 0;
    *out = x * mul;
    return 1;
}

void zx_dbz_kind_of(const json_t *fs, zx_dbz_kind *k)
{
    const struct sem *m = fs ? lookup(fs) : NULL;
    memset(k, 0, sizeof(*k));
    if (!m)
        return;
    k->kind = (int)m->kind;
    k->decl = m->decl;
    if (m->kind == K_DECIMAL) {
        numeric_decl(fs, k->numeric, sizeof(k->numeric));
        k->scale = param(fs, "scale", 0, MAX_SCALE, 0);
    }
    k->json_doc = m->kind == K_JSON && !strcmp(sname(fs), "io.debezium.data.Json");
}

void zx_dbz_sv_of(const json_t *v, zx_dbz_sv *out)
{
    memset(out, 0, sizeof(*out));
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_NULL:
        out->t = v ? ZX_DBZ_SV_NULL : ZX_DBZ_SV_NONE;
        break;
    case JSON_TRUE:
        out->t = ZX_DBZ_SV_TRUE;
        break;
    case JSON_FALSE:
        out->t = ZX_DBZ_SV_FALSE;
        break;
    case JSON_INTEGER:
        out->t = ZX_DBZ_SV_INT;
        out->i = (int64_t)json_integer_value(v);
        break;
    case JSON_REAL:
        out->t = ZX_DBZ_SV_REAL;
        out->d = json_real_value(v);
        break;
    case JSON_STRING:
        out->t = ZX_DBZ_SV_STR;
        out->s = json_string_value(v);
        out->n = json_string_length(v);
        break;
    default:
        out->t = ZX_DBZ_SV_OTHER;
        break;
    }
}

int zx_dbz_value_sv(const zx_dbz_kind *k, const zx_dbz_sv *v, zx_rowset *rs, zx_value *out,
                    const char **decl, unsigned flags)
{
    *decl = k->decl;
    /* MySQL's TIME is a duration (-838:59:59 to 838:59:59) */
    if (k->kind && (flags & ZX_DBZ_MYSQL) &&
        (k->kind == K_TIME_MS || k->kind == K_TIME_US || k->kind == K_TIME_NS))
        *decl = "interval";
    if (k->kind == K_DECIMAL && k->numeric[0]) {
        const char *d = zx_rowset_strdup(rs, k->numeric, strlen(k->numeric));
        if (d)
            *decl = d;
    }
    if (v->t == ZX_DBZ_SV_NONE || v->t == ZX_DBZ_SV_NULL) {
        *out = (zx_value){ .type = ZX_T_NULL };
        return 1;
    }
    int64_t x;
    switch ((enum kind)k->kind) {
    case K_INFER:
        break;
    case K_DECIMAL:
        if (v->t != ZX_DBZ_SV_STR)
            return as_text_sv(v, rs, out);   /* decimal.handling.mode double/string */
        return decimal(v->s, v->n, k->scale, v, rs, out);
    case K_VARDEC:
        return v->t == ZX_DBZ_SV_OTHER ? NEED_JSON : as_text_sv(v, rs, out);
    case K_DATE:
        return int_of(v, &x) ? date_text(x, v, rs, out) : as_text_sv(v, rs, out);
    case K_TIME_MS:
        return int_of(v, &x) && scaled(x, 1000, &x) ? time_text(x, rs, out)
                                                    : as_text_sv(v, rs, out);
    case K_TIME_US:
        return int_of(v, &x) ? time_text(x, rs, out) : as_text_sv(v, rs, out);
    case K_TIME_NS:
        return int_of(v, &x) ? time_text(x / 1000, rs, out) : as_text_sv(v, rs, out);
    case K_TS_MS:
        return int_of(v, &x) && scaled(x, 1000, &x) ? timestamp(x, v, rs, out)
                                                    : as_text_sv(v, rs, out);
    case K_TS_US:
        return int_of(v, &x) ? timestamp(x, v, rs, out) : as_text_sv(v, rs, out);
    case K_TS_NS:
        return int_of(v, &x) ? timestamp(x / 1000, v, rs, out) : as_text_sv(v, rs, out);
    case K_ZONED_TS:
        if (v->t == ZX_DBZ_SV_STR && zx_rfc3339_parse(v->s, v->n, &x))
            return timestamp(x, v, rs, out);
        return as_text_sv(v, rs, out);
    case K_INT:
        if (!int_of(v, &x))
            return as_text_sv(v, rs, out);
        *out = (zx_value){ .type = ZX_T_INT, .u.i = x };
        return 0;
    case K_DURATION: {
        if (!int_of(v, &x))
            return as_text_sv(v, rs, out);
        char b[48];
        int n = snprintf(b, sizeof(b), "%" PRId64 " microseconds", x);
        return put_text(rs, out, ZX_T_TEXT, b, (size_t)n);
    }
    case K_JSON:
        if (v->t == ZX_DBZ_SV_STR && k->json_doc) {
            /* the text of a JSON document: kept as sent when it is one */
            json_t *doc = json_loadb(v->s, v->n, JSON_DECODE_ANY, NULL);
            if (!doc)
                return as_text_sv(v, rs, out);
            json_decref(doc);
            return put_text(rs, out, ZX_T_JSON, v->s, v->n);
        }
        return NEED_JSON;   /* as_json */
    case K_REAL:
        return real(v, rs, out);
    case K_BOOL:
        if (v->t != ZX_DBZ_SV_TRUE && v->t != ZX_DBZ_SV_FALSE)
            return as_text_sv(v, rs, out);
        *out = (zx_value){ .type = ZX_T_BOOL, .u.b = v->t == ZX_DBZ_SV_TRUE };
        return 0;
    case K_BYTES:
        return bytes(v, rs, out);
    case K_TEXT:
        return as_text_sv(v, rs, out);
    }
    return inferred(v, rs, out);
}

int zx_dbz_value(const json_t *fs, const json_t *v, zx_rowset *rs, zx_value *out,
                 const char **decl, unsigned flags)
{
    zx_dbz_kind k;
    zx_dbz_sv s;
    zx_dbz_kind_of(fs, &k);
    zx_dbz_sv_of(v, &s);
    int rc = zx_dbz_value_sv(&k, &s, rs, out, decl, flags);
    if (rc != NEED_JSON)
        return rc;
    /* what only the JSON value itself can say */
    if (k.kind == K_VARDEC) {
        const json_t *sc = json_object_get(v, "scale"), *val = json_object_get(v, "value");
        if (!json_is_integer(sc) || !json_is_string(val) || json_integer_value(sc) < 0 ||
            json_integer_value(sc) > MAX_SCALE)
            return as_text(v, rs, out);
        /* a value that does not fit: the whole object's text */
        zx_dbz_sv whole = { .t = ZX_DBZ_SV_OTHER };
        rc = decimal(json_string_value(val), json_string_length(val),
                     (long)json_integer_value(sc), &whole, rs, out);
        return rc == NEED_JSON ? as_text(v, rs, out) : rc;
    }
    if (k.kind == K_JSON || k.kind == K_INFER)
        return as_json(v, rs, out);
    return as_text(v, rs, out);
}
