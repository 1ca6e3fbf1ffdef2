/*
 * sup.h — the supervisor's own state, shared by its files (children.c,
 * reload.c, control.c, feed.c, main.c).  Nothing outside supervisor/
 * includes it.
 *
 * The supervisor forks and watches; it never parses user data, never
 * writes LMDB and never talks to a database (it reads the store read-only
 * for `zxctl status` and `checkpoints`, opened and closed per request).
 */
#ifndef ZX_SUPERVISOR_SUP_H
#define ZX_SUPERVISOR_SUP_H

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/segment.h"
#include "conf/config.h"

typedef enum { ST_STOPPED = 0, ST_STARTING, ST_RUNNING, ST_BACKOFF, ST_FAILED, ST_DRAINING } zx_state;
typedef enum {
    ROLE_WRITER = 0, ROLE_GATEWAY, ROLE_STREAM,
    ROLE_VERIFY              /* a `zxctl verify` process (verify.c), not a child
                                of the table: for sup_child_harden only */
} zx_role;

const char *zx_state_name(zx_state s);

typedef struct spipe spipe;
typedef struct sup sup;
typedef struct sup_msg sup_msg;   /* outbox.c */
typedef struct retire_job retire_job; /* retire.c */
typedef struct sync_run sync_run; /* syncs.c */

/* What to do once a child we asked to stop has exited. */
/* NEXT_RECREATE: the pipeline's settings need new rings (a larger body
 * limit, another ring size): once the old worker has drained, the old
 * segment is let go and a new one made under the same name. */
typedef enum { NEXT_NONE = 0, NEXT_RESTART, NEXT_REMOVE, NEXT_RECREATE } zx_next;

typedef struct child {
    zx_role role;
    char name[64];           /* "writer", "gateway" or the pipeline name */
    pid_t pid;               /* 0 when not running */
    zx_state state;
    int want;                /* 1: keep it running; 0: it was stopped on purpose */
    zx_next next;
    unsigned restarts;       /* unplanned exits since zxd started */
    char last_error[ZX_SEG_SOURCE_ERROR_MAX + 160]; /* a source's refusal and
                                                       what to do about it */
    int64_t crash_ms[5];     /* times of the last crashes (monotonic) */
    unsigned ncrash;
    int64_t respawn_at_ms;   /* ST_BACKOFF: when to start again */
    int64_t kill_at_ms;      /* stop requested: SIGKILL after this */
    int chan;                /* writer/gateway: our end of the socketpair */
    struct event *chan_ev;
    sup_msg *out_head, *out_tail; /* messages waiting for room (outbox.c) */
    size_t out_len;
    struct event *out_ev;
    spipe *pipe;             /* ROLE_STREAM */
} child;

struct spipe {
    char name[64];
    const zx_conf_pipeline *conf;  /* in sup->conf */
    zx_segment seg;
    int efd;                 /* the worker's eventfd */
    child worker;
    int removing;
    int in_use;
    retire_job *retire_jobs; /* a reload abandoned what this pipeline made
                                upstream (a replication slot): retires to
                                start once its old worker has exited
                                (retire.c) */
    /* a reverse sync (direction: out, syncs.c): its worker runs only for a
     * run */
    sync_run *run;           /* the run its worker is doing, or NULL (idle) */
    zx_conf_pipeline *owned_conf; /* a one-off send's (syncs_send.c): conf
                                points at it; not in the configuration */
    int64_t next_fire_us;    /* schedule: next fire (UTC µs); 0 = none/unset */
    uint32_t note_seq_seen;  /* seg's source_note_seq last fed */
    int64_t resumed_us;      /* it started with state stored before (the
                                store's last commit of it, µs), 0: none
                                (forget.c) */
    size_t resumed_parts;    /* ... and that many upstream positions */
    int forget_state;        /* removed by a reload: drop its positions and
                                state once its worker is gone (forget.c) */
};

typedef struct feed_client {
    struct bufferevent *bev;
    struct feed_client *next;
} feed_client;

