/*
 * writer_lease.h — the writer's leases in a shared Postgres workspace
 * (workspace_lease.h): it takes and renews, every third of
 * workspace.postgres.lease, the lease of each attached pipeline whose
 * ATTACH named one ("pipeline:<name>" for a source with one upstream
 * reader, "sync:<name>" for a reverse sync), tells the supervisor which it
 * holds (ZX_CHAN_LEASE, proto/chan.h), and fences: the frames of a
 * pipeline whose lease it does not hold are never applied, and a cycle
 * with frames of such a pipeline checks the lease inside its transaction
 * before it commits (writer.c).
 *
 * When it takes a pipeline's lease afresh (nobody held it, it had expired,
 * or another zxd held it) it first drops the frames left in that
 * pipeline's ring (read before, from older positions), then copies the
 * pipeline's positions from the workspace into the store (the workspace
 * is the truth; another zxd may have moved them on), and only then says
 * it holds it: the supervisor starts the worker, which resumes from there.
 *
 * Without leases (no ATTACH named one: not shared) every function is a
 * no-op.  All run in the writer's one thread.
 */
#ifndef ZX_WRITER_LEASE_H
#define ZX_WRITER_LEASE_H

#include <stddef.h>
#include <stdint.h>

struct writer;
struct wpipe;

/* Pipeline `pipeline` (an ATTACH) wants lease `lease` ("pipeline:..." or
 * "sync:..."); NULL or "" = none (a lease it had is given up).  Taken at
 * the next wr_lease_tick.  Out of memory or too many: logged, and the
 * pipeline stays fenced. */
void wr_lease_want(struct writer *w, const char *pipeline, const char *lease);

/* Take or renew the leases that are due, notice those that lapsed, and
 * tell the supervisor what changed or was renewed.  Returns the ms until
 * the next one is due (at most 1000). */
int64_t wr_lease_tick(struct writer *w);

/* 1 when p's frames must stay in its ring: it has a reader's lease this
 * zxd does not hold now.  0 otherwise. */
int wr_lease_blocks(struct writer *w, const struct wpipe *p);

/* Inside the cycle's open transaction, before its commit: for each
 * pipeline with a reader's lease among the cycle's applied frames,
 * whether this zxd still holds it (its row then stays locked until the
 * commit).  0 all held (or none needed); -1 with err set when one was
 * taken over (it is marked lost, the supervisor told, the cycle must roll
 * back) or the check failed. */
int wr_lease_fence(struct writer *w, char *err, size_t errlen);

/* Give every held lease up (a clean stop: the standby takes over at its
 * next try instead of after the expiry), and free the table. */
void wr_lease_release_all(struct writer *w);

#endif
