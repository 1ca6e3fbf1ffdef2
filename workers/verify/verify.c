/*
 * verify.c — `zxctl verify NAME` (verify.h): compare each table of a
 * Postgres CDC pipeline with its mirror, re-check what differs once the
 * mirror has caught up, and say which keys differ and how.
 *
 * It must never: write anywhere, keep more than ZX_VERIFY_MAX_KEYS keys
 * per table, or run past its deadline.
 */
#include "workers/verify/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "workers/sources/postgres/postgres_opts.h"
#include "workers/verify/verify_int.h"

#define VF_BATCH 500                /* rows compared per query */
#define VF_RANGE 1000               /* rows of a range hashed on both sides */

/* A key that differed, and how. */
typedef struct vf_cand {
    vf_row key;              /* texts as the source prints them */
    vf_how how;
    int *diff;               /* t->ncols flags: the columns that differ */
} vf_cand;

typedef struct vf_run {
    const zx_conf_pipeline *pc;
    const zx_postgres_opts *o;   /* pc's own options: its tables and slot */
    vf_src *src;
    vf_mir *mir;
    int64_t deadline_ms;
    vf_cand *c;
    size_t n, cap;
    uint64_t more;           /* differing keys beyond ZX_VERIFY_MAX_KEYS */
    int lagging;             /* the mirror did not catch up in a round */
    uint64_t ranges;         /* ranges hashed on both sides (this table) */
    uint64_t ranges_differing; /* of those, ranges compared key by key */
    int repair;              /* --repair: keys still differing go to req */
    json_t *req;             /* [{"table", "keys"}] of the repair request */
    char *err;
    size_t errlen;
} vf_run;

static void cands_free(vf_run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        vf_row_free(&r->c[i].key);
        free(r->c[i].diff);
    }
    free(r->c);
    r->c = NULL;
    r->n = r->cap = 0;
    r->more = 0;
    r->lagging = 0;
    r->ranges = r->ranges_differing = 0;
}

/* Keep key (taken over: *key is emptied) with how and diff. */
static int cand_add(vf_run *r, const vf_table *t, vf_row *key, vf_how how, const int *diff)
{
    if (r->n == ZX_VERIFY_MAX_KEYS) {
        r->more++;
        vf_row_free(key);
        return 0;
    }
    if (zx_grow(&r->c, r->n, &r->cap, sizeof(*r->c)) < 0)
        return zx_seterr(r->err, r->errlen, "out of memory");
    vf_cand *c = &r->c[r->n];
    c->diff = calloc(t->ncols ? t->ncols : 1, sizeof(*c->diff));
    if (!c->diff)
        return zx_seterr(r->err, r->errlen, "out of memory");
    if (diff)
        memcpy(c->diff, diff, t->ncols * sizeof(*diff));
    c->key = *key;
    c->how = how;
    memset(key, 0, sizeof(*key));
    r->n++;
    return 0;
}

static int past_deadline(vf_run *r, uint64_t i)
{
    if (zx_mono_ms() < r->deadline_ms)
        return 0;
    return zx_seterr(r->err, r->errlen, "it did not finish before its deadline (rows compared "
                     "so far: %llu)", (unsigned long long)i) < 0;
}

/* Open a snapshot and wait for the mirror to reach it.  0 or -1. */
static int snapshot(vf_run *r)
{
    char lsn[32];
    if (vf_src_begin(r->src, lsn, r->err, r->errlen) < 0)
        return -1;
    int64_t until = zx_mono_ms() + ZX_VERIFY_CATCHUP_MS;
    if (until > r->deadline_ms)
        until = r->deadline_ms;
    int rc = vf_src_wait(r->src, r->o->slot, lsn, until, r->err, r->errlen);
    if (rc < 0)
        return -1;
    r->lagging = rc == 0;
    return 0;
}

/* Compare n source rows (and their keys) with the mirror; keep the keys
 * that differ; free the rows.  0 or -1. */
