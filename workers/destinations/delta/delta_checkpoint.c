/*
 * delta_checkpoint.c — a Delta table's state as a checkpoint Parquet file
 * (delta_checkpoint.h).
 *
 * The schema is a static tree (struct, map<string,string>, list<string>,
 * leaves string / long / int / boolean).  Each action's JSON object is
 * shredded into the leaf columns the Dremel way: every leaf gets one
 * (repetition, definition) level pair per value slot, and a value only
 * where the slot is defined to the leaf.  Levels of a map (an optional
 * group MAP holding a repeated group key_value of a required key and an
 * optional value) and of a list (optional group LIST, repeated group
 * list, optional element):
 *
 *   the map / list is null          def d      (d: the levels above)
 *   it is empty                     def d + 1
 *   an entry, its key / element     def d + 2 / d + 3 (element null: d + 2)
 *   an entry's value                def d + 3 (null: d + 2)
 *   repetition                      0 for the first entry of a row, 1 after
 *
 * Each column is one data page v1: repetition levels, definition levels
 * (each an RLE run list after its 4-byte length), then the PLAIN values;
 * the page is zstd-compressed.  The footer is written with
 * formats/thrift_compact.h.
 *
 * It must never: write to the store, or change the table.
 */
#include "workers/destinations/delta/delta_checkpoint.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/buf.h"
#include "common/util.h"
#include "formats/thrift_compact.h"

enum { K_STRUCT, K_MAP, K_LIST, K_STR, K_LONG, K_INT, K_BOOL };

typedef struct node {
    const char *name;
    int kind;
    const struct node *kids;     /* K_STRUCT: children, ended by a NULL name */
} node;

#define LEAF(n, k) { n, k, NULL }
#define END { NULL, 0, NULL }

static const node FORMAT[] = { LEAF("provider", K_STR), LEAF("options", K_MAP), END };
static const node TXN[] = { LEAF("appId", K_STR), LEAF("version", K_LONG),
                            LEAF("lastUpdated", K_LONG), END };
static const node DV[] = { LEAF("storageType", K_STR), LEAF("pathOrInlineDv", K_STR),
                           LEAF("offset", K_INT), LEAF("sizeInBytes", K_INT),
                           LEAF("cardinality", K_LONG), END };
static const node ADD[] = { LEAF("path", K_STR), LEAF("partitionValues", K_MAP),
                            LEAF("size", K_LONG), LEAF("modificationTime", K_LONG),
                            LEAF("dataChange", K_BOOL), LEAF("stats", K_STR),
                            LEAF("tags", K_MAP), { "deletionVector", K_STRUCT, DV },
                            LEAF("baseRowId", K_LONG),
                            LEAF("defaultRowCommitVersion", K_LONG),
                            LEAF("clusteringProvider", K_STR), END };
static const node REMOVE[] = { LEAF("path", K_STR), LEAF("deletionTimestamp", K_LONG),
                               LEAF("dataChange", K_BOOL),
                               LEAF("extendedFileMetadata", K_BOOL),
                               LEAF("partitionValues", K_MAP), LEAF("size", K_LONG),
                               { "deletionVector", K_STRUCT, DV }, END };
static const node METADATA[] = { LEAF("id", K_STR), LEAF("name", K_STR),
                                 LEAF("description", K_STR), { "format", K_STRUCT, FORMAT },
                                 LEAF("schemaString", K_STR),
                                 LEAF("partitionColumns", K_LIST),
                                 LEAF("configuration", K_MAP), LEAF("createdTime", K_LONG),
                                 END };
static const node PROTOCOL[] = { LEAF("minReaderVersion", K_INT),
                                 LEAF("minWriterVersion", K_INT),
                                 LEAF("readerFeatures", K_LIST),
                                 LEAF("writerFeatures", K_LIST), END };
/* the top-level columns, in file order; ROW_* index them */
static const node TOP[] = { { "txn", K_STRUCT, TXN }, { "add", K_STRUCT, ADD },
                            { "remove", K_STRUCT, REMOVE },
                            { "metaData", K_STRUCT, METADATA },
                            { "protocol", K_STRUCT, PROTOCOL }, END };
enum { ROW_TXN, ROW_ADD, ROW_REMOVE, ROW_METADATA, ROW_PROTOCOL };

