/*
 * dest_mysql_int.h — the parts of the MySQL / MariaDB destination
 * (dest_mysql.c) that write SQL text, all in dest_mysql_sql.c: a growable
 * text buffer, quoted identifiers and strings, and a cell as an SQL
 * literal.
 *
 * Only zx_mysql_buf_quoted and zx_mysql_put_value use the connection (for
 * mysql_real_escape_string, which follows its character set and
 * NO_BACKSLASH_ESCAPES); the rest can be tested without a server.
 */
#ifndef ZX_SYNCS_DEST_MYSQL_INT_H
#define ZX_SYNCS_DEST_MYSQL_INT_H

#include <stddef.h>
#include <stdint.h>

#include <mysql.h>

#include "common/rowset.h"
#include "common/dcell.h"

/* A growable text buffer: start with {0}, release with zx_mysql_buf_free.
 * p is NUL-terminated once anything was added.  Out of memory sets oom,
 * after which every append is a no-op: the caller checks oom once, before
 * it uses the text. */
typedef struct zx_mysql_buf {
    char *p;
    size_t len, cap;
    int oom;
} zx_mysql_buf;

/* Room for `more` bytes after len (and a NUL), for the caller to write at
 * p + len.  0, or -1 with oom set. */
int zx_mysql_buf_reserve(zx_mysql_buf *b, size_t more);

/* Append n bytes / a string / one character / printf output (at most 127
 * bytes: numbers; longer output sets oom). */
void zx_mysql_buf_put(zx_mysql_buf *b, const char *s, size_t n);
void zx_mysql_buf_str(zx_mysql_buf *b, const char *s);
void zx_mysql_buf_ch(zx_mysql_buf *b, char c);
void zx_mysql_buf_printf(zx_mysql_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Append `name` quoted with backticks, a backtick in it doubled. */
void zx_mysql_buf_ident(zx_mysql_buf *b, const char *name);

/* Append 's' (n bytes) quoted and escaped for connection db.  Valid
 * UTF-8 (or any bytes the connection's character set takes). */
void zx_mysql_buf_quoted(MYSQL *db, zx_mysql_buf *b, const char *s, size_t n);

/* Free the text and zero the buffer. */
void zx_mysql_buf_free(zx_mysql_buf *b);

/* What zx_mysql_put_value wrote. */
enum {
    ZX_MYSQL_VALUE = 0,   /* the value */
    ZX_MYSQL_NULL = 1,    /* NULL: v was NULL (or absent) */
    ZX_MYSQL_MISFIT = 2   /* NULL: v does not fit (count it in nulled) */
};

/* Append v (NULL for no cell) as an SQL literal for a column that takes
 * t (t->type the logical type; DECIMAL: t->scale as the column has it),
 * after common/dcell.h's conversion (conv is its scratch):
 *     INT64, BOOL  an integer                 42, 1
 *     DOUBLE       %.16e: 17 digits and an exponent (a double literal,
 *                  read back exactly)
 *     TIMESTAMP    'YYYY-MM-DD HH:MM:SS.ffffff' (UTC; years 0001-9999)
 *     DECIMAL      zx_mysql_put_decimal
 *     BYTES        X'hex'
 *     TEXT, JSON, DATE   'escaped text'
 * Returns ZX_MYSQL_VALUE, _NULL or _MISFIT; out of memory is left in
 * b->oom (conv's too). */
int zx_mysql_put_value(MYSQL *db, zx_buf *conv, zx_mysql_buf *b, const zx_dc_target *t,
                       const zx_value *v);

/* Append a decimal literal ([+-]digits[.digits][e[+-]digits], at least
 * one digit; what zx_dc_decimal_fits reads) as a plain literal rounded
 * half away from zero to `scale` (0..30) fraction digits, without leading
 * zeros nor trailing fraction zeros ("-12.5", "0", no "-0"): MySQL reads a
 * literal with an exponent as an approximate double, a plain one exactly.
 * Whether it fits a precision is the caller's check.  Returns 1, or 0
 * (nothing appended) when s is no such literal or has more than 100
 * integer digits. */
int zx_mysql_put_decimal(zx_mysql_buf *b, const char *s, size_t n, int scale);

#endif
