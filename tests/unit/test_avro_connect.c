/*
 * test_avro_connect.c — unit tests of common/avro_connect.c and
 * avro_decode.c:
 *   - the fixtures of tests/corpus/avro (Debezium envelopes and plain
 *     logical types, encoded by fastavro, with the JsonConverter output
 *     written by hand in make_avro_corpus.py): the schema's text byte for
 *     byte (key order included), the payload as JSON values; every
 *     truncation of those datums and a trailing byte fail with a message;
 *   - datums written by avro-c's own encoder (records, arrays, maps,
 *     unions, enums, fixed) read back;
 *   - hand-made datums for each limit and error (lengths, counts, sized
 *     blocks, varints, union and enum indexes, booleans), the decimal,
 *     float, UTF-8, int8/int16 and map encodings, and unions other than
 *     [null, T];
 *   - schemas refused: recursive, unknown, standalone null, nested or
 *     duplicate union branches, too deep, too wide, bad connect.*, what
 *     avro-c refuses.
 *
 * The fixtures are found from argv[1], $ZX_SOURCE_ROOT, or the prefix of
 * __FILE__ (meson compiles with a path relative to the build directory,
 * where `meson test` runs the test).  It must never need a network or a
 * registry.
 */
#include "common/avro_connect.h"
#include "tests/unit/check.h"

#include <avro.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char srcroot[4096] = ".";

static void find_srcroot(int argc, char **argv)
{
    const char *suffix = "tests/unit/test_avro_connect.c";
    size_t fl = strlen(__FILE__), sl = strlen(suffix);
    char from_file[4096] = "", probe[4200];
    const char *cands[4] = {argc > 1 ? argv[1] : NULL, getenv("ZX_SOURCE_ROOT"), NULL, ".."};
    if (fl >= sl && !strcmp(&__FILE__[fl - sl], suffix))
        snprintf(from_file, sizeof(from_file), "%.*s", (int)(fl - sl), __FILE__);
    cands[2] = from_file[0] ? from_file : ".";
    for (int i = 0; i < 4; i++) {
        if (!cands[i] || !*cands[i])
            continue;
        snprintf(probe, sizeof(probe), "%s/tests/corpus/avro/debezium.avsc", cands[i]);
        if (access(probe, R_OK) == 0) {
            snprintf(srcroot, sizeof(srcroot), "%s", cands[i]);
            return;
        }
    }
}

