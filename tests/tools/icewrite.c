/*
 * icewrite — a test tool: write an Iceberg v2 manifest and a manifest list
 * with workers/destinations/iceberg/ice_manifest.h, from one JSON document
 * on stdin:
 *
 *   {"manifest": {"path": "m.avro", "schema": {...table schema...},
 *                 "schema_id": 0, "partition_spec": [...fields...],
 *                 "partition_spec_id": 0, "content": 0, "codec": "null",
 *                 "sync": "32 hex digits" (optional),
 *                 "partition_fields": [{"id": 1000, "name": "d",
 *                                       "type": "date"}, ...],
 *                 "entries": [{"status": 1, "snapshot_id": 5,
 *                   "sequence_number": null, "file_sequence_number": null,
 *                   "content": 0, "file_path": "...", "file_format": "PARQUET",
 *                   "partition": [19000, null, ...], "record_count": 3,
 *                   "file_size_in_bytes": 100,
 *                   "column_sizes": [[1, 20], ...], "value_counts": ...,
 *                   "null_value_counts": ..., "nan_value_counts": ...,
 *                   "lower_bounds": [[1, {"type": "long", "value": 5}], ...],
 *                   "upper_bounds": ..., "key_metadata": "hex",
 *                   "split_offsets": [4], "equality_ids": [1],
 *                   "sort_order_id": 0, "referenced_data_file": "..."}]},
 *    "manifest_list": {"path": "snap.avro", "snapshot_id": 5,
 *                      "parent_snapshot_id": null, "sequence_number": 1,
 *                      "codec": "null",
 *                      "manifests": [{"written": true, "sequence_number": 1,
 *                                     "added_snapshot_id": 5,
 *                                     "manifest_path": "..."} | a full
 *                                    manifest_file object]}}
 *
 * A missing or null optional field is Avro null.  Partition field types:
 * int long string date timestamp timestamptz boolean double binary
 * (binary values as hex).  Bound values: {"type": T, "value": V} with T
 * one of boolean int long float double date timestamp string decimal
 * (V: the unscaled integer) hex (V: the bytes).  A manifest_file with
 * "written": true takes manifest_length, partition_spec_id, content, the
 * counts, min_sequence_number (when the manifest has one, else its
 * sequence_number) and partitions from the manifest written above;
 * otherwise every field is given ("partitions": [{"contains_null": b,
 * "contains_nan": b|null, "lower_bound": hex|null, "upper_bound":
 * hex|null}] or null; "key_metadata": hex).
 *
 * Prints one JSON line: {"manifest_length": n, "manifest_list_length": n}.
 *
 *   icewrite --read-list FILE
 *
 * reads a manifest list (any writer's) with zx_ice_mlist_read and prints
 * its manifests as one JSON array of objects named as the spec's fields
 * (bytes as hex; null where the file has null: partitions, key_metadata,
 * contains_nan, bounds; counts the file leaves null print as -1).
 *
 *   icewrite --read-manifest FILE
 *
 * reads a manifest (any writer's) with zx_ice_manifest_read and prints
 * {"meta": {...}, "partition_fields": [{"id", "name", "type"}],
 *  "entries": [...]} with entries shaped as the input's above (maps as
 * [id, n] / [id, hex] pairs, partition values as JSON values, binary as
 * hex; null where the file has null).
 * Exit status 0, or 1 with a message on stderr.  Test use only.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workers/destinations/iceberg/ice_manifest.h"

static char msg[512];

static int fail(const char *what)
{
    snprintf(msg, sizeof(msg), "%s", what);
    return -1;
}

/* Everything one run allocates for its inputs, freed together at exit
 * (so that a leak ASan reports is the library's). */
static void **kept;
static size_t nkept, capkept;

static void *keep_ptr(void *p)
{
    if (!p || zx_grow(&kept, nkept, &capkept, sizeof(*kept)) < 0) {
        fprintf(stderr, "icewrite: out of memory\n");
        exit(1);
    }
    kept[nkept++] = p;
    return p;
}

static void *keep(size_t n)
{
    return keep_ptr(calloc(1, n ? n : 1));
}

