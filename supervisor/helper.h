/*
 * helper.h — a job of the supervisor's second floor (jobs.h) that the
 * other jobs share: fork a helper process, let it work out one answer
 * (a JSON object) away from the event loop, read that answer with a
 * deadline, and hand it to whoever waits.  `zxctl test` (probe.c) and
 * `zxctl verify` (verify.c) use it; any job whose work may block or crash
 * (a database, a network peer) fits it.
 *
 * The child inherits the loaded configuration through fork, keeps no
 * descriptor of the supervisor's but its pipe, dies with the supervisor
 * (PR_SET_PDEATHSIG) and by alarm() after kind->alarm_s; the supervisor
 * kills it (SIGKILL, reaped by sup_reap) after kind->deadline_s.  The
 * supervisor's loop never blocks on it (the pipe is read by an event).
 */
#ifndef ZX_SUPERVISOR_HELPER_H
#define ZX_SUPERVISOR_HELPER_H

#include <event2/bufferevent.h>
#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "supervisor/sup.h"

/* What kind of helper: static, shared by every helper of the kind. */
typedef struct sup_helper_kind {
    /* one word for messages and the child's log name: "test", "verify"
     * ("the verify did not finish in time (it was stopped)") */
    const char *what;
    int alarm_s;             /* the child's own deadline (alarm) */
    int deadline_s;          /* the supervisor's: then SIGKILL */
    size_t answer_max;       /* bytes of answer at most */
    /* In the child: do the work and return the answer (an object; NULL
     * answers nothing).  arg is what sup_helper_start was given (the
     * child's copy of the caller's memory). */
    json_t *(*run)(const zx_conf *conf, const void *arg);
    /* In the supervisor, exactly once per helper started: its answer
     * (taken; on any failure {"ok":false,"name":name,"error":why}, NULL
     * only when out of memory), the client waiting for it (NULL when it
     * left or there was none) and the data given to sup_helper_start
     * (freed after done returns).  done answers the client itself. */
    void (*done)(sup *s, const char *name, void *data, struct bufferevent *waiter,
                 json_t *answer);
} sup_helper_kind;

/* Fork a helper of kind k for name (copied; at most 127 bytes kept),
 * running k->run(s->conf, arg) in the child.  data (malloc'd or NULL) is
 * taken: handed to k->done, then freed; freed at once on failure.
 * Returns NULL when the helper runs (*pid set; k->done says the end), or
 * the answer to give now, owned by the caller: {"ok":false,"error":
 * "cannot start the WHAT (out of resources|fork failed)"} or "cannot
 * watch the WHAT (out of memory)". */
json_t *sup_helper_start(sup *s, const sup_helper_kind *k, const char *name, const void *arg,
                         void *data, struct bufferevent *waiter, pid_t *pid);
/* Helpers of kind k running: all of them (name NULL), or those for name. */
size_t sup_helper_count(const sup_helper_kind *k, const char *name);
/* The client waiter has gone: the helpers it waited for answer nobody
 * (they still run to their end). */
void sup_helper_forget(struct bufferevent *waiter);

#endif
