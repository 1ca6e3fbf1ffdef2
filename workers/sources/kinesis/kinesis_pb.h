/*
 * kinesis_pb.h — a minimal reader of protobuf's wire format, for the KPL's
 * aggregated records (kinesis_kpl.h): one field at a time, no schema.
 * Pure; every length from the input is checked against what is left
 * before it is used.
 */
#ifndef ZX_KINESIS_PB_H
#define ZX_KINESIS_PB_H

#include <stddef.h>
#include <stdint.h>

/* Groups (wire types 3 and 4, deprecated) nested deeper than this are
 * malformed. */
#define ZX_PB_MAX_DEPTH 64

enum { ZX_PB_VARINT = 0, ZX_PB_I64 = 1, ZX_PB_LEN = 2, ZX_PB_SGROUP = 3, ZX_PB_EGROUP = 4,
       ZX_PB_I32 = 5 };

/* A message's bytes being read: p[at..len).  p is borrowed. */
typedef struct zx_pb {
    const uint8_t *p;
    size_t len, at;
} zx_pb;

/* One field.  num: its number (1 .. 2^29-1); wt: its wire type.
 * ZX_PB_VARINT: v.  ZX_PB_LEN, ZX_PB_I64, ZX_PB_I32: p[0..len) (borrowed
 * from the message).  ZX_PB_SGROUP: the whole group was skipped, nothing
 * else is set. */
typedef struct zx_pb_field {
    uint32_t num;
    int wt;
    uint64_t v;
    const uint8_t *p;
    size_t len;
} zx_pb_field;

/* Reads the next field of b into *f: 1, 0 at the message's end, or -1
 * with a phrase saying what is wrong in *why (static text): a cut
 * varint or length, field number 0, wire type 6 or 7, an end-group
 * without its start, a group without its end or nested too deep. */
int zx_pb_next(zx_pb *b, zx_pb_field *f, const char **why);

#endif /* ZX_KINESIS_PB_H */
