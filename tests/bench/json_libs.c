/*
 * json_libs.c — which JSON library should parse push bodies?  A measurement.
 *
 * Workload: 100,000 NDJSON events of ~200 bytes, generated in memory with a
 * fixed seed (ints, strings, a float, a bool, an RFC 3339 timestamp, and for
 * one event in four a nested object).  For each library (jansson, json-c,
 * cJSON) the same "parse + flatten" work is done: parse each line, walk its
 * top-level fields, normalise each key, find its column, type the value
 * (RFC 3339 check on strings, compact JSON text for nested values) and copy
 * it into a zx_rowset.  The chosen library is also measured through the real
 * zx_json_rows_parse (NDJSON in one body, in 1000-line bodies, and the same
 * events as one JSON array).  Prints MB/s and events/s, best of 5 runs.
 *
 * json-c's headers cannot be included next to jansson.h (both declare
 * json_object_iter_next and enum json_type), so the few json-c 0.16
 * functions used are declared below and json-c's json_object_iter_next is
 * looked up by symbol version with dlvsym.
 *
 * Run by hand: build-x/tests/bench/bench_json_libs [events].  Never run in
 * tests, never timed against a threshold.
 */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/colname.h"
#include "common/json_fast.h"
#include "common/json_rows.h"
#include "common/rowset.h"
#include "common/timefmt.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static const char *const words[] = {
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    "india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa",
};

static char *gen_events(size_t n, size_t *len)
{
    size_t cap = n * 320, o = 0;
    char *b = malloc(cap);
    if (!b)
        exit(1);
    for (size_t i = 0; i < n; i++) {
        char ts[ZX_TS_BUFSZ];
        zx_ts_format(INT64_C(1764000000000000) + (int64_t)(rnd() % 86400000000ull), ts);
        o += (size_t)snprintf(b + o, cap - o,
            "{\"id\":%zu,\"user\":\"%s_%u\",\"Event Type\":\"%s\",\"ts\":\"%s\","
            "\"amount\":%.2f,\"ok\":%s,\"count\":%u,\"country\":\"%s\","
            "\"session-id\":\"%016llx\"",
            i, words[rnd() % 16], (unsigned)(rnd() % 100000), words[rnd() % 16], ts,
            (double)(rnd() % 1000000) / 100.0, rnd() % 2 ? "true" : "false",
            (unsigned)(rnd() % 1000), words[rnd() % 16],
            (unsigned long long)rnd());
        if (i % 4 == 0)
            o += (size_t)snprintf(b + o, cap - o,
                                  ",\"meta\":{\"src\":\"%s\",\"tags\":[\"%s\",%u]}",
                                  words[rnd() % 16], words[rnd() % 16],
                                  (unsigned)(rnd() % 10));
        o += (size_t)snprintf(b + o, cap - o, "}\n");
    }
    *len = o;
    return b;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the shared flatten step -------------------------------------------- */

static void put(zx_rowset *rs, const char *key, size_t klen, zx_value *v)
{
    char name[ZX_COLNAME_MAX + 1];
    size_t nl = zx_colname_normalise(key, klen, name);
    int64_t col = zx_rowset_column(rs, name, nl, ZX_T_NULL);
    if (col < 0 || zx_rowset_add(rs, (uint32_t)col, v) < 0)
        exit(1);
}

static void put_str(zx_rowset *rs, const char *key, size_t klen, const char *s,
                    size_t n, zx_type nested)
{
    zx_value v = {0};
    v.type = nested;
    if (nested != ZX_T_JSON)
        v.type = zx_rfc3339_parse(s, n, &v.u.i) ? ZX_T_TIMESTAMP : ZX_T_TEXT;
    v.s = zx_rowset_strdup(rs, s, n);
    v.len = (uint32_t)n;
    put(rs, key, klen, &v);
}

static void put_num(zx_rowset *rs, const char *key, size_t klen, zx_type t,
                    int64_t i, double d)
{
    zx_value v = {0};
    v.type = t;
    if (t == ZX_T_REAL)
        v.u.d = d;
    else if (t == ZX_T_BOOL)
        v.u.b = (int)i;
    else
        v.u.i = i;
    put(rs, key, klen, &v);
}

/* ---- per library -------------------------------------------------------- */

typedef size_t (*run_fn)(const char *buf, size_t len, zx_rowset *rs);

static size_t run_jansson(const char *buf, size_t len, zx_rowset *rs)
{
    size_t events = 0;
    char dump[4096];
    for (const char *p = buf, *end = buf + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        json_error_t e;
        json_t *o = json_loadb(p, n, 0, &e);
        if (!o)
            exit(2);
        zx_rowset_begin_row(rs);
        for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
            const char *k = json_object_iter_key(it);
            size_t kl = json_object_iter_key_len(it);
            json_t *v = json_object_iter_value(it);
            switch (json_typeof(v)) {
            case JSON_STRING:
                put_str(rs, k, kl, json_string_value(v), json_string_length(v), ZX_T_TEXT);
                break;
            case JSON_INTEGER:
                put_num(rs, k, kl, ZX_T_INT, json_integer_value(v), 0);
                break;
            case JSON_REAL:
                put_num(rs, k, kl, ZX_T_REAL, 0, json_real_value(v));
                break;
            case JSON_TRUE:
            case JSON_FALSE:
                put_num(rs, k, kl, ZX_T_BOOL, json_is_true(v), 0);
                break;
            case JSON_NULL:
                put_num(rs, k, kl, ZX_T_NULL, 0, 0);
                break;
            default: {
                size_t dn = json_dumpb(v, dump, sizeof(dump), JSON_COMPACT);
                put_str(rs, k, kl, dump, dn, ZX_T_JSON);
            }
            }
        }
        zx_rowset_end_row(rs);
        json_decref(o);
        events++;
        p += n + 1;
    }
    return events;
}

