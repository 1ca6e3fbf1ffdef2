/*
 * jobs.h — the supervisor's second floor: the jobs it runs on top of the
 * child table (sup.h): reloads (reload.c), `zxctl test` probes (probe.c),
 * verifies (verify.c), reverse-sync runs (syncs*.c), one-off sends
 * (syncs_send.c), retires and plug-ins' control commands (retire.c),
 * forgets (forget.c).  Jobs
 * that fork a helper process share helper.h.  The control commands
 * (control.h) call them; they never call the commands: a job answers its
 * zxctl client through sup_control_reply/sup_control_finish (sup.h) and
 * forgets it when told it left (sup_client_on_gone).
 */
#ifndef ZX_SUPERVISOR_JOBS_H
#define ZX_SUPERVISOR_JOBS_H

#include "conf/plugin.h"
#include "supervisor/sup.h"

/* reload.c */
/* Load the file again and apply the difference.  Returns the result
 * object (control protocol "reload" result, proto/control.h), owned by
 * the caller: "ok" false with "error"/"errors" when the file was rejected
 * and nothing changed; else "ok" true with added/changed/removed/unchanged
 * and an empty "failed" list, which grows (sup_reload_failed) while the
 * transitions run.  NULL only when out of memory (logged). */
json_t *sup_reload(sup *s);
/* A pipeline could not be started (why: copied).  With a reload in
 * progress: logged, announced in the feed ("failed") and recorded in the
 * reload's result, and 1 is returned; without one nothing is done and 0
 * is returned (the caller says it its own way).  The child table's
 * start_failed hook. */
int sup_reload_failed(sup *s, const char *pipeline, const char *why);
/* Once its transitions are done, the reload result is final: "ok" becomes
 * false with an "error" naming the pipelines in "failed", if any.
 * Logs the outcome.  Returns r. */
json_t *sup_reload_finish(json_t *r);
/* 1 when no stop, restart or removal the reload asked for is still under
 * way (the gateway's and every pipeline's), else 0. */
int sup_transitions_done(sup *s);

/* Start a reload for `zxctl reload` (bev, answered once its transitions
 * are done) or for SIGHUP (bev NULL; the outcome is logged).  A SIGHUP
 * during a reload runs another one after it. */
void sup_reload_start(sup *s, struct bufferevent *bev);
/* Answer and forget the reload in progress once its transitions are done
 * (or after 30 s).  Called from the loop after every reap and tick. */
void sup_reload_check_reply(sup *s);
/* The client bev has gone: the reload in progress answers nobody. */
void sup_reload_forget(struct bufferevent *bev);

/* retire.c: what a gone pipeline made upstream (a postgres pipeline's
 * replication slot and the publication zx made), retired by its source's
 * retire hook (conf/plugin.h) in a short-lived process; and the plug-ins'
 * own control commands (zx_plugin_admin), run the same way.
 * During a reload, while old (p's settings until now, in oc, the old
 * configuration) and nc (the new one) both exist: when old's source has a
 * retire hook and nc no longer uses what old made (p removed, or changed
 * to another slot, connection or source), plan its retire on p (oc is
 * kept alive for it: the reload then frees oc with sup_conf_release;
 * nothing starts yet).  No-op otherwise. */
void sup_retire_plan(sup *s, spipe *p, const zx_conf_pipeline *old, zx_conf *oc,
                     const zx_conf *nc);
/* p's old worker has exited: start its planned retires (at most 4 run at
 * once, the rest wait; a failed one is tried again with backoff).  Each
 * outcome is logged and sent to the feed (<what>_dropped, <what>_kept,
 * <what>_drop_failed: slot_dropped...). */
void sup_retire_jobs_run(sup *s, spipe *p);
/* Free a list of retires (killing any process still running).  NULL ok. */
void sup_retire_jobs_free(retire_job *j);
/* The reload is done with the old configuration c: freed now, or once the
 * last retire planned from it is over. */
void sup_conf_release(zx_conf *c);
/* A plug-in's control command a (conf/plugin.h, zx_plugin_admin; e.g.
 * `zxctl drop-slot`) for NAME name, with request req (borrowed; its
 * options checked to be strings): a->check refuses it at once, or it is
 * started in a process of its own and NULL is returned (bev is answered
 * when it is done, within a->timeout_s), or the answer to send at once is
 * returned (refused, too many running, out of memory). */
json_t *sup_admin_start(sup *s, struct bufferevent *bev, const zx_plugin_admin *a,
                        const char *name, json_t *req);
/* The client bev has gone: its control command answers nobody (it still
 * runs). */
void sup_admin_forget(struct bufferevent *bev);

/* forget.c: a removed pipeline's state, and a pipeline's resumed state
 * (the child table's pipe_forgotten and pipe_created hooks, main.c). */
/* Pipeline name was removed and its worker has stopped: ask the writer to drop its positions and state (proto/chan.h FORGET), unless
 * a pipeline of that name is configured again; a writer not running is
 * logged (the state is kept). */
void sup_send_forget(sup *s, const char *name);
/* Read whether p starts with positions or state stored before
 * (p->resumed_us, p->resumed_parts; logged as event=resumed).  A store not
 * there yet or unreadable: none. */
void sup_pipe_resumed_check(sup *s, spipe *p);
/* {"stored_at": time, "positions": N} for `zxctl status`, or JSON
 * null; a new reference. */
json_t *sup_pipe_resumed_json(const spipe *p);

/* probe.c: `zxctl test NAME`.  Starts a prober process for the pipeline
 * or connection NAME and returns NULL (bev is answered when it is done,
 * within about 13 s), or returns the answer to send at once (unknown
 * name, nothing to test, too many tests running). */
