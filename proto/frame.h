/*
 * frame.h — the frame format between workers and the writer, version 2.
 *
 * This header is the one definition of the format.  A worker encodes a
 * rowset plus metadata into one frame, publishes it through its shared-memory
 * ring (common/ring.h), and the writer decodes it.  proto/frame.c and
 * proto/frame_read.c are the only code in zx that reads or writes msgpack;
 * nothing else may know this layout.
 *
 * A frame is exactly one MessagePack (https://msgpack.org/) value, an array
 * of 9 elements, with no bytes before or after it:
 *
 *   [ "ZXF",            0 magic: str, exactly the 3 bytes Z X F
 *     version,          1 uint: ZX_FRAME_VERSION (2).  A decoder rejects any
 *                         other version; a change to anything below that an
 *                         old decoder would misread bumps the version.
 *                         (Frames live only in the rings of one zxd, which
 *                         an upgrade restarts: versions never meet.)
 *     kind,             2 uint: zx_frame_kind: ZX_FRAME_ROWS (1), rows to
 *                         append; ZX_FRAME_CHANGES (2), changes to apply to
 *                         a mirror table (see "Changes frames" below);
 *                         ZX_FRAME_HASHES (3), a reverse sync's row hashes
 *                         (see "Row-hashes frames" below)
 *     pipeline,         3 str: pipeline name
 *     table,            4 str: destination table
 *     meta,             5 map str -> value, keys below, each optional.  An
 *                         unknown key is skipped (so keys can be added
 *                         without a new version); a key given twice: the last
 *                         one wins; a nil value counts as absent.
 *                         "ia" int    ingested_at_us (µs since the epoch, UTC)
 *                         "bi" str    batch_id (the source's id of the
 *                                     batch: a push's request id)
 *                         "dk" str    dedup_key: the writer records
 *                                     (dedup_key, dedup_hash, accepted,
 *                                     batch_id) in LMDB with the frame, so
 *                                     that the source can recognise a batch
 *                                     it was given again (a push's
 *                                     Idempotency-Key)
 *                         "dh" uint   dedup_hash (hash of the batch's input)
 *                         "ac" uint   accepted (rows the batch counts)
 *                         "md" uint   metadata columns the writer adds
 *                                     (ZX_META_INGESTED_AT, ZX_META_REQUEST_ID
 *                                     of conf/config.h; other bits are the
 *                                     source's own columns and ignored)
 *                         "po" array  upstream positions reached by this
 *                                     frame: array of [part: str, value:
 *                                     bin] pairs, at most one per part
 *                                     (e.g. part "clicks:3" for a Kafka
 *                                     partition, value its next offset).
 *                                     The writer stores each part's value
 *                                     with the frame's checkpoint (same
 *                                     transaction); a restarted source is
 *                                     handed the last one of every part.
 *                                     The bytes are the source's own.
 *                                     A fenced entry (workspace.postgres.
 *                                     shared: several zxd read one
 *                                     upstream) has 4 elements: [part,
 *                                     value, from: int, first: int]:
 *                                     from, the value the source believed
 *                                     stored for part when it built the
 *                                     frame (-1: it knew none); first,
 *                                     the offset of the frame's first
 *                                     message of part (-1: the frame has
 *                                     none, a position only).  The value
 *                                     of a fenced part, and what is
 *                                     stored for it, starts with its next
 *                                     offset as 8 bytes little-endian
 *                                     int64 (Kafka's encoding).  In a
 *                                     shared workspace the writer applies
 *                                     the frame's rows only when every
 *                                     fenced part's stored offset equals
 *                                     its from (a part never stored:
 *                                     accepted) and first is not below
 *                                     it, and then records the frame's
 *                                     positions as usual; otherwise it
 *                                     records none and skips the rows
 *                                     (compare-and-set,
 *                                     workers/writer/writer_fence.c).
 *                                     A source that fences puts the
 *                                     messages of one part only in a
 *                                     frame.  Elsewhere from and first
 *                                     are ignored.
 *                         "kc" array  changes frames: the key columns of
 *                                     the mirror table (array of str, at
 *                                     most ZX_FRAME_MAX_KEY_COLUMNS, each a
 *                                     column of the frame); row-hashes
 *                                     frames: the sync's key columns (see
 *                                     "Row-hashes frames"); rows frames,
 *                                     when present: the rows are a mirror
 *                                     table's initial copy, whose key
 *                                     columns these are (the writer
 *                                     appends them as any rows; a
 *                                     forwarder publishes them keyed)
 *                         "hp" uint   row-hashes frames: the hashes are
 *                                     unconfirmed, recorded by run N (the
 *                                     value, non-zero) before its
 *                                     destination committed (see
 *                                     "Row-hashes frames")
 *                         "hc" uint   row-hashes frames: run N's
 *                                     destination committed; its
 *                                     unconfirmed hashes now hold
 *                         "st" array  changes frames: the source's declared
 *                                     type of columns, array of [column: str,
 *                                     type: str] (Postgres' format_type
 *                                     words, e.g. "numeric(10,2)",
 *                                     "timestamp with time zone"); a
 *                                     backend maps them to its own types
 *                                     when it makes the mirror's columns;
 *                                     a column without one gets the type
 *                                     inferred from its values
 *                         "hi" uint   changes frames: 1 = also append every
 *                                     change to <table>__changes
 *                         "cp" uint   changes frames of a mirror's initial
 *                                     copy (ZX_FRAME_COPY_*): 1 = this
 *                                     frame's truncate starts it (the
 *                                     source's key is unique and not null
 *                                     in what follows, so the writer may
 *                                     leave the key's index out while the
 *                                     rows frames load), 2 = the copy ends
 *                                     with this frame (the index is built
 *                                     again in its transaction)
 *                         "fw" uint   rows and changes frames: 1 = the
 *                                     pipeline forwards what it applies
 *                                     (`forward:`): the writer also keeps
 *                                     the frame, as applied, in the
 *                                     workspace's forward journal, in the
 *                                     same transaction
 *                         "ti" uint   changes frames: 1 = some changes had
 *                                     no schema (Debezium events without
 *                                     one): their column types were
 *                                     inferred from the values; the writer
 *                                     says so on the feed once per table
 *     columns,          6 array of ncols entries, each an array of 2:
 *                         [ name: str, type: uint (zx_type, 0..6, see
 *                           common/rowset.h; the numbers are part of this
 *                           format) ]
 *                         names are unique within a frame
 *     rows,             7 array of nrows rows; each row is an array of
 *                         exactly ncols VALUEs, in column order
 *     rejects ]         8 array of input messages the source could not
 *                         turn into rows (not JSON, not an object...), each
 *                         an array of 4: [ reason: str, raw: bin (the
 *                         message bytes, possibly cut by the source), key:
 *                         bin or nil, position: str (JSON text, e.g.
 *                         {"topic":"t","partition":3,"offset":42}) ].  The
 *                         writer stores them in <table>__rejects.
 *
 *   VALUE (the msgpack type decides the value's zx_type):
 *     nil               no value: the row has no cell for this column
 *     true / false      BOOL
 *     int (any width)   INT; must fit int64 (a uint64 above INT64_MAX is
 *                       rejected)
 *     float 64          REAL (NaN and infinities allowed); float 32 is
 *                       accepted and widened
 *     str               TEXT; any bytes, embedded NUL allowed (length kept)
 *     ext type 1        TIMESTAMP: 8-byte big-endian int64 µs since the
 *                       epoch (UTC), followed by the original text bytes
 *                       (payload length >= 8)
 *     ext type 2        JSON: the compact JSON text
 *     anything else     rejected (bin, array, map, other ext types)
 *
 *   The column's type in `columns` is the batch's inferred type; a value's
 *   own type may differ from it (an INT in a REAL column, a misfit that the
 *   writer turns into NULL).  A column whose values are all nil still exists
 *   with its type.  Every msgpack encoding of a type is accepted (fixint or
 *   int64, fixstr or str32, fixext or ext32...); the encoder picks the
 *   shortest.  Strings are not checked for UTF-8 validity.  pipeline, table,
 *   column names, batch_id, dedup_key, position parts, reject reasons and
 *   reject positions must not contain a NUL byte (a frame that has one is
 *   rejected: readers of those use C strings).
 *
 * Changes frames (kind 2).  The same layout; each row is one change to the
 * mirror table `table`, in source order, and these reserved columns (the
 * prefix _zx is never made from data: common/colname.h) say what it is:
 *   "_zx_op"          TEXT  "insert", "update", "delete", "truncate" or
 *                           "gap" (history only: the changes between the
 *                           positions "A..B" of its _zx_lsn are missing,
 *                           e.g. a lost slot's; the mirror is not touched)
 *   "_zx_lsn"         TEXT  the change's source position (the source's
 *                           words: an LSN "16/B374D848", a binlog
 *                           position...), for <table>__changes
 *   "_zx_commit_time" TIMESTAMP  commit time at the source (may be absent)
 *   "_zx_xid"         INT   transaction id at the source (may be absent)
 *   "_zx_unchanged"   JSON  an array of the column names whose values the
 *                           source did not send (Postgres' unchanged TOAST
 *                           values): an update leaves them as stored
 *   "_zx_seq"         TEXT  (may be absent) orders the changes of one key
 *                           by their source position: the writer skips a
 *                           change whose _zx_seq is below the one it last
 *                           applied to the same key of the same table
 *                           (compared as bytes; one source writes them of
 *                           one width), so that a replay of older events
 *                           does not overwrite newer rows; the
 *                           mirror keeps it in its column _zx_seq
 *                           (workers/writer/keyseq.h), not in
 *                           <table>__changes
 *   "_zx_old:<key>"   any   an update that changed the key: the old value
 *                           of key column <key> (the old row is deleted)
 * Every other column is a column of the source table: an insert or update
 * carries the new row (a column with no value is NULL, unless listed in
 * _zx_unchanged), a delete carries the key, a truncate nothing.  A frame
 * has every column its inserts and updates set, also one that is NULL in
 * each of them; a column the frame lacks but "st" declares is NULL in its
 * inserts and updates (unless listed in _zx_unchanged), as if present.
 *
 * Row-hashes frames (kind 3).  A reverse sync's run, once its destination
 * committed, tells the writer what the destination now holds, so that the
 * next run sends only what changed (store/store.h, "hashes").
 * `table` is "" (no workspace table); each row is one key of the sync:
 *   "_zx_kh"  TEXT  the key hash, exactly 16 bytes (any bytes)
 *   "_zx_rh"  INT   the row hash (its 64 bits as int64); no value: the
 *                   key was deleted from the destination (forget it)
 *   "_zx_kv"  TEXT  the key's values as a JSON array text (with _zx_rh)
 * "kc" names the sync's key columns: when they differ from those the
 * store recorded with the sync's hashes (state "key_cols", a JSON array of
 * the names), the writer forgets every hash of the sync first, in the same
 * transaction (hashes of another key say nothing of this one's rows).
 * Unconfirmed hashes ("hp" = N): a first run into a transactional
 * destination records its hashes while the destination still builds its
 * key and commits.  The writer keeps state "hashes_pending" = N with the
 * first of them (forgetting every hash of the sync first when that state
 * held another run), and deletes it when a frame with "hc" = N comes (the
 * run's destination committed).  While it is there the stored hashes say
 * nothing: a run reads them as of another key (every row is sent), and
 * the first frame without "hp" forgets them all before its own, as does a
 * frame with another run's "hp".
 * "po" may hold one part, "cursor": the sync's cursor mark
 * (workers/syncs/cursor.h), which the writer keeps as that position part
 * of the sync in the same store transaction as the frame's hashes.
 * Applying one is idempotent (a put or a delete per key), so the writer
 * applies a row-hashes frame again after a crash rather than recording a
 * checkpoint for it; only the sync's run worker sends them.
 *
 * Why the decoder does not use msgpack's unpacker: msgpack_unpack_next
 * allocates an object array as large as a claimed count (a 5-byte header can
 * ask for 2^32 entries), so a hostile frame could make the writer allocate
 * gigabytes.  frame.c reads the bytes directly, bounded by the buffer, with
 * no allocation other than the rowset's own (O(frame length)).
 *
 * Thread safety: every function here works only on its arguments.
 */
