/*
 * writer_metrics.c — what the writer adds to a pipeline's segment for
 * GET /metrics after each commit (common/segment.h: values_nulled,
 * columns_added, commit_lat, txn_rows; supervisor/metrics.c prints them).
 *
 * It must never: count a frame before its commit, or write outside the
 * histograms' slots (a latency below zero, a clock step back, counts as
 * the first slot).
 */
#include "workers/writer/writer_int.h"

#include <stdatomic.h>

/* The slot of v among bounds (n of them, growing): the first bound v does
 * not pass, or n. */
static size_t slot_of(uint64_t v, const uint64_t *bounds, size_t n)
{
    size_t k = 0;
    while (k < n && v > bounds[k])
        k++;
    return k;
}

void wr_metrics_frame(const applied *a, int64_t now_us, uint64_t cycle)
{
    static const uint64_t lat[] = ZX_SEG_LAT_BOUNDS_US;
    _Static_assert(sizeof(lat) / sizeof(lat[0]) + 1 == ZX_SEG_LAT_SLOTS, "latency slots");
    zx_seg_hdr *h = a->p->seg.hdr;
    uint64_t nulled = 0;
    for (size_t k = 0; k < a->nrejcols; k++)
        nulled += a->rejcols[k].count;
    if (nulled)
        atomic_fetch_add_explicit(&h->values_nulled, nulled, memory_order_relaxed);
    if (a->nnewcols)
        atomic_fetch_add_explicit(&h->columns_added, a->nnewcols, memory_order_relaxed);
    if (a->fence_dup)
        atomic_fetch_add_explicit(&h->fence_duplicates, 1, memory_order_relaxed);
    if (a->fence_gap)
        atomic_fetch_add_explicit(&h->fence_gaps, 1, memory_order_relaxed);

    if (a->ingested_at_us > 0) {
        uint64_t us = now_us > a->ingested_at_us ? (uint64_t)(now_us - a->ingested_at_us) : 0;
        size_t k = slot_of(us, lat, sizeof(lat) / sizeof(lat[0]));
        atomic_fetch_add_explicit(&h->commit_lat[k], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&h->commit_lat_sum_us, us, memory_order_relaxed);
    }
    wpipe *p = a->p;
    if (p->txn_cycle != cycle) {
        p->txn_cycle = cycle;
        p->txn_rows = 0;
    }
    p->txn_rows += a->rows;
}

void wr_metrics_txn(wpipe *p, uint64_t cycle)
{
    static const uint64_t txn[] = ZX_SEG_TXN_BOUNDS;
    _Static_assert(sizeof(txn) / sizeof(txn[0]) + 1 == ZX_SEG_TXN_SLOTS, "transaction slots");
    if (p->txn_cycle != cycle)
        return;
    zx_seg_hdr *h = p->seg.hdr;
    size_t k = slot_of(p->txn_rows, txn, sizeof(txn) / sizeof(txn[0]));
    atomic_fetch_add_explicit(&h->txn_rows[k], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->txn_rows_sum, p->txn_rows, memory_order_relaxed);
    p->txn_cycle = 0;   /* counted: the cycle's later frames of p do nothing */
}
