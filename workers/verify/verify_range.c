/*
 * verify_range.c — the SQL of `zxctl verify`'s range hashing
 * (verify_int.h), the same on the source and on a Postgres workspace:
 * key bounds, and each row's hash.  Pure (builds text only).
 *
 * A row's hash is the first 64 bits of md5(ROW(c1, ...)::text) over the
 * columns the mirror has: a record's text is each value's output
 * function's text, quoted where needed and NULL distinct from '', so two
 * servers printing the same types under the same session settings give
 * the same text exactly when the key-by-key comparison finds the values
 * equal.  A range's hash is the sum of its rows' hashes (numeric, so it
 * neither overflows nor depends on the order of the rows).
 */
#include "workers/verify/verify_int.h"

#include <stdio.h>
#include <string.h>

/* Key types whose order is the same on every server (no collation, no
 * enum or domain whose order each database defines). */
static int ordered_everywhere(uint32_t oid)
{
    switch (oid) {
    case 20: case 21: case 23: case 26:   /* int8 int2 int4 oid */
    case 1700: case 2950:                 /* numeric uuid */
    case 1082: case 1114: case 1184:      /* date timestamp timestamptz */
        return 1;
    default:
        return 0;
    }
}

int vf_range_ok(const vf_table *t)
{
    for (uint32_t i = 0; i < t->ncols; i++)
        if (t->in_mirror[i] &&
            (!t->mtypes || !t->mtypes[i] || !t->stypes[i] || strcmp(t->mtypes[i], t->stypes[i])))
            return 0;
    for (uint32_t k = 0; k < t->nkeys; k++)
        if (!ordered_everywhere(t->oids[t->keys[k]]))
            return 0;
    return 1;
}

int vf_put_keylist(zx_buf *b, const vf_table *t, int desc)
{
    for (uint32_t k = 0; k < t->nkeys; k++)
        if ((k && vf_put(b, ", ") < 0) || vf_put_ident(b, t->cols[t->keys[k]]) < 0 ||
            (desc && vf_put(b, " DESC") < 0))
            return -1;
    return 0;
}

/* "(k1, ...) OP ($F+1::T1, ...)" */
static int put_bound(zx_buf *b, const vf_table *t, char *const *types, const char *op,
                     uint32_t first)
{
    if (vf_put(b, "(") < 0 || vf_put_keylist(b, t, 0) < 0 || vf_put(b, ") ") < 0 ||
        vf_put(b, op) < 0 || vf_put(b, " (") < 0)
        return -1;
    for (uint32_t k = 0; k < t->nkeys; k++) {
        char p[32];
        snprintf(p, sizeof(p), "%s$%u::", k ? ", " : "", first + k + 1);
        if (vf_put(b, p) < 0 || vf_put(b, types[t->keys[k]]) < 0)
            return -1;
    }
    return vf_put(b, ")");
}

int vf_put_bounds(zx_buf *b, const vf_table *t, char *const *types, int lo, int hi)
{
    if (lo && (vf_put(b, " WHERE ") < 0 || put_bound(b, t, types, ">", 0) < 0))
        return -1;
    if (hi && (vf_put(b, lo ? " AND " : " WHERE ") < 0 ||
               put_bound(b, t, types, "<=", lo ? t->nkeys : 0) < 0))
        return -1;
    return 0;
}

int vf_put_rowhash(zx_buf *b, const vf_table *t)
{
    int first = 1;
    if (vf_put(b, "('x' || substr(md5(ROW(") < 0)
        return -1;
    for (uint32_t i = 0; i < t->ncols; i++) {
        if (!t->in_mirror[i])
            continue;
        if ((!first && vf_put(b, ", ") < 0) || vf_put_ident(b, t->cols[i]) < 0)
            return -1;
        first = 0;
    }
    return vf_put(b, ")::text), 1, 16))::bit(64)::bigint");
}
