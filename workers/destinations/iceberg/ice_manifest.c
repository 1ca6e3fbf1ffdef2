/*
 * ice_manifest.c — Iceberg v2 manifests and manifest lists written as
 * Avro container files (ice_manifest.h; ice_manifest_read.c reads them).
 * The Avro schemas are written here as JSON text with the spec's field
 * ids; the records are encoded field by field in the same order.  The
 * schema text and the encoder below must change together.
 *
 * It must never do I/O: the caller uploads the bytes.
 */
#include "workers/destinations/iceberg/ice_manifest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPT "\"default\":null,"

/* ---- Appendix D --------------------------------------------------------- */

size_t zx_ice_bound_boolean(int v, uint8_t out[1])
{
    out[0] = v ? 1 : 0;
    return 1;
}

static size_t le(uint64_t u, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(u >> (8 * i));
    return n;
}

size_t zx_ice_bound_int(int32_t v, uint8_t out[4])
{
    return le((uint32_t)v, out, 4);
}

size_t zx_ice_bound_long(int64_t v, uint8_t out[8])
{
    return le((uint64_t)v, out, 8);
}

size_t zx_ice_bound_float(float v, uint8_t out[4])
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return le(u, out, 4);
}

size_t zx_ice_bound_double(double v, uint8_t out[8])
{
    uint64_t u;
    memcpy(&u, &v, 8);
    return le(u, out, 8);
}

size_t zx_ice_bound_decimal_be(const uint8_t *be, size_t n, uint8_t *out)
{
    size_t k = 0;
    /* a leading 0x00 before a byte < 0x80, or 0xff before one >= 0x80, says
     * nothing the next byte does not */
    while (k + 1 < n && ((be[k] == 0x00 && !(be[k + 1] & 0x80)) ||
                         (be[k] == 0xff && (be[k + 1] & 0x80))))
        k++;
    if (n)
        memmove(out, be + k, n - k);
    return n - k;
}

size_t zx_ice_bound_decimal(int64_t unscaled, uint8_t out[8])
{
    uint8_t be[8];
    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)((uint64_t)unscaled >> (8 * (7 - i)));
    return zx_ice_bound_decimal_be(be, 8, out);
}

/* ---- schema text ---------------------------------------------------------- */

static int valid_avro_name(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return 0;
    for (const char *p = s + 1; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
              (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    return 1;
}

/* The Avro name for an Iceberg name (the rule Iceberg's writers use): a
 * leading digit gets "_" before it, any other character not in
 * [A-Za-z0-9_] becomes "_x" and its code point in upper-case hex. */
static int avro_name(zx_buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i];) {
        unsigned c = p[i];
        int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        int digit = c >= '0' && c <= '9';
        if (alpha || (digit && i > 0)) {
            if (zx_buf_put(b, p + i, 1) < 0)
                return -1;
            i++;
            continue;
        }
        if (digit) {
            if (zx_buf_printf(b, "_%c", c) < 0)
                return -1;
            i++;
            continue;
        }
        /* one UTF-8 sequence (a stray byte counts as itself) */
        uint32_t cp = c;
        size_t len = 1;
        if (c >= 0xc0 && c < 0xe0)
            cp = c & 0x1f, len = 2;
        else if (c >= 0xe0 && c < 0xf0)
            cp = c & 0x0f, len = 3;
        else if (c >= 0xf0 && c < 0xf8)
            cp = c & 0x07, len = 4;
        size_t k = 1;
        for (; k < len && (p[i + k] & 0xc0) == 0x80; k++)
            cp = (cp << 6) | (p[i + k] & 0x3f);
        if (k < len)
            cp = c, k = 1;
        if (zx_buf_printf(b, "_x%X", cp) < 0)
            return -1;
        i += k;
    }
    return 0;
}

