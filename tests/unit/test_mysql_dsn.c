/*
 * test_mysql_dsn.c — unit tests of common/mysql_dsn.c: zx_mysql_dsn_parse
 * on well-formed URIs (defaults, escapes, IPv6, the last-@ rule, the ssl
 * parameter) and on every error its grammar names (with the phrase), and
 * zx_mysql_dsn_redact on exact cases and on generated passwords made of
 * Z, Q, X and awkward characters, none of which may survive.
 *
 * It must never: need a server, libmariadb, or the locale.
 */
#include "common/mysql_dsn.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>

static int streq(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}
#define STREQ(a, b) streq((a), (b))

static void test_parse_ok(void)
{
    zx_mysql_dsn d;
    const char *why = NULL;
    CHECK(zx_mysql_dsn_parse("mysql://zx:zx-secret@127.0.0.1:3307/shop", &d, &why) == 0);
    CHECK(STREQ(d.user, "zx"));
    CHECK(STREQ(d.password, "zx-secret"));
    CHECK(STREQ(d.host, "127.0.0.1"));
    CHECK(d.port == 3307);
    CHECK(STREQ(d.database, "shop"));
    CHECK(d.ssl == -1);
    zx_mysql_dsn_free(&d);
    CHECK(d.user == NULL && d.mem_ == NULL);
    zx_mysql_dsn_free(&d); /* twice: a no-op */
    zx_mysql_dsn_free(NULL);

    /* defaults, no password, mariadb:// */
    CHECK(zx_mysql_dsn_parse("mariadb://app@db.example.com/x", &d, &why) == 0);
    CHECK(STREQ(d.user, "app") && d.password == NULL && STREQ(d.host, "db.example.com"));
    CHECK(d.port == 3306 && STREQ(d.database, "x"));
    zx_mysql_dsn_free(&d);

    /* empty password */
    CHECK(zx_mysql_dsn_parse("mysql://app:@h/x", &d, &why) == 0);
    CHECK(STREQ(d.password, ""));
    zx_mysql_dsn_free(&d);

    /* escapes in user, password, database; ':' '@' '/' '?' '#' '%' escaped */
    CHECK(zx_mysql_dsn_parse("mysql://a%3Ab:p%40s%2Fs%3F%23%25w%3a@h:1/d%2Fb%C3%A9", &d, &why) == 0);
    CHECK(STREQ(d.user, "a:b"));
    CHECK(STREQ(d.password, "p@s/s?#%w:"));
    CHECK(STREQ(d.database, "d/b\xc3\xa9"));
    CHECK(d.port == 1);
    zx_mysql_dsn_free(&d);

    /* unescaped '@', ':', '/', '?' in a password: the last '@' ends it */
    CHECK(zx_mysql_dsn_parse("mysql://u:p@ss:w/o?rd@h:65535/db", &d, &why) == 0);
    CHECK(STREQ(d.user, "u") && STREQ(d.password, "p@ss:w/o?rd"));
    CHECK(STREQ(d.host, "h") && d.port == 65535 && STREQ(d.database, "db"));
    zx_mysql_dsn_free(&d);

    /* IPv6 */
    CHECK(zx_mysql_dsn_parse("mysql://u:p@[::1]:3310/db", &d, &why) == 0);
    CHECK(STREQ(d.host, "::1") && d.port == 3310);
    zx_mysql_dsn_free(&d);
    CHECK(zx_mysql_dsn_parse("mysql://u@[fe80::1:2]/db", &d, &why) == 0);
    CHECK(STREQ(d.host, "fe80::1:2") && d.port == 3306);
    zx_mysql_dsn_free(&d);

    /* ssl */
    static const struct { const char *q; int want; } ssl[] = {
        {"?ssl=true", 1}, {"?ssl=1", 1}, {"?ssl=false", 0}, {"?ssl=0", 0},
        {"?ssl=true&ssl=false", 0}, {"?s%73l=tru%65", 1},
    };
    for (size_t i = 0; i < sizeof(ssl) / sizeof(ssl[0]); i++) {
        char buf[128];
        snprintf(buf, sizeof(buf), "mysql://u:p@h/db%s", ssl[i].q);
        CHECK(zx_mysql_dsn_parse(buf, &d, &why) == 0);
        CHECK(d.ssl == ssl[i].want);
        CHECK(STREQ(d.database, "db"));
        zx_mysql_dsn_free(&d);
    }

    /* 64-byte database, 4096-byte DSN */
    char db64[65], big[ZX_MYSQL_DSN_MAX + 2];
    memset(db64, 'd', 64);
    db64[64] = '\0';
    char buf[200];
    snprintf(buf, sizeof(buf), "mysql://u@h/%s", db64);
    CHECK(zx_mysql_dsn_parse(buf, &d, &why) == 0);
    CHECK(STREQ(d.database, db64));
    zx_mysql_dsn_free(&d);
    memset(big, 'p', sizeof(big));
    memcpy(big, "mysql://u:", 10);
    memcpy(big + ZX_MYSQL_DSN_MAX - 5, "@h/db", 6); /* exactly 4096 bytes */
    CHECK(strlen(big) == ZX_MYSQL_DSN_MAX);
    CHECK(zx_mysql_dsn_parse(big, &d, &why) == 0);
    CHECK(d.password && strlen(d.password) == ZX_MYSQL_DSN_MAX - 15);
    zx_mysql_dsn_free(&d);
}

