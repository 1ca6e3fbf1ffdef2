/*
 * json_numbers.h — rewriting the JSON numbers that jansson refuses, so that
 * a document with them still parses, and mapping positions back.
 *
 * jansson refuses numbers it cannot represent.  On that error only, the
 * caller has the text rewritten once: an integer beyond int64 gets ".0"
 * appended (it becomes a real), a number beyond double range is put in
 * quotes (it becomes a string holding the literal).  Insertions are
 * recorded so that the position of a later error can be mapped back to the
 * original text.  Used by json_rows.c.
 *
 * It must never change anything but those numbers (strings are copied as
 * they are, escapes included), nor read outside s[0..n).
 */
#ifndef ZX_COMMON_JSON_NUMBERS_H
#define ZX_COMMON_JSON_NUMBERS_H

#include <stddef.h>

typedef struct zx_jnum_patch { /* bytes inserted by zx_jnum_rewrite() */
    size_t at;                 /* offset in the original text */
    size_t added;              /* bytes inserted before original[at] */
} zx_jnum_patch;

/* Scratch state, reused across calls; all zero is the empty state. */
typedef struct zx_jnum {
    char *patched;             /* the rewritten text (not NUL-terminated) */
    size_t patched_cap;
    zx_jnum_patch *patches;    /* insertions, in text order */
    size_t npatches, patches_cap;
} zx_jnum;

/* Rewrites s[0..n) into p->patched (owned by p, valid until the next call
 * or zx_jnum_free), its length in *outn, and records the insertions.
 * Returns 0, or -1 if out of memory. */
int zx_jnum_rewrite(zx_jnum *p, const char *s, size_t n, size_t *outn);

/* Offset in the original text of byte pos of the last rewritten text (a
 * position inside an insertion maps to where it was inserted). */
size_t zx_jnum_unpatch_pos(const zx_jnum *p, size_t pos);

/* Frees what p holds (p itself is the caller's) and empties it. */
void zx_jnum_free(zx_jnum *p);

#endif
