/*
 * kinesis.c — the worker of `source: kinesis` (workers/sources/source.h):
 * every shard of the stream read in turn (kinesis_shards.h: parents before
 * children, 5 calls a second per shard at most, backoff), each record
 * taken apart when KPL-aggregated (kinesis_kpl.h), its rows gathered into
 * frames (kinesis_batch.c) that carry each shard's position.
 *
 * Positions end to end: a frame carries, per shard it read, the position
 * after its last record; the writer stores it with the rows in one
 * transaction; a restart resumes there (AFTER_SEQUENCE_NUMBER).  Kinesis
 * keeps no position of its own for zx: nothing is committed upstream.
 *
 * Each API call blocks for its HTTP request (at most KIN_CALL_TIMEOUT_MS):
 * the runtime's acks and stop wait that long at worst.
 *
 * It must never: ask for a LATEST iterator, publish a position beyond a
 * record whose rows are not in the same or an earlier frame, or log a
 * secret.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/aws_call.h"
#include "common/aws_creds.h"
#include "workers/aws_conn.h"
#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/sources/catchup.h"
#include "workers/sources/kinesis/kinesis_api.h"
#include "workers/sources/kinesis/kinesis_int.h"
#include "workers/sources/kinesis/kinesis_kpl.h"
#include "workers/sources/source.h"

#define KIN_CALL_TIMEOUT_MS 5000   /* one call, one attempt: the source backs off itself */
#define KIN_LIST_EVERY_MS 30000      /* shards found again (splits, merges) */
#define KIN_LINGER_MS 200            /* a batch waits this long for more */
#define KIN_STATUS_EVERY_MS 1000

typedef struct kin_state {
    zx_src *rt;
    const zx_conf_pipeline *p;
    const zx_kinesis_opts *o;
    char name[128];
    ka_stream st;
    char stream_label[160];      /* name, or the ARN's last part: part names */
    zx_aws_creds *creds;
    zx_aws_client *api;
    ks_set shards;
    int listed;                  /* a listing succeeded once */
    int64_t list_at_ms;          /* the next listing (monotonic) */
    uint32_t list_backoff_ms;
    kn_batch b;
    size_t limit;                /* bytes of a frame */
    /* a GetRecords answer being taken into frames */
    zx_kin_get_records gr;
    int have_gr;
    char gr_shard[ZX_KIN_SHARD_ID_MAX + 1];  /* its shard */
    size_t gr_next;              /* its next record */
    uint32_t gr_sub;             /* the next user record of gr_next */
    char last_error[600];
    int64_t status_ms;
    int tfd;
    uint64_t records_read;       /* GetRecords records taken in (catching up) */
    zx_catchup catchup;          /* far behind the newest record: catchup.h */
    int catchup_shown;
} kin_state;

#define KIN_STATUS_SHARDS 40        /* open shards listed in the status, at most */

/* `zxctl status`: the shards by state, how far behind the newest record the
 * reading is (the largest MillisBehindLatest), and each open shard's. */
