/*
 * ring.h — single-producer single-consumer ring of variable-length records
 * in shared memory (in the spirit of PostgreSQL's shm_mq).
 *
 * One ring per pipeline: a worker process produces frames, the writer
 * consumes them.  The ring lives in memory the caller provides (the
 * supervisor mmaps a memfd segment MAP_SHARED and lays several rings out one
 * after another), so the shared part holds only offsets, never pointers, and
 * may be mapped at different addresses in different processes.
 *
 * Layout: a 192-byte header (zx_ring_hdr, opaque: magic, format version,
 * capacity; producer fields and consumer fields on separate cache lines)
 * followed by `capacity` bytes of data.  A record is a 16-byte header
 * (length, tag, sequence number) and its payload padded to 8 bytes; a record
 * never wraps around the end of the data area (the producer leaves a wrap
 * marker and starts again at offset 0).
 *
 * Publication: the producer copies the whole record, then advances the
 * published tail with a release store; the consumer loads it with acquire,
 * so a record is never half-visible.  If the producer dies between reserve
 * and commit nothing it wrote becomes visible.  The consumer reads records in
 * place and frees nothing until zx_ring_release; a consumer that dies before
 * releasing leaves the records in the ring for its successor.
 *
 * Sequence numbers: 1, 2, 3, ... per ring, kept in shared memory so they
 * continue across producer restarts (a new producer recovers the exact last
 * published sequence number from the ring itself, even if its predecessor was
 * killed in the middle of a commit).
 *
 * Concurrency: exactly one producer process and one consumer process at a
 * time (the supervisor guarantees it: a replacement is started only after the
 * previous one was reaped).  No locks, no busy waiting: callers sleep on
 * eventfds; the ring only offers zx_ring_wake_fd / zx_ring_drain_fd.
 *
 * It must never: trust what it reads in shared memory (the other side is
 * another process that may be buggy or killed mid-write: every header and
 * counter is bounds-checked, errors are ZX_RING_CORRUPT, never a crash),
 * allocate memory, take a lock, or block.
 */
#ifndef ZX_COMMON_RING_H
#define ZX_COMMON_RING_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    ZX_RING_OK = 0,
    ZX_RING_WOULD_BLOCK = 1,  /* no record to read / not enough free space now */
    ZX_RING_TOO_BIG = 2,      /* the record can never fit (> zx_ring_max_record) */
    ZX_RING_CORRUPT = 3,      /* impossible header or counter in shared memory */
    ZX_RING_BAD_SEGMENT = 4   /* attach: not a ring of this format, or too small */
} zx_ring_result;

/* Format version stored in the header; bumped on any layout change. */
#define ZX_RING_VERSION 2u
/* Smallest and largest data capacity accepted by zx_ring_format. */
#define ZX_RING_MIN_CAPACITY 256u
#define ZX_RING_MAX_CAPACITY (UINT64_C(1) << 40)

typedef struct zx_ring_hdr zx_ring_hdr;         /* in shared memory, opaque */

/* Process-private handle.  Fields are read-only for callers. */
typedef struct zx_ring {
    zx_ring_hdr *hdr;       /* start of the ring in the caller's mapping */
    uint8_t *data;          /* start of the data area (hdr + header size) */
    uint64_t cap;           /* data capacity in bytes (multiple of 64) */
    int peer_fd;            /* eventfd written to wake the other side, or -1 */
    /* producer-private state */
    int prod_ready;         /* next_seq recovered from shared memory */
    int res_active;         /* a reservation is pending */
    uint64_t next_seq;      /* seq the next commit will carry */
    uint64_t res_tail;      /* published tail when the reservation was made */
    uint64_t res_skip;      /* bytes skipped at the end of the data area */
    uint64_t res_len;       /* payload bytes reserved */
    uint64_t soft_cap;      /* zx_ring_soft_cap (0: the whole ring) */
    /* consumer-private state */
    uint64_t give_back;     /* page size when released pages go back to the
                               kernel (zx_ring_give_back), else 0 */
    uint64_t gb_fast_bps;   /* the rate above which pages are kept */
    uint64_t gb_since, gb_bytes; /* the release rate's window: its start
                               (CLOCK_MONOTONIC ns) and bytes released */
    int gb_fast;            /* the last window was over gb_fast_bps */
} zx_ring;