static void free_kept(void)
{
    for (size_t i = 0; i < nkept; i++)
        free(kept[i]);
    free(kept);
}

static int unhex(const char *s, uint8_t **out, size_t *len)
{
    size_t n = strlen(s);
    if (n % 2)
        return fail("odd hex length");
    uint8_t *p = keep(n / 2);
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return fail("bad hex");
        p[i] = (uint8_t)v;
    }
    *out = p;
    *len = n / 2;
    return 0;
}

static int write_file(const char *path, const zx_buf *b)
{
    if (!path)
        return fail("no \"path\"");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return fail("cannot create output");
    size_t off = 0;
    while (off < b->len) {
        ssize_t k = write(fd, b->p + off, b->len - off);
        if (k <= 0) {
            close(fd);
            return fail("write failed");
        }
        off += (size_t)k;
    }
    return close(fd);
}

static zx_avro_codec codec_of(json_t *o)
{
    const char *c = json_string_value(json_object_get(o, "codec"));
    return c && !strcmp(c, "deflate") ? ZX_AVRO_DEFLATE : ZX_AVRO_NULL;
}

static int ptype_of(const char *s, zx_ice_ptype *t)
{
    static const char *names[] = {"int", "long", "string", "date", "timestamp",
                                  "timestamptz", "boolean", "double", "binary"};
    for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(s, names[i])) {
            *t = (zx_ice_ptype)i;
            return 0;
        }
    return fail("unknown partition type");
}

static int counts_of(json_t *a, const zx_ice_count **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a))
        return fail("a counts map is not an array of pairs");
    zx_ice_count *c = keep(json_array_size(a) * sizeof(*c));
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *p = json_array_get(a, i);
        c[i].id = (int32_t)json_integer_value(json_array_get(p, 0));
        c[i].n = json_integer_value(json_array_get(p, 1));
    }
    *out = c;
    *n = json_array_size(a);
    return 0;
}

static int bound_of(json_t *v, zx_ice_bound *b)
{
    const char *t = json_string_value(json_object_get(v, "type"));
    json_t *x = json_object_get(v, "value");
    uint8_t *p = keep(16);
    b->p = p;
    if (!t)
        return fail("a bound without a type");
    if (!strcmp(t, "boolean"))
        b->len = zx_ice_bound_boolean(json_is_true(x), p);
    else if (!strcmp(t, "int") || !strcmp(t, "date"))
        b->len = zx_ice_bound_int((int32_t)json_integer_value(x), p);
    else if (!strcmp(t, "long") || !strcmp(t, "timestamp"))
        b->len = zx_ice_bound_long(json_integer_value(x), p);
    else if (!strcmp(t, "float"))
        b->len = zx_ice_bound_float((float)json_number_value(x), p);
    else if (!strcmp(t, "double"))
        b->len = zx_ice_bound_double(json_number_value(x), p);
    else if (!strcmp(t, "decimal"))
        b->len = zx_ice_bound_decimal(json_integer_value(x), p);
    else if (!strcmp(t, "string")) {
        b->p = (const uint8_t *)json_string_value(x);
        b->len = json_string_length(x);
    } else if (!strcmp(t, "hex")) {
        uint8_t *h;
        if (unhex(json_string_value(x) ? json_string_value(x) : "", &h, &b->len) < 0)
            return -1;
        b->p = h;
    } else
        return fail("unknown bound type");
    return 0;
}

static int bounds_of(json_t *a, const zx_ice_bound **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!a || json_is_null(a))
        return 0;
    zx_ice_bound *b = keep(json_array_size(a) * sizeof(*b));
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *p = json_array_get(a, i);
        b[i].id = (int32_t)json_integer_value(json_array_get(p, 0));
        if (bound_of(json_array_get(p, 1), &b[i]) < 0)
            return -1;
    }
    *out = b;
    *n = json_array_size(a);
    return 0;
}

/* A nullable long: 1 and *v when present. */
static int opt_long(json_t *o, const char *k, int64_t *v)
{
    json_t *x = json_object_get(o, k);
    if (!x || json_is_null(x))
        return 0;
    *v = json_integer_value(x);
    return 1;
}

