/*
 * pgoutput.h — PostgreSQL's logical replication messages as the `pgoutput`
 * plugin writes them (protocol versions 1 and 2), the streaming
 * replication CopyData payloads that carry them (XLogData 'w', primary
 * keepalive 'k'), the standby status update zx sends back ('r'), and a
 * cache of the relations a connection has described.  Layouts: PostgreSQL
 * 15 documentation, "Streaming Replication Protocol" and "Logical
 * Replication Message Formats"; every integer is big-endian.
 *
 * Pure C: no libpq, no socket, no clock.  The decoder allocates nothing:
 * what it returns points into the input buffer or into the caller's
 * pgo_decoder; only the relation cache allocates (malloc), and within the
 * bounds given to pgo_cache_create.
 *
 * Everything it reads comes from a server that may be hostile or corrupt:
 * decoding never reads past the length it is given, checks every count and
 * length against the bytes left before using it, and answers -1 with a
 * sentence naming the message type and the byte offset where it went
 * wrong.  It is strict: a message must end exactly where its layout ends,
 * and flags, kinds and enumerations must be ones the documentation lists
 * (a value a newer server might send under the same protocol version stops
 * the stream rather than being misread).
 *
 * It must never: crash or read out of bounds on any input, keep a pointer
 * into an input buffer after a call returns (only the pgo_msg handed back
 * does), or touch the network.
 */
#ifndef ZX_SOURCES_PGOUTPUT_H
#define ZX_SOURCES_PGOUTPUT_H

#include <stddef.h>
#include <stdint.h>

/* ---- limits --------------------------------------------------------- */

/* Columns of a relation or a tuple: PostgreSQL's MaxHeapAttributeNumber (a
 * table can never have more, dropped columns included). */
#define PGO_MAX_COLS 1600u
/* Bytes of a relation, namespace, column or type name (without its NUL).
 * PostgreSQL's names are at most NAMEDATALEN - 1 = 63 bytes; 255 leaves
 * room for a server built with NAMEDATALEN up to 256. */
#define PGO_MAX_NAME 255u
/* Upper bounds of pgo_cache_create's arguments, and its defaults (when
 * given 0). */
#define PGO_CACHE_MAX_RELS     1000000u
#define PGO_CACHE_DEFAULT_RELS 100000u
#define PGO_CACHE_DEFAULT_BYTES ((size_t)256 << 20)
/* Room for an error sentence in pgo_decoder.err. */
#define PGO_ERR_LEN 256
/* Bytes of an encoded standby status update. */
#define PGO_STATUS_LEN 34
/* Longest text pgo_lsn_format writes: "FFFFFFFF/FFFFFFFF" and its NUL. */
#define PGO_LSN_LEN 18

/* ---- LSNs and times -------------------------------------------------- */

/* An LSN (XLogRecPtr): a byte position in the WAL.  0 is "invalid". */
typedef uint64_t pgo_lsn;

/* lsn as PostgreSQL (up to 17) prints it, "%X/%X" of its high and low 32
 * bits: "16/B374D848", "0/0".  Writes at most PGO_LSN_LEN bytes with the
 * NUL; returns the length, or -1 when n is too small (out then holds ""
 * when n > 0). */
int pgo_lsn_format(pgo_lsn lsn, char *out, size_t n);

/* Parses what pg_lsn accepts: 1 to 8 hex digits (either case), '/', 1 to 8
 * hex digits, nothing else (no space, no sign; PostgreSQL 18's zero-padded
 * form "16/0374D848" is the same grammar).  0 and *lsn, or -1 (s NULL,
 * or not that form; *lsn unchanged). */
int pgo_lsn_parse(const char *s, pgo_lsn *lsn);

/* PostgreSQL's timestamps (TimestampTz) count microseconds since
 * 2000-01-01 00:00:00 UTC.  These convert to and from microseconds since
 * the Unix epoch: 0 and *out, or -1 when the result does not fit in an
 * int64 (PostgreSQL's "infinity" is INT64_MAX, which never fits). */
#define PGO_EPOCH_DIFF_US INT64_C(946684800000000)
int pgo_time_to_unix_us(int64_t pg_us, int64_t *out);
int pgo_time_from_unix_us(int64_t unix_us, int64_t *out);