static void set_status(kin_state *s)
{
    static const char *const names[] = {"waiting", "starting", "reading", "finished"};
    size_t c[4];
    ks_counts(&s->shards, c);
    int64_t behind = -1;
    char list[6144];
    size_t off = 0, listed = 0;
    list[0] = '\0';
    for (size_t i = 0; i < s->shards.n; i++) {
        const ks_shard *sh = &s->shards.v[i];
        if (sh->state == KS_READING && sh->behind_ms > behind)
            behind = sh->behind_ms;
        if (sh->state == KS_FINISHED || !sh->listed || listed >= KIN_STATUS_SHARDS)
            continue;
        int n = snprintf(list + off, sizeof(list) - off, "%s{\"shard\":\"%s\",\"state\":"
                         "\"%s\",\"millis_behind\":%lld}", listed ? "," : "", sh->id,
                         names[sh->state], (long long)sh->behind_ms);
        if (n < 0 || (size_t)n >= sizeof(list) - off) {
            list[off] = '\0';
            break;
        }
        off += (size_t)n;
        listed++;
    }
    char js[7168];
    snprintf(js, sizeof(js), "{\"state\":\"%s\",\"stream\":\"%s\",\"shards_reading\":%zu,"
             "\"shards_waiting\":%zu,\"shards_finished\":%zu,\"millis_behind\":%lld,"
             "\"shards\":[%s]}", !s->listed ? "connecting" : "reading", s->stream_label,
             c[KS_READING] + c[KS_NEEDS_ITERATOR], c[KS_WAITING], c[KS_FINISHED],
             (long long)behind, list);
    zx_src_set_status(s->rt, js);
    s->status_ms = zx_mono_ms();
    /* far behind: catching up shown as long work, rows left unknown (the
     * API tells time behind, not records) */
    zx_catchup_view v;
    if (zx_catchup_update(&s->catchup, zx_now_us(), s->records_read, -1, behind, &v)) {
        char what[ZX_SEG_PROGRESS_WHAT_MAX];
        zx_catchup_what(what, sizeof(what), s->stream_label, behind);
        zx_src_set_progress(s->rt, what, v.done, 0, 0, v.started_us);
        s->catchup_shown = 1;
    } else if (s->catchup_shown) {
        zx_src_set_progress(s->rt, NULL, 0, 0, 0, 0);
        s->catchup_shown = 0;
    }
}

/* The problem now (NULL: none), said once per change. */
static void set_error(kin_state *s, const char *msg)
{
    if (!msg) {
        if (s->last_error[0]) {
            s->last_error[0] = '\0';
            zx_src_set_error(s->rt, NULL);
        }
        return;
    }
    if (!strcmp(s->last_error, msg))
        return;
    snprintf(s->last_error, sizeof(s->last_error), "%s", msg);
    zx_warn("event=kinesis_error pipeline=%s error=\"%s\"", s->name, msg);
    zx_src_set_error(s->rt, msg);
}

static void kin_close(zx_src *rt, void *state)
{
    (void)rt;
    kin_state *s = state;
    if (!s)
        return;
    if (s->have_gr)
        zx_kin_get_records_free(&s->gr);
    ks_free(&s->shards);
    kn_free(&s->b);
    zx_aws_client_free(s->api);
    zx_aws_creds_free(s->creds);
    if (s->tfd >= 0)
        close(s->tfd);
    free(s);
}

static int kin_open(zx_src *rt, void **state, char *err, size_t errlen)
{
    const zx_conf_pipeline *p = zx_src_args(rt)->pipeline;
    const zx_kinesis_opts *o = p->own;
    if (!o || !p->conn)
        return zx_seterr(err, errlen, "pipeline %s: no options or connection", p->name);
    kin_state *s = calloc(1, sizeof(*s));
    if (!s)
        return zx_seterr(err, errlen, "out of memory");
    *state = s;
    s->tfd = -1;
    s->rt = rt;
    s->p = p;
    s->o = o;
    snprintf(s->name, sizeof(s->name), "%s", p->name);
    s->st.name = o->stream;
    s->st.arn = o->stream_arn;
    const char *label = o->stream ? o->stream : strrchr(o->stream_arn, '/') + 1;
    snprintf(s->stream_label, sizeof(s->stream_label), "%s", label);
    int kind;
    int64_t ms;
    if (zx_kinesis_parse_start(o->start, &kind, &ms) < 0) {
        zx_seterr(err, errlen, "pipeline %s: start: not oldest, new nor a time", p->name);
        return ZX_SRC_REFUSED;
    }
    ks_init(&s->shards, (ks_start)kind, kind == KS_START_NEW ? zx_now_us() / 1000 : ms);
    kn_init(&s->b, p->metadata);
    s->limit = zx_src_max_frame(rt) / 4;
    zx_aws_cred_opts co;
    zx_aws_conn_cred_opts(p->conn, &co);
    char e[600];
    if (!(s->creds = zx_aws_creds_new(&co, e, sizeof(e)))) {
        zx_seterr(err, errlen, "pipeline %s: connection %s: %s", p->name, p->conn->name, e);
        return ZX_SRC_REFUSED;
    }
    zx_http_opts ho = {.timeout_ms = KIN_CALL_TIMEOUT_MS, .max_response = 16u << 20,
                       .max_attempts = 1};
    if (!(s->api = zx_aws_client_new("kinesis", p->conn->region, p->conn->endpoint,
                                     s->creds, &ho, e, sizeof(e)))) {
        zx_seterr(err, errlen, "pipeline %s: connection %s: %s", p->name, p->conn->name, e);
        return ZX_SRC_REFUSED;
    }
    s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (s->tfd < 0)
        return zx_seterr(err, errlen, "timerfd_create failed");
    set_status(s);
    zx_info("event=kinesis_open pipeline=%s stream=%s endpoint=%s start=%s", s->name,
            s->stream_label, zx_aws_client_url(s->api), o->start ? o->start : "oldest");
    return 0;
}

