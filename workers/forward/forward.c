/*
 * forward.c — the forwarder thread (forward.h): read the journal, publish,
 * delete, and wait a little when it is empty.
 *
 * It must never: delete an entry before its run committed, stop the
 * stream because the forward target fails, or print a secret (the
 * destination's and the journal's messages carry none).
 */
#include "workers/forward/forward.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "conf/plugin.h"
#include "workers/destinations/kafka/kafka_dest_opts.h"
#include "workers/forward/fwd_journal.h"
#include "workers/forward/fwd_send.h"

#define READ_FRAMES 64
#define READ_BYTES (16u << 20)
#define IDLE_MS 100
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000
#define REPORT_MS 2000

struct zx_fwd {
    const zx_conf *conf;
    const zx_conf_pipeline *p;
    pthread_t th;
    atomic_int stop;
    zx_fwd_out out;
    zx_fwd_hooks h;
    int64_t reported_ms;
    char reported_err[200];
};

/* The status (forward.h) to the reporter: every REPORT_MS, or at once
 * when the error changed or when forced.  The journal is counted then (j
 * may be NULL). */
static void report(zx_fwd *f, zx_fwdj *j, const char *error, int force)
{
    int64_t now = zx_mono_ms();
    const char *e = error && error[0] ? error : "";
    if (!f->h.report || (!force && now - f->reported_ms < REPORT_MS && !strncmp(e, f->reported_err,
                                                                     sizeof(f->reported_err) - 1)))
        return;
    f->reported_ms = now;
    snprintf(f->reported_err, sizeof(f->reported_err), "%s", e);
    uint64_t count = 0, first = 0;
    char jerr[256];
    if (j)
        zx_fwdj_pending(j, f->p->name, &count, &first, jerr, sizeof(jerr));
    int64_t age = -1;
    if (first) {
        age = (zx_now_us() - (int64_t)first) / 1000;
        if (age < 0)
            age = 0;    /* n runs ahead of the clock when frames come faster than 1/µs */
    }
    const zx_kafka_dest_opts *ko = f->p->dest_own;
    const char *topic = ko && ko->ntopic && !strcmp(f->p->dest_plugin->name, "kafka")
                            ? ko->topic[0] : "";
    /* the error cut so that the object fits */
    char shown[160];
    snprintf(shown, sizeof(shown), "%s", e);
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o}",
                          "to", f->p->dest_plugin->name, "topic", topic,
                          "frames", (json_int_t)f->out.frames, "rows", (json_int_t)f->out.rows,
                          "deletes", (json_int_t)f->out.deletes,
                          "skipped", (json_int_t)f->out.skipped,
                          "pending_frames", (json_int_t)count,
                          "oldest_pending_ms", age >= 0 ? json_integer(age) : json_null(),
                          "last_error", shown[0] ? json_string(shown) : json_null());
    char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (txt && strlen(txt) < ZX_FWD_STATUS_MAX)
        f->h.report(f->h.ctx, txt);
    free(txt);
    json_decref(o);
}

static int stopping(void *ctx)
{
    return atomic_load(&((zx_fwd *)ctx)->stop);
}

/* Sleep ms, looking at the stop every 50 ms; with wake, returning as
 * soon as the writer committed frames of the pipeline (looked at every
 * 2 ms). */
static void nap(zx_fwd *f, int64_t ms, int wake)
{
    int64_t until = zx_mono_ms() + ms;
    wake = wake && f->h.committed;
    uint64_t seen = wake ? f->h.committed(f->h.ctx) : 0;
    while (!stopping(f) && zx_mono_ms() < until) {
        struct timespec ts = {0, (wake ? 2 : 50) * 1000000L};
        nanosleep(&ts, NULL);
        if (wake && f->h.committed(f->h.ctx) != seen)
            return;
    }
}

