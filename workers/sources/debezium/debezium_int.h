/*
 * debezium_int.h — what the parts of debezium.c share; private to
 * workers/sources/debezium/debezium*.c (debezium.h is the contract).
 *
 *   debezium.c           an event into a row: envelope, operation, key,
 *                        the mirror table's name
 *   debezium_tables.c    the tables a table template made (max_tables,
 *                        table_pattern)
 *   debezium_position.c  the source position of an event, per connector
 */
#ifndef ZX_SOURCES_DEBEZIUM_INT_H
#define ZX_SOURCES_DEBEZIUM_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "workers/sources/debezium/debezium.h"

/* One JSON value as the decoders read it: a scalar, or only its kind
 * (OTHER: an object or an array).  Made from a json_t (zx_dbz_sv_of) by
 * the jansson path, and by debezium_fast.c from the bytes; s is
 * NUL-terminated, valid while what it was read from is. */
enum {
    ZX_DBZ_SV_NONE = 0,   /* absent */
    ZX_DBZ_SV_NULL, ZX_DBZ_SV_FALSE, ZX_DBZ_SV_TRUE, ZX_DBZ_SV_INT, ZX_DBZ_SV_REAL,
    ZX_DBZ_SV_STR, ZX_DBZ_SV_OTHER,
};
typedef struct zx_dbz_sv {
    int t;
    const char *s;                /* STR */
    size_t n;
    int64_t i;                    /* INT */
    double d;                     /* REAL */
} zx_dbz_sv;
void zx_dbz_sv_of(const json_t *v, zx_dbz_sv *out);   /* v NULL: NONE */

/* What a field's Connect schema says of its values (debezium_values.c:
 * the table there), computed once per schema by the fast path. */
typedef struct zx_dbz_kind {
    int kind;                     /* 0: none (inferred) */
    const char *decl;             /* static, or NULL */
    char numeric[48];             /* Decimal: "numeric(p,s)", or "" */
    long scale;                   /* Decimal: its scale parameter */
    int json_doc;                 /* io.debezium.data.Json */
} zx_dbz_kind;
/* fs NULL: no schema. */
void zx_dbz_kind_of(const json_t *fs, zx_dbz_kind *k);
/* zx_dbz_value for a field of kind k and value v: 0, 1 (null), -1 out of
 * memory, as zx_dbz_value; or 2 when only the json_t can say (a real or
 * a container kept as its JSON text, a VariableScaleDecimal object):
 * nothing was appended then. */
int zx_dbz_value_sv(const zx_dbz_kind *k, const zx_dbz_sv *v, zx_rowset *rs, zx_value *out,
                    const char **decl, unsigned flags);

/* The fields of payload.source that zx reads (position, table name,
 * commit time, transaction). */
enum {
    ZX_DBZ_SRC_CONNECTOR, ZX_DBZ_SRC_LSN, ZX_DBZ_SRC_FILE, ZX_DBZ_SRC_POS, ZX_DBZ_SRC_ROW,
    ZX_DBZ_SRC_CHANGE_LSN, ZX_DBZ_SRC_COMMIT_LSN, ZX_DBZ_SRC_SERIAL, ZX_DBZ_SRC_SCN,
    ZX_DBZ_SRC_TS_MS, ZX_DBZ_SRC_TS_US, ZX_DBZ_SRC_ORD, ZX_DBZ_SRC_TXID, ZX_DBZ_SRC_TABLE,
    ZX_DBZ_SRC_SCHEMA, ZX_DBZ_SRC_DB, ZX_DBZ_SRC_COLLECTION, ZX_DBZ_SRC_N,
};
typedef struct zx_dbz_src {
    int present;                  /* payload.source is an object */
    zx_dbz_sv v[ZX_DBZ_SRC_N];
} zx_dbz_src;
/* The index of source field name (n bytes), or -1 when zx does not read it. */
int zx_dbz_src_field(const char *name, size_t n);
/* s from the source object src (may be NULL or not an object). */
void zx_dbz_src_of(const json_t *src, zx_dbz_src *s);
/* String field f of s, or NULL when absent or not a string. */
const char *zx_dbz_src_str(const zx_dbz_src *s, int f);