/* ---- relations and the relation cache --------------------------------- */

#define PGO_COL_KEY 1u         /* pgo_col.flags: part of the replica
                                  identity (all columns under FULL) */

/* One column as a Relation message describes it. */
typedef struct pgo_col {
    const char *name;          /* NUL-terminated, at most PGO_MAX_NAME bytes */
    uint32_t type_oid;         /* the column's type (pg_type oid) */
    int32_t typmod;            /* atttypmod (-1: none) */
    uint8_t flags;             /* 0 or PGO_COL_KEY */
} pgo_col;

/* A relation as a Relation message describes it: the same struct for a
 * decoded message (pointers into the input and the decoder) and for the
 * cache's copy (pointers into the cache's memory). */
typedef struct pgo_rel {
    uint32_t relid;            /* the relation's oid, never 0 */
    const char *nspname;       /* namespace: "pg_catalog" when the server
                                  sent "" (as PostgreSQL reads it) */
    const char *relname;       /* both NUL-terminated, at most PGO_MAX_NAME */
    char replident;            /* replica identity: 'd' default, 'n'
                                  nothing, 'f' full, 'i' index */
    uint16_t ncols;            /* 0 to PGO_MAX_COLS (a table may have none) */
    const pgo_col *cols;       /* ncols columns, in the tuples' order */
} pgo_rel;

/* The relations one replication connection has described, by relid.  A
 * new Relation message for a known relid replaces the old description
 * (that is how a schema change arrives).  Opaque. */
typedef struct pgo_cache pgo_cache;

/* A new empty cache holding at most max_rels relations (0: the default,
 * PGO_CACHE_DEFAULT_RELS; more than PGO_CACHE_MAX_RELS is taken as that)
 * and at most max_bytes of descriptions (0: PGO_CACHE_DEFAULT_BYTES); a
 * relation's bytes are about 64 + 24 per column + its names.  NULL when
 * out of memory.  Free with pgo_cache_destroy. */
pgo_cache *pgo_cache_create(uint32_t max_rels, size_t max_bytes);
/* Frees the cache and every description it holds.  NULL ok. */
void pgo_cache_destroy(pgo_cache *c);

/* Copies rel (names, columns) into the cache, replacing any description of
 * the same relid.  Returns the cache's copy, valid until the next put of
 * the same relid, pgo_cache_clear or pgo_cache_destroy.  NULL with a
 * sentence in err (errlen bytes; may be NULL) when rel is not valid (relid
 * 0, more than PGO_MAX_COLS columns, a name NULL or longer than
 * PGO_MAX_NAME), when the cache is full (a new relid beyond max_rels, or
 * the bytes beyond max_bytes) or out of memory; the cache is then
 * unchanged. */
const pgo_rel *pgo_cache_put(pgo_cache *c, const pgo_rel *rel, char *err, size_t errlen);
/* The cached description of relid, or NULL.  Valid as for pgo_cache_put. */
const pgo_rel *pgo_cache_get(const pgo_cache *c, uint32_t relid);
/* Relations held / bytes of their descriptions. */
uint32_t pgo_cache_count(const pgo_cache *c);
size_t pgo_cache_bytes(const pgo_cache *c);
/* Forgets every relation (a new connection starts with an empty cache:
 * the server describes each relation again before its first change). */
void pgo_cache_clear(pgo_cache *c);

/* ---- decoded messages ------------------------------------------------ */

/* Message types: the first byte of each message. */
typedef enum pgo_type {
    PGO_BEGIN = 'B',
    PGO_COMMIT = 'C',
    PGO_ORIGIN = 'O',
    PGO_RELATION = 'R',
    PGO_TYPE = 'Y',
    PGO_INSERT = 'I',
    PGO_UPDATE = 'U',
    PGO_DELETE = 'D',
    PGO_TRUNCATE = 'T',
    PGO_MESSAGE = 'M',
    PGO_STREAM_START = 'S',    /* protocol 2 */
    PGO_STREAM_STOP = 'E',     /* protocol 2 */
    PGO_STREAM_COMMIT = 'c',   /* protocol 2 */
    PGO_STREAM_ABORT = 'A',    /* protocol 2 */
} pgo_type;

/* "Insert", "Stream Commit"...; "unknown" for another value. */
const char *pgo_type_name(int type);

