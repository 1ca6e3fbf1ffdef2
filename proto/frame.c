/*
 * frame.c — encoder and decoder of the worker -> writer frame (frame.h).
 *
 * The encoder packs with msgpack-c into a caller-owned growable buffer.  The
 * decoder reads the msgpack bytes directly (see frame.h for why): every read
 * is bounds-checked against the end of the buffer and no count taken from
 * the input is ever used to size an allocation; the reader itself is in
 * frame_read.c.  This file must never crash or read out of bounds on
 * hostile input, and never know about SQL or rings.
 */
#include "proto/frame.h"
#include "proto/frame_read.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#define EXT_TIMESTAMP 1
#define EXT_JSON 2
#define FRAME_FIELDS 9

/* ------------------------------------------------------------------ */
/* encoder                                                             */

typedef struct enc {
    zx_buf *b;
    int failed;            /* sticky: a write ran out of memory */
} enc;

static int enc_write(void *data, const char *p, size_t n)
{
    enc *e = data;
    if (e->failed)
        return -1;
    if (n == 0)
        return 0;
    if (zx_buf_reserve(e->b, n) < 0) {
        e->failed = 1;
        return -1;
    }
    memcpy(e->b->p + e->b->len, p, n);
    e->b->len += n;
    return 0;
}

static void pack_cstr(msgpack_packer *pk, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    msgpack_pack_str_with_body(pk, s ? s : "", n);
}

static void pack_key(msgpack_packer *pk, const char *k)
{
    msgpack_pack_str_with_body(pk, k, 2);
}

/* ---- the cells: packed straight into the buffer -------------------- */
/* A cell per column and row: msgpack-c's packer calls enc_write once per
 * header and once per body, which cost more than the bytes.  Each row is
 * reserved once and its cells written in place, byte for byte as
 * msgpack-c packs them (msgpack_pack_int64, _double, _true/_false, _str,
 * _ext, _nil, _array: tests/unit/test_frame.c compares the two). */

static unsigned char *put_be(unsigned char *p, uint64_t v, int n)
{
    for (int k = n - 1; k >= 0; k--, v >>= 8)
        p[k] = (unsigned char)v;
    return p + n;
}

/* The most bytes put_value writes for v. */
static size_t value_bound(const zx_value *v)
{
    switch ((zx_type)v->type) {
    case ZX_T_TEXT: return 5 + (size_t)v->len;
    case ZX_T_TIMESTAMP: return 6 + 8 + (size_t)v->len;
    case ZX_T_JSON: return 6 + (size_t)v->len;
    default: return 9;
    }
}

static unsigned char *put_array(unsigned char *p, uint32_t n)
{
    if (n < 16) {
        *p++ = (unsigned char)(0x90 | n);
        return p;
    }
    if (n < 65536) {
        *p++ = 0xdc;
        return put_be(p, n, 2);
    }
    *p++ = 0xdd;
    return put_be(p, n, 4);
}

static unsigned char *put_int(unsigned char *p, int64_t d)
{
    if (d < -(1LL << 5)) {
        if (d < -(1LL << 31)) {
            *p++ = 0xd3;
            return put_be(p, (uint64_t)d, 8);
        }
        if (d < -(1LL << 15)) {
            *p++ = 0xd2;
            return put_be(p, (uint64_t)d, 4);
        }
        if (d < -(1LL << 7)) {
            *p++ = 0xd1;
            return put_be(p, (uint64_t)d, 2);
        }
        *p++ = 0xd0;
        return put_be(p, (uint64_t)d, 1);
    }
    if (d < (1LL << 7)) {
        *p++ = (unsigned char)d;   /* fixint, positive or negative */
        return p;
    }
    if (d < (1LL << 8)) {
        *p++ = 0xcc;
        return put_be(p, (uint64_t)d, 1);
    }
    if (d < (1LL << 16)) {
        *p++ = 0xcd;
        return put_be(p, (uint64_t)d, 2);
    }
    if (d < (1LL << 32)) {
        *p++ = 0xce;
        return put_be(p, (uint64_t)d, 4);
    }
    *p++ = 0xcf;
    return put_be(p, (uint64_t)d, 8);
}

static unsigned char *put_str(unsigned char *p, const char *s, uint32_t n)
{
    if (n < 32) {
        *p++ = (unsigned char)(0xa0 | n);
    } else if (n < 256) {
        *p++ = 0xd9;
        *p++ = (unsigned char)n;
    } else if (n < 65536) {
        *p++ = 0xda;
        p = put_be(p, n, 2);
    } else {
        *p++ = 0xdb;
        p = put_be(p, n, 4);
    }
    if (n)
        memcpy(p, s, n);
    return p + n;
}

