/*
 * lease.c — which leases this zxd holds, as the writer says
 * (ZX_CHAN_LEASE), and what follows for the workers: see lease.h.
 *
 * It must never: let a pipeline's worker run past the deadline of its
 * lease, or start one while another zxd holds it.
 */
#include "supervisor/lease.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "supervisor/jobs.h"
#include "workers/sources/source.h"

typedef struct slease {
    char pipeline[64];
    int held;
    int64_t deadline_ms;     /* held: monotonic */
    char desc[600];          /* not held: the holder ("" nobody) */
    char since[40];
} slease;

static slease *tab;
static size_t ntab, captab;

static slease *find(const char *pipeline, int make)
{
    for (size_t i = 0; i < ntab; i++)
        if (!strcmp(tab[i].pipeline, pipeline))
            return &tab[i];
    if (!make)
        return NULL;
    if (ntab == captab) {
        size_t cap = captab ? captab * 2 : 16;
        slease *n = realloc(tab, cap * sizeof(*n));
        if (!n)
            return NULL;
        tab = n;
        captab = cap;
    }
    slease *l = &tab[ntab++];
    memset(l, 0, sizeof(*l));
    snprintf(l->pipeline, sizeof(l->pipeline), "%s", pipeline);
    return l;
}

int sup_lease_name(const zx_conf *c, const zx_conf_pipeline *pc, char *out, size_t len)
{
    out[0] = '\0';
    if (!c || !pc || c->ws_kind != ZX_WS_KIND_POSTGRES || !c->pg_shared)
        return 0;
    if (zx_conf_is_sync(pc)) {
        snprintf(out, len, "sync:%s", pc->name);
        return 1;
    }
    const zx_source *src = zx_source_find(pc->source);
    if (!src || !(src->flags & ZX_SOURCE_ONE_READER))
        return 0;
    snprintf(out, len, "pipeline:%s", pc->name);
    return 1;
}

static int held_now(const slease *l)
{
    return l && l->held && zx_mono_ms() < l->deadline_ms;
}

/* A pipeline's worker follows its lease; a sync's run in flight is cut
 * when the lease is lost (the next run, on the holder, does it again). */
static void apply(sup *s, spipe *p)
{
    char name[128];
    if (!p || p->removing || !p->conf ||
        !sup_lease_name(s->conf, p->conf, name, sizeof(name)))
        return;
    child *c = &p->worker;
    slease *l = find(p->name, 0);
    if (zx_conf_is_sync(p->conf)) {
        char why[800];
        if (held_now(l) || c->pid <= 0)
            return;
        snprintf(why, sizeof(why), "this zxd no longer holds lease %s%s%.500s", name,
                 l && !l->held && l->desc[0] ? ": held by " : " (not renewed in time)",
                 l && !l->held ? l->desc : "");
        sup_sync_cut(s, p, why);
        return;
    }
    if (held_now(l) || c->pid <= 0 || !c->want)
        return; /* held: the tick starts it (ST_BACKOFF) */
    zx_warn("event=lease_stop pipeline=%s pid=%d reason=\"this zxd no longer holds lease %s\"",
            p->name, (int)c->pid, name);
    pid_t pid = c->pid;
    sup_stop_child(s, c, NEXT_RESTART); /* started again once held */
    kill(pid, SIGKILL);                 /* at once: another zxd may read now */
}

void sup_lease_update(sup *s, const char *js)
{
    json_error_t je;
    json_t *o = json_loads(js, 0, &je);
    const char *pipeline = o ? json_string_value(json_object_get(o, "pipeline")) : NULL;
    json_t *vm = o ? json_object_get(o, "valid_ms") : NULL;
    if (!pipeline || !json_is_integer(vm) || json_integer_value(vm) < 0 ||
        json_integer_value(vm) > 3600000) {
        zx_error("event=bad_lease_message error=\"%s\"", o ? "missing or bad fields" : je.text);
        json_decref(o);
        return;
    }
    slease *l = find(pipeline, 1);
    if (!l) {
        zx_error("event=lease_not_recorded pipeline=%s error=\"out of memory\"", pipeline);
        json_decref(o);
        return;
    }
    int was = held_now(l);
    l->held = json_is_true(json_object_get(o, "held"));
    l->deadline_ms = zx_mono_ms() + json_integer_value(vm);
    const char *d = json_string_value(json_object_get(o, "holder_desc"));
    const char *t = json_string_value(json_object_get(o, "since"));
    snprintf(l->desc, sizeof(l->desc), "%s", d ? d : "");
    snprintf(l->since, sizeof(l->since), "%s", t ? t : "");
    if (was != held_now(l)) {
        zx_info("event=%s pipeline=%s%s%s%s", l->held ? "lease_held" : "lease_standby", pipeline,
                l->held ? "" : " holder=\"", l->held ? "" : l->desc, l->held ? "" : "\"");
        sup_feedf(s, l->held ? "lease_held" : "standby", pipeline,
                  "{\"message\":\"%s\"}", l->held ? "this zxd holds the lease: it runs here"
                                                  : "another zxd holds the lease: standby here");
    }
    apply(s, sup_find_pipe(s, pipeline));
    json_decref(o);
}

int sup_lease_standby(sup *s, const spipe *p, char *why, size_t len)
{
    why[0] = '\0';
    char name[128];
    if (!p->conf || !sup_lease_name(s->conf, p->conf, name, sizeof(name)))
        return 0;
    const slease *l = find(p->name, 0);
    if (held_now(l))
        return 0;
    if (l && l->desc[0])
        snprintf(why, len, "standby: held by %s%s%s", l->desc, l->since[0] ? " since " : "",
                 l->since);
    else if (l && l->held)
        snprintf(why, len, "standby: lease %s not renewed in time (is the workspace "
                 "reachable?)", name);
    else
        snprintf(why, len, "standby: waiting for the writer to take lease %s", name);
    return 1;
}

json_t *sup_lease_json(sup *s, const spipe *p)
{
    char name[128];
    if (!p->conf || !sup_lease_name(s->conf, p->conf, name, sizeof(name)))
        return NULL;
    const slease *l = find(p->name, 0);
    int held = held_now(l);
    return json_pack("{s:s, s:b, s:s?, s:s?}", "name", name, "held", held, "holder",
                     !held && l && l->desc[0] ? l->desc : NULL, "since",
                     l && l->since[0] ? l->since : NULL);
}

void sup_lease_tick(sup *s)
{
    int64_t now = zx_mono_ms();
    for (size_t i = 0; i < ntab; i++) {
        slease *l = &tab[i];
        if (!l->held || now < l->deadline_ms)
            continue;
        l->held = 0;
        zx_error("event=lease_expired pipeline=%s error=\"the writer did not renew its lease "
                 "in time\"", l->pipeline);
        apply(s, sup_find_pipe(s, l->pipeline));
    }
}

int sup_lease_spawn_held(sup *s, child *c)
{
    if (sup_sync_idle(s, c))
        return 1;
    char why[800];
    if (c->role != ROLE_STREAM || !c->pipe || zx_conf_is_sync(c->pipe->conf) ||
        !sup_lease_standby(s, c->pipe, why, sizeof(why)))
        return 0;
    c->state = ST_BACKOFF; /* tick_one starts it once the lease is held */
    c->respawn_at_ms = 0;
    return 1;
}
