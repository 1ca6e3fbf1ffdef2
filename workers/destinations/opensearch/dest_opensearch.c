/*
 * dest_opensearch.c — the destination opensearch (dest.h): the rows of a
 * reverse sync as documents of one OpenSearch (or Elasticsearch) index,
 * sent with the _bulk API over zx's HTTP client (common/http_client.h).
 *
 *   begin   GET /<index> (its uuid only): missing, PUT it with a mapping from the result's
 *           columns (os_doc.h); replace: POST /<index>/_delete_by_query
 *           (every document) on one that exists
 *   write   batches of at most batch_rows documents and batch_bytes bytes:
 *           POST /<index>/_bulk, {"index":{"_id":<key>}} + the document
 *           (append, or no key: {"index":{}}, ids chosen by the cluster)
 *   delete_keys  the same with {"delete":{"_id":<key>}}
 *   commit  POST /<index>/_refresh
 *   abort   nothing: what was sent stays (no transaction; the run sends
 *           the rest next time)
 *
 * Each _bulk answer is read item by item (os_bulk.h): an item refused is
 * that row's alone (zx_dest_row_failed, zx_dest_key_failed), a delete of a
 * document already gone (404) is no error, items answered 429 are sent
 * again, alone, after a wait (up to ITEM_ROUNDS times).  A whole request
 * answered 429 or 5xx, or cut, is tried again by the HTTP client with
 * backoff (not in append mode without ids, where a repeat could add a
 * document twice: there one attempt).  Everything else fails the run.
 *
 * Bounded: the body by batch_bytes (a larger document is refused alone),
 * the answer by RESP_PER_ITEM bytes an item, every wait by the run's
 * deadline_ms (per attempt; the client's attempts and waits by their
 * count).  Messages name the connection and the index, never the password
 * or the API key.
 *
 * It must never: report a row as refused that the cluster took (or the
 * reverse), go on after an answer it cannot read item by item, or repeat
 * a request that may add documents twice (append without ids).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/dcell.h"
#include "common/http_client.h"
#include "common/util.h"
#include "conf/config.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/opensearch/opensearch_opts.h"
#include "workers/destinations/opensearch/os_bulk.h"
#include "workers/destinations/opensearch/os_doc.h"

#define ITEM_ROUNDS 5               /* sends of items answered 429 */
#define RESP_PER_ITEM 4096          /* answer bytes allowed per item */
#define RESP_MIN (1024 * 1024)      /* ... and at least */
#define RESP_MAX (64 * 1024 * 1024) /* ... and at most */
#define INDEX_ANSWER_MAX (1024 * 1024) /* GET /<index>: its uuid(s) */

/* The items of one _bulk body: item i is body[off[i] .. off[i+1]) and
 * stands for row (or key) row[i] of the batch being handled. */
typedef struct os_batch {
    zx_buf body;
    size_t *off;        /* nitems + 1 */
    uint32_t *row;
    size_t nitems, cap;
} os_batch;

typedef struct os_state {
    char where[400];           /* "opensearch <conn> index <index>" */
    char *base;                /* the url, no trailing '/' */
    char *index_path;          /* "/<index, percent-encoded>" */
    char *auth;                /* "Authorization: ApiKey ..." (secret) or NULL */
    zx_http_client *http;      /* tries again (idempotent requests) */
    zx_http_client *once;      /* one attempt (append without ids) */
    uint32_t batch_rows;
    uint64_t batch_bytes;
    /* the run */
    const zx_dest_run *run;
    zx_dest_stats *st;
    zx_dest_stats dummy;
    size_t *keyidx;            /* key column i is cols[keyidx[i]] */
    size_t *delidx;            /* 0..nkeys-1 (a key rowset's own columns) */
    size_t nkeys;
    int with_ids;              /* documents get their key as _id */
    zx_value *vals;
    os_batch b, retry;
    zx_buf item, tmp, id;
    int is_delete;             /* the batch handled is delete_keys' */
    int fail_rc;               /* set by on_item when the run must fail */
} os_state;

/* ---- small helpers ---------------------------------------------------- */