static unsigned char *put_ext_header(unsigned char *p, size_t l, int type)
{
    switch (l) {
    case 1: *p++ = 0xd4; break;
    case 2: *p++ = 0xd5; break;
    case 4: *p++ = 0xd6; break;
    case 8: *p++ = 0xd7; break;
    case 16: *p++ = 0xd8; break;
    default:
        if (l < 256) {
            *p++ = 0xc7;
            *p++ = (unsigned char)l;
        } else if (l < 65536) {
            *p++ = 0xc8;
            p = put_be(p, l, 2);
        } else {
            *p++ = 0xc9;
            p = put_be(p, l, 4);
        }
    }
    *p++ = (unsigned char)type;
    return p;
}

/* v at p (room for value_bound(v) bytes); returns its end. */
static unsigned char *put_value(unsigned char *p, const zx_value *v)
{
    switch ((zx_type)v->type) {
    case ZX_T_INT:
        return put_int(p, v->u.i);
    case ZX_T_REAL: {
        uint64_t bits;
        memcpy(&bits, &v->u.d, 8);
        *p++ = 0xcb;
        return put_be(p, bits, 8);
    }
    case ZX_T_BOOL:
        *p++ = v->u.b ? 0xc3 : 0xc2;
        return p;
    case ZX_T_TEXT:
        return put_str(p, v->s, v->len);
    case ZX_T_TIMESTAMP:
        p = put_ext_header(p, 8 + (size_t)v->len, EXT_TIMESTAMP);
        p = put_be(p, (uint64_t)v->u.i, 8);
        if (v->len)
            memcpy(p, v->s, v->len);
        return p + v->len;
    case ZX_T_JSON:
        p = put_ext_header(p, v->len, EXT_JSON);
        if (v->len)
            memcpy(p, v->s, v->len);
        return p + v->len;
    default:
        *p++ = 0xc0;
        return p;
    }
}

size_t zx_frame_meta_estimate(const zx_frame_meta *m)
{
    size_t n = 64;
    if (m->pipeline)
        n += strlen(m->pipeline);
    if (m->table)
        n += strlen(m->table);
    if (m->batch_id)
        n += strlen(m->batch_id) + 8;
    if (m->dedup_key)
        n += strlen(m->dedup_key) + 8;
    for (size_t i = 0; i < m->npositions; i++)
        n += strlen(m->positions[i].part) + m->positions[i].value_len + 16 +
             (m->positions[i].fenced ? 18 : 0);
    for (size_t i = 0; i < m->nrejects; i++) {
        const zx_frame_reject *j = &m->rejects[i];
        n += 32 + (j->reason ? strlen(j->reason) : 0) + j->raw_len + j->key_len +
             (j->position ? strlen(j->position) : 0);
    }
    for (size_t i = 0; m->key_cols && i < m->nkey_cols; i++)
        n += strlen(m->key_cols[i]) + 8;
    for (size_t i = 0; m->col_types && i < m->ncol_types; i++)
        n += strlen(m->col_types[i].column) + strlen(m->col_types[i].type) + 16;
    n += 24;   /* "hp", "hc": a key and a uint64 each */
    return n;
}

size_t zx_frame_estimate(const zx_rowset *rs)
{
    /* per column: array(2) + str header (5) + type (1) + its name.
     * per row: array header (5) + one byte per column (nil, or the first
     * byte of a value); per cell on top of that: up to 13 more bytes (ext32
     * header 6 + timestamp 8 - 1) and its string, once per cell. */
    return 256 + rs->str_bytes + rs->name_bytes + (size_t)rs->ncols * 8 +
           (size_t)rs->nrows * (5 + (size_t)rs->ncols) + (size_t)rs->ncells * 14;
}

/* 1 when m (a frame of kind, with ch: changes, kc: carrying "kc") and
 * rs's columns can be encoded, else 0 (EINVAL). */
static int encodable(const zx_frame_meta *m, const zx_rowset *rs, int ch, int kc)
{
    if (kc && (m->nkey_cols > ZX_FRAME_MAX_KEY_COLUMNS || (m->nkey_cols && !m->key_cols) ||
               m->ncol_types > ZX_FRAME_MAX_COLUMNS || (m->ncol_types && !m->col_types)))
        return 0;
    for (size_t i = 0; kc && i < m->nkey_cols; i++)
        if (!m->key_cols[i])
            return 0;
    for (size_t i = 0; ch && i < m->ncol_types; i++)
        if (!m->col_types[i].column || !m->col_types[i].type)
            return 0;
    for (uint32_t c = 0; c < rs->ncols; c++)
        if (rs->cols[c].type >= ZX_T__COUNT ||
            memchr(rs->cols[c].name, 0, rs->cols[c].name_len))
            return 0;
    if (m->npositions > ZX_FRAME_MAX_POSITIONS || m->nrejects > ZX_FRAME_MAX_REJECTS ||
        (m->npositions && !m->positions) || (m->nrejects && !m->rejects))
        return 0;
    for (size_t i = 0; i < m->npositions; i++)
        if (!m->positions[i].part || !m->positions[i].part[0] ||
            (m->positions[i].value_len && !m->positions[i].value) ||
            (m->positions[i].fenced && (m->positions[i].from < -1 || m->positions[i].first < -1)))
            return 0;
    for (size_t i = 0; i < m->nrejects; i++)
        if (m->rejects[i].raw_len && !m->rejects[i].raw)
            return 0;
    return 1;
}

