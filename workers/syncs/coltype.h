/*
 * coltype.h — a result column's type decided from all of its values, not
 * from its first row (a reverse sync's query on the SQLite workspace,
 * where a column's declared type is a hint and an expression has none).
 *
 * A column starts at its declared type, or undecided when it has none;
 * each value seen keeps the type when it fits (as common/dcell.h converts
 * it, nothing lost) and else widens it one step at a time until it does:
 *     BOOL → INT64 (an integer other than 0 / 1) → DOUBLE (a real) →
 *     TEXT → BYTES (bytes that are not UTF-8)
 * and TIMESTAMP, DATE, DECIMAL, JSON → TEXT (a value they do not take:
 * 'infinity', a text that is no date, 'NaN', a document that does not
 * parse).  An undecided column takes the type of its first non-NULL value
 * (integer INT64, real DOUBLE, text TEXT or BYTES), then widens as above;
 * a column without any value ends as TEXT.  The order of the values does
 * not change the end type.
 *
 * Pure: no I/O; thread-safe on distinct columns.  It must never make a
 * type narrower than one already seen.
 */
#ifndef ZX_SYNCS_COLTYPE_H
#define ZX_SYNCS_COLTYPE_H

#include "common/dcell.h"
#include "common/dtype.h"
#include "common/rowset.h"

/* Widen column c (type, precision, scale) for value v (NULL or a ZX_T_NULL
 * value: nothing changes).  *undecided: 1 while the column has no type
 * yet (no declared type, no value seen); set to 0 by the first value.
 * scratch: conversion space (zx_buf, freed by the caller).  Returns 1
 * when the type changed, 0 when not, -1 when out of memory (c unchanged). */
int zx_coltype_see(zx_dcol *c, int *undecided, const zx_value *v, zx_buf *scratch);

#endif
