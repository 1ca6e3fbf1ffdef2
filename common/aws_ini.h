/*
 * aws_ini.h — the AWS shared config and credentials files (~/.aws/config,
 * ~/.aws/credentials): "[section]" lines and "key = value" lines.
 *
 * The files come from outside and are read as hostile: at most
 * ZX_AWS_INI_MAX_FILE bytes, lines of at most ZX_AWS_INI_MAX_LINE bytes,
 * no NUL byte, only regular files.  Rules (those of the AWS CLI's parser,
 * simplified):
 *   - blank lines and lines whose first non-blank is '#' or ';' are
 *     comments; in a "[section]" line or a value, a '#' or ';' preceded by
 *     a blank starts a comment (AWS keys and ARNs hold no blank);
 *   - blanks around section names, keys and values are dropped; a section
 *     name keeps its inner words as written ("profile  x" is "profile x");
 *   - an indented line after "key =" is a nested value (s3 =, ...): skipped;
 *   - keys compare without case; a key repeated in a section keeps its last
 *     value; a section repeated is merged;
 *   - a key before any section, or a line that is neither a section nor
 *     "key = value", is an error naming the file and line.
 * Nothing here knows what "profile x" means: aws_creds.c does.
 */
#ifndef ZX_COMMON_AWS_INI_H
#define ZX_COMMON_AWS_INI_H

#include <stddef.h>

#define ZX_AWS_INI_MAX_FILE (1024 * 1024)   /* bytes of one file */
#define ZX_AWS_INI_MAX_LINE 4096            /* bytes of one line, '\n' excluded */

typedef struct zx_aws_ini zx_aws_ini;

/* Parse len bytes of text (need not be NUL-terminated).  name names the
 * text in messages (the file's path).  Returns the parsed file (free with
 * zx_aws_ini_free), or NULL with err such as "/root/.aws/config line 3: a
 * key before any [section]" or "... line 9: longer than 4096 bytes" (out
 * of memory too).  Values never appear in err. */
zx_aws_ini *zx_aws_ini_parse(const char *text, size_t len, const char *name,
                             char *err, size_t errlen);

/* Read and parse the file at path.  Returns 0 with *out set, 1 when the
 * file does not exist (*out NULL, err untouched), or -1 with *out NULL and
 * err naming the file and why (unreadable, not a regular file, larger than
 * ZX_AWS_INI_MAX_FILE, a parse error). */
int zx_aws_ini_load(const char *path, zx_aws_ini **out, char *err, size_t errlen);

/* 1 when the section (its name as between the brackets, trimmed: "default",
 * "profile x") appears, else 0.  ini may be NULL (0). */
int zx_aws_ini_has(const zx_aws_ini *ini, const char *section);

/* The value of key (without case) in section, owned by ini (valid until
 * zx_aws_ini_free), "" for "key =", or NULL when absent.  ini may be NULL. */
const char *zx_aws_ini_get(const zx_aws_ini *ini, const char *section, const char *key);

/* Frees ini, wiping the values (they may be secret keys).  NULL: no-op. */
void zx_aws_ini_free(zx_aws_ini *ini);

#endif
