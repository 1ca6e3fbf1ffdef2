/*
 * test_sync_cursor.c — a reverse sync's cursor mark (workers/syncs/
 * cursor.h): the greatest value of each kind, kinds that cannot mix or be
 * a cursor, the stored bytes round-tripped and range-checked (damaged,
 * too long, not printable, another query's), and the wrapped query's
 * quoting.
 */
#include "workers/syncs/cursor.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

static zx_value vi(int64_t i) { zx_value v = {.type = ZX_T_INT}; v.u.i = i; return v; }
static zx_value vt(const char *s)
{
    zx_value v = {.type = ZX_T_TEXT};
    v.s = s;
    v.len = (uint32_t)strlen(s);
    return v;
}
static zx_value vts(const char *s, int64_t us)
{
    zx_value v = vt(s);
    v.type = ZX_T_TIMESTAMP;
    v.u.i = us;
    return v;
}

int main(void)
{
    char why[200];
    zx_cursor_mark m = {0};
    zx_value nul = {.type = ZX_T_NULL}, real = {.type = ZX_T_REAL};

    /* integers: the greatest; NULL ignored; text after them refused */
    zx_value a = vi(5), b = vi(-3), c = vi(42), t = vt("x");
    CHECK(zx_cursor_mark_see(&m, &nul, 0, why, sizeof(why)) == 0 && m.kind == ZX_CURSOR_NONE);
    CHECK(zx_cursor_mark_see(&m, &a, 0, why, sizeof(why)) == 0);
    CHECK(zx_cursor_mark_see(&m, &c, 0, why, sizeof(why)) == 0);
    CHECK(zx_cursor_mark_see(&m, &b, 0, why, sizeof(why)) == 0);
    CHECK(m.kind == ZX_CURSOR_INT && m.i == 42);
    CHECK(zx_cursor_mark_see(&m, &t, 0, why, sizeof(why)) < 0 && strstr(why, "both"));
    CHECK(zx_cursor_mark_see(&m, &real, 0, why, sizeof(why)) < 0 && strstr(why, "real"));

    /* text by its bytes, a longer text with the same prefix after it */
    memset(&m, 0, sizeof(m));
    zx_value t1 = vt("2024-01-01 10:00:00"), t2 = vt("2024-01-01 10:00:00.5"),
             t3 = vt("2023-12-31 23:59:59");
    CHECK(zx_cursor_mark_see(&m, &t1, 0, why, sizeof(why)) == 0);
    CHECK(zx_cursor_mark_see(&m, &t2, 0, why, sizeof(why)) == 0);
    CHECK(zx_cursor_mark_see(&m, &t3, 0, why, sizeof(why)) == 0);
    CHECK(m.kind == ZX_CURSOR_TEXT && !strcmp(m.t, "2024-01-01 10:00:00.5"));
    /* a timestamp cell without by_instant is text (SQLite) */
    zx_value s1 = vts("2024-01-02T00:00:00Z", 1);
    CHECK(zx_cursor_mark_see(&m, &s1, 0, why, sizeof(why)) == 0 && m.kind == ZX_CURSOR_TEXT);
    CHECK(!strcmp(m.t, "2024-01-02T00:00:00Z"));
    zx_value ctl = vt("a\nb");
    CHECK(zx_cursor_mark_see(&m, &ctl, 0, why, sizeof(why)) < 0);

    /* timestamps by their instant (PostgreSQL): the text does not decide */
    memset(&m, 0, sizeof(m));
    zx_value p1 = vts("2024-01-01 10:00:00+00", 1000), p2 = vts("2024-01-01 09:00:00+00", 2000);
    CHECK(zx_cursor_mark_see(&m, &p1, 1, why, sizeof(why)) == 0);
    CHECK(zx_cursor_mark_see(&m, &p2, 1, why, sizeof(why)) == 0);
    CHECK(m.kind == ZX_CURSOR_TS && m.i == 2000 && !strcmp(m.t, "2024-01-01 09:00:00+00"));

    /* stored bytes: round trip, another query's, damaged */
    unsigned char buf[ZX_CURSOR_ENC_MAX];
    uint64_t sig = zx_cursor_sig("SELECT * FROM t", "updated_at");
    CHECK(sig != zx_cursor_sig("SELECT * FROM t", "version"));
    CHECK(sig != zx_cursor_sig("SELECT * FROM u", "updated_at"));
    size_t n = zx_cursor_mark_encode(&m, sig, buf);
    zx_cursor_mark d;
    CHECK(zx_cursor_mark_decode(buf, n, sig, &d, why, sizeof(why)) == 0);
    CHECK(d.kind == ZX_CURSOR_TS && d.i == 2000 && !strcmp(d.t, m.t));
    CHECK(zx_cursor_mark_decode(buf, n, sig + 1, &d, why, sizeof(why)) == 1 &&
          d.kind == ZX_CURSOR_NONE);
    CHECK(zx_cursor_mark_decode(buf, 13, sig, &d, why, sizeof(why)) < 0);
    CHECK(zx_cursor_mark_decode("nope-nope-nope", 14, sig, &d, why, sizeof(why)) < 0);
    unsigned char bad[ZX_CURSOR_ENC_MAX + 8];
    memcpy(bad, buf, n);
    bad[n - 1] = 0x07;   /* a control byte */
    CHECK(zx_cursor_mark_decode(bad, n, sig, &d, why, sizeof(why)) < 0 &&
          strstr(why, "printable"));
    bad[12] = 'q';       /* an unknown kind */
    CHECK(zx_cursor_mark_decode(bad, n, sig, &d, why, sizeof(why)) < 0);
    zx_cursor_mark mi = {.kind = ZX_CURSOR_INT, .i = -7};
    n = zx_cursor_mark_encode(&mi, sig, buf);
    CHECK(n == 21 && zx_cursor_mark_decode(buf, n, sig, &d, why, sizeof(why)) == 0 &&
          d.kind == ZX_CURSOR_INT && d.i == -7);
    CHECK(zx_cursor_mark_decode(buf, 20, sig, &d, why, sizeof(why)) < 0);
    memset(bad, 'a', sizeof(bad));
    memcpy(bad, buf, 12);
    bad[12] = 't';       /* text one byte too long */
    CHECK(zx_cursor_mark_decode(bad, 13 + ZX_CURSOR_TEXT_MAX + 1, sig, &d, why,
                                sizeof(why)) < 0);
    CHECK(zx_cursor_mark_decode(bad, 13 + ZX_CURSOR_TEXT_MAX, sig, &d, why, sizeof(why)) == 0);
    zx_cursor_mark none = {0};
    CHECK(zx_cursor_mark_encode(&none, sig, buf) == 0);

    /* the wrapped query: trailing ; and blanks dropped, quotes doubled */
    char *sql = zx_cursor_sql("SELECT * FROM t -- all\n ;\n", "up\"d", &mi);
    CHECK(sql && !strcmp(sql, "SELECT * FROM (\nSELECT * FROM t -- all\n) AS zx_q WHERE "
                         "\"up\"\"d\" >= -7 OR \"up\"\"d\" IS NULL"));
    free(sql);
    zx_cursor_mark mt = {.kind = ZX_CURSOR_TEXT, .t = "it's", .tlen = 4};
    sql = zx_cursor_sql("SELECT 1", "c", &mt);
    CHECK(sql && !strcmp(sql, "SELECT * FROM (\nSELECT 1\n) AS zx_q WHERE \"c\" >= 'it''s' "
                         "OR \"c\" IS NULL"));
    free(sql);
    CHECK(zx_cursor_sql("SELECT 1", "c", &none) == NULL);
    return failures != 0;
}
