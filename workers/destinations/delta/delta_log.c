/*
 * delta_log.c — a Delta table's state from its log, and its schema
 * (delta_log.h).
 */
#include "workers/destinations/delta/delta_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "workers/destinations/delta/delta_dv.h"

/* The protocol zx writes and reads: readers 1, writers 1 and 2 (no table
 * features), or reader 3 and writer 7 with only the features below.  A
 * table needing more is refused. */
#define COMMIT_MAX ((size_t)64 << 20)
static const char *const reader_features[] = {"deletionVectors", "timestampNtz",
                                               "variantType", NULL};
/* invariants: only while the schema holds none (zx does not check them);
 * timestampNtz and variantType: zx writes neither type (such a column is
 * null in zx's files, or a type change it refuses) */
static const char *const writer_features[] = {"deletionVectors", "appendOnly", "invariants",
                                               "timestampNtz", "variantType", NULL};

void zx_delta_commit_name(int64_t v, char out[64])
{
    snprintf(out, 64, "%s/%020lld.json", ZX_DELTA_LOG_DIR, (long long)v);
}

static void cols_free(zx_delta_table *t)
{
    for (size_t i = 0; i < t->ncols; i++) {
        free(t->cols[i].name);
        free(t->cols[i].type);
    }
    free(t->cols);
    t->cols = NULL;
    t->ncols = 0;
}

static void file_free(zx_delta_file *f)
{
    free(f->path);
    free(f->add_json);
    free(f->dv_id);
    free(f->dv_file);
}

/* A deletionVector descriptor (PROTOCOL.md "Deletion Vector Descriptor
 * Schema"): its uniqueId into *id and, for storageType 'u', its file's
 * name relative to the root into *file (both malloc'd; NULL: no
 * descriptor, or no file).  0 or -1 (malformed, out of memory). */
static int dv_parse(const json_t *dv, char **id, char **file, const char *where, char *err,
                    size_t errlen)
{
    *id = *file = NULL;
    if (!dv || json_is_null(dv))
        return 0;
    const char *ty = json_string_value(json_object_get(dv, "storageType"));
    const char *pd = json_string_value(json_object_get(dv, "pathOrInlineDv"));
    json_t *off = json_object_get(dv, "offset");
    json_t *sz = json_object_get(dv, "sizeInBytes"), *card = json_object_get(dv, "cardinality");
    if (!ty || strlen(ty) != 1 || !strchr("uip", ty[0]) || !pd || !pd[0] ||
        (off && !json_is_null(off) && (!json_is_integer(off) || json_integer_value(off) < 0)) ||
        !json_is_integer(sz) || json_integer_value(sz) < 0 || !json_is_integer(card) ||
        json_integer_value(card) < 0)
        return zx_seterr(err, errlen, "%s: a malformed deletionVector (storageType, "
                         "pathOrInlineDv, offset, sizeInBytes and cardinality are required "
                         "as PROTOCOL.md says)", where);
    zx_buf b = {0};
    if (json_is_integer(off) ? zx_buf_printf(&b, "%s%s@%lld", ty, pd,
                                             (long long)json_integer_value(off)) < 0
                             : zx_buf_printf(&b, "%s%s", ty, pd) < 0) {
        zx_buf_free(&b);
        return zx_seterr(err, errlen, "%s: out of memory", where);
    }
    *id = b.p;
    if (ty[0] == 'u') {
        char name[200];
        if (zx_dv_uuid_name(pd, name, sizeof(name)) < 0) {
            free(*id);
            *id = NULL;
            return zx_seterr(err, errlen, "%s: a deletionVector of storageType 'u' whose "
                             "pathOrInlineDv '%.60s' is not a prefix and a Z85 UUID", where,
                             pd);
        }
        if (!(*file = strdup(name))) {
            free(*id);
            *id = NULL;
            return zx_seterr(err, errlen, "%s: out of memory", where);
        }
    }
    return 0;
}

