/*
 * kinesis_pb.c — protobuf wire format, one field at a time (kinesis_pb.h).
 */
#include "workers/sources/kinesis/kinesis_pb.h"

/* A varint at b->p[b->at]: 0, or -1 when cut short or over 64 bits. */
static int rd_varint(zx_pb *b, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (b->at >= b->len)
            return -1;
        uint8_t c = b->p[b->at++];
        if (i == 9 && c > 1)
            return -1;
        r |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* Takes n bytes as the field's value: 0, or -1 when fewer are left. */
static int take(zx_pb *b, zx_pb_field *f, uint64_t n)
{
    if (n > b->len - b->at)
        return -1;
    f->p = b->p + b->at;
    f->len = (size_t)n;
    b->at += (size_t)n;
    return 0;
}

static int read_field(zx_pb *b, zx_pb_field *f, const char **why, int depth)
{
    uint64_t key;
    f->v = 0;
    f->p = NULL;
    f->len = 0;
    if (rd_varint(b, &key) < 0) {
        *why = "a field's key is cut short or longer than 10 bytes";
        return -1;
    }
    if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff) {
        *why = "a field number is 0 or over 2^29-1";
        return -1;
    }
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    switch (f->wt) {
    case ZX_PB_VARINT:
        if (rd_varint(b, &f->v) == 0)
            return 1;
        *why = "a varint is cut short or longer than 10 bytes";
        return -1;
    case ZX_PB_I64:
    case ZX_PB_I32:
        if (take(b, f, f->wt == ZX_PB_I64 ? 8 : 4) == 0)
            return 1;
        *why = "a fixed-size field is cut short";
        return -1;
    case ZX_PB_LEN: {
        uint64_t n;
        if (rd_varint(b, &n) < 0) {
            *why = "a length is cut short or longer than 10 bytes";
            return -1;
        }
        if (take(b, f, n) == 0)
            return 1;
        *why = "a length-delimited field runs past the end of its message";
        return -1;
    }
    case ZX_PB_SGROUP:
        if (depth >= ZX_PB_MAX_DEPTH) {
            *why = "groups are nested too deep";
            return -1;
        }
        for (;;) {
            zx_pb_field g;
            if (b->at >= b->len) {
                *why = "a group has no end";
                return -1;
            }
            if (read_field(b, &g, why, depth + 1) < 0)
                return -1;
            if (g.wt == ZX_PB_EGROUP) {
                if (g.num != f->num) {
                    *why = "a group ends with another field number than it started with";
                    return -1;
                }
                return 1;
            }
        }
    case ZX_PB_EGROUP:
        if (depth > 0)
            return 1;
        *why = "an end-group field without its start";
        return -1;
    default:
        *why = "a field has wire type 6 or 7 (none such)";
        return -1;
    }
}

int zx_pb_next(zx_pb *b, zx_pb_field *f, const char **why)
{
    if (b->at >= b->len)
        return 0;
    return read_field(b, f, why, 0);
}