#ifndef ZX_PROTO_FRAME_H
#define ZX_PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/rowset.h"

#define ZX_FRAME_VERSION 2
#define ZX_FRAME_MAGIC "ZXF"

/* Limits enforced by the decoder (a frame beyond them is rejected). */
#define ZX_FRAME_MAX_COLUMNS (1u << 20)
#define ZX_FRAME_MAX_ROWS (1u << 30)
#define ZX_FRAME_MAX_POSITIONS 65536u
#define ZX_FRAME_MAX_REJECTS (1u << 20)
#define ZX_FRAME_MAX_KEY_COLUMNS 64u

typedef enum { ZX_FRAME_ROWS = 1, ZX_FRAME_CHANGES = 2, ZX_FRAME_HASHES = 3 } zx_frame_kind;

/* The columns of a row-hashes frame (kind 3, see above). */
#define ZX_HASH_KH "_zx_kh"
#define ZX_HASH_RH "_zx_rh"
#define ZX_HASH_KV "_zx_kv"
/* The store's state records of a sync that row-hashes frames keep: its
 * key columns, and the run whose hashes are unconfirmed ("hp"). */
#define ZX_STATE_KEY_COLS "key_cols"
#define ZX_STATE_HASHES_PENDING "hashes_pending"

/* The reserved columns of a changes frame (see above). */
#define ZX_CH_OP "_zx_op"
#define ZX_CH_LSN "_zx_lsn"
#define ZX_CH_COMMIT_TIME "_zx_commit_time"
#define ZX_CH_XID "_zx_xid"
#define ZX_CH_UNCHANGED "_zx_unchanged"
#define ZX_CH_SEQ "_zx_seq"
#define ZX_CH_OLD_PREFIX "_zx_old:"