/* Parquet's numbers (parquet.thrift). */
enum { PT_BOOLEAN = 0, PT_INT32 = 1, PT_INT64 = 2, PT_BYTE_ARRAY = 6 };
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1, REP_REPEATED = 2 };
enum { CT_UTF8 = 0, CT_MAP = 1, CT_LIST = 3 };
enum { ENC_PLAIN = 0, ENC_RLE = 3, CODEC_ZSTD = 6, PAGE_DATA = 0 };

#define MAX_COLS 64
#define PATH_MAX_DEPTH 5

/* One leaf column's buffered levels and values. */
typedef struct col {
    const char *path[PATH_MAX_DEPTH];
    int npath;
    int ptype;
    int maxdef, maxrep;
    zx_buf def, rep;           /* one byte per slot */
    zx_buf vals;               /* PLAIN values (booleans: one byte each until paged) */
    uint64_t slots;
} col;

typedef struct ckpt {
    col cols[MAX_COLS];
    int ncols;
    int failed;                /* out of memory while buffering */
} ckpt;

/* ---- schema -> leaf columns ------------------------------------------- */

static int leaf_add(ckpt *c, const char **path, int npath, int ptype, int maxdef, int maxrep)
{
    if (c->ncols == MAX_COLS || npath > PATH_MAX_DEPTH)
        return -1;
    col *k = &c->cols[c->ncols++];
    memset(k, 0, sizeof(*k));
    memcpy(k->path, path, npath * sizeof(*path));
    k->npath = npath;
    k->ptype = ptype;
    k->maxdef = maxdef;
    k->maxrep = maxrep;
    return 0;
}

static int ptype_of(int kind)
{
    return kind == K_LONG ? PT_INT64 : kind == K_INT ? PT_INT32
           : kind == K_BOOL ? PT_BOOLEAN : PT_BYTE_ARRAY;
}

/* Add the leaves of n (an optional node at path[0..depth), whose parent
 * is defined at level d). */
static int leaves_of(ckpt *c, const node *n, const char **path, int depth, int d)
{
    if (depth >= PATH_MAX_DEPTH - 2)
        return -1;
    path[depth] = n->name;
    switch (n->kind) {
    case K_STRUCT:
        for (const node *k = n->kids; k->name; k++)
            if (leaves_of(c, k, path, depth + 1, d + 1) < 0)
                return -1;
        return 0;
    case K_MAP:
        path[depth + 1] = "key_value";
        path[depth + 2] = "key";
        if (leaf_add(c, path, depth + 3, PT_BYTE_ARRAY, d + 2, 1) < 0)
            return -1;
        path[depth + 2] = "value";
        return leaf_add(c, path, depth + 3, PT_BYTE_ARRAY, d + 3, 1);
    case K_LIST:
        path[depth + 1] = "list";
        path[depth + 2] = "element";
        return leaf_add(c, path, depth + 3, PT_BYTE_ARRAY, d + 3, 1);
    default:
        return leaf_add(c, path, depth + 1, ptype_of(n->kind), d + 1, 0);
    }
}

/* ---- shredding JSON into the leaves ------------------------------------ */

static void put_level(ckpt *c, col *k, int rep, int def)
{
    uint8_t r = (uint8_t)rep, d = (uint8_t)def;
    if (zx_buf_put(&k->rep, &r, 1) < 0 || zx_buf_put(&k->def, &d, 1) < 0)
        c->failed = 1;
    k->slots++;
}

static void put_bytes(ckpt *c, col *k, const char *s, size_t n)
{
    uint8_t len[4] = { (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24) };
    if (n > INT32_MAX || zx_buf_put(&k->vals, len, 4) < 0 || zx_buf_put(&k->vals, s, n) < 0)
        c->failed = 1;
}

/* A string value: JSON strings as they are, other JSON values as their
 * JSON text (a map value written as a number, say). */
static void put_string(ckpt *c, col *k, const json_t *v)
{
    if (json_is_string(v)) {
        put_bytes(c, k, json_string_value(v), json_string_length(v));
        return;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s) {
        c->failed = 1;
        return;
    }
    put_bytes(c, k, s, strlen(s));
    free(s);
}

