/*
 * control.c — the control socket (proto/control.h): accept zxctl, check
 * its credentials, read one request line, answer.
 *
 * It must never: block on a client (bufferevents only), trust a request
 * (unknown commands and bad arguments get ok:false), or keep LMDB open
 * across loop iterations (the store is opened read-only per request).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <grp.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/ring.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/control.h"
#include "supervisor/sup.h"

/* Control connections at most (zxctl clients and feed followers), and how
 * long one may take to send its request or take its answer. */
#define CTL_MAX_CONNS 64
#define CTL_REQUEST_TIMEOUT_S 10
_Static_assert(CTL_MAX_CONNS / 2 == 32, "the follower cap in the message");
#include "store/store.h"

void sup_control_reply(struct bufferevent *bev, json_t *o)
{
    /* o is NULL when a json_pack failed (e.g. a path that is not UTF-8):
     * answer an error rather than crash the supervisor. */
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    struct evbuffer *ob = bufferevent_get_output(bev);
    if (s)
        evbuffer_add(ob, s, strlen(s));
    else
        evbuffer_add_printf(ob, "{\"ok\":false,\"error\":\"internal error: cannot encode the answer\"}");
    evbuffer_add(ob, "\n", 1);
    free(s);
    json_decref(o);
}

static json_t *err_obj(const char *fmt, const char *arg)
{
    char msg[512];
    snprintf(msg, sizeof(msg), fmt, arg ? arg : "");
    return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static json_t *jstr_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static json_t *proc_obj(const child *c)
{
    return json_pack("{s:s, s:o, s:s, s:i, s:o}", "name", c->name, "pid",
                     c->pid ? json_integer(c->pid) : json_null(), "state", zx_state_name(c->state),
                     "restarts", (int)c->restarts, "last_error", jstr_or_null(c->last_error));
}

typedef struct rej_ctx {
    json_t *obj;
} rej_ctx;

static int rej_cb(const char *name, uint64_t v, void *ctx)
{
    rej_ctx *r = ctx;
    if (strncmp(name, "rejects:", 8) == 0)
        json_object_set_new(r->obj, name + 8, json_integer((json_int_t)v));
    return 0;
}

static zx_store *open_store(sup *s)
{
    zx_store *st = NULL;
    char err[256];
    if (zx_store_open(s->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)) != 0)
        return NULL;
    return st;
}

/* What a ring holds: records published and released, bytes in use and
 * its capacity (status words only: the supervisor never reads records). */
static json_t *ring_obj(const zx_ring *r)
{
    return json_pack("{s:I, s:I, s:I, s:I}", "published", (json_int_t)zx_ring_published_seq(r),
                     "acked", (json_int_t)zx_ring_acked_seq(r), "used_bytes",
                     (json_int_t)zx_ring_used_bytes(r), "capacity",
                     (json_int_t)zx_ring_capacity(r));
}

