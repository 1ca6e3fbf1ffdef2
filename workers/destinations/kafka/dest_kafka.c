/*
 * dest_kafka.c — destination kafka (dest.h): each row a run sends is one
 * message produced to the topic, keyed and encoded by kafka_msg.h, with
 * librdkafka configured from the `kind: kafka` connection by the shared
 * client (common/kafka_client.h), as the kafka source is.
 *
 *   open         the producer: partitioner murmur2_random (the Java
 *                producer's murmur2 for keyed messages), acks=all,
 *                enable.idempotence (option), batch.num.messages and
 *                linger.ms from the options, message.timeout.ms from
 *                `timeout`; the topic's metadata fetched within the
 *                timeout: a missing topic, refused access or unreachable
 *                brokers fail here.
 *   write        rows -> messages (a full queue waits for room, within
 *                the timeout); delivery reports counted per zx batch.
 *   delete_keys  mirror: json and avro, a tombstone per key; debezium, an
 *                op d message then a tombstone.
 *   (avro)       begin registers the key and value schemas (kafka_sr.h)
 *                and keeps their ids for the wire header.
 *   commit       flush: waits until every message is acknowledged or
 *                failed (each fails by itself past message.timeout.ms);
 *                any failure fails the run.
 *   abort        nothing can be taken back from a log: messages already
 *                delivered stay (at least once: the next run sends them
 *                again, as the run records no hash); those still queued
 *                are purged.
 *
 * It must never: report success before every message is acknowledged,
 * wait on the brokers beyond the timeout, or print a secret (librdkafka's
 * error strings carry none; its configuration is never dumped).
 */
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/kafka_client.h"
#include "common/util.h"
#include "workers/kafka_conn.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/kafka/kafka_dest_opts.h"
#include "workers/destinations/kafka/kafka_avro.h"
#include "workers/destinations/kafka/kafka_msg.h"
#include "workers/destinations/kafka/kafka_sr.h"

typedef struct kdest {
    zx_kafka_seen seen;           /* first: librdkafka's opaque points here */
    const char *sync;
    const zx_kafka_dest_opts *o;
    const zx_conf_connection *conn;
    const char *topic;
    int64_t timeout_ms;
    int (*stopping)(void *ctx);   /* the run's stop (zx_dest_args), or NULL */
    void *stop_ctx;
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    char where[400];              /* "sync S: kafka topic T on B (SASL_SSL...)" */
    /* the run */
    const zx_dest_run *run;
    zx_dest_stats *st;
    zx_kmsg km;
    zx_buf key, val;
    zx_buf scratch;               /* avro: conversions */
    uint32_t key_id, val_id;      /* avro: the registered schemas' ids */
    uint64_t pos;                 /* messages made this run */
    /* delivery, per zx batch (a write or delete_keys call): messages not
     * yet reported, and its state bits (B_FAILED: a message failed;
     * B_CLOSED: every message is queued, so pending 0 means all reported) */
    uint32_t *pending;
    unsigned char *bad;
    size_t nbatches, capbatches;
    uint64_t queued, acked, failed;
    char first_err[256];
} kdest;

enum { B_FAILED = 1, B_CLOSED = 2, B_COUNTED = 4 };

/* Count batch b in the stats once it is closed and all its messages are
 * reported (exactly once: then it is marked counted). */
static void count_batch(kdest *d, size_t b)
{
    if (!d->st || d->pending[b] || (d->bad[b] & (B_CLOSED | B_COUNTED)) != B_CLOSED)
        return;
    if (d->bad[b] & B_FAILED)
        d->st->batches_failed++;
    else
        d->st->batches++;
    d->bad[b] |= B_COUNTED;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Delivery report (from rd_kafka_poll / flush, in this thread). */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    kdest *d = opaque;
    size_t b = (size_t)(uintptr_t)msg->_private;
    if (b < d->nbatches && d->pending[b])
        d->pending[b]--;
    if (msg->err) {
        d->failed++;
        if (b < d->nbatches)
            d->bad[b] |= B_FAILED;
        if (!d->first_err[0])
            snprintf(d->first_err, sizeof(d->first_err), "message to partition %" PRId32
                     " not acknowledged: %s", msg->partition, rd_kafka_err2str(msg->err));
        if (d->st)
            zx_dest_note_error(d->st, d->first_err);
    } else {
        d->acked++;
    }
    if (b < d->nbatches)
        count_batch(d, b);
}