/* The frame's metadata map: only the keys it has. */
static void pack_meta(msgpack_packer *pk, const zx_frame_meta *m, int ch, int kc)
{
    uint32_t nmeta = (m->ingested_at_us != 0) + (m->batch_id != NULL) +
                     (m->dedup_key != NULL) + (m->dedup_hash != 0) +
                     (m->accepted != 0) + (m->npositions != 0) + (m->metadata != 0) +
                     (kc && m->nkey_cols) + (ch && m->ncol_types) + (ch && m->history) +
                     (ch && m->copy) + (ch && m->inferred) + (m->kind != ZX_FRAME_HASHES && m->forward) +
                     (m->kind == ZX_FRAME_HASHES && m->hashes_pending != 0) +
                     (m->kind == ZX_FRAME_HASHES && m->hashes_confirm != 0);
    msgpack_pack_map(pk, nmeta);
    if (kc && m->nkey_cols) {
        pack_key(pk, "kc");
        msgpack_pack_array(pk, (uint32_t)m->nkey_cols);
        for (size_t i = 0; i < m->nkey_cols; i++)
            pack_cstr(pk, m->key_cols[i]);
    }
    if (ch && m->ncol_types) {
        pack_key(pk, "st");
        msgpack_pack_array(pk, (uint32_t)m->ncol_types);
        for (size_t i = 0; i < m->ncol_types; i++) {
            msgpack_pack_array(pk, 2);
            pack_cstr(pk, m->col_types[i].column);
            pack_cstr(pk, m->col_types[i].type);
        }
    }
    if (ch && m->history) {
        pack_key(pk, "hi");
        msgpack_pack_uint32(pk, 1);
    }
    if (ch && m->copy) {
        pack_key(pk, "cp");
        msgpack_pack_uint32(pk, (uint32_t)m->copy);
    }
    if (ch && m->inferred) {
        pack_key(pk, "ti");
        msgpack_pack_uint32(pk, 1);
    }
    if (m->kind != ZX_FRAME_HASHES && m->forward) {
        pack_key(pk, "fw");
        msgpack_pack_uint32(pk, 1);
    }
    if (m->kind == ZX_FRAME_HASHES && m->hashes_pending) {
        pack_key(pk, "hp");
        msgpack_pack_uint64(pk, m->hashes_pending);
    }
    if (m->kind == ZX_FRAME_HASHES && m->hashes_confirm) {
        pack_key(pk, "hc");
        msgpack_pack_uint64(pk, m->hashes_confirm);
    }
    if (m->ingested_at_us != 0) {
        pack_key(pk, "ia");
        msgpack_pack_int64(pk, m->ingested_at_us);
    }
    if (m->batch_id) {
        pack_key(pk, "bi");
        pack_cstr(pk, m->batch_id);
    }
    if (m->dedup_key) {
        pack_key(pk, "dk");
        pack_cstr(pk, m->dedup_key);
    }
    if (m->dedup_hash != 0) {
        pack_key(pk, "dh");
        msgpack_pack_uint64(pk, m->dedup_hash);
    }
    if (m->metadata != 0) {
        pack_key(pk, "md");
        msgpack_pack_uint32(pk, m->metadata);
    }
    if (m->accepted != 0) {
        pack_key(pk, "ac");
        msgpack_pack_uint64(pk, m->accepted);
    }
    if (m->npositions) {
        pack_key(pk, "po");
        msgpack_pack_array(pk, (uint32_t)m->npositions);
        for (size_t i = 0; i < m->npositions; i++) {
            const zx_frame_pos *ps = &m->positions[i];
            msgpack_pack_array(pk, ps->fenced ? 4 : 2);
            pack_cstr(pk, ps->part);
            msgpack_pack_bin_with_body(pk, ps->value, ps->value_len);
            if (ps->fenced) {
                msgpack_pack_int64(pk, ps->from);
                msgpack_pack_int64(pk, ps->first);
            }
        }
    }

}

/* The columns, the rows (row: a work array of rs->ncols values) and the
 * rejects; stops early once e has failed. */
