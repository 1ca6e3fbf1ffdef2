/*
 * test_json_fast.c — the fast parser (common/json_fast.h) against its oracle
 * (zx_json_rows_parse, jansson): a list of tricky inputs with the expected
 * outcome, limits, reals written many ways, then a seeded generator + byte
 * mutator (ZX_JSON_FAST_ITERS inputs, default 300000; ZX_JSON_FAST_SEED
 * picks another seed).  Rule checked on every input: when the fast path
 * accepts, jansson accepts too and both rowsets are identical (columns,
 * types, every cell, string bytes, doubles bitwise); when jansson refuses,
 * the fast path refuses.  Ends with a throughput figure (printed, never
 * checked; ZX_JSON_FAST_BENCH=<events>, 0 skips it).  Must not depend on
 * timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json_fast.h"
#include "common/json_rows.h"
#include "common/timefmt.h"

#include "tests/unit/check.h"

static zx_rowset rs_fast, rs_ref;
static unsigned long n_same, n_both_fail, n_declined;

/* "" when a and b hold the same columns, rows and cells; else what differs. */
static const char *rowset_diff(const zx_rowset *a, const zx_rowset *b)
{
    if (a->ncols != b->ncols)
        return "column count";
    for (uint32_t c = 0; c < a->ncols; c++) {
        if (a->cols[c].name_len != b->cols[c].name_len ||
            memcmp(a->cols[c].name, b->cols[c].name, a->cols[c].name_len + 1) != 0)
            return "column name";
        if (a->cols[c].type != b->cols[c].type)
            return "column type";
    }
    if (a->nrows != b->nrows || a->ncells != b->ncells)
        return "row or cell count";
    for (uint32_t r = 0; r <= a->nrows; r++)
        if (a->nrows && a->row_start[r] != b->row_start[r])
            return "row bounds";
    for (uint64_t i = 0; i < a->ncells; i++) {
        const zx_cell *x = &a->cells[i], *y = &b->cells[i];
        if (x->col != y->col || x->v.type != y->v.type)
            return "cell column or type";
        switch (x->v.type) {
        case ZX_T_INT:
            if (x->v.u.i != y->v.u.i)
                return "integer value";
            break;
        case ZX_T_REAL:
            if (memcmp(&x->v.u.d, &y->v.u.d, sizeof(double)) != 0)
                return "real value";
            break;
        case ZX_T_BOOL:
            if (x->v.u.b != y->v.u.b)
                return "boolean value";
            break;
        case ZX_T_TIMESTAMP:
            if (x->v.u.i != y->v.u.i)
                return "timestamp value";
            /* fall through */
        case ZX_T_TEXT:
        case ZX_T_JSON:
            if (x->v.len != y->v.len || memcmp(x->v.s, y->v.s, x->v.len + 1) != 0)
                return "string value";
            break;
        }
    }
    return "";
}

enum { ANY, ACCEPT, REJECT, DECLINE };
static const char *const outcome_name[] = {"any", "accept", "reject", "decline"};

static void show(const char *what, const char *body, size_t len)
{
    printf("  %s: \"", what);
    for (size_t i = 0; i < len && i < 400; i++) {
        unsigned char c = (unsigned char)body[i];
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\')
            putchar(c);
        else
            printf("\\x%02x", c);
    }
    printf("\"%s\n", len > 400 ? "..." : "");
}

/* Both parsers on the same bytes (copied so ASan sees any over-read),
 * optionally after a `prefix` body already parsed into both rowsets. */