/* The whole file tests/corpus/avro/<name>, or NULL. */
static char *slurp(const char *name, size_t *len)
{
    char path[4400];
    snprintf(path, sizeof(path), "%s/tests/corpus/avro/%s", srcroot, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("cannot open %s\n", path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap + 1);
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0)
        n += k;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static zx_avro_schema *parse(const char *text, char *err, size_t errlen)
{
    return zx_avro_schema_parse(text, strlen(text), err, errlen);
}

/* The schema's compact text, ASCII-escaped, as make_avro_corpus.py writes. */
static char *dump(const json_t *j)
{
    return json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
}

/* ---- fixtures ------------------------------------------------------------ */

static void check_fixture(const zx_avro_schema *s, const char *bin, const char *want_json)
{
    size_t blen, wlen;
    char *b = slurp(bin, &blen), *w = slurp(want_json, &wlen);
    CHECK(b && w);
    if (!b || !w) {
        free(b);
        free(w);
        return;
    }
    json_error_t je;
    json_t *want = json_loadb(w, wlen, 0, &je);
    CHECK(want != NULL);
    char err[256];
    json_t *got = zx_avro_decode(s, b, blen, err, sizeof(err));
    CHECK(got != NULL);
    if (!got)
        printf("%s: %s\n", bin, err);
    if (got && want) {
        char *gs = dump(json_object_get(got, "schema"));
        char *ws = dump(json_object_get(want, "schema"));
        CHECK(gs && ws && !strcmp(gs, ws));
        if (gs && ws && strcmp(gs, ws))
            printf("%s schema:\n got  %s\n want %s\n", bin, gs, ws);
        free(gs);
        free(ws);
        int same = json_equal(json_object_get(got, "payload"), json_object_get(want, "payload"));
        CHECK(same);
        if (!same) {
            char *gp = dump(json_object_get(got, "payload"));
            char *wp = dump(json_object_get(want, "payload"));
            printf("%s payload:\n got  %s\n want %s\n", bin, gp, wp);
            free(gp);
            free(wp);
        }
        /* the static schema is the same object each time */
        CHECK(json_object_get(got, "schema") == zx_avro_schema_connect(s));
    }
    /* every truncation, and a trailing byte, fail with a message */
    for (size_t n = 0; n < blen; n++) {
        json_t *t = zx_avro_decode(s, b, n, err, sizeof(err));
        CHECK(t == NULL && !strncmp(err, "avro: ", 6));
        json_decref(t);
    }
    char *longer = malloc(blen + 1);
    memcpy(longer, b, blen);
    longer[blen] = 0;
    json_t *t = zx_avro_decode(s, longer, blen + 1, err, sizeof(err));
    CHECK(t == NULL && strstr(err, "1 bytes follow the datum's end"));
    json_decref(t);
    free(longer);
    json_decref(got);
    json_decref(want);
    free(b);
    free(w);
}

static void test_fixtures(void)
{
    static const struct {
        const char *avsc;
        const char *cases[4];
    } fx[] = {
        {"debezium.avsc", {"debezium_1", "debezium_2", "debezium_3", NULL}},
        {"logical.avsc", {"logical_1", NULL}},
    };
    for (size_t i = 0; i < sizeof(fx) / sizeof(fx[0]); i++) {
        size_t len;
        char *text = slurp(fx[i].avsc, &len);
        CHECK(text != NULL);
        if (!text)
            continue;
        char err[256];
        zx_avro_schema *s = zx_avro_schema_parse(text, len, err, sizeof(err));
        CHECK(s != NULL);
        if (!s) {
            printf("%s: %s\n", fx[i].avsc, err);
            free(text);
            continue;
        }
        CHECK(!zx_avro_schema_dynamic(s));
        for (int k = 0; fx[i].cases[k]; k++) {
            char bin[64], js[64];
            snprintf(bin, sizeof(bin), "%s.bin", fx[i].cases[k]);
            snprintf(js, sizeof(js), "%s.json", fx[i].cases[k]);
            check_fixture(s, bin, js);
        }
        zx_avro_schema_free(s);
        free(text);
    }
}

/* ---- avro-c's encoder ---------------------------------------------------- */

static const char ac_schema[] =
    "{\"type\":\"record\",\"name\":\"R\",\"namespace\":\"t\",\"fields\":["
    "{\"name\":\"i\",\"type\":\"int\"},"
    "{\"name\":\"l\",\"type\":\"long\"},"
    "{\"name\":\"s\",\"type\":\"string\"},"
    "{\"name\":\"b\",\"type\":\"bytes\"},"
    "{\"name\":\"d\",\"type\":\"double\"},"
    "{\"name\":\"f\",\"type\":\"float\"},"
    "{\"name\":\"t\",\"type\":\"boolean\"},"
    "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\",\"C\"]}},"
    "{\"name\":\"x\",\"type\":{\"type\":\"fixed\",\"name\":\"X\",\"size\":3}},"
    "{\"name\":\"a\",\"type\":{\"type\":\"array\",\"items\":\"long\"}},"
    "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"string\"]}},"
    "{\"name\":\"n\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"N\",\"fields\":"
    "[{\"name\":\"v\",\"type\":\"int\"}]}]},"
    "{\"name\":\"n2\",\"type\":[\"null\",\"N\"]}]}";

static void test_avro_c_encoder(void)
{
    avro_schema_t as;
    CHECK(avro_schema_from_json_length(ac_schema, strlen(ac_schema), &as) == 0);
    avro_value_iface_t *iface = avro_generic_class_from_schema(as);
    avro_value_t rec, f, el, br;
    CHECK(avro_generic_value_new(iface, &rec) == 0);
    avro_value_get_by_name(&rec, "i", &f, NULL);
    avro_value_set_int(&f, -2147483647 - 1);
    avro_value_get_by_name(&rec, "l", &f, NULL);
    avro_value_set_long(&f, INT64_MAX);
    avro_value_get_by_name(&rec, "s", &f, NULL);
    avro_value_set_string(&f, "h\xc3\xa9llo");
    avro_value_get_by_name(&rec, "b", &f, NULL);
    avro_value_set_bytes(&f, "\xff\x00\x01\x02", 4);
    avro_value_get_by_name(&rec, "d", &f, NULL);
    avro_value_set_double(&f, -0.5);
    avro_value_get_by_name(&rec, "f", &f, NULL);
    avro_value_set_float(&f, 1.5f);
    avro_value_get_by_name(&rec, "t", &f, NULL);
    avro_value_set_boolean(&f, 1);
    avro_value_get_by_name(&rec, "e", &f, NULL);
    avro_value_set_enum(&f, 2);
    avro_value_get_by_name(&rec, "x", &f, NULL);
    avro_value_set_fixed(&f, "abc", 3);
    avro_value_get_by_name(&rec, "a", &f, NULL);
    for (int i = 0; i < 300; i++) {
        avro_value_append(&f, &el, NULL);
        avro_value_set_long(&el, (int64_t)i * 1000003 - 7);
    }
    avro_value_get_by_name(&rec, "m", &f, NULL);
    avro_value_add(&f, "k1", &el, NULL, NULL);
    avro_value_set_branch(&el, 1, &br);
    avro_value_set_string(&br, "v1");
    avro_value_add(&f, "k2", &el, NULL, NULL);
    avro_value_set_branch(&el, 0, &br);
    avro_value_set_null(&br);
    avro_value_get_by_name(&rec, "n", &f, NULL);
    avro_value_set_branch(&f, 1, &br);
    avro_value_get_by_name(&br, "v", &el, NULL);
    avro_value_set_int(&el, 42);
    avro_value_get_by_name(&rec, "n2", &f, NULL);
    avro_value_set_branch(&f, 0, &br);
    avro_value_set_null(&br);

    static char buf[8192];
    avro_writer_t w = avro_writer_memory(buf, sizeof(buf));
    CHECK(avro_value_write(w, &rec) == 0);
    size_t len = (size_t)avro_writer_tell(w);

    char err[256];
    zx_avro_schema *s = parse(ac_schema, err, sizeof(err));
    CHECK(s != NULL);
    json_t *got = s ? zx_avro_decode(s, buf, len, err, sizeof(err)) : NULL;
    CHECK(got != NULL);
    if (!got)
        printf("avro-c datum: %s\n", err);
    json_t *p = json_object_get(got, "payload");
    CHECK(json_integer_value(json_object_get(p, "i")) == -2147483647 - 1);
    CHECK(json_integer_value(json_object_get(p, "l")) == INT64_MAX);
    CHECK(!strcmp(json_string_value(json_object_get(p, "s")) ?: "", "h\xc3\xa9llo"));
    CHECK(!strcmp(json_string_value(json_object_get(p, "b")) ?: "", "/wABAg=="));
    CHECK(json_real_value(json_object_get(p, "d")) == -0.5);
    CHECK(json_real_value(json_object_get(p, "f")) == 1.5);
    CHECK(json_is_true(json_object_get(p, "t")));
    CHECK(!strcmp(json_string_value(json_object_get(p, "e")) ?: "", "C"));
    CHECK(!strcmp(json_string_value(json_object_get(p, "x")) ?: "", "YWJj"));
    json_t *a = json_object_get(p, "a");
    CHECK(json_array_size(a) == 300);
    CHECK(json_integer_value(json_array_get(a, 299)) == 299LL * 1000003 - 7);
    json_t *m = json_object_get(p, "m");
    CHECK(json_object_size(m) == 2 && json_is_null(json_object_get(m, "k2")));
    CHECK(!strcmp(json_string_value(json_object_get(m, "k1")) ?: "", "v1"));
    CHECK(json_integer_value(json_object_get(json_object_get(p, "n"), "v")) == 42);
    CHECK(json_is_null(json_object_get(p, "n2")));
    char *sch = dump(json_object_get(got, "schema"));
    CHECK(sch && strstr(sch, "{\"type\":\"map\",\"keys\":{\"type\":\"string\",\"optional\":false},"
                             "\"values\":{\"type\":\"string\",\"optional\":true},"
                             "\"optional\":false,\"field\":\"m\"}"));
    CHECK(sch && strstr(sch, "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":"
                             "false,\"field\":\"v\"}],\"optional\":true,\"name\":\"t.N\","
                             "\"field\":\"n2\"}"));
    CHECK(sch && strstr(sch, "{\"type\":\"string\",\"optional\":false,\"parameters\":"
                             "{\"allowed\":\"A,B,C\"},\"field\":\"e\"}"));
    free(sch);
    json_decref(got);
    zx_avro_schema_free(s);
    avro_value_decref(&rec);
    avro_value_iface_decref(iface);
    avro_writer_free(w);
    avro_schema_decref(as);
}

/* ---- hand-made datums ---------------------------------------------------- */

/* Decodes the n bytes at d with schema text; returns the payload's compact
 * text (to free) or NULL with the error in err. */
static char *run(const char *schema, const void *d, size_t n, char *err, size_t errlen)
{
    zx_avro_schema *s = parse(schema, err, errlen);
    if (!s)
        return NULL;
    json_t *r = zx_avro_decode(s, d, n, err, errlen);
    char *out = r ? dump(json_object_get(r, "payload")) : NULL;
    json_decref(r);
    zx_avro_schema_free(s);
    return out;
}

#define RUN_OK(schema, bytes, want)                                                   \
    do {                                                                              \
        char e_[256] = "";                                                            \
        char *g_ = run((schema), (bytes), sizeof(bytes) - 1, e_, sizeof(e_));         \
        CHECK(g_ && !strcmp(g_, (want)));                                             \
        if (!g_ || strcmp(g_, (want)))                                                \
            printf("  got %s (%s), want %s\n", g_ ? g_ : "NULL", e_, (want));         \
        free(g_);                                                                     \
    } while (0)

#define RUN_ERR(schema, bytes, want)                                                  \
    do {                                                                              \
        char e_[256] = "";                                                            \
        char *g_ = run((schema), (bytes), sizeof(bytes) - 1, e_, sizeof(e_));         \
        CHECK(!g_ && !strcmp(e_, (want)));                                            \
        if (g_ || strcmp(e_, (want)))                                                 \
            printf("  got %s / \"%s\", want \"%s\"\n", g_ ? g_ : "NULL", e_, (want)); \
        free(g_);                                                                     \
    } while (0)

static void test_limits(void)
{
    const char *rs = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\","
                     "\"type\":\"long\"},{\"name\":\"s\",\"type\":\"string\"}]}";
    /* long 1 (one byte at 0), string length 4294967295 at byte 1 */
    RUN_ERR(rs, "\x02\xfe\xff\xff\xff\x1f" "abcdefghijkl",
            "avro: string length 4294967295 at byte 1 is beyond the 12 bytes left");
    RUN_ERR(rs, "\x02\x01", "avro: string length -1 at byte 1 is negative");
    RUN_ERR(rs, "\x02\x04" "a", "avro: string length 2 at byte 1 is beyond the 1 bytes left");
    RUN_ERR(rs, "\x02\x80", "avro: the datum ends inside the string length that starts at "
                            "byte 1 (2 bytes)");
    RUN_ERR(rs, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00",
            "avro: the long at byte 0 is longer than 10 bytes");
    RUN_ERR(rs, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02\x00",
            "avro: the long at byte 0 is beyond 64 bits");
    RUN_OK(rs, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00",
           "{\"a\":-9223372036854775808,\"s\":\"\"}");
    RUN_OK(rs, "\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00",
           "{\"a\":9223372036854775807,\"s\":\"\"}");
    RUN_ERR(rs, "\x02\x00\x00", "avro: 1 bytes follow the datum's end at byte 2");

    const char *is = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"i\","
                     "\"type\":\"int\"}]}";
    RUN_ERR(is, "\x80\x80\x80\x80\x10", "avro: the int 2147483648 at byte 0 is beyond 32 bits");
    RUN_OK(is, "\xfe\xff\xff\xff\x0f", "{\"i\":2147483647}");
    RUN_ERR(is, "\x80\x80\x80\x80\x80\x00", "avro: the int at byte 0 is longer than 5 bytes");

    const char *arr = "{\"type\":\"array\",\"items\":\"long\"}";
    RUN_OK(arr, "\x04\x02\x04\x00", "[1,2]");
    RUN_OK(arr, "\x02\x02\x02\x04\x00", "[1,2]");
    RUN_OK(arr, "\x03\x04\x02\x04\x00", "[1,2]"); /* count -2, block of 2 bytes */
    RUN_ERR(arr, "\x03\x06\x02\x04\x00\x00",
            "avro: the block at byte 0 says 3 bytes but its items take 2");
    RUN_ERR(arr, "\x03\x0a\x02\x04\x00",
            "avro: array block size 5 at byte 1 is beyond the 3 bytes left");
    RUN_ERR(arr, "\xfe\xff\xff\xff\x0f\x02",
            "avro: array block count 2147483647 at byte 0 is beyond the 1 bytes left");
    RUN_ERR(arr, "\x04\x02", "avro: array block count 2 at byte 0 is beyond the 1 bytes left");
    RUN_ERR(arr, "\x02\x02", "avro: the datum ends inside the array block count that starts at "
                             "byte 2 (2 bytes)");
    RUN_ERR(arr, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00",
            "avro: array block count at byte 0 is out of range");
    /* zero-byte items: limited by the datum's budget of values */
    const char *z = "{\"type\":\"array\",\"items\":{\"type\":\"fixed\",\"name\":\"Z\",\"size\":0}}";
    RUN_OK(z, "\x06\x00", "[\"\",\"\",\"\"]");
    RUN_ERR(z, "\xfe\xff\xff\xff\x0f\x00", "avro: array block count 2147483647 at byte 0 is "
                                           "beyond the datum's limit of 65542 values");

    const char *map = "{\"type\":\"map\",\"values\":\"int\"}";
    RUN_OK(map, "\x04\x02k\x02\x02k\x04\x00", "{\"k\":2}"); /* a repeated key: the last */
    RUN_ERR(map, "\x04\x02k\x02", "avro: map block count 2 at byte 0 is beyond the 3 bytes left");
    RUN_ERR(map, "\x02\x08k\x02\x00", "avro: map key length 4 at byte 1 is beyond the 3 bytes left");
    RUN_OK(map, "\x02\x04\xffk\x02\x00", "{\"\\uFFFDk\":1}");
    RUN_ERR(map, "\x02\x04k\x00\x02\x00", "avro: the map key at byte 1 holds a NUL byte");

    const char *en = "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}";
    RUN_OK(en, "\x02", "\"B\"");
    RUN_ERR(en, "\x04", "avro: enum index 2 at byte 0 is not one of its 2 symbols");
    RUN_ERR(en, "\x01", "avro: enum index -1 at byte 0 is not one of its 2 symbols");

    const char *un = "[\"null\",\"int\"]";
    RUN_OK(un, "\x00", "null");
    RUN_OK(un, "\x02\x54", "42");
    RUN_ERR(un, "\x04", "avro: union index 2 at byte 0 is not one of its 2 branches");

    const char *bo = "\"boolean\"";
    RUN_OK(bo, "\x01", "true");
    RUN_ERR(bo, "\x02", "avro: boolean byte 0x02 at byte 0 is neither 0 nor 1");
    RUN_ERR(bo, "", "avro: the datum ends inside the boolean at byte 0 (1 bytes, 0 left)");
    RUN_ERR("\"double\"", "\x00\x00\x00", "avro: the datum ends inside the double at byte 0 "
                                           "(8 bytes, 3 left)");
}

static void test_encodings(void)
{
    /* decimals: the fewest two's-complement bytes */
    const char *dec = "{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":9,"
                      "\"scale\":2}";
    RUN_OK(dec, "\x00", "\"AA==\"");                 /* empty: zero */
    RUN_OK(dec, "\x06\x00\x00\x7f", "\"fw==\"");     /* 00 00 7f -> 7f */
    RUN_OK(dec, "\x06\x00\x00\x80", "\"AIA=\"");     /* 00 00 80 -> 00 80 */
    RUN_OK(dec, "\x06\xff\xff\x80", "\"gA==\"");     /* ff ff 80 -> 80 */
    RUN_OK(dec, "\x06\xff\xff\x7f", "\"/38=\"");     /* ff ff 7f -> ff 7f */
    RUN_OK(dec, "\x02\xff", "\"/w==\"");
    /* plain bytes are not touched */
    RUN_OK("\"bytes\"", "\x06\x00\x00\x7f", "\"AAB/\"");
    RUN_OK("\"bytes\"", "\x00", "\"\"");
    RUN_OK("\"bytes\"", "\x02\xfb", "\"+w==\"");
    RUN_OK("\"bytes\"", "\x04\xfb\xff", "\"+/8=\"");
    /* a Decimal by connect.name alone */
    RUN_OK("{\"type\":\"bytes\",\"connect.name\":\"org.apache.kafka.connect.data.Decimal\"}",
           "\x04\x00\x01", "\"AQ==\"");

    /* floats: the shortest decimal of the float; NaN and infinities as text */
    RUN_OK("\"float\"", "\xcd\xcc\xcc\x3d", "0.10000000000000001"); /* 0.1f -> 0.1 */
    RUN_OK("\"float\"", "\x00\x00\xc0\x7f", "\"NaN\"");
    RUN_OK("\"float\"", "\x00\x00\x80\xff", "\"-Infinity\"");
    RUN_OK("\"double\"", "\x00\x00\x00\x00\x00\x00\xf0\x7f", "\"Infinity\"");
    RUN_OK("\"double\"", "\x9a\x99\x99\x99\x99\x99\xb9\x3f", "0.10000000000000001");

    /* UTF-8: each maximal ill-formed part becomes U+FFFD */
    RUN_OK("\"string\"", "\x08\x61\xe2\x82\x62", "\"a\\uFFFDb\"");     /* truncated 3-byte */
    RUN_OK("\"string\"", "\x08\xed\xa0\x80\x61", "\"\\uFFFD\\uFFFD\\uFFFDa\""); /* surrogate */
    RUN_OK("\"string\"", "\x08\xf0\x9f\x98\x80", "\"\\uD83D\\uDE00\"");
    RUN_OK("\"string\"", "\x06\xc0\xaf\x00", "\"\\uFFFD\\uFFFD\\u0000\"");
    RUN_OK("\"string\"", "\x04\xf4\x90", "\"\\uFFFD\\uFFFD\"");

    /* connect.type int8 / int16 wrap as Java's byteValue / shortValue */
    RUN_OK("{\"type\":\"int\",\"connect.type\":\"int8\"}", "\x90\x03", "-56");   /* 200 */
    RUN_OK("{\"type\":\"int\",\"connect.type\":\"int16\"}", "\x80\x80\x04", "-32768");
    RUN_OK("{\"type\":\"int\",\"connect.type\":\"int64\"}", "\x90\x03", "200");
}

static void test_dynamic_unions(void)
{
    char err[256];
    const char *sch = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"u\",\"type\":"
                      "[\"null\",\"int\",\"string\"]},{\"name\":\"a\",\"type\":{\"type\":"
                      "\"array\",\"items\":[\"long\",\"boolean\"]}}]}";
    zx_avro_schema *s = parse(sch, err, sizeof(err));
    CHECK(s && zx_avro_schema_dynamic(s));
    if (!s)
        return;
    char *st = dump(zx_avro_schema_connect(s));
    CHECK(st && !strcmp(st, "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":"
                            "true,\"field\":\"u\"},{\"type\":\"array\",\"items\":{\"type\":"
                            "\"int64\",\"optional\":false},\"optional\":false,\"field\":\"a\"}],"
                            "\"optional\":false,\"name\":\"R\"}"));
    free(st);
    static const struct {
        const char *bytes;
        size_t n;
        const char *schema;
        const char *payload;
    } cases[] = {
        {"\x04\x02x\x00", 4,
         "{\"type\":\"struct\",\"fields\":[{\"type\":\"string\",\"optional\":true,\"field\":"
         "\"u\"},{\"type\":\"array\",\"items\":{\"type\":\"int64\",\"optional\":false},"
         "\"optional\":false,\"field\":\"a\"}],\"optional\":false,\"name\":\"R\"}",
         "{\"u\":\"x\",\"a\":[]}"},
        {"\x00\x04\x02\x01\x02\x00\x00", 7,
         "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":true,\"field\":"
         "\"u\"},{\"type\":\"array\",\"items\":{\"type\":\"boolean\",\"optional\":false},"
         "\"optional\":false,\"field\":\"a\"}],\"optional\":false,\"name\":\"R\"}",
         "{\"u\":null,\"a\":[true,false]}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *r = zx_avro_decode(s, cases[i].bytes, cases[i].n, err, sizeof(err));
        CHECK(r != NULL);
        char *gs = r ? dump(json_object_get(r, "schema")) : NULL;
        char *gp = r ? dump(json_object_get(r, "payload")) : NULL;
        CHECK(gs && !strcmp(gs, cases[i].schema));
        CHECK(gp && !strcmp(gp, cases[i].payload));
        if (!gs || strcmp(gs, cases[i].schema) || !gp || strcmp(gp, cases[i].payload))
            printf("  case %zu: %s / %s (%s)\n", i, gs ? gs : "NULL", gp ? gp : "NULL", err);
        free(gs);
        free(gp);
        json_decref(r);
    }
    /* array items of two branches: refused */
    json_t *r = zx_avro_decode(s, "\x00\x04\x00\x02\x02\x01\x00", 7, err, sizeof(err));
    CHECK(r == NULL && !strcmp(err, "avro: the array at byte 1 holds union branches of "
                                    "different Kafka Connect types (Connect has one item type)"));
    json_decref(r);
    zx_avro_schema_free(s);
}

/* ---- schemas ------------------------------------------------------------- */

static void schema_err(const char *text, const char *want)
{
    char err[512] = "";
    zx_avro_schema *s = parse(text, err, sizeof(err));
    CHECK(s == NULL && strstr(err, want) != NULL);
    if (s || !strstr(err, want))
        printf("  schema %s: got \"%s\", want \"%s\"\n", text, err, want);
    zx_avro_schema_free(s);
}

static void test_schemas(void)
{
    schema_err("{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"next\",\"type\":"
               "[\"null\",\"L\"]}]}",
               "avro schema: field \"next\" of L: type L contains itself");
    schema_err("{\"type\":\"record\",\"name\":\"R\",\"namespace\":\"a.b\",\"fields\":"
               "[{\"name\":\"x\",\"type\":\"Valu\"}]}",
               "avro schema: field \"x\" of a.b.R: unknown type \"Valu\"");
    schema_err("\"null\"", "avro schema: null outside a union");
    schema_err("[\"null\"]", "a union of only null");
    schema_err("[\"null\",[\"int\"]]", "a union directly inside a union");
    schema_err("[\"int\",\"int\"]", "two branches of the same type (int)");
    schema_err("{\"type\":\"record\",\"name\":\"R\",\"fields\":[]}", "non-empty \"fields\"");
    schema_err("{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"},"
               "{\"name\":\"a\",\"type\":\"int\"}]}", "two fields of that name");
    schema_err("{\"type\":\"record\",\"name\":\"9R\",\"fields\":[{\"name\":\"a\",\"type\":"
               "\"int\"}]}", "\"9R\" is not a valid Avro name");
    schema_err("{\"type\":\"int\",\"connect.parameters\":{\"a\":1}}",
               "connect.parameters values must be strings");
    schema_err("{\"type\":\"int\",\"connect.version\":\"1\"}", "connect.version must be");
    schema_err("{\"type\":\"fixed\",\"name\":\"F\",\"size\":-1}", "needs a \"size\"");
    schema_err("{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"A\"]}", "symbol 1 twice");
    schema_err("{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":"
               "{\"type\":\"fixed\",\"name\":\"R\",\"size\":1}}]}", "type R is defined twice");
    schema_err("{\"type\":", "avro schema: not JSON");
    schema_err("{\"type\":{\"type\":\"int\"}}", "\"type\" must be a string");

    /* too deep: 70 nested arrays */
    char deep[2048] = "", *o = deep;
    for (int i = 0; i < 70; i++)
        o += sprintf(o, "{\"type\":\"array\",\"items\":");
    o += sprintf(o, "\"int\"");
    for (int i = 0; i < 70; i++)
        *o++ = '}';
    *o = '\0';
    schema_err(deep, "nests deeper than 64 levels");

    /* too wide: each record uses the previous one four times */
    char wide[8192];
    o = wide + sprintf(wide, "{\"type\":\"record\",\"name\":\"R0\",\"fields\":[{\"name\":\"a\","
                             "\"type\":\"int\"}]}");
    for (int i = 1; i < 12; i++) {
        char tmp[8192];
        int k = snprintf(tmp, sizeof(tmp),
                 "{\"type\":\"record\",\"name\":\"R%d\",\"fields\":[{\"name\":\"a\",\"type\":%s},"
                 "{\"name\":\"b\",\"type\":\"R%d\"},{\"name\":\"c\",\"type\":\"R%d\"},"
                 "{\"name\":\"d\",\"type\":\"R%d\"}]}",
                 i, wide, i - 1, i - 1, i - 1);
        CHECK(k > 0 && (size_t)k < sizeof(tmp));
        memcpy(wide, tmp, sizeof(wide));
    }
    schema_err(wide, "more than 100000 objects");

    /* namespaces: inherited by nested types, a dotted name sets its own */
    char err[256];
    zx_avro_schema *s = parse(
        "{\"type\":\"record\",\"name\":\"A\",\"namespace\":\"n1\",\"fields\":["
        "{\"name\":\"b\",\"type\":{\"type\":\"record\",\"name\":\"B\",\"fields\":"
        "[{\"name\":\"x\",\"type\":\"int\"}]}},"
        "{\"name\":\"c\",\"type\":{\"type\":\"record\",\"name\":\"n2.C\",\"fields\":"
        "[{\"name\":\"y\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"Q\"]}}]}},"
        "{\"name\":\"d\",\"type\":\"n1.B\"},{\"name\":\"e\",\"type\":\"n2.E\"}]}",
        err, sizeof(err));
    CHECK(s != NULL);
    if (!s)
        printf("  namespaces: %s\n", err);
    char *t = s ? dump(zx_avro_schema_connect(s)) : NULL;
    CHECK(t && strstr(t, "\"name\":\"n1.B\",\"field\":\"b\"") && strstr(t, "\"name\":\"n2.C\"") &&
          strstr(t, "\"name\":\"n1.B\",\"field\":\"d\""));
    free(t);
    zx_avro_schema_free(s);
    zx_avro_schema_free(NULL);
}

int main(int argc, char **argv)
{
    find_srcroot(argc, argv);
    test_fixtures();
    test_avro_c_encoder();
    test_limits();
    test_encodings();
    test_dynamic_unions();
    test_schemas();
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures != 0;
}
