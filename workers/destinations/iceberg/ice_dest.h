/*
 * ice_dest.h — the parts of the "iceberg" destination (dest_iceberg.c)
 * and what they share: one run's state (ice_state), the view of the
 * table's current snapshot (ice_view), and the calls between the parts:
 *
 *   dest_iceberg.c   open, begin (the table loaded or created, its
 *                    partitions), the run's data files, commit, abort;
 *                    where the table's files are (ice_rel_of, ice_uri_of,
 *                    ice_get_uri) and its load (ice_load);
 *   ice_view.c       the live data and delete files of the current
 *                    snapshot, from its manifest list and manifests;
 *   ice_changes.c    what an upsert or mirror run does to the files it
 *                    finds: position deletes (merge-on-read) or rewrites
 *                    (copy-on-write);
 *   ice_snapshot.c   the run's manifests, the manifest list, the snapshot
 *                    and one commit try (ice_attempt);
 *   ice_expire.c     after a commit that expired snapshots, the files zx
 *                    wrote that no kept snapshot uses deleted.
 *
 * Internal to the destination: nothing else includes it.  A state is one
 * run's, one thread's.  Errors: -1 with one line in err naming the table
 * (st->where).
 */
#ifndef ZX_DEST_ICE_DEST_H
#define ZX_DEST_ICE_DEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "conf/config.h"
#include "formats/parquet.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/iceberg/ice_catalog.h"
#include "workers/destinations/iceberg/ice_manifest.h"
#include "workers/destinations/lake/lake_part.h"
#include "workers/destinations/lake/lake_store.h"
#include "workers/destinations/lake/lake_writer.h"

#define COMMIT_TRIES 10
#define META_MAX ((size_t)256 << 20)
/* zx's live position delete files at which a run compacts them into its
 * own (ice_changes.c): what a reader applies stays bounded */
#define ICE_DELETE_FILES_MAX 16

/* A data file the run added: its manifest entry's fields (owned). */
typedef struct ice_file {
    char *path;                  /* full URI */
    int64_t size, rows;
    zx_ice_count *counts;        /* sizes, values, nulls, nans: ncols each */
    size_t nsizes, nvalues, nnulls, nnans;
    zx_ice_bound *bounds;        /* lower then upper: ncols each */
    size_t nlower, nupper;
    uint8_t *bytes;              /* the bounds' bytes */
    zx_ice_pvalue pv[ZX_PART_MAX];  /* its partition (strings in pvmem) */
    char *pvmem;
} ice_file;

/* A live data file of the current snapshot, as its manifest has it. */
typedef struct ice_live {
    const zx_ice_entry *e;
    size_t manifest;             /* index into the manifest list */
    int removed;                 /* the run removes it */
} ice_live;

typedef struct ice_state {
    char *sync, *ns, *name;
    char where[600];             /* "iceberg <catalog> <ns>.<table>" */
    const zx_conf *conf;
    const zx_conf_connection *aws, *catconn;
    char **roots;                /* the file roots (copied: args' are open's only) */
    size_t nroots;
    int64_t deadline_ms;
    zx_pq_codec codec;
    uint32_t file_rows, keep;
    zx_icecat *cat;

    /* the run */
    int running, already, side, cow, create;
    zx_dest_stats *stats;
    zx_sync_mode mode;
    uint64_t run_id;
    const zx_dcol *cols;
    size_t ncols;
    const char *key0;
    int32_t *field_ids, key0_id;
    zx_part parts[ZX_PART_MAX];  /* the table's default spec, as transforms */
    size_t nparts;
    zx_ice_pfield pfields[ZX_PART_MAX];
    char pnames[ZX_PART_MAX][96];
    int32_t spec_id;
    char *spec_json;             /* its fields array as JSON text */
    zx_icecat_table tbl;         /* the table as last read */
    json_t *base_manifests;      /* the manifest paths of the snapshot the run
                                    started from (replace: what it replaces) */
    char *location;              /* the table's location ("s3://b/p", "file:/x") */
    zx_lake *lake;               /* its files */
    json_t *schema;              /* the schema the run writes with */
    int schema_changed;
    int32_t last_column_id;
    zx_lake_writer *lw;
    ice_file *files;
    size_t nfiles, capfiles;
    json_t *removed;             /* paths (URIs) of the files the run removes */
    int rewritten;               /* copy-on-write done */
    int mor;                     /* upsert / mirror by position deletes
                                    (merge-on-read) instead of rewrites */
    int fresh;                   /* upsert / mirror into a table without data
                                    files: no key is tracked (lake_writer.h) */
    json_t *touched;             /* the data files its deletes point at */
    char *del_manifest_path;     /* the delete manifest, once written */
    zx_ice_mfile del_manifest;
    void *del_manifest_mem;
    int64_t del_rows;            /* position deletes the run adds */
    int64_t del_files;           /* in that many delete files (one a partition) */
    int compacted;               /* they carry the positions of zx's older
                                    delete files, whose manifests the
                                    snapshot drops */
    int tried;                   /* commits tried */
    char *manifest_path;         /* the run's manifest, once written */
    zx_ice_mfile manifest;       /* its manifest_file */
    void *manifest_mem;          /* its partition summaries */
    json_t *written_meta;        /* metadata files the run wrote (abort) */
} ice_state;