/* A column's declared type at the source ("st"). */
typedef struct zx_frame_coltype {
    const char *column;         /* NUL-terminated */
    const char *type;           /* NUL-terminated */
} zx_frame_coltype;

/* One upstream position reached by a frame ("po"). */
typedef struct zx_frame_pos {
    const char *part;           /* NUL-terminated, non-empty, no NUL inside */
    const void *value;          /* value_len bytes (may be 0) */
    size_t value_len;
    /* fencing (see "po"): fenced != 0 writes and decodes [part, value,
     * from, first]; from and first are then >= -1 (encode: EINVAL
     * otherwise); 0: a 2-element entry, from and first -1 */
    int fenced;
    int64_t from;
    int64_t first;
} zx_frame_pos;

/* One input message the source could not turn into rows. */
typedef struct zx_frame_reject {
    const char *reason;         /* NUL-terminated */
    const void *raw;            /* raw_len bytes of the message */
    size_t raw_len;
    const void *key;            /* NULL = no key; else key_len bytes */
    size_t key_len;
    const char *position;       /* NUL-terminated JSON text; NULL = "" */
} zx_frame_reject;

/* "cp" of a changes frame: a mirror's initial copy starts (its truncate)
 * or ends (the frame carrying the copy's position). */
enum { ZX_FRAME_COPY_START = 1, ZX_FRAME_COPY_END = 2 };

