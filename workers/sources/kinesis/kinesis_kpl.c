/*
 * kinesis_kpl.c — KPL aggregated records de-aggregated (kinesis_kpl.h).
 */
#include "workers/sources/kinesis/kinesis_kpl.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/sources/kinesis/kinesis_pb.h"

static const uint8_t kpl_magic[ZX_KPL_MAGIC_LEN] = {0xF3, 0x89, 0x9A, 0xC2};

/* AggregatedRecord's and Record's field numbers. */
enum { F_PK_TABLE = 1, F_EHK_TABLE = 2, F_RECORDS = 3 };
enum { R_PK_INDEX = 1, R_EHK_INDEX = 2, R_DATA = 3 };

/* One Record, read. */
typedef struct kpl_record {
    uint64_t pki, ehki;
    int has_pki, has_ehki, has_data;
    const uint8_t *data;
    size_t len;
} kpl_record;

int zx_kpl_has_magic(const void *data, size_t len)
{
    return data && len >= ZX_KPL_MAGIC_LEN && memcmp(data, kpl_magic, ZX_KPL_MAGIC_LEN) == 0;
}

/* Reads the Record p[0..len): 0, or -1 with *why (static text). */
static int read_record(const uint8_t *p, size_t len, kpl_record *r, const char **why)
{
    zx_pb b = {.p = p, .len = len, .at = 0};
    zx_pb_field f;
    int rc;
    memset(r, 0, sizeof(*r));
    while ((rc = zx_pb_next(&b, &f, why)) == 1) {
        if (f.num == R_PK_INDEX && f.wt == ZX_PB_VARINT) {
            r->pki = f.v;
            r->has_pki = 1;
        } else if (f.num == R_EHK_INDEX && f.wt == ZX_PB_VARINT) {
            r->ehki = f.v;
            r->has_ehki = 1;
        } else if (f.num == R_DATA && f.wt == ZX_PB_LEN) {
            r->data = f.p;
            r->len = f.len;
            r->has_data = 1;
        }
        /* tags (4) and unknown fields: skipped */
    }
    if (rc < 0)
        return -1;
    if (!r->has_pki) {
        *why = "has no partition_key_index (a required field)";
        return -1;
    }
    if (!r->has_data) {
        *why = "has no data (a required field)";
        return -1;
    }
    return 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(err, errlen, "malformed KPL aggregated record: ");
    if (n < 0 || (size_t)n >= errlen)
        return -1;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* First pass: the top level's fields counted (and its wire format
 * checked).  0, or -1 with err. */
static int count_fields(zx_kpl *k, size_t *nrec, char *err, size_t errlen)
{
    zx_pb b = {.p = k->data, .len = k->len, .at = 0};
    zx_pb_field f;
    const char *why = "";
    int rc;
    size_t npk = 0, nehk = 0, n = 0;
    while ((rc = zx_pb_next(&b, &f, &why)) == 1) {
        if (f.wt != ZX_PB_LEN)
            continue;
        if (f.num == F_PK_TABLE)
            npk++;
        else if (f.num == F_EHK_TABLE)
            nehk++;
        else if (f.num == F_RECORDS)
            n++;
        if (npk > ZX_KPL_MAX_KEYS || nehk > ZX_KPL_MAX_KEYS)
            return fail(err, errlen, "more than %u keys in a table", ZX_KPL_MAX_KEYS);
        if (n > ZX_KPL_MAX_RECORDS)
            return fail(err, errlen, "more than %u records", ZX_KPL_MAX_RECORDS);
    }
    if (rc < 0)
        return fail(err, errlen, "%s (at byte %zu of the protobuf)", why, b.at);
    k->npks = npk;
    k->nehks = nehk;
    *nrec = n;
    return 0;
}

