/*
 * fuzz_mysql_dsn.c — fuzz target for the MySQL / MariaDB URI parser and
 * its redaction (common/mysql_dsn.h), which read a value from the
 * configuration file.
 *
 * Input: any bytes, taken as a DSN (up to the first NUL).  Beyond "no
 * crash, no read outside the string" it checks:
 *   - parse answers 0 with parts inside the grammar's bounds (user and
 *     host non-empty, port 1..65535, database 1..64 bytes, ssl -1/0/1), or
 *     -1 with a phrase;
 *   - a parsed DSN written again with every byte escaped parses to the
 *     same parts (the parser and its escapes agree);
 *   - a parsed DSN without `?` or `&`, redacted, parses to the same parts
 *     with password "***";
 *   - a known password placed in the user part before the input, or as a
 *     query password before or after it, never survives redaction.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/mysql_dsn/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mysql_dsn.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MARK "Zx9SecretMark7q"

static int same(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

/* Appends s with every byte %XX-escaped. */
static char *put_escaped(char *o, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        *o++ = '%';
        *o++ = hex[c >> 4];
        *o++ = hex[c & 15];
    }
    return o;
}

static void check_parts(const zx_mysql_dsn *d)
{
    fuzz_check(d->user && d->user[0], "user empty");
    fuzz_check(d->host && d->host[0], "host empty");
    fuzz_check(d->port >= 1 && d->port <= 65535, "port out of range");
    fuzz_check(d->database && d->database[0] && strlen(d->database) <= ZX_MYSQL_DB_MAX,
               "database length");
    fuzz_check(d->ssl >= -1 && d->ssl <= 1, "ssl");
}

/* The parts written again, every byte escaped, parse to the same. */
static void reparse(const zx_mysql_dsn *d)
{
    size_t n = 64 + 3 * (strlen(d->user) + (d->password ? strlen(d->password) : 0) +
                         strlen(d->database)) + strlen(d->host);
    char *w = malloc(n), *o = w;
    if (!w)
        return;
    o += sprintf(o, "mysql://");
    o = put_escaped(o, d->user);
    if (d->password) {
        *o++ = ':';
        o = put_escaped(o, d->password);
    }
    o += strchr(d->host, ':') ? sprintf(o, "@[%s]:%u/", d->host, d->port)
                              : sprintf(o, "@%s:%u/", d->host, d->port);
    o = put_escaped(o, d->database);
    if (d->ssl >= 0)
        o += sprintf(o, "?ssl=%d", d->ssl);
    *o = '\0';
    zx_mysql_dsn e;
    const char *why = NULL;
    /* escaping makes it longer: it may pass the length limit */
    if (strlen(w) <= ZX_MYSQL_DSN_MAX) {
        fuzz_check(zx_mysql_dsn_parse(w, &e, &why) == 0, "escaped parts do not parse");
        fuzz_check(same(d->user, e.user) && same(d->password, e.password) &&
                   same(d->host, e.host) && same(d->database, e.database) &&
                   d->port == e.port && d->ssl == e.ssl, "escaped parts parse differently");
        zx_mysql_dsn_free(&e);
    }
    free(w);
}

static void hides(const char *dsn)
{
    char *r = zx_mysql_dsn_redact(dsn);
    fuzz_check(r != NULL, "zx_mysql_dsn_redact returned NULL (not out of memory)");
    fuzz_check(strstr(r, MARK) == NULL, "the password survived redaction");
    free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    zx_mysql_dsn d;
    const char *why = NULL;
    int rc = zx_mysql_dsn_parse(s, &d, &why);
    fuzz_check(rc == 0 || (rc == -1 && why && *why && !d.mem_ && !d.user),
               "parse: -1 without a phrase, or with parts");
    char *r = zx_mysql_dsn_redact(s);
    fuzz_check(r != NULL, "zx_mysql_dsn_redact returned NULL (not out of memory)");
    if (rc == 0) {
        check_parts(&d);
        reparse(&d);
        /* (an empty password made *** may pass the length limit) */
        if (!strchr(s, '?') && !strchr(s, '&') && strlen(r) <= ZX_MYSQL_DSN_MAX) {
            zx_mysql_dsn e;
            fuzz_check(zx_mysql_dsn_parse(r, &e, &why) == 0, "the redacted DSN does not parse");
            fuzz_check(same(d.user, e.user) && same(d.host, e.host) &&
                       same(d.database, e.database) && d.port == e.port && d.ssl == e.ssl,
                       "the redacted DSN parses to other parts");
            fuzz_check(d.password ? same(e.password, "***") : e.password == NULL,
                       "the redacted password is not ***");
            zx_mysql_dsn_free(&e);
        }
        zx_mysql_dsn_free(&d);
    }
    free(r);

    size_t n = strlen(s);
    /* the known password is not known when the input has it already */
    char *w = strstr(s, MARK) ? NULL : malloc(n + 64);
    if (w) {
        snprintf(w, n + 64, "mysql://u:%s@%s", MARK, s);
        hides(w);
        snprintf(w, n + 64, "mysql://u@h/db?password=%s&%s", MARK, s);
        hides(w);
        snprintf(w, n + 64, "%s?password=%s", s, MARK);
        hides(w);
        snprintf(w, n + 64, "%s&x_PASSWORD=%s", s, MARK);
        hides(w);
        free(w);
    }
    free(s);
    return 0;
}