/* The live files of the table's current snapshot (its manifests read:
 * entries point into them). */
typedef struct ice_view {
    zx_ice_mlist *list;          /* NULL: no snapshot */
    const zx_ice_mfile *mfiles;
    size_t nmfiles;
    zx_ice_mread **manifests;    /* nmfiles: NULL for delete manifests */
    ice_live *live;              /* data files */
    size_t nlive;
    ice_live *dlive;             /* zx's position delete files */
    size_t ndlive;
} ice_view;

/* ---- dest_iceberg.c ------------------------------------------------------- */

/* The name of URI u relative to the table's location, or NULL when it is
 * not below it (valid while u is). */
const char *ice_rel_of(const ice_state *st, const char *u);
/* The full URI of name (relative to the location): malloc'd, NULL when
 * out of memory. */
char *ice_uri_of(const ice_state *st, const char *name);
/* Load the table into st->tbl (replacing it).  0, ZX_ICECAT_NOT_FOUND, -1. */
int ice_load(ice_state *st, char *err, size_t errlen);
/* Read file URI u of the table (under its location) into b.  0 or -1. */
int ice_get_uri(ice_state *st, const char *u, zx_buf *b, char *err, size_t errlen);

/* ---- ice_view.c ----------------------------------------------------------- */

/* The current snapshot of st->tbl into *v (zeroed first; no snapshot: all
 * empty; free with ice_view_free even after -1).  A delete manifest zx
 * did not write fails (zx reads only its own delete files).  0 or -1. */
int ice_view_read(ice_state *st, ice_view *v, char *err, size_t errlen);
void ice_view_free(ice_view *v);
/* 1 when URI u names a data file zx wrote in this table. */
int ice_zx_file(const ice_state *st, const char *u);
/* The key bounds of a live entry another writer made: 1 when a changed
 * key may lie in them (or they are unknown). */
int ice_may_hold(ice_state *st, const zx_ice_entry *e);

/* ---- ice_changes.c -------------------------------------------------------- */

/* 1 when URI u is among the files the run removes. */
int ice_removing(const ice_state *st, const char *u);
/* Upsert / mirror over the live files of v (every try: a file another
 * writer committed meanwhile is checked too): the position deletes of
 * the run (once; st->mor), or its copy-on-write (once).  0 or -1. */
int ice_changes(ice_state *st, const ice_view *v, char *err, size_t errlen);

/* ---- ice_snapshot.c ------------------------------------------------------- */

/* Write metadata file name (relative to the location) with bytes b (noted
 * for abort); *uri gets its URI (malloc'd).  0 or -1. */
int ice_put_meta(ice_state *st, const char *name, const zx_buf *b, char **uri, char *err,
                 size_t errlen);
/* The run's schema as JSON text (malloc'd; NULL: out of memory). */
char *ice_schema_text(const ice_state *st);
/* Make f's partition summaries (pointing into a manifest writer about
 * to be freed) f's own: one block, *mem (the caller frees it).  0 or -1. */
int ice_keep_summary(zx_ice_mfile *f, void **mem);
/* One try: from st->tbl (the current table), the manifest list and the
 * snapshot; then the commit.  0 (committed; *snap its id), 1 (try again:
 * conflict or unknown outcome, st->tbl reloaded), -1. */
int ice_attempt(ice_state *st, int64_t *snap, char *err, size_t errlen);

/* ---- ice_expire.c --------------------------------------------------------- */

/* After a commit that expired snapshots: the files zx wrote (data files,
 * their copies, manifests and manifest lists) that no kept snapshot uses
 * are deleted.  Failures are logged. */
void ice_collect_garbage(ice_state *st);

#endif