/* The part name of shard id: "<stream>/<shard>". */
static void part_of(const kin_state *s, const char *id, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", s->stream_label, id);
}

/* Give the tracker the stored positions of the listed shards it does not
 * know yet. */
static void seed(kin_state *s, const ka_shards *l)
{
    for (size_t i = 0; i < l->n; i++) {
        if (ks_find(&s->shards, l->v[i].shard_id))
            continue;
        char part[ZX_KIN_SHARD_ID_MAX + 200];
        part_of(s, l->v[i].shard_id, part, sizeof(part));
        const void *v;
        size_t len;
        if (zx_src_position_find(s->rt, part, &v, &len) < 0)
            continue;
        ks_pos pos;
        if (ks_pos_parse(v, len, &pos) < 0) {
            zx_warn("event=kinesis_bad_position pipeline=%s shard=%s action=oldest", s->name,
                    l->v[i].shard_id);
            continue;
        }
        ks_seed(&s->shards, l->v[i].shard_id, &pos);
    }
}

/* List the shards again.  ZX_SRC_* to return, or -100: carry on. */
static int list_shards(kin_state *s, int64_t now)
{
    ka_shards l;
    char e[1200];
    ka_status st = ka_list_shards(s->api, &s->st, &l, e, sizeof(e));
    if (st != KA_OK) {
        set_error(s, e);
        s->list_backoff_ms = s->list_backoff_ms ? s->list_backoff_ms * 2 : 1000;
        if (s->list_backoff_ms > 30000)
            s->list_backoff_ms = 30000;
        s->list_at_ms = now + s->list_backoff_ms;
        return -100;
    }
    seed(s, &l);
    int rc = ks_listing(&s->shards, l.v, l.n, e, sizeof(e));
    if (!s->listed && rc == 0)
        zx_info("event=kinesis_shards pipeline=%s stream=%s shards=%zu", s->name,
                s->stream_label, l.n);
    ka_shards_free(&l);
    if (rc < 0) {
        set_error(s, e);
        return ZX_SRC_FATAL;
    }
    s->listed = 1;
    set_status(s);
    s->list_backoff_ms = 0;
    s->list_at_ms = now + KIN_LIST_EVERY_MS;
    set_error(s, NULL);
    return -100;
}

/* The positions the tracker has for shards not stored yet (time starts). */
static int add_dirty(kin_state *s)
{
    for (size_t i = 0; i < s->shards.n; i++) {
        ks_shard *sh = &s->shards.v[i];
        if (!sh->dirty || sh->pos.kind != KS_AT)
            continue;
        char part[ZX_KIN_SHARD_ID_MAX + 200], text[KS_POS_MAX];
        part_of(s, sh->id, part, sizeof(part));
        ks_pos_format(&sh->pos, text);
        if (kn_set_position(&s->b, part, text) < 0)
            return -1;
        sh->dirty = 0;
    }
    return 0;
}