int zx_delta_dv_on(const zx_delta_table *t)
{
    if (t->reader_version != 3 || t->writer_version != 7 || !t->protocol)
        return 0;
    int rf = 0, wf = 0;
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(t->protocol, "readerFeatures"), i, x)
        rf |= json_is_string(x) && !strcmp(json_string_value(x), "deletionVectors");
    json_array_foreach(json_object_get(t->protocol, "writerFeatures"), i, x)
        wf |= json_is_string(x) && !strcmp(json_string_value(x), "deletionVectors");
    json_t *cf = t->metadata ? json_object_get(t->metadata, "configuration") : NULL;
    const char *on = json_string_value(json_object_get(cf, "delta.enableDeletionVectors"));
    return rf && wf && on && !strcasecmp(on, "true");
}

void zx_delta_table_free(zx_delta_table *t)
{
    if (!t)
        return;
    cols_free(t);
    for (size_t i = 0; i < t->nfiles; i++)
        file_free(&t->files[i]);
    free(t->files);
    json_decref(t->protocol);
    json_decref(t->metadata);
    json_decref(t->txns);
    json_decref(t->tombstones);
    free(t->commit_ms);
    memset(t, 0, sizeof(*t));
    t->version = -1;
}

int64_t zx_delta_txn(const zx_delta_table *t, const char *app)
{
    json_t *v = t->txns ? json_object_get(t->txns, app) : NULL;
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decode an add/remove path (PROTOCOL.md: paths are URIs). */
static char *path_decode(const char *s)
{
    size_t n = strlen(s);
    char *o = malloc(n + 1), *p = o;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int h1, h2;
        if (s[i] == '%' && i + 2 < n && (h1 = hexval(s[i + 1])) >= 0 &&
            (h2 = hexval(s[i + 2])) >= 0) {
            *p++ = (char)(h1 * 16 + h2);
            i += 2;
        } else {
            *p++ = s[i];
        }
    }
    *p = 0;
    return o;
}

static int schema_parse(zx_delta_table *t, const char *schema, const char *where, char *err,
                        size_t errlen)
{
    json_error_t je;
    json_t *s = json_loads(schema, 0, &je);
    json_t *fields = s ? json_object_get(s, "fields") : NULL;
    if (!json_is_array(fields)) {
        json_decref(s);
        return zx_seterr(err, errlen, "%s: metaData.schemaString is not a struct schema",
                         where);
    }
    cols_free(t);
    size_t n = json_array_size(fields);
    t->cols = calloc(n ? n : 1, sizeof(*t->cols));
    if (!t->cols) {
        json_decref(s);
        return zx_seterr(err, errlen, "%s: out of memory", where);
    }
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(fields, i);
        const char *name = json_string_value(json_object_get(f, "name"));
        json_t *ty = json_object_get(f, "type");
        if (!name || !ty) {
            json_decref(s);
            return zx_seterr(err, errlen, "%s: schema field %zu has no name or type", where, i);
        }
        char *tys = json_is_string(ty) ? strdup(json_string_value(ty))
                                       : json_dumps(ty, JSON_COMPACT);
        t->cols[i].name = strdup(name);
        t->cols[i].type = tys;
        t->cols[i].nullable = !json_is_false(json_object_get(f, "nullable"));
        t->ncols = i + 1;
        if (!t->cols[i].name || !tys) {
            json_decref(s);
            return zx_seterr(err, errlen, "%s: out of memory", where);
        }
    }
    json_decref(s);
    return 0;
}

