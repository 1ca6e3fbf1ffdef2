/*
 * mysql_dsn.h — MySQL / MariaDB connection URIs (a connection of kind
 * mysql): parsed into their parts, and a copy fit to show.
 *
 * The form:
 *     mysql://user[:password]@host[:port]/database[?key=value&...]
 * (`mariadb://` is the same).  Rules, all checked by zx_mysql_dsn_parse:
 *   - user: non-empty; password: may be empty or absent.  Both take %XX
 *     escapes (hex, either case), which a password must use for `@`, `:`,
 *     `/`, `?`, `#` and `%`.  The user part ends at the LAST `@` of the
 *     text, so that a password with an unescaped `@` still parses; an `@`
 *     anywhere after it (database, query) must be written `%40`.  The user
 *     ends at its first `:` (a user name with `:` writes `%3A`).
 *   - host: a name or IPv4 address ([A-Za-z0-9._-]+), or an IPv6 address
 *     in brackets ([0-9A-Fa-f:.]+); no escapes.  Required.
 *   - port: decimal, 1..65535; default 3306.
 *   - database: required, %XX escapes, 1..64 bytes once decoded, no `/`.
 *   - query: `ssl=true|false|1|0` only (any other key is an error, so a
 *     misspelt option is never silently ignored).
 *   - nowhere a decoded NUL (%00), a control character, a space or a
 *     fragment (`#` after the user part); at most 4096 bytes in all.
 *
 * Hidden by zx_mysql_dsn_redact, on any text: the password, i.e. what
 * lies between the first `:` of the user part and the text's last `@`,
 * the user part starting after the first `://` (or at the first byte when
 * there is none), as the parser reads it; and, from the first `?` or `&`
 * anywhere whose following key (up to `=`) contains "password" (any case,
 * after %XX decoding), that key's value and all that follows (a value may
 * hold an unescaped `&` or `@`).  Each becomes `***` whatever
 * its length (even empty).  Text without `@` has no user part, but a
 * forgotten host must not show a password: there, what follows the first
 * `:` (after a bracketed host) is hidden to the end unless it is a port
 * (digits only, up to `/`, `?` or the end).  On text outside the grammar
 * this hides more than the password, never less; but a password with an
 * unescaped `@` and no host after it ("mysql://u:Z@Q/db") is read as
 * password Z and host Q, by the parser as by this.
 *
 * It must never: link libmariadb (conf/ and zxctl use it), depend on the
 * locale, print or return a password in an error phrase, or allocate
 * anything but what the caller frees.
 */
#ifndef ZX_COMMON_MYSQL_DSN_H
#define ZX_COMMON_MYSQL_DSN_H

#define ZX_MYSQL_DEFAULT_PORT 3306
#define ZX_MYSQL_DSN_MAX      4096   /* bytes of a DSN, at most */
#define ZX_MYSQL_DB_MAX       64     /* bytes of a database name, at most */

/* A parsed DSN.  Every string is NUL-terminated, %XX-decoded, and lives in
 * one block owned by the struct (freed by zx_mysql_dsn_free). */
typedef struct zx_mysql_dsn {
    char *user;          /* non-empty */
    char *password;      /* NULL when the DSN has none (no `:` in the user
                            part); "" when written empty */
    char *host;          /* non-empty; an IPv6 address without brackets */
    unsigned port;       /* 1..65535 (3306 when not written) */
    char *database;      /* 1..64 bytes */
    int ssl;             /* -1 not written, 0 false, 1 true */
    char *mem_;          /* private: the block the strings live in */
} zx_mysql_dsn;

/* Parse dsn into *out.  Returns 0 (free *out with zx_mysql_dsn_free), or
 * -1 with *out zeroed (nothing to free) and *why (if why is not NULL) set
 * to a static English phrase saying what is wrong, which never quotes the
 * DSN ("the port is not a number between 1 and 65535").  Out of memory is
 * -1 with "out of memory".  dsn NULL is an error. */
int zx_mysql_dsn_parse(const char *dsn, zx_mysql_dsn *out, const char **why);

/* Free what a successful parse stored in *d and zero it.  A zeroed struct
 * (or NULL) is a no-op. */
void zx_mysql_dsn_free(zx_mysql_dsn *d);

/* A copy of dsn with the password and every password-like query value
 * replaced by `***` (see above); the rest copied byte for byte.  Works on
 * any text, parseable or not; NULL is taken as "".  Returns a new string
 * the caller frees with free(), or NULL only when out of memory. */
char *zx_mysql_dsn_redact(const char *dsn);

#endif /* ZX_COMMON_MYSQL_DSN_H */
