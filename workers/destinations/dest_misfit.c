/*
 * dest_misfit.c — zx_dest_misfit (dest.h): the first value a destination
 * wrote as NULL, noted in its run's stats for the run's message.  Linked
 * into every destination (workers/syncs/meson.build).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "workers/destinations/dest.h"

void zx_dest_misfit(zx_dest_stats *st, const char *col, const zx_value *v)
{
    if (!st || st->misfit_col[0])
        return;
    snprintf(st->misfit_col, sizeof(st->misfit_col), "%s", col && col[0] ? col : "?");
    char *o = st->misfit_val;
    size_t n = sizeof(st->misfit_val);
    switch (v ? v->type : ZX_T_NULL) {
    case ZX_T_INT: snprintf(o, n, "%" PRId64, v->u.i); break;
    case ZX_T_REAL: snprintf(o, n, "%.17g", v->u.d); break;
    case ZX_T_BOOL: snprintf(o, n, "%s", v->u.b ? "true" : "false"); break;
    case ZX_T_TEXT:
    case ZX_T_JSON:
    case ZX_T_TIMESTAMP: {
        /* quoted, cut at 48 bytes; control and non-ASCII bytes as '?' so
         * the text stays one valid UTF-8 line whatever the value held */
        size_t len = v->s ? v->len : 0, k = 0, max = 48;
        o[k++] = '"';
        for (size_t i = 0; i < len && i < max && k + 5 < n; i++) {
            unsigned char ch = (unsigned char)v->s[i];
            o[k++] = ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
        }
        if (len > max && k + 5 < n) {
            memcpy(o + k, "...", 3);
            k += 3;
        }
        o[k++] = '"';
        o[k] = '\0';
        break;
    }
    default: snprintf(o, n, "(a value)"); break;
    }
}
