/*
 * dhttp_json.c — rows and keys as JSON items, and the body's shape
 * (dhttp_json.h).
 */
#include "workers/destinations/http/dhttp_json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/timefmt.h"

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    unsigned cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

int zx_dhttp_json_str(zx_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    if (zx_buf_reserve(b, n + 2) < 0 || zx_buf_put(b, "\"", 1) < 0)
        return -1;
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && u[run] >= 0x20 && u[run] < 0x80 && u[run] != '"' && u[run] != '\\')
            run++;
        if (run > i && zx_buf_put(b, s + i, run - i) < 0)
            return -1;
        i = run;
        if (i >= n)
            break;
        unsigned c = u[i];
        int rc;
        if (c == '"')
            rc = zx_buf_put(b, "\\\"", 2);
        else if (c == '\\')
            rc = zx_buf_put(b, "\\\\", 2);
        else if (c == '\n')
            rc = zx_buf_put(b, "\\n", 2);
        else if (c == '\r')
            rc = zx_buf_put(b, "\\r", 2);
        else if (c == '\t')
            rc = zx_buf_put(b, "\\t", 2);
        else if (c < 0x20)
            rc = zx_buf_printf(b, "\\u%04x", c);
        else {
            size_t l = utf8_len(u + i, n - i);
            if (!l) {
                rc = zx_buf_put(b, "\xef\xbf\xbd", 3);   /* U+FFFD */
                l = 1;
            } else {
                rc = zx_buf_put(b, s + i, l);
            }
            if (rc < 0)
                return -1;
            i += l;
            continue;
        }
        if (rc < 0)
            return -1;
        i++;
    }
    return zx_buf_put(b, "\"", 1);
}

static int put_null_misfit(zx_buf *b, const zx_dcol *c, const zx_value *v, zx_dest_stats *st)
{
    st->nulled++;
    zx_dest_misfit(st, c->name, v);
    return zx_buf_put(b, "null", 4);
}

/* 1 when s is a JSON number literal (the characters of one; a number kept
 * as text is one, rowset.h). */
static int number_chars(const char *s, size_t n)
{
    if (!n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("-+.eE0123456789", s[i]) || !s[i])
            return 0;
    return 1;
}

static int put_double(zx_buf *b, double d, const zx_dcol *c, const zx_value *v,
                      zx_dest_stats *st)
{
    if (!isfinite(d))
        return put_null_misfit(b, c, v, st);
    return zx_buf_printf(b, "%.17g", d);
}

/* One value of column c. */
static int put_value(zx_buf *b, const zx_dcol *c, const zx_value *v, zx_dest_stats *st)
{
    switch (v->type) {
    case ZX_T_NULL:
        return zx_buf_put(b, "null", 4);
    case ZX_T_INT:
        if (c->type == ZX_DT_BOOL)
            return v->u.i ? zx_buf_put(b, "true", 4) : zx_buf_put(b, "false", 5);
        return zx_buf_printf(b, "%lld", (long long)v->u.i);
    case ZX_T_REAL:
        return put_double(b, v->u.d, c, v, st);
    case ZX_T_BOOL:
        return v->u.b ? zx_buf_put(b, "true", 4) : zx_buf_put(b, "false", 5);
    case ZX_T_TIMESTAMP: {
        char ts[ZX_TS_BUFSZ];
        size_t n = zx_ts_format(v->u.i, ts);
        return zx_buf_printf(b, "\"%.*s\"", (int)n, ts);
    }
    case ZX_T_JSON:
        if (!v->s || !v->len)
            return zx_buf_put(b, "null", 4);
        if (zx_value_is_number_text(v) && !number_chars(v->s, v->len))
            return put_null_misfit(b, c, v, st);
        return zx_buf_put(b, v->s, v->len);
    case ZX_T_TEXT: {
        const char *s = v->s ? v->s : "";
        if (c->type == ZX_DT_BYTES) {
            if (zx_buf_reserve(b, ZX_BASE64_LEN((size_t)v->len) + 3) < 0)
                return -1;
            b->p[b->len++] = '"';
            b->len += zx_base64_encode((const uint8_t *)s, v->len, b->p + b->len);
            return zx_buf_put(b, "\"", 1);
        }
        if (c->type == ZX_DT_INT64 || c->type == ZX_DT_DOUBLE) {
            char tmp[64], *end = NULL;
            if (!v->len || v->len >= sizeof(tmp))
                return put_null_misfit(b, c, v, st);
            memcpy(tmp, s, v->len);
            tmp[v->len] = 0;
            errno = 0;
            if (c->type == ZX_DT_INT64) {
                long long x = strtoll(tmp, &end, 10);
                if (errno || *end || end == tmp)
                    return put_null_misfit(b, c, v, st);
                return zx_buf_printf(b, "%lld", x);
            }
            double d = strtod(tmp, &end);
            if (errno || *end || end == tmp)
                return put_null_misfit(b, c, v, st);
            return put_double(b, d, c, v, st);
        }
        return zx_dhttp_json_str(b, s, v->len);
    }
    default:
        return put_null_misfit(b, c, v, st);
    }
}