static int add_file(zx_delta_table *t, json_t *a, const char *where, char *err, size_t errlen)
{
    const char *path = json_string_value(json_object_get(a, "path"));
    if (!path || !path[0])
        return zx_seterr(err, errlen, "%s: an add action without a path", where);
    char *p = path_decode(path);
    if (!p)
        return zx_seterr(err, errlen, "%s: out of memory", where);
    /* an add of a path already live replaces it (PROTOCOL.md) */
    for (size_t i = 0; i < t->nfiles; i++)
        if (!strcmp(t->files[i].path, p)) {
            file_free(&t->files[i]);
            memmove(&t->files[i], &t->files[i + 1], (t->nfiles - i - 1) * sizeof(*t->files));
            t->nfiles--;
            break;
        }
    if (t->nfiles == t->cap) {
        size_t c = t->cap ? t->cap * 2 : 64;
        zx_delta_file *nf = realloc(t->files, c * sizeof(*nf));
        if (!nf) {
            free(p);
            return zx_seterr(err, errlen, "%s: out of memory", where);
        }
        t->files = nf;
        t->cap = c;
    }
    zx_delta_file *f = &t->files[t->nfiles];
    memset(f, 0, sizeof(*f));
    f->path = p;
    f->size = json_integer_value(json_object_get(a, "size"));
    f->records = -1;
    const char *st = json_string_value(json_object_get(a, "stats"));
    if (st) {
        json_t *sj = json_loads(st, 0, NULL);
        json_t *nr = sj ? json_object_get(sj, "numRecords") : NULL;
        if (json_is_integer(nr))
            f->records = json_integer_value(nr);
        json_decref(sj);
    }
    const char *zr = json_string_value(json_object_get(json_object_get(a, "tags"), "zx.rows"));
    f->zx = zr && (!strcmp(zr, "1") || !strcmp(zr, "keys"));
    if (dv_parse(json_object_get(a, "deletionVector"), &f->dv_id, &f->dv_file, where, err,
                 errlen) < 0) {
        free(p);
        return -1;
    }
    if (!(f->add_json = json_dumps(a, JSON_COMPACT))) {
        file_free(f);
        return zx_seterr(err, errlen, "%s: out of memory", where);
    }
    t->nfiles++;
    return 0;
}

/* Remove the live file of path whose deletion vector is dv_id (NULL:
 * none): a logical file is its path and its deletion vector
 * (PROTOCOL.md), so the remove of a file's old deletion vector leaves the
 * add of its new one alone, in whatever order a commit lists them. */
static void remove_file(zx_delta_table *t, const char *path, const char *dv_id)
{
    char *p = path_decode(path);
    if (!p)
        return;
    for (size_t i = 0; i < t->nfiles; i++)
        if (!strcmp(t->files[i].path, p) &&
            (dv_id ? t->files[i].dv_id && !strcmp(t->files[i].dv_id, dv_id)
                   : !t->files[i].dv_id)) {
            file_free(&t->files[i]);
            memmove(&t->files[i], &t->files[i + 1], (t->nfiles - i - 1) * sizeof(*t->files));
            t->nfiles--;
            break;
        }
    free(p);
}

/* 1 when fs is an array of names all in known (NULL-ended). */
static int features_ok(const json_t *fs, const char *const *known)
{
    if (!json_is_array(fs))
        return 0;
    size_t i;
    json_t *x;
    json_array_foreach(fs, i, x) {
        const char *n = json_string_value(x);
        int k = 0;
        while (n && known[k] && strcmp(known[k], n))
            k++;
        if (!n || !known[k])
            return 0;
    }
    return 1;
}