static int entry_of(json_t *j, const zx_ice_pfield *pf, size_t npf, zx_ice_entry *e)
{
    memset(e, 0, sizeof(*e));
    e->status = (int)json_integer_value(json_object_get(j, "status"));
    e->has_snapshot_id = opt_long(j, "snapshot_id", &e->snapshot_id);
    e->has_sequence_number = opt_long(j, "sequence_number", &e->sequence_number);
    e->has_file_sequence_number = opt_long(j, "file_sequence_number", &e->file_sequence_number);
    e->content = (int)json_integer_value(json_object_get(j, "content"));
    e->file_path = json_string_value(json_object_get(j, "file_path"));
    e->file_format = json_string_value(json_object_get(j, "file_format"));
    e->record_count = json_integer_value(json_object_get(j, "record_count"));
    e->file_size_in_bytes = json_integer_value(json_object_get(j, "file_size_in_bytes"));
    json_t *part = json_object_get(j, "partition");
    if (npf) {
        if (json_array_size(part) != npf)
            return fail("partition: one value per partition field");
        zx_ice_pvalue *pv = keep(npf * sizeof(*pv));
        for (size_t i = 0; i < npf; i++) {
            json_t *v = json_array_get(part, i);
            if (json_is_null(v))
                pv[i].is_null = 1;
            else if (pf[i].type == ZX_ICE_P_STRING) {
                pv[i].s = json_string_value(v);
                pv[i].len = json_string_length(v);
            } else if (pf[i].type == ZX_ICE_P_BINARY) {
                uint8_t *h;
                if (unhex(json_string_value(v) ? json_string_value(v) : "", &h, &pv[i].len) < 0)
                    return -1;
                pv[i].s = (const char *)h;
            } else if (pf[i].type == ZX_ICE_P_DOUBLE)
                pv[i].d = json_number_value(v);
            else if (pf[i].type == ZX_ICE_P_BOOLEAN)
                pv[i].i = json_is_true(v);
            else
                pv[i].i = json_integer_value(v);
        }
        e->partition = pv;
    }
    if (counts_of(json_object_get(j, "column_sizes"), &e->column_sizes, &e->ncolumn_sizes) < 0 ||
        counts_of(json_object_get(j, "value_counts"), &e->value_counts, &e->nvalue_counts) < 0 ||
        counts_of(json_object_get(j, "null_value_counts"), &e->null_value_counts,
                  &e->nnull_value_counts) < 0 ||
        counts_of(json_object_get(j, "nan_value_counts"), &e->nan_value_counts,
                  &e->nnan_value_counts) < 0 ||
        bounds_of(json_object_get(j, "lower_bounds"), &e->lower_bounds, &e->nlower_bounds) < 0 ||
        bounds_of(json_object_get(j, "upper_bounds"), &e->upper_bounds, &e->nupper_bounds) < 0)
        return -1;
    const char *km = json_string_value(json_object_get(j, "key_metadata"));
    if (km) {
        uint8_t *h;
        if (unhex(km, &h, &e->key_metadata_len) < 0)
            return -1;
        e->key_metadata = h;
    }
    json_t *so = json_object_get(j, "split_offsets");
    if (json_is_array(so)) {
        int64_t *v = keep(json_array_size(so) * sizeof(*v));
        for (size_t i = 0; i < json_array_size(so); i++)
            v[i] = json_integer_value(json_array_get(so, i));
        e->split_offsets = v;
        e->nsplit_offsets = json_array_size(so);
    }
    json_t *eq = json_object_get(j, "equality_ids");
    if (json_is_array(eq)) {
        int32_t *v = keep(json_array_size(eq) * sizeof(*v));
        for (size_t i = 0; i < json_array_size(eq); i++)
            v[i] = (int32_t)json_integer_value(json_array_get(eq, i));
        e->equality_ids = v;
        e->nequality_ids = json_array_size(eq);
    }
    int64_t sid;
    if ((e->has_sort_order_id = opt_long(j, "sort_order_id", &sid)))
        e->sort_order_id = (int32_t)sid;
    e->referenced_data_file = json_string_value(json_object_get(j, "referenced_data_file"));
    return 0;
}