static int flush_rows(vf_run *r, const vf_table *t, vf_row *rows, vf_row *keys, size_t n,
                      vf_how *how, int *diffs)
{
    int rc = vf_mir_compare_many(r->mir, t, rows, keys, n, how, diffs, r->err, r->errlen);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && how[i] != VF_EQUAL &&
            cand_add(r, t, &keys[i], how[i], diffs + i * t->ncols) < 0)
            rc = -1;
        vf_row_free(&rows[i]);
        vf_row_free(&keys[i]);
    }
    return rc;
}

/* Which of the n mirror keys the source lacks: keep those (as extra);
 * free the keys.  0 or -1. */
static int flush_keys(vf_run *r, const vf_table *t, vf_row *mkeys, vf_row *canon, size_t n,
                      int *absent)
{
    memset(absent, 0, n * sizeof(*absent));
    int rc = n ? vf_src_absent(r->src, t, mkeys, n, absent, canon, r->err, r->errlen) : 0;
    for (size_t i = 0; i < n; i++) {
        if (absent[i] && rc == 0 && cand_add(r, t, &canon[i], VF_EXTRA, NULL) < 0)
            rc = -1;
        if (absent[i])
            vf_row_free(&canon[i]);
        vf_row_free(&mkeys[i]);
    }
    return rc;
}

/* Buffers of VF_BATCH rows for a key-by-key comparison. */
typedef struct vf_bufs {
    vf_row *a, *b;
    vf_how *how;
    int *diffs;
} vf_bufs;

/* Every source row of the range (lo, hi] (NULL: unbounded) looked up in
 * the mirror, then every mirror key of the range in the source, in the
 * current source snapshot, VF_BATCH at a time.  *seen gets the source
 * rows compared added.  0 or -1. */
static int compare_keys(vf_run *r, const vf_table *t, const vf_row *lo, const vf_row *hi,
                        vf_bufs *f, uint64_t *seen)
{
    vf_row *a = f->a, *b = f->b;
    size_t n = 0;
    int rc;
    if (vf_src_scan_range(r->src, t, lo, hi, r->err, r->errlen) < 0)
        return -1;
    while ((rc = vf_src_next(r->src, &a[n], r->err, r->errlen)) == 1) {
        if (vf_row_key(t, &a[n], &b[n]) < 0) {
            vf_row_free(&a[n]);
            rc = zx_seterr(r->err, r->errlen, "out of memory");
            break;
        }
        (*seen)++;
        if (++n == VF_BATCH) {
            rc = flush_rows(r, t, a, b, n, f->how, f->diffs);
            n = 0;
            if (rc < 0 || past_deadline(r, *seen)) {
                rc = -1;
                break;
            }
        }
    }
    if (rc == 0)
        rc = flush_rows(r, t, a, b, n, f->how, f->diffs);
    else
        for (size_t i = 0; i < n; i++) {
            vf_row_free(&a[i]);
            vf_row_free(&b[i]);
        }
    if (rc < 0)
        return -1;
    /* mirror rows whose key the source lacks (b: the source's texts) */
    int absent[VF_BATCH];
    uint64_t keys = 0;
    n = 0;
    if (vf_mir_scan_range(r->mir, t, lo, hi, r->err, r->errlen) < 0)
        return -1;
    while ((rc = vf_mir_next(r->mir, &a[n], r->err, r->errlen)) == 1) {
        keys++;
        if (++n == VF_BATCH) {
            rc = flush_keys(r, t, a, b, n, absent);
            n = 0;
            if (rc < 0 || past_deadline(r, keys)) {
                rc = -1;
                break;
            }
        }
    }
    if (rc == 0)
        rc = flush_keys(r, t, a, b, n, absent);
    else
        for (size_t i = 0; i < n; i++)
            vf_row_free(&a[i]);
    vf_mir_scan_end(r->mir);
    return rc;
}

/* The table by ranges of VF_RANGE rows in key order (Postgres workspace):
 * each range's count and hash computed on both servers, and only a range
 * that differs compared key by key (compare_keys).  The source's range
 * ends at its last key; the mirror's is every key above the previous
 * range's last key up to it (the last range: every key above), so the
 * mirror's ranges cover its whole key space.  *seen as compare_keys.
 * 0 or -1. */