static int apply_protocol(zx_delta_table *t, json_t *a, const char *where, char *err,
                          size_t errlen)
{
    json_t *rv = json_object_get(a, "minReaderVersion"), *wv = json_object_get(a, "minWriterVersion");
    if (!json_is_integer(rv) || !json_is_integer(wv))
        return zx_seterr(err, errlen, "%s: a protocol action without its versions", where);
    t->reader_version = (int)json_integer_value(rv);
    t->writer_version = (int)json_integer_value(wv);
    json_decref(t->protocol);
    t->protocol = json_incref(a);
    json_t *rf = json_object_get(a, "readerFeatures"), *wf = json_object_get(a, "writerFeatures");
    int ok = (t->reader_version <= 1 || (t->reader_version == 3 && features_ok(rf,
                                                                  reader_features))) &&
             (t->writer_version <= 2 || (t->writer_version == 7 && features_ok(wf,
                                                                  writer_features)));
    if (!ok) {
        char *rfs = rf ? json_dumps(rf, JSON_COMPACT) : NULL, *wfs = wf ? json_dumps(wf, JSON_COMPACT) : NULL;
        zx_seterr(err, errlen, "%s: the table needs Delta reader version %d and writer "
                  "version %d%s%s%s%s; zx reads and writes tables of reader version 1 and "
                  "writer version 2, or 3 and 7 with the features deletionVectors, "
                  "appendOnly, invariants, timestampNtz and variantType only: write this "
                  "sync to a new table (another path)", where,
                  t->reader_version, t->writer_version, rfs ? ", reader features " : "",
                  rfs ? rfs : "", wfs ? ", writer features " : "", wfs ? wfs : "");
        free(rfs);
        free(wfs);
        return -1;
    }
    return 0;
}

int zx_delta_apply(zx_delta_table *t, int64_t version, const char *text, size_t n,
                   const char *where, char *err, size_t errlen)
{
    char at[600];
    snprintf(at, sizeof(at), "%s: version %lld", where, (long long)version);
    if ((!t->txns && !(t->txns = json_object())) ||
        (!t->tombstones && !(t->tombstones = json_object())))
        return zx_seterr(err, errlen, "%s: out of memory", at);
    int64_t commit_ts = 0;
    int state_times = 0;
    size_t off = 0;
    int line = 0;
    while (off < n) {
        const char *nl = memchr(text + off, '\n', n - off);
        size_t len = nl ? (size_t)(nl - (text + off)) : n - off;
        line++;
        if (len == 0 || (len == 1 && text[off] == '\r')) {
            off += len + 1;
            continue;
        }
        json_error_t je;
        json_t *o = json_loadb(text + off, len, 0, &je);
        off += len + 1;
        if (!json_is_object(o)) {
            json_decref(o);
            return zx_seterr(err, errlen, "%s: line %d is not a JSON object: %s", at, line,
                             je.text);
        }
        int rc = 0;
        json_t *a;
        if ((a = json_object_get(o, "protocol")))
            rc = apply_protocol(t, a, at, err, errlen);
        else if ((a = json_object_get(o, "metaData"))) {
            const char *s = json_string_value(json_object_get(a, "schemaString"));
            rc = s ? schema_parse(t, s, at, err, errlen)
                   : zx_seterr(err, errlen, "%s: a metaData action without schemaString", at);
            json_decref(t->metadata);
            t->metadata = json_incref(a);
        } else if ((a = json_object_get(o, "add")))
            rc = add_file(t, a, at, err, errlen);
        else if ((a = json_object_get(o, "remove"))) {
            const char *p = json_string_value(json_object_get(a, "path"));
            char *dv_id = NULL, *dv_file = NULL;
            rc = dv_parse(json_object_get(a, "deletionVector"), &dv_id, &dv_file, at, err,
                          errlen);
            if (p && rc == 0)
                remove_file(t, p, dv_id);
            /* zx's files to vacuum once the retention is over: its data
             * files, and its deletion vector files ("zx/deletion_vector_*",
             * also in a state copy's tombstone lines) */
            json_t *ts = json_integer(json_integer_value(json_object_get(a,
                                                                         "deletionTimestamp")));
            const char *base = p ? strrchr(p, '/') : NULL;
            base = base ? base + 1 : p;
            char *dp = p && (!strncmp(base, "zx-", 3) ||
                             !strncmp(p, ZX_DELTA_DV_PREFIX "/deletion_vector_", 19))
                       ? path_decode(p) : NULL;
            if (dp && ts)
                json_object_set(t->tombstones, dp, ts);
            if (dv_file && !strncmp(dv_file, ZX_DELTA_DV_PREFIX "/", 3) && ts)
                json_object_set(t->tombstones, dv_file, ts);
            json_decref(ts);
            free(dp);
            free(dv_id);
            free(dv_file);
        } else if ((a = json_object_get(o, "zxCommitTimes"))) {
            /* zx's state copy: the times of the versions before it */
            json_t *ms = json_object_get(a, "ms");
            int64_t first = json_integer_value(json_object_get(a, "first"));
            size_t n = json_array_size(ms);
            if (json_is_array(ms) && first >= 0 && first <= version && n <= (1u << 24)) {
                int64_t *cm = calloc(n ? n : 1, sizeof(*cm));
                if (!cm) {
                    json_decref(o);
                    return zx_seterr(err, errlen, "%s: out of memory", at);
                }
                for (size_t k = 0; k < n; k++)
                    cm[k] = json_integer_value(json_array_get(ms, k));
                free(t->commit_ms);
                t->commit_ms = cm;
                t->ncommit_ms = n;
                t->first = first;
                state_times = 1;
            }
        } else if ((a = json_object_get(o, "commitInfo"))) {
            json_t *ts = json_object_get(a, "timestamp");
            if (json_is_integer(ts))
                commit_ts = json_integer_value(ts);
        } else if ((a = json_object_get(o, "txn"))) {
            const char *app = json_string_value(json_object_get(a, "appId"));
            json_t *v = json_object_get(a, "version");
            if (app && json_is_integer(v))
                json_object_set_new(t->txns, app, json_integer(json_integer_value(v)));
        }
        json_decref(o);
        if (rc < 0)
            return -1;
    }
    if (!state_times && (t->version < 0 || t->ncommit_ms == 0))
        t->first = version;
    if (!state_times && version >= t->first && (uint64_t)(version - t->first) < (1u << 24)) {
        size_t i = (size_t)(version - t->first);
        if (i >= t->ncommit_ms) {
            int64_t *n = realloc(t->commit_ms, (i + 1) * sizeof(*n));
            if (!n)
                return zx_seterr(err, errlen, "%s: out of memory", at);
            for (size_t k = t->ncommit_ms; k <= i; k++)
                n[k] = 0;
            t->commit_ms = n;
            t->ncommit_ms = i + 1;
        }
        t->commit_ms[i] = commit_ts;
    }
    t->version = version;
    return 0;
}

