/*
 * kinesis_shards.h — which shards of a Kinesis stream to read, from where,
 * and when: the shard tree through splits and merges, each shard's
 * position, and the pacing of its GetRecords calls.  Pure (no I/O): the
 * source (kinesis.c) feeds it ListShards pages and GetRecords outcomes and
 * asks it what to do next.  Unit-tested by tests/unit/test_kinesis_shards.c.
 *
 * The rules (as the KCL keeps them):
 *   - a shard is read only once every parent (ParentShardId,
 *     AdjacentParentShardId) is read to its end, or is no longer listed
 *     (expired from the stream's retention): so a key's records keep their
 *     order across a split or a merge;
 *   - a shard read to its end (GetRecords gave no NextShardIterator) is
 *     finished: its position says so, and it is never read again;
 *   - where a shard starts: after its stored position; a shard with none
 *     starts at the stream's oldest record (TRIM_HORIZON), but for the
 *     shards found at the pipeline's very first start (no position stored
 *     for any shard), which start where `start` says (oldest, new: the
 *     time of that first start, or a given time).  A `new` or `at:` start
 *     is made a time position at once (KS_AT), stored with the first
 *     frame, so a restart before the first record does not skip to a later
 *     "now";
 *   - at most one GetRecords call per shard every KS_CALL_GAP_MS (Kinesis
 *     allows 5 a second), and after a throttle or a server error a wait
 *     that doubles up to KS_BACKOFF_MAX_MS, with jitter.
 *
 * Positions (what a frame carries per shard, part name "<stream>/<shard>"):
 * text, so that `zxctl status` and a reader of the store can show them:
 *   "after SEQ"        every record up to SEQ is written;
 *   "within SEQ SUB"   the aggregated record SEQ is written up to its user
 *                      record SUB (0-based), not beyond;
 *   "at MS"            nothing read yet: start at that time (ms since 1970);
 *   "end"              the shard is read to its end.
 */
#ifndef ZX_KINESIS_SHARDS_H
#define ZX_KINESIS_SHARDS_H

#include <stddef.h>
#include <stdint.h>

#include "workers/sources/kinesis/kinesis_json.h"

#define KS_CALL_GAP_MS 200       /* between two GetRecords of one shard */
#define KS_BACKOFF_MIN_MS 500    /* the first wait after a throttle */
#define KS_BACKOFF_MAX_MS 30000
#define KS_MAX_SHARDS 10000      /* shards tracked (open and closed) */
#define KS_POS_MAX (ZX_KIN_SEQ_MAX + 40) /* bytes of a position's text */

/* Where a shard's reading starts (or resumes). */
typedef enum {
    KS_NONE = 0,      /* no position: TRIM_HORIZON (or the `start` of a
                         first start, ks_seed) */
    KS_AFTER,         /* AFTER_SEQUENCE_NUMBER seq */
    KS_WITHIN,        /* AT_SEQUENCE_NUMBER seq, skipping user records
                         0..sub of it */
    KS_AT,            /* AT_TIMESTAMP at_ms */
    KS_END,           /* read to its end: never again */
} ks_kind;

typedef struct ks_pos {
    ks_kind kind;
    char seq[ZX_KIN_SEQ_MAX + 1];  /* KS_AFTER, KS_WITHIN */
    uint32_t sub;                  /* KS_WITHIN */
    int64_t at_ms;                 /* KS_AT */
} ks_pos;

/* Text of p into out (size >= KS_POS_MAX), NUL-ended; returns its length
 * (KS_NONE: 0, nothing to store). */
size_t ks_pos_format(const ks_pos *p, char *out);

/* Parse the text v[0..len) (a stored position) into *p: 0, or -1 when it
 * is not one of the forms above (a damaged store: the caller says so and
 * reads the shard from its oldest record). */
int ks_pos_parse(const void *v, size_t len, ks_pos *p);

/* What the reading of a shard is at. */
typedef enum {
    KS_WAITING = 0,   /* a parent is not finished yet */
    KS_NEEDS_ITERATOR,/* readable: GetShardIterator from pos */
    KS_READING,       /* has an iterator */
    KS_FINISHED,      /* read to its end */
} ks_state;

