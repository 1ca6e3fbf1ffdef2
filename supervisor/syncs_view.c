/*
 * syncs_view.c — what an API token may read of a run's record (GET
 * /api/runs/ID): the one place that trims a record for the API.
 *
 * An agent's token sees its own runs only; an orchestrator's, the runs of
 * the syncs it may run.  Neither ever sees a value of the data through
 * the API: a preview shows its counts (rows to insert, update, delete...),
 * never its sample, and the error of an agent's run that failed before an
 * operator approved it (the database's message, duplicate keys: they may
 * quote values) is replaced by a sentence saying where the operator reads
 * it.  Operators see everything through zxctl (`approve` prints the
 * preview and its sample; so does `runs` for a run awaiting approval).
 *
 * It must never: let a field it does not know through inside a preview
 * (a new field of the worker's status is hidden until added here).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/jobs.h"

/* 1 when token t may run (and read the runs of) sync. */
static int may_sync(const zx_conf_apitoken *t, const char *sync)
{
    if (!t->nsyncs)
        return 1;
    for (size_t i = 0; i < t->nsyncs; i++)
        if (!strcmp(t->syncs[i], sync))
            return 1;
    return 0;
}

/* A preview's counts, and the mode they are of: a new object. */
static json_t *preview_counts(const json_t *pv)
{
    json_t *o = json_object();
    const char *k;
    json_t *v;
    if (!o)
        return NULL;
    json_object_foreach((json_t *)pv, k, v) {
        if (json_is_integer(v) || (!strcmp(k, "mode") && json_is_string(v)))
            json_object_set(o, k, v);
    }
    return o;
}

int sup_run_api_view(json_t *rec, const zx_conf_apitoken *t)
{
    const char *sync = json_string_value(json_object_get(rec, "sync"));
    if (!sync || !may_sync(t, sync))
        return -1;
    if (!strcmp(t->role, "agent")) {
        const char *by = json_string_value(json_object_get(rec, "token"));
        if (!by || strcmp(by, t->name))
            return -1;   /* not its own run */
    }
    json_t *pv = json_object_get(rec, "preview");
    if (json_is_object(pv))
        json_object_set_new(rec, "preview", preview_counts(pv));
    json_object_del(rec, "sample");
    json_object_del(rec, "sample_deletes");
    if (json_is_false(json_object_get(rec, "approved")) &&
        json_is_true(json_object_get(rec, "error_from_run"))) {
        char msg[200];
        snprintf(msg, sizeof(msg), "the preview failed, nothing was sent; an operator reads "
                 "why with `zxctl runs %.63s`", sync);
        json_object_set_new(rec, "error", json_string(msg));
    }
    json_object_del(rec, "error_from_run");
    return 0;
}
