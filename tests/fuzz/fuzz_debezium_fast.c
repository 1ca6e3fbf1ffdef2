/*
 * fuzz_debezium_fast.c — the Debezium fast path (workers/sources/debezium/
 * debezium_fast.c) against the jansson path, on events that stay events:
 * the input gives the parts of a Debezium event (after, before, source,
 * the message key's payload) that this target wraps into an envelope
 * with a schema of every kind zx decodes (Decimal, dates, times,
 * timestamps, bytes, JSON, ...), so that mutations land in values and
 * keys rather than in the envelope (fuzz_debezium.c mutates whole
 * messages).  Each event goes twice through both paths (the second time
 * its schema is a cached one) on frames of their own; any difference
 * aborts (tests/fuzz/dbz_oracle.h).
 *
 * Input: byte 0: bit 0 no envelope (the payload alone), bit 1 a message
 * key, bit 2 a key envelope, bit 3 MySQL's connector, bit 4 a template
 * table, bit 5 generated objects; byte 1: the op ("c", "r", "u", "d",
 * "t", "m", or none); the rest: after, before, source and the key's
 * payload, separated by newlines (a part left empty: null, or the default
 * source).  With bit 5, after, before and the key's payload are objects
 * generated from their bytes (gen_object: members of the schema's fields
 * and others, values of every JSON kind, escapes, big and odd numbers), so
 * that most inputs are valid events.  Seeds: corpus/debezium_fast/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/dbz_oracle.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* With ZX_FUZZ_STATS set: events run, and answered by the fast path. */
static unsigned long n_msgs, n_fast;
static void print_stats(void)
{
    fprintf(stderr, "fuzz_debezium_fast: %lu messages, %lu answered by the fast path\n",
            n_msgs, n_fast);
}

#define ROW_FIELDS                                                                         \
    "[{\"type\":\"int32\",\"optional\":false,\"field\":\"id\"},"                           \
    "{\"type\":\"int16\",\"field\":\"s\"},{\"type\":\"int64\",\"field\":\"b\"},"           \
    "{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\","              \
    "\"parameters\":{\"scale\":\"2\",\"connect.decimal.precision\":\"12\"},\"field\":\"d\"}," \
    "{\"type\":\"struct\",\"name\":\"io.debezium.data.VariableScaleDecimal\",\"field\":\"v\"}," \
    "{\"type\":\"float\",\"field\":\"r\"},{\"type\":\"double\",\"field\":\"f\"},"          \
    "{\"type\":\"boolean\",\"field\":\"o\"},{\"type\":\"string\",\"field\":\"t\"},"        \
    "{\"type\":\"bytes\",\"field\":\"y\"},"                                                \
    "{\"type\":\"int32\",\"name\":\"io.debezium.time.Date\",\"field\":\"dt\"},"            \
    "{\"type\":\"int32\",\"name\":\"org.apache.kafka.connect.data.Time\",\"field\":\"tm\"}," \
    "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTime\",\"field\":\"tu\"},"       \
    "{\"type\":\"int64\",\"name\":\"io.debezium.time.NanoTime\",\"field\":\"tn\"},"        \
    "{\"type\":\"int64\",\"name\":\"io.debezium.time.Timestamp\",\"field\":\"ts\"},"       \
    "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroTimestamp\",\"field\":\"tsu\"}," \
    "{\"type\":\"int64\",\"name\":\"io.debezium.time.NanoTimestamp\",\"field\":\"tsn\"},"  \
    "{\"type\":\"string\",\"name\":\"io.debezium.time.ZonedTimestamp\",\"field\":\"z\"},"  \
    "{\"type\":\"string\",\"name\":\"io.debezium.time.ZonedTime\",\"field\":\"zt\"},"      \
    "{\"type\":\"int32\",\"name\":\"io.debezium.time.Year\",\"field\":\"yr\"},"            \
    "{\"type\":\"int64\",\"name\":\"io.debezium.time.MicroDuration\",\"field\":\"du\"},"   \
    "{\"type\":\"string\",\"name\":\"io.debezium.data.Json\",\"field\":\"j\"},"            \
    "{\"type\":\"string\",\"name\":\"io.debezium.data.Uuid\",\"field\":\"u\"},"            \
    "{\"type\":\"array\",\"field\":\"a\"},{\"type\":\"map\",\"field\":\"m\"},"             \
    "{\"type\":\"string\",\"field\":\"id\"}]"