static int compare_ranges(vf_run *r, const vf_table *t, vf_bufs *f, uint64_t *seen)
{
    vf_row lo = {0}, last = {0};
    int has_lo = 0, rc = 0;
    for (;;) {
        int64_t sn, mn;
        char sh[64], mh[64];
        if (vf_src_range(r->src, t, has_lo ? &lo : NULL, VF_RANGE, &sn, sh, &last, r->err,
                         r->errlen) < 0) {
            rc = -1;
            break;
        }
        int final = sn < VF_RANGE; /* fewer rows than asked: none above */
        const vf_row *hi = final ? NULL : &last;
        if (vf_mir_range(r->mir, t, has_lo ? &lo : NULL, hi, &mn, mh, r->err, r->errlen) < 0) {
            rc = -1;
            break;
        }
        r->ranges++;
        if (sn != mn || strcmp(sh, mh)) {
            r->ranges_differing++;
            if (compare_keys(r, t, has_lo ? &lo : NULL, hi, f, seen) < 0) {
                rc = -1;
                break;
            }
        } else {
            *seen += (uint64_t)sn;
        }
        if (final)
            break;
        if (past_deadline(r, *seen)) {
            rc = -1;
            break;
        }
        vf_row_free(&lo);
        lo = last;
        memset(&last, 0, sizeof(last));
        has_lo = 1;
    }
    vf_row_free(&lo);
    vf_row_free(&last);
    return rc;
}

/* Every source row compared with the mirror, and every mirror key looked
 * up in the source, in one source snapshot: by ranges on a Postgres
 * workspace (when vf_range_ok), key by key otherwise.  A SQLite mirror
 * stores values converted from the source's text (pg_values.h, fit.h),
 * which neither server can print as the source does, so it is compared
 * key by key.  Returns the rows compared, or -1. */
static int64_t first_pass(vf_run *r, const vf_table *t)
{
    int64_t rows = -1;
    uint64_t seen = 0;
    vf_bufs f = { calloc(VF_BATCH, sizeof(*f.a)), calloc(VF_BATCH, sizeof(*f.b)),
                  calloc(VF_BATCH, sizeof(*f.how)),
                  calloc((size_t)VF_BATCH * (t->ncols ? t->ncols : 1), sizeof(*f.diffs)) };
    if (!f.a || !f.b || !f.how || !f.diffs) {
        zx_seterr(r->err, r->errlen, "out of memory");
        goto out;
    }
    if (snapshot(r) < 0)
        goto out;
    int rc = vf_mir_is_pg(r->mir) && vf_range_ok(t) ? compare_ranges(r, t, &f, &seen)
                                                     : compare_keys(r, t, NULL, NULL, &f, &seen);
    if (rc == 0 && vf_src_end(r->src, r->err, r->errlen) == 0)
        rows = (int64_t)seen;
out:
    free(f.a);
    free(f.b);
    free(f.how);
    free(f.diffs);
    return rows;
}

/* Compare each kept key again in a new snapshot the mirror has reached;
 * drop the keys that are now equal.  Returns the keys left, or -1. */
static int64_t recheck(vf_run *r, const vf_table *t, int *diff)
{
    if (snapshot(r) < 0)
        return -1;
    size_t kept = 0;
    for (size_t i = 0; i < r->n; i++) {
        vf_cand *c = &r->c[i];
        vf_row row = {0};
        int has = vf_src_get(r->src, t, &c->key, &row, r->err, r->errlen);
        vf_how how;
        int rc = has < 0 ? -1
                 : vf_mir_compare(r->mir, t, has ? &row : NULL, &c->key, &how, diff, r->err,
                                  r->errlen);
        vf_row_free(&row);
        if (rc < 0 || past_deadline(r, i + 1)) {
            while (i < r->n) /* keep the keys not looked at: all are freed once */
                r->c[kept++] = r->c[i++];
            r->n = kept;
            return -1;
        }
        if (how == VF_EQUAL) {
            vf_row_free(&c->key);
            free(c->diff);
            continue;
        }
        c->how = how;
        memcpy(c->diff, diff, t->ncols * sizeof(*diff));
        r->c[kept++] = *c;
    }
    r->n = kept;
    if (vf_src_end(r->src, r->err, r->errlen) < 0)
        return -1;
    return (int64_t)kept;
}