static void batch_free(os_batch *b)
{
    zx_buf_free(&b->body);
    free(b->off);
    free(b->row);
    memset(b, 0, sizeof(*b));
}

static void batch_reset(os_batch *b)
{
    zx_buf_reset(&b->body);
    b->nitems = 0;
}

/* Append item (n bytes at p) standing for row.  0 or -1. */
static int batch_add(os_batch *b, const char *p, size_t n, uint32_t row)
{
    if (b->nitems + 2 > b->cap) {
        size_t c = b->cap ? b->cap * 2 : 256;
        size_t *o = realloc(b->off, c * sizeof(*o));
        if (!o)
            return -1;
        b->off = o;
        uint32_t *r = realloc(b->row, c * sizeof(*r));
        if (!r)
            return -1;
        b->row = r;
        b->cap = c;
    }
    b->off[b->nitems] = b->body.len;
    if (zx_buf_put(&b->body, p, n) < 0)
        return -1;
    b->row[b->nitems++] = row;
    b->off[b->nitems] = b->body.len;
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* "/<s percent-encoded>": every byte but [a-z0-9._-] as %XX.  malloc'd. */
static char *path_of(const char *s)
{
    size_t n = strlen(s);
    char *p = malloc(3 * n + 2), *q = p;
    if (!p)
        return NULL;
    *q++ = '/';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' ||
            *c == '-')
            *q++ = (char)*c;
        else
            q += sprintf(q, "%%%02X", *c);
    }
    *q = '\0';
    return p;
}

/* One request to base + path (+ query).  Returns the client's answer
 * (0, ZX_HTTP_*); resp is set in every case. */
static int request(os_state *s, zx_http_client *c, const char *method, const char *path,
                   const char *query, const char *ctype, const void *body, size_t len,
                   size_t max_response, zx_http_response *resp, char *err, size_t errlen)
{
    char url[2048];
    snprintf(url, sizeof(url), "%s%s%s", s->base, path, query ? query : "");
    char ct[64];
    snprintf(ct, sizeof(ct), "Content-Type: %s", ctype ? ctype : "application/json");
    const char *hdrs[3] = {ct, s->auth, NULL};
    zx_http_extra x = {.max_response = max_response};
    return zx_http_request_ex(c, method, url, hdrs, body, body ? len : 0, &x, resp, err,
                              errlen);
}

/* The error of an answer that is not the one hoped for: -1 with a line
 * in err naming what was asked. */
static int answer_error(os_state *s, const char *what, const zx_http_response *r, char *err,
                        size_t errlen)
{
    char why[240];
    zx_os_error_text(r->body, r->len, why, sizeof(why));
    const char *hint = "";
    if (r->status == 401 || r->status == 403)
        hint = " (check the connection's username and password, or api_key, and the "
               "user's permissions on the index)";
    else if (r->status == 413)
        hint = " (the body is larger than the cluster takes: lower batch_bytes)";
    return zx_seterr(err, errlen, "%s: %s: HTTP %ld%s%s%s", s->where, what, r->status,
                     why[0] ? ": " : "", why, hint);
}

/* ---- open, close ------------------------------------------------------ */

static void os_close(void *state)
{
    os_state *s = state;
    if (!s)
        return;
    zx_http_client_free(s->http);
    zx_http_client_free(s->once);
    if (s->auth) {
        explicit_bzero(s->auth, strlen(s->auth));
        free(s->auth);
    }
    free(s->base);
    free(s->index_path);
    free(s->keyidx);
    free(s->delidx);
    free(s->vals);
    batch_free(&s->b);
    batch_free(&s->retry);
    zx_buf_free(&s->item);
    zx_buf_free(&s->tmp);
    zx_buf_free(&s->id);
    free(s);
}

