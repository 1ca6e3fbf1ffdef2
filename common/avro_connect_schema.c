/*
 * avro_connect_schema.c — the Kafka Connect schema JSON (JsonConverter's
 * "schema") of a compiled Avro node, whole (av_connect_schema) or in
 * pieces for schemas built while decoding (avro_decode.c).  See
 * avro_node.h for the mapping's contract and avro_connect.h for the
 * mapping itself.
 *
 * It must never: return a half-built schema (NULL out of memory).
 */
#include "common/avro_node.h"

#include <jansson.h>


const av_node *av_first_branch(const av_node *u)
{
    for (size_t i = 0; i < u->n; i++)
        if (u->branches[i]->kind != AV_NULL)
            return u->branches[i];
    return u->branches[0];
}

json_t *av_schema_open(const av_node *n)
{
    json_t *o = json_object();
    if (o && json_object_set_new_nocheck(o, "type", json_string_nocheck(n->ctype))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int av_add_extra(json_t *o, const av_node *n)
{
    return n->extra ? json_object_update(o, n->extra) : 0;
}

int av_schema_close(json_t *o, const av_node *n, int optional)
{
    if (json_object_set_new_nocheck(o, "optional", json_boolean(optional)))
        return -1;
    return av_add_extra(o, n);
}

json_t *av_map_keys(void)
{
    json_t *k = json_object();
    if (k && (json_object_set_new_nocheck(k, "type", json_string_nocheck("string")) ||
              json_object_set_new_nocheck(k, "optional", json_false()))) {
        json_decref(k);
        return NULL;
    }
    return k;
}

json_t *av_connect_schema(const av_node *n, int optional)
{
    if (n->kind == AV_UNION)
        return av_connect_schema(av_first_branch(n), optional || n->null_branch >= 0);
    json_t *o = av_schema_open(n);
    if (!o)
        return NULL;
    int bad = 0;
    if (n->kind == AV_RECORD) {
        json_t *fs = json_array();
        bad |= json_object_set_new_nocheck(o, "fields", fs);
        for (size_t i = 0; !bad && i < n->n; i++) {
            json_t *f = av_connect_schema(n->fields[i].type, 0);
            if (f && json_object_set_nocheck(f, "field", n->fields[i].name)) {
                json_decref(f);
                f = NULL;
            }
            bad |= json_array_append_new(fs, f);
        }
    } else if (n->kind == AV_ARRAY) {
        bad |= json_object_set_new_nocheck(o, "items", av_connect_schema(n->items, 0));
    } else if (n->kind == AV_MAP) {
        bad |= json_object_set_new_nocheck(o, "keys", av_map_keys());
        bad |= json_object_set_new_nocheck(o, "values", av_connect_schema(n->items, 0));
    }
    if (bad || av_schema_close(o, n, optional)) {
        json_decref(o);
        return NULL;
    }
    return o;
}
