/*
 * coltype.c — a column's type from all of its values (coltype.h).
 *
 * It must never: decide from one value alone what the next ones may hold,
 * or make a type narrower.
 */
#include "workers/syncs/coltype.h"

#include <string.h>

/* 1 when v's bytes are UTF-8 (text a TEXT column keeps), else 0. */
static int utf8(const zx_value *v)
{
    return !v->s || zx_dc_utf8_valid(v->s, v->len);
}

/* The type a first value gives a column without a declared one. */
static zx_dtype natural(const zx_value *v)
{
    switch (v->type) {
    case ZX_T_INT: return ZX_DT_INT64;
    case ZX_T_REAL: return ZX_DT_DOUBLE;
    case ZX_T_BOOL: return ZX_DT_BOOL;
    case ZX_T_TIMESTAMP: return ZX_DT_TIMESTAMP;
    case ZX_T_JSON: return ZX_DT_JSON;
    default: return utf8(v) ? ZX_DT_TEXT : ZX_DT_BYTES;
    }
}

/* 1 when column c keeps v without loss, 0 when not, -1 out of memory. */
static int fits(const zx_dcol *c, const zx_value *v, zx_buf *scratch)
{
    switch (c->type) {
    case ZX_DT_BYTES:
        return 1;
    case ZX_DT_TEXT:
        return v->type == ZX_T_INT || v->type == ZX_T_REAL || v->type == ZX_T_BOOL ||
               utf8(v);
    case ZX_DT_INT64:
        return v->type == ZX_T_INT || v->type == ZX_T_BOOL;
    case ZX_DT_DOUBLE:
        return v->type == ZX_T_INT || v->type == ZX_T_REAL || v->type == ZX_T_BOOL;
    case ZX_DT_BOOL:
        return v->type == ZX_T_BOOL || (v->type == ZX_T_INT && (v->u.i == 0 || v->u.i == 1));
    default: {
        /* TIMESTAMP, DATE, DECIMAL, JSON: what a table column of the type
         * takes (the stricter of tables and files, NUL bytes aside) */
        zx_dc_target t = zx_dc_target_of(c->type, c->precision, c->scale);
        zx_dc_out out;
        t.nul_ok = 1;
        return zx_dc_convert(&t, v, scratch, &out);
    }
    }
}

/* The next wider type of t for a value it does not take. */
static zx_dtype wider(zx_dtype t, const zx_value *v)
{
    switch (t) {
    case ZX_DT_BOOL:
        return v->type == ZX_T_INT ? ZX_DT_INT64 : v->type == ZX_T_REAL ? ZX_DT_DOUBLE
                                                                       : ZX_DT_TEXT;
    case ZX_DT_INT64:
        return v->type == ZX_T_REAL ? ZX_DT_DOUBLE : ZX_DT_TEXT;
    case ZX_DT_TEXT:
        return ZX_DT_BYTES;
    default:
        return ZX_DT_TEXT;
    }
}

int zx_coltype_see(zx_dcol *c, int *undecided, const zx_value *v, zx_buf *scratch)
{
    if (!v || v->type == ZX_T_NULL)
        return 0;
    if (*undecided) {
        *undecided = 0;
        c->type = natural(v);
        c->precision = c->scale = 0;
        return 1;
    }
    int changed = 0;
    for (;;) {
        int f = fits(c, v, scratch);
        if (f < 0)
            return -1;
        if (f)
            return changed;
        c->type = wider(c->type, v);
        c->precision = c->scale = 0;
        changed = 1;
    }
}
