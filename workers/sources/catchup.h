/*
 * catchup.h — when a stream source is far behind its upstream (a Kafka
 * group started on a topic's backlog, a Kinesis stream read from
 * TRIM_HORIZON, a source back after an outage), its catching up is long
 * work like a copy: this decides when it begins and ends and what its
 * progress slot says (zx_src_set_progress, source.h), from what the
 * source already knows each time it updates its status: messages read so
 * far (or written: any count that grows by one a message), how many are
 * left (Kafka: the high watermarks less the written positions) and how
 * far behind in time (Kinesis: MillisBehindLatest).
 *
 * Catching up begins when ZX_CATCHUP_START_MSGS or more are left, or the
 * reading is ZX_CATCHUP_START_MS or more behind; it ends when fewer than
 * ZX_CATCHUP_END_MSGS are left and the reading is less than
 * ZX_CATCHUP_END_MS behind (hysteresis: a lag that wavers around one
 * threshold does not start and end it over and over).  An unknown figure
 * (-1: no high watermark yet) changes nothing.
 *
 * Pure: the caller passes the time; no allocation, no I/O
 * (tests/unit/test_catchup.c).
 */
#ifndef ZX_SOURCES_CATCHUP_H
#define ZX_SOURCES_CATCHUP_H

#include <stddef.h>
#include <stdint.h>

#define ZX_CATCHUP_START_MSGS 10000
#define ZX_CATCHUP_END_MSGS 1000
#define ZX_CATCHUP_START_MS 60000
#define ZX_CATCHUP_END_MS 5000

/* One source's catching up; zeroed = not catching up. */
typedef struct zx_catchup {
    int active;
    int64_t started_us;   /* when it began (the caller's clock, µs) */
    uint64_t base;        /* the count when it began, or at the last rebase */
    uint64_t carried;     /* done before that rebase */
    uint64_t done;        /* done at the last update */
} zx_catchup;

/* What the progress slot should say now. */
typedef struct zx_catchup_view {
    uint64_t done;        /* messages read since it began */
    uint64_t expected;    /* done + left, 0 when left is unknown */
    int64_t started_us;
} zx_catchup_view;

/* Take one observation: `read` messages read since the worker started
 * (never going down; one that does starts the count again), `left`
 * messages left upstream or -1, `behind_ms` how far behind or -1, at
 * now_us.  Returns 1 while catching up (and fills *v), 0 when not (the
 * caller clears its progress slot; a 1 → 0 change is the end). */
int zx_catchup_update(zx_catchup *c, int64_t now_us, uint64_t read, int64_t left,
                      int64_t behind_ms, zx_catchup_view *v);

/* The count is about to jump for another reason than messages (Kafka:
 * partitions assigned or revoked, when it sums their positions): the next
 * update goes on from the done so far, with `read` as the new count. */
void zx_catchup_rebase(zx_catchup *c, uint64_t read);

/* The slot's "what" into buf (cap bytes, always NUL-terminated): "catching
 * up on <label>" and, when behind_ms >= 1000, ", 3 h 12 min behind" /
 * ", 42 s behind".  label NULL or "": the upstream is not named.  Returns
 * buf. */
char *zx_catchup_what(char *buf, size_t cap, const char *label, int64_t behind_ms);

#endif