static void pack_body(msgpack_packer *pk, enc *e, const zx_frame_meta *m,
                      const zx_rowset *rs, zx_value *row)
{
    msgpack_pack_array(pk, rs->ncols);
    for (uint32_t c = 0; c < rs->ncols; c++) {
        msgpack_pack_array(pk, 2);
        msgpack_pack_str_with_body(pk, rs->cols[c].name, rs->cols[c].name_len);
        msgpack_pack_uint8(pk, rs->cols[c].type);
    }

    msgpack_pack_array(pk, rs->nrows);
    for (uint32_t r = 0; r < rs->nrows && !e->failed; r++) {
        size_t need = 5;
        if (rs->ncols)
            zx_rowset_row(rs, r, row);
        for (uint32_t c = 0; c < rs->ncols; c++)
            need += value_bound(&row[c]);
        if (zx_buf_reserve(e->b, need) < 0) {
            e->failed = 1;
            break;
        }
        unsigned char *p = (unsigned char *)e->b->p + e->b->len;
        p = put_array(p, rs->ncols);
        for (uint32_t c = 0; c < rs->ncols; c++)
            p = put_value(p, &row[c]);
        e->b->len = (size_t)(p - (unsigned char *)e->b->p);
    }

    msgpack_pack_array(pk, (uint32_t)m->nrejects);
    for (size_t i = 0; i < m->nrejects && !e->failed; i++) {
        const zx_frame_reject *j = &m->rejects[i];
        msgpack_pack_array(pk, 4);
        pack_cstr(pk, j->reason);
        msgpack_pack_bin_with_body(pk, j->raw, j->raw_len);
        if (j->key)
            msgpack_pack_bin_with_body(pk, j->key, j->key_len);
        else
            msgpack_pack_nil(pk);
        pack_cstr(pk, j->position);
    }
}

int zx_frame_encode(const zx_frame_meta *m, const zx_rowset *rs, zx_buf *out)
{
    size_t start = out->len;
    zx_value *row = NULL;
    int rc = -1;
    int err = ENOMEM;

    uint32_t kind = m->kind ? m->kind : ZX_FRAME_ROWS;
    int ch = kind == ZX_FRAME_CHANGES;
    /* "kc": changes and row-hashes frames; a rows frame only when given
     * (a mirror's initial copy) */
    int kc = ch || kind == ZX_FRAME_HASHES || m->nkey_cols;
    if ((kind != ZX_FRAME_ROWS && !ch && kind != ZX_FRAME_HASHES) ||
        !encodable(m, rs, ch, kc)) {
        err = EINVAL;
        goto done;
    }
    /* one reservation up front so that packing rarely reallocates */
    if (zx_buf_reserve(out, zx_frame_estimate(rs) + zx_frame_meta_estimate(m)) < 0)
        goto done;
    if (rs->ncols && !(row = malloc(sizeof(*row) * rs->ncols)))
        goto done;

    enc e = {.b = out, .failed = 0};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &e, enc_write);

    msgpack_pack_array(&pk, FRAME_FIELDS);
    msgpack_pack_str_with_body(&pk, ZX_FRAME_MAGIC, 3);
    msgpack_pack_uint32(&pk, ZX_FRAME_VERSION);
    msgpack_pack_uint32(&pk, kind);
    pack_cstr(&pk, m->pipeline);
    pack_cstr(&pk, m->table);

    pack_meta(&pk, m, ch, kc);
    pack_body(&pk, &e, m, rs, row);
    if (!e.failed)
        rc = 0;