static int differ(int line, const char *body, size_t len, zx_body_format f,
                  int expect, const char *prefix)
{
    char *b = malloc(len ? len : 1);
    memcpy(b, body, len);
    zx_rowset_reset(&rs_fast);
    zx_rowset_reset(&rs_ref);
    if (prefix) {
        size_t pl = strlen(prefix);
        if (zx_json_rows_parse(prefix, pl, ZX_BODY_NDJSON, &rs_fast, NULL) < 0 ||
            zx_json_rows_parse(prefix, pl, ZX_BODY_NDJSON, &rs_ref, NULL) < 0)
            abort();
    }
    zx_json_err err;
    int nf = zx_json_fast_parse(b, len, f, &rs_fast);
    int nr = zx_json_rows_parse(b, len, f, &rs_ref, &err);
    int got, bad = 0;
    const char *why = "";
    if (nf >= 0) {
        got = ACCEPT;
        if (nr != nf) {
            bad = 1;
            why = nr < 0 ? err.msg : "row count";
        } else if (*(why = rowset_diff(&rs_fast, &rs_ref))) {
            bad = 1;
        }
    } else {
        got = nr < 0 ? REJECT : DECLINE;
        if (nf != -1) {
            bad = 1;
            why = "fast returned < -1";
        }
    }
    n_same += got == ACCEPT && !bad;
    n_both_fail += got == REJECT;
    n_declined += got == DECLINE;
    if (!bad && expect != ANY && expect != got) {
        bad = 1;
        why = outcome_name[got];
    }
    if (bad) {
        printf("%s:%d: fast %d, jansson %d (%s), expected %s: %s\n", __FILE__,
               line, nf, nr, nr < 0 ? err.msg : "ok", outcome_name[expect], why);
        show(f == ZX_BODY_NDJSON ? "ndjson" : "json", body, len);
        failures++;
    }
    free(b);
    return got;
}

#define J(s, e) differ(__LINE__, s, sizeof(s) - 1, ZX_BODY_JSON, e, NULL)
#define N(s, e) differ(__LINE__, s, sizeof(s) - 1, ZX_BODY_NDJSON, e, NULL)

