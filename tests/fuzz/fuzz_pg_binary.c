/*
 * fuzz_pg_binary.c — fuzz target for workers/sources/postgres/pg_binary.c:
 * bytes from a server as a binary COPY (header, tuples) and as values of
 * each known type.
 *
 * Input:
 *   byte 0   which type (an index into the known OIDs)
 *   then     the bytes, copied to a heap block of exactly their length
 *            (ASan sees any read past it), given to zx_pgbin_value, and
 *            to zx_pgbin_header and zx_pgbin_tuple.
 *
 * Checks: a header's length is within the input; a tuple's fields lie
 * within it, in order, and their 4-byte lengths and bytes make up exactly
 * the tuple; a value decoded is of the type the OID gives (TEXT for the
 * text forms of numeric, date and out-of-range timestamps), a numeric's
 * text is digits with at most one point and a leading '-' (or NaN,
 * Infinity, -Infinity), a timestamp's text is zx's form of its instant,
 * and text-like values are the input's bytes; as a message of a COPY of
 * 1-4 columns, a row is added or none and the rowset is left as it was.
 * Leaks: ASan.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/pg_binary/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"
#include "tests/fuzz/fuzz_check.h"
#include "workers/sources/postgres/pg_binary.h"
#include "workers/sources/postgres/pg_values.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint32_t oids[] = {
    ZX_PGOID_BOOL, ZX_PGOID_BYTEA, ZX_PGOID_INT8, ZX_PGOID_INT2, ZX_PGOID_INT4, ZX_PGOID_TEXT,
    ZX_PGOID_OID, ZX_PGOID_JSON, ZX_PGOID_FLOAT4, ZX_PGOID_FLOAT8, ZX_PGOID_TIMESTAMP,
    ZX_PGOID_TIMESTAMPTZ, ZX_PGOID_NUMERIC, ZX_PGOID_JSONB, ZX_PGOID_NAME, ZX_PGOID_BPCHAR,
    ZX_PGOID_VARCHAR, ZX_PGOID_DATE, ZX_PGOID_UUID
};

static void check_numeric(const zx_value *v)
{
    fuzz_check(v->type == ZX_T_TEXT && v->len > 0, "numeric: not a text");
    if ((v->len == 3 && !memcmp(v->s, "NaN", 3)) || (v->len == 8 && !memcmp(v->s, "Infinity", 8)) ||
        (v->len == 9 && !memcmp(v->s, "-Infinity", 9)))
        return;
    int point = 0, digits = 0;
    for (uint32_t i = 0; i < v->len; i++) {
        char c = v->s[i];
        if (c == '-')
            fuzz_check(i == 0, "numeric: '-' not first");
        else if (c == '.')
            fuzz_check(!point++ && digits, "numeric: a second point, or no digit before it");
        else
            fuzz_check(c >= '0' && c <= '9' && ++digits, "numeric: not a digit");
    }
    fuzz_check(digits > 0 && v->s[v->len - 1] != '.', "numeric: no digits");
}

static void check_value(uint32_t oid, const unsigned char *b, size_t n)
{
    zx_rowset rs;
    zx_rowset_init(&rs);
    zx_value v;
    int rc = zx_pgbin_value(oid, b, n, &rs, &v);
    fuzz_check(rc == 0 || rc == 1, "value: not 0 or 1 (no allocation fails here)");
    if (rc == 0) {
        switch (oid) {
        case ZX_PGOID_BOOL: fuzz_check(v.type == ZX_T_BOOL && n == 1, "bool"); break;
        case ZX_PGOID_INT2: case ZX_PGOID_INT4: case ZX_PGOID_INT8: case ZX_PGOID_OID:
            fuzz_check(v.type == ZX_T_INT, "int: not an INT");
            break;
        case ZX_PGOID_FLOAT4: case ZX_PGOID_FLOAT8:
            fuzz_check(v.type == ZX_T_REAL, "float: not a REAL");
            break;
        case ZX_PGOID_NUMERIC: check_numeric(&v); break;
        case ZX_PGOID_TIMESTAMP: case ZX_PGOID_TIMESTAMPTZ:
            if (v.type == ZX_T_TIMESTAMP) {
                char t[ZX_TS_BUFSZ];
                size_t tl = zx_ts_format(v.u.i, t);
                fuzz_check(tl == v.len && !memcmp(t, v.s, tl), "timestamp: text not its instant");
            } else {
                fuzz_check(v.type == ZX_T_TEXT && v.len > 0, "timestamp: neither");
            }
            break;
        case ZX_PGOID_DATE: case ZX_PGOID_UUID:
            fuzz_check(v.type == ZX_T_TEXT && v.len >= 8, "date/uuid: not a text");
            break;
        case ZX_PGOID_JSON:
            fuzz_check(v.type == ZX_T_JSON && v.len == n && !memcmp(v.s, b, n), "json");
            break;
        case ZX_PGOID_JSONB:
            fuzz_check(v.type == ZX_T_JSON && v.len + 1 == n && !memcmp(v.s, b + 1, n - 1),
                       "jsonb");
            break;
        default:
            fuzz_check(v.type == ZX_T_TEXT && v.len == n && (!n || !memcmp(v.s, b, n)),
                       "text-like: not its bytes");
        }
    }
    zx_rowset_free(&rs);
}

static void check_framing(const unsigned char *b, size_t n)
{
    int64_t h = zx_pgbin_header(b, n);
    fuzz_check(h == -1 || (h >= 19 && (size_t)h <= n), "header: length outside the input");
    const unsigned char *f[8];
    int32_t fl[8];
    int nf = zx_pgbin_tuple(b, n, 8, f, fl);
    fuzz_check(nf >= -2 && nf <= 8, "tuple: count out of range");
    if (nf == -1)
        fuzz_check(n == 2, "trailer: not 2 bytes");
    if (nf < 0)
        return;
    size_t o = 2;
    for (int i = 0; i < nf; i++) {
        o += 4;
        fuzz_check(fl[i] >= -1, "tuple: length below -1");
        if (fl[i] < 0) {
            fuzz_check(f[i] == NULL, "tuple: a NULL with bytes");
            continue;
        }
        fuzz_check(f[i] == b + o && o + (size_t)fl[i] <= n, "tuple: field not in order / outside");
        o += (size_t)fl[i];
    }
    fuzz_check(o == n, "tuple: bytes left over");
}

/* The input as a message of a COPY of 1-4 columns of types picked by
 * byte 0, the header first or already read: a row added or none, and a
 * rowset left as it was when none. */
