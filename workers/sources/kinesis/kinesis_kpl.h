/*
 * kinesis_kpl.h — the Kinesis Producer Library's aggregated records, de-
 * aggregated (pure: no I/O; fuzzed by tests/fuzz/fuzz_kinesis_kpl.c).
 *
 * An aggregated record's data is
 *     F3 89 9A C2  (magic)
 *     protobuf     AggregatedRecord {
 *                    repeated string partition_key_table = 1;
 *                    repeated string explicit_hash_key_table = 2;
 *                    repeated Record records = 3; }
 *                  Record { required uint64 partition_key_index = 1;
 *                           optional uint64 explicit_hash_key_index = 2;
 *                           required bytes data = 3;
 *                           repeated Tag tags = 4; }
 *     16 bytes     MD5 of the protobuf bytes
 * Each Record is one user record, with the partition key its index names
 * and a sub-sequence number: its place among the records (0, 1, ...).
 *
 * What is aggregated, as the KCL decides it (amazon-kinesis-client,
 * AggregatorUtil.deaggregate):
 *   - no magic, or no more than the magic and the 16-byte trailer (the
 *     protobuf part empty): a plain record, one user record as is;
 *   - the magic but an MD5 that does not match: a plain record too, one
 *     user record as is (KCL: "isAggregated = false");
 *   - the magic and a matching MD5: aggregated.  Its protobuf must then be
 *     well formed (every length in range, both required fields of every
 *     Record, every table index in range), else zx_kpl_open answers -1
 *     with the reason, and the caller rejects the whole record (its
 *     __rejects table).  The KCL differs here: it delivers a record whose
 *     protobuf does not parse as is (which in zx would be rejected anyway:
 *     binary bytes are not JSON), and on an index out of range it logs an
 *     error and drops the rest of the aggregate silently.  zx never drops
 *     user records silently: a reject names the reason.
 * An aggregate of 0 records is aggregated and gives no user record.
 * Unknown fields of every wire type (varint, 64-bit, length-delimited,
 * groups, 32-bit) are skipped, at every level; a field repeated where one
 * is expected keeps the last, as protobuf does; a known field of another
 * wire type than its own counts as unknown (skipped), as protobuf does.
 * Tags are skipped (never read).
 * The KCL also drops the user records whose hash key (explicit, or the
 * MD5 of the partition key) lies outside the shard's range, and with them
 * the records of the aggregate before them; producers that aggregate
 * records of several hash keys into one (the kinesis-aggregation library
 * does) lose data that way (amazon-kinesis-client issue #343).  zx does
 * not: every user record of the shard is given; its explicit hash key too,
 * should a caller want the KCL's filter.
 */
#ifndef ZX_KINESIS_KPL_H
#define ZX_KINESIS_KPL_H

#include <stddef.h>
#include <stdint.h>

#define ZX_KPL_MAGIC_LEN 4
#define ZX_KPL_DIGEST_LEN 16
/* The most keys in either table and the most records in one aggregate; a
 * record of 10 MiB holds fewer than these (each takes at least 2 and 6
 * bytes).  More is malformed. */
#define ZX_KPL_MAX_KEYS (1u << 22)
#define ZX_KPL_MAX_RECORDS (1u << 21)

/* One user record; every pointer is borrowed from the input given to
 * zx_kpl_open (or its partition key), valid while that is. */
typedef struct zx_kpl_rec {
    const uint8_t *data;
    size_t len;
    const char *partition_key;    /* not NUL-terminated: pk_len bytes */
    size_t pk_len;
    const char *explicit_hash_key; /* NULL: none; else ehk_len bytes */
    size_t ehk_len;
    uint64_t sub_seq;             /* place in the aggregate; 0 for a plain record */
} zx_kpl_rec;

/* A slice of the input (table entries). */
typedef struct zx_kpl_str {
    const char *p;
    size_t len;
} zx_kpl_str;

/* The state of one record being de-aggregated.  Caller-owned (on the
 * stack is fine); zx_kpl_free releases the tables. */
typedef struct zx_kpl {
    int aggregated;               /* 1: aggregated, 0: plain */
    const uint8_t *data;          /* the record's data (plain), or its protobuf */
    size_t len;
    const char *pk;               /* the record's own partition key (plain) */
    size_t pk_len;
    zx_kpl_str *pks, *ehks;       /* the tables, malloc'd */
    size_t npks, nehks;
    size_t nrecords;              /* user records: 1 when plain */
    size_t at;                    /* iteration: offset in the protobuf */
    uint64_t next_sub;            /* iteration: the next sub-sequence number */
    int done;                     /* plain: already given */
} zx_kpl;

/* 1 when data starts with the magic bytes (whatever follows). */
int zx_kpl_has_magic(const void *data, size_t len);

/* Opens the record data[0..len) whose own partition key is pk[0..pk_len)
 * (borrowed, may be NULL with pk_len 0).  Answers 1 (aggregated: k->nrecords
 * user records follow, 0 possible), 0 (plain: one user record, the data as
 * is), or -1 with the reason in err (aggregated, MD5 right, but the
 * protobuf is malformed or out of memory; nothing to iterate).  The
 * whole aggregate is checked here, so that zx_kpl_next cannot fail.  Call
 * zx_kpl_free afterwards in every case. */
int zx_kpl_open(zx_kpl *k, const void *data, size_t len, const char *pk, size_t pk_len,
                char *err, size_t errlen);

/* The next user record into *r: 1, or 0 when there are no more. */
int zx_kpl_next(zx_kpl *k, zx_kpl_rec *r);

/* Releases the tables; k may be opened again. */
void zx_kpl_free(zx_kpl *k);

#endif /* ZX_KINESIS_KPL_H */
