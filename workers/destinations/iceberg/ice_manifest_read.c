/*
 * ice_manifest_read.c — Iceberg v2 manifests and manifest lists read from
 * Avro container files any writer made (ice_manifest.h): fields matched
 * by field id, so other engines' extra fields are skipped and the ones zx
 * knows carried forward.  Everything read is owned by the list or
 * manifest it came from.
 *
 * It must never do I/O, or trust a count or a length before the Avro
 * reader (formats/avro_read.h) has checked it against the bytes.
 */
#include "workers/destinations/iceberg/ice_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading a manifest list ---------------------------------------------- */

/* Every allocation what was read points to, freed together. */
typedef struct arena {
    void **owned;
    size_t nowned, capowned;
} arena;

static void arena_free(arena *l)
{
    for (size_t i = 0; i < l->nowned; i++)
        free(l->owned[i]);
    free(l->owned);
}

struct zx_ice_mlist {
    zx_ice_mfile *files;
    size_t n, cap;
    arena a;
};

void zx_ice_mlist_free(zx_ice_mlist *l)
{
    if (!l)
        return;
    arena_free(&l->a);
    free(l->files);
    free(l);
}

const zx_ice_mfile *zx_ice_mlist_files(const zx_ice_mlist *l, size_t *n)
{
    *n = l->n;
    return l->files;
}

/* A copy of p[0..len) (p NULL: zeros) with a NUL after it, owned by l (a
 * non-NULL pointer even when len is 0). */
static void *own(arena *l, const void *p, size_t len)
{
    char *c = malloc(len + 1);
    if (!c || zx_grow(&l->owned, l->nowned, &l->capowned, sizeof(*l->owned)) < 0) {
        free(c);
        return NULL;
    }
    if (len && p)
        memcpy(c, p, len);
    else if (len)
        memset(c, 0, len);
    c[len] = '\0';
    l->owned[l->nowned++] = c;
    return c;
}

static int64_t get_l(const zx_avro_value *rec, int64_t id, int64_t dflt)
{
    const zx_avro_value *v = zx_avro_field(rec, id);
    if (zx_avro_is_null(v))
        return dflt;
    return v->l;
}

/* An optional bytes field copied into l: 0 (*p NULL when null), -1 oom. */
static int get_b(arena *l, const zx_avro_value *rec, int64_t id, const uint8_t **p,
                 size_t *len)
{
    const zx_avro_value *v = zx_avro_field(rec, id);
    *p = NULL;
    *len = 0;
    if (zx_avro_is_null(v) || !v->p)
        return 0;
    if (!(*p = own(l, v->p, v->len)))
        return -1;
    *len = v->len;
    return 0;
}

int zx_ice_mlist_read(const void *p, size_t n, zx_ice_mlist **out, char *err, size_t errlen)
{
    *out = NULL;
    zx_avro_file *f = NULL;
    zx_ice_mlist *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "iceberg manifest list: out of memory");
        return -1;
    }
    if (zx_avro_file_open(p, n, &f, err, errlen) < 0)
        goto failed;
    for (;;) {
        const zx_avro_value *rec;
        int rc = zx_avro_next(f, &rec, err, errlen);
        if (rc < 0)
            goto failed;
        if (rc == 0)
            break;
        if (zx_grow(&l->files, l->n, &l->cap, sizeof(*l->files)) < 0)
            goto oom;
        zx_ice_mfile *m = &l->files[l->n];
        memset(m, 0, sizeof(*m));
        const zx_avro_value *path = zx_avro_field(rec, 500);
        if (zx_avro_is_null(path) || path->type->kind != ZX_AVK_STRING) {
            snprintf(err, errlen, "iceberg manifest list: manifest %zu has no manifest_path",
                     l->n);
            goto failed;
        }
        if (!(m->manifest_path = own(&l->a, path->p, path->len)))
            goto oom;
        m->manifest_length = get_l(rec, 501, 0);
        m->partition_spec_id = (int32_t)get_l(rec, 502, 0);
        m->content = (int)get_l(rec, 517, 0);
        m->sequence_number = get_l(rec, 515, 0);
        m->min_sequence_number = get_l(rec, 516, 0);
        m->added_snapshot_id = get_l(rec, 503, 0);
        m->added_files_count = (int32_t)get_l(rec, 504, -1);
        m->existing_files_count = (int32_t)get_l(rec, 505, -1);
        m->deleted_files_count = (int32_t)get_l(rec, 506, -1);
        m->added_rows_count = get_l(rec, 512, -1);
        m->existing_rows_count = get_l(rec, 513, -1);
        m->deleted_rows_count = get_l(rec, 514, -1);
        if (get_b(&l->a, rec, 519, &m->key_metadata, &m->key_metadata_len) < 0)
            goto oom;
        const zx_avro_value *parts = zx_avro_field(rec, 507);
        if (!zx_avro_is_null(parts) && parts->type->kind == ZX_AVK_ARRAY) {
            zx_ice_fsummary *fs = own(&l->a, NULL, parts->n * sizeof(*fs));
            if (!fs)
                goto oom;
            for (size_t i = 0; i < parts->n; i++) {
                const zx_avro_value *s = &parts->items[i];
                fs[i].contains_null = get_l(s, 509, 0) != 0;
                const zx_avro_value *cn = zx_avro_field(s, 518);
                fs[i].has_contains_nan = !zx_avro_is_null(cn);
                fs[i].contains_nan = fs[i].has_contains_nan && cn->l;
                if (get_b(&l->a, s, 510, &fs[i].lower, &fs[i].lower_len) < 0 ||
                    get_b(&l->a, s, 511, &fs[i].upper, &fs[i].upper_len) < 0)
                    goto oom;
            }
            m->partitions = fs;
            m->npartitions = parts->n;
        }
        l->n++;
    }
    zx_avro_file_free(f);
    *out = l;
    return 0;