/* ---- json-c 0.16 declarations (see the top of the file) ---------------- */
struct json_object;
struct json_tokener;
struct jc_iter {
    const void *opaque_;
};
enum { JC_NULL, JC_BOOLEAN, JC_DOUBLE, JC_INT, JC_OBJECT, JC_ARRAY, JC_STRING };
#define JC_TOKENER_STRICT 0x01
#define JC_TOKENER_VALIDATE_UTF8 0x10
#define JC_TO_STRING_NOSLASHESCAPE (1 << 4)
extern const char *json_c_version(void);
extern struct json_tokener *json_tokener_new(void);
extern void json_tokener_free(struct json_tokener *tok);
extern void json_tokener_reset(struct json_tokener *tok);
extern void json_tokener_set_flags(struct json_tokener *tok, int flags);
extern struct json_object *json_tokener_parse_ex(struct json_tokener *tok,
                                                 const char *str, int len);
extern int json_object_put(struct json_object *obj);
extern int json_object_get_type(const struct json_object *obj);
extern const char *json_object_get_string(struct json_object *obj);
extern int json_object_get_string_len(const struct json_object *obj);
extern int64_t json_object_get_int64(const struct json_object *obj);
extern double json_object_get_double(const struct json_object *obj);
extern int json_object_get_boolean(const struct json_object *obj);
extern const char *json_object_to_json_string_length(struct json_object *obj,
                                                     int flags, size_t *length);
extern struct jc_iter json_object_iter_begin(struct json_object *obj);
extern struct jc_iter json_object_iter_end(const struct json_object *obj);
extern int json_object_iter_equal(const struct jc_iter *a, const struct jc_iter *b);
extern const char *json_object_iter_peek_name(const struct jc_iter *it);
extern struct json_object *json_object_iter_peek_value(const struct jc_iter *it);
static void (*jc_iter_next)(struct jc_iter *it);

