/*
 * textrows.c — CSV and NDJSON lines (textrows.h).  Appends to a buffer;
 * must never write to a file descriptor or allocate per value beyond the
 * buffer's growth.
 */
#include "formats/textrows.h"

#include <math.h>
#include <string.h>

#include "common/timefmt.h"

static int put(zx_fbuf *b, const char *s, size_t n)
{
    if (zx_fbuf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

static int putc1(zx_fbuf *b, char c)
{
    if (zx_fbuf_reserve(b, 1) < 0)
        return -1;
    b->p[b->len++] = c;
    return 0;
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

int zx_base64(zx_fbuf *b, const unsigned char *s, size_t n)
{
    static const char tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n > (SIZE_MAX / 4) * 3 - 3 || zx_fbuf_reserve(b, (n + 2) / 3 * 4) < 0)
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
static size_t scalar_text(const zx_dcol *c, const zx_fv *fv, char out[ZX_FV_TEXTSZ])
{
    switch (c->type) {
    case ZX_DT_INT64:
        return fmt_i64(fv->i, out);
    case ZX_DT_BOOL:
        memcpy(out, fv->i ? "true" : "false", 5);
        return fv->i ? 4 : 5;
    case ZX_DT_DOUBLE:
        return zx_fv_fmt_double(fv->d, out);
    case ZX_DT_TIMESTAMP:
        return zx_ts_format(fv->i, out);
    case ZX_DT_DATE:
        return zx_fv_fmt_date(fv->i, out);
    case ZX_DT_DECIMAL:
        return zx_fv_fmt_decimal(fv->dec, c->scale, out);
    default:
        return 0;
    }
}

/* ---- CSV ---------------------------------------------------------------- */

static int csv_field(zx_fbuf *b, const char *s, size_t n)
{
    int quote = n == 0;
    for (size_t i = 0; i < n && !quote; i++) {
        char ch = s[i];
        if (ch == ',' || ch == '"' || ch == '\r' || ch == '\n')
            quote = 1;
    }
    if (!quote)
        return put(b, s, n);
    if (zx_fbuf_reserve(b, 2 * n + 2) < 0)
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

int zx_csv_header(zx_fbuf *b, const zx_dcol *cols, size_t ncols)
{
    for (size_t i = 0; i < ncols; i++)
        if ((i && putc1(b, ',') < 0) || csv_field(b, cols[i].name, strlen(cols[i].name)) < 0)
            return -1;
    return put(b, "\r\n", 2);
}

int zx_csv_row(zx_fbuf *b, const zx_dcol *cols, size_t ncols, const zx_value *vals,
               zx_fbuf *scratch, uint64_t *nulled)
{
    for (size_t i = 0; i < ncols; i++) {
        if (i && putc1(b, ',') < 0)
            return -1;
        zx_fv fv;
        int r = zx_fv_convert(&cols[i], &vals[i], &fv, scratch);
        if (r == ZX_FV_NOMEM)
            return -1;
        if (r != ZX_FV_OK) {
            if (r == ZX_FV_MISFIT)
                (*nulled)++;
            continue;
        }
        switch (cols[i].type) {
        case ZX_DT_TEXT:
        case ZX_DT_JSON:
            if (csv_field(b, fv.s, fv.n) < 0)
                return -1;
            break;
        case ZX_DT_BYTES:
            if (fv.n == 0 ? put(b, "\"\"", 2) < 0
                          : zx_base64(b, (const unsigned char *)fv.s, fv.n) < 0)
                return -1;
            break;
        default: {
            char t[ZX_FV_TEXTSZ];
            if (put(b, t, scalar_text(&cols[i], &fv, t)) < 0)
                return -1;
        }
        }
    }
    return put(b, "\r\n", 2);
}

/* ---- NDJSON ------------------------------------------------------------- */

/* Embedded JSON text on one line: CR and LF can only be blanks between
 * tokens (a JSON string holds none raw), so they become spaces. */
static int put_json_line(zx_fbuf *b, const char *s, size_t n)
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

int zx_ndjson_row(zx_fbuf *b, const zx_dcol *cols, size_t ncols, const zx_value *vals,
                  zx_fbuf *scratch, uint64_t *nulled)
{
    if (putc1(b, '{') < 0)
        return -1;
    for (size_t i = 0; i < ncols; i++) {
        if ((i && putc1(b, ',') < 0) || zx_fv_json_quote(b, cols[i].name, strlen(cols[i].name), 1) < 0 ||
            putc1(b, ':') < 0)
            return -1;
        zx_fv fv;
        int r = zx_fv_convert(&cols[i], &vals[i], &fv, scratch);
        if (r == ZX_FV_NOMEM)
            return -1;
        if (r == ZX_FV_OK && cols[i].type == ZX_DT_DOUBLE && !isfinite(fv.d))
            r = ZX_FV_MISFIT;
        if (r != ZX_FV_OK) {
            if (r == ZX_FV_MISFIT)
                (*nulled)++;
            if (put(b, "null", 4) < 0)
                return -1;
            continue;
        }
        int rc;
        char t[ZX_FV_TEXTSZ];
        size_t tn;
        switch (cols[i].type) {
        case ZX_DT_TEXT:
            rc = zx_fv_json_quote(b, fv.s, fv.n, 1) < 0 ? -1 : 0;
            break;
        case ZX_DT_JSON:
            rc = put_json_line(b, fv.s, fv.n);
            break;
        case ZX_DT_BYTES:
            rc = putc1(b, '"') < 0 || zx_base64(b, (const unsigned char *)fv.s, fv.n) < 0 ||
                 putc1(b, '"') < 0 ? -1 : 0;
            break;
        case ZX_DT_INT64:
        case ZX_DT_DOUBLE:
        case ZX_DT_BOOL:
            tn = scalar_text(&cols[i], &fv, t);
            rc = put(b, t, tn);
            break;
        default:                        /* TIMESTAMP, DATE, DECIMAL: strings */
            tn = scalar_text(&cols[i], &fv, t);
            rc = putc1(b, '"') < 0 || put(b, t, tn) < 0 || putc1(b, '"') < 0 ? -1 : 0;
            break;
        }
        if (rc < 0)
            return -1;
    }
    return put(b, "}\n", 2);
}
