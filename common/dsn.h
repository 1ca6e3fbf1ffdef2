/*
 * dsn.h — PostgreSQL connection strings (libpq's "conninfo") as text: a
 * copy fit to show (passwords hidden), and a check of their shape.
 *
 * Two forms, as libpq reads them:
 *   - a URI: `postgresql://` or `postgres://`, then
 *     `[user[:password]@][host][:port][,...][/dbname][?key=value&...]`,
 *     with %XX escapes in every part (the keys of the query too);
 *   - key=value pairs separated by white space: `host=db1 dbname=x`,
 *     spaces allowed around `=`, a value either bare (up to the next
 *     space) or in single quotes, `\` escaping the next character in both
 *     (`password = 'it\'s'`).
 *
 * Hidden: the password of a URI's user part, and the value of every
 * key=value pair or URI query parameter whose key contains "password"
 * (any case, after %XX decoding: `password`, `sslpassword`).  Each is
 * replaced by `***` whatever its length (even empty).  When the text does
 * not follow the grammar (an unclosed quote, a word without `=`), from the
 * point where it stops making sense everything becomes `***`.  A URI's
 * user part is taken to end at its last `@`, so that a password with an
 * unescaped `@`, `/` or `?` is hidden whole; when an `@` comes later (in
 * the database name or the query), more than the password is hidden.
 * More, never less.
 *
 * It must never: leave any byte of a password in its output, allocate
 * anything but the returned copy, depend on the locale, or link libpq
 * (the supervisor and zxctl use it).
 */
#ifndef ZX_COMMON_DSN_H
#define ZX_COMMON_DSN_H

/* A copy of `dsn` with every password replaced by `***` (see above); the
 * rest is copied byte for byte.  "" gives "".  dsn NULL is taken as "".
 * Returns a new string the caller frees with free(), or NULL only when
 * out of memory. */
char *zx_dsn_redact(const char *dsn);

/* 1 when dsn starts with `postgresql://` or `postgres://` (libpq's rule:
 * exactly, in lower case, at the first byte), else 0.  dsn NULL gives 0. */
int zx_dsn_is_uri(const char *dsn);

/* 1 when dsn starts with `mysql://` or `mariadb://` (a connection of kind
 * mysql: the same URI shape, whose password zx_dsn_redact hides the same
 * way), else 0.  NULL gives 0.  zx_dsn_check accepts them as URIs. */
int zx_dsn_is_mysql(const char *dsn);

/* 0 when dsn has the shape libpq accepts: a URI (only its prefix is
 * checked: libpq checks the rest when it connects), or one or more
 * key=value pairs whose keys are letters, digits and `_` and whose quoted
 * values are closed.  Else -1 with *why (if why is not NULL) set to a
 * static English phrase that never quotes the dsn.  Keywords are not
 * checked against libpq's list (that depends on its version). */
int zx_dsn_check(const char *dsn, const char **why);

#endif /* ZX_COMMON_DSN_H */
