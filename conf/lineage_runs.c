/*
 * lineage_runs.c — a sync node's last run, from the run history
 * (lineage.h: zx_lineage_set_run, zx_lineage_runs_from_store).  The
 * supervisor hands it the records it holds in memory too; zxctl only
 * those of the store.
 *
 * It must never: trust a record (it is parsed, and only the fields named
 * here are kept, each checked for its type), or keep an older run over a
 * newer one.
 */
#include "conf/lineage.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store/store.h"

/* The record's id as a number (digits only, at most 20 of them), or 0. */
static unsigned long long run_id(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!n || n > 20 || strspn(s, "0123456789") != n)
        return 0;
    return strtoull(s, NULL, 10);
}

int zx_lineage_set_run(zx_lineage *g, const char *sync, const char *record, size_t len)
{
    if (!g || !sync || !record)
        return 1;
    zx_lineage_node *n = NULL;
    for (size_t i = 0; i < g->nnodes && !n; i++)
        if (g->nodes[i].role == ZX_LN_SYNC && !strcmp(g->nodes[i].name, sync))
            n = &g->nodes[i];
    if (!n)
        return 1;
    json_error_t je;
    json_t *r = json_loadb(record, len, 0, &je);
    const char *id = json_string_value(json_object_get(r, "id"));
    const char *state = json_string_value(json_object_get(r, "state"));
    const char *ended = json_string_value(json_object_get(r, "ended_at"));
    unsigned long long nid = run_id(id);
    if (!json_is_object(r) || !nid || !state || !ended) {
        json_decref(r);
        return 1;
    }
    if (n->last_run) {
        json_t *old = json_loads(n->last_run, 0, &je);
        unsigned long long oid = run_id(json_string_value(json_object_get(old, "id")));
        json_decref(old);
        if (oid > nid) {
            json_decref(r);
            return 1;
        }
    }
    json_t *keep = json_pack("{s:s, s:s, s:s}", "id", id, "state", state, "ended_at", ended);
    static const char *const counts[] = {"rows_read", "rows_sent"};
    for (size_t k = 0; keep && k < 2; k++) {
        json_t *v = json_object_get(r, counts[k]);
        if (json_is_integer(v) && json_integer_value(v) >= 0)
            json_object_set(keep, counts[k], v);
    }
    json_decref(r);
    char *js = keep ? json_dumps(keep, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(keep);
    if (!js)
        return -1;
    free(n->last_run);
    n->last_run = js;
    return 0;
}

typedef struct runs_ctx {
    zx_lineage *g;
    long n;
    int nomem;
} runs_ctx;

static int one_run(const char *sync, uint64_t id, const char *json, size_t len, void *ctx)
{
    (void)id;
    runs_ctx *c = ctx;
    int rc = zx_lineage_set_run(c->g, sync, json, len);
    if (rc < 0) {
        c->nomem = 1;
        return 1;   /* stop */
    }
    c->n++;
    return 0;
}

long zx_lineage_runs_from_store(zx_lineage *g, const char *data_dir)
{
    zx_store *st = NULL;
    char err[256];
    if (!g || !data_dir || zx_store_open(data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)))
        return 0;
    runs_ctx c = {g, 0, 0};
    for (size_t i = 0; i < g->nnodes && !c.nomem; i++) {
        zx_store_txn *t = NULL;
        if (g->nodes[i].role != ZX_LN_SYNC || zx_store_begin(st, 1, &t) != 0)
            continue;
        zx_store_runs_each(t, g->nodes[i].name, one_run, &c);
        zx_store_abort(t);
    }
    zx_store_close(st);
    return c.nomem ? -1 : c.n;
}
