/*
 * test_json_rows.c — push bodies to rows (common/json_rows.h): formats,
 * value types, key normalisation and collisions, limits, and every error
 * message with its position.  Must not depend on timing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_rows.h"

#include "tests/unit/check.h"

static zx_rowset rs;
static zx_json_err err;

/* Parse s (NUL-terminated) into a fresh rowset. */
static int parse(const char *s, zx_body_format f)
{
    zx_rowset_reset(&rs);
    return zx_json_rows_parse(s, strlen(s), f, &rs, &err);
}

/* Value of column `name` in row r (type ZX_T__COUNT if no such column). */
static zx_value cell(uint32_t r, const char *name)
{
    zx_value out = {.type = ZX_T__COUNT};
    int64_t c = zx_rowset_find_column(&rs, name, strlen(name));
    if (c < 0 || r >= rs.nrows)
        return out;
    zx_value *row = calloc(rs.ncols, sizeof(*row));
    zx_rowset_row(&rs, r, row);
    out = row[c];
    free(row);
    return out;
}

static zx_type coltype(const char *name)
{
    int64_t c = zx_rowset_find_column(&rs, name, strlen(name));
    return c < 0 ? ZX_T__COUNT : (zx_type)rs.cols[c].type;
}

/* Check that parsing fails with exactly this message and position. */
static void fails(int line, const char *body, size_t len, zx_body_format f,
                  const char *msg, uint64_t eline, uint64_t ecol, uint64_t eoff)
{
    zx_rowset_reset(&rs);
    memset(&err, 0x55, sizeof(err));
    int n = zx_json_rows_parse(body, len, f, &rs, &err);
    if (n != -1 || strcmp(err.msg, msg) != 0 || err.line != eline ||
        err.column != ecol || err.offset != eoff) {
        printf("%s:%d: got %d \"%s\" line %llu col %llu off %llu;\n"
               "    want -1 \"%s\" line %llu col %llu off %llu\n",
               __FILE__, line, n, n == -1 ? err.msg : "", (unsigned long long)err.line,
               (unsigned long long)err.column, (unsigned long long)err.offset, msg,
               (unsigned long long)eline, (unsigned long long)ecol,
               (unsigned long long)eoff);
        failures++;
    }
    CHECK(!rs.row_open);
}

#define FAILS(body, f, msg, l, c, o) fails(__LINE__, (body), strlen(body), (f), (msg), (l), (c), (o))
#define J ZX_BODY_JSON
#define ND ZX_BODY_NDJSON

