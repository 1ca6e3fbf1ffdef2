/*
 * kafka_int.h — what the files of the `kafka` source share.  Not a
 * contract outside workers/sources/kafka*.c and their unit tests
 * (tests/unit/test_kafka_*.c).
 *
 *   kafka.c        the zx_source: the consumer, batching into frames,
 *                  back-pressure, commits after the writer's ack, status
 *   kafka_group.c  with a consumer group: rebalances (assign, revoke)
 *   kafka_solo.c   without a group: the metadata thread, partition starts
 *   kafka_fence.c  a shared workspace: frames of one partition that carry
 *                  where they start, and reading on from the workspace's
 *                  position after the writer fenced a frame
 *   kafka_batch.c  messages -> one frame's rows, rejects and positions
 *                  (pure: no librdkafka handle, unit-tested)
 *   kafka_parts.c  the partitions read and the frames in flight for each
 *                  (pure, unit-tested)
 *   kafka_conf.c   a connection -> the shared client (common/kafka_client.h)
 *   kafka_errors.c librdkafka's errors -> one precise sentence (pure)
 *   kafka_test.c   `zxctl test`: connect, authenticate, list partitions
 *   kafka_check.c  the plug-in's check of a pipeline's own options
 *
 * None of them may print a secret (a SASL password, a key password, a
 * property whose key names a password or secret): librdkafka's own error
 * strings do not contain them, and its configuration is never dumped.
 */
#ifndef ZX_SOURCES_KAFKA_INT_H
#define ZX_SOURCES_KAFKA_INT_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/kafka_client.h"
#include "common/json_rows.h"
#include "common/rowset.h"
#include "conf/check.h"
#include "conf/config.h"
#include "proto/frame.h"
#include "workers/sources/catchup.h"
#include "workers/sources/debezium/debezium.h"
#include "workers/sources/kafka/kafka_opts.h"
#include "workers/sources/source.h"

/* ---- kafka_batch.c ------------------------------------------------- */

/* Bytes of a rejected message (and of its key) kept in __rejects. */
#define KB_RAW_MAX (64u * 1024u)

/* One message as the batch sees it (what kafka.c reads out of an
 * rd_kafka_message_t).  Pointers are only read during kb_add. */
typedef struct kb_msg {
    const char *topic;
    int32_t partition;
    int64_t offset;
    const void *key;           /* NULL: no key */
    size_t key_len;
    const void *payload;       /* NULL: a tombstone (no rows, no reject) */
    size_t len;
    int64_t ts_ms;             /* message timestamp (ms since the epoch);
                                  < 0 when the message has none */
    /* changes batches (kb_set_changes): the value and key already decoded
     * (Avro, common/avro_connect.h), or NULL; reject: the reason the
     * message cannot be read (it becomes a reject), or NULL */
    const json_t *value_json, *key_json;
    const char *reject;
} kb_msg;

/* The position a frame reaches in one partition. */
/* What a message's fingerprint is made of: its timestamp, and the
 * lengths and edges (first and last 8 bytes of the key, 32 of the
 * payload) of key and payload (kb_fingerprint). */
typedef struct kb_fpsrc {
    int64_t ts;
    uint64_t key_len, len;
    unsigned char key[16], payload[64];
    unsigned char key_null, payload_null;
} kb_fpsrc;

typedef struct kb_pos {
    uint32_t part;             /* the caller's index of the partition */
    const char *topic;         /* owned by the caller, valid while the
                                  batch holds it */
    int32_t partition;
    int64_t next;              /* next offset to read: last offset + 1 */
    uint64_t fp;               /* kb_fingerprint of the message at next - 1
                                  (0: none, a `start: new` position);
                                  made by kb_meta from src */
    kb_fpsrc src;              /* what fp is made of (kb_add copies it:
                                  cheaper than hashing every message) */
    int has_src;               /* src is the message at next - 1 */
    /* fencing (kbatch.fence): the position the worker believed stored
     * when it built the frame (kb_set_from; -1 none known) and the offset
     * of the frame's first message of the partition (-1: none) */
    int64_t from, first;
} kb_pos;

/* One frame being gathered.  Everything it points to lives in rs's arena
 * or its own arrays, so the messages may be freed as soon as kb_add
 * returns. */
