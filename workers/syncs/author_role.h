/*
 * author_role.h — the PostgreSQL login role an author's queries run as
 * (query_pg.c): its name and password, derived from this zxd's secret key
 * (<data_dir>/author.key, 32 bytes).
 *
 * The name is zx_author_<readable part>_<20 hex digits>: the readable part
 * is the author name's first 32 bytes with every byte but a-z, 0-9 and _
 * written '_' (A-Z lowered), for a person reading pg_roles; the digits are
 * the first 80 bits of HMAC-SHA-256(key, "zx role" NUL <the whole exact
 * name>).  So two distinct names ("bob-x" and "bob_x", "Bob" and "bob",
 * two names sharing their first 32 bytes, names of any length or in any
 * encoding) get distinct roles unless HMAC collides on 80 bits (no one can
 * aim at that without the key), and two zxd on one server (each its own
 * key) never share a role.  At most 63 bytes: PostgreSQL keeps it whole.
 * query_pg.c also marks each role with its author's name (COMMENT ON
 * ROLE) and refuses a role whose mark names someone else.
 *
 * Thread safety: pure functions of their arguments.
 */
#ifndef ZX_SYNCS_AUTHOR_ROLE_H
#define ZX_SYNCS_AUTHOR_ROLE_H

#include <stddef.h>

#define ZX_AUTHOR_ROLE_MAX 64      /* a role name and its NUL */

/* Write the role name of author `name` (a NUL-terminated string, any
 * bytes, any length) under key into out.  0, or -1 when libcrypto cannot
 * compute HMAC-SHA-256 (out is then ""). */
int zx_author_role_name(const unsigned char key[32], const char *name,
                        char out[ZX_AUTHOR_ROLE_MAX]);

/* Write the role's password (64 hex digits: HMAC-SHA-256(key, role)) into
 * out.  Always succeeds. */
void zx_author_role_password(const unsigned char key[32], const char *role, char out[65]);

/* Write the name zx gave the role before (zx_author_<the name's first 40
 * bytes, '-' as '_'>_<6 hex digits of HMAC-SHA-256(key, "zx role")>,
 * shared by alike names) into out, so that query_pg.c can take its
 * rights away.  Always succeeds. */
void zx_author_role_legacy_name(const unsigned char key[32], const char *name,
                                char out[ZX_AUTHOR_ROLE_MAX]);

/* Write the mark query_pg.c sets on the role ("zx author: <name>", cut at
 * outlen - 1 bytes) into out. */
void zx_author_role_mark(const char *name, char *out, size_t outlen);

#endif