/* The result's column named name (its type), or a text column. */
static zx_dcol col_named(const zx_dcol *cols, size_t ncols, const char *name)
{
    for (size_t i = 0; i < ncols; i++)
        if (!strcmp(cols[i].name, name))
            return cols[i];
    return (zx_dcol){.name = name, .type = ZX_DT_TEXT};
}

/* The members of row r of rs, "k":v,... (column types from cols). */
static int put_members(zx_buf *b, const zx_rowset *rs, uint32_t r, const zx_dcol *cols,
                       size_t ncols, zx_value *vals, zx_dest_stats *st, int first)
{
    zx_rowset_row(rs, r, vals);
    for (uint32_t i = 0; i < rs->ncols; i++) {
        zx_dcol c = col_named(cols, ncols, rs->cols[i].name);
        if ((!first && zx_buf_put(b, ",", 1) < 0) ||
            zx_dhttp_json_str(b, rs->cols[i].name, rs->cols[i].name_len) < 0 ||
            zx_buf_put(b, ":", 1) < 0 || put_value(b, &c, &vals[i], st) < 0)
            return -1;
        first = 0;
    }
    return 0;
}

int zx_dhttp_row(zx_buf *b, const zx_rowset *rs, uint32_t r, const zx_dcol *cols,
                 size_t ncols, const char *op_field, zx_value *vals, zx_dest_stats *st)
{
    if (zx_buf_put(b, "{", 1) < 0)
        return -1;
    if (op_field && (zx_dhttp_json_str(b, op_field, strlen(op_field)) < 0 ||
                     zx_buf_put(b, ":\"upsert\"", 9) < 0))
        return -1;
    if (put_members(b, rs, r, cols, ncols, vals, st, !op_field) < 0)
        return -1;
    return zx_buf_put(b, "}", 1);
}

int zx_dhttp_key(zx_buf *b, const zx_rowset *keys, uint32_t r, const zx_dcol *cols,
                 size_t ncols, const char *op, zx_value *vals, zx_dest_stats *st)
{
    if (op && (zx_buf_put(b, "{", 1) < 0 || zx_dhttp_json_str(b, op, strlen(op)) < 0 ||
               zx_buf_put(b, ":\"delete\",\"key\":", 16) < 0))
        return -1;
    if (zx_buf_put(b, "{", 1) < 0 || put_members(b, keys, r, cols, ncols, vals, st, 1) < 0 ||
        zx_buf_put(b, "}", 1) < 0)
        return -1;
    return op ? zx_buf_put(b, "}", 1) : 0;
}

int zx_dhttp_open(zx_buf *b, zx_dhttp_shape shape, const char *wrap)
{
    if (shape == ZX_DHTTP_NDJSON)
        return zx_buf_reserve(b, 0);
    if (shape == ZX_DHTTP_WRAP && (zx_buf_put(b, "{", 1) < 0 ||
                                   zx_dhttp_json_str(b, wrap, strlen(wrap)) < 0 ||
                                   zx_buf_put(b, ":", 1) < 0))
        return -1;
    return zx_buf_put(b, "[", 1);
}

int zx_dhttp_sep(zx_buf *b, zx_dhttp_shape shape)
{
    return zx_buf_put(b, shape == ZX_DHTTP_NDJSON ? "\n" : ",", 1);
}

int zx_dhttp_close(zx_buf *b, zx_dhttp_shape shape)
{
    if (shape == ZX_DHTTP_NDJSON)
        return zx_buf_put(b, "\n", 1);
    return zx_buf_put(b, shape == ZX_DHTTP_WRAP ? "]}" : "]", shape == ZX_DHTTP_WRAP ? 2 : 1);
}

const char *zx_dhttp_content_type(zx_dhttp_shape shape)
{
    return shape == ZX_DHTTP_NDJSON ? "application/x-ndjson" : "application/json";
}