static void hand_cases(void)
{
    /* formats */
    J("{\"a\":1}", ACCEPT);
    J("  \r\n\t{ \"a\" : 1 , \"b\" :\t2 }\r\n ", ACCEPT);
    J("[]", ACCEPT);
    J(" [ ] ", ACCEPT);
    J("{}", ACCEPT);
    J("[{},{}]", ACCEPT);
    J("[{\"a\":1}, {\"b\":\"x\"} ,{\"a\":2.5}]", ACCEPT);
    J("", REJECT);
    J("   \n", REJECT);
    J("[1]", REJECT);
    J("[{},]", REJECT);
    J("{\"a\":1,}", REJECT);
    J("{\"a\":1}{\"b\":2}", REJECT);
    J("{\"a\":1} x", REJECT);
    J("\xEF\xBB\xBF{\"a\":1}", REJECT);
    J("\"x\"", REJECT);
    J("{\"a\" 1}", REJECT);
    J("{'a':1}", REJECT);
    J("{\"a\":1", REJECT);
    N("{\"a\":1}\n{\"b\":2}\n", ACCEPT);
    N("{\"a\":1}\r\n\r\n  \t\r\n{\"b\":2}", ACCEPT);
    N("\n\n{\"a\":1}\n\n", ACCEPT);
    N("{\"a\":1}\n[1]\n", REJECT);
    N("{\"a\":\n1}", REJECT);
    N("\n \r\n", REJECT);
    N("{\"a\":1} {\"b\":2}", REJECT);
    N("{\"a\":1}\n\x0b\n", REJECT);
    N("{\"a\":1}\r", ACCEPT);
    /* literals and numbers */
    J("{\"t\":true,\"f\":false,\"n\":null}", ACCEPT);
    J("{\"t\":tru}", REJECT);
    J("{\"t\":truex}", REJECT);
    J("{\"t\":nul}", REJECT);
    J("{\"a\":-0,\"b\":-0.0,\"c\":0.1,\"d\":1E+2,\"e\":1e-2,\"f\":1e308}", ACCEPT);
    J("{\"a\":-9223372036854775808,\"b\":9223372036854775807}", ACCEPT);
    J("{\"a\":9223372036854775808}", DECLINE);
    J("{\"a\":-9223372036854775809}", DECLINE);
    J("{\"a\":1e309}", DECLINE);
    J("{\"a\":-1e309}", DECLINE);
    J("{\"a\":1e-400,\"b\":4.9e-324,\"c\":2.2250738585072011e-308}", ACCEPT);
    J("{\"a\":123456789012345678901234.5,\"b\":0.30000000000000004441}", ACCEPT);
    J("{\"a\":9007199254740993.0,\"b\":1e22,\"c\":1e23,\"d\":3e-22}", ACCEPT);
    J("{\"a\":0.000000000000000000000000000001}", ACCEPT);
    J("{\"a\":01}", REJECT);
    J("{\"a\":-01}", REJECT);
    J("{\"a\":00}", REJECT);
    J("{\"a\":1.}", REJECT);
    J("{\"a\":.5}", REJECT);
    J("{\"a\":+1}", REJECT);
    J("{\"a\":-}", REJECT);
    J("{\"a\":1e}", REJECT);
    J("{\"a\":1e+}", REJECT);
    J("{\"a\":0x10}", REJECT);
    J("{\"a\":NaN}", REJECT);
    J("{\"a\":Infinity}", REJECT);
    J("{\"a\":1,\"a\":2.5}", DECLINE);
    /* strings */
    J("{\"s\":\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u00C9 \\u20AC\"}", ACCEPT);
    J("{\"s\":\"\\uD83D\\uDE00 \\ud83d\\ude00 caf\xC3\xA9 \xF0\x9F\x98\x80\"}", ACCEPT);
    J("{\"s\":\"\\uD83D\"}", REJECT);
    J("{\"s\":\"\\uDE00\"}", REJECT);
    J("{\"s\":\"\\uD83D\\u0041\"}", REJECT);
    J("{\"s\":\"\\uD83Dx\"}", REJECT);
    J("{\"s\":\"a\\u0000b\"}", REJECT);
    J("{\"s\":\"\\u000\"}", REJECT);
    J("{\"s\":\"\\x41\"}", REJECT);
    J("{\"s\":\"\\'\"}", REJECT);
    J("{\"s\":\"tab\there\"}", REJECT);
    J("{\"s\":\"a\0b\"}", REJECT);
    J("{\"s\":\"\x7F\"}", ACCEPT);
    J("{\"s\":\"\xC3\"}", REJECT);
    J("{\"s\":\"\xC0\x80\"}", REJECT);
    J("{\"s\":\"\xED\xA0\x80\"}", REJECT);
    J("{\"s\":\"\xF4\x90\x80\x80\"}", REJECT);
    J("{\"s\":\"\xE0\x80\xAF\"}", REJECT);
    J("{\"s\":\"\xFF\"}", REJECT);
    J("{\"s\":\"unterminated}", REJECT);
    J("{\"ts\":\"2024-02-29T12:00:00.123456789+01:30\",\"t2\":\"2024-02-30T00:00:00Z\"}", ACCEPT);
    J("{\"ts\":\"2024-01-01T00:00:00\\u005A\",\"x\":\"2024-01-01 00:00:60Z\"}", ACCEPT);
    /* keys */
    J("{\"User Name\":1,\"user-name\":2,\"USER_NAME\":3,\"user_name_2\":4}", ACCEPT);
    J("{\"a\":1,\"a_2\":2,\"A\":3}", ACCEPT);
    J("{\"\":1,\"  \":2,\"1st\":3,\"_key\":4,\"_zx\":5,\"caf\xC3\xA9\":6}", ACCEPT);
    J("{\"\\u0061\":1,\"a\":2}", DECLINE);
    J("{\"a\":1,\"\\u0041\":2,\"\\n\":3,\"\\\"\":4}", ACCEPT);
    J("{\"k\\u0000\":1}", REJECT);
    J("{\"x\":1,\"y\":2,\"x\":3}", DECLINE);
    J("[{\"a\":1,\"A\":2},{\"A\":3,\"a\":4}]", ACCEPT);
    J("{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1,"
      "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\":2}", ACCEPT);
    /* nested values */
    J("{\"o\":{\"b\":[1,2.5,\"x\",true,null,{}],\"c\":[]},\"e\":{}}", ACCEPT);
    J("{\"o\" : { \"b\" : [ 1 , -0 , 1E2 , 0.1, -1e-7, 1e300, 5e-324 ] } }", ACCEPT);
    J("{\"o\":[\"\\u0001\\u001f\\u007f\\/\\b\\f\\n\\r\\t\\\"\\\\\\u000b\\u00e9\\ud83d\\ude00\"]}", ACCEPT);
    J("{\"o\":[\"caf\xC3\xA9\",\"a/b\",\"\x7F\"]}", ACCEPT);
    J("{\"o\":{\"k\":1,\"k\":2}}", DECLINE);
    J("{\"o\":{\"k\":1,\"\\u006b\":2}}", DECLINE);
    J("{\"o\":[{\"k\":1},{\"k\":2}],\"p\":{\"k\":{\"k\":1}}}", ACCEPT);
    J("{\"o\":[1,]}", REJECT);
    J("{\"o\":{\"a\":1,}}", REJECT);
    J("{\"o\":[\"\\uD800\"]}", REJECT);
    J("{\"o\":[9223372036854775808]}", DECLINE);
    J("{\"o\":[1e999]}", DECLINE);
    /* out of range in both directions: kept as literals by jansson only */
    J("{\"a\":1e999999,\"b\":-1e999999}", DECLINE);
    J("{\"a\":18446744073709551616,\"b\":-18446744073709551617}", DECLINE);
    J("{\"a\":1.7976931348623159e308}", DECLINE);
    J("{\"a\":1.7976931348623157e308,\"b\":-1.7976931348623157e308}", ACCEPT);
    N("{\"a\":1}\n{\"a\":-9223372036854775809}\n", DECLINE);
    J("{\"o\":{\"k\":-1e999999,\"s\":\"1e999999\"}}", DECLINE);
    J("{\"a\":1e999999,\"s\":\"\\u0000\"}", REJECT);
    J("1e999999", REJECT);
    J("[1e999999]", REJECT);
    N("-9223372036854775809\n", REJECT);
    J("{\"o\":{\"a\" 1}}", REJECT);
    J("{\"o\":[1}", REJECT);
}

