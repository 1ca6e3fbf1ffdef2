/*
 * dest_redis.c — the destination redis (dest.h): each row of a run
 * becomes a Redis key made by the key template (redis_keytpl.h): `set`
 * writes the row as one JSON object (SET key json [PX ttl]), `hset` as a
 * hash of its columns (HSET key col text..., HDEL of the NULL columns,
 * PEXPIRE with a ttl), `invalidate` deletes the key (DEL) so a cache
 * fills it again; in mirror mode every key gone from the result is
 * deleted (DEL).  Commands are pipelined, batch_rows rows per round trip
 * (redis_conn.h).
 *
 * Not a transaction: each batch is visible once its replies came; a batch
 * whose connection fails is sent again on a new one (twice at most: every
 * command may be applied twice); a run that fails part way has changed
 * the keys of the batches sent (the run records no hashes then, so the
 * next run sends them all again: setting a key twice is harmless).  A command refused on its own (WRONGTYPE: the
 * key holds another type; NOPERM: the ACL user may not touch that key;
 * OOM) refuses its row (zx_dest_row_failed) or key (zx_dest_key_failed),
 * and the rest of the batch goes on: the next run sends it again.
 *
 * It must never: log or put in an error the password; make a key from a
 * NULL value; hold more than one batch's commands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "formats/textrows.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/redis/redis_conn.h"
#include "workers/destinations/redis/redis_keytpl.h"
#include "workers/destinations/redis/redis_opts.h"
#include "workers/destinations/redis/redis_value.h"

typedef struct rstate {
    const zx_redis_opts *o;
    const zx_conf_connection *c;
    char what[200];               /* "redis connection cache (127.0.0.1:6379)" */
    int64_t timeout_ms;
    zx_redis_conn *k;
    const zx_dest_run *run;
    zx_dest_stats *st;
    zx_redis_tpl tpl;             /* bound to the run's columns */
    zx_redis_tpl ktpl;            /* bound to its key columns (delete_keys) */
    zx_dcol *kcols;               /* the key columns as columns */
    zx_buf out, key, scratch, json;
    uint32_t *cmd_row;            /* per command of the pipeline: its row */
    size_t *cmd_key;              /* and where its key starts in keys */
    size_t ncmd, capcmd, capkey;
    zx_buf keys;                  /* the pipeline's keys, each NUL-ended */
    unsigned char *refused;       /* per row of the batch: refused already */
    size_t caprefused;
    zx_value *vals;               /* one row's values */
    size_t nvals;
    int deleting;                 /* the batch is delete_keys' */
} rstate;

static int dred_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    const zx_redis_opts *o = a->opts;
    const zx_conf_connection *c = a->conn;
    *state = NULL;
    if (!o || !o->key)
        return zx_seterr(err, errlen, "sync %s: destination redis: no key template", a->sync);
    if (!c || !c->kind || strcmp(c->kind, "redis"))
        return zx_seterr(err, errlen, "sync %s: destination redis needs a connection of "
                         "kind redis", a->sync);
    if (c->read_only)
        return zx_seterr(err, errlen, "sync %s: connection %s is read_only: zx never writes "
                         "to it", a->sync, c->name);
    rstate *s = calloc(1, sizeof(*s));
    if (!s)
        return zx_seterr(err, errlen, "out of memory");
    s->o = o;
    s->c = c;
    s->timeout_ms = a->deadline_ms > 0 ? a->deadline_ms : 30000;
    snprintf(s->what, sizeof(s->what), "sync %s: redis connection %s (%.100s)", a->sync,
             c->name, c->address ? c->address : "?");
    char e[400];
    if (zx_redis_tpl_parse(o->key, &s->tpl, e, sizeof(e)) < 0 ||
        zx_redis_tpl_parse(o->key, &s->ktpl, e, sizeof(e)) < 0) {
        zx_seterr(err, errlen, "%s: %s", s->what, e);
        goto fail;
    }
    if (!(s->k = zx_redis_open(c, s->timeout_ms, e, sizeof(e)))) {
        zx_seterr(err, errlen, "%s: %s", s->what, e);
        goto fail;
    }
    *state = s;
    return 0;
fail:
    zx_redis_tpl_free(&s->tpl);
    zx_redis_tpl_free(&s->ktpl);
    free(s);
    return -1;
}