static void test_types(void)
{
    const char *b =
        "{\"i\": 42, \"neg\": -7, \"r\": 2.5, \"t\": true, \"f\": false, \"n\": null,"
        " \"s\": \"caf\\u00e9\\n\", \"ts\": \"2026-11-29T18:09:25.123456Z\","
        " \"ts2\": \"2026-11-29 19:09:25+01:00\", \"notts\": \"2026-02-30T00:00:00Z\","
        " \"o\": {\"a\": [1, 2.5, \"x\"], \"b\": {}}, \"arr\": [ ], \"e\": \"\","
        " \"big\": 9223372036854775807, \"small\": -9223372036854775808}";
    CHECK(parse(b, J) == 1);
    CHECK(rs.nrows == 1);
    zx_value v = cell(0, "i");
    CHECK(v.type == ZX_T_INT && v.u.i == 42);
    CHECK(cell(0, "neg").u.i == -7);
    v = cell(0, "r");
    CHECK(v.type == ZX_T_REAL && v.u.d == 2.5);
    v = cell(0, "t");
    CHECK(v.type == ZX_T_BOOL && v.u.b == 1);
    v = cell(0, "f");
    CHECK(v.type == ZX_T_BOOL && v.u.b == 0);
    CHECK(cell(0, "n").type == ZX_T_NULL);
    CHECK(coltype("n") == ZX_T_NULL);
    v = cell(0, "s");
    CHECK(v.type == ZX_T_TEXT && v.len == 6 && memcmp(v.s, "caf\xc3\xa9\n", 7) == 0);
    v = cell(0, "ts");
    CHECK(v.type == ZX_T_TIMESTAMP && v.u.i == INT64_C(1795975765123456));
    CHECK(v.s && strcmp(v.s, "2026-11-29T18:09:25.123456Z") == 0 && v.len == 27);
    v = cell(0, "ts2");
    CHECK(v.type == ZX_T_TIMESTAMP && v.u.i == INT64_C(1795975765000000));
    CHECK(strcmp(v.s, "2026-11-29 19:09:25+01:00") == 0);
    CHECK(cell(0, "notts").type == ZX_T_TEXT);
    v = cell(0, "o");
    CHECK(v.type == ZX_T_JSON && v.s && strcmp(v.s, "{\"a\":[1,2.5,\"x\"],\"b\":{}}") == 0);
    CHECK(v.len == strlen(v.s));
    v = cell(0, "arr");
    CHECK(v.type == ZX_T_JSON && strcmp(v.s, "[]") == 0 && v.len == 2);
    v = cell(0, "e");
    CHECK(v.type == ZX_T_TEXT && v.len == 0 && v.s && v.s[0] == '\0');
    v = cell(0, "big");
    CHECK(v.type == ZX_T_INT && v.u.i == INT64_MAX);
    v = cell(0, "small");
    CHECK(v.type == ZX_T_INT && v.u.i == INT64_MIN);
    /* column order follows key order */
    CHECK(rs.ncols == 15 && strcmp(rs.cols[0].name, "i") == 0 &&
          strcmp(rs.cols[14].name, "small") == 0);
    /* values live in the rowset arena, not in the body */
    CHECK(cell(0, "s").s < b || cell(0, "s").s > b + strlen(b));
}

/* 1 when v is a number kept as text whose literal is exactly lit. */
static int numtext(zx_value v, const char *lit)
{
    return v.type == ZX_T_JSON && zx_value_is_number_text(&v) && v.len == strlen(lit) &&
           memcmp(v.s, lit, v.len + 1) == 0;
}

