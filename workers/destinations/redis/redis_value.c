/*
 * redis_value.c — a result value's text for Redis (redis_value.h).
 */
#include "workers/destinations/redis/redis_value.h"

#include <stdio.h>
#include <string.h>

#include "common/timefmt.h"

int zx_redis_value_text(const zx_dcol *c, const zx_value *v, zx_buf *scratch,
                        zx_redis_text *t)
{
    zx_dc_target tg = zx_dc_target_file(c);
    zx_dc_out o;
    int r = zx_dc_convert(&tg, v, scratch, &o);
    if (r < 0)
        return -1;
    if (r == 0)
        return 2;
    if (o.null)
        return 0;
    t->s = t->tmp;
    switch (c->type) {
    case ZX_DT_INT64:
        t->n = (size_t)snprintf(t->tmp, sizeof(t->tmp), "%lld", (long long)o.i);
        break;
    case ZX_DT_BOOL:
        t->n = (size_t)snprintf(t->tmp, sizeof(t->tmp), "%s", o.i ? "true" : "false");
        break;
    case ZX_DT_DOUBLE:
        t->n = zx_dc_double_text(o.d, t->tmp);
        break;
    case ZX_DT_TIMESTAMP: {
        char ts[ZX_TS_BUFSZ];
        size_t n = zx_ts_format(o.i, ts);
        if (n >= sizeof(t->tmp))
            n = sizeof(t->tmp) - 1;
        memcpy(t->tmp, ts, n);
        t->tmp[n] = '\0';
        t->n = n;
        break;
    }
    case ZX_DT_DATE:
        t->n = zx_dc_date_text(o.i, t->tmp);
        break;
    case ZX_DT_DECIMAL:
        if (c->precision >= 1 && c->precision <= 38) {
            t->n = zx_dc_decimal_text(o.dec, c->scale, t->tmp);
            break;
        }
        t->s = o.s ? o.s : "";      /* the literal */
        t->n = o.s ? o.len : 0;
        break;
    default:
        t->s = o.s ? o.s : "";
        t->n = o.s ? o.len : 0;
        break;
    }
    return 1;
}