typedef struct kbatch {
    zx_rowset rs;
    uint32_t metadata;         /* ZX_META_KEY / _PARTITION / _OFFSET /
                                  _TIMESTAMP: columns added to each row */
    zx_frame_reject *rej;
    size_t nrej, rej_cap;
    size_t rej_bytes;          /* their strings' bytes, for the estimate */
    kb_pos *pos;
    size_t npos, pos_cap, last_pos;
    zx_frame_pos *fpos;        /* built by kb_meta */
    size_t fpos_cap;
    uint64_t nmsgs;            /* messages in it, tombstones included */
    int64_t first_us;          /* zx_mono_us() when it stopped being empty
                                  (0: empty) */
    int64_t ts_ms;             /* the last _timestamp formatted, and its */
    const char *ts_text;       /* text in the arena (NULL: none yet) */
    /* format: debezium or mode: latest (kb_set_changes): the messages are
     * changes of one mirror table (debezium.h); NULL dbz: rows */
    const zx_dbz_conf *dbz;
    zx_dbz_frame df;
    int history;
    unsigned notes;            /* ZX_DBZ_NOTE_* of the frame's changes */
    const char *rej_table;     /* the table of a frame with no change (its
                                  rejects go to <rej_table>__rejects) */
    int fence;                 /* positions are written fenced (a shared
                                  workspace: proto/frame.h "po") */
} kbatch;

enum { KB_ADDED = 0, KB_FULL = 1, KB_NOMEM = -1,
       KB_WAIT = 2 /* kafka.c: the schema registry cannot be reached: keep
                      the message, try it again later */ };

void kb_init(kbatch *b, uint32_t metadata);
/* Make the batch gather changes (debezium.h) for the conf c (valid as long
 * as the batch): a frame of changes holds one table and key; a message of
 * another starts the next frame (kb_add answers KB_FULL).  history: the
 * frames' "hi"; rej_table: see kbatch. */
void kb_set_changes(kbatch *b, const zx_dbz_conf *c, int history, const char *rej_table);
/* Empty the batch (keeps allocations). */
void kb_reset(kbatch *b);
/* Free everything; NULL ok. */
void kb_free(kbatch *b);
/* 1 when the batch holds nothing to publish (no message, no position). */
int kb_empty(const kbatch *b);

/* Add message m of the caller's partition `part`: its rows (a JSON object
 * or an array of objects, plus the metadata columns, which overwrite JSON
 * fields of the same name), or a reject (not JSON, not an object, empty;
 * raw bytes and key cut at KB_RAW_MAX), or nothing (a tombstone); in every
 * case the partition's position becomes m->offset + 1, with m's
 * kb_fingerprint.
 * limit: the most bytes the frame may take (zx_src_max_frame and a
 * margin).  Returns KB_ADDED; KB_FULL when the message does not fit beside
 * what the batch holds (the batch is unchanged: publish it, then add the
 * message again to the empty batch; an empty batch never answers KB_FULL:
 * a message too large alone becomes a reject); KB_NOMEM (the batch is
 * unchanged). */
int kb_add(kbatch *b, const kb_msg *m, uint32_t part, size_t limit);

/* The batch holds a message or a position of a partition other than
 * `part` (a fencing source puts one partition in a frame). */
int kb_other_part(const kbatch *b, uint32_t part);
/* Partition part's `from` (kb_pos) in the batch; no-op when the batch has
 * no entry for it. */
void kb_set_from(kbatch *b, uint32_t part, int64_t from);

/* Set the position of partition `part` without a message (a `start: new`
 * partition's end offset, committed with the next frame).  0 or -1
 * (ENOMEM). */
int kb_note_position(kbatch *b, uint32_t part, const char *topic, int32_t partition,
                     int64_t next);

/* Upper bound of the frame's bytes (zx_frame_estimate + rejects and
 * positions).  O(1) plus O(positions). */
size_t kb_estimate(const kbatch *b);

/* Fill m's positions, rejects, accepted and metadata for zx_src_publish
 * (other fields zeroed; the caller sets ingested_at_us).  The arrays stay
 * valid until kb_reset.  0 or -1 (ENOMEM). */
int kb_meta(kbatch *b, zx_frame_meta *m);

