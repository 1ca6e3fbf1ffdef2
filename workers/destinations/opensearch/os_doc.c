/*
 * os_doc.c — documents, ids and mappings of the OpenSearch destination
 * (os_doc.h).  It must never write anything but valid JSON (a value that
 * has none is a misfit: null), nor make two keys the same id.
 */
#include "workers/destinations/opensearch/os_doc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/base64.h"
#include "common/dcell.h"
#include "common/timefmt.h"

/* The target of a column of type t (dcell.h), with what JSON holds: no NaN
 * nor infinities, any byte of text (JSON escapes NUL). */
static zx_dc_target target(const zx_dcol *c)
{
    zx_dc_target t = zx_dc_target_of(c->type, c->precision, c->scale);
    t.nan_ok = 0;
    t.inf_ok = 0;
    t.nul_ok = 1;
    return t;
}

/* Append the JSON form of out (converted for column c) to b.  0 or -1. */
static int put_value(zx_buf *b, const zx_dcol *c, const zx_dc_out *out)
{
    char t[ZX_TS_BUFSZ > 32 ? ZX_TS_BUFSZ : 32];
    size_t n;
    if (out->null)
        return zx_buf_put(b, "null", 4);
    switch (c->type) {
    case ZX_DT_INT64:
        return zx_buf_printf(b, "%" PRId64, out->i);
    case ZX_DT_DOUBLE:
        n = zx_dc_double_text(out->d, t);
        return zx_buf_put(b, t, n);
    case ZX_DT_BOOL:
        return out->i ? zx_buf_put(b, "true", 4) : zx_buf_put(b, "false", 5);
    case ZX_DT_TIMESTAMP:
        n = zx_ts_format(out->i, t);
        return zx_dc_json_quote(b, t, n, 1, 0) < 0 ? -1 : 0;
    case ZX_DT_JSON:
        return zx_buf_put(b, out->s, out->len);
    case ZX_DT_BYTES: {
        if (zx_buf_put(b, "\"", 1) < 0 || zx_buf_reserve(b, ZX_BASE64_LEN(out->len) + 1) < 0)
            return -1;
        b->len += zx_base64_encode((const uint8_t *)out->s, out->len, b->p + b->len);
        return zx_buf_put(b, "\"", 1);
    }
    default:    /* TEXT, DATE, DECIMAL: strings (valid UTF-8: dcell checked) */
        return zx_dc_json_quote(b, out->s, out->len, 1, 1) < 0 ? -1 : 0;
    }
}

int zx_os_doc(zx_buf *b, const zx_dcol *cols, size_t ncols, const zx_value *vals,
              zx_buf *tmp, zx_dest_stats *st)
{
    if (zx_buf_put(b, "{", 1) < 0)
        return -1;
    for (size_t i = 0; i < ncols; i++) {
        zx_dc_target t = target(&cols[i]);
        zx_dc_out out;
        int r = zx_dc_convert(&t, &vals[i], tmp, &out);
        if (r < 0)
            return -1;
        if (r == 0 && vals[i].type != ZX_T_NULL) {
            if (st)
                st->nulled++;
            zx_dest_misfit(st, cols[i].name, &vals[i]);
        }
        if ((i && zx_buf_put(b, ",", 1) < 0) ||
            zx_dc_json_quote(b, cols[i].name, strlen(cols[i].name), 1, 0) < 0 ||
            zx_buf_put(b, ":", 1) < 0 || put_value(b, &cols[i], &out) < 0)
            return -1;
    }
    return zx_buf_put(b, "}", 1);
}

/* Append v's id text to id (escaped when esc).  1, 0 (why), -1. */
static int id_part(zx_buf *id, const zx_value *v, int esc, zx_buf *tmp, const char **why)
{
    char t[ZX_TS_BUFSZ];
    const char *s;
    size_t n;
    if (v->type == ZX_T_NULL) {
        *why = "a key value is NULL";
        return 0;
    }
    if (v->type == ZX_T_TIMESTAMP) {
        n = zx_ts_format(v->u.i, t);
        s = t;
    } else {
        zx_dc_target tt = zx_dc_target_of(ZX_DT_TEXT, 0, 0);
        zx_dc_out out;
        int r = zx_dc_convert(&tt, v, tmp, &out);
        if (r < 0)
            return -1;
        if (r == 0 || out.null) {
            *why = "a key value is not UTF-8 text without NUL bytes";
            return 0;
        }
        s = out.s;
        n = out.len;
    }
    for (size_t i = 0; i < n; i++) {
        if (esc && (s[i] == '\\' || s[i] == '|') && zx_buf_put(id, "\\", 1) < 0)
            return -1;
        if (zx_buf_put(id, s + i, 1) < 0)
            return -1;
        if (id->len > ZX_OS_ID_MAX)
            break;
    }
    return 1;
}

int zx_os_doc_id(zx_buf *id, const zx_value *vals, const size_t *keys, size_t nkeys,
                 zx_buf *tmp, const char **why)
{
    size_t start = id->len;
    *why = NULL;
    if (nkeys == 0) {
        *why = "no key";
        return 0;
    }
    for (size_t k = 0; k < nkeys; k++) {
        if (k && zx_buf_put(id, "|", 1) < 0)
            return -1;
        int r = id_part(id, &vals[keys[k]], nkeys > 1, tmp, why);
        if (r <= 0)
            return r;
        if (id->len - start > ZX_OS_ID_MAX) {
            *why = "the key is longer than the 512 bytes of a document id";
            return 0;
        }
    }
    if (id->len == start) {
        *why = "the key is empty text (a document id cannot be empty)";
        return 0;
    }
    return 1;
}

static int is_key(const char *name, const char *const *key_cols, size_t nkey_cols)
{
    for (size_t k = 0; k < nkey_cols; k++)
        if (key_cols[k] && !strcmp(key_cols[k], name))
            return 1;
    return 0;
}

int zx_os_mapping(zx_buf *b, const zx_dcol *cols, size_t ncols, const char *const *key_cols,
                  size_t nkey_cols)
{
    if (zx_buf_put(b, "{\"mappings\":{\"properties\":{", 27) < 0)
        return -1;
    int first = 1;
    for (size_t i = 0; i < ncols; i++) {
        const char *m;
        if (is_key(cols[i].name, key_cols, nkey_cols))
            m = "{\"type\":\"keyword\"}";
        else
            switch (cols[i].type) {
            case ZX_DT_INT64: m = "{\"type\":\"long\"}"; break;
            case ZX_DT_DOUBLE:
            case ZX_DT_DECIMAL: m = "{\"type\":\"double\"}"; break;
            case ZX_DT_BOOL: m = "{\"type\":\"boolean\"}"; break;
            case ZX_DT_DATE:
            case ZX_DT_TIMESTAMP: m = "{\"type\":\"date\"}"; break;
            case ZX_DT_BYTES: m = "{\"type\":\"binary\"}"; break;
            case ZX_DT_JSON: m = NULL; break;
            default:
                m = "{\"type\":\"text\",\"fields\":{\"keyword\":{\"type\":\"keyword\","
                    "\"ignore_above\":256}}}";
            }
        if (!m)
            continue;
        if ((!first && zx_buf_put(b, ",", 1) < 0) ||
            zx_dc_json_quote(b, cols[i].name, strlen(cols[i].name), 1, 0) < 0 ||
            zx_buf_put(b, ":", 1) < 0 || zx_buf_put(b, m, strlen(m)) < 0)
            return -1;
        first = 0;
    }
    return zx_buf_put(b, "}}}", 3);
}