/* A table name t (made from template tpl) that the template may not make
 * (new, and over max_tables or not matching table_pattern): 1 with why
 * set; 0 when it may (or c makes no tables from a template). */
int zx_dbz_tables_refuse(const zx_dbz_conf *c, const char *t, const char *tpl, char *why,
                         size_t whylen);

/* The source position of an event whose payload.source is src: lsn (ln
 * bytes) gets _zx_lsn, the position in the source's words; seq (sn
 * bytes) gets _zx_seq, text whose order is the changes' order, or "" when
 * the connector's position is not known to order.  Both "" when there is
 * none. */
void zx_dbz_position(const zx_dbz_src *src, char *lsn, size_t ln, char *seq, size_t sn);

/* ---- debezium.c's steps, shared with debezium_fast.c --------------------- */

/* The mirror table of an event from src (topic may be NULL) into table:
 * 0, or 1 with why (a reject). */
int zx_dbz_table_name(const zx_dbz_conf *c, const zx_dbz_src *src, const char *topic,
                      char table[ZX_COLNAME_MAX + 1], char *why, size_t whylen);
/* The reserved cells of a change (op, position, commit time, txId): 0, -1. */
int zx_dbz_reserved(zx_rowset *rs, const zx_dbz_src *src, const char *op, const zx_dbz_msg *m);
/* Column col's declared type decl, when it has none yet: 0, -1. */
int zx_dbz_note_decl(zx_dbz_frame *f, int64_t col, const char *decl);
/* Append name, JSON-escaped and quoted, to the array text in *buf (room is
 * left for the closing ']'): 0, -1. */
int zx_dbz_json_name(char **buf, size_t *len, size_t *cap, const char *name);
/* The frame can take a change of table and keys (or is empty): 1, 0. */
int zx_dbz_fits(const zx_dbz_frame *f, const char *table,
                const char (*keys)[ZX_COLNAME_MAX + 1], size_t nkeys, int truncate);
/* The frame takes the table and keys of its first change: 0, -1. */
int zx_dbz_adopt(zx_dbz_frame *f, const char *table,
                 const char (*keys)[ZX_COLNAME_MAX + 1], size_t nkeys);
/* The struct schema of field `name` of struct schema st, or NULL; *hint:
 * where to look first (then after the one found). */
const json_t *zx_dbz_field_schema(const json_t *st, const char *name, size_t *hint);
/* The schema whose text (n bytes) is s, from c or parsed now (and kept
 * in c): owned by c.  NULL when s is not a JSON object, or out of memory. */
const json_t *zx_dbz_cache_get(zx_dbz_cache *c, const char *s, size_t n);
#define ZX_DBZ_UNAVAILABLE_B64 "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="

/* ---- debezium_fast.c ------------------------------------------------------ */

/* The reference: zx_dbz_add with jansson alone (debezium.c). */
int zx_dbz_add_json(const zx_dbz_conf *c, zx_dbz_frame *f, const zx_dbz_msg *m, char *why,
                    size_t whylen, unsigned *notes);
/* The fast path (debezium_fast.c): what zx_dbz_add_json answers for m
 * (ADDED, REJECT with the same why, OTHER), or ZX_DBZ_DECLINED with f as
 * it was, for whatever it does not handle.  Never NOMEM (declines). */
#define ZX_DBZ_DECLINED 4
int zx_dbz_fast_add(const zx_dbz_conf *c, zx_dbz_frame *f, const zx_dbz_msg *m, char *why,
                    size_t whylen, unsigned *notes);
/* What a schema cache entry's compiled form holds (zx_dbz_cached.fast). */
void zx_dbz_fast_schema_free(struct zx_dbz_fast_schema *s);
void zx_dbz_fast_free(struct zx_dbz_fast *x);

#endif