/* A partition's part name "topic:partition" into out (n bytes).  Returns
 * the length, or -1 when it does not fit. */
int kb_part_name(char *out, size_t n, const char *topic, int32_t partition);

/* Position value: the next offset as 8 bytes, little-endian int64, then
 * (16-byte values) the kb_fingerprint of the message at next - 1, with
 * which a later start checks that the topic is still the one read
 * (kafka.c, ks_witness). */
void kb_pos_encode(int64_t next, unsigned char out[8]);
/* 0 and *next, or -1 when v is not such a value (length neither 8 nor 16,
 * negative). */
int kb_pos_decode(const void *v, size_t len, int64_t *next);
/* The fingerprint of a 16-byte value, 0 for any other (none). */
uint64_t kb_pos_fp(const void *v, size_t len);
/* A message's fingerprint: a hash of its timestamp, lengths and the first
 * and last bytes of its key and payload (O(1): at most 96 bytes read).
 * Never 0. */
uint64_t kb_fingerprint(const kb_msg *m);

/* ---- kafka_parts.c ------------------------------------------------- */

/* A frame in flight that carried a partition's position. */
typedef struct kp_flight {
    uint64_t seq;
    int64_t next;
} kp_flight;

typedef struct kpart {
    char *topic;               /* owned */
    int32_t partition;
    char *name;                /* "topic:partition", owned */
    int assigned;              /* ours now (group: assigned; no group:
                                  started) */
    int64_t next;              /* next offset to read (-1 unknown) */
    int64_t acked;             /* next offset of the last frame the
                                  writer committed (-1 none this run) */
    int64_t committed;         /* last offset committed to the group
                                  (-1 none this run) */
    int64_t high;              /* high watermark (-1 unknown) */
    int64_t last_ms;           /* s->now_ms when a message of it was last
                                  taken, assigned or seeked (0 never) */
    int64_t idle_at;           /* next when its idleness was last logged */
    int64_t handed;            /* next offset after the last message this
                                  process put into a frame (-1 none): the
                                  writer commits those frames whatever
                                  happens to the assignment, so a
                                  partition coming back never starts below
                                  it (no row twice in the workspace) */
    int64_t witness;           /* the offset whose message must come first
                                  and match witness_fp (the stored
                                  position - 1), -1 none (ks_witness) */
    uint64_t witness_fp;
    int paused;                /* paused by ks_pause_all (resumed only then:
                                  resuming a partition that is not paused
                                  makes librdkafka 2.0 restart its fetcher
                                  at a stale position) */
    int64_t from;              /* fencing (kafka_fence.c): the position
                                  this worker believes the workspace holds
                                  for it before its next frame (the start
                                  it was assigned or seeked at, then each
                                  published frame's next); -1 unknown */
    int fence_watch;           /* a frame carried it since the last
                                  fence check (kf_poll) */
    int64_t fence_seek;        /* read again from here once the
                                  partitions are resumed (-1 none): a seek
                                  while paused is lost to librdkafka 2.0's
                                  resume (kf_resumed) */
    uint64_t check_epoch;      /* != 0: the first message librdkafka gives
                                  after that event (a rebalance, a resume)
                                  is checked against next (ks_check_gap) */
    int64_t seek_at;           /* the offset of its last seek (-1 none) */
    uint64_t seek_ep;          /* s->epoch that seek made: a gap at seek_at
                                  in the first message after it, with no
                                  rebalance or resume since, is the topic's
                                  own (compaction, transaction markers) */
    kp_flight *q;              /* circular, oldest first */
    size_t qhead, qlen, qcap;
    void *rkt;                 /* no group: its rd_kafka_topic_t */
} kpart;

typedef struct kparts {
    kpart *v;
    size_t n, cap;
} kparts;

/* Index of (topic, partition), or -1. */
int64_t kparts_find(const kparts *t, const char *topic, int32_t partition);
/* Index of (topic, partition), added (unassigned, offsets unknown) when
 * missing; -1 when out of memory.  Indices stay valid; kpart pointers do
 * not (the array grows). */
int64_t kparts_add(kparts *t, const char *topic, int32_t partition);
void kparts_free(kparts *t);