static void test_big_numbers(void)
{
    /* beyond int64 or double, in both directions: the literal, typed REAL */
    CHECK(parse("{\"a\": 9223372036854775808, \"b\": -9223372036854775809,"
                " \"c\": 1e400, \"d\": 123, \"s\": \"99999999999999999999\","
                " \"e\": -1e999999, \"f\": 18446744073709551616, \"g\": 1E+999999,"
                " \"h\": -0.5e400, \"i\": 9223372036854775807, \"j\": -9223372036854775808}",
                J) == 1);
    zx_value v = cell(0, "a");
    CHECK(numtext(v, "9223372036854775808"));
    CHECK(strcmp(zx_value_type_name(&v), "integer") == 0);
    CHECK(zx_value_column_type(&v) == ZX_T_REAL);
    CHECK(numtext(cell(0, "b"), "-9223372036854775809"));
    v = cell(0, "c");
    CHECK(numtext(v, "1e400"));
    CHECK(strcmp(zx_value_type_name(&v), "real") == 0);
    CHECK(numtext(cell(0, "e"), "-1e999999"));
    CHECK(numtext(cell(0, "f"), "18446744073709551616"));
    CHECK(numtext(cell(0, "g"), "1E+999999"));
    CHECK(numtext(cell(0, "h"), "-0.5e400"));
    for (const char *k = "abcefgh"; *k; k++) {
        char name[2] = {*k, 0};
        CHECK(coltype(name) == ZX_T_REAL);     /* never TEXT because of a number */
    }
    CHECK(cell(0, "d").type == ZX_T_INT && cell(0, "d").u.i == 123);
    CHECK(cell(0, "i").type == ZX_T_INT && cell(0, "i").u.i == INT64_MAX);
    CHECK(cell(0, "j").type == ZX_T_INT && cell(0, "j").u.i == INT64_MIN);
    v = cell(0, "s");
    CHECK(v.type == ZX_T_TEXT && strcmp(v.s, "99999999999999999999") == 0);
    CHECK(!zx_value_is_number_text(&v));

    /* an integer beyond double range: its literal, 400 digits */
    char big[600] = "{\"x\": ";
    size_t o = strlen(big);
    memset(big + o, '7', 400);
    strcpy(big + o + 400, "}");
    CHECK(parse(big, J) == 1);
    v = cell(0, "x");
    CHECK(v.type == ZX_T_JSON && v.len == 400 && v.s[0] == '7' && v.s[399] == '7' &&
          v.s[400] == '\0');
    CHECK(coltype("x") == ZX_T_REAL);

    /* nested: the literal as written, strings that look like marks kept */
    CHECK(parse("{\"o\": {\"k\": 18446744073709551616, \"l\": [1e999999, -9223372036854775809],"
                " \"s\": \"1e999999\", \"t\": \"\\\\u00001\", \"u\": \"\\\"\\\\u0000\"}}",
                J) == 1);
    v = cell(0, "o");
    CHECK(v.type == ZX_T_JSON && !zx_value_is_number_text(&v) &&
          strcmp(v.s, "{\"k\":18446744073709551616,\"l\":[1e999999,-9223372036854775809],"
                      "\"s\":\"1e999999\",\"t\":\"\\\\u00001\",\"u\":\"\\\"\\\\u0000\"}") == 0);
    CHECK(parse("{\"o\": [1e999]}", J) == 1 && strcmp(cell(0, "o").s, "[1e999]") == 0);

    /* NDJSON lines with big numbers; an INT column widens to REAL */
    CHECK(parse("{\"a\": 1}\n{\"a\": 99999999999999999999}\n", ND) == 2);
    CHECK(coltype("a") == ZX_T_REAL);
    CHECK(cell(0, "a").type == ZX_T_INT && numtext(cell(1, "a"), "99999999999999999999"));
    CHECK(parse("{\"a\": \"x\"}\n{\"a\": 1e999}\n", ND) == 2);
    CHECK(coltype("a") == ZX_T_TEXT);          /* the type seen first stays */

    /* an error after a patched number reports its place in the original */
    FAILS("{\"a\": 99999999999999999999, \"b\": x}", J,
          "at byte 33 (line 1, column 34): invalid token near 'x'", 1, 34, 33);
    FAILS("{\"a\":1}\n{\"a\": 99999999999999999999, \"b\": x}", ND,
          "line 2: invalid token near 'x'", 2, 34, 8 + 33);
    FAILS("{\"a\": -1e999, \"b\": 1e999, \"c\": x}", J,
          "at byte 31 (line 1, column 32): invalid token near 'x'", 1, 32, 31);
    /* a \u0000 of the client's is still refused, at its own place */
    FAILS("{\"a\": 1e999, \"s\": \"x\\u0000y\"}", J,
          "at byte 27 (line 1, column 28): string contains \\u0000 (NUL), which is not accepted",
          1, 28, 27);
    FAILS("{\"s\": \"x\\u0000y\", \"a\": 1e999}", J,
          "at byte 15 (line 1, column 16): string contains \\u0000 (NUL), which is not accepted",
          1, 16, 15);
    FAILS("{\"a\\u0000\": 1e999}", J,
          "at byte 9 (line 1, column 10): string contains \\u0000 (NUL), which is not accepted",
          1, 10, 9);
    /* a body, line or element that is an out-of-range number is a number */
    FAILS("1e999999", J,
          "the body is a number; it must be a JSON object or an array of JSON objects", 0, 0, 0);
    FAILS("[{\"a\":1}, -99999999999999999999]", J,
          "element 1 of the array is a number; each event must be a JSON object", 0, 0, 0);
    FAILS("{\"a\":1}\n  1e999\n", ND, "line 2 is a number; each line must be a JSON object",
          2, 3, 8 + 2);

    /* strings that look like numbers, escaped quotes and minus signs are kept */
    CHECK(parse("{\"k\\\"-1\": \"-99999999999999999999\\\"\", \"n\": -99999999999999999999}",
                J) == 1);
    v = cell(0, "k_1");
    CHECK(v.type == ZX_T_TEXT && strcmp(v.s, "-99999999999999999999\"") == 0);
    CHECK(numtext(cell(0, "n"), "-99999999999999999999"));

    /* a subnormal stays a real even when another number is rewritten */
    CHECK(parse("{\"a\": 1e-310, \"b\": 1e999, \"c\": 1e-999999}", J) == 1);
    v = cell(0, "a");
    CHECK(v.type == ZX_T_REAL && v.u.d > 0 && v.u.d < 1e-300);
    CHECK(numtext(cell(0, "b"), "1e999"));
    CHECK(cell(0, "c").type == ZX_T_REAL && cell(0, "c").u.d == 0.0);
}

