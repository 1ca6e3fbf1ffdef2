/*
 * fwd_journal.h — the forwarder's side of the workspace's forward journal:
 * the table _zx_forward(pipeline, n, nrows, frame, at) the writer fills
 * with each frame it applied for a pipeline that forwards, in the same
 * transaction as the rows (workers/writer/workspace.h), read here in
 * order of n and deleted once the frames are published.
 *
 * The journal is the forwarder's position: what is still in it is not
 * known to be published, so a forwarder that restarts reads from the
 * lowest n again (at least once).  No other state is kept.
 *
 * One connection, its own: the SQLite file opened read-write (a delete
 * waits for the writer's transaction, busy timeout 10 s), or a libpq
 * session of the workspace's dsn with a statement timeout.  Not
 * thread-safe: one thread uses a journal.
 */
#ifndef ZX_FORWARD_FWD_JOURNAL_H
#define ZX_FORWARD_FWD_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

typedef struct zx_fwdj zx_fwdj;

/* One journal row: frame number n and the frame's bytes (owned by the
 * entry list). */
typedef struct zx_fwdj_entry {
    uint64_t n;
    unsigned char *frame;
    size_t len;
} zx_fwdj_entry;

/* The journal of conf's workspace, connected by the first call that
 * needs it (and again after a failure); a SQLite workspace file that does
 * not exist yet (the writer makes it) reads as an empty journal.  Returns
 * NULL only out of memory (err set).  Free with zx_fwdj_close.  Errors of
 * the calls below name the workspace ("forward: cannot connect to the
 * workspace ...": never a password). */
zx_fwdj *zx_fwdj_open(const zx_conf *conf, char *err, size_t errlen);
void zx_fwdj_close(zx_fwdj *j);

/* The oldest entries of pipeline, n ascending: at most max_frames, and
 * no more once max_bytes is passed (at least one is returned however
 * large, up to 64 MiB: a larger entry, which the writer never makes, is
 * passed over and deleted by the next trim past it).  *out (an array of *nout entries, NULL when none) is the
 * caller's: free with zx_fwdj_entries_free.  A journal table not made
 * yet reads as empty.  0, or -1 with err set (the session is then closed
 * and reopened by the next call). */
int zx_fwdj_read(zx_fwdj *j, const char *pipeline, size_t max_frames, size_t max_bytes,
                 zx_fwdj_entry **out, size_t *nout, char *err, size_t errlen);
void zx_fwdj_entries_free(zx_fwdj_entry *e, size_t n);

/* What waits in the pipeline's journal: *count entries, the lowest n
 * *first (0 when none).  0, or -1 with err set. */
int zx_fwdj_pending(zx_fwdj *j, const char *pipeline, uint64_t *count, uint64_t *first,
                    char *err, size_t errlen);

/* Delete the pipeline's entries up to n (included): they are published.
 * 0, or -1 with err set. */
int zx_fwdj_delete(zx_fwdj *j, const char *pipeline, uint64_t n, char *err, size_t errlen);

#endif