struct sup {
    zx_conf *conf;
    const char *conf_path;
    struct event_base *base;
    pid_t pid;
    int64_t started_us;

    child writer, gateway;
    int writer_efd, gateway_efd;
    int listen_fd;
    int writer_ready;
    uint64_t gateway_generation; /* gateways started so far (zx_gateway_args) */

    spipe *pipes[ZX_MAX_PIPELINES];
    size_t npipes;

    int ctl_fd;
    struct event *ctl_ev;
    size_t nctl;             /* open control connections (followers too) */
    struct event *tick_ev;

    /* feed: recent events (JSON lines with "ts") and followers */
    char *history[200];
    size_t hist_head, hist_len;
    feed_client *followers;

    /* The reload in progress (from `zxctl reload` or SIGHUP), until its
     * transitions are done: its result object ("ok", "added", ...; a
     * pipeline that could not be started is added to "failed"), and the
     * zxctl connection waiting for it (NULL for SIGHUP or when it left). */
    json_t *reload_result;
    struct bufferevent *reload_bev;
    int64_t reload_deadline_ms;
    int reload_again;        /* SIGHUP came during a reload: run it again */

    /* reverse-sync runs (syncs.c): newest first; queued, previewing,
     * awaiting approval, running, and the last finished ones */
    sync_run *runs;
    size_t nruns;
    uint64_t last_run_id;
    int syncs_started;       /* the first tick after start looked for runs
                                missed while zxd was down */
    int runs_restored;       /* the store's cut and waiting runs were read */

    int shutting_down;
    int shutdown_phase;
    int fatal;               /* the writer or gateway exited with
                                ZX_EXIT_FATAL_CONFIG: drain and exit 1 */
};

/* The one supervisor of this process (main.c); callbacks that only get a
 * child or a connection find it here. */
extern sup *zx_the_sup;

/* children.c */
/* Fork c (its role decides what runs).  0, or -1 with the reason in
 * c->last_error (socketpair or fork failed); c is then not running.  A
 * stream pipeline whose source this build has no worker for (the
 * configuration knows it, workers/sources/registry.c does not) is not
 * forked: it is marked failed ("pipeline X: source S is not available in
 * this build yet", in last_error, the log and the feed) and 0 is returned:
 * there is nothing to retry, and zxd goes on with its other pipelines. */
int sup_spawn(sup *s, child *c);

/* scrub.c: in a child just forked for role (own: its pipeline, NULL for
 * the writer and the gateway): not dumpable unless server.core_dumps, and
 * every secret of c the role does not need zeroed wherever a copy of it is
 * in the child's memory (c's own strings included: they read as "" then).
 * Never fails: a scan that cannot run is logged. */
void sup_child_harden(const zx_conf *c, zx_role role, const zx_conf_pipeline *own);
/* Ask c to stop (SIGTERM; SIGKILL after 10 s) and do `next` once it has
 * exited (sup_reap); a child not running acts at once. */
void sup_stop_child(sup *s, child *c, zx_next next);
/* Reap every exited child (WNOHANG loop): restart with backoff, mark
 * failed, or finish a requested stop.  Call after SIGCHLD. */
void sup_reap(sup *s);
/* Respawn children whose backoff has passed; SIGKILL those past their
 * stop deadline.  Call from the 100 ms tick. */
void sup_tick_children(sup *s);
/* Queue an ATTACH of every pipeline (but those being removed) to c. */
void sup_attach_all(sup *s, child *c);
/* Queue ATTACH {name, key, ...} with p's segment fd and eventfd to c
 * (writer or gateway; no-op when c is not running).  Never dropped
 * (outbox.c); an encoding failure is logged. */
void sup_send_attach(sup *s, child *c, spipe *p);
/* Queue DETACH {name, epoch} of p to c (no-op when c is not running). */
void sup_send_detach(sup *s, child *c, const spipe *p);
/* forget.c: pipeline name was removed and its worker has stopped: ask
 * the writer to drop its positions and state (proto/chan.h FORGET), unless
 * a pipeline of that name is configured again; a writer not running is
 * logged (the state is kept). */