/* What the message at `offset` means for p, the first message of p that
 * came after the event that set p->check_epoch (a rebalance, a resume or
 * a seek), the last rebalance or resume having made boundary_ep:
 * KP_GAP_NONE (not past p->next, or nothing expected), KP_GAP_CONFIRMED
 * (past it, but the first answer to a seek to exactly p->next with no
 * rebalance or resume since: the topic has nothing there), KP_GAP_SEEK
 * (past it otherwise: read again from p->next).  Pure: kafka_witness.c
 * acts on it. */
enum { KP_GAP_NONE, KP_GAP_CONFIRMED, KP_GAP_SEEK };
int kpart_gap_verdict(const kpart *p, uint64_t boundary_ep, int64_t offset);

/* Remember that frame seq carries p's position next (seqs increase). 0 or
 * -1 (ENOMEM). */
int kpart_push(kpart *p, uint64_t seq, int64_t next);
/* Forget p's frames up to seq (the writer committed them); 1 with *next
 * = the position the newest of them carried, 0 when none. */
int kpart_ack(kpart *p, uint64_t seq, int64_t *next);
/* Highest seq in flight for p, 0 when none. */
uint64_t kpart_last_seq(const kpart *p);
/* Forget every frame in flight for p. */
void kpart_forget(kpart *p);

/* ---- kafka_errors.c ------------------------------------------------ */

/* What a librdkafka error means for the user. */
typedef enum ke_kind {
    KE_TRANSIENT = 0,   /* librdkafka recovers by itself: log it only */
    KE_UNREACHABLE,     /* cannot connect / resolve / all brokers down */
    KE_PROTOCOL,        /* a security protocol mismatch with the listener */
    KE_TLS,
    KE_AUTH,
    KE_UNKNOWN_TOPIC,
    KE_TOPIC_DENIED,
    KE_GROUP_DENIED,
    KE_OTHER,           /* anything else worth showing */
    KE_REGISTRY,        /* not librdkafka's: the schema registry is not
                           answering (the source waits; cleared by the next
                           message it decodes) */
} ke_kind;

/* Context the sentences need (none of it secret). */
typedef struct ke_ctx {
    const char *security;      /* "sasl_ssl"... (NULL: plaintext) */
    const char *mechanism;     /* NULL when no SASL */
    const char *username;      /* NULL when no SASL */
    const char *group;         /* NULL when none */
    int rdkafka_version;       /* rd_kafka_version() */
    int x509_error;            /* the last certificate check that failed
                                  (an OpenSSL X509_V_ERR_* code), 0 none */
} ke_ctx;

/* Classify error err with librdkafka's reason text (may be NULL) and
 * write one sentence for zxctl status / zxctl test into out (n bytes),
 * without librdkafka's "(after Nms in state X)" tail, so that a repeated
 * error gives the same sentence.  topic: the topic concerned when known
 * (else NULL).  Returns the kind. */
ke_kind ke_describe(const ke_ctx *c, rd_kafka_resp_err_t err, const char *reason,
                    const char *topic, char *out, size_t n);

/* The broker "host:port" named at the start of a librdkafka reason
 * ("sasl_ssl://127.0.0.1:9094/bootstrap: ..."), into out; "" when none. */
void ke_broker(const char *reason, char *out, size_t n);

/* 1 when error err (reason as for ke_describe) is the brokers' answer to
 * settings that cannot work until someone changes them (zx's settings, the
 * broker's credentials, ACLs or certificates): a SASL authentication
 * refused, a certificate check failed (or the broker refused the client's),
 * a listener that does not offer the SASL mechanism or does not speak TLS,
 * an ACL missing for a topic or the group.  0 for what may pass by itself
 * (a broker unreachable, restarting, closing a connection mid-way; an
 * unknown topic, which may be created).  Pure. */
int ke_permanent(const ke_ctx *c, rd_kafka_resp_err_t err, const char *reason);

/* 1 when rd_kafka_version() v predates the SCRAM fix (2.6.1). */
int ke_scram_broken(int v);

/* 1 when a commit refused with err means this member's generation is
 * stale: the group is rebalancing or has moved on without it (illegal
 * generation, rebalance in progress, unknown member, fenced instance), so
 * the partitions it reads may be another member's already; else 0. */
int ke_stale_generation(rd_kafka_resp_err_t err);

