/*
 * test_generate.c — the pure core of `source: generate`
 * (workers/sources/generate/gen_core.h): template parsing and its errors,
 * the values each generator makes (types and ranges), the random ranges,
 * `rate:` parsing and the pacing arithmetic.
 */
#include "tests/unit/check.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"
#include "workers/sources/generate/gen_core.h"

static char err[512];

/* Parse one field; 0 or -1 (err set). */
static int parse1(const char *name, const char *spec, zx_gen_template *t)
{
    const char *n[1] = {name}, *s[1] = {spec};
    return zx_gen_template_parse(n, s, 1, t, err, sizeof(err));
}

/* 1 when spec for field `name` is refused with a message containing want
 * (and naming the field). */
static int refused(const char *name, const char *spec, const char *want)
{
    zx_gen_template t;
    err[0] = '\0';
    if (parse1(name, spec, &t) == 0) {
        zx_gen_template_free(&t);
        printf("accepted: %s: %s\n", name, spec);
        return 0;
    }
    char field[96];
    snprintf(field, sizeof(field), "field %s:", name);
    int ok = strstr(err, want) != NULL && strstr(err, field) != NULL && t.nfields == 0;
    if (!ok)
        printf("message for %s: %s: %s\n", name, spec, err);
    return ok;
}

static void test_parse_ok(void)
{
    const char *n[] = {"id", "user", "kind", "at", "uid", "price", "meta", "flag"};
    const char *s[] = {"sequence", "int 1..1000", "choice click, view ,buy", "timestamp",
                       "uuid", "float 0..100", "json {\"a\": 1, \"b\": [1, 2]}", "  bool  "};
    zx_gen_template t;
    CHECK(zx_gen_template_parse(n, s, 8, &t, err, sizeof(err)) == 0);
    CHECK(t.nfields == 8);
    CHECK(t.fields[0].kind == ZX_GEN_SEQUENCE);
    CHECK(t.fields[1].kind == ZX_GEN_INT && t.fields[1].lo == 1 && t.fields[1].hi == 1000);
    CHECK(t.fields[2].kind == ZX_GEN_CHOICE && t.fields[2].nchoices == 3);
    CHECK(!strcmp(t.fields[2].choices[1], "view"));
    CHECK(t.fields[5].kind == ZX_GEN_FLOAT && t.fields[5].dlo == 0 && t.fields[5].dhi == 100);
    CHECK(t.fields[6].kind == ZX_GEN_JSON && !strcmp(t.fields[6].json, "{\"a\":1,\"b\":[1,2]}"));
    CHECK(t.fields[7].kind == ZX_GEN_BOOL);
    zx_gen_template_free(&t);
    CHECK(t.nfields == 0 && t.fields == NULL);

    /* the widest int range and negative bounds */
    CHECK(parse1("x", "int -9223372036854775808..9223372036854775807", &t) == 0);
    CHECK(t.fields[0].lo == INT64_MIN && t.fields[0].hi == INT64_MAX);
    zx_gen_template_free(&t);
    CHECK(parse1("x", "int -5 .. -5", &t) == 0);
    zx_gen_template_free(&t);
    CHECK(parse1("x", "float -1e308..1e308", &t) == 0);
    zx_gen_template_free(&t);
}

static void test_parse_errors(void)
{
    CHECK(refused("kind", "pick a,b", "unknown generator \"pick\""));
    CHECK(refused("kind", "", "no generator"));
    CHECK(refused("kind", "   ", "no generator"));
    CHECK(refused("user", "int 10..1", "LO <= HI"));
    CHECK(refused("user", "int 1-10", "LO..HI"));
    CHECK(refused("user", "int 1..", "LO..HI"));
    CHECK(refused("user", "int a..b", "LO..HI"));
    CHECK(refused("user", "int 1..9223372036854775808", "64-bit"));
    CHECK(refused("user", "int 1.5..3", "LO..HI"));
    CHECK(refused("price", "float 5..1", "LO <= HI"));
    CHECK(refused("price", "float 0..inf", "finite"));
    CHECK(refused("price", "float 0..nan", "finite"));
    CHECK(refused("price", "float 0..1e999", "finite"));
    CHECK(refused("kind", "choice", "comma-separated"));
    CHECK(refused("kind", "choice a,,b", "word 2 is empty"));
    CHECK(refused("kind", "choice a,b,", "word 3 is empty"));
    CHECK(refused("meta", "json {\"a\": 1", "JSON object or array"));
    CHECK(refused("meta", "json 5", "JSON object or array"));
    CHECK(refused("meta", "json", "JSON object or array"));
    CHECK(refused("meta", "json {} x", "JSON object or array"));
    CHECK(refused("id", "sequence 5", "takes nothing after it"));
    CHECK(refused("at", "timestamp now", "takes nothing after it"));
    CHECK(refused("Id", "sequence", "not a column name"));
    CHECK(refused("1st", "sequence", "not a column name"));
    CHECK(refused("_key", "sequence", "not a column name"));
    CHECK(refused("_zx_op", "sequence", "not a column name"));
    CHECK(refused("a b", "sequence", "write \"a_b\""));

    /* too many choices */
    size_t n = ZX_GEN_MAX_CHOICES + 1;
    char *many = malloc(n * 2 + 16);
    strcpy(many, "choice ");
    for (size_t i = 0; i < n; i++)
        strcat(many, i ? ",a" : "a");
    CHECK(refused("kind", many, "at most"));
    free(many);

    /* a name twice, no fields */
    const char *names[] = {"a", "a"}, *specs[] = {"uuid", "uuid"};
    zx_gen_template t;
    CHECK(zx_gen_template_parse(names, specs, 2, &t, err, sizeof(err)) < 0);
    CHECK(strstr(err, "field a: given twice") != NULL);
    CHECK(zx_gen_template_parse(names, specs, 0, &t, err, sizeof(err)) < 0);
    CHECK(strstr(err, "1 to 256") != NULL);
}

