/*
 * ice_expire.c — the files zx wrote into an Iceberg table that no kept
 * snapshot uses, deleted after a commit that expired snapshots
 * (ice_dest.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "workers/destinations/iceberg/ice_dest.h"
#include "workers/destinations/lake/lake_side.h"

/* After a commit that expired snapshots: the files zx wrote (data files,
 * their copies, manifests and manifest lists) that no kept snapshot uses
 * are deleted.  Failures are logged. */
void ice_collect_garbage(ice_state *st)
{
    char e[1024];
    json_t *used = json_object();
    size_t i;
    json_t *s;
    zx_buf b = {0};
    int ok = used != NULL;
    json_array_foreach(json_object_get(st->tbl.metadata, "snapshots"), i, s) {
        const char *ml = json_string_value(json_object_get(s, "manifest-list"));
        if (!ok || !ml)
            continue;
        json_object_set_new(used, ml, json_true());
        zx_ice_mlist *l = NULL;
        if (ice_get_uri(st, ml, &b, e, sizeof(e)) < 0 ||
            zx_ice_mlist_read(b.p, b.len, &l, e, sizeof(e)) < 0) {
            ok = 0;
            break;
        }
        size_t nm;
        const zx_ice_mfile *mf = zx_ice_mlist_files(l, &nm);
        for (size_t k = 0; ok && k < nm; k++) {
            if (json_object_get(used, mf[k].manifest_path))
                continue;
            json_object_set_new(used, mf[k].manifest_path, json_true());
            zx_ice_mread *m = NULL;
            if (ice_get_uri(st, mf[k].manifest_path, &b, e, sizeof(e)) < 0 ||
                zx_ice_manifest_read(b.p, b.len, &m, e, sizeof(e)) < 0) {
                ok = 0;
                break;
            }
            size_t ne;
            const zx_ice_entry *es = zx_ice_mread_entries(m, &ne);
            for (size_t j = 0; j < ne; j++)
                if (es[j].status != 2)
                    json_object_set_new(used, es[j].file_path, json_true());
            zx_ice_mread_free(m);
        }
        zx_ice_mlist_free(l);
    }
    zx_buf_free(&b);
    int deleted = 0;
    static const char *const dirs[] = {"data", "metadata", NULL};
    for (int d = 0; ok && dirs[d]; d++) {
        char **names = NULL;
        size_t n = 0;
        if (zx_lake_list(st->lake, dirs[d], &names, &n, e, sizeof(e)) < 0)
            break;
        for (size_t k = 0; k < n; k++) {
            int ours = !strncmp(names[k], "zx-", 3) ||
                       (!strncmp(names[k], "snap-", 5) && strstr(names[k], "-zx-"));
            if (!ours)
                continue;
            char rel[1200];
            snprintf(rel, sizeof(rel), "%s/%s", dirs[d], names[k]);
            char *u = ice_uri_of(st, rel);
            int in_use = u && json_object_get(used, u);
            free(u);
            /* a run in flight writes files no snapshot names yet: only
             * files of runs before this one are taken */
            unsigned long long run = 0;
            if (!strncmp(names[k], "zx-", 3))
                run = strtoull(names[k] + 3, NULL, 10);
            if (in_use || (run && run >= st->run_id) ||
                (!strncmp(names[k], "snap-", 5)))
                continue;
            if (zx_lake_delete(st->lake, rel, e, sizeof(e)) == 0) {
                deleted++;
                if (d == 0) {
                    zx_side_delete(st->lake, rel, e, sizeof(e));
                    char pos[1300];
                    snprintf(pos, sizeof(pos), "%s/%s.pos", ZX_LAKE_SIDE_DIR, rel);
                    zx_lake_delete(st->lake, pos, e, sizeof(e));
                }
            }
        }
        zx_lake_names_free(names, n);
    }
    /* manifest lists of expired snapshots zx made */
    char **names = NULL;
    size_t n = 0;
    if (ok && zx_lake_list(st->lake, "metadata", &names, &n, e, sizeof(e)) == 0) {
        for (size_t k = 0; k < n; k++) {
            if (strncmp(names[k], "snap-", 5) || !strstr(names[k], "-zx-"))
                continue;
            char rel[1200];
            snprintf(rel, sizeof(rel), "metadata/%s", names[k]);
            char *u = ice_uri_of(st, rel);
            int in_use = u && json_object_get(used, u);
            free(u);
            if (!in_use && zx_lake_delete(st->lake, rel, e, sizeof(e)) == 0)
                deleted++;
        }
        zx_lake_names_free(names, n);
    }
    json_decref(used);
    if (!ok)
        zx_warn("event=iceberg_gc_skipped sync=%s error=\"%s\"", st->sync, e);
    else if (deleted)
        zx_info("event=iceberg_files_expired sync=%s deleted=%d", st->sync, deleted);
}