static int json_str(zx_buf *b, const char *s)
{
    if (zx_buf_put(b, "\"", 1) < 0)
        return -1;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int rc;
        if (*p == '"' || *p == '\\')
            rc = zx_buf_printf(b, "\\%c", *p);
        else if (*p < 0x20)
            rc = zx_buf_printf(b, "\\u%04x", *p);
        else
            rc = zx_buf_put(b, p, 1);
        if (rc < 0)
            return -1;
    }
    return zx_buf_put(b, "\"", 1);
}

static const char *ptype_avro(zx_ice_ptype t)
{
    switch (t) {
    case ZX_ICE_P_INT: return "\"int\"";
    case ZX_ICE_P_LONG: return "\"long\"";
    case ZX_ICE_P_STRING: return "\"string\"";
    case ZX_ICE_P_DATE: return "{\"type\":\"int\",\"logicalType\":\"date\"}";
    case ZX_ICE_P_TIMESTAMP:
        return "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\",\"adjust-to-utc\":false}";
    case ZX_ICE_P_TIMESTAMPTZ:
        return "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\",\"adjust-to-utc\":true}";
    case ZX_ICE_P_BOOLEAN: return "\"boolean\"";
    case ZX_ICE_P_DOUBLE: return "\"double\"";
    case ZX_ICE_P_BINARY: return "\"bytes\"";
    }
    return NULL;
}

/* An optional int-keyed map, as Appendix A's array of key/value records. */
static int schema_map(zx_buf *b, const char *name, int id, int kid, int vid, const char *vtype)
{
    return zx_buf_printf(b,
        "{\"name\":\"%s\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":\"record\","
        "\"name\":\"k%d_v%d\",\"fields\":[{\"name\":\"key\",\"type\":\"int\",\"field-id\":%d},"
        "{\"name\":\"value\",\"type\":\"%s\",\"field-id\":%d}]},\"logicalType\":\"map\"}],"
        OPT "\"field-id\":%d},", name, kid, vid, kid, vtype, vid, id);
}

static int manifest_schema(zx_buf *b, const zx_ice_pfield *pf, size_t npf)
{
    if (zx_buf_printf(b,
        "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
        "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
        "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"]," OPT "\"field-id\":1},"
        "{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"]," OPT "\"field-id\":3},"
        "{\"name\":\"file_sequence_number\",\"type\":[\"null\",\"long\"]," OPT "\"field-id\":4},"
        "{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
        "{\"name\":\"content\",\"type\":\"int\",\"field-id\":134},"
        "{\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"
        "{\"name\":\"file_format\",\"type\":\"string\",\"field-id\":101},"
        "{\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":[") < 0)
        return -1;
    for (size_t i = 0; i < npf; i++) {
        if (zx_buf_printf(b, "%s{\"name\":\"", i ? "," : "") < 0 ||
            avro_name(b, pf[i].name) < 0 ||
            zx_buf_printf(b, "\",\"type\":[\"null\",%s]," OPT "\"field-id\":%d",
                          ptype_avro(pf[i].type), (int)pf[i].field_id) < 0)
            return -1;
        if (!valid_avro_name(pf[i].name) &&
            (zx_buf_printf(b, ",\"iceberg-field-name\":") < 0 || json_str(b, pf[i].name) < 0))
            return -1;
        if (zx_buf_put(b, "}", 1) < 0)
            return -1;
    }
    if (zx_buf_printf(b, "]},\"field-id\":102},"
        "{\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"
        "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"field-id\":104},") < 0 ||
        schema_map(b, "column_sizes", 108, 117, 118, "long") < 0 ||
        schema_map(b, "value_counts", 109, 119, 120, "long") < 0 ||
        schema_map(b, "null_value_counts", 110, 121, 122, "long") < 0 ||
        schema_map(b, "nan_value_counts", 137, 138, 139, "long") < 0 ||
        schema_map(b, "lower_bounds", 125, 126, 127, "bytes") < 0 ||
        schema_map(b, "upper_bounds", 128, 129, 130, "bytes") < 0)
        return -1;
    return zx_buf_printf(b,
        "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"]," OPT "\"field-id\":131},"
        "{\"name\":\"split_offsets\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"long\","
        "\"element-id\":133}]," OPT "\"field-id\":132},"
        "{\"name\":\"equality_ids\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"int\","
        "\"element-id\":136}]," OPT "\"field-id\":135},"
        "{\"name\":\"sort_order_id\",\"type\":[\"null\",\"int\"]," OPT "\"field-id\":140},"
        "{\"name\":\"referenced_data_file\",\"type\":[\"null\",\"string\"]," OPT
        "\"field-id\":143}"
        "]},\"field-id\":2}]}");
}

