/*
 * dest_dhttp.c — the destination http: a reverse sync's rows sent to an
 * HTTP API (dest.h), in JSON batches (dhttp_json.h) of batch_rows, through
 * the sender (dhttp_send.h: concurrency, rate, retries), each with an
 * Idempotency-Key: the hex of XXH3-128 of the sync's name, the run's id
 * and the batch's body, the same on every send of that batch.  Per-item
 * results (dhttp_results.h) refuse rows one by one (zx_dest_row_failed).
 *
 * No transaction: what a run sent before it failed or stopped stays
 * delivered; the run records no hash of it, so the next run sends it
 * again (at least once).  Each write returns only when all of its batches
 * are answered, so the rows refused are known before it returns.
 *
 * It must never: log or put in a message a header's value (the sender
 * redacts them from answers), or wait on the API without a timeout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/buf.h"
#include "common/util.h"
#include "conf/config.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/http/dhttp_json.h"
#include "workers/destinations/http/dhttp_opts.h"
#include "workers/destinations/http/dhttp_results.h"
#include "workers/destinations/http/dhttp_send.h"

typedef struct hstate {
    const zx_dhttp_opts *o;
    char sync[128];
    char conn[128];
    zx_dhttp_sender *snd;
    zx_dhttp_shape shape;
    const zx_dest_run *run;
    zx_dest_stats *st;
    zx_value *vals;
    size_t nvals;
    uint32_t batches_run;        /* batches this run (for "made") */
} hstate;

static int http_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    const zx_dhttp_opts *o = a->opts;
    const char *sync = a->sync ? a->sync : "?";
    *state = NULL;
    if (!o || !o->connection || !o->path)
        return zx_seterr(err, errlen, "sync %s: destination http needs its sub-section "
                         "`destination: {http: {connection: NAME, path: /...}}`", sync);
    const zx_conf_connection *c = zx_conf_find_connection(a->conf, o->connection);
    if (!c || !c->kind || strcmp(c->kind, "http") || !c->base_url)
        return zx_seterr(err, errlen, "sync %s: destination http: connection %s is not "
                         "a `kind: http` connection with a base_url", sync, o->connection);
    if (c->read_only)
        return zx_seterr(err, errlen, "sync %s: destination http: connection %s is "
                         "read_only: zx never writes to it", sync, c->name);
    hstate *h = calloc(1, sizeof(*h));
    if (!h)
        return zx_seterr(err, errlen, "sync %s: out of memory", sync);
    h->o = o;
    snprintf(h->sync, sizeof(h->sync), "%s", sync);
    snprintf(h->conn, sizeof(h->conn), "%s", c->name);
    h->shape = !strcmp(o->body, "ndjson") ? ZX_DHTTP_NDJSON
               : !strcmp(o->body, "wrap") ? ZX_DHTTP_WRAP : ZX_DHTTP_ARRAY;
    zx_dhttp_cfg cfg = {
        .base_url = c->base_url,
        .hdr_names = (const char *const *)c->header_keys,
        .hdr_values = (const char *const *)c->header_values,
        .nheaders = c->nheaders,
        .timeout_ms = c->http_timeout_ms ? (long)c->http_timeout_ms
                      : a->deadline_ms > 0 ? (long)a->deadline_ms : 30000,
        .ca_file = c->http_ca,
        .insecure = c->http_insecure,
        .concurrency = o->concurrency ? o->concurrency : 1,
        .rate_per_s = o->rate_per_s,
        .max_retries = o->max_retries,
        .max_backoff_ms = o->max_backoff_ms ? (long)o->max_backoff_ms : 30000,
        .max_response = o->max_response ? (size_t)o->max_response : 4u << 20,
        .stopping = a->stopping, .stop_ctx = a->stop_ctx,
    };
    char e[200];
    h->snd = zx_dhttp_sender_new(&cfg, e, sizeof(e));
    if (!h->snd) {
        free(h);
        return zx_seterr(err, errlen, "sync %s: destination http: %s", sync, e);
    }
    *state = h;
    return 0;
}