static int os_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    *state = NULL;
    const zx_opensearch_opts *o = a->opts;
    if (!o || !o->connection || !o->index)
        return zx_seterr(err, errlen, "opensearch: write the index as destination: "
                         "{opensearch: {connection: CONNECTION, index: NAME}}");
    const zx_conf_connection *c = a->conf ? zx_conf_find_connection(a->conf, o->connection)
                                          : NULL;
    const char *index = o->index;
    if (!c)
        return zx_seterr(err, errlen, "opensearch: unknown connection %s", o->connection);
    if (!c->os_url)
        return zx_seterr(err, errlen, "opensearch %s: the connection has no url", c->name);
    if (c->read_only)
        return zx_seterr(err, errlen, "opensearch %s: connection %s is read_only: zx never "
                         "writes to it", c->name, c->name);
    os_state *s = calloc(1, sizeof(*s));
    if (!s)
        return zx_seterr(err, errlen, "opensearch: out of memory");
    snprintf(s->where, sizeof(s->where), "opensearch %s index %s", c->name, index);
    size_t n = strlen(c->os_url);
    while (n && c->os_url[n - 1] == '/')
        n--;
    s->base = strndup(c->os_url, n);
    s->index_path = path_of(index);
    int auth_ok = 1;
    if (c->os_api_key && asprintf(&s->auth, "Authorization: ApiKey %s", c->os_api_key) < 0) {
        s->auth = NULL;
        auth_ok = 0;
    }
    if (!s->base || !s->index_path || !auth_ok) {
        os_close(s);
        return zx_seterr(err, errlen, "opensearch: out of memory");
    }
    s->batch_rows = o->batch_rows ? o->batch_rows : 1000;
    s->batch_bytes = o->batch_bytes ? o->batch_bytes : 5 * 1024 * 1024;
    zx_http_opts ho = {
        .timeout_ms = a->deadline_ms > 0 ? (long)a->deadline_ms : 30000,
        .max_response = RESP_MIN,
        .ca_file = c->os_ca_file,
        .insecure = c->os_insecure,
        .username = c->username,
        .password = c->password,
        .max_attempts = 4,
        .backoff_ms = 250,
        .backoff_max_ms = 5000,
        .user_agent = "zx",
    };
    char e[256];
    if (!(s->http = zx_http_client_new(&ho, e, sizeof(e)))) {
        os_close(s);
        return zx_seterr(err, errlen, "%s: %s", s->where, e);
    }
    ho.max_attempts = 1;
    if (!(s->once = zx_http_client_new(&ho, e, sizeof(e)))) {
        os_close(s);
        return zx_seterr(err, errlen, "%s: %s", s->where, e);
    }
    *state = s;
    return 0;
}

/* ---- begin ------------------------------------------------------------ */

/* Create the index with a mapping of the run's columns.  0 or -1. */
static int create_index(os_state *s, const zx_dest_run *run, char *err, size_t errlen)
{
    zx_buf m;
    zx_buf_init(&m);
    if (zx_os_mapping(&m, run->cols, run->ncols, run->key_cols, run->nkey_cols) < 0) {
        zx_buf_free(&m);
        return zx_seterr(err, errlen, "%s: out of memory", s->where);
    }
    zx_http_response r;
    char e[256];
    int rc = request(s, s->http, "PUT", s->index_path, NULL, NULL, m.p, m.len, 0, &r, e,
                     sizeof(e));
    zx_buf_free(&m);
    if (rc != 0) {
        zx_http_response_free(&r);
        return zx_seterr(err, errlen, "%s: creating the index at %s: %s", s->where, s->base,
                         e);
    }
    char why[240];
    zx_os_error_text(r.body, r.len, why, sizeof(why));
    /* made meanwhile by another writer: as good */
    if (r.status == 200 || (r.status == 400 && strstr(why, "already_exists"))) {
        zx_http_response_free(&r);
        return 0;
    }
    rc = answer_error(s, "creating the index", &r, err, errlen);
    zx_http_response_free(&r);
    return rc;
}