static int sync_of(json_t *o, const uint8_t **sync)
{
    const char *s = json_string_value(json_object_get(o, "sync"));
    *sync = NULL;
    if (!s)
        return 0;
    uint8_t *h;
    size_t n;
    if (unhex(s, &h, &n) < 0 || n != 16)
        return fail("sync: 32 hex digits");
    *sync = h;
    return 0;
}

static char *dump(json_t *v, const char *dflt)
{
    if (!v)
        return keep_ptr(strdup(dflt));
    if (json_is_string(v))
        return keep_ptr(strdup(json_string_value(v)));
    return keep_ptr(json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER));
}

static json_t *hexj(const uint8_t *p, size_t n)
{
    if (!p)
        return json_null();
    char *s = keep(2 * n + 1);
    for (size_t i = 0; i < n; i++)
        snprintf(s + 2 * i, 3, "%02x", p[i]);
    return json_string(s);
}

/* The whole file (kept), or NULL. */
static uint8_t *slurp(const char *path, size_t *got)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "icewrite: cannot open %s\n", path);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    uint8_t *p = keep((size_t)st.st_size);
    *got = 0;
    while (*got < (size_t)st.st_size) {
        ssize_t k = read(fd, p + *got, (size_t)st.st_size - *got);
        if (k <= 0)
            break;
        *got += (size_t)k;
    }
    close(fd);
    return p;
}

static int read_list(const char *path)
{
    size_t got;
    uint8_t *p = slurp(path, &got);
    if (!p)
        return 1;
    char err[512];
    zx_ice_mlist *l = NULL;
    if (zx_ice_mlist_read(p, got, &l, err, sizeof(err)) < 0) {
        fprintf(stderr, "icewrite: %s\n", err);
        free_kept();
        return 1;
    }
    size_t n;
    const zx_ice_mfile *fs = zx_ice_mlist_files(l, &n);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const zx_ice_mfile *f = &fs[i];
        json_t *o = json_pack("{s:s, s:I, s:i, s:i, s:I, s:I, s:I, s:i, s:i, s:i, s:I, s:I, s:I}",
            "manifest_path", f->manifest_path, "manifest_length", (json_int_t)f->manifest_length,
            "partition_spec_id", (int)f->partition_spec_id, "content", f->content,
            "sequence_number", (json_int_t)f->sequence_number,
            "min_sequence_number", (json_int_t)f->min_sequence_number,
            "added_snapshot_id", (json_int_t)f->added_snapshot_id,
            "added_files_count", (int)f->added_files_count,
            "existing_files_count", (int)f->existing_files_count,
            "deleted_files_count", (int)f->deleted_files_count,
            "added_rows_count", (json_int_t)f->added_rows_count,
            "existing_rows_count", (json_int_t)f->existing_rows_count,
            "deleted_rows_count", (json_int_t)f->deleted_rows_count);
        json_t *ps = json_null();
        if (f->partitions) {
            ps = json_array();
            for (size_t k = 0; k < f->npartitions; k++) {
                const zx_ice_fsummary *s = &f->partitions[k];
                json_array_append_new(ps, json_pack("{s:b, s:o, s:o, s:o}",
                    "contains_null", s->contains_null,
                    "contains_nan", s->has_contains_nan ? json_boolean(s->contains_nan)
                                                        : json_null(),
                    "lower_bound", hexj(s->lower, s->lower_len),
                    "upper_bound", hexj(s->upper, s->upper_len)));
            }
        }
        json_object_set_new(o, "partitions", ps);
        json_object_set_new(o, "key_metadata", hexj(f->key_metadata, f->key_metadata_len));
        json_array_append_new(arr, o);
    }
    char *txt = json_dumps(arr, JSON_COMPACT | JSON_PRESERVE_ORDER);
    printf("%s\n", txt);
    free(txt);
    json_decref(arr);
    zx_ice_mlist_free(l);
    free_kept();
    return 0;
}

static json_t *counts_j(const zx_ice_count *c, size_t n)
{
    if (!c)
        return json_null();
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("[i, I]", (int)c[i].id, (json_int_t)c[i].n));
    return a;
}

static json_t *bounds_j(const zx_ice_bound *b, size_t n)
{
    if (!b)
        return json_null();
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("[i, o]", (int)b[i].id, hexj(b[i].p, b[i].len)));
    return a;
}