static int dred_begin(void *state, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                      size_t errlen)
{
    rstate *s = state;
    s->run = run;
    s->st = stats;
    if (run->mode == ZX_MODE_REPLACE)
        return zx_seterr(err, errlen, "%s: mode replace: Redis has no table to replace; use "
                         "upsert or mirror (or append)", s->what);
    const char **names = calloc(run->ncols + 1, sizeof(*names));
    if (!names)
        return zx_seterr(err, errlen, "out of memory");
    for (size_t i = 0; i < run->ncols; i++)
        names[i] = run->cols[i].name;
    char e[600];
    int rc = zx_redis_tpl_bind(&s->tpl, names, run->ncols, e, sizeof(e));
    free(names);
    if (rc < 0)
        return zx_seterr(err, errlen, "%s: %s", s->what, e);
    /* a placeholder outside the key: fine for append and upsert (the key
     * of a row whose such column changes moves; the old one stays until
     * its ttl), not for mirror, whose deletes know the key columns only */
    free(s->kcols);
    s->kcols = calloc(run->nkey_cols + 1, sizeof(*s->kcols));
    if (!s->kcols)
        return zx_seterr(err, errlen, "out of memory");
    for (size_t i = 0; i < run->nkey_cols; i++) {
        for (size_t j = 0; j < run->ncols; j++)
            if (!strcmp(run->cols[j].name, run->key_cols[i]))
                s->kcols[i] = run->cols[j];
        if (!s->kcols[i].name)
            return zx_seterr(err, errlen, "%s: key column %s is not in the result", s->what,
                             run->key_cols[i]);
    }
    if (run->mode == ZX_MODE_MIRROR &&
        zx_redis_tpl_bind(&s->ktpl, run->key_cols, run->nkey_cols, e, sizeof(e)) < 0)
        return zx_seterr(err, errlen, "%s: mode mirror deletes keys by the sync's key "
                         "columns only: %s", s->what, e);
    if (!(s->vals = calloc(run->ncols ? run->ncols : 1, sizeof(*s->vals))))
        return zx_seterr(err, errlen, "out of memory");
    s->nvals = run->ncols;
    return 0;
}

/* ---- one batch: commands, then the round trip ---------------------------- */

static int add_cmd(rstate *s, uint32_t row, int argc, const char **argv, const size_t *lens)
{
    if (zx_grow_to(&s->cmd_row, s->ncmd + 1, &s->capcmd, sizeof(*s->cmd_row), 256) < 0 ||
        zx_grow_to(&s->cmd_key, s->ncmd + 1, &s->capkey, sizeof(*s->cmd_key), 256) < 0 ||
        zx_redis_encode(&s->out, argc, argv, lens) < 0)
        return -1;
    /* the key, for messages: a row's commands share it */
    if (!s->ncmd || s->cmd_row[s->ncmd - 1] != row || s->keys.len == 0) {
        s->cmd_key[s->ncmd] = s->keys.len;
        if (zx_buf_put(&s->keys, s->key.p, s->key.len + 1) < 0)
            return -1;
    } else {
        s->cmd_key[s->ncmd] = s->cmd_key[s->ncmd - 1];
    }
    s->cmd_row[s->ncmd++] = row;
    return 0;
}

static void refuse(rstate *s, uint32_t row, const char *why)
{
    char m[512];
    if (row < s->caprefused) {
        if (s->refused[row])
            return;
        s->refused[row] = 1;
    }
    snprintf(m, sizeof(m), "%s: %s", s->what, why);
    if (s->deleting)
        zx_dest_key_failed(s->run, row, m);
    else
        zx_dest_row_failed(s->run, row, m);
}

static int on_reply(void *ctx, size_t i, const zx_redis_reply *r)
{
    rstate *s = ctx;
    if (r->type == ZX_REDIS_R_ERROR && i < s->ncmd) {
        char m[450];
        snprintf(m, sizeof(m), "key %.150s: %s", s->keys.p + s->cmd_key[i], r->text);
        refuse(s, s->cmd_row[i], m);
    }
    return 0;
}

/* Send the pipeline (the commands of the rows since the last flush).  A
 * connection that fails (or a reply that cannot be read) is opened again
 * and the whole batch sent again, RETRIES times at most, after a pause:
 * every command zx sends may be applied twice (SET, HSET, HDEL, PEXPIRE,
 * DEL).  0 or -1. */
