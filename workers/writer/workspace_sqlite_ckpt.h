/*
 * workspace_sqlite_ckpt.h — the SQLite workspace's WAL checkpoints, taken
 * off the writer's path.
 *
 * SQLite's own automatic checkpoint runs inside the COMMIT that finds the
 * WAL past its limit: the committing connection copies the WAL's pages into
 * the database file and syncs both, while no frame is applied and every
 * push waiting for its commit waits on it too (a 32 MiB WAL: tens of ms,
 * several times a second under a stream of small commits).  Instead, the
 * writer's connection gets a WAL hook: past ZX_WSQ_CKPT_START pages it
 * wakes a thread of its own that checkpoints PASSIVE (never waiting for the
 * writer, which goes on committing) through a second connection to the
 * same file.  The WAL starts again from its beginning at the first
 * transaction after a checkpoint that copied everything.  Should the
 * writer commit faster than the thread copies (the WAL then never wholly
 * copied), the writer itself checkpoints once the WAL passes
 * ZX_WSQ_CKPT_HARD pages, as SQLite would have: the WAL is bounded.
 *
 * The thread starts at the first wake-up (a workspace that never fills
 * its WAL has none) and lives until zx_wsq_ckpt_stop.
 *
 * It must never: touch the writer's connection from the thread, or leave
 * the thread running past the close of the workspace.
 */
#ifndef ZX_WRITER_WORKSPACE_SQLITE_CKPT_H
#define ZX_WRITER_WORKSPACE_SQLITE_CKPT_H

#include <sqlite3.h>

/* WAL pages past which the thread checkpoints, and past which the writer
 * checkpoints itself.  SQLite's own default limit is 1,000 pages. */
#define ZX_WSQ_CKPT_START 512
#define ZX_WSQ_CKPT_HARD 2048

typedef struct wsq_ckpt wsq_ckpt;

/* Install the hook on db (the writer's connection to the file at path,
 * already in WAL mode) and turn SQLite's automatic checkpoint off.
 * synchronous ("NORMAL" or "FULL") is given to the thread's connection,
 * whose checkpoints then sync as the writer's would have.  Returns the
 * state (owned by the caller until zx_wsq_ckpt_stop), or NULL out of
 * memory (db then keeps SQLite's automatic checkpoint). */
wsq_ckpt *zx_wsq_ckpt_start(sqlite3 *db, const char *path, const char *synchronous);

/* Stop and join the thread (after its current checkpoint), close its
 * connection, remove the hook from db and free c.  NULL is a no-op.
 * Call before closing db. */
void zx_wsq_ckpt_stop(wsq_ckpt *c, sqlite3 *db);

/* Checkpoints the thread completed and those the writer had to take
 * itself (tests, logs). */
void zx_wsq_ckpt_counts(const wsq_ckpt *c, unsigned long *thread, unsigned long *inline_);

#endif