static const char MLIST_SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
    "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
    "{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"
    "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"
    "{\"name\":\"content\",\"type\":\"int\",\"field-id\":517},"
    "{\"name\":\"sequence_number\",\"type\":\"long\",\"field-id\":515},"
    "{\"name\":\"min_sequence_number\",\"type\":\"long\",\"field-id\":516},"
    "{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"field-id\":503},"
    "{\"name\":\"added_files_count\",\"type\":\"int\",\"field-id\":504},"
    "{\"name\":\"existing_files_count\",\"type\":\"int\",\"field-id\":505},"
    "{\"name\":\"deleted_files_count\",\"type\":\"int\",\"field-id\":506},"
    "{\"name\":\"added_rows_count\",\"type\":\"long\",\"field-id\":512},"
    "{\"name\":\"existing_rows_count\",\"type\":\"long\",\"field-id\":513},"
    "{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"field-id\":514},"
    "{\"name\":\"partitions\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{"
    "\"type\":\"record\",\"name\":\"r508\",\"fields\":["
    "{\"name\":\"contains_null\",\"type\":\"boolean\",\"field-id\":509},"
    "{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"]," OPT "\"field-id\":518},"
    "{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"]," OPT "\"field-id\":510},"
    "{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"]," OPT "\"field-id\":511}"
    "]},\"element-id\":508}]," OPT "\"field-id\":507},"
    "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"]," OPT "\"field-id\":519}"
    "]}";

/* ---- encoding helpers ----------------------------------------------------- */

static int put_opt_long(zx_buf *b, int has, int64_t v)
{
    if (!has)
        return zx_avro_put_union(b, 0);
    return zx_avro_put_union(b, 1) < 0 || zx_avro_put_long(b, v) < 0 ? -1 : 0;
}

static int put_opt_bytes(zx_buf *b, const uint8_t *p, size_t n)
{
    if (!p)
        return zx_avro_put_union(b, 0);
    return zx_avro_put_union(b, 1) < 0 || zx_avro_put_bytes(b, p, n) < 0 ? -1 : 0;
}