static int leaf_count(const node *n)
{
    if (n->kind == K_STRUCT) {
        int t = 0;
        for (const node *k = n->kids; k->name; k++)
            t += leaf_count(k);
        return t;
    }
    return n->kind == K_MAP ? 2 : 1;
}

/* Null slots (rep, def) in every leaf of n, from column *at on. */
static void put_nulls(ckpt *c, const node *n, int rep, int def, int *at)
{
    int m = leaf_count(n);
    for (int i = 0; i < m; i++)
        put_level(c, &c->cols[(*at)++], rep, def);
}

/* Shred v (NULL or JSON null: the node is null) into n's leaves from
 * column *at on; rep is the slot's repetition level, d the definition
 * level of n's parent. */
static void shred(ckpt *c, const node *n, const json_t *v, int rep, int d, int *at)
{
    if (!v || json_is_null(v)) {
        put_nulls(c, n, rep, d, at);
        return;
    }
    col *k = &c->cols[*at];
    switch (n->kind) {
    case K_STRUCT:
        if (!json_is_object(v)) {
            put_nulls(c, n, rep, d, at);
            return;
        }
        for (const node *kid = n->kids; kid->name; kid++)
            shred(c, kid, json_object_get(v, kid->name), rep, d + 1, at);
        return;
    case K_MAP: {
        if (!json_is_object(v) || json_object_size(v) == 0) {
            put_nulls(c, n, rep, json_is_object(v) ? d + 1 : d, at);
            return;
        }
        const char *key;
        json_t *val;
        int r = rep;
        json_object_foreach((json_t *)v, key, val) {
            put_level(c, &k[0], r, d + 2);
            put_bytes(c, &k[0], key, strlen(key));
            if (json_is_null(val)) {
                put_level(c, &k[1], r, d + 2);
            } else {
                put_level(c, &k[1], r, d + 3);
                put_string(c, &k[1], val);
            }
            r = 1;
        }
        *at += 2;
        return;
    }
    case K_LIST: {
        if (!json_is_array(v) || json_array_size(v) == 0) {
            put_nulls(c, n, rep, json_is_array(v) ? d + 1 : d, at);
            return;
        }
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            int r = i ? 1 : rep;
            if (json_is_null(e)) {
                put_level(c, k, r, d + 2);
            } else {
                put_level(c, k, r, d + 3);
                put_string(c, k, e);
            }
        }
        *at += 1;
        return;
    }
    case K_STR:
        put_level(c, k, rep, d + 1);
        put_string(c, k, v);
        break;
    case K_LONG:
    case K_INT: {
        if (!json_is_integer(v)) {
            put_level(c, k, rep, d);
            break;
        }
        int64_t x = json_integer_value(v);
        uint8_t b[8];
        int w = n->kind == K_LONG ? 8 : 4;
        for (int i = 0; i < w; i++)
            b[i] = (uint8_t)((uint64_t)x >> (8 * i));
        put_level(c, k, rep, d + 1);
        if (zx_buf_put(&k->vals, b, w) < 0)
            c->failed = 1;
        break;
    }
    case K_BOOL: {
        if (!json_is_boolean(v)) {
            put_level(c, k, rep, d);
            break;
        }
        uint8_t b = json_is_true(v);
        put_level(c, k, rep, d + 1);
        if (zx_buf_put(&k->vals, &b, 1) < 0)
            c->failed = 1;
        break;
    }
    }
    (*at)++;
}

/* One row: the action v in top-level column `which`, null in the others. */
static void row(ckpt *c, int which, const json_t *v)
{
    int at = 0, i = 0;
    for (const node *n = TOP; n->name; n++, i++)
        shred(c, n, i == which ? v : NULL, 0, 0, &at);
}

/* ---- pages and the footer ---------------------------------------------- */

static int bit_width(int max)
{
    int w = 0;
    while (max >> w)
        w++;
    return w;
}

/* Levels lv[0..n) as an RLE/bit-packed hybrid of RLE runs only, after its
 * 4-byte length.  0 or -1. */
