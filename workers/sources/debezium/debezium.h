/*
 * debezium.h — change events into the rows of a changes frame
 * (proto/frame.h, "Changes frames"): Debezium's events (`format:
 * debezium`) and plain JSON objects kept latest per key (`mode: latest`).
 * Used by the kafka and http sources; pure (no I/O, no librdkafka), unit
 * tested against the captured events of tests/corpus/debezium/ and fuzzed
 * (tests/fuzz/fuzz_debezium.c).
 *
 * Two parsers, one answer: a message given as bytes (Kafka) goes first
 * through the hand-written fast path (debezium_fast.c: no jansson, the
 * schema matched byte for byte against the ones seen before and kept
 * compiled), which answers only when it is sure to answer as the jansson
 * path does and declines everything else (MongoDB, duplicate keys,
 * "\u0000", big numbers, nested values, truncates, most rejects); the
 * jansson path (debezium.c) decides then, and is the reference the fast
 * one is tested and fuzzed against (tests/fuzz/dbz_oracle.h).
 *
 * Debezium events, as Kafka Connect's JsonConverter writes them, with or
 * without the {"schema": ..., "payload": ...} envelope:
 *   op "c" (create) and "r" (snapshot read)   -> insert of `after`
 *   op "u"                                     -> update of `after`; when
 *       `before` carries the key columns with other values, the old key's
 *       values go in "_zx_old:<key>" cells (the writer deletes that row)
 *   op "d"                                     -> delete of the key
 *   op "t"                                     -> truncate
 *   a tombstone (null value), a schema-change event, a heartbeat, a
 *   transaction BEGIN/END record                -> nothing (skipped)
 * MongoDB's `after` (and `before`) are JSON strings of the document: its
 * fields become the columns, `_id` (compact JSON text) the key.
 * The event's key columns: the fields of the message key (Kafka), else the
 * stream's `key_columns`; a change whose key columns are neither is a
 * reject.  Values are decoded by the schema's types and semantic names
 * (debezium_values.c, the table there) and the frame gets each column's
 * declared type ("st", Postgres' words); without a schema the types are
 * inferred as for JSON pushes (json_rows.h) and zx_dbz_add says so
 * (ZX_DBZ_NOTE_NO_SCHEMA).  String values equal to Debezium's
 * placeholder for a value it did not read ("__debezium_unavailable_value",
 * or its base64 form in a bytes column) are left out and named in
 * "_zx_unchanged", so they never overwrite what is stored.
 * Every change carries the source's position: "_zx_lsn" (the source's
 * words: "0/16B6D98", "binlog.000003:1234:0", a SQL Server change LSN, an
 * Oracle SCN), "_zx_commit_time" (source.ts_ms), "_zx_xid" (an integer
 * txId), and "_zx_seq" (frame.h): text that orders the changes of one key
 * by that position, so that the writer skips an event older than the one
 * it applied for the key (a replay).
 *
 * mode: latest: each JSON object is an update (upsert) of its row by
 * `key_columns`; a tombstone whose key is a JSON object holding the key
 * columns deletes the row.  Types are inferred (json_rows.h).
 *
 * The mirror table: the stream's `table`, in which "{source.table}",
 * "{source.schema}", "{source.db}", "{source.collection}" and "{topic}"
 * are replaced by the event's values, each normalised as a column name is
 * (colname.h); the result must make a valid table name.
 *
 * One zx_dbz_frame gathers the changes of one frame: one table, one key.
 * An event for another table or key answers ZX_DBZ_OTHER: publish the
 * frame, reset it, and add the event again.
 *
 * It must never: guess a type from the size of a number when a schema
 * names it, keep a pointer into the message after zx_dbz_add returns, read
 * outside the bytes given, or recurse without a bound (jansson's parser is
 * bounded, the fast path's too; the walk here goes at most two levels into
 * the value).
 */
#ifndef ZX_SOURCES_DEBEZIUM_H
#define ZX_SOURCES_DEBEZIUM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/colname.h"
#include "common/rowset.h"
#include "proto/frame.h"

/* The placeholder Debezium writes for a value it did not read (TOAST). */
#define ZX_DBZ_UNAVAILABLE "__debezium_unavailable_value"

typedef enum { ZX_DBZ_DEBEZIUM = 1, ZX_DBZ_LATEST = 2 } zx_dbz_mode;

/* The tables a `table` template made (max_tables, table_pattern): the
 * names of every table an event was added for, at most max of them; a
 * name beyond them, or not matching the pattern, makes the event a
 * reject.  The source seeds it at start from its committed positions
 * (parts ZX_DBZ_TABLE_PART + name: each frame of a template carries its
 * table so, zx_dbz_table_part) and so a restart counts them again. */
typedef struct zx_dbz_tables {
    char **v;                     /* sorted, malloc'd */
    size_t n, cap;
    size_t max;                   /* 0: no bound */
    const char *pattern;          /* as written (for the reason), or NULL */
    void *re;                     /* its compiled regex_t, or NULL */
} zx_dbz_tables;
#define ZX_DBZ_TABLE_PART "table:"

