/*
 * catchup.c — see catchup.h.
 */
#include "workers/sources/catchup.h"

#include <inttypes.h>
#include <stdio.h>

int zx_catchup_update(zx_catchup *c, int64_t now_us, uint64_t read, int64_t left,
                      int64_t behind_ms, zx_catchup_view *v)
{
    if (c->active && read < c->base)
        zx_catchup_rebase(c, read);           /* the count began again */
    if (!c->active) {
        int far = (left >= ZX_CATCHUP_START_MSGS) || (behind_ms >= ZX_CATCHUP_START_MS);
        if (!far)
            return 0;
        c->active = 1;
        c->started_us = now_us;
        c->base = read;
        c->carried = c->done = 0;
    } else {
        /* ended only when every known figure says near (an unknown one
         * is no news) and at least one is known */
        int known = left >= 0 || behind_ms >= 0;
        int near = (left < 0 || left < ZX_CATCHUP_END_MSGS) &&
                   (behind_ms < 0 || behind_ms < ZX_CATCHUP_END_MS);
        if (known && near) {
            c->active = 0;
            return 0;
        }
    }
    v->done = c->done = c->carried + (read - c->base);
    v->expected = 0;
    if (left >= 0 && (uint64_t)left <= UINT64_MAX - v->done)
        v->expected = v->done + (uint64_t)left;
    v->started_us = c->started_us;
    return 1;
}

void zx_catchup_rebase(zx_catchup *c, uint64_t read)
{
    if (c->active) {
        c->carried = c->done;
        c->base = read;
    }
}

char *zx_catchup_what(char *buf, size_t cap, const char *label, int64_t behind_ms)
{
    if (!cap)
        return buf;
    char when[48] = "";
    if (behind_ms >= 3600000)
        snprintf(when, sizeof(when), ", %" PRId64 " h %" PRId64 " min behind",
                 behind_ms / 3600000, behind_ms / 60000 % 60);
    else if (behind_ms >= 60000)
        snprintf(when, sizeof(when), ", %" PRId64 " min %" PRId64 " s behind",
                 behind_ms / 60000, behind_ms / 1000 % 60);
    else if (behind_ms >= 1000)
        snprintf(when, sizeof(when), ", %" PRId64 " s behind", behind_ms / 1000);
    if (label && *label)
        snprintf(buf, cap, "catching up on %s%s", label, when);
    else
        snprintf(buf, cap, "catching up%s", when);
    return buf;
}
