/*
 * cursor.h — a reverse sync's `cursor:` (sync_opts.h): the high-water
 * mark of a result column that grows as rows change (an integer, a
 * timestamp, a date; on SQLite also text such as ISO times: run_cursor.c
 * refuses the types PostgreSQL orders otherwise), so that a run reads only the
 * rows at or past the last successful run's mark.  Pure: no I/O, no
 * store; run_read.c and run_record.c use it.
 *
 * The mark is kept by the writer in the store, as the position part
 * ZX_CURSOR_PART of the sync (store/store.h "positions"), carried by the
 * last row-hashes frame of a run (proto/frame.h "po"): it is committed in
 * the same store transaction as the run's hashes, only after the
 * destination committed.  Its bytes (zx_cursor_mark_encode):
 *   "zxc1" | sig (u64, little-endian) | kind ('i', 't' or 's') | value
 * value: 'i' an int64 (little-endian, 8 bytes); 't' the text (1 ..
 * ZX_CURSOR_TEXT_MAX bytes, printable ASCII); 's' a timestamp compared
 * by its instant: the instant (µs since the epoch, int64) then its text.  sig is zx_cursor_sig of
 * the query and column it was taken with: a mark of another query or
 * column says nothing of this one's rows and is not used.
 *
 * Why ">=" and not ">": rows committed late with the mark's own value
 * (two transactions stamping one timestamp, one committing after the run
 * read the other) are read again by the next run; the row hashes the
 * sync keeps already (upsert) drop those it sent, so equal cursors are
 * never missed and never sent twice.  Rows whose cursor is NULL are read
 * by every run (the same hashes drop the unchanged ones).  A row that
 * commits with a cursor BELOW the mark (a long transaction that stamped
 * now() at its start) is not read until a run reads everything
 * (`zxctl run NAME --full`).
 *
 * Order: integers as integers; text (and, on a SQLite workspace, the
 * text of timestamps: SQLite compares them as text) as bytes (memcmp,
 * then length); timestamps on PostgreSQL by their instant (u.i), their
 * text (UTC, ISO) being what the literal in the SQL says.
 */
#ifndef ZX_SYNCS_CURSOR_H
#define ZX_SYNCS_CURSOR_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"

#define ZX_CURSOR_PART "cursor"
#define ZX_CURSOR_TEXT_MAX 128
#define ZX_CURSOR_ENC_MAX (4 + 8 + 1 + ZX_CURSOR_TEXT_MAX)

enum { ZX_CURSOR_NONE = 0, ZX_CURSOR_INT = 'i', ZX_CURSOR_TEXT = 't', ZX_CURSOR_TS = 's' };

typedef struct zx_cursor_mark {
    int kind;                           /* ZX_CURSOR_* (NONE: no value yet) */
    int64_t i;                          /* INT; TS: its instant (µs) */
    char t[ZX_CURSOR_TEXT_MAX + 1];     /* TEXT, TS: NUL-terminated */
    size_t tlen;
} zx_cursor_mark;

/* The signature of (query, column) stored with a mark. */
uint64_t zx_cursor_sig(const char *query, const char *column);

/* m's bytes into out (ZX_CURSOR_ENC_MAX bytes at least) with sig;
 * returns their length, 0 when m has no value. */
size_t zx_cursor_mark_encode(const zx_cursor_mark *m, uint64_t sig, unsigned char *out);

/* A stored mark (len bytes at val) into *m.  0: *m holds it; 1: it is
 * well formed but of another query or column (sig differs: *m has no
 * value); -1: damaged or out of range (why says how: a length, a kind,
 * text empty, too long or not printable ASCII; *m has no value). */
int zx_cursor_mark_decode(const void *val, size_t len, uint64_t sig, zx_cursor_mark *m,
                          char *why, size_t whylen);

/* Fold the value v of the cursor column into m (the greatest so far).
 * NULL is ignored.  by_instant: a TIMESTAMP cell is a TS (compared by
 * its instant), else a TEXT (by its bytes).  0; -1 when v cannot be a
 * cursor (why: a real, a boolean, JSON; text longer than
 * ZX_CURSOR_TEXT_MAX or not printable ASCII; values of two kinds). */
int zx_cursor_mark_see(zx_cursor_mark *m, const zx_value *v, int by_instant, char *why,
                       size_t whylen);

/* The query of a run that reads past m:
 *   SELECT * FROM (\n<query>\n) AS zx_q WHERE "<column>" >= <m> OR
 *   "<column>" IS NULL
 * query's trailing blanks and semicolons dropped (the newline ends a
 * trailing -- comment); the column quoted ("" doubled); the mark an
 * integer, or a quoted literal ('' doubled).  Allocated (the caller
 * frees it); NULL out of memory or when m has no value. */
char *zx_cursor_sql(const char *query, const char *column, const zx_cursor_mark *m);

#endif
