/*
 * parquet_meta.c — Parquet's Thrift structures written with the compact
 * encoder: PageHeader (data page v1, dictionary page) and FileMetaData
 * (schema, row groups, column chunks, statistics, column orders).  Field
 * ids are those of parquet.thrift; each struct writes them in increasing
 * order.  Must never touch fd or the column buffers.
 */
#include <string.h>

#include "formats/parquet_int.h"

/* ConvertedType (parquet.thrift), -1: none. */
enum { CT_UTF8 = 0, CT_DECIMAL = 5, CT_DATE = 6, CT_TIMESTAMP_MICROS = 10, CT_JSON = 19 };

int pq_meta_codec(const zx_pq_writer *w)
{
    switch (w->o.codec) {
    case ZX_PQ_ZSTD:
        return PQ_CODEC_ZSTD;
    case ZX_PQ_SNAPPY:
        return PQ_CODEC_SNAPPY;
    default:
        return PQ_CODEC_UNCOMPRESSED;
    }
}

void pq_meta_page_header(zx_tc *t, int page_type, int32_t uncompressed, int32_t compressed,
                         int32_t num_values, int encoding)
{
    zx_tc_reset(t);
    zx_tc_struct_begin(t);
    zx_tc_field_i32(t, 1, page_type);
    zx_tc_field_i32(t, 2, uncompressed);
    zx_tc_field_i32(t, 3, compressed);
    if (page_type == PQ_PAGE_DATA) {
        zx_tc_field_struct_begin(t, 5);           /* DataPageHeader */
        zx_tc_field_i32(t, 1, num_values);
        zx_tc_field_i32(t, 2, encoding);
        zx_tc_field_i32(t, 3, PQ_ENC_RLE);         /* definition levels */
        zx_tc_field_i32(t, 4, PQ_ENC_RLE);         /* repetition levels */
        zx_tc_struct_end(t);
    } else {
        zx_tc_field_struct_begin(t, 7);           /* DictionaryPageHeader */
        zx_tc_field_i32(t, 1, num_values);
        zx_tc_field_i32(t, 2, encoding);
        zx_tc_struct_end(t);
    }
    zx_tc_struct_end(t);
}

/* An empty struct as field id of the innermost struct. */
static void empty_field(zx_tc *t, int16_t id)
{
    zx_tc_field_struct_begin(t, id);
    zx_tc_struct_end(t);
}

static void schema_leaf(zx_tc *t, const pq_col *c)
{
    int ct = -1;
    zx_tc_struct_begin(t);
    zx_tc_field_i32(t, 1, c->phys);
    if (c->phys == PQ_FLBA)
        zx_tc_field_i32(t, 2, c->flba_len);
    zx_tc_field_i32(t, 3, 1);                     /* OPTIONAL */
    zx_tc_field_string(t, 4, c->dc.name);
    switch (c->dc.type) {
    case ZX_DT_TEXT:
        ct = CT_UTF8;
        break;
    case ZX_DT_JSON:
        ct = CT_JSON;
        break;
    case ZX_DT_DATE:
        ct = CT_DATE;
        break;
    case ZX_DT_TIMESTAMP:
        ct = CT_TIMESTAMP_MICROS;
        break;
    case ZX_DT_DECIMAL:
        ct = CT_DECIMAL;
        break;
    default:
        break;
    }
    if (ct >= 0)
        zx_tc_field_i32(t, 6, ct);
    if (c->dc.type == ZX_DT_DECIMAL) {
        zx_tc_field_i32(t, 7, c->dc.scale);
        zx_tc_field_i32(t, 8, c->dc.precision);
    }
    if (c->field_id > 0)
        zx_tc_field_i32(t, 9, c->field_id);
    if (ct >= 0) {
        zx_tc_field_struct_begin(t, 10);          /* LogicalType (union) */
        switch (c->dc.type) {
        case ZX_DT_TEXT:
            empty_field(t, 1);                    /* STRING */
            break;
        case ZX_DT_JSON:
            empty_field(t, 12);                   /* JSON */
            break;
        case ZX_DT_DATE:
            empty_field(t, 6);                    /* DATE */
            break;
        case ZX_DT_TIMESTAMP:
            zx_tc_field_struct_begin(t, 8);       /* TIMESTAMP */
            zx_tc_field_bool(t, 1, 1);            /* isAdjustedToUTC */
            zx_tc_field_struct_begin(t, 2);       /* TimeUnit */
            empty_field(t, 2);                    /* MICROS */
            zx_tc_struct_end(t);
            zx_tc_struct_end(t);
            break;
        default:                                  /* DECIMAL */
            zx_tc_field_struct_begin(t, 5);
            zx_tc_field_i32(t, 1, c->dc.scale);
            zx_tc_field_i32(t, 2, c->dc.precision);
            zx_tc_struct_end(t);
            break;
        }
        zx_tc_struct_end(t);
    }
    zx_tc_struct_end(t);
}