done:
    free(row);
    if (rc < 0) {
        out->len = start;
        errno = err;
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* decoder (the msgpack reader it uses: frame_read.c)                  */

/* Read a string for a C-string field: no NUL inside, copied into rs. */
static int want_name(rd *r, zx_rowset *rs, const char **out, uint32_t *len,
                     const char *what)
{
    item it;
    if (zx_fr_want(r, &it, K_STR, what) < 0)
        return -1;
    if (it.n && memchr(it.s, 0, it.n))
        return zx_fr_fail(r, "%s contains a NUL byte", what);
    char *s = zx_rowset_strdup(rs, (const char *)it.s, it.n);
    if (!s)
        return zx_fr_fail(r, "out of memory");
    *out = s;
    if (len)
        *len = it.n;
    return 0;
}

/* Copy n bytes into rs's arena (n may be 0: a valid empty pointer). */
static const void *copy_bytes(rd *r, zx_rowset *rs, const uint8_t *s, uint32_t n)
{
    void *p = zx_rowset_alloc(rs, n ? n : 1);
    if (!p) {
        zx_fr_fail(r, "out of memory");
        return NULL;
    }
    if (n)
        memcpy(p, s, n);
    return p;
}

/* "kc": array of str. */
static int read_key_cols(rd *r, zx_frame_meta *m, zx_rowset *rs)
{
    item it;
    if (zx_fr_want(r, &it, K_ARRAY, "metadata kc") < 0)
        return -1;
    if (it.n > ZX_FRAME_MAX_KEY_COLUMNS)
        return zx_fr_fail(r, "%" PRIu32 " key columns, more than the limit %u", it.n,
                          ZX_FRAME_MAX_KEY_COLUMNS);
    const char **kc = NULL;
    if (it.n && !(kc = zx_rowset_alloc(rs, sizeof(*kc) * it.n)))
        return zx_fr_fail(r, "out of memory");
    for (uint32_t i = 0; i < it.n; i++)
        if (want_name(r, rs, &kc[i], NULL, "key column") < 0)
            return -1;
    m->key_cols = kc;
    m->nkey_cols = it.n;
    return 0;
}

/* "st": array of [column str, type str]. */
static int read_col_types(rd *r, zx_frame_meta *m, zx_rowset *rs)
{
    item it;
    if (zx_fr_want(r, &it, K_ARRAY, "metadata st") < 0)
        return -1;
    if (it.n > ZX_FRAME_MAX_COLUMNS)
        return zx_fr_fail(r, "%" PRIu32 " column types, more than the limit %u", it.n,
                          ZX_FRAME_MAX_COLUMNS);
    zx_frame_coltype *ct = NULL;
    if (it.n && !(ct = zx_rowset_alloc(rs, sizeof(*ct) * it.n)))
        return zx_fr_fail(r, "out of memory");
    for (uint32_t i = 0; i < it.n; i++) {
        item pair;
        if (zx_fr_want(r, &pair, K_ARRAY, "column type") < 0)
            return -1;
        if (pair.n != 2)
            return zx_fr_fail(r, "column type %" PRIu32 ": expected [column, type], got %"
                              PRIu32 " elements", i, pair.n);
        if (want_name(r, rs, &ct[i].column, NULL, "column type's column") < 0 ||
            want_name(r, rs, &ct[i].type, NULL, "column type's type") < 0)
            return -1;
    }
    m->col_types = ct;
    m->ncol_types = it.n;
    return 0;
}

/* A fenced position's from or first: an int >= -1. */
static int want_fence_int(rd *r, int64_t *out, uint32_t i, const char *what)
{
    item v;
    if (zx_fr_want(r, &v, K_INT, what) < 0)
        return -1;
    if (v.neg ? v.i < -1 : v.u > (uint64_t)INT64_MAX)
        return zx_fr_fail(r, "position %" PRIu32 ": %s out of range", i, what);
    *out = v.neg ? v.i : (int64_t)v.u;
    return 0;
}

/* "po": array of [part str, value bin] or [part, value, from int,
 * first int] (fenced). */
static int read_positions(rd *r, zx_frame_meta *m, zx_rowset *rs)
{
    item it;
    if (zx_fr_want(r, &it, K_ARRAY, "metadata po") < 0)
        return -1;
    if (it.n > ZX_FRAME_MAX_POSITIONS)
        return zx_fr_fail(r, "%" PRIu32 " positions, more than the limit %u", it.n,
                          ZX_FRAME_MAX_POSITIONS);
    zx_frame_pos *ps = NULL;
    if (it.n && !(ps = zx_rowset_alloc(rs, sizeof(*ps) * it.n)))
        return zx_fr_fail(r, "out of memory");
    for (uint32_t i = 0; i < it.n; i++) {
        item pair, v;
        if (zx_fr_want(r, &pair, K_ARRAY, "position") < 0)
            return -1;
        if (pair.n != 2 && pair.n != 4)
            return zx_fr_fail(r, "position %" PRIu32 ": expected [part, value] or [part, "
                              "value, from, first], got %" PRIu32 " elements", i, pair.n);
        if (want_name(r, rs, &ps[i].part, NULL, "position part") < 0)
            return -1;
        if (!ps[i].part[0])
            return zx_fr_fail(r, "position %" PRIu32 ": empty part", i);
        if (zx_fr_want(r, &v, K_BIN, "position value") < 0)
            return -1;
        if (!(ps[i].value = copy_bytes(r, rs, v.s, v.n)))
            return -1;
        ps[i].value_len = v.n;
        ps[i].fenced = pair.n == 4;
        ps[i].from = ps[i].first = -1;
        if (ps[i].fenced && (want_fence_int(r, &ps[i].from, i, "position from") < 0 ||
                             want_fence_int(r, &ps[i].first, i, "position first") < 0))
            return -1;
    }
    m->positions = ps;
    m->npositions = it.n;
    return 0;
}

/* rejects: array of [reason str, raw bin, key bin|nil, position str]. */
static int read_rejects(rd *r, zx_frame_meta *m, zx_rowset *rs)
{
    item it;
    if (zx_fr_want(r, &it, K_ARRAY, "rejects") < 0)
        return -1;
    if (it.n > ZX_FRAME_MAX_REJECTS)
        return zx_fr_fail(r, "%" PRIu32 " rejects, more than the limit %u", it.n,
                          ZX_FRAME_MAX_REJECTS);
    zx_frame_reject *js = NULL;
    if (it.n && !(js = zx_rowset_alloc(rs, sizeof(*js) * it.n)))
        return zx_fr_fail(r, "out of memory");
    for (uint32_t i = 0; i < it.n; i++) {
        item four, v;
        zx_frame_reject *j = &js[i];
        memset(j, 0, sizeof(*j));
        if (zx_fr_want(r, &four, K_ARRAY, "reject") < 0)
            return -1;
        if (four.n != 4)
            return zx_fr_fail(r, "reject %" PRIu32 ": expected [reason, raw, key, position], "
                              "got %" PRIu32 " elements", i, four.n);
        if (want_name(r, rs, &j->reason, NULL, "reject reason") < 0)
            return -1;
        if (zx_fr_want(r, &v, K_BIN, "reject raw") < 0)
            return -1;
        if (!(j->raw = copy_bytes(r, rs, v.s, v.n)))
            return -1;
        j->raw_len = v.n;
        if (r->p < r->end && *r->p == 0xc0) {
            r->p++;
        } else {
            if (zx_fr_want(r, &v, K_BIN, "reject key") < 0)
                return -1;
            if (!(j->key = copy_bytes(r, rs, v.s, v.n)))
                return -1;
            j->key_len = v.n;
        }
        if (want_name(r, rs, &j->position, NULL, "reject position") < 0)
            return -1;
    }
    m->rejects = js;
    m->nrejects = it.n;
    return 0;
}

static int read_meta(rd *r, zx_frame_meta *m, zx_rowset *rs)
{
    item it;
    if (zx_fr_want(r, &it, K_MAP, "metadata") < 0)
        return -1;
    for (uint32_t k = it.n; k > 0; k--) {
        item key;
        if (zx_fr_want(r, &key, K_STR, "metadata key") < 0)
            return -1;
        char kb[3] = {0};
        if (key.n == 2)
            memcpy(kb, key.s, 2);
        if (r->p < r->end && *r->p == 0xc0) {     /* nil: absent */
            r->p++;
            continue;
        }
        if (strcmp(kb, "ia") == 0) {
            item v;
            if (zx_fr_want(r, &v, K_INT, "metadata ia") < 0)
                return -1;
            if (!v.neg && v.u > INT64_MAX)
                return zx_fr_fail(r, "metadata ia: out of range");
            m->ingested_at_us = v.neg ? v.i : (int64_t)v.u;
        } else if (strcmp(kb, "bi") == 0) {
            if (want_name(r, rs, &m->batch_id, NULL, "metadata bi") < 0)
                return -1;
        } else if (strcmp(kb, "dk") == 0) {
            if (want_name(r, rs, &m->dedup_key, NULL, "metadata dk") < 0)
                return -1;
        } else if (strcmp(kb, "dh") == 0) {
            if (zx_fr_want_u64(r, &m->dedup_hash, "metadata dh") < 0)
                return -1;
        } else if (strcmp(kb, "md") == 0) {
            uint64_t md = 0;
            if (zx_fr_want_u64(r, &md, "metadata md") < 0)
                return -1;
            m->metadata = (uint32_t)md;
        } else if (strcmp(kb, "ac") == 0) {
            if (zx_fr_want_u64(r, &m->accepted, "metadata ac") < 0)
                return -1;
        } else if (strcmp(kb, "po") == 0) {
            if (read_positions(r, m, rs) < 0)
                return -1;
        } else if (strcmp(kb, "kc") == 0) {
            if (read_key_cols(r, m, rs) < 0)
                return -1;
        } else if (strcmp(kb, "st") == 0) {
            if (read_col_types(r, m, rs) < 0)
                return -1;
        } else if (strcmp(kb, "hi") == 0) {
            uint64_t hi = 0;
            if (zx_fr_want_u64(r, &hi, "metadata hi") < 0)
                return -1;
            m->history = hi != 0;
        } else if (strcmp(kb, "cp") == 0) {
            uint64_t cp = 0;
            if (zx_fr_want_u64(r, &cp, "metadata cp") < 0)
                return -1;
            /* an unknown value: nothing to do for it */
            m->copy = cp == ZX_FRAME_COPY_START || cp == ZX_FRAME_COPY_END ? (int)cp : 0;
        } else if (strcmp(kb, "ti") == 0) {
            uint64_t ti = 0;
            if (zx_fr_want_u64(r, &ti, "metadata ti") < 0)
                return -1;
            m->inferred = ti != 0;
        } else if (strcmp(kb, "fw") == 0) {
            uint64_t fw = 0;
            if (zx_fr_want_u64(r, &fw, "metadata fw") < 0)
                return -1;
            m->forward = fw != 0;
        } else if (strcmp(kb, "hp") == 0) {
            if (zx_fr_want_u64(r, &m->hashes_pending, "metadata hp") < 0)
                return -1;
        } else if (strcmp(kb, "hc") == 0) {
            if (zx_fr_want_u64(r, &m->hashes_confirm, "metadata hc") < 0)
                return -1;
        } else if (zx_fr_skip(r) < 0) {
            return -1;
        }
    }
    return 0;
}

static int read_columns(rd *r, zx_rowset *rs, uint8_t **types)
{
    item it;
    if (zx_fr_want(r, &it, K_ARRAY, "columns") < 0)
        return -1;
    if (it.n > ZX_FRAME_MAX_COLUMNS)
        return zx_fr_fail(r, "%" PRIu32 " columns, more than the limit %u", it.n,
                          ZX_FRAME_MAX_COLUMNS);
    uint32_t ncols = it.n;
    *types = zx_rowset_alloc(rs, ncols ? ncols : 1);
    if (!*types)
        return zx_fr_fail(r, "out of memory");
    for (uint32_t c = 0; c < ncols; c++) {
        item pair, name;
        uint64_t t = 0;
        if (zx_fr_want(r, &pair, K_ARRAY, "column") < 0)
            return -1;
        if (pair.n != 2)
            return zx_fr_fail(r, "column %" PRIu32 ": expected [name, type], got %" PRIu32
                              " elements", c, pair.n);
        const uint8_t *at = r->p;
        if (zx_fr_want(r, &name, K_STR, "column name") < 0)
            return -1;
        if (name.n && memchr(name.s, 0, name.n)) {
            r->p = at;
            return zx_fr_fail(r, "column %" PRIu32 ": name contains a NUL byte", c);
        }
        if (zx_fr_want_u64(r, &t, "column type") < 0)
            return -1;
        if (t >= ZX_T__COUNT)
            return zx_fr_fail(r, "column %" PRIu32 ": unknown type %" PRIu64, c, t);
        int64_t ix = zx_rowset_column(rs, (const char *)name.s, name.n, (zx_type)t);
        if (ix < 0)
            return zx_fr_fail(r, "out of memory");
        if ((uint64_t)ix != c)
            return zx_fr_fail(r, "column %" PRIu32 ": duplicate name \"%.*s\"", c,
                              (int)(name.n > 64 ? 64 : name.n), (const char *)name.s);
        (*types)[c] = (uint8_t)t;
    }
    return 0;
}

static int read_value(rd *r, zx_rowset *rs, uint32_t row, uint32_t col)
{
    const uint8_t *at = r->p;
    item it;
    zx_value v;
    if (zx_fr_next(r, &it) < 0)
        return -1;
    memset(&v, 0, sizeof(v));
    switch (it.kind) {
    case K_NIL:
        return 0;
    case K_BOOL:
        v.type = ZX_T_BOOL;
        v.u.b = (int)it.u;
        break;
    case K_INT:
        if (!it.neg && it.u > INT64_MAX) {
            r->p = at;
            return zx_fr_fail(r, "row %" PRIu32 " column %" PRIu32
                              ": integer above the int64 range", row, col);
        }
        v.type = ZX_T_INT;
        v.u.i = it.neg ? it.i : (int64_t)it.u;
        break;
    case K_FLOAT:
        v.type = ZX_T_REAL;
        v.u.d = it.d;
        break;
    case K_STR:
        v.type = ZX_T_TEXT;
        v.len = it.n;
        v.s = zx_rowset_strdup(rs, (const char *)it.s, it.n);
        if (!v.s)
            return zx_fr_fail(r, "out of memory");
        break;
    case K_EXT:
        if (it.ext == EXT_TIMESTAMP) {
            if (it.n < 8) {
                r->p = at;
                return zx_fr_fail(r, "row %" PRIu32 " column %" PRIu32
                                  ": timestamp of %" PRIu32 " bytes, fewer than 8",
                                  row, col, it.n);
            }
            v.type = ZX_T_TIMESTAMP;
            v.u.i = (int64_t)zx_fr_be(it.s, 8);
            v.len = it.n - 8;
            v.s = zx_rowset_strdup(rs, (const char *)it.s + 8, it.n - 8);
        } else if (it.ext == EXT_JSON) {
            v.type = ZX_T_JSON;
            v.len = it.n;
            v.s = zx_rowset_strdup(rs, (const char *)it.s, it.n);
        } else {
            r->p = at;
            return zx_fr_fail(r, "row %" PRIu32 " column %" PRIu32
                              ": unknown extension type %d", row, col, it.ext);
        }
        if (!v.s)
            return zx_fr_fail(r, "out of memory");
        break;
    default:
        r->p = at;
        return zx_fr_fail(r, "row %" PRIu32 " column %" PRIu32 ": %s is not a value type",
                          row, col, zx_fr_kind_names[it.kind]);
    }
    if (zx_rowset_add(rs, col, &v) < 0)
        return zx_fr_fail(r, "out of memory");
    return 0;
}

static int read_rows(rd *r, zx_rowset *rs)
{
    item it;
    if (zx_fr_want(r, &it, K_ARRAY, "rows") < 0)
        return -1;
    if (it.n > ZX_FRAME_MAX_ROWS)
        return zx_fr_fail(r, "%" PRIu32 " rows, more than the limit %u", it.n,
                          ZX_FRAME_MAX_ROWS);
    uint32_t nrows = it.n, ncols = rs->ncols;
    for (uint32_t row = 0; row < nrows; row++) {
        item ra;
        if (zx_fr_want(r, &ra, K_ARRAY, "row") < 0)
            return -1;
        if (ra.n != ncols)
            return zx_fr_fail(r, "row %" PRIu32 " has %" PRIu32 " values, expected %" PRIu32,
                              row, ra.n, ncols);
        if (zx_rowset_begin_row(rs) < 0)
            return zx_fr_fail(r, "out of memory");
        for (uint32_t c = 0; c < ncols; c++)
            if (read_value(r, rs, row, c) < 0)
                return -1;
        zx_rowset_end_row(rs);
    }
    return 0;
}

int zx_frame_decode(const void *buf, size_t len, zx_frame_meta *m, zx_rowset *rs,
                    char *err, size_t errlen)
{
    rd rr = {.start = buf, .p = buf, .end = (const uint8_t *)buf + len,
             .err = err, .errlen = errlen};
    rd *r = &rr;
    item it;
    uint64_t u = 0;
    uint8_t *types = NULL;

    if (err && errlen)
        err[0] = '\0';
    memset(m, 0, sizeof(*m));
    zx_rowset_reset(rs);
    if (!buf && len)
        goto fail;
    if (zx_fr_want(r, &it, K_ARRAY, "frame") < 0)
        goto fail;
    if (it.n != FRAME_FIELDS) {
        zx_fr_fail(r, "expected an array of %d elements, got %" PRIu32,
                   FRAME_FIELDS, it.n);
        goto fail;
    }
    if (zx_fr_want(r, &it, K_STR, "magic") < 0)
        goto fail;
    if (it.n != 3 || memcmp(it.s, ZX_FRAME_MAGIC, 3) != 0) {
        r->p = it.s;
        zx_fr_fail(r, "not a zx frame (wrong magic)");
        goto fail;
    }
    if (zx_fr_want_u64(r, &u, "version") < 0)
        goto fail;
    if (u != ZX_FRAME_VERSION) {
        zx_fr_fail(r, "frame version %" PRIu64 " not supported (this build reads %d)", u,
                   ZX_FRAME_VERSION);
        goto fail;
    }
    m->version = (uint32_t)u;
    if (zx_fr_want_u64(r, &u, "kind") < 0)
        goto fail;
    if (u != ZX_FRAME_ROWS && u != ZX_FRAME_CHANGES && u != ZX_FRAME_HASHES) {
        zx_fr_fail(r, "unknown frame kind %" PRIu64, u);
        goto fail;
    }
    m->kind = (uint32_t)u;
    if (want_name(r, rs, &m->pipeline, NULL, "pipeline") < 0 ||
        want_name(r, rs, &m->table, NULL, "table") < 0 ||
        read_meta(r, m, rs) < 0 || read_columns(r, rs, &types) < 0 ||
        read_rows(r, rs) < 0 || read_rejects(r, m, rs) < 0)
        goto fail;
    if (r->p != r->end) {
        zx_fr_fail(r, "%zu trailing bytes after the frame", (size_t)(r->end - r->p));
        goto fail;
    }
    if (m->kind != ZX_FRAME_CHANGES) { /* changes metadata means nothing here */
        m->ncol_types = 0;
        m->col_types = NULL;
        m->history = 0;
        m->copy = 0;
        m->inferred = 0;
    }
    if (m->kind == ZX_FRAME_HASHES) {
        m->forward = 0;
    } else {                           /* a sync's hashes only */
        m->hashes_pending = 0;
        m->hashes_confirm = 0;
    }
    /* the frame's column types are the truth (zx_rowset_add merged) */
    for (uint32_t c = 0; c < rs->ncols; c++)
        rs->cols[c].type = types[c];
    return 0;
fail:
    if (err && errlen && !err[0])
        snprintf(err, errlen, "frame: invalid");
    memset(m, 0, sizeof(*m));
    zx_rowset_reset(rs);
    return -1;
}