typedef struct zx_frame_meta {
    uint32_t version;           /* set by decode; ignored by encode (which
                                   always writes ZX_FRAME_VERSION) */
    uint32_t kind;              /* zx_frame_kind (encode: 0 = ZX_FRAME_ROWS) */
    const char *pipeline;       /* NUL-terminated; encode: NULL = "" */
    const char *table;          /* NUL-terminated; encode: NULL = "" */
    int64_t ingested_at_us;     /* 0 = absent */
    const char *batch_id;       /* NULL = absent */
    const char *dedup_key;      /* NULL = absent */
    uint64_t dedup_hash;        /* 0 = absent */
    uint32_t metadata;          /* ZX_META_* bits (0 = none) */
    uint64_t accepted;          /* rows the batch counts; 0 = absent */
    const zx_frame_pos *positions;   /* npositions entries (NULL when 0) */
    size_t npositions;
    const zx_frame_reject *rejects;  /* nrejects entries (NULL when 0) */
    size_t nrejects;
    /* changes frames ("kc", "st", "hi", "cp"), row-hashes frames ("kc"),
     * rows frames of a mirror's copy ("kc"); a rows frame encodes and
     * decodes no "st", "hi" or "cp" */
    const char *const *key_cols;     /* nkey_cols NUL-terminated names */
    size_t nkey_cols;
    const zx_frame_coltype *col_types;  /* ncol_types entries */
    size_t ncol_types;
    int history;
    int copy;                   /* "cp": 0, ZX_FRAME_COPY_START or _END */
    int inferred;               /* "ti" */
    int forward;                /* "fw" (rows and changes frames) */
    uint64_t hashes_pending;    /* "hp" (row-hashes frames): 0 = absent */
    uint64_t hashes_confirm;    /* "hc" (row-hashes frames): 0 = absent */
} zx_frame_meta;

