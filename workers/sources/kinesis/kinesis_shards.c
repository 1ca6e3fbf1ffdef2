/*
 * kinesis_shards.c — the shard tree, positions and pacing of a Kinesis
 * stream (kinesis_shards.h).
 *
 * It must never: choose LATEST (a restart or an expired iterator would
 * skip records), read a child before its parents are finished, or call a
 * shard more often than KS_CALL_GAP_MS.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/sources/kinesis/kinesis_shards.h"

size_t ks_pos_format(const ks_pos *p, char *out)
{
    int n = 0;
    switch (p->kind) {
    case KS_AFTER:
        n = snprintf(out, KS_POS_MAX, "after %s", p->seq);
        break;
    case KS_WITHIN:
        n = snprintf(out, KS_POS_MAX, "within %s %" PRIu32, p->seq, p->sub);
        break;
    case KS_AT:
        n = snprintf(out, KS_POS_MAX, "at %" PRId64, p->at_ms);
        break;
    case KS_END:
        n = snprintf(out, KS_POS_MAX, "end");
        break;
    case KS_NONE:
        break;
    }
    if (n <= 0 || n >= KS_POS_MAX) {
        out[0] = '\0';
        return 0;
    }
    return (size_t)n;
}

/* A decimal number of at most maxdig digits from s[0..n): its value in *v;
 * -1 when not one. */
static int parse_uint(const char *s, size_t n, unsigned maxdig, uint64_t *v)
{
    if (!n || n > maxdig)
        return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *v = x;
    return 0;
}

static int set_seq(ks_pos *p, const char *s, size_t n)
{
    if (!zx_kin_seq_valid(s, n))
        return -1;
    memcpy(p->seq, s, n);
    p->seq[n] = '\0';
    return 0;
}

int ks_pos_parse(const void *v, size_t len, ks_pos *p)
{
    const char *s = v;
    memset(p, 0, sizeof(*p));
    if (!s || len >= KS_POS_MAX)
        return -1;
    if (len == 3 && !memcmp(s, "end", 3)) {
        p->kind = KS_END;
        return 0;
    }
    if (len > 6 && !memcmp(s, "after ", 6)) {
        p->kind = KS_AFTER;
        return set_seq(p, s + 6, len - 6);
    }
    if (len > 3 && !memcmp(s, "at ", 3)) {
        uint64_t ms;
        /* 13 digits reach the year 2286 */
        if (parse_uint(s + 3, len - 3, 13, &ms) < 0)
            return -1;
        p->kind = KS_AT;
        p->at_ms = (int64_t)ms;
        return 0;
    }
    if (len > 7 && !memcmp(s, "within ", 7)) {
        const char *seq = s + 7, *sp = memchr(seq, ' ', len - 7);
        uint64_t sub;
        if (!sp || parse_uint(sp + 1, (size_t)(s + len - sp - 1), 10, &sub) < 0 ||
            sub > UINT32_MAX - 1)
            return -1;
        p->kind = KS_WITHIN;
        p->sub = (uint32_t)sub;
        return set_seq(p, seq, (size_t)(sp - seq));
    }
    return -1;
}

void ks_init(ks_set *s, ks_start start, int64_t start_ms)
{
    memset(s, 0, sizeof(*s));
    s->start = start;
    s->start_ms = start_ms;
    s->first_start = 1;
}

void ks_free(ks_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].iterator);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

ks_shard *ks_find(ks_set *s, const char *id)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].id, id))
            return &s->v[i];
    return NULL;
}

static ks_shard *add(ks_set *s, const char *id)
{
    if (s->n == s->cap) {
        if (s->cap >= KS_MAX_SHARDS)
            return NULL;
        size_t cap = s->cap ? s->cap * 2 : 16;
        if (cap > KS_MAX_SHARDS)
            cap = KS_MAX_SHARDS;
        ks_shard *v = realloc(s->v, cap * sizeof(*v));
        if (!v)
            return NULL;
        s->v = v;
        s->cap = cap;
    }
    ks_shard *sh = &s->v[s->n++];
    memset(sh, 0, sizeof(*sh));
    snprintf(sh->id, sizeof(sh->id), "%s", id);
    sh->behind_ms = -1;
    return sh;
}

int ks_seed(ks_set *s, const char *id, const ks_pos *p)
{
    if (!zx_kin_shard_id_valid(id, strlen(id)))
        return -2;
    ks_shard *sh = ks_find(s, id);
    if (!sh && !(sh = add(s, id)))
        return -1;
    sh->pos = *p;
    sh->state = p->kind == KS_END ? KS_FINISHED : KS_WAITING;
    s->first_start = 0;
    return 0;
}

/* 1 when the shard called id (a parent) no longer holds back its
 * children: finished, or no longer listed (expired from retention). */
static int parent_done(ks_set *s, const char *id)
{
    if (!id[0])
        return 1;
    ks_shard *p = ks_find(s, id);
    return !p || !p->listed || p->state == KS_FINISHED;
}

static void settle(ks_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        ks_shard *sh = &s->v[i];
        if (sh->state == KS_WAITING && sh->listed && parent_done(s, sh->parent) &&
            parent_done(s, sh->adjacent))
            sh->state = KS_NEEDS_ITERATOR;
    }
}