static size_t run_jsonc(const char *buf, size_t len, zx_rowset *rs)
{
    size_t events = 0;
    struct json_tokener *tok = json_tokener_new();
    json_tokener_set_flags(tok, JC_TOKENER_STRICT | JC_TOKENER_VALIDATE_UTF8);
    for (const char *p = buf, *end = buf + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        json_tokener_reset(tok);
        struct json_object *o = json_tokener_parse_ex(tok, p, (int)n);
        if (!o || json_object_get_type(o) != JC_OBJECT)
            exit(2);
        zx_rowset_begin_row(rs);
        struct jc_iter it = json_object_iter_begin(o), end = json_object_iter_end(o);
        for (; !json_object_iter_equal(&it, &end); jc_iter_next(&it)) {
            const char *k = json_object_iter_peek_name(&it);
            struct json_object *v = json_object_iter_peek_value(&it);
            size_t kl = strlen(k);
            switch (json_object_get_type(v)) {
            case JC_STRING:
                put_str(rs, k, kl, json_object_get_string(v),
                        (size_t)json_object_get_string_len(v), ZX_T_TEXT);
                break;
            case JC_INT:
                put_num(rs, k, kl, ZX_T_INT, json_object_get_int64(v), 0);
                break;
            case JC_DOUBLE:
                put_num(rs, k, kl, ZX_T_REAL, 0, json_object_get_double(v));
                break;
            case JC_BOOLEAN:
                put_num(rs, k, kl, ZX_T_BOOL, json_object_get_boolean(v), 0);
                break;
            case JC_NULL:
                put_num(rs, k, kl, ZX_T_NULL, 0, 0);
                break;
            default: {
                size_t dn;
                const char *d = json_object_to_json_string_length(
                    v, JC_TO_STRING_NOSLASHESCAPE, &dn);
                put_str(rs, k, kl, d, dn, ZX_T_JSON);
            }
            }
        }
        zx_rowset_end_row(rs);
        json_object_put(o);
        events++;
        p += n + 1;
    }
    json_tokener_free(tok);
    return events;
}

static size_t run_cjson(const char *buf, size_t len, zx_rowset *rs)
{
    size_t events = 0;
    for (const char *p = buf, *end = buf + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        cJSON *o = cJSON_ParseWithLength(p, n);
        if (!o || !cJSON_IsObject(o))
            exit(2);
        zx_rowset_begin_row(rs);
        for (cJSON *v = o->child; v; v = v->next) {
            const char *k = v->string;
            size_t kl = strlen(k);
            if (cJSON_IsString(v)) {
                put_str(rs, k, kl, v->valuestring, strlen(v->valuestring), ZX_T_TEXT);
            } else if (cJSON_IsNumber(v)) {
                /* cJSON keeps only a double: integers above 2^53 lose digits */
                double d = v->valuedouble;
                if (d == (double)(int64_t)d)
                    put_num(rs, k, kl, ZX_T_INT, (int64_t)d, 0);
                else
                    put_num(rs, k, kl, ZX_T_REAL, 0, d);
            } else if (cJSON_IsBool(v)) {
                put_num(rs, k, kl, ZX_T_BOOL, cJSON_IsTrue(v), 0);
            } else if (cJSON_IsNull(v)) {
                put_num(rs, k, kl, ZX_T_NULL, 0, 0);
            } else {
                char *d = cJSON_PrintUnformatted(v);
                put_str(rs, k, kl, d, strlen(d), ZX_T_JSON);
                free(d);
            }
        }
        zx_rowset_end_row(rs);
        cJSON_Delete(o);
        events++;
        p += n + 1;
    }
    return events;
}

static size_t run_zx_ndjson(const char *buf, size_t len, zx_rowset *rs)
{
    zx_json_err err;
    int n = zx_json_rows_parse(buf, len, ZX_BODY_NDJSON, rs, &err);
    if (n < 0) {
        fprintf(stderr, "zx_json_rows_parse: %s\n", err.msg);
        exit(2);
    }
    return (size_t)n;
}