/* dsn must fail with a phrase containing `part`, never quoting the DSN */
static void bad(const char *dsn, const char *part, int line)
{
    zx_mysql_dsn d;
    memset(&d, 0x55, sizeof(d));
    const char *why = NULL;
    int rc = zx_mysql_dsn_parse(dsn, &d, &why);
    if (rc != -1 || !why || !strstr(why, part) || d.user || d.mem_ || d.password) {
        printf("%s:%d: zx_mysql_dsn_parse(\"%s\") = %d, why \"%s\", want -1 and \"%s\"\n",
               __FILE__, line, dsn ? dsn : "NULL", rc, why ? why : "NULL", part);
        failures++;
        if (rc == 0)
            zx_mysql_dsn_free(&d);
    }
    if (dsn && why && strstr(why, "secret")) {
        printf("%s:%d: the phrase quotes the DSN: %s\n", __FILE__, line, why);
        failures++;
    }
}
#define BAD(dsn, part) bad((dsn), (part), __LINE__)

static void test_parse_bad(void)
{
    BAD(NULL, "no DSN");
    BAD("", "does not start with");
    BAD("postgresql://u:secret@h/db", "does not start with");
    BAD("MYSQL://u:secret@h/db", "does not start with");
    BAD("mysql:/u:secret@h/db", "does not start with");
    BAD("mysql://h/db", "no user");
    BAD("mysql://:secret@h/db", "no user");
    BAD("mysql://@h/db", "no user");
    BAD("mysql://u:secret@/db", "no host");
    BAD("mysql://u:secret@:3306/db", "no host");
    BAD("mysql://u:secret@h", "no database");
    BAD("mysql://u:secret@h/", "no database");
    BAD("mysql://u:secret@h:3306", "no database");
    BAD("mysql://u:secret@h?ssl=true", "no database");
    BAD("mysql://u:secret@h:0/db", "port");
    BAD("mysql://u:secret@h:65536/db", "port");
    BAD("mysql://u:secret@h:99999999999999999999999/db", "port");
    BAD("mysql://u:secret@h:/db", "port");
    BAD("mysql://u:secret@h:33a/db", "port");
    BAD("mysql://u:secret@h:-1/db", "port");
    BAD("mysql://u:secret@h!x/db", "host has a character");
    BAD("mysql://u:secret@[::1/db", "IPv6");
    BAD("mysql://u:secret@[]/db", "IPv6");
    BAD("mysql://u:secret@[::g]/db", "IPv6");
    BAD("mysql://u:secret@h/a/b", "has a /");
    BAD("mysql://u:secret@h/db/", "has a /");
    BAD("mysql://u:secret@h/db#frag", "#");
    BAD("mysql://u:secret@h/db?ssl=true#x", "#");
    BAD("mysql://u:secret@h/db?ssl=yes", "ssl must be");
    BAD("mysql://u:secret@h/db?ssl", "key=value");
    BAD("mysql://u:secret@h/db?", "key=value");
    BAD("mysql://u:secret@h/db?ssl=true&", "key=value");
    BAD("mysql://u:secret@h/db?sslmode=require", "unknown query parameter");
    BAD("mysql://u:secret@h/db?password=secret", "unknown query parameter");
    BAD("mysql://u:sec ret@h/db", "space or a control");
    BAD("mysql://u:sec\tret@h/db", "space or a control");
    BAD("mysql://u:sec\x7fret@h/db", "space or a control");
    BAD("mysql://u:secret%00@h/db", "%00");
    BAD("mysql://u:secret%@h/db", "two hex digits");
    BAD("mysql://u:secret%4@h/db", "two hex digits");
    BAD("mysql://u:secret%zz@h/db", "two hex digits");
    BAD("mysql://u:secret@h/db%", "two hex digits");
    BAD("mysql://u:secret@h/db%2", "two hex digits");
    BAD("mysql://u:secret@h/db%00x", "%00");
    char buf[256], db65[66];
    memset(db65, 'd', 65);
    db65[65] = '\0';
    snprintf(buf, sizeof(buf), "mysql://u:secret@h/%s", db65);
    BAD(buf, "longer than 64");
    /* escapes count once decoded: 64 bytes written as 3 each is fine */
    char esc[64 * 3 + 1];
    for (int i = 0; i < 64; i++)
        memcpy(esc + 3 * i, "%41", 3);
    esc[64 * 3] = '\0';
    snprintf(buf, sizeof(buf), "mysql://u@h/%s", esc);
    zx_mysql_dsn d;
    CHECK(zx_mysql_dsn_parse(buf, &d, NULL) == 0);
    CHECK(d.database && strlen(d.database) == 64 && d.database[0] == 'A');
    zx_mysql_dsn_free(&d);
    char big[ZX_MYSQL_DSN_MAX + 2];
    memset(big, 'p', sizeof(big));
    memcpy(big, "mysql://u:", 10);
    memcpy(big + ZX_MYSQL_DSN_MAX - 4, "@h/db", 6); /* 4097 bytes */
    BAD(big, "longer than 4096");
    /* why may be NULL */
    CHECK(zx_mysql_dsn_parse("nope", &d, NULL) == -1);
}