static void check_row(uint8_t pick, const unsigned char *b, size_t n)
{
    size_t nk = sizeof(oids) / sizeof(oids[0]);
    size_t ncols = 1 + pick % 4;
    uint32_t types[4];
    for (size_t i = 0; i < ncols; i++)
        types[i] = oids[(pick / 4 + i * 5) % nk];
    zx_pgbin_copy c;
    if (zx_pgbin_copy_init(&c, types, ncols) < 0)
        return;
    c.header_seen = (pick & 0x80) != 0;
    zx_rowset rs;
    zx_rowset_init(&rs);
    static const char *names[4] = { "a", "b", "c", "d" };
    for (size_t i = 0; i < ncols; i++)
        if (zx_rowset_column(&rs, names[i], 1, zx_pgv_type(types[i])) != (int64_t)i) {
            zx_rowset_free(&rs);
            zx_pgbin_copy_free(&c);
            return;
        }
    char why[200];
    int rc = zx_pgbin_copy_row(&c, b, n, NULL, &rs, why, sizeof(why));
    fuzz_check(rc >= -1 && rc <= 1, "row: not -1, 0 or 1 (no allocation fails here)");
    fuzz_check((uint64_t)rs.nrows == (rc == 1 ? 1u : 0u), "row: rows not as returned");
    zx_rowset_free(&rs);
    zx_pgbin_copy_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 16)
        return 0;
    uint32_t oid = oids[data[0] % (sizeof(oids) / sizeof(oids[0]))];
    size_t n = size - 1;
    unsigned char *b = malloc(n ? n : 1);
    if (!b)
        return 0;
    memcpy(b, data + 1, n);
    check_value(oid, b, n);
    check_framing(b, n);
    check_row(data[0], b, n);
    free(b);
    return 0;
}