/* Consumer position: pos = byte position (monotonic) after the last record
 * read, seq = sequence number of that record (0 before any record). */
typedef struct zx_ring_cursor { uint64_t pos; uint64_t seq; } zx_ring_cursor;

/* Bytes of shared memory needed by a ring of `capacity` data bytes (header +
 * data, capacity rounded up to a multiple of 64); always a multiple of 64.
 * Returns 0 if capacity is outside [ZX_RING_MIN_CAPACITY,
 * ZX_RING_MAX_CAPACITY]. */
size_t zx_ring_footprint(uint64_t capacity);

/* Initialise a ring in `mem` (zx_ring_footprint(capacity) bytes, 64-byte
 * aligned: rings laid out one after another from a page-aligned mapping
 * always are, since footprints are multiples of 64): magic, version, capacity
 * (rounded up to a multiple of 64), all counters zero.  Call it before any
 * process attaches.  Returns 0, or -1 if mem is NULL or misaligned or the
 * capacity is out of range. */
int zx_ring_format(void *mem, uint64_t capacity);

/* Attach a process-private handle to the ring at `mem`, whose mapping has at
 * least `size` bytes from mem.  Returns ZX_RING_OK, or ZX_RING_BAD_SEGMENT if
 * mem is NULL/misaligned, the magic, version or header size do not match, or
 * the capacity is invalid or does not fit in size.  The handle holds no
 * resources (nothing to detach); peer_fd starts at -1.  mem must be 64-byte
 * aligned.  The handle is valid while the mapping is.  The segment's creator
 * formats once; producer and consumer (and their replacements) only attach. */
zx_ring_result zx_ring_attach(zx_ring *r, void *mem, size_t size);

/* Set the eventfd written by commit/release with wake != 0 (-1 = none).  The
 * ring does not own it (never closes it). */
void zx_ring_set_peer(zx_ring *r, int eventfd);

/* Add 1 to an eventfd; EAGAIN (counter saturated: the peer will wake anyway)
 * and other errors are ignored; EINTR is retried.  No-op for -1. */
void zx_ring_wake_fd(int efd);

/* Read an eventfd until it is empty (works whether or not the fd is
 * O_NONBLOCK: it polls with a zero timeout before each read).  Call it before
 * re-checking the ring, then sleep in poll() if there is still nothing to
 * do: a wake-up sent in between is not lost.  No-op for -1. */
void zx_ring_drain_fd(int efd);

/* ---- producer side (one process at a time) ---- */

/* Largest payload that can ever fit: capacity / 2 - 16 (so that a record
 * always fits once the consumer has released everything, wherever the tail
 * is).  Frames bigger than this must be split by the producer. */
uint64_t zx_ring_max_record(const zx_ring *r);

/* Reserve contiguous space for a record of `len` payload bytes and set *buf
 * to it (8-byte aligned, in shared memory, writable until commit/cancel).
 * Nothing is visible to the consumer until zx_ring_commit.  A second reserve
 * without commit replaces the first.  Returns ZX_RING_OK, ZX_RING_WOULD_BLOCK
 * (not enough free space now: wait for the consumer's wake-up and retry),
 * ZX_RING_TOO_BIG (len > zx_ring_max_record), ZX_RING_CORRUPT (counters in
 * shared memory are impossible). */
zx_ring_result zx_ring_reserve(zx_ring *r, size_t len, void **buf);

/* Publish the reserved record with `len` payload bytes (len <= the reserved
 * length): writes the record header, then advances the tail with a release
 * store.  Returns the record's sequence number (1, 2, 3, ... continuing
 * across producer restarts), or 0 if there is no reservation or len is larger
 * than reserved (nothing published).  wake != 0 writes the peer eventfd
 * (batch: commit several records with wake = 0, wake on the last one). */
uint64_t zx_ring_commit(zx_ring *r, size_t len, int wake);

/* Keep the records this producer handle writes within the first `bytes`
 * of the data area (rounded down to 8; 0 or at least the capacity: the
 * whole ring): a record that would cross that offset starts the next lap
 * at offset 0 instead (a wrap marker, as at the end), so that at any rate
 * only those pages are ever written, and held in memory.  A record larger
 * than `bytes`, or larger than what lies before the tail (a wrap could
 * then never find room), still goes where the whole ring has room, as
 * without a cap (zx_ring_max_record is unchanged): past the cap by at most
 * its own length.  The bytes a wrap skips count as in
 * use until the consumer passes them, so about `bytes` of records are in
 * flight at most.  Producer-private: the consumer needs nothing (wrap
 * markers are part of the format); a new handle starts without one. */
