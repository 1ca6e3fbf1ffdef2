/*
 * fuzz_ice_meta.c — fuzz target for what zx makes of an Iceberg table's
 * metadata (workers/destinations/iceberg/ice_meta.c), which a catalog (or
 * whoever wrote the metadata file it points at) hands zx: any JSON.
 *
 * Input: any bytes, parsed as JSON (what is not JSON is skipped, as the
 * catalog client refuses it).  On that document: the run's schema for a
 * fixed result (every answer a schema with distinct field ids, or NULL
 * with a message), the current snapshot, the run looked up by its
 * summary, and a commit's updates applied (a document, or NULL with a
 * message).  Nothing may crash or read out of bounds.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/ice_meta/.  Must never be linked into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/destinations/iceberg/ice_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    json_error_t je;
    json_t *md = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!md)
        return 0;
    char err[512];
    err[0] = 0;
    zx_dcol cols[4] = {{"id", ZX_DT_INT64, 0, 0}, {"amount", ZX_DT_DECIMAL, 12, 2},
                       {"name", ZX_DT_TEXT, 0, 0}, {"at", ZX_DT_TIMESTAMP, 0, 0}};
    const char *key[1] = {"id"};
    int32_t ids[4];
    int changed = 0;
    int32_t last = 0;
    json_t *s = zx_ice_schema_for(md, cols, 4, key, 1, ids, &changed, &last, "fuzz", err,
                                  sizeof(err));
    fuzz_check(s || err[0], "schema: NULL without a message");
    json_decref(s);
    const char *ml = NULL;
    (void)zx_ice_current_snapshot(md, &ml);
    (void)zx_ice_find_run(md, "orders", 42);
    json_t *up = json_loads(
        "[{\"action\":\"add-schema\",\"schema\":{\"schema-id\":9,\"fields\":[]},"
        "\"last-column-id\":5},{\"action\":\"set-current-schema\",\"schema-id\":-1},"
        "{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":8,\"sequence-number\":4}},"
        "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"snapshot-id\":8},"
        "{\"action\":\"remove-snapshots\",\"snapshot-ids\":[7, 8]},"
        "{\"action\":\"set-properties\",\"updates\":{\"a\":\"b\"}}]", 0, &je);
    err[0] = 0;
    json_t *a = json_is_object(md) ? zx_ice_apply(md, up, "x", 1, err, sizeof(err)) : NULL;
    fuzz_check(!json_is_object(md) || a || err[0], "apply: NULL without a message");
    json_decref(a);
    json_decref(up);
    json_decref(md);
    return 0;
}
