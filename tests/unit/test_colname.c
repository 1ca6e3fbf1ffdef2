/*
 * test_colname.c — column-name normalisation rules (common/colname.h), and
 * the collision suffixes applied by json_rows (tested in test_json_rows.c
 * as well).  Must not depend on timing.
 */
#include <stdio.h>
#include <string.h>

#include "common/colname.h"

#include "tests/unit/check.h"

static void norm_is(int line, const char *in, size_t n, const char *want)
{
    char out[ZX_COLNAME_MAX + 1];
    memset(out, 'x', sizeof(out));
    size_t len = zx_colname_normalise(in, n, out);
    if (len != strlen(want) || strcmp(out, want) != 0 || strlen(out) != len) {
        printf("%s:%d: normalise(\"%.*s\") = \"%s\" (%zu), want \"%s\"\n", __FILE__,
               line, (int)n, in, out, len, want);
        failures++;
    }
}

#define NORM(in, want) norm_is(__LINE__, (in), strlen(in), (want))

int main(void)
{
    char out[ZX_COLNAME_MAX + 1];

    /* (a) lower-case */
    NORM("UserID", "userid");
    NORM("abc_123", "abc_123");
    /* (b) runs of other bytes become one '_' */
    NORM("a b", "a_b");
    NORM("a  b", "a_b");
    NORM("a-.-b", "a_b");
    NORM("a__b", "a__b");
    NORM("a _b", "a__b");
    NORM("Event Type", "event_type");
    NORM("x!", "x_");
    NORM("$x", "_x");
    /* UTF-8: each maximal run of non-ASCII bytes is one '_' */
    NORM("caf\xc3\xa9", "caf_");
    NORM("\xc3\xa9t\xc3\xa9", "_t_");
    NORM("\xe6\x97\xa5\xe6\x9c\xac", "_");
    NORM("\xff\xfe", "_");
    norm_is(__LINE__, "a\0b", 3, "a_b");
    /* (c) leading digit */
    NORM("1st", "_1st");
    NORM("2024", "_2024");
    NORM("-1", "_1");
    /* (d) empty */
    norm_is(__LINE__, "", 0, "_");
    norm_is(__LINE__, NULL, 0, "_");
    NORM("_", "_");
    /* (e) truncation to 63 */
    char lng[200];
    memset(lng, 'a', sizeof(lng));
    size_t n = zx_colname_normalise(lng, sizeof(lng), out);
    CHECK(n == 63);
    CHECK(strlen(out) == 63);
    lng[0] = '9';
    n = zx_colname_normalise(lng, sizeof(lng), out);
    CHECK(n == 63 && out[0] == '_' && out[1] == '9' && out[62] == 'a');
    /* (f) reserved names */
    NORM("_ingested_at", "data_ingested_at");
    NORM("_INGESTED_AT", "data_ingested_at");
    NORM("_request_id", "data_request_id");
    NORM("_key", "data_key");
    NORM("_partition", "data_partition");
    NORM("_offset", "data_offset");
    NORM("_timestamp", "data_timestamp");
    NORM("_extra", "data_extra");        /* the overflow column */
    NORM("_EXTRA", "data_extra");
    NORM("_zx", "data_zx");
    NORM("_zx_checkpoints", "data_zx_checkpoints");
    NORM(" key", "data_key");            /* " key" -> "_key" -> reserved */
    NORM("_keys", "_keys");
    NORM("key", "key");
    NORM("timestamp", "timestamp");
    /* reserved + truncation: "_zx" followed by 100 letters */
    char rz[104] = "_zx";
    memset(rz + 3, 'b', 100);
    n = zx_colname_normalise(rz, 103, out);
    CHECK(n == 63);
    CHECK(strncmp(out, "data_zx", 7) == 0);
    CHECK(!zx_colname_is_reserved(out));

    CHECK(zx_colname_is_reserved("_key"));
    CHECK(zx_colname_is_reserved("_zxanything"));
    CHECK(zx_colname_is_reserved("_timestamp"));
    CHECK(zx_colname_is_reserved("_extra"));
    CHECK(!zx_colname_is_reserved("_extra2"));
    CHECK(!zx_colname_is_reserved("key"));
    CHECK(!zx_colname_is_reserved("_key2"));
    CHECK(!zx_colname_is_reserved(""));
    CHECK(!zx_colname_is_reserved("data_key"));

    /* suffixes */
    n = zx_colname_suffix("a_b", 3, 2, out);
    CHECK(n == 5 && strcmp(out, "a_b_2") == 0);
    n = zx_colname_suffix("a_b", 3, 12, out);
    CHECK(n == 6 && strcmp(out, "a_b_12") == 0);
    memset(lng, 'c', 63);
    n = zx_colname_suffix(lng, 63, 2, out);
    CHECK(n == 63 && out[60] == 'c' && strcmp(out + 61, "_2") == 0);
    n = zx_colname_suffix(lng, 63, 100, out);
    CHECK(n == 63 && strcmp(out + 59, "_100") == 0);
    /* in place */
    strcpy(out, "name");
    n = zx_colname_suffix(out, 4, 3, out);
    CHECK(n == 6 && strcmp(out, "name_3") == 0);

    /* every output byte is [a-z0-9_], never starts with a digit */
    for (int b = 0; b < 256; b++) {
        char in[3] = {(char)b, (char)b, 'Q'};
        n = zx_colname_normalise(in, 3, out);
        for (size_t i = 0; i < n; i++) {
            char c = out[i];
            CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
        }
        CHECK(!(out[0] >= '0' && out[0] <= '9'));
    }

    if (failures)
        printf("test_colname: %d failure(s)\n", failures);
    else
        printf("test_colname: all checks passed\n");
    return failures ? 1 : 0;
}