/* Second pass: the tables filled; third: every record checked. */
static int fill_and_check(zx_kpl *k, char *err, size_t errlen)
{
    zx_pb b = {.p = k->data, .len = k->len, .at = 0};
    zx_pb_field f;
    const char *why = "";
    size_t ipk = 0, iehk = 0;
    while (zx_pb_next(&b, &f, &why) == 1) {
        if (f.wt == ZX_PB_LEN && f.num == F_PK_TABLE)
            k->pks[ipk++] = (zx_kpl_str){(const char *)f.p, f.len};
        else if (f.wt == ZX_PB_LEN && f.num == F_EHK_TABLE)
            k->ehks[iehk++] = (zx_kpl_str){(const char *)f.p, f.len};
    }
    b.at = 0;
    size_t i = 0;
    while (zx_pb_next(&b, &f, &why) == 1) {
        if (f.wt != ZX_PB_LEN || f.num != F_RECORDS)
            continue;
        kpl_record r;
        if (read_record(f.p, f.len, &r, &why) < 0)
            return fail(err, errlen, "record %zu %s", i, why);
        if (r.pki >= k->npks)
            return fail(err, errlen,
                        "record %zu: partition_key_index %llu is out of range (the table "
                        "has %zu keys)", i, (unsigned long long)r.pki, k->npks);
        if (r.has_ehki && r.ehki >= k->nehks)
            return fail(err, errlen,
                        "record %zu: explicit_hash_key_index %llu is out of range (the "
                        "table has %zu keys)", i, (unsigned long long)r.ehki, k->nehks);
        i++;
    }
    return 0;
}

int zx_kpl_open(zx_kpl *k, const void *data, size_t len, const char *pk, size_t pk_len,
                char *err, size_t errlen)
{
    memset(k, 0, sizeof(*k));
    k->data = data;
    k->len = len;
    k->pk = pk;
    k->pk_len = pk ? pk_len : 0;
    k->nrecords = 1;
    if (err && errlen)
        err[0] = '\0';
    /* the KCL's test: the magic, then more than the digest */
    if (!zx_kpl_has_magic(data, len) || len - ZX_KPL_MAGIC_LEN <= ZX_KPL_DIGEST_LEN)
        return 0;
    const uint8_t *pb = (const uint8_t *)data + ZX_KPL_MAGIC_LEN;
    size_t pblen = len - ZX_KPL_MAGIC_LEN - ZX_KPL_DIGEST_LEN;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(pb, pblen, md, &mdlen, EVP_md5(), NULL) != 1 || mdlen != ZX_KPL_DIGEST_LEN) {
        snprintf(err, errlen, "cannot compute the MD5 of a KPL aggregated record (libcrypto)");
        return -1;
    }
    if (memcmp(md, pb + pblen, ZX_KPL_DIGEST_LEN) != 0)
        return 0; /* the KCL delivers it as is */
    k->aggregated = 1;
    k->data = pb;
    k->len = pblen;
    size_t nrec = 0;
    if (count_fields(k, &nrec, err, errlen) < 0)
        goto bad;
    k->pks = malloc((k->npks ? k->npks : 1) * sizeof(*k->pks));
    k->ehks = malloc((k->nehks ? k->nehks : 1) * sizeof(*k->ehks));
    if (!k->pks || !k->ehks) {
        snprintf(err, errlen, "out of memory reading a KPL aggregated record's tables");
        goto bad;
    }
    if (fill_and_check(k, err, errlen) < 0)
        goto bad;
    k->nrecords = nrec;
    return 1;
bad:
    k->nrecords = 0;
    k->done = 1;
    return -1;
}

int zx_kpl_next(zx_kpl *k, zx_kpl_rec *r)
{
    memset(r, 0, sizeof(*r));
    if (k->done)
        return 0;
    if (!k->aggregated) {
        k->done = 1;
        r->data = k->data;
        r->len = k->len;
        r->partition_key = k->pk;
        r->pk_len = k->pk_len;
        return 1;
    }
    zx_pb b = {.p = k->data, .len = k->len, .at = k->at};
    zx_pb_field f;
    const char *why = "";
    while (zx_pb_next(&b, &f, &why) == 1) {
        if (f.wt != ZX_PB_LEN || f.num != F_RECORDS)
            continue;
        kpl_record rec;
        if (read_record(f.p, f.len, &rec, &why) < 0 || rec.pki >= k->npks ||
            (rec.has_ehki && rec.ehki >= k->nehks))
            break; /* checked by zx_kpl_open: never */
        k->at = b.at;
        r->data = rec.data;
        r->len = rec.len;
        r->partition_key = k->pks[rec.pki].p;
        r->pk_len = k->pks[rec.pki].len;
        if (rec.has_ehki) {
            r->explicit_hash_key = k->ehks[rec.ehki].p;
            r->ehk_len = k->ehks[rec.ehki].len;
        }
        r->sub_seq = k->next_sub++;
        return 1;
    }
    k->done = 1;
    return 0;
}

void zx_kpl_free(zx_kpl *k)
{
    free(k->pks);
    free(k->ehks);
    k->pks = k->ehks = NULL;
    k->npks = k->nehks = 0;
    k->done = 1;
}
