/*
 * test_dsn.c — unit tests of common/dsn.c: zx_dsn_redact on both forms of
 * a libpq connection string (URI and key=value, quoting and escapes, query
 * parameters, percent-encoding, no password, empty strings, text outside
 * the grammar), and zx_dsn_check / zx_dsn_is_uri.
 *
 * Besides the exact cases, a generated check writes passwords made of the
 * letters Z, Q, X and every awkward character into templates that hold no
 * other Z, Q or X, each as libpq would need it written (and some as users
 * get it wrong), and requires that none of those letters survives.
 *
 * It must never: depend on libpq, the locale, or anything outside memory.
 */
#include "common/dsn.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>

#define REDACTS(in, want) do {                                            \
        char *got_ = zx_dsn_redact(in);                                   \
        if (!got_ || strcmp(got_, (want))) {                              \
            printf("%s:%d: zx_dsn_redact(\"%s\") = \"%s\", want \"%s\"\n",  \
                   __FILE__, __LINE__, (const char *)(in),                \
                   got_ ? got_ : "NULL", (want));                         \
            failures++;                                                   \
        }                                                                 \
        free(got_);                                                       \
    } while (0)

static void test_uri(void)
{
    REDACTS("postgresql://zx:secret@db1/analytics",
            "postgresql://zx:***@db1/analytics");
    REDACTS("postgres://zx:secret@db1:5432/analytics?sslmode=require",
            "postgres://zx:***@db1:5432/analytics?sslmode=require");
    REDACTS("postgresql://zx:@db1/x", "postgresql://zx:***@db1/x");
    /* no password: unchanged */
    REDACTS("postgresql://zx@db1/analytics", "postgresql://zx@db1/analytics");
    REDACTS("postgresql://db1:5432/analytics", "postgresql://db1:5432/analytics");
    REDACTS("postgresql://[::1]:5432/x", "postgresql://[::1]:5432/x");
    REDACTS("postgresql://", "postgresql://");
    REDACTS("postgresql:///x?host=/run/postgresql",
            "postgresql:///x?host=/run/postgresql");
    /* percent-encoded password, and one with characters left unencoded */
    REDACTS("postgresql://zx:p%40ss%2Fw%3Fd@db1/x", "postgresql://zx:***@db1/x");
    REDACTS("postgresql://zx:p@ss@db1/x", "postgresql://zx:***@db1/x");
    REDACTS("postgresql://zx:pa/ss@db1/x", "postgresql://zx:***@db1/x");
    REDACTS("postgresql://zx:p?ss@db1/x", "postgresql://zx:***@db1/x");
    REDACTS("postgresql://zx:p:ss@db1/x", "postgresql://zx:***@db1/x");
    /* several hosts, IPv6 */
    REDACTS("postgresql://zx:s@h1:5432,h2:5433/x?target_session_attrs=any",
            "postgresql://zx:***@h1:5432,h2:5433/x?target_session_attrs=any");
    REDACTS("postgresql://zx:s@[2001:db8::1]:5432/x",
            "postgresql://zx:***@[2001:db8::1]:5432/x");
    /* the query: password and sslpassword, any case, %-encoded keys */
    REDACTS("postgresql://db1/x?password=secret",
            "postgresql://db1/x?password=***");
    REDACTS("postgresql://db1/x?sslmode=require&password=secret&user=zx",
            "postgresql://db1/x?sslmode=require&password=***&user=zx");
    REDACTS("postgresql://db1/x?sslpassword=k1&PassWord=k2",
            "postgresql://db1/x?sslpassword=***&PassWord=***");
    REDACTS("postgresql://db1/x?pass%77ord=secret",
            "postgresql://db1/x?pass%77ord=***");
    REDACTS("postgresql://db1/x?password=", "postgresql://db1/x?password=***");
    /* an unescaped '&' in the password: hidden up to the next key=value */
    REDACTS("postgresql://db1/x?password=a&b&user=zx",
            "postgresql://db1/x?password=***&user=zx");
    /* both: user part and query */
    REDACTS("postgresql://zx:s1@db1/x?password=s2",
            "postgresql://zx:***@db1/x?password=***");
    /* an '@' in the query only: not a user part */
    REDACTS("postgresql://db1/x?user=me@corp&password=s",
            "postgresql://db1/x?user=me@corp&password=***");
    /* ambiguous: more is hidden, never less */
    REDACTS("postgresql://zx:pw@db1/x?user=me@corp",
            "postgresql://zx:***@corp");
    REDACTS("postgresql://zx:p@ss?@db1/x?user=me@corp",
            "postgresql://zx:***@corp");
    REDACTS("postgresql://db1:5432/x?user=me@corp&password=s",
            "postgresql://db1:***@corp&password=***");
    /* any case and leading spaces are still read as a URI */
    REDACTS("PostgreSQL://zx:secret@db1/x", "PostgreSQL://zx:***@db1/x");
    REDACTS("  postgresql://zx:secret@db1/x", "  postgresql://zx:***@db1/x");
}