static int put_levels(zx_buf *out, const uint8_t *lv, size_t n, int max)
{
    size_t start = out->len;
    uint8_t hdr[16] = { 0 };      /* a run: its varint header and one value byte */
    if (zx_buf_put(out, hdr, 4) < 0)
        return -1;
    int vbytes = (bit_width(max) + 7) / 8;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && lv[j] == lv[i] && j - i < (1u << 30))
            j++;
        size_t h = zx_tc_uvarint(hdr, (uint64_t)(j - i) << 1);
        hdr[h] = lv[i];
        if (zx_buf_put(out, hdr, h + vbytes) < 0)
            return -1;
        i = j;
    }
    uint32_t len = (uint32_t)(out->len - start - 4);
    for (int i = 0; i < 4; i++)
        out->p[start + i] = (char)(len >> (8 * i));
    return 0;
}

/* The page body of k: levels, then values (booleans bit-packed). */
static int page_body(const col *k, zx_buf *out)
{
    if (k->maxrep && put_levels(out, (const uint8_t *)k->rep.p, k->slots, k->maxrep) < 0)
        return -1;
    if (k->maxdef && put_levels(out, (const uint8_t *)k->def.p, k->slots, k->maxdef) < 0)
        return -1;
    if (k->ptype != PT_BOOLEAN)
        return zx_buf_put(out, k->vals.p, k->vals.len);
    size_t nb = (k->vals.len + 7) / 8;
    if (zx_buf_reserve(out, nb) < 0)
        return -1;
    uint8_t *o = (uint8_t *)out->p + out->len;
    memset(o, 0, nb);
    for (size_t i = 0; i < k->vals.len; i++)
        if (k->vals.p[i])
            o[i / 8] |= (uint8_t)(1u << (i % 8));
    out->len += nb;
    return 0;
}

/* What the footer needs of one written column chunk. */
typedef struct chunk {
    int64_t offset, compressed, uncompressed;
} chunk;

static void schema_elem(zx_tc *t, const char *name, int rep, int ptype, int nkids, int ct)
{
    zx_tc_struct_begin(t);
    if (ptype >= 0)
        zx_tc_field_i32(t, 1, ptype);
    zx_tc_field_i32(t, 3, rep);
    zx_tc_field_string(t, 4, name);
    if (nkids >= 0)
        zx_tc_field_i32(t, 5, nkids);
    if (ct >= 0)
        zx_tc_field_i32(t, 6, ct);
    zx_tc_struct_end(t);
}

static int schema_count(const node *n)
{
    if (n->kind == K_STRUCT) {
        int t = 1;
        for (const node *k = n->kids; k->name; k++)
            t += schema_count(k);
        return t;
    }
    return n->kind == K_MAP ? 4 : n->kind == K_LIST ? 3 : 1;
}

static void schema_of(zx_tc *t, const node *n)
{
    int nk = 0;
    switch (n->kind) {
    case K_STRUCT:
        for (const node *k = n->kids; k->name; k++)
            nk++;
        schema_elem(t, n->name, REP_OPTIONAL, -1, nk, -1);
        for (const node *k = n->kids; k->name; k++)
            schema_of(t, k);
        return;
    case K_MAP:
        schema_elem(t, n->name, REP_OPTIONAL, -1, 1, CT_MAP);
        schema_elem(t, "key_value", REP_REPEATED, -1, 2, -1);
        schema_elem(t, "key", REP_REQUIRED, PT_BYTE_ARRAY, -1, CT_UTF8);
        schema_elem(t, "value", REP_OPTIONAL, PT_BYTE_ARRAY, -1, CT_UTF8);
        return;
    case K_LIST:
        schema_elem(t, n->name, REP_OPTIONAL, -1, 1, CT_LIST);
        schema_elem(t, "list", REP_REPEATED, -1, 1, -1);
        schema_elem(t, "element", REP_OPTIONAL, PT_BYTE_ARRAY, -1, CT_UTF8);
        return;
    default:
        schema_elem(t, n->name, REP_OPTIONAL, ptype_of(n->kind), -1,
                    n->kind == K_STR ? CT_UTF8 : -1);
    }
}