oom:
    snprintf(err, errlen, "iceberg manifest list: out of memory");
failed:
    zx_avro_file_free(f);
    zx_ice_mlist_free(l);
    return -1;
}

/* ---- reading a manifest --------------------------------------------------- */

struct zx_ice_mread {
    zx_ice_pfield *pf;
    size_t npf;
    zx_ice_entry *entries;
    size_t n, cap;
    const char *meta[5];       /* schema, partition-spec, partition-spec-id,
                                  content, format-version (copies) or NULL */
    arena a;
};

static const char *const MREAD_KEYS[5] = {"schema", "partition-spec", "partition-spec-id",
                                          "content", "format-version"};

void zx_ice_mread_free(zx_ice_mread *r)
{
    if (!r)
        return;
    arena_free(&r->a);
    free(r->entries);
    free(r);
}

const zx_ice_pfield *zx_ice_mread_pfields(const zx_ice_mread *r, size_t *n)
{
    *n = r->npf;
    return r->pf;
}

const zx_ice_entry *zx_ice_mread_entries(const zx_ice_mread *r, size_t *n)
{
    *n = r->n;
    return r->entries;
}

const char *zx_ice_mread_meta(const zx_ice_mread *r, const char *key)
{
    for (size_t i = 0; i < 5; i++)
        if (!strcmp(key, MREAD_KEYS[i]))
            return r->meta[i];
    return NULL;
}

/* The non-null branch of an optional type. */
static const zx_avro_type *unopt(const zx_avro_type *t)
{
    if (t && t->kind == ZX_AVK_UNION)
        for (size_t i = 0; i < t->n; i++)
            if (t->sub[i]->kind != ZX_AVK_NULL)
                return t->sub[i];
    return t;
}

/* The type of the field with field-id id of record type t, or NULL. */
static const zx_avro_type *field_type(const zx_avro_type *t, int64_t id)
{
    t = unopt(t);
    if (!t || t->kind != ZX_AVK_RECORD)
        return NULL;
    for (size_t i = 0; i < t->n; i++)
        if (t->fids[i] == id)
            return unopt(t->sub[i]);
    return NULL;
}

static int ptype_from_avro(const zx_avro_type *t, zx_ice_ptype *out)
{
    const char *lg = t->logical ? t->logical : "";
    switch (t->kind) {
    case ZX_AVK_INT:
        if (!*lg || !strcmp(lg, "date")) {
            *out = *lg ? ZX_ICE_P_DATE : ZX_ICE_P_INT;
            return 0;
        }
        return -1;
    case ZX_AVK_LONG:
        if (!*lg) {
            *out = ZX_ICE_P_LONG;
            return 0;
        }
        if (!strcmp(lg, "timestamp-micros")) {
            *out = t->adjust_to_utc ? ZX_ICE_P_TIMESTAMPTZ : ZX_ICE_P_TIMESTAMP;
            return 0;
        }
        return -1;
    case ZX_AVK_STRING: *out = ZX_ICE_P_STRING; return 0;
    case ZX_AVK_BOOLEAN: *out = ZX_ICE_P_BOOLEAN; return 0;
    case ZX_AVK_DOUBLE: *out = ZX_ICE_P_DOUBLE; return 0;
    case ZX_AVK_BYTES: *out = ZX_ICE_P_BINARY; return 0;
    default: return -1;
    }
}