static void test_formats(void)
{
    CHECK(parse("[{\"a\":1},{\"a\":2.5,\"b\":\"x\"},{}]", J) == 3);
    CHECK(rs.nrows == 3 && rs.ncols == 2);
    CHECK(coltype("a") == ZX_T_REAL);          /* int + real -> real */
    CHECK(cell(1, "b").type == ZX_T_TEXT);
    CHECK(cell(0, "b").type == ZX_T_NULL);     /* absent in row 0 */
    CHECK(parse("[]", J) == 0);
    CHECK(parse("  [ ]  \n", J) == 0);

    const char *nd = "{\"a\":1}\r\n\r\n   \n{\"a\":2}\n\t\r\n{\"a\":3}";
    CHECK(parse(nd, ND) == 3);
    CHECK(cell(2, "a").u.i == 3);
    CHECK(parse("{\"a\":1}\n", ND) == 1);
    CHECK(parse("\n\n{\"a\":1}\n\n", ND) == 1);
    /* NDJSON body read as JSON is an error; one object is fine either way */
    CHECK(parse("{\"a\":1}", ND) == 1);
    FAILS("{\"a\":1}\n{\"a\":2}\n", J,
          "at byte 8 (line 2, column 1): end of file expected near '{'", 2, 1, 8);

    /* appending to a rowset that already holds rows */
    zx_rowset_reset(&rs);
    CHECK(zx_json_rows_parse("{\"a\":1}", 7, J, &rs, &err) == 1);
    CHECK(zx_json_rows_parse("[{\"a\":2},{\"c\":3}]", 17, J, &rs, NULL) == 2);
    CHECK(rs.nrows == 3 && rs.ncols == 2);

    /* the body need not be NUL-terminated: only len bytes are read */
    const char *part = "{\"a\":1}{\"b\":2}";
    zx_rowset_reset(&rs);
    CHECK(zx_json_rows_parse(part, 7, J, &rs, &err) == 1 && rs.ncols == 1);

    CHECK(zx_body_format_from_content_type(NULL) == J);
    CHECK(zx_body_format_from_content_type("application/json") == J);
    CHECK(zx_body_format_from_content_type("application/x-ndjson") == ND);
    CHECK(zx_body_format_from_content_type("Application/X-NDJSON; charset=utf-8") == ND);
    CHECK(zx_body_format_from_content_type("application/jsonl") == ND);
    CHECK(zx_body_format_from_content_type(" application/ndjson ;q=1") == ND);
    CHECK(zx_body_format_from_content_type("application/ndjsonx") == J);
    CHECK(zx_body_format_from_content_type("application/json; x=ndjson") == J);
    CHECK(zx_body_format_from_content_type("") == J);
}