/* Nesting depth limit, column limit and prior rows in the rowset. */
static void limit_cases(void)
{
    static char b[200000];
    for (int depth = 62; depth <= 66; depth++) {
        size_t o = (size_t)sprintf(b, "{\"a\":");
        for (int i = 0; i < depth; i++)
            o += (size_t)sprintf(b + o, "%s", i % 2 ? "{\"k\":" : "[");
        b[o++] = '0';
        for (int i = depth - 1; i >= 0; i--)
            b[o++] = i % 2 ? '}' : ']';
        b[o++] = '}';
        differ(__LINE__, b, o, ZX_BODY_JSON, depth <= 63 ? ACCEPT : REJECT, NULL);
    }
    for (int ncol = 999; ncol <= 1001; ncol++) {
        size_t o = 0;
        b[o++] = '{';
        for (int i = 0; i < ncol; i++)
            o += (size_t)sprintf(b + o, "%s\"c%d\":%d", i ? "," : "", i, i);
        b[o++] = '}';
        differ(__LINE__, b, o, ZX_BODY_JSON, ncol <= 1000 ? ACCEPT : REJECT, NULL);
        /* the same columns over many NDJSON lines, and one collision too many */
        o = 0;
        for (int i = 0; i < ncol; i++)
            o += (size_t)sprintf(b + o, "{\"c%d\":%d,\"C%d\":1}\n", i % 500, i, i % 500);
        differ(__LINE__, b, o, ZX_BODY_NDJSON, ANY, NULL);
    }
    const char *prefix = "{\"a\":1,\"b\":\"x\",\"a_2\":true}\n{\"c\":1.5}";
    differ(__LINE__, "{\"A\":2,\"a\":3,\"b\":4,\"c\":5,\"d\":null}",
           sizeof("{\"A\":2,\"a\":3,\"b\":4,\"c\":5,\"d\":null}") - 1, ZX_BODY_JSON,
           ACCEPT, prefix);
    /* long strings and a long nested value (beyond the 32 KiB scratch) */
    size_t o = (size_t)sprintf(b, "{\"s\":\"");
    for (int i = 0; i < 50000; i++)
        b[o++] = (char)('a' + i % 26);
    o += (size_t)sprintf(b + o, "\",\"o\":[");
    for (int i = 0; i < 9000; i++)
        o += (size_t)sprintf(b + o, "%s%d", i ? "," : "", i);
    o += (size_t)sprintf(b + o, "]}");
    differ(__LINE__, b, o, ZX_BODY_JSON, DECLINE, NULL);
}