static json_t *pipe_obj(spipe *p, zx_store_txn *t)
{
    zx_seg_hdr *h = p->seg.hdr;
    json_t *rej = json_object();
    uint64_t extra = 0;
    if (t) {
        rej_ctx rc = {rej};
        zx_store_counters_each(t, p->name, rej_cb, &rc);
        zx_store_counter_get(t, p->name, "extra_values", &extra);
    }
    json_t *ring = ring_obj(&p->seg.frames);
    int has_in = h->in_size != 0; /* only sources the gateway feeds */
    json_t *rings = json_pack("{s:o, s:o, s:o, s:I}", "in",
                              has_in ? ring_obj(&p->seg.in) : json_null(), "out",
                              has_in ? ring_obj(&p->seg.out) : json_null(), "frames",
                              ring_obj(&p->seg.frames), "shared_bytes", (json_int_t)p->seg.size);
    /* what the source says of itself (lag per partition...) and its
     * current problem */
    char serr[ZX_SEG_SOURCE_ERROR_MAX];
    zx_segment_read_text(&h->source_error_seq, h->source_error, sizeof(h->source_error), serr,
                         sizeof(serr));
    char *sst = malloc(ZX_SEG_SOURCE_STATUS_MAX);
    json_t *source_status = NULL;
    if (sst && zx_segment_read_text(&h->source_status_seq, h->source_status,
                                    sizeof(h->source_status), sst, ZX_SEG_SOURCE_STATUS_MAX))
        source_status = json_loads(sst, 0, NULL);
    free(sst);
    const child *c = &p->worker;
    /* the writer holding this pipeline's frames back says more than the
     * worker's last exit */
    char werr[ZX_SEG_SOURCE_ERROR_MAX + 16] = "";
    char blocked[sizeof(h->writer_error)] = "";
    if (atomic_load_explicit(&h->writer_error_set, memory_order_acquire)) {
        memcpy(blocked, h->writer_error, sizeof(blocked));
        blocked[sizeof(blocked) - 1] = '\0';
        if (!blocked[0])
            snprintf(blocked, sizeof(blocked), "the writer holds its frames back");
        snprintf(werr, sizeof(werr), "writer: %s", blocked);
    } else if (serr[0] && !(c->state == ST_FAILED && c->last_error[0])) {
        /* (a failed pipeline's last_error has the source's refusal and
         * what to do about it) */
        snprintf(werr, sizeof(werr), "source: %s", serr);
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:i, s:I, s:I, s:o, s:o, s:o, s:o, s:I, s:o, s:o}",
                     "name", p->name,
                     "source", p->conf ? p->conf->source : "http", "table",
                     p->conf && p->conf->table ? p->conf->table : "", "pid",
                     c->pid ? json_integer(c->pid) : json_null(), "state",
                     p->removing ? "draining" : zx_state_name(c->state), "restarts",
                     (int)c->restarts, "rows", (json_int_t)atomic_load(&h->rows), "rejects",
                     (json_int_t)atomic_load(&h->rejects), "rejects_by_column", rej,
                     "last_error", jstr_or_null(werr[0] ? werr : c->last_error), "ring", ring,
                     "rings", rings, "extra_values", (json_int_t)extra, "source_error",
                     jstr_or_null(serr), "source_status",
                     source_status ? source_status : json_object());
    /* a worker that runs while the writer holds its frames back (its
     * table refuses them, or the workspace is down) is not "running":
     * nothing of it reaches the workspace */
    if (o && blocked[0] && !p->removing && c->state == ST_RUNNING)
        json_object_set_new(o, "state", json_string("blocked"));
    if (o)
        json_object_set_new(o, "blocked_reason", jstr_or_null(blocked[0] ? blocked : NULL));
    /* it started from positions or state stored before it was (re)defined */
    if (o)
        json_object_set_new(o, "resumed", sup_pipe_resumed_json(p));
    /* tables whose changes the writer parks: the pipeline goes on for its
     * other tables, so it stays "running" */
    char tables[ZX_SEG_WRITER_TABLES_MAX];
    zx_segment_read_text(&h->writer_tables_seq, h->writer_tables, sizeof(h->writer_tables),
                         tables, sizeof(tables));
    if (o)
        json_object_set_new(o, "blocked_tables", jstr_or_null(tables[0] ? tables : NULL));
    json_t *sy = o ? sup_sync_status(zx_the_sup, p) : NULL;
    if (sy) {
        /* a sync's worker only lives for a run: "idle" says more than
         * "stopped" */
        json_object_set_new(o, "sync", sy);
        if (!c->pid && !p->removing)
            json_object_set_new(o, "state", json_string("idle"));
    }
    return o;
}