static void test_pairs(void)
{
    REDACTS("host=db1 password=secret dbname=x",
            "host=db1 password=*** dbname=x");
    REDACTS("password=secret", "password=***");
    REDACTS("host=db1 password = 'quoted \\' value' user=zx",
            "host=db1 password = *** user=zx");
    REDACTS("password='a b c'", "password=***");
    REDACTS("password=a\\ b host=db1", "password=*** host=db1");
    REDACTS("password=''", "password=***");
    REDACTS("sslpassword=k host=db1 PASSWORD=p",
            "sslpassword=*** host=db1 PASSWORD=***");
    /* libpq skips spaces after '=': the next word is the value */
    REDACTS("password= host=db1", "password= ***");
    REDACTS("\thost=db1\n password=s\n", "\thost=db1\n password=***\n");
    /* no password: unchanged */
    REDACTS("host=db1 dbname=analytics user=zx",
            "host=db1 dbname=analytics user=zx");
    REDACTS("host='my db' application_name=zxd",
            "host='my db' application_name=zxd");
    /* a value that looks like a key is not one */
    REDACTS("options='-c password=x' host=db1",
            "options='-c password=x' host=db1");
    /* outside the grammar: hidden from there on */
    REDACTS("host=db1 password='open", "host=db1 password=***");
    REDACTS("host=db1 password secret", "host=db1 ***");
    REDACTS("host=db1 pass-word=secret", "host=db1 ***");
    REDACTS("host='a\\' password=secret", "host=***");
    REDACTS("zx:secret@db1", "***");
}

static void test_empty(void)
{
    REDACTS("", "");
    REDACTS("   ", "   ");
    {
        char *r = zx_dsn_redact(NULL);
        CHECK(r && !strcmp(r, ""));
        free(r);
    }
}

/* Generated: every password of Z/Q/X and awkward characters, in every
 * template, written as libpq reads it; no Z, Q or X may survive. */
static const char *const passwords[] = {
    "ZQX", "Z Q X", "Z'Q\\X", "Z@Q/X?#", "Z&Q=X", "Z%Q%20X", "Z:Q:X",
    "Z]Q[X", "ZQX@", "@ZQX", "Z\tQX", "ZZZZZZZZZZQQQQQQQQXXXXXXXX", "Z''Q",
    "Z\\", "\\Z", "'Z'", "Z&user=Q", "Z password=Q", "Z?password=Q",
};

/* URI userinfo: percent-encode everything but unreserved characters. */
static void pct(char *out, const char *pw, int raw)
{
    static const char hexd[] = "0123456789ABCDEF";
    for (; *pw; pw++) {
        unsigned char c = (unsigned char)*pw;
        if (raw || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || strchr("-._~", c)) {
            *out++ = (char)c;
        } else {
            *out++ = '%';
            *out++ = hexd[c >> 4];
            *out++ = hexd[c & 15];
        }
    }
    *out = '\0';
}

/* key=value: quoted, ' and \ escaped. */
static void quote(char *out, const char *pw)
{
    *out++ = '\'';
    for (; *pw; pw++) {
        if (*pw == '\'' || *pw == '\\')
            *out++ = '\\';
        *out++ = *pw;
    }
    *out++ = '\'';
    *out = '\0';
}

/* key=value, unquoted: spaces, ' and \ escaped. */
static void bare(char *out, const char *pw)
{
    for (; *pw; pw++) {
        if (*pw == '\'' || *pw == '\\' || *pw == ' ' || *pw == '\t')
            *out++ = '\\';
        *out++ = *pw;
    }
    *out = '\0';
}

static void no_zqx(const char *dsn)
{
    char *r = zx_dsn_redact(dsn);

    CHECK(r != NULL);
    if (r && strpbrk(r, "ZQX")) {
        printf("%s:%d: zx_dsn_redact(\"%s\") leaves \"%s\"\n", __FILE__,
               __LINE__, dsn, r);
        failures++;
    }
    free(r);
}