/* Client-level errors (all brokers down, a fatal idempotence error). */
static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    kdest *d = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL && !d->first_err[0])
        snprintf(d->first_err, sizeof(d->first_err), "fatal producer error: %.200s", reason);
}

static int kd_fail(kdest *d, char *err, size_t errlen, const char *what, const char *why)
{
    snprintf(err, errlen, "%s: %s: %s", d->where, what, why);
    if (d->st)
        zx_dest_note_error(d->st, why);
    return -1;
}

/* The topic's metadata, within the timeout: 0, or -1 with err. */
static int stopped(const kdest *d)
{
    return d->stopping && d->stopping(d->stop_ctx);
}

static int check_topic(kdest *d, char *err, size_t errlen)
{
    const struct rd_kafka_metadata *md = NULL;
    /* asked in slices, so that a stop is seen within 200 ms */
    int64_t until = now_ms() + d->timeout_ms;
    rd_kafka_resp_err_t e;
    do {
        int64_t left = until - now_ms();
        e = rd_kafka_metadata(d->rk, 0, d->rkt, &md, (int)(left < 200 ? (left > 0 ? left : 1)
                                                                       : 200));
    } while ((e == RD_KAFKA_RESP_ERR__TIMED_OUT || e == RD_KAFKA_RESP_ERR__TRANSPORT) &&
             now_ms() < until && !stopped(d));
    char why[300];
    if (e && stopped(d))
        return kd_fail(d, err, errlen, "stopped", "the run was stopped while the brokers "
                       "did not answer");
    if (e) {
        snprintf(why, sizeof(why), "%s (within %" PRId64 " s); check the connection's brokers "
                 "and security, and that the brokers are up", rd_kafka_err2str(e),
                 d->timeout_ms / 1000);
        return kd_fail(d, err, errlen, "cannot reach the brokers", why);
    }
    int rc = 0;
    if (md->topic_cnt < 1 || md->topics[0].err) {
        rd_kafka_resp_err_t te = md->topic_cnt < 1 ? RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART
                                                   : md->topics[0].err;
        if (te == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
            snprintf(why, sizeof(why), "the topic does not exist: create it (zx does not "
                     "create topics), or correct destination.kafka.topic");
        else if (te == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
            snprintf(why, sizeof(why), "not authorized to the topic: grant the connection's "
                     "user Write and Describe on it");
        else
            snprintf(why, sizeof(why), "%s", rd_kafka_err2str(te));
        rc = kd_fail(d, err, errlen, "topic unusable", why);
    } else if (md->topics[0].partition_cnt < 1) {
        rc = kd_fail(d, err, errlen, "topic unusable", "the topic has no partition");
    }
    rd_kafka_metadata_destroy(md);
    return rc;
}

static int kd_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    const zx_kafka_dest_opts *o = a->opts;
    *state = NULL;
    if (!o || !o->ntopic || !a->conn || !a->conn->kind || strcmp(a->conn->kind, "kafka")) {
        snprintf(err, errlen, "sync %s: the kafka destination needs destination: {kafka: "
                 "{connection: <a kind: kafka connection>, topic: ...}}", a->sync);
        return -1;
    }
    kdest *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(err, errlen, "%s %s: out of memory", a->role ? a->role : "sync", a->sync);
        return -1;
    }
    d->sync = a->sync;
    d->o = o;
    d->conn = a->conn;
    d->topic = o->topic[0];
    d->stopping = a->stopping;
    d->stop_ctx = a->stop_ctx;
    /* its own `timeout` (default 30 s, the runs' network deadline) */
    d->timeout_ms = o->timeout_ms ? o->timeout_ms : a->deadline_ms > 0 ? a->deadline_ms : 30000;
    zx_kafka_settings s = zx_kafka_conn_settings(a->conn);
    char desc[96];
    zx_kafka_describe(&s, desc, sizeof(desc));
    snprintf(d->where, sizeof(d->where), "%s %s: kafka topic %.64s on %.48s (%s)",
             a->role ? a->role : "sync", a->sync,
             d->topic, a->conn->brokers_csv ? a->conn->brokers_csv : "?", desc);
    char e[300];
    rd_kafka_conf_t *conf = zx_kafka_conf_new(&s, &d->seen, e, sizeof(e));
    if (!conf) {
        kd_fail(d, err, errlen, "configuration", e);
        goto fail;
    }
    char v[32], mt[32];
    snprintf(v, sizeof(v), "%" PRIu32, o->batch_rows ? o->batch_rows : 1000);
    snprintf(mt, sizeof(mt), "%" PRId64, d->timeout_ms + (int64_t)o->linger_ms);
    char lg[32];
    snprintf(lg, sizeof(lg), "%" PRIu32, o->linger_ms);
    if (zx_kafka_conf_set(conf, &s, 0, "partitioner", "murmur2_random", e, sizeof(e)) < 0 ||
        zx_kafka_conf_set(conf, &s, 1, "enable.idempotence", o->idempotence ? "true" : "false",
                          e, sizeof(e)) < 0 ||
        zx_kafka_conf_set(conf, &s, 1, "acks", "all", e, sizeof(e)) < 0 ||
        zx_kafka_conf_set(conf, &s, 1, "batch.num.messages", v, e, sizeof(e)) < 0 ||
        zx_kafka_conf_set(conf, &s, 1, "linger.ms", lg, e, sizeof(e)) < 0 ||
        zx_kafka_conf_set(conf, &s, 1, "message.timeout.ms", mt, e, sizeof(e)) < 0 ||
        /* what a slow broker can make zx hold: 64 MiB of queued messages
         * (librdkafka's default is 1 GiB) */
        zx_kafka_conf_set(conf, &s, 1, "queue.buffering.max.kbytes", "65536", e,
                          sizeof(e)) < 0) {
        rd_kafka_conf_destroy(conf);
        kd_fail(d, err, errlen, "configuration", e);
        goto fail;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, d);
    d->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof(e));
    if (!d->rk) {
        rd_kafka_conf_destroy(conf);
        kd_fail(d, err, errlen, "cannot make the producer", e);
        goto fail;
    }
    rd_kafka_set_log_queue(d->rk, NULL);
    d->rkt = rd_kafka_topic_new(d->rk, d->topic, NULL);
    if (!d->rkt) {
        kd_fail(d, err, errlen, "cannot use the topic",
                rd_kafka_err2str(rd_kafka_last_error()));
        goto fail;
    }
    if (check_topic(d, err, errlen) < 0)
        goto fail;
    *state = d;
    return 0;
