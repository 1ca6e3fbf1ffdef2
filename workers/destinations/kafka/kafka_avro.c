/*
 * kafka_avro.c — Avro schemas and datums of a run's rows (kafka_avro.h).
 *
 * It must never: write a datum that does not match the schema it made
 * (the schema's types and the encoder's switch are the same table), or
 * read beyond the values given.
 */
#include "workers/destinations/kafka/kafka_avro.h"

#include <stdio.h>
#include <string.h>

#include "common/dcell.h"

static int avro_name_ok(const char *s)
{
    if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_' ||
              (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

/* DECIMAL with a precision Avro's decimal takes (1..38). */
static int is_avro_decimal(const zx_dcol *c)
{
    return c->type == ZX_DT_DECIMAL && c->precision >= 1 && c->precision <= 38 &&
           c->scale >= 0 && c->scale <= c->precision;
}

static int type_json(const zx_dcol *c, zx_buf *out)
{
    switch (c->type) {
    case ZX_DT_INT64:
        return zx_buf_printf(out, "\"long\"");
    case ZX_DT_DOUBLE:
        return zx_buf_printf(out, "\"double\"");
    case ZX_DT_BOOL:
        return zx_buf_printf(out, "\"boolean\"");
    case ZX_DT_TIMESTAMP:
        return zx_buf_printf(out, "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}");
    case ZX_DT_DATE:
        return zx_buf_printf(out, "{\"type\":\"int\",\"logicalType\":\"date\"}");
    case ZX_DT_DECIMAL:
        if (is_avro_decimal(c))
            return zx_buf_printf(out, "{\"type\":\"bytes\",\"logicalType\":\"decimal\","
                                 "\"precision\":%d,\"scale\":%d}", c->precision, c->scale);
        return zx_buf_printf(out, "\"string\"");
    case ZX_DT_BYTES:
        return zx_buf_printf(out, "\"bytes\"");
    default:                                 /* TEXT, JSON */
        return zx_buf_printf(out, "\"string\"");
    }
}

int zx_kavro_schema(const char *name, const zx_dcol *cols, size_t n, zx_buf *out, char *err,
                    size_t errlen)
{
    char rn[128];
    size_t k = 0;
    if (name && *name >= '0' && *name <= '9')
        k = (size_t)snprintf(rn, sizeof(rn), "zx_");
    for (const char *p = name ? name : "row"; *p && k < sizeof(rn) - 1; p++)
        rn[k++] = ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                   (*p >= '0' && *p <= '9')) ? *p : '_';
    rn[k] = '\0';
    for (size_t i = 0; i < n; i++)
        if (!avro_name_ok(cols[i].name)) {
            snprintf(err, errlen, "column %.64s is not an Avro name (letters, digits and _, "
                     "not starting with a digit): rename it in the query (AS ...)",
                     cols[i].name);
            return -1;
        }
    if (zx_buf_printf(out, "{\"type\":\"record\",\"name\":\"%s\",\"namespace\":\"zx\","
                      "\"fields\":[", rn) < 0)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        if (zx_buf_printf(out, "%s{\"name\":\"%s\",\"type\":[\"null\",", i ? "," : "",
                          cols[i].name) < 0 ||
            type_json(&cols[i], out) < 0 || zx_buf_printf(out, "],\"default\":null}") < 0)
            goto oom;
    }
    if (zx_buf_printf(out, "]}") < 0)
        goto oom;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* ---- the binary encoding ---------------------------------------------- */

static int put_long(zx_buf *out, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);   /* zigzag */
    unsigned char b[10];
    size_t n = 0;
    do {
        unsigned char c = z & 0x7f;
        z >>= 7;
        b[n++] = z ? (unsigned char)(c | 0x80) : c;
    } while (z);
    return zx_buf_put(out, b, n);
}

static int put_bytes(zx_buf *out, const void *s, size_t len)
{
    return put_long(out, (int64_t)len) < 0 || zx_buf_put(out, s, len) < 0 ? -1 : 0;
}

/* The unscaled value as big-endian two's complement, fewest bytes. */
static int put_decimal(zx_buf *out, zx_i128 v)
{
    unsigned char b[16];
    for (int i = 15; i >= 0; i--) {
        b[i] = (unsigned char)(v & 0xff);
        v >>= 8;     /* arithmetic: the sign stays */
    }
    int start = 0;
    while (start < 15 && ((b[start] == 0x00 && !(b[start + 1] & 0x80)) ||
                          (b[start] == 0xff && (b[start + 1] & 0x80))))
        start++;
    return put_bytes(out, b + start, (size_t)(16 - start));
}

int zx_kavro_datum(const zx_dcol *cols, size_t n, const zx_value *vals, zx_buf *out,
                   zx_buf *scratch, uint64_t *nulled, size_t *misfit)
{
    for (size_t i = 0; i < n; i++) {
        zx_dc_target t = zx_dc_target_file(&cols[i]);
        zx_dc_out o;
        int r = zx_dc_convert(&t, &vals[i], scratch, &o);
        if (r < 0)
            return -1;
        if (r == 0) {
            (*nulled)++;
            if (*misfit == SIZE_MAX)
                *misfit = i;
        }
        if (o.null) {
            if (put_long(out, 0) < 0)       /* the union's branch: null */
                return -1;
            continue;
        }
        if (put_long(out, 1) < 0)
            return -1;
        int rc;
        switch (cols[i].type) {
        case ZX_DT_INT64:
        case ZX_DT_TIMESTAMP:
        case ZX_DT_DATE:
            rc = put_long(out, o.i);
            break;
        case ZX_DT_DOUBLE: {
            unsigned char b[8];
            uint64_t u;
            memcpy(&u, &o.d, 8);
            for (int k = 0; k < 8; k++)
                b[k] = (unsigned char)(u >> (8 * k));     /* little-endian */
            rc = zx_buf_put(out, b, 8);
            break;
        }
        case ZX_DT_BOOL: {
            unsigned char b = o.i ? 1 : 0;
            rc = zx_buf_put(out, &b, 1);
            break;
        }
        case ZX_DT_DECIMAL:
            rc = is_avro_decimal(&cols[i]) ? put_decimal(out, o.dec) : put_bytes(out, o.s, o.len);
            break;
        default:                             /* TEXT, JSON, BYTES */
            rc = put_bytes(out, o.s, o.len);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

void zx_kavro_header(uint32_t id, unsigned char out[5])
{
    out[0] = 0;
    out[1] = (unsigned char)(id >> 24);
    out[2] = (unsigned char)(id >> 16);
    out[3] = (unsigned char)(id >> 8);
    out[4] = (unsigned char)id;
}