static json_t *opt_j(int has, int64_t v)
{
    return has ? json_integer(v) : json_null();
}

static int read_manifest(const char *path)
{
    static const char *tnames[] = {"int", "long", "string", "date", "timestamp",
                                   "timestamptz", "boolean", "double", "binary"};
    size_t got;
    uint8_t *p = slurp(path, &got);
    if (!p)
        return 1;
    char err[512];
    zx_ice_mread *r = NULL;
    if (zx_ice_manifest_read(p, got, &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "icewrite: %s\n", err);
        free_kept();
        return 1;
    }
    json_t *doc = json_object(), *meta = json_object(), *pfs = json_array(),
           *ents = json_array();
    static const char *keys[] = {"schema", "partition-spec", "partition-spec-id", "content",
                                 "format-version"};
    for (size_t i = 0; i < 5; i++) {
        const char *v = zx_ice_mread_meta(r, keys[i]);
        json_object_set_new(meta, keys[i], v ? json_string(v) : json_null());
    }
    size_t npf, n;
    const zx_ice_pfield *pf = zx_ice_mread_pfields(r, &npf);
    for (size_t i = 0; i < npf; i++)
        json_array_append_new(pfs, json_pack("{s:i, s:s, s:s}", "id", (int)pf[i].field_id,
                                             "name", pf[i].name, "type", tnames[pf[i].type]));
    const zx_ice_entry *es = zx_ice_mread_entries(r, &n);
    for (size_t i = 0; i < n; i++) {
        const zx_ice_entry *e = &es[i];
        json_t *part = json_array();
        for (size_t k = 0; k < npf; k++) {
            const zx_ice_pvalue *v = &e->partition[k];
            json_t *x;
            if (v->is_null)
                x = json_null();
            else if (pf[k].type == ZX_ICE_P_STRING)
                x = json_stringn(v->s, v->len);
            else if (pf[k].type == ZX_ICE_P_BINARY)
                x = hexj((const uint8_t *)v->s, v->len);
            else if (pf[k].type == ZX_ICE_P_DOUBLE)
                x = json_real(v->d);
            else if (pf[k].type == ZX_ICE_P_BOOLEAN)
                x = json_boolean(v->i);
            else
                x = json_integer(v->i);
            json_array_append_new(part, x);
        }
        json_t *so = json_null(), *eq = json_null();
        if (e->split_offsets) {
            so = json_array();
            for (size_t k = 0; k < e->nsplit_offsets; k++)
                json_array_append_new(so, json_integer(e->split_offsets[k]));
        }
        if (e->equality_ids) {
            eq = json_array();
            for (size_t k = 0; k < e->nequality_ids; k++)
                json_array_append_new(eq, json_integer(e->equality_ids[k]));
        }
        json_t *o = json_object();
        json_object_set_new(o, "status", json_integer(e->status));
        json_object_set_new(o, "snapshot_id", opt_j(e->has_snapshot_id, e->snapshot_id));
        json_object_set_new(o, "sequence_number",
                            opt_j(e->has_sequence_number, e->sequence_number));
        json_object_set_new(o, "file_sequence_number",
                            opt_j(e->has_file_sequence_number, e->file_sequence_number));
        json_object_set_new(o, "content", json_integer(e->content));
        json_object_set_new(o, "file_path", json_string(e->file_path));
        json_object_set_new(o, "file_format",
                            e->file_format ? json_string(e->file_format) : json_null());
        json_object_set_new(o, "partition", part);
        json_object_set_new(o, "record_count", json_integer(e->record_count));
        json_object_set_new(o, "file_size_in_bytes", json_integer(e->file_size_in_bytes));
        json_object_set_new(o, "column_sizes", counts_j(e->column_sizes, e->ncolumn_sizes));
        json_object_set_new(o, "value_counts", counts_j(e->value_counts, e->nvalue_counts));
        json_object_set_new(o, "null_value_counts",
                            counts_j(e->null_value_counts, e->nnull_value_counts));
        json_object_set_new(o, "nan_value_counts",
                            counts_j(e->nan_value_counts, e->nnan_value_counts));
        json_object_set_new(o, "lower_bounds", bounds_j(e->lower_bounds, e->nlower_bounds));
        json_object_set_new(o, "upper_bounds", bounds_j(e->upper_bounds, e->nupper_bounds));
        json_object_set_new(o, "key_metadata", hexj(e->key_metadata, e->key_metadata_len));
        json_object_set_new(o, "split_offsets", so);
        json_object_set_new(o, "equality_ids", eq);
        json_object_set_new(o, "sort_order_id", opt_j(e->has_sort_order_id, e->sort_order_id));
        json_object_set_new(o, "referenced_data_file", e->referenced_data_file
                                ? json_string(e->referenced_data_file) : json_null());
        json_array_append_new(ents, o);
    }
    json_object_set_new(doc, "meta", meta);
    json_object_set_new(doc, "partition_fields", pfs);
    json_object_set_new(doc, "entries", ents);
    char *txt = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    printf("%s\n", txt);
    free(txt);
    json_decref(doc);
    zx_ice_mread_free(r);
    free_kept();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--read-manifest"))
        return read_manifest(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--read-list"))
        return read_list(argv[2]);
    json_error_t jerr;
    json_t *doc = json_loadf(stdin, 0, &jerr);
    if (!doc) {
        fprintf(stderr, "icewrite: stdin: %s (line %d)\n", jerr.text, jerr.line);
        return 1;
    }
    char err[512] = "";
    json_t *jm = json_object_get(doc, "manifest");
    json_t *jl = json_object_get(doc, "manifest_list");
    zx_ice_manifest *m = NULL;
    zx_buf mbytes = {0}, lbytes = {0};
    zx_ice_mfile written;
    memset(&written, 0, sizeof(written));
    int have_written = 0;
    if (jm) {
        json_t *jpf = json_object_get(jm, "partition_fields");
        size_t npf = json_array_size(jpf);
        zx_ice_pfield *pf = keep(npf * sizeof(*pf));
        for (size_t i = 0; i < npf; i++) {
            json_t *f = json_array_get(jpf, i);
            pf[i].field_id = (int32_t)json_integer_value(json_object_get(f, "id"));
            pf[i].name = json_string_value(json_object_get(f, "name"));
            if (ptype_of(json_string_value(json_object_get(f, "type")), &pf[i].type) < 0)
                goto failed;
        }
        zx_ice_manifest_args a = {
            .schema_json = dump(json_object_get(jm, "schema"), "{}"),
            .schema_id = (int32_t)json_integer_value(json_object_get(jm, "schema_id")),
            .partition_spec_json = dump(json_object_get(jm, "partition_spec"), "[]"),
            .partition_spec_id = (int32_t)json_integer_value(json_object_get(jm,
                                                                 "partition_spec_id")),
            .content = (int)json_integer_value(json_object_get(jm, "content")),
            .pfields = pf, .npfields = npf, .codec = codec_of(jm)};
        if (sync_of(jm, &a.sync) < 0)
            goto failed;
        if (zx_ice_manifest_open(&a, &m, err, sizeof(err)) < 0)
            goto failed_err;
        json_t *ents = json_object_get(jm, "entries");
        for (size_t i = 0; i < json_array_size(ents); i++) {
            zx_ice_entry e;
            if (entry_of(json_array_get(ents, i), pf, npf, &e) < 0)
                goto failed;
            if (zx_ice_manifest_add(m, &e, err, sizeof(err)) < 0)
                goto failed_err;
        }
        if (zx_ice_manifest_finish(m, &mbytes, err, sizeof(err)) < 0)
            goto failed_err;
        zx_ice_manifest_summary(m, &written);
        written.manifest_length = (int64_t)mbytes.len;
        have_written = 1;
        if (write_file(json_string_value(json_object_get(jm, "path")), &mbytes) < 0)
            goto failed;
    }
    if (jl) {
        json_t *jms = json_object_get(jl, "manifests");
        size_t n = json_array_size(jms);
        zx_ice_mfile *fs = keep(n * sizeof(*fs));
        for (size_t i = 0; i < n; i++) {
            json_t *f = json_array_get(jms, i);
            zx_ice_mfile *o = &fs[i];
            if (json_is_true(json_object_get(f, "written"))) {
                if (!have_written) {
                    fail("\"written\" without a manifest");
                    goto failed;
                }
                *o = written;
            } else {
                o->manifest_length = json_integer_value(json_object_get(f, "manifest_length"));
                o->partition_spec_id =
                    (int32_t)json_integer_value(json_object_get(f, "partition_spec_id"));
                o->content = (int)json_integer_value(json_object_get(f, "content"));
                o->min_sequence_number =
                    json_integer_value(json_object_get(f, "min_sequence_number"));
                o->added_files_count =
                    (int32_t)json_integer_value(json_object_get(f, "added_files_count"));
                o->existing_files_count =
                    (int32_t)json_integer_value(json_object_get(f, "existing_files_count"));
                o->deleted_files_count =
                    (int32_t)json_integer_value(json_object_get(f, "deleted_files_count"));
                o->added_rows_count = json_integer_value(json_object_get(f, "added_rows_count"));
                o->existing_rows_count =
                    json_integer_value(json_object_get(f, "existing_rows_count"));
                o->deleted_rows_count =
                    json_integer_value(json_object_get(f, "deleted_rows_count"));
                json_t *ps = json_object_get(f, "partitions");
                if (json_is_array(ps)) {
                    zx_ice_fsummary *s = keep(json_array_size(ps) * sizeof(*s));
                    for (size_t k = 0; k < json_array_size(ps); k++) {
                        json_t *p = json_array_get(ps, k);
                        s[k].contains_null = json_is_true(json_object_get(p, "contains_null"));
                        json_t *cn = json_object_get(p, "contains_nan");
                        s[k].has_contains_nan = cn && !json_is_null(cn);
                        s[k].contains_nan = json_is_true(cn);
                        const char *lo = json_string_value(json_object_get(p, "lower_bound"));
                        const char *hi = json_string_value(json_object_get(p, "upper_bound"));
                        uint8_t *h;
                        if (lo && unhex(lo, &h, &s[k].lower_len) == 0)
                            s[k].lower = h;
                        if (hi && unhex(hi, &h, &s[k].upper_len) == 0)
                            s[k].upper = h;
                    }
                    o->partitions = s;
                    o->npartitions = json_array_size(ps);
                }
            }
            o->manifest_path = json_string_value(json_object_get(f, "manifest_path"));
            o->sequence_number = json_integer_value(json_object_get(f, "sequence_number"));
            o->added_snapshot_id = json_integer_value(json_object_get(f, "added_snapshot_id"));
            if (o->min_sequence_number < 0)
                o->min_sequence_number = o->sequence_number;
            const char *km = json_string_value(json_object_get(f, "key_metadata"));
            uint8_t *h;
            if (km && unhex(km, &h, &o->key_metadata_len) == 0)
                o->key_metadata = h;
        }
        zx_ice_mlist_args a = {.snapshot_id = json_integer_value(json_object_get(jl, "snapshot_id")),
                               .sequence_number =
                                   json_integer_value(json_object_get(jl, "sequence_number")),
                               .codec = codec_of(jl)};
        a.has_parent_snapshot_id = opt_long(jl, "parent_snapshot_id", &a.parent_snapshot_id);
        if (sync_of(jl, &a.sync) < 0)
            goto failed;
        if (zx_ice_mlist_write(&a, fs, n, &lbytes, err, sizeof(err)) < 0)
            goto failed_err;
        if (write_file(json_string_value(json_object_get(jl, "path")), &lbytes) < 0)
            goto failed;
    }
    printf("{\"manifest_length\": %zu, \"manifest_list_length\": %zu}\n", mbytes.len,
           lbytes.len);
    zx_ice_manifest_free(m);
    zx_buf_free(&mbytes);
    zx_buf_free(&lbytes);
    json_decref(doc);
    free_kept();
    return 0;
failed_err:
    snprintf(msg, sizeof(msg), "%s", err);
failed:
    fprintf(stderr, "icewrite: %s\n", msg);
    zx_ice_manifest_free(m);
    zx_buf_free(&mbytes);
    zx_buf_free(&lbytes);
    json_decref(doc);
    free_kept();
    return 1;
}