#define REDACTS(in, want) do {                                                 \
        char *got_ = zx_mysql_dsn_redact(in);                                  \
        if (!got_ || strcmp(got_, (want))) {                                   \
            printf("%s:%d: zx_mysql_dsn_redact(\"%s\") = \"%s\", want \"%s\"\n", \
                   __FILE__, __LINE__, (const char *)(in) ? (in) : "NULL",     \
                   got_ ? got_ : "NULL", (want));                              \
            failures++;                                                        \
        }                                                                      \
        free(got_);                                                            \
    } while (0)

static void test_redact(void)
{
    REDACTS("mysql://zx:zx-secret@127.0.0.1:3307/shop", "mysql://zx:***@127.0.0.1:3307/shop");
    REDACTS("mariadb://zx:s@db/x?ssl=true", "mariadb://zx:***@db/x?ssl=true");
    REDACTS("mysql://zx:@db/x", "mysql://zx:***@db/x");
    REDACTS("mysql://zx@db:3306/x", "mysql://zx@db:3306/x");
    REDACTS("mysql://db:3306/x", "mysql://db:3306/x");
    REDACTS("mysql://[::1]:3306/x", "mysql://[::1]:3306/x");
    REDACTS("mysql://u:p@ss:w/o?rd@h/db", "mysql://u:***@h/db");
    REDACTS("mysql://u:p%40ss@h/db", "mysql://u:***@h/db");
    /* a forgotten host: what follows ':' is no port, so hidden */
    REDACTS("mysql://u:secret", "mysql://u:***");
    REDACTS("mysql://u:secret/db?ssl=1", "mysql://u:***");
    REDACTS("mysql://u:/db", "mysql://u:***");
    REDACTS("mysql://h:33x/db", "mysql://h:***");
    REDACTS("mysql://[::1]:secret", "mysql://[::1]:***");
    /* query passwords */
    REDACTS("mysql://u@h/db?password=secret&ssl=1", "mysql://u@h/db?password=***");
    REDACTS("mysql://u@h/db?ssl=1&x=password", "mysql://u@h/db?ssl=1&x=password");
    REDACTS("mysql://u@h/db?ssl=1&SSLPassword=x", "mysql://u@h/db?ssl=1&SSLPassword=***");
    REDACTS("mysql://u@h/db?pass%77ord=x&a", "mysql://u@h/db?pass%77ord=***");
    REDACTS("mysql://h/db?password=a&b=c", "mysql://h/db?password=***");
    REDACTS("mysql://u:p@h/db?password=", "mysql://u:***@h/db?password=***");
    /* an '@' later than the user part: more is hidden, never less */
    REDACTS("mysql://u:p@h/d@b", "mysql://u:***@b");
    /* no scheme */
    REDACTS("u:secret@h/db", "u:***@h/db");
    REDACTS("", "");
    REDACTS(NULL, "");
    REDACTS("not a dsn", "not a dsn");
}