void sup_send_forget(sup *s, const char *name);
/* forget.c: read whether p starts with positions or state stored before
 * (p->resumed_us, p->resumed_parts; logged as event=resumed).  A store not
 * there yet or unreadable: none. */
void sup_pipe_resumed_check(sup *s, spipe *p);
/* forget.c: {"stored_at": time, "positions": N} for `zxctl status`, or JSON
 * null; a new reference. */
json_t *sup_pipe_resumed_json(const spipe *p);
/* 1 when the rings a pipeline with settings pc needs differ from p's. */
int sup_pipe_needs_new_rings(const spipe *p, const zx_conf_pipeline *pc);
/* Make pipeline pc's segment (rings sized by the configuration) and
 * eventfd, and add it to s->pipes; its worker is not started.  Returns it
 * (owned by s, freed by sup_pipe_free), or NULL with the reason in err
 * (shared memory, too few descriptors left, out of memory). */
spipe *sup_pipe_new(sup *s, const zx_conf_pipeline *pc, char *err, size_t errlen);
/* Remove p from s->pipes, unmap its segment, close its fds, free it. */
void sup_pipe_free(sup *s, spipe *p);
/* The pipeline named name, skipping those being removed; NULL if none.
 * Owned by s. */
spipe *sup_find_pipe(sup *s, const char *name);
/* Bind and listen on server.http.listen.  Returns the non-blocking,
 * close-on-exec socket (owned by the caller), or -1 with the reason. */
int sup_listen_http(const zx_conf *c, char *err, size_t errlen);
/* Record whether the writer is up, in s and in every segment's header. */
void sup_set_writer_up(sup *s, int up);

/* outbox.c */
/* Send a message to c (writer or gateway), or queue it, in order, while
 * c's socket is full: it is never dropped while c lives.  The fds are
 * duplicated when queued; the caller keeps its own.  0 sent or queued;
 * -1 when c is not running or its socket failed (logged). */
int sup_chan_send(sup *s, child *c, int type, const char *json, const int *fds, int nfds);
/* Forget what waits for c (it is gone): close the fds, free the event. */
void sup_outbox_clear(child *c);

/* reload.c */
/* Load the file again and apply the difference.  Returns the result
 * object (control protocol "reload" result, proto/control.h), owned by
 * the caller: "ok" false with "error"/"errors" when the file was rejected
 * and nothing changed; else "ok" true with added/changed/removed/unchanged
 * and an empty "failed" list, which grows (sup_reload_failed) while the
 * transitions run.  NULL only when out of memory (logged). */
json_t *sup_reload(sup *s);
/* A pipeline of the reload in progress could not be started: record it in
 * s->reload_result (no-op without one).  why is copied. */
void sup_reload_failed(sup *s, const char *pipeline, const char *why);
/* Once its transitions are done, the reload result is final: "ok" becomes
 * false with an "error" naming the pipelines in "failed", if any.
 * Logs the outcome.  Returns r. */
json_t *sup_reload_finish(json_t *r);
int sup_transitions_done(sup *s);

/* feed.c */
/* Add "ts" to ev (a JSON object text without it), keep it in the history
 * and send it to every follower. */
