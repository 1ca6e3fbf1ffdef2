/*
 * kafka_avro.h — a run's rows as Avro (format: avro of the Kafka
 * destination): the record schema of some of the run's columns, and one
 * row's datum in Avro's binary encoding (pure: no I/O; unit-tested in
 * tests/unit/test_kafka_msg.c).  The registry and the wire format are
 * dest_kafka.c's.
 *
 * Schema: {"type":"record","name":<name>,"namespace":"zx","fields":[...]}
 * with one field per column, named as the column (which must be an Avro
 * name: [A-Za-z_][A-Za-z0-9_]*), of type ["null", T] with default null:
 *   INT64      long             DOUBLE   double
 *   BOOL       boolean          TEXT     string
 *   TIMESTAMP  long, logicalType timestamp-micros (UTC)
 *   DATE       int, logicalType date (days since 1970-01-01)
 *   DECIMAL    bytes, logicalType decimal with its precision and scale
 *              (precision 1..38); without a precision: string (its literal)
 *   JSON       string (the JSON text)
 *   BYTES      bytes
 * Values are converted with the files' rules (common/dcell.h,
 * zx_dc_target_file); a misfit (a value the column's type cannot hold) is
 * written as null and counted, as the JSON formats do.
 *
 * Functions return 0, or -1 with err set (a column name Avro refuses) or
 * when out of memory (buffers then hold partial output: reset them).
 */
#ifndef ZX_DEST_KAFKA_AVRO_H
#define ZX_DEST_KAFKA_AVRO_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dtype.h"
#include "common/rowset.h"

/* Append to out the schema (JSON text) of a record named name (made an
 * Avro name: other bytes become '_', a leading digit gets "zx_" before
 * it) of the n columns cols. */
int zx_kavro_schema(const char *name, const zx_dcol *cols, size_t n, zx_buf *out, char *err,
                    size_t errlen);

/* Append to out the datum of the n values vals of columns cols (the
 * schema's record).  scratch: conversion space (the caller's, kept
 * between calls); *nulled counts misfits, *misfit gets the first one's
 * column index when it is SIZE_MAX. */
int zx_kavro_datum(const zx_dcol *cols, size_t n, const zx_value *vals, zx_buf *out,
                   zx_buf *scratch, uint64_t *nulled, size_t *misfit);

/* The Confluent wire header (magic 0, the schema id big-endian) into
 * out[5]. */
void zx_kavro_header(uint32_t id, unsigned char out[5]);

#endif