fail:
    if (d->rkt)
        rd_kafka_topic_destroy(d->rkt);
    if (d->rk)
        rd_kafka_destroy(d->rk);
    free(d);
    return -1;
}

/* Avro: the key's and the value's schemas registered, their ids kept.
 * 0, or -1 with err. */
static int register_schemas(kdest *d, char *err, size_t errlen)
{
    zx_buf sch;
    zx_buf_init(&sch);
    char e[600], subject[300], name[300];
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        if (k == 0 && !d->km.nkey)
            continue;                          /* no key: no key schema */
        zx_buf_reset(&sch);
        snprintf(name, sizeof(name), "%s_%s", d->topic, k == 0 ? "key" : "value");
        snprintf(subject, sizeof(subject), "%s-%s", d->topic, k == 0 ? "key" : "value");
        if (zx_kavro_schema(name, k == 0 ? d->km.mcols : d->run->cols,
                            k == 0 ? d->km.nkey : d->run->ncols, &sch, e, sizeof(e)) < 0 ||
            zx_ksr_register(d->o->schema_registry, subject, sch.p, (long)d->timeout_ms,
                            k == 0 ? &d->key_id : &d->val_id, e, sizeof(e)) < 0)
            rc = kd_fail(d, err, errlen, "avro", e);
    }
    zx_buf_free(&sch);
    return rc;
}