static int put_counts(zx_buf *b, const zx_ice_count *c, size_t n)
{
    if (!c)
        return zx_avro_put_union(b, 0);
    if (zx_avro_put_union(b, 1) < 0)
        return -1;
    if (n && zx_avro_put_block(b, (int64_t)n) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (zx_avro_put_int(b, c[i].id) < 0 || zx_avro_put_long(b, c[i].n) < 0)
            return -1;
    return zx_avro_put_block(b, 0);
}

static int put_bounds(zx_buf *b, const zx_ice_bound *c, size_t n)
{
    if (!c)
        return zx_avro_put_union(b, 0);
    if (zx_avro_put_union(b, 1) < 0)
        return -1;
    if (n && zx_avro_put_block(b, (int64_t)n) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (zx_avro_put_int(b, c[i].id) < 0 || zx_avro_put_bytes(b, c[i].p, c[i].len) < 0)
            return -1;
    return zx_avro_put_block(b, 0);
}

/* ---- manifests ------------------------------------------------------------ */

typedef struct psum {          /* what the entries said of one partition field */
    int contains_null, contains_nan, has_bounds;
    int64_t ilo, ihi;
    double dlo, dhi;
    zx_buf slo, shi;
    uint8_t blo[8], bhi[8];    /* the bounds' bytes for fixed-width types */
} psum;

struct zx_ice_manifest {
    int content, spec_id;
    zx_ice_pfield *pf;
    size_t npf;
    char **pnames;
    psum *sums;
    zx_ice_fsummary *fsum;     /* made by finish from sums */
    zx_avro_writer *w;
    zx_buf file;               /* the container file as it is written */
    int finished, failed;
    int32_t counts[3];         /* entries by status */
    int64_t rows[3];
    int64_t min_seq;           /* -1: none */
};

void zx_ice_manifest_free(zx_ice_manifest *m)
{
    if (!m)
        return;
    zx_avro_free(m->w);
    zx_buf_free(&m->file);
    for (size_t i = 0; i < m->npf; i++) {
        free(m->pnames ? m->pnames[i] : NULL);
        if (m->sums) {
            zx_buf_free(&m->sums[i].slo);
            zx_buf_free(&m->sums[i].shi);
        }
    }
    free(m->pnames);
    free(m->pf);
    free(m->sums);
    free(m->fsum);
    free(m);
}

int zx_ice_manifest_open(const zx_ice_manifest_args *a, zx_ice_manifest **out, char *err,
                         size_t errlen)
{
    *out = NULL;
    if (!a->schema_json || (a->content != 0 && a->content != 1) ||
        (a->npfields && !a->pfields)) {
        snprintf(err, errlen, "iceberg manifest: no schema, content %d, or no partition fields",
                 a->content);
        return -1;
    }
    for (size_t i = 0; i < a->npfields; i++)
        if (!a->pfields[i].name || !a->pfields[i].name[0] || a->pfields[i].field_id < 0 ||
            !ptype_avro(a->pfields[i].type)) {
            snprintf(err, errlen, "iceberg manifest: partition field %zu: no name, a negative "
                     "id or an unknown type", i);
            return -1;
        }
    zx_ice_manifest *m = calloc(1, sizeof(*m));
    zx_buf schema = {0};
    char num[2][24];
    if (!m)
        goto oom;
    m->content = a->content;
    m->spec_id = a->partition_spec_id;
    m->min_seq = -1;
    m->npf = a->npfields;
    if (m->npf) {
        m->pf = calloc(m->npf, sizeof(*m->pf));
        m->pnames = calloc(m->npf, sizeof(*m->pnames));
        m->sums = calloc(m->npf, sizeof(*m->sums));
        m->fsum = calloc(m->npf, sizeof(*m->fsum));
        if (!m->pf || !m->pnames || !m->sums || !m->fsum)
            goto oom;
        for (size_t i = 0; i < m->npf; i++) {
            m->pf[i] = a->pfields[i];
            if (!(m->pnames[i] = strdup(a->pfields[i].name)))
                goto oom;
            m->pf[i].name = m->pnames[i];
        }
    }
    if (manifest_schema(&schema, m->pf, m->npf) < 0)
        goto oom;
    snprintf(num[0], sizeof(num[0]), "%d", (int)a->schema_id);
    snprintf(num[1], sizeof(num[1]), "%d", (int)a->partition_spec_id);
    const char *spec = a->partition_spec_json ? a->partition_spec_json : "[]";
    const char *content = a->content ? "deletes" : "data";
    zx_avro_meta meta[] = {
        {"schema", a->schema_json, strlen(a->schema_json)},
        {"schema-id", num[0], strlen(num[0])},
        {"partition-spec", spec, strlen(spec)},
        {"partition-spec-id", num[1], strlen(num[1])},
        {"format-version", "2", 1},
        {"content", content, strlen(content)},
    };
    zx_avro_opts o = {.codec = a->codec, .meta = meta, .nmeta = sizeof(meta) / sizeof(meta[0]),
                      .out = &m->file, .sync = a->sync};
    if (zx_avro_open(schema.p, schema.len, &o, &m->w, err, errlen) < 0)
        goto failed;
    zx_buf_free(&schema);
    *out = m;
    return 0;
oom:
    snprintf(err, errlen, "iceberg manifest: out of memory");
failed:
    zx_buf_free(&schema);
    zx_ice_manifest_free(m);
    return -1;
}

/* Unsigned byte-wise order (UTF-8 strings: code point order). */
static int lexcmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a ? a : "", b ? b : "", an < bn ? an : bn);
    if (c)
        return c;
    return an < bn ? -1 : an > bn;
}