static void test_keys(void)
{
    /* duplicate normalised keys in one object: _2, _3 in order */
    CHECK(parse("{\"a b\": 1, \"A-B\": 2, \"a.b\": 3, \"a_b_2\": 4, \"x\": 5}", J) == 1);
    CHECK(rs.ncols == 5);
    CHECK(cell(0, "a_b").u.i == 1);
    CHECK(cell(0, "a_b_2").u.i == 2);
    CHECK(cell(0, "a_b_3").u.i == 3);
    CHECK(cell(0, "a_b_2_2").u.i == 4);        /* "a_b_2" was taken: suffixed */
    /* across rows the same key maps to the same column */
    CHECK(parse("{\"a b\":1,\"a-b\":2}\n{\"a-b\":3}\n{\"A B\":4,\"a b\":5}", ND) == 3);
    CHECK(rs.ncols == 2);
    CHECK(cell(1, "a_b").u.i == 3);
    CHECK(cell(2, "a_b").u.i == 4 && cell(2, "a_b_2").u.i == 5);
    /* a key written twice verbatim keeps the last value */
    CHECK(parse("{\"k\": 1, \"k\": 2}", J) == 1);
    CHECK(rs.ncols == 1 && cell(0, "k").u.i == 2);
    /* reserved names */
    CHECK(parse("{\"_ingested_at\": 1, \"_zx_x\": 2, \"_key\": 3}", J) == 1);
    CHECK(cell(0, "data_ingested_at").u.i == 1);
    CHECK(cell(0, "data_zx_x").u.i == 2);
    CHECK(cell(0, "data_key").u.i == 3);
    /* UTF-8 and empty keys */
    CHECK(parse("{\"caf\\u00e9\": 1, \"\": 2, \"\xe6\x97\xa5\": 3}", J) == 1);
    CHECK(cell(0, "caf_").u.i == 1);
    CHECK(cell(0, "_").u.i == 2 && cell(0, "__2").u.i == 3);
    /* huge key: truncated to 63; two of them collide at 63 bytes */
    size_t kl = 5000;
    char *b = malloc(2 * kl + 64);
    size_t o = 0;
    b[o++] = '{';
    for (int k = 0; k < 2; k++) {
        b[o++] = '"';
        memset(b + o, k ? 'K' : 'k', kl);
        o += kl;
        o += (size_t)sprintf(b + o, "\": %d%s", k, k ? "}" : ", ");
    }
    b[o] = '\0';
    CHECK(parse(b, J) == 1);
    CHECK(rs.ncols == 2);
    CHECK(rs.cols[0].name_len == 63 && rs.cols[1].name_len == 63);
    CHECK(strcmp(rs.cols[1].name + 61, "_2") == 0);
    CHECK(strncmp(rs.cols[0].name, rs.cols[1].name, 61) == 0);
    free(b);
}

