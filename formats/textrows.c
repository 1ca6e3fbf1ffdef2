/*
 * textrows.c — CSV and NDJSON lines (textrows.h).  Appends to a buffer;
 * must never write to a file descriptor or allocate per value beyond the
 * buffer's growth.
 */
#include "formats/textrows.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/timefmt.h"

static int put(zx_buf *b, const char *s, size_t n)
{
    return zx_buf_put(b, s, n);
}

static int putc1(zx_buf *b, char c)
{
    return zx_buf_put(b, &c, 1);
}

static size_t fmt_i64(int64_t v, char *out)
{
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t o = 0;
    if (v < 0)
        out[o++] = '-';
    while (n)
        out[o++] = tmp[--n];
    return o;
}

int zx_base64(zx_buf *b, const unsigned char *s, size_t n)
{
    static const char tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n > (SIZE_MAX / 4) * 3 - 3 || zx_buf_reserve(b, (n + 2) / 3 * 4) < 0)
        return -1;
    char *o = b->p + b->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = tab[(v >> 6) & 63];
        *o++ = tab[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    b->len = (size_t)(o - b->p);
    return 0;
}

/* ---- text form of a converted value (everything but TEXT/JSON/BYTES) -- */

/* Into out: the value's text for CSV and (quoted where textrows.h says)
 * NDJSON.  Returns the length. */
static size_t scalar_text(const zx_dcol *c, const zx_dc_out *o, char out[ZX_DC_TEXTSZ])
{
    switch (c->type) {
    case ZX_DT_INT64:
        return fmt_i64(o->i, out);
    case ZX_DT_BOOL:
        memcpy(out, o->i ? "true" : "false", 5);
        return o->i ? 4 : 5;
    case ZX_DT_DOUBLE:
        return zx_dc_double_text(o->d, out);
    case ZX_DT_TIMESTAMP:
        return zx_ts_format(o->i, out);
    case ZX_DT_DATE:
        return zx_dc_date_text(o->i, out);
    case ZX_DT_DECIMAL:
        return zx_dc_decimal_text(o->dec, c->scale, out);
    default:
        return 0;
    }
}

/* A value of column i was written as NULL: count it, note the first. */
static void misfit_at(size_t i, uint64_t *nulled, size_t *misfit)
{
    (*nulled)++;
    if (misfit && *misfit == SIZE_MAX)
        *misfit = i;
}

/* Value v of column cols[i] as a file stores it: 1 (a value), 0 (NULL: a
 * misfit counts in *nulled, see misfit_at), -1 (out of memory). */
static int convert(const zx_dcol *cols, size_t i, const zx_value *v, zx_buf *scratch,
                   zx_dc_out *o, uint64_t *nulled, size_t *misfit)
{
    zx_dc_target t = zx_dc_target_file(&cols[i]);
    int r = zx_dc_convert(&t, v, scratch, o);
    if (r == 0)
        misfit_at(i, nulled, misfit);
    return r < 0 ? -1 : !o->null;
}

/* ---- CSV ---------------------------------------------------------------- */

static int csv_field(zx_buf *b, const char *s, size_t n)
{
    int quote = n == 0;
    for (size_t i = 0; i < n && !quote; i++) {
        char ch = s[i];
        if (ch == ',' || ch == '"' || ch == '\r' || ch == '\n')
            quote = 1;
    }
    if (!quote)
        return put(b, s, n);
    if (zx_buf_reserve(b, 2 * n + 2) < 0)
        return -1;
    char *o = b->p + b->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            *o++ = '"';
        *o++ = s[i];
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
    return 0;
}

int zx_csv_header(zx_buf *b, const zx_dcol *cols, size_t ncols)
{
    for (size_t i = 0; i < ncols; i++)
        if ((i && putc1(b, ',') < 0) || csv_field(b, cols[i].name, strlen(cols[i].name)) < 0)
            return -1;
    return put(b, "\r\n", 2);
}