/* Encode one partition value and fold it into the field's summary. */
static int put_pvalue(zx_buf *b, const zx_ice_pfield *f, psum *s, const zx_ice_pvalue *v,
                      char *err, size_t errlen)
{
    if (v->is_null) {
        s->contains_null = 1;
        return zx_avro_put_union(b, 0);
    }
    if (zx_avro_put_union(b, 1) < 0)
        return -1;
    switch (f->type) {
    case ZX_ICE_P_INT:
    case ZX_ICE_P_DATE:
        if (v->i < INT32_MIN || v->i > INT32_MAX) {
            snprintf(err, errlen, "iceberg manifest: partition field %s: %lld is not an int",
                     f->name, (long long)v->i);
            return -2;
        }
        /* fall through */
    case ZX_ICE_P_LONG:
    case ZX_ICE_P_TIMESTAMP:
    case ZX_ICE_P_TIMESTAMPTZ:
        if (!s->has_bounds || v->i < s->ilo)
            s->ilo = v->i;
        if (!s->has_bounds || v->i > s->ihi)
            s->ihi = v->i;
        s->has_bounds = 1;
        return zx_avro_put_long(b, v->i);
    case ZX_ICE_P_BOOLEAN:
        if (!s->has_bounds || (v->i != 0) < s->ilo)
            s->ilo = v->i != 0;
        if (!s->has_bounds || (v->i != 0) > s->ihi)
            s->ihi = v->i != 0;
        s->has_bounds = 1;
        return zx_avro_put_boolean(b, v->i != 0);
    case ZX_ICE_P_DOUBLE:
        if (isnan(v->d)) {
            s->contains_nan = 1;
        } else {
            /* -0.0 before +0.0 */
            if (!s->has_bounds || v->d < s->dlo || (v->d == s->dlo && signbit(v->d)))
                s->dlo = v->d;
            if (!s->has_bounds || v->d > s->dhi || (v->d == s->dhi && !signbit(v->d)))
                s->dhi = v->d;
            s->has_bounds = 1;
        }
        return zx_avro_put_double(b, v->d);
    case ZX_ICE_P_STRING:
    case ZX_ICE_P_BINARY:
        if (!v->s && v->len) {
            snprintf(err, errlen, "iceberg manifest: partition field %s: no %s", f->name,
                     f->type == ZX_ICE_P_STRING ? "string" : "bytes");
            return -2;
        }
        {
            const char *p = v->s ? v->s : "";
            if (!s->has_bounds || lexcmp(p, v->len, s->slo.p, s->slo.len) < 0) {
                zx_buf_reset(&s->slo);
                if (zx_buf_put(&s->slo, p, v->len) < 0)
                    return -1;
            }
            if (!s->has_bounds || lexcmp(p, v->len, s->shi.p, s->shi.len) > 0) {
                zx_buf_reset(&s->shi);
                if (zx_buf_put(&s->shi, p, v->len) < 0)
                    return -1;
            }
            s->has_bounds = 1;
            return zx_avro_put_bytes(b, p, v->len);
        }
    }
    return -1;
}

