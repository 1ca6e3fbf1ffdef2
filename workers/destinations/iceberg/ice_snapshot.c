/*
 * ice_snapshot.c — an Iceberg run's manifests, manifest list and snapshot, and
 * one commit try (ice_dest.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/destinations/iceberg/ice_dest.h"
#include "workers/destinations/iceberg/ice_meta.h"

/* Write metadata file name (relative to the location) with bytes b;
 * *uri gets its URI (malloc'd).  0 or -1. */
int ice_put_meta(ice_state *st, const char *name, const zx_buf *b, char **uri, char *err,
                 size_t errlen)
{
    if (zx_lake_put(st->lake, name, b->p, b->len, 0, err, errlen) < 0)
        return -1;
    json_array_append_new(st->written_meta, json_string(name));
    if (!(*uri = ice_uri_of(st, name)))
        return zx_seterr(err, errlen, "%s: out of memory", st->where);
    return 0;
}

char *ice_schema_text(const ice_state *st)
{
    return json_dumps(st->schema, JSON_COMPACT);
}

/* Make f's partition summaries (pointing into a manifest writer about
 * to be freed) f's own: one block, *mem (the caller frees it).  0 or -1. */
int ice_keep_summary(zx_ice_mfile *f, void **mem)
{
    *mem = NULL;
    if (!f->partitions || !f->npartitions)
        return 0;
    size_t n = f->npartitions * sizeof(zx_ice_fsummary);
    for (size_t i = 0; i < f->npartitions; i++)
        n += f->partitions[i].lower_len + f->partitions[i].upper_len;
    char *b = malloc(n);
    if (!b)
        return -1;
    zx_ice_fsummary *fs = (zx_ice_fsummary *)(void *)b;
    char *p = b + f->npartitions * sizeof(zx_ice_fsummary);
    for (size_t i = 0; i < f->npartitions; i++) {
        fs[i] = f->partitions[i];
        if (fs[i].lower) {
            memcpy(p, fs[i].lower, fs[i].lower_len);
            fs[i].lower = (const uint8_t *)p;
            p += fs[i].lower_len;
        }
        if (fs[i].upper) {
            memcpy(p, fs[i].upper, fs[i].upper_len);
            fs[i].upper = (const uint8_t *)p;
            p += fs[i].upper_len;
        }
    }
    f->partitions = fs;
    *mem = b;
    return 0;
}

/* The manifest of the run's new files (once). */
static int write_manifest(ice_state *st, char *err, size_t errlen)
{
    if (st->manifest_path || !st->nfiles)
        return 0;
    char *sj = ice_schema_text(st);
    zx_ice_manifest_args ma = {.schema_json = sj, .schema_id = (int32_t)json_integer_value(
                                   json_object_get(st->schema, "schema-id")),
                               .partition_spec_json = st->spec_json ? st->spec_json : "[]",
                               .partition_spec_id = st->spec_id, .pfields = st->pfields,
                               .npfields = st->nparts, .codec = ZX_AVRO_DEFLATE};
    zx_ice_manifest *m = NULL;
    char e[512];
    int rc = sj ? zx_ice_manifest_open(&ma, &m, e, sizeof(e)) : -1;
    for (size_t i = 0; rc == 0 && i < st->nfiles; i++) {
        const ice_file *f = &st->files[i];
        size_t n = st->ncols;
        zx_ice_entry en = {
            .status = 1, .content = 0, .file_path = f->path, .record_count = f->rows,
            .file_size_in_bytes = f->size, .partition = st->nparts ? f->pv : NULL,
            .column_sizes = f->counts, .ncolumn_sizes = f->nsizes,
            .value_counts = f->counts + n, .nvalue_counts = f->nvalues,
            .null_value_counts = f->counts + 2 * n, .nnull_value_counts = f->nnulls,
            .nan_value_counts = f->counts + 3 * n, .nnan_value_counts = f->nnans,
            .lower_bounds = f->bounds, .nlower_bounds = f->nlower,
            .upper_bounds = f->bounds + n, .nupper_bounds = f->nupper,
        };
        rc = zx_ice_manifest_add(m, &en, e, sizeof(e));
    }
    zx_buf b = {0};
    if (rc == 0)
        rc = zx_ice_manifest_finish(m, &b, e, sizeof(e));
    if (rc == 0)
        rc = zx_ice_manifest_summary(m, &st->manifest);
    if (rc == 0 && ice_keep_summary(&st->manifest, &st->manifest_mem) < 0) {
        rc = -1;
        snprintf(e, sizeof(e), "out of memory");
    }
    zx_ice_manifest_free(m);
    free(sj);
    if (rc < 0) {
        zx_buf_free(&b);
        return zx_seterr(err, errlen, "%s: the run's manifest: %s", st->where, e);
    }
    char uuid[37], name[200];
    zx_lake_uuid4(uuid);
    snprintf(name, sizeof(name), "metadata/zx-%llu-%s-m0.avro", (unsigned long long)st->run_id,
             uuid);
    rc = ice_put_meta(st, name, &b, &st->manifest_path, err, errlen);
    st->manifest.manifest_path = st->manifest_path;
    st->manifest.manifest_length = (int64_t)b.len;
    zx_buf_free(&b);
    return rc;
}