static void test_errors(void)
{
    FAILS("", J, "empty body", 0, 0, 0);
    FAILS(" \r\n\t ", J, "empty body", 0, 0, 0);
    FAILS("", ND, "empty body", 0, 0, 0);
    FAILS("\n\r\n  \n", ND, "empty body", 0, 0, 0);
    fails(__LINE__, NULL, 0, J, "empty body", 0, 0, 0);

    /* JSON: byte offset, line, column */
    FAILS("{\"a\": x}", J, "at byte 6 (line 1, column 7): invalid token near 'x'", 1, 7, 6);
    FAILS("[\n {\"a\": 1},\n {\"b\": 2,}\n]", J,
          "at byte 22 (line 3, column 10): string or '}' expected near '}'", 3, 10, 22);
    FAILS("{\"a\":1", J,
          "at byte 5 (line 1, column 6): '}' expected near end of file", 1, 6, 5);
    FAILS("{\"\xc3\xa9\": \"\xc3\xa9\", x}", J,
          "at byte 13 (line 1, column 12): string or '}' expected near 'x'", 1, 12, 13);
    FAILS("42", J,
          "the body is a number; it must be a JSON object or an array of JSON objects",
          0, 0, 0);
    FAILS("\"s\"", J,
          "the body is a string; it must be a JSON object or an array of JSON objects",
          0, 0, 0);
    FAILS("null", J,
          "the body is null; it must be a JSON object or an array of JSON objects", 0, 0, 0);
    FAILS("[{}, {}, {}, \"x\", {}]", J,
          "element 3 of the array is a string; each event must be a JSON object", 0, 0, 0);
    FAILS("[[]]", J,
          "element 0 of the array is an array; each event must be a JSON object", 0, 0, 0);
    FAILS("[{}, true]", J,
          "element 1 of the array is a boolean; each event must be a JSON object", 0, 0, 0);

    /* NDJSON: line, column, offset of the line's error */
    FAILS("{\"a\":1}\n{\"a\":2}\n\n{\"a\":3}\n{\"a\":4}\n{\"a\":5}\n{\"a\" 6}\n{\"a\":7}\n", ND,
          "line 7: ':' expected near '6'", 7, 6, 41 + 5);
    FAILS("{\"a\":1}\r\n{\"a\":\r\n", ND, "line 2: unexpected token near end of line", 2, 6,
          9 + 5);
    FAILS("{\"a\":1}\n{} {}\n", ND, "line 2: end of line expected near '{'", 2, 4, 8 + 3);
    FAILS("{\"a\":1}\n  [1,2]\n", ND, "line 2 is an array; each line must be a JSON object",
          2, 3, 10);
    FAILS("{}\n7\n", ND, "line 2 is a number; each line must be a JSON object", 2, 1, 3);
    FAILS("{}\nnull", ND, "line 2 is null; each line must be a JSON object", 2, 1, 3);

    /* invalid UTF-8, control characters, NUL */
    FAILS("{\"a\": \"\xff\"}", J,
          "at byte 6 (line 1, column 7): unable to decode byte 0xff near '\"'", 1, 7, 6);
    FAILS("{}\n{\"a\": \"\xc3\x28\"}", ND,
          "line 2: unable to decode byte 0xc3 near '\"'", 2, 7, 3 + 6);
    FAILS("{\"\xed\xa0\x80\": 1}", J,
          "at byte 1 (line 1, column 2): unable to decode byte 0xed near '\"'", 1, 2, 1);
    FAILS("{\"a\": \"x\\u0000y\"}", J,
          "at byte 15 (line 1, column 16): string contains \\u0000 (NUL), which is not accepted",
          1, 16, 15);
    FAILS("{\"a\\u0000\": 1}", J,
          "at byte 9 (line 1, column 10): string contains \\u0000 (NUL), which is not accepted",
          1, 10, 9);
    {
        static const char raw[] = "{\"a\": \"x\0y\"}";
        fails(__LINE__, raw, sizeof(raw) - 1, J,
              "at byte 7 (line 1, column 8): control character 0x0 near '\"x'", 1, 8, 7);
    }

    /* partial rows on error: earlier rows stay, the caller resets */
    zx_rowset_reset(&rs);
    CHECK(zx_json_rows_parse("{\"a\":1}\n{\"a\":2}\nx\n", 18, ND, &rs, &err) == -1);
    CHECK(rs.nrows == 2 && !rs.row_open);
}