/* replace: delete every document of the index.  0 or -1. */
static int empty_index(os_state *s, char *err, size_t errlen)
{
    static const char q[] = "{\"query\":{\"match_all\":{}}}";
    zx_http_response r;
    char e[256];
    char path[1100];
    snprintf(path, sizeof(path), "%s/_delete_by_query", s->index_path);
    int rc = request(s, s->http, "POST", path, "?conflicts=proceed&refresh=true", NULL, q,
                     sizeof(q) - 1, 0, &r, e, sizeof(e));
    if (rc != 0) {
        zx_http_response_free(&r);
        return zx_seterr(err, errlen, "%s: emptying the index (replace) at %s: %s", s->where,
                         s->base, e);
    }
    if (r.status != 200)
        rc = answer_error(s, "emptying the index (replace)", &r, err, errlen);
    else if (r.body && !strstr(r.body, "\"failures\":[]"))
        rc = zx_seterr(err, errlen, "%s: emptying the index (replace): some documents "
                       "could not be deleted; the run stops", s->where);
    zx_http_response_free(&r);
    return rc;
}

static int os_begin(void *state, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                    size_t errlen)
{
    os_state *s = state;
    s->run = run;
    s->st = stats ? stats : &s->dummy;
    free(s->keyidx);
    free(s->delidx);
    free(s->vals);
    s->nkeys = run->nkey_cols;
    s->keyidx = calloc(s->nkeys + 1, sizeof(size_t));
    s->delidx = calloc(s->nkeys + 1, sizeof(size_t));
    s->vals = calloc((run->ncols > s->nkeys ? run->ncols : s->nkeys) + 1, sizeof(zx_value));
    if (!s->keyidx || !s->delidx || !s->vals)
        return zx_seterr(err, errlen, "%s: out of memory", s->where);
    for (size_t k = 0; k < s->nkeys; k++) {
        size_t i = 0;
        while (i < run->ncols && strcmp(run->cols[i].name, run->key_cols[k]))
            i++;
        if (i == run->ncols)
            return zx_seterr(err, errlen, "%s: key column %s is not in the result",
                             s->where, run->key_cols[k]);
        s->keyidx[k] = i;
        s->delidx[k] = k;
    }
    s->with_ids = s->nkeys > 0 && run->mode != ZX_MODE_APPEND;
    if ((run->mode == ZX_MODE_UPSERT || run->mode == ZX_MODE_MIRROR) && !s->nkeys)
        return zx_seterr(err, errlen, "%s: upsert and mirror need a key", s->where);

    zx_http_response r;
    char e[256];
    /* filter_path: the answer is a line per index (an alias may name
     * several), not their mappings */
    int rc = request(s, s->http, "GET", s->index_path, "?filter_path=*.settings.index.uuid",
                     NULL, NULL, 0, INDEX_ANSWER_MAX, &r, e, sizeof(e));
    if (rc != 0) {
        zx_http_response_free(&r);
        return zx_seterr(err, errlen, "%s: cannot reach the cluster at %s: %s", s->where,
                         s->base, e);
    }
    long status = r.status;
    if (status == 404) {
        zx_http_response_free(&r);
        return create_index(s, run, err, errlen);
    }
    if (status != 200) {
        rc = answer_error(s, "looking the index up", &r, err, errlen);
        zx_http_response_free(&r);
        return rc;
    }
    zx_http_response_free(&r);
    if (run->mode == ZX_MODE_REPLACE)
        return empty_index(s, err, errlen);
    return 0;
}

/* ---- sending a batch -------------------------------------------------- */

/* zx_os_bulk_parse's each: one item's result. */
static int on_item(void *ctx, size_t i, const zx_os_item *it)
{
    os_state *s = ctx;
    const os_batch *b = &s->b;
    if (it->status >= 200 && it->status <= 299) {
        if (s->is_delete)
            s->st->rows_deleted++;
        else
            s->st->rows_written++;
        return 0;
    }
    if (s->is_delete && it->status == 404) {     /* gone already */
        s->st->rows_deleted++;
        return 0;
    }
    if (it->status == 429) {                     /* sent again, alone */
        zx_dest_note_error(s->st, it->why);
        return batch_add(&s->retry, b->body.p + b->off[i], b->off[i + 1] - b->off[i],
                         b->row[i]) < 0 ? (s->fail_rc = -1) : 0;
    }
    if (s->is_delete)
        zx_dest_key_failed(s->run, b->row[i], it->why);
    else
        zx_dest_row_failed(s->run, b->row[i], it->why);
    return 0;
}

