/*
 * json_numbers.h — rewriting the JSON numbers that jansson refuses, so that
 * a document with them still parses, and mapping positions back.
 *
 * jansson refuses numbers it cannot represent (an integer beyond int64, a
 * number beyond double range).  On that error only, the caller has the
 * text rewritten once: each such number is put in a string whose first
 * byte is NUL ("\u0000" then the literal), a "marked number".  No string
 * of the client's can start with NUL: when the text holds a "\u0000"
 * escape anywhere, the numbers are only quoted instead (no mark) and the
 * caller loads without JSON_ALLOW_NUL, so jansson refuses the "\u0000" at
 * its own position, as it would without the rewrite.  Insertions are
 * recorded so that the position of a later error can be mapped back to the
 * original text.  Used by json_rows.c, which turns a marked number back
 * into its literal (a top-level value: a number kept as text, see
 * rowset.h; inside a nested value: the bare literal in the JSON text).
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

/* End of the JSON number (RFC 8259 grammar) starting at s[i], s being n
 * bytes: the index just after it, or 0 if the bytes there are not a valid
 * number.  *is_int is set to 1 when it has no fraction and no exponent.
 * Reads only s[i..n); allocates nothing. */
size_t zx_jnum_end(const char *s, size_t n, size_t i, int *is_int);

/* Rewrites s[0..n) into p->patched (owned by p, valid until the next call
 * or zx_jnum_free), its length in *outn, and records the insertions.
 * *marked = 1 when the numbers were marked (load the result with
 * JSON_ALLOW_NUL), 0 when they were only quoted (the text holds a
 * "\u0000" of the client's: load without it, the load fails there).
 * Returns 0, or -1 if out of memory. */
int zx_jnum_rewrite(zx_jnum *p, const char *s, size_t n, size_t *outn, int *marked);

/* 1 when the decoded string s[0..n) is a marked number (its first byte is
 * NUL and at least one byte follows); its literal is s[1..n). */
int zx_jnum_is_marked(const char *s, size_t n);

/* In the compact JSON text t[0..n) written by jansson from a document
 * loaded after a marking rewrite, replaces every string "\u0000LITERAL"
 * with the bare LITERAL, in place.  Returns the new length (<= n). */
size_t zx_jnum_unmark_text(char *t, size_t n);

/* Offset in the original text of byte pos of the last rewritten text (a
 * position inside an insertion maps to where it was inserted). */
size_t zx_jnum_unpatch_pos(const zx_jnum *p, size_t pos);

/* Frees what p holds (p itself is the caller's) and empties it. */
void zx_jnum_free(zx_jnum *p);

#endif
