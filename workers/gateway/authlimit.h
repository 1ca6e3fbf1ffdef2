/*
 * authlimit.h — failed token attempts per source address, for the sync
 * API (gateway_api.c): an address that failed `max_failures` times within
 * a window is refused (429) until that window ends.
 *
 * A window starts at an address's first failure and lasts window_ms; the
 * next failure after it starts a new one.  The table holds at most `cap`
 * addresses (memory fixed at creation); when it is full, a new address
 * takes the place of one whose window is over, else of the unblocked one
 * with the oldest window, else of the oldest.  Pure: the caller passes
 * the time, so that tests drive it.
 *
 * It must never: allocate after creation, or grow with the number of
 * addresses seen.
 */
#ifndef ZX_GATEWAY_AUTHLIMIT_H
#define ZX_GATEWAY_AUTHLIMIT_H

#include <stddef.h>
#include <stdint.h>

/* Addresses the gateway tracks at most (about 80 bytes each). */
#define ZX_AUTHLIMIT_ADDRS 4096
/* Longest address kept, NUL included ("[" IPv6 "]" is at most 48). */
#define ZX_AUTHLIMIT_ADDR_MAX 64

typedef struct zx_authlimit zx_authlimit;

/* A table of at most cap addresses (cap >= 1, max_failures >= 1,
 * window_ms >= 1).  Returns NULL when out of memory or given 0.  Free
 * with zx_authlimit_free (NULL is a no-op). */
zx_authlimit *zx_authlimit_new(uint32_t max_failures, uint32_t window_ms, size_t cap);
void zx_authlimit_free(zx_authlimit *l);

/* Milliseconds until addr may try again at now_ms (monotonic), or 0 when
 * it may try now. */
int64_t zx_authlimit_blocked(const zx_authlimit *l, const char *addr, int64_t now_ms);

/* Records a failed attempt of addr at now_ms.  Returns the failures of
 * addr in its current window when this one is the failure that blocks it
 * (the caller logs it: once per window), else 0.  An address longer than
 * ZX_AUTHLIMIT_ADDR_MAX - 1 is cut to it. */
uint32_t zx_authlimit_fail(zx_authlimit *l, const char *addr, int64_t now_ms);

/* Addresses held now (<= cap). */
size_t zx_authlimit_count(const zx_authlimit *l);

/* The address part of a peer as zx_http_peer gives it ("10.0.0.1:5312"
 * -> "10.0.0.1", "[::1]:5312" -> "[::1]") into out (outlen bytes, cut to
 * fit; "" for NULL). */
void zx_authlimit_addr(const char *peer, char *out, size_t outlen);

#endif