/* End of the body of (at most) 1000 lines that starts at p. */
static const char *body_end(const char *p, const char *end)
{
    for (int i = 0; i < 1000 && p < end; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    return p;
}

/* The same events pushed as bodies of 1000 lines, the rowset reset between
 * bodies as the stream worker does after handing a batch to the ring. */
static size_t run_zx_ndjson_1000(const char *buf, size_t len, zx_rowset *rs)
{
    size_t events = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *q = body_end(p, end);
        zx_rowset_reset(rs);
        events += run_zx_ndjson(p, (size_t)(q - p), rs);
        p = q;
    }
    return events;
}

/* The stream worker's path: the hand-written fast parser on 1000-line
 * bodies (common/json_fast.h), which declines nothing in this workload. */
static size_t run_zx_fast_1000(const char *buf, size_t len, zx_rowset *rs)
{
    size_t events = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *q = body_end(p, end);
        zx_rowset_reset(rs);
        int n = zx_json_fast_parse(p, (size_t)(q - p), ZX_BODY_NDJSON, rs);
        if (n < 0) {
            fprintf(stderr, "zx_json_fast_parse declined a body of the workload\n");
            exit(2);
        }
        events += (size_t)n;
        p = q;
    }
    return events;
}

static char *body_array;
static size_t body_array_len;

static size_t run_zx_array(const char *buf, size_t len, zx_rowset *rs)
{
    (void)buf;
    (void)len;
    zx_json_err err;
    int n = zx_json_rows_parse(body_array, body_array_len, ZX_BODY_JSON, rs, &err);
    if (n < 0) {
        fprintf(stderr, "zx_json_rows_parse: %s\n", err.msg);
        exit(2);
    }
    return (size_t)n;
}

static void bench(const char *name, run_fn fn, const char *buf, size_t len)
{
    zx_rowset rs;
    zx_rowset_init(&rs);
    double best = 1e30;
    size_t events = 0;
    for (int r = 0; r < 5; r++) {
        zx_rowset_reset(&rs);
        double t0 = now_s();
        events = fn(buf, len, &rs);
        double t = now_s() - t0;
        if (t < best)
            best = t;
    }
    printf("%-34s %8.1f MB/s %10.0f events/s  (%zu events, %zu columns)\n", name,
           (double)len / best / 1e6, (double)events / best, events, (size_t)rs.ncols);
    zx_rowset_free(&rs);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    size_t len;
    char *buf = gen_events(n, &len);

    /* the same events as one JSON array: "[" line "," line ... "]" */
    body_array = malloc(len + 2);
    if (!body_array)
        return 1;
    memcpy(body_array + 1, buf, len);
    body_array[0] = '[';
    for (size_t i = 1; i < len; i++)
        if (body_array[i] == '\n')
            body_array[i] = ',';
    body_array[len] = ']';
    body_array_len = len + 1;

    jc_iter_next = (void (*)(struct jc_iter *))dlvsym(RTLD_DEFAULT, "json_object_iter_next",
                                                      "JSONC_0.14");
    if (!jc_iter_next) {
        fprintf(stderr, "json-c's json_object_iter_next not found\n");
        return 1;
    }
    printf("%zu events, %zu bytes (%.0f bytes/event), best of 5 runs\n", n, len,
           (double)len / (double)n);
    printf("jansson %s, json-c %s, cJSON %s\n", JANSSON_VERSION, json_c_version(),
           cJSON_Version());
    bench("jansson   parse+flatten", run_jansson, buf, len);
    bench("json-c    parse+flatten", run_jsonc, buf, len);
    bench("cJSON     parse+flatten", run_cjson, buf, len);
    bench("zx_json_rows_parse NDJSON 1 body", run_zx_ndjson, buf, len);
    bench("zx_json_rows_parse NDJSON x1000", run_zx_ndjson_1000, buf, len);
    bench("zx_json_rows_parse JSON array", run_zx_array, buf, len);
    bench("zx_json_fast_parse NDJSON x1000", run_zx_fast_1000, buf, len);
    free(body_array);
    free(buf);
    return 0;
}