void zx_delta_state_name(int64_t v, char out[80])
{
    snprintf(out, 80, "_zx/delta-state-%020lld.json", (long long)v);
}

char *zx_delta_state_text(const zx_delta_table *t, size_t *len)
{
    zx_buf b = {0};
    int rc = 0;
    json_t *o;
    if (t->protocol) {
        o = json_pack("{s:O}", "protocol", t->protocol);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        rc |= !s || zx_buf_printf(&b, "%s\n", s) < 0;
        free(s);
        json_decref(o);
    }
    if (t->metadata) {
        o = json_pack("{s:O}", "metaData", t->metadata);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        rc |= !s || zx_buf_printf(&b, "%s\n", s) < 0;
        free(s);
        json_decref(o);
    }
    const char *app;
    json_t *v;
    json_object_foreach(t->txns, app, v) {
        o = json_pack("{s:{s:s, s:O}}", "txn", "appId", app, "version", v);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        rc |= !s || zx_buf_printf(&b, "%s\n", s) < 0;
        free(s);
        json_decref(o);
    }
    for (size_t i = 0; i < t->nfiles; i++)
        rc |= zx_buf_printf(&b, "{\"add\":%s}\n", t->files[i].add_json) < 0;
    /* zx's own lines (Delta readers never read this file): the removed
     * files still to vacuum, and when each version was committed, so that
     * retention goes on from a checkpoint */
    const char *path;
    json_t *ts;
    json_object_foreach(t->tombstones, path, ts) {
        o = json_pack("{s:{s:s, s:O, s:b}}", "remove", "path", path, "deletionTimestamp", ts,
                      "dataChange", 0);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        rc |= !s || zx_buf_printf(&b, "%s\n", s) < 0;
        free(s);
        json_decref(o);
    }
    json_t *ms = json_array();
    for (size_t i = 0; ms && i < t->ncommit_ms; i++)
        json_array_append_new(ms, json_integer(t->commit_ms[i]));
    o = ms ? json_pack("{s:{s:I, s:o}}", "zxCommitTimes", "first", (json_int_t)t->first, "ms",
                       ms) : NULL;
    char *cs = o ? json_dumps(o, JSON_COMPACT) : NULL;
    rc |= !cs || zx_buf_printf(&b, "%s\n", cs) < 0;
    free(cs);
    json_decref(o);
    if (rc || zx_buf_put(&b, "", 1) < 0) {
        zx_buf_free(&b);
        return NULL;
    }
    *len = b.len - 1;
    return b.p;
}

