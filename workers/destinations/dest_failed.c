/*
 * dest_failed.c — what a destination reports of the batches and rows it
 * could not deliver (dest.h): zx_dest_note_error, zx_dest_row_failed and
 * zx_dest_key_failed.  The run (workers/syncs/run_deliver.c) owns the
 * callback behind the last two.  Linked into every destination.
 */
#include <stdio.h>
#include <string.h>

#include "workers/destinations/dest.h"

void zx_dest_note_error(zx_dest_stats *st, const char *why)
{
    if (!st || st->first_error[0] || !why || !why[0])
        return;
    /* one line: a newline of the peer's text would split a log line */
    size_t k = 0;
    for (; why[k] && k + 1 < sizeof(st->first_error); k++)
        st->first_error[k] = why[k] == '\n' || why[k] == '\r' ? ' ' : why[k];
    st->first_error[k] = '\0';
}

void zx_dest_row_failed(const zx_dest_run *run, uint32_t row, const char *why)
{
    if (run && run->failed)
        run->failed(run->failed_ctx, row, 0, why ? why : "refused");
}

void zx_dest_key_failed(const zx_dest_run *run, uint32_t row, const char *why)
{
    if (run && run->failed)
        run->failed(run->failed_ctx, row, 1, why ? why : "refused");
}
