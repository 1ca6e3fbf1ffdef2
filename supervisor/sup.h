/*
 * sup.h — the supervisor's bottom floor: its state (the child table: the
 * writer, the gateway and one worker per pipeline, with their segments),
 * and what that floor does: fork, reap and restart children (children.c),
 * send them messages (outbox.c), harden them (scrub.c), keep the event
 * feed (feed.c), answer and close control connections (ctlconn.c).
 *
 * The supervisor is built in floors; a floor calls only the floors below:
 *   1. this header: the child table and its events;
 *   2. jobs.h: the jobs (reload, probes, verifies, sync runs, retires and
 *      plug-ins' control commands, forgets),
 *      with helper.h (a helper process that answers in JSON);
 *   3. control.h: the control commands, rows of one command table;
 *   main.c wires them.  Where this floor must tell a higher one something
 *   (a child exited, a pipeline could not start, a control client left),
 *   it calls the hooks the higher floor registered (sup_child_hooks,
 *   sup_client_on_gone), never the higher floor itself.
 * Nothing outside supervisor/ includes it.
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

#include "common/progress.h"
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
    const zx_conf_pipeline *conf;  /* in sup->conf; NULL once a reload removed it */
    char gone_source[32];    /* its source, kept when a reload removes it (conf
                                NULL) for `zxctl status` while it drains */
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
    /* `on: change` (syncs_change.c): a commit changed a table it watches
     * since its last change run was queued (when the first such did:
     * wall-clock µs); when it last queued one (monotonic ms); whether
     * its first run (start, or added) was queued */
    int change_pending;
    int64_t change_first_us;
    int64_t change_last_ms;
    int change_started;
    uint64_t change_run_id;  /* the run answering the changes, until final */
    unsigned change_fails;   /* such runs failed in a row (backoff) */
    uint32_t note_seq_seen;  /* seg's source_note_seq last fed */
    int64_t resumed_us;      /* it started with state stored before (the
                                store's last commit of it, µs), 0: none
                                (forget.c) */
    size_t resumed_parts;    /* ... and that many upstream positions */
    int forget_state;        /* removed by a reload: drop its positions and
                                state once its worker is gone (forget.c) */
    /* a reverse sync's runs that ended since p was made, by outcome
     * (SUP_RUN_OUTCOMES), and the seconds those that ran took (syncs.c
     * counts them; GET /metrics shows them, metrics.c) */
    uint64_t runs_ended[5];
    uint64_t runs_timed;
    double run_seconds;
    /* its worker's long work in progress (the segment's progress slot) as
     * the tick samples it (progress.c): the work the samples are of (what
     * and when it began), the last update sampled, the rate's samples,
     * when its last progress event went out (monotonic ms, 0 none yet) */
    char prog_what[ZX_SEG_PROGRESS_WHAT_MAX];
    int64_t prog_started_us, prog_updated_us;
    zx_rate prog_rate;
    int64_t prog_feed_ms;
};

/* The outcomes of a sync run, in the order of spipe.runs_ended. */
#define SUP_RUN_OUTCOMES {"succeeded", "failed", "rejected", "expired", "previewed"}

typedef struct feed_client {
    struct bufferevent *bev;
    struct feed_client *next;
} feed_client;

/* What the child table tells the floors above (children.c calls them;
 * main.c fills them in before the first spawn; a NULL hook is skipped). */