/* What the stream's configuration says (valid while zx_dbz_add runs). */
typedef struct zx_dbz_conf {
    zx_dbz_mode mode;
    const char *table;            /* the table or its template */
    const char *const *key_columns; /* the stream's `key_columns` (may be 0) */
    size_t nkey_columns;
    size_t table_max;             /* longest table name (54 with history:
                                     its __changes must fit); 0 = 63 */
    const struct zx_conf *others; /* a name made from an event must not be a
                                     table of another pipeline of this
                                     configuration (its table, mirrors and
                                     their __changes); NULL: not checked */
    const char *self;             /* this pipeline's name (skipped there) */
    uint32_t max_columns;         /* data columns one frame may bring; 0 =
                                     ZX_DBZ_MAX_COLUMNS */
    zx_dbz_tables *made;          /* a template's tables (zx_dbz_add adds to
                                     it); NULL: a fixed table, no bound */
} zx_dbz_conf;

#define ZX_DBZ_MAX_COLUMNS 500u
/* the reserved columns a frame may add beside the data (_zx_op, _zx_lsn,
 * _zx_seq, _zx_commit_time, _zx_xid, _zx_unchanged, _zx_old:<key>...) */
#define ZX_DBZ_EXTRA_COLUMNS (8u + ZX_FRAME_MAX_KEY_COLUMNS)

/* One input message.  value NULL = a tombstone.  value_json, when set, is
 * the value already parsed (an element of a pushed array, an Avro datum
 * turned into JSON: common/avro_connect.h); it is only read. */
typedef struct zx_dbz_msg {
    const char *topic;            /* NULL: none (HTTP) */
    const void *key;              /* NULL: no key */
    size_t key_len;
    const void *value;
    size_t len;
    const json_t *value_json;
    const json_t *key_json;       /* the key already parsed (Avro), or NULL */
    const char *position;         /* the message's place ("topic:3:42"), the
                                     _zx_lsn of an event without a source
                                     position; NULL: none */
} zx_dbz_msg;

/* The schemas of the envelopes seen last (debezium_envelope.c). */
#define ZX_DBZ_CACHE 8
typedef struct zx_dbz_cached {
    char *text;                   /* the schema's JSON text as sent */
    size_t len;
    json_t *schema;               /* parsed */
    struct zx_dbz_fast_schema *fast;  /* its compiled form (debezium_fast.c),
                                         or NULL */
} zx_dbz_cached;
typedef struct zx_dbz_cache {
    zx_dbz_cached v[ZX_DBZ_CACHE];
    int next;
} zx_dbz_cache;

/* The changes of one frame.  Strings live in rs's arena; types is
 * malloc'd (freed by zx_dbz_frame_free). */
typedef struct zx_dbz_frame {
    zx_rowset *rs;                /* the caller's; rows are appended */
    char table[ZX_COLNAME_MAX + 1];   /* "" while empty */
    const char *keys[ZX_FRAME_MAX_KEY_COLUMNS];
    size_t nkeys;
    const char **decls;           /* per column of rs: its declared type
                                     (arena or static), NULL: none */
    size_t decls_cap;
    zx_frame_coltype *types;      /* built by zx_dbz_frame_types */
    size_t ntypes, types_cap;
    uint64_t changes;             /* rows added */
    zx_dbz_cache cache;           /* kept across resets */
    struct zx_dbz_fast *fast;     /* the fast parser's scratch, or NULL */
} zx_dbz_frame;

enum {
    ZX_DBZ_ADDED = 0,     /* one change row appended */
    ZX_DBZ_SKIPPED = 1,   /* nothing to apply (tombstone, heartbeat, DDL) */
    ZX_DBZ_REJECT = 2,    /* bad event: why says what (nothing appended) */
    ZX_DBZ_OTHER = 3,     /* another table or key than the frame's: publish
                             the frame, reset it, add the event again */
    ZX_DBZ_NOMEM = -1,
};

/* zx_dbz_add's notes (bits of *notes, or'ed in). */
#define ZX_DBZ_NOTE_NO_SCHEMA 0x1u   /* a Debezium event without a schema:
                                        its types were inferred */

struct zx_conf_pipeline;
struct zx_conf;
/* The zx_dbz_conf of a stream pipeline p of configuration conf (format:
 * debezium or mode: latest) into *c (pointing into them: valid as long as
 * they are), and into
 * rej_table the table of the rejects of frames without a change: p's
 * table, or its name with '-' as '_' when the table is a template. */
void zx_dbz_init_conf(const struct zx_conf *conf, const struct zx_conf_pipeline *p,
                      zx_dbz_conf *c, char rej_table[ZX_COLNAME_MAX + 1]);

/* With a template in p's table: c->made = t, bounded by p's max_tables and
 * table_pattern (compiled here; the configuration checked it compiles).
 * 0; -1 out of memory (or a pattern that does not compile: err says).
 * zx_dbz_tables_free frees what t holds (t itself is the caller's). */
