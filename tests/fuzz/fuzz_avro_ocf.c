/*
 * fuzz_avro_ocf.c — fuzz target for the Avro container file reader
 * (formats/avro_read.h) and the Iceberg readers on it
 * (zx_ice_mlist_read, zx_ice_manifest_read in
 * workers/destinations/iceberg/ice_manifest.h), which read manifest lists
 * and manifests other engines wrote.
 *
 * Input: any bytes, taken as a whole file.  Every reader must answer 0 or
 * -1 with a message, never read out of bounds; every record the generic
 * reader returns is within the file.  What zx_ice_mlist_read returns is
 * written again by zx_ice_mlist_write (when its counts are known) and
 * read back to the same manifests; what zx_ice_manifest_read returns is
 * written again by zx_ice_manifest_add (when its partition values fit).
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/avro_ocf/ (manifests and manifest lists icewrite writes).  Must
 * never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/avro_read.h"
#include "tests/fuzz/fuzz_check.h"
#include "workers/destinations/iceberg/ice_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void generic(const uint8_t *data, size_t size)
{
    char err[256] = "";
    zx_avro_file *f = NULL;
    if (zx_avro_file_open(data, size, &f, err, sizeof(err)) < 0) {
        fuzz_check(f == NULL && err[0], "open failed without a message");
        return;
    }
    const zx_avro_value *v;
    int rc;
    for (int i = 0; i < 100000 && (rc = zx_avro_next(f, &v, err, sizeof(err))) == 1; i++)
        fuzz_check(v != NULL && v->type != NULL, "a record without a type");
    zx_avro_file_free(f);
}

static void mlist(const uint8_t *data, size_t size)
{
    char err[256] = "";
    zx_ice_mlist *l = NULL;
    if (zx_ice_mlist_read(data, size, &l, err, sizeof(err)) < 0) {
        fuzz_check(l == NULL && err[0], "mlist_read failed without a message");
        return;
    }
    size_t n;
    const zx_ice_mfile *fs = zx_ice_mlist_files(l, &n);
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        if (fs[i].added_files_count < 0 || fs[i].existing_files_count < 0 ||
            fs[i].deleted_files_count < 0 || fs[i].added_rows_count < 0 ||
            fs[i].existing_rows_count < 0 || fs[i].deleted_rows_count < 0 ||
            (fs[i].content != 0 && fs[i].content != 1))
            ok = 0;
    if (ok) {
        zx_ice_mlist_args a = {.snapshot_id = 1, .sequence_number = 1};
        zx_buf out = {0};
        fuzz_check(zx_ice_mlist_write(&a, fs, n, &out, err, sizeof(err)) == 0,
                   "a list read cannot be written again");
        zx_ice_mlist *l2 = NULL;
        fuzz_check(zx_ice_mlist_read(out.p, out.len, &l2, err, sizeof(err)) == 0,
                   "a list written cannot be read");
        if (l2) {
            size_t n2;
            const zx_ice_mfile *f2 = zx_ice_mlist_files(l2, &n2);
            fuzz_check(n2 == n, "not as many manifests read back");
            for (size_t i = 0; i < n && i < n2; i++) {
                fuzz_check(!strcmp(f2[i].manifest_path, fs[i].manifest_path),
                           "a path read back differs");
                fuzz_check(f2[i].added_rows_count == fs[i].added_rows_count &&
                           f2[i].npartitions == fs[i].npartitions,
                           "counts read back differ");
            }
        }
        zx_ice_mlist_free(l2);
        zx_buf_free(&out);
    }
    zx_ice_mlist_free(l);
}

static void manifest(const uint8_t *data, size_t size)
{
    char err[256] = "";
    zx_ice_mread *r = NULL;
    if (zx_ice_manifest_read(data, size, &r, err, sizeof(err)) < 0) {
        fuzz_check(r == NULL && err[0], "manifest_read failed without a message");
        return;
    }
    size_t npf, n;
    const zx_ice_pfield *pf = zx_ice_mread_pfields(r, &npf);
    const zx_ice_entry *es = zx_ice_mread_entries(r, &n);
    zx_ice_manifest_args a = {.schema_json = "{}", .pfields = pf, .npfields = npf};
    zx_ice_manifest *m = NULL;
    int ok = 1;
    for (size_t i = 0; i < npf; i++)
        if (!pf[i].name[0] || pf[i].field_id < 0)
            ok = 0;
    if (ok && zx_ice_manifest_open(&a, &m, err, sizeof(err)) == 0) {
        for (size_t i = 0; i < n; i++)
            if (es[i].content == 0 && zx_ice_manifest_add(m, &es[i], err, sizeof(err)) < 0)
                break;   /* a value that does not fit (an int out of range...) */
        zx_ice_manifest_free(m);
    }
    zx_ice_mread_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    generic(data, size);
    mlist(data, size);
    manifest(data, size);
    return 0;
}