void sup_feed(sup *s, const char *json_event);
void sup_feedf(sup *s, const char *event, const char *pipeline, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sup_feed_follow(sup *s, struct bufferevent *bev, int follow);

/* control.c */
int sup_control_open(sup *s, char *err, size_t errlen);
void sup_control_close(sup *s);
/* Free a control connection and count it out (every control bufferevent
 * is freed through here, followers included). */
void sup_control_conn_free(sup *s, struct bufferevent *bev);
/* Start a reload for `zxctl reload` (bev, answered once its transitions
 * are done) or for SIGHUP (bev NULL; the outcome is logged).  A SIGHUP
 * during a reload runs another one after it. */
void sup_reload_start(sup *s, struct bufferevent *bev);
/* Queue o (taken; NULL answers "cannot encode") as one JSON line to the
 * control client bev. */
void sup_control_reply(struct bufferevent *bev, json_t *o);
/* Finish a control connection once its answer is written. */
void sup_control_finish(sup *s, struct bufferevent *bev);

/* probe.c: `zxctl test NAME`.  Starts a prober process for the pipeline
 * or connection NAME and returns NULL (bev is answered when it is done,
 * within about 13 s), or returns the answer to send at once (unknown
 * name, nothing to test, too many tests running). */
json_t *sup_probe_start(sup *s, struct bufferevent *bev, const char *name);
/* The client bev has gone: its probe answers nobody. */
void sup_probe_forget(struct bufferevent *bev);

/* verify.c: `zxctl verify NAME [--table T] [--repair]`.  Starts a verify
 * process for the postgres pipeline NAME (table: one of its tables, or
 * NULL for all; repair: hand the differing keys to its worker to re-copy)
 * and returns NULL (bev is answered when it is done, within about 10
 * minutes), or returns the answer to send at once (unknown pipeline, not
 * postgres, one already running). */
json_t *sup_verify_start(sup *s, struct bufferevent *bev, const char *name, const char *table,
                         int repair);
/* The client bev has gone: its verify answers nobody. */
void sup_verify_forget(struct bufferevent *bev);
/* The summary of pipeline name's last verify ({"at", "compared",
 * "differing", "repaired"?, "tables", "table"?}; caller decrefs), or
 * NULL.  The verify process also keeps it in <data_dir>/verify/NAME.last,
 * read once after a restart of zxd. */
json_t *sup_verify_last(sup *s, const char *name);

/* retire.c: what a gone pipeline made upstream (a postgres pipeline's
 * replication slot and the publication zx made), retired by its source's
 * retire hook (workers/sources/source.h) in a short-lived process.
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
/* `zxctl drop-slot`: start dropping slot on connection conn (NULL: every
 * postgres connection) and return NULL (bev is answered when done, within
 * about 2 minutes), or return the answer to send at once (a bad name, the
 * slot of a configured pipeline, no such connection, too many running). */
json_t *sup_slot_admin_start(sup *s, struct bufferevent *bev, const char *slot,
                             const char *conn);
/* The client bev has gone: its drop-slot answers nobody (it still runs). */
void sup_slot_forget(struct bufferevent *bev);

/* Answer and forget the reload in progress once its transitions are done
 * (or after 30 s).  Called from the loop after every reap and tick. */
void sup_reload_check_reply(sup *s);

/* syncs.c: reverse-sync runs (proto/control.h: run, preview, runs,
 * approve, reject). */
/* 1 when c is a sync's worker with no run to do: sup_spawn forks nothing
 * (it stays idle), else 0. */
int sup_sync_idle(sup *s, child *c);
/* The worker of sync p exited with wait status st: record its run (from
 * the status it left in the segment), answer whoever waits for it. */
void sup_sync_exited(sup *s, spipe *p, int st);
/* Every tick: schedules (cron), queued runs to start, records to hand to
 * the writer. */
void sup_syncs_tick(sup *s);
/* A reload changed sync name: agents' runs previewed with its old
 * settings (awaiting approval, or approved and not started yet) fail, so
 * that an approval never sends what the operator did not see. */
void sup_syncs_changed(sup *s, const char *name);
/* A control command of syncs.c (cmd: "run", "preview", "runs", "approve",
 * "reject"): the answer, or NULL when bev will be answered later (the run
 * ends). */
json_t *sup_sync_command(sup *s, struct bufferevent *bev, const char *cmd, json_t *req);
/* bev is gone: forget it as a waiter. */
void sup_sync_forget(struct bufferevent *bev);
/* The id and ZX_RUN_* flags of run r (for the forked worker). */
uint64_t zx_sync_run_id(const sync_run *r);
unsigned zx_sync_run_flags(const sync_run *r);
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
/* Free the transient pipelines of sends that are over. */
void sup_sync_sends_tick(sup *s);

/* A request of the gateway's sync API (ZX_CHAN_API, proto/chan.h):
 * check its token, do it, answer the gateway. */
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