int zx_ice_manifest_add(zx_ice_manifest *m, const zx_ice_entry *e, char *err, size_t errlen)
{
    if (m->failed || m->finished) {
        snprintf(err, errlen, "iceberg manifest: the writer %s", m->failed ? "failed before"
                                                                           : "is finished");
        return -1;
    }
    if (e->status < 0 || e->status > 2 || e->content < 0 || e->content > 2 || !e->file_path ||
        (m->npf && !e->partition) || e->record_count < 0 || e->file_size_in_bytes < 0 ||
        (m->content == 0 && e->content != 0) || (m->content == 1 && e->content == 0)) {
        snprintf(err, errlen, "iceberg manifest: entry %s: bad status %d, content %d (manifest "
                 "of %s), no partition, or a negative count",
                 e->file_path ? e->file_path : "(no file_path)", e->status, e->content,
                 m->content ? "deletes" : "data");
        return -1;
    }
    zx_buf *b = zx_avro_datum(m->w);
    size_t len0 = b->len;
    int rc;
    if (zx_avro_put_int(b, e->status) < 0 ||
        put_opt_long(b, e->has_snapshot_id, e->snapshot_id) < 0 ||
        put_opt_long(b, e->has_sequence_number, e->sequence_number) < 0 ||
        put_opt_long(b, e->has_file_sequence_number, e->file_sequence_number) < 0 ||
        zx_avro_put_int(b, e->content) < 0 || zx_avro_put_str(b, e->file_path) < 0 ||
        zx_avro_put_str(b, e->file_format ? e->file_format : "PARQUET") < 0)
        goto oom;
    for (size_t i = 0; i < m->npf; i++)
        if ((rc = put_pvalue(b, &m->pf[i], &m->sums[i], &e->partition[i], err, errlen)) < 0) {
            if (rc == -1)
                goto oom;
            goto failed;
        }
    if (zx_avro_put_long(b, e->record_count) < 0 || zx_avro_put_long(b, e->file_size_in_bytes) < 0 ||
        put_counts(b, e->column_sizes, e->ncolumn_sizes) < 0 ||
        put_counts(b, e->value_counts, e->nvalue_counts) < 0 ||
        put_counts(b, e->null_value_counts, e->nnull_value_counts) < 0 ||
        put_counts(b, e->nan_value_counts, e->nnan_value_counts) < 0 ||
        put_bounds(b, e->lower_bounds, e->nlower_bounds) < 0 ||
        put_bounds(b, e->upper_bounds, e->nupper_bounds) < 0 ||
        put_opt_bytes(b, e->key_metadata, e->key_metadata_len) < 0)
        goto oom;
    if (!e->split_offsets) {
        if (zx_avro_put_union(b, 0) < 0)
            goto oom;
    } else {
        if (zx_avro_put_union(b, 1) < 0 ||
            (e->nsplit_offsets && zx_avro_put_block(b, (int64_t)e->nsplit_offsets) < 0))
            goto oom;
        for (size_t i = 0; i < e->nsplit_offsets; i++)
            if (zx_avro_put_long(b, e->split_offsets[i]) < 0)
                goto oom;
        if (zx_avro_put_block(b, 0) < 0)
            goto oom;
    }
    if (!e->equality_ids) {
        if (zx_avro_put_union(b, 0) < 0)
            goto oom;
    } else {
        if (zx_avro_put_union(b, 1) < 0 ||
            (e->nequality_ids && zx_avro_put_block(b, (int64_t)e->nequality_ids) < 0))
            goto oom;
        for (size_t i = 0; i < e->nequality_ids; i++)
            if (zx_avro_put_int(b, e->equality_ids[i]) < 0)
                goto oom;
        if (zx_avro_put_block(b, 0) < 0)
            goto oom;
    }
    if (put_opt_long(b, e->has_sort_order_id, e->sort_order_id) < 0)
        goto oom;
    if (!e->referenced_data_file ? zx_avro_put_union(b, 0) < 0
                                 : (zx_avro_put_union(b, 1) < 0 ||
                                    zx_avro_put_str(b, e->referenced_data_file) < 0))
        goto oom;
    if (zx_avro_end_record(m->w, err, errlen) < 0)
        goto failed;
    m->counts[e->status]++;
    m->rows[e->status] += e->record_count;
    if (e->status != 2 && e->has_sequence_number &&
        (m->min_seq < 0 || e->sequence_number < m->min_seq))
        m->min_seq = e->sequence_number;
    return 0;
oom:
    snprintf(err, errlen, "iceberg manifest: out of memory");
failed:
    b->len = len0;
    m->failed = 1;
    return -1;
}