/* Send s->b (then empty it): POST /<index>/_bulk, its items read.  0 or -1. */
static int flush(os_state *s, char *err, size_t errlen)
{
    for (int round = 0; s->b.nitems; round++) {
        zx_http_client *c = s->with_ids || s->is_delete ? s->http : s->once;
        size_t maxr = RESP_MIN + s->b.nitems * (size_t)RESP_PER_ITEM;
        if (maxr > RESP_MAX)
            maxr = RESP_MAX;
        char path[1100], e[256];
        snprintf(path, sizeof(path), "%s/_bulk", s->index_path);
        zx_http_response r;
        int rc = request(s, c, "POST", path, NULL, "application/x-ndjson", s->b.body.p,
                         s->b.body.len, maxr, &r, e, sizeof(e));
        if (r.attempts > 1)
            s->st->batches_retried += (uint64_t)(r.attempts - 1);
        if (rc != 0 || r.status != 200) {
            char msg[1200];
            if (rc != 0)
                snprintf(msg, sizeof(msg), "%s: _bulk request to %s: %s", s->where, s->base,
                         e);
            else
                answer_error(s, "_bulk request", &r, msg, sizeof(msg));
            zx_http_response_free(&r);
            zx_dest_note_error(s->st, msg);
            s->st->batches_failed++;
            batch_reset(&s->b);
            return zx_seterr(err, errlen, "%s", msg);
        }
        s->st->batches++;
        s->st->bytes += s->b.body.len;
        batch_reset(&s->retry);
        s->fail_rc = 0;
        rc = zx_os_bulk_parse(r.body, r.len, s->b.nitems, on_item, s, e, sizeof(e));
        zx_http_response_free(&r);
        if (rc != 0 || s->fail_rc) {
            batch_reset(&s->b);
            s->st->batches_failed++;
            if (s->fail_rc)
                return zx_seterr(err, errlen, "%s: out of memory", s->where);
            zx_dest_note_error(s->st, e);
            return zx_seterr(err, errlen, "%s: %s (the run stops: what that request "
                             "did is unknown, the next run sends it again)", s->where, e);
        }
        /* the items answered 429 become the batch */
        os_batch t = s->b;
        s->b = s->retry;
        s->retry = t;
        batch_reset(&s->retry);
        if (!s->b.nitems)
            break;
        if (round + 1 >= ITEM_ROUNDS) {
            for (size_t i = 0; i < s->b.nitems; i++) {
                const char *why = "HTTP 429: the cluster is busy (tried 5 times); the next "
                                  "run sends it again";
                if (s->is_delete)
                    zx_dest_key_failed(s->run, s->b.row[i], why);
                else
                    zx_dest_row_failed(s->run, s->b.row[i], why);
            }
            batch_reset(&s->b);
            break;
        }
        s->st->batches_retried++;
        sleep_ms(250L << round);
    }
    return 0;
}

/* Add the item in s->item for row to the batch, sending first when it
 * would not fit, after when it is full.  0 or -1. */
static int add_item(os_state *s, uint32_t row, char *err, size_t errlen)
{
    if (s->item.len > s->batch_bytes) {
        char why[160];
        snprintf(why, sizeof(why), "the document is %zu bytes, more than batch_bytes "
                 "(%llu)", s->item.len, (unsigned long long)s->batch_bytes);
        if (s->is_delete)
            zx_dest_key_failed(s->run, row, why);
        else
            zx_dest_row_failed(s->run, row, why);
        return 0;
    }
    if (s->b.nitems && s->b.body.len + s->item.len > s->batch_bytes &&
        flush(s, err, errlen) < 0)
        return -1;
    if (batch_add(&s->b, s->item.p, s->item.len, row) < 0)
        return zx_seterr(err, errlen, "%s: out of memory", s->where);
    if (s->b.nitems >= s->batch_rows)
        return flush(s, err, errlen);
    return 0;
}