/* Avro: the wire header of schema id, then the datum of vals over cols,
 * into out.  0 or -1 (out of memory). */
static int avro_msg(kdest *d, uint32_t id, const zx_dcol *cols, size_t n, const zx_value *vals,
                    zx_buf *out)
{
    unsigned char h[5];
    size_t misfit = SIZE_MAX;
    zx_kavro_header(id, h);
    if (zx_buf_put(out, h, 5) < 0 ||
        zx_kavro_datum(cols, n, vals, out, &d->scratch, &d->km.nulled, &misfit) < 0)
        return -1;
    if (misfit != SIZE_MAX && !d->km.misfit)
        d->km.misfit = cols[misfit].name;
    return 0;
}

static int kd_begin(void *state, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                    size_t errlen)
{
    kdest *d = state;
    d->run = run;
    d->st = stats;
    d->pos = d->queued = d->acked = d->failed = 0;
    d->nbatches = 0;
    d->first_err[0] = '\0';
    if (run->mode == ZX_MODE_REPLACE)
        return kd_fail(d, err, errlen, "mode replace", "a topic is a log and cannot be "
                       "replaced: use mode append, upsert or mirror");
    char e[200];
    zx_kmsg_free(&d->km);
    if (zx_kmsg_init(&d->km, run->cols, run->ncols, (const char *const *)d->o->key, d->o->nkey,
                     run->key_cols, run->nkey_cols, run->mode == ZX_MODE_MIRROR, e,
                     sizeof(e)) < 0)
        return kd_fail(d, err, errlen, "message key", e);
    if (d->o->format == ZX_KDEST_AVRO && register_schemas(d, err, errlen) < 0)
        return -1;
    return 0;
}

/* A new zx batch: its index, or -1 (out of memory). */
static int new_batch(kdest *d, size_t *b)
{
    if (d->nbatches == d->capbatches) {
        size_t c = d->capbatches ? d->capbatches * 2 : 64;
        uint32_t *p = realloc(d->pending, c * sizeof(*p));
        if (!p)
            return -1;
        d->pending = p;
        unsigned char *q = realloc(d->bad, c);
        if (!q)
            return -1;
        d->bad = q;
        d->capbatches = c;
    }
    *b = d->nbatches++;
    d->pending[*b] = 0;
    d->bad[*b] = 0;
    return 0;
}

/* Every message of batch b is queued (or it failed): counted now when all
 * are reported already, else by the last report. */
static void batch_done(kdest *d, size_t b)
{
    d->bad[b] |= B_CLOSED;
    count_batch(d, b);
}

/* Queue one message (value NULL: a tombstone) of zx batch b, waiting for
 * room within the timeout.  0, or -1 with err. */
static int produce(kdest *d, size_t b, const zx_buf *key, const zx_buf *val, char *err,
                   size_t errlen)
{
    int64_t until = now_ms() + d->timeout_ms;
    /* counted pending first: a report may come during the wait below */
    d->pending[b]++;
    for (;;) {
        /* no key columns (append without key): no key, a random partition */
        if (rd_kafka_produce(d->rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY,
                             val ? val->p : NULL, val ? val->len : 0,
                             d->km.nkey ? key->p : NULL, d->km.nkey ? key->len : 0,
                             (void *)(uintptr_t)b) == 0)
            break;
        rd_kafka_resp_err_t e = rd_kafka_last_error();
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || now_ms() >= until || stopped(d)) {
            d->pending[b]--;
            d->bad[b] |= B_FAILED;
            char why[300];
            snprintf(why, sizeof(why), "%s%s", rd_kafka_err2str(e),
                     e == RD_KAFKA_RESP_ERR__QUEUE_FULL ? " (the brokers take nothing: "
                     "are they up?)" : "");
            return kd_fail(d, err, errlen, "cannot queue a message", why);
        }
        rd_kafka_poll(d->rk, 100);
    }
    d->queued++;
    d->pos++;
    d->st->bytes += key->len + (val ? val->len : 0);
    rd_kafka_poll(d->rk, 0);
    if (d->first_err[0])
        return kd_fail(d, err, errlen, "delivery failed", d->first_err);
    return 0;
}