void zx_ring_soft_cap(zx_ring *r, uint64_t bytes);

/* Drop the reservation (nothing is published).  No-op if there is none. */
void zx_ring_cancel(zx_ring *r);

/* Sequence number the next commit will carry (recovers it from shared memory
 * on first use by this handle, walking the unreleased records if needed).
 * Lets a producer write the ring seq into the frame before committing.
 * Returns 0 if shared memory is corrupt. */
uint64_t zx_ring_next_seq(zx_ring *r);

/* Seq of the last committed record, as stored in the header (after a
 * producer was killed inside commit it may lag by one until the next
 * producer's first reserve or zx_ring_next_seq repairs it). */
uint64_t zx_ring_published_seq(const zx_ring *r);

/* Seq of the last record released by the consumer (acquire load).  A
 * producer waits for acked_seq >= s before treating record s as applied. */
uint64_t zx_ring_acked_seq(const zx_ring *r);

/* Bytes published and not yet released (including padding; not the bytes
 * the last wrap marker skips while it is in flight); a snapshot, for
 * metrics ("ring fill"). */
uint64_t zx_ring_used_bytes(const zx_ring *r);

/* Data capacity in bytes. */
uint64_t zx_ring_capacity(const zx_ring *r);

/* ---- consumer side (one process at a time) ---- */

/* Put the cursor at the first unreleased record (what a consumer that starts
 * or restarts must do: it re-reads everything its predecessor did not
 * release). */
void zx_ring_cursor_init(const zx_ring *r, zx_ring_cursor *c);

/* Read the next published record after the cursor, in place: *data / *len /
 * *seq are set and the cursor advances.  The bytes stay valid (and must not
 * be written) until a zx_ring_release covering them.  Returns ZX_RING_OK,
 * ZX_RING_WOULD_BLOCK (nothing published after the cursor), or
 * ZX_RING_CORRUPT (impossible header: bad tag, length, bounds or a sequence
 * number that is not the previous one + 1; the cursor does not move).  data,
 * len and seq may be NULL. */
zx_ring_result zx_ring_next(zx_ring *r, zx_ring_cursor *c, const void **data,
                            size_t *len, uint64_t *seq);

/* Free everything up to the cursor and publish acked_seq = c->seq (release
 * stores: first acked_seq, then the head).  A cursor outside the published,
 * unreleased range is ignored.  wake != 0 writes the peer eventfd.  With
 * zx_ring_give_back on, unless bytes went through faster than its
 * fast_bps over the last 100 ms (their pages are written again
 * within moments), the whole pages this call frees go back to the kernel
 * before the head moves, so that the producer never writes into a page
 * being given back (a page only partly freed by one call stays: the
 * producer may be writing its freed part already). */
void zx_ring_release(zx_ring *r, const zx_ring_cursor *c, int wake);

/* Make this consumer handle give the pages it releases back to the kernel
 * (madvise MADV_REMOVE) while bytes go through at fast_bps (bytes a
 * second) or less over the last 100 ms; 0: never, UINT64_MAX: at any
 * rate.  A ring its consumer keeps up with then holds about the bytes in
 * flight, not every page it ever used, when it is released in spans of
 * pages or more, as the writer releases frames; the producer's next lap
 * maps fresh zeroed pages, one fault per page (hence the rate: a fast
 * ring's pages are written again within moments).  Only for a ring in
 * MAP_SHARED memory of a memfd or shm file (zx_segment's); where the kernel
 * refuses (other memory) it turns itself off.  Never fails. */
void zx_ring_give_back(zx_ring *r, uint64_t fast_bps);

/* zx_segment's fast_bps: a full speed Kafka stream moves ~140 MB/s, where
 * a fault per 4 KiB page cost ~6% of its CPU; at this rate a ring of 64 MiB
 * takes 4 s a lap, and faults cost under 1% of a core. */
#define ZX_RING_FAST_BPS (UINT64_C(16) << 20)


#endif /* ZX_COMMON_RING_H */
