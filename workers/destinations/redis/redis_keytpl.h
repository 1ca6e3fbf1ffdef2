/*
 * redis_keytpl.h — the Redis destination's key template: "cache:order:{id}"
 * makes each row's key from its columns.
 *
 * Syntax: literal bytes, and placeholders `{column}` naming a result column
 * (its name exactly, any bytes but '}' and NUL, 1 to 128 of them).  `{{`
 * and `}}` are a literal `{` and `}`.  A lone `}`, an unclosed or empty
 * `{`, or no placeholder at all is an error: each row needs a key of its
 * own.
 *
 * Escaping: a value goes into the key as its text (redis_value.h), with
 * every byte that could make it reach into another part of the key, or
 * into a pattern, written %XX (two upper-case hex digits): any byte
 * outside 0x21..0x7E (space, control bytes, each byte of a non-ASCII
 * character), and % : { } * ? [ ] \.  So a value never holds the `:` the
 * template separates parts with: "cache:order:{id}" with id "1:x" is
 * "cache:order:1%3Ax", never the key of another template; and an ACL key
 * pattern (`~cache:*`) or a SCAN MATCH written for the template matches
 * exactly the keys it makes.  Text that needs none of it is unchanged
 * (42, "ab-c.d_e@f").
 *
 * Pure and thread-safe; it must never: know about sockets, the
 * configuration, or Redis commands.
 */
#ifndef ZX_DEST_REDIS_KEYTPL_H
#define ZX_DEST_REDIS_KEYTPL_H

#include <stddef.h>

#include "common/buf.h"

#define ZX_REDIS_KEY_MAX 4096     /* bytes of a made key at most */
#define ZX_REDIS_TPL_NAME_MAX 128 /* bytes of a placeholder's name */

typedef struct zx_redis_tpl_part {
    char *lit;                /* literal bytes (braces unescaped); NULL: a placeholder */
    size_t litlen;
    char *name;               /* placeholder: the column's name; NULL: a literal */
    size_t col;               /* placeholder: its column, set by zx_redis_tpl_bind */
} zx_redis_tpl_part;

typedef struct zx_redis_tpl {
    zx_redis_tpl_part *parts;
    size_t nparts;
} zx_redis_tpl;

/* Parse template s into *t (zeroed first).  0, or -1 with one line in err
 * ("key template 'x{': '{' at byte 2 is not closed") and *t empty; out of
 * memory is an error too.  The caller frees *t with zx_redis_tpl_free. */
int zx_redis_tpl_parse(const char *s, zx_redis_tpl *t, char *err, size_t errlen);

/* Point each placeholder at its column among names[0..n) (compared byte for
 * byte).  0, or -1 with err naming the first unknown placeholder and the
 * columns. */
int zx_redis_tpl_bind(zx_redis_tpl *t, const char *const *names, size_t n, char *err,
                      size_t errlen);

/* Append s[0..n) to b escaped as above.  0, or -1 out of memory. */
int zx_redis_key_escape(zx_buf *b, const char *s, size_t n);

/* The text of column col of the row being keyed: 1 with *s, *n set (valid
 * until the next call), 0 NULL, -1 out of memory. */
typedef int (*zx_redis_text_fn)(void *ctx, size_t col, const char **s, size_t *n);

/* Make the key of one row into b (emptied first): literals as they are,
 * each placeholder's text escaped.  1 done; 0 refused with why set to a
 * static reason and *bad_col to the placeholder's column when a value is
 * NULL ("is NULL") or the key is longer than ZX_REDIS_KEY_MAX ("longer
 * than 4096 bytes", *bad_col SIZE_MAX); -1 out of memory. */
int zx_redis_tpl_format(const zx_redis_tpl *t, zx_redis_text_fn text, void *ctx, zx_buf *b,
                        const char **why, size_t *bad_col);

/* Free what t holds; t is empty again.  NULL ok. */
void zx_redis_tpl_free(zx_redis_tpl *t);

#endif
