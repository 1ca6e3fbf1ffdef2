/*
 * verify_repair.c — the verify process's half of `zxctl verify --repair`
 * (verify_int.h): leave the differing keys for the pipeline's worker
 * (workers/sources/postgres/pg_cdc_repair.c reads them, and sends each key's row,
 * read from the source, through the writer) and wait until it took them.
 *
 * The request is written whole (a temporary file renamed), so the worker
 * never reads half of it; the worker removes it as it takes it.
 *
 * It must never: write the workspace itself, or overwrite a request the
 * worker has not taken yet.
 */
#include "workers/verify/verify_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "workers/verify/verify.h"

int vf_repair_request(const char *data_dir, const char *pipeline, const json_t *req,
                      int64_t deadline_ms, char *err, size_t errlen)
{
    char dir[4096], path[4096], tmp[4200];
    if (snprintf(dir, sizeof(dir), "%s/verify", data_dir) >= (int)sizeof(dir) ||
        zx_verify_repair_path(data_dir, pipeline, path, sizeof(path)) < 0)
        return zx_seterr(err, errlen, "the data folder's path is too long");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return zx_seterr(err, errlen, "cannot make %s: %s", dir, strerror(errno));
    if (access(path, F_OK) == 0)
        return zx_seterr(err, errlen, "an earlier repair request (%s) is still waiting for the "
                         "pipeline's worker: is the pipeline running (`zxctl status`)?", path);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (json_dump_file(req, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return zx_seterr(err, errlen, "cannot write the repair request %s: %s", path,
                         strerror(e));
    }
    for (;;) {
        if (access(path, F_OK) < 0 && errno == ENOENT)
            return 0; /* taken */
        if (zx_mono_ms() >= deadline_ms) {
            if (unlink(path) < 0 && errno == ENOENT)
                return 0; /* taken just now */
            return zx_seterr(err, errlen, "the pipeline's worker did not take the repair "
                             "request in time: is the pipeline running and streaming "
                             "(`zxctl status`)?");
        }
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}
