/*
 * model.c — the loaded configuration once zx_conf_load returned it: its
 * lookups (zx_conf_find...), the comparison a reload diffs pipelines and
 * connections with (driven by the option rows, core and plug-ins'), and
 * freeing it and its error list.
 *
 * It must never: read YAML, or report an error.
 */
#define ZX_CONF_INTERNAL
#include "conf/config.h"
#include "conf/plugin.h"

#include <stdlib.h>
#include <string.h>

void zx_conf_errors_free(zx_conf_errors *errs)
{
    size_t i;

    if (!errs)
        return;
    for (i = 0; i < errs->n; i++)
        free(errs->msgs[i]);
    free(errs->msgs);
    errs->msgs = NULL;
    errs->n = 0;
}

void zx_conf_free(zx_conf *c)
{
    size_t i;

    if (!c)
        return;
    for (i = 0; i < c->npipelines; i++) {
        /* mirrors and mirror_of: set by the plug-in's check, not rows */
        zx_cf_free_strs(c->pipelines[i].mirrors, c->pipelines[i].nmirrors);
        zx_cf_free_strs(c->pipelines[i].mirror_of, c->pipelines[i].nmirrors);
        zx_cf_free_fields(ZX_CF_PIPELINE, &c->pipelines[i]);
        zx_cf_free_own(&c->pipelines[i]);
        free(c->pipelines[i].name);
    }
    free(c->pipelines);
    for (i = 0; i < c->nconnections; i++) {
        zx_cf_free_fields(ZX_CF_CONNECTION, &c->connections[i]);
        free(c->connections[i].name);
        free(c->connections[i].brokers_csv);
        free(c->connections[i].dsn_shown);
    }
    free(c->connections);
    for (i = 0; i < c->nauthors; i++) {
        zx_cf_free_fields(ZX_CF_AUTHOR, &c->authors[i]);
        free(c->authors[i].name);
    }
    free(c->authors);
    for (i = 0; i < c->napitokens; i++) {
        zx_cf_free_fields(ZX_CF_APITOKEN, &c->apitokens[i]);
        free(c->apitokens[i].name);
    }
    free(c->apitokens);
    zx_cf_free_fields(ZX_CF_ROOT, c);
    free(c->pg_dsn_shown);
    free(c->http.host);
    free(c->path);
    free(c->base_dir);
    free(c);
}

const zx_conf_pipeline *zx_conf_find(const zx_conf *c, const char *name)
{
    size_t i;

    if (!c || !name)
        return NULL;
    for (i = 0; i < c->npipelines; i++)
        if (c->pipelines[i].name && !strcmp(c->pipelines[i].name, name))
            return &c->pipelines[i];
    return NULL;
}

uint64_t zx_conf_parked_bound(const zx_conf_pipeline *p)
{
    if (!p || !p->plugin || !(p->plugin->caps & ZX_PLUGIN_PARK) ||
        !(p->nmirrors || p->format == ZX_FORMAT_DEBEZIUM || p->stream_mode == ZX_STREAM_LATEST))
        return 0;
    return p->max_parked_bytes;
}

/* Each set secret string of plug-in pl's own rows in its struct own. */
static void own_secrets(const zx_plugin *pl, const void *own,
                        void (*fn)(const char *s, void *arg), void *arg)
{
    for (size_t i = 0; pl && own && i < pl->noptions; i++) {
        const zx_cf_option *o = &pl->options[i];
        if ((o->flags & (ZX_CF_OWN | ZX_CF_SECRET)) != (ZX_CF_OWN | ZX_CF_SECRET) ||
            (o->type != ZX_CF_STRING && o->type != ZX_CF_DSN))
            continue;
        const char *s = *(char *const *)((const char *)own + o->offset);
        if (s)
            fn(s, arg);
    }
}

void zx_conf_own_secrets(const zx_conf_pipeline *p, void (*fn)(const char *s, void *arg),
                         void *arg)
{
    if (!p)
        return;
    own_secrets(p->plugin, p->own, fn, arg);
    own_secrets(p->dest_plugin, p->dest_own, fn, arg);   /* a sync's destination's */
}

void zx_conf_connection_secrets(const zx_conf_connection *c,
                                void (*fn)(const char *s, void *arg), void *arg)
{
    for (size_t i = 0; c && i < zx_cf_nrows(); i++) {
        const zx_cf_option *o = zx_cf_row(i);
        if (!(o->flags & ZX_CF_SECRET) || zx_cf_target(o->section) != ZX_CF_CONNECTION)
            continue;
        if (o->type == ZX_CF_PROPS) {    /* every value secret (http headers) */
            char *const *v = *(char *const *const *)((const char *)c + o->v_offset);
            size_t n = *(const size_t *)((const char *)c + o->n_offset);
            for (size_t j = 0; v && j < n; j++)
                if (v[j])
                    fn(v[j], arg);
            continue;
        }
        if (o->type != ZX_CF_STRING)
            continue;
        const char *s = *(char *const *)((const char *)c + o->offset);
        if (s)
            fn(s, arg);
    }
}

const zx_conf_connection *zx_conf_find_connection(const zx_conf *c,
                                                  const char *name)
{
    size_t i;

    if (!c || !name)
        return NULL;
    for (i = 0; i < c->nconnections; i++)
        if (c->connections[i].name && !strcmp(c->connections[i].name, name))
            return &c->connections[i];
    return NULL;
}

static int str_same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Driven by the options table: a new option row is compared with no change
 * here.  Only fields derived outside the table are listed (slot and
 * publication are the table's, derived or not). */
int zx_conf_pipeline_same(const zx_conf_pipeline *a, const zx_conf_pipeline *b)
{
    if (!a || !b)
        return a == b;
    if (!str_same(a->name, b->name) || a->plugin != b->plugin ||
        !zx_cf_fields_same(ZX_CF_PIPELINE, a, b) || !zx_cf_own_same(a, b) ||
        a->body_limit != b->body_limit || a->ring_size != b->ring_size ||
        a->in_ring_size != b->in_ring_size || a->shm_size != b->shm_size ||
        !zx_conf_connection_same(a->conn, b->conn) ||
        !zx_conf_connection_same(a->dest_conn, b->dest_conn) ||
        !zx_conf_connection_same(a->dest_catalog, b->dest_catalog))
        return 0;
    /* a sync's author: the same tables */
    if (!a->auth != !b->auth ||
        (a->auth && !zx_cf_fields_same(ZX_CF_AUTHOR, a->auth, b->auth)))
        return 0;
    /* the same mirrors (derived by the plug-in's check from rows compared
     * above, but a plug-in may derive them from more) */
    if (!a->mirrors != !b->mirrors || a->nmirrors != b->nmirrors)
        return 0;
    for (size_t i = 0; a->mirrors && i < a->nmirrors; i++)
        if (!str_same(a->mirrors[i], b->mirrors[i]))
            return 0;
    return 1;
}

int zx_conf_connection_same(const zx_conf_connection *a,
                            const zx_conf_connection *b)
{
    if (!a || !b)
        return a == b;
    return str_same(a->name, b->name) &&
           zx_cf_fields_same(ZX_CF_CONNECTION, a, b) &&
           str_same(a->brokers_csv, b->brokers_csv) &&
           str_same(a->dsn_shown, b->dsn_shown);
}