static json_t *cmd_status(sup *s)
{
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(s->started_us, ts);
    json_t *procs = json_array();
    json_array_append_new(procs, proc_obj(&s->writer));
    json_array_append_new(procs, proc_obj(&s->gateway));
    json_t *pipes = json_array();
    zx_store *st = open_store(s);
    zx_store_txn *t = NULL;
    if (st && zx_store_begin(st, 1, &t) != 0)
        t = NULL;
    for (size_t i = 0; i < s->npipes; i++) {
        json_t *po = pipe_obj(s->pipes[i], t);
        json_t *lv = sup_verify_last(s, s->pipes[i]->name);
        if (po && lv)
            json_object_set_new(po, "last_verify", lv);
        else
            json_decref(lv);
        json_array_append_new(pipes, po);
    }
    zx_store_abort(t);
    zx_store_close(st);
    uint64_t shm = 0;
    for (size_t i = 0; i < s->npipes; i++)
        shm += s->pipes[i]->seg.size;
    return json_pack("{s:b, s:s, s:i, s:s, s:s, s:o, s:o, s:{s:I, s:I}}", "ok", 1, "version",
                     "0.1.0", "pid", (int)s->pid, "config", s->conf->path, "started_at", ts,
                     "processes", procs, "pipelines", pipes, "rings", "shared_bytes",
                     (json_int_t)shm, "budget_bytes", (json_int_t)s->conf->ring_budget);
}

/* A position part's value as the source stored it: an 8-byte value is
 * shown as the little-endian integer the sources write (a Kafka offset;
 * a 16-byte one is that offset and the fingerprint of the message before
 * it, shown as the offset), anything else as hex. */
static int pos_cb(const char *part, const void *val, size_t len, void *ctx)
{
    json_t *o = ctx;
    if (len == 8 || len == 16) {
        int64_t v;
        memcpy(&v, val, 8);
        json_object_set_new(o, part, json_integer((json_int_t)v));
        return 0;
    }
    char hex[129];
    size_t n = len > 64 ? 64 : len;
    for (size_t i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)val)[i]);
    hex[2 * n] = '\0';
    json_object_set_new(o, part, json_string(hex));
    return 0;
}

static json_t *cmd_checkpoints(sup *s, const char *name)
{
    spipe *p = sup_find_pipe(s, name);
    if (!p)
        return err_obj("no pipeline named '%s'", name);
    zx_store *st = open_store(s);
    zx_store_txn *t = NULL;
    if (!st || zx_store_begin(st, 1, &t) != 0) {
        zx_store_close(st);
        return err_obj("the store is not readable yet (has the writer started?)", NULL);
    }
    zx_position pos;
    /* a postgres pipeline has no table of its own (its mirrors) */
    json_t *o = json_pack("{s:b, s:s, s:s}", "ok", 1, "pipeline", p->name, "table",
                          p->conf && p->conf->table ? p->conf->table : "");
    if (zx_store_position_get(t, p->name, &pos) == 0) {
        char ts[ZX_TS_BUFSZ];
        zx_ts_format(pos.committed_us, ts);
        json_object_set_new(o, "seq", json_integer((json_int_t)pos.seq));
        json_object_set_new(o, "committed_at", json_string(ts));
    } else {
        json_object_set_new(o, "seq", json_integer(0));
        json_object_set_new(o, "committed_at", json_null());
    }
    json_t *positions = json_object();
    zx_store_positions_each(t, p->name, pos_cb, positions);
    json_object_set_new(o, "positions", positions);
    const char *table = NULL, *js = NULL;
    size_t jl = 0;
    json_t *schema = NULL;
    if (zx_store_schema_get(t, p->name, &table, &js, &jl) == 0 && js)
        schema = json_loadb(js, jl, 0, NULL);
    json_object_set_new(o, "schema", schema ? schema : json_array());
    uint64_t v = 0;
    zx_store_counter_get(t, p->name, "rows", &v);
    json_object_set_new(o, "rows", json_integer((json_int_t)v));
    v = 0;
    zx_store_counter_get(t, p->name, "rejects", &v);
    json_object_set_new(o, "rejects", json_integer((json_int_t)v));
    json_t *rej = json_object();
    rej_ctx rc = {rej};
    zx_store_counters_each(t, p->name, rej_cb, &rc);
    json_object_set_new(o, "rejects_by_column", rej);
    json_object_set_new(o, "idempotency_keys",
                        json_integer((json_int_t)zx_store_idem_count(t, p->name)));
    json_object_set_new(o, "ring_published",
                        json_integer((json_int_t)zx_ring_published_seq(&p->seg.frames)));
    json_object_set_new(o, "ring_acked",
                        json_integer((json_int_t)zx_ring_acked_seq(&p->seg.frames)));
    zx_store_abort(t);
    zx_store_close(st);
    return o;
}

