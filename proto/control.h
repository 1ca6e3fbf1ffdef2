/*
 * control.h — the control protocol between zxctl and zxd, version 1.
 *
 * This is the one place the protocol is defined.  Transport: a Unix stream
 * socket (server.control_socket, mode 0600, peer credentials checked).
 * Each message is one JSON object on one line ('\n'-terminated, at most
 * ZX_CTL_MAX_LINE bytes).  The client sends one request; the server answers
 * with one response line and closes, except `feed` with "follow": true,
 * which keeps sending event lines until the client disconnects.
 *
 * Request:  {"v": 1, "cmd": "<command>", ...arguments}
 * Response: {"ok": true, ...result}  or  {"ok": false, "error": "<message>",
 *           "errors": ["file:line:column: message", ...]   (reload only)}
 *
 * Commands and results:
 *   status                → {"ok":true, "version":"0.1.0", "pid":N,
 *                            "config":"/abs/path.yaml", "started_at":"RFC3339",
 *                            "processes":[PROC...], "pipelines":[PIPE...],
 *                            "rings":{"shared_bytes":N, "budget_bytes":N}}
 *                           (what every pipeline's segment maps, and
 *                            server.ring_budget)
 *       PROC = {"name":"writer"|"gateway", "pid":N|null, "state":STATE,
 *               "restarts":N, "last_error":"..."|null}
 *       PIPE = {"name":"web_events", "source":"http", "table":"web_events",
 *               "pid":N|null, "state":STATE, "restarts":N,
 *               "rows":N, "rejects":N, "rejects_by_column":{"col":N,...},
 *               "last_error":"..."|null,
 *               "extra_values":N (values kept in _extra beyond max_columns),
 *               "resumed":{"stored_at":"RFC3339", "positions":N}|null (it
 *                  started with positions or state stored before: zxd's
 *                  start, or re-added with state not dropped; N upstream
 *                  positions, 0 for state alone),
 *               "ring":RING (the frames ring, as in "rings"),
 *               "rings":{"in":RING, "out":RING, "frames":RING,
 *                        "shared_bytes":N}}
 *       RING = {"published":SEQ, "acked":SEQ, "used_bytes":N, "capacity":N}
 *              what the ring holds: records published, records the reader
 *              released, bytes in use, capacity in bytes
 *       STATE = "starting" | "running" | "backoff" | "failed" | "stopped"
 *               | "draining" | "blocked" | "idle" (a sync between runs)
 *               | "standby" (a shared workspace: another zxd holds its
 *                 lease; "standby" and last_error say which)
 *       PIPE also has "lease": {"name", "held", "holder", "since"} | null
 *   reload                → answered once the transitions are done (at
 *                           most 30 s):
 *                           {"ok":true, "added":[names], "changed":[names],
 *                            "removed":[names], "unchanged":[names],
 *                            "failed":[]}
 *                           or, when the file was rejected (nothing changed):
 *                           {"ok":false, "error":"configuration invalid;
 *                            still running the previous one", "errors":[...]}
 *                           or, when the new configuration runs but some of
 *                           its pipelines could not be started: the first
 *                           form with "ok":false, "error":"the new
 *                           configuration is running, but N pipelines could
 *                           not be started: a, b", "errors":["pipeline a:
 *                           why", ...] and "failed":[{"name":N,
 *                           "error":"..."}].  One reload at a time: another
 *                           request meanwhile gets ok:false.
 *   restart {"name":N}    → {"ok":true}            (pipeline or "writer"/"gateway")
 *   stop    {"name":N}    → {"ok":true}            (pipeline only; state "stopped")
 *   start   {"name":N}    → {"ok":true}            (a stopped or failed pipeline)
 *   checkpoints {"name":N}→ {"ok":true, "pipeline":N, "seq":SEQ,
 *                            "committed_at":"RFC3339"|null,
 *                            "table":"...", "schema":[{"name":..,"type":..}],
 *                            "rows":N, "rejects":N,
 *                            "rejects_by_column":{...},
 *                            "idempotency_keys":N}
 *   progress {"name":N}   → {"ok":true, "pipeline":N, "progress":PROGRESS|null,
 *                            a reverse sync's also "run":ID|null (its run
 *                            now) and "state" (that run's, or "idle")}
 *       PROGRESS = {"what":"reading"|"copying public.orders"|..., "done":N,
 *              "expected":N|null, "exact":bool, "percent":P|null,
 *              "rate":rows/s over the last ~5 s, "eta_seconds":S|null,
 *              "started_at", "updated_at", "line":"human readable"};
 *              `status` has it too, as each pipeline's "progress"
 *   test {"name":N}       → answered once the prober is done (about 13 s at
 *                           most): {"ok":true, "name":N, "source":S,
 *                            "result":"..."} or {"ok":false, "name":N,
 *                            "error":"..."}
 *   verify {"name":N, "table":T?, "repair":bool}
 *                         → answered once done (about 10 minutes at most):
 *                           the answer of workers/verify/verify.h ({"ok":true,
 *                            "name":N, "at":..., "compared":N, "differing":D,
 *                            "repaired":R?, "tables":[...]}) or {"ok":false,
 *                            "name":N?, "error":"..."}
 *   drop-slot {"name":SLOT, "connection":C?}
 *                         → answered once done (about 2 minutes at most):
 *                           {"ok":true, "name":SLOT, "result":"connection C:
 *                            replication slot SLOT dropped on Postgres
 *                            DSN_SHOWN; publication ..." (one line per
 *                            connection it was dropped on, '\n' between),
 *                            "dropped_on":[C...]}; or {"ok":false,
 *                            "error":"...", "errors":[more lines]}: the slot
 *                           of a configured pipeline, no such connection of
 *                           kind postgres, a slot still in use (the process
 *                           holding it named), or no connection has it
 *                           ("no configured postgres connection has
 *                           replication slot SLOT (looked at: ...)")
 *   run {"name":N, "wait":bool, "full":bool}
 *                         → a reverse sync's run is queued (started at once
 *                           unless one of the sync runs): RUN, with "ok":true
 *                           and "run":ID; with "wait", answered when it ends
 *                           ("ok":false when it failed)
 *   preview {"name":N}    → answered when done: RUN in state "previewed",
 *                           with "sample" and "sample_deletes"
 *   runs {"name":N, "limit":L?}
 *                         → {"ok":true, "sync":N, "runs":[RUN...]} newest
 *                           first (default 20)
 *   approve {"run":ID} | reject {"run":ID}
 *                         → RUN: an agent's run awaiting approval is queued
 *                           (its "preview" shown) or rejected
 *   send {"query":Q, "mode":M, "connection":C, "table":T | "path":P,
 *         "format":F, "key":[..]?}
 *                         → answered when done: RUN of a one-off send, as
 *                           the author whose operators list the caller
 *       RUN = {"id":"<u64>", "sync":N, "state":"queued" | "previewing" |
 *              "awaiting_approval" | "running" | "succeeded" | "failed" |
 *              "rejected" | "previewed", "trigger":"...", "created_at",
 *              "started_at", "ended_at" (RFC3339 or null), "rows_read",
 *              "rows_inserted", "rows_updated", "rows_unchanged",
 *              "rows_sent", "rows_deleted", "rows_failed", "values_nulled",
 *              "bytes", "mode", "author", "error":"..."|null,
 *              "preview":{...}? (an agent's run)}
 *   feed {"follow":bool}  → {"ok":true} then zero or more EVENT lines: the
 *                           recent history (up to ZX_FEED_HISTORY events),
 *                           then, with follow, every new event as it happens.
 *                           (The same events, each with an id, are served
 *                           as server-sent events at the gateway's GET
 *                           /api/feed: workers/gateway/gateway_feed.h.)
 *       EVENT = {"ts":"RFC3339", "event":KIND, "pipeline":N|null,
 *                "message":"human readable", ...kind-specific fields}
 *       KIND  = "batch"   (rows, rejects, table, seq, frames) one per
 *                         pipeline and table per writer transaction
 *             | "schema"  (table, column, type)   one per column added/created
 *             | "rejects" (table, count, columns) a burst of misfit values
 *             | "columns_capped" (table, max_columns, column, first_field)
 *                         once per table and cap: fields beyond max_columns
 *                         go to the JSON column _extra
 *             | "restart" (process, pid, reason)
 *             | "failed"  (process, reason)
 *             | "reload"  (ok, added, changed, removed, errors)
 *             | "error"   (seq) the writer holds a pipeline's frames back
 *                         because its table refuses them (retried)
 *             | "start" | "stop" (process, pid)
 *             | "run"     a reverse sync's run started or ended (its record:
 *                         id, sync, state, trigger, rows_*, error)
 *             | "progress" (PROGRESS's fields but "line", which is the
 *                         message) at most every 5 s per pipeline while
 *                         long work runs (a sync run, an initial copy)
 *             | "slot_dropped" | "slot_kept" | "slot_drop_failed" (slot)
 *                         a Postgres pipeline's replication slot after a
 *                         reload removed the pipeline or moved it off the
 *                         slot ("pipeline" set), or `drop-slot` ("pipeline"
 *                         null); "message" says what was done.  Generally
 *                         <what>_dropped | _kept | _drop_failed (<what>)
 *                         for a source's retire hook (zx_source.retire_what)
 *             | "lease_held" | "standby" | "lease_lost" a shared
 *                         workspace's lease of the pipeline (its worker
 *                         runs here, another zxd holds it, or this zxd
 *                         lost it: supervisor/lease.c, writer_lease.c)
 *             | "state_dropped" | "state_kept" | "state_drop_failed"
 *                         a removed pipeline's positions and state in the
 *                         store and workspace (workers/writer/forget.h)
 *
 * Errors: unknown command or bad arguments → ok:false with a message.
 * Limits: at most 64 connections at once (at most 32 of them feed
 * followers); beyond, the server answers {"ok":false, "error":"too many
 * control connections ..."} and closes.  A request must arrive, and its
 * answer be read, within 10 s of each other's progress (followers wait for
 * events without limit; one that reads nothing for 1 MiB is dropped).
 * zxctl exit codes: 0 ok, 1 the daemon answered ok:false, 2 usage error,
 * 3 daemon unreachable (no socket, connection refused, bad answer).
 */
#ifndef ZX_PROTO_CONTROL_H
#define ZX_PROTO_CONTROL_H

#define ZX_CTL_VERSION 1
#define ZX_CTL_MAX_LINE (1024 * 1024)
#define ZX_FEED_HISTORY 200

/* zxctl exit codes */
#define ZX_EXIT_OK 0
#define ZX_EXIT_DAEMON_ERROR 1
#define ZX_EXIT_USAGE 2
#define ZX_EXIT_UNREACHABLE 3
#define ZX_EXIT_DIFFERENCES 4   /* zxctl verify: the mirror differs */

/* zxd exit code for "fatal configuration error, do not respawn" (nginx's 2) */
#define ZX_EXIT_FATAL_CONFIG 2

#endif