typedef struct ks_shard {
    char id[ZX_KIN_SHARD_ID_MAX + 1];
    char parent[ZX_KIN_SHARD_ID_MAX + 1];    /* "" none */
    char adjacent[ZX_KIN_SHARD_ID_MAX + 1];  /* "" none */
    int listed;              /* in the last complete listing */
    ks_state state;
    ks_pos pos;              /* where reading resumes: the last record read
                                (published, perhaps not yet committed) */
    char *iterator;          /* KS_READING: owned */
    int64_t next_call_ms;    /* no GetRecords before this (monotonic ms) */
    uint32_t backoff_ms;     /* the last wait after a throttle (0: none) */
    int64_t behind_ms;       /* MillisBehindLatest of the last call, -1 */
    int dirty;               /* pos changed since the caller last stored it
                                (in a frame): the caller clears it */
} ks_shard;

/* How a first start begins (the pipeline's `start`). */
typedef enum { KS_START_OLDEST = 0, KS_START_NEW, KS_START_AT } ks_start;

typedef struct ks_set {
    ks_shard *v;
    size_t n, cap;
    size_t rr;               /* round robin: where the next pick looks first */
    int first_start;         /* no shard had a position at seed time */
    ks_start start;
    int64_t start_ms;        /* KS_START_NEW: the time of the first start;
                                KS_START_AT: the time given */
} ks_set;

/* An empty set for a pipeline starting as `start` says (start_ms: the
 * wall-clock time now for KS_START_NEW, the time given for KS_START_AT). */
void ks_init(ks_set *s, ks_start start, int64_t start_ms);
void ks_free(ks_set *s);

/* Give the set a stored position of shard id (before the first listing).
 * 0; -1 out of memory or too many shards; -2 id is not a shard id. */
int ks_seed(ks_set *s, const char *id, const ks_pos *p);

/* A complete listing of the stream's shards (every ListShards page, in
 * order): adds the shards not known yet, marks the known ones listed or
 * not, and works out which are readable.  Call it at start, on a timer and
 * after a shard finishes.  0; -1 out of memory or more than KS_MAX_SHARDS
 * (err says so). */
int ks_listing(ks_set *s, const zx_kin_shard *shards, size_t n, char *err, size_t errlen);

/* The shard whose GetRecords (or GetShardIterator, KS_NEEDS_ITERATOR) is
 * due at now_ms, round robin; NULL when none is due.  *wait_ms (if not
 * NULL): when none is due, ms until the first one is (-1: none readable). */
ks_shard *ks_next(ks_set *s, int64_t now_ms, int64_t *wait_ms);

ks_shard *ks_find(ks_set *s, const char *id);

/* The shard got its iterator (taken: freed by the set). */
void ks_got_iterator(ks_shard *sh, char *iterator);

/* A GetRecords answered: the last record read (seq, and sub when it ended
 * within an aggregated record, else UINT32_MAX; seq NULL: no record), the
 * next iterator (taken; NULL: the shard is closed and read to its end),
 * MillisBehindLatest.  Schedules the next call KS_CALL_GAP_MS later (at
 * once when records came and the shard is behind, but never sooner than
 * the gap).  Returns 1 when the shard just finished (list again: its
 * children may be readable now), else 0. */
int ks_got_records(ks_set *s, ks_shard *sh, const char *seq, uint32_t sub, char *next_iterator,
                   int64_t behind_ms, int64_t now_ms);

/* The shard's iterator expired (ExpiredIteratorException) at now_ms: the
 * iterator is dropped and a new one is asked for from the shard's position
 * (ks_iterator_type: after the last record handed on, or where the shard
 * started; never LATEST), no sooner than KS_CALL_GAP_MS after now_ms, so
 * that an emulator or a service expiring every iterator is called at most
 * 5 times a second per shard, not in a loop. */
void ks_iterator_expired(ks_shard *sh, int64_t now_ms);

/* A throttle (ProvisionedThroughputExceeded, LimitExceeded) or a server
 * error on this shard: wait, doubling from KS_BACKOFF_MIN_MS to
 * KS_BACKOFF_MAX_MS, a random part of it (rnd: any 32-bit value). */
void ks_backoff(ks_shard *sh, int64_t now_ms, uint32_t rnd);

/* The GetShardIterator request's ShardIteratorType for the shard's
 * position ("TRIM_HORIZON", "AFTER_SEQUENCE_NUMBER",
 * "AT_SEQUENCE_NUMBER", "AT_TIMESTAMP"); the seq (or NULL) and the time in
 * ms (or -1) to send with it.  Never "LATEST". */
const char *ks_iterator_type(const ks_shard *sh, const char **seq, int64_t *at_ms);

/* Shards per state, for `zxctl status`. */
void ks_counts(const ks_set *s, size_t counts[4]);

#endif /* ZX_KINESIS_SHARDS_H */