static void test_rng(void)
{
    zx_gen_rng r;
    zx_gen_rng_seed(&r, 0);
    int seen[7] = {0};
    for (int i = 0; i < 70000; i++) {
        int64_t v = zx_gen_rng_range(&r, -3, 3);
        CHECK(v >= -3 && v <= 3);
        if (v >= -3 && v <= 3)
            seen[v + 3]++;
    }
    for (int i = 0; i < 7; i++)   /* each about 10000: far from 0 */
        CHECK(seen[i] > 5000);
    for (int i = 0; i < 1000; i++)
        CHECK(zx_gen_rng_range(&r, 42, 42) == 42);
    int neg = 0, pos = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t v = zx_gen_rng_range(&r, INT64_MIN, INT64_MAX);
        neg += v < 0;
        pos += v > 0;
    }
    CHECK(neg > 100 && pos > 100);
    int64_t hi = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t v = zx_gen_rng_range(&r, INT64_MAX - 1, INT64_MAX);
        CHECK(v >= INT64_MAX - 1);
        hi += v == INT64_MAX;
    }
    CHECK(hi > 100 && hi < 900);
    /* the same seed, the same numbers */
    zx_gen_rng a, b;
    zx_gen_rng_seed(&a, 7);
    zx_gen_rng_seed(&b, 7);
    CHECK(zx_gen_rng_next(&a) == zx_gen_rng_next(&b));
}

static int is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

static void test_rows(void)
{
    const char *n[] = {"id", "user", "kind", "at", "uid", "price", "meta", "flag"};
    const char *s[] = {"sequence", "int 1..1000", "choice click,view,buy", "timestamp",
                       "uuid", "float 0..100", "json [1, {\"a\": null}]", "bool"};
    zx_gen_template t;
    CHECK(zx_gen_template_parse(n, s, 8, &t, err, sizeof(err)) == 0);
    zx_rowset rs;
    zx_rowset_init(&rs);
    zx_gen_rng r;
    zx_gen_rng_seed(&r, 1);
    int64_t now = 1700000000123456;
    for (uint64_t i = 0; i < 2000; i++)
        CHECK(zx_gen_row(&t, &rs, 100 + i, now, &r) == 0);
    CHECK(rs.nrows == 2000 && rs.ncols == 8);
    CHECK(rs.cols[0].type == ZX_T_INT && rs.cols[1].type == ZX_T_INT);
    CHECK(rs.cols[2].type == ZX_T_TEXT && rs.cols[3].type == ZX_T_TIMESTAMP);
    CHECK(rs.cols[4].type == ZX_T_TEXT && rs.cols[5].type == ZX_T_REAL);
    CHECK(rs.cols[6].type == ZX_T_JSON && rs.cols[7].type == ZX_T_BOOL);
    zx_value v[8];
    int kinds[3] = {0}, trues = 0;
    char prev_uuid[37] = "";
    for (uint32_t i = 0; i < rs.nrows; i++) {
        zx_rowset_row(&rs, i, v);
        CHECK(v[0].type == ZX_T_INT && v[0].u.i == 100 + (int64_t)i);
        CHECK(v[1].type == ZX_T_INT && v[1].u.i >= 1 && v[1].u.i <= 1000);
        CHECK(v[2].type == ZX_T_TEXT);
        kinds[0] += !strcmp(v[2].s, "click");
        kinds[1] += !strcmp(v[2].s, "view");
        kinds[2] += !strcmp(v[2].s, "buy");
        CHECK(v[3].type == ZX_T_TIMESTAMP && v[3].u.i == now);
        CHECK(!strcmp(v[3].s, "2023-11-14T22:13:20.123456Z") && v[3].len == 27);
        CHECK(v[4].type == ZX_T_TEXT && v[4].len == 36);
        /* xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx */
        int shape = v[4].s[8] == '-' && v[4].s[13] == '-' && v[4].s[18] == '-' &&
                    v[4].s[23] == '-' && v[4].s[14] == '4' && strchr("89ab", v[4].s[19]);
        for (int k = 0; k < 36; k++)
            if (k != 8 && k != 13 && k != 18 && k != 23 && !is_hex(v[4].s[k]))
                shape = 0;
        CHECK(shape);
        CHECK(strcmp(prev_uuid, v[4].s) != 0);
        snprintf(prev_uuid, sizeof(prev_uuid), "%s", v[4].s);
        CHECK(v[5].type == ZX_T_REAL && v[5].u.d >= 0 && v[5].u.d <= 100);
        CHECK(v[6].type == ZX_T_JSON && !strcmp(v[6].s, "[1,{\"a\":null}]"));
        CHECK(v[7].type == ZX_T_BOOL);
        trues += v[7].u.b == 1;
    }
    CHECK(kinds[0] + kinds[1] + kinds[2] == 2000);
    CHECK(kinds[0] > 400 && kinds[1] > 400 && kinds[2] > 400);
    CHECK(trues > 700 && trues < 1300);
    zx_rowset_free(&rs);
    zx_gen_template_free(&t);

    /* the extreme float range stays finite and inside */
    CHECK(parse1("x", "float -1e308..1e308", &t) == 0);
    zx_rowset_init(&rs);
    for (int i = 0; i < 1000; i++)
        CHECK(zx_gen_row(&t, &rs, 0, now, &r) == 0);
    for (uint32_t i = 0; i < rs.nrows; i++) {
        zx_rowset_row(&rs, i, v);
        CHECK(v[0].u.d >= -1e308 && v[0].u.d <= 1e308);
    }
    zx_rowset_free(&rs);
    zx_gen_template_free(&t);
}