/* The kind of one column's value in a tuple. */
typedef enum pgo_kind {
    PGO_NULL = 'n',            /* SQL NULL */
    PGO_UNCHANGED = 'u',       /* an unchanged TOASTed value: the server
                                  did not send it; the column keeps the
                                  value it had (not NULL, not empty) */
    PGO_TEXT = 't',            /* the type's text output */
    PGO_BINARY = 'b',          /* the type's binary send format */
} pgo_kind;

typedef struct pgo_value {
    char kind;                 /* a pgo_kind */
    uint32_t len;              /* bytes at data (0 for 'n' and 'u') */
    const uint8_t *data;       /* into the input ('t', 'b'), NOT
                                  NUL-terminated; NULL for 'n' and 'u' */
} pgo_value;

typedef struct pgo_tuple {
    uint16_t ncols;            /* 0 to PGO_MAX_COLS */
    const pgo_value *vals;     /* in the decoder (pgo_decoder.vals) */
} pgo_tuple;

/* Truncate options. */
#define PGO_TRUNCATE_CASCADE 1u
#define PGO_TRUNCATE_RESTART_IDENTITY 2u
/* Message flags. */
#define PGO_MESSAGE_TRANSACTIONAL 1u

/* One decoded message.  Pointers point into the input buffer (values,
 * strings: each string is NUL-terminated there), into the pgo_decoder
 * (tuple value arrays, a Relation's columns), into the cache (rel), or to
 * the static "pg_catalog".  Valid while the input buffer is unchanged and
 * until the next pgo_decode with the same decoder; rel as for
 * pgo_cache_put. */
typedef struct pgo_msg {
    pgo_type type;
    /* Relation, Type, Insert, Update, Delete, Truncate and Message inside a
     * stream block (protocol 2, between Stream Start and Stream Stop) carry
     * the xid of the (sub)transaction they belong to; 0 outside. */
    uint32_t xid;
    int streamed;              /* 1 when xid was sent */
    /* Relation, Insert, Update, Delete when the decoder has a cache: the
     * cache's description (for Relation: the copy just stored); else NULL. */
    const pgo_rel *rel;
    union {
        struct {
            pgo_lsn final_lsn;     /* LSN of the commit; never 0 */
            int64_t commit_time;   /* PostgreSQL microseconds */
            uint32_t xid;
        } begin;
        struct {
            pgo_lsn commit_lsn;
            pgo_lsn end_lsn;       /* end of the commit record: what the
                                      standby status update acknowledges */
            int64_t commit_time;
        } commit;
        struct {
            pgo_lsn lsn;           /* the commit's LSN on the origin */
            const char *name;
        } origin;
        pgo_rel relation;          /* Relation (as sent; see also rel) */
        struct {
            uint32_t oid;
            const char *nspname;   /* "pg_catalog" when sent as "" */
            const char *name;
        } type;
        struct {                   /* Insert, Update, Delete */
            uint32_t relid;
            char old_kind;         /* 'K' old key (non-key columns 'n'), 'O'
                                      whole old row (REPLICA IDENTITY
                                      FULL), or 0: no old tuple (Insert; an
                                      Update that kept its key).  Delete:
                                      always 'K' or 'O'. */
            pgo_tuple old_tuple;   /* when old_kind != 0 */
            pgo_tuple new_tuple;   /* Insert, Update */
        } change;
        struct {
            uint8_t options;       /* PGO_TRUNCATE_* */
            uint32_t nrels;        /* at least 1 */
            const uint8_t *relids; /* nrels big-endian uint32 in the input:
                                      read with pgo_truncate_relid */
        } truncate;
        struct {
            uint8_t flags;         /* 0 or PGO_MESSAGE_TRANSACTIONAL */
            pgo_lsn lsn;
            const char *prefix;
            uint32_t len;
            const uint8_t *content;/* len bytes in the input */
        } message;
        struct {
            uint32_t xid;          /* never 0 */
            int first_segment;     /* 1: the first block of this xid */
        } stream_start;
        struct {
            uint32_t xid;          /* never 0 */
            pgo_lsn commit_lsn;
            pgo_lsn end_lsn;
            int64_t commit_time;
        } stream_commit;
        struct {
            uint32_t xid;          /* never 0 */
            uint32_t subxid;       /* == xid: the whole transaction */
        } stream_abort;
    } u;
} pgo_msg;