/* The report of table t: {"table", "mirror", "compared", "differing",
 * "keys", "more", "settled", "note"?}; settled: keys that differed in the
 * first pass and were equal once the mirror had caught up. */
static json_t *table_report(vf_run *r, const vf_table *t, int64_t rows, uint64_t settled)
{
    json_t *keys = json_array();
    for (size_t i = 0; i < r->n && i < ZX_VERIFY_SHOW_KEYS; i++) {
        vf_cand *c = &r->c[i];
        json_t *k = json_object(), *cols = json_array();
        for (uint32_t j = 0; j < t->nkeys; j++)
            json_object_set_new(k, t->cols[t->keys[j]],
                                c->key.v[j] ? json_stringn(c->key.v[j], c->key.len[j])
                                            : json_null());
        for (uint32_t j = 0; j < t->ncols; j++)
            if (c->diff[j])
                json_array_append_new(cols, json_string(t->cols[j]));
        json_t *e = json_pack("{s:o, s:s}", "key", k, "how", vf_how_name(c->how));
        if (c->how == VF_DIFFER)
            json_object_set_new(e, "columns", cols);
        else
            json_decref(cols);
        json_array_append_new(keys, e);
    }
    char qual[300];
    snprintf(qual, sizeof(qual), "%s.%s", t->schema, t->name);
    uint64_t differing = r->n + r->more;
    size_t shown = r->n < ZX_VERIFY_SHOW_KEYS ? r->n : ZX_VERIFY_SHOW_KEYS;
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:o, s:I, s:I, s:I, s:I}", "table", qual,
                          "mirror", t->mirror, "compared", (json_int_t)rows, "differing",
                          (json_int_t)differing, "keys", keys, "more",
                          (json_int_t)(differing - shown), "settled", (json_int_t)settled,
                          "ranges", (json_int_t)r->ranges, "ranges_differing",
                          (json_int_t)r->ranges_differing);
    uint32_t absent = 0;
    for (uint32_t j = 0; j < t->ncols; j++)
        absent += !t->in_mirror[j];
    char note[400] = "";
    size_t nl = 0;
    if (r->lagging && differing)
        nl += (size_t)snprintf(note + nl, sizeof(note) - nl, "the mirror did not catch up with "
                               "the source within %d s: these keys may only be late. ",
                               ZX_VERIFY_CATCHUP_MS / 1000);
    if (r->more && nl < sizeof(note))
        nl += (size_t)snprintf(note + nl, sizeof(note) - nl, "more than %d keys differed: "
                               "only the first %d were checked again. ", ZX_VERIFY_MAX_KEYS,
                               ZX_VERIFY_MAX_KEYS);
    if (absent && nl < sizeof(note))
        snprintf(note + nl, sizeof(note) - nl, "%u source column(s) are not in the mirror and "
                 "were not compared.", absent);
    if (note[0])
        json_object_set_new(o, "note", json_string(note));
    return o;
}

/* The source table qual and its mirror into t, and diff (t->ncols
 * flags).  0 or -1. */
static int open_table(vf_run *r, const char *qual, const char *mirror, vf_table *t, int **diff)
{
    const char *dot = strchr(qual, '.');
    char schema[128];
    snprintf(schema, sizeof(schema), "%.*s", dot ? (int)(dot - qual) : 6,
             dot ? qual : "public");
    if (vf_src_table(r->src, schema, dot ? dot + 1 : qual, t, r->err, r->errlen) < 0)
        return -1;
    if (!(t->mirror = strdup(mirror)) || !(*diff = calloc(t->ncols, sizeof(**diff))))
        return zx_seterr(r->err, r->errlen, "out of memory");
    return vf_mir_table(r->mir, t, r->err, r->errlen);
}