/* Values the encoder wrote as null since it had counted `before` (NaN,
 * infinities): into the stats, with the first one's column and value
 * (vals: the row, over rs's columns). */
static void note_misfits(kdest *d, uint64_t before, const zx_rowset *rs, const zx_value *vals)
{
    if (d->km.nulled == before)
        return;
    d->st->nulled += d->km.nulled - before;
    for (size_t i = 0; d->km.misfit && i < rs->ncols; i++)
        if (!strcmp(rs->cols[i].name, d->km.misfit)) {
            zx_dest_misfit(d->st, d->km.misfit, &vals[i]);
            break;
        }
}

/* Row r of the batch (values vals) into d->key and d->val.  0 or -1 (out
 * of memory). */
static int encode_row(kdest *d, uint32_t r, const zx_value *vals, int64_t ts)
{
    const zx_dest_run *run = d->run;
    zx_buf_reset(&d->key);
    zx_buf_reset(&d->val);
    if (d->o->format == ZX_KDEST_AVRO) {
        if (d->km.nkey && avro_msg(d, d->key_id, d->km.mcols, d->km.nkey,
                                   zx_kmsg_key_vals(&d->km, vals), &d->key) < 0)
            return -1;
        return avro_msg(d, d->val_id, run->cols, run->ncols, vals, &d->val);
    }
    if (zx_kmsg_key(&d->km, vals, &d->key) < 0)
        return -1;
    if (d->o->format == ZX_KDEST_JSON)
        return zx_kmsg_row(&d->km, vals, &d->val);
    /* debezium: u for a row that replaces one sent before; c for a new
     * one, and when the run cannot tell (append) */
    int seen = run->row_seen ? run->row_seen(run->failed_ctx, r) : -1;
    zx_kmsg_src s = {d->sync, d->topic, run->run_id, d->pos, ts};
    return zx_kmsg_debezium(&d->km, &s, seen == 1 ? 'u' : 'c', vals, NULL, &d->val);
}

static int kd_write(void *state, const zx_rowset *rs, char *err, size_t errlen)
{
    kdest *d = state;
    size_t b;
    zx_value *vals = calloc(rs->ncols ? rs->ncols : 1, sizeof(*vals));
    if (!vals || new_batch(d, &b) < 0) {
        free(vals);
        return kd_fail(d, err, errlen, "write", "out of memory");
    }
    int rc = 0;
    int64_t ts = wall_ms();
    for (uint32_t r = 0; r < rs->nrows && rc == 0; r++) {
        zx_rowset_row(rs, r, vals);
        uint64_t nul = d->km.nulled;
        if (encode_row(d, r, vals, ts) < 0) {
            rc = kd_fail(d, err, errlen, "write", "out of memory");
            break;
        }
        note_misfits(d, nul, rs, vals);
        rc = produce(d, b, &d->key, &d->val, err, errlen);
        if (rc == 0)
            d->st->rows_written++;
    }
    batch_done(d, b);
    free(vals);
    return rc;
}