/* Manifest i of v without the removed files (the others EXISTING):
 * written, its manifest_file into *out (path malloc'd into *path).
 * 0 or -1. */
static int rewrite_manifest(ice_state *st, const ice_view *v, size_t i, int64_t snap_id,
                            zx_ice_mfile *out, char **path, void **mem, char *err,
                            size_t errlen)
{
    const zx_ice_mfile *mf = &v->mfiles[i];
    size_t ne;
    const zx_ice_entry *es = zx_ice_mread_entries(v->manifests[i], &ne);
    const char *sj = zx_ice_mread_meta(v->manifests[i], "schema");
    const char *ps = zx_ice_mread_meta(v->manifests[i], "partition-spec");
    const char *sid = zx_ice_mread_meta(v->manifests[i], "schema-id");
    zx_ice_manifest_args ma = {.schema_json = sj ? sj : "{}", .schema_id = sid ? atoi(sid) : 0,
                               .partition_spec_json = ps ? ps : "[]",
                               .partition_spec_id = mf->partition_spec_id,
                               .codec = ZX_AVRO_DEFLATE};
    size_t npf;
    ma.pfields = zx_ice_mread_pfields(v->manifests[i], &npf);
    ma.npfields = npf;
    zx_ice_manifest *m = NULL;
    char e[512];
    int rc = zx_ice_manifest_open(&ma, &m, e, sizeof(e));
    for (size_t k = 0; rc == 0 && k < ne; k++) {
        if (es[k].status == 2)
            continue;
        zx_ice_entry en = es[k];
        /* inherited values made explicit, as an EXISTING entry needs */
        if (!en.has_snapshot_id) {
            en.has_snapshot_id = 1;
            en.snapshot_id = mf->added_snapshot_id;
        }
        if (!en.has_sequence_number) {
            en.has_sequence_number = 1;
            en.sequence_number = mf->sequence_number;
        }
        if (!en.has_file_sequence_number) {
            en.has_file_sequence_number = 1;
            en.file_sequence_number = mf->sequence_number;
        }
        if (ice_removing(st, en.file_path)) {
            en.status = 2;
            en.snapshot_id = snap_id;
        } else {
            en.status = 0;
        }
        rc = zx_ice_manifest_add(m, &en, e, sizeof(e));
    }
    zx_buf b = {0};
    if (rc == 0)
        rc = zx_ice_manifest_finish(m, &b, e, sizeof(e));
    if (rc == 0)
        rc = zx_ice_manifest_summary(m, out);
    if (rc == 0 && ice_keep_summary(out, mem) < 0) {
        rc = -1;
        snprintf(e, sizeof(e), "out of memory");
    }
    zx_ice_manifest_free(m);
    if (rc < 0) {
        zx_buf_free(&b);
        return zx_seterr(err, errlen, "%s: rewriting manifest %s: %s", st->where,
                         mf->manifest_path, e);
    }
    char uuid[37], name[200];
    zx_lake_uuid4(uuid);
    snprintf(name, sizeof(name), "metadata/zx-%llu-%s-m%zu.avro", (unsigned long long)st->run_id,
             uuid, i + 1);
    rc = ice_put_meta(st, name, &b, path, err, errlen);
    out->manifest_path = *path;
    out->manifest_length = (int64_t)b.len;
    out->added_snapshot_id = snap_id;
    zx_buf_free(&b);
    return rc;
}