/* The keys still differing, as the repair request's entry of table qual. */
static int add_request(vf_run *r, const vf_table *t, const char *qual)
{
    json_t *keys = json_array();
    for (size_t i = 0; keys && i < r->n; i++) {
        json_t *k = json_array();
        for (uint32_t j = 0; k && j < t->nkeys; j++)
            json_array_append_new(k, json_stringn(r->c[i].key.v[j] ? r->c[i].key.v[j] : "",
                                                  r->c[i].key.len[j]));
        if (!k || json_array_append_new(keys, k) < 0)
            break;
    }
    json_t *e = keys ? json_pack("{s:s, s:o}", "table", qual, "keys", keys) : NULL;
    if (!e || json_array_append_new(r->req, e) < 0)
        return zx_seterr(r->err, r->errlen, "out of memory");
    return 0;
}

/* Context of a failure in table qual. */
static void table_err(vf_run *r, const char *qual)
{
    char m[900];
    snprintf(m, sizeof(m), "%s", r->err);
    zx_seterr(r->err, r->errlen, "table %s: %s", qual, m);
}

/* Verify one table into *rep.  0 or -1. */
static int verify_table(vf_run *r, const char *qual, const char *mirror, json_t **rep)
{
    vf_table t = {0};
    int *diff = NULL;
    int rc = -1;
    if (open_table(r, qual, mirror, &t, &diff) < 0)
        goto out;
    int64_t rows = first_pass(r, &t);
    if (rows < 0)
        goto out;
    size_t first = r->n;
    for (int round = 0; round < ZX_VERIFY_ROUNDS && r->n; round++) {
        size_t before = r->n;
        int64_t left = recheck(r, &t, diff);
        if (left < 0)
            goto out;
        if ((size_t)left == before && !r->lagging)
            break; /* the same keys differ in a snapshot the mirror reached */
    }
    if (r->repair && r->n && add_request(r, &t, qual) < 0)
        goto out;
    *rep = table_report(r, &t, rows, first - r->n);
    rc = *rep ? 0 : zx_seterr(r->err, r->errlen, "out of memory");
out:
    if (rc < 0)
        table_err(r, qual);
    cands_free(r);
    free(diff);
    vf_table_free(&t);
    return rc;
}

/* After the worker took the repair request: compare the keys of table
 * qual again until they are all equal or a catch-up time has passed.
 * Returns the keys now equal, or -1. */
