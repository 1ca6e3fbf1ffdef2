/*
 * run.h — one run of a reverse sync: the worker the supervisor forks for
 * it (docs/architecture.md §8): the worker (zx_source "sync") of the plug-in
 * of role ZX_PLUGIN_SYNC, run by the worker runtime of
 * workers/sources/source.h; it publishes only row-hashes frames.
 *
 * A run is four stages, one file each (run_int.h): read (run_read.c,
 * with query*.c, hash.c, spill.c), compare (run_compare.c, against the
 * hashes in the store), deliver (run_deliver.c, to a destination of
 * workers/destinations/), record (run_record.c, row-hashes frames to the
 * writer through the worker runtime of workers/sources/); run.c runs them.
 * Rows cross the stages as rows frames in a spill file: read encodes each
 * batch (proto/frame.h), deliver decodes it back into a rowset.
 *
 * A run, in order:
 *   1. the destination is opened (its connection checked: read_only
 *      refused) unless it is a preview;
 *   2. the query runs as the author (query.h), one snapshot; each row's
 *      key hash and row hash are computed (hash.h); upsert and mirror look
 *      each key up in the store (read-only, short transactions) and keep
 *      only rows new or changed; the rows to send, their hashes and every
 *      key go to temporary files (spill.h): memory stays bounded whatever
 *      the result's size;
 *   3. the keys, sorted on disk, are merged: a key seen twice fails the run
 *      naming it, before anything is sent; mirror merges them with the
 *      stored keys (both in key-hash order) to find the keys that
 *      disappeared;
 *   4. a preview stops here and reports counts and a sample;
 *   5. the destination gets begin, the rows, the deletes, commit;
 *   6. only then the new hashes go to the writer in row-hashes frames; the
 *      worker ends once the writer committed them all.
 * A failure anywhere before 6 leaves the store as it was: the next run
 * sends again what this one could not confirm.
 *
 * Bounds: the query has the sync's query_timeout (query.h "Limits": past
 * it, or at a stop, it is ended on the server); all the run's temporary
 * files together have its max_spill_bytes (spill.h budget).  Either fails
 * the run with a message naming the option.
 *
 * What the run did is its status (zx_src_set_status), read by the
 * supervisor when the worker has exited: a JSON object
 *   {"run": "<id>", "state": "succeeded" | "failed" | "previewed",
 *    "phase": ..., "rows_read": N, "rows_inserted": N, "rows_updated": N,
 *    "rows_unchanged": N, "rows_deleted": N, "rows_sent": N,
 *    "rows_failed": N, "values_nulled": N, "bytes": N, "error": "...",
 *    "sample": [row objects], "sample_deletes": [key arrays]}
 * and, while it runs, its progress: "state": "running", "phase":
 * "reading" | "sending" | "recording", "rows_per_second", "seconds_left".
 */
#ifndef ZX_SYNCS_RUN_H
#define ZX_SYNCS_RUN_H

#include "workers/sources/source.h"

extern const zx_source zx_source_sync;

#endif
