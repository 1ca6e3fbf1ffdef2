/*
 * writer_notice.h — `on: change` syncs across the zxd of a shared Postgres
 * workspace (workspace.postgres.shared): the writer tells the others which
 * tables each commit gives rows to, and tells its supervisor which tables
 * the others committed to (event "remote_commit", supervisor/
 * syncs_change.c), as it does for its own commits (event "batch").
 * Built on zx_ws_notice_changes / zx_ws_notices (workspace.h).
 *
 * On a workspace not shared every function is a no-op.  All run in the
 * writer's one thread.
 */
#ifndef ZX_WRITER_NOTICE_H
#define ZX_WRITER_NOTICE_H

#include <stddef.h>

struct writer;

/* Inside the cycle's open transaction, before its commit: tell the others
 * the tables its frames give rows (or rejects) to.  0, or -1 with err set
 * (the transaction fails: the cycle is retried). */
int wr_notice_send(struct writer *w, char *err, size_t errlen);

/* The socket to add to the writer's poll for readability, or -1. */
int wr_notice_fd(struct writer *w);

/* Outside a transaction: tell the supervisor of the tables the others
 * committed to (readable: the socket polled readable).  A lost
 * connection is left to the next cycle's begin. */
void wr_notice_poll(struct writer *w, int readable);

#endif