static const char SCHEMA[] =
    "{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"fields\":" ROW_FIELDS
    ",\"optional\":true,\"name\":\"db.inv.t.Value\",\"field\":\"before\"},"
    "{\"type\":\"struct\",\"fields\":" ROW_FIELDS
    ",\"optional\":true,\"name\":\"db.inv.t.Value\",\"field\":\"after\"},"
    "{\"type\":\"string\",\"optional\":false,\"field\":\"op\"}],"
    "\"optional\":false,\"name\":\"db.inv.t.Envelope\"}";

static const char KEY_SCHEMA[] =
    "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,"
    "\"field\":\"id\"}],\"optional\":false,\"name\":\"db.inv.t.Key\"}";

/* The next part of [*p, e) up to a newline, as JSON text (NULL-ended
 * copy in out), or def when empty. */
static const char *part(const uint8_t **p, const uint8_t *e, char *out, size_t cap,
                        const char *def)
{
    const uint8_t *s = *p, *nl = s < e ? memchr(s, '\n', (size_t)(e - s)) : NULL;
    const uint8_t *end = nl ? nl : e;
    *p = nl ? nl + 1 : e;
    size_t n = (size_t)(end - s);
    if (!n)
        return def;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

/* Text appended to a buffer of cap bytes (the generator's output). */
typedef struct gbuf {
    char *p;
    size_t n, cap;
} gbuf;

static void put(gbuf *g, const char *s, size_t n)
{
    if (g->n + n + 1 < g->cap) {
        memcpy(g->p + g->n, s, n);
        g->n += n;
        g->p[g->n] = '\0';
    }
}

static void puts_(gbuf *g, const char *s)
{
    put(g, s, strlen(s));
}

/* A JSON string made of the bytes at s (n): some escaped, some raw. */
static void gen_string(gbuf *g, const uint8_t *s, size_t n)
{
    static const char *const esc[] = { "\\n", "\\\"", "\\\\", "\\/", "\\u00e9",
                                       "\\ud83d\\ude00", "\\u0000", "\\ud800", "\\t",
                                       "\xc3\xa9", "\xe2\x82\xac", "\xff" };
    put(g, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (c >= 0xF0)
            puts_(g, esc[c % 12]);
        else if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\')
            put(g, (const char *)&c, 1);
        else
            put(g, "a", 1);
    }
    put(g, "\"", 1);
}

/* One value from the bytes at *p (advanced), kind by the first. */
static void gen_value(gbuf *g, const uint8_t **p, const uint8_t *e, int depth)
{
    static const char *const lit[] = {
        "0", "-0", "1", "-1", "9223372036854775807", "-9223372036854775808",
        "9223372036854775808", "1.5", "-0.0", "1e400", "1E2", "2.5e-3", "1e-400",
        "123456789012345678901234567890.5", "true", "false", "null",
        "\"NaN\"", "\"Infinity\"", "\"-Infinity\"", "\"ALxhTg==\"", "\"AAEC/w==\"",
        "\"2024-02-29T13:14:15.123456Z\"", "\"__debezium_unavailable_value\"",
        "\"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==\"", "\"{\\\"a\\\": 1}\"", "\"not json\"",
        "{\"scale\":2,\"value\":\"AQ==\"}", "[1,2]", "[]", "{}", "[\"__debezium_unavailable_value\"]",
    };
    if (*p >= e) {
        puts_(g, "null");
        return;
    }
    uint8_t k = *(*p)++;
    char b[64];
    switch (k % 6) {
    case 0:
        puts_(g, lit[(k / 6) % (sizeof(lit) / sizeof(lit[0]))]);
        break;
    case 1: {   /* an integer of the next bytes */
        uint64_t x = 0;
        for (int i = 0; i < 1 + (k / 6) % 8 && *p < e; i++)
            x = x << 8 | *(*p)++;
        snprintf(b, sizeof(b), k & 64 ? "-%llu" : "%llu", (unsigned long long)x);
        puts_(g, b);
        break;
    }
    case 2: {   /* a real */
        uint64_t x = 0;
        for (int i = 0; i < 4 && *p < e; i++)
            x = x << 8 | *(*p)++;
        snprintf(b, sizeof(b), k & 64 ? "%.3f" : "%.17g", (double)x / 7.0);
        puts_(g, b);
        break;
    }
    case 3: {   /* a string of the next bytes */
        size_t n = (size_t)((k / 6) % 12);
        if (n > (size_t)(e - *p))
            n = (size_t)(e - *p);
        gen_string(g, *p, n);
        *p += n;
        break;
    }
    case 4:     /* nested */
        if (depth < 3) {
            put(g, k & 64 ? "[" : "{", 1);
            for (int i = 0; i < (k / 6) % 3 && *p < e; i++) {
                if (i)
                    put(g, ",", 1);
                if (!(k & 64))
                    puts_(g, i ? "\"q\":" : "\"p\":");
                gen_value(g, p, e, depth + 1);
            }
            put(g, k & 64 ? "]" : "}", 1);
        } else {
            puts_(g, "null");
        }
        break;
    default:
        puts_(g, k & 1 ? "true" : "null");
        break;
    }
}

/* An object whose members come from the bytes at s (n): a name (of the
 * schema's fields, or another, or one spelt with an escape), a value. */
static void gen_object(gbuf *g, const uint8_t *s, size_t n)
{
    static const char *const names[] = {
        "id", "s", "b", "d", "v", "r", "f", "o", "t", "y", "dt", "tm", "tu", "tn", "ts", "tsu",
        "tsn", "z", "zt", "yr", "du", "j", "u", "a", "m", "x", "ID", "Id ", "n-1", "\\u0069d",
        "\\u0000", "sk\xc3\xa9",
    };
    const uint8_t *p = s, *e = s + n;
    const size_t nn = sizeof(names) / sizeof(names[0]);
    uint64_t used = 0;
    put(g, "{", 1);
    if (n && !(s[0] & 0x80)) {   /* mostly: the key first, an integer */
        char b[32];
        snprintf(b, sizeof(b), "\"id\":%u", s[0]);
        puts_(g, b);
        used |= 1;
        p++;
    }
    for (int i = 0; p < e && i < 40; i++) {
        if (i || used)
            put(g, ",", 1);
        uint8_t k = *p++;
        size_t ni = k % nn;
        while (!(k & 0x80) && (used >> ni & 1) && used != (UINT64_C(1) << nn) - 1)
            ni = (ni + 1) % nn;   /* each name once, but for k's top bit */
        used |= UINT64_C(1) << ni;
        put(g, "\"", 1);
        puts_(g, names[ni]);
        put(g, "\":", 2);
        gen_value(g, &p, e, 0);
    }
    put(g, "}", 1);
}

static const char *gen_part(const uint8_t **p, const uint8_t *e, char *out, size_t cap,
                            const char *def)
{
    const uint8_t *s = *p, *nl = s < e ? memchr(s, '\n', (size_t)(e - s)) : NULL;
    const uint8_t *end = nl ? nl : e;
    *p = nl ? nl + 1 : e;
    if (end == s)
        return def;
    gbuf g = { out, 0, cap };
    out[0] = '\0';
    gen_object(&g, s, (size_t)(end - s));
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 60000)
        return 0;
    unsigned flags = data[0];
    static const char *const ops[] = { "c", "r", "u", "d", "t", "m", NULL };
    const char *op = ops[data[1] % 7];
    const uint8_t *p = data + 2, *e = data + size;
    static char after[60000], before[60000], source[60000], keyp[60000];
    int gen = (flags & 32) != 0;
    const char *a = gen ? gen_part(&p, e, after, sizeof(after), "null")
                        : part(&p, e, after, sizeof(after), "null");
    const char *b = gen ? gen_part(&p, e, before, sizeof(before), "null")
                        : part(&p, e, before, sizeof(before), "null");
    const char *src = part(&p, e, source, sizeof(source),
                           (flags & 8) ? "{\"connector\":\"mysql\",\"file\":\"binlog.000003\","
                                         "\"pos\":154,\"row\":0,\"table\":\"t\",\"db\":\"inv\","
                                         "\"ts_ms\":1709212455000}"
                                       : "{\"connector\":\"postgresql\",\"lsn\":24023128,"
                                         "\"table\":\"t\",\"schema\":\"public\","
                                         "\"ts_ms\":1709212455123,\"txId\":767}");
    const char *kp = gen ? gen_part(&p, e, keyp, sizeof(keyp), "{\"id\":1}")
                         : part(&p, e, keyp, sizeof(keyp), "{\"id\":1}");

    size_t cap = strlen(a) + strlen(b) + strlen(src) + sizeof(SCHEMA) + 256;
    char *val = malloc(cap), *key = malloc(strlen(kp) + sizeof(KEY_SCHEMA) + 64);
    fuzz_check(val && key, "out of memory");
    char pl[64] = "";
    if (op)
        snprintf(pl, sizeof(pl), ",\"op\":\"%s\"", op);
    int n;
    if (flags & 1)
        n = snprintf(val, cap, "{\"before\":%s,\"after\":%s,\"source\":%s%s,\"ts_ms\":1}", b, a,
                     src, pl);
    else
        n = snprintf(val, cap, "{\"schema\":%s,\"payload\":{\"before\":%s,\"after\":%s,"
                     "\"source\":%s%s,\"ts_ms\":1}}", SCHEMA, b, a, src, pl);
    int kn = (flags & 4) ? sprintf(key, "{\"schema\":%s,\"payload\":%s}", KEY_SCHEMA, kp)
                         : sprintf(key, "%s", kp);
    /* exact-size copies, so that reading past them is caught */
    char *v = malloc((size_t)n), *k = malloc((size_t)kn + 1);
    fuzz_check(v && k, "out of memory");
    memcpy(v, val, (size_t)n);
    memcpy(k, key, (size_t)kn);

    static const char *const keys[] = { "id" };
    zx_dbz_conf c = { .mode = ZX_DBZ_DEBEZIUM,
                      .table = (flags & 16) ? "m_{source.table}" : "{topic}",
                      .key_columns = keys, .nkey_columns = 1 };
    dbz_side x, y;
    dbz_side_init(&x, &c, (flags & 16) != 0, 0);
    dbz_side_init(&y, &c, (flags & 16) != 0, 0);
    for (int round = 0; round < 2; round++) {
        zx_dbz_msg m = { .topic = "db.inv.t", .key = (flags & 2) ? k : NULL,
                         .key_len = (flags & 2) ? (size_t)kn : 0, .value = v,
                         .len = (size_t)n, .position = "db.inv.t:0:7" };
        int took = 0;
        const char *d = dbz_oracle_step(&x, &y, &m, &took);
        if (!n_msgs && getenv("ZX_FUZZ_STATS"))
            atexit(print_stats);
        n_msgs++;
        n_fast += took;
        if (d) {
            fprintf(stderr, "fast path differs from jansson: %s (%s | %s)\n", d, x.why, y.why);
            fuzz_check(0, "the fast path answers as jansson does");
        }
    }
    dbz_side_free(&x);
    dbz_side_free(&y);
    free(v);
    free(k);
    free(val);
    free(key);
    return 0;
}
