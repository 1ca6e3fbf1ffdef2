/*
 * syncs_int.h — private declarations shared by the files of reverse-sync
 * runs: syncs.c (the run table and a run's life: queue, start, end,
 * record), syncs_tick.c (schedules, restore after a restart, starting
 * queued runs), syncs_cmd.c (control commands, status) and syncs_api.c
 * (the gateway's API).  Nothing else includes it.
 *
 * Runs live in s->runs (newest first, at most MAX_RUNS_KEPT kept), owned
 * by s; a sync_run pointer stays valid until the run is final, persisted
 * and has no waiters (then trimming may free it).
 */
#ifndef ZX_SUPERVISOR_SYNCS_INT_H
#define ZX_SUPERVISOR_SYNCS_INT_H

#include <jansson.h>
#include <stdint.h>

#include "supervisor/jobs.h"

#define MAX_WAITERS 8

struct sync_run {
    uint64_t id;
    char sync[64];
    char state[24];
    char trigger[96];
    unsigned flags;          /* ZX_RUN_PREVIEW, ZX_RUN_FULL */
    int approval;            /* an agent's run not approved yet: preview,
                                then wait */
    int agent;               /* asked for with an agent's token */
    int approved;            /* an agent's run an operator approved */
    int error_from_run;      /* error is the run's own (the database's
                                message, duplicate keys...): it may quote
                                values */
    int sync_gone;           /* failed: its sync was removed by a reload */
    char token[64];          /* the API token that asked for it, or "" */
    int64_t created_us, started_us, ended_us;
    int64_t change_us;       /* `on: change`: when the first commit it
                                answers was made (wall-clock µs), 0 none */
    json_t *result;          /* the worker's final status */
    json_t *preview;         /* an agent's run: its preview */
    char error[600];
    char cut[300];           /* why the supervisor killed its worker
                                (sup_sync_cut), "" when it did not */
    int persisted;           /* its final record is with the writer */
    int counted;             /* its end is in its sync's runs_ended (sup.h) */
    uint64_t expect_rows;    /* rows the last whole read of its sync read
                                (its progress's expected), 0 unknown */
    struct bufferevent *waiters[MAX_WAITERS];
    int nwaiters;
    sync_run *next;
};

/* Runs of one sync waiting (queued, previewing) at most: a client asking
 * again and again gets told, not a growing queue.  Agents' runs not yet
 * approved are not counted: they have their own queue per token. */
#define MAX_WAITING 16

/* 1 when r has ended (succeeded, failed, rejected, expired, previewed). */
int syncs_is_final(const sync_run *r);
/* 1 when r's record in its state is kept in the store (its end, a run
 * cut by a restart, an agent's run still to approve). */
int syncs_durable(const sync_run *r);
/* The record of r (what `runs`, the API and the store show): a new
 * object (caller decrefs), NULL when out of memory. */
json_t *syncs_run_json(const sync_run *r);
/* The run of that id in memory, or NULL.  Owned by s. */
sync_run *syncs_find_run(sup *s, uint64_t id);
/* Runs of sync waiting (queued, previewing), agents' runs not approved
 * left out; runs of agent token tok not approved nor ended, all syncs. */
size_t syncs_waiting(sup *s, const char *sync);
size_t syncs_agent_waiting(sup *s, const char *tok);
/* A new queued run of sync (trigger and flags copied), first in s->runs;
 * NULL when out of memory.  May free the oldest finished runs. */
sync_run *syncs_new_run(sup *s, const char *sync, const char *trigger, unsigned flags);
/* Hand r's record to the writer if durable and not yet handed (the tick
 * retries until sent). */
void syncs_persist(sup *s, sync_run *r);
/* Send r as feed event `event` (no sample nor preview values); an ended
 * run is counted in its sync's runs_ended then (once). */
void syncs_feed_run(sup *s, sync_run *r, const char *event);
/* Answer and forget every zxctl client waiting for r. */
void syncs_answer_waiters(sup *s, sync_run *r);
/* The sync (direction: out) named name, or NULL.  Owned by s. */
spipe *syncs_pipe(sup *s, const char *name);
/* r (queued or awaiting approval) fails: its sync was removed. */
void syncs_fail_removed(sup *s, sync_run *r);
/* Agents' runs past their approval_timeout (or of a revoked token)
 * end "expired". */
void syncs_expire_runs(sup *s);
/* Start r (queued) on p's worker; on failure r is failed and answered. */
void syncs_start_run(sup *s, spipe *p, sync_run *r);
/* The worker's last status for run r (new object), or NULL when it left
 * none for r. */
json_t *syncs_worker_result(spipe *p, const sync_run *r);
/* Read the store's cut and waiting runs back (once, after start). */
void syncs_restore_runs(sup *s);

/* Runs of the store, for `runs` and the API: zx_store_runs_each callback
 * appending up to max records to arr (runs in memory left out). */
typedef struct syncs_list_ctx {
    json_t *arr;
    size_t max;
    sup *s;
} syncs_list_ctx;
int syncs_list_cb(const char *sync, uint64_t id, const char *json, size_t len, void *ctx);

#endif