/* Frames are encoded into a zx_buf (common/buf.h), owned by the caller. */

/* Append one whole frame for (m, rs) to out (reset it first if out must hold
 * only this frame).  Encodes rs's closed rows (an open row is ignored) with
 * zx_rowset_row, so a column given twice in a row keeps its last value; a
 * cell of type NULL (or of a type outside zx_type) is written as nil.
 * A position with fenced set is written with its from and first.  m and
 * rs are only read.  m->kind 0 is taken as ZX_FRAME_ROWS.  Returns 0, or -1
 * with errno ENOMEM (out of memory) or EINVAL (a bug of the caller: an
 * unknown m->kind, a column type outside zx_type, a NUL byte in a column
 * name, a position with a NULL or empty part or a NULL value of non-zero
 * length, a fenced position's from or first below -1, positions or
 * rejects NULL with a non-zero count or over their
 * limits, a reject with a NULL raw of non-zero length); on failure
 * out->len is as it was before.  Parts are not checked for duplicates: the
 * writer keeps the last value of a part given twice. */
int zx_frame_encode(const zx_frame_meta *m, const zx_rowset *rs, zx_buf *out);

/* Cheap O(1) upper bound of the bytes the rows and columns of rs take in a
 * frame (string bytes from rs->str_bytes and rs->name_bytes: a string shared
 * by many cells counts once per cell; other arena data such as rejects'
 * bytes is not counted), plus 256 bytes for the
 * fixed part and short metadata.  Long metadata strings are not counted: add
 * zx_frame_meta_estimate(m) for an exact bound of the whole frame. */
size_t zx_frame_estimate(const zx_rowset *rs);

/* Upper bound of the bytes the metadata (fields 0-5: positions included)
 * and the rejects (field 8) take; O(their sizes). */
size_t zx_frame_meta_estimate(const zx_frame_meta *m);

/* Decode one frame of exactly len bytes.  rs must be initialised; it is reset
 * first, then receives the columns (name + type from the frame, in frame
 * order: column i of the frame is rs->cols[i]) and the rows (one cell per
 * non-nil value).  Every string of m (pipeline, table, batch_id, dedup_key),
 * its positions and rejects arrays and their bytes, and rs are copied into
 * rs's arena and stays valid until
 * zx_rowset_reset / zx_rowset_free of rs, so buf may be released as soon as
 * this returns.
 * Returns 0, or -1 on malformed input (wrong magic or version, unknown kind,
 * wrong element types, counts that do not match, a row width other than
 * ncols, duplicate column names, truncated data, trailing bytes, an unknown
 * value type, limits above) or out of memory, with a one-line message in err
 * (NUL-terminated, truncated to errlen; err may be NULL when errlen is 0).
 * On failure rs is reset and *m zeroed.  Never reads outside
 * [buf, buf + len); allocates O(len) memory at most, whatever counts claim. */
int zx_frame_decode(const void *buf, size_t len, zx_frame_meta *m, zx_rowset *rs,
                    char *err, size_t errlen);

#endif