int zx_ice_manifest_finish(zx_ice_manifest *m, zx_buf *out, char *err, size_t errlen)
{
    if (m->failed || m->finished) {
        snprintf(err, errlen, "iceberg manifest: the writer %s", m->failed ? "failed before"
                                                                           : "is finished");
        return -1;
    }
    if (zx_avro_finish(m->w, NULL, err, errlen) < 0) {
        m->failed = 1;
        return -1;
    }
    if (zx_buf_put(out, m->file.p, m->file.len) < 0) {
        snprintf(err, errlen, "iceberg manifest: out of memory");
        m->failed = 1;
        return -1;
    }
    for (size_t i = 0; i < m->npf; i++) {
        psum *s = &m->sums[i];
        zx_ice_fsummary *f = &m->fsum[i];
        memset(f, 0, sizeof(*f));
        f->contains_null = s->contains_null;
        if (m->pf[i].type == ZX_ICE_P_DOUBLE) {
            f->has_contains_nan = 1;
            f->contains_nan = s->contains_nan;
        }
        if (!s->has_bounds)
            continue;
        switch (m->pf[i].type) {
        case ZX_ICE_P_INT:
        case ZX_ICE_P_DATE:
            f->lower_len = zx_ice_bound_int((int32_t)s->ilo, s->blo);
            f->upper_len = zx_ice_bound_int((int32_t)s->ihi, s->bhi);
            break;
        case ZX_ICE_P_LONG:
        case ZX_ICE_P_TIMESTAMP:
        case ZX_ICE_P_TIMESTAMPTZ:
            f->lower_len = zx_ice_bound_long(s->ilo, s->blo);
            f->upper_len = zx_ice_bound_long(s->ihi, s->bhi);
            break;
        case ZX_ICE_P_DOUBLE:
            f->lower_len = zx_ice_bound_double(s->dlo, s->blo);
            f->upper_len = zx_ice_bound_double(s->dhi, s->bhi);
            break;
        case ZX_ICE_P_BOOLEAN:
            f->lower_len = zx_ice_bound_boolean((int)s->ilo, s->blo);
            f->upper_len = zx_ice_bound_boolean((int)s->ihi, s->bhi);
            break;
        case ZX_ICE_P_STRING:
        case ZX_ICE_P_BINARY:
            /* an empty string's bytes: a non-NULL pointer of length 0 */
            f->lower = (const uint8_t *)(s->slo.p ? s->slo.p : "");
            f->lower_len = s->slo.len;
            f->upper = (const uint8_t *)(s->shi.p ? s->shi.p : "");
            f->upper_len = s->shi.len;
            continue;
        }
        f->lower = s->blo;
        f->upper = s->bhi;
    }
    m->finished = 1;
    return 0;
}

int zx_ice_manifest_summary(const zx_ice_manifest *m, zx_ice_mfile *out)
{
    if (!m->finished)
        return -1;
    out->partition_spec_id = m->spec_id;
    out->content = m->content;
    out->existing_files_count = m->counts[0];
    out->added_files_count = m->counts[1];
    out->deleted_files_count = m->counts[2];
    out->existing_rows_count = m->rows[0];
    out->added_rows_count = m->rows[1];
    out->deleted_rows_count = m->rows[2];
    out->min_sequence_number = m->min_seq;
    out->npartitions = m->npf;
    out->partitions = m->npf ? m->fsum : NULL;
    return 0;
}

/* ---- manifest lists ------------------------------------------------------- */

