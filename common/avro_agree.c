/*
 * avro_agree.c — whether avro-c reads an Avro schema text as zx's
 * compiled nodes do (avro_connect.c refuses a schema where they differ:
 * the decoder trusts avro-c's reading of the datums).  See avro_node.h.
 *
 * It must never: follow a named type twice (seen), or call a schema
 * equal that differs in a type, name, field, symbol or size.
 */
#include "common/avro_node.h"

#include <stdint.h>
#include <string.h>

#include <avro.h>

/* avro-c's full name of a named schema, into buf. */
static void avro_full(avro_schema_t a, char *buf, size_t n)
{
    const char *ns = avro_schema_namespace(a), *name = avro_schema_name(a);
    if (ns && ns[0])
        snprintf(buf, n, "%s.%s", ns, name ? name : "");
    else
        snprintf(buf, n, "%s", name ? name : "");
}

/* 1 when avro-c's schema a reads like n.  Named nodes are compared once
 * (seen maps a node to the avro-c schema it matched; a second meeting must
 * be with the same one). */
int av_agree(const av_node *n, avro_schema_t a, json_t *seen)
{
    if (is_avro_link(a))
        a = avro_schema_link_target(a);
    if (!a)
        return 0;
    static const avro_type_t want[] = {
        [AV_NULL] = AVRO_NULL,       [AV_BOOLEAN] = AVRO_BOOLEAN, [AV_INT] = AVRO_INT32,
        [AV_LONG] = AVRO_INT64,      [AV_FLOAT] = AVRO_FLOAT,     [AV_DOUBLE] = AVRO_DOUBLE,
        [AV_BYTES] = AVRO_BYTES,     [AV_STRING] = AVRO_STRING,   [AV_RECORD] = AVRO_RECORD,
        [AV_ENUM] = AVRO_ENUM,       [AV_ARRAY] = AVRO_ARRAY,     [AV_MAP] = AVRO_MAP,
        [AV_UNION] = AVRO_UNION,     [AV_FIXED] = AVRO_FIXED,
    };
    if (avro_typeof(a) != want[n->kind])
        return 0;
    if (n->fullname) {
        char key[2 * sizeof(void *) + 8], full[1024];
        snprintf(key, sizeof(key), "%p", (const void *)n);
        json_t *prev = json_object_get(seen, key);
        if (prev)
            return json_integer_value(prev) == (json_int_t)(intptr_t)a;
        avro_full(a, full, sizeof(full));
        if (strcmp(full, n->fullname) != 0)
            return 0;
        if (json_object_set_new(seen, key, json_integer((json_int_t)(intptr_t)a)))
            return 0;
    }
    switch (n->kind) {
    case AV_RECORD:
        if (avro_schema_record_size(a) != n->n)
            return 0;
        for (size_t i = 0; i < n->n; i++) {
            const char *fn = avro_schema_record_field_name(a, (int)i);
            if (!fn || strcmp(fn, json_string_value(n->fields[i].name)) ||
                !av_agree(n->fields[i].type, avro_schema_record_field_get_by_index(a, (int)i),
                          seen))
                return 0;
        }
        return 1;
    case AV_ENUM:
        if ((size_t)avro_schema_enum_number_of_symbols(a) != n->n)
            return 0;
        for (size_t i = 0; i < n->n; i++) {
            const char *s = avro_schema_enum_get(a, (int)i);
            if (!s || strcmp(s, json_string_value(json_array_get(n->symbols, i))))
                return 0;
        }
        return 1;
    case AV_FIXED:
        return avro_schema_fixed_size(a) == n->size;
    case AV_ARRAY:
        return av_agree(n->items, avro_schema_array_items(a), seen);
    case AV_MAP:
        return av_agree(n->items, avro_schema_map_values(a), seen);
    case AV_UNION:
        if (avro_schema_union_size(a) != n->n)
            return 0;
        for (size_t i = 0; i < n->n; i++)
            if (!av_agree(n->branches[i], avro_schema_union_branch(a, (int)i), seen))
                return 0;
        return 1;
    default:
        return 1;
    }
}