static int64_t repair_check(vf_run *r, const char *qual, const char *mirror, json_t *keys)
{
    vf_table t = {0};
    int *diff = NULL;
    int64_t rc = -1;
    if (open_table(r, qual, mirror, &t, &diff) < 0)
        goto out;
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k) {
        vf_row key;
        if (vf_row_init(&key, t.nkeys) < 0)
            goto nomem;
        for (uint32_t j = 0; j < t.nkeys; j++) {
            const char *v = json_string_value(json_array_get(k, j));
            if (vf_row_set(&key, j, v, v ? strlen(v) : 0) < 0) {
                vf_row_free(&key);
                goto nomem;
            }
        }
        if (cand_add(r, &t, &key, VF_DIFFER, NULL) < 0)
            goto out;
    }
    size_t total = r->n;
    int64_t until = zx_mono_ms() + ZX_VERIFY_CATCHUP_MS;
    if (until > r->deadline_ms)
        until = r->deadline_ms;
    for (;;) {
        if (recheck(r, &t, diff) < 0)
            goto out;
        if (!r->n || zx_mono_ms() >= until)
            break;
        struct timespec ts = { 0, 200 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    rc = (int64_t)(total - r->n);
    goto out;
nomem:
    zx_seterr(r->err, r->errlen, "out of memory");
out:
    if (rc < 0)
        table_err(r, qual);
    cands_free(r);
    free(diff);
    vf_table_free(&t);
    return rc;
}

/* Send the repair request and check its keys; sets "repaired" in each
 * table's report.  Returns the keys repaired, or -1. */
static int64_t repair(vf_run *r, const zx_conf *c, const zx_conf_pipeline *pc, json_t *tables)
{
    json_t *req = json_pack("{s:O}", "tables", r->req);
    int64_t until = zx_mono_ms() + ZX_VERIFY_CATCHUP_MS;
    int rc = req ? vf_repair_request(c->data_dir, pc->name, req,
                                     until < r->deadline_ms ? until : r->deadline_ms, r->err,
                                     r->errlen)
                 : zx_seterr(r->err, r->errlen, "out of memory");
    json_decref(req);
    if (rc < 0)
        return -1;
    int64_t total = 0;
    size_t i, j;
    json_t *e, *rep;
    json_array_foreach(r->req, i, e) {
        const char *qual = json_string_value(json_object_get(e, "table"));
        for (size_t k = 0; k < r->o->ntables; k++) {
            if (strcmp(r->o->tables[k], qual))
                continue;
            int64_t n = repair_check(r, qual, pc->mirrors[k], json_object_get(e, "keys"));
            if (n < 0)
                return -1;
            total += n;
            json_array_foreach(tables, j, rep)
                if (!strcmp(json_string_value(json_object_get(rep, "table")), qual))
                    json_object_set_new(rep, "repaired", json_integer(n));
        }
    }
    return total;
}

/* Does table filter f name source table qual ("schema.table") or its
 * mirror? */
static int wanted(const char *f, const char *qual, const char *mirror)
{
    const char *dot = strchr(qual, '.');
    return !f || !strcmp(f, qual) || (dot && !strcmp(f, dot + 1)) || !strcmp(f, mirror);
}

int zx_verify_run(const zx_conf *c, const zx_conf_pipeline *pc, const char *table,
                  unsigned flags, int64_t deadline_ms, json_t **out, char *err, size_t errlen)
{
    char e[1024] = "";
    const zx_postgres_opts *po = zx_postgres_opts_of(pc);
    vf_run r = { .pc = pc, .o = po, .deadline_ms = deadline_ms, .err = e, .errlen = sizeof(e),
                 .repair = !!(flags & ZX_VERIFY_REPAIR), .req = json_array() };
    json_t *tables = json_array();
    int64_t compared = 0, differing = 0, repaired = 0;
    int rc = -1;
    *out = NULL;
    if (!zx_postgres_is(pc) || !pc->conn || !po->slot ||
        po->ntables != pc->nmirrors) {
        zx_seterr(e, sizeof(e), "only a `source: %s` pipeline has a mirror to verify",
                  ZX_POSTGRES_NAME);
        goto out;
    }
    size_t nwanted = 0;
    for (size_t i = 0; i < po->ntables; i++)
        nwanted += wanted(table, po->tables[i], pc->mirrors[i]);
    if (!nwanted) {
        zx_seterr(e, sizeof(e), "table %s is not one of the pipeline's tables", table);
        goto out;
    }
    if (!(r.src = vf_src_open(pc->conn->dsn, pc->conn->dsn_shown, e, sizeof(e))) ||
        !(r.mir = vf_mir_open(c, e, sizeof(e))))
        goto out;
    int64_t until = zx_mono_ms() + ZX_VERIFY_CATCHUP_MS;
    if (vf_src_streaming(r.src, po->slot, until < deadline_ms ? until : deadline_ms, e,
                         sizeof(e)) < 0)
        goto out;
    for (size_t i = 0; i < po->ntables; i++) {
        if (!wanted(table, po->tables[i], pc->mirrors[i]))
            continue;
        json_t *rep = NULL;
        if (verify_table(&r, po->tables[i], pc->mirrors[i], &rep) < 0)
            goto out;
        compared += json_integer_value(json_object_get(rep, "compared"));
        differing += json_integer_value(json_object_get(rep, "differing"));
        json_array_append_new(tables, rep);
    }
    if (r.repair && json_array_size(r.req) && (repaired = repair(&r, c, pc, tables)) < 0)
        goto out;
    char at[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
    *out = json_pack("{s:b, s:s, s:s, s:I, s:I, s:O}", "ok", 1, "name", pc->name, "at", at,
                     "compared", (json_int_t)compared, "differing", (json_int_t)differing,
                     "tables", tables);
    if (*out && r.repair)
        json_object_set_new(*out, "repaired", json_integer(repaired));
    rc = *out ? 0 : zx_seterr(e, sizeof(e), "out of memory");
out:
    if (rc < 0)
        zx_seterr(err, errlen, "pipeline %s: verify: %s", pc->name, e);
    json_decref(tables);
    json_decref(r.req);
    vf_src_close(r.src);
    vf_mir_close(r.mir);
    return rc;
}