/* Put the action line of row's key (vals, key columns idx) into s->item:
 * 1, 0 (row refused: reported), -1 (out of memory). */
static int action_line(os_state *s, const char *action, const size_t *idx, uint32_t row)
{
    zx_buf_reset(&s->item);
    if (zx_buf_printf(&s->item, "{\"%s\":{", action) < 0)
        return -1;
    if (s->with_ids || s->is_delete) {
        const char *why = NULL;
        zx_buf_reset(&s->id);
        int r = zx_os_doc_id(&s->id, s->vals, idx, s->nkeys, &s->tmp, &why);
        if (r < 0)
            return -1;
        if (r == 0) {
            if (s->is_delete)
                zx_dest_key_failed(s->run, row, why);
            else
                zx_dest_row_failed(s->run, row, why);
            return 0;
        }
        if (zx_buf_put(&s->item, "\"_id\":", 6) < 0 ||
            zx_dc_json_quote(&s->item, s->id.p, s->id.len, 0, 0) <= 0)
            return -1;
    }
    return zx_buf_put(&s->item, "}}\n", 3) < 0 ? -1 : 1;
}

static int os_write(void *state, const zx_rowset *rs, char *err, size_t errlen)
{
    os_state *s = state;
    if (rs->ncols != s->run->ncols)
        return zx_seterr(err, errlen, "%s: a batch of %u columns for %zu (a bug in zx)",
                         s->where, rs->ncols, s->run->ncols);
    s->is_delete = 0;
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, s->vals);
        int a = action_line(s, "index", s->keyidx, r);
        if (a < 0 || (a > 0 && (zx_os_doc(&s->item, s->run->cols, s->run->ncols, s->vals,
                                          &s->tmp, s->st) < 0 ||
                                zx_buf_put(&s->item, "\n", 1) < 0)))
            return zx_seterr(err, errlen, "%s: out of memory", s->where);
        if (a > 0 && add_item(s, r, err, errlen) < 0)
            return -1;
    }
    return flush(s, err, errlen);
}

static int os_delete_keys(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    os_state *s = state;
    if (keys->ncols != s->nkeys)
        return zx_seterr(err, errlen, "%s: a key batch of %u columns for %zu (a bug in zx)",
                         s->where, keys->ncols, s->nkeys);
    s->is_delete = 1;
    for (uint32_t r = 0; r < keys->nrows; r++) {
        zx_rowset_row(keys, r, s->vals);
        int a = action_line(s, "delete", s->delidx, r);
        if (a < 0) {
            s->is_delete = 0;
            return zx_seterr(err, errlen, "%s: out of memory", s->where);
        }
        if (a > 0 && add_item(s, r, err, errlen) < 0) {
            s->is_delete = 0;
            return -1;
        }
    }
    int rc = flush(s, err, errlen);
    s->is_delete = 0;
    return rc;
}

static int os_commit(void *state, char *err, size_t errlen)
{
    os_state *s = state;
    char path[1100], e[256];
    snprintf(path, sizeof(path), "%s/_refresh", s->index_path);
    zx_http_response r;
    int rc = request(s, s->http, "POST", path, NULL, NULL, NULL, 0, 0, &r, e, sizeof(e));
    if (rc != 0)
        rc = zx_seterr(err, errlen, "%s: refreshing the index at %s: %s", s->where, s->base,
                       e);
    else if (r.status != 200)
        rc = answer_error(s, "refreshing the index", &r, err, errlen);
    zx_http_response_free(&r);
    return rc;
}

static void os_abort(void *state)
{
    os_state *s = state;
    if (s) {
        batch_reset(&s->b);
        batch_reset(&s->retry);
    }
}

const zx_dest zx_dest_opensearch = {
    .name = "opensearch",
    .caps = ZX_DEST_DELETES | ZX_DEST_UPSERT,
    .open = os_open,
    .begin = os_begin,
    .write = os_write,
    .delete_keys = os_delete_keys,
    .commit = os_commit,
    .abort = os_abort,
    .close = os_close,
};