/* An int -> long map (array of key/value records) into an owned array:
 * 0 (NULL when null), -1 oom. */
static int read_counts(arena *a, const zx_avro_value *v, const zx_ice_count **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (zx_avro_is_null(v) || v->type->kind != ZX_AVK_ARRAY)
        return 0;
    zx_ice_count *c = own(a, NULL, v->n * sizeof(*c));
    if (!c)
        return -1;
    for (size_t i = 0; i < v->n; i++) {
        const zx_avro_value *kv = &v->items[i];
        if (kv->n >= 2) {
            c[i].id = (int32_t)kv->items[0].l;
            c[i].n = kv->items[1].l;
        }
    }
    *out = c;
    *n = v->n;
    return 0;
}

static int read_bounds(arena *a, const zx_avro_value *v, const zx_ice_bound **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (zx_avro_is_null(v) || v->type->kind != ZX_AVK_ARRAY)
        return 0;
    zx_ice_bound *b = own(a, NULL, v->n * sizeof(*b));
    if (!b)
        return -1;
    for (size_t i = 0; i < v->n; i++) {
        const zx_avro_value *kv = &v->items[i];
        if (kv->n >= 2) {
            b[i].id = (int32_t)kv->items[0].l;
            if (!(b[i].p = own(a, kv->items[1].p, kv->items[1].len)))
                return -1;
            b[i].len = kv->items[1].len;
        }
    }
    *out = b;
    *n = v->n;
    return 0;
}

static const char *get_s(arena *a, const zx_avro_value *rec, int64_t id, int *oom)
{
    const zx_avro_value *v = zx_avro_field(rec, id);
    if (zx_avro_is_null(v) || !v->p)
        return NULL;
    const char *c = own(a, v->p, v->len);
    if (!c)
        *oom = 1;
    return c;
}

static int read_entry(zx_ice_mread *r, const zx_avro_value *rec, zx_ice_entry *e, char *err,
                      size_t errlen)
{
    arena *a = &r->a;
    int oom = 0;
    memset(e, 0, sizeof(*e));
    const zx_avro_value *df = zx_avro_field(rec, 2), *v;
    if (zx_avro_is_null(df) || df->type->kind != ZX_AVK_RECORD) {
        snprintf(err, errlen, "iceberg manifest: entry %zu has no data_file", r->n);
        return -1;
    }
    e->status = (int)get_l(rec, 0, 0);
    e->has_snapshot_id = !zx_avro_is_null(v = zx_avro_field(rec, 1));
    e->snapshot_id = e->has_snapshot_id ? v->l : 0;
    e->has_sequence_number = !zx_avro_is_null(v = zx_avro_field(rec, 3));
    e->sequence_number = e->has_sequence_number ? v->l : 0;
    e->has_file_sequence_number = !zx_avro_is_null(v = zx_avro_field(rec, 4));
    e->file_sequence_number = e->has_file_sequence_number ? v->l : 0;
    e->content = (int)get_l(df, 134, 0);
    e->file_path = get_s(a, df, 100, &oom);
    e->file_format = get_s(a, df, 101, &oom);
    if (!e->file_path && !oom) {
        snprintf(err, errlen, "iceberg manifest: entry %zu has no file_path", r->n);
        return -1;
    }
    e->record_count = get_l(df, 103, 0);
    e->file_size_in_bytes = get_l(df, 104, 0);
    const zx_avro_value *part = zx_avro_field(df, 102);
    if (r->npf) {
        zx_ice_pvalue *pv = own(a, NULL, r->npf * sizeof(*pv));
        if (!pv)
            return -1;
        for (size_t i = 0; i < r->npf; i++) {
            const zx_avro_value *x = zx_avro_field(part, r->pf[i].field_id);
            if (zx_avro_is_null(x)) {
                pv[i].is_null = 1;
                continue;
            }
            pv[i].i = x->l;
            pv[i].d = x->d;
            if (x->p) {
                if (!(pv[i].s = own(a, x->p, x->len)))
                    return -1;
                pv[i].len = x->len;
            }
        }
        e->partition = pv;
    }
    if (oom || read_counts(a, zx_avro_field(df, 108), &e->column_sizes, &e->ncolumn_sizes) < 0 ||
        read_counts(a, zx_avro_field(df, 109), &e->value_counts, &e->nvalue_counts) < 0 ||
        read_counts(a, zx_avro_field(df, 110), &e->null_value_counts,
                    &e->nnull_value_counts) < 0 ||
        read_counts(a, zx_avro_field(df, 137), &e->nan_value_counts,
                    &e->nnan_value_counts) < 0 ||
        read_bounds(a, zx_avro_field(df, 125), &e->lower_bounds, &e->nlower_bounds) < 0 ||
        read_bounds(a, zx_avro_field(df, 128), &e->upper_bounds, &e->nupper_bounds) < 0 ||
        get_b(a, df, 131, &e->key_metadata, &e->key_metadata_len) < 0)
        return -1;
    v = zx_avro_field(df, 132);
    if (!zx_avro_is_null(v) && v->type->kind == ZX_AVK_ARRAY) {
        int64_t *so = own(a, NULL, v->n * sizeof(*so));
        if (!so)
            return -1;
        for (size_t i = 0; i < v->n; i++)
            so[i] = v->items[i].l;
        e->split_offsets = so;
        e->nsplit_offsets = v->n;
    }
    v = zx_avro_field(df, 135);
    if (!zx_avro_is_null(v) && v->type->kind == ZX_AVK_ARRAY) {
        int32_t *eq = own(a, NULL, v->n * sizeof(*eq));
        if (!eq)
            return -1;
        for (size_t i = 0; i < v->n; i++)
            eq[i] = (int32_t)v->items[i].l;
        e->equality_ids = eq;
        e->nequality_ids = v->n;
    }
    e->has_sort_order_id = !zx_avro_is_null(v = zx_avro_field(df, 140));
    e->sort_order_id = e->has_sort_order_id ? (int32_t)v->l : 0;
    e->referenced_data_file = get_s(a, df, 143, &oom);
    return oom ? -1 : 0;
}