int zx_ice_mlist_write(const zx_ice_mlist_args *a, const zx_ice_mfile *files, size_t n,
                       zx_buf *out, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        const zx_ice_mfile *f = &files[i];
        if (!f->manifest_path || (f->content != 0 && f->content != 1) ||
            f->added_files_count < 0 || f->existing_files_count < 0 ||
            f->deleted_files_count < 0 || f->added_rows_count < 0 ||
            f->existing_rows_count < 0 || f->deleted_rows_count < 0 ||
            (f->npartitions && !f->partitions)) {
            snprintf(err, errlen, "iceberg manifest list: manifest %zu (%s): no path, content "
                     "%d, or a negative count", i,
                     f->manifest_path ? f->manifest_path : "-", f->content);
            return -1;
        }
    }
    char num[3][24];
    snprintf(num[0], sizeof(num[0]), "%lld", (long long)a->snapshot_id);
    if (a->has_parent_snapshot_id)
        snprintf(num[1], sizeof(num[1]), "%lld", (long long)a->parent_snapshot_id);
    else
        snprintf(num[1], sizeof(num[1]), "null");
    snprintf(num[2], sizeof(num[2]), "%lld", (long long)a->sequence_number);
    zx_avro_meta meta[] = {
        {"snapshot-id", num[0], strlen(num[0])},
        {"parent-snapshot-id", num[1], strlen(num[1])},
        {"sequence-number", num[2], strlen(num[2])},
        {"format-version", "2", 1},
    };
    zx_buf file = {0};
    zx_avro_writer *w = NULL;
    zx_avro_opts o = {.codec = a->codec, .meta = meta, .nmeta = sizeof(meta) / sizeof(meta[0]),
                      .out = &file, .sync = a->sync};
    int rc = -1;
    if (zx_avro_open(MLIST_SCHEMA, sizeof(MLIST_SCHEMA) - 1, &o, &w, err, errlen) < 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        const zx_ice_mfile *f = &files[i];
        zx_buf *b = zx_avro_datum(w);
        if (zx_avro_put_str(b, f->manifest_path) < 0 ||
            zx_avro_put_long(b, f->manifest_length) < 0 ||
            zx_avro_put_int(b, f->partition_spec_id) < 0 || zx_avro_put_int(b, f->content) < 0 ||
            zx_avro_put_long(b, f->sequence_number) < 0 ||
            zx_avro_put_long(b, f->min_sequence_number) < 0 ||
            zx_avro_put_long(b, f->added_snapshot_id) < 0 ||
            zx_avro_put_int(b, f->added_files_count) < 0 ||
            zx_avro_put_int(b, f->existing_files_count) < 0 ||
            zx_avro_put_int(b, f->deleted_files_count) < 0 ||
            zx_avro_put_long(b, f->added_rows_count) < 0 ||
            zx_avro_put_long(b, f->existing_rows_count) < 0 ||
            zx_avro_put_long(b, f->deleted_rows_count) < 0)
            goto oom;
        if (!f->partitions) {
            if (zx_avro_put_union(b, 0) < 0)
                goto oom;
        } else {
            if (zx_avro_put_union(b, 1) < 0 ||
                (f->npartitions && zx_avro_put_block(b, (int64_t)f->npartitions) < 0))
                goto oom;
            for (size_t k = 0; k < f->npartitions; k++) {
                const zx_ice_fsummary *s = &f->partitions[k];
                if (zx_avro_put_boolean(b, s->contains_null) < 0 ||
                    (s->has_contains_nan
                         ? (zx_avro_put_union(b, 1) < 0 ||
                            zx_avro_put_boolean(b, s->contains_nan) < 0)
                         : zx_avro_put_union(b, 0) < 0) ||
                    put_opt_bytes(b, s->lower, s->lower_len) < 0 ||
                    put_opt_bytes(b, s->upper, s->upper_len) < 0)
                    goto oom;
            }
            if (zx_avro_put_block(b, 0) < 0)
                goto oom;
        }
        if (put_opt_bytes(b, f->key_metadata, f->key_metadata_len) < 0)
            goto oom;
        if (zx_avro_end_record(w, err, errlen) < 0)
            goto done;
    }
    if (zx_avro_finish(w, NULL, err, errlen) < 0)
        goto done;
    if (zx_buf_put(out, file.p, file.len) < 0)
        goto oom;
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "iceberg manifest list: out of memory");
done:
    zx_avro_free(w);
    zx_buf_free(&file);
    return rc;
}