json_t *sup_probe_start(sup *s, struct bufferevent *bev, const char *name);

/* verify.c: `zxctl verify NAME [--table T] [--repair]`.  Starts a verify
 * process for the postgres pipeline NAME (table: one of its tables, or
 * NULL for all; repair: hand the differing keys to its worker to re-copy)
 * and returns NULL (bev is answered when it is done, within about 10
 * minutes), or returns the answer to send at once (unknown pipeline, not
 * postgres, one already running). */
json_t *sup_verify_start(sup *s, struct bufferevent *bev, const char *name, const char *table,
                         int repair);
/* The summary of pipeline name's last verify ({"at", "compared",
 * "differing", "repaired"?, "tables", "table"?}; caller decrefs), or
 * NULL.  The verify process also keeps it in <data_dir>/verify/NAME.last,
 * read once after a restart of zxd. */
json_t *sup_verify_last(sup *s, const char *name);

/* syncs.c: reverse-sync runs (proto/control.h: run, preview, runs,
 * approve, reject). */
/* 1 when c is a sync's worker with no run to do: sup_spawn forks nothing
 * (it stays idle), else 0.  The child table's spawn_held hook. */
int sup_sync_idle(sup *s, child *c);
/* Stop the worker of sync p's run in flight, if any and not a preview
 * (which writes nothing): SIGTERM (it cancels its query and writes no
 * more), SIGKILL 5 s later if still there; the run fails with "sync
 * NAME: the run was stopped: <why>".  For a lost lease (lease.c): another
 * zxd may run the sync now.  why is copied. */
void sup_sync_cut(sup *s, spipe *p, const char *why);
/* The worker of sync p exited with wait status st: record its run (from
 * the status it left in the segment), answer whoever waits for it. */
void sup_sync_exited(sup *s, spipe *p, int st);
/* Every tick: schedules (cron), queued runs to start, records to hand to
 * the writer. */
void sup_syncs_tick(sup *s);
/* syncs_change.c: an event of the writer (JSON): a "batch" committed to a
 * table marks the `on: change` syncs that watch it (workers/syncs/
 * sync_watch.h).  The child table's writer_event hook. */
void sup_syncs_writer_event(sup *s, const char *json);
/* Every tick: queue a run of each marked `on: change` sync (coalesced:
 * one queued at most, min_interval apart), and its first run. */
void sup_syncs_change_tick(sup *s);
/* A reload changed sync name: agents' runs previewed with its old
 * settings (awaiting approval, or approved and not started yet) fail, so
 * that an approval never sends what the operator did not see. */
void sup_syncs_changed(sup *s, const char *name);
/* A control command of syncs_cmd.c (cmd: "run", "preview", "runs", "approve",
 * "reject"): the answer, or NULL when bev will be answered later (the run
 * ends). */
json_t *sup_sync_command(sup *s, struct bufferevent *bev, const char *cmd, json_t *req);
/* bev is gone: forget it as a waiter. */
void sup_sync_forget(struct bufferevent *bev);
/* The id and ZX_RUN_* flags of the run sync p's worker is forked for
 * (0 and 0 when none), and the rows the sync's last run that read its
 * whole result read (0 unknown).  The child table's worker_args hook. */
void sup_sync_worker_args(const spipe *p, uint64_t *run_id, unsigned *run_flags,
                          uint64_t *run_expect_rows);
/* What `status` shows of sync p: {"state": "idle"|"running"|..., "run":
 * {progress}, "last_run": {...}, "next_run_at": "..."}; NULL for other
 * pipelines. */
json_t *sup_sync_status(sup *s, spipe *p);
/* Start a run asked for over the API by token tok (gateway), with
 * ZX_RUN_FULL in flags or not: 0 and *id, or -1 with an HTTP status and
 * message. */
int sup_sync_api_run(sup *s, const char *sync, const zx_conf_apitoken *tok, unsigned flags,
                     uint64_t *id, int *http, char *msg, size_t msglen);
/* A one-off send's run on transient pipeline p (syncs_send.c): queue it,
 * bev answered when it ends (NULL returned), or the answer now. */
json_t *sup_sync_queue_oneoff(sup *s, struct bufferevent *bev, spipe *p);
/* 1 when transient pipeline p has no run left to do or to answer. */
int sup_sync_oneoff_done(sup *s, spipe *p);

/* syncs_send.c: `zxctl send` (control command "send"): the answer, or NULL
 * when bev is answered once the run ends. */
json_t *sup_sync_send(sup *s, struct bufferevent *bev, json_t *req);
/* Free the transient pipelines of sends that are over (every tick, but
 * while zxd stops). */
void sup_sync_sends_tick(sup *s);

/* A request of the gateway's sync API (ZX_CHAN_API, proto/chan.h):
 * check its token, do it, answer the gateway (op "metrics": GET
 * /metrics, answered with the text in a memfd, metrics.h).  The child table's
 * gateway_api hook. */
void sup_sync_api(sup *s, const char *json);
/* Run id's record (new object, all of it: trim it with sup_run_api_view
 * before an API client sees it), or NULL when there is none, or when it
 * is a plain preview or a one-off send (`zxctl`), which are no runs of
 * the API's. */
json_t *sup_sync_run_json(sup *s, uint64_t id);

/* syncs_view.c: trim run record rec (from sup_sync_run_json) in place to
 * what API token t may read: 0, or -1 when t may not read that run at
 * all (answer 404).  Never leaves a value of the data in it (a preview's
 * sample; the error of an agent's run that failed before approval). */
int sup_run_api_view(json_t *rec, const zx_conf_apitoken *t);

#endif
