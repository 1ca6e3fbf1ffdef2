/*
 * generate.c — the worker of `source: generate` (generate.h): rows from
 * the `fields` template, paced by `rate`, published in frames that carry
 * the next sequence number as their position.
 *
 * Why the sequence is unique and gap-free across restarts: a frame's rows
 * and its position are committed by the writer in one transaction, the
 * runtime hands open() the last committed position only after every frame
 * of an earlier incarnation is committed, and a frame kept by the runtime
 * (ZX_PUB_WAIT) is published before any other.  So the next incarnation
 * starts exactly after the last row committed.
 *
 * It must never: block (the pacing waits on a timerfd the runtime polls),
 * or make rows while stopping.
 */
#include "workers/sources/generate/generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/timefmt.h"
#include "common/util.h"
#include "conf/plugin.h"
#include "workers/sources/generate/gen_core.h"
#include "workers/sources/source.h"

#define MAX_BATCH 10000u      /* rows per frame at most */
#define FRAMES_PER_S 100u     /* paced: about this many frames a second */

typedef struct gen_state {
    zx_gen_template t;
    zx_gen_pace pace;
    zx_gen_rng rng;
    zx_rowset rs;
    uint64_t next;            /* the next sequence number (the position) */
    uint64_t count;           /* 0: no end */
    uint64_t per_s;           /* 0: max */
    uint64_t batch;           /* rows per frame at most (halved on TOO_BIG) */
    int tfd;                  /* timerfd for the pacing, or -1 */
    int64_t status_ms;        /* when the status was last set */
    int done;                 /* count reached and told */
} gen_state;

int zx_generate_check(const zx_conf_pipeline *p, const zx_generate_opts *o, char *err,
                      size_t errlen)
{
    char why[400];
    uint64_t per_s;
    zx_gen_template t;
    if (zx_gen_rate_parse(o->rate ? o->rate : "max", &per_s, why, sizeof(why)) < 0)
        return zx_seterr(err, errlen, "pipeline %s: %s", p->name, why);
    if (zx_gen_template_parse((const char *const *)o->field_names,
                              (const char *const *)o->field_specs, o->nfields, &t, why,
                              sizeof(why)) < 0)
        return zx_seterr(err, errlen, "pipeline %s: %s", p->name, why);
    zx_gen_template_free(&t);
    return 0;
}

static void set_status(zx_src *rt, gen_state *s, const char *state)
{
    char js[256];
    if (s->count)
        snprintf(js, sizeof(js), "{\"state\":\"%s\",\"rows\":%llu,\"count\":%llu}", state,
                 (unsigned long long)s->next, (unsigned long long)s->count);
    else
        snprintf(js, sizeof(js), "{\"state\":\"%s\",\"rows\":%llu}", state,
                 (unsigned long long)s->next);
    zx_src_set_status(rt, js);
    s->status_ms = zx_mono_ms();
}

static void gen_close(zx_src *rt, void *state)
{
    (void)rt;
    gen_state *s = state;
    if (!s)
        return;
    zx_gen_template_free(&s->t);
    zx_rowset_free(&s->rs);
    if (s->tfd >= 0)
        close(s->tfd);
    free(s);
}

/* The committed position: the next sequence number.  0, or -1 with err. */
static int load_next(zx_src *rt, uint64_t *next, char *err, size_t errlen)
{
    const void *val;
    size_t len;
    *next = 0;
    if (zx_src_position_find(rt, ZX_GEN_PART, &val, &len) < 0)
        return 0;
    if (len != 8)
        return zx_seterr(err, errlen, "the stored position is %zu bytes, not 8", len);
    const unsigned char *b = val;
    for (int i = 0; i < 8; i++)
        *next = (*next << 8) | b[i];
    return 0;
}

static int gen_open(zx_src *rt, void **state, char *err, size_t errlen)
{
    const zx_conf_pipeline *p = zx_src_args(rt)->pipeline;
    const zx_generate_opts *o = p->own;
    if (!o)
        return zx_seterr(err, errlen, "pipeline %s: no options", p->name);
    gen_state *s = calloc(1, sizeof(*s));
    if (!s)
        return zx_seterr(err, errlen, "out of memory");
    s->tfd = -1;
    zx_rowset_init(&s->rs);
    *state = s;
    char why[400];
    /* checked at load already: a failure here is a refusal, not a retry */
    if (zx_gen_rate_parse(o->rate ? o->rate : "max", &s->per_s, why, sizeof(why)) < 0 ||
        zx_gen_template_parse((const char *const *)o->field_names,
                              (const char *const *)o->field_specs, o->nfields, &s->t, why,
                              sizeof(why)) < 0) {
        zx_seterr(err, errlen, "pipeline %s: %s", p->name, why);
        return ZX_SRC_REFUSED;
    }
    if (load_next(rt, &s->next, err, errlen) < 0)
        return -1;
    uint64_t seed;
    if (zx_random(&seed, sizeof(seed)) < 0)
        seed = (uint64_t)zx_now_us() ^ ((uint64_t)getpid() << 32);
    zx_gen_rng_seed(&s->rng, seed);
    s->count = o->count;
    s->batch = MAX_BATCH;
    if (s->per_s) {
        s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (s->tfd < 0)
            return zx_seterr(err, errlen, "timerfd_create failed");
    }
    zx_gen_pace_start(&s->pace, s->per_s, zx_mono_us());
    set_status(rt, s, "generating");
    return 0;
}