/* Reals written many ways, at the top level and nested (where they are
 * re-printed as %.17g): the fast strtod shortcut must agree bit for bit. */
static void real_cases(unsigned n)
{
    static const char *const fmt[] = {"%.*g", "%.*e", "%.*f", "%.*E"};
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (unsigned i = 0; i < n; i++) {
        char num[400], body[1400];
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double d;
        uint64_t bits = x;
        memcpy(&d, &bits, sizeof(d));
        if (d != d || d - d != 0 || (i % 3 && (d > 1e30 || d < -1e30 || (d > -1e-30 && d < 1e-30))))
            d = (double)(int64_t)(x >> (x % 64)) / (double)(1 + x % 100000);
        int k = (int)(x % 4);
        if (k == 2 && (d > 1e20 || d < -1e20))
            k = 0;
        snprintf(num, sizeof(num), fmt[k], (int)(1 + (x >> 8) % 19), d);
        if (!strpbrk(num, ".eE"))
            strcat(num, ".0");
        int len = snprintf(body, sizeof(body), "{\"r\":%s,\"o\":[%s,{\"x\":%s}]}", num, num, num);
        differ(__LINE__, body, (size_t)len, ZX_BODY_JSON,
               strlen(num) > 120 ? DECLINE : ACCEPT, NULL);
    }
}

