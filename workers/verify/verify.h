/*
 * verify.h — `zxctl verify NAME`: is a Postgres CDC pipeline's mirror the
 * same as its source?  Run in a short-lived process of its own (started
 * by supervisor/verify.c); it only reads, on both sides, and never locks
 * the source (one REPEATABLE READ READ ONLY transaction at a time, plain
 * SELECTs by key).
 *
 * How (verify.c): on a Postgres workspace, a table whose mirror has the
 * source's column types and whose key orders alike on both servers
 * (vf_range_ok) is cut into ranges of 1000 rows in key order from one
 * source snapshot; both servers compute each range's count and hash
 * (verify_range.c) and only the ranges that differ are compared key by
 * key as follows.  Otherwise (and on SQLite, whose mirror stores
 * converted values no server prints as the source does) the whole table
 * is compared key by key: every source row is read in key order from one
 * snapshot and looked up by its key in the mirror; then every mirror key
 * is looked up in the same source snapshot (a mirror row whose key the
 * source lacks is "extra"); 500 keys a query (a join with the keys
 * passed as arrays), so that a table of 100,000 rows takes about a
 * second.  Values are compared the way the mirror
 * stores them: on a Postgres workspace (the source's types) as the text
 * both servers print under the same session settings; on SQLite the
 * source's text goes through the CDC conversion (pg_values.h) and the
 * writer's fit rules (fit.h) and is compared by SQLite with `IS`, under
 * the column's affinity.  The mirror keeps changing while this runs, so
 * each differing key is checked again after the mirror has caught up: a
 * new source snapshot is taken with its WAL position, the verifier waits
 * until the pipeline's slot has confirmed that position (zx confirms only
 * what the writer committed), and compares the key again; up to
 * ZX_VERIFY_ROUNDS rounds while keys keep changing.  What still differs
 * is reported.
 *
 * Memory is bounded: one row at a time on each side, at most
 * ZX_VERIFY_MAX_KEYS differing keys kept per table (the rest counted).
 */
#ifndef ZX_VERIFY_VERIFY_H
#define ZX_VERIFY_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "conf/config.h"

#define ZX_VERIFY_ROUNDS 5          /* re-checks of the differing keys */
#define ZX_VERIFY_MAX_KEYS 10000    /* differing keys kept per table */
#define ZX_VERIFY_SHOW_KEYS 100     /* of those, listed in the answer */
#define ZX_VERIFY_CATCHUP_MS 30000  /* wait for the mirror per round */

#define ZX_VERIFY_REPAIR 0x1u      /* re-copy the keys that differ */

/* Verify pipeline pc (source postgres) of configuration c: every table,
 * or only table (its "schema.table" as configured, or the bare table
 * name) when not NULL.  Gives up at deadline_ms (zx_mono_ms clock).
 *
 * Returns 0 with *out set to the report (caller decrefs):
 *   {"ok":true, "name":P, "at":"<RFC 3339>", "compared":N, "differing":D,
 *    "tables":[{"table":"public.orders", "mirror":"orders", "compared":N,
 *               "differing":D, "keys":[{"key":{"id":"3"},
 *               "how":"missing"|"extra"|"differ", "columns":["note"]}],
 *               "more":M, "settled":S, "ranges":R, "ranges_differing":RD,
 *               "note":"..."}]}
 * ("keys" lists at most ZX_VERIFY_SHOW_KEYS; "more" how many differing
 * keys are not listed; "settled" how many keys differed at first but were
 * equal once the mirror had caught up; "ranges" how many key ranges were
 * hashed on both servers, 0 when compared key by key, "ranges_differing"
 * how many of them differed and were compared key by key).  With flags ZX_VERIFY_REPAIR, the keys that
 * still differ (at most ZX_VERIFY_MAX_KEYS per table) are handed to the
 * pipeline's worker, which sends each key's row as the source has it now
 * (or its delete) through the writer (workers/sources/postgres/pg_cdc_repair.c);
 * they are compared again until equal or ZX_VERIFY_CATCHUP_MS passed, and
 * the answer says "repaired": the keys now equal (also per table).
 * Returns -1 with a message in err ("pipeline P: verify: ...") when the
 * pipeline cannot be verified. */
int zx_verify_run(const zx_conf *c, const zx_conf_pipeline *pc, const char *table,
                  unsigned flags, int64_t deadline_ms, json_t **out, char *err, size_t errlen);

/* The file `--repair` leaves for the pipeline's worker:
 * <data_dir>/verify/<pipeline>.repair into out (outlen bytes).  0, or -1
 * when it does not fit. */
int zx_verify_repair_path(const char *data_dir, const char *pipeline, char *out,
                          size_t outlen);

#endif