int zx_ice_manifest_read(const void *p, size_t n, zx_ice_mread **out, char *err, size_t errlen)
{
    *out = NULL;
    zx_avro_file *f = NULL;
    zx_ice_mread *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(err, errlen, "iceberg manifest: out of memory");
        return -1;
    }
    if (zx_avro_file_open(p, n, &f, err, errlen) < 0)
        goto failed;
    for (size_t i = 0; i < 5; i++) {
        size_t len;
        const uint8_t *v = zx_avro_file_meta(f, MREAD_KEYS[i], &len);
        if (v && !(r->meta[i] = own(&r->a, v, len)))
            goto oom;
    }
    const zx_avro_type *pt = field_type(field_type(zx_avro_file_schema(f), 2), 102);
    if (pt && pt->kind == ZX_AVK_RECORD && pt->n) {
        r->npf = pt->n;
        if (!(r->pf = own(&r->a, NULL, pt->n * sizeof(*r->pf))))
            goto oom;
        for (size_t i = 0; i < pt->n; i++) {
            r->pf[i].field_id = (int32_t)pt->fids[i];
            r->pf[i].name = pt->fnames[i];
            if (!(r->pf[i].name = own(&r->a, pt->fnames[i], strlen(pt->fnames[i]))))
                goto oom;
            if (ptype_from_avro(unopt(pt->sub[i]), &r->pf[i].type) < 0) {
                snprintf(err, errlen, "iceberg manifest: partition field %s: a type zx does "
                         "not handle", pt->fnames[i]);
                goto failed;
            }
        }
    }
    for (;;) {
        const zx_avro_value *rec;
        int rc = zx_avro_next(f, &rec, err, errlen);
        if (rc < 0)
            goto failed;
        if (rc == 0)
            break;
        if (zx_grow(&r->entries, r->n, &r->cap, sizeof(*r->entries)) < 0)
            goto oom;
        err[0] = '\0';
        if (read_entry(r, rec, &r->entries[r->n], err, errlen) < 0) {
            if (!err[0])
                goto oom;
            goto failed;
        }
        r->n++;
    }
    zx_avro_file_free(f);
    *out = r;
    return 0;
oom:
    snprintf(err, errlen, "iceberg manifest: out of memory");
failed:
    zx_avro_file_free(f);
    zx_ice_mread_free(r);
    return -1;
}