/* ---- seeded generator + mutator ----------------------------------------- */

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static unsigned pick(unsigned n)
{
    return (unsigned)(rnd() % n);
}

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void puts_(buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static int ndjson_mode;

static void ws(buf *b)
{
    static const char *const w[] = {" ", "\t", "\r", "  ", "\n", "\r\n"};
    if (pick(6) == 0)
        puts_(b, w[pick(ndjson_mode ? 4 : 6)]);
}

static const char *const keys[] = {
    "id", "user", "User", "USER", "Event Type", "event-type", "event_type", "ts",
    "a", "A", "a_2", "b", "", " ", "1st", "_key", "_zxid", "caf\xC3\xA9", "caf\xC3\xA8",
    "\\u0061", "x\\ny", "\\\"q\\\"", "\\u00e9t\\u00e9", "k\\/k", "\\ud83d\\ude00",
    "n", "s", "o", "meta", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
};
static const char *const nums[] = {   /* valid, then invalid from NUMS_OK */
    "0", "-0", "1", "-1", "42", "-0.0", "0.1", "1E+2", "1e-2", "2.5", "1e308",
    "1e-400", "4.9e-324", "9223372036854775807", "-9223372036854775808",
    "123456789012345678901234", "3.141592653589793238462643383279",
    "1.7976931348623157e308", "6.02214076e23", "0.30000000000000004", "1e22", "1e23",
    "9007199254740993", "9007199254740993.0", "123.456e-7", "5E-324", "-2.5e-3",
    "1e309", "-1e309", "9223372036854775808", "-9223372036854775809",
    "00", "01", "1.", ".5", "-", "1e", "+1",
};
#define NUMS_OK 27
static const char *const strs[] = {   /* valid, then invalid from STRS_OK */
    "hello", "", "caf\xC3\xA9", "\xF0\x9F\x98\x80", "a\\\"b", "\\\\", "\\/", "\\b\\f\\n\\r\\t",
    "\\u0001", "\\u001F", "\\u007f", "\\u00e9", "\\uD83D\\uDE00", "2025-11-24T10:00:00Z",
    "2025-11-24T10:00:00.123456+02:00", "2025-02-29T00:00:00Z",
    "2024-02-29 23:59:59.9999999z", "2025-11-24T10:00:00\\u005a", "1999-12-31T23:59:60Z",
    "x\x7Fy", "a/b", "\\u20ac \\u20AC", "long string with spaces and words 0123456789",
    "\\uD83D", "\\uDE00", "\\u0000", "\xC3(", "\xED\xA0\x80", "tab\there", "\\x",
};
#define STRS_OK 23
/* out of range (jansson keeps the literal, the fast path declines) */
static const char *const far[] = {
    "9223372036854775808", "-9223372036854775809", "18446744073709551616",
    "-18446744073709551617", "99999999999999999999", "1e999999", "-1e999999",
    "1E+400", "-0.5e400", "1.7976931348623159e308",
};
static const char *const lits[] = {"true", "false", "null"};

static void gen_value(buf *b, int depth);

static void gen_object(buf *b, int depth, int nkeys)
{
    unsigned used[8];
    puts_(b, "{");
    ws(b);
    for (int i = 0; i < nkeys; i++) {
        unsigned k;
        if (i) {
            ws(b);
            puts_(b, ",");
            ws(b);
        }
        for (int again = 1; again;) {   /* a repeated key only now and then */
            k = pick(sizeof(keys) / sizeof(keys[0])) * 64;
            k += pick(3) ? 63 : pick(40);
            again = 0;
            for (int j = 0; j < i && j < 8; j++)
                again |= used[j] == k && pick(16);
        }
        if (i < 8)
            used[i] = k;
        puts_(b, "\"");
        puts_(b, keys[k / 64]);
        if (k % 64 != 63) {
            char t[16];
            snprintf(t, sizeof(t), "%u", k % 64);
            puts_(b, t);
        }
        puts_(b, "\"");
        ws(b);
        puts_(b, ":");
        ws(b);
        gen_value(b, depth + 1);
    }
    ws(b);
    puts_(b, "}");
}

static void gen_value(buf *b, int depth)
{
    unsigned k = pick(depth > 6 ? 9 : 11);
    char t[64];
    switch (k) {
    case 0: case 1: case 2:
        puts_(b, "\"");
        for (unsigned i = 0, n = pick(4); i < n; i++)
            puts_(b, strs[pick(pick(30) ? STRS_OK : sizeof(strs) / sizeof(strs[0]))]);
        puts_(b, "\"");
        break;
    case 3: case 4:
        if (pick(12) == 0)
            puts_(b, far[pick(sizeof(far) / sizeof(far[0]))]);
        else
            puts_(b, nums[pick(pick(20) ? NUMS_OK : sizeof(nums) / sizeof(nums[0]))]);
        break;
    case 5:
    {
        unsigned sh = pick(64);
        long long v = (long long)(rnd() >> sh);
        snprintf(t, sizeof(t), "%lld", pick(2) ? v : -v);
    }
        puts_(b, t);
        break;
    case 6: {
        uint64_t bits = rnd();
        double d;
        memcpy(&d, &bits, sizeof(d));
        if (d != d || d - d != 0)
            d = 1.5;
        const char *f = pick(2) ? "%.17g" : "%.6g";
        snprintf(t, sizeof(t), f, pick(3) ? d * 1e-300 : d);
        puts_(b, t);
        break;
    }
    case 7: case 8:
        puts_(b, lits[pick(3)]);
        break;
    case 9:
        gen_object(b, depth, (int)pick(4));
        break;
    default:
        puts_(b, "[");
        for (unsigned i = 0, n = pick(4); i < n; i++) {
            ws(b);
            if (i)
                puts_(b, ",");
            ws(b);
            gen_value(b, depth + 1);
        }
        ws(b);
        puts_(b, "]");
    }
}

static zx_body_format gen_body(buf *b)
{
    b->n = 0;
    ndjson_mode = pick(2);
    if (ndjson_mode) {
        for (unsigned i = 0, n = 1 + pick(5); i < n; i++) {
            if (pick(4) == 0)
                puts_(b, pick(2) ? "\n" : " \t\r\n");
            gen_object(b, 1, (int)pick(8));
            if (i + 1 < n || pick(2))
                puts_(b, pick(3) ? "\n" : "\r\n");
        }
        return ZX_BODY_NDJSON;
    }
    ws(b);
    if (pick(2)) {
        gen_object(b, 1, (int)pick(8));
    } else {
        puts_(b, "[");
        for (unsigned i = 0, n = pick(5); i < n; i++) {
            ws(b);
            if (i)
                puts_(b, ",");
            ws(b);
            gen_object(b, 1, (int)pick(6));
        }
        ws(b);
        puts_(b, "]");
    }
    ws(b);
    return ZX_BODY_JSON;
}

static void mutate(buf *b)
{
    static const char special[] = "{}[]\",:\\ 0123456789eE-+.tfnu\n\r\t\x00\xff\xc3\xa9\x80";
    for (unsigned m = 0, n = 1 + pick(3); m < n && b->n > 0; m++) {
        size_t at = pick((unsigned)b->n);
        switch (pick(6)) {
        case 0:
            b->p[at] = (char)rnd();
            break;
        case 1:
            b->p[at] = special[pick(sizeof(special) - 1)];
            break;
        case 2:
            memmove(b->p + at, b->p + at + 1, b->n - at - 1);
            b->n--;
            break;
        case 3:
            put(b, " ", 1);
            memmove(b->p + at + 1, b->p + at, b->n - at - 1);
            b->p[at] = special[pick(sizeof(special) - 1)];
            break;
        case 4: {
            size_t len = 1 + pick(12);
            if (at + len > b->n)
                len = b->n - at;
            char tmp[16];
            memcpy(tmp, b->p + at, len);
            size_t to = pick((unsigned)b->n);
            put(b, tmp, len);
            memmove(b->p + to + len, b->p + to, b->n - len - to);
            memcpy(b->p + to, tmp, len);
            break;
        }
        default:
            b->n = at;
        }
    }
}

static void random_cases(unsigned long iters)
{
    buf b = {0};
    unsigned long accepted_valid = 0;
    for (unsigned long i = 0; i < iters; i++) {
        zx_body_format f = gen_body(&b);
        int mutated = pick(2);
        if (mutated)
            mutate(&b);
        const char *prefix = pick(8) == 0 ? "{\"a\":1,\"user\":\"x\",\"id_2\":2.5}" : NULL;
        int got = differ(__LINE__, b.p ? b.p : "", b.n, f, ANY, prefix);
        accepted_valid += !mutated && got == ACCEPT;
        if (failures > 20)
            break;
    }
    printf("random: %lu inputs, %lu unmutated ones accepted by the fast path\n",
           iters, accepted_valid);
    CHECK(accepted_valid > iters / 20);
    free(b.p);
}

/* ---- throughput (printed, not checked) ----------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Same event shape as tests/bench/json_libs.c (~200 bytes each). */
static char *bench_events(size_t n, size_t *len)
{
    static const char *const w[] = {"alpha", "bravo", "charlie", "delta", "echo",
                                    "foxtrot", "golf", "hotel"};
    buf b = {0};
    for (size_t i = 0; i < n; i++) {
        char ts[ZX_TS_BUFSZ], e[512], meta[128] = "";
        zx_ts_format(INT64_C(1764000000000000) + (int64_t)(rnd() % 86400000000ull), ts);
        if (i % 4 == 0)
            snprintf(meta, sizeof(meta), ",\"meta\":{\"src\":\"%s\",\"tags\":[\"%s\",%u]}",
                     w[pick(8)], w[pick(8)], pick(10));
        int k = snprintf(e, sizeof(e),
            "{\"id\":%zu,\"user\":\"%s_%u\",\"Event Type\":\"%s\",\"ts\":\"%s\","
            "\"amount\":%.2f,\"ok\":%s,\"count\":%u,\"country\":\"%s\","
            "\"session-id\":\"%016llx\"%s}\n",
            i, w[pick(8)], pick(100000), w[pick(8)], ts, (double)pick(1000000) / 100.0,
            pick(2) ? "true" : "false", pick(1000), w[pick(8)],
            (unsigned long long)rnd(), meta);
        put(&b, e, (size_t)k);
    }
    *len = b.n;
    return b.p;
}

static void bench(size_t events)
{
    size_t len;
    char *body = bench_events(events, &len);
    for (int which = 0; which < 2; which++) {
        double best = 1e9;
        for (int run = 0; run < 3; run++) {
            double t0 = now_s();
            /* 1000-line bodies, as a push would send them */
            size_t rows = 0;
            for (const char *p = body, *end = body + len; p < end;) {
                const char *q = p;
                for (int l = 0; l < 1000 && q < end; l++)
                    q = (const char *)memchr(q, '\n', (size_t)(end - q)) + 1;
                zx_rowset_reset(&rs_fast);
                int n = which ? zx_json_rows_parse(p, (size_t)(q - p), ZX_BODY_NDJSON,
                                                   &rs_fast, NULL)
                              : zx_json_fast_parse(p, (size_t)(q - p), ZX_BODY_NDJSON,
                                                   &rs_fast);
                CHECK(n == 1000 || (n > 0 && q == end));
                rows += n > 0 ? (size_t)n : 0;
                p = q;
            }
            double t = now_s() - t0;
            CHECK(rows == events);
            if (t < best)
                best = t;
        }
        printf("bench: %-7s %9.0f events/s  %6.1f MB/s  (%zu events, %.0f bytes each)\n",
               which ? "jansson" : "fast", (double)events / best,
               (double)len / best / 1e6, events, (double)len / (double)events);
    }
    free(body);
}

int main(void)
{
    const char *it = getenv("ZX_JSON_FAST_ITERS");
    const char *bn = getenv("ZX_JSON_FAST_BENCH");
    const char *seed = getenv("ZX_JSON_FAST_SEED");
    if (seed && strtoull(seed, NULL, 10))
        rng = strtoull(seed, NULL, 10);
    zx_rowset_init(&rs_fast);
    zx_rowset_init(&rs_ref);
    hand_cases();
    limit_cases();
    real_cases(it ? (unsigned)(strtoul(it, NULL, 10) / 10) : 30000);
    random_cases(it ? strtoul(it, NULL, 10) : 300000);
    printf("differential: %lu identical, %lu rejected by both, %lu declined "
           "(valid, left to jansson)\n", n_same, n_both_fail, n_declined);
    if (!bn || strtoul(bn, NULL, 10) > 0)
        bench(bn ? strtoul(bn, NULL, 10) : 200000);
    zx_rowset_free(&rs_fast);
    zx_rowset_free(&rs_ref);
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