static child *find_named(sup *s, const char *name)
{
    if (strcmp(name, "writer") == 0)
        return &s->writer;
    if (strcmp(name, "gateway") == 0)
        return &s->gateway;
    spipe *p = sup_find_pipe(s, name);
    return p && !p->removing ? &p->worker : NULL;
}

static json_t *cmd_lifecycle(sup *s, const char *cmd, const char *name)
{
    child *c = find_named(s, name);
    if (!c)
        return err_obj("no pipeline named '%s'", name);
    if (strcmp(cmd, "restart") == 0) {
        c->ncrash = 0;
        sup_stop_child(s, c, NEXT_RESTART); /* announced when it is back */
        if (c->pid == 0 && c->state == ST_FAILED) /* its source is not in this build */
            return err_obj("cannot restart: %s", c->last_error);
    } else if (c->role != ROLE_STREAM) {
        return err_obj("%s cannot be stopped or started on its own; use restart", name);
    } else if (strcmp(cmd, "stop") == 0) {
        if (c->state == ST_STOPPED)
            return err_obj("pipeline '%s' is already stopped", name);
        sup_stop_child(s, c, NEXT_NONE);
    } else {
        if (c->pid > 0)
            return err_obj("pipeline '%s' is already running", name);
        c->want = 1;
        c->ncrash = 0;
        c->last_error[0] = '\0';
        if (sup_spawn(s, c) < 0 || c->state == ST_FAILED)
            return err_obj("cannot start: %s", c->last_error);
        sup_feedf(s, "start", c->name, "{\"process\":\"%s\",\"pid\":%d}", c->name, (int)c->pid);
    }
    return json_pack("{s:b}", "ok", 1);
}

static void conn_done(struct bufferevent *bev, void *arg)
{
    (void)arg;
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        sup_control_conn_free(zx_the_sup, bev);
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    (void)arg;
    sup *s = zx_the_sup;
    if (s->reload_bev == bev)
        s->reload_bev = NULL;
    sup_probe_forget(bev);
    sup_verify_forget(bev);
    sup_slot_forget(bev);
    sup_sync_forget(bev);
    sup_control_conn_free(s, bev);
}

static void finish_conn(struct bufferevent *bev)
{
    bufferevent_setcb(bev, NULL, conn_done, conn_event, NULL);
    bufferevent_disable(bev, EV_READ);
    conn_done(bev, NULL);
}

void sup_control_finish(sup *s, struct bufferevent *bev)
{
    (void)s;
    finish_conn(bev);
}

void sup_reload_start(sup *s, struct bufferevent *bev)
{
    if (s->reload_result) {
        if (bev) {
            sup_control_reply(bev, err_obj("a reload is already in progress", NULL));
            finish_conn(bev);
        } else {
            zx_info("event=sighup result=deferred reason=\"a reload is in progress\"");
            s->reload_again = 1;
        }
        return;
    }
    json_t *r = sup_reload(s);
    if (!r) {
        if (bev) {
            sup_control_reply(bev, err_obj("out of memory while reloading", NULL));
            finish_conn(bev);
        }
        return;
    }
    s->reload_result = r;
    s->reload_bev = bev;
    s->reload_deadline_ms = zx_mono_ms() + 30000;
    if (bev)
        bufferevent_disable(bev, EV_READ);
    sup_reload_check_reply(s);
}

void sup_reload_check_reply(sup *s)
{
    if (!s->reload_result)
        return;
    if (!sup_transitions_done(s) && zx_mono_ms() < s->reload_deadline_ms)
        return;
    json_t *r = sup_reload_finish(s->reload_result);
    s->reload_result = NULL;
    if (s->reload_bev) {
        sup_control_reply(s->reload_bev, r); /* takes r */
        finish_conn(s->reload_bev);
        s->reload_bev = NULL;
    } else {
        json_decref(r);
    }
    if (s->reload_again && !s->shutting_down) {
        s->reload_again = 0;
        sup_reload_start(s, NULL);
    }
}

