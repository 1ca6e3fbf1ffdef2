/*
 * instance.h — the identity of one zxd installation: a random id made the
 * first time zxd runs on a data directory and kept in <data_dir>/instance-id,
 * so that several zxd sharing one Postgres workspace
 * (workspace.postgres.shared) tell their own bookkeeping rows apart
 * (checkpoints, parked frames) whatever their host names and paths.
 */
#ifndef ZX_COMMON_INSTANCE_H
#define ZX_COMMON_INSTANCE_H

#include <stddef.h>

#define ZX_INSTANCE_ID_LEN 16   /* lowercase hex digits */

/* The id of data_dir into out (ZX_INSTANCE_ID_LEN + 1 bytes): read from
 * <data_dir>/instance-id, or made (getrandom) and written there (a
 * temporary file renamed into place, so two first starts agree on one).
 * 0, or -1 with a message in err: the file cannot be read or written, or
 * it holds something other than ZX_INSTANCE_ID_LEN hex digits (and a
 * newline); a damaged file is not replaced (the id names rows in the
 * workspace: say so instead). */
int zx_instance_id(const char *data_dir, char *out, char *err, size_t errlen);

#endif