/* Publish the batch.  ZX_SRC_BUSY, _BLOCKED (kept by the runtime) or
 * _FATAL. */
static int publish(kin_state *s)
{
    if (add_dirty(s) < 0)
        return ZX_SRC_FATAL;
    if (kn_empty(&s->b))
        return ZX_SRC_BUSY;
    zx_frame_meta m = {0};
    m.kind = ZX_FRAME_ROWS;
    m.positions = s->b.pos;
    m.npositions = s->b.npos;
    m.rejects = s->b.rej;
    m.nrejects = s->b.nrej;
    m.accepted = s->b.nrecords;
    m.metadata = s->p->metadata;
    m.ingested_at_us = zx_now_us();   /* also for the commit latency metric */
    zx_pub_result r = zx_src_publish(s->rt, &m, &s->b.rs, NULL);
    if (r == ZX_PUB_TOO_BIG || r == ZX_PUB_NOMEM) {
        zx_src_set_error(s->rt, r == ZX_PUB_NOMEM ? "out of memory encoding a frame"
                                                  : "a frame is larger than the ring takes");
        return ZX_SRC_FATAL;
    }
    kn_reset(&s->b);
    return r == ZX_PUB_WAIT ? ZX_SRC_BLOCKED : ZX_SRC_BUSY;
}

/* Add record i of the answer in hand (its user records from s->gr_sub).
 * KN_ADDED (all of it), KN_FULL (publish, then again), KN_NOMEM. */
static int add_record(kin_state *s, ks_shard *sh, size_t i)
{
    const zx_kin_record *rec = &s->gr.records[i];
    char part[ZX_KIN_SHARD_ID_MAX + 200], text[KS_POS_MAX], why[300];
    part_of(s, sh->id, part, sizeof(part));
    kn_rec r = {.shard = sh->id, .seq = rec->seq, .sub = UINT32_MAX, .data = rec->data,
                .len = rec->len, .pk = rec->partition_key, .pk_len = rec->pk_len,
                .arrival_us = rec->arrival_us};
    zx_kpl k;
    int agg = zx_kpl_open(&k, rec->data, rec->len, rec->partition_key, rec->pk_len, why,
                          sizeof(why));
    int rc = KN_ADDED;
    if (agg <= 0) {
        if (agg < 0)
            r.reject = why;
        rc = kn_add(&s->b, &r, s->limit);
    } else {
        zx_kpl_rec u;
        while (rc == KN_ADDED && zx_kpl_next(&k, &u) > 0) {
            if (u.sub_seq < s->gr_sub)
                continue;
            r.sub = (uint32_t)u.sub_seq;
            r.data = u.data;
            r.len = u.len;
            r.pk = u.partition_key;
            r.pk_len = u.pk_len;
            rc = kn_add(&s->b, &r, s->limit);
            if (rc == KN_FULL && u.sub_seq > s->gr_sub) {
                /* the user records before it are in: the frame resumes within */
                ks_pos pos = {.kind = KS_WITHIN, .sub = (uint32_t)u.sub_seq - 1};
                snprintf(pos.seq, sizeof(pos.seq), "%s", rec->seq);
                ks_pos_format(&pos, text);
                if (kn_set_position(&s->b, part, text) < 0)
                    rc = KN_NOMEM;
                s->gr_sub = (uint32_t)u.sub_seq;
            }
        }
    }
    zx_kpl_free(&k);
    if (rc != KN_ADDED)
        return rc;
    ks_pos pos = {.kind = KS_AFTER};
    snprintf(pos.seq, sizeof(pos.seq), "%s", rec->seq);
    ks_pos_format(&pos, text);
    if (kn_set_position(&s->b, part, text) < 0)
        return KN_NOMEM;
    s->gr_sub = 0;
    return KN_ADDED;
}

