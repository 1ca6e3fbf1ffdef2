/*
 * metrics.h — zxd's metrics in the Prometheus text exposition format
 * (0.0.4), for the gateway's GET /metrics (docs/architecture.md §2.3).
 *
 * Built by the supervisor from what it already holds: the child table
 * (states, restarts, a sync's ended runs) and the status words and counters of every
 * pipeline's segment header (rows, rejects, frames, bytes, last commit,
 * ring use, the forwarder's status).  It reads memory only: no store, no
 * database, no blocking; one scrape costs O(pipelines).  It sits on the
 * child table's floor (sup.h) and calls nothing above it.
 */
#ifndef ZX_SUPERVISOR_METRICS_H
#define ZX_SUPERVISOR_METRICS_H

#include <stddef.h>

#include "proto/chan.h"
#include "supervisor/sup.h"

/* The most text one scrape makes: past it, whole lines are left out and
 * the text ends with the gauge zx_metrics_truncated 1. */
#define SUP_METRICS_MAX ZX_METRICS_MAX

/* The metrics text of s in a new memfd (sealed against writes, offset
 * 0): returns the fd (the caller closes it) and its length in *len, or
 * -1 with errno (memfd_create, write, out of memory). */
int sup_metrics_memfd(sup *s, size_t *len);

/* len bytes of txt in a new memfd called name (sealed against writes,
 * offset 0; how the supervisor hands the gateway an answer larger than a
 * ZX_CHAN message): the fd (the caller closes it), or -1 with errno. */
int sup_text_memfd(const char *name, const char *txt, size_t len);

/* The same text in a malloc'd NUL-terminated string (the caller frees
 * it), its length in *len; NULL when out of memory. */
char *sup_metrics_text(sup *s, size_t *len);

#endif
