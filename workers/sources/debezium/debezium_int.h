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

#include <jansson.h>

#include "workers/sources/debezium/debezium.h"

/* String field key of the event's source object src (may be NULL), or
 * NULL when absent or not a string.  Valid while src is. */
const char *zx_dbz_src_str(const json_t *src, const char *key);

/* A table name t (made from template tpl) that the template may not make
 * (new, and over max_tables or not matching table_pattern): 1 with why
 * set; 0 when it may (or c makes no tables from a template). */
int zx_dbz_tables_refuse(const zx_dbz_conf *c, const char *t, const char *tpl, char *why,
                         size_t whylen);

/* The source position of an event whose payload.source is src (may be
 * NULL): lsn (ln bytes) gets _zx_lsn, the position in the source's words;
 * seq (sn bytes) gets _zx_seq, text whose order is the changes' order, or
 * "" when the connector's position is not known to order.  Both "" when
 * there is none. */
void zx_dbz_position(const json_t *src, char *lsn, size_t ln, char *seq, size_t sn);

#endif