/* Wake the runtime in us microseconds (at least 1). */
static void arm(gen_state *s, int64_t us)
{
    if (us < 1)
        us = 1;
    struct itimerspec its = {{0, 0}, {us / 1000000, (us % 1000000) * 1000}};
    timerfd_settime(s->tfd, 0, &its, NULL);
}

/* Make up to n rows into s->rs and publish them; the poll answer. */
static int emit(zx_src *rt, gen_state *s, uint64_t n)
{
    uint64_t cap = zx_src_max_frame(rt) / 4, made = 0;
    zx_rowset_reset(&s->rs);
    while (made < n && (made == 0 || zx_frame_estimate(&s->rs) < cap)) {
        if (zx_gen_row(&s->t, &s->rs, s->next + made, zx_now_us(), &s->rng) < 0) {
            zx_src_set_error(rt, "out of memory making rows");
            return ZX_SRC_FATAL;
        }
        made++;
    }
    uint64_t after = s->next + made;
    unsigned char pos[8];
    for (int i = 0; i < 8; i++)
        pos[i] = (unsigned char)(after >> (56 - 8 * i));
    zx_frame_pos fp = {.part = ZX_GEN_PART, .value = pos, .value_len = sizeof(pos)};
    zx_frame_meta m = {0};
    m.kind = ZX_FRAME_ROWS;
    m.positions = &fp;
    m.npositions = 1;
    m.accepted = made;
    m.ingested_at_us = zx_now_us();   /* the writer's commit latency metric */
    zx_pub_result r = zx_src_publish(rt, &m, &s->rs, NULL);
    zx_rowset_reset(&s->rs);
    if (r == ZX_PUB_TOO_BIG && made > 1) {
        s->batch = made / 2;   /* nothing of it went out: make fewer */
        return ZX_SRC_BUSY;
    }
    if (r != ZX_PUB_OK && r != ZX_PUB_WAIT) {
        zx_src_set_error(rt, r == ZX_PUB_NOMEM ? "out of memory encoding a frame"
                                               : "one row is larger than the ring takes");
        return ZX_SRC_FATAL;
    }
    /* published, or kept by the runtime (published before any other) */
    s->next = after;
    zx_gen_pace_made(&s->pace, made);
    return r == ZX_PUB_WAIT ? ZX_SRC_BLOCKED : ZX_SRC_BUSY;
}

static int gen_poll(zx_src *rt, void *state)
{
    gen_state *s = state;
    uint64_t ticks;
    if (s->tfd >= 0 && read(s->tfd, &ticks, sizeof(ticks)) < 0) {
        /* not expired yet (EAGAIN): nothing to clear */
    }
    if (zx_src_kept(rt) && zx_src_retry(rt, NULL) == ZX_PUB_WAIT)
        return ZX_SRC_BLOCKED;
    if (zx_src_stopping(rt))
        return ZX_SRC_IDLE;
    if (s->count && s->next >= s->count) {
        if (!s->done) {
            s->done = 1;
            set_status(rt, s, "done");
            zx_src_feed(rt, "generate_done", "every row of `count` was made");
        }
        return ZX_SRC_IDLE;
    }
    if (zx_mono_ms() - s->status_ms >= 1000)
        set_status(rt, s, "generating");
    uint64_t want = s->batch;
    if (s->count && s->count - s->next < want)
        want = s->count - s->next;
    int64_t now = zx_mono_us();
    uint64_t due = zx_gen_pace_due(&s->pace, now, want);
    if (s->per_s) {
        /* paced: frames of about per_s / FRAMES_PER_S rows, not one row each */
        uint64_t chunk = s->per_s / FRAMES_PER_S;
        if (chunk < 1)
            chunk = 1;
        if (chunk > want)
            chunk = want;
        if (due < chunk) {
            arm(s, zx_gen_pace_wait_us(&s->pace, now, chunk));
            return ZX_SRC_IDLE;
        }
    }
    return emit(rt, s, due);
}

static int gen_fd(void *state)
{
    gen_state *s = state;
    return s ? s->tfd : -1;
}

const zx_source zx_source_generate = {
    .name = "generate",
    .flags = ZX_SOURCE_POSITIONS,
    .help = "rows made from a template of fields, at a rate or as fast as the ring takes them",
    .open = gen_open,
    .poll = gen_poll,
    .fd = gen_fd,
    .close = gen_close,
};