static void conn_read(struct bufferevent *bev, void *arg)
{
    (void)arg;
    sup *s = zx_the_sup;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n;
    char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);
    if (!line) {
        if (evbuffer_get_length(in) > ZX_CTL_MAX_LINE) {
            sup_control_reply(bev, err_obj("request line too long", NULL));
            finish_conn(bev);
        }
        return;
    }
    json_error_t je;
    json_t *req = json_loads(line, 0, &je);
    free(line);
    const char *cmd = req ? json_string_value(json_object_get(req, "cmd")) : NULL;
    const char *name = req ? json_string_value(json_object_get(req, "name")) : NULL;
    json_t *out = NULL;
    if (!cmd) {
        out = err_obj("bad request: expected {\"v\":1,\"cmd\":...}", NULL);
    } else if (strcmp(cmd, "status") == 0) {
        out = cmd_status(s);
    } else if (strcmp(cmd, "reload") == 0) {
        json_decref(req);
        sup_reload_start(s, bev);
        return;
    } else if (!strcmp(cmd, "restart") || !strcmp(cmd, "stop") || !strcmp(cmd, "start")) {
        out = name ? cmd_lifecycle(s, cmd, name) : err_obj("%s needs a name", cmd);
    } else if (strcmp(cmd, "checkpoints") == 0) {
        out = name ? cmd_checkpoints(s, name) : err_obj("checkpoints needs a name", NULL);
    } else if (strcmp(cmd, "test") == 0) {
        if (!name) {
            out = err_obj("test needs a name", NULL);
        } else if (!(out = sup_probe_start(s, bev, name))) {
            json_decref(req);
            bufferevent_disable(bev, EV_READ);
            return; /* answered when the prober is done */
        }
    } else if (strcmp(cmd, "verify") == 0) {
        json_t *tj = json_object_get(req, "table");
        if (!name) {
            out = err_obj("verify needs a name", NULL);
        } else if (tj && !json_is_string(tj)) {
            out = err_obj("verify: \"table\" must be a string", NULL);
        } else if (!(out = sup_verify_start(s, bev, name, json_string_value(tj),
                                            json_is_true(json_object_get(req, "repair"))))) {
            json_decref(req);
            bufferevent_disable(bev, EV_READ);
            bufferevent_set_timeouts(bev, NULL, NULL);
            return; /* answered when the verify process is done */
        }
    } else if (strcmp(cmd, "drop-slot") == 0) {
        json_t *cj = json_object_get(req, "connection");
        if (!name) {
            out = err_obj("drop-slot needs a name", NULL);
        } else if (cj && !json_is_string(cj)) {
            out = err_obj("drop-slot: \"connection\" must be a string", NULL);
        } else if (!(out = sup_slot_admin_start(s, bev, name, json_string_value(cj)))) {
            json_decref(req);
            bufferevent_disable(bev, EV_READ);
            return; /* answered when the slot-drop process is done */
        }
    } else if (!strcmp(cmd, "run") || !strcmp(cmd, "preview") || !strcmp(cmd, "runs") ||
               !strcmp(cmd, "approve") || !strcmp(cmd, "reject") || !strcmp(cmd, "send")) {
        out = !strcmp(cmd, "send") ? sup_sync_send(s, bev, req)
                                   : sup_sync_command(s, bev, cmd, req);
        if (!out) {
            json_decref(req);
            /* answered when the run ends: a run may take long */
            bufferevent_disable(bev, EV_READ);
            bufferevent_set_timeouts(bev, NULL, NULL);
            return;
        }
    } else if (strcmp(cmd, "feed") == 0) {
        int follow = json_is_true(json_object_get(req, "follow"));
        json_decref(req);
        size_t nf = 0;
        for (feed_client *f = s->followers; f; f = f->next)
            nf++;
        if (follow && nf >= CTL_MAX_CONNS / 2) {
            /* the other half stays for status, reload and the rest */
            sup_control_reply(bev, err_obj("too many feed followers (%s); retry later", "32"));
            finish_conn(bev);
            return;
        }
        sup_feed_follow(s, bev, follow);
        if (!follow)
            finish_conn(bev);
        return;
    } else {
        out = err_obj("unknown command '%s'", cmd);
    }
    json_decref(req);
    sup_control_reply(bev, out);
    finish_conn(bev);
}