/* ---- kafka_conf.c -------------------------------------------------- */
/* The connection c given to the shared Kafka client (common/
 * kafka_client.h), which has the contracts: */

/* What the client's callbacks pass on (zx_kafka_seen). */
typedef zx_kafka_seen kc_seen;
/* zx_kafka_conf_new for connection c. */
rd_kafka_conf_t *kc_build(const zx_conf_connection *c, kc_seen *seen, char *err,
                          size_t errlen);
/* zx_kafka_conf_set for connection c. */
int kc_set(rd_kafka_conf_t *conf, const zx_conf_connection *c, int user_wins,
           const char *key, const char *val, char *err, size_t errlen);
/* zx_kafka_bound_prefetch for connection c. */
int kc_bound_prefetch(rd_kafka_conf_t *conf, const zx_conf_connection *c, uint64_t budget,
                      zx_kafka_prefetch *out, char *err, size_t errlen);
/* The error context of connection c (group may be NULL). */
void kc_err_ctx(const zx_conf_connection *c, const char *group, const kc_seen *seen,
                ke_ctx *out);
/* zx_kafka_describe for connection c: "SASL_SSL, SCRAM-SHA-512 as zx". */
void kc_describe(const zx_conf_connection *c, char *out, size_t n);

/* ---- kafka.c, kafka_witness.c, kafka_group.c, kafka_solo.c: the running source */

#define KS_OFFSETS_TIMEOUT_MS 10000  /* committed offsets, end offsets */
#define KS_BEGIN_RETRY_MS 5000       /* first offsets asked again while unknown */

/* The result of one metadata refresh (no group): a topic and its
 * partition count, or its error. */
typedef struct kmeta_topic {
    char *topic;
    int npart;
    rd_kafka_resp_err_t err;
} kmeta_topic;

/* A topic read without a group, and librdkafka's handle for it. */
typedef struct ktopic {
    char *name;
    rd_kafka_topic_t *rkt;
} ktopic;

