/*
 * connect_shape.h — whether a payload has the shape its Kafka Connect
 * schema (JsonConverter's JSON) says: the fuzz target of the Avro decoder
 * and its unit test check every result with it.  Header-only; it must
 * never be included by zx itself.
 *
 * connect_shape(schema, payload) returns NULL when payload fits, else a
 * static phrase saying what does not:
 *   - null only where "optional" is true;
 *   - int8 / int16 / int32 / int64: a JSON integer in the type's range;
 *   - float32 / float64: a real, or "NaN", "Infinity", "-Infinity";
 *   - boolean, string: those JSON types;
 *   - bytes: padded standard base64; a Decimal's bytes have no redundant
 *     leading 0x00 / 0xFF (Java's BigInteger.toByteArray) and are not empty;
 *   - array: each item fits "items"; map: an object whose values fit
 *     "values"; struct: an object with exactly the "fields", in order.
 */
#ifndef ZX_FUZZ_CONNECT_SHAPE_H
#define ZX_FUZZ_CONNECT_SHAPE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static int connect_b64_val(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

/* Decodes padded base64 s (n chars) into out (n / 4 * 3 bytes); returns the
 * byte count or -1. */
static long connect_unbase64(const char *s, size_t n, unsigned char *out)
{
    if (n % 4)
        return -1;
    long o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            v[k] = connect_b64_val(s[i + k]);
            int pad = s[i + k] == '=' && i + 4 == n && k >= 2 && (k == 3 || s[i + 3] == '=');
            if (v[k] < 0 && !pad)
                return -1;
        }
        out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
        if (v[2] >= 0)
            out[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
        if (v[3] >= 0)
            out[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
    }
    return o;
}

static const char *connect_shape_d(const json_t *s, const json_t *p, int depth)
{
    if (depth > 200)
        return "nested too deep";
    const char *t = json_string_value(json_object_get(s, "type"));
    if (!t)
        return "a schema without a type";
    if (json_is_null(p))
        return json_is_true(json_object_get(s, "optional")) ? NULL : "null where not optional";
    if (!strncmp(t, "int", 3)) {
        if (!json_is_integer(p))
            return "an integer type without an integer";
        json_int_t v = json_integer_value(p);
        if ((!strcmp(t, "int8") && (v < -128 || v > 127)) ||
            (!strcmp(t, "int16") && (v < -32768 || v > 32767)) ||
            (!strcmp(t, "int32") && (v < INT32_MIN || v > INT32_MAX)))
            return "an integer out of its type's range";
        return NULL;
    }
    if (!strncmp(t, "float", 5)) {
        if (json_is_real(p))
            return NULL;
        const char *v = json_string_value(p);
        return v && (!strcmp(v, "NaN") || !strcmp(v, "Infinity") || !strcmp(v, "-Infinity"))
                   ? NULL : "a float that is not a real nor NaN / Infinity";
    }
    if (!strcmp(t, "boolean"))
        return json_is_boolean(p) ? NULL : "a boolean that is not";
    if (!strcmp(t, "string"))
        return json_is_string(p) ? NULL : "a string that is not";
    if (!strcmp(t, "bytes")) {
        if (!json_is_string(p))
            return "bytes that are not a string";
        size_t n = json_string_length(p);
        unsigned char *b = malloc(n / 4 * 3 + 1);
        long k = b ? connect_unbase64(json_string_value(p), n, b) : 0;
        const char *why = k < 0 ? "bytes that are not base64" : NULL;
        const char *name = json_string_value(json_object_get(s, "name"));
        if (!why && name && !strcmp(name, "org.apache.kafka.connect.data.Decimal")) {
            if (k == 0)
                why = "an empty Decimal";
            else if (k > 1 && ((b[0] == 0 && !(b[1] & 0x80)) || (b[0] == 0xff && (b[1] & 0x80))))
                why = "a Decimal with a redundant leading byte";
        }
        free(b);
        return why;
    }
    if (!strcmp(t, "array")) {
        if (!json_is_array(p))
            return "an array that is not";
        for (size_t i = 0; i < json_array_size(p); i++) {
            const char *w = connect_shape_d(json_object_get(s, "items"), json_array_get(p, i),
                                            depth + 1);
            if (w)
                return w;
        }
        return NULL;
    }
    if (!strcmp(t, "map")) {
        if (!json_is_object(p))
            return "a map that is not an object";
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)p, k, v) {
            const char *w = connect_shape_d(json_object_get(s, "values"), v, depth + 1);
            if (w)
                return w;
        }
        return NULL;
    }
    if (!strcmp(t, "struct")) {
        json_t *fs = json_object_get(s, "fields");
        if (!json_is_object(p) || json_object_size(p) != json_array_size(fs))
            return "a struct whose fields are not the schema's";
        void *it = json_object_iter((json_t *)p);
        for (size_t i = 0; i < json_array_size(fs); i++, it = json_object_iter_next((json_t *)p, it)) {
            json_t *f = json_array_get(fs, i);
            const char *fname = json_string_value(json_object_get(f, "field"));
            if (!it || !fname || strcmp(json_object_iter_key(it), fname))
                return "a struct's fields out of order";
            const char *w = connect_shape_d(f, json_object_iter_value(it), depth + 1);
            if (w)
                return w;
        }
        return NULL;
    }
    return "an unknown Connect type";
}

static inline const char *connect_shape(const json_t *schema, const json_t *payload)
{
    return connect_shape_d(schema, payload, 0);
}

#endif