static int peer_allowed(sup *s, int fd)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return 0;
    if (cr.uid == 0 || cr.uid == geteuid())
        return 1;
    if (s->conf->control_group) {
        struct group *g = getgrnam(s->conf->control_group);
        if (g && cr.gid == g->gr_gid)
            return 1;
    }
    return 0;
}

void sup_control_conn_free(sup *s, struct bufferevent *bev)
{
    if (!bev)
        return;
    if (s->nctl > 0)
        s->nctl--;
    bufferevent_free(bev);
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
    (void)what;
    sup *s = arg;
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (!peer_allowed(s, fd)) {
            zx_warn("event=control_denied");
            const char *m = "{\"ok\":false,\"error\":\"permission denied\"}\n";
            ssize_t w = write(fd, m, strlen(m));
            (void)w;
            close(fd);
            continue;
        }
        if (s->nctl >= CTL_MAX_CONNS) {
            zx_warn("event=control_refused reason=\"%d connections open\"", CTL_MAX_CONNS);
            char m[160];
            int n = snprintf(m, sizeof(m), "{\"ok\":false,\"error\":\"too many control "
                             "connections (%d open); retry\"}\n", CTL_MAX_CONNS);
            ssize_t w = write(fd, m, (size_t)n);
            (void)w;
            close(fd);
            continue;
        }
        struct bufferevent *bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!bev) {
            zx_error("event=control_refused reason=\"out of memory\"");
            close(fd);
            continue;
        }
        s->nctl++;
        /* A request must arrive within CTL_REQUEST_TIMEOUT_S, and an answer
         * be taken within it; a follower's reads are unbounded (feed.c). */
        struct timeval tv = {CTL_REQUEST_TIMEOUT_S, 0};
        bufferevent_setcb(bev, conn_read, NULL, conn_event, NULL);
        bufferevent_setwatermark(bev, EV_READ, 0, ZX_CTL_MAX_LINE + 2);
        bufferevent_set_timeouts(bev, &tv, &tv);
        bufferevent_enable(bev, EV_READ | EV_WRITE);
    }
}

int sup_control_open(sup *s, char *err, size_t errlen)
{
    const char *path = s->conf->control_socket;
    struct sockaddr_un sa = {0};
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        zx_seterr(err, errlen, "control socket path is too long: %s", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        zx_seterr(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    unlink(path); /* we hold the data directory lock: a socket left here is stale */
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc < 0 || listen(fd, 64) < 0) {
        zx_seterr(err, errlen, "cannot listen on control socket %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (s->conf->control_group) {
        struct group *g = getgrnam(s->conf->control_group);
        if (!g || chown(path, (uid_t)-1, g->gr_gid) < 0 || chmod(path, 0660) < 0) {
            zx_seterr(err, errlen, "control socket %s: cannot give it to group %s", path,
                     s->conf->control_group);
            close(fd);
            return -1;
        }
    } else {
        chmod(path, 0600);
    }
    s->ctl_fd = fd;
    s->ctl_ev = event_new(s->base, fd, EV_READ | EV_PERSIST, on_accept, s);
    if (!s->ctl_ev || event_add(s->ctl_ev, NULL) < 0)
        return zx_seterr(err, errlen, "control socket %s: cannot watch it (out of memory)", path);
    return 0;
}

void sup_control_close(sup *s)
{
    if (s->ctl_ev)
        event_free(s->ctl_ev);
    s->ctl_ev = NULL;
    if (s->ctl_fd >= 0) {
        close(s->ctl_fd);
        unlink(s->conf->control_socket);
    }
    s->ctl_fd = -1;
}