static void footer(zx_tc *t, const ckpt *c, const chunk *ch, uint64_t rows)
{
    int nschema = 1, ntop = 0;
    for (const node *n = TOP; n->name; n++, ntop++)
        nschema += schema_count(n);
    int64_t total = 0;
    for (int i = 0; i < c->ncols; i++)
        total += ch[i].uncompressed;
    zx_tc_struct_begin(t);
    zx_tc_field_i32(t, 1, 1);
    zx_tc_field_list_begin(t, 2, ZX_TC_STRUCT, (uint32_t)nschema);
    schema_elem(t, "schema", REP_REQUIRED, -1, ntop, -1);
    for (const node *n = TOP; n->name; n++)
        schema_of(t, n);
    zx_tc_field_i64(t, 3, (int64_t)rows);
    zx_tc_field_list_begin(t, 4, ZX_TC_STRUCT, 1);
    zx_tc_struct_begin(t);                               /* RowGroup */
    zx_tc_field_list_begin(t, 1, ZX_TC_STRUCT, (uint32_t)c->ncols);
    for (int i = 0; i < c->ncols; i++) {
        const col *k = &c->cols[i];
        zx_tc_struct_begin(t);                           /* ColumnChunk */
        zx_tc_field_i64(t, 2, ch[i].offset);
        zx_tc_field_struct_begin(t, 3);                  /* ColumnMetaData */
        zx_tc_field_i32(t, 1, k->ptype);
        zx_tc_field_list_begin(t, 2, ZX_TC_I32, 2);
        zx_tc_i32(t, ENC_PLAIN);
        zx_tc_i32(t, ENC_RLE);
        zx_tc_field_list_begin(t, 3, ZX_TC_BINARY, (uint32_t)k->npath);
        for (int p = 0; p < k->npath; p++)
            zx_tc_binary(t, k->path[p], strlen(k->path[p]));
        zx_tc_field_i32(t, 4, CODEC_ZSTD);
        zx_tc_field_i64(t, 5, (int64_t)k->slots);
        zx_tc_field_i64(t, 6, ch[i].uncompressed);
        zx_tc_field_i64(t, 7, ch[i].compressed);
        zx_tc_field_i64(t, 9, ch[i].offset);
        zx_tc_struct_end(t);
        zx_tc_struct_end(t);
    }
    zx_tc_field_i64(t, 2, total);
    zx_tc_field_i64(t, 3, (int64_t)rows);
    zx_tc_struct_end(t);
    zx_tc_field_string(t, 6, "zx");
    zx_tc_struct_end(t);
}

static void le32(uint8_t *o, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        o[i] = (uint8_t)(v >> (8 * i));
}

/* Write every column (a page each) and the footer through sink. */
static int write_file(ckpt *c, uint64_t rows, zx_delta_sink sink, void *ctx, char *err,
                      size_t errlen)
{
    int rc = -1;
    zx_buf body = {0}, z = {0};
    zx_tc h;
    zx_tc_init(&h);
    chunk ch[MAX_COLS];
    int64_t off = 4;
    if (sink(ctx, "PAR1", 4, err, errlen) < 0)
        goto out;
    for (int i = 0; i < c->ncols; i++) {
        col *k = &c->cols[i];
        zx_buf_reset(&body);
        if (page_body(k, &body) < 0)
            goto oom;
        size_t bound = ZSTD_compressBound(body.len);
        zx_buf_reset(&z);
        if (zx_buf_reserve(&z, bound) < 0)
            goto oom;
        size_t zn = ZSTD_compress(z.p, bound, body.p, body.len, 3);
        if (ZSTD_isError(zn)) {
            zx_seterr(err, errlen, "delta checkpoint: zstd: %s", ZSTD_getErrorName(zn));
            goto out;
        }
        if (body.len > INT32_MAX || zn > INT32_MAX || k->slots > INT32_MAX) {
            zx_seterr(err, errlen, "delta checkpoint: column %s.%s is larger than a "
                      "Parquet page may be", k->path[0], k->path[1]);
            goto out;
        }
        zx_tc_reset(&h);
        zx_tc_struct_begin(&h);                          /* PageHeader */
        zx_tc_field_i32(&h, 1, PAGE_DATA);
        zx_tc_field_i32(&h, 2, (int32_t)body.len);
        zx_tc_field_i32(&h, 3, (int32_t)zn);
        zx_tc_field_struct_begin(&h, 5);                 /* DataPageHeader */
        zx_tc_field_i32(&h, 1, (int32_t)k->slots);
        zx_tc_field_i32(&h, 2, ENC_PLAIN);
        zx_tc_field_i32(&h, 3, ENC_RLE);
        zx_tc_field_i32(&h, 4, ENC_RLE);
        zx_tc_struct_end(&h);
        zx_tc_struct_end(&h);
        if (h.failed)
            goto oom;
        ch[i].offset = off;
        ch[i].uncompressed = (int64_t)(h.len + body.len);
        ch[i].compressed = (int64_t)(h.len + zn);
        if (sink(ctx, h.buf, h.len, err, errlen) < 0 || sink(ctx, z.p, zn, err, errlen) < 0)
            goto out;
        off += ch[i].compressed;
    }
    zx_tc_reset(&h);
    footer(&h, c, ch, rows);
    if (h.failed)
        goto oom;
    uint8_t tail[8];
    le32(tail, (uint32_t)h.len);
    memcpy(tail + 4, "PAR1", 4);
    if (sink(ctx, h.buf, h.len, err, errlen) < 0 || sink(ctx, tail, 8, err, errlen) < 0)
        goto out;
    rc = 0;
    goto out;
oom:
    zx_seterr(err, errlen, "delta checkpoint: out of memory");
out:
    zx_buf_free(&body);
    zx_buf_free(&z);
    zx_tc_free(&h);
    return rc;
}