static void test_generated(void)
{
    char enc[256], dsn[512];
    size_t i;

    for (i = 0; i < sizeof(passwords) / sizeof(passwords[0]); i++) {
        const char *pw = passwords[i];
        pct(enc, pw, 0);
        snprintf(dsn, sizeof(dsn), "postgresql://zx:%s@db1:5432/a?sslmode=require", enc);
        no_zqx(dsn);
        snprintf(dsn, sizeof(dsn), "postgres://zx:%s@h1,h2/a", enc);
        no_zqx(dsn);
        snprintf(dsn, sizeof(dsn), "postgresql://db1/a?user=zx&password=%s&sslmode=require", enc);
        no_zqx(dsn);
        snprintf(dsn, sizeof(dsn), "postgresql://db1/a?sslpassword=%s", enc);
        no_zqx(dsn);
        /* written raw, as users get it wrong */
        pct(enc, pw, 1);
        if (!strpbrk(pw, " \t")) {
            snprintf(dsn, sizeof(dsn), "postgresql://zx:%s@db1/a", enc);
            no_zqx(dsn);
            snprintf(dsn, sizeof(dsn), "postgresql://zx:%s@db1/a?user=me@corp", enc);
            no_zqx(dsn);
        }
        if (!strchr(pw, '&') || !strchr(pw, '=')) {
            snprintf(dsn, sizeof(dsn), "postgresql://db1/a?password=%s&sslmode=require", enc);
            no_zqx(dsn);
        }
        quote(enc, pw);
        snprintf(dsn, sizeof(dsn), "host=db1 password=%s dbname=a", enc);
        no_zqx(dsn);
        snprintf(dsn, sizeof(dsn), "host=db1 password = %s", enc);
        no_zqx(dsn);
        snprintf(dsn, sizeof(dsn), "sslpassword=%s host=db1", enc);
        no_zqx(dsn);
        bare(enc, pw);
        snprintf(dsn, sizeof(dsn), "host=db1 password=%s dbname=a", enc);
        no_zqx(dsn);
        snprintf(dsn, sizeof(dsn), "password=\t%s", enc);
        no_zqx(dsn);
        /* raw, unescaped, unclosed */
        snprintf(dsn, sizeof(dsn), "host=db1 password='%s", pw);
        no_zqx(dsn);
        if (!strpbrk(pw, " \t'\\")) {
            snprintf(dsn, sizeof(dsn), "password=%s", pw);
            no_zqx(dsn);
        }
    }
}

static void test_check(void)
{
    const char *why = NULL;

    CHECK(zx_dsn_is_uri("postgresql://db1/x"));
    CHECK(zx_dsn_is_uri("postgres://"));
    CHECK(!zx_dsn_is_uri("PostgreSQL://db1/x"));
    CHECK(!zx_dsn_is_uri(" postgresql://db1/x"));
    CHECK(!zx_dsn_is_uri("host=db1"));
    CHECK(!zx_dsn_is_uri(NULL));

    CHECK(zx_dsn_check("postgresql://zx:pw@db1/x", &why) == 0);
    CHECK(zx_dsn_check("postgres://", &why) == 0);
    CHECK(zx_dsn_check("host=db1 dbname=x", &why) == 0);
    CHECK(zx_dsn_check("  host = db1   password = 'a \\' b'  ", &why) == 0);
    CHECK(zx_dsn_check("password=", &why) == 0);
    CHECK(zx_dsn_check("", &why) < 0 && why && strstr(why, "empty"));
    CHECK(zx_dsn_check("  ", &why) < 0 && why && strstr(why, "only spaces"));
    CHECK(zx_dsn_check(NULL, &why) < 0);
    CHECK(zx_dsn_check("PostgreSQL://db1", &why) < 0 && why &&
          strstr(why, "lower case"));
    CHECK(zx_dsn_check(" postgresql://db1", &why) < 0);
    CHECK(zx_dsn_check("db1", &why) < 0 && why && strstr(why, "key=value"));
    CHECK(zx_dsn_check("host=db1 password='secret", &why) < 0 && why &&
          strstr(why, "not closed") && !strstr(why, "secret"));
    CHECK(zx_dsn_check("host-name=db1", &why) < 0);
    CHECK(zx_dsn_check("host=db1 sslmode", &why) < 0);
    CHECK(zx_dsn_check("host=db1", NULL) == 0);
    CHECK(zx_dsn_check("db1", NULL) < 0);
}

int main(void)
{
    test_uri();
    test_pairs();
    test_empty();
    test_generated();
    test_check();
    if (failures)
        printf("test_dsn: %d check(s) failed\n", failures);
    else
        printf("test_dsn: all checks passed\n");
    return failures != 0;
}