static int kd_delete_keys(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    kdest *d = state;
    size_t b;
    zx_value *vals = calloc(keys->ncols ? keys->ncols : 1, sizeof(*vals));
    if (!vals || new_batch(d, &b) < 0) {
        free(vals);
        return kd_fail(d, err, errlen, "delete", "out of memory");
    }
    int rc = 0;
    int64_t ts = wall_ms();
    for (uint32_t r = 0; r < keys->nrows && rc == 0; r++) {
        zx_rowset_row(keys, r, vals);
        zx_buf_reset(&d->key);
        zx_buf_reset(&d->val);
        if ((d->o->format == ZX_KDEST_AVRO
                 ? avro_msg(d, d->key_id, d->km.mcols, d->km.nkey,
                            zx_kmsg_key_del_vals(&d->km, vals), &d->key)
                 : zx_kmsg_key_del(&d->km, vals, &d->key)) < 0) {
            rc = kd_fail(d, err, errlen, "delete", "out of memory");
            break;
        }
        if (d->o->format == ZX_KDEST_DEBEZIUM) {
            zx_kmsg_src s = {d->sync, d->topic, d->run->run_id, d->pos, ts};
            if (zx_kmsg_debezium(&d->km, &s, 'd', NULL, vals, &d->val) < 0) {
                rc = kd_fail(d, err, errlen, "delete", "out of memory");
                break;
            }
            if ((rc = produce(d, b, &d->key, &d->val, err, errlen)) < 0)
                break;
        }
        rc = produce(d, b, &d->key, NULL, err, errlen);     /* the tombstone */
        if (rc == 0)
            d->st->rows_deleted++;
    }
    batch_done(d, b);
    free(vals);
    return rc;
}

static int kd_commit(void *state, char *err, size_t errlen)
{
    kdest *d = state;
    /* every message fails by itself past message.timeout.ms (timeout +
     * linger); flush waits a little longer than that for the reports */
    int64_t until = now_ms() + d->timeout_ms + d->o->linger_ms + 5000;
    while (rd_kafka_outq_len(d->rk) > 0 && now_ms() < until && !stopped(d))
        rd_kafka_flush(d->rk, 200);
    rd_kafka_poll(d->rk, 0);
    int left = rd_kafka_outq_len(d->rk);
    char why[400];
    if (d->failed || d->first_err[0]) {
        snprintf(why, sizeof(why), "%" PRIu64 " of %" PRIu64 " messages not acknowledged "
                 "(first: %s); the next run sends the run's rows again",
                 d->failed, d->queued, d->first_err[0] ? d->first_err : "?");
        return kd_fail(d, err, errlen, "delivery failed", why);
    }
    if (left > 0 || d->acked != d->queued) {
        snprintf(why, sizeof(why), "%" PRIu64 " of %" PRIu64 " messages not acknowledged "
                 "within %" PRId64 " s; the next run sends the run's rows again",
                 d->queued - d->acked, d->queued, d->timeout_ms / 1000);
        return kd_fail(d, err, errlen, "delivery failed", why);
    }
    snprintf(d->st->made, sizeof(d->st->made), "%" PRIu64 " messages to %.60s", d->acked,
             d->topic);
    return 0;
}

static void kd_abort(void *state)
{
    kdest *d = state;
    if (!d || !d->rk)
        return;
    rd_kafka_purge(d->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_NON_BLOCKING);
    rd_kafka_poll(d->rk, 0);
}

static void kd_close(void *state)
{
    kdest *d = state;
    if (!d)
        return;
    if (d->rk) {
        /* purged messages report at once; in-flight ones within the
         * timeout at most */
        rd_kafka_purge(d->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(d->rk, 1000);
    }
    d->st = NULL;
    if (d->rkt)
        rd_kafka_topic_destroy(d->rkt);
    if (d->rk)
        rd_kafka_destroy(d->rk);
    zx_kmsg_free(&d->km);
    zx_buf_free(&d->key);
    zx_buf_free(&d->val);
    zx_buf_free(&d->scratch);
    free(d->pending);
    free(d->bad);
    free(d);
}

const zx_dest zx_dest_kafka = {
    .name = "kafka",
    .caps = ZX_DEST_DELETES | ZX_DEST_UPSERT,
    .open = kd_open,
    .begin = kd_begin,
    .write = kd_write,
    .delete_keys = kd_delete_keys,
    .commit = kd_commit,
    .abort = kd_abort,
    .close = kd_close,
};