typedef struct kstate {
    kc_seen tls;                /* first: the client's opaque starts with it
                                   (kafka_conf.c's certificate callback) */
    zx_src *rt;
    const zx_conf_pipeline *p;
    const zx_kafka_opts *o;     /* p's own options (p->own) */
    const zx_conf_connection *c;
    const char *name;
    rd_kafka_t *rk;
    rd_kafka_queue_t *q;        /* messages and callbacks, one queue */
    int efd;                    /* readable when q has something */
    int group;
    int first_start;            /* start: new, and no position stored yet */
    regex_t re;
    int have_re;

    kparts parts;
    kbatch b;
    zx_dbz_conf dbz;            /* format: debezium / mode: latest */
    zx_dbz_tables tables;       /* a template's tables (max_tables) */
    struct zx_registry *reg;    /* encoding: avro: the schema registry */
    int64_t reg_retry_ms;       /* zx_mono_ms() before which a message
                                   waiting for the registry is not tried */
    char rej_table[ZX_COLNAME_MAX + 1];
    int64_t batch_ingested_us;  /* when its first message was polled */
    kb_pos *notes;              /* positions for the frame after the kept
                                   one (ks_note_position) */
    size_t nnotes, notes_cap;
    size_t limit, target;       /* frame bytes: never more / enough */
    int kept;                   /* the runtime keeps our frame (no room) */
    int64_t blocked_since_ms;
    int paused;
    uint64_t epoch;             /* rebalances, resumes and seeks so far */
    int64_t now_ms;             /* zx_mono_ms() at the start of this poll */
    int64_t status_ms;          /* now_ms of the last status update */
    uint64_t boundary_ep;       /* the epoch of the last rebalance or
                                   resume (ks_watch_gaps) */

    rd_kafka_message_t **held;  /* taken from librdkafka, not yet batched;
                                 * NULL: dropped (ks_drop_held).  Never
                                 * compacted: a rebalance callback drops
                                 * while rd_kafka_consume_batch_queue
                                 * fills held[nheld..] */
    size_t nheld, held_off;
    size_t held_bytes;          /* bound of their bytes (ks_held_room) */
    size_t held_avg;            /* running mean of a message's bytes */
    zx_kafka_prefetch prefetch; /* librdkafka's prefetch bounds, applied */
    int64_t held_us;            /* when they were polled */
    uint64_t *held_ep;          /* per held message: the epoch when it
                                   was polled (ks_check_gap) */
    int64_t doubt_ms;           /* != 0: zx_mono_ms() when a commit was
                                   refused for a stale generation (ownership
                                   in doubt, kg_doubt); 0: none */
    int coop_revoked;           /* a cooperative revoke put it in doubt:
                                   the empty assignment that comes with it
                                   does not settle it */

    const rd_kafka_topic_t *c_rkt;  /* last partition looked up */
    int32_t c_part;
    int64_t c_idx;

    /* without a group */
    ktopic *topics;
    size_t ntopics, topics_cap;
    pthread_t meta_th;
    int meta_running;
    pthread_mutex_t meta_mu;
    pthread_cond_t meta_cv;
    int meta_stop;              /* under meta_mu */
    uint64_t meta_gen;          /* under meta_mu: results made */
    uint64_t meta_seen;         /* main thread: results applied */
    kmeta_topic *meta;          /* under meta_mu: the newest result */
    size_t nmeta;
    int meta_ok;                /* under meta_mu: it worked */

    /* the fetcher's wake-up (kafka_nudge.c) */
    pthread_t nudge_th;
    int nudge_running;
    pthread_mutex_t nudge_mu;
    pthread_cond_t nudge_cv;
    int nudge_stop, nudge_pending;  /* under nudge_mu */
    char nudge_topic[256];          /* under nudge_mu: the partition to */
    int32_t nudge_part;             /* ask about */
    int64_t nudge_last_ms;          /* main thread */
    size_t nudge_rr;                /* main thread: next partition */
    uint64_t nudges;                /* main thread: asked so far */

    char error[ZX_SEG_SOURCE_ERROR_MAX];
    ke_kind error_kind;
    char error_topic[256];
    int fatal;                  /* 1: the worker exits and is restarted;
                                   KS_FAILED: the pipeline fails (not
                                   restarted) */
    int closing;
    char reset_note[400];       /* the last topic reset seen (status) */
    uint64_t resets;
    int64_t next_status_ms;
    uint64_t msgs, rows, rejects, frames;
    /* fencing (kafka_fence.c; workspace.postgres.shared) */
    int shared;                 /* the workspace is shared: fence frames */
    uint64_t fence_seen;        /* the segment's frames_fenced last seen */
    int fence_pending;          /* a frame was fenced: publish, wait for
                                   every frame in flight, then look */
    uint64_t fences, fence_seeks, fence_stale;  /* counted for the log */
    zx_catchup catchup;         /* a backlog being caught up (kafka.c) */
    int catchup_shown;          /* its progress is in the slot */
    uint64_t catchup_epoch;     /* s->epoch its positions were summed at */
} kstate;

/* What eventfd-style wake-ups write (8 bytes). */
extern const uint64_t ks_efd_one;

/* kafka.c: errors and status.  An error is one sentence (kafka_errors.c)
 * shown by zxctl status; topic-level ones (unknown topic, no topic ACL)
 * are cleared only by that topic's messages. */
int ks_topic_level(ke_kind k);
void ks_set_error(kstate *s, ke_kind k, const char *msg, const char *topic);
/* Clear the error when `topic`'s messages (NULL: any proof the cluster
 * answers) show it is gone. */
void ks_clear_error(kstate *s, const char *topic);
void ks_describe(kstate *s, rd_kafka_resp_err_t err, const char *reason, const char *topic,
                 char *out, size_t n, ke_kind *kind);
/* An error of librdkafka (callback, message, metadata): logged when
 * transient, else the source's error; one ke_permanent says is permanent
 * also sets s->fatal = KS_FAILED (the worker exits, the pipeline fails at
 * once with that error). */
void ks_on_error(kstate *s, rd_kafka_resp_err_t err, const char *reason, const char *topic);

#define KS_FAILED 2

/* kafka.c: partitions and frames. */
/* Index of a message's partition in s->parts (cached), or -1. */
int64_t ks_part_of(kstate *s, const rd_kafka_topic_t *rkt, int32_t partition);
/* Destroy the held messages of partition idx (idx < 0: of every
 * partition not assigned) from held[from] on (a seek: they were fetched
 * before it; a revoke), leaving NULL in their places: safe inside a
 * librdkafka callback that runs while a consume fills held[nheld..]. */