static int http_begin(void *state, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                      size_t errlen)
{
    hstate *h = state;
    if (run->mode == ZX_MODE_REPLACE)
        return zx_seterr(err, errlen, "sync %s: destination http cannot replace what an "
                         "API holds: use mode mirror (it also deletes the keys that "
                         "disappeared), upsert or append", h->sync);
    h->run = run;
    h->st = stats;
    h->batches_run = 0;
    free(h->vals);
    h->nvals = run->ncols + 1;
    h->vals = calloc(h->nvals, sizeof(*h->vals));
    if (!h->vals)
        return zx_seterr(err, errlen, "sync %s: out of memory", h->sync);
    return 0;
}

/* The hex of XXH3-128 of the sync, the run and body into out (33 bytes). */
static void idem_key(const hstate *h, const char *body, size_t len, char *out)
{
    XXH3_state_t *x = XXH3_createState();
    XXH128_hash_t d;
    unsigned char id[8];
    uint64_t rid = h->run->run_id;
    for (int i = 0; i < 8; i++, rid >>= 8)
        id[i] = (unsigned char)rid;
    if (x && XXH3_128bits_reset(x) == XXH_OK) {
        XXH3_128bits_update(x, h->sync, strlen(h->sync) + 1);
        XXH3_128bits_update(x, id, sizeof(id));
        XXH3_128bits_update(x, body, len);
        d = XXH3_128bits_digest(x);
    } else {
        d = XXH3_128bits(body, len);   /* out of memory: the body alone */
    }
    XXH3_freeState(x);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)d.high64,
             (unsigned long long)d.low64);
}

typedef struct failctx {
    const hstate *h;
    uint32_t first;
    int is_delete;
    const char *what;
} failctx;

static void on_item_failed(void *arg, uint32_t i, const char *why)
{
    failctx *f = arg;
    char line[400];
    snprintf(line, sizeof(line), "%s: item %u: %s", f->what, i, why);
    if (f->is_delete)
        zx_dest_key_failed(f->h->run, f->first + i, line);
    else
        zx_dest_row_failed(f->h->run, f->first + i, line);
}