/* Take the answer in hand into frames.  ZX_SRC_* to return, or -100 when
 * it is all in the batch. */
static int take_records(kin_state *s)
{
    ks_shard *sh = ks_find(&s->shards, s->gr_shard);
    if (!sh) {   /* cannot happen: shards are never forgotten */
        zx_kin_get_records_free(&s->gr);
        s->have_gr = 0;
        return -100;
    }
    while (s->gr_next < s->gr.nrecords) {
        int rc = add_record(s, sh, s->gr_next);
        if (rc == KN_NOMEM) {
            zx_src_set_error(s->rt, "out of memory gathering records");
            return ZX_SRC_FATAL;
        }
        if (rc == KN_FULL)
            return publish(s);
        s->gr_next++;
        s->records_read++;
    }
    /* all of it: the tracker moves on */
    const char *last = s->gr.nrecords ? s->gr.records[s->gr.nrecords - 1].seq : NULL;
    /* the answer's strings live in its arena: the iterator is kept as a copy */
    char *next = NULL;
    if (s->gr.next_iterator && !(next = strdup(s->gr.next_iterator))) {
        zx_src_set_error(s->rt, "out of memory keeping a shard iterator");
        return ZX_SRC_FATAL;
    }
    int done = ks_got_records(&s->shards, sh, last, UINT32_MAX, next, s->gr.millis_behind,
                              zx_mono_ms());
    if (done) {
        char part[ZX_KIN_SHARD_ID_MAX + 200];
        part_of(s, sh->id, part, sizeof(part));
        if (kn_set_position(&s->b, part, "end") < 0)
            return ZX_SRC_FATAL;
        sh->dirty = 0;
        zx_info("event=kinesis_shard_end pipeline=%s shard=%s children=%zu", s->name, sh->id,
                s->gr.nchildren);
        s->list_at_ms = 0;   /* its children: list again now */
    }
    zx_kin_get_records_free(&s->gr);
    s->have_gr = 0;
    return -100;
}

/* One call for shard sh.  -100: carry on; else ZX_SRC_*. */
static int call_shard(kin_state *s, ks_shard *sh, int64_t now)
{
    char e[1200];
    ka_status st;
    if (sh->state == KS_NEEDS_ITERATOR) {
        const char *seq, *type;
        int64_t at;
        char *it = NULL;
        type = ks_iterator_type(sh, &seq, &at);
        st = ka_shard_iterator(s->api, &s->st, sh->id, type, seq, at, &it, e, sizeof(e));
        if (st == KA_OK) {
            ks_got_iterator(sh, it);
            set_error(s, NULL);
            return -100;
        }
    } else {
        st = ka_get_records(s->api, &s->st, sh->iterator, s->o->batch_records, &s->gr, e,
                            sizeof(e));
        if (st == KA_OK) {
            s->have_gr = 1;
            snprintf(s->gr_shard, sizeof(s->gr_shard), "%s", sh->id);
            s->gr_next = 0;
            s->gr_sub = sh->pos.kind == KS_WITHIN ? sh->pos.sub + 1 : 0;
            /* skip the user records of a partly written aggregate only in
             * the first record of the answer, and only when it is that one */
            if (sh->pos.kind == KS_WITHIN && (!s->gr.nrecords ||
                                               strcmp(s->gr.records[0].seq, sh->pos.seq)))
                s->gr_sub = 0;
            set_error(s, NULL);
            return take_records(s);
        }
    }
    switch (st) {
    case KA_EXPIRED: {
        /* a new iterator from the position of the last record handed on
         * (or where the shard started), never LATEST: nothing is skipped */
        ks_iterator_expired(sh, now);
        const char *seq;
        int64_t at;
        const char *type = ks_iterator_type(sh, &seq, &at);
        char text[KS_POS_MAX];
        ks_pos_format(&sh->pos, text);
        zx_info("event=kinesis_iterator_expired pipeline=%s shard=%s renew_from=%s "
                "position=\"%s\"", s->name, sh->id, type, text[0] ? text : "none");
        return -100;
    }
    case KA_NOT_FOUND:
        set_error(s, e);
        ks_backoff(sh, now, (uint32_t)zx_now_us());
        s->list_at_ms = 0;
        return -100;
    case KA_RETRY:
        ks_backoff(sh, now, (uint32_t)zx_now_us());
        if (sh->backoff_ms >= 4000)   /* a throttle now and then is normal */
            set_error(s, e);
        return -100;
    default:
        set_error(s, e);
        ks_backoff(sh, now, (uint32_t)zx_now_us());
        return -100;
    }
}