void ks_drop_held(kstate *s, int64_t idx, size_t from);
/* The position of part the writer committed in LMDB, or -1. */
int64_t ks_stored_position(kstate *s, const char *part);
/* Where partition p starts when `start` was chosen for it: when start is
 * the position stored in LMDB and that carries the fingerprint of the
 * message before it, one earlier, and p's witness is set (the first
 * message must be that one, same fingerprint: it is then dropped; another
 * means the topic was re-created or truncated, see on_topic_reset).
 * Else start. */
int64_t ks_witness(kstate *s, kpart *p, int64_t start);
/* The end offset of each partition of l into its offset field, blocking up
 * to KS_OFFSETS_TIMEOUT_MS.  0, or -1 with the source's error set. */
int ks_end_offsets(kstate *s, rd_kafka_topic_partition_list_t *l);
/* Replace each RD_KAFKA_OFFSET_BEGINNING in l by the partition's first
 * offset (one request for those still unknown, asked again for up to
 * KS_BEGIN_RETRY_MS while the cluster cannot answer: "not leader" on a
 * new topic), so that the first message read is checked against it
 * (ks_check_gap); a partition whose first offset cannot be had keeps
 * BEGINNING (logged). */
void ks_begin_offsets(kstate *s, rd_kafka_topic_partition_list_t *l);
enum { KS_PUB_DONE = 0, KS_PUB_BLOCKED = 1, KS_PUB_FATAL = -1 };
/* Publish the batch (or retry the frame the runtime keeps): KS_PUB_DONE
 * (published, or nothing to publish), KS_PUB_BLOCKED (kept: no room),
 * KS_PUB_FATAL. */
int ks_publish(kstate *s);
/* Publish, with the next frame, partition part's position next (a
 * `start: new` end offset).  Held back while the runtime keeps a frame:
 * that frame is encoded already, and what it carries is what its ack
 * commits.  0 or -1 (ENOMEM). */
int ks_note_position(kstate *s, uint32_t part, int64_t next);
/* Pause (1) every partition read, or resume (0) those it paused; a
 * resume is an event after which each partition's next message is
 * checked for a gap (ks_watch_gaps). */
void ks_pause_all(kstate *s, int pause);
/* A rebalance or a resume happened: the first message librdkafka gives
 * afterwards for each assigned partition is checked against the offset
 * expected (librdkafka 2.0 may restart a fetcher past messages it had
 * fetched and then dropped: seen as ids lost after a cooperative
 * rebalance under back-pressure). */
void ks_watch_gaps(kstate *s);
/* The writer committed the frames up to seq: commit the positions they
 * carried to the group (async; sync while a revoke or close waits). */
void ks_commit_acked(kstate *s, uint64_t seq, int sync);
/* Commit to the group every assigned partition whose acknowledged
 * position (kpart.acked) is ahead of its committed one (async, or sync). */
void ks_commit_pending(kstate *s, int sync);

/* kafka_witness.c: the first message of a partition. */
/* Partition idx's first message after a start from a stored position
 * with a witness (ks_witness): 1 when m must be dropped (it is the
 * witness, or the topic was reset and a seek was made), else 0 (the
 * witness is gone, compacted or past the retention: m comes next). */
int ks_check_witness(kstate *s, int64_t idx, const rd_kafka_message_t *m);
/* The first message of partition idx after a rebalance, a resume
 * (ks_watch_gaps) or a seek: when its offset is past the one expected,
 * read again from the expected one, unless m is the first answer to a
 * seek to exactly that offset with no rebalance or resume since (the
 * gap is then the topic's own: compaction, transaction markers).  A
 * second gap after a boundary at a position already read again is not
 * taken as real: librdkafka 2.0 may skip again after the next pause.
 * 1 when m must be dropped (a seek was made), else 0. */
int ks_check_gap(kstate *s, int64_t idx, const rd_kafka_message_t *m);

/* Read partition idx again from offset `at` (or a logical offset),
 * dropping its messages held after the current one (kafka_witness.c);
 * the first message after it is checked for a gap (ks_check_gap).
 * On failure the worker gives up (s->fatal). */