static void test_limits(void)
{
    /* 64 levels (the event is level 1) are fine, 65 are not */
    char b[400];
    for (int depth = 63; depth <= 65; depth++) {
        size_t o = 0;
        o += (size_t)sprintf(b + o, "{\"x\":");
        for (int i = 1; i < depth; i++)
            b[o++] = '[';
        b[o++] = '1';
        for (int i = 1; i < depth; i++)
            b[o++] = ']';
        b[o++] = '}';
        b[o] = '\0';
        int n = parse(b, J);
        if (depth <= 64)
            CHECK(n == 1 && cell(0, "x").type == ZX_T_JSON);
        else
            CHECK(n == -1 && strcmp(err.msg, "nesting deeper than 64 levels") == 0 &&
                  err.code == ZX_JSON_E_LIMIT);
    }
    char nd[400];
    snprintf(nd, sizeof(nd), "{}\n%s\n", b);   /* b: 65 levels */
    FAILS(nd, ND, "line 2: nesting deeper than 64 levels", 2, 1, 3);
    snprintf(nd, sizeof(nd), "[{}, %s]", b);
    FAILS(nd, J, "element 1: nesting deeper than 64 levels", 0, 0, 0);

    /* far deeper than jansson's own limit: an error, no crash */
    size_t big = 100000;
    char *deep = malloc(big + 10);
    strcpy(deep, "{\"x\":");
    memset(deep + 5, '[', big);
    deep[big + 5] = '\0';
    zx_rowset_reset(&rs);
    CHECK(zx_json_rows_parse(deep, big + 5, J, &rs, &err) == -1);
    CHECK(strstr(err.msg, "nesting deeper than 64 levels") != NULL);
    free(deep);

    /* columns: 1000 fit, 1001 do not */
    char *wide = malloc(1001 * 16 + 16);
    for (int ncol = 1000; ncol <= 1001; ncol++) {
        size_t o = 0;
        wide[o++] = '{';
        for (int i = 0; i < ncol; i++)
            o += (size_t)sprintf(wide + o, "%s\"c%d\":1", i ? "," : "", i);
        wide[o++] = '}';
        wide[o] = '\0';
        int n = parse(wide, J);
        if (ncol == 1000)
            CHECK(n == 1 && rs.ncols == 1000);
        else
            CHECK(n == -1 && strcmp(err.msg, "more than 1000 columns in one batch") == 0 &&
                  err.code == ZX_JSON_E_COLUMNS);
    }
    /* the same 1001 names spread over NDJSON lines also hit the limit */
    {
        size_t o = 0;
        for (int i = 0; i < 1001; i++)
            o += (size_t)sprintf(wide + o, "{\"c%d\":1}\n", i);
        CHECK(parse(wide, ND) == -1);
        CHECK(strcmp(err.msg, "line 1001: more than 1000 columns in one batch") == 0);
        CHECK(err.line == 1001 && err.code == ZX_JSON_E_COLUMNS);
    }
    free(wide);
}

/* Callers branch on err.code, never on err.msg: every kind of error says
 * which it is. */
static void test_codes(void)
{
    static const struct {
        const char *body;
        zx_body_format f;
        zx_json_errcode code;
    } c[] = {
        {"", J, ZX_JSON_E_EMPTY},
        {" \n ", ND, ZX_JSON_E_EMPTY},
        {"{\"a\":", J, ZX_JSON_E_SYNTAX},
        {"{}\n{x", ND, ZX_JSON_E_SYNTAX},
        {"\"text\"", J, ZX_JSON_E_BODY_SHAPE},
        {"[{}, 1]", J, ZX_JSON_E_SHAPE},
        {"{}\n[1]\n", ND, ZX_JSON_E_SHAPE},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        err.code = ZX_JSON_E_NONE;
        CHECK(parse(c[i].body, c[i].f) == -1 && err.code == c[i].code);
    }
    CHECK(parse("{\"a\": 1}", J) == 1);
}

int main(void)
{
    zx_rowset_init(&rs);
    test_types();
    test_big_numbers();
    test_formats();
    test_keys();
    test_errors();
    test_limits();
    test_codes();
    zx_rowset_free(&rs);
    if (failures)
        printf("test_json_rows: %d failure(s)\n", failures);
    else
        printf("test_json_rows: all checks passed\n");
    return failures ? 1 : 0;
}