typedef struct sup_child_hooks {
    /* 1 when c must not be forked now (a sync's worker with no run to do:
     * it stays idle); sup_spawn then returns 0 */
    int (*spawn_held)(sup *s, child *c);
    /* the run id and ZX_RUN_* flags the worker of p is forked with */
    void (*worker_args)(const spipe *p, uint64_t *run_id, unsigned *run_flags,
                        uint64_t *run_expect_rows);
    /* the worker of sync p exited with wait status st (never restarted:
     * a sync's worker lives for one run) */
    void (*sync_exited)(sup *s, spipe *p, int st);
    /* p's worker, stopped on purpose, is gone (or was not running): before
     * p is removed, recreated or restarted */
    void (*worker_stopped)(sup *s, spipe *p);
    /* p is about to be freed (sup_pipe_free) */
    void (*pipe_freed)(spipe *p);
    /* pipeline could not be started (why: the reason); 1 when a reload in
     * progress took note of it (and reports it), 0 when nobody did */
    int (*start_failed)(sup *s, const char *pipeline, const char *why);
    /* a request of the gateway's sync API (ZX_CHAN_API, proto/chan.h) */
    void (*gateway_api)(sup *s, const char *json);
    /* an event of the writer (ZX_CHAN_EVENT: JSON, before the feed has
     * it) */
    void (*writer_event)(sup *s, const char *json);
    /* the writer's view of a lease (ZX_CHAN_LEASE: JSON; lease.h) */
    void (*writer_lease)(sup *s, const char *json);
    /* p was just made (sup_pipe_new), its worker not started yet */
    void (*pipe_created)(sup *s, spipe *p);
    /* removed pipeline name (a reload asked for its state to go:
     * forget_state) is gone: its worker stopped, its segment detached
     * from the writer and the gateway, p freed; not called while zxd
     * stops */
    void (*pipe_forgotten)(sup *s, const char *name);
} sup_child_hooks;

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
    uint64_t hist_id[200];   /* each event's id (feed.c: increasing, also
                                across restarts of zxd) */
    size_t hist_head, hist_len;
    feed_client *followers;
    uint64_t feed_last_id;   /* the id of the newest event; 0: none yet */
    uint64_t feed_lost;      /* the newest id no longer in the history
                                (evicted, or before this zxd started) */
    uint64_t feed_gw_lost;   /* the newest id the gateway will never get
                                (ZX_CHAN_FEED "lost", proto/chan.h) */

    /* The reload in progress (from `zxctl reload` or SIGHUP), until its
     * transitions are done: its result object ("ok", "added", ...; a
     * pipeline that could not be started is added to "failed"), and the
     * zxctl connection waiting for it (NULL for SIGHUP or when it left). */
    json_t *reload_result;
    struct bufferevent *reload_bev;
    int64_t reload_deadline_ms;
    int reload_again;        /* SIGHUP came during a reload: run it again */
    int sd_ready;            /* READY=1 told to systemd (main.c; common/sdnotify.h):
                              * reloads then say RELOADING=1 ... READY=1 */

    /* reverse-sync runs (syncs.c): newest first; queued, previewing,
     * awaiting approval, running, and the last finished ones */
    sync_run *runs;
    size_t nruns;
    uint64_t last_run_id;
    int syncs_started;       /* the first tick after start looked for runs
                                missed while zxd was down */
    int runs_restored;       /* the store's cut and waiting runs were read */

    sup_child_hooks hooks;   /* set by main.c (see sup_child_hooks) */

    int shutting_down;
    int shutdown_phase;
    int fatal;               /* the writer or gateway exited with
                                ZX_EXIT_FATAL_CONFIG: drain and exit 1 */
};

/* The one supervisor of this process (sup.c; set by main.c): callbacks
 * that only get a child or a connection find it here. */
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

/* feed.c */
/* Add "ts" to ev (a JSON object text without it), keep it in the history
 * and send it to every follower. */
void sup_feed(sup *s, const char *json_event);

/* progress.c: every tick, sample each pipeline's progress slot (the rate
 * over the last ~5 s) and send a "progress" event per pipeline with work
 * in progress at most every 5 s (none while idle). */
void sup_progress_tick(sup *s);
/* p's work in progress as {"what", "done", "expected" (null unknown),
 * "exact", "percent", "rate", "eta_seconds" (null unknown), "started_at",
 * "updated_at", "line"}, or NULL when none (its worker is not running, or
 * says none).  A new object: the caller decrefs. */
json_t *sup_progress_json(const spipe *p);
void sup_feedf(sup *s, const char *event, const char *pipeline, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sup_feed_follow(sup *s, struct bufferevent *bev, int follow);
/* A gateway (re)started: send it the history (ZX_CHAN_FEED, before its
 * READY) so that its clients can resume across its restart. */
void sup_feed_gateway_history(sup *s, child *gw);

/* ctlconn.c: a control connection (zxctl) of any floor: answer it,
 * close it once answered, count it out. */
/* Queue o (taken; NULL answers "cannot encode") as one JSON line to the
 * control client bev. */
void sup_control_reply(struct bufferevent *bev, json_t *o);
/* Finish a control connection once its answer is written (it is freed
 * then, or when the client goes). */
void sup_control_finish(sup *s, struct bufferevent *bev);
/* Free a control connection and count it out (every control bufferevent
 * is freed through here, followers included). */
void sup_control_conn_free(sup *s, struct bufferevent *bev);
/* Watch a new control connection bev (counted in s->nctl by the caller):
 * read calls on_read; an error, timeout or EOF frees it after telling
 * every hook of sup_client_on_gone. */
void sup_control_watch(struct bufferevent *bev, void (*on_read)(struct bufferevent *, void *));
/* Register fn, told of every control client that goes (error, timeout,
 * EOF) before it is freed: a job waiting to answer it forgets it.  At
 * most 8; 0, or -1 when full. */
int sup_client_on_gone(void (*fn)(struct bufferevent *bev));

#endif
