/*
 * fuzz_fwd_send.c — fuzz target for the forwarder's reading of its journal
 * (workers/forward/fwd_send.h: zx_fwd_publish): the journal is a
 * workspace table, and whoever may write the workspace may put anything
 * there.
 *
 * Input: up to 8 journal entries, each a 2-byte big-endian length then
 * that many bytes (a frame, or not), numbered 1, 2, ...  They are
 * published through a destination that checks what it is handed: every
 * write batch has exactly the run's columns, none of them reserved
 * (_zx_...), every delete batch exactly the run's key columns, begin and
 * commit paired, row_seen 0 or 1; and zx_fwd_publish must end with every
 * entry done (no destination error here), counting the frames that did
 * not decode.
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds:
 * corpus/fwd_send/ (tests/fuzz/make_fwd_seeds.py).  Must never be linked
 * into zx.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/forward/fwd_send.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const zx_dest_run *cur;
static int open_run;

static int f_begin(void *st, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                   size_t errlen)
{
    (void)st; (void)stats; (void)err; (void)errlen;
    fuzz_check(!open_run, "begin inside a run");
    open_run = 1;
    cur = run;
    for (size_t i = 0; i < run->ncols; i++)
        fuzz_check(strncmp(run->cols[i].name, "_zx_", 4) != 0, "a reserved column published");
    for (size_t k = 0; k < run->nkey_cols; k++) {
        int found = 0;
        for (size_t i = 0; i < run->ncols; i++)
            found |= !strcmp(run->cols[i].name, run->key_cols[k]);
        fuzz_check(found, "a key column not among the run's columns");
    }
    return 0;
}

static int f_write(void *st, const zx_rowset *rs, char *err, size_t errlen)
{
    (void)st; (void)err; (void)errlen;
    fuzz_check(open_run, "write outside a run");
    fuzz_check(rs->ncols == cur->ncols, "write batch columns");
    for (uint32_t c = 0; c < rs->ncols; c++)
        fuzz_check(!strcmp(rs->cols[c].name, cur->cols[c].name), "write batch column order");
    for (uint32_t r = 0; r < rs->nrows; r++) {
        int s = cur->row_seen(cur->failed_ctx, r);
        fuzz_check(s == 0 || s == 1, "row_seen");
    }
    return 0;
}

static int f_delete(void *st, const zx_rowset *keys, char *err, size_t errlen)
{
    (void)st; (void)err; (void)errlen;
    fuzz_check(open_run && cur->mode == ZX_MODE_MIRROR, "delete outside a mirror run");
    fuzz_check(keys->ncols == cur->nkey_cols, "delete batch columns");
    return 0;
}

static int f_commit(void *st, char *err, size_t errlen)
{
    (void)st; (void)err; (void)errlen;
    fuzz_check(open_run, "commit outside a run");
    open_run = 0;
    return 0;
}

static void f_abort(void *st) { (void)st; open_run = 0; }
static void f_close(void *st) { (void)st; }

static const zx_dest checker = {.name = "checker", .caps = ZX_DEST_DELETES, .begin = f_begin,
                                .write = f_write, .delete_keys = f_delete, .commit = f_commit,
                                .abort = f_abort, .close = f_close};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zx_fwdj_entry e[8];
    size_t n = 0, at = 0;
    while (n < 8 && at + 2 <= size) {
        size_t len = (size_t)data[at] << 8 | data[at + 1];
        at += 2;
        if (len > size - at)
            len = size - at;
        /* a copy of its own, so that ASan sees a read past it */
        unsigned char *b = malloc(len ? len : 1);
        fuzz_check(b != NULL, "out of memory");
        memcpy(b, data + at, len);
        e[n] = (zx_fwdj_entry){n + 1, b, len};
        n++;
        at += len;
    }
    zx_fwd_out o = {.ops = &checker, .pipeline = "fuzz"};
    const char *must[] = {"id"};
    if (size && (data[0] & 1)) {     /* a message key that frames may lack */
        o.must_cols = must;
        o.nmust = 1;
    }
    uint64_t done = 0;
    char err[256];
    open_run = 0;
    int rc = zx_fwd_publish(&o, e, n, &done, err, sizeof(err));
    fuzz_check(rc == 0, "a publish failed with a destination that never fails");
    fuzz_check(done == n, "not every entry done");
    fuzz_check(!open_run, "a run left open");
    fuzz_check(o.frames + o.bad_frames == n, "frames counted");
    for (size_t i = 0; i < n; i++)
        free(e[i].frame);
    return 0;
}