int ks_listing(ks_set *s, const zx_kin_shard *shards, size_t n, char *err, size_t errlen)
{
    int first = s->first_start;
    for (size_t i = 0; i < s->n; i++)
        s->v[i].listed = 0;
    for (size_t i = 0; i < n; i++) {
        ks_shard *sh = ks_find(s, shards[i].shard_id);
        if (!sh) {
            if (!(sh = add(s, shards[i].shard_id))) {
                if (s->n >= KS_MAX_SHARDS)
                    snprintf(err, errlen, "the stream has more than %d shards (open and "
                             "closed within its retention)", KS_MAX_SHARDS);
                else
                    snprintf(err, errlen, "out of memory");
                return -1;
            }
            if (first && s->start != KS_START_OLDEST) {
                /* a time position at once: a restart before the first
                 * record keeps that time */
                sh->pos.kind = KS_AT;
                sh->pos.at_ms = s->start_ms;
                sh->dirty = 1;
            }
        }
        snprintf(sh->parent, sizeof(sh->parent), "%s",
                 shards[i].parent ? shards[i].parent : "");
        snprintf(sh->adjacent, sizeof(sh->adjacent), "%s",
                 shards[i].adjacent_parent ? shards[i].adjacent_parent : "");
        sh->listed = 1;
    }
    s->first_start = 0;
    settle(s);
    return 0;
}

ks_shard *ks_next(ks_set *s, int64_t now_ms, int64_t *wait_ms)
{
    int64_t soonest = -1;
    for (size_t k = 0; k < s->n; k++) {
        size_t i = (s->rr + k) % s->n;
        ks_shard *sh = &s->v[i];
        if (sh->state != KS_NEEDS_ITERATOR && sh->state != KS_READING)
            continue;
        if (sh->next_call_ms <= now_ms) {
            s->rr = i + 1;
            return sh;
        }
        if (soonest < 0 || sh->next_call_ms - now_ms < soonest)
            soonest = sh->next_call_ms - now_ms;
    }
    if (wait_ms)
        *wait_ms = soonest;
    return NULL;
}

void ks_got_iterator(ks_shard *sh, char *iterator)
{
    free(sh->iterator);
    sh->iterator = iterator;
    sh->state = iterator ? KS_READING : KS_NEEDS_ITERATOR;
}

int ks_got_records(ks_set *s, ks_shard *sh, const char *seq, uint32_t sub, char *next_iterator,
                   int64_t behind_ms, int64_t now_ms)
{
    if (seq) {
        size_t n = strlen(seq);
        if (n <= ZX_KIN_SEQ_MAX) {
            memcpy(sh->pos.seq, seq, n + 1);
            sh->pos.kind = sub == UINT32_MAX ? KS_AFTER : KS_WITHIN;
            sh->pos.sub = sub == UINT32_MAX ? 0 : sub;
            sh->dirty = 1;
        }
    }
    sh->behind_ms = behind_ms;
    sh->backoff_ms = 0;
    sh->next_call_ms = now_ms + KS_CALL_GAP_MS;
    free(sh->iterator);
    sh->iterator = next_iterator;
    if (next_iterator)
        return 0;
    sh->state = KS_FINISHED;
    sh->pos.kind = KS_END;
    sh->dirty = 1;
    settle(s);
    return 1;
}

void ks_iterator_expired(ks_shard *sh, int64_t now_ms)
{
    free(sh->iterator);
    sh->iterator = NULL;
    if (sh->state == KS_READING)
        sh->state = KS_NEEDS_ITERATOR;
    if (sh->next_call_ms < now_ms + KS_CALL_GAP_MS)
        sh->next_call_ms = now_ms + KS_CALL_GAP_MS;
}

void ks_backoff(ks_shard *sh, int64_t now_ms, uint32_t rnd)
{
    uint32_t b = sh->backoff_ms ? sh->backoff_ms * 2 : KS_BACKOFF_MIN_MS;
    if (b > KS_BACKOFF_MAX_MS)
        b = KS_BACKOFF_MAX_MS;
    sh->backoff_ms = b;
    /* between half and all of it */
    sh->next_call_ms = now_ms + b / 2 + rnd % (b / 2 + 1);
}

const char *ks_iterator_type(const ks_shard *sh, const char **seq, int64_t *at_ms)
{
    *seq = NULL;
    *at_ms = -1;
    switch (sh->pos.kind) {
    case KS_AFTER:
        *seq = sh->pos.seq;
        return "AFTER_SEQUENCE_NUMBER";
    case KS_WITHIN:
        *seq = sh->pos.seq;
        return "AT_SEQUENCE_NUMBER";
    case KS_AT:
        *at_ms = sh->pos.at_ms;
        return "AT_TIMESTAMP";
    default:
        return "TRIM_HORIZON";
    }
}

void ks_counts(const ks_set *s, size_t counts[4])
{
    memset(counts, 0, 4 * sizeof(counts[0]));
    for (size_t i = 0; i < s->n; i++)
        counts[s->v[i].state]++;
}