/* Parse "%020lld.json" names: 1 with *v, else 0. */
static int commit_version(const char *name, int64_t *v)
{
    size_t n = strlen(name);
    if (n != 25 || strcmp(name + 20, ".json"))
        return 0;
    int64_t x = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9' || x > (INT64_MAX - 9) / 10)
            return 0;
        x = x * 10 + (name[i] - '0');
    }
    *v = x;
    return 1;
}

int zx_delta_read(zx_lake *lake, zx_delta_table *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    t->version = -1;
    char **names = NULL;
    size_t n = 0;
    char where[1100];
    snprintf(where, sizeof(where), "delta %s", zx_lake_root(lake));
    if (zx_lake_list(lake, ZX_DELTA_LOG_DIR, &names, &n, err, errlen) < 0)
        return -1;
    int64_t first = -1, last = -1, v, ckpt[64];
    int nckpt = 0, checkpoint = 0;
    for (size_t i = 0; i < n; i++) {
        if (commit_version(names[i], &v)) {
            if (first < 0 || v < first)
                first = v;
            if (v > last)
                last = v;
        } else if (strstr(names[i], ".checkpoint")) {
            checkpoint = 1;
            int64_t cv = 0;
            int digits = 0;
            for (const char *c = names[i]; *c >= '0' && *c <= '9' && digits < 20; c++, digits++)
                if (cv <= (INT64_MAX - 9) / 10)
                    cv = cv * 10 + (*c - '0');
            if (digits == 20 && names[i][20] == '.') {
                if (nckpt == 64) {        /* names come sorted: keep the latest */
                    memmove(ckpt, ckpt + 1, 63 * sizeof(*ckpt));
                    nckpt--;
                }
                ckpt[nckpt++] = cv;
            }
        }
    }
    zx_lake_names_free(names, n);
    if (last < 0)
        return 0;
    zx_buf b = {0};
    /* the latest checkpoint whose state zx keeps, with every commit after it */
    int64_t from = -1;
    for (int k = 0; k < nckpt; k++) {
        if (ckpt[k] > last || ckpt[k] < first - 1 || ckpt[k] <= from)
            continue;
        char sn[80];
        zx_delta_state_name(ckpt[k], sn);
        int rc = zx_lake_get(lake, sn, COMMIT_MAX * 4, &b, err, errlen);
        if (rc < 0) {
            zx_buf_free(&b);
            return -1;
        }
        if (rc == 0) {
            zx_delta_table_free(t);
            if (zx_delta_apply(t, ckpt[k], b.p, b.len, where, err, errlen) < 0) {
                zx_buf_free(&b);
                return -1;
            }
            from = ckpt[k];
        }
    }
    if (from < 0 && first != 0) {
        zx_buf_free(&b);
        return zx_seterr(err, errlen, "%s: the log starts at version %lld%s: zx reads a "
                         "table's log from version 0, or from a checkpoint it wrote itself, "
                         "and cannot read this one; write this sync to a new table (another "
                         "path)", where, (long long)first, checkpoint
                         ? " (earlier ones are in a checkpoint)" : "");
    }
    for (v = from + 1; v <= last; v++) {
        char name[64];
        zx_delta_commit_name(v, name);
        int rc = zx_lake_get(lake, name, COMMIT_MAX, &b, err, errlen);
        if (rc == ZX_LAKE_NOT_FOUND)
            rc = zx_seterr(err, errlen, "%s: version %lld of the log is missing (%s) while "
                           "%lld exists", where, (long long)v, name, (long long)last);
        if (rc == 0)
            rc = zx_delta_apply(t, v, b.p, b.len, where, err, errlen);
        if (rc < 0) {
            zx_buf_free(&b);
            return -1;
        }
    }
    zx_buf_free(&b);
    if (!t->metadata || !t->protocol)
        return zx_seterr(err, errlen, "%s: the log has no %s action", where,
                         t->metadata ? "protocol" : "metaData");
    const char *sch = json_string_value(json_object_get(t->metadata, "schemaString"));
    if (sch && strstr(sch, "delta.invariants"))
        return zx_seterr(err, errlen, "%s: the table's schema has column invariants "
                         "(delta.invariants), which zx does not check: write this sync to a "
                         "new table (another path)", where);
    return 0;
}

