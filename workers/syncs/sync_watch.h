/*
 * sync_watch.h — which tables a reverse sync with `on: change` watches:
 * those of its author's `tables` that its query names.  The author may
 * read nothing else (query.h: the database enforces it), so a table the
 * query reads is among them; naming one is how a query reads it (a view
 * of the author's is watched by its own name, not its base tables'), so
 * a table changed that the query names may change its result.  A name
 * that appears in the query without being read (a column named like a
 * table) only costs a run that finds nothing to send.
 *
 * Tokens: the query is scanned as SQL: 'strings', -- and C comments are
 * skipped; an identifier is a bare word (compared without case) or a
 * "quoted", `quoted` or [quoted] one (compared exactly).  Table names
 * compare on their last part: `public.orders`, `orders` and `"orders"`
 * all name orders.
 *
 * Pure functions of their arguments.
 */
#ifndef ZX_SYNCS_SYNC_WATCH_H
#define ZX_SYNCS_SYNC_WATCH_H

#include "conf/config.h"

/* 1 when query names table (its last part), 0 otherwise. */
int zx_sync_query_names(const char *query, const char *table);

/* 1 when the reverse sync p (of configuration c) watches table (as the
 * writer names the tables it commits to: `orders`, `public.orders`):
 * table is one of its author's tables and its query names it. */
int zx_sync_watches(const zx_conf *c, const zx_conf_pipeline *p, const char *table);

#endif
