/*
 * scrub.h — erase every copy of some strings from this process's memory.
 *
 * A worker forked from the supervisor inherits a copy of all of its memory:
 * the whole configuration with every pipeline's secrets, but also what the
 * configuration loader freed (the YAML text, a ${file:} buffer) and the
 * environment (a ${env:} value).  zx_scrub_copies finds each copy of the
 * given strings in the private writable mappings of /proc/self/maps (heap,
 * stack, anonymous memory, libraries' data) and zeroes it: it is meant for
 * a child right after fork, for the secrets it has no use for.  A mapping
 * over 64 MiB is read only where its pages are resident (mincore: a page
 * swapped out is not read), one over 64 GiB not at all (a reservation such
 * as a sanitizer's shadow memory, never filled).
 *
 * It must never: allocate from the heap while it scans (malloc could hand
 * out or move memory being searched: it works in mappings of its own,
 * skipped by the scan and zeroed before they are unmapped), touch shared
 * mappings (the rings), or be called while another thread runs.
 */
#ifndef ZX_COMMON_SCRUB_H
#define ZX_COMMON_SCRUB_H

#include <stddef.h>

/* Shorter strings are not searched for (a short text may well be part of
 * data the process needs): callers zero those where they know them. */
#define ZX_SCRUB_MIN 8

/* Zero every copy of each of the n NUL-terminated strings pats[i] (those
 * of ZX_SCRUB_MIN bytes and more; NULL entries and shorter ones are
 * skipped) in this process's private writable memory, the strings
 * themselves included when they are in such memory.  pats is only read
 * before the scan starts.  Returns the number of copies zeroed, or -1 with
 * errno set (out of memory, /proc not mounted): then nothing or part was
 * zeroed. */
long zx_scrub_copies(const char *const *pats, size_t n);

#endif
