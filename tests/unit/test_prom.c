/*
 * test_prom.c — the Prometheus text writer (common/prom.h): label values
 * and HELP escaped as the exposition format 0.0.4 says, whole lines only,
 * and the size limit (lines past it left out whole).  The e2e test
 * (tests/integration/test_metrics.py) reads zxd's text with
 * prometheus_client's parser and promtool.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/prom.h"

#include "tests/unit/check.h"

static void escaping(void)
{
    char out[64];
    CHECK(zx_prom_escape(out, sizeof(out), "a\\b\"c\nd") == 10);
    CHECK(!strcmp(out, "a\\\\b\\\"c\\nd"));
    CHECK(zx_prom_escape(out, sizeof(out), NULL) == 0 && !strcmp(out, ""));
    /* cut: the length it would have, the text NUL-terminated */
    CHECK(zx_prom_escape(out, 4, "\"\"\"") == 6 && strlen(out) == 3);
    /* bytes other than \, " and newline pass as they are (UTF-8 too) */
    CHECK(zx_prom_escape(out, sizeof(out), "é\t}") == strlen("é\t}"));
}

static void text(void)
{
    zx_prom p;
    zx_prom_init(&p, 1 << 20);
    size_t len = 7;
    CHECK(!strcmp(zx_prom_text(&p, &len), "") && len == 0);
    zx_prom_family(&p, "zx_rows_written_total", "counter", "Rows \\ written\nthere \"x\".");
    zx_prom_label l[2] = {{"pipeline", "or\"d\\ers\n"}, {"ring", "frames"}};
    zx_prom_u(&p, "zx_rows_written_total", l, 1, 18446744073709551615ull);
    zx_prom_u(&p, "zx_rows_written_total", l, 2, 0);
    zx_prom_f(&p, "zx_x", NULL, 0, 1.5);
    zx_prom_f(&p, "zx_x", NULL, 0, NAN);
    zx_prom_f(&p, "zx_x", NULL, 0, -INFINITY);
    zx_prom_f(&p, "zx_x", l + 1, 1, 1796327706.4713409);
    const char *want =
        "# HELP zx_rows_written_total Rows \\\\ written\\nthere \"x\".\n"
        "# TYPE zx_rows_written_total counter\n"
        "zx_rows_written_total{pipeline=\"or\\\"d\\\\ers\\n\"} 18446744073709551615\n"
        "zx_rows_written_total{pipeline=\"or\\\"d\\\\ers\\n\",ring=\"frames\"} 0\n"
        "zx_x 1.5\n"
        "zx_x NaN\n"
        "zx_x -Inf\n"
        "zx_x{ring=\"frames\"} 1796327706.4713409\n";
    const char *got = zx_prom_text(&p, &len);
    CHECK(!strcmp(got, want));
    if (strcmp(got, want))
        printf("got:\n%s\nwant:\n%s\n", got, want);
    CHECK(len == strlen(want) && !p.full);
    zx_prom_free(&p);
    zx_prom_free(&p);   /* twice: no-op */
    zx_prom_free(NULL);
}

static void bounded(void)
{
    zx_prom p;
    zx_prom_init(&p, 30);
    zx_prom_u(&p, "zx_a", NULL, 0, 1);           /* 7 bytes */
    zx_prom_u(&p, "zx_bbbbbbbbbbbbbbbbbbbbbbbbbb", NULL, 0, 2);   /* 32 more: over 30 */
    zx_prom_u(&p, "zx_c", NULL, 0, 3);           /* would fit: left out, p is full */
    size_t len;
    const char *t = zx_prom_text(&p, &len);
    CHECK(!strcmp(t, "zx_a 1\n") && len == 7 && p.full);
    zx_prom_free(&p);
    /* a label value longer than a line: left out whole */
    zx_prom_init(&p, 1 << 20);
    char *big = malloc(10000);
    memset(big, 'x', 9999);
    big[9999] = '\0';
    zx_prom_label l = {"pipeline", big};
    zx_prom_u(&p, "zx_a", &l, 1, 1);
    CHECK(p.full && zx_prom_text(&p, &len)[0] == '\0' && len == 0);
    free(big);
    zx_prom_free(&p);
}

int main(void)
{
    escaping();
    text();
    bounded();
    return failures != 0;
}