int zx_csv_row(zx_buf *b, const zx_dcol *cols, size_t ncols, const zx_value *vals,
               zx_buf *scratch, uint64_t *nulled, size_t *misfit)
{
    for (size_t i = 0; i < ncols; i++) {
        if (i && putc1(b, ',') < 0)
            return -1;
        zx_dc_out o;
        int r = convert(cols, i, &vals[i], scratch, &o, nulled, misfit);
        if (r < 0)
            return -1;
        if (r == 0)
            continue;
        switch (cols[i].type) {
        case ZX_DT_TEXT:
        case ZX_DT_JSON:
            if (csv_field(b, o.s, o.len) < 0)
                return -1;
            break;
        case ZX_DT_BYTES:
            if (o.len == 0 ? put(b, "\"\"", 2) < 0
                           : zx_base64(b, (const unsigned char *)o.s, o.len) < 0)
                return -1;
            break;
        default: {
            char t[ZX_DC_TEXTSZ];
            if (put(b, t, scalar_text(&cols[i], &o, t)) < 0)
                return -1;
        }
        }
    }
    return put(b, "\r\n", 2);
}

/* ---- NDJSON ------------------------------------------------------------- */

/* Embedded JSON text on one line: CR and LF can only be blanks between
 * tokens (a JSON string holds none raw), so they become spaces. */
static int put_json_line(zx_buf *b, const char *s, size_t n)
{
    size_t at = b->len;
    if (put(b, s, n) < 0)
        return -1;
    for (char *p = b->p + at; (p = memchr(p, '\n', (size_t)(b->p + b->len - p))); p++)
        *p = ' ';
    for (char *p = b->p + at; (p = memchr(p, '\r', (size_t)(b->p + b->len - p))); p++)
        *p = ' ';
    return 0;
}

int zx_ndjson_row(zx_buf *b, const zx_dcol *cols, size_t ncols, const zx_value *vals,
                  zx_buf *scratch, uint64_t *nulled, size_t *misfit)
{
    if (putc1(b, '{') < 0)
        return -1;
    for (size_t i = 0; i < ncols; i++) {
        if ((i && putc1(b, ',') < 0) ||
            zx_dc_json_quote(b, cols[i].name, strlen(cols[i].name), 1, 1) < 0 ||
            putc1(b, ':') < 0)
            return -1;
        zx_dc_out o;
        int r = convert(cols, i, &vals[i], scratch, &o, nulled, misfit);
        if (r < 0)
            return -1;
        if (r == 1 && cols[i].type == ZX_DT_DOUBLE && !isfinite(o.d)) {
            misfit_at(i, nulled, misfit);
            r = 0;
        }
        if (r == 0) {
            if (put(b, "null", 4) < 0)
                return -1;
            continue;
        }
        int rc;
        char t[ZX_DC_TEXTSZ];
        size_t tn;
        switch (cols[i].type) {
        case ZX_DT_TEXT:
            rc = zx_dc_json_quote(b, o.s, o.len, 1, 1) < 0 ? -1 : 0;
            break;
        case ZX_DT_JSON:
            rc = put_json_line(b, o.s, o.len);
            break;
        case ZX_DT_BYTES:
            rc = putc1(b, '"') < 0 || zx_base64(b, (const unsigned char *)o.s, o.len) < 0 ||
                 putc1(b, '"') < 0 ? -1 : 0;
            break;
        case ZX_DT_INT64:
        case ZX_DT_DOUBLE:
        case ZX_DT_BOOL:
            tn = scalar_text(&cols[i], &o, t);
            rc = put(b, t, tn);
            break;
        default:                        /* TIMESTAMP, DATE, DECIMAL: strings */
            tn = scalar_text(&cols[i], &o, t);
            rc = putc1(b, '"') < 0 || put(b, t, tn) < 0 || putc1(b, '"') < 0 ? -1 : 0;
            break;
        }
        if (rc < 0)
            return -1;
    }
    return put(b, "}\n", 2);
}
