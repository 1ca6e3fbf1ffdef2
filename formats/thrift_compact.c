/*
 * thrift_compact.c — Thrift compact protocol encoder (thrift_compact.h).
 *
 * Field header: one byte (delta << 4 | type) when the id is 1..15 above the
 * previous one in the same struct, else the type byte and the id as a
 * zigzag varint.  Integers are zigzag varints; binary is a varint length
 * and the bytes; a bool field carries its value in the type nibble; a list
 * header is (n << 4 | elem) for n < 15, else 0xF0 | elem and a varint n.
 */
#include "formats/thrift_compact.h"

#include "common/buf.h"

#include <stdlib.h>
#include <string.h>

void zx_tc_init(zx_tc *t)
{
    memset(t, 0, sizeof(*t));
}

void zx_tc_reset(zx_tc *t)
{
    t->len = 0;
    t->depth = 0;
    t->failed = 0;
}

void zx_tc_free(zx_tc *t)
{
    if (!t)
        return;
    free(t->buf);
    memset(t, 0, sizeof(*t));
}

/* Room for n more bytes; 0 or -1 (sets failed). */
static int reserve(zx_tc *t, size_t n)
{
    if (t->failed)
        return -1;
    if (n > SIZE_MAX - t->len || zx_grow_to(&t->buf, t->len + n, &t->cap, 1, 256) < 0) {
        t->failed = 1;
        return -1;
    }
    return 0;
}

size_t zx_tc_uvarint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void put_uvarint(zx_tc *t, uint64_t v)
{
    if (reserve(t, 10) < 0)
        return;
    t->len += zx_tc_uvarint(t->buf + t->len, v);
}

static void put_bytes(zx_tc *t, const void *p, size_t n)
{
    if (reserve(t, n) < 0)
        return;
    if (n)
        memcpy(t->buf + t->len, p, n);
    t->len += n;
}

static void field_header(zx_tc *t, int16_t id, int type)
{
    if (t->failed)
        return;
    if (t->depth < 1 || id <= t->last[t->depth - 1]) {
        t->failed = 1;
        return;
    }
    int delta = id - t->last[t->depth - 1];
    t->last[t->depth - 1] = id;
    if (reserve(t, 4) < 0)
        return;
    if (delta <= 15) {
        t->buf[t->len++] = (uint8_t)(delta << 4 | type);
    } else {
        t->buf[t->len++] = (uint8_t)type;
        put_uvarint(t, zigzag(id));
    }
}

static void push(zx_tc *t)
{
    if (t->failed)
        return;
    if (t->depth >= ZX_TC_MAX_DEPTH) {
        t->failed = 1;
        return;
    }
    t->last[t->depth++] = 0;
}

void zx_tc_struct_begin(zx_tc *t)
{
    push(t);
}

void zx_tc_struct_end(zx_tc *t)
{
    if (t->failed)
        return;
    if (t->depth < 1) {
        t->failed = 1;
        return;
    }
    t->depth--;
    put_bytes(t, "", 1);
}

void zx_tc_field_bool(zx_tc *t, int16_t id, int v)
{
    field_header(t, id, v ? ZX_TC_BOOL_TRUE : ZX_TC_BOOL_FALSE);
}

void zx_tc_field_i16(zx_tc *t, int16_t id, int16_t v)
{
    field_header(t, id, ZX_TC_I16);
    put_uvarint(t, zigzag(v));
}

void zx_tc_field_i32(zx_tc *t, int16_t id, int32_t v)
{
    field_header(t, id, ZX_TC_I32);
    put_uvarint(t, zigzag(v));
}

void zx_tc_field_i64(zx_tc *t, int16_t id, int64_t v)
{
    field_header(t, id, ZX_TC_I64);
    put_uvarint(t, zigzag(v));
}

void zx_tc_field_binary(zx_tc *t, int16_t id, const void *p, size_t n)
{
    field_header(t, id, ZX_TC_BINARY);
    zx_tc_binary(t, p, n);
}

void zx_tc_field_string(zx_tc *t, int16_t id, const char *s)
{
    zx_tc_field_binary(t, id, s, strlen(s));
}

void zx_tc_field_struct_begin(zx_tc *t, int16_t id)
{
    field_header(t, id, ZX_TC_STRUCT);
    push(t);
}

void zx_tc_field_list_begin(zx_tc *t, int16_t id, int elem, uint32_t n)
{
    field_header(t, id, ZX_TC_LIST);
    if (n < 15) {
        uint8_t b = (uint8_t)(n << 4 | (unsigned)elem);
        put_bytes(t, &b, 1);
    } else {
        uint8_t b = (uint8_t)(0xF0 | (unsigned)elem);
        put_bytes(t, &b, 1);
        put_uvarint(t, n);
    }
}

void zx_tc_i32(zx_tc *t, int32_t v)
{
    put_uvarint(t, zigzag(v));
}

void zx_tc_binary(zx_tc *t, const void *p, size_t n)
{
    put_uvarint(t, n);
    put_bytes(t, p, n);
}