static int64_t new_snapshot_id(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x))
        x = (uint64_t)zx_now_us() * 2654435761u;
    x &= INT64_MAX;
    return x ? (int64_t)x : 1;
}

static void sum_set(json_t *s, const char *k, int64_t v)
{
    char b[24];
    snprintf(b, sizeof(b), "%lld", (long long)v);
    json_object_set_new(s, k, json_string(b));
}

/* One try: from st->tbl (the current table), the manifest list and the
 * snapshot; then the commit.  0 (committed; *snap its id), 1 (try again:
 * conflict or unknown outcome, st->tbl reloaded), -1. */
int ice_attempt(ice_state *st, int64_t *snap, char *err, size_t errlen)
{
    ice_view v;
    if (ice_view_read(st, &v, err, errlen) < 0) {
        ice_view_free(&v);
        return -1;
    }
    int rc = 0;
    char **paths = NULL;
    void **mems = NULL;
    zx_ice_mfile *list = NULL;
    size_t nlist = 0;
    json_t *updates = NULL, *reqs = NULL, *newmd = NULL;
    zx_buf b = {0};
    if (ice_changes(st, &v, err, errlen) < 0 || zx_lw_flush(st->lw, err, errlen) < 0 ||
        write_manifest(st, err, errlen) < 0) {
        rc = -1;
        goto out;
    }
    /* the files the run removes must still be live */
    size_t nremoved = json_array_size(st->removed), live_removed = 0;
    int64_t del_rows = 0, del_size = 0, tot_files = 0, tot_rows = 0, tot_size = 0;
    for (size_t i = 0; i < v.nlive; i++) {
        int r = ice_removing(st, v.live[i].e->file_path);
        if (st->mode == ZX_MODE_REPLACE) {
            /* replace: what the run started from goes; files of manifests
             * committed since by other writers stay */
            size_t k;
            json_t *x;
            r = 0;
            json_array_foreach(st->base_manifests, k, x)
                r |= !strcmp(json_string_value(x), v.mfiles[v.live[i].manifest].manifest_path);
        }
        v.live[i].removed = r;
        live_removed += r && st->mode != ZX_MODE_REPLACE;
        if (r) {
            del_rows += v.live[i].e->record_count;
            del_size += v.live[i].e->file_size_in_bytes;
        } else {
            tot_files++;
            tot_rows += v.live[i].e->record_count;
            tot_size += v.live[i].e->file_size_in_bytes;
        }
    }
    size_t nt = json_array_size(st->touched), touched_live = 0;
    for (size_t k = 0; k < nt; k++)
        for (size_t i = 0; i < v.nlive; i++)
            if (!strcmp(v.live[i].e->file_path, json_string_value(json_array_get(st->touched,
                                                                                k)))) {
                touched_live++;
                break;
            }
    if (touched_live != nt) {
        rc = zx_seterr(err, errlen, "%s: another writer committed a snapshot that removed "
                       "data files this run deletes rows of; nothing of this run was "
                       "committed: the next run starts from the new snapshot", st->where);
        goto out;
    }
    if (live_removed != nremoved) {
        rc = zx_seterr(err, errlen, "%s: another writer committed a snapshot that removed "
                       "data files this run rewrites; nothing of this run was committed: the "
                       "next run starts from the new snapshot", st->where);
        goto out;
    }
    int64_t parent = zx_ice_current_snapshot(st->tbl.metadata, &(const char *){NULL});
    int64_t seq = json_integer_value(json_object_get(st->tbl.metadata, "last-sequence-number")) + 1;
    int64_t sid = new_snapshot_id();
    *snap = sid;
    /* the manifest list: the others' manifests carried or rewritten, ours */
    list = calloc(v.nmfiles + 2, sizeof(*list));
    paths = calloc(v.nmfiles + 2, sizeof(*paths));
    mems = calloc(v.nmfiles + 2, sizeof(*mems));
    if (!list || !paths || !mems) {
        rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
        goto out;
    }
    int64_t tot_del_files = 0, tot_del_rows = 0, rm_del_files = 0, rm_del_rows = 0;
    for (size_t i = 0; i < v.nmfiles; i++) {
        size_t nr = 0, nl = 0;
        if (v.mfiles[i].content != 0) {  /* zx's delete manifests */
            int base = 0;
            size_t k;
            json_t *x;
            json_array_foreach(st->base_manifests, k, x)
                base |= !strcmp(json_string_value(x), v.mfiles[i].manifest_path);
            if (st->mode == ZX_MODE_REPLACE && base)
                continue;                 /* replace: what it started from goes */
            if (st->compacted) {          /* the run's delete files carry them */
                for (size_t d = 0; d < v.ndlive; d++)
                    if (v.dlive[d].manifest == i) {
                        rm_del_files++;
                        rm_del_rows += v.dlive[d].e->record_count;
                    }
                continue;
            }
            for (size_t d = 0; d < v.ndlive; d++)
                if (v.dlive[d].manifest == i) {
                    tot_del_files++;
                    tot_del_rows += v.dlive[d].e->record_count;
                }
            list[nlist++] = v.mfiles[i];
            continue;
        }
        for (size_t k = 0; k < v.nlive; k++)
            if (v.live[k].manifest == i) {
                nl++;
                nr += v.live[k].removed;
            }
        if (nr == 0) {
            list[nlist++] = v.mfiles[i];
        } else if (nr < nl && st->mode != ZX_MODE_REPLACE) {
            if (rewrite_manifest(st, &v, i, sid, &list[nlist], &paths[nlist], &mems[nlist], err,
                                 errlen) < 0) {
                rc = -1;
                goto out;
            }
            list[nlist].sequence_number = seq;
            nlist++;
        }
    }
    int64_t add_rows = 0, add_size = 0;
    for (size_t i = 0; i < st->nfiles; i++) {
        add_rows += st->files[i].rows;
        add_size += st->files[i].size;
    }
    if (st->manifest_path) {
        list[nlist] = st->manifest;
        list[nlist].added_snapshot_id = sid;
        list[nlist].sequence_number = seq;
        list[nlist].min_sequence_number = seq;
        nlist++;
    }
    if (st->del_manifest_path) {
        list[nlist] = st->del_manifest;
        list[nlist].added_snapshot_id = sid;
        list[nlist].sequence_number = seq;
        list[nlist].min_sequence_number = seq;
        nlist++;
        tot_del_files += st->del_files;
        tot_del_rows += st->del_rows;
    }
    for (size_t i = 0; i < nlist; i++)
        if (list[i].added_snapshot_id == sid) {
            list[i].sequence_number = seq;
            if (list[i].min_sequence_number <= 0 || list[i].min_sequence_number > seq)
                list[i].min_sequence_number = seq;
        }
    char e[512];
    zx_ice_mlist_args la = {.snapshot_id = sid, .has_parent_snapshot_id = parent >= 0,
                            .parent_snapshot_id = parent, .sequence_number = seq,
                            .codec = ZX_AVRO_DEFLATE};
    if (zx_ice_mlist_write(&la, list, nlist, &b, e, sizeof(e)) < 0) {
        rc = zx_seterr(err, errlen, "%s: the manifest list: %s", st->where, e);
        goto out;
    }
    char uuid[37], name[200], *ml = NULL;
    zx_lake_uuid4(uuid);
    snprintf(name, sizeof(name), "metadata/snap-%lld-zx-%s.avro", (long long)sid, uuid);
    if (ice_put_meta(st, name, &b, &ml, err, errlen) < 0) {
        rc = -1;
        goto out;
    }
    /* the snapshot */
    int overwrite = st->mode == ZX_MODE_REPLACE || nremoved > 0 || st->del_rows > 0;
    json_t *sum = json_pack("{s:s, s:s}", "operation", overwrite ? "overwrite" : "append",
                            "zx.sync", st->sync);
    char rid[24];
    snprintf(rid, sizeof(rid), "%llu", (unsigned long long)st->run_id);
    json_object_set_new(sum, "zx.run", json_string(rid));
    sum_set(sum, "added-data-files", (int64_t)st->nfiles);
    sum_set(sum, "added-records", add_rows);
    sum_set(sum, "added-files-size", add_size);
    int64_t ndel = 0;
    for (size_t i = 0; i < v.nlive; i++)
        ndel += v.live[i].removed;
    sum_set(sum, "deleted-data-files", ndel);
    sum_set(sum, "deleted-records", del_rows);
    sum_set(sum, "removed-files-size", del_size);
    sum_set(sum, "total-data-files", tot_files + (int64_t)st->nfiles);
    sum_set(sum, "total-records", tot_rows + add_rows);
    sum_set(sum, "total-files-size", tot_size + add_size);
    if (st->del_rows) {
        sum_set(sum, "added-delete-files", st->del_files);
        sum_set(sum, "added-position-delete-files", st->del_files);
        sum_set(sum, "added-position-deletes", st->del_rows);
    }
    if (rm_del_files) {
        sum_set(sum, "removed-delete-files", rm_del_files);
        sum_set(sum, "removed-position-delete-files", rm_del_files);
        sum_set(sum, "removed-position-deletes", rm_del_rows);
    }
    sum_set(sum, "total-delete-files", tot_del_files);
    sum_set(sum, "total-position-deletes", tot_del_rows);
    sum_set(sum, "total-equality-deletes", 0);
    json_t *snapshot = json_pack("{s:I, s:I, s:I, s:s, s:o, s:I}", "snapshot-id",
                                 (json_int_t)sid, "sequence-number", (json_int_t)seq,
                                 "timestamp-ms", (json_int_t)(zx_now_us() / 1000),
                                 "manifest-list", ml, "summary", sum, "schema-id",
                                 (json_int_t)json_integer_value(json_object_get(st->schema,
                                                                                "schema-id")));
    free(ml);
    if (snapshot && parent >= 0)
        json_object_set_new(snapshot, "parent-snapshot-id", json_integer(parent));
    updates = json_array();
    if (st->schema_changed && !st->create) {
        json_array_append_new(updates, json_pack("{s:s, s:O, s:i}", "action", "add-schema",
                                                 "schema", st->schema, "last-column-id",
                                                 (int)st->last_column_id));
        json_array_append_new(updates, json_pack("{s:s, s:i}", "action", "set-current-schema",
                                                 "schema-id", -1));
    }
    json_array_append_new(updates, json_pack("{s:s, s:o}", "action", "add-snapshot",
                                             "snapshot", snapshot));
    json_array_append_new(updates, json_pack("{s:s, s:s, s:s, s:I}", "action",
                                             "set-snapshot-ref", "ref-name", "main", "type",
                                             "branch", "snapshot-id", (json_int_t)sid));
    /* expire the snapshots beyond keep_snapshots (ours counts) */
    json_t *snaps = json_object_get(st->tbl.metadata, "snapshots"), *expire = json_array();
    size_t ns = json_array_size(snaps);
    if (ns + 1 > st->keep) {
        /* the oldest first: by timestamp */
        size_t drop = ns + 1 - st->keep;
        for (size_t d = 0; d < drop; d++) {
            json_t *oldest = NULL;
            size_t k;
            json_t *x;
            json_array_foreach(snaps, k, x) {
                int taken = 0;
                size_t j;
                json_t *y;
                json_array_foreach(expire, j, y)
                    taken |= json_equal(y, json_object_get(x, "snapshot-id"));
                if (taken || (parent >= 0 && json_integer_value(json_object_get(
                                                 x, "snapshot-id")) == parent))
                    continue;
                if (!oldest || json_integer_value(json_object_get(x, "timestamp-ms")) <
                               json_integer_value(json_object_get(oldest, "timestamp-ms")))
                    oldest = x;
            }
            if (oldest)
                json_array_append(expire, json_object_get(oldest, "snapshot-id"));
        }
    }
    if (json_array_size(expire))
        json_array_append_new(updates, json_pack("{s:s, s:O}", "action", "remove-snapshots",
                                                 "snapshot-ids", expire));
    json_decref(expire);
    reqs = json_pack("[{s:s, s:O}, {s:s, s:s, s:o}]", "type", "assert-table-uuid", "uuid",
                     json_object_get(st->tbl.metadata, "table-uuid"), "type",
                     "assert-ref-snapshot-id", "ref", "main", "snapshot-id",
                     parent >= 0 ? json_integer(parent) : json_null());
    if (!updates || !reqs) {
        rc = zx_seterr(err, errlen, "%s: out of memory", st->where);
        goto out;
    }
    if (strcmp(st->catconn->kind, "iceberg_rest")) {
        char ae[256];
        newmd = zx_ice_apply(st->tbl.metadata, updates, st->tbl.metadata_location,
                             zx_now_us() / 1000, ae, sizeof(ae));
        if (!newmd) {
            rc = zx_seterr(err, errlen, "%s: %s", st->where, ae);
            goto out;
        }
    }
    if (!st->tried++)              /* tests: once, before the first commit */
        zx_lake_test_stop_at("files");
    zx_icecat_table after = {0};
    int c = zx_icecat_commit(st->cat, st->ns, st->name, &st->tbl, reqs, updates, newmd, &after,
                             err, errlen);
    if (c == 0) {
        zx_icecat_table_free(&st->tbl);
        st->tbl = after;
        rc = 0;
    } else if (c == ZX_ICECAT_CONFLICT || c == ZX_ICECAT_UNKNOWN) {
        zx_icecat_table_free(&after);
        zx_info("event=iceberg_commit_retry sync=%s run=%llu why=%s", st->sync,
                (unsigned long long)st->run_id, c == ZX_ICECAT_CONFLICT ? "conflict"
                                                                        : "unknown_outcome");
        char le[512];
        if (ice_load(st, le, sizeof(le)) != 0) {
            rc = zx_seterr(err, errlen, "%s: after a commit %s, the table could not be read "
                           "back: %s", st->where, c == ZX_ICECAT_CONFLICT ? "conflict"
                           : "whose outcome is unknown", le);
            goto out;
        }
        const json_t *mine = zx_ice_find_run(st->tbl.metadata, st->sync, st->run_id);
        if (mine) {
            *snap = json_integer_value(json_object_get(mine, "snapshot-id"));
            rc = 0;
        } else {
            rc = 1;
        }
    } else {
        zx_icecat_table_free(&after);
        rc = -1;
    }
out:
    for (size_t i = 0; paths && i <= v.nmfiles + 1; i++)
        free(paths[i]);
    free(paths);
    for (size_t i = 0; mems && i <= v.nmfiles + 1; i++)
        free(mems[i]);
    free(mems);
    free(list);
    json_decref(updates);
    json_decref(reqs);
    json_decref(newmd);
    zx_buf_free(&b);
    ice_view_free(&v);
    return rc;
}