static void statistics(zx_tc *t, const pq_stats *st)
{
    zx_tc_field_struct_begin(t, 12);
    if (st->has_minmax && st->legacy) {
        zx_tc_field_binary(t, 1, st->max, st->maxlen);
        zx_tc_field_binary(t, 2, st->min, st->minlen);
    }
    zx_tc_field_i64(t, 3, st->null_count);
    if (st->has_minmax) {
        zx_tc_field_binary(t, 5, st->max, st->maxlen);
        zx_tc_field_binary(t, 6, st->min, st->minlen);
    }
    if (st->nan_count >= 0)
        zx_tc_field_i64(t, 9, st->nan_count);
    zx_tc_struct_end(t);
}

static void column_chunk(zx_tc *t, const zx_pq_writer *w, const pq_col *c,
                         const pq_chunk_meta *m)
{
    zx_tc_struct_begin(t);
    zx_tc_field_i64(t, 2, m->file_offset);
    zx_tc_field_struct_begin(t, 3);               /* ColumnMetaData */
    zx_tc_field_i32(t, 1, c->phys);
    uint32_t nenc = (uint32_t)__builtin_popcount(m->encodings);
    zx_tc_field_list_begin(t, 2, ZX_TC_I32, nenc);
    for (int e = 0; e < 32; e++)
        if (m->encodings & (1u << e))
            zx_tc_i32(t, e);
    zx_tc_field_list_begin(t, 3, ZX_TC_BINARY, 1);
    zx_tc_binary(t, c->dc.name, strlen(c->dc.name));
    zx_tc_field_i32(t, 4, pq_meta_codec(w));
    zx_tc_field_i64(t, 5, m->num_values);
    zx_tc_field_i64(t, 6, m->total_uncompressed);
    zx_tc_field_i64(t, 7, m->total_compressed);
    zx_tc_field_i64(t, 9, m->data_page_offset);
    if (m->dict_page_offset >= 0)
        zx_tc_field_i64(t, 11, m->dict_page_offset);
    statistics(t, &m->st);
    zx_tc_struct_end(t);
    zx_tc_struct_end(t);
}

void pq_meta_footer(zx_tc *t, const zx_pq_writer *w)
{
    zx_tc_reset(t);
    zx_tc_struct_begin(t);
    zx_tc_field_i32(t, 1, 2);                     /* version */
    zx_tc_field_list_begin(t, 2, ZX_TC_STRUCT, (uint32_t)w->ncols + 1);
    zx_tc_struct_begin(t);                        /* the root */
    zx_tc_field_string(t, 4, "schema");
    zx_tc_field_i32(t, 5, (int32_t)w->ncols);
    zx_tc_struct_end(t);
    for (size_t i = 0; i < w->ncols; i++)
        schema_leaf(t, &w->cols[i]);
    zx_tc_field_i64(t, 3, (int64_t)w->rows);
    zx_tc_field_list_begin(t, 4, ZX_TC_STRUCT, w->nrgs);
    for (uint32_t g = 0; g < w->nrgs; g++) {
        const pq_rowgroup *rg = &w->rgs[g];
        zx_tc_struct_begin(t);
        zx_tc_field_list_begin(t, 1, ZX_TC_STRUCT, (uint32_t)w->ncols);
        for (size_t i = 0; i < w->ncols; i++)
            column_chunk(t, w, &w->cols[i], &rg->chunks[i]);
        zx_tc_field_i64(t, 2, rg->total_byte_size);
        zx_tc_field_i64(t, 3, rg->num_rows);
        zx_tc_field_i64(t, 5, rg->file_offset);
        zx_tc_field_i64(t, 6, rg->total_compressed);
        if (g <= INT16_MAX)
            zx_tc_field_i16(t, 7, (int16_t)g);
        zx_tc_struct_end(t);
    }
    zx_tc_field_string(t, 6, "zx version 0.1.0");
    zx_tc_field_list_begin(t, 7, ZX_TC_STRUCT, (uint32_t)w->ncols);
    for (size_t i = 0; i < w->ncols; i++) {
        zx_tc_struct_begin(t);                    /* ColumnOrder (union) */
        empty_field(t, 1);                        /* TYPE_ORDER */
        zx_tc_struct_end(t);
    }
    zx_tc_struct_end(t);
}