/* The i-th relation id of a Truncate (i < nrels). */
uint32_t pgo_truncate_relid(const pgo_msg *m, uint32_t i);

/* ---- the decoder ----------------------------------------------------- */

/* The state of one replication connection's decoding and the storage of
 * what it returns.  Large (about 90 KiB): allocate it, or make it static;
 * do not put it on a small stack.  Fields are read-only for the caller
 * after pgo_decoder_init. */
typedef struct pgo_decoder {
    int version;               /* proto_version asked of pgoutput: 1 or 2 */
    int in_stream;             /* between Stream Start and Stream Stop */
    uint32_t stream_xid;       /* the open stream block's xid */
    pgo_cache *cache;          /* NULL: none (owned by the caller) */
    char err[PGO_ERR_LEN];     /* the last error ("" none) */
    pgo_value vals[2][PGO_MAX_COLS]; /* old and new tuple values */
    pgo_col cols[PGO_MAX_COLS];      /* a Relation's columns */
} pgo_decoder;

/* Prepares d for a connection using pgoutput protocol `version` (1 or 2)
 * and, when cache is not NULL, that relation cache (the caller keeps
 * owning it; it must outlive d's use).  0, or -1 with d->err set for
 * another version. */
int pgo_decoder_init(pgo_decoder *d, int version, pgo_cache *cache);

/* Decodes one pgoutput message (the data of one XLogData) of len bytes
 * into *m.  The decoder must see every message of the connection, in
 * order: stream blocks change how later messages are laid out.
 *
 * With a cache: a Relation is stored in it (m->rel: the copy), and an
 * Insert, Update or Delete needs its relation there (m->rel) and exactly
 * that relation's number of columns in each tuple.
 *
 * Returns 0, or -1 with a sentence in d->err naming the message type and
 * the offset in buf where decoding stopped: truncated, bytes left over,
 * an unknown type or kind, a count or length beyond the bytes left or the
 * limits, a stream message under protocol 1, a stream block opened twice
 * or closed unopened, a transaction message inside a stream block, an
 * unknown relation, a column count unlike its relation's, a full cache.
 * After -1, *m is undefined and d's state (stream block, cache) is as
 * before the call.  buf may be NULL when len is 0. */
int pgo_decode(pgo_decoder *d, const void *buf, size_t len, pgo_msg *m);

/* ---- the streaming replication CopyData payloads ---------------------- */

typedef enum pgo_frame_type {
    PGO_XLOGDATA = 'w',
    PGO_KEEPALIVE = 'k',
} pgo_frame_type;

/* One CopyData payload from the server. */
typedef struct pgo_frame {
    pgo_frame_type type;
    pgo_lsn wal_start;         /* 'w': where data starts in the WAL */
    pgo_lsn wal_end;           /* current end of WAL on the server */
    int64_t send_time;         /* server clock, PostgreSQL microseconds */
    int reply_requested;       /* 'k': 1 when the server wants a status
                                  update now (else 0) */
    const uint8_t *data;       /* 'w': the pgoutput message (into the
                                  payload; NULL when len is 0) */
    size_t len;
} pgo_frame;

/* Decodes one CopyData payload of len bytes into *f ('w': 25 bytes of
 * header then the message; 'k': exactly 18 bytes).  f->data stays valid
 * as long as buf.  0, or -1 with d->err set (truncated, left over bytes, a
 * reply byte other than 0 or 1, another type).  d's state is unchanged. */
int pgo_frame_decode(pgo_decoder *d, const void *buf, size_t len, pgo_frame *f);

/* Writes a standby status update ('r') into out: the WAL written, flushed
 * and applied (each "the last byte + 1", as PostgreSQL counts; flushed is
 * what lets the server discard WAL), the client's clock (PostgreSQL
 * microseconds) and whether the server should answer at once (reply: 0 or
 * non-zero).  Returns PGO_STATUS_LEN. */
size_t pgo_status_encode(uint8_t out[PGO_STATUS_LEN], pgo_lsn written, pgo_lsn flushed,
                         pgo_lsn applied, int64_t now_pg_us, int reply);

#endif /* ZX_SOURCES_PGOUTPUT_H */