int zx_dbz_tables_init(zx_dbz_tables *t, const struct zx_conf_pipeline *p, zx_dbz_conf *c,
                       char *err, size_t errlen);
void zx_dbz_tables_free(zx_dbz_tables *t);
/* Count name as made (seeding from the positions).  0; -1 out of memory. */
int zx_dbz_tables_add(zx_dbz_tables *t, const char *name);
/* The position part a frame of table `table` carries when c has a template
 * (ZX_DBZ_TABLE_PART + table) into buf; 0, or -1 when c has none. */
int zx_dbz_table_part(const zx_dbz_conf *c, const char *table, char *buf, size_t len);

/* An empty frame appending to rs. */
void zx_dbz_frame_init(zx_dbz_frame *f, zx_rowset *rs);
/* Forget the table, key and types (call with zx_rowset_reset of rs). */
void zx_dbz_frame_reset(zx_dbz_frame *f);
void zx_dbz_frame_free(zx_dbz_frame *f);

/* The declared types of f's columns, for the frame's meta (col_types,
 * ncol_types): valid until the next call or zx_dbz_frame_free.  0, or -1
 * (ENOMEM). */
int zx_dbz_frame_types(zx_dbz_frame *f, const zx_frame_coltype **types, size_t *n);

/* Upper bound of the bytes f's table, keys and declared types take in the
 * frame's meta (zx_frame_estimate counts the rows, not these; each column's
 * name is written again beside its type).  O(keys).  Never fails. */
size_t zx_dbz_frame_meta_bound(const zx_dbz_frame *f);

/* Decode message m and append its change to f (see the top of this file).
 * Returns ZX_DBZ_ADDED, _SKIPPED, _REJECT (why: one sentence, for
 * __rejects; f and rs unchanged), _OTHER (f unchanged; never when f is
 * empty) or _NOMEM (unchanged). */
int zx_dbz_add(const zx_dbz_conf *c, zx_dbz_frame *f, const zx_dbz_msg *m, char *why,
               size_t whylen, unsigned *notes);

/* ---- debezium_envelope.c -------------------------------------------------- */

/* Split the n bytes at v, when they are exactly {"schema": S, "payload": P}
 * (either order) with S an object: *payload = P parsed (a new reference),
 * *schema = S parsed, from c when the same text was seen (owned by c:
 * valid until ZX_DBZ_CACHE other schemas came, or zx_dbz_cache_free).
 * Returns 1; 0 when v is not such an envelope (or S is null): parse it
 * whole; -1 when P or S is not JSON (why says where). */
int zx_dbz_split(zx_dbz_cache *c, const char *v, size_t n, const json_t **schema,
                 json_t **payload, char *why, size_t whylen);
void zx_dbz_cache_free(zx_dbz_cache *c);

/* ---- debezium_body.c: an HTTP push body ---------------------------------- */

/* What zx_dbz_add_body found besides the changes: events it refused.
 * reasons and raw texts live in f->rs's arena; the array is malloc'd
 * (grown here, freed by the caller). */
typedef struct zx_dbz_rejects {
    zx_frame_reject *v;
    size_t n, cap;
} zx_dbz_rejects;

/* Append the events of a push body (JSON: one event, or an array of
 * them; ndjson: one per line; empty, whitespace or `null`: a tombstone,
 * nothing) to f, each through zx_dbz_add with no key and position
 * "<rid>#<index>".  A refused event becomes a reject (its JSON text cut at
 * 64 KiB, position {"request_id":..,"index":..}) and the others go on.
 * Returns the changes added (>= 0); -1 with msg (the push's 400 answer:
 * not JSON, or events of two tables or keys in one body) and f, rs and
 * rej as they were; -2 out of memory (same). */
long zx_dbz_add_body(const zx_dbz_conf *c, zx_dbz_frame *f, const char *body, size_t len,
                     int ndjson, const char *rid, zx_dbz_rejects *rej, unsigned *notes,
                     char *msg, size_t msglen);

/* ---- debezium_values.c: one value by its Connect schema ----------------- */

/* The zx value of payload value v of a field whose Connect schema is fs
 * (NULL: no schema, inferred as json_rows.h does).  Strings go to rs's
 * arena.  *decl: the Postgres type the column gets (static string), or
 * NULL when fs says nothing.  Returns 0; 1 when v is JSON null (*out is
 * a NULL cell); -1 out of memory.  A value that does not match its schema
 * is kept as text (the writer's fitting decides). */
int zx_dbz_value(const json_t *fs, const json_t *v, zx_rowset *rs, zx_value *out,
                 const char **decl, unsigned flags);
#define ZX_DBZ_MYSQL 0x1u   /* flags: the event comes from MySQL or MariaDB */

/* The decimal text of the big-endian two's-complement integer at b (n
 * bytes, n <= 64) scaled by 10^-scale (0 <= scale <= 1000) into out (cap
 * bytes; 1 + 155 + 1 + scale + 2 are always enough).  Returns the length,
 * or -1 when it does not fit or the arguments are out of range. */
int zx_dbz_decimal_text(const unsigned char *b, size_t n, int scale, char *out, size_t cap);

#endif