void ks_seek_part(kstate *s, int64_t idx, int64_t at);

/* kafka_fence.c: frames in a shared workspace (several zxd, one group). */
/* Once per poll, shared workspace only: 1 while a fenced frame is being
 * dealt with (the caller publishes what it gathered and batches nothing:
 * in_doubt), 0 when reading may go on.  Once every frame in flight is
 * acknowledged, each partition whose stored position is not the one its
 * frames started from is read again from the stored one: seeked, its held
 * messages dropped, its `from` set.  Never fails (a seek that fails sets
 * s->fatal). */
int kf_poll(kstate *s);
/* 1 when a frame was fenced and the worker has not looked yet (the
 * segment's counter moved since: noted, kf_poll looks), else 0.  Called
 * before taking positions from acks: the writer bumps the counter before
 * it releases the frames, so an ack never comes before its fence. */
int kf_fenced(kstate *s);
/* Message m of assigned partition p (index idx), shared workspace only,
 * before it is batched: 1 when it must be dropped (below the partition's
 * next offset: fetched before a seek), KB_FULL when the batch holds
 * another partition, or m lies past the partition's next offset (publish
 * the batch first: the writer sees a gap only at a frame's start), 0 to
 * batch it. */
int kf_take(kstate *s, int64_t idx, const rd_kafka_message_t *m);
/* After ks_pause_all resumed the partitions: make the seeks kf_poll
 * decided while they were paused (their held messages dropped first). */
void kf_resumed(kstate *s);
/* A new assignment (shared workspace): read the store's positions again,
 * the writer may have copied the workspace's there (fenced frames). */
void kf_assign(kstate *s);

/* kafka_group.c: with a consumer group. */
/* A commit was refused with err (the whole request's, or one partition's):
 * when that means a stale generation (ke_stale_generation), the ownership
 * of every partition is in doubt until a rebalance callback settles it
 * (or DOUBT_MAX_MS pass): kafka.c then publishes what it gathered,
 * pauses fetching and batches nothing more (another member may own the
 * partitions already, and read again whatever this one takes beyond the
 * group's offsets).  Returns 1 when in doubt now. */
int kg_doubt(kstate *s, rd_kafka_resp_err_t err);
/* The ownership is settled (why: "rebalance", "timeout"). */
void kg_settle(kstate *s, const char *why);
void kg_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                     rd_kafka_topic_partition_list_t *parts, void *opaque);
void kg_offset_commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *offsets, void *opaque);

/* kafka_solo.c: without a group. */
/* The handle of topic name (made once, kept until kso_close); NULL on
 * ENOMEM. */
ktopic *kso_topic(kstate *s, const char *name);
/* Start the metadata thread.  0 or -1. */
int kso_start(kstate *s);
/* Apply the thread's newest result (start new partitions, topic errors);
 * cheap when there is none. */
void kso_apply(kstate *s);
/* Stop the thread (no-op when not running). */
void kso_stop(kstate *s);
/* Stop reading every partition and drop the topic handles (before the
 * client is destroyed). */
void kso_close(kstate *s);
/* Free what kso_* allocated (after the client is destroyed). */
void kso_free(kstate *s);

/* kafka_nudge.c: wake librdkafka's fetcher when its queue runs low. */
/* Start the thread (s->rk made).  0 or -1. */
int kn_start(kstate *s);
/* Main thread, before taking messages: when librdkafka's queue holds
 * less than half of queued.min.messages, hand the next assigned
 * partition to the thread (cheap otherwise; never blocks). */
void kn_ask(kstate *s);
/* Stop and join the thread (before rd_kafka_destroy; no-op when not
 * started). */
void kn_stop(kstate *s);

/* ---- kafka_test.c -------------------------------------------------- */

int kafka_test(const zx_conf *conf, const zx_conf_pipeline *p, const zx_conf_connection *c,
               int timeout_ms, char *out, size_t outlen);

/* ---- kafka_check.c ------------------------------------------------- */

/* The plug-in's check (conf/plugin.h, conf/check.h): topic or topics
 * written (one, not both), encoding against format and the schema
 * registry; sets p's own topics_regex.  0, or -1 when it reported an
 * error (zx_check_error). */
int kafka_check(zx_cf_check *ck, zx_conf_pipeline *p);

#endif