static void test_rate(void)
{
    uint64_t r = 99;
    CHECK(zx_gen_rate_parse("max", &r, err, sizeof(err)) == 0 && r == 0);
    CHECK(zx_gen_rate_parse("10000/s", &r, err, sizeof(err)) == 0 && r == 10000);
    CHECK(zx_gen_rate_parse("5 / s", &r, err, sizeof(err)) == 0 && r == 5);
    CHECK(zx_gen_rate_parse("100000000/s", &r, err, sizeof(err)) == 0 && r == 100000000);
    const char *bad[] = {"", "0/s", "100000001/s", "99999999999999999999999/s", "10",
                         "10/m", "-1/s", "fast", "10/s ", "/s", "MAX", NULL};
    for (int i = 0; bad[i]; i++) {
        err[0] = '\0';
        CHECK(zx_gen_rate_parse(bad[i], &r, err, sizeof(err)) < 0);
        CHECK(strstr(err, "`rate` wants `max` or N/s") != NULL);
    }
    CHECK(zx_gen_rate_parse(NULL, &r, err, sizeof(err)) < 0);
}

static void test_pace(void)
{
    zx_gen_pace p;
    int64_t t0 = 5000000;
    zx_gen_pace_start(&p, 0, t0);
    CHECK(zx_gen_pace_due(&p, t0, 777) == 777);
    CHECK(zx_gen_pace_wait_us(&p, t0, 10) == 0);

    zx_gen_pace_start(&p, 1000, t0);   /* one row per ms */
    CHECK(zx_gen_pace_due(&p, t0, 1000000) == 0);
    CHECK(zx_gen_pace_wait_us(&p, t0, 10) == 10000);
    CHECK(zx_gen_pace_due(&p, t0 + 10000, 1000000) == 10);
    CHECK(zx_gen_pace_due(&p, t0 + 10000, 4) == 4);
    zx_gen_pace_made(&p, 10);
    CHECK(zx_gen_pace_due(&p, t0 + 10000, 1000000) == 0);
    CHECK(zx_gen_pace_wait_us(&p, t0 + 10000, 5) == 5000);
    CHECK(zx_gen_pace_wait_us(&p, t0 + 16000, 5) == 0);
    /* in one second, exactly the rate */
    CHECK(zx_gen_pace_due(&p, t0 + 1000000, 1000000) == 990);
    zx_gen_pace_made(&p, 990);
    /* ten seconds behind: one second owed, not ten */
    CHECK(zx_gen_pace_due(&p, t0 + 11000000, 1000000) == 1000);
    zx_gen_pace_made(&p, 1000);
    CHECK(zx_gen_pace_due(&p, t0 + 11000000, 1000000) == 0);
    CHECK(zx_gen_pace_due(&p, t0 + 11500000, 1000000) == 500);

    /* the highest rate over a long time does not overflow */
    zx_gen_pace_start(&p, ZX_GEN_MAX_RATE, 0);
    int64_t year = 365LL * 86400 * 1000000;
    zx_gen_pace_made(&p, (uint64_t)ZX_GEN_MAX_RATE * 365 * 86400 - 7);
    CHECK(zx_gen_pace_due(&p, year, UINT64_MAX) == 7);
    /* a clock that went back: nothing due, no wrap */
    zx_gen_pace_start(&p, 10, t0);
    CHECK(zx_gen_pace_due(&p, t0 - 1000000, 100) == 0);
}

int main(void)
{
    test_parse_ok();
    test_parse_errors();
    test_rng();
    test_rows();
    test_rate();
    test_pace();
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