static void arm(kin_state *s, int64_t ms)
{
    if (ms < 1)
        ms = 1;
    struct itimerspec its = {{0, 0}, {ms / 1000, (ms % 1000) * 1000000}};
    timerfd_settime(s->tfd, 0, &its, NULL);
}

static int kin_poll(zx_src *rt, void *state)
{
    kin_state *s = state;
    uint64_t ticks;
    if (read(s->tfd, &ticks, sizeof(ticks)) < 0) {
        /* not expired: nothing to clear */
    }
    if (zx_src_kept(rt) && zx_src_retry(rt, NULL) == ZX_PUB_WAIT)
        return ZX_SRC_BLOCKED;
    int64_t now = zx_mono_ms();
    if (now - s->status_ms >= KIN_STATUS_EVERY_MS)
        set_status(s);
    if (zx_src_stopping(rt)) {
        /* nothing new is read; what is gathered goes out */
        if (s->have_gr) {
            zx_kin_get_records_free(&s->gr);
            s->have_gr = 0;
        }
        return kn_empty(&s->b) ? ZX_SRC_IDLE : publish(s);
    }
    if (s->have_gr) {
        int rc = take_records(s);
        if (rc != -100)
            return rc;
    }
    if (now >= s->list_at_ms) {
        int rc = list_shards(s, now);
        if (rc != -100)
            return rc;
    }
    int64_t wait = -1;
    ks_shard *sh = s->listed ? ks_next(&s->shards, now, &wait) : NULL;
    if (sh) {
        int rc = call_shard(s, sh, now);
        if (rc != -100)
            return rc;
        if (kn_estimate(&s->b) >= s->limit / 2)
            return publish(s);
        return ZX_SRC_BUSY;
    }
    /* nothing due: what is gathered goes out after a short linger */
    if (!kn_empty(&s->b) || s->shards.n) {
        int dirty = 0;
        for (size_t i = 0; i < s->shards.n && !dirty; i++)
            dirty = s->shards.v[i].dirty && s->shards.v[i].pos.kind == KS_AT;
        if (dirty || (!kn_empty(&s->b) &&
                      zx_mono_us() - s->b.first_us >= (int64_t)KIN_LINGER_MS * 1000))
            return publish(s);
    }
    int64_t until_list = s->list_at_ms - now;
    if (wait < 0 || until_list < wait)
        wait = until_list;
    if (!kn_empty(&s->b) && wait > KIN_LINGER_MS)
        wait = KIN_LINGER_MS;
    arm(s, wait);
    return ZX_SRC_IDLE;
}

static int kin_fd(void *state)
{
    kin_state *s = state;
    return s ? s->tfd : -1;
}

static int kin_drained(zx_src *rt, void *state)
{
    (void)rt;
    kin_state *s = state;
    return kn_empty(&s->b);
}

const zx_source zx_source_kinesis = {
    .name = "kinesis",
    .flags = ZX_SOURCE_POSITIONS | ZX_SOURCE_ONE_READER,
    .help = "records of every shard of a Kinesis data stream",
    .open = kin_open,
    .poll = kin_poll,
    .fd = kin_fd,
    .drained = kin_drained,
    .close = kin_close,
};