#define RETRIES 2
static int flush(rstate *s, char *err, size_t errlen)
{
    static const unsigned pause_ms[RETRIES] = {100, 1000};
    if (!s->ncmd)
        return 0;
    char e[600], m[900];
    for (int attempt = 0;; attempt++) {
        if (!s->k)
            s->k = zx_redis_open(s->c, s->timeout_ms, e, sizeof(e));
        if (s->k &&
            zx_redis_exchange(s->k, s->out.p, s->out.len, s->ncmd, on_reply, s, e,
                              sizeof(e)) == 0)
            break;
        zx_redis_close(s->k);       /* of no further use */
        s->k = NULL;
        snprintf(m, sizeof(m), "%.200s: %.600s", s->what, e);
        zx_dest_note_error(s->st, m);
        if (attempt == RETRIES) {
            s->st->batches_failed++;
            return zx_seterr(err, errlen, "%s", m);
        }
        s->st->batches_retried++;
        struct timespec ts = {.tv_sec = pause_ms[attempt] / 1000,
                              .tv_nsec = (long)(pause_ms[attempt] % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    s->st->batches++;
    s->st->bytes += s->out.len;
    zx_buf_reset(&s->out);
    zx_buf_reset(&s->keys);
    s->ncmd = 0;
    return 0;
}

/* zx_redis_text_fn over the row in s->vals; cols: the template's columns */
typedef struct keyctx {
    rstate *s;
    const zx_dcol *cols;
    zx_redis_text t;
} keyctx;

static int key_text(void *ctx, size_t col, const char **str, size_t *n)
{
    keyctx *kc = ctx;
    int r = zx_redis_value_text(&kc->cols[col], &kc->s->vals[col], &kc->s->scratch, &kc->t);
    if (r < 0)
        return -1;
    if (r != 1)
        return 0;
    *str = kc->t.s;
    *n = kc->t.n;
    return 1;
}

/* The key of the row in s->vals into s->key: 1; 0 the row refused; -1 oom. */
static int make_key(rstate *s, const zx_redis_tpl *t, const zx_dcol *cols, uint32_t row)
{
    keyctx kc = {.s = s, .cols = cols};
    const char *why = NULL;
    size_t bad = SIZE_MAX;
    int r = zx_redis_tpl_format(t, key_text, &kc, &s->key, &why, &bad);
    if (r == 0) {
        char m[300];
        if (bad != SIZE_MAX)
            snprintf(m, sizeof(m), "no key: column %.128s of the key template %s (or does "
                     "not fit its type)", cols[bad].name, why);
        else
            snprintf(m, sizeof(m), "no key: the template %s", why);
        refuse(s, row, m);
    }
    return r;
}

static int grow_refused(rstate *s, size_t n)
{
    if (n == 0)
        return 0;
    if (n > s->caprefused) {
        unsigned char *p = realloc(s->refused, n);
        if (!p)
            return -1;
        s->refused = p;
        s->caprefused = n;
    }
    memset(s->refused, 0, n);
    return 0;
}

static int ttl_arg(const rstate *s, char out[24])
{
    return snprintf(out, 24, "%llu", (unsigned long long)s->o->ttl_ms);
}

/* The commands of one row (in s->vals, key in s->key).  0 or -1 oom. */
static int row_cmds(rstate *s, uint32_t row)
{
    const zx_redis_opts *o = s->o;
    const zx_dest_run *run = s->run;
    char ttl[24];
    int tl = ttl_arg(s, ttl);
    if (o->action == ZX_REDIS_INVALIDATE) {
        const char *argv[2] = {"DEL", s->key.p};
        size_t lens[2] = {3, s->key.len};
        return add_cmd(s, row, 2, argv, lens);
    }
    if (o->action == ZX_REDIS_SET) {
        size_t misfit = SIZE_MAX;
        zx_buf_reset(&s->json);
        if (zx_ndjson_row(&s->json, run->cols, run->ncols, s->vals, &s->scratch,
                          &s->st->nulled, &misfit) < 0)
            return -1;
        if (misfit != SIZE_MAX)
            zx_dest_misfit(s->st, run->cols[misfit].name, &s->vals[misfit]);
        if (s->json.len && s->json.p[s->json.len - 1] == '\n')
            s->json.len--;
        const char *argv[5] = {"SET", s->key.p, s->json.p, "PX", ttl};
        size_t lens[5] = {3, s->key.len, s->json.len, 2, (size_t)tl};
        return add_cmd(s, row, o->ttl_ms ? 5 : 3, argv, lens);
    }
    /* hset: the non-NULL columns set, the NULL ones removed */
    size_t n = run->ncols;
    const char **argv = calloc(2 * n + 2, sizeof(*argv));
    size_t *lens = calloc(2 * n + 2, sizeof(*lens));
    const char **dargv = calloc(n + 2, sizeof(*dargv));
    size_t *dlens = calloc(n + 2, sizeof(*dlens));
    zx_redis_text *tx = calloc(n ? n : 1, sizeof(*tx));
    zx_buf *sc = calloc(n ? n : 1, sizeof(*sc));
    int rc = -1, na = 2, nd = 2;
    if (!argv || !lens || !dargv || !dlens || !tx || !sc)
        goto out;
    argv[0] = "HSET";
    lens[0] = 4;
    dargv[0] = "HDEL";
    dlens[0] = 4;
    argv[1] = dargv[1] = s->key.p;
    lens[1] = dlens[1] = s->key.len;
    for (size_t i = 0; i < n; i++) {
        int r = zx_redis_value_text(&run->cols[i], &s->vals[i], &sc[i], &tx[i]);
        if (r < 0)
            goto out;
        if (r == 2) {
            s->st->nulled++;
            zx_dest_misfit(s->st, run->cols[i].name, &s->vals[i]);
        }
        if (r == 1) {
            argv[na] = run->cols[i].name;
            lens[na++] = strlen(run->cols[i].name);
            argv[na] = tx[i].s;
            lens[na++] = tx[i].n;
        } else {
            dargv[nd] = run->cols[i].name;
            dlens[nd++] = strlen(run->cols[i].name);
        }
    }
    if (na == 2) {
        const char *dv[2] = {"DEL", s->key.p};
        size_t dl[2] = {3, s->key.len};
        rc = add_cmd(s, row, 2, dv, dl);
        goto out;
    }
    if (add_cmd(s, row, na, argv, lens) < 0 || (nd > 2 && add_cmd(s, row, nd, dargv, dlens) < 0))
        goto out;
    if (o->ttl_ms) {
        const char *ev[3] = {"PEXPIRE", s->key.p, ttl};
        size_t el[3] = {7, s->key.len, (size_t)tl};
        if (add_cmd(s, row, 3, ev, el) < 0)
            goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; sc && i < n; i++)
        zx_buf_free(&sc[i]);
    free(sc);
    free(tx);
    free(argv);
    free(lens);
    free(dargv);
    free(dlens);
    return rc;
}

/* Rows [from, to) of the batch were sent: count those not refused. */
static uint64_t delivered(const rstate *s, uint32_t from, uint32_t to)
{
    uint64_t n = 0;
    for (uint32_t r = from; r < to; r++)
        n += r >= s->caprefused || !s->refused[r];
    return n;
}

static int send_rows(rstate *s, const zx_rowset *rs, int deleting, char *err, size_t errlen)
{
    s->deleting = deleting;
    if (grow_refused(s, rs->nrows) < 0)
        return zx_seterr(err, errlen, "out of memory");
    zx_buf_reset(&s->out);
    zx_buf_reset(&s->keys);
    s->ncmd = 0;
    uint32_t per = s->o->batch_rows ? s->o->batch_rows : 1000, start = 0;
    const zx_redis_tpl *t = deleting ? &s->ktpl : &s->tpl;
    const zx_dcol *cols = deleting ? s->kcols : s->run->cols;
    size_t ncols = deleting ? s->run->nkey_cols : s->run->ncols;
    if (rs->ncols > ncols)
        return zx_seterr(err, errlen, "%s: a batch of %u columns, %zu expected", s->what,
                         (unsigned)rs->ncols, ncols);
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, s->vals);
        int k = make_key(s, t, cols, r);
        if (k < 0)
            return zx_seterr(err, errlen, "out of memory");
        if (k == 1) {
            int rc;
            if (deleting) {
                const char *argv[2] = {"DEL", s->key.p};
                size_t lens[2] = {3, s->key.len};
                rc = add_cmd(s, r, 2, argv, lens);
            } else {
                rc = row_cmds(s, r);
            }
            if (rc < 0)
                return zx_seterr(err, errlen, "out of memory");
        }
        if (r + 1 - start >= per || r + 1 == rs->nrows) {
            if (flush(s, err, errlen) < 0)
                return -1;
            uint64_t ok = delivered(s, start, r + 1);
            if (deleting)
                s->st->rows_deleted += ok;
            else
                s->st->rows_written += ok;
            start = r + 1;
        }
    }
    return 0;
}

static int dred_write(void *state, const zx_rowset *rs, char *err, size_t errlen)
{
    return send_rows(state, rs, 0, err, errlen);
}

static int dred_delete_keys(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    return send_rows(state, keys, 1, err, errlen);
}

static int dred_commit(void *state, char *err, size_t errlen)
{
    (void)state;
    (void)err;
    (void)errlen;
    return 0;     /* every batch is applied once its replies came */
}

static void dred_abort(void *state)
{
    (void)state;  /* nothing to undo: see the top of this file */
}

static void dred_close(void *state)
{
    rstate *s = state;
    if (!s)
        return;
    zx_redis_close(s->k);
    zx_redis_tpl_free(&s->tpl);
    zx_redis_tpl_free(&s->ktpl);
    zx_buf_free(&s->out);
    zx_buf_free(&s->key);
    zx_buf_free(&s->scratch);
    zx_buf_free(&s->json);
    free(s->kcols);
    free(s->cmd_row);
    free(s->cmd_key);
    zx_buf_free(&s->keys);
    free(s->refused);
    free(s->vals);
    free(s);
}

const zx_dest zx_dest_redis = {
    .name = "redis",
    .caps = ZX_DEST_DELETES | ZX_DEST_UPSERT,
    .open = dred_open,
    .begin = dred_begin,
    .write = dred_write,
    .delete_keys = dred_delete_keys,
    .commit = dred_commit,
    .abort = dred_abort,
    .close = dred_close,
};