const char *zx_delta_type_of(const zx_dcol *c, char buf[32])
{
    switch (c->type) {
    case ZX_DT_INT64: return "long";
    case ZX_DT_DOUBLE: return "double";
    case ZX_DT_BOOL: return "boolean";
    case ZX_DT_TIMESTAMP: return "timestamp";
    case ZX_DT_DATE: return "date";
    case ZX_DT_DECIMAL:
        snprintf(buf, 32, "decimal(%d,%d)", c->precision, c->scale);
        return buf;
    case ZX_DT_BYTES: return "binary";
    default: return "string";
    }
}

char *zx_delta_schema_merge(const zx_delta_table *t, const zx_dcol *cols, size_t ncols,
                            size_t *added, const char *where, char *err, size_t errlen)
{
    *added = 0;
    json_t *fields = json_array();
    json_t *s = json_pack("{s:s, s:o}", "type", "struct", "fields", fields);
    if (!s) {
        zx_seterr(err, errlen, "%s: out of memory", where);
        return NULL;
    }
    for (size_t i = 0; i < t->ncols; i++) {
        json_t *ty = json_loads(t->cols[i].type, JSON_DECODE_ANY, NULL);
        if (!ty || !json_is_object(ty)) {
            json_decref(ty);
            ty = json_string(t->cols[i].type);
        }
        json_array_append_new(fields, json_pack("{s:s, s:o, s:b, s:{}}", "name",
                                                t->cols[i].name, "type", ty, "nullable",
                                                t->cols[i].nullable, "metadata"));
    }
    for (size_t i = 0; i < ncols; i++) {
        char tb[32];
        const char *ty = zx_delta_type_of(&cols[i], tb);
        size_t k;
        for (k = 0; k < t->ncols && strcmp(t->cols[k].name, cols[i].name); k++)
            ;
        if (k < t->ncols) {
            if (strcmp(t->cols[k].type, ty)) {
                zx_seterr(err, errlen, "%s: column %s is %s in the table but the query now "
                          "gives %s (%s): Delta tables written by zx do not change a column's "
                          "type; cast it in the query to %s, or write to a new table",
                          where, cols[i].name, t->cols[k].type, ty,
                          zx_dtype_name(cols[i].type), t->cols[k].type);
                json_decref(s);
                return NULL;
            }
            continue;
        }
        json_array_append_new(fields, json_pack("{s:s, s:s, s:b, s:{}}", "name", cols[i].name,
                                                "type", ty, "nullable", 1, "metadata"));
        (*added)++;
    }
    char *out = json_dumps(s, JSON_COMPACT);
    json_decref(s);
    if (!out)
        zx_seterr(err, errlen, "%s: out of memory", where);
    return out;
}