static void *run(void *arg)
{
    zx_fwd *f = arg;
    const zx_conf_pipeline *p = f->p;
    const zx_dest *ops = p->dest_plugin->dest;
    zx_dest_args da = {.conf = f->conf, .sync = p->name, .conn = p->dest_conn,
                       .opts = p->dest_own, .deadline_ms = 30000,
                       .stopping = stopping, .stop_ctx = f, .role = "forward of"};
    const zx_kafka_dest_opts *ko = p->dest_own;
    f->out.ops = ops;
    f->out.pipeline = p->name;
    if (ko && !strcmp(p->dest_plugin->name, "kafka")) {
        f->out.must_cols = (const char *const *)ko->key;
        f->out.nmust = ko->nkey;
    }
    zx_fwdj *j = NULL;
    int64_t backoff = BACKOFF_MIN_MS;
    char err[1024], last_err[1024] = "";
    uint64_t told_rows = 0;
    while (!stopping(f)) {
        err[0] = '\0';
        if (!j && !(j = zx_fwdj_open(f->conf, err, sizeof(err))))
            goto failed;
        zx_fwdj_entry *e = NULL;
        size_t n = 0;
        if (zx_fwdj_read(j, p->name, READ_FRAMES, READ_BYTES, &e, &n, err, sizeof(err)) < 0)
            goto failed;
        if (!n) {
            report(f, j, last_err, 0);
            nap(f, IDLE_MS, 1);
            continue;
        }
        /* the destination is opened when there is something to send (an
         * absent broker costs nothing while the stream has no rows), after
         * the status says what waits */
        if (!f->out.state) {
            report(f, j, last_err, 1);   /* opening may take the timeout */
            if (ops->open(&da, &f->out.state, err, sizeof(err)) < 0) {
                f->out.state = NULL;
                zx_fwdj_entries_free(e, n);
                goto failed;
            }
        }
        uint64_t done = 0, bad = f->out.bad_frames;
        int rc = zx_fwd_publish(&f->out, e, n, &done, err, sizeof(err));
        if (f->out.bad_frames != bad)
            zx_error("event=forward_bad_frames pipeline=%s frames=%" PRIu64 " last_n=%" PRIu64
                     " error=\"%s\" (passed: not published)", p->name,
                     f->out.bad_frames - bad, f->out.bad_n, f->out.bad_why);
        zx_fwdj_entries_free(e, n);
        char derr[512];
        if (done && zx_fwdj_delete(j, p->name, done, derr, sizeof(derr)) < 0) {
            /* published, not deleted: they go again (at least once) */
            snprintf(err, sizeof(err), "%s", derr);
            goto failed;
        }
        if (rc < 0) {
            /* the destination's session may be what failed: a new one */
            ops->close(f->out.state);
            f->out.state = NULL;
            goto failed;
        }
        if (last_err[0]) {
            zx_info("event=forward_recovered pipeline=%s", p->name);
            last_err[0] = '\0';
        }
        backoff = BACKOFF_MIN_MS;
        report(f, j, "", 0);
        if (f->out.rows + f->out.deletes >= told_rows + 100000 || !told_rows) {
            told_rows = f->out.rows + f->out.deletes;
            zx_info("event=forward_progress pipeline=%s frames=%" PRIu64 " rows=%" PRIu64
                    " deletes=%" PRIu64 " skipped=%" PRIu64 " last_n=%" PRIu64, p->name,
                    f->out.frames, f->out.rows, f->out.deletes, f->out.skipped, done);
        }
        continue;
failed:
        if (stopping(f))
            break;
        /* the same error again is logged at most once per backoff step up */
        if (strcmp(err, last_err) || backoff == BACKOFF_MAX_MS)
            zx_warn("event=forward_failed pipeline=%s retry_in_ms=%" PRId64 " error=\"%s\"",
                    p->name, backoff, err);
        snprintf(last_err, sizeof(last_err), "%s", err);
        report(f, j, err, 0);
        nap(f, backoff, 0);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    if (f->out.state)
        ops->close(f->out.state);
    f->out.state = NULL;
    zx_fwdj_close(j);
    return NULL;
}

zx_fwd *zx_fwd_start(const zx_conf *conf, const zx_conf_pipeline *p,
                     const zx_fwd_hooks *hooks, char *err, size_t errlen)
{
    zx_fwd *f = calloc(1, sizeof(*f));
    if (!f) {
        snprintf(err, errlen, "forward: out of memory");
        return NULL;
    }
    f->conf = conf;
    f->p = p;
    if (hooks)
        f->h = *hooks;
    f->reported_ms = -REPORT_MS;
    atomic_init(&f->stop, 0);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&f->th, NULL, run, f);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "forward: cannot start its thread: %s", strerror(rc));
        free(f);
        return NULL;
    }
    zx_info("event=forward_start pipeline=%s to=%s", p->name, p->dest_plugin->name);
    return f;
}

void zx_fwd_stop(zx_fwd *f)
{
    if (!f)
        return;
    atomic_store(&f->stop, 1);
    pthread_join(f->th, NULL);
    free(f);
}