/* Passwords of Z, Q, X and awkward characters, written into templates
 * that hold no other Z, Q or X: none of those letters may survive. */
static void test_redact_generated(void)
{
    static const char *const pw[] = {
        "ZQX", "Z@Q", "Z:Q", "Z/Q", "Z?Q", "Z#Q", "Z%40Q", "Z%Q", "Z&Q=X", "@ZQX@",
        ":ZQX", "ZQX:", "Z'Q\"X", "Z\\Q", "Z[::1]Q", "Z]Q", "Z?password=Q", "",
    };
    static const char *const tpl[] = {
        "mysql://u:%s@h:3306/db", "mariadb://u:%s@h/db?ssl=true", "mysql://u:%s@[::1]/db",
        "mysql://u:%s@h/db?password=%s", "mysql://u@h/db?password=%s&ssl=1",
        "mysql://u@h/db?ssl=1&my_password=%s", "u:%s@h/db", "mysql://u:%s",
        "mysql://u:%s/db", "mysql://a:b:%s@h/db",
    };
    /* a parseable DSN without "password=" (which hides all after it),
     * redacted, parses to the same parts with password "***" */
    for (size_t t = 0; t < sizeof(tpl) / sizeof(tpl[0]); t++) {
        for (size_t p = 0; p < sizeof(pw) / sizeof(pw[0]); p++) {
            /* without a host, "u:Z@Q" is user u, password Z, host Q to
             * the parser too: an '@' there is ambiguous by the grammar */
            if (!strstr(tpl[t], "@") && strchr(pw[p], '@'))
                continue;
            char in[256];
            snprintf(in, sizeof(in), tpl[t], pw[p], pw[p]);
            char *r = zx_mysql_dsn_redact(in);
            CHECK(r != NULL);
            if (r && strpbrk(r, "ZQX")) {
                printf("%s:%d: zx_mysql_dsn_redact(\"%s\") = \"%s\" shows the password\n",
                       __FILE__, __LINE__, in, r);
                failures++;
            }
            zx_mysql_dsn a, b;
            if (r && !strstr(in, "password=") && zx_mysql_dsn_parse(in, &a, NULL) == 0) {
                CHECK(zx_mysql_dsn_parse(r, &b, NULL) == 0);
                CHECK(STREQ(a.user, b.user) && STREQ(a.host, b.host));
                CHECK(STREQ(a.database, b.database) && a.port == b.port && a.ssl == b.ssl);
                CHECK(!a.password || STREQ(b.password, "***"));
                zx_mysql_dsn_free(&a);
                zx_mysql_dsn_free(&b);
            }
            free(r);
        }
    }
}

int main(void)
{
    test_parse_ok();
    test_parse_bad();
    test_redact();
    test_redact_generated();
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures != 0;
}