void zx_delta_checkpoint_name(int64_t v, char out[64])
{
    snprintf(out, 64, "%s/%020lld.checkpoint.parquet", ZX_DELTA_LOG_DIR, (long long)v);
}

int zx_delta_checkpoint(const zx_delta_table *t, zx_delta_sink sink, void *ctx,
                        uint64_t *rows, char *err, size_t errlen)
{
    *rows = 0;
    if (!t->protocol || !t->metadata)
        return zx_seterr(err, errlen, "delta checkpoint: the table has no %s action",
                         t->protocol ? "metaData" : "protocol");
    ckpt *c = calloc(1, sizeof(*c));
    if (!c)
        return zx_seterr(err, errlen, "delta checkpoint: out of memory");
    int rc = -1;
    const char *path[PATH_MAX_DEPTH];
    for (const node *n = TOP; n->name; n++)
        if (leaves_of(c, n, path, 0, 0) < 0) {
            zx_seterr(err, errlen, "delta checkpoint: the schema has too many columns");
            goto out;
        }
    uint64_t n = 0;
    row(c, ROW_PROTOCOL, t->protocol);
    row(c, ROW_METADATA, t->metadata);
    n += 2;
    const char *app;
    json_t *v;
    if (t->txns)
        json_object_foreach(t->txns, app, v) {
            json_t *a = json_pack("{s:s, s:O}", "appId", app, "version", v);
            if (!a) {
                c->failed = 1;
                break;
            }
            row(c, ROW_TXN, a);
            json_decref(a);
            n++;
        }
    for (size_t i = 0; i < t->nfiles && !c->failed; i++) {
        json_t *a = json_loads(t->files[i].add_json, 0, NULL);
        if (!json_is_object(a)) {
            json_decref(a);
            zx_seterr(err, errlen, "delta checkpoint: the add action of %s is not a JSON "
                      "object", t->files[i].path);
            goto out;
        }
        row(c, ROW_ADD, a);
        json_decref(a);
        n++;
    }
    if (c->failed) {
        zx_seterr(err, errlen, "delta checkpoint: out of memory");
        goto out;
    }
    if (write_file(c, n, sink, ctx, err, errlen) < 0)
        goto out;
    *rows = n;
    rc = 0;
out:
    for (int i = 0; i < c->ncols; i++) {
        zx_buf_free(&c->cols[i].def);
        zx_buf_free(&c->cols[i].rep);
        zx_buf_free(&c->cols[i].vals);
    }
    free(c);
    return rc;
}

char *zx_delta_last_checkpoint_json(int64_t version, uint64_t rows, uint64_t bytes)
{
    char *s = malloc(96);
    if (s)
        snprintf(s, 96, "{\"version\":%lld,\"size\":%llu,\"sizeInBytes\":%llu}",
                 (long long)version, (unsigned long long)rows, (unsigned long long)bytes);
    return s;
}
