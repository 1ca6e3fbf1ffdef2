/*
 * gen_core.h — the pure core of `source: generate`: the row template
 * (`fields:`, a mapping of column name to generator written as text), the
 * value generators, and the rate pacing (`rate:`).  No I/O, no clock of
 * its own (the caller passes the times), no global state: the unit tests
 * (tests/unit/test_generate.c) drive it directly.
 *
 * Generators, as written in the YAML (words separated by blanks):
 *   sequence           INT: the row's sequence number (0, 1, 2, ... across
 *                      restarts: the source's position)
 *   int LO..HI         INT: uniform in [LO, HI] (int64, LO <= HI)
 *   float LO..HI       REAL: uniform in [LO, HI] (finite, LO <= HI)
 *   choice A,B,C       TEXT: one of the comma-separated words (blanks
 *                      around each cut; none empty; at most
 *                      ZX_GEN_MAX_CHOICES)
 *   bool               BOOL: true or false
 *   timestamp          TIMESTAMP: the time the row is made (UTC, µs)
 *   uuid               TEXT: a random UUID, version 4
 *   json VALUE         JSON: a fixed JSON object or array, parsed and
 *                      checked at load, sent in compact form
 * The generator's name is matched exactly (lower case).
 *
 * Memory: a template owns its fields (zx_gen_template_free).  Thread
 * safety: functions work only on their arguments.
 */
#ifndef ZX_SOURCES_GENERATE_GEN_CORE_H
#define ZX_SOURCES_GENERATE_GEN_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"

#define ZX_GEN_MAX_FIELDS 256      /* fields of one template, at most */
#define ZX_GEN_MAX_CHOICES 1024    /* words of one `choice`, at most */
#define ZX_GEN_MAX_SPEC 65536      /* bytes of one generator's text, at most */
#define ZX_GEN_MAX_RATE 100000000u /* rows per second, at most (`rate: N/s`) */

typedef enum zx_gen_kind {
    ZX_GEN_SEQUENCE = 1,
    ZX_GEN_INT,
    ZX_GEN_FLOAT,
    ZX_GEN_CHOICE,
    ZX_GEN_BOOL,
    ZX_GEN_TIMESTAMP,
    ZX_GEN_UUID,
    ZX_GEN_JSON,
} zx_gen_kind;

typedef struct zx_gen_field {
    char *name;            /* the column name (a normalised column name) */
    zx_gen_kind kind;
    int64_t lo, hi;        /* INT */
    double dlo, dhi;       /* FLOAT */
    char **choices;        /* CHOICE: nchoices words */
    size_t nchoices;
    char *json;            /* JSON: compact text (object or array) */
    size_t json_len;
} zx_gen_field;

typedef struct zx_gen_template {
    zx_gen_field *fields;
    size_t nfields;
} zx_gen_template;

/* Parse n fields: names[i] is the column, specs[i] its generator.  A name
 * must already be a column name as zx makes them (zx_colname_normalise
 * leaves it unchanged: [a-z_][a-z0-9_]*, at most 63 bytes, not reserved),
 * none twice; 1 to ZX_GEN_MAX_FIELDS fields.  On success *t owns the
 * parsed fields and 0 is returned; on error *t is empty and -1 is
 * returned with err = "field NAME: what is wrong (what is allowed)". */
int zx_gen_template_parse(const char *const *names, const char *const *specs, size_t n,
                          zx_gen_template *t, char *err, size_t errlen);

/* Free what *t owns; *t is empty again.  NULL or empty: no-op. */
void zx_gen_template_free(zx_gen_template *t);

/* A small fast random generator (xoshiro256**), not for secrets. */
typedef struct zx_gen_rng {
    uint64_t s[4];
} zx_gen_rng;

/* Seed from 64 bits (any value, 0 included). */
void zx_gen_rng_seed(zx_gen_rng *r, uint64_t seed);
uint64_t zx_gen_rng_next(zx_gen_rng *r);
/* Uniform in [lo, hi] (lo <= hi), without bias. */
int64_t zx_gen_rng_range(zx_gen_rng *r, int64_t lo, int64_t hi);

/* Add one row made from t to rs (columns made as needed): seq is the
 * `sequence` value, now_us the `timestamp` value.  0, or -1 when out of
 * memory (the row is dropped). */
int zx_gen_row(const zx_gen_template *t, zx_rowset *rs, uint64_t seq, int64_t now_us,
               zx_gen_rng *rng);

/* Parse `rate:`: "max" (*per_s = 0: as fast as the ring takes them) or
 * "N/s" (1 <= N <= ZX_GEN_MAX_RATE; blanks allowed around '/').  0, or -1
 * with err saying what is allowed. */
int zx_gen_rate_parse(const char *text, uint64_t *per_s, char *err, size_t errlen);

/* Rate pacing: rows are due at per_s rows a second from the start; a
 * source that fell behind (the ring was full) catches up at most one
 * second's worth, not a burst of everything it missed. */
typedef struct zx_gen_pace {
    uint64_t per_s;        /* 0: no pacing */
    int64_t t0_us;         /* the start of the current run of rows */
    uint64_t made;         /* rows made since t0_us */
} zx_gen_pace;

/* Start pacing at now_us. */
void zx_gen_pace_start(zx_gen_pace *p, uint64_t per_s, int64_t now_us);
/* How many rows are due at now_us (at most max; max when not paced). */
uint64_t zx_gen_pace_due(zx_gen_pace *p, int64_t now_us, uint64_t max);
/* Count n rows as made. */
void zx_gen_pace_made(zx_gen_pace *p, uint64_t n);
/* µs from now_us until at least `rows` rows are due (0: now). */
int64_t zx_gen_pace_wait_us(const zx_gen_pace *p, int64_t now_us, uint64_t rows);

#endif
