/*
 * avro_node.h — private to avro_connect.c (the compiler), avro_agree.c
 * (its check against avro-c), avro_connect_schema.c (the Connect schema
 * builder) and avro_decode.c: the compiled form of an Avro schema (a tree
 * of nodes, named types shared where they are referenced, so a DAG
 * without cycles) and the Connect schema builder.  Nothing outside those
 * files may include it.
 */
#ifndef ZX_COMMON_AVRO_NODE_H
#define ZX_COMMON_AVRO_NODE_H

#include <stdint.h>
#include <stdio.h>

#include <avro.h>
#include <jansson.h>

#include "common/avro_connect.h"

typedef enum av_kind {
    AV_NULL, AV_BOOLEAN, AV_INT, AV_LONG, AV_FLOAT, AV_DOUBLE, AV_BYTES, AV_STRING,
    AV_RECORD, AV_ENUM, AV_ARRAY, AV_MAP, AV_UNION, AV_FIXED
} av_kind;

/* What the payload of a node goes through besides its kind. */
enum { AV_CONV_NONE, AV_CONV_INT8, AV_CONV_INT16, AV_CONV_DECIMAL };

struct av_node;

typedef struct av_field {
    json_t *name;                /* a JSON string (a valid Avro name) */
    struct av_node *type;
} av_field;

typedef struct av_node {
    av_kind kind;
    uint8_t conv;                /* AV_CONV_* */
    uint8_t dynamic;             /* a union other than [null, T] here or below */
    uint8_t defining;            /* a named type whose definition is being read */
    int null_branch;             /* union: index of the null branch, or -1 */
    const char *ctype;           /* Connect type ("int32", ...); NULL for unions */
    char *fullname;              /* named types: the Avro full name */
    json_t *extra;               /* keys after "optional" (name, version, doc,
                                    parameters, default), or NULL */
    size_t n;                    /* fields, symbols or branches */
    av_field *fields;            /* record */
    json_t *symbols;             /* enum: array of strings */
    struct av_node **branches;   /* union */
    struct av_node *items;       /* array items, map values */
    int64_t size;                /* fixed */
    uint32_t min_size;           /* least bytes a value takes (saturated) */
    uint32_t height;             /* levels of the expanded tree */
    uint64_t weight;             /* objects of its expanded Connect schema */
} av_node;

struct zx_avro_schema {
    av_node *root;
    av_node **nodes;             /* every node, freed together */
    size_t nnodes, cap;
    json_t *connect;             /* S with first non-null branches */
};

/* 1 when avro-c's schema a reads like n (kinds, full names, fields,
 * symbols, sizes, branches), else 0.  seen: an empty JSON object the
 * caller owns and frees, mapping the named nodes met to the avro-c
 * schema they matched (a second meeting must be with the same one). */
int av_agree(const av_node *n, avro_schema_t a, json_t *seen);


/* The first non-null branch of a union (a union of only null is refused
 * when compiled, so there is one). */
const av_node *av_first_branch(const av_node *u);

/* A new Connect schema object for a value of n, "optional" as given (a
 * union resolves to its first non-null branch, optional when it has null).
 * NULL when out of memory. */
json_t *av_connect_schema(const av_node *n, int optional);

/* The pieces of av_connect_schema, for schemas built while decoding:
 * av_schema_open makes {"type": n's Connect type}; the caller adds
 * "fields", "items" or "keys" and "values"; av_schema_close adds
 * "optional" and n's keys after it.  NULL / -1 when out of memory. */
json_t *av_schema_open(const av_node *n);
int av_schema_close(json_t *o, const av_node *n, int optional);

/* A new {"type": "string", "optional": false}: a map's "keys". */
json_t *av_map_keys(void);

/* base64 (standard alphabet, padded) of n bytes, as a JSON string; a
 * Decimal's bytes are first reduced to Java's BigInteger.toByteArray form
 * when decimal is set.  NULL when out of memory. */
json_t *av_base64(const uint8_t *p, size_t n, int decimal);

/* A JSON real for a float / double value, or the strings "NaN",
 * "Infinity", "-Infinity".  NULL when out of memory. */
json_t *av_float_json(float f);
json_t *av_double_json(double d);

#endif /* ZX_COMMON_AVRO_NODE_H */
