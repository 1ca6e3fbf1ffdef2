/*
 * authlimit.c — failed token attempts per source address (authlimit.h):
 * a fixed array scanned linearly (4,096 entries at most: a few µs per
 * API request, which waits for the supervisor anyway).
 *
 * It must never: allocate after zx_authlimit_new.
 */
#include "workers/gateway/authlimit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char addr[ZX_AUTHLIMIT_ADDR_MAX];   /* "" = free */
    int64_t start_ms;                   /* its window's first failure */
    uint32_t failures;                  /* in that window */
} entry;

struct zx_authlimit {
    uint32_t max_failures;
    uint32_t window_ms;
    size_t cap, n;                      /* entries[0..n) are in use */
    entry *e;
};

zx_authlimit *zx_authlimit_new(uint32_t max_failures, uint32_t window_ms, size_t cap)
{
    if (!max_failures || !window_ms || !cap)
        return NULL;
    zx_authlimit *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->e = calloc(cap, sizeof(*l->e));
    if (!l->e) {
        free(l);
        return NULL;
    }
    l->max_failures = max_failures;
    l->window_ms = window_ms;
    l->cap = cap;
    return l;
}

void zx_authlimit_free(zx_authlimit *l)
{
    if (!l)
        return;
    free(l->e);
    free(l);
}

static entry *find(const zx_authlimit *l, const char *addr)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->e[i].addr, addr))
            return &l->e[i];
    return NULL;
}

static int over(const zx_authlimit *l, const entry *e, int64_t now_ms)
{
    return now_ms - e->start_ms >= (int64_t)l->window_ms;
}

static int blocking(const zx_authlimit *l, const entry *e, int64_t now_ms)
{
    return e->failures >= l->max_failures && !over(l, e, now_ms);
}

/* The entry a new address takes when the table is full. */
static entry *victim(zx_authlimit *l, int64_t now_ms)
{
    entry *unblocked = NULL, *oldest = NULL;
    for (size_t i = 0; i < l->n; i++) {
        entry *e = &l->e[i];
        if (over(l, e, now_ms))
            return e;
        if (!blocking(l, e, now_ms) && (!unblocked || e->start_ms < unblocked->start_ms))
            unblocked = e;
        if (!oldest || e->start_ms < oldest->start_ms)
            oldest = e;
    }
    return unblocked ? unblocked : oldest;
}

int64_t zx_authlimit_blocked(const zx_authlimit *l, const char *addr, int64_t now_ms)
{
    char a[ZX_AUTHLIMIT_ADDR_MAX];
    snprintf(a, sizeof(a), "%s", addr ? addr : "");
    const entry *e = l ? find(l, a) : NULL;
    if (!e || !blocking(l, e, now_ms))
        return 0;
    return e->start_ms + (int64_t)l->window_ms - now_ms;
}

uint32_t zx_authlimit_fail(zx_authlimit *l, const char *addr, int64_t now_ms)
{
    if (!l)
        return 0;
    char a[ZX_AUTHLIMIT_ADDR_MAX];
    snprintf(a, sizeof(a), "%s", addr ? addr : "");
    entry *e = find(l, a);
    if (!e) {
        e = l->n < l->cap ? &l->e[l->n++] : victim(l, now_ms);
        memcpy(e->addr, a, sizeof(a));
        e->start_ms = now_ms;
        e->failures = 0;
    } else if (over(l, e, now_ms)) {
        e->start_ms = now_ms;
        e->failures = 0;
    }
    if (e->failures < UINT32_MAX)
        e->failures++;
    return e->failures == l->max_failures ? e->failures : 0;
}

size_t zx_authlimit_count(const zx_authlimit *l)
{
    return l ? l->n : 0;
}

void zx_authlimit_addr(const char *peer, char *out, size_t outlen)
{
    if (!outlen)
        return;
    if (!peer) {
        out[0] = 0;
        return;
    }
    const char *colon = strrchr(peer, ':');
    /* "[::1]:5312": the port follows the bracket; "::1" alone has none */
    size_t n = strlen(peer);
    if (peer[0] == '[') {
        const char *rb = strchr(peer, ']');
        n = rb ? (size_t)(rb - peer) + 1 : n;
    } else if (colon && strchr(peer, ':') == colon) {
        n = (size_t)(colon - peer);
    }
    snprintf(out, outlen, "%.*s", (int)n, peer);
}
