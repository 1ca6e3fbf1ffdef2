/*
 * lease.h — the supervisor's side of the leases of a shared Postgres
 * workspace (workspace.postgres.shared; the writer takes them:
 * workers/writer/writer_lease.h).  A pipeline whose source has one
 * upstream reader (ZX_SOURCE_ONE_READER) runs its worker only while this
 * zxd holds its lease "pipeline:<name>"; a reverse sync starts runs only
 * while it holds "sync:<name>".  Otherwise the pipeline is `standby`,
 * naming the holder.  What the writer last said (ZX_CHAN_LEASE) is kept
 * here, with the deadline it gave: a lease not renewed by then is taken
 * as lost, and the worker is killed at once.
 *
 * A floor-2 job (sup.h): the child table hears of it only through its
 * hooks (spawn_held, writer_lease).
 */
#ifndef ZX_SUPERVISOR_LEASE_H
#define ZX_SUPERVISOR_LEASE_H

#include <stddef.h>

#include "supervisor/sup.h"

/* The lease pipeline pc runs under into out ("pipeline:<name>" or
 * "sync:<name>"): 1; 0 when it needs none (the workspace is not shared,
 * or its source reads nothing one at a time: out = ""). */
int sup_lease_name(const zx_conf *c, const zx_conf_pipeline *pc, char *out, size_t len);

/* The writer's ZX_CHAN_LEASE message (JSON): record it and act (start the
 * worker of a pipeline now held, kill the worker of one no longer held).
 * A bad message is logged and ignored. */
void sup_lease_update(sup *s, const char *json);

/* 1 when p needs a lease this zxd does not hold now (standby), with why
 * ("standby: held by host H, zxd pid P, data_dir D since T", or waiting
 * for the writer to take it); 0 otherwise (why = ""). */
int sup_lease_standby(sup *s, const spipe *p, char *why, size_t len);

/* p's lease as JSON {"name", "held", "holder", "since"}, or NULL when it
 * needs none.  A new reference. */
json_t *sup_lease_json(sup *s, const spipe *p);

/* Every tick: leases whose deadline passed are lost (their workers
 * killed). */
void sup_lease_tick(sup *s);

/* The spawn_held hook: a sync's idle worker (sup_sync_idle), or a
 * pipeline in standby (kept in ST_BACKOFF: the tick starts it once its
 * lease is held).  1 = do not fork now. */
int sup_lease_spawn_held(sup *s, child *c);

#endif