/* Send rs (rows, or keys when is_delete) in batches.  0 or -1. */
static int send_items(hstate *h, const zx_rowset *rs, int is_delete, char *err, size_t errlen)
{
    const zx_dhttp_opts *o = h->o;
    uint32_t per = o->batch_rows ? o->batch_rows : 500;
    size_t nb = ((size_t)rs->nrows + per - 1) / per;
    if (!nb)
        return 0;
    if (rs->ncols + 1 > h->nvals) {
        zx_value *v = realloc(h->vals, (rs->ncols + 1) * sizeof(*v));
        if (!v)
            return zx_seterr(err, errlen, "sync %s: out of memory", h->sync);
        h->vals = v;
        h->nvals = rs->ncols + 1;
    }
    const char *method = is_delete && o->delete_path ? o->delete_method : o->method;
    const char *path = is_delete && o->delete_path ? o->delete_path : o->path;
    const char *op = is_delete && !o->delete_path ? (o->op_field ? o->op_field : "op") : NULL;
    zx_buf *bodies = calloc(nb, sizeof(*bodies));
    zx_dhttp_batch *b = calloc(nb, sizeof(*b));
    int rc = -1;
    uint64_t nulled = h->st->nulled;
    char what[200];
    snprintf(what, sizeof(what), "%s %s", method, path);
    if (!bodies || !b) {
        zx_seterr(err, errlen, "sync %s: out of memory", h->sync);
        goto out;
    }
    for (size_t j = 0; j < nb; j++) {
        uint32_t first = (uint32_t)(j * per), end = first + per;
        if (end > rs->nrows)
            end = rs->nrows;
        zx_buf *bb = &bodies[j];
        int bad = zx_dhttp_open(bb, h->shape, o->wrap ? o->wrap : "records") < 0;
        for (uint32_t r = first; r < end && !bad; r++) {
            if (r > first && zx_dhttp_sep(bb, h->shape) < 0)
                bad = 1;
            else if (is_delete)
                bad = zx_dhttp_key(bb, rs, r, h->run->cols, h->run->ncols, op, h->vals,
                                   h->st) < 0;
            else
                bad = zx_dhttp_row(bb, rs, r, h->run->cols, h->run->ncols, o->op_field,
                                   h->vals, h->st) < 0;
        }
        if (bad || zx_dhttp_close(bb, h->shape) < 0) {
            zx_seterr(err, errlen, "sync %s: out of memory", h->sync);
            goto out;
        }
        b[j] = (zx_dhttp_batch){.method = method, .path = path,
                                .content_type = zx_dhttp_content_type(h->shape),
                                .body = bb->p, .len = bb->len};
        idem_key(h, bb->p, bb->len, b[j].idem);
    }
    if (h->st->nulled != nulled) {
        /* nothing sent: the run fails on the misfit (dest.h) */
        rc = 0;
        goto out;
    }
    char e[700];
    if (zx_dhttp_send_all(h->snd, b, nb, h->st, e, sizeof(e)) < 0) {
        zx_seterr(err, errlen, "sync %s: destination http (connection %s): %s", h->sync,
                  h->conn, e);
        goto out;
    }
    for (size_t j = 0; j < nb; j++) {
        uint32_t first = (uint32_t)(j * per), cnt = rs->nrows - first < per ? rs->nrows - first
                                                                           : per;
        long failed = 0;
        h->st->batches++;
        h->batches_run++;
        h->st->bytes += b[j].len;
        if (o->results_path) {
            failctx f = {.h = h, .first = first, .is_delete = is_delete, .what = what};
            failed = zx_dhttp_results(b[j].resp, b[j].resp_len, o->results_path, cnt,
                                      on_item_failed, &f, e, sizeof(e));
            if (failed < 0) {
                zx_seterr(err, errlen, "sync %s: destination http (connection %s): the "
                          "answer to %s (HTTP %ld): %s; the batch may have been applied: "
                          "the next run sends it again", h->sync, h->conn, what,
                          b[j].status, e);
                goto out;
            }
        }
        if (is_delete)
            h->st->rows_deleted += cnt - (uint64_t)failed;
        else
            h->st->rows_written += cnt - (uint64_t)failed;
    }
    rc = 0;
out:
    for (size_t j = 0; bodies && j < nb; j++)
        zx_buf_free(&bodies[j]);
    for (size_t j = 0; b && j < nb; j++)
        zx_dhttp_batch_clear(&b[j]);
    free(bodies);
    free(b);
    return rc;
}

static int http_write(void *state, const zx_rowset *rs, char *err, size_t errlen)
{
    return send_items(state, rs, 0, err, errlen);
}

static int http_delete_keys(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    return send_items(state, keys, 1, err, errlen);
}

static int http_commit(void *state, char *err, size_t errlen)
{
    hstate *h = state;
    (void)err;
    (void)errlen;
    if (h->st)
        snprintf(h->st->made, sizeof(h->st->made), "%u request%s", h->batches_run,
                 h->batches_run == 1 ? "" : "s");
    return 0;
}

static void http_abort(void *state)
{
    (void)state;   /* what was sent stays sent (the top of this file) */
}

static void http_close(void *state)
{
    hstate *h = state;
    if (!h)
        return;
    zx_dhttp_sender_free(h->snd);
    free(h->vals);
    free(h);
}

const zx_dest zx_dest_http = {
    .name = "http",
    .caps = ZX_DEST_DELETES | ZX_DEST_UPSERT,
    .open = http_open,
    .begin = http_begin,
    .write = http_write,
    .delete_keys = http_delete_keys,
    .commit = http_commit,
    .abort = http_abort,
    .close = http_close,
};
